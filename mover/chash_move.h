/*
 * chash_move: carries out a running chash migration between servers
 * (docs/chash_move.md).  Shared declarations of its files, one
 * concept each: options, connections, registered tables, a batch's
 * phases (move.h), leases, the progress line and messages.
 */
#ifndef CHASH_MOVE_H
#define CHASH_MOVE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <pthread.h>

#include <libpq-fe.h>
#include <xxhash.h>

#define PROGNAME "chash_move"

#include "engine.h"
#include "../src/core/states.h"

/* ---- command_line.c ---- */
extern void parse_options(int argc, char **argv);

/* ---- report.c: messages in the style of PostgreSQL's client programs ---- */
extern void report(const char *level, const char *fmt,...) __attribute__((format(printf, 2, 3)));
extern void report_result(const char *level, const char *what, const PGresult *res, const PGconn *conn);
extern void report_result_owned(const char *level, char *what, const PGresult *res, const PGconn *conn);
extern pthread_mutex_t output_lock;
extern bool first_time(const char *key);
extern __thread const char *report_steps;	/* the batch this thread works on */
extern char *text_array(char *const *values, int n);
extern void *xmalloc(size_t size);
extern void *xcalloc(size_t n, size_t size);
extern void *xrealloc(void *old, size_t size);
extern XXH64_state_t *xhash_state(void);

/* ---- connection.c ---- */
typedef struct Server
{
	char	   *name;			/* the shard's name, or "directory" */
	char	   *conninfo;
	PGconn	   *conn;
	char	   *schema;			/* chash's schema there, quoted */
	bool		has_wait_fence;	/* chash_shard_wait_fence exists there */
	bool		has_guard;		/* chash.bypass_guard exists there */
	bool		has_refusal;	/* chash_shard_refusal and _code exist there (1.2) */
	bool		superuser;		/* the mover's role there is a superuser */
} Server;

extern PGconn *connect_to(const char *conninfo, const char *what);
/* As connect_to, a replication connection to the database (NULL: failed, said). */
extern PGconn *connect_replication(const char *conninfo, const char *what);
extern bool server_open(Server *server);
extern void server_close(Server *server);
extern PGresult *query(Server *server, const char *sql, int nparams, const char *const *params);
extern PGresult *query_owned(Server *server, char *sql, int nparams, const char *const *params);
extern bool command(Server *server, const char *sql);
extern bool begin_table_writes(Server *server);
extern PGresult *server_exec(Server *server, const char *sql);
extern PGresult *server_wait(Server *server, const char *sql, bool *cancelled);
extern PGresult *last_result(Server *server, const char *sql);
extern const char *last_sqlstate(void);
extern char *conninfo_of_server(const char *server);
extern char *escape_literal(PGconn *conn, const char *s);
extern char *escape_identifier(PGconn *conn, const char *s);
extern char *format_text(const char *fmt,...) __attribute__((format(printf, 1, 2)));
extern char *text_append(char *list, const char *sep, const char *item);
extern void server_rollback(Server *server);

/* ---- shards.c: the shards this job talks to, one connection each ---- */
extern Server *step_shard(Server *dir, const char *name);
extern void step_shards_close(void);

/* ---- run.c: the migration being moved, and the move's engine ---- */
typedef struct Migration
{
	long long	id;
	char	   *directory;
	int			slot_count;
	char	   *slot_method;
	char	   *key_type;
	char		holder[160];	/* this process's name on its leases */
	char		database_id[9]; /* of the directory database: its server's system identifier and oid, hashed */
} Migration;

extern Migration migration;
extern volatile bool failed;	/* a step failed: every job stops */
extern volatile bool config_error;	/* a shard cannot be used as configured */

/* ---- plan.c: --dry-run ---- */
extern int	dry_run(void);

/* ---- tables.c: registered tables and the rows of a step ---- */
typedef struct StepTarget
{
	int			slot;			/* -1 for tenant steps; a batch's first slot */
	const char *tenant;			/* a batch's first tenant */
	int			nsteps;			/* > 1: a batch, its slots or tenants below */
	const char *slots;			/* the batch's slots, an int[] literal */
	const char *tenants;		/* the batch's tenants, a text[] literal */
} StepTarget;

typedef struct OwnedSequence
{
	char	   *column;			/* quoted */
	char	   *sequence;		/* quoted, schema-qualified */
	bool		ascending;
} OwnedSequence;

