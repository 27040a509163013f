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

#endif
