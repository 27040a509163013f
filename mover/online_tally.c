/*
 * The tallies of an online step (online.c): a temporary copy of the
 * step's slot on the source, made before the subscription reads the
 * slot, and a temporary slot on the target, each held by a session of its
 * own, which decode the step's changes with the plugin's option tally: a
 * line for each row of the step changed since the copy, with its key.
 * The mover reads them while the subscription catches up
 * (online_stream.c) and once more in the write block (online_verify.c),
 * where only the changed rows are compared.  A tally that cannot start or
 * read ends both: the write block then verifies by a scan.  Everything
 * here hangs off the step's OnlineCopy, and tally_stop (online_copy_free)
 * takes it all down.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "online_tally.h"

/* Ends the tallies: their slots dropped (they would go with their sessions anyway), the keys freed. */
void
tally_stop(OnlineCopy *copy)
{
	for (int k = 0; k < 2; k++)
	{
		Tally	   *t = &copy->tally[k];

		if (t->server.conn != NULL && t->slot != NULL)
		{
			const char *params[1] = {t->slot};

			PQclear(PQexecParams(t->server.conn, "SELECT pg_catalog.pg_drop_replication_slot($1)",
								 1, NULL, params, NULL, NULL, 0));
		}
		server_close(&t->server);
		free(t->server.schema);
		free(t->slot);
		memset(t, 0, sizeof(*t));
	}
	free(copy->filter);
	copy->filter = NULL;
	for (int i = 0; i < copy->ntables; i++)
	{
		for (int j = 0; j < copy->tables[i].nchanged; j++)
			free(copy->tables[i].changed[j]);
		free(copy->tables[i].changed);
		free(copy->tables[i].oid[0]);
		free(copy->tables[i].oid[1]);
		free(copy->tables[i].keys);
	}
	free(copy->tables);
	copy->tables = NULL;
	copy->ntables = 0;
}

void
online_copy_free(OnlineCopy *copy)
{
	tally_stop(copy);
	free(copy->source_xip);
	copy->source_xip = NULL;
	free(copy->table_rows);
	copy->table_rows = NULL;
}

/*
 * Opens a tally's session on the server and makes its temporary slot
 * there with sql ($1 the slot's name, $2 another's): false, said with
 * --verbose, when it cannot (a server without room for another slot, or
 * not wal_level = logical, is no error of the move).
 */
static bool
tally_open(Tally *t, Server *server, const char *name, const char *sql, const char *other)
{
	const char *params[2] = {NULL, other};
	PGresult   *res;

	t->server.name = server->name;
	t->server.conninfo = server->conninfo;
	t->slot = format_text("%s_tally", name);
	params[0] = t->slot;
	if (!server_open(&t->server))
		return false;
	res = PQexecParams(t->server.conn, sql, other ? 2 : 1, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		const char *m = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

		if (options.verbose)
			report("info", "no tally of the changes on shard \"%s\" (%.*s): the write block finds them by a scan",
				   server->name, (int) strcspn(m ? m : "", "\n"), m ? m : "");
		PQclear(res);
		free(t->slot);
		t->slot = NULL;
		return false;
	}
	PQclear(res);
	return true;
}

/*
 * The target's tally, before anything of the step is written there (and
 * before the source's slot, whose exported snapshot would hold up a slot
 * made on the same server): a temporary slot of plugin chash on the
 * target with the step's filter, which sees every change of the step's
 * rows there from now on, the subscription's and any other session's;
 * the copy's transaction is left out when it is read (except_xid).
 */
void
tally_start_target(Server *tgt, const char *name, const char *which, OnlineCopy *copy)
{
	char	   *directory = escape_literal(tgt->conn, migration.directory);
	char	   *sql = format_text("SELECT %s.chash_decoding_filter_create('%s', %s, %s)", tgt->schema, name, directory, which);

	copy->filter = format_text("%s", name);
	if (!command(tgt, sql)
		|| !tally_open(&copy->tally[1], tgt, name, "SELECT FROM pg_catalog.pg_create_logical_replication_slot($1, 'chash', true)", NULL))
		tally_stop(copy);
	free(sql);
	free(directory);
}

/*
 * A table's oid on both sides and its replica identity columns, which the
 * tally's lines name; false when the table is not there.
 */
