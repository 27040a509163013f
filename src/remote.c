/*
 * remote.c - libpq from the backend: the directory database of a joining
 * or re-pointed shard, the shards a promoted directory reconciles from
 * (shard_join.c), the shards a directory collects statistics from
 * (load_collect.c)
 *
 * Every wait is on the latch and the socket, so statement_timeout and
 * pg_cancel_backend stop it; a deadline bounds it too.  Messages name a
 * server by host, port and database only: a conninfo may hold a password.
 *
 * Every connection goes through remote_params and remote_require_password
 * (docs/shards.md, "Server-side connections"): it acts for the current
 * user, which unless it is a superuser must prove itself to the remote
 * server with a password, as postgres_fdw and dblink require.
 */
#include "chash.h"

#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/acl.h"
#include "utils/wait_event.h"

#include "conn_policy.h"
#include "conninfo.h"
#include "remote.h"

char *
remote_message(PGconn *conn, PGresult *res)
{
	const char *msg = NULL;
	char	   *copy;
	int			len;

	if (res)
		msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	if (msg == NULL)
		msg = PQerrorMessage(conn);
	copy = pstrdup(msg ? msg : "");
	len = strlen(copy);
	while (len > 0 && (copy[len - 1] == '\n' || copy[len - 1] == ' '))
		copy[--len] = '\0';
	return copy;
}

/* Waits for the socket or the latch; false once the deadline has passed. */
static bool
wait_socket(PGconn *conn, int events, TimestampTz deadline)
{
	long		timeout = -1L;
	int			rc;

	if (deadline != 0)
	{
		TimestampTz now = GetCurrentTimestamp();

		if (now >= deadline)
			return false;
		timeout = TimestampDifferenceMilliseconds(now, deadline);
		events |= WL_TIMEOUT;
	}
	rc = WaitLatchOrSocket(MyLatch, WL_LATCH_SET | WL_EXIT_ON_PM_DEATH | events,
						   PQsocket(conn), timeout, PG_WAIT_EXTENSION);
	if (rc & WL_LATCH_SET)
		ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
	return true;
}

void
remote_params(const char *conninfo, const char *what, bool replication, RemoteParams *p)
{
	PQconninfoOption *opts;
	char	   *parse_error = NULL;
	const char **keywords = NULL;
	const char **values = NULL;
	int			count = 0;
	const char *bad = NULL;
	const char *user;
	conn_policy_result r;
	int			n = 0;

	memset(p, 0, sizeof(*p));
	p->role = GetUserNameFromId(GetUserId(), false);
	p->password_required = !superuser();
	p->conninfo = pstrdup(conninfo);
	p->what = what;
	/* later keywords win over the string's (expand_dbname): it cannot change these */
	p->keys[n] = "dbname";
	p->vals[n++] = p->conninfo;
	/*
	 * A string libpq cannot parse is a database name to it (or an error):
	 * there is nothing to check, but the role is still set below.
	 */
	opts = PQconninfoParse(conninfo, &parse_error);
	if (parse_error)
		PQfreemem(parse_error);
	if (opts != NULL)
	{
		for (PQconninfoOption *o = opts; o->keyword != NULL; o++)
			count++;
		keywords = palloc(sizeof(char *) * (count + 1));
		values = palloc(sizeof(char *) * (count + 1));
		count = 0;
		for (PQconninfoOption *o = opts; o->keyword != NULL; o++)
		{
			keywords[count] = pstrdup(o->keyword);
			values[count++] = o->val ? pstrdup(o->val) : NULL;
		}
		PQconninfoFree(opts);
	}
	r = conn_policy_check(keywords, values, count, p->role, !p->password_required, &bad);
	if (r == CONN_POLICY_KEYWORD)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("connection option \"%s\" is not allowed in a connection the server makes", bad),
				 errdetail("The connection to %s \"%s\" is made by the server: an option that changes who connects, what the remote session runs or which of the server's files libpq reads is refused.",
						   what, conninfo_display(conninfo)),
				 errhint("Remove \"%s\" from the connection string.", bad)));
	user = conn_policy_user(keywords, values, count, p->role, !p->password_required);
	if (r == CONN_POLICY_PASSWORD)
		ereport(ERROR,
				(errcode(ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED),
				 errmsg("password is required to connect to %s \"%s\"", what, conninfo_display(conninfo)),
				 errdetail("Non-superuser \"%s\" cannot connect as role \"%s\" without that role's password in the connection string.",
						   p->role, user),
				 errhint("Connect as role \"%s\" (leave \"user\" out), or give the other role's password in the connection string.",
						 p->role)));
	/* a role that is no superuser never connects as libpq's default, the server's user */
	if (user != NULL)
	{
		p->keys[n] = "user";
		p->vals[n++] = pstrdup(user);
	}
	p->keys[n] = "options";
	p->vals[n++] = CONN_POLICY_OPTIONS;
	p->keys[n] = "client_encoding";
	p->vals[n++] = GetDatabaseEncodingName();
	p->keys[n] = "fallback_application_name";
	p->vals[n++] = "chash";
	if (replication)
	{
		p->keys[n] = "replication";
		p->vals[n++] = "database";
	}
	p->keys[n] = NULL;
	p->vals[n] = NULL;
}

char *
remote_password_refusal(PGconn *conn, const RemoteParams *p)
{
	if (!p->password_required || PQconnectionUsedPassword(conn))
		return NULL;
	return pstrdup("Non-superuser cannot connect if the server does not request a password.");
}

