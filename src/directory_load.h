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

#include "route_directory.h"
#include "directory_catalog.h"

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

#endif
