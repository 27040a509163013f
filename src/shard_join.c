/*
 * shard_join.c - talking to the directory database when a shard joins or
 * leaves it (docs/shards.md, "Joining a shard")
 *
 * chash_shard_join and chash_shard_leave are plpgsql; what they cannot do
 * in SQL is here: the SQL helpers of 90_shard_join.sql and of failover
 * (checks on the directory database, the subscription, the directory's
 * identity, the slot's snapshot).  Their libpq is remote.c's, the slot
 * that follows the transaction is slot_lifecycle.c's, and a connection
 * string in a message is conninfo.c's.
 *
 * Remote calls wait on the latch and the socket, so statement_timeout and
 * pg_cancel_backend stop them; connections are always closed.  Messages
 * name the directory database by host, port and database only: a conninfo
 * may hold a password.
 */
#include "chash.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/wait_event.h"

#include "libpq-fe.h"

#include "remote.h"
#include "slot_lifecycle.h"

PG_FUNCTION_INFO_V1(chash_shard_slot_name);
PG_FUNCTION_INFO_V1(chash_shard_remote_check);
PG_FUNCTION_INFO_V1(chash_shard_create_subscription);
PG_FUNCTION_INFO_V1(chash_shard_directory_identity);
PG_FUNCTION_INFO_V1(chash_shard_slot_snapshot);
PG_FUNCTION_INFO_V1(chash_directory_read_replica);

/* The publication chash_directory_publish() creates on the directory database. */
#define PUBLICATION_NAME "chash_directory"

/* What the server at the other end is, for messages: reconcile reads shards. */
static const char *remote_peer = "the directory database";

/* ---- SQL-callable helpers of 90_shard_join.sql ---- */

/* chash_shard_slot_name() -> text: unique per shard database. */
Datum
chash_shard_slot_name(PG_FUNCTION_ARGS)
{
	char		name[NAMEDATALEN];

	snprintf(name, sizeof(name), "chash_" UINT64_FORMAT "_%u",
			 GetSystemIdentifier(), MyDatabaseId);
	PG_RETURN_TEXT_P(cstring_to_text(name));
}

/*
 * chash_shard_remote_check(conninfo, directory, shard, schema, slot_name)
 * -> boolean: checks on the directory database that chash is installed in
 * the same schema, that the directory tables are published, that the
 * directory exists and has the shard.  Returns whether the slot exists
 * there (so the database already replicates from it).
 */
