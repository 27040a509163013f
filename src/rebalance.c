/*
 * rebalance.c - the background rebalance's glue (docs/shards.md,
 * "Background rebalancing"): its settings, the cap on the jobs of all
 * rebalances of the server (shared memory), the launcher registered at
 * server start, and the SQL functions chash_rebalance_start and chash_rebalance_stop (the
 * record of a run is written as the extension's owner, inside them: no
 * internal SQL function of theirs is anybody's to call).  The worker
 * itself, which runs the mover's engine, is rebalance_worker.c.
 */
#include "chash.h"

#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/wait_event.h"
#include "utils/syscache.h"

#include "rebalance.h"

PG_FUNCTION_INFO_V1(chash_rebalance_start);
PG_FUNCTION_INFO_V1(chash_rebalance_stop);

char	   *chash_rebalance_conninfo = NULL;
int			chash_max_rebalance_jobs = 8;
int			chash_rebalance_lease = 30;
int			chash_rebalance_batch_rows = REBALANCE_BATCH_ROWS_DEFAULT;
bool		chash_rebalance_online = false;
int			chash_rebalance_max_lag = 16384; /* kB */

static bool preloaded = false;

typedef struct RebalanceShared
{
	slock_t		mutex;
	int			jobs;			/* reserved by the running workers */
} RebalanceShared;

static RebalanceShared *shared;
static shmem_request_hook_type previous_shmem_request = NULL;
static shmem_startup_hook_type previous_shmem_startup = NULL;

static void
rebalance_shmem_request(void)
{
	if (previous_shmem_request != NULL)
		previous_shmem_request();
	RequestAddinShmemSpace(MAXALIGN(sizeof(RebalanceShared)));
}

static void
rebalance_shmem_startup(void)
{
	bool		found;

	if (previous_shmem_startup != NULL)
		previous_shmem_startup();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared = ShmemInitStruct("chash_rebalance", sizeof(RebalanceShared), &found);
	if (!found)
	{
		SpinLockInit(&shared->mutex);
		shared->jobs = 0;
	}
	LWLockRelease(AddinShmemInitLock);
}

/* Up to want jobs of chash.max_rebalance_jobs, 0 when none is free. */
int
rebalance_jobs_reserve(int want)
{
	int			got;

	SpinLockAcquire(&shared->mutex);
	got = Min(want, chash_max_rebalance_jobs - shared->jobs);
	if (got < 0)
		got = 0;
	shared->jobs += got;
	SpinLockRelease(&shared->mutex);
	return got;
}

void
rebalance_jobs_release(int n)
{
	SpinLockAcquire(&shared->mutex);
	shared->jobs -= n;
	SpinLockRelease(&shared->mutex);
}

