/* tests/jinja/test_jinja.c — the Jinja engine against Python jinja2 in transformers' configuration.
 *
 * 1. Every template of ../shared/testdata/jinja-templates with every conversation of its conversations.json,
 *    compared byte for byte with the goldens of tests/data/jinja/golden (made by make_golden.py with jinja2):
 *    where jinja2 raised, orun must fail with the same exception class and message.
 * 2. Engine cases (tests/data/jinja/cases.json): one template and its variables each, with jinja2's output or
 *    error, for the semantics chat templates lean on (scoping, tests, filters, methods, Python printing).
 * 3. Hostile templates: each limit is an error naming it, not a hang or a crash; the API's misuse answers.
 * Set JINJA_TEST_VERBOSE=1 to print every mismatch in full.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "modelfile/jinja/jinja.h"
#include "tests/check.h"
#include "tests/testmodel.h"

#define FIXED_NOW 1768478400 /* 2026-01-15 12:00:00 UTC, the clock the goldens were rendered with */

static int verbose;

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *p = NULL;
	size_t n = 0, cap = 0;
	for (;;) {
		if (n + 65536 + 1 > cap) {
			cap = (n + 65536 + 1) * 2;
			char *q = realloc(p, cap);
			if (!q) {
				free(p);
				fclose(f);
				return NULL;
			}
			p = q;
		}
		size_t got = fread(p + n, 1, 65536, f);
		n += got;
		if (got < 65536)
			break;
	}
	fclose(f);
	p[n] = 0;
	if (len)
		*len = n;
	return p;
}

static struct ob_json_doc *read_json(const char *path)
{
	size_t n;
	char *text = read_file(path, &n);
	if (!text)
		return NULL;
	struct ob_json_error err;
	struct ob_json_doc *doc = ob_json_parse(text, n, &err);
	if (!doc)
		fprintf(stderr, "%s: %s at %zu\n", path, err.message, err.offset);
	free(text);
	return doc;
}

static const struct mf_jinja_options opts = {.has_now = true, .now = FIXED_NOW};

/* Renders and compares with want (output) or want_err ("Class: message"). Returns true when it matches. */
static bool render_matches(const char *what, const struct mf_jinja *t, const struct mf_jinja_vars *v, const char *want,
			   size_t want_len, const char *want_err)
{
	char *out = NULL;
	size_t len = 0;
	struct mf_jinja_error err;
	int rc = mf_jinja_render(t, v, &opts, &out, &len, &err);
	bool ok;
	char got_err[600] = "";
	if (rc)
		snprintf(got_err, sizeof got_err, "%s: %s", err.type, err.message);
	if (want_err)
		ok = rc != 0 && strcmp(got_err, want_err) == 0;
	else
		ok = rc == 0 && len == want_len && memcmp(out, want, len) == 0;
	if (!ok) {
		if (rc)
			fprintf(stderr, "MISMATCH %s: got error \"%s\" (line %d)", what, got_err, err.line);
		else
			fprintf(stderr, "MISMATCH %s: got %zu bytes", what, len);
		if (want_err)
			fprintf(stderr, ", want error \"%s\"\n", want_err);
		else
			fprintf(stderr, ", want %zu bytes\n", want_len);
		if (verbose && !rc) {
			size_t i = 0;
			while (i < len && i < want_len && out[i] == want[i])
				i++;
			fprintf(stderr, "  first difference at byte %zu\n--- got:\n%.*s\n--- want:\n%.*s\n---\n", i, (int)len,
				out, want ? (int)want_len : 0, want ? want : "");
		}
	}
	free(out);
	return ok;
}

/* ------------------------------------------------------------------------------------------ 1. corpus */

