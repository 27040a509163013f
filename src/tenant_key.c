/*
 * tenant_key.c - canonicalizing and slotting a tenant (tenant_key.h)
 */
#include "chash.h"

#include "catalog/pg_type.h"
#include "utils/lsyscache.h"
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

/* How a column of type typid (a domain: its base type) becomes canonical text. */
void
tenant_column_init(TenantColumn *column, Oid typid, MemoryContext mcxt)
{
	/* (the built-in types without a lookup) */
	Oid			base = typid == TEXTOID || typid == VARCHAROID || typid == BPCHAROID ?
		typid : getBaseType(typid);
	Oid			output;
	bool		varlena;

	column->kind = base == TEXTOID || base == VARCHAROID ? TENANT_COLUMN_TEXT :
		base == BPCHAROID ? TENANT_COLUMN_BPCHAR : TENANT_COLUMN_OUTPUT;
	getTypeOutputInfo(typid, &output, &varlena);
	fmgr_info_cxt(output, &column->output, mcxt);
}

/*
 * The canonical text of a tenant value: what (column)::text gives, as
 * routing, chash_tenant_slot and the mover's predicates see it.  char(n)
 * drops its padding as its cast to text does; a value of any other type
 * but text or varchar is its output.
 */
const char *
tenant_column_text(TenantColumn *column, Datum value, size_t *len)
{
	if (column->kind != TENANT_COLUMN_OUTPUT)
	{
		text	   *t = DatumGetTextPP(value);
		const char *data = VARDATA_ANY(t);
		size_t		n = VARSIZE_ANY_EXHDR(t);

		if (column->kind == TENANT_COLUMN_BPCHAR)
			while (n > 0 && data[n - 1] == ' ')
				n--;
		*len = n;
		return data;
	}
	else
	{
		char	   *s = OutputFunctionCall(&column->output, value);

		*len = strlen(s);
		return s;
	}
}
