/*
 * test_directory.c - slot methods, canonical tenants, largest-remainder
 * splits and the tenant map of the shard directory core
 */
#include <stdlib.h>
#include <string.h>

#include "directory.h"
#include "hash64.h"
#include "jump.h"
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

	/* Each method is the placement function of SPEC 2, nothing else. */
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

static void
test_split(void)
{
	int64_t		sizes[5];
	double		equal3[3] = {1, 1, 1};
	double		two[2] = {1, 1};
	double		skew[3] = {0.1, 0.2, 0.7};
	double		zero[3] = {1, 0, 1};
	double		bad[2] = {1, -1};
	double		none[2] = {0, 0};
	double		big[4] = {1e300, 1e300, 1, 3};

	/* SPEC 3: 3 equal shards of 16,384 slots get 5,462 / 5,461 / 5,461. */
	CHECK(largest_remainder_split(equal3, 3, 16384, sizes) == 0);
	CHECK(sizes[0] == 5462 && sizes[1] == 5461 && sizes[2] == 5461);
	CHECK(largest_remainder_split(two, 2, 3, sizes) == 0 && sizes[0] == 2 && sizes[1] == 1);
	CHECK(largest_remainder_split(skew, 3, 10, sizes) == 0);
	CHECK(sizes[0] == 1 && sizes[1] == 2 && sizes[2] == 7);
	CHECK(largest_remainder_split(zero, 3, 5, sizes) == 0);
	CHECK(sizes[0] == 3 && sizes[1] == 0 && sizes[2] == 2);
	CHECK(largest_remainder_split(equal3, 3, 1, sizes) == 0);
	CHECK(sizes[0] == 1 && sizes[1] == 0 && sizes[2] == 0);
	CHECK(largest_remainder_split(big, 4, 1048576, sizes) == 0);
	CHECK(sizes[0] + sizes[1] + sizes[2] + sizes[3] == 1048576 && sizes[0] == 524288);
	CHECK(largest_remainder_split(bad, 2, 10, sizes) == -1);
	CHECK(largest_remainder_split(none, 2, 10, sizes) == -1);

	/* Random weights: sizes sum to the total and each is floor or ceil. */
	srand(7);
	for (int round = 0; round < 2000; round++)
	{
		double		w[5];
		double		sum = 0;
		int64_t		total = rand() % 100000;
		int64_t		got = 0;
		int			ok = 1;

		for (int i = 0; i < 5; i++)
			sum += w[i] = (double) (rand() % 1000) / 7.0 + (i == 0);
		CHECK(largest_remainder_split(w, 5, total, sizes) == 0);
		for (int i = 0; i < 5; i++)
		{
			double		q = (double) total * (w[i] / sum);

			got += sizes[i];
			if ((double) sizes[i] < q - 1.0000001 || (double) sizes[i] > q + 1.0000001)
				ok = 0;
		}
		CHECK(ok && got == total);
	}
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
	free(entries);
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
	test_map();
	test_map_filter();
}
