/*
 * --dry-run: the batches a run would move, with their rows, bytes and an
 * estimated time, and nothing moved (no claim, no lease, no write
 * anywhere).  The pending steps are grouped as chash_steps_claim groups
 * them: the first pending step, then the pending steps after it of the
 * same shard pair and kind, up to --batch-steps (and chash_steps_max())
 * and --batch-rows / --batch-bytes, the first step whatever its size.
 * The sizes are counted on the sources (one read of the moving rows per
 * pair and table); the time is the copy's at the pace of that read,
 * halved for the write on the target, or at --max-rate when it is lower.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chash_move.h"

typedef struct PlanStep
{
	int			step;
	int			slot;			/* -1: a tenant step */
	char	   *tenant;
	int			pair;			/* index into the pairs */
	long long	rows;
	long long	bytes;
	bool		placed;
} PlanStep;

typedef struct PlanPair
{
	char	   *from;
	char	   *to;
	bool		by_tenant;
	long long	rows;			/* counted */
	double		seconds;		/* counting them took */
} PlanPair;

static int
pair_of(PlanPair **pairs, int *npairs, const char *from, const char *to, bool by_tenant)
{
	for (int i = 0; i < *npairs; i++)
		if (strcmp((*pairs)[i].from, from) == 0 && strcmp((*pairs)[i].to, to) == 0
			&& (*pairs)[i].by_tenant == by_tenant)
			return i;
	*pairs = xrealloc(*pairs, (*npairs + 1) * sizeof(PlanPair));
	(*pairs)[*npairs] = (PlanPair) {format_text("%s", from), format_text("%s", to), by_tenant, 0, 0};
	return (*npairs)++;
}

/* "{1,2}" of the pair's slots, or '{"a","b"}' of its tenants */
static char *
pair_list(const PlanStep *steps, int nsteps, int pair, bool by_tenant)
{
	char	  **values = xcalloc(nsteps > 0 ? nsteps : 1, sizeof(char *));
	char	   *out;
	int			n = 0;

	for (int i = 0; i < nsteps; i++)
		if (steps[i].pair == pair)
			values[n++] = by_tenant ? format_text("%s", steps[i].tenant) : format_text("%d", steps[i].slot);
	out = text_array(values, n);
	for (int i = 0; i < n; i++)
		free(values[i]);
	free(values);
	return out;
}

/* Counts the pair's moving rows of every table on its source, per slot or tenant. */
static bool
count_pair(Server *dir, PlanPair *pair, int p, PlanStep *steps, int nsteps, TableInfo *tables, int ntables)
{
	Server	   *src = step_shard(dir, pair->from);
	char	   *list = pair_list(steps, nsteps, p, pair->by_tenant);
	StepTarget	target = {pair->by_tenant ? -1 : 0, NULL, 2, list, list};
	double		t0 = now_seconds();

	if (src == NULL)
	{
		free(list);
		return false;
	}
	for (int i = 0; i < ntables; i++)
	{
		char	   *pred = step_predicate(src, &tables[i], &target);
		char	   *column = escape_identifier(src->conn, tables[i].tenant_column);
		char	   *method = escape_literal(src->conn, migration.slot_method);
		char	   *key = pair->by_tenant ? format_text("(%s)::pg_catalog.text", column)
			: format_text("%s.chash_tenant_slot(%s, %d, %s)::pg_catalog.text", src->schema, column,
						  migration.slot_count, method);
		PGresult   *res = query_owned(src, format_text("SELECT %s, pg_catalog.count(*), "
												 "       pg_catalog.sum(pg_catalog.pg_column_size(t.*)) "
												 "  FROM %s t WHERE %s GROUP BY 1",
												 key, tables[i].table_name, pred), 0, NULL);

		free(pred);
		free(column);
		free(method);
		free(key);
		if (res == NULL)
		{
			free(list);
			return false;
		}
		for (int r = 0; r < PQntuples(res); r++)
		{
			const char *k = PQgetvalue(res, r, 0);

			for (int s = 0; s < nsteps; s++)
				if (steps[s].pair == p
					&& (pair->by_tenant ? strcmp(steps[s].tenant, k) == 0 : steps[s].slot == atoi(k)))
				{
					steps[s].rows += atoll(PQgetvalue(res, r, 1));
					steps[s].bytes += atoll(PQgetvalue(res, r, 2));
					pair->rows += atoll(PQgetvalue(res, r, 1));
					break;
				}
		}
		PQclear(res);
	}
	pair->seconds = now_seconds() - t0;
	free(list);
	return true;
}

/* rows at the pair's estimated pace */
static double
estimate(const PlanPair *pair, long long rows)
{
	double		pace = pair->seconds > 0 && pair->rows > 0 ? pair->rows / pair->seconds / 2 : 0;

	if (options.max_rate > 0 && (pace == 0 || options.max_rate < pace))
		pace = options.max_rate;
	return pace > 0 ? rows / pace : 0;
}

