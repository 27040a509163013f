/*
 * test_states.c - the name table of states (states.h): every enum value
 * has a name that parses back to it; the kinds' columns
 */
#include <string.h>

#include "states.h"
#include "unit.h"

#define S(str) str, sizeof(str) - 1

static void
test_round_trip(void)
{
	for (int k = 0; k < STATE_KINDS; k++)
	{
		CHECK(state_count((state_kind) k) > 0);
		for (int v = 0; v < state_count((state_kind) k); v++)
		{
			const char *name = state_name((state_kind) k, v);

			CHECK(name != NULL && state_parse((state_kind) k, name, strlen(name)) == v);
		}
		CHECK(state_name((state_kind) k, state_count((state_kind) k)) == NULL);
		CHECK(state_name((state_kind) k, -1) == NULL);
	}
}

static void
test_names(void)
{
	/* the enums the glue switches on are the names the tables store */
	CHECK(state_parse(STATE_STEP, S("fenced")) == STEP_FENCED);
	CHECK(state_parse(STATE_STEP, S("cancelled")) == STEP_CANCELLED);
	CHECK(state_parse(STATE_LEASE, S("fenced")) == LEASE_FENCED);
	CHECK(state_parse(STATE_LEASE, S("completed")) == LEASE_COMPLETED);
	CHECK(state_parse(STATE_MIGRATION, S("running")) == MIGRATION_RUNNING);
	CHECK(state_parse(STATE_SHARD, S("retired")) == SHARD_RETIRED);
	CHECK(state_parse(STATE_STEP, S("claimed")) == -1);
	CHECK(state_parse(STATE_STEP, S("Fenced")) == -1);
	CHECK(state_parse(STATE_MIGRATION, S("runnin")) == -1);
	CHECK(state_parse(STATE_SHARD, S("")) == -1);
	CHECK(strcmp(state_kind_table(STATE_LEASE), "chash_step_lease") == 0);
	CHECK(strcmp(state_kind_column(STATE_LEASE), "progress") == 0);
	CHECK(strcmp(state_kind_table(STATE_STEP), "chash_migration_step") == 0);
	CHECK(strcmp(state_kind_column(STATE_MIGRATION), "status") == 0);
}

void
unit_main(void)
{
	test_round_trip();
	test_names();
}
