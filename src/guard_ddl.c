/*
 * guard_ddl.c - what a table owner may not do to the guard (docs/shards.md,
 * "Who may switch the guard off") and DROP EXTENSION on a joined shard
 * ("Uninstalling"): two event triggers at ddl_command_start.
 *
 * chash_guard_ddl refuses, unless the current role is a superuser or has
 * the privileges of chash_operator, every command that would leave a guarded
 * table writable past its guard: disabling a guard trigger (by name, ALL or
 * USER), making it fire only or also in replica sessions, dropping or
 * renaming it, changing the tenant column (its type, by a rewrite that
 * fires no trigger; dropping, renaming or adding it), and attaching a table
 * with rows (ATTACH PARTITION, INHERIT), whose rows would join unchecked.
 * PostgreSQL's own ownership checks come after it, so unguarding needs both.
 *
 * chash_shard_drop_check refuses DROP EXTENSION chash (and DROP SCHEMA ...
 * CASCADE of its schema) while the database is a shard of a directory.
 *
 * An event trigger fires in every session, whether or not it has loaded
 * chash's library (the function's call loads it), and only a superuser can
 * disable it, which a hook could not give.
 */
#include "chash.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_trigger.h"
#include "commands/event_trigger.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/parse_type.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

PG_FUNCTION_INFO_V1(chash_guard_ddl);
PG_FUNCTION_INFO_V1(chash_shard_drop_check);

/* A guard trigger of a table: its name, directory and tenant column. */
typedef struct GuardTrigger
{
	char	   *name;
	char	   *directory;
	char	   *tenant_column;	/* NULL: none given (not a row guard) */
} GuardTrigger;

static bool
may_unguard(void)
{
	Oid			operator_role;

	if (superuser())
		return true;
	operator_role = get_role_oid("chash_operator", true);
	return OidIsValid(operator_role) && has_privs_of_role(GetUserId(), operator_role);
}

/*
 * The guard triggers of relid: triggers whose function is chash's row or
 * TRUNCATE guard (in the schema of the event trigger's function, chash's).
 */
static List *
guard_triggers(Oid relid, Oid chash_namespace)
{
	List	   *result = NIL;
	Relation	tgrel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;

	if (!OidIsValid(relid))
		return NIL;
	tgrel = table_open(TriggerRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_trigger_tgrelid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	scan = systable_beginscan(tgrel, TriggerRelidNameIndexId, true, NULL, 1, &key);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_trigger t = (Form_pg_trigger) GETSTRUCT(tuple);
		char	   *proname = get_func_name(t->tgfoid);
		GuardTrigger *g;

		if (proname == NULL || get_func_namespace(t->tgfoid) != chash_namespace ||
			(strcmp(proname, "chash_shard_row_guard") != 0 &&
			 strcmp(proname, "chash_shard_truncate_guard") != 0))
			continue;
		g = palloc0(sizeof(GuardTrigger));
		g->name = pstrdup(NameStr(t->tgname));
		g->directory = "";
		if (t->tgnargs >= 2)
		{
			bool		isnull;
			Datum		args = heap_getattr(tuple, Anum_pg_trigger_tgargs,
											RelationGetDescr(tgrel), &isnull);

			if (!isnull)
			{
				bytea	   *b = DatumGetByteaPP(args);
				const char *p = VARDATA_ANY(b);

				/* the arguments, each ended by a NUL */
				g->directory = pstrdup(p);
				g->tenant_column = pstrdup(p + strlen(p) + 1);
			}
		}
		result = lappend(result, g);
	}
	systable_endscan(scan);
	table_close(tgrel, AccessShareLock);
	return result;
}

static GuardTrigger *
guard_named(List *guards, const char *name)
{
	ListCell   *lc;

	foreach(lc, guards)
	{
		GuardTrigger *g = lfirst(lc);

		if (name != NULL && strcmp(g->name, name) == 0)
			return g;
	}
	return NULL;
}

