/* base/jsonw.c — the JSON writer (json.h): compact output into a growable buffer with a ceiling, Go's
 * string escaping (HTML-safe unless asked otherwise), Go's float encoding (base/gofmt.c) and re-encoding of
 * parsed values. It never validates what ob_jw_raw is given.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/gofmt.h"
#include "base/json.h"
#include "base/utf8.h"

void ob_jw_init(struct ob_jw *w, size_t limit, unsigned flags)
{
	memset(w, 0, sizeof *w);
	w->limit = limit ? limit : OB_JSON_MAX_INPUT;
	w->flags = flags;
}

void ob_jw_free(struct ob_jw *w)
{
	free(w->buf);
	w->buf = NULL;
	w->len = w->cap = 0;
}

void ob_jw_reset(struct ob_jw *w)
{
	w->len = 0;
	w->status = OB_JW_OK;
	w->depth = 0;
	w->state[0] = 0;
	if (w->buf)
		w->buf[0] = 0;
}

int ob_jw_status(const struct ob_jw *w)
{
	return w->status;
}

const char *ob_jw_str(const struct ob_jw *w)
{
	if (w->status)
		return NULL;
	return w->buf ? w->buf : "";
}

char *ob_jw_take(struct ob_jw *w, size_t *len)
{
	if (w->status)
		return NULL;
	char *b = w->buf;
	if (!b) {
		b = malloc(1);
		if (!b)
			return NULL;
		b[0] = 0;
	}
	if (len)
		*len = w->len;
	w->buf = NULL;
	w->len = w->cap = 0;
	return b;
}

static bool reserve(struct ob_jw *w, size_t n)
{
	if (w->status)
		return false;
	int g = ob_buf_grow(&w->buf, &w->cap, w->len, n, w->limit);
	if (g != OB_GROW_OK) {
		w->status = g == OB_GROW_LIMIT ? OB_JW_TOO_LARGE : OB_JW_NOMEM;
		return false;
	}
	return true;
}

static void put(struct ob_jw *w, const char *s, size_t n)
{
	if (!reserve(w, n))
		return;
	memcpy(w->buf + w->len, s, n);
	w->len += n;
	w->buf[w->len] = 0;
}

/* Called before every value: the comma, and the check that a value is allowed here. */
static bool before_value(struct ob_jw *w)
{
	if (w->status)
		return false;
	uint8_t *st = &w->state[w->depth];
	if (w->depth > 0 && w->is_obj[w->depth]) {
		if (*st != 2) {
			w->status = OB_JW_INVALID; /* a value in an object needs a key first */
			return false;
		}
	} else if (*st == 1) {
		if (w->depth == 0) {
			w->status = OB_JW_INVALID; /* a second top-level value */
			return false;
		}
		put(w, ",", 1);
	}
	*st = 1;
	return w->status == 0;
}

static void open(struct ob_jw *w, char c, int is_obj)
{
	if (!before_value(w))
		return;
	if (w->depth >= OB_JSON_MAX_DEPTH) {
		w->status = OB_JW_INVALID;
		return;
	}
	put(w, &c, 1);
	w->depth++;
	w->state[w->depth] = 0;
	w->is_obj[w->depth] = (uint8_t)is_obj;
}

static void close_(struct ob_jw *w, char c, int is_obj)
{
	if (w->status)
		return;
	if (w->depth == 0 || w->is_obj[w->depth] != is_obj || w->state[w->depth] == 2) {
		w->status = OB_JW_INVALID;
		return;
	}
	put(w, &c, 1);
	w->depth--;
}

void ob_jw_obj(struct ob_jw *w) { open(w, '{', 1); }
void ob_jw_obj_end(struct ob_jw *w) { close_(w, '}', 1); }
void ob_jw_arr(struct ob_jw *w) { open(w, '[', 0); }
void ob_jw_arr_end(struct ob_jw *w) { close_(w, ']', 0); }

bool ob_jw_escape(struct ob_jw *w, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	int html = !(w->flags & OB_JW_NO_HTML_ESCAPE);
	size_t i = 0, run = 0; /* copy runs of safe bytes in one go */
	while (i < n) {
		unsigned char c = u[i];
		const char *esc = NULL;
		char ubuf[7];
		size_t adv = 1;
		if (c < 0x80) {
			if (c >= 0x20 && c != '"' && c != '\\' && !(html && (c == '<' || c == '>' || c == '&'))) {
				i++;
				continue;
			}
			switch (c) {
			case '"': esc = "\\\""; break;
			case '\\': esc = "\\\\"; break;
			case '\b': esc = "\\b"; break;
			case '\f': esc = "\\f"; break;
			case '\n': esc = "\\n"; break;
			case '\r': esc = "\\r"; break;
			case '\t': esc = "\\t"; break;
			default:
				ubuf[0] = '\\', ubuf[1] = 'u', ubuf[2] = '0', ubuf[3] = '0';
				ubuf[4] = hex[c >> 4], ubuf[5] = hex[c & 15], ubuf[6] = 0;
				esc = ubuf;
			}
		} else {
			size_t l = ob_utf8_valid_len(u + i, n - i);
			if (l == 0) {
				esc = "\\ufffd";
			} else if (l == 3 && u[i] == 0xe2 && u[i + 1] == 0x80 &&
				   (u[i + 2] == 0xa8 || u[i + 2] == 0xa9)) {
				esc = u[i + 2] == 0xa8 ? "\\u2028" : "\\u2029";
				adv = 3;
			} else {
				i += l;
				continue;
			}
		}
		put(w, s + run, i - run);
		put(w, esc, strlen(esc));
		i += adv;
		run = i;
	}
	put(w, s + run, n - run);
	return w->status == 0;
}

