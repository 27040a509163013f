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
 * Opens a connection (a replication connection to its database when
 * replication is true), or returns NULL with the reason in *error when it
 * fails or the deadline passes (0: none).  The caller closes it
 * (PQfinish), also on error: use PG_TRY.
 */
extern PGconn *remote_try_connect(const char *conninfo, bool replication, TimestampTz deadline,
								  char **error);

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
