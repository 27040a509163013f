/*
 * hash64.c - the XXH64 and MD5-prefix hash families
 */
#include "hash64.h"

#include <string.h>
#include <xxhash.h>

uint64_t
md5_prefix64(const uint8_t digest[16])
{
	uint64_t	v = 0;

	for (int i = 0; i < 8; i++)
		v = (v << 8) | digest[i];
	return v;
}

uint64_t
hash64(const hasher64 *hasher, const void *data, size_t len)
{
	uint8_t		digest[16];

	if (hasher->family == HASH_FAMILY_XXH64)
		return xxh64_hash(data, len, 0);
	hasher->md5(data, len, digest);
	return md5_prefix64(digest);
}

int
hash_family_parse(const char *name, size_t len, hash_family *family)
{
	if (len == 5 && memcmp(name, "xxh64", 5) == 0)
		*family = HASH_FAMILY_XXH64;
	else if (len == 3 && memcmp(name, "md5", 3) == 0)
		*family = HASH_FAMILY_MD5;
	else
		return -1;
	return 0;
}