typedef struct TableInfo
{
	char	   *table_name;		/* stored quoted: schema.table */
	char	   *tenant_column;
	char	   *columns;		/* what COPY moves, "a, b" (step_check) */
	char	   *typed_columns;	/* "a int, b text", the same on both shards (step_check) */
	OwnedSequence *sequences;	/* the target's, of its columns (step_check) */
	int			nsequences;
} TableInfo;

extern int	registered_tables(Server *dir, TableInfo **tables);
extern void free_tables(TableInfo *tables, int ntables);
extern bool order_tables(Server *src, TableInfo *tables, int ntables);
extern bool owned_sequences(Server *tgt, TableInfo *table);
extern char *step_predicate(Server *server, const TableInfo *table, const StepTarget *target);
extern char *table_columns(Server *server, const TableInfo *table);
extern void check_slot_index(Server *server, const TableInfo *table);
extern char *columns_signature(const TableInfo *tables, int ntables);
extern char *server_columns_signature(Server *server, const TableInfo *tables, int ntables);
extern bool pair_checked(const char *src, const char *tgt, TableInfo *tables, int ntables);
extern void pair_remember(const char *src, const char *tgt, const TableInfo *tables, int ntables);
extern void pair_forget(const char *src, const char *tgt);
extern int	checked_pairs(char ***src, char ***tgt);

/* ---- step_check.c: what a batch needs of its shard pair ---- */
extern bool step_check(Server *src, Server *tgt, TableInfo *tables, int ntables);
extern bool columns_unchanged(Server *src, Server *tgt, const TableInfo *tables, int ntables);
extern bool foreign_code_check(Server *src, Server *tgt, const TableInfo *tables, int ntables);

/* ---- delete.c, sequences.c: a batch's rows deleted on a shard, the target's sequences advanced ---- */
extern char *delete_sql(Server *server, const TableInfo *table, const StepTarget *target);
extern long long delete_rows(Server *server, TableInfo *tables, int ntables, const StepTarget *target);
extern bool advance_sequences(Server *tgt, TableInfo *tables, int ntables, const StepTarget *target);

/* ---- rowsum.c: the checksum of a binary COPY stream's rows ---- */
typedef struct RowSum
{
	long long	rows;
	uint64_t	sum;			/* of XXH64 of each row's bytes, mod 2^64 */
	/* the parser */
	int			state;
	int			fields;			/* of the row, still to come */
	long long	left;			/* bytes of the field (or header extension) to come */
	size_t		need;			/* the fixed-size piece being read: its size */
	size_t		have;			/* and how much of it is in part */
	unsigned char part[19];
	XXH64_state_t *hash;		/* of the row being read */
} RowSum;

extern void rowsum_init(RowSum *sum);
extern void rowsum_feed(RowSum *sum, const char *data, size_t n);
extern bool rowsum_whole(const RowSum *sum);
extern void rowsum_free(RowSum *sum);

/* ---- lease.c ---- */
/*
 * A batch: steps of one shard pair, all slot steps or all tenant steps,
 * in one state and progress (a claim, or a takeover of what a dead mover
 * left in one place).  The single step is the batch of one.
 */
typedef struct Batch
{
	int			nsteps;
	int		   *steps;			/* in step order */
	int		   *slots;			/* -1: a tenant step */
	char	  **tenants;
	char	   *step_list;		/* "{3,4,5}" */
	char	   *slot_list;		/* "{17,18}" or NULL */
	char	   *tenant_list;	/* a text[] literal or NULL */
	char	   *from_shard;
	char	   *to_shard;
	step_state	state;			/* src/core/states.h, parsed once as the claim reads it */
	lease_progress progress;
	bool		fenced_at_claim;	/* a new claim, fenced with it (lease_claim's fence pairs) */
	bool		prefetched;		/* claimed while the job's last batch copied (run.c) */
	double		claimed_at;		/* now_seconds() as the claim returned */
} Batch;

typedef enum ClaimResult
{
	CLAIM_GOT,
	CLAIM_WAIT,					/* steps in flight held by live leases */
	CLAIM_DONE,					/* nothing left */
	CLAIM_STUCK,				/* in flight without a lease, or an error no retry mends */
	CLAIM_ERROR
} ClaimResult;

