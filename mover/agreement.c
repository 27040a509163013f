/*
 * Whether a shard agrees with the directory database (docs/shards.md,
 * "Failover"): its replica's position and refusal, the check of a batch's
 * steps on both sides (shard_agrees), before every delete of a batch's
 * rows on both of its shards (shards_agree) and, once per process, before
 * the first claim (directory_current; later claims check only that the
 * directory database is still the same server).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chash_move.h"

/*
 * The directory database's server (system identifier:timeline) at this
 * run's first agreement check: it must stay the same for the whole run,
 * across batches and reconnections (a connection string that now leads
 * to a promoted standby), not only within a batch.
 */
static pthread_mutex_t run_identity_lock = PTHREAD_MUTEX_INITIALIZER;
static char run_identity[80];

static const char *failover_hint =
"If the directory database was replaced by its standby, run CALL chash_directory_recover('<the connection string "
"the shards use to reach it>') there (docs/shards.md, \"Failover\"), then chash_move again.";

/*
 * The shard's replica of the directory: its version (-1: none), its
 * refusal (malloc'd; NULL when it can vouch for it, or has no
 * chash_shard_refusal), and whether that refusal lasts until a DBA mends
 * the replica: its SQLSTATE is SH002 (chash_shard_refusal_code; SH003, a
 * partition, disabled, silent, is waited out within a bound).  False, with
 * the error said, when it cannot be read.
 */
bool
replica_position(Server *server, long long *version, char **refusal, bool *lasting)
{
	const char *params[1] = {migration.directory};
	char	   *why = server->has_refusal
		? format_text("%1$s.chash_shard_refusal($1), %1$s.chash_shard_refusal_code($1)", server->schema)
		: format_text("NULL::pg_catalog.text, NULL::pg_catalog.text");
	PGresult   *res = query_owned(server, format_text("SELECT (SELECT d.version FROM %s.chash_directory d WHERE d.name = $1), %s",
											   server->schema, why), 1, params);

	free(why);
	if (res == NULL)
		return false;
	*version = PQgetisnull(res, 0, 0) ? -1 : atoll(PQgetvalue(res, 0, 0));
	*refusal = PQgetisnull(res, 0, 1) ? NULL : format_text("%s", PQgetvalue(res, 0, 1));
	*lasting = *refusal != NULL && strcmp(PQgetvalue(res, 0, 2), "SH003") != 0;
	PQclear(res);
	return true;
}

/*
 * Whether the shard agrees with the directory database about the batch
 * (NULL: only about the directory's version), read now: the shard first,
 * then the directory (inside the caller's transaction there, if it holds
 * one), so a version the shard applied meanwhile cannot look like one the
 * directory lacks.  A replica may lag behind the directory; it must never
 * be ahead of it: a version above the directory's, a step done where the
 * directory says otherwise, or cancelled where it does not, or at the
 * directory's own version a step further on (fenced where the directory
 * says pending or copying).  Below the directory's version a replica may
 * show a step further on than the directory: a step given back (fenced,
 * then pending again) on a version it has not applied yet.  Nor may the
 * directory database become another server (its system identifier and
 * timeline as at this run's first check, and as *identity says, recorded
 * on the batch's first call when empty), nor
 * may the shard's replica have met another history.  On a disagreement
 * the error names it, with each side's word, and config_error stops the
 * mover: nothing is deleted, nothing given back.  False also when a query
 * failed (said, config_error untouched).
 */
