/* tests/server/test_structured.c — the faces' structured-output fields (runner/api/structured.c and llama-server's
 * rn_ls_read_grammar): Ollama's `format` judged on its raw bytes with its exact error text, GBNF that does or
 * does not compile, and upstream llama-server's precedence of grammar / json_schema / response_format with its
 * errors. The grammars themselves are tested in tests/runner/test_grammar.c.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/api/llamaserver.h"
#include "runner/api/structured.h"
#include "runner/engine.h"
#include "runner/grammar/json_schema.h"
#include "tests/check.h"

/* format's outcome for the request body {"format": <raw>}: the status, *gbnf and err. */
static int ollama_format(const char *raw, char **gbnf, char *err, size_t n)
{
	char body[512];
	snprintf(body, sizeof body, "{\"model\": \"m\", \"format\": %s, \"stream\": false}", raw);
	struct ob_json_error je;
	struct ob_json_doc *doc = ob_json_parse(body, strlen(body), &je);
	CHECK(doc != NULL);
	if (!doc)
		return -1;
	const struct ob_json *v = ob_json_get(ob_json_root(doc), "format");
	if (v && v->type == OB_JSON_NULL)
		v = NULL;
	err[0] = 0;
	int st = rn_structured_ollama_format(body, strlen(body), v, gbnf, err, n);
	ob_json_free(doc);
	return st;
}

static void bad_format(const char *raw, const char *quoted)
{
	char *g = NULL, err[RN_STRUCTURED_ERR_MAX], want[600];
	int st = ollama_format(raw, &g, err, sizeof err);
	snprintf(want, sizeof want, "invalid format: %s; expected \"json\" or a valid JSON Schema object", quoted);
	CHECKF(st == 500 && !g && strcmp(err, want) == 0, "%s: %d %s", raw, st, err);
	free(g);
}

static void test_ollama_format(void)
{
	char *g = (char *)"x", err[RN_STRUCTURED_ERR_MAX];
	CHECK(rn_structured_ollama_format("", 0, NULL, &g, err, sizeof err) == 0 && g == NULL);
	CHECK(ollama_format("null", &g, err, sizeof err) == 0 && g == NULL);
	CHECK(ollama_format("\"\"", &g, err, sizeof err) == 0 && g == NULL);
	CHECK(ollama_format("\"json\"", &g, err, sizeof err) == 0 && g && strcmp(g, rn_grammar_json) == 0);
	free(g);
	CHECK(ollama_format("{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"string\"}}}", &g, err,
			    sizeof err) == 0 &&
	      g && strstr(g, "root"));
	free(g);
	/* Ollama compares the raw bytes: an escaped "json" or another case is not JSON mode */
	bad_format("\"j\\u0073on\"", "\"\\\"j\\\\u0073on\\\"\"");
	bad_format("\"JSON\"", "\"\\\"JSON\\\"\"");
	bad_format("\"yaml\"", "\"\\\"yaml\\\"\"");
	bad_format("5", "\"5\"");
	bad_format("-1.5e3", "\"-1.5e3\"");
	bad_format("true", "\"true\"");
	bad_format("[1, {\"a\": \"]\\\"\"}]", "\"[1, {\\\"a\\\": \\\"]\\\\\\\"\\\"}]\"");
	bad_format("\"\\u00e9\\n\"", "\"\\\"\\\\u00e9\\\\n\\\"\"");
	/* a long value is cut short, never overflowing the message */
	char raw[400];
	memset(raw, 'a', sizeof raw);
	raw[0] = '"';
	raw[sizeof raw - 2] = '"';
	raw[sizeof raw - 1] = 0;
	CHECK(ollama_format(raw, &g, err, sizeof err) == 500 && !g && strlen(err) < sizeof err);
}

static void test_check(void)
{
	char err[RN_STRUCTURED_ERR_MAX];
	const char ok[] = "root ::= \"a\" [0-9]*";
	CHECK(rn_structured_check(ok, strlen(ok), "", err, sizeof err) == 0);
	CHECK(rn_structured_check(rn_grammar_json, strlen(rn_grammar_json), "", err, sizeof err) == 0);
	const char bad[] = "root ::= valu";
	err[0] = 0;
	CHECKF(rn_structured_check(bad, strlen(bad), "pre: ", err, sizeof err) == 400 && strncmp(err, "pre: ", 5) == 0 &&
		       strlen(err) > 5,
	       "%s", err);
}

