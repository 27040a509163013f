/*
 * Connections: the directory database and the shards.  A shard's
 * chash_shard.server is a connection string (or URI), or else a service
 * name; passwords come from libpq's usual places (~/.pgpass, PGPASSFILE,
 * a service file).  Every session gets the same output settings, so a
 * row's text, which the verification hashes, is the same on both sides.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chash_move.h"
#include "../src/core/conn_policy.h"

/*
 * malloc'd copies, so callers free one way.  A text the server's encoding
 * cannot take is an error, never a NULL or empty name in the SQL built:
 * the run fails, and the statement the text was for fails on the server
 * (a call of a function that does not exist, or a syntax error where a
 * name was expected), so its caller takes its usual error path; nothing
 * here ends the process.
 */
static char *
escaped(PGconn *conn, const char *s, bool literal)
{
	char	   *e = literal ? PQescapeLiteral(conn, s, strlen(s)) : PQescapeIdentifier(conn, s, strlen(s));
	char	   *r;

	if (e == NULL)
	{
		report("error", "could not quote \"%s\": %s", s, PQerrorMessage(conn));
		failed = true;
		return format_text("%s", "(SELECT pg_catalog.chash_move_could_not_quote())");
	}
	r = format_text("%s", e);
	PQfreemem(e);
	return r;
}

char *
escape_literal(PGconn *conn, const char *s)
{
	return escaped(conn, s, true);
}

char *
escape_identifier(PGconn *conn, const char *s)
{
	return escaped(conn, s, false);
}

char *
conninfo_of_server(const char *server)
{
	if (strchr(server, '=') != NULL || strncmp(server, "postgres://", 11) == 0
		|| strncmp(server, "postgresql://", 13) == 0)
		return format_text("%s", server);
	return format_text("service=%s", server);
}

/*
 * Connects; in the background rebalance (options.on_behalf_of) as the
 * server's other connections do (src/remote.c): the string's keywords
 * checked, the role connecting as itself unless the string names another
 * role and its password, the remote search_path pinned, and a role that is
 * no superuser refused a connection the server asked no password for.
 */
static PGconn *
connect_with(const char *conninfo, bool replication, const char *what)
{
	const char *keywords[8];
	const char *values[8];
	int			n = 0;
	PGconn	   *conn;
	const char *role = options.on_behalf_of;
	char	   *user_copy = NULL;

	keywords[n] = "dbname";
	values[n++] = conninfo;
	if (role != NULL)
	{
		char	   *error = NULL;
		/* unparsable: a database name to libpq (or an error); the role is still set */
		PQconninfoOption *opts = PQconninfoParse(conninfo, &error);
		const char **k = NULL;
		const char **v = NULL;
		int			count = 0;
		const char *bad = NULL;
		const char *user;
		conn_policy_result r;

		if (error)
			PQfreemem(error);
		for (PQconninfoOption *o = opts; o && o->keyword != NULL; o++)
			count++;
		if (count > 0)
		{
			k = xcalloc(count, sizeof(char *));
			v = xcalloc(count, sizeof(char *));
			count = 0;
			for (PQconninfoOption *o = opts; o->keyword != NULL; o++)
			{
				k[count] = o->keyword;
				v[count++] = o->val;
			}
		}
		r = conn_policy_check(k, v, count, role, options.on_behalf_superuser, &bad);
		if (r == CONN_POLICY_KEYWORD)
			report("error", "could not connect to %s: connection option \"%s\" is not allowed in a connection the server makes",
				   what, bad);
		else if (r == CONN_POLICY_PASSWORD)
			report("error", "could not connect to %s: password is required: non-superuser \"%s\" cannot connect as another role without that role's password in the connection string",
				   what, role);
		user = r == CONN_POLICY_OK ? conn_policy_user(k, v, count, role, options.on_behalf_superuser) : NULL;
		if (user != NULL)
		{
			keywords[n] = "user";
			values[n++] = user_copy = format_text("%s", user);
		}
		free(k);
		free(v);
		PQconninfoFree(opts);
		if (r != CONN_POLICY_OK)
			return NULL;
		keywords[n] = "options";
		values[n++] = CONN_POLICY_OPTIONS;
	}
	keywords[n] = "fallback_application_name";
	values[n++] = PROGNAME;
	if (replication)
	{
		keywords[n] = "replication";
		values[n++] = "database";
	}
	keywords[n] = values[n] = NULL;
	conn = PQconnectdbParams(keywords, values, true);
	free(user_copy);
	if (PQstatus(conn) != CONNECTION_OK)
	{
		report_result_owned("error", format_text("could not connect to %s", what), NULL, conn);
		PQfinish(conn);
		return NULL;
	}
	if (role != NULL && !options.on_behalf_superuser && !PQconnectionUsedPassword(conn))
	{
		report("error", "could not connect to %s: password is required: non-superuser cannot connect if the server does not request a password",
			   what);
		PQfinish(conn);
		return NULL;
	}
	return conn;
}

