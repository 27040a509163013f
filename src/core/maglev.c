/*
 * maglev.c - Maglev lookup-table population (docs/placement.md)
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

/* Claims backend i's next preferred free slot; returns the preferences tried. */
static inline uint32_t
claim_next(uint32_t table_size, int i, const uint32_t *offsets,
		   const uint32_t *skips, uint32_t *next, int32_t *table)
{
	uint32_t	slot;
	uint32_t	tried = 0;

	/* Slot of the j-th preference, (offset + j * skip) mod M, in 64 bits. */
	do
	{
		slot = (uint32_t) (((uint64_t) offsets[i] + (uint64_t) next[i] * skips[i]) % table_size);
		next[i]++;
		tried++;
	} while (table[slot] >= 0);
	table[slot] = i;
	return tried;
}

/* The paper's loop: backends 0 .. n-1 take turns in order until the table is full. */
static void
populate_in_turn(uint32_t table_size, int n, const uint32_t *offsets,
				 const uint32_t *skips, uint32_t *next, int32_t *table,
				 interrupt_counter *counter)
{
	uint32_t	filled = 0;

	while (filled < table_size)
		for (int i = 0; i < n && filled < table_size; i++)
		{
			interrupt_charge(counter, claim_next(table_size, i, offsets, skips, next, table));
			filled++;
		}
}

/* Turns of a backend of weight ratio q by the end of round r: floor(r * q), as the rule computes it. */
static inline double
turns_by(uint64_t round, double q)
{
	return floor((double) round * q);
}

/*
 * The first round after `after` in which a backend of ratio q (0 < q <= 1)
 * takes a turn, i.e. the first r with turns_by(r) > turns_by(after) (the
 * rounded product only grows with r, so the turns are exactly where it
 * passes an integer), or 0 when that round is beyond last.  The quotient
 * estimates it within a round or two; the exact rule settles it.
 */
static uint64_t
next_turn(uint64_t after, double q, uint64_t last)
{
	double		target = turns_by(after, q) + 1;
	double		estimate = ceil(target / q);
	uint64_t	r;

	if (!(estimate <= (double) last + 1))
		return 0;				/* also infinity, for q below 2^-1074 * target */
	r = (uint64_t) estimate;
	if (r <= after)
		r = after + 1;
	while (r <= last && turns_by(r, q) < target)
		r++;
	while (r > after + 1 && turns_by(r - 1, q) >= target)
		r--;
	return r > last ? 0 : r;
}

/* Min-heap of turns, (round << 32) | backend: ordered by round, then array order. */
static void
sift_down(uint64_t *heap, size_t count, size_t at)
{
	uint64_t	item = heap[at];

	for (;;)
	{
		size_t		child = 2 * at + 1;

		if (child >= count)
			break;
		if (child + 1 < count && heap[child + 1] < heap[child])
			child++;
		if (item <= heap[child])
			break;
		heap[at] = heap[child];
		at = child;
	}
	heap[at] = item;
}

void
maglev_populate(uint32_t table_size, int n, const uint32_t *offsets,
				const uint32_t *skips, const double *weights,
				uint32_t *next, uint64_t *turns, int32_t *table,
				interrupt_check check)
{
	interrupt_counter counter = {check, 0};
	double		max_weight = 0;
	double		turns_per_round = 0;
	size_t		count = 0;
	uint32_t	filled = 0;

	/*
	 * Each round every heaviest backend (q = 1) claims a slot, so the table
	 * is full by round M: a turn due later is never taken.
	 */
	const uint64_t last = table_size;

	for (uint32_t s = 0; s < table_size; s++)
		table[s] = -1;
	memset(next, 0, sizeof(uint32_t) * (size_t) n);
	if (!weights)
	{
		populate_in_turn(table_size, n, offsets, skips, next, table, &counter);
		return;
	}

	for (int i = 0; i < n; i++)
		if (weights[i] > max_weight)
			max_weight = weights[i];
	/* The backends that take a turn by round M, in array order, with their first turn. */
	for (int i = 0; i < n; i++)
	{
		double		q = weights[i] / max_weight;
		uint64_t	first = q > 0 ? next_turn(0, q, last) : 0;

		if (first == 0)
			continue;
		turns[count++] = (first << 32) | (uint32_t) i;
		turns_per_round += q;
		interrupt_charge(&counter, 1);
	}

	/*
	 * When most of them turn in most rounds, asking each one every round is
	 * cheapest (and is the rule as written); otherwise a heap of next turns
	 * visits only the backends whose turn it is.
	 */
	if ((double) count <= 4 * turns_per_round)
	{
		for (uint64_t round = 1; filled < table_size; round++)
			for (size_t j = 0; j < count && filled < table_size; j++)
			{
				int			i = (int) (uint32_t) turns[j];
				double		q = weights[i] / max_weight;

				if (!(turns_by(round, q) > turns_by(round - 1, q)))
					continue;
				interrupt_charge(&counter, claim_next(table_size, i, offsets, skips, next, table));
				filled++;
			}
		return;
	}

	for (size_t at = count / 2; at-- > 0;)
		sift_down(turns, count, at);
	/* count > 0 throughout: the heaviest backends always have a next turn. */
	while (filled < table_size && count > 0)
	{
		/* The earliest due turn; on the same round the lower index, as the rounds go. */
		uint64_t	round = turns[0] >> 32;
		int			i = (int) (uint32_t) turns[0];
		uint64_t	again;

		interrupt_charge(&counter, claim_next(table_size, i, offsets, skips, next, table));
		filled++;
		again = next_turn(round, weights[i] / max_weight, last);
		if (again)
			turns[0] = (again << 32) | (uint32_t) i;
		else
			turns[0] = turns[--count];
		sift_down(turns, count, 0);
	}
}
