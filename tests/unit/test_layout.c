/*
 * test_layout.c - the directory layout check (layout.h) and the shard
 * name lookup (shard_names.h)
 */
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "shard_names.h"
#include "unit.h"

#define S(str) str, sizeof(str) - 1

static void
test_layout(void)
{
	slot_method m;

	CHECK(directory_layout_check(1, S("xxh64"), &m) == LAYOUT_OK && m == SLOT_METHOD_XXH64);
	CHECK(directory_layout_check(DIRECTORY_MAX_SLOTS, S("jump"), &m) == LAYOUT_OK && m == SLOT_METHOD_JUMP);
	CHECK(directory_layout_check(16384, S("redis"), &m) == LAYOUT_OK && m == SLOT_METHOD_REDIS);
	CHECK(directory_layout_check(7, S("pg_hash"), &m) == LAYOUT_OK && m == SLOT_METHOD_PG_HASH);
	CHECK(directory_layout_check(0, S("xxh64"), &m) == LAYOUT_SLOT_COUNT);
	CHECK(directory_layout_check(-1, S("xxh64"), &m) == LAYOUT_SLOT_COUNT);
	CHECK(directory_layout_check(DIRECTORY_MAX_SLOTS + 1, S("xxh64"), &m) == LAYOUT_SLOT_COUNT);
	/* the count is checked first: a bad count with a bad method is a bad count */
	CHECK(directory_layout_check(0, S("nope"), &m) == LAYOUT_SLOT_COUNT);
	CHECK(directory_layout_check(64, S("XXH64"), &m) == LAYOUT_METHOD);
	CHECK(directory_layout_check(64, S(""), &m) == LAYOUT_METHOD);
	CHECK(directory_layout_check(16383, S("redis"), &m) == LAYOUT_REDIS_SLOTS);
	CHECK(directory_layout_check(16385, S("redis"), &m) == LAYOUT_REDIS_SLOTS);
}

static void
test_shard_names(void)
{
	const char *names[] = {"a", "b", "shard-10", "shard-1", ""};
	size_t		capacity = shard_names_capacity(5);
	tenant_map_entry *entries = calloc(capacity, sizeof(tenant_map_entry));
	shard_names map;

	shard_names_init(&map, entries, capacity);
	CHECK_EQ_I64(shard_names_find(&map, S("a")), -1);
	for (int i = 0; i < 5; i++)
		CHECK(shard_names_add(&map, names[i], (uint32_t) strlen(names[i]), i) == 1);
	CHECK(shard_names_add(&map, S("b"), 1) == 0);	/* a repeat */
	CHECK_EQ_I64(shard_names_find(&map, S("shard-1")), 3);
	CHECK_EQ_I64(shard_names_find(&map, S("shard-1")), 3);	/* the last one found */
	CHECK_EQ_I64(shard_names_find(&map, S("shard-10")), 2);
	CHECK_EQ_I64(shard_names_find(&map, S("shard-")), -1);	/* a prefix is not a name */
	CHECK_EQ_I64(shard_names_find(&map, S("shard-100")), -1);
	CHECK_EQ_I64(shard_names_find(&map, S("")), 4);
	CHECK_EQ_I64(shard_names_find(&map, S("a")), 0);
	CHECK_EQ_I64(shard_names_find(&map, S("A")), -1);
	/* a replaced index is not answered from the last lookup */
	CHECK_EQ_I64(shard_names_find(&map, S("b")), 1);
	CHECK(shard_names_add(&map, S("b"), 9) == 0);
	CHECK_EQ_I64(shard_names_find(&map, S("b")), 9);
	free(entries);
}

void
unit_main(void)
{
	test_layout();
	test_shard_names();
}
