/*
 * chash_move: reads the options, sets the signals up, and runs the move
 * (run.c) to its exit status.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chash_move.h"

static void
handle_stop(int signo)
{
	if (stop_requested)
		_exit(1);				/* a second Ctrl-C: leave the rest to the leases */
	stop_requested = 1;
}

/* an allocation failed (report.c has said so): the program ends */
static void
no_memory(void)
{
	exit(1);
}

int
main(int argc, char **argv)
{
	struct sigaction sa = {0};

	out_of_memory_hook = no_memory;
	parse_options(argc, argv);
	sa.sa_handler = handle_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return mover_run(PROGNAME);
}
