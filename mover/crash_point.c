/*
 * A testing aid: the mover killed at a named point of a batch's move, so
 * the tests can check that a takeover finishes what it left.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "chash_move.h"

/* Testing aid: CHASH_MOVE_CRASH_AT=subscribed|fenced|copied|completed kills the process there, once. */
void
crash_point(lease_progress point)
{
	static pthread_mutex_t crash_lock = PTHREAD_MUTEX_INITIALIZER;
	const char *at = getenv("CHASH_MOVE_CRASH_AT");

	if (at == NULL || strcmp(at, state_name(STATE_LEASE, point)) != 0)
		return;
	pthread_mutex_lock(&crash_lock);
	raise(SIGKILL);
}
