/*
 * The tallies of an online step (online_tally.c), for the other parts of
 * the online copy: started by online_subscribe.c, read by online_stream.c
 * and online_verify.c.  Their OnlineCopy (chash_move.h) owns them:
 * tally_stop ends them, whatever was made.
 */
#ifndef CHASH_MOVE_ONLINE_TALLY_H
#define CHASH_MOVE_ONLINE_TALLY_H

#include "chash_move.h"

extern void tally_start_target(Server *tgt, const char *name, const char *which, OnlineCopy *copy);
extern void tally_start_source(Server *src, Server *tgt, const char *name, TableInfo *tables, int ntables,
							   OnlineCopy *copy);
extern bool tally_read(OnlineCopy *copy);
extern void tally_distinct(TallyTable *t);
extern char *tally_json(TallyTable *t);
extern void tally_stop(OnlineCopy *copy);

#endif