Datum
chash_shard_remote_check(PG_FUNCTION_ARGS)
{
	char	   *conninfo;
	text	   *directory_t;
	text	   *shard_t;
	char	   *directory;
	char	   *shard;
	char	   *schema;
	char	   *slot_name;
	char	   *where;
	PGconn	   *conn;
	volatile bool has_slot = false;

	chash_require_args(fcinfo, "conninfo", "directory", "shard", "schema", "slot_name", NULL);
	conninfo = text_to_cstring(PG_GETARG_TEXT_PP(0));
	directory_t = PG_GETARG_TEXT_PP(1);
	shard_t = PG_GETARG_TEXT_PP(2);
	directory = text_to_cstring(directory_t);
	shard = text_to_cstring(shard_t);
	schema = text_to_cstring(PG_GETARG_TEXT_PP(3));
	slot_name = text_to_cstring(PG_GETARG_TEXT_PP(4));
	where = conninfo_display(conninfo);

	chash_require_superuser("join a directory");
	conn = remote_connect(conninfo, remote_peer, 0);
	PG_TRY();
	{
		PGresult   *res;
		const char *p1[1];
		const char *p2[2];
		const char *qschema;
		char	   *query;
		bool		directory_there;
		bool		shard_there;

		res = remote_query(conn, remote_peer, conninfo,
						   "SELECT n.nspname FROM pg_catalog.pg_extension e "
						   "JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace "
						   "WHERE e.extname = 'chash'", 0, NULL);
		if (PQntuples(res) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("extension chash is not installed on the directory database \"%s\"", where)));
		if (strcmp(PQgetvalue(res, 0, 0), schema) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("extension chash is in schema \"%s\" on the directory database but in schema \"%s\" here",
							PQgetvalue(res, 0, 0), schema),
					 errdetail("Logical replication matches tables by schema-qualified name.")));
		PQclear(res);

		p1[0] = schema;
		res = remote_query(conn, remote_peer, conninfo,
						   "SELECT count(*) FROM pg_catalog.pg_publication_tables "
						   "WHERE pubname = '" PUBLICATION_NAME "' AND schemaname = $1 AND tablename IN "
						   "('chash_directory', 'chash_shard', 'chash_slot', 'chash_override', "
						   "'chash_migration', 'chash_migration_step', 'chash_table')", 1, p1);
		if (strcmp(PQgetvalue(res, 0, 0), "7") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the directory database \"%s\" does not publish the directory tables", where),
					 errhint("Run SELECT chash_directory_publish() there once, as a superuser.")));
		PQclear(res);

		/* the directory there, and the shard in it: one round trip */
		qschema = quote_identifier(schema);
		p2[0] = directory;
		p2[1] = shard;
		query = psprintf("SELECT EXISTS (SELECT FROM %s.chash_directory WHERE name = $1), "
						 "       EXISTS (SELECT FROM %s.chash_shard WHERE directory = $1 AND shard = $2)",
						 qschema, qschema);
		res = remote_query(conn, remote_peer, conninfo, query, 2, p2);
		directory_there = PQgetvalue(res, 0, 0)[0] == 't';
		shard_there = PQgetvalue(res, 0, 1)[0] == 't';
		PQclear(res);
		if (!directory_there)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("directory \"%.*s\" does not exist on the directory database \"%s\"",
							chash_quote_len(directory, strlen(directory)), directory, where)));
		if (!shard_there)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("shard \"%.*s\" does not exist in directory \"%.*s\"",
							chash_quote_len(shard, strlen(shard)), shard,
							chash_quote_len(directory, strlen(directory)), directory),
					 errhint("Add it on the directory database with chash_add_shard() first.")));

		p1[0] = slot_name;
		res = remote_query(conn, remote_peer, conninfo,
						   "SELECT 1 FROM pg_catalog.pg_replication_slots "
						   "WHERE slot_name = $1 AND database = pg_catalog.current_database()", 1, p1);
		has_slot = PQntuples(res) > 0;
		PQclear(res);
	}
	PG_FINALLY();
	{
		PQfinish(conn);
	}
	PG_END_TRY();
	PG_RETURN_BOOL(has_slot);
}


/*
 * chash_shard_create_subscription(name, conninfo, slot_name) -> void: the
 * subscription to the directory tables, on the slot made above.  Run here
 * rather than in plpgsql so that an error cannot quote the statement, with
 * its connection string, in its context.
 */
Datum
chash_shard_create_subscription(PG_FUNCTION_ARGS)
{
	char	   *name;
	char	   *conninfo;
	char	   *slot_name;
	char	   *command;
	bool		copy_data;
	MemoryContext caller = CurrentMemoryContext;

	chash_require_args(fcinfo, "name", "conninfo", "slot_name", NULL);
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	conninfo = text_to_cstring(PG_GETARG_TEXT_PP(1));
	slot_name = text_to_cstring(PG_GETARG_TEXT_PP(2));

	chash_require_superuser("join a directory");
	/* copy_data (the 1.2 signature's fourth argument): false when re-pointing */
	if (PG_NARGS() >= 4 && PG_ARGISNULL(3))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("copy_data must not be null")));
	copy_data = PG_NARGS() < 4 || PG_GETARG_BOOL(3);
	/*
	 * synchronous_commit = on: the slot then never confirms a change that a
	 * synchronous standby of this shard lacks, so a promoted standby's
	 * replica has no gap (docs/shards.md, "Failover").
	 */
	command = psprintf("CREATE SUBSCRIPTION %s CONNECTION %s PUBLICATION " PUBLICATION_NAME
					   " WITH (create_slot = false, slot_name = %s, copy_data = %s, enabled = true,"
					   " synchronous_commit = on)",
					   quote_identifier(name), quote_literal_cstr(conninfo),
					   quote_literal_cstr(slot_name), copy_data ? "true" : "false");
	PG_TRY();
	{
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		if (SPI_execute(command, false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "CREATE SUBSCRIPTION failed");
		SPI_finish();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(caller);
		edata = CopyErrorData();
		FlushErrorState();
		/* The context and the internal query would show the password. */
		edata->context = NULL;
		edata->internalquery = NULL;
		edata->internalpos = 0;
		edata->cursorpos = 0;
		if (edata->detail == NULL)
			edata->detail = psprintf("The directory database is \"%s\".", conninfo_display(conninfo));
		ReThrowError(edata);
	}
	PG_END_TRY();
	PG_RETURN_VOID();
}

