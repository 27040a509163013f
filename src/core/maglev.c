/*
 * maglev.c - Maglev lookup-table population (SPEC 2.6)
 */
#include "maglev.h"

#include <math.h>
#include <string.h>

#include "joined_hash.h"

int
is_prime(uint32_t n)
{
	if (n < 2)
		return 0;
	if (n % 2 == 0)
		return n == 2;
	for (uint32_t d = 3; (uint64_t) d * d <= n; d += 2)
		if (n % d == 0)
			return 0;
	return 1;
}

maglev_status
maglev_check_size(int64_t table_size, int nbackends)
{
	if (table_size > MAGLEV_MAX_TABLE_SIZE)
		return MAGLEV_TOO_LARGE;
	if (table_size < 2 || !is_prime((uint32_t) table_size))
		return MAGLEV_NOT_PRIME;
	if (table_size < nbackends)
		return MAGLEV_TOO_SMALL;
	return MAGLEV_OK;
}

void
maglev_permutation(const hasher64 *hasher, const char *name, size_t len,
				   uint32_t table_size, char *scratch,
				   uint32_t *offset, uint32_t *skip)
{
	uint64_t	h_offset = hash64_joined(hasher, name, len, ":offset", 7, NULL, 0, scratch);
	uint64_t	h_skip = hash64_joined(hasher, name, len, ":skip", 5, NULL, 0, scratch);

	*offset = (uint32_t) (h_offset % table_size);
	*skip = (uint32_t) (h_skip % (table_size - 1) + 1);
}

/* Claims backend i's next preferred free slot. */
static inline void
claim_next(uint32_t table_size, int i, const uint32_t *offsets,
		   const uint32_t *skips, uint32_t *next, int32_t *table)
{
	uint32_t	slot;

	/* Slot of the j-th preference, (offset + j * skip) mod M, in 64 bits. */
	do
	{
		slot = (uint32_t) (((uint64_t) offsets[i] + (uint64_t) next[i] * skips[i]) % table_size);
		next[i]++;
	} while (table[slot] >= 0);
	table[slot] = i;
}

void
maglev_populate(uint32_t table_size, int n, const uint32_t *offsets,
				const uint32_t *skips, const double *weights,
				uint32_t *next, int32_t *table)
{
	uint32_t	filled = 0;
	double		max_weight = 0;

	for (uint32_t s = 0; s < table_size; s++)
		table[s] = -1;
	memset(next, 0, sizeof(uint32_t) * (size_t) n);
	if (weights)
		for (int i = 0; i < n; i++)
			if (weights[i] > max_weight)
				max_weight = weights[i];

	for (uint64_t round = 1; filled < table_size; round++)
	{
		for (int i = 0; i < n && filled < table_size; i++)
		{
			if (weights)
			{
				double		q = weights[i] / max_weight;

				if (!(floor((double) round * q) > floor((double) (round - 1) * q)))
					continue;
			}
			claim_next(table_size, i, offsets, skips, next, table);
			filled++;
		}
	}
}
