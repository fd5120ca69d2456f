/* modelfile/jinja/value.c — the engine's values with Python's semantics: containers (insertion-ordered dicts
 * with a hash index once they grow), truthiness, ==, ordering, hashing, str() and repr() as Python prints
 * them (floats as repr: shortest round-trip digits), json.dumps as transformers' tojson calls it, Python's
 * type names for error messages, and the conversion of base/json trees (json.loads). Part of jinja.c.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/gofmt.h"
#include "base/json.h"
#include "base/unicode.h"
#include "base/utf8.h"
#include "modelfile/jinja/internal.h"

/* ------------------------------------------------------------------------------------------ makers */

static struct jj_val jj_none(void)
{
	struct jj_val v = {.t = JJ_NONE};
	return v;
}

static struct jj_val jj_bool(bool b)
{
	struct jj_val v = {.t = JJ_BOOL, .b = b};
	return v;
}

static struct jj_val jj_int(int64_t i)
{
	struct jj_val v = {.t = JJ_INT, .i = i};
	return v;
}

static struct jj_val jj_float(double f)
{
	struct jj_val v = {.t = JJ_FLOAT, .f = f};
	return v;
}

static struct jj_val jj_str(const char *s, size_t n)
{
	struct jj_val v = {.t = JJ_STR, .s = s, .len = n};
	return v;
}

static struct jj_val jj_undef(int kind, const char *s, size_t n)
{
	struct jj_val v = {.t = JJ_UNDEF, .sub = (uint8_t)kind, .s = s, .len = n};
	return v;
}

static struct jj_val jj_list_val(struct jj_list *l, int kind)
{
	struct jj_val v = {.t = JJ_LIST, .sub = (uint8_t)kind, .l = l};
	return v;
}

static struct jj_list *jj_list_new(struct jj_arena *a, struct jj_fail *f, size_t n)
{
	struct jj_list *l = jj_alloc(a, f, sizeof *l);
	if (n > SIZE_MAX / sizeof(struct jj_val) / 2)
		jj_fail(f, MF_JINJA_ELIMIT, "LimitError", "memory limit exceeded");
	l->v = jj_alloc(a, f, (n ? n : 1) * sizeof *l->v); /* never NULL: slices and copies may offset it */
	l->n = n;
	return l;
}

static struct jj_dict *jj_dict_new(struct jj_arena *a, struct jj_fail *f, size_t cap)
{
	struct jj_dict *d = jj_alloc(a, f, sizeof *d);
	if (cap) {
		d->kv = jj_alloc(a, f, cap * sizeof *d->kv);
		d->cap = cap;
	}
	return d;
}

/* Python's numbers: bool and int are ints. */
static bool is_intlike(struct jj_val v)
{
	return v.t == JJ_INT || v.t == JJ_BOOL;
}

static int64_t int_of(struct jj_val v)
{
	return v.t == JJ_BOOL ? (int64_t)v.b : v.i;
}

static bool is_number(struct jj_val v)
{
	return v.t == JJ_INT || v.t == JJ_BOOL || v.t == JJ_FLOAT;
}

static double float_of(struct jj_val v)
{
	return v.t == JJ_FLOAT ? v.f : (double)int_of(v);
}

/* ------------------------------------------------------------------------------------------ names */

static const char *seq_type_name(int sub)
{
	switch (sub) {
	case JJ_SEQ_TUPLE: return "tuple";
	case JJ_SEQ_GEN: return "generator";
	case JJ_SEQ_REVERSED: return "list_reverseiterator";
	case JJ_SEQ_ITEMS: return "dict_items";
	case JJ_SEQ_KEYS: return "dict_keys";
	case JJ_SEQ_VALUES: return "dict_values";
	default: return "list";
	}
}

/* Python's type(v).__name__. */
static const char *jj_type_name_of(int t, int sub)
{
	switch (t) {
	case JJ_UNDEF: return "Undefined";
	case JJ_NONE: return "NoneType";
	case JJ_BOOL: return "bool";
	case JJ_INT: return "int";
	case JJ_FLOAT: return "float";
	case JJ_STR: return sub == JJ_STR_MARKUP ? "Markup" : "str";
	case JJ_LIST: return seq_type_name(sub);
	case JJ_DICT: return "dict";
	case JJ_NS: return "Namespace";
	case JJ_LOOP: return "LoopContext";
	case JJ_MACRO: return "Macro";
	case JJ_FUNC: return "function";
	case JJ_METHOD: return "builtin_function_or_method";
	default: return "object";
	}
}

