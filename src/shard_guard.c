/*
 * shard_guard.c - the guard on a shard's tenant tables (docs/shards.md,
 * "The guard"): chash_shard_row_guard, the row trigger, and the check it
 * shares with the statement check (guard_statement.c)
 *
 * Each row's tenant is routed by the latest directory state applied here
 * (not the transaction's snapshot: a long REPEATABLE READ transaction must
 * not write by an old state), through the routing cache, as the bootstrap
 * superuser: the application role needs no rights on the replica.  A
 * write that is admitted holds the same lock tags as chash_route_for_write
 * (fence.c), so chash_shard_wait_fence can wait for it.
 */
#include "chash.h"

#include "access/htup_details.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "fence.h"
#include "load_stats.h"
#include "shard_failover.h"
#include "shard_guard.h"

PG_FUNCTION_INFO_V1(chash_shard_row_guard);

bool		chash_bypass_guard = false;
char	   *chash_session_tenant = NULL;

/* The guard's routing call site: one a session, kept across statements. */
static RouteCallSite *guard_site = NULL;

/* What the trigger keeps in fn_extra for a statement. */
typedef struct GuardTable
{
	Oid			relid;
	AttrNumber	attnum;
	TenantColumn column;
	GuardTarget target;
	/* a BEFORE guard: why a new row may change after it, NULL: it cannot */
	const char *insert_changes;
	const char *update_changes;
	bool		insert_final_guard; /* an AFTER guard checks the final row */
	bool		update_final_guard;
} GuardTable;

/*
 * The role that set chash.bypass_guard on, kept with the value (the GUC's
 * "extra" follows the value through SET LOCAL, function SET clauses,
 * RESET and rollback).  InvalidOid: off, or set by the server's
 * configuration.
 */
static Oid	bypass_setter = InvalidOid;

bool
check_bypass_guard(bool *newval, void **extra, GucSource source)
{
	Oid		   *setter = malloc(sizeof(Oid));
	int			sec;

	if (setter == NULL)
		return false;
	*setter = InvalidOid;
	/* a role's own SET, ALTER ROLE/DATABASE SET or connection option */
	if (*newval && source >= PGC_S_DATABASE && IsUnderPostmaster)
		GetUserIdAndSecContext(setter, &sec);
	*extra = setter;
	return true;
}

void
assign_bypass_guard(bool newval, void *extra)
{
	bypass_setter = extra != NULL ? *(Oid *) extra : InvalidOid;
}

static bool
may_bypass(Oid role, Oid mover)
{
	return superuser_arg(role) || (OidIsValid(mover) && is_member_of_role(role, mover));
}

/*
 * The bypass belongs to the session that asked for it, not to whoever runs
 * the write: the session's role, the role that set it and the role that
 * writes must each be allowed.  So a role that sets it and calls somebody
 * else's SECURITY DEFINER function (or fires a trigger, or calls a
 * procedure) gains nothing, and neither does the mover's session where it
 * runs another role's code.  (The setter alone would not do: a value set
 * before the library was loaded is checked only when it loads, by whoever
 * runs then.)
 */
bool
guard_bypassed(void)
{
	static LocalTransactionId checked_lxid = InvalidLocalTransactionId;
	static Oid	checked[3];
	static Oid	refused = InvalidOid;
	Oid			roles[3];

	if (!chash_bypass_guard)
		return false;
	roles[0] = GetSessionUserId();
	roles[1] = OidIsValid(bypass_setter) ? bypass_setter : roles[0];
	roles[2] = GetUserId();
	if (checked_lxid != MyProc->lxid || memcmp(checked, roles, sizeof(roles)) != 0)
	{
		Oid			mover = get_role_oid("chash_mover", true);

		refused = InvalidOid;
		for (int i = 0; i < 3 && !OidIsValid(refused); i++)
			if (!may_bypass(roles[i], mover))
				refused = roles[i];
		checked_lxid = MyProc->lxid;
		memcpy(checked, roles, sizeof(roles));
	}
	if (OidIsValid(refused))
	{
		char	   *name = GetUserNameFromId(refused, true);

		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to bypass the guard"),
				 errdetail("Role \"%s\" is neither a superuser nor a member of role \"chash_mover\"; chash.bypass_guard is honoured only when the session's role, the role that set it and the role that writes all are.",
						   name != NULL ? name : "?"),
				 errhint("Reset chash.bypass_guard, or have the mover's role granted chash_mover.")));
	}
	return true;
}

