/*
 * The move's options and their defaults, shared by chash_move (whose
 * command line sets them, command_line.c) and the extension's background
 * rebalance (src/rebalance.c), which links the engine too.
 */
#include "chash_move.h"

MoveOptions options = {0, NULL, 1, -1, 1000000, 50000, 0, 30, false, false, NULL, 60, false, 0, false, 0};

/*
 * Under a rate a batch aims at half a second of rows, unless the batch
 * size was given (--batch-rows): a blocking batch's write block stays
 * short however low the rate.
 */
void
options_throttle_batches(void)
{
	long long	half = options.max_rate / 2 > 0 ? options.max_rate / 2 : 1;

	if (options.max_rate > 0 && !options.batch_rows_given && (options.batch_rows == 0 || options.batch_rows > half))
		options.batch_rows = half;
}
