/*
 * test_rendezvous.c - rendezvous hashing: the weighted unit interval
 * against Python's (S + 1) / (2**64 + 1), ranking rules, and the movement
 * and share properties over 100,000 keys
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "placement_helpers.h"
#include "rendezvous.h"
#include "unit.h"

#define NKEYS 100000

/*
 * S and float((S + 1) / (2**64 + 1)) from python3 (float.hex()): powers of
 * two, ties at 53 significant bits, the top of the range, random values.
 */
static const struct
{
	uint64_t	s;
	double		u;
}			python_u[] = {
	{UINT64_C(0x0000000000000000), 0x1.0000000000000p-64},
	{UINT64_C(0x0000000000000001), 0x1.0000000000000p-63},
	{UINT64_C(0x0000000000000002), 0x1.8000000000000p-63},
	{UINT64_C(0x0000000000000003), 0x1.0000000000000p-62},
	{UINT64_C(0x0010000000000000), 0x1.0000000000001p-12},
	{UINT64_C(0x001ffffffffffffe), 0x1.fffffffffffffp-12},
	{UINT64_C(0x001fffffffffffff), 0x1.0000000000000p-11},
	{UINT64_C(0x0020000000000000), 0x1.0000000000000p-11},
	{UINT64_C(0x0020000000000001), 0x1.0000000000001p-11},
	{UINT64_C(0x003fffffffffffff), 0x1.0000000000000p-10},
	{UINT64_C(0x0040000000000000), 0x1.0000000000000p-10},
	{UINT64_C(0x0040000000000001), 0x1.0000000000000p-10},
	{UINT64_C(0x0040000000000002), 0x1.0000000000001p-10},
	{UINT64_C(0x0040000000000003), 0x1.0000000000001p-10},
	{UINT64_C(0x7fffffffffffffff), 0x1.0000000000000p-1},
	{UINT64_C(0x8000000000000000), 0x1.0000000000000p-1},
	{UINT64_C(0x8000000000000001), 0x1.0000000000000p-1},
	{UINT64_C(0x80000000000003ff), 0x1.0000000000000p-1},
	{UINT64_C(0x8000000000000400), 0x1.0000000000001p-1},
	{UINT64_C(0x8000000000000401), 0x1.0000000000001p-1},
	{UINT64_C(0x80000000000007ff), 0x1.0000000000001p-1},
	{UINT64_C(0xffffffffffffffff), 0x1.0000000000000p+0},
	{UINT64_C(0xfffffffffffffffe), 0x1.0000000000000p+0},
	{UINT64_C(0xfffffffffffffc00), 0x1.0000000000000p+0},
	{UINT64_C(0xfffffffffffffbff), 0x1.fffffffffffffp-1},
	{UINT64_C(0xfffffffffffffbfe), 0x1.fffffffffffffp-1},
	{UINT64_C(0xfffffffffffff800), 0x1.fffffffffffffp-1},
	{UINT64_C(0xfffffffffffff7ff), 0x1.fffffffffffffp-1},
	{UINT64_C(0xfffffffffffff448), 0x1.fffffffffffffp-1},
	{UINT64_C(0xfffffffffffff000), 0x1.ffffffffffffep-1},
	{UINT64_C(0x91b7584a2265b1f5), 0x1.236eb09444cb6p-1},
	{UINT64_C(0xcd613e30d8f16adf), 0x1.9ac27c61b1e2dp-1},
	{UINT64_C(0x1027c4d1c386bbc4), 0x1.027c4d1c386bcp-4},
	{UINT64_C(0x1e2feb89414c343c), 0x1.e2feb89414c34p-4},
	{UINT64_C(0xc2ce6f447ed4d57b), 0x1.859cde88fda9bp-1},
	{UINT64_C(0x78e510617311d8a3), 0x1.e3944185cc476p-2},
	{UINT64_C(0x612e7696a6cecc1b), 0x1.84b9da5a9b3b3p-2},
	{UINT64_C(0x35bf992dc9e9c616), 0x1.adfcc96e4f4e3p-3},
	{UINT64_C(0x0000000000000f9c), 0x1.f3a0000000000p-53},
	{UINT64_C(0x000000000000000e), 0x1.e000000000000p-61},
	{UINT64_C(0x00026e046ec9d286), 0x1.37023764e9438p-15},
	{UINT64_C(0x02e2db63442e3d43), 0x1.716db1a2171eap-7},
	{UINT64_C(0x0000000025d57530), 0x1.2eaba98800000p-35},
	{UINT64_C(0x00000000000039b0), 0x1.cd88000000000p-51},
	{UINT64_C(0x0000000b07d4bedc), 0x1.60fa97dba0000p-29},
};

/*
 * An independent correctly rounded quotient: long division in 128 bits,
 * 53 significant bits plus the remainder, round half to even.
 */
