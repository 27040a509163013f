/*
 * module.c - the library itself: its magic, its settings (GUCs) and the
 * hooks it installs when it is loaded.  Everything else in src/ lies below
 * this file; nothing calls back up into it.
 */
#include "postgres.h"

#include <limits.h>

#include "fmgr.h"
#include "utils/guc.h"

#include "shard_failover.h"
#include "load_stats.h"
#include "shard_guard.h"
#include "rebalance.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	DefineCustomBoolVariable("chash.bypass_guard",
							 "Lets the mover's sessions write past the guard on shards.",
							 "Honoured only when the role that set it and the role that writes are superusers or members of role chash_mover; guarded writes of anybody else fail.",
							 &chash_bypass_guard, false, PGC_USERSET, 0,
							 check_bypass_guard, assign_bypass_guard, NULL);
	DefineCustomStringVariable("chash.tenant",
							   "The tenant this session works for: every statement on a guarded table is checked against it.",
							   NULL,
							   &chash_session_tenant, NULL, PGC_USERSET, 0, NULL, NULL, NULL);
	/* what a shard does when it cannot vouch for its replica (shard_failover.c) */
	DefineCustomBoolVariable("chash.fail_closed",
							 "Makes a shard refuse guarded writes while it cannot vouch for its replica of the directory.",
							 "A replica of another directory history, or one that does not follow its directory database (see chash.replica_max_silence).",
							 &chash_fail_closed, true, PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("chash.replica_max_silence",
							"How long a shard's replica may go without hearing from the directory database before the shard cannot vouch for it.",
							"0 turns the bound off.  The directory database sends at least every wal_receiver_timeout / 2 of the shard.",
							&chash_replica_max_silence, 0, 0, INT_MAX / 1000, PGC_SIGHUP, GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomRealVariable("chash.load_tolerance",
							 "How far over its share of the load a shard may be before the 'load' plan moves slots off it.",
							 "A fraction of the share: 0.1 lets a shard carry 1.1 times its share, as the bounded-loads scheme's epsilon.",
							 &chash_load_tolerance, 0.1, 0.0, 100.0, PGC_USERSET, 0, NULL, NULL, NULL);
	/* the background rebalance's settings, job cap and launcher (rebalance.c) */
	rebalance_init();
	MarkGUCPrefixReserved("chash");

	/*
	 * The guard's check of statements that name a tenant (guard_statement.c),
	 * then the load statistics' hooks and settings (load_stats.c), whose
	 * executor hooks run first: a statement is tracked before the guard's
	 * check counts it.
	 */
	guard_statement_init();
	load_stats_init();
	load_collect_init();
}
