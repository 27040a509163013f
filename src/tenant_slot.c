/*
 * tenant_slot.c - chash_tenant_slot: the slot of a tenant without a
 * directory (docs/shards.md, "Tenant tables")
 *
 * IMMUTABLE, so that shards can index it (CREATE INDEX ON accounts
 * (chash_tenant_slot(org_id, 16384))) and postgres_fdw can ship it.  It
 * gives what chash_slot gives for a directory with that slot count, slot
 * method and the key type of the argument: the canonical text of the
 * tenant is hashed, except for 'pg_hash', which hashes the typed value as
 * a hash-partitioned table does (one path with routing: tenant_key.c).
 */
#include "chash.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/uuid.h"

#include "tenant_key.h"

PG_FUNCTION_INFO_V1(chash_tenant_slot_text);
PG_FUNCTION_INFO_V1(chash_tenant_slot_int8);
PG_FUNCTION_INFO_V1(chash_tenant_slot_uuid);

/* 22023 unless the slot count and method could be a directory's. */
static slot_method
checked_layout(FunctionCallInfo fcinfo, int32 *slot_count)
{
	*slot_count = PG_GETARG_INT32(1);
	return chash_layout_from_args(*slot_count, PG_GETARG_TEXT_PP(2));
}

Datum
chash_tenant_slot_text(PG_FUNCTION_ARGS)
{
	int32		slot_count;
	slot_method method = checked_layout(fcinfo, &slot_count);
	text	   *tenant = PG_GETARG_TEXT_PP(0);
	TenantKey	key;

	(void) tenant_key_init(&key, KEY_TYPE_TEXT, method, slot_count,
						   VARDATA_ANY(tenant), VARSIZE_ANY_EXHDR(tenant));
	PG_RETURN_INT32(key.slot);
}

Datum
chash_tenant_slot_int8(PG_FUNCTION_ARGS)
{
	int32		slot_count;
	slot_method method = checked_layout(fcinfo, &slot_count);
	TenantKey	key;

	tenant_key_of_int8(&key, PG_GETARG_INT64(0), method, slot_count);
	PG_RETURN_INT32(key.slot);
}

Datum
chash_tenant_slot_uuid(PG_FUNCTION_ARGS)
{
	int32		slot_count;
	slot_method method = checked_layout(fcinfo, &slot_count);
	TenantKey	key;

	tenant_key_of_uuid(&key, PG_GETARG_UUID_P(0)->data, method, slot_count);
	PG_RETURN_INT32(key.slot);
}
