/*
 * rebalance.h - the background rebalance (docs/shards.md, "Background
 * rebalancing"): its settings, the job cap in shared memory, and the
 * worker's entry points.
 */
#ifndef CHASH_REBALANCE_H
#define CHASH_REBALANCE_H

#include "postgres.h"

#include "postmaster/bgworker.h"

/* bgw_extra of a worker: run 0 is the resumer of a database */
typedef struct RebalanceArgs
{
	TransactionId xid;			/* the start's transaction, awaited; invalid: none */
	int32		run;
	Oid			role;			/* the worker's session user: the role that started the rebalance */
	char		directory[BGW_EXTRALEN - 3 * sizeof(int32)];
} RebalanceArgs;

StaticAssertDecl(sizeof(RebalanceArgs) <= BGW_EXTRALEN, "RebalanceArgs must fit in bgw_extra");

#define REBALANCE_WORKER_TYPE "chash rebalance"

extern char *chash_rebalance_conninfo;
extern int	chash_max_rebalance_jobs;
extern int	chash_rebalance_lease;
/* chash_move's --batch-rows default too (mover/options.c) */
#define REBALANCE_BATCH_ROWS_DEFAULT 50000
extern int	chash_rebalance_batch_rows;
extern bool chash_rebalance_online;
extern int	chash_rebalance_max_lag;

/* rebalance.c */
extern void rebalance_init(void);
extern bool rebalance_register(Oid database, const RebalanceArgs *args, bool must,
							   BackgroundWorkerHandle **handle);
extern int	rebalance_jobs_reserve(int want);
extern void rebalance_jobs_release(int n);
extern char *rebalance_schema(void);
extern char *rebalance_role_refusal(Oid role);

/* rebalance_worker.c */
extern PGDLLEXPORT void chash_rebalance_worker_main(Datum arg);
extern PGDLLEXPORT void chash_rebalance_launcher_main(Datum arg);

#endif
