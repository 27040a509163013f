/* Planted: a core table naming a glue function (src/visit.c), an arrow up. */
#include "walk.h"

const Walker walker = {.visit = glue_visit};
