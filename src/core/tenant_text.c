/*
 * tenant_text.c - canonical tenant text per key type (tenant_text.h)
 *
 * The parsers accept what PostgreSQL's int8 and uuid input functions
 * accept, so a tenant routes the same as its column's value cast to text.
 */
#include "tenant_text.h"

#include <string.h>

#include "names.h"

static const char *const type_names[] = {"text", "bigint", "uuid"};

NAME_TABLE_FUNCTIONS(key_type, key_type_parse, key_type_name, type_names)

/* isspace() in the C locale, as int8in's scanner uses it. */
static int
is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

tenant_status
bigint_tenant_parse(const char *text, size_t len, int64_t *value)
{
	size_t		i = 0;
	int			negative = 0;
	uint64_t	magnitude = 0;
	size_t		digits = 0;

	while (i < len && is_space(text[i]))
		i++;
	if (i < len && (text[i] == '-' || text[i] == '+'))
		negative = text[i++] == '-';
	for (; i < len && text[i] >= '0' && text[i] <= '9'; i++, digits++)
	{
		uint64_t	d = (uint64_t) (text[i] - '0');

		if (magnitude > (UINT64_C(9223372036854775808) - d) / 10)
		{
			/* keep scanning: garbage later makes it invalid, not out of range */
			magnitude = UINT64_MAX;
			continue;
		}
		if (magnitude != UINT64_MAX)
			magnitude = magnitude * 10 + d;
	}
	while (i < len && is_space(text[i]))
		i++;
	if (digits == 0 || i != len)
		return TENANT_INVALID;
	if (magnitude == UINT64_MAX ||
		magnitude > (negative ? UINT64_C(9223372036854775808) : UINT64_C(9223372036854775807)))
		return TENANT_OUT_OF_RANGE;
	*value = negative ? (int64_t) (0 - magnitude) : (int64_t) magnitude;
	return TENANT_OK;
}

size_t
bigint_tenant_format(int64_t value, char out[CANONICAL_BIGINT_MAX])
{
	char		buf[CANONICAL_BIGINT_MAX];
	uint64_t	m = value < 0 ? 0 - (uint64_t) value : (uint64_t) value;
	size_t		n = 0;
	size_t		len = 0;

	do
	{
		buf[n++] = (char) ('0' + m % 10);
		m /= 10;
	} while (m != 0);
	if (value < 0)
		out[len++] = '-';
	while (n > 0)
		out[len++] = buf[--n];
	return len;
}

static int
hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

tenant_status
uuid_tenant_parse(const char *text, size_t len, uint8_t uuid[16])
{
	size_t		i = 0;
	int			braces = 0;

	if (len > 0 && text[0] == '{')
	{
		braces = 1;
		i++;
	}
	for (int b = 0; b < 16; b++)
	{
		int			hi,
					lo;

		if (i + 2 > len)
			return TENANT_INVALID;
		hi = hex_value(text[i]);
		lo = hex_value(text[i + 1]);
		if (hi < 0 || lo < 0)
			return TENANT_INVALID;
		uuid[b] = (uint8_t) (hi << 4 | lo);
		i += 2;
		/* uuid_in: a hyphen may follow every second byte but the last */
		if (i < len && text[i] == '-' && b % 2 == 1 && b < 15)
			i++;
	}
	if (braces)
	{
		if (i >= len || text[i] != '}')
			return TENANT_INVALID;
		i++;
	}
	return i == len ? TENANT_OK : TENANT_INVALID;
}

void
uuid_tenant_format(const uint8_t uuid[16], char out[CANONICAL_UUID_LEN])
{
	static const char hex[] = "0123456789abcdef";
	size_t		len = 0;

	for (int i = 0; i < 16; i++)
	{
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[len++] = '-';
		out[len++] = hex[uuid[i] >> 4];
		out[len++] = hex[uuid[i] & 15];
	}
}

tenant_status
tenant_canonicalize(key_type type, const char *text, size_t len, canonical_tenant *out)
{
	tenant_status status = TENANT_OK;

	switch (type)
	{
		case KEY_TYPE_BIGINT:
			status = bigint_tenant_parse(text, len, &out->bigint);
			if (status == TENANT_OK)
			{
				out->len = bigint_tenant_format(out->bigint, out->buf);
				out->data = out->buf;
			}
			break;
		case KEY_TYPE_UUID:
			status = uuid_tenant_parse(text, len, out->uuid);
			if (status == TENANT_OK)
			{
				uuid_tenant_format(out->uuid, out->buf);
				out->len = CANONICAL_UUID_LEN;
				out->data = out->buf;
			}
			break;
		default:
			out->data = text;
			out->len = len;
			break;
	}
	return status;
}

int
tenant_is_canonical(key_type type, const char *text, size_t len)
{
	canonical_tenant c;

	return tenant_canonicalize(type, text, len, &c) == TENANT_OK &&
		c.len == len && memcmp(c.data, text, len) == 0;
}
