/*
 * redis_slot.c - Redis Cluster's key slot (cluster.c keyHashSlot)
 */
#include "redis_slot.h"

#include <string.h>

#include "crc16.h"

void
redis_hash_tag(const char *key, size_t len, const char **tag, size_t *tag_len)
{
	const char *open = memchr(key, '{', len);

	*tag = key;
	*tag_len = len;
	if (open != NULL)
	{
		size_t		start = (size_t) (open - key) + 1;
		const char *close = memchr(key + start, '}', len - start);

		/* "{}" hashes the whole key: the tag must not be empty. */
		if (close != NULL && close > key + start)
		{
			*tag = key + start;
			*tag_len = (size_t) (close - (key + start));
		}
	}
}

int
redis_cluster_slot(const char *key, size_t len)
{
	const char *tag;
	size_t		tag_len;

	redis_hash_tag(key, len, &tag, &tag_len);
	return crc16_xmodem(tag, tag_len) & (REDIS_CLUSTER_SLOTS - 1);
}
