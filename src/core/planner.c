/*
 * planner.c - the rebalance planner of the shard directory (docs/planner.md)
 *
 * 'slots': every shard is brought to its largest-remainder target with the
 * fewest possible moves.  Donors are the shards over target, receivers the
 * shards under it.  Each move takes one slot from the donor with the most
 * excess and gives it to the receiver with the largest deficit (ties: the
 * lower index); a donor gives its lowest-numbered slots first, as
 * redis-cli's rebalance does.  Because a donor never drops below its target
 * and a receiver never rises above it, each move lowers
 * sum(|owned - target|) by exactly 2, so every prefix of the plan is an
 * improvement, and the plan has exactly sum(max(0, owned - target)) moves,
 * the minimum.  Picking the largest excess and deficit first also makes
 * each prefix the one that lowers sum((owned - target)^2) and the largest
 * deviation the most for its length, which is what an operator who stops
 * after max_moves steps wants.
 *
 * 'bytes': the imbalance is D = sum over shards of (load - target)^2, with
 * loads in bytes.  Moving a slot of b bytes from d to r changes D by
 * 2b(e_r - e_d + b), e = load - target, so it lowers D exactly when
 * 0 < b < e_d - e_r.  Phase 1 empties draining and retired shards (largest
 * slots first, each to the active shard furthest under target); phase 2
 * repeatedly makes the move that lowers D the most for the receiver
 * furthest under target and the first donor (by excess, descending) that
 * has an improving slot, taking the slot whose size is closest to half the
 * gap.  Every phase-2 move strictly lowers D; every phase-1 move lowers
 * the number of slots on non-active shards and never raises D (see
 * planner_plan_bytes).  The plan stops at a local optimum: no remaining
 * single move of an unmoved slot would lower D.
 *
 * 'load': bounded loads (Mirrokni, Thorup, Zadimoghaddam) over the same
 * figures.  A shard's cap is (1 + tolerance) x target; only a shard over
 * its cap gives, only to a shard that stays within its cap, and only a
 * slot with 0 < b < e_d - e_r, so every move lowers D and the total load
 * over the caps, and a shard within its cap never gives.  To bring a donor
 * within its cap in few moves it gives a slot that does it at once when
 * one fits (the one closest to half the gap), else its largest slot that
 * fits: without the receivers' caps that is the fewest moves possible,
 * since no k slots weigh more than the k largest.
 */
#include "planner.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "largest_remainder.h"

const char *
planner_status_message(planner_status status)
{
	switch (status)
	{
		case PLANNER_OK:
			return "ok";
		case PLANNER_BAD_SLOT_COUNT:
			return "slot count out of range";
		case PLANNER_BAD_SHARD_COUNT:
			return "no shards";
		case PLANNER_BAD_WEIGHT:
			return "a weight is not finite and non-negative, or the weights sum to infinity";
		case PLANNER_BAD_STATE:
			return "unknown shard state";
		case PLANNER_BAD_OWNER:
			return "slot owner is not a shard";
		case PLANNER_BAD_BYTES:
			return "size is not finite and non-negative";
		case PLANNER_NO_ACTIVE_SHARD:
			return "no active shard with a positive weight";
		case PLANNER_WEIGHT_SUM_TOO_LARGE:
			return "active weights sum to more than the largest double";
		case PLANNER_BAD_TOLERANCE:
			return "tolerance is not finite and non-negative";
	}
	return "unknown status";
}

static planner_status
check_shards(const planner_shard *shards, int32_t nshards, double *active_weight)
{
	double		total = 0;
	weight_sum	exact;

	if (nshards < 1)
		return PLANNER_BAD_SHARD_COUNT;
	weight_sum_init(&exact);
	for (int32_t i = 0; i < nshards; i++)
	{
		if (!isfinite(shards[i].weight) || shards[i].weight < 0)
			return PLANNER_BAD_WEIGHT;
		if (shards[i].state != PLANNER_ACTIVE &&
			shards[i].state != PLANNER_DRAINING &&
			shards[i].state != PLANNER_RETIRED)
			return PLANNER_BAD_STATE;
		if (shards[i].state == PLANNER_ACTIVE)
		{
			total += shards[i].weight;
			weight_sum_add(&exact, shards[i].weight);
		}
	}
	if (!(total > 0))
		return PLANNER_NO_ACTIVE_SHARD;
	/* the same rule as largest_remainder_split, on the exact sum */
	if (weight_sum_too_large(&exact))
		return PLANNER_WEIGHT_SUM_TOO_LARGE;
	/* an exact sum just below DBL_MAX can round up to infinity term by term */
	*active_weight = isfinite(total) ? total : DBL_MAX;
	return PLANNER_OK;
}

