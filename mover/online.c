/*
 * Online moves (--online, README.md "Online moves"): PostgreSQL's logical
 * replication copies a step's rows and streams their changes while the
 * source keeps taking writes, so writes wait only for the last catch-up.
 * A publication on the source with a row filter for the step's rows, a
 * logical slot created there by the mover, and a subscription on the
 * target; all three are named chash_move_<database>_<migration>_<step>
 * (<database> a short hash of the directory database's system identifier
 * and oid: migration numbers repeat across directory databases, slot names
 * are the server's), so a rerun finds and drops what a mover that died
 * created, and never another directory database's objects.
 *
 * Row filters may call only built-in immutable functions: a tenant step
 * filters on the tenant column, a slot step of a 'pg_hash' directory on
 * the hash-partition arithmetic PostgreSQL's hash partitioning does.  The
 * other slot methods need chash's own functions, so their steps are
 * copied with writes blocked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chash_move.h"

/*
 * PostgreSQL's hash partitioning (partbounds.c) hashes a key with the
 * type's extended hash and HASH_PARTITION_SEED, then hash_combine64(0, h)
 * = h + 0x49a0f4dd15e5a8e3 (mod 2^64), taken mod the modulus as unsigned.
 * In SQL the hash is a signed bigint: adding 2^64 keeps the sum positive.
 */
#define PARTITION_SEED "8816678312871386365"	/* 0x7A5B22367996DCFD */
#define COMBINE_PLUS_2_64 "23752253665144318179"	/* 0x49a0f4dd15e5a8e3 + 2^64 */
#define TWO_64 "18446744073709551616"

char *
online_name(int step)
{
	return format_text("chash_move_%s_%lld_%d", migration.database_id, migration.id, step);
}

/* Says once per key why steps fall back to the blocking copy; false. */
static bool
cannot(char *key, char *message, const char *hint)
{
	char	   *k = format_text("online\n%s", key);

	if (first_time(k))
	{
		report("warning", "%s", message);
		report("detail", "Their writes are refused while they are copied, as without --online.");
		report("hint", "%s", hint);
	}
	free(k);
	free(key);
	free(message);
	return false;
}

/*
 * Whether the target's server can log in to the source as its
 * subscription will (the source's chash_shard.server, from the target's
 * server, with that server's .pgpass, as a replication connection): a
 * subscription that connects, without a slot, rolled back.  NULL when it
 * can, else the server's error.
 */
static char *
login_error(Server *src, Server *tgt)
{
	static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;
	static int	probes;
	char	   *conninfo = escape_literal(tgt->conn, src->conninfo);
	char	   *sql;
	PGresult   *res;
	char	   *error = NULL;
	int			n;

	pthread_mutex_lock(&probe_lock);
	n = ++probes;
	pthread_mutex_unlock(&probe_lock);
	if (!command(tgt, "BEGIN; SET LOCAL client_min_messages = error"))
	{
		free(conninfo);
		return format_text("%s", "the probe failed");
	}
	sql = format_text("CREATE SUBSCRIPTION chash_move_probe_%d_%d CONNECTION %s PUBLICATION chash_move_probe "
					  "WITH (connect = true, enabled = false, create_slot = false, slot_name = NONE, copy_data = false)",
					  (int) getpid(), n, conninfo);
	res = server_exec(tgt, sql);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
	{
		const char *m = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

		error = format_text("%s", m ? m : PQerrorMessage(tgt->conn));
		error[strcspn(error, "\n")] = '\0';
	}
	PQclear(res);
	PQclear(server_exec(tgt, "ROLLBACK"));
	free(sql);
	free(conninfo);
	return error;
}

/* The kind of hash a 'pg_hash' slot filter applies to the column, or NULL. */
static const char *
hash_of_type(const char *type)
{
	if (strcmp(type, "text") == 0 || strncmp(type, "character varying", 17) == 0)
		return "hashtextextended(%s, " PARTITION_SEED ")";
	if (strcmp(type, "bigint") == 0 || strcmp(type, "integer") == 0 || strcmp(type, "smallint") == 0)
		return "hashint8extended((%s)::bigint, " PARTITION_SEED ")";
	if (strcmp(type, "uuid") == 0)
		return "uuid_hash_extended(%s, " PARTITION_SEED ")";
	return NULL;
}

