/*
 * shard_guard.h - the guard on a shard's tenant tables (docs/shards.md,
 * "The guard"): what the row trigger (shard_guard.c) and the statement
 * check (guard_statement.c) share
 */
#ifndef CHASH_SHARD_GUARD_H
#define CHASH_SHARD_GUARD_H

#include "postgres.h"

#include "access/attnum.h"
#include "fmgr.h"
#include "utils/guc.h"

#include "guard_access.h"
#include "tenant_key.h"

/* chash's own SQLSTATE: the tenant is not on this shard (route again). */
#define ERRCODE_CHASH_WRONG_SHARD MAKE_SQLSTATE('S','H','0','0','1')

/* The guard trigger's arguments: directory, tenant column, this shard. */
typedef struct GuardTarget
{
	text	   *directory;
	char	   *shard;
	int			shard_len;
	uint64		me_load;		/* the directory load me was found in */
	int32		me;				/* this shard's index there, -1: none */
} GuardTarget;

/* Settings (module.c defines them): chash.bypass_guard, chash.tenant. */
extern bool chash_bypass_guard;
extern char *chash_session_tenant;

/* chash.bypass_guard's hooks: the bypass belongs to the role that set it. */
extern bool check_bypass_guard(bool *newval, void **extra, GucSource source);
extern void assign_bypass_guard(bool newval, void *extra);

/*
 * Whether this session bypasses the guard: chash.bypass_guard on, and the
 * session's role, the role that set it and the current role each a
 * superuser or a member of chash_mover (42501 otherwise).
 */
extern bool guard_bypassed(void);

/*
 * Checks a tenant against the latest directory state applied here:
 * SH001 when it belongs elsewhere (or is being copied here), 40001 when
 * its step is fenced (reads of the source excepted).
 */
extern void guard_check_tenant(GuardTarget *target, const char *tenant, size_t len,
							   GuardAccess access);

/* 0A000 unless the tenant column's collation (collid) is deterministic. */
extern void guard_require_deterministic(Oid collid, Oid relid, AttrNumber attnum,
										const char *directory);

extern void guard_statement_init(void);

#endif
