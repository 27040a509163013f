/*
 * directory_cache.h - shard directories held in backend memory for routing
 *
 * route.c answers chash_route and friends from a RouteDirectory
 * (route_directory.h);
 * directory_load.c builds one from the tables; directory_cache.c keeps
 * them and decides which one a statement's snapshot may use.
 */
#ifndef CHASH_DIRECTORY_CACHE_H
#define CHASH_DIRECTORY_CACHE_H

#include "postgres.h"

#include "fmgr.h"

#include "route_directory.h"

/*
 * A call site's routing state: the directory state it used last, the
 * snapshot that state was chosen for, and its copies of shard names.
 * Every caller of the cache holds one: a SQL routing function in its
 * fn_extra (route_call_site), the guard one a session (shard_guard.c),
 * the fence its caller's.  Its memory is the context given, which must
 * outlive every shard name handed out.
 */
typedef struct RouteCallSite RouteCallSite;

extern RouteCallSite *route_call_site_create(MemoryContext mcxt);

/*
 * The call site of a SQL-callable function, in its fn_extra: the only
 * place the routing cache meets fcinfo.
 */
extern RouteCallSite *route_call_site(FunctionCallInfo fcinfo);

/*
 * The directory as the calling statement's snapshot sees it, for the
 * current user: 42704 for an unknown directory; the tables are locked
 * until the transaction ends.  Remembered in the call site for the
 * following calls with the same snapshot.  Valid until the site's next
 * lookup: routing functions return copies.
 */
extern RouteDirectory *directory_for_site(RouteCallSite *site, text *name);

/*
 * The latest committed state of the directory (with this transaction's
 * own changes), for the guard and chash_route_for_write, which must not
 * route by their transaction's snapshot.  Kept across transactions and
 * read again only when an invalidation of the tables has arrived since:
 * a commit sends its invalidations before it releases its locks, so a
 * caller that waited for a lock the committer held sees its change.  A
 * commit whose invalidations are still on their way may be missed; the
 * fence's lock protocol (fence.c) never depends on one.  The tables are
 * not locked when the cached state is used.
 */
extern RouteDirectory *directory_latest(RouteCallSite *site, text *name);

/*
 * The call site's own copy of a shard name.  Made once per call site and
 * directory state, in the site's memory (a function's fn_mcxt, which
 * outlives every use of the result, a CALL argument too), unlike the
 * cache entry; a palloc per row would cost a fifth of chash_route.
 */
extern text *directory_shard_name(RouteCallSite *site, RouteDirectory *dir, int32 shard);

/*
 * Called by the invalidation trigger: this transaction changed directory
 * tables, so its snapshots may see states no directory row names.
 */
extern void directory_cache_note_own_change(void);
extern void directory_cache_counts(uint64 *loads, uint64 *caught_up, int *entries);

#endif
