/*
 * states.c - chash_state_names(): the core's name table of states
 * (src/core/states.h) as rows, so that sql/states.sql can compare it
 * with the CHECK constraints of the tables that store the states
 */
#include "chash.h"

#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "states.h"

PG_FUNCTION_INFO_V1(chash_state_names);

static const char *const kind_names[STATE_KINDS] = {
	[STATE_MIGRATION] = "migration",
	[STATE_STEP] = "step",
	[STATE_LEASE] = "lease",
	[STATE_SHARD] = "shard",
};

Datum
chash_state_names(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	for (int k = 0; k < STATE_KINDS; k++)
		for (int v = 0; v < state_count((state_kind) k); v++)
		{
			Datum		values[5];
			bool		nulls[5] = {false};

			values[0] = CStringGetTextDatum(kind_names[k]);
			values[1] = CStringGetTextDatum(state_kind_table((state_kind) k));
			values[2] = CStringGetTextDatum(state_kind_column((state_kind) k));
			values[3] = CStringGetTextDatum(state_name((state_kind) k, v));
			values[4] = Int32GetDatum(v);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	return (Datum) 0;
}
