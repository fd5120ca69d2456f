/* runner/grammar/json_schema_regex.c — a JSON schema `pattern` compiled into GBNF: literals, classes, `.`,
 * \d \w \s and their negations, groups ((?:) too), alternation and the quantifiers * + ? {m} {m,} {m,n}
 * (lazy ones read as greedy: with whole-string matching the language is the same). Lookaround, backreferences,
 * word boundaries, Unicode property classes, anchors in the middle and possessive quantifiers are refused,
 * never approximated. The grammar matches the JSON text of the string, so characters are spelt as JSON spells
 * them (a quote as \", a newline as \n).
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "runner/grammar/json_schema_regex.h"

#define CP_MAX 0x10FFFFu

struct cp_range {
	uint32_t lo, hi;
};

struct cp_set {
	struct cp_range r[RN_JS_REGEX_MAX_RANGES];
	size_t n;
};

struct rx {
	const unsigned char *s;
	size_t n, i;
	char *msg;
	size_t msgsz;
	bool failed;
	bool uses_char;
};

static bool rx_fail(struct rx *x, const char *what)
{
	if (!x->failed)
		snprintf(x->msg, x->msgsz, "%s (offset %zu)", what, x->i);
	x->failed = true;
	return false;
}

void rn_js_gbnf_literal(struct ob_buf *out, const char *s, size_t n)
{
	ob_buf_putc(out, '"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\') {
			ob_buf_putc(out, '\\');
			ob_buf_putc(out, (char)c);
		} else if (c == '\n') {
			ob_buf_puts(out, "\\n");
		} else if (c == '\r') {
			ob_buf_puts(out, "\\r");
		} else if (c == '\t') {
			ob_buf_puts(out, "\\t");
		} else if (c < 0x20 || c == 0x7F) {
			ob_buf_printf(out, "\\x%02X", c);
		} else {
			ob_buf_putc(out, (char)c);
		}
	}
	ob_buf_putc(out, '"');
}

/* ------------------------------------------------------------------------------------------ code point sets */

static bool set_add(struct rx *x, struct cp_set *s, uint32_t lo, uint32_t hi)
{
	if (s->n == RN_JS_REGEX_MAX_RANGES)
		return rx_fail(x, "character class too large");
	s->r[s->n].lo = lo;
	s->r[s->n].hi = hi;
	s->n++;
	return true;
}

static int range_cmp(const void *a, const void *b)
{
	const struct cp_range *p = a, *q = b;
	return p->lo < q->lo ? -1 : p->lo > q->lo;
}

/* sorts and merges overlapping or adjacent ranges */
static void set_normalise(struct cp_set *s)
{
	if (s->n == 0)
		return;
	qsort(s->r, s->n, sizeof s->r[0], range_cmp);
	size_t k = 0;
	for (size_t i = 1; i < s->n; i++) {
		if (s->r[i].lo <= s->r[k].hi + 1) {
			if (s->r[i].hi > s->r[k].hi)
				s->r[k].hi = s->r[i].hi;
		} else {
			s->r[++k] = s->r[i];
		}
	}
	s->n = k + 1;
}

static void set_complement(struct cp_set *s)
{
	set_normalise(s);
	struct cp_set c;
	c.n = 0;
	uint32_t next = 0;
	for (size_t i = 0; i < s->n; i++) {
		if (s->r[i].lo > next)
			c.r[c.n++] = (struct cp_range){next, s->r[i].lo - 1};
		next = s->r[i].hi + 1;
	}
	if (next <= CP_MAX)
		c.r[c.n++] = (struct cp_range){next, CP_MAX};
	*s = c; /* a complement of n sorted disjoint ranges has at most n + 1 <= the room */
}

