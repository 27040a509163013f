/*
 * maglev.c - SQL wrappers of Maglev hashing (docs/placement.md)
 */
#include "chash.h"

#include "funcapi.h"
#include "miscadmin.h"

#include "fn_cache.h"
#include "maglev.h"
#include "node_set.h"

PG_FUNCTION_INFO_V1(chash_maglev);
PG_FUNCTION_INFO_V1(chash_maglev_table);

typedef struct MaglevTable
{
	ChashNodeSet set;
	uint32		size;
	int32	   *table;			/* backend index of each slot */
} MaglevTable;

/* Builds the table of (backends, table_size, weights, hash) args 0..3 of args. */
static void
maglev_build(FunctionCallInfo fcinfo, int backends_arg, int size_arg, int weights_arg,
			 int hash_arg, MaglevTable *t)
{
	int32		size = PG_GETARG_INT32(size_arg);
	uint32	   *offsets;
	uint32	   *skips;
	uint32	   *next;
	uint64	   *turns;
	char	   *scratch;
	int			n;

	chash_node_set_read(fcinfo, backends_arg, "backends", weights_arg, hash_arg,
						CurrentMemoryContext, &t->set);
	n = t->set.list.count;
	switch (maglev_check_size(size, n))
	{
		case MAGLEV_OK:
			break;
		case MAGLEV_NOT_PRIME:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("table_size must be a prime number"),
					 errdetail("The value given was %d.", size),
					 errhint("65537 and 655373 are primes.")));
			break;
		case MAGLEV_TOO_SMALL:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("table_size must be at least the number of backends"),
					 errdetail("table_size is %d, and there are %d backends.", size, n)));
			break;
		case MAGLEV_TOO_LARGE:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("table_size must be at most %d", MAGLEV_MAX_TABLE_SIZE),
					 errdetail("The value given was %d.", size)));
			break;
	}
	t->size = (uint32) size;
	offsets = palloc(sizeof(uint32) * n);
	skips = palloc(sizeof(uint32) * n);
	next = palloc(sizeof(uint32) * n);
	turns = t->set.weights ? palloc(sizeof(uint64) * n) : NULL;
	scratch = palloc(t->set.max_length + 8);
	for (int i = 0; i < n; i++)
	{
		/* Two hashes per backend, up to 16,777,213 backends: seconds with MD5. */
		chash_check_interrupts_every(i);
		maglev_permutation(&t->set.hasher, t->set.list.names[i], t->set.list.lengths[i],
						   t->size, scratch, &offsets[i], &skips[i]);
	}
	t->table = palloc(sizeof(int32) * t->size);
	maglev_populate(t->size, n, offsets, skips, t->set.weights, next, turns, t->table,
					chash_check_interrupts);
	pfree(offsets);
	pfree(skips);
	pfree(next);
	if (turns)
		pfree(turns);
	pfree(scratch);
}

static MaglevTable *maglev_cached_table(FunctionCallInfo fcinfo, ChashFnCache *fc);

Datum
chash_maglev(PG_FUNCTION_ARGS)
{
	static const int required[] = {0, 1, 2, 4};
	static const int keyed[] = {1, 2, 3, 4};
	ChashFnCache *fc;
	MaglevTable *t;
	text	   *key;

	if (chash_any_arg_null(fcinfo, required, lengthof(required)))
		PG_RETURN_NULL();
	fc = chash_fn_cache(fcinfo, keyed, lengthof(keyed));
	if (chash_fn_cache_ready(fc))
		t = (MaglevTable *) fc->data;
	else
		t = maglev_cached_table(fcinfo, fc);
	key = PG_GETARG_TEXT_PP(0);
	PG_RETURN_DATUM(chash_node_text(&t->set,
									t->table[hash64(&t->set.hasher, CHASH_TEXT_DATA(key),
													CHASH_TEXT_LEN(key)) % t->size]));
}

/* The table of a lookup, after comparing its arguments' bytes. */
static MaglevTable *
maglev_cached_table(FunctionCallInfo fcinfo, ChashFnCache *fc)
{
	ChashKeyPart parts[4];
	int32		size = PG_GETARG_INT32(2);
	MaglevTable *t;
	MemoryContext old;

	chash_key_part_varlena(fcinfo, 1, &parts[0]);
	chash_key_part_int32(&size, &parts[1]);
	chash_key_part_varlena(fcinfo, 3, &parts[2]);
	chash_key_part_varlena(fcinfo, 4, &parts[3]);
	if (chash_fn_cache_hit(fc, parts, 4))
		return (MaglevTable *) fc->data;
	old = MemoryContextSwitchTo(chash_fn_cache_rebuild(fc, parts, 4));
	t = palloc0(sizeof(MaglevTable));
	maglev_build(fcinfo, 1, 2, 3, 4, t);
	MemoryContextSwitchTo(old);
	t->set.share_texts = fc->args_constant;
	return chash_fn_cache_finish(fc, t);
}

Datum
chash_maglev_table(PG_FUNCTION_ARGS)
{
	static const int required[] = {0, 1, 3};
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MaglevTable t;
	Datum	   *names;

	InitMaterializedSRF(fcinfo, 0);
	if (chash_any_arg_null(fcinfo, required, lengthof(required)))
		return (Datum) 0;
	memset(&t, 0, sizeof(t));
	maglev_build(fcinfo, 0, 1, 2, 3, &t);
	names = palloc(sizeof(Datum) * t.set.list.count);
	for (int i = 0; i < t.set.list.count; i++)
		names[i] = chash_node_text(&t.set, i);
	for (uint32 s = 0; s < t.size; s++)
	{
		Datum		values[2];
		bool		nulls[2] = {false, false};

		/* Up to 16,777,213 rows into the tuplestore: seconds. */
		chash_check_interrupts_every(s);
		values[0] = Int32GetDatum((int32) s);
		values[1] = names[t.table[s]];
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
