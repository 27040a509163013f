/*
 * largest_remainder.c - splitting a count by weight, exactly
 *
 * Exactness.  A finite double w is m * 2^e with m < 2^53 and e >= -1074,
 * so W = w * 2^1074 is an integer below 2^2098 and S = sum(W) an integer
 * too.  The quota of index i is q_i = T * W_i / S: its floor is the
 * integer quotient of T * W_i by S and its fractional part is R_i / S with
 * R_i = T * W_i mod S.  All fractional parts share the denominator S, so
 * comparing them is comparing the integers R_i.  These are computed in
 * 32-bit limbs (WEIGHT_SUM_LIMBS hold T * S for T < 2^31), on the limbs
 * between the lowest any W_i uses and the highest T * S uses, so weights
 * of similar size cost a few limbs.
 *
 * Speed.  Most floors and comparisons are settled in double precision:
 * x_i = T * (w_i / S~), with S~ the sum rounded to a double, is within
 * T * 2^-51 of q_i (below), so |x_i - q_i| <= E / 2 with E = T * 2^-50.
 * A floor is taken from x_i when x_i is more than E from an integer (or
 * below 1 - E: quotas are >= 0); two fractional parts are ordered by
 * x_i - floor_i when those differ by more than 2E, and exactly by the
 * weights when the floors are equal (they differ by T * (w_a - w_b) / S).
 * Everything else (near-integers, near-ties across floors) goes to the
 * exact integers.
 *
 * The bound: S~ is S cut to its top 64 bits and rounded to 53, relative
 * error below 2^-53 + 2^-63; w_i / S~ is computed from the frexp()
 * fractions of both (no overflow or underflow) and rounded once, the
 * product with T once, and ldexp() is exact unless the result is
 * subnormal (absolute error <= 2^-1075).  So x_i = q_i (1 + d) + a with
 * |d| < 3.0002 * 2^-53 < 2^-51.4 and |a| <= 2^-1075, and q_i <= T.
 * x_i - floor(x_i) and x_i - floor_i are exact (Sterbenz, or a difference
 * of at most 2 on the grid of x_i), and 1 - E and 2E are exact.
 *
 * Defining LARGEST_REMAINDER_EXACT_ONLY turns the double path off, so the
 * tests can check both paths against the same oracle.
 */
#include "largest_remainder.h"

#include <float.h>
#include <math.h>
#include <string.h>

#define SCALE_BITS 1074			/* every finite double is a multiple of 2^-1074 */

const char *
split_status_message(split_status status)
{
	switch (status)
	{
		case SPLIT_OK:
			return "ok";
		case SPLIT_BAD_COUNT:
			return "no weights";
		case SPLIT_BAD_TOTAL:
			return "negative total";
		case SPLIT_BAD_WEIGHT:
			return "weight is not finite and non-negative";
		case SPLIT_NO_WEIGHT:
			return "no positive weight";
		case SPLIT_SUM_TOO_LARGE:
			return "weights sum to more than the largest double";
	}
	return "unknown status";
}

/* w * 2^1074 = mantissa << shift, for a finite w > 0. */
static void
scaled_bits(double w, uint64_t *mantissa, int *shift)
{
	int			e;
	double		f = frexp(w, &e);	/* w = f * 2^e, 0.5 <= f < 1 */
	uint64_t	m = (uint64_t) ldexp(f, 53);	/* exact: 53 bits at most */
	int			s = e - 53 + SCALE_BITS;

	if (s < 0)
	{
		/* subnormal: the bits shifted out are zero */
		m >>= -s;
		s = 0;
	}
	*mantissa = m;
	*shift = s;
}

/* Adds v at limb k, carrying up. */
static void
add_at(uint32_t *limb, int k, uint64_t v)
{
	while (v != 0 && k < WEIGHT_SUM_LIMBS)
	{
		uint64_t	acc = (uint64_t) limb[k] + (v & 0xffffffffu);

		limb[k] = (uint32_t) acc;
		v = (v >> 32) + (acc >> 32);
		k++;
	}
}

/* Adds mantissa << shift. */
static void
add_shifted(uint32_t *limb, uint64_t mantissa, int shift)
{
	int			k = shift / 32;
	int			b = shift % 32;

	add_at(limb, k, (mantissa & 0xffffffffu) << b);
	add_at(limb, k + 1, (mantissa >> 32) << b);
}

void
weight_sum_init(weight_sum *sum)
{
	memset(sum->limb, 0, sizeof(sum->limb));
}

void
weight_sum_add(weight_sum *sum, double weight)
{
	uint64_t	m;
	int			s;

	if (!(weight > 0))
		return;
	scaled_bits(weight, &m, &s);
	add_shifted(sum->limb, m, s);
}

