/* runner/grammar/gbnf.c — llama.cpp's GBNF grammar language compiled into flat rules (grammar_int.h): rules,
 * alternation, groups, literals and classes with their escapes, '.', repetitions (x{m,n} expanded into
 * copies and nested optional rules, as llama.cpp does), comments. Then the checks that keep the matcher
 * finite: every rule defined, the start rule present, no left recursion (through nullable prefixes too).
 * Errors name the line and column. Does not match anything: that is match.c.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/utf8.h"
#include "runner/grammar/grammar_int.h"

struct rule_buf {
	struct ge *el;
	size_t n, cap;
	const char *name; /* view into the text; NULL for a rule a group or a repetition made */
	size_t name_len;
	bool defined;
	size_t at; /* where it was defined, or first referred to */
};

struct parser {
	const char *s;
	size_t n, i;
	struct rule_buf *rules;
	size_t n_rules, cap_rules;
	uint32_t *hash; /* name -> rule index + 1, open addressing [hash_cap] */
	size_t hash_cap, n_named;
	size_t n_el;
	struct ge_set *sets;
	size_t n_sets, cap_sets;
	uint32_t (*ranges)[2];
	size_t n_ranges, cap_ranges;
	int depth;
	struct rn_error *err;
	bool failed;
};

static void where(const struct parser *p, size_t at, int *line, int *col)
{
	*line = 1;
	*col = 1;
	for (size_t k = 0; k < at && k < p->n; k++) {
		if (p->s[k] == '\n')
			++*line, *col = 1;
		else
			++*col;
	}
}

static bool perr(struct parser *p, size_t at, const char *fmt, const char *a, const char *b)
{
	if (p->failed)
		return false;
	p->failed = true;
	int line, col;
	where(p, at, &line, &col);
	char what[400];
	snprintf(what, sizeof what, fmt, a ? a : "", b ? b : "");
	rn_error_set(p->err, RN_ERR_INVALID_ARG, "grammar: line %d column %d: %s", line, col, what);
	return false;
}

static bool nomem(struct parser *p)
{
	if (!p->failed) {
		p->failed = true;
		rn_error_set(p->err, RN_ERR_NOMEM, "grammar: out of memory");
	}
	return false;
}

/* A printable quote of the character at i for messages. */
static const char *quote_at(const struct parser *p, size_t i, char *buf, size_t cap)
{
	if (i >= p->n)
		snprintf(buf, cap, "end of text");
	else if ((unsigned char)p->s[i] < 0x20 || (unsigned char)p->s[i] >= 0x7F)
		snprintf(buf, cap, "byte 0x%02X", (unsigned char)p->s[i]);
	else
		snprintf(buf, cap, "'%c'", p->s[i]);
	return buf;
}

/* ---------------------------------------------------------------------------------------------------- */
/* rules and names */

static uint32_t name_hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t k = 0; k < n; k++)
		h = (h ^ (unsigned char)s[k]) * 16777619u;
	return h;
}

static int new_rule(struct parser *p, size_t at)
{
	if (p->n_rules >= RN_GRAMMAR_MAX_RULES) {
		char lim[32];
		snprintf(lim, sizeof lim, "%u", RN_GRAMMAR_MAX_RULES);
		return perr(p, at, "more than %s rules (groups and repetitions count)%s", lim, NULL), -1;
	}
	if (ob_grow(&p->rules, &p->cap_rules, p->n_rules + 1, sizeof *p->rules, 64, 0) != OB_GROW_OK)
		return nomem(p), -1;
	p->rules[p->n_rules] = (struct rule_buf){.at = at};
	return (int)p->n_rules++;
}

static bool hash_put(struct parser *p, uint32_t idx)
{
	const struct rule_buf *r = &p->rules[idx];
	size_t k = name_hash(r->name, r->name_len) & (p->hash_cap - 1);
	while (p->hash[k])
		k = (k + 1) & (p->hash_cap - 1);
	p->hash[k] = idx + 1;
	return true;
}

