/*
 * ring.h - consistent-hash ring with virtual nodes (docs/placement.md)
 *
 * A ring is a flat array of 64-bit positions sorted ascending (unsigned),
 * with the owning node index of each position in a parallel array.  A key
 * belongs to the first position >= its hash, wrapping past the top.  The
 * ketama and bounded-load schemes reuse the same sorted arrays.
 */
#ifndef CHASH_CORE_RING_H
#define CHASH_CORE_RING_H

#include <stddef.h>
#include <stdint.h>

#include "hash64.h"
#include "interrupt.h"

/* Upper bound on the points of one ring (memory stays in the hundreds of MB). */
#define RING_MAX_POINTS 10000000

typedef enum ring_status
{
	RING_OK = 0,
	RING_TOO_MANY_POINTS,		/* the weights ask for more than RING_MAX_POINTS */
	RING_NO_POINTS				/* every node rounds to zero points */
} ring_status;

/* One point while building: sorted by position, then node, then vnode. */
typedef struct ring_point
{
	uint64_t	position;
	int32_t		node;
	int32_t		vnode;
} ring_point;

/*
 * Points per node: round(vnodes * w) (half away from zero), or vnodes when
 * weights is NULL.  Sets *total to their sum.
 */
ring_status ring_point_counts(int32_t vnodes, const double *weights, int nnodes,
							  int32_t *counts, size_t *total);

/*
 * Writes the unsorted points of every node: point j of node i is at
 * H(name_i || '#' || j).  scratch must hold the longest name plus
 * 1 + DECIMAL_UINT32_MAX_LEN bytes.  check (may be NULL) is called now and
 * then (interrupt.h).
 */
void		ring_generate_points(const hasher64 *hasher, const char *const *names,
								 const int *lengths, int nnodes, const int32_t *counts,
								 char *scratch, ring_point *points, interrupt_check check);

/* Sorts points by (position unsigned, node, vnode), calling check now and then. */
void		ring_sort_points(ring_point *points, size_t count, interrupt_check check);

/*
 * Index of the first position >= pos in a sorted array of count >= 1
 * positions, or 0 when pos is above them all (the wrap).
 */
static inline size_t
ring_find(const uint64_t *positions, size_t count, uint64_t pos)
{
	const uint64_t *base = positions;
	size_t		n = count;

	/* Branch-free lower bound: the loop runs log2(count) times whatever pos is. */
	while (n > 1)
	{
		size_t		half = n / 2;

		base = (base[half] < pos) ? base + half : base;
		n -= half;
	}
	n = (size_t) (base - positions) + (*base < pos);
	return n == count ? 0 : n;
}

/*
 * A bucket index over the sorted positions narrows a lookup to the points
 * that share the key's top bits (about one, as positions are hashes):
 * index[b] is the first point whose top `bits` bits are >= b, for
 * b = 0 .. 2^bits.  ring_index_bits picks bits for count points (1 .. 22).
 */
int			ring_index_bits(size_t count);
void		ring_index_build(const uint64_t *positions, size_t count, int bits,
							 uint32_t *index);

/*
 * ring_find through the bucket index.  Buckets hold about one point, and
 * a search whose length varies by key mispredicts; so a bucket of up to
 * two points (~97% of them) is counted without branches, larger ones are
 * searched.  count must be >= 1.
 */
static inline size_t
ring_find_indexed(const uint64_t *positions, size_t count, const uint32_t *index,
				  int bits, uint64_t pos)
{
	uint64_t	b = pos >> (64 - bits);
	size_t		lo = index[b];
	size_t		hi = index[b + 1];

	if (hi - lo <= 2)
	{
		/* Clamped reads stay inside the array; the masks drop them. */
		size_t		i0 = lo < count ? lo : count - 1;
		size_t		i1 = lo + 1 < count ? lo + 1 : count - 1;

		lo += (size_t) ((lo < hi) & (positions[i0] < pos)) +
			(size_t) ((lo + 1 < hi) & (positions[i1] < pos));
	}
	else
		while (lo < hi)
		{
			size_t		mid = lo + (hi - lo) / 2;

			if (positions[mid] < pos)
				lo = mid + 1;
			else
				hi = mid;
		}
	return lo == count ? 0 : lo;
}

/*
 * Walks clockwise from index start and writes to out the first k distinct
 * owners; with zone_of (zone index of each node) a node whose zone is
 * already taken is skipped too.  node_seen (one byte per node) and
 * zone_seen (one per zone) must be all zero, and are left all zero.
 * Returns the number found (k unless the ring has fewer nodes or zones).
 */
int			ring_walk_distinct(const int32_t *owners, size_t count, size_t start, int k,
							   const int32_t *zone_of, uint8_t *node_seen,
							   uint8_t *zone_seen, int32_t *out);

/*
 * Length of ring each node owns: arcs[i] = sum over node i's points of the
 * distance from the previous point (exclusive) to it (inclusive), mod 2^64.
 * When one node owns the whole ring the lengths overflow to 0, so that node
 * is returned; otherwise -1.
 */
int			ring_arc_sums(const uint64_t *positions, const int32_t *owners, size_t count,
						  int nnodes, uint64_t *arcs);

#endif
