/*
 * What a batch needs of its shard pair before anything happens on them
 * (step_check): the tables in foreign-key order, the same columns on both
 * shards, the target's owned sequences, no code of a non-superuser that a
 * superuser mover would run (foreign_code_check); and, inside a copy's
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
	if (!order_tables(src, tables, ntables) || !foreign_code_check(src, tgt, tables, ntables))
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

/*
 * What a move's writes into a registered table run with the writer's
 * rights (connection.c, begin_table_writes: session_replication_role =
 * replica where the mover is a superuser), on the table and its
 * inheritance children and partitions: ENABLE REPLICA and ALWAYS triggers
 * (with their WHEN clauses) and rules, CHECK constraints, index
 * expressions and predicates, generated columns, the constraints of the
 * columns' domains; PostgreSQL 15's apply worker runs the same as the
 * subscription's owner, a superuser.  Each row: the registered table, the
 * object, the function it calls ('' for a rule) and whose code it is;
 * only code of a role that is no superuser, and no SECURITY DEFINER
 * function (which runs as its owner).  $1: the registered tables.
 */
#define FOREIGN_CODE \
	"WITH RECURSIVE rels(top, oid) AS ( " \
	"    SELECT t, pg_catalog.to_regclass(t)::pg_catalog.oid FROM pg_catalog.unnest($1::pg_catalog.text[]) t " \
	"     WHERE pg_catalog.to_regclass(t) IS NOT NULL " \
	"  UNION SELECT r.top, i.inhrelid FROM rels r JOIN pg_catalog.pg_inherits i ON i.inhparent OPERATOR(pg_catalog.=) r.oid), " \
	"types(top, typ) AS ( " \
	"    SELECT r.top, a.atttypid FROM rels r JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) r.oid " \
	"     WHERE a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped " \
	"  UNION SELECT s.top, t.typbasetype FROM types s JOIN pg_catalog.pg_type t ON t.oid OPERATOR(pg_catalog.=) s.typ " \
	"     WHERE t.typtype OPERATOR(pg_catalog.=) 'd'), " \
	"objs(top, classid, objid, owner) AS ( " \
	"    SELECT r.top, d.classid, d.objid, NULL::pg_catalog.oid FROM rels r JOIN pg_catalog.pg_depend d " \
	"        ON d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass AND d.refobjid OPERATOR(pg_catalog.=) r.oid " \
	"     WHERE d.classid OPERATOR(pg_catalog.=) ANY (ARRAY['pg_catalog.pg_constraint'::pg_catalog.regclass, 'pg_catalog.pg_class'::pg_catalog.regclass]) " \
	"        OR (d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_attrdef'::pg_catalog.regclass AND EXISTS ( " \
	"            SELECT FROM pg_catalog.pg_attrdef ad JOIN pg_catalog.pg_attribute a " \
	"                ON a.attrelid OPERATOR(pg_catalog.=) ad.adrelid AND a.attnum OPERATOR(pg_catalog.=) ad.adnum " \
	"             WHERE ad.oid OPERATOR(pg_catalog.=) d.objid AND a.attgenerated OPERATOR(pg_catalog.<>) '')) " \
	"  UNION SELECT r.top, 'pg_catalog.pg_trigger'::pg_catalog.regclass, t.oid, NULL FROM rels r " \
	"      JOIN pg_catalog.pg_trigger t ON t.tgrelid OPERATOR(pg_catalog.=) r.oid " \
	"     WHERE NOT t.tgisinternal AND t.tgenabled OPERATOR(pg_catalog.=) ANY (ARRAY['R', 'A']::pg_catalog.\"char\"[]) " \
	"  UNION SELECT r.top, 'pg_catalog.pg_rewrite'::pg_catalog.regclass, w.oid, c.relowner FROM rels r " \
	"      JOIN pg_catalog.pg_rewrite w ON w.ev_class OPERATOR(pg_catalog.=) r.oid " \
	"      JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) r.oid " \
	"     WHERE w.ev_type OPERATOR(pg_catalog.<>) '1' AND w.ev_enabled OPERATOR(pg_catalog.=) ANY (ARRAY['R', 'A']::pg_catalog.\"char\"[]) " \
	"  UNION SELECT s.top, 'pg_catalog.pg_constraint'::pg_catalog.regclass, c.oid, NULL FROM types s " \
	"      JOIN pg_catalog.pg_constraint c ON c.contypid OPERATOR(pg_catalog.=) s.typ), " \
	"calls(top, classid, objid, fn, owner) AS ( " \
	"    SELECT o.top, o.classid, o.objid, " \
	"           CASE WHEN d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass THEN d.refobjid " \
	"                ELSE (SELECT op.oprcode::pg_catalog.oid FROM pg_catalog.pg_operator op WHERE op.oid OPERATOR(pg_catalog.=) d.refobjid) END, " \
	"           NULL::pg_catalog.oid " \
	"      FROM objs o JOIN pg_catalog.pg_depend d ON d.classid OPERATOR(pg_catalog.=) o.classid AND d.objid OPERATOR(pg_catalog.=) o.objid " \
	"     WHERE d.refclassid OPERATOR(pg_catalog.=) ANY (ARRAY['pg_catalog.pg_proc'::pg_catalog.regclass, 'pg_catalog.pg_operator'::pg_catalog.regclass]) " \
	"  UNION SELECT o.top, o.classid, o.objid, NULL, o.owner FROM objs o WHERE o.owner IS NOT NULL) " \
	"SELECT DISTINCT c.top, pg_catalog.pg_describe_object(c.classid, c.objid, 0), " \
	"       COALESCE(p.oid::pg_catalog.regprocedure::pg_catalog.text, ''), " \
	"       pg_catalog.pg_get_userbyid(COALESCE(p.proowner, c.owner)) " \
	"  FROM calls c LEFT JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) c.fn " \
	" WHERE (p.oid IS NOT NULL OR c.owner IS NOT NULL) AND NOT COALESCE(p.prosecdef, false) " \
	"   AND NOT EXISTS (SELECT FROM pg_catalog.pg_roles a " \
	"                    WHERE a.oid OPERATOR(pg_catalog.=) COALESCE(p.proowner, c.owner) AND a.rolsuper) " \
	" ORDER BY 1, 2, 3"

