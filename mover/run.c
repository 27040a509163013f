/*
 * The engine of a move: finds the migration, starts the lease keeper and
 * the jobs, and turns how they ended into a status.  Each job has its own
 * connections (the directory database, and each shard it meets) and
 * loops: claim a batch of steps (or take one over), move it, until nothing
 * is left.  chash_move (main.c) calls it; nothing here exits the process,
 * so another program can link it too: the background rebalance runs it
 * inside a server (src/rebalance_worker.c, in a thread of its own).
 *
 * Threads, and what runs on each:
 * - the runner, the thread that calls mover_run (chash_move's main
 *   thread; the worker's engine thread): find_migration, dry_run,
 *   replication_objects_clean, migration_finished; it starts the keeper
 *   and the jobs and joins them before it returns, on every path.
 * - the keeper (lease.c, lease_keeper): renews the held leases and reads
 *   the totals, over a connection of its own; lease_keeper_start starts
 *   it, lease_keeper_stop ends it and joins it once the jobs are joined.
 * - a job (run_job): claims and moves batches over its own connections
 *   (shards.c keeps a job's shard connections per thread); it starts its
 *   finisher (finisher.c, finisher_main: a completed batch's source side)
 *   and, for one job copying with writes blocked, a claim of the next
 *   batch beside the copy (prefetch_run); it joins both (finisher_stop,
 *   prefetch_take) and closes every connection before it returns.
 * What they share is this file's and lease.c's, progress.c's and
 * report.c's globals, each under its lock; stop_requested and
 * stop_claiming are set by the program (a signal handler, the worker's
 * thread), failed and config_error only ever become true during a run.
 *
 * Rules for every one of these threads, since inside a server they are
 * threads of a server process: they call libc, libpq and libxxhash only,
 * never a function of the server (no palloc, no elog or ereport, no
 * server global, no signal handler, no longjmp); their messages go
 * through report(), whose hook (report_hook) the program sets; nothing
 * ends the process (chash_move's main.c alone exits, from
 * out_of_memory_hook) or raises a signal (crash_point.c is not in the
 * server's build); every text made for a statement or a message is
 * freed (query_owned, report_result_owned), every connection closed,
 * every thread joined.  scripts/check-library checks the calls.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chash_move.h"

Migration	migration;
volatile sig_atomic_t stop_requested = 0;
volatile sig_atomic_t stop_claiming = 0;
volatile bool failed = false;
volatile bool config_error = false;

static pthread_mutex_t tickets_lock = PTHREAD_MUTEX_INITIALIZER;
static long long tickets_used;
static bool limit_reached;

/* --max-steps: a job takes a ticket per step it may claim; 0 when none are left */
static int
take_tickets(int want)
{
	int			got = want;

	pthread_mutex_lock(&tickets_lock);
	if (options.max_steps >= 0 && tickets_used + got > options.max_steps)
		got = (int) (options.max_steps - tickets_used);
	if (got <= 0)
	{
		got = 0;
		limit_reached = true;
	}
	tickets_used += got;
	pthread_mutex_unlock(&tickets_lock);
	return got;
}

static void
return_tickets(int n)
{
	pthread_mutex_lock(&tickets_lock);
	tickets_used -= n;
	pthread_mutex_unlock(&tickets_lock);
}

/*
 * How many steps the next batch claims.  chash_tenant_size bounds a claim
 * only where it knows the tenants; the rows a step moved in this job's
 * last batches bound it everywhere: the steps that make --batch-rows at
 * that pace (at most --batch-steps), so a blocking batch's write block
 * stays near the copy time of --batch-rows.  The first batch is small,
 * to measure.  Online batches too: one slot and one subscription each.
 */
static int
batch_size(double rows_per_step)
{
	double		n;

	if (options.batch_rows <= 0)
		return options.batch_steps;
	if (rows_per_step < 0)
		return options.batch_steps < 16 ? options.batch_steps : 16;
	n = options.batch_rows / (rows_per_step > 1 ? rows_per_step : 1);
	return n < 1 ? 1 : n > options.batch_steps ? options.batch_steps : (int) n;
}

