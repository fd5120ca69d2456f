/* modelfile/jinja/builtins.c — what templates call: jinja2's filters and tests, the str/dict/list methods
 * Python gives them, and the globals (range, dict, namespace, raise_exception, strftime_now).
 *
 * Each behaves as jinja2 3.1 under transformers does, including the errors chat templates hit (TypeError
 * texts are Python's). Case mapping covers ASCII, Latin-1, Greek and Cyrillic (Python maps all of Unicode);
 * a few rarely used filters and methods (striptags, wordwrap, urlencode, xmlattr, encode, translate, ...)
 * are refused with a clear error rather than approximated. Part of jinja.c.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/unicode.h"
#include "modelfile/jinja/internal.h"

/* ------------------------------------------------------------------------------------------ names */

struct jj_name {
	const char *name;
	int id;
};

static int name_lookup(const struct jj_name *t, size_t n, const char *s, size_t len)
{
	for (size_t k = 0; k < n; k++)
		if (strlen(t[k].name) == len && memcmp(t[k].name, s, len) == 0)
			return t[k].id;
	return -1;
}

static const struct jj_name func_names[] = {
	{"range", JJ_F_RANGE}, {"dict", JJ_F_DICT}, {"namespace", JJ_F_NAMESPACE},
	{"raise_exception", JJ_F_RAISE}, {"strftime_now", JJ_F_STRFTIME}, {"cycler", JJ_F_CYCLER},
	{"joiner", JJ_F_JOINER}, {"lipsum", JJ_F_LIPSUM},
};

static const char *const meth_names[JJ_M_COUNT_] = {
	[JJ_M_SPLIT] = "split", [JJ_M_RSPLIT] = "rsplit", [JJ_M_STRIP] = "strip", [JJ_M_LSTRIP] = "lstrip",
	[JJ_M_RSTRIP] = "rstrip", [JJ_M_STARTSWITH] = "startswith", [JJ_M_ENDSWITH] = "endswith",
	[JJ_M_REPLACE] = "replace", [JJ_M_TITLE] = "title", [JJ_M_UPPER] = "upper", [JJ_M_LOWER] = "lower",
	[JJ_M_CAPITALIZE] = "capitalize", [JJ_M_FIND] = "find", [JJ_M_RFIND] = "rfind", [JJ_M_INDEX] = "index",
	[JJ_M_RINDEX] = "rindex", [JJ_M_COUNT] = "count", [JJ_M_JOIN] = "join", [JJ_M_FORMAT] = "format",
	[JJ_M_SPLITLINES] = "splitlines", [JJ_M_ISDIGIT] = "isdigit", [JJ_M_ISALPHA] = "isalpha",
	[JJ_M_ISALNUM] = "isalnum", [JJ_M_ISSPACE] = "isspace", [JJ_M_ISUPPER] = "isupper",
	[JJ_M_ISLOWER] = "islower", [JJ_M_REMOVEPREFIX] = "removeprefix", [JJ_M_REMOVESUFFIX] = "removesuffix",
	[JJ_M_ZFILL] = "zfill", [JJ_M_CENTER] = "center", [JJ_M_LJUST] = "ljust", [JJ_M_RJUST] = "rjust",
	[JJ_M_PARTITION] = "partition", [JJ_M_RPARTITION] = "rpartition", [JJ_M_SWAPCASE] = "swapcase",
	[JJ_M_CASEFOLD] = "casefold", [JJ_M_EXPANDTABS] = "expandtabs", [JJ_M_ENCODE] = "encode",
	[JJ_M_ISTITLE] = "istitle", [JJ_M_ISNUMERIC] = "isnumeric", [JJ_M_ISDECIMAL] = "isdecimal",
	[JJ_M_ISASCII] = "isascii", [JJ_M_ISIDENTIFIER] = "isidentifier", [JJ_M_ISPRINTABLE] = "isprintable",
	[JJ_M_TRANSLATE] = "translate", [JJ_M_MAKETRANS] = "maketrans", [JJ_M_FORMAT_MAP] = "format_map",
	[JJ_M_GET] = "get", [JJ_M_ITEMS] = "items", [JJ_M_KEYS] = "keys", [JJ_M_VALUES] = "values",
	[JJ_M_COPY] = "copy", [JJ_M_FROMKEYS] = "fromkeys", [JJ_M_POP] = "pop", [JJ_M_POPITEM] = "popitem",
	[JJ_M_SETDEFAULT] = "setdefault", [JJ_M_UPDATE] = "update", [JJ_M_CLEAR] = "clear",
	[JJ_M_APPEND] = "append", [JJ_M_EXTEND] = "extend", [JJ_M_INSERT] = "insert", [JJ_M_REMOVE] = "remove",
	[JJ_M_REVERSE] = "reverse", [JJ_M_SORT] = "sort", [JJ_M_CYCLE] = "cycle", [JJ_M_CHANGED] = "changed",
};

enum { TS = 1, TD = 2, TL = 4, TT = 8 }; /* str, dict, list, tuple */

static uint8_t meth_types(int m)
{
	if (m <= JJ_M_FORMAT_MAP) {
		if (m == JJ_M_INDEX || m == JJ_M_COUNT)
			return TS | TL | TT;
		return TS;
	}
	switch (m) {
	case JJ_M_GET:
	case JJ_M_ITEMS:
	case JJ_M_KEYS:
	case JJ_M_VALUES:
	case JJ_M_FROMKEYS:
	case JJ_M_POPITEM:
	case JJ_M_SETDEFAULT:
	case JJ_M_UPDATE: return TD;
	case JJ_M_COPY:
	case JJ_M_POP:
	case JJ_M_CLEAR: return TD | TL;
	case JJ_M_APPEND:
	case JJ_M_EXTEND:
	case JJ_M_INSERT:
	case JJ_M_REMOVE:
	case JJ_M_REVERSE:
	case JJ_M_SORT: return TL;
	default: return 0;
	}
}

/* Whether recv (a str, dict, list or tuple) has a method of that name. */
static bool meth_applies(struct jj_val recv, int meth)
{
	uint8_t mask = recv.t == JJ_STR ? TS : recv.t == JJ_DICT ? TD
		: recv.t == JJ_LIST && recv.sub == JJ_SEQ_LIST ? TL : recv.t == JJ_LIST && recv.sub == JJ_SEQ_TUPLE ? TT : 0;
	return meth >= 0 && meth < JJ_M_COUNT_ && (meth_types(meth) & mask);
}

/* The methods jinja2's ImmutableSandboxedEnvironment refuses (they modify a list or dict). */
static bool meth_unsafe(int meth)
{
	return meth >= JJ_M_POP && meth <= JJ_M_SORT;
}

static const struct jj_name filter_names[] = {
	{"abs", JJ_FI_ABS}, {"attr", JJ_FI_ATTR}, {"batch", JJ_FI_BATCH}, {"capitalize", JJ_FI_CAPITALIZE},
	{"center", JJ_FI_CENTER}, {"count", JJ_FI_COUNT}, {"d", JJ_FI_D}, {"default", JJ_FI_DEFAULT},
	{"dictsort", JJ_FI_DICTSORT}, {"e", JJ_FI_E}, {"escape", JJ_FI_ESCAPE}, {"first", JJ_FI_FIRST},
	{"float", JJ_FI_FLOAT}, {"forceescape", JJ_FI_FORCEESCAPE}, {"format", JJ_FI_FORMAT},
	{"indent", JJ_FI_INDENT}, {"int", JJ_FI_INT}, {"items", JJ_FI_ITEMS}, {"join", JJ_FI_JOIN},
	{"last", JJ_FI_LAST}, {"length", JJ_FI_LENGTH}, {"list", JJ_FI_LIST}, {"lower", JJ_FI_LOWER},
	{"map", JJ_FI_MAP}, {"max", JJ_FI_MAX}, {"min", JJ_FI_MIN}, {"pprint", JJ_FI_PPRINT},
	{"reject", JJ_FI_REJECT}, {"rejectattr", JJ_FI_REJECTATTR}, {"replace", JJ_FI_REPLACE},
	{"reverse", JJ_FI_REVERSE}, {"round", JJ_FI_ROUND}, {"safe", JJ_FI_SAFE}, {"select", JJ_FI_SELECT},
	{"selectattr", JJ_FI_SELECTATTR}, {"slice", JJ_FI_SLICE}, {"sort", JJ_FI_SORT}, {"string", JJ_FI_STRING},
	{"striptags", JJ_FI_STRIPTAGS}, {"sum", JJ_FI_SUM}, {"title", JJ_FI_TITLE}, {"tojson", JJ_FI_TOJSON},
	{"trim", JJ_FI_TRIM}, {"truncate", JJ_FI_TRUNCATE}, {"unique", JJ_FI_UNIQUE}, {"upper", JJ_FI_UPPER},
	{"urlencode", JJ_FI_URLENCODE}, {"wordcount", JJ_FI_WORDCOUNT}, {"wordwrap", JJ_FI_WORDWRAP},
	{"xmlattr", JJ_FI_XMLATTR},
};

static const struct jj_name test_names[] = {
	{"boolean", JJ_TE_BOOLEAN}, {"callable", JJ_TE_CALLABLE}, {"defined", JJ_TE_DEFINED},
	{"divisibleby", JJ_TE_DIVISIBLEBY}, {"eq", JJ_TE_EQ}, {"equalto", JJ_TE_EQ}, {"==", JJ_TE_EQ},
	{"escaped", JJ_TE_ESCAPED}, {"even", JJ_TE_EVEN}, {"false", JJ_TE_FALSE}, {"filter", JJ_TE_FILTER},
	{"float", JJ_TE_FLOAT}, {"ge", JJ_TE_GE}, {">=", JJ_TE_GE}, {"gt", JJ_TE_GT}, {"greaterthan", JJ_TE_GT},
	{">", JJ_TE_GT}, {"in", JJ_TE_IN}, {"integer", JJ_TE_INTEGER}, {"iterable", JJ_TE_ITERABLE},
	{"le", JJ_TE_LE}, {"<=", JJ_TE_LE}, {"lower", JJ_TE_LOWER}, {"lt", JJ_TE_LT}, {"lessthan", JJ_TE_LT},
	{"<", JJ_TE_LT}, {"mapping", JJ_TE_MAPPING}, {"ne", JJ_TE_NE}, {"!=", JJ_TE_NE}, {"none", JJ_TE_NONE},
	{"number", JJ_TE_NUMBER}, {"odd", JJ_TE_ODD}, {"sameas", JJ_TE_SAMEAS}, {"sequence", JJ_TE_SEQUENCE},
	{"string", JJ_TE_STRING}, {"test", JJ_TE_TEST}, {"true", JJ_TE_TRUE}, {"undefined", JJ_TE_UNDEFINED},
	{"upper", JJ_TE_UPPER},
};

#define NAMES(t) (sizeof t / sizeof t[0])

static int jj_func_lookup(const char *s, size_t n)
{
	return name_lookup(func_names, NAMES(func_names), s, n);
}

static int jj_meth_lookup(const char *s, size_t n)
{
	if (n == 0 || n > 12 || s[0] < 'a' || s[0] > 'z')
		return -1;
	for (int k = 0; k < JJ_M_COUNT_; k++)
		if (meth_names[k][0] == s[0] && strlen(meth_names[k]) == n && memcmp(meth_names[k], s, n) == 0)
			return k;
	return -1;
}

