/*
 * directory.c - slots, canonical tenants and the tenant map
 *
 * The pure parts of the shard directory: everything here is a function of
 * its arguments, so the routing cache and the unit tests share it.
 */
#include "directory.h"

#include <string.h>

#include "hash64.h"
#include "jump.h"
#include "redis_slot.h"

static const char *const method_names[] = {"xxh64", "jump", "redis", "pg_hash"};
static const char *const type_names[] = {"text", "bigint", "uuid"};

static int
parse_name(const char *const *names, int count, const char *name, size_t len)
{
	for (int i = 0; i < count; i++)
		if (strlen(names[i]) == len && memcmp(names[i], name, len) == 0)
			return i;
	return -1;
}

int
slot_method_parse(const char *name, size_t len, slot_method *method)
{
	int			i = parse_name(method_names, 4, name, len);

	if (i < 0)
		return -1;
	*method = (slot_method) i;
	return 0;
}

int
key_type_parse(const char *name, size_t len, key_type *type)
{
	int			i = parse_name(type_names, 3, name, len);

	if (i < 0)
		return -1;
	*type = (key_type) i;
	return 0;
}

const char *
slot_method_name(slot_method method)
{
	return method_names[method];
}

const char *
key_type_name(key_type type)
{
	return type_names[type];
}

int32_t
directory_text_slot(slot_method method, const char *tenant, size_t len,
					uint64_t xxh, int32_t slot_count)
{
	switch (method)
	{
		case SLOT_METHOD_JUMP:
			return jump_consistent_hash(xxh, slot_count);
		case SLOT_METHOD_REDIS:
			return redis_cluster_slot(tenant, len);
		default:
			return (int32_t) (xxh % (uint64_t) slot_count);
	}
}

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

int
tenant_is_canonical(key_type type, const char *text, size_t len)
{
	char		buf[CANONICAL_UUID_LEN];
	int64_t		value;
	uint8_t		uuid[16];

	switch (type)
	{
		case KEY_TYPE_BIGINT:
			return bigint_tenant_parse(text, len, &value) == TENANT_OK &&
				bigint_tenant_format(value, buf) == len && memcmp(buf, text, len) == 0;
		case KEY_TYPE_UUID:
			if (len != CANONICAL_UUID_LEN || uuid_tenant_parse(text, len, uuid) != TENANT_OK)
				return 0;
			uuid_tenant_format(uuid, buf);
			return memcmp(buf, text, len) == 0;
		default:
			return 1;
	}
}

size_t
tenant_map_capacity(size_t count)
{
	size_t		capacity = 16;

	while (capacity < count * 2)
		capacity *= 2;
	return capacity;
}

size_t
tenant_map_filter_words(size_t count)
{
	size_t		words = 1;

	/* 16 bits a key: about 1.4% of absent keys pass the two-bit test. */
	while (words * 64 < count * 16 && words < ((size_t) 1 << 18))
		words *= 2;
	return words;
}

void
tenant_map_init(tenant_map *map, tenant_map_entry *entries, size_t capacity,
				uint64_t *filter, size_t filter_words)
{
	map->entries = entries;
	map->mask = (uint32_t) (capacity - 1);
	map->count = 0;
	map->filter = filter;
	map->filter_mask = filter ? (uint32_t) (filter_words * 64 - 1) : 0;
}

int
tenant_map_put(tenant_map *map, uint64_t hash, const char *key, uint32_t len, int32_t value)
{
	for (uint32_t i = (uint32_t) hash & map->mask;; i = (i + 1) & map->mask)
	{
		tenant_map_entry *e = &map->entries[i];

		if (e->key == NULL)
		{
			if (map->filter != NULL)
				for (int which = 0; which < 2; which++)
				{
					uint32_t	bit = tenant_map_filter_bit(map, hash, which);

					map->filter[bit / 64] |= UINT64_C(1) << (bit % 64);
				}
			e->hash = hash;
			e->key = key;
			e->len = len;
			e->value = value;
			map->count++;
			return 1;
		}
		if (e->hash == hash && e->len == len && memcmp(e->key, key, len) == 0)
		{
			e->value = value;
			return 0;
		}
	}
}

int
tenant_map_remove(tenant_map *map, uint64_t hash, const char *key, uint32_t len)
{
	uint32_t	i;

	if (map->count == 0)
		return 0;
	for (i = (uint32_t) hash & map->mask;; i = (i + 1) & map->mask)
	{
		tenant_map_entry *e = &map->entries[i];

		if (e->key == NULL)
			return 0;
		if (e->hash == hash && e->len == len && memcmp(e->key, key, len) == 0)
			break;
	}

	/*
	 * Backward-shift deletion: move up every later entry of the cluster
	 * whose home is not between the hole and it, so probes never meet a
	 * hole before their key.  The filter keeps the key's bits (it may only
	 * err towards "maybe").
	 */
	for (uint32_t j = (i + 1) & map->mask;; j = (j + 1) & map->mask)
	{
		tenant_map_entry *e = &map->entries[j];
		uint32_t	home;

		if (e->key == NULL)
			break;
		home = (uint32_t) e->hash & map->mask;
		if (((j - home) & map->mask) >= ((j - i) & map->mask))
		{
			map->entries[i] = *e;
			i = j;
		}
	}
	map->entries[i].key = NULL;
	map->count--;
	return 1;
}
