/* tests/modelfile/test_examples.c — the Modelfiles in examples/ (the seeds' two and the quickstart one)
 * parse, convert (with orun's warnings for num_gqa and no_mmap), and create a model from the small real
 * GGUF (SmolLM2 when cached, else a synthetic GGUF) whose stored parameters, system prompt and template
 * are what the Modelfile says. */
#include "config.h"

#include <sys/stat.h>

#include "gguf/writer.h"
#include "modelfile/create.h"
#include "modelfile/model.h"
#include "modelfile/request.h"
#include "tests/check.h"
#include "tests/modelfile/mftest.h"
#include "tests/testmodel.h"

static char *tmp;

struct example {
	const char *file;
	const char *warning; /* NULL = none */
	const char *parameters; /* /api/show parameters text after create */
	const char *system_start;
	bool has_template;
};

static const struct example examples[] = {
	{"qwen3-14b-fast.Modelfile", "parameter num_gqa is ignored: the model's own attention head counts are used",
	 "num_ctx                        131072\n"
	 "stop                           \"<|im_start|>\"\n"
	 "stop                           \"<|im_end|>\"\n"
	 "temperature                    0.7",
	 "\nYou are Qwen3-14B, a helpful AI assistant.", false},
	{"qwen3-14b-nothink.Modelfile", "parameter no_mmap is not an Ollama parameter; stored as use_mmap false",
	 "num_batch                      128\n"
	 "num_ctx                        32768\n"
	 "num_gpu                        1\n"
	 "rope_freq_base                 1e+06\n"
	 "stop                           \"<|im_start|>\"\n"
	 "stop                           \"<|im_end|>\"\n"
	 "use_mmap                       false",
	 "\n你是一个高效、简洁、直接的助手。", false},
	{"Modelfile.quickstart", NULL,
	 "num_ctx                        4096\n"
	 "repeat_penalty                 1.05\n"
	 "stop                           \"<|im_end|>\"\n"
	 "stop                           \"<|endoftext|>\"\n"
	 "temperature                    0.7\n"
	 "top_k                          20\n"
	 "top_p                          0.8",
	 "You are a concise coding assistant.", true},
};

/* A stand-in for the real model: a GGUF with SmolLM2's chat template (ChatML). */
static void synthetic(const char *path)
{
	struct gguf_writer *w = gguf_writer_new();
	CHECK(gguf_w_str(w, "general.architecture", "llama") == GGUF_OK);
	CHECK(gguf_w_u32(w, "general.file_type", 3) == GGUF_OK);
	CHECK(gguf_w_str(w, "tokenizer.chat_template",
			 "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
			 "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}") ==
	      GGUF_OK);
	int64_t ne[2] = {32, 8};
	CHECK(gguf_w_tensor(w, "token_embd.weight", GGUF_TYPE_Q4_1, 2, ne, NULL, NULL, NULL) == GGUF_OK);
	struct gguf_error ge;
	CHECK(gguf_writer_write_file(w, path, &ge) == GGUF_OK);
	gguf_writer_free(w);
}

