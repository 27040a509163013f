/*
 * fence.c - the fence of a migration step as a barrier (docs/migrations.md,
 * "The fence is a barrier"; docs/shards.md, "The guard"): chash_step_fence's
 * wait, chash_shard_wait_fence, and what a writer holds (chash_route_for_write
 * and the guard's writes)
 *
 * A writer admitted for a tenant (chash_route_for_write, the guard on a
 * shard) holds ShareLock on two lock tags until its transaction ends: one
 * for the tenant's slot, one for the tenant.  It takes them before it
 * reads the latest committed state, and is admitted only if that state
 * shows no fence.  That state is cached across transactions until an
 * invalidation of the directory tables arrives (directory_latest); a
 * commit sends its invalidations before it releases its locks, so a
 * writer that waited for the fence's tag, or came after a fence whose
 * committing transaction has ended, sees the fence.  A fence sets the step fenced, then takes its tag in
 * ExclusiveLock and holds it until it commits: it waits for every writer
 * admitted before, and writers that come in between wait for its commit
 * and then see the fence.  Writers of other slots and tenants hold other
 * tags, so the fence does not wait for them.
 *
 * The tags are advisory lock tags whose fourth field, which
 * pg_advisory_lock() sets to 1 or 2, is one of ours (0xC401..0xC403): they
 * never clash with an application's advisory locks.  pg_locks shows them
 * as locktype "advisory" with objsubid 50177 (slot), 50178 (tenant) or
 * 50179 (directory).  The directory is a 64-bit hash of its name, the
 * tenant a 64-bit hash of directory and tenant: two tags coincide only by
 * a hash collision, which makes a fence wait for a writer it need not.
 *
 * A transaction writing many tenants would fill the lock table (a few
 * thousand entries in all): after WRITER_TAGS_MAX tags it takes one
 * ShareLock on the directory's tag instead, and every fence also takes
 * that tag in RowExclusiveLock (which does not conflict with other fences).
 */
#include "chash.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"
#include "utils/wait_event.h"

#include "directory_catalog.h"
#include "fence.h"

PG_FUNCTION_INFO_V1(chash_route_for_write);
PG_FUNCTION_INFO_V1(chash_step_fence_barrier);
PG_FUNCTION_INFO_V1(chash_steps_fence_barrier);
PG_FUNCTION_INFO_V1(chash_shard_wait_fence);
PG_FUNCTION_INFO_V1(chash_shard_wait_fence_steps);

#define LOCKTAG_FIELD_SLOT		0xC401
#define LOCKTAG_FIELD_TENANT	0xC402
#define LOCKTAG_FIELD_DIRECTORY	0xC403

/* Tags per transaction before a writer takes the directory's tag. */
#define WRITER_TAGS_MAX 64

/* How often chash_shard_wait_fence looks for the replicated fence. */
#define WAIT_FENCE_POLL_MS 10

static LocalTransactionId tags_lxid = InvalidLocalTransactionId;
static int	tags_taken = 0;

static uint64
directory_hash(const char *name, size_t len)
{
	return xxh64_hash(name, len, UINT64CONST(0x6368617368));
}

static void
slot_tag(LOCKTAG *tag, const char *dir, size_t dir_len, int32 slot)
{
	uint64		h = directory_hash(dir, dir_len);

	/* the slot itself in field 3: slots of one directory never collide */
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) (h ^ (h >> 32)), (uint32) slot,
						 LOCKTAG_FIELD_SLOT);
}

static void
tenant_tag(LOCKTAG *tag, const char *dir, size_t dir_len, const char *tenant, size_t len)
{
	uint64		h = xxh64_hash(tenant, len, directory_hash(dir, dir_len));

	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) (h >> 32), (uint32) h,
						 LOCKTAG_FIELD_TENANT);
}

static void
directory_tag(LOCKTAG *tag, const char *dir, size_t dir_len)
{
	uint64		h = directory_hash(dir, dir_len);

	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) (h >> 32), (uint32) h,
						 LOCKTAG_FIELD_DIRECTORY);
}

