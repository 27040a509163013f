/*
 * An online step's stream (online.c): waits until its subscription on the
 * target has started and applies the source's changes with a lag short
 * enough to fence, and, at the fence, until it has applied every write
 * the source took; the subscription's failures, with the target's error.
 * The tallies are read on the way (online_tally.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "online_tally.h"

/*
 * The target's error for a subscription whose apply failed, from the
 * server's log when it keeps one the mover may read (logging_collector;
 * the mover is a superuser there): the last ERROR, with its DETAIL, whose
 * CONTEXT names the subscription's replication origin.  NULL when not
 * found.
 */
static char *
apply_error(Server *tgt, const char *suboid)
{
	char	   *origin = format_text("replication origin \"pg_%s\"", suboid);
	char	   *error = NULL;

	/* the worker logs before it counts the error; the log collector may lag a little */
	for (int tries = 0; tries < 20 && error == NULL; tries++)
	{
		PGresult   *res = server_exec(tgt, "SELECT pg_catalog.pg_read_file(f, GREATEST(0, (pg_catalog.pg_stat_file(f)).size - 1048576), 1048576) "
										 "  FROM pg_catalog.pg_current_logfile() f WHERE f IS NOT NULL");
		const char *log;
		const char *at;
		const char *e;

		if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
		{
			PQclear(res);
			break;				/* no log file, or not readable */
		}
		log = PQgetvalue(res, 0, 0);
		at = NULL;
		for (const char *p = strstr(log, origin); p != NULL; p = strstr(p + 1, origin))
			at = p;
		for (e = at; e != NULL && e > log && strncmp(e, "ERROR:", 6) != 0; e--)
			;
		if (at != NULL && e != NULL && e > log)
		{
			const char *msg = e + 6;
			const char *d = strstr(msg, "DETAIL:");
			size_t		n;

			msg += strspn(msg, " \t");
			n = strcspn(msg, "\n");
			if (d != NULL && d < at)
			{
				d += 7 + strspn(d + 7, " \t");
				error = format_text("%.*s (%.*s)", (int) n, msg, (int) strcspn(d, "\n"), d);
			}
			else
				error = format_text("%.*s", (int) n, msg);
		}
		PQclear(res);
		if (error == NULL)
			usleep(50 * 1000);
	}
	free(origin);
	return error;
}

/*
 * The subscription's tables ready (streaming): 1; not yet: 0; gone or not
 * asked: -1; its apply failed: ONLINE_CANNOT_APPLY - 1, said here with
 * the target's error.  Its subscription was made with disable_on_error,
 * so a change the target cannot apply fails once and is not retried.
 */
#define APPLY_FAILED (ONLINE_CANNOT_APPLY - 1)
static int
subscription_state(Server *tgt, const char *name, int ntables)
{
	const char *params[1] = {name};
	PGresult   *res = query(tgt,
							"SELECT count(r.srrelid), count(r.srrelid) FILTER (WHERE r.srsubstate = 'r'), "
							"       COALESCE((SELECT t.apply_error_count + t.sync_error_count "
							"                   FROM pg_catalog.pg_stat_subscription_stats t WHERE t.subid = s.oid), 0) > 0 "
							"       OR NOT s.subenabled, s.oid "
							"  FROM pg_catalog.pg_subscription s "
							"  LEFT JOIN pg_catalog.pg_subscription_rel r ON r.srsubid = s.oid "
							" WHERE s.subname = $1 AND s.subdbid = (SELECT oid FROM pg_catalog.pg_database "
							"                                        WHERE datname = pg_catalog.current_database()) "
							" GROUP BY s.oid", 1, params);
	int			state;

	if (res == NULL)
		return -1;
	if (PQntuples(res) != 1)
	{
		PQclear(res);
		report("error", "subscription \"%s\" disappeared from shard \"%s\"", name, tgt->name);
		return -1;
	}
	if (PQgetvalue(res, 0, 2)[0] == 't')
	{
		char	   *error = apply_error(tgt, PQgetvalue(res, 0, 3));

		if (error != NULL)
			report("error", "shard \"%s\" cannot apply the step's changes: %s", tgt->name, error);
		else
			report("error", "shard \"%s\" cannot apply the step's changes (subscription \"%s\" failed)", tgt->name, name);
		report("detail", "The step is given back: its rows stay on the source, which owns them; nothing of the step is left on shard \"%s\".",
			   tgt->name);
		if (error != NULL)
			report("hint", "Make the table the same on both shards (its columns, its unique indexes) and run chash_move again.");
		else
			report("hint", "The server log of shard \"%s\" says why; make the table the same on both shards and run chash_move again.", tgt->name);
		free(error);
		state = APPLY_FAILED;
	}
	else
		state = atoi(PQgetvalue(res, 0, 0)) == ntables && atoi(PQgetvalue(res, 0, 1)) == ntables ? 1 : 0;
	PQclear(res);
	return state;
}

/*
 * Waits until the slot's confirmed flush position has reached lsn: 1; an
 * error 0; the target's apply failed ONLINE_CANNOT_APPLY (asked every
 * tenth of a second: the slot would never get there).
 */