bool
shard_agrees(Server *dir, Server *shard, const Batch *batch, char *identity, size_t identity_size)
{
	char	   *id = format_text("%lld", migration.id);
	char	   *dir_version = NULL;
	char	   *version_text = NULL;
	char	   *agree_sql = NULL;
	const char *params[5] = {migration.directory, id, "{}", "{}", NULL};
	char	   *which = batch ? batch_describe(batch) : format_text("the next claim");
	long long	version;
	char	   *refusal = NULL;
	char	   *was = NULL;
	bool		lasting = false;
	PGresult   *rs = NULL,
			   *rd = NULL;
	bool		ok = false;

	if (!replica_position(shard, &version, &refusal, &lasting))
		goto out;
	version_text = format_text("%lld", version);
	params[4] = version_text;
	if (batch != NULL)
	{
		const char *sp[2] = {id, batch->step_list};

		rs = query_owned(shard, format_text("SELECT pg_catalog.array_agg(s.step ORDER BY s.step)::pg_catalog.text, "
									  "       pg_catalog.array_agg(s.state ORDER BY s.step)::pg_catalog.text "
									  "  FROM %s.chash_migration_step s WHERE s.migration = $1 AND s.step = ANY ($2::pg_catalog.int4[])",
									  shard->schema), 2, sp);
		if (rs == NULL)
			goto out;
		if (!PQgetisnull(rs, 0, 0))
		{
			params[2] = PQgetvalue(rs, 0, 0);
			params[3] = PQgetvalue(rs, 0, 1);
		}
	}
	/*
	 * A commit reaches the shards' replicas (its WAL is flushed and sent,
	 * and a synchronous subscriber's wait ends) a moment before the
	 * directory's own new snapshots see it, so a replica one commit ahead
	 * is read again for a while before it counts as a disagreement.  One
	 * index probe per step of the batch (OFFSET 0 keeps it a probe): a join
	 * ordered by the step index walked every step of the migration against
	 * the whole list, 0.6-1.3 s for a batch of 1,600 of 5,461 steps.
	 */
	agree_sql = format_text(
		"SELECT d.version, %1$s.chash_server_identity(), x.step, x.here, x.there "
		"  FROM %1$s.chash_directory d "
		"  LEFT JOIN LATERAL ("
		"       SELECT r.step, s.state AS here, r.state AS there "
		"         FROM ROWS FROM (pg_catalog.unnest($3::pg_catalog.int4[]), pg_catalog.unnest($4::pg_catalog.text[])) r(step, state) "
		"         JOIN LATERAL (SELECT s.state FROM %1$s.chash_migration_step s "
		"                        WHERE s.migration = $2::pg_catalog.int8 AND s.step = r.step OFFSET 0) s ON true "
		"        WHERE CASE WHEN s.state = 'cancelled' THEN r.state = 'done' "
		"                   WHEN r.state = 'cancelled' THEN true "
		"                   WHEN r.state = 'done' THEN s.state <> 'done' "
		"                   WHEN $5::pg_catalog.int8 < d.version THEN false "
		"                   ELSE pg_catalog.array_position('{pending,copying,fenced,done}'::pg_catalog.text[], r.state) "
		"                      > pg_catalog.array_position('{pending,copying,fenced,done}'::pg_catalog.text[], s.state) END "
		"        ORDER BY r.step LIMIT 1) x ON true "
		" WHERE d.name = $1", dir->schema);
	for (int attempt = 0;; attempt++)
	{
		rd = query(dir, agree_sql, 5, params);
		if (rd == NULL)
			goto out;
		if (PQntuples(rd) != 1)
		{
			report("error", "directory \"%s\" does not exist on the directory database", migration.directory);
			report("detail", "Nothing was deleted. %s", batch ? "The steps were not given back." : "");
			config_error = true;
			goto out;
		}
		if (attempt < 40 && (version > atoll(PQgetvalue(rd, 0, 0)) || !PQgetisnull(rd, 0, 2)))
		{
			PQclear(rd);
			rd = NULL;
			usleep(50 * 1000);
			continue;
		}
		break;
	}
	dir_version = PQgetvalue(rd, 0, 0);
	/* the server of this run's first check; a batch's, for the finisher's thread too */
	pthread_mutex_lock(&run_identity_lock);
	if (run_identity[0] == '\0')
		snprintf(run_identity, sizeof(run_identity), "%s", PQgetvalue(rd, 0, 1));
	was = format_text("%s", run_identity);
	pthread_mutex_unlock(&run_identity_lock);
	if (identity[0] == '\0')
		snprintf(identity, identity_size, "%s", was);
	else if (strcmp(identity, was) != 0)
	{
		free(was);
		was = format_text("%s", identity);
	}
	if (strcmp(was, PQgetvalue(rd, 0, 1)) != 0)
	{
		report("error", "the directory database changed during %s of migration %lld: it was server %s and is server %s now",
			   which, migration.id, was, PQgetvalue(rd, 0, 1));
		report("detail", "Its system identifier or timeline changed: a standby was promoted, or the connection string leads elsewhere. "
			   "Nothing was deleted, and the steps were not given back.");
		report("hint", "%s", failover_hint);
		config_error = true;
		goto out;
	}
	if (lasting)
	{
		report("error", "shard \"%s\" cannot vouch for its replica of directory \"%s\"", shard->name, migration.directory);
		report("detail", "%s Nothing was deleted.", refusal);
		report("hint", "%s", failover_hint);
		config_error = true;
		goto out;
	}
	if (version > atoll(dir_version))
	{
		report("error", "shard \"%s\" is ahead of the directory database: its replica of directory \"%s\" is at version %lld, "
			   "the directory database at version %s", shard->name, migration.directory, version, dir_version);
		report("detail", "The directory database lacks versions the shard applied: a promoted standby that missed them, "
			   "or a server the shard does not replicate from. Nothing was deleted%s.",
			   batch ? ", and the steps were not given back" : "");
		report("hint", "%s", failover_hint);
		config_error = true;
		goto out;
	}
	if (!PQgetisnull(rd, 0, 2))
	{
		report("error", "the directory database and shard \"%s\" disagree about step %s of migration %lld: "
			   "the directory database says \"%s\", the shard's replica says \"%s\"",
			   shard->name, PQgetvalue(rd, 0, 2), migration.id, PQgetvalue(rd, 0, 3), PQgetvalue(rd, 0, 4));
		report("detail", "A replica may lag behind the directory, never be ahead of it: the directory database lacks "
			   "versions the shard applied. Nothing was deleted, and the steps were not given back.");
		report("hint", "%s", failover_hint);
		config_error = true;
		goto out;
	}
	ok = true;
out:
	PQclear(rs);
	PQclear(rd);
	free(refusal);
	free(was);
	free(version_text);
	free(agree_sql);
	free(which);
	free(id);
	return ok;
}

