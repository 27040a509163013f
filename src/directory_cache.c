/*
 * directory_cache.c - shard directories held in backend memory
 *
 * chash_route must not read the tables row by row, and must never answer
 * with a stale owner.  Each directory is loaded once into its own memory
 * context and reused while both of these hold:
 *
 *  - no relcache invalidation arrived for a directory table since it was
 *    loaded (writers' statement triggers send one; on a hot standby they
 *    are replayed from WAL; our own transaction's changes and their
 *    rollback are delivered locally), and
 *  - the directory row's version, read once per statement with the
 *    statement's snapshot, equals the cached one.
 *
 * The version check is what makes READ COMMITTED and REPEATABLE READ both
 * right: a new statement (or transaction) that can see a committed change
 * sees a new version and reloads with the same snapshot; a REPEATABLE READ
 * transaction keeps seeing its old version and gets the state of that
 * version.  It also closes the window between a commit becoming visible
 * and its invalidation being sent.  Per call, only the snapshot identity
 * is compared (in fn_extra), so a batch query pays the check once.
 *
 * Directories replaced by a reload are freed at the end of the
 * transaction, not at once: shard names handed out by chash_route point
 * into them.
 */
#include "chash.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "directory_cache.h"

/* The tables routing reads, in the order of table_names[]. */
enum
{
	T_DIRECTORY,
	T_SHARD,
	T_SLOT,
	T_OVERRIDE,
	T_MIGRATION,
	T_STEP,
	T_COUNT
};
static const char *const table_names[T_COUNT] = {
	"chash_directory", "chash_shard", "chash_slot", "chash_override",
	"chash_migration", "chash_migration_step"
};
static const char *const index_names[T_COUNT] = {
	"chash_directory_pkey", "chash_shard_pkey", "chash_slot_pkey",
	"chash_override_pkey", "chash_migration_running", "chash_migration_step_pkey"
};

/* Column numbers, as 50_directory_tables.sql creates them. */
#define A_DIRECTORY_NAME 1
#define A_DIRECTORY_SLOT_COUNT 2
#define A_DIRECTORY_SLOT_METHOD 3
#define A_DIRECTORY_KEY_TYPE 4
#define A_DIRECTORY_VERSION 5
#define A_SHARD_SHARD 2
#define A_SHARD_WEIGHT 3
#define A_SHARD_STATE 4
#define A_SLOT_SLOT 2
#define A_SLOT_SHARD 3
#define A_OVERRIDE_TENANT 2
#define A_OVERRIDE_SHARD 3
#define A_MIGRATION_ID 1
#define A_MIGRATION_DIRECTORY 2
#define A_MIGRATION_STATUS 5
#define A_STEP_MIGRATION 1
#define A_STEP_STEP 2
#define A_STEP_SLOT 3
#define A_STEP_TENANT 4
#define A_STEP_TO_SHARD 6
#define A_STEP_STATE 7

static bool catalog_valid = false;
static Oid	table_oids[T_COUNT];
static Oid	index_oids[T_COUNT];
static char *schema_quoted = NULL;

static RouteDirectory *directories = NULL;	/* current entries */
static List *retired_contexts = NIL;	/* freed at transaction end */
static uint64 cache_generation = 1;
static bool callbacks_registered = false;

/* What fn_extra remembers between calls of one statement. */
typedef struct RouteCall
{
	RouteDirectory *dir;
	uint64		generation;
	Oid			userid;
	TransactionId xmin;
	TransactionId xmax;
	CommandId	curcid;
	uint64		completion_count;
	int			name_len;
	int			name_capacity;
	char	   *name;
} RouteCall;

static void
retire_all(void)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	for (RouteDirectory *d = directories; d != NULL; d = d->next)
		retired_contexts = lappend(retired_contexts, d->context);
	directories = NULL;
	cache_generation++;
	MemoryContextSwitchTo(old);
}

static void
relcache_callback(Datum arg, Oid relid)
{
	if (!catalog_valid)
		return;
	if (relid != InvalidOid)
	{
		bool		ours = false;

		for (int i = 0; i < T_COUNT; i++)
			if (relid == table_oids[i])
				ours = true;
		if (!ours)
			return;
	}
	/* The tables may have been dropped or moved: look them up again. */
	retire_all();
	catalog_valid = false;
}

