/* Calls b.c: a -> b. */
#include "shared.h"

int
a_run(void)
{
	return b_helper();
}
