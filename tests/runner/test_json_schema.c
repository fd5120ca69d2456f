/* tests/runner/test_json_schema.c — rn_json_schema_to_gbnf and rn_grammar_json: golden GBNF for small schemas
 * (tests/data/schema_golden), the refusals with their exact messages (tests/data/schema_refusals.json), the
 * limits on hostile schemas, regex patterns, and the corpus (tests/data/schemas, one NAME.json each): every schema's grammar
 * compiles, and through a matcher every "valid" instance (compact and pretty-printed with a 2-space indent, as
 * models write it) is accepted to its end and every "invalid" one is not. Prints the time of schema -> GBNF ->
 * compiled grammar for a 50-property schema (no assertion on it: the machine is shared).
 */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/json.h"
#include "runner/grammar/grammar.h"
#include "runner/grammar/json_schema.h"
#include "tests/check.h"
#include "tests/testmodel.h"

static struct ob_json_doc *parse(const char *text, size_t len)
{
	struct ob_json_error je;
	struct ob_json_doc *d = ob_json_parse(text, len, &je);
	if (!d)
		fprintf(stderr, "JSON error %s at %zu in: %.200s\n", je.message, je.offset, text);
	return d;
}

static struct ob_json_doc *load(const char *path)
{
	struct ob_buf b;
	ob_buf_init(&b, 0);
	if (!ob_buf_read_file(&b, path)) {
		fprintf(stderr, "cannot read %s\n", path);
		ob_buf_free(&b);
		return NULL;
	}
	struct ob_json_doc *d = parse(b.p, b.len);
	ob_buf_free(&b);
	return d;
}

/* the GBNF of schema text, or NULL with *err */
static char *convert(const char *schema, struct rn_error *err)
{
	struct ob_json_doc *d = parse(schema, strlen(schema));
	if (!d)
		return NULL;
	char *g = rn_json_schema_to_gbnf(ob_json_root(d), err);
	ob_json_free(d);
	return g;
}

/* Python's json.dumps(v, indent=2, ensure_ascii=False) */
static void pretty(struct ob_buf *b, const struct ob_json *v, int depth)
{
	struct ob_jw w;
	if (v->type == OB_JSON_ARRAY || v->type == OB_JSON_OBJECT) {
		bool obj = v->type == OB_JSON_OBJECT;
		if (v->count == 0) {
			ob_buf_puts(b, obj ? "{}" : "[]");
			return;
		}
		ob_buf_putc(b, obj ? '{' : '[');
		bool first = true;
		for (const struct ob_json *e = ob_json_first(v); e; e = ob_json_after(v, obj ? e + 1 : e)) {
			ob_buf_puts(b, first ? "\n" : ",\n");
			first = false;
			ob_buf_pad(b, ' ', (size_t)(depth + 1) * 2);
			if (obj) {
				pretty(b, e, depth + 1);
				ob_buf_puts(b, ": ");
				pretty(b, e + 1, depth + 1);
			} else {
				pretty(b, e, depth + 1);
			}
		}
		ob_buf_putc(b, '\n');
		ob_buf_pad(b, ' ', (size_t)depth * 2);
		ob_buf_putc(b, obj ? '}' : ']');
		return;
	}
	ob_jw_init(&w, 0, OB_JW_NO_HTML_ESCAPE);
	ob_jw_value(&w, v, false);
	ob_buf_puts(b, ob_jw_str(&w));
	ob_jw_free(&w);
}

static char *compact(const struct ob_json *v)
{
	struct ob_jw w;
	ob_jw_init(&w, 0, OB_JW_NO_HTML_ESCAPE);
	ob_jw_value(&w, v, false);
	size_t n;
	char *s = ob_jw_take(&w, &n);
	ob_jw_free(&w);
	return s;
}

