/*
 * One batch of steps (one shard pair, all slot or all tenant steps; the
 * single step is the batch of one), from where its leases' progress says
 * it got (SPEC 4.4, 4.6):
 *   0. before anything happens on the shards (step_check): the tables in
 *      foreign-key order, the same columns on both shards, the target's
 *      sequences; a shard that cannot take the batch stops the mover.
 *      Once per shard pair in a run (tables.c keeps them), confirmed in
 *      each copy's transactions by one statement per shard;
 *   1. fence it (one directory version, one barrier over its slots or
 *      tenants), then chash_shard_wait_fence over the batch on the source;
 *   2. on the target, in one transaction: delete the batch's rows left by
 *      an earlier try, COPY the batch's rows of every registered table from
 *      the source, one COPY per table (one REPEATABLE READ snapshot there;
 *      the predicate: slot = ANY (the batch's slots) minus pinned tenants,
 *      or tenant = ANY (its tenants)), and
 *   3. verify: per table, the count and order-independent checksum of
 *      the source's COPY stream (rowsum.c) equal COPY FROM's count and
 *      the target's rows read back the same way; commit only then, else
 *      roll back and release the batch (a takeover of a copied batch and
 *      an online step: sum of chash_xxh64 of each row's text, both sides);
 *   3b. advance the target's sequences past the moved values;
 *   4. complete it (one directory version); once the source has applied
 *      the completion, delete the moved rows there (children first), one
 *      DELETE per table: for a blocking batch in the job's finisher
 *      thread, while the job goes on with its next batch.
 * Writes to the batch's rows are refused from 1 to 4 only.  A takeover
 * redoes only what the progress says is missing: a fenced batch is copied
 * again (the target's transaction rolled back with the dead mover, or its
 * leftovers are deleted first), a copied one is verified again and
 * completed, a completed one only has its source rows deleted.
 * With --online (online.c) the rows are copied before the fence from the
 * snapshot of a logical slot whose subscription then streams their
 * changes (one slot, one subscription for the batch); after the fence the
 * mover waits until the target has applied the source's WAL, then
 * verifies the rows changed since the copy; the subscription is gone
 * before any source row is deleted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chash_move.h"

/* A completed batch whose rows are still to delete on its source, and what its line reports. */
typedef struct Finish
{
	Batch		batch;
	TableInfo  *tables;
	int			ntables;
	StepTarget	target;
	bool		online;
	long long	rows;
	long long	bytes;
	double		t_start,
				t_checked,
				t_fence,
				t_waited,
				t_copy0,
				t_copy,
				t_done,
				t_stream;
	char		identity[80];	/* the job's dir_identity when the batch completed */
} Finish;

/* ---- the shards this job talks to, one connection each ---- */
static __thread Server **shards;	/* pointers: callers keep them across lookups */
static __thread int nshards;

/* once per shard: no wait_fence there (the guard has not landed on it) */
static void
warn_no_wait_fence(Server *server)
{
	char	   *key = format_text("wait_fence\n%s", server->name);

	if (first_time(key))
	{
		report("warning", "shard \"%s\" has no chash_shard_wait_fence(): writes it admitted before a fence are not waited for",
			   server->name);
		report("hint", "Update chash there with ALTER EXTENSION chash UPDATE.");
	}
	free(key);
}

static Server *
shard(Server *dir, const char *name)
{
	Server	   *server = NULL;
	const char *params[2] = {migration.directory, name};
	PGresult   *res;

	for (int i = 0; i < nshards; i++)
		if (strcmp(shards[i]->name, name) == 0)
			server = shards[i];
	if (server == NULL)
	{
		res = query(dir, format_text("SELECT server FROM %s.chash_shard WHERE directory = $1 AND shard = $2",
									 dir->schema), 2, params);
		if (res == NULL)
			return NULL;
		if (PQntuples(res) != 1 || PQgetisnull(res, 0, 0))
		{
			PQclear(res);
			report("error", "shard \"%s\" of directory \"%s\" has no server", name, migration.directory);
			report("hint", "Set its connection string with chash_set_shard('%s', '%s', server => '...').",
				   migration.directory, name);
			config_error = true;
			return NULL;
		}
		shards = realloc(shards, (nshards + 1) * sizeof(Server *));
		server = calloc(1, sizeof(Server));
		shards[nshards++] = server;
		server->name = format_text("%s", name);
		server->conninfo = conninfo_of_server(PQgetvalue(res, 0, 0));
		PQclear(res);
	}
	if (server->conn != NULL && PQstatus(server->conn) == CONNECTION_OK)
		return server;
	if (!server_open(server))
		return NULL;
	/* the shard must read the directory from a replica (or be the directory database) */
	params[1] = NULL;
	res = query(server, format_text("SELECT FROM %s.chash_shard_member WHERE directory = $1", server->schema),
				1, params);
	if (res == NULL)
		return NULL;
	if (PQntuples(res) != 1)
	{
		PQclear(res);
		report("error", "shard \"%s\" has not joined directory \"%s\"", name, migration.directory);
		report("hint", "Run chash_shard_join() on it first.");
		server_close(server);
		config_error = true;
		return NULL;
	}
	PQclear(res);
	if (!server->has_wait_fence)
		warn_no_wait_fence(server);
	return server;
}

/* shard() for the cleaner of replication objects (replication_cleaner.c) */
Server *
step_shard(Server *dir, const char *name)
{
	return shard(dir, name);
}

/* Closes this thread's shard connections (shard() opens them again). */
void
step_shards_close(void)
{
	for (int i = 0; i < nshards; i++)
		server_close(shards[i]);
}

/* ---- small helpers ---- */

