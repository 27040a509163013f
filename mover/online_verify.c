/*
 * The tail verification of an online step (online.c; docs/shards.md,
 * "The write block"): with the step fenced and the target caught up with
 * the source, the rows changed since the copy are compared on both sides,
 * found by key from the tallies (online_tally.c) or, without them, by a
 * scan of the step's rows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "online_tally.h"

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
 * those.  VERDICT_DIFFERENT with the detail of the difference in
 * *detail; *rows gets the target's count, the copy's plus the inserted
 * less the deleted.
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

/* Says a table differs between the shards; detail is a sentence of how.  The batch is given back. */
static void
report_difference(Server *src, Server *tgt, const Batch *batch, const TableInfo *table, const char *detail)
{
	char	   *which = batch_describe(batch);

	report("error", "verification failed for %s of migration %lld: table \"%s\" differs between shard \"%s\" and shard \"%s\"",
		   which, migration.id, table->table_name, src->name, tgt->name);
	free(which);
	report("detail", "%s Given back: the rows stay on shard \"%s\", which still owns them.", detail, src->name);
	report("hint", "Something changed the moving rows on shard \"%s\" behind the mover's back (a trigger, or a session that bypasses the guard).",
		   tgt->name);
}

/* One table by its tally (verify_changed); its changed rows are counted in copy->changed. */
static Verdict
verify_by_keys(Server *src, Server *tgt, const TableInfo *table, long long copied, const StepTarget *target,
			   const Batch *batch, TallyTable *t, OnlineCopy *copy, long long *rows)
{
	char	   *detail = NULL;
	Verdict		v = verify_changed(src, tgt, table, target, t, copied, rows, &detail);

	copy->changed += t->nchanged;
	if (v == VERDICT_DIFFERENT)
		report_difference(src, tgt, batch, table, detail);
	free(detail);
	return v;
}

/*
 * One table by a scan of the step's rows: those unchanged since the copy
 * are as many on both sides (the copy was verified equal to the
 * snapshot), and those changed since are as many, with the same checksum.
 * *rows gets the target's count.
 */
static Verdict
verify_by_scan(Server *src, Server *tgt, const TableInfo *table, const StepTarget *target, const Batch *batch,
			   const char *src_changed, const char *tgt_changed, long long *rows)
{
	char	   *sql_src = tail_sql(src, table, target, src_changed);
	char	   *sql_tgt = tail_sql(tgt, table, target, tgt_changed);
	PGresult   *rs = NULL,
			   *rt = NULL;
	Verdict		v = VERDICT_ERROR;

	if (PQsendQuery(src->conn, sql_src) && PQsendQuery(tgt->conn, sql_tgt))
	{
		rs = last_result(src, sql_src);
		rt = last_result(tgt, sql_tgt);
	}
	else
		report("error", "could not send the verification query: %s", PQerrorMessage(src->conn));
	free(sql_src);
	free(sql_tgt);
	if (rs != NULL && rt != NULL)
	{
		bool		same = strcmp(PQgetvalue(rs, 0, 0), PQgetvalue(rt, 0, 0)) == 0
			&& strcmp(PQgetvalue(rs, 0, 1), PQgetvalue(rt, 0, 1)) == 0
			&& strcmp(PQgetvalue(rs, 0, 2), PQgetvalue(rt, 0, 2)) == 0;

		*rows += atoll(PQgetvalue(rt, 0, 0)) + atoll(PQgetvalue(rt, 0, 1));
		v = same ? VERDICT_SAME : VERDICT_DIFFERENT;
		if (!same)
		{
			char	   *detail = format_text("Since the copy, the source has %s rows unchanged and %s changed (checksum %s), the target %s unchanged and %s changed (checksum %s).",
											 PQgetvalue(rs, 0, 0), PQgetvalue(rs, 0, 1), PQgetvalue(rs, 0, 2),
											 PQgetvalue(rt, 0, 0), PQgetvalue(rt, 0, 1), PQgetvalue(rt, 0, 2));

			report_difference(src, tgt, batch, table, detail);
			free(detail);
		}
	}
	PQclear(rs);
	PQclear(rt);
	return v;
}

/*
 * The tail verification, with the step fenced and the target caught up
 * with the source (docs/shards.md, "The write block").  With the tally,
 * per table, only the rows changed since the copy are compared, found by
 * key (verify_by_keys): the block's cost is that of the changes, not of
 * the step.  Without it (a table without a replica identity index, a
 * tally that ended), a scan of the step's rows (verify_by_scan).  The
 * tallies end here, and neither side is left in a transaction.
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

	copy->changed = 0;
	copy->scanned = 0;
	if (command(tgt, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
		&& command(src, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"))
	{
		v = VERDICT_SAME;
		for (int i = 0; v == VERDICT_SAME && i < ntables; i++)
		{
			TallyTable *t = tallied && i < copy->ntables ? &copy->tables[i] : NULL;

			if (t != NULL && t->keys != NULL && !t->unkeyed && copy->table_rows != NULL)
				v = verify_by_keys(src, tgt, &tables[i], copy->table_rows[i], target, batch, t, copy, rows);
			else
			{
				copy->scanned++;
				v = verify_by_scan(src, tgt, &tables[i], target, batch, src_changed, tgt_changed, rows);
			}
		}
	}
	server_rollback(tgt);
	server_rollback(src);
	free(src_changed);
	free(tgt_changed);
	tally_stop(copy);
	return v;
}