/* whether g takes all of text and may end there */
static bool matches(const struct rn_grammar *g, const char *text)
{
	struct rn_error err;
	struct rn_grammar_state *st = rn_grammar_state_new(g, NULL, &err);
	if (!st)
		return false;
	bool ok = rn_grammar_state_accept_bytes(st, text, strlen(text)) && rn_grammar_state_can_end(st, NULL);
	rn_grammar_state_free(st);
	return ok;
}

static struct rn_grammar *compile(const char *gbnf, const char *what)
{
	struct rn_error err = {0};
	struct rn_grammar *g = rn_grammar_compile(gbnf, strlen(gbnf), NULL, &err);
	CHECKF(g != NULL, "%s: the grammar does not compile: %s\n%s", what, err.msg, gbnf);
	return g;
}

/* ----------------------------------------------------------------------------------------------- corpus */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void check_instances(const struct rn_grammar *g, const struct ob_json *list, bool want, const char *name)
{
	if (!list)
		return;
	OB_JSON_FOREACH(inst, list) {
		char *c = compact(inst);
		struct ob_buf p;
		ob_buf_init(&p, 0);
		pretty(&p, inst, 0);
		CHECKF(matches(g, c) == want, "%s: %s instance %s", name, want ? "valid" : "invalid", c);
		if (want || inst->type == OB_JSON_OBJECT || inst->type == OB_JSON_ARRAY)
			CHECKF(matches(g, p.p) == want, "%s: %s instance pretty-printed:\n%s", name, want ? "valid" : "invalid", p.p);
		ob_buf_free(&p);
		free(c);
	}
}

/* the NAME.json files of folder rel of the source tree, sorted, into names (at most max; free() each) and
 * the folder's path into *dir (free() it); returns the count */
static size_t list_json(const char *rel, char **names, size_t max, char **dir)
{
	*dir = strdup(tm_srcpath(rel));
	DIR *dp = opendir(*dir);
	CHECKF(dp != NULL, "cannot open %s", *dir);
	size_t n = 0;
	struct dirent *de;
	while (dp && (de = readdir(dp)) && n < max) {
		size_t l = strlen(de->d_name);
		if (l > 5 && strcmp(de->d_name + l - 5, ".json") == 0)
			names[n++] = strdup(de->d_name);
	}
	if (dp)
		closedir(dp);
	qsort(names, n, sizeof names[0], cmp_str);
	return n;
}

static void test_corpus(void)
{
	char *names[256], *d;
	size_t n = list_json("tests/data/schemas", names, 256, &d);
	CHECKF(n >= 40, "only %zu schemas in the corpus", n);
	size_t n_valid = 0, n_invalid = 0;
	for (size_t i = 0; i < n; i++) {
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", d, names[i]);
		struct ob_json_doc *doc = load(path);
		CHECKF(doc != NULL, "%s does not parse", names[i]);
		if (!doc) {
			free(names[i]);
			continue;
		}
		const struct ob_json *root = ob_json_root(doc), *schema = ob_json_get(root, "schema");
		const struct ob_json *valid = ob_json_get(root, "valid"), *invalid = ob_json_get(root, "invalid");
		CHECKF(schema && valid && invalid && ob_json_get(root, "prompt"), "%s: schema, valid, invalid, prompt", names[i]);
		struct rn_error err = {0};
		char *gbnf = schema ? rn_json_schema_to_gbnf(schema, &err) : NULL;
		CHECKF(gbnf != NULL, "%s: %s", names[i], err.msg);
		struct rn_grammar *g = gbnf ? compile(gbnf, names[i]) : NULL;
		if (g) {
			check_instances(g, valid, true, names[i]);
			check_instances(g, invalid, false, names[i]);
			n_valid += valid ? valid->count : 0;
			n_invalid += invalid ? invalid->count : 0;
		}
		rn_grammar_free(g);
		free(gbnf);
		ob_json_free(doc);
		free(names[i]);
	}
	printf("corpus: %zu schemas, %zu valid and %zu invalid instances\n", n, n_valid, n_invalid);
	free(d);
}

