/*
 * test_tenant_text.c - the canonical tenant text of each key type
 * (tenant_text.h); the parsers' own vectors are in test_directory.c
 */
#include <string.h>

#include "tenant_text.h"
#include "unit.h"

#define S(str) str, sizeof(str) - 1

/* Whether text canonicalizes to expected (a NUL-terminated string). */
static int
canonical_is(key_type type, const char *text, size_t len, const char *expected)
{
	canonical_tenant c;

	return tenant_canonicalize(type, text, len, &c) == TENANT_OK &&
		c.len == strlen(expected) && memcmp(c.data, expected, c.len) == 0;
}

static void
test_canonicalize(void)
{
	canonical_tenant c;
	const char	text[] = " 042 ";

	/* text: the bytes themselves, not a copy */
	CHECK(tenant_canonicalize(KEY_TYPE_TEXT, S(" 042 "), &c) == TENANT_OK && c.len == 5);
	CHECK(tenant_canonicalize(KEY_TYPE_TEXT, text, 5, &c) == TENANT_OK && c.data == text);
	CHECK(canonical_is(KEY_TYPE_BIGINT, S(" +042\n"), "42"));
	CHECK(tenant_canonicalize(KEY_TYPE_BIGINT, S("-9223372036854775808"), &c) == TENANT_OK &&
		  c.bigint == INT64_MIN && c.data == c.buf && c.len == 20);
	CHECK(tenant_canonicalize(KEY_TYPE_BIGINT, S("9223372036854775808"), &c) == TENANT_OUT_OF_RANGE);
	CHECK(tenant_canonicalize(KEY_TYPE_BIGINT, S("4x"), &c) == TENANT_INVALID);
	CHECK(canonical_is(KEY_TYPE_UUID, S("{A0EEBC999C0B4EF8BB6D6BB9BD380A11}"),
					   "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"));
	CHECK(tenant_canonicalize(KEY_TYPE_UUID, S("A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"), &c) == TENANT_OK &&
		  c.uuid[0] == 0xa0 && c.uuid[15] == 0x11);
	CHECK(tenant_canonicalize(KEY_TYPE_UUID, S("a0eebc99"), &c) == TENANT_INVALID);
}

static void
test_is_canonical(void)
{
	CHECK(tenant_is_canonical(KEY_TYPE_TEXT, S(" anything ")));
	CHECK(tenant_is_canonical(KEY_TYPE_BIGINT, S("-7")));
	CHECK(!tenant_is_canonical(KEY_TYPE_BIGINT, S("+7")));
	CHECK(!tenant_is_canonical(KEY_TYPE_BIGINT, S("07")));
	CHECK(!tenant_is_canonical(KEY_TYPE_BIGINT, S("7 ")));
	CHECK(!tenant_is_canonical(KEY_TYPE_BIGINT, S("x")));
	CHECK(tenant_is_canonical(KEY_TYPE_UUID, S("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")));
	CHECK(!tenant_is_canonical(KEY_TYPE_UUID, S("A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11")));
	CHECK(!tenant_is_canonical(KEY_TYPE_UUID, S("a0eebc999c0b4ef8bb6d6bb9bd380a11")));
}

static void
test_key_types(void)
{
	key_type	t;

	CHECK(key_type_parse(S("text"), &t) == 0 && t == KEY_TYPE_TEXT);
	CHECK(key_type_parse(S("bigint"), &t) == 0 && t == KEY_TYPE_BIGINT);
	CHECK(key_type_parse(S("uuid "), &t) == -1);
	CHECK(strcmp(key_type_name(KEY_TYPE_UUID), "uuid") == 0);
}

void
unit_main(void)
{
	test_canonicalize();
	test_is_canonical();
	test_key_types();
}
