/*
 * test_step_index.c - the step index of the routing cache: the merge sort
 * against qsort, its bounded pieces, and the precedence rules
 */
#include <stdlib.h>
#include <string.h>

#include "directory.h"
#include "hash64.h"
#include "step_index.h"
#include "unit.h"

#define S(str) str, sizeof(str) - 1

static int
compare_for_qsort(const void *a, const void *b)
{
	int			c = step_ref_compare(a, b);

	/* qsort is not stable: equal keys are ordered by value to compare */
	if (c == 0)
		c = ((const step_ref *) a)->value - ((const step_ref *) b)->value;
	return c;
}

static step_ref *
sorted_in_pieces(step_ref *refs, step_ref *scratch, size_t count, size_t budget, int *pieces)
{
	step_sort	sort;

	*pieces = 0;
	step_sort_begin(&sort, refs, scratch, count);
	do
		(*pieces)++;
	while (!step_sort_continue(&sort, budget));
	return step_sort_result(&sort);
}

/* The merge sort agrees with qsort, stable, for every size and budget. */
static void
test_sort(void)
{
	size_t		sizes[] = {0, 1, 2, 3, 7, 64, 1000, 80000};

	for (size_t n = 0; n < sizeof(sizes) / sizeof(sizes[0]); n++)
	{
		size_t		count = sizes[n];
		step_ref   *refs = calloc(count + 1, sizeof(step_ref));
		step_ref   *scratch = calloc(count + 1, sizeof(step_ref));
		step_ref   *expected = calloc(count + 1, sizeof(step_ref));
		step_ref   *result;
		int			pieces;
		int			same = 1;

		for (size_t i = 0; i < count; i++)
		{
			refs[i].slot = unit_random() % 5 == 0 ? -1 : (int32_t) (unit_random() % 500);
			refs[i].migration = (int64_t) (unit_random() % 3);
			refs[i].step = (int32_t) (unit_random() % 4);
			refs[i].value = (int32_t) i;
		}
		memcpy(expected, refs, count * sizeof(step_ref));
		qsort(expected, count, sizeof(step_ref), compare_for_qsort);
		result = sorted_in_pieces(refs, scratch, count, count < 100 ? 1 : 4096, &pieces);
		for (size_t i = 0; i < count; i++)
			same &= result[i].value == expected[i].value;
		CHECK(same);
		/* bounded pieces: a budget of 4,096 merges at most ~2 x 4,096 a call */
		if (count == 80000)
			CHECK(pieces > 80000 * 17 / 8192);
		free(refs);
		free(scratch);
		free(expected);
	}
}

static void
set_tenant(step_ref *r, const char *tenant)
{
	r->slot = -1;
	r->tenant = tenant;
	r->tenant_len = (uint32_t) strlen(tenant);
	r->tenant_hash = xxh64_hash(tenant, r->tenant_len, 0);
}

/* Tenant step first; a pinned tenant ignores its slot's step; the oldest wins. */
static void
test_precedence(void)
{
	step_ref	refs[6];
	step_ref	scratch[6];
	step_ref   *sorted;
	step_sort	sort;
	step_index	index;
	tenant_map_entry entries[16];
	const step_ref *r;
	uint64_t	h_acme = xxh64_hash(S("acme"), 0);
	uint64_t	h_beta = xxh64_hash(S("beta"), 0);

	memset(refs, 0, sizeof(refs));
	memset(entries, 0, sizeof(entries));
	refs[0] = (step_ref) {.migration = 7, .step = 2, .slot = 5, .value = 0};
	refs[1] = (step_ref) {.migration = 3, .step = 9, .slot = 5, .value = 1};
	refs[2] = (step_ref) {.migration = 3, .step = 1, .slot = 9, .value = 2};
	refs[3] = (step_ref) {.migration = 4, .step = 1, .value = 3};
	set_tenant(&refs[3], "acme");
	refs[4] = (step_ref) {.migration = 2, .step = 8, .value = 4};
	set_tenant(&refs[4], "acme");
	refs[5] = (step_ref) {.migration = 2, .step = 1, .value = 5};
	set_tenant(&refs[5], "gamma");

	step_sort_begin(&sort, refs, scratch, 6);
	while (!step_sort_continue(&sort, 1))
		;
	sorted = step_sort_result(&sort);
	CHECK_EQ_I64(step_index_tenant_steps(sorted, 6), 3);
	step_index_init(&index, sorted, 6, entries, tenant_map_capacity(3), NULL, 0);
	CHECK_EQ_I64(index.nslot, 3);
	CHECK_EQ_I64(step_index_add_tenants(&index, 0, 2), 0);
	CHECK_EQ_I64(step_index_add_tenants(&index, 2, 3), 1);

	/* acme has two tenant steps: migration 2's wins, over its slot's step */
	r = step_index_lookup(&index, h_acme, S("acme"), 5, 0);
	CHECK(r != NULL && r->value == 4);
	r = step_index_lookup(&index, h_acme, S("acme"), 5, 1);
	CHECK(r != NULL && r->value == 4);
	/* slot 5 has two steps: migration 3's wins */
	r = step_index_lookup(&index, h_beta, S("beta"), 5, 0);
	CHECK(r != NULL && r->value == 1);
	/* a pinned tenant does not move with its slot */
	CHECK(step_index_lookup(&index, h_beta, S("beta"), 5, 1) == NULL);
	r = step_index_lookup(&index, h_beta, S("beta"), 9, 0);
	CHECK(r != NULL && r->value == 2);
	CHECK(step_index_lookup(&index, h_beta, S("beta"), 6, 0) == NULL);
	CHECK(step_index_lookup(&index, h_beta, S("beta"), 10, 0) == NULL);
	CHECK(step_index_lookup(&index, h_beta, S("beta"), 0, 0) == NULL);
}

static void
test_empty(void)
{
	step_index	index;
	tenant_map_entry entries[16];

	memset(entries, 0, sizeof(entries));
	step_index_init(&index, NULL, 0, entries, tenant_map_capacity(0), NULL, 0);
	CHECK(step_index_lookup(&index, 0, S("x"), 0, 0) == NULL);
}

static void
test_canonical(void)
{
	CHECK(tenant_is_canonical(KEY_TYPE_TEXT, S(" any text ")));
	CHECK(tenant_is_canonical(KEY_TYPE_BIGINT, S("-42")));
	CHECK(!tenant_is_canonical(KEY_TYPE_BIGINT, S("+42")));
	CHECK(!tenant_is_canonical(KEY_TYPE_BIGINT, S(" 42")));
	CHECK(!tenant_is_canonical(KEY_TYPE_BIGINT, S("042")));
	CHECK(!tenant_is_canonical(KEY_TYPE_BIGINT, S("x")));
	CHECK(tenant_is_canonical(KEY_TYPE_UUID, S("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")));
	CHECK(!tenant_is_canonical(KEY_TYPE_UUID, S("A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11")));
	CHECK(!tenant_is_canonical(KEY_TYPE_UUID, S("a0eebc999c0b4ef8bb6d6bb9bd380a11")));
}

void
unit_main(void)
{
	test_sort();
	test_precedence();
	test_empty();
	test_canonical();
}
