/*
 * maglev.h - Maglev consistent hashing (Eisenbud et al., NSDI 2016; docs/placement.md)
 *
 * Each backend walks its own permutation of the M table slots,
 * (offset + j * skip) mod M, and backends take turns claiming their next
 * free slot until the table is full.  Weighted, the turns are rationed:
 * in round r = 1, 2, ... backend i takes a turn when
 * floor(r * q_i) > floor((r - 1) * q_i), q_i = w_i / max(w), in double
 * precision.  The heaviest backends turn every round, a backend of half
 * that weight every second round, weight 0 never; equal weights are the
 * paper's loop.  The turns are not found by asking every backend every
 * round (rounds x backends, hours for one heavy backend among many of
 * weight 0) but by computing each backend's next turn: the cost follows
 * the turns taken, about M log N.
 */
#ifndef CHASH_CORE_MAGLEV_H
#define CHASH_CORE_MAGLEV_H

#include <stddef.h>
#include <stdint.h>

#include "hash64.h"
#include "interrupt.h"

/* Largest table accepted (the prime below 2^24). */
#define MAGLEV_MAX_TABLE_SIZE 16777213

typedef enum maglev_status
{
	MAGLEV_OK = 0,
	MAGLEV_NOT_PRIME,
	MAGLEV_TOO_SMALL,			/* fewer slots than backends */
	MAGLEV_TOO_LARGE
} maglev_status;

/* Whether n is prime (trial division; n < 2^32). */
int			is_prime(uint32_t n);

/* Checks a table size against the number of backends. */
maglev_status maglev_check_size(int64_t table_size, int nbackends);

/*
 * offset = H(b || ':offset') mod M and skip = H(b || ':skip') mod (M - 1) + 1
 * for one backend name.  scratch holds len + 7 bytes.
 */
void		maglev_permutation(const hasher64 *hasher, const char *name, size_t len,
							   uint32_t table_size, char *scratch,
							   uint32_t *offset, uint32_t *skip);

/*
 * Fills table[0 .. M-1] with backend indexes.  weights may be NULL
 * (unweighted); otherwise at least one must be > 0.  next (n uint32_t)
 * and turns (n uint64_t; unused when weights is NULL) are caller scratch.
 * check (may be NULL) is called now and then.
 */
void		maglev_populate(uint32_t table_size, int n, const uint32_t *offsets,
							const uint32_t *skips, const double *weights,
							uint32_t *next, uint64_t *turns, int32_t *table,
							interrupt_check check);

#endif
