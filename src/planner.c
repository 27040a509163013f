/*
 * planner.c - chash_plan_rebalance: reads a directory, runs the core
 * planner (src/core/planner.c), returns the plan (docs/planner.md)
 *
 * The directory is read with three aggregate queries (slot owners as one
 * int4[], tenants per slot, pinned bytes per shard) rather than row by row,
 * so planning 1,048,576 slots stays well under a second.  Shards are
 * numbered in byte order of their names (COLLATE "C"), which is how the
 * core's "lower index" becomes the contract's "lower shard name" on every machine.
 */
#include "chash.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include "load_stats.h"
#include "planner.h"
#include "shard_names.h"
#include "states.h"

PG_FUNCTION_INFO_V1(chash_plan_rebalance);

/*
 * chash.load_tolerance: how far over its share of the load a shard may be
 * before the 'load' plan moves slots off it (docs/load.md).
 */
double		chash_load_tolerance = 0.1;

/*
 * The directory's triggers keep these states out; reaching one takes
 * disabled triggers or a restore that skipped them.  55000, not XX001:
 * the storage is fine, the rows are not.
 */
#define DIRECTORY_STATE_HINT \
	"The directory tables break an invariant their triggers keep (were triggers disabled?); correct the rows."

typedef struct plan_input
{
	int32		slot_count;
	int32		nshards;
	char	  **names;
	planner_shard *shards;
	int32	   *owners;
	int64	   *slot_tenants;	/* unpinned tenants with a size, per slot */
	double	   *slot_bytes;		/* their bytes, per slot */
	double	   *fixed_bytes;	/* pinned tenants' bytes, per shard */
	/* 'load' (docs/load.md): collected load, bytes as the tie-break */
	double	   *slot_load;
	double	   *fixed_load;
} plan_input;

/* The quoted schema of the extension: the schema of the calling function. */
static char *
extension_schema(FunctionCallInfo fcinfo)
{
	Oid			nsp = get_func_namespace(fcinfo->flinfo->fn_oid);

	return pstrdup(quote_identifier(get_namespace_name(nsp)));
}

static void
spi_exec(const char *sql, Datum directory)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {directory};
	int			rc = SPI_execute_with_args(sql, 1, argtypes, values, NULL, true, 0);

	if (rc != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(rc));
}

static Datum
spi_value(int row, int col, bool *isnull)
{
	return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, isnull);
}

/*
 * Fills in->owners (slot_count entries) from the slot rows, read through a
 * cursor in slot order; every slot 0 .. slot_count - 1 must be there once.
 */
static void
read_owners(const char *schema, text *directory, plan_input *in)
{
	StringInfoData sql;
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {PointerGetDatum(directory)};
	Portal		portal;
	int64		count = 0;
	size_t		capacity = shard_names_capacity(in->nshards);
	shard_names names;

	/* the shards' names are distinct: chash_shard's key */
	shard_names_init(&names, palloc0(sizeof(tenant_map_entry) * capacity), capacity);
	for (int32 i = 0; i < in->nshards; i++)
	{
		chash_check_interrupts_every(i);
		(void) shard_names_add(&names, in->names[i], strlen(in->names[i]), i);
	}
	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT slot, shard FROM %s.chash_slot WHERE directory = $1 ORDER BY slot",
					 schema);
	portal = SPI_cursor_open_with_args(NULL, sql.data, 1, argtypes, values, NULL, true, 0);
	for (;;)
	{
		SPI_cursor_fetch(portal, true, 10000);
		if (SPI_processed == 0)
			break;
		for (uint64 r = 0; r < SPI_processed; r++)
		{
			bool		isnull;
			int32		slot = DatumGetInt32(spi_value((int) r, 1, &isnull));
			text	   *name = DatumGetTextPP(spi_value((int) r, 2, &isnull));
			int32		i = shard_names_find(&names, VARDATA_ANY(name), VARSIZE_ANY_EXHDR(name));

			if (slot != count || count >= in->slot_count || i < 0)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("slot owners of directory \"%s\" do not match its %d slots and its shards",
								text_to_cstring(directory), in->slot_count),
						 errdetail("Slot %d is missing, out of range or owned by a shard the directory does not have.",
								   (int) count),
						 errhint(DIRECTORY_STATE_HINT)));
			in->owners[count++] = i;
		}
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	pfree(names.map.entries);
	if (count != in->slot_count)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("directory \"%s\" has %lld slot owners for %d slots",
						text_to_cstring(directory), (long long) count, in->slot_count),
				 errhint(DIRECTORY_STATE_HINT)));
	pfree(sql.data);
}

