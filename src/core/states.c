/*
 * states.c - the one name table of migration, step, lease and shard
 * states (states.h)
 */
#include "states.h"

#include "names.h"

static const char *const migration_names[] = {"running", "done", "cancelled"};
static const char *const step_names[] = {"pending", "copying", "fenced", "done", "cancelled"};
static const char *const lease_names[] = {"claimed", "subscribed", "fenced", "copied", "completed"};
static const char *const shard_names_[] = {"active", "draining", "retired"};

static const struct
{
	const char *table;
	const char *column;
	const char *const *names;
	int			count;
}			kinds[STATE_KINDS] = {
	[STATE_MIGRATION] = {"chash_migration", "status", migration_names, 3},
	[STATE_STEP] = {"chash_migration_step", "state", step_names, 5},
	[STATE_LEASE] = {"chash_step_lease", "progress", lease_names, 5},
	[STATE_SHARD] = {"chash_shard", "state", shard_names_, 3},
};

const char *
state_kind_table(state_kind kind)
{
	return kinds[kind].table;
}

const char *
state_kind_column(state_kind kind)
{
	return kinds[kind].column;
}

int
state_count(state_kind kind)
{
	return kinds[kind].count;
}

const char *
state_name(state_kind kind, int value)
{
	return value >= 0 && value < kinds[kind].count ? kinds[kind].names[value] : NULL;
}

int
state_parse(state_kind kind, const char *name, size_t len)
{
	return name_index(kinds[kind].names, kinds[kind].count, name, len);
}
