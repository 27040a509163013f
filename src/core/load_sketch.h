/*
 * load_sketch.h - the bounded top-K of tenants by a decayed score that
 * the load statistics keep per directory (docs/load.md)
 *
 * A space-saving sketch (Metwally, Agrawal, El Abbadi, 2005): K entries;
 * an unknown tenant takes the entry of least score and inherits that score
 * as its error, so every tenant whose score exceeds total/K is present,
 * and no score is under-counted.  Scores decay exponentially with a fixed
 * half-life by forward decay (Cormode, Shkapenyuk, Srivastava, Xu, 2009):
 * an event at time t adds 2^((t - landmark) / half_life), so the order of
 * stored scores never changes with time and nothing is rescaled per
 * event; now / half_life is turned into a factor only when a score is
 * read, and the stored values are renormalized (O(K)) once the factor
 * nears the range of a double, that is once every 256 half-lives.
 *
 * The sketch lives in one block of caller memory without pointers (it is
 * placed in shared memory): entries, a min-heap of entry numbers by score
 * (kept only once the sketch is full), and hash buckets of entry chains,
 * found by offsets from the header.
 * Tenants are known by a 64-bit hash and their length; the first
 * LOAD_KEY_MAX bytes are kept to be shown.
 */
#ifndef CHASH_CORE_LOAD_SKETCH_H
#define CHASH_CORE_LOAD_SKETCH_H

#include <stddef.h>
#include <stdint.h>

#define LOAD_KEY_MAX 64

/* What was counted for a slot or a tenant. */
typedef struct load_counts
{
	uint64_t	reads;			/* statements that read */
	uint64_t	writes;			/* rows written */
	uint64_t	rows;			/* rows the counted statements processed */
	uint64_t	time_ns;		/* their executor time */
} load_counts;

/* to += delta */
void		load_counts_add(load_counts *to, const load_counts *delta);

typedef struct load_entry
{
	uint64_t	hash;
	uint32_t	len;			/* the tenant's full length */
	int32_t		slot;
	double		score;			/* forward-decayed: relative to the landmark */
	double		error;			/* the inherited score (over-estimate bound) */
	load_counts counts;			/* since the tenant took the entry */
	int32_t		heap_pos;
	int32_t		next;			/* bucket chain, -1 ends it */
	char		key[LOAD_KEY_MAX];
} load_entry;

typedef struct load_sketch
{
	int32_t		capacity;
	int32_t		used;
	int32_t		nbuckets;		/* a power of two */
	double		half_life;		/* seconds */
	double		landmark;		/* seconds: where an event weighs 1 */
	/* the last exponent an event was weighed at and its 2^exponent */
	double		last_exponent;
	double		last_factor;
	/* entries, heap and buckets follow, at these offsets from the header */
	size_t		entries_off;
	size_t		heap_off;
	size_t		buckets_off;
} load_sketch;

/* A tenant as the sketch shows it. */
typedef struct load_tenant
{
	const load_entry *entry;
	double		score;			/* decayed to the time asked */
	double		error;
} load_tenant;

/* Bytes a sketch of capacity entries needs (capacity >= 1). */
size_t		load_sketch_size(int32_t capacity);

/* Makes an empty sketch in mem (load_sketch_size bytes, 8-byte aligned). */
void		load_sketch_init(void *mem, int32_t capacity, double half_life, double now);

/* Forgets every tenant; the landmark moves to now. */
void		load_sketch_clear(load_sketch *sketch, double now);

/*
 * Counts an event of a tenant: amount adds to its score (weighed by the
 * time now, in seconds, on the clock of the landmark), delta to its
 * counts.  The tenant takes the least entry when it has none.  Events at
 * the same time as the last one reuse its weight (no exp2): a caller that
 * rounds its times gets that for most events.
 */
void		load_sketch_add(load_sketch *sketch, uint64_t hash, const char *key, uint32_t len,
							int32_t slot, double amount, const load_counts *delta, double now);

/* The entry of a tenant, or NULL. */
const load_entry *load_sketch_find(const load_sketch *sketch, uint64_t hash,
								   const char *key, uint32_t len);

/*
 * The max tenants of highest score at time now, highest first (ties: the
 * lower hash first).  out needs room for every entry (sketch->used), as
 * they are all sorted there; returns how many lead it (<= max).
 */
int32_t		load_sketch_top(const load_sketch *sketch, double now, load_tenant *out, int32_t max);

/* A decayed score: stored score weighed back to time now. */
double		load_sketch_decayed(const load_sketch *sketch, double stored, double now);

#endif
