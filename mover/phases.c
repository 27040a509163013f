/*
 * One batch of steps (one shard pair, all slot or all tenant steps; the
 * single step is the batch of one), from where its leases' progress says
 * it got (SPEC 4.4, 4.6):
 *   0. before anything happens on the shards (step_check): the tables in
 *      foreign-key order, the same columns on both shards, the target's
 *      sequences; a shard that cannot take the batch stops the mover.
 *      Once per shard pair in a run (tables.c keeps them), confirmed in
 *      each copy's transactions by one statement per shard;
 *   1. fence it (one directory version, one barrier over its slots or
 *      tenants), then chash_shard_wait_fence over the batch on the source.
 *      A blocking batch of a pair checked earlier in the run comes fenced
 *      from its claim (run.c, fence_pairs): one version and one change of
 *      each step's row fewer, the checks of 0. run after its fence;
 *   2. on the target, in one transaction: delete the batch's rows left by
 *      an earlier try, COPY the batch's rows of every registered table from
 *      the source, one COPY per table (one REPEATABLE READ snapshot there;
 *      the predicate: slot = ANY (the batch's slots) minus pinned tenants,
 *      or tenant = ANY (its tenants)), and
 *   3. verify: per table, the count and order-independent checksum of
 *      the source's COPY stream (rowsum.c) equal COPY FROM's count and
 *      the target's rows read back the same way; commit only then, else
 *      roll back and release the batch (a takeover of a copied batch and
 *      an online step: sum of chash_xxh64 of each row's text, both sides);
 *   3b. advance the target's sequences past the moved values;
 *   4. complete it (one directory version); once the source has applied
 *      the completion, delete the moved rows there (children first), one
 *      DELETE per table: for a blocking batch in the job's finisher
 *      thread, while the job goes on with its next batch.
 * Writes to the batch's rows are refused from 1 to 4 only.  A takeover
 * redoes only what the progress says is missing: a fenced batch is copied
 * again (the target's transaction rolled back with the dead mover, or its
 * leftovers are deleted first), a copied one is verified again and
 * completed, a completed one only has its source rows deleted.
 * With --online (online.c) the rows are copied before the fence from the
 * snapshot of a logical slot whose subscription then streams their
 * changes (one slot, one subscription for the batch); after the fence the
 * mover waits until the target has applied the source's WAL, then
 * verifies the rows changed since the copy; the subscription is gone
 * before any source row is deleted.
 *
 * move_batch runs the phases of the table below in order until one ends
 * the batch (move.h, PhaseResult); batch_end then gives it back, releases
 * it or leaves it to its leases.  The copy itself is the batch's
 * strategy (move.h, CopyStrategy): the blocking copy (copy_blocking.c)
 * or the online copy (copy_online.c).  The waits are in wait_fence.c,
 * the deletes in delete.c, the source's side of a completed batch in
 * finisher.c.
 */
#include <stdlib.h>
#include <string.h>

#include "move.h"

/* Gives a batch in flight back: its subscription dropped, its copy off the target, then released. */
static void
give_back(Server *dir, Server *src, Server *tgt, TableInfo *tables, int ntables, const StepTarget *target,
		  const Batch *batch)
{
	if (!lease_lock(dir, batch, STEP_STATE(STEP_COPYING) | STEP_STATE(STEP_FENCED)))
		return;					/* not ours any more, or done */
	/* never the target's rows while a shard says the target may own them */
	if (tgt == NULL || !server_open(tgt) || !shard_agrees(dir, tgt, batch, dir_identity, sizeof(dir_identity))
		|| (src != NULL && server_open(src) && !shard_agrees(dir, src, batch, dir_identity, sizeof(dir_identity))))
	{
		server_rollback(dir);
		return;
	}
	if (tgt != NULL && tgt->conn != NULL && server_open(tgt)
		&& (src == NULL || !server_open(src) || online_drop_batch(src, tgt, batch)))
		delete_rows(tgt, tables, ntables, target);
	if (!lease_release(dir, batch) || !lease_unlock(dir, true))
		server_rollback(dir);
}

