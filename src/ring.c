/*
 * ring.c - SQL wrappers of the consistent-hash ring (docs/placement.md)
 */
#include "chash.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "chash_ring.h"
#include "fn_cache.h"
#include "joined_hash.h"
#include "ring.h"
#include "sort.h"

PG_FUNCTION_INFO_V1(chash_ring_lookup);
PG_FUNCTION_INFO_V1(chash_ring_replicas);
PG_FUNCTION_INFO_V1(chash_ring_points);
PG_FUNCTION_INFO_V1(chash_ring_shares);

void
chash_ring_build(FunctionCallInfo fcinfo, int nodes_arg, int vnodes_arg,
				 int weights_arg, int hash_arg, bool with_vnodes, ChashRing *ring)
{
	int32		vnodes = PG_GETARG_INT32(vnodes_arg);
	int32	   *counts;
	size_t		total;
	ring_status status;
	ring_point *points;
	char	   *scratch;
	int			n;

	chash_check_at_least_one(vnodes, "vnodes");
	memset(ring, 0, sizeof(*ring));
	chash_node_set_read(fcinfo, nodes_arg, "nodes", weights_arg, hash_arg,
						CurrentMemoryContext, &ring->set);
	ring->vnodes = vnodes;
	n = ring->set.list.count;

	counts = palloc(sizeof(int32) * n);
	status = ring_point_counts(vnodes, ring->set.weights, n, counts, &total);
	if (status == RING_TOO_MANY_POINTS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ring would have too many points"),
				 errdetail("A ring has at most %d points.", RING_MAX_POINTS),
				 errhint("Use fewer vnodes or smaller weights.")));
	if (status == RING_NO_POINTS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ring would have no points"),
				 errdetail("Every node's vnodes times weight rounds to zero.")));

	points = palloc(sizeof(ring_point) * total);
	scratch = palloc(ring->set.max_length + 1 + DECIMAL_UINT32_MAX_LEN);
	ring_generate_points(&ring->set.hasher, ring->set.list.names, ring->set.list.lengths,
						 n, counts, scratch, points, chash_check_interrupts);
	ring_sort_points(points, total, chash_check_interrupts);

	ring->count = total;
	ring->positions = palloc(sizeof(uint64) * total);
	ring->owners = palloc(sizeof(int32) * total);
	if (with_vnodes)
		ring->vnode_of = palloc(sizeof(int32) * total);
	for (size_t p = 0; p < total; p++)
	{
		ring->positions[p] = points[p].position;
		ring->owners[p] = points[p].node;
		if (with_vnodes)
			ring->vnode_of[p] = points[p].vnode;
	}
	for (int i = 0; i < n; i++)
		ring->distinct += counts[i] > 0;
	ring->index_bits = ring_index_bits(total);
	ring->index = palloc(sizeof(uint32) * (((size_t) 1 << ring->index_bits) + 1));
	ring_index_build(ring->positions, total, ring->index_bits, ring->index);
	pfree(points);
	pfree(scratch);
	pfree(counts);
}

/*
 * The cached ring of a lookup or replicas call.  zone_of and the seen
 * flags are for replicas.
 */
typedef struct RingCache
{
	ChashRing	ring;
	int32	   *zone_of;		/* zone index of each node, or NULL */
	int			zones_on_ring;	/* distinct zones of the nodes with points */
	uint8	   *node_seen;
	uint8	   *zone_seen;
	int32	   *found;
} RingCache;

/* Zone strings, sorted by bytes to number them. */
static int
compare_zone_index(const void *ctx, int32_t i, int32_t j)
{
	const ChashNodeList *zone_sort_list = ctx;
	int			li = zone_sort_list->lengths[i];
	int			lj = zone_sort_list->lengths[j];
	int			c = memcmp(zone_sort_list->names[i], zone_sort_list->names[j], Min(li, lj));

	if (c != 0)
		return c;
	return (li > lj) - (li < lj);
}

