/*
 * tenant_slot.c - chash_tenant_slot: the slot of a tenant without a
 * directory (docs/shards.md, "Tenant tables")
 *
 * IMMUTABLE, so that shards can index it (CREATE INDEX ON accounts
 * (chash_tenant_slot(org_id, 16384))) and postgres_fdw can ship it.  It
 * gives what chash_slot gives for a directory with that slot count, slot
 * method and the key type of the argument: the canonical text of the
 * tenant is hashed, except for 'pg_hash', which hashes the typed value as
 * a hash-partitioned table does.
 */
#include "chash.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/uuid.h"

#include "directory.h"
#include "redis_slot.h"
#include "tenant_slot.h"

PG_FUNCTION_INFO_V1(chash_tenant_slot_text);
PG_FUNCTION_INFO_V1(chash_tenant_slot_int8);
PG_FUNCTION_INFO_V1(chash_tenant_slot_uuid);

int32
tenant_slot_of(slot_method method, int32 slot_count, Oid typid, Datum typed,
			   const char *canonical, size_t len, uint64 *xxh)
{
	uint64		h = 0;

	if (method == SLOT_METHOD_PG_HASH)
		return chash_pg_partition_of(typid, typed, slot_count);
	if (method != SLOT_METHOD_REDIS)
	{
		h = xxh64_hash(canonical, len, 0);
		if (xxh)
			*xxh = h;
	}
	return directory_text_slot(method, canonical, len, h, slot_count);
}

/* 22023 unless the slot count and method could be a directory's. */
static slot_method
checked_layout(FunctionCallInfo fcinfo, int32 *slot_count)
{
	text	   *name = PG_GETARG_TEXT_PP(2);
	slot_method method;

	*slot_count = PG_GETARG_INT32(1);
	if (*slot_count < 1 || *slot_count > DIRECTORY_MAX_SLOTS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("slot_count must be between 1 and %d", DIRECTORY_MAX_SLOTS),
				 errdetail("The value given was %d.", *slot_count)));
	if (slot_method_parse(VARDATA_ANY(name), VARSIZE_ANY_EXHDR(name), &method) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unrecognized slot method \"%.*s\"",
						chash_quote_len(VARDATA_ANY(name), VARSIZE_ANY_EXHDR(name)),
						VARDATA_ANY(name)),
				 errhint("Valid slot methods are \"xxh64\", \"jump\", \"redis\" and \"pg_hash\".")));
	if (method == SLOT_METHOD_REDIS && *slot_count != REDIS_CLUSTER_SLOTS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("slot method \"redis\" needs slot_count 16384"),
				 errdetail("The value given was %d.", *slot_count)));
	return method;
}

Datum
chash_tenant_slot_text(PG_FUNCTION_ARGS)
{
	int32		slot_count;
	slot_method method = checked_layout(fcinfo, &slot_count);
	text	   *tenant = PG_GETARG_TEXT_PP(0);

	PG_RETURN_INT32(tenant_slot_of(method, slot_count, TEXTOID, PointerGetDatum(tenant),
								   VARDATA_ANY(tenant), VARSIZE_ANY_EXHDR(tenant), NULL));
}

Datum
chash_tenant_slot_int8(PG_FUNCTION_ARGS)
{
	int32		slot_count;
	slot_method method = checked_layout(fcinfo, &slot_count);
	int64		tenant = PG_GETARG_INT64(0);
	char		buf[CANONICAL_BIGINT_MAX];
	size_t		len = bigint_tenant_format(tenant, buf);

	PG_RETURN_INT32(tenant_slot_of(method, slot_count, INT8OID, Int64GetDatum(tenant),
								   buf, len, NULL));
}

Datum
chash_tenant_slot_uuid(PG_FUNCTION_ARGS)
{
	int32		slot_count;
	slot_method method = checked_layout(fcinfo, &slot_count);
	pg_uuid_t  *tenant = PG_GETARG_UUID_P(0);
	char		buf[CANONICAL_UUID_LEN];

	uuid_tenant_format(tenant->data, buf);
	PG_RETURN_INT32(tenant_slot_of(method, slot_count, UUIDOID, UUIDPGetDatum(tenant),
								   buf, CANONICAL_UUID_LEN, NULL));
}
