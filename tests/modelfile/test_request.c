/* tests/modelfile/test_request.c — the client side of `ollama create`: a Modelfile becomes the /api/create
 * body Ollama's CLI sends (paths expanded, files found in model folders, named and hashed, parameters
 * converted, licenses and messages accumulated, REQUIRES checked), with Ollama's error texts. */
#include "config.h"

#include <sys/stat.h>

#include "gguf/writer.h"
#include "modelfile/request.h"
#include "tests/check.h"
#include "tests/modelfile/mftest.h"
#include "tests/testmodel.h"

static char *tmp;   /* scratch folder */

static char *tpath(const char *rel)
{
	static char buf[4][4096];
	static int k;
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof buf[k], "%s/%s", tmp, rel);
	return buf[k];
}

/* A small GGUF: arch, general.file_type ft (or none when ft < 0), an optional chat template and kind. */
static void write_gguf(const char *path, const char *arch, int ft, const char *chat_template, const char *kind,
		       uint32_t tensor_type)
{
	struct gguf_writer *w = gguf_writer_new();
	char key[128];
	CHECK(gguf_w_str(w, "general.architecture", arch) == GGUF_OK);
	if (kind)
		CHECK(gguf_w_str(w, "general.type", kind) == GGUF_OK);
	if (ft >= 0)
		CHECK(gguf_w_u32(w, "general.file_type", (uint32_t)ft) == GGUF_OK);
	snprintf(key, sizeof key, "%s.block_count", arch);
	CHECK(gguf_w_u32(w, key, 1) == GGUF_OK);
	if (chat_template)
		CHECK(gguf_w_str(w, "tokenizer.chat_template", chat_template) == GGUF_OK);
	int64_t ne[2] = {64, 32};
	CHECK(gguf_w_tensor(w, "token_embd.weight", tensor_type, 2, ne, NULL, NULL, NULL) == GGUF_OK);
	int64_t ne1[1] = {64};
	CHECK(gguf_w_tensor(w, "output_norm.weight", GGUF_TYPE_F32, 1, ne1, NULL, NULL, NULL) == GGUF_OK);
	struct gguf_error ge;
	CHECKF(gguf_writer_write_file(w, path, &ge) == GGUF_OK, "%s", ge.msg);
	gguf_writer_free(w);
}

/* ---------------------------------------------------------------------------------------------------- */
/* Client side */

static struct mf_modelfile *parse_text(const char *text)
{
	struct mf_modelfile *mf = NULL;
	struct mf_error err;
	CHECKF(mf_parse(text, strlen(text), &mf, &err) == MF_OK, "%s", err.msg);
	return mf;
}

