/*
 * An online step's replication objects and its copy (online.c): on the
 * source the publication, the decoding filter and the slot, the rows
 * copied from the slot's exported snapshot and verified there, then the
 * subscription on the target, which streams every change after the
 * snapshot.  What is made on the shards is torn down by name
 * (online_teardown.c); the tallies started on the way belong to the
 * step's OnlineCopy (online_tally.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "online_tally.h"

/* The registered tables, "a, b", for the publication. */
static char *
table_list(TableInfo *tables, int ntables)
{
	char	   *list = format_text("%s", "");

	for (int i = 0; i < ntables; i++)
		list = text_append(list, i ? ", " : "", tables[i].table_name);
	return list;
}

/*
 * The logical slot of plugin chash, over a replication connection to the
 * source that exports its snapshot: the connection, which must stay open
 * and idle until the snapshot is imported, and the snapshot's name in
 * *snapshot, or NULL.  The slot is the mover's, not CREATE SUBSCRIPTION's,
 * which would wait for itself when both shards are databases of one
 * server; creating it waits for the transactions running on the source's
 * server.
 */
static PGconn *
create_slot(Server *src, const char *name, char **snapshot)
{
	/* a Server of its own: server_wait says what a long wait waits for, and Ctrl-C cancels it */
	Server		repl = {.name = src->name, .conninfo = src->conninfo};
	char	   *sql;
	PGresult   *res = NULL;
	bool		cancelled = false;

	*snapshot = NULL;
	{
		char	   *what = format_text("shard \"%s\" for a replication connection", src->name);

		repl.conn = connect_replication(src->conninfo, what);
		free(what);
	}
	if (repl.conn == NULL)
		return NULL;
	sql = format_text("CREATE_REPLICATION_SLOT %s LOGICAL chash EXPORT_SNAPSHOT", name);
	if (PQsendQuery(repl.conn, sql))
		res = server_wait(&repl, sql, &cancelled);
	free(sql);
	if (res == NULL || PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1 || PQgetisnull(res, 0, 2))
	{
		if (!cancelled)
			report_result_owned("error", format_text("could not create replication slot \"%s\" on shard \"%s\"", name, src->name),
						  res, repl.conn);
		PQclear(res);
		PQfinish(repl.conn);
		return NULL;
	}
	*snapshot = format_text("%s", PQgetvalue(res, 0, 2));
	PQclear(res);
	return repl.conn;
}

/*
 * The source's transaction on the slot's snapshot (the replication
 * connection closed once it is imported: its slot stays), and what tells
 * later changes from the copy there: the snapshot's xmax and in-progress
 * xids.
 */