/*
 * Reads everything the planner needs.  Values are copied into the
 * caller's memory context (SPI's is gone after SPI_finish).
 */
static void read_load(const char *schema, Datum dir, plan_input *in, MemoryContext outer);

static void
read_directory(FunctionCallInfo fcinfo, text *directory, plan_input *in, bool load)
{
	MemoryContext outer = CurrentMemoryContext;
	Datum		dir = PointerGetDatum(directory);
	char	   *schema = extension_schema(fcinfo);
	StringInfoData sql;
	bool		isnull;
	int			save_nestlevel;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");

	/*
	 * These queries join whole tables.  A freshly filled directory has no
	 * statistics, and the planner then takes it for a few rows and picks
	 * nested loops: a 'bytes' plan over 300,000 sizes and 100,000 pins ran
	 * for minutes.  Hash joins are linear whatever the estimates, so turn
	 * nested loops off for these queries only, as RI_Initial_Check sets
	 * work_mem for its own (undone by AtEOXact_GUC below, or on error),
	 * at the level that pins search_path.
	 */
	save_nestlevel = chash_pin_search_path();
	(void) set_config_option("enable_nestloop", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	initStringInfo(&sql);

	appendStringInfo(&sql, "SELECT slot_count FROM %s.chash_directory WHERE name = $1", schema);
	spi_exec(sql.data, dir);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("directory \"%s\" does not exist", text_to_cstring(directory))));
	in->slot_count = DatumGetInt32(spi_value(0, 1, &isnull));

	resetStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT shard, weight, state FROM %s.chash_shard WHERE directory = $1 "
					 "ORDER BY shard COLLATE \"C\"", schema);
	spi_exec(sql.data, dir);
	in->nshards = (int32) SPI_processed;
	if (in->nshards == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("directory \"%s\" has no shards", text_to_cstring(directory))));
	in->names = MemoryContextAlloc(outer, sizeof(char *) * in->nshards);
	in->shards = MemoryContextAlloc(outer, sizeof(planner_shard) * in->nshards);
	for (int32 i = 0; i < in->nshards; i++)
	{
		char	   *state;

		in->names[i] = MemoryContextStrdup(outer,
										   TextDatumGetCString(spi_value(i, 1, &isnull)));
		in->shards[i].weight = DatumGetFloat8(spi_value(i, 2, &isnull));
		state = TextDatumGetCString(spi_value(i, 3, &isnull));
		switch (state_parse(STATE_SHARD, state, strlen(state)))
		{
			case SHARD_ACTIVE:
				in->shards[i].state = PLANNER_ACTIVE;
				break;
			case SHARD_DRAINING:
				in->shards[i].state = PLANNER_DRAINING;
				break;
			default:
				in->shards[i].state = PLANNER_RETIRED;
				break;
		}
	}

	/*
	 * Owners as shard indexes, in slot order: one pass over the slot rows
	 * in primary-key order, names mapped to indexes here.  A join with
	 * the shards would leave the plan to the table's statistics, and a
	 * freshly created directory has none: a nested loop then read every
	 * slot once per shard (9 s for 1,048,576 slots over 64 shards).
	 */
	in->owners = MemoryContextAlloc(outer, sizeof(int32) * in->slot_count);
	read_owners(schema, directory, in);

	/*
	 * Measured tenants that move with their slot.  Pinned tenants never
	 * move with a slot: they count on their pinned shard, those without a
	 * size as the mean of the measured ones.
	 */
	in->slot_tenants = MemoryContextAllocZero(outer, sizeof(int64) * in->slot_count);
	in->slot_bytes = MemoryContextAllocHuge(outer, sizeof(double) * in->slot_count);
	memset(in->slot_bytes, 0, sizeof(double) * in->slot_count);
	in->fixed_bytes = MemoryContextAllocZero(outer, sizeof(double) * in->nshards);

	resetStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT %s.chash_slot($1, t.tenant) AS slot, pg_catalog.count(*), "
					 "       pg_catalog.sum(t.bytes)::float8 "
					 "FROM %s.chash_tenant_size t "
					 "WHERE t.directory = $1 AND NOT EXISTS "
					 "  (SELECT FROM %s.chash_override o WHERE o.directory = $1 AND o.tenant = t.tenant) "
					 "GROUP BY 1", schema, schema, schema);
	spi_exec(sql.data, dir);
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		int32		slot = DatumGetInt32(spi_value(r, 1, &isnull));

		if (slot < 0 || slot >= in->slot_count)
			continue;
		in->slot_tenants[slot] = DatumGetInt64(spi_value(r, 2, &isnull));
		in->slot_bytes[slot] = DatumGetFloat8(spi_value(r, 3, &isnull));
	}

	resetStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT k.i, pg_catalog.sum(COALESCE(t.bytes::float8, m.mean, 0)) "
					 "FROM %s.chash_override o "
					 "JOIN (SELECT shard, (pg_catalog.row_number() OVER (ORDER BY shard COLLATE \"C\"))::int4 - 1 AS i "
					 "      FROM %s.chash_shard WHERE directory = $1) k ON k.shard = o.shard "
					 "LEFT JOIN %s.chash_tenant_size t ON t.directory = $1 AND t.tenant = o.tenant "
					 "CROSS JOIN (SELECT pg_catalog.avg(bytes)::float8 AS mean "
					 "            FROM %s.chash_tenant_size WHERE directory = $1) m "
					 "WHERE o.directory = $1 GROUP BY k.i", schema, schema, schema, schema);
	spi_exec(sql.data, dir);
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		int32		i = DatumGetInt32(spi_value(r, 1, &isnull));

		in->fixed_bytes[i] = DatumGetFloat8(spi_value(r, 2, &isnull));
	}
	if (load)
		read_load(schema, dir, in, outer);

	AtEOXact_GUC(true, save_nestlevel);
	SPI_finish();
}

