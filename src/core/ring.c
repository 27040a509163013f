/*
 * ring.c - consistent-hash ring with virtual nodes (docs/placement.md)
 */
#include "ring.h"

#include <math.h>
#include <string.h>

#include "joined_hash.h"

ring_status
ring_point_counts(int32_t vnodes, const double *weights, int nnodes,
				  int32_t *counts, size_t *total)
{
	size_t		sum = 0;

	for (int i = 0; i < nnodes; i++)
	{
		double		c = weights ? round((double) vnodes * weights[i]) : (double) vnodes;

		if (c > (double) RING_MAX_POINTS)
			return RING_TOO_MANY_POINTS;
		counts[i] = (int32_t) c;
		sum += (size_t) counts[i];
		if (sum > RING_MAX_POINTS)
			return RING_TOO_MANY_POINTS;
	}
	*total = sum;
	return sum == 0 ? RING_NO_POINTS : RING_OK;
}

void
ring_generate_points(const hasher64 *hasher, const char *const *names,
					 const int *lengths, int nnodes, const int32_t *counts,
					 char *scratch, ring_point *points, interrupt_check check)
{
	size_t		p = 0;
	interrupt_counter counter = {check, 0};

	for (int i = 0; i < nnodes; i++)
	{
		for (int32_t j = 0; j < counts[i]; j++)
		{
			char		digits[DECIMAL_UINT32_MAX_LEN];
			size_t		ndigits = format_decimal((uint32_t) j, digits);

			points[p].position = hash64_joined(hasher, names[i], (size_t) lengths[i],
											   "#", 1, digits, ndigits, scratch);
			points[p].node = i;
			points[p].vnode = j;
			p++;
			interrupt_charge(&counter, 1);
		}
	}
}

/* (position, node, vnode) is unique per point: a strict total order. */
static inline int
point_before(const ring_point *x, const ring_point *y)
{
	if (x->position != y->position)
		return x->position < y->position;
	if (x->node != y->node)
		return x->node < y->node;
	return x->vnode < y->vnode;
}

#define SORT_NAME sort_ring_points
#define SORT_ELEMENT ring_point
#define SORT_CONTEXT const void *
#define SORT_BEFORE(a, b, ctx) ((void) (ctx), point_before(a, b))
#include "sort_template.h"

void
ring_sort_points(ring_point *points, size_t count, interrupt_check check)
{
	sort_ring_points(points, count, NULL, check);
}

int
ring_index_bits(size_t count)
{
	int			bits = 1;

	while (bits < 22 && ((size_t) 1 << bits) < count)
		bits++;
	return bits;
}

void
ring_index_build(const uint64_t *positions, size_t count, int bits, uint32_t *index)
{
	size_t		p = 0;
	uint64_t	buckets = UINT64_C(1) << bits;

	for (uint64_t b = 0; b < buckets; b++)
	{
		while (p < count && (positions[p] >> (64 - bits)) < b)
			p++;
		index[b] = (uint32_t) p;
	}
	index[buckets] = (uint32_t) count;
}

int
ring_walk_distinct(const int32_t *owners, size_t count, size_t start, int k,
				   const int32_t *zone_of, uint8_t *node_seen,
				   uint8_t *zone_seen, int32_t *out)
{
	int			found = 0;
	size_t		i = start;

	for (size_t step = 0; step < count && found < k; step++)
	{
		int32_t		node = owners[i];

		if (!node_seen[node] && !(zone_of && zone_seen[zone_of[node]]))
		{
			node_seen[node] = 1;
			if (zone_of)
				zone_seen[zone_of[node]] = 1;
			out[found++] = node;
		}
		if (++i == count)
			i = 0;
	}
	for (int j = 0; j < found; j++)
	{
		node_seen[out[j]] = 0;
		if (zone_of)
			zone_seen[zone_of[out[j]]] = 0;
	}
	return found;
}

int
ring_arc_sums(const uint64_t *positions, const int32_t *owners, size_t count,
			  int nnodes, uint64_t *arcs)
{
	int			whole = -1;
	int			any_nonzero = 0;

	memset(arcs, 0, sizeof(uint64_t) * (size_t) nnodes);
	for (size_t i = 0; i < count; i++)
	{
		/* Unsigned wrap-around gives the arc that crosses the top for i = 0. */
		uint64_t	arc = positions[i] - positions[i == 0 ? count - 1 : i - 1];

		if (arc != 0 && whole < 0)
			whole = owners[i];
		arcs[owners[i]] += arc;
	}
	for (int i = 0; i < nnodes; i++)
		any_nonzero |= arcs[i] != 0;
	/*
	 * The arcs add up to 2^64, which is 0 mod 2^64: if every sum is 0, one
	 * node owns the whole ring (any node with a non-empty arc, or the owner
	 * of every point when all points coincide).
	 */
	if (any_nonzero)
		return -1;
	return whole >= 0 ? whole : owners[0];
}