static bool set_class_escape(struct rx *x, struct cp_set *s, unsigned char e)
{
	struct cp_set t;
	t.n = 0;
	bool neg = e == 'D' || e == 'W' || e == 'S';
	switch (e) {
	case 'd': case 'D':
		t.r[t.n++] = (struct cp_range){'0', '9'};
		break;
	case 'w': case 'W':
		t.r[t.n++] = (struct cp_range){'0', '9'};
		t.r[t.n++] = (struct cp_range){'A', 'Z'};
		t.r[t.n++] = (struct cp_range){'_', '_'};
		t.r[t.n++] = (struct cp_range){'a', 'z'};
		break;
	default: /* s, S: ECMAScript's white space and line terminators */
		t.r[t.n++] = (struct cp_range){0x09, 0x0D};
		t.r[t.n++] = (struct cp_range){' ', ' '};
		t.r[t.n++] = (struct cp_range){0xA0, 0xA0};
		t.r[t.n++] = (struct cp_range){0x1680, 0x1680};
		t.r[t.n++] = (struct cp_range){0x2000, 0x200A};
		t.r[t.n++] = (struct cp_range){0x2028, 0x2029};
		t.r[t.n++] = (struct cp_range){0x202F, 0x202F};
		t.r[t.n++] = (struct cp_range){0x205F, 0x205F};
		t.r[t.n++] = (struct cp_range){0x3000, 0x3000};
		t.r[t.n++] = (struct cp_range){0xFEFF, 0xFEFF};
		break;
	}
	if (neg)
		set_complement(&t);
	for (size_t i = 0; i < t.n; i++)
		if (!set_add(x, s, t.r[i].lo, t.r[i].hi))
			return false;
	return true;
}

void rn_js_gbnf_class_char(struct ob_buf *out, uint32_t c)
{
	if ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'))
		ob_buf_putc(out, (char)c);
	else if (c < 0x80)
		ob_buf_printf(out, "\\x%02X", (unsigned)c);
	else if (c <= 0xFFFF)
		ob_buf_printf(out, "\\u%04X", (unsigned)c);
	else
		ob_buf_printf(out, "\\U%08X", (unsigned)c);
}

/* Appends the GBNF for one JSON-text character from the set: a class of the characters JSON holds raw and
 * the escapes of quote, backslash and \b \f \n \r \t. Returns false when none is left. */
static bool set_emit(struct ob_buf *out, struct cp_set *s)
{
	static const struct {
		uint32_t cp;
		const char *gbnf;
	} esc[] = {{'"', "\"\\\\\\\"\""}, {'\\', "\"\\\\\\\\\""}, {0x08, "\"\\\\b\""}, {0x0C, "\"\\\\f\""},
		   {0x0A, "\"\\\\n\""},   {0x0D, "\"\\\\r\""},     {0x09, "\"\\\\t\""}};
	static const struct cp_range raw[] = {{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0x7E}, {0x80, 0xD7FF}, {0xE000, CP_MAX}};
	set_normalise(s);
	size_t parts = 0, mark = out->len;
	bool cls = false;
	ob_buf_putc(out, '(');
	for (size_t k = 0; k < sizeof raw / sizeof raw[0]; k++) {
		for (size_t i = 0; i < s->n; i++) {
			uint32_t lo = s->r[i].lo > raw[k].lo ? s->r[i].lo : raw[k].lo;
			uint32_t hi = s->r[i].hi < raw[k].hi ? s->r[i].hi : raw[k].hi;
			if (lo > hi)
				continue;
			if (!cls) {
				ob_buf_putc(out, '[');
				cls = true;
				parts++;
			}
			rn_js_gbnf_class_char(out, lo);
			if (hi > lo) {
				ob_buf_putc(out, '-');
				rn_js_gbnf_class_char(out, hi);
			}
		}
	}
	if (cls)
		ob_buf_putc(out, ']');
	for (size_t k = 0; k < sizeof esc / sizeof esc[0]; k++) {
		for (size_t i = 0; i < s->n; i++) {
			if (esc[k].cp >= s->r[i].lo && esc[k].cp <= s->r[i].hi) {
				ob_buf_puts(out, parts ? " | " : "");
				ob_buf_puts(out, esc[k].gbnf);
				parts++;
				break;
			}
		}
	}
	if (parts == 0) {
		out->len = mark;
		if (out->p)
			out->p[mark] = 0;
		return false;
	}
	ob_buf_putc(out, ')');
	if (parts == 1) { /* drop the parentheses around a lone part */
		memmove(out->p + mark, out->p + mark + 1, out->len - mark - 2);
		out->len -= 2;
		out->p[out->len] = 0;
	}
	return true;
}

/* --------------------------------------------------------------------------------------------- parsing */

static bool rx_hex(struct rx *x, size_t digits, uint32_t *cp)
{
	uint32_t v = 0;
	for (size_t k = 0; k < digits; k++) {
		if (x->i >= x->n)
			return rx_fail(x, "truncated hex escape");
		unsigned char c = x->s[x->i++];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (d < 0)
			return rx_fail(x, "invalid hex escape");
		v = v * 16 + (uint32_t)d;
	}
	*cp = v;
	return true;
}

