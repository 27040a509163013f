/*
 * directory_cache.c - shard directories held in backend memory, and which
 * one a statement's snapshot may use (docs/directory.md: routing is a read of the
 * tables)
 *
 * chash_route must not read the tables row by row, and must answer
 * exactly what a SELECT of the tables would in the calling statement's
 * snapshot.  Each directory state is loaded once, into its own memory
 * context, and kept under an identity (DirectoryIdentity) that names the
 * state of the tables it holds:
 *
 *  - Every committed change writes a new version of the directory row
 *    (the bump triggers, once per transaction), so for a snapshot that
 *    sees none of our own transaction's changes the row version it sees
 *    (TID, xmin, version) names the state it sees: a READ COMMITTED
 *    statement, a REPEATABLE READ transaction, an old cursor, a hot
 *    standby and a directory dropped and re-created under the same name
 *    each find the state their snapshot sees, never another.
 *
 *  - Our own changes do not always write the row (it is bumped once per
 *    transaction), and which of them a snapshot sees depends on its
 *    command id.  Once this transaction has changed a directory table, or
 *    the row the snapshot sees is its own, the state is named by the
 *    snapshot too (its xmin, xmax, completion count and command id); such
 *    entries die with the transaction.  Subtransaction rollback needs
 *    nothing more: a snapshot taken after it differs (command ids go on).
 *
 * Invalidations are not needed for correctness, only to find the tables
 * again (directory_catalog.c).  Per call, only the snapshot is compared
 * (in the call site, RouteCallSite), so a batch query pays the lookup once per statement.
 * Routing functions return copies, so an entry can be freed as soon as
 * no call site can reach it: each eviction moves the generation on.
 */
#include "chash.h"

#include "access/parallel.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "directory_apply.h"
#include "directory_cache.h"
#include "directory_catalog.h"
#include "directory_load.h"

/*
 * States kept per directory name (the current one, an older cursor's, a
 * REPEATABLE READ transaction's) and in all.
 */
#define STATES_PER_DIRECTORY 4
#define STATES_IN_ALL 64

static RouteDirectory *directories = NULL;
static int	ndirectories = 0;
static uint64 cache_generation = 1;
static uint64 use_clock = 0;
static uint64 catalog_epoch = 0;	/* the catalog the entries were read from */
static bool callbacks_registered = false;

/* The transaction that changed directory tables (the trigger tells us). */
static LocalTransactionId own_change_lxid = InvalidLocalTransactionId;

/* What a call site remembers between calls of one statement. */
struct RouteCallSite
{
	MemoryContext mcxt;			/* the copies below live here */
	RouteDirectory *dir;
	uint64		generation;
	Oid			userid;
	Snapshot	snapshot;		/* compared only when completions is 0 */
	TransactionId xmin;
	TransactionId xmax;
	CommandId	curcid;
	uint64		completions;
	int			name_len;
	int			name_capacity;
	char	   *name;
	uint64		names_load;		/* the load names[] holds copies from */
	text	  **names;			/* by shard index; NULL: not copied yet */
	/* directory_latest: dir is the latest committed state while these hold */
	bool		latest;
	uint64		latest_changes;
	uint64		latest_evictions;
};

/* Entries freed so far: an entry a call site points at may be gone. */
static uint64 evictions = 0;

static uint64 load_counter = 0;

/* How this backend's entries came about, for chash_routing_cache_stats. */
static uint64 full_loads = 0;
static uint64 catch_ups = 0;

void
directory_cache_counts(uint64 *loads, uint64 *caught_up, int *entries)
{
	*loads = full_loads;
	*caught_up = catch_ups;
	*entries = ndirectories;
}

static void
free_entry(RouteDirectory **link)
{
	RouteDirectory *dir = *link;

	*link = dir->next;
	ndirectories--;
	evictions++;
	/* a call site may point at it: the generation tells them to look again */
	cache_generation++;
	MemoryContextDelete(dir->context);
}