PGconn *
connect_to(const char *conninfo, const char *what)
{
	return connect_with(conninfo, false, what);
}

PGconn *
connect_replication(const char *conninfo, const char *what)
{
	return connect_with(conninfo, true, what);
}

/*
 * What a statement that has waited long waits for: the processes that
 * block it (pg_blocking_pids: a lock, or a transaction whose end it
 * awaits, in any database of the server), else its wait event, or that it
 * is running: a long statement is not always a blocked one.  Asked over
 * a connection of its own, opened the first time.
 */
static void
say_waiting(Server *server, PGconn **side, const char *label, double waited)
{
	char		pid[16];
	const char *params[1] = {pid};
	PGresult   *res;
	const char *what;

	if (*side == NULL)
	{
		char	   *purpose = format_text("%s to see what it waits for", server->name);

		*side = connect_to(server->conninfo, purpose);
		free(purpose);
		if (*side != NULL)
			PQclear(PQexec(*side, "SET search_path = pg_catalog, pg_temp"));
	}
	if (*side == NULL)
		return;
	snprintf(pid, sizeof(pid), "%d", PQbackendPID(server->conn));
	res = PQexecParams(*side,
					   "SELECT COALESCE((SELECT pg_catalog.string_agg(pg_catalog.format("
					   "           'process %s (database %s, user %s, %s, transaction open for %s s)', b.pid,"
					   "           COALESCE(pg_catalog.quote_ident(b.datname), 'none'), COALESCE(pg_catalog.quote_ident(b.usename), 'unknown'),"
					   "           COALESCE(b.state, 'state not visible'),"
					   "           COALESCE(pg_catalog.round(pg_catalog.date_part('epoch', pg_catalog.now() OPERATOR(pg_catalog.-) b.xact_start))::text, '?')),"
					   "           ', ' ORDER BY b.pid)"
					   "      FROM pg_catalog.pg_stat_activity b"
					   "     WHERE b.pid OPERATOR(pg_catalog.=) ANY (pg_catalog.pg_blocking_pids($1::int))),"
					   "   (SELECT CASE WHEN a.wait_event IS NULL THEN 'no other process (it is running, waiting for nothing)'"
					   "           ELSE 'no other process, wait event ' OPERATOR(pg_catalog.||) a.wait_event_type OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) a.wait_event END"
					   "      FROM pg_catalog.pg_stat_activity a WHERE a.pid OPERATOR(pg_catalog.=) $1::int))",
					   1, NULL, params, NULL, NULL, 0);
	what = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 && !PQgetisnull(res, 0, 0)
		? PQgetvalue(res, 0, 0) : "not known";
	if (strcmp(server->name, "directory") == 0)
		report("info", "waiting %.0f s on the directory database for %s: blocked by %s", waited, label, what);
	else
		report("info", "waiting %.0f s on shard \"%s\" for %s: blocked by %s", waited, server->name, label, what);
	PQclear(res);
}

/*
 * The result of the statement sent on the server's connection (the last
 * one's, of several), or its first COPY result.  Every wait is
 * interruptible: Ctrl-C or SIGTERM arriving while it runs cancels it
 * (*cancelled is set, and the error is the caller's to keep quiet), and a
 * statement that takes long says every few seconds what it waits for.
 */