static const char *jj_type_name(struct jj_val v)
{
	return jj_type_name_of(v.t, v.sub);
}

/* jinja2's object_type_repr: "None", or "<type> object" (with the module for jinja2's own types). */
static void object_type_repr(char *buf, size_t size, int t, int sub)
{
	if (t == JJ_NONE)
		snprintf(buf, size, "None");
	else if (t == JJ_NS)
		snprintf(buf, size, "jinja2.utils.Namespace object");
	else if (t == JJ_LOOP)
		snprintf(buf, size, "jinja2.runtime.LoopContext object");
	else if (t == JJ_MACRO)
		snprintf(buf, size, "jinja2.runtime.Macro object");
	else if (t == JJ_STR && sub == JJ_STR_MARKUP)
		snprintf(buf, size, "markupsafe.Markup object");
	else
		snprintf(buf, size, "%s object", jj_type_name_of(t, sub));
}

/* ------------------------------------------------------------------------------------------ buffers */

static void buf_check(struct jj_fail *f, struct ob_buf *b)
{
	if (b->failed) {
		if (b->over)
			jj_fail(f, MF_JINJA_ELIMIT, "LimitError", "output limit exceeded: more than %zu bytes",
				b->max);
		jj_fail(f, MF_JINJA_ENOMEM, "MemoryError", "out of memory");
	}
}

static void put(struct jj_fail *f, struct ob_buf *b, const char *s, size_t n)
{
	if (!ob_buf_append(b, s, n))
		buf_check(f, b);
}

static void puts_(struct jj_fail *f, struct ob_buf *b, const char *s)
{
	put(f, b, s, strlen(s));
}

/* ------------------------------------------------------------------------------------------ numbers */

/* Python's repr(float): the shortest digits that read back, fixed notation for exponents -4..15 (with ".0"
 * when integral), else d.ddde+XX. */