/* The checks every entry point starts with; owners may be NULL. */
static planner_status
check_directory(const planner_shard *shards, int32_t nshards, int32_t slot_count,
				const int32_t *owners, double *active_weight)
{
	planner_status status;

	if (slot_count < 1 || slot_count > PLANNER_MAX_SLOTS)
		return PLANNER_BAD_SLOT_COUNT;
	status = check_shards(shards, nshards, active_weight);
	if (status != PLANNER_OK || owners == NULL)
		return status;
	for (int32_t s = 0; s < slot_count; s++)
		if (owners[s] < 0 || owners[s] >= nshards)
			return PLANNER_BAD_OWNER;
	return PLANNER_OK;
}

size_t
planner_targets_work_size(int32_t nshards)
{
	if (nshards < 1)
		return 0;
	return (sizeof(double) + sizeof(int32_t)) * (size_t) nshards;
}

/*
 * amount * weight / total, the share of amount that weight gets.  In that
 * order (exactly as before for every amount it can hold), unless the
 * product overflows: weights are only bounded by a finite sum.
 */
static double
share_of(double amount, double weight, double total)
{
	double		product = amount * weight;

	return isfinite(product) ? product / total : amount * (weight / total);
}

planner_status
planner_slot_targets(const planner_shard *shards, int32_t nshards,
					 int32_t slot_count, int32_t *targets, void *work)
{
	double	   *weights = (double *) work;
	int32_t    *scratch = (int32_t *) (weights + nshards);
	double		total;
	planner_status status;

	status = check_directory(shards, nshards, slot_count, NULL, &total);
	if (status != PLANNER_OK)
		return status;

	/* draining and retired shards take part with weight 0: they get 0 */
	for (int32_t i = 0; i < nshards; i++)
		weights[i] = shards[i].state == PLANNER_ACTIVE ? shards[i].weight : 0;
	switch (largest_remainder_split(weights, nshards, slot_count, targets, scratch))
	{
		case SPLIT_OK:
			return PLANNER_OK;
		case SPLIT_BAD_COUNT:
			return PLANNER_BAD_SHARD_COUNT;
		case SPLIT_BAD_TOTAL:
			return PLANNER_BAD_SLOT_COUNT;
		case SPLIT_BAD_WEIGHT:
			return PLANNER_BAD_WEIGHT;
		case SPLIT_NO_WEIGHT:
			return PLANNER_NO_ACTIVE_SHARD;
		case SPLIT_SUM_TOO_LARGE:
			return PLANNER_WEIGHT_SUM_TOO_LARGE;
	}
	return PLANNER_BAD_WEIGHT;
}

/* ---- 'slots' ---- */

/*
 * A binary max-heap of shard indexes keyed by count[i], ties to the lower
 * index.
 */
typedef struct shard_heap
{
	int32_t    *items;
	int32_t		size;
	const int64_t *key;
} shard_heap;

static inline int
heap_before(const shard_heap *h, int32_t a, int32_t b)
{
	return h->key[a] > h->key[b] || (h->key[a] == h->key[b] && a < b);
}

static void
heap_sift_down(shard_heap *h, int32_t pos)
{
	for (;;)
	{
		int32_t		l = 2 * pos + 1;
		int32_t		r = l + 1;
		int32_t		top = pos;
		int32_t		tmp;

		if (l < h->size && heap_before(h, h->items[l], h->items[top]))
			top = l;
		if (r < h->size && heap_before(h, h->items[r], h->items[top]))
			top = r;
		if (top == pos)
			return;
		tmp = h->items[pos];
		h->items[pos] = h->items[top];
		h->items[top] = tmp;
		pos = top;
	}
}

static void
heap_build(shard_heap *h)
{
	for (int32_t i = h->size / 2 - 1; i >= 0; i--)
		heap_sift_down(h, i);
}

