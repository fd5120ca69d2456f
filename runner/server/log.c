/* runner/server/log.c — slog-style and gin-style log lines on stderr, one whole line per call.
 *
 * Formats only: it does not decide what is worth logging, and it never exits.
 */
#include "config.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "runner/server/log.h"

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

void rn_log(const struct rn_log *l, enum rn_log_level lv, const char *fmt, ...)
{
	if ((lv == RN_LOG_DEBUG && (!l || l->debug < 1)) || (l && l->quiet && lv < RN_LOG_ERROR))
		return;
	static const char *names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
	char msg[2048], ts[96];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	struct tm tm;
	localtime_r(&now.tv_sec, &tm);
	char zone[8];
	strftime(zone, sizeof zone, "%z", &tm);
	snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03ld%.3s:%.2s", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, now.tv_nsec / 1000000, zone, zone + 3);
	pthread_mutex_lock(&log_mu);
	fprintf(stderr, "time=%s level=%s source=orun msg=\"", ts, names[lv]);
	for (const char *p = msg; *p; p++) {
		if (*p == '"' || *p == '\\')
			fputc('\\', stderr);
		if (*p == '\n')
			fputs("\\n", stderr);
		else
			fputc(*p, stderr);
	}
	fputs("\"\n", stderr);
	pthread_mutex_unlock(&log_mu);
}

void rn_log_access(const struct rn_log *l, int status, double seconds, const char *remote, const char *method,
		   const char *path)
{
	if (l && l->quiet)
		return;
	char when[32], dur[32];
	time_t t = time(NULL);
	struct tm tm;
	localtime_r(&t, &tm);
	strftime(when, sizeof when, "%Y/%m/%d - %H:%M:%S", &tm);
	if (seconds < 1e-3)
		snprintf(dur, sizeof dur, "%.3fµs", seconds * 1e6);
	else if (seconds < 1)
		snprintf(dur, sizeof dur, "%.6fms", seconds * 1e3);
	else
		snprintf(dur, sizeof dur, "%.9fs", seconds);
	pthread_mutex_lock(&log_mu);
	fprintf(stderr, "[GIN] %s | %3d | %13s | %15s | %-7s \"%s\"\n", when, status, dur, remote, method, path);
	pthread_mutex_unlock(&log_mu);
}
