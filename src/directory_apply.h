/*
 * directory_apply.h - catching a cached directory state up with the
 * changes committed after its version, from the change history
 */
#ifndef CHASH_DIRECTORY_APPLY_H
#define CHASH_DIRECTORY_APPLY_H

#include "directory_load.h"

/*
 * Brings dir (a committed state, at dir->version) to the state the
 * snapshot sees, whose directory row is row.  False, with dir unchanged,
 * when the history cannot describe it (the caller loads the directory);
 * an error leaves dir->broken set.
 */
extern bool directory_catch_up(const DirectoryCatalog *catalog, RouteDirectory *dir, text *name,
							   const DirectoryRow *row, Snapshot snapshot);

#endif