int
dry_run(void)
{
	Server		dir = {.name = "directory", .conninfo = (char *) options.conninfo};
	char	   *id = format_text("%lld", migration.id);
	const char *params[1] = {id};
	PGresult   *res;
	PlanStep   *steps = NULL;
	PlanPair   *pairs = NULL;
	int			npairs = 0;
	int			nsteps = 0;
	int			most;
	TableInfo  *tables = NULL;
	int			ntables = 0;
	int			batches = 0;
	long long	total_rows = 0,
				total_bytes = 0;
	double		total_time = 0;
	int			status = 1;

	if (!server_open(&dir) || (ntables = registered_tables(&dir, &tables)) < 0)
		goto done;
	res = query_owned(&dir, format_text("SELECT s.step, s.slot, s.tenant, s.from_shard, s.to_shard, %s.chash_steps_max(), "
								  "       (SELECT pg_catalog.count(*) FROM %s.chash_migration_step f "
								  "         WHERE f.migration = $1 AND f.state IN ('copying', 'fenced')) "
								  "  FROM %s.chash_migration_step s WHERE s.migration = $1 AND s.state = 'pending' "
								  " ORDER BY s.step", dir.schema, dir.schema, dir.schema), 1, params);
	if (res == NULL)
		goto done;
	nsteps = PQntuples(res);
	if (options.max_steps >= 0 && nsteps > options.max_steps)
		nsteps = (int) options.max_steps;
	steps = xcalloc(nsteps > 0 ? nsteps : 1, sizeof(PlanStep));
	most = nsteps > 0 ? atoi(PQgetvalue(res, 0, 5)) : 1;
	if (options.batch_steps < most)
		most = options.batch_steps;
	if (nsteps > 0 && atoll(PQgetvalue(res, 0, 6)) > 0)
		printf("%s steps of migration %lld are in flight (held by a mover, or left to their leases); not counted below\n",
			   PQgetvalue(res, 0, 6), migration.id);
	for (int i = 0; i < nsteps; i++)
	{
		steps[i].step = atoi(PQgetvalue(res, i, 0));
		steps[i].slot = PQgetisnull(res, i, 1) ? -1 : atoi(PQgetvalue(res, i, 1));
		steps[i].tenant = PQgetisnull(res, i, 2) ? NULL : format_text("%s", PQgetvalue(res, i, 2));
		steps[i].pair = pair_of(&pairs, &npairs, PQgetvalue(res, i, 3), PQgetvalue(res, i, 4), steps[i].slot < 0);
	}
	PQclear(res);
	for (int p = 0; p < npairs; p++)
		if (!count_pair(&dir, &pairs[p], p, steps, nsteps, tables, ntables))
			goto done;

	printf("migration %lld of directory \"%s\": %d pending steps\n", migration.id, migration.directory, nsteps);
	for (int first = 0; first < nsteps; first++)
	{
		long long	rows = 0,
					bytes = 0;
		int			n = 0,
					last = first;

		if (steps[first].placed)
			continue;
		for (int i = first; i < nsteps && n < most; i++)
		{
			if (steps[i].placed || steps[i].pair != steps[first].pair)
				continue;
			if (n > 0 && ((options.batch_rows > 0 && rows + steps[i].rows > options.batch_rows)
						  || (options.batch_bytes > 0 && bytes + steps[i].bytes > options.batch_bytes)))
				break;
			steps[i].placed = true;
			rows += steps[i].rows;
			bytes += steps[i].bytes;
			last = i;
			n++;
		}
		batches++;
		printf("batch %d: steps %d-%d, %d %s %s -> %s: %lld rows, %.1f kB, about %.2f s\n",
			   batches, steps[first].step, steps[last].step, n,
			   pairs[steps[first].pair].by_tenant ? (n == 1 ? "tenant" : "tenants") : (n == 1 ? "slot" : "slots"),
			   pairs[steps[first].pair].from, pairs[steps[first].pair].to, rows, bytes / 1024.0,
			   estimate(&pairs[steps[first].pair], rows));
		total_rows += rows;
		total_bytes += bytes;
		total_time += estimate(&pairs[steps[first].pair], rows);
	}
	printf("%d batches, %lld rows, %.1f MB, about %.1f s of copying with one job "
		   "(%s; the per-batch fence, completion and delete come on top)\n",
		   batches, total_rows, total_bytes / 1e6, total_time,
		   options.max_rate > 0 ? "at --max-rate or the sources' pace, whichever is lower"
		   : "at half the pace the sources counted the rows");
	printf("nothing was moved\n");
	status = 0;
done:
	for (int i = 0; steps != NULL && i < nsteps; i++)
		free(steps[i].tenant);
	free(steps);
	for (int p = 0; p < npairs; p++)
	{
		free(pairs[p].from);
		free(pairs[p].to);
	}
	free(pairs);
	free(id);
	free_tables(tables, ntables > 0 ? ntables : 0);
	server_close(&dir);
	free(dir.schema);
	return status;
}