/* -1, 0, 1 as a < b, a == b, a > b, comparing limbs [lo, hi). */
static int
compare_limbs(const uint32_t *a, const uint32_t *b, int lo, int hi)
{
	for (int i = hi - 1; i >= lo; i--)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}

int
weight_sum_too_large(const weight_sum *sum)
{
	weight_sum	max;

	weight_sum_init(&max);
	weight_sum_add(&max, DBL_MAX);
	return compare_limbs(sum->limb, max.limb, 0, WEIGHT_SUM_LIMBS) > 0;
}

/*
 * Validates the weights and sums them; *lo is the lowest limb any
 * positive weight touches.
 */
static split_status
check_and_sum(const double *weights, int32_t count, weight_sum *sum, int *lo)
{
	int			any = 0;

	if (count < 1)
		return SPLIT_BAD_COUNT;
	weight_sum_init(sum);
	*lo = WEIGHT_SUM_LIMBS;
	for (int32_t i = 0; i < count; i++)
	{
		double		w = weights[i];
		uint64_t	m;
		int			s;

		if (!isfinite(w) || w < 0)
			return SPLIT_BAD_WEIGHT;
		if (w == 0)
			continue;
		any = 1;
		scaled_bits(w, &m, &s);
		add_shifted(sum->limb, m, s);
		if (s / 32 < *lo)
			*lo = s / 32;
	}
	if (!any)
		return SPLIT_NO_WEIGHT;
	if (weight_sum_too_large(sum))
		return SPLIT_SUM_TOO_LARGE;
	return SPLIT_OK;
}

split_status
largest_remainder_check(const double *weights, int32_t count)
{
	weight_sum	sum;
	int			lo;

	return check_and_sum(weights, count, &sum, &lo);
}

typedef struct split_context
{
	const double *weights;
	const int32_t *sizes;
	int32_t		total;
	uint32_t	sum[WEIGHT_SUM_LIMBS];	/* S */
	int			lo;				/* limbs [lo, hi) hold every value below */
	int			hi;
	double		sum_fraction;	/* S / 2^1074 ~ sum_fraction * 2^sum_exponent */
	int			sum_exponent;
	double		slack;			/* E */
} split_context;

/* Bits start .. start + 63 of a (bits below 0 read as zero). */
static uint64_t
bits_at(const uint32_t *a, int start)
{
	uint64_t	v = 0;

	for (int bit = start + 63; bit >= start; bit--)
		v = v << 1 | (bit >= 0 ? (a[bit / 32] >> (bit % 32)) & 1 : 0);
	return v;
}

static void
context_init(split_context *c, const double *weights, const int32_t *sizes,
			 int32_t total, const weight_sum *sum, int lo)
{
	int			top = WEIGHT_SUM_LIMBS - 1;
	int			bits;
	int			e;

	c->weights = weights;
	c->sizes = sizes;
	c->total = total;
	memcpy(c->sum, sum->limb, sizeof(c->sum));
	while (c->sum[top] == 0)
		top--;					/* the sum is not zero */
	bits = 32 * top;
	for (uint32_t t = c->sum[top]; t != 0; t >>= 1)
		bits++;
	/* T * S < 2^(bits + 31): at most one limb above S's */
	c->lo = lo;
	c->hi = top + 2 <= WEIGHT_SUM_LIMBS ? top + 2 : WEIGHT_SUM_LIMBS;
	c->sum_fraction = frexp((double) bits_at(c->sum, bits - 64), &e);
	c->sum_exponent = e + bits - 64 - SCALE_BITS;
	c->slack = ldexp((double) total, -50);
}

/* x_i: total * w / S in double precision, within E / 2 of the quota. */
static double
approximate_quota(const split_context *c, double w)
{
	int			e;
	double		f = frexp(w, &e);

	return ldexp((double) c->total * (f / c->sum_fraction), e - c->sum_exponent);
}

/* out = a * k on the context's limbs (a may be out). */
static void
multiply_small(const split_context *c, const uint32_t *a, uint32_t k, uint32_t *out)
{
	uint64_t	carry = 0;

	for (int i = c->lo; i < c->hi; i++)
	{
		uint64_t	p = (uint64_t) a[i] * k + carry;

		out[i] = (uint32_t) p;
		carry = p >> 32;
	}
}

/* a -= b on the context's limbs; a >= b. */
static void
subtract(const split_context *c, uint32_t *a, const uint32_t *b)
{
	uint64_t	borrow = 0;

	for (int i = c->lo; i < c->hi; i++)
	{
		uint64_t	d = (uint64_t) a[i] - b[i] - borrow;

		a[i] = (uint32_t) d;
		borrow = (d >> 32) & 1;
	}
}

