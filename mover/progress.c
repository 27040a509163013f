/*
 * The progress line, on a terminal only (stderr), redrawn in place:
 * "1,200 of 3,276 slots · 2,400,000 rows · 41 MB/s · 3 min left".
 * Rows and bytes are this process's; steps done and the total are the
 * migration's, from chash_migration_progress.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "chash_move.h"

Counters	counters = {0, 0, 0, 0, 0, "steps"};
pthread_mutex_t counters_lock = PTHREAD_MUTEX_INITIALIZER;
bool		progress_on = false;

static double started;
static long long done_at_start = -1;
static bool drawn;

double
now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void
progress_start(void)
{
	started = now_seconds();
	progress_on = isatty(fileno(stderr));
}

void
counters_add(long long rows, long long bytes)
{
	pthread_mutex_lock(&counters_lock);
	counters.rows += rows;
	counters.bytes += bytes;
	pthread_mutex_unlock(&counters_lock);
}

void
mover_counts(long long *steps, long long *rows, long long *bytes)
{
	pthread_mutex_lock(&counters_lock);
	*steps = counters.steps;
	*rows = counters.rows;
	*bytes = counters.bytes;
	pthread_mutex_unlock(&counters_lock);
}

/* 1234567 -> "1,234,567" */
static const char *
grouped(long long n, char *buf)
{
	char		digits[32];
	int			len = snprintf(digits, sizeof(digits), "%lld", n < 0 ? 0 : n);
	char	   *p = buf;

	for (int i = 0; i < len; i++)
	{
		if (i > 0 && (len - i) % 3 == 0)
			*p++ = ',';
		*p++ = digits[i];
	}
	*p = '\0';
	return buf;
}

static void
duration(double seconds, char *buf, size_t size)
{
	if (seconds < 60)
		snprintf(buf, size, "%.0f s", seconds);
	else if (seconds < 3600)
		snprintf(buf, size, "%.0f min", seconds / 60);
	else
		snprintf(buf, size, "%.1f h", seconds / 3600);
}

/* called with output_lock held */
void
progress_clear(void)
{
	if (progress_on && drawn)
	{
		fputs("\r\033[K", stderr);
		drawn = false;
	}
}

void
progress_draw(bool final)
{
	Counters	c;
	double		elapsed = now_seconds() - started;
	char		a[32],
				b[32],
				r[32],
				left[32] = "";
	char		line[256];

	if (!progress_on)
		return;
	pthread_mutex_lock(&counters_lock);
	c = counters;
	if (done_at_start < 0 && c.total > 0)
		done_at_start = c.done;
	pthread_mutex_unlock(&counters_lock);
	if (c.total == 0)
		return;
	/* time left from this run's pace; at the end, how long it took */
	if (final)
	{
		duration(elapsed, left, sizeof(left));
		memmove(left + 3, left, strlen(left) + 1);
		memcpy(left, "in ", 3);
	}
	else if (c.done > done_at_start && done_at_start >= 0 && c.done < c.total)
	{
		double		rate = (c.done - done_at_start) / elapsed;

		duration((c.total - c.done) / rate, left, sizeof(left));
		strcat(left, " left");
	}
	snprintf(line, sizeof(line), "%s of %s %s \u00b7 %s rows \u00b7 %.1f MB/s%s%s",
			 grouped(c.done, a), grouped(c.total, b), c.unit, grouped(c.rows, r),
			 elapsed > 0 ? c.bytes / elapsed / 1e6 : 0.0, left[0] ? " \u00b7 " : "", left);
	pthread_mutex_lock(&output_lock);
	fprintf(stderr, "\r\033[K%s", line);
	drawn = true;
	if (final)
	{
		fputc('\n', stderr);
		drawn = false;
	}
	fflush(stderr);
	pthread_mutex_unlock(&output_lock);
}
