/* tests/fuzz/fuzz_template.c — libFuzzer target for the template engine: lexer, parser and execution.
 *
 * Input: template text, optionally followed by a NUL byte and a JSON document. The template is parsed as
 * Ollama parses it, its identifiers and inferred tags are read, and it is executed in messages mode (with
 * tools, tool calls, thinking), in forced legacy mode and in fill-in-the-middle mode; when the JSON part is
 * an object with "messages"/"tools" those are decoded and rendered too, and the JSON is also used as plain
 * Go template data. The text is also run through template detection. Built as a real fuzzer with
 * --enable-fuzzing, and linked with tests/fuzz/replay.c for `make check`.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "modelfile/template.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile size_t sink;

static const char tools_json[] =
	"[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"Weather <&>\",\"parameters\":"
	"{\"type\":\"object\",\"required\":[\"city\"],\"properties\":{\"city\":{\"type\":\"string\"},\"unit\":{\"type\":"
	"[\"string\",\"null\"],\"enum\":[\"c\",\"f\"]},\"opts\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
	"\"integer\"}}}}}}},{\"type\":\"function\",\"function\":{\"name\":\"python\"}}]";
static const char args_json[] = "{\"city\":\"Paris\",\"n\":3,\"x\":[1,null,{\"b\":true}]}";

static void run(const struct mf_tpl *t, const struct mf_tpl_values *v)
{
	char *out = NULL;
	size_t n = 0;
	struct mf_tpl_error err;
	if (mf_tpl_execute(t, v, &out, &n, &err) == 0)
		sink += n + (n ? (uint8_t)out[n - 1] : 0);
	else
		sink += strlen(err.msg);
	free(out);
}

static struct mf_tpl_str S(const char *s)
{
	struct mf_tpl_str r = {s, strlen(s)};
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	size_t tlen = size;
	const uint8_t *nul = memchr(data, 0, size);
	struct ob_json_doc *doc = NULL;
	struct ob_json_error jerr;
	if (nul) {
		tlen = (size_t)(nul - data);
		doc = ob_json_parse((const char *)nul + 1, size - tlen - 1, &jerr);
	}
	/* detection costs O(length x 100) per corpus entry: keep it to shorter inputs so the fuzzer stays fast */
	if (tlen <= 1024) {
		const struct mf_tpl_named *named = mf_tpl_named_match(text, tlen);
		if (named)
			sink += named->text_len;
	}

	struct mf_tpl *t = NULL;
	struct mf_tpl_error err;
	if (mf_tpl_parse(text, tlen, &t, &err) == 0) {
		size_t nv;
		const char *const *vars = mf_tpl_vars(t, &nv);
		for (size_t i = 0; i < nv; i++)
			sink += strlen(vars[i]);
		sink += strlen(mf_tpl_think_open(t)) + strlen(mf_tpl_think_close(t)) + strlen(mf_tpl_tool_tag(t));
		sink += mf_tpl_tool_round_trip(t) + mf_tpl_uses(t, "tools") + mf_tpl_contains(t, "<think>");

		struct ob_json_doc *tools = ob_json_parse(tools_json, sizeof tools_json - 1, &jerr);
		struct ob_json_doc *args = ob_json_parse(args_json, sizeof args_json - 1, &jerr);
		struct mf_tpl_tool_call calls[2] = {
			{.id = S("call_1"), .index = 0, .name = S("get_weather"), .arguments = args ? ob_json_root(args) : NULL},
			{.name = S("python")},
		};
		static const unsigned char png[] = {0x89, 'P', 'N', 'G'};
		struct mf_tpl_image img = {png, sizeof png};
		struct mf_tpl_message msgs[] = {
			{.role = S("system"), .content = S("sys")},
			{.role = S("system"), .content = S("sys 2")},
			{.role = S("user"), .content = S("hello"), .images = &img, .n_images = 1},
			{.role = S("assistant"), .thinking = S("hmm"), .tool_calls = calls, .n_tool_calls = 2},
			{.role = S("tool"), .content = S("22C"), .tool_name = S("get_weather")},
			{.role = S("tool"), .content = S("1024"), .tool_name = S("python")},
			{.role = S("assistant"), .content = S("It is 22C.")},
			{.role = S("user"), .content = S("thanks")},
			{.role = S("assistant"), .content = S("You're")},
		};
		struct mf_tpl_values v = {.messages = msgs,
					  .n_messages = sizeof msgs / sizeof msgs[0],
					  .tools = tools ? ob_json_root(tools) : NULL,
					  .think = true,
					  .think_level = S("high"),
					  .is_think_set = true,
					  .now = 1768478400};
		run(t, &v);
		v.force_legacy = true;
		run(t, &v);
		v.force_legacy = false;
		v.prompt = S("def f(");
		v.suffix = S("return 1");
		run(t, &v);

		/* request-shaped JSON: {"messages": [...], "tools": [...]} */
		const struct ob_json *root = doc ? ob_json_root(doc) : NULL;
		if (root && root->type == OB_JSON_OBJECT) {
			struct mf_tpl_messages *m = NULL;
			const struct ob_json *jt = ob_json_get(root, "tools");
			if (mf_tpl_messages_from_json(ob_json_get(root, "messages"), &m, &err) == 0 &&
			    mf_tpl_tools_check(jt, &err) == 0) {
				struct mf_tpl_values w = {.messages = m->items, .n_messages = m->n, .tools = jt, .now = 1};
				run(t, &w);
			}
			mf_tpl_messages_free(m);
		}
		ob_json_free(args);
		ob_json_free(tools);
		mf_tpl_free(t);
	}

	/* the plain Go template with the JSON as its data */
	char *out = NULL;
	size_t n = 0;
	if (mf_tpl_render_generic(text, tlen, doc ? ob_json_root(doc) : NULL, 1768478400, &out, &n, &err) == 0)
		sink += n;
	free(out);
	ob_json_free(doc);
	return 0;
}