/* The rule named s[0..len), created (undefined) when new. -1 on error. */
static int rule_by_name(struct parser *p, const char *s, size_t len, size_t at)
{
	if (p->hash_cap) {
		size_t k = name_hash(s, len) & (p->hash_cap - 1);
		while (p->hash[k]) {
			const struct rule_buf *r = &p->rules[p->hash[k] - 1];
			if (r->name_len == len && memcmp(r->name, s, len) == 0)
				return (int)(p->hash[k] - 1);
			k = (k + 1) & (p->hash_cap - 1);
		}
	}
	int idx = new_rule(p, at);
	if (idx < 0)
		return -1;
	p->rules[idx].name = s;
	p->rules[idx].name_len = len;
	if ((p->n_named + 1) * 2 > p->hash_cap) { /* grow and rehash */
		size_t cap = p->hash_cap ? p->hash_cap * 2 : 64;
		uint32_t *h = calloc(cap, sizeof *h);
		if (!h)
			return nomem(p), -1;
		uint32_t *old = p->hash;
		size_t old_cap = p->hash_cap;
		p->hash = h;
		p->hash_cap = cap;
		for (size_t k = 0; k < old_cap; k++)
			if (old[k])
				hash_put(p, old[k] - 1);
		free(old);
	}
	hash_put(p, (uint32_t)idx);
	p->n_named++;
	return idx;
}

static bool emit(struct parser *p, uint32_t rule, uint32_t type, uint32_t v)
{
	if (p->n_el >= RN_GRAMMAR_MAX_ELEMENTS) {
		char lim[32];
		snprintf(lim, sizeof lim, "%u", RN_GRAMMAR_MAX_ELEMENTS);
		return perr(p, p->i, "the grammar expands to more than %s elements%s", lim, NULL);
	}
	struct rule_buf *r = &p->rules[rule];
	if (ob_grow(&r->el, &r->cap, r->n + 1, sizeof *r->el, 16, 0) != OB_GROW_OK)
		return nomem(p);
	r->el[r->n++] = (struct ge){type, v};
	p->n_el++;
	return true;
}

/* ---------------------------------------------------------------------------------------------------- */
/* lexical */

