/*
 * directory_recover.c - bringing a shard server to a promoted directory
 * database (docs/shards.md, "Failover": chash_directory_recover)
 *
 * chash_directory_recover is plpgsql; what it cannot do in SQL is here:
 * asking one shard server whether its replica follows this server, and
 * re-pointing it there when it does not.  Its libpq is remote.c's; the
 * connection is always closed.  Messages name the shard by host, port and
 * database only: a conninfo may hold a password.
 */
#include "chash.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "libpq-fe.h"

#include "remote.h"

PG_FUNCTION_INFO_V1(chash_directory_shard_follow);

/* How long a shard server may take to answer a connection. */
#define FOLLOW_CONNECT_MS 30000

static Datum
follow_result(const char *action, const char *detail)
{
	Datum		items[2];
	bool		nulls[2] = {false, detail == NULL};

	items[0] = CStringGetTextDatum(action);
	items[1] = detail ? CStringGetTextDatum(detail) : (Datum) 0;
	{
		int			dims[1] = {2};
		int			lbs[1] = {1};

		return PointerGetDatum(construct_md_array(items, nulls, 1, dims, lbs, TEXTOID, -1, false, TYPALIGN_INT));
	}
}

/*
 * chash_directory_shard_follow(server, schema, identity, directories,
 * directory_conninfo) -> text[] {action, detail}: on the shard server,
 * the rows of chash_shard_status of those directories (a text[] literal).
 * 'follows' when each records identity as its directory database's;
 * 'not joined' when there is none (no replica, no guard: nothing to
 * follow); otherwise chash_shard_repoint(one of them, directory_conninfo)
 * runs there (one subscription serves every directory of the server):
 * 'repointed', or 'failed' with its error.  'unreachable' with the
 * connection's error.
 */
Datum
chash_directory_shard_follow(PG_FUNCTION_ARGS)
{
	char	   *server;
	char	   *schema;
	char	   *identity;
	char	   *directories;
	char	   *directory_conninfo;
	char	   *error = NULL;
	PGconn	   *volatile conn;
	char	   *volatile action = NULL;
	char	   *volatile detail = NULL;

	chash_require_args(fcinfo, "server", "schema", "identity", "directories", "directory_conninfo", NULL);
	server = text_to_cstring(PG_GETARG_TEXT_PP(0));
	schema = text_to_cstring(PG_GETARG_TEXT_PP(1));
	identity = text_to_cstring(PG_GETARG_TEXT_PP(2));
	directories = text_to_cstring(PG_GETARG_TEXT_PP(3));
	directory_conninfo = text_to_cstring(PG_GETARG_TEXT_PP(4));
	chash_require_superuser("recover a directory");

	conn = remote_try_connect(server, "the shard", false,
							  TimestampTzPlusMilliseconds(GetCurrentTimestamp(), FOLLOW_CONNECT_MS), &error);
	if (conn == NULL)
		PG_RETURN_DATUM(follow_result("unreachable", error));
	PG_TRY();
	{
		const char *status_params[1] = {directories};
		const char *qschema = quote_identifier(schema);
		PGresult   *res;
		const char *behind = NULL;

		res = remote_exec(conn,
						  psprintf("SELECT s.directory, s.directory_system_identifier::pg_catalog.text "
								   "       OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) s.directory_timeline::pg_catalog.text "
								   "  FROM %s.chash_shard_status s "
								   " WHERE s.directory OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.text[]) "
								   " ORDER BY s.directory", qschema),
						  1, status_params, 0);
		if (!remote_succeeded(res))
		{
			action = "failed";
			detail = psprintf("Its chash_shard_status cannot be read: %s", remote_message(conn, res));
		}
		else if (PQntuples(res) == 0)
		{
			action = "not joined";
			detail = pstrdup("It has joined none of the directories it is a shard of: it replicates nothing and guards nothing.");
		}
		else
		{
			for (int i = 0; i < PQntuples(res) && behind == NULL; i++)
				if (PQgetisnull(res, i, 1) || strcmp(PQgetvalue(res, i, 1), identity) != 0)
					behind = pstrdup(PQgetvalue(res, i, 0));
			if (behind == NULL)
			{
				action = "follows";
				detail = psprintf("Its replica comes from this server (%s).", identity);
			}
		}
		PQclear(res);

		if (action == NULL)
		{
			const char *repoint_params[2] = {behind, directory_conninfo};

			res = remote_exec(conn, psprintf("SELECT %s.chash_shard_repoint($1, $2)", qschema),
							  2, repoint_params, 0);
			if (remote_succeeded(res))
			{
				action = "repointed";
				detail = psprintf("Its replica now comes from this server (%s).", identity);
			}
			else
			{
				const char *d = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL) : NULL;
				const char *code = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

				action = "failed";
				detail = psprintf("chash_shard_repoint failed there: %s%s%s%s%s",
								  code ? code : "", code ? ": " : "", remote_message(conn, res),
								  d ? " / " : "", d ? d : "");
			}
			PQclear(res);
		}
	}
	PG_FINALLY();
	{
		PQfinish(conn);
	}
	PG_END_TRY();
	PG_RETURN_DATUM(follow_result(action, detail));
}
