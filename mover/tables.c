/*
 * The registered tables (chash_table) and which of their rows a step
 * moves: for a slot step the rows of the slot's tenants that are not
 * pinned (a pinned tenant routes by its override, not its slot, so its
 * rows stay), for a tenant step that tenant's rows.  The slot is computed
 * by chash_tenant_slot(column, slot_count, method), written exactly as an
 * expression index on it is, so the planner can use one; pins are read
 * from the shard's replica of chash_override.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chash_move.h"

int
registered_tables(Server *dir, TableInfo **tables)
{
	const char *params[1] = {migration.directory};
	PGresult   *res;
	int			n;

	res = query(dir, format_text("SELECT table_name, tenant_column FROM %s.chash_table "
								 "WHERE directory = $1 ORDER BY table_name", dir->schema),
				1, params);
	if (res == NULL)
		return -1;
	n = PQntuples(res);
	*tables = calloc(n > 0 ? n : 1, sizeof(TableInfo));
	for (int i = 0; i < n; i++)
	{
		(*tables)[i].table_name = format_text("%s", PQgetvalue(res, i, 0));
		(*tables)[i].tenant_column = format_text("%s", PQgetvalue(res, i, 1));
	}
	PQclear(res);
	return n;
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

		result = format_text("%s.chash_tenant_slot(%s, %d, %s) = %d "
							 "AND NOT EXISTS (SELECT FROM %s.chash_override o "
							 "WHERE o.directory = %s AND o.tenant = (%s)::text)",
							 server->schema, column, migration.slot_count, method, target->slot,
							 server->schema, directory, column);
		free(method);
		free(directory);
	}
	else
	{
		char	   *tenant = escape_literal(server->conn, target->tenant);

		result = format_text("%s = %s", column, tenant);
		free(tenant);
	}
	free(column);
	return result;
}

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

	res = query(server,
				"SELECT pg_catalog.string_agg(pg_catalog.quote_ident(a.attname) || ' '"
				"       || pg_catalog.format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum) "
				"  FROM pg_catalog.pg_attribute a "
				" WHERE a.attrelid = pg_catalog.to_regclass($1) AND a.attnum > 0 "
				"   AND NOT a.attisdropped AND a.attgenerated = ''", 1, params);
	if (res == NULL)
		return NULL;
	if (PQgetisnull(res, 0, 0))
	{
		PQclear(res);
		report("error", "table \"%s\" does not exist on shard \"%s\"", table->table_name, server->name);
		report("hint", "Create it there with the same columns as on the other shards.");
		return NULL;
	}
	columns = format_text("%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return columns;
}

/* "says once" when a shard has no index for the step's rows */
void
check_slot_index(Server *server, const TableInfo *table)
{
	char	   *key = format_text("index\n%s\n%s", server->name, table->table_name);
	const char *params[3];
	char		count[16];
	PGresult   *res;
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
	res = query(server,
				format_text("SELECT EXISTS (SELECT FROM pg_catalog.pg_index i, "
							"       LATERAL (SELECT 'chash_tenant_slot(' || pg_catalog.quote_ident($2) || ', ' || $3 AS call, "
							"                       pg_catalog.pg_get_indexdef(i.indexrelid, 1, false) AS def) x "
							" WHERE i.indrelid = pg_catalog.to_regclass($1) AND i.indkey[0] = 0 "
							"   AND (x.def LIKE '%%' || x.call || ', ' || pg_catalog.quote_literal(%s) || '::text)' "
							"        OR (%s = 'xxh64' AND x.def LIKE '%%' || x.call || ')')))",
							escape_literal(server->conn, migration.slot_method),
							escape_literal(server->conn, migration.slot_method)),
				3, params);
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
