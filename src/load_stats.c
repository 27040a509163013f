/*
 * load_stats.c - load statistics on a shard (docs/load.md): counting in
 * shared memory, chash_slot_stats, chash_tenant_stats, chash_stats_reset
 *
 * With shared_preload_libraries = 'chash' a fixed block of shared memory
 * holds STATS_DIRECTORIES directories, each known by its database and its
 * name (a backend counts, reads and resets only its own database's: two
 * shard databases of one server may hold directories of one name), each
 * with STATS_SLOTS slot
 * counters and a top-K sketch of STATS_TENANTS tenants (load_sketch.h).
 * The hot path takes no lock: slot counters are atomic adds, and a
 * tenant's figures go to a small buffer of this backend, merged into the
 * sketch when a top-level statement ends under a conditional acquire of
 * the sketch's lock (a busy lock leaves them buffered for the next
 * statement; only a full buffer waits for it).  A statement is counted
 * for the first tenant the guard checks for it: the statement check in
 * ExecutorStart (reads, UPDATE, DELETE) or the row trigger (INSERT,
 * COPY); its executor time is the time spent in ExecutorRun.
 */
#include "chash.h"

#include <math.h>

#include "access/parallel.h"
#include "access/xact.h"
#include "executor/executor.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "load_sketch.h"
#include "load_stats.h"

PG_FUNCTION_INFO_V1(chash_slot_stats);
PG_FUNCTION_INFO_V1(chash_tenant_stats);
PG_FUNCTION_INFO_V1(chash_stats_reset);
PG_FUNCTION_INFO_V1(chash_stats_tracking);

/*
 * The memory stated in docs/load.md: 8 directories of 16,384 slots (a
 * directory of more slots has them folded modulo 16,384) and 1,024
 * tenants; about 5.3 MB in all.
 */
#define STATS_DIRECTORIES 8
#define STATS_SLOTS 16384
#define STATS_TENANTS 1024
/* A score's half-life: ten minutes of load outweigh an hour-old burst. */
#define STATS_HALF_LIFE 600.0
/* Seconds an event's time is rounded down to (a power of two: exact). */
#define STATS_TIME_STEP 0.125
/* Tenants buffered per backend before a merge must wait for the lock. */
#define PENDING_MAX 32
/* Nested statements tracked at once (deeper ones are not counted). */
#define NEST_MAX 16

typedef struct StatsSlot
{
	pg_atomic_uint64 reads;
	pg_atomic_uint64 writes;
	pg_atomic_uint64 rows;
	pg_atomic_uint64 time_ns;
} StatsSlot;

typedef struct StatsDirectory
{
	bool		in_use;			/* under the shared lock */
	Oid			dboid;			/* the database that counts it */
	uint64		name_hash;
	uint32		name_len;
	char		name[LOAD_KEY_MAX];
	TimestampTz since;
	StatsSlot	slots[STATS_SLOTS];
	/* the sketch follows, at sketch_offset */
} StatsDirectory;

typedef struct StatsShared
{
	LWLock	   *lock;			/* allocates and frees directories */
	LWLock	   *sketch_locks[STATS_DIRECTORIES];
	pg_atomic_uint32 epoch;		/* bumped when directories are freed */
} StatsShared;

static StatsShared *stats_shared = NULL;
static char *stats_base = NULL; /* the directories */
static bool chash_track_stats = true;

static shmem_request_hook_type previous_shmem_request = NULL;
static shmem_startup_hook_type previous_shmem_startup = NULL;
static ExecutorStart_hook_type previous_executor_start = NULL;
static ExecutorRun_hook_type previous_executor_run = NULL;
static ExecutorEnd_hook_type previous_executor_end = NULL;

/* Computed once: every access to a directory's counters asks for it. */
static size_t
directory_size(void)
{
	static size_t size = 0;

	if (size == 0)
		size = MAXALIGN(sizeof(StatsDirectory)) + MAXALIGN(load_sketch_size(STATS_TENANTS));
	return size;
}

