/*
 * rebalance_worker.c - the background rebalance's processes (docs/shards.md,
 * "Background rebalancing"): the launcher, which resumes the running
 * rebalances whenever the server starts; a database's resumer; and the
 * worker of one rebalance, which runs chash_move's engine (mover/engine.h)
 * in a thread of its own.
 *
 * Who each acts as: the worker of a rebalance connects as the role that
 * started it (chash_rebalance.role, checked again when it resumes), the
 * resumer as the bootstrap superuser, to read chash_rebalance only, the
 * launcher to no database.  Their connections take the database's and the
 * role's settings, which a database owner writes: each pins its
 * search_path first (pin_session), and writes chash_rebalance as the
 * extension's owner, in a restricted security context, with SQL whose
 * objects and operators are qualified.
 *
 * A shutdown's SIGTERM ends each at its next wait, a lock's too (die),
 * but for a worker running the engine, whose batches it interrupts first.
 *
 * The engine's threads (it starts a lease keeper and the jobs) call
 * nothing of the server's: they start with every signal blocked, talk to
 * the directory database and the shards through libpq as the role that
 * started the rebalance, and hand their messages to a queue that the
 * worker's own thread, the only one that calls the server, writes to the
 * log; the last error goes to chash_rebalance with its steps.
 */
#include "chash.h"

#include <pthread.h>
#include <signal.h>

#include "access/heapam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "postmaster/postmaster.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "../mover/engine.h"
#include "rebalance.h"

static volatile sig_atomic_t got_sigterm = false;	/* the server shuts down */
static volatile sig_atomic_t got_stop = false;	/* chash_rebalance_stop */
static volatile sig_atomic_t engine_running = false;	/* the engine's thread is started */

/*
 * A worker's SIGTERM: before the engine runs, die()'s, so that the next
 * CHECK_FOR_INTERRUPTS ends the process wherever it waits (a lock, a
 * statement); while it runs, the main loop interrupts the batches and
 * then exits (the rebalance stays running, to resume).
 */
static void
on_sigterm(SIGNAL_ARGS)
{
	int			save_errno = errno;

	got_sigterm = true;
	if (!engine_running)
		die(postgres_signal_arg);
	SetLatch(MyLatch);
	errno = save_errno;
}

/*
 * The launcher's SIGTERM: it only waits on its latch, and it exits with 0
 * (a stopped launcher is not restarted, a crashed one is).
 */
static void
on_launcher_sigterm(SIGNAL_ARGS)
{
	int			save_errno = errno;

	got_sigterm = true;
	SetLatch(MyLatch);
	errno = save_errno;
}

/*
 * Pins what the database's and the role's settings, applied at the
 * connection, could change: a database owner's search_path would find
 * its own operators first.  PGC_S_SESSION wins over them.
 */
static void
pin_session(void)
{
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_SESSION,
							 GUC_ACTION_SET, true, ERROR, false);
	(void) set_config_option("role", "none", PGC_SUSET, PGC_S_SESSION, GUC_ACTION_SET, true, ERROR, false);
}

static void
on_stop(SIGNAL_ARGS)
{
	int			save_errno = errno;

	got_stop = true;
	SetLatch(MyLatch);
	errno = save_errno;
}

/* ---- the engine's messages, from its threads to the log ---- */

#define QUEUE_SIZE 64
#define MESSAGE_SIZE 1024

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static char queue[QUEUE_SIZE][MESSAGE_SIZE];
static int	queued;
static int	dropped;
static char last_error[MESSAGE_SIZE];
static char last_error_steps[MESSAGE_SIZE];
static bool error_new;

