/*
 * A step's rows compared on both shards by count and an order-independent
 * checksum of each row's text, each side in the transaction its caller
 * opened: the full check (online moves, and a step taken over).
 */
#include <stdlib.h>
#include <string.h>

#include "chash_move.h"

static char *
checksum_sql(Server *server, const TableInfo *table, const StepTarget *target, const char *names)
{
	char	   *pred = step_predicate(server, table, target);
	char	   *sql = format_text("SELECT pg_catalog.count(*), COALESCE(pg_catalog.sum(%s.chash_xxh64(r::pg_catalog.text)), 0) "
								  "FROM (SELECT %s FROM %s WHERE %s) r",
								  server->schema, names, table->table_name, pred);

	free(pred);
	return sql;
}

/* Both sides inside the transactions the caller opened. */
Verdict
verify(Server *src, Server *tgt, TableInfo *tables, int ntables,
	   const StepTarget *target, const Batch *batch, long long *rows)
{
	for (int i = 0; i < ntables; i++)
	{
		char	   *sql_src = checksum_sql(src, &tables[i], target, tables[i].columns);
		char	   *sql_tgt = checksum_sql(tgt, &tables[i], target, tables[i].columns);
		PGresult   *rs,
				   *rt;
		Verdict		v;

		if (!PQsendQuery(src->conn, sql_src) || !PQsendQuery(tgt->conn, sql_tgt))
		{
			report("error", "could not send the verification query: %s", PQerrorMessage(src->conn));
			return VERDICT_ERROR;
		}
		rs = last_result(src, sql_src);
		rt = last_result(tgt, sql_tgt);
		free(sql_src);
		free(sql_tgt);
		if (rs == NULL || rt == NULL)
		{
			PQclear(rs);
			PQclear(rt);
			return VERDICT_ERROR;
		}
		if (rows != NULL)
			*rows += atoll(PQgetvalue(rt, 0, 0));
		v = (strcmp(PQgetvalue(rs, 0, 0), PQgetvalue(rt, 0, 0)) == 0
			 && strcmp(PQgetvalue(rs, 0, 1), PQgetvalue(rt, 0, 1)) == 0) ? VERDICT_SAME : VERDICT_DIFFERENT;
		if (v == VERDICT_DIFFERENT)
		{
			char	   *which = batch_describe(batch);

			report("error", "verification failed for %s of migration %lld: table \"%s\" differs between shard \"%s\" and shard \"%s\"",
				   which, migration.id, tables[i].table_name, src->name, tgt->name);
			report("detail", "The source has %s rows (checksum %s), the target %s rows (checksum %s). "
				   "The %s released: %s rows stay on shard \"%s\", which still owns them.",
				   PQgetvalue(rs, 0, 0), PQgetvalue(rs, 0, 1), PQgetvalue(rt, 0, 0), PQgetvalue(rt, 0, 1),
				   batch->nsteps == 1 ? "step was" : "steps were", batch->nsteps == 1 ? "its" : "their", src->name);
			free(which);
			report("hint", "Something changed the moving rows on shard \"%s\" behind the mover's back (a trigger, or a session that bypasses the guard).",
				   tgt->name);
		}
		PQclear(rs);
		PQclear(rt);
		if (v != VERDICT_SAME)
			return v;
	}
	return VERDICT_SAME;
}

/* A takeover of a copied step, or an online copy: the target's rows are checked (once more). */
Verdict
verify_again(Server *src, Server *tgt, TableInfo *tables, int ntables, const StepTarget *target,
			 const Batch *batch, long long *rows)
{
	Verdict		v = VERDICT_ERROR;

	if (command(tgt, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
		&& command(src, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"))
		v = verify(src, tgt, tables, ntables, target, batch, rows);
	server_rollback(tgt);
	server_rollback(src);
	return v;
}
