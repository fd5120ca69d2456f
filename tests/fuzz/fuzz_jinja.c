/* tests/fuzz/fuzz_jinja.c — libFuzzer target for the Jinja engine (modelfile/jinja/): lexer, parser, evaluator.
 *
 * Input: template text, optionally followed by a NUL byte and a JSON document. The template is parsed and,
 * when it parses, rendered twice: with a fixed chat (messages with tool calls, a tool result, reasoning,
 * content parts; tools; the tokens; enable_thinking) as transformers passes it, and with the JSON part as the
 * variables when it is an object (else as `messages`). Renders run under small ceilings (1 MiB of output,
 * 200k steps) so that hostile inputs stay fast. Built as a real fuzzer with --enable-fuzzing, and linked with
 * tests/fuzz/replay.c for `make check`.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "modelfile/jinja/jinja.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile size_t sink;

static const char chat_json[] =
	"{\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":\"Weather <&> in "
	"Oslo? \\u00e9\\ud83c\\udfef\"},{\"role\":\"assistant\",\"content\":null,\"reasoning_content\":\"think\","
	"\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":"
	"{\"city\":\"Oslo\",\"n\":3,\"x\":[1.5,null,{\"b\":true}]}}}]},{\"role\":\"tool\",\"tool_call_id\":\"c1\","
	"\"name\":\"get_weather\",\"content\":\"{\\\"t\\\": -3}\"},{\"role\":\"assistant\",\"content\":\"<think>\\nx\\n"
	"</think>\\n\\nIt snows.\"},{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"part\"},{\"type\":"
	"\"image\"}]}],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":"
	"\"Weather\",\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"},\"unit\":"
	"{\"type\":[\"string\",\"null\"],\"enum\":[\"c\",\"f\"]}},\"required\":[\"city\"]}}}],\"documents\":null,"
	"\"add_generation_prompt\":true,\"bos_token\":\"<s>\",\"eos_token\":\"</s>\",\"enable_thinking\":false}";

static const struct mf_jinja_options opts = {.has_now = true, .now = 1768478400, .max_output = 1u << 20,
					     .max_steps = 200000};

static void render(const struct mf_jinja *t, const struct mf_jinja_vars *v)
{
	char *out = NULL;
	size_t len = 0;
	struct mf_jinja_error err;
	if (mf_jinja_render(t, v, &opts, &out, &len, &err) == 0)
		sink += len + (len ? (uint8_t)out[len - 1] : 0);
	else
		sink += strlen(err.message) + strlen(err.type) + (size_t)err.line;
	free(out);
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
	struct mf_jinja *t = NULL;
	struct mf_jinja_error err;
	if (mf_jinja_parse(text, tlen, &t, &err) == 0) {
		sink += mf_jinja_uses(t, "tools") + mf_jinja_uses(t, "enable_thinking");
		struct ob_json_doc *chat = ob_json_parse(chat_json, sizeof chat_json - 1, &jerr);
		struct mf_jinja_vars *v = mf_jinja_vars_new();
		if (chat && v && mf_jinja_vars_set_object(v, ob_json_root(chat)) == 0)
			render(t, v);
		mf_jinja_vars_free(v);
		ob_json_free(chat);
		if (doc) {
			v = mf_jinja_vars_new();
			const struct ob_json *root = ob_json_root(doc);
			int rc = root->type == OB_JSON_OBJECT ? mf_jinja_vars_set_object(v, root)
							       : mf_jinja_vars_set_json(v, "messages", root);
			if (v && rc == 0)
				render(t, v);
			mf_jinja_vars_free(v);
		}
		mf_jinja_free(t);
	} else {
		sink += strlen(err.message) + (size_t)err.line;
	}
	ob_json_free(doc);
	return 0;
}
