/*
 * conninfo.c - a connection string as messages may show it: host, port
 * and database only, never a password (docs/shards.md, "Joining a shard")
 *
 * Every message that names another server goes through conninfo_display;
 * chash_conninfo_display is its SQL face, for the plpgsql of the shard
 * join and failover.
 */
#include "chash.h"

#include "lib/stringinfo.h"
#include "utils/builtins.h"

#include "libpq-fe.h"

#include "conninfo.h"

PG_FUNCTION_INFO_V1(chash_conninfo_display);

char *
conninfo_display(const char *conninfo)
{
	static const char *const shown[] = {"host", "hostaddr", "port", "dbname"};
	PQconninfoOption *opts;
	StringInfoData buf;

	opts = PQconninfoParse(conninfo, NULL);
	if (opts == NULL)
		return pstrdup("(invalid connection string)");
	initStringInfo(&buf);
	for (int k = 0; k < lengthof(shown); k++)
	{
		for (PQconninfoOption *o = opts; o->keyword != NULL; o++)
		{
			if (strcmp(o->keyword, shown[k]) != 0 || o->val == NULL || o->val[0] == '\0')
				continue;
			if (buf.len > 0)
				appendStringInfoChar(&buf, ' ');
			appendStringInfo(&buf, "%s=%s", o->keyword, o->val);
		}
	}
	PQconninfoFree(opts);
	if (buf.len == 0)
		appendStringInfoString(&buf, "(defaults)");
	return buf.data;
}

/* chash_conninfo_display(conninfo text) -> text: without the password. */
Datum
chash_conninfo_display(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(cstring_to_text(conninfo_display(text_to_cstring(PG_GETARG_TEXT_PP(0)))));
}
