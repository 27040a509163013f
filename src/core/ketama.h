/*
 * ketama.h - the ketama ring of libketama (Last.fm, 2007; SPEC 2.5)
 *
 * Server i gets floorf(pct * 40.0 * N) MD5 digests of "server-k", with pct
 * = (float) w_i / (float) total computed as libketama computes it; each
 * digest gives 4 points (little-endian 32-bit words).  A key sits at the
 * first 4 bytes of MD5(key), little-endian.  The points go into a ring_point
 * array and are sorted and searched with ring.h.
 */
#ifndef CHASH_CORE_KETAMA_H
#define CHASH_CORE_KETAMA_H

#include <stddef.h>
#include <stdint.h>

#include "hash64.h"
#include "ring.h"

/* Digests per server without weights; each gives 4 points. */
#define KETAMA_DIGESTS_PER_SERVER 40

/*
 * Digests of a server of weight w out of total, among nservers, exactly as
 * libketama's float arithmetic gives them.
 */
uint32_t	ketama_digest_count(double weight, double total, int nservers);

/* Little-endian 32-bit word h (0 .. 3) of a digest. */
static inline uint32_t
ketama_word(const uint8_t digest[16], int h)
{
	return (uint32_t) digest[4 * h] | ((uint32_t) digest[4 * h + 1] << 8) |
		((uint32_t) digest[4 * h + 2] << 16) | ((uint32_t) digest[4 * h + 3] << 24);
}

/*
 * Writes the unsorted points of every server: digests[i] digests each,
 * 4 points per digest (vnode = 4 * k + h).  scratch holds the longest
 * name plus 1 + DECIMAL_UINT32_MAX_LEN bytes.
 */
void		ketama_generate_points(md5_digest_fn md5, const char *const *names,
								   const int *lengths, int nservers,
								   const uint32_t *digests, char *scratch,
								   ring_point *points);

/* A key's position on the ketama ring. */
static inline uint32_t
ketama_key_position(md5_digest_fn md5, const void *key, size_t len)
{
	uint8_t		digest[16];

	md5(key, len, digest);
	return ketama_word(digest, 0);
}

#endif
