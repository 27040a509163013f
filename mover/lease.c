/*
 * Leases on the directory database (src/sql/1.0--1.1/95_mover.sql): a
 * job claims a step with a lease, or takes over a step whose lease has
 * expired together with the progress it had reached; every later call
 * checks the lease is still ours.  A keeper thread renews this process's
 * leases every third of their length, over a connection of its own, so a
 * long copy does not lose its step (run.c says which function runs on
 * which thread: the keeper touches only held[] under held_lock, the
 * counters under counters_lock, and its own connection and texts, and
 * is joined by lease_keeper_stop).  Each call a batch makes of its
 * leases is a typed function here (lease_fence, lease_complete,
 * lease_release, lease_finish, lease_subscribed, lease_copied,
 * lease_lock and lease_unlock).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chash_move.h"

/* the steps this process works on: the keeper renews exactly these */
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static int *held;
static int	nheld;
static int	held_size;

void
lease_hold(const Batch *batch)
{
	pthread_mutex_lock(&held_lock);
	if (nheld + batch->nsteps > held_size)
	{
		held_size = 2 * (nheld + batch->nsteps);
		held = xrealloc(held, held_size * sizeof(int));
	}
	for (int i = 0; i < batch->nsteps; i++)
		held[nheld++] = batch->steps[i];
	pthread_mutex_unlock(&held_lock);
}

void
lease_unhold(const Batch *batch)
{
	pthread_mutex_lock(&held_lock);
	for (int j = 0; j < batch->nsteps; j++)
		for (int i = 0; i < nheld; i++)
			if (held[i] == batch->steps[j])
			{
				held[i] = held[--nheld];
				break;
			}
	pthread_mutex_unlock(&held_lock);
}

