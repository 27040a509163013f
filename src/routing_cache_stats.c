/*
 * routing_cache_stats.c - chash_routing_cache_stats(): how this backend's
 * routing cache (directory_cache.c) came by its directories.  A new
 * version of a directory is caught up from its change history in place
 * (directory_apply.c); a full load reads every slot.  A backend that keeps
 * loading in full where it should catch up pays for the whole directory
 * on every change: this makes that visible, and tests hold it to it.
 */
#include "chash.h"

#include "access/htup_details.h"
#include "funcapi.h"

#include "directory_cache.h"

PG_FUNCTION_INFO_V1(chash_routing_cache_stats);

/* chash_routing_cache_stats(OUT loads bigint, OUT catch_ups bigint, OUT directories int) */
Datum
chash_routing_cache_stats(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};
	uint64		loads,
				caught_up;
	int			entries;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	directory_cache_counts(&loads, &caught_up, &entries);
	values[0] = Int64GetDatum((int64) loads);
	values[1] = Int64GetDatum((int64) caught_up);
	values[2] = Int32GetDatum(entries);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}
