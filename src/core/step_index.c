/*
 * step_index.c - the migration steps in flight of a directory, indexed for
 * routing: the sort, the index and the precedence rules (step_index.h)
 */
#include "step_index.h"

#include <string.h>

int
step_ref_compare(const step_ref *a, const step_ref *b)
{
	if ((a->slot < 0) != (b->slot < 0))
		return a->slot < 0 ? 1 : -1;
	if (a->slot != b->slot)
		return a->slot < b->slot ? -1 : 1;
	if (a->migration != b->migration)
		return a->migration < b->migration ? -1 : 1;
	if (a->step != b->step)
		return a->step < b->step ? -1 : 1;
	return 0;
}

void
step_sort_begin(step_sort *sort, step_ref *refs, step_ref *scratch, size_t count)
{
	sort->from = refs;
	sort->to = scratch;
	sort->count = count;
	sort->width = 1;
	sort->next = 0;
}

/* Merges from[lo .. mid) and from[mid .. hi) into to[lo .. hi); stable. */
static void
merge_runs(const step_ref *from, step_ref *to, size_t lo, size_t mid, size_t hi)
{
	size_t		i = lo;
	size_t		j = mid;
	size_t		k = lo;

	while (i < mid && j < hi)
		to[k++] = step_ref_compare(&from[j], &from[i]) < 0 ? from[j++] : from[i++];
	if (i < mid)
		memcpy(&to[k], &from[i], (mid - i) * sizeof(step_ref));
	else if (j < hi)
		memcpy(&to[k], &from[j], (hi - j) * sizeof(step_ref));
}

int
step_sort_continue(step_sort *sort, size_t budget)
{
	size_t		done = 0;

	while (sort->width < sort->count)
	{
		size_t		lo = sort->next;
		size_t		mid;
		size_t		hi;

		if (lo >= sort->count)
		{
			/* a pass is complete: its output is the next pass's input */
			step_ref   *t = sort->from;

			sort->from = sort->to;
			sort->to = t;
			sort->width = sort->width > sort->count / 2 ? sort->count : sort->width * 2;
			sort->next = 0;
			continue;
		}
		if (done >= budget)
			return 0;
		mid = sort->count - lo > sort->width ? lo + sort->width : sort->count;
		hi = sort->count - mid > sort->width ? mid + sort->width : sort->count;
		merge_runs(sort->from, sort->to, lo, mid, hi);
		sort->next = hi;
		done += hi - lo;
	}
	return 1;
}

size_t
step_index_tenant_steps(const step_ref *sorted, size_t count)
{
	size_t		lo = 0;
	size_t		hi = count;

	/* the first tenant step: slot steps (slot >= 0) come first */
	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (sorted[mid].slot >= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return count - lo;
}

void
step_index_init(step_index *index, const step_ref *sorted, size_t count,
				tenant_map_entry *entries, size_t capacity,
				uint64_t *filter, size_t filter_words)
{
	index->refs = sorted;
	index->count = count;
	index->nslot = count - step_index_tenant_steps(sorted, count);
	tenant_map_init(&index->tenants, entries, capacity, filter, filter_words);
}

size_t
step_index_add_tenants(step_index *index, size_t from, size_t to)
{
	size_t		repeated = 0;

	for (size_t i = index->nslot + from; i < index->nslot + to; i++)
	{
		const step_ref *r = &index->refs[i];

		/* sorted oldest first: the first step of a tenant wins */
		if (tenant_map_get(&index->tenants, r->tenant_hash, r->tenant, r->tenant_len) != NULL)
			repeated++;
		else
			tenant_map_put(&index->tenants, r->tenant_hash, r->tenant, r->tenant_len,
						   (int32_t) i);
	}
	return repeated;
}

const step_ref *
step_index_lookup(const step_index *index, uint64_t tenant_hash,
				  const char *tenant, uint32_t len, int32_t slot, int pinned)
{
	size_t		lo = 0;
	size_t		hi = index->nslot;

	if (index->tenants.count > 0)
	{
		const tenant_map_entry *e = tenant_map_get(&index->tenants, tenant_hash, tenant, len);

		if (e != NULL)
			return &index->refs[e->value];
	}
	if (pinned)
		return NULL;
	/* the first step of the slot: the oldest migration's */
	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (index->refs[mid].slot < slot)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < index->nslot && index->refs[lo].slot == slot ? &index->refs[lo] : NULL;
}
