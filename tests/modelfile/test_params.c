/* tests/modelfile/test_params.c — the PARAMETER schema: Modelfile text conversion (FormatParams),
 * JSON option decoding (Options.FromMap), orun's extensions, defaults, and the Go formatting helpers.
 *
 * tests/data/modelfile/params/{modelfile,options}.tsv hold Ollama's own outcomes (see the README there);
 * extensions.tsv holds orun's documented behaviour for the names Ollama does not have.
 */
#include "config.h"

#include <math.h>

#include "base/gofmt.h"
#include "base/json.h"
#include "modelfile/params.h"
#include "tests/check.h"
#include "tests/modelfile/mftest.h"
#include "tests/testmodel.h"

/* Splits line at tabs into at most max fields (in place). */
static int split_tabs(char *line, char **f, int max)
{
	int n = 0;
	f[n++] = line;
	for (char *p = line; *p && n < max; p++)
		if (*p == '\t') {
			*p = 0;
			f[n++] = p + 1;
		}
	return n;
}

static void modelfile_rows(const char *file)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", tm_srcpath("tests/data/modelfile/params"), file);
	char *data = mft_read(path, NULL);
	CHECKF(data != NULL, "cannot read %s", path);
	if (!data)
		return;
	int rows = 0;
	char *save = NULL;
	for (char *line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#')
			continue;
		char *f[5] = {0};
		int n = split_tabs(line, f, 5);
		CHECKF(n >= 4, "%s: bad row", file);
		if (n < 4)
			continue;
		rows++;
		const char *name = f[0], *value = f[1], *outcome = f[2], *text = f[3];
		struct mf_params p = {0};
		struct mf_warnings w = {0};
		struct mf_error err = {0};
		int rc = mf_params_set(&p, name, value, &w, &err);
		if (strcmp(outcome, "error") == 0) {
			CHECKF(rc == MF_ERR_INVALID, "%s %s: rc %d, expected an error", name, value, rc);
			CHECKF(rc != MF_OK && strcmp(err.msg, text) == 0, "%s [%s]: error \"%s\", expected \"%s\"", name, value,
			       err.msg, text);
		} else if (strcmp(outcome, "warn") == 0) {
			CHECKF(rc == MF_OK && p.n == 0, "%s: rc %d n %zu", name, rc, p.n);
			CHECKF(w.n == 1 && strcmp(w.items[0], text) == 0, "%s: warning %s, expected %s", name,
			       w.n ? w.items[0] : "(none)", text);
		} else {
			CHECKF(rc == MF_OK, "%s [%s]: rc %d (%s)", name, value, rc, err.msg);
			struct ob_jw jw;
			ob_jw_init(&jw, 0, 0);
			int wrc = mf_params_write_json(&p, &jw, &err);
			if (strcmp(outcome, "marshalerr") == 0) {
				CHECKF(wrc == MF_ERR_INVALID && strcmp(err.msg, text) == 0, "%s [%s]: write gave %d \"%s\"",
				       name, value, wrc, err.msg);
			} else {
				CHECKF(wrc == MF_OK && strcmp(ob_jw_str(&jw), text) == 0, "%s [%s]: %s, expected %s", name, value,
				       wrc == MF_OK ? ob_jw_str(&jw) : err.msg, text);
				const char *warning = n >= 5 ? f[4] : NULL;
				CHECKF(warning ? (w.n == 1 && strcmp(w.items[0], warning) == 0) : w.n == 0,
				       "%s: warnings %zu (%s)", name, w.n, w.n ? w.items[0] : "");
			}
			ob_jw_free(&jw);
		}
		mf_params_free(&p);
		mf_warnings_free(&w);
	}
	CHECKF(rows >= 14, "%s: only %d rows", file, rows);
	free(data);
}