/* ---- failover (docs/shards.md, "Failover") ---- */

/* IDENTIFY_SYSTEM: "system identifier" and timeline of the server. */
static void
identify_system(PGconn *repl, const char *conninfo, char **sysid, int *timeline)
{
	PGresult   *res = remote_command(repl, remote_peer, conninfo, "IDENTIFY_SYSTEM");

	*sysid = pstrdup(PQgetvalue(res, 0, 0));
	*timeline = atoi(PQgetvalue(res, 0, 1));
	PQclear(res);
}

/*
 * The directory tables (and, on a shard, what its failover state says) as
 * one json object of arrays, read in the connection's transaction.
 */
static char *
read_directory_tables(PGconn *conn, const char *conninfo, const char *schema, bool verdict)
{
	static const char *const tables[] = {
		"chash_directory", "chash_shard", "chash_slot", "chash_override", "chash_migration",
		"chash_migration_step", "chash_table", "chash_directory_change"
	};
	StringInfoData q;
	PGresult   *res;
	char	   *json;
	const char *qschema = quote_identifier(schema);

	initStringInfo(&q);
	appendStringInfoString(&q, "SELECT pg_catalog.json_build_object(");
	for (int i = 0; i < lengthof(tables); i++)
		appendStringInfo(&q, "'%s', (SELECT coalesce(pg_catalog.json_agg(t), '[]') FROM %s.%s t), ",
						 tables[i], qschema, tables[i]);
	/* a shard's own verdict on its replica: reconcile does not copy a diverged one */
	if (verdict)
		appendStringInfo(&q, "'diverged', (SELECT pg_catalog.string_agg(o.diverged, ' ') FROM %s.chash_shard_origin o "
						 "JOIN %s.chash_shard_member m ON m.subscription = o.subscription))::text",
						 qschema, qschema);
	else
		appendStringInfoString(&q, "'diverged', NULL)::text");
	res = remote_query(conn, remote_peer, conninfo, q.data, 0, NULL);
	json = pstrdup(PQgetvalue(res, 0, 0));
	PQclear(res);
	return json;
}

static Datum
jsonb_from_cstring(const char *s)
{
	return DirectFunctionCall1(jsonb_in, CStringGetDatum(s));
}

/*
 * chash_shard_directory_identity(conninfo) -> (system_identifier numeric,
 * timeline int): who the directory database is (IDENTIFY_SYSTEM over a
 * replication connection: the role needs REPLICATION, as for the slot).
 */
