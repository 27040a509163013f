/*
 * layout.c - the layout check of a directory (layout.h)
 */
#include "layout.h"

#include "redis_slot.h"

layout_status
directory_layout_check(int32_t slot_count, const char *method_name, size_t len,
					   slot_method *method)
{
	if (slot_count < 1 || slot_count > DIRECTORY_MAX_SLOTS)
		return LAYOUT_SLOT_COUNT;
	if (slot_method_parse(method_name, len, method) != 0)
		return LAYOUT_METHOD;
	if (*method == SLOT_METHOD_REDIS && slot_count != REDIS_CLUSTER_SLOTS)
		return LAYOUT_REDIS_SLOTS;
	return LAYOUT_OK;
}
