/*
 * A testing aid: the mover killed at a named point of a batch's move, so
 * the tests can check that a takeover finishes what it left.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chash_move.h"

/*
 * Testing aid: CHASH_MOVE_CRASH_AT=subscribed|copying|fenced|copied|completed|deleted
 * kills the process there, the first time it gets there (copying: in
 * the middle of a COPY, copy.c; deleted: the source's rows deleted, the
 * leases not yet finished).  CHASH_MOVE_PAUSE_AT=<point>:<seconds> waits
 * there that long (or until SIGTERM), said, so that a test acts at that
 * point (CHASH_MOVE_PAUSE_AT=finished, run.c, is another pause).
 */
void
crash_point(const char *point)
{
	static pthread_mutex_t crash_lock = PTHREAD_MUTEX_INITIALIZER;
	const char *at = getenv("CHASH_MOVE_CRASH_AT");
	const char *pause = getenv("CHASH_MOVE_PAUSE_AT");
	size_t		len = strlen(point);

	if (pause != NULL && strncmp(pause, point, len) == 0 && pause[len] == ':')
	{
		double		until = now_seconds() + atof(pause + len + 1);

		report("info", "paused at \"%s\" (CHASH_MOVE_PAUSE_AT)", point);
		while (now_seconds() < until && !stop_requested)
			usleep(20 * 1000);
	}
	if (at == NULL || strcmp(at, point) != 0)
		return;
	pthread_mutex_lock(&crash_lock);
	raise(SIGKILL);
}