/*
 * --jobs N on disjoint shard pairs: the pairs this process's jobs are
 * moving a batch of (from the claim until the batch is copied and
 * completed).  A job's claim starts at the first pending step of a pair
 * no other job moves, where one has pending steps: while it claims, a
 * second connection of the job holds the pending steps of the busy pairs
 * that come before that step locked, and chash_steps_claim, which takes
 * the first pending step it can lock (SKIP LOCKED), passes over them.
 */
static pthread_mutex_t busy_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t claim_lock = PTHREAD_MUTEX_INITIALIZER;
static char *busy_from[64];
static char *busy_to[64];
static int	nbusy;

static void
busy_add(const char *from, const char *to)
{
	pthread_mutex_lock(&busy_lock);
	if (nbusy < 64)
	{
		busy_from[nbusy] = format_text("%s", from);
		busy_to[nbusy] = format_text("%s", to);
		nbusy++;
	}
	pthread_mutex_unlock(&busy_lock);
}

static void
busy_remove(const char *from, const char *to)
{
	pthread_mutex_lock(&busy_lock);
	for (int i = 0; i < nbusy; i++)
		if (strcmp(busy_from[i], from) == 0 && strcmp(busy_to[i], to) == 0)
		{
			free(busy_from[i]);
			free(busy_to[i]);
			nbusy--;
			busy_from[i] = busy_from[nbusy];
			busy_to[i] = busy_to[nbusy];
			break;
		}
	pthread_mutex_unlock(&busy_lock);
}

/*
 * Opens a transaction on the locker holding the busy pairs' pending steps
 * before the first pending step of a free pair (none when no free pair has
 * one: the claim then joins a busy pair).  False: none held (no busy pair,
 * or the statement failed: the claim goes on without).
 */
static bool
hold_busy_pairs(Server *locker)
{
	char	   *from,
			   *to;
	char	   *id = format_text("%lld", migration.id);
	const char *params[3];
	PGresult   *res;

	pthread_mutex_lock(&busy_lock);
	if (nbusy == 0)
	{
		pthread_mutex_unlock(&busy_lock);
		free(id);
		return false;
	}
	from = text_array(busy_from, nbusy);
	to = text_array(busy_to, nbusy);
	pthread_mutex_unlock(&busy_lock);
	params[0] = id;
	params[1] = from;
	params[2] = to;
	if (!server_open(locker) || !command(locker, "BEGIN"))
		res = NULL;
	else
		res = query_owned(locker, format_text(
			"WITH busy AS (SELECT * FROM ROWS FROM (pg_catalog.unnest($2::pg_catalog.text[]), "
			"                                   pg_catalog.unnest($3::pg_catalog.text[])) b(f, t)) "
			"SELECT s.step FROM %1$s.chash_migration_step s "
			" WHERE s.migration = $1 AND s.state = 'pending' "
			"   AND (s.from_shard, s.to_shard) IN (SELECT f, t FROM busy) "
			"   AND s.step < (SELECT pg_catalog.min(p.step) FROM %1$s.chash_migration_step p "
			"                  WHERE p.migration = $1 AND p.state = 'pending' "
			"                    AND (p.from_shard, p.to_shard) NOT IN (SELECT f, t FROM busy)) "
			"   FOR UPDATE OF s SKIP LOCKED", locker->schema), 3, params);
	free(id);
	free(from);
	free(to);
	if (res == NULL)
	{
		if (locker->conn != NULL && PQtransactionStatus(locker->conn) != PQTRANS_IDLE)
			PQclear(PQexec(locker->conn, "ROLLBACK"));
		return false;
	}
	PQclear(res);
	return true;
}

/*
 * The shard pairs whose next new batch is fenced with its claim (one
 * directory version and one change of each step's row fewer): a copy with
 * writes blocked has nothing to do between the claim and the fence once
 * the pair's checks are done in this run (tables.c) and the lag gate lets
 * it through.  An online copy subscribes in between.  NULL, NULL: none.
 */
static void
fence_pairs(Server *dir, char **from, char **to)
{
	char	  **src,
			  **tgt;
	int			n;
	int			kept = 0;

	*from = *to = NULL;
	if (options.online)
		return;
	n = checked_pairs(&src, &tgt);
	/* the pairs the lag gate lets through first, the others after them */
	for (int i = 0; i < n; i++)
		if (lag_within(dir, src[i], tgt[i]))
		{
			char	   *s = src[kept],
					   *t = tgt[kept];

			src[kept] = src[i];
			tgt[kept] = tgt[i];
			src[i] = s;
			tgt[i] = t;
			kept++;
		}
	if (kept > 0)
	{
		*from = text_array(src, kept);
		*to = text_array(tgt, kept);
	}
	for (int i = 0; i < n; i++)
	{
		free(src[i]);
		free(tgt[i]);
	}
	free(src);
	free(tgt);
}

