/*
 * The glue's visitor, which the core's table names.  It includes a
 * server header of the core header's name, which is no arrow to it.
 */
#include "utils/walk.h"

void
glue_visit(int node)
{
	(void) node;
}
