/*
 * The online copy (--online; phases.c's strategy where online_usable
 * says the shards can take it; online.c does the work): before the fence
 * the rows are copied from a logical slot's snapshot and its subscription
 * streams their changes while writes go on; once the shards are at the
 * fence the mover waits until the target has applied the source's WAL and
 * verifies the rows changed since the copy; the subscription is dropped
 * before any source row is deleted.
 */
#include "move.h"

/* online: copied from the slot's snapshot, then streamed, while writes go on */
static PhaseResult
online_prepare(Move *m)
{
	double		t0 = now_seconds();
	Verdict		v;
	int			caught_up;

	if (delete_rows(m->tgt, m->tables, m->ntables, &m->target) < 0)
		return PHASE_GIVE_BACK;
	v = online_subscribe(m->dir, m->src, m->tgt, m->tables, m->ntables, &m->target, m->batch, &m->copied);
	if (v == VERDICT_DIFFERENT)
		return PHASE_CANNOT;
	if (v != VERDICT_SAME || !lease_subscribed(m->dir, m->batch))
		return PHASE_GIVE_BACK;
	m->progress = LEASE_SUBSCRIBED;
	crash_point_at(LEASE_SUBSCRIBED);
	online_test_pause();
	if ((caught_up = online_wait_caught_up(m->src, m->tgt, m->batch->steps[0], m->ntables, &m->copied)) != 1)
		return caught_up == ONLINE_CANNOT_APPLY ? PHASE_CANNOT : PHASE_GIVE_BACK;
	m->times.stream = now_seconds() - t0;
	return PHASE_NEXT;
}

/* the target has applied every write the source took; then the rows changed since the copy verified */
static PhaseResult
online_copy_rows(Move *m)
{
	int			applied;
	Verdict		v;

	m->times.copy0 = now_seconds();
	applied = online_wait_applied(m->src, m->tgt, m->batch->steps[0], m->ntables);
	v = applied != 1 ? VERDICT_ERROR : !m->copied.known
		? verify_again(m->src, m->tgt, m->tables, m->ntables, &m->target, m->batch, &m->rows)
		: online_verify_tail(m->src, m->tgt, m->tables, m->ntables, &m->target, m->batch, &m->copied, &m->rows);
	if (applied == ONLINE_CANNOT_APPLY || v == VERDICT_DIFFERENT)
		return PHASE_CANNOT;
	if (v != VERDICT_SAME || !advance_sequences(m->tgt, m->tables, m->ntables, &m->target)
		|| !lease_copied(m->dir, m->batch, m->rows, m->copied.bytes))
		return PHASE_GIVE_BACK;
	counters_add(m->rows, 0);
	m->bytes = m->copied.bytes;
	m->times.copy = now_seconds();
	crash_point_at(LEASE_COPIED);
	return PHASE_NEXT;
}

/* the source's deletions must not reach the target */
static bool
online_finish(Move *m)
{
	return online_drop(m->src, m->tgt, m->batch->steps[0]);
}

const CopyStrategy online_copy = {
	.name = "online",
	.prepare = online_prepare,
	.copy = online_copy_rows,
	.finish = online_finish,
	.background_delete = false,
};
