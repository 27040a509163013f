/*
 * planner.h - the rebalance planner of the shard directory (docs/planner.md)
 *
 * Server-free: shards are indexes 0 .. nshards - 1 (the glue passes them
 * sorted by name, so "lower index" is "lower shard name"), memory comes
 * from the caller as one workspace, failures are status codes.
 */
#ifndef CHASH_CORE_PLANNER_H
#define CHASH_CORE_PLANNER_H

#include <stddef.h>
#include <stdint.h>

#define PLANNER_MAX_SLOTS 1048576

typedef enum planner_status
{
	PLANNER_OK = 0,
	PLANNER_BAD_SLOT_COUNT,		/* slot_count outside 1 .. PLANNER_MAX_SLOTS */
	PLANNER_BAD_SHARD_COUNT,	/* nshards < 1 */
	PLANNER_BAD_WEIGHT,			/* a weight that is not finite and >= 0 */
	PLANNER_BAD_STATE,			/* a state that is not one of planner_state */
	PLANNER_BAD_OWNER,			/* a slot owner outside 0 .. nshards - 1 */
	PLANNER_BAD_BYTES,			/* a size that is not finite and >= 0 */
	PLANNER_NO_ACTIVE_SHARD,	/* no active shard with a weight > 0 */
	PLANNER_WEIGHT_SUM_TOO_LARGE,	/* active weights sum to more than DBL_MAX */
	PLANNER_BAD_TOLERANCE		/* a load tolerance that is not finite and >= 0 */
} planner_status;

typedef enum planner_state
{
	PLANNER_ACTIVE = 0,
	PLANNER_DRAINING = 1,		/* targets zero */
	PLANNER_RETIRED = 2			/* targets zero */
} planner_state;

typedef struct planner_shard
{
	double		weight;
	planner_state state;
} planner_shard;

typedef struct planner_move
{
	int32_t		slot;
	int32_t		from;
	int32_t		to;
} planner_move;

/* A short English description of a status, for messages and tests. */
const char *planner_status_message(planner_status status);

/*
 * Target slot counts: largest_remainder_split (largest_remainder.h) of
 * slot_count with the active shards' weights and 0 for the others, the
 * split chash_create_directory makes: exact, ties to the lower index.
 * The targets sum to slot_count.  work must hold
 * planner_targets_work_size(nshards) bytes, aligned for double.
 */
size_t		planner_targets_work_size(int32_t nshards);
planner_status planner_slot_targets(const planner_shard *shards, int32_t nshards,
									int32_t slot_count, int32_t *targets, void *work);

/*
 * The 'slots' plan.  owners[s] is the shard of slot s.  moves must have
 * room for slot_count moves (a plan never has more); work must hold
 * planner_slots_work_size(nshards, slot_count) bytes, suitably aligned
 * for int64_t.  The plan has exactly sum(max(0, owned - target)) moves,
 * in the order they should be carried out.  targets (nshards entries) may
 * be NULL.
 */
size_t		planner_slots_work_size(int32_t nshards, int32_t slot_count);
planner_status planner_plan_slots(const int32_t *owners, int32_t slot_count,
								  const planner_shard *shards, int32_t nshards,
								  void *work, planner_move *moves,
								  int32_t *nmoves, int32_t *targets);

/*
 * The 'bytes' plan.  slot_bytes[s] is what moves with slot s (its
 * unpinned tenants); fixed_bytes[i] is what stays on shard i whatever its
 * slots do (tenants pinned there).  Targets are total * weight / (total
 * active weight) over active shards, 0 for the others.  Every move
 * strictly lowers the imbalance (see planner.c); each slot moves at most
 * once.  moves must have room for slot_count moves; work must hold
 * planner_bytes_work_size(nshards, slot_count) bytes, aligned for double.
 */
size_t		planner_bytes_work_size(int32_t nshards, int32_t slot_count);
planner_status planner_plan_bytes(const int32_t *owners, int32_t slot_count,
								  const double *slot_bytes,
								  const double *fixed_bytes,
								  const planner_shard *shards, int32_t nshards,
								  void *work, planner_move *moves,
								  int32_t *nmoves);

/*
 * The 'load' plan: the bounded-loads rule over the 'bytes' inputs (loads
 * per slot and fixed per shard).  Each active shard's cap is
 * target * (1 + tolerance), target = total * weight / (total active
 * weight).  Draining and retired shards are emptied first, as in 'bytes';
 * then, while an active shard is over its cap, the most overloaded gives
 * a slot to a shard that stays within its own cap, each move strictly
 * lowering the imbalance (see planner.c): a slot that brings the donor
 * within its cap if there is one, else its largest slot a receiver can
 * take.  The plan stops once every shard is within its cap (or no move
 * is left), so a directory within the tolerance has an empty plan; each
 * slot moves at most once.  work must hold
 * planner_load_work_size(nshards, slot_count) bytes, aligned for double.
 */
size_t		planner_load_work_size(int32_t nshards, int32_t slot_count);
planner_status planner_plan_load(const int32_t *owners, int32_t slot_count,
								 const double *slot_load, const double *fixed_load,
								 const planner_shard *shards, int32_t nshards,
								 double tolerance, void *work, planner_move *moves,
								 int32_t *nmoves);

/*
 * The imbalance the 'bytes' plan lowers: the sum over shards of
 * (load - target)^2, loads given per shard.  Exposed for tests and docs.
 */
double		planner_bytes_imbalance(const double *loads, const planner_shard *shards,
									int32_t nshards);

#endif