static void
xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PREPARE)
	{
		ListCell   *lc;

		foreach(lc, retired_contexts)
			MemoryContextDelete((MemoryContext) lfirst(lc));
		list_free(retired_contexts);
		retired_contexts = NIL;
	}
}

static Oid
extension_namespace(Oid extoid)
{
	Relation	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	Oid			nsp = InvalidOid;

	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(extoid));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
		nsp = ((Form_pg_extension) GETSTRUCT(tuple))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return nsp;
}

static void
lookup_catalog(void)
{
	Oid			extoid;
	Oid			nsp;

	if (catalog_valid)
		return;
	extoid = get_extension_oid("chash", true);
	nsp = OidIsValid(extoid) ? extension_namespace(extoid) : InvalidOid;
	if (!OidIsValid(nsp))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"chash\" is not installed in this database")));
	for (int i = 0; i < T_COUNT; i++)
	{
		table_oids[i] = get_relname_relid(table_names[i], nsp);
		index_oids[i] = get_relname_relid(index_names[i], nsp);
		if (!OidIsValid(table_oids[i]) || !OidIsValid(index_oids[i]))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("table \"%s\" of extension \"chash\" is missing", table_names[i])));
	}
	if (schema_quoted)
		pfree(schema_quoted);
	schema_quoted = MemoryContextStrdup(TopMemoryContext,
										quote_identifier(get_namespace_name(nsp)));
	catalog_valid = true;
}

const char *
directory_schema_quoted(void)
{
	lookup_catalog();
	return schema_quoted;
}

/* Reading a directory needs SELECT on every table routing reads. */
static void
check_privileges(void)
{
	Oid			user = GetUserId();

	for (int i = 0; i < T_COUNT; i++)
		if (pg_class_aclcheck(table_oids[i], user, ACL_SELECT) != ACLCHECK_OK)
			aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, table_names[i]);
}

static text *
getattr_text(HeapTuple tuple, TupleDesc desc, int attnum, bool *isnull)
{
	bool		null;
	Datum		d = heap_getattr(tuple, attnum, desc, &null);

	if (isnull)
		*isnull = null;
	return null ? NULL : DatumGetTextPP(d);
}

static bool
text_equals(text *t, const char *s)
{
	size_t		len = strlen(s);

	return VARSIZE_ANY_EXHDR(t) == len && memcmp(VARDATA_ANY(t), s, len) == 0;
}

/* A key "first column = name" for an index scan on a text column. */
static void
name_key(ScanKeyData *key, Relation rel, AttrNumber attnum, text *name)
{
	ScanKeyEntryInitialize(key, 0, attnum, BTEqualStrategyNumber, InvalidOid,
						   TupleDescAttr(RelationGetDescr(rel), attnum - 1)->attcollation,
						   F_TEXTEQ, PointerGetDatum(name));
}

typedef struct DirectoryRow
{
	int64		version;
	int32		slot_count;
	slot_method method;
	key_type	ktype;
} DirectoryRow;

