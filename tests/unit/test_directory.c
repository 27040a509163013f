/*
 * test_directory.c - slot methods, canonical tenants, largest-remainder
 * splits and the tenant map of the shard directory core
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "directory.h"
#include "hash64.h"
#include "jump.h"
#include "largest_remainder.h"
#include "redis_slot.h"
#include "unit.h"

#define S(str) str, sizeof(str) - 1

static void
test_names(void)
{
	slot_method m;
	key_type	t;

	CHECK(slot_method_parse(S("xxh64"), &m) == 0 && m == SLOT_METHOD_XXH64);
	CHECK(slot_method_parse(S("pg_hash"), &m) == 0 && m == SLOT_METHOD_PG_HASH);
	CHECK(slot_method_parse(S("XXH64"), &m) == -1);
	CHECK(slot_method_parse(S("jump "), &m) == -1);
	CHECK(key_type_parse(S("uuid"), &t) == 0 && t == KEY_TYPE_UUID);
	CHECK(key_type_parse(S("int8"), &t) == -1);
	CHECK(strcmp(slot_method_name(SLOT_METHOD_REDIS), "redis") == 0);
	CHECK(strcmp(key_type_name(KEY_TYPE_BIGINT), "bigint") == 0);
}

static void
test_slots(void)
{
	uint64_t	h = xxh64_hash(S("acme"), 0);

	/* Each method is the placement function of docs/placement.md, nothing else. */
	CHECK_EQ_I64(directory_text_slot(SLOT_METHOD_XXH64, S("acme"), h, 1000), (int64_t) (h % 1000));
	CHECK_EQ_I64(directory_text_slot(SLOT_METHOD_JUMP, S("acme"), h, 1000), jump_consistent_hash(h, 1000));
	CHECK_EQ_I64(directory_text_slot(SLOT_METHOD_REDIS, S("somekey"), xxh64_hash(S("somekey"), 0), 16384), 11058);
	CHECK_EQ_I64(directory_text_slot(SLOT_METHOD_XXH64, S("acme"), h, 1), 0);
}

static void
test_bigint(void)
{
	int64_t		v = 0;
	char		out[CANONICAL_BIGINT_MAX];
	size_t		n;

	CHECK(bigint_tenant_parse(S("42"), &v) == TENANT_OK && v == 42);
	CHECK(bigint_tenant_parse(S("  +042\t"), &v) == TENANT_OK && v == 42);
	CHECK(bigint_tenant_parse(S("-9223372036854775808"), &v) == TENANT_OK && v == INT64_MIN);
	CHECK(bigint_tenant_parse(S("9223372036854775807"), &v) == TENANT_OK && v == INT64_MAX);
	CHECK(bigint_tenant_parse(S("9223372036854775808"), &v) == TENANT_OUT_OF_RANGE);
	CHECK(bigint_tenant_parse(S("-9223372036854775809"), &v) == TENANT_OUT_OF_RANGE);
	CHECK(bigint_tenant_parse(S("99999999999999999999999x"), &v) == TENANT_INVALID);
	CHECK(bigint_tenant_parse(S(""), &v) == TENANT_INVALID);
	CHECK(bigint_tenant_parse(S(" "), &v) == TENANT_INVALID);
	CHECK(bigint_tenant_parse(S("-"), &v) == TENANT_INVALID);
	CHECK(bigint_tenant_parse(S("1 2"), &v) == TENANT_INVALID);
	CHECK(bigint_tenant_parse(S("0x10"), &v) == TENANT_INVALID);
	CHECK(bigint_tenant_parse(S("1.0"), &v) == TENANT_INVALID);
	n = bigint_tenant_format(INT64_MIN, out);
	CHECK(n == 20 && memcmp(out, "-9223372036854775808", 20) == 0);
	n = bigint_tenant_format(0, out);
	CHECK(n == 1 && out[0] == '0');
	n = bigint_tenant_format(-7, out);
	CHECK(n == 2 && memcmp(out, "-7", 2) == 0);
}