static double
reference_u(uint64_t s)
{
	unsigned __int128 n = (unsigned __int128) s + 1;
	unsigned __int128 d = ((unsigned __int128) 1 << 64) + 1;
	int			e = 0;
	unsigned __int128 m;
	unsigned __int128 r;

	/* Scale so that the quotient n * 2^e / d is in [2^52, 2^53). */
	while ((n << e) / d < ((unsigned __int128) 1 << 52))
		e++;
	m = (n << e) / d;
	r = (n << e) % d;
	if (2 * r > d || (2 * r == d && (m & 1)))
		m++;
	return ldexp((double) m, -e);
}

static void
test_unit_interval(void)
{
	uint64_t	x = 12345;
	long		mismatches = 0;

	for (size_t i = 0; i < sizeof(python_u) / sizeof(python_u[0]); i++)
	{
		double		u = rendezvous_unit_interval(python_u[i].s);

		if (u != python_u[i].u)
			fprintf(stderr, "u(0x%016llx) = %a, python %a\n",
					(unsigned long long) python_u[i].s, u, python_u[i].u);
		CHECK(u == python_u[i].u);
	}
	/* A million values against the long division, half of them near ties. */
	for (long i = 0; i < 1000000; i++)
	{
		uint64_t	s;

		x = fmix64(x + (uint64_t) i);
		s = x;
		if (i % 2)
		{
			int			shift = (int) (x % 12);

			/* Low bits of N set to a tie pattern and its neighbours. */
			s = (x | (UINT64_C(1) << 63)) >> (x >> 60);
			s = (s & ~((UINT64_C(1) << shift) - 1)) | ((UINT64_C(1) << shift) >> 1);
			s += (x >> 8) % 3;
			s -= 2;
		}
		if (rendezvous_unit_interval(s) != reference_u(s))
			mismatches++;
	}
	CHECK_EQ_I64(mismatches, 0);
	CHECK(isinf(rendezvous_weighted_bid(UINT64_MAX, 1.0)));
	CHECK(rendezvous_weighted_bid(0, 1.0) > 0);
}

static void
test_ranking(void)
{
	uint64_t	scores[5] = {10, 30, 30, 5, UINT64_MAX};
	double		weights[5] = {1, 1, 1, 0, 0};
	double		bids[5];
	int32_t		out[5];

	/* Ties go to the lower index; UINT64_MAX is the best score. */
	CHECK_EQ_I64(rendezvous_top(scores, NULL, 5, 5, bids, out), 5);
	CHECK(out[0] == 4 && out[1] == 1 && out[2] == 2 && out[3] == 0 && out[4] == 3);
	/* Weight 0 never bids. */
	CHECK_EQ_I64(rendezvous_top(scores, weights, 5, 3, bids, out), 3);
	CHECK(out[0] == 1 && out[1] == 2 && out[2] == 0);
	CHECK_EQ_I64(rendezvous_top(scores, weights, 5, 1, bids, out), 1);
	CHECK_EQ_I64(out[0], 1);
}

/* Winner among the first n nodes for key i, optionally weighted. */
static int
winner(const uint64_t *node_hashes, int n, const double *weights, long i)
{
	char		key[32];
	size_t		len = make_key(key, i);
	uint64_t	kh = xxh64_hash(key, len, 0);
	uint64_t	scores[64];
	double		bids[64];
	int32_t		out[1];

	if (!weights)
		return rendezvous_xxh64_winner(kh, node_hashes, n);
	for (int j = 0; j < n; j++)
		scores[j] = rendezvous_xxh64_score(kh, node_hashes[j]);
	rendezvous_top(scores, weights, n, 1, bids, out);
	return out[0];
}

static void
test_properties(void)
{
	test_nodes nodes;
	uint64_t	nh[16];
	double		equal[16];
	double		w4[4] = {1, 2, 3, 4};
	long		counts[4] = {0};
	long		moved_add = 0;
	long		moved_wrong = 0;
	long		moved_remove = 0;
	long		equal_differs = 0;

	make_nodes(&nodes, "node-", 1, 16);
	for (int i = 0; i < 16; i++)
	{
		nh[i] = xxh64_hash(nodes.names[i], (size_t) nodes.lengths[i], 0);
		equal[i] = 2.5;
	}
	for (long k = 0; k < NKEYS; k++)
	{
		int			before = winner(nh, 4, NULL, k);
		int			after = winner(nh, 5, NULL, k);
		int			removed;

		/* Adding node 4 moves keys only onto it. */
		if (after != before)
		{
			moved_add++;
			if (after != 4)
				moved_wrong++;
		}
		/* Removing node 1 (index 1 of 0..4) moves only its keys. */
		{
			uint64_t	without[4] = {nh[0], nh[2], nh[3], nh[4]};
			int			w = winner(without, 4, NULL, k);
			int			orig = w == 0 ? 0 : w + 1;

			removed = orig != after;
			if (removed && after != 1)
				moved_remove++;
		}
		if (winner(nh, 16, equal, k) != winner(nh, 16, NULL, k))
			equal_differs++;
		counts[winner(nh, 4, w4, k)]++;
	}
	/* About 1/5 of the keys move when a fifth node joins four. */
	CHECK(moved_add > NKEYS * 0.18 && moved_add < NKEYS * 0.22);
	CHECK_EQ_I64(moved_wrong, 0);
	CHECK_EQ_I64(moved_remove, 0);
	CHECK_EQ_I64(equal_differs, 0);
	/* Weights 1:2:3:4 give shares 0.1 .. 0.4, each within 0.01. */
	for (int i = 0; i < 4; i++)
		CHECK(fabs((double) counts[i] / NKEYS - (i + 1) / 10.0) < 0.01);
}

