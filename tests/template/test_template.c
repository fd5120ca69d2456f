/* tests/template/test_template.c — the Go-template engine against Ollama's and Go's own outputs.
 *
 * 1. Ollama's 60 template cases (../shared/testdata/ollama-templates), read from ../shared at test time
 *    (missing: the test fails, naming it; see check_shared_path).
 * 2. Every TEMPLATE of the 47 library Modelfiles (../shared/testdata/library-modelfiles) through the
 *    conversations of tests/data/template/scenarios.json, against the golden files under
 *    tests/data/template/library/ (see that folder's README for how they were made).
 * 3. Engine cases (tests/data/template/engine_cases.json): Go text/template semantics and error texts.
 * 4. Template detection from Jinja (templates.jsonl), identifier, thinking-tag and tool-tag inference.
 * 5. Hostile templates: limits instead of hangs or memory exhaustion.
 * Set TEMPLATE_TEST_VERBOSE=1 to print every mismatch in full.
 */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/json.h"
#include "modelfile/template.h"
#include "tests/check.h"
#include "tests/testmodel.h"

#define FIXED_NOW 1768478400 /* 2026-01-15 12:00:00 UTC, the date the goldens were rendered with */

static int verbose;

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) != 0) {
		fclose(f);
		return NULL;
	}
	long n = ftell(f);
	if (n < 0 || fseek(f, 0, SEEK_SET) != 0) {
		fclose(f);
		return NULL;
	}
	char *p = malloc((size_t)n + 1);
	if (!p) {
		fclose(f);
		return NULL;
	}
	size_t got = fread(p, 1, (size_t)n, f);
	fclose(f);
	if (got != (size_t)n) {
		free(p);
		return NULL;
	}
	p[n] = 0;
	if (len)
		*len = (size_t)n;
	return p;
}

static const char *path_join(char *buf, size_t size, const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la + lb + 2 > size) {
		buf[0] = 0;
		return buf;
	}
	memcpy(buf, a, la);
	buf[la] = '/';
	memcpy(buf + la + 1, b, lb + 1);
	return buf;
}

static void show_diff(const char *what, const char *got, size_t gn, const char *want, size_t wn)
{
	size_t i = 0;
	while (i < gn && i < wn && got[i] == want[i])
		i++;
	fprintf(stderr, "  %s: first difference at byte %zu (got %zu bytes, want %zu)\n", what, i, gn, wn);
	if (verbose) {
		fprintf(stderr, "  --- got ---\n%.*s\n  --- want ---\n%.*s\n  -----------\n", (int)gn, got, (int)wn,
			want);
	} else {
		size_t from = i > 40 ? i - 40 : 0;
		fprintf(stderr, "  got:  ...%.*s\n  want: ...%.*s\n", (int)(gn - from < 80 ? gn - from : 80), got + from,
			(int)(wn - from < 80 ? wn - from : 80), want + from);
	}
}

/* ------------------------------------------------------------------------------------------ 60 cases */

static const char *const conv_user[][2] = {{"user", "Hello, how are you?"}};
static const char *const conv_uau[][2] = {{"user", "Hello, how are you?"},
					  {"assistant", "I'm doing great. How can I help you today?"},
					  {"user", "I'd like to show off how chat templating works!"}};
static const char *const conv_suau[][2] = {{"system", "You are a helpful assistant."},
					   {"user", "Hello, how are you?"},
					   {"assistant", "I'm doing great. How can I help you today?"},
					   {"user", "I'd like to show off how chat templating works!"}};

static struct mf_tpl_str S(const char *s)
{
	struct mf_tpl_str r = {s, s ? strlen(s) : 0};
	return r;
}

static int test_shared_cases(void)
{
	char dir[4096];
	snprintf(dir, sizeof dir, "%s", check_shared_path("testdata/ollama-templates"));
	static const char *const strip_space[] = {"chatqa", "llama2-chat", "mistral-instruct", "openchat", "vicuna"};
	struct {
		const char *name;
		const char *const (*msgs)[2];
		size_t n;
	} convs[] = {{"user", conv_user, 1}, {"user-assistant-user", conv_uau, 3}, {"system-user-assistant-user", conv_suau, 4}};
	DIR *d = opendir(dir);
	CHECK(d != NULL);
	if (!d)
		return 0;
	int pass = 0, total = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t ln = strlen(e->d_name);
		if (ln < 8 || strcmp(e->d_name + ln - 7, ".gotmpl") != 0)
			continue;
		char p[4096];
		size_t len;
		char *src = read_file(path_join(p, sizeof p, dir, e->d_name), &len);
		CHECK(src != NULL);
		if (!src)
			continue;
		struct mf_tpl *t = NULL;
		struct mf_tpl_error err;
		int rc = mf_tpl_parse(src, len, &t, &err);
		CHECKF(rc == 0, "%s: %s", e->d_name, err.msg);
		for (size_t c = 0; t && c < sizeof convs / sizeof convs[0]; c++) {
			struct mf_tpl_message m[4];
			memset(m, 0, sizeof m);
			for (size_t k = 0; k < convs[c].n; k++) {
				m[k].role = S(convs[c].msgs[k][0]);
				m[k].content = S(convs[c].msgs[k][1]);
			}
			struct mf_tpl_values v = {.messages = m, .n_messages = convs[c].n};
			char *out = NULL;
			size_t on = 0;
			total++;
			rc = mf_tpl_execute(t, &v, &out, &on, &err);
			CHECKF(rc == 0, "%s %s: %s", e->d_name, convs[c].name, err.msg);
			if (rc)
				continue;
			for (size_t k = 0; k < sizeof strip_space / sizeof strip_space[0]; k++)
				if (strncmp(e->d_name, strip_space[k], strlen(strip_space[k])) == 0 &&
				    e->d_name[strlen(strip_space[k])] == '.' && on > 0 && out[on - 1] == ' ')
					on--;
			char rel[512], gp[4096];
			snprintf(rel, sizeof rel, "testdata/%s/%s", e->d_name, convs[c].name);
			size_t wn;
			char *want = read_file(path_join(gp, sizeof gp, dir, rel), &wn);
			CHECKF(want != NULL, "missing %s", rel);
			if (want) {
				bool ok = wn == on && memcmp(want, out, on) == 0;
				CHECKF(ok, "%s %s differs", e->d_name, convs[c].name);
				if (!ok)
					show_diff(rel, out, on, want, wn);
				pass += ok;
			}
			free(want);
			free(out);
		}
		mf_tpl_free(t);
		free(src);
	}
	closedir(d);
	fprintf(stderr, "ollama template cases: %d/%d passed\n", pass, total);
	CHECK_EQ_INT(total, 60);
	return pass;
}

