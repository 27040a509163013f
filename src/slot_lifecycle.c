/*
 * slot_lifecycle.c - replication slots on the directory database that
 * follow the local transaction (docs/shards.md, "Joining a shard")
 *
 * CREATE SUBSCRIPTION and DROP SUBSCRIPTION may create or drop their slot
 * only outside a transaction block, so chash_shard_join and
 * chash_shard_leave do it here through libpq.  A slot is not
 * transactional, so it follows the transaction that made the change: a
 * slot created here is dropped again when its (sub)transaction aborts,
 * and a slot to drop is dropped just before the transaction commits (an
 * error there aborts the commit, so the local catalog and the directory
 * database never disagree about it).
 */
#include "chash.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/wait_event.h"

#include "remote.h"
#include "slot_lifecycle.h"

PG_FUNCTION_INFO_V1(chash_shard_create_slot);
PG_FUNCTION_INFO_V1(chash_shard_drop_slot);

typedef enum SlotAction
{
	DROP_ON_ABORT,				/* created by this (sub)transaction */
	DROP_AT_COMMIT				/* to drop once this transaction commits */
} SlotAction;

typedef struct PendingSlot
{
	SlotAction	action;
	int			nest_level;
	char	   *conninfo;
	RemoteParams params;		/* checked when remembered: abort processing cannot */
	char	   *slot_name;
	struct PendingSlot *next;
} PendingSlot;

static PendingSlot *pending = NULL;
static bool callbacks_registered = false;

/*
 * Drops a slot on the directory database.  A slot that is still active
 * (its walsender has not noticed that the subscription stopped) is retried
 * for up to 30 s; a slot that does not exist is fine.  Returns NULL on
 * success, else the server's message.  With interruptible false (abort
 * processing) it blocks, bounded by connect_timeout.
 */
static char *
drop_remote_slot(PendingSlot *p, bool interruptible, bool *unreachable)
{
	const char *conninfo = p->conninfo;
	const char *slot_name = p->slot_name;
	const char *query = "SELECT pg_catalog.pg_drop_replication_slot(slot_name) "
		"FROM pg_catalog.pg_replication_slots WHERE slot_name = $1";
	const char *params[1] = {slot_name};
	PGconn	   *conn;
	char	   *volatile error = NULL;

	*unreachable = false;
	if (interruptible)
	{
		conn = remote_try_connect(conninfo, "the directory database", false, 0, (char **) &error);
		if (conn == NULL)
		{
			*unreachable = true;
			return error;
		}
	}
	else
	{
		const char *keys[REMOTE_MAX_PARAMS + 1];
		const char *vals[REMOTE_MAX_PARAMS + 1];
		int			n = 0;

		for (; p->params.keys[n] != NULL; n++)
		{
			keys[n] = p->params.keys[n];
			vals[n] = p->params.vals[n];
		}
		keys[n] = "connect_timeout";
		vals[n++] = "10";
		keys[n] = vals[n] = NULL;
		conn = PQconnectdbParams(keys, vals, true);
		if (conn == NULL || PQstatus(conn) != CONNECTION_OK)
		{
			error = conn ? remote_message(conn, NULL) : pstrdup("out of memory");
			PQfinish(conn);
			return error;
		}
		error = remote_password_refusal(conn, &p->params);
		if (error)
		{
			PQfinish(conn);
			return error;
		}
	}
	PG_TRY();
	{
		for (int attempt = 0;; attempt++)
		{
			PGresult   *res;
			const char *state;

			res = interruptible ? remote_exec(conn, query, 1, params, 0)
				: PQexecParams(conn, query, 1, NULL, params, NULL, NULL, 0);
			if (res && PQresultStatus(res) == PGRES_TUPLES_OK)
			{
				PQclear(res);
				break;
			}
			state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
			if (state && strcmp(state, "55006") == 0 && attempt < 300)
			{
				PQclear(res);
				if (interruptible)
				{
					(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
									 100L, PG_WAIT_EXTENSION);
					ResetLatch(MyLatch);
					CHECK_FOR_INTERRUPTS();
				}
				else
					pg_usleep(100000L);
				continue;
			}
			error = remote_message(conn, res);
			PQclear(res);
			break;
		}
	}
	PG_FINALLY();
	{
		PQfinish(conn);
	}
	PG_END_TRY();
	return error;
}

/* A slot that could not be dropped: where it is left and what to do. */
static void
report_slot_left(int elevel, int sqlstate, PendingSlot *p, const char *detail, const char *hint)
{
	ereport(elevel,
			(errcode(sqlstate),
			 errmsg("could not drop replication slot \"%s\" on the directory database \"%s\"",
					p->slot_name, conninfo_display(p->conninfo)),
			 errdetail_internal("%s", detail),
			 errhint("%s", hint)));
}

static void
forget(PendingSlot **link)
{
	PendingSlot *p = *link;

	*link = p->next;
	pfree(p->params.role);
	pfree(p->params.conninfo);
	pfree(p->conninfo);
	pfree(p->slot_name);
	pfree(p);
}

