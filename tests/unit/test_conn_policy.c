/*
 * test_conn_policy.c - what a server-side connection string may set and
 * who it may connect as (src/core/conn_policy.c)
 */
#include <stddef.h>
#include <string.h>

#include "conn_policy.h"
#include "unit.h"

#define N(a) ((int) (sizeof(a) / sizeof(a[0])))

void
unit_main(void)
{
	static const char *const refused[] = {
		"options", "service", "servicefile", "passfile", "sslkey", "sslcert", "sslpassword",
		"sslrootcert", "sslcrl", "sslcrldir", "krbsrvname", "gsslib", "replication", "no_such_keyword"
	};
	static const char *const allowed[] = {"host", "hostaddr", "port", "dbname", "user", "password", "sslmode",
	"connect_timeout", "requirepeer", "application_name"};
	const char *bad = NULL;

	for (int i = 0; i < N(refused); i++)
	{
		const char *k[] = {"host", refused[i]};
		const char *v[] = {"h", "x"};

		CHECK(!conn_policy_keyword_allowed(refused[i]));
		bad = NULL;
		/* refused for a superuser too: the string may be another role's */
		CHECK(conn_policy_check(k, v, 2, "postgres", true, &bad) == CONN_POLICY_KEYWORD);
		CHECK(bad != NULL && strcmp(bad, refused[i]) == 0);
		CHECK(conn_policy_check(k, v, 2, "collector", false, &bad) == CONN_POLICY_KEYWORD);
	}
	for (int i = 0; i < N(allowed); i++)
		CHECK(conn_policy_keyword_allowed(allowed[i]));

	/* an unset or empty value is no keyword set */
	{
		const char *k[] = {"options", "passfile", "host"};
		const char *v[] = {NULL, "", "h"};

		CHECK(conn_policy_check(k, v, 3, "collector", false, &bad) == CONN_POLICY_OK);
	}
	/* another role: only with its password in the string, unless a superuser */
	{
		const char *k[] = {"host", "user", "password"};
		const char *v[] = {"h", "mover", NULL};
		const char *v_pw[] = {"h", "mover", "secret"};
		const char *v_empty[] = {"h", "mover", ""};
		const char *v_self[] = {"h", "collector", NULL};

		CHECK(conn_policy_check(k, v, 3, "collector", false, &bad) == CONN_POLICY_PASSWORD);
		CHECK(strcmp(bad, "user") == 0);
		CHECK(conn_policy_check(k, v_empty, 3, "collector", false, &bad) == CONN_POLICY_PASSWORD);
		CHECK(conn_policy_check(k, v_pw, 3, "collector", false, &bad) == CONN_POLICY_OK);
		CHECK(conn_policy_check(k, v_self, 3, "collector", false, &bad) == CONN_POLICY_OK);
		CHECK(conn_policy_check(k, v, 3, "postgres", true, &bad) == CONN_POLICY_OK);
		CHECK(strcmp(conn_policy_user(k, v, 3, "collector", false), "mover") == 0);
	}
	/* no user: the role itself, never libpq's default (the server's user) */
	{
		const char *k[] = {"host", "user"};
		const char *v[] = {"h", NULL};

		CHECK(conn_policy_check(k, v, 2, "collector", false, &bad) == CONN_POLICY_OK);
		CHECK(strcmp(conn_policy_user(k, v, 2, "collector", false), "collector") == 0);
		CHECK(conn_policy_user(k, v, 2, "postgres", true) == NULL);
	}
	/* a string libpq cannot parse (a bare database name): nothing set, the role still connects as itself */
	CHECK(conn_policy_check(NULL, NULL, 0, "collector", false, &bad) == CONN_POLICY_OK);
	CHECK(strcmp(conn_policy_user(NULL, NULL, 0, "collector", false), "collector") == 0);
}