/* ----------------------------------------------------------------------------------------------- golden */

static void test_golden(void)
{
	char *names[256], *d;
	size_t n = list_json("tests/data/schema_golden", names, 256, &d);
	CHECKF(n >= 5, "only %zu golden schemas", n);
	for (size_t i = 0; i < n; i++) {
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", d, names[i]);
		struct ob_json_doc *doc = load(path);
		CHECKF(doc != NULL, "%s", path);
		free(names[i]);
		if (!doc)
			continue;
		const struct ob_json *root = ob_json_root(doc), *lines = ob_json_get(root, "gbnf");
		struct ob_buf want;
		ob_buf_init(&want, 0);
		if (lines)
			OB_JSON_FOREACH(line, lines) {
				ob_buf_append(&want, line->str, line->len);
				ob_buf_putc(&want, '\n');
			}
		struct rn_error err = {0};
		char *got = rn_json_schema_to_gbnf(ob_json_get(root, "schema"), &err);
		CHECKF(got && want.p && strcmp(got, want.p) == 0, "%s: got\n%s\nwant\n%s", path, got ? got : err.msg,
		       want.p ? want.p : "");
		struct rn_grammar *g = got ? compile(got, path) : NULL;
		rn_grammar_free(g);
		free(got);
		ob_buf_free(&want);
		ob_json_free(doc);
	}
	free(d);
}

/* ------------------------------------------------------------------------------------------- refusals */

static void test_refusals(void)
{
	struct ob_json_doc *doc = load(tm_srcpath("tests/data/schema_refusals.json"));
	CHECK(doc != NULL);
	if (!doc)
		return;
	const struct ob_json *list = ob_json_root(doc);
	int n = 0;
	OB_JSON_FOREACH(c, list) {
		const struct ob_json *schema = ob_json_get(c, "schema"), *want = ob_json_get(c, "error");
		struct rn_error err = {0};
		char *g = rn_json_schema_to_gbnf(schema, &err);
		char *s = compact(schema);
		CHECKF(g == NULL && err.code == RN_ERR_INVALID_ARG && strcmp(err.msg, want->str) == 0,
		       "schema %s\n  got:  %s\n  want: %s", s, g ? g : err.msg, want->str);
		free(s);
		free(g);
		n++;
	}
	CHECKF(n >= 30, "only %d refusal cases", n);
	ob_json_free(doc);
}

/* ----------------------------------------------------------------------------------------------- limits */

static void expect_refusal(const char *schema, const char *part)
{
	struct rn_error err = {0};
	char *g = convert(schema, &err);
	CHECKF(!g && err.code == RN_ERR_INVALID_ARG && strstr(err.msg, part), "%.120s...: %s (want '%s')", schema,
	       g ? "converted" : err.msg, part);
	free(g);
}