void
rebalance_init(void)
{
	BackgroundWorker worker = {0};

	DefineCustomStringVariable("chash.rebalance_conninfo",
							   "Connection options of the background rebalance's workers to the directory database.",
							   "Added after the local socket, the database and the role that started the rebalance, so they may override them.",
							   &chash_rebalance_conninfo, "", PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("chash.max_rebalance_jobs",
							"The most batches all background rebalances of this server move at once.",
							"A rebalance's worker takes max_parallel jobs, or as many as are free.",
							&chash_max_rebalance_jobs, 8, 1, 1024, PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("chash.rebalance_lease",
							"How long a background rebalance's step stays held without renewal.",
							"A killed worker's batch is taken over once its lease has expired.",
							&chash_rebalance_lease, 30, 1, 86400, PGC_SIGHUP, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomIntVariable("chash.rebalance_batch_rows",
							"The rows a background rebalance's batch aims at (chash_move --batch-rows).",
							"A batch blocks the writes of its slots or tenants while it copies; 0 for no bound.",
							&chash_rebalance_batch_rows, REBALANCE_BATCH_ROWS_DEFAULT, 0, INT_MAX, PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("chash.rebalance_online",
							 "Makes the background rebalance move steps by logical replication where it can (chash_move --online).",
							 NULL,
							 &chash_rebalance_online, false, PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("chash.rebalance_max_lag",
							"A background rebalance fences no batch while its source's or target's replica of the directory lags by more than this (chash_move --max-lag).",
							"The lag is the directory's WAL the shard's subscription has not confirmed; 0 for no bound.",
							&chash_rebalance_max_lag, 16384, 0, INT_MAX, PGC_SIGHUP, GUC_UNIT_KB, NULL, NULL, NULL);
	if (!process_shared_preload_libraries_in_progress)
		return;
	preloaded = true;
	previous_shmem_request = shmem_request_hook;
	shmem_request_hook = rebalance_shmem_request;
	previous_shmem_startup = shmem_startup_hook;
	shmem_startup_hook = rebalance_shmem_startup;

	/* the launcher: resumes the running rebalances after every start of the server */
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 10;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "chash");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "chash_rebalance_launcher_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "chash rebalance launcher");
	snprintf(worker.bgw_type, BGW_MAXLEN, "chash rebalance launcher");
	RegisterBackgroundWorker(&worker);
}

/*
 * Starts a worker for the database: a rebalance's run, or the resumer (run
 * 0).  must: an error when no worker slot is free, else a warning.
 * handle: when not NULL, the worker's, and this process is signalled when
 * it stops.
 */
bool
rebalance_register(Oid database, const RebalanceArgs *args, bool must, BackgroundWorkerHandle **handle)
{
	BackgroundWorker worker = {0};
	BackgroundWorkerHandle *ignored;

	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "chash");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "chash_rebalance_worker_main");
	if (args->run == 0)
		snprintf(worker.bgw_name, BGW_MAXLEN, "chash rebalance resumer");
	else
		snprintf(worker.bgw_name, BGW_MAXLEN, "chash rebalance of \"%.*s\"", BGW_MAXLEN - 32, args->directory);
	snprintf(worker.bgw_type, BGW_MAXLEN, REBALANCE_WORKER_TYPE);
	worker.bgw_main_arg = ObjectIdGetDatum(database);
	memcpy(worker.bgw_extra, args, sizeof(RebalanceArgs));
	/* a caller that waits for the worker is told when it stops */
	worker.bgw_notify_pid = handle ? MyProcPid : 0;
	if (RegisterDynamicBackgroundWorker(&worker, handle ? handle : &ignored))
		return true;
	ereport(must ? ERROR : WARNING,
			(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			 errmsg("could not start a background worker for the rebalance"),
			 errdetail("Every background worker slot of the server is in use."),
			 errhint("Raise max_worker_processes.")));
	return false;
}

/* chash's schema in this database, quoted; called with SPI connected */
char *
rebalance_schema(void)
{
	int			level = chash_pin_search_path();
	char	   *schema = NULL;

	/* the schema the owner's statements name: no operator of the caller's decides it */
	if (SPI_execute("SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_extension e "
					"JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace "
					"WHERE e.extname OPERATOR(pg_catalog.=) 'chash'",
					true, 1) == SPI_OK_SELECT && SPI_processed == 1)
		schema = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	AtEOXact_GUC(true, level);
	return schema;
}

/* Who may run rebalances: the workers connect as this role, which the mover's rights need. */
static void
check_mover_role(void)
{
	Oid			mover = get_role_oid("chash_mover", true);

	if (!superuser() && (!OidIsValid(mover) || !has_privs_of_role(GetUserId(), mover)))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to run a background rebalance"),
				 errdetail("Its workers connect to the directory database and the shards as role \"%s\", which is not a member of chash_mover.",
						   GetUserNameFromId(GetUserId(), false)),
				 errhint("Grant chash_mover to the role, or start the rebalance as one that has it.")));
}

/*
 * Why role may not be a rebalance's workers' session user, NULL when it
 * may: it exists, may log in, and is a superuser or has chash_mover's
 * privileges.  In a transaction.  The start checks it for the role that
 * starts, and a resume again: the role may have lost it since.
 */
char *
rebalance_role_refusal(Oid role)
{
	HeapTuple	tuple = SearchSysCache1(AUTHOID, ObjectIdGetDatum(role));
	Form_pg_authid form;
	Oid			mover = get_role_oid("chash_mover", true);
	char	   *why = NULL;

	if (!HeapTupleIsValid(tuple))
		return psprintf("role %u does not exist", role);
	form = (Form_pg_authid) GETSTRUCT(tuple);
	if (!form->rolcanlogin)
		why = psprintf("role \"%s\" may not log in", NameStr(form->rolname));
	else if (!form->rolsuper && (!OidIsValid(mover) || !has_privs_of_role(role, mover)))
		why = psprintf("role \"%s\" is not a member of chash_mover", NameStr(form->rolname));
	ReleaseSysCache(tuple);
	return why;
}

/*
 * chash_rebalance's row written as the extension's owner (no role writes
 * it directly).  Raised rights run no code the caller controls: the
 * search_path is pinned for the statement, as PostgreSQL pins it for a
 * SECURITY DEFINER function's own SET, and every operator of the
 * statements is pg_catalog's, qualified.
 */
static int
as_owner(const char *sql, int nargs, Oid *types, Datum *values, const char *nulls)
{
	Oid			save_user;
	int			save_context;
	int			level = chash_pin_search_path();
	int			rc;

	if (SPI_execute("SELECT e.extowner FROM pg_catalog.pg_extension e "
					"WHERE e.extname OPERATOR(pg_catalog.=) 'chash'", true, 1) != SPI_OK_SELECT
		|| SPI_processed != 1)
		elog(ERROR, "extension chash is not installed");
	GetUserIdAndSecContext(&save_user, &save_context);
	SetUserIdAndSecContext(DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &(bool){false})),
						   save_context | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
	rc = SPI_execute_with_args(sql, nargs, types, values, nulls, false, 0);
	SetUserIdAndSecContext(save_user, save_context);
	AtEOXact_GUC(true, level);
	return rc;
}