static int
wait_slot(Server *src, Server *tgt, const char *name, const char *lsn, int ntables)
{
	const char *params[2] = {name, lsn};
	double		start = now_seconds();
	double		next_say = start + 5;
	double		next_ask = start + 0.1;

	for (;;)
	{
		PGresult   *res = query(src, "SELECT confirmed_flush_lsn >= $2::pg_lsn, wal_status = 'lost' "
								"FROM pg_catalog.pg_replication_slots WHERE slot_name = $1", 2, params);
		bool		reached;

		if (res == NULL)
			return 0;
		if (PQntuples(res) != 1 || PQgetvalue(res, 0, 1)[0] == 't')
		{
			if (PQntuples(res) != 1)
				report("error", "replication slot \"%s\" disappeared from shard \"%s\"", name, src->name);
			else
			{
				report("error", "replication slot \"%s\" on shard \"%s\" lost the WAL it needs", name, src->name);
				report("hint", "The step's catch-up outgrew max_slot_wal_keep_size there; raise it, or move the step without --online.");
			}
			PQclear(res);
			return 0;
		}
		reached = PQgetvalue(res, 0, 0)[0] == 't';
		PQclear(res);
		if (reached)
			return 1;
		if (stop_requested)
			return 0;
		if (now_seconds() >= next_ask)
		{
			int			state = subscription_state(tgt, name, ntables);

			if (state < 0)
				return state == APPLY_FAILED ? ONLINE_CANNOT_APPLY : 0;
			next_ask = now_seconds() + 0.1;
		}
		if (now_seconds() >= next_say)
		{
			report("info", "waiting %.0f s for the subscription \"%s\" to apply shard \"%s\"'s changes up to %s",
				   now_seconds() - start, name, src->name, lsn);
			next_say = now_seconds() + 5;
		}
		/* a short wait is the usual one: it is writes refused */
		usleep(now_seconds() - start < 0.5 ? 2000 : 20000);
	}
}

/* Whether the step's subscription is there and streaming (a takeover resumes it). */
bool
online_streaming(Server *tgt, int step, int ntables)
{
	char	   *name = online_name(step);
	const char *params[1] = {name};
	PGresult   *res = query(tgt, "SELECT FROM pg_catalog.pg_subscription WHERE subname = $1", 1, params);
	bool		there = res != NULL && PQntuples(res) == 1;

	PQclear(res);
	there = there && subscription_state(tgt, name, ntables) == 1;
	free(name);
	return there;
}

/*
 * Waits until the subscription streams and applies the source's changes
 * with a lag short enough to fence: the source's WAL position is reached
 * again within a tenth of a second.  The tally is read on the way, so
 * that little of it is left for the write block.  1, 0 (an error), or
 * ONLINE_CANNOT_APPLY.
 */
int
online_wait_caught_up(Server *src, Server *tgt, int step, int ntables, OnlineCopy *copy)
{
	char	   *name = online_name(step);
	int			ok = 0;
	double		begun = now_seconds();
	double		next_say = begun + 10;

	for (;;)
	{
		int			state = subscription_state(tgt, name, ntables);
		PGresult   *res;
		double		start;
		double		lag;

		if (state < 0)
		{
			ok = state == APPLY_FAILED ? ONLINE_CANNOT_APPLY : 0;
			break;
		}
		if (stop_requested)
			break;
		if (state == 0)
		{
			if (now_seconds() >= next_say)
			{
				report("info", "step %d: waiting %.0f s for the subscription \"%s\" on shard \"%s\" to start",
					   step, now_seconds() - begun, name, tgt->name);
				next_say = now_seconds() + 10;
			}
			usleep(20 * 1000);
			continue;
		}
		res = query(src, "SELECT pg_catalog.pg_current_wal_flush_lsn()", 0, NULL);
		if (res == NULL)
			break;
		start = now_seconds();
		ok = wait_slot(src, tgt, name, PQgetvalue(res, 0, 0), ntables);
		PQclear(res);
		lag = now_seconds() - start;
		/* read after the lag is taken: the tallies' reading is no lag of the target's */
		if (ok == 1 && copy != NULL)
			tally_read(copy);
		if (ok != 1 || lag < 0.1)
			break;
		ok = 0;
		if (now_seconds() >= next_say)
		{
			report("info", "step %d: the subscription \"%s\" on shard \"%s\" lags behind shard \"%s\"; the step is fenced once it keeps up",
				   step, name, tgt->name, src->name);
			next_say = now_seconds() + 10;
		}
	}
	free(name);
	return ok;
}

/*
 * After chash_shard_wait_fence on the source: no write of the step's rows
 * can commit there any more.  A logical message committed now lies after
 * every such write in the source's WAL; once the target confirms it, it
 * has applied them all.  1, 0 or ONLINE_CANNOT_APPLY.
 */
int
online_wait_applied(Server *src, Server *tgt, int step, int ntables)
{
	char	   *name = online_name(step);
	PGresult   *res = query(src, "SELECT pg_catalog.pg_logical_emit_message(true, 'chash_move', 'fenced')", 0, NULL);
	int			ok = 0;

	if (res != NULL)
	{
		ok = wait_slot(src, tgt, name, PQgetvalue(res, 0, 0), ntables);
		PQclear(res);
	}
	free(name);
	return ok;
}
