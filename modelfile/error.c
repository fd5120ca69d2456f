/* modelfile/error.c — mf_strerror, mf_error_set and the warning list.
 *
 * The HTTP status defaults follow Ollama's handlers: bad input is 400, a missing model or blob 404,
 * everything else 500.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "modelfile/error.h"

const char *mf_strerror(int code)
{
	switch (code) {
	case MF_OK: return "success";
	case MF_ERR_NOMEM: return "out of memory";
	case MF_ERR_PARSE: return "parse error";
	case MF_ERR_INVALID: return "invalid value";
	case MF_ERR_NOT_FOUND: return "not found";
	case MF_ERR_IO: return "input/output error";
	case MF_ERR_DIGEST: return "digest mismatch";
	case MF_ERR_LIMIT: return "limit exceeded";
	case MF_ERR_FORMAT: return "malformed file";
	case MF_ERR_CANCELLED: return "cancelled";
	default: return "unknown error";
	}
}

static int default_http(int code)
{
	switch (code) {
	case MF_OK: return 200;
	case MF_ERR_PARSE:
	case MF_ERR_INVALID:
	case MF_ERR_DIGEST:
	case MF_ERR_LIMIT: return 400;
	case MF_ERR_NOT_FOUND: return 404;
	default: return 500;
	}
}

static void error_vset(struct mf_error *e, int code, int http, const char *fmt, va_list ap)
{
	e->code = code;
	e->http_status = http;
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
}

int mf_error_set(struct mf_error *e, int code, const char *fmt, ...)
{
	if (e) {
		va_list ap;
		va_start(ap, fmt);
		error_vset(e, code, default_http(code), fmt, ap);
		va_end(ap);
	}
	return code;
}

int mf_error_set_http(struct mf_error *e, int code, int http_status, const char *fmt, ...)
{
	if (e) {
		va_list ap;
		va_start(ap, fmt);
		error_vset(e, code, http_status, fmt, ap);
		va_end(ap);
	}
	return code;
}

int mf_warn(struct mf_warnings *w, const char *fmt, ...)
{
	if (!w)
		return MF_OK;
	if (w->n == w->cap && OB_GROW(w->items, w->cap, w->n + 1, 0) != OB_GROW_OK)
		return MF_ERR_NOMEM;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return MF_ERR_NOMEM;
	char *s = malloc((size_t)n + 1);
	if (!s)
		return MF_ERR_NOMEM;
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	w->items[w->n++] = s;
	return MF_OK;
}

void mf_warnings_free(struct mf_warnings *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->n; i++)
		free(w->items[i]);
	free(w->items);
	w->items = NULL;
	w->n = w->cap = 0;
}
