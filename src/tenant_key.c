/*
 * tenant_key.c - canonicalizing and slotting a tenant (tenant_key.h)
 */
#include "chash.h"

#include "catalog/pg_type.h"
#include "utils/uuid.h"

#include "tenant_key.h"

/* The 'pg_hash' slot: the typed value as PostgreSQL's hash partitioning hashes it. */
int32
tenant_key_pg_hash_slot(const canonical_tenant *c, key_type ktype, int32 slot_count)
{
	/* a text Datum of the tenant, on the stack when it fits */
	union
	{
		int32		align;
		char		data[VARHDRSZ + 256];
	}			buf;
	text	   *t;
	int32		slot;

	if (ktype == KEY_TYPE_BIGINT)
		return chash_pg_partition_of(INT8OID, Int64GetDatum(c->bigint), slot_count);
	if (ktype == KEY_TYPE_UUID)
		return chash_pg_partition_of(UUIDOID, UUIDPGetDatum((pg_uuid_t *) c->uuid), slot_count);
	t = c->len <= 256 ? (text *) buf.data : palloc(VARHDRSZ + c->len);
	SET_VARSIZE(t, VARHDRSZ + c->len);
	memcpy(VARDATA(t), c->data, c->len);
	slot = chash_pg_partition_of(TEXTOID, PointerGetDatum(t), slot_count);
	if ((char *) t != buf.data)
		pfree(t);
	return slot;
}

void
tenant_key_of_int8(TenantKey *key, int64 value, slot_method method, int32 slot_count)
{
	canonical_tenant *c = &key->canonical;

	c->bigint = value;
	c->len = bigint_tenant_format(value, c->buf);
	c->data = c->buf;
	tenant_key_place(key, KEY_TYPE_BIGINT, method, slot_count);
}

void
tenant_key_of_uuid(TenantKey *key, const uint8 uuid[16], slot_method method, int32 slot_count)
{
	canonical_tenant *c = &key->canonical;

	memcpy(c->uuid, uuid, 16);
	uuid_tenant_format(uuid, c->buf);
	c->len = CANONICAL_UUID_LEN;
	c->data = c->buf;
	tenant_key_place(key, KEY_TYPE_UUID, method, slot_count);
}