static void test_limits(void)
{
	struct ob_buf b;
	/* nesting deeper than the converter follows */
	ob_buf_init(&b, 0);
	for (int i = 0; i < 200; i++)
		ob_buf_puts(&b, "{\"type\":\"object\",\"properties\":{\"a\":");
	ob_buf_puts(&b, "{\"type\":\"string\"}");
	for (int i = 0; i < 200; i++)
		ob_buf_puts(&b, "},\"required\":[\"a\"]}");
	expect_refusal(b.p, "schema nested deeper than 64 levels");
	ob_buf_free(&b);

	/* more rules than allowed: 5000 properties */
	ob_buf_init(&b, 0);
	ob_buf_puts(&b, "{\"type\":\"object\",\"properties\":{");
	for (int i = 0; i < 5000; i++)
		ob_buf_printf(&b, "%s\"p%d\":{\"type\":\"integer\",\"minimum\":%d}", i ? "," : "", i, i);
	ob_buf_puts(&b, "}}");
	expect_refusal(b.p, "grammar rules");
	ob_buf_free(&b);

	/* a grammar past the size ceiling: many long enum strings */
	ob_buf_init(&b, 0);
	ob_buf_puts(&b, "{\"enum\":[");
	for (int i = 0; i < 3000; i++) {
		ob_buf_printf(&b, "%s\"", i ? "," : "");
		ob_buf_pad(&b, 'x', 400);
		ob_buf_printf(&b, "%d\"", i);
	}
	ob_buf_puts(&b, "]}");
	expect_refusal(b.p, "grammar larger than 1048576 bytes");
	ob_buf_free(&b);

	expect_refusal("{\"type\":\"array\",\"maxItems\":1000000}", "'maxItems' 1000000 is above the limit 4096");
	expect_refusal("{\"type\":\"string\",\"minLength\":5000}", "'minLength' 5000 is above the limit 4096");
	expect_refusal("{\"type\":\"string\",\"pattern\":\"^a{1,99999}$\"}", "regex repetition count above the limit 4096");
	expect_refusal("{\"type\":\"integer\",\"maximum\":1e300}", "beyond the supported magnitude");
	/* a recursive $ref that reads no input first */
	expect_refusal("{\"$defs\":{\"a\":{\"allOf\":[{\"$ref\":\"#/$defs/a\"}]}},\"$ref\":\"#/$defs/a\"}",
		       "refers back to itself before any object or array");

	/* a long declared name beside additionalProperties: the key trie is cut into rules (the GBNF compiler bounds
	 * the nesting of parentheses; found by fuzz_schema) */
	char key[301];
	memset(key, '-', 300);
	key[0] = 'k';
	key[300] = 0;
	ob_buf_init(&b, 0);
	ob_buf_printf(&b, "{\"type\":\"object\",\"properties\":{\"%s\":{\"type\":\"integer\"}},"
			  "\"additionalProperties\":{\"type\":\"string\"}}", key);
	struct rn_error kerr = {0};
	char *kg = convert(b.p, &kerr);
	CHECKF(kg != NULL, "%s", kerr.msg);
	struct rn_grammar *kgr = kg ? compile(kg, "long key") : NULL;
	if (kgr) {
		struct ob_buf inst;
		ob_buf_init(&inst, 0);
		ob_buf_printf(&inst, "{\"%s\":1}", key);
		CHECK(matches(kgr, inst.p));
		ob_buf_reset(&inst);
		ob_buf_printf(&inst, "{\"%s-\":\"x\",\"%.150s\":\"y\"}", key, key);
		CHECK(matches(kgr, inst.p));
		ob_buf_reset(&inst);
		ob_buf_printf(&inst, "{\"%s\":\"x\"}", key);
		CHECK(!matches(kgr, inst.p));
		ob_buf_free(&inst);
	}
	rn_grammar_free(kgr);
	free(kg);
	ob_buf_free(&b);

	/* repetitions within the counts' limit but past the compiler's rules together: refused, not a grammar that
	 * does not compile */
	ob_buf_init(&b, 0);
	ob_buf_puts(&b, "{\"type\":\"object\",\"properties\":{");
	for (int i = 0; i < 20; i++)
		ob_buf_printf(&b, "%s\"s%d\":{\"type\":\"string\",\"maxLength\":4096}", i ? "," : "", i);
	ob_buf_puts(&b, "}}");
	expect_refusal(b.p, "the grammar passes the GBNF compiler's limits (grammar: ");
	ob_buf_free(&b);

	/* the largest accepted counts still make a grammar that compiles */
	struct rn_error err = {0};
	char *g = convert("{\"type\":\"object\",\"properties\":{\"s\":{\"type\":\"string\",\"minLength\":4096,\"maxLength\":4096},"
			  "\"a\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"maxItems\":4096}}}",
			  &err);
	CHECKF(g != NULL, "%s", err.msg);
	struct rn_grammar *gr = g ? compile(g, "max counts") : NULL;
	rn_grammar_free(gr);
	free(g);
}