static int py_float_repr(char *out, double v)
{
	if (isnan(v))
		return sprintf(out, "nan");
	if (isinf(v))
		return sprintf(out, v < 0 ? "-inf" : "inf");
	char e[40];
	ob_go_format_float_as(e, v, 'e', 64); /* "-d.ddde+XX" */
	const char *p = e;
	int o = 0;
	if (*p == '-')
		out[o++] = *p++;
	char digits[32] = "0";
	int nd = 0;
	for (; *p && *p != 'e'; p++)
		if (*p != '.')
			digits[nd++] = *p;
	int exp = *p == 'e' ? atoi(p + 1) : 0;
	if (nd == 1 && digits[0] == '0')
		exp = 0;
	if (exp >= -4 && exp < 16) {
		if (exp >= 0) {
			for (int k = 0; k <= exp; k++)
				out[o++] = k < nd ? digits[k] : '0';
			out[o++] = '.';
			if (exp + 1 < nd)
				for (int k = exp + 1; k < nd; k++)
					out[o++] = digits[k];
			else
				out[o++] = '0';
		} else {
			out[o++] = '0';
			out[o++] = '.';
			for (int k = 0; k < -exp - 1; k++)
				out[o++] = '0';
			for (int k = 0; k < nd; k++)
				out[o++] = digits[k];
		}
	} else {
		out[o++] = digits[0];
		if (nd > 1) {
			out[o++] = '.';
			for (int k = 1; k < nd; k++)
				out[o++] = digits[k];
		}
		o += sprintf(out + o, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
	}
	out[o] = 0;
	return o;
}

/* ------------------------------------------------------------------------------------------ hashing, == */

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

static uint64_t hash_int(int64_t i)
{
	uint64_t x = (uint64_t)i;
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

/* hash(v) with Python's rule that equal numbers hash alike; TypeError for unhashable values. */
static uint64_t jj_hash(struct jj_fail *f, struct jj_val v, int depth)
{
	switch (v.t) {
	case JJ_STR: return hash_bytes(v.s, v.len);
	case JJ_INT:
	case JJ_BOOL: return hash_int(int_of(v));
	case JJ_FLOAT:
		if (v.f == floor(v.f) && fabs(v.f) < 9.2e18)
			return hash_int((int64_t)v.f);
		{
			uint64_t bits;
			memcpy(&bits, &v.f, sizeof bits);
			return hash_int((int64_t)bits);
		}
	case JJ_NONE: return 0x9e3779b97f4a7c15ull;
	case JJ_UNDEF: return 0x51ed270b27a3c9f1ull;
	case JJ_LIST:
		if (v.sub == JJ_SEQ_TUPLE) {
			if (depth > JJ_MAX_VALUE_DEPTH)
				jj_fail(f, MF_JINJA_ELIMIT, "LimitError", "value nesting limit (%d) exceeded",
					JJ_MAX_VALUE_DEPTH);
			uint64_t h = 0x345678;
			for (size_t k = 0; k < v.l->n; k++)
				h = (h ^ jj_hash(f, v.l->v[k], depth + 1)) * 1000003u;
			return h;
		}
		if (v.sub != JJ_SEQ_LIST)
			return hash_int((int64_t)(uintptr_t)v.l);
		break;
	case JJ_DICT: break;
	default: return hash_int((int64_t)(uintptr_t)v.l);
	}
	jj_fail(f, MF_JINJA_ETYPE, "TypeError", "unhashable type: '%s'", jj_type_name(v));
}

static bool jj_eq_depth(struct jj_fail *f, struct jj_val a, struct jj_val b, int depth);

static const struct jj_val *jj_dict_get(struct jj_fail *f, const struct jj_dict *d, struct jj_val k);

/* Python's a == b. */
static bool jj_eq_depth(struct jj_fail *f, struct jj_val a, struct jj_val b, int depth)
{
	if (is_number(a) && is_number(b)) {
		if (a.t == JJ_FLOAT || b.t == JJ_FLOAT)
			return float_of(a) == float_of(b);
		return int_of(a) == int_of(b);
	}
	if (a.t != b.t)
		return false;
	switch (a.t) {
	case JJ_STR: return a.len == b.len && (a.s == b.s || memcmp(a.s, b.s, a.len) == 0);
	case JJ_NONE:
	case JJ_UNDEF: return true;
	case JJ_LIST:
		if (a.sub != b.sub)
			return false;
		if (a.sub != JJ_SEQ_LIST && a.sub != JJ_SEQ_TUPLE && a.sub != JJ_SEQ_ITEMS && a.sub != JJ_SEQ_KEYS)
			return a.l == b.l;
		if (a.l == b.l)
			return true;
		if (a.l->n != b.l->n)
			return false;
		if (depth > JJ_MAX_VALUE_DEPTH)
			jj_fail(f, MF_JINJA_ELIMIT, "LimitError", "value nesting limit (%d) exceeded", JJ_MAX_VALUE_DEPTH);
		for (size_t k = 0; k < a.l->n; k++)
			if (!jj_eq_depth(f, a.l->v[k], b.l->v[k], depth + 1))
				return false;
		return true;
	case JJ_DICT:
		if (a.d == b.d)
			return true;
		if (a.d->n != b.d->n)
			return false;
		if (depth > JJ_MAX_VALUE_DEPTH)
			jj_fail(f, MF_JINJA_ELIMIT, "LimitError", "value nesting limit (%d) exceeded", JJ_MAX_VALUE_DEPTH);
		for (size_t k = 0; k < a.d->n; k++) {
			const struct jj_val *w = jj_dict_get(f, b.d, a.d->kv[k].k);
			if (!w || !jj_eq_depth(f, a.d->kv[k].v, *w, depth + 1))
				return false;
		}
		return true;
	case JJ_FUNC:
	case JJ_METHOD: return a.sub == b.sub && a.recv == b.recv;
	default: return a.l == b.l;
	}
}

static bool jj_eq(struct jj_fail *f, struct jj_val a, struct jj_val b)
{
	return jj_eq_depth(f, a, b, 0);
}

/* ------------------------------------------------------------------------------------------ dicts */

static bool key_eq(struct jj_fail *f, struct jj_val a, struct jj_val b)
{
	if (a.t == JJ_STR && b.t == JJ_STR)
		return a.len == b.len && memcmp(a.s, b.s, a.len) == 0;
	return jj_eq(f, a, b);
}

#define JJ_DICT_LINEAR 8 /* dicts up to this size are searched without an index */

static void dict_reindex(struct jj_arena *a, struct jj_fail *f, struct jj_dict *d)
{
	size_t cap = 16;
	while (cap < d->n * 2 + 2)
		cap *= 2;
	d->index = jj_alloc(a, f, cap * sizeof *d->index);
	d->index_cap = cap;
	for (size_t k = 0; k < d->n; k++) {
		size_t h = (size_t)jj_hash(f, d->kv[k].k, 0) & (cap - 1);
		while (d->index[h])
			h = (h + 1) & (cap - 1);
		d->index[h] = (uint32_t)(k + 1);
	}
}

static ptrdiff_t dict_find(struct jj_fail *f, const struct jj_dict *d, struct jj_val k)
{
	if (!d->index) {
		if (k.t == JJ_STR) {
			for (size_t i = 0; i < d->n; i++) {
				const struct jj_val *q = &d->kv[i].k;
				if (q->t == JJ_STR && q->len == k.len && memcmp(q->s, k.s, k.len) == 0)
					return (ptrdiff_t)i;
			}
			return -1;
		}
		jj_hash(f, k, 0); /* unhashable keys fail as in Python */
		for (size_t i = 0; i < d->n; i++)
			if (key_eq(f, d->kv[i].k, k))
				return (ptrdiff_t)i;
		return -1;
	}
	size_t mask = d->index_cap - 1;
	for (size_t h = (size_t)jj_hash(f, k, 0) & mask;; h = (h + 1) & mask) {
		uint32_t e = d->index[h];
		if (!e)
			return -1;
		if (key_eq(f, d->kv[e - 1].k, k))
			return (ptrdiff_t)(e - 1);
	}
}

static const struct jj_val *jj_dict_get(struct jj_fail *f, const struct jj_dict *d, struct jj_val k)
{
	ptrdiff_t i = dict_find(f, d, k);
	return i < 0 ? NULL : &d->kv[i].v;
}

static const struct jj_val *jj_dict_get_str(const struct jj_dict *d, const char *s, size_t n)
{
	if (!d->index) {
		for (size_t i = 0; i < d->n; i++) {
			const struct jj_val *q = &d->kv[i].k;
			if (q->t == JJ_STR && q->len == n && memcmp(q->s, s, n) == 0)
				return &d->kv[i].v;
		}
		return NULL;
	}
	size_t mask = d->index_cap - 1;
	for (size_t h = (size_t)hash_bytes(s, n) & mask;; h = (h + 1) & mask) {
		uint32_t e = d->index[h];
		if (!e)
			return NULL;
		const struct jj_val *q = &d->kv[e - 1].k;
		if (q->t == JJ_STR && q->len == n && memcmp(q->s, s, n) == 0)
			return &d->kv[e - 1].v;
	}
}

/* d[k] = v: a new key goes last, an existing one keeps its place. */
static void jj_dict_set(struct jj_arena *a, struct jj_fail *f, struct jj_dict *d, struct jj_val k, struct jj_val v)
{
	ptrdiff_t i = dict_find(f, d, k);
	if (i >= 0) {
		d->kv[i].v = v;
		return;
	}
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 4;
		struct jj_kv *kv = jj_alloc(a, f, cap * sizeof *kv);
		if (d->n)
			jj_memcpy(kv, d->kv, d->n * sizeof *kv);
		d->kv = kv;
		d->cap = cap;
	}
	if (d->n >= UINT32_MAX - 1)
		jj_fail(f, MF_JINJA_ELIMIT, "LimitError", "dict too large");
	d->kv[d->n].k = k;
	d->kv[d->n].v = v;
	d->n++;
	if (d->index && d->n * 2 + 2 <= d->index_cap) {
		size_t mask = d->index_cap - 1, h = (size_t)jj_hash(f, k, 0) & mask;
		while (d->index[h])
			h = (h + 1) & mask;
		d->index[h] = (uint32_t)d->n;
	} else if (d->n > JJ_DICT_LINEAR) {
		dict_reindex(a, f, d);
	}
}

/* ------------------------------------------------------------------------------------------ truth, order */

static size_t jj_strlen_cp(struct jj_val v)
{
	return jj_is_ascii(v.s, v.len) ? v.len : jj_cplen(v.s, v.len);
}

static bool jj_truthy(struct jj_val v)
{
	switch (v.t) {
	case JJ_UNDEF:
	case JJ_NONE: return false;
	case JJ_BOOL: return v.b;
	case JJ_INT: return v.i != 0;
	case JJ_FLOAT: return v.f != 0;
	case JJ_STR: return v.len != 0;
	case JJ_LIST: return v.sub == JJ_SEQ_GEN || v.sub == JJ_SEQ_REVERSED || v.l->n != 0;
	case JJ_DICT: return v.d->n != 0;
	default: return true;
	}
}

/* Python's a < b (op JJ_OP_LT/LE/GT/GE) for numbers, strings and same-kind sequences; TypeError else. */
static bool jj_order(struct jj_fail *f, struct jj_val a, struct jj_val b, int op, int depth)
{
	int c;
	if (is_number(a) && is_number(b)) {
		if (a.t == JJ_FLOAT || b.t == JJ_FLOAT) {
			double x = float_of(a), y = float_of(b);
			switch (op) {
			case JJ_OP_LT: return x < y;
			case JJ_OP_LE: return x <= y;
			case JJ_OP_GT: return x > y;
			default: return x >= y;
			}
		}
		int64_t x = int_of(a), y = int_of(b);
		c = x < y ? -1 : x > y;
	} else if (a.t == JJ_STR && b.t == JJ_STR) {
		size_t n = a.len < b.len ? a.len : b.len;
		c = n ? memcmp(a.s, b.s, n) : 0;
		if (c == 0)
			c = a.len < b.len ? -1 : a.len > b.len;
	} else if (a.t == JJ_LIST && b.t == JJ_LIST && a.sub == b.sub &&
		   (a.sub == JJ_SEQ_LIST || a.sub == JJ_SEQ_TUPLE)) {
		if (depth > JJ_MAX_VALUE_DEPTH)
			jj_fail(f, MF_JINJA_ELIMIT, "LimitError", "value nesting limit (%d) exceeded", JJ_MAX_VALUE_DEPTH);
		size_t k = 0;
		while (k < a.l->n && k < b.l->n && jj_eq(f, a.l->v[k], b.l->v[k]))
			k++;
		if (k < a.l->n && k < b.l->n)
			return jj_order(f, a.l->v[k], b.l->v[k], op, depth + 1);
		c = a.l->n < b.l->n ? -1 : a.l->n > b.l->n;
	} else {
		const char *sym = op == JJ_OP_LT ? "<" : op == JJ_OP_LE ? "<=" : op == JJ_OP_GT ? ">" : ">=";
		jj_fail(f, MF_JINJA_ETYPE, "TypeError", "'%s' not supported between instances of '%s' and '%s'", sym,
			jj_type_name(a), jj_type_name(b));
	}
	switch (op) {
	case JJ_OP_LT: return c < 0;
	case JJ_OP_LE: return c <= 0;
	case JJ_OP_GT: return c > 0;
	default: return c >= 0;
	}
}

/* ------------------------------------------------------------------------------------------ str, repr */

static void write_repr(struct jj_fail *f, struct ob_buf *b, struct jj_val v, int depth);

/* Python's repr(str): single quotes unless the text has ' and no ", escapes for \\, the quote, \n \r \t and
 * non-printable characters. */
static void write_str_repr(struct jj_fail *f, struct ob_buf *b, const char *s, size_t n)
{
	char q = memchr(s, '\'', n) && !memchr(s, '"', n) ? '"' : '\'';
	ob_buf_putc(b, q);
	for (size_t i = 0; i < n;) {
		size_t k;
		uint32_t c = jj_cp(s + i, n - i, &k);
		char esc[16];
		if (c == (uint32_t)q || c == '\\') {
			ob_buf_putc(b, '\\');
			ob_buf_putc(b, (char)c);
		} else if (c == '\n') {
			ob_buf_puts(b, "\\n");
		} else if (c == '\r') {
			ob_buf_puts(b, "\\r");
		} else if (c == '\t') {
			ob_buf_puts(b, "\\t");
		} else if (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0)) {
			snprintf(esc, sizeof esc, "\\x%02x", c);
			ob_buf_puts(b, esc);
		} else if (c >= 0xDC00 && c <= 0xDCFF && k == 1) {
			snprintf(esc, sizeof esc, "\\udc%02x", c & 0xff);
			ob_buf_puts(b, esc);
		} else if (c >= 0x80 && c != ' ' && !ob_rune_is_print(c)) {
			snprintf(esc, sizeof esc, c > 0xffff ? "\\U%08x" : "\\u%04x", c);
			ob_buf_puts(b, esc);
		} else {
			ob_buf_append(b, s + i, k);
		}
		i += k;
	}
	ob_buf_putc(b, q);
	buf_check(f, b);
}