static StatsDirectory *
stats_directory(int i)
{
	return (StatsDirectory *) (stats_base + directory_size() * i);
}

static load_sketch *
directory_sketch(int i)
{
	return (load_sketch *) ((char *) stats_directory(i) + MAXALIGN(sizeof(StatsDirectory)));
}

static Size
stats_shmem_size(void)
{
	return add_size(MAXALIGN(sizeof(StatsShared)), mul_size(directory_size(), STATS_DIRECTORIES));
}

static double
seconds_of(TimestampTz t)
{
	return (double) t / USECS_PER_SEC;
}

/* ---- backend state ---- */

/* A directory this backend found in shared memory (or found no room for). */
typedef struct LocalDirectory
{
	char	   *name;
	uint32		name_len;
	int			index;			/* -1: no room */
} LocalDirectory;

static LocalDirectory local_dirs[STATS_DIRECTORIES + 1];
static int	nlocal_dirs = 0;
static uint32 local_epoch = 0;

/* A tenant's figures not yet merged into its directory's sketch. */
typedef struct PendingTenant
{
	int			dir;
	uint32		epoch;
	uint64		hash;
	uint32		len;
	int32		slot;
	double		amount;
	load_counts delta;
	char		key[LOAD_KEY_MAX];
} PendingTenant;

static PendingTenant pending[PENDING_MAX];
static int	npending = 0;
static bool exit_merge_registered = false;

static void stats_backend_exit(int code, Datum arg);

/* A statement in the executor, and what it is counted for. */
typedef struct StatsStatement
{
	QueryDesc  *query;			/* NULL: free */
	int			nest_level;		/* the (sub)transaction that started it */
	bool		attributed;
	bool		is_read;
	int			dir;
	uint32		epoch;
	int32		slot;
	uint64		hash;
	uint32		len;
	uint64		time_ns;
	char		key[LOAD_KEY_MAX];
} StatsStatement;

static StatsStatement statements[NEST_MAX];
static int	nstatements = 0;
static StatsStatement *current_statement = NULL;

static bool
stats_counting(void)
{
	return stats_shared != NULL && chash_track_stats && !IsParallelWorker();
}

static bool
same_name(const char *a, uint32 alen, const char *b, uint32 blen)
{
	return alen == blen && memcmp(a, b, alen) == 0;
}

static bool
directory_is(StatsDirectory *d, const char *name, uint32 len, uint64 hash)
{
	return d->in_use && d->dboid == MyDatabaseId && d->name_hash == hash && d->name_len == len &&
		memcmp(d->name, name, Min(len, LOAD_KEY_MAX)) == 0;
}

/* The shared directory of a name in this database: found, allocated, or -1 (no room). */
static int
shared_directory(const char *name, uint32 len, bool allocate)
{
	uint64		hash = xxh64_hash(name, len, 0);
	int			free_entry = -1;

	LWLockAcquire(stats_shared->lock, allocate ? LW_EXCLUSIVE : LW_SHARED);
	for (int i = 0; i < STATS_DIRECTORIES; i++)
	{
		StatsDirectory *d = stats_directory(i);

		if (directory_is(d, name, len, hash))
		{
			LWLockRelease(stats_shared->lock);
			return i;
		}
		if (!d->in_use && free_entry < 0)
			free_entry = i;
	}
	if (allocate && free_entry >= 0)
	{
		StatsDirectory *d = stats_directory(free_entry);
		TimestampTz now = GetCurrentTimestamp();

		d->dboid = MyDatabaseId;
		d->name_hash = hash;
		d->name_len = len;
		memcpy(d->name, name, Min(len, LOAD_KEY_MAX));
		for (int s = 0; s < STATS_SLOTS; s++)
		{
			pg_atomic_init_u64(&d->slots[s].reads, 0);
			pg_atomic_init_u64(&d->slots[s].writes, 0);
			pg_atomic_init_u64(&d->slots[s].rows, 0);
			pg_atomic_init_u64(&d->slots[s].time_ns, 0);
		}
		d->since = now;
		load_sketch_init(directory_sketch(free_entry), STATS_TENANTS, STATS_HALF_LIFE,
						 seconds_of(now));
		d->in_use = true;
		LWLockRelease(stats_shared->lock);
		return free_entry;
	}
	LWLockRelease(stats_shared->lock);
	return -1;
}