static void test_corpus(void)
{
	char dir[4096];
	snprintf(dir, sizeof dir, "%s", check_shared_path("testdata/jinja-templates"));
	char path[4600];
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	struct ob_json_doc *manifest = read_json(path);
	snprintf(path, sizeof path, "%s/conversations.json", dir);
	struct ob_json_doc *convs = read_json(path);
	CHECK(manifest && convs);
	if (!manifest || !convs)
		return;
	int pairs = 0, passed = 0, templates = 0;
	OB_JSON_FOREACH(entry, ob_json_root(manifest))
	{
		const struct ob_json *name = ob_json_get(entry, "name"), *file = ob_json_get(entry, "file");
		snprintf(path, sizeof path, "%s/%s", dir, file->str);
		size_t len;
		char *src = read_file(path, &len);
		CHECKF(src, "cannot read %s", path);
		if (!src)
			continue;
		templates++;
		struct mf_jinja *t = NULL;
		struct mf_jinja_error perr;
		int rc = mf_jinja_parse(src, len, &t, &perr);
		CHECKF(rc == 0, "%s: %s: %s (line %d)", name->str, perr.type, perr.message, perr.line);
		free(src);
		OB_JSON_FOREACH(conv, ob_json_root(convs))
		{
			const struct ob_json *cname = ob_json_get(conv, "name");
			pairs++;
			char gold[4600], what[300];
			snprintf(what, sizeof what, "%s × %s", name->str, cname->str);
			snprintf(gold, sizeof gold, "%s/%s/%s.out", tm_srcpath("tests/data/jinja/golden"), name->str, cname->str);
			size_t want_len = 0;
			char *want = read_file(gold, &want_len), *want_err = NULL;
			if (!want) {
				snprintf(gold, sizeof gold, "%s/%s/%s.err", tm_srcpath("tests/data/jinja/golden"), name->str,
					 cname->str);
				want_err = read_file(gold, NULL);
				if (want_err && *want_err)
					want_err[strlen(want_err) - 1] = 0; /* the newline */
			}
			CHECKF(want || want_err, "no golden for %s", what);
			if (!t || (!want && !want_err)) {
				free(want);
				free(want_err);
				continue;
			}
			struct mf_jinja_vars *v = mf_jinja_vars_new();
			const struct ob_json *bos = ob_json_get(entry, "bos_token"), *eos = ob_json_get(entry, "eos_token");
			const struct ob_json *agp = ob_json_get(conv, "add_generation_prompt");
			struct mf_jinja_chat chat = {
				.messages = ob_json_get(conv, "messages"),
				.tools = ob_json_get(conv, "tools"),
				.add_generation_prompt = agp && agp->boolean,
				.bos_token = bos->str,
				.eos_token = eos->str,
				.extra = ob_json_get(conv, "extra"),
			};
			CHECK(v && mf_jinja_vars_set_chat(v, &chat) == 0);
			bool ok = render_matches(what, t, v, want, want_len, want_err);
			CHECKF(ok, "%s", what);
			passed += ok;
			mf_jinja_vars_free(v);
			free(want);
			free(want_err);
		}
		mf_jinja_free(t);
	}
	fprintf(stderr, "jinja corpus: %d of %d template x conversation pairs match jinja2 (%d templates)\n", passed, pairs,
		templates);
	CHECK(pairs == 42 * 12);
	ob_json_free(manifest);
	ob_json_free(convs);
}

/* ------------------------------------------------------------------------------------------ 2. cases */

static void test_cases(void)
{
	struct ob_json_doc *doc = read_json(tm_srcpath("tests/data/jinja/cases.json"));
	CHECK(doc);
	if (!doc)
		return;
	int n = 0, passed = 0;
	OB_JSON_FOREACH(c, ob_json_root(doc))
	{
		const struct ob_json *tpl = ob_json_get(c, "template"), *vars = ob_json_get(c, "vars");
		const struct ob_json *out = ob_json_get(c, "output"), *err = ob_json_get(c, "error");
		char what[200];
		snprintf(what, sizeof what, "case %d %.150s", n, tpl->str);
		n++;
		struct mf_jinja *t = NULL;
		struct mf_jinja_error perr;
		int rc = mf_jinja_parse(tpl->str, tpl->len, &t, &perr);
		if (rc) {
			char got[600];
			snprintf(got, sizeof got, "%s: %s", perr.type, perr.message);
			bool ok = err && strncmp(err->str, "TemplateSyntaxError", 19) == 0 && rc == MF_JINJA_ESYNTAX;
			ok = ok || (err && strcmp(got, err->str) == 0);
			CHECKF(ok, "%s: parse failed: %s (line %d)", what, got, perr.line);
			passed += ok;
			continue;
		}
		struct mf_jinja_vars *v = mf_jinja_vars_new();
		CHECK(v && (!vars || mf_jinja_vars_set_object(v, vars) == 0));
		bool ok = render_matches(what, t, v, out ? out->str : NULL, out ? out->len : 0, err ? err->str : NULL);
		CHECKF(ok, "%s", what);
		passed += ok;
		mf_jinja_vars_free(v);
		mf_jinja_free(t);
	}
	fprintf(stderr, "jinja cases: %d of %d match jinja2\n", passed, n);
	ob_json_free(doc);
}