/* The options as Go's json.Marshal(Options) writes them (omitempty everywhere). */
static char *marshal_options(const struct mf_options *o)
{
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
#define I(field, key)                                                                                    \
	if (o->field) {                                                                                  \
		ob_jw_key(&w, key);                                                                      \
		ob_jw_int(&w, o->field);                                                                 \
	}
#define F(field, key)                                                                                    \
	if (o->field != 0) {                                                                             \
		if (!isfinite(o->field)) {                                                               \
			ob_jw_free(&w);                                                                  \
			return strdup("marshal: json: unsupported value: +Inf");                         \
		}                                                                                        \
		ob_jw_key(&w, key);                                                                      \
		ob_jw_float32(&w, o->field);                                                             \
	}
	I(num_ctx, "num_ctx");
	I(num_batch, "num_batch");
	I(num_gpu, "num_gpu");
	if (o->set & (1ull << MF_OPT_MAIN_GPU)) {
		ob_jw_key(&w, "main_gpu");
		ob_jw_int(&w, o->main_gpu);
	}
	if (o->set & (1ull << MF_OPT_USE_MMAP)) {
		ob_jw_key(&w, "use_mmap");
		ob_jw_bool(&w, o->use_mmap);
	}
	I(num_thread, "num_thread");
	I(draft_num_predict, "draft_num_predict");
	I(num_keep, "num_keep");
	I(seed, "seed");
	I(num_predict, "num_predict");
	I(top_k, "top_k");
	F(top_p, "top_p");
	F(min_p, "min_p");
	F(typical_p, "typical_p");
	I(repeat_last_n, "repeat_last_n");
	F(temperature, "temperature");
	F(repeat_penalty, "repeat_penalty");
	F(presence_penalty, "presence_penalty");
	F(frequency_penalty, "frequency_penalty");
	if (o->n_stop) {
		ob_jw_key(&w, "stop");
		ob_jw_arr(&w);
		for (size_t i = 0; i < o->n_stop; i++)
			ob_jw_string(&w, o->stop[i]);
		ob_jw_arr_end(&w);
	}
#undef I
#undef F
	ob_jw_obj_end(&w);
	return ob_jw_take(&w, NULL);
}

static void options_rows(void)
{
	char path[4096];
	snprintf(path, sizeof path, "%s", tm_srcpath("tests/data/modelfile/params/options.tsv"));
	char *data = mft_read(path, NULL);
	CHECKF(data != NULL, "cannot read %s", path);
	if (!data)
		return;
	int rows = 0;
	char *save = NULL;
	for (char *line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#')
			continue;
		char *f[4] = {0};
		int n = split_tabs(line, f, 4);
		if (n < 3)
			continue;
		rows++;
		struct ob_json_error jerr;
		struct ob_json_doc *doc = ob_json_parse(f[0], strlen(f[0]), &jerr);
		CHECKF(doc != NULL, "%s: %s", f[0], jerr.message);
		if (!doc)
			continue;
		struct mf_options o;
		memset(&o, 0, sizeof o);
		struct mf_warnings w = {0};
		struct mf_error err = {0};
		int rc = mf_options_apply_json(&o, ob_json_root(doc), &w, &err);
		if (strcmp(f[1], "error") == 0) {
			CHECKF(rc == MF_ERR_INVALID && strcmp(err.msg, f[2]) == 0 && err.http_status == 500,
			       "%s: rc %d \"%s\", expected \"%s\"", f[0], rc, err.msg, f[2]);
		} else {
			char *got = rc == MF_OK ? marshal_options(&o) : NULL;
			CHECKF(got && strcmp(got, f[2]) == 0, "%s: %s, expected %s", f[0], got ? got : err.msg, f[2]);
			free(got);
			const char *want_warn = n >= 4 ? f[3] : "";
			char warns[1024] = "";
			for (size_t i = 0; i < w.n; i++)
				snprintf(warns + strlen(warns), sizeof warns - strlen(warns), "%s%s", i ? ";" : "", w.items[i]);
			CHECKF(strcmp(warns, want_warn) == 0, "%s: warnings \"%s\", expected \"%s\"", f[0], warns, want_warn);
		}
		mf_options_free(&o);
		mf_warnings_free(&w);
		ob_json_free(doc);
	}
	CHECKF(rows >= 30, "only %d option rows", rows);
	free(data);
}

