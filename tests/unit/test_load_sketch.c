/*
 * test_load_sketch.c - the top-K of tenants by decayed score: exact
 * counts below capacity, the space-saving guarantee on a Zipf(1.1)
 * workload over 100,000 tenants, decay by half-lives and renormalization
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "load_sketch.h"
#include "unit.h"

static load_sketch *
new_sketch(int32_t capacity, double half_life)
{
	void	   *mem = malloc(load_sketch_size(capacity));	/* malloc aligns to 16 */

	load_sketch_init(mem, capacity, half_life, 0);
	return mem;
}

static void
add_tenant(load_sketch *s, const char *key, double now, uint64_t reads, uint64_t writes)
{
	load_counts d = {reads, writes, reads, 1000 * reads};

	load_sketch_add(s, XXH64(key, strlen(key), 0), key, strlen(key), (int32_t) strlen(key),
					(double) (reads + writes), &d, now);
}

static const load_entry *
find_tenant(load_sketch *s, const char *key)
{
	return load_sketch_find(s, XXH64(key, strlen(key), 0), key, strlen(key));
}

/* Below capacity every tenant is kept with its exact counts. */
static void
test_exact_below_capacity(void)
{
	load_sketch *s = new_sketch(64, 600);
	char		key[32];
	load_tenant top[64];
	int32_t		n;

	for (int round = 0; round < 10; round++)
		for (int t = 0; t < 50; t++)
		{
			snprintf(key, sizeof(key), "tenant-%d", t);
			add_tenant(s, key, 0, (uint64_t) t, 1);
		}
	CHECK_EQ_I64(s->used, 50);
	for (int t = 0; t < 50; t++)
	{
		const load_entry *e;

		snprintf(key, sizeof(key), "tenant-%d", t);
		e = find_tenant(s, key);
		CHECK(e != NULL);
		if (e == NULL)
			continue;
		CHECK_EQ_U64(e->counts.reads, 10 * t);
		CHECK_EQ_U64(e->counts.writes, 10);
		CHECK_EQ_U64(e->counts.time_ns, 10000 * t);
		CHECK(e->error == 0);
		CHECK(e->score == 10.0 * (t + 1));
	}
	n = load_sketch_top(s, 0, top, 5);
	CHECK_EQ_I64(n, 5);
	for (int i = 0; i < 5; i++)
		CHECK(top[i].score == 10.0 * (50 - i));
	CHECK(find_tenant(s, "tenant-50") == NULL);
	load_sketch_clear(s, 0);
	CHECK_EQ_I64(s->used, 0);
	CHECK(find_tenant(s, "tenant-3") == NULL);
	free(s);
}

/*
 * Zipf(1.1) over 100,000 tenants, 2,000,000 events, 1,024 entries: every
 * tenant above 1 % of the load is found, with a score that is not below
 * its true count and over it by at most total / K.
 */
static void
test_zipf(void)
{
	enum
	{
		TENANTS = 100000, EVENTS = 2000000, K = 1024
	};
	double	   *cdf = malloc(sizeof(double) * TENANTS);
	uint64_t   *truth = calloc(TENANTS, sizeof(uint64_t));
	load_sketch *s = new_sketch(K, 600);
	load_tenant *top = malloc(sizeof(load_tenant) * K);
	double		sum = 0;
	int			heavy = 0;
	char		key[32];

	for (int i = 0; i < TENANTS; i++)
	{
		sum += 1.0 / pow(i + 1, 1.1);
		cdf[i] = sum;
	}
	for (int e = 0; e < EVENTS; e++)
	{
		double		u = (double) (unit_random() >> 11) / 9007199254740992.0 * sum;
		int			lo = 0,
					hi = TENANTS - 1;

		while (lo < hi)
		{
			int			mid = (lo + hi) / 2;

			if (cdf[mid] < u)
				lo = mid + 1;
			else
				hi = mid;
		}
		/* tenants in a shuffled order of names, so rank is not the name */
		snprintf(key, sizeof(key), "org-%d", (int) ((lo * 7919L) % TENANTS));
		truth[lo]++;
		add_tenant(s, key, 0, 1, 0);
	}
	CHECK_EQ_I64(s->used, K);
	(void) load_sketch_top(s, 0, top, K);
	for (int i = 0; i < TENANTS; i++)
	{
		const load_entry *entry;

		if (truth[i] * 100 <= EVENTS)
			continue;
		heavy++;
		snprintf(key, sizeof(key), "org-%d", (int) ((i * 7919L) % TENANTS));
		entry = find_tenant(s, key);
		CHECK(entry != NULL);
		if (entry == NULL)
			continue;
		CHECK(entry->score >= (double) truth[i]);
		CHECK(entry->score - entry->error <= (double) truth[i]);
		CHECK(entry->error <= (double) EVENTS / K);
		/* the heavy ones lead the top, in the order of their truth */
		CHECK(top[heavy - 1].entry == entry);
	}
	/* Zipf(1.1) over 100,000 puts 10 tenants above 1 % */
	CHECK(heavy >= 10);
	printf("zipf: %d tenants above 1%%, all found\n", heavy);
	free(cdf);
	free(truth);
	free(top);
	free(s);
}