/* ------------------------------------------------------------------------------------------ library */

/* The TEMPLATE """…""" value of a Modelfile (all 47 use the triple-quoted form). */
static char *modelfile_template(const char *mf, size_t *len)
{
	const char *p = strstr(mf, "\nTEMPLATE ");
	if (p)
		p += 10;
	else if (strncmp(mf, "TEMPLATE ", 9) == 0)
		p = mf + 9;
	else
		return NULL;
	while (*p == ' ' || *p == '\t')
		p++;
	if (strncmp(p, "\"\"\"", 3) != 0)
		return NULL;
	p += 3;
	const char *end = strstr(p, "\"\"\"");
	if (!end)
		return NULL;
	*len = (size_t)(end - p);
	char *r = malloc(*len + 1);
	if (!r)
		return NULL;
	memcpy(r, p, *len);
	r[*len] = 0;
	return r;
}

struct scenario_values {
	struct mf_tpl_values v;
	struct mf_tpl_messages *msgs;
};

static bool build_values(const struct ob_json *scen, const struct ob_json *root, struct scenario_values *sv)
{
	memset(sv, 0, sizeof *sv);
	struct mf_tpl_error err;
	const struct ob_json *msgs = ob_json_get(scen, "messages");
	if (mf_tpl_messages_from_json(msgs, &sv->msgs, &err) != 0) {
		fprintf(stderr, "messages: %s\n", err.msg);
		return false;
	}
	sv->v.messages = sv->msgs->items;
	sv->v.n_messages = sv->msgs->n;
	const struct ob_json *tools = ob_json_get(scen, "tools");
	if (tools && tools->type == OB_JSON_STRING)
		sv->v.tools = ob_json_get(root, tools->str);
	const struct ob_json *think = ob_json_get(scen, "think");
	if (think) {
		sv->v.is_think_set = true;
		if (think->type == OB_JSON_BOOL) {
			sv->v.think = think->boolean;
			sv->v.think_level = S(think->boolean ? "medium" : "");
		} else if (think->type == OB_JSON_STRING) {
			const char *l = think->str;
			sv->v.think = !strcmp(l, "high") || !strcmp(l, "medium") || !strcmp(l, "low") || !strcmp(l, "max");
			sv->v.think_level = S(l);
		}
	}
	const struct ob_json *s;
	if ((s = ob_json_get(scen, "prompt")) && s->type == OB_JSON_STRING)
		sv->v.prompt = (struct mf_tpl_str){s->str, s->len};
	if ((s = ob_json_get(scen, "suffix")) && s->type == OB_JSON_STRING)
		sv->v.suffix = (struct mf_tpl_str){s->str, s->len};
	if ((s = ob_json_get(scen, "legacy")) && s->type == OB_JSON_BOOL)
		sv->v.force_legacy = s->boolean;
	sv->v.now = FIXED_NOW;
	return true;
}

