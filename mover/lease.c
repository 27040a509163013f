/*
 * Leases on the directory database (src/sql/1.0--1.1/95_mover.sql): a
 * job claims a step with a lease, or takes over a step whose lease has
 * expired together with the progress it had reached; every later call
 * checks the lease is still ours.  A keeper thread renews this process's
 * leases every third of their length, over a connection of its own, so a
 * long copy does not lose its step.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chash_move.h"

/* the steps this process works on: the keeper renews exactly these */
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static int	held[64];
static int	nheld;

void
lease_hold(int step)
{
	pthread_mutex_lock(&held_lock);
	if (nheld < 64)
		held[nheld++] = step;
	pthread_mutex_unlock(&held_lock);
}

void
lease_unhold(int step)
{
	pthread_mutex_lock(&held_lock);
	for (int i = 0; i < nheld; i++)
		if (held[i] == step)
		{
			held[i] = held[--nheld];
			break;
		}
	pthread_mutex_unlock(&held_lock);
}

static char *
held_array(void)
{
	char		buf[64 * 12 + 3];
	char	   *p = buf;

	pthread_mutex_lock(&held_lock);
	p += sprintf(p, "{");
	for (int i = 0; i < nheld; i++)
		p += sprintf(p, "%s%d", i ? "," : "", held[i]);
	sprintf(p, "}");
	pthread_mutex_unlock(&held_lock);
	return format_text("%s", buf);
}

static char *
text_of(long long n)
{
	return format_text("%lld", n);
}

static char *
lease_interval(void)
{
	return format_text("%d seconds", options.lease_seconds);
}

void
claimed_step_free(ClaimedStep *step)
{
	free(step->tenant);
	free(step->from_shard);
	free(step->to_shard);
	free(step->state);
	free(step->progress);
	memset(step, 0, sizeof(*step));
}

ClaimResult
lease_claim(Server *dir, ClaimedStep *step)
{
	char	   *id = text_of(migration.id);
	char	   *lease = lease_interval();
	const char *params[3] = {id, migration.holder, lease};
	PGresult   *res;
	ClaimResult result;

	res = query(dir, format_text("SELECT step, slot, tenant, from_shard, to_shard, state, progress "
								 "FROM %s.chash_step_lease_claim($1, $2, $3::interval)", dir->schema),
				3, params);
	if (res == NULL)
		return CLAIM_ERROR;
	if (PQntuples(res) == 1)
	{
		step->step = atoi(PQgetvalue(res, 0, 0));
		step->slot = PQgetisnull(res, 0, 1) ? -1 : atoi(PQgetvalue(res, 0, 1));
		step->tenant = PQgetisnull(res, 0, 2) ? NULL : format_text("%s", PQgetvalue(res, 0, 2));
		step->from_shard = format_text("%s", PQgetvalue(res, 0, 3));
		step->to_shard = format_text("%s", PQgetvalue(res, 0, 4));
		step->state = format_text("%s", PQgetvalue(res, 0, 5));
		step->progress = format_text("%s", PQgetvalue(res, 0, 6));
		PQclear(res);
		lease_hold(step->step);
		return CLAIM_GOT;
	}
	PQclear(res);

	/* Nothing to claim: finished, or held by live leases, or stuck. */
	res = query(dir, format_text(
		"SELECT m.status, "
		"       (SELECT count(*) FROM %s.chash_step_lease l WHERE l.migration = m.id), "
		"       (SELECT pg_catalog.string_agg(s.step || ' (' || COALESCE(s.claimed_by, 'unknown') || ')', ', ' ORDER BY s.step) "
		"          FROM %s.chash_migration_step s "
		"         WHERE s.migration = m.id AND s.state IN ('copying', 'fenced') "
		"           AND NOT EXISTS (SELECT FROM %s.chash_step_lease l "
		"                            WHERE l.migration = s.migration AND l.step = s.step)) "
		"  FROM %s.chash_migration m WHERE m.id = $1",
		dir->schema, dir->schema, dir->schema, dir->schema), 1, params);
	if (res == NULL)
		return CLAIM_ERROR;
	if (atoll(PQgetvalue(res, 0, 1)) > 0)
		result = CLAIM_WAIT;
	else if (!PQgetisnull(res, 0, 2))
	{
		report("error", "steps of migration %lld are in flight without a lease: %s",
			   migration.id, PQgetvalue(res, 0, 2));
		report("detail", "They were claimed by something other than chash_move, which may still be working on them.");
		report("hint", "If nothing works on them any more, release them with chash_step_release() and run chash_move again.");
		result = CLAIM_STUCK;
	}
	else if (strcmp(PQgetvalue(res, 0, 0), "running") == 0)
		result = CLAIM_WAIT;	/* the last complete is committing */
	else
		result = CLAIM_DONE;
	PQclear(res);
	return result;
}