/* The index of a directory for counting, through this backend's cache. */
static int
counting_directory(const char *name, uint32 len)
{
	uint32		epoch = pg_atomic_read_u32(&stats_shared->epoch);
	LocalDirectory *l;

	if (epoch != local_epoch)
	{
		for (int i = 0; i < nlocal_dirs; i++)
			pfree(local_dirs[i].name);
		nlocal_dirs = 0;
		local_epoch = epoch;
	}
	for (int i = 0; i < nlocal_dirs; i++)
		if (same_name(local_dirs[i].name, local_dirs[i].name_len, name, len))
			return local_dirs[i].index;
	/* beyond the room for the shared ones, a miss is looked up each time */
	if (nlocal_dirs == lengthof(local_dirs))
		return shared_directory(name, len, true);
	l = &local_dirs[nlocal_dirs];
	l->name = MemoryContextAlloc(TopMemoryContext, len);
	memcpy(l->name, name, len);
	l->name_len = len;
	l->index = shared_directory(name, len, true);
	nlocal_dirs++;
	return l->index;
}

/* Merges buffered tenants into the sketches; without wait, only unbusy ones. */
static void
merge_pending(bool wait)
{
	uint32		epoch;
	double		now;
	int			kept = 0;

	if (npending == 0 || stats_shared == NULL)
		return;
	epoch = pg_atomic_read_u32(&stats_shared->epoch);
	/*
	 * The statement's start is the time of its events (no clock read),
	 * rounded down to STATS_TIME_STEP: events within a step weigh the
	 * same, so the sketch computes 2^(t / half-life) once a step, not once
	 * a statement (an event weighs at most 0.015 % below its due).
	 */
	now = floor(seconds_of(GetCurrentStatementStartTimestamp()) / STATS_TIME_STEP) * STATS_TIME_STEP;
	for (int dir = 0; dir < STATS_DIRECTORIES; dir++)
	{
		bool		locked = false;
		bool		any = false;

		for (int i = 0; i < npending && !any; i++)
			any = pending[i].dir == dir;
		if (!any)
			continue;
		if (wait)
		{
			LWLockAcquire(stats_shared->sketch_locks[dir], LW_EXCLUSIVE);
			locked = true;
		}
		else
			locked = LWLockConditionalAcquire(stats_shared->sketch_locks[dir], LW_EXCLUSIVE);
		for (int i = 0; i < npending; i++)
		{
			PendingTenant *p = &pending[i];

			if (p->dir != dir || !locked)
				continue;
			/* figures of a directory freed since are dropped with it */
			if (p->epoch == epoch)
				load_sketch_add(directory_sketch(dir), p->hash, p->key, p->len, p->slot,
								p->amount, &p->delta, now);
			p->dir = -1;
		}
		if (locked)
			LWLockRelease(stats_shared->sketch_locks[dir]);
	}
	for (int i = 0; i < npending; i++)
		if (pending[i].dir >= 0)
			pending[kept++] = pending[i];
	npending = kept;
}

