/*
 * largest_remainder.h - splitting a count by weight, exactly (docs/directory.md)
 *
 * Index i of weight w_i gets floor(q_i) or floor(q_i) + 1 of total, with
 * q_i = total * w_i / sum(w) taken on the exact values of the doubles
 * given: the floors are topped up, one each, for the largest fractional
 * parts of q_i, ties to the lower index (largest remainder).  Both
 * chash_create_directory (slot ranges) and the planner (slot targets) use
 * it, so a new directory is exactly at its targets.
 */
#ifndef CHASH_CORE_LARGEST_REMAINDER_H
#define CHASH_CORE_LARGEST_REMAINDER_H

#include <stddef.h>
#include <stdint.h>

typedef enum split_status
{
	SPLIT_OK = 0,
	SPLIT_BAD_COUNT,			/* count < 1 */
	SPLIT_BAD_TOTAL,			/* total < 0 */
	SPLIT_BAD_WEIGHT,			/* a weight that is not finite and >= 0 */
	SPLIT_NO_WEIGHT,			/* every weight is 0 */
	SPLIT_SUM_TOO_LARGE			/* finite weights whose sum is above DBL_MAX */
} split_status;

/* A short English description of a status, for messages and tests. */
const char *split_status_message(split_status status);

/*
 * The exact sum of doubles: every finite double is an integer multiple of
 * 2^-1074, so the sum times 2^1074 is an integer of at most 2,098 bits
 * (plus one bit per doubling of the number of terms), kept in 32-bit limbs.
 * Caller's memory (272 bytes; a local is fine).
 */
#define WEIGHT_SUM_LIMBS 68

typedef struct weight_sum
{
	uint32_t	limb[WEIGHT_SUM_LIMBS];	/* least significant first */
} weight_sum;

void		weight_sum_init(weight_sum *sum);

/* Adds a finite weight >= 0 (fewer than 2^31 additions in all). */
void		weight_sum_add(weight_sum *sum, double weight);

/* Whether the sum is more than DBL_MAX, the largest finite double. */
int			weight_sum_too_large(const weight_sum *sum);

/*
 * The checks of largest_remainder_split on weights alone: each finite and
 * >= 0, one > 0, exact sum <= DBL_MAX.
 */
split_status largest_remainder_check(const double *weights, int32_t count);

/*
 * Splits total (>= 0) among count (>= 1) weights as described above;
 * sizes[i] gets index i's share and the sizes sum to total.  A weight of
 * 0 gets 0.  Memory: sizes and scratch are the caller's, count int32_t
 * each (scratch holds the indexes while the remainders are ranked; its
 * contents on return mean nothing); nothing is allocated.  On failure
 * sizes is undefined.
 *
 * Cost: O(count) double operations to find the floors, then a heap over
 * the indexes ranks the fractional parts, O(count + k log count)
 * comparisons for the k < count slots left over.  A floor or a comparison
 * that double precision cannot settle with its error bound (near-integers,
 * near-ties) is computed exactly in integers scaled by 2^1074 (see
 * largest_remainder.c): exact ties are exact, whatever the weights.
 */
split_status largest_remainder_split(const double *weights, int32_t count, int32_t total,
									 int32_t *sizes, int32_t *scratch);

#endif