/*
 * The load chash_collect brought home (reads + rows written), per slot
 * whatever shard counted it, less the load of pinned tenants, which counts
 * on their shard and never moves with a slot.  A directory of more slots
 * than a shard keeps counts them folded (slot modulo the buckets): a
 * bucket's load is spread evenly over its slots.  Bytes break ties: they
 * weigh a millionth of the load per byte on average, so they decide
 * between slots of equal load only, and alone when no load was
 * collected.
 */
#define LOAD_BUCKETS 16384

static void
read_load(const char *schema, Datum dir, plan_input *in, MemoryContext outer)
{
	StringInfoData sql;
	bool		isnull;
	int32		buckets = Min(in->slot_count, LOAD_BUCKETS);
	double		total_load = 0,
				total_bytes = 0,
				per_byte;

	in->slot_load = MemoryContextAllocHuge(outer, sizeof(double) * in->slot_count);
	memset(in->slot_load, 0, sizeof(double) * in->slot_count);
	in->fixed_load = MemoryContextAllocZero(outer, sizeof(double) * in->nshards);
	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT l.slot, pg_catalog.sum(l.reads + l.writes)::float8 "
					 "FROM %s.chash_load_slot l WHERE l.directory = $1 GROUP BY 1", schema);
	spi_exec(sql.data, dir);
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		int32		bucket = DatumGetInt32(spi_value(r, 1, &isnull));
		double		load = DatumGetFloat8(spi_value(r, 2, &isnull));
		int32		members;

		if (bucket < 0 || bucket >= buckets)
			continue;
		members = (in->slot_count - bucket + buckets - 1) / buckets;
		for (int32 s = bucket; s < in->slot_count; s += buckets)
			in->slot_load[s] += load / members;
	}
	resetStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT k.i, t.slot, (t.reads + t.writes)::float8 "
					 "FROM %s.chash_load_tenant t "
					 "JOIN %s.chash_override o ON o.directory = $1 AND o.tenant = t.tenant "
					 "JOIN (SELECT shard, (pg_catalog.row_number() OVER (ORDER BY shard COLLATE \"C\"))::int4 - 1 AS i "
					 "      FROM %s.chash_shard WHERE directory = $1) k ON k.shard = t.shard "
					 "WHERE t.directory = $1 AND t.reads IS NOT NULL", schema, schema, schema);
	spi_exec(sql.data, dir);
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		int32		i = DatumGetInt32(spi_value(r, 1, &isnull));
		int32		bucket = DatumGetInt32(spi_value(r, 2, &isnull));
		double		load = DatumGetFloat8(spi_value(r, 3, &isnull));
		int32		members;

		in->fixed_load[i] += load;
		if (bucket < 0 || bucket >= buckets)
			continue;
		members = (in->slot_count - bucket + buckets - 1) / buckets;
		for (int32 s = bucket; s < in->slot_count; s += buckets)
			in->slot_load[s] = Max(0, in->slot_load[s] - load / members);
	}
	for (int32 s = 0; s < in->slot_count; s++)
	{
		total_load += in->slot_load[s];
		total_bytes += in->slot_bytes[s];
	}
	for (int32 i = 0; i < in->nshards; i++)
	{
		total_load += in->fixed_load[i];
		total_bytes += in->fixed_bytes[i];
	}
	per_byte = total_load > 0 && total_bytes > 0 ? 1e-6 * total_load / total_bytes : 1;
	for (int32 s = 0; s < in->slot_count; s++)
		in->slot_load[s] += in->slot_bytes[s] * per_byte;
	for (int32 i = 0; i < in->nshards; i++)
		in->fixed_load[i] += in->fixed_bytes[i] * per_byte;
}