static bool
tally_table(Server *src, Server *tgt, const TableInfo *table, TallyTable *t)
{
	const char *params[1] = {table->table_name};
	PGresult   *res;

	res = query(src, "SELECT c.oid, "
				"       (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(a.attname), ', ' ORDER BY k.n) "
				"          FROM pg_catalog.pg_index i, pg_catalog.unnest(i.indkey) WITH ORDINALITY k(attnum, n), "
				"               pg_catalog.pg_attribute a "
				"         WHERE i.indrelid = c.oid AND a.attrelid = c.oid AND a.attnum = k.attnum "
				"           AND ((c.relreplident = 'd' AND i.indisprimary) "
				"                OR (c.relreplident = 'i' AND i.indisreplident))) "
				"  FROM pg_catalog.pg_class c WHERE c.oid = pg_catalog.to_regclass($1)", 1, params);
	if (res == NULL || PQntuples(res) != 1)
	{
		PQclear(res);
		return false;
	}
	t->oid[0] = format_text("%s", PQgetvalue(res, 0, 0));
	t->keys = PQgetisnull(res, 0, 1) ? NULL : format_text("%s", PQgetvalue(res, 0, 1));
	PQclear(res);
	res = query(tgt, "SELECT pg_catalog.to_regclass($1)::pg_catalog.oid", 1, params);
	if (res == NULL || PQntuples(res) != 1 || PQgetisnull(res, 0, 0))
	{
		PQclear(res);
		return false;
	}
	t->oid[1] = format_text("%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return true;
}

/*
 * The source's tally, a temporary copy of the step's slot (the same
 * start: it decodes what the subscription will stream), before the
 * subscription reads that; and each table's key.  Without the target's
 * tally, or when this one cannot start, both end.
 */
void
tally_start_source(Server *src, Server *tgt, const char *name, TableInfo *tables, int ntables, OnlineCopy *copy)
{
	bool		started = copy->tally[1].server.conn != NULL
		&& tally_open(&copy->tally[0], src, name, "SELECT FROM pg_catalog.pg_copy_logical_replication_slot($2, $1, true)", name);

	if (started)
	{
		copy->tally[1].except_xid = copy->target_xid;
		copy->tables = xcalloc(ntables > 0 ? ntables : 1, sizeof(TallyTable));
		copy->ntables = ntables;
	}
	for (int i = 0; started && i < ntables; i++)
		started = tally_table(src, tgt, &tables[i], &copy->tables[i]);
	if (!started)
		tally_stop(copy);
}

static int
compare_keys(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* Sorts a table's changed keys and drops the repeats (a row changed many times is one key). */
void
tally_distinct(TallyTable *t)
{
	int			n = 0;

	qsort(t->changed, t->nchanged, sizeof(char *), compare_keys);
	for (int i = 0; i < t->nchanged; i++)
	{
		if (n > 0 && strcmp(t->changed[n - 1], t->changed[i]) == 0)
			free(t->changed[i]);
		else
			t->changed[n++] = t->changed[i];
	}
	t->nchanged = t->distinct = n;
}

/*
 * Reads what a tally decoded since it was last read: per table, the keys
 * of the changed rows and, on the source, the rows inserted less those
 * deleted.  False: it ended.
 */
static bool
tally_read_one(OnlineCopy *copy, Tally *t, int side)
{
	const char *params[3] = {t->slot, copy->filter, t->except_xid};
	char	   *sql = format_text("SELECT data FROM pg_catalog.pg_logical_slot_get_changes($1, NULL, NULL, 'tally', $2%s)",
								  t->except_xid ? ", 'except_xid', $3" : "");
	PGresult   *res = query(&t->server, sql, t->except_xid ? 3 : 2, params);

	free(sql);
	if (res == NULL)
		return false;
	for (int r = 0; r < PQntuples(res); r++)
	{
		const char *line = PQgetvalue(res, r, 0);
		const char *key = strlen(line) > 2 ? strchr(line + 2, ' ') : NULL;
		TallyTable *tt = NULL;

		for (int i = 0; i < copy->ntables && tt == NULL && key != NULL; i++)
			if (strlen(copy->tables[i].oid[side]) == (size_t) (key - line - 2)
				&& strncmp(copy->tables[i].oid[side], line + 2, key - line - 2) == 0)
				tt = &copy->tables[i];
		if (tt == NULL)
		{
			report("error", "the tally of shard \"%s\" has a line the mover does not know: %s", t->server.name, line);
			PQclear(res);
			return false;
		}
		key++;
		if (side == 0)
			tt->net += line[0] == 'I' ? 1 : line[0] == 'D' ? -1 : 0;
		if (strcmp(key, "-") == 0)
		{
			tt->unkeyed = true;
			continue;
		}
		if (tt->nchanged == tt->capacity)
		{
			tt->capacity = tt->capacity ? 2 * tt->capacity : 256;
			tt->changed = xrealloc(tt->changed, tt->capacity * sizeof(char *));
		}
		tt->changed[tt->nchanged++] = format_text("%s", key);
		if (tt->nchanged > 2 * tt->distinct + 4096)
			tally_distinct(tt);
	}
	PQclear(res);
	return true;
}

/* Both tallies read; false (both ended) when either cannot be: the write block then verifies by a scan. */
bool
tally_read(OnlineCopy *copy)
{
	if (copy->tally[0].server.conn == NULL || copy->tally[1].server.conn == NULL
		|| !tally_read_one(copy, &copy->tally[0], 0) || !tally_read_one(copy, &copy->tally[1], 1))
	{
		tally_stop(copy);
		return false;
	}
	return true;
}

/* The keys of a table's changed rows as a JSON array, for json_populate_recordset. */
char *
tally_json(TallyTable *t)
{
	size_t		size = 3;
	char	   *json;
	char	   *p;

	for (int i = 0; i < t->nchanged; i++)
		size += strlen(t->changed[i]) + 1;
	json = p = xmalloc(size);
	*p++ = '[';
	for (int i = 0; i < t->nchanged; i++)
	{
		size_t		n = strlen(t->changed[i]);

		if (i > 0)
			*p++ = ',';
		memcpy(p, t->changed[i], n);
		p += n;
	}
	*p++ = ']';
	*p = '\0';
	return json;
}
