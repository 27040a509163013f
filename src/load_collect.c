/*
 * load_collect.c - the directory database's side of the load statistics
 * (docs/load.md, "Collecting"): chash_shard_fetch reads one shard's
 * statistics and sizes through libpq, for chash_collect (plpgsql), which
 * stores them
 *
 * One round trip per shard, bounded by chash.collect_timeout: the
 * connection and the query share the deadline, and the shard's own
 * statement_timeout is set to it, so a shard that hangs costs at most
 * that long and stops its work too.  Every wait is cancellable.
 */
#include "chash.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "load_stats.h"
#include "remote.h"

PG_FUNCTION_INFO_V1(chash_shard_fetch);

static int	chash_collect_timeout = 10000;

/* The columns chash_shard_fetch returns, in the order of the query. */
#define FETCH_COLUMNS 10

/*
 * What a shard answers, with its chash schema in place of %s: its slot
 * statistics, its top tenants (the whole sketch) and the size of every
 * tenant of the registered tables it holds.
 */
static const char *const fetch_query =
"SELECT 'slot', slot, NULL::text, reads, writes, rows, exec_time, NULL::float8, since, NULL::bigint"
"  FROM %s.chash_slot_stats($1)"
" UNION ALL "
"SELECT 'tenant', slot, tenant, reads, writes, rows, exec_time, score, NULL, NULL"
"  FROM %s.chash_tenant_stats($1, 1024)"
" UNION ALL "
"SELECT 'size', slot, tenant, NULL, NULL, rows, NULL, NULL, NULL, bytes"
"  FROM %s.chash_shard_sizes($1)";

/* ERROR (08006) of a shard's failed query, with its server's message. */
static void
pg_attribute_noreturn()
report_shard_failure(PGconn *conn, PGresult *res, const char *server)
{
	char	   *msg = remote_message(conn, res);

	PQclear(res);
	ereport(ERROR,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg("query on shard server \"%s\" failed", conninfo_display(server)),
			 errdetail_internal("%s", msg)));
}

static PGresult *
shard_query(PGconn *conn, const char *server, const char *query, int nparams,
			const char *const *params, TimestampTz deadline)
{
	PGresult   *res = remote_exec(conn, query, nparams, params, deadline);

	if (res == NULL || PQresultStatus(res) != PGRES_TUPLES_OK)
		report_shard_failure(conn, res, server);
	return res;
}

/*
 * chash_shard_fetch(server text, directory text) -> TABLE (kind text,
 * slot int, tenant text, reads bigint, writes bigint, rows bigint,
 * exec_time float8, score float8, since timestamptz, bytes bigint)
 */
Datum
chash_shard_fetch(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *server;
	char	   *directory;
	TimestampTz deadline;
	PGconn	   *volatile conn = NULL;
	AttInMetadata *attinmeta;

	chash_require_args(fcinfo, "server", "directory", NULL);
	server = text_to_cstring(PG_GETARG_TEXT_PP(0));
	directory = text_to_cstring(PG_GETARG_TEXT_PP(1));
	InitMaterializedSRF(fcinfo, 0);
	attinmeta = TupleDescGetAttInMetadata(rsinfo->setDesc);
	deadline = chash_collect_timeout > 0 ?
		TimestampTzPlusMilliseconds(GetCurrentTimestamp(), chash_collect_timeout) : 0;

	conn = remote_connect(server, "shard server", deadline);
	PG_TRY();
	{
		PGresult   *res;
		const char *params[1];
		char	   *schema;
		char		timeout[32];

		/* the shard stops its own work at the deadline too */
		snprintf(timeout, sizeof(timeout), "%d", Max(chash_collect_timeout, 0));
		params[0] = timeout;
		PQclear(shard_query(conn, server, "SELECT pg_catalog.set_config('statement_timeout', $1, false)",
							1, params, deadline));
		res = shard_query(conn, server,
						  "SELECT n.nspname FROM pg_catalog.pg_extension e"
						  " JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace"
						  " WHERE e.extname = 'chash'", 0, NULL, deadline);
		if (PQntuples(res) == 0)
		{
			PQclear(res);
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("extension \"chash\" is not installed on shard server \"%s\"",
							conninfo_display(server))));
		}
		schema = pstrdup(quote_identifier(PQgetvalue(res, 0, 0)));
		PQclear(res);
		params[0] = directory;
		res = shard_query(conn, server, psprintf(fetch_query, schema, schema, schema),
						  1, params, deadline);
		if (PQnfields(res) != FETCH_COLUMNS)
			report_shard_failure(conn, res, server);
		for (int r = 0; r < PQntuples(res); r++)
		{
			char	   *values[FETCH_COLUMNS];

			if ((r & 1023) == 0)
				CHECK_FOR_INTERRUPTS();
			for (int c = 0; c < FETCH_COLUMNS; c++)
				values[c] = PQgetisnull(res, r, c) ? NULL : PQgetvalue(res, r, c);
			tuplestore_puttuple(rsinfo->setResult, BuildTupleFromCStrings(attinmeta, values));
		}
		PQclear(res);
	}
	PG_CATCH();
	{
		/*
		 * A cancel (or any error) here stops the shard's query too: closing
		 * the connection alone leaves a query that waits for a lock waiting
		 * there, in the lock's queue.
		 */
		if (PQtransactionStatus(conn) == PQTRANS_ACTIVE)
		{
			PGcancel   *cancel = PQgetCancel(conn);
			char		errbuf[256];

			if (cancel != NULL)
			{
				(void) PQcancel(cancel, errbuf, sizeof(errbuf));
				PQfreeCancel(cancel);
			}
		}
		PQfinish(conn);
		PG_RE_THROW();
	}
	PG_END_TRY();
	PQfinish(conn);
	return (Datum) 0;
}

void
load_collect_init(void)
{
	DefineCustomIntVariable("chash.collect_timeout",
							"How long chash_collect waits for each shard.",
							"Connecting and reading share it; 0 waits as long as statement_timeout allows.",
							&chash_collect_timeout, 10000, 0, INT_MAX, PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
}