static void
free_entries(bool own_only)
{
	RouteDirectory **link = &directories;

	while (*link != NULL)
	{
		if (!own_only || (*link)->identity.own)
			free_entry(link);
		else
			link = &(*link)->next;
	}
}

static void
xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			/* states named by this transaction's snapshots are unreachable */
			free_entries(true);
			/* and a call site never carries a directory into another transaction */
			cache_generation++;
			break;
		default:
			break;
	}
}

static void
subxact_callback(SubXactEvent event, SubTransactionId mySubid,
				 SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		/* locks taken in the subtransaction are released with it */
		directory_catalog_forget_locks();
		cache_generation++;
	}
}

void
directory_cache_note_own_change(void)
{
	own_change_lxid = MyProc->lxid;
}

/* Whether the snapshot may see changes of our own transaction. */
static bool
own_changes_visible(const DirectoryRow *row)
{
	if (own_change_lxid == MyProc->lxid)
		return true;
	if (TransactionIdIsCurrentTransactionId(row->xmin))
		return true;
	/* a parallel worker does not hear of the leader's changes */
	return IsParallelWorker() && TransactionIdIsValid(GetTopTransactionIdIfAny());
}

static void
identity_of(const DirectoryRow *row, Snapshot snapshot, DirectoryIdentity *id)
{
	memset(id, 0, sizeof(*id));
	id->tid = row->tid;
	id->xmin = row->xmin;
	id->version = row->version;
	id->own = own_changes_visible(row);
	if (id->own)
	{
		id->snap_xmin = snapshot->xmin;
		id->snap_xmax = snapshot->xmax;
		id->snap_completions = snapshot->snapXactCompletionCount;
		id->snap_curcid = snapshot->curcid;
		id->snap_xcnt = snapshot->xcnt;
		id->snap_subxcnt = snapshot->subxcnt;
		id->snap_suboverflowed = snapshot->suboverflowed;
		id->snap_xip = snapshot->xip;
		id->snap_subxip = snapshot->subxip;
	}
}

/*
 * An identity kept with its entry: the snapshot's arrays copied into the
 * entry's memory (the snapshot may be gone when the next statement asks).
 */
static void
identity_keep(DirectoryIdentity *kept, const DirectoryIdentity *id, MemoryContext context)
{
	*kept = *id;
	kept->snap_xip = kept->snap_subxip = NULL;
	if (!id->own)
		return;
	if (id->snap_xcnt > 0)
		kept->snap_xip = MemoryContextAlloc(context, sizeof(TransactionId) * id->snap_xcnt);
	if (id->snap_subxcnt > 0)
		kept->snap_subxip = MemoryContextAlloc(context, sizeof(TransactionId) * id->snap_subxcnt);
	if (id->snap_xcnt > 0)
		memcpy(kept->snap_xip, id->snap_xip, sizeof(TransactionId) * id->snap_xcnt);
	if (id->snap_subxcnt > 0)
		memcpy(kept->snap_subxip, id->snap_subxip, sizeof(TransactionId) * id->snap_subxcnt);
}

static bool
identity_equal(const DirectoryIdentity *a, const DirectoryIdentity *b)
{
	if (!ItemPointerEquals(unconstify(ItemPointerData *, &a->tid),
						   unconstify(ItemPointerData *, &b->tid)) ||
		a->xmin != b->xmin || a->version != b->version || a->own != b->own)
		return false;
	if (!a->own)
		return true;
	if (a->snap_xmin != b->snap_xmin || a->snap_xmax != b->snap_xmax || a->snap_curcid != b->snap_curcid)
		return false;
	/* equal completion counts: the same transactions are visible */
	if (a->snap_completions != 0 && b->snap_completions != 0)
		return a->snap_completions == b->snap_completions;

	/*
	 * A copied snapshot has no count (the snapshot of a SQL function's or a
	 * portal's statements): the same transactions in progress, in the same
	 * order, are the same visibility.  Otherwise each call of such a
	 * statement loaded the directory in full.
	 */
	return a->snap_xcnt == b->snap_xcnt && a->snap_subxcnt == b->snap_subxcnt &&
		a->snap_suboverflowed == b->snap_suboverflowed &&
		(a->snap_xcnt == 0 || memcmp(a->snap_xip, b->snap_xip, sizeof(TransactionId) * a->snap_xcnt) == 0) &&
		(a->snap_subxcnt <= 0 || memcmp(a->snap_subxip, b->snap_subxip, sizeof(TransactionId) * a->snap_subxcnt) == 0);
}