static void check_meta(const char *model, const struct mf_tpl *t, const char *meta_path)
{
	size_t n;
	char *text = read_file(meta_path, &n);
	CHECKF(text != NULL, "%s: missing meta.json", model);
	if (!text)
		return;
	struct ob_json_error jerr;
	struct ob_json_doc *doc = ob_json_parse(text, n, &jerr);
	free(text);
	CHECK(doc != NULL);
	if (!doc)
		return;
	const struct ob_json *root = ob_json_root(doc);
	const struct ob_json *vars = ob_json_get(root, "vars");
	size_t nv;
	const char *const *got = mf_tpl_vars(t, &nv);
	CHECKF(vars && vars->count == nv, "%s: %zu vars, want %u", model, nv, vars ? vars->count : 0);
	size_t i = 0;
	OB_JSON_FOREACH(e, vars)
	{
		CHECKF(i < nv && strcmp(got[i], e->str) == 0, "%s: var %zu is %s, want %s", model, i,
		       i < nv ? got[i] : "(none)", e->str);
		i++;
	}
	const struct ob_json *j;
	j = ob_json_get(root, "think_open");
	CHECKF(j && strcmp(j->str, mf_tpl_think_open(t)) == 0, "%s: think_open %s", model, mf_tpl_think_open(t));
	j = ob_json_get(root, "think_close");
	CHECKF(j && strcmp(j->str, mf_tpl_think_close(t)) == 0, "%s: think_close %s", model, mf_tpl_think_close(t));
	j = ob_json_get(root, "tool_tag");
	CHECKF(j && strcmp(j->str, mf_tpl_tool_tag(t)) == 0, "%s: tool_tag %s", model, mf_tpl_tool_tag(t));
	j = ob_json_get(root, "tool_round_trip");
	CHECKF(j && j->boolean == mf_tpl_tool_round_trip(t), "%s: tool_round_trip", model);
	ob_json_free(doc);
}

/* Renders every template in `srcdir` (files ending in `ext`: Modelfiles, or whole .gotmpl files) through
 * every scenario and compares with the goldens under `golddir/<name>/`. */
static void test_templates(const char *srcdir, const char *ext, const char *golddir, int *models_ok, int *models_total,
			   int *renders_ok, int *renders_total)
{
	char mfdir_buf[4096], gold[4096];
	snprintf(mfdir_buf, sizeof mfdir_buf, "%s", srcdir);
	const char *mfdir = mfdir_buf;
	snprintf(gold, sizeof gold, "%s", golddir);
	bool modelfile = strcmp(ext, ".Modelfile") == 0;
	size_t extn = strlen(ext);
	size_t sn;
	char *scen_text = read_file(tm_srcpath("tests/data/template/scenarios.json"), &sn);
	CHECK(scen_text != NULL);
	struct stat st;
	if (!scen_text || stat(mfdir, &st) != 0) {
		free(scen_text);
		SKIP("library Modelfiles missing: %s", mfdir);
	}
	struct ob_json_error jerr;
	struct ob_json_doc *doc = ob_json_parse(scen_text, sn, &jerr);
	CHECKF(doc != NULL, "scenarios.json: %s", jerr.message);
	if (!doc) {
		free(scen_text);
		return;
	}
	const struct ob_json *root = ob_json_root(doc);
	const struct ob_json *scenarios = ob_json_get(root, "scenarios");
	DIR *d = opendir(mfdir);
	CHECK(d != NULL);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		size_t ln = strlen(e->d_name);
		if (ln <= extn || strcmp(e->d_name + ln - extn, ext) != 0)
			continue;
		char model[256];
		snprintf(model, sizeof model, "%.*s", (int)(ln - extn), e->d_name);
		(*models_total)++;
		char p[4096];
		size_t mn;
		char *mf = read_file(path_join(p, sizeof p, mfdir, e->d_name), &mn);
		size_t tn = mn;
		char *src = mf;
		if (modelfile) {
			src = mf ? modelfile_template(mf, &tn) : NULL;
			free(mf);
		}
		CHECKF(src != NULL, "%s: no TEMPLATE", model);
		if (!src)
			continue;
		struct mf_tpl *t = NULL;
		struct mf_tpl_error err;
		int rc = mf_tpl_parse(src, tn, &t, &err);
		CHECKF(rc == 0, "%s: %s", model, err.msg);
		free(src);
		if (rc)
			continue;
		char mdir[4096];
		path_join(mdir, sizeof mdir, gold, model);
		int before = check_failures;
		check_meta(model, t, path_join(p, sizeof p, mdir, "meta.json"));
		OB_JSON_FOREACH(scen, scenarios)
		{
			const char *sname = ob_json_get(scen, "name")->str;
			struct scenario_values sv;
			CHECK(build_values(scen, root, &sv));
			char *out = NULL;
			size_t on = 0;
			rc = mf_tpl_execute(t, &sv.v, &out, &on, &err);
			char fn[512];
			snprintf(fn, sizeof fn, "%s.txt", sname);
			size_t wn;
			char *want = read_file(path_join(p, sizeof p, mdir, fn), &wn);
			bool ok;
			(*renders_total)++;
			if (want) {
				ok = rc == 0 && wn == on && memcmp(want, out, on) == 0;
				CHECKF(ok, "%s/%s: %s", model, sname, rc ? err.msg : "output differs");
				if (!ok && rc == 0)
					show_diff(fn, out, on, want, wn);
			} else {
				snprintf(fn, sizeof fn, "%s.err", sname);
				want = read_file(path_join(p, sizeof p, mdir, fn), &wn);
				CHECKF(want != NULL, "%s/%s: no golden file", model, sname);
				ok = want && rc != 0 && strlen(err.msg) + 1 == wn && memcmp(want, err.msg, wn - 1) == 0;
				CHECKF(ok, "%s/%s: error \"%s\", want \"%.*s\"", model, sname, rc ? err.msg : "(none)",
				       want ? (int)wn - 1 : 0, want ? want : "");
			}
			*renders_ok += ok;
			free(want);
			free(out);
			mf_tpl_messages_free(sv.msgs);
		}
		*models_ok += check_failures == before;
		mf_tpl_free(t);
	}
	if (d)
		closedir(d);
	ob_json_free(doc);
	free(scen_text);
}

