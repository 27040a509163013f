/*
 * Connections: the directory database and the shards.  A shard's
 * chash_shard.server is a connection string (or URI), or else a service
 * name; passwords come from libpq's usual places (~/.pgpass, PGPASSFILE,
 * a service file).  Every session gets the same output settings, so a
 * row's text, which the verification hashes, is the same on both sides.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chash_move.h"

char *
format_text(const char *fmt,...)
{
	va_list		ap;
	int			n;
	char	   *s;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	s = malloc(n + 1);
	if (s == NULL)
	{
		report("error", "out of memory");
		exit(1);
	}
	va_start(ap, fmt);
	vsnprintf(s, n + 1, fmt, ap);
	va_end(ap);
	return s;
}

/*
 * malloc'd copies, so callers free one way.  A text the server's encoding
 * cannot take is an error, never a NULL or empty name in the SQL built.
 */
static char *
escaped(PGconn *conn, const char *s, bool literal)
{
	char	   *e = literal ? PQescapeLiteral(conn, s, strlen(s)) : PQescapeIdentifier(conn, s, strlen(s));
	char	   *r;

	if (e == NULL)
	{
		report("error", "could not quote \"%s\": %s", s, PQerrorMessage(conn));
		exit(1);
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

PGconn *
connect_to(const char *conninfo, const char *what)
{
	const char *keywords[] = {"dbname", "fallback_application_name", NULL};
	const char *values[] = {conninfo, PROGNAME, NULL};
	PGconn	   *conn = PQconnectdbParams(keywords, values, true);

	if (PQstatus(conn) != CONNECTION_OK)
	{
		report_result("error", format_text("could not connect to %s", what), NULL, conn);
		PQfinish(conn);
		return NULL;
	}
	return conn;
}

PGresult *
query(Server *server, const char *sql, int nparams, const char *const *params)
{
	PGresult   *res = PQexecParams(server->conn, sql, nparams, NULL, params, NULL, NULL, 0);

	if (PQresultStatus(res) != PGRES_TUPLES_OK && PQresultStatus(res) != PGRES_COMMAND_OK)
	{
		report_result("error", format_text("query failed on %s", server->name), res, server->conn);
		PQclear(res);
		return NULL;
	}
	return res;
}

/* one or more statements without parameters */
bool
command(Server *server, const char *sql)
{
	PGresult   *res = PQexec(server->conn, sql);

	if (PQresultStatus(res) != PGRES_TUPLES_OK && PQresultStatus(res) != PGRES_COMMAND_OK)
	{
		report_result("error", format_text("query failed on %s", server->name), res, server->conn);
		PQclear(res);
		return false;
	}
	PQclear(res);
	return true;
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
	server->conn = connect_to(server->conninfo,
							  strcmp(server->name, "directory") == 0 ? "the directory database"
							  : format_text("shard \"%s\"", server->name));
	if (server->conn == NULL)
		return false;
	if (!command(server, "SET datestyle = ISO, YMD; SET intervalstyle = postgres; "
				 "SET timezone = 'UTC'; SET extra_float_digits = 3; SET bytea_output = hex; "
				 "SET statement_timeout = 0; SET idle_in_transaction_session_timeout = 0; "
				 "SET client_min_messages = warning"))
		goto fail;
	res = query(server,
				"SELECT pg_catalog.quote_ident(n.nspname), "
				"       pg_catalog.to_regprocedure(pg_catalog.quote_ident(n.nspname) "
				"           || '.chash_shard_wait_fence(text, bigint, integer)') IS NOT NULL "
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
	PQclear(res);

	/* the guard's settings exist once chash's library is loaded */
	res = query(server,
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
