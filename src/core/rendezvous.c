/*
 * rendezvous.c - rendezvous / highest-random-weight hashing (docs/placement.md)
 */
#include "rendezvous.h"

#include <math.h>

#include "sort.h"

double
rendezvous_unit_interval(uint64_t score)
{
	uint64_t	n;
	int			bits;
	int			shift;
	uint64_t	kept;
	uint64_t	dropped;
	uint64_t	half;

	/*
	 * With N = S + 1 (1 .. 2^64), the quotient N / (2^64 + 1) lies just
	 * below N / 2^64, by less than one unit of 2^-64.  Doubles near it
	 * are spaced by multiples of 2^-64 (or finer), so it rounds exactly as
	 * N / 2^64 does, except at a tie, where it is just below the midpoint
	 * and so rounds down.  Hence: round N to 53 significant bits with ties
	 * going down, then scale by 2^-64 (exact).
	 */
	if (score == UINT64_MAX)
		return 1.0;				/* N = 2^64: 1 - 1/(2^64+1) rounds to 1 */
	n = score + 1;
	bits = 64 - __builtin_clzll(n);
	if (bits <= 53)
		return ldexp((double) n, -64);
	shift = bits - 53;
	kept = n >> shift;
	dropped = n & ((UINT64_C(1) << shift) - 1);
	half = UINT64_C(1) << (shift - 1);
	if (dropped > half)
		kept++;					/* may reach 2^53: still exact */
	return ldexp((double) kept, shift - 64);
}

double
rendezvous_weighted_bid(uint64_t score, double weight)
{
	double		l = log(rendezvous_unit_interval(score));

	if (l == 0.0)
		return INFINITY;
	return -weight / l;
}

/* true when node a (bid ba, score sa) ranks before node b. */
static inline int
ranks_before(double ba, uint64_t sa, int a, double bb, uint64_t sb, int b)
{
	if (ba != bb)
		return ba > bb;
	if (sa != sb)
		return sa > sb;
	return a < b;
}

/* Ranks up to this k by insertion (k steps per node); beyond, through a heap. */
#define TOP_BY_INSERTION 8

/* Whether node a ranks after node b: the heap keeps the worst kept node on top. */
static inline int
ranks_after(const uint64_t *scores, const double *bids, int32_t a, int32_t b)
{
	return ranks_before(bids ? bids[b] : 0, scores[b], b, bids ? bids[a] : 0, scores[a], a);
}

static void
sift_worst(const uint64_t *scores, const double *bids, int32_t *heap, int count, int at)
{
	int32_t		item = heap[at];

	for (;;)
	{
		int			child = 2 * at + 1;

		if (child >= count)
			break;
		if (child + 1 < count && ranks_after(scores, bids, heap[child + 1], heap[child]))
			child++;
		if (!ranks_after(scores, bids, heap[child], item))
			break;
		heap[at] = heap[child];
		at = child;
	}
	heap[at] = item;
}

/* rendezvous_top for a large k: out is a heap of the k best so far, worst on top. */
static int
top_by_heap(const uint64_t *scores, const double *weights, int n, int k,
			double *bids, int32_t *out)
{
	const double *b = weights ? bids : NULL;
	int			found = 0;

	for (int i = 0; i < n; i++)
	{
		if (weights)
		{
			if (!(weights[i] > 0))
				continue;
			bids[i] = rendezvous_weighted_bid(scores[i], weights[i]);
		}
		if (found < k)
		{
			/* Sift up. */
			int			at = found++;

			while (at > 0 && ranks_after(scores, b, i, out[(at - 1) / 2]))
			{
				out[at] = out[(at - 1) / 2];
				at = (at - 1) / 2;
			}
			out[at] = i;
		}
		else if (ranks_after(scores, b, out[0], i))
		{
			out[0] = i;
			sift_worst(scores, b, out, found, 0);
		}
	}
	/* Heapsort: the worst goes last, so the list ends best first. */
	for (int end = found; end > 1; end--)
	{
		int32_t		worst = out[0];

		out[0] = out[end - 1];
		out[end - 1] = worst;
		sift_worst(scores, b, out, end - 1, 0);
	}
	return found;
}

int
rendezvous_top(const uint64_t *scores, const double *weights, int n, int k,
			   double *bids, int32_t *out)
{
	int			found = 0;

	if (k > TOP_BY_INSERTION)
		return top_by_heap(scores, weights, n, k, bids, out);
	for (int i = 0; i < n; i++)
	{
		double		bid = 0;
		int			pos;

		if (weights)
		{
			if (!(weights[i] > 0))
				continue;
			bid = rendezvous_weighted_bid(scores[i], weights[i]);
			bids[i] = bid;
		}
		/* Insertion into the sorted top-k list; k is small. */
		pos = found;
		while (pos > 0)
		{
			int			j = out[pos - 1];
			double		bj = weights ? bids[j] : 0;

			if (!ranks_before(bid, scores[i], i, bj, scores[j], j))
				break;
			if (pos < k)
				out[pos] = j;
			pos--;
		}
		if (pos < k)
		{
			out[pos] = i;
			if (found < k)
				found++;
		}
	}
	return found;
}

int
rendezvous_weighted_winner(const uint64_t *scores, const int32_t *group_of,
						   int n, const double *group_weight, int ngroups,
						   int32_t *group_best)
{
	int			winner = -1;
	double		best_bid = 0;

	for (int g = 0; g < ngroups; g++)
		group_best[g] = -1;
	for (int i = 0; i < n; i++)
	{
		int32_t		g = group_of[i];

		/* Ascending scan: only a strictly higher score replaces (ties: lower index). */
		if (g >= 0 && (group_best[g] < 0 || scores[i] > scores[group_best[g]]))
			group_best[g] = i;
	}
	for (int g = 0; g < ngroups; g++)
	{
		int32_t		i = group_best[g];
		double		bid;

		if (i < 0)
			continue;
		bid = rendezvous_weighted_bid(scores[i], group_weight[g]);
		if (winner < 0 || ranks_before(bid, scores[i], i, best_bid, scores[winner], winner))
		{
			winner = i;
			best_bid = bid;
		}
	}
	return winner;
}

static int
compare_weights(const void *ctx, int32_t a, int32_t b)
{
	const double *weights = ctx;

	return (weights[a] > weights[b]) - (weights[a] < weights[b]);
}

int
rendezvous_group_weights(const double *weights, int n, int32_t *order,
						 int32_t *group_of, double *group_weight,
						 interrupt_check check)
{
	int			ngroups = 0;

	/* Sorted by weight, equal weights are neighbours: n log n, not n per group. */
	for (int i = 0; i < n; i++)
		order[i] = i;
	sort_indexes(order, (size_t) n, compare_weights, weights, check);
	for (int j = 0; j < n; j++)
	{
		int32_t		i = order[j];
		double		w = weights[i];

		if (!(w > 0))
		{
			group_of[i] = -1;
			continue;
		}
		if (ngroups == 0 || group_weight[ngroups - 1] != w)
			group_weight[ngroups++] = w;
		group_of[i] = ngroups - 1;
	}
	return ngroups;
}
