/*
 * The registered tables (chash_table) and which of their rows a step
 * (or a batch of steps: their slots or tenants) moves: for a slot step
 * the rows of the slot's tenants that are not pinned (a pinned tenant routes by its override, not its slot, so its
 * rows stay), for a tenant step that tenant's rows.  The slot is computed
 * by chash_tenant_slot(column, slot_count, method), written exactly as an
 * expression index on it is, so the planner can use one; pins are read
 * from the shard's replica of chash_override.  Foreign keys between the
 * registered tables order them: a step copies parents first and deletes
 * children first.  The checks of a shard pair (step_check.c) are
 * kept for the run: later batches of the pair reuse them while the
 * registered tables and their columns stay the same, and a batch that
 * fails forgets them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chash_move.h"

/* ---- the checks of a shard pair, kept for the run ---- */
typedef struct PairChecks
{
	char	   *src;
	char	   *tgt;
	char	   *names;			/* the registered tables, in name order */
	TableInfo  *tables;			/* checked, in foreign-key order */
	int			ntables;
} PairChecks;

static pthread_mutex_t pairs_lock = PTHREAD_MUTEX_INITIALIZER;
static PairChecks *pairs;
static int	npairs;

/* "a\nb": the table names as registered_tables returns them (name order) */
static char *
names_in_order(const TableInfo *tables, int ntables)
{
	char	   *out = format_text("%s", "");

	for (int i = 0; i < ntables; i++)
	{
		char	   *longer = format_text("%s%s\n", out, tables[i].table_name);

		free(out);
		out = longer;
	}
	return out;
}

static char *
copy_or_null(const char *s)
{
	return s ? format_text("%s", s) : NULL;
}

static void
copy_checked(TableInfo *to, const TableInfo *from)
{
	to->columns = copy_or_null(from->columns);
	to->typed_columns = copy_or_null(from->typed_columns);
	to->nsequences = from->nsequences;
	to->sequences = xcalloc(from->nsequences > 0 ? from->nsequences : 1, sizeof(OwnedSequence));
	for (int j = 0; j < from->nsequences; j++)
	{
		to->sequences[j].column = copy_or_null(from->sequences[j].column);
		to->sequences[j].sequence = copy_or_null(from->sequences[j].sequence);
		to->sequences[j].ascending = from->sequences[j].ascending;
	}
}

static int
find_pair(const char *src, const char *tgt)
{
	for (int i = 0; i < npairs; i++)
		if (strcmp(pairs[i].src, src) == 0 && strcmp(pairs[i].tgt, tgt) == 0)
			return i;
	return -1;
}

/*
 * The tables (fresh from registered_tables, in name order) as the pair's
 * checks left them: in foreign-key order, with their columns and the
 * target's sequences.  False when the pair was not checked with these
 * tables.
 */
bool
pair_checked(const char *src, const char *tgt, TableInfo *tables, int ntables)
{
	char	   *names = names_in_order(tables, ntables);
	bool		found = false;
	int			i;

	pthread_mutex_lock(&pairs_lock);
	i = find_pair(src, tgt);
	if (i >= 0 && strcmp(pairs[i].names, names) == 0 && pairs[i].ntables == ntables)
	{
		TableInfo  *sorted = xcalloc(ntables > 0 ? ntables : 1, sizeof(TableInfo));

		found = true;
		for (int k = 0; k < ntables && found; k++)
		{
			found = false;
			for (int j = 0; j < ntables && !found; j++)
				if (strcmp(tables[j].table_name, pairs[i].tables[k].table_name) == 0)
				{
					sorted[k] = tables[j];
					copy_checked(&sorted[k], &pairs[i].tables[k]);
					found = true;
				}
		}
		if (found)
			memcpy(tables, sorted, ntables * sizeof(TableInfo));
		free(sorted);
	}
	pthread_mutex_unlock(&pairs_lock);
	free(names);
	return found;
}