static void
report_planner_status(planner_status status, text *directory)
{
	if (status == PLANNER_OK)
		return;
	if (status == PLANNER_NO_ACTIVE_SHARD)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("directory \"%s\" has no active shard", text_to_cstring(directory)),
				 errdetail("Draining and retired shards target zero slots; some shard must take them."),
				 errhint("Add a shard or set one back to \"active\".")));
	if (status == PLANNER_WEIGHT_SUM_TOO_LARGE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("weights of the active shards of directory \"%.*s\" sum to more than the largest float8",
						chash_quote_len(VARDATA_ANY(directory), VARSIZE_ANY_EXHDR(directory)),
						VARDATA_ANY(directory)),
				 errdetail("Each weight is finite, but their sum is not."),
				 errhint("Lower the weights with chash_set_shard(): only their ratios matter.")));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("directory \"%s\" cannot be planned: %s",
					text_to_cstring(directory), planner_status_message(status)),
			 errhint(DIRECTORY_STATE_HINT)));
}

Datum
chash_plan_rebalance(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	text	   *directory;
	char	   *strategy;
	int32		max_moves = -1;
	plan_input	in;
	planner_move *moves;
	int32		nmoves;
	planner_status status;
	void	   *work;
	bool		load_mode;

	InitMaterializedSRF(fcinfo, 0);
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		return (Datum) 0;		/* no rows, as from STRICT */
	directory = PG_GETARG_TEXT_PP(0);
	strategy = text_to_cstring(PG_GETARG_TEXT_PP(1));
	if (strcmp(strategy, "slots") != 0 && strcmp(strategy, "bytes") != 0 &&
		strcmp(strategy, "load") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unrecognized rebalance strategy \"%s\"", strategy),
				 errhint("Valid strategies are \"slots\", \"bytes\" and \"load\".")));
	if (!PG_ARGISNULL(2))
	{
		max_moves = PG_GETARG_INT32(2);
		if (max_moves < 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("max_moves must be at least 1"),
					 errdetail("The value given was %d.", max_moves),
					 errhint("Pass NULL for the whole plan.")));
	}

	load_mode = strcmp(strategy, "load") == 0;
	memset(&in, 0, sizeof(in));
	read_directory(fcinfo, directory, &in, load_mode);

	moves = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(planner_move) * in.slot_count);
	if (strcmp(strategy, "slots") == 0)
	{
		work = MemoryContextAllocHuge(CurrentMemoryContext,
									  planner_slots_work_size(in.nshards, in.slot_count));
		status = planner_plan_slots(in.owners, in.slot_count, in.shards, in.nshards,
									work, moves, &nmoves, NULL);
	}
	else if (load_mode)
	{
		work = MemoryContextAllocHuge(CurrentMemoryContext,
									  planner_load_work_size(in.nshards, in.slot_count));
		status = planner_plan_load(in.owners, in.slot_count, in.slot_load, in.fixed_load,
								   in.shards, in.nshards, chash_load_tolerance,
								   work, moves, &nmoves);
	}
	else
	{
		work = MemoryContextAllocHuge(CurrentMemoryContext,
									  planner_bytes_work_size(in.nshards, in.slot_count));
		status = planner_plan_bytes(in.owners, in.slot_count, in.slot_bytes, in.fixed_bytes,
									in.shards, in.nshards, work, moves, &nmoves);
	}
	report_planner_status(status, directory);
	if (max_moves >= 0 && nmoves > max_moves)
		nmoves = max_moves;

	for (int32 k = 0; k < nmoves; k++)
	{
		Datum		values[6];
		bool		nulls[6] = {false, false, false, false, false, false};
		planner_move m = moves[k];

		values[0] = Int32GetDatum(k + 1);
		values[1] = Int32GetDatum(m.slot);
		values[2] = CStringGetTextDatum(in.names[m.from]);
		values[3] = CStringGetTextDatum(in.names[m.to]);
		values[4] = Int64GetDatum(in.slot_tenants[m.slot]);
		values[5] = Int64GetDatum((int64) llround(in.slot_bytes[m.slot]));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
