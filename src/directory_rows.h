/*
 * directory_rows.h - the row code the full load (directory_load.c) and the
 * catch-up (directory_apply.c) share: a DirectoryLoader builds or amends
 * one RouteDirectory from the rows its snapshot sees
 */
#ifndef CHASH_DIRECTORY_ROWS_H
#define CHASH_DIRECTORY_ROWS_H

#include "postgres.h"

#include "access/htup_details.h"
#include "access/skey.h"
#include "utils/rel.h"
#include "utils/snapshot.h"

#include "route_directory.h"
#include "directory_catalog.h"
#include "shard_names.h"
#include "states.h"

/* Steps merged or tenants indexed between two interrupt checks. */
#define LOAD_PIECE 65536

/* What the loaders share while building (or catching up) one directory. */
typedef struct DirectoryLoader
{
	const DirectoryCatalog *catalog;
	RouteDirectory *dir;
	text	   *name;
	Snapshot	snapshot;
	shard_names shard_names;	/* shard name -> index into dir->shards */
} DirectoryLoader;

#define COLUMN(loader, c) ((loader)->catalog->columns[c])

/* 55000 for a row of table that routing cannot use; detail says why. */
extern void directory_bad_row(const char *name, int name_len, const char *table,
							  char *detail) pg_attribute_noreturn();

#define BAD_ROW(loader, table, ...) \
	directory_bad_row((loader)->dir->name, (loader)->dir->name_len, (table), psprintf(__VA_ARGS__))

/* A quoted piece of user text for a detail message (palloc'd). */
extern char *directory_quoted(text *t);

/* Whether a text value is the string s. */
extern bool directory_text_is(text *t, const char *s);

/* The state a text value names (states.h); -1 when it is null or no state of kind. */
extern int	directory_row_state(text *value, state_kind kind);

/* The kind's state names for a message: "running, done or cancelled". */
extern char *directory_state_list(state_kind kind);

/* A key "column = name" on a text column. */
extern void directory_name_key(ScanKeyData *key, Relation rel, AttrNumber attnum, text *name);

static inline Datum
directory_row_value(HeapTuple tuple, TupleDesc desc, AttrNumber attnum, bool *isnull)
{
	return heap_getattr(tuple, attnum, desc, isnull);
}

/* A text column's value, NULL when null. */
static inline text *
directory_row_text(HeapTuple tuple, TupleDesc desc, AttrNumber attnum)
{
	bool		isnull;
	Datum		d = heap_getattr(tuple, attnum, desc, &isnull);

	return isnull ? NULL : DatumGetTextPP(d);
}

/* Maps dir->shards' names to their indexes (55000 for a repeated name). */
extern void directory_loader_map_shards(DirectoryLoader *loader);

/* The index of a shard named in a row; -1 when it is null or unknown. */
extern int32 directory_loader_shard_index(DirectoryLoader *loader, text *shard);

/* The 55000 for a row whose shard directory_loader_shard_index refused. */
extern void directory_loader_bad_shard(DirectoryLoader *loader, const char *table,
									   char *row_desc, text *shard) pg_attribute_noreturn();

/* A tenant of a row: 55000 unless not null and in the key type's canonical form. */
extern text *directory_loader_tenant(DirectoryLoader *loader, text *tenant, const char *table,
									 const char *row_desc);

/*
 * Reads the steps of one running migration (or its step only_step, when
 * not 0); keeps those in flight, appending to refs and dir->steps.
 */
extern void directory_load_migration_steps(DirectoryLoader *loader, Relation rel, int64 migration,
										   int32 only_step, step_ref **refs, int *count,
										   int *capacity);

/* Sorts refs (dir->steps by value) into dir->step_index, in CurrentMemoryContext. */
extern void directory_index_steps(DirectoryLoader *loader, step_ref *refs, int count);

#endif