/*
 * Records a run of the rebalance of directory for the current role and
 * starts its worker when the transaction commits (SPI connected).
 */
static void
launch(text *directory, const char *schema, Datum migration, Datum max_parallel, bool rate_null, Datum max_rate)
{
	RebalanceArgs args = {0};
	char	   *name = text_to_cstring(directory);
	Oid			types[5] = {TEXTOID, INT8OID, INT4OID, INT8OID, NAMEOID};
	Datum		values[5];
	char		nulls[5] = {' ', ' ', ' ', rate_null ? 'n' : ' ', ' '};
	bool		isnull;

	if (!preloaded)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("background rebalancing needs chash in shared_preload_libraries"),
				 errdetail("The rebalance's workers are background workers of the directory server, which only a preloaded library can start."),
				 errhint("Add chash to shared_preload_libraries on the directory server and restart it, or move the migration with chash_move.")));
	if (strlen(name) >= sizeof(args.directory))
		ereport(ERROR, (errcode(ERRCODE_NAME_TOO_LONG),
						errmsg("directory name \"%.*s\" is too long for a background rebalance", chash_quote_len(name, strlen(name)), name),
						errdetail("A background rebalance takes directory names of at most %d bytes.", (int) sizeof(args.directory) - 1)));

	values[0] = PointerGetDatum(directory);
	values[1] = migration;
	values[2] = max_parallel;
	values[3] = rate_null ? (Datum) 0 : max_rate;
	values[4] = CStringGetDatum(GetUserNameFromId(GetUserId(), false));
	values[4] = DirectFunctionCall1(namein, values[4]);
	/* a new run: the figures go on when it is the same migration */
	if (as_owner(psprintf("INSERT INTO %1$s.chash_rebalance AS r (directory, migration, max_parallel, max_rate, role) "
						  "VALUES ($1, $2, $3, $4, $5) "
						  "ON CONFLICT (directory) DO UPDATE SET migration = $2, run = r.run OPERATOR(pg_catalog.+) 1, state = 'running', "
						  "  max_parallel = $3, max_rate = $4, role = $5, worker_pid = NULL, jobs = NULL, "
						  "  rows_moved = CASE WHEN r.migration OPERATOR(pg_catalog.=) $2 THEN r.rows_moved ELSE 0 END, "
						  "  rows_per_second = NULL, started_at = pg_catalog.now(), updated_at = pg_catalog.now(), "
						  "  last_error = NULL, last_error_steps = NULL "
						  "RETURNING r.run", schema),
				 5, types, values, nulls) != SPI_OK_INSERT_RETURNING || SPI_processed != 1)
		elog(ERROR, "could not record the rebalance of \"%s\"", name);
	args.run = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

	/* the worker waits for this transaction: it sees the row once it commits, none if it aborts */
	args.xid = GetTopTransactionId();
	args.role = GetUserId();
	strlcpy(args.directory, name, sizeof(args.directory));
	rebalance_register(MyDatabaseId, &args, true, NULL);
}

/*
 * chash_rebalance_start(directory, mode, max_parallel, max_rate): plans a
 * migration (or takes over the running one) and launches its worker.
 * The plan is made with the caller's rights, as chash_migration_start
 * alone would be; only the record of the run is written as the
 * extension's owner, and no SQL function of the launch is anybody's to
 * call on its own.
 */
