/*
 * Online moves (--online, docs/chash_move.md "Online moves"; docs/shards.md): the
 * source keeps taking a step's writes while its rows are copied and its
 * changes streamed, so writes wait only for the last catch-up and the
 * check of the rows changed since the copy.
 *
 * On the source a publication of the registered tables, a decoding filter
 * for the step's slot or tenant (chash_decoding_filter) and a logical slot
 * of output plugin chash, which passes pgoutput's stream of only those
 * rows: every slot method works, a row filter could not call chash's hash.
 * The slot is created over a replication connection with an exported
 * snapshot; the mover copies the rows from that snapshot (the bulk
 * verified there, writes going on), then subscribes the target to the
 * slot with copy_data = false: it streams every change after the
 * snapshot, none twice.  All objects are named
 * chash_move_<database>_<migration>_<step> (<database> a short hash of the
 * directory database's system identifier and oid: migration numbers
 * repeat across directory databases, slot names are the server's), so a
 * rerun finds and drops what a mover that died created, and never another
 * directory database's objects.
 *
 * The tally: a temporary copy of the slot, made before the subscription
 * reads the slot, held by a session of its own, which decodes the same
 * changes with the plugin's option tally: a line for each row of the step
 * changed since the copy, with its key.  The mover reads it while the
 * subscription catches up, and once more in the write block; there only
 * the changed rows are compared on both sides, looked up by their keys,
 * so the block does not grow with the step (docs/shards.md, "The write
 * block").
 *
 * The parts, one concept a file, in the order a step meets them:
 *   online.c           whether a step can move online; its objects' name
 *   online_subscribe.c the objects and the copy from the slot's snapshot
 *   online_tally.c     the tallies (their OnlineCopy owns them)
 *   online_stream.c    the waits for the subscription's catch-up
 *   online_verify.c    the tail verification in the write block
 *   online_teardown.c  the objects dropped by name
 * copy_online.c strings them together as the online CopyStrategy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chash_move.h"

char *
online_name(int step)
{
	return format_text("chash_move_%s_%lld_%d", migration.database_id, migration.id, step);
}

/* Says once per key why steps fall back to the blocking copy; false.  Frees key and message. */
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

/*
 * Whether sql's one row says true in its first column on server: 1 it does,
 * 0 it does not (or there is no row), -1 the query failed (query has said
 * why).
 */
static int
server_says(Server *server, const char *sql, int nparams, const char *const *params)
{
	PGresult   *res = query(server, sql, nparams, params);
	int			yes;

	if (res == NULL)
		return -1;
	yes = PQntuples(res) == 1 && PQgetvalue(res, 0, 0)[0] == 't';
	PQclear(res);
	return yes;
}

/* The source writes the logical WAL a slot decodes. */
static bool
usable_wal_level(Server *src)
{
	int			yes = server_says(src, "SELECT pg_catalog.current_setting('wal_level') = 'logical'", 0, NULL);

	if (yes == 0)
		return cannot(format_text("wal_level\n%s", src->name),
					  format_text("shard \"%s\" does not have wal_level = logical: steps from it are moved with writes blocked", src->name),
					  "Set wal_level = logical there and restart it.");
	return yes == 1;
}

/* chash there has its output plugin, and servers that list the plugins a slot may use list chash. */
static bool
usable_plugin(Server *src)
{
	PGresult   *res = query(src, "SELECT COALESCE(pg_catalog.current_setting('output_plugin_libraries', true), 'chash') "
							"       ~ '(^|[ ,])chash($|[ ,])', "
							"       pg_catalog.to_regclass(pg_catalog.quote_ident(n.nspname) || '.chash_decoding_filter') IS NOT NULL "
							"  FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace "
							" WHERE e.extname = 'chash'", 0, NULL);
	bool		ok;

	if (res == NULL)
		return false;
	ok = PQntuples(res) == 1 && PQgetvalue(res, 0, 0)[0] == 't';
	if (PQntuples(res) == 1 && PQgetvalue(res, 0, 1)[0] != 't')
	{
		PQclear(res);
		return cannot(format_text("plugin\n%s", src->name),
					  format_text("chash on shard \"%s\" has no output plugin: steps from it are moved with writes blocked", src->name),
					  "Update chash there with ALTER EXTENSION chash UPDATE.");
	}
	PQclear(res);
	if (!ok)
		return cannot(format_text("plugin\n%s", src->name),
					  format_text("shard \"%s\" does not allow output plugin \"chash\": steps from it are moved with writes blocked", src->name),
					  "Add chash to output_plugin_libraries there (output_plugin_libraries = 'pgoutput, test_decoding, chash') and reload it.");
	return true;
}

