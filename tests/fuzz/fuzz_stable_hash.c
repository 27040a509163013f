/*
 * fuzz_stable_hash.c - libFuzzer target for the stable hashes and jump
 *
 * Checks invariants on arbitrary bytes rather than known answers: the
 * sliced CRC equals the bytewise definition, a Redis slot is the CRC of a
 * tag that lies inside the key, only the empty key gets the minimum
 * Cassandra token, and jump stays in range and moves keys only to the new
 * bucket.  Memory errors are caught by the sanitizers it is built with.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cassandra_token.h"
#include "crc16.h"
#include "hash64.h"
#include "jump.h"
#include "redis_slot.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *key = (const char *) data;
	const char *tag;
	size_t		tag_len;
	uint64_t	h = xxh64_hash(data, size, 0);
	int32_t		buckets = (int32_t) (h >> 40) + 1;	/* 1 .. 2^24 */

	if (crc16_xmodem(data, size) != crc16_xmodem_bytewise(data, size))
		abort();

	redis_hash_tag(key, size, &tag, &tag_len);
	if (tag < key || tag + tag_len > key + size)
		abort();
	if (redis_cluster_slot(key, size) != (crc16_xmodem(tag, tag_len) & 16383))
		abort();

	if ((cassandra_murmur3_token(data, size) == INT64_MIN) != (size == 0))
		abort();

	{
		int32_t		b = jump_consistent_hash(h, buckets);
		int32_t		b2 = jump_consistent_hash(h, buckets + 1);

		if (b < 0 || b >= buckets || (b2 != b && b2 != buckets))
			abort();
		/* The branch-free blocks must be the paper's loop, bit for bit. */
		if (b != jump_consistent_hash_loop(h, buckets))
			abort();
	}
	return 0;
}
