/*
 * The lag gate (chash_move --max-lag, chash.rebalance_max_lag): a batch is
 * not fenced while its source's or its target's replica of the directory
 * lags behind the directory database by more than the bound.  The fence
 * waits for both replicas to apply it, with the batch's writes refused, so
 * a lagging shard would stretch the write block by its whole lag.
 *
 * The lag is the directory's WAL that the shard's subscription has not
 * confirmed yet, in bytes: pg_current_wal_lsn() minus the
 * confirmed_flush_lsn of the subscription's slot on the directory server.
 * pg_replication_slots answers whether the subscription streams, is
 * disabled or its apply worker waits on a lock, where pg_stat_replication
 * has no row, and its time lags are NULL while the shard is idle.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chash_move.h"

/*
 * The slot the shard's subscription to the directory database uses, read
 * on the shard; NULL when it has none (the directory database is itself
 * the shard) or the query failed (*ok false, said).
 */
static char *
shard_slot(Server *shard, bool *ok)
{
	const char *params[1] = {migration.directory};
	char	   *sql = format_text("SELECT s.subslotname FROM %s.chash_shard_member m "
								  "  JOIN pg_catalog.pg_subscription s ON s.subname = m.subscription "
								  "   AND s.subdbid = (SELECT d.oid FROM pg_catalog.pg_database d "
								  "                    WHERE d.datname = pg_catalog.current_database()) "
								  " WHERE m.directory = $1",
								  shard->schema);
	PGresult   *res = query(shard, sql, 1, params);
	char	   *slot = NULL;

	free(sql);
	*ok = res != NULL;
	if (res != NULL && PQntuples(res) == 1 && !PQgetisnull(res, 0, 0))
		slot = format_text("%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return slot;
}

/*
 * The shard's lag in bytes, read on the directory: 0 without a
 * subscription, -1 when its slot is not on the directory server (said
 * once: no gate for it), -2 when a query failed.
 */
static long long
shard_lag(Server *dir, Server *shard)
{
	bool		ok;
	char	   *slot = shard_slot(shard, &ok);
	const char *params[1];
	PGresult   *res;
	long long	lag;

	if (slot == NULL)
		return ok ? 0 : -2;
	params[0] = slot;
	res = query(dir, "SELECT pg_catalog.pg_wal_lsn_diff(pg_catalog.pg_current_wal_lsn(), s.confirmed_flush_lsn)::pg_catalog.int8 "
				"  FROM pg_catalog.pg_replication_slots s "
				" WHERE s.slot_name = $1 AND s.database = pg_catalog.current_database()", 1, params);
	if (res == NULL)
		lag = -2;
	else if (PQntuples(res) != 1 || PQgetisnull(res, 0, 0))
	{
		char	   *key = format_text("lag_gate\n%s", shard->name);

		if (first_time(key))
		{
			report("warning", "the lag of shard \"%s\" behind the directory database is not known: its slot \"%s\" is not there",
				   shard->name, slot);
			report("detail", "Its batches are fenced without waiting for its replica to keep up.");
		}
		free(key);
		lag = -1;
	}
	else
		lag = atoll(PQgetvalue(res, 0, 0));
	PQclear(res);
	free(slot);
	return lag;
}

/*
 * Whether a batch of the pair may be fenced with its claim (run.c): both
 * shards within the bound now (or no gate, or a lag not known: as
 * lag_gate).  A shard not reachable says no, and the batch is claimed
 * first and gated as usual.
 */
bool
lag_within(Server *dir, const char *from, const char *to)
{
	long long	bound = __atomic_load_n(&options.max_lag, __ATOMIC_RELAXED);
	const char *names[2] = {from, to};

	if (bound <= 0)
		return true;
	for (int i = 0; i < 2; i++)
	{
		Server	   *shard = step_shard(dir, names[i]);
		long long	lag = shard != NULL ? shard_lag(dir, shard) : -2;

		if (lag == -2 || lag > bound)
			return false;
	}
	return true;
}

/*
 * Before the batch's fence: waits while the source or the target lags by
 * more than options.max_lag bytes (0: no gate), saying so after a second
 * and then every 10 s.  True: fence now.  False: give the batch back (a
 * stop, or a query failed).
 */
bool
lag_gate(Server *dir, Server *src, Server *tgt, const Batch *batch, lease_progress progress)
{
	double		begun = now_seconds();
	double		next_say = begun + 1;
	bool		said = false;
	long long	bound = __atomic_load_n(&options.max_lag, __ATOMIC_RELAXED);

	/* only what is about to be fenced: a takeover of a fenced batch goes on */
	if (bound <= 0 || (progress != LEASE_CLAIMED && progress != LEASE_SUBSCRIBED))
		return true;
	for (;;)
	{
		Server	   *behind = NULL;
		long long	worst = 0;
		Server	   *sides[2] = {src, tgt};

		for (int i = 0; i < 2; i++)
		{
			long long	lag = shard_lag(dir, sides[i]);

			if (lag == -2)
				return false;
			if (lag > worst)
			{
				worst = lag;
				behind = sides[i];
			}
		}
		bound = __atomic_load_n(&options.max_lag, __ATOMIC_RELAXED);
		if (behind == NULL || bound <= 0 || worst <= bound)
		{
			if (said)
			{
				char	   *which = batch_describe(batch);

				report("info", "%s: the shards keep up with the directory again (lag %lld kB); fencing",
					   which, worst / 1024);
				free(which);
			}
			return true;
		}
		if (stop_requested || stop_claiming || failed || config_error)
			return false;
		if (now_seconds() >= next_say)
		{
			char	   *which = batch_describe(batch);

			report("info", "%s: waiting %.0f s for shard \"%s\" to apply the directory: its lag is %lld kB, the bound %lld kB; nothing is fenced until then",
				   which, now_seconds() - begun, behind->name, worst / 1024, bound / 1024);
			free(which);
			said = true;
			next_say = now_seconds() + 10;
		}
		usleep(200 * 1000);
	}
}
