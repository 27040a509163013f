/*
 * redis_slot.c - SQL wrappers of Redis Cluster's key slots (docs/placement.md)
 */
#include "chash.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"

#include "redis_slot.h"

PG_FUNCTION_INFO_V1(chash_redis_slot);
PG_FUNCTION_INFO_V1(chash_redis_same_slot);

Datum
chash_redis_slot(PG_FUNCTION_ARGS)
{
	struct varlena *key = PG_GETARG_VARLENA_PP(0);

	PG_RETURN_INT32(redis_cluster_slot(CHASH_TEXT_DATA(key), CHASH_TEXT_LEN(key)));
}

/*
 * True when every key hashes to one slot.  An empty array is trivially
 * true, as a multi-key command with no keys has nothing to cross; a NULL
 * element is an error (the conventions in docs/reference.md).
 */
Datum
chash_redis_same_slot(PG_FUNCTION_ARGS)
{
	ArrayType  *keys = PG_GETARG_ARRAYTYPE_P(0);
	Datum	   *elems;
	bool	   *nulls;
	int			count;
	int			first = -1;

	if (ARR_NDIM(keys) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("keys must be a one-dimensional array")));
	deconstruct_array(keys, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &count);
	for (int i = 0; i < count; i++)
	{
		text	   *t;
		int			slot;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("keys must not contain null elements"),
					 errdetail("Element %d is null.", i + 1)));
		/* A keys array can hold a hundred million keys. */
		chash_check_interrupts_every(i);
		t = (text *) PG_DETOAST_DATUM_PACKED(elems[i]);
		slot = redis_cluster_slot(CHASH_TEXT_DATA(t), CHASH_TEXT_LEN(t));
		if (first < 0)
			first = slot;
		else if (slot != first)
			PG_RETURN_BOOL(false);
	}
	PG_RETURN_BOOL(true);
}
