/*
 * guard_statement.c - the guard's check of a statement before it runs
 * (docs/shards.md, "Statements that name a tenant")
 *
 * A row trigger never fires for a statement that matches no row, so a
 * stale client's UPDATE, DELETE or SELECT of a tenant that has left this
 * shard would succeed with nothing done.  In ExecutorStart (once the
 * caller's privileges on the tables are checked), every guarded
 * table the plan scans (found through its relcache entry's triggers: the
 * relcache follows CREATE and DROP TRIGGER; a guard is a trigger of
 * chash_shard_row_guard, whatever its name) has its scan quals searched
 * for "tenant column = constant or parameter", AND-ed with anything, as
 * Citus's fast-path router looks for the distribution column; parameters
 * are read from the execution's values, so a generic plan is checked per
 * EXECUTE.  With chash.tenant set, that tenant is checked for every
 * statement on a guarded table.  Statements that fix no tenant pass.
 */
#include "chash.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/parallel.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_proc.h"
#include "commands/extension.h"
#include "catalog/pg_index.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "nodes/plannodes.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "directory_catalog.h"
#include "shard_guard.h"

static ExecutorStart_hook_type previous_executor_start = NULL;

/* A guarded table of the statement, and what the search found. */
typedef struct GuardedScan
{
	Oid			relid;
	Oid			collid;			/* the tenant column's collation */
	Index		rti;
	AttrNumber	attnum;
	GuardAccess access;
	GuardTarget target;
	ParamListInfo params;
	/* set while searching an index-only scan: index column -> table column */
	int			index_ncols;
	AttrNumber *index_keys;
} GuardedScan;

static Node *
strip_relabel(Node *node)
{
	while (node != NULL && IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	return node;
}

static bool
is_tenant_column(GuardedScan *scan, Node *node)
{
	Var		   *var;

	node = strip_relabel(node);
	if (node == NULL || !IsA(node, Var))
		return false;
	var = (Var *) node;
	if (var->varno == (int) scan->rti)
		return var->varattno == scan->attnum;
	if (var->varno == INDEX_VAR && scan->index_keys != NULL &&
		var->varattno >= 1 && var->varattno <= scan->index_ncols)
		return scan->index_keys[var->varattno - 1] == scan->attnum;
	return false;
}

/*
 * The canonical tenant text (shard_guard.c) a constant or an external
 * parameter holds, or NULL.
 */
static const char *
value_text(GuardedScan *scan, Node *node, size_t *len)
{
	Oid			type;
	Datum		value;
	TenantColumn column;

	node = strip_relabel(node);
	if (node == NULL)
		return NULL;
	if (IsA(node, Const))
	{
		Const	   *c = (Const *) node;

		if (c->constisnull)
			return NULL;
		type = c->consttype;
		value = c->constvalue;
	}
	else if (IsA(node, Param) && ((Param *) node)->paramkind == PARAM_EXTERN &&
			 scan->params != NULL)
	{
		Param	   *p = (Param *) node;
		ParamExternData workspace;
		ParamExternData *prm;

		if (p->paramid < 1 || p->paramid > scan->params->numParams)
			return NULL;
		if (scan->params->paramFetch != NULL)
			prm = scan->params->paramFetch(scan->params, p->paramid, false, &workspace);
		else
			prm = &scan->params->params[p->paramid - 1];
		if (prm == NULL || prm->isnull || !OidIsValid(prm->ptype))
			return NULL;
		type = prm->ptype;
		value = prm->value;
	}
	else
		return NULL;
	tenant_column_init(&column, type, CurrentMemoryContext);
	return tenant_column_text(&column, value, len);
}

/* The check of a tenant the statement names or declares. */
static void
scan_check(GuardedScan *scan, const char *tenant, size_t len)
{
	guard_require_deterministic(scan->collid, scan->relid, scan->attnum,
								text_to_cstring(scan->target.directory));
	guard_check_tenant(&scan->target, tenant, len, scan->access);
}

/* Checks every "tenant = value" among the ANDed quals. */
static void
search_quals(GuardedScan *scan, List *quals)
{
	ListCell   *lc;

	foreach(lc, quals)
	{
		Node	   *qual = lfirst(lc);

		if (IsA(qual, BoolExpr) && ((BoolExpr *) qual)->boolop == AND_EXPR)
			search_quals(scan, ((BoolExpr *) qual)->args);
		else if (IsA(qual, OpExpr) && list_length(((OpExpr *) qual)->args) == 2)
		{
			OpExpr	   *op = (OpExpr *) qual;
			Node	   *left = linitial(op->args);
			Node	   *right = lsecond(op->args);
			char	   *name;
			const char *tenant = NULL;
			size_t		len = 0;

			if (is_tenant_column(scan, left))
				tenant = value_text(scan, right, &len);
			else if (is_tenant_column(scan, right))
				tenant = value_text(scan, left, &len);
			if (tenant == NULL)
				continue;
			name = get_opname(op->opno);
			if (name != NULL && strcmp(name, "=") == 0)
				scan_check(scan, tenant, len);
		}
	}
}

static void
search_index_only(GuardedScan *scan, IndexOnlyScan *ios)
{
	HeapTuple	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(ios->indexid));
	Form_pg_index index;

	if (!HeapTupleIsValid(tuple))
		return;
	index = (Form_pg_index) GETSTRUCT(tuple);
	scan->index_ncols = index->indnatts;
	scan->index_keys = palloc(sizeof(AttrNumber) * index->indnatts);
	for (int i = 0; i < index->indnatts; i++)
		scan->index_keys[i] = index->indkey.values[i];
	ReleaseSysCache(tuple);
	search_quals(scan, ios->indexqual);
	pfree(scan->index_keys);
	scan->index_keys = NULL;
}

