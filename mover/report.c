/*
 * Messages, as PostgreSQL's client programs write them, and the text they
 * are made of (format_text):
 * "chash_move: error: ...", then "detail:" and "hint:" lines.  Jobs run in
 * threads, so a message is written whole, and the progress line is
 * cleared first and drawn again by the next tick.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chash_move.h"

pthread_mutex_t output_lock = PTHREAD_MUTEX_INITIALIZER;
report_hook_fn report_hook;		/* engine.h: a program's own sink */
__thread const char *report_steps;

/*
 * Memory.  Every allocation of the engine goes through these, so none
 * returns NULL.  When one fails, the program's out_of_memory_hook
 * (engine.h) decides: chash_move's (main.c) ends the process.  Without
 * a hook (the server's worker), the engine never ends the process: it
 * says so once, stops the run (the jobs see stop_requested and failed)
 * and tries again every 100 ms, so the thread goes on once memory is
 * back and winds down with the run.
 */
void		(*out_of_memory_hook) (void);

static void
out_of_memory(int attempt)
{
	if (attempt == 0)
	{
		report("error", "out of memory");
		if (out_of_memory_hook != NULL)
			out_of_memory_hook();
		failed = true;
		stop_requested = 1;
	}
	usleep(100 * 1000);
}

void *
xmalloc(size_t size)
{
	void	   *p;

	for (int attempt = 0; (p = malloc(size ? size : 1)) == NULL; attempt++)
		out_of_memory(attempt);
	return p;
}

void *
xcalloc(size_t n, size_t size)
{
	void	   *p;

	for (int attempt = 0; (p = calloc(n ? n : 1, size ? size : 1)) == NULL; attempt++)
		out_of_memory(attempt);
	return p;
}

void *
xrealloc(void *old, size_t size)
{
	void	   *p;

	for (int attempt = 0; (p = realloc(old, size ? size : 1)) == NULL; attempt++)
		out_of_memory(attempt);
	return p;
}

/* XXH64's state (rowsum.c), allocated by xxhash itself */
XXH64_state_t *
xhash_state(void)
{
	XXH64_state_t *p;

	for (int attempt = 0; (p = XXH64_createState()) == NULL; attempt++)
		out_of_memory(attempt);
	return p;
}

/* A message's text, or any other allocated text: the caller frees it. */
char *
format_text(const char *fmt,...)
{
	va_list		ap;
	int			n;
	char	   *s;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;					/* a format error: an empty text */
	s = xmalloc(n + 1);
	s[0] = '\0';
	va_start(ap, fmt);
	vsnprintf(s, n + 1, fmt, ap);
	va_end(ap);
	return s;
}

/* list with sep and item after it, in a new text; list (malloc'd) freed */
char *
text_append(char *list, const char *sep, const char *item)
{
	char	   *longer = format_text("%s%s%s", list, sep, item);

	free(list);
	return longer;
}

void
report(const char *level, const char *fmt,...)
{
	va_list		ap;

	if (report_hook != NULL)
	{
		char		message[2048];

		va_start(ap, fmt);
		vsnprintf(message, sizeof(message), fmt, ap);
		va_end(ap);
		pthread_mutex_lock(&output_lock);
		report_hook(level, report_steps, message);
		pthread_mutex_unlock(&output_lock);
		return;
	}
	pthread_mutex_lock(&output_lock);
	progress_clear();
	if (strcmp(level, "detail") == 0 || strcmp(level, "hint") == 0)
		fprintf(stderr, "%s: %s: ", PROGNAME, level);
	else if (strcmp(level, "info") == 0)
		fprintf(stderr, "%s: ", PROGNAME);
	else
		fprintf(stderr, "%s: %s: ", PROGNAME, level);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	pthread_mutex_unlock(&output_lock);
}

/* A failed query: what we were doing, the server's message, its detail and hint. */
void
report_result(const char *level, const char *what, const PGresult *res, const PGconn *conn)
{
	const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	const char *detail = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL) : NULL;
	const char *hint = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_HINT) : NULL;
	char		buf[1024];

	if (primary == NULL)
	{
		/* a connection failure: libpq's own message, without its newline */
		snprintf(buf, sizeof(buf), "%s", conn ? PQerrorMessage(conn) : "unknown error");
		buf[strcspn(buf, "\n")] = '\0';
		primary = buf;
	}
	report(level, "%s: %s", what, primary);
	if (detail)
		report("detail", "%s", detail);
	if (hint)
		report("hint", "%s", hint);
}

/* report_result() of a text the caller allocated (format_text): freed here */
void
report_result_owned(const char *level, char *what, const PGresult *res, const PGconn *conn)
{
	report_result(level, what, res, conn);
	free(what);
}

/* '{"a","b"}': the values as a text[] literal, each quoted */
char *
text_array(char *const *values, int n)
{
	size_t		len = 3;
	char	   *out,
			   *p;

	for (int i = 0; i < n; i++)
		len += 2 * strlen(values[i]) + 3;
	out = p = xmalloc(len);
	*p++ = '{';
	for (int i = 0; i < n; i++)
	{
		if (i > 0)
			*p++ = ',';
		*p++ = '"';
		for (const char *c = values[i]; *c; c++)
		{
			if (*c == '"' || *c == '\\')
				*p++ = '\\';
			*p++ = *c;
		}
		*p++ = '"';
	}
	*p++ = '}';
	*p = '\0';
	return out;
}

/* For messages said once per run: true the first time a key is seen. */
bool
first_time(const char *key)
{
	static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
	static char **seen;
	static int	nseen;
	bool		first = true;

	pthread_mutex_lock(&seen_lock);
	for (int i = 0; i < nseen && first; i++)
		if (strcmp(seen[i], key) == 0)
			first = false;
	if (first)
	{
		seen = xrealloc(seen, (nseen + 1) * sizeof(char *));
		seen[nseen++] = format_text("%s", key);
	}
	pthread_mutex_unlock(&seen_lock);
	return first;
}