static bool is_word(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

/* Skip blanks and comments; newlines too when nl. */
static void skip_space(struct parser *p, bool nl)
{
	while (p->i < p->n) {
		char c = p->s[p->i];
		if (c == ' ' || c == '\t')
			p->i++;
		else if (c == '#')
			while (p->i < p->n && p->s[p->i] != '\n' && p->s[p->i] != '\r')
				p->i++;
		else if (nl && (c == '\n' || c == '\r'))
			p->i++;
		else
			break;
	}
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* One character of a literal or class at p->i: an escape or a UTF-8 sequence. */
static bool read_char(struct parser *p, uint32_t *cp)
{
	size_t at = p->i;
	unsigned char c = (unsigned char)p->s[p->i];
	if (c == '\\') {
		if (p->i + 1 >= p->n)
			return perr(p, at, "a '\\' at the end of the text%s%s", NULL, NULL);
		char e = p->s[p->i + 1];
		int digits = 0;
		switch (e) {
		case 'n': *cp = '\n'; p->i += 2; return true;
		case 'r': *cp = '\r'; p->i += 2; return true;
		case 't': *cp = '\t'; p->i += 2; return true;
		case '\\': case '"': case '[': case ']': *cp = (uint32_t)e; p->i += 2; return true;
		case 'x': digits = 2; break;
		case 'u': digits = 4; break;
		case 'U': digits = 8; break;
		default: {
			char q[16];
			snprintf(q, sizeof q, "%c", e >= 0x20 && e < 0x7F ? e : '?');
			return perr(p, at, "unknown escape '\\%s'%s", q, NULL);
		}
		}
		uint32_t v = 0;
		for (int k = 0; k < digits; k++) {
			int h = p->i + 2 + (size_t)k < p->n ? hexval(p->s[p->i + 2 + (size_t)k]) : -1;
			if (h < 0) {
				char q[4] = {'\\', e, 0, 0};
				return perr(p, at, "'%s' needs %s hexadecimal digits", q,
					    digits == 2 ? "2" : digits == 4 ? "4" : "8");
			}
			v = v << 4 | (uint32_t)h;
		}
		if (v > 0x10FFFF)
			return perr(p, at, "escape beyond U+10FFFF%s%s", NULL, NULL);
		*cp = v;
		p->i += 2 + (size_t)digits;
		return true;
	}
	size_t len = ob_utf8_valid_len((const unsigned char *)p->s + p->i, p->n - p->i);
	if (len == 0)
		return perr(p, at, "invalid UTF-8%s%s", NULL, NULL);
	size_t sz;
	*cp = ob_utf8_decode((const unsigned char *)p->s + p->i, len, &sz);
	p->i += len;
	return true;
}

/* ---------------------------------------------------------------------------------------------------- */
/* grammar */

static bool parse_alternates(struct parser *p, uint32_t rule, bool nested);

static bool parse_literal(struct parser *p, uint32_t rule)
{
	size_t at = p->i++;
	while (p->i < p->n && p->s[p->i] != '"') {
		if (p->s[p->i] == '\n' || p->s[p->i] == '\r')
			break;
		uint32_t cp;
		if (!read_char(p, &cp) || !emit(p, rule, GE_CHAR, cp))
			return false;
	}
	if (p->i >= p->n || p->s[p->i] != '"')
		return perr(p, at, "a string literal without its closing '\"'%s%s", NULL, NULL);
	p->i++;
	return true;
}

static int range_cmp(const void *a, const void *b)
{
	const uint32_t *x = a, *y = b;
	return x[0] < y[0] ? -1 : x[0] > y[0];
}

static bool parse_class(struct parser *p, uint32_t rule)
{
	size_t at = p->i++;
	bool neg = p->i < p->n && p->s[p->i] == '^';
	if (neg)
		p->i++;
	size_t first = p->n_ranges;
	while (p->i < p->n && p->s[p->i] != ']') {
		if (p->s[p->i] == '\n' || p->s[p->i] == '\r')
			break;
		size_t at_c = p->i;
		uint32_t lo, hi;
		if (!read_char(p, &lo))
			return false;
		hi = lo;
		if (p->i + 1 < p->n && p->s[p->i] == '-' && p->s[p->i + 1] != ']') {
			p->i++;
			if (!read_char(p, &hi))
				return false;
			if (hi < lo)
				return perr(p, at_c, "a class range that ends before it starts%s%s", NULL, NULL);
		}
		if (ob_grow(&p->ranges, &p->cap_ranges, p->n_ranges + 1, sizeof *p->ranges, 16, 0) != OB_GROW_OK)
			return nomem(p);
		p->ranges[p->n_ranges][0] = lo;
		p->ranges[p->n_ranges][1] = hi;
		p->n_ranges++;
		if (p->n_ranges > RN_GRAMMAR_MAX_ELEMENTS)
			return perr(p, at_c, "too many class ranges%s%s", NULL, NULL);
	}
	if (p->i >= p->n || p->s[p->i] != ']')
		return perr(p, at, "a '[' without its ']'%s%s", NULL, NULL);
	p->i++;
	size_t n = p->n_ranges - first;
	if (!neg && n == 1 && p->ranges[first][0] == p->ranges[first][1]) {
		uint32_t c = p->ranges[first][0];
		p->n_ranges = first;
		return emit(p, rule, GE_CHAR, c);
	}
	if (n > 1)
		qsort(p->ranges + first, n, sizeof *p->ranges, range_cmp);
	/* merge overlapping ranges so that matching can stop at the first range past c */
	size_t w = first;
	for (size_t k = first; k < p->n_ranges; k++) {
		if (w > first && p->ranges[k][0] <= p->ranges[w - 1][1] + 1) {
			if (p->ranges[k][1] > p->ranges[w - 1][1])
				p->ranges[w - 1][1] = p->ranges[k][1];
		} else {
			p->ranges[w][0] = p->ranges[k][0];
			p->ranges[w][1] = p->ranges[k][1];
			w++;
		}
	}
	p->n_ranges = w;
	if (ob_grow(&p->sets, &p->cap_sets, p->n_sets + 1, sizeof *p->sets, 16, 0) != OB_GROW_OK)
		return nomem(p);
	p->sets[p->n_sets] = (struct ge_set){.first = (uint32_t)first, .n = (uint32_t)(w - first), .neg = neg};
	return emit(p, rule, GE_SET, (uint32_t)p->n_sets++);
}

static bool read_count(struct parser *p, uint32_t *v)
{
	size_t at = p->i;
	uint64_t x = 0;
	while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
		x = x * 10 + (uint64_t)(p->s[p->i] - '0');
		if (x > RN_GRAMMAR_MAX_REPEAT) {
			char lim[32];
			snprintf(lim, sizeof lim, "%u", RN_GRAMMAR_MAX_REPEAT);
			return perr(p, at, "a repetition count above %s%s", lim, NULL);
		}
		p->i++;
	}
	if (p->i == at)
		return perr(p, at, "a repetition count expected%s%s", NULL, NULL);
	*v = (uint32_t)x;
	return true;
}

/* Append the elements sym[0..n) to rule. */
static bool emit_copy(struct parser *p, uint32_t rule, const struct ge *sym, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (!emit(p, rule, sym[k].type, sym[k].v))
			return false;
	return true;
}

/* Replace the last symbol of rule (its elements from `start`) with min copies of it and then up to max - min
 * more (max UINT32_MAX: any number), as llama.cpp rewrites repetitions. */
static bool repeat(struct parser *p, uint32_t rule, size_t start, uint32_t min, uint32_t max, size_t at)
{
	struct rule_buf *r = &p->rules[rule];
	if (start >= r->n)
		return perr(p, at, "a repetition with nothing before it to repeat%s%s", NULL, NULL);
	size_t n = r->n - start;
	struct ge *sym = malloc(n * sizeof *sym);
	if (!sym)
		return nomem(p);
	memcpy(sym, r->el + start, n * sizeof *sym);
	r->n = start;
	p->n_el -= n;
	bool ok = true;
	for (uint32_t k = 0; ok && k < min; k++)
		ok = emit_copy(p, rule, sym, n);
	if (ok && max == UINT32_MAX) { /* rep ::= sym rep | */
		int rep = new_rule(p, at);
		ok = rep >= 0 && emit_copy(p, (uint32_t)rep, sym, n) && emit(p, (uint32_t)rep, GE_REF, (uint32_t)rep) &&
		     emit(p, (uint32_t)rep, GE_ALT, 0) && emit(p, (uint32_t)rep, GE_END, 0) &&
		     emit(p, rule, GE_REF, (uint32_t)rep);
		if (ok)
			p->rules[rep].defined = true;
	} else if (ok && max > min) { /* opt_1 ::= sym | ; opt_k ::= sym opt_(k-1) | */
		int prev = -1;
		for (uint32_t k = 0; ok && k < max - min; k++) {
			int opt = new_rule(p, at);
			ok = opt >= 0 && emit_copy(p, (uint32_t)opt, sym, n) &&
			     (prev < 0 || emit(p, (uint32_t)opt, GE_REF, (uint32_t)prev)) &&
			     emit(p, (uint32_t)opt, GE_ALT, 0) && emit(p, (uint32_t)opt, GE_END, 0);
			if (ok)
				p->rules[opt].defined = true;
			prev = opt;
		}
		ok = ok && emit(p, rule, GE_REF, (uint32_t)prev);
	}
	free(sym);
	return ok;
}

static bool parse_sequence(struct parser *p, uint32_t rule, bool nested)
{
	size_t last = SIZE_MAX; /* where the last symbol's elements start in rule */
	while (p->i < p->n && !p->failed) {
		char c = p->s[p->i];
		size_t at = p->i;
		size_t here = p->rules[rule].n;
		if (c == '"') {
			if (!parse_literal(p, rule))
				return false;
			last = here;
		} else if (c == '[') {
			if (!parse_class(p, rule))
				return false;
			last = here;
		} else if (c == '.') {
			p->i++;
			if (!emit(p, rule, GE_ANY, 0))
				return false;
			last = here;
		} else if (is_word(c)) {
			size_t b = p->i;
			while (p->i < p->n && is_word(p->s[p->i]))
				p->i++;
			int ref = rule_by_name(p, p->s + b, p->i - b, b);
			if (ref < 0 || !emit(p, rule, GE_REF, (uint32_t)ref))
				return false;
			last = here;
		} else if (c == '(') {
			if (p->depth >= RN_GRAMMAR_MAX_DEPTH) {
				char lim[16];
				snprintf(lim, sizeof lim, "%d", RN_GRAMMAR_MAX_DEPTH);
				return perr(p, at, "groups nested deeper than %s%s", lim, NULL);
			}
			p->i++;
			skip_space(p, true);
			int sub = new_rule(p, at);
			if (sub < 0)
				return false;
			p->rules[sub].defined = true;
			p->depth++;
			if (!parse_alternates(p, (uint32_t)sub, true))
				return false;
			p->depth--;
			if (p->i >= p->n || p->s[p->i] != ')')
				return perr(p, at, "a '(' without its ')'%s%s", NULL, NULL);
			p->i++;
			if (!emit(p, rule, GE_REF, (uint32_t)sub))
				return false;
			last = p->rules[rule].n - 1;
		} else if (c == '*' || c == '+' || c == '?') {
			p->i++;
			if (last == SIZE_MAX)
				return perr(p, at, "'%s' with nothing before it to repeat%s", c == '*' ? "*" : c == '+' ? "+" : "?",
					    NULL);
			if (!repeat(p, rule, last, c == '+' ? 1 : 0, c == '?' ? 1 : UINT32_MAX, at))
				return false;
			last = SIZE_MAX;
		} else if (c == '{') {
			p->i++;
			skip_space(p, false);
			uint32_t min = 0, max = UINT32_MAX;
			if (p->i < p->n && p->s[p->i] != ',' && !read_count(p, &min))
				return false;
			skip_space(p, false);
			if (p->i < p->n && p->s[p->i] == ',') {
				p->i++;
				skip_space(p, false);
				if (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9' && !read_count(p, &max))
					return false;
			} else {
				max = min;
			}
			skip_space(p, false);
			if (p->i >= p->n || p->s[p->i] != '}')
				return perr(p, at, "a '{' without its '}'%s%s", NULL, NULL);
			p->i++;
			if (max < min)
				return perr(p, at, "a repetition {m,n} with n below m%s%s", NULL, NULL);
			if (last == SIZE_MAX)
				return perr(p, at, "'{' with nothing before it to repeat%s%s", NULL, NULL);
			if (!repeat(p, rule, last, min, max, at))
				return false;
			last = SIZE_MAX;
		} else {
			break;
		}
		skip_space(p, nested);
	}
	return !p->failed;
}

static bool parse_alternates(struct parser *p, uint32_t rule, bool nested)
{
	if (!parse_sequence(p, rule, nested))
		return false;
	while (p->i < p->n && p->s[p->i] == '|') {
		p->i++;
		if (!emit(p, rule, GE_ALT, 0))
			return false;
		skip_space(p, true);
		if (!parse_sequence(p, rule, nested))
			return false;
	}
	return emit(p, rule, GE_END, 0);
}

static bool parse_rule(struct parser *p)
{
	size_t at = p->i;
	while (p->i < p->n && is_word(p->s[p->i]))
		p->i++;
	if (p->i == at) {
		char q[32];
		return perr(p, at, "a rule name expected, found %s%s", quote_at(p, at, q, sizeof q), NULL);
	}
	int r = rule_by_name(p, p->s + at, p->i - at, at);
	if (r < 0)
		return false;
	if (p->rules[r].defined) {
		char name[72];
		snprintf(name, sizeof name, "%.*s", (int)(p->i - at > 64 ? 64 : p->i - at), p->s + at);
		return perr(p, at, "rule '%s' is defined twice%s", name, NULL);
	}
	p->rules[r].defined = true;
	p->rules[r].at = at;
	skip_space(p, false);
	if (p->n - p->i < 3 || memcmp(p->s + p->i, "::=", 3) != 0) {
		char q[32];
		return perr(p, p->i, "'::=' expected, found %s%s", quote_at(p, p->i, q, sizeof q), NULL);
	}
	p->i += 3;
	skip_space(p, true);
	if (!parse_alternates(p, (uint32_t)r, false))
		return false;
	if (p->i < p->n && p->s[p->i] != '\n' && p->s[p->i] != '\r') {
		char q[32];
		const char *what = p->s[p->i] == ')' ? "a ')' without its '('" : NULL;
		if (what)
			return perr(p, p->i, "%s%s", what, NULL);
		return perr(p, p->i, "unexpected %s%s", quote_at(p, p->i, q, sizeof q), NULL);
	}
	skip_space(p, true);
	return true;
}

/* ---------------------------------------------------------------------------------------------------- */
/* checks and flattening */

/* nullable[r]: rule r can match the empty string. A work list over the references (linear in the elements,
 * whatever order the rules come in): an alternative becomes empty-capable when every rule it refers to is,
 * and has no terminal. */
static bool *compute_nullable(const struct parser *p)
{
	size_t R = p->n_rules, n_alt = 0, n_ref = 0;
	for (size_t r = 0; r < R; r++)
		for (size_t k = 0; k < p->rules[r].n; k++) {
			uint32_t t = p->rules[r].el[k].type;
			n_alt += t == GE_ALT || t == GE_END;
			n_ref += t == GE_REF;
		}
	bool *nul = calloc(R ? R : 1, sizeof *nul);
	uint32_t *alt_rule = malloc((n_alt ? n_alt : 1) * sizeof *alt_rule);
	uint32_t *left = calloc(n_alt ? n_alt : 1, sizeof *left); /* references not yet known empty-capable */
	bool *dead = calloc(n_alt ? n_alt : 1, sizeof *dead);      /* has a terminal */
	uint32_t *occ_start = calloc(R + 1, sizeof *occ_start);     /* CSR: the alternatives referring to rule r */
	uint32_t *occ = malloc((n_ref ? n_ref : 1) * sizeof *occ);
	uint32_t *queue = malloc((R ? R : 1) * sizeof *queue);
	if (!nul || !alt_rule || !left || !dead || !occ_start || !occ || !queue)
		goto fail;
	for (size_t r = 0; r < R; r++)
		for (size_t k = 0; k < p->rules[r].n; k++)
			if (p->rules[r].el[k].type == GE_REF)
				occ_start[p->rules[r].el[k].v + 1]++;
	for (size_t r = 0; r < R; r++)
		occ_start[r + 1] += occ_start[r];
	size_t a = 0, nq = 0;
	for (size_t r = 0; r < R; r++) {
		for (size_t k = 0; k < p->rules[r].n; k++) {
			const struct ge *e = &p->rules[r].el[k];
			if (e->type == GE_REF) {
				occ[occ_start[e->v]++] = (uint32_t)a;
				left[a]++;
			} else if (e->type == GE_ALT || e->type == GE_END) {
				alt_rule[a] = (uint32_t)r;
				if (!dead[a] && left[a] == 0 && !nul[r])
					nul[r] = true, queue[nq++] = (uint32_t)r;
				a++;
			} else {
				dead[a] = true;
			}
		}
	}
	for (size_t r = R; r > 0; r--) /* occ_start[r] was advanced to the end of r's list: shift back */
		occ_start[r] = occ_start[r - 1];
	occ_start[0] = 0;
	for (size_t qi = 0; qi < nq; qi++) {
		uint32_t x = queue[qi];
		for (uint32_t o = occ_start[x]; o < occ_start[x + 1]; o++) {
			uint32_t alt = occ[o];
			if (--left[alt] == 0 && !dead[alt] && !nul[alt_rule[alt]]) {
				nul[alt_rule[alt]] = true;
				queue[nq++] = alt_rule[alt];
			}
		}
	}
	free(alt_rule);
	free(left);
	free(dead);
	free(occ_start);
	free(occ);
	free(queue);
	return nul;
fail:
	free(nul);
	free(alt_rule);
	free(left);
	free(dead);
	free(occ_start);
	free(occ);
	free(queue);
	return NULL;
}

/* Left recursion: a rule that can reach itself without consuming a character. Depth-first search over the
 * "may start with" edges, iterative (the rule count is large), colours 0 new, 1 on the path, 2 done. */
static bool check_left_recursion(struct parser *p, const bool *nul)
{
	size_t R = p->n_rules;
	uint8_t *color = calloc(R, 1);
	size_t (*stk)[3] = malloc(R * sizeof *stk); /* rule, element index to continue from, "still leading" */
	if (!color || !stk) {
		free(color);
		free(stk);
		return nomem(p);
	}
	bool ok = true;
	for (size_t s0 = 0; s0 < R && ok; s0++) {
		if (color[s0])
			continue;
		size_t sp = 0;
		stk[sp][0] = s0;
		stk[sp][1] = 0;
		stk[sp][2] = 1;
		sp++;
		color[s0] = 1;
		while (sp > 0 && ok) {
			size_t r = stk[sp - 1][0], k = stk[sp - 1][1];
			bool lead = stk[sp - 1][2];
			const struct rule_buf *rb = &p->rules[r];
			/* the next reference that may start the rule: at an alternative's start, or after nullable
			 * references only */
			size_t next = SIZE_MAX;
			while (k < rb->n && next == SIZE_MAX) {
				const struct ge *e = &rb->el[k++];
				if (e->type == GE_ALT || e->type == GE_END) {
					lead = true;
				} else if (e->type != GE_REF) {
					lead = false;
				} else {
					if (lead)
						next = e->v;
					lead = lead && nul[e->v];
				}
			}
			stk[sp - 1][1] = k;
			stk[sp - 1][2] = lead;
			if (next == SIZE_MAX) {
				color[r] = 2;
				sp--;
			} else if (color[next] == 1) {
				const struct rule_buf *nr = &p->rules[next];
				/* name a named rule on the cycle when the one found is a group */
				for (size_t q = sp; q > 0 && !nr->name; q--)
					if (p->rules[stk[q - 1][0]].name)
						nr = &p->rules[stk[q - 1][0]];
				char name[72];
				snprintf(name, sizeof name, "%.*s", nr->name ? (int)(nr->name_len > 64 ? 64 : nr->name_len) : 7,
					 nr->name ? nr->name : "(group)");
				ok = perr(p, nr->at, "rule '%s' is left-recursive (it can reach itself before any character)%s",
					  name, NULL);
			} else if (color[next] == 0) {
				color[next] = 1;
				stk[sp][0] = next;
				stk[sp][1] = 0;
				stk[sp][2] = 1;
				sp++;
			}
		}
	}
	free(color);
	free(stk);
	return ok;
}

static struct rn_grammar *flatten(struct parser *p, uint32_t root)
{
	struct rn_grammar *g = calloc(1, sizeof *g);
	if (!g)
		return NULL;
	size_t n_alt = 0;
	for (size_t r = 0; r < p->n_rules; r++)
		for (size_t k = 0; k < p->rules[r].n; k++)
			n_alt += p->rules[r].el[k].type == GE_ALT || p->rules[r].el[k].type == GE_END;
	g->el = malloc((p->n_el ? p->n_el : 1) * sizeof *g->el);
	g->alt = malloc((n_alt ? n_alt : 1) * sizeof *g->alt);
	g->rule_alt = malloc((p->n_rules + 1) * sizeof *g->rule_alt);
	g->sets = malloc((p->n_sets ? p->n_sets : 1) * sizeof *g->sets);
	g->ranges = malloc((p->n_ranges ? p->n_ranges : 1) * sizeof *g->ranges);
	if (!g->el || !g->alt || !g->rule_alt || !g->sets || !g->ranges) {
		rn_grammar_free(g);
		return NULL;
	}
	uint32_t pos = 0, a = 0;
	for (size_t r = 0; r < p->n_rules; r++) {
		const struct rule_buf *rb = &p->rules[r];
		g->rule_alt[r] = a;
		g->alt[a++] = pos;
		for (size_t k = 0; k < rb->n; k++) {
			g->el[pos++] = rb->el[k];
			if (rb->el[k].type == GE_ALT)
				g->alt[a++] = pos;
		}
	}
	g->rule_alt[p->n_rules] = a;
	g->n_el = pos;
	g->n_rules = (uint32_t)p->n_rules;
	if (p->n_sets)
		memcpy(g->sets, p->sets, p->n_sets * sizeof *g->sets);
	g->n_sets = (uint32_t)p->n_sets;
	if (p->n_ranges)
		memcpy(g->ranges, p->ranges, p->n_ranges * sizeof *g->ranges);
	g->n_ranges = (uint32_t)p->n_ranges;
	g->root = root;
	return g;
}

struct rn_grammar *rn_grammar_compile(const char *text, size_t len, const char *root, struct rn_error *err)
{
	struct parser p = {.s = text ? text : "", .n = text ? len : 0, .err = err};
	struct rn_grammar *g = NULL;
	bool *nul = NULL;
	if (!root)
		root = "root";
	if (p.n > RN_GRAMMAR_MAX_TEXT) {
		rn_error_set(err, RN_ERR_INVALID_ARG, "grammar: %zu bytes of text (at most %u)", p.n, RN_GRAMMAR_MAX_TEXT);
		return NULL;
	}
	skip_space(&p, true);
	while (p.i < p.n && !p.failed)
		if (!parse_rule(&p))
			break;
	if (p.failed)
		goto out;
	for (size_t r = 0; r < p.n_rules; r++)
		if (!p.rules[r].defined) {
			char name[72];
			snprintf(name, sizeof name, "%.*s", (int)(p.rules[r].name_len > 64 ? 64 : p.rules[r].name_len),
				 p.rules[r].name);
			perr(&p, p.rules[r].at, "undefined rule '%s'%s", name, NULL);
			goto out;
		}
	int root_idx = -1;
	if (p.hash_cap) {
		size_t rl = strlen(root);
		size_t k = name_hash(root, rl) & (p.hash_cap - 1);
		while (p.hash[k] && root_idx < 0) {
			const struct rule_buf *r = &p.rules[p.hash[k] - 1];
			if (r->name_len == rl && memcmp(r->name, root, rl) == 0)
				root_idx = (int)(p.hash[k] - 1);
			k = (k + 1) & (p.hash_cap - 1);
		}
	}
	if (root_idx < 0) {
		rn_error_set(err, RN_ERR_INVALID_ARG, "grammar: no rule named '%.64s' to start from", root);
		goto out;
	}
	if (!(nul = compute_nullable(&p))) {
		nomem(&p);
		goto out;
	}
	if (!check_left_recursion(&p, nul))
		goto out;
	if (!(g = flatten(&p, (uint32_t)root_idx)))
		nomem(&p);
out:
	free(nul);
	for (size_t r = 0; r < p.n_rules; r++)
		free(p.rules[r].el);
	free(p.rules);
	free(p.hash);
	free(p.sets);
	free(p.ranges);
	return g;
}

void rn_grammar_free(struct rn_grammar *g)
{
	if (!g)
		return;
	free(g->el);
	free(g->alt);
	free(g->rule_alt);
	free(g->sets);
	free(g->ranges);
	free(g);
}

/* ---------------------------------------------------------------------------------------------------- */
/* terminals */

bool rn_grammar_el_match(const struct rn_grammar *g, const struct ge *e, uint32_t c)
{
	if (e->type == GE_CHAR)
		return e->v == c;
	if (e->type == GE_ANY)
		return true;
	const struct ge_set *s = &g->sets[e->v];
	bool in = false;
	for (uint32_t k = 0; k < s->n; k++) {
		const uint32_t *r = g->ranges[s->first + k];
		if (c < r[0])
			break;
		if (c <= r[1]) {
			in = true;
			break;
		}
	}
	return in != s->neg;
}

bool rn_grammar_el_match_range(const struct rn_grammar *g, const struct ge *e, uint32_t lo, uint32_t hi)
{
	if (e->type == GE_CHAR)
		return e->v >= lo && e->v <= hi;
	if (e->type == GE_ANY)
		return true;
	const struct ge_set *s = &g->sets[e->v];
	for (uint32_t k = 0; k < s->n; k++) {
		const uint32_t *r = g->ranges[s->first + k];
		if (s->neg) {
			if (r[0] <= lo && r[1] >= hi)
				return false; /* one range covers all of [lo, hi] (ranges are merged) */
		} else if (r[0] <= hi && r[1] >= lo) {
			return true;
		}
	}
	return s->neg;
}