/* This shard's index among the directory's shards (-1: not one of them). */
static int32
my_shard(GuardTarget *target, RouteDirectory *dir)
{
	if (target->me_load != dir->load_id)
	{
		target->me = -1;
		for (int i = 0; i < dir->nshards; i++)
		{
			text	   *n = dir->shards[i].name;

			if (VARSIZE(n) - VARHDRSZ == target->shard_len &&
				memcmp(VARDATA(n), target->shard, target->shard_len) == 0)
			{
				target->me = i;
				break;
			}
		}
		target->me_load = dir->load_id;
	}
	return target->me;
}

void
guard_check_tenant(GuardTarget *target, const char *tenant, size_t len, GuardAccess access)
{
	RouteDirectory *dir;
	TenantRoute route;
	RouteStep  *step;
	Oid			save_user;
	int			save_sec;
	int32		me;

	if (guard_site == NULL)
		guard_site = route_call_site_create(AllocSetContextCreate(TopMemoryContext,
																  "chash guard routing",
																  ALLOCSET_SMALL_SIZES));
	if (access == GUARD_WRITE)
		failover_check_write(target->directory, target->shard, target->shard_len, tenant, len);

	/* the replica is read as its owner would, whoever writes */
	GetUserIdAndSecContext(&save_user, &save_sec);
	SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID, save_sec | SECURITY_LOCAL_USERID_CHANGE);
	if (access == GUARD_WRITE)
		dir = fence_admit_write(guard_site, target->directory, tenant, len, &route);
	else
	{
		dir = directory_latest(guard_site, target->directory);
		route_tenant(dir, tenant, len, &route);
	}
	SetUserIdAndSecContext(save_user, save_sec);

	me = my_shard(target, dir);
	step = route.step;
	if (step != NULL && step->fenced && (route.owner == me || step->to_shard == me) &&
		!(access == GUARD_READ && route.owner == me))
		fence_report_fenced(dir, &route);
	if (route.owner != me)
		ereport(ERROR,
				(errcode(ERRCODE_CHASH_WRONG_SHARD),
				 errmsg("tenant \"%.*s\" of directory \"%.*s\" is not on this shard",
						chash_quote_len(route.tenant, route.tenant_len), route.tenant,
						chash_quote_len(dir->name, dir->name_len), dir->name),
				 step != NULL && step->to_shard == me ?
				 errdetail("It belongs to shard %s at directory version " INT64_FORMAT "; step %d of migration " INT64_FORMAT " is copying it to this shard \"%.*s\".",
						   route_quoted_shard(dir, route.owner), dir->version, step->step, step->migration,
						   chash_quote_len(target->shard, target->shard_len), target->shard) :
				 errdetail("It belongs to shard %s at directory version " INT64_FORMAT "; this database is shard \"%.*s\".",
						   route_quoted_shard(dir, route.owner), dir->version,
						   chash_quote_len(target->shard, target->shard_len), target->shard),
				 errhint("Route the tenant again (chash_route, or a fresh chash_directory_snapshot) and use the shard it names.")));
	load_stats_count(dir->name, dir->name_len, route.slot, route.tenant, route.tenant_len, access);
}

/*
 * 0A000 for a tenant column whose collation is nondeterministic: two
 * tenants that differ ("org-3", "ORG-3") would compare equal, and a move
 * of one would take the other's rows too.  Checked where a guard reads
 * the column, so a column altered after it was registered is refused too.
 */
void
guard_require_deterministic(Oid collid, Oid relid, AttrNumber attnum, const char *directory)
{
	if (OidIsValid(collid) && collid != DEFAULT_COLLATION_OID && collid != C_COLLATION_OID &&
		collid != POSIX_COLLATION_OID && !get_collation_isdeterministic(collid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("tenant column \"%s\" of table \"%s\" has a nondeterministic collation",
						get_attname(relid, attnum, false), get_rel_name(relid)),
				 errdetail("Collation \"%s\" makes different tenants of directory \"%s\" compare equal.",
						   get_collation_name(collid), directory),
				 errhint("Give the column a deterministic collation, e.g. ALTER TABLE ... ALTER COLUMN ... TYPE ... COLLATE \"C\".")));
}