extern ClaimResult lease_claim(Server *dir, Batch *batch, int max_steps, const char *fence_from, const char *fence_to);
extern bool lease_fence(Server *dir, const Batch *batch);
extern bool lease_complete(Server *dir, const Batch *batch);
extern bool lease_release(Server *dir, const Batch *batch);
extern bool lease_finish(Server *dir, const Batch *batch);
extern bool lease_subscribed(Server *dir, const Batch *batch);
extern bool lease_copied(Server *dir, const Batch *batch, long long rows, long long bytes);
extern void *lease_keeper(void *arg);
extern bool lease_keeper_start(void);
extern void lease_keeper_stop(void);
extern void lease_totals(Server *dir);
extern void lease_hold(const Batch *batch);
extern void lease_unhold(const Batch *batch);
extern bool lease_lock(Server *dir, const Batch *batch, unsigned states);
extern bool lease_unlock(Server *dir, bool commit);

/* ---- batch.c ---- */
extern void batch_free(Batch *batch);
extern char *batch_describe(const Batch *batch);

/* a set of step states (src/core/states.h): STEP_STATE(STEP_FENCED) | STEP_STATE(STEP_DONE) */
#define STEP_STATE(s) (1u << (s))
extern char *step_states_literal(unsigned states);

/* ---- agreement.c: whether a shard agrees with the directory database ---- */
#define DIR_IDENTITY_SIZE 80
extern bool replica_position(Server *server, long long *version, char **refusal, bool *lasting);
extern bool shard_agrees(Server *dir, Server *shard, const Batch *batch, char *identity, size_t identity_size);
extern bool directory_current(Server *dir);
extern __thread char dir_identity[DIR_IDENTITY_SIZE];
extern bool shards_agree(Server *dir, Server *src, Server *tgt, const Batch *batch);

/* ---- wait_fence.c: the waits for the shards at a fence or a completion ---- */
extern bool wait_fence(Server *dir, Server *src, const Batch *batch);
extern bool wait_replica(Server *dir, Server *server, const Batch *batch, unsigned states, const char *what);

/*
 * ---- crash_point.c: chash_move's tests kill it at a named point ----
 * Not in the engine a server links (the top Makefile): no server process
 * may raise a signal at itself.
 */
#ifdef CHASH_ENGINE_IN_SERVER
#define crash_point(point) ((void) (point))
#else
extern void crash_point(const char *point);
#endif
#define crash_point_at(progress) crash_point(state_name(STATE_LEASE, (progress)))

/* ---- copy.c ---- */
extern long long copy_table(Server *src, Server *tgt, const TableInfo *table, const char *names,
							const StepTarget *target, long long *bytes, RowSum *sum);

/* ---- verify.c ---- */
typedef enum Verdict
{
	VERDICT_SAME,
	VERDICT_DIFFERENT,
	VERDICT_ERROR
} Verdict;

extern Verdict verify(Server *src, Server *tgt, TableInfo *tables, int ntables,
					  const StepTarget *target, const Batch *batch, long long *rows);
extern Verdict verify_again(Server *src, Server *tgt, TableInfo *tables, int ntables, const StepTarget *target,
							const Batch *batch, long long *rows);

/* ---- phases.c: a batch's move, phase by phase (move.h) ---- */
typedef enum StepOutcome
{
	STEP_MOVED,					/* finished (moved, or cleaned up after a cancel) */
	STEP_RETRY,					/* an error: given back, or left to its lease */
	STEP_STOPPED,				/* Ctrl-C: given back, or left to its lease */
	STEP_FAILED					/* verification failed: released */
} StepOutcome;

/* a job's helper thread: the source side of its completed blocking batches */
typedef struct Finisher Finisher;

/* run.c: what a job does as a blocking batch's copy begins (claim its next batch meanwhile) */
typedef struct CopyHook
{
	void		(*begin) (void *arg);
	void	   *arg;
} CopyHook;

extern StepOutcome move_batch(Server *dir, Batch *batch, long long *rows, Finisher *finisher, const CopyHook *hook);

/* ---- finisher.c ---- */
extern Finisher *finisher_start(void);
extern void finisher_wait(Finisher *finisher);
extern void finisher_stop(Finisher *finisher);

