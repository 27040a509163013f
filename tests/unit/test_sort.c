/*
 * test_sort.c - the core's cancellable introsort (sort_template.h): index
 * and ring-point sorts against qsort on random, sorted, reversed and
 * duplicate-heavy inputs, and the interrupt check it calls
 */
#include <stdlib.h>
#include <string.h>

#include "hash64.h"
#include "ring.h"
#include "sort.h"
#include "unit.h"

static long interrupt_calls;

static void
count_interrupt(void)
{
	interrupt_calls++;
}

static int
compare_values(const void *ctx, int32_t a, int32_t b)
{
	const uint32_t *v = ctx;

	return (v[a] > v[b]) - (v[a] < v[b]);
}

static const uint32_t *qsort_values;

static int
qsort_compare(const void *a, const void *b)
{
	uint32_t	x = qsort_values[*(const int32_t *) a];
	uint32_t	y = qsort_values[*(const int32_t *) b];

	return (x > y) - (x < y);
}

/* Value i of input shape: random, few distinct, sorted, reversed, organ pipe. */
static uint32_t
value(int shape, size_t i, size_t n)
{
	switch (shape)
	{
		case 0:
			return (uint32_t) fmix64(i + 1);
		case 1:
			return (uint32_t) (fmix64(i + 1) % 3);
		case 2:
			return (uint32_t) i;
		case 3:
			return (uint32_t) (n - i);
		default:
			return (uint32_t) (i < n / 2 ? i : n - i);
	}
}

static void
test_indexes(void)
{
	size_t		sizes[] = {0, 1, 2, 3, 16, 17, 100, 1000, 200000};
	long		wrong = 0;

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (int shape = 0; shape < 5; shape++)
		{
			size_t		n = sizes[s];
			uint32_t   *v = malloc(sizeof(uint32_t) * (n + 1));
			int32_t    *got = malloc(sizeof(int32_t) * (n + 1));
			int32_t    *want = malloc(sizeof(int32_t) * (n + 1));

			for (size_t i = 0; i < n; i++)
			{
				v[i] = value(shape, i, n);
				got[i] = want[i] = (int32_t) i;
			}
			sort_indexes(got, n, compare_values, v, NULL);
			qsort_values = v;
			qsort(want, n, sizeof(int32_t), qsort_compare);
			/* Not stable: compare the values in order, and that it is a permutation. */
			for (size_t i = 0; i < n; i++)
				wrong += v[got[i]] != v[want[i]];
			memset(want, 0, sizeof(int32_t) * n);
			for (size_t i = 0; i < n; i++)
				want[got[i]]++;
			for (size_t i = 0; i < n; i++)
				wrong += want[i] != 1;
			free(v);
			free(got);
			free(want);
		}
	CHECK_EQ_I64(wrong, 0);
}

static int
qsort_points(const void *a, const void *b)
{
	const ring_point *x = a;
	const ring_point *y = b;

	if (x->position != y->position)
		return x->position < y->position ? -1 : 1;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return (x->vnode > y->vnode) - (x->vnode < y->vnode);
}

/* Ring points: exactly qsort's order (the order is total), with many equal positions. */
static void
test_points(void)
{
	const size_t n = 300000;
	ring_point *got = malloc(sizeof(ring_point) * n);
	ring_point *want = malloc(sizeof(ring_point) * n);

	for (size_t i = 0; i < n; i++)
	{
		uint64_t	h = fmix64(i + 7);

		/* Every eighth point at one of 16 positions, like clustered rings. */
		got[i].position = i % 8 == 0 ? h % 16 : h;
		got[i].node = (int32_t) (h >> 50);
		got[i].vnode = (int32_t) i;
	}
	memcpy(want, got, sizeof(ring_point) * n);
	interrupt_calls = 0;
	ring_sort_points(got, n, count_interrupt);
	qsort(want, n, sizeof(ring_point), qsort_points);
	CHECK(memcmp(got, want, sizeof(ring_point) * n) == 0);
	/* About n log n comparisons, a check every INTERRUPT_INTERVAL. */
	CHECK(interrupt_calls >= (long) (n / INTERRUPT_INTERVAL));
	free(got);
	free(want);
}

void
unit_main(void)
{
	test_indexes();
	test_points();
}