/* --------------------------------------------------------------------------------------- value checks */

struct vcase {
	const char *schema;
	const char *yes[6];
	const char *no[6];
};

/* schemas and JSON texts their grammar must take, or not */
static const struct vcase vcases[] = {
	/* regex: escapes and the JSON spelling of characters */
	{"{\"type\":\"string\",\"pattern\":\"^a\\\"b$\"}", {"\"a\\\"b\""}, {"\"ab\"", "\"a\"b\""}},
	{"{\"type\":\"string\",\"pattern\":\"^a\\\\\\\\b$\"}", {"\"a\\\\b\""}, {"\"ab\""}},
	{"{\"type\":\"string\",\"pattern\":\"^\\\\d+(\\\\.\\\\d{1,2})?$\"}", {"\"12\"", "\"3.14\""}, {"\"3.\"", "\"3.141\"", "\"x\""}},
	{"{\"type\":\"string\",\"pattern\":\"^[^abc]{2}$\"}", {"\"xy\"", "\"\\\"z\"", "\"é!\""}, {"\"ax\"", "\"x\""}},
	{"{\"type\":\"string\",\"pattern\":\"^\\\\w+@\\\\w+\\\\.com$\"}", {"\"me@site.com\""}, {"\"me@site.org\"", "\"@site.com\""}},
	{"{\"type\":\"string\",\"pattern\":\"^(?:ab|cd)*$\"}", {"\"\"", "\"abcd\"", "\"cdab\""}, {"\"abc\""}},
	{"{\"type\":\"string\",\"pattern\":\"^.{3}$\"}", {"\"abc\"", "\"a\\tb\""}, {"\"ab\"", "\"abcd\"", "\"a\\nb\""}},
	{"{\"type\":\"string\",\"pattern\":\"x\"}", {"\"x\"", "\"axb\"", "\"ab x\""}, {"\"ab\""}},
	{"{\"type\":\"string\",\"pattern\":\"^[a-c-]+?$\"}", {"\"a-b\"", "\"-\""}, {"\"d\""}},
	{"{\"type\":\"string\",\"pattern\":\"^\\\\s$\"}", {"\" \"", "\"\\n\"", "\"\\t\""}, {"\"a\""}},
	{"{\"type\":\"string\",\"pattern\":\"^[\\\\u00e0-\\\\u00ff]+$\"}", {"\"àé\""}, {"\"a\""}},
	{"{\"type\":\"string\",\"pattern\":\"^a{2,}b{0}c?$\"}", {"\"aa\"", "\"aaac\""}, {"\"a\"", "\"aab\""}},
	{"{\"type\":\"string\",\"pattern\":\"^$\"}", {"\"\""}, {"\"a\""}},
	{"{\"type\":\"string\",\"pattern\":\"^(a|)b$\"}", {"\"ab\"", "\"b\""}, {"\"aab\""}},
	/* numbers */
	{"{\"type\":\"integer\",\"minimum\":-5,\"maximum\":12}", {"-5", "0", "12", "7"}, {"-6", "13", "-0.5", "1e1", "007"}},
	{"{\"type\":\"integer\",\"minimum\":100}", {"100", "999", "123456"}, {"99", "-100", "0"}},
	{"{\"type\":\"integer\",\"maximum\":-3}", {"-3", "-1000"}, {"-2", "0", "5"}},
	{"{\"type\":\"integer\",\"minimum\":0}", {"0", "1", "10", "9999999999999999"}, {"-1", "01"}},
	{"{\"type\":\"integer\",\"exclusiveMinimum\":1.5,\"exclusiveMaximum\":4}", {"2", "3"}, {"1", "4"}},
	{"{\"type\":\"integer\",\"minimum\":0,\"exclusiveMinimum\":true,\"maximum\":3}", {"1", "3"}, {"0"}},
	{"{\"type\":\"number\",\"minimum\":-1,\"maximum\":1}", {"-1", "-0.5", "0", "0.999", "1", "1.00"}, {"-1.01", "1.01", "2", "-2"}},
	{"{\"type\":\"number\",\"exclusiveMinimum\":0}", {"0.001", "5", "123.4"}, {"0", "0.0", "-1"}},
	{"{\"type\":\"number\",\"exclusiveMaximum\":0}", {"-0.001", "-5"}, {"0", "1", "0.5"}},
	{"{\"type\":\"number\",\"minimum\":2,\"exclusiveMaximum\":3}", {"2", "2.5", "2.999"}, {"3", "3.0", "1.9"}},
	{"{\"type\":\"number\",\"minimum\":0.25,\"maximum\":2.5}", {"0.25", "0.3", "1", "2.5", "2.50", "0.250001"}, {"0.2", "0.24999", "2.51", "3", "0", "-1"}},
	{"{\"type\":\"number\",\"exclusiveMinimum\":-1.5,\"exclusiveMaximum\":-0.5}", {"-1", "-0.6", "-1.49", "-0.51"}, {"-1.5", "-0.5", "0", "-2", "-0.4"}},
	{"{\"type\":\"number\",\"minimum\":1.05,\"maximum\":1.2}", {"1.05", "1.1", "1.2", "1.199"}, {"1.04", "1.0", "1", "1.21", "1.3"}},
	{"{\"type\":\"number\",\"exclusiveMaximum\":1e-3}", {"0.0009", "-5", "0"}, {"0.001", "0.0011", "1"}},
	{"{\"type\":\"integer\",\"minimum\":-2.5,\"maximum\":2.5}", {"-2", "2", "0"}, {"-3", "3"}},
	/* strings, formats, literals */
	{"{\"type\":\"string\",\"minLength\":1,\"maxLength\":3}", {"\"a\"", "\"abc\"", "\"\\u00e9\\n\""}, {"\"\"", "\"abcd\""}},
	{"{\"type\":\"string\",\"maxLength\":0}", {"\"\""}, {"\"a\""}},
	{"{\"type\":\"string\",\"format\":\"date-time\"}", {"\"2024-02-29T12:00:00Z\"", "\"2024-02-29T12:00:00.123+05:30\""}, {"\"2024-02-29\""}},
	{"{\"type\":\"string\",\"format\":\"email\"}", {"\"a@b.c\"", "\"anything\""}, {"1"}},
	{"{\"const\":{\"a\":[1,\"<&>\"]}}", {"{\"a\":[1,\"<&>\"]}"}, {"{\"a\":[1]}"}},
	{"{\"enum\":[\"a\",1.5,null],\"type\":[\"string\",\"null\"]}", {"\"a\"", "null"}, {"1.5"}},
	{"{\"type\":\"string\",\"nullable\":true}", {"\"x\"", "null"}, {"1"}},
	{"true", {"1", "\"s\"", "{\"a\":[]}", "null"}, {"tru"}},
	{"{}", {"[1,{}]"}, {"x"}},
	/* an alternative the grammar cannot express is left out (pydantic's Decimal: a number, or a string with a
	 * lookahead pattern) */
	{"{\"anyOf\":[{\"type\":\"number\"},{\"type\":\"string\",\"pattern\":\"^(?!^[-+.]*$)[+-]?0*\\\\d*\\\\.?\\\\d*$\"}]}",
	 {"1.5", "-2"}, {"\"1.5\"", "null"}},
	{"{\"oneOf\":[{\"type\":\"integer\",\"multipleOf\":3},{\"$ref\":\"https://x.org/s.json\"},{\"type\":\"boolean\"}]}",
	 {"true"}, {"3", "\"a\""}},
	/* ... as is one that refers back to itself before reading anything */
	{"{\"$defs\":{\"a\":{\"anyOf\":[{\"$ref\":\"#/$defs/a\"},{\"type\":\"null\"}]}},\"$ref\":\"#/$defs/a\"}", {"null"}, {"1"}},
	/* objects */
	{"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"ab\":{\"type\":\"integer\"}},\"additionalProperties\":{\"type\":\"string\"}}",
	 {"{\"a\":1,\"ab\":2}", "{\"a\":1,\"x\":\"y\",\"abc\":\"z\"}", "{\"b\":\"y\"}", "{}", "{\"\":\"e\"}"},
	 {"{\"a\":\"s\"}", "{\"ab\":\"s\"}", "{\"x\":1}"}},
	{"{\"type\":\"object\",\"required\":[\"id\"]}", {"{\"id\":[1]}", "{\"id\":null}"}, {"{}", "{\"x\":1}"}},
	{"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"null\"}},\"minProperties\":1,\"required\":[\"a\"]}", {"{\"a\":null}"}, {"{}"}},
	/* arrays */
	{"{\"type\":\"array\",\"prefixItems\":[{\"type\":\"integer\"}],\"items\":{\"type\":\"string\"},\"maxItems\":3}",
	 {"[1]", "[1,\"a\"]", "[1,\"a\",\"b\"]"}, {"[]", "[\"a\"]", "[1,2]", "[1,\"a\",\"b\",\"c\"]"}},
	{"{\"type\":\"array\",\"items\":[{\"type\":\"integer\"},{\"type\":\"boolean\"}],\"minItems\":3}",
	 {"[1,true,null]", "[1,false,{}]"}, {"[1,true]"}},
	{"{\"type\":\"array\",\"uniqueItems\":false,\"minItems\":2}", {"[1,1]"}, {"[1]"}},
};