/*
 * The exact floor of index i's quota, starting from a guess within a few
 * units of it; rem (if not NULL) gets R_i = T * W_i - floor * S.
 */
static int32_t
exact_floor(const split_context *c, int32_t i, int32_t guess, uint32_t *rem)
{
	uint32_t	n[WEIGHT_SUM_LIMBS];
	uint32_t	p[WEIGHT_SUM_LIMBS];
	uint64_t	m;
	int			s;

	memset(n, 0, sizeof(n));
	scaled_bits(c->weights[i], &m, &s);
	add_shifted(n, m, s);
	multiply_small(c, n, (uint32_t) c->total, n);	/* T * W_i */
	multiply_small(c, c->sum, (uint32_t) guess, p);	/* guess * S */
	while (compare_limbs(p, n, c->lo, c->hi) > 0)
	{
		subtract(c, p, c->sum);
		guess--;
	}
	subtract(c, n, p);
	while (compare_limbs(n, c->sum, c->lo, c->hi) >= 0)
	{
		subtract(c, n, c->sum);
		guess++;
	}
	if (rem != NULL)
		memcpy(rem + c->lo, n + c->lo, sizeof(uint32_t) * (size_t) (c->hi - c->lo));
	return guess;
}

/* Whether index a's fractional part ranks before b's: larger, or equal and a < b. */
static int
ranks_before(const split_context *c, int32_t a, int32_t b)
{
	uint32_t	ra[WEIGHT_SUM_LIMBS];
	uint32_t	rb[WEIGHT_SUM_LIMBS];
	int			order;

#ifndef LARGEST_REMAINDER_EXACT_ONLY
	double		d;

	/* equal floors: the fractional parts differ as T * (w_a - w_b) / S */
	if (c->sizes[a] == c->sizes[b])
		return c->weights[a] != c->weights[b] ? c->weights[a] > c->weights[b] : a < b;
	d = (approximate_quota(c, c->weights[a]) - c->sizes[a]) -
		(approximate_quota(c, c->weights[b]) - c->sizes[b]);
	if (d > 2 * c->slack)
		return 1;
	if (d < -2 * c->slack)
		return 0;
#endif
	exact_floor(c, a, c->sizes[a], ra);
	exact_floor(c, b, c->sizes[b], rb);
	order = compare_limbs(ra, rb, c->lo, c->hi);
	return order != 0 ? order > 0 : a < b;
}

static void
sift_down(const split_context *c, int32_t *heap, int32_t n, int32_t pos)
{
	for (;;)
	{
		int32_t		l = 2 * pos + 1;
		int32_t		r = l + 1;
		int32_t		top = pos;
		int32_t		tmp;

		if (l < n && ranks_before(c, heap[l], heap[top]))
			top = l;
		if (r < n && ranks_before(c, heap[r], heap[top]))
			top = r;
		if (top == pos)
			return;
		tmp = heap[pos];
		heap[pos] = heap[top];
		heap[top] = tmp;
		pos = top;
	}
}

split_status
largest_remainder_split(const double *weights, int32_t count, int32_t total,
						int32_t *sizes, int32_t *scratch)
{
	split_context c;
	weight_sum	sum;
	int			lo;
	int64_t		left = total;
	int32_t		n = 0;
	split_status status;

	status = check_and_sum(weights, count, &sum, &lo);
	if (status != SPLIT_OK)
		return status;
	if (total < 0)
		return SPLIT_BAD_TOTAL;
	context_init(&c, weights, sizes, total, &sum, lo);

	for (int32_t i = 0; i < count; i++)
	{
		double		x,
					f;
		int32_t		guess;

		sizes[i] = 0;
		if (weights[i] == 0 || total == 0)
			continue;
		x = approximate_quota(&c, weights[i]);
		f = floor(x);
		guess = f < 0 ? 0 : f > total ? total : (int32_t) f;
#ifndef LARGEST_REMAINDER_EXACT_ONLY
		/* quotas are >= 0, so a floor of 0 needs no margin below */
		if ((f == 0 || x - f > c.slack) && x - f < 1 - c.slack)
			sizes[i] = guess;
		else
#endif
			sizes[i] = exact_floor(&c, i, guess, NULL);
		left -= sizes[i];
		scratch[n++] = i;
	}

	/*
	 * The fractional parts sum to left, each below 1: more than left
	 * indexes have one above 0, so the top `left` of the ranking all do.
	 */
	for (int32_t p = n / 2 - 1; p >= 0; p--)
		sift_down(&c, scratch, n, p);
	for (; left > 0; left--)
	{
		sizes[scratch[0]]++;
		scratch[0] = scratch[--n];
		sift_down(&c, scratch, n, 0);
	}
	return SPLIT_OK;
}
