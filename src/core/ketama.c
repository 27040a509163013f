/*
 * ketama.c - the ketama ring of libketama (docs/placement.md)
 */
#include "ketama.h"

#include <math.h>

#include "joined_hash.h"

uint32_t
ketama_digest_count(double weight, double total, int nservers)
{
	/*
	 * libketama: float pct = (float) memory / (float) total;
	 * floorf(pct * 40.0 * (float) numservers).  The product is taken in
	 * double (40.0 is a double constant) and rounded to float by floorf's
	 * parameter; the same C expression here gives the same bits.
	 */
	float		pct = (float) weight / (float) total;
	float		digests = floorf(pct * 40.0 * (float) nservers);

	/* NaN or out of range only when total is 0 or infinite in float. */
	if (!(digests >= 0) || digests > (float) KETAMA_DIGESTS_PER_SERVER * (float) nservers)
		return 0;
	return (uint32_t) digests;
}

ketama_status
ketama_digest_counts(const double *weights, double total, int nservers,
					 uint32_t *digests, size_t *points)
{
	size_t		sum = 0;

	for (int i = 0; i < nservers; i++)
	{
		digests[i] = weights ? ketama_digest_count(weights[i], total, nservers) :
			KETAMA_DIGESTS_PER_SERVER;
		sum += 4 * (size_t) digests[i];
		if (sum > RING_MAX_POINTS)
			return KETAMA_TOO_MANY_POINTS;
	}
	*points = sum;
	return sum == 0 ? KETAMA_NO_POINTS : KETAMA_OK;
}

void
ketama_generate_points(md5_digest_fn md5, const char *const *names,
					   const int *lengths, int nservers,
					   const uint32_t *digests, char *scratch,
					   ring_point *points, interrupt_check check)
{
	size_t		p = 0;
	interrupt_counter counter = {check, 0};

	for (int i = 0; i < nservers; i++)
	{
		for (uint32_t k = 0; k < digests[i]; k++)
		{
			char		digits[DECIMAL_UINT32_MAX_LEN];
			size_t		ndigits = format_decimal(k, digits);
			size_t		len = join_bytes(names[i], (size_t) lengths[i], "-", 1,
										 digits, ndigits, scratch);
			uint8_t		digest[16];

			md5(scratch, len, digest);
			for (int h = 0; h < 4; h++)
			{
				points[p].position = ketama_word(digest, h);
				points[p].node = i;
				points[p].vnode = (int32_t) (4 * k + (uint32_t) h);
				p++;
			}
			interrupt_charge(&counter, 4);
		}
	}
}
