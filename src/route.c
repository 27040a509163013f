/*
 * route.c - routing through a shard directory (SPEC 3): chash_slot,
 * chash_route, chash_route_explain, chash_route_for_write
 *
 * All answers come from the backend's directory cache (directory_cache.c);
 * per call there is no table access and no allocation.
 */
#include "chash.h"

#include "access/htup_details.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "directory_cache.h"

PG_FUNCTION_INFO_V1(chash_slot);
PG_FUNCTION_INFO_V1(chash_route);
PG_FUNCTION_INFO_V1(chash_route_int8);
PG_FUNCTION_INFO_V1(chash_route_explain);
PG_FUNCTION_INFO_V1(chash_route_for_write);

/* The directory (argument 0) and the key of a text tenant (argument 1). */
static inline RouteDirectory *
text_route_key(FunctionCallInfo fcinfo, RouteKey *key)
{
	RouteDirectory *dir = directory_for_call(fcinfo, PG_GETARG_TEXT_PP(0));
	text	   *tenant = PG_GETARG_TEXT_PP(1);

	route_key_init(dir, VARDATA_ANY(tenant), VARSIZE_ANY_EXHDR(tenant), key);
	return dir;
}

Datum
chash_slot(PG_FUNCTION_ARGS)
{
	RouteKey	key;

	(void) text_route_key(fcinfo, &key);
	PG_RETURN_INT32(key.slot);
}

static int32
owner_of(RouteDirectory *dir, RouteKey *key, bool *overridden)
{
	int32		shard = route_override(dir, key);

	*overridden = shard >= 0;
	return shard >= 0 ? shard : dir->slot_owner[key->slot];
}

Datum
chash_route(PG_FUNCTION_ARGS)
{
	RouteKey	key;
	RouteDirectory *dir = text_route_key(fcinfo, &key);
	bool		overridden;

	/* the cache's own copy: it lives until the transaction ends */
	PG_RETURN_TEXT_P(dir->shards[owner_of(dir, &key, &overridden)].name);
}

/* A bigint tenant routes exactly like its decimal text. */
Datum
chash_route_int8(PG_FUNCTION_ARGS)
{
	RouteDirectory *dir = directory_for_call(fcinfo, PG_GETARG_TEXT_PP(0));
	char		decimal[CANONICAL_BIGINT_MAX];
	size_t		len = bigint_tenant_format(PG_GETARG_INT64(1), decimal);
	RouteKey	key;
	bool		overridden;

	route_key_init(dir, decimal, len, &key);
	PG_RETURN_TEXT_P(dir->shards[owner_of(dir, &key, &overridden)].name);
}

Datum
chash_route_explain(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	RouteKey	key;
	RouteDirectory *dir = text_route_key(fcinfo, &key);
	bool		overridden;
	int32		shard;
	RouteStep  *step;
	Datum		values[7];
	bool		nulls[7] = {false};

	shard = owner_of(dir, &key, &overridden);
	step = route_step(dir, &key, overridden);

	InitMaterializedSRF(fcinfo, 0);
	values[0] = PointerGetDatum(cstring_to_text_with_len(key.data, key.len));
	values[1] = Int32GetDatum(key.slot);
	values[2] = PointerGetDatum(dir->shards[shard].name);
	values[3] = CStringGetTextDatum(overridden ? "override" : "slot");
	if (step != NULL)
	{
		values[4] = CStringGetTextDatum(step->fenced ? "fenced" : "copying");
		values[5] = PointerGetDatum(step->to_shard);
		values[6] = Int64GetDatum(step->migration);
	}
	else
		nulls[4] = nulls[5] = nulls[6] = true;
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}

Datum
chash_route_for_write(PG_FUNCTION_ARGS)
{
	RouteKey	key;
	RouteDirectory *dir = text_route_key(fcinfo, &key);
	bool		overridden;
	int32		shard;
	RouteStep  *step;

	shard = owner_of(dir, &key, &overridden);
	step = route_step(dir, &key, overridden);
	if (step != NULL && step->fenced)
	{
		/* A slot step fences every tenant routed by the slot; a tenant step only its tenant. */
		char	   *what = step->slot >= 0 ? psprintf("Slot %d is", key.slot) : pstrdup("The tenant is");

		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("tenant \"%.*s\" of directory \"%s\" is being moved", (int) key.len, key.data, dir->name),
				 errdetail("%s fenced by step %d of migration " INT64_FORMAT ", which moves it from shard \"%s\" to shard \"%s\".",
						   what, step->step, step->migration,
						   text_to_cstring(dir->shards[shard].name), text_to_cstring(step->to_shard)),
				 errhint("Retry the transaction; writes resume when the step completes.")));
	}
	PG_RETURN_TEXT_P(dir->shards[shard].name);
}
