/*
 * directory.h - the server-free parts of the shard directory (docs/directory.md)
 *
 * Slot computation per slot method and the
 * open-addressing tenant map the routing cache uses for overrides (the
 * split of slots by weight is largest_remainder.h).  Memory always comes
 * from the caller; failures are status codes.
 */
#ifndef CHASH_CORE_DIRECTORY_H
#define CHASH_CORE_DIRECTORY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tenant_text.h"

#define DIRECTORY_MAX_SLOTS 1048576

typedef enum slot_method
{
	SLOT_METHOD_XXH64 = 0,
	SLOT_METHOD_JUMP = 1,
	SLOT_METHOD_REDIS = 2,
	SLOT_METHOD_PG_HASH = 3		/* needs the server's hash functions */
} slot_method;

/* Parse a slot method's name ("xxh64", "jump", ...): 0 or -1. */
int			slot_method_parse(const char *name, size_t len, slot_method *method);
const char *slot_method_name(slot_method method);

/*
 * The slot of a tenant's canonical text for the methods that hash text
 * (not SLOT_METHOD_PG_HASH).  xxh is XXH64(text, 0), which the caller has
 * usually computed already for the override lookup.
 */
int32_t		directory_text_slot(slot_method method, const char *tenant, size_t len,
								uint64_t xxh, int32_t slot_count);

/*
 * tenant_map: open addressing on a 64-bit key hash, load factor <= 1/2.
 * Keys are byte strings owned by the caller; values are int32.
 *
 * An optional filter (two bits per key, ~16 bits of filter per key) answers
 * most lookups of absent keys from a few kilobytes that stay in cache: a
 * routing lookup is mostly of a tenant that is not pinned, and probing a
 * large table for it costs a cache miss (about 18 ns a row with 10,000
 * pins, against 56 for the whole route).
 */
typedef struct tenant_map_entry
{
	uint64_t	hash;
	const char *key;			/* NULL: empty */
	uint32_t	len;
	int32_t		value;
} tenant_map_entry;

typedef struct tenant_map
{
	tenant_map_entry *entries;
	uint64_t   *filter;			/* NULL: no filter */
	uint32_t	filter_mask;	/* filter bits - 1; bits are a power of 2 */
	uint32_t	mask;			/* capacity - 1; capacity is a power of 2 */
	uint32_t	count;
} tenant_map;

/* Entries needed to hold count keys. */
size_t		tenant_map_capacity(size_t count);

/* 64-bit words of filter for count keys (0 .. 2^18 words). */
size_t		tenant_map_filter_words(size_t count);

/*
 * entries: zeroed memory of tenant_map_capacity(count) entries; filter:
 * NULL, or zeroed memory of tenant_map_filter_words(count) words.
 */
void		tenant_map_init(tenant_map *map, tenant_map_entry *entries, size_t capacity,
							uint64_t *filter, size_t filter_words);

/* Inserts or replaces; returns 1 when the key was new, 0 when replaced. */
int			tenant_map_put(tenant_map *map, uint64_t hash, const char *key, uint32_t len,
						   int32_t value);

/* Removes a key; returns 1 when it was there, 0 when not. */
int			tenant_map_remove(tenant_map *map, uint64_t hash, const char *key, uint32_t len);

/* Filter bit `which` (0 or 1) of a hash: from bits 40..63 and 16..39,
 * independent of each other and of the table index (the low bits). */
static inline uint32_t
tenant_map_filter_bit(const tenant_map *map, uint64_t hash, int which)
{
	return (uint32_t) (hash >> (which ? 16 : 40)) & map->filter_mask;
}

/* Whether both filter bits of a hash are set. */
static inline int
tenant_map_filter_has(const tenant_map *map, uint64_t hash)
{
	uint32_t	a = tenant_map_filter_bit(map, hash, 0);
	uint32_t	b = tenant_map_filter_bit(map, hash, 1);

	return (map->filter[a / 64] >> (a % 64)) & (map->filter[b / 64] >> (b % 64)) & 1;
}

/* The key's entry, or NULL. */
static inline const tenant_map_entry *
tenant_map_get(const tenant_map *map, uint64_t hash, const char *key, uint32_t len)
{
	uint32_t	i;

	if (map->count == 0)
		return NULL;
	if (map->filter != NULL && !tenant_map_filter_has(map, hash))
		return NULL;
	for (i = (uint32_t) hash & map->mask;; i = (i + 1) & map->mask)
	{
		const tenant_map_entry *e = &map->entries[i];

		if (e->key == NULL)
			return NULL;
		if (e->hash == hash && e->len == len && memcmp(e->key, key, len) == 0)
			return e;
	}
}

#endif
