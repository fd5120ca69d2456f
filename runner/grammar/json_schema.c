/* runner/grammar/json_schema.c — a JSON schema turned into GBNF the way llama.cpp's json_schema_to_grammar
 * (and so Ollama's SchemaToGrammar) does: the same rule shapes, the bounded `space` rule, properties in their
 * order with optional ones chained, repetitions for min/max counts, digit-range rules for number bounds
 * (exact decimals, where llama.cpp bounds integers only).
 * Where llama.cpp silently ignores a keyword that constrains the value (not, if/then/else, multipleOf,
 * uniqueItems, patternProperties, remote $ref, ...), this converter refuses the schema with the keyword and
 * its JSON pointer; a grammar may be stricter than its schema (no extra properties unless allowed), never
 * looser. Descriptive keywords and unknown `format` values are ignored, as llama.cpp does.
 */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/utf8.h"
#include "runner/grammar/grammar.h"
#include "runner/grammar/json_schema.h"
#include "runner/grammar/json_schema_regex.h"

#define RN_JS_MAX_DEPTH 64            /* schemas nested inside one another (refs included) */
#define RN_JS_MAX_RULES 4096          /* rules in one grammar */
#define RN_JS_MAX_TEXT (1u << 20)     /* bytes of grammar text (the GBNF compiler's limit too) */
#define RN_JS_MAX_BOUND 1e15          /* |minimum|, |maximum|: 16 digits at most, as llama.cpp's integer rules */
#define RN_JS_MAX_DECIMALS 15         /* fraction digits of a bound */
#define RN_JS_NAME_MAX 96             /* bytes of a rule name taken from property names, before any suffix */
#define RN_JS_MAX_KEY_TRIE 1024       /* bytes of a property name excluded from additional properties' keys */
#define RN_JS_SLOTS 8192              /* hash slots for rule names: twice RN_JS_MAX_RULES */

const char rn_grammar_json[] =
	"root ::= object | array\n"
	"value ::= object | array | string | number | (\"true\" | \"false\" | \"null\") ws\n"
	"object ::= \"{\" ws ( string \":\" ws value ( \",\" ws string \":\" ws value )* )? \"}\" ws\n"
	"array ::= \"[\" ws ( value ( \",\" ws value )* )? \"]\" ws\n"
	"string ::= \"\\\"\" ( [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4} ) )* \"\\\"\" ws\n"
	"number ::= \"-\"? ( [0-9] | [1-9] [0-9]{1,15} ) ( \".\" [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,4} )? ws\n"
	"ws ::= | \" \" | \"\\n\" [ \\t]{0,20}\n";

/* ------------------------------------------------------------------------------------------ primitives */

struct js_prim {
	const char *name, *body, *deps; /* deps: the rules the body uses, space-separated */
};

/* \uD800-\uDFFF escapes are left out of `char`: a surrogate pair would count as two characters */
static const struct js_prim js_prims[] = {
	{"space", "| \" \" | \"\\n\"{1,2} [ \\t]{0,20}", ""},
	{"boolean", "(\"true\" | \"false\") space", "space"},
	{"null", "\"null\" space", "space"},
	{"integral-part", "[0] | [1-9] [0-9]{0,15}", ""},
	{"decimal-part", "[0-9]{1,16}", ""},
	{"number", "(\"-\"? integral-part) (\".\" decimal-part)? ([eE] [-+]? integral-part)? space",
	 "integral-part decimal-part space"},
	{"integer", "(\"-\"? integral-part) space", "integral-part space"},
	{"char",
	 "[^\"\\\\\\x7F\\x00-\\x1F] | [\\\\] ([\"\\\\/bfnrt] | \"u\" ([0-9a-cA-CefEF] [0-9a-fA-F]{3} | [dD] [0-7] "
	 "[0-9a-fA-F]{2}))",
	 ""},
	{"string", "\"\\\"\" char* \"\\\"\" space", "char space"},
	{"key-char", "[^\"\\\\\\x7F\\x00-\\x1F]", ""},
	{"value", "object | array | string | number | boolean | null", "object array string number boolean null"},
	{"object", "\"{\" space ( string \":\" space value (\",\" space string \":\" space value)* )? \"}\" space",
	 "string value space"},
	{"array", "\"[\" space ( value (\",\" space value)* )? \"]\" space", "value space"},
	{"uuid",
	 "\"\\\"\" [0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" "
	 "[0-9a-fA-F]{12} \"\\\"\" space",
	 "space"},
	{"date", "[0-9]{4} \"-\" ( \"0\" [1-9] | \"1\" [0-2] ) \"-\" ( \"0\" [1-9] | [1-2] [0-9] | \"3\" [0-1] )", ""},
	{"time",
	 "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] ( \".\" [0-9]{3} )? ( \"Z\" | ( \"+\" | "
	 "\"-\" ) ( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] )",
	 ""},
	{"date-time", "date \"T\" time", "date time"},
	{"date-string", "\"\\\"\" date \"\\\"\" space", "date space"},
	{"time-string", "\"\\\"\" time \"\\\"\" space", "time space"},
	{"date-time-string", "\"\\\"\" date-time \"\\\"\" space", "date-time space"},
};

/* keywords that say nothing about which values are valid */
static const char *const js_descriptive[] = {
	"title",    "description", "examples",   "example",         "default",          "$schema",
	"$id",      "$comment",    "$anchor",    "$dynamicAnchor",  "$vocabulary",      "deprecated",
	"readOnly", "writeOnly",   "$defs",      "definitions",     "contentEncoding",  "contentMediaType",
	"discriminator", "nullable", "strict", NULL,
};

/* keywords that constrain values and that the converter cannot turn into grammar */
static const char *const js_unsupported[] = {
	"patternProperties", "not",           "if",           "then",         "else",
	"dependentSchemas",  "dependentRequired", "dependencies", "propertyNames", "unevaluatedItems",
	"contains",          "minContains",   "maxContains",  "$dynamicRef",  "$recursiveRef",
	"multipleOf",        "contentSchema", NULL,
};

/* keywords by the type they constrain (a keyword of another type than the value's is vacuous) */
static const char *const js_kw_object[] = {"properties", "required", "additionalProperties", "minProperties",
					   "maxProperties", "unevaluatedProperties", NULL};
static const char *const js_kw_array[] = {"items", "prefixItems", "additionalItems", "minItems", "maxItems",
					  "uniqueItems", NULL};