static char *
held_array(void)
{
	char	   *buf;
	char	   *p;

	pthread_mutex_lock(&held_lock);
	buf = p = xmalloc(nheld * 12 + 3);
	p += sprintf(p, "{");
	for (int i = 0; i < nheld; i++)
		p += sprintf(p, "%s%d", i ? "," : "", held[i]);
	sprintf(p, "}");
	pthread_mutex_unlock(&held_lock);
	return buf;
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

/* "{a,b}" of the values, each quoted as an array element; NULL when none */
static char *
array_literal(char **values, const int *numbers, int n)
{
	size_t		len = 3;
	char	   *out,
			   *p;

	for (int i = 0; i < n; i++)
		len += values ? 2 * strlen(values[i]) + 3 : 12;
	out = p = xmalloc(len);
	*p++ = '{';
	for (int i = 0; i < n; i++)
	{
		if (i > 0)
			*p++ = ',';
		if (values == NULL)
		{
			p += sprintf(p, "%d", numbers[i]);
			continue;
		}
		*p++ = '"';
		for (const char *c = values[i]; *c; c++)
		{
			if (*c == '"' || *c == '\\')
				*p++ = '\\';
			*p++ = *c;
		}
		*p++ = '"';
	}
	*p++ = '}';
	*p = '\0';
	return out;
}

/*
 * Claims a batch of up to max_steps steps (a takeover of expired leases
 * first), bounded by --batch-rows and --batch-bytes as far as
 * chash_tenant_size knows the tenants.  A new batch of a shard pair in
 * fence_from/fence_to (text[] literals, or NULL) is fenced with its claim.
 */
static ClaimResult claim(Server *dir, Batch *batch, const char *const *params);

ClaimResult
lease_claim(Server *dir, Batch *batch, int max_steps, const char *fence_from, const char *fence_to)
{
	char	   *id = text_of(migration.id);
	char	   *lease = lease_interval();
	char	   *max = text_of(max_steps);
	char	   *max_rows = options.batch_rows > 0 ? text_of(options.batch_rows) : NULL;
	char	   *max_bytes = options.batch_bytes > 0 ? text_of(options.batch_bytes) : NULL;
	const char *params[8] = {id, migration.holder, lease, max, max_rows, max_bytes, fence_from, fence_to};
	ClaimResult result = claim(dir, batch, params);

	free(id);
	free(lease);
	free(max);
	free(max_rows);
	free(max_bytes);
	return result;
}

/* lease_claim's statements, with its parameters */
static ClaimResult
claim(Server *dir, Batch *batch, const char *const *params)
{
	PGresult   *res;
	ClaimResult result;
	int			n;

	/* CLAIM_STUCK: the mover stops at once, a retry mends nothing */
	if (!directory_current(dir))
		return config_error ? CLAIM_STUCK : CLAIM_ERROR;
	res = query_owned(dir, format_text("SELECT step, slot, tenant, from_shard, to_shard, state, progress, claimed "
								 "FROM %s.chash_steps_lease_claim($1, $2, $3::interval, $4::int, $5::bigint, $6::bigint, "
								 "                                $7::text[], $8::text[]) "
								 "ORDER BY step", dir->schema),
				8, params);
	/*
	 * 42501: permission denied; 55000: the directory database refuses the
	 * claim until an operator acts, and its hint says how (a promoted
	 * directory database before chash_directory_recover, or another
	 * migration of the directory still holding steps)
	 */
	if (res == NULL)
		return config_error || strcmp(last_sqlstate(), "55000") == 0 ? CLAIM_STUCK : CLAIM_ERROR;
	n = PQntuples(res);
	if (n > 0)
	{
		int			state = state_parse(STATE_STEP, PQgetvalue(res, 0, 5), PQgetlength(res, 0, 5));
		int			progress = state_parse(STATE_LEASE, PQgetvalue(res, 0, 6), PQgetlength(res, 0, 6));

		/* a directory database of a later chash than this mover: it cannot tell what to do */
		if (state < 0 || progress < 0)
		{
			report("error", "step %s of migration %lld is in state \"%s\" with progress \"%s\", which this chash_move does not know",
				   PQgetvalue(res, 0, 0), migration.id, PQgetvalue(res, 0, 5), PQgetvalue(res, 0, 6));
			report("hint", "Run the chash_move of the chash version installed on the directory database.");
			PQclear(res);
			return CLAIM_STUCK;
		}
		batch->nsteps = n;
		batch->steps = xcalloc(n, sizeof(int));
		batch->slots = xcalloc(n, sizeof(int));
		batch->tenants = xcalloc(n, sizeof(char *));
		for (int i = 0; i < n; i++)
		{
			batch->steps[i] = atoi(PQgetvalue(res, i, 0));
			batch->slots[i] = PQgetisnull(res, i, 1) ? -1 : atoi(PQgetvalue(res, i, 1));
			batch->tenants[i] = PQgetisnull(res, i, 2) ? NULL : format_text("%s", PQgetvalue(res, i, 2));
		}
		batch->from_shard = format_text("%s", PQgetvalue(res, 0, 3));
		batch->to_shard = format_text("%s", PQgetvalue(res, 0, 4));
		batch->state = state;
		batch->progress = progress;
		batch->fenced_at_claim = state == STEP_FENCED && PQgetvalue(res, 0, 7)[0] == 't';
		batch->claimed_at = now_seconds();
		batch->step_list = array_literal(NULL, batch->steps, n);
		if (batch->slots[0] >= 0)
			batch->slot_list = array_literal(NULL, batch->slots, n);
		else
			batch->tenant_list = array_literal(batch->tenants, NULL, n);
		PQclear(res);
		lease_hold(batch);
		return CLAIM_GOT;
	}
	PQclear(res);

	/* Nothing to claim: finished, or held by live leases, or stuck. */
	res = query_owned(dir, format_text(
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
	else if (state_parse(STATE_MIGRATION, PQgetvalue(res, 0, 0), PQgetlength(res, 0, 0)) == MIGRATION_RUNNING)
		result = CLAIM_WAIT;	/* the last complete is committing */
	else
		result = CLAIM_DONE;
	PQclear(res);
	return result;
}

/* chash_steps_lease_<function>(migration, steps, holder[, lease]): one of the typed calls below */
static bool
lease_call(Server *dir, const char *function, const Batch *batch, bool with_lease)
{
	char	   *id = text_of(migration.id);
	char	   *lease = lease_interval();
	const char *params[4] = {id, batch->step_list, migration.holder, lease};
	PGresult   *res;

	res = query_owned(dir, format_text("SELECT %s.chash_steps_lease_%s($1, $2::int[], $3%s)", dir->schema, function,
								 with_lease ? ", $4::interval" : ""), with_lease ? 4 : 3, params);
	free(id);
	free(lease);
	if (res == NULL)
		return false;
	PQclear(res);
	return true;
}

/* The batch fenced (one directory version), its leases renewed. */
bool
lease_fence(Server *dir, const Batch *batch)
{
	return lease_call(dir, "fence", batch, true);
}

/* The batch completed: ownership flips to the target (one directory version), its leases renewed. */
bool
lease_complete(Server *dir, const Batch *batch)
{
	return lease_call(dir, "complete", batch, true);
}

/* The batch given back: pending again, its leases gone. */
bool
lease_release(Server *dir, const Batch *batch)
{
	return lease_call(dir, "release", batch, false);
}

/* The batch's leases ended: its source rows deleted, or a cancelled batch's copy. */
bool
lease_finish(Server *dir, const Batch *batch)
{
	return lease_call(dir, "finish", batch, false);
}

/* "{v,0,0}": a batch's total on its first step, NULL for -1 (not counted) */
static char *
on_first_step(long long v, int nsteps)
{
	char	   *out,
			   *p;

	if (v < 0)
		return NULL;
	out = p = xmalloc(24 + 2 * (size_t) nsteps);
	p += sprintf(p, "{%lld", v);
	for (int i = 1; i < nsteps; i++)
		p += sprintf(p, ",0");
	sprintf(p, "}");
	return out;
}

/* progress LEASE_SUBSCRIBED, or LEASE_COPIED with the rows and bytes copied (-1: not counted) */
static bool
lease_record(Server *dir, const Batch *batch, lease_progress progress, long long rows, long long bytes)
{
	char	   *id = text_of(migration.id);
	char	   *lease = lease_interval();
	char	   *r = on_first_step(rows, batch->nsteps);
	char	   *b = on_first_step(bytes, batch->nsteps);
	const char *params[7] = {id, batch->step_list, migration.holder, state_name(STATE_LEASE, progress), lease, r, b};
	PGresult   *res;

	res = query_owned(dir, format_text("SELECT %s.chash_steps_lease_record($1, $2::int[], $3, $4, "
								 "$5::interval, $6::bigint[], $7::bigint[])", dir->schema), 7, params);
	free(id);
	free(lease);
	free(r);
	free(b);
	if (res == NULL)
		return false;
	PQclear(res);
	return true;
}

/* The online copy's subscription streams the batch's rows. */
bool
lease_subscribed(Server *dir, const Batch *batch)
{
	return lease_record(dir, batch, LEASE_SUBSCRIBED, -1, -1);
}

/* The batch's rows are on the target and verified: rows and bytes copied (-1: not counted). */
bool
lease_copied(Server *dir, const Batch *batch, long long rows, long long bytes)
{
	return lease_record(dir, batch, LEASE_COPIED, rows, bytes);
}

/* The migration's steps done and in all, for the progress line. */
void
lease_totals(Server *dir)
{
	char	   *id = text_of(migration.id);
	const char *params[1] = {id};
	char	   *sql = format_text("SELECT total, done, summary FROM %s.chash_migration_progress "
								  "WHERE migration = $1", dir->schema);
	PGresult   *res = PQexecParams(dir->conn, sql, 1, NULL, params, NULL, NULL, 0);

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
	free(sql);
	free(id);
}

/*
 * The keeper: renews the leases and fetches the migration's totals for
 * the progress line, until keeper_stop (mover_run sets it once the jobs
 * have ended, and joins the thread); a failed renewal is retried (the
 * lease is long enough for a server restart or two).  Its connection and
 * texts are its own, freed before it returns.
 */
static volatile sig_atomic_t keeper_stopping;

void *
lease_keeper(void *arg)
{
	Server		dir = {.name = "directory", .conninfo = (char *) options.conninfo};
	double		next_renew = 0;
	double		next_totals = 0;
	char	   *id = text_of(migration.id);
	char	   *lease = lease_interval();
	const char *params[4] = {id, migration.holder, lease, NULL};

	while (!keeper_stopping)
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
					char	   *sql = format_text("SELECT %s.chash_step_lease_renew($1, $2, $3::interval, $4::int[])",
												  dir.schema);

					params[3] = steps;
					res = PQexecParams(dir.conn, sql, 4, NULL, params, NULL, NULL, 0);
					free(sql);
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
		for (int i = 0; i < 5 && !keeper_stopping; i++)
			usleep(50 * 1000);
	}
	server_close(&dir);
	free(dir.schema);
	free(id);
	free(lease);
	return NULL;
}

/* The keeper of this process's leases, in a thread: false when it could not start. */
static pthread_t keeper;
static bool keeper_running;

bool
lease_keeper_start(void)
{
	keeper_stopping = 0;
	keeper_running = pthread_create(&keeper, NULL, lease_keeper, NULL) == 0;
	if (!keeper_running)
		report("error", "could not start the thread that renews the leases");
	return keeper_running;
}

/* Ends the keeper and waits for it: every path out of mover_run that started it comes here. */
void
lease_keeper_stop(void)
{
	if (!keeper_running)
		return;
	keeper_stopping = 1;
	pthread_join(keeper, NULL);
	keeper_running = false;
}

/*
 * Opens a transaction on the directory database holding the batch's lease
 * rows locked, if this process still holds them all and every step is in
 * one of the states.  A shard's commit made while it is held cannot race a
 * takeover or a completion by another mover (both need that row).
 */
bool
lease_lock(Server *dir, const Batch *batch, unsigned states)
{
	char	   *id = format_text("%lld", migration.id);
	char	   *names = step_states_literal(states);
	const char *params[4] = {id, batch->step_list, migration.holder, names};
	PGresult   *res;
	bool		ok;

	if (!server_open(dir) || !command(dir, "BEGIN"))
	{
		free(id);
		free(names);
		return false;
	}
	res = query_owned(dir, format_text("SELECT %1$s.chash_steps_lease_check($1, $2::int[], $3) IS NOT NULL "
								 "   AND (SELECT pg_catalog.count(*) = pg_catalog.cardinality($2::int[]) "
								 "               AND pg_catalog.bool_and(s.state = ANY ($4::text[])) "
								 "          FROM %1$s.chash_migration_step s "
								 "         WHERE s.migration = $1 AND s.step = ANY ($2::int[]))",
								 dir->schema), 4, params);
	ok = res != NULL && PQntuples(res) == 1 && PQgetvalue(res, 0, 0)[0] == 't';
	PQclear(res);
	free(id);
	free(names);
	if (!ok)
		server_rollback(dir);
	return ok;
}

bool
lease_unlock(Server *dir, bool commit)
{
	if (commit)
		return command(dir, "COMMIT");
	server_rollback(dir);
	return false;
}