/* The tables as step_check left them, for the pair's next batches. */
void
pair_remember(const char *src, const char *tgt, const TableInfo *tables, int ntables)
{
	PairChecks	p = {copy_or_null(src), copy_or_null(tgt), NULL, xcalloc(ntables > 0 ? ntables : 1, sizeof(TableInfo)), ntables};
	TableInfo  *by_name = xcalloc(ntables > 0 ? ntables : 1, sizeof(TableInfo));

	for (int i = 0; i < ntables; i++)
	{
		p.tables[i].table_name = copy_or_null(tables[i].table_name);
		p.tables[i].tenant_column = copy_or_null(tables[i].tenant_column);
		copy_checked(&p.tables[i], &tables[i]);
		by_name[i] = tables[i];
	}
	/* the key is the name order registered_tables gives */
	for (int i = 1; i < ntables; i++)
		for (int j = i; j > 0 && strcmp(by_name[j - 1].table_name, by_name[j].table_name) > 0; j--)
		{
			TableInfo	t = by_name[j];

			by_name[j] = by_name[j - 1];
			by_name[j - 1] = t;
		}
	p.names = names_in_order(by_name, ntables);
	free(by_name);
	pair_forget(src, tgt);
	pthread_mutex_lock(&pairs_lock);
	pairs = xrealloc(pairs, (npairs + 1) * sizeof(PairChecks));
	pairs[npairs++] = p;
	pthread_mutex_unlock(&pairs_lock);
}

void
pair_forget(const char *src, const char *tgt)
{
	int			i;

	pthread_mutex_lock(&pairs_lock);
	if ((i = find_pair(src, tgt)) >= 0)
	{
		free(pairs[i].src);
		free(pairs[i].tgt);
		free(pairs[i].names);
		free_tables(pairs[i].tables, pairs[i].ntables);
		pairs[i] = pairs[--npairs];
	}
	pthread_mutex_unlock(&pairs_lock);
}

/* The pairs checked in this run, their names copied (free each and the arrays); how many. */
int
checked_pairs(char ***src, char ***tgt)
{
	int			n;

	pthread_mutex_lock(&pairs_lock);
	n = npairs;
	*src = xcalloc(n > 0 ? n : 1, sizeof(char *));
	*tgt = xcalloc(n > 0 ? n : 1, sizeof(char *));
	for (int i = 0; i < n; i++)
	{
		(*src)[i] = format_text("%s", pairs[i].src);
		(*tgt)[i] = format_text("%s", pairs[i].tgt);
	}
	pthread_mutex_unlock(&pairs_lock);
	return n;
}

/* The typed columns of every table, one line each, as checked. */
char *
columns_signature(const TableInfo *tables, int ntables)
{
	char	   *out = format_text("%s", "");

	for (int i = 0; i < ntables; i++)
		out = text_append(out, i ? "\n" : "", tables[i].typed_columns);
	return out;
}

int
registered_tables(Server *dir, TableInfo **tables)
{
	const char *params[1] = {migration.directory};
	PGresult   *res;
	int			n;

	res = query_owned(dir, format_text("SELECT table_name, tenant_column FROM %s.chash_table "
								 "WHERE directory = $1 ORDER BY table_name", dir->schema),
				1, params);
	if (res == NULL)
		return -1;
	n = PQntuples(res);
	*tables = xcalloc(n > 0 ? n : 1, sizeof(TableInfo));
	for (int i = 0; i < n; i++)
	{
		(*tables)[i].table_name = format_text("%s", PQgetvalue(res, i, 0));
		(*tables)[i].tenant_column = format_text("%s", PQgetvalue(res, i, 1));
	}
	PQclear(res);
	return n;
}

void
free_tables(TableInfo *tables, int ntables)
{
	for (int i = 0; i < ntables; i++)
	{
		free(tables[i].table_name);
		free(tables[i].tenant_column);
		free(tables[i].columns);
		free(tables[i].typed_columns);
		for (int j = 0; j < tables[i].nsequences; j++)
		{
			free(tables[i].sequences[j].column);
			free(tables[i].sequences[j].sequence);
		}
		free(tables[i].sequences);
	}
	free(tables);
}

