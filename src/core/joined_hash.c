/*
 * joined_hash.c - hashing a node name joined to a suffix
 */
#include "joined_hash.h"

#include <string.h>

size_t
join_bytes(const char *a, size_t alen, const char *sep, size_t seplen,
		   const char *b, size_t blen, char *scratch)
{
	if (alen > 0)
		memcpy(scratch, a, alen);
	if (seplen > 0)
		memcpy(scratch + alen, sep, seplen);
	if (blen > 0)
		memcpy(scratch + alen + seplen, b, blen);
	return alen + seplen + blen;
}

uint64_t
hash64_joined(const hasher64 *hasher, const char *a, size_t alen,
			  const char *sep, size_t seplen, const char *b, size_t blen,
			  char *scratch)
{
	size_t		len = join_bytes(a, alen, sep, seplen, b, blen, scratch);

	return hash64(hasher, scratch, len);
}

size_t
format_decimal(uint32_t v, char *out)
{
	char		digits[DECIMAL_UINT32_MAX_LEN];
	size_t		n = 0;

	do
	{
		digits[n++] = (char) ('0' + v % 10);
		v /= 10;
	} while (v != 0);
	for (size_t i = 0; i < n; i++)
		out[i] = digits[n - 1 - i];
	return n;
}
