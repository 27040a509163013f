/* Planted: a positional table naming a.c's function, b -> a, which closes a cycle. */
#include "shared.h"

const Ops b_ops = {a_run};

int
b_helper(void)
{
	return 0;
}
