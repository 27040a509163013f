/*
 * hash64.h - the two 64-bit hash families every placement scheme shares
 *
 * XXH64 comes from libxxhash.  MD5 is not implemented here: the caller
 * passes a digest function (the server's own MD5 in the extension, the
 * frontend libpgcommon one in unit tests), so this layer stays free of
 * PostgreSQL headers.
 */
#ifndef CHASH_CORE_HASH64_H
#define CHASH_CORE_HASH64_H

#include <stddef.h>
#include <stdint.h>
#include <xxhash.h>

typedef enum hash_family
{
	HASH_FAMILY_XXH64 = 0,
	HASH_FAMILY_MD5 = 1
} hash_family;

/* Writes the 16-byte MD5 digest of data into out. */
typedef void (*md5_digest_fn) (const void *data, size_t len, uint8_t out[16]);

typedef struct hasher64
{
	hash_family family;
	md5_digest_fn md5;			/* required when family is HASH_FAMILY_MD5 */
} hasher64;

/* XXH64 with the given seed. */
static inline uint64_t
xxh64_hash(const void *data, size_t len, uint64_t seed)
{
	/* inline: a second call layer costs a measurable share of a jump */
	return (uint64_t) XXH64(data, len, (XXH64_hash_t) seed);
}

/* First 8 bytes of an MD5 digest, big-endian. */
uint64_t	md5_prefix64(const uint8_t digest[16]);

/* H(s) of docs/reference.md's conventions for the hasher's family. */
uint64_t	hash64(const hasher64 *hasher, const void *data, size_t len);

/*
 * Parses a family name ("xxh64" or "md5", exact bytes).  Returns 0 and sets
 * *family, or -1 for any other name.
 */
int			hash_family_parse(const char *name, size_t len,
									hash_family *family);

/* MurmurHash3's 64-bit finalizer. */
static inline uint64_t
fmix64(uint64_t k)
{
	k ^= k >> 33;
	k *= UINT64_C(0xff51afd7ed558ccd);
	k ^= k >> 33;
	k *= UINT64_C(0xc4ceb9fe1a85ec53);
	k ^= k >> 33;
	return k;
}

#endif
