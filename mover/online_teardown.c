/*
 * The teardown of an online step's replication objects (online.c), by
 * their names, wherever they are: a finished step's, a step given back,
 * and what a mover that died left (replication_cleaner.c).  Each object
 * has one function that drops it; online_drop runs them in the order the
 * objects must go.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chash_move.h"

/*
 * Drops the decoding filter named so there, if chash there has them and
 * the mover may: a role that may not drop a filter could not have made
 * one (a blocking move by a non-superuser never does).
 */
static bool
filter_drop(Server *server, const char *name)
{
	const char *params[1] = {name};
	char	   *sql = format_text("SELECT %1$s.chash_decoding_filter_drop($1) "
								  " WHERE pg_catalog.has_table_privilege(pg_catalog.to_regclass('%1$s.chash_decoding_filter'), 'DELETE')"
								  " AND pg_catalog.has_function_privilege(pg_catalog.to_regprocedure('%1$s.chash_decoding_filter_drop(text)'), 'EXECUTE')",
								  server->schema);
	PGresult   *res = query(server, sql, 1, params);

	free(sql);
	PQclear(res);
	return res != NULL;
}

/*
 * Drops a subscription with its slots; where the target cannot reach the
 * source to drop them, without (the mover drops them, slots_drop).
 */
static bool
subscription_drop_named(Server *tgt, const char *name)
{
	static const char *const without_slots[3] = {"ALTER SUBSCRIPTION %s DISABLE",
	"ALTER SUBSCRIPTION %s SET (slot_name = NONE)", "DROP SUBSCRIPTION %s"};
	char	   *sql = format_text("DROP SUBSCRIPTION %s", name);
	PGresult   *res = server_exec(tgt, sql);
	bool		dropped = PQresultStatus(res) == PGRES_COMMAND_OK;

	free(sql);
	if (!dropped)
		report_result_owned("warning", format_text("could not drop subscription \"%s\" on shard \"%s\" with its slots", name, tgt->name),
					  res, tgt->conn);
	PQclear(res);
	for (int i = 0; !dropped && i < 3; i++)
	{
		bool		ok;

		sql = format_text(without_slots[i], name);
		ok = command(tgt, sql);
		free(sql);
		if (!ok)
			return false;
	}
	return true;
}

