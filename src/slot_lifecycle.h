/*
 * slot_lifecycle.h - replication slots on the directory database that
 * follow the local transaction (slot_lifecycle.c)
 */
#ifndef CHASH_SLOT_LIFECYCLE_H
#define CHASH_SLOT_LIFECYCLE_H

#include "postgres.h"

/*
 * The slot slot_name, just created on the server at conninfo, is dropped
 * there again if this (sub)transaction aborts.
 */
extern void slot_drop_on_abort(const char *conninfo, const char *slot_name);

#endif
