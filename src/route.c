/*
 * route.c - routing through a shard directory (docs/directory.md): chash_slot,
 * chash_route, chash_route_explain (the write's route, chash_route_for_write,
 * is the fence's: fence.c)
 *
 * The routing rules: a tenant is canonicalized for the directory's key
 * type and slotted by its slot method; an override beats the slot's
 * owner; the step that moves it comes from the step index (its
 * precedence rules are in src/core/step_index.h).  Answers come from the
 * backend's directory cache (directory_cache.c): per call there is no
 * table access and no allocation; the answer is the caller's copy
 * (directory_shard_name), which outlives the cache entry it came from.
 */
#include "chash.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"
#include "utils/uuid.h"

#include "directory_cache.h"
#include "route.h"
#include "tenant_key.h"

PG_FUNCTION_INFO_V1(chash_slot);
PG_FUNCTION_INFO_V1(chash_route);
PG_FUNCTION_INFO_V1(chash_route_int8);
PG_FUNCTION_INFO_V1(chash_route_explain);

static void
pg_attribute_noreturn()
invalid_tenant(RouteDirectory *dir, const char *tenant, size_t len, tenant_status status)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
			 errmsg("invalid tenant \"%.*s\" for directory \"%.*s\"",
					chash_quote_len(tenant, len), tenant,
					chash_quote_len(dir->name, dir->name_len), dir->name),
			 errdetail(status == TENANT_OUT_OF_RANGE ?
					   "The directory's tenants are of type %s and this value is out of range." :
					   "The directory's tenants are of type %s.", key_type_name(dir->ktype))));
}

/* Canonicalizes and slots a tenant (22P02 when not of the key type). */
static inline void
route_key_init(RouteDirectory *dir, const char *tenant, size_t len, TenantKey *key)
{
	tenant_status status = tenant_key_init(key, dir->ktype, dir->method, dir->slot_count,
										   tenant, len);

	if (status != TENANT_OK)
		invalid_tenant(dir, tenant, len, status);
}

/* The directory (argument 0) and the key of a text tenant (argument 1). */
static inline RouteDirectory *
text_route_key(FunctionCallInfo fcinfo, RouteCallSite *site, TenantKey *key)
{
	RouteDirectory *dir = directory_for_site(site, PG_GETARG_TEXT_PP(0));
	text	   *tenant = PG_GETARG_TEXT_PP(1);

	route_key_init(dir, VARDATA_ANY(tenant), VARSIZE_ANY_EXHDR(tenant), key);
	return dir;
}

/* The owning shard: the override if pinned, else the slot's owner. */
static inline int32
owner_of(RouteDirectory *dir, TenantKey *key, bool *overridden)
{
	const tenant_map_entry *e = NULL;

	if (dir->overrides.count > 0)
		e = tenant_map_get(&dir->overrides, tenant_key_hash(key), key->canonical.data, key->canonical.len);
	*overridden = e != NULL;
	return e != NULL ? e->value : dir->slot_owner[key->slot];
}

/* The step in flight that moves the key, or NULL. */
static RouteStep *
step_of(RouteDirectory *dir, TenantKey *key, bool overridden)
{
	const step_ref *r;

	if (dir->step_index.count == 0)
		return NULL;
	r = step_index_lookup(&dir->step_index,
						  dir->step_index.tenants.count > 0 ? tenant_key_hash(key) : 0,
						  key->canonical.data, key->canonical.len, key->slot, overridden);
	return r != NULL ? &dir->steps[r->value] : NULL;
}

Datum
chash_slot(PG_FUNCTION_ARGS)
{
	TenantKey	key;

	(void) text_route_key(fcinfo, route_call_site(fcinfo), &key);
	PG_RETURN_INT32(key.slot);
}

Datum
chash_route(PG_FUNCTION_ARGS)
{
	RouteCallSite *site = route_call_site(fcinfo);
	TenantKey	key;
	RouteDirectory *dir = text_route_key(fcinfo, site, &key);
	bool		overridden;

	PG_RETURN_TEXT_P(directory_shard_name(site, dir, owner_of(dir, &key, &overridden)));
}

/* A bigint tenant routes exactly like its decimal text. */
Datum
chash_route_int8(PG_FUNCTION_ARGS)
{
	RouteCallSite *site = route_call_site(fcinfo);
	RouteDirectory *dir = directory_for_site(site, PG_GETARG_TEXT_PP(0));
	char		decimal[CANONICAL_BIGINT_MAX];
	size_t		len = bigint_tenant_format(PG_GETARG_INT64(1), decimal);
	TenantKey	key;
	bool		overridden;

	route_key_init(dir, decimal, len, &key);
	PG_RETURN_TEXT_P(directory_shard_name(site, dir, owner_of(dir, &key, &overridden)));
}

Datum
chash_route_explain(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	RouteCallSite *site = route_call_site(fcinfo);
	TenantKey	key;
	RouteDirectory *dir = text_route_key(fcinfo, site, &key);
	bool		overridden;
	int32		shard;
	RouteStep  *step;
	Datum		values[7];
	bool		nulls[7] = {false};

	shard = owner_of(dir, &key, &overridden);
	step = step_of(dir, &key, overridden);

	InitMaterializedSRF(fcinfo, 0);
	values[0] = PointerGetDatum(cstring_to_text_with_len(key.canonical.data, key.canonical.len));
	values[1] = Int32GetDatum(key.slot);
	values[2] = PointerGetDatum(directory_shard_name(site, dir, shard));
	values[3] = CStringGetTextDatum(overridden ? "override" : "slot");
	if (step != NULL)
	{
		values[4] = CStringGetTextDatum(state_name(STATE_STEP, step->fenced ? STEP_FENCED : STEP_COPYING));
		values[5] = PointerGetDatum(directory_shard_name(site, dir, step->to_shard));
		values[6] = Int64GetDatum(step->migration);
	}
	else
		nulls[4] = nulls[5] = nulls[6] = true;
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}

void
route_tenant(RouteDirectory *dir, const char *tenant, size_t len, TenantRoute *route)
{
	TenantKey	key;

	StaticAssertStmt(sizeof(route->buf) >= sizeof(key.canonical.buf), "TenantRoute.buf too small");
	route_key_init(dir, tenant, len, &key);
	if (key.canonical.data == key.canonical.buf)
	{
		memcpy(route->buf, key.canonical.buf, key.canonical.len);
		route->tenant = route->buf;
	}
	else
		route->tenant = key.canonical.data;
	route->tenant_len = key.canonical.len;
	route->slot = key.slot;
	route->owner = owner_of(dir, &key, &route->overridden);
	route->step = step_of(dir, &key, route->overridden);
}

/* A shard name quoted for a message. */
char *
route_quoted_shard(RouteDirectory *dir, int32 shard)
{
	text	   *name = dir->shards[shard].name;
	int			len = VARSIZE(name) - VARHDRSZ;

	return psprintf("\"%.*s\"", chash_quote_len(VARDATA(name), len), VARDATA(name));
}