/* ---- lag_gate.c: no fence while a shard's replica of the directory lags (--max-lag) ---- */
extern bool lag_gate(Server *dir, Server *src, Server *tgt, const Batch *batch, lease_progress progress);
extern bool lag_within(Server *dir, const char *from, const char *to);

/* ---- replication_record.c, replication_cleaner.c: the online moves' objects ---- */
extern bool replication_objects_record(Server *dir, int step, const char *source, const char *target,
									   const char *name);
extern void replication_objects_clean(void);

/* ---- online*.c: steps moved by logical replication (--online; the parts: online.c) ---- */
/* Per table, the rows of an online step that changed since the copy, from the tally (online_tally.c) */
typedef struct TallyTable
{
	char	   *oid[2];			/* the table's on the source and on the target */
	char	   *keys;			/* its replica identity columns, "a, b"; NULL: none, verified by a scan */
	char	  **changed;		/* the keys of the rows changed since the copy, JSON objects */
	int			nchanged;
	int			distinct;		/* the first distinct are sorted, without repeats */
	int			capacity;
	long long	net;			/* rows inserted less rows deleted since the copy */
	bool		unkeyed;		/* a change without a key came: verified by a scan */
} TallyTable;

/* A session holding a temporary slot of plugin chash that tallies a shard's changes of the step (online_tally.c) */
typedef struct Tally
{
	Server		server;			/* conn NULL: none */
	char	   *slot;
	const char *except_xid;		/* the transaction it leaves out, or NULL */
} Tally;

/*
 * What the tail verification (online_verify.c) needs of the mover's copy
 * (online_subscribe.c); online_copy_free (online_tally.c) frees it all.
 */
typedef struct OnlineCopy
{
	bool		known;			/* false after a takeover: the whole step is verified */
	char		source_xmax[16];	/* the copy's snapshot on the source: xmax, as an xid */
	char	   *source_xip;		/* and its in-progress xids, an xid[] literal */
	char		target_xid[16]; /* the copy's transaction on the target */
	long long	rows;
	long long	bytes;
	long long  *table_rows;		/* what the copy took of each table */
	Tally		tally[2];		/* the source's (a copy of the step's slot) and the target's */
	char	   *filter;			/* the decoding filters' name: the subscription's slot */
	TallyTable *tables;
	int			ntables;
	long long	changed;		/* rows changed since the copy, verified by key in the write block */
	int			scanned;		/* tables verified by a scan there instead (their changes not counted) */
} OnlineCopy;

/* online_wait_*: the target's apply failed (said once); the step cannot move online as it is */
#define ONLINE_CANNOT_APPLY (-1)

/* online.c */
extern char *online_name(int step);
extern bool online_usable(Server *src, Server *tgt, TableInfo *tables, int ntables, const StepTarget *target);
/* online_subscribe.c */
extern Verdict online_subscribe(Server *dir, Server *src, Server *tgt, TableInfo *tables, int ntables,
								const StepTarget *target, const Batch *batch, OnlineCopy *copy);
extern void online_test_pause(void);
/* online_stream.c */
extern bool online_streaming(Server *tgt, int step, int ntables);
extern int	online_wait_caught_up(Server *src, Server *tgt, int step, int ntables, OnlineCopy *copy);
extern int	online_wait_applied(Server *src, Server *tgt, int step, int ntables);
/* online_verify.c */
extern Verdict online_verify_tail(Server *src, Server *tgt, TableInfo *tables, int ntables,
								  const StepTarget *target, const Batch *batch, OnlineCopy *copy,
								  long long *rows);
/* online_tally.c */
extern void online_copy_free(OnlineCopy *copy);
/* online_teardown.c */
extern bool online_drop(Server *src, Server *tgt, int step);
extern bool online_drop_batch(Server *src, Server *tgt, const Batch *batch);

/* ---- progress.c ---- */
typedef struct Counters
{
	long long	steps;			/* moved by this process */
	long long	rows;
	long long	bytes;
	long long	done;			/* of the migration, from the directory */
	long long	total;
	const char *unit;			/* "slots", "tenants", "steps" */
} Counters;

extern Counters counters;
extern pthread_mutex_t counters_lock;
extern void progress_start(void);
extern void progress_draw(bool final);
extern void progress_clear(void);
extern bool progress_on;
extern void counters_add(long long rows, long long bytes);
extern void rate_take(long long rows);
extern double now_seconds(void);

#endif