/*
 * What may change a new row's tenant after this BEFORE guard for an event
 * (TRIGGER_TYPE_INSERT or _UPDATE): a later BEFORE ROW trigger (they fire
 * in name order) or a stored generated tenant column; NULL: nothing.
 * Sets *final_guard when an AFTER guard checks the final row.
 */
static const char *
new_row_changes(Relation rel, Trigger *me, AttrNumber attnum, int16 event, bool *final_guard)
{
	TriggerDesc *trigdesc = rel->trigdesc;
	const char *changes = NULL;
	bool		after_me = false;

	*final_guard = false;
	if (TupleDescAttr(RelationGetDescr(rel), attnum - 1)->attgenerated == ATTRIBUTE_GENERATED_STORED)
		changes = psprintf("its tenant column \"%s\" is generated", me->tgargs[1]);
	for (int i = 0; i < trigdesc->numtriggers; i++)
	{
		Trigger    *t = &trigdesc->triggers[i];

		if (t->tgoid == me->tgoid)
		{
			after_me = true;
			continue;
		}
		if (t->tgenabled == TRIGGER_DISABLED || !TRIGGER_FOR_ROW(t->tgtype) ||
			(t->tgtype & event) == 0)
			continue;
		if (t->tgfoid == me->tgfoid && TRIGGER_FOR_AFTER(t->tgtype))
			*final_guard = true;
		else if (after_me && TRIGGER_FOR_BEFORE(t->tgtype) && changes == NULL)
			changes = psprintf("trigger \"%s\" fires after the guard", t->tgname);
	}
	return changes;
}

static GuardTable *
guard_table(FunctionCallInfo fcinfo, TriggerData *td)
{
	GuardTable *g = (GuardTable *) fcinfo->flinfo->fn_extra;
	Trigger    *trigger = td->tg_trigger;
	Relation	rel = td->tg_relation;
	MemoryContext old;

	if (g != NULL && g->relid == RelationGetRelid(rel))
		return g;
	if (trigger->tgnargs != 3)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("chash_shard_row_guard needs 3 arguments: directory, tenant column and shard")));
	old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
	g = palloc0(sizeof(GuardTable));
	g->relid = RelationGetRelid(rel);
	g->attnum = get_attnum(g->relid, trigger->tgargs[1]);
	if (g->attnum == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("tenant column \"%s\" of guarded table \"%s\" does not exist",
						trigger->tgargs[1], RelationGetRelationName(rel)),
				 errdetail("Directory \"%s\" registers it with that column; the guard refuses writes until they agree.",
						   trigger->tgargs[0])));
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), g->attnum - 1);

		guard_require_deterministic(att->attcollation, g->relid, g->attnum, trigger->tgargs[0]);
		tenant_column_init(&g->column, att->atttypid, fcinfo->flinfo->fn_mcxt);
	}
	if (TRIGGER_FIRED_BEFORE(td->tg_event))
	{
		g->insert_changes = new_row_changes(rel, trigger, g->attnum, TRIGGER_TYPE_INSERT,
											&g->insert_final_guard);
		g->update_changes = new_row_changes(rel, trigger, g->attnum, TRIGGER_TYPE_UPDATE,
											&g->update_final_guard);
	}
	g->target.directory = cstring_to_text(trigger->tgargs[0]);
	g->target.shard = pstrdup(trigger->tgargs[2]);
	g->target.shard_len = strlen(g->target.shard);
	MemoryContextSwitchTo(old);
	fcinfo->flinfo->fn_extra = g;
	return g;
}