static void write_seq_repr(struct jj_fail *f, struct ob_buf *b, const struct jj_list *l, const char *open,
			   const char *close, bool one_comma, int depth)
{
	puts_(f, b, open);
	for (size_t k = 0; k < l->n; k++) {
		if (k)
			puts_(f, b, ", ");
		write_repr(f, b, l->v[k], depth + 1);
	}
	if (one_comma && l->n == 1)
		puts_(f, b, ",");
	puts_(f, b, close);
}

static void write_dict_repr(struct jj_fail *f, struct ob_buf *b, const struct jj_dict *d, int depth)
{
	puts_(f, b, "{");
	for (size_t k = 0; k < d->n; k++) {
		if (k)
			puts_(f, b, ", ");
		write_repr(f, b, d->kv[k].k, depth + 1);
		puts_(f, b, ": ");
		write_repr(f, b, d->kv[k].v, depth + 1);
	}
	puts_(f, b, "}");
}

static void jj_write_str(struct jj_fail *f, struct ob_buf *b, struct jj_val v);

static void write_repr(struct jj_fail *f, struct ob_buf *b, struct jj_val v, int depth)
{
	if (depth > JJ_MAX_VALUE_DEPTH)
		jj_fail(f, MF_JINJA_ELIMIT, "LimitError", "value nesting limit (%d) exceeded", JJ_MAX_VALUE_DEPTH);
	switch (v.t) {
	case JJ_STR:
		if (v.sub == JJ_STR_MARKUP)
			puts_(f, b, "Markup(");
		write_str_repr(f, b, v.s, v.len);
		if (v.sub == JJ_STR_MARKUP)
			puts_(f, b, ")");
		return;
	case JJ_UNDEF: puts_(f, b, "Undefined"); return;
	case JJ_LIST:
		switch (v.sub) {
		case JJ_SEQ_LIST: write_seq_repr(f, b, v.l, "[", "]", false, depth); return;
		case JJ_SEQ_TUPLE: write_seq_repr(f, b, v.l, "(", ")", true, depth); return;
		case JJ_SEQ_ITEMS: write_seq_repr(f, b, v.l, "dict_items([", "])", false, depth); return;
		case JJ_SEQ_KEYS: write_seq_repr(f, b, v.l, "dict_keys([", "])", false, depth); return;
		case JJ_SEQ_VALUES: write_seq_repr(f, b, v.l, "dict_values([", "])", false, depth); return;
		default: break;
		}
		break;
	case JJ_DICT: write_dict_repr(f, b, v.d, depth); return;
	case JJ_NS:
		puts_(f, b, "<Namespace ");
		write_dict_repr(f, b, v.d, depth);
		puts_(f, b, ">");
		return;
	default: break;
	}
	jj_write_str(f, b, v);
}

