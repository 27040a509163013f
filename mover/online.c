/*
 * Online moves (--online, README.md "Online moves"; docs/shards.md): the
 * source keeps taking a step's writes while its rows are copied and its
 * changes streamed, so writes wait only for the last catch-up and the
 * check of the rows changed since the copy.
 *
 * On the source a publication of the registered tables, a decoding filter
 * for the step's slot or tenant (chash_decoding_filter) and a logical slot
 * of output plugin chash, which passes pgoutput's stream of only those
 * rows: every slot method works, a row filter could not call chash's hash.
 * The slot is created over a replication connection with an exported
 * snapshot; the mover copies the rows from that snapshot (the bulk
 * verified there, writes going on), then subscribes the target to the
 * slot with copy_data = false: it streams every change after the
 * snapshot, none twice.  All objects are named
 * chash_move_<database>_<migration>_<step> (<database> a short hash of the
 * directory database's system identifier and oid: migration numbers
 * repeat across directory databases, slot names are the server's), so a
 * rerun finds and drops what a mover that died created, and never another
 * directory database's objects.
 *
 * The tally: a temporary copy of the slot, made before the subscription
 * reads the slot, held by a session of its own, which decodes the same
 * changes with the plugin's option tally: a line for each row of the step
 * changed since the copy, with its key.  The mover reads it while the
 * subscription catches up, and once more in the write block; there only
 * the changed rows are compared on both sides, looked up by their keys,
 * so the block does not grow with the step (docs/shards.md, "The write
 * block").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chash_move.h"

char *
online_name(int step)
{
	return format_text("chash_move_%s_%lld_%d", migration.database_id, migration.id, step);
}

/* Says once per key why steps fall back to the blocking copy; false. */
static bool
cannot(char *key, char *message, const char *hint)
{
	char	   *k = format_text("online\n%s", key);

	if (first_time(k))
	{
		report("warning", "%s", message);
		report("detail", "Their writes are refused while they are copied, as without --online.");
		report("hint", "%s", hint);
	}
	free(k);
	free(key);
	free(message);
	return false;
}

/*
 * Whether the target's server can log in to the source as its
 * subscription will (the source's chash_shard.server, from the target's
 * server, with that server's .pgpass, as a replication connection): a
 * subscription that connects, without a slot, rolled back.  NULL when it
 * can, else the server's error.
 */
static char *
login_error(Server *src, Server *tgt)
{
	static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;
	static int	probes;
	char	   *conninfo = escape_literal(tgt->conn, src->conninfo);
	char	   *sql;
	PGresult   *res;
	char	   *error = NULL;
	int			n;

	pthread_mutex_lock(&probe_lock);
	n = ++probes;
	pthread_mutex_unlock(&probe_lock);
	if (!command(tgt, "BEGIN; SET LOCAL client_min_messages = error"))
	{
		free(conninfo);
		return format_text("%s", "the probe failed");
	}
	sql = format_text("CREATE SUBSCRIPTION chash_move_probe_%d_%d CONNECTION %s PUBLICATION chash_move_probe "
					  "WITH (connect = true, enabled = false, create_slot = false, slot_name = NONE, copy_data = false)",
					  (int) getpid(), n, conninfo);
	res = server_exec(tgt, sql);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
	{
		const char *m = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

		error = format_text("%s", m ? m : PQerrorMessage(tgt->conn));
		error[strcspn(error, "\n")] = '\0';
	}
	PQclear(res);
	PQclear(server_exec(tgt, "ROLLBACK"));
	free(sql);
	free(conninfo);
	return error;
}

/*
 * Whether the step can move online, checked on its shards; when not, the
 * reason is said once.  The tenant column must be in the source's replica
 * identity: the plugin judges a DELETE by the old row's key.
 */
