/*
 * The mover's engine as a library: what a program that links it sets and
 * calls (chash_move's main.c, the extension's background rebalance in
 * src/rebalance.c).  Plain C and libpq; no server headers, so the
 * extension's glue can include it.
 */
#ifndef CHASH_MOVE_ENGINE_H
#define CHASH_MOVE_ENGINE_H

#include <signal.h>
#include <stdbool.h>

/* ---- options.c: the move's options, their defaults there ---- */
typedef struct MoveOptions
{
	long long	migration;		/* 0: not given */
	const char *directory;		/* NULL: not given */
	int			jobs;
	long long	max_steps;		/* -1: no limit */
	int			batch_steps;	/* the most steps one batch claims */
	long long	batch_rows;		/* the rows a batch aims at (0: no bound) */
	long long	batch_bytes;	/* the bytes a batch aims at (0: no bound) */
	int			lease_seconds;
	bool		verbose;
	bool		online;			/* --online: copy by logical replication */
	const char *conninfo;		/* the directory database */
	int			fence_timeout;	/* seconds a shard may take to apply a fence or a completion */
	bool		batch_rows_given;	/* --batch-rows was given */
	long long	max_rate;		/* --max-rate: rows a second across jobs (0: no bound) */
	bool		dry_run;		/* --dry-run: print the batches, move nothing */
	long long	max_lag;		/* --max-lag: bytes a shard's replica of the directory may lag at a fence (0: no gate) */
	/*
	 * The background rebalance: the role its connections act for, under
	 * the rule of the server's other connections (src/core/conn_policy.h);
	 * NULL in chash_move, a client whose user's own passwords they are.
	 */
	const char *on_behalf_of;
	bool		on_behalf_superuser;
} MoveOptions;

extern MoveOptions options;

/* Under max_rate, batches of half a second of rows unless batch_rows_given. */
extern void options_throttle_batches(void);

/*
 * run.c: moves the migration the options name until it is done or
 * stop_requested (or stop_claiming) is set; 0 done, 1 failed or interrupted, 2 no single
 * migration.  It runs threads of its own (a lease keeper and the jobs),
 * which inherit the caller's signal mask.
 */
extern volatile sig_atomic_t stop_requested;
extern int	mover_run(const char *holder_prefix);

/*
 * A gentler stop: the jobs claim nothing more and end after the batch
 * they move (completed, or given back when it fails), so that no step is
 * left fenced; stop_requested interrupts the batches instead.
 */
extern volatile sig_atomic_t stop_claiming;

/*
 * report.c: when set, every message goes to the hook instead of stderr,
 * with the steps of the batch the job that says it works on ("{3,4}", or
 * NULL).  Called from the engine's threads, one call at a time.
 */
typedef void (*report_hook_fn) (const char *level, const char *steps, const char *message);
extern report_hook_fn report_hook;

/*
 * report.c: called when an allocation fails, from any of the engine's
 * threads.  chash_move's ends the process; without one (inside a server)
 * the engine never does: it stops the run and waits for memory instead.
 */
extern void (*out_of_memory_hook) (void);

/* progress.c: what this process has moved so far */
extern void mover_counts(long long *steps, long long *rows, long long *bytes);

#endif
