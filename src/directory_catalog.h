/*
 * directory_catalog.h - the tables routing reads, found in the catalog
 *
 * Their OIDs are looked up by name in the extension's schema and kept
 * until an invalidation may have changed them (DROP / CREATE EXTENSION in
 * any session, ALTER on a table).  Opening them for a routing call locks
 * them for the rest of the transaction, as a SELECT does, and checks the
 * caller's rights on them.
 */
#ifndef CHASH_DIRECTORY_CATALOG_H
#define CHASH_DIRECTORY_CATALOG_H

#include "postgres.h"

/* The tables routing reads; directory_table_names[] in this order. */
typedef enum DirectoryTable
{
	T_DIRECTORY,
	T_SHARD,
	T_SLOT,
	T_OVERRIDE,
	T_MIGRATION,
	T_STEP,
	T_COUNT
} DirectoryTable;

extern const char *const directory_table_names[T_COUNT];

/* The columns routing reads, found by name (their numbers are not fixed). */
typedef enum DirectoryColumn
{
	C_DIRECTORY_NAME,
	C_DIRECTORY_SLOT_COUNT,
	C_DIRECTORY_SLOT_METHOD,
	C_DIRECTORY_KEY_TYPE,
	C_DIRECTORY_VERSION,
	C_SHARD_DIRECTORY,
	C_SHARD_SHARD,
	C_SHARD_STATE,
	C_SLOT_DIRECTORY,
	C_SLOT_SLOT,
	C_SLOT_SHARD,
	C_OVERRIDE_DIRECTORY,
	C_OVERRIDE_TENANT,
	C_OVERRIDE_SHARD,
	C_MIGRATION_ID,
	C_MIGRATION_DIRECTORY,
	C_MIGRATION_STATUS,
	C_STEP_MIGRATION,
	C_STEP_STEP,
	C_STEP_SLOT,
	C_STEP_TENANT,
	C_STEP_TO_SHARD,
	C_STEP_STATE,
	C_COUNT
} DirectoryColumn;

/*
 * The change history (chash_directory_change: directory, version, kind,
 * key), which lets a cached state catch up (directory_apply.c).  Optional:
 * a database still at 1.0 has none, and routing then reloads.  Its rights
 * are not checked: it names only keys of the tables checked above.
 */
typedef enum ChangeColumn
{
	CC_DIRECTORY,
	CC_VERSION,
	CC_KIND,
	CC_KEY,
	CC_COUNT
} ChangeColumn;

typedef struct DirectoryCatalog
{
	Oid			tables[T_COUNT];
	Oid			indexes[T_COUNT];	/* the index each loader scans */
	AttrNumber	columns[C_COUNT];
	Oid			step_in_flight;	/* index of copying and fenced steps; InvalidOid: none (1.0) */
	Oid			change_table;	/* InvalidOid: no history */
	Oid			change_index;	/* (directory, version, kind, key) */
	AttrNumber	change_columns[CC_COUNT];
	uint64		epoch;			/* changes whenever the OIDs do */
} DirectoryCatalog;

/*
 * The catalog for a routing call: OIDs current, every table locked
 * AccessShareLock until the transaction ends, SELECT privilege checked for
 * the current user (42501) and no row-level security applying to it
 * (42501: routing reads whole directories and cannot apply policies).
 */
extern const DirectoryCatalog *directory_catalog_open(void);

/* The locks taken in an aborted subtransaction are gone: take them again. */
extern void directory_catalog_forget_locks(void);

/*
 * A count that moves on with every invalidation of the tables this
 * backend has read (after AcceptInvalidationMessages): while it stands
 * still, no change of a directory committed since, but for one whose
 * commit is still sending its invalidations.
 */
extern uint64 directory_catalog_changes(void);

/* The schema of extension extoid (get_extension_schema is not exported in 15). */
extern Oid	extension_namespace(Oid extoid);

/* The extension's schema, quoted for SQL text. */
extern const char *directory_schema_quoted(void);

#endif
