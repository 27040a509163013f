/*
 * states.h - the states of migrations, steps, step leases and shards, as
 * enums with one name table (docs/migrations.md)
 *
 * The names are the values the SQL CHECK constraints allow
 * (chash_migration.status, chash_migration_step.state,
 * chash_step_lease.progress, chash_shard.state); sql/states.sql compares
 * this table with those constraints, so a state added on one side only
 * fails the tests.  The C code compares enums, never strings.
 */
#ifndef CHASH_CORE_STATES_H
#define CHASH_CORE_STATES_H

#include <stddef.h>

typedef enum migration_status
{
	MIGRATION_RUNNING,
	MIGRATION_DONE,
	MIGRATION_CANCELLED
} migration_status;

typedef enum step_state
{
	STEP_PENDING,
	STEP_COPYING,
	STEP_FENCED,
	STEP_DONE,
	STEP_CANCELLED
} step_state;

/* How far chash_move got with a step it holds. */
typedef enum lease_progress
{
	LEASE_CLAIMED,
	LEASE_SUBSCRIBED,
	LEASE_FENCED,
	LEASE_COPIED,
	LEASE_COMPLETED
} lease_progress;

typedef enum shard_state
{
	SHARD_ACTIVE,
	SHARD_DRAINING,
	SHARD_RETIRED
} shard_state;

/* The kinds of state, each the values of one column. */
typedef enum state_kind
{
	STATE_MIGRATION,
	STATE_STEP,
	STATE_LEASE,
	STATE_SHARD,
	STATE_KINDS
} state_kind;

/* The column a kind's values live in: table and column name. */
const char *state_kind_table(state_kind kind);
const char *state_kind_column(state_kind kind);

/* How many states a kind has (its enum's values are 0 .. count - 1). */
int			state_count(state_kind kind);

/* A state's name; NULL for a value outside the kind's enum. */
const char *state_name(state_kind kind, int value);

/* The state of a name (len bytes), or -1 when the kind has no such state. */
int			state_parse(state_kind kind, const char *name, size_t len);

#endif
