/*
 * redis_slot.h - Redis Cluster's HASH_SLOT, hash tags included
 */
#ifndef CHASH_CORE_REDIS_SLOT_H
#define CHASH_CORE_REDIS_SLOT_H

#include <stddef.h>
#include <stdint.h>

#define REDIS_CLUSTER_SLOTS 16384

/*
 * The part of a key Redis hashes: the bytes between the first '{' and the
 * first '}' after it when there is at least one, else the whole key.
 */
void		redis_hash_tag(const char *key, size_t len,
								 const char **tag, size_t *tag_len);

/* CRC16 of the hash tag mod 16384. */
int			redis_cluster_slot(const char *key, size_t len);

#endif