/*
 * Before this process claims anything: no shard of the directory is ahead
 * of the directory database or follows another history.  A claim on a
 * promoted directory that lacks versions the shards applied would re-use
 * their numbers, and chash_directory_reconcile cannot merge the mover's
 * changes with the shards' (docs/shards.md, "Failover").  A shard it
 * cannot reach is no answer: while a step of the migration not yet
 * finished moves rows from or to it, nothing is claimed (said; the claim
 * is tried again, and the mover gives up after its tries); a shard no such
 * step needs is skipped with a warning.  Once every shard agreed or was
 * skipped, not again in this process; each later claim checks only that
 * the directory database is still the same server.
 */
bool
directory_current(Server *dir)
{
	static pthread_mutex_t once_lock = PTHREAD_MUTEX_INITIALIZER;
	static int	state = 0;		/* 1: checked and agreed, -1: disagreed */
	char	   *id = format_text("%lld", migration.id);
	const char *params[2] = {migration.directory, id};
	PGresult   *res;
	bool		ok = true;

	pthread_mutex_lock(&once_lock);
	if (state == 1)
	{
		/* checked: the directory database must still be that server (a reconnection may lead elsewhere) */
		res = query_owned(dir, format_text("SELECT %s.chash_server_identity()", dir->schema), 0, NULL);
		if (res == NULL)
			ok = false;
		else
		{
			pthread_mutex_lock(&run_identity_lock);
			if (strcmp(run_identity, PQgetvalue(res, 0, 0)) != 0)
			{
				report("error", "the directory database changed during migration %lld: it was server %s and is server %s now",
					   migration.id, run_identity, PQgetvalue(res, 0, 0));
				report("detail", "Its system identifier or timeline changed: a standby was promoted, or the connection string leads elsewhere. "
					   "Nothing was claimed.");
				report("hint", "%s", failover_hint);
				config_error = true;
				state = -1;
			}
			pthread_mutex_unlock(&run_identity_lock);
			PQclear(res);
		}
	}
	if (state != 0)
		goto out;
	res = query_owned(dir, format_text(
		"SELECT h.shard, h.server, EXISTS ("
		"       SELECT FROM %1$s.chash_migration_step s "
		"        WHERE s.migration = $2::pg_catalog.int8 AND h.shard IN (s.from_shard, s.to_shard) "
		"          AND (s.state IN ('pending', 'copying', 'fenced') "
		"               OR EXISTS (SELECT FROM %1$s.chash_step_lease l WHERE l.migration = s.migration AND l.step = s.step))) "
		"  FROM %1$s.chash_shard h WHERE h.directory = $1 AND h.server IS NOT NULL "
		" ORDER BY h.shard", dir->schema), 2, params);
	if (res == NULL)
	{
		ok = false;
		goto out;
	}
	for (int i = 0; i < PQntuples(res) && ok; i++)
	{
		Server		s = {.name = PQgetvalue(res, i, 0), .conninfo = conninfo_of_server(PQgetvalue(res, i, 1))};
		char		identity[80] = "";

		if (server_open(&s))
		{
			ok = shard_agrees(dir, &s, NULL, identity, sizeof(identity));
			server_close(&s);
			if (!ok && config_error)
				state = -1;
		}
		else if (strcmp(PQgetvalue(res, i, 2), "t") == 0)
		{
			report("error", "shard \"%s\" cannot be checked against the directory database: it cannot be reached", s.name);
			report("detail", "Steps of migration %lld move rows from or to it. None is claimed until it is known that "
				   "its replica of directory \"%s\" is not ahead of the directory database.",
				   migration.id, migration.directory);
			ok = false;
		}
		else
		{
			char	   *key = format_text("unchecked\n%s", s.name);

			if (first_time(key))
			{
				report("warning", "shard \"%s\" was not checked against the directory database: it cannot be reached", s.name);
				report("detail", "No step of migration %lld moves rows from or to it.", migration.id);
			}
			free(key);
		}
		free(s.conninfo);
		free(s.schema);
	}
	PQclear(res);
	if (ok)
	{
		/* no shard at all: the server of this first check */
		pthread_mutex_lock(&run_identity_lock);
		if (run_identity[0] == '\0')
		{
			res = query_owned(dir, format_text("SELECT %s.chash_server_identity()", dir->schema), 0, NULL);
			if (res != NULL)
				snprintf(run_identity, sizeof(run_identity), "%s", PQgetvalue(res, 0, 0));
			PQclear(res);
		}
		pthread_mutex_unlock(&run_identity_lock);
		state = run_identity[0] != '\0' ? 1 : 0;
		ok = state == 1;
	}
out:
	if (state == -1)
		ok = false;
	pthread_mutex_unlock(&once_lock);
	free(id);
	return ok;
}

/*
 * The directory database's identity when this job's batch began
 * (shard_agrees): a delete is made only while it is still the same server.
 */
__thread char dir_identity[DIR_IDENTITY_SIZE];

/* Both shards of the batch agree with the directory database, read now (before every delete). */
bool
shards_agree(Server *dir, Server *src, Server *tgt, const Batch *batch)
{
	return shard_agrees(dir, src, batch, dir_identity, sizeof(dir_identity))
		&& shard_agrees(dir, tgt, batch, dir_identity, sizeof(dir_identity));
}
