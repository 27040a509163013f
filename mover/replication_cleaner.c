/*
 * The cleaner of the online moves' replication objects, run before and
 * after the jobs (run.c): it drops the recorded objects
 * (replication_record.c) of steps that are done, cancelled or given back
 * and no mover holds, so no slot is left holding WAL on a shard, and
 * forgets them.  The step's row stays locked while its objects are
 * dropped, so a claim of it waits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chash_move.h"

/* One step's objects dropped and forgotten, under the lock of its row; false on an error. */
static bool
clean_step(Server *dir, const char *id, const char *step, const char *from_shard, const char *to_shard)
{
	const char *params[2] = {id, step};
	Server	   *src,
			   *tgt;
	PGresult   *res;
	bool		ok;

	if (!command(dir, "BEGIN"))
		return false;
	res = query_owned(dir, format_text("SELECT %s.chash_replication_object_take($1, $2::int, false)", dir->schema), 2, params);
	if (res == NULL || PQgetvalue(res, 0, 0)[0] != 't')
	{
		/* claimed meanwhile: its mover drops them */
		PQclear(res);
		return command(dir, "ROLLBACK") && res != NULL;
	}
	PQclear(res);
	ok = (src = step_shard(dir, from_shard)) != NULL && (tgt = step_shard(dir, to_shard)) != NULL
		&& online_drop(src, tgt, atoi(step));
	if (ok)
	{
		res = query_owned(dir, format_text("SELECT %s.chash_replication_object_take($1, $2::int, true)", dir->schema), 2, params);
		ok = res != NULL;
		PQclear(res);
	}
	if (ok && command(dir, "COMMIT"))
	{
		if (options.verbose)
			report("info", "step %s: dropped the replication objects it had left on shards \"%s\" and \"%s\"",
				   step, from_shard, to_shard);
		return true;
	}
	PQclear(PQexec(dir->conn, "ROLLBACK"));
	return false;
}

void
replication_objects_clean(void)
{
	Server		dir = {.name = "directory", .conninfo = (char *) options.conninfo};
	char	   *id = format_text("%lld", migration.id);
	const char *params[1] = {id};
	PGresult   *res;

	if (server_open(&dir)
		&& (res = query_owned(&dir, format_text("SELECT step, from_shard, to_shard FROM %s.chash_replication_object_orphans($1)",
										  dir.schema), 1, params)) != NULL)
	{
		for (int i = 0; i < PQntuples(res) && !stop_requested; i++)
			clean_step(&dir, id, PQgetvalue(res, i, 0), PQgetvalue(res, i, 1), PQgetvalue(res, i, 2));
		PQclear(res);
	}
	server_close(&dir);
	step_shards_close();
	free(dir.schema);
	free(id);
}