/* ------------------------------------------------------------------------------------------ main */

/* ------------------------------------------------------------------------------------------ engine */

static int test_engine_cases(void)
{
	size_t n;
	char *text = read_file(tm_srcpath("tests/data/template/engine_cases.json"), &n);
	CHECK(text != NULL);
	if (!text)
		return 0;
	struct ob_json_error jerr;
	struct ob_json_doc *doc = ob_json_parse(text, n, &jerr);
	CHECKF(doc != NULL, "engine_cases.json: %s", jerr.message);
	int pass = 0, total = 0;
	const struct ob_json *cases = doc ? ob_json_get(ob_json_root(doc), "cases") : NULL;
	OB_JSON_FOREACH(c, cases)
	{
		const char *name = ob_json_get(c, "name")->str;
		const struct ob_json *tmpl = ob_json_get(c, "template");
		const struct ob_json *data = ob_json_get(c, "data");
		const struct ob_json *want_out = ob_json_get(c, "output");
		const struct ob_json *want_err = ob_json_get(c, "error");
		char *out = NULL;
		size_t on = 0;
		struct mf_tpl_error err;
		memset(&err, 0, sizeof err);
		int rc = mf_tpl_render_generic(tmpl->str, tmpl->len, data, FIXED_NOW, &out, &on, &err);
		bool ok;
		if (want_out)
			ok = rc == 0 && on == want_out->len && memcmp(out, want_out->str, on) == 0;
		else
			ok = rc != 0 && want_err && strcmp(err.msg, want_err->str) == 0;
		total++;
		pass += ok;
		CHECKF(ok, "engine case %s: got %s \"%.*s\", want %s \"%s\"", name, rc ? "error" : "output",
		       rc ? (int)strlen(err.msg) : (int)on, rc ? err.msg : out, want_out ? "output" : "error",
		       want_out ? want_out->str : want_err ? want_err->str : "?");
		free(out);
	}
	fprintf(stderr, "engine cases: %d/%d as Go prints them\n", pass, total);
	CHECK(total >= 150);
	ob_json_free(doc);
	free(text);
	return pass;
}

/* ------------------------------------------------------------------------------------------ detection */

static char *normalise_crlf(const char *s, size_t n, size_t *out)
{
	char *r = malloc(n + 1);
	size_t k = 0;
	for (size_t i = 0; r && i < n; i++)
		if (!(s[i] == '\r' && i + 1 < n && s[i + 1] == '\n'))
			r[k++] = s[i];
	if (r)
		r[k] = 0;
	*out = k;
	return r;
}

static int test_named(void)
{
	CHECK_EQ_INT(mf_tpl_named_count(), 20);
	/* every bundled template parses; its text equals the corpus file */
	for (size_t i = 0; i < mf_tpl_named_count(); i++) {
		const struct mf_tpl_named *t = mf_tpl_named_at(i);
		char rel[256];
		snprintf(rel, sizeof rel, "modelfile/templates/%s.gotmpl", t->name);
		size_t n, nn;
		char *f = read_file(tm_srcpath(rel), &n);
		char *norm = f ? normalise_crlf(f, n, &nn) : NULL;
		CHECKF(norm && nn == t->text_len && memcmp(norm, t->text, nn) == 0, "%s: embedded text differs", t->name);
		free(f);
		free(norm);
		struct mf_tpl *p = NULL;
		struct mf_tpl_error err;
		CHECKF(mf_tpl_parse(t->text, t->text_len, &p, &err) == 0, "%s: %s", t->name, err.msg);
		mf_tpl_free(p);
	}
	/* Ollama's TestNamed: each Jinja template of templates.jsonl detects its bundled template */
	size_t n;
	char *lines = read_file(check_shared_path("testdata/ollama-templates/testdata/templates.jsonl"), &n);
	CHECK(lines != NULL);
	int pass = 0, total = 0;
	for (char *line = lines; line && *line;) {
		char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		if (len > 0) {
			struct ob_json_error jerr;
			struct ob_json_doc *doc = ob_json_parse(line, len, &jerr);
			CHECK(doc != NULL);
			OB_JSON_FOREACH_MEMBER(k, v, doc ? ob_json_root(doc) : NULL)
			{
				const struct mf_tpl_named *t = mf_tpl_named_match(v->str, v->len);
				total++;
				bool ok = t && strcmp(t->name, k->str) == 0;
				pass += ok;
				CHECKF(ok, "templates.jsonl: %s detected as %s", k->str, t ? t->name : "(none)");
			}
			ob_json_free(doc);
		}
		line = end ? end + 1 : line + len;
	}
	free(lines);
	fprintf(stderr, "template detection (templates.jsonl): %d/%d\n", pass, total);
	CHECK(total >= 30);
	/* distance rules: an exact index entry matches; far-away text matches nothing */
	const char *chatml_jinja = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
				   "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt "
				   "%}{{ '<|im_start|>assistant\n' }}{% endif %}";
	const struct mf_tpl_named *t = mf_tpl_named_match(chatml_jinja, strlen(chatml_jinja));
	CHECK(t && strcmp(t->name, "chatml") == 0);
	char near[1024];
	snprintf(near, sizeof near, "%s{# a comment of some forty characters #}", chatml_jinja);
	t = mf_tpl_named_match(near, strlen(near));
	CHECK(t && strcmp(t->name, "chatml") == 0);
	char far[4096];
	memset(far, 'x', 3000);
	far[3000] = 0;
	CHECK(mf_tpl_named_match(far, strlen(far)) == NULL);
	CHECK(mf_tpl_named_match("", 0) == NULL);
	/* the params layer: only "stop", HTML-escaped, newline-terminated (gemma3's temperature is dropped) */
	for (size_t i = 0; i < mf_tpl_named_count(); i++) {
		const struct mf_tpl_named *x = mf_tpl_named_at(i);
		size_t pl;
		char *pj = mf_tpl_named_params_json(x, &pl);
		if (strcmp(x->name, "chatml") == 0)
			CHECK_STREQ(pj, "{\"stop\":[\"\\u003c|im_start|\\u003e\",\"\\u003c|im_end|\\u003e\"]}\n");
		if (strcmp(x->name, "gemma3-instruct") == 0) {
			CHECK_STREQ(pj, "{\"stop\":[\"\\u003cend_of_turn\\u003e\"]}\n");
			CHECK_EQ_INT(x->n_stop, 1);
			CHECK_STREQ(x->stop[0], "<end_of_turn>");
		}
		CHECKF(pj != NULL && x->has_params, "%s has params", x->name);
		free(pj);
	}
	return pass;
}

