/*
 * ketama.c - SQL wrapper of the libketama ring (docs/placement.md)
 */
#include "chash.h"

#include <math.h>

#include "fn_cache.h"
#include "joined_hash.h"
#include "ketama.h"
#include "node_set.h"
#include "ring.h"

PG_FUNCTION_INFO_V1(chash_ketama);

typedef struct KetamaCache
{
	ChashNodeSet set;
	size_t		count;
	uint64	   *positions;		/* 32-bit points << 32, sorted */
	int32	   *owners;
	int			index_bits;		/* bucket index over positions (ring.h) */
	uint32	   *index;
} KetamaCache;

static KetamaCache *
ketama_cache(FunctionCallInfo fcinfo)
{
	static const int keyed[] = {1, 2};
	ChashFnCache *fc = chash_fn_cache(fcinfo, keyed, lengthof(keyed));
	ChashKeyPart parts[2];
	MemoryContext old;
	KetamaCache *c;
	uint32	   *digests;
	ring_point *points;
	char	   *scratch;
	int			n;

	if (chash_fn_cache_ready(fc))
		return (KetamaCache *) fc->data;
	chash_key_part_varlena(fcinfo, 1, &parts[0]);
	chash_key_part_varlena(fcinfo, 2, &parts[1]);
	if (chash_fn_cache_hit(fc, parts, 2))
		return (KetamaCache *) fc->data;

	old = MemoryContextSwitchTo(chash_fn_cache_rebuild(fc, parts, 2));
	c = palloc0(sizeof(KetamaCache));
	chash_node_set_read(fcinfo, 1, "servers", 2, -1, CurrentMemoryContext, &c->set);
	n = c->set.list.count;
	if (c->set.weights)
	{
		float		total = (float) c->set.total_weight;

		/* libketama divides in single precision: the total must be a float. */
		if (total == 0 || isinf(total))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("weights out of range for ketama"),
					 errdetail("Ketama divides in single precision, where the sum of the weights is %s.", total == 0 ? "zero" : "infinite")));
	}
	digests = palloc(sizeof(uint32) * n);
	switch (ketama_digest_counts(c->set.weights, c->set.total_weight, n, digests, &c->count))
	{
		case KETAMA_OK:
			break;
		case KETAMA_TOO_MANY_POINTS:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("ketama continuum would have too many points"),
					 errdetail("A continuum has at most %d points (160 per server).", RING_MAX_POINTS)));
			break;
		case KETAMA_NO_POINTS:
			/* Lookups need a point: an empty continuum would be read out of bounds. */
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("ketama continuum would have no points"),
					 errdetail("In single precision every server's weight rounds to zero points."),
					 errhint("Use larger weights.")));
			break;
	}
	points = palloc(sizeof(ring_point) * c->count);
	scratch = palloc(c->set.max_length + 1 + DECIMAL_UINT32_MAX_LEN);
	ketama_generate_points(chash_server_md5, c->set.list.names, c->set.list.lengths,
						   n, digests, scratch, points, chash_check_interrupts);
	ring_sort_points(points, c->count, chash_check_interrupts);
	c->positions = palloc(sizeof(uint64) * c->count);
	c->owners = palloc(sizeof(int32) * c->count);
	for (size_t p = 0; p < c->count; p++)
	{
		/* In the top half of 64 bits, so the ring's bucket index applies. */
		c->positions[p] = points[p].position << 32;
		c->owners[p] = points[p].node;
	}
	c->index_bits = ring_index_bits(c->count);
	c->index = palloc(sizeof(uint32) * (((size_t) 1 << c->index_bits) + 1));
	ring_index_build(c->positions, c->count, c->index_bits, c->index);
	pfree(points);
	pfree(scratch);
	pfree(digests);
	MemoryContextSwitchTo(old);
	c->set.share_texts = fc->args_constant;
	return chash_fn_cache_finish(fc, c);
}

Datum
chash_ketama(PG_FUNCTION_ARGS)
{
	KetamaCache *c;
	text	   *key;
	size_t		p;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		PG_RETURN_NULL();
	c = ketama_cache(fcinfo);
	key = PG_GETARG_TEXT_PP(0);
	p = ring_find_indexed(c->positions, c->count, c->index, c->index_bits,
						  (uint64) ketama_key_position(chash_server_md5, CHASH_TEXT_DATA(key),
													   CHASH_TEXT_LEN(key)) << 32);
	PG_RETURN_DATUM(chash_node_text(&c->set, c->owners[p]));
}
