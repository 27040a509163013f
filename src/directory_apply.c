/*
 * directory_apply.c - catching a cached directory state up with the
 * changes committed after its version (docs/directory.md, "Routing cache")
 *
 * The bump triggers record which keys each version changed
 * (chash_directory_change).  A snapshot that sees version V of the
 * directory row sees exactly the history rows of versions up to V (one
 * transaction writes a directory's versions at a time, holding its row),
 * so the state at v becomes the state at V by reading, with the calling
 * statement's snapshot, the rows of the keys recorded in (v, V].  Where
 * that is not enough the caller loads the directory whole: history pruned
 * or missing, a version recorded as full, a shard gone, too many keys.
 * The state is changed in place; an error halfway marks it broken.
 */
#include "chash.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "directory_apply.h"
#include "directory_rows.h"

/* More keys than this and a reload is as cheap. */
#define CATCH_UP_MAX_KEYS 10000

typedef struct ChangedKeys
{
	List	   *shards;			/* text * */
	List	   *slots;			/* int */
	List	   *tenants;		/* text * */
	List	   *migrations;		/* int64 *, whole migrations */
	List	   *steps;			/* int64 * pairs: migration, step */
	int			count;
} ChangedKeys;

static int
compare_int64_pairs(const ListCell *a, const ListCell *b)
{
	const int64 *x = lfirst(a);
	const int64 *y = lfirst(b);

	for (int i = 0; i < 2; i++)
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	return 0;
}

static int
compare_int64s(const ListCell *a, const ListCell *b)
{
	const int64 *x = lfirst(a);
	const int64 *y = lfirst(b);

	return *x < *y ? -1 : *x > *y ? 1 : 0;
}

static int
compare_texts(const ListCell *a, const ListCell *b)
{
	const text *x = lfirst(a);
	const text *y = lfirst(b);
	int			lx = VARSIZE_ANY_EXHDR(x);
	int			ly = VARSIZE_ANY_EXHDR(y);
	int			c = memcmp(VARDATA_ANY(x), VARDATA_ANY(y), Min(lx, ly));

	return c != 0 ? c : lx < ly ? -1 : lx > ly ? 1 : 0;
}

/*
 * The keys (text) sorted, without repeats: a shard changed by several
 * versions is one new shard, not two (the catch-up adds a new one once).
 */
static List *
unique_texts(List *list)
{
	List	   *result = NIL;
	ListCell   *lc;

	list_sort(list, compare_texts);
	foreach(lc, list)
		if (result == NIL || compare_texts(list_tail(result), lc) != 0)
			result = lappend(result, lfirst(lc));
	list_free(list);
	return result;
}

/* The list (of int64 arrays of width 1 or 2) sorted, without repeats. */
static List *
unique_int64s(List *list, int width)
{
	List	   *result = NIL;
	const int64 *last = NULL;
	ListCell   *lc;

	list_sort(list, width == 2 ? compare_int64_pairs : compare_int64s);
	foreach(lc, list)
	{
		const int64 *v = lfirst(lc);

		if (last == NULL || memcmp(last, v, sizeof(int64) * width) != 0)
			result = lappend(result, lfirst(lc));
		last = v;
	}
	list_free(list);
	return result;
}

/*
 * The slots of a 'slot' key (one slot) or a 'slots' key (a batch's slots,
 * comma-separated: chash_directory_bump), each slot after the first
 * counted as a key of its own; false for a slot this directory does not
 * have (a reload says what is wrong) or too many keys.
 */
static bool
read_slots(char *list, int32 slot_count, ChangedKeys *keys)
{
	char	   *save = NULL;

	for (char *item = strtok_r(list, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save))
	{
		int32		slot = pg_strtoint32(item);

		if (slot < 0 || slot >= slot_count)
			return false;
		keys->slots = lappend_int(keys->slots, slot);
		if (item != list && ++keys->count > CATCH_UP_MAX_KEYS)
			return false;
	}
	return true;
}