static int jj_filter_lookup(const char *s, size_t n)
{
	return name_lookup(filter_names, NAMES(filter_names), s, n);
}

static int jj_test_lookup(const char *s, size_t n)
{
	return name_lookup(test_names, NAMES(test_names), s, n);
}

/* ------------------------------------------------------------------------------------------ helpers */

static struct jj_val str_of(struct jj_run *R, struct jj_val v)
{
	if (v.t == JJ_STR)
		return v;
	if (v.t == JJ_UNDEF)
		return jj_str("", 0);
	struct ob_buf *b = tmpbuf(R, R->max_output);
	jj_write_str(&R->f, b, v);
	struct jj_val s = jj_str(jj_strdup(&R->ar, &R->f, b->p ? b->p : "", b->len), b->len);
	ob_buf_free(b);
	return s;
}

static struct jj_val need_str(struct jj_run *R, struct jj_val v, const char *what)
{
	if (v.t == JJ_UNDEF)
		fail_undef(R, v);
	if (v.t != JJ_STR)
		jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "%s must be str, not %s", what, jj_type_name(v));
	return v;
}

static int64_t need_int(struct jj_run *R, struct jj_val v, const char *what)
{
	if (v.t == JJ_UNDEF)
		fail_undef(R, v);
	if (!is_intlike(v))
		jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "'%s' object cannot be interpreted as an integer%s%s",
			jj_type_name(v), what ? " for " : "", what ? what : "");
	return int_of(v);
}

__attribute__((noreturn)) static void unsupported(struct jj_run *R, const char *kind, const char *name)
{
	jj_fail(&R->f, MF_JINJA_ERUNTIME, "TemplateRuntimeError", "%s '%s' is not supported by orun's Jinja engine", kind,
		name);
}

static struct jj_val dict_val(struct jj_dict *d, int t)
{
	struct jj_val v = {.t = (uint8_t)t, .d = d};
	return v;
}

static struct jj_val tuple2(struct jj_run *R, struct jj_val a, struct jj_val b)
{
	struct jj_list *l = jj_list_new(&R->ar, &R->f, 2);
	l->v[0] = a;
	l->v[1] = b;
	return jj_list_val(l, JJ_SEQ_TUPLE);
}

/* A growable list in the arena. */
static void list_push(struct jj_run *R, struct jj_list *l, size_t *cap, struct jj_val v)
{
	if (l->n == *cap) {
		size_t nc = *cap ? *cap * 2 : 8;
		struct jj_val *nv = jj_alloc(&R->ar, &R->f, nc * sizeof *nv);
		if (l->n)
			jj_memcpy(nv, l->v, l->n * sizeof *nv);
		l->v = nv;
		*cap = nc;
	}
	l->v[l->n++] = v;
}

/* ------------------------------------------------------------------------------------------ case */

enum { CASE_UPPER, CASE_LOWER, CASE_SWAP };

static bool cp_is_upper(uint32_t c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 0xC0 && c <= 0xDE && c != 0xD7) || (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) ||
	       (c >= 0x400 && c <= 0x42F);
}

static bool cp_is_lower(uint32_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 0xDF && c <= 0xFF && c != 0xF7) || (c >= 0x3B1 && c <= 0x3C9) ||
	       (c >= 0x430 && c <= 0x45F);
}

static bool cp_is_cased(uint32_t c)
{
	return cp_is_upper(c) || cp_is_lower(c);
}

static uint32_t cp_upper(uint32_t c)
{
	/* (ß upper-cases to "SS": map_case handles it, being two characters) */
	if (c >= 'a' && c <= 'z')
		return c - 32;
	if (c < 0x80)
		return c;
	if (c >= 0xE0 && c <= 0xFE && c != 0xF7)
		return c - 32;
	if (c == 0xFF)
		return 0x178;
	if (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2)
		return c - 32;
	if (c == 0x3C2)
		return 0x3A3;
	if (c >= 0x430 && c <= 0x44F)
		return c - 32;
	if (c >= 0x450 && c <= 0x45F)
		return c - 80;
	return c;
}

static uint32_t cp_lower(uint32_t c)
{
	if (c >= 'A' && c <= 'Z')
		return c + 32;
	if (c < 0x80)
		return c;
	if (c >= 0xC0 && c <= 0xDE && c != 0xD7)
		return c + 32;
	if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2)
		return c + 32;
	if (c >= 0x410 && c <= 0x42F)
		return c + 32;
	if (c >= 0x400 && c <= 0x40F)
		return c + 80;
	return c;
}

/* Writes code point m where c (k bytes at src) stood: the original bytes when unchanged (so that an invalid
 * byte passes through as it came). Returns the bytes written. */
static size_t put_mapped(char *out, const char *src, size_t k, uint32_t c, uint32_t m)
{
	if (m == c || (k == 1 && c >= 0xDC00)) {
		jj_memcpy(out, src, k);
		return k;
	}
	return ob_utf8_encode(out, m);
}

/* Maps the case of s; first_upper_rest_lower makes str.capitalize. */
static struct jj_val map_case(struct jj_run *R, struct jj_val s, int mode)
{
	char *out = jj_alloc(&R->ar, &R->f, s.len * 2 + 1);
	size_t o = 0;
	jj_charge(&R->f, s.len / 64);
	for (size_t i = 0; i < s.len;) {
		size_t k;
		uint32_t c = jj_cp(s.s + i, s.len - i, &k);
		uint32_t m = mode == CASE_UPPER ? cp_upper(c) : mode == CASE_LOWER ? cp_lower(c)
			: cp_is_upper(c) ? cp_lower(c) : cp_upper(c);
		if (c == 0xDF && mode != CASE_LOWER) { /* Python's special casing: ß -> SS */
			out[o++] = 'S';
			out[o++] = 'S';
			i += k;
			continue;
		}
		o += put_mapped(out + o, s.s + i, k, c, m);
		i += k;
	}
	return jj_str(out, o);
}

/* Python's str.title (title_words: jinja2's filter splits on [-\s({[<]+ instead) and str.capitalize. */
static struct jj_val py_title(struct jj_run *R, struct jj_val s, bool capitalize, bool jinja_words)
{
	char *out = jj_alloc(&R->ar, &R->f, s.len * 2 + 1);
	size_t o = 0;
	bool prev_cased = false, first = true;
	jj_charge(&R->f, s.len / 64);
	for (size_t i = 0; i < s.len;) {
		size_t k;
		uint32_t c = jj_cp(s.s + i, s.len - i, &k), m;
		if (capitalize) {
			m = first ? cp_upper(c) : cp_lower(c);
		} else if (jinja_words) {
			bool sep = jj_isspace(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
			m = prev_cased ? cp_lower(c) : cp_upper(c);
			prev_cased = !sep;
		} else {
			m = prev_cased ? cp_lower(c) : cp_upper(c);
			prev_cased = cp_is_cased(c);
		}
		first = false;
		o += put_mapped(out + o, s.s + i, k, c, m);
		i += k;
	}
	return jj_str(out, o);
}

/* ------------------------------------------------------------------------------------------ strings */

/* A set of code points given as a string, for strip(chars). NULL chars: whitespace. */
static bool in_chars(const struct jj_val *chars, uint32_t c)
{
	if (!chars)
		return jj_isspace(c);
	for (size_t i = 0; i < chars->len;) {
		size_t k;
		if (jj_cp(chars->s + i, chars->len - i, &k) == c)
			return true;
		i += k;
	}
	return false;
}

static struct jj_val py_strip(struct jj_val s, const struct jj_val *chars, bool left, bool right)
{
	size_t a = 0, b = s.len;
	if (left)
		while (a < b) {
			size_t k;
			uint32_t c = jj_cp(s.s + a, b - a, &k);
			if (!in_chars(chars, c))
				break;
			a += k;
		}
	if (right)
		while (b > a) {
			size_t k = 1;
			while (k < 4 && k < b - a && ((unsigned char)s.s[b - k] & 0xC0) == 0x80)
				k++;
			size_t kk;
			uint32_t c = jj_cp(s.s + b - k, k, &kk);
			if (kk != k) {
				k = 1;
				c = jj_cp(s.s + b - 1, 1, &kk);
			}
			if (!in_chars(chars, c))
				break;
			b -= k;
		}
	return jj_str(s.s + a, b - a);
}

static const struct jj_val *opt_chars(struct jj_run *R, const struct jj_args *a, const char *fname)
{
	if (a->n == 0 || a->pos[0].t == JJ_NONE)
		return NULL;
	if (a->pos[0].t != JJ_STR)
		jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "%s arg must be None or str", fname);
	return &a->pos[0];
}

static const char *find_bytes(const char *h, size_t hn, const char *n, size_t nn)
{
	if (nn == 0)
		return h;
	if (nn > hn)
		return NULL;
	return memmem(h, hn, n, nn);
}

static const char *rfind_bytes(const char *h, size_t hn, const char *n, size_t nn)
{
	if (nn > hn)
		return NULL;
	for (size_t i = hn - nn + 1; i-- > 0;)
		if (memcmp(h + i, n, nn) == 0)
			return h + i;
	return NULL;
}

/* Python's str.split / rsplit. */
static struct jj_val py_split(struct jj_run *R, struct jj_val s, const struct jj_val *sep, int64_t maxsplit, bool right)
{
	struct jj_list *l = jj_list_new(&R->ar, &R->f, 0);
	size_t cap = 0;
	jj_charge(&R->f, s.len / 32);
	if (sep) {
		if (sep->len == 0)
			jj_fail(&R->f, MF_JINJA_EVALUE, "ValueError", "empty separator");
		if (!right) {
			size_t pos = 0;
			const char *hit;
			while (maxsplit != 0 && (hit = find_bytes(s.s + pos, s.len - pos, sep->s, sep->len))) {
				size_t at = (size_t)(hit - s.s);
				list_push(R, l, &cap, jj_str(s.s + pos, at - pos));
				pos = at + sep->len;
				if (maxsplit > 0)
					maxsplit--;
			}
			list_push(R, l, &cap, jj_str(s.s + pos, s.len - pos));
			return jj_list_val(l, JJ_SEQ_LIST);
		}
		size_t end = s.len;
		const char *hit;
		while (maxsplit != 0 && (hit = rfind_bytes(s.s, end, sep->s, sep->len))) {
			size_t at = (size_t)(hit - s.s);
			list_push(R, l, &cap, jj_str(s.s + at + sep->len, end - at - sep->len));
			end = at;
			if (maxsplit > 0)
				maxsplit--;
		}
		list_push(R, l, &cap, jj_str(s.s, end));
	} else if (!right) {
		size_t i = 0;
		for (;;) {
			i += jj_lspace_len(s.s + i, s.len - i);
			if (i >= s.len)
				break;
			if (maxsplit == 0) {
				list_push(R, l, &cap, jj_str(s.s + i, s.len - i));
				break;
			}
			size_t j = i;
			while (j < s.len) {
				size_t k;
				if (jj_isspace(jj_cp(s.s + j, s.len - j, &k)))
					break;
				j += k;
			}
			list_push(R, l, &cap, jj_str(s.s + i, j - i));
			i = j;
			if (maxsplit > 0)
				maxsplit--;
		}
		return jj_list_val(l, JJ_SEQ_LIST);
	} else {
		size_t end = s.len;
		for (;;) {
			end = jj_rstrip_len(s.s, end);
			if (end == 0)
				break;
			if (maxsplit == 0) {
				list_push(R, l, &cap, jj_str(s.s, end));
				break;
			}
			size_t j = end;
			while (j > 0) {
				size_t k;
				uint32_t c = ob_utf8_decode_last((const unsigned char *)s.s, j, &k);
				if (jj_isspace(c))
					break;
				j -= k;
			}
			list_push(R, l, &cap, jj_str(s.s + j, end - j));
			end = j;
			if (maxsplit > 0)
				maxsplit--;
		}
	}
	/* rsplit collected from the right */
	for (size_t a = 0, b = l->n ? l->n - 1 : 0; a < b; a++, b--) {
		struct jj_val t = l->v[a];
		l->v[a] = l->v[b];
		l->v[b] = t;
	}
	return jj_list_val(l, JJ_SEQ_LIST);
}