static void
pend_tenant(int dir, uint32 epoch, uint64 hash, const char *key, uint32 len, int32 slot,
			double amount, const load_counts *delta)
{
	PendingTenant *p;

	for (int i = 0; i < npending; i++)
	{
		p = &pending[i];
		if (p->dir == dir && p->hash == hash && p->len == len && p->epoch == epoch &&
			memcmp(p->key, key, Min(len, LOAD_KEY_MAX)) == 0)
		{
			p->slot = slot;
			p->amount += amount;
			load_counts_add(&p->delta, delta);
			return;
		}
	}
	if (!exit_merge_registered)
	{
		before_shmem_exit(stats_backend_exit, (Datum) 0);
		exit_merge_registered = true;
	}
	if (npending == PENDING_MAX)
		merge_pending(true);
	p = &pending[npending++];
	p->dir = dir;
	p->epoch = epoch;
	p->hash = hash;
	p->len = len;
	p->slot = slot;
	p->amount = amount;
	p->delta = *delta;
	memcpy(p->key, key, Min(len, LOAD_KEY_MAX));
}

void
load_stats_count(const char *directory, int directory_len, int32 slot, const char *tenant, uint32 tenant_len, GuardAccess access)
{
	int			dir;
	uint64		hash;
	int32		folded = slot % STATS_SLOTS;

	if (!stats_counting())
		return;
	dir = counting_directory(directory, directory_len);
	if (dir < 0)
		return;
	hash = xxh64_hash(tenant, tenant_len, 0);
	if (access == GUARD_WRITE)
	{
		load_counts delta = {0, 1, 0, 0};

		pg_atomic_fetch_add_u64(&stats_directory(dir)->slots[folded].writes, 1);
		pend_tenant(dir, local_epoch, hash, tenant, tenant_len, folded, 1, &delta);
	}
	if (current_statement != NULL && !current_statement->attributed)
	{
		StatsStatement *s = current_statement;

		s->attributed = true;
		s->is_read = access == GUARD_READ;
		s->dir = dir;
		s->epoch = local_epoch;
		s->slot = folded;
		s->hash = hash;
		s->len = tenant_len;
		memcpy(s->key, tenant, Min(tenant_len, LOAD_KEY_MAX));
	}
}

/* Counts a statement that ends, for its tenant. */
static void
count_statement(StatsStatement *s, uint64 rows)
{
	StatsSlot  *slot;
	load_counts delta = {s->is_read ? 1 : 0, 0, rows, s->time_ns};

	if (s->epoch != pg_atomic_read_u32(&stats_shared->epoch))
		return;
	slot = &stats_directory(s->dir)->slots[s->slot];
	if (s->is_read)
		pg_atomic_fetch_add_u64(&slot->reads, 1);
	pg_atomic_fetch_add_u64(&slot->rows, rows);
	pg_atomic_fetch_add_u64(&slot->time_ns, s->time_ns);
	pend_tenant(s->dir, s->epoch, s->hash, s->key, s->len, s->slot, s->is_read ? 1 : 0, &delta);
}

static StatsStatement *
find_statement(QueryDesc *query)
{
	for (int i = 0, seen = 0; i < NEST_MAX && seen < nstatements; i++)
		if (statements[i].query != NULL)
		{
			if (statements[i].query == query)
				return &statements[i];
			seen++;
		}
	return NULL;
}

static void
release_statement(StatsStatement *s)
{
	s->query = NULL;
	nstatements--;
}

static void
stats_executor_start(QueryDesc *query, int eflags)
{
	StatsStatement *s = NULL;
	StatsStatement *save = current_statement;

	if (stats_counting() && (eflags & EXEC_FLAG_EXPLAIN_ONLY) == 0 &&
		query->plannedstmt->commandType != CMD_UTILITY)
	{
		/* a record left by a statement that failed: its query is gone */
		s = find_statement(query);
		if (s != NULL)
			release_statement(s);
		for (int i = 0; i < NEST_MAX && s == NULL; i++)
			if (statements[i].query == NULL)
				s = &statements[i];
		if (s != NULL)
		{
			s->query = query;
			s->nest_level = GetCurrentTransactionNestLevel();
			s->attributed = false;
			s->time_ns = 0;
			nstatements++;
			current_statement = s;
		}
	}
	PG_TRY();
	{
		if (previous_executor_start != NULL)
			previous_executor_start(query, eflags);
		else
			standard_ExecutorStart(query, eflags);
	}
	PG_FINALLY();
	{
		current_statement = save;
	}
	PG_END_TRY();
}

