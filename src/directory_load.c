/*
 * directory_load.c - building a RouteDirectory from the directory tables,
 * checking every value read (directory_load.h)
 *
 * The tables' constraints and triggers keep the invariants, but the
 * loader does not rely on them: the owner can insert rows with triggers
 * disabled, and a value out of range here would index memory out of
 * bounds in every routing call of every backend.  Bad rows are 55000
 * (object not in prerequisite state), not XX001: the storage is fine, the
 * directory is not.  Every loop checks for interrupts.
 */
#include "chash.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "directory_load.h"
#include "directory_rows.h"
#include "redis_slot.h"
#include "shard_names.h"

/*
 * One directory's rows of a directory table: scan_open, then scan_begin
 * (by the table's index on the directory, or the whole table in physical
 * order), scan_next until it returns no row (checking for interrupts
 * before each row), scan_end.
 */
typedef struct DirectoryScan
{
	DirectoryTable which;
	Relation	rel;
	TupleDesc	desc;
	const char *table;			/* its name, for messages */
	ScanKeyData key;
	SysScanDesc scan;
} DirectoryScan;

static void
scan_open(DirectoryScan *s, const DirectoryCatalog *catalog, DirectoryTable which)
{
	s->which = which;
	s->rel = table_open(catalog->tables[which], NoLock);
	s->desc = RelationGetDescr(s->rel);
	s->table = directory_table_names[which];
}

static void
scan_begin(DirectoryScan *s, const DirectoryCatalog *catalog, AttrNumber directory_column,
		   text *name, Snapshot snapshot, bool indexed)
{
	directory_name_key(&s->key, s->rel, directory_column, name);
	s->scan = systable_beginscan(s->rel, catalog->indexes[s->which], indexed, snapshot, 1, &s->key);
}

/* The loader's directory's rows of a table, by its index. */
static void
scan_loader(DirectoryScan *s, DirectoryLoader *loader, DirectoryTable which, DirectoryColumn directory_column)
{
	scan_open(s, loader->catalog, which);
	scan_begin(s, loader->catalog, COLUMN(loader, directory_column), loader->name, loader->snapshot, true);
}

static HeapTuple
scan_next(DirectoryScan *s)
{
	HeapTuple	tuple = systable_getnext(s->scan);

	if (HeapTupleIsValid(tuple))
		CHECK_FOR_INTERRUPTS();
	return tuple;
}

static void
scan_end(DirectoryScan *s)
{
	systable_endscan(s->scan);
	table_close(s->rel, NoLock);
}