static GuardTrigger *
guard_of_column(List *guards, const char *column)
{
	ListCell   *lc;

	foreach(lc, guards)
	{
		GuardTrigger *g = lfirst(lc);

		if (column != NULL && g->tenant_column != NULL && strcmp(g->tenant_column, column) == 0)
			return g;
	}
	return NULL;
}

static void
refuse(const char *message, Oid relid, GuardTrigger *g)
{
	char	   *rel = get_rel_name(relid);

	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg(message, rel),
			 errdetail("Table \"%s\" is guarded for directory \"%s\" (trigger \"%s\"); only a superuser or a member of role \"chash_operator\" may unguard it.",
					   rel, g->directory, g->name),
			 errhint("A member of chash_operator who owns the table unguards it with chash_unguard('%s', '%s').",
					 g->directory, quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)), rel))));
}

/*
 * Whether relid or any table under it has a row (in the latest snapshot,
 * this transaction's own writes included).  Locks each against writes
 * until the transaction ends, so none can come between this and the
 * command.  A foreign table counts as having rows: they are not here to
 * see.
 */
static bool
tree_has_rows(Oid relid)
{
	List	   *tree;
	ListCell   *lc;
	bool		found = false;

	LockRelationOid(relid, AccessExclusiveLock);
	tree = find_all_inheritors(relid, AccessExclusiveLock, NULL);
	foreach(lc, tree)
	{
		Relation	rel = table_open(lfirst_oid(lc), NoLock);
		char		kind = rel->rd_rel->relkind;

		if (kind == RELKIND_FOREIGN_TABLE)
			found = true;
		else if (kind == RELKIND_RELATION)
		{
			Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
			TableScanDesc scan = table_beginscan(rel, snapshot, 0, NULL);
			TupleTableSlot *slot = table_slot_create(rel, NULL);

			found = table_scan_getnextslot(scan, ForwardScanDirection, slot);
			ExecDropSingleTupleTableSlot(slot);
			table_endscan(scan);
			UnregisterSnapshot(snapshot);
		}
		table_close(rel, NoLock);
		if (found)
			break;
	}
	return found;
}

/*
 * A table with rows joining guarded table parent (as a partition or an
 * inheritance child): its rows would be part of the guarded table without
 * the guard having checked them.  Only a table the role owns is looked at:
 * PostgreSQL refuses the command otherwise.
 */
static void
check_joining(Oid parent, List *guards, RangeVar *joining_rv)
{
	Oid			joining = RangeVarGetRelid(joining_rv, NoLock, true);
	char	   *joining_name;
	char	   *parent_name;
	GuardTrigger *g = linitial(guards);

	if (!OidIsValid(joining) || !pg_class_ownercheck(joining, GetUserId()) ||
		!tree_has_rows(joining))
		return;
	joining_name = get_rel_name(joining);
	parent_name = get_rel_name(parent);
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to add table \"%s\", which has rows, to guarded table \"%s\"",
					joining_name, parent_name),
			 errdetail("Its rows would become rows of table \"%s\", guarded for directory \"%s\", without the guard checking their tenants; only a superuser or a member of role \"chash_operator\" may do that.",
					   parent_name, g->directory),
			 errhint("Add the table empty and write its rows through the guard, or have a member of chash_operator add it.")));
}

/*
 * Whether ALTER COLUMN ... TYPE keeps every value of the column as it is:
 * the same type (a new collation or length, as the guard's own hint
 * advises for a nondeterministic collation) and no USING expression.
 */
static bool
keeps_values(Oid relid, const char *column, ColumnDef *def)
{
	AttrNumber	attnum = get_attnum(relid, column);
	Oid			old_type;
	Oid			new_type;

	if (attnum == InvalidAttrNumber || def == NULL || !IsA(def, ColumnDef) ||
		def->raw_default != NULL || def->typeName == NULL)
		return false;
	old_type = get_atttype(relid, attnum);
	new_type = LookupTypeNameOid(NULL, def->typeName, true);
	return OidIsValid(new_type) && new_type == old_type;
}

