/*
 * directory_catalog.c - the tables routing reads, found in the catalog,
 * locked and checked for the caller (directory_catalog.h)
 *
 * The OIDs are cached because routing runs once per statement at least;
 * a relcache invalidation of any of the tables (or a cache reset) makes
 * the next call look them up again.  The callback is registered by the
 * first lookup, whoever makes it: a backend that only ever created a
 * directory must still hear of DROP EXTENSION.
 */
#include "postgres.h"

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
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rls.h"

#include "directory_catalog.h"

const char *const directory_table_names[T_COUNT] = {
	"chash_directory", "chash_shard", "chash_slot", "chash_override",
	"chash_migration", "chash_migration_step"
};
static const char *const index_names[T_COUNT] = {
	"chash_directory_pkey", "chash_shard_pkey", "chash_slot_pkey",
	"chash_override_pkey", "chash_migration_running", "chash_migration_step_pkey"
};

/* Each column: its table, name and type. */
static const struct
{
	DirectoryTable table;
	const char *name;
	Oid			type;
}			column_defs[C_COUNT] = {
	{T_DIRECTORY, "name", TEXTOID},
	{T_DIRECTORY, "slot_count", INT4OID},
	{T_DIRECTORY, "slot_method", TEXTOID},
	{T_DIRECTORY, "key_type", TEXTOID},
	{T_DIRECTORY, "version", INT8OID},
	{T_SHARD, "directory", TEXTOID},
	{T_SHARD, "shard", TEXTOID},
	{T_SHARD, "state", TEXTOID},
	{T_SLOT, "directory", TEXTOID},
	{T_SLOT, "slot", INT4OID},
	{T_SLOT, "shard", TEXTOID},
	{T_OVERRIDE, "directory", TEXTOID},
	{T_OVERRIDE, "tenant", TEXTOID},
	{T_OVERRIDE, "shard", TEXTOID},
	{T_MIGRATION, "id", INT8OID},
	{T_MIGRATION, "directory", TEXTOID},
	{T_MIGRATION, "status", TEXTOID},
	{T_STEP, "migration", INT8OID},
	{T_STEP, "step", INT4OID},
	{T_STEP, "slot", INT4OID},
	{T_STEP, "tenant", TEXTOID},
	{T_STEP, "to_shard", TEXTOID},
	{T_STEP, "state", TEXTOID},
};

static DirectoryCatalog catalog;
static bool catalog_valid = false;
static bool callback_registered = false;
/*
 * Relcache invalidations of the tables received (or of anything, while
 * their OIDs are unknown).  Every committed change of a directory sends
 * one (the invalidation triggers), before its locks are released.
 */
static uint64 catalog_changes = 0;
static char *schema_quoted = NULL;

/* The transaction whose lock table holds our AccessShareLocks. */
static LocalTransactionId locked_lxid = InvalidLocalTransactionId;

static void
relcache_callback(Datum arg, Oid relid)
{
	/* OIDs unknown: any relation may be one of ours */
	if (!catalog_valid)
	{
		catalog_changes++;
		return;
	}
	if (relid != InvalidOid)
	{
		bool		ours = false;

		for (int i = 0; i < T_COUNT; i++)
			if (relid == catalog.tables[i])
				ours = true;
		if (relid == catalog.change_table)
			ours = true;
		if (!ours)
			return;
	}
	catalog_changes++;
	/* Dropped, re-created or moved: look them up again before the next use. */
	catalog_valid = false;
}

uint64
directory_catalog_changes(void)
{
	if (!callback_registered)
	{
		CacheRegisterRelcacheCallback(relcache_callback, (Datum) 0);
		callback_registered = true;
	}
	return catalog_changes;
}