static void test_values(void)
{
	for (size_t i = 0; i < sizeof vcases / sizeof vcases[0]; i++) {
		const struct vcase *vc = &vcases[i];
		struct rn_error err = {0};
		char *gbnf = convert(vc->schema, &err);
		CHECKF(gbnf != NULL, "%s: %s", vc->schema, err.msg);
		struct rn_grammar *g = gbnf ? compile(gbnf, vc->schema) : NULL;
		for (size_t k = 0; g && k < 6 && vc->yes[k]; k++)
			CHECKF(matches(g, vc->yes[k]), "%s must take %s\n%s", vc->schema, vc->yes[k], gbnf);
		for (size_t k = 0; g && k < 6 && vc->no[k]; k++)
			CHECKF(!matches(g, vc->no[k]), "%s must not take %s\n%s", vc->schema, vc->no[k], gbnf);
		rn_grammar_free(g);
		free(gbnf);
	}
}

static void test_json_grammar(void)
{
	struct rn_grammar *g = compile(rn_grammar_json, "rn_grammar_json");
	if (!g)
		return;
	static const char *const yes[] = {"{}", "[]", "{\"a\":[1,-2.5e3,{\"b\":null}],\"c\":\"\\u00e9\\n\"}",
					  "[\n  1,\n  true\n]", "{ \"a\" : false }"};
	static const char *const no[] = {"1", "\"x\"", "null", "{\"a\":1", "[1,]", "{a:1}", " {}", "{\"a\":01}"};
	for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
		CHECKF(matches(g, yes[i]), "json grammar must take %s", yes[i]);
	for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
		CHECKF(!matches(g, no[i]), "json grammar must not take %s", no[i]);
	rn_grammar_free(g);
}

