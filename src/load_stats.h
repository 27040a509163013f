/*
 * load_stats.h - the load statistics a shard counts in shared memory
 * (docs/load.md): what the guard calls to count
 */
#ifndef CHASH_LOAD_STATS_H
#define CHASH_LOAD_STATS_H

#include "postgres.h"

#include "guard_access.h"

/*
 * Counts an access the guard admitted: a row written counts itself; the
 * first tenant checked for a statement is the one its executor time,
 * rows and (for a SELECT) its read are counted for.
 */
extern void load_stats_count(const char *directory, int directory_len, int32 slot,
							 const char *tenant, uint32 tenant_len, GuardAccess access);

/* GUC and, when preloading, shared memory and executor hooks. */
extern void load_stats_init(void);

/* chash_collect's GUC (load_collect.c). */
extern void load_collect_init(void);

/* chash.load_tolerance, the 'load' plan's cap over a shard's share (planner.c). */
extern double chash_load_tolerance;

#endif