/* The array type pins are compared as, for a column of that type. */
static const char *
array_of_type(const char *type)
{
	if (strcmp(type, "uuid") == 0)
		return "uuid[]";
	if (strcmp(type, "bigint") == 0 || strcmp(type, "integer") == 0 || strcmp(type, "smallint") == 0)
		return "bigint[]";
	return "text[]";
}

/*
 * Whether the step can move online, checked on its shards; when not, the
 * reason is said once.  The row filter's column must be in the source's
 * replica identity, or PostgreSQL would refuse every UPDATE and DELETE of
 * the table there while the publication exists.
 */
bool
online_usable(Server *src, Server *tgt, TableInfo *tables, int ntables, const StepTarget *target)
{
	PGresult   *res;
	bool		ok;

	if (target->slot >= 0 && strcmp(migration.slot_method, "pg_hash") != 0)
		return cannot(format_text("%s", migration.slot_method),
					  format_text("slot steps of slot method \"%s\" are moved with writes blocked", migration.slot_method),
					  "Only tenant steps and the slot steps of 'pg_hash' directories can be moved online: a row filter cannot call chash's hash functions.");
	res = query(src, "SELECT pg_catalog.current_setting('wal_level') = 'logical'", 0, NULL);
	if (res == NULL)
		return false;
	ok = PQgetvalue(res, 0, 0)[0] == 't';
	PQclear(res);
	if (!ok)
		return cannot(format_text("wal_level\n%s", src->name),
					  format_text("shard \"%s\" does not have wal_level = logical: steps from it are moved with writes blocked", src->name),
					  "Set wal_level = logical there and restart it.");
	res = query(tgt, "SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user", 0, NULL);
	if (res == NULL)
		return false;
	ok = PQntuples(res) == 1 && PQgetvalue(res, 0, 0)[0] == 't';
	PQclear(res);
	if (!ok)
		return cannot(format_text("superuser\n%s", tgt->name),
					  format_text("the mover's role on shard \"%s\" is not a superuser, which CREATE SUBSCRIPTION needs: steps to it are moved with writes blocked", tgt->name),
					  "Connect to it as a superuser in its chash_shard.server.");
	{
		char	   *error = login_error(src, tgt);

		if (error != NULL)
			return cannot(format_text("login\n%s\n%s", src->name, tgt->name),
						  format_text("shard \"%s\" cannot log in to shard \"%s\" for the subscription (%s): steps from \"%s\" to \"%s\" are moved with writes blocked",
									  tgt->name, src->name, error, src->name, tgt->name),
						  format_text("The subscription connects from the server of shard \"%s\" with the chash_shard.server of shard \"%s\", as a replication connection. "
									  "Put that role's password in the .pgpass file of the operating-system user that runs the server of shard \"%s\" (usually ~postgres/.pgpass, mode 0600), "
									  "give the role REPLICATION, or allow the connection in the pg_hba.conf of shard \"%s\".",
									  tgt->name, src->name, tgt->name, src->name));
		free(error);
	}
	for (int i = 0; i < ntables; i++)
	{
		const char *params[2] = {tables[i].table_name, tables[i].tenant_column};

		res = query(src,
					"SELECT c.relreplident = 'f' OR EXISTS ("
					"         SELECT FROM pg_catalog.pg_index i"
					"          WHERE i.indrelid = c.oid AND a.attnum = ANY (i.indkey)"
					"            AND ((c.relreplident = 'd' AND i.indisprimary)"
					"                 OR (c.relreplident = 'i' AND i.indisreplident)))"
					"  FROM pg_catalog.pg_class c"
					"  JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attname = $2"
					" WHERE c.oid = pg_catalog.to_regclass($1)", 2, params);
		if (res == NULL)
			return false;
		ok = PQntuples(res) == 1 && PQgetvalue(res, 0, 0)[0] == 't';
		PQclear(res);
		if (!ok)
			return cannot(format_text("identity\n%s\n%s", src->name, tables[i].table_name),
						  format_text("tenant column \"%s\" of table \"%s\" is not in its replica identity on shard \"%s\": steps from there are moved with writes blocked",
									  tables[i].tenant_column, tables[i].table_name, src->name),
						  "A publication's row filter needs the column in the replica identity; give the table a primary key that includes it, or ALTER TABLE ... REPLICA IDENTITY FULL.");
	}
	return true;
}

