/*
 * shard_failover.h - a shard that cannot vouch for its replica of the
 * directory refuses guarded writes (docs/shards.md, "Failover")
 */
#ifndef CHASH_SHARD_FAILOVER_H
#define CHASH_SHARD_FAILOVER_H

#include "postgres.h"

/*
 * chash's own SQLSTATEs: this shard cannot vouch for the tenant's owner
 * until a DBA mends its replica (SH002: another directory history, its
 * subscription gone), or until the replica follows again (SH003: disabled,
 * no apply worker, silent).
 */
#define ERRCODE_CHASH_CANNOT_VOUCH MAKE_SQLSTATE('S','H','0','0','2')
#define ERRCODE_CHASH_CANNOT_FOLLOW MAKE_SQLSTATE('S','H','0','0','3')

/* GUCs (module.c defines them): chash.fail_closed, chash.replica_max_silence (seconds, 0: off). */
extern bool chash_fail_closed;
extern int	chash_replica_max_silence;

/*
 * Called by the guard before it admits a row: SH002 or SH003 when chash.fail_closed
 * is on and the replica of the directory cannot be vouched for.  The
 * answer is kept for a second, or until a relation cache invalidation
 * (a change applied to the replica sends one) arrives.
 */
extern void failover_check_write(text *directory, const char *shard, int shard_len,
								 const char *tenant, size_t len);

#endif
