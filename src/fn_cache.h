/*
 * fn_cache.h - derived structures cached in fn_extra across a query's rows
 *
 * A placement function builds a ring, a Maglev table or node hashes from
 * some of its arguments.  The structure lives in a memory context under
 * fn_mcxt and is keyed by the bytes of those arguments: when a row brings
 * the same bytes (a constant array, usually) it is reused, otherwise the
 * context is reset and the structure rebuilt, so memory stays flat however
 * many rows the query has.
 */
#ifndef CHASH_FN_CACHE_H
#define CHASH_FN_CACHE_H

#include "postgres.h"

#include "fmgr.h"

typedef struct ChashFnCache
{
	MemoryContext cxt;			/* holds data; reset on every rebuild */
	char	   *key;			/* the argument bytes data was built from */
	Size		key_len;
	bool		valid;			/* false until a build has finished */
	bool		args_constant;	/* every keyed argument is a Const of the plan */
	void	   *data;
} ChashFnCache;

/* One argument in a cache key; len < 0 for a NULL argument. */
typedef struct ChashKeyPart
{
	const char *data;
	int32		len;
} ChashKeyPart;

/*
 * The calling function's cache, created empty on its first call.
 * keyed_args are the argument numbers the structure is built from: when
 * they are all Consts of the calling expression they cannot change for the
 * life of fn_extra, and a finished cache is reused without comparing bytes.
 */
extern ChashFnCache *chash_fn_cache(FunctionCallInfo fcinfo, const int *keyed_args,
									int nkeyed);

/* A finished cache whose arguments are plan constants: nothing to compare. */
static inline bool
chash_fn_cache_ready(const ChashFnCache *cache)
{
	return cache->valid && cache->args_constant;
}

/* Key part of a varlena argument: its bytes, not copied unless toasted. */
extern void chash_key_part_varlena(FunctionCallInfo fcinfo, int argno, ChashKeyPart *part);

/* Key part of an int32 held in *value (which must outlive the lookup). */
extern void chash_key_part_int32(const int32 *value, ChashKeyPart *part);

/* Whether the cache holds a finished structure built from these parts. */
extern bool chash_fn_cache_hit(const ChashFnCache *cache, const ChashKeyPart *parts, int nparts);

/*
 * Starts a rebuild: invalidates and empties the cache, records the key,
 * and returns the context to build in.  The caller calls
 * chash_fn_cache_finish once the build has succeeded (an error mid-build
 * leaves the cache invalid).
 */
extern MemoryContext chash_fn_cache_rebuild(ChashFnCache *cache,
											const ChashKeyPart *parts, int nparts);

/* Stores a finished structure: later rows with the same key reuse it. */
static inline void *
chash_fn_cache_finish(ChashFnCache *cache, void *data)
{
	cache->data = data;
	cache->valid = true;
	return data;
}

#endif