/* The table names as a text[] literal, '{"a","b"}'. */
static char *
names_array(TableInfo *tables, int ntables)
{
	size_t		len = 3;
	char	   *out,
			   *p;

	for (int i = 0; i < ntables; i++)
		len += 2 * strlen(tables[i].table_name) + 3;
	out = p = xmalloc(len);
	*p++ = '{';
	for (int i = 0; i < ntables; i++)
	{
		if (i > 0)
			*p++ = ',';
		*p++ = '"';
		for (const char *c = tables[i].table_name; *c; c++)
		{
			if (*c == '"' || *c == '\\')
				*p++ = '\\';
			*p++ = *c;
		}
		*p++ = '"';
	}
	*p++ = '}';
	*p = '\0';
	return out;
}

/*
 * Sorts the tables so that every table comes after the tables its foreign
 * keys reference, by the source's pg_constraint (ties in name order).  A
 * COPY into a child before its parent fails the key, and a DELETE of a
 * parent before its child is refused as still referenced.  A table that
 * references itself needs no order (one statement copies or deletes all
 * its rows of the step); a cycle between tables has none: false, said.
 */
bool
order_tables(Server *src, TableInfo *tables, int ntables)
{
	char	   *array = names_array(tables, ntables);
	const char *params[1] = {array};
	PGresult   *res;
	bool	   *refs = xcalloc((size_t) ntables * ntables + 1, sizeof(bool));	/* [child][parent] */
	bool	   *placed = xcalloc(ntables + 1, sizeof(bool));
	TableInfo  *sorted = xcalloc(ntables + 1, sizeof(TableInfo));
	int			nsorted = 0;
	bool		ok = true;

	res = query(src,
				"SELECT DISTINCT t.i - 1, r.j - 1 "
				"  FROM pg_catalog.unnest($1::pg_catalog.text[]) WITH ORDINALITY t(name, i) "
				"  JOIN pg_catalog.pg_constraint c ON c.conrelid = pg_catalog.to_regclass(t.name) AND c.contype = 'f' "
				"  JOIN pg_catalog.unnest($1::pg_catalog.text[]) WITH ORDINALITY r(name, j) "
				"    ON c.confrelid = pg_catalog.to_regclass(r.name) "
				" WHERE t.i <> r.j", 1, params);
	free(array);
	if (res == NULL)
		ok = false;
	for (int k = 0; ok && k < PQntuples(res); k++)
		refs[atoi(PQgetvalue(res, k, 0)) * ntables + atoi(PQgetvalue(res, k, 1))] = true;
	PQclear(res);
	while (ok && nsorted < ntables)
	{
		int			next = -1;

		for (int i = 0; i < ntables && next < 0; i++)
		{
			bool		ready = !placed[i];

			for (int j = 0; j < ntables && ready; j++)
				ready = placed[j] || !refs[i * ntables + j];
			if (ready)
				next = i;
		}
		if (next < 0)
		{
			char	   *cycle = format_text("%s", "");

			for (int i = 0; i < ntables; i++)
				if (!placed[i])
				{
					char	   *longer = format_text("%s%s\"%s\"", cycle, cycle[0] ? ", " : "", tables[i].table_name);

					free(cycle);
					cycle = longer;
				}
			report("error", "the foreign keys of the registered tables %s on shard \"%s\" form a cycle", cycle, src->name);
			report("detail", "chash_move copies a table after the tables it references and deletes its rows before theirs; a cycle has no such order. No step was fenced.");
			report("hint", "Drop one of the foreign keys of the cycle, or move these tenants another way.");
			free(cycle);
			config_error = true;
			ok = false;
			break;
		}
		placed[next] = true;
		sorted[nsorted++] = tables[next];
	}
	if (ok)
		memcpy(tables, sorted, ntables * sizeof(TableInfo));
	free(refs);
	free(placed);
	free(sorted);
	return ok;
}

/*
 * The sequences the target's table owns (serial and identity columns,
 * pg_depend), which a step moves values of; the mover must be able to
 * advance them (sequences.c, advance_sequences).
 */
