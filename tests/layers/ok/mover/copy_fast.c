/* A strategy table naming a function of another file (work.c). */
#include "strategy.h"

const Strategy fast = {
	.name = "fast",
	.run = work_run,
};