/* The writer's tags: slot and tenant, or the directory's once there are many. */
static void
lock_writer_tags(const char *dir, size_t dir_len, int32 slot, const char *tenant, size_t len)
{
	LOCKTAG		tag;

	if (tags_lxid != MyProc->lxid)
	{
		tags_lxid = MyProc->lxid;
		tags_taken = 0;
	}
	if (tags_taken >= WRITER_TAGS_MAX)
	{
		/* asked every time: a rolled-back subtransaction may have released it */
		directory_tag(&tag, dir, dir_len);
		(void) LockAcquire(&tag, ShareLock, false, false);
		return;
	}
	slot_tag(&tag, dir, dir_len, slot);
	if (LockAcquire(&tag, ShareLock, false, false) == LOCKACQUIRE_OK)
		tags_taken++;
	tenant_tag(&tag, dir, dir_len, tenant, len);
	if (LockAcquire(&tag, ShareLock, false, false) == LOCKACQUIRE_OK)
		tags_taken++;
}

RouteDirectory *
fence_admit_write(RouteCallSite *site, text *name, const char *tenant, size_t len,
				  TenantRoute *route)
{
	RouteDirectory *dir = directory_latest(site, name);
	uint64		routed = dir->load_id;
	int32		locked;

	route_tenant(dir, tenant, len, route);
	do
	{
		/* the slot is fixed at creation: only a re-created directory moves it */
		locked = route->slot;
		lock_writer_tags(dir->name, dir->name_len, locked, route->tenant, route->tenant_len);
		/* a fence committed while we waited for its tag is in this state */
		dir = directory_latest(site, name);
		if (dir->load_id != routed)
		{
			route_tenant(dir, tenant, len, route);
			routed = dir->load_id;
		}
	} while (route->slot != locked);
	return dir;
}

void
fence_report_fenced(RouteDirectory *dir, TenantRoute *route)
{
	RouteStep  *step = route->step;
	/* A slot step fences every tenant routed by the slot; a tenant step only its tenant. */
	char	   *what = step->slot >= 0 ? psprintf("Slot %d is", route->slot) : pstrdup("The tenant is");

	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("tenant \"%.*s\" of directory \"%.*s\" is being moved",
					chash_quote_len(route->tenant, route->tenant_len), route->tenant,
					chash_quote_len(dir->name, dir->name_len), dir->name),
			 errdetail("%s fenced by step %d of migration " INT64_FORMAT ", which moves it from shard %s to shard %s.",
					   what, step->step, step->migration,
					   route_quoted_shard(dir, route->owner), route_quoted_shard(dir, step->to_shard)),
			 errhint("Retry the transaction; writes resume when the step completes.")));
}

/* Only who may fence may hold writers up. */
static void
check_may_fence(void)
{
	const DirectoryCatalog *catalog = directory_catalog_open();

	if (pg_class_aclcheck(catalog->tables[T_STEP], GetUserId(), ACL_UPDATE) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, directory_table_names[T_STEP]);
}

/*
 * chash_step_fence_barrier(directory text, slot int, tenant text): called
 * by chash_step_fence after it set the step fenced.  Waits for the writers
 * admitted for the step's slot (a slot step) or tenant (a tenant step) and
 * keeps later ones waiting until this transaction ends.
 */
Datum
chash_step_fence_barrier(PG_FUNCTION_ARGS)
{
	text	   *dir;
	LOCKTAG		tag;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("directory must not be null")));
	if (PG_ARGISNULL(1) == PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a fence is of a slot or of a tenant"),
				 errdetail("Give exactly one of slot and tenant.")));
	dir = PG_GETARG_TEXT_PP(0);
	check_may_fence();

	if (!PG_ARGISNULL(1))
		slot_tag(&tag, VARDATA_ANY(dir), VARSIZE_ANY_EXHDR(dir), PG_GETARG_INT32(1));
	else
	{
		text	   *tenant = PG_GETARG_TEXT_PP(2);

		tenant_tag(&tag, VARDATA_ANY(dir), VARSIZE_ANY_EXHDR(dir),
				   VARDATA_ANY(tenant), VARSIZE_ANY_EXHDR(tenant));
	}
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	directory_tag(&tag, VARDATA_ANY(dir), VARSIZE_ANY_EXHDR(dir));
	(void) LockAcquire(&tag, RowExclusiveLock, false, false);
	PG_RETURN_VOID();
}