static struct jj_val py_replace(struct jj_run *R, struct jj_val s, struct jj_val old, struct jj_val rep, int64_t count)
{
	struct ob_buf *b = tmpbuf(R, R->max_output);
	jj_charge(&R->f, s.len / 32);
	if (old.len == 0) {
		/* insert rep before every character and at the end, count times at most */
		size_t i = 0;
		int64_t done = 0;
		for (;;) {
			if (count >= 0 && done >= count)
				break;
			ob_buf_append(b, rep.s, rep.len);
			done++;
			if (i >= s.len)
				break;
			size_t k;
			jj_cp(s.s + i, s.len - i, &k);
			ob_buf_append(b, s.s + i, k);
			i += k;
		}
		ob_buf_append(b, s.s + i, s.len - i);
	} else {
		size_t pos = 0;
		const char *hit;
		while (count != 0 && (hit = find_bytes(s.s + pos, s.len - pos, old.s, old.len))) {
			size_t at = (size_t)(hit - s.s);
			ob_buf_append(b, s.s + pos, at - pos);
			ob_buf_append(b, rep.s, rep.len);
			pos = at + old.len;
			if (count > 0)
				count--;
		}
		ob_buf_append(b, s.s + pos, s.len - pos);
	}
	buf_check(&R->f, b);
	struct jj_val v = jj_str(jj_strdup(&R->ar, &R->f, b->p ? b->p : "", b->len), b->len);
	ob_buf_free(b);
	return v;
}

/* Code point index of byte offset off in s. */
static int64_t cp_index(struct jj_val s, size_t off)
{
	return (int64_t)(jj_is_ascii(s.s, off) ? off : jj_cplen(s.s, off));
}

static bool is_line_break(uint32_t c)
{
	return c == '\n' || c == '\r' || c == 0x0b || c == 0x0c || c == 0x1c || c == 0x1d || c == 0x1e ||
	       c == 0x85 || c == 0x2028 || c == 0x2029;
}

/* Python's str.splitlines(keepends). */
static struct jj_list *py_splitlines(struct jj_run *R, struct jj_val s, bool keepends)
{
	struct jj_list *l = jj_list_new(&R->ar, &R->f, 0);
	size_t cap = 0, start = 0;
	for (size_t i = 0; i < s.len;) {
		size_t k;
		uint32_t c = jj_cp(s.s + i, s.len - i, &k);
		if (!is_line_break(c)) {
			i += k;
			continue;
		}
		size_t eol = i + k;
		if (c == '\r' && eol < s.len && s.s[eol] == '\n')
			eol++;
		list_push(R, l, &cap, jj_str(s.s + start, (keepends ? eol : i) - start));
		start = i = eol;
	}
	if (start < s.len)
		list_push(R, l, &cap, jj_str(s.s + start, s.len - start));
	return l;
}

static bool str_all(struct jj_val s, bool (*pred)(uint32_t))
{
	if (s.len == 0)
		return false;
	for (size_t i = 0; i < s.len;) {
		size_t k;
		if (!pred(jj_cp(s.s + i, s.len - i, &k)))
			return false;
		i += k;
	}
	return true;
}

static bool p_digit(uint32_t c)
{
	return ob_rune_is_digit(c);
}

static bool p_alpha(uint32_t c)
{
	return ob_rune_is_letter(c);
}

static bool p_alnum(uint32_t c)
{
	return ob_rune_is_letter(c) || ob_rune_is_digit(c);
}

static bool p_space(uint32_t c)
{
	return jj_isspace(c);
}

/* str.isupper / islower: at least one cased character, none of the other case. */
static bool str_case_is(struct jj_val s, bool upper)
{
	bool cased = false;
	for (size_t i = 0; i < s.len;) {
		size_t k;
		uint32_t c = jj_cp(s.s + i, s.len - i, &k);
		if (upper ? cp_is_lower(c) : cp_is_upper(c))
			return false;
		cased = cased || cp_is_cased(c);
		i += k;
	}
	return cased;
}

static struct jj_val pad_str(struct jj_run *R, struct jj_val s, int64_t width, struct jj_val fill, int how)
{
	size_t n = jj_strlen_cp(s);
	if (width <= (int64_t)n)
		return s;
	if ((uint64_t)width > R->max_output / 4)
		jj_fail(&R->f, MF_JINJA_ELIMIT, "LimitError", "string size limit exceeded");
	size_t pad = (size_t)width - n, left = how == 0 ? pad / 2 + (pad & (size_t)width & 1) : how < 0 ? 0 : pad;
	size_t right = pad - left;
	char *out = jj_alloc(&R->ar, &R->f, s.len + pad * fill.len + 1);
	size_t o = 0;
	for (size_t k = 0; k < left; k++, o += fill.len)
		jj_memcpy(out + o, fill.s, fill.len);
	jj_memcpy(out + o, s.s, s.len);
	o += s.len;
	for (size_t k = 0; k < right; k++, o += fill.len)
		jj_memcpy(out + o, fill.s, fill.len);
	return jj_str(out, o);
}

/* str.format with positional {} / {0} and named {name} fields, !r / !s conversions and no format specs. */
static struct jj_val py_format(struct jj_run *R, struct jj_val fmt, const struct jj_args *a)
{
	struct ob_buf *b = tmpbuf(R, R->max_output);
	uint32_t auto_idx = 0;
	for (size_t i = 0; i < fmt.len; i++) {
		char c = fmt.s[i];
		if ((c == '{' || c == '}') && i + 1 < fmt.len && fmt.s[i + 1] == c) {
			ob_buf_putc(b, c);
			i++;
			continue;
		}
		if (c == '}')
			jj_fail(&R->f, MF_JINJA_EVALUE, "ValueError", "Single '}' encountered in format string");
		if (c != '{') {
			ob_buf_putc(b, c);
			continue;
		}
		const char *end = memchr(fmt.s + i, '}', fmt.len - i);
		if (!end)
			jj_fail(&R->f, MF_JINJA_EVALUE, "ValueError", "Single '{' encountered in format string");
		const char *f0 = fmt.s + i + 1;
		size_t flen = (size_t)(end - f0);
		char conv = 0;
		const char *bang = memchr(f0, '!', flen), *colon = memchr(f0, ':', flen);
		if (colon)
			unsupported(R, "format spec in", "str.format");
		if (bang) {
			conv = bang + 1 < end ? bang[1] : 0;
			flen = (size_t)(bang - f0);
		}
		struct jj_val v;
		if (flen == 0 || isdigit((unsigned char)f0[0])) {
			uint32_t idx = flen == 0 ? auto_idx++ : (uint32_t)strtoul(f0, NULL, 10);
			if (idx >= a->n)
				jj_fail(&R->f, MF_JINJA_ERUNTIME, "IndexError",
					"Replacement index %u out of range for positional args tuple", idx);
			v = a->pos[idx];
		} else {
			uint32_t k;
			for (k = 0; k < a->nkw; k++)
				if (a->kwl[k] == flen && memcmp(a->kwn[k], f0, flen) == 0)
					break;
			if (k == a->nkw)
				jj_fail(&R->f, MF_JINJA_ERUNTIME, "KeyError", "'%.*s'", (int)flen, f0);
			v = a->kw[k];
		}
		if (conv == 'r')
			write_repr(&R->f, b, v, 0);
		else
			jj_write_str(&R->f, b, v);
		i = (size_t)(end - fmt.s);
	}
	buf_check(&R->f, b);
	struct jj_val v = jj_str(jj_strdup(&R->ar, &R->f, b->p ? b->p : "", b->len), b->len);
	ob_buf_free(b);
	return v;
}

static struct jj_val str_join(struct jj_run *R, struct jj_val sep, const struct jj_list *items, bool convert)
{
	size_t total = 0;
	struct jj_val *parts = items->n ? jj_alloc(&R->ar, &R->f, items->n * sizeof *parts) : NULL;
	jj_charge(&R->f, items->n);
	for (size_t k = 0; k < items->n; k++) {
		struct jj_val v = items->v[k];
		if (v.t != JJ_STR) {
			if (!convert)
				jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "sequence item %zu: expected str instance, %s found",
					k, jj_type_name(v));
			v = str_of(R, v);
		}
		parts[k] = v;
		total += v.len + (k ? sep.len : 0);
		if (total > R->max_output)
			jj_fail(&R->f, MF_JINJA_ELIMIT, "LimitError", "string size limit exceeded: more than %zu bytes",
				R->max_output);
	}
	char *out = jj_alloc(&R->ar, &R->f, total + 1);
	size_t o = 0;
	for (size_t k = 0; k < items->n; k++) {
		if (k) {
			jj_memcpy(out + o, sep.s, sep.len);
			o += sep.len;
		}
		jj_memcpy(out + o, parts[k].s, parts[k].len);
		o += parts[k].len;
	}
	return jj_str(out, o);
}

/* ------------------------------------------------------------------------------------------ methods */

static struct jj_val call_method(struct jj_run *R, struct jj_val recv, int meth, const char *name, size_t len,
				 const struct jj_args *a);

/* markupsafe's Markup methods: string arguments are escaped first, and the string results (in lists and
 * tuples too) stay Markup. */
static struct jj_val markup_method(struct jj_run *R, struct jj_val recv, int meth, const char *name, size_t len,
				   const struct jj_args *a)
{
	struct jj_val plain = recv;
	plain.sub = 0;
	bool marks = true;
	switch (meth) {
	case JJ_M_STARTSWITH:
	case JJ_M_ENDSWITH:
	case JJ_M_FIND:
	case JJ_M_RFIND:
	case JJ_M_INDEX:
	case JJ_M_RINDEX:
	case JJ_M_COUNT:
	case JJ_M_ISDIGIT:
	case JJ_M_ISALPHA:
	case JJ_M_ISALNUM:
	case JJ_M_ISSPACE:
	case JJ_M_ISUPPER:
	case JJ_M_ISLOWER:
	case JJ_M_ISASCII:
	case JJ_M_ISDECIMAL:
	case JJ_M_ISNUMERIC: marks = false; break;
	default: break;
	}
	struct jj_args esc = *a;
	if (marks && (a->n || a->nkw)) {
		esc.pos = a->n ? jj_alloc(&R->ar, &R->f, a->n * sizeof *esc.pos) : NULL;
		esc.kw = a->nkw ? jj_alloc(&R->ar, &R->f, a->nkw * sizeof *esc.kw) : NULL;
		for (uint32_t k = 0; k < a->n; k++)
			esc.pos[k] = a->pos[k].t == JJ_STR ? markup_escape(R, a->pos[k]) : a->pos[k];
		for (uint32_t k = 0; k < a->nkw; k++)
			esc.kw[k] = a->kw[k].t == JJ_STR ? markup_escape(R, a->kw[k]) : a->kw[k];
		if (meth == JJ_M_JOIN && a->n == 1) {
			const struct jj_list *items = iter_items(R, a->pos[0]);
			struct jj_list *e = jj_list_new(&R->ar, &R->f, items->n);
			for (size_t k = 0; k < items->n; k++)
				e->v[k] = items->v[k].t == JJ_STR ? markup_escape(R, items->v[k]) : items->v[k];
			esc.pos[0] = jj_list_val(e, JJ_SEQ_LIST);
		}
	}
	struct jj_val r = call_method(R, plain, meth, name, len, marks ? &esc : a);
	if (!marks)
		return r;
	if (r.t == JJ_STR)
		r.sub = JJ_STR_MARKUP;
	if (r.t == JJ_LIST)
		for (size_t k = 0; k < r.l->n; k++)
			if (r.l->v[k].t == JJ_STR)
				r.l->v[k].sub = JJ_STR_MARKUP;
	return r;
}

