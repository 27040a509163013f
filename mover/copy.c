/*
 * The copy of a step's rows of one table from its source shard to its
 * target: binary COPY out of one, into the other, the stream's rows
 * summed on the way (rowsum.c) and paced by --max-rate.  Blocking and
 * online moves both copy this way.
 */
#include <stdlib.h>

#include "chash_move.h"

long long
copy_table(Server *src, Server *tgt, const TableInfo *table, const char *names,
		   const StepTarget *target, long long *bytes, RowSum *sum)
{
	char	   *pred_src = step_predicate(src, table, target);
	char	   *out = format_text("COPY (SELECT %s FROM %s WHERE %s) TO STDOUT (FORMAT binary)",
								  names, table->table_name, pred_src);
	char	   *in = format_text("COPY %s (%s) FROM STDIN (FORMAT binary)", table->table_name, names);
	PGresult   *res;
	long long	rows = -1;
	long long	pending = 0;
	long long	paced = 0;		/* rows taken from --max-rate's bucket */
	long long	sent = 0;		/* COPY's data messages: one a row */
	char	   *buf;
	int			n;

	res = server_exec(src, out);
	if (PQresultStatus(res) != PGRES_COPY_OUT)
	{
		report_result_owned("error", format_text("could not copy from shard \"%s\"", src->name), res, src->conn);
		PQclear(res);
		goto done;
	}
	PQclear(res);
	res = server_exec(tgt, in);
	if (PQresultStatus(res) != PGRES_COPY_IN)
	{
		report_result_owned("error", format_text("could not copy to shard \"%s\"", tgt->name), res, tgt->conn);
		PQclear(res);
		goto done;
	}
	PQclear(res);
	while ((n = PQgetCopyData(src->conn, &buf, 0)) > 0)
	{
		if (sum != NULL)
			rowsum_feed(sum, buf, n);
		if (sum != NULL && sum->rows - paced >= 64)
		{
			rate_take(sum->rows - paced);	/* --max-rate */
			paced = sum->rows;
		}
		if (PQputCopyData(tgt->conn, buf, n) != 1)
		{
			PQfreemem(buf);
			break;
		}
		PQfreemem(buf);
		if (++sent == 100)
			crash_point("copying");
		*bytes += n;
		pending += n;
		if (pending > 1024 * 1024)
		{
			counters_add(0, pending);
			pending = 0;
		}
	}
	counters_add(0, pending);
	if (sum != NULL)
		rate_take(sum->rows - paced);
	res = last_result(src, out);
	if (res == NULL || n != -1)
	{
		PQclear(res);
		PQputCopyEnd(tgt->conn, "the source failed");
		PQclear(last_result(tgt, in));
		goto done;
	}
	PQclear(res);
	if (PQputCopyEnd(tgt->conn, NULL) != 1)
		goto done;
	res = last_result(tgt, in);
	if (res == NULL)
		goto done;
	rows = atoll(PQcmdTuples(res));
	PQclear(res);
	if (sum != NULL && !rowsum_whole(sum))
	{
		report("error", "the COPY stream of table \"%s\" from shard \"%s\" was cut or is not COPY's binary format",
			   table->table_name, src->name);
		rows = -1;
	}
done:
	free(pred_src);
	free(out);
	free(in);
	return rows;
}