/*
 * chash_steps_fence_barrier(directory text, slots int[], tenants text[]):
 * the barrier of a batch (chash_steps_fence), over every slot and tenant
 * it gives: one lock per element, held until the transaction ends, which
 * is why a batch is bounded (chash_steps_claim).  A NULL array is empty.
 */
Datum
chash_steps_fence_barrier(PG_FUNCTION_ARGS)
{
	text	   *dir;
	const char *d;
	size_t		dlen;
	LOCKTAG		tag;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("directory must not be null")));
	dir = PG_GETARG_TEXT_PP(0);
	d = VARDATA_ANY(dir);
	dlen = VARSIZE_ANY_EXHDR(dir);
	check_may_fence();
	for (int a = 1; a <= 2; a++)
	{
		Datum	   *elems;
		bool	   *nulls;
		int			n;

		if (PG_ARGISNULL(a))
			continue;
		deconstruct_array(PG_GETARG_ARRAYTYPE_P(a), a == 1 ? INT4OID : TEXTOID,
						  a == 1 ? 4 : -1, a == 1, TYPALIGN_INT,
						  &elems, &nulls, &n);
		for (int i = 0; i < n; i++)
		{
			CHECK_FOR_INTERRUPTS();
			if (nulls[i])
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("%s must not contain nulls", a == 1 ? "slots" : "tenants")));
			if (a == 1)
				slot_tag(&tag, d, dlen, DatumGetInt32(elems[i]));
			else
			{
				text	   *t = DatumGetTextPP(elems[i]);

				tenant_tag(&tag, d, dlen, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
			}
			(void) LockAcquire(&tag, ExclusiveLock, false, false);
		}
	}
	directory_tag(&tag, d, dlen);
	(void) LockAcquire(&tag, RowExclusiveLock, false, false);
	PG_RETURN_VOID();
}

/*
 * On a batch's source shard: waits until the replica here shows every step
 * fenced (or done), then for every transaction the guard admitted for
 * their slots or tenants before that.  Writers that come later read the
 * fenced state and are refused, so new ones need not be held up.  One
 * query per poll and one wait over all the tags, whatever the batch's size.
 */
static void
wait_fence_steps(text *dir, int64 migration, ArrayType *steps)
{
	int			level;
	SPIPlanPtr	plan;
	Oid			types[3] = {INT8OID, INT4ARRAYOID, TEXTOID};
	Datum		values[3];
	List	   *tags = NIL;
	LOCKTAG		tag;
	MemoryContext outer = CurrentMemoryContext;

	if (array_contains_nulls(steps))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("steps must not contain nulls")));
	level = chash_pin_search_path();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/* every step asked for, whether its row is here yet or not */
	plan = SPI_prepare(psprintf("SELECT x.step, s.state, s.slot, s.tenant "
								"FROM (SELECT DISTINCT x AS step FROM pg_catalog.unnest($2) x) x "
								"LEFT JOIN (%1$s.chash_migration_step s JOIN %1$s.chash_migration m "
								"           ON m.id = s.migration AND m.directory = $3) "
								"  ON s.migration = $1 AND s.step = x.step "
								"ORDER BY x.step",
								directory_schema_quoted()), 3, types);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	values[0] = Int64GetDatum(migration);
	values[1] = PointerGetDatum(steps);
	values[2] = PointerGetDatum(dir);
	for (;;)
	{
		bool		all_fenced = true;

		/* the latest state applied here, not this transaction's snapshot */
		if (SPI_execute_snapshot(plan, values, NULL, GetLatestSnapshot(), InvalidSnapshot,
								 true, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not read the steps of migration " INT64_FORMAT, migration);
		for (uint64 i = 0; i < SPI_processed && all_fenced; i++)
		{
			HeapTuple	tuple = SPI_tuptable->vals[i];
			TupleDesc	desc = SPI_tuptable->tupdesc;
			bool		isnull;
			int32		step = DatumGetInt32(SPI_getbinval(tuple, desc, 1, &isnull));
			char	   *name = SPI_getvalue(tuple, desc, 2);
			int			state = name != NULL ? state_parse(STATE_STEP, name, strlen(name)) : -1;

			if (state == STEP_CANCELLED)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("step %d of migration " INT64_FORMAT " was cancelled", step, migration)));
			all_fenced = state == STEP_FENCED || state == STEP_DONE;
		}
		if (all_fenced)
			break;
		SPI_freetuptable(SPI_tuptable);
		/* not replicated yet, or not fenced yet: wait for the apply */
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 WAIT_FENCE_POLL_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	/* the tags of the steps' slots and tenants, outside SPI's memory */
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		Datum		slot = SPI_getbinval(tuple, desc, 3, &isnull);
		MemoryContext spi = MemoryContextSwitchTo(outer);
		LOCKTAG    *t = palloc(sizeof(LOCKTAG));

		if (!isnull)
			slot_tag(t, VARDATA_ANY(dir), VARSIZE_ANY_EXHDR(dir), DatumGetInt32(slot));
		else
		{
			text	   *tenant = DatumGetTextPP(SPI_getbinval(tuple, desc, 4, &isnull));

			tenant_tag(t, VARDATA_ANY(dir), VARSIZE_ANY_EXHDR(dir),
					   VARDATA_ANY(tenant), VARSIZE_ANY_EXHDR(tenant));
		}
		tags = lappend(tags, t);
		MemoryContextSwitchTo(spi);
	}
	SPI_finish();
	AtEOXact_GUC(true, level);

	/*
	 * The fence may be visible before the transaction that applied it has
	 * sent its invalidations, and writers trust their cached state until
	 * those arrive: wait for that transaction to end (it holds its lock on
	 * the step table until then), so every writer admitted from here on
	 * sees the fence.
	 */
	SET_LOCKTAG_RELATION(tag, MyDatabaseId, directory_catalog_open()->tables[T_STEP]);
	WaitForLockers(tag, ShareLock, false);
	if (tags != NIL)
		WaitForLockersMultiple(tags, ExclusiveLock, false);
	directory_tag(&tag, VARDATA_ANY(dir), VARSIZE_ANY_EXHDR(dir));
	WaitForLockers(tag, RowExclusiveLock, false);
}

