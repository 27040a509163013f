/*
 * conn_policy.c - the keywords a server-side connection string may set,
 * and who it may connect as (conn_policy.h)
 *
 * An allow-list: a keyword libpq learns later is refused until it is
 * judged.  Refused: what changes who connects or how it proves it
 * (service, servicefile, passfile, krbsrvname, gsslib), what the session
 * runs (options, replication: the callers set both), and what reads the
 * server's files (sslcert, sslkey, sslpassword, sslrootcert, sslcrl,
 * sslcrldir).
 */
#include <stddef.h>
#include <string.h>

#include "conn_policy.h"

static const char *const allowed[] = {
	"host", "hostaddr", "port", "dbname", "user", "password",
	"connect_timeout", "client_encoding", "application_name", "fallback_application_name",
	"keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count",
	"tcp_user_timeout", "target_session_attrs", "load_balance_hosts",
	"sslmode", "requiressl", "sslcompression", "sslsni", "ssl_min_protocol_version",
	"ssl_max_protocol_version", "sslnegotiation", "sslcertmode",
	"channel_binding", "gssencmode", "gssdelegation", "require_auth", "requirepeer"
};

static bool
is_set(const char *value)
{
	return value != NULL && value[0] != '\0';
}

bool
conn_policy_keyword_allowed(const char *keyword)
{
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		if (strcmp(keyword, allowed[i]) == 0)
			return true;
	return false;
}

static const char *
value_of(const char *const *keywords, const char *const *values, int n, const char *keyword)
{
	for (int i = 0; i < n; i++)
		if (strcmp(keywords[i], keyword) == 0 && is_set(values[i]))
			return values[i];
	return NULL;
}

conn_policy_result
conn_policy_check(const char *const *keywords, const char *const *values, int n,
				  const char *role, bool superuser, const char **bad)
{
	const char *user;

	for (int i = 0; i < n; i++)
	{
		if (is_set(values[i]) && !conn_policy_keyword_allowed(keywords[i]))
		{
			*bad = keywords[i];
			return CONN_POLICY_KEYWORD;
		}
	}
	if (superuser)
		return CONN_POLICY_OK;
	user = value_of(keywords, values, n, "user");
	if (user != NULL && strcmp(user, role) != 0 && value_of(keywords, values, n, "password") == NULL)
	{
		*bad = "user";
		return CONN_POLICY_PASSWORD;
	}
	return CONN_POLICY_OK;
}

const char *
conn_policy_user(const char *const *keywords, const char *const *values, int n,
				 const char *role, bool superuser)
{
	const char *user = value_of(keywords, values, n, "user");

	if (user != NULL)
		return user;
	return superuser ? NULL : role;
}