static void
rollback(Server *server)
{
	if (server->conn != NULL && PQtransactionStatus(server->conn) != PQTRANS_IDLE)
	{
		PGresult   *res;

		if (PQtransactionStatus(server->conn) == PQTRANS_ACTIVE)
		{
			PGcancel   *cancel = PQgetCancel(server->conn);
			char		buf[256];

			if (cancel)
			{
				PQcancel(cancel, buf, sizeof(buf));
				PQfreeCancel(cancel);
			}
			while ((res = PQgetResult(server->conn)) != NULL)
				PQclear(res);
		}
		res = PQexec(server->conn, "ROLLBACK");
		PQclear(res);
	}
}

/*
 * The directory database's identity when this job's batch began (lease.c,
 * shard_agrees): a delete is made only while it is still the same server.
 */
static __thread char dir_identity[80];

/* Both shards of the batch agree with the directory database, read now (before every delete). */
static bool
shards_agree(Server *dir, Server *src, Server *tgt, const Batch *batch)
{
	return shard_agrees(dir, src, batch, dir_identity, sizeof(dir_identity))
		&& shard_agrees(dir, tgt, batch, dir_identity, sizeof(dir_identity));
}

/*
 * While a wait for a shard's replica goes on: after 2 s, then every 5 s
 * or so, says what it waits for (the replica's version, the directory's,
 * why the shard cannot follow if it says), and ends the wait, said, once
 * it has lasted --fence-timeout or the shard cannot vouch for its replica
 * for good (config_error: the mover stops).  True: wait on.
 */
static bool
wait_watch(Server *dir, Server *server, const Batch *batch, const char *what, double start, double *next_say)
{
	double		waited = now_seconds() - start;
	bool		expired = waited >= options.fence_timeout;
	long long	version = -1;
	char	   *refusal = NULL;
	bool		lasting = false;
	char	   *which;
	char	   *where;
	PGresult   *res;
	const char *params[1] = {migration.directory};

	if (!expired && now_seconds() < *next_say)
		return true;
	*next_say = now_seconds() + 5;
	if (!replica_position(server, &version, &refusal, &lasting))
		return false;
	res = query(dir, format_text("SELECT version FROM %s.chash_directory WHERE name = $1", dir->schema), 1, params);
	which = batch_describe(batch);
	where = format_text("replica of directory \"%s\" is at version %lld, the directory database at version %s",
						migration.directory, version,
						res != NULL && PQntuples(res) == 1 ? PQgetvalue(res, 0, 0) : "unknown");
	PQclear(res);
	if (lasting)
	{
		report("error", "shard \"%s\" cannot vouch for its replica of directory \"%s\"", server->name, migration.directory);
		report("detail", "%s The mover waited for it to apply the %s of %s.", refusal, what, which);
		report("hint", "See chash_shard_status there, and docs/shards.md, \"Failover\".");
		config_error = true;
		expired = true;
	}
	else if (expired)
	{
		report("error", "shard \"%s\" did not apply the %s of %s of migration %lld within %d s (--fence-timeout)",
			   server->name, what, which, migration.id, options.fence_timeout);
		report("detail", "Its %s.%s%s", where, refusal ? " " : "", refusal ? refusal : "");
		report("hint", "A shard cut off from the directory database catches up once it can reach it again; "
			   "a shard that follows a replaced directory server needs chash_shard_repoint() (docs/shards.md, \"Failover\").");
	}
	else
		report("info", "waiting %.0f s for shard \"%s\" to apply the %s of %s: its %s%s%s",
			   waited, server->name, what, which, where, refusal ? "; " : "", refusal ? refusal : "");
	free(which);
	free(where);
	free(refusal);
	return !expired;
}

/*
 * Waits until the server's replica shows every step of the batch in one
 * of the states, for --fence-timeout at most (wait_watch).
 */
static bool
wait_replica(Server *dir, Server *server, const Batch *batch, const char *states, const char *what)
{
	char	   *id = format_text("%lld", migration.id);
	const char *params[3] = {id, batch->step_list, states};
	char	   *sql = format_text("SELECT pg_catalog.count(*) = pg_catalog.cardinality($2::pg_catalog.int4[]) "
								  "       AND pg_catalog.bool_and(s.state = ANY ($3::pg_catalog.text[])) "
								  "  FROM %s.chash_migration_step s "
								  " WHERE s.migration = $1 AND s.step = ANY ($2::pg_catalog.int4[])", server->schema);
	double		start = now_seconds();
	double		next_say = start + 2;
	bool		ok = false;
	useconds_t	pause = 2000;

	for (;;)
	{
		PGresult   *res = query(server, sql, 3, params);

		if (res == NULL)
			break;
		ok = PQntuples(res) == 1 && PQgetvalue(res, 0, 0)[0] == 't';
		PQclear(res);
		if (ok || stop_requested || !wait_watch(dir, server, batch, what, start, &next_say))
			break;
		/* from 2 ms up to 25 ms: a poll is a query, CPU the replica's apply needs */
		usleep(pause);
		pause = pause * 2 > 25000 ? 25000 : pause * 2;
	}
	free(id);
	free(sql);
	return ok;
}

/*
 * chash_shard_wait_fence on the source, for --fence-timeout at most: run
 * in slices of 2 s (statement_timeout), so that between them the mover
 * says what it waits for and ends the wait at the bound; Ctrl-C and
 * SIGTERM cancel a slice at once (server_wait).
 */
