/*
 * shard_failover.c - a shard that cannot vouch for its replica of the
 * directory refuses guarded writes (docs/shards.md, "Failover")
 *
 * Whether the replica can be vouched for is a question about rare events:
 * a divergence the replica's triggers recorded (a version that went back
 * or came again), a subscription disabled or dropped, an apply worker
 * that has not heard from the directory database for longer than
 * chash.replica_max_silence.  chash_shard_refusal_reason (SQL, in
 * 70_failover_state.sql) answers it, with the refusal's SQLSTATE (SH002:
 * until a DBA mends it, SH003: until the replica follows again); the
 * guard asks it again only once a second or after a relation cache
 * invalidation, never per row.
 */
#include "chash.h"

#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "shard_failover.h"

PG_FUNCTION_INFO_V1(chash_shard_refusal);
PG_FUNCTION_INFO_V1(chash_shard_refusal_code);

bool		chash_fail_closed = true;
int			chash_replica_max_silence = 0;

/* How long an answer is kept when nothing is invalidated (microseconds). */
#define REFUSAL_RECHECK_US 1000000

/* The answer for one directory, per session. */
typedef struct RefusalState
{
	struct RefusalState *next;
	char	   *directory;
	TimestampTz checked_at;
	uint64		checked_epoch;
	char	   *refusal;		/* NULL: the replica can be vouched for */
	char		code[6];		/* its SQLSTATE: SH002 lasting, SH003 transient */
} RefusalState;

static RefusalState *states = NULL;
static uint64 invalidation_epoch = 1;
static bool callback_registered = false;

/* Any relation's invalidation may be the replica's: ask again. */
static void
refusal_invalidate(Datum arg, Oid relid)
{
	invalidation_epoch++;
}

/*
 * Why the replica of the directory cannot be vouched for here, or NULL,
 * and into code the refusal's SQLSTATE (empty with NULL):
 * chash_shard_refusal_reason run through SPI as the bootstrap superuser
 * (the replica's state is not the writer's to read).
 */
static char *
refusal_reason(const char *directory, MemoryContext into, char code[6])
{
	Oid			argtypes[2] = {TEXTOID, INT4OID};
	Datum		values[2];
	Oid			save_user;
	int			save_sec;
	int			level;
	char	   *result = NULL;
	bool		isnull;

	code[0] = '\0';

	values[0] = CStringGetTextDatum(directory);
	values[1] = Int32GetDatum(chash_replica_max_silence);
	GetUserIdAndSecContext(&save_user, &save_sec);
	SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID, save_sec | SECURITY_LOCAL_USERID_CHANGE);
	level = chash_pin_search_path();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute("SELECT n.nspname FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n "
					"ON n.oid = e.extnamespace WHERE e.extname = 'chash'", true, 1) != SPI_OK_SELECT)
		elog(ERROR, "reading the schema of chash failed");
	if (SPI_processed == 1)
	{
		char	   *query = psprintf("SELECT code, reason FROM %s.chash_shard_refusal_reason($1, $2)",
									 quote_identifier(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1)));

		if (SPI_execute_with_args(query, 2, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
			elog(ERROR, "chash_shard_refusal_reason failed");
		if (SPI_processed == 1)
		{
			Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);

			if (!isnull)
			{
				char	   *c = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

				result = MemoryContextStrdup(into, TextDatumGetCString(d));
				strlcpy(code, c && strlen(c) == 5 ? c : "SH002", 6);
			}
		}
	}
	SPI_finish();
	AtEOXact_GUC(true, level);
	SetUserIdAndSecContext(save_user, save_sec);
	return result;
}

void
failover_check_write(text *directory, const char *shard, int shard_len,
					 const char *tenant, size_t len)
{
	RefusalState *s;
	TimestampTz now;
	int			dlen = VARSIZE_ANY_EXHDR(directory);

	if (!chash_fail_closed)
		return;
	for (s = states; s; s = s->next)
		if (strlen(s->directory) == dlen && memcmp(s->directory, VARDATA_ANY(directory), dlen) == 0)
			break;
	if (s == NULL)
	{
		if (!callback_registered)
		{
			CacheRegisterRelcacheCallback(refusal_invalidate, (Datum) 0);
			callback_registered = true;
		}
		s = MemoryContextAllocZero(TopMemoryContext, sizeof(RefusalState));
		s->directory = MemoryContextStrdup(TopMemoryContext, text_to_cstring(directory));
		s->next = states;
		states = s;
	}
	now = GetCurrentTimestamp();
	if (s->checked_epoch != invalidation_epoch || now - s->checked_at >= REFUSAL_RECHECK_US)
	{
		char	   *reason = refusal_reason(s->directory, TopMemoryContext, s->code);

		if (s->refusal)
			pfree(s->refusal);
		s->refusal = reason;
		s->checked_at = now;
		s->checked_epoch = invalidation_epoch;
	}
	if (s->refusal)
		ereport(ERROR,
				(errcode(strcmp(s->code, "SH003") == 0 ? ERRCODE_CHASH_CANNOT_FOLLOW : ERRCODE_CHASH_CANNOT_VOUCH),
				 errmsg("shard \"%.*s\" cannot vouch for tenant \"%.*s\" of directory \"%.*s\"",
						chash_quote_len(shard, shard_len), shard,
						chash_quote_len(tenant, len), tenant,
						chash_quote_len(s->directory, dlen), s->directory),
				 errdetail("%s", s->refusal),
				 errhint("See chash_shard_status; after a failover of the directory database run chash_directory_reconcile() there and chash_shard_repoint() here.")));
}

/*
 * chash_shard_refusal(directory text) -> text: why this shard's replica of
 * the directory cannot be vouched for (NULL: it can), whatever
 * chash.fail_closed says.  For chash_shard_status.
 */
Datum
chash_shard_refusal(PG_FUNCTION_ARGS)
{
	char		code[6];
	char	   *reason = refusal_reason(text_to_cstring(PG_GETARG_TEXT_PP(0)), CurrentMemoryContext, code);

	if (reason == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(reason));
}

/*
 * chash_shard_refusal_code(directory text) -> text: the SQLSTATE the guard
 * refuses writes with while chash_shard_refusal gives a reason: SH002 when
 * it lasts until a DBA mends the replica, SH003 when it ends once the
 * replica follows again (NULL: no refusal).  chash_move decides on it.
 */
Datum
chash_shard_refusal_code(PG_FUNCTION_ARGS)
{
	char		code[6];

	if (refusal_reason(text_to_cstring(PG_GETARG_TEXT_PP(0)), CurrentMemoryContext, code) == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(code));
}
