/*
 * rendezvous.c - SQL wrappers of rendezvous hashing (docs/placement.md)
 */
#include "chash.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/array.h"

#include "fn_cache.h"
#include "joined_hash.h"
#include "node_set.h"
#include "rendezvous.h"

PG_FUNCTION_INFO_V1(chash_rendezvous);
PG_FUNCTION_INFO_V1(chash_rendezvous_top);

typedef struct RendezvousCache
{
	ChashNodeSet set;
	uint64	   *node_hashes;	/* XXH64 of each name (xxh64 family) */
	uint64	   *scores;			/* per-call scratch: each node's score */
	double	   *bids;			/* per-call scratch: weighted bids */
	int32	   *top;			/* per-call scratch: ranking */
	int32	   *group_of;		/* weight group of each node (-1: weight 0) */
	double	   *group_weight;	/* the distinct positive weights */
	int			ngroups;
	int32	   *group_best;		/* per-call scratch: each group's candidate */
	char	   *joined;			/* per-call scratch: node ':' key (md5 family) */
	Size		joined_size;
} RendezvousCache;

/* The cached node set of (nodes, weights, hash), rebuilt when they change. */
static RendezvousCache *
rendezvous_cache(FunctionCallInfo fcinfo, int nodes_arg, int weights_arg, int hash_arg)
{
	int			keyed[3] = {nodes_arg, weights_arg, hash_arg};
	ChashFnCache *fc = chash_fn_cache(fcinfo, keyed, 3);
	ChashKeyPart parts[3];
	MemoryContext cxt;
	RendezvousCache *c;
	int			n;

	if (chash_fn_cache_ready(fc))
		return (RendezvousCache *) fc->data;
	chash_key_part_varlena(fcinfo, nodes_arg, &parts[0]);
	chash_key_part_varlena(fcinfo, weights_arg, &parts[1]);
	chash_key_part_varlena(fcinfo, hash_arg, &parts[2]);
	if (chash_fn_cache_hit(fc, parts, 3))
		return (RendezvousCache *) fc->data;

	cxt = chash_fn_cache_rebuild(fc, parts, 3);
	c = MemoryContextAllocZero(cxt, sizeof(RendezvousCache));
	chash_node_set_read(fcinfo, nodes_arg, "nodes", weights_arg, hash_arg, cxt, &c->set);
	n = c->set.list.count;
	c->node_hashes = MemoryContextAlloc(cxt, sizeof(uint64) * n);
	c->scores = MemoryContextAlloc(cxt, sizeof(uint64) * n);
	c->bids = MemoryContextAlloc(cxt, sizeof(double) * n);
	c->top = MemoryContextAlloc(cxt, sizeof(int32) * n);
	for (int i = 0; i < n; i++)
	{
		chash_check_interrupts_every(i);
		c->node_hashes[i] = xxh64_hash(c->set.list.names[i], c->set.list.lengths[i], 0);
	}
	if (c->set.weights)
	{
		int32	   *order = palloc(sizeof(int32) * n);

		c->group_of = MemoryContextAlloc(cxt, sizeof(int32) * n);
		c->group_weight = MemoryContextAlloc(cxt, sizeof(double) * n);
		c->group_best = MemoryContextAlloc(cxt, sizeof(int32) * n);
		c->ngroups = rendezvous_group_weights(c->set.weights, n, order, c->group_of,
											  c->group_weight, chash_check_interrupts);
		pfree(order);
	}
	c->set.share_texts = fc->args_constant;
	return chash_fn_cache_finish(fc, c);
}

/* Every node's score S for the key (docs/placement.md). */
static void
compute_scores(RendezvousCache *c, FunctionCallInfo fcinfo, text *key)
{
	const char *kd = CHASH_TEXT_DATA(key);
	Size		klen = CHASH_TEXT_LEN(key);
	int			n = c->set.list.count;

	if (c->set.hasher.family == HASH_FAMILY_XXH64)
	{
		uint64		kh = xxh64_hash(kd, klen, 0);

		for (int i = 0; i < n; i++)
			c->scores[i] = rendezvous_xxh64_score(kh, c->node_hashes[i]);
		return;
	}
	if (c->joined_size < c->set.max_length + 1 + klen)
	{
		/* Grows geometrically, so longer and longer keys cost O(total). */
		ChashFnCache *fc = (ChashFnCache *) fcinfo->flinfo->fn_extra;

		if (c->joined)
			pfree(c->joined);
		c->joined_size = Max(c->set.max_length + 1 + klen, 2 * c->joined_size);
		c->joined = MemoryContextAlloc(fc->cxt, c->joined_size);
	}
	for (int i = 0; i < n; i++)
		c->scores[i] = hash64_joined(&c->set.hasher, c->set.list.names[i],
									 c->set.list.lengths[i], ":", 1, kd, klen,
									 c->joined);
}

Datum
chash_rendezvous(PG_FUNCTION_ARGS)
{
	static const int required[] = {0, 1, 3};
	RendezvousCache *c;
	text	   *key;
	int			winner;

	if (chash_any_arg_null(fcinfo, required, lengthof(required)))
		PG_RETURN_NULL();
	c = rendezvous_cache(fcinfo, 1, 2, 3);
	key = PG_GETARG_TEXT_PP(0);
	if (c->set.weights == NULL && c->set.hasher.family == HASH_FAMILY_XXH64)
	{
		/* The hot path: one key hash, one mix per node, no scratch. */
		winner = rendezvous_xxh64_winner(xxh64_hash(CHASH_TEXT_DATA(key), CHASH_TEXT_LEN(key), 0),
										 c->node_hashes, c->set.list.count);
	}
	else
	{
		compute_scores(c, fcinfo, key);
		if (c->set.weights)
			winner = rendezvous_weighted_winner(c->scores, c->group_of, c->set.list.count,
												c->group_weight, c->ngroups, c->group_best);
		else
		{
			rendezvous_top(c->scores, NULL, c->set.list.count, 1, c->bids, c->top);
			winner = c->top[0];
		}
	}
	PG_RETURN_DATUM(chash_node_text(&c->set, winner));
}

Datum
chash_rendezvous_top(PG_FUNCTION_ARGS)
{
	static const int required[] = {0, 1, 2, 4};
	RendezvousCache *c;
	int32		k;
	Datum	   *names;

	if (chash_any_arg_null(fcinfo, required, lengthof(required)))
		PG_RETURN_NULL();
	c = rendezvous_cache(fcinfo, 1, 3, 4);
	k = PG_GETARG_INT32(2);
	chash_check_at_least_one(k, "k");
	if (k > c->set.positive)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must not exceed the number of nodes that can be chosen"),
				 c->set.weights ?
				 errdetail("k is %d, but only %d nodes have a weight above zero.",
						   k, c->set.positive) :
				 errdetail("k is %d, but there are only %d nodes.", k, c->set.positive)));
	compute_scores(c, fcinfo, PG_GETARG_TEXT_PP(0));
	rendezvous_top(c->scores, c->set.weights, c->set.list.count, k, c->bids, c->top);
	names = palloc(sizeof(Datum) * k);
	for (int i = 0; i < k; i++)
		names[i] = chash_node_text(&c->set, c->top[i]);
	PG_RETURN_ARRAYTYPE_P(construct_array(names, k, TEXTOID, -1, false, TYPALIGN_INT));
}