static bool
read_directory_row(text *name, Snapshot snapshot, DirectoryRow *row)
{
	Relation	rel = table_open(table_oids[T_DIRECTORY], AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	bool		found = false;

	name_key(&key, rel, A_DIRECTORY_NAME, name);
	scan = systable_beginscan(rel, index_oids[T_DIRECTORY], true, snapshot, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		bool		isnull;
		text	   *method = getattr_text(tuple, desc, A_DIRECTORY_SLOT_METHOD, NULL);
		text	   *ktype = getattr_text(tuple, desc, A_DIRECTORY_KEY_TYPE, NULL);

		row->version = DatumGetInt64(heap_getattr(tuple, A_DIRECTORY_VERSION, desc, &isnull));
		row->slot_count = DatumGetInt32(heap_getattr(tuple, A_DIRECTORY_SLOT_COUNT, desc, &isnull));
		/* CHECK constraints keep these valid */
		if (slot_method_parse(VARDATA_ANY(method), VARSIZE_ANY_EXHDR(method), &row->method) != 0 ||
			key_type_parse(VARDATA_ANY(ktype), VARSIZE_ANY_EXHDR(ktype), &row->ktype) != 0)
			elog(ERROR, "directory has an invalid slot method or key type");
		found = true;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

static int32
shard_index(RouteDirectory *dir, tenant_map *shard_map, text *shard, int32 *last)
{
	const char *s = VARDATA_ANY(shard);
	uint32		len = VARSIZE_ANY_EXHDR(shard);
	const tenant_map_entry *e;

	/* Slots come in ranges: the previous owner is the likely one. */
	if (*last >= 0 && VARSIZE_ANY_EXHDR(dir->shards[*last].name) == len &&
		memcmp(VARDATA_ANY(dir->shards[*last].name), s, len) == 0)
		return *last;
	e = tenant_map_get(shard_map, xxh64_hash(s, len, 0), s, len);
	if (e == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("directory \"%s\" refers to unknown shard \"%.*s\"", dir->name, (int) len, s)));
	*last = e->value;
	return e->value;
}

static void
load_shards(RouteDirectory *dir, text *name, Snapshot snapshot, tenant_map *shard_map)
{
	Relation	rel = table_open(table_oids[T_SHARD], AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	int			capacity = 16;
	size_t		map_capacity;

	dir->shards = palloc(sizeof(RouteShard) * capacity);
	dir->nshards = 0;
	name_key(&key, rel, 1, name);
	scan = systable_beginscan(rel, index_oids[T_SHARD], true, snapshot, 1, &key);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		bool		isnull;
		RouteShard *s;
		text	   *state;

		if (dir->nshards == capacity)
		{
			capacity *= 2;
			dir->shards = repalloc(dir->shards, sizeof(RouteShard) * capacity);
		}
		s = &dir->shards[dir->nshards++];
		/* a plain 4-byte-header copy: it is returned as a Datum */
		state = getattr_text(tuple, desc, A_SHARD_SHARD, NULL);
		s->name = cstring_to_text_with_len(VARDATA_ANY(state), VARSIZE_ANY_EXHDR(state));
		s->weight = DatumGetFloat8(heap_getattr(tuple, A_SHARD_WEIGHT, desc, &isnull));
		state = getattr_text(tuple, desc, A_SHARD_STATE, NULL);
		s->state = text_equals(state, "active") ? 'a' : text_equals(state, "draining") ? 'd' : 'r';
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);

	map_capacity = tenant_map_capacity(dir->nshards);
	tenant_map_init(shard_map, palloc0(sizeof(tenant_map_entry) * map_capacity), map_capacity,
					NULL, 0);
	for (int i = 0; i < dir->nshards; i++)
	{
		text	   *n = dir->shards[i].name;

		tenant_map_put(shard_map, xxh64_hash(VARDATA(n), VARSIZE(n) - VARHDRSZ, 0),
					   VARDATA(n), VARSIZE(n) - VARHDRSZ, i);
	}
}

static void
load_slots(RouteDirectory *dir, text *name, Snapshot snapshot, tenant_map *shard_map)
{
	Relation	rel = table_open(table_oids[T_SLOT], AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	int32		owned = 0;
	int32		last = -1;

	dir->slot_owner = palloc(sizeof(int32) * dir->slot_count);
	name_key(&key, rel, 1, name);

	/*
	 * Slots land in the array by number, so any order will do.  When the
	 * directory is a large share of the table, reading the whole table in
	 * physical order (visibility checked a page at a time) beats fetching
	 * each row through the index (a buffer lock and a visibility check per
	 * row): 1,048,576 slots load in about half the time.  The table's size
	 * in pages is always current; ~150 slot rows fill a page.
	 */
	scan = systable_beginscan(rel, index_oids[T_SLOT],
							  (double) dir->slot_count * 4 <
							  (double) RelationGetNumberOfBlocks(rel) * 150,
							  snapshot, 1, &key);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Datum		values[3];
		bool		nulls[3];
		int32		slot;

		heap_deform_tuple(tuple, desc, values, nulls);
		slot = DatumGetInt32(values[A_SLOT_SLOT - 1]);
		/* constraints keep slots in range and unique; a scan sees each once */
		if (slot < 0 || slot >= dir->slot_count)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("slot %d of directory \"%s\" is out of range", slot, dir->name)));
		dir->slot_owner[slot] = shard_index(dir, shard_map,
											DatumGetTextPP(values[A_SLOT_SHARD - 1]), &last);
		owned++;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	if (owned != dir->slot_count)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("directory \"%s\" is incomplete", dir->name),
				 errdetail("%d of its %d slots have an owner.", owned, dir->slot_count),
				 errhint("A restore loads the slots after the directory; wait for it, or recreate the directory.")));
}