static void
check_alter_table(AlterTableStmt *stmt, Oid chash_namespace)
{
	Oid			relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	List	   *guards = guard_triggers(relid, chash_namespace);
	ListCell   *lc;

	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst(lc);
		GuardTrigger *g;

		if (cmd->subtype == AT_AddInherit)
		{
			RangeVar   *parent_rv = (RangeVar *) cmd->def;
			Oid			parent = RangeVarGetRelid(parent_rv, NoLock, true);
			List	   *parent_guards = guard_triggers(parent, chash_namespace);

			if (parent_guards != NIL)
				check_joining(parent, parent_guards, stmt->relation);
			continue;
		}
		if (guards == NIL)
			continue;
		switch (cmd->subtype)
		{
			case AT_DisableTrig:
				if ((g = guard_named(guards, cmd->name)) != NULL)
					refuse("permission denied to disable the guard of table \"%s\"", relid, g);
				break;
			case AT_DisableTrigAll:
			case AT_DisableTrigUser:
				refuse("permission denied to disable the guard of table \"%s\"", relid, linitial(guards));
				break;
			case AT_EnableAlwaysTrig:
			case AT_EnableReplicaTrig:
				if ((g = guard_named(guards, cmd->name)) != NULL)
					refuse("permission denied to change when the guard of table \"%s\" fires", relid, g);
				break;
			case AT_AlterColumnType:
				if ((g = guard_of_column(guards, cmd->name)) != NULL &&
					!keeps_values(relid, cmd->name, (ColumnDef *) cmd->def))
					refuse("permission denied to change the tenant column of guarded table \"%s\"", relid, g);
				break;
			case AT_DropColumn:
				if ((g = guard_of_column(guards, cmd->name)) != NULL)
					refuse("permission denied to change the tenant column of guarded table \"%s\"", relid, g);
				break;
			case AT_AddColumn:
				if (cmd->def != NULL && IsA(cmd->def, ColumnDef) &&
					(g = guard_of_column(guards, ((ColumnDef *) cmd->def)->colname)) != NULL)
					refuse("permission denied to change the tenant column of guarded table \"%s\"", relid, g);
				break;
			case AT_AttachPartition:
				if (cmd->def != NULL && IsA(cmd->def, PartitionCmd))
					check_joining(relid, guards, ((PartitionCmd *) cmd->def)->name);
				break;
			default:
				/* ENABLE TRIGGER (as the guard is made), and the rest */
				break;
		}
	}
}

static void
check_drop_triggers(DropStmt *stmt, Oid chash_namespace)
{
	ListCell   *lc;

	foreach(lc, stmt->objects)
	{
		List	   *names = lfirst(lc);
		const char *trigger;
		RangeVar   *rv;
		Oid			relid;
		GuardTrigger *g;

		if (list_length(names) < 2)
			continue;
		trigger = strVal(llast(names));
		rv = makeRangeVarFromNameList(list_truncate(list_copy(names), list_length(names) - 1));
		relid = RangeVarGetRelid(rv, NoLock, true);
		if ((g = guard_named(guard_triggers(relid, chash_namespace), trigger)) != NULL)
			refuse("permission denied to drop the guard of table \"%s\"", relid, g);
	}
}

static void
check_rename(RenameStmt *stmt, Oid chash_namespace)
{
	Oid			relid;
	List	   *guards;
	GuardTrigger *g;

	if (stmt->renameType != OBJECT_TRIGGER && stmt->renameType != OBJECT_COLUMN)
		return;
	if (stmt->relation == NULL)
		return;
	relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	guards = guard_triggers(relid, chash_namespace);
	if (stmt->renameType == OBJECT_TRIGGER && (g = guard_named(guards, stmt->subname)) != NULL)
		refuse("permission denied to rename the guard of table \"%s\"", relid, g);
	if (stmt->renameType == OBJECT_COLUMN &&
		((g = guard_of_column(guards, stmt->subname)) != NULL ||
		 (g = guard_of_column(guards, stmt->newname)) != NULL))
		refuse("permission denied to change the tenant column of guarded table \"%s\"", relid, g);
}