/* ---- the phases, in order; each says how it ended (move.h, PhaseResult) ---- */

/* A batch not completed yet: the fence, the wait, the copy and the completion are still to come. */
static bool
in_flight(const Move *m)
{
	return m->batch->state != STEP_DONE;
}

/* connect: the registered tables, both shards */
static PhaseResult
phase_connect(Move *m)
{
	m->ntables = registered_tables(m->dir, &m->tables);
	m->src = m->ntables >= 0 ? step_shard(m->dir, m->batch->from_shard) : NULL;
	m->tgt = m->src != NULL ? step_shard(m->dir, m->batch->to_shard) : NULL;
	return m->src == NULL || m->tgt == NULL ? PHASE_REFUSE : PHASE_NEXT;
}

/* agree: the shards agree with the directory about the steps, and it stays the same server */
static PhaseResult
phase_agree(Move *m)
{
	dir_identity[0] = '\0';
	return shards_agree(m->dir, m->src, m->tgt, m->batch) ? PHASE_NEXT : PHASE_REFUSE;
}

/* check (0.): before anything happens on the shards, what the steps need of them */
static PhaseResult
phase_check(Move *m)
{
	step_state	state = m->batch->state;
	bool		ok = state == STEP_CANCELLED || state == STEP_DONE
		? order_tables(m->src, m->tables, m->ntables) && foreign_code_check(m->src, m->tgt, m->tables, m->ntables)
		: step_check(m->src, m->tgt, m->tables, m->ntables);

	return ok ? PHASE_NEXT : PHASE_REFUSE;
}

/*
 * resume: the subscription of an earlier try of a fenced step is resumed
 * when it streams (the batch goes on as an online copy); any other is
 * dropped first, before its publication could send a deletion of the
 * step's rows on the source to the target.
 */
static PhaseResult
phase_resume(Move *m)
{
	if (m->batch->state == STEP_FENCED && options.online
		&& online_streaming(m->tgt, m->batch->steps[0], m->ntables))
		m->copy = &online_copy;
	else if (!online_drop_batch(m->src, m->tgt, m->batch))
		return PHASE_RETRY;
	m->times.checked = now_seconds();
	return PHASE_NEXT;
}

/* cancelled: cancelled while a mover held them, their copy is taken off the target */
static PhaseResult
phase_cancelled(Move *m)
{
	if (m->batch->state != STEP_CANCELLED)
		return PHASE_NEXT;
	if (!lease_lock(m->dir, m->batch, STEP_STATE(STEP_CANCELLED)))
		return PHASE_RETRY;
	if (!shards_agree(m->dir, m->src, m->tgt, m->batch))
	{
		server_rollback(m->dir);
		return PHASE_RETRY;
	}
	if (delete_rows(m->tgt, m->tables, m->ntables, &m->target) < 0 || !lease_finish(m->dir, m->batch)
		|| !lease_unlock(m->dir, true))
	{
		server_rollback(m->dir);
		return PHASE_RETRY;
	}
	return PHASE_MOVED;
}

/* completed elsewhere: done, but not by a mover that copied the rows; they stay on the source */
static PhaseResult
phase_completed_elsewhere(Move *m)
{
	const Batch *b = m->batch;
	bool		one = b->nsteps == 1;
	char	   *which;

	if (in_flight(m) || m->progress == LEASE_COPIED || m->progress == LEASE_COMPLETED)
		return PHASE_NEXT;
	which = batch_describe(b);
	report("warning", "%s of migration %lld %s completed by something other than chash_move before %s rows were copied",
		   which, migration.id, one ? "was" : "were", one ? "its" : "their");
	report("detail", "Their rows were left on shard \"%s\".", b->from_shard);
	free(which);
	lease_finish(m->dir, m->batch);
	return PHASE_MOVED;
}

