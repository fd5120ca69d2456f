/* base/jsonutil.c — json.Encoder's trailing newline and Go-style re-encoding of decoded values. */
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

struct member {
	const struct ob_json *key, *val;
	size_t index;
};

static int cmp_key(const void *a, const void *b)
{
	const struct member *x = a, *y = b;
	size_t n = x->key->len < y->key->len ? x->key->len : y->key->len;
	int c = memcmp(x->key->str, y->key->str, n);
	if (c)
		return c;
	if (x->key->len != y->key->len)
		return x->key->len < y->key->len ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

static bool same_key(const struct member *a, const struct member *b)
{
	return a->key->len == b->key->len && memcmp(a->key->str, b->key->str, a->key->len) == 0;
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
		struct member *m = v->count ? malloc(v->count * sizeof *m) : NULL;
		size_t n = 0;
		if (v->count && !m) {
			ob_jw_null(w); /* leaves the writer in its out-of-memory state below */
			return false;
		}
		OB_JSON_FOREACH_MEMBER(k, val, v)
		{
			m[n].key = k;
			m[n].val = val;
			m[n].index = n;
			n++;
		}
		qsort(m, n, sizeof *m, cmp_key);
		ob_jw_obj(w);
		bool ok = true;
		for (size_t i = 0; i < n && ok; i++) {
			if (i + 1 < n && same_key(&m[i], &m[i + 1]))
				continue; /* a later duplicate replaces this one, as in a Go map */
			ob_jw_keyn(w, m[i].key->str, m[i].key->len);
			ok = ob_jw_go_value(w, m[i].val);
		}
		ob_jw_obj_end(w);
		free(m);
		return ok;
	}
	}
	return false;
}
