/*
 * test_maglev.c - Maglev: table sizes, balance (every backend floor(M/N)
 * or ceil(M/N) entries), small disruption when a backend leaves, weights,
 * and the key properties over 100,000 keys
 */
#include <math.h>

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
	char		scratch[64];
	int32_t    *table = malloc(sizeof(int32_t) * m);

	for (int i = 0; i < nodes->count; i++)
		maglev_permutation(&xxh, nodes->names[i], (size_t) nodes->lengths[i], m, scratch,
						   &offsets[i], &skips[i]);
	maglev_populate(m, nodes->count, offsets, skips, weights, next, table);
	return table;
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
}