PGresult *
server_wait(Server *server, const char *sql, bool *cancelled)
{
	PGconn	   *conn = server->conn;
	bool		stop_before = stop_requested;
	double		start = now_seconds();
	double		next_say = start + 3;
	PGconn	   *side = NULL;
	PGresult   *res,
			   *last = NULL;
	char		label[72];

	/* "SELECT pg_catalog.pg_create_logical_replication_slot(...": enough to know the statement */
	snprintf(label, sizeof(label), "%s", sql);
	for (char *p = label; *p; p++)
		if (*p == '\n' || *p == '\t')
			*p = ' ';
	if (strlen(sql) >= sizeof(label) - 1)
		strcpy(label + sizeof(label) - 5, "...");
	*cancelled = false;
	for (;;)
	{
		while (PQisBusy(conn))
		{
			struct pollfd pfd = {PQsocket(conn), POLLIN, 0};

			if (poll(&pfd, 1, 250) < 0 && errno != EINTR)
				break;
			if (!PQconsumeInput(conn))
				break;
			if (stop_requested && !stop_before && !*cancelled)
			{
				PGcancel   *cancel = PQgetCancel(conn);
				char		buf[256];

				if (cancel)
				{
					PQcancel(cancel, buf, sizeof(buf));
					PQfreeCancel(cancel);
				}
				*cancelled = true;
			}
			if (!*cancelled && PQisBusy(conn) && now_seconds() >= next_say)
			{
				say_waiting(server, &side, label, now_seconds() - start);
				next_say = now_seconds() + 5;
			}
		}
		res = PQgetResult(conn);
		if (res == NULL)
			break;
		PQclear(last);
		last = res;
		if (PQresultStatus(res) == PGRES_COPY_OUT || PQresultStatus(res) == PGRES_COPY_IN)
			break;
	}
	if (side != NULL)
		PQfinish(side);
	return last;
}

/* The result of the statement sent there, or NULL with the error said (not when Ctrl-C cancelled it). */
PGresult *
last_result(Server *server, const char *sql)
{
	bool		cancelled;
	PGresult   *last = server_wait(server, sql, &cancelled);

	if (last == NULL || (PQresultStatus(last) != PGRES_TUPLES_OK && PQresultStatus(last) != PGRES_COMMAND_OK))
	{
		if (!cancelled)
			report_result_owned("error", format_text("query failed on shard \"%s\"", server->name), last, server->conn);
		PQclear(last);
		return NULL;
	}
	return last;
}

/* the SQLSTATE of this thread's last failed statement ("" when none was sent or it had none) */
static __thread char failed_sqlstate[6];

const char *
last_sqlstate(void)
{
	return failed_sqlstate;
}

/*
 * Errors no retry mends: a permission denied (42501) or a shard that
 * cannot vouch for its replica of the directory (SH002).  The mover stops
 * at once with the server's message instead of trying again and again.
 */
static void
note_failure(const PGresult *res)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	snprintf(failed_sqlstate, sizeof(failed_sqlstate), "%s", state ? state : "");
	if (strcmp(failed_sqlstate, "42501") == 0 || strcmp(failed_sqlstate, "SH002") == 0)
		config_error = true;
}

/* Sends one or more statements and waits (server_wait); NULL with the error said when they fail. */
static PGresult *
run(Server *server, const char *sql, int nparams, const char *const *params, bool multi)
{
	bool		cancelled = false;
	int			sent = multi ? PQsendQuery(server->conn, sql)
		: PQsendQueryParams(server->conn, sql, nparams, NULL, params, NULL, NULL, 0);
	PGresult   *res = sent ? server_wait(server, sql, &cancelled) : NULL;

	if (res == NULL || (PQresultStatus(res) != PGRES_TUPLES_OK && PQresultStatus(res) != PGRES_COMMAND_OK))
	{
		/* a statement cancelled by Ctrl-C: the interruption is said once, at the end */
		if (!sent || !cancelled)
		{
			note_failure(res);
			report_result_owned("error", format_text("query failed on %s", server->name), res, server->conn);
		}
		else
			failed_sqlstate[0] = '\0';
		PQclear(res);
		return NULL;
	}
	return res;
}

PGresult *
query(Server *server, const char *sql, int nparams, const char *const *params)
{
	return run(server, sql, nparams, params, false);
}

/* query() of a statement text the caller allocated (format_text): freed here, whatever the result */
PGresult *
query_owned(Server *server, char *sql, int nparams, const char *const *params)
{
	PGresult   *res = query(server, sql, nparams, params);

	free(sql);
	return res;
}

/* one or more statements without parameters */
bool
command(Server *server, const char *sql)
{
	PGresult   *res = run(server, sql, 0, NULL, true);

	PQclear(res);
	return res != NULL;
}

/*
 * Begins a transaction that writes a step's rows into registered tables
 * (the copy, the deletes).  Where the mover is a superuser it writes as
 * replication does (session_replication_role = replica): no ordinary
 * trigger or rule of a table's owner fires with the superuser's rights;
 * what still runs there (ENABLE REPLICA and ALWAYS triggers and rules,
 * CHECK constraints, index expressions, generated columns, domain
 * constraints) step_check refused before any fence unless a superuser
 * wrote it or it runs as its owner (docs/shards.md, "Whose code a move
 * runs").  A mover that is no superuser cannot set it: the owner's
 * triggers run with the mover's rights.
 */