bool
owned_sequences(Server *tgt, TableInfo *table)
{
	const char *params[1] = {table->table_name};
	PGresult   *res;
	int			n;

	res = query(tgt,
				"SELECT pg_catalog.quote_ident(a.attname), s.oid::pg_catalog.regclass::pg_catalog.text, "
				"       q.seqincrement > 0, pg_catalog.has_sequence_privilege(s.oid, 'USAGE, UPDATE') "
				"  FROM pg_catalog.pg_depend d "
				"  JOIN pg_catalog.pg_class s ON s.oid = d.objid AND s.relkind = 'S' "
				"  JOIN pg_catalog.pg_sequence q ON q.seqrelid = s.oid "
				"  JOIN pg_catalog.pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid "
				" WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass "
				"   AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass "
				"   AND d.refobjid = pg_catalog.to_regclass($1) AND d.refobjsubid > 0 AND d.deptype IN ('a', 'i') "
				" ORDER BY a.attnum", 1, params);
	if (res == NULL)
		return false;
	n = PQntuples(res);
	for (int i = 0; i < n; i++)
		if (PQgetvalue(res, i, 3)[0] != 't')
		{
			report("error", "the mover's role on shard \"%s\" cannot advance sequence \"%s\" of column %s of table \"%s\"",
				   tgt->name, PQgetvalue(res, i, 1), PQgetvalue(res, i, 0), table->table_name);
			report("detail", "After a step's rows are copied, the target's sequences are advanced past the values moved, so its inserts never hand them out again. No step was fenced.");
			report("hint", "GRANT USAGE, UPDATE ON SEQUENCE %s to the mover's role there.", PQgetvalue(res, i, 1));
			PQclear(res);
			config_error = true;
			return false;
		}
	table->sequences = xcalloc(n > 0 ? n : 1, sizeof(OwnedSequence));
	table->nsequences = n;
	for (int i = 0; i < n; i++)
	{
		table->sequences[i].column = format_text("%s", PQgetvalue(res, i, 0));
		table->sequences[i].sequence = format_text("%s", PQgetvalue(res, i, 1));
		table->sequences[i].ascending = PQgetvalue(res, i, 2)[0] == 't';
	}
	PQclear(res);
	return true;
}

char *
step_predicate(Server *server, const TableInfo *table, const StepTarget *target)
{
	char	   *column = escape_identifier(server->conn, table->tenant_column);
	char	   *result;

	if (target->slot >= 0)
	{
		char	   *method = escape_literal(server->conn, migration.slot_method);
		char	   *directory = escape_literal(server->conn, migration.directory);

		char	   *slots = target->nsteps > 1 ? format_text("= ANY ('%s'::pg_catalog.int4[])", target->slots)
			: format_text("= %d", target->slot);

		result = format_text("%s.chash_tenant_slot(%s, %d, %s) %s "
							 "AND NOT EXISTS (SELECT FROM %s.chash_override o "
							 "WHERE o.directory = %s AND o.tenant = (%s)::text)",
							 server->schema, column, migration.slot_count, method, slots,
							 server->schema, directory, column);
		free(slots);
		free(method);
		free(directory);
	}
	else
	{
		/* a batch's tenants as an array of the column's type */
		char	   *tenant = escape_literal(server->conn, target->nsteps > 1 ? target->tenants : target->tenant);

		result = format_text(target->nsteps > 1 ? "%s = ANY (%s)" : "%s = %s", column, tenant);
		free(tenant);
	}
	free(column);
	return result;
}

/* the typed columns of table %s, "a int, b text" (NULL: no such table) */
#define COLUMNS_OF \
	"SELECT pg_catalog.string_agg(pg_catalog.quote_ident(a.attname) OPERATOR(pg_catalog.||) ' ' " \
	"       OPERATOR(pg_catalog.||) pg_catalog.format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum) " \
	"  FROM pg_catalog.pg_attribute a " \
	" WHERE a.attrelid OPERATOR(pg_catalog.=) pg_catalog.to_regclass(%s) AND a.attnum > 0 " \
	"   AND NOT a.attisdropped AND a.attgenerated OPERATOR(pg_catalog.=) ''"