/* chash_shard_wait_fence(directory text, migration bigint, step int): a batch of one */
Datum
chash_shard_wait_fence(PG_FUNCTION_ARGS)
{
	Datum		step;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null",
						PG_ARGISNULL(0) ? "directory" : PG_ARGISNULL(1) ? "migration" : "step")));
	step = PG_GETARG_DATUM(2);
	wait_fence_steps(PG_GETARG_TEXT_PP(0), PG_GETARG_INT64(1),
					 construct_array(&step, 1, INT4OID, 4, true, TYPALIGN_INT));
	PG_RETURN_VOID();
}

/* chash_shard_wait_fence(directory text, migration bigint, steps int[]) */
Datum
chash_shard_wait_fence_steps(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null",
						PG_ARGISNULL(0) ? "directory" : PG_ARGISNULL(1) ? "migration" : "steps")));
	if (ArrayGetNItems(ARR_NDIM(PG_GETARG_ARRAYTYPE_P(2)), ARR_DIMS(PG_GETARG_ARRAYTYPE_P(2))) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("steps must not be empty")));
	wait_fence_steps(PG_GETARG_TEXT_PP(0), PG_GETARG_INT64(1), PG_GETARG_ARRAYTYPE_P(2));
	PG_RETURN_VOID();
}

/*
 * The fence is a barrier (docs/migrations.md): the writer first takes its
 * tags (fence.c), then checks the latest committed state, not its
 * snapshot's, so a fence committed after the snapshot, or one waiting for
 * writers admitted before it, is seen.  The owner returned is the latest
 * one too.
 */
Datum
chash_route_for_write(PG_FUNCTION_ARGS)
{
	text	   *name = PG_GETARG_TEXT_PP(0);
	text	   *tenant = PG_GETARG_TEXT_PP(1);
	RouteCallSite *site = route_call_site(fcinfo);
	RouteDirectory *dir;
	TenantRoute route;

	dir = fence_admit_write(site, name, VARDATA_ANY(tenant), VARSIZE_ANY_EXHDR(tenant), &route);
	if (route.step != NULL && route.step->fenced)
		fence_report_fenced(dir, &route);
	PG_RETURN_TEXT_P(directory_shard_name(site, dir, route.owner));
}
