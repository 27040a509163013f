/*
 * test_maglev.c - Maglev: table sizes, balance (every backend floor(M/N)
 * or ceil(M/N) entries), small disruption when a backend leaves, weights,
 * the key properties over 100,000 keys, the weighted rule against its
 * literal round-by-round loop, and the cost of backends that never turn
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "maglev.h"
#include "placement_helpers.h"
#include "unit.h"

#define NKEYS 100000

static const hasher64 xxh = {HASH_FAMILY_XXH64, NULL};

/* The table of the nodes (malloc'd). */
static int32_t *
build_table(const test_nodes *nodes, uint32_t m, const double *weights)
{
	uint32_t	offsets[MAX_TEST_NODES];
	uint32_t	skips[MAX_TEST_NODES];
	uint32_t	next[MAX_TEST_NODES];
	uint64_t	turns[MAX_TEST_NODES];
	char		scratch[64];
	int32_t    *table = malloc(sizeof(int32_t) * m);

	for (int i = 0; i < nodes->count; i++)
		maglev_permutation(&xxh, nodes->names[i], (size_t) nodes->lengths[i], m, scratch,
						   &offsets[i], &skips[i]);
	maglev_populate(m, nodes->count, offsets, skips, weights, next, turns, table, NULL);
	return table;
}

/*
 * The weighted rule exactly as documented, asking every backend every
 * round (rounds x backends): what maglev_populate computed before it
 * learned to skip to each backend's next turn.
 */
static int32_t *
reference_table(const test_nodes *nodes, uint32_t m, const double *weights)
{
	uint32_t	offsets[MAX_TEST_NODES];
	uint32_t	skips[MAX_TEST_NODES];
	uint32_t	next[MAX_TEST_NODES] = {0};
	char		scratch[64];
	int32_t    *table = malloc(sizeof(int32_t) * m);
	uint32_t	filled = 0;
	double		max_weight = 0;
	int			n = nodes->count;

	for (int i = 0; i < n; i++)
	{
		maglev_permutation(&xxh, nodes->names[i], (size_t) nodes->lengths[i], m, scratch,
						   &offsets[i], &skips[i]);
		if (weights[i] > max_weight)
			max_weight = weights[i];
	}
	for (uint32_t s = 0; s < m; s++)
		table[s] = -1;
	for (uint64_t round = 1; filled < m; round++)
		for (int i = 0; i < n && filled < m; i++)
		{
			double		q = weights[i] / max_weight;
			uint32_t	slot;

			if (!(floor((double) round * q) > floor((double) (round - 1) * q)))
				continue;
			do
				slot = (uint32_t) (((uint64_t) offsets[i] + (uint64_t) next[i]++ * skips[i]) % m);
			while (table[slot] >= 0);
			table[slot] = i;
			filled++;
		}
	return table;
}

/* Same table as the literal loop, on both of populate's weighted paths. */
static void
test_weighted_rule(void)
{
	test_nodes nodes;
	static double w[MAX_TEST_NODES];
	uint64_t	x = 7;
	long		differ = 0;
	int			cases = 0;

	make_nodes(&nodes, "backend-", 1, 300);
	for (int c = 0; c < 60; c++)
	{
		uint32_t	sizes[] = {13, 251, 4099, 65537};
		uint32_t	m = sizes[c % 4];
		int32_t    *got,
				   *want;

		nodes.count = 1 + (int) ((x = fmix64(x + (uint64_t) c)) % (m < 300 ? m : 300));
		for (int i = 0; i < nodes.count; i++)
		{
			x = fmix64(x + (uint64_t) i);
			switch (c % 5)
			{
				case 0:			/* small integers with zeros: the scan path */
					w[i] = (double) (x % 5);
					break;
				case 1:			/* one heavy backend among light ones: the heap */
					w[i] = i == 0 ? 1000.0 : 1.0 + (double) (x % 3);
					break;
				case 2:			/* weights over many powers of two */
					w[i] = ldexp(1.0, -(int) (x % 30));
					break;
				case 3:			/* thirds and sevenths: products that round */
					w[i] = (double) (1 + x % 7) / 3.0;
					break;
				default:		/* mostly zeros, some tiny */
					w[i] = x % 4 == 0 ? 1e-300 * (double) (x % 9) : 0.0;
					break;
			}
		}
		w[x % (uint64_t) nodes.count] = 2.5;	/* at least one positive */
		got = build_table(&nodes, m, w);
		want = reference_table(&nodes, m, w);
		for (uint32_t s = 0; s < m; s++)
			differ += got[s] != want[s];
		cases++;
		free(got);
		free(want);
	}
	CHECK_EQ_I64(differ, 0);
	CHECK_EQ_I64(cases, 60);
}

