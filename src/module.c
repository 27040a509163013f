/*
 * module.c - the library itself: its magic, its settings (GUCs) and the
 * hooks it installs when it is loaded.  Everything else in src/ lies below
 * this file; nothing calls back up into it.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "shard_guard.h"

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
	MarkGUCPrefixReserved("chash");

	/* the guard's check of statements that name a tenant (guard_statement.c) */
	guard_statement_init();
}