typedef struct PendingTenant
{
	char	   *data;
	uint32		len;
	int32		value;
} PendingTenant;

static void
build_tenant_map(tenant_map *map, PendingTenant *items, int count)
{
	size_t		capacity = tenant_map_capacity(count);
	size_t		words = tenant_map_filter_words(count);

	tenant_map_init(map, palloc0(sizeof(tenant_map_entry) * capacity), capacity,
					palloc0(sizeof(uint64) * words), words);
	for (int i = 0; i < count; i++)
		tenant_map_put(map, xxh64_hash(items[i].data, items[i].len, 0),
					   items[i].data, items[i].len, items[i].value);
}

static void
load_overrides(RouteDirectory *dir, text *name, Snapshot snapshot, tenant_map *shard_map)
{
	Relation	rel = table_open(table_oids[T_OVERRIDE], AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	int			capacity = 64;
	int			count = 0;
	int32		last = -1;
	PendingTenant *items = palloc(sizeof(PendingTenant) * capacity);

	name_key(&key, rel, 1, name);
	scan = systable_beginscan(rel, index_oids[T_OVERRIDE], true, snapshot, 1, &key);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		text	   *tenant = getattr_text(tuple, desc, A_OVERRIDE_TENANT, NULL);
		text	   *shard = getattr_text(tuple, desc, A_OVERRIDE_SHARD, NULL);

		if (count == capacity)
		{
			capacity *= 2;
			items = repalloc_huge(items, sizeof(PendingTenant) * capacity);
		}
		items[count].len = VARSIZE_ANY_EXHDR(tenant);
		items[count].data = palloc(items[count].len + 1);
		memcpy(items[count].data, VARDATA_ANY(tenant), items[count].len);
		items[count].value = shard_index(dir, shard_map, shard, &last);
		count++;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	build_tenant_map(&dir->overrides, items, count);
	pfree(items);
}

static int
compare_steps(const void *a, const void *b)
{
	const RouteStep *x = a;
	const RouteStep *y = b;

	/* slot steps first, by slot; tenant steps (slot -1) after */
	if ((x->slot < 0) != (y->slot < 0))
		return x->slot < 0 ? 1 : -1;
	if (x->slot != y->slot)
		return x->slot < y->slot ? -1 : 1;
	if (x->migration != y->migration)
		return x->migration < y->migration ? -1 : 1;
	return x->step < y->step ? -1 : x->step > y->step;
}

/* Steps in flight: copying or fenced steps of running migrations. */
static void
load_steps(RouteDirectory *dir, text *name, Snapshot snapshot)
{
	Relation	mrel = table_open(table_oids[T_MIGRATION], AccessShareLock);
	Relation	srel = table_open(table_oids[T_STEP], AccessShareLock);
	TupleDesc	mdesc = RelationGetDescr(mrel);
	TupleDesc	sdesc = RelationGetDescr(srel);
	ScanKeyData key;
	SysScanDesc mscan;
	HeapTuple	mtuple;
	int			capacity = 16;
	int			ntenants = 0;
	PendingTenant *tenants;
	text	  **tenant_texts;

	dir->steps = palloc(sizeof(RouteStep) * capacity);
	tenant_texts = palloc(sizeof(text *) * capacity);
	dir->nsteps = 0;
	/* chash_migration_running indexes running migrations by directory */
	name_key(&key, mrel, A_MIGRATION_DIRECTORY, name);
	mscan = systable_beginscan(mrel, index_oids[T_MIGRATION], true, snapshot, 1, &key);
	while (HeapTupleIsValid(mtuple = systable_getnext(mscan)))
	{
		bool		isnull;
		int64		id;
		ScanKeyData skey;
		SysScanDesc sscan;
		HeapTuple	stuple;

		if (!text_equals(getattr_text(mtuple, mdesc, A_MIGRATION_STATUS, NULL), "running"))
			continue;
		id = DatumGetInt64(heap_getattr(mtuple, A_MIGRATION_ID, mdesc, &isnull));
		ScanKeyInit(&skey, A_STEP_MIGRATION, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(id));
		sscan = systable_beginscan(srel, index_oids[T_STEP], true, snapshot, 1, &skey);
		while (HeapTupleIsValid(stuple = systable_getnext(sscan)))
		{
			text	   *state = getattr_text(stuple, sdesc, A_STEP_STATE, NULL);
			bool		fenced = text_equals(state, "fenced");
			bool		slot_null;
			Datum		slot;
			RouteStep  *s;
			text	   *to;

			if (!fenced && !text_equals(state, "copying"))
				continue;
			if (dir->nsteps == capacity)
			{
				capacity *= 2;
				dir->steps = repalloc(dir->steps, sizeof(RouteStep) * capacity);
				tenant_texts = repalloc(tenant_texts, sizeof(text *) * capacity);
			}
			s = &dir->steps[dir->nsteps];
			s->migration = id;
			s->step = DatumGetInt32(heap_getattr(stuple, A_STEP_STEP, sdesc, &isnull));
			slot = heap_getattr(stuple, A_STEP_SLOT, sdesc, &slot_null);
			s->slot = slot_null ? -1 : DatumGetInt32(slot);
			s->fenced = fenced;
			to = getattr_text(stuple, sdesc, A_STEP_TO_SHARD, NULL);
			s->to_shard = cstring_to_text_with_len(VARDATA_ANY(to), VARSIZE_ANY_EXHDR(to));
			tenant_texts[dir->nsteps] = slot_null ?
				(text *) pg_detoast_datum_copy((struct varlena *)
											   getattr_text(stuple, sdesc, A_STEP_TENANT, NULL)) : NULL;
			dir->nsteps++;
		}
		systable_endscan(sscan);
	}
	systable_endscan(mscan);
	table_close(srel, AccessShareLock);
	table_close(mrel, AccessShareLock);

	/*
	 * Slot steps sorted by slot for binary search, tenant steps after them;
	 * an index permutation keeps each tenant with its step.
	 */
	{
		int		   *order = palloc(sizeof(int) * Max(dir->nsteps, 1));
		RouteStep  *sorted = palloc(sizeof(RouteStep) * Max(dir->nsteps, 1));

		for (int i = 0; i < dir->nsteps; i++)
		{
			sorted[i] = dir->steps[i];
			order[i] = i;
		}
		/* insertion sort: steps in flight are few */
		for (int i = 1; i < dir->nsteps; i++)
			for (int j = i; j > 0 && compare_steps(&sorted[order[j - 1]], &sorted[order[j]]) > 0; j--)
			{
				int			t = order[j];

				order[j] = order[j - 1];
				order[j - 1] = t;
			}
		tenants = palloc(sizeof(PendingTenant) * Max(dir->nsteps, 1));
		dir->nslot_steps = 0;
		for (int i = 0; i < dir->nsteps; i++)
		{
			dir->steps[i] = sorted[order[i]];
			if (dir->steps[i].slot >= 0)
				dir->nslot_steps++;
			else
			{
				text	   *t = tenant_texts[order[i]];

				tenants[ntenants].data = VARDATA_ANY(t);
				tenants[ntenants].len = VARSIZE_ANY_EXHDR(t);
				tenants[ntenants].value = i;
				ntenants++;
			}
		}
	}
	build_tenant_map(&dir->tenant_steps, tenants, ntenants);
}

static RouteDirectory *
load_directory(const char *name, int name_len, text *name_text,
			   const DirectoryRow *row, Snapshot snapshot)
{
	/*
	 * Built in a context under the statement's until it is complete, so an
	 * error halfway leaks nothing; then moved under CacheMemoryContext.
	 */
	MemoryContext context = AllocSetContextCreate(CurrentMemoryContext,
												  "chash directory",
												  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(context);
	RouteDirectory *dir = palloc0(sizeof(RouteDirectory));
	tenant_map	shard_map;

	dir->context = context;
	dir->name = palloc(name_len + 1);
	memcpy(dir->name, name, name_len);
	dir->name[name_len] = '\0';
	dir->name_len = name_len;
	MemoryContextSetIdentifier(context, dir->name);
	dir->version = row->version;
	dir->slot_count = row->slot_count;
	dir->method = row->method;
	dir->ktype = row->ktype;

	load_shards(dir, name_text, snapshot, &shard_map);
	load_slots(dir, name_text, snapshot, &shard_map);
	load_overrides(dir, name_text, snapshot, &shard_map);
	load_steps(dir, name_text, snapshot);

	MemoryContextSwitchTo(old);
	MemoryContextSetParent(context, CacheMemoryContext);
	return dir;
}

/* The directory for this snapshot and user, loading it when needed. */
static RouteDirectory *
directory_lookup(const char *name, int name_len, Snapshot snapshot)
{
	text	   *name_text = cstring_to_text_with_len(name, name_len);
	DirectoryRow row;
	RouteDirectory *dir;
	RouteDirectory **link;

	if (!callbacks_registered)
	{
		CacheRegisterRelcacheCallback(relcache_callback, (Datum) 0);
		RegisterXactCallback(xact_callback, NULL);
		callbacks_registered = true;
	}
	AcceptInvalidationMessages();
	lookup_catalog();
	check_privileges();
	if (!read_directory_row(name_text, snapshot, &row))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("directory \"%.*s\" does not exist", name_len, name)));

	for (link = &directories; *link != NULL; link = &(*link)->next)
	{
		dir = *link;
		if (dir->name_len == name_len && memcmp(dir->name, name, name_len) == 0)
		{
			MemoryContext old;

			if (dir->version == row.version)
				return dir;
			/* unlink; freed at transaction end; other call sites recheck */
			old = MemoryContextSwitchTo(TopMemoryContext);
			*link = dir->next;
			retired_contexts = lappend(retired_contexts, dir->context);
			MemoryContextSwitchTo(old);
			cache_generation++;
			break;
		}
	}
	dir = load_directory(name, name_len, name_text, &row, snapshot);
	dir->next = directories;
	directories = dir;
	pfree(name_text);
	return dir;
}

