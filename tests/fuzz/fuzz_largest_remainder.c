/*
 * fuzz_largest_remainder.c - libFuzzer target for the split of slots by
 * weight
 *
 * The input gives up to 16 weights (any bit pattern: NaN, infinities,
 * subnormals, zeros, repeats) and a total.  Checked without an oracle
 * (tests/reference/largest_remainder is the oracle): the status agrees
 * with the weights, the sizes sum to the total, a weight of 0 gets 0,
 * each size is within one of its quota, equal weights get sizes that do
 * not grow with the index, and scaling every weight by the same power of
 * two, where that is exact, changes nothing.  When every weight is one of
 * the small ones (k / d, k < 16, d = 1, 2, 4, 8: exact ties everywhere),
 * the sizes must be the split computed in 64-bit integers on 8 * w.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "largest_remainder.h"

#define MAX_WEIGHTS 16

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	double		w[MAX_WEIGHTS],
				scaled[MAX_WEIGHTS];
	int32_t		sizes[MAX_WEIGHTS],
				again[MAX_WEIGHTS],
				scratch[MAX_WEIGHTS];
	int32_t		n,
				total;
	uint32_t	t = 0;
	int			shift;
	int			valid = 1,
				any = 0,
				exact_scale = 1,
				small = 1;
	int64_t		scaled_int[MAX_WEIGHTS];
	double		sum = 0;
	split_status status;

	if (size < 6)
		return 0;
	memcpy(&t, data, 4);
	total = (int32_t) (t % 1048577);
	shift = (int) (data[4] % 64) - 32;
	n = 1 + data[5] % MAX_WEIGHTS;
	data += 6;
	size -= 6;
	for (int32_t i = 0; i < n; i++)
	{
		uint64_t	bits = 0;
		size_t		take = size < 8 ? size : 8;

		/* a byte below 0x40 picks a small weight (ties), else raw bits */
		if (size >= 1 && data[0] < 0x40)
		{
			w[i] = (data[0] % 16) / (double) (1 << (data[0] / 16));
			scaled_int[i] = (data[0] % 16) * (8 >> (data[0] / 16));
			data++;
			size--;
		}
		else
		{
			memcpy(&bits, data, take);
			memcpy(&w[i], &bits, 8);
			small = 0;
			data += take;
			size -= take;
		}
		if (!isfinite(w[i]) || w[i] < 0)
			valid = 0;
		else
		{
			any |= w[i] > 0;
			sum += w[i];
		}
	}

	status = largest_remainder_split(w, n, total, sizes, scratch);
	if (!valid)
	{
		if (status != SPLIT_BAD_WEIGHT)
			abort();
		return 0;
	}
	if (!any)
	{
		if (status != SPLIT_NO_WEIGHT)
			abort();
		return 0;
	}
	if (status == SPLIT_SUM_TOO_LARGE)
	{
		/* the sum rounded term by term is within a few units of DBL_MAX */
		if (sum < DBL_MAX * (1 - 1e-15))
			abort();
		return 0;
	}
	if (status != SPLIT_OK)
		abort();
	if (isinf(sum))
		return 0;				/* an exact sum within rounding of DBL_MAX */
	{
		int64_t		got = 0;

		for (int32_t i = 0; i < n; i++)
		{
			double		quota = (double) total * (w[i] / sum);

			got += sizes[i];
			if (sizes[i] < 0 || (w[i] == 0 && sizes[i] != 0))
				abort();
			if (fabs((double) sizes[i] - quota) > 1 + 1e-6 * (1 + quota))
				abort();
			for (int32_t j = 0; j < i; j++)
				if (w[j] == w[i] && sizes[j] < sizes[i])
					abort();
		}
		if (got != total)
			abort();
	}

	if (small)
	{
		/* the rule itself, on integers: floors, then the largest remainders */
		int64_t		s = 0,
					left = total,
					rem[MAX_WEIGHTS];
		int32_t		expected[MAX_WEIGHTS];

		for (int32_t i = 0; i < n; i++)
			s += scaled_int[i];
		for (int32_t i = 0; i < n; i++)
		{
			expected[i] = (int32_t) (total * scaled_int[i] / s);
			rem[i] = scaled_int[i] > 0 ? total * scaled_int[i] % s : -1;
			left -= expected[i];
		}
		for (; left > 0; left--)
		{
			int32_t		best = -1;

			for (int32_t i = 0; i < n; i++)
				if (rem[i] >= 0 && (best < 0 || rem[i] > rem[best]))
					best = i;
			expected[best]++;
			rem[best] = -1;
		}
		if (memcmp(expected, sizes, sizeof(int32_t) * (size_t) n) != 0)
			abort();
	}

	for (int32_t i = 0; i < n; i++)
	{
		scaled[i] = ldexp(w[i], shift);
		if (!isfinite(scaled[i]) || ldexp(scaled[i], -shift) != w[i])
			exact_scale = 0;
	}
	if (exact_scale &&
		largest_remainder_split(scaled, n, total, again, scratch) == SPLIT_OK &&
		memcmp(again, sizes, sizeof(int32_t) * (size_t) n) != 0)
		abort();
	return 0;
}