/* Numbers the zones of zones_arg (one per node; duplicates expected). */
static void
read_zones(FunctionCallInfo fcinfo, int zones_arg, RingCache *c)
{
	ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(zones_arg);
	int			n = c->ring.set.list.count;
	Datum	   *elems;
	bool	   *nulls;
	int			count;
	ChashNodeList zones;
	int32	   *order;
	int			next_id = -1;
	bool	   *zone_has_points;

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("zones must be a one-dimensional array")));
	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &count);
	if (count != n)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("zones must have one element per node"),
				 errdetail("There are %d nodes and %d zones.", n, count)));
	zones.count = n;
	zones.names = palloc(sizeof(char *) * n);
	zones.lengths = palloc(sizeof(int) * n);
	order = palloc(sizeof(int32) * n);
	for (int i = 0; i < n; i++)
	{
		text	   *t;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("zones must not contain null elements"),
					 errdetail("Element %d is null.", i + 1)));
		t = (text *) PG_DETOAST_DATUM_PACKED(elems[i]);
		zones.names[i] = CHASH_TEXT_DATA(t);
		zones.lengths[i] = CHASH_TEXT_LEN(t);
		order[i] = i;
	}
	sort_indexes(order, n, compare_zone_index, &zones, chash_check_interrupts);
	c->zone_of = palloc(sizeof(int32) * n);
	for (int i = 0; i < n; i++)
	{
		if (i == 0 || compare_zone_index(&zones, order[i - 1], order[i]) != 0)
			next_id++;
		c->zone_of[order[i]] = next_id;
	}
	zone_has_points = palloc0(sizeof(bool) * (next_id + 1));
	for (size_t p = 0; p < c->ring.count; p++)
		zone_has_points[c->zone_of[c->ring.owners[p]]] = true;
	for (int z = 0; z <= next_id; z++)
		c->zones_on_ring += zone_has_points[z];
	c->zone_seen = palloc0(next_id + 1);
}

static RingCache *
ring_cache(FunctionCallInfo fcinfo, int nodes_arg, int vnodes_arg, int weights_arg,
		   int zones_arg, int hash_arg)
{
	int			keyed[5] = {nodes_arg, vnodes_arg, weights_arg, hash_arg, zones_arg};
	ChashFnCache *fc = chash_fn_cache(fcinfo, keyed, zones_arg >= 0 ? 5 : 4);
	ChashKeyPart parts[5];
	int32		vnodes = PG_GETARG_INT32(vnodes_arg);
	MemoryContext old;
	RingCache  *c;

	if (chash_fn_cache_ready(fc))
		return (RingCache *) fc->data;

	chash_key_part_varlena(fcinfo, nodes_arg, &parts[0]);
	chash_key_part_int32(&vnodes, &parts[1]);
	chash_key_part_varlena(fcinfo, weights_arg, &parts[2]);
	chash_key_part_varlena(fcinfo, hash_arg, &parts[3]);
	if (zones_arg >= 0)
		chash_key_part_varlena(fcinfo, zones_arg, &parts[4]);
	if (chash_fn_cache_hit(fc, parts, zones_arg >= 0 ? 5 : 4))
		return (RingCache *) fc->data;

	old = MemoryContextSwitchTo(chash_fn_cache_rebuild(fc, parts, zones_arg >= 0 ? 5 : 4));
	c = palloc0(sizeof(RingCache));
	chash_ring_build(fcinfo, nodes_arg, vnodes_arg, weights_arg, hash_arg, false, &c->ring);
	if (zones_arg >= 0)
	{
		c->node_seen = palloc0(c->ring.set.list.count);
		c->found = palloc(sizeof(int32) * c->ring.set.list.count);
		if (!PG_ARGISNULL(zones_arg))
			read_zones(fcinfo, zones_arg, c);
	}
	MemoryContextSwitchTo(old);
	c->ring.set.share_texts = fc->args_constant;
	return chash_fn_cache_finish(fc, c);
}

static inline uint64
key_position(const ChashRing *ring, text *key)
{
	return hash64(&ring->set.hasher, CHASH_TEXT_DATA(key), CHASH_TEXT_LEN(key));
}

