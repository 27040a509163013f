/*
 * sort.h - sorting index arrays, cancellably
 *
 * The glue numbers node names, zones and weights by sorting their indexes;
 * with millions of nodes that takes seconds, so it goes through the core's
 * introsort (sort_template.h), which checks for interrupts.
 */
#ifndef CHASH_CORE_SORT_H
#define CHASH_CORE_SORT_H

#include <stddef.h>
#include <stdint.h>

#include "interrupt.h"

/* Three-way comparison of the items of indexes a and b. */
typedef int (*index_compare) (const void *ctx, int32_t a, int32_t b);

/* Sorts indexes[0 .. n-1] by compare (not stable). */
void		sort_indexes(int32_t *indexes, size_t n, index_compare compare, const void *ctx,
						 interrupt_check check);

#endif