static long interrupt_calls;

static void
count_interrupt(void)
{
	interrupt_calls++;
}

/*
 * One backend of weight 1 and 60,000 of weight 0: the old loop asked all
 * of them every round (65,537 x 60,001 tests, seconds); now the cost
 * follows the turns taken.  And the build calls its interrupt check.
 */
static void
test_idle_backends(void)
{
	const int	n = 60001;
	const uint32_t m = 65537;
	uint32_t   *offsets = malloc(sizeof(uint32_t) * n);
	uint32_t   *skips = malloc(sizeof(uint32_t) * n);
	uint32_t   *next = malloc(sizeof(uint32_t) * n);
	uint64_t   *turns = malloc(sizeof(uint64_t) * n);
	double	   *weights = calloc((size_t) n, sizeof(double));
	int32_t    *table = malloc(sizeof(int32_t) * m);
	long		others = 0;
	clock_t		start;
	double		seconds;

	for (int i = 0; i < n; i++)
	{
		char		name[24];
		char		scratch[64];
		int			len = snprintf(name, sizeof(name), "b%d", i);

		maglev_permutation(&xxh, name, (size_t) len, m, scratch, &offsets[i], &skips[i]);
	}
	weights[0] = 1;
	start = clock();
	maglev_populate(m, n, offsets, skips, weights, next, turns, table, count_interrupt);
	seconds = (double) (clock() - start) / CLOCKS_PER_SEC;
	printf("maglev, 1 backend of weight 1 and 60,000 of weight 0: %.1f ms\n", seconds * 1000);
	CHECK(seconds < 0.5);
	for (uint32_t s = 0; s < m; s++)
		others += table[s] != 0;
	CHECK_EQ_I64(others, 0);
	CHECK(interrupt_calls >= m / INTERRUPT_INTERVAL);

	/* Light but not zero (weight 1e-3: a turn every 1000 rounds): the heap path. */
	for (int i = 1; i < n; i++)
		weights[i] = 1e-3;
	start = clock();
	maglev_populate(m, n, offsets, skips, weights, next, turns, table, NULL);
	seconds = (double) (clock() - start) / CLOCKS_PER_SEC;
	printf("maglev, 1 backend of weight 1 and 60,000 of weight 0.001: %.1f ms\n", seconds * 1000);
	CHECK(seconds < 0.5);
	others = 0;
	for (uint32_t s = 0; s < m; s++)
		others += table[s] != 0;
	/*
	 * The heavy backend turns every round, each light one in rounds 1000 and
	 * 2000: 61,000 slots after round 1000, 61,999 after round 1999, and in
	 * round 2000 the heavy one and then 3,537 light ones fill the rest.
	 */
	CHECK_EQ_I64(others, 60000 + 3537);
	free(offsets);
	free(skips);
	free(next);
	free(turns);
	free(weights);
	free(table);
}

static void
test_sizes(void)
{
	CHECK(is_prime(2) && is_prime(3) && is_prime(13) && is_prime(65537) && is_prime(16777213));
	CHECK(!is_prime(0) && !is_prime(1) && !is_prime(4) && !is_prime(65535) && !is_prime(16777215));
	CHECK(maglev_check_size(65537, 16) == MAGLEV_OK);
	CHECK(maglev_check_size(65536, 16) == MAGLEV_NOT_PRIME);
	CHECK(maglev_check_size(-7, 1) == MAGLEV_NOT_PRIME);
	CHECK(maglev_check_size(13, 14) == MAGLEV_TOO_SMALL);
	CHECK(maglev_check_size(13, 13) == MAGLEV_OK);
	CHECK(maglev_check_size(2, 1) == MAGLEV_OK);
	CHECK(maglev_check_size(16777259, 1) == MAGLEV_TOO_LARGE);
}

