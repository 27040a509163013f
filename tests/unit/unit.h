/*
 * unit.h - a minimal test harness for the server-free core
 *
 * Each tests/unit/test_*.c is its own program: it defines unit_main(),
 * checks with CHECK / CHECK_EQ_U64 / CHECK_EQ_I64, and the shared main()
 * prints the closing "N passed, N failed" line and exits non-zero on any
 * failure.
 */
#ifndef CHASH_UNIT_H
#define CHASH_UNIT_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

extern long unit_passed;
extern long unit_failed;

void		unit_main(void);

/* A xorshift64 sequence, the same in every run: tests that draw random
 * inputs fail the same way each time. */
uint64_t	unit_random(void);

#define CHECK(cond) \
	do { \
		if (cond) \
			unit_passed++; \
		else \
		{ \
			unit_failed++; \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
		} \
	} while (0)

#define CHECK_EQ_U64(actual, expected) \
	do { \
		uint64_t	a_ = (uint64_t) (actual); \
		uint64_t	e_ = (uint64_t) (expected); \
		if (a_ == e_) \
			unit_passed++; \
		else \
		{ \
			unit_failed++; \
			fprintf(stderr, "%s:%d: %s = 0x%016" PRIx64 ", expected 0x%016" PRIx64 "\n", \
					__FILE__, __LINE__, #actual, a_, e_); \
		} \
	} while (0)

#define CHECK_EQ_I64(actual, expected) \
	do { \
		int64_t		a_ = (int64_t) (actual); \
		int64_t		e_ = (int64_t) (expected); \
		if (a_ == e_) \
			unit_passed++; \
		else \
		{ \
			unit_failed++; \
			fprintf(stderr, "%s:%d: %s = %" PRId64 ", expected %" PRId64 "\n", \
					__FILE__, __LINE__, #actual, a_, e_); \
		} \
	} while (0)

/* The server's MD5 (libpgcommon, frontend build) as a md5_digest_fn. */
void		unit_md5(const void *data, size_t len, uint8_t out[16]);

#endif