void ob_jw_key(struct ob_jw *w, const char *key)
{
	ob_jw_keyn(w, key, strlen(key));
}

void ob_jw_keyn(struct ob_jw *w, const char *key, size_t n)
{
	if (w->status)
		return;
	if (w->depth == 0 || !w->is_obj[w->depth] || w->state[w->depth] == 2) {
		w->status = OB_JW_INVALID;
		return;
	}
	if (w->state[w->depth] == 1)
		put(w, ",", 1);
	put(w, "\"", 1);
	ob_jw_escape(w, key, n);
	put(w, "\":", 2);
	w->state[w->depth] = 2;
}

void ob_jw_stringn(struct ob_jw *w, const char *s, size_t n)
{
	if (!before_value(w))
		return;
	put(w, "\"", 1);
	ob_jw_escape(w, s, n);
	put(w, "\"", 1);
}

void ob_jw_string(struct ob_jw *w, const char *s)
{
	ob_jw_stringn(w, s, strlen(s));
}

void ob_jw_int(struct ob_jw *w, int64_t v)
{
	char b[32];
	int n = snprintf(b, sizeof b, "%lld", (long long)v);
	if (before_value(w))
		put(w, b, (size_t)n);
}

void ob_jw_uint(struct ob_jw *w, uint64_t v)
{
	char b[32];
	int n = snprintf(b, sizeof b, "%llu", (unsigned long long)v);
	if (before_value(w))
		put(w, b, (size_t)n);
}

int ob_json_format_float(char *buf, double v, int bits)
{
	if (isnan(v) || isinf(v))
		return 0;
	/* encoding/json's floatEncoder: 'f', or 'e' below 1e-6 and from 1e21, then "e-07" trimmed to "e-7" */
	double a = fabs(v);
	bool e = a != 0 && (bits == 32 ? ((float)a < 1e-6f || (float)a >= 1e21f) : (a < 1e-6 || a >= 1e21));
	int n = ob_go_format_float_as(buf, v, e ? 'e' : 'f', bits);
	if (e && n >= 4 && buf[n - 4] == 'e' && buf[n - 3] == '-' && buf[n - 2] == '0') {
		buf[n - 2] = buf[n - 1];
		buf[--n] = 0;
	}
	return n;
}

static void put_float(struct ob_jw *w, double v, int bits)
{
	char b[48];
	int n = ob_json_format_float(b, v, bits);
	if (n == 0) {
		if (!w->status)
			w->status = OB_JW_INVALID;
		return;
	}
	if (before_value(w))
		put(w, b, (size_t)n);
}

void ob_jw_float64(struct ob_jw *w, double v) { put_float(w, v, 64); }
void ob_jw_float32(struct ob_jw *w, float v) { put_float(w, v, 32); }

void ob_jw_bool(struct ob_jw *w, bool v)
{
	if (before_value(w))
		put(w, v ? "true" : "false", v ? 4 : 5);
}

void ob_jw_null(struct ob_jw *w)
{
	if (before_value(w))
		put(w, "null", 4);
}

void ob_jw_raw(struct ob_jw *w, const char *json, size_t n)
{
	if (before_value(w))
		put(w, json, n);
}

void ob_jw_value(struct ob_jw *w, const struct ob_json *v, bool sort_keys)
{
	if (w->status || !v)
		return;
	switch (v->type) {
	case OB_JSON_NULL: ob_jw_null(w); return;
	case OB_JSON_BOOL: ob_jw_bool(w, v->boolean); return;
	case OB_JSON_NUMBER: ob_jw_raw(w, v->str, v->len); return;
	case OB_JSON_STRING: ob_jw_stringn(w, v->str, v->len); return;
	case OB_JSON_ARRAY:
		ob_jw_arr(w);
		OB_JSON_FOREACH(e, v)
		ob_jw_value(w, e, sort_keys);
		ob_jw_arr_end(w);
		return;
	case OB_JSON_OBJECT:
		break;
	}
	ob_jw_obj(w);
	if (!sort_keys || v->count < 2) {
		OB_JSON_FOREACH_MEMBER(k, val, v)
		{
			ob_jw_keyn(w, k->str, k->len);
			ob_jw_value(w, val, sort_keys);
		}
	} else {
		const struct ob_json **keys;
		size_t n = ob_json_map_members(v, &keys);
		if (n == SIZE_MAX) {
			w->status = OB_JW_NOMEM;
			return;
		}
		for (size_t i = 0; i < n; i++) {
			ob_jw_keyn(w, keys[i]->str, keys[i]->len);
			ob_jw_value(w, keys[i] + 1, sort_keys);
		}
		free(keys);
	}
	ob_jw_obj_end(w);
}