static bool
wait_fence(Server *dir, Server *src, const Batch *batch)
{
	char	   *id = format_text("%lld", migration.id);
	const char *params[3] = {migration.directory, id, batch->step_list};
	char	   *sql = format_text("SELECT %s.chash_shard_wait_fence($1, $2::bigint, $3::int[])", src->schema);
	double		start = now_seconds();
	double		next_say = start + 2;
	bool		ok = false;

	if (!command(src, "SET statement_timeout = 2000"))
		goto out;
	while (!stop_requested)
	{
		bool		cancelled = false;
		PGresult   *res = PQsendQueryParams(src->conn, sql, 3, NULL, params, NULL, NULL, 0)
			? server_wait(src, sql, &cancelled) : NULL;
		const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
		bool		sliced = !cancelled && state != NULL && strcmp(state, "57014") == 0;

		ok = res != NULL && PQresultStatus(res) == PGRES_TUPLES_OK;
		if (!ok && !cancelled && !sliced)
			report_result("error", format_text("query failed on shard \"%s\"", src->name), res, src->conn);
		PQclear(res);
		if (ok || !sliced || !wait_watch(dir, src, batch, "fence", start, &next_say))
			break;
	}
	/* the session goes on without the slices' bound (a failed reset: its connection is gone) */
	if (!command(src, "SET statement_timeout = 0"))
		ok = false;
out:
	free(id);
	free(sql);
	return ok;
}

/* ---- verification ---- */

/*
 * The batch's rows of a table on the target, read back in COPY's binary
 * format and summed as the source's stream was (rowsum.c).
 */
static bool
target_sum(Server *tgt, const TableInfo *table, const StepTarget *target, RowSum *sum)
{
	char	   *pred = step_predicate(tgt, table, target);
	char	   *sql = format_text("COPY (SELECT %s FROM %s WHERE %s) TO STDOUT (FORMAT binary)",
								  table->columns, table->table_name, pred);
	PGresult   *res = server_exec(tgt, sql);
	bool		ok = false;
	char	   *buf;
	int			n;

	if (PQresultStatus(res) != PGRES_COPY_OUT)
		report_result("error", format_text("could not read the copied rows on shard \"%s\"", tgt->name), res, tgt->conn);
	else
	{
		PQclear(res);
		while ((n = PQgetCopyData(tgt->conn, &buf, 0)) > 0)
		{
			rowsum_feed(sum, buf, n);
			PQfreemem(buf);
		}
		res = last_result(tgt, sql);
		ok = res != NULL && n == -1 && rowsum_whole(sum);
	}
	PQclear(res);
	free(pred);
	free(sql);
	return ok;
}

/*
 * A blocking copy's verification, inside the target's transaction: per
 * table, the rows COPY FROM took and the target's rows of the batch read
 * back, against the source's stream: the same count and checksum
 * (docs/shards.md, "Verification" says why this misses no lost, extra or
 * changed row).
 */
static Verdict
verify_copy(Server *src, Server *tgt, TableInfo *tables, int ntables, const StepTarget *target,
			const Batch *batch, RowSum *sums, const long long *taken)
{
	for (int i = 0; i < ntables; i++)
	{
		RowSum		back;
		bool		same;

		rowsum_init(&back);
		if (!target_sum(tgt, &tables[i], target, &back))
		{
			rowsum_free(&back);
			return VERDICT_ERROR;
		}
		same = back.rows == sums[i].rows && back.sum == sums[i].sum && taken[i] == sums[i].rows;
		if (!same)
		{
			char	   *which = batch_describe(batch);

			report("error", "verification failed for %s of migration %lld: table \"%s\" differs between shard \"%s\" and shard \"%s\"",
				   which, migration.id, tables[i].table_name, src->name, tgt->name);
			report("detail", "The source sent %lld rows (checksum %llu), the target took %lld and has %lld rows (checksum %llu). "
				   "The %s released: %s rows stay on shard \"%s\", which still owns them.",
				   sums[i].rows, (unsigned long long) sums[i].sum, taken[i], back.rows,
				   (unsigned long long) back.sum,
				   batch->nsteps == 1 ? "step was" : "steps were", batch->nsteps == 1 ? "its" : "their", src->name);
			free(which);
			report("hint", "Something changed the moving rows on shard \"%s\" behind the mover's back (a trigger, or a session that bypasses the guard).",
				   tgt->name);
		}
		rowsum_free(&back);
		if (!same)
			return VERDICT_DIFFERENT;
	}
	return VERDICT_SAME;
}

/* ---- copying ---- */

/* The column names of a table, the same on both shards, or NULL; the typed list kept in *typed. */
static char *
common_columns(Server *src, Server *tgt, const TableInfo *table, char **typed)
{
	char	   *a = table_columns(src, table);
	char	   *b = a ? table_columns(tgt, table) : NULL;
	char	   *names;
	char	   *out;

	if (a == NULL || b == NULL)
		return NULL;
	if (strcmp(a, b) != 0)
	{
		report("error", "table \"%s\" has different columns on shard \"%s\" and shard \"%s\"",
			   table->table_name, src->name, tgt->name);
		report("detail", "Shard \"%s\" has (%s), shard \"%s\" has (%s). No step was fenced.", src->name, a, tgt->name, b);
		report("hint", "Give the table the same columns, in the same order and of the same types, on every shard (ALTER TABLE), then run chash_move again.");
		config_error = true;
		free(a);
		free(b);
		return NULL;
	}
	/* "a int, b text" -> "a, b": each entry is an identifier then its type */
	names = calloc(strlen(a) + 1, 1);
	out = names;
	for (const char *p = a; *p;)
	{
		bool		quoted = (*p == '"');
		const char *q = p + (quoted ? 1 : 0);

		while (*q && (quoted ? !(*q == '"' && q[1] != '"') : *q != ' '))
			q += (quoted && *q == '"') ? 2 : 1;
		if (quoted)
			q++;
		if (out != names)
			out += sprintf(out, ", ");
		memcpy(out, p, q - p);
		out += q - p;
		*out = '\0';
		/* skip the type, up to the next ", " outside parentheses */
		for (int depth = 0; *q && !(depth == 0 && q[0] == ',' && q[1] == ' '); q++)
			depth += (*q == '(') - (*q == ')');
		p = *q ? q + 2 : q;
	}
	*typed = a;
	free(b);
	return names;
}

