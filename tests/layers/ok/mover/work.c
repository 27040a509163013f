/* The work a strategy's table names: an arrow from copy_fast.c to here. */
#include "strategy.h"

int
work_run(int step)
{
	return step + 1;
}
