/* tests/server/test_jinja_chat.c — runner/api/jinja_chat.c, the pure parts: Ollama's messages in the OpenAI
 * shape (thinking → reasoning_content, tool_name → name, arguments as objects), think as keyword arguments,
 * capabilities and the default output tags read from a template, and the render (tools only when there are
 * some, extra keyword arguments, raise_exception answered 400 with its text, a prefill appended).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "runner/api/jinja_chat.h"
#include "tests/check.h"

static struct mf_tpl_str S(const char *s)
{
	return (struct mf_tpl_str){s, strlen(s)};
}

static struct mf_jinja *parse(const char *src)
{
	struct mf_jinja *t = NULL;
	struct mf_jinja_error e;
	if (mf_jinja_parse(src, strlen(src), &t, &e) != MF_JINJA_OK)
		return NULL;
	return t;
}

static struct ob_json_doc *json(const char *s)
{
	struct ob_json_error e;
	return ob_json_parse(s, strlen(s), &e);
}

static void test_messages(void)
{
	struct ob_json_doc *args = json("{\"city\":\"Paris\",\"days\":2}");
	struct mf_tpl_tool_call calls[2] = {
		{.id = S("call_1"), .name = S("get_weather"), .arguments = ob_json_root(args)},
		{.name = S("noop")}, /* no id, no arguments */
	};
	struct mf_tpl_message m[4] = {
		{.role = S("user"), .content = S("hi <b>")},
		{.role = S("assistant"), .content = S(""), .thinking = S("let me see"), .tool_calls = calls, .n_tool_calls = 2},
		{.role = S("tool"), .content = S("22 C"), .tool_name = S("get_weather"), .tool_call_id = S("call_1")},
		{.role = S("assistant"), .content = S("It is 22 C.")},
	};
	struct ob_jw w;
	ob_jw_init(&w, 0, OB_JW_NO_HTML_ESCAPE);
	rn_jchat_write_messages(m, 4, &w);
	const char *want =
		"[{\"role\":\"user\",\"content\":\"hi <b>\"},"
		"{\"role\":\"assistant\",\"content\":\"\",\"reasoning_content\":\"let me see\",\"tool_calls\":["
		"{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
		"\"arguments\":{\"city\":\"Paris\",\"days\":2}}},"
		"{\"type\":\"function\",\"function\":{\"name\":\"noop\",\"arguments\":{}}}]},"
		"{\"role\":\"tool\",\"content\":\"22 C\",\"tool_call_id\":\"call_1\",\"name\":\"get_weather\"},"
		"{\"role\":\"assistant\",\"content\":\"It is 22 C.\"}]";
	CHECKF(ob_jw_str(&w) && strcmp(ob_jw_str(&w), want) == 0, "got %s", ob_jw_str(&w));
	ob_jw_reset(&w);
	rn_jchat_write_messages(m, 0, &w);
	CHECK(strcmp(ob_jw_str(&w), "[]") == 0);
	ob_jw_free(&w);
	ob_json_free(args);
}

static void test_think(void)
{
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	CHECK(!rn_jchat_write_think(false, true, "high", &w) && w.len == 0);
	CHECK(rn_jchat_write_think(true, true, "high", &w));
	CHECK(strcmp(ob_jw_str(&w), "{\"enable_thinking\":true,\"reasoning_effort\":\"high\"}") == 0);
	ob_jw_reset(&w);
	CHECK(rn_jchat_write_think(true, false, "", &w));
	CHECK(strcmp(ob_jw_str(&w), "{\"enable_thinking\":false}") == 0);
	ob_jw_reset(&w);
	CHECK(rn_jchat_write_think(true, true, "", &w));
	CHECK(strcmp(ob_jw_str(&w), "{\"enable_thinking\":true}") == 0);
	ob_jw_free(&w);
}

static void caps_of(const char *src, bool *tools, bool *thinking)
{
	struct mf_jinja *t = parse(src);
	CHECKF(t != NULL, "parse %s", src);
	*tools = *thinking = false;
	if (t)
		rn_jchat_caps(t, src, strlen(src), tools, thinking);
	mf_jinja_free(t);
}

static void test_caps(void)
{
	bool tools, thinking;
	caps_of("{% for m in messages %}{{ m.content }}{% endfor %}", &tools, &thinking);
	CHECK(!tools && !thinking);
	caps_of("{% if tools %}{{ tools | tojson }}{% endif %}", &tools, &thinking);
	CHECK(tools && !thinking);
	caps_of("{% if enable_thinking is false %}x{% endif %}", &tools, &thinking);
	CHECK(!tools && thinking);
	caps_of("{{ '<think>' }}", &tools, &thinking);
	CHECK(!tools && thinking);
	caps_of("{{ messages[0].reasoning_content }}", &tools, &thinking);
	CHECK(!tools && thinking);
	/* an attribute named tools is not the variable */
	caps_of("{{ messages[0].tools }}", &tools, &thinking);
	CHECK(!tools && !thinking);
}

static void test_render(void)
{
	const char *src = "{% if messages[0].role != 'user' %}{{ raise_exception('first must be user') }}{% endif %}"
			  "[{{ bos_token }}]{{ tools is none }}|{{ enable_thinking }}|"
			  "{% for m in messages %}{{ m.role }}:{{ m.content }};{% endfor %}"
			  "{% if add_generation_prompt %}A:{% endif %}";
	struct mf_jinja *t = parse(src);
	CHECK(t != NULL);
	struct ob_json_doc *msgs = json("[{\"role\":\"user\",\"content\":\"hi\"}]");
	struct ob_json_doc *empty = json("[]");
	struct ob_json_doc *tools = json("[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]");
	struct ob_json_doc *extra = json("{\"enable_thinking\":false}");
	struct rn_jchat_in in = {.messages = ob_json_root(msgs), .tools = ob_json_root(empty), .add_generation_prompt = true};
	char *out = NULL, err[256];
	size_t len = 0;
	CHECK(rn_jchat_render(t, &in, &out, &len, err, sizeof err) == 0);
	CHECKF(out && strcmp(out, "[]True||user:hi;A:") == 0 && len == strlen(out), "got %s", out);
	free(out);

	in.tools = ob_json_root(tools);
	in.extra = ob_json_root(extra);
	in.add_generation_prompt = false;
	CHECK(rn_jchat_render(t, &in, &out, &len, err, sizeof err) == 0);
	CHECKF(out && strcmp(out, "[]False|False|user:hi;") == 0, "got %s", out);
	CHECK(rn_jchat_append(&out, &len, "<tool_call>\n", 12) == 0);
	CHECK(strcmp(out, "[]False|False|user:hi;<tool_call>\n") == 0 && len == strlen(out));
	CHECK(rn_jchat_append(&out, &len, "", 0) == 0 && len == strlen(out));
	free(out);

	struct ob_json_doc *bad = json("[{\"role\":\"system\",\"content\":\"x\"}]");
	in.messages = ob_json_root(bad);
	CHECK(rn_jchat_render(t, &in, &out, &len, err, sizeof err) == 400);
	CHECKF(out == NULL && strcmp(err, "first must be user") == 0, "err %s", err);
	ob_json_free(bad);
	ob_json_free(msgs);
	ob_json_free(empty);
	ob_json_free(tools);
	ob_json_free(extra);
	mf_jinja_free(t);
}

int main(void)
{
	test_messages();
	test_think();
	test_caps();
	test_render();
	return check_done();
}