/* report.c's hook: runs in the engine's threads, so it only copies */
static void
queue_message(const char *level, const char *steps, const char *message)
{
	char		line[MESSAGE_SIZE];
	char		batch[64] = "";

	/* "error: steps 3-40 (a batch of 12): ...", an "info" message without its level */
	if (steps != NULL && strchr(steps, ',') != NULL)
	{
		int			n = 1;

		for (const char *c = steps; *c; c++)
			n += *c == ',';
		snprintf(batch, sizeof(batch), "steps %d-%d (a batch of %d): ", atoi(steps + 1),
				 atoi(strrchr(steps, ',') + 1), n);
	}
	else if (steps != NULL)
		snprintf(batch, sizeof(batch), "step %d: ", atoi(steps + 1));
	snprintf(line, sizeof(line), "%s%s%s", strcmp(level, "info") == 0 ? "" : level,
			 strcmp(level, "info") == 0 ? "" : ": ", batch);
	strncat(line, message, sizeof(line) - strlen(line) - 1);
	pthread_mutex_lock(&queue_lock);
	if (queued < QUEUE_SIZE)
		memcpy(queue[queued++], line, sizeof(line));
	else
		dropped++;
	if (strcmp(level, "error") == 0)
	{
		snprintf(last_error, sizeof(last_error), "%s", message);
		snprintf(last_error_steps, sizeof(last_error_steps), "%s", steps ? steps : "");
		error_new = true;
	}
	else if (strcmp(level, "detail") == 0 && error_new)
	{
		/* the error's detail belongs to it */
		strncat(last_error, " ", sizeof(last_error) - strlen(last_error) - 1);
		strncat(last_error, message, sizeof(last_error) - strlen(last_error) - 1);
	}
	pthread_mutex_unlock(&queue_lock);
}

static void
drain_messages(const char *directory)
{
	char		copy[QUEUE_SIZE][MESSAGE_SIZE];
	int			n,
				lost;

	pthread_mutex_lock(&queue_lock);
	n = queued;
	lost = dropped;
	memcpy(copy, queue, n * MESSAGE_SIZE);
	queued = dropped = 0;
	pthread_mutex_unlock(&queue_lock);
	for (int i = 0; i < n; i++)
		ereport(LOG, (errmsg("rebalance of directory \"%s\": %s", directory, copy[i])));
	if (lost > 0)
		ereport(LOG, (errmsg("rebalance of directory \"%s\": %d more messages were not logged", directory, lost)));
}

/* ---- the engine's thread ---- */

static volatile bool engine_ended = false;
static int	engine_status;

static void *
engine_main(void *arg)
{
	engine_status = mover_run("chash_rebalance");
	__atomic_store_n(&engine_ended, true, __ATOMIC_SEQ_CST);
	return NULL;
}

/* ---- chash_rebalance, through SPI ---- */

static const char *schema;		/* chash's, quoted */
static Oid	extension_owner;

