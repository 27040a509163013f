/*
 * tenant_key.h - a tenant's canonical text and slot under a directory's
 * layout: the one tenant -> slot path (docs/shards.md, "Tenant tables")
 *
 * Routing (route.c, and through it the guard and the fence),
 * chash_tenant_slot (tenant_slot.c) and the output plugin's filter
 * (decoding_filter.c) all place a tenant here, so that an index on
 * chash_tenant_slot(...) on a shard finds exactly the rows chash_slot
 * assigns to a slot.  A tenant column's value becomes that text here
 * too (tenant_column_text), for the guard, its statement check and the
 * output plugin alike.
 */
#ifndef CHASH_TENANT_KEY_H
#define CHASH_TENANT_KEY_H

#include "postgres.h"

#include "fmgr.h"

#include "directory.h"
#include "hash64.h"

typedef struct TenantKey
{
	canonical_tenant canonical; /* .data, .len: the bytes routing hashes */
	int32		slot;
	bool		have_xxh;
	uint64		xxh;			/* XXH64 of the canonical text, once computed */
} TenantKey;

/* The 'pg_hash' slot of a canonical tenant (tenant_key.c). */
extern int32 tenant_key_pg_hash_slot(const canonical_tenant *c, key_type ktype, int32 slot_count);

/* XXH64 of the canonical text, the key of the override and step maps. */
static inline uint64
tenant_key_hash(TenantKey *key)
{
	if (!key->have_xxh)
	{
		key->xxh = xxh64_hash(key->canonical.data, key->canonical.len, 0);
		key->have_xxh = true;
	}
	return key->xxh;
}

/*
 * Sets key->slot from key->canonical, a tenant of the key type ktype in
 * its canonical form: the canonical text hashed by the slot method, or for
 * 'pg_hash' the typed value hashed as a hash-partitioned table does.
 * Inline, as routing runs it per row.
 */
static inline void
tenant_key_place(TenantKey *key, key_type ktype, slot_method method, int32 slot_count)
{
	const canonical_tenant *c = &key->canonical;

	key->have_xxh = false;
	if (method == SLOT_METHOD_PG_HASH)
		key->slot = tenant_key_pg_hash_slot(c, ktype, slot_count);
	else if (method == SLOT_METHOD_REDIS)
		key->slot = directory_text_slot(method, c->data, c->len, 0, slot_count);
	else
		key->slot = directory_text_slot(method, c->data, c->len, tenant_key_hash(key), slot_count);
}

/*
 * Canonicalizes text as a tenant of ktype and places it; the parse status
 * (key undefined) when it is not of the type.
 */
static inline tenant_status
tenant_key_init(TenantKey *key, key_type ktype, slot_method method, int32 slot_count,
				const char *text, size_t len)
{
	tenant_status status = TENANT_OK;

	/* a text tenant is its own canonical text: no call on the per-row path */
	if (ktype == KEY_TYPE_TEXT)
	{
		key->canonical.data = text;
		key->canonical.len = len;
	}
	else
		status = tenant_canonicalize(ktype, text, len, &key->canonical);
	if (status == TENANT_OK)
		tenant_key_place(key, ktype, method, slot_count);
	return status;
}

/* A bigint or uuid tenant given as its typed value, placed. */
extern void tenant_key_of_int8(TenantKey *key, int64 value, slot_method method, int32 slot_count);
extern void tenant_key_of_uuid(TenantKey *key, const uint8 uuid[16], slot_method method,
							   int32 slot_count);

/*
 * How a tenant column's values become the canonical tenant text, which is
 * (column)::text: the bytes of text and varchar, char(n) without its
 * padding, the output of any other type.
 */
typedef enum TenantColumnKind
{
	TENANT_COLUMN_TEXT,
	TENANT_COLUMN_BPCHAR,
	TENANT_COLUMN_OUTPUT
} TenantColumnKind;

typedef struct TenantColumn
{
	TenantColumnKind kind;
	FmgrInfo	output;
} TenantColumn;

extern void tenant_column_init(TenantColumn *column, Oid typid, MemoryContext mcxt);
extern const char *tenant_column_text(TenantColumn *column, Datum value, size_t *len);

#endif
