/*
 * names.c - the index of a name in a name table (names.h)
 */
#include "names.h"

#include <string.h>

int
name_index(const char *const *names, int count, const char *name, size_t len)
{
	for (int i = 0; i < count; i++)
		if (strlen(names[i]) == len && memcmp(names[i], name, len) == 0)
			return i;
	return -1;
}