/* The step's subscription on the target, if there is one; its oid in *suboid, which names its table copies' slots. */
static bool
subscription_drop(Server *tgt, const char *name, char **suboid)
{
	const char *params[1] = {name};
	PGresult   *res = query(tgt, "SELECT oid FROM pg_catalog.pg_subscription WHERE subname = $1 AND subdbid = "
							"(SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database())",
							1, params);

	if (res == NULL)
		return false;
	if (PQntuples(res) == 1)
		*suboid = format_text("%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return *suboid == NULL || subscription_drop_named(tgt, name);
}

/*
 * One row of slots_drop's list: a slot no walsender uses is dropped; one
 * still in use is left for the next round, its walsender ended after
 * fifty rounds (five seconds).
 */
static bool
slot_release(Server *src, const PGresult *slots, int i, int round)
{
	bool		active = !PQgetisnull(slots, i, 1);
	const char *p[1] = {PQgetvalue(slots, i, active ? 1 : 0)};
	PGresult   *r;
	bool		ok;

	if (!active)
		r = query(src, "SELECT pg_catalog.pg_drop_replication_slot($1)", 1, p);
	else if (round >= 50)
		r = query(src, "SELECT pg_catalog.pg_terminate_backend($1::int)", 1, p);
	else
		return true;
	ok = r != NULL;
	PQclear(r);
	return ok;
}

/* The step's slot (and its subscription's table copies' slots) on the source, once no walsender uses them. */
static bool
slots_drop(Server *src, const char *name, const char *suboid)
{
	char	   *sync = suboid ? format_text("pg\\_%s\\_sync\\_%%", suboid) : format_text("%s", "-");
	const char *params[2] = {name, sync};
	bool		gone = false;
	bool		ok = true;

	for (int round = 0; ok && !gone; round++)
	{
		PGresult   *res = query(src, "SELECT slot_name, active_pid FROM pg_catalog.pg_replication_slots "
								"WHERE (slot_name = $1 OR slot_name LIKE $2) AND database = pg_catalog.current_database()",
								2, params);

		ok = res != NULL;
		gone = ok && PQntuples(res) == 0;
		for (int i = 0; ok && !gone && i < PQntuples(res); i++)
			ok = slot_release(src, res, i, round);
		PQclear(res);
		if (ok && !gone)
			usleep(100 * 1000);
	}
	free(sync);
	return gone;
}

/*
 * The source's decoding filter, then the publication: the publication is
 * made first and dropped last, so a rerun finds a dead run's filter by it
 * (and a mover that never made one, not a superuser, never reads the
 * filters).
 */
static bool
publication_drop(Server *src, const char *name)
{
	const char *params[1] = {name};
	PGresult   *res = query(src, "SELECT FROM pg_catalog.pg_publication WHERE pubname = $1", 1, params);
	bool		there = res != NULL && PQntuples(res) > 0;
	char	   *sql;
	bool		ok;

	if (res == NULL)
		return false;
	PQclear(res);
	if (!there)
		return true;
	if (!filter_drop(src, name))
		return false;
	sql = format_text("DROP PUBLICATION IF EXISTS %s", name);
	ok = command(src, sql);
	free(sql);
	return ok;
}

/*
 * Drops the step's replication objects, by their names, wherever they
 * are: the subscription on the target (which drops its slots on the
 * source), the target's tally filter (its slot was a session's), then
 * what is left on the source.  Before any row of the step is deleted on
 * the source, since the publication would send the deletion on.
 */
bool
online_drop(Server *src, Server *tgt, int step)
{
	char	   *name = online_name(step);
	char	   *suboid = NULL;
	bool		ok = subscription_drop(tgt, name, &suboid)
		&& filter_drop(tgt, name)
		&& slots_drop(src, name, suboid)
		&& publication_drop(src, name);

	free(suboid);
	free(name);
	return ok;
}

/*
 * online_drop for each step of a batch that has replication objects left
 * (an online try of it that died): two lookups for the whole batch, so a
 * blocking batch of a thousand steps does not ask for each one.
 */
bool
online_drop_batch(Server *src, Server *tgt, const Batch *batch)
{
	char	   *names;
	char	   *p;
	const char *params[1];
	PGresult   *rt,
			   *rs;
	bool		ok = true;

	if (batch->nsteps == 1)
		return online_drop(src, tgt, batch->steps[0]);
	names = p = xmalloc((size_t) batch->nsteps * 64 + 3);
	p += sprintf(p, "{");
	for (int i = 0; i < batch->nsteps; i++)
	{
		char	   *name = online_name(batch->steps[i]);

		p += sprintf(p, "%s%s", i ? "," : "", name);
		free(name);
	}
	sprintf(p, "}");
	params[0] = names;
	rt = query(tgt, "SELECT subname FROM pg_catalog.pg_subscription WHERE subname = ANY ($1::pg_catalog.name[])",
			   1, params);
	rs = rt ? query(src, "SELECT slot_name FROM pg_catalog.pg_replication_slots WHERE slot_name = ANY ($1::pg_catalog.name[]) "
					"UNION SELECT pubname FROM pg_catalog.pg_publication WHERE pubname = ANY ($1::pg_catalog.name[])",
					1, params) : NULL;
	free(names);
	if (rt == NULL || rs == NULL)
	{
		PQclear(rt);
		return false;
	}
	for (int i = 0; ok && i < batch->nsteps; i++)
	{
		char	   *name = online_name(batch->steps[i]);
		bool		left = false;

		for (int j = 0; j < PQntuples(rt); j++)
			left = left || strcmp(PQgetvalue(rt, j, 0), name) == 0;
		for (int j = 0; j < PQntuples(rs); j++)
			left = left || strcmp(PQgetvalue(rs, j, 0), name) == 0;
		free(name);
		if (left)
			ok = online_drop(src, tgt, batch->steps[i]);
	}
	PQclear(rt);
	PQclear(rs);
	return ok;
}