static void search_plan(GuardedScan *scan, Plan *plan);

static void
search_plans(GuardedScan *scan, List *plans)
{
	ListCell   *lc;

	foreach(lc, plans)
		search_plan(scan, lfirst(lc));
}

static void
search_plan(GuardedScan *scan, Plan *plan)
{
	if (plan == NULL)
		return;
	check_stack_depth();
	switch (nodeTag(plan))
	{
		case T_SeqScan:
		case T_SampleScan:
		case T_TidScan:
		case T_TidRangeScan:
			if (((Scan *) plan)->scanrelid == scan->rti)
				search_quals(scan, plan->qual);
			break;
		case T_IndexScan:
			if (((Scan *) plan)->scanrelid == scan->rti)
			{
				search_quals(scan, ((IndexScan *) plan)->indexqualorig);
				search_quals(scan, plan->qual);
			}
			break;
		case T_IndexOnlyScan:
			if (((Scan *) plan)->scanrelid == scan->rti)
			{
				search_index_only(scan, (IndexOnlyScan *) plan);
				search_quals(scan, plan->qual);
			}
			break;
		case T_BitmapHeapScan:
			if (((Scan *) plan)->scanrelid == scan->rti)
			{
				search_quals(scan, ((BitmapHeapScan *) plan)->bitmapqualorig);
				search_quals(scan, plan->qual);
			}
			break;
		case T_Append:
			search_plans(scan, ((Append *) plan)->appendplans);
			break;
		case T_MergeAppend:
			search_plans(scan, ((MergeAppend *) plan)->mergeplans);
			break;
		case T_SubqueryScan:
			search_plan(scan, ((SubqueryScan *) plan)->subplan);
			break;
		case T_CustomScan:
			search_plans(scan, ((CustomScan *) plan)->custom_plans);
			break;
		default:
			break;
	}
	search_plan(scan, plan->lefttree);
	search_plan(scan, plan->righttree);
}

/*
 * chash_shard_row_guard's oid in this database (InvalidOid: chash is not
 * installed here), looked up once and again after any change to pg_proc.
 * A guard is known by its function, not its name: anybody may name a
 * trigger chash_guard_..., but only a role with EXECUTE on the guard
 * function (none but chash's own roles) may create a trigger of it.
 */
static Oid	row_guard_oid = InvalidOid;
static bool row_guard_known = false;

static void
row_guard_forget(Datum arg, int cacheid, uint32 hashvalue)
{
	row_guard_known = false;
}

