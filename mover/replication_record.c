/*
 * The record of the online moves' replication objects on the directory
 * database (src/sql/1.1--1.2/81_replication_objects.sql): online_subscribe.c
 * records a step's publication, slot and subscription before it creates
 * them, so that the cleaner (replication_cleaner.c) finds whatever a mover
 * that died, or a step given back by hand, left behind.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chash_move.h"

bool
replication_objects_record(Server *dir, int step, const char *source, const char *target, const char *name)
{
	char	   *id = format_text("%lld", migration.id);
	char	   *s = format_text("%d", step);
	const char *params[6] = {id, s, migration.holder, source, target, name};
	PGresult   *res = query_owned(dir, format_text("SELECT %s.chash_replication_object_record($1, $2::int, $3, $4, $5, $6)",
											 dir->schema), 6, params);

	free(id);
	free(s);
	PQclear(res);
	return res != NULL;
}