size_t
planner_slots_work_size(int32_t nshards, int32_t slot_count)
{
	if (nshards < 1 || slot_count < 0)
		return 0;
	return sizeof(int64_t) * 2 * (size_t) nshards	/* excess, deficit */
		+ planner_targets_work_size(nshards)
		+ sizeof(int32_t) * ((size_t) nshards + 1)	/* first slot per shard */
		+ sizeof(int32_t) * (size_t) nshards		/* next slot per donor */
		+ sizeof(int32_t) * 2 * (size_t) nshards	/* two heaps */
		+ sizeof(int32_t) * (size_t) slot_count;	/* slots grouped by owner */
}

planner_status
planner_plan_slots(const int32_t *owners, int32_t slot_count,
				   const planner_shard *shards, int32_t nshards,
				   void *work, planner_move *moves,
				   int32_t *nmoves, int32_t *targets)
{
	int64_t    *excess = (int64_t *) work;
	int64_t    *deficit = excess + nshards;
	void	   *target_work = deficit + nshards;
	int32_t    *start = (int32_t *) ((char *) target_work + planner_targets_work_size(nshards));
	int32_t    *next = start + nshards + 1;
	int32_t    *donor_items = next + nshards;
	int32_t    *receiver_items = donor_items + nshards;
	int32_t    *by_owner = receiver_items + nshards;
	int32_t    *target = targets;
	int32_t		n = 0;
	shard_heap	donors,
				receivers;
	planner_status status;

	double		weight;

	*nmoves = 0;
	status = check_directory(shards, nshards, slot_count, owners, &weight);
	if (status != PLANNER_OK)
		return status;

	/* next[] holds the targets until they are turned into excess/deficit */
	if (target == NULL)
		target = next;
	status = planner_slot_targets(shards, nshards, slot_count, target, target_work);
	if (status != PLANNER_OK)
		return status;

	/* Group slots by owner, ascending within a group (a counting sort). */
	memset(start, 0, sizeof(int32_t) * ((size_t) nshards + 1));
	for (int32_t s = 0; s < slot_count; s++)
		start[owners[s] + 1]++;
	for (int32_t i = 0; i < nshards; i++)
		start[i + 1] += start[i];
	for (int32_t i = 0; i < nshards; i++)
	{
		int64_t		diff = (int64_t) (start[i + 1] - start[i]) - target[i];

		excess[i] = diff > 0 ? diff : 0;
		deficit[i] = diff < 0 ? -diff : 0;
	}
	for (int32_t i = 0; i < nshards; i++)
		next[i] = start[i];
	for (int32_t s = 0; s < slot_count; s++)
		by_owner[next[owners[s]]++] = s;
	for (int32_t i = 0; i < nshards; i++)
		next[i] = start[i];

	donors.items = donor_items;
	donors.size = 0;
	donors.key = excess;
	receivers.items = receiver_items;
	receivers.size = 0;
	receivers.key = deficit;
	for (int32_t i = 0; i < nshards; i++)
	{
		if (excess[i] > 0)
			donors.items[donors.size++] = i;
		if (deficit[i] > 0)
			receivers.items[receivers.size++] = i;
	}
	heap_build(&donors);
	heap_build(&receivers);

	/* Both sums are equal (targets sum to slot_count): they end together. */
	while (donors.size > 0 && receivers.size > 0)
	{
		int32_t		d = donors.items[0];
		int32_t		r = receivers.items[0];

		moves[n].slot = by_owner[next[d]++];
		moves[n].from = d;
		moves[n].to = r;
		n++;

		if (--excess[d] == 0)
			donors.items[0] = donors.items[--donors.size];
		heap_sift_down(&donors, 0);
		if (--deficit[r] == 0)
			receivers.items[0] = receivers.items[--receivers.size];
		heap_sift_down(&receivers, 0);
	}
	*nmoves = n;
	return PLANNER_OK;
}

/* ---- 'bytes' ---- */

typedef struct sized_slot
{
	double		bytes;
	int32_t		slot;
	int32_t		owner;
} sized_slot;

/* Ascending by owner, then bytes, then slot number. */
static int
compare_sized_slot(const void *pa, const void *pb)
{
	const sized_slot *a = pa;
	const sized_slot *b = pb;

	if (a->owner != b->owner)
		return a->owner < b->owner ? -1 : 1;
	if (a->bytes != b->bytes)
		return a->bytes < b->bytes ? -1 : 1;
	return (a->slot > b->slot) - (a->slot < b->slot);
}