static struct jj_val call_method(struct jj_run *R, struct jj_val recv, int meth, const char *name, size_t len,
				 const struct jj_args *a)
{
	char fname[64];
	snprintf(fname, sizeof fname, "%s.%.*s", jj_type_name(recv), (int)(len > 40 ? 40 : len), name);
	struct jj_val p[4];
	bool h[4];
	if (recv.t == JJ_LOOP) {
		if (meth == JJ_M_CYCLE) {
			if (a->n == 0)
				jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "no items for cycling given");
			return a->pos[recv.loop->i % a->n];
		}
		unsupported(R, "method", "loop.changed");
	}
	if (recv.t == JJ_DICT) {
		static const char *const get_names[] = {"key", "default"};
		switch (meth) {
		case JJ_M_GET: {
			bind_args(R, "get", a, get_names, 2, p, h);
			if (!h[0])
				jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "get expected at least 1 argument, got 0");
			if ((p[0].t == JJ_LIST && p[0].sub == JJ_SEQ_LIST) || p[0].t == JJ_DICT)
				jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "unhashable type: '%s'", jj_type_name(p[0]));
			const struct jj_val *v = jj_dict_get(&R->f, recv.d, p[0]);
			return v ? *v : h[1] ? p[1] : jj_none();
		}
		case JJ_M_ITEMS:
		case JJ_M_KEYS:
		case JJ_M_VALUES: {
			struct jj_list *l = jj_list_new(&R->ar, &R->f, recv.d->n);
			jj_charge(&R->f, recv.d->n);
			for (size_t k = 0; k < recv.d->n; k++)
				l->v[k] = meth == JJ_M_KEYS ? recv.d->kv[k].k : meth == JJ_M_VALUES ? recv.d->kv[k].v
					: tuple2(R, recv.d->kv[k].k, recv.d->kv[k].v);
			return jj_list_val(l, meth == JJ_M_ITEMS ? JJ_SEQ_ITEMS : meth == JJ_M_KEYS ? JJ_SEQ_KEYS
										 : JJ_SEQ_VALUES);
		}
		case JJ_M_COPY: {
			struct jj_dict *d = jj_dict_new(&R->ar, &R->f, recv.d->n);
			for (size_t k = 0; k < recv.d->n; k++)
				jj_dict_set(&R->ar, &R->f, d, recv.d->kv[k].k, recv.d->kv[k].v);
			return dict_val(d, JJ_DICT);
		}
		default: unsupported(R, "method", fname);
		}
	}
	if (recv.t == JJ_LIST) {
		switch (meth) {
		case JJ_M_INDEX:
		case JJ_M_COUNT: {
			if (a->n < 1 || a->nkw)
				jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "%s() takes exactly one argument", name);
			int64_t count = 0;
			jj_charge(&R->f, recv.l->n);
			for (size_t k = 0; k < recv.l->n; k++)
				if (jj_eq(&R->f, recv.l->v[k], a->pos[0])) {
					if (meth == JJ_M_INDEX)
						return jj_int((int64_t)k);
					count++;
				}
			if (meth == JJ_M_COUNT)
				return jj_int(count);
			struct ob_buf *b = tmpbuf(R, 400);
			write_repr(&R->f, b, a->pos[0], 0);
			jj_fail(&R->f, MF_JINJA_EVALUE, "ValueError", "%.300s is not in %s", b->p ? b->p : "",
				jj_type_name(recv));
		}
		case JJ_M_COPY: {
			struct jj_list *l = jj_list_new(&R->ar, &R->f, recv.l->n);
			jj_memcpy(l->v, recv.l->v, recv.l->n * sizeof *l->v);
			return jj_list_val(l, JJ_SEQ_LIST);
		}
		default: unsupported(R, "method", fname);
		}
	}
	if (recv.t != JJ_STR)
		unsupported(R, "method", fname);
	if (recv.sub == JJ_STR_MARKUP)
		return markup_method(R, recv, meth, name, len, a);
	struct jj_val s = recv;
	switch (meth) {
	case JJ_M_SPLIT:
	case JJ_M_RSPLIT: {
		static const char *const names[] = {"sep", "maxsplit"};
		bind_args(R, name, a, names, 2, p, h);
		const struct jj_val *sep = h[0] && p[0].t != JJ_NONE ? &p[0] : NULL;
		if (sep && sep->t != JJ_STR)
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "must be str or None, not %s", jj_type_name(*sep));
		int64_t maxsplit = h[1] ? need_int(R, p[1], NULL) : -1;
		return py_split(R, s, sep, maxsplit, meth == JJ_M_RSPLIT);
	}
	case JJ_M_STRIP:
	case JJ_M_LSTRIP:
	case JJ_M_RSTRIP:
		return py_strip(s, opt_chars(R, a, name), meth != JJ_M_RSTRIP, meth != JJ_M_LSTRIP);
	case JJ_M_STARTSWITH:
	case JJ_M_ENDSWITH: {
		static const char *const names[] = {"prefix", "start", "end"};
		bind_args(R, name, a, names, 3, p, h);
		if (!h[0])
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "%s() takes at least 1 argument (0 given)", name);
		struct jj_val sub = s;
		if ((h[1] && p[1].t != JJ_NONE) || (h[2] && p[2].t != JJ_NONE))
			sub = do_slice(R, s, h[1] ? &p[1] : NULL, h[2] ? &p[2] : NULL, NULL);
		const struct jj_val *cands = &p[0];
		size_t nc = 1;
		if (p[0].t == JJ_LIST && p[0].sub == JJ_SEQ_TUPLE) {
			cands = p[0].l->v;
			nc = p[0].l->n;
		}
		for (size_t k = 0; k < nc; k++) {
			if (cands[k].t != JJ_STR)
				jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError",
					"%s first arg must be str or a tuple of str, not %s", name, jj_type_name(cands[k]));
			const struct jj_val *c = &cands[k];
			if (c->len <= sub.len &&
			    memcmp(meth == JJ_M_STARTSWITH ? sub.s : sub.s + sub.len - c->len, c->s, c->len) == 0)
				return jj_bool(true);
		}
		return jj_bool(false);
	}
	case JJ_M_REPLACE: {
		static const char *const names[] = {"old", "new", "count"};
		bind_args(R, name, a, names, 3, p, h);
		if (!h[0] || !h[1])
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "replace expected at least 2 arguments");
		need_str(R, p[0], "replace() argument 1");
		need_str(R, p[1], "replace() argument 2");
		return py_replace(R, s, p[0], p[1], h[2] ? need_int(R, p[2], NULL) : -1);
	}
	case JJ_M_TITLE: return py_title(R, s, false, false);
	case JJ_M_CAPITALIZE: return py_title(R, s, true, false);
	case JJ_M_UPPER: return map_case(R, s, CASE_UPPER);
	case JJ_M_LOWER:
	case JJ_M_CASEFOLD: return map_case(R, s, CASE_LOWER);
	case JJ_M_SWAPCASE: return map_case(R, s, CASE_SWAP);
	case JJ_M_FIND:
	case JJ_M_RFIND:
	case JJ_M_INDEX:
	case JJ_M_RINDEX:
	case JJ_M_COUNT: {
		static const char *const names[] = {"sub", "start", "end"};
		bind_args(R, name, a, names, 3, p, h);
		if (!h[0])
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "%s() takes at least 1 argument (0 given)", name);
		need_str(R, p[0], "argument");
		int64_t base = 0;
		struct jj_val hay = s;
		if ((h[1] && p[1].t != JJ_NONE) || (h[2] && p[2].t != JJ_NONE)) {
			hay = do_slice(R, s, h[1] ? &p[1] : NULL, h[2] ? &p[2] : NULL, NULL);
			if (h[1] && p[1].t != JJ_NONE) {
				int64_t st = int_of(p[1]), n = (int64_t)jj_strlen_cp(s);
				base = st < 0 ? (st + n < 0 ? 0 : st + n) : (st > n ? n : st);
			}
		}
		jj_charge(&R->f, hay.len / 32);
		if (meth == JJ_M_COUNT) {
			if (p[0].len == 0)
				return jj_int((int64_t)jj_strlen_cp(hay) + 1);
			int64_t count = 0;
			size_t pos = 0;
			const char *hit;
			while ((hit = find_bytes(hay.s + pos, hay.len - pos, p[0].s, p[0].len))) {
				count++;
				pos = (size_t)(hit - hay.s) + p[0].len;
			}
			return jj_int(count);
		}
		bool rev = meth == JJ_M_RFIND || meth == JJ_M_RINDEX;
		const char *hit = rev ? rfind_bytes(hay.s, hay.len, p[0].s, p[0].len)
				      : find_bytes(hay.s, hay.len, p[0].s, p[0].len);
		if (!hit) {
			if (meth == JJ_M_INDEX || meth == JJ_M_RINDEX)
				jj_fail(&R->f, MF_JINJA_EVALUE, "ValueError", "substring not found");
			return jj_int(-1);
		}
		return jj_int(base + cp_index(hay, (size_t)(hit - hay.s)));
	}
	case JJ_M_JOIN: {
		if (a->n != 1 || a->nkw)
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "str.join() takes exactly one argument (%u given)", a->n);
		return str_join(R, s, iter_items(R, a->pos[0]), false);
	}
	case JJ_M_FORMAT: return py_format(R, s, a);
	case JJ_M_SPLITLINES: {
		static const char *const names[] = {"keepends"};
		bind_args(R, name, a, names, 1, p, h);
		return jj_list_val(py_splitlines(R, s, h[0] && jj_truthy(p[0])), JJ_SEQ_LIST);
	}
	case JJ_M_ISDIGIT:
	case JJ_M_ISDECIMAL:
	case JJ_M_ISNUMERIC: return jj_bool(str_all(s, p_digit));
	case JJ_M_ISALPHA: return jj_bool(str_all(s, p_alpha));
	case JJ_M_ISALNUM: return jj_bool(str_all(s, p_alnum));
	case JJ_M_ISSPACE: return jj_bool(str_all(s, p_space));
	case JJ_M_ISUPPER: return jj_bool(str_case_is(s, true));
	case JJ_M_ISLOWER: return jj_bool(str_case_is(s, false));
	case JJ_M_ISASCII: return jj_bool(jj_is_ascii(s.s, s.len));
	case JJ_M_REMOVEPREFIX:
	case JJ_M_REMOVESUFFIX: {
		if (a->n != 1)
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "%s() takes exactly one argument (%u given)", name, a->n);
		struct jj_val x = need_str(R, a->pos[0], "argument");
		if (x.len <= s.len && meth == JJ_M_REMOVEPREFIX && memcmp(s.s, x.s, x.len) == 0)
			return jj_str(s.s + x.len, s.len - x.len);
		if (x.len <= s.len && meth == JJ_M_REMOVESUFFIX && memcmp(s.s + s.len - x.len, x.s, x.len) == 0)
			return jj_str(s.s, s.len - x.len);
		return s;
	}
	case JJ_M_ZFILL: {
		if (a->n != 1)
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "zfill() takes exactly one argument (%u given)", a->n);
		int64_t w = need_int(R, a->pos[0], NULL);
		size_t n = jj_strlen_cp(s);
		if (w <= (int64_t)n)
			return s;
		struct jj_val padded = pad_str(R, s, w, jj_str("0", 1), 1);
		if (s.len && (s.s[0] == '+' || s.s[0] == '-')) { /* the sign goes first */
			char *q = (char *)padded.s;
			q[(size_t)w - n] = '0';
			q[0] = s.s[0];
		}
		return padded;
	}
	case JJ_M_CENTER:
	case JJ_M_LJUST:
	case JJ_M_RJUST: {
		static const char *const names[] = {"width", "fillchar"};
		bind_args(R, name, a, names, 2, p, h);
		if (!h[0])
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "%s expected at least 1 argument, got 0", name);
		struct jj_val fill = h[1] ? need_str(R, p[1], "fillchar") : jj_str(" ", 1);
		if (jj_strlen_cp(fill) != 1)
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "The fill character must be exactly one character long");
		return pad_str(R, s, need_int(R, p[0], NULL), fill, meth == JJ_M_CENTER ? 0 : meth == JJ_M_LJUST ? -1 : 1);
	}
	case JJ_M_PARTITION:
	case JJ_M_RPARTITION: {
		if (a->n != 1)
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "%s() takes exactly one argument (%u given)", name, a->n);
		struct jj_val sep = need_str(R, a->pos[0], "argument");
		if (sep.len == 0)
			jj_fail(&R->f, MF_JINJA_EVALUE, "ValueError", "empty separator");
		const char *hit = meth == JJ_M_PARTITION ? find_bytes(s.s, s.len, sep.s, sep.len)
							 : rfind_bytes(s.s, s.len, sep.s, sep.len);
		struct jj_list *l = jj_list_new(&R->ar, &R->f, 3);
		if (!hit) {
			l->v[0] = meth == JJ_M_PARTITION ? s : jj_str("", 0);
			l->v[1] = jj_str("", 0);
			l->v[2] = meth == JJ_M_PARTITION ? jj_str("", 0) : s;
		} else {
			size_t at = (size_t)(hit - s.s);
			l->v[0] = jj_str(s.s, at);
			l->v[1] = sep;
			l->v[2] = jj_str(s.s + at + sep.len, s.len - at - sep.len);
		}
		return jj_list_val(l, JJ_SEQ_TUPLE);
	}
	default: unsupported(R, "method", fname);
	}
}

