/*
 * test_bounded.c - bounded loads: capacities, never over capacity, a key
 * leaves its first choice only when that node is full, over 100,000 keys
 */
#include <math.h>

#include "bounded.h"
#include "placement_helpers.h"
#include "unit.h"

#define NKEYS 100000

static const hasher64 xxh = {HASH_FAMILY_XXH64, NULL};

static void
test_capacity(void)
{
	double		w = 3;

	/* ceil(1.25 * 100000 / 16) = ceil(7812.5) = 7813. */
	CHECK_EQ_I64(bounded_capacity(0.25, 100000, 16, NULL, 0), 7813);
	CHECK_EQ_I64(bounded_capacity(0.25, 100000, 1, NULL, 0), 100000);	/* clamped to K */
	CHECK_EQ_I64(bounded_capacity(0.1, 10, 3, NULL, 0), 4);	/* ceil(3.666...) */
	/* Weighted: ceil(1.25 * 1000 * 3 / 10) = 375. */
	CHECK_EQ_I64(bounded_capacity(0.25, 1000, 4, &w, 10), 375);
	CHECK_EQ_I64(bounded_capacity(0.25, 0, 4, NULL, 0), 0);
}

static void
run(const test_nodes *nodes, const double *weights, double total, double epsilon)
{
	test_ring	ring;
	uint64_t   *pos = malloc(sizeof(uint64_t) * NKEYS);
	int32_t    *assigned = malloc(sizeof(int32_t) * NKEYS);
	int32_t    *first = malloc(sizeof(int32_t) * NKEYS);
	int64_t		capacity[MAX_TEST_NODES];
	int64_t		load[MAX_TEST_NODES] = {0};
	int64_t		replay[MAX_TEST_NODES] = {0};
	uint8_t		on_ring[MAX_TEST_NODES];
	long		over = 0,
				bad_move = 0,
				not_first = 0;

	build_ring(&xxh, nodes, 160, weights, &ring);
	for (long k = 0; k < NKEYS; k++)
	{
		char		key[32];
		size_t		len = make_key(key, k);

		pos[k] = xxh64_hash(key, len, 0);
	}
	for (int i = 0; i < nodes->count; i++)
		capacity[i] = bounded_capacity(epsilon, NKEYS, nodes->count,
									   weights ? &weights[i] : NULL, total);
	CHECK(bounded_assign(ring.positions, ring.owners, ring.count, nodes->count, capacity,
						 pos, NKEYS, load, assigned, first, on_ring, NULL) == BOUNDED_OK);
	for (long k = 0; k < NKEYS; k++)
	{
		/* Leaving the first choice is allowed only when it is full. */
		if (assigned[k] != first[k])
		{
			not_first++;
			if (replay[first[k]] < capacity[first[k]])
				bad_move++;
		}
		if (first[k] != ring_owner(&ring, pos[k]))
			bad_move++;
		replay[assigned[k]]++;
	}
	for (int i = 0; i < nodes->count; i++)
	{
		if (load[i] > capacity[i] || replay[i] != load[i])
			over++;
	}
	printf("bounded: %ld of %d keys left their first choice\n", not_first, NKEYS);
	CHECK_EQ_I64(over, 0);
	CHECK_EQ_I64(bad_move, 0);
	CHECK(not_first > 0);		/* with epsilon this small, some nodes fill up */
	free_ring(&ring);
	free(pos);
	free(assigned);
	free(first);
}

static void
test_assign(void)
{
	test_nodes nodes;
	double		w[4] = {1, 2, 3, 4};
	test_ring	ring;
	int64_t		capacity[2] = {1, 1};
	int64_t		load[2] = {0, 0};
	uint64_t	pos[3] = {1, 2, 3};
	int32_t		assigned[3],
				first[3];
	uint8_t		on_ring[2];

	make_nodes(&nodes, "node-", 1, 16);
	run(&nodes, NULL, 0, 0.05);
	nodes.count = 4;
	run(&nodes, w, 10, 0.005);
	/* Two nodes of capacity 1 cannot take three keys: nothing is placed. */
	nodes.count = 2;
	build_ring(&xxh, &nodes, 4, NULL, &ring);
	CHECK(bounded_assign(ring.positions, ring.owners, ring.count, 2, capacity, pos, 3,
						 load, assigned, first, on_ring, NULL) == BOUNDED_NO_ROOM);
	CHECK(load[0] == 0 && load[1] == 0);
	free_ring(&ring);
}

void
unit_main(void)
{
	test_capacity();
	test_assign();
}
