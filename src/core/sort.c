/*
 * sort.c - sorting index arrays, cancellably
 */
#include "sort.h"

typedef struct index_sort_context
{
	index_compare compare;
	const void *ctx;
} index_sort_context;

#define SORT_NAME sort_index_array
#define SORT_ELEMENT int32_t
#define SORT_CONTEXT const index_sort_context *
#define SORT_BEFORE(a, b, c) ((c)->compare((c)->ctx, *(a), *(b)) < 0)
#include "sort_template.h"

void
sort_indexes(int32_t *indexes, size_t n, index_compare compare, const void *ctx,
			 interrupt_check check)
{
	index_sort_context c = {compare, ctx};

	sort_index_array(indexes, n, &c, check);
}
