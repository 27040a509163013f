/*
 * placement_helpers.h - fixtures shared by the placement unit tests:
 * node names, keys, and rings built the way the extension builds them
 */
#ifndef CHASH_PLACEMENT_HELPERS_H
#define CHASH_PLACEMENT_HELPERS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash64.h"
#include "ring.h"

#define MAX_TEST_NODES 1024

typedef struct test_nodes
{
	int			count;
	char		storage[MAX_TEST_NODES][24];
	const char *names[MAX_TEST_NODES];
	int			lengths[MAX_TEST_NODES];
} test_nodes;

/* Nodes named "<prefix><first>" .. "<prefix><first + count - 1>". */
static inline void
make_nodes(test_nodes *nodes, const char *prefix, int first, int count)
{
	nodes->count = count;
	for (int i = 0; i < count; i++)
	{
		nodes->lengths[i] = snprintf(nodes->storage[i], sizeof(nodes->storage[i]),
									 "%s%d", prefix, first + i);
		nodes->names[i] = nodes->storage[i];
	}
}

/* Key number i: "key-<i>". */
static inline size_t
make_key(char *buf, long i)
{
	return (size_t) snprintf(buf, 32, "key-%ld", i);
}

typedef struct test_ring
{
	size_t		count;
	uint64_t   *positions;
	int32_t    *owners;
	int32_t    *vnodes;
} test_ring;

/* The ring of docs/placement.md (malloc'd; free with free_ring). */
static inline void
build_ring(const hasher64 *hasher, const test_nodes *nodes, int32_t vnodes,
		   const double *weights, test_ring *ring)
{
	int32_t    *counts = malloc(sizeof(int32_t) * nodes->count);
	size_t		total = 0;
	ring_point *points;
	char		scratch[64];

	if (ring_point_counts(vnodes, weights, nodes->count, counts, &total) != RING_OK)
		abort();
	points = malloc(sizeof(ring_point) * total);
	ring_generate_points(hasher, nodes->names, nodes->lengths, nodes->count, counts,
						 scratch, points, NULL);
	ring_sort_points(points, total, NULL);
	ring->count = total;
	ring->positions = malloc(sizeof(uint64_t) * total);
	ring->owners = malloc(sizeof(int32_t) * total);
	ring->vnodes = malloc(sizeof(int32_t) * total);
	for (size_t p = 0; p < total; p++)
	{
		ring->positions[p] = points[p].position;
		ring->owners[p] = points[p].node;
		ring->vnodes[p] = points[p].vnode;
	}
	free(points);
	free(counts);
}

static inline void
free_ring(test_ring *ring)
{
	free(ring->positions);
	free(ring->owners);
	free(ring->vnodes);
}

/* Owner of a key of the given hash. */
static inline int
ring_owner(const test_ring *ring, uint64_t h)
{
	return ring->owners[ring_find(ring->positions, ring->count, h)];
}

#endif
