/* tests/modelfile/test_names.c — model names against Ollama's own results (tests/data/modelfile/names.tsv):
 * validity, parts, String(), DisplayShortest(), Filepath(), plus ParseNameFromFilepath and EqualFold. */
#include "config.h"

#include "modelfile/name.h"
#include "tests/check.h"
#include "tests/modelfile/mftest.h"
#include "tests/testmodel.h"

static void rows(void)
{
	char *data = mft_read(tm_srcpath("tests/data/modelfile/names.tsv"), NULL);
	CHECK(data != NULL);
	if (!data)
		return;
	int n = 0;
	for (char *line = data, *next; *line; line = next) {
		next = strchr(line, '\n');
		if (!next)
			next = line + strlen(line);
		else
			*next++ = 0;
		if (line[0] == '#')
			continue;
		char *f[10];
		int k = 0;
		f[k++] = line;
		for (char *p = line; *p && k < 10; p++)
			if (*p == '\t') {
				*p = 0;
				f[k++] = p + 1;
			}
		CHECKF(k == 10, "bad row %s", line);
		if (k != 10)
			continue;
		n++;
		struct mf_name nm;
		mf_name_parse(f[0], &nm);
		bool valid = strcmp(f[1], "valid") == 0;
		CHECKF(mf_name_is_valid(&nm) == valid, "[%s]: valid %d", f[0], mf_name_is_valid(&nm));
		if (nm.overlong) {
			CHECKF(!valid, "[%s]: overlong but valid", f[0]);
			continue;
		}
		char buf[MF_NAME_STRING_MAX];
		CHECKF(strcmp(nm.scheme, f[2]) == 0, "[%s] scheme %s", f[0], nm.scheme);
		CHECKF(strcmp(nm.host, f[3]) == 0, "[%s] host %s", f[0], nm.host);
		CHECKF(strcmp(nm.ns, f[4]) == 0, "[%s] ns %s", f[0], nm.ns);
		CHECKF(strcmp(nm.model, f[5]) == 0, "[%s] model %s", f[0], nm.model);
		CHECKF(strcmp(nm.tag, f[6]) == 0, "[%s] tag %s", f[0], nm.tag);
		CHECKF(strcmp(mf_name_string(&nm, buf), f[7]) == 0, "[%s] string %s", f[0], buf);
		CHECKF(strcmp(mf_name_display(&nm, buf), f[8]) == 0, "[%s] display %s", f[0], buf);
		CHECKF(strcmp(mf_name_filepath(&nm, buf), f[9]) == 0, "[%s] filepath %s", f[0], buf);
		if (valid) {
			struct mf_name back;
			CHECKF(mf_name_from_filepath(f[9], &back) && mf_name_equal_fold(&back, &nm), "[%s] from filepath", f[0]);
		}
	}
	CHECKF(n >= 50, "%d rows", n);
	free(data);
}

static void misc(void)
{
	struct mf_name a, b;
	mf_name_parse("LLaMA3:Latest", &a);
	mf_name_parse("registry.ollama.ai/library/llama3:latest", &b);
	CHECK(mf_name_equal_fold(&a, &b));
	mf_name_parse("llama3:8b", &b);
	CHECK(!mf_name_equal_fold(&a, &b));
	CHECK(!mf_name_from_filepath("a/b/c", &a));
	CHECK(!mf_name_from_filepath("a/b/c/d/e", &a));
	CHECK(!mf_name_from_filepath("a/b/-c/d", &a));
	CHECK(mf_name_from_filepath("example.com:5000/ns/m/v1", &a) && strcmp(a.host, "example.com:5000") == 0);
	CHECK(mf_name_valid_namespace("library") && !mf_name_valid_namespace("a.b"));
	mf_name_parse_bare("m", &a);
	CHECK(a.host[0] == 0 && a.tag[0] == 0 && strcmp(a.model, "m") == 0);

	/* a NUL inside a name (a JSON "\u0000") makes it invalid, as in Go, instead of ending it (issue 20, F4) */
	static const char nul[] = "nulname\0evil";
	mf_name_parse_n(nul, sizeof nul - 1, &a);
	CHECK(!mf_name_is_valid(&a));
	mf_name_parse_n("ok\0", 3, &a);
	CHECK(!mf_name_is_valid(&a));
	mf_name_parse_n("\0", 1, &a);
	CHECK(!mf_name_is_valid(&a));
	mf_name_parse_n("nulname", 7, &a);
	CHECK(mf_name_is_valid(&a) && strcmp(a.model, "nulname") == 0);
	mf_name_parse_n("ok\0", 2, &a); /* only the given length counts */
	CHECK(mf_name_is_valid(&a));
	char q[MF_NAME_QUOTE_MAX];
	CHECK_STREQ(mf_name_quote(nul, sizeof nul - 1, q), "\"nulname\\x00evil\"");
	CHECK_STREQ(mf_name_quote("a\"b\\c\n\xff", 7, q), "\"a\\\"b\\\\c\\n\\xff\"");
	char big[4000];
	memset(big, 1, sizeof big);
	mf_name_quote(big, sizeof big, q); /* cut short, still one quoted string */
	CHECK(strlen(q) < MF_NAME_QUOTE_MAX && q[0] == '"' && q[strlen(q) - 1] == '"');
}

int main(void)
{
	rows();
	misc();
	return check_done();
}
