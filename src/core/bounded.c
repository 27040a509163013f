/*
 * bounded.c - consistent hashing with bounded loads (docs/placement.md)
 */
#include "bounded.h"

#include <math.h>
#include <string.h>

#include "ring.h"

int64_t
bounded_capacity(double epsilon, size_t nkeys, int nnodes,
				 const double *weight, double total_weight)
{
	double		c;

	if (weight)
		c = ceil((1.0 + epsilon) * (double) nkeys * *weight / total_weight);
	else
		c = ceil((1.0 + epsilon) * (double) nkeys / (double) nnodes);
	if (!(c >= 0))
		return 0;
	if (c > (double) nkeys)
		return (int64_t) nkeys;
	return (int64_t) c;
}

bounded_status
bounded_assign(const uint64_t *positions, const int32_t *owners,
			   size_t count, int nnodes, const int64_t *capacity,
			   const uint64_t *key_positions, size_t nkeys,
			   int64_t *load, int32_t *assigned, int32_t *first,
			   uint8_t *on_ring, interrupt_check check)
{
	uint64_t	room = 0;
	interrupt_counter counter = {check, 0};

	/* Only nodes with points can take keys: check they have room for all. */
	memset(on_ring, 0, (size_t) nnodes);
	for (size_t p = 0; p < count; p++)
		on_ring[owners[p]] = 1;
	for (int i = 0; i < nnodes; i++)
		if (on_ring[i])
			room += (uint64_t) capacity[i];
	if (room < nkeys)
		return BOUNDED_NO_ROOM;

	for (size_t k = 0; k < nkeys; k++)
	{
		size_t		p = ring_find(positions, count, key_positions[k]);
		size_t		steps = 1;

		first[k] = owners[p];
		/* Terminates: some node on the ring still has room. */
		while (load[owners[p]] >= capacity[owners[p]])
		{
			if (++p == count)
				p = 0;
			/* A walk past full nodes can be long: it counts as work too. */
			if (++steps == INTERRUPT_INTERVAL)
			{
				interrupt_charge(&counter, steps);
				steps = 0;
			}
		}
		assigned[k] = owners[p];
		load[owners[p]]++;
		interrupt_charge(&counter, steps);
	}
	return BOUNDED_OK;
}