Datum
chash_guard_ddl(PG_FUNCTION_ARGS)
{
	EventTriggerData *trigdata;
	Oid			chash_namespace;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("chash_guard_ddl() must be called as an event trigger")));
	if (may_unguard())
		PG_RETURN_VOID();
	trigdata = (EventTriggerData *) fcinfo->context;
	chash_namespace = get_func_namespace(fcinfo->flinfo->fn_oid);
	switch (nodeTag(trigdata->parsetree))
	{
		case T_AlterTableStmt:
			check_alter_table((AlterTableStmt *) trigdata->parsetree, chash_namespace);
			break;
		case T_DropStmt:
			if (((DropStmt *) trigdata->parsetree)->removeType == OBJECT_TRIGGER)
				check_drop_triggers((DropStmt *) trigdata->parsetree, chash_namespace);
			break;
		case T_RenameStmt:
			check_rename((RenameStmt *) trigdata->parsetree, chash_namespace);
			break;
		default:
			break;
	}
	PG_RETURN_VOID();
}

/*
 * The directories this database has joined (chash_shard_member), read
 * directly: the role dropping the extension need not read the table.
 * NULL: none.
 */
static char *
joined_directories(Oid chash_namespace)
{
	Oid			relid = get_relname_relid("chash_shard_member", chash_namespace);
	StringInfoData names;
	Relation	rel;
	AttrNumber	attnum;
	Snapshot	snapshot;
	TableScanDesc scan;
	TupleTableSlot *slot;
	int			n = 0;

	if (!OidIsValid(relid))
		return NULL;
	initStringInfo(&names);
	rel = table_open(relid, AccessShareLock);
	attnum = get_attnum(relid, "directory");
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	scan = table_beginscan(rel, snapshot, 0, NULL);
	slot = table_slot_create(rel, NULL);
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		bool		isnull = true;
		Datum		d = attnum > 0 ? slot_getattr(slot, attnum, &isnull) : (Datum) 0;

		appendStringInfo(&names, "%s\"%s\"", n++ > 0 ? ", " : "",
						 isnull ? "?" : TextDatumGetCString(d));
	}
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);
	return n > 0 ? names.data : NULL;
}

static void
refuse_drop(const char *what, Oid chash_namespace)
{
	char	   *directories = joined_directories(chash_namespace);

	if (directories == NULL)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_IN_USE),
			 errmsg("cannot drop %s while this database is a shard", what),
			 errdetail("This database has joined directories %s: dropping chash would drop their guards while their subscriptions go on failing and their replication slots hold WAL on the directory server.",
					   directories),
			 errhint("Leave each directory first (chash_shard_leave), then drop the extension.")));
}

Datum
chash_shard_drop_check(PG_FUNCTION_ARGS)
{
	EventTriggerData *trigdata;
	DropStmt   *stmt;
	Oid			chash_namespace;
	char	   *schema;
	ListCell   *lc;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("chash_shard_drop_check() must be called as an event trigger")));
	trigdata = (EventTriggerData *) fcinfo->context;
	if (!IsA(trigdata->parsetree, DropStmt))
		PG_RETURN_VOID();
	stmt = (DropStmt *) trigdata->parsetree;
	chash_namespace = get_func_namespace(fcinfo->flinfo->fn_oid);
	schema = get_namespace_name(chash_namespace);
	foreach(lc, stmt->objects)
	{
		Node	   *object = lfirst(lc);

		if (!IsA(object, String))
			continue;
		if (stmt->removeType == OBJECT_EXTENSION && strcmp(strVal(object), "chash") == 0)
			refuse_drop("extension \"chash\"", chash_namespace);
		/* the extension is dropped with its schema */
		if (stmt->removeType == OBJECT_SCHEMA && stmt->behavior == DROP_CASCADE &&
			schema != NULL && strcmp(strVal(object), schema) == 0)
			refuse_drop(psprintf("schema \"%s\", which holds extension \"chash\",", schema),
						chash_namespace);
	}
	PG_RETURN_VOID();
}