RouteDirectory *
directory_for_call(FunctionCallInfo fcinfo, text *name)
{
	RouteCall  *call = (RouteCall *) fcinfo->flinfo->fn_extra;
	Snapshot	snapshot = ActiveSnapshotSet() ? GetActiveSnapshot() : GetTransactionSnapshot();
	const char *n = VARDATA_ANY(name);
	int			len = VARSIZE_ANY_EXHDR(name);

	if (call != NULL && call->dir != NULL &&
		call->generation == cache_generation &&
		call->name_len == len && memcmp(call->name, n, len) == 0 &&
		call->xmin == snapshot->xmin && call->xmax == snapshot->xmax &&
		call->curcid == snapshot->curcid &&
		call->completion_count == snapshot->snapXactCompletionCount &&
		call->userid == GetUserId())
		return call->dir;

	if (call == NULL)
	{
		call = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(RouteCall));
		fcinfo->flinfo->fn_extra = call;
	}
	call->dir = NULL;
	call->dir = directory_lookup(n, len, snapshot);
	if (call->name_capacity < len)
	{
		call->name_capacity = Max(len, 32);
		call->name = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, call->name_capacity);
	}
	memcpy(call->name, n, len);
	call->name_len = len;
	call->generation = cache_generation;
	call->userid = GetUserId();
	call->xmin = snapshot->xmin;
	call->xmax = snapshot->xmax;
	call->curcid = snapshot->curcid;
	call->completion_count = snapshot->snapXactCompletionCount;
	return call->dir;
}

