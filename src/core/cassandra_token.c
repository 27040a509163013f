/*
 * cassandra_token.c - MurmurHash3 x64_128 as Cassandra computes it
 *
 * Cassandra's MurmurHash.hash3_x64_128 (seed 0) differs from the reference
 * MurmurHash3 in one place: the tail bytes are Java bytes, so a tail byte
 * >= 0x80 is sign-extended before it is shifted and xored in.  Blocks are
 * read as unsigned little-endian longs, as in the reference.  The token is
 * the first 64-bit half, with Long.MIN_VALUE (reserved as the minimum
 * token) mapped to Long.MAX_VALUE.
 */
#include "cassandra_token.h"

#include "hash64.h"

static inline uint64_t
rotl64(uint64_t v, int n)
{
	return (v << n) | (v >> (64 - n));
}

static inline uint64_t
read_le64(const uint8_t *p)
{
	uint64_t	v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* A Java byte widened to long: sign-extended. */
static inline uint64_t
java_byte(uint8_t b)
{
	return (uint64_t) (int64_t) (int8_t) b;
}

int64_t
cassandra_murmur3_token(const void *data, size_t len)
{
	const uint8_t *key = data;
	const uint64_t c1 = UINT64_C(0x87c37b91114253d5);
	const uint64_t c2 = UINT64_C(0x4cf5ad432745937f);
	uint64_t	h1 = 0;
	uint64_t	h2 = 0;
	size_t		nblocks = len / 16;
	const uint8_t *tail;
	uint64_t	k1 = 0;
	uint64_t	k2 = 0;
	int64_t		token;

	if (len == 0)
		return INT64_MIN;

	for (size_t i = 0; i < nblocks; i++)
	{
		k1 = read_le64(key + i * 16);
		k2 = read_le64(key + i * 16 + 8);

		k1 *= c1;
		k1 = rotl64(k1, 31);
		k1 *= c2;
		h1 ^= k1;
		h1 = rotl64(h1, 27);
		h1 += h2;
		h1 = h1 * 5 + 0x52dce729;

		k2 *= c2;
		k2 = rotl64(k2, 33);
		k2 *= c1;
		h2 ^= k2;
		h2 = rotl64(h2, 31);
		h2 += h1;
		h2 = h2 * 5 + 0x38495ab5;
	}

	tail = key + nblocks * 16;
	k1 = 0;
	k2 = 0;
	switch (len & 15)
	{
		case 15:
			k2 ^= java_byte(tail[14]) << 48;
			/* fall through */
		case 14:
			k2 ^= java_byte(tail[13]) << 40;
			/* fall through */
		case 13:
			k2 ^= java_byte(tail[12]) << 32;
			/* fall through */
		case 12:
			k2 ^= java_byte(tail[11]) << 24;
			/* fall through */
		case 11:
			k2 ^= java_byte(tail[10]) << 16;
			/* fall through */
		case 10:
			k2 ^= java_byte(tail[9]) << 8;
			/* fall through */
		case 9:
			k2 ^= java_byte(tail[8]);
			k2 *= c2;
			k2 = rotl64(k2, 33);
			k2 *= c1;
			h2 ^= k2;
			/* fall through */
		case 8:
			k1 ^= java_byte(tail[7]) << 56;
			/* fall through */
		case 7:
			k1 ^= java_byte(tail[6]) << 48;
			/* fall through */
		case 6:
			k1 ^= java_byte(tail[5]) << 40;
			/* fall through */
		case 5:
			k1 ^= java_byte(tail[4]) << 32;
			/* fall through */
		case 4:
			k1 ^= java_byte(tail[3]) << 24;
			/* fall through */
		case 3:
			k1 ^= java_byte(tail[2]) << 16;
			/* fall through */
		case 2:
			k1 ^= java_byte(tail[1]) << 8;
			/* fall through */
		case 1:
			k1 ^= java_byte(tail[0]);
			k1 *= c1;
			k1 = rotl64(k1, 31);
			k1 *= c2;
			h1 ^= k1;
	}

	h1 ^= (uint64_t) len;
	h2 ^= (uint64_t) len;
	h1 += h2;
	h2 += h1;
	h1 = fmix64(h1);
	h2 = fmix64(h2);
	h1 += h2;

	token = (int64_t) h1;
	return token == INT64_MIN ? INT64_MAX : token;
}