Datum
chash_ring_lookup(PG_FUNCTION_ARGS)
{
	static const int required[] = {0, 1, 2, 4};
	RingCache  *c;
	size_t		p;

	if (chash_any_arg_null(fcinfo, required, lengthof(required)))
		PG_RETURN_NULL();
	c = ring_cache(fcinfo, 1, 2, 3, -1, 4);
	p = ring_find_indexed(c->ring.positions, c->ring.count, c->ring.index,
						  c->ring.index_bits, key_position(&c->ring, PG_GETARG_TEXT_PP(0)));
	PG_RETURN_DATUM(chash_node_text(&c->ring.set, c->ring.owners[p]));
}

Datum
chash_ring_replicas(PG_FUNCTION_ARGS)
{
	static const int required[] = {0, 1, 2, 3, 6};
	RingCache  *c;
	int32		k;
	int			found;
	Datum	   *names;

	if (chash_any_arg_null(fcinfo, required, lengthof(required)))
		PG_RETURN_NULL();
	c = ring_cache(fcinfo, 1, 3, 4, 5, 6);
	k = PG_GETARG_INT32(2);
	chash_check_at_least_one(k, "k");
	if (k > c->ring.distinct)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must not exceed the number of distinct nodes on the ring"),
				 errdetail("k is %d, but the ring has %d distinct nodes.", k, c->ring.distinct)));
	if (c->zone_of && k > c->zones_on_ring)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must not exceed the number of distinct zones on the ring"),
				 errdetail("k is %d, but the ring's nodes are in %d distinct zones.",
						   k, c->zones_on_ring)));
	found = ring_walk_distinct(c->ring.owners, c->ring.count,
							   ring_find_indexed(c->ring.positions, c->ring.count,
												 c->ring.index, c->ring.index_bits,
												 key_position(&c->ring, PG_GETARG_TEXT_PP(0))),
							   k, c->zone_of, c->node_seen, c->zone_seen, c->found);
	Assert(found == k);
	names = palloc(sizeof(Datum) * found);
	for (int i = 0; i < found; i++)
		names[i] = chash_node_text(&c->ring.set, c->found[i]);
	PG_RETURN_ARRAYTYPE_P(construct_array(names, found, TEXTOID, -1, false, TYPALIGN_INT));
}

Datum
chash_ring_points(PG_FUNCTION_ARGS)
{
	static const int required[] = {0, 1, 3};
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ChashRing	ring;

	InitMaterializedSRF(fcinfo, 0);
	if (chash_any_arg_null(fcinfo, required, lengthof(required)))
		return (Datum) 0;
	chash_ring_build(fcinfo, 0, 1, 2, 3, true, &ring);
	for (size_t p = 0; p < ring.count; p++)
	{
		Datum		values[3];
		bool		nulls[3] = {false, false, false};

		/* Up to RING_MAX_POINTS rows into the tuplestore: seconds. */
		chash_check_interrupts_every(p);
		values[0] = chash_node_text(&ring.set, ring.owners[p]);
		values[1] = Int32GetDatum(ring.vnode_of[p]);
		values[2] = Int64GetDatum((int64) ring.positions[p]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

Datum
chash_ring_shares(PG_FUNCTION_ARGS)
{
	static const int required[] = {0, 1, 3};
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ChashRing	ring;
	uint64	   *arcs;
	int32	   *points;
	int			whole;
	int			n;

	InitMaterializedSRF(fcinfo, 0);
	if (chash_any_arg_null(fcinfo, required, lengthof(required)))
		return (Datum) 0;
	chash_ring_build(fcinfo, 0, 1, 2, 3, false, &ring);
	n = ring.set.list.count;
	arcs = palloc(sizeof(uint64) * n);
	points = palloc0(sizeof(int32) * n);
	for (size_t p = 0; p < ring.count; p++)
		points[ring.owners[p]]++;
	whole = ring_arc_sums(ring.positions, ring.owners, ring.count, n, arcs);
	for (int i = 0; i < n; i++)
	{
		Datum		values[3];
		bool		nulls[3] = {false, false, false};
		double		share;

		/* uint64 to double rounds correctly; the scaling by 2^-64 is exact. */
		chash_check_interrupts_every(i);
		share = (whole >= 0) ? (i == whole ? 1.0 : 0.0) : ldexp((double) arcs[i], -64);
		values[0] = chash_node_text(&ring.set, i);
		values[1] = Int32GetDatum(points[i]);
		values[2] = Float8GetDatum(share);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
