/*
 * unit_md5.c - MD5 for the unit tests, from PostgreSQL's libpgcommon
 *
 * The extension uses the server's copy of the same code, so the unit tests
 * exercise the MD5 the extension really calls.
 */
#include "postgres_fe.h"

#include "common/md5.h"

#include "unit.h"

void
unit_md5(const void *data, size_t len, uint8_t out[16])
{
	const char *errstr = NULL;

	if (!pg_md5_binary(data, len, out, &errstr))
	{
		fprintf(stderr, "md5 failed: %s\n", errstr ? errstr : "?");
		abort();
	}
}
