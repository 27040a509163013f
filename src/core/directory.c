/*
 * directory.c - slot methods, slots and the tenant map (canonical tenants
 * are tenant_text.c)
 *
 * The pure parts of the shard directory: everything here is a function of
 * its arguments, so the routing cache and the unit tests share it.
 */
#include "directory.h"

#include <string.h>

#include "hash64.h"
#include "jump.h"
#include "names.h"
#include "redis_slot.h"

static const char *const method_names[] = {"xxh64", "jump", "redis", "pg_hash"};

NAME_TABLE_FUNCTIONS(slot_method, slot_method_parse, slot_method_name, method_names)

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