static void
test_uuid(void)
{
	const uint8_t u[16] = {0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8,
	0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11};
	char		out[CANONICAL_UUID_LEN];

	uint8_t		p[16];

	uuid_tenant_format(u, out);
	CHECK(memcmp(out, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", 36) == 0);
	/* The input forms of the PostgreSQL manual's uuid section. */
	CHECK(uuid_tenant_parse(S("A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"), p) == TENANT_OK && memcmp(p, u, 16) == 0);
	CHECK(uuid_tenant_parse(S("{a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11}"), p) == TENANT_OK && memcmp(p, u, 16) == 0);
	CHECK(uuid_tenant_parse(S("a0eebc999c0b4ef8bb6d6bb9bd380a11"), p) == TENANT_OK && memcmp(p, u, 16) == 0);
	CHECK(uuid_tenant_parse(S("a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11"), p) == TENANT_OK && memcmp(p, u, 16) == 0);
	CHECK(uuid_tenant_parse(S("{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), p) == TENANT_INVALID);
	CHECK(uuid_tenant_parse(S("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11-"), p) == TENANT_INVALID);
	CHECK(uuid_tenant_parse(S("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1"), p) == TENANT_INVALID);
	CHECK(uuid_tenant_parse(S("a0eebc99--9c0b-4ef8-bb6d-6bb9bd380a11"), p) == TENANT_INVALID);
	CHECK(uuid_tenant_parse(S("a-0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), p) == TENANT_INVALID);
	CHECK(uuid_tenant_parse(S(" a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), p) == TENANT_INVALID);
	CHECK(uuid_tenant_parse(S("g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), p) == TENANT_INVALID);
	CHECK(uuid_tenant_parse(S(""), p) == TENANT_INVALID);
}

/* largest_remainder_split with its own scratch; SPLIT_* status. */
static split_status
split(const double *w, int32_t n, int32_t total, int32_t *sizes)
{
	int32_t		scratch[64];

	return largest_remainder_split(w, n, total, sizes, scratch);
}

static int
sizes_are(const int32_t *sizes, int32_t n, const int32_t *expected)
{
	for (int32_t i = 0; i < n; i++)
		if (sizes[i] != expected[i])
			return 0;
	return 1;
}

static void
test_split(void)
{
	int32_t		sizes[8];
	double		equal3[3] = {1, 1, 1};
	double		two[2] = {1, 1};
	double		skew[3] = {0.1, 0.2, 0.7};
	double		zero[3] = {1, 0, 1};
	double		big[4] = {1e300, 1e300, 1, 3};
	double		w411[3] = {4, 1, 1};

	/* docs/directory.md: 3 equal shards of 16,384 slots get 5,462 / 5,461 / 5,461. */
	CHECK(split(equal3, 3, 16384, sizes) == SPLIT_OK);
	CHECK(sizes_are(sizes, 3, (int32_t[]) {5462, 5461, 5461}));

	/*
	 * Quotas 885 1/3, 221 1/3, 221 1/3: an exact three-way tie that double
	 * precision sees as 885.33333333333337 against 221.33333333333334
	 * (the old directory split gave 885 / 222 / 221).
	 */
	CHECK(split(w411, 3, 1328, sizes) == SPLIT_OK);
	CHECK(sizes_are(sizes, 3, (int32_t[]) {886, 221, 221}));
	/* the same ratios scaled by powers of two, subnormal and near the top */
	{
		double		tiny[3] = {ldexp(4, -1070), ldexp(1, -1070), ldexp(1, -1070)};
		double		huge[3] = {ldexp(4, 1021), ldexp(1, 1021), ldexp(1, 1021)};
		double		halves[3] = {2, 0.5, 0.5};

		CHECK(split(tiny, 3, 1328, sizes) == SPLIT_OK);
		CHECK(sizes_are(sizes, 3, (int32_t[]) {886, 221, 221}));
		CHECK(split(huge, 3, 1328, sizes) == SPLIT_OK);
		CHECK(sizes_are(sizes, 3, (int32_t[]) {886, 221, 221}));
		CHECK(split(halves, 3, 1328, sizes) == SPLIT_OK);
		CHECK(sizes_are(sizes, 3, (int32_t[]) {886, 221, 221}));
	}
	/* ties go to the earlier index, wherever the tied weights are */
	{
		double		w[4] = {1, 4, 1, 1};

		/* quotas 11/7, 44/7, 11/7, 11/7: floors 1, 6, 1, 1 and two left */
		CHECK(split(w, 4, 11, sizes) == SPLIT_OK);
		CHECK(sizes_are(sizes, 4, (int32_t[]) {2, 6, 2, 1}));
	}
	CHECK(split(two, 2, 3, sizes) == SPLIT_OK && sizes[0] == 2 && sizes[1] == 1);
	CHECK(split(skew, 3, 10, sizes) == SPLIT_OK);
	CHECK(sizes_are(sizes, 3, (int32_t[]) {1, 2, 7}));
	CHECK(split(equal3, 3, 1, sizes) == SPLIT_OK);
	CHECK(sizes_are(sizes, 3, (int32_t[]) {1, 0, 0}));
	CHECK(split(equal3, 3, 0, sizes) == SPLIT_OK);
	CHECK(sizes_are(sizes, 3, (int32_t[]) {0, 0, 0}));
	CHECK(split(big, 4, 1048576, sizes) == SPLIT_OK);
	CHECK(sizes_are(sizes, 4, (int32_t[]) {524288, 524288, 0, 0}));

	/* weight 0 gets nothing, even when it would win every tie */
	CHECK(split(zero, 3, 5, sizes) == SPLIT_OK);
	CHECK(sizes_are(sizes, 3, (int32_t[]) {3, 0, 2}));
	{
		double		w[4] = {0, 1, 0, 1};

		CHECK(split(w, 4, 3, sizes) == SPLIT_OK);
		CHECK(sizes_are(sizes, 4, (int32_t[]) {0, 2, 0, 1}));
	}

	/* huge and tiny together: 1e-308 is 2^-2046 of 1e308, its quota 0.0... */
	{
		double		w[3] = {1e308, 1e-308, 1e-308};
		double		sub[3] = {4.9e-324, 4.9e-324, 4.9e-324};	/* 2^-1074 */
		double		w2[4] = {1e-308, 5e307, 2e-308, 5e307};

		CHECK(split(w, 3, 1048576, sizes) == SPLIT_OK);
		CHECK(sizes_are(sizes, 3, (int32_t[]) {1048576, 0, 0}));
		CHECK(split(sub, 3, 16384, sizes) == SPLIT_OK);
		CHECK(sizes_are(sizes, 3, (int32_t[]) {5462, 5461, 5461}));
		/* the two halves tie exactly below the tiny parts: the earlier wins */
		CHECK(split(w2, 4, 3, sizes) == SPLIT_OK);
		CHECK(sizes_are(sizes, 4, (int32_t[]) {0, 2, 0, 1}));
		CHECK(split(w2, 4, 1048575, sizes) == SPLIT_OK);
		CHECK(sizes_are(sizes, 4, (int32_t[]) {0, 524288, 0, 524287}));
	}

	/* The sum must be finite too: exactly DBL_MAX is, one unit more is not. */
	{
		double		overflow[2] = {1e308, 1e308};
		double		halves[2] = {DBL_MAX / 2, DBL_MAX / 2};
		double		just_over[2] = {DBL_MAX, 4.9e-324};
		double		max_and_zero[2] = {0, DBL_MAX};

		CHECK(split(overflow, 2, 10, sizes) == SPLIT_SUM_TOO_LARGE);
		CHECK(largest_remainder_check(overflow, 2) == SPLIT_SUM_TOO_LARGE);
		CHECK(split(halves, 2, 3, sizes) == SPLIT_OK && sizes[0] == 2 && sizes[1] == 1);
		/* DBL_MAX + 2^-1074 rounds to DBL_MAX, but it is more */
		CHECK(split(just_over, 2, 3, sizes) == SPLIT_SUM_TOO_LARGE);
		CHECK(split(max_and_zero, 2, 7, sizes) == SPLIT_OK && sizes[0] == 0 && sizes[1] == 7);
		CHECK(strcmp(split_status_message(SPLIT_SUM_TOO_LARGE),
					 "weights sum to more than the largest double") == 0);
	}

	/* bad input */
	{
		double		negative[2] = {1, -1};
		double		nan[2] = {1, NAN};
		double		inf[2] = {INFINITY, 1};
		double		none[2] = {0, 0};

		CHECK(split(negative, 2, 10, sizes) == SPLIT_BAD_WEIGHT);
		CHECK(split(nan, 2, 10, sizes) == SPLIT_BAD_WEIGHT);
		CHECK(split(inf, 2, 10, sizes) == SPLIT_BAD_WEIGHT);
		CHECK(split(none, 2, 10, sizes) == SPLIT_NO_WEIGHT);
		CHECK(largest_remainder_check(none, 2) == SPLIT_NO_WEIGHT);
		CHECK(split(two, 0, 10, sizes) == SPLIT_BAD_COUNT);
		CHECK(split(two, 2, -1, sizes) == SPLIT_BAD_TOTAL);
		CHECK(largest_remainder_check(two, 2) == SPLIT_OK);
	}

	/* weight_sum: exact, whatever the order */
	{
		weight_sum	a,
					b;

		weight_sum_init(&a);
		weight_sum_init(&b);
		weight_sum_add(&a, 1e308);
		weight_sum_add(&a, 7e307);
		CHECK(!weight_sum_too_large(&a));
		weight_sum_add(&a, 4.9e-324);
		CHECK(!weight_sum_too_large(&a));
		weight_sum_add(&b, DBL_MAX);
		CHECK(!weight_sum_too_large(&b));
		weight_sum_add(&b, 0);
		CHECK(!weight_sum_too_large(&b));
		weight_sum_add(&b, 4.9e-324);
		CHECK(weight_sum_too_large(&b));
	}

	/*
	 * Random weights: sizes sum to the total, each is the floor or the
	 * ceiling of its quota, and scaling every weight by the same power of
	 * two (exact) changes nothing.  tests/reference/largest_remainder
	 * checks the answers themselves against exact rational arithmetic.
	 */
	srand(7);
	for (int round = 0; round < 3000; round++)
	{
		double		w[8],
					scaled[8];
		int32_t		again[8];
		int32_t		n = 1 + rand() % 8;
		double		sum = 0;
		int32_t		total = rand() % 2 ? rand() % 100 : rand() % 1048577;
		int			shift = rand() % 1800 - 900;
		int64_t		got = 0;
		int			ok = 1;

		for (int32_t i = 0; i < n; i++)
		{
			/* small integers and halves tie often */
			w[i] = rand() % 3 ? (double) (rand() % 9) / (1 + rand() % 2) :
				(double) (rand() % 1000) / 7.0;
			sum += w[i];
		}
		if (sum == 0)
			sum += w[0] = 1;
		for (int32_t i = 0; i < n; i++)
			scaled[i] = ldexp(w[i], shift);
		CHECK(split(w, n, total, sizes) == SPLIT_OK);
		for (int32_t i = 0; i < n; i++)
		{
			double		q = (double) total * (w[i] / sum);

			got += sizes[i];
			if ((double) sizes[i] < q - 1.0000001 || (double) sizes[i] > q + 1.0000001)
				ok = 0;
		}
		CHECK(ok && got == total);
		CHECK(split(scaled, n, total, again) == SPLIT_OK);
		CHECK(sizes_are(again, n, sizes));
	}

	/* Many shards: the ranking is a heap, not a scan per slot left over. */
	{
		int32_t		n = 100000;
		double	   *w = malloc(sizeof(double) * (size_t) n);
		int32_t    *sz = malloc(sizeof(int32_t) * (size_t) n);
		int32_t    *scratch = malloc(sizeof(int32_t) * (size_t) n);
		int64_t		got = 0;
		int			ok = 1;

		for (int32_t i = 0; i < n; i++)
			w[i] = 1 + i % 3;

		/*
		 * The sum is 199,999: quotas 5.24, 10.49, 15.73; floors give
		 * 999,995, and of the 48,581 left all 33,333 weights 3 get one,
		 * then the first 15,248 weights 2.
		 */
		CHECK(largest_remainder_split(w, n, 1048576, sz, scratch) == SPLIT_OK);
		for (int32_t i = 0; i < n; i++)
		{
			int32_t		expected = i % 3 == 0 ? 5 : i % 3 == 2 ? 16 : i / 3 < 15248 ? 11 : 10;

			got += sz[i];
			if (sz[i] != expected)
				ok = 0;
		}
		CHECK(ok && got == 1048576);
		free(w);
		free(sz);
		free(scratch);
	}
}

/*
 * The vectors of tests/reference/largest_remainder (exact rational
 * arithmetic in Python): total,weights,sizes with the lists space
 * separated, sizes replaced by a status name when the split fails.
 * Printed per mismatch, counted as one check.
 */
static void
test_split_vectors(void)
{
	FILE	   *f = fopen("sql/data/largest_remainder.csv", "r");
	char		line[8192];
	long		rows = 0,
				bad = 0;

	CHECK(f != NULL);
	if (f == NULL)
		return;
	if (fgets(line, sizeof(line), f) == NULL)	/* header */
		line[0] = '\0';
	while (fgets(line, sizeof(line), f) != NULL)
	{
		double		w[64];
		int32_t		expected[64],
					got[64],
					scratch[64];
		int32_t		n = 0,
					m = 0;
		char	   *p = line;
		char	   *end;
		long		total = strtol(p, &end, 10);
		split_status want = SPLIT_OK,
					status;

		p = end + 1;			/* the comma */
		while (*p != ',' && n < 64)
		{
			w[n++] = strtod(p, &end);
			p = end;
			while (*p == ' ')
				p++;
		}
		p++;
		if (strncmp(p, "sum_too_large", 13) == 0)
			want = SPLIT_SUM_TOO_LARGE;
		else if (strncmp(p, "no_weight", 9) == 0)
			want = SPLIT_NO_WEIGHT;
		else if (strncmp(p, "bad_weight", 10) == 0)
			want = SPLIT_BAD_WEIGHT;
		else
			while (*p >= '0' && *p <= '9' && m < 64)
			{
				expected[m++] = (int32_t) strtol(p, &end, 10);
				p = end;
				while (*p == ' ')
					p++;
			}
		rows++;
		status = largest_remainder_split(w, n, (int32_t) total, got, scratch);
		if (status != want || (want == SPLIT_OK && (m != n || !sizes_are(got, n, expected))))
		{
			if (bad++ < 5)
				fprintf(stderr, "largest_remainder.csv row %ld: status %d, expected %d: %s",
						rows, (int) status, (int) want, line);
		}
	}
	fclose(f);
	CHECK(rows >= 1000);
	CHECK(bad == 0);
}

static void
test_map(void)
{
	size_t		cap = tenant_map_capacity(1000);
	tenant_map_entry *entries = calloc(cap, sizeof(tenant_map_entry));
	tenant_map	map;
	char		keys[1000][12];
	int			ok = 1;

	CHECK(cap == 2048);
	CHECK(tenant_map_capacity(0) == 16);
	tenant_map_init(&map, entries, cap, NULL, 0);
	CHECK(tenant_map_get(&map, 1, S("x")) == NULL);
	for (int i = 0; i < 1000; i++)
	{
		int			n = snprintf(keys[i], sizeof keys[i], "t%d", i);

		/* a weak hash on purpose: many collisions exercise the probing */
		CHECK(tenant_map_put(&map, (uint64_t) (i % 37), keys[i], (uint32_t) n, i) == 1);
	}
	CHECK(tenant_map_put(&map, 5, keys[5], (uint32_t) strlen(keys[5]), 555) == 0);
	CHECK(map.count == 1000);
	for (int i = 0; i < 1000; i++)
	{
		const tenant_map_entry *e = tenant_map_get(&map, (uint64_t) (i % 37), keys[i],
												   (uint32_t) strlen(keys[i]));

		if (e == NULL || e->value != (i == 5 ? 555 : i))
			ok = 0;
	}
	CHECK(ok);
	CHECK(tenant_map_get(&map, 3, S("t3x")) == NULL);
	CHECK(tenant_map_get(&map, 4, S("t3")) == NULL);

	/* removing every third key leaves the others found, in long clusters */
	CHECK(tenant_map_remove(&map, 3, S("t3x")) == 0);
	for (int i = 0; i < 1000; i += 3)
		CHECK(tenant_map_remove(&map, (uint64_t) (i % 37), keys[i], (uint32_t) strlen(keys[i])) == 1);
	CHECK(tenant_map_remove(&map, 0, keys[0], (uint32_t) strlen(keys[0])) == 0);
	CHECK(map.count == 1000 - 334);
	ok = 1;
	for (int i = 0; i < 1000; i++)
	{
		const tenant_map_entry *e = tenant_map_get(&map, (uint64_t) (i % 37), keys[i],
												   (uint32_t) strlen(keys[i]));

		if ((i % 3 == 0) != (e == NULL) || (e != NULL && e->value != (i == 5 ? 555 : i)))
			ok = 0;
	}
	CHECK(ok);
	/* and they can come back */
	CHECK(tenant_map_put(&map, 0, keys[0], (uint32_t) strlen(keys[0]), 7) == 1);
	CHECK(tenant_map_get(&map, 0, keys[0], (uint32_t) strlen(keys[0]))->value == 7);
	free(entries);
}

/*
 * Random puts and removals on a small map (16 entries, at most 8 keys),
 * with hashes crowded at the top so clusters wrap past the end: after
 * every operation the map holds exactly the keys a plain array says.
 */
static void
test_map_remove_random(void)
{
	tenant_map_entry entries[16];
	tenant_map	map;
	char		keys[24][8];
	uint64_t	hashes[24];
	int			present[24] = {0};
	int			count = 0;
	uint64_t	rng = 42;
	int			ok = 1;

	memset(entries, 0, sizeof entries);
	tenant_map_init(&map, entries, 16, NULL, 0);
	for (int i = 0; i < 24; i++)
	{
		snprintf(keys[i], sizeof keys[i], "k%d", i);
		hashes[i] = (uint64_t) (13 + i % 5);	/* homes 13 .. 17 = 1: wrap */
	}
	for (int op = 0; op < 20000 && ok; op++)
	{
		int			k;

		rng = rng * 6364136223846793005u + 1442695040888963407u;
		k = (int) ((rng >> 33) % 24);
		if (present[k] || count == 8)
		{
			if (tenant_map_remove(&map, hashes[k], keys[k], (uint32_t) strlen(keys[k])) != present[k])
				ok = 0;
			count -= present[k];
			present[k] = 0;
		}
		else
		{
			if (tenant_map_put(&map, hashes[k], keys[k], (uint32_t) strlen(keys[k]), k) != 1)
				ok = 0;
			present[k] = 1;
			count++;
		}
		if ((int) map.count != count)
			ok = 0;
		for (int i = 0; i < 24; i++)
		{
			const tenant_map_entry *e = tenant_map_get(&map, hashes[i], keys[i],
													   (uint32_t) strlen(keys[i]));

			if (present[i] != (e != NULL) || (e != NULL && e->value != i))
				ok = 0;
		}
	}
	CHECK(ok);
}

/*
 * With a filter: every key present is found (no false negatives), and
 * absent keys are mostly turned away by the filter alone.
 */
static void
test_map_filter(void)
{
	enum
	{
		N = 10000
	};
	size_t		cap = tenant_map_capacity(N);
	size_t		words = tenant_map_filter_words(N);
	tenant_map_entry *entries = calloc(cap, sizeof(tenant_map_entry));
	uint64_t   *filter = calloc(words, sizeof(uint64_t));
	static char keys[N][12];
	tenant_map	map;
	long		missing = 0;
	long		found = 0;
	long		passed = 0;

	CHECK(words * 64 >= (size_t) N * 16);
	CHECK(tenant_map_filter_words(0) == 1);
	CHECK(tenant_map_filter_words((size_t) 1 << 30) == ((size_t) 1 << 18));
	tenant_map_init(&map, entries, cap, filter, words);
	for (int i = 0; i < N; i++)
	{
		int			n = snprintf(keys[i], sizeof keys[i], "t%d", i);

		tenant_map_put(&map, xxh64_hash(keys[i], n, 0), keys[i], (uint32_t) n, i);
	}
	for (int i = 0; i < N; i++)
	{
		const tenant_map_entry *e = tenant_map_get(&map, xxh64_hash(keys[i], strlen(keys[i]), 0),
												   keys[i], (uint32_t) strlen(keys[i]));

		missing += e == NULL || e->value != i;
	}
	CHECK_EQ_I64(missing, 0);
	for (int i = 0; i < 100000; i++)
	{
		char		k[16];
		int			n = snprintf(k, sizeof k, "absent%d", i);
		uint64_t	h = xxh64_hash(k, n, 0);

		found += tenant_map_get(&map, h, k, (uint32_t) n) != NULL;
		passed += tenant_map_filter_has(&map, h);
	}
	CHECK_EQ_I64(found, 0);
	/* two bits at 16 bits a key: ~1.4% false positives; allow 3% */
	CHECK(passed < 3000);
	free(entries);
	free(filter);
}

void
unit_main(void)
{
	test_names();
	test_slots();
	test_bigint();
	test_uuid();
	test_split();
	test_split_vectors();
	test_map();
	test_map_remove_random();
	test_map_filter();
}
