/*
 * bounded.c - SQL wrapper of consistent hashing with bounded loads (docs/placement.md)
 */
#include "chash.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"

#include "bounded.h"
#include "chash_ring.h"

PG_FUNCTION_INFO_V1(chash_bounded_assign);

Datum
chash_bounded_assign(PG_FUNCTION_ARGS)
{
	static const int required[] = {0, 1, 2, 3, 5};
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ArrayType  *keys_arr;
	double		epsilon;
	Datum	   *keys;
	bool	   *nulls;
	int			nkeys;
	ChashRing	ring;
	int			n;
	uint64	   *key_positions;
	int64	   *capacity;
	int64	   *load;
	int32	   *assigned;
	int32	   *first;
	uint8	   *on_ring;
	Datum	   *names;

	InitMaterializedSRF(fcinfo, 0);
	if (chash_any_arg_null(fcinfo, required, lengthof(required)))
		return (Datum) 0;

	epsilon = PG_GETARG_FLOAT8(2);
	if (!(epsilon > 0) || isinf(epsilon))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("epsilon must be positive and finite"),
				 errdetail("The value given was %g.", epsilon)));
	keys_arr = PG_GETARG_ARRAYTYPE_P(0);
	if (ARR_NDIM(keys_arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("keys must be a one-dimensional array")));
	deconstruct_array(keys_arr, TEXTOID, -1, false, TYPALIGN_INT, &keys, &nulls, &nkeys);
	for (int k = 0; k < nkeys; k++)
		if (nulls[k])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("keys must not contain null elements"),
					 errdetail("Element %d is null.", k + 1)));

	chash_ring_build(fcinfo, 1, 3, 4, 5, false, &ring);
	n = ring.set.list.count;

	key_positions = palloc(sizeof(uint64) * Max(nkeys, 1));
	for (int k = 0; k < nkeys; k++)
	{
		text	   *t = DatumGetTextPP(keys[k]);

		key_positions[k] = hash64(&ring.set.hasher, CHASH_TEXT_DATA(t), CHASH_TEXT_LEN(t));
		chash_check_interrupts_every(k);
	}
	capacity = palloc(sizeof(int64) * n);
	for (int i = 0; i < n; i++)
		capacity[i] = bounded_capacity(epsilon, (size_t) nkeys, n,
									   ring.set.weights ? &ring.set.weights[i] : NULL,
									   ring.set.total_weight);
	load = palloc0(sizeof(int64) * n);
	assigned = palloc(sizeof(int32) * Max(nkeys, 1));
	first = palloc(sizeof(int32) * Max(nkeys, 1));
	on_ring = palloc(n);
	if (bounded_assign(ring.positions, ring.owners, ring.count, n, capacity,
					   key_positions, (size_t) nkeys, load, assigned, first,
					   on_ring, chash_check_interrupts) != BOUNDED_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the nodes on the ring cannot hold all the keys"),
				 errdetail("Some nodes with a weight above zero have no points on the ring."),
				 errhint("Use more vnodes or larger weights.")));

	names = palloc(sizeof(Datum) * n);
	for (int i = 0; i < n; i++)
		names[i] = chash_node_text(&ring.set, i);
	for (int k = 0; k < nkeys; k++)
	{
		Datum		values[3];
		bool		vnulls[3] = {false, false, false};

		chash_check_interrupts_every(k);
		values[0] = keys[k];
		values[1] = names[assigned[k]];
		values[2] = names[first[k]];
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, vnulls);
	}
	return (Datum) 0;
}
