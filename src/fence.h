/*
 * fence.h - the fence as a barrier (docs/migrations.md, "The fence is a
 * barrier"): the lock tags writers hold and fences wait for
 */
#ifndef CHASH_FENCE_H
#define CHASH_FENCE_H

#include "postgres.h"

#include "directory_cache.h"
#include "route.h"

/*
 * Admits a write of a tenant: takes the writer's tags for its slot and
 * tenant (held until the transaction ends), then routes it by the latest
 * committed state, which the caller checks.  Any fence that state does not
 * show waits for this transaction.  site: the caller's routing call site.
 */
extern RouteDirectory *fence_admit_write(RouteCallSite *site, text *name,
										 const char *tenant, size_t len,
										 TenantRoute *route);

/* 40001: the tenant's step is fenced. */
extern void fence_report_fenced(RouteDirectory *dir, TenantRoute *route) pg_attribute_noreturn();

#endif
