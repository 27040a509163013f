/*
 * route.h - routing one tenant through a cached directory, for the
 * callers that must route outside a routing function's own call: the
 * fence barrier (fence.c) and the guard on shards (shard_guard.c)
 */
#ifndef CHASH_ROUTE_H
#define CHASH_ROUTE_H

#include "postgres.h"

#include "directory_cache.h"

/* How a tenant routes in one directory state. */
typedef struct TenantRoute
{
	const char *tenant;			/* canonical bytes: the input or buf */
	uint32		tenant_len;
	int32		slot;
	int32		owner;			/* index into dir->shards */
	bool		overridden;
	RouteStep  *step;			/* the step in flight that moves it, or NULL */
	char		buf[48];
} TenantRoute;

/*
 * Canonicalizes, slots and routes a tenant (22P02 when it is not of the
 * directory's key type).  Points into dir and tenant: valid as long as
 * both are.
 */
extern void route_tenant(RouteDirectory *dir, const char *tenant, size_t len, TenantRoute *route);

/* A shard name quoted for a message (palloc'd). */
extern char *route_quoted_shard(RouteDirectory *dir, int32 shard);

#endif