/* ------------------------------------------------------------------------------------------ globals */

static struct jj_val call_func(struct jj_run *R, int id, const struct jj_args *a)
{
	switch (id) {
	case JJ_F_RANGE: {
		if (a->nkw)
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "range() takes no keyword arguments");
		if (a->n < 1 || a->n > 3)
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "range expected at most 3 arguments, got %u", a->n);
		int64_t start = 0, stop, step = 1;
		if (a->n == 1) {
			stop = need_int(R, a->pos[0], NULL);
		} else {
			start = need_int(R, a->pos[0], NULL);
			stop = need_int(R, a->pos[1], NULL);
			if (a->n == 3)
				step = need_int(R, a->pos[2], NULL);
		}
		if (step == 0)
			jj_fail(&R->f, MF_JINJA_EVALUE, "ValueError", "range() arg 3 must not be zero");
		double count = step > 0 ? ceil(((double)stop - (double)start) / (double)step)
					: ceil(((double)start - (double)stop) / -(double)step);
		if (count < 0)
			count = 0;
		if (count > MF_JINJA_MAX_RANGE)
			jj_fail(&R->f, MF_JINJA_ERUNTIME, "OverflowError",
				"Range too big. The sandbox blocks ranges larger than MAX_RANGE (%d).", MF_JINJA_MAX_RANGE);
		struct jj_list *l = jj_list_new(&R->ar, &R->f, (size_t)count);
		jj_charge(&R->f, (uint64_t)count / 8);
		for (size_t k = 0; k < l->n; k++)
			l->v[k] = jj_int(start + (int64_t)k * step);
		return jj_list_val(l, JJ_SEQ_LIST);
	}
	case JJ_F_DICT:
	case JJ_F_NAMESPACE: {
		struct jj_dict *d = jj_dict_new(&R->ar, &R->f, 0);
		const char *fname = id == JJ_F_DICT ? "dict" : "namespace";
		if (a->n > 1)
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "%s expected at most 1 argument, got %u", fname, a->n);
		if (a->n == 1) {
			struct jj_val src = a->pos[0];
			if (src.t == JJ_DICT || src.t == JJ_NS) {
				for (size_t k = 0; k < src.d->n; k++)
					jj_dict_set(&R->ar, &R->f, d, src.d->kv[k].k, src.d->kv[k].v);
			} else {
				const struct jj_list *items = iter_items(R, src);
				for (size_t k = 0; k < items->n; k++) {
					const struct jj_list *pair = iter_items(R, items->v[k]);
					if (pair->n != 2)
						jj_fail(&R->f, MF_JINJA_EVALUE, "ValueError",
							"dictionary update sequence element #%zu has length %zu; 2 is required",
							k, pair->n);
					jj_dict_set(&R->ar, &R->f, d, pair->v[0], pair->v[1]);
				}
			}
		}
		for (uint32_t k = 0; k < a->nkw; k++)
			jj_dict_set(&R->ar, &R->f, d, jj_str(a->kwn[k], a->kwl[k]), a->kw[k]);
		return dict_val(d, id == JJ_F_DICT ? JJ_DICT : JJ_NS);
	}
	case JJ_F_RAISE: {
		struct jj_val msg = a->n ? a->pos[0] : a->nkw ? a->kw[0] : jj_none();
		if (a->n + a->nkw != 1)
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError",
				"raise_exception() takes 1 positional argument but %u were given", a->n + a->nkw);
		struct jj_val s = str_of(R, msg);
		jj_fail(&R->f, MF_JINJA_ERAISED, "TemplateError", "%.*s", (int)(s.len > 4000 ? 4000 : s.len), s.s);
	}
	case JJ_F_STRFTIME: {
		if (a->n != 1 || a->nkw)
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "strftime_now() takes 1 positional argument but %u were given",
				a->n + a->nkw);
		struct jj_val fmt = a->pos[0];
		if (fmt.t != JJ_STR)
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "strftime() argument 1 must be str, not %s", jj_type_name(fmt));
		if (fmt.len > 4096 || memchr(fmt.s, 0, fmt.len))
			jj_fail(&R->f, MF_JINJA_EVALUE, "ValueError", "strftime format too long or holds a NUL");
		char cfmt[4100];
		jj_memcpy(cfmt, fmt.s, fmt.len);
		cfmt[fmt.len] = 0;
		time_t t = (time_t)R->now;
		struct tm tm;
		if (R->now_local)
			localtime_r(&t, &tm);
		else
			gmtime_r(&t, &tm);
		size_t cap = fmt.len * 8 + 64;
		char *out = jj_alloc(&R->ar, &R->f, cap);
		size_t n = fmt.len ? strftime(out, cap, cfmt, &tm) : 0;
		return jj_str(out, n);
	}
	case JJ_F_CYCLER: unsupported(R, "function", "cycler");
	case JJ_F_JOINER: unsupported(R, "function", "joiner");
	default: unsupported(R, "function", "lipsum");
	}
}

static struct jj_val call_value(struct jj_run *R, struct jj_val fn, const struct jj_args *a)
{
	switch (fn.t) {
	case JJ_MACRO: return call_macro(R, fn.node, a, NULL);
	case JJ_FUNC: return call_func(R, fn.sub, a);
	case JJ_METHOD: return call_method(R, *fn.recv, fn.sub, meth_names[fn.sub], strlen(meth_names[fn.sub]), a);
	case JJ_UNDEF: fail_undef(R, fn);
	default: break;
	}
	jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "'%s' object is not callable", jj_type_name(fn));
}

/* ------------------------------------------------------------------------------------------ filters */

/* make_attrgetter: getitem along "a.b.0" (digit parts as ints), default when undefined. */
static struct jj_val attr_path(struct jj_run *R, struct jj_val item, struct jj_val attr, const struct jj_val *dflt)
{
	if (attr.t != JJ_STR) {
		item = get_item(R, item, attr);
		return dflt && item.t == JJ_UNDEF ? *dflt : item;
	}
	size_t i = 0;
	do {
		const char *dot = memchr(attr.s + i, '.', attr.len - i);
		size_t end = dot ? (size_t)(dot - attr.s) : attr.len;
		struct jj_val part = jj_str(attr.s + i, end - i);
		bool digits = end > i;
		for (size_t k = i; k < end; k++)
			digits = digits && isdigit((unsigned char)attr.s[k]);
		if (digits && end - i < 18)
			part = jj_int(strtoll(attr.s + i, NULL, 10));
		item = get_item(R, item, part);
		if (dflt && item.t == JJ_UNDEF)
			item = *dflt;
		i = end + 1;
	} while (i <= attr.len);
	return item;
}

static struct jj_val lower_if_str(struct jj_run *R, struct jj_val v)
{
	return v.t == JJ_STR ? map_case(R, v, CASE_LOWER) : v;
}

static size_t length_of(struct jj_run *R, struct jj_val v)
{
	switch (v.t) {
	case JJ_STR: return jj_strlen_cp(v);
	case JJ_LIST:
		if (v.sub != JJ_SEQ_GEN && v.sub != JJ_SEQ_REVERSED)
			return v.l->n;
		break;
	case JJ_DICT: return v.d->n;
	case JJ_UNDEF: return 0;
	default: break;
	}
	jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "object of type '%s' has no len()", jj_type_name(v));
}

/* Stable merge sort of v[0..n) by keys[0..n) with Python's < (TypeError on mixed types). */
static void sort_vals(struct jj_run *R, struct jj_val *v, struct jj_val *keys, size_t n, bool reverse)
{
	if (n < 2)
		return;
	struct jj_val *tv = jj_alloc(&R->ar, &R->f, n * sizeof *tv), *tk = jj_alloc(&R->ar, &R->f, n * sizeof *tk);
	for (size_t width = 1; width < n; width *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * width) {
			size_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
			size_t i = lo, j = mid, o = lo;
			while (i < mid && j < hi) {
				jj_charge(&R->f, 1);
				/* take from the right only when it sorts strictly first: stable */
				bool right_first = reverse ? jj_order(&R->f, keys[i], keys[j], JJ_OP_LT, 0)
							   : jj_order(&R->f, keys[j], keys[i], JJ_OP_LT, 0);
				size_t src = right_first ? j++ : i++;
				tv[o] = v[src];
				tk[o++] = keys[src];
			}
			while (i < mid) {
				tv[o] = v[i];
				tk[o++] = keys[i++];
			}
			while (j < hi) {
				tv[o] = v[j];
				tk[o++] = keys[j++];
			}
		}
		jj_memcpy(v, tv, n * sizeof *v);
		jj_memcpy(keys, tk, n * sizeof *keys);
	}
}

