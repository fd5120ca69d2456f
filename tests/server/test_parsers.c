/* tests/server/test_parsers.c — the streaming output parsers (runner/api/parsers.c) against cases taken
 * from Ollama's thinking/parser_test.go and tools/tools_test.go (inputs fed whole and split into pieces),
 * plus the stop-string helpers.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/api/parsers.h"
#include "tests/check.h"

static void think_case(const char *const *pieces, size_t n, const char *want_think, const char *want_content)
{
	struct rn_think t;
	CHECK(rn_think_init(&t, "<think>", "</think>") == 0);
	struct ob_buf th, co;
	ob_buf_init(&th, 0);
	ob_buf_init(&co, 0);
	for (size_t i = 0; i < n; i++)
		CHECK(rn_think_add(&t, pieces[i], strlen(pieces[i]), &th, &co) == 0);
	CHECKF(strcmp(th.p ? th.p : "", want_think) == 0 && strcmp(co.p ? co.p : "", want_content) == 0,
	       "(%s | %s) != (%s | %s)", th.p ? th.p : "", co.p ? co.p : "", want_think, want_content);
	ob_buf_free(&th);
	ob_buf_free(&co);
	rn_think_free(&t);
}

static void test_think(void)
{
	const char *a[] = {"<think> internal </think> world"};
	think_case(a, 1, "internal ", "world");
	const char *b[] = {"<think>a</think><think>b</think>c"};
	think_case(b, 1, "a", "<think>b</think>c");
	const char *c[] = {"no think"};
	think_case(c, 1, "", "no think");
	const char *d[] = {"  abc", "def"};
	think_case(d, 2, "", "  abcdef");
	const char *e[] = {"  abc <think>def</think> ghi"};
	think_case(e, 1, "", "  abc <think>def</think> ghi");
	const char *f[] = {"  <th", "in", "k>a"};
	think_case(f, 3, "a", "");
	const char *g[] = {"<think>abc</th", "ink>def"};
	think_case(g, 2, "abc", "def");
	const char *h[] = {"<think>abc</th", "ing>def", "ghi</thi", "nk>jkl"};
	think_case(h, 4, "abc</thing>defghi", "jkl");
	const char *i[] = {"<think>", "  ", "\n x", "y</think>", " \n", " z"};
	think_case(i, 6, "xy", "z");

	/* the partial closing tag is really held back: after "abc</th" only "abc" is out */
	struct rn_think t;
	CHECK(rn_think_init(&t, "<think>", "</think>") == 0);
	struct ob_buf th, co;
	ob_buf_init(&th, 0);
	ob_buf_init(&co, 0);
	CHECK(rn_think_add(&t, "<think>abc</th", 14, &th, &co) == 0);
	CHECK_STREQ(th.p, "abc");
	CHECK(co.len == 0);
	CHECK_EQ_INT(t.state, RN_THINK_THINKING);
	ob_buf_free(&th);
	ob_buf_free(&co);
	rn_think_free(&t);
}

static const char *names[] = {"get_temperature", "get_conditions", "say_hello", "say_hello_world", "get_address", "add"};

static void tools_case(const char *tag, const char *const *pieces, size_t n, const char *want_content,
		       const char *want_calls)
{
	struct rn_tools p;
	CHECK(rn_tools_init(&p, tag, names, sizeof names / sizeof names[0]) == 0);
	struct ob_buf co, got;
	ob_buf_init(&co, 0);
	ob_buf_init(&got, 0);
	struct rn_tool_call *calls = NULL;
	size_t nc = 0;
	for (size_t i = 0; i < n; i++)
		CHECK(rn_tools_add(&p, pieces[i], strlen(pieces[i]), &co, &calls, &nc) == 0);
	CHECK(rn_tools_content(&p, &co) == 0);
	for (size_t i = 0; i < nc; i++) {
		ob_buf_printf(&got, "%s%d:%s%s", i ? ";" : "", calls[i].index, calls[i].name, calls[i].arguments);
		CHECK(strncmp(calls[i].id, "call_", 5) == 0 && strlen(calls[i].id) == 13);
	}
	CHECKF(strcmp(co.p ? co.p : "", want_content) == 0, "content \"%s\" != \"%s\"", co.p ? co.p : "", want_content);
	CHECKF(strcmp(got.p ? got.p : "", want_calls) == 0, "calls \"%s\" != \"%s\"", got.p ? got.p : "", want_calls);
	rn_tool_calls_free(calls, nc);
	ob_buf_free(&co);
	ob_buf_free(&got);
	rn_tools_free(&p);
}