/*
 * The next batch claimed while this one copies (chash_steps_lease_claim
 * on a connection of its own, in a thread): its claim, fenced for a
 * checked pair, and the shards' apply of that fence overlap the copy
 * rather than follow the completion.  Only for one job copying with
 * writes blocked and no --max-rate: the next batch's writes are refused
 * from its claim on, through the rest of this batch's copy and its
 * completion, which a throttled copy would stretch; jobs on other pairs
 * overlap each other already.
 */
typedef struct Prefetch
{
	Server		dir;
	Server	   *job_dir;		/* the job's, for the lag gate's reads */
	int			want;			/* steps the next claim asks for */
	int			tickets;
	char	   *fence_from,
			   *fence_to;
	Batch		batch;
	ClaimResult result;
	pthread_t	thread;
	bool		started;
} Prefetch;

static void *
prefetch_run(void *arg)
{
	Prefetch   *p = arg;

	p->result = server_open(&p->dir)
		? lease_claim(&p->dir, &p->batch, p->tickets, p->fence_from, p->fence_to) : CLAIM_ERROR;
	return NULL;
}

/* CopyHook: the claim of the next batch starts as a blocking copy begins */
static void
prefetch_begin(void *arg)
{
	Prefetch   *p = arg;

	if (p->started || p->want == 0 || options.jobs != 1 || options.online || options.max_rate > 0
		|| stop_requested || stop_claiming || failed || config_error)
		return;
	if ((p->tickets = take_tickets(p->want)) == 0)
		return;
	fence_pairs(p->job_dir, &p->fence_from, &p->fence_to);
	memset(&p->batch, 0, sizeof(p->batch));
	if (pthread_create(&p->thread, NULL, prefetch_run, p) != 0)
	{
		return_tickets(p->tickets);
		free(p->fence_from);
		free(p->fence_to);
		return;
	}
	p->started = true;
}

/* The batch claimed beside the last one: CLAIM_GOT and *b, or nothing got (the job claims as usual). */
static bool
prefetch_take(Prefetch *p, Batch *b)
{
	if (!p->started)
		return false;
	pthread_join(p->thread, NULL);
	p->started = false;
	free(p->fence_from);
	free(p->fence_to);
	if (p->result != CLAIM_GOT)
	{
		return_tickets(p->tickets);
		return false;
	}
	return_tickets(p->tickets - p->batch.nsteps);
	*b = p->batch;
	b->prefetched = true;
	return true;
}

typedef struct Job
{
	int			number;
	bool		finished;		/* saw the migration done */
} Job;