/* stream: the online copy where it can be used, before the fence, while writes go on */
static PhaseResult
phase_stream(Move *m)
{
	if (m->batch->state != STEP_COPYING || !options.online
		|| !online_usable(m->src, m->tgt, m->tables, m->ntables, &m->target))
		return PHASE_NEXT;
	m->copy = &online_copy;
	return m->copy->prepare != NULL ? m->copy->prepare(m) : PHASE_NEXT;
}

/* fence (1.): one fence for the batch */
static PhaseResult
phase_fence(Move *m)
{
	if (!in_flight(m))
		return PHASE_NEXT;
	if (!lag_gate(m->dir, m->src, m->tgt, m->batch, m->progress))
		return PHASE_GIVE_BACK;
	if (m->progress == LEASE_CLAIMED || m->progress == LEASE_SUBSCRIBED)
	{
		if (!lease_fence(m->dir, m->batch))
			return PHASE_RETRY;
		m->progress = LEASE_FENCED;
		crash_point_at(LEASE_FENCED);
	}
	/* fenced with the claim: writes refused from the claim on, the checks after it */
	if (m->batch->fenced_at_claim)
	{
		m->times.checked = m->times.fence = m->times.start;
		m->times.blocked = m->batch->claimed_at;
		crash_point_at(LEASE_FENCED);
	}
	else
		m->times.fence = m->times.blocked = now_seconds();
	return PHASE_NEXT;
}

/* wait: until no write admitted before the fence can commit on the source, and the target's replica reads the same pins */
static PhaseResult
phase_wait(Move *m)
{
	Server	   *src = m->src;

	if (!in_flight(m))
		return PHASE_NEXT;
	if (src->has_wait_fence ? !wait_fence(m->dir, src, m->batch)
		: !wait_replica(m->dir, src, m->batch, STEP_STATE(STEP_FENCED) | STEP_STATE(STEP_DONE), "fence"))
		return PHASE_GIVE_BACK;
	if (!wait_replica(m->dir, m->tgt, m->batch, STEP_STATE(STEP_FENCED) | STEP_STATE(STEP_DONE), "fence"))
		return PHASE_GIVE_BACK;
	if (stop_requested)
		return PHASE_GIVE_BACK;
	m->times.waited = now_seconds();
	return PHASE_NEXT;
}

/* copy (2. and 3.): the rows on the target and verified, by the batch's strategy */
static PhaseResult
phase_copy(Move *m)
{
	PhaseResult r;

	if (!in_flight(m))
		return PHASE_NEXT;
	m->copy_began = true;
	/* the job's next claim overlaps this copy (run.c, prefetch) */
	if (m->copy == &blocking_copy && m->hook != NULL)
		m->hook->begin(m->hook->arg);
	if ((r = m->copy->copy(m)) != PHASE_NEXT)
		return r;
	return stop_requested ? PHASE_GIVE_BACK : PHASE_NEXT;
}

/* complete (4.): ownership flips to the target, one directory version for the batch */
static PhaseResult
phase_complete(Move *m)
{
	if (!in_flight(m))
		return PHASE_NEXT;
	if (!lease_complete(m->dir, m->batch))
		return PHASE_RETRY;
	m->times.done = now_seconds();
	crash_point_at(LEASE_COMPLETED);
	return PHASE_NEXT;
}

/* clean up: the strategy's objects down, then the source's rows deleted (finisher.c) */
static PhaseResult
phase_clean_up(Move *m)
{
	Finish		f = {0};

	if (!m->copy->finish(m))
		return PHASE_RETRY;
	f.batch = *m->batch;
	f.tables = m->tables;
	f.ntables = m->ntables;
	f.target = m->target;
	f.online = m->copy == &online_copy;
	f.rows = m->rows;
	f.bytes = m->bytes;
	f.changed = m->copied.known ? m->copied.changed : 0;
	f.scanned = m->copied.known ? m->copied.scanned : m->ntables;
	f.times = m->times;
	memcpy(f.identity, dir_identity, sizeof(f.identity));
	m->moved = m->rows;
	if (m->copy->background_delete && m->finisher != NULL)
	{
		/* the completion is committed: the source's side goes on beside the next batch */
		finisher_give(m->finisher, &f);
		memset(m->batch, 0, sizeof(*m->batch));
		m->tables = NULL;
		m->ntables = 0;
		return PHASE_MOVED;
	}
	if (!finish_source(m->dir, m->src, m->tgt, &f))
	{
		m->moved = 0;
		return PHASE_RETRY;
	}
	return PHASE_MOVED;
}

