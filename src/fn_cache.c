/*
 * fn_cache.c - derived structures cached in fn_extra, keyed by argument bytes
 */
#include "fn_cache.h"

#include "nodes/primnodes.h"
#include "utils/memutils.h"

/* Whether argument argnum of the call expression is a Const. */
static bool
arg_is_const(Node *expr, int argnum)
{
	List	   *args;

	if (expr == NULL || !IsA(expr, FuncExpr))
		return false;
	args = ((FuncExpr *) expr)->args;
	if (argnum < 0 || argnum >= list_length(args))
		return false;
	return IsA(list_nth(args, argnum), Const);
}

ChashFnCache *
chash_fn_cache(FunctionCallInfo fcinfo, const int *keyed_args, int nkeyed)
{
	ChashFnCache *cache = (ChashFnCache *) fcinfo->flinfo->fn_extra;

	if (cache == NULL)
	{
		MemoryContext mcxt = fcinfo->flinfo->fn_mcxt;

		cache = MemoryContextAllocZero(mcxt, sizeof(ChashFnCache));
		cache->cxt = AllocSetContextCreate(mcxt, "chash placement cache",
										   ALLOCSET_SMALL_SIZES);
		cache->args_constant = true;
		for (int i = 0; i < nkeyed; i++)
			if (!arg_is_const(fcinfo->flinfo->fn_expr, keyed_args[i]))
				cache->args_constant = false;
		fcinfo->flinfo->fn_extra = cache;
	}
	return cache;
}

void
chash_key_part_varlena(FunctionCallInfo fcinfo, int argno, ChashKeyPart *part)
{
	struct varlena *v;

	if (PG_ARGISNULL(argno))
	{
		part->data = NULL;
		part->len = -1;
		return;
	}
	v = PG_DETOAST_DATUM_PACKED(PG_GETARG_DATUM(argno));
	part->data = VARDATA_ANY(v);
	part->len = VARSIZE_ANY_EXHDR(v);
}

void
chash_key_part_int32(const int32 *value, ChashKeyPart *part)
{
	part->data = (const char *) value;
	part->len = sizeof(int32);
}

bool
chash_fn_cache_hit(const ChashFnCache *cache, const ChashKeyPart *parts, int nparts)
{
	const char *k = cache->key;
	const char *end = cache->key + cache->key_len;

	if (!cache->valid)
		return false;
	for (int i = 0; i < nparts; i++)
	{
		int32		len;

		if (end - k < (ptrdiff_t) sizeof(int32))
			return false;
		memcpy(&len, k, sizeof(int32));
		k += sizeof(int32);
		if (len != parts[i].len)
			return false;
		if (len > 0)
		{
			if (memcmp(k, parts[i].data, len) != 0)
				return false;
			k += len;
		}
	}
	return k == end;
}

MemoryContext
chash_fn_cache_rebuild(ChashFnCache *cache, const ChashKeyPart *parts, int nparts)
{
	Size		len = 0;
	char	   *k;

	cache->valid = false;
	cache->data = NULL;
	MemoryContextReset(cache->cxt);
	for (int i = 0; i < nparts; i++)
		len += sizeof(int32) + Max(parts[i].len, 0);
	k = MemoryContextAlloc(cache->cxt, Max(len, 1));
	cache->key = k;
	cache->key_len = len;
	for (int i = 0; i < nparts; i++)
	{
		memcpy(k, &parts[i].len, sizeof(int32));
		k += sizeof(int32);
		if (parts[i].len > 0)
		{
			memcpy(k, parts[i].data, parts[i].len);
			k += parts[i].len;
		}
	}
	return cache->cxt;
}