/* chash's schema and owner, NULL when chash (1.2 or later) is not installed; with SPI connected */
static const char *
find_extension(void)
{
	bool		isnull;

	if (schema != NULL)
		return schema;
	if (SPI_execute("SELECT pg_catalog.quote_ident(n.nspname), e.extowner "
					"FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n "
					"  ON n.oid OPERATOR(pg_catalog.=) e.extnamespace "
					"WHERE e.extname OPERATOR(pg_catalog.=) 'chash' "
					"  AND EXISTS (SELECT FROM pg_catalog.pg_class c "
					"              WHERE c.relnamespace OPERATOR(pg_catalog.=) e.extnamespace "
					"                AND c.relname OPERATOR(pg_catalog.=) 'chash_rebalance')", true, 1) != SPI_OK_SELECT
		|| SPI_processed != 1)
		return NULL;
	extension_owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	schema = MemoryContextStrdup(TopMemoryContext,
								 SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
	return schema;
}

/*
 * Runs a statement on chash_rebalance in a transaction of its own, as the
 * extension's owner (no other role writes it) in a restricted security
 * context; the first row's text values.  Its objects and operators are
 * qualified, its search_path pinned (pin_session).
 */
static char **
row_statement(const char *sql, int nargs, Oid *types, Datum *values, const char *nulls, int *ncolumns)
{
	char	  **result = NULL;
	int			level;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	/* the worker is a superuser: no database or role setting picks its operators */
	level = chash_pin_search_path();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	if (find_extension() != NULL)
	{
		Oid			save_user;
		int			save_context;

		GetUserIdAndSecContext(&save_user, &save_context);
		SetUserIdAndSecContext(extension_owner,
							   save_context | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
		SPI_execute_with_args(psprintf(sql, schema), nargs, types, values, nulls, false, 0);
		SetUserIdAndSecContext(save_user, save_context);
		if (SPI_tuptable != NULL && SPI_processed > 0)
		{
			TupleDesc	desc = SPI_tuptable->tupdesc;

			*ncolumns = desc->natts;
			result = MemoryContextAllocZero(TopMemoryContext, desc->natts * sizeof(char *));
			for (int i = 0; i < desc->natts; i++)
			{
				char	   *v = SPI_getvalue(SPI_tuptable->vals[0], desc, i + 1);

				result[i] = v ? MemoryContextStrdup(TopMemoryContext, v) : NULL;
			}
		}
	}
	SPI_finish();
	AtEOXact_GUC(true, level);
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
	return result;
}

/* "{3,4}" of the engine's messages as an int[] value, NULL for none */
static Datum
steps_datum(const char *steps, char *isnull)
{
	*isnull = steps[0] == '\0' ? 'n' : ' ';
	return steps[0] == '\0' ? (Datum) 0 : CStringGetTextDatum(steps);
}

/*
 * Records the figures and returns the state as chash_rebalance has it
 * now, NULL when a later start has taken the rebalance over (or it is
 * gone).
 */
static char *
record_status(const char *directory, int run, long long rows_before, double started)
{
	long long	steps,
				rows,
				bytes;
	double		elapsed = (GetCurrentTimestamp() / 1e6) - started;
	Oid			types[7] = {TEXTOID, INT4OID, INT8OID, FLOAT8OID, TEXTOID, TEXTOID, BOOLOID};
	Datum		values[7];
	char		nulls[7] = {' ', ' ', ' ', ' ', 'n', 'n', ' '};
	char	  **row;
	int			n;

	mover_counts(&steps, &rows, &bytes);
	values[0] = CStringGetTextDatum(directory);
	values[1] = Int32GetDatum(run);
	values[2] = Int64GetDatum(rows_before + rows);
	values[3] = Float8GetDatum(elapsed > 0 ? rows / elapsed : 0);
	values[6] = BoolGetDatum(got_stop);
	pthread_mutex_lock(&queue_lock);
	if (error_new)
	{
		values[4] = CStringGetTextDatum(last_error);
		nulls[4] = ' ';
		values[5] = steps_datum(last_error_steps, &nulls[5]);
		error_new = false;
	}
	pthread_mutex_unlock(&queue_lock);
	row = row_statement("UPDATE %s.chash_rebalance SET rows_moved = $3, rows_per_second = $4, "
						"  last_error = CASE WHEN $5::pg_catalog.text IS NULL THEN last_error ELSE $5 END, "
						"  last_error_steps = CASE WHEN $5::pg_catalog.text IS NULL THEN last_error_steps ELSE $6::pg_catalog.int4[] END, "
						"  state = CASE WHEN state OPERATOR(pg_catalog.=) 'running' AND $7 THEN 'stopping' ELSE state END, "
						"  updated_at = pg_catalog.now() "
						"WHERE directory OPERATOR(pg_catalog.=) $1 AND run OPERATOR(pg_catalog.=) $2 RETURNING state",
						7, types, values, nulls, &n);
	return row ? row[0] : NULL;
}

static void
release_jobs(int code, Datum arg)
{
	rebalance_jobs_release(DatumGetInt32(arg));
}

/* Waits for a started transaction to end, with a lock wait the server sees. */
static void
wait_for_start(TransactionId xid)
{
	if (!TransactionIdIsValid(xid))
		return;
	StartTransactionCommand();
	XactLockTableWait(xid, NULL, NULL, XLTW_None);
	CommitTransactionCommand();
}

/* "port=5432 ... host='/run/postgresql' dbname='x' user='y'", then chash.rebalance_conninfo */
static char *
directory_conninfo(const char *role)
{
	StringInfoData s;
	char	   *socket = pstrdup(Unix_socket_directories ? Unix_socket_directories : "");
	char	   *comma = strchr(socket, ',');
	const char *parts[3][2];

	if (comma)
		*comma = '\0';
	parts[0][0] = "host";
	parts[0][1] = socket[0] ? socket : "localhost";
	parts[1][0] = "dbname";
	StartTransactionCommand();
	parts[1][1] = MemoryContextStrdup(TopMemoryContext, get_database_name(MyDatabaseId));
	CommitTransactionCommand();
	parts[2][0] = "user";
	parts[2][1] = role;
	initStringInfo(&s);
	/* application_name: the steps' claimed_by tells the rebalance's claims from chash_move's */
	appendStringInfo(&s, "port=%d application_name=chash_rebalance", PostPortNumber);
	for (int i = 0; i < 3; i++)
	{
		appendStringInfo(&s, " %s='", parts[i][0]);
		for (const char *c = parts[i][1]; *c; c++)
		{
			if (*c == '\'' || *c == '\\')
				appendStringInfoChar(&s, '\\');
			appendStringInfoChar(&s, *c);
		}
		appendStringInfoChar(&s, '\'');
	}
	if (chash_rebalance_conninfo && chash_rebalance_conninfo[0])
		appendStringInfo(&s, " %s", chash_rebalance_conninfo);
	return MemoryContextStrdup(TopMemoryContext, s.data);
}

/* A live background worker of this database: the pid recorded is no other process's. */
static bool
worker_alive(const char *pid)
{
	PGPROC	   *proc = pid ? BackendPidGetProc(atoi(pid)) : NULL;

	return proc != NULL && proc->isBackgroundWorker && proc->databaseId == MyDatabaseId;
}

/* Records that the rebalance's run ended failed, with why as its last error. */
static void
record_failed(const char *directory, int run, const char *why)
{
	Oid			types[3] = {TEXTOID, INT4OID, TEXTOID};
	Datum		values[3] = {CStringGetTextDatum(directory), Int32GetDatum(run), CStringGetTextDatum(why)};
	int			n;

	row_statement("UPDATE %s.chash_rebalance SET state = 'failed', worker_pid = NULL, last_error = $3, "
				  "  last_error_steps = NULL, updated_at = pg_catalog.now() "
				  "WHERE directory OPERATOR(pg_catalog.=) $1 AND run OPERATOR(pg_catalog.=) $2 "
				  "  AND state OPERATOR(pg_catalog.=) ANY (ARRAY['running', 'stopping'])",
				  3, types, values, NULL, &n);
}

/*
 * Whether the rebalance may not run as role (named rolename): then it
 * says why in the log and records the rebalance failed with the reason.
 * what: "resumed" (the resumer) or "started" (its worker).
 */
static bool
refuse_role(const char *directory, int run, const char *rolename, Oid role, const char *what)
{
	char	   *why;

	StartTransactionCommand();
	why = !OidIsValid(role) ? psprintf("role \"%s\" does not exist", rolename) : rebalance_role_refusal(role);
	why = why ? MemoryContextStrdup(TopMemoryContext, why) : NULL;
	CommitTransactionCommand();
	if (why == NULL)
		return false;
	ereport(WARNING,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("rebalance of directory \"%s\" not %s", directory, what),
			 errdetail("Its workers act as the role that started it, and %s.", why),
			 errhint("Start it again as a role that may log in and is a member of chash_mover.")));
	record_failed(directory, run, psprintf("not %s: %s", what, why));
	return true;
}

/*
 * The database's resumer: a worker for every running rebalance, after a
 * start of the server, as the role that started it when that role still
 * may (else the rebalance fails, saying why); none for a rebalance whose
 * worker is alive, so that a resumer started twice starts no second one.
 */
static void
resume_all(void)
{
	char	   *after = "";
	int			n;

	/* the stops the restart interrupted have ended: their workers are gone */
	row_statement("UPDATE %s.chash_rebalance SET state = 'stopped', worker_pid = NULL "
				  "WHERE state OPERATOR(pg_catalog.=) 'stopping'", 0, NULL, NULL, NULL, &n);
	for (;;)
	{
		Oid			types[1] = {TEXTOID};
		Datum		values[1] = {CStringGetTextDatum(after)};
		char	  **row;
		RebalanceArgs args = {0};

		CHECK_FOR_INTERRUPTS();
		row = row_statement("SELECT directory, run, role, worker_pid FROM %s.chash_rebalance "
							"WHERE state OPERATOR(pg_catalog.=) 'running' "
							"  AND directory OPERATOR(pg_catalog.>) $1 COLLATE pg_catalog.\"C\" "
							"ORDER BY directory COLLATE pg_catalog.\"C\" LIMIT 1", 1, types, values, NULL, &n);
		if (row == NULL)
			break;
		after = row[0];
		args.run = atoi(row[1]);
		strlcpy(args.directory, row[0], sizeof(args.directory));
		if (worker_alive(row[3]))
			continue;
		StartTransactionCommand();
		args.role = get_role_oid(row[2], true);
		CommitTransactionCommand();
		if (refuse_role(args.directory, args.run, row[2], args.role, "resumed"))
			continue;
		ereport(LOG, (errmsg("resuming the rebalance of directory \"%s\" as role \"%s\"", args.directory, row[2])));
		rebalance_register(MyDatabaseId, &args, false, NULL);
	}
}

void
chash_rebalance_worker_main(Datum arg)
{
	RebalanceArgs args;
	Oid			types[7] = {TEXTOID, INT4OID, INT4OID, INT4OID, INT8OID, FLOAT8OID, TEXTOID};
	Datum		values[7];
	char	  **row;
	int			n;
	int			jobs = 0;
	long long	migration_id,
				rows_before,
				max_rate;
	int			max_parallel;
	double		started;
	double		next_status = 0;
	bool		waiting_said = false;
	pthread_t	engine;
	sigset_t	all,
				old;
	const char *final;

	memcpy(&args, MyBgworkerEntry->bgw_extra, sizeof(args));
	pqsignal(SIGTERM, on_sigterm);
	pqsignal(SIGUSR2, on_stop);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	if (args.run == 0)
	{
		/* the resumer reads chash_rebalance, and runs no code of any role */
		BackgroundWorkerInitializeConnectionByOid(DatumGetObjectId(arg), InvalidOid, 0);
		pin_session();
		resume_all();
		proc_exit(0);
	}
	/* the worker acts as the role that started the rebalance, never as the bootstrap superuser */
	if (!OidIsValid(args.role))
		elog(FATAL, "rebalance of directory \"%s\" has no role", args.directory);
	BackgroundWorkerInitializeConnectionByOid(DatumGetObjectId(arg), args.role, 0);
	pin_session();
	wait_for_start(args.xid);

	/* this run's row, claimed: NULL when it was rolled back, stopped or taken over */
	values[0] = CStringGetTextDatum(args.directory);
	values[1] = Int32GetDatum(args.run);
	values[2] = Int32GetDatum(MyProcPid);
	row = row_statement("UPDATE %s.chash_rebalance SET worker_pid = $3, updated_at = pg_catalog.now() "
						"WHERE directory OPERATOR(pg_catalog.=) $1 AND run OPERATOR(pg_catalog.=) $2 "
						"  AND state OPERATOR(pg_catalog.=) 'running' "
						"RETURNING migration, max_parallel, rows_moved, role, max_rate",
						3, types, values, NULL, &n);
	if (row == NULL)
		proc_exit(0);
	/* the role may have lost what it needs since the start (or since the resumer looked) */
	if (refuse_role(args.directory, args.run, row[3], GetSessionUserId(), "started"))
		proc_exit(0);
	migration_id = atoll(row[0]);
	max_parallel = atoi(row[1]);
	rows_before = atoll(row[2]);
	max_rate = row[4] ? atoll(row[4]) : 0;	/* NULL: no bound */

	/* the jobs of chash.max_rebalance_jobs, waiting while none is free */
	for (;;)
	{
		if ((jobs = rebalance_jobs_reserve(max_parallel)) > 0)
			break;
		if (!waiting_said)
			ereport(LOG, (errmsg("rebalance of directory \"%s\" waits for a free job", args.directory),
						  errdetail("The rebalances of this server move chash.max_rebalance_jobs = %d batches at once.",
									chash_max_rebalance_jobs)));
		waiting_said = true;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1000, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (got_sigterm)
			proc_exit(0);
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (got_stop || record_status(args.directory, args.run, rows_before, GetCurrentTimestamp() / 1e6) == NULL)
			break;
	}
	if (jobs == 0)
	{
		row_statement("UPDATE %s.chash_rebalance SET state = 'stopped', worker_pid = NULL, updated_at = pg_catalog.now() "
					  "WHERE directory OPERATOR(pg_catalog.=) $1 AND run OPERATOR(pg_catalog.=) $2 "
					  "  AND state OPERATOR(pg_catalog.=) ANY (ARRAY['running', 'stopping'])",
					  2, types, values, NULL, &n);
		proc_exit(0);
	}
	on_shmem_exit(release_jobs, Int32GetDatum(jobs));
	values[2] = Int32GetDatum(jobs);
	row_statement("UPDATE %s.chash_rebalance SET jobs = $3 "
				  "WHERE directory OPERATOR(pg_catalog.=) $1 AND run OPERATOR(pg_catalog.=) $2",
				  3, types, values, NULL, &n);

	options.migration = migration_id;
	options.jobs = jobs;
	options.lease_seconds = chash_rebalance_lease;
	options.online = chash_rebalance_online;
	options.batch_rows = chash_rebalance_batch_rows;
	options.max_rate = max_rate;	/* rows a second across the jobs, as --max-rate */
	options.max_lag = (long long) chash_rebalance_max_lag * 1024;
	/* a batch size set for this server wins over max_rate's half a second of rows, as --batch-rows does */
	options.batch_rows_given = chash_rebalance_batch_rows != REBALANCE_BATCH_ROWS_DEFAULT;
	options_throttle_batches();
	{
		char	   *role;

		StartTransactionCommand();
		role = MemoryContextStrdup(TopMemoryContext, GetUserNameFromId(GetSessionUserId(), false));
		/* its connections act for the role that started it (docs/shards.md, "Server-side connections") */
		options.on_behalf_superuser = superuser_arg(GetSessionUserId());
		CommitTransactionCommand();
		options.conninfo = directory_conninfo(role);
		options.on_behalf_of = role;
	}
	report_hook = queue_message;
	started = GetCurrentTimestamp() / 1e6;
	ereport(LOG, (errmsg("rebalance of directory \"%s\": moving migration %lld with %d jobs",
						 args.directory, migration_id, jobs)));

	/* the engine's threads: every signal blocked, so the server's handlers run in this thread only */
	engine_running = true;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&engine, NULL, engine_main, NULL) != 0)
		elog(ERROR, "could not start the rebalance's thread: %m");
	pthread_sigmask(SIG_SETMASK, &old, NULL);

	while (!__atomic_load_n(&engine_ended, __ATOMIC_SEQ_CST))
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 200, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		drain_messages(args.directory);
		/* a shutdown interrupts the batches (they resume); a stop lets them finish */
		if (got_sigterm)
			stop_requested = 1;
		if (got_stop)
			stop_claiming = 1;
		if (GetCurrentTimestamp() / 1e6 >= next_status)
		{
			char	   *state;

			if (ConfigReloadPending)
			{
				ConfigReloadPending = false;
				ProcessConfigFile(PGC_SIGHUP);
				/* the engine's jobs read the bound at each fence */
				__atomic_store_n(&options.max_lag, (long long) chash_rebalance_max_lag * 1024, __ATOMIC_RELAXED);
			}
			state = record_status(args.directory, args.run, rows_before, started);
			if (state == NULL || strcmp(state, "running") != 0)
				stop_claiming = 1;
			next_status = GetCurrentTimestamp() / 1e6 + 1;
		}
	}
	pthread_join(engine, NULL);
	drain_messages(args.directory);
	record_status(args.directory, args.run, rows_before, started);

	/*
	 * How it ended: a server shutdown leaves it running, to resume at the
	 * next start; a stop or a later start stops it; the engine says done
	 * or failed.
	 */
	if (engine_status == 0)
		final = "done";
	else if (got_sigterm)
		final = "running";
	else if (stop_claiming || stop_requested)
		final = "stopped";
	else
		final = "failed";
	values[2] = Int32GetDatum(0);
	values[3] = Int32GetDatum(0);
	values[4] = Int64GetDatum(0);
	values[5] = Float8GetDatum(0);
	values[6] = CStringGetTextDatum(final);
	row_statement("UPDATE %1$s.chash_rebalance r SET "
				  "  state = CASE WHEN $7 OPERATOR(pg_catalog.=) 'done' AND m.status OPERATOR(pg_catalog.<>) 'done' "
				  "    THEN 'stopped' ELSE $7 END, "
				  "  worker_pid = NULL, updated_at = pg_catalog.now() "
				  "  FROM %1$s.chash_migration m "
				  "WHERE r.directory OPERATOR(pg_catalog.=) $1 AND r.run OPERATOR(pg_catalog.=) $2 "
				  "  AND m.id OPERATOR(pg_catalog.=) r.migration "
				  "  AND r.state OPERATOR(pg_catalog.=) ANY (ARRAY['running', 'stopping'])",
				  7, types, values, NULL, &n);
	ereport(LOG, (errmsg("rebalance of directory \"%s\": %s", args.directory,
						 strcmp(final, "running") == 0 ? "interrupted by the server's shutdown" : final)));
	proc_exit(0);
}

