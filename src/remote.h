/*
 * remote.h - libpq from the backend (remote.c): connections and queries
 * that wait on the latch, so statement_timeout and pg_cancel_backend stop
 * them, with an optional deadline
 */
#ifndef CHASH_REMOTE_H
#define CHASH_REMOTE_H

#include "postgres.h"

#include "utils/timestamp.h"

#include "libpq-fe.h"

#include "conninfo.h"


/* The server's error of a failed connection or result, one line. */
extern char *remote_message(PGconn *conn, PGresult *res);

/*
 * The libpq keywords of a connection the server makes on behalf of the
 * current user (docs/shards.md, "Server-side connections"): the string
 * checked (conn_policy.h), then what it cannot change: the role that is
 * no superuser connects as itself unless the string names another role
 * and its password, the remote search_path is pinned, the client encoding
 * is the database's.  keys and vals end with a NULL.
 */
#define REMOTE_MAX_PARAMS 10
typedef struct RemoteParams
{
	const char *keys[REMOTE_MAX_PARAMS];
	const char *vals[REMOTE_MAX_PARAMS];
	bool		password_required;	/* no superuser: the server must have asked for a password */
	char	   *role;			/* the role on whose behalf it connects (palloc'd) */
	char	   *conninfo;		/* the string (palloc'd), for messages */
	const char *what;			/* names the server in messages ("the directory database") */
} RemoteParams;

/*
 * Fills p for conninfo, or ERROR when the string sets a refused keyword
 * (22023) or names another role without a password (2F003).  Allocates in
 * CurrentMemoryContext; an unparsable string is left for libpq to refuse.
 */
extern void remote_params(const char *conninfo, const char *what, bool replication, RemoteParams *p);

/*
 * NULL when conn may be used, else why not (palloc'd): a role that is no
 * superuser got a connection the server did not ask a password for
 * (trust, peer, ident, cert), so it would act with the server's identity.
 */
extern char *remote_password_refusal(PGconn *conn, const RemoteParams *p);

/* As remote_password_refusal, but closes conn and ERROR 2F003 when refused. */
extern void remote_require_password(PGconn *conn, const RemoteParams *p);

/*
 * Opens a connection (a replication connection to its database when
 * replication is true) on behalf of the current user, or returns NULL
 * with the reason in *error when it fails or the deadline passes (0:
 * none); ERROR when the string or the connection breaks the rule of
 * remote_params and remote_require_password.  The caller closes it
 * (PQfinish), also on error: use PG_TRY.
 */
extern PGconn *remote_try_connect(const char *conninfo, const char *what, bool replication,
								  TimestampTz deadline, char **error);

/*
 * As remote_try_connect, but ERROR 08001 when it fails (what names the
 * server in messages: "the directory database").
 */
extern PGconn *remote_connect_as(const char *conninfo, const char *what, bool replication,
								 TimestampTz deadline);
extern PGconn *remote_connect(const char *conninfo, const char *what, TimestampTz deadline);

/*
 * Runs a query with text parameters and returns its result (a failed
 * query as it is: PQresultStatus tells; NULL when the connection broke).
 * Past the deadline (0: none) the query is cancelled and 08006 raised.
 */
extern PGresult *remote_exec(PGconn *conn, const char *query, int nparams,
							 const char *const *params, TimestampTz deadline);

/* Runs a simple query (a replication command) that must succeed, or ERROR. */
extern PGresult *remote_command(PGconn *conn, const char *what, const char *conninfo,
								const char *command);

/* Whether a result is a success (rows or a command's completion). */
extern bool remote_succeeded(PGresult *res);

/*
 * ERROR for a failed query or command: the server's SQLSTATE (08006 when
 * it sent none) and its message as the detail; message is the errmsg.
 * Clears res.
 */
extern void remote_report_failure(PGconn *conn, PGresult *res, char *message,
								  const char *hint) pg_attribute_noreturn();

/* Runs a query that must succeed, or ERROR naming the server as what. */
extern PGresult *remote_query(PGconn *conn, const char *what, const char *conninfo,
							  const char *query, int nparams, const char *const *params);

#endif
