/*
 * What a batch needs of its shard pair before anything happens on them
 * (step_check): the tables in foreign-key order, the same columns on both
 * shards, the target's owned sequences; and, inside a copy's
 * transactions, that the columns are still those (columns_unchanged).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chash_move.h"

/* The column names of a table, the same on both shards, or NULL; the typed list kept in *typed. */
static char *
common_columns(Server *src, Server *tgt, const TableInfo *table, char **typed)
{
	char	   *a = table_columns(src, table);
	char	   *b = a ? table_columns(tgt, table) : NULL;
	char	   *names;
	char	   *out;

	if (a == NULL || b == NULL)
		return NULL;
	if (strcmp(a, b) != 0)
	{
		report("error", "table \"%s\" has different columns on shard \"%s\" and shard \"%s\"",
			   table->table_name, src->name, tgt->name);
		report("detail", "Shard \"%s\" has (%s), shard \"%s\" has (%s). No step was fenced.", src->name, a, tgt->name, b);
		report("hint", "Give the table the same columns, in the same order and of the same types, on every shard (ALTER TABLE), then run chash_move again.");
		config_error = true;
		free(a);
		free(b);
		return NULL;
	}
	/* "a int, b text" -> "a, b": each entry is an identifier then its type */
	names = xcalloc(strlen(a) + 1, 1);
	out = names;
	for (const char *p = a; *p;)
	{
		bool		quoted = (*p == '"');
		const char *q = p + (quoted ? 1 : 0);

		while (*q && (quoted ? !(*q == '"' && q[1] != '"') : *q != ' '))
			q += (quoted && *q == '"') ? 2 : 1;
		if (quoted)
			q++;
		if (out != names)
			out += sprintf(out, ", ");
		memcpy(out, p, q - p);
		out += q - p;
		*out = '\0';
		/* skip the type, up to the next ", " outside parentheses */
		for (int depth = 0; *q && !(depth == 0 && q[0] == ',' && q[1] == ' '); q++)
			depth += (*q == '(') - (*q == ')');
		p = *q ? q + 2 : q;
	}
	*typed = a;
	free(b);
	return names;
}

/*
 * Before anything of the step happens on its shards (the first fence
 * above all): the tables in foreign-key order, every table with the same
 * columns on both shards (the list COPY moves), and the target's owned
 * sequences the mover will advance.  A problem is said once, with what to
 * fix, and sets config_error: the job stops instead of fencing and
 * releasing the step again and again.
 */
bool
step_check(Server *src, Server *tgt, TableInfo *tables, int ntables)
{
	if (pair_checked(src->name, tgt->name, tables, ntables))
		return true;
	if (!order_tables(src, tables, ntables))
		return false;
	for (int i = 0; i < ntables; i++)
		if ((tables[i].columns = common_columns(src, tgt, &tables[i], &tables[i].typed_columns)) == NULL
			|| !owned_sequences(tgt, &tables[i]))
			return false;
	pair_remember(src->name, tgt->name, tables, ntables);
	return true;
}

/*
 * Inside the copy's transactions: both shards still have the columns the
 * pair's checks saw (else the batch is given back and the pair checked
 * again: a column's type can change without changing COPY's bytes).
 */
bool
columns_unchanged(Server *src, Server *tgt, const TableInfo *tables, int ntables)
{
	char	   *want = columns_signature(tables, ntables);
	char	   *a = server_columns_signature(src, tables, ntables);
	char	   *b = a ? server_columns_signature(tgt, tables, ntables) : NULL;
	bool		same = a != NULL && b != NULL && strcmp(a, want) == 0 && strcmp(b, want) == 0;

	if (a != NULL && b != NULL && !same && options.verbose)
		report("info", "the registered tables' columns changed on shard \"%s\" or shard \"%s\" since they were checked; checking again",
			   src->name, tgt->name);
	free(want);
	free(a);
	free(b);
	return same;
}