/* The row's tenant, checked; a NULL tenant belongs to no shard. */
static void
check_row(GuardTable *g, TriggerData *td, HeapTuple tuple)
{
	bool		isnull;
	Datum		value = heap_getattr(tuple, g->attnum, RelationGetDescr(td->tg_relation), &isnull);
	const char *tenant;
	size_t		len;

	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("tenant column \"%s\" of guarded table \"%s\" must not be null",
						td->tg_trigger->tgargs[1], RelationGetRelationName(td->tg_relation))));
	tenant = tenant_column_text(&g->column, value, &len);
	guard_check_tenant(&g->target, tenant, len, GUARD_WRITE);
}

/*
 * Whether a BEFORE guard checks the new row itself: it does when nothing
 * changes the row after it; else the AFTER guard does (55000 when there
 * is none: the guard fails closed until chash_guard_table adds it).
 */
static bool
new_row_checked_here(GuardTable *g, TriggerData *td)
{
	bool		update = TRIGGER_FIRED_BY_UPDATE(td->tg_event);
	const char *changes = update ? g->update_changes : g->insert_changes;

	if (changes == NULL)
		return true;
	if (update ? g->update_final_guard : g->insert_final_guard)
		return false;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("table \"%s\" may change a row's tenant after the guard checked it",
					RelationGetRelationName(td->tg_relation)),
			 errdetail("In directory \"%s\", %s, and the guard that checks the final row is missing.",
					   td->tg_trigger->tgargs[0], changes),
			 errhint("Guard the table again: SELECT chash_guard_table(directory, table_name).")));
	return false;
}

/*
 * chash_shard_row_guard(directory, tenant_column, shard): BEFORE INSERT,
 * UPDATE or DELETE FOR EACH ROW (COPY FROM included).  An UPDATE checks
 * the old row and, when its tenant changes, the new one.  The new row is
 * final only after every BEFORE ROW trigger (they fire in name order, and
 * one that sorts after the guard may set the tenant) and after a stored
 * generated column is computed: on a table with either, the same function
 * also fires AFTER INSERT OR UPDATE and checks the new row there (the
 * row is written by then, but the error rolls it back before anybody
 * sees it, and the lock tags are taken before the transaction can
 * commit, which is all the fence needs).  Only there: an AFTER row
 * trigger costs every statement a queued event.
 */
Datum
chash_shard_row_guard(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	GuardTable *g;
	HeapTuple	result;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_FOR_ROW(td->tg_event) ||
		TRIGGER_FIRED_INSTEAD(td->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("chash_shard_row_guard must be fired for each row, before or after it")));
	result = TRIGGER_FIRED_BY_UPDATE(td->tg_event) ? td->tg_newtuple : td->tg_trigtuple;
	if (guard_bypassed())
		return PointerGetDatum(result);
	g = guard_table(fcinfo, td);
	if (TRIGGER_FIRED_BEFORE(td->tg_event))
	{
		/* the old row of an UPDATE or DELETE, the new row where final */
		if (!TRIGGER_FIRED_BY_INSERT(td->tg_event))
			check_row(g, td, td->tg_trigtuple);
		if (TRIGGER_FIRED_BY_DELETE(td->tg_event) || !new_row_checked_here(g, td))
			return PointerGetDatum(result);
		if (TRIGGER_FIRED_BY_INSERT(td->tg_event))
		{
			check_row(g, td, td->tg_trigtuple);
			return PointerGetDatum(result);
		}
	}
	else if (TRIGGER_FIRED_BY_INSERT(td->tg_event))
	{
		check_row(g, td, td->tg_trigtuple);
		return PointerGetDatum(result);
	}
	else if (TRIGGER_FIRED_BY_DELETE(td->tg_event))
		return PointerGetDatum(result);
	if (TRIGGER_FIRED_BY_UPDATE(td->tg_event))
	{
		bool		old_null,
					new_null;
		Datum		old_value = heap_getattr(td->tg_trigtuple, g->attnum, RelationGetDescr(td->tg_relation), &old_null);
		Datum		new_value = heap_getattr(td->tg_newtuple, g->attnum, RelationGetDescr(td->tg_relation), &new_null);
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(td->tg_relation), g->attnum - 1);

		if (new_null || !datumIsEqual(old_value, new_value, att->attbyval, att->attlen))
			check_row(g, td, td->tg_newtuple);
	}
	return PointerGetDatum(result);
}