/*
 * The grouped winner equals the full ranking's first, repeated weights
 * included, with the groups the extension builds (rendezvous_group_weights).
 */
static void
test_weighted_winner(void)
{
	double		weights[12] = {1, 2, 1, 0, 2, 3.5, 1, 0.25, 3.5, 0, 2, 1};
	int32_t		group_of[12];
	double		group_weight[12];
	int32_t		group_best[12];
	int32_t		order[12];
	int			ngroups;
	long		differ = 0;

	ngroups = rendezvous_group_weights(weights, 12, order, group_of, group_weight, NULL);
	/* Distinct positive weights in ascending order; weight 0 in no group. */
	CHECK_EQ_I64(ngroups, 4);
	CHECK(group_weight[0] == 0.25 && group_weight[1] == 1 && group_weight[2] == 2 &&
		  group_weight[3] == 3.5);
	CHECK(group_of[3] == -1 && group_of[9] == -1);
	CHECK(group_of[0] == 1 && group_of[6] == 1 && group_of[11] == 1 && group_of[7] == 0);
	CHECK(group_of[5] == 3 && group_of[8] == 3 && group_of[1] == 2 && group_of[10] == 2);
	for (long k = 0; k < 200000; k++)
	{
		uint64_t	scores[12];
		double		bids[12];
		int32_t		out[1];

		for (int i = 0; i < 12; i++)
		{
			scores[i] = fmix64((uint64_t) k * 12 + (uint64_t) i + 1);
			/* Now and then equal scores, and the very top score. */
			if (k % 7 == 0 && i == 4)
				scores[i] = scores[1];
			if (k % 11 == 0 && i == 8)
				scores[i] = UINT64_MAX;
		}
		rendezvous_top(scores, weights, 12, 1, bids, out);
		if (rendezvous_weighted_winner(scores, group_of, 12, group_weight, ngroups, group_best) != out[0])
			differ++;
	}
	CHECK_EQ_I64(differ, 0);
}

/*
 * Large k goes through a heap (k steps per node would make k = n
 * quadratic): the same list as a full sort, prefixes as small k gives.
 */
static int
qsort_rank(const void *a, const void *b)
{
	const uint64_t *x = a;
	const uint64_t *y = b;

	/* Pairs (score, index): higher score first, then lower index. */
	if (x[0] != y[0])
		return x[0] > y[0] ? -1 : 1;
	return (x[1] > y[1]) - (x[1] < y[1]);
}

static void
test_large_k(void)
{
	enum
	{
		N = 3000
	};
	static uint64_t scores[N];
	static double weights[N];
	static double bids[N];
	static int32_t out[N];
	static int32_t small[8];
	static uint64_t pairs[N][2];
	long		wrong = 0;
	int			positive = 0;
	int			got;

	for (int i = 0; i < N; i++)
	{
		scores[i] = fmix64((uint64_t) i + 99);
		if (i % 10 == 3)
			scores[i] = scores[i - 1];	/* ties go to the lower index */
		weights[i] = (double) (i % 4);	/* a quarter never bid */
		positive += weights[i] > 0;
		pairs[i][0] = scores[i];
		pairs[i][1] = (uint64_t) i;
	}
	qsort(pairs, N, sizeof(pairs[0]), qsort_rank);
	got = rendezvous_top(scores, NULL, N, N, bids, out);
	CHECK_EQ_I64(got, N);
	for (int i = 0; i < N; i++)
		wrong += out[i] != (int32_t) pairs[i][1];
	CHECK_EQ_I64(wrong, 0);

	/* Weighted: the first 8 of the full heap ranking = the insertion ranking of 8. */
	got = rendezvous_top(scores, weights, N, positive, bids, out);
	CHECK_EQ_I64(got, positive);
	rendezvous_top(scores, weights, N, 8, bids, small);
	for (int i = 0; i < 8; i++)
		wrong += out[i] != small[i];
	for (int i = 1; i < positive; i++)
	{
		double		ba = rendezvous_weighted_bid(scores[out[i - 1]], weights[out[i - 1]]);
		double		bb = rendezvous_weighted_bid(scores[out[i]], weights[out[i]]);

		wrong += ba < bb || weights[out[i]] == 0;
	}
	CHECK_EQ_I64(wrong, 0);
}

void
unit_main(void)
{
	test_weighted_winner();
	test_large_k();
	test_unit_interval();
	test_ranking();
	test_properties();
}
