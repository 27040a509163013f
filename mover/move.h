/*
 * A batch's move (phases.c): what its phases share, and the two ways its
 * rows are copied behind one interface (copy_blocking.c, copy_online.c),
 * as Citus's TransferShards picks a copy by logical replication or one
 * that blocks writes.
 */
#ifndef CHASH_MOVE_MOVE_H
#define CHASH_MOVE_MOVE_H

#include "chash_move.h"

/* When the parts of a batch's move ended (seconds, now_seconds), for its line */
typedef struct MoveTimes
{
	double		start,
				checked,		/* the checks before the fence done */
				fence,			/* the fence phase (writes refused from here, or from blocked) */
				blocked,		/* writes refused from here: the fence, or the claim that fenced */
				waited,			/* the shards at the fence */
				copy0,
				copy,
				done,			/* to here */
				stream;			/* the online copy and its catch-up, before the fence */
} MoveTimes;

/* How a phase ended: on to the next, or how the batch ends (phases.c, batch_end) */
typedef enum PhaseResult
{
	PHASE_NEXT,
	PHASE_MOVED,				/* finished (moved, or cleaned up after a cancel) */
	PHASE_RETRY,				/* left to its leases: this or another mover takes it over */
	PHASE_REFUSE,				/* the shards cannot take it: released if only claimed (or fenced with the claim, not copied), else PHASE_RETRY */
	PHASE_GIVE_BACK,			/* subscription dropped, copy off the target, released */
	PHASE_CANNOT,				/* cannot move as it is (said): given back, and the mover stops */
	PHASE_REJECTED				/* verification failed, the copy rolled back: released, and the mover stops */
} PhaseResult;

typedef struct CopyStrategy CopyStrategy;

/* One batch's move, as its phases go */
typedef struct Move
{
	Server	   *dir;
	Server	   *src;
	Server	   *tgt;
	Batch	   *batch;
	StepTarget	target;
	TableInfo  *tables;
	int			ntables;
	lease_progress progress;	/* its leases' progress, then as the phases go */
	const CopyStrategy *copy;
	OnlineCopy	copied;			/* what the online copy left for the tail verification */
	long long	rows;
	long long	bytes;
	long long	moved;			/* the rows moved, once the batch is finished */
	MoveTimes	times;
	Finisher   *finisher;
	bool		copy_began;		/* the copy phase started: the target may hold rows of this try */
	const CopyHook *hook;		/* the job's, as a blocking copy begins (NULL: none) */
} Move;

/*
 * A way to copy a batch's rows.  The phases call prepare before the fence
 * (writes going on), copy once the shards are at the fence (the rows on
 * the target, verified, the sequences advanced: PHASE_NEXT), and finish
 * once the batch is completed, before any source row is deleted.
 */
struct CopyStrategy
{
	const char *name;
	PhaseResult (*prepare) (Move *m);	/* NULL: nothing before the fence */
	PhaseResult (*copy) (Move *m);
	bool		(*finish) (Move *m);
	bool		background_delete;	/* the source's rows are deleted by the job's finisher thread */
};

extern const CopyStrategy blocking_copy;	/* copy_blocking.c */
extern const CopyStrategy online_copy;	/* copy_online.c */

/* finisher.c: a completed batch whose rows are still to delete on its source, and what its line reports */
typedef struct Finish
{
	Batch		batch;
	TableInfo  *tables;
	int			ntables;
	StepTarget	target;
	bool		online;
	long long	rows;
	long long	bytes;
	long long	changed;		/* online: rows changed since the copy, verified by the tallies */
	int			scanned;		/* online: tables verified by a scan instead, their changes not in changed */
	MoveTimes	times;
	char		identity[DIR_IDENTITY_SIZE];	/* the job's dir_identity when the batch completed */
} Finish;

extern bool finish_source(Server *dir, Server *src, Server *tgt, Finish *f);
extern void finisher_give(Finisher *fi, const Finish *f);

#endif