static Oid
row_guard_function(void)
{
	if (!row_guard_known)
	{
		Oid			extoid;
		Oid			nsp = InvalidOid;

		/* known from here: an invalidation arriving during the lookup clears it */
		row_guard_known = true;
		row_guard_oid = InvalidOid;
		extoid = get_extension_oid("chash", true);
		if (OidIsValid(extoid))
			nsp = extension_namespace(extoid);
		if (OidIsValid(nsp))
			row_guard_oid = GetSysCacheOid3(PROCNAMEARGSNSP, Anum_pg_proc_oid,
											CStringGetDatum("chash_shard_row_guard"),
											PointerGetDatum(buildoidvector(NULL, 0)),
											ObjectIdGetDatum(nsp));
	}
	return row_guard_oid;
}

/* The guard trigger of a relation, if it has one (the relcache knows). */
static bool
guard_of(Oid relid, GuardedScan *scan)
{
	Relation	rel = RelationIdGetRelation(relid);
	bool		found = false;
	Oid			guard;

	if (rel == NULL)
		return false;
	if (rel->trigdesc != NULL && OidIsValid(guard = row_guard_function()))
	{
		for (int i = 0; i < rel->trigdesc->numtriggers && !found; i++)
		{
			Trigger    *t = &rel->trigdesc->triggers[i];

			if (t->tgfoid == guard && t->tgnargs == 3 && TRIGGER_FOR_ROW(t->tgtype) &&
				t->tgenabled != TRIGGER_DISABLED)
			{
				scan->attnum = get_attnum(relid, t->tgargs[1]);
				scan->target.directory = cstring_to_text(t->tgargs[0]);
				scan->target.shard = pstrdup(t->tgargs[2]);
				scan->target.shard_len = strlen(scan->target.shard);
				scan->target.me_load = 0;
				found = scan->attnum != InvalidAttrNumber;
				if (found)
					scan->collid = TupleDescAttr(RelationGetDescr(rel), scan->attnum - 1)->attcollation;
			}
		}
	}
	RelationClose(rel);
	return found;
}

static void
check_statement(QueryDesc *query)
{
	PlannedStmt *stmt = query->plannedstmt;
	ListCell   *lc;
	Index		rti = 0;
	bool		writes = stmt->commandType == CMD_UPDATE || stmt->commandType == CMD_DELETE;
	bool		tenant_declared = chash_session_tenant != NULL && chash_session_tenant[0] != '\0';

	foreach(lc, stmt->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);
		GuardedScan scan;

		rti++;
		if (rte->rtekind != RTE_RELATION ||
			(rte->relkind != RELKIND_RELATION && rte->relkind != RELKIND_PARTITIONED_TABLE))
			continue;
		/* rows inserted are the row trigger's; nothing to search here */
		if (stmt->commandType == CMD_INSERT && !tenant_declared &&
			list_member_int(stmt->resultRelations, (int) rti))
			continue;
		memset(&scan, 0, sizeof(scan));
		if (!guard_of(rte->relid, &scan))
			continue;
		/* the mover reads and writes past the guard */
		if (chash_bypass_guard && guard_bypassed())
			return;
		scan.relid = rte->relid;
		scan.rti = rti;
		scan.params = query->params;
		scan.access = writes && list_member_int(stmt->resultRelations, (int) rti) ?
			GUARD_WRITE_STATEMENT : GUARD_READ;
		if (tenant_declared)
			scan_check(&scan, chash_session_tenant, strlen(chash_session_tenant));
		search_plan(&scan, stmt->planTree);
		search_plans(&scan, stmt->subplans);
	}
}

/*
 * The leader checks the statement before it runs (parallel mode begins
 * in ExecutorRun); a parallel worker starts the same plan again and must
 * not read the latest state (no new snapshots in parallel mode), nor need
 * it.  The check follows ExecutorStart, which checks the caller's
 * privileges on the tables: the guard routes with the directory owner's
 * rights, and a role that may not read a guarded table learns nothing of
 * where its tenants are (nor is its statement counted).
 */
static void
guard_executor_start(QueryDesc *query, int eflags)
{
	if (previous_executor_start != NULL)
		previous_executor_start(query, eflags);
	else
		standard_ExecutorStart(query, eflags);
	if ((eflags & EXEC_FLAG_EXPLAIN_ONLY) == 0 && query->plannedstmt->commandType != CMD_UTILITY &&
		!IsParallelWorker())
		check_statement(query);
}

void
guard_statement_init(void)
{
	previous_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = guard_executor_start;
	CacheRegisterSyscacheCallback(PROCOID, row_guard_forget, (Datum) 0);
}
