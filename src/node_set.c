/*
 * node_set.c - reading the node-array arguments of the placement functions
 */
#include "node_set.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/builtins.h"

void
chash_node_set_read(FunctionCallInfo fcinfo, int nodes_arg, const char *argname,
					int weights_arg, int hash_arg, MemoryContext cxt,
					ChashNodeSet *set)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	ArrayType  *nodes = PG_GETARG_ARRAYTYPE_P_COPY(nodes_arg);

	memset(set, 0, sizeof(*set));
	if (hash_arg >= 0)
		set->hasher = chash_hasher_from_text(PG_GETARG_TEXT_PP(hash_arg));
	else
	{
		set->hasher.family = HASH_FAMILY_MD5;
		set->hasher.md5 = chash_server_md5;
	}
	chash_node_list_from_array(nodes, argname, &set->list);
	for (int i = 0; i < set->list.count; i++)
		set->max_length = Max(set->max_length, set->list.lengths[i]);

	set->positive = set->list.count;
	set->total_weight = set->list.count;
	if (weights_arg >= 0 && !PG_ARGISNULL(weights_arg))
	{
		set->weights = chash_weights_from_array(PG_GETARG_ARRAYTYPE_P(weights_arg),
												set->list.count);
		set->positive = 0;
		set->total_weight = 0;
		for (int i = 0; i < set->list.count; i++)
		{
			set->positive += set->weights[i] > 0;
			set->total_weight += set->weights[i];
		}
		if (isinf(set->total_weight))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("weights are too large"),
					 errdetail("The sum of the weights overflows double precision.")));
	}
	set->texts = palloc(sizeof(Datum) * set->list.count);
	for (int i = 0; i < set->list.count; i++)
	{
		set->texts[i] = PointerGetDatum(cstring_to_text_with_len(set->list.names[i],
																 set->list.lengths[i]));
		chash_check_interrupts_every(i);
	}
	MemoryContextSwitchTo(old);
}

Datum
chash_node_text(const ChashNodeSet *set, int i)
{
	if (set->share_texts)
		return set->texts[i];
	return PointerGetDatum(cstring_to_text_with_len(set->list.names[i],
													set->list.lengths[i]));
}

bool
chash_any_arg_null(FunctionCallInfo fcinfo, const int *args, int nargs)
{
	for (int i = 0; i < nargs; i++)
		if (PG_ARGISNULL(args[i]))
			return true;
	return false;
}
