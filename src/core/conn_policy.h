/*
 * conn_policy.h - what a connection the server makes on a role's behalf
 * may say (docs/shards.md, "Server-side connections"): the rule of
 * postgres_fdw and dblink, shared by the glue (src/remote.c) and the
 * mover's engine when the background rebalance runs it
 * (mover/connection.c)
 *
 * Plain C over a parsed connection string (libpq's PQconninfoParse gives
 * the keywords and values); the callers connect and then check that the
 * server asked for a password (PQconnectionUsedPassword).
 */
#ifndef CHASH_CORE_CONN_POLICY_H
#define CHASH_CORE_CONN_POLICY_H

#include <stdbool.h>

typedef enum conn_policy_result
{
	CONN_POLICY_OK = 0,
	CONN_POLICY_KEYWORD,		/* a keyword no server-side connection may set */
	CONN_POLICY_PASSWORD		/* another remote role, without a password in the string */
} conn_policy_result;

/*
 * libpq's "options" of every server-side connection (set after the
 * string, so the string cannot change it): the remote session finds no
 * object of a schema its role or database settings put first.
 */
#define CONN_POLICY_OPTIONS "-c search_path=pg_catalog,pg_temp"

/* Whether a server-side connection string may set keyword. */
bool		conn_policy_keyword_allowed(const char *keyword);

/*
 * Checks a parsed connection string for a connection on behalf of role:
 * keywords[0 .. n-1] with values[i] (NULL or "" for unset).  Every keyword
 * set must be allowed (superusers included: the string may be one that
 * another role wrote, as chash_shard.server).  A role that is no superuser
 * connects as itself (no "user", or its own name) or else names a
 * password in the string, so that the password libpq sends is never one
 * of the server's password file for another role.  On a refusal *bad is
 * the keyword ("user" for CONN_POLICY_PASSWORD).
 */
conn_policy_result conn_policy_check(const char *const *keywords, const char *const *values, int n,
									 const char *role, bool superuser, const char **bad);

/* The connecting role: the string's "user", else role (NULL: libpq's default, a superuser's only). */
const char *conn_policy_user(const char *const *keywords, const char *const *values, int n,
							 const char *role, bool superuser);

#endif