/* Descending by bytes, then ascending slot number (phase 1's order). */
static int
compare_largest_first(const void *pa, const void *pb)
{
	const sized_slot *a = pa;
	const sized_slot *b = pb;

	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	return (a->slot > b->slot) - (a->slot < b->slot);
}

/*
 * Removal from a sorted array with "nearest remaining position" lookups:
 * two union-find forests with path halving.  right[p] leads to the first
 * remaining position >= p (slot_count is a sentinel that always remains);
 * left[p + 1] leads to the last remaining position <= p, plus one (0 is
 * the sentinel).
 */
static int32_t
find_root(int32_t *parent, int32_t p)
{
	while (parent[p] != p)
	{
		parent[p] = parent[parent[p]];
		p = parent[p];
	}
	return p;
}

size_t
planner_bytes_work_size(int32_t nshards, int32_t slot_count)
{
	if (nshards < 1 || slot_count < 0)
		return 0;
	return sizeof(sized_slot) * (size_t) slot_count
		+ sizeof(double) * 2 * (size_t) nshards	/* loads, targets */
		+ sizeof(int32_t) * ((size_t) nshards + 1)	/* segment starts */
		+ sizeof(int32_t) * (size_t) nshards	/* donor order */
		+ sizeof(int32_t) * 2 * ((size_t) slot_count + 1);	/* forests */
}

double
planner_bytes_imbalance(const double *loads, const planner_shard *shards,
						int32_t nshards)
{
	double		total = 0,
				weight = 0,
				sum = 0;

	for (int32_t i = 0; i < nshards; i++)
	{
		total += loads[i];
		if (shards[i].state == PLANNER_ACTIVE)
			weight += shards[i].weight;
	}
	for (int32_t i = 0; i < nshards; i++)
	{
		double		target = shards[i].state == PLANNER_ACTIVE && weight > 0 ?
		share_of(total, shards[i].weight, weight) : 0;

		sum += (loads[i] - target) * (loads[i] - target);
	}
	return sum;
}

/*
 * Loads are kept exact (sums of the sizes, integers in practice) and the
 * excess load - target recomputed from them, so that rounding cannot build
 * up over a long plan and turn a swap of equal deviations into a "move".
 */
#define EXCESS(i) (load[i] - target[i])

/* The active shard furthest under target (lowest excess), ties lower index. */
static int32_t
lowest_excess(const double *load, const double *target,
			  const planner_shard *shards, int32_t nshards)
{
	int32_t		best = -1;

	for (int32_t i = 0; i < nshards; i++)
		if (shards[i].state == PLANNER_ACTIVE && shards[i].weight > 0 &&
			(best < 0 || EXCESS(i) < EXCESS(best)))
			best = i;
	return best;
}

/*
 * In donor d's segment [lo, hi) of the sorted slots, the remaining slot
 * whose size is closest to gap / 2 among those with 0 < bytes < gap
 * (those are the moves that lower D).  -1 when there is none.
 */
static int32_t
best_slot_for_gap(const sized_slot *sorted, int32_t *right, int32_t *left,
				  int32_t lo, int32_t hi, double gap)
{
	double		half = gap / 2;
	int32_t		a = lo,
				b = hi;
	int32_t		up,
				down;
	int			up_ok,
				down_ok;

	/* first position in the segment with bytes >= half */
	while (a < b)
	{
		int32_t		mid = a + (b - a) / 2;

		if (sorted[mid].bytes < half)
			a = mid + 1;
		else
			b = mid;
	}
	up = find_root(right, a);
	down = find_root(left, a) - 1;	/* last remaining position < a */
	up_ok = up < hi && sorted[up].bytes > 0 && sorted[up].bytes < gap;
	down_ok = down >= lo && sorted[down].bytes > 0 && sorted[down].bytes < gap;
	if (up_ok && down_ok)
	{
		double		du = sorted[up].bytes - half;
		double		dd = half - sorted[down].bytes;

		if (du < dd || (du == dd && sorted[up].slot < sorted[down].slot))
			return up;
		return down;
	}
	if (up_ok)
		return up;
	if (down_ok)
		return down;
	return -1;
}

/*
 * Records the move of sorted slot p from shard `from` to `to` and takes p
 * out of the remaining positions (links it to its neighbours in both
 * union-find forests).
 */
