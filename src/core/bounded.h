/*
 * bounded.h - consistent hashing with bounded loads (Mirrokni, Thorup,
 * Zadimoghaddam; docs/placement.md)
 *
 * Keys are placed in order on a ring (ring.h).  Each node has a capacity;
 * a key goes to the owner of its first point unless that node is full, and
 * otherwise to the owner of the next point clockwise, and so on.
 */
#ifndef CHASH_CORE_BOUNDED_H
#define CHASH_CORE_BOUNDED_H

#include <stddef.h>
#include <stdint.h>

#include "interrupt.h"

typedef enum bounded_status
{
	BOUNDED_OK = 0,
	BOUNDED_NO_ROOM				/* the nodes on the ring cannot hold every key */
} bounded_status;

/*
 * ceil((1.0 + epsilon) * nkeys / nnodes), or with weights
 * ceil((1.0 + epsilon) * nkeys * w / total_weight), in double precision in
 * that order, clamped to 0 .. nkeys.
 */
int64_t		bounded_capacity(double epsilon, size_t nkeys, int nnodes,
							 const double *weight, double total_weight);

/*
 * Places nkeys keys (ring positions key_positions) on the ring of count
 * points.  capacity[i] is node i's capacity; load (nnodes entries) must be
 * zero.  Writes each key's node to assigned and the plain ring owner to
 * first.  Fails, placing nothing, when the nodes that have points cannot
 * hold nkeys keys.  check (may be NULL) is called now and then.
 */
bounded_status bounded_assign(const uint64_t *positions, const int32_t *owners,
							  size_t count, int nnodes, const int64_t *capacity,
							  const uint64_t *key_positions, size_t nkeys,
							  int64_t *load, int32_t *assigned, int32_t *first,
							  uint8_t *on_ring, interrupt_check check);

#endif
