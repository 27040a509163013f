/*
 * A completed batch's source side (finish_source): once the source's
 * replica routes its rows to the target, they are deleted there and the
 * leases finished; then the batch's line.  For a blocking batch it runs
 * in the job's finisher thread, while the job goes on with its next batch.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "move.h"

/*
 * What an online batch's write block verified, for its line: the rows
 * changed since the copy, found by the tallies; a table verified by a
 * scan instead has its changes found without counting them, said apart.
 */
static char *
verified_changes(const Finish *f)
{
	int			keyed = f->ntables - f->scanned;

	if (f->scanned == 0)
		return format_text("%lld changed since the copy", f->changed);
	if (keyed <= 0)
		return format_text("%s", "the changes found by a scan");
	return format_text("%lld changed since the copy in %d %s by key, the changes of %d %s found by a scan",
					   f->changed, keyed, keyed == 1 ? "table" : "tables", f->scanned, f->scanned == 1 ? "table" : "tables");
}

/* "tenant 'acme'": the tenant quoted, in a text of its own */
static char *
tenant_words(Server *src, const char *tenant)
{
	char	   *quoted = escape_literal(src->conn, tenant);
	char	   *words = format_text("tenant %s", quoted);

	free(quoted);
	return words;
}

/*
 * A completed batch's source side: once the source's replica routes its
 * rows to the target, they are deleted there (one DELETE per table) and
 * the leases finished; then the batch's line.  False: left to the leases
 * (a takeover deletes them).
 */
bool
finish_source(Server *dir, Server *src, Server *tgt, Finish *f)
{
	Batch	   *b = &f->batch;
	StepTarget *target = &f->target;
	bool		one = b->nsteps == 1;
	double		t_applied,
				t_delete;

	/* the directory server the batch's shards agreed with, in this thread too */
	memcpy(dir_identity, f->identity, sizeof(dir_identity));
	if (!wait_replica(dir, src, b, STEP_STATE(STEP_DONE), "completion"))
		return false;
	t_applied = now_seconds();
	if (!lease_lock(dir, b, STEP_STATE(STEP_DONE)))
		return false;
	if (!shards_agree(dir, src, tgt, b))
	{
		server_rollback(dir);
		return false;
	}
	t_delete = now_seconds();
	if (delete_rows(src, f->tables, f->ntables, target) < 0)
	{
		server_rollback(dir);
		return false;
	}
	crash_point("deleted");
	if (!lease_finish(dir, b) || !lease_unlock(dir, true))
	{
		server_rollback(dir);
		return false;
	}
	pthread_mutex_lock(&counters_lock);
	counters.steps += b->nsteps;
	pthread_mutex_unlock(&counters_lock);
	if (options.verbose)
	{
		char	   *which = batch_describe(b);
		char	   *what = !one ? format_text("%d %s", b->nsteps, target->slot >= 0 ? "slots" : "tenants")
			: target->slot >= 0 ? format_text("slot %d", target->slot)
			: tenant_words(src, target->tenant);
		char	   *fence = !b->fenced_at_claim ? format_text("fence %.3f s", f->times.fence - f->times.checked)
			: format_text("fenced with its claim%s", b->prefetched ? " during the last batch's copy" : "");

		if (f->times.fence > 0 && f->online)
		{
			char	   *name = online_name(b->steps[0]);
			char	   *changed = verified_changes(f);

			report("info", "%s: %s %s -> %s online (replication slot \"%s\"), %lld rows; copy and catch-up %.3f s, last catch-up and verification (%s) %.3f s, writes blocked %.3f s",
				   which, what, b->from_shard, b->to_shard, name,
				   f->rows, f->times.stream, changed, f->times.copy - f->times.copy0, f->times.done - f->times.blocked);
			free(changed);
			free(name);
		}
		else if (f->times.fence > 0 && one)
			report("info", "%s: %s %s -> %s, %lld rows, %.1f kB; copy %.3f s, writes blocked %.3f s",
				   which, what, b->from_shard, b->to_shard,
				   f->rows, f->bytes / 1024.0, f->times.copy - f->times.copy0, f->times.done - f->times.blocked);
		else if (f->times.fence > 0)
			report("info", "%s: %s %s -> %s, %lld rows, %.1f kB; copy %.3f s, writes blocked %.3f s; "
				   "checks %.3f s, %s, shards at the fence %.3f s, complete %.3f s, "
				   "source at the completion %.3f s, delete on the source %.3f s, the batch %.3f s",
				   which, what, b->from_shard, b->to_shard,
				   f->rows, f->bytes / 1024.0, f->times.copy - f->times.copy0, f->times.done - f->times.blocked,
				   f->times.checked - f->times.start, fence, f->times.waited - f->times.fence,
				   f->times.done - f->times.copy, t_applied - f->times.done, now_seconds() - t_delete,
				   now_seconds() - f->times.start);
		else
			report("info", "%s: %s: deleted the moved rows on shard \"%s\"", which, what, b->from_shard);
		free(fence);
		free(what);
		free(which);
	}
	return true;
}