/* chash_step_lease_<function>(migration, step, holder[, extra]) */
bool
lease_call(Server *dir, const char *function, int step, const char *extra)
{
	char	   *id = text_of(migration.id);
	char	   *stepno = text_of(step);
	char	   *lease = lease_interval();
	const char *params[4] = {id, stepno, migration.holder, lease};
	PGresult   *res;

	res = query(dir, format_text("SELECT %s.chash_step_lease_%s($1, $2::int, $3%s)", dir->schema, function,
								 extra ? extra : ""), extra ? 4 : 3, params);
	free(id);
	free(stepno);
	free(lease);
	if (res == NULL)
		return false;
	PQclear(res);
	return true;
}

/* progress "subscribed", or "copied" with the rows and bytes copied (-1: not counted) */
bool
lease_record(Server *dir, int step, const char *progress, long long rows, long long bytes)
{
	char	   *id = text_of(migration.id);
	char	   *stepno = text_of(step);
	char	   *lease = lease_interval();
	char	   *r = rows >= 0 ? text_of(rows) : NULL;
	char	   *b = bytes >= 0 ? text_of(bytes) : NULL;
	const char *params[7] = {id, stepno, migration.holder, progress, lease, r, b};
	PGresult   *res;

	res = query(dir, format_text("SELECT %s.chash_step_lease_record($1, $2::int, $3, $4, "
								 "$5::interval, $6::bigint, $7::bigint)", dir->schema), 7, params);
	free(id);
	free(stepno);
	free(lease);
	free(r);
	free(b);
	if (res == NULL)
		return false;
	PQclear(res);
	return true;
}

/* The migration's steps done and in all, for the progress line. */
void
lease_totals(Server *dir)
{
	char	   *id = text_of(migration.id);
	const char *params[1] = {id};
	PGresult   *res = PQexecParams(dir->conn,
								   format_text("SELECT total, done, summary FROM %s.chash_migration_progress "
											   "WHERE migration = $1", dir->schema),
								   1, NULL, params, NULL, NULL, 0);

	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
	{
		const char *summary = PQgetvalue(res, 0, 2);

		pthread_mutex_lock(&counters_lock);
		counters.total = atoll(PQgetvalue(res, 0, 0));
		counters.done = atoll(PQgetvalue(res, 0, 1));
		counters.unit = strstr(summary, "tenants") ? "tenants"
			: strstr(summary, "slots") ? "slots" : "steps";
		pthread_mutex_unlock(&counters_lock);
	}
	PQclear(res);
	free(id);
}

/*
 * Renews the leases and fetches the migration's totals for the progress
 * line.  Runs until the process ends; a failed renewal is retried (the
 * lease is long enough for a server restart or two).
 */
void *
lease_keeper(void *arg)
{
	Server		dir = {.name = "directory", .conninfo = (char *) options.conninfo};
	double		next_renew = 0;
	double		next_totals = 0;
	char	   *id = text_of(migration.id);
	char	   *lease = lease_interval();
	const char *params[4] = {id, migration.holder, lease, NULL};

	for (;;)
	{
		double		t = now_seconds();

		if (t >= next_renew || t >= next_totals)
		{
			if (server_open(&dir))
			{
				PGresult   *res;

				if (t >= next_renew)
				{
					char	   *steps = held_array();

					params[3] = steps;
					res = PQexecParams(dir.conn,
									   format_text("SELECT %s.chash_step_lease_renew($1, $2, $3::interval, $4::int[])", dir.schema),
									   4, NULL, params, NULL, NULL, 0);
					free(steps);
					if (PQresultStatus(res) == PGRES_TUPLES_OK)
						next_renew = t + options.lease_seconds / 3.0;
					else
						next_renew = t + 1;
					PQclear(res);
				}
				if (t >= next_totals)
				{
					lease_totals(&dir);
					next_totals = t + 1;
				}
			}
			else
			{
				next_renew = t + 1;
				next_totals = t + 1;
			}
		}
		progress_draw(false);
		usleep(250 * 1000);
	}
	return NULL;
}
