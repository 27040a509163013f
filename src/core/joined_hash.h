/*
 * joined_hash.h - H(a || sep || b): hashing a node name joined to a suffix
 *
 * Every placement scheme hashes a node name with something appended
 * ("n#3", "b:offset", "node:key", "server-7").  The caller lends a scratch
 * buffer of at least alen + seplen + blen bytes, so nothing is allocated.
 */
#ifndef CHASH_CORE_JOINED_HASH_H
#define CHASH_CORE_JOINED_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "hash64.h"

/* Longest decimal form of a uint32_t. */
#define DECIMAL_UINT32_MAX_LEN 10

/* Writes the joined bytes into scratch and returns their length. */
size_t		join_bytes(const char *a, size_t alen, const char *sep, size_t seplen,
					   const char *b, size_t blen, char *scratch);

/* H(a || sep || b) of the hasher's family. */
uint64_t	hash64_joined(const hasher64 *hasher, const char *a, size_t alen,
						  const char *sep, size_t seplen, const char *b, size_t blen,
						  char *scratch);

/* Writes v in decimal (no terminator) and returns the number of digits. */
size_t		format_decimal(uint32_t v, char *out);

#endif
