/* base/jsonutil.c — json.Encoder's trailing newline, Go-style re-encoding of decoded values, omitempty members. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonutil.h"

char *ob_jw_take_line(struct ob_jw *w, size_t *len)
{
	size_t n = 0;
	char *s = ob_jw_take(w, &n);
	ob_jw_free(w);
	if (!s)
		return NULL;
	char *t = realloc(s, n + 2);
	if (!t) {
		free(s);
		return NULL;
	}
	t[n] = '\n';
	t[n + 1] = 0;
	if (len)
		*len = n + 1;
	return t;
}

bool ob_jw_go_value(struct ob_jw *w, const struct ob_json *v)
{
	switch (v->type) {
	case OB_JSON_NULL: ob_jw_null(w); return true;
	case OB_JSON_BOOL: ob_jw_bool(w, v->boolean); return true;
	case OB_JSON_NUMBER:
		if (!isfinite(v->number))
			return false;
		ob_jw_float64(w, v->number);
		return true;
	case OB_JSON_STRING: ob_jw_stringn(w, v->str, v->len); return true;
	case OB_JSON_ARRAY:
		ob_jw_arr(w);
		OB_JSON_FOREACH(e, v)
		if (!ob_jw_go_value(w, e))
			return false;
		ob_jw_arr_end(w);
		return true;
	case OB_JSON_OBJECT: {
		const struct ob_json **keys;
		size_t n = ob_json_map_members(v, &keys);
		if (n == SIZE_MAX) {
			ob_jw_null(w); /* leaves the writer in its out-of-memory state below */
			return false;
		}
		ob_jw_obj(w);
		bool ok = true;
		for (size_t i = 0; i < n && ok; i++) {
			ob_jw_keyn(w, keys[i]->str, keys[i]->len);
			ok = ob_jw_go_value(w, keys[i] + 1);
		}
		ob_jw_obj_end(w);
		free(keys);
		return ok;
	}
	}
	return false;
}

void ob_jw_omitempty_string(struct ob_jw *w, const char *key, const char *s)
{
	if (s && *s) {
		ob_jw_key(w, key);
		ob_jw_string(w, s);
	}
}

void ob_jw_omitempty_stringn(struct ob_jw *w, const char *key, const char *s, size_t n)
{
	if (n) {
		ob_jw_key(w, key);
		ob_jw_stringn(w, s, n);
	}
}

void ob_jw_omitempty_int(struct ob_jw *w, const char *key, int64_t v)
{
	if (v) {
		ob_jw_key(w, key);
		ob_jw_int(w, v);
	}
}