bool
directory_read_row(const DirectoryCatalog *catalog, text *name, Snapshot snapshot,
				   DirectoryRow *row)
{
	const char *n = VARDATA_ANY(name);
	int			n_len = VARSIZE_ANY_EXHDR(name);
	DirectoryScan scan;
	TupleDesc	desc;
	HeapTuple	tuple;
	bool		found = false;
	const char *table = directory_table_names[T_DIRECTORY];

	scan_open(&scan, catalog, T_DIRECTORY);
	scan_begin(&scan, catalog, catalog->columns[C_DIRECTORY_NAME], name, snapshot, true);
	desc = scan.desc;
	while (HeapTupleIsValid(tuple = scan_next(&scan)))
	{
		bool		null_count;
		bool		null_version;
		Datum		count = directory_row_value(tuple, desc, catalog->columns[C_DIRECTORY_SLOT_COUNT], &null_count);
		Datum		version = directory_row_value(tuple, desc, catalog->columns[C_DIRECTORY_VERSION], &null_version);
		text	   *method = directory_row_text(tuple, desc, catalog->columns[C_DIRECTORY_SLOT_METHOD]);
		text	   *ktype = directory_row_text(tuple, desc, catalog->columns[C_DIRECTORY_KEY_TYPE]);

		if (found)
			directory_bad_row(n, n_len, table, pstrdup("The directory has more than one row."));
		found = true;
		if (null_count || null_version || method == NULL || ktype == NULL)
			directory_bad_row(n, n_len, table,
					pstrdup("Its slot_count, slot_method, key_type and version must not be null."));
		row->slot_count = DatumGetInt32(count);
		switch (directory_layout_check(row->slot_count, VARDATA_ANY(method),
									   VARSIZE_ANY_EXHDR(method), &row->method))
		{
			case LAYOUT_OK:
				break;
			case LAYOUT_SLOT_COUNT:
				directory_bad_row(n, n_len, table,
						psprintf("Its slot_count is %d; it must be between 1 and %d.",
								 row->slot_count, DIRECTORY_MAX_SLOTS));
			case LAYOUT_METHOD:
				directory_bad_row(n, n_len, table, psprintf("Its slot_method %s is not one of the slot methods.",
												  directory_quoted(method)));
			case LAYOUT_REDIS_SLOTS:
				directory_bad_row(n, n_len, table,
						psprintf("Its slot method is \"redis\" and its slot_count %d, not %d.",
								 row->slot_count, REDIS_CLUSTER_SLOTS));
		}
		if (key_type_parse(VARDATA_ANY(ktype), VARSIZE_ANY_EXHDR(ktype), &row->ktype) != 0)
			directory_bad_row(n, n_len, table, psprintf("Its key_type %s is not one of the key types.",
											  directory_quoted(ktype)));
		row->version = DatumGetInt64(version);
		row->tid = tuple->t_self;
		row->xmin = HeapTupleHeaderGetRawXmin(tuple->t_data);
	}
	scan_end(&scan);
	return found;
}

static void
load_shards(DirectoryLoader *loader)
{
	RouteDirectory *dir = loader->dir;
	DirectoryScan scan;
	HeapTuple	tuple;
	int			capacity = 16;

	dir->shards = palloc(sizeof(RouteShard) * capacity);
	dir->nshards = 0;
	scan_loader(&scan, loader, T_SHARD, C_SHARD_DIRECTORY);
	while (HeapTupleIsValid(tuple = scan_next(&scan)))
	{
		text	   *name = directory_row_text(tuple, scan.desc, COLUMN(loader, C_SHARD_SHARD));
		text	   *state = directory_row_text(tuple, scan.desc, COLUMN(loader, C_SHARD_STATE));
		RouteShard *s;

		if (name == NULL)
			BAD_ROW(loader, scan.table, "A shard has a null name.");
		if (dir->nshards == capacity)
		{
			capacity *= 2;
			dir->shards = repalloc_huge(dir->shards, sizeof(RouteShard) * capacity);
		}
		s = &dir->shards[dir->nshards++];
		/* a plain 4-byte-header copy, which routing copies out as is */
		s->name = cstring_to_text_with_len(VARDATA_ANY(name), VARSIZE_ANY_EXHDR(name));
		s->state = directory_row_state(state, STATE_SHARD);
		if (s->state < 0)
			BAD_ROW(loader, scan.table, "Shard %s has state %s; it must be %s.",
					directory_quoted(name), state ? directory_quoted(state) : "null",
					directory_state_list(STATE_SHARD));
	}
	scan_end(&scan);

	directory_loader_map_shards(loader);
}

