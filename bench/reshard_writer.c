/*
 * bench/reshard's client: writes one row at a time, 2 ms apart, to the
 * tenants it is given (those of the moving slots), each to the shard the
 * directory database routes the tenant to, until the stop file exists.
 * A write refused while its slot is fenced (40001) is retried on the same
 * shard; one sent to a shard that no longer owns the tenant (SH001) is
 * routed again.  For each write that was refused, prints "blocked S": the
 * seconds from its first refusal to its acknowledgement.  Last line:
 * "acknowledged N".
 * Usage: reshard_writer DIRECTORY_CONNINFO DIRECTORY TENANTS_FILE STOP_FILE FIRST_ID
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

typedef struct Shard
{
	char		name[64];
	PGconn	   *conn;
} Shard;

static Shard shards[16];
static int	nshards;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static PGconn *
open_or_die(const char *conninfo)
{
	PGconn	   *conn = PQconnectdb(conninfo);

	if (PQstatus(conn) != CONNECTION_OK)
	{
		fprintf(stderr, "reshard_writer: %s", PQerrorMessage(conn));
		exit(1);
	}
	return conn;
}

/* the tenant's shard, by the directory database */
static Shard *
route(PGconn *dir, const char *directory, const char *tenant)
{
	const char *params[2] = {directory, tenant};
	PGresult   *res = PQexecParams(dir, "SELECT r.shard, s.server FROM chash_route($1, $2) r(shard) "
									"JOIN chash_shard s ON s.directory = $1 AND s.shard = r.shard",
									2, NULL, params, NULL, NULL, 0);
	Shard	   *found = NULL;

	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
	{
		fprintf(stderr, "reshard_writer: no route for %s: %s", tenant, PQerrorMessage(dir));
		exit(1);
	}
	for (int i = 0; i < nshards; i++)
		if (strcmp(shards[i].name, PQgetvalue(res, 0, 0)) == 0)
			found = &shards[i];
	if (found == NULL && nshards < 16)
	{
		found = &shards[nshards++];
		snprintf(found->name, sizeof(found->name), "%s", PQgetvalue(res, 0, 0));
		found->conn = open_or_die(PQgetvalue(res, 0, 1));
	}
	PQclear(res);
	return found;
}

int
main(int argc, char **argv)
{
	PGconn	   *dir;
	FILE	   *f;
	char	  **tenants = NULL;
	int			ntenants = 0;
	char		line[256];
	long long	id;
	long long	acked = 0;

	if (argc != 6)
	{
		fprintf(stderr, "usage: reshard_writer DIRECTORY_CONNINFO DIRECTORY TENANTS_FILE STOP_FILE FIRST_ID\n");
		return 2;
	}
	dir = open_or_die(argv[1]);
	if ((f = fopen(argv[3], "r")) == NULL)
	{
		perror(argv[3]);
		return 1;
	}
	while (fgets(line, sizeof(line), f))
	{
		line[strcspn(line, "\n")] = '\0';
		tenants = realloc(tenants, (ntenants + 1) * sizeof(char *));
		tenants[ntenants++] = strdup(line);
	}
	fclose(f);
	id = atoll(argv[5]);
	for (int n = 0; access(argv[4], F_OK) != 0; n++)
	{
		const char *tenant = tenants[n % ntenants];
		char		ids[32];
		const char *params[2] = {tenant, ids};
		Shard	   *shard = route(dir, argv[2], tenant);
		double		refused_at = 0;

		snprintf(ids, sizeof(ids), "%lld", id++);
		for (;;)
		{
			PGresult   *res = PQexecParams(shard->conn,
										   "INSERT INTO accounts (org_id, id, balance, note) VALUES ($1, $2, 0, 'written')",
										   2, NULL, params, NULL, NULL, 0);
			const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

			if (PQresultStatus(res) == PGRES_COMMAND_OK)
			{
				PQclear(res);
				break;
			}
			if (state == NULL || (strcmp(state, "40001") != 0 && strcmp(state, "SH001") != 0))
			{
				fprintf(stderr, "reshard_writer: %s", PQerrorMessage(shard->conn));
				return 1;
			}
			if (refused_at == 0)
				refused_at = now();
			if (strcmp(state, "SH001") == 0)
				shard = route(dir, argv[2], tenant);
			PQclear(res);
			usleep(1000);
		}
		acked++;
		if (refused_at > 0)
			printf("blocked %.4f\n", now() - refused_at);
		usleep(2000);
	}
	printf("acknowledged %lld\n", acked);
	return 0;
}