static void test_tools(void)
{
	const char *a[] = {"Hello, how can I help you today?"};
	tools_case("<tool_call>", a, 1, "Hello, how can I help you today?", "");
	const char *b[] = {"<tool_call>{\"name\": \"get_conditions\", \"arguments\": {\"location\": \"San Francisco\"}}</tool_call>"};
	tools_case("<tool_call>", b, 1, "", "0:get_conditions{\"location\":\"San Francisco\"}");
	const char *c[] = {"<tool_call>{\"name\": \"get_conditions\", \"arguments\": {}}</tool_call>"};
	tools_case("<tool_call>", c, 1, "", "0:get_conditions{}");
	const char *d[] = {"Let me check the weather. <tool_call>{\"name\": \"get_temperature\", \"arguments\": {\"city\": \"New York\"}}</tool_call>"};
	tools_case("<tool_call>", d, 1, "Let me check the weather. ", "0:get_temperature{\"city\":\"New York\"}");
	const char *e[] = {"[TOOL_CALLS] [{\"name\": \"get_temperature\", \"arguments\": {\"city\": \"London\", \"format\": \"fahrenheit\"}}, {\"name\": \"get_conditions\", \"arguments\": {\"location\": \"Tokyo\"}}][/TOOL_CALLS]"};
	tools_case("[TOOL_CALLS]", e, 1, "",
		   "0:get_temperature{\"city\":\"London\",\"format\":\"fahrenheit\"};1:get_conditions{\"location\":\"Tokyo\"}");
	const char *f[] = {"Okay, let's call both tools! <tool_call>{\"name\": \"get_temperature\", \"arguments\": {\"city\": \"London\", \"format\": \"fahrenheit\"}}</tool_call><tool_call>{\"name\": \"get_conditions\", \"arguments\": {\"location\": \"Tokyo\"}}</tool_call>"};
	tools_case("<tool_call>", f, 1, "Okay, let's call both tools! ",
		   "0:get_temperature{\"city\":\"London\",\"format\":\"fahrenheit\"};1:get_conditions{\"location\":\"Tokyo\"}");
	/* streamed in small pieces, with a partial tag at a piece boundary */
	const char *g[] = {"Let me ", "check. <tool", "_call>{\"na", "me\": \"get_temperature\", \"argu",
			   "ments\": {\"city\": \"Par", "is\"}}</tool_call>"};
	tools_case("<tool_call>", g, 6, "Let me check. ", "0:get_temperature{\"city\":\"Paris\"}");
	/* arguments as a JSON string; numbers re-encoded as Go float64 */
	const char *h[] = {"<tool_call>{\"name\": \"add\", \"arguments\": \"{\\\"a\\\": 1.0, \\\"b\\\": 2e1}\"}</tool_call>"};
	tools_case("<tool_call>", h, 1, "", "0:add{\"a\":1,\"b\":20}");
	/* tag "{": content first disables tool parsing */
	const char *i[] = {"Sure: {\"name\": \"add\", \"arguments\": {\"a\": \"1\"}}"};
	tools_case("{", i, 1, "Sure: {\"name\": \"add\", \"arguments\": {\"a\": \"1\"}}", "");
	const char *j[] = {" {\"name\": \"add\", \"arguments\": {\"a\": \"1\", \"b\": {\"z\": 1, \"y\": 2}}}"};
	tools_case("{", j, 1, " ", "0:add{\"a\":\"1\",\"b\":{\"y\":2,\"z\":1}}");
	/* tag "{" with JSON that is no tool call: given back at the end */
	const char *k[] = {"{\"x\": 1}"};
	tools_case("{", k, 1, "{\"x\": 1}", "");
	/* longest name wins at the same position */
	const char *l[] = {"<tool_call>{\"name\": \"say_hello_world\", \"arguments\": {}}</tool_call>"};
	tools_case("<tool_call>", l, 1, "", "0:say_hello_world{}");
}

static void test_stop(void)
{
	char *stops[] = {"<|im_end|>", "\n\nUser:", "END"};
	CHECK_EQ_INT(rn_stop_find("abc<|im_end|>x", 14, stops, 3), 3);
	CHECK_EQ_INT(rn_stop_find("abc", 3, stops, 3), -1);
	CHECK_EQ_INT(rn_stop_find("aEND<|im_end|>", 14, stops, 3), 1);
	CHECK_EQ_INT(rn_stop_partial("abc<|im", 7, stops, 3), 4);
	CHECK_EQ_INT(rn_stop_partial("abc\n\nUs", 7, stops, 3), 4);
	CHECK_EQ_INT(rn_stop_partial("abcEN", 5, stops, 3), 2);
	CHECK_EQ_INT(rn_stop_partial("abc", 3, stops, 3), 0);
	CHECK_EQ_INT(rn_stop_partial("", 0, stops, 3), 0);
}

int main(void)
{
	test_think();
	test_tools();
	test_stop();
	return check_done();
}
