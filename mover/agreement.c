/*
 * Before every delete of a batch's rows, both of its shards agree with
 * the directory database about its steps (lease.c, shard_agrees), and the
 * directory database is still the server the batch began with.
 */
#include "chash_move.h"

/*
 * The directory database's identity when this job's batch began (lease.c,
 * shard_agrees): a delete is made only while it is still the same server.
 */
__thread char dir_identity[DIR_IDENTITY_SIZE];

/* Both shards of the batch agree with the directory database, read now (before every delete). */
bool
shards_agree(Server *dir, Server *src, Server *tgt, const Batch *batch)
{
	return shard_agrees(dir, src, batch, dir_identity, sizeof(dir_identity))
		&& shard_agrees(dir, tgt, batch, dir_identity, sizeof(dir_identity));
}