static void
load_slots(DirectoryLoader *loader)
{
	RouteDirectory *dir = loader->dir;
	AttrNumber	slot_col = COLUMN(loader, C_SLOT_SLOT);
	AttrNumber	shard_col = COLUMN(loader, C_SLOT_SHARD);
	DirectoryScan scan;
	const char *table;
	TupleDesc	desc;
	Datum	   *values;
	bool	   *nulls;
	HeapTuple	tuple;
	int32		owned = 0;

	scan_open(&scan, loader->catalog, T_SLOT);
	table = scan.table;
	desc = scan.desc;
	values = palloc(sizeof(Datum) * desc->natts);
	nulls = palloc(sizeof(bool) * desc->natts);
	dir->slot_owner = palloc(sizeof(int32) * dir->slot_count);
	memset(dir->slot_owner, 0xff, sizeof(int32) * dir->slot_count);	/* -1: no owner yet */

	/*
	 * Slots land in the array by number, so any order will do.  When the
	 * directory is a large share of the table, reading the whole table in
	 * physical order (visibility checked a page at a time) beats fetching
	 * each row through the index (a buffer lock and a visibility check per
	 * row): 1,048,576 slots load in about half the time.  The table's size
	 * in pages is always current; ~150 slot rows fill a page.
	 */
	scan_begin(&scan, loader->catalog, COLUMN(loader, C_SLOT_DIRECTORY), loader->name, loader->snapshot,
			   (double) dir->slot_count * 4 < (double) RelationGetNumberOfBlocks(scan.rel) * 150);
	while (HeapTupleIsValid(tuple = scan_next(&scan)))
	{
		int32		slot;
		text	   *shard;

		heap_deform_tuple(tuple, desc, values, nulls);
		if (nulls[slot_col - 1])
			BAD_ROW(loader, table, "A slot row has a null slot number.");
		slot = DatumGetInt32(values[slot_col - 1]);
		if (slot < 0 || slot >= dir->slot_count)
			BAD_ROW(loader, table, "Slot %d is out of range; the directory's slots are 0 .. %d.",
					slot, dir->slot_count - 1);
		if (dir->slot_owner[slot] >= 0)
			BAD_ROW(loader, table, "Slot %d has more than one row.", slot);
		shard = nulls[shard_col - 1] ? NULL : DatumGetTextPP(values[shard_col - 1]);
		dir->slot_owner[slot] = directory_loader_shard_index(loader, shard);
		if (dir->slot_owner[slot] < 0)
			directory_loader_bad_shard(loader, table, psprintf("Slot %d", slot), shard);
		owned++;
	}
	scan_end(&scan);
	pfree(values);
	pfree(nulls);
	if (owned != dir->slot_count)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("directory \"%.*s\" is incomplete",
						chash_quote_len(dir->name, dir->name_len), dir->name),
				 errdetail("%d of its %d slots have an owner.", owned, dir->slot_count),
				 errhint("A restore loads the slots after the directory; wait for it, or recreate the directory.")));
}

static void
load_overrides(DirectoryLoader *loader)
{
	RouteDirectory *dir = loader->dir;
	const char *table = directory_table_names[T_OVERRIDE];
	DirectoryScan scan;
	HeapTuple	tuple;
	int			capacity = 64;
	int			count = 0;
	char	  **data = palloc(sizeof(char *) * capacity);
	uint32	   *lens = palloc(sizeof(uint32) * capacity);
	int32	   *shards = palloc(sizeof(int32) * capacity);
	size_t		map_capacity;
	size_t		words;

	scan_loader(&scan, loader, T_OVERRIDE, C_OVERRIDE_DIRECTORY);
	while (HeapTupleIsValid(tuple = scan_next(&scan)))
	{
		text	   *tenant = directory_row_text(tuple, scan.desc, COLUMN(loader, C_OVERRIDE_TENANT));
		text	   *shard = directory_row_text(tuple, scan.desc, COLUMN(loader, C_OVERRIDE_SHARD));

		directory_loader_tenant(loader, tenant, table, "An override");
		if (count == capacity)
		{
			capacity *= 2;
			data = repalloc_huge(data, sizeof(char *) * capacity);
			lens = repalloc_huge(lens, sizeof(uint32) * capacity);
			shards = repalloc_huge(shards, sizeof(int32) * capacity);
		}
		lens[count] = VARSIZE_ANY_EXHDR(tenant);
		data[count] = palloc(lens[count] + 1);
		memcpy(data[count], VARDATA_ANY(tenant), lens[count]);
		shards[count] = directory_loader_shard_index(loader, shard);
		if (shards[count] < 0)
			directory_loader_bad_shard(loader, table, psprintf("The override of tenant %s", directory_quoted(tenant)), shard);
		count++;
	}
	scan_end(&scan);

	map_capacity = tenant_map_capacity(count);
	words = tenant_map_filter_words(count);
	tenant_map_init(&dir->overrides, palloc0(sizeof(tenant_map_entry) * map_capacity), map_capacity,
					palloc0(sizeof(uint64) * words), words);
	for (int i = 0; i < count; i++)
	{
		CHECK_FOR_INTERRUPTS();
		if (!tenant_map_put(&dir->overrides, xxh64_hash(data[i], lens[i], 0), data[i], lens[i], shards[i]))
			BAD_ROW(loader, table, "Tenant \"%.*s\" has more than one override.",
					chash_quote_len(data[i], lens[i]), data[i]);
	}
	pfree(data);
	pfree(lens);
	pfree(shards);
}