static void *
run_job(void *arg)
{
	Job		   *job = arg;
	Server		dir = {.name = "directory", .conninfo = (char *) options.conninfo};
	int			errors = 0;
	double		rows_per_step = -1; /* measured over the batches moved */
	Finisher   *finisher = finisher_start();
	Server		locker = {.name = "directory", .conninfo = (char *) options.conninfo};
	Prefetch	prefetch = {.dir = {.name = "directory", .conninfo = (char *) options.conninfo}, .job_dir = &dir};
	CopyHook	hook = {prefetch_begin, &prefetch};
	Batch		left = {0};

	while (!stop_requested && !stop_claiming && !failed)
	{
		Batch		b = {0};
		ClaimResult r;
		StepOutcome o;
		int			tickets;
		long long	rows;
		bool		fresh;
		int			nsteps;
		bool		held;
		char	   *from,
				   *to,
				   *fence_from,
				   *fence_to;

		if (errors > 0)
		{
			if (errors >= 30)
			{
				report("error", "giving up after %d failed attempts in a row", errors);
				failed = true;
				break;
			}
			sleep(1);
		}
		if (prefetch_take(&prefetch, &b))
		{
			/* claimed while the last batch copied */
			r = CLAIM_GOT;
			busy_add(b.from_shard, b.to_shard);
		}
		else
		{
			if ((tickets = take_tickets(batch_size(rows_per_step))) == 0)
				break;
			if (!server_open(&dir))
			{
				return_tickets(tickets);
				errors++;
				continue;
			}
			/* one claim at a time in this process, its pair busy before the next claim */
			pthread_mutex_lock(&claim_lock);
			held = hold_busy_pairs(&locker);
			fence_pairs(&dir, &fence_from, &fence_to);
			r = lease_claim(&dir, &b, tickets, fence_from, fence_to);
			free(fence_from);
			free(fence_to);
			if (held)
				PQclear(PQexec(locker.conn, "ROLLBACK"));
			if (r == CLAIM_GOT)
				busy_add(b.from_shard, b.to_shard);
			pthread_mutex_unlock(&claim_lock);
			return_tickets(r == CLAIM_GOT ? tickets - b.nsteps : tickets);
		}
		if (r == CLAIM_DONE)
		{
			job->finished = true;
			break;
		}
		if (r == CLAIM_STUCK)
		{
			failed = true;
			break;
		}
		if (r == CLAIM_ERROR)
		{
			errors++;
			continue;
		}
		if (r == CLAIM_WAIT)
		{
			finisher_wait(finisher);	/* perhaps its own steps */
			usleep(200 * 1000);
			continue;
		}
		fresh = b.state == STEP_COPYING || b.fenced_at_claim;
		nsteps = b.nsteps;
		from = format_text("%s", b.from_shard);
		to = format_text("%s", b.to_shard);
		report_steps = b.step_list;
		/* not before a batch has measured the pace: the first batches are small */
		prefetch.want = rows_per_step < 0 ? 0 : batch_size(rows_per_step);
		o = move_batch(&dir, &b, &rows, finisher, &hook);
		report_steps = NULL;
		busy_remove(from, to);
		free(from);
		free(to);
		if (o == STEP_MOVED && fresh && rows > 0)
		{
			/* the pace of the batches moved, the latest weighing most */
			double		pace = (double) rows / nsteps;

			rows_per_step = rows_per_step < 0 ? pace : (rows_per_step + pace) / 2;
		}
		lease_unhold(&b);
		batch_free(&b);
		if (o == STEP_MOVED)
			errors = 0;
		else if (o == STEP_FAILED)
			failed = true;
		else if (o == STEP_RETRY)
			errors++;
	}
	/* a batch claimed beside the last one and not moved: given back, not left fenced */
	if (prefetch_take(&prefetch, &left))
	{
		if (!server_open(&dir) || !lease_release(&dir, &left))
		{
			char	   *which = batch_describe(&left);

			report("warning", "%s of migration %lld could not be given back; its leases run out", which, migration.id);
			free(which);
		}
		lease_unhold(&left);
		batch_free(&left);
	}
	server_close(&prefetch.dir);
	finisher_stop(finisher);
	server_close(&locker);
	server_close(&dir);
	step_shards_close();
	free(prefetch.dir.schema);
	free(locker.schema);
	free(dir.schema);
	return NULL;
}

/*
 * The directory database's identity in the names of the online moves'
 * replication objects (online.c): its server's system identifier and its
 * oid, hashed short.
 */