static void options_extensions(void)
{
	const char *js = "{\"rope_freq_base\": 1000000, \"rope_frequency_scale\": 0.5, \"cache_prompt\": false, "
			 "\"no_mmap\": true, \"num_gqa\": 8, \"mirostat\": 0}";
	struct ob_json_error jerr;
	struct ob_json_doc *doc = ob_json_parse(js, strlen(js), &jerr);
	CHECK(doc != NULL);
	struct mf_options o;
	mf_options_init(&o);
	struct mf_warnings w = {0};
	struct mf_error err;
	CHECK(mf_options_apply_json(&o, ob_json_root(doc), &w, &err) == MF_OK);
	CHECK(o.rope_freq_base == 1000000.0f);
	CHECK(o.rope_freq_scale == 0.5f);
	CHECK(!o.cache_prompt);
	CHECK(!o.use_mmap && (o.set & (1ull << MF_OPT_USE_MMAP)));
	CHECK(o.set & (1ull << MF_OPT_ROPE_FREQ_BASE));
	CHECK_EQ_INT(w.n, 3);
	if (w.n == 3) {
		CHECK_STREQ(w.items[0], "option no_mmap is not an Ollama option; taken as use_mmap false");
		CHECK_STREQ(w.items[1], "option num_gqa is ignored: the model's own attention head counts are used");
		CHECK_STREQ(w.items[2], "invalid option provided option=mirostat");
	}
	mf_warnings_free(&w);
	ob_json_free(doc);

	js = "{\"cache_prompt\": 1}";
	doc = ob_json_parse(js, strlen(js), &jerr);
	CHECK(mf_options_apply_json(&o, ob_json_root(doc), NULL, &err) == MF_ERR_INVALID);
	CHECK_STREQ(err.msg, "option \"cache_prompt\" must be of type boolean");
	ob_json_free(doc);
	js = "{\"num_ctx\": 1e400}";
	doc = ob_json_parse(js, strlen(js), &jerr);
	if (doc) {
		CHECK(mf_options_apply_json(&o, ob_json_root(doc), NULL, &err) == MF_ERR_INVALID);
		CHECK_STREQ(err.msg, "json: cannot unmarshal number 1e400 into Go value of type float64");
		ob_json_free(doc);
	}
	js = "[1]";
	doc = ob_json_parse(js, strlen(js), &jerr);
	CHECK(mf_options_apply_json(&o, ob_json_root(doc), NULL, &err) == MF_ERR_INVALID);
	ob_json_free(doc);
	mf_options_free(&o);
}

static void defaults_and_schema(void)
{
	struct mf_options o, c;
	mf_options_init(&o);
	CHECK(o.num_predict == -1 && o.num_keep == 4 && o.top_k == 40 && o.seed == -1);
	CHECK(o.temperature == 0.8f && o.top_p == 0.9f && o.typical_p == 1.0f && o.repeat_penalty == 1.0f);
	CHECK(o.repeat_last_n == 64 && o.num_batch == 512 && o.num_gpu == -1 && o.draft_num_predict == 4);
	CHECK(o.num_ctx == 0 && o.cache_prompt && o.set == 0 && o.min_p == 0);
	o.stop = calloc(2, sizeof *o.stop);
	o.stop[0] = strdup("a");
	o.stop[1] = strdup("b");
	o.n_stop = 2;
	CHECK(mf_options_copy(&c, &o) == MF_OK);
	CHECK(c.n_stop == 2 && c.stop != o.stop && strcmp(c.stop[1], "b") == 0);
	mf_options_free(&c);
	mf_options_free(&o);
	mf_options_free(NULL);

	/* every Options/Runner JSON tag of Ollama's HEAD is in the schema with its Go type */
	static const struct {
		const char *name;
		enum mf_opt_type type;
	} ollama[] = {{"num_ctx", MF_OPT_INT},          {"num_batch", MF_OPT_INT},          {"num_gpu", MF_OPT_INT},
		      {"main_gpu", MF_OPT_INT_PTR},     {"use_mmap", MF_OPT_BOOL_PTR},      {"num_thread", MF_OPT_INT},
		      {"draft_num_predict", MF_OPT_INT}, {"num_keep", MF_OPT_INT},          {"seed", MF_OPT_INT},
		      {"num_predict", MF_OPT_INT},      {"top_k", MF_OPT_INT},              {"top_p", MF_OPT_FLOAT},
		      {"min_p", MF_OPT_FLOAT},          {"typical_p", MF_OPT_FLOAT},        {"repeat_last_n", MF_OPT_INT},
		      {"temperature", MF_OPT_FLOAT},    {"repeat_penalty", MF_OPT_FLOAT},   {"presence_penalty", MF_OPT_FLOAT},
		      {"frequency_penalty", MF_OPT_FLOAT}, {"stop", MF_OPT_STRINGS}};
	for (size_t i = 0; i < sizeof ollama / sizeof ollama[0]; i++) {
		const struct mf_opt_info *info = mf_opt_lookup(ollama[i].name);
		CHECKF(info && info->type == ollama[i].type && !info->extension, "%s", ollama[i].name);
	}
	CHECK(mf_opt_lookup("rope_freq_base")->extension);
	CHECK(mf_opt_lookup("num_ctx")->runner && !mf_opt_lookup("temperature")->runner);
	CHECK(mf_opt_lookup("tfs_z") == NULL);
	CHECK(mf_opt_is_deprecated("mirostat") && !mf_opt_is_deprecated("tfs_z"));
	for (int i = 0; i < MF_OPT__COUNT; i++)
		CHECK(mf_opt_info((enum mf_opt_id)i)->id == (enum mf_opt_id)i);

	/* accumulation: stop appends, others replace */
	struct mf_params p = {0};
	struct mf_error err;
	CHECK(mf_params_set(&p, "stop", "<|im_start|>", NULL, &err) == MF_OK);
	CHECK(mf_params_set(&p, "temperature", "0.1", NULL, &err) == MF_OK);
	CHECK(mf_params_set(&p, "stop", "<|im_end|>", NULL, &err) == MF_OK);
	CHECK(mf_params_set(&p, "temperature", "0.6", NULL, &err) == MF_OK);
	CHECK(mf_params_set(&p, "num_ctx", "40960", NULL, &err) == MF_OK);
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	CHECK(mf_params_write_json(&p, &w, &err) == MF_OK);
	CHECK_STREQ(ob_jw_str(&w), "{\"num_ctx\":40960,\"stop\":[\"\\u003c|im_start|\\u003e\",\"\\u003c|im_end|\\u003e\"],"
				   "\"temperature\":0.6}");
	ob_jw_free(&w);
	CHECK(mf_params_get(&p, "stop")->n_strs == 2);
	CHECK(mf_params_get(&p, "top_k") == NULL);
	mf_params_free(&p);
}

