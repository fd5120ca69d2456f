/* tests/chatfmt/test_chatfmt.c — the chat-format parsers (runner/chatfmt): format detection over the 42
 * corpus templates against the formats llama.cpp picks, the recorded outputs of tests/data/chatfmt parsed
 * whole, byte by byte (at UTF-8 boundaries) and cut at every split point, the hold-back of partial markers,
 * garbage, the buffer limit and the small API (names, tags, capabilities, per-request adjustment).
 */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "runner/chatfmt/chatfmt.h"
#include "tests/check.h"
#include "tests/testmodel.h"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	struct ob_buf b;
	ob_buf_init(&b, 0);
	char tmp[65536];
	size_t k;
	while ((k = fread(tmp, 1, sizeof tmp, f)) > 0)
		ob_buf_append(&b, tmp, k);
	fclose(f);
	*len = b.len;
	if (!b.p)
		ob_buf_putc(&b, 0), b.len = 0;
	return ob_buf_take(&b);
}

/* ------------------------------------------------------------------------------------------ detection */

static const struct {
	const char *file, *format;
} corpus[] = {
	{"Apertus-8B-Instruct.jinja", "Apertus"},
	{"ByteDance-Seed-OSS.jinja", "Seed-OSS"},
	{"CohereForAI-c4ai-command-r-plus-tool_use.jinja", "Generic"},
	{"CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", "Command R7B"},
	{"GLM-4.6.jinja", "GLM 4.5"},
	{"HuggingFaceTB-SmolLM2-135M-Instruct.jinja", "Generic"},
	{"HuggingFaceTB-SmolLM3-3B.jinja", "Generic"},
	{"Kimi-K2-Thinking.jinja", "Kimi K2"},
	{"LFM2-8B-A1B.jinja", "LFM2 with JSON tools"},
	{"MiniMax-M2.jinja", "MiniMax-M2"},
	{"Mistral-Small-3.2-24B-Instruct-2506.jinja", "Ministral 3"},
	{"NVIDIA-Nemotron-Nano-v2.jinja", "Nemotron V2"},
	{"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja", "Hermes 2 Pro"},
	{"Qwen-QwQ-32B.jinja", "Hermes 2 Pro"},
	{"Qwen-Qwen2.5-7B-Instruct.jinja", "Hermes 2 Pro"},
	{"Qwen-Qwen3-0.6B.jinja", "Hermes 2 Pro"},
	{"Qwen3-Coder.jinja", "Qwen3 Coder"},
	{"Qwen3.5-4B.jinja", "Hermes 2 Pro"},
	{"chujiezheng-llama-2-chat.jinja", "Generic"},
	{"chujiezheng-mistral-instruct.jinja", "Generic"},
	{"chujiezheng-zephyr.jinja", "Generic"},
	{"deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", "DeepSeek R1"},
	{"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "DeepSeek R1"},
	{"deepseek-ai-DeepSeek-V3.1.jinja", "DeepSeek V3.1"},
	{"google-gemma-2-2b-it.jinja", "Generic"},
	{"google-gemma-4-31B-it.jinja", "Generic"},
	{"ibm-granite-granite-3.3-2B-Instruct.jinja", "Granite"},
	{"ibm-granite-granite-4.0.jinja", "Hermes 2 Pro"},
	{"llama-cpp-deepseek-r1.jinja", "DeepSeek R1"},
	{"llama-cpp-microsoft-Phi-4-mini-instruct.jinja", "Generic"},
	{"llama-cpp-rwkv-world.jinja", "Generic"},
	{"meetkai-functionary-medium-v3.1.jinja", "Functionary v3.1 Llama 3.1"},
	{"meetkai-functionary-medium-v3.2.jinja", "Functionary v3.2"},
	{"meta-llama-Llama-3.1-8B-Instruct.jinja", "Llama 3.x"},
	{"meta-llama-Llama-3.2-3B-Instruct.jinja", "Llama 3.x"},
	{"microsoft-Phi-3.5-mini-instruct.jinja", "Generic"},
	{"mistralai-Ministral-3-14B-Reasoning-2512.jinja", "Ministral 3"},
	{"mistralai-Mistral-Nemo-Instruct-2407.jinja", "Mistral Nemo"},
	{"moonshotai-Kimi-K2.jinja", "Kimi K2"},
	{"openai-gpt-oss-120b.jinja", "GPT-OSS"},
	{"unsloth-Apriel-1.5.jinja", "Hermes 2 Pro"},
	{"unsloth-mistral-Devstral-Small-2507.jinja", "Ministral 3"},
};

static void test_detect_corpus(void)
{
	char dir[4096];
	snprintf(dir, sizeof dir, "%s", check_shared_path("testdata/jinja-templates"));
	size_t n = sizeof corpus / sizeof *corpus;
	CHECK_EQ_INT(n, 42);
	for (size_t i = 0; i < n; i++) {
		char path[4200];
		snprintf(path, sizeof path, "%s/%s", dir, corpus[i].file);
		size_t len;
		char *src = slurp(path, &len);
		CHECKF(src != NULL, "cannot read %s", path);
		if (!src)
			continue;
		enum rn_chatfmt_kind k = rn_chatfmt_detect(src, len);
		CHECKF(strcmp(rn_chatfmt_name(k), corpus[i].format) == 0, "%s: %s, want %s", corpus[i].file,
		       rn_chatfmt_name(k), corpus[i].format);
		/* without tools, Generic and Mistral Nemo fall back to content-only */
		enum rn_chatfmt_kind r = rn_chatfmt_for_request(k, src, len, NULL, 0);
		if (k == RN_CHATFMT_GENERIC || k == RN_CHATFMT_MISTRAL_NEMO)
			CHECK_EQ_INT(r, RN_CHATFMT_CONTENT_ONLY);
		else
			CHECK_EQ_INT(r, k);
		if (strcmp(corpus[i].file, "meta-llama-Llama-3.1-8B-Instruct.jinja") == 0) {
			const char *names[] = {"get_weather", "brave_search"};
			CHECK_EQ_INT(rn_chatfmt_for_request(k, src, len, names, 2), RN_CHATFMT_LLAMA3_BUILTIN);
			CHECK_EQ_INT(rn_chatfmt_for_request(k, src, len, names, 1), RN_CHATFMT_LLAMA3);
		}
		if (strcmp(corpus[i].file, "meta-llama-Llama-3.2-3B-Instruct.jinja") == 0) {
			const char *names[] = {"brave_search"};
			CHECK_EQ_INT(rn_chatfmt_for_request(k, src, len, names, 1), RN_CHATFMT_LLAMA3); /* no <|python_tag|> */
		}
		free(src);
	}
}

/* ------------------------------------------------------------------------------------ recorded outputs */

struct result {
	struct ob_buf content, reasoning;
	struct rn_tool_call *calls;
	size_t n_calls;
};

static void result_init(struct result *r)
{
	ob_buf_init(&r->content, 0);
	ob_buf_init(&r->reasoning, 0);
	r->calls = NULL;
	r->n_calls = 0;
}

static void result_free(struct result *r)
{
	ob_buf_free(&r->content);
	ob_buf_free(&r->reasoning);
	rn_tool_calls_free(r->calls, r->n_calls);
}

/* Parses text cut at the offsets cuts[0..n_cuts) (ascending). */
static void parse_cut(enum rn_chatfmt_kind k, const struct rn_chatfmt_opts *o, const char *text, size_t len,
		      const size_t *cuts, size_t n_cuts, struct result *r)
{
	struct rn_chatfmt *p = rn_chatfmt_new(k, o);
	CHECK(p != NULL);
	size_t at = 0;
	for (size_t i = 0; i <= n_cuts; i++) {
		size_t e = i < n_cuts ? cuts[i] : len;
		CHECK(rn_chatfmt_feed(p, text + at, e - at, &r->content, &r->reasoning, &r->calls, &r->n_calls) == 0);
		at = e;
	}
	CHECK(rn_chatfmt_finish(p, &r->content, &r->reasoning, &r->calls, &r->n_calls) == 0);
	rn_chatfmt_free(p);
}

static bool same(const struct result *a, const struct result *b)
{
	if (a->content.len != b->content.len || a->reasoning.len != b->reasoning.len || a->n_calls != b->n_calls)
		return false;
	if ((a->content.len && memcmp(a->content.p, b->content.p, a->content.len)) ||
	    (a->reasoning.len && memcmp(a->reasoning.p, b->reasoning.p, a->reasoning.len)))
		return false;
	for (size_t i = 0; i < a->n_calls; i++)
		if (strcmp(a->calls[i].name, b->calls[i].name) || strcmp(a->calls[i].arguments, b->calls[i].arguments) ||
		    a->calls[i].index != b->calls[i].index)
			return false;
	return true;
}

static enum rn_chatfmt_kind kind_named(const char *name)
{
	for (int k = 0; k < RN_CHATFMT_COUNT; k++)
		if (strcmp(rn_chatfmt_name((enum rn_chatfmt_kind)k), name) == 0)
			return (enum rn_chatfmt_kind)k;
	return RN_CHATFMT_COUNT;
}

static const char *str_or(const struct ob_json *v, const char *dflt)
{
	return v && v->type == OB_JSON_STRING ? v->str : dflt;
}

static void check_expected(const char *name, const struct ob_json *exp, const struct result *r)
{
	const char *content = str_or(ob_json_get(exp, "content"), ""), *reasoning = str_or(ob_json_get(exp, "reasoning_content"), "");
	CHECKF(r->content.len == strlen(content) && memcmp(r->content.p ? r->content.p : "", content, r->content.len) == 0,
	       "%s: content \"%.*s\", want \"%s\"", name, (int)r->content.len, r->content.p ? r->content.p : "", content);
	CHECKF(r->reasoning.len == strlen(reasoning) &&
		       memcmp(r->reasoning.p ? r->reasoning.p : "", reasoning, r->reasoning.len) == 0,
	       "%s: reasoning \"%.*s\", want \"%s\"", name, (int)r->reasoning.len, r->reasoning.p ? r->reasoning.p : "",
	       reasoning);
	const struct ob_json *calls = ob_json_get(exp, "tool_calls");
	size_t want = calls ? calls->count : 0;
	CHECKF(r->n_calls == want, "%s: %zu calls, want %zu", name, r->n_calls, want);
	for (size_t i = 0; i < want && i < r->n_calls; i++) {
		const struct ob_json *c = ob_json_at(calls, i);
		CHECKF(strcmp(r->calls[i].name, str_or(ob_json_get(c, "name"), "")) == 0, "%s: call %zu name %s", name, i,
		       r->calls[i].name);
		CHECKF(strcmp(r->calls[i].arguments, str_or(ob_json_get(c, "arguments"), "")) == 0,
		       "%s: call %zu arguments %s, want %s", name, i, r->calls[i].arguments,
		       str_or(ob_json_get(c, "arguments"), ""));
		CHECK_EQ_INT(r->calls[i].index, (int)i);
		const char *id = str_or(ob_json_get(c, "id"), NULL);
		if (id)
			CHECK_STREQ(r->calls[i].id, id);
		else
			CHECKF(strncmp(r->calls[i].id, "call_", 5) == 0, "%s: id %s", name, r->calls[i].id);
	}
}

static int test_case(const char *dir, const char *base)
{
	char path[8192];
	size_t jlen, tlen;
	snprintf(path, sizeof path, "%s/%s.json", dir, base);
	char *js = slurp(path, &jlen);
	snprintf(path, sizeof path, "%s/%s.txt", dir, base);
	char *text = slurp(path, &tlen);
	CHECKF(js && text, "cannot read case %s", base);
	struct ob_json_error je;
	struct ob_json_doc *d = js ? ob_json_parse(js, jlen, &je) : NULL;
	CHECKF(d != NULL, "%s.json: %s", base, d ? "" : je.message);
	if (!d || !text) {
		free(js);
		free(text);
		ob_json_free(d);
		return 0;
	}
	const struct ob_json *exp = ob_json_root(d);
	enum rn_chatfmt_kind k = kind_named(str_or(ob_json_get(exp, "format"), ""));
	CHECKF(k != RN_CHATFMT_COUNT, "%s: unknown format", base);
	const struct ob_json *tools = ob_json_get(exp, "tools"), *forced = ob_json_get(exp, "thinking_forced_open");
	struct rn_chatfmt_opts o = {
		.parse_tools = tools && tools->boolean,
		.reasoning = ob_json_str_eq(ob_json_get(exp, "reasoning_format"), "none") ? RN_CHATFMT_REASONING_NONE
											    : RN_CHATFMT_REASONING_AUTO,
		.thinking_forced_open = forced && forced->boolean,
	};

	/* whole */
	struct result whole;
	result_init(&whole);
	parse_cut(k, &o, text, tlen, NULL, 0, &whole);
	check_expected(base, exp, &whole);

	/* byte by byte, at UTF-8 boundaries */
	size_t *cuts = malloc((tlen + 1) * sizeof *cuts), nc = 0;
	for (size_t i = 1; i < tlen; i++)
		if (((unsigned char)text[i] & 0xC0) != 0x80)
			cuts[nc++] = i;
	struct result bytes;
	result_init(&bytes);
	parse_cut(k, &o, text, tlen, cuts, nc, &bytes);
	CHECKF(same(&whole, &bytes), "%s: byte by byte differs (content \"%.*s\")", base, (int)bytes.content.len,
	       bytes.content.p ? bytes.content.p : "");
	result_free(&bytes);

	/* every split point */
	for (size_t i = 0; i < nc; i++) {
		struct result two;
		result_init(&two);
		parse_cut(k, &o, text, tlen, &cuts[i], 1, &two);
		CHECKF(same(&whole, &two), "%s: split at %zu differs", base, cuts[i]);
		result_free(&two);
	}
	free(cuts);
	result_free(&whole);
	ob_json_free(d);
	free(js);
	free(text);
	return 1;
}

static void test_recorded(void)
{
	const char *dir = tm_srcpath("tests/data/chatfmt");
	char d[4096];
	snprintf(d, sizeof d, "%s", dir);
	DIR *dp = opendir(d);
	CHECKF(dp != NULL, "cannot open %s", d);
	if (!dp)
		return;
	struct dirent *de;
	int n = 0;
	while ((de = readdir(dp))) {
		size_t l = strlen(de->d_name);
		if (l < 6 || strcmp(de->d_name + l - 5, ".json") != 0)
			continue;
		char base[256];
		snprintf(base, sizeof base, "%.*s", (int)(l - 5), de->d_name);
		n += test_case(d, base);
	}
	closedir(dp);
	CHECKF(n >= 30, "only %d recorded cases", n);
}

/* ------------------------------------------------------------------------------------------- streaming */

static void feed_str(struct rn_chatfmt *p, const char *s, struct result *r)
{
	CHECK(rn_chatfmt_feed(p, s, strlen(s), &r->content, &r->reasoning, &r->calls, &r->n_calls) == 0);
}

static void test_holdback(void)
{
	struct rn_chatfmt_opts o = {.parse_tools = true, .reasoning = RN_CHATFMT_REASONING_AUTO};
	struct result r;

	/* "<tool" at the end is held; "x" releases it */
	result_init(&r);
	struct rn_chatfmt *p = rn_chatfmt_new(RN_CHATFMT_HERMES, &o);
	feed_str(p, "Hello <tool", &r);
	CHECK_EQ_INT(r.content.len, 6);
	CHECK_EQ_INT(rn_chatfmt_held(p), 5);
	feed_str(p, "x", &r);
	CHECK_STREQ(r.content.p, "Hello <toolx");
	CHECK_EQ_INT(rn_chatfmt_held(p), 0);
	rn_chatfmt_free(p);
	result_free(&r);

	/* "<to" then "x": released at once */
	result_init(&r);
	p = rn_chatfmt_new(RN_CHATFMT_HERMES, &o);
	feed_str(p, "<to", &r);
	CHECK_EQ_INT(r.content.len, 0);
	feed_str(p, "x and more", &r);
	CHECK_STREQ(r.content.p, "<tox and more");
	rn_chatfmt_free(p);
	result_free(&r);

	/* text before a call goes out before the call completes; the call body is held */
	result_init(&r);
	p = rn_chatfmt_new(RN_CHATFMT_HERMES, &o);
	feed_str(p, "Sure.\n<tool_call>\n{\"name\": \"f\", ", &r);
	CHECK_STREQ(r.content.p, "Sure.\n");
	CHECK_EQ_INT(r.n_calls, 0);
	feed_str(p, "\"arguments\": {}}\n</tool_call>", &r);
	CHECK_EQ_INT(r.n_calls, 1);
	CHECK_EQ_INT(rn_chatfmt_held(p), 0);
	rn_chatfmt_free(p);
	result_free(&r);

	/* reasoning streams as it comes; only a possible closing tag and trailing white space wait */
	result_init(&r);
	p = rn_chatfmt_new(RN_CHATFMT_HERMES, &o);
	feed_str(p, "<think>one two </th", &r);
	CHECK_STREQ(r.reasoning.p, "one two");
	feed_str(p, "ink>\n\nDone", &r);
	CHECK_STREQ(r.reasoning.p, "one two");
	CHECK_STREQ(r.content.p, "Done");
	rn_chatfmt_free(p);
	result_free(&r);

	/* without tools a tool tag is plain text and nothing is held for it */
	struct rn_chatfmt_opts none = {.parse_tools = false, .reasoning = RN_CHATFMT_REASONING_AUTO};
	result_init(&r);
	p = rn_chatfmt_new(RN_CHATFMT_HERMES, &none);
	feed_str(p, "a <tool", &r);
	CHECK_STREQ(r.content.p, "a <tool");
	rn_chatfmt_free(p);
	result_free(&r);

	/* GPT-OSS: a partial <|end|> is held, the rest of the final message streams */
	result_init(&r);
	p = rn_chatfmt_new(RN_CHATFMT_GPT_OSS, &o);
	feed_str(p, "<|channel|>final<|message|>Hi <|en", &r);
	CHECK_STREQ(r.content.p, "Hi ");
	CHECK_EQ_INT(rn_chatfmt_held(p), 4);
	rn_chatfmt_free(p);
	result_free(&r);
}

/* ---------------------------------------------------------------------------------------------- garbage */

static void test_garbage(void)
{
	static const char *const junk[] = {
		"<tool_call><tool_call></tool_call>",
		"<tool_call>{\"name\": 5, \"arguments\": {}}</tool_call>",
		"<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>",
		"<tool_call>{\"name\": \"f\", \"arguments\": \"not json\"}</tool_call>",
		"{\"name\"",
		"<function=>{}</function>",
		"<function=f\n>{}</function>",
		"<think><think></think></think>",
		"\xff\xfe<tool_call>\x00</tool_call>",
	};
	struct rn_chatfmt_opts o = {.parse_tools = true, .reasoning = RN_CHATFMT_REASONING_NONE};
	for (size_t i = 0; i < sizeof junk / sizeof *junk; i++) {
		size_t len = i == 8 ? 26 : strlen(junk[i]);
		struct result r;
		result_init(&r);
		parse_cut(RN_CHATFMT_HERMES, &o, junk[i], len, NULL, 0, &r);
		CHECKF(r.n_calls == 0, "junk %zu gave a call", i);
		CHECKF(r.content.len == len && memcmp(r.content.p, junk[i], len) == 0, "junk %zu: content \"%.*s\"", i,
		       (int)r.content.len, r.content.p ? r.content.p : "");
		result_free(&r);
	}
	/* every format survives every junk string, whole and byte by byte, with the same result */
	for (int k = 0; k < RN_CHATFMT_COUNT; k++)
		for (size_t i = 0; i < sizeof junk / sizeof *junk; i++) {
			size_t len = i == 8 ? 26 : strlen(junk[i]);
			size_t cuts[64], nc = 0;
			for (size_t c = 1; c < len && nc < 64; c++)
				cuts[nc++] = c;
			struct result a, b;
			result_init(&a);
			result_init(&b);
			struct rn_chatfmt_opts ot = {.parse_tools = true, .reasoning = RN_CHATFMT_REASONING_AUTO};
			parse_cut((enum rn_chatfmt_kind)k, &ot, junk[i], len, NULL, 0, &a);
			parse_cut((enum rn_chatfmt_kind)k, &ot, junk[i], len, cuts, nc, &b);
			CHECKF(same(&a, &b), "%s: junk %zu differs in pieces", rn_chatfmt_name((enum rn_chatfmt_kind)k), i);
			result_free(&a);
			result_free(&b);
		}
}

/* An unfinished call is given up at RN_PARSE_MAX_BUFFER: the parser never holds more. */
static void test_limit(void)
{
	struct rn_chatfmt_opts o = {.parse_tools = true, .reasoning = RN_CHATFMT_REASONING_AUTO};
	struct rn_chatfmt *p = rn_chatfmt_new(RN_CHATFMT_HERMES, &o);
	struct result r;
	result_init(&r);
	feed_str(p, "<tool_call>{\"name\": \"f\", \"arguments\": {\"x\": \"", &r);
	size_t chunk = 1u << 20;
	char *big = malloc(chunk);
	memset(big, 'a', chunk);
	size_t fed = 0, max_held = 0;
	while (fed <= RN_PARSE_MAX_BUFFER + chunk) {
		CHECK(rn_chatfmt_feed(p, big, chunk, &r.content, &r.reasoning, &r.calls, &r.n_calls) == 0);
		fed += chunk;
		if (rn_chatfmt_held(p) > max_held)
			max_held = rn_chatfmt_held(p);
	}
	CHECKF(max_held <= RN_PARSE_MAX_BUFFER + chunk, "held %zu", max_held);
	CHECK(r.content.len > RN_PARSE_MAX_BUFFER / 2); /* given up: sent as content */
	CHECK_EQ_INT(r.n_calls, 0);
	free(big);
	rn_chatfmt_free(p);
	result_free(&r);
}

static void test_api(void)
{
	const char *open, *close;
	CHECK(rn_chatfmt_think_tags(RN_CHATFMT_HERMES, &open, &close));
	CHECK_STREQ(open, "<think>");
	CHECK_STREQ(close, "</think>");
	CHECK(rn_chatfmt_think_tags(RN_CHATFMT_COMMAND_R7B, &open, &close));
	CHECK_STREQ(open, "<|START_THINKING|>");
	CHECK(!rn_chatfmt_think_tags(RN_CHATFMT_GPT_OSS, &open, &close));
	CHECK(!rn_chatfmt_think_tags(RN_CHATFMT_MISTRAL_NEMO, &open, &close));
	static const char q3[] = "<|im_start|>assistant\n<think>\n";
	CHECK(rn_chatfmt_prompt_opens_thinking(RN_CHATFMT_HERMES, q3, strlen(q3)));
	CHECK(!rn_chatfmt_prompt_opens_thinking(RN_CHATFMT_HERMES, "<think>\n\n</think>\n\n", 19));
	CHECK(!rn_chatfmt_prompt_opens_thinking(RN_CHATFMT_MISTRAL_NEMO, q3, strlen(q3)));
	CHECK(rn_chatfmt_prompt_opens_thinking(RN_CHATFMT_SEED_OSS, "x<seed:think>", 13));
	CHECK(!rn_chatfmt_prompt_opens_thinking(RN_CHATFMT_HERMES, "think>", 6));
	CHECK(rn_chatfmt_supports_thinking(RN_CHATFMT_GPT_OSS));
	CHECK(!rn_chatfmt_supports_thinking(RN_CHATFMT_FUNCTIONARY_V3_2));
	CHECK(rn_chatfmt_supports_tools(RN_CHATFMT_LLAMA3));
	CHECK(!rn_chatfmt_supports_tools(RN_CHATFMT_CONTENT_ONLY));
	CHECK_STREQ(rn_chatfmt_name(RN_CHATFMT_HERMES), "Hermes 2 Pro");
	CHECK_STREQ(rn_chatfmt_name(RN_CHATFMT_COUNT), "?");
	for (int k = 0; k < RN_CHATFMT_COUNT; k++)
		CHECK(strcmp(rn_chatfmt_name((enum rn_chatfmt_kind)k), "?") != 0);
	CHECK_EQ_INT(rn_chatfmt_detect(NULL, 0), RN_CHATFMT_GENERIC);
	rn_chatfmt_free(NULL);
	/* nothing after finish */
	struct rn_chatfmt *p = rn_chatfmt_new(RN_CHATFMT_CONTENT_ONLY, NULL);
	struct result r;
	result_init(&r);
	feed_str(p, "a", &r);
	CHECK(rn_chatfmt_finish(p, &r.content, &r.reasoning, &r.calls, &r.n_calls) == 0);
	feed_str(p, "b", &r);
	CHECK_STREQ(r.content.p, "a");
	rn_chatfmt_free(p);
	result_free(&r);
}

int main(void)
{
	test_detect_corpus();
	test_recorded();
	test_holdback();
	test_garbage();
	test_limit();
	test_api();
	return check_done();
}
