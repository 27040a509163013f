/*
 * guard_access.h - what the guard admits (a row written, a statement
 * about to write or read), for the guard (shard_guard.h) and the load
 * statistics it counts (load_stats.h), below both.
 */
#ifndef CHASH_GUARD_ACCESS_H
#define CHASH_GUARD_ACCESS_H

typedef enum GuardAccess
{
	GUARD_WRITE,				/* a row written: admit it (lock tags) */
	GUARD_WRITE_STATEMENT,		/* an UPDATE/DELETE about to run */
	GUARD_READ					/* a SELECT about to run */
} GuardAccess;

#endif