/* ------------------------------------------------------------------------------------------ hostile */

/* CPU time of this process: the machine is shared, so wall time says little. */
static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Renders a generic template; expects failure with code `code` (0 = success) within 3 s of CPU time. */
static void hostile(const char *name, const char *tmpl, size_t len, const char *data_json, int code, const char *msg_part)
{
	struct ob_json_doc *doc = NULL;
	struct ob_json_error jerr;
	if (data_json)
		doc = ob_json_parse(data_json, strlen(data_json), &jerr);
	char *out = NULL;
	size_t on = 0;
	struct mf_tpl_error err;
	memset(&err, 0, sizeof err);
	double t0 = now_s();
	int rc = mf_tpl_render_generic(tmpl, len, doc ? ob_json_root(doc) : NULL, FIXED_NOW, &out, &on, &err);
	double dt = now_s() - t0;
	CHECKF(rc == code, "%s: code %d (%s), want %d", name, rc, err.msg, code);
	if (msg_part)
		CHECKF(rc && strstr(err.msg, msg_part), "%s: message \"%s\" lacks \"%s\"", name, err.msg, msg_part);
	CHECKF(dt < 3.0, "%s: took %.2f s of CPU time", name, dt);
	free(out);
	ob_json_free(doc);
}

static char *repeat(const char *unit, size_t times, const char *prefix, const char *suffix)
{
	size_t ul = strlen(unit), pl = strlen(prefix), sl = strlen(suffix);
	char *r = malloc(pl + ul * times + sl + 1);
	if (!r)
		return NULL;
	memcpy(r, prefix, pl);
	for (size_t i = 0; i < times; i++)
		memcpy(r + pl + i * ul, unit, ul);
	memcpy(r + pl + ul * times, suffix, sl + 1);
	return r;
}