int main(void)
{
	tmp = mft_tmpdir();
	CHECK(tmp != NULL);
	if (!tmp)
		return check_done();
	char model[4096], store_dir[4200];
	const char *real = tm_model_path("llama");
	if (real) {
		snprintf(model, sizeof model, "%s", real);
	} else {
		snprintf(model, sizeof model, "%s/stand-in.gguf", tmp);
		synthetic(model);
		fprintf(stderr, "note: SmolLM2 is not cached; the examples are created from a synthetic GGUF\n");
	}
	snprintf(store_dir, sizeof store_dir, "%s/models", tmp);
	struct mf_store *st;
	struct mf_error err;
	CHECK(mf_store_open(store_dir, &st, &err) == MF_OK);
	char digest[MF_DIGEST_LEN + 1];
	CHECKF(mf_store_put_file(st, model, digest, NULL, NULL, &err) == MF_OK, "%s", err.msg);

	for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++) {
		const struct example *ex = &examples[i];
		char path[4096];
		snprintf(path, sizeof path, "%s/examples/%s", tm_srcpath("."), ex->file);
		char *text = mft_read(path, NULL);
		CHECKF(text != NULL, "cannot read %s", path);
		if (!text)
			continue;
		/* FROM <the test model>, as tools/quickstart does with sed */
		char *from = strstr(text, "\nFROM ");
		char *line = from ? from + 1 : (strncmp(text, "FROM ", 5) == 0 ? text : NULL);
		CHECKF(line != NULL, "%s has no FROM line", ex->file);
		if (!line) {
			free(text);
			continue;
		}
		char *eol = strchr(line, '\n');
		size_t n = (size_t)(line - text) + 5 + strlen(model) + strlen(eol ? eol : "") + 1;
		char *mf_text = malloc(n);
		snprintf(mf_text, n, "%.*sFROM %s%s", (int)(line - text), text, model, eol ? eol : "");
		struct mf_modelfile *mf;
		CHECKF(mf_parse(mf_text, strlen(mf_text), &mf, &err) == MF_OK, "%s: %s", ex->file, err.msg);
		struct mf_create_spec spec = {0};
		struct mf_warnings w = {0};
		CHECKF(mf_spec_from_modelfile(mf, tmp, false, &spec, &w, &err) == MF_OK, "%s: %s", ex->file, err.msg);
		CHECKF(ex->warning ? (w.n == 1 && strcmp(w.items[0], ex->warning) == 0) : w.n == 0, "%s: %zu warnings (%s)",
		       ex->file, w.n, w.n ? w.items[0] : "");
		CHECK_EQ_INT(spec.files.n, 1);
		if (spec.files.n == 1)
			memcpy(spec.files.v[0].digest, digest, sizeof digest);
		CHECK(mf_spec_name_files(&spec) == MF_OK);
		char name[64];
		snprintf(name, sizeof name, "example-%zu", i);
		spec.model = strdup(name);
		size_t len;
		char *body = mf_spec_to_json(&spec, &len, &err);
		CHECK(body != NULL);
		struct mf_create_request *r = NULL;
		if (body)
			CHECKF(mf_create_request_parse(body, len, &r, NULL, &err) == MF_OK, "%s: %s", ex->file, err.msg);
		if (r) {
			CHECKF(mf_create_run(st, r, NULL, NULL, NULL, &err) == MF_OK, "%s: %s", ex->file, err.msg);
			mf_create_request_free(r);
		}
		struct mf_model *m;
		CHECK(mf_model_load(st, name, &m, &err) == MF_OK);
		if (m) {
			char *p = mf_model_show_parameters(m);
			CHECKF(p && strcmp(p, ex->parameters) == 0, "%s: parameters\n%s\n--- expected\n%s", ex->file, p ? p : "",
			       ex->parameters);
			free(p);
			CHECKF(strncmp(m->system, ex->system_start, strlen(ex->system_start)) == 0, "%s: system %s", ex->file,
			       m->system);
			CHECK(m->has_template);
			if (ex->has_template)
				CHECK(strncmp(m->template_text, "{{- if .Suffix }}<|fim_prefix|>", 31) == 0);
			/* show --modelfile parses back */
			char *sm = mf_model_show_modelfile(m);
			struct mf_modelfile *back = NULL;
			CHECKF(sm && mf_parse(sm, strlen(sm), &back, &err) == MF_OK, "%s: show --modelfile does not parse: %s",
			       ex->file, err.msg);
			mf_modelfile_free(back);
			free(sm);
			mf_model_free(m);
		}
		free(body);
		mf_spec_free(&spec);
		mf_warnings_free(&w);
		mf_modelfile_free(mf);
		free(mf_text);
		free(text);
	}
	mf_store_close(st);
	mft_rmrf(tmp);
	free(tmp);
	return check_done();
}