/* The history after dir->version; false when it cannot describe it. */
static bool
read_history(const DirectoryCatalog *catalog, RouteDirectory *dir, text *name,
			 const DirectoryRow *row, Snapshot snapshot, ChangedKeys *keys)
{
	Relation	rel = table_open(catalog->change_table, NoLock);
	TupleDesc	desc = RelationGetDescr(rel);
	const AttrNumber *col = catalog->change_columns;
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tuple;
	bool		chained = false;
	bool		ok = true;
	char		since[32];

	snprintf(since, sizeof(since), INT64_FORMAT, dir->version);
	directory_name_key(&key[0], rel, col[CC_DIRECTORY], name);
	ScanKeyInit(&key[1], col[CC_VERSION], BTGreaterStrategyNumber, F_INT8GT,
				Int64GetDatum(dir->version));
	scan = systable_beginscan(rel, catalog->change_index, true, snapshot, 2, key);
	while (ok && HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		bool		isnull[3];
		Datum		version = heap_getattr(tuple, col[CC_VERSION], desc, &isnull[0]);
		Datum		kind_d = heap_getattr(tuple, col[CC_KIND], desc, &isnull[1]);
		Datum		key_d = heap_getattr(tuple, col[CC_KEY], desc, &isnull[2]);
		char	   *kind;
		text	   *k;

		CHECK_FOR_INTERRUPTS();
		if (isnull[0] || isnull[1] || isnull[2] || DatumGetInt64(version) > row->version ||
			++keys->count > CATCH_UP_MAX_KEYS)
		{
			ok = false;
			break;
		}
		kind = TextDatumGetCString(kind_d);
		k = DatumGetTextPCopy(key_d);
		if (strcmp(kind, "version") == 0)
		{
			if (strcmp(text_to_cstring(k), since) == 0)
				chained = true;
		}
		else if (strcmp(kind, "origin") == 0)
			continue;			/* who made the version (failover), no routing state */
		else if (strcmp(kind, "shard") == 0)
			keys->shards = lappend(keys->shards, k);
		else if (strcmp(kind, "slot") == 0 || strcmp(kind, "slots") == 0)
			ok = read_slots(text_to_cstring(k), dir->slot_count, keys);
		else if (strcmp(kind, "override") == 0)
			keys->tenants = lappend(keys->tenants, k);
		else if (strcmp(kind, "migration") == 0)
		{
			int64	   *m = palloc(sizeof(int64));

			*m = pg_strtoint64(text_to_cstring(k));
			keys->migrations = lappend(keys->migrations, m);
		}
		else if (strcmp(kind, "step") == 0)
		{
			char	   *s = text_to_cstring(k);
			char	   *colon = strchr(s, ':');
			int64	   *pair = palloc(sizeof(int64) * 2);

			if (colon == NULL)
				ok = false;
			else
			{
				*colon = '\0';
				pair[0] = pg_strtoint64(s);
				pair[1] = pg_strtoint32(colon + 1);
				keys->steps = lappend(keys->steps, pair);
			}
		}
		else
			ok = false;			/* "full", or a kind this build does not know */
	}
	systable_endscan(scan);
	table_close(rel, NoLock);
	/* a key changed by several versions is read once */
	keys->migrations = unique_int64s(keys->migrations, 1);
	keys->steps = unique_int64s(keys->steps, 2);
	keys->shards = unique_texts(keys->shards);
	keys->tenants = unique_texts(keys->tenants);
	return ok && chained;
}

/* The one row of an index lookup, copied; NULL when there is none. */
static HeapTuple
fetch_row(Relation rel, Oid index, Snapshot snapshot, ScanKeyData *key, int nkeys)
{
	SysScanDesc scan = systable_beginscan(rel, index, true, snapshot, nkeys, key);
	HeapTuple	tuple = systable_getnext(scan);
	HeapTuple	copy = HeapTupleIsValid(tuple) ? heap_copytuple(tuple) : NULL;

	systable_endscan(scan);
	return copy;
}

/* A shard row without a valid state: the loader reports it. */
static bool
shard_is_bad(HeapTuple tuple, TupleDesc desc, const DirectoryCatalog *catalog)
{
	bool		isnull;
	Datum		state = heap_getattr(tuple, catalog->columns[C_SHARD_STATE], desc, &isnull);

	return isnull || directory_row_state(DatumGetTextPP(state), STATE_SHARD) < 0;
}

