/*
 * directory_cache.h - the per-backend routing cache of shard directories
 *
 * route.c answers chash_route and friends from it; directory_cache.c loads
 * it from the directory tables and drops it on relcache invalidation.
 */
#ifndef CHASH_DIRECTORY_CACHE_H
#define CHASH_DIRECTORY_CACHE_H

#include "postgres.h"

#include "fmgr.h"
#include "utils/uuid.h"

#include "directory.h"

typedef struct RouteShard
{
	text	   *name;			/* returned as is by chash_route */
	double		weight;
	char		state;			/* 'a'ctive, 'd'raining, 'r'etired */
} RouteShard;

/* A migration step in flight (copying or fenced) of a running migration. */
typedef struct RouteStep
{
	int64		migration;
	int32		step;
	int32		slot;			/* -1 for a tenant step */
	bool		fenced;
	text	   *to_shard;
} RouteStep;

typedef struct RouteDirectory
{
	struct RouteDirectory *next;
	MemoryContext context;		/* everything below lives here */
	char	   *name;
	int			name_len;
	int64		version;
	int32		slot_count;
	slot_method method;
	key_type	ktype;
	int			nshards;
	RouteShard *shards;
	int32	   *slot_owner;		/* slot -> index into shards */
	tenant_map	overrides;		/* canonical tenant -> index into shards */
	int			nsteps;
	RouteStep  *steps;			/* slot steps sorted by slot, then tenant steps */
	int			nslot_steps;
	tenant_map	tenant_steps;	/* canonical tenant -> index into steps */
} RouteDirectory;

/*
 * The directory as the calling statement must see it: valid for the active
 * snapshot and the current user (42501 without SELECT on the tables, 42704
 * for an unknown directory).  Cached in fn_extra for the rest of the
 * statement; the result stays allocated until the transaction ends.
 */
extern RouteDirectory *directory_for_call(FunctionCallInfo fcinfo, text *name);

/* A tenant as routing sees it: canonical bytes, hash and slot. */
typedef struct RouteKey
{
	const char *data;
	uint32		len;
	bool		have_xxh;
	uint64		xxh;
	int32		slot;
	char		buf[CANONICAL_UUID_LEN + 4];
} RouteKey;

/*
 * Canonicalizes and slots a tenant (22P02 when not of the key type).
 * tenant_text may be NULL when the caller has only the bytes.
 */
extern void route_key_init(RouteDirectory *dir, const char *tenant, size_t len,
						   RouteKey *key);

/* The override shard of a key, or -1. */
extern int32 route_override(RouteDirectory *dir, RouteKey *key);

/* The in-flight step that moves this key (tenant step first), or NULL. */
extern RouteStep *route_step(RouteDirectory *dir, RouteKey *key, bool overridden);

/* The extension's schema, quoted for SQL text. */
extern const char *directory_schema_quoted(void);

#endif
