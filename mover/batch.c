/*
 * A batch: steps of one shard pair in one state and progress, as a claim
 * (lease.c) made it; how messages name it, and its memory.
 */
#include <stdlib.h>
#include <string.h>

#include "chash_move.h"

void
batch_free(Batch *batch)
{
	for (int i = 0; i < batch->nsteps; i++)
		free(batch->tenants[i]);
	free(batch->steps);
	free(batch->slots);
	free(batch->tenants);
	free(batch->step_list);
	free(batch->slot_list);
	free(batch->tenant_list);
	free(batch->from_shard);
	free(batch->to_shard);
	memset(batch, 0, sizeof(*batch));
}

/* "step 7", or "steps 7-1606 (a batch of 1600)": in messages */
char *
batch_describe(const Batch *batch)
{
	if (batch->nsteps == 1)
		return format_text("step %d", batch->steps[0]);
	return format_text("steps %d-%d (a batch of %d)", batch->steps[0], batch->steps[batch->nsteps - 1],
					   batch->nsteps);
}

/* "{fenced,done}": a set of step states (STEP_STATE) as the text[] literal the SQL compares with */
char *
step_states_literal(unsigned states)
{
	char	   *names = format_text("%s", "");
	char	   *literal;

	for (int s = 0; s < state_count(STATE_STEP); s++)
		if (states & STEP_STATE(s))
			names = text_append(names, names[0] ? "," : "", state_name(STATE_STEP, s));
	literal = format_text("{%s}", names);
	free(names);
	return literal;
}