/* str(v) appended to b: what {{ v }} prints. */
static void jj_write_str(struct jj_fail *f, struct ob_buf *b, struct jj_val v)
{
	char num[64];
	switch (v.t) {
	case JJ_UNDEF: return;
	case JJ_NONE: puts_(f, b, "None"); return;
	case JJ_BOOL: puts_(f, b, v.b ? "True" : "False"); return;
	case JJ_INT:
		snprintf(num, sizeof num, "%lld", (long long)v.i);
		puts_(f, b, num);
		return;
	case JJ_FLOAT:
		py_float_repr(num, v.f);
		puts_(f, b, num);
		return;
	case JJ_STR: put(f, b, v.s, v.len); return;
	case JJ_LIST:
		if (v.sub == JJ_SEQ_GEN) {
			puts_(f, b, "<generator object>");
			return;
		}
		if (v.sub == JJ_SEQ_REVERSED) {
			puts_(f, b, "<list_reverseiterator object>");
			return;
		}
		write_repr(f, b, v, 0);
		return;
	case JJ_DICT:
	case JJ_NS: write_repr(f, b, v, 0); return;
	case JJ_LOOP:
		snprintf(num, sizeof num, "<LoopContext %zu/%zu>", v.loop->i + 1, v.loop->items->n);
		puts_(f, b, num);
		return;
	case JJ_MACRO:
		puts_(f, b, "<Macro '");
		put(f, b, v.node->s, v.node->len);
		puts_(f, b, "'>");
		return;
	default: puts_(f, b, "<built-in function>"); return;
	}
}

