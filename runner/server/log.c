/* runner/server/log.c — slog-style and gin-style log lines on stderr, one whole line per call.
 *
 * Formats only: it does not decide what is worth logging, and it never exits.
 */
#include "config.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "runner/server/envconfig.h"
#include "runner/server/log.h"

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

static bool log_off(const struct rn_log *l, enum rn_log_level lv)
{
	return (lv == RN_LOG_DEBUG && (!l || l->debug < 1)) || (l && l->quiet && lv < RN_LOG_ERROR);
}

/* msg is always quoted (orun's lines always were); attrs follow as given. */
static void emit(enum rn_log_level lv, const char *msg, const char *attrs)
{
	static const char *names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
	char ts[96];
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
	fputc('"', stderr);
	if (attrs && *attrs) {
		fputc(' ', stderr);
		fputs(attrs, stderr);
	}
	fputc('\n', stderr);
	pthread_mutex_unlock(&log_mu);
}

void rn_log(const struct rn_log *l, enum rn_log_level lv, const char *fmt, ...)
{
	if (log_off(l, lv))
		return;
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	emit(lv, msg, NULL);
}

void rn_log_attrs(const struct rn_log *l, enum rn_log_level lv, const char *msg, const char *attrs, ...)
{
	if (log_off(l, lv))
		return;
	char a[2048];
	va_list ap;
	va_start(ap, attrs);
	vsnprintf(a, sizeof a, attrs, ap);
	va_end(ap);
	emit(lv, msg, a);
}

const char *rn_log_value(const char *s, char *buf, size_t size)
{
	bool quote = !*s;
	for (const char *p = s; *p && !quote; p++)
		quote = *p == ' ' || *p == '=' || *p == '"' || (unsigned char)*p < 0x20 || *p == 0x7f;
	if (!quote) {
		snprintf(buf, size, "%s", s);
		return buf;
	}
	size_t n = 0;
	if (size < 3) {
		if (size)
			buf[0] = 0;
		return buf;
	}
	buf[n++] = '"';
	for (const char *p = s; *p && n + 6 < size; p++) {
		unsigned char c = (unsigned char)*p;
		if (c == '"' || c == '\\') {
			buf[n++] = '\\';
			buf[n++] = (char)c;
		} else if (c == '\n') {
			buf[n++] = '\\';
			buf[n++] = 'n';
		} else if (c < 0x20 || c == 0x7f) {
			n += (size_t)snprintf(buf + n, size - n, "\\x%02x", c);
		} else {
			buf[n++] = (char)c;
		}
	}
	buf[n++] = '"';
	buf[n] = 0;
	return buf;
}

void rn_log_access(const struct rn_log *l, int status, double seconds, const char *remote, const char *method,
		   const char *path)
{
	if (l && l->quiet)
		return;
	char when[32], dur[48];
	time_t t = time(NULL);
	struct tm tm;
	localtime_r(&t, &tm);
	strftime(when, sizeof when, "%Y/%m/%d - %H:%M:%S", &tm);
	/* gin prints the latency as Go's time.Duration, whole seconds past a minute */
	int64_t ns = seconds <= 0 ? 0 : seconds >= 9e9 ? INT64_C(9000000000000000000) : (int64_t)(seconds * 1e9);
	if (ns > 60 * 1000000000LL)
		ns -= ns % 1000000000LL;
	rn_go_format_duration(ns, dur, sizeof dur);
	int runes = 0; /* Go pads %13v by characters: "µ" is one */
	for (const char *p = dur; *p; p++)
		runes += ((unsigned char)*p & 0xC0) != 0x80;
	int pad = runes < 13 ? 13 - runes : 0;
	pthread_mutex_lock(&log_mu);
	fprintf(stderr, "[GIN] %s | %3d | %*s%s | %15s | %-7s  \"%s\"\n", when, status, pad, "", dur, remote, method,
		path);
	pthread_mutex_unlock(&log_mu);
}