bool
online_usable(Server *src, Server *tgt, TableInfo *tables, int ntables, const StepTarget *target)
{
	PGresult   *res;
	bool		ok;

	res = query(src, "SELECT pg_catalog.current_setting('wal_level') = 'logical'", 0, NULL);
	if (res == NULL)
		return false;
	ok = PQgetvalue(res, 0, 0)[0] == 't';
	PQclear(res);
	if (!ok)
		return cannot(format_text("wal_level\n%s", src->name),
					  format_text("shard \"%s\" does not have wal_level = logical: steps from it are moved with writes blocked", src->name),
					  "Set wal_level = logical there and restart it.");
	/* servers that list the output plugins a slot may use must list chash */
	res = query(src, "SELECT COALESCE(pg_catalog.current_setting('output_plugin_libraries', true), 'chash') "
				"       ~ '(^|[ ,])chash($|[ ,])', "
				"       pg_catalog.to_regclass(pg_catalog.quote_ident(n.nspname) || '.chash_decoding_filter') IS NOT NULL "
				"  FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace "
				" WHERE e.extname = 'chash'", 0, NULL);
	if (res == NULL)
		return false;
	ok = PQntuples(res) == 1 && PQgetvalue(res, 0, 0)[0] == 't';
	if (PQntuples(res) == 1 && PQgetvalue(res, 0, 1)[0] != 't')
	{
		PQclear(res);
		return cannot(format_text("plugin\n%s", src->name),
					  format_text("chash on shard \"%s\" has no output plugin: steps from it are moved with writes blocked", src->name),
					  "Update chash there with ALTER EXTENSION chash UPDATE.");
	}
	PQclear(res);
	if (!ok)
		return cannot(format_text("plugin\n%s", src->name),
					  format_text("shard \"%s\" does not allow output plugin \"chash\": steps from it are moved with writes blocked", src->name),
					  "Add chash to output_plugin_libraries there (output_plugin_libraries = 'pgoutput, test_decoding, chash') and reload it.");
	res = query(tgt, "SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user", 0, NULL);
	if (res == NULL)
		return false;
	ok = PQntuples(res) == 1 && PQgetvalue(res, 0, 0)[0] == 't';
	PQclear(res);
	if (!ok)
		return cannot(format_text("superuser\n%s", tgt->name),
					  format_text("the mover's role on shard \"%s\" is not a superuser, which CREATE SUBSCRIPTION needs: steps to it are moved with writes blocked", tgt->name),
					  "Connect to it as a superuser in its chash_shard.server.");
	{
		char	   *error = login_error(src, tgt);

		if (error != NULL)
			return cannot(format_text("login\n%s\n%s", src->name, tgt->name),
						  format_text("shard \"%s\" cannot log in to shard \"%s\" for the subscription (%s): steps from \"%s\" to \"%s\" are moved with writes blocked",
									  tgt->name, src->name, error, src->name, tgt->name),
						  format_text("The subscription connects from the server of shard \"%s\" with the chash_shard.server of shard \"%s\", as a replication connection. "
									  "Put that role's password in the .pgpass file of the operating-system user that runs the server of shard \"%s\" (usually ~postgres/.pgpass, mode 0600), "
									  "give the role REPLICATION, or allow the connection in the pg_hba.conf of shard \"%s\".",
									  tgt->name, src->name, tgt->name, src->name));
		free(error);
	}
	for (int i = 0; i < ntables; i++)
	{
		const char *params[2] = {tables[i].table_name, tables[i].tenant_column};

		res = query(src,
					"SELECT c.relreplident = 'f' OR EXISTS ("
					"         SELECT FROM pg_catalog.pg_index i"
					"          WHERE i.indrelid = c.oid AND a.attnum = ANY (i.indkey)"
					"            AND ((c.relreplident = 'd' AND i.indisprimary)"
					"                 OR (c.relreplident = 'i' AND i.indisreplident)))"
					"  FROM pg_catalog.pg_class c"
					"  JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attname = $2"
					" WHERE c.oid = pg_catalog.to_regclass($1)", 2, params);
		if (res == NULL)
			return false;
		ok = PQntuples(res) == 1 && PQgetvalue(res, 0, 0)[0] == 't';
		PQclear(res);
		if (!ok)
			return cannot(format_text("identity\n%s\n%s", src->name, tables[i].table_name),
						  format_text("tenant column \"%s\" of table \"%s\" is not in its replica identity on shard \"%s\": steps from there are moved with writes blocked",
									  tables[i].tenant_column, tables[i].table_name, src->name),
						  "The decoding filter judges a deletion by the old row's key, which holds the replica identity only; give the table a primary key that includes the column, or ALTER TABLE ... REPLICA IDENTITY FULL.");
	}
	return true;
}

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
	const char *keywords[] = {"dbname", "replication", "fallback_application_name", NULL};
	const char *values[] = {src->conninfo, "database", PROGNAME, NULL};
	/* a Server of its own: server_wait says what a long wait waits for, and Ctrl-C cancels it */
	Server		repl = {.name = src->name, .conninfo = src->conninfo};
	char	   *sql;
	PGresult   *res = NULL;
	bool		cancelled = false;

	*snapshot = NULL;
	repl.conn = PQconnectdbParams(keywords, values, true);
	if (PQstatus(repl.conn) != CONNECTION_OK)
	{
		report_result("error", format_text("could not open a replication connection to shard \"%s\"", src->name), NULL, repl.conn);
		PQfinish(repl.conn);
		return NULL;
	}
	sql = format_text("CREATE_REPLICATION_SLOT %s LOGICAL chash EXPORT_SNAPSHOT", name);
	if (PQsendQuery(repl.conn, sql))
		res = server_wait(&repl, sql, &cancelled);
	free(sql);
	if (res == NULL || PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1 || PQgetisnull(res, 0, 2))
	{
		if (!cancelled)
			report_result("error", format_text("could not create replication slot \"%s\" on shard \"%s\"", name, src->name),
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
 * The copy from the slot's snapshot, in one transaction on each side: the
 * step's rows (an earlier try's leftovers are off the target already),
 * then the bulk verification of what was copied against the snapshot,
 * with writes going on; committed on the target only when it holds.  Notes
 * in *copy what tells later changes from the copy: the snapshot's xmax and
 * in-progress xids on the source, the copy's transaction on the target.
 */
static Verdict
copy_from_snapshot(Server *src, Server *tgt, PGconn *repl, const char *snapshot, TableInfo *tables, int ntables,
				   const StepTarget *target, const Batch *batch, OnlineCopy *copy)
{
	Verdict		v = VERDICT_ERROR;
	PGresult   *res;
	bool		ok;

	copy->rows = copy->bytes = 0;
	ok = command(src, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY");
	if (ok)
	{
		char	   *quoted = format_text("SET TRANSACTION SNAPSHOT '%s'", snapshot);

		ok = command(src, quoted);
		free(quoted);
	}
	/* imported: the replication connection may go (its slot stays) */
	PQfinish(repl);
	if (!ok)
		goto out;
	res = query(src, "SELECT (pg_catalog.pg_snapshot_xmax(s)::text::int8 % 4294967296)::text, "
				"       COALESCE((SELECT pg_catalog.array_agg((x::text::int8 % 4294967296)::text::xid) "
				"                   FROM pg_catalog.pg_snapshot_xip(s) x), '{}')::text "
				"  FROM pg_catalog.pg_current_snapshot() s", 0, NULL);
	if (res == NULL)
		goto out;
	snprintf(copy->source_xmax, sizeof(copy->source_xmax), "%s", PQgetvalue(res, 0, 0));
	free(copy->source_xip);
	copy->source_xip = format_text("%s", PQgetvalue(res, 0, 1));
	PQclear(res);
	if (!command(tgt, "BEGIN"))
		goto out;
	res = query(tgt, "SELECT (pg_catalog.pg_current_xact_id()::text::int8 % 4294967296)::text", 0, NULL);
	if (res == NULL)
		goto out;
	snprintf(copy->target_xid, sizeof(copy->target_xid), "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	free(copy->table_rows);
	copy->table_rows = calloc(ntables > 0 ? ntables : 1, sizeof(long long));
	for (int i = 0; i < ntables; i++)
	{
		long long	n = copy_table(src, tgt, &tables[i], tables[i].columns, target, &copy->bytes, NULL);

		if (n < 0)
			goto out;
		copy->table_rows[i] = n;
		copy->rows += n;
		if (stop_requested)
			goto out;
	}
	v = verify(src, tgt, tables, ntables, target, batch, NULL);
	if (v == VERDICT_SAME && !command(tgt, "COMMIT"))
		v = VERDICT_ERROR;
	copy->known = v == VERDICT_SAME;
out:
	if (PQtransactionStatus(tgt->conn) != PQTRANS_IDLE)
		PQclear(PQexec(tgt->conn, "ROLLBACK"));
	if (PQtransactionStatus(src->conn) != PQTRANS_IDLE)
		PQclear(PQexec(src->conn, "ROLLBACK"));
	return v;
}

/* ---- the tallies ---- */

/* Ends the tallies: their slots dropped (they would go with their sessions anyway), the keys freed. */
static void
tally_stop(OnlineCopy *copy)
{
	for (int k = 0; k < 2; k++)
	{
		Tally	   *t = &copy->tally[k];

		if (t->server.conn != NULL && t->slot != NULL)
		{
			const char *params[1] = {t->slot};

			PQclear(PQexecParams(t->server.conn, "SELECT pg_catalog.pg_drop_replication_slot($1)",
								 1, NULL, params, NULL, NULL, 0));
		}
		server_close(&t->server);
		free(t->server.schema);
		free(t->slot);
		memset(t, 0, sizeof(*t));
	}
	free(copy->filter);
	copy->filter = NULL;
	for (int i = 0; i < copy->ntables; i++)
	{
		for (int j = 0; j < copy->tables[i].nchanged; j++)
			free(copy->tables[i].changed[j]);
		free(copy->tables[i].changed);
		free(copy->tables[i].oid[0]);
		free(copy->tables[i].oid[1]);
		free(copy->tables[i].keys);
	}
	free(copy->tables);
	copy->tables = NULL;
	copy->ntables = 0;
}

void
online_copy_free(OnlineCopy *copy)
{
	tally_stop(copy);
	free(copy->source_xip);
	copy->source_xip = NULL;
	free(copy->table_rows);
	copy->table_rows = NULL;
}

/*
 * Opens a tally's session on the server and makes its temporary slot
 * there with sql ($1 the slot's name, $2 another's): false, said with
 * --verbose, when it cannot (a server without room for another slot, or
 * not wal_level = logical, is no error of the move).
 */
static bool
tally_open(Tally *t, Server *server, const char *name, const char *sql, const char *other)
{
	const char *params[2] = {NULL, other};
	PGresult   *res;

	t->server.name = server->name;
	t->server.conninfo = server->conninfo;
	t->slot = format_text("%s_tally", name);
	params[0] = t->slot;
	if (!server_open(&t->server))
		return false;
	res = PQexecParams(t->server.conn, sql, other ? 2 : 1, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		const char *m = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

		if (options.verbose)
			report("info", "no tally of the changes on shard \"%s\" (%.*s): the write block finds them by a scan",
				   server->name, (int) strcspn(m ? m : "", "\n"), m ? m : "");
		PQclear(res);
		free(t->slot);
		t->slot = NULL;
		return false;
	}
	PQclear(res);
	return true;
}

/*
 * The target's tally, before anything of the step is written there (and
 * before the source's slot, whose exported snapshot would hold up a slot
 * made on the same server): a temporary slot of plugin chash on the
 * target with the step's filter, which sees every change of the step's
 * rows there from now on, the subscription's and any other session's;
 * the copy's transaction is left out when it is read (except_xid).
 */
static void
tally_start_target(Server *tgt, const char *name, const char *which, OnlineCopy *copy)
{
	char	   *directory = escape_literal(tgt->conn, migration.directory);
	char	   *sql = format_text("SELECT %s.chash_decoding_filter_create('%s', %s, %s)", tgt->schema, name, directory, which);

	copy->filter = format_text("%s", name);
	if (!command(tgt, sql)
		|| !tally_open(&copy->tally[1], tgt, name, "SELECT FROM pg_catalog.pg_create_logical_replication_slot($1, 'chash', true)", NULL))
		tally_stop(copy);
	free(sql);
	free(directory);
}

/*
 * The source's tally, a temporary copy of the step's slot (the same
 * start: it decodes what the subscription will stream), before the
 * subscription reads that; and each table's key.
 */
static void
tally_start_source(Server *src, Server *tgt, const char *name, TableInfo *tables, int ntables, OnlineCopy *copy)
{
	const char *params[1];
	PGresult   *res;

	if (copy->tally[1].server.conn == NULL
		|| !tally_open(&copy->tally[0], src, name, "SELECT FROM pg_catalog.pg_copy_logical_replication_slot($2, $1, true)", name))
		goto fail;
	copy->tally[1].except_xid = copy->target_xid;
	copy->tables = calloc(ntables > 0 ? ntables : 1, sizeof(TallyTable));
	copy->ntables = ntables;
	for (int i = 0; i < ntables; i++)
	{
		params[0] = tables[i].table_name;
		res = query(src, "SELECT c.oid, "
					"       (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(a.attname), ', ' ORDER BY k.n) "
					"          FROM pg_catalog.pg_index i, pg_catalog.unnest(i.indkey) WITH ORDINALITY k(attnum, n), "
					"               pg_catalog.pg_attribute a "
					"         WHERE i.indrelid = c.oid AND a.attrelid = c.oid AND a.attnum = k.attnum "
					"           AND ((c.relreplident = 'd' AND i.indisprimary) "
					"                OR (c.relreplident = 'i' AND i.indisreplident))) "
					"  FROM pg_catalog.pg_class c WHERE c.oid = pg_catalog.to_regclass($1)", 1, params);
		if (res == NULL || PQntuples(res) != 1)
		{
			PQclear(res);
			goto fail;
		}
		copy->tables[i].oid[0] = format_text("%s", PQgetvalue(res, 0, 0));
		copy->tables[i].keys = PQgetisnull(res, 0, 1) ? NULL : format_text("%s", PQgetvalue(res, 0, 1));
		PQclear(res);
		res = query(tgt, "SELECT pg_catalog.to_regclass($1)::pg_catalog.oid", 1, params);
		if (res == NULL || PQntuples(res) != 1 || PQgetisnull(res, 0, 0))
		{
			PQclear(res);
			goto fail;
		}
		copy->tables[i].oid[1] = format_text("%s", PQgetvalue(res, 0, 0));
		PQclear(res);
	}
	return;
fail:
	tally_stop(copy);
}

static int
compare_keys(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* Sorts a table's changed keys and drops the repeats (a row changed many times is one key). */
static void
tally_distinct(TallyTable *t)
{
	int			n = 0;

	qsort(t->changed, t->nchanged, sizeof(char *), compare_keys);
	for (int i = 0; i < t->nchanged; i++)
	{
		if (n > 0 && strcmp(t->changed[n - 1], t->changed[i]) == 0)
			free(t->changed[i]);
		else
			t->changed[n++] = t->changed[i];
	}
	t->nchanged = t->distinct = n;
}

/*
 * Reads what a tally decoded since it was last read: per table, the keys
 * of the changed rows and, on the source, the rows inserted less those
 * deleted.  False: it ended.
 */
static bool
tally_read_one(OnlineCopy *copy, Tally *t, int side)
{
	const char *params[3] = {t->slot, copy->filter, t->except_xid};
	char	   *sql = format_text("SELECT data FROM pg_catalog.pg_logical_slot_get_changes($1, NULL, NULL, 'tally', $2%s)",
								  t->except_xid ? ", 'except_xid', $3" : "");
	PGresult   *res = query(&t->server, sql, t->except_xid ? 3 : 2, params);

	free(sql);
	if (res == NULL)
		return false;
	for (int r = 0; r < PQntuples(res); r++)
	{
		const char *line = PQgetvalue(res, r, 0);
		const char *key = strlen(line) > 2 ? strchr(line + 2, ' ') : NULL;
		TallyTable *tt = NULL;

		for (int i = 0; i < copy->ntables && tt == NULL && key != NULL; i++)
			if (strlen(copy->tables[i].oid[side]) == (size_t) (key - line - 2)
				&& strncmp(copy->tables[i].oid[side], line + 2, key - line - 2) == 0)
				tt = &copy->tables[i];
		if (tt == NULL)
		{
			report("error", "the tally of shard \"%s\" has a line the mover does not know: %s", t->server.name, line);
			PQclear(res);
			return false;
		}
		key++;
		if (side == 0)
			tt->net += line[0] == 'I' ? 1 : line[0] == 'D' ? -1 : 0;
		if (strcmp(key, "-") == 0)
		{
			tt->unkeyed = true;
			continue;
		}
		if (tt->nchanged == tt->capacity)
		{
			tt->capacity = tt->capacity ? 2 * tt->capacity : 256;
			tt->changed = realloc(tt->changed, tt->capacity * sizeof(char *));
		}
		tt->changed[tt->nchanged++] = format_text("%s", key);
		if (tt->nchanged > 2 * tt->distinct + 4096)
			tally_distinct(tt);
	}
	PQclear(res);
	return true;
}

/* Both tallies read; false (both ended) when either cannot be: the write block then verifies by a scan. */
static bool
tally_read(OnlineCopy *copy)
{
	if (copy->tally[0].server.conn == NULL || copy->tally[1].server.conn == NULL
		|| !tally_read_one(copy, &copy->tally[0], 0) || !tally_read_one(copy, &copy->tally[1], 1))
	{
		tally_stop(copy);
		return false;
	}
	return true;
}

/* The keys of a table's changed rows as a JSON array, for json_populate_recordset. */
static char *
tally_json(TallyTable *t)
{
	size_t		size = 3;
	char	   *json;
	char	   *p;

	for (int i = 0; i < t->nchanged; i++)
		size += strlen(t->changed[i]) + 1;
	json = p = malloc(size);
	*p++ = '[';
	for (int i = 0; i < t->nchanged; i++)
	{
		size_t		n = strlen(t->changed[i]);

		if (i > 0)
			*p++ = ',';
		memcpy(p, t->changed[i], n);
		p += n;
	}
	*p++ = ']';
	*p = '\0';
	return json;
}

/*
 * The replication objects of a step (or a batch: one of each for it, named
 * for its first step) and its copy: on the source the
 * publication (first: a rerun finds a dead run's objects by it), the
 * decoding filter and the slot; the rows copied from the slot's snapshot
 * and verified; then the subscription on the target, which streams from
 * the slot's consistent point.  VERDICT_DIFFERENT: the copy does not match
 * the source (said).
 */
Verdict
online_subscribe(Server *dir, Server *src, Server *tgt, TableInfo *tables, int ntables,
				 const StepTarget *target, const Batch *batch, OnlineCopy *copy)
{
	char	   *name = online_name(batch->steps[0]);
	char	   *list = table_list(tables, ntables);
	char	   *directory = escape_literal(src->conn, migration.directory);
	char	   *tenants = target->slot >= 0 ? NULL
		: escape_literal(src->conn, target->nsteps > 1 ? target->tenants : target->tenant);
	char	   *which = target->slot < 0 ? format_text(target->nsteps > 1 ? "tenants => %s::text[]" : "tenants => ARRAY[%s]", tenants)
		: target->nsteps > 1 ? format_text("slots => '%s'::int[]", target->slots)
		: format_text("slots => ARRAY[%d]", target->slot);
	char	   *sql;
	char	   *snapshot = NULL;
	char	   *conninfo;
	PGconn	   *repl;
	Verdict		v = VERDICT_ERROR;

	copy->known = false;
	/* recorded first, so a cleaner finds them whatever happens next (replication_cleaner.c) */
	sql = NULL;
	if (!replication_objects_record(dir, batch->steps[0], src->name, tgt->name, name))
		goto out;
	sql = format_text("CREATE PUBLICATION %s FOR TABLE %s WITH (publish = 'insert, update, delete')", name, list);
	if (!command(src, sql))
		goto out;
	/* after the publication, by which a rerun finds the target's filter too */
	tally_start_target(tgt, name, which, copy);
	free(sql);
	sql = format_text("SELECT %s.chash_decoding_filter_create('%s', %s, %s)", src->schema, name, directory, which);
	if (!command(src, sql))
		goto out;
	if ((repl = create_slot(src, name, &snapshot)) == NULL)
		goto out;
	v = copy_from_snapshot(src, tgt, repl, snapshot, tables, ntables, target, batch, copy);
	if (v != VERDICT_SAME)
		goto out;
	/* before the subscription reads the slot */
	tally_start_source(src, tgt, name, tables, ntables, copy);
	/* synchronous_commit = local: what the target reports as flushed is what it applied */
	free(sql);
	conninfo = escape_literal(tgt->conn, src->conninfo);
	sql = format_text("CREATE SUBSCRIPTION %1$s CONNECTION %2$s PUBLICATION %1$s "
					  "WITH (create_slot = false, slot_name = %1$s, copy_data = false, "
					  "synchronous_commit = 'local', disable_on_error = true)",
					  name, conninfo);
	free(conninfo);
	if (!command(tgt, sql))
		v = VERDICT_ERROR;
out:
	free(sql);
	free(snapshot);
	free(tenants);
	free(which);
	free(directory);
	free(list);
	free(name);
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

/*
 * The rows of a table that changed since the copy there, and those that
 * did not: count unchanged, count changed, checksum of the changed.  On
 * the source a row version is the snapshot's when its xmin is older than
 * the snapshot's xmax and was not running then; on the target when the
 * copy's transaction wrote it.  Only the changed rows are hashed (a row's
 * hash is never NULL: NULL marks an unchanged row).
 */
static char *
tail_sql(Server *server, const TableInfo *table, const StepTarget *target, const char *changed)
{
	char	   *pred = step_predicate(server, table, target);
	char	   *sql = format_text("SELECT pg_catalog.count(*) - pg_catalog.count(q.h), pg_catalog.count(q.h), "
								  "       COALESCE(pg_catalog.sum(q.h), 0) "
								  "  FROM (SELECT CASE WHEN %2$s THEN %1$s.chash_xxh64(ROW(%3$s)::text) END AS h "
								  "          FROM %4$s WHERE %5$s) q",
								  server->schema, changed, table->columns, table->table_name, pred);

	free(pred);
	return sql;
}

/*
 * The rows of a table with the keys in $1 (a JSON array of key objects,
 * from the tally), looked up by the table's replica identity index: their
 * count and checksum.
 */
static char *
changed_sql(Server *server, const TableInfo *table, const StepTarget *target, const char *keys)
{
	char	   *pred = step_predicate(server, table, target);
	char	   *sql = format_text("SELECT pg_catalog.count(*), COALESCE(pg_catalog.sum(%1$s.chash_xxh64(ROW(%2$s)::text)), 0) "
								  "  FROM %3$s WHERE %4$s AND (%5$s) IN "
								  "       (SELECT %5$s FROM pg_catalog.json_populate_recordset(NULL::%3$s, $1::pg_catalog.json))",
								  server->schema, table->columns, table->table_name, pred, keys);

	free(pred);
	return sql;
}

/*
 * One table by its tally: the rows changed since the copy, looked up by
 * key, are as many on both sides with the same checksum.  The rows the
 * tally does not name are the copy's on both sides: on the source every
 * change since the snapshot is in the tally (it decodes what the
 * subscription streams, from the same point), and on the target only the
 * subscription writes a moving row before the fence, and it writes only
 * those.  NULL when the same, else the detail of the difference; *rows
 * gets the target's count, the copy's plus the inserted less the deleted.
 */
static Verdict
verify_changed(Server *src, Server *tgt, const TableInfo *table, const StepTarget *target, TallyTable *t,
			   long long copied, long long *rows, char **detail)
{
	char	   *json;
	char	   *sql_src;
	char	   *sql_tgt;
	const char *params[1];
	PGresult   *rs = NULL,
			   *rt = NULL;
	Verdict		v = VERDICT_ERROR;

	*rows += copied + t->net;
	tally_distinct(t);
	if (t->nchanged == 0)
		return VERDICT_SAME;
	json = tally_json(t);
	params[0] = json;
	sql_src = changed_sql(src, table, target, t->keys);
	sql_tgt = changed_sql(tgt, table, target, t->keys);
	if (PQsendQueryParams(src->conn, sql_src, 1, NULL, params, NULL, NULL, 0)
		&& PQsendQueryParams(tgt->conn, sql_tgt, 1, NULL, params, NULL, NULL, 0))
	{
		rs = last_result(src, sql_src);
		rt = last_result(tgt, sql_tgt);
	}
	else
		report("error", "could not send the verification query: %s", PQerrorMessage(src->conn));
	if (rs != NULL && rt != NULL)
	{
		bool		same = strcmp(PQgetvalue(rs, 0, 0), PQgetvalue(rt, 0, 0)) == 0
			&& strcmp(PQgetvalue(rs, 0, 1), PQgetvalue(rt, 0, 1)) == 0;

		v = same ? VERDICT_SAME : VERDICT_DIFFERENT;
		if (!same)
			*detail = format_text("Of the %d rows changed since the copy, the source has %s (checksum %s), the target %s (checksum %s).",
								  t->nchanged, PQgetvalue(rs, 0, 0), PQgetvalue(rs, 0, 1),
								  PQgetvalue(rt, 0, 0), PQgetvalue(rt, 0, 1));
	}
	PQclear(rs);
	PQclear(rt);
	free(sql_src);
	free(sql_tgt);
	free(json);
	return v;
}

/*
 * The tail verification, with the step fenced and the target caught up
 * with the source (docs/shards.md, "The write block").  With the tally,
 * per table, only the rows changed since the copy are compared, found by
 * key (verify_changed): the block's cost is that of the changes, not of
 * the step.  Without it (a table without a replica identity index, a
 * tally that ended), the rows left unchanged since the copy are as many
 * on both sides (the copy was verified equal to the snapshot), and the
 * rows changed since are as many, with the same checksum: a count of the
 * step's rows plus the changes.
 */
Verdict
online_verify_tail(Server *src, Server *tgt, TableInfo *tables, int ntables, const StepTarget *target,
				   const Batch *batch, OnlineCopy *copy, long long *rows)
{
	/* age() is the same all through a transaction: an xmin the snapshot's xmax or younger */
	char	   *src_changed = format_text("(pg_catalog.age(xmin) <= (SELECT pg_catalog.age('%s'::xid)) OR xmin = ANY ('%s'::xid[]))",
										  copy->source_xmax, copy->source_xip);
	char	   *tgt_changed = format_text("xmin <> '%s'::xid", copy->target_xid);
	Verdict		v = VERDICT_ERROR;

	/* what the tally decoded since it was last read: up to the fence's message at least (it has been applied) */
	bool		tallied = tally_read(copy);

	copy->changed = tallied ? 0 : -1;
	if (!command(tgt, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
		|| !command(src, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"))
		goto out;
	for (int i = 0; i < ntables; i++)
	{
		TallyTable *t = tallied && i < copy->ntables ? &copy->tables[i] : NULL;
		char	   *sql_src;
		char	   *sql_tgt;
		PGresult   *rs = NULL,
				   *rt = NULL;
		bool		same;

		if (t != NULL && t->keys != NULL && !t->unkeyed && copy->table_rows != NULL)
		{
			char	   *detail = NULL;
			Verdict		tv = verify_changed(src, tgt, &tables[i], target, t, copy->table_rows[i], rows, &detail);

			copy->changed += t->nchanged;
			if (tv == VERDICT_DIFFERENT)
			{
				char	   *which = batch_describe(batch);

				report("error", "verification failed for %s of migration %lld: table \"%s\" differs between shard \"%s\" and shard \"%s\"",
					   which, migration.id, tables[i].table_name, src->name, tgt->name);
				free(which);
				report("detail", "%s Given back: the rows stay on shard \"%s\", which still owns them.", detail, src->name);
				report("hint", "Something changed the moving rows on shard \"%s\" behind the mover's back (a trigger, or a session that bypasses the guard).",
					   tgt->name);
				free(detail);
			}
			if (tv != VERDICT_SAME)
			{
				v = tv;
				goto out;
			}
			continue;
		}
		copy->changed = -1;
		sql_src = tail_sql(src, &tables[i], target, src_changed);
		sql_tgt = tail_sql(tgt, &tables[i], target, tgt_changed);

		if (PQsendQuery(src->conn, sql_src) && PQsendQuery(tgt->conn, sql_tgt))
		{
			rs = last_result(src, sql_src);
			rt = last_result(tgt, sql_tgt);
		}
		else
			report("error", "could not send the verification query: %s", PQerrorMessage(src->conn));
		free(sql_src);
		free(sql_tgt);
		if (rs == NULL || rt == NULL)
		{
			PQclear(rs);
			PQclear(rt);
			goto out;
		}
		same = strcmp(PQgetvalue(rs, 0, 0), PQgetvalue(rt, 0, 0)) == 0
			&& strcmp(PQgetvalue(rs, 0, 1), PQgetvalue(rt, 0, 1)) == 0
			&& strcmp(PQgetvalue(rs, 0, 2), PQgetvalue(rt, 0, 2)) == 0;
		*rows += atoll(PQgetvalue(rt, 0, 0)) + atoll(PQgetvalue(rt, 0, 1));
		if (!same)
		{
			char	   *which = batch_describe(batch);

			report("error", "verification failed for %s of migration %lld: table \"%s\" differs between shard \"%s\" and shard \"%s\"",
				   which, migration.id, tables[i].table_name, src->name, tgt->name);
			free(which);
			report("detail", "Since the copy, the source has %s rows unchanged and %s changed (checksum %s), the target %s unchanged and %s changed (checksum %s). "
				   "Given back: the rows stay on shard \"%s\", which still owns them.",
				   PQgetvalue(rs, 0, 0), PQgetvalue(rs, 0, 1), PQgetvalue(rs, 0, 2),
				   PQgetvalue(rt, 0, 0), PQgetvalue(rt, 0, 1), PQgetvalue(rt, 0, 2), src->name);
			report("hint", "Something changed the moving rows on shard \"%s\" behind the mover's back (a trigger, or a session that bypasses the guard).",
				   tgt->name);
		}
		PQclear(rs);
		PQclear(rt);
		if (!same)
		{
			v = VERDICT_DIFFERENT;
			goto out;
		}
	}
	v = VERDICT_SAME;
out:
	if (PQtransactionStatus(tgt->conn) != PQTRANS_IDLE)
		PQclear(PQexec(tgt->conn, "ROLLBACK"));
	if (PQtransactionStatus(src->conn) != PQTRANS_IDLE)
		PQclear(PQexec(src->conn, "ROLLBACK"));
	free(src_changed);
	free(tgt_changed);
	tally_stop(copy);
	return v;
}

/*
 * The target's error for a subscription whose apply failed, from the
 * server's log when it keeps one the mover may read (logging_collector;
 * the mover is a superuser there): the last ERROR, with its DETAIL, whose
 * CONTEXT names the subscription's replication origin.  NULL when not
 * found.
 */
static char *
apply_error(Server *tgt, const char *suboid)
{
	char	   *origin = format_text("replication origin \"pg_%s\"", suboid);
	char	   *error = NULL;

	/* the worker logs before it counts the error; the log collector may lag a little */
	for (int tries = 0; tries < 20 && error == NULL; tries++)
	{
		PGresult   *res = server_exec(tgt, "SELECT pg_catalog.pg_read_file(f, GREATEST(0, (pg_catalog.pg_stat_file(f)).size - 1048576), 1048576) "
										 "  FROM pg_catalog.pg_current_logfile() f WHERE f IS NOT NULL");
		const char *log;
		const char *at;
		const char *e;

		if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
		{
			PQclear(res);
			break;				/* no log file, or not readable */
		}
		log = PQgetvalue(res, 0, 0);
		at = NULL;
		for (const char *p = strstr(log, origin); p != NULL; p = strstr(p + 1, origin))
			at = p;
		for (e = at; e != NULL && e > log && strncmp(e, "ERROR:", 6) != 0; e--)
			;
		if (at != NULL && e != NULL && e > log)
		{
			const char *msg = e + 6;
			const char *d = strstr(msg, "DETAIL:");
			size_t		n;

			msg += strspn(msg, " \t");
			n = strcspn(msg, "\n");
			if (d != NULL && d < at)
			{
				d += 7 + strspn(d + 7, " \t");
				error = format_text("%.*s (%.*s)", (int) n, msg, (int) strcspn(d, "\n"), d);
			}
			else
				error = format_text("%.*s", (int) n, msg);
		}
		PQclear(res);
		if (error == NULL)
			usleep(50 * 1000);
	}
	free(origin);
	return error;
}

/*
 * The subscription's tables ready (streaming): 1; not yet: 0; gone or not
 * asked: -1; its apply failed: ONLINE_CANNOT_APPLY - 1, said here with
 * the target's error.  Its subscription was made with disable_on_error,
 * so a change the target cannot apply fails once and is not retried.
 */
#define APPLY_FAILED (ONLINE_CANNOT_APPLY - 1)
static int
subscription_state(Server *tgt, const char *name, int ntables)
{
	const char *params[1] = {name};
	PGresult   *res = query(tgt,
							"SELECT count(r.srrelid), count(r.srrelid) FILTER (WHERE r.srsubstate = 'r'), "
							"       COALESCE((SELECT t.apply_error_count + t.sync_error_count "
							"                   FROM pg_catalog.pg_stat_subscription_stats t WHERE t.subid = s.oid), 0) > 0 "
							"       OR NOT s.subenabled, s.oid "
							"  FROM pg_catalog.pg_subscription s "
							"  LEFT JOIN pg_catalog.pg_subscription_rel r ON r.srsubid = s.oid "
							" WHERE s.subname = $1 AND s.subdbid = (SELECT oid FROM pg_catalog.pg_database "
							"                                        WHERE datname = pg_catalog.current_database()) "
							" GROUP BY s.oid", 1, params);
	int			state;

	if (res == NULL)
		return -1;
	if (PQntuples(res) != 1)
	{
		PQclear(res);
		report("error", "subscription \"%s\" disappeared from shard \"%s\"", name, tgt->name);
		return -1;
	}
	if (PQgetvalue(res, 0, 2)[0] == 't')
	{
		char	   *error = apply_error(tgt, PQgetvalue(res, 0, 3));

		if (error != NULL)
			report("error", "shard \"%s\" cannot apply the step's changes: %s", tgt->name, error);
		else
			report("error", "shard \"%s\" cannot apply the step's changes (subscription \"%s\" failed)", tgt->name, name);
		report("detail", "The step is given back: its rows stay on the source, which owns them; nothing of the step is left on shard \"%s\".",
			   tgt->name);
		report("hint", "%s", error != NULL ? "Make the table the same on both shards (its columns, its unique indexes) and run chash_move again."
			   : format_text("The server log of shard \"%s\" says why; make the table the same on both shards and run chash_move again.", tgt->name));
		free(error);
		state = APPLY_FAILED;
	}
	else
		state = atoi(PQgetvalue(res, 0, 0)) == ntables && atoi(PQgetvalue(res, 0, 1)) == ntables ? 1 : 0;
	PQclear(res);
	return state;
}

/*
 * Waits until the slot's confirmed flush position has reached lsn: 1; an
 * error 0; the target's apply failed ONLINE_CANNOT_APPLY (asked every
 * tenth of a second: the slot would never get there).
 */
static int
wait_slot(Server *src, Server *tgt, const char *name, const char *lsn, int ntables)
{
	const char *params[2] = {name, lsn};
	double		start = now_seconds();
	double		next_say = start + 5;
	double		next_ask = start + 0.1;

	for (;;)
	{
		PGresult   *res = query(src, "SELECT confirmed_flush_lsn >= $2::pg_lsn, wal_status = 'lost' "
								"FROM pg_catalog.pg_replication_slots WHERE slot_name = $1", 2, params);
		bool		reached;

		if (res == NULL)
			return 0;
		if (PQntuples(res) != 1 || PQgetvalue(res, 0, 1)[0] == 't')
		{
			if (PQntuples(res) != 1)
				report("error", "replication slot \"%s\" disappeared from shard \"%s\"", name, src->name);
			else
			{
				report("error", "replication slot \"%s\" on shard \"%s\" lost the WAL it needs", name, src->name);
				report("hint", "The step's catch-up outgrew max_slot_wal_keep_size there; raise it, or move the step without --online.");
			}
			PQclear(res);
			return 0;
		}
		reached = PQgetvalue(res, 0, 0)[0] == 't';
		PQclear(res);
		if (reached)
			return 1;
		if (stop_requested)
			return 0;
		if (now_seconds() >= next_ask)
		{
			int			state = subscription_state(tgt, name, ntables);

			if (state < 0)
				return state == APPLY_FAILED ? ONLINE_CANNOT_APPLY : 0;
			next_ask = now_seconds() + 0.1;
		}
		if (now_seconds() >= next_say)
		{
			report("info", "waiting %.0f s for the subscription \"%s\" to apply shard \"%s\"'s changes up to %s",
				   now_seconds() - start, name, src->name, lsn);
			next_say = now_seconds() + 5;
		}
		/* a short wait is the usual one: it is writes refused */
		usleep(now_seconds() - start < 0.5 ? 2000 : 20000);
	}
}

/* Whether the step's subscription is there and streaming (a takeover resumes it). */
bool
online_streaming(Server *tgt, int step, int ntables)
{
	char	   *name = online_name(step);
	const char *params[1] = {name};
	PGresult   *res = query(tgt, "SELECT FROM pg_catalog.pg_subscription WHERE subname = $1", 1, params);
	bool		there = res != NULL && PQntuples(res) == 1;

	PQclear(res);
	there = there && subscription_state(tgt, name, ntables) == 1;
	free(name);
	return there;
}

/*
 * Waits until the subscription streams and applies the source's changes
 * with a lag short enough to fence: the source's WAL position is reached
 * again within a tenth of a second.  The tally is read on the way, so
 * that little of it is left for the write block.  1, 0 (an error), or
 * ONLINE_CANNOT_APPLY.
 */
int
online_wait_caught_up(Server *src, Server *tgt, int step, int ntables, OnlineCopy *copy)
{
	char	   *name = online_name(step);
	int			ok = 0;
	double		begun = now_seconds();
	double		next_say = begun + 10;

	for (;;)
	{
		int			state = subscription_state(tgt, name, ntables);
		PGresult   *res;
		double		start;
		double		lag;

		if (state < 0)
		{
			ok = state == APPLY_FAILED ? ONLINE_CANNOT_APPLY : 0;
			break;
		}
		if (stop_requested)
			break;
		if (state == 0)
		{
			if (now_seconds() >= next_say)
			{
				report("info", "step %d: waiting %.0f s for the subscription \"%s\" on shard \"%s\" to start",
					   step, now_seconds() - begun, name, tgt->name);
				next_say = now_seconds() + 10;
			}
			usleep(20 * 1000);
			continue;
		}
		res = query(src, "SELECT pg_catalog.pg_current_wal_flush_lsn()", 0, NULL);
		if (res == NULL)
			break;
		start = now_seconds();
		ok = wait_slot(src, tgt, name, PQgetvalue(res, 0, 0), ntables);
		PQclear(res);
		lag = now_seconds() - start;
		/* read after the lag is taken: the tallies' reading is no lag of the target's */
		if (ok == 1 && copy != NULL)
			tally_read(copy);
		if (ok != 1 || lag < 0.1)
			break;
		ok = 0;
		if (now_seconds() >= next_say)
		{
			report("info", "step %d: the subscription \"%s\" on shard \"%s\" lags behind shard \"%s\"; the step is fenced once it keeps up",
				   step, name, tgt->name, src->name);
			next_say = now_seconds() + 10;
		}
	}
	free(name);
	return ok;
}

/*
 * After chash_shard_wait_fence on the source: no write of the step's rows
 * can commit there any more.  A logical message committed now lies after
 * every such write in the source's WAL; once the target confirms it, it
 * has applied them all.  1, 0 or ONLINE_CANNOT_APPLY.
 */
int
online_wait_applied(Server *src, Server *tgt, int step, int ntables)
{
	char	   *name = online_name(step);
	PGresult   *res = query(src, "SELECT pg_catalog.pg_logical_emit_message(true, 'chash_move', 'fenced')", 0, NULL);
	int			ok = 0;

	if (res != NULL)
	{
		ok = wait_slot(src, tgt, name, PQgetvalue(res, 0, 0), ntables);
		PQclear(res);
	}
	free(name);
	return ok;
}

/*
 * Drops the decoding filter named so there, if chash there has them and
 * the mover may: a role that may not drop a filter could not have made
 * one (a blocking move by a non-superuser never does).
 */
static bool
filter_drop(Server *server, const char *name)
{
	const char *params[1] = {name};
	char	   *sql = format_text("SELECT %1$s.chash_decoding_filter_drop($1) "
								  " WHERE pg_catalog.has_table_privilege(pg_catalog.to_regclass('%1$s.chash_decoding_filter'), 'DELETE')"
								  " AND pg_catalog.has_function_privilege(pg_catalog.to_regprocedure('%1$s.chash_decoding_filter_drop(text)'), 'EXECUTE')",
								  server->schema);
	PGresult   *res = query(server, sql, 1, params);

	free(sql);
	PQclear(res);
	return res != NULL;
}

/*
 * Drops the step's replication objects, by their names, wherever they
 * are: the subscription on the target (which drops its slots on the
 * source), then what is left on the source.  Before any row of the step
 * is deleted on the source, since the publication would send the
 * deletion on.  Where the target cannot reach the source, the
 * subscription is dropped without its slots and the mover drops them.
 */
bool
online_drop(Server *src, Server *tgt, int step)
{
	char	   *name = online_name(step);
	const char *params[2] = {name, NULL};
	PGresult   *res;
	char	   *suboid = NULL;
	char	   *sql;
	bool		ok = false;

	res = query(tgt, "SELECT oid FROM pg_catalog.pg_subscription WHERE subname = $1 AND subdbid = "
				"(SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database())",
				1, params);
	if (res == NULL)
		goto out;
	if (PQntuples(res) == 1)
	{
		suboid = format_text("%s", PQgetvalue(res, 0, 0));
		PQclear(res);
		sql = format_text("DROP SUBSCRIPTION %s", name);
		res = server_exec(tgt, sql);
		free(sql);
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
		{
			report_result("warning", format_text("could not drop subscription \"%s\" on shard \"%s\" with its slots", name, tgt->name),
						  res, tgt->conn);
			for (int i = 0; i < 3; i++)
			{
				static const char *const steps[3] = {"ALTER SUBSCRIPTION %s DISABLE",
				"ALTER SUBSCRIPTION %s SET (slot_name = NONE)", "DROP SUBSCRIPTION %s"};

				sql = format_text(steps[i], name);
				ok = command(tgt, sql);
				free(sql);
				if (!ok)
					goto out;
			}
			ok = false;
		}
	}
	PQclear(res);

	/* the target's tally filter (its slot was a session's) */
	if (!filter_drop(tgt, name))
		goto out;

	/* the slot (and a table copy's slots) once no walsender uses them */
	params[1] = suboid ? format_text("pg\\_%s\\_sync\\_%%", suboid) : format_text("%s", "-");
	for (int tries = 0;; tries++)
	{
		res = query(src, "SELECT slot_name, active_pid FROM pg_catalog.pg_replication_slots "
					"WHERE (slot_name = $1 OR slot_name LIKE $2) AND database = pg_catalog.current_database()",
					2, params);
		if (res == NULL)
			goto out;
		if (PQntuples(res) == 0)
			break;
		for (int i = 0; i < PQntuples(res); i++)
		{
			const char *p[1] = {PQgetvalue(res, i, PQgetisnull(res, i, 1) ? 0 : 1)};
			PGresult   *r;

			if (PQgetisnull(res, i, 1))
				r = query(src, "SELECT pg_catalog.pg_drop_replication_slot($1)", 1, p);
			else if (tries >= 50)
				r = query(src, "SELECT pg_catalog.pg_terminate_backend($1::int)", 1, p);
			else
				continue;
			if (r == NULL)
			{
				PQclear(res);
				goto out;
			}
			PQclear(r);
		}
		PQclear(res);
		usleep(100 * 1000);
	}
	PQclear(res);

	/*
	 * The decoding filter, then the publication: the publication is made
	 * first and dropped last, so a rerun finds a dead run's filter by it
	 * (and a mover that never made one, not a superuser, never reads the
	 * filters).
	 */
	res = query(src, "SELECT FROM pg_catalog.pg_publication WHERE pubname = $1", 1, params);
	if (res == NULL)
		goto out;
	ok = PQntuples(res) == 0;
	PQclear(res);
	if (ok)
		goto out;
	if (!filter_drop(src, name))
		goto out;
	sql = format_text("DROP PUBLICATION IF EXISTS %s", name);
	ok = command(src, sql);
	free(sql);
out:
	free((char *) params[1]);
	free(suboid);
	free(name);
	return ok;
}

/*
 * online_drop for each step of a batch that has replication objects left
 * (an online try of it that died): two lookups for the whole batch, so a
 * blocking batch of a thousand steps does not ask for each one.
 */
bool
online_drop_batch(Server *src, Server *tgt, const Batch *batch)
{
	char	   *names;
	char	   *p;
	const char *params[1];
	PGresult   *rt,
			   *rs;
	bool		ok = true;

	if (batch->nsteps == 1)
		return online_drop(src, tgt, batch->steps[0]);
	names = p = malloc((size_t) batch->nsteps * 64 + 3);
	p += sprintf(p, "{");
	for (int i = 0; i < batch->nsteps; i++)
	{
		char	   *name = online_name(batch->steps[i]);

		p += sprintf(p, "%s%s", i ? "," : "", name);
		free(name);
	}
	sprintf(p, "}");
	params[0] = names;
	rt = query(tgt, "SELECT subname FROM pg_catalog.pg_subscription WHERE subname = ANY ($1::pg_catalog.name[])",
			   1, params);
	rs = rt ? query(src, "SELECT slot_name FROM pg_catalog.pg_replication_slots WHERE slot_name = ANY ($1::pg_catalog.name[]) "
					"UNION SELECT pubname FROM pg_catalog.pg_publication WHERE pubname = ANY ($1::pg_catalog.name[])",
					1, params) : NULL;
	free(names);
	if (rt == NULL || rs == NULL)
	{
		PQclear(rt);
		return false;
	}
	for (int i = 0; ok && i < batch->nsteps; i++)
	{
		char	   *name = online_name(batch->steps[i]);
		bool		left = false;

		for (int j = 0; j < PQntuples(rt); j++)
			left = left || strcmp(PQgetvalue(rt, j, 0), name) == 0;
		for (int j = 0; j < PQntuples(rs); j++)
			left = left || strcmp(PQgetvalue(rs, j, 0), name) == 0;
		free(name);
		if (left)
			ok = online_drop(src, tgt, batch->steps[i]);
	}
	PQclear(rt);
	PQclear(rs);
	return ok;
}
