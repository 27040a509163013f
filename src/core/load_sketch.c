/*
 * load_sketch.c - the space-saving top-K with forward decay
 * (load_sketch.h)
 */
#include "load_sketch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Renormalize once an event would weigh 2^256: far from double's range. */
#define RENORMALIZE_EXPONENT 256.0

#define ENTRIES(s) ((load_entry *) ((char *) (s) + (s)->entries_off))
#define HEAP(s) ((heap_node *) ((char *) (s) + (s)->heap_off))
#define BUCKETS(s) ((int32_t *) ((char *) (s) + (s)->buckets_off))
#define CENTRIES(s) ((const load_entry *) ((const char *) (s) + (s)->entries_off))
#define CBUCKETS(s) ((const int32_t *) ((const char *) (s) + (s)->buckets_off))

/*
 * The heap holds each entry's score beside its number: sifting compares
 * neighbouring 16-byte nodes instead of entries all over the block (a
 * sift from the root costs a few cache lines, not two misses a level).
 */
typedef struct heap_node
{
	double		score;			/* a copy of the entry's */
	int32_t		entry;
	int32_t		unused;
} heap_node;

static size_t
align8(size_t n)
{
	return (n + 7) & ~(size_t) 7;
}

static int32_t
bucket_count(int32_t capacity)
{
	int32_t		n = 1;

	while (n < capacity * 2)
		n <<= 1;
	return n;
}

size_t
load_sketch_size(int32_t capacity)
{
	return align8(sizeof(load_sketch)) +
		align8(sizeof(load_entry) * (size_t) capacity) +
		align8(sizeof(heap_node) * (size_t) capacity) +
		align8(sizeof(int32_t) * (size_t) bucket_count(capacity));
}

void
load_sketch_init(void *mem, int32_t capacity, double half_life, double now)
{
	load_sketch *s = mem;

	s->capacity = capacity;
	s->nbuckets = bucket_count(capacity);
	s->half_life = half_life;
	s->entries_off = align8(sizeof(load_sketch));
	s->heap_off = s->entries_off + align8(sizeof(load_entry) * (size_t) capacity);
	s->buckets_off = s->heap_off + align8(sizeof(heap_node) * (size_t) capacity);
	load_sketch_clear(s, now);
}

void
load_sketch_clear(load_sketch *s, double now)
{
	int32_t    *buckets = BUCKETS(s);

	s->used = 0;
	s->landmark = now;
	s->last_exponent = 0;
	s->last_factor = 1;
	for (int32_t i = 0; i < s->nbuckets; i++)
		buckets[i] = -1;
}

static int
same_tenant(const load_entry *e, uint64_t hash, const char *key, uint32_t len)
{
	return e->hash == hash && e->len == len &&
		memcmp(e->key, key, len < LOAD_KEY_MAX ? len : LOAD_KEY_MAX) == 0;
}

static int32_t
find_entry(const load_sketch *s, uint64_t hash, const char *key, uint32_t len)
{
	const load_entry *entries = CENTRIES(s);

	for (int32_t i = CBUCKETS(s)[hash & (s->nbuckets - 1)]; i >= 0; i = entries[i].next)
		if (same_tenant(&entries[i], hash, key, len))
			return i;
	return -1;
}

const load_entry *
load_sketch_find(const load_sketch *s, uint64_t hash, const char *key, uint32_t len)
{
	int32_t		i = find_entry(s, hash, key, len);

	return i < 0 ? NULL : &CENTRIES(s)[i];
}

static void
heap_swap(load_sketch *s, int32_t a, int32_t b)
{
	heap_node  *heap = HEAP(s);
	load_entry *entries = ENTRIES(s);
	heap_node	t = heap[a];

	heap[a] = heap[b];
	heap[b] = t;
	entries[heap[a].entry].heap_pos = a;
	entries[heap[b].entry].heap_pos = b;
}

static void
sift_down(load_sketch *s, int32_t pos)
{
	heap_node  *heap = HEAP(s);

	for (;;)
	{
		int32_t		least = pos;
		int32_t		l = 2 * pos + 1;
		int32_t		r = l + 1;

		if (l < s->used && heap[l].score < heap[least].score)
			least = l;
		if (r < s->used && heap[r].score < heap[least].score)
			least = r;
		if (least == pos)
			return;
		heap_swap(s, least, pos);
		pos = least;
	}
}

static void
unlink_entry(load_sketch *s, int32_t i)
{
	load_entry *entries = ENTRIES(s);
	int32_t    *link = &BUCKETS(s)[entries[i].hash & (s->nbuckets - 1)];

	while (*link != i)
		link = &entries[*link].next;
	*link = entries[i].next;
}

