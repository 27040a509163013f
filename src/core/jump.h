/*
 * jump.h - jump consistent hash (Lamping & Veach, 2014)
 */
#ifndef CHASH_CORE_JUMP_H
#define CHASH_CORE_JUMP_H

#include <stdint.h>

/* The multiplier of the paper's linear congruential generator. */
#define JUMP_LCG_MULTIPLIER UINT64_C(2862933555777941757)

/*
 * The paper's loop, word for word; buckets must be >= 1.  It is the
 * definition jump_consistent_hash() must agree with, and its fallback.
 */
static inline int32_t
jump_consistent_hash_loop(uint64_t key, int32_t buckets)
{
	int64_t		b = -1;
	int64_t		j = 0;

	while (j < buckets)
	{
		b = j;
		key = key * JUMP_LCG_MULTIPLIER + 1;
		/* (key >> 33) + 1 <= 2^31: converting it as signed is exact and
		 * one instruction, where an unsigned 64-bit conversion is several. */
		j = (int64_t) ((double) (b + 1) *
					   ((double) (INT64_C(1) << 31) / (double) (int64_t) ((key >> 33) + 1)));
	}
	return (int32_t) b;
}

/*
 * Jump consistent hash: 0 .. buckets - 1, bit for bit the paper's loop;
 * buckets must be >= 1.  Faster than the loop where the CPU allows
 * (jump.c explains how).
 */
extern int32_t jump_consistent_hash(uint64_t key, int32_t buckets);

#endif