static void
invalid_tenant(RouteDirectory *dir, const char *tenant, size_t len, tenant_status status)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
			 errmsg("invalid tenant \"%.*s\" for directory \"%s\"", (int) Min(len, 200), tenant, dir->name),
			 errdetail(status == TENANT_OUT_OF_RANGE ?
					   "The directory's tenants are of type %s and this value is out of range." :
					   "The directory's tenants are of type %s.", key_type_name(dir->ktype))));
}

void
route_key_init(RouteDirectory *dir, const char *tenant, size_t len, RouteKey *key)
{
	int64		value = 0;
	pg_uuid_t	uuid;
	tenant_status status;

	switch (dir->ktype)
	{
		case KEY_TYPE_BIGINT:
			status = bigint_tenant_parse(tenant, len, &value);
			if (status != TENANT_OK)
				invalid_tenant(dir, tenant, len, status);
			key->len = bigint_tenant_format(value, key->buf);
			key->data = key->buf;
			break;
		case KEY_TYPE_UUID:
			status = uuid_tenant_parse(tenant, len, uuid.data);
			if (status != TENANT_OK)
				invalid_tenant(dir, tenant, len, status);
			uuid_tenant_format(uuid.data, key->buf);
			key->len = CANONICAL_UUID_LEN;
			key->data = key->buf;
			break;
		default:
			key->data = tenant;
			key->len = len;
			break;
	}
	key->have_xxh = false;
	switch (dir->method)
	{
		case SLOT_METHOD_PG_HASH:
			if (dir->ktype == KEY_TYPE_BIGINT)
				key->slot = chash_pg_partition_of(INT8OID, Int64GetDatum(value), dir->slot_count);
			else if (dir->ktype == KEY_TYPE_UUID)
				key->slot = chash_pg_partition_of(UUIDOID, UUIDPGetDatum(&uuid), dir->slot_count);
			else
			{
				/* a text Datum of the tenant, on the stack when it fits */
				union
				{
					int32		align;
					char		data[VARHDRSZ + 256];
				}			buf;
				text	   *t = len <= 256 ? (text *) buf.data : palloc(VARHDRSZ + len);

				SET_VARSIZE(t, VARHDRSZ + len);
				memcpy(VARDATA(t), key->data, len);
				key->slot = chash_pg_partition_of(TEXTOID, PointerGetDatum(t), dir->slot_count);
				if ((char *) t != buf.data)
					pfree(t);
			}
			break;
		case SLOT_METHOD_REDIS:
			key->slot = directory_text_slot(dir->method, key->data, key->len, 0, dir->slot_count);
			break;
		default:
			key->xxh = xxh64_hash(key->data, key->len, 0);
			key->have_xxh = true;
			key->slot = directory_text_slot(dir->method, key->data, key->len, key->xxh, dir->slot_count);
			break;
	}
}

