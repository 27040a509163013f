/*
 * Deletes of a batch's rows on a shard: on the target, an earlier try's
 * copy; on the source, the moved rows once the completion is applied.
 * Never a row whose tenant the shard's replica routes to the shard itself.
 */
#include <stdlib.h>

#include "chash_move.h"

/*
 * DELETE of a step's rows there, never of a row whose tenant routes to that
 * shard by its replica: a last guard against deleting rows it owns.
 */
char *
delete_sql(Server *server, const TableInfo *table, const StepTarget *target)
{
	char	   *pred = step_predicate(server, table, target);
	char	   *column = escape_identifier(server->conn, table->tenant_column);
	char	   *directory = escape_literal(server->conn, migration.directory);
	char	   *self = escape_literal(server->conn, server->name);
	char	   *sql = format_text("DELETE FROM %s WHERE %s AND %s.chash_route(%s, (%s)::text) IS DISTINCT FROM %s",
								  table->table_name, pred, server->schema, directory, column, self);

	free(pred);
	free(column);
	free(directory);
	free(self);
	return sql;
}

/*
 * Deletes the step's rows of every table in one transaction there,
 * children before their parents (the tables are in foreign-key order).
 */
long long
delete_rows(Server *server, TableInfo *tables, int ntables, const StepTarget *target)
{
	long long	deleted = 0;

	if (!begin_table_writes(server))
		return -1;
	for (int i = ntables - 1; i >= 0; i--)
	{
		PGresult   *res = query_owned(server, delete_sql(server, &tables[i], target), 0, NULL);

		if (res == NULL)
		{
			server_rollback(server);
			return -1;
		}
		deleted += atoll(PQcmdTuples(res));
		PQclear(res);
	}
	if (!command(server, "COMMIT"))
		return -1;
	return deleted;
}