/* Keeps at most STATES_PER_DIRECTORY per name and STATES_IN_ALL in all. */
static void
evict(const char *name, int name_len)
{
	for (;;)
	{
		RouteDirectory **oldest = NULL;
		RouteDirectory **named_oldest = NULL;
		int			named = 0;

		for (RouteDirectory **link = &directories; *link != NULL; link = &(*link)->next)
		{
			RouteDirectory *d = *link;

			if (oldest == NULL || d->last_used < (*oldest)->last_used)
				oldest = link;
			if (d->name_len == name_len && memcmp(d->name, name, name_len) == 0)
			{
				named++;
				if (named_oldest == NULL || d->last_used < (*named_oldest)->last_used)
					named_oldest = link;
			}
		}
		if (named > STATES_PER_DIRECTORY)
			free_entry(named_oldest);
		else if (ndirectories > STATES_IN_ALL)
			free_entry(oldest);
		else
			return;
	}
}

/* The directory for this snapshot and user, loading it when needed. */
static RouteDirectory *
directory_lookup(text *name, Snapshot snapshot)
{
	const char *n = VARDATA_ANY(name);
	int			len = VARSIZE_ANY_EXHDR(name);
	const DirectoryCatalog *catalog;
	DirectoryRow row;
	DirectoryIdentity id;
	RouteDirectory *dir;

	if (!callbacks_registered)
	{
		RegisterXactCallback(xact_callback, NULL);
		RegisterSubXactCallback(subxact_callback, NULL);
		callbacks_registered = true;
	}
	/* news of DROP / CREATE EXTENSION or ALTER TABLE in other sessions */
	AcceptInvalidationMessages();
	catalog = directory_catalog_open();
	if (catalog->epoch != catalog_epoch)
	{
		free_entries(false);
		catalog_epoch = catalog->epoch;
	}
	if (!directory_read_row(catalog, name, snapshot, &row))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("directory \"%.*s\" does not exist", chash_quote_len(n, len), n)));
	identity_of(&row, snapshot, &id);

	/* a catch-up that failed halfway left its state unusable */
	for (RouteDirectory **link = &directories; *link != NULL;)
		if ((*link)->broken)
			free_entry(link);
		else
			link = &(*link)->next;

	for (dir = directories; dir != NULL; dir = dir->next)
		if (dir->name_len == len && memcmp(dir->name, n, len) == 0 &&
			identity_equal(&dir->identity, &id))
		{
			dir->last_used = ++use_clock;
			return dir;
		}

	/*
	 * A committed state older than the one the snapshot sees catches up
	 * from the change history (directory_apply.c), in place: the older
	 * state is wanted again only by an older snapshot, which loads it.
	 * Own changes may be visible: those load (their rows are not history).
	 */
	if (!id.own)
	{
		RouteDirectory *base = NULL;

		for (dir = directories; dir != NULL; dir = dir->next)
			if (dir->name_len == len && memcmp(dir->name, n, len) == 0 &&
				!dir->identity.own && dir->version < row.version &&
				(base == NULL || dir->version > base->version))
				base = dir;
		if (base != NULL)
		{
			/* a call site may point at it: the generation tells them to look again */
			cache_generation++;
			if (directory_catch_up(catalog, base, name, &row, snapshot))
			{
				catch_ups++;
				identity_keep(&base->identity, &id, base->context);
				base->load_id = ++load_counter;
				base->last_used = ++use_clock;
				return base;
			}
		}
	}

	dir = directory_load(catalog, name, &row, snapshot);
	full_loads++;
	identity_keep(&dir->identity, &id, dir->context);
	dir->load_id = ++load_counter;
	dir->last_used = ++use_clock;
	dir->next = directories;
	directories = dir;
	ndirectories++;
	evict(n, len);
	return dir;
}