static void client_side(void)
{
	mkdir(tpath("m"), 0755);
	write_gguf(tpath("m/model.gguf"), "llama", 1, NULL, NULL, GGUF_TYPE_F16);
	struct mf_modelfile *mf = parse_text("FROM ./model.gguf\n"
					     "PARAMETER temperature 0.6\nPARAMETER stop <|im_end|>\nPARAMETER mirostat 2\n"
					     "PARAMETER stop \"<|im_start|>\"\nPARAMETER num_ctx 40960\n"
					     "TEMPLATE \"\"\"{{ .Prompt }}\"\"\"\nSYSTEM You are terse.\nLICENSE MIT\nLICENSE \"two\nlines\"\n"
					     "MESSAGE user hi\nMESSAGE assistant \"hello: there\"\nREQUIRES 0.14.0\n");
	struct mf_create_spec spec = {0};
	struct mf_warnings w = {0};
	struct mf_error err;
	CHECKF(mf_spec_from_modelfile(mf, tpath("m"), true, &spec, &w, &err) == MF_OK, "%s", err.msg);
	CHECK(mf_spec_name_files(&spec) == MF_OK);
	spec.model = strdup("tiny");
	CHECK_EQ_INT(spec.files.n, 1);
	CHECK_EQ_INT(w.n, 1);
	if (w.n)
		CHECK_STREQ(w.items[0], "parameter mirostat is deprecated");
	char digest[MF_DIGEST_LEN + 1];
	uint64_t size;
	CHECK(mf_sha256_file(tpath("m/model.gguf"), digest, &size, &err) == MF_OK);
	size_t len;
	char *body = mf_spec_to_json(&spec, &len, &err);
	char want[8192];
	snprintf(want, sizeof want,
		 "{\"model\":\"tiny\",\"files\":{\"model.gguf\":\"%s\"},\"template\":\"{{ .Prompt }}\","
		 "\"license\":[\"MIT\",\"two\\nlines\"],\"system\":\"You are terse.\","
		 "\"parameters\":{\"num_ctx\":40960,\"stop\":[\"\\u003c|im_end|\\u003e\",\"\\u003c|im_start|\\u003e\"],\"temperature\":0.6},"
		 "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"},{\"role\":\"assistant\",\"content\":\"hello: there\"}],"
		 "\"requires\":\"0.14.0\",\"name\":\"\"}",
		 digest);
	CHECKF(body && strcmp(body, want) == 0, "body\n%s\nexpected\n%s", body ? body : "(null)", want);
	free(body);
	mf_spec_free(&spec);
	mf_warnings_free(&w);
	mf_modelfile_free(mf);

	/* FROM a name; FROM ~ expansion; errors with Ollama's texts */
	struct {
		const char *modelfile, *error, *from;
	} cases[] = {
		{"FROM qwen3:14b-fp8\nPARAMETER num_ctx 131072\n", NULL, "qwen3:14b-fp8"},
		{"FROM llama3\nPARAMETER Temperature 1\n", "unknown parameter 'Temperature'", NULL},
		{"FROM llama3\nPARAMETER num_ctx big\n", "invalid int value [big]", NULL},
		{"FROM llama3\nREQUIRES latest\n", "requires must be a valid semver (e.g. 0.14.0)", NULL},
		{"FROM llama3\nREQUIRES v0.14\n", NULL, "llama3"},
		{"FROM llama3\nREQUIRES 01.2.3\n", "requires must be a valid semver (e.g. 0.14.0)", NULL},
		{"FROM llama3\nADAPTER ./missing.gguf\n", "stat %s/m/missing.gguf: No such file or directory", NULL},
		{"FROM ./model.gguf\nDRAFT ./model.gguf\n", "DRAFT must not reference the same local path as FROM: %s/m/model.gguf", NULL},
		{"FROM ./empty\n", "no Modelfile or safetensors files found", NULL},
	};
	mkdir(tpath("m/empty"), 0755);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		mf = parse_text(cases[i].modelfile);
		struct mf_create_spec s = {0};
		int rc = mf_spec_from_modelfile(mf, tpath("m"), false, &s, NULL, &err);
		if (cases[i].error) {
			char e[4096];
			snprintf(e, sizeof e, cases[i].error, tmp);
			CHECKF(rc != MF_OK && strcmp(err.msg, e) == 0, "case %zu: rc %d \"%s\", expected \"%s\"", i, rc,
			       rc ? err.msg : "", e);
		} else {
			CHECKF(rc == MF_OK, "case %zu: %s", i, err.msg);
			CHECK_STREQ(s.from, cases[i].from);
		}
		mf_spec_free(&s);
		mf_modelfile_free(mf);
	}
	char *e = mf_expand_path("~/x/../y", "/ignored", &err);
	char home[4096];
	snprintf(home, sizeof home, "%s/y", getenv("HOME"));
	CHECK_STREQ(e, home);
	free(e);
	e = mf_expand_path("a/./b/../c", "/base//dir", &err);
	CHECK_STREQ(e, "/base/dir/a/c");
	free(e);
	e = mf_expand_path("/abs/../p", "/base", &err);
	CHECK_STREQ(e, "/p");
	free(e);
	e = mf_expand_path("~root/z", "/base", &err);
	CHECK(e && strcmp(e + strlen(e) - 2, "/z") == 0);
	free(e);
	CHECK(mf_expand_path("~no_such_user_orun/z", "/", &err) == NULL);
	CHECK_STREQ(err.msg, "failed to find user 'no_such_user_orun': user: unknown user no_such_user_orun");

	/* a safetensors folder: the weights, the json files (also one folder down), names relative to it */
	mkdir(tpath("st"), 0755);
	mkdir(tpath("st/sub"), 0755);
	mft_write(tpath("st/model-00001-of-00002.safetensors"), "\x08\0\0\0\0\0\0\0{}      ", 16);
	mft_write(tpath("st/model-00002-of-00002.safetensors"), "\x08\0\0\0\0\0\0\0{}      ", 16);
	mft_write(tpath("st/config.json"), "{}", 2);
	mft_write(tpath("st/tokenizer.json"), "{}", 2);
	mft_write(tpath("st/sub/config.json"), "{}", 2);
	mft_write(tpath("st/README.md"), "x", 1);
	mf = parse_text("FROM .\n");
	struct mf_create_spec s = {0};
	CHECKF(mf_spec_from_modelfile(mf, tpath("st"), true, &s, NULL, &err) == MF_OK, "%s", err.msg);
	CHECK(mf_spec_name_files(&s) == MF_OK);
	CHECK_EQ_INT(s.files.n, 5);
	const char *names[] = {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "config.json",
			       "tokenizer.json", "sub/config.json"};
	for (size_t i = 0; i < 5 && i < s.files.n; i++)
		CHECKF(strcmp(s.files.v[i].name, names[i]) == 0, "file %zu: %s", i, s.files.v[i].name);
	mf_spec_free(&s);
	mf_modelfile_free(mf);
	/* a git-lfs pointer where a GGUF is expected is not taken */
	mkdir(tpath("lfs"), 0755);
	mft_write(tpath("lfs/model.gguf"), "version https://git-lfs.github.com/spec/v1\n", 43);
	mf = parse_text("FROM ./lfs\n");
	int lrc = mf_spec_from_modelfile(mf, tmp, false, &s, NULL, &err);
	CHECKF(lrc == MF_ERR_NOT_FOUND && strcmp(err.msg, "no Modelfile or safetensors files found") == 0, "%d %s", lrc, err.msg);
	mf_spec_free(&s);
	mf_modelfile_free(mf);

	CHECK(mf_semver_valid("v0.14.0") && mf_semver_valid("v1") && mf_semver_valid("v1.2") &&
	      mf_semver_valid("v1.2.3-rc.1+build.5") && !mf_semver_valid("v1.2.3-01") && !mf_semver_valid("1.2.3") &&
	      !mf_semver_valid("v1.2-pre"));
}

int main(void)
{
	tmp = mft_tmpdir();
	CHECK(tmp != NULL);
	if (!tmp)
		return check_done();
	client_side();
	mft_rmrf(tmp);
	free(tmp);
	return check_done();
}