/* an escape after the backslash (x->i at the letter); a single character in *cp, or a class added to set
 * (then *cp is UINT32_MAX) */
static bool rx_escape(struct rx *x, struct cp_set *set, bool in_class, uint32_t *cp)
{
	if (x->i >= x->n)
		return rx_fail(x, "pattern ends with a backslash");
	unsigned char e = x->s[x->i++];
	*cp = UINT32_MAX;
	switch (e) {
	case 'd': case 'D': case 'w': case 'W': case 's': case 'S':
		return set_class_escape(x, set, e);
	case 't': *cp = '\t'; return true;
	case 'n': *cp = '\n'; return true;
	case 'r': *cp = '\r'; return true;
	case 'f': *cp = '\f'; return true;
	case 'v': *cp = '\v'; return true;
	case '0': *cp = 0; return true;
	case 'x': return rx_hex(x, 2, cp);
	case 'u':
		if (x->i < x->n && x->s[x->i] == '{')
			return rx_fail(x, "unsupported regex escape '\\u{'");
		return rx_hex(x, 4, cp);
	case 'b':
		if (in_class) {
			*cp = 0x08;
			return true;
		}
		x->i--;
		return rx_fail(x, "unsupported regex word boundary '\\b'");
	default:
		break;
	}
	if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '1' && e <= '9')) {
		x->i--;
		char what[64];
		snprintf(what, sizeof what, "unsupported regex escape '\\%c'", e);
		return rx_fail(x, what);
	}
	if (e >= 0x80) { /* an escaped non-ASCII character stands for itself */
		size_t sz;
		*cp = ob_utf8_decode(x->s + x->i - 1, x->n - x->i + 1, &sz);
		x->i += sz - 1;
		return true;
	}
	*cp = e;
	return true;
}

static uint32_t rx_char(struct rx *x)
{
	size_t sz;
	uint32_t cp = ob_utf8_decode(x->s + x->i, x->n - x->i, &sz);
	x->i += sz;
	return cp;
}

/* [...] with x->i after the '[' */
static bool rx_class(struct rx *x, struct cp_set *set)
{
	bool neg = false;
	set->n = 0;
	if (x->i < x->n && x->s[x->i] == '^') {
		neg = true;
		x->i++;
	}
	bool first = true;
	for (;;) {
		if (x->i >= x->n)
			return rx_fail(x, "unbalanced '[' in regex");
		if (x->s[x->i] == ']' && !first)
			break;
		first = false;
		uint32_t lo;
		if (x->s[x->i] == '\\') {
			x->i++;
			if (!rx_escape(x, set, true, &lo))
				return false;
			if (lo == UINT32_MAX)
				continue; /* \d and friends */
		} else {
			lo = rx_char(x);
		}
		uint32_t hi = lo;
		if (x->i + 1 < x->n && x->s[x->i] == '-' && x->s[x->i + 1] != ']') {
			x->i++;
			if (x->s[x->i] == '\\') {
				x->i++;
				if (!rx_escape(x, set, true, &hi))
					return false;
				if (hi == UINT32_MAX)
					return rx_fail(x, "a class escape as a range end in regex");
			} else {
				hi = rx_char(x);
			}
			if (hi < lo)
				return rx_fail(x, "a character range out of order in regex");
		}
		if (!set_add(x, set, lo, hi))
			return false;
	}
	x->i++; /* ']' */
	if (neg)
		set_complement(set);
	return true;
}

static bool rx_alt(struct rx *x, struct ob_buf *out, int depth, bool *nullable);

/* one atom other than a group: a character or a class, appended to out */
static bool rx_atom_chars(struct rx *x, struct ob_buf *out, struct cp_set *set)
{
	unsigned char c = x->s[x->i];
	uint32_t cp;
	set->n = 0;
	if (c == '[') {
		x->i++;
		if (!rx_class(x, set))
			return false;
	} else if (c == '.') {
		x->i++;
		set_add(x, set, '\n', '\n');
		set_add(x, set, '\r', '\r');
		set_add(x, set, 0x2028, 0x2029);
		set_complement(set);
	} else if (c == '\\') {
		x->i++;
		if (!rx_escape(x, set, false, &cp))
			return false;
		if (cp != UINT32_MAX && !set_add(x, set, cp, cp))
			return false;
	} else if (c == '^' || c == '$') {
		return rx_fail(x, "unsupported regex anchor inside the pattern");
	} else if (c == '*' || c == '+' || c == '?' || c == '{') {
		return rx_fail(x, "regex quantifier without anything to repeat");
	} else if (c == ')') {
		return rx_fail(x, "unbalanced ')' in regex");
	} else {
		cp = rx_char(x);
		set_add(x, set, cp, cp);
	}
	if (set->n == 1 && set->r[0].lo == set->r[0].hi) {
		/* a lone character: a literal (its JSON spelling) */
		uint32_t ch = set->r[0].lo;
		if (ch >= 0x20 && ch != '"' && ch != '\\' && ch != 0x7F && (ch < 0xD800 || ch > 0xDFFF) && ch <= CP_MAX) {
			char u[OB_UTF8_MAX];
			size_t k = ob_utf8_encode(u, ch);
			rn_js_gbnf_literal(out, u, k);
			return true;
		}
	}
	if (!set_emit(out, set))
		return rx_fail(x, "regex character class matches no character the grammar writes in a JSON string");
	return true;
}