Datum
chash_rebalance_start(PG_FUNCTION_ARGS)
{
	text	   *directory;
	char	   *schema;
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		values[2];
	Datum		migration;
	bool		isnull;
	int			level;

	chash_require_args(fcinfo, "directory", "mode", "max_parallel", NULL);
	if (PG_GETARG_INT32(2) < 1 || PG_GETARG_INT32(2) > 64)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("max_parallel must be between 1 and 64")));
	if (!PG_ARGISNULL(3) && PG_GETARG_INT64(3) <= 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("max_rate must be positive"),
						errhint("Pass NULL for no limit.")));
	/* before anything is planned */
	check_mover_role();
	{
		/* the workers' session user is this role: a role set with SET ROLE must log in itself */
		char	   *why = rebalance_role_refusal(GetUserId());

		if (why != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to run a background rebalance"),
					 errdetail("Its workers connect to the directory database and the shards as role \"%s\": %s.",
							   GetUserNameFromId(GetUserId(), false), why),
					 errhint("Start the rebalance as a role that may log in and is a member of chash_mover.")));
	}
	directory = PG_GETARG_TEXT_PP(0);
	values[0] = PointerGetDatum(directory);
	values[1] = PG_GETARG_DATUM(1);

	level = chash_pin_search_path();
	SPI_connect();
	if ((schema = rebalance_schema()) == NULL)
		elog(ERROR, "extension chash is not installed");
	SPI_execute_with_args(psprintf("SELECT %s.chash_migration_lock_directory($1)", schema),
						  1, types, values, NULL, false, 0);
	/* the running migration, taken over, or a new one of the plan */
	if (SPI_execute_with_args(psprintf("SELECT m.id FROM %s.chash_migration m "
									   "WHERE m.directory OPERATOR(pg_catalog.=) $1 "
									   "AND m.status OPERATOR(pg_catalog.=) 'running'", schema),
							  1, types, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the migrations of the directory");
	if (SPI_processed == 0)
		SPI_execute_with_args(psprintf("SELECT %s.chash_migration_start($1, $2)", schema),
							  2, types, values, NULL, false, 0);
	if (SPI_tuptable == NULL || SPI_processed != 1)
		elog(ERROR, "could not plan the migration of the directory");
	migration = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (isnull)
		elog(ERROR, "could not plan the migration of the directory");
	/* the plan was empty: nothing to move */
	types[0] = INT8OID;
	if (SPI_execute_with_args(psprintf("SELECT FROM %s.chash_migration m WHERE m.id OPERATOR(pg_catalog.=) $1 "
									   "AND m.status OPERATOR(pg_catalog.=) 'done'", schema),
							  1, types, &migration, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the migration of the directory");
	if (SPI_processed == 0)
		launch(directory, schema, migration, PG_GETARG_DATUM(2), PG_ARGISNULL(3),
			   PG_ARGISNULL(3) ? (Datum) 0 : PG_GETARG_DATUM(3));
	SPI_finish();
	AtEOXact_GUC(true, level);
	PG_RETURN_DATUM(migration);
}

/* A live background worker of this database: the pid recorded is no other process's. */
static bool
worker_alive(int pid)
{
	PGPROC	   *proc = BackendPidGetProc(pid);

	return proc != NULL && proc->isBackgroundWorker && proc->databaseId == MyDatabaseId;
}

/*
 * Signals the live worker of the rebalance of directory to stop and
 * returns "stopping", or records the rebalance stopped when no worker of
 * it runs; returns its state.
 */
static const char *
request_stop(text *directory)
{
	char	   *name = text_to_cstring(directory);
	Oid			types[1] = {TEXTOID};
	Datum		values[1];
	char	   *schema;
	char	   *state;
	bool		isnull;
	Datum		pid;

	values[0] = PointerGetDatum(directory);
	SPI_connect();
	if ((schema = rebalance_schema()) == NULL)
		elog(ERROR, "extension chash is not installed");
	if (as_owner(psprintf("SELECT r.state, r.worker_pid FROM %s.chash_rebalance r WHERE r.directory OPERATOR(pg_catalog.=) $1", schema),
				 1, types, values, NULL) != SPI_OK_SELECT)
		elog(ERROR, "could not read the rebalance of \"%s\"", name);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("directory \"%.*s\" has no rebalance", chash_quote_len(name, strlen(name)), name),
				 errhint("Start one with chash_rebalance_start().")));
	state = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	pid = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
	if (strcmp(state, "running") == 0 || strcmp(state, "stopping") == 0)
	{
		if (!isnull && worker_alive(DatumGetInt32(pid)))
		{
			/* the worker records "stopping" and then "stopped" itself */
			if (kill(DatumGetInt32(pid), SIGUSR2) == 0)
				state = "stopping";
		}
		else
		{
			/* no worker works on it (or one is starting, and finds it stopped) */
			if (as_owner(psprintf("UPDATE %s.chash_rebalance SET state = 'stopped', worker_pid = NULL, "
								  "updated_at = pg_catalog.now() WHERE directory OPERATOR(pg_catalog.=) $1", schema),
						 1, types, values, NULL) != SPI_OK_UPDATE)
				elog(ERROR, "could not record the rebalance of \"%s\" stopped", name);
			state = "stopped";
		}
	}
	state = strcpy(SPI_palloc(strlen(state) + 1), state);	/* outlives SPI's memory */
	SPI_finish();
	return state;
}

/*
 * chash_rebalance_stop(directory): the worker is signalled and records
 * its state itself; this waits until its process has ended.
 */
Datum
chash_rebalance_stop(PG_FUNCTION_ARGS)
{
	text	   *directory;

	chash_require_args(fcinfo, "directory", NULL);
	directory = PG_GETARG_TEXT_PP(0);
	check_mover_role();
	while (strcmp(request_stop(directory), "stopping") == 0)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 100, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	PG_RETURN_VOID();
}