static int test_hostile(void)
{
	/* template text over the size limit */
	size_t big = (size_t)MF_TPL_MAX_SOURCE + 1;
	char *huge = malloc(big);
	CHECK(huge != NULL);
	if (huge) {
		memset(huge, 'a', big);
		struct mf_tpl *t = NULL;
		struct mf_tpl_error err;
		CHECK_EQ_INT(mf_tpl_parse(huge, big, &t, &err), MF_TPL_ERR_LIMIT);
		free(huge);
	}
	/* a maximal template of tiny actions parses within the parse-tree ceiling or fails with a limit */
	char *p = repeat("{{.}}", MF_TPL_MAX_SOURCE / 5, "", "");
	if (p) {
		struct mf_tpl *t = NULL;
		struct mf_tpl_error err;
		double t0 = now_s();
		int rc = mf_tpl_parse(p, strlen(p), &t, &err);
		CHECKF(rc == 0 || rc == MF_TPL_ERR_LIMIT, "many actions: %s", err.msg);
		CHECKF(now_s() - t0 < 3.0, "many actions: %.2f s", now_s() - t0);
		mf_tpl_free(t);
		free(p);
	}
	/* nesting depth: parentheses and control blocks */
	p = repeat("(", 20000, "{{ ", "");
	hostile("deep-parens", p, strlen(p), NULL, MF_TPL_ERR_PARSE, "nesting depth");
	free(p);
	p = repeat("{{ if 1 }}", 20000, "", "");
	hostile("deep-ifs", p, strlen(p), NULL, MF_TPL_ERR_PARSE, "nesting depth");
	free(p);
	/* exponential strings, output and loops */
	const char *list64 = "{\"L\": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,"
			     "33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64]}";
	const char *dbl = "{{ $x := \"0123456789\" }}{{ range .L }}{{ $x = print $x $x }}{{ end }}{{ len $x }}";
	hostile("doubling-string", dbl, strlen(dbl), list64, MF_TPL_ERR_LIMIT, "bytes");
	const char *out = "{{ $x := \"0123456789abcdef0123456789abcdef\" }}{{ range .L }}{{ range $.L }}{{ range $.L }}{{ range $.L }}"
			  "{{ $x }}{{ end }}{{ end }}{{ end }}{{ end }}";
	hostile("loop-output", out, strlen(out), list64, MF_TPL_ERR_LIMIT, NULL);
	const char *loops = "{{ range .L }}{{ range $.L }}{{ range $.L }}{{ range $.L }}{{ range $.L }}{{ end }}{{ end }}{{ end }}"
			    "{{ end }}{{ end }}";
	hostile("nested-loops", loops, strlen(loops), list64, MF_TPL_ERR_LIMIT, "range iterations");
	const char *steps = "{{ range 900000 }}{{ if 1 }}{{ if 1 }}{{ if 1 }}{{ if 1 }}{{ if 1 }}{{ if 1 }}{{ end }}{{ end }}{{ end }}"
			    "{{ end }}{{ end }}{{ end }}{{ end }}";
	hostile("steps", steps, strlen(steps), NULL, MF_TPL_ERR_LIMIT, "evaluation steps");
	const char *intloop = "{{ range 2000000000 }}{{ end }}";
	hostile("range-int", intloop, strlen(intloop), NULL, MF_TPL_ERR_LIMIT, NULL);
	const char *rec = "{{ define \"R\" }}{{ template \"R\" . }}{{ end }}{{ template \"R\" . }}";
	hostile("recursion", rec, strlen(rec), NULL, MF_TPL_ERR_EXEC, "exceeded maximum template depth (100)");
	const char *fan = "{{ define \"F\" }}{{ template \"F\" . }}{{ template \"F\" . }}{{ end }}{{ template \"F\" . }}";
	hostile("fan-out-recursion", fan, strlen(fan), NULL, MF_TPL_ERR_EXEC, NULL);
	const char *fan2 = "{{ define \"G\" }}{{ if lt (len .) 40 }}{{ template \"G\" (print . \"x\") }}{{ template \"G\" "
			   "(print . \"y\") }}{{ end }}{{ end }}{{ template \"G\" \"\" }}";
	hostile("fan-out-bounded", fan2, strlen(fan2), NULL, MF_TPL_ERR_LIMIT, "execution stopped");
	const char *width = "{{ printf \"%2000000000d\" 1 }}|{{ printf \"%.*f\" 2000000000 1.0 }}";
	hostile("printf-width", width, strlen(width), NULL, 0, NULL);
	/* many variables declared in a loop are popped every iteration */
	const char *vars = "{{ range .L }}{{ $a := 1 }}{{ $b := 2 }}{{ $c := print $a $b }}{{ end }}ok";
	hostile("vars-in-loop", vars, strlen(vars), list64, 0, NULL);
	/* binary junk */
	char junk[512];
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = (char)(i * 131 + 7);
	memcpy(junk, "{{", 2);
	hostile("junk", junk, sizeof junk, NULL, MF_TPL_ERR_PARSE, NULL);
	return 0;
}

/* ------------------------------------------------------------------------------------------ API */

static struct ob_json_doc *J(const char *s)
{
	struct ob_json_error e;
	struct ob_json_doc *d = ob_json_parse(s, strlen(s), &e);
	CHECKF(d != NULL, "bad test JSON: %s", e.message);
	return d;
}