static void
move_slot(const sized_slot *sorted, int32_t p, int32_t from, int32_t to,
		  double *load, int32_t *right, int32_t *left, planner_move *move)
{
	move->slot = sorted[p].slot;
	move->from = from;
	move->to = to;
	load[from] -= sorted[p].bytes;
	load[to] += sorted[p].bytes;
	right[p] = p + 1;
	left[p + 1] = p;
}

/*
 * What the 'bytes' and 'load' plans share: shard loads and targets, the
 * slots sorted by owner then size, the segment of each owner, the two
 * forests of remaining positions.  The sizes are checked here.
 */
typedef struct sized_plan
{
	sized_slot *sorted;
	double	   *load;
	double	   *target;
	int32_t    *start;
	int32_t    *right;
	int32_t    *left;
} sized_plan;

static planner_status
sized_plan_setup(sized_plan *p, const int32_t *owners, int32_t slot_count,
				 const double *slot_bytes, const double *fixed_bytes,
				 const planner_shard *shards, int32_t nshards)
{
	double		total = 0,
				weight;
	planner_status status;

	status = check_directory(shards, nshards, slot_count, owners, &weight);
	if (status != PLANNER_OK)
		return status;
	for (int32_t s = 0; s < slot_count; s++)
		if (!isfinite(slot_bytes[s]) || slot_bytes[s] < 0)
			return PLANNER_BAD_BYTES;
	for (int32_t i = 0; i < nshards; i++)
		if (!isfinite(fixed_bytes[i]) || fixed_bytes[i] < 0)
			return PLANNER_BAD_BYTES;

	for (int32_t i = 0; i < nshards; i++)
		p->load[i] = fixed_bytes[i];
	for (int32_t s = 0; s < slot_count; s++)
		p->load[owners[s]] += slot_bytes[s];
	for (int32_t i = 0; i < nshards; i++)
		total += p->load[i];
	for (int32_t i = 0; i < nshards; i++)
		p->target[i] = shards[i].state == PLANNER_ACTIVE ?
			share_of(total, shards[i].weight, weight) : 0;

	for (int32_t s = 0; s < slot_count; s++)
	{
		p->sorted[s].bytes = slot_bytes[s];
		p->sorted[s].slot = s;
		p->sorted[s].owner = owners[s];
	}
	qsort(p->sorted, (size_t) slot_count, sizeof(sized_slot), compare_sized_slot);
	memset(p->start, 0, sizeof(int32_t) * ((size_t) nshards + 1));
	for (int32_t s = 0; s < slot_count; s++)
		p->start[owners[s] + 1]++;
	for (int32_t i = 0; i < nshards; i++)
		p->start[i + 1] += p->start[i];
	for (int32_t q = 0; q <= slot_count; q++)
	{
		p->right[q] = q;
		p->left[q] = q;
	}
	return PLANNER_OK;
}

/*
 * Phase 1 of both plans: empty the shards that target zero.  Moving b
 * bytes off such a shard d (e_d = its load >= b) to the active shard r
 * furthest under target (e_r <= 0, since the excesses sum to zero and d's
 * is >= 0) changes D by 2b(e_r - e_d + b) <= 0.  Returns the moves made.
 */
static int32_t
empty_inactive(sized_plan *p, const planner_shard *shards, int32_t nshards,
			   planner_move *moves)
{
	double	   *load = p->load;
	double	   *target = p->target;
	int32_t		n = 0;

	for (int32_t d = 0; d < nshards; d++)
	{
		if (shards[d].state == PLANNER_ACTIVE && shards[d].weight > 0)
			continue;
		qsort(p->sorted + p->start[d], (size_t) (p->start[d + 1] - p->start[d]),
			  sizeof(sized_slot), compare_largest_first);
		for (int32_t q = p->start[d]; q < p->start[d + 1]; q++)
		{
			int32_t		r = lowest_excess(load, target, shards, nshards);

			move_slot(p->sorted, q, d, r, load, p->right, p->left, &moves[n++]);
		}
	}
	return n;
}

