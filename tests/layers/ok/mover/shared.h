/* The program's shared header (as mover/chash_move.h): it brings strategy.h along. */
#ifndef SHARED_H
#define SHARED_H

#include "strategy.h"

#endif