/* ------------------------------------------------------------------------------------------ json.dumps */

struct jj_json_opts {
	bool ensure_ascii;
	bool sort_keys;
	bool has_indent;
	const char *indent; /* the indent unit */
	size_t indent_len;
	const char *item_sep, *key_sep;
	size_t item_sep_len, key_sep_len;
};

static void json_string(struct jj_fail *f, struct ob_buf *b, const char *s, size_t n, bool ensure_ascii)
{
	ob_buf_putc(b, '"');
	size_t run = 0;
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)s[i];
		const char *esc = NULL;
		char u[16];
		size_t k = 1;
		if (c == '"')
			esc = "\\\"";
		else if (c == '\\')
			esc = "\\\\";
		else if (c == '\n')
			esc = "\\n";
		else if (c == '\r')
			esc = "\\r";
		else if (c == '\t')
			esc = "\\t";
		else if (c == '\b')
			esc = "\\b";
		else if (c == '\f')
			esc = "\\f";
		else if (c < 0x20) {
			snprintf(u, sizeof u, "\\u%04x", c);
			esc = u;
		} else if (c >= 0x80 && ensure_ascii) {
			uint32_t cp = jj_cp(s + i, n - i, &k);
			if (cp >= 0x10000) {
				cp -= 0x10000;
				snprintf(u, sizeof u, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3ff));
			} else {
				snprintf(u, sizeof u, "\\u%04x", cp);
			}
			esc = u;
		}
		if (esc) {
			ob_buf_append(b, s + i - run, run);
			run = 0;
			ob_buf_puts(b, esc);
		} else {
			run += k;
		}
		i += k;
	}
	ob_buf_append(b, s + n - run, run);
	ob_buf_putc(b, '"');
	buf_check(f, b);
}