Oid
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
	DirectoryCatalog found;
	bool		changed = false;

	if (!callback_registered)
	{
		CacheRegisterRelcacheCallback(relcache_callback, (Datum) 0);
		callback_registered = true;
	}
	/* valid from here: an invalidation arriving during the lookup clears it */
	catalog_valid = true;
	extoid = get_extension_oid("chash", true);
	nsp = OidIsValid(extoid) ? extension_namespace(extoid) : InvalidOid;
	if (!OidIsValid(nsp))
	{
		catalog_valid = false;
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"chash\" is not installed in this database")));
	}
	for (int i = 0; i < T_COUNT; i++)
	{
		found.tables[i] = get_relname_relid(directory_table_names[i], nsp);
		found.indexes[i] = get_relname_relid(index_names[i], nsp);
		if (!OidIsValid(found.tables[i]) || !OidIsValid(found.indexes[i]))
		{
			catalog_valid = false;
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("table \"%s\" of extension \"chash\" is missing",
							directory_table_names[i])));
		}
		if (found.tables[i] != catalog.tables[i] || found.indexes[i] != catalog.indexes[i])
			changed = true;
	}
	for (int i = 0; i < C_COUNT; i++)
	{
		Oid			rel = found.tables[column_defs[i].table];

		found.columns[i] = get_attnum(rel, column_defs[i].name);
		if (found.columns[i] == InvalidAttrNumber ||
			get_atttype(rel, found.columns[i]) != column_defs[i].type)
		{
			catalog_valid = false;
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" of table \"%s\" of extension \"chash\" is missing or not of type %s",
							column_defs[i].name, directory_table_names[column_defs[i].table],
							format_type_be(column_defs[i].type))));
		}
		if (found.columns[i] != catalog.columns[i])
			changed = true;
	}
	found.step_in_flight = get_relname_relid("chash_migration_step_in_flight", nsp);
	if (found.step_in_flight != catalog.step_in_flight)
		changed = true;
	/* the history, if this version of the extension has one */
	found.change_table = get_relname_relid("chash_directory_change", nsp);
	found.change_index = get_relname_relid("chash_directory_change_pkey", nsp);
	memset(found.change_columns, 0, sizeof(found.change_columns));
	if (OidIsValid(found.change_table) && OidIsValid(found.change_index))
	{
		static const char *const names[CC_COUNT] = {"directory", "version", "kind", "key"};
		static const Oid types[CC_COUNT] = {TEXTOID, INT8OID, TEXTOID, TEXTOID};

		for (int i = 0; i < CC_COUNT; i++)
		{
			found.change_columns[i] = get_attnum(found.change_table, names[i]);
			if (found.change_columns[i] == InvalidAttrNumber ||
				get_atttype(found.change_table, found.change_columns[i]) != types[i])
				found.change_table = InvalidOid;
		}
	}
	if (!OidIsValid(found.change_table))
		found.change_index = InvalidOid;
	if (found.change_table != catalog.change_table || found.change_index != catalog.change_index ||
		memcmp(found.change_columns, catalog.change_columns, sizeof(found.change_columns)) != 0)
		changed = true;
	if (changed)
	{
		catalog.step_in_flight = found.step_in_flight;
		catalog.change_table = found.change_table;
		catalog.change_index = found.change_index;
		memcpy(catalog.change_columns, found.change_columns, sizeof(found.change_columns));
		memcpy(catalog.columns, found.columns, sizeof(found.columns));
		memcpy(catalog.tables, found.tables, sizeof(found.tables));
		memcpy(catalog.indexes, found.indexes, sizeof(found.indexes));
		catalog.epoch++;
		/* locks on the old OIDs protect nothing we read */
		locked_lxid = InvalidLocalTransactionId;
	}
	if (schema_quoted)
		pfree(schema_quoted);
	schema_quoted = MemoryContextStrdup(TopMemoryContext,
										quote_identifier(get_namespace_name(nsp)));
}

const char *
directory_schema_quoted(void)
{
	if (!catalog_valid)
		lookup_catalog();
	return schema_quoted;
}

void
directory_catalog_forget_locks(void)
{
	locked_lxid = InvalidLocalTransactionId;
}

/* SELECT on every table; no row-level security that applies to the caller. */
static void
check_caller(void)
{
	Oid			user = GetUserId();

	for (int i = 0; i < T_COUNT; i++)
	{
		if (pg_class_aclcheck(catalog.tables[i], user, ACL_SELECT) != ACLCHECK_OK)
			aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, directory_table_names[i]);
		if (check_enable_rls(catalog.tables[i], InvalidOid, true) == RLS_ENABLED)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("cannot route through table \"%s\" because row-level security applies to it",
							directory_table_names[i]),
					 errdetail("Routing reads whole directories and cannot apply the table's policies."),
					 errhint("Route as a role the policies do not apply to, or disable row-level security on the table.")));
	}
}

const DirectoryCatalog *
directory_catalog_open(void)
{
	for (;;)
	{
		if (!catalog_valid)
			lookup_catalog();
		if (locked_lxid == MyProc->lxid)
			break;
		/*
		 * Held until the transaction ends, as a SELECT holds them, so a
		 * TRUNCATE or ALTER waits for a transaction that routed.  Taking a
		 * new lock reads pending invalidations: if they moved the tables,
		 * look again and lock those.
		 */
		for (int i = 0; i < T_COUNT; i++)
			LockRelationOid(catalog.tables[i], AccessShareLock);
		if (OidIsValid(catalog.change_table))
			LockRelationOid(catalog.change_table, AccessShareLock);
		if (catalog_valid)
			locked_lxid = MyProc->lxid;
	}
	check_caller();
	return &catalog;
}