/*
 * The heap is built when the sketch fills: the first eviction takes the
 * least entry however the entries came in, and the next the least then.
 */
static void
test_heap_built_when_full(void)
{
	load_sketch *s = new_sketch(4, 600);

	add_tenant(s, "five", 0, 5, 0);
	add_tenant(s, "one", 0, 1, 0);
	add_tenant(s, "three", 0, 3, 0);
	add_tenant(s, "one", 0, 1, 0);	/* "one" at 2, below capacity */
	add_tenant(s, "four", 0, 4, 0);	/* full: the heap is built */
	CHECK_EQ_I64(s->used, 4);
	add_tenant(s, "new", 0, 1, 0);	/* evicts "one" (2), inherits 2 */
	CHECK(find_tenant(s, "one") == NULL);
	CHECK(find_tenant(s, "new") != NULL && find_tenant(s, "new")->score == 3);
	add_tenant(s, "newer", 0, 1, 0);	/* evicts "three" or "new" (3) */
	CHECK(find_tenant(s, "five") != NULL && find_tenant(s, "four") != NULL);
	CHECK((find_tenant(s, "three") == NULL) != (find_tenant(s, "new") == NULL));
	CHECK(find_tenant(s, "newer") != NULL && find_tenant(s, "newer")->score == 4);
	free(s);
}

/* A score halves every half-life; old load gives way to new. */
static void
test_decay(void)
{
	load_sketch *s = new_sketch(2, 10);
	load_tenant top[2];
	const load_entry *old_e;

	add_tenant(s, "old", 0, 100, 0);
	(void) load_sketch_top(s, 10, top, 2);
	CHECK(fabs(top[0].score - 50) < 1e-9);
	(void) load_sketch_top(s, 30, top, 2);
	CHECK(fabs(top[0].score - 12.5) < 1e-9);
	/* 20 events at t = 30 outweigh 100 at t = 0 */
	add_tenant(s, "new", 30, 20, 0);
	(void) load_sketch_top(s, 30, top, 2);
	CHECK(strncmp(top[0].entry->key, "new", 3) == 0);
	CHECK(fabs(top[0].score - 20) < 1e-9);
	/* a third tenant evicts the least, "old", and inherits its score */
	add_tenant(s, "third", 30, 1, 0);
	CHECK(find_tenant(s, "old") == NULL);
	old_e = find_tenant(s, "third");
	CHECK(old_e != NULL);
	if (old_e != NULL)
	{
		CHECK(fabs(load_sketch_decayed(s, old_e->error, 30) - 12.5) < 1e-9);
		CHECK(fabs(load_sketch_decayed(s, old_e->score, 30) - 13.5) < 1e-9);
		CHECK_EQ_U64(old_e->counts.reads, 1);
	}
	free(s);
}

/* Far past the landmark scores are renormalized and stay finite. */
static void
test_renormalize(void)
{
	load_sketch *s = new_sketch(4, 1);
	load_tenant top[4];

	add_tenant(s, "a", 0, 8, 0);
	for (int t = 1; t <= 2000; t++)
		add_tenant(s, "b", t, 1, 0);
	CHECK(s->landmark > 0);
	(void) load_sketch_top(s, 2000, top, 4);
	CHECK(isfinite(top[0].score));
	/* b's score: 1 + 1/2 + 1/4 + ... -> 2 */
	CHECK(fabs(top[0].score - 2) < 1e-9);
	CHECK(strncmp(top[0].entry->key, "b", 1) == 0);
	CHECK(top[1].score >= 0 && top[1].score < 1e-300);
	/* a clock that goes back weighs as at the landmark */
	add_tenant(s, "c", 0, 1, 0);
	CHECK(find_tenant(s, "c") != NULL);
	free(s);
}

/* Long tenants are known by all their bytes; the first 64 are shown. */
static void
test_long_keys(void)
{
	load_sketch *s = new_sketch(8, 600);
	char		a[200],
				b[200];
	const load_entry *e;

	memset(a, 'x', sizeof(a) - 1);
	a[sizeof(a) - 1] = '\0';
	memcpy(b, a, sizeof(a));
	b[150] = 'y';
	add_tenant(s, a, 0, 1, 0);
	add_tenant(s, b, 0, 2, 0);
	CHECK_EQ_I64(s->used, 2);
	e = find_tenant(s, b);
	CHECK(e != NULL && e->counts.reads == 2 && e->len == 199);
	free(s);
}

void
unit_main(void)
{
	test_exact_below_capacity();
	test_zipf();
	test_heap_built_when_full();
	test_decay();
	test_renormalize();
	test_long_keys();
}
