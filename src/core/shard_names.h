/*
 * shard_names.h - a directory's shard names to their index
 *
 * The one lookup from a shard name in a row (a slot's owner, an
 * override's shard, a step's target) to the shard's index: the routing
 * cache's loader and catch-up and the planner's reading of slot owners.
 * Names are byte strings owned by the caller.  Rows of slots mostly come
 * in runs of one owner, so the last name found is tried first.
 */
#ifndef CHASH_CORE_SHARD_NAMES_H
#define CHASH_CORE_SHARD_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "directory.h"

typedef struct shard_names
{
	tenant_map	map;
	const char *last;			/* the last name found, NULL: none */
	uint32_t	last_len;
	int32_t		last_index;
} shard_names;

/* Entries needed for count shards (zeroed memory for shard_names_init). */
size_t		shard_names_capacity(size_t count);

void		shard_names_init(shard_names *names, tenant_map_entry *entries, size_t capacity);

/*
 * Adds a name with its index; 0 when the name was there already (its index
 * is then replaced), 1 when new.  The map must have room (capacity for the
 * count of names).
 */
int			shard_names_add(shard_names *names, const char *name, uint32_t len, int32_t index);

/* The index of a name, or -1 when it is not a shard's. */
int32_t		shard_names_find(shard_names *names, const char *name, uint32_t len);

#endif