static void json_newline(struct jj_fail *f, struct ob_buf *b, const struct jj_json_opts *o, int level)
{
	ob_buf_putc(b, '\n');
	for (int k = 0; k < level; k++)
		ob_buf_append(b, o->indent, o->indent_len);
	buf_check(f, b);
}

static void json_float(struct jj_fail *f, struct ob_buf *b, double v)
{
	char num[64];
	if (isnan(v))
		puts_(f, b, "NaN");
	else if (isinf(v))
		puts_(f, b, v < 0 ? "-Infinity" : "Infinity");
	else {
		py_float_repr(num, v);
		puts_(f, b, num);
	}
}

static void json_key_string(struct jj_fail *f, struct ob_buf *b, struct jj_val k, const struct jj_json_opts *o)
{
	char num[64];
	switch (k.t) {
	case JJ_STR: json_string(f, b, k.s, k.len, o->ensure_ascii); return;
	case JJ_INT:
		snprintf(num, sizeof num, "\"%lld\"", (long long)k.i);
		puts_(f, b, num);
		return;
	case JJ_BOOL: puts_(f, b, k.b ? "\"true\"" : "\"false\""); return;
	case JJ_NONE: puts_(f, b, "\"null\""); return;
	case JJ_FLOAT:
		ob_buf_putc(b, '"');
		json_float(f, b, k.f);
		puts_(f, b, "\"");
		return;
	default:
		jj_fail(f, MF_JINJA_ETYPE, "TypeError", "keys must be str, int, float, bool or None, not %s",
			jj_type_name(k));
	}
}

static int kv_str_cmp(const void *x, const void *y)
{
	const struct jj_kv *a = *(const struct jj_kv *const *)x, *b = *(const struct jj_kv *const *)y;
	size_t n = a->k.len < b->k.len ? a->k.len : b->k.len;
	int c = n ? memcmp(a->k.s, b->k.s, n) : 0;
	return c ? c : a->k.len < b->k.len ? -1 : a->k.len > b->k.len;
}