/*
 * The databases the launcher looks into: every one that allows
 * connections and is no template (a session in a template would make a
 * CREATE DATABASE from it fail).  From pg_database, which is WAL-logged,
 * so a standby promoted finds what its primary had (a file of the data
 * directory, which chash kept once, is not).
 */
static List *
connectable_databases(void)
{
	List	   *databases = NIL;
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tuple;

	StartTransactionCommand();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while ((tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database form = (Form_pg_database) GETSTRUCT(tuple);
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		if (form->datallowconn && !form->datistemplate)
			databases = lappend_oid(databases, form->oid);
		MemoryContextSwitchTo(old);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	return databases;
}

/*
 * The launcher: at every start of the server (a promotion, a crash
 * restart), a resumer in each database that allows connections, one after
 * the other; a database without chash's rebalances has its resumer exit
 * at once.  Then it idles, so that the postmaster starts it again after a
 * crash.  A shutdown's SIGTERM ends it at any of its waits.
 *
 * (It kept no handle of a file or a directory across a transaction: a
 * transaction's end closes those (AtEOXact_Files), and a launcher that
 * read a closed directory listing once hung the server's shutdown.)
 */
void
chash_rebalance_launcher_main(Datum arg)
{
	ListCell   *lc;
	List	   *databases;

	pqsignal(SIGTERM, on_launcher_sigterm);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	databases = connectable_databases();
	foreach(lc, databases)
	{
		RebalanceArgs args = {0};
		BackgroundWorkerHandle *handle;
		pid_t		pid;

		if (got_sigterm)
			proc_exit(0);
		if (!rebalance_register(lfirst_oid(lc), &args, false, &handle))
			continue;
		/* one resumer at a time: they take a worker slot each */
		while (GetBackgroundWorkerPid(handle, &pid) != BGWH_STOPPED)
		{
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1000, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			if (got_sigterm)
				proc_exit(0);
		}
	}
	while (!got_sigterm)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_EXIT_ON_PM_DEATH, -1L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	proc_exit(0);
}
