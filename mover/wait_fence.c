/*
 * The waits of a batch for its shards: chash_shard_wait_fence on the
 * source (no write admitted before the fence can still commit there), and
 * a shard's replica of the directory showing the batch's steps in a state
 * (the fence, the completion); each bounded by --fence-timeout and said
 * while it lasts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chash_move.h"

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
	res = query_owned(dir, format_text("SELECT version FROM %s.chash_directory WHERE name = $1", dir->schema), 1, params);
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
bool
wait_replica(Server *dir, Server *server, const Batch *batch, unsigned states, const char *what)
{
	char	   *id = format_text("%lld", migration.id);
	char	   *names = step_states_literal(states);
	const char *params[3] = {id, batch->step_list, names};
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
	free(names);
	free(sql);
	return ok;
}

/*
 * chash_shard_wait_fence on the source, for --fence-timeout at most: run
 * in slices of 2 s (statement_timeout), so that between them the mover
 * says what it waits for and ends the wait at the bound; Ctrl-C and
 * SIGTERM cancel a slice at once (server_wait).
 */
bool
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
			report_result_owned("error", format_text("query failed on shard \"%s\"", src->name), res, src->conn);
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