RouteCallSite *
route_call_site_create(MemoryContext mcxt)
{
	RouteCallSite *site = MemoryContextAllocZero(mcxt, sizeof(RouteCallSite));

	site->mcxt = mcxt;
	return site;
}

RouteCallSite *
route_call_site(FunctionCallInfo fcinfo)
{
	RouteCallSite *site = (RouteCallSite *) fcinfo->flinfo->fn_extra;

	if (unlikely(site == NULL))
	{
		site = route_call_site_create(fcinfo->flinfo->fn_mcxt);
		fcinfo->flinfo->fn_extra = site;
	}
	return site;
}

RouteDirectory *
directory_for_site(RouteCallSite *call, text *name)
{
	Snapshot	snapshot = ActiveSnapshotSet() ? GetActiveSnapshot() : GetTransactionSnapshot();
	const char *n = VARDATA_ANY(name);
	int			len = VARSIZE_ANY_EXHDR(name);

	/*
	 * The same snapshot as the previous call: equal completion counts mean
	 * the same visible transactions (GetSnapshotData reuses a snapshot on
	 * that ground); a snapshot without one (restored in a parallel worker,
	 * imported) must be the very same one.
	 */
	if (call->dir != NULL &&
		call->generation == cache_generation &&
		call->name_len == len && memcmp(call->name, n, len) == 0 &&
		call->xmin == snapshot->xmin && call->xmax == snapshot->xmax &&
		call->curcid == snapshot->curcid &&
		call->completions == snapshot->snapXactCompletionCount &&
		(call->completions != 0 || call->snapshot == snapshot) &&
		call->userid == GetUserId())
		return call->dir;

	call->dir = NULL;
	call->latest = false;
	call->dir = directory_lookup(name, snapshot);
	if (call->name_capacity < len)
	{
		call->name_capacity = Max(len, 32);
		call->name = MemoryContextAlloc(call->mcxt, call->name_capacity);
	}
	memcpy(call->name, n, len);
	call->name_len = len;
	call->generation = cache_generation;
	call->userid = GetUserId();
	call->snapshot = snapshot;
	call->xmin = snapshot->xmin;
	call->xmax = snapshot->xmax;
	call->curcid = snapshot->curcid;
	call->completions = snapshot->snapXactCompletionCount;
	return call->dir;
}

RouteDirectory *
directory_latest(RouteCallSite *call, text *name)
{
	uint64		changes;
	RouteDirectory *dir;

	AcceptInvalidationMessages();
	changes = directory_catalog_changes();
	if (call->dir != NULL && call->latest &&
		call->latest_changes == changes && call->latest_evictions == evictions &&
		!call->dir->identity.own && own_change_lxid != MyProc->lxid &&
		call->userid == GetUserId() &&
		call->name_len == (int) VARSIZE_ANY_EXHDR(name) &&
		memcmp(call->name, VARDATA_ANY(name), call->name_len) == 0)
	{
		call->dir->last_used = ++use_clock;
		return call->dir;
	}
	PushActiveSnapshot(GetLatestSnapshot());
	dir = directory_for_site(call, name);
	PopActiveSnapshot();
	/* counted before the read: an invalidation during it makes us read again */
	call->latest = true;
	call->latest_changes = changes;
	call->latest_evictions = evictions;
	return dir;
}

text *
directory_shard_name(RouteCallSite *call, RouteDirectory *dir, int32 shard)
{
	text	   *name;

	/* older copies stay: results handed out may still point at them */
	if (call->names_load != dir->load_id)
	{
		call->names = MemoryContextAllocZero(call->mcxt,
											 sizeof(text *) * Max(dir->nshards, 1));
		call->names_load = dir->load_id;
	}
	if (call->names[shard] == NULL)
	{
		name = dir->shards[shard].name;
		call->names[shard] = MemoryContextAlloc(call->mcxt, VARSIZE(name));
		memcpy(call->names[shard], name, VARSIZE(name));
	}
	return call->names[shard];
}
