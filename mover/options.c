/*
 * The move's options and their defaults, shared by chash_move (whose
 * command line sets them, command_line.c) and the extension's background
 * rebalance (src/rebalance.c), which links the engine too.
 */
#include "chash_move.h"

MoveOptions options = {0, NULL, 1, -1, 1000000, 50000, 0, 30, false, false, NULL, 60, false, 0, false, 0};
