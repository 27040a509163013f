/*
 * stable_hash.c - SQL wrappers of the stable hash functions (docs/placement.md)
 *
 * Text and bytea overloads share one C function: both are varlenas whose
 * payload is the bytes to hash.
 */
#include "chash.h"

#include "cassandra_token.h"
#include "crc16.h"

PG_FUNCTION_INFO_V1(chash_xxh64);
PG_FUNCTION_INFO_V1(chash_md5_64);
PG_FUNCTION_INFO_V1(chash_crc16);
PG_FUNCTION_INFO_V1(chash_cassandra_token);

Datum
chash_xxh64(PG_FUNCTION_ARGS)
{
	struct varlena *data = PG_GETARG_VARLENA_PP(0);
	uint64		seed = (uint64) PG_GETARG_INT64(1);

	PG_RETURN_INT64((int64) xxh64_hash(CHASH_TEXT_DATA(data), CHASH_TEXT_LEN(data), seed));
}

Datum
chash_md5_64(PG_FUNCTION_ARGS)
{
	struct varlena *data = PG_GETARG_VARLENA_PP(0);
	uint8_t		digest[16];

	chash_server_md5(CHASH_TEXT_DATA(data), CHASH_TEXT_LEN(data), digest);
	PG_RETURN_INT64((int64) md5_prefix64(digest));
}

Datum
chash_crc16(PG_FUNCTION_ARGS)
{
	struct varlena *data = PG_GETARG_VARLENA_PP(0);

	PG_RETURN_INT32((int32) crc16_xmodem(CHASH_TEXT_DATA(data), CHASH_TEXT_LEN(data)));
}

Datum
chash_cassandra_token(PG_FUNCTION_ARGS)
{
	struct varlena *data = PG_GETARG_VARLENA_PP(0);

	PG_RETURN_INT64(cassandra_murmur3_token(CHASH_TEXT_DATA(data), CHASH_TEXT_LEN(data)));
}
