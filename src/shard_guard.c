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
#include "shard_guard.h"

PG_FUNCTION_INFO_V1(chash_shard_row_guard);

bool		chash_bypass_guard = false;
char	   *chash_session_tenant = NULL;

/* The guard's routing cache: one per session, like a call site's fn_extra. */
static FmgrInfo guard_flinfo;
static bool guard_flinfo_ready = false;

/* What the trigger keeps in fn_extra for a statement. */
typedef struct GuardTable
{
	Oid			relid;
	AttrNumber	attnum;
	bool		is_text;		/* text or varchar: the bytes as they are */
	FmgrInfo	output;			/* else the type's output function */
	GuardTarget target;
} GuardTable;

bool
guard_bypassed(void)
{
	static LocalTransactionId checked_lxid = InvalidLocalTransactionId;
	static Oid	checked_user = InvalidOid;
	static bool allowed = false;

	if (!chash_bypass_guard)
		return false;
	if (checked_lxid != MyProc->lxid || checked_user != GetUserId())
	{
		Oid			mover = get_role_oid("chash_mover", true);

		allowed = superuser() || (OidIsValid(mover) && is_member_of_role(GetUserId(), mover));
		checked_lxid = MyProc->lxid;
		checked_user = GetUserId();
	}
	if (!allowed)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to bypass the guard"),
				 errdetail("chash.bypass_guard is honoured only for superusers and members of role \"chash_mover\"."),
				 errhint("Reset chash.bypass_guard, or have the mover's role granted chash_mover.")));
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
	LOCAL_FCINFO(fcinfo, 0);
	RouteDirectory *dir;
	TenantRoute route;
	RouteStep  *step;
	Oid			save_user;
	int			save_sec;
	int32		me;

	if (!guard_flinfo_ready)
	{
		memset(&guard_flinfo, 0, sizeof(guard_flinfo));
		guard_flinfo.fn_oid = InvalidOid;
		guard_flinfo.fn_mcxt = AllocSetContextCreate(TopMemoryContext, "chash guard routing",
													 ALLOCSET_SMALL_SIZES);
		guard_flinfo_ready = true;
	}
	InitFunctionCallInfoData(*fcinfo, &guard_flinfo, 0, InvalidOid, NULL, NULL);

	/* the replica is read as its owner would, whoever writes */
	GetUserIdAndSecContext(&save_user, &save_sec);
	SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID, save_sec | SECURITY_LOCAL_USERID_CHANGE);
	if (access == GUARD_WRITE)
		dir = fence_admit_write(fcinfo, target->directory, tenant, len, &route);
	else
	{
		dir = directory_latest(fcinfo, target->directory);
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

static GuardTable *
guard_table(FunctionCallInfo fcinfo, TriggerData *td)
{
	GuardTable *g = (GuardTable *) fcinfo->flinfo->fn_extra;
	Trigger    *trigger = td->tg_trigger;
	Relation	rel = td->tg_relation;
	MemoryContext old;
	Oid			typid;
	Oid			output;
	bool		varlena;

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
	typid = get_atttype(g->relid, g->attnum);
	g->is_text = typid == TEXTOID || typid == VARCHAROID;
	getTypeOutputInfo(typid, &output, &varlena);
	fmgr_info(output, &g->output);
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

	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("tenant column \"%s\" of guarded table \"%s\" must not be null",
						td->tg_trigger->tgargs[1], RelationGetRelationName(td->tg_relation))));
	if (g->is_text)
	{
		text	   *t = DatumGetTextPP(value);

		guard_check_tenant(&g->target, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), GUARD_WRITE);
	}
	else
	{
		char	   *s = OutputFunctionCall(&g->output, value);

		guard_check_tenant(&g->target, s, strlen(s), GUARD_WRITE);
	}
}

/*
 * chash_shard_row_guard(directory, tenant_column, shard): BEFORE INSERT,
 * UPDATE or DELETE FOR EACH ROW (COPY FROM included).  An UPDATE checks
 * the old row and, when its tenant changes, the new one.
 */
Datum
chash_shard_row_guard(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	GuardTable *g;
	HeapTuple	result;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BEFORE(td->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(td->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("chash_shard_row_guard must be fired before each row")));
	result = TRIGGER_FIRED_BY_UPDATE(td->tg_event) ? td->tg_newtuple : td->tg_trigtuple;
	if (guard_bypassed())
		return PointerGetDatum(result);
	g = guard_table(fcinfo, td);
	check_row(g, td, td->tg_trigtuple);
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

void
shard_guard_init(void)
{
	DefineCustomBoolVariable("chash.bypass_guard",
							 "Lets the mover's sessions write past the guard on shards.",
							 "Honoured only for superusers and members of role chash_mover; guarded writes of anybody else who sets it fail.",
							 &chash_bypass_guard, false, PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("chash.tenant",
							   "The tenant this session works for: every statement on a guarded table is checked against it.",
							   NULL,
							   &chash_session_tenant, NULL, PGC_USERSET, 0, NULL, NULL, NULL);
	MarkGUCPrefixReserved("chash");
	guard_statement_init();
}
