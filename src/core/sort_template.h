/*
 * sort_template.h - an introsort that the server can cancel
 *
 * The core sorts millions of elements (ring points, node names), which
 * must stop within a fraction of a second of a cancel; qsort cannot be
 * left with a longjmp (glibc's may hold a malloc'd buffer), so the core
 * sorts with this instead.  Define before including:
 *   SORT_NAME              the function to define
 *   SORT_ELEMENT           the element type
 *   SORT_CONTEXT           a context type passed to SORT_BEFORE
 *   SORT_BEFORE(a, b, ctx) nonzero when *a sorts strictly before *b
 * and get
 *   static void SORT_NAME(SORT_ELEMENT *a, size_t n, SORT_CONTEXT ctx,
 *                         interrupt_check check);
 * Not stable: with a strict total order the result is the only sorted one.
 */
#include <stddef.h>

#include "interrupt.h"

#define SORT_CAT_(a, b) a##_##b
#define SORT_CAT(a, b) SORT_CAT_(a, b)
#define SORT_FN(suffix) SORT_CAT(SORT_NAME, suffix)

static inline void
SORT_FN(swap) (SORT_ELEMENT *x, SORT_ELEMENT *y)
{
	SORT_ELEMENT t = *x;

	*x = *y;
	*y = t;
}

static void
SORT_FN(sift) (SORT_ELEMENT *a, size_t root, size_t n, SORT_CONTEXT ctx)
{
	for (;;)
	{
		size_t		child = 2 * root + 1;

		if (child >= n)
			return;
		if (child + 1 < n && SORT_BEFORE(&a[child], &a[child + 1], ctx))
			child++;
		if (!SORT_BEFORE(&a[root], &a[child], ctx))
			return;
		SORT_FN(swap) (&a[root], &a[child]);
		root = child;
	}
}

/* The fallback when partitions keep coming out lopsided: n log n whatever the input. */
static void
SORT_FN(heapsort) (SORT_ELEMENT *a, size_t n, SORT_CONTEXT ctx, interrupt_counter *counter)
{
	for (size_t i = n / 2; i-- > 0;)
	{
		SORT_FN(sift) (a, i, n, ctx);
		interrupt_charge(counter, 1);
	}
	for (size_t end = n; end > 1; end--)
	{
		SORT_FN(swap) (&a[0], &a[end - 1]);
		SORT_FN(sift) (a, 0, end - 1, ctx);
		interrupt_charge(counter, 8);
	}
}

static void
SORT_FN(quick) (SORT_ELEMENT *a, size_t n, SORT_CONTEXT ctx, int depth,
				interrupt_counter *counter)
{
	while (n > 16)
	{
		size_t		mid = n / 2;
		size_t		i = 0;
		size_t		j = n;

		if (depth-- == 0)
		{
			SORT_FN(heapsort) (a, n, ctx, counter);
			return;
		}
		/* Median of three as the pivot, moved to a[0]. */
		if (SORT_BEFORE(&a[mid], &a[0], ctx))
			SORT_FN(swap) (&a[mid], &a[0]);
		if (SORT_BEFORE(&a[n - 1], &a[mid], ctx))
		{
			SORT_FN(swap) (&a[n - 1], &a[mid]);
			if (SORT_BEFORE(&a[mid], &a[0], ctx))
				SORT_FN(swap) (&a[mid], &a[0]);
		}
		SORT_FN(swap) (&a[0], &a[mid]);

		/* Hoare's partition: equal keys stop both scans, so duplicates split evenly. */
		for (;;)
		{
			do
				i++;
			while (i < n && SORT_BEFORE(&a[i], &a[0], ctx));
			do
				j--;
			while (SORT_BEFORE(&a[0], &a[j], ctx));
			if (i >= j)
				break;
			SORT_FN(swap) (&a[i], &a[j]);
		}
		SORT_FN(swap) (&a[0], &a[j]);
		interrupt_charge(counter, n);

		/* Recurse into the smaller side, loop on the larger: log n stack. */
		if (j < n - j - 1)
		{
			SORT_FN(quick) (a, j, ctx, depth, counter);
			a += j + 1;
			n -= j + 1;
		}
		else
		{
			SORT_FN(quick) (a + j + 1, n - j - 1, ctx, depth, counter);
			n = j;
		}
	}
	for (size_t i = 1; i < n; i++)
		for (size_t k = i; k > 0 && SORT_BEFORE(&a[k], &a[k - 1], ctx); k--)
			SORT_FN(swap) (&a[k], &a[k - 1]);
}

static void
SORT_NAME(SORT_ELEMENT *a, size_t n, SORT_CONTEXT ctx, interrupt_check check)
{
	interrupt_counter counter = {check, 0};
	int			depth = 0;

	for (size_t m = n; m > 1; m >>= 1)
		depth += 2;
	SORT_FN(quick) (a, n, ctx, depth, &counter);
}

#undef SORT_FN
#undef SORT_CAT
#undef SORT_CAT_
#undef SORT_NAME
#undef SORT_ELEMENT
#undef SORT_CONTEXT
#undef SORT_BEFORE