static void jj_write_json(struct jj_arena *a, struct jj_fail *f, struct ob_buf *b, struct jj_val v,
			  const struct jj_json_opts *o, int level)
{
	char num[64];
	if (level > JJ_MAX_VALUE_DEPTH)
		jj_fail(f, MF_JINJA_ELIMIT, "LimitError", "value nesting limit (%d) exceeded", JJ_MAX_VALUE_DEPTH);
	switch (v.t) {
	case JJ_NONE: puts_(f, b, "null"); return;
	case JJ_BOOL: puts_(f, b, v.b ? "true" : "false"); return;
	case JJ_INT:
		snprintf(num, sizeof num, "%lld", (long long)v.i);
		puts_(f, b, num);
		return;
	case JJ_FLOAT: json_float(f, b, v.f); return;
	case JJ_STR: json_string(f, b, v.s, v.len, o->ensure_ascii); return;
	case JJ_LIST:
		if (v.sub != JJ_SEQ_LIST && v.sub != JJ_SEQ_TUPLE)
			break;
		if (v.l->n == 0) {
			puts_(f, b, "[]");
			return;
		}
		puts_(f, b, "[");
		for (size_t k = 0; k < v.l->n; k++) {
			if (k)
				put(f, b, o->item_sep, o->item_sep_len);
			if (o->has_indent)
				json_newline(f, b, o, level + 1);
			jj_write_json(a, f, b, v.l->v[k], o, level + 1);
		}
		if (o->has_indent)
			json_newline(f, b, o, level);
		puts_(f, b, "]");
		return;
	case JJ_DICT: {
		if (v.d->n == 0) {
			puts_(f, b, "{}");
			return;
		}
		const struct jj_kv **order = jj_alloc(a, f, v.d->n * sizeof *order);
		for (size_t k = 0; k < v.d->n; k++)
			order[k] = &v.d->kv[k];
		if (o->sort_keys) {
			for (size_t k = 0; k < v.d->n; k++)
				if (order[k]->k.t != JJ_STR)
					jj_fail(f, MF_JINJA_ETYPE, "TypeError",
						"'<' not supported between instances of '%s' and 'str'",
						jj_type_name(order[k]->k));
			qsort(order, v.d->n, sizeof *order, kv_str_cmp);
		}
		puts_(f, b, "{");
		for (size_t k = 0; k < v.d->n; k++) {
			if (k)
				put(f, b, o->item_sep, o->item_sep_len);
			if (o->has_indent)
				json_newline(f, b, o, level + 1);
			json_key_string(f, b, order[k]->k, o);
			put(f, b, o->key_sep, o->key_sep_len);
			jj_write_json(a, f, b, order[k]->v, o, level + 1);
		}
		if (o->has_indent)
			json_newline(f, b, o, level);
		puts_(f, b, "}");
		return;
	}
	default: break;
	}
	jj_fail(f, MF_JINJA_ETYPE, "TypeError", "Object of type %s is not JSON serializable", jj_type_name(v));
}

/* ------------------------------------------------------------------------------------------ from JSON */

/* json.loads: see mf_jinja_vars_set_json. Strings are copied into a. */
static struct jj_val jj_from_json(struct jj_arena *a, struct jj_fail *f, const struct ob_json *j)
{
	switch (j->type) {
	case OB_JSON_NULL: return jj_none();
	case OB_JSON_BOOL: return jj_bool(j->boolean);
	case OB_JSON_NUMBER: {
		int64_t i;
		if (ob_json_int(j, &i))
			return jj_int(i);
		return jj_float(j->number);
	}
	case OB_JSON_STRING: return jj_str(jj_strdup(a, f, j->str, j->len), j->len);
	case OB_JSON_ARRAY: {
		struct jj_list *l = jj_list_new(a, f, j->count);
		size_t k = 0;
		OB_JSON_FOREACH(e, j)
		l->v[k++] = jj_from_json(a, f, e);
		return jj_list_val(l, JJ_SEQ_LIST);
	}
	case OB_JSON_OBJECT: {
		struct jj_dict *d = jj_dict_new(a, f, j->count);
		OB_JSON_FOREACH_MEMBER(key, val, j)
		jj_dict_set(a, f, d, jj_str(jj_strdup(a, f, key->str, key->len), key->len), jj_from_json(a, f, val));
		struct jj_val v = {.t = JJ_DICT, .d = d};
		return v;
	}
	}
	return jj_none();
}