static void
stats_executor_run(QueryDesc *query, ScanDirection direction, uint64 count, bool execute_once)
{
	StatsStatement *s = nstatements > 0 ? find_statement(query) : NULL;
	StatsStatement *save = current_statement;
	instr_time	start,
				elapsed;

	if (s == NULL)
	{
		if (previous_executor_run != NULL)
			previous_executor_run(query, direction, count, execute_once);
		else
			standard_ExecutorRun(query, direction, count, execute_once);
		return;
	}
	current_statement = s;
	INSTR_TIME_SET_CURRENT(start);
	PG_TRY();
	{
		if (previous_executor_run != NULL)
			previous_executor_run(query, direction, count, execute_once);
		else
			standard_ExecutorRun(query, direction, count, execute_once);
	}
	PG_FINALLY();
	{
		current_statement = save;
	}
	PG_END_TRY();
	INSTR_TIME_SET_CURRENT(elapsed);
	INSTR_TIME_SUBTRACT(elapsed, start);
	s->time_ns += (uint64) (INSTR_TIME_GET_DOUBLE(elapsed) * 1e9);
}

static void
stats_executor_end(QueryDesc *query)
{
	StatsStatement *s = nstatements > 0 ? find_statement(query) : NULL;

	if (s != NULL)
	{
		if (s->attributed && stats_shared != NULL)
			count_statement(s, query->estate->es_processed);
		release_statement(s);
	}
	if (previous_executor_end != NULL)
		previous_executor_end(query);
	else
		standard_ExecutorEnd(query);
	if (nstatements == 0 && npending > 0)
		merge_pending(false);
}

/* Statements an error ended never reach ExecutorEnd: forget them. */
static void
forget_statements(int from_level)
{
	for (int i = 0; i < NEST_MAX; i++)
		if (statements[i].query != NULL && statements[i].nest_level >= from_level)
			release_statement(&statements[i]);
}

static void
stats_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		forget_statements(0);
	if (npending > 0 && (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT))
		merge_pending(false);
}

static void
stats_subxact_callback(SubXactEvent event, SubTransactionId sub, SubTransactionId parent, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		forget_statements(GetCurrentTransactionNestLevel());
}

static void
stats_backend_exit(int code, Datum arg)
{
	merge_pending(true);
}

/* ---- shared memory ---- */

static void
stats_shmem_request(void)
{
	if (previous_shmem_request != NULL)
		previous_shmem_request();
	RequestAddinShmemSpace(stats_shmem_size());
	RequestNamedLWLockTranche("chash_stats", STATS_DIRECTORIES + 1);
}

static void
stats_shmem_startup(void)
{
	bool		found;

	if (previous_shmem_startup != NULL)
		previous_shmem_startup();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	stats_shared = ShmemInitStruct("chash_stats", stats_shmem_size(), &found);
	stats_base = (char *) stats_shared + MAXALIGN(sizeof(StatsShared));
	if (!found)
	{
		LWLockPadded *locks = GetNamedLWLockTranche("chash_stats");

		stats_shared->lock = &locks[0].lock;
		for (int i = 0; i < STATS_DIRECTORIES; i++)
		{
			stats_shared->sketch_locks[i] = &locks[i + 1].lock;
			stats_directory(i)->in_use = false;
		}
		pg_atomic_init_u32(&stats_shared->epoch, 1);
	}
	LWLockRelease(AddinShmemInitLock);
}