/* ---- the finisher thread: a job's completed batches' source side, beside its next batch ---- */
struct Finisher
{
	pthread_t	thread;
	pthread_mutex_t lock;
	pthread_cond_t changed;
	Finish	   *pending;		/* being finished; NULL: idle */
	bool		quit;
	bool		running;		/* the thread started */
};

static void *
finisher_main(void *arg)
{
	Finisher   *fi = arg;
	Server		dir = {.name = "directory", .conninfo = (char *) options.conninfo};

	for (;;)
	{
		Finish	   *f;

		pthread_mutex_lock(&fi->lock);
		while (fi->pending == NULL && !fi->quit)
			pthread_cond_wait(&fi->changed, &fi->lock);
		f = fi->pending;
		pthread_mutex_unlock(&fi->lock);
		if (f == NULL)
			break;
		report_steps = f->batch.step_list;
		/* as a job retries a batch: a second a try, 30 tries */
		for (int attempt = 1;; attempt++)
		{
			Server	   *src = server_open(&dir) ? step_shard(&dir, f->batch.from_shard) : NULL;
			Server	   *tgt = src != NULL ? step_shard(&dir, f->batch.to_shard) : NULL;

			if (tgt != NULL && finish_source(&dir, src, tgt, f))
				break;
			if (stop_requested || failed || config_error)
				break;			/* left to the leases */
			if (attempt >= 30)
			{
				report("error", "giving up after %d failed attempts in a row", attempt);
				failed = true;
				break;
			}
			sleep(1);
		}
		report_steps = NULL;
		lease_unhold(&f->batch);
		batch_free(&f->batch);
		free_tables(f->tables, f->ntables);
		free(f);
		pthread_mutex_lock(&fi->lock);
		fi->pending = NULL;
		pthread_cond_broadcast(&fi->changed);
		pthread_mutex_unlock(&fi->lock);
	}
	step_shards_close();
	server_close(&dir);
	free(dir.schema);
	return NULL;
}

Finisher *
finisher_start(void)
{
	Finisher   *fi = xcalloc(1, sizeof(Finisher));

	pthread_mutex_init(&fi->lock, NULL);
	pthread_cond_init(&fi->changed, NULL);
	fi->running = pthread_create(&fi->thread, NULL, finisher_main, fi) == 0;
	if (!fi->running)
	{
		report("error", "could not start a job's finisher thread");
		failed = true;
	}
	return fi;
}

/* Hands a completed batch over (taking its batch and tables), once the one before is finished. */
void
finisher_give(Finisher *fi, const Finish *f)
{
	Finish	   *copy;

	if (!fi->running)
	{
		/* no thread to finish it (the run fails): the batch is left to its leases */
		Batch		b = f->batch;

		lease_unhold(&b);
		batch_free(&b);
		free_tables(f->tables, f->ntables);
		return;
	}
	copy = xmalloc(sizeof(Finish));
	*copy = *f;
	pthread_mutex_lock(&fi->lock);
	while (fi->pending != NULL)
		pthread_cond_wait(&fi->changed, &fi->lock);
	fi->pending = copy;
	pthread_cond_broadcast(&fi->changed);
	pthread_mutex_unlock(&fi->lock);
}

/* Waits until the batch handed over is finished (or left to its leases). */
void
finisher_wait(Finisher *fi)
{
	pthread_mutex_lock(&fi->lock);
	while (fi->pending != NULL)
		pthread_cond_wait(&fi->changed, &fi->lock);
	pthread_mutex_unlock(&fi->lock);
}

void
finisher_stop(Finisher *fi)
{
	if (fi->running)
	{
		finisher_wait(fi);
		pthread_mutex_lock(&fi->lock);
		fi->quit = true;
		pthread_cond_broadcast(&fi->changed);
		pthread_mutex_unlock(&fi->lock);
		pthread_join(fi->thread, NULL);
	}
	pthread_mutex_destroy(&fi->lock);
	pthread_cond_destroy(&fi->changed);
	free(fi);
}