static void
link_entry(load_sketch *s, int32_t i)
{
	load_entry *entries = ENTRIES(s);
	int32_t    *bucket = &BUCKETS(s)[entries[i].hash & (s->nbuckets - 1)];

	entries[i].next = *bucket;
	*bucket = i;
}

/*
 * The heap is kept only once the sketch is full, when an eviction needs
 * the least entry: below capacity an event costs no heap work (and no
 * cache misses on the heap), and filling up builds it in O(K).
 */
static void
build_heap(load_sketch *s)
{
	heap_node  *heap = HEAP(s);
	load_entry *entries = ENTRIES(s);

	for (int32_t i = 0; i < s->used; i++)
	{
		heap[i].score = entries[i].score;
		heap[i].entry = i;
		entries[i].heap_pos = i;
	}
	for (int32_t i = s->used / 2 - 1; i >= 0; i--)
		sift_down(s, i);
}

/* Moves the landmark to now, dividing every stored score by the factor. */
static void
renormalize(load_sketch *s, double now)
{
	load_entry *entries = ENTRIES(s);
	double		factor = exp2((now - s->landmark) / s->half_life);

	for (int32_t i = 0; i < s->used; i++)
	{
		entries[i].score /= factor;
		entries[i].error /= factor;
		if (s->used == s->capacity)
			HEAP(s)[i].score /= factor;
	}
	s->landmark = now;
}

void
load_counts_add(load_counts *to, const load_counts *delta)
{
	to->reads += delta->reads;
	to->writes += delta->writes;
	to->rows += delta->rows;
	to->time_ns += delta->time_ns;
}

void
load_sketch_add(load_sketch *s, uint64_t hash, const char *key, uint32_t len,
				int32_t slot, double amount, const load_counts *delta, double now)
{
	load_entry *entries = ENTRIES(s);
	double		exponent = (now - s->landmark) / s->half_life;
	double		weight;
	int32_t		i;
	int			full = s->used == s->capacity;

	/* a clock that went back weighs the event as at the landmark */
	if (exponent < 0)
		exponent = 0;
	if (exponent > RENORMALIZE_EXPONENT)
	{
		renormalize(s, now);
		exponent = 0;
	}
	if (exponent != s->last_exponent)
	{
		s->last_exponent = exponent;
		s->last_factor = exp2(exponent);
	}
	weight = amount * s->last_factor;

	i = find_entry(s, hash, key, len);
	if (i >= 0)
	{
		entries[i].score += weight;
		entries[i].slot = slot;
		load_counts_add(&entries[i].counts, delta);
		if (full)
		{
			HEAP(s)[entries[i].heap_pos].score = entries[i].score;
			sift_down(s, entries[i].heap_pos);
		}
		return;
	}
	if (!full)
	{
		i = s->used++;
		entries[i].error = 0;
		entries[i].score = weight;
	}
	else
	{
		/* the least entry goes; its score stays as the newcomer's error */
		i = HEAP(s)[0].entry;
		unlink_entry(s, i);
		entries[i].error = entries[i].score;
		entries[i].score += weight;
	}
	entries[i].hash = hash;
	entries[i].len = len;
	entries[i].slot = slot;
	memcpy(entries[i].key, key, len < LOAD_KEY_MAX ? len : LOAD_KEY_MAX);
	memset(&entries[i].counts, 0, sizeof(load_counts));
	load_counts_add(&entries[i].counts, delta);
	link_entry(s, i);
	if (full)
	{
		HEAP(s)[entries[i].heap_pos].score = entries[i].score;
		sift_down(s, entries[i].heap_pos);
	}
	else if (s->used == s->capacity)
		build_heap(s);
}

double
load_sketch_decayed(const load_sketch *s, double stored, double now)
{
	return stored / exp2((now - s->landmark) / s->half_life);
}

static int
compare_tenants(const void *a, const void *b)
{
	const load_tenant *x = a;
	const load_tenant *y = b;

	if (x->score != y->score)
		return x->score < y->score ? 1 : -1;
	return (x->entry->hash > y->entry->hash) - (x->entry->hash < y->entry->hash);
}

int32_t
load_sketch_top(const load_sketch *s, double now, load_tenant *out, int32_t max)
{
	const load_entry *entries = CENTRIES(s);

	for (int32_t i = 0; i < s->used; i++)
	{
		out[i].entry = &entries[i];
		out[i].score = load_sketch_decayed(s, entries[i].score, now);
		out[i].error = load_sketch_decayed(s, entries[i].error, now);
	}
	qsort(out, s->used, sizeof(load_tenant), compare_tenants);
	return s->used < max ? s->used : max;
}
