/*
 * directory_load.h - building a RouteDirectory from the directory tables
 *
 * Every value read is checked before it is used: a row that breaks the
 * invariants (inserted with triggers or constraints off, or by a catalog
 * that lost them) is reported with 55000, naming the directory and the
 * row, and nothing is cached.
 */
#ifndef CHASH_DIRECTORY_LOAD_H
#define CHASH_DIRECTORY_LOAD_H

#include "postgres.h"

#include "utils/rel.h"
#include "utils/snapshot.h"

#include "directory_cache.h"
#include "directory_catalog.h"
#include "shard_names.h"

typedef struct DirectoryRow
{
	ItemPointerData tid;
	TransactionId xmin;			/* raw: freezing does not change it */
	int64		version;
	int32		slot_count;
	slot_method method;
	key_type	ktype;
} DirectoryRow;

/* The directory row the snapshot sees, checked; false when there is none. */
extern bool directory_read_row(const DirectoryCatalog *catalog, text *name,
							   Snapshot snapshot, DirectoryRow *row);

/*
 * The directory's shards, slots, overrides and steps in flight as the
 * snapshot sees them, in a new memory context under CacheMemoryContext.
 */
extern RouteDirectory *directory_load(const DirectoryCatalog *catalog, text *name,
									  const DirectoryRow *row, Snapshot snapshot);

/* What the loaders share while building (or catching up) one directory. */
typedef struct DirectoryLoader
{
	const DirectoryCatalog *catalog;
	RouteDirectory *dir;
	text	   *name;
	Snapshot	snapshot;
	shard_names shard_names;	/* shard name -> index into dir->shards */
} DirectoryLoader;

/* The pieces directory_apply.c shares with the loader. */
extern void directory_loader_map_shards(DirectoryLoader *loader);
extern int32 directory_loader_shard_index(DirectoryLoader *loader, text *shard);
extern void directory_loader_bad_shard(DirectoryLoader *loader, const char *table,
									   char *row_desc, text *shard) pg_attribute_noreturn();
extern text *directory_loader_tenant(DirectoryLoader *loader, text *tenant, const char *table,
									 const char *row_desc);
extern void directory_load_migration_steps(DirectoryLoader *loader, Relation rel, int64 migration,
										   int32 only_step, step_ref **refs, int *count,
										   int *capacity);
/* Sorts refs (dir->steps by value) into dir->step_index, in CurrentMemoryContext. */
extern void directory_index_steps(DirectoryLoader *loader, step_ref *refs, int count);

#endif