/* The overrides in a map (and filter) sized anew for their count. */
static void
overrides_rebuild(RouteDirectory *dir)
{
	tenant_map	old = dir->overrides;
	size_t		capacity = tenant_map_capacity((size_t) old.count * 2 + 16);
	size_t		words = tenant_map_filter_words((size_t) old.count * 2 + 16);

	tenant_map_init(&dir->overrides, MemoryContextAllocZero(dir->context, sizeof(tenant_map_entry) * capacity),
					capacity, MemoryContextAllocZero(dir->context, sizeof(uint64) * words), words);
	for (uint32 i = 0; i <= old.mask; i++)
		if (old.entries[i].key != NULL)
			tenant_map_put(&dir->overrides, old.entries[i].hash, old.entries[i].key,
						   old.entries[i].len, old.entries[i].value);
	pfree(old.entries);
	if (old.filter)
		pfree(old.filter);
	dir->overrides_removed = 0;
}

/* Room for one more override: the map stays at most half full. */
static void
overrides_make_room(RouteDirectory *dir)
{
	if (((size_t) dir->overrides.count + 1) * 2 > (size_t) dir->overrides.mask + 1)
		overrides_rebuild(dir);
}

/*
 * A removed key keeps its filter bits (a filter can only err towards
 * "maybe"), so after as many removals as there are keys the filter is
 * built again: otherwise pin and unpin churn would fill it with ones.
 */
static void
overrides_remove(RouteDirectory *dir, uint64 hash, const char *t, uint32 len)
{
	const tenant_map_entry *e = tenant_map_get(&dir->overrides, hash, t, len);
	const char *key;

	if (e == NULL)
		return;
	key = e->key;
	(void) tenant_map_remove(&dir->overrides, hash, t, len);
	pfree(unconstify(char *, key));		/* allocated in dir->context */
	if (++dir->overrides_removed > dir->overrides.count + 64)
		overrides_rebuild(dir);
}

static bool
migration_listed(List *migrations, int64 id)
{
	ListCell   *lc;

	foreach(lc, migrations)
		if (*(int64 *) lfirst(lc) == id)
		return true;
	return false;
}

/*
 * Whether a step is in the sorted list of changed steps: a binary search,
 * since a batch's version changes as many steps as there are in flight.
 */
static bool
step_listed(List *steps, int64 migration, int32 step)
{
	int			lo = 0;
	int			hi = list_length(steps) - 1;

	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		const int64 *pair = list_nth(steps, mid);

		if (pair[0] == migration && pair[1] == step)
			return true;
		if (pair[0] < migration || (pair[0] == migration && pair[1] < step))
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return false;
}

