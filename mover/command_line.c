/*
 * chash_move's command line: options, --help and their checks (the
 * defaults are options.c's).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chash_move.h"

static void
usage(void)
{
	printf("%s carries out a running chash migration: it moves the rows of each step\n"
		   "from the step's source shard to its target shard.\n\n", PROGNAME);
	printf("Usage:\n  %s [OPTION]... DIRECTORY_CONNINFO\n\n", PROGNAME);
	printf("Options:\n");
	printf("  -m, --migration=N       move migration N\n");
	printf("  -d, --directory=NAME    move the running migration of directory NAME\n");
	printf("  -j, --jobs=N            move N batches at once (default: 1)\n");
	printf("  -n, --max-steps=N       stop after N steps\n");
	printf("      --batch-steps=N     claim at most N steps in one batch (default: as many\n"
		   "                          as chash_steps_max() allows)\n");
	printf("      --batch-rows=N      aim at N rows a batch, 0 for no bound (default: 50000)\n");
	printf("      --batch-bytes=N     at most N bytes a batch, as far as chash_tenant_size\n"
		   "                          knows the tenants (default: no bound)\n");
	printf("      --max-rate=ROWS     move at most ROWS rows a second, all jobs together\n");
	printf("      --max-lag=SIZE      fence no batch while its source's or target's replica\n"
		   "                          of the directory lags by more than SIZE bytes of the\n"
		   "                          directory's WAL (kB, MB, GB allowed; default: no bound)\n");
	printf("      --dry-run           print the batches with their rows, bytes and estimated\n"
		   "                          time, then exit; moves nothing\n");
	printf("      --lease=SECONDS     how long a step stays held without renewal (default: 30)\n");
	printf("      --fence-timeout=SECONDS\n"
		   "                          how long a shard may take to apply a fence or a\n"
		   "                          completion: then the batch is given back, or its\n"
		   "                          delete left to a retry (default: 60)\n");
	printf("      --online            copy with logical replication while writes go on;\n"
		   "                          writes wait only for the final catch-up\n");
	printf("  -v, --verbose           report every step\n");
	printf("  -V, --version           show the version, then exit\n");
	printf("  -?, --help              show this help, then exit\n\n");
	printf("DIRECTORY_CONNINFO is a libpq connection string or URI for the directory\n"
		   "database.  The shards are reached through chash_shard.server: a connection\n"
		   "string, or else a service name.  Give passwords through ~/.pgpass,\n"
		   "PGPASSFILE or a service file, never on the command line.\n\n");
	printf("Exit status: 0 when the migration is done (or --max-steps steps moved),\n"
		   "1 when a step failed or was interrupted, 2 for bad usage.\n");
}

static long long
parse_count(const char *option, const char *value, long long min, long long max)
{
	char	   *end;
	long long	n;

	errno = 0;
	n = strtoll(value, &end, 10);
	if (errno != 0 || end == value || *end != '\0' || n < min || n > max)
	{
		report("error", "invalid value \"%s\" for option %s", value, option);
		report("detail", "It must be an integer between %lld and %lld.", min, max);
		exit(2);
	}
	return n;
}

/* A size: bytes, or kB, MB, GB (of 1024) as PostgreSQL writes them. */
static long long
parse_size(const char *option, const char *value)
{
	static const struct
	{
		const char *unit;
		long long	factor;
	}			units[] = {{"", 1}, {"B", 1}, {"kB", 1024}, {"MB", 1024 * 1024}, {"GB", 1024LL * 1024 * 1024}};
	char	   *end;
	long long	n;

	errno = 0;
	n = strtoll(value, &end, 10);
	while (*end == ' ')
		end++;
	if (errno == 0 && end != value && n >= 0)
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (strcmp(end, units[i].unit) == 0 && n <= INT64_MAX / units[i].factor)
				return n * units[i].factor;
	report("error", "invalid value \"%s\" for option %s", value, option);
	report("detail", "It must be a number of bytes, or of kB, MB or GB (for example 16MB).");
	exit(2);
}

void
parse_options(int argc, char **argv)
{
	static const struct option long_options[] = {
		{"migration", required_argument, NULL, 'm'},
		{"directory", required_argument, NULL, 'd'},
		{"jobs", required_argument, NULL, 'j'},
		{"max-steps", required_argument, NULL, 'n'},
		{"lease", required_argument, NULL, 'L'},
		{"batch-steps", required_argument, NULL, 'S'},
		{"batch-rows", required_argument, NULL, 'R'},
		{"batch-bytes", required_argument, NULL, 'B'},
		{"online", no_argument, NULL, 'O'},
		{"fence-timeout", required_argument, NULL, 'F'},
		{"max-rate", required_argument, NULL, 'M'},
		{"dry-run", no_argument, NULL, 'D'},
		{"max-lag", required_argument, NULL, 'G'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0}
	};
	int			c;

	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-?") == 0))
	{
		usage();
		exit(0);
	}
	if (argc > 1 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0))
	{
		printf("%s (chash) %s\n", PROGNAME, CHASH_VERSION);
		exit(0);
	}
	/* '?' is no option letter: getopt answers '?' for an unknown option */
	while ((c = getopt_long(argc, argv, "m:d:j:n:vV", long_options, NULL)) != -1)
	{
		switch (c)
		{
			case 'm':
				options.migration = parse_count("--migration", optarg, 1, INT64_MAX);
				break;
			case 'd':
				options.directory = optarg;
				break;
			case 'j':
				options.jobs = (int) parse_count("--jobs", optarg, 1, 64);
				break;
			case 'n':
				options.max_steps = parse_count("--max-steps", optarg, 0, INT64_MAX);
				break;
			case 'L':
				options.lease_seconds = (int) parse_count("--lease", optarg, 1, 86400);
				break;
			case 'S':
				options.batch_steps = (int) parse_count("--batch-steps", optarg, 1, 1000000);
				break;
			case 'R':
				options.batch_rows = parse_count("--batch-rows", optarg, 0, INT64_MAX);
				options.batch_rows_given = true;
				break;
			case 'B':
				options.batch_bytes = parse_count("--batch-bytes", optarg, 0, INT64_MAX);
				break;
			case 'F':
				options.fence_timeout = (int) parse_count("--fence-timeout", optarg, 1, 86400);
				break;
			case 'O':
				options.online = true;
				break;
			case 'M':
				options.max_rate = parse_count("--max-rate", optarg, 1, INT64_MAX);
				break;
			case 'G':
				options.max_lag = parse_size("--max-lag", optarg);
				break;
			case 'D':
				options.dry_run = true;
				break;
			case 'v':
				options.verbose = true;
				break;
			case 'h':
				usage();
				exit(0);
			case 'V':
				printf("%s (chash) %s\n", PROGNAME, CHASH_VERSION);
				exit(0);
			case '?':
				/* -? asks for help; anything else getopt did not know is bad usage */
				if (optopt == '?')
				{
					usage();
					exit(0);
				}
				/* fall through */
			default:
				fprintf(stderr, "Try \"%s --help\" for more information.\n", PROGNAME);
				exit(2);
		}
	}
	if (optind != argc - 1)
	{
		if (optind >= argc)
			report("error", "no directory connection string given");
		else
			report("error", "too many command-line arguments (first is \"%s\")", argv[optind + 1]);
		fprintf(stderr, "Try \"%s --help\" for more information.\n", PROGNAME);
		exit(2);
	}
	if (options.migration != 0 && options.directory != NULL)
	{
		report("error", "options --migration and --directory cannot be used together");
		exit(2);
	}
	options_throttle_batches();
	options.conninfo = argv[optind];
}
