/*
 * fuzz_placement.c - libFuzzer target for the node-set placement core
 *
 * The input picks a node set (count, weights, vnodes, a name salt), a
 * table size and a key; the target checks invariants rather than known
 * answers: the bucket-indexed ring search equals the plain one, replica
 * walks give distinct nodes and leave their flags clear, arcs add up to
 * 2^64, the grouped weighted rendezvous winner (with the shipped weight
 * groups) equals the full ranking's first, long rankings start with the
 * short ones, the weighted unit interval is monotone, Maglev fills its table
 * (balanced when unweighted, nothing for weight 0), bounded loads stay
 * within capacity.  Only the xxh64 family: the fuzz build links no MD5.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bounded.h"
#include "hash64.h"
#include "ketama.h"
#include "maglev.h"
#include "rendezvous.h"
#include "ring.h"

#define MAX_NODES 48

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t
byte_at(const uint8_t *data, size_t size, size_t i)
{
	return i < size ? data[i] : 0;
}

/* A stand-in digest for ketama's point layout (the real MD5 is tested elsewhere). */
static void
fake_md5(const void *data, size_t len, uint8_t out[16])
{
	uint64_t	a = xxh64_hash(data, len, 1);
	uint64_t	b = xxh64_hash(data, len, 2);

	memcpy(out, &a, 8);
	memcpy(out + 8, &b, 8);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const hasher64 xxh = {HASH_FAMILY_XXH64, NULL};
	int			n = 1 + byte_at(data, size, 0) % MAX_NODES;
	int32_t		vnodes = 1 + byte_at(data, size, 1) % 40;
	int			weighted = byte_at(data, size, 2) & 1;
	int			k = 1 + byte_at(data, size, 3) % n;
	char		storage[MAX_NODES][16];
	const char *names[MAX_NODES];
	int			lengths[MAX_NODES];
	double		weights[MAX_NODES];
	int32_t		counts[MAX_NODES];
	int32_t		zone_of[MAX_NODES];
	uint8_t		node_seen[MAX_NODES] = {0};
	uint8_t		zone_seen[4] = {0};
	int32_t		found[MAX_NODES];
	uint64_t	arcs[MAX_NODES];
	uint64_t	scores[MAX_NODES];
	double		bids[MAX_NODES];
	int32_t		ranking[MAX_NODES];
	int32_t		group_of[MAX_NODES];
	double		group_weight[MAX_NODES];
	int32_t		group_best[MAX_NODES];
	int32_t		order[MAX_NODES];
	int			ngroups;
	int			positive = 0;
	double		total_weight = 0;
	size_t		total;
	const uint8_t *key = size > 8 ? data + 8 : data;
	size_t		key_len = size > 8 ? size - 8 : 0;
	uint64_t	kh = xxh64_hash(key, key_len, 0);

	for (int i = 0; i < n; i++)
	{
		lengths[i] = snprintf(storage[i], sizeof(storage[i]), "n%d-%u", i, byte_at(data, size, 4));
		names[i] = storage[i];
		/* Weights 0 .. 3.75 in quarters: repeats and zeros on purpose. */
		weights[i] = weighted ? (byte_at(data, size, 8 + i) % 16) / 4.0 : 1.0;
		positive += weights[i] > 0;
		zone_of[i] = (int32_t) (byte_at(data, size, 5 + i % 3) + i) % 4;
	}
	if (positive == 0)
	{
		weights[0] = 1.0;
		positive = 1;
	}
	for (int i = 0; i < n; i++)
		total_weight += weights[i];

	/* Rendezvous: grouped winner = ranking's first; the ranking is distinct. */
	for (int i = 0; i < n; i++)
		scores[i] = rendezvous_xxh64_score(kh, xxh64_hash(names[i], (size_t) lengths[i], 0));
	ngroups = rendezvous_group_weights(weights, n, order, group_of, group_weight, NULL);
	for (int i = 0; i < n; i++)
		if ((group_of[i] < 0) != !(weights[i] > 0) ||
			(group_of[i] >= 0 && group_weight[group_of[i]] != weights[i]))
			abort();
	if (rendezvous_top(scores, weights, n, positive < k ? positive : k, bids, ranking) < 1)
		abort();
	if (rendezvous_weighted_winner(scores, group_of, n, group_weight, ngroups, group_best) != ranking[0])
		abort();
	/* A long list (heap) starts with the short one (insertion). */
	{
		int32_t		full[MAX_NODES];
		int			few = positive < 8 ? positive : 8;

		if (rendezvous_top(scores, weights, n, positive, bids, full) != positive ||
			rendezvous_top(scores, weights, n, few, bids, ranking) != few)
			abort();
		for (int i = 0; i < few; i++)
			if (full[i] != ranking[i])
				abort();
	}
	if (rendezvous_unit_interval(kh) > rendezvous_unit_interval(kh + (kh != UINT64_MAX)) ||
		rendezvous_unit_interval(kh) <= 0 || rendezvous_unit_interval(kh) > 1)
		abort();

	/* Ring: indexed search, replica walks, arcs. */
	if (ring_point_counts(vnodes, weighted ? weights : NULL, n, counts, &total) == RING_OK)
	{
		ring_point *points = malloc(sizeof(ring_point) * total);
		uint64_t   *pos = malloc(sizeof(uint64_t) * total);
		int32_t    *own = malloc(sizeof(int32_t) * total);
		int			bits = ring_index_bits(total);
		uint32_t   *index = malloc(sizeof(uint32_t) * (((size_t) 1 << bits) + 1));
		char		scratch[64];
		int			distinct = 0;
		int64_t		capacity[MAX_NODES];
		int64_t		load[MAX_NODES] = {0};
		uint64_t	key_pos[16];
		int32_t		assigned[16],
					first[16];
		uint8_t		on_ring[MAX_NODES];
		int			whole;
		uint64_t	sum = 0;

		ring_generate_points(&xxh, names, lengths, n, counts, scratch, points, NULL);
		ring_sort_points(points, total, NULL);
		for (size_t p = 0; p < total; p++)
		{
			pos[p] = points[p].position;
			own[p] = points[p].node;
		}
		ring_index_build(pos, total, bits, index);
		for (int q = 0; q < 4; q++)
		{
			uint64_t	x = q == 0 ? kh : q == 1 ? pos[kh % total] : q == 2 ? 0 : UINT64_MAX;

			if (ring_find(pos, total, x) != ring_find_indexed(pos, total, index, bits, x))
				abort();
		}
		for (int i = 0; i < n; i++)
			distinct += counts[i] > 0;
		{
			int			got = ring_walk_distinct(own, total, ring_find(pos, total, kh), k, NULL,
												 node_seen, zone_seen, found);

			if (got != (k < distinct ? k : distinct))
				abort();
			for (int a = 0; a < got; a++)
				for (int b = a + 1; b < got; b++)
					if (found[a] == found[b])
						abort();
			got = ring_walk_distinct(own, total, ring_find(pos, total, kh), k, zone_of,
									 node_seen, zone_seen, found);
			for (int a = 0; a < got; a++)
				for (int b = a + 1; b < got; b++)
					if (zone_of[found[a]] == zone_of[found[b]])
						abort();
			for (int i = 0; i < n; i++)
				if (node_seen[i])
					abort();
		}
		whole = ring_arc_sums(pos, own, total, n, arcs);
		for (int i = 0; i < n; i++)
			sum += arcs[i];
		if (sum != 0 || (whole >= 0) != (distinct == 1 || total == 1 || pos[0] == pos[total - 1]))
			abort();

		/* Bounded loads: 16 keys, never over capacity. */
		for (int j = 0; j < 16; j++)
			key_pos[j] = xxh64_hash(key, key_len, (uint64_t) j);
		for (int i = 0; i < n; i++)
			capacity[i] = bounded_capacity(0.01 * (1 + byte_at(data, size, 6)), 16, n,
										   weighted ? &weights[i] : NULL, total_weight);
		if (bounded_assign(pos, own, total, n, capacity, key_pos, 16, load, assigned, first,
						   on_ring, NULL) == BOUNDED_OK)
			for (int i = 0; i < n; i++)
				if (load[i] > capacity[i])
					abort();
		free(points);
		free(pos);
		free(own);
		free(index);
	}

	/* Maglev: a small prime table, full; balanced unweighted; weight 0 gets nothing. */
	{
		uint32_t	m = (uint32_t) n + byte_at(data, size, 7);
		uint32_t	offsets[MAX_NODES],
					skips[MAX_NODES],
					next[MAX_NODES];
		uint64_t	turns[MAX_NODES];
		int32_t    *table;
		long		entries[MAX_NODES] = {0};
		char		scratch[64];

		while (maglev_check_size(m, n) != MAGLEV_OK)
			m++;
		table = malloc(sizeof(int32_t) * m);
		for (int i = 0; i < n; i++)
			maglev_permutation(&xxh, names[i], (size_t) lengths[i], m, scratch, &offsets[i], &skips[i]);
		maglev_populate(m, n, offsets, skips, weighted ? weights : NULL, next, turns, table, NULL);
		for (uint32_t s = 0; s < m; s++)
		{
			if (table[s] < 0 || table[s] >= n)
				abort();
			entries[table[s]]++;
		}
		for (int i = 0; i < n; i++)
		{
			if (!weighted && entries[i] != m / n && entries[i] != (m + n - 1) / n)
				abort();
			if (weighted && weights[i] == 0 && entries[i] != 0)
				abort();
		}
		free(table);
	}

	/* Ketama: 4 points per digest, owners in range. */
	{
		uint32_t	digests[MAX_NODES];
		size_t		points_total = 0;
		ring_point *points;
		char		scratch[64];

		for (int i = 0; i < n; i++)
		{
			digests[i] = weighted ? ketama_digest_count(weights[i], total_weight, n) : 40;
			points_total += 4 * (size_t) digests[i];
		}
		points = malloc(sizeof(ring_point) * (points_total + 1));
		ketama_generate_points(fake_md5, names, lengths, n, digests, scratch, points, NULL);
		for (size_t p = 0; p < points_total; p++)
			if (points[p].position > UINT32_MAX || points[p].node < 0 || points[p].node >= n)
				abort();
		free(points);
	}
	return 0;
}
