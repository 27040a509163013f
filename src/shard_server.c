/*
 * shard_server.c - chash_shard.server holds no password (docs/directory.md,
 * "Shard servers")
 *
 * The server of a shard is read by every role that reads the directory
 * (chash_directory_snapshot), replicated to every shard, and handed to the
 * target's subscription by an online move: a password there is in
 * everybody's hands.  chash_shard_server_check, a BEFORE INSERT OR UPDATE
 * row trigger on chash_shard, refuses one (the functions and direct DML
 * alike); chash_server_has_password lets the 1.1 -> 1.2 upgrade find rows
 * that already hold one.  A password is what libpq would take as one:
 * password=... in key=value form or in a URI's query, or user:password@
 * in a URI.
 */
#include "chash.h"

#include "commands/trigger.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/rel.h"

#include "libpq-fe.h"

PG_FUNCTION_INFO_V1(chash_shard_server_check);
PG_FUNCTION_INFO_V1(chash_server_has_password);

/*
 * Whether libpq would find a password in the conninfo.  A string libpq
 * cannot parse is not a connection string it would use; but an invalid
 * URI (an unknown option, say) may still carry user:password@, so that is
 * refused too.
 */
static bool
server_has_password(const char *server)
{
	PQconninfoOption *opts = PQconninfoParse(server, NULL);
	bool		found = false;

	if (opts != NULL)
	{
		for (PQconninfoOption *o = opts; o->keyword != NULL; o++)
			if (strcmp(o->keyword, "password") == 0 && o->val != NULL && o->val[0] != '\0')
				found = true;
		PQconninfoFree(opts);
		return found;
	}
	if (strncmp(server, "postgresql://", 13) == 0 || strncmp(server, "postgres://", 11) == 0)
	{
		const char *authority = strstr(server, "://") + 3;
		size_t		len = strcspn(authority, "/?");
		const char *at = memchr(authority, '@', len);

		if (at != NULL && memchr(authority, ':', at - authority) != NULL)
			return true;
		if (strstr(authority + len, "password=") != NULL)
			return true;
	}
	return false;
}

static void
refuse_password(const char *directory, const char *shard)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("the server of shard \"%.*s\" of directory \"%.*s\" contains a password",
					chash_quote_len(shard, strlen(shard)), shard,
					chash_quote_len(directory, strlen(directory)), directory),
			 errdetail("Every role that reads the directory, every shard and the target of an online move can read chash_shard.server."),
			 errhint("Leave the password out and put it in the .pgpass file of the role that connects (PGPASSFILE), or use another authentication method.")));
}

/* BEFORE INSERT OR UPDATE OF server ON chash_shard FOR EACH ROW */
Datum
chash_shard_server_check(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	HeapTuple	row;
	TupleDesc	desc;
	char	   *server;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BEFORE(td->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(td->tg_event) || TRIGGER_FIRED_BY_DELETE(td->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("chash_shard_server_check must be fired before each inserted or updated row")));
	row = TRIGGER_FIRED_BY_UPDATE(td->tg_event) ? td->tg_newtuple : td->tg_trigtuple;
	desc = RelationGetDescr(td->tg_relation);
	server = SPI_getvalue(row, desc, SPI_fnumber(desc, "server"));
	if (server != NULL && server_has_password(server))
		refuse_password(SPI_getvalue(row, desc, SPI_fnumber(desc, "directory")),
						SPI_getvalue(row, desc, SPI_fnumber(desc, "shard")));
	return PointerGetDatum(row);
}

/* chash_server_has_password(server text) -> boolean */
Datum
chash_server_has_password(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(server_has_password(text_to_cstring(PG_GETARG_TEXT_PP(0))));
}
