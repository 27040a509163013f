/*
 * layout.h - whether a slot count and a slot method can be a directory's
 * layout (docs/directory.md)
 *
 * One rule for chash_create_directory, chash_tenant_slot, the directory
 * loader's check of the directory row and the output plugin's options:
 * 1 .. DIRECTORY_MAX_SLOTS slots, a known slot method, and 'redis' only
 * with Redis Cluster's 16384 slots.
 */
#ifndef CHASH_CORE_LAYOUT_H
#define CHASH_CORE_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "directory.h"

typedef enum layout_status
{
	LAYOUT_OK = 0,
	LAYOUT_SLOT_COUNT = -1,		/* outside 1 .. DIRECTORY_MAX_SLOTS */
	LAYOUT_METHOD = -2,			/* not a slot method's name */
	LAYOUT_REDIS_SLOTS = -3		/* 'redis' with other than 16384 slots */
} layout_status;

/* Checks the layout; on LAYOUT_OK, *method is the parsed slot method. */
layout_status directory_layout_check(int32_t slot_count, const char *method_name, size_t len,
									 slot_method *method);

#endif