static int test_api(void)
{
	struct mf_tpl_error err;
	struct mf_tpl_messages *m = NULL;
	struct ob_json_doc *d = J("[{\"ROLE\":\"USER\",\"Content\":\"hi\",\"images\":[\"aGVsbG8=\",null]},"
				  "{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c1\",\"function\":{\"index\":2,\"name\":\"f\","
				  "\"arguments\":{\"b\":1,\"a\":[true]}}}]},null]");
	CHECK_EQ_INT(mf_tpl_messages_from_json(ob_json_root(d), &m, &err), 0);
	if (m) {
		CHECK_EQ_INT(m->n, 3);
		CHECK(m->items[0].role.n == 4 && memcmp(m->items[0].role.p, "user", 4) == 0);
		CHECK(m->items[0].content.n == 2 && memcmp(m->items[0].content.p, "hi", 2) == 0);
		CHECK_EQ_INT(m->items[0].n_images, 2);
		CHECK(m->items[0].images[0].len == 5 && memcmp(m->items[0].images[0].data, "hello", 5) == 0);
		CHECK(m->items[0].images[1].data == NULL);
		CHECK_EQ_INT(m->items[1].n_tool_calls, 1);
		CHECK_EQ_INT(m->items[1].tool_calls[0].index, 2);
		CHECK(m->items[1].tool_calls[0].arguments && m->items[1].tool_calls[0].arguments->type == OB_JSON_OBJECT);
		CHECK_EQ_INT(m->items[2].role.n, 0);
		/* render them through a tool-calling template */
		struct mf_tpl *t = NULL;
		const char *src = "{{ range .Messages }}{{ .Role }}:{{ .Content }}:{{ len .Images }}{{ range .ToolCalls }}"
				  "[{{ .ID }} {{ .Function.Index }} {{ .Function.Name }} {{ .Function.Arguments }}]{{ end }};{{ end }}";
		CHECK_EQ_INT(mf_tpl_parse(src, strlen(src), &t, &err), 0);
		struct mf_tpl_values v = {.messages = m->items, .n_messages = m->n};
		char *out = NULL;
		CHECK_EQ_INT(mf_tpl_execute(t, &v, &out, NULL, &err), 0);
		CHECK_STREQ(out, "user:hi:2;assistant::0[c1 2 f {\"a\":[true],\"b\":1}];::0;");
		free(out);
		mf_tpl_free(t);
	}
	mf_tpl_messages_free(m);
	ob_json_free(d);
	/* Go's decoding errors */
	static const struct {
		const char *json, *msg;
	} bad[] = {
		{"{}", "json: cannot unmarshal object into Go struct field ChatRequest.messages of type []api.Message"},
		{"[{\"role\":1}]", "json: cannot unmarshal number into Go struct field ChatRequest.messages of type string"},
		{"[{\"images\":[\"a=b\"]}]", "illegal base64 data at input byte 1"},
		{"[{\"tool_calls\":[{\"function\":{\"index\":1.5}}]}]",
		 "json: cannot unmarshal number 1.5 into Go struct field ChatRequest.messages of type int"},
		{"[{\"tool_calls\":[{\"function\":{\"arguments\":\"x\"}}]}]",
		 "Value looks like object, but can't find closing '}' symbol"},
		{"[{\"images\":[\"aGVsbG8\"]}]", "illegal base64 data at input byte 4"},
		{"[{\"images\":[\"aG=\"]}]", "illegal base64 data at input byte 3"},
		{"[{\"images\":[\"aGVsbG8==\"]}]", "illegal base64 data at input byte 8"},
		{"[{\"images\":[\"aGVsbA=\"]}]", "illegal base64 data at input byte 7"},
		{"[{\"images\":[\"a\"]}]", "illegal base64 data at input byte 0"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		d = J(bad[i].json);
		m = NULL;
		int rc = mf_tpl_messages_from_json(ob_json_root(d), &m, &err);
		CHECKF(rc == MF_TPL_ERR_DATA && strcmp(err.msg, bad[i].msg) == 0, "%s: rc %d \"%s\"", bad[i].json, rc,
		       rc ? err.msg : "");
		CHECK(m == NULL);
		ob_json_free(d);
	}
	d = J("{\"type\":\"function\"}");
	CHECK_EQ_INT(mf_tpl_tools_check(ob_json_root(d), &err), MF_TPL_ERR_DATA);
	CHECK_STREQ(err.msg, "json: cannot unmarshal object into Go struct field ChatRequest.tools of type api.Tools");
	ob_json_free(d);
	d = J("[{\"function\":{\"parameters\":{\"properties\":{\"x\":{\"type\":5}}}}}]");
	CHECK_EQ_INT(mf_tpl_tools_check(ob_json_root(d), &err), MF_TPL_ERR_DATA);
	CHECK_STREQ(err.msg, "json: cannot unmarshal number into Go struct field "
			     "ToolFunctionParameters.tools.function.parameters.properties of type []string");
	ob_json_free(d);
	d = J("[{\"function\":{\"name\":5}}]");
	CHECK_EQ_INT(mf_tpl_tools_check(ob_json_root(d), &err), MF_TPL_ERR_DATA);
	CHECK_STREQ(err.msg, "json: cannot unmarshal number into Go struct field ToolFunction.tools.function.name of type string");
	ob_json_free(d);
	d = J("[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\",\"properties\":"
	      "{\"x\":{\"type\":null}}}}}]");
	CHECK_EQ_INT(mf_tpl_tools_check(ob_json_root(d), &err), 0);
	ob_json_free(d);
	/* parse errors carry the line */
	struct mf_tpl *t = NULL;
	CHECK_EQ_INT(mf_tpl_parse("a\nb {{ .X ", 10, &t, &err), MF_TPL_ERR_PARSE);
	CHECK_STREQ(err.msg, "template: :2: unclosed action");
	CHECK_EQ_INT(err.line, 2);
	const char *undef = "{{define \"x\"}}{{template \"x\"}}{{end}}{{template \"x\"}}";
	CHECK_EQ_INT(mf_tpl_parse(undef, strlen(undef), &t, &err), MF_TPL_ERR_PARSE);
	CHECK_STREQ(err.msg, "undefined template specified");
	/* exec errors carry line and column (messages mode: missingkey=zero makes .Missing a nil interface) */
	const char *src = "{{ .Messages }} line one\n  {{ .Missing.Field }}";
	CHECK_EQ_INT(mf_tpl_parse(src, strlen(src), &t, &err), 0);
	struct mf_tpl_values v = {0};
	char *out = NULL;
	CHECK_EQ_INT(mf_tpl_execute(t, &v, &out, NULL, &err), MF_TPL_ERR_EXEC);
	/* Go places a field chain at its second field */
	CHECK_STREQ(err.msg, "template: :2:13: executing \"\" at <.Missing.Field>: nil pointer evaluating interface {}.Field");
	CHECK_EQ_INT(err.line, 2);
	CHECK_EQ_INT(err.col, 13);
	CHECK(out == NULL);
	mf_tpl_free(t);
	/* identifiers, {{ .Response }} appended, capabilities */
	src = "{{ .System }} {{ .Prompt }}";
	CHECK_EQ_INT(mf_tpl_parse(src, strlen(src), &t, &err), 0);
	CHECK(mf_tpl_uses(t, "response") && mf_tpl_uses(t, "prompt") && !mf_tpl_uses(t, "tools"));
	CHECK(mf_tpl_contains(t, ".Prompt") && !mf_tpl_contains(t, ".Response"));
	struct mf_tpl_message msgs[] = {{.role = S("system"), .content = S("sys")},
					{.role = S("user"), .content = S("q1")},
					{.role = S("assistant"), .content = S("a1")},
					{.role = S("user"), .content = S("q2")},
					{.role = S("assistant"), .content = S("partial")}};
	v.messages = msgs;
	v.n_messages = 5;
	CHECK_EQ_INT(mf_tpl_execute(t, &v, &out, NULL, &err), 0);
	CHECK_STREQ(out, "sys q1a1 q2partial");
	free(out);
	mf_tpl_free(t);
	/* fill-in-the-middle needs both prompt and suffix */
	src = "{{ if .Suffix }}<PRE>{{ .Prompt }}<SUF>{{ .Suffix }}<MID>{{ else }}{{ .Prompt }}{{ end }}";
	CHECK_EQ_INT(mf_tpl_parse(src, strlen(src), &t, &err), 0);
	struct mf_tpl_values fim = {.prompt = S("a"), .suffix = S("b")};
	CHECK_EQ_INT(mf_tpl_execute(t, &fim, &out, NULL, &err), 0);
	CHECK_STREQ(out, "<PRE>a<SUF>b<MID>");
	free(out);
	mf_tpl_free(t);
	CHECK_STREQ(mf_tpl_strerror(MF_TPL_ERR_LIMIT), "template limit exceeded");
	/* forms newer than the Go 1.19 the goldens came from (Ollama is built with Go 1.26): range over an
	 * integer (Go 1.22) and {{else with}} (Go 1.23); expected values written from the Go documentation */
	static const struct {
		const char *tmpl, *want;
	} newer[] = {
		{"{{ range 3 }}{{ . }}{{ end }}", "012"},
		{"{{ range $i := 2 }}[{{ $i }}]{{ end }}{{ range 0 }}x{{ else }}none{{ end }}", "[0][1]none"},
		{"{{ with .E }}a{{ else with .S }}<{{ . }}>{{ else }}c{{ end }}", "<s>"},
		{"{{ with .E }}a{{ else with .E }}b{{ else }}c{{ end }}", "c"},
	};
	struct ob_json_doc *data = J("{\"E\":\"\",\"S\":\"s\"}");
	for (size_t i = 0; i < sizeof newer / sizeof newer[0]; i++) {
		char *o = NULL;
		int rc = mf_tpl_render_generic(newer[i].tmpl, strlen(newer[i].tmpl), ob_json_root(data), 0, &o, NULL, &err);
		CHECKF(rc == 0 && strcmp(o, newer[i].want) == 0, "%s: %s", newer[i].tmpl, rc ? err.msg : o);
		free(o);
	}
	ob_json_free(data);
	return 0;
}

int main(void)
{
	verbose = getenv("TEMPLATE_TEST_VERBOSE") != NULL;
	setenv("TZ", "UTC", 1);
	tzset();
	test_shared_cases();
	int mok = 0, mtot = 0, rok = 0, rtot = 0;
	char dir[4096];
	snprintf(dir, sizeof dir, "%s", check_shared_path("testdata/library-modelfiles"));
	test_templates(dir, ".Modelfile", tm_srcpath("tests/data/template/library"), &mok, &mtot, &rok, &rtot);
	fprintf(stderr, "library Modelfiles: %d/%d fully matching, %d/%d renderings\n", mok, mtot, rok, rtot);
	CHECK_EQ_INT(mtot, 47);
	mok = mtot = rok = rtot = 0;
	snprintf(dir, sizeof dir, "%s", tm_srcpath("modelfile/templates"));
	test_templates(dir, ".gotmpl", tm_srcpath("tests/data/template/corpus"), &mok, &mtot, &rok, &rtot);
	fprintf(stderr, "bundled templates: %d/%d fully matching, %d/%d renderings\n", mok, mtot, rok, rtot);
	CHECK_EQ_INT(mtot, 20);
	mok = mtot = rok = rtot = 0;
	snprintf(dir, sizeof dir, "%s", tm_srcpath("tests/data/template/extra"));
	test_templates(dir, ".gotmpl", dir, &mok, &mtot, &rok, &rtot);
	fprintf(stderr, "data-model probe templates: %d/%d fully matching, %d/%d renderings\n", mok, mtot, rok, rtot);
	CHECK(mtot >= 10);
	test_engine_cases();
	test_named();
	test_hostile();
	test_api();
	return check_done();
}