/*
 * The row filter of a table for the step: the tenant, or the slot's
 * tenants without the pinned ones (a pinned tenant routes by its
 * override; its rows stay).
 */
static char *
row_filter(Server *dir, Server *src, const TableInfo *table, const StepTarget *target)
{
	const char *params[2] = {table->table_name, table->tenant_column};
	char		slot[16];
	char	   *column;
	char	   *type;
	const char *hash;
	char	   *expr;
	char	   *filter;
	PGresult   *res;

	if (target->slot < 0)
		return step_predicate(src, table, target);
	res = query(src, "SELECT pg_catalog.format_type(a.atttypid, NULL) FROM pg_catalog.pg_attribute a "
				"WHERE a.attrelid = pg_catalog.to_regclass($1) AND a.attname = $2", 2, params);
	if (res == NULL)
		return NULL;
	if (PQntuples(res) != 1 || (hash = hash_of_type(PQgetvalue(res, 0, 0))) == NULL)
	{
		report("error", "tenant column \"%s\" of table \"%s\" has a type that slot method \"pg_hash\" does not hash",
			   table->tenant_column, table->table_name);
		PQclear(res);
		return NULL;
	}
	type = format_text("%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	column = escape_identifier(src->conn, table->tenant_column);
	expr = format_text(hash, column);
	filter = format_text("((%s)::numeric + " COMBINE_PLUS_2_64 ") %% " TWO_64 " %% %d = %d",
						 expr, migration.slot_count, target->slot);
	free(expr);

	/* the slot's pins, from the directory database (the fence will read the same) */
	snprintf(slot, sizeof(slot), "%d", target->slot);
	params[0] = migration.directory;
	params[1] = slot;
	res = query(dir, format_text("SELECT pg_catalog.string_agg(pg_catalog.quote_literal(o.tenant), ', ' ORDER BY o.tenant) "
								 "  FROM %1$s.chash_override o "
								 " WHERE o.directory = $1 AND %1$s.chash_slot($1, o.tenant) = $2::int",
								 dir->schema), 2, params);
	if (res == NULL)
	{
		free(filter);
		filter = NULL;
	}
	else if (!PQgetisnull(res, 0, 0))
	{
		char	   *with = format_text("%s AND NOT (%s = ANY (ARRAY[%s]::%s))", filter, column,
									   PQgetvalue(res, 0, 0), array_of_type(type));

		free(filter);
		filter = with;
	}
	PQclear(res);
	free(column);
	free(type);
	return filter;
}

/*
 * The publication and the slot on the source, then the subscription on
 * the target (which copies the rows, then streams).  The slot is created
 * by the mover, not by CREATE SUBSCRIPTION, which would wait for itself
 * when both shards are databases of one server.  The caller has deleted
 * the step's leftover rows on the target.
 */
bool
online_subscribe(Server *dir, Server *src, Server *tgt, TableInfo *tables, int ntables,
				 const StepTarget *target, int step)
{
	char	   *name = online_name(step);
	char	   *list = format_text("%s", "");
	char	   *sql;
	char	   *conninfo;
	bool		ok = false;
	PGresult   *res;
	const char *params[1] = {name};

	for (int i = 0; i < ntables; i++)
	{
		char	   *filter = row_filter(dir, src, &tables[i], target);
		char	   *longer;

		if (filter == NULL)
			goto out;
		longer = format_text("%s%s%s WHERE (%s)", list, i ? ", " : "", tables[i].table_name, filter);
		free(list);
		free(filter);
		list = longer;
	}
	/* recorded first, so a cleaner finds them whatever happens next (replication_cleaner.c) */
	if (!replication_objects_record(dir, step, src->name, tgt->name, name))
		goto out;
	sql = format_text("CREATE PUBLICATION %s FOR TABLE %s WITH (publish = 'insert, update, delete')", name, list);
	ok = command(src, sql);
	free(sql);
	if (!ok)
		goto out;
	res = query(src, "SELECT pg_catalog.pg_create_logical_replication_slot($1, 'pgoutput')", 1, params);
	if (res == NULL)
	{
		ok = false;
		goto out;
	}
	PQclear(res);
	/* synchronous_commit = local: what the target reports as flushed is what it applied */
	conninfo = escape_literal(tgt->conn, src->conninfo);
	sql = format_text("CREATE SUBSCRIPTION %1$s CONNECTION %2$s PUBLICATION %1$s "
					  "WITH (create_slot = false, slot_name = %1$s, copy_data = true, synchronous_commit = 'local')",
					  name, conninfo);
	ok = command(tgt, sql);
	free(sql);
	free(conninfo);
out:
	free(list);
	free(name);
	return ok;
}

/* Waits until the slot's confirmed flush position has reached lsn. */
static bool
wait_slot(Server *src, const char *name, const char *lsn)
{
	const char *params[2] = {name, lsn};
	double		start = now_seconds();
	double		next_say = start + 5;

	for (;;)
	{
		PGresult   *res = query(src, "SELECT confirmed_flush_lsn >= $2::pg_lsn, wal_status = 'lost' "
								"FROM pg_catalog.pg_replication_slots WHERE slot_name = $1", 2, params);
		bool		reached;

		if (res == NULL)
			return false;
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
			return false;
		}
		reached = PQgetvalue(res, 0, 0)[0] == 't';
		PQclear(res);
		if (reached)
			return true;
		if (stop_requested)
			return false;
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

/* The subscription's tables ready (copied, streaming): 1; still copying: 0; failed or gone: -1. */
static int
subscription_state(Server *tgt, const char *name, int ntables)
{
	const char *params[1] = {name};
	PGresult   *res = query(tgt,
							"SELECT count(r.srrelid), count(r.srrelid) FILTER (WHERE r.srsubstate = 'r'), "
							"       COALESCE((SELECT t.apply_error_count + t.sync_error_count "
							"                   FROM pg_catalog.pg_stat_subscription_stats t WHERE t.subid = s.oid), 0) "
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
	if (atoll(PQgetvalue(res, 0, 2)) > 0)
	{
		report("error", "subscription \"%s\" on shard \"%s\" failed to apply the step's rows", name, tgt->name);
		report("hint", "The server log of shard \"%s\" says why.", tgt->name);
		state = -1;
	}
	else
		state = atoi(PQgetvalue(res, 0, 0)) == ntables && atoi(PQgetvalue(res, 0, 1)) == ntables ? 1 : 0;
	PQclear(res);
	return state;
}

/* Whether the step's subscription is there, copied and streaming (a takeover resumes it). */
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
 * Waits until the subscription has copied every table and applies the
 * source's changes with a lag short enough to fence: the source's WAL
 * position is reached again within a tenth of a second.
 */
bool
online_wait_caught_up(Server *src, Server *tgt, int step, int ntables)
{
	char	   *name = online_name(step);
	bool		ok = false;
	double		begun = now_seconds();
	double		next_say = begun + 10;

	for (;;)
	{
		int			state = subscription_state(tgt, name, ntables);
		PGresult   *res;
		double		start;

		if (state < 0 || stop_requested)
			break;
		if (state == 0)
		{
			if (now_seconds() >= next_say)
			{
				report("info", "step %d: waiting %.0f s for the subscription \"%s\" on shard \"%s\" to copy the step's rows",
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
		ok = wait_slot(src, name, PQgetvalue(res, 0, 0));
		PQclear(res);
		if (!ok || now_seconds() - start < 0.1)
			break;
		ok = false;
		if (now_seconds() >= next_say)
		{
			report("info", "step %d: the subscription \"%s\" on shard \"%s\" has copied the rows but lags behind shard \"%s\"; the step is fenced once it keeps up",
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
 * has applied them all.
 */
bool
online_wait_applied(Server *src, int step)
{
	char	   *name = online_name(step);
	PGresult   *res = query(src, "SELECT pg_catalog.pg_logical_emit_message(true, 'chash_move', 'fenced')", 0, NULL);
	bool		ok = false;

	if (res != NULL)
	{
		ok = wait_slot(src, name, PQgetvalue(res, 0, 0));
		PQclear(res);
	}
	free(name);
	return ok;
}

/*
 * Drops the step's replication objects, by their names, wherever they
 * are: the subscription on the target (which drops its slots on the
 * source), then what is left on the source.  Before any row of the step
 * is deleted on the source, since the publication would send the
 * deletion on.  Where the target cannot reach the source, the
 * subscription is dropped without its slots and the mover drops them.
 */
bool
online_drop(Server *src, Server *tgt, int step)
{
	char	   *name = online_name(step);
	const char *params[2] = {name, NULL};
	PGresult   *res;
	char	   *suboid = NULL;
	char	   *sql;
	bool		ok = false;

	res = query(tgt, "SELECT oid FROM pg_catalog.pg_subscription WHERE subname = $1 AND subdbid = "
				"(SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database())",
				1, params);
	if (res == NULL)
		goto out;
	if (PQntuples(res) == 1)
	{
		suboid = format_text("%s", PQgetvalue(res, 0, 0));
		PQclear(res);
		sql = format_text("DROP SUBSCRIPTION %s", name);
		res = server_exec(tgt, sql);
		free(sql);
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
		{
			report_result("warning", format_text("could not drop subscription \"%s\" on shard \"%s\" with its slots", name, tgt->name),
						  res, tgt->conn);
			for (int i = 0; i < 3; i++)
			{
				static const char *const steps[3] = {"ALTER SUBSCRIPTION %s DISABLE",
				"ALTER SUBSCRIPTION %s SET (slot_name = NONE)", "DROP SUBSCRIPTION %s"};

				sql = format_text(steps[i], name);
				ok = command(tgt, sql);
				free(sql);
				if (!ok)
					goto out;
			}
			ok = false;
		}
	}
	PQclear(res);

	/* the slot (and a table copy's slots) once no walsender uses them */
	params[1] = suboid ? format_text("pg\\_%s\\_sync\\_%%", suboid) : format_text("%s", "-");
	for (int tries = 0;; tries++)
	{
		res = query(src, "SELECT slot_name, active_pid FROM pg_catalog.pg_replication_slots "
					"WHERE (slot_name = $1 OR slot_name LIKE $2) AND database = pg_catalog.current_database()",
					2, params);
		if (res == NULL)
			goto out;
		if (PQntuples(res) == 0)
			break;
		for (int i = 0; i < PQntuples(res); i++)
		{
			const char *p[1] = {PQgetvalue(res, i, PQgetisnull(res, i, 1) ? 0 : 1)};
			PGresult   *r;

			if (PQgetisnull(res, i, 1))
				r = query(src, "SELECT pg_catalog.pg_drop_replication_slot($1)", 1, p);
			else if (tries >= 50)
				r = query(src, "SELECT pg_catalog.pg_terminate_backend($1::int)", 1, p);
			else
				continue;
			if (r == NULL)
			{
				PQclear(res);
				goto out;
			}
			PQclear(r);
		}
		PQclear(res);
		usleep(100 * 1000);
	}
	PQclear(res);
	sql = format_text("DROP PUBLICATION IF EXISTS %s", name);
	ok = command(src, sql);
	free(sql);
out:
	free((char *) params[1]);
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
	names = p = malloc((size_t) batch->nsteps * 64 + 3);
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