/* Every backend has floor(M/N) or ceil(M/N) entries. */
static int
balanced(const int32_t *table, uint32_t m, int n)
{
	long		counts[MAX_TEST_NODES] = {0};

	for (uint32_t s = 0; s < m; s++)
	{
		if (table[s] < 0 || table[s] >= n)
			return 0;
		counts[table[s]]++;
	}
	for (int i = 0; i < n; i++)
		if (counts[i] != m / n && counts[i] != (m + n - 1) / n)
			return 0;
	return 1;
}

static void
test_balance_and_disruption(void)
{
	test_nodes nodes;
	test_nodes fewer;
	const uint32_t m = 65537;
	int32_t    *t16,
			   *t15,
			   *t17;
	long		changed_other = 0,
				others = 0;
	long		moved = 0,
				moved_wrong = 0;
	double		equal[16];
	int32_t    *teq;
	int			same = 1;

	make_nodes(&nodes, "backend-", 1, 17);
	nodes.count = 16;
	t16 = build_table(&nodes, m, NULL);
	CHECK(balanced(t16, m, 16));
	nodes.count = 17;
	t17 = build_table(&nodes, m, NULL);
	CHECK(balanced(t17, m, 17));
	teq = build_table(&nodes, 17, NULL);
	CHECK(balanced(teq, 17, 17));
	free(teq);
	nodes.count = 7;
	teq = build_table(&nodes, 13, NULL);
	CHECK(balanced(teq, 13, 7));
	free(teq);
	nodes.count = 16;

	/* Remove backend-5 (index 4): its slots change, and few others do. */
	make_nodes(&fewer, "backend-", 1, 16);
	for (int i = 4; i < 15; i++)
	{
		fewer.names[i] = nodes.names[i + 1];
		fewer.lengths[i] = nodes.lengths[i + 1];
	}
	fewer.count = 15;
	t15 = build_table(&fewer, m, NULL);
	CHECK(balanced(t15, m, 15));
	for (uint32_t s = 0; s < m; s++)
	{
		int			before = t16[s];
		int			after = t15[s] >= 4 ? t15[s] + 1 : t15[s];

		if (before == 4)
			continue;
		others++;
		if (after != before)
			changed_other++;
	}
	printf("maglev 16 -> 15 backends: %.2f%% of the other backends' slots changed\n",
		   100.0 * changed_other / others);
	CHECK((double) changed_other / others < 0.05);

	/* Keys: adding a 17th backend moves about 1/17 of them, mostly onto it. */
	for (long k = 0; k < NKEYS; k++)
	{
		char		key[32];
		size_t		len = make_key(key, k);
		uint64_t	h = xxh64_hash(key, len, 0);

		if (t16[h % m] != t17[h % m])
		{
			moved++;
			if (t17[h % m] != 16)
				moved_wrong++;
		}
	}
	CHECK(moved > NKEYS * (1.0 / 17 - 0.01) && moved < NKEYS * (1.0 / 17 + 0.03));
	CHECK((double) moved_wrong / NKEYS < 0.03);

	/* Equal weights build exactly the unweighted table. */
	for (int i = 0; i < 16; i++)
		equal[i] = 3.0;
	teq = build_table(&nodes, m, equal);
	for (uint32_t s = 0; s < m; s++)
		same &= teq[s] == t16[s];
	CHECK(same);
	free(t16);
	free(t15);
	free(t17);
	free(teq);
}

static void
test_weights(void)
{
	test_nodes nodes;
	double		w[5] = {1, 2, 3, 4, 0};
	const uint32_t m = 65537;
	int32_t    *t;
	long		counts[5] = {0};

	make_nodes(&nodes, "backend-", 1, 5);
	t = build_table(&nodes, m, w);
	for (uint32_t s = 0; s < m; s++)
		counts[t[s]]++;
	/* Turns in proportion to weight: entries within 0.5% of 10/20/30/40%. */
	for (int i = 0; i < 4; i++)
		CHECK(fabs((double) counts[i] / m - (i + 1) / 10.0) < 0.005);
	CHECK_EQ_I64(counts[4], 0);
	free(t);
}

void
unit_main(void)
{
	test_sizes();
	test_balance_and_disruption();
	test_weights();
	test_weighted_rule();
	test_idle_backends();
}