/* one atom, appended to out; *emitted false when it matches only the empty string and wrote nothing. The
 * class of a character atom lives on the heap: groups recurse through here. */
static bool rx_atom(struct rx *x, struct ob_buf *out, int depth, bool *nullable, bool *emitted)
{
	*nullable = false;
	*emitted = true;
	if (x->s[x->i] != '(') {
		struct cp_set *set = malloc(sizeof *set);
		if (!set)
			return rx_fail(x, "out of memory");
		bool ok = rx_atom_chars(x, out, set);
		free(set);
		return ok;
	}
	x->i++;
	if (x->i < x->n && x->s[x->i] == '?') {
		if (x->i + 1 < x->n && x->s[x->i + 1] == ':') {
			x->i += 2;
		} else {
			x->i--;
			return rx_fail(x, "unsupported regex group syntax '(?'");
		}
	}
	if (depth >= RN_JS_REGEX_MAX_DEPTH)
		return rx_fail(x, "regex groups nested too deeply");
	struct ob_buf inner;
	ob_buf_init(&inner, out->max);
	bool ok = rx_alt(x, &inner, depth + 1, nullable);
	if (ok && (x->i >= x->n || x->s[x->i] != ')'))
		ok = rx_fail(x, "unbalanced '(' in regex");
	if (ok) {
		x->i++;
		if (inner.len == 0) {
			*emitted = false;
			*nullable = true;
		} else {
			ob_buf_putc(out, '(');
			ob_buf_append(out, inner.p, inner.len);
			ob_buf_putc(out, ')');
		}
	}
	ob_buf_free(&inner);
	return ok;
}

static bool rx_number(struct rx *x, long *v)
{
	if (x->i >= x->n || x->s[x->i] < '0' || x->s[x->i] > '9')
		return false;
	long n = 0;
	while (x->i < x->n && x->s[x->i] >= '0' && x->s[x->i] <= '9') {
		n = n * 10 + (x->s[x->i++] - '0');
		if (n > RN_JS_MAX_REPEAT)
			n = RN_JS_MAX_REPEAT + 1; /* refused below; keeps counting digits without overflow */
	}
	*v = n;
	return true;
}

/* a quantifier after an atom that begins at out offset start */
static bool rx_quantifier(struct rx *x, struct ob_buf *out, size_t start, bool atom_nullable, bool emitted,
			  bool *nullable)
{
	unsigned char c = x->s[x->i];
	long lo = 0, hi = -1; /* -1: no upper bound */
	if (c == '*') {
		x->i++;
	} else if (c == '+') {
		lo = 1;
		x->i++;
	} else if (c == '?') {
		hi = 1;
		x->i++;
	} else {
		size_t at = x->i++;
		if (!rx_number(x, &lo)) {
			x->i = at;
			return rx_fail(x, "unsupported regex '{' (not a {m,n} quantifier)");
		}
		hi = lo;
		if (x->i < x->n && x->s[x->i] == ',') {
			x->i++;
			hi = -1;
			if (x->i < x->n && x->s[x->i] != '}' && !rx_number(x, &hi))
				return rx_fail(x, "invalid regex {m,n} quantifier");
		}
		if (x->i >= x->n || x->s[x->i] != '}')
			return rx_fail(x, "invalid regex {m,n} quantifier");
		x->i++;
		if (lo > RN_JS_MAX_REPEAT || hi > RN_JS_MAX_REPEAT) {
			char what[96];
			snprintf(what, sizeof what, "regex repetition count above the limit %d", RN_JS_MAX_REPEAT);
			return rx_fail(x, what);
		}
		if (hi >= 0 && hi < lo)
			return rx_fail(x, "regex {m,n} quantifier with n < m");
	}
	if (x->i < x->n && x->s[x->i] == '+')
		return rx_fail(x, "unsupported possessive regex quantifier");
	if (x->i < x->n && x->s[x->i] == '?')
		x->i++; /* lazy: the same language */
	*nullable = atom_nullable || lo == 0;
	if (!emitted)
		return true;
	if (hi == 0) { /* x{0}: nothing */
		out->len = start;
		out->p[start] = 0;
		*nullable = true;
		return true;
	}
	if (atom_nullable && (hi < 0 || hi > 1))
		return rx_fail(x, "a repeated regex part that can match the empty string");
	if (lo == 0 && hi < 0)
		ob_buf_putc(out, '*');
	else if (lo == 1 && hi < 0)
		ob_buf_putc(out, '+');
	else if (lo == 0 && hi == 1)
		ob_buf_putc(out, '?');
	else if (lo == hi)
		ob_buf_printf(out, "{%ld}", lo);
	else if (hi < 0)
		ob_buf_printf(out, "{%ld,}", lo);
	else
		ob_buf_printf(out, "{%ld,%ld}", lo, hi);
	return true;
}

