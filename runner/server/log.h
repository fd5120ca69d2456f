/* runner/server/log.h — the server's log lines on stderr: Ollama's slog text style (`time=... level=INFO
 * msg="..."`) and gin's access lines (`[GIN] 2024/05/01 - 12:34:56 | 200 | ...`).
 *
 * A leaf module: `orun serve`'s start-up and the API handlers both log through it. Thread-safe (one mutex
 * keeps lines whole).
 */
#ifndef ORUN_RUNNER_SERVER_LOG_H
#define ORUN_RUNNER_SERVER_LOG_H

#include <stdbool.h>
#include <stddef.h>

enum rn_log_level { RN_LOG_DEBUG, RN_LOG_INFO, RN_LOG_WARN, RN_LOG_ERROR };

/* Who logs and how much: debug >= 1 shows DEBUG lines (OLLAMA_DEBUG); quiet keeps only ERROR lines and no
 * access lines (in-process use, e.g. orun bench --api). */
struct rn_log {
	int debug;
	bool quiet;
};

/* One log line (printf-style message, escaped as slog quotes it). l may be NULL: then DEBUG lines are dropped
 * and the others printed. */
void rn_log(const struct rn_log *l, enum rn_log_level lv, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* One line with slog attributes after the message, as Ollama's `msg="loading model" num_ctx=4096 ...`: attrs is
 * a printf format for "key=value key=value" written as is (quote values that may hold spaces or quotes with
 * rn_log_value). */
void rn_log_attrs(const struct rn_log *l, enum rn_log_level lv, const char *msg, const char *attrs, ...)
	__attribute__((format(printf, 4, 5)));

/* s as slog's text handler writes a value: as it is, or quoted with Go's escapes when it is empty or holds a
 * space, '=', '"' or a control character. Returns buf (truncated to size). */
const char *rn_log_value(const char *s, char *buf, size_t size);

/* One gin access line for a finished request (nothing when quiet). */
void rn_log_access(const struct rn_log *l, int status, double seconds, const char *remote, const char *method,
		   const char *path);

#endif