void
remote_require_password(PGconn *conn, const RemoteParams *p)
{
	char	   *why = remote_password_refusal(conn, p);
	char	   *user;

	if (why == NULL)
		return;
	user = pstrdup(PQuser(conn) ? PQuser(conn) : p->role);
	PQfinish(conn);
	ereport(ERROR,
			(errcode(ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED),
			 errmsg("password is required to connect to %s \"%s\"", p->what, conninfo_display(p->conninfo)),
			 errdetail_internal("%s", why),
			 errhint("The remote server must authenticate role \"%s\" by password (scram-sha-256 or md5 in its pg_hba.conf); only a superuser's connections may log in without one.",
					 user)));
}

PGconn *
remote_try_connect(const char *conninfo, const char *what, bool replication, TimestampTz deadline,
				   char **error)
{
	RemoteParams params;
	PGconn	   *conn;
	volatile PostgresPollingStatusType status = PGRES_POLLING_WRITING;
	volatile bool timed_out = false;

	remote_params(conninfo, what, replication, &params);
	conn = PQconnectStartParams(params.keys, params.vals, true);
	if (conn == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	if (PQstatus(conn) != CONNECTION_BAD)
	{
		PG_TRY();
		{
			while (status != PGRES_POLLING_OK && status != PGRES_POLLING_FAILED)
			{
				if (!wait_socket(conn, status == PGRES_POLLING_READING ? WL_SOCKET_READABLE : WL_SOCKET_WRITEABLE,
								 deadline))
				{
					timed_out = true;
					break;
				}
				status = PQconnectPoll(conn);
			}
		}
		PG_CATCH();
		{
			PQfinish(conn);
			PG_RE_THROW();
		}
		PG_END_TRY();
	}
	if (timed_out || PQstatus(conn) != CONNECTION_OK)
	{
		*error = timed_out ? pstrdup("The connection timed out.") : remote_message(conn, NULL);
		PQfinish(conn);
		return NULL;
	}
	remote_require_password(conn, &params);
	return conn;
}

PGconn *
remote_connect_as(const char *conninfo, const char *what, bool replication, TimestampTz deadline)
{
	char	   *msg = NULL;
	PGconn	   *conn = remote_try_connect(conninfo, what, replication, deadline, &msg);

	if (conn == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION),
				 errmsg("could not connect to %s \"%s\"", what, conninfo_display(conninfo)),
				 errdetail_internal("%s", msg)));
	return conn;
}

PGconn *
remote_connect(const char *conninfo, const char *what, TimestampTz deadline)
{
	return remote_connect_as(conninfo, what, false, deadline);
}

PGresult *
remote_exec(PGconn *conn, const char *query, int nparams, const char *const *params,
			TimestampTz deadline)
{
	PGresult   *last = NULL;

	if (!PQsendQueryParams(conn, query, nparams, NULL, params, NULL, NULL, 0))
		return NULL;
	for (;;)
	{
		PGresult   *res;

		while (PQisBusy(conn))
		{
			if (!wait_socket(conn, WL_SOCKET_READABLE, deadline))
			{
				PGcancel   *cancel = PQgetCancel(conn);
				char		errbuf[256];

				/* the server stops too; the connection is the caller's to close */
				if (cancel != NULL)
				{
					(void) PQcancel(cancel, errbuf, sizeof(errbuf));
					PQfreeCancel(cancel);
				}
				PQclear(last);
				/* not 57014: a caller may catch this, never a user's cancel */
				ereport(ERROR,
						(errcode(ERRCODE_CONNECTION_FAILURE),
						 errmsg("the remote server did not answer in time"),
						 errdetail("Its query was cancelled.")));
			}
			if (!PQconsumeInput(conn))
			{
				PQclear(last);
				return NULL;
			}
		}
		res = PQgetResult(conn);
		if (res == NULL)
			break;
		PQclear(last);
		last = res;
	}
	return last;
}

PGresult *
remote_command(PGconn *conn, const char *what, const char *conninfo, const char *command)
{
	PGresult   *last = NULL;

	if (PQsendQuery(conn, command))
	{
		for (;;)
		{
			PGresult   *res;

			while (PQisBusy(conn))
			{
				(void) wait_socket(conn, WL_SOCKET_READABLE, 0);
				if (!PQconsumeInput(conn))
					break;
			}
			res = PQgetResult(conn);
			if (res == NULL)
				break;
			PQclear(last);
			last = res;
		}
	}
	if (!remote_succeeded(last))
		remote_report_failure(conn, last, psprintf("command on %s \"%s\" failed", what,
												   conninfo_display(conninfo)), NULL);
	return last;
}

bool
remote_succeeded(PGresult *res)
{
	return res != NULL && (PQresultStatus(res) == PGRES_TUPLES_OK ||
						   PQresultStatus(res) == PGRES_COMMAND_OK);
}

void
remote_report_failure(PGconn *conn, PGresult *res, char *message, const char *hint)
{
	char	   *msg = remote_message(conn, res);
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	int			code = ERRCODE_CONNECTION_FAILURE;

	if (state && strlen(state) == 5)
		code = MAKE_SQLSTATE(state[0], state[1], state[2], state[3], state[4]);
	PQclear(res);
	ereport(ERROR,
			(errcode(code),
			 errmsg_internal("%s", message),
			 errdetail_internal("%s", msg),
			 hint ? errhint("%s", hint) : 0));
}

PGresult *
remote_query(PGconn *conn, const char *what, const char *conninfo, const char *query,
			 int nparams, const char *const *params)
{
	PGresult   *res = remote_exec(conn, query, nparams, params, 0);

	if (!remote_succeeded(res))
		remote_report_failure(conn, res, psprintf("query on %s \"%s\" failed", what,
												  conninfo_display(conninfo)), NULL);
	return res;
}