/* No code of a non-superuser on the shard's tables that the mover, a superuser there, would run; else said, false. */
static bool
foreign_code_on(Server *server, const TableInfo *tables, int ntables)
{
	char	   *list;
	size_t		len = 3;
	const char *params[1];
	PGresult   *res;
	bool		ok;

	if (!server->superuser)
		return true;
	/* the registered tables as a text[] literal: each name quoted, its quotes and backslashes escaped */
	for (int i = 0; i < ntables; i++)
		len += 2 * strlen(tables[i].table_name) + 3;
	list = malloc(len);
	strcpy(list, "{");
	for (int i = 0; i < ntables; i++)
	{
		char	   *out = list + strlen(list);

		if (i > 0)
			*out++ = ',';
		*out++ = '"';
		for (const char *p = tables[i].table_name; *p; p++)
		{
			if (*p == '"' || *p == '\\')
				*out++ = '\\';
			*out++ = *p;
		}
		*out++ = '"';
		*out = '\0';
	}
	strcat(list, "}");
	params[0] = list;
	res = query(server, FOREIGN_CODE, 1, params);
	free(list);
	if (res == NULL)
		return false;
	ok = PQntuples(res) == 0;
	if (!ok)
	{
		const char *fn = PQgetvalue(res, 0, 2);
		char	   *more = PQntuples(res) > 1 ? format_text(" (%d such objects)", PQntuples(res)) : NULL;

		report("error", "table \"%s\" on shard \"%s\" has code of role \"%s\" that the mover would run as a superuser",
			   PQgetvalue(res, 0, 0), server->name, PQgetvalue(res, 0, 3));
		if (fn[0] != '\0')
			report("detail", "%s calls function %s, owned by role \"%s\", which is not a superuser; the mover's role on shard \"%s\" is. "
				   "A move writes as replication does, where ENABLE REPLICA and ENABLE ALWAYS triggers, CHECK constraints, index expressions, "
				   "generated columns and domain constraints run with the writer's rights%s. No step was fenced.",
				   PQgetvalue(res, 0, 1), fn, PQgetvalue(res, 0, 3), server->name, more ? more : "");
		else
			report("detail", "%s, of role \"%s\", which is not a superuser, runs with the writer's rights; the mover's role on shard \"%s\" is a superuser%s. No step was fenced.",
				   PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 3), server->name, more ? more : "");
		report("hint", "Make such a function SECURITY DEFINER (it then runs as its owner), or move with a role that is no superuser "
			   "and is a member of chash_mover in the shard's chash_shard.server (blocking moves only: --online needs a superuser).");
		free(more);
		config_error = true;
	}
	PQclear(res);
	return ok;
}

/*
 * Neither shard has code of a non-superuser on the registered tables that
 * the move would run with the rights of the mover, a superuser there
 * (docs/shards.md, "Whose code a move runs"): refused before any fence,
 * and config_error set.
 */
bool
foreign_code_check(Server *src, Server *tgt, const TableInfo *tables, int ntables)
{
	return foreign_code_on(src, tables, ntables) && foreign_code_on(tgt, tables, ntables);
}
