/*
 * tenant_text.h - a tenant's canonical text for a directory's key type
 * (docs/directory.md, "Tenants")
 *
 * Every place that turns a tenant into the bytes routing hashes and the
 * tables store calls tenant_canonicalize: routing, chash_tenant_canonical,
 * the directory loader's row check, the output plugin's filter and the
 * guard (through routing).  A bigint is its plain decimal, a uuid its
 * lower-case 8-4-4-4-12 hex, a text tenant its own bytes.
 */
#ifndef CHASH_CORE_TENANT_TEXT_H
#define CHASH_CORE_TENANT_TEXT_H

#include <stddef.h>
#include <stdint.h>

typedef enum key_type
{
	KEY_TYPE_TEXT = 0,
	KEY_TYPE_BIGINT = 1,
	KEY_TYPE_UUID = 2
} key_type;

/* "text", "bigint", "uuid": 0 or -1. */
int			key_type_parse(const char *name, size_t len, key_type *type);
const char *key_type_name(key_type type);

/* Longest canonical bigint ("-9223372036854775808") and uuid text. */
#define CANONICAL_BIGINT_MAX 20
#define CANONICAL_UUID_LEN 36

typedef enum tenant_status
{
	TENANT_OK = 0,
	TENANT_INVALID = -1,
	TENANT_OUT_OF_RANGE = -2
} tenant_status;

/*
 * A bigint tenant as PostgreSQL's int8 input accepts it: optional
 * surrounding white space, an optional sign, decimal digits.
 */
tenant_status bigint_tenant_parse(const char *text, size_t len, int64_t *value);

/* Plain decimal of value into out (no NUL); returns its length. */
size_t		bigint_tenant_format(int64_t value, char out[CANONICAL_BIGINT_MAX]);

/*
 * A uuid tenant as PostgreSQL's uuid input accepts it: 32 hex digits, in
 * either case, optionally in braces, with an optional hyphen after any
 * group of four digits but the last.
 */
tenant_status uuid_tenant_parse(const char *text, size_t len, uint8_t uuid[16]);

/* Lower-case hex with hyphens 8-4-4-4-12 (no NUL). */
void		uuid_tenant_format(const uint8_t uuid[16], char out[CANONICAL_UUID_LEN]);

/* A tenant in its canonical form, with its typed value for 'pg_hash'. */
typedef struct canonical_tenant
{
	const char *data;			/* the input (text) or buf */
	size_t		len;
	int64_t		bigint;			/* KEY_TYPE_BIGINT */
	uint8_t		uuid[16];		/* KEY_TYPE_UUID */
	char		buf[CANONICAL_UUID_LEN];
} canonical_tenant;

/*
 * The canonical form of text as a tenant of the key type; out->data points
 * into text (a text tenant) or into out->buf.  TENANT_INVALID or
 * TENANT_OUT_OF_RANGE when text is not of the type (out undefined).
 */
tenant_status tenant_canonicalize(key_type type, const char *text, size_t len,
								  canonical_tenant *out);

/*
 * Whether text is a tenant of the key type in its canonical form, as the
 * tables store tenants (a row in another form would never be matched).
 */
int			tenant_is_canonical(key_type type, const char *text, size_t len);

#endif