static struct jj_list *copy_items(struct jj_run *R, const struct jj_list *items)
{
	struct jj_list *l = jj_list_new(&R->ar, &R->f, items->n);
	if (items->n)
		jj_memcpy(l->v, items->v, items->n * sizeof *l->v);
	return l;
}

/* select/reject/selectattr/rejectattr: keep items whose (attribute's) test result is `want`. */
static struct jj_val select_items(struct jj_run *R, struct jj_val v, const struct jj_args *a, bool attr, bool want)
{
	if (!jj_truthy(v)) /* jinja2: `if value:` before anything, so None gives nothing */
		return jj_list_val(jj_list_new(&R->ar, &R->f, 0), JJ_SEQ_GEN);
	const struct jj_list *items = iter_items(R, v);
	uint32_t argi = 0;
	struct jj_val attrname = {0};
	if (attr) {
		if (a->n < 1)
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "Missing parameter for attribute name");
		attrname = a->pos[argi++];
	}
	int test = -1;
	const char *tname = NULL;
	if (argi < a->n) {
		struct jj_val name = need_str(R, a->pos[argi++], "test name");
		test = jj_test_lookup(name.s, name.len);
		tname = jj_strdup(&R->ar, &R->f, name.s, name.len);
		if (test < 0)
			jj_fail(&R->f, MF_JINJA_ERUNTIME, "TemplateRuntimeError", "No test named '%s'.", tname);
	}
	struct jj_args rest = {.n = a->n - argi, .pos = a->pos ? a->pos + argi : NULL, .nkw = a->nkw, .kwn = a->kwn, .kwl = a->kwl, .kw = a->kw};
	struct jj_list *out = jj_list_new(&R->ar, &R->f, items->n);
	out->n = 0;
	jj_charge(&R->f, items->n);
	for (size_t k = 0; k < items->n; k++) {
		struct jj_val x = attr ? attr_path(R, items->v[k], attrname, NULL) : items->v[k];
		bool r = test < 0 ? jj_truthy(x) : apply_test(R, test, tname, x, &rest);
		if (r == want)
			out->v[out->n++] = items->v[k];
	}
	return jj_list_val(out, JJ_SEQ_GEN);
}

/* Python's float(str): decimal literal with optional sign, underscores between digits, inf/nan. */
static bool parse_py_float(struct jj_val s, double *out)
{
	struct jj_val t = py_strip(s, NULL, true, true);
	char buf[128];
	size_t o = 0;
	if (t.len == 0 || t.len >= sizeof buf)
		return false;
	for (size_t i = 0; i < t.len; i++) {
		char c = t.s[i];
		if (c == '_') {
			if (i == 0 || i + 1 == t.len || !isdigit((unsigned char)t.s[i - 1]) || !isdigit((unsigned char)t.s[i + 1]))
				return false;
			continue;
		}
		if (!isalnum((unsigned char)c) && c != '.' && c != '+' && c != '-')
			return false;
		buf[o++] = c;
	}
	buf[o] = 0;
	const char *p = buf + (buf[0] == '+' || buf[0] == '-');
	if (strcasecmp(p, "inf") == 0 || strcasecmp(p, "infinity") == 0 || strcasecmp(p, "nan") == 0) {
		*out = strtod(buf, NULL);
		return true;
	}
	for (const char *q = p; *q; q++)
		if (!isdigit((unsigned char)*q) && *q != '.' && *q != 'e' && *q != 'E' && *q != '+' && *q != '-')
			return false;
	char *end;
	*out = strtod(buf, &end);
	return *end == 0 && end != buf;
}

/* Python's int(str, base) for base 10 (and 0/2/8/16 with prefixes). */
static bool parse_py_int(struct jj_val s, int base, int64_t *out)
{
	struct jj_val t = py_strip(s, NULL, true, true);
	char buf[128];
	size_t o = 0;
	if (t.len == 0 || t.len >= sizeof buf)
		return false;
	for (size_t i = 0; i < t.len; i++)
		if (t.s[i] != '_')
			buf[o++] = t.s[i];
		else if (i == 0 || i + 1 == t.len)
			return false;
	buf[o] = 0;
	const char *p = buf;
	bool neg = false;
	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	if ((base == 0 || base == 16) && p[0] == '0' && (p[1] | 0x20) == 'x') {
		p += 2;
		base = 16;
	} else if ((base == 0 || base == 8) && p[0] == '0' && (p[1] | 0x20) == 'o') {
		p += 2;
		base = 8;
	} else if ((base == 0 || base == 2) && p[0] == '0' && (p[1] | 0x20) == 'b') {
		p += 2;
		base = 2;
	} else if (base == 0) {
		base = 10;
	}
	if (!*p || base < 2 || base > 36)
		return false;
	uint64_t v = 0;
	for (; *p; p++) {
		int d = isdigit((unsigned char)*p) ? *p - '0' : isalpha((unsigned char)*p) ? (*p | 0x20) - 'a' + 10 : 99;
		if (d >= base || v > ((uint64_t)INT64_MAX - (uint64_t)d) / (uint64_t)base)
			return false;
		v = v * (uint64_t)base + (uint64_t)d;
	}
	*out = neg ? -(int64_t)v : (int64_t)v;
	return true;
}

/* jinja2's do_indent. */
static struct jj_val do_indent(struct jj_run *R, struct jj_val s, struct jj_val width, bool first, bool blank)
{
	if (s.t == JJ_UNDEF)
		fail_undef(R, s);
	if (s.t != JJ_STR)
		jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "unsupported operand type(s) for +=: '%s' and 'str'",
			jj_type_name(s));
	struct jj_val ind;
	if (width.t == JJ_STR) {
		ind = width;
	} else {
		int64_t w = need_int(R, width, NULL);
		if (w < 0)
			w = 0;
		if ((uint64_t)w > R->max_output)
			jj_fail(&R->f, MF_JINJA_ELIMIT, "LimitError", "indent too wide");
		char *sp = jj_alloc(&R->ar, &R->f, (size_t)w + 1);
		memset(sp, ' ', (size_t)w);
		ind = jj_str(sp, (size_t)w);
	}
	struct jj_val with_nl = concat_str(R, s.s, s.len, "\n", 1);
	struct jj_list *lines = py_splitlines(R, with_nl, false);
	struct ob_buf *b = tmpbuf(R, R->max_output);
	if (first)
		ob_buf_append(b, ind.s, ind.len);
	for (size_t k = 0; k < lines->n; k++) {
		if (k) {
			ob_buf_putc(b, '\n');
			if (blank || lines->v[k].len)
				ob_buf_append(b, ind.s, ind.len);
		}
		ob_buf_append(b, lines->v[k].s, lines->v[k].len);
	}
	buf_check(&R->f, b);
	struct jj_val v = jj_str(jj_strdup(&R->ar, &R->f, b->p ? b->p : "", b->len), b->len);
	ob_buf_free(b);
	return v;
}

static struct jj_val do_tojson(struct jj_run *R, struct jj_val v, const struct jj_args *a)
{
	static const char *const names[] = {"ensure_ascii", "indent", "separators", "sort_keys"};
	struct jj_val p[4];
	bool h[4];
	bind_args(R, "tojson", a, names, 4, p, h);
	struct jj_json_opts o = {.ensure_ascii = h[0] && jj_truthy(p[0]), .sort_keys = h[3] && jj_truthy(p[3])};
	if (h[1] && p[1].t != JJ_NONE) {
		o.has_indent = true;
		if (p[1].t == JJ_STR) {
			o.indent = p[1].s;
			o.indent_len = p[1].len;
		} else {
			int64_t w = need_int(R, p[1], NULL);
			if (w < 0)
				w = 0;
			if (w > 1000)
				jj_fail(&R->f, MF_JINJA_ELIMIT, "LimitError", "tojson indent above 1000");
			char *sp = jj_alloc(&R->ar, &R->f, (size_t)w + 1);
			memset(sp, ' ', (size_t)w);
			o.indent = sp;
			o.indent_len = (size_t)w;
		}
	}
	o.item_sep = o.has_indent ? "," : ", ";
	o.key_sep = ": ";
	if (h[2] && p[2].t != JJ_NONE) {
		const struct jj_list *seps = iter_items(R, p[2]);
		if (seps->n != 2)
			jj_fail(&R->f, MF_JINJA_EVALUE, "ValueError", "too many values to unpack (expected 2)");
		o.item_sep = need_str(R, seps->v[0], "separator").s;
		o.item_sep_len = seps->v[0].len;
		o.key_sep = need_str(R, seps->v[1], "separator").s;
		o.key_sep_len = seps->v[1].len;
	} else {
		o.item_sep_len = strlen(o.item_sep);
		o.key_sep_len = 2;
	}
	struct ob_buf *b = tmpbuf(R, R->max_output);
	jj_write_json(&R->ar, &R->f, b, v, &o, 0);
	struct jj_val s = jj_str(jj_strdup(&R->ar, &R->f, b->p ? b->p : "", b->len), b->len);
	ob_buf_free(b);
	return s;
}