/* a sequence up to '|', ')' or the end */
static bool rx_seq(struct rx *x, struct ob_buf *out, int depth, bool *nullable)
{
	*nullable = true;
	while (x->i < x->n && x->s[x->i] != '|' && x->s[x->i] != ')') {
		size_t sep = out->len;
		if (out->len)
			ob_buf_putc(out, ' ');
		size_t start = out->len;
		bool an, emitted;
		if (!rx_atom(x, out, depth, &an, &emitted))
			return false;
		if (x->i < x->n && (x->s[x->i] == '*' || x->s[x->i] == '+' || x->s[x->i] == '?' || x->s[x->i] == '{')) {
			if (!rx_quantifier(x, out, start, an, emitted, &an))
				return false;
		}
		if (out->len == start) { /* nothing written: drop the separator */
			out->len = sep;
			if (out->p)
				out->p[sep] = 0;
		}
		*nullable = *nullable && an;
	}
	return true;
}

static bool rx_alt(struct rx *x, struct ob_buf *out, int depth, bool *nullable)
{
	bool n;
	if (!rx_seq(x, out, depth, &n))
		return false;
	*nullable = n;
	while (x->i < x->n && x->s[x->i] == '|') {
		x->i++;
		ob_buf_puts(out, out->len ? " | " : "| ");
		size_t before = out->len;
		if (!rx_seq(x, out, depth, &n))
			return false;
		if (out->len == before && out->len >= 1 && out->p[out->len - 1] == ' ') {
			out->len--; /* an empty alternative: "a |" */
			out->p[out->len] = 0;
		}
		*nullable = *nullable || n;
	}
	return true;
}

bool rn_js_regex_gbnf(struct ob_buf *out, const char *pat, size_t len, bool *uses_char, char *msg, size_t msgsz)
{
	struct rx x = {.s = (const unsigned char *)pat, .n = len, .msg = msg, .msgsz = msgsz};
	bool head = len > 0 && pat[0] == '^';
	/* a trailing '$' that is not escaped (an even run of backslashes before it) */
	bool tail = false;
	if (len > (size_t)head && pat[len - 1] == '$') {
		size_t k = 0;
		while (k + 1 < len && pat[len - 2 - k] == '\\')
			k++;
		tail = k % 2 == 0;
	}
	x.i = head;
	x.n = len - tail;
	struct ob_buf body;
	ob_buf_init(&body, out->max);
	bool nullable;
	bool ok = rx_alt(&x, &body, 0, &nullable);
	if (ok && x.i < x.n)
		ok = rx_fail(&x, "unbalanced ')' in regex");
	if (ok && body.failed)
		ok = rx_fail(&x, "regex grammar too large");
	if (ok) {
		size_t mark = out->len;
		if (!head) {
			ob_buf_puts(out, "char*");
			*uses_char = true;
		}
		if (body.len) {
			ob_buf_puts(out, out->len > mark ? " (" : "(");
			ob_buf_append(out, body.p, body.len);
			ob_buf_putc(out, ')');
		}
		if (!tail) {
			ob_buf_puts(out, out->len > mark ? " char*" : "char*");
			*uses_char = true;
		}
	}
	ob_buf_free(&body);
	return ok;
}