planner_status
planner_plan_bytes(const int32_t *owners, int32_t slot_count,
				   const double *slot_bytes, const double *fixed_bytes,
				   const planner_shard *shards, int32_t nshards,
				   void *work, planner_move *moves, int32_t *nmoves)
{
	sized_plan	p;
	sized_slot *sorted;
	double	   *load;
	double	   *target;
	int32_t    *start;
	int32_t    *order;
	int32_t    *right;
	int32_t    *left;
	int32_t		n = 0;
	planner_status status;

	p.sorted = sorted = (sized_slot *) work;
	p.load = load = (double *) (sorted + slot_count);
	p.target = target = load + nshards;
	p.start = start = (int32_t *) (target + nshards);
	order = start + nshards + 1;
	p.right = right = order + nshards;
	p.left = left = right + slot_count + 1;

	*nmoves = 0;
	status = sized_plan_setup(&p, owners, slot_count, slot_bytes, fixed_bytes, shards, nshards);
	if (status != PLANNER_OK)
		return status;
	n = empty_inactive(&p, shards, nshards, moves);

	/* Phase 2: improving moves between active shards, best first. */
	for (;;)
	{
		int32_t		r = lowest_excess(load, target, shards, nshards);
		int32_t		d = -1,
					p = -1,
					ndonors = 0;

		/* the donor with the most excess first: it usually has a move */
		for (int32_t i = 0; i < nshards; i++)
			if (i != r && EXCESS(i) > EXCESS(r) &&
				shards[i].state == PLANNER_ACTIVE && shards[i].weight > 0 &&
				start[i + 1] > start[i])
			{
				order[ndonors++] = i;
				if (d < 0 || EXCESS(i) > EXCESS(d))
					d = i;
			}
		if (d >= 0)
			p = best_slot_for_gap(sorted, right, left, start[d], start[d + 1],
								  EXCESS(d) - EXCESS(r));
		if (p < 0 && ndonors > 1)
		{
			/* then the others, by excess descending (ties lower index) */
			for (int32_t i = 1; i < ndonors; i++)
			{
				int32_t		x = order[i],
							j = i;

				while (j > 0 && (EXCESS(order[j - 1]) < EXCESS(x) ||
								 (EXCESS(order[j - 1]) == EXCESS(x) && order[j - 1] > x)))
				{
					order[j] = order[j - 1];
					j--;
				}
				order[j] = x;
			}
			for (int32_t i = 0; i < ndonors && p < 0; i++)
			{
				d = order[i];
				p = best_slot_for_gap(sorted, right, left, start[d], start[d + 1],
									  EXCESS(d) - EXCESS(r));
			}
		}
		if (p < 0)
			break;
		move_slot(sorted, p, d, r, load, right, left, &moves[n++]);
	}
	*nmoves = n;
	return PLANNER_OK;
}

/* ---- 'load' ---- */