void
load_stats_init(void)
{
	DefineCustomBoolVariable("chash.track_stats",
							 "Counts the load of each slot and tenant on this shard (docs/load.md).",
							 "Counted only where chash is in shared_preload_libraries.",
							 &chash_track_stats, true, PGC_SUSET, 0, NULL, NULL, NULL);
	if (!process_shared_preload_libraries_in_progress)
		return;
	previous_shmem_request = shmem_request_hook;
	shmem_request_hook = stats_shmem_request;
	previous_shmem_startup = shmem_startup_hook;
	shmem_startup_hook = stats_shmem_startup;
	previous_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = stats_executor_start;
	previous_executor_run = ExecutorRun_hook;
	ExecutorRun_hook = stats_executor_run;
	previous_executor_end = ExecutorEnd_hook;
	ExecutorEnd_hook = stats_executor_end;
	RegisterXactCallback(stats_xact_callback, NULL);
	RegisterSubXactCallback(stats_subxact_callback, NULL);
}

/* ---- SQL ---- */

static void
require_stats(void)
{
	if (stats_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("load statistics are not available"),
				 errdetail("They are counted only where chash is in shared_preload_libraries."),
				 errhint("Add chash to shared_preload_libraries and restart the server.")));
}

/*
 * The shared directory a reading function reports (-1: nothing counted),
 * with this backend's own figures merged; the result set is prepared.
 */
static int
directory_to_read(FunctionCallInfo fcinfo, text *name)
{
	require_stats();
	InitMaterializedSRF(fcinfo, 0);
	merge_pending(true);
	return shared_directory(VARDATA_ANY(name), VARSIZE_ANY_EXHDR(name), false);
}

/* chash_stats_tracking(): whether this session counts (chash_shard_status). */
Datum
chash_stats_tracking(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(stats_shared != NULL && chash_track_stats);
}

/*
 * chash_slot_stats(directory) -> TABLE (slot, reads, writes, rows,
 * exec_time, since): the slots with anything counted, lowest first.
 */