static struct jj_val apply_filter(struct jj_run *R, int id, const char *name, struct jj_val v, const struct jj_args *a)
{
	struct jj_val p[4];
	bool h[4];
	switch (id) {
	case JJ_FI_ABS:
		if (v.t == JJ_FLOAT)
			return jj_float(fabs(v.f));
		if (is_intlike(v)) {
			if (int_of(v) == INT64_MIN)
				jj_fail(&R->f, MF_JINJA_ELIMIT, "LimitError", "integer overflow");
			return jj_int(int_of(v) < 0 ? -int_of(v) : int_of(v));
		}
		if (v.t == JJ_UNDEF)
			fail_undef(R, v);
		jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "bad operand type for abs(): '%s'", jj_type_name(v));
	case JJ_FI_ATTR: {
		if (a->n != 1)
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "attr() takes 1 argument");
		struct jj_val an = need_str(R, a->pos[0], "attribute name");
		int m = jj_meth_lookup(an.s, an.len);
		if ((m >= 0 && meth_applies(v, m)) || v.t == JJ_NS || v.t == JJ_LOOP || (an.len && an.s[0] == '_'))
			return get_attr(R, v, an.s, an.len, m);
		if (v.t == JJ_UNDEF)
			fail_undef(R, v);
		return undef_attr(v, an.s, an.len);
	}
	case JJ_FI_BATCH:
	case JJ_FI_SLICE: {
		static const char *const names[] = {"linecount", "fill_with"};
		bind_args(R, name, a, names, 2, p, h);
		if (!h[0])
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "%s() missing 1 required positional argument", name);
		int64_t n = need_int(R, p[0], NULL);
		const struct jj_list *items = iter_items(R, v);
		if (n <= 0)
			jj_fail(&R->f, MF_JINJA_EVALUE, "ValueError", "%s size must be positive", name);
		size_t per, groups;
		if (id == JJ_FI_BATCH) {
			per = (size_t)n;
			groups = (items->n + per - 1) / per;
		} else {
			groups = (size_t)n;
			per = items->n / groups + (items->n % groups != 0);
		}
		struct jj_list *out = jj_list_new(&R->ar, &R->f, groups);
		size_t pos = 0;
		for (size_t g = 0; g < groups; g++) {
			size_t take = per;
			if (id == JJ_FI_SLICE) {
				size_t base = items->n / groups, extra = items->n % groups;
				take = base + (g < extra);
			}
			if (take > items->n - pos)
				take = items->n - pos;
			bool fill = h[1] && (id == JJ_FI_BATCH ? take < per : (items->n % groups && g >= items->n % groups));
			struct jj_list *grp = jj_list_new(&R->ar, &R->f, take + fill);
			jj_memcpy(grp->v, items->v + pos, take * sizeof *grp->v);
			if (fill)
				grp->v[take] = p[1];
			if (id == JJ_FI_BATCH && h[1])
				while (grp->n < per) { /* batch pads the last group to full size */
					struct jj_list *g2 = jj_list_new(&R->ar, &R->f, per);
					jj_memcpy(g2->v, grp->v, grp->n * sizeof *g2->v);
					for (size_t k = grp->n; k < per; k++)
						g2->v[k] = p[1];
					grp = g2;
				}
			pos += take;
			out->v[g] = jj_list_val(grp, JJ_SEQ_LIST);
		}
		return jj_list_val(out, JJ_SEQ_GEN);
	}
	case JJ_FI_CAPITALIZE: return keep_markup(str_of(R, v), py_title(R, str_of(R, v), true, false));
	case JJ_FI_CENTER: {
		static const char *const names[] = {"width"};
		bind_args(R, name, a, names, 1, p, h);
		return keep_markup(str_of(R, v), pad_str(R, str_of(R, v), h[0] ? need_int(R, p[0], NULL) : 80, jj_str(" ", 1), 0));
	}
	case JJ_FI_COUNT:
	case JJ_FI_LENGTH: return jj_int((int64_t)length_of(R, v));
	case JJ_FI_D:
	case JJ_FI_DEFAULT: {
		static const char *const names[] = {"default_value", "boolean"};
		bind_args(R, name, a, names, 2, p, h);
		if (v.t == JJ_UNDEF || (h[1] && jj_truthy(p[1]) && !jj_truthy(v)))
			return h[0] ? p[0] : jj_str("", 0);
		return v;
	}
	case JJ_FI_DICTSORT: {
		static const char *const names[] = {"case_sensitive", "by", "reverse"};
		bind_args(R, name, a, names, 3, p, h);
		if (v.t != JJ_DICT) {
			if (v.t == JJ_UNDEF)
				fail_undef(R, v);
			jj_fail(&R->f, MF_JINJA_ERUNTIME, "AttributeError", "'%s' object has no attribute 'items'",
				jj_type_name(v));
		}
		int pos = 0;
		if (h[1]) {
			struct jj_val by = need_str(R, p[1], "by");
			if (by.len == 5 && memcmp(by.s, "value", 5) == 0)
				pos = 1;
			else if (!(by.len == 3 && memcmp(by.s, "key", 3) == 0))
				jj_fail(&R->f, MF_JINJA_ERUNTIME, "FilterArgumentError",
					"You can only sort by either \"key\" or \"value\"");
		}
		size_t n = v.d->n;
		struct jj_list *l = jj_list_new(&R->ar, &R->f, n);
		struct jj_val *keys = jj_alloc(&R->ar, &R->f, (n + 1) * sizeof *keys);
		for (size_t k = 0; k < n; k++) {
			l->v[k] = tuple2(R, v.d->kv[k].k, v.d->kv[k].v);
			keys[k] = pos ? v.d->kv[k].v : v.d->kv[k].k;
			if (!(h[0] && jj_truthy(p[0])))
				keys[k] = lower_if_str(R, keys[k]);
		}
		sort_vals(R, l->v, keys, n, h[2] && jj_truthy(p[2]));
		return jj_list_val(l, JJ_SEQ_LIST);
	}
	case JJ_FI_E:
	case JJ_FI_ESCAPE: return markup_escape(R, str_of(R, v));
	case JJ_FI_FORCEESCAPE: {
		struct jj_val plain = str_of(R, v);
		plain.sub = 0;
		return markup_escape(R, plain);
	}
	case JJ_FI_FIRST:
	case JJ_FI_LAST: {
		if (id == JJ_FI_LAST && v.t == JJ_LIST && (v.sub == JJ_SEQ_GEN || v.sub == JJ_SEQ_REVERSED) &&
		    v.sub == JJ_SEQ_GEN)
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "'%s' object is not reversible", jj_type_name(v));
		if (id == JJ_FI_LAST && v.t != JJ_LIST && v.t != JJ_STR && v.t != JJ_DICT && v.t != JJ_UNDEF)
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "'%s' object is not reversible", jj_type_name(v));
		const struct jj_list *items = iter_items(R, v);
		if (items->n == 0)
			return undef_hint(R, JJ_UNDEF_HINT, id == JJ_FI_FIRST ? "No first item, sequence was empty."
									  : "No last item, sequence was empty.");
		return items->v[id == JJ_FI_FIRST ? 0 : items->n - 1];
	}
	case JJ_FI_FLOAT: {
		static const char *const names[] = {"default"};
		bind_args(R, name, a, names, 1, p, h);
		struct jj_val dflt = h[0] ? p[0] : jj_float(0.0);
		if (v.t == JJ_FLOAT)
			return v;
		if (is_intlike(v))
			return jj_float((double)int_of(v));
		double d;
		if (v.t == JJ_STR && parse_py_float(v, &d))
			return jj_float(d);
		return dflt;
	}
	case JJ_FI_INT: {
		static const char *const names[] = {"default", "base"};
		bind_args(R, name, a, names, 2, p, h);
		struct jj_val dflt = h[0] ? p[0] : jj_int(0);
		int base = h[1] ? (int)need_int(R, p[1], NULL) : 10;
		if (is_intlike(v))
			return jj_int(int_of(v));
		if (v.t == JJ_FLOAT) {
			if (!isfinite(v.f) || fabs(v.f) >= 9.2e18)
				return dflt;
			return jj_int((int64_t)v.f);
		}
		if (v.t == JJ_STR) {
			int64_t i;
			double d;
			if (parse_py_int(v, base, &i))
				return jj_int(i);
			if (parse_py_float(v, &d) && isfinite(d) && fabs(d) < 9.2e18)
				return jj_int((int64_t)d);
		}
		return dflt;
	}
	case JJ_FI_ITEMS: {
		if (v.t == JJ_UNDEF)
			return jj_list_val(jj_list_new(&R->ar, &R->f, 0), JJ_SEQ_GEN);
		if (v.t != JJ_DICT)
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "Can only get item pairs from a mapping.");
		struct jj_list *l = jj_list_new(&R->ar, &R->f, v.d->n);
		for (size_t k = 0; k < v.d->n; k++)
			l->v[k] = tuple2(R, v.d->kv[k].k, v.d->kv[k].v);
		return jj_list_val(l, JJ_SEQ_GEN);
	}
	case JJ_FI_JOIN: {
		static const char *const names[] = {"d", "attribute"};
		bind_args(R, name, a, names, 2, p, h);
		struct jj_val sep = h[0] ? str_of(R, p[0]) : jj_str("", 0);
		const struct jj_list *items = iter_items(R, v);
		if (h[1] && p[1].t != JJ_NONE) {
			struct jj_list *m = copy_items(R, items);
			for (size_t k = 0; k < m->n; k++)
				m->v[k] = attr_path(R, m->v[k], p[1], NULL);
			items = m;
		}
		return str_join(R, sep, items, true);
	}
	case JJ_FI_LIST: return jj_list_val(copy_items(R, iter_items(R, v)), JJ_SEQ_LIST);
	case JJ_FI_LOWER: return keep_markup(str_of(R, v), map_case(R, str_of(R, v), CASE_LOWER));
	case JJ_FI_UPPER: return keep_markup(str_of(R, v), map_case(R, str_of(R, v), CASE_UPPER));
	case JJ_FI_MAP: {
		struct jj_list *out = jj_list_new(&R->ar, &R->f, 0);
		if (!jj_truthy(v))
			return jj_list_val(out, JJ_SEQ_GEN);
		const struct jj_list *items = iter_items(R, v);
		out = copy_items(R, items);
		jj_charge(&R->f, out->n);
		bool by_attr = a->n == 0;
		if (by_attr) {
			struct jj_val attr = {0}, dflt = {0};
			bool has_attr = false, has_dflt = false;
			for (uint32_t k = 0; k < a->nkw; k++) {
				if (a->kwl[k] == 9 && memcmp(a->kwn[k], "attribute", 9) == 0) {
					attr = a->kw[k];
					has_attr = true;
				} else if (a->kwl[k] == 7 && memcmp(a->kwn[k], "default", 7) == 0) {
					dflt = a->kw[k];
					has_dflt = true;
				} else {
					jj_fail(&R->f, MF_JINJA_ERUNTIME, "FilterArgumentError", "Unexpected keyword argument '%s'",
						a->kwn[k]);
				}
			}
			if (!has_attr)
				jj_fail(&R->f, MF_JINJA_ERUNTIME, "FilterArgumentError", "map requires a filter argument");
			for (size_t k = 0; k < out->n; k++)
				out->v[k] = attr_path(R, out->v[k], attr, has_dflt && dflt.t != JJ_NONE ? &dflt : NULL);
			return jj_list_val(out, JJ_SEQ_GEN);
		}
		struct jj_val fname = need_str(R, a->pos[0], "filter name");
		int fid = jj_filter_lookup(fname.s, fname.len);
		const char *fn = jj_strdup(&R->ar, &R->f, fname.s, fname.len);
		if (fid < 0)
			jj_fail(&R->f, MF_JINJA_ERUNTIME, "TemplateRuntimeError", "No filter named '%s'.", fn);
		struct jj_args rest = {.n = a->n - 1, .pos = a->pos + 1 /* a->n >= 1 here */, .nkw = a->nkw, .kwn = a->kwn, .kwl = a->kwl, .kw = a->kw};
		for (size_t k = 0; k < out->n; k++)
			out->v[k] = apply_filter(R, fid, fn, out->v[k], &rest);
		return jj_list_val(out, JJ_SEQ_GEN);
	}
	case JJ_FI_MAX:
	case JJ_FI_MIN: {
		static const char *const names[] = {"case_sensitive", "attribute"};
		bind_args(R, name, a, names, 2, p, h);
		const struct jj_list *items = iter_items(R, v);
		if (items->n == 0)
			return undef_hint(R, JJ_UNDEF_HINT, "No aggregated item, sequence was empty.");
		size_t best = 0;
		struct jj_val bk = {0};
		for (size_t k = 0; k < items->n; k++) {
			struct jj_val key = h[1] && p[1].t != JJ_NONE ? attr_path(R, items->v[k], p[1], NULL) : items->v[k];
			if (!(h[0] && jj_truthy(p[0])))
				key = lower_if_str(R, key);
			if (k == 0 || jj_order(&R->f, key, bk, id == JJ_FI_MAX ? JJ_OP_GT : JJ_OP_LT, 0)) {
				best = k;
				bk = key;
			}
		}
		return items->v[best];
	}
	case JJ_FI_PPRINT: {
		struct ob_buf *b = tmpbuf(R, R->max_output);
		write_repr(&R->f, b, v, 0);
		struct jj_val s = jj_str(jj_strdup(&R->ar, &R->f, b->p ? b->p : "", b->len), b->len);
		ob_buf_free(b);
		return s;
	}
	case JJ_FI_REJECT: return select_items(R, v, a, false, false);
	case JJ_FI_SELECT: return select_items(R, v, a, false, true);
	case JJ_FI_REJECTATTR: return select_items(R, v, a, true, false);
	case JJ_FI_SELECTATTR: return select_items(R, v, a, true, true);
	case JJ_FI_REPLACE: {
		static const char *const names[] = {"old", "new", "count"};
		bind_args(R, name, a, names, 3, p, h);
		if (!h[0] || !h[1])
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "do_replace() missing required arguments 'old' and 'new'");
		int64_t count = h[2] && p[2].t != JJ_NONE ? need_int(R, p[2], NULL) : -1;
		return py_replace(R, str_of(R, v), str_of(R, p[0]), str_of(R, p[1]), count);
	}
	case JJ_FI_REVERSE: {
		if (v.t == JJ_STR) {
			struct jj_val m1 = jj_int(-1);
			return keep_markup(v, do_slice(R, v, NULL, NULL, &m1));
		}
		const struct jj_list *items = iter_items(R, v);
		struct jj_list *l = jj_list_new(&R->ar, &R->f, items->n);
		for (size_t k = 0; k < items->n; k++)
			l->v[k] = items->v[items->n - 1 - k];
		return jj_list_val(l, v.t == JJ_LIST && v.sub == JJ_SEQ_GEN ? JJ_SEQ_LIST : JJ_SEQ_REVERSED);
	}
	case JJ_FI_ROUND: {
		static const char *const names[] = {"precision", "method"};
		bind_args(R, name, a, names, 2, p, h);
		int64_t prec = h[0] ? need_int(R, p[0], NULL) : 0;
		int method = 0;
		if (h[1]) {
			struct jj_val m = need_str(R, p[1], "method");
			if (m.len == 4 && memcmp(m.s, "ceil", 4) == 0)
				method = 1;
			else if (m.len == 5 && memcmp(m.s, "floor", 5) == 0)
				method = 2;
			else if (!(m.len == 6 && memcmp(m.s, "common", 6) == 0))
				jj_fail(&R->f, MF_JINJA_ERUNTIME, "FilterArgumentError", "method must be common, ceil or floor");
		}
		if (v.t == JJ_UNDEF)
			fail_undef(R, v);
		if (!is_number(v))
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "type %s doesn't define __round__ method", jj_type_name(v));
		if (prec > 300)
			prec = 300;
		if (prec < -300)
			prec = -300;
		if (method) {
			double scale = pow(10.0, (double)prec), x = float_of(v) * scale;
			return jj_float((method == 1 ? ceil(x) : floor(x)) / scale);
		}
		if (is_intlike(v) && prec >= 0)
			return jj_int(int_of(v));
		double x = float_of(v);
		if (!isfinite(x))
			return jj_float(x);
		if (prec >= 0) {
			char buf[400];
			snprintf(buf, sizeof buf, "%.*f", (int)prec, x);
			double r = strtod(buf, NULL);
			return is_intlike(v) ? jj_int((int64_t)r) : jj_float(r);
		}
		double scale = pow(10.0, (double)-prec), r = nearbyint(x / scale) * scale;
		return is_intlike(v) ? jj_int((int64_t)r) : jj_float(r);
	}
	case JJ_FI_SAFE: {
		struct jj_val m = str_of(R, v);
		m.sub = JJ_STR_MARKUP;
		return m;
	}
	case JJ_FI_STRING: return str_of(R, v);
	case JJ_FI_SORT: {
		static const char *const names[] = {"reverse", "case_sensitive", "attribute"};
		bind_args(R, name, a, names, 3, p, h);
		struct jj_list *l = copy_items(R, iter_items(R, v));
		struct jj_val *keys = jj_alloc(&R->ar, &R->f, (l->n + 1) * sizeof *keys);
		for (size_t k = 0; k < l->n; k++) {
			keys[k] = h[2] && p[2].t != JJ_NONE ? attr_path(R, l->v[k], p[2], NULL) : l->v[k];
			if (!(h[1] && jj_truthy(p[1])))
				keys[k] = lower_if_str(R, keys[k]);
		}
		sort_vals(R, l->v, keys, l->n, h[0] && jj_truthy(p[0]));
		return jj_list_val(l, JJ_SEQ_LIST);
	}
	case JJ_FI_SUM: {
		static const char *const names[] = {"attribute", "start"};
		bind_args(R, name, a, names, 2, p, h);
		struct jj_val acc = h[1] ? p[1] : jj_int(0);
		const struct jj_list *items = iter_items(R, v);
		for (size_t k = 0; k < items->n; k++)
			acc = binop(R, JJ_OP_ADD, acc, h[0] && p[0].t != JJ_NONE ? attr_path(R, items->v[k], p[0], NULL)
									: items->v[k]);
		return acc;
	}
	case JJ_FI_TITLE: return keep_markup(str_of(R, v), py_title(R, str_of(R, v), false, true));
	case JJ_FI_TOJSON: return do_tojson(R, v, a);
	case JJ_FI_TRIM: {
		static const char *const names[] = {"chars"};
		bind_args(R, name, a, names, 1, p, h);
		struct jj_args one = {.n = h[0] ? 1 : 0, .pos = p};
		return keep_markup(str_of(R, v), py_strip(str_of(R, v), opt_chars(R, &one, "strip"), true, true));
	}
	case JJ_FI_UNIQUE: {
		static const char *const names[] = {"case_sensitive", "attribute"};
		bind_args(R, name, a, names, 2, p, h);
		const struct jj_list *items = iter_items(R, v);
		struct jj_list *out = jj_list_new(&R->ar, &R->f, items->n);
		struct jj_dict *seen = jj_dict_new(&R->ar, &R->f, 0);
		out->n = 0;
		for (size_t k = 0; k < items->n; k++) {
			struct jj_val key = h[1] && p[1].t != JJ_NONE ? attr_path(R, items->v[k], p[1], NULL) : items->v[k];
			if (!(h[0] && jj_truthy(p[0])))
				key = lower_if_str(R, key);
			if (jj_dict_get(&R->f, seen, key))
				continue;
			jj_dict_set(&R->ar, &R->f, seen, key, jj_none());
			out->v[out->n++] = items->v[k];
		}
		return jj_list_val(out, JJ_SEQ_GEN);
	}
	case JJ_FI_WORDCOUNT: {
		struct jj_val s = str_of(R, v);
		int64_t words = 0;
		bool in = false;
		for (size_t i = 0; i < s.len;) {
			size_t k;
			uint32_t c = jj_cp(s.s + i, s.len - i, &k);
			bool w = c == '_' || ob_rune_is_letter(c) || ob_rune_is_digit(c);
			if (w && !in)
				words++;
			in = w;
			i += k;
		}
		return jj_int(words);
	}
	case JJ_FI_INDENT: {
		static const char *const names[] = {"width", "first", "blank"};
		bind_args(R, name, a, names, 3, p, h);
		return keep_markup(v, do_indent(R, v, h[0] ? p[0] : jj_int(4), h[1] && jj_truthy(p[1]), h[2] && jj_truthy(p[2])));
	}
	case JJ_FI_FORMAT:
		if (a->n && a->nkw)
			jj_fail(&R->f, MF_JINJA_ERUNTIME, "FilterArgumentError",
				"can't handle positional and keyword arguments at the same time");
		return percent_format(R, str_of(R, v), a->pos, a->n);
	default: unsupported(R, "filter", name);
	}
}

