/*
 * rendezvous.h - rendezvous / highest-random-weight hashing (docs/placement.md)
 *
 * Every node bids for a key and the highest bid wins.  The caller computes
 * each node's 64-bit score S (rendezvous_xxh64_score, or H(node ':' key)
 * for the MD5 family); this file turns scores into winners.  Unweighted,
 * the bid is S itself.  Weighted, the bid is -w / ln(u) with
 * u = (S + 1) / (2^64 + 1) correctly rounded to double: the
 * logarithmic method, which gives each node a share of keys proportional
 * to its weight.
 */
#ifndef CHASH_CORE_RENDEZVOUS_H
#define CHASH_CORE_RENDEZVOUS_H

#include <stddef.h>
#include <stdint.h>

#include "hash64.h"
#include "interrupt.h"

/* Score of the xxh64 family: one key hash per call, one mix per node. */
static inline uint64_t
rendezvous_xxh64_score(uint64_t key_hash, uint64_t node_hash)
{
	return fmix64(key_hash ^ node_hash);
}

/* Unweighted winner: highest score, ties to the lower index.  n >= 1. */
static inline int
rendezvous_xxh64_winner(uint64_t key_hash, const uint64_t *node_hashes, int n)
{
	uint64_t	best = rendezvous_xxh64_score(key_hash, node_hashes[0]);
	int			winner = 0;

	for (int i = 1; i < n; i++)
	{
		uint64_t	s = rendezvous_xxh64_score(key_hash, node_hashes[i]);

		if (s > best)
		{
			best = s;
			winner = i;
		}
	}
	return winner;
}

/* (S + 1) / (2^64 + 1) correctly rounded to double. */
double		rendezvous_unit_interval(uint64_t score);

/*
 * -w / ln(u) for w > 0.  When u rounds to 1 (S within about 2^10 of the
 * top) the logarithm is 0 and the bid is +infinity, the limit it tends to.
 */
double		rendezvous_weighted_bid(uint64_t score, double weight);

/*
 * The k best nodes, best first, into out.  Unweighted (weights NULL): by
 * score.  Weighted: nodes of weight 0 never bid; the rest by bid, then by
 * score (so equal weights rank exactly like no weights), then index.
 * bids is caller scratch of n doubles (unused when unweighted).  k must
 * not exceed the nodes that bid.  Returns k.  n log k: a small k is
 * ranked by insertion, a large one through a heap (the order is total, so
 * both give the same list).
 */
int			rendezvous_top(const uint64_t *scores, const double *weights, int n, int k,
						   double *bids, int32_t *out);

/*
 * Weighted winner, the same as rendezvous_top(..., k = 1) but with one
 * logarithm per distinct weight instead of one per node: among nodes of
 * equal weight the bid grows with the score, so each weight group's
 * candidate is its highest score (lowest index on ties), and only the
 * candidates' bids are compared.  group_of[i] is node i's group (-1 for
 * weight 0), group_weight[g] the group's weight; group_best is caller
 * scratch of ngroups entries.  At least one node must have a group.
 */
int			rendezvous_weighted_winner(const uint64_t *scores, const int32_t *group_of,
									   int n, const double *group_weight, int ngroups,
									   int32_t *group_best);

/*
 * Groups the nodes for rendezvous_weighted_winner: numbers the distinct
 * positive weights in ascending order into group_weight and sets
 * group_of[i] (-1 for weight 0).  order is caller scratch of n int32_t.
 * Sorts, so check (may be NULL) is called now and then.  Returns the
 * number of groups.
 */
int			rendezvous_group_weights(const double *weights, int n, int32_t *order,
									 int32_t *group_of, double *group_weight,
									 interrupt_check check);

#endif