Datum
chash_shard_directory_identity(PG_FUNCTION_ARGS)
{
	char	   *conninfo;
	PGconn	   *conn;
	char	   *sysid = NULL;
	int			timeline = 0;
	TupleDesc	tupdesc;
	Datum		values[2];
	bool		nulls[2] = {false, false};

	chash_require_args(fcinfo, "conninfo", NULL);
	conninfo = text_to_cstring(PG_GETARG_TEXT_PP(0));
	chash_require_superuser("join a directory");
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	conn = remote_connect_as(conninfo, remote_peer, true, 0);
	PG_TRY();
	{
		identify_system(conn, conninfo, &sysid, &timeline);
	}
	PG_FINALLY();
	{
		PQfinish(conn);
	}
	PG_END_TRY();
	values[0] = DirectFunctionCall3(numeric_in, CStringGetDatum(sysid), ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
	values[1] = Int32GetDatum(timeline);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

/*
 * chash_shard_slot_snapshot(conninfo, slot_name, schema) -> jsonb: creates
 * this database's slot on the directory database (dropped again if this
 * transaction aborts) and reads the directory tables in the snapshot the
 * slot exported, so that the slot streams exactly what came after them:
 * {"system_identifier", "timeline", "consistent_point", "tables": {...}}.
 */
Datum
chash_shard_slot_snapshot(PG_FUNCTION_ARGS)
{
	char	   *conninfo;
	char	   *slot_name;
	char	   *schema;
	PGconn	   *volatile repl = NULL;
	PGconn	   *volatile conn = NULL;
	StringInfoData out;

	chash_require_args(fcinfo, "conninfo", "slot_name", "schema", NULL);
	conninfo = text_to_cstring(PG_GETARG_TEXT_PP(0));
	slot_name = text_to_cstring(PG_GETARG_TEXT_PP(1));
	schema = text_to_cstring(PG_GETARG_TEXT_PP(2));
	chash_require_superuser("re-point a shard");
	initStringInfo(&out);
	PG_TRY();
	{
		char	   *sysid;
		int			timeline;
		PGresult   *res;
		char	   *snapshot;
		char	   *tables;

		repl = remote_connect_as(conninfo, remote_peer, true, 0);
		identify_system(repl, conninfo, &sysid, &timeline);
		res = remote_command(repl, remote_peer, conninfo,
							 psprintf("CREATE_REPLICATION_SLOT %s LOGICAL pgoutput (SNAPSHOT 'export')",
									  quote_identifier(slot_name)));
		slot_drop_on_abort(conninfo, slot_name);
		appendStringInfo(&out, "{\"system_identifier\": \"%s\", \"timeline\": %d, \"consistent_point\": \"%s\", \"tables\": ",
						 sysid, timeline, PQgetvalue(res, 0, 1));
		snapshot = pstrdup(PQgetvalue(res, 0, 2));
		PQclear(res);

		/* the snapshot lives while repl stays idle: import it at once */
		conn = remote_connect(conninfo, remote_peer, 0);
		PQclear(remote_query(conn, remote_peer, conninfo, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL));
		PQclear(remote_query(conn, remote_peer, conninfo,
							 psprintf("SET TRANSACTION SNAPSHOT %s", quote_literal_cstr(snapshot)), 0, NULL));
		tables = read_directory_tables(conn, conninfo, schema, false);
		PQclear(remote_query(conn, remote_peer, conninfo, "COMMIT", 0, NULL));
		appendStringInfo(&out, "%s}", tables);
	}
	PG_FINALLY();
	{
		PQfinish(conn);
		PQfinish(repl);
	}
	PG_END_TRY();
	PG_RETURN_DATUM(jsonb_from_cstring(out.data));
}

/*
 * chash_directory_read_replica(conninfo, schema) -> jsonb: on the directory
 * database, a shard's replica of the directory tables, read in one
 * snapshot there (chash_directory_reconcile).
 */
Datum
chash_directory_read_replica(PG_FUNCTION_ARGS)
{
	char	   *conninfo;
	char	   *schema;
	PGconn	   *volatile conn;
	char	   *volatile tables = NULL;

	chash_require_args(fcinfo, "conninfo", "schema", NULL);
	conninfo = text_to_cstring(PG_GETARG_TEXT_PP(0));
	schema = text_to_cstring(PG_GETARG_TEXT_PP(1));
	chash_require_superuser("reconcile a directory");
	remote_peer = "the shard";
	conn = NULL;
	PG_TRY();
	{
		conn = remote_connect(conninfo, remote_peer, 0);
		PQclear(remote_query(conn, remote_peer, conninfo, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL));
		tables = psprintf("{\"tables\": %s}", read_directory_tables(conn, conninfo, schema, true));
		PQclear(remote_query(conn, remote_peer, conninfo, "COMMIT", 0, NULL));
	}
	PG_FINALLY();
	{
		PQfinish(conn);
		remote_peer = "the directory database";
	}
	PG_END_TRY();
	PG_RETURN_DATUM(jsonb_from_cstring(tables));
}
