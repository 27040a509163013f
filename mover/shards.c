/*
 * The shards a job talks to, one connection each (per thread): found by
 * name in the directory's chash_shard, opened once, checked to have joined
 * the directory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chash_move.h"

static __thread Server **shards;	/* pointers: callers keep them across lookups */
static __thread int nshards;

/* once per shard: no wait_fence there (the guard has not landed on it) */
static void
warn_no_wait_fence(Server *server)
{
	char	   *key = format_text("wait_fence\n%s", server->name);

	if (first_time(key))
	{
		report("warning", "shard \"%s\" has no chash_shard_wait_fence(): writes it admitted before a fence are not waited for",
			   server->name);
		report("hint", "Update chash there with ALTER EXTENSION chash UPDATE.");
	}
	free(key);
}

static Server *
shard(Server *dir, const char *name)
{
	Server	   *server = NULL;
	const char *params[2] = {migration.directory, name};
	PGresult   *res;

	for (int i = 0; i < nshards; i++)
		if (strcmp(shards[i]->name, name) == 0)
			server = shards[i];
	if (server == NULL)
	{
		res = query_owned(dir, format_text("SELECT server FROM %s.chash_shard WHERE directory = $1 AND shard = $2",
									 dir->schema), 2, params);
		if (res == NULL)
			return NULL;
		if (PQntuples(res) != 1 || PQgetisnull(res, 0, 0))
		{
			PQclear(res);
			report("error", "shard \"%s\" of directory \"%s\" has no server", name, migration.directory);
			report("hint", "Set its connection string with chash_set_shard('%s', '%s', server => '...').",
				   migration.directory, name);
			config_error = true;
			return NULL;
		}
		shards = xrealloc(shards, (nshards + 1) * sizeof(Server *));
		server = xcalloc(1, sizeof(Server));
		shards[nshards++] = server;
		server->name = format_text("%s", name);
		server->conninfo = conninfo_of_server(PQgetvalue(res, 0, 0));
		PQclear(res);
	}
	if (server->conn != NULL && PQstatus(server->conn) == CONNECTION_OK)
		return server;
	if (!server_open(server))
		return NULL;
	/* the shard must read the directory from a replica (or be the directory database) */
	params[1] = NULL;
	res = query_owned(server, format_text("SELECT FROM %s.chash_shard_member WHERE directory = $1", server->schema),
				1, params);
	if (res == NULL)
		return NULL;
	if (PQntuples(res) != 1)
	{
		PQclear(res);
		report("error", "shard \"%s\" has not joined directory \"%s\"", name, migration.directory);
		report("hint", "Run chash_shard_join() on it first.");
		server_close(server);
		config_error = true;
		return NULL;
	}
	PQclear(res);
	if (!server->has_wait_fence)
		warn_no_wait_fence(server);
	return server;
}

/* shard() for the cleaner of replication objects (replication_cleaner.c) */
Server *
step_shard(Server *dir, const char *name)
{
	return shard(dir, name);
}

/* Closes this thread's shard connections and forgets the shards: the thread ends, or cleans up. */
void
step_shards_close(void)
{
	for (int i = 0; i < nshards; i++)
	{
		server_close(shards[i]);
		free(shards[i]->name);
		free(shards[i]->conninfo);
		free(shards[i]->schema);
		free(shards[i]);
	}
	free(shards);
	shards = NULL;
	nshards = 0;
}