static bool
source_on_snapshot(Server *src, PGconn *repl, const char *snapshot, OnlineCopy *copy)
{
	PGresult   *res;
	bool		ok = command(src, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY");

	if (ok)
	{
		char	   *quoted = format_text("SET TRANSACTION SNAPSHOT '%s'", snapshot);

		ok = command(src, quoted);
		free(quoted);
	}
	PQfinish(repl);
	if (!ok)
		return false;
	res = query(src, "SELECT (pg_catalog.pg_snapshot_xmax(s)::text::int8 % 4294967296)::text, "
				"       COALESCE((SELECT pg_catalog.array_agg((x::text::int8 % 4294967296)::text::xid) "
				"                   FROM pg_catalog.pg_snapshot_xip(s) x), '{}')::text "
				"  FROM pg_catalog.pg_current_snapshot() s", 0, NULL);
	if (res == NULL)
		return false;
	snprintf(copy->source_xmax, sizeof(copy->source_xmax), "%s", PQgetvalue(res, 0, 0));
	free(copy->source_xip);
	copy->source_xip = format_text("%s", PQgetvalue(res, 0, 1));
	PQclear(res);
	return true;
}

/* The copy's transaction on the target, noted: the rows it writes are the copy's. */
static bool
target_transaction(Server *tgt, OnlineCopy *copy)
{
	PGresult   *res;

	if (!begin_table_writes(tgt))
		return false;
	res = query(tgt, "SELECT (pg_catalog.pg_current_xact_id()::text::int8 % 4294967296)::text", 0, NULL);
	if (res == NULL)
		return false;
	snprintf(copy->target_xid, sizeof(copy->target_xid), "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return true;
}

/* Each table's rows of the step, counted per table; false on an error or a stop. */
static bool
copy_tables(Server *src, Server *tgt, TableInfo *tables, int ntables, const StepTarget *target, OnlineCopy *copy)
{
	free(copy->table_rows);
	copy->table_rows = xcalloc(ntables > 0 ? ntables : 1, sizeof(long long));
	for (int i = 0; i < ntables; i++)
	{
		long long	n = copy_table(src, tgt, &tables[i], tables[i].columns, target, &copy->bytes, NULL);

		if (n < 0)
			return false;
		copy->table_rows[i] = n;
		copy->rows += n;
		if (stop_requested)
			return false;
	}
	return true;
}

/*
 * The copy from the slot's snapshot, in one transaction on each side: the
 * step's rows (an earlier try's leftovers are off the target already),
 * then the bulk verification of what was copied against the snapshot,
 * with writes going on; committed on the target only when it holds.  Notes
 * in *copy what tells later changes from the copy: the snapshot's xmax and
 * in-progress xids on the source, the copy's transaction on the target.
 * Whatever ends it, neither side is left in a transaction.
 */
static Verdict
copy_from_snapshot(Server *src, Server *tgt, PGconn *repl, const char *snapshot, TableInfo *tables, int ntables,
				   const StepTarget *target, const Batch *batch, OnlineCopy *copy)
{
	Verdict		v = VERDICT_ERROR;

	copy->rows = copy->bytes = 0;
	if (source_on_snapshot(src, repl, snapshot, copy) && target_transaction(tgt, copy)
		&& copy_tables(src, tgt, tables, ntables, target, copy))
	{
		v = verify(src, tgt, tables, ntables, target, batch, NULL);
		if (v == VERDICT_SAME && !command(tgt, "COMMIT"))
			v = VERDICT_ERROR;
		copy->known = v == VERDICT_SAME;
	}
	server_rollback(tgt);
	server_rollback(src);
	return v;
}

/* The names and texts an online step's objects are made with; step_objects_free frees them. */
typedef struct StepObjects
{
	char	   *name;			/* of every object: online_name */
	char	   *tables;			/* the publication's tables, "a, b" */
	char	   *which;			/* the decoding filter's slots or tenants, as arguments */
	char	   *snapshot;		/* the slot's exported snapshot, once it is made */
} StepObjects;

static void
step_objects_init(StepObjects *o, Server *src, TableInfo *tables, int ntables, const StepTarget *target,
				  const Batch *batch)
{
	char	   *tenants = target->slot >= 0 ? NULL
		: escape_literal(src->conn, target->nsteps > 1 ? target->tenants : target->tenant);

	o->name = online_name(batch->steps[0]);
	o->tables = table_list(tables, ntables);
	o->which = target->slot < 0 ? format_text(target->nsteps > 1 ? "tenants => %s::text[]" : "tenants => ARRAY[%s]", tenants)
		: target->nsteps > 1 ? format_text("slots => '%s'::int[]", target->slots)
		: format_text("slots => ARRAY[%d]", target->slot);
	o->snapshot = NULL;
	free(tenants);
}

static void
step_objects_free(StepObjects *o)
{
	free(o->name);
	free(o->tables);
	free(o->which);
	free(o->snapshot);
}

/*
 * On the source, the step's objects but the slot, recorded first, so a
 * cleaner finds them whatever happens next (replication_cleaner.c): the
 * publication (a rerun finds a dead run's objects by it), then the
 * target's tally, then the source's decoding filter.
 */
static bool
source_objects(Server *dir, Server *src, Server *tgt, const StepObjects *o, const Batch *batch, OnlineCopy *copy)
{
	char	   *directory;
	char	   *sql;
	bool		ok;

	if (!replication_objects_record(dir, batch->steps[0], src->name, tgt->name, o->name))
		return false;
	sql = format_text("CREATE PUBLICATION %s FOR TABLE %s WITH (publish = 'insert, update, delete')", o->name, o->tables);
	ok = command(src, sql);
	free(sql);
	if (!ok)
		return false;
	/* after the publication, by which a rerun finds the target's filter too */
	tally_start_target(tgt, o->name, o->which, copy);
	directory = escape_literal(src->conn, migration.directory);
	sql = format_text("SELECT %s.chash_decoding_filter_create('%s', %s, %s)", src->schema, o->name, directory, o->which);
	ok = command(src, sql);
	free(sql);
	free(directory);
	return ok;
}

/* synchronous_commit = local: what the target reports as flushed is what it applied */
static bool
subscription_create(Server *src, Server *tgt, const char *name)
{
	char	   *conninfo = escape_literal(tgt->conn, src->conninfo);
	char	   *sql = format_text("CREATE SUBSCRIPTION %1$s CONNECTION %2$s PUBLICATION %1$s "
								  "WITH (create_slot = false, slot_name = %1$s, copy_data = false, "
								  "synchronous_commit = 'local', disable_on_error = true)",
								  name, conninfo);
	bool		ok = command(tgt, sql);

	free(sql);
	free(conninfo);
	return ok;
}

/*
 * The replication objects of a step (or a batch: one of each for it, named
 * for its first step) and its copy: on the source the publication, the
 * decoding filter and the slot; the rows copied from the slot's snapshot
 * and verified; then, with the source's tally made before the
 * subscription reads the slot, the subscription on the target, which
 * streams from the slot's consistent point.  VERDICT_DIFFERENT: the copy
 * does not match the source (said).  What was made is left for
 * online_drop, the tallies for online_copy_free.
 */
Verdict
online_subscribe(Server *dir, Server *src, Server *tgt, TableInfo *tables, int ntables,
				 const StepTarget *target, const Batch *batch, OnlineCopy *copy)
{
	StepObjects o;
	PGconn	   *repl;
	Verdict		v = VERDICT_ERROR;

	copy->known = false;
	step_objects_init(&o, src, tables, ntables, target, batch);
	if (source_objects(dir, src, tgt, &o, batch, copy) && (repl = create_slot(src, o.name, &o.snapshot)) != NULL)
	{
		v = copy_from_snapshot(src, tgt, repl, o.snapshot, tables, ntables, target, batch, copy);
		if (v == VERDICT_SAME)
		{
			tally_start_source(src, tgt, o.name, tables, ntables, copy);
			if (!subscription_create(src, tgt, o.name))
				v = VERDICT_ERROR;
		}
	}
	step_objects_free(&o);
	return v;
}

/* Testing aid: CHASH_MOVE_PAUSE_SUBSCRIBED=SECONDS waits that long once a step's subscription streams. */
void
online_test_pause(void)
{
	const char *pause = getenv("CHASH_MOVE_PAUSE_SUBSCRIBED");
	double		until = pause ? now_seconds() + atof(pause) : 0;

	while (now_seconds() < until && !stop_requested)
		usleep(20 * 1000);
}
