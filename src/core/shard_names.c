/*
 * shard_names.c - shard name to index (shard_names.h)
 */
#include "shard_names.h"

#include <string.h>

#include "hash64.h"

size_t
shard_names_capacity(size_t count)
{
	return tenant_map_capacity(count);
}

void
shard_names_init(shard_names *names, tenant_map_entry *entries, size_t capacity)
{
	tenant_map_init(&names->map, entries, capacity, NULL, 0);
	names->last = NULL;
	names->last_len = 0;
	names->last_index = -1;
}

int
shard_names_add(shard_names *names, const char *name, uint32_t len, int32_t index)
{
	names->last = NULL;			/* an index may have changed */
	return tenant_map_put(&names->map, xxh64_hash(name, len, 0), name, len, index);
}

int32_t
shard_names_find(shard_names *names, const char *name, uint32_t len)
{
	const tenant_map_entry *e;

	if (names->last != NULL && names->last_len == len && memcmp(names->last, name, len) == 0)
		return names->last_index;
	e = tenant_map_get(&names->map, xxh64_hash(name, len, 0), name, len);
	if (e == NULL)
		return -1;
	names->last = e->key;
	names->last_len = e->len;
	names->last_index = e->value;
	return e->value;
}
