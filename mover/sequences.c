/*
 * The target's sequences moved past the serial and identity values a
 * batch's rows brought along.
 */
#include <stdlib.h>

#include "chash_move.h"

/*
 * The moved rows keep their serial and identity values; the target's
 * sequences that hand such values out are moved past them, so an insert
 * there after the move never repeats one: setval to the largest moved
 * value (the smallest, for a descending sequence) only where the sequence
 * has not passed it yet.  Never moved back.  The step is fenced and its
 * rows verified on the target.
 */
bool
advance_sequences(Server *tgt, TableInfo *tables, int ntables, const StepTarget *target)
{
	for (int i = 0; i < ntables; i++)
		for (int j = 0; j < tables[i].nsequences; j++)
		{
			const OwnedSequence *q = &tables[i].sequences[j];
			char	   *pred = step_predicate(tgt, &tables[i], target);
			char	   *seq = escape_literal(tgt->conn, q->sequence);
			char	   *sql = format_text("SELECT pg_catalog.setval(%1$s, x.v) "
										  "  FROM (SELECT pg_catalog.%2$s(%3$s)::pg_catalog.int8 AS v FROM %4$s WHERE %5$s) x, "
										  "       pg_catalog.pg_sequence s "
										  " WHERE s.seqrelid = %1$s::pg_catalog.regclass AND x.v IS NOT NULL "
										  "   AND x.v BETWEEN s.seqmin AND s.seqmax "
										  "   AND x.v %6$s pg_catalog.nextval(%1$s)",
										  seq, q->ascending ? "max" : "min", q->column, tables[i].table_name, pred,
										  q->ascending ? ">=" : "<=");
			PGresult   *res = query(tgt, sql, 0, NULL);

			free(pred);
			free(seq);
			free(sql);
			if (res == NULL)
				return false;
			if (PQntuples(res) > 0 && options.verbose)
				report("info", "sequence \"%s\" on shard \"%s\" advanced to %s, past the values moved",
					   q->sequence, tgt->name, PQgetvalue(res, 0, 0));
			PQclear(res);
		}
	return true;
}