Datum
chash_slot_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	text	   *name;
	int			dir;
	StatsDirectory *d;

	chash_require_args(fcinfo, "directory", NULL);
	name = PG_GETARG_TEXT_PP(0);
	dir = directory_to_read(fcinfo, name);
	if (dir < 0)
		return (Datum) 0;
	d = stats_directory(dir);
	for (int s = 0; s < STATS_SLOTS; s++)
	{
		Datum		values[6];
		bool		nulls[6] = {0};
		uint64		reads = pg_atomic_read_u64(&d->slots[s].reads);
		uint64		writes = pg_atomic_read_u64(&d->slots[s].writes);
		uint64		rows = pg_atomic_read_u64(&d->slots[s].rows);
		uint64		time_ns = pg_atomic_read_u64(&d->slots[s].time_ns);

		if ((s & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		if ((reads | writes | rows | time_ns) == 0)
			continue;
		values[0] = Int32GetDatum(s);
		values[1] = Int64GetDatum((int64) reads);
		values[2] = Int64GetDatum((int64) writes);
		values[3] = Int64GetDatum((int64) rows);
		values[4] = Float8GetDatum((double) time_ns / 1e6);
		values[5] = TimestampTzGetDatum(d->since);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * chash_tenant_stats(directory, top) -> TABLE (tenant, slot, reads,
 * writes, rows, exec_time, score): the sketch's top tenants.
 */
Datum
chash_tenant_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	text	   *name;
	int32		top;
	int			dir;
	load_sketch *sketch;
	load_tenant *tenants;
	load_entry *entries;
	double	   *scores;
	int32		n;

	chash_require_args(fcinfo, "directory", "top", NULL);
	name = PG_GETARG_TEXT_PP(0);
	top = PG_GETARG_INT32(1);
	if (top < 1)
		chash_report_below_one(top, "top");
	dir = directory_to_read(fcinfo, name);
	if (dir < 0)
		return (Datum) 0;
	sketch = directory_sketch(dir);
	tenants = palloc(sizeof(load_tenant) * STATS_TENANTS);
	entries = palloc(sizeof(load_entry) * STATS_TENANTS);
	scores = palloc(sizeof(double) * STATS_TENANTS);
	/* copied out under the lock: nothing below may fail while it is held */
	LWLockAcquire(stats_shared->sketch_locks[dir], LW_SHARED);
	n = load_sketch_top(sketch, seconds_of(GetCurrentTimestamp()), tenants, top);
	for (int i = 0; i < n; i++)
	{
		entries[i] = *tenants[i].entry;
		scores[i] = tenants[i].score;
	}
	LWLockRelease(stats_shared->sketch_locks[dir]);
	for (int i = 0; i < n; i++)
	{
		load_entry *e = &entries[i];
		Datum		values[7];
		bool		nulls[7] = {0};
		int			shown = Min(e->len, LOAD_KEY_MAX);

		/* a tenant longer than the bytes kept is shown cut on a character */
		if (shown < e->len)
			shown = pg_mbcliplen(e->key, shown, shown);
		values[0] = PointerGetDatum(cstring_to_text_with_len(e->key, shown));
		values[1] = Int32GetDatum(e->slot);
		values[2] = Int64GetDatum((int64) e->counts.reads);
		values[3] = Int64GetDatum((int64) e->counts.writes);
		values[4] = Int64GetDatum((int64) e->counts.rows);
		values[5] = Float8GetDatum((double) e->counts.time_ns / 1e6);
		values[6] = Float8GetDatum(scores[i]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

static void
reset_directory(int i, TimestampTz now)
{
	StatsDirectory *d = stats_directory(i);

	for (int s = 0; s < STATS_SLOTS; s++)
	{
		pg_atomic_write_u64(&d->slots[s].reads, 0);
		pg_atomic_write_u64(&d->slots[s].writes, 0);
		pg_atomic_write_u64(&d->slots[s].rows, 0);
		pg_atomic_write_u64(&d->slots[s].time_ns, 0);
	}
	LWLockAcquire(stats_shared->sketch_locks[i], LW_EXCLUSIVE);
	load_sketch_clear(directory_sketch(i), seconds_of(now));
	LWLockRelease(stats_shared->sketch_locks[i]);
	d->since = now;
}

/*
 * chash_stats_reset(directory DEFAULT NULL): zeroes a directory's figures
 * in this database; NULL frees every directory's of this database (their
 * room goes to whichever counts next).  Other databases' stay: PUBLIC may
 * not execute it (docs/load.md, "Privileges").
 */
Datum
chash_stats_reset(PG_FUNCTION_ARGS)
{
	TimestampTz now = GetCurrentTimestamp();

	require_stats();
	merge_pending(true);
	if (PG_ARGISNULL(0))
	{
		bool		freed = false;

		LWLockAcquire(stats_shared->lock, LW_EXCLUSIVE);
		for (int i = 0; i < STATS_DIRECTORIES; i++)
		{
			StatsDirectory *d = stats_directory(i);

			if (d->in_use && d->dboid == MyDatabaseId)
			{
				d->in_use = false;
				freed = true;
			}
		}
		if (freed)
			pg_atomic_fetch_add_u32(&stats_shared->epoch, 1);
		LWLockRelease(stats_shared->lock);
	}
	else
	{
		text	   *name = PG_GETARG_TEXT_PP(0);
		uint32		len = VARSIZE_ANY_EXHDR(name);
		uint64		hash = xxh64_hash(VARDATA_ANY(name), len, 0);

		LWLockAcquire(stats_shared->lock, LW_EXCLUSIVE);
		for (int i = 0; i < STATS_DIRECTORIES; i++)
			if (directory_is(stats_directory(i), VARDATA_ANY(name), len, hash))
				reset_directory(i, now);
		LWLockRelease(stats_shared->lock);
	}
	PG_RETURN_VOID();
}
