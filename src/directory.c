/*
 * directory.c - creating shard directories, canonical tenants, and the
 * trigger that tells the routing cache of its own transaction's changes (docs/directory.md)
 *
 * The other management functions are SQL (src/sql/52_directory_functions.sql);
 * chash_create_directory is C because it validates the shard array the way
 * every placement function does and splits the slots with the core's
 * largest-remainder rule.
 */
#include "chash.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/uuid.h"

#include "directory.h"
#include "directory_cache.h"
#include "directory_catalog.h"
#include "largest_remainder.h"
#include "redis_slot.h"

PG_FUNCTION_INFO_V1(chash_create_directory);
PG_FUNCTION_INFO_V1(chash_tenant_canonical);
PG_FUNCTION_INFO_V1(chash_directory_invalidate);

static void
require_argument(FunctionCallInfo fcinfo, int n, const char *argname)
{
	if (PG_ARGISNULL(n))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", argname)));
}

Datum
chash_create_directory(PG_FUNCTION_ARGS)
{
	text	   *name;
	ChashNodeList shards;
	int32		slot_count;
	text	   *method_text;
	text	   *type_text;
	slot_method method;
	key_type	ktype;
	double	   *weights;
	int32	   *sizes;
	int32	   *scratch;
	split_status split;
	Datum	   *shard_datums;
	Datum	   *range_shards;
	Datum	   *weight_datums;
	Datum	   *first_datums;
	Datum	   *last_datums;
	int			ranges = 0;
	int64		next = 0;
	const char *schema;
	char	   *sql;
	Oid			argtypes[4];
	Datum		args[4];
	int			guc_level;

	require_argument(fcinfo, 0, "directory name");
	require_argument(fcinfo, 1, "shards");
	require_argument(fcinfo, 2, "slot_count");
	require_argument(fcinfo, 3, "slot_method");
	require_argument(fcinfo, 5, "key_type");
	name = PG_GETARG_TEXT_PP(0);
	slot_count = PG_GETARG_INT32(2);
	method_text = PG_GETARG_TEXT_PP(3);
	type_text = PG_GETARG_TEXT_PP(5);

	if (VARSIZE_ANY_EXHDR(name) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("directory name must not be empty")));
	chash_node_list_from_array(PG_GETARG_ARRAYTYPE_P(1), "shards", &shards);
	method = chash_layout_from_args(slot_count, method_text);
	if (key_type_parse(VARDATA_ANY(type_text), VARSIZE_ANY_EXHDR(type_text), &ktype) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unrecognized key type \"%s\"", text_to_cstring(type_text)),
				 errhint("Valid key types are \"text\", \"bigint\" and \"uuid\".")));

	if (PG_ARGISNULL(4))
	{
		weights = palloc(sizeof(double) * shards.count);
		for (int i = 0; i < shards.count; i++)
			weights[i] = 1;
	}
	else
	{
		weights = chash_weights_from_array(PG_GETARG_ARRAYTYPE_P(4), shards.count);
		for (int i = 0; i < shards.count; i++)
			if (weights[i] <= 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("weight of shard \"%.*s\" must be positive",
								chash_quote_len(shards.names[i], shards.lengths[i]), shards.names[i]),
						 errhint("Add a shard with chash_add_shard() to warm it up from zero slots.")));
	}

	sizes = palloc(sizeof(int32) * shards.count);
	scratch = palloc(sizeof(int32) * shards.count);
	split = largest_remainder_split(weights, shards.count, slot_count, sizes, scratch);
	if (split == SPLIT_SUM_TOO_LARGE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("weights of directory \"%.*s\" sum to more than the largest float8",
						chash_quote_len(VARDATA_ANY(name), VARSIZE_ANY_EXHDR(name)),
						VARDATA_ANY(name)),
				 errdetail("Each weight is finite, but their sum is not."),
				 errhint("Scale the weights down: only their ratios matter.")));
	/* the checks above leave no other failure; still, no status goes unreported */
	if (split != SPLIT_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot split the slots of directory \"%.*s\" by weight: %s",
						chash_quote_len(VARDATA_ANY(name), VARSIZE_ANY_EXHDR(name)),
						VARDATA_ANY(name), split_status_message(split))));

	shard_datums = palloc(sizeof(Datum) * shards.count);
	range_shards = palloc(sizeof(Datum) * shards.count);
	weight_datums = palloc(sizeof(Datum) * shards.count);
	first_datums = palloc(sizeof(Datum) * shards.count);
	last_datums = palloc(sizeof(Datum) * shards.count);
	for (int i = 0; i < shards.count; i++)
	{
		shard_datums[i] = PointerGetDatum(cstring_to_text_with_len(shards.names[i], shards.lengths[i]));
		weight_datums[i] = Float8GetDatum(weights[i]);
	}
	/* contiguous ranges, shard by shard in array order */
	for (int i = 0; i < shards.count; i++)
	{
		if (sizes[i] == 0)
			continue;
		range_shards[ranges] = shard_datums[i];
		first_datums[ranges] = Int32GetDatum((int32) next);
		last_datums[ranges] = Int32GetDatum((int32) (next + sizes[i] - 1));
		next += sizes[i];
		ranges++;
	}

	schema = directory_schema_quoted();
	guc_level = chash_pin_search_path();
	SPI_connect();

	argtypes[0] = TEXTOID;
	args[0] = PointerGetDatum(name);
	argtypes[1] = INT4OID;
	argtypes[2] = TEXTOID;
	argtypes[3] = TEXTOID;
	args[1] = Int32GetDatum(slot_count);
	args[2] = CStringGetTextDatum(slot_method_name(method));
	args[3] = CStringGetTextDatum(key_type_name(ktype));
	/*
	 * ON CONFLICT: a directory of this name created by a concurrent
	 * transaction is waited for and then seen, so that is 42710 too, not a
	 * unique violation.
	 */
	sql = psprintf("INSERT INTO %s.chash_directory (name, slot_count, slot_method, key_type) "
				   "VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO NOTHING", schema);
	if (SPI_execute_with_args(sql, 4, argtypes, args, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "SPI_execute_with_args failed");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("directory \"%.*s\" already exists",
						chash_quote_len(VARDATA_ANY(name), VARSIZE_ANY_EXHDR(name)),
						VARDATA_ANY(name))));

	argtypes[1] = TEXTARRAYOID;
	argtypes[2] = FLOAT8ARRAYOID;
	args[1] = PointerGetDatum(construct_array(shard_datums, shards.count, TEXTOID, -1, false, TYPALIGN_INT));
	args[2] = PointerGetDatum(construct_array(weight_datums, shards.count, FLOAT8OID, 8,
											  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	sql = psprintf("INSERT INTO %s.chash_shard (directory, shard, weight) "
				   "SELECT $1, u.shard, u.weight FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3)) AS u(shard, weight)",
				   schema);
	if (SPI_execute_with_args(sql, 3, argtypes, args, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "SPI_execute_with_args failed");

	/* every slot in one statement: the slot check sees a complete directory */
	argtypes[1] = TEXTARRAYOID;
	argtypes[2] = INT4ARRAYOID;
	argtypes[3] = INT4ARRAYOID;
	args[1] = PointerGetDatum(construct_array(range_shards, ranges, TEXTOID, -1, false, TYPALIGN_INT));
	args[2] = PointerGetDatum(construct_array(first_datums, ranges, INT4OID, 4, true, TYPALIGN_INT));
	args[3] = PointerGetDatum(construct_array(last_datums, ranges, INT4OID, 4, true, TYPALIGN_INT));
	sql = psprintf("INSERT INTO %s.chash_slot (directory, slot, shard) "
				   "SELECT $1, g.slot, u.shard FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3), pg_catalog.unnest($4)) AS u(shard, first, last), "
				   "pg_catalog.generate_series(u.first, u.last) AS g(slot)", schema);
	if (SPI_execute_with_args(sql, 4, argtypes, args, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "SPI_execute_with_args failed");

	SPI_finish();
	AtEOXact_GUC(true, guc_level);
	PG_RETURN_VOID();
}

Datum
chash_tenant_canonical(PG_FUNCTION_ARGS)
{
	text	   *type_text = PG_GETARG_TEXT_PP(0);
	text	   *tenant = PG_GETARG_TEXT_PP(1);
	const char *t = VARDATA_ANY(tenant);
	size_t		len = VARSIZE_ANY_EXHDR(tenant);
	key_type	ktype;
	tenant_status status;
	canonical_tenant c;

	if (key_type_parse(VARDATA_ANY(type_text), VARSIZE_ANY_EXHDR(type_text), &ktype) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unrecognized key type \"%s\"", text_to_cstring(type_text)),
				 errhint("Valid key types are \"text\", \"bigint\" and \"uuid\".")));
	if (ktype == KEY_TYPE_TEXT)
		PG_RETURN_TEXT_P(tenant);
	status = tenant_canonicalize(ktype, t, len, &c);
	if (status != TENANT_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid tenant \"%.*s\" for key type %s", chash_quote_len(t, len), t, key_type_name(ktype)),
				 status == TENANT_OUT_OF_RANGE ? errdetail("The value is out of range for type bigint.") : 0));
	PG_RETURN_TEXT_P(cstring_to_text_with_len(c.data, c.len));
}

/*
 * Statement trigger on every directory table (and, on shards, a row
 * trigger fired by the apply worker): this transaction's snapshots may now
 * see states no directory row names (directory_cache.c), and at commit
 * every backend hears that some directory changed, through a relcache
 * invalidation of the change history: the guard's cached latest state
 * waits for it (directory_latest).  Not of the routing tables themselves,
 * whose relcache entries every backend would then rebuild.  A database
 * still without the history invalidates the table changed, as 1.0 did.
 */
Datum
chash_directory_invalidate(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Oid			history;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("chash_directory_invalidate() must be called as a trigger")));
	history = get_relname_relid("chash_directory_change",
								RelationGetNamespace(trigdata->tg_relation));
	if (OidIsValid(history))
		CacheInvalidateRelcacheByRelid(history);
	else
		CacheInvalidateRelcache(trigdata->tg_relation);
	directory_cache_note_own_change();
	return PointerGetDatum(NULL);
}
