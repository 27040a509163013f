/*
 * route_directory.h - a shard directory's state as routing holds it (a
 * RouteDirectory): what the loader (directory_load.c, directory_rows.c)
 * and the catch-up (directory_apply.c) fill and the cache
 * (directory_cache.c) keeps, below all of them.
 */
#ifndef CHASH_ROUTE_DIRECTORY_H
#define CHASH_ROUTE_DIRECTORY_H

#include "postgres.h"

#include "storage/itemptr.h"

#include "directory.h"
#include "states.h"
#include "step_index.h"

typedef struct RouteShard
{
	text	   *name;			/* 4-byte header; routing returns a copy */
	int			state;			/* shard_state, or -1 while being read */
} RouteShard;

/* A migration step in flight (copying or fenced) of a running migration. */
typedef struct RouteStep
{
	int64		migration;
	int32		step;
	int32		slot;			/* -1 for a tenant step */
	bool		fenced;
	int32		to_shard;		/* index into shards */
} RouteStep;

/*
 * Which state of the tables a cached directory holds.  Another
 * transaction's committed change always writes a new version of the
 * directory row (the bump triggers), so the row version a snapshot sees
 * names the committed state it sees.  That is not true of our own
 * transaction's changes (the row is bumped once per transaction) and of
 * snapshots that straddle them: those states are named by the snapshot
 * itself (own).
 */
typedef struct DirectoryIdentity
{
	ItemPointerData tid;		/* the directory row version read */
	TransactionId xmin;
	int64		version;
	bool		own;			/* our own changes may be visible */
	TransactionId snap_xmin;	/* own: the snapshot that read it */
	TransactionId snap_xmax;
	uint64		snap_completions;	/* 0: a copied snapshot (CopySnapshot clears it) */
	CommandId	snap_curcid;
	/* without a completion count: the transactions it sees in progress */
	uint32		snap_xcnt;
	int32		snap_subxcnt;
	bool		snap_suboverflowed;
	TransactionId *snap_xip;	/* the snapshot's, or the entry's copy */
	TransactionId *snap_subxip;
} DirectoryIdentity;

typedef struct RouteDirectory
{
	struct RouteDirectory *next;
	MemoryContext context;		/* everything below lives here */
	char	   *name;
	int			name_len;
	DirectoryIdentity identity;
	uint64		load_id;		/* unique per load, unlike the address */
	uint64		last_used;
	int64		version;
	int32		slot_count;
	slot_method method;
	key_type	ktype;
	int			nshards;
	RouteShard *shards;
	int32	   *slot_owner;		/* slot -> index into shards */
	tenant_map	overrides;		/* canonical tenant -> index into shards */
	uint32		overrides_removed;	/* since the map was built (their filter bits stay) */
	RouteStep  *steps;			/* by step_ref.value */
	step_index	step_index;
	MemoryContext step_context; /* steps, refs and their index */
	bool		broken;			/* a catch-up failed halfway: never use */
} RouteDirectory;

#endif