/* First position in [lo, hi) whose size is >= x (strict: > x), or hi. */
static int32_t
first_sized(const sized_slot *sorted, int32_t lo, int32_t hi, double x, int strict)
{
	while (lo < hi)
	{
		int32_t		mid = lo + (hi - lo) / 2;

		if (strict ? sorted[mid].bytes <= x : sorted[mid].bytes < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * A slot of donor d (segment [lo, hi)) for receiver r: its load b must
 * lower D (b < gap = e_d - e_r) and keep r within its cap (b <= room).
 * With closing set, only a slot that brings d down to its cap (b >= over)
 * qualifies, and the one closest to gap / 2 is taken (it lowers D the
 * most); otherwise the largest slot that qualifies (the fewest moves).
 * -1 when there is none.
 */
static int32_t
load_slot_for(const sized_plan *p, int32_t lo, int32_t hi, double gap, double room,
			  double over, int closing)
{
	const sized_slot *sorted = p->sorted;
	int32_t		end,
				from;

	if (!(gap > 0) || !(room > 0))
		return -1;
	end = first_sized(sorted, lo, hi, gap, 0);
	end = first_sized(sorted, lo, end, room, 1);
	if (!closing)
	{
		int32_t		down = find_root(p->left, end) - 1;

		return down >= lo && sorted[down].bytes > 0 ? down : -1;
	}
	from = first_sized(sorted, lo, end, over, 0);
	if (from >= end)
		return -1;
	{
		double		half = gap / 2;
		int32_t		mid = first_sized(sorted, from, end, half, 0);
		int32_t		up = find_root(p->right, mid);
		int32_t		down = find_root(p->left, mid) - 1;
		int			up_ok = up < end;
		int			down_ok = down >= from;

		if (up_ok && down_ok)
		{
			double		du = sorted[up].bytes - half;
			double		dd = half - sorted[down].bytes;

			return du < dd || (du == dd && sorted[up].slot < sorted[down].slot) ? up : down;
		}
		return up_ok ? up : down_ok ? down : -1;
	}
}

size_t
planner_load_work_size(int32_t nshards, int32_t slot_count)
{
	if (nshards < 1 || slot_count < 0)
		return 0;
	return planner_bytes_work_size(nshards, slot_count)
		+ sizeof(double) * (size_t) nshards;	/* caps */
}

planner_status
planner_plan_load(const int32_t *owners, int32_t slot_count,
				  const double *slot_load, const double *fixed_load,
				  const planner_shard *shards, int32_t nshards, double tolerance,
				  void *work, planner_move *moves, int32_t *nmoves)
{
	sized_plan	p;
	double	   *load;
	double	   *target;
	double	   *cap;
	int32_t    *stuck;
	int32_t		n;
	planner_status status;

	p.sorted = (sized_slot *) work;
	p.load = load = (double *) (p.sorted + slot_count);
	p.target = target = load + nshards;
	cap = target + nshards;
	p.start = (int32_t *) (cap + nshards);
	stuck = p.start + nshards + 1;
	p.right = stuck + nshards;
	p.left = p.right + slot_count + 1;

	*nmoves = 0;
	if (!isfinite(tolerance) || tolerance < 0)
		return PLANNER_BAD_TOLERANCE;
	status = sized_plan_setup(&p, owners, slot_count, slot_load, fixed_load, shards, nshards);
	if (status != PLANNER_OK)
		return status;
	n = empty_inactive(&p, shards, nshards, moves);
	for (int32_t i = 0; i < nshards; i++)
	{
		cap[i] = shards[i].state == PLANNER_ACTIVE && shards[i].weight > 0 ?
			target[i] * (1 + tolerance) : 0;
		stuck[i] = 0;
	}

	/*
	 * Phase 2: while an active shard is over its cap, the most overloaded
	 * one (not yet found stuck) gives a slot to a shard that stays within
	 * its cap.  A shard that has no such move never gets one later:
	 * donors only lose load and receivers only gain it, so every gap and
	 * every room only shrinks.
	 */
	for (;;)
	{
		int32_t		d = -1,
					best = -1,
					best_r = -1;
		double		over;

		for (int32_t i = 0; i < nshards; i++)
			if (cap[i] > 0 && !stuck[i] && load[i] > cap[i] &&
				(d < 0 || load[i] - cap[i] > load[d] - cap[d]))
				d = i;
		if (d < 0)
			break;
		over = load[d] - cap[d];
		/* a slot that brings d within its cap, to the lowest receiver */
		for (int32_t r = 0; r < nshards; r++)
		{
			int32_t		q;

			if (r == d || cap[r] <= 0 || (best_r >= 0 && !(EXCESS(r) < EXCESS(best_r))))
				continue;
			q = load_slot_for(&p, p.start[d], p.start[d + 1], EXCESS(d) - EXCESS(r),
							  cap[r] - load[r], over, 1);
			if (q >= 0)
			{
				best = q;
				best_r = r;
			}
		}
		/* else the largest slot some receiver can take (lowest one on ties) */
		if (best_r < 0)
		{
			int32_t		cand_r = -1,
						cand = -1;

			for (int32_t r = 0; r < nshards; r++)
			{
				int32_t		q;

				if (r == d || cap[r] <= 0)
					continue;
				q = load_slot_for(&p, p.start[d], p.start[d + 1], EXCESS(d) - EXCESS(r),
								  cap[r] - load[r], over, 0);
				if (q >= 0 && (cand < 0 || p.sorted[q].bytes > p.sorted[cand].bytes ||
							   (p.sorted[q].bytes == p.sorted[cand].bytes &&
								EXCESS(r) < EXCESS(cand_r))))
				{
					cand = q;
					cand_r = r;
				}
			}
			best = cand;
			best_r = cand_r;
		}
		if (best < 0)
		{
			stuck[d] = 1;
			continue;
		}
		move_slot(p.sorted, best, d, best_r, load, p.right, p.left, &moves[n++]);
	}
	*nmoves = n;
	return PLANNER_OK;
}
