/*
 * ketama.h - the ketama ring of libketama (Last.fm, 2007; docs/placement.md)
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

typedef enum ketama_status
{
	KETAMA_OK = 0,
	KETAMA_TOO_MANY_POINTS,		/* more than RING_MAX_POINTS */
	KETAMA_NO_POINTS			/* every server gets 0 digests */
} ketama_status;

/*
 * Digests of a server of weight w out of total, among nservers, exactly as
 * libketama's float arithmetic gives them.
 */
uint32_t	ketama_digest_count(double weight, double total, int nservers);

/*
 * Digests of every server: KETAMA_DIGESTS_PER_SERVER each when weights is
 * NULL, else ketama_digest_count of each weight out of total.  Sets *points
 * to 4 per digest.  In single precision every count can be 0 although the
 * weights are not (weights below the smallest float): that continuum has
 * no point to look a key up on, KETAMA_NO_POINTS.
 */
ketama_status ketama_digest_counts(const double *weights, double total, int nservers,
								   uint32_t *digests, size_t *points);

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
 * name plus 1 + DECIMAL_UINT32_MAX_LEN bytes.  check (may be NULL) is
 * called now and then.
 */
void		ketama_generate_points(md5_digest_fn md5, const char *const *names,
								   const int *lengths, int nservers,
								   const uint32_t *digests, char *scratch,
								   ring_point *points, interrupt_check check);

/* A key's position on the ketama ring. */
static inline uint32_t
ketama_key_position(md5_digest_fn md5, const void *key, size_t len)
{
	uint8_t		digest[16];

	md5(key, len, digest);
	return ketama_word(digest, 0);
}

#endif
