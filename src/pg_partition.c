/*
 * pg_partition.c - the hash partition PostgreSQL itself routes a key to
 *
 * PostgreSQL's hash partitioning (partbounds.c compute_partition_hash_value)
 * hashes each key column with the type's extended hash function and
 * HASH_PARTITION_SEED, folds the column hashes with hash_combine64 starting
 * from 0, and takes the result mod the modulus.  We call the very same type
 * hash functions, so the answer is PostgreSQL's by construction; the
 * regression test checks it against real partitioned tables.
 */
#include "chash.h"

#include "catalog/partition.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"

PG_FUNCTION_INFO_V1(chash_pg_partition_text);
PG_FUNCTION_INFO_V1(chash_pg_partition_int8);
PG_FUNCTION_INFO_V1(chash_pg_partition_int4);
PG_FUNCTION_INFO_V1(chash_pg_partition_uuid);

static int32
partition_of(Datum column_hash, int32 modulus)
{
	uint64		row_hash = hash_combine64(0, DatumGetUInt64(column_hash));

	if (modulus < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("modulus for hash partition must be at least 1"),
				 errdetail("The value given was %d.", modulus)));
	return (int32) (row_hash % (uint64) modulus);
}

#define SEED UInt64GetDatum(HASH_PARTITION_SEED)

int32
chash_pg_partition_of(Oid typid, Datum value, int32 modulus)
{
	Datum		h;

	switch (typid)
	{
		case TEXTOID:
			h = DirectFunctionCall2Coll(hashtextextended, DEFAULT_COLLATION_OID, value, SEED);
			break;
		case INT8OID:
			h = DirectFunctionCall2(hashint8extended, value, SEED);
			break;
		case INT4OID:
			h = DirectFunctionCall2(hashint4extended, value, SEED);
			break;
		case UUIDOID:
			h = DirectFunctionCall2(uuid_hash_extended, value, SEED);
			break;
		default:
			elog(ERROR, "unsupported partition key type %u", typid);
	}
	return partition_of(h, modulus);
}

/* chash_pg_partition(key, modulus) for one key type: its SQL entry point. */
#define PG_PARTITION_FUNCTION(fn, typid) \
Datum \
fn(PG_FUNCTION_ARGS) \
{ \
	PG_RETURN_INT32(chash_pg_partition_of(typid, PG_GETARG_DATUM(0), PG_GETARG_INT32(1))); \
}

/* A partition key column of type text uses the database's default,
 * deterministic collation: hash the bytes. */
PG_PARTITION_FUNCTION(chash_pg_partition_text, TEXTOID)
PG_PARTITION_FUNCTION(chash_pg_partition_int8, INT8OID)
PG_PARTITION_FUNCTION(chash_pg_partition_int4, INT4OID)
PG_PARTITION_FUNCTION(chash_pg_partition_uuid, UUIDOID)
