/*
 * chash_ring.h - building consistent-hash rings from SQL arguments
 *
 * Shared by the ring functions (docs/placement.md) and bounded loads (docs/placement.md).
 */
#ifndef CHASH_RING_GLUE_H
#define CHASH_RING_GLUE_H

#include "chash.h"

#include "node_set.h"

typedef struct ChashRing
{
	ChashNodeSet set;
	int32		vnodes;
	size_t		count;			/* points on the ring */
	uint64	   *positions;		/* sorted, unsigned */
	int32	   *owners;			/* node index of each point */
	int32	   *vnode_of;		/* vnode number of each point, when asked for */
	int			distinct;		/* nodes with at least one point */
	int			index_bits;		/* bucket index over positions (ring.h) */
	uint32	   *index;
} ChashRing;

/*
 * Builds the ring of nodes_arg / vnodes_arg / weights_arg (-1: none) /
 * hash_arg in the current memory context; keeps each point's vnode number
 * when with_vnodes.  Raises the contract's errors for bad arguments.
 */
extern void chash_ring_build(FunctionCallInfo fcinfo, int nodes_arg, int vnodes_arg,
							 int weights_arg, int hash_arg, bool with_vnodes,
							 ChashRing *ring);

#endif