/* rn_ls_read_grammar on body: the status; on success the grammar must be want (NULL: none, "*": any). */
static int ls_grammar(const char *body, bool chat, const char *want, char *err, size_t n)
{
	struct ob_json_error je;
	struct ob_json_doc *doc = ob_json_parse(body, strlen(body), &je);
	CHECKF(doc != NULL, "%s", body);
	if (!doc)
		return -1;
	struct rn_ls_req q = {0};
	struct rn_request rq;
	rn_request_default(&rq);
	err[0] = 0;
	int st = rn_ls_read_grammar(ob_json_root(doc), chat, &q, &rq, err, n);
	CHECK(rq.grammar == q.grammar);
	if (!st && want)
		CHECKF(q.grammar && (strcmp(want, "*") == 0 || strcmp(q.grammar, want) == 0), "%s: %s", body, q.grammar ? q.grammar : "(none)");
	if (!st && !want)
		CHECKF(!q.grammar, "%s: %s", body, q.grammar);
	rn_ls_req_clear(&q);
	ob_json_free(doc);
	return st;
}

static void test_llama_server(void)
{
	char err[512];
	const char *person = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}}}";
	char body[512];
	/* /completion: grammar as is, json_schema converted unless a grammar member is there */
	CHECK(ls_grammar("{\"prompt\":\"x\"}", false, NULL, err, sizeof err) == 0);
	CHECK(ls_grammar("{\"grammar\":\"root ::= \\\"a\\\"\"}", false, "root ::= \"a\"", err, sizeof err) == 0);
	CHECK(ls_grammar("{\"grammar\":\"\"}", false, NULL, err, sizeof err) == 0);
	CHECK(ls_grammar("{\"json_schema\":{}}", false, rn_grammar_json, err, sizeof err) == 0);
	CHECK(ls_grammar("{\"json_schema\":null}", false, NULL, err, sizeof err) == 0);
	snprintf(body, sizeof body, "{\"json_schema\":%s,\"grammar\":\"root ::= \\\"a\\\"\"}", person);
	CHECK(ls_grammar(body, false, "root ::= \"a\"", err, sizeof err) == 0);
	snprintf(body, sizeof body, "{\"json_schema\":%s}", person);
	CHECK(ls_grammar(body, false, "*", err, sizeof err) == 0);
	CHECKF(ls_grammar("{\"grammar\":\"root ::= nope\"}", false, NULL, err, sizeof err) == 400 && err[0], "%s", err);
	/* the chat: response_format, and upstream's refusals */
	CHECK(ls_grammar("{\"response_format\":{\"type\":\"text\"}}", true, NULL, err, sizeof err) == 0);
	CHECK(ls_grammar("{\"response_format\":{\"type\":\"json_object\"}}", true, rn_grammar_json, err, sizeof err) == 0);
	CHECK(ls_grammar("{\"response_format\":{\"type\":\"json_schema\"}}", true, rn_grammar_json, err, sizeof err) == 0);
	CHECKF(ls_grammar("{\"response_format\":{\"type\":\"yaml\"}}", true, NULL, err, sizeof err) == 400 &&
		       strcmp(err, "response_format type must be one of \"text\" or \"json_object\", but got: yaml") == 0,
	       "%s", err);
	snprintf(body, sizeof body, "{\"json_schema\":%s,\"grammar\":\"root ::= \\\"a\\\"\"}", person);
	CHECKF(ls_grammar(body, true, NULL, err, sizeof err) == 400 &&
		       strcmp(err, "Cannot use both json_schema and grammar") == 0,
	       "%s", err);
	const char *tools = "[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]";
	snprintf(body, sizeof body, "{\"tools\":%s,\"grammar\":\"root ::= \\\"a\\\"\"}", tools);
	CHECKF(ls_grammar(body, true, NULL, err, sizeof err) == 400 &&
		       strcmp(err, "Cannot use custom grammar constraints with tools.") == 0,
	       "%s", err);
	snprintf(body, sizeof body, "{\"tools\":%s,\"tool_choice\":\"none\",\"grammar\":\"root ::= \\\"a\\\"\"}", tools);
	CHECK(ls_grammar(body, true, "root ::= \"a\"", err, sizeof err) == 0);
	snprintf(body, sizeof body, "{\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":%s}}}",
		 person);
	CHECK(ls_grammar(body, true, "*", err, sizeof err) == 0);
	/* tools with a response_format: the format applies (as Ollama's native chat sends it) */
	snprintf(body, sizeof body, "{\"tools\":%s,\"response_format\":{\"type\":\"json_object\"}}", tools);
	CHECK(ls_grammar(body, true, rn_grammar_json, err, sizeof err) == 0);
}

int main(void)
{
	test_ollama_format();
	test_check();
	test_llama_server();
	return check_done();
}