/* ------------------------------------------------------------------------------------------ tests */

static bool apply_test(struct jj_run *R, int id, const char *name, struct jj_val v, const struct jj_args *a)
{
	struct jj_val arg = a->n ? a->pos[0] : a->nkw ? a->kw[0] : jj_none();
	bool has_arg = a->n + a->nkw > 0;
	switch (id) {
	case JJ_TE_DEFINED: return v.t != JJ_UNDEF;
	case JJ_TE_UNDEFINED: return v.t == JJ_UNDEF;
	case JJ_TE_NONE: return v.t == JJ_NONE;
	case JJ_TE_BOOLEAN: return v.t == JJ_BOOL;
	case JJ_TE_FALSE: return v.t == JJ_BOOL && !v.b;
	case JJ_TE_TRUE: return v.t == JJ_BOOL && v.b;
	case JJ_TE_INTEGER: return v.t == JJ_INT;
	case JJ_TE_FLOAT: return v.t == JJ_FLOAT;
	case JJ_TE_NUMBER: return is_number(v);
	case JJ_TE_STRING: return v.t == JJ_STR;
	case JJ_TE_MAPPING: return v.t == JJ_DICT;
	case JJ_TE_SEQUENCE:
		return v.t == JJ_STR || v.t == JJ_DICT || v.t == JJ_UNDEF ||
		       (v.t == JJ_LIST && (v.sub == JJ_SEQ_LIST || v.sub == JJ_SEQ_TUPLE));
	case JJ_TE_ITERABLE: return v.t == JJ_STR || v.t == JJ_LIST || v.t == JJ_DICT || v.t == JJ_UNDEF;
	case JJ_TE_CALLABLE: return v.t == JJ_MACRO || v.t == JJ_FUNC || v.t == JJ_METHOD;
	case JJ_TE_ESCAPED: return v.t == JJ_STR && v.sub == JJ_STR_MARKUP;
	case JJ_TE_SAMEAS:
		if (v.t != arg.t)
			return false;
		if (v.t == JJ_NONE || v.t == JJ_UNDEF)
			return true;
		if (v.t == JJ_BOOL)
			return v.b == arg.b;
		if (v.t == JJ_INT)
			return v.i == arg.i && v.i >= -5 && v.i <= 256; /* CPython's small-int cache */
		if (v.t == JJ_STR)
			return v.s == arg.s && v.len == arg.len;
		return v.l == arg.l;
	case JJ_TE_EQ:
	case JJ_TE_NE:
	case JJ_TE_LT:
	case JJ_TE_LE:
	case JJ_TE_GT:
	case JJ_TE_GE:
	case JJ_TE_IN:
		if (!has_arg)
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "test '%s' takes one argument", name);
		{
			static const int ops[] = {[JJ_TE_EQ] = JJ_OP_EQ, [JJ_TE_NE] = JJ_OP_NE, [JJ_TE_LT] = JJ_OP_LT,
						  [JJ_TE_LE] = JJ_OP_LE, [JJ_TE_GT] = JJ_OP_GT, [JJ_TE_GE] = JJ_OP_GE,
						  [JJ_TE_IN] = JJ_OP_IN};
			return compare(R, ops[id], v, arg);
		}
	case JJ_TE_ODD:
	case JJ_TE_EVEN:
	case JJ_TE_DIVISIBLEBY: {
		if (v.t == JJ_UNDEF)
			fail_undef(R, v);
		struct jj_val m = binop(R, JJ_OP_MOD, v, id == JJ_TE_DIVISIBLEBY ? arg : jj_int(2));
		return jj_eq(&R->f, m, jj_int(id == JJ_TE_ODD ? 1 : 0));
	}
	case JJ_TE_LOWER: return str_case_is(str_of(R, v), false);
	case JJ_TE_UPPER: return str_case_is(str_of(R, v), true);
	case JJ_TE_FILTER:
	case JJ_TE_TEST: {
		if (v.t != JJ_STR)
			return false;
		return id == JJ_TE_FILTER ? jj_filter_lookup(v.s, v.len) >= 0 : jj_test_lookup(v.s, v.len) >= 0;
	}
	default: unsupported(R, "test", name);
	}
}