/* Drops the slots created at nest level >= level (all when level is 0). */
static void
drop_created_slots(int level)
{
	PendingSlot **link = &pending;

	while (*link)
	{
		PendingSlot *p = *link;

		if (p->nest_level >= level)
		{
			if (p->action == DROP_ON_ABORT)
			{
				bool		unreachable;
				char	   *error = drop_remote_slot(p, false, &unreachable);

				if (error)
					report_slot_left(WARNING, ERRCODE_WARNING, p, error,
									 psprintf("Drop it there with pg_drop_replication_slot('%s').",
											  p->slot_name));
			}
			forget(link);
		}
		else
			link = &p->next;
	}
}

static void
slot_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			/* Errors here abort the transaction, which then drops what it created. */
			for (PendingSlot *p = pending; p; p = p->next)
			{
				char	   *error;
				bool		unreachable;

				if (p->action != DROP_AT_COMMIT)
					continue;
				error = drop_remote_slot(p, true, &unreachable);
				/* a directory server that is gone (failed over) leaves its slot behind */
				if (error && unreachable)
					report_slot_left(WARNING, ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION, p,
									 psprintf("The directory database cannot be reached: %s", error),
									 psprintf("If that server comes back, drop the slot there with pg_drop_replication_slot('%s').",
											  p->slot_name));
				else if (error)
					report_slot_left(ERROR, ERRCODE_OBJECT_IN_USE, p, error,
									 psprintf("Make the directory database reachable, or drop the slot there with pg_drop_replication_slot('%s') and retry.",
											  p->slot_name));
			}
			break;
		case XACT_EVENT_PRE_PREPARE:
			/* A prepared transaction could still abort after its slot work. */
			if (pending)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot prepare a transaction that joined or left a directory")));
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			while (pending)
				forget(&pending);
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			drop_created_slots(0);
			break;
		default:
			break;
	}
}

static void
slot_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					  SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();

	if (event == SUBXACT_EVENT_ABORT_SUB)
		drop_created_slots(level);
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		for (PendingSlot *p = pending; p; p = p->next)
			if (p->nest_level >= level)
				p->nest_level = level - 1;
	}
}

static void
remember(SlotAction action, const char *conninfo, const char *slot_name)
{
	PendingSlot *p;
	MemoryContext old;

	if (!callbacks_registered)
	{
		RegisterXactCallback(slot_xact_callback, NULL);
		RegisterSubXactCallback(slot_subxact_callback, NULL);
		callbacks_registered = true;
	}
	p = MemoryContextAllocZero(TopMemoryContext, sizeof(PendingSlot));
	old = MemoryContextSwitchTo(TopMemoryContext);
	remote_params(conninfo, "the directory database", false, &p->params);
	MemoryContextSwitchTo(old);
	p->action = action;
	p->nest_level = GetCurrentTransactionNestLevel();
	p->conninfo = MemoryContextStrdup(TopMemoryContext, conninfo);
	p->slot_name = MemoryContextStrdup(TopMemoryContext, slot_name);
	p->next = pending;
	pending = p;
}

/*
 * chash_shard_create_slot(conninfo, slot_name) -> void: a logical slot for
 * pgoutput on the directory database, dropped again if this
 * (sub)transaction aborts.
 */
Datum
chash_shard_create_slot(PG_FUNCTION_ARGS)
{
	char	   *conninfo;
	char	   *slot_name;
	PGconn	   *conn;

	chash_require_args(fcinfo, "conninfo", "slot_name", NULL);
	conninfo = text_to_cstring(PG_GETARG_TEXT_PP(0));
	slot_name = text_to_cstring(PG_GETARG_TEXT_PP(1));

	chash_require_superuser("join a directory");
	conn = remote_connect(conninfo, "the directory database", 0);
	PG_TRY();
	{
		const char *params[1] = {slot_name};
		PGresult   *res;

		res = remote_exec(conn, "SELECT pg_catalog.pg_create_logical_replication_slot($1, 'pgoutput')",
						  1, params, 0);
		if (res == NULL || PQresultStatus(res) != PGRES_TUPLES_OK)
			remote_report_failure(conn, res,
								  psprintf("could not create replication slot \"%s\" on the directory database \"%s\"",
										   slot_name, conninfo_display(conninfo)),
								  "The directory database needs wal_level = logical and a free replication slot, and the connecting role the REPLICATION attribute.");
		PQclear(res);
		remember(DROP_ON_ABORT, conninfo, slot_name);
	}
	PG_FINALLY();
	{
		PQfinish(conn);
	}
	PG_END_TRY();
	PG_RETURN_VOID();
}

/*
 * chash_shard_drop_slot(conninfo, slot_name) -> void: drops the slot on the
 * directory database when this transaction commits.
 */
Datum
chash_shard_drop_slot(PG_FUNCTION_ARGS)
{
	chash_require_args(fcinfo, "conninfo", "slot_name", NULL);
	chash_require_superuser("leave a directory");
	remember(DROP_AT_COMMIT, text_to_cstring(PG_GETARG_TEXT_PP(0)),
			 text_to_cstring(PG_GETARG_TEXT_PP(1)));
	PG_RETURN_VOID();
}
void
slot_drop_on_abort(const char *conninfo, const char *slot_name)
{
	remember(DROP_ON_ABORT, conninfo, slot_name);
}
