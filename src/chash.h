/*
 * chash.h - shared PostgreSQL glue: argument checking and hash families
 *
 * Everything here turns SQL arguments into the plain values src/core/
 * takes, raising the SQLSTATEs of docs/reference.md's conventions on bad input.
 */
#ifndef CHASH_GLUE_H
#define CHASH_GLUE_H

#include "postgres.h"

#include "fmgr.h"
#include "utils/array.h"

#include "hash64.h"
#include "layout.h"
#include "interrupt.h"

/* A 1-D text[] argument, checked: no NULLs, not empty, no duplicates. */
typedef struct ChashNodeList
{
	int			count;
	const char **names;			/* pointers into the detoasted array */
	int		   *lengths;
} ChashNodeList;

/*
 * CHECK_FOR_INTERRUPTS as the core's interrupt_check: long builds call it
 * now and then, so statement_timeout and pg_cancel_backend stop them.
 */
extern void chash_check_interrupts(void);

/* Every CHASH_INTERRUPT_ROWS iterations of a glue loop over an argument's elements. */
#define CHASH_INTERRUPT_ROWS INTERRUPT_INTERVAL
#define chash_check_interrupts_every(i) \
	do { \
		if (((i) & (CHASH_INTERRUPT_ROWS - 1)) == CHASH_INTERRUPT_ROWS - 1) \
			CHECK_FOR_INTERRUPTS(); \
	} while (0)

/* The server's MD5 as a md5_digest_fn (ERROR on failure). */
extern void chash_server_md5(const void *data, size_t len, uint8_t out[16]);

/* Parses a hash family argument; 22023 for an unknown name. */
extern hasher64 chash_hasher_from_text(text *name);

/* 22023 unless value >= 1; inline, as it runs on per-row paths. */
extern void chash_report_below_one(int32 value, const char *argname) pg_attribute_noreturn();

static inline void
chash_check_at_least_one(int32 value, const char *argname)
{
	if (unlikely(value < 1))
		chash_report_below_one(value, argname);
}

/*
 * Reads a node array.  argname names the argument in messages.  Elements
 * point into arr, which must stay alive as long as the list.
 */
extern void chash_node_list_from_array(ArrayType *arr, const char *argname,
									   ChashNodeList *list);

/*
 * Reads a float8[] of weights that must line up with count nodes: finite,
 * >= 0, at least one > 0.  Returns a palloc'd array.
 */
extern double *chash_weights_from_array(ArrayType *arr, int count);

/*
 * The slot method of a directory layout given as SQL arguments, checked
 * by directory_layout_check (src/core/layout.h); 22023 when it could not
 * be a directory's.
 */
extern slot_method chash_layout_from_args(int32 slot_count, text *method_name);

/* 42501 unless a superuser runs it: the shard join's and failover's libpq work. */
extern void chash_require_superuser(const char *what);

/*
 * The remainder of the hash partition PostgreSQL routes a one-column key of
 * type typid (TEXTOID with the default collation, INT8OID, INT4OID,
 * UUIDOID) to, for the given modulus (>= 1).  pg_partition.c.
 */
extern int32 chash_pg_partition_of(Oid typid, Datum value, int32 modulus);

/*
 * User text quoted in a message: at most CHASH_QUOTE_MAX bytes, cut on a
 * character boundary of the database encoding (the conventions in docs/reference.md), so a huge tenant
 * cannot flood the log and a cut never splits a character.  Use as
 * errmsg("... \"%.*s\" ...", chash_quote_len(data, len), data).
 */
#define CHASH_QUOTE_MAX 200
extern int	chash_quote_len(const char *data, size_t len);

/*
 * The extension's own SQL (run through SPI) must not resolve operators or
 * functions through the caller's search_path: a schema placed before
 * pg_catalog could run its "=" with the caller's rights.  This opens a GUC
 * nest level with search_path = pg_catalog, pg_temp; the caller closes it
 * with AtEOXact_GUC(true, level) (an error closes it by itself), and may
 * set more options at the same level.
 */
extern int	chash_pin_search_path(void);

/*
 * 22004 naming the first NULL argument: the names of arguments 0, 1, ...
 * follow, ended by NULL.  For functions that change state, which must not
 * do nothing silently on a NULL (docs/reference.md, Conventions).
 */
extern void chash_require_args(FunctionCallInfo fcinfo,...);

/* Text argument bytes without copying a short varlena. */
#define CHASH_TEXT_DATA(t) VARDATA_ANY(t)
#define CHASH_TEXT_LEN(t) VARSIZE_ANY_EXHDR(t)

#endif