/* ------------------------------------------------------------------------------------------------ speed */

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* schema -> GBNF -> compiled grammar for 50 properties of mixed kinds (a third optional): best of 20 runs */
static void bench_50_properties(void)
{
	static const char *const kinds[] = {
		"{\"type\":\"string\",\"maxLength\":40}",
		"{\"type\":\"integer\",\"minimum\":0,\"maximum\":1000}",
		"{\"type\":\"number\"}",
		"{\"type\":\"boolean\"}",
		"{\"type\":\"string\",\"enum\":[\"red\",\"green\",\"blue\"]}",
		"{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"maxItems\":5}",
		"{\"type\":\"string\",\"format\":\"date\"}",
		"{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"number\"},\"y\":{\"type\":\"number\"}},\"required\":[\"x\",\"y\"]}",
		"{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]}",
		"{\"type\":\"string\",\"pattern\":\"^[A-Z]{2}[0-9]{4}$\"}",
	};
	struct ob_buf b;
	ob_buf_init(&b, 0);
	ob_buf_puts(&b, "{\"type\":\"object\",\"properties\":{");
	for (int i = 0; i < 50; i++)
		ob_buf_printf(&b, "%s\"field_%d\":%s", i ? "," : "", i, kinds[i % 10]);
	ob_buf_puts(&b, "},\"required\":[");
	for (int i = 0, n = 0; i < 50; i++)
		if (i % 3 != 2)
			ob_buf_printf(&b, "%s\"field_%d\"", n++ ? "," : "", i);
	ob_buf_puts(&b, "]}");
	struct ob_json_doc *d = parse(b.p, b.len);
	CHECK(d != NULL);
	double best_conv = 1e9, best_all = 1e9;
	size_t glen = 0;
	for (int run = 0; d && run < 20; run++) {
		struct rn_error err = {0};
		double t0 = now_ms();
		char *gbnf = rn_json_schema_to_gbnf(ob_json_root(d), &err);
		double t1 = now_ms();
		struct rn_grammar *g = gbnf ? rn_grammar_compile(gbnf, strlen(gbnf), NULL, &err) : NULL;
		double t2 = now_ms();
		CHECKF(g != NULL, "50 properties: %s", err.msg);
		if (t1 - t0 < best_conv)
			best_conv = t1 - t0;
		if (t2 - t0 < best_all)
			best_all = t2 - t0;
		glen = gbnf ? strlen(gbnf) : 0;
		rn_grammar_free(g);
		free(gbnf);
	}
	printf("50-property schema: schema->GBNF %.3f ms, schema->GBNF->compiled grammar %.3f ms (best of 20; %zu bytes of GBNF)\n",
	       best_conv, best_all, glen);
	ob_json_free(d);
	ob_buf_free(&b);
}