/*
 * Before anything of the step happens on its shards (the first fence
 * above all): the tables in foreign-key order, every table with the same
 * columns on both shards (the list COPY moves), and the target's owned
 * sequences the mover will advance.  A problem is said once, with what to
 * fix, and sets config_error: the job stops instead of fencing and
 * releasing the step again and again.
 */
static bool
step_check(Server *src, Server *tgt, TableInfo *tables, int ntables)
{
	if (pair_checked(src->name, tgt->name, tables, ntables))
		return true;
	if (!order_tables(src, tables, ntables))
		return false;
	for (int i = 0; i < ntables; i++)
		if ((tables[i].columns = common_columns(src, tgt, &tables[i], &tables[i].typed_columns)) == NULL
			|| !owned_sequences(tgt, &tables[i]))
			return false;
	pair_remember(src->name, tgt->name, tables, ntables);
	return true;
}

/*
 * Inside the copy's transactions: both shards still have the columns the
 * pair's checks saw (else the batch is given back and the pair checked
 * again: a column's type can change without changing COPY's bytes).
 */
static bool
columns_unchanged(Server *src, Server *tgt, const TableInfo *tables, int ntables)
{
	char	   *want = columns_signature(tables, ntables);
	char	   *a = server_columns_signature(src, tables, ntables);
	char	   *b = a ? server_columns_signature(tgt, tables, ntables) : NULL;
	bool		same = a != NULL && b != NULL && strcmp(a, want) == 0 && strcmp(b, want) == 0;

	if (a != NULL && b != NULL && !same && options.verbose)
		report("info", "the registered tables' columns changed on shard \"%s\" or shard \"%s\" since they were checked; checking again",
			   src->name, tgt->name);
	free(want);
	free(a);
	free(b);
	return same;
}

/*
 * DELETE of a step's rows there, never of a row whose tenant routes to that
 * shard by its replica: a last guard against deleting rows it owns.
 */
static char *
delete_sql(Server *server, const TableInfo *table, const StepTarget *target)
{
	char	   *pred = step_predicate(server, table, target);
	char	   *column = escape_identifier(server->conn, table->tenant_column);
	char	   *directory = escape_literal(server->conn, migration.directory);
	char	   *self = escape_literal(server->conn, server->name);
	char	   *sql = format_text("DELETE FROM %s WHERE %s AND %s.chash_route(%s, (%s)::text) IS DISTINCT FROM %s",
								  table->table_name, pred, server->schema, directory, column, self);

	free(pred);
	free(column);
	free(directory);
	free(self);
	return sql;
}

/*
 * Deletes the step's rows of every table in one transaction there,
 * children before their parents (the tables are in foreign-key order).
 */
static long long
delete_rows(Server *server, TableInfo *tables, int ntables, const StepTarget *target)
{
	long long	deleted = 0;

	if (!command(server, "BEGIN"))
		return -1;
	for (int i = ntables - 1; i >= 0; i--)
	{
		PGresult   *res = query(server, delete_sql(server, &tables[i], target), 0, NULL);

		if (res == NULL)
		{
			rollback(server);
			return -1;
		}
		deleted += atoll(PQcmdTuples(res));
		PQclear(res);
	}
	if (!command(server, "COMMIT"))
		return -1;
	return deleted;
}

/*
 * Opens a transaction on the directory database holding the batch's lease
 * rows locked, if this process still holds them all and every step is in
 * one of the states.  A shard's commit made while it is held cannot race a
 * takeover or a completion by another mover (both need that row).
 */
static bool
lease_lock(Server *dir, const Batch *batch, const char *states)
{
	char	   *id = format_text("%lld", migration.id);
	const char *params[4] = {id, batch->step_list, migration.holder, states};
	PGresult   *res;
	bool		ok;

	if (!server_open(dir) || !command(dir, "BEGIN"))
		return false;
	res = query(dir, format_text("SELECT %1$s.chash_steps_lease_check($1, $2::int[], $3) IS NOT NULL "
								 "   AND (SELECT pg_catalog.count(*) = pg_catalog.cardinality($2::int[]) "
								 "               AND pg_catalog.bool_and(s.state = ANY ($4::text[])) "
								 "          FROM %1$s.chash_migration_step s "
								 "         WHERE s.migration = $1 AND s.step = ANY ($2::int[]))",
								 dir->schema), 4, params);
	ok = res != NULL && PQntuples(res) == 1 && PQgetvalue(res, 0, 0)[0] == 't';
	PQclear(res);
	free(id);
	if (!ok)
		rollback(dir);
	return ok;
}

static bool
lease_unlock(Server *dir, bool commit)
{
	if (commit)
		return command(dir, "COMMIT");
	rollback(dir);
	return false;
}

/*
 * Steps 2 and 3.  VERDICT_SAME: the rows are on the target, committed, and
 * the progress recorded.
 */
