/*
 * names.h - a name table: the index of a name among a fixed list of names
 *
 * The one lookup behind every enum the SQL side spells as text (slot
 * methods, key types, step, lease and migration states).
 */
#ifndef CHASH_CORE_NAMES_H
#define CHASH_CORE_NAMES_H

#include <stddef.h>

/* The index of name (len bytes, no NUL needed) in names[0 .. count-1], or -1. */
int			name_index(const char *const *names, int count, const char *name, size_t len);

/*
 * Defines an enum's two functions over its name table (names[i] names the
 * enum value i): int parse(const char *name, size_t len, type *out), 0 or
 * -1 for a name not in the table, and const char *name_of(type value).
 */
#define NAME_TABLE_FUNCTIONS(type, parse, name_of, names) \
int \
parse(const char *name, size_t len, type *out) \
{ \
	int			i = name_index(names, (int) (sizeof(names) / sizeof(names[0])), name, len); \
 \
	if (i < 0) \
		return -1; \
	*out = (type) i; \
	return 0; \
} \
 \
const char * \
name_of(type value) \
{ \
	return names[value]; \
}

#endif
