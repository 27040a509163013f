/*
 * tenant_slot.h - the slot of a tenant under a directory's layout
 *
 * One rule for chash_tenant_slot and the routing cache, so that an index
 * on chash_tenant_slot(...) on a shard finds exactly the rows chash_slot
 * assigns to a slot.
 */
#ifndef CHASH_TENANT_SLOT_H
#define CHASH_TENANT_SLOT_H

#include "postgres.h"

#include "directory.h"

/*
 * The slot of a tenant given as its canonical text and, for 'pg_hash', as a
 * value of type typid (TEXTOID, INT8OID or UUIDOID).  When xxh is not NULL
 * and the method hashes with XXH64, the hash is stored there for reuse.
 */
extern int32 tenant_slot_of(slot_method method, int32 slot_count, Oid typid, Datum typed,
							const char *canonical, size_t len, uint64 *xxh);

#endif