static void go_formatting(void)
{
	static const struct {
		double v;
		const char *want;
	} floats[] = {
#include "tests/modelfile/gofmt_floats.inc"
	};
	for (size_t i = 0; i < sizeof floats / sizeof floats[0]; i++) {
		char buf[40];
		ob_go_format_float(buf, floats[i].v);
		CHECKF(strcmp(buf, floats[i].want) == 0, "%.17g: \"%s\", expected \"%s\"", floats[i].v, buf, floats[i].want);
	}
	static const struct {
		const char *in, *want;
	} quotes[] = {
		{"plain", "\"plain\""},
		{"a\"b", "\"a\\\"b\""},
		{"back\\slash", "\"back\\\\slash\""},
		{"nl\nx", "\"nl\\nx\""},
		{"tab\t", "\"tab\\t\""},
		{"\x01\x7f", "\"\\x01\\x7f\""},
		{"é中😀", "\"é中😀\""},
		{"\u00a0\u200d\u2028", "\"\\u00a0\\u200d\\u2028\""},
		{"\xff\xfe", "\"\\xff\\xfe\""},
		{"<|im_end|>", "\"<|im_end|>\""},
		{"\a\b\f\r\v", "\"\\a\\b\\f\\r\\v\""},
	};
	for (size_t i = 0; i < sizeof quotes / sizeof quotes[0]; i++) {
		struct ob_buf b;
		ob_buf_init(&b, 0);
		ob_go_quote(&b, quotes[i].in, strlen(quotes[i].in));
		CHECKF(strcmp(b.p, quotes[i].want) == 0, "%s: %s", quotes[i].want, b.p);
		ob_buf_free(&b);
	}
	struct ob_buf b;
	ob_buf_init(&b, 0);
	ob_go_quote(&b, "\0x", 2);
	CHECK_STREQ(b.p, "\"\\x00x\"");
	ob_buf_free(&b);

	CHECK(ob_go_float_to_int(1e300) == INT64_MIN && ob_go_float_to_int(-4096.9) == -4096);
	bool v;
	CHECK(ob_go_parse_bool("True", &v) && v && !ob_go_parse_bool("yes", &v));
}

int main(void)
{
	modelfile_rows("modelfile.tsv");
	modelfile_rows("extensions.tsv");
	options_rows();
	options_extensions();
	defaults_and_schema();
	go_formatting();
	return check_done();
}