static Verdict
copy_step(Server *dir, Server *src, Server *tgt, TableInfo *tables, int ntables, const StepTarget *target,
		  const Batch *batch, long long *rows, long long *bytes)
{
	Verdict		v = VERDICT_ERROR;
	RowSum	   *sums = calloc(ntables > 0 ? ntables : 1, sizeof(RowSum));	/* of the source's streams */
	long long  *taken = calloc(ntables > 0 ? ntables : 1, sizeof(long long));	/* COPY FROM's counts */

	*rows = 0;
	*bytes = 0;
	for (int i = 0; i < ntables && target->slot >= 0; i++)
	{
		check_slot_index(src, &tables[i]);
		check_slot_index(tgt, &tables[i]);
	}
	if (!command(tgt, "BEGIN") || !command(src, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"))
		goto out;
	/* leftovers of an earlier try off the target, children first; then the copy, parents first */
	for (int i = ntables - 1; i >= 0; i--)
	{
		PGresult   *res = query(tgt, delete_sql(tgt, &tables[i], target), 0, NULL);

		if (res == NULL)
			goto out;
		if (atoll(PQcmdTuples(res)) > 0 && options.verbose)
		{
			char	   *which = batch_describe(batch);

			report("info", "%s: deleted %s rows of \"%s\" left on shard \"%s\" by an earlier try",
				   which, PQcmdTuples(res), tables[i].table_name, tgt->name);
			free(which);
		}
		PQclear(res);
	}
	if (!columns_unchanged(src, tgt, tables, ntables))
		goto out;
	for (int i = 0; i < ntables; i++)
	{
		long long	n;

		rowsum_init(&sums[i]);
		n = copy_table(src, tgt, &tables[i], tables[i].columns, target, bytes, &sums[i]);
		if (n < 0)
			goto out;
		taken[i] = n;
		*rows += n;
		counters_add(n, 0);
	}
	v = verify_copy(src, tgt, tables, ntables, target, batch, sums, taken);
	if (v == VERDICT_SAME)
	{
		/* commit the copy only while the steps are still ours */
		if (!lease_lock(dir, batch, "{fenced}"))
			v = VERDICT_ERROR;
		else if (!command(tgt, "COMMIT"))
		{
			lease_unlock(dir, false);
			v = VERDICT_ERROR;
		}
		else if (!lease_record(dir, batch, "copied", *rows, *bytes) || !lease_unlock(dir, true))
		{
			rollback(dir);
			v = VERDICT_ERROR;	/* a takeover copies again */
		}
	}
out:
	rollback(tgt);
	rollback(src);
	for (int i = 0; i < ntables; i++)
		rowsum_free(&sums[i]);
	free(sums);
	free(taken);
	return v;
}

/* A takeover of a copied step, or an online copy: the target's rows are checked (once more). */
static Verdict
verify_again(Server *src, Server *tgt, TableInfo *tables, int ntables, const StepTarget *target,
			 const Batch *batch, long long *rows)
{
	Verdict		v = VERDICT_ERROR;

	if (command(tgt, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
		&& command(src, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"))
		v = verify(src, tgt, tables, ntables, target, batch, rows);
	rollback(tgt);
	rollback(src);
	return v;
}

/*
 * The moved rows keep their serial and identity values; the target's
 * sequences that hand such values out are moved past them, so an insert
 * there after the move never repeats one: setval to the largest moved
 * value (the smallest, for a descending sequence) only where the sequence
 * has not passed it yet.  Never moved back.  The step is fenced and its
 * rows verified on the target.
 */
static bool
advance_sequences(Server *tgt, TableInfo *tables, int ntables, const StepTarget *target)
{
	for (int i = 0; i < ntables; i++)
		for (int j = 0; j < tables[i].nsequences; j++)
		{
			const OwnedSequence *q = &tables[i].sequences[j];
			char	   *pred = step_predicate(tgt, &tables[i], target);
			char	   *seq = escape_literal(tgt->conn, q->sequence);
			char	   *sql = format_text("SELECT pg_catalog.setval(%1$s, x.v) "
										  "  FROM (SELECT pg_catalog.%2$s(%3$s)::pg_catalog.int8 AS v FROM %4$s WHERE %5$s) x, "
										  "       pg_catalog.pg_sequence s "
										  " WHERE s.seqrelid = %1$s::pg_catalog.regclass AND x.v IS NOT NULL "
										  "   AND x.v BETWEEN s.seqmin AND s.seqmax "
										  "   AND x.v %6$s pg_catalog.nextval(%1$s)",
										  seq, q->ascending ? "max" : "min", q->column, tables[i].table_name, pred,
										  q->ascending ? ">=" : "<=");
			PGresult   *res = query(tgt, sql, 0, NULL);

			free(pred);
			free(seq);
			free(sql);
			if (res == NULL)
				return false;
			if (PQntuples(res) > 0 && options.verbose)
				report("info", "sequence \"%s\" on shard \"%s\" advanced to %s, past the values moved",
					   q->sequence, tgt->name, PQgetvalue(res, 0, 0));
			PQclear(res);
		}
	return true;
}

/*
 * Testing aids: CHASH_MOVE_CRASH_AT=subscribed|fenced|copied|completed kills
 * the process there, once; CHASH_MOVE_PAUSE_AT=<point>:<seconds> waits
 * there that long (or until SIGTERM), so that a test acts at that point.
 */
static void
crash_point(const char *point)
{
	static pthread_mutex_t crash_lock = PTHREAD_MUTEX_INITIALIZER;
	const char *at = getenv("CHASH_MOVE_CRASH_AT");
	const char *pause = getenv("CHASH_MOVE_PAUSE_AT");
	size_t		len = strlen(point);

	if (pause != NULL && strncmp(pause, point, len) == 0 && pause[len] == ':')
	{
		double		until = now_seconds() + atof(pause + len + 1);

		report("info", "paused at \"%s\" (CHASH_MOVE_PAUSE_AT)", point);
		while (now_seconds() < until && !stop_requested)
			usleep(20 * 1000);
	}
	if (at == NULL || strcmp(at, point) != 0)
		return;
	pthread_mutex_lock(&crash_lock);
	raise(SIGKILL);
}

/* Gives a batch in flight back: its subscription dropped, its copy off the target, then released. */
static void
give_back(Server *dir, Server *src, Server *tgt, TableInfo *tables, int ntables, const StepTarget *target,
		  const Batch *batch)
{
	if (!lease_lock(dir, batch, "{copying,fenced}"))
		return;					/* not ours any more, or done */
	/* never the target's rows while a shard says the target may own them */
	if (tgt == NULL || !server_open(tgt) || !shard_agrees(dir, tgt, batch, dir_identity, sizeof(dir_identity))
		|| (src != NULL && server_open(src) && !shard_agrees(dir, src, batch, dir_identity, sizeof(dir_identity))))
	{
		rollback(dir);
		return;
	}
	if (tgt != NULL && tgt->conn != NULL && server_open(tgt)
		&& (src == NULL || !server_open(src) || online_drop_batch(src, tgt, batch)))
		delete_rows(tgt, tables, ntables, target);
	if (!lease_call(dir, "release", batch, NULL) || !lease_unlock(dir, true))
		rollback(dir);
}

/*
 * A completed batch's source side: once the source's replica routes its
 * rows to the target, they are deleted there (one DELETE per table) and
 * the leases finished; then the batch's line.  False: left to the leases
 * (a takeover deletes them).
 */
static bool
finish_source(Server *dir, Server *src, Server *tgt, Finish *f)
{
	Batch	   *b = &f->batch;
	StepTarget *target = &f->target;
	bool		one = b->nsteps == 1;
	double		t_applied,
				t_delete;

	/* the directory server the batch's shards agreed with, in this thread too */
	memcpy(dir_identity, f->identity, sizeof(dir_identity));
	if (!wait_replica(dir, src, b, "{done}", "completion"))
		return false;
	t_applied = now_seconds();
	if (!lease_lock(dir, b, "{done}"))
		return false;
	if (!shards_agree(dir, src, tgt, b))
	{
		rollback(dir);
		return false;
	}
	t_delete = now_seconds();
	if (delete_rows(src, f->tables, f->ntables, target) < 0 || !lease_call(dir, "finish", b, NULL)
		|| !lease_unlock(dir, true))
	{
		rollback(dir);
		return false;
	}
	pthread_mutex_lock(&counters_lock);
	counters.steps += b->nsteps;
	pthread_mutex_unlock(&counters_lock);
	if (options.verbose)
	{
		char	   *which = batch_describe(b);
		char	   *what = !one ? format_text("%d %s", b->nsteps, target->slot >= 0 ? "slots" : "tenants")
			: target->slot >= 0 ? format_text("slot %d", target->slot)
			: format_text("tenant %s", escape_literal(src->conn, target->tenant));

		if (f->t_fence > 0 && f->online)
		{
			char	   *name = online_name(b->steps[0]);

			report("info", "%s: %s %s -> %s online (replication slot \"%s\"), %lld rows; copy and catch-up %.3f s, last catch-up and verification %.3f s, writes blocked %.3f s",
				   which, what, b->from_shard, b->to_shard, name,
				   f->rows, f->t_stream, f->t_copy - f->t_copy0, f->t_done - f->t_fence);
			free(name);
		}
		else if (f->t_fence > 0 && one)
			report("info", "%s: %s %s -> %s, %lld rows, %.1f kB; copy %.3f s, writes blocked %.3f s",
				   which, what, b->from_shard, b->to_shard,
				   f->rows, f->bytes / 1024.0, f->t_copy - f->t_copy0, f->t_done - f->t_fence);
		else if (f->t_fence > 0)
			report("info", "%s: %s %s -> %s, %lld rows, %.1f kB; copy %.3f s, writes blocked %.3f s; "
				   "checks %.3f s, fence %.3f s, shards at the fence %.3f s, complete %.3f s, "
				   "source at the completion %.3f s, delete on the source %.3f s, the batch %.3f s",
				   which, what, b->from_shard, b->to_shard,
				   f->rows, f->bytes / 1024.0, f->t_copy - f->t_copy0, f->t_done - f->t_fence,
				   f->t_checked - f->t_start, f->t_fence - f->t_checked, f->t_waited - f->t_fence,
				   f->t_done - f->t_copy, t_applied - f->t_done, now_seconds() - t_delete,
				   now_seconds() - f->t_start);
		else
			report("info", "%s: %s: deleted the moved rows on shard \"%s\"", which, what, b->from_shard);
		free(what);
		free(which);
	}
	return true;
}

/* ---- the finisher: a job's completed batches' source side, beside its next batch ---- */
struct Finisher
{
	pthread_t	thread;
	pthread_mutex_t lock;
	pthread_cond_t changed;
	Finish	   *pending;		/* being finished; NULL: idle */
	bool		quit;
};

static void *
finisher_main(void *arg)
{
	Finisher   *fi = arg;
	Server		dir = {.name = "directory", .conninfo = (char *) options.conninfo};

	for (;;)
	{
		Finish	   *f;

		pthread_mutex_lock(&fi->lock);
		while (fi->pending == NULL && !fi->quit)
			pthread_cond_wait(&fi->changed, &fi->lock);
		f = fi->pending;
		pthread_mutex_unlock(&fi->lock);
		if (f == NULL)
			break;
		report_steps = f->batch.step_list;
		/* as a job retries a batch: a second a try, 30 tries */
		for (int attempt = 1;; attempt++)
		{
			Server	   *src = server_open(&dir) ? shard(&dir, f->batch.from_shard) : NULL;
			Server	   *tgt = src != NULL ? shard(&dir, f->batch.to_shard) : NULL;

			if (tgt != NULL && finish_source(&dir, src, tgt, f))
				break;
			if (stop_requested || failed || config_error)
				break;			/* left to the leases */
			if (attempt >= 30)
			{
				report("error", "giving up after %d failed attempts in a row", attempt);
				failed = true;
				break;
			}
			sleep(1);
		}
		report_steps = NULL;
		lease_unhold(&f->batch);
		batch_free(&f->batch);
		free_tables(f->tables, f->ntables);
		free(f);
		pthread_mutex_lock(&fi->lock);
		fi->pending = NULL;
		pthread_cond_broadcast(&fi->changed);
		pthread_mutex_unlock(&fi->lock);
	}
	step_shards_close();
	server_close(&dir);
	return NULL;
}

Finisher *
finisher_start(void)
{
	Finisher   *fi = calloc(1, sizeof(Finisher));

	pthread_mutex_init(&fi->lock, NULL);
	pthread_cond_init(&fi->changed, NULL);
	pthread_create(&fi->thread, NULL, finisher_main, fi);
	return fi;
}

/* Hands a completed batch over (taking its batch and tables), once the one before is finished. */
static void
finisher_give(Finisher *fi, const Finish *f)
{
	Finish	   *copy = malloc(sizeof(Finish));

	*copy = *f;
	pthread_mutex_lock(&fi->lock);
	while (fi->pending != NULL)
		pthread_cond_wait(&fi->changed, &fi->lock);
	fi->pending = copy;
	pthread_cond_broadcast(&fi->changed);
	pthread_mutex_unlock(&fi->lock);
}

/* Waits until the batch handed over is finished (or left to its leases). */
void
finisher_wait(Finisher *fi)
{
	pthread_mutex_lock(&fi->lock);
	while (fi->pending != NULL)
		pthread_cond_wait(&fi->changed, &fi->lock);
	pthread_mutex_unlock(&fi->lock);
}

void
finisher_stop(Finisher *fi)
{
	finisher_wait(fi);
	pthread_mutex_lock(&fi->lock);
	fi->quit = true;
	pthread_cond_broadcast(&fi->changed);
	pthread_mutex_unlock(&fi->lock);
	pthread_join(fi->thread, NULL);
	free(fi);
}

StepOutcome
move_batch(Server *dir, Batch *b, long long *moved, Finisher *finisher)
{
	Finish		f = {0};
	StepTarget	target = {b->slots[0], b->tenants[0], b->nsteps, b->slot_list, b->tenant_list};
	TableInfo  *tables = NULL;
	int			ntables;
	Server	   *src,
			   *tgt;
	const char *progress = b->progress;
	long long	rows = 0,
				bytes = 0;
	bool		one = b->nsteps == 1;
	int			step = b->steps[0]; /* an online batch's objects are named for its first step */
	bool		online = false; /* a subscription streams the step's rows */
	OnlineCopy	copied = {0};	/* what the online copy left for the tail verification */
	double		t_stream = 0,	/* the subscription's copy and catch-up */
				t_fence = 0,	/* writes refused from here */
				t_copy0 = 0,
				t_copy = 0,
				t_done = 0,		/* to here */
				t_start = now_seconds(),
				t_checked = 0,	/* the checks before the fence done */
				t_waited = 0;	/* the shards at the fence */
	StepOutcome outcome = STEP_RETRY;

	*moved = 0;
	ntables = registered_tables(dir, &tables);
	src = ntables >= 0 ? shard(dir, b->from_shard) : NULL;
	tgt = src != NULL ? shard(dir, b->to_shard) : NULL;
	if (src == NULL || tgt == NULL)
	{
		if (strcmp(b->state, "copying") == 0 && strcmp(progress, "claimed") == 0)
			lease_call(dir, "release", b, NULL);
		goto retry;
	}

	/* the shards agree with the directory about the steps, and it stays the same server */
	dir_identity[0] = '\0';
	if (!shards_agree(dir, src, tgt, b))
		goto refuse;

	/* 0. before anything happens on the shards: what the steps need of them */
	if (strcmp(b->state, "cancelled") == 0 || strcmp(b->state, "done") == 0
		? !order_tables(src, tables, ntables) : !step_check(src, tgt, tables, ntables))
		goto refuse;

	/*
	 * The subscription of an earlier try of a fenced step is resumed when it
	 * streams; any other is dropped first, before its publication could send
	 * a deletion of the step's rows on the source to the target.
	 */
	if (strcmp(b->state, "fenced") == 0 && options.online && online_streaming(tgt, step, ntables))
		online = true;
	else if (!online_drop_batch(src, tgt, b))
		goto retry;

	t_checked = now_seconds();
	if (strcmp(b->state, "cancelled") == 0)
	{
		/* cancelled while a mover held them: take their copy off the target */
		if (!lease_lock(dir, b, "{cancelled}"))
			goto retry;
		if (!shards_agree(dir, src, tgt, b))
		{
			rollback(dir);
			goto retry;
		}
		if (delete_rows(tgt, tables, ntables, &target) < 0 || !lease_call(dir, "finish", b, NULL)
			|| !lease_unlock(dir, true))
		{
			rollback(dir);
			goto retry;
		}
		outcome = STEP_MOVED;
		goto out;
	}
	if (strcmp(b->state, "done") == 0 && strcmp(progress, "copied") != 0 && strcmp(progress, "completed") != 0)
	{
		char	   *which = batch_describe(b);

		report("warning", "%s of migration %lld %s completed by something other than chash_move before %s rows were copied",
			   which, migration.id, one ? "was" : "were", one ? "its" : "their");
		report("detail", "Their rows were left on shard \"%s\".", b->from_shard);
		free(which);
		lease_call(dir, "finish", b, NULL);
		outcome = STEP_MOVED;
		goto out;
	}

	if (strcmp(b->state, "done") != 0)
	{
		/* online: copied from the slot's snapshot, then streamed, while writes go on */
		if (strcmp(b->state, "copying") == 0 && options.online
			&& online_usable(src, tgt, tables, ntables, &target))
		{
			double		t0 = now_seconds();
			Verdict		v;
			int			caught_up;

			if (delete_rows(tgt, tables, ntables, &target) < 0)
				goto give_back;
			v = online_subscribe(dir, src, tgt, tables, ntables, &target, b, &copied);
			if (v == VERDICT_DIFFERENT)
				goto failed;
			if (v != VERDICT_SAME || !lease_record(dir, b, "subscribed", -1, -1))
				goto give_back;
			progress = "subscribed";
			crash_point("subscribed");
			online_test_pause();
			if ((caught_up = online_wait_caught_up(src, tgt, step, ntables)) != 1)
			{
				if (caught_up == ONLINE_CANNOT_APPLY)
					goto failed;
				goto give_back;
			}
			online = true;
			t_stream = now_seconds() - t0;
		}

		/* 1. one fence for the batch; wait until no write admitted before can commit on the source */
		if (strcmp(progress, "claimed") == 0 || strcmp(progress, "subscribed") == 0)
		{
			if (!lease_call(dir, "fence", b, ", $4::interval"))
				goto retry;
			progress = "fenced";
			crash_point("fenced");
		}
		t_fence = now_seconds();
		if (src->has_wait_fence ? !wait_fence(dir, src, b) : !wait_replica(dir, src, b, "{fenced,done}", "fence"))
			goto give_back;
		/* the target's replica at the fence too: it reads the same pins */
		if (!wait_replica(dir, tgt, b, "{fenced,done}", "fence"))
			goto give_back;
		if (stop_requested)
			goto give_back;
		t_waited = now_seconds();
		/* the copy first deletes what an earlier try left on the target */
		if (!online && strcmp(progress, "fenced") == 0 && !shards_agree(dir, src, tgt, b))
			goto retry;

		/* 2 and 3 */
		t_copy0 = now_seconds();
		if (online)
		{
			/* the target has applied every write the source took; then the rows changed since the copy verified */
			int			applied = online_wait_applied(src, tgt, step, ntables);
			Verdict		v = applied != 1 ? VERDICT_ERROR : !copied.known
				? verify_again(src, tgt, tables, ntables, &target, b, &rows)
				: online_verify_tail(src, tgt, tables, ntables, &target, b, &copied, &rows);

			if (applied == ONLINE_CANNOT_APPLY || v == VERDICT_DIFFERENT)
				goto failed;
			if (v != VERDICT_SAME || !advance_sequences(tgt, tables, ntables, &target)
				|| !lease_record(dir, b, "copied", rows, copied.bytes))
				goto give_back;
			counters_add(rows, 0);
			bytes = copied.bytes;
			t_copy = now_seconds();
			crash_point("copied");
		}
		else if (strcmp(progress, "fenced") == 0)
		{
			Verdict		v = copy_step(dir, src, tgt, tables, ntables, &target, b, &rows, &bytes);

			if (v == VERDICT_DIFFERENT)
			{
				lease_call(dir, "release", b, NULL);
				outcome = STEP_FAILED;
				goto out;
			}
			if (v != VERDICT_SAME || !advance_sequences(tgt, tables, ntables, &target))
				goto give_back;
			t_copy = now_seconds();
			crash_point("copied");
		}
		else
		{
			Verdict		v = verify_again(src, tgt, tables, ntables, &target, b, NULL);

			if (v == VERDICT_DIFFERENT)
			{
				give_back(dir, src, tgt, tables, ntables, &target, b);
				outcome = STEP_FAILED;
				goto out;
			}
			if (v != VERDICT_SAME || !advance_sequences(tgt, tables, ntables, &target))
				goto retry;
			t_copy = now_seconds();
		}
		if (stop_requested)
			goto give_back;

		/* 4. ownership flips to the target: one directory version for the batch */
		if (!lease_call(dir, "complete", b, ", $4::interval"))
			goto retry;
		t_done = now_seconds();
		crash_point("completed");
	}

	/* the source's deletions must not reach the target */
	if (online && !online_drop(src, tgt, step))
		goto retry;

	f.batch = *b;
	f.tables = tables;
	f.ntables = ntables;
	f.target = target;
	f.online = online;
	f.rows = rows;
	f.bytes = bytes;
	f.t_start = t_start;
	f.t_checked = t_checked;
	f.t_fence = t_fence;
	f.t_waited = t_waited;
	f.t_copy0 = t_copy0;
	f.t_copy = t_copy;
	f.t_done = t_done;
	f.t_stream = t_stream;
	memcpy(f.identity, dir_identity, sizeof(f.identity));
	*moved = rows;
	if (!online && finisher != NULL)
	{
		/* the completion is committed: the source's side goes on beside the next batch */
		finisher_give(finisher, &f);
		memset(b, 0, sizeof(*b));
		tables = NULL;
		ntables = 0;
		outcome = STEP_MOVED;
		goto out;
	}
	if (!finish_source(dir, src, tgt, &f))
	{
		*moved = 0;
		goto retry;
	}
	outcome = STEP_MOVED;
	goto out;

give_back:
	give_back(dir, src, tgt, tables, ntables, &target, b);
	outcome = stop_requested ? STEP_STOPPED : config_error ? STEP_FAILED : STEP_RETRY;
	goto out;
failed:
	/* what cannot move as it is (said): given back once, and the mover stops */
	give_back(dir, src, tgt, tables, ntables, &target, b);
	outcome = STEP_FAILED;
	goto out;
refuse:
	/*
	 * The shards cannot take the steps as they are.  Claimed only: given
	 * back untouched, never fenced.  A takeover of steps further on (their
	 * copy may be on the target) is left to their leases, for a rerun once
	 * the shards are mended.
	 */
	if (strcmp(b->state, "copying") == 0 && strcmp(progress, "claimed") == 0)
		lease_call(dir, "release", b, NULL);
retry:
	/* the leases run out and this or another mover takes the steps over */
	outcome = stop_requested ? STEP_STOPPED : config_error ? STEP_FAILED : STEP_RETRY;
out:
	if (outcome != STEP_MOVED)
		pair_forget(b->from_shard, b->to_shard);
	free(copied.source_xip);
	free_tables(tables, ntables);
	return outcome;
}