static const char *const js_kw_string[] = {"pattern", "format", "minLength", "maxLength", NULL};
static const char *const js_kw_number[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", NULL};

static bool js_in(const char *const *list, const char *s)
{
	for (; *list; list++)
		if (strcmp(*list, s) == 0)
			return true;
	return false;
}

/* --------------------------------------------------------------------------------------------- context */

struct js_rule {
	char *name;
	char *body; /* NULL while reserved: a $ref being converted */
};

struct js_ref {
	char *ref;        /* the $ref string */
	const char *rule; /* its rule's name (borrowed from the rule table) */
	int guard;        /* c->guard when its conversion began */
	bool done;
};

struct js {
	const struct ob_json *root;
	struct js_rule *rules;
	size_t n_rules, cap_rules;
	uint32_t *slots; /* rule index + 1, 0 = empty; open addressing on the name */
	struct js_ref *refs;
	size_t n_refs, cap_refs;
	struct ob_buf path; /* JSON pointer of the schema being converted */
	size_t text;
	int depth;
	int guard; /* objects and arrays entered: a $ref met again at the same count reads no input in between */
	struct rn_error *err;
	bool failed;
	bool skippable; /* the failure is a feature the converter cannot honour (js_refuse), not a broken schema */
};

static void js_vfail(struct js *c, bool skippable, const char *fmt, va_list ap)
{
	if (c->failed)
		return;
	c->failed = true;
	c->skippable = skippable;
	char m[400];
	vsnprintf(m, sizeof m, fmt, ap);
	const char *p = c->path.p && !c->path.failed ? c->path.p : "";
	rn_error_set(c->err, RN_ERR_INVALID_ARG, "json schema: %s at #%.*s", m, 80, p);
}

/* the schema is broken (a keyword of the wrong kind, an empty interval, a limit passed) */
static RN_PRINTF(2, 3) void js_fail(struct js *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	js_vfail(c, false, fmt, ap);
	va_end(ap);
}

/* the schema asks for what the converter cannot honour: an alternative of anyOf/oneOf that does is left out
 * (the grammar is then stricter than the schema), anywhere else the schema is refused */
static RN_PRINTF(2, 3) void js_refuse(struct js *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	js_vfail(c, true, fmt, ap);
	va_end(ap);
}

static void js_nomem(struct js *c)
{
	if (c->failed)
		return;
	c->failed = true;
	rn_error_set(c->err, RN_ERR_NOMEM, "json schema: out of memory");
}

/* a buffer for a rule body; bodies are bounded by the grammar's ceiling */
static void js_buf(struct ob_buf *b)
{
	ob_buf_init(b, RN_JS_MAX_TEXT);
}

/* the body from b, or NULL (failed) when b overflowed */
static char *js_take(struct js *c, struct ob_buf *b)
{
	if (b->failed) {
		if (b->over)
			js_fail(c, "grammar larger than %u bytes", RN_JS_MAX_TEXT);
		else
			js_nomem(c);
		ob_buf_free(b);
		return NULL;
	}
	if (!b->p && !ob_buf_puts(b, "")) {
		js_nomem(c);
		return NULL;
	}
	return ob_buf_take(b);
}

static size_t js_path_push(struct js *c, const char *seg, const char *key, size_t klen)
{
	size_t mark = c->path.len;
	ob_buf_putc(&c->path, '/');
	ob_buf_puts(&c->path, seg);
	if (key) {
		ob_buf_putc(&c->path, '/');
		for (size_t i = 0; i < klen; i++) {
			if (key[i] == '~')
				ob_buf_puts(&c->path, "~0");
			else if (key[i] == '/')
				ob_buf_puts(&c->path, "~1");
			else
				ob_buf_putc(&c->path, key[i]);
		}
	}
	return mark;
}

static size_t js_path_index(struct js *c, const char *seg, size_t i)
{
	size_t mark = c->path.len;
	ob_buf_printf(&c->path, "/%s/%zu", seg, i);
	return mark;
}

static void js_path_pop(struct js *c, size_t mark)
{
	if (c->path.failed || !c->path.p)
		return;
	c->path.len = mark;
	c->path.p[mark] = 0;
}

/* -------------------------------------------------------------------------------------------- rules */

static uint32_t js_hash(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static struct js_rule *js_find(struct js *c, const char *name)
{
	for (uint32_t i = js_hash(name) & (RN_JS_SLOTS - 1);; i = (i + 1) & (RN_JS_SLOTS - 1)) {
		if (!c->slots[i])
			return NULL;
		struct js_rule *r = &c->rules[c->slots[i] - 1];
		if (strcmp(r->name, name) == 0)
			return r;
	}
}

/* inserts a new rule (name must be absent); takes name and body; returns the rule's name or NULL */
static const char *js_insert(struct js *c, char *name, char *body)
{
	if (c->n_rules >= RN_JS_MAX_RULES) {
		js_fail(c, "schema needs more than %d grammar rules", RN_JS_MAX_RULES);
		goto fail;
	}
	c->text += strlen(name) + (body ? strlen(body) : 0) + 6;
	if (c->text > RN_JS_MAX_TEXT) {
		js_fail(c, "grammar larger than %u bytes", RN_JS_MAX_TEXT);
		goto fail;
	}
	if (OB_GROW(c->rules, c->cap_rules, c->n_rules + 1, RN_JS_MAX_RULES) != 0) {
		js_nomem(c);
		goto fail;
	}
	c->rules[c->n_rules] = (struct js_rule){name, body};
	uint32_t i = js_hash(name) & (RN_JS_SLOTS - 1);
	while (c->slots[i])
		i = (i + 1) & (RN_JS_SLOTS - 1);
	c->slots[i] = (uint32_t)++c->n_rules;
	return name;
fail:
	free(name);
	free(body);
	return NULL;
}

static bool js_is_prim(const char *name)
{
	if (strcmp(name, "root") == 0)
		return true;
	for (size_t i = 0; i < sizeof js_prims / sizeof js_prims[0]; i++)
		if (strcmp(js_prims[i].name, name) == 0)
			return true;
	return false;
}

/* the rule name made of name: runs of other characters than [a-zA-Z0-9-] as '-', at most RN_JS_NAME_MAX bytes,
 * a '-' after a primitive's name; NULL when out of memory */
static char *js_clean_name(const char *name)
{
	size_t n = strlen(name);
	if (n > RN_JS_NAME_MAX)
		n = RN_JS_NAME_MAX;
	char *s = malloc(n + 2);
	if (!s)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		char ch = name[i];
		bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-';
		if (ok)
			s[k++] = ch;
		else if (k == 0 || s[k - 1] != '-')
			s[k++] = '-';
	}
	if (k == 0)
		s[k++] = 'r';
	s[k] = 0;
	if (js_is_prim(s)) {
		s[k++] = '-';
		s[k] = 0;
	}
	return s;
}

/* The rule `name ::= body` (body taken, may be NULL to reserve the name). An existing rule of that name with the
 * same body is reused; another body gets the name with a number appended, as llama.cpp's _add_rule does. */
static const char *js_add(struct js *c, const char *name, char *body)
{
	if (c->failed) {
		free(body);
		return NULL;
	}
	char *base = js_clean_name(name);
	if (!base) {
		free(body);
		js_nomem(c);
		return NULL;
	}
	size_t blen = strlen(base);
	char *try = malloc(blen + 12);
	if (!try) {
		free(base);
		free(body);
		js_nomem(c);
		return NULL;
	}
	memcpy(try, base, blen + 1);
	for (unsigned i = 0;; i++) {
		if (i > 0)
			snprintf(try + blen, 12, "%u", i - 1);
		struct js_rule *r = js_find(c, try);
		if (!r) {
			free(base);
			return js_insert(c, try, body);
		}
		if (body && r->body && strcmp(r->body, body) == 0) {
			free(base);
			free(try);
			free(body);
			return r->name;
		}
		if (i > RN_JS_MAX_RULES) { /* cannot happen: fewer rules than that exist */
			free(base);
			free(try);
			free(body);
			js_fail(c, "schema needs more than %d grammar rules", RN_JS_MAX_RULES);
			return NULL;
		}
	}
}

/* adds primitive `name` and the rules it uses; returns its name (static) or NULL */
static const char *js_prim(struct js *c, const char *name)
{
	if (c->failed)
		return NULL;
	for (size_t i = 0; i < sizeof js_prims / sizeof js_prims[0]; i++) {
		const struct js_prim *p = &js_prims[i];
		if (strcmp(p->name, name) != 0)
			continue;
		if (js_find(c, name))
			return p->name;
		char *n = strdup(p->name), *b = strdup(p->body);
		if (!n || !b) {
			free(n);
			free(b);
			js_nomem(c);
			return NULL;
		}
		if (!js_insert(c, n, b))
			return NULL;
		for (const char *d = p->deps; *d;) {
			const char *e = strchr(d, ' ');
			size_t len = e ? (size_t)(e - d) : strlen(d);
			char dep[32];
			snprintf(dep, sizeof dep, "%.*s", (int)len, d);
			if (!js_prim(c, dep))
				return NULL;
			d += len;
			while (*d == ' ')
				d++;
		}
		return p->name;
	}
	js_fail(c, "internal: unknown primitive '%s'", name);
	return NULL;
}

/* name + "-" + suffix (or suffix alone for the root's name ""), into buf */
static const char *js_sub(char *buf, size_t size, const char *name, const char *suffix, size_t slen)
{
	if (*name)
		snprintf(buf, size, "%.*s-%.*s", RN_JS_NAME_MAX, name, (int)(slen < RN_JS_NAME_MAX ? slen : RN_JS_NAME_MAX),
			 suffix);
	else
		snprintf(buf, size, "%.*s", (int)(slen < RN_JS_NAME_MAX ? slen : RN_JS_NAME_MAX), suffix);
	return buf;
}

#define JS_NAME_BUF (2 * RN_JS_NAME_MAX + 48)

/* ---------------------------------------------------------------------------------------------- helpers */

/* appends the grammar literal of v written as compact JSON */
static bool js_json_literal(struct js *c, struct ob_buf *b, const struct ob_json *v)
{
	struct ob_jw w;
	ob_jw_init(&w, RN_JS_MAX_TEXT, OB_JW_NO_HTML_ESCAPE);
	ob_jw_value(&w, v, false);
	const char *s = ob_jw_str(&w);
	if (!s) {
		if (ob_jw_status(&w) == OB_JW_NOMEM)
			js_nomem(c);
		else
			js_fail(c, "a value that cannot be written as JSON");
		ob_jw_free(&w);
		return false;
	}
	rn_js_gbnf_literal(b, s, w.len);
	ob_jw_free(&w);
	return true;
}

static bool js_json_string_literal(struct js *c, struct ob_buf *b, const char *s, size_t n)
{
	struct ob_jw w;
	ob_jw_init(&w, RN_JS_MAX_TEXT, OB_JW_NO_HTML_ESCAPE);
	ob_jw_stringn(&w, s, n);
	const char *t = ob_jw_str(&w);
	if (!t) {
		js_nomem(c);
		ob_jw_free(&w);
		return false;
	}
	rn_js_gbnf_literal(b, t, w.len);
	ob_jw_free(&w);
	return true;
}

/* a non-negative integer keyword (minItems, maxLength, ...) up to RN_JS_MAX_REPEAT: -1 when absent, -2 failed */
static long js_count(struct js *c, const struct ob_json *s, const char *kw)
{
	const struct ob_json *v = ob_json_get(s, kw);
	if (!v)
		return -1;
	if (v->type != OB_JSON_NUMBER || v->number < 0 || v->number != floor(v->number)) {
		js_fail(c, "'%s' must be a non-negative integer", kw);
		return -2;
	}
	if (v->number > RN_JS_MAX_REPEAT) {
		js_fail(c, "'%s' %s is above the limit %d", kw, v->str, RN_JS_MAX_REPEAT);
		return -2;
	}
	return (long)v->number;
}

/* item repeated min..max times (max -1: unbounded), items separated by sep when given; llama.cpp's shapes */
static void js_repeat(struct ob_buf *b, const char *item, long min, long max, const char *sep)
{
	if (max == 0)
		return;
	if (min == 0 && max == 1) {
		ob_buf_printf(b, "%s?", item);
		return;
	}
	if (!sep) {
		if (min == 1 && max < 0)
			ob_buf_printf(b, "%s+", item);
		else if (min == 0 && max < 0)
			ob_buf_printf(b, "%s*", item);
		else if (max < 0)
			ob_buf_printf(b, "%s{%ld,}", item, min);
		else if (min == max)
			ob_buf_printf(b, "%s{%ld}", item, min);
		else
			ob_buf_printf(b, "%s{%ld,%ld}", item, min, max);
		return;
	}
	if (min == 0)
		ob_buf_putc(b, '(');
	ob_buf_printf(b, "%s ", item);
	size_t n = strlen(sep) + strlen(item) + 4;
	char *more = malloc(n);
	if (!more) {
		b->failed = true;
		return;
	}
	snprintf(more, n, "(%s %s)", sep, item);
	js_repeat(b, more, min > 0 ? min - 1 : 0, max < 0 ? -1 : max - 1, NULL);
	free(more);
	if (min == 0)
		ob_buf_puts(b, ")?");
}

/* --------------------------------------------------------------------------------------------- numbers */

static const char js_nines[] = "9999999999999999", js_zeros[] = "0000000000000000";

static void js_digit_class(struct ob_buf *b, char lo, char hi)
{
	if (lo == hi)
		ob_buf_printf(b, "[%c]", lo);
	else
		ob_buf_printf(b, "[%c-%c]", lo, hi);
}

static void js_any_digits(struct ob_buf *b, size_t n)
{
	if (n == 1)
		ob_buf_puts(b, "[0-9]");
	else
		ob_buf_printf(b, "[0-9]{%zu}", n);
}

/* the numbers lo..hi written with n digits each (lo <= hi, same length) */
static void js_range_same_len(struct ob_buf *b, const char *lo, const char *hi, size_t n)
{
	size_t i = 0;
	while (i < n && lo[i] == hi[i])
		i++;
	if (i > 0)
		ob_buf_printf(b, "\"%.*s\"", (int)i, lo);
	if (i == n)
		return;
	if (i > 0)
		ob_buf_putc(b, ' ');
	size_t rest = n - i - 1;
	if (rest == 0) {
		js_digit_class(b, lo[i], hi[i]);
		return;
	}
	bool lo_zeros = strncmp(lo + i + 1, js_zeros, rest) == 0, hi_nines = strncmp(hi + i + 1, js_nines, rest) == 0;
	char a = lo[i], z = hi[i];
	bool first = true;
	ob_buf_putc(b, '(');
	if (!lo_zeros) {
		ob_buf_printf(b, "[%c] (", a);
		js_range_same_len(b, lo + i + 1, js_nines, rest);
		ob_buf_putc(b, ')');
		a++;
		first = false;
	}
	char zz = hi_nines ? z : (char)(z - 1);
	if (a <= zz) {
		ob_buf_puts(b, first ? "" : " | ");
		js_digit_class(b, a, zz);
		ob_buf_putc(b, ' ');
		js_any_digits(b, rest);
		first = false;
	}
	if (!hi_nines) {
		ob_buf_puts(b, first ? "" : " | ");
		ob_buf_printf(b, "[%c] (", z);
		js_range_same_len(b, js_zeros, hi + i + 1, rest);
		ob_buf_putc(b, ')');
	}
	ob_buf_putc(b, ')');
}

/* the non-negative integers lo..hi (hi < 0: unbounded) without leading zeros, as alternatives */
static void js_int_range(struct ob_buf *b, int64_t lo, int64_t hi)
{
	char los[24], his[24];
	snprintf(los, sizeof los, "%" PRId64, lo);
	size_t dl = strlen(los), dh;
	if (hi >= 0) {
		snprintf(his, sizeof his, "%" PRId64, hi);
		dh = strlen(his);
	} else {
		dh = dl;
		snprintf(his, sizeof his, "%.*s", (int)dl, js_nines);
	}
	for (size_t d = dl; d <= dh; d++) {
		char a[24], z[24];
		if (d == dl)
			snprintf(a, sizeof a, "%s", los);
		else
			snprintf(a, sizeof a, "1%.*s", (int)(d - 1), js_zeros);
		if (d == dh)
			snprintf(z, sizeof z, "%s", his);
		else
			snprintf(z, sizeof z, "%.*s", (int)d, js_nines);
		if (d > dl)
			ob_buf_puts(b, " | ");
		js_range_same_len(b, a, z, d);
	}
	if (hi < 0 && dl < 16)
		ob_buf_printf(b, " | [1-9] [0-9]{%zu,15}", dl);
}

/* A bound as an exact decimal: sign, integer digits (no leading zero but "0") and fraction digits (no trailing
 * zero), read from the JSON literal so that 0.1 is 0.1 and not the nearest double. */
struct js_dec {
	bool neg;
	char ip[20];
	char fp[RN_JS_MAX_DECIMALS + 1];
};

/* the decimal of a JSON number literal whose magnitude is at most RN_JS_MAX_BOUND; false when it has more than
 * RN_JS_MAX_DECIMALS fraction digits */
static bool js_dec_parse(const char *lit, struct js_dec *d)
{
	char digits[64];
	size_t nd = 0, nint = 0;
	long exp = 0;
	const char *p = lit;
	d->neg = *p == '-';
	if (d->neg)
		p++;
	for (; *p >= '0' && *p <= '9'; p++, nint++)
		if (nd < sizeof digits)
			digits[nd++] = *p;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			if (nd < sizeof digits)
				digits[nd++] = *p;
	if (*p == 'e' || *p == 'E')
		exp = strtol(p + 1, NULL, 10);
	if (nd >= sizeof digits || exp > 40 || exp < -40)
		return false;
	long point = (long)nint + exp; /* digits[0 .. point) is the integer part */
	size_t ni = 0, nf = 0;
	for (long i = 0; i < point; i++) {
		char ch = i < (long)nd ? digits[i] : '0';
		if (ni == 0 && ch == '0')
			continue;
		if (ni + 1 >= sizeof d->ip)
			return false;
		d->ip[ni++] = ch;
	}
	if (ni == 0)
		d->ip[ni++] = '0';
	d->ip[ni] = 0;
	for (long i = point < 0 ? point : point; i < (long)nd; i++) {
		char ch = i < 0 ? '0' : digits[i];
		if (nf >= RN_JS_MAX_DECIMALS + 1)
			return false;
		d->fp[nf++] = ch;
		if (nf > RN_JS_MAX_DECIMALS) {
			/* acceptable only when the rest is zeros */
			bool zeros = true;
			for (long k = i; k < (long)nd; k++)
				zeros = zeros && (k < 0 || digits[k] == '0');
			if (!zeros)
				return false;
			nf--;
			break;
		}
	}
	while (nf > 0 && d->fp[nf - 1] == '0')
		nf--;
	d->fp[nf] = 0;
	if (strcmp(d->ip, "0") == 0 && nf == 0)
		d->neg = false; /* -0 is 0 */
	return true;
}

/* a bound keyword: false when absent (or a draft-4 boolean); fails unless a number within the limits */
static bool js_bound(struct js *c, const struct ob_json *s, const char *kw, struct js_dec *v)
{
	const struct ob_json *j = ob_json_get(s, kw);
	if (!j || j->type == OB_JSON_BOOL)
		return false;
	if (j->type != OB_JSON_NUMBER) {
		js_fail(c, "'%s' must be a number", kw);
		return false;
	}
	if (!(fabs(j->number) <= RN_JS_MAX_BOUND)) {
		js_refuse(c, "'%s' %s is beyond the supported magnitude 1e15", kw, j->str);
		return false;
	}
	if (!js_dec_parse(j->str, v)) {
		js_refuse(c, "'%s' %s has more than %d decimals", kw, j->str, RN_JS_MAX_DECIMALS);
		return false;
	}
	return true;
}

static int js_dec_cmp(const struct js_dec *a, const struct js_dec *b)
{
	if (a->neg != b->neg)
		return a->neg ? -1 : 1;
	size_t la = strlen(a->ip), lb = strlen(b->ip);
	int m = la != lb ? (la < lb ? -1 : 1) : strcmp(a->ip, b->ip);
	if (m == 0)
		m = strcmp(a->fp, b->fp); /* no trailing zeros: plain string order is the order of the fractions */
	m = m < 0 ? -1 : m > 0;
	return a->neg ? -m : m;
}

/* the lower (lower = true) or upper bound of s: draft 6+ exclusive numbers and draft 4 boolean flags */
static bool js_bounds_of(struct js *c, const struct ob_json *s, bool lower, struct js_dec *v, bool *excl)
{
	const char *inc = lower ? "minimum" : "maximum", *exc = lower ? "exclusiveMinimum" : "exclusiveMaximum";
	struct js_dec a, e;
	bool has_a = js_bound(c, s, inc, &a), has_e = js_bound(c, s, exc, &e);
	const struct ob_json *flag = ob_json_get(s, exc);
	if (has_a && flag && flag->type == OB_JSON_BOOL && flag->boolean) {
		*v = a;
		*excl = true;
		return true;
	}
	if (has_a && has_e) { /* the tighter one */
		int k = js_dec_cmp(&e, &a);
		bool e_wins = lower ? k >= 0 : k <= 0;
		*v = e_wins ? e : a;
		*excl = e_wins;
		return true;
	}
	if (has_a || has_e)
		*v = has_a ? a : e;
	*excl = has_e;
	return has_a || has_e;
}

/* The fraction digits f (a string, maybe empty, read as 0.f) with lo <(=) f <(=) hi (NULL: no bound; "" is 0),
 * at most budget digits, at least one when need. Appends an expression for the non-empty ones; returns 0 when no
 * string is allowed, 1 when only the empty one, 2 when the expression was written (it may also match empty). */
static int js_frac(struct ob_buf *b, const char *lo, bool lo_ex, const char *hi, bool hi_ex, int budget, bool need)
{
	if (lo && !*lo && !lo_ex)
		lo = NULL; /* f >= 0: any */
	bool can_end = !need && !lo && (!hi || *hi || !hi_ex);
	if (budget == 0)
		return can_end ? 1 : 0;
	if (!lo && !hi) {
		ob_buf_printf(b, "[0-9]{%d,%d}", need ? 1 : 0, budget);
		return 2;
	}
	if (!lo && !*hi && !hi_ex) { /* equal to the bound so far: zeros only */
		ob_buf_printf(b, "\"0\"{%d,%d}", need ? 1 : 0, budget);
		return 2;
	}
	if (!hi && !*lo) { /* equal to an exclusive lower bound so far: some digit must not be 0 */
		ob_buf_printf(b, "\"0\"{0,%d} [1-9] [0-9]{0,%d}", budget - 1, budget - 1);
		return 2;
	}
	size_t mark = b->len;
	int alts = 0;
	ob_buf_putc(b, '(');
	for (int d = 0; d <= 9;) {
		/* the bounds after digit d: NULL free, a pointer the rest to match; dead when out */
		const char *nl[10], *nh[10];
		bool dead[10];
		for (int k = d; k <= 9; k++) {
			int lo_d = lo ? (*lo ? *lo - '0' : 0) : -1, hi_d = hi ? (*hi ? *hi - '0' : 0) : 10;
			dead[k] = k < lo_d || k > hi_d;
			nl[k] = !lo || k > lo_d ? NULL : *lo ? lo + 1 : lo;
			nh[k] = !hi || k < hi_d ? NULL : *hi ? hi + 1 : hi;
		}
		int e = d;
		while (e < 9 && dead[e + 1] == dead[d] && nl[e + 1] == nl[d] && nh[e + 1] == nh[d])
			e++;
		if (!dead[d]) {
			struct ob_buf sub;
			js_buf(&sub);
			int r = js_frac(&sub, nl[d], lo_ex, nh[d], hi_ex, budget - 1, false);
			if (r) {
				ob_buf_puts(b, alts++ ? " | " : "");
				js_digit_class(b, (char)('0' + d), (char)('0' + e));
				if (r == 2 && sub.p)
					ob_buf_printf(b, " (%s)", sub.p);
			}
			if (sub.failed)
				b->failed = true;
			ob_buf_free(&sub);
		}
		d = e + 1;
	}
	if (!alts) {
		b->len = mark;
		if (b->p)
			b->p[mark] = 0;
		return can_end ? 1 : 0;
	}
	ob_buf_puts(b, can_end ? ")?" : ")");
	return 2;
}

/* integer part ip written literally, then a fraction within (lo, hi) as js_frac takes them; false when none */
static bool js_int_then_frac(struct ob_buf *b, const char *ip, const char *lo, bool lo_ex, const char *hi, bool hi_ex,
			     bool first)
{
	struct ob_buf f;
	js_buf(&f);
	int r = js_frac(&f, lo, lo_ex, hi, hi_ex, RN_JS_MAX_DECIMALS + 1, true);
	bool can_end = (!lo || (!*lo && !lo_ex)) && (!hi || *hi || !hi_ex);
	bool any = r == 2 || can_end;
	if (any) {
		ob_buf_printf(b, "%s\"%s\"", first ? "" : " | ", ip);
		if (r == 2)
			ob_buf_printf(b, can_end ? " (\".\" %s)?" : " \".\" %s", f.p);
	}
	if (f.failed)
		b->failed = true;
	ob_buf_free(&f);
	return any;
}

/* magnitudes x with lo <(=) x <(=) hi (hi NULL: unbounded) as alternatives; false when none */
static bool js_magnitude(struct ob_buf *b, const struct js_dec *lo, bool lo_ex, const struct js_dec *hi, bool hi_ex)
{
	int64_t li = strtoll(lo->ip, NULL, 10), hi_i = hi ? strtoll(hi->ip, NULL, 10) : -1;
	if (hi && hi_i == li)
		return js_int_then_frac(b, lo->ip, lo->fp, lo_ex, hi->fp, hi_ex, true);
	if (hi && hi_i < li)
		return false;
	bool any = js_int_then_frac(b, lo->ip, lo->fp, lo_ex, NULL, false, true);
	if (!hi || li + 1 <= hi_i - 1) {
		ob_buf_puts(b, any ? " | (" : "(");
		js_int_range(b, li + 1, hi ? hi_i - 1 : -1);
		ob_buf_puts(b, ") (\".\" decimal-part)?");
		any = true;
	}
	if (hi)
		any = js_int_then_frac(b, hi->ip, NULL, false, hi->fp, hi_ex, !any) || any;
	return any;
}

/* the smallest (lower) or largest integer within a bound */
static int64_t js_dec_int(const struct js_dec *d, bool excl, bool lower)
{
	int64_t i = strtoll(d->ip, NULL, 10);
	bool frac = d->fp[0] != 0;
	int64_t v = d->neg ? -i : i;
	/* v is the bound truncated toward zero */
	if (lower)
		return (frac && !d->neg) || (!frac && excl) ? v + 1 : v;
	return (frac && d->neg) || (!frac && excl) ? v - 1 : v;
}

static char *js_number(struct js *c, const struct ob_json *s, bool integer)
{
	struct js_dec lo = {0}, hi = {0};
	bool lo_ex = false, hi_ex = false;
	bool has_lo = js_bounds_of(c, s, true, &lo, &lo_ex), has_hi = js_bounds_of(c, s, false, &hi, &hi_ex);
	if (c->failed)
		return NULL;
	if (!has_lo && !has_hi)
		return js_prim(c, integer ? "integer" : "number") ? strdup(integer ? "integer" : "number") : NULL;
	struct ob_buf b;
	js_buf(&b);
	ob_buf_putc(&b, '(');
	bool any = false;
	if (integer) {
		/* exact: the integers in the interval */
		int64_t m = has_lo ? js_dec_int(&lo, lo_ex, true) : 0, M = has_hi ? js_dec_int(&hi, hi_ex, false) : 0;
		if (!(has_lo && has_hi && m > M)) {
			if (!has_lo || m < 0) { /* negatives: magnitudes max(1, -M) .. -m */
				ob_buf_puts(&b, "\"-\" (");
				js_int_range(&b, has_hi && M < -1 ? -M : 1, has_lo ? -m : -1);
				ob_buf_putc(&b, ')');
				any = true;
			}
			if (!has_hi || M >= 0) {
				ob_buf_puts(&b, any ? " | " : "");
				js_int_range(&b, has_lo && m > 0 ? m : 0, has_hi ? M : -1);
				any = true;
			}
		}
	} else {
		static const struct js_dec zero = {false, "0", ""};
		/* negatives: v = -x with x <(=) |lo| and x >(=) |hi| (x >(=) 0 when hi is not negative) */
		if (!has_lo || lo.neg) {
			size_t mark = b.len;
			ob_buf_puts(&b, "\"-\" (");
			struct js_dec xl = has_hi && hi.neg ? hi : zero, xh = lo;
			xl.neg = xh.neg = false;
			bool xl_ex = has_hi && (hi.neg || js_dec_cmp(&hi, &zero) == 0) ? hi_ex : false;
			if (js_magnitude(&b, &xl, xl_ex, has_lo ? &xh : NULL, lo_ex)) {
				ob_buf_putc(&b, ')');
				any = true;
			} else {
				b.len = mark;
				b.p[mark] = 0;
			}
		}
		/* non-negatives: x >(=) max(lo, 0), x <(=) hi */
		if (!has_hi || !hi.neg) {
			size_t mark = b.len;
			ob_buf_puts(&b, any ? " | (" : "(");
			bool lo_pos = has_lo && !lo.neg;
			if (js_magnitude(&b, lo_pos ? &lo : &zero, lo_pos ? lo_ex : false, has_hi ? &hi : NULL, hi_ex)) {
				ob_buf_putc(&b, ')');
				any = true;
			} else {
				b.len = mark;
				b.p[mark] = 0;
			}
		}
		js_prim(c, "decimal-part");
	}
	ob_buf_puts(&b, ") space");
	js_prim(c, "space");
	if (!any) {
		js_fail(c, "no %s lies between the minimum and the maximum", integer ? "integer" : "number");
		ob_buf_free(&b);
		return NULL;
	}
	return js_take(c, &b);
}

/* -------------------------------------------------------------------------------------------- visitors */

static char *js_body(struct js *c, const struct ob_json *s, const char *name, const char *type, bool no_null);

/* the rule for schema s named after name: an existing primitive when the body is one */
static const char *js_visit(struct js *c, const struct ob_json *s, const char *name)
{
	char *body = js_body(c, s, name, NULL, false);
	if (!body)
		return NULL;
	struct js_rule *r = js_find(c, body);
	if (r) { /* a body that is just a rule's name: use that rule */
		free(body);
		return r->name;
	}
	return js_add(c, name, body);
}

/* a keyword that constrains values, other than the allowed ones, present in s: its name or NULL */
static const char *js_constraint_besides(const struct ob_json *s, const char *a, const char *b)
{
	OB_JSON_FOREACH_MEMBER(k, v, s) {
		(void)v;
		const char *kw = k->str;
		if ((a && strcmp(kw, a) == 0) || (b && strcmp(kw, b) == 0) || js_in(js_descriptive, kw))
			continue;
		if (strcmp(kw, "type") == 0 || strcmp(kw, "enum") == 0 || strcmp(kw, "const") == 0 ||
		    strcmp(kw, "anyOf") == 0 || strcmp(kw, "oneOf") == 0 || strcmp(kw, "allOf") == 0 ||
		    strcmp(kw, "$ref") == 0 || js_in(js_kw_object, kw) || js_in(js_kw_array, kw) ||
		    js_in(js_kw_string, kw) || js_in(js_kw_number, kw))
			return kw;
	}
	return NULL;
}

static bool js_no_siblings(struct js *c, const struct ob_json *s, const char *kw, const char *also)
{
	const char *other = js_constraint_besides(s, kw, also);
	if (other) {
		js_refuse(c, "unsupported keyword '%s' beside '%s'", other, kw);
		return false;
	}
	return true;
}

/* the target of a local JSON pointer (after the '#'), or NULL */
static const struct ob_json *js_pointer(const struct ob_json *root, const char *p, size_t n)
{
	const struct ob_json *cur = root;
	size_t i = 0;
	char tok[512];
	while (i < n) {
		if (p[i] != '/')
			return NULL;
		i++;
		size_t k = 0;
		while (i < n && p[i] != '/') {
			if (k + 1 >= sizeof tok)
				return NULL;
			if (p[i] == '~' && i + 1 < n && (p[i + 1] == '0' || p[i + 1] == '1')) {
				tok[k++] = p[i + 1] == '0' ? '~' : '/';
				i += 2;
			} else {
				tok[k++] = p[i++];
			}
		}
		tok[k] = 0;
		if (cur->type == OB_JSON_OBJECT) {
			cur = ob_json_get(cur, tok);
		} else if (cur->type == OB_JSON_ARRAY) {
			char *end;
			unsigned long idx = strtoul(tok, &end, 10);
			cur = k && *end == 0 ? ob_json_at(cur, idx) : NULL;
		} else {
			cur = NULL;
		}
		if (!cur)
			return NULL;
	}
	return cur;
}

/* "#/$defs/NAME" not at the root: the first $defs (or definitions) anywhere holding NAME, as llama.cpp hoists
 * nested definitions to the root */
static const struct ob_json *js_hoisted(const struct ob_json *root, const char *p, size_t n)
{
	const char *kw;
	if (n > 7 && strncmp(p, "/$defs/", 7) == 0)
		kw = "$defs";
	else if (n > 13 && strncmp(p, "/definitions/", 13) == 0)
		kw = "definitions";
	else
		return NULL;
	const char *nm = p + strlen(kw) + 2;
	size_t nlen = n - strlen(kw) - 2;
	if (memchr(nm, '/', nlen) || memchr(nm, '~', nlen))
		return NULL;
	char key[512];
	if (nlen >= sizeof key)
		return NULL;
	memcpy(key, nm, nlen);
	key[nlen] = 0;
	for (uint32_t i = 0; i < root->span; i++) {
		const struct ob_json *d = root[i].type == OB_JSON_OBJECT ? ob_json_get(&root[i], kw) : NULL;
		const struct ob_json *t = d && d->type == OB_JSON_OBJECT ? ob_json_get(d, key) : NULL;
		if (t)
			return t;
	}
	return NULL;
}

/* the rule of a $ref: converted once, then reused (recursion included) */
static const char *js_ref(struct js *c, const struct ob_json *ref)
{
	if (ref->type != OB_JSON_STRING) {
		js_fail(c, "'$ref' must be a string");
		return NULL;
	}
	for (size_t i = 0; i < c->n_refs; i++) {
		if (strcmp(c->refs[i].ref, ref->str) != 0)
			continue;
		if (!c->refs[i].done && c->refs[i].guard == c->guard) {
			js_refuse(c, "'$ref' '%.200s' refers back to itself before any object or array", ref->str);
			return NULL;
		}
		return c->refs[i].rule;
	}
	if (ref->len == 0 || ref->str[0] != '#') {
		js_refuse(c, "unsupported remote '$ref' '%.200s' (only local references \"#/...\" are)", ref->str);
		return NULL;
	}
	const char *frag = ref->str + 1;
	size_t flen = ref->len - 1;
	const struct ob_json *target = js_pointer(c->root, frag, flen);
	if (!target)
		target = js_hoisted(c->root, frag, flen);
	if (!target) {
		js_fail(c, "unresolvable '$ref' '%.200s'", ref->str);
		return NULL;
	}
	char name[JS_NAME_BUF];
	snprintf(name, sizeof name, "ref%.*s", RN_JS_NAME_MAX, frag);
	const char *rule = js_add(c, name, NULL);
	char *copy = strdup(ref->str);
	if (!rule || !copy || OB_GROW(c->refs, c->cap_refs, c->n_refs + 1, RN_JS_MAX_RULES) != 0) {
		free(copy);
		js_nomem(c);
		return NULL;
	}
	size_t idx = c->n_refs++;
	c->refs[idx] = (struct js_ref){copy, rule, c->guard, false};
	/* errors inside the target name the target's place */
	struct ob_buf saved = c->path;
	js_buf(&c->path);
	ob_buf_append(&c->path, frag, flen);
	char *body = js_body(c, target, rule, NULL, false);
	ob_buf_free(&c->path);
	c->path = saved;
	if (!body)
		return NULL;
	struct js_rule *r = js_find(c, rule);
	c->text += strlen(body);
	if (c->text > RN_JS_MAX_TEXT) {
		free(body);
		js_fail(c, "grammar larger than %u bytes", RN_JS_MAX_TEXT);
		return NULL;
	}
	r->body = body;
	c->refs[idx].done = true;
	return rule;
}

/* one property of an object rule */
struct js_prop {
	const char *key;
	size_t len;
	const struct ob_json *schema; /* NULL: any value */
	const char *where;            /* "properties" or "required" for error places */
	bool required;
	const char *kv; /* its key-value rule */
};

struct js_props {
	struct js_prop *p;
	size_t n, cap;
};

static struct js_prop *js_props_find(struct js_props *ps, const char *key, size_t len)
{
	for (size_t i = 0; i < ps->n; i++)
		if (ps->p[i].len == len && memcmp(ps->p[i].key, key, len) == 0)
			return &ps->p[i];
	return NULL;
}

static bool js_props_add(struct js *c, struct js_props *ps, const char *key, size_t len, const struct ob_json *schema,
			 const char *where)
{
	if (ps->n >= RN_JS_MAX_RULES) {
		js_fail(c, "schema needs more than %d grammar rules", RN_JS_MAX_RULES);
		return false;
	}
	if (OB_GROW(ps->p, ps->cap, ps->n + 1, RN_JS_MAX_RULES) != 0) {
		js_nomem(c);
		return false;
	}
	ps->p[ps->n++] = (struct js_prop){key, len, schema, where, false, NULL};
	return true;
}

/* whether two parsed values are the same JSON (members in the same order) */
static bool js_json_equal(const struct ob_json *a, const struct ob_json *b)
{
	if (a->span != b->span)
		return false;
	for (uint32_t i = 0; i < a->span; i++) {
		const struct ob_json *x = a + i, *y = b + i;
		if (x->type != y->type || x->count != y->count || x->boolean != y->boolean || x->len != y->len)
			return false;
		if ((x->type == OB_JSON_STRING || x->type == OB_JSON_NUMBER) && memcmp(x->str, y->str, x->len) != 0)
			return false;
	}
	return true;
}

/* the members of s's properties, in order (a duplicated key once, with its last schema), marked required */
static bool js_props_collect(struct js *c, struct js_props *ps, const struct ob_json *s, bool allof)
{
	const struct ob_json *props = ob_json_get(s, "properties"), *req = ob_json_get(s, "required");
	if (props && props->type != OB_JSON_OBJECT) {
		js_fail(c, "'properties' must be an object");
		return false;
	}
	if (req && req->type != OB_JSON_ARRAY) {
		js_fail(c, "'required' must be an array");
		return false;
	}
	if (props) {
		OB_JSON_FOREACH_MEMBER(k, v, props) {
			if (ob_json_get(props, k->str) != v && k->len == strlen(k->str))
				continue; /* a later duplicate wins */
			struct js_prop *have = js_props_find(ps, k->str, k->len);
			if (have) {
				if (allof && have->schema && js_json_equal(v, have->schema))
					continue;
				js_refuse(c, "property '%.100s' defined by two members of 'allOf' (not supported)", k->str);
				return false;
			}
			if (!js_props_add(c, ps, k->str, k->len, v, "properties"))
				return false;
		}
	}
	if (req) {
		OB_JSON_FOREACH(r, req) {
			if (r->type != OB_JSON_STRING) {
				js_fail(c, "'required' must list strings");
				return false;
			}
			struct js_prop *p = js_props_find(ps, r->str, r->len);
			if (!p) {
				if (!js_props_add(c, ps, r->str, r->len, NULL, "required"))
					return false;
				p = &ps->p[ps->n - 1];
			}
			p->required = true;
		}
	}
	return true;
}

/* one trie node of the property names additional keys must differ from */
struct js_trie {
	uint32_t cp;
	uint32_t child, next; /* node indices, 0 = none (node 0 is the root) */
	bool end;
};

#define JS_TRIE_NEST 32 /* trie levels written inside one rule: the GBNF compiler bounds parentheses' nesting */

/* the alternatives after trie node `node`; a subtree deeper than JS_TRIE_NEST levels becomes a rule of its own */
static void js_trie_emit(struct js *c, struct ob_buf *b, const struct js_trie *t, uint32_t node, int depth,
			 const char *name)
{
	bool first = true;
	for (uint32_t ch = t[node].child; ch; ch = t[ch].next) {
		ob_buf_puts(b, first ? "[" : " | [");
		first = false;
		rn_js_gbnf_class_char(b, t[ch].cp);
		ob_buf_putc(b, ']');
		if (!t[ch].child) {
			ob_buf_puts(b, " key-char+");
			continue;
		}
		ob_buf_puts(b, " (");
		if (depth + 1 < JS_TRIE_NEST) {
			js_trie_emit(c, b, t, ch, depth + 1, name);
		} else {
			struct ob_buf sub;
			js_buf(&sub);
			js_trie_emit(c, &sub, t, ch, 0, name);
			char *body = js_take(c, &sub);
			const char *r = body ? js_add(c, name, body) : NULL;
			ob_buf_puts(b, r ? r : "");
		}
		ob_buf_puts(b, t[ch].end ? ")" : ")?");
	}
	ob_buf_puts(b, first ? "[^\\x22\\x5C\\x7F\\x00-\\x1F" : " | [^\\x22\\x5C\\x7F\\x00-\\x1F");
	for (uint32_t ch = t[node].child; ch; ch = t[ch].next)
		rn_js_gbnf_class_char(b, t[ch].cp);
	ob_buf_puts(b, "] key-char*");
}

/* a key rule for any string but the declared names (those JSON writes without escapes; the additional keys
 * are written without escapes too, so no escaped spelling of a declared name gets through) */
static char *js_not_names(struct js *c, const struct js_props *ps, const char *name)
{
	struct js_trie *t = NULL;
	size_t n = 1, cap = 0;
	if (OB_GROW(t, cap, 1, SIZE_MAX / sizeof *t) != 0) {
		js_nomem(c);
		return NULL;
	}
	t[0] = (struct js_trie){0, 0, 0, false};
	for (size_t i = 0; i < ps->n; i++) {
		const unsigned char *k = (const unsigned char *)ps->p[i].key;
		size_t len = ps->p[i].len;
		bool plain = len <= RN_JS_MAX_KEY_TRIE;
		for (size_t j = 0; j < len && plain; j++)
			plain = k[j] >= 0x20 && k[j] != '"' && k[j] != '\\' && k[j] != 0x7F;
		if (!plain) {
			if (len > RN_JS_MAX_KEY_TRIE) {
				js_fail(c, "property name longer than %d bytes beside 'additionalProperties'",
					RN_JS_MAX_KEY_TRIE);
				free(t);
				return NULL;
			}
			continue; /* an additional key never spells it */
		}
		uint32_t node = 0;
		for (size_t j = 0; j < len;) {
			size_t sz;
			uint32_t cp = ob_utf8_decode(k + j, len - j, &sz);
			j += sz;
			uint32_t *link = &t[node].child;
			while (*link && t[*link].cp < cp)
				link = &t[*link].next;
			if (!*link || t[*link].cp != cp) {
				if (OB_GROW(t, cap, n + 1, SIZE_MAX / sizeof *t) != 0) {
					js_nomem(c);
					free(t);
					return NULL;
				}
				link = &t[node].child; /* t moved: find the place again */
				while (*link && t[*link].cp < cp)
					link = &t[*link].next;
				t[n] = (struct js_trie){cp, 0, *link, false};
				*link = (uint32_t)n++;
			}
			node = *link;
		}
		t[node].end = true;
	}
	struct ob_buf b;
	js_buf(&b);
	ob_buf_puts(&b, "\"\\\"\" (");
	js_trie_emit(c, &b, t, 0, 0, name);
	ob_buf_puts(&b, t[0].end ? ") \"\\\"\" space" : ")? \"\\\"\" space");
	free(t);
	js_prim(c, "key-char");
	js_prim(c, "space");
	return js_take(c, &b);
}

/* optional property i written first (first_opt: after a comma, itself optional) */
static void js_optional_one(struct ob_buf *b, const struct js_prop *p, bool first_opt)
{
	bool star = p->key == NULL; /* additional properties */
	if (first_opt)
		ob_buf_printf(b, "( \",\" space %s )%s", p->kv, star ? "*" : "?");
	else if (star)
		ob_buf_printf(b, "%s ( \",\" space %s )*", p->kv, p->kv);
	else
		ob_buf_puts(b, p->kv);
}

/* llama.cpp's chain of optional properties: any of them may come first, each followed by any of the later
 * ones in order; rest[i] (i >= 1) is the rule for "opt[i] and after", each optional */
static bool js_optional_chain(struct js *c, struct ob_buf *out, struct js_prop **opt, size_t n, const char *name)
{
	const char **rest = calloc(n + 1, sizeof *rest);
	if (!rest) {
		js_nomem(c);
		return false;
	}
	char rn[JS_NAME_BUF];
	for (size_t i = n - 1; i >= 1 && !c->failed; i--) {
		struct ob_buf b;
		js_buf(&b);
		js_optional_one(&b, opt[i], true);
		if (rest[i + 1])
			ob_buf_printf(&b, " %s", rest[i + 1]);
		const struct js_prop *prev = opt[i - 1];
		js_sub(rn, sizeof rn, name, prev->key ? prev->key : "additional", prev->key ? prev->len : 10);
		size_t l = strlen(rn);
		snprintf(rn + l, sizeof rn - l, "-rest");
		char *body = js_take(c, &b);
		rest[i] = body ? js_add(c, rn, body) : NULL;
	}
	for (size_t i = 0; i < n && !c->failed; i++) {
		ob_buf_puts(out, i ? " | " : "");
		js_optional_one(out, opt[i], false);
		if (rest[i + 1])
			ob_buf_printf(out, " %s", rest[i + 1]);
	}
	free(rest);
	return !c->failed;
}

/* the object rule of a property list; addl: additionalProperties (NULL or false: none, true: any value) */
static char *js_object_rule(struct js *c, struct js_props *ps, const struct ob_json *addl, const char *name)
{
	char rn[JS_NAME_BUF];
	c->guard++;
	for (size_t i = 0; i < ps->n && !c->failed; i++) {
		struct js_prop *p = &ps->p[i];
		const char *vr;
		js_sub(rn, sizeof rn, name, p->key, p->len);
		if (p->schema) {
			size_t mark = js_path_push(c, p->where, p->key, p->len);
			vr = js_visit(c, p->schema, rn);
			js_path_pop(c, mark);
		} else if (addl && addl->type == OB_JSON_OBJECT) {
			size_t mark = js_path_push(c, "additionalProperties", NULL, 0);
			vr = js_visit(c, addl, rn);
			js_path_pop(c, mark);
		} else if (addl && addl->type == OB_JSON_BOOL && !addl->boolean) {
			js_fail(c, "required property '%.100s' is not allowed by 'additionalProperties': false", p->key);
			vr = NULL;
		} else {
			vr = js_prim(c, "value");
		}
		if (!vr)
			break;
		struct ob_buf b;
		js_buf(&b);
		if (!js_json_string_literal(c, &b, p->key, p->len)) {
			ob_buf_free(&b);
			break;
		}
		ob_buf_printf(&b, " space \":\" space %s", vr);
		size_t l = strlen(rn);
		snprintf(rn + l, sizeof rn - l, "-kv");
		char *body = js_take(c, &b);
		p->kv = body ? js_add(c, rn, body) : NULL;
	}
	struct js_prop star = {NULL, 0, NULL, NULL, false, NULL};
	bool more = addl && (addl->type == OB_JSON_OBJECT || (addl->type == OB_JSON_BOOL && addl->boolean));
	if (more && !c->failed) {
		const char *vr, *kr;
		if (addl->type == OB_JSON_OBJECT) {
			size_t mark = js_path_push(c, "additionalProperties", NULL, 0);
			vr = js_visit(c, addl, js_sub(rn, sizeof rn, name, "additional-value", 16));
			js_path_pop(c, mark);
		} else {
			vr = js_prim(c, "value");
		}
		if (ps->n == 0) {
			kr = js_prim(c, "string");
		} else {
			char kn[JS_NAME_BUF];
			js_sub(kn, sizeof kn, name, "additional-k-part", 17);
			char *kb = js_not_names(c, ps, kn);
			kr = kb ? js_add(c, js_sub(rn, sizeof rn, name, "additional-k", 12), kb) : NULL;
		}
		if (vr && kr) {
			struct ob_buf b;
			js_buf(&b);
			ob_buf_printf(&b, "%s \":\" space %s", kr, vr);
			char *body = js_take(c, &b);
			star.kv = body ? js_add(c, js_sub(rn, sizeof rn, name, "additional-kv", 13), body) : NULL;
		}
	}
	c->guard--;
	if (c->failed)
		return NULL;
	struct js_prop **opt = malloc((ps->n + 1) * sizeof *opt);
	if (!opt) {
		js_nomem(c);
		return NULL;
	}
	size_t n_opt = 0, n_req = 0;
	struct ob_buf b;
	js_buf(&b);
	ob_buf_puts(&b, "\"{\" space ");
	for (size_t i = 0; i < ps->n; i++) {
		if (ps->p[i].required)
			ob_buf_printf(&b, "%s%s", n_req++ ? " \",\" space " : "", ps->p[i].kv);
		else
			opt[n_opt++] = &ps->p[i];
	}
	if (more)
		opt[n_opt++] = &star;
	if (n_opt) {
		ob_buf_puts(&b, n_req ? " ( \",\" space ( " : "( ");
		js_optional_chain(c, &b, opt, n_opt, name);
		ob_buf_puts(&b, n_req ? " ) )?" : " )?");
	}
	ob_buf_puts(&b, " \"}\" space");
	free(opt);
	js_prim(c, "space");
	if (c->failed) {
		ob_buf_free(&b);
		return NULL;
	}
	return js_take(c, &b);
}

static char *js_object(struct js *c, const struct ob_json *s, const char *name)
{
	const struct ob_json *addl = ob_json_get(s, "additionalProperties");
	if (addl && addl->type != OB_JSON_BOOL && addl->type != OB_JSON_OBJECT) {
		js_fail(c, "'additionalProperties' must be a boolean or a schema");
		return NULL;
	}
	struct js_props ps = {0};
	if (!js_props_collect(c, &ps, s, false)) {
		free(ps.p);
		return NULL;
	}
	bool open = addl && (addl->type == OB_JSON_OBJECT || addl->boolean);
	const struct ob_json *unev = ob_json_get(s, "unevaluatedProperties");
	if (unev && !(unev->type == OB_JSON_BOOL && (unev->boolean || !open))) {
		js_refuse(c, "unsupported keyword 'unevaluatedProperties'");
		free(ps.p);
		return NULL;
	}
	size_t n_req = 0;
	for (size_t i = 0; i < ps.n; i++)
		n_req += ps.p[i].required;
	long minp = js_count(c, s, "minProperties"), maxp = js_count(c, s, "maxProperties");
	if (minp > (long)n_req) {
		js_refuse(c, "unsupported keyword 'minProperties' above the number of required properties");
		free(ps.p);
		return NULL;
	}
	if (maxp >= 0 && (open || maxp < (long)ps.n)) {
		js_refuse(c, "unsupported keyword 'maxProperties' below the number of properties allowed");
		free(ps.p);
		return NULL;
	}
	if (c->failed) {
		free(ps.p);
		return NULL;
	}
	char *body;
	if (ps.n == 0 && (!addl || (addl->type == OB_JSON_BOOL && addl->boolean)))
		body = js_prim(c, "object") ? strdup("object") : NULL; /* any object */
	else
		body = js_object_rule(c, &ps, addl, name);
	free(ps.p);
	if (!body && !c->failed)
		js_nomem(c);
	return body;
}

/* follows a chain of $refs to the schema they name (for allOf members) */
static const struct ob_json *js_deref(struct js *c, const struct ob_json *s)
{
	for (int hops = 0; s && s->type == OB_JSON_OBJECT; hops++) {
		const struct ob_json *r = ob_json_get(s, "$ref");
		if (!r)
			return s;
		if (hops > RN_JS_MAX_DEPTH || r->type != OB_JSON_STRING || r->len == 0 || r->str[0] != '#') {
			js_refuse(c, "unsupported '$ref' in 'allOf'");
			return NULL;
		}
		const struct ob_json *t = js_pointer(c->root, r->str + 1, r->len - 1);
		s = t ? t : js_hoisted(c->root, r->str + 1, r->len - 1);
		if (!s)
			js_fail(c, "unresolvable '$ref' '%.200s'", r->str);
	}
	return s;
}

static char *js_body_allof(struct js *c, const struct ob_json *s, const char *name)
{
	const struct ob_json *all = ob_json_get(s, "allOf");
	if (all->type != OB_JSON_ARRAY || all->count == 0) {
		js_fail(c, "'allOf' must be a non-empty array");
		return NULL;
	}
	if (all->count == 1) { /* pydantic's {"allOf": [{"$ref": ...}], "description": ...} */
		if (!js_no_siblings(c, s, "allOf", NULL))
			return NULL;
		size_t mark = js_path_index(c, "allOf", 0);
		char *body = js_body(c, ob_json_first(all), name, NULL, false);
		js_path_pop(c, mark);
		return body;
	}
	/* every member an object schema: their properties merged, required where any member requires them */
	struct js_props ps = {0};
	const char *bad = NULL;
	for (size_t i = 0; i <= all->count && !c->failed && !bad; i++) {
		const struct ob_json *m = i == 0 ? s : js_deref(c, ob_json_at(all, i - 1));
		size_t mark = i ? js_path_index(c, "allOf", i - 1) : c->path.len;
		if (m && m->type != OB_JSON_OBJECT) {
			js_fail(c, "an 'allOf' member must be an object schema");
		} else if (m) {
			OB_JSON_FOREACH_MEMBER(k, v, m) {
				const char *kw = k->str;
				if (js_in(js_descriptive, kw) || strcmp(kw, "properties") == 0 || strcmp(kw, "required") == 0 ||
				    (i == 0 && strcmp(kw, "allOf") == 0))
					continue;
				if (strcmp(kw, "type") == 0 && ob_json_str_eq(v, "object"))
					continue;
				if (strcmp(kw, "additionalProperties") == 0 && v->type == OB_JSON_BOOL && v->boolean)
					continue;
				if (js_in(js_unsupported, kw) || strcmp(kw, "type") == 0 || strcmp(kw, "enum") == 0 ||
				    strcmp(kw, "const") == 0 || strcmp(kw, "anyOf") == 0 || strcmp(kw, "oneOf") == 0 ||
				    strcmp(kw, "allOf") == 0 || strcmp(kw, "$ref") == 0 || js_in(js_kw_object, kw) ||
				    js_in(js_kw_array, kw) || js_in(js_kw_string, kw) || js_in(js_kw_number, kw)) {
					bad = kw;
					break;
				}
			}
			if (bad)
				js_refuse(c, "unsupported keyword '%s' in an 'allOf' of objects", bad);
			else
				js_props_collect(c, &ps, m, true);
		}
		js_path_pop(c, mark);
	}
	char *body = c->failed ? NULL : js_object_rule(c, &ps, NULL, name);
	free(ps.p);
	return body;
}

/* whether JSON value v is of schema type t */
static bool js_has_type(const struct ob_json *v, const char *t)
{
	switch (v->type) {
	case OB_JSON_NULL: return strcmp(t, "null") == 0;
	case OB_JSON_BOOL: return strcmp(t, "boolean") == 0;
	case OB_JSON_STRING: return strcmp(t, "string") == 0;
	case OB_JSON_ARRAY: return strcmp(t, "array") == 0;
	case OB_JSON_OBJECT: return strcmp(t, "object") == 0;
	case OB_JSON_NUMBER: return strcmp(t, "number") == 0 || (strcmp(t, "integer") == 0 && v->number == floor(v->number));
	}
	return false;
}

/* const / enum: the values as JSON literals (those of type t when t is given) */
static char *js_literals(struct js *c, const struct ob_json *s, const char *t)
{
	const struct ob_json *cv = ob_json_get(s, "const"), *ev = ob_json_get(s, "enum");
	const char *kw = cv ? "const" : "enum";
	if (!js_no_siblings(c, s, kw, "type"))
		return NULL;
	if (!cv && ev->type != OB_JSON_ARRAY) {
		js_fail(c, "'enum' must be an array");
		return NULL;
	}
	struct ob_buf b;
	js_buf(&b);
	ob_buf_putc(&b, '(');
	size_t n = 0;
	const struct ob_json *v = cv ? cv : ob_json_first(ev);
	for (; v; v = cv ? NULL : ob_json_after(ev, v)) {
		if (t && !js_has_type(v, t))
			continue;
		if (n++)
			ob_buf_puts(&b, " | ");
		if (!js_json_literal(c, &b, v)) {
			ob_buf_free(&b);
			return NULL;
		}
	}
	if (n == 0) {
		js_fail(c, "'%s' has no value%s%s", kw, t ? " of type " : "", t ? t : "");
		ob_buf_free(&b);
		return NULL;
	}
	ob_buf_puts(&b, ") space");
	js_prim(c, "space");
	return js_take(c, &b);
}

static char *js_array(struct js *c, const struct ob_json *s, const char *name)
{
	const struct ob_json *items = ob_json_get(s, "items"), *prefix = ob_json_get(s, "prefixItems");
	const struct ob_json *tuple = NULL, *rest = items;
	const char *tuple_kw = "prefixItems", *rest_kw = "items";
	if (prefix && prefix->type == OB_JSON_ARRAY) {
		tuple = prefix;
	} else if (items && items->type == OB_JSON_ARRAY) {
		tuple = items;
		tuple_kw = "items";
		rest = ob_json_get(s, "additionalItems");
		rest_kw = "additionalItems";
	} else if (prefix) {
		js_fail(c, "'prefixItems' must be an array");
		return NULL;
	}
	if (rest && rest->type != OB_JSON_BOOL && rest->type != OB_JSON_OBJECT) {
		js_fail(c, "'%s' must be a schema", rest_kw);
		return NULL;
	}
	const struct ob_json *u = ob_json_get(s, "uniqueItems");
	if (u && !(u->type == OB_JSON_BOOL && !u->boolean)) {
		js_refuse(c, "unsupported keyword 'uniqueItems'");
		return NULL;
	}
	long min = js_count(c, s, "minItems"), max = js_count(c, s, "maxItems");
	if (c->failed)
		return NULL;
	if (min < 0)
		min = 0;
	if (max >= 0 && max < min) {
		js_fail(c, "'maxItems' below 'minItems'");
		return NULL;
	}
	long n = tuple ? (long)tuple->count : 0;
	if (max >= 0 && max < n) {
		js_refuse(c, "'maxItems' below the number of '%s' (not supported)", tuple_kw);
		return NULL;
	}
	bool rest_none = rest && rest->type == OB_JSON_BOOL && !rest->boolean;
	if (tuple && !rest)
		rest_none = min <= n; /* further items allowed but not needed: none written */
	if (rest_none && min > n) {
		js_fail(c, "'minItems' above the number of items allowed");
		return NULL;
	}
	char rn[JS_NAME_BUF];
	struct ob_buf b;
	js_buf(&b);
	ob_buf_puts(&b, "\"[\" space ");
	c->guard++;
	for (long i = 0; i < n && !c->failed; i++) {
		char sfx[32];
		snprintf(sfx, sizeof sfx, "tuple-%ld", i);
		size_t mark = js_path_index(c, tuple_kw, (size_t)i);
		const char *r = js_visit(c, ob_json_at(tuple, (size_t)i), js_sub(rn, sizeof rn, name, sfx, strlen(sfx)));
		js_path_pop(c, mark);
		if (r)
			ob_buf_printf(&b, "%s%s", i ? " \",\" space " : "", r);
	}
	const char *item = NULL;
	if (!rest_none && !c->failed) {
		if (rest && rest->type == OB_JSON_OBJECT) {
			size_t mark = js_path_push(c, rest_kw, NULL, 0);
			item = js_visit(c, rest, js_sub(rn, sizeof rn, name, "item", 4));
			js_path_pop(c, mark);
		} else {
			item = js_prim(c, "value");
		}
	}
	c->guard--;
	if (item) {
		long rmin = min > n ? min - n : 0, rmax = max >= 0 ? max - n : -1;
		if (n > 0) {
			char sep[JS_NAME_BUF + 16];
			snprintf(sep, sizeof sep, "(\",\" space %s)", item);
			ob_buf_putc(&b, ' ');
			js_repeat(&b, sep, rmin, rmax, NULL);
		} else {
			js_repeat(&b, item, rmin, rmax, "\",\" space");
		}
	}
	ob_buf_puts(&b, " \"]\" space");
	js_prim(c, "space");
	if (c->failed) {
		ob_buf_free(&b);
		return NULL;
	}
	return js_take(c, &b);
}

static char *js_string(struct js *c, const struct ob_json *s)
{
	const struct ob_json *fmt = ob_json_get(s, "format"), *pat = ob_json_get(s, "pattern");
	const char *len_kw = ob_json_get(s, "minLength") ? "minLength" : ob_json_get(s, "maxLength") ? "maxLength" : NULL;
	bool has_len = len_kw != NULL;
	const char *prim = NULL;
	if (fmt && fmt->type == OB_JSON_STRING) {
		if (strcmp(fmt->str, "date") == 0 || strcmp(fmt->str, "time") == 0 || strcmp(fmt->str, "date-time") == 0)
			prim = fmt->str;
		else if (strncmp(fmt->str, "uuid", 4) == 0 && (fmt->len == 4 || (fmt->len == 5 && fmt->str[4] >= '1' && fmt->str[4] <= '5')))
			prim = "uuid";
	}
	if (prim) {
		if (pat || has_len) {
			js_refuse(c, "unsupported keyword '%s' beside 'format' '%s'", pat ? "pattern" : len_kw, fmt->str);
			return NULL;
		}
		char pn[32];
		snprintf(pn, sizeof pn, strcmp(prim, "uuid") ? "%s-string" : "%s", prim);
		const char *r = js_prim(c, pn);
		return r ? strdup(r) : NULL;
	}
	struct ob_buf b;
	js_buf(&b);
	if (pat) {
		if (pat->type != OB_JSON_STRING) {
			js_fail(c, "'pattern' must be a string");
			ob_buf_free(&b);
			return NULL;
		}
		if (has_len) {
			js_refuse(c, "unsupported keyword '%s' beside 'pattern'", len_kw);
			ob_buf_free(&b);
			return NULL;
		}
		char msg[200];
		bool uses_char = false;
		ob_buf_puts(&b, "\"\\\"\" ");
		size_t mark = b.len;
		if (!rn_js_regex_gbnf(&b, pat->str, pat->len, &uses_char, msg, sizeof msg)) {
			js_refuse(c, "'pattern' \"%.100s\": %s", pat->str, msg);
			ob_buf_free(&b);
			return NULL;
		}
		ob_buf_puts(&b, b.len > mark ? " \"\\\"\" space" : "\"\\\"\" space");
		if (uses_char)
			js_prim(c, "char");
		js_prim(c, "space");
		return js_take(c, &b);
	}
	if (has_len) {
		long min = js_count(c, s, "minLength"), max = js_count(c, s, "maxLength");
		if (c->failed) {
			ob_buf_free(&b);
			return NULL;
		}
		if (min < 0)
			min = 0;
		if (max >= 0 && max < min) {
			js_fail(c, "'maxLength' below 'minLength'");
			ob_buf_free(&b);
			return NULL;
		}
		ob_buf_puts(&b, "\"\\\"\" ");
		js_repeat(&b, "char", min, max, NULL);
		ob_buf_puts(&b, max == 0 ? "\"\\\"\" space" : " \"\\\"\" space");
		js_prim(c, "char");
		js_prim(c, "space");
		return js_take(c, &b);
	}
	ob_buf_free(&b);
	return js_prim(c, "string") ? strdup("string") : NULL;
}

/* the type of s when it has none: inferred from its keywords as llama.cpp does, NULL for any value */
static const char *js_infer_type(const struct ob_json *s)
{
	OB_JSON_FOREACH_MEMBER(k, v, s) {
		(void)v;
		if (js_in(js_kw_object, k->str))
			return "object";
		if (js_in(js_kw_array, k->str))
			return "array";
		if (js_in(js_kw_string, k->str))
			return "string";
		if (js_in(js_kw_number, k->str))
			return "number";
	}
	return NULL;
}

/* the rule and $ref tables' sizes, to take back what a left-out alternative added */
struct js_mark {
	size_t n_rules, n_refs, text;
};

static struct js_mark js_mark(const struct js *c)
{
	return (struct js_mark){c->n_rules, c->n_refs, c->text};
}

static void js_rollback(struct js *c, const struct js_mark *m)
{
	for (size_t i = m->n_rules; i < c->n_rules; i++) {
		free(c->rules[i].name);
		free(c->rules[i].body);
	}
	for (size_t i = m->n_refs; i < c->n_refs; i++)
		free(c->refs[i].ref);
	c->n_rules = m->n_rules;
	c->n_refs = m->n_refs;
	c->text = m->text;
	memset(c->slots, 0, RN_JS_SLOTS * sizeof *c->slots);
	for (size_t i = 0; i < c->n_rules; i++) {
		uint32_t k = js_hash(c->rules[i].name) & (RN_JS_SLOTS - 1);
		while (c->slots[k])
			k = (k + 1) & (RN_JS_SLOTS - 1);
		c->slots[k] = (uint32_t)(i + 1);
	}
	c->failed = false;
}

static char *js_union(struct js *c, const struct ob_json *s, const struct ob_json *alts, const char *kw,
		      const char *name)
{
	if (alts->type != OB_JSON_ARRAY || alts->count == 0) {
		js_fail(c, "'%s' must be a non-empty array", kw);
		return NULL;
	}
	if (!js_no_siblings(c, s, kw, NULL))
		return NULL;
	struct ob_buf b;
	js_buf(&b);
	size_t i = 0;
	char rn[JS_NAME_BUF];
	size_t n = 0;
	struct rn_error first = {0}, before = {0};
	bool skipped = false;
	if (c->err)
		before = *c->err;
	OB_JSON_FOREACH(a, alts) {
		char sfx[48];
		snprintf(sfx, sizeof sfx, *name ? "%zu" : "alternative-%zu", i);
		size_t mark = js_path_index(c, kw, i++);
		struct js_mark m = js_mark(c);
		const char *r = js_visit(c, a, js_sub(rn, sizeof rn, name, sfx, strlen(sfx)));
		js_path_pop(c, mark);
		if (!r && c->skippable) { /* an alternative the grammar cannot express: left out */
			if (!skipped && c->err)
				first = *c->err;
			if (c->err)
				*c->err = before;
			skipped = true;
			js_rollback(c, &m);
			continue;
		}
		if (!r)
			break;
		ob_buf_printf(&b, "%s%s", n++ ? " | " : "", r);
	}
	if (!c->failed && n == 0) { /* every alternative left out: the first one's refusal */
		c->failed = true;
		if (c->err)
			*c->err = first;
	}
	if (c->failed) {
		ob_buf_free(&b);
		return NULL;
	}
	return js_take(c, &b);
}

/* the body of the rule for schema s (type: a type from a "type" array, in place of s's own) */
static char *js_body(struct js *c, const struct ob_json *s, const char *name, const char *type, bool no_null)
{
	if (c->failed)
		return NULL;
	if (c->depth >= RN_JS_MAX_DEPTH) {
		js_fail(c, "schema nested deeper than %d levels", RN_JS_MAX_DEPTH);
		return NULL;
	}
	if (s->type == OB_JSON_BOOL) {
		if (!s->boolean) {
			js_fail(c, "schema 'false' admits no value");
			return NULL;
		}
		return js_prim(c, "value") ? strdup("value") : NULL;
	}
	if (s->type != OB_JSON_OBJECT) {
		js_fail(c, "a schema must be an object or a boolean, not %s", ob_json_type_name(s));
		return NULL;
	}
	OB_JSON_FOREACH_MEMBER(k, v, s) {
		(void)v;
		if (js_in(js_unsupported, k->str)) {
			js_refuse(c, "unsupported keyword '%s'", k->str);
			return NULL;
		}
	}
	c->depth++;
	char *body = NULL;
	char rn[JS_NAME_BUF];
	const struct ob_json *nullable = ob_json_get(s, "nullable"), *t = ob_json_get(s, "type");
	const struct ob_json *x;
	if (!no_null && nullable && nullable->type == OB_JSON_BOOL && nullable->boolean) {
		/* OpenAPI's nullable: the schema or null */
		char *inner = js_body(c, s, name, type, true);
		const char *r = inner ? js_add(c, js_sub(rn, sizeof rn, name, "nonnull", 7), inner) : NULL;
		struct ob_buf b;
		js_buf(&b);
		if (r && js_prim(c, "null"))
			ob_buf_printf(&b, "%s | null", r);
		body = c->failed ? (ob_buf_free(&b), NULL) : js_take(c, &b);
	} else if ((x = ob_json_get(s, "$ref"))) {
		if (js_no_siblings(c, s, "$ref", NULL)) {
			const char *r = js_ref(c, x);
			body = r ? strdup(r) : NULL;
		}
	} else if (ob_json_get(s, "anyOf") && ob_json_get(s, "oneOf")) {
		js_refuse(c, "unsupported keyword 'oneOf' beside 'anyOf'");
	} else if ((x = ob_json_get(s, "anyOf")) || (x = ob_json_get(s, "oneOf"))) {
		/* oneOf as anyOf, as llama.cpp does: exclusivity cannot be expressed */
		body = js_union(c, s, x, ob_json_get(s, "anyOf") ? "anyOf" : "oneOf", name);
	} else if (ob_json_get(s, "allOf")) {
		body = js_body_allof(c, s, name);
	} else if (!type && t && t->type == OB_JSON_ARRAY) {
		/* ["string", "null"]: one alternative per type */
		struct ob_buf b;
		js_buf(&b);
		size_t i = 0, n = 0;
		bool lits = ob_json_get(s, "enum") || ob_json_get(s, "const");
		OB_JSON_FOREACH(tv, t) {
			if (tv->type != OB_JSON_STRING) {
				js_fail(c, "'type' must list type names");
				break;
			}
			bool has = true;
			if (lits) { /* enum values of another type: no alternative */
				const struct ob_json *cv = ob_json_get(s, "const"), *ev = ob_json_get(s, "enum");
				has = false;
				if (cv)
					has = js_has_type(cv, tv->str);
				else if (ev->type == OB_JSON_ARRAY)
					OB_JSON_FOREACH(e, ev) has = has || js_has_type(e, tv->str);
				else
					has = true;
			}
			if (!has) {
				i++;
				continue;
			}
			char sfx[48];
			snprintf(sfx, sizeof sfx, *name ? "%zu" : "alternative-%zu", i++);
			char *inner = js_body(c, s, js_sub(rn, sizeof rn, name, sfx, strlen(sfx)), tv->str, true);
			const char *r = inner ? js_add(c, rn, inner) : NULL;
			if (!r)
				break;
			ob_buf_printf(&b, "%s%s", n++ ? " | " : "", r);
		}
		if (!c->failed && n == 0)
			js_fail(c, "'type' lists no type%s", lits ? " of the 'enum' values" : "");
		body = c->failed ? (ob_buf_free(&b), NULL) : js_take(c, &b);
	} else {
		const char *ty = type ? type : t && t->type == OB_JSON_STRING ? t->str : NULL;
		if (t && !type && t->type != OB_JSON_STRING)
			js_fail(c, "'type' must be a string or an array of strings");
		else if (ob_json_get(s, "const") || ob_json_get(s, "enum"))
			body = js_literals(c, s, ty);
		else {
			if (!ty)
				ty = js_infer_type(s);
			if (!ty)
				body = js_prim(c, "value") ? strdup("value") : NULL;
			else if (strcmp(ty, "object") == 0)
				body = js_object(c, s, name);
			else if (strcmp(ty, "array") == 0)
				body = js_array(c, s, name);
			else if (strcmp(ty, "string") == 0)
				body = js_string(c, s);
			else if (strcmp(ty, "integer") == 0 || strcmp(ty, "number") == 0)
				body = js_number(c, s, ty[0] == 'i');
			else if (strcmp(ty, "boolean") == 0 || strcmp(ty, "null") == 0)
				body = js_prim(c, ty) ? strdup(ty) : NULL;
			else
				js_fail(c, "unknown type '%.40s'", ty);
			if (!body && !c->failed)
				js_nomem(c);
		}
	}
	c->depth--;
	if (c->failed) {
		free(body);
		return NULL;
	}
	return body;
}

static int js_rule_cmp(const void *a, const void *b)
{
	const struct js_rule *p = a, *q = b;
	return strcmp(p->name, q->name);
}

char *rn_json_schema_to_gbnf(const struct ob_json *schema, struct rn_error *err)
{
	struct js c = {.root = schema, .err = err};
	c.slots = calloc(RN_JS_SLOTS, sizeof *c.slots);
	js_buf(&c.path);
	char *out = NULL;
	if (!c.slots || !ob_buf_puts(&c.path, "")) {
		js_nomem(&c);
		goto done;
	}
	js_prim(&c, "space");
	char *root = js_body(&c, schema, "", NULL, false);
	if (root) { /* "root" is never taken: js_clean_name renames a property's "root" to "root-" */
		char *rn = strdup("root");
		if (rn)
			js_insert(&c, rn, root);
		else {
			free(root);
			js_nomem(&c);
		}
	}
	if (c.failed)
		goto done;
	qsort(c.rules, c.n_rules, sizeof c.rules[0], js_rule_cmp);
	struct ob_buf b;
	ob_buf_init(&b, RN_JS_MAX_TEXT + 4096);
	for (size_t i = 0; i < c.n_rules; i++)
		ob_buf_printf(&b, "%s ::= %s\n", c.rules[i].name, c.rules[i].body ? c.rules[i].body : "");
	out = js_take(&c, &b);
	if (out) {
		/* the grammar must compile: repetitions and groups can pass the compiler's limits on rules and elements
		 * although the text is within its size (20 strings of maxLength 4096 make 80k rules) */
		struct rn_error cerr = {0};
		struct rn_grammar *g = rn_grammar_compile(out, strlen(out), NULL, &cerr);
		if (!g) {
			free(out);
			out = NULL;
			if (cerr.code == RN_ERR_NOMEM) {
				js_nomem(&c);
			} else {
				ob_buf_reset(&c.path);
				js_fail(&c, "the grammar passes the GBNF compiler's limits (%.300s)", cerr.msg);
			}
		}
		rn_grammar_free(g);
	}
done:
	for (size_t i = 0; i < c.n_rules; i++) {
		free(c.rules[i].name);
		free(c.rules[i].body);
	}
	for (size_t i = 0; i < c.n_refs; i++)
		free(c.refs[i].ref);
	free(c.rules);
	free(c.refs);
	free(c.slots);
	ob_buf_free(&c.path);
	return out;
}