/*
 * The columns COPY moves (not generated ones), as "a, b, c", with their
 * types, so a table that differs between two shards is refused rather
 * than copied into the wrong columns.
 */
char *
table_columns(Server *server, const TableInfo *table)
{
	const char *params[1] = {table->table_name};
	PGresult   *res;
	char	   *columns;

	res = query_owned(server, format_text(COLUMNS_OF, "$1"), 1, params);
	if (res == NULL)
		return NULL;
	if (PQgetisnull(res, 0, 0))
	{
		PQclear(res);
		report("error", "table \"%s\" does not exist on shard \"%s\"", table->table_name, server->name);
		report("detail", "Every registered table must exist on every shard. No step was fenced.");
		report("hint", "Create it there with the same columns as on the other shards.");
		config_error = true;
		return NULL;
	}
	columns = format_text("%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return columns;
}

/*
 * The tables' columns there now, as columns_signature writes the checked
 * ones: a batch whose shards changed since the checks is not copied (its
 * pair is checked again).  One statement for every table; NULL on error.
 */
char *
server_columns_signature(Server *server, const TableInfo *tables, int ntables)
{
	char	   *array = names_array((TableInfo *) tables, ntables);
	const char *params[1] = {array};
	char	   *columns = format_text(COLUMNS_OF, "t.name");
	PGresult   *res = query_owned(server, format_text(
		"SELECT COALESCE(pg_catalog.string_agg(COALESCE((%s), ''), E'\\n' ORDER BY t.i), '') "
		"  FROM pg_catalog.unnest($1::pg_catalog.text[]) WITH ORDINALITY t(name, i)",
		columns), 1, params);
	char	   *out = NULL;

	free(columns);
	free(array);
	if (res != NULL)
		out = format_text("%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return out;
}

/* "says once" when a shard has no index for the step's rows */
void
check_slot_index(Server *server, const TableInfo *table)
{
	char	   *key = format_text("index\n%s\n%s", server->name, table->table_name);
	const char *params[3];
	char		count[16];
	PGresult   *res;
	char	   *method;
	bool		first = first_time(key);

	free(key);
	if (!first)
		return;

	/*
	 * An index whose first column is chash_tenant_slot(column, slot_count,
	 * method); the catalog keeps the call as written, without a default
	 * method, and the planner matches either spelling.
	 */
	snprintf(count, sizeof(count), "%d", migration.slot_count);
	params[0] = table->table_name;
	params[1] = table->tenant_column;
	params[2] = count;
	method = escape_literal(server->conn, migration.slot_method);
	res = query_owned(server,
				format_text("SELECT EXISTS (SELECT FROM pg_catalog.pg_index i, "
							"       LATERAL (SELECT 'chash_tenant_slot(' || pg_catalog.quote_ident($2) || ', ' || $3 AS call, "
							"                       pg_catalog.pg_get_indexdef(i.indexrelid, 1, false) AS def) x "
							" WHERE i.indrelid = pg_catalog.to_regclass($1) AND i.indkey[0] = 0 "
							"   AND (x.def LIKE '%%' || x.call || ', ' || pg_catalog.quote_literal(%s) || '::text)' "
							"        OR (%s = 'xxh64' AND x.def LIKE '%%' || x.call || ')')))",
							method, method),
				3, params);
	free(method);
	if (res == NULL)
		return;
	if (PQgetvalue(res, 0, 0)[0] != 't')
	{
		report("warning", "table \"%s\" on shard \"%s\" has no index on chash_tenant_slot(%s, %d, '%s')",
			   table->table_name, server->name, table->tenant_column, migration.slot_count,
			   migration.slot_method);
		report("detail", "Every slot step reads the whole table there.");
		report("hint", "CREATE INDEX ON %s (chash_tenant_slot(%s, %d, '%s'));",
			   table->table_name, table->tenant_column, migration.slot_count, migration.slot_method);
	}
	PQclear(res);
}