static uint64
key_hash(RouteKey *key)
{
	if (!key->have_xxh)
	{
		key->xxh = xxh64_hash(key->data, key->len, 0);
		key->have_xxh = true;
	}
	return key->xxh;
}

int32
route_override(RouteDirectory *dir, RouteKey *key)
{
	const tenant_map_entry *e;

	if (dir->overrides.count == 0)
		return -1;
	e = tenant_map_get(&dir->overrides, key_hash(key), key->data, key->len);
	return e ? e->value : -1;
}

RouteStep *
route_step(RouteDirectory *dir, RouteKey *key, bool overridden)
{
	int			lo = 0;
	int			hi = dir->nslot_steps - 1;

	if (dir->nsteps == 0)
		return NULL;
	if (dir->tenant_steps.count > 0)
	{
		const tenant_map_entry *e = tenant_map_get(&dir->tenant_steps, key_hash(key),
												   key->data, key->len);

		if (e != NULL)
			return &dir->steps[e->value];
	}
	/* a pinned tenant does not move with its slot */
	if (overridden)
		return NULL;
	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (dir->steps[mid].slot == key->slot)
		{
			/* the first of equal slots: the oldest migration's step */
			while (mid > 0 && dir->steps[mid - 1].slot == key->slot)
				mid--;
			return &dir->steps[mid];
		}
		if (dir->steps[mid].slot < key->slot)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return NULL;
}