/* Steps in flight again: kept ones, plus the changed ones read anew. */
static void
apply_steps(DirectoryLoader *loader, ChangedKeys *keys)
{
	const DirectoryCatalog *catalog = loader->catalog;
	RouteDirectory *dir = loader->dir;
	Relation	mrel = table_open(catalog->tables[T_MIGRATION], NoLock);
	Relation	srel = table_open(catalog->tables[T_STEP], NoLock);
	TupleDesc	mdesc = RelationGetDescr(mrel);
	MemoryContext context = AllocSetContextCreate(dir->context, "chash directory steps",
												  ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(context);
	List	   *running = NIL;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	int			capacity = Max(16, (int) dir->step_index.count + 16);
	int			count = 0;
	step_ref   *refs = palloc(sizeof(step_ref) * capacity);
	RouteStep  *old_steps = dir->steps;
	ListCell   *lc;

	/* chash_migration_running: the running migrations of the directory */
	directory_name_key(&key, mrel, catalog->columns[C_MIGRATION_DIRECTORY], loader->name);
	scan = systable_beginscan(mrel, catalog->indexes[T_MIGRATION], true, loader->snapshot, 1, &key);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		bool		isnull;
		Datum		id = heap_getattr(tuple, catalog->columns[C_MIGRATION_ID], mdesc, &isnull);
		text	   *status = directory_row_text(tuple, mdesc, catalog->columns[C_MIGRATION_STATUS]);
		int64	   *m;

		if (isnull || directory_row_state(status, STATE_MIGRATION) != MIGRATION_RUNNING)
			continue;
		m = palloc(sizeof(int64));
		*m = DatumGetInt64(id);
		running = lappend(running, m);
	}
	systable_endscan(scan);

	dir->steps = palloc(sizeof(RouteStep) * capacity);
	for (size_t i = 0; i < dir->step_index.count; i++)
	{
		const step_ref *r = &dir->step_index.refs[i];
		bool		changed = !migration_listed(running, r->migration) ||
			migration_listed(keys->migrations, r->migration) ||
			step_listed(keys->steps, r->migration, r->step);

		CHECK_FOR_INTERRUPTS();
		if (changed)
			continue;
		refs[count] = *r;
		if (r->tenant != NULL)
			refs[count].tenant = memcpy(palloc(r->tenant_len + 1), r->tenant, r->tenant_len);
		dir->steps[count] = old_steps[r->value];
		refs[count].value = count;
		count++;
	}
	foreach(lc, keys->migrations)
	{
		int64		m = *(int64 *) lfirst(lc);

		if (migration_listed(running, m))
			directory_load_migration_steps(loader, srel, m, 0, &refs, &count, &capacity);
	}
	foreach(lc, keys->steps)
	{
		int64	   *pair = lfirst(lc);

		if (migration_listed(running, pair[0]) && !migration_listed(keys->migrations, pair[0]))
			directory_load_migration_steps(loader, srel, pair[0], (int32) pair[1],
										   &refs, &count, &capacity);
	}
	directory_index_steps(loader, refs, count);
	MemoryContextSwitchTo(old);
	table_close(srel, NoLock);
	table_close(mrel, NoLock);
	MemoryContextDelete(dir->step_context);
	dir->step_context = context;
}