/* ------------------------------------------------------------------------------------------ 3. limits */

static void expect_error(const char *src, int status, const char *needle)
{
	struct mf_jinja *t = NULL;
	struct mf_jinja_error err;
	int rc = mf_jinja_parse(src, strlen(src), &t, &err);
	if (rc == 0) {
		char *out = NULL;
		size_t len;
		rc = mf_jinja_render(t, NULL, &opts, &out, &len, &err);
		free(out);
		mf_jinja_free(t);
	}
	CHECKF(rc == status, "%.60s: status %d, want %d (%s)", src, rc, status, err.message);
	CHECKF(rc == 0 || strstr(err.message, needle), "%.60s: message \"%s\" lacks \"%s\"", src, err.message, needle);
}

static void test_limits(void)
{
	expect_error("{% set ns = namespace(s='x') %}{% for i in range(100000) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
		     MF_JINJA_ELIMIT, "limit");
	expect_error("{% set r = range(100000) %}{% for i in r %}{% for j in r %}{% endfor %}{% endfor %}", MF_JINJA_ELIMIT,
		     "step limit");
	expect_error("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", MF_JINJA_ELIMIT,
		     "limit");
	expect_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", MF_JINJA_ELIMIT, "recursion limit");
	expect_error("{{ 'x' * 100000000 }}", MF_JINJA_ELIMIT, "limit");
	/* blocks nested in recursive macros: an error, not a stack overflow (run with ulimit -s 2048 to see) */
	char nested[4096] = "{% macro f(d) %}";
	for (int k = 0; k < 60; k++)
		strcat(nested, "{% if true %}");
	strcat(nested, "{% if d < 99 %}{{ f(d + 1) }}{% endif %}");
	for (int k = 0; k < 60; k++)
		strcat(nested, "{% endif %}");
	strcat(nested, "{% endmacro %}{{ f(0) }}");
	expect_error(nested, MF_JINJA_ELIMIT, "nesting limit");
	expect_error("{{ range(1000000) }}", MF_JINJA_ERUNTIME, "MAX_RANGE");
	char deep[2000] = "{{ ";
	size_t o = 3;
	for (int k = 0; k < 600; k++)
		deep[o++] = '(';
	deep[o] = 0;
	expect_error(deep, MF_JINJA_ELIMIT, "nesting limit");
	expect_error("{% for x in y %}", MF_JINJA_ESYNTAX, "endfor");
	expect_error("{{ x.append(1) }}", MF_JINJA_EUNDEFINED, "is undefined");
	expect_error("{% set x = [] %}{{ x.append(1) }}", MF_JINJA_ESECURITY, "unsafe");
	expect_error("{{ ''.__class__ }}", 0, "");
	expect_error("{{ ''.__class__() }}", MF_JINJA_ESECURITY, "unsafe");
	expect_error("{{ raise_exception('boom') }}", MF_JINJA_ERAISED, "boom");
	/* big output: the output ceiling */
	struct mf_jinja *t = NULL;
	struct mf_jinja_error err;
	const char *src = "{% for i in range(100000) %}{{ 'abcdefghij' * 100 }}{% endfor %}";
	CHECK(mf_jinja_parse(src, strlen(src), &t, &err) == 0);
	char *out = NULL;
	size_t len;
	struct mf_jinja_options small = {.max_output = 1 << 20};
	CHECK(mf_jinja_render(t, NULL, &small, &out, &len, &err) == MF_JINJA_ELIMIT);
	CHECK(strstr(err.message, "output limit") != NULL);
	CHECK(out == NULL && len == 0);
	mf_jinja_free(t);
	/* the API */
	CHECK(mf_jinja_render(NULL, NULL, NULL, &out, &len, &err) == MF_JINJA_EINVAL);
	struct mf_jinja_vars *v = mf_jinja_vars_new();
	CHECK(mf_jinja_vars_set_object(v, NULL) == MF_JINJA_EINVAL);
	CHECK(mf_jinja_vars_set_string(v, "s", "a\0b", 3) == 0);
	CHECK(mf_jinja_parse("{{ s }}|{{ s|length }}", 22, &t, &err) == 0);
	CHECK(mf_jinja_render(t, v, &opts, &out, &len, &err) == 0);
	CHECK(len == 5 && memcmp(out, "a\0b|3", 5) == 0);
	CHECK(mf_jinja_uses(t, "s") && !mf_jinja_uses(t, "tools"));
	free(out);
	mf_jinja_free(t);
	mf_jinja_vars_free(v);
	mf_jinja_free(NULL);
	mf_jinja_vars_free(NULL);
	CHECK(strcmp(mf_jinja_strerror(MF_JINJA_ELIMIT), "template limit exceeded") == 0);

	/* errors name their line */
	src = "a\nb {{ 1 }}\n{% if true %}\n  {{ x + 1 }}\n{% endif %}";
	CHECK(mf_jinja_parse(src, strlen(src), &t, &err) == 0);
	CHECK(mf_jinja_render(t, NULL, &opts, &out, &len, &err) == MF_JINJA_EUNDEFINED);
	CHECK_EQ_INT(err.line, 4);
	CHECK_STREQ(err.message, "'x' is undefined");
	mf_jinja_free(t);
	src = "ok\n\n{% for x in y %}{{ x }}{% endfor %}{{ (1 + }}";
	CHECK(mf_jinja_parse(src, strlen(src), &t, &err) == MF_JINJA_ESYNTAX && t == NULL);
	CHECK_EQ_INT(err.line, 3);
	CHECK_STREQ(err.type, "TemplateSyntaxError");

	/* strftime_now's clock: SOURCE_DATE_EPOCH (UTC) when the caller gives none */
	src = "{{ strftime_now('%d %b %Y %H:%M') }}";
	CHECK(mf_jinja_parse(src, strlen(src), &t, &err) == 0);
	setenv("SOURCE_DATE_EPOCH", "1768478400", 1);
	CHECK(mf_jinja_render(t, NULL, NULL, &out, &len, &err) == 0);
	CHECK_STREQ(out, "15 Jan 2026 12:00");
	free(out);
	unsetenv("SOURCE_DATE_EPOCH");
	mf_jinja_free(t);

	/* the chat builder: tools None is defined, extra overrides, bos/eos NULL are empty strings */
	struct ob_json_error jerr;
	const char *msgs = "[{\"role\":\"user\",\"content\":\"hi\"}]", *extra = "{\"enable_thinking\":false,\"bos_token\":\"B\"}";
	struct ob_json_doc *dm = ob_json_parse(msgs, strlen(msgs), &jerr), *de = ob_json_parse(extra, strlen(extra), &jerr);
	struct mf_jinja_chat chat = {.messages = ob_json_root(dm), .add_generation_prompt = true, .extra = ob_json_root(de)};
	v = mf_jinja_vars_new();
	CHECK(mf_jinja_vars_set_chat(v, &chat) == 0);
	src = "{{ tools is defined }}/{{ tools }}/{{ documents }}/{{ bos_token }}/[{{ eos_token }}]/{{ enable_thinking }}/"
	      "{{ add_generation_prompt }}/{{ messages[0].content }}";
	CHECK(mf_jinja_parse(src, strlen(src), &t, &err) == 0);
	CHECK(mf_jinja_render(t, v, &opts, &out, &len, &err) == 0);
	CHECK_STREQ(out, "True/None/None/B/[]/False/True/hi");
	free(out);
	mf_jinja_free(t);
	mf_jinja_vars_free(v);
	ob_json_free(dm);
	ob_json_free(de);
}

int main(void)
{
	verbose = getenv("JINJA_TEST_VERBOSE") != NULL;
	test_corpus();
	test_cases();
	test_limits();
	return check_done();
}