bool
begin_table_writes(Server *server)
{
	return command(server, server->superuser ? "BEGIN; SET LOCAL session_replication_role = replica" : "BEGIN");
}

/* One statement whose result the caller checks (NULL: it could not be sent). */
PGresult *
server_exec(Server *server, const char *sql)
{
	bool		cancelled;

	if (!PQsendQuery(server->conn, sql))
		return NULL;
	return server_wait(server, sql, &cancelled);
}

/*
 * Connects (again, after a restart of the server) and sets the session up:
 * chash's schema, the guard's bypass where there is a guard, and output
 * settings independent of the server's configuration.
 */
bool
server_open(Server *server)
{
	PGresult   *res;

	if (server->conn != NULL && PQstatus(server->conn) == CONNECTION_OK
		&& PQtransactionStatus(server->conn) == PQTRANS_IDLE)
		return true;
	server_close(server);
	if (strcmp(server->name, "directory") == 0)
		server->conn = connect_to(server->conninfo, "the directory database");
	else
	{
		char	   *what = format_text("shard \"%s\"", server->name);

		server->conn = connect_to(server->conninfo, what);
		free(what);
	}
	if (server->conn == NULL)
		return false;
	/*
	 * First the search path, so no statement of the mover resolves a name
	 * through a schema a role could put before pg_catalog (its own
	 * setting, PGOPTIONS); chash's objects are named with its schema.
	 */
	if (!command(server, "SET search_path = pg_catalog, pg_temp; SET datestyle = ISO, YMD; SET intervalstyle = postgres; "
				 "SET timezone = 'UTC'; SET extra_float_digits = 3; SET bytea_output = hex; "
				 "SET statement_timeout = 0; SET idle_in_transaction_session_timeout = 0; "
				 "SET client_min_messages = warning"))
		goto fail;
	res = query(server,
				"SELECT pg_catalog.quote_ident(n.nspname), "
				"       pg_catalog.to_regprocedure(pg_catalog.quote_ident(n.nspname) "
				"           || '.chash_shard_wait_fence(text, bigint, integer)') IS NOT NULL, "
				"       pg_catalog.to_regprocedure(pg_catalog.quote_ident(n.nspname) "
				"           || '.chash_shard_refusal_code(text)') IS NOT NULL, "
				"       (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = current_user) "
				"  FROM pg_catalog.pg_extension e "
				"  JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace "
				" WHERE e.extname = 'chash'", 0, NULL);
	if (res == NULL)
		goto fail;
	if (PQntuples(res) != 1)
	{
		PQclear(res);
		report("error", "chash is not installed on %s", server->name);
		report("hint", "Run CREATE EXTENSION chash there.");
		config_error = true;
		goto fail;
	}
	free(server->schema);
	server->schema = format_text("%s", PQgetvalue(res, 0, 0));
	server->has_wait_fence = PQgetvalue(res, 0, 1)[0] == 't';
	server->has_refusal = PQgetvalue(res, 0, 2)[0] == 't';
	server->superuser = PQgetvalue(res, 0, 3)[0] == 't';
	PQclear(res);

	/* the guard's settings exist once chash's library is loaded */
	res = query_owned(server,
				format_text("SELECT %s.chash_tenant_slot('x'::text, 1), "
							"EXISTS (SELECT FROM pg_catalog.pg_settings WHERE name = 'chash.bypass_guard')",
							server->schema), 0, NULL);
	if (res == NULL)
		goto fail;
	server->has_guard = PQgetvalue(res, 0, 1)[0] == 't';
	PQclear(res);
	if (server->has_guard && !command(server, "SET chash.bypass_guard = on"))
		goto fail;
	return true;

fail:
	server_close(server);
	return false;
}

void
server_close(Server *server)
{
	if (server->conn != NULL)
		PQfinish(server->conn);
	server->conn = NULL;
}

/* Ends the server's transaction, if one is open: a running query cancelled, then ROLLBACK. */
void
server_rollback(Server *server)
{
	if (server->conn != NULL && PQtransactionStatus(server->conn) != PQTRANS_IDLE)
	{
		PGresult   *res;

		if (PQtransactionStatus(server->conn) == PQTRANS_ACTIVE)
		{
			PGcancel   *cancel = PQgetCancel(server->conn);
			char		buf[256];

			if (cancel)
			{
				PQcancel(cancel, buf, sizeof(buf));
				PQfreeCancel(cancel);
			}
			while ((res = PQgetResult(server->conn)) != NULL)
				PQclear(res);
		}
		res = PQexec(server->conn, "ROLLBACK");
		PQclear(res);
	}
}
