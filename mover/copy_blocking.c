/*
 * The blocking copy (phases.c's strategy without --online): once the
 * batch is fenced, in one transaction on the target, an earlier try's
 * rows deleted and the batch's rows of every registered table copied from
 * one REPEATABLE READ snapshot of the source, one COPY per table, then
 * verified by count and order-independent checksum (rowsum.c) before the
 * commit.  A takeover of a copied batch only verifies it again.  Its
 * source rows are deleted by the job's finisher thread (finisher.c).
 */
#include <stdlib.h>
#include <string.h>

#include "move.h"

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
		report_result_owned("error", format_text("could not read the copied rows on shard \"%s\"", tgt->name), res, tgt->conn);
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

/*
 * Steps 2 and 3.  VERDICT_SAME: the rows are on the target, committed, and
 * the progress recorded.
 */
static Verdict
copy_step(Server *dir, Server *src, Server *tgt, TableInfo *tables, int ntables, const StepTarget *target,
		  const Batch *batch, long long *rows, long long *bytes)
{
	Verdict		v = VERDICT_ERROR;
	RowSum	   *sums = xcalloc(ntables > 0 ? ntables : 1, sizeof(RowSum));	/* of the source's streams */
	long long  *taken = xcalloc(ntables > 0 ? ntables : 1, sizeof(long long));	/* COPY FROM's counts */

	*rows = 0;
	*bytes = 0;
	for (int i = 0; i < ntables && target->slot >= 0; i++)
	{
		check_slot_index(src, &tables[i]);
		check_slot_index(tgt, &tables[i]);
	}
	if (!begin_table_writes(tgt) || !command(src, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"))
		goto out;
	/* leftovers of an earlier try off the target, children first; then the copy, parents first */
	for (int i = ntables - 1; i >= 0; i--)
	{
		PGresult   *res = query_owned(tgt, delete_sql(tgt, &tables[i], target), 0, NULL);

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
		if (!lease_lock(dir, batch, STEP_STATE(STEP_FENCED)))
			v = VERDICT_ERROR;
		else if (!command(tgt, "COMMIT"))
		{
			lease_unlock(dir, false);
			v = VERDICT_ERROR;
		}
		else if (!lease_copied(dir, batch, *rows, *bytes) || !lease_unlock(dir, true))
		{
			server_rollback(dir);
			v = VERDICT_ERROR;	/* a takeover copies again */
		}
	}
out:
	server_rollback(tgt);
	server_rollback(src);
	for (int i = 0; i < ntables; i++)
		rowsum_free(&sums[i]);
	free(sums);
	free(taken);
	return v;
}

/*
 * Steps 2 and 3 once the shards are at the fence: copied and verified in
 * the target's transaction (a copy of the batch's progress "fenced"), or,
 * in a takeover of a copied batch, verified again.
 */
static PhaseResult
blocking_copy_rows(Move *m)
{
	Verdict		v;

	/* the copy first deletes what an earlier try left on the target */
	if (m->progress == LEASE_FENCED && !shards_agree(m->dir, m->src, m->tgt, m->batch))
		return PHASE_RETRY;
	m->times.copy0 = now_seconds();
	if (m->progress == LEASE_FENCED)
	{
		v = copy_step(m->dir, m->src, m->tgt, m->tables, m->ntables, &m->target, m->batch, &m->rows, &m->bytes);
		if (v == VERDICT_DIFFERENT)
			return PHASE_REJECTED;
		if (v != VERDICT_SAME || !advance_sequences(m->tgt, m->tables, m->ntables, &m->target))
			return PHASE_GIVE_BACK;
		m->times.copy = now_seconds();
		crash_point_at(LEASE_COPIED);
		return PHASE_NEXT;
	}
	v = verify_again(m->src, m->tgt, m->tables, m->ntables, &m->target, m->batch, NULL);
	if (v == VERDICT_DIFFERENT)
		return PHASE_CANNOT;
	if (v != VERDICT_SAME || !advance_sequences(m->tgt, m->tables, m->ntables, &m->target))
		return PHASE_RETRY;
	m->times.copy = now_seconds();
	return PHASE_NEXT;
}

/* Nothing of the blocking copy is left to take down before the source's rows are deleted. */
static bool
blocking_finish(Move *m)
{
	return true;
}

const CopyStrategy blocking_copy = {
	.name = "blocking",
	.prepare = NULL,
	.copy = blocking_copy_rows,
	.finish = blocking_finish,
	.background_delete = true,
};