bool
directory_catch_up(const DirectoryCatalog *catalog, RouteDirectory *dir, text *name,
				   const DirectoryRow *row, Snapshot snapshot)
{
	ChangedKeys keys = {0};
	DirectoryLoader loader;
	Relation	rel;
	List	   *shard_rows = NIL;
	bool		added = false;
	ListCell   *lc;

	if (!OidIsValid(catalog->change_table) || dir->version >= row->version ||
		!read_history(catalog, dir, name, row, snapshot, &keys))
		return false;

	/* Shards first, without changing anything: one gone means a reload. */
	rel = table_open(catalog->tables[T_SHARD], NoLock);
	foreach(lc, keys.shards)
	{
		ScanKeyData key[2];
		HeapTuple	tuple;

		directory_name_key(&key[0], rel, catalog->columns[C_SHARD_DIRECTORY], name);
		directory_name_key(&key[1], rel, catalog->columns[C_SHARD_SHARD], lfirst(lc));
		tuple = fetch_row(rel, catalog->indexes[T_SHARD], snapshot, key, 2);
		if (tuple == NULL || shard_is_bad(tuple, RelationGetDescr(rel), catalog))
		{
			table_close(rel, NoLock);
			return false;		/* gone (or bad: the loader says why) */
		}
		shard_rows = lappend(shard_rows, tuple);
	}

	/* From here the state is half old, half new until the end. */
	dir->broken = true;
	loader.catalog = catalog;
	loader.dir = dir;
	loader.name = name;
	loader.snapshot = snapshot;
	directory_loader_map_shards(&loader);
	foreach(lc, shard_rows)
	{
		HeapTuple	tuple = lfirst(lc);
		bool		isnull;
		text	   *shard = DatumGetTextPP(heap_getattr(tuple, catalog->columns[C_SHARD_SHARD],
														 RelationGetDescr(rel), &isnull));
		int			state = directory_row_state(DatumGetTextPP(heap_getattr(tuple, catalog->columns[C_SHARD_STATE],
																			  RelationGetDescr(rel), &isnull)),
											STATE_SHARD);
		int			i = shard_names_find(&loader.shard_names, VARDATA_ANY(shard),
										 VARSIZE_ANY_EXHDR(shard));

		if (i < 0)
		{
			MemoryContext old = MemoryContextSwitchTo(dir->context);

			added = true;
			dir->shards = repalloc_huge(dir->shards, sizeof(RouteShard) * (dir->nshards + 1));
			i = dir->nshards++;
			dir->shards[i].name = cstring_to_text_with_len(VARDATA_ANY(shard), VARSIZE_ANY_EXHDR(shard));
			MemoryContextSwitchTo(old);
		}
		dir->shards[i].state = state;
	}
	table_close(rel, NoLock);
	if (added)
		directory_loader_map_shards(&loader);

	rel = table_open(catalog->tables[T_SLOT], NoLock);
	foreach(lc, keys.slots)
	{
		int32		slot = lfirst_int(lc);
		ScanKeyData key[2];
		HeapTuple	tuple;
		bool		isnull;
		text	   *shard;
		int32		owner;

		CHECK_FOR_INTERRUPTS();
		directory_name_key(&key[0], rel, catalog->columns[C_SLOT_DIRECTORY], name);
		ScanKeyInit(&key[1], catalog->columns[C_SLOT_SLOT], BTEqualStrategyNumber, F_INT4EQ,
					Int32GetDatum(slot));
		tuple = fetch_row(rel, catalog->indexes[T_SLOT], snapshot, key, 2);
		if (tuple == NULL)
		{
			/* a slot without owner: the reload reports it (dir stays broken) */
			table_close(rel, NoLock);
			return false;
		}
		shard = DatumGetTextPP(heap_getattr(tuple, catalog->columns[C_SLOT_SHARD],
											RelationGetDescr(rel), &isnull));
		owner = isnull ? -1 : directory_loader_shard_index(&loader, shard);
		if (owner < 0)
			directory_loader_bad_shard(&loader, directory_table_names[T_SLOT],
									   psprintf("Slot %d", slot), isnull ? NULL : shard);
		dir->slot_owner[slot] = owner;
	}
	table_close(rel, NoLock);

	rel = table_open(catalog->tables[T_OVERRIDE], NoLock);
	foreach(lc, keys.tenants)
	{
		text	   *tenant = lfirst(lc);
		const char *t = VARDATA_ANY(tenant);
		uint32		len = VARSIZE_ANY_EXHDR(tenant);
		uint64		hash = xxh64_hash(t, len, 0);
		ScanKeyData key[2];
		HeapTuple	tuple;

		CHECK_FOR_INTERRUPTS();
		directory_name_key(&key[0], rel, catalog->columns[C_OVERRIDE_DIRECTORY], name);
		directory_name_key(&key[1], rel, catalog->columns[C_OVERRIDE_TENANT], tenant);
		tuple = fetch_row(rel, catalog->indexes[T_OVERRIDE], snapshot, key, 2);
		if (tuple == NULL)
			overrides_remove(dir, hash, t, len);
		else
		{
			bool		isnull;
			text	   *shard = DatumGetTextPP(heap_getattr(tuple, catalog->columns[C_OVERRIDE_SHARD],
															 RelationGetDescr(rel), &isnull));
			int32		owner = isnull ? -1 : directory_loader_shard_index(&loader, shard);
			const tenant_map_entry *e;

			directory_loader_tenant(&loader, tenant, directory_table_names[T_OVERRIDE], "An override");
			if (owner < 0)
				directory_loader_bad_shard(&loader, directory_table_names[T_OVERRIDE],
										   psprintf("The override of tenant \"%.*s\"",
													chash_quote_len(t, len), t),
										   isnull ? NULL : shard);
			e = tenant_map_get(&dir->overrides, hash, t, len);
			if (e != NULL)
				((tenant_map_entry *) e)->value = owner;
			else
			{
				overrides_make_room(dir);
				tenant_map_put(&dir->overrides, hash,
							   memcpy(MemoryContextAlloc(dir->context, len + 1), t, len), len, owner);
			}
		}
	}
	table_close(rel, NoLock);

	if (keys.migrations != NIL || keys.steps != NIL)
		apply_steps(&loader, &keys);

	dir->version = row->version;
	dir->broken = false;
	return true;
}