/*
 * The mover's role on the shard is a superuser: on the target CREATE
 * SUBSCRIPTION needs one; on the source the publication of the tables
 * (their owner), the replication slot, and reading output_plugin_libraries
 * (usable_plugin, which a role without pg_read_all_settings may not).
 */
static bool
usable_superuser(Server *server, bool source)
{
	int			yes = server_says(server, "SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user", 0, NULL);

	if (yes == 0 && source)
		return cannot(format_text("superuser\nsource\n%s", server->name),
					  format_text("the mover's role on shard \"%s\" is not a superuser, which the publication and the replication slot there need: steps from it are moved with writes blocked", server->name),
					  "Connect to it as a superuser in its chash_shard.server.");
	if (yes == 0)
		return cannot(format_text("superuser\ntarget\n%s", server->name),
					  format_text("the mover's role on shard \"%s\" is not a superuser, which CREATE SUBSCRIPTION needs: steps to it are moved with writes blocked", server->name),
					  "Connect to it as a superuser in its chash_shard.server.");
	return yes == 1;
}

/* The target's server logs in to the source as the subscription will (login_error). */
static bool
usable_login(Server *src, Server *tgt)
{
	char	   *error = login_error(src, tgt);
	char	   *hint;
	bool		ok;

	if (error == NULL)
		return true;
	hint = format_text("The subscription connects from the server of shard \"%s\" with the chash_shard.server of shard \"%s\", as a replication connection. "
								  "Put that role's password in the .pgpass file of the operating-system user that runs the server of shard \"%s\" (usually ~postgres/.pgpass, mode 0600), "
								  "give the role REPLICATION, or allow the connection in the pg_hba.conf of shard \"%s\".",
								  tgt->name, src->name, tgt->name, src->name);
	ok = cannot(format_text("login\n%s\n%s", src->name, tgt->name),
				format_text("shard \"%s\" cannot log in to shard \"%s\" for the subscription (%s): steps from \"%s\" to \"%s\" are moved with writes blocked",
							tgt->name, src->name, error, src->name, tgt->name),
				hint);
	free(hint);
	free(error);
	return ok;
}

/* The table's tenant column is in its replica identity on the source: the plugin judges a DELETE by the old row's key. */
static bool
usable_identity(Server *src, const TableInfo *table)
{
	const char *params[2] = {table->table_name, table->tenant_column};
	int			yes = server_says(src,
								  "SELECT c.relreplident = 'f' OR EXISTS ("
								  "         SELECT FROM pg_catalog.pg_index i"
								  "          WHERE i.indrelid = c.oid AND a.attnum = ANY (i.indkey)"
								  "            AND ((c.relreplident = 'd' AND i.indisprimary)"
								  "                 OR (c.relreplident = 'i' AND i.indisreplident)))"
								  "  FROM pg_catalog.pg_class c"
								  "  JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attname = $2"
								  " WHERE c.oid = pg_catalog.to_regclass($1)", 2, params);

	if (yes == 0)
		return cannot(format_text("identity\n%s\n%s", src->name, table->table_name),
					  format_text("tenant column \"%s\" of table \"%s\" is not in its replica identity on shard \"%s\": steps from there are moved with writes blocked",
								  table->tenant_column, table->table_name, src->name),
					  "The decoding filter judges a deletion by the old row's key, which holds the replica identity only; give the table a primary key that includes the column, or ALTER TABLE ... REPLICA IDENTITY FULL.");
	return yes == 1;
}

/*
 * Whether the step can move online, checked on its shards in this order;
 * when not, the reason is said once.
 */
bool
online_usable(Server *src, Server *tgt, TableInfo *tables, int ntables, const StepTarget *target)
{
	bool		ok = usable_wal_level(src) && usable_superuser(src, true) && usable_plugin(src)
		&& usable_superuser(tgt, false) && usable_login(src, tgt);

	for (int i = 0; ok && i < ntables; i++)
		ok = usable_identity(src, &tables[i]);
	return ok;
}