typedef struct Phase
{
	const char *name;
	PhaseResult (*run) (Move *m);
} Phase;

static const Phase phases[] = {
	{"connect", phase_connect},
	{"agree", phase_agree},
	{"check", phase_check},
	{"resume", phase_resume},
	{"cancelled", phase_cancelled},
	{"completed elsewhere", phase_completed_elsewhere},
	{"stream", phase_stream},
	{"fence", phase_fence},
	{"wait", phase_wait},
	{"copy", phase_copy},
	{"complete", phase_complete},
	{"clean up", phase_clean_up},
};

/*
 * A batch fenced with its claim whose copy has not begun: nothing of this
 * try is on the target and nothing was deleted, so it goes back to pending
 * at once, as a batch only claimed does, rather than keep its writes
 * refused until its leases run out.
 */
static bool
fenced_untouched(const Move *m)
{
	return m->batch->fenced_at_claim && !m->copy_began && m->progress == LEASE_FENCED;
}

/* How the batch ends after the phase that stopped the loop. */
static StepOutcome
batch_end(Move *m, PhaseResult r)
{
	const Batch *b = m->batch;

	switch (r)
	{
		case PHASE_MOVED:
			return STEP_MOVED;
		case PHASE_CANNOT:
			/* what cannot move as it is (said): given back once, and the mover stops */
			give_back(m->dir, m->src, m->tgt, m->tables, m->ntables, &m->target, b);
			return STEP_FAILED;
		case PHASE_REJECTED:
			lease_release(m->dir, b);
			return STEP_FAILED;
		case PHASE_GIVE_BACK:
			give_back(m->dir, m->src, m->tgt, m->tables, m->ntables, &m->target, b);
			break;
		case PHASE_REFUSE:

			/*
			 * The shards cannot take the steps as they are.  Claimed only:
			 * given back untouched, never fenced.  A takeover of steps
			 * further on (their copy may be on the target) is left to their
			 * leases, for a rerun once the shards are mended.
			 */
			if ((b->state == STEP_COPYING && m->progress == LEASE_CLAIMED) || fenced_untouched(m))
				lease_release(m->dir, b);
			break;
		case PHASE_RETRY:
			if (fenced_untouched(m))
				lease_release(m->dir, b);
			break;
		case PHASE_NEXT:
			break;
	}
	/* the leases run out and this or another mover takes the steps over */
	return stop_requested ? STEP_STOPPED : config_error ? STEP_FAILED : STEP_RETRY;
}

StepOutcome
move_batch(Server *dir, Batch *b, long long *moved, Finisher *finisher, const CopyHook *hook)
{
	Move		m = {
		.dir = dir,
		.batch = b,
		.target = {b->slots[0], b->tenants[0], b->nsteps, b->slot_list, b->tenant_list},
		.progress = b->progress,
		.copy = &blocking_copy,
		.times = {.start = now_seconds()},
		.finisher = finisher,
		.hook = hook,
	};
	PhaseResult r = PHASE_NEXT;
	StepOutcome outcome;

	for (size_t i = 0; i < sizeof(phases) / sizeof(phases[0]) && r == PHASE_NEXT; i++)
		r = phases[i].run(&m);
	outcome = batch_end(&m, r);
	if (outcome != STEP_MOVED)
		pair_forget(b->from_shard, b->to_shard);
	*moved = outcome == STEP_MOVED ? m.moved : 0;
	online_copy_free(&m.copied);
	free_tables(m.tables, m.ntables);
	return outcome;
}
