/*
 * A testing aid: the mover killed at a named point of a batch's move, so
 * the tests can check that a takeover finishes what it left.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "chash_move.h"

/*
 * Testing aid: CHASH_MOVE_CRASH_AT=subscribed|copying|fenced|copied|completed|deleted
 * kills the process there, the first time it gets there (copying: in
 * the middle of a COPY, copy.c; deleted: the source's rows deleted, the
 * leases not yet finished).
 */
void
crash_point(const char *point)
{
	static pthread_mutex_t crash_lock = PTHREAD_MUTEX_INITIALIZER;
	const char *at = getenv("CHASH_MOVE_CRASH_AT");

	if (at == NULL || strcmp(at, point) != 0)
		return;
	pthread_mutex_lock(&crash_lock);
	raise(SIGKILL);
}
