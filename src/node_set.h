/*
 * node_set.h - the node-array arguments of the placement functions
 *
 * nodes text[], weights float8[] DEFAULT NULL and hash text read and
 * checked once (the conventions in docs/reference.md), copied into a cache context so the structures
 * built from them can point at the names.
 */
#ifndef CHASH_NODE_SET_H
#define CHASH_NODE_SET_H

#include "chash.h"

typedef struct ChashNodeSet
{
	ChashNodeList list;			/* names point into a copy of the array */
	double	   *weights;		/* NULL when not given */
	int			positive;		/* nodes of weight > 0 (all without weights) */
	int			max_length;		/* longest name, in bytes */
	double		total_weight;	/* sum of weights (count without weights) */
	hasher64	hasher;
	Datum	   *texts;			/* each name as a text datum */
	bool		share_texts;	/* results may point at texts (see below) */
} ChashNodeSet;

/*
 * Reads the node array of argument nodes_arg (named argname in messages),
 * the weights of weights_arg (-1: none) and the hash family of hash_arg
 * (-1: none) into memory of cxt.  The arguments must not be NULL, except
 * the weights.
 */
extern void chash_node_set_read(FunctionCallInfo fcinfo, int nodes_arg, const char *argname,
								int weights_arg, int hash_arg, MemoryContext cxt,
								ChashNodeSet *set);

/*
 * Node i's name as a text datum: a copy in the current context, or, when
 * share_texts, the cached datum itself.  Sharing is only set for caches
 * whose arguments are plan constants: the cache then lives, unchanged, as
 * long as the expression, like the Const datums a function may return.
 */
extern Datum chash_node_text(const ChashNodeSet *set, int i);

/* True when any of the arguments is NULL. */
extern bool chash_any_arg_null(FunctionCallInfo fcinfo, const int *args, int nargs);

#endif