/* Steps in flight: copying or fenced steps of running migrations. */
static void
load_steps(DirectoryLoader *loader)
{
	RouteDirectory *dir = loader->dir;
	Relation	srel = table_open(loader->catalog->tables[T_STEP], NoLock);
	DirectoryScan scan;
	HeapTuple	tuple;
	int			capacity = 16;
	int			count = 0;
	step_ref   *refs = palloc(sizeof(step_ref) * capacity);

	dir->steps = palloc(sizeof(RouteStep) * capacity);
	/* chash_migration_running indexes running migrations by directory */
	scan_loader(&scan, loader, T_MIGRATION, C_MIGRATION_DIRECTORY);
	while (HeapTupleIsValid(tuple = scan_next(&scan)))
	{
		text	   *status = directory_row_text(tuple, scan.desc, COLUMN(loader, C_MIGRATION_STATUS));
		bool		id_null;
		Datum		id = directory_row_value(tuple, scan.desc, COLUMN(loader, C_MIGRATION_ID), &id_null);
		int			state;

		if (id_null)
			BAD_ROW(loader, scan.table, "A migration has a null id.");
		state = directory_row_state(status, STATE_MIGRATION);
		if (state < 0)
			BAD_ROW(loader, scan.table,
					"Migration " INT64_FORMAT " has status %s; it must be %s.",
					DatumGetInt64(id), status ? directory_quoted(status) : "null",
					directory_state_list(STATE_MIGRATION));
		if (state != MIGRATION_RUNNING)
			continue;
		directory_load_migration_steps(loader, srel, DatumGetInt64(id), 0, &refs, &count, &capacity);
	}
	scan_end(&scan);
	table_close(srel, NoLock);
	directory_index_steps(loader, refs, count);
}

RouteDirectory *
directory_load(const DirectoryCatalog *catalog, text *name, const DirectoryRow *row,
			   Snapshot snapshot)
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
	DirectoryLoader loader;

	dir->context = context;
	dir->name_len = VARSIZE_ANY_EXHDR(name);
	dir->name = palloc(dir->name_len + 1);
	memcpy(dir->name, VARDATA_ANY(name), dir->name_len);
	dir->name[dir->name_len] = '\0';
	MemoryContextSetIdentifier(context, dir->name);
	dir->version = row->version;
	dir->slot_count = row->slot_count;
	dir->method = row->method;
	dir->ktype = row->ktype;

	loader.catalog = catalog;
	loader.dir = dir;
	loader.name = name;
	loader.snapshot = snapshot;
	load_shards(&loader);
	load_slots(&loader);
	load_overrides(&loader);
	/* steps in a context of their own: a catch-up replaces them whole */
	dir->step_context = AllocSetContextCreate(context, "chash directory steps",
											  ALLOCSET_SMALL_SIZES);
	MemoryContextSwitchTo(dir->step_context);
	load_steps(&loader);
	MemoryContextSwitchTo(context);

	MemoryContextSwitchTo(old);
	MemoryContextSetParent(context, CacheMemoryContext);
	return dir;
}
