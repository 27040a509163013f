/*
 * jump.c - SQL wrappers of jump consistent hash and plain modulo (docs/placement.md)
 */
#include "chash.h"

#include "jump.h"

PG_FUNCTION_INFO_V1(chash_jump_int8);
PG_FUNCTION_INFO_V1(chash_jump_text);
PG_FUNCTION_INFO_V1(chash_mod_int8);
PG_FUNCTION_INFO_V1(chash_mod_text);

Datum
chash_jump_int8(PG_FUNCTION_ARGS)
{
	uint64		key = (uint64) PG_GETARG_INT64(0);
	int32		buckets = PG_GETARG_INT32(1);

	chash_check_at_least_one(buckets, "number of buckets");
	PG_RETURN_INT32(jump_consistent_hash(key, buckets));
}

Datum
chash_jump_text(PG_FUNCTION_ARGS)
{
	text	   *key = PG_GETARG_TEXT_PP(0);
	int32		buckets = PG_GETARG_INT32(1);

	chash_check_at_least_one(buckets, "number of buckets");
	PG_RETURN_INT32(jump_consistent_hash(xxh64_hash(CHASH_TEXT_DATA(key), CHASH_TEXT_LEN(key), 0),
									  buckets));
}

Datum
chash_mod_int8(PG_FUNCTION_ARGS)
{
	uint64		key = (uint64) PG_GETARG_INT64(0);
	int32		n = PG_GETARG_INT32(1);

	chash_check_at_least_one(n, "modulus");
	PG_RETURN_INT32((int32) (key % (uint64) n));
}

Datum
chash_mod_text(PG_FUNCTION_ARGS)
{
	text	   *key = PG_GETARG_TEXT_PP(0);
	int32		n = PG_GETARG_INT32(1);

	chash_check_at_least_one(n, "modulus");
	PG_RETURN_INT32((int32) (xxh64_hash(CHASH_TEXT_DATA(key), CHASH_TEXT_LEN(key), 0) % (uint64) n));
}