static bool
find_database_id(Server *dir)
{
	PGresult   *res = query(dir,
							"SELECT pg_catalog.substr(pg_catalog.md5(s.system_identifier::pg_catalog.text "
							"           OPERATOR(pg_catalog.||) '/' OPERATOR(pg_catalog.||) d.oid::pg_catalog.text), 1, 8) "
							"  FROM pg_catalog.pg_control_system() s, pg_catalog.pg_database d "
							" WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()", 0, NULL);

	if (res == NULL || PQntuples(res) != 1)
	{
		PQclear(res);
		return false;
	}
	snprintf(migration.database_id, sizeof(migration.database_id), "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return true;
}

/* "3 (cancelled, with steps to clean up), 4 (running)" */
static char *
migration_list(PGresult *res)
{
	char	   *list = format_text("%s", "");

	for (int i = 0; i < PQntuples(res); i++)
	{
		const char *status = PQgetvalue(res, i, 5);
		char	   *longer = format_text("%s%s%s (%s%s)", list, i ? ", " : "", PQgetvalue(res, i, 0), status,
										 state_parse(STATE_MIGRATION, status, strlen(status)) == MIGRATION_RUNNING ? "" : ", with steps to clean up");

		free(list);
		list = longer;
	}
	return list;
}

/*
 * The migration to move, from --migration, --directory, or the only
 * running one: -1 found (in migration), else mover_run's status.  Every
 * result is cleared on every path; find_migration closes the connection.
 */
static int
find_migration_on(Server *dir)
{
	char		id[32];
	const char *params[1];
	PGresult   *res;
	const char *sql;
	char	   *where;

	if (options.migration != 0)
	{
		snprintf(id, sizeof(id), "%lld", options.migration);
		params[0] = id;
		sql = "m.id = $1";
	}
	else if (options.directory != NULL)
	{
		params[0] = options.directory;
		res = query_owned(dir, format_text("SELECT FROM %s.chash_directory WHERE name = $1", dir->schema), 1, params);
		if (res == NULL)
			return 1;
		if (PQntuples(res) == 0)
		{
			PQclear(res);
			report("error", "directory \"%s\" does not exist", options.directory);
			report("hint", "The directories are the rows of chash_directory in the directory database.");
			return 1;
		}
		PQclear(res);
		/* the running one, or a finished one whose source rows are still to delete */
		sql = "m.directory = $1 AND (m.status = 'running' OR EXISTS (SELECT FROM %1$s.chash_step_lease l WHERE l.migration = m.id))";
	}
	else
		sql = "m.status = 'running' OR EXISTS (SELECT FROM %1$s.chash_step_lease l WHERE l.migration = m.id)";
	where = format_text(
		"SELECT m.id, m.directory, d.slot_count, d.slot_method, d.key_type, m.status "
		"  FROM %%1$s.chash_migration m JOIN %%1$s.chash_directory d ON d.name = m.directory "
		" WHERE %s ORDER BY m.id", sql);
	res = query_owned(dir, format_text(where, dir->schema),
				options.migration != 0 || options.directory != NULL ? 1 : 0, params);
	free(where);
	if (res == NULL)
		return 1;
	if (PQntuples(res) == 0 && options.directory != NULL)
	{
		/* a rerun after the end: nothing left to do is success */
		PQclear(res);
		res = query_owned(dir, format_text("SELECT m.id, m.status FROM %s.chash_migration m WHERE m.directory = $1 "
									  "ORDER BY m.id DESC LIMIT 1", dir->schema), 1, params);
		if (res == NULL)
			return 1;
		if (PQntuples(res) == 1 && state_parse(STATE_MIGRATION, PQgetvalue(res, 0, 1), PQgetlength(res, 0, 1)) == MIGRATION_DONE)
		{
			report("info", "migration %s of directory \"%s\" is done: nothing to move",
				   PQgetvalue(res, 0, 0), options.directory);
			PQclear(res);
			return 0;
		}
		PQclear(res);
		report("error", "directory \"%s\" has no running migration", options.directory);
		report("hint", "Start one with chash_migration_start() or chash_migration_move_tenant().");
		return 1;
	}
	if (PQntuples(res) == 0)
	{
		PQclear(res);
		if (options.migration != 0)
			report("error", "migration %lld does not exist", options.migration);
		else
			report("error", "no migration is running");
		report("hint", "Start one with chash_migration_start() or chash_migration_move_tenant().");
		return 1;
	}
	if (PQntuples(res) > 1)
	{
		char	   *list = migration_list(res);

		if (options.directory != NULL)
		{
			/* a cancelled or reverted migration whose steps a mover still held, and the running one */
			report("error", "directory \"%s\" has more than one migration to move: %s", options.directory, list);
			report("hint", "Move them one at a time, the oldest first: chash_move --migration %s, then --migration %s.",
				   PQgetvalue(res, 0, 0), PQgetvalue(res, 1, 0));
		}
		else
		{
			report("error", "more than one migration is running: %s", list);
			report("hint", "Choose one with --migration or --directory.");
		}
		free(list);
		PQclear(res);
		return 2;
	}
	migration.id = atoll(PQgetvalue(res, 0, 0));
	migration.directory = format_text("%s", PQgetvalue(res, 0, 1));
	migration.slot_count = atoi(PQgetvalue(res, 0, 2));
	migration.slot_method = format_text("%s", PQgetvalue(res, 0, 3));
	migration.key_type = format_text("%s", PQgetvalue(res, 0, 4));
	if (state_parse(STATE_MIGRATION, PQgetvalue(res, 0, 5), PQgetlength(res, 0, 5)) == MIGRATION_CANCELLED && options.verbose)
		report("info", "migration %lld was cancelled; cleaning up after its steps", migration.id);
	PQclear(res);
	return -1;
}

static int
find_migration(void)
{
	Server		dir = {.name = "directory", .conninfo = (char *) options.conninfo};
	int			status = 1;

	if (server_open(&dir) && find_database_id(&dir))
		status = find_migration_on(&dir);
	server_close(&dir);
	free(dir.schema);
	return status;
}

/*
 * After the jobs: whether the migration has nothing left for a mover (done
 * or cancelled, no step held), read again, and the totals for the final
 * progress line, so a Ctrl-C that came after the last step is no
 * interruption and the last line is not a stale one.
 */
static bool
migration_finished(void)
{
	Server		dir = {.name = "directory", .conninfo = (char *) options.conninfo};
	bool		done = false;

	if (server_open(&dir))
	{
		char	   *id = format_text("%lld", migration.id);
		const char *params[1] = {id};
		PGresult   *res = query_owned(&dir, format_text(
			"SELECT m.status <> 'running' AND NOT EXISTS (SELECT FROM %1$s.chash_step_lease l WHERE l.migration = m.id) "
			"  FROM %1$s.chash_migration m WHERE m.id = $1", dir.schema), 1, params);

		done = res != NULL && PQntuples(res) == 1 && PQgetvalue(res, 0, 0)[0] == 't';
		PQclear(res);
		free(id);
		lease_totals(&dir);
	}
	server_close(&dir);
	free(dir.schema);
	return done;
}

/* Testing aid: CHASH_MOVE_PAUSE_AT=finished waits 3 s once the jobs have ended (a Ctrl-C then). */
static void
pause_point(const char *point)
{
	const char *at = getenv("CHASH_MOVE_PAUSE_AT");

	if (at != NULL && strcmp(at, point) == 0)
		for (int i = 0; i < 30; i++)
			usleep(100 * 1000);
}

/*
 * Moves the migration the options name until it is done, a job fails, the
 * --max-steps limit is reached or stop_requested is set.  Returns what
 * chash_move exits with: 0 done (or the limit reached), 1 failed or
 * interrupted, 2 the options name no single migration.
 */
int
mover_run(const char *holder_prefix)
{
	char		host[64] = "";
	pthread_t  *threads;
	int			started = 0;
	Job		   *jobs;
	bool		finished = false;
	bool		done;
	int			status;

	if ((status = find_migration()) >= 0)
		return status;
	if (options.dry_run)
		return dry_run();
	gethostname(host, sizeof(host) - 1);
	snprintf(migration.holder, sizeof(migration.holder), "%s %s pid %d", holder_prefix, host, (int) getpid());

	replication_objects_clean();	/* what movers that died left */
	progress_start();
	if (!lease_keeper_start())
		return 1;
	threads = xcalloc(options.jobs, sizeof(pthread_t));
	jobs = xcalloc(options.jobs, sizeof(Job));
	for (int i = 0; i < options.jobs; i++)
	{
		jobs[i].number = i + 1;
		if (pthread_create(&threads[i], NULL, run_job, &jobs[i]) != 0)
		{
			/* the jobs started finish their batches; the run fails */
			report("error", "could not start job %d of %d", i + 1, options.jobs);
			failed = true;
			break;
		}
		started++;
	}
	for (int i = 0; i < started; i++)
	{
		pthread_join(threads[i], NULL);
		finished |= jobs[i].finished;
	}
	free(threads);
	free(jobs);
	lease_keeper_stop();		/* the jobs have given their steps back or finished them */
	replication_objects_clean();	/* of the steps given back */
	pause_point("finished");
	done = migration_finished();	/* and the final totals */
	if (!failed && (stop_requested || stop_claiming))
		finished = finished || done;
	progress_draw(true);

	if (stop_requested && !finished)
	{
		report("info", "interrupted: the steps in flight were released");
		return 1;
	}
	if (stop_claiming && !finished)
	{
		report("info", "stopped: the batches in flight were finished or given back");
		return 1;
	}
	if (failed)
		return 1;
	if (finished)
	{
		if (options.verbose)
			report("info", "migration %lld is done", migration.id);
		return 0;
	}
	return limit_reached ? 0 : 1;
}
