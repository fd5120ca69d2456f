/* tests/modelfile/test_parser.c — the Modelfile parser and printer against golden data.
 *
 * tests/data/modelfile/parse/X.Modelfile has X.expected (the commands, or the error text) and, when it
 * parses, X.printed (Modelfile.String()); both were produced by Ollama's own parser (see the README there).
 * The 47 real-world Modelfiles of ../shared/testdata/library-modelfiles are parsed after the README's
 * placeholder substitution and compared with tests/data/modelfile/library. Every printed form must parse
 * back to the same commands.
 */
#include "config.h"

#include "modelfile/parser.h"
#include "tests/check.h"
#include "tests/modelfile/mftest.h"
#include "tests/testmodel.h"

/* The golden-file form of a parse result. */
static char *describe(const char *data, size_t len)
{
	struct mf_modelfile *mf;
	struct mf_error err;
	int rc = mf_parse(data, len, &mf, &err);
	size_t cap = 64 + len * 8;
	char *out = calloc(1, cap + 1024);
	if (rc != MF_OK) {
		strcpy(out, "error\t");
		mft_escape(out, err.msg);
		strcat(out, "\n");
		return out;
	}
	for (size_t i = 0; i < mf->n_cmds; i++) {
		strcat(out, "cmd\t");
		mft_escape(out, mf->cmds[i].name);
		strcat(out, "\t");
		mft_escape(out, mf->cmds[i].args);
		strcat(out, "\n");
	}
	mf_modelfile_free(mf);
	return out;
}

static void check_case(const char *label, const char *data, size_t len, const char *exp_path, const char *printed_path)
{
	char *expected = mft_read(exp_path, NULL);
	CHECKF(expected != NULL, "%s: cannot read %s", label, exp_path);
	if (!expected)
		return;
	char *got = describe(data, len);
	CHECKF(strcmp(got, expected) == 0, "%s: parse result differs\n--- got\n%s--- expected\n%s", label, got, expected);

	struct mf_modelfile *mf;
	struct mf_error err;
	if (mf_parse(data, len, &mf, &err) == MF_OK) {
		char *printed = mf_modelfile_string(mf);
		char *want = mft_read(printed_path, NULL);
		CHECKF(want != NULL, "%s: cannot read %s", label, printed_path);
		CHECKF(printed && want && strcmp(printed, want) == 0, "%s: printed form differs\n--- got\n%s--- expected\n%s",
		       label, printed ? printed : "(null)", want ? want : "(null)");
		/* round trip: the printed form parses to the same commands */
		char *again = describe(printed, strlen(printed));
		CHECKF(strcmp(again, got) == 0, "%s: printed form does not parse back\n%s", label, again);
		free(again);
		free(printed);
		free(want);
		mf_modelfile_free(mf);
	}
	free(got);
	free(expected);
}

static void golden_dir(void)
{
	char dir[4096];
	snprintf(dir, sizeof dir, "%s", tm_srcpath("tests/data/modelfile/parse"));
	int n;
	char **names = mft_list(dir, ".Modelfile", &n);
	CHECKF(n >= 40, "only %d cases in %s", n, dir);
	for (int i = 0; i < n; i++) {
		char path[4600], exp[4600], pr[4600];
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		size_t base = strlen(path) - strlen(".Modelfile");
		snprintf(exp, sizeof exp, "%.*s.expected", (int)base, path);
		snprintf(pr, sizeof pr, "%.*s.printed", (int)base, path);
		size_t len = 0;
		char *data = mft_read(path, &len);
		check_case(names[i], data, len, exp, pr);
		free(data);
	}
	mft_list_free(names);
}

static void library(void)
{
	char dir[4096], gold[4096];
	snprintf(dir, sizeof dir, "%s", check_shared_path("testdata/library-modelfiles"));
	snprintf(gold, sizeof gold, "%s", tm_srcpath("tests/data/modelfile/library"));
	int n;
	char **names = mft_list(dir, ".Modelfile", &n);
	CHECKF(n == 47, "%d library Modelfiles in %s, expected 47", n, dir);
	for (int i = 0; i < n; i++) {
		char path[4600], exp[4600], pr[4600];
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		size_t base = strlen(names[i]) - strlen(".Modelfile");
		snprintf(exp, sizeof exp, "%s/%.*s.expected", gold, (int)base, names[i]);
		snprintf(pr, sizeof pr, "%s/%.*s.printed", gold, (int)base, names[i]);
		char *raw = mft_read(path, NULL);
		char *a = mft_replace(raw, "{__FILE_LOCATION__}", "./model.gguf");
		char *b = mft_replace(a, "{__EOS_TOKEN__}", "</s>");
		check_case(names[i], b, strlen(b), exp, pr);
		free(raw);
		free(a);
		free(b);
	}
	mft_list_free(names);
}

static void api(void)
{
	char *q;
	q = mf_quote("plain");
	CHECK_STREQ(q, "plain");
	free(q);
	q = mf_quote(" lead");
	CHECK_STREQ(q, "\" lead\"");
	free(q);
	q = mf_quote("a\n\"b\"");
	CHECK_STREQ(q, "\"\"\"a\n\"b\"\"\"\"");
	free(q);
	q = mf_quote("");
	CHECK_STREQ(q, "");
	free(q);

	struct mf_modelfile *mf = mf_modelfile_new();
	CHECK(mf != NULL);
	CHECK(mf_modelfile_add(mf, "model", "/blobs/sha256-x") == MF_OK);
	CHECK(mf_modelfile_add(mf, "message", "user: hi there") == MF_OK);
	CHECK(mf_modelfile_add(mf, "message", "nocolon") == MF_OK);
	CHECK(mf_modelfile_add(mf, "num_ctx", "4096") == MF_OK);
	char *s = mf_modelfile_string(mf);
	CHECK_STREQ(s, "FROM /blobs/sha256-x\nMESSAGE user hi there\nMESSAGE nocolon \nPARAMETER num_ctx 4096\n");
	free(s);
	mf_modelfile_free(mf);
	mf_modelfile_free(NULL);

	/* limits */
	struct mf_error err;
	static char big[1];
	CHECK(mf_parse(big, (size_t)MF_MAX_MODELFILE_SIZE + 1, &mf, &err) == MF_ERR_LIMIT);
	CHECK(mf == NULL);
}

int main(void)
{
	golden_dir();
	library();
	api();
	return check_done();
}