/* --match: for each stdin line {"schema": S, "inst": [JSON texts]} prints "R " and a 1 or 0 per text (the grammar
 * takes it whole), or "E message" when S is refused (tests/runner/json_schema_differential.py drives it) */
static int match_lines(void)
{
	static char line[1 << 22];
	while (fgets(line, sizeof line, stdin)) {
		struct ob_json_doc *d = parse(line, strlen(line));
		if (!d)
			return 1;
		const struct ob_json *r = ob_json_root(d), *insts = ob_json_get(r, "inst");
		struct rn_error err = {0};
		char *gbnf = rn_json_schema_to_gbnf(ob_json_get(r, "schema"), &err);
		struct rn_grammar *g = gbnf ? rn_grammar_compile(gbnf, strlen(gbnf), NULL, &err) : NULL;
		if (!g) {
			printf("E %s\n", err.msg);
		} else {
			fputs("R ", stdout);
			if (insts)
				OB_JSON_FOREACH(t, insts) putchar(matches(g, t->str) ? '1' : '0');
			putchar('\n');
		}
		fflush(stdout);
		rn_grammar_free(g);
		free(gbnf);
		ob_json_free(d);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--bench") == 0) {
		bench_50_properties();
		return check_done();
	}
	if (argc > 1 && strcmp(argv[1], "--match") == 0)
		return match_lines();
	test_json_grammar();
	test_golden();
	test_refusals();
	test_limits();
	test_values();
	test_corpus();
	bench_50_properties();
	return check_done();
}
