/*
 * step_index.h - the migration steps in flight of a directory, indexed for
 * routing (docs/migrations.md)
 *
 * The precedence rules: a key is moved by its tenant's step if it has one;
 * else, unless the tenant is pinned (a pinned tenant does not move with its
 * slot), by its slot's step.  When several steps claim one slot or one
 * tenant (only hand-made rows do: one migration runs per directory), the
 * oldest wins: the lowest migration id, then the lowest step.
 *
 * Building is done in bounded pieces (step_sort_continue,
 * step_index_add_tenants) so that the caller can check for interrupts
 * between them: the number of steps is whatever the tables hold.
 */
#ifndef CHASH_CORE_STEP_INDEX_H
#define CHASH_CORE_STEP_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "directory.h"

typedef struct step_ref
{
	int64_t		migration;
	int32_t		step;
	int32_t		slot;			/* -1: a tenant step */
	const char *tenant;			/* tenant steps: canonical bytes, the caller's */
	uint32_t	tenant_len;
	int32_t		value;			/* the caller's number for the step */
	uint64_t	tenant_hash;	/* tenant steps: XXH64(tenant, 0) */
} step_ref;

/* Slot steps by (slot, migration, step), then tenant steps by (migration, step). */
int			step_ref_compare(const step_ref *a, const step_ref *b);

/*
 * A stable bottom-up merge sort of refs, using scratch (as many elements)
 * as the other buffer.
 */
typedef struct step_sort
{
	step_ref   *from;
	step_ref   *to;
	size_t		count;
	size_t		width;			/* runs of this length in from are sorted */
	size_t		next;			/* the first run of from not merged yet */
} step_sort;

void		step_sort_begin(step_sort *sort, step_ref *refs, step_ref *scratch, size_t count);

/*
 * Merges about budget elements (at least one pair of runs).  Returns 1
 * once the refs are sorted, then in step_sort_result (refs or scratch).
 */
int			step_sort_continue(step_sort *sort, size_t budget);

static inline step_ref *
step_sort_result(const step_sort *sort)
{
	return sort->from;
}

typedef struct step_index
{
	const step_ref *refs;		/* sorted */
	size_t		count;
	size_t		nslot;			/* refs[0 .. nslot) are the slot steps */
	tenant_map	tenants;		/* tenant -> index in refs of its oldest step */
} step_index;

/* Tenant steps among sorted refs (they come last). */
size_t		step_index_tenant_steps(const step_ref *sorted, size_t count);

/*
 * Starts an index over sorted refs.  entries and filter are zeroed memory
 * for a tenant_map of step_index_tenant_steps() keys, as tenant_map_init
 * takes them.  The tenant steps are then added with
 * step_index_add_tenants, in order.
 */
void		step_index_init(step_index *index, const step_ref *sorted, size_t count,
							tenant_map_entry *entries, size_t capacity,
							uint64_t *filter, size_t filter_words);

/*
 * Adds the tenant steps refs[nslot + from .. nslot + to) to the tenant
 * map, keeping the first (oldest) step of each tenant.  Returns how many
 * steps repeated a tenant already indexed.
 */
size_t		step_index_add_tenants(step_index *index, size_t from, size_t to);

/*
 * The step that moves a key, or NULL.  tenant_hash is only read when the
 * index has tenant steps (index->tenants.count > 0).
 */
const step_ref *step_index_lookup(const step_index *index, uint64_t tenant_hash,
								  const char *tenant, uint32_t len, int32_t slot,
								  int pinned);

#endif
