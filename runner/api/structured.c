/* runner/api/structured.c — the faces' structured-output fields turned into GBNF text: Ollama's `format` judged on
 * its raw JSON bytes as Ollama judges it, JSON schemas through runner/grammar's converter, and a compile check
 * of GBNF text so that a bad grammar is a 400 before the request is queued. Compiles nothing it keeps: the
 * engine compiles the text again at submit (a few milliseconds at most for a large schema).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/gofmt.h"
#include "runner/api/structured.h"
#include "runner/grammar/grammar.h"
#include "runner/grammar/json_schema.h"

/* The end of the JSON value that starts at body[off] (body is valid JSON there): strings and containers are
 * scanned (escapes and nested strings skipped), literals run to the next delimiter. */
static size_t value_end(const char *body, size_t len, size_t off)
{
	size_t i = off;
	if (i >= len)
		return len;
	if (body[i] != '"' && body[i] != '[' && body[i] != '{') {
		while (i < len && !strchr(",]} \t\r\n", body[i]))
			i++;
		return i;
	}
	int depth = 0;
	bool in_str = false;
	for (; i < len; i++) {
		char c = body[i];
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"') {
				in_str = false;
				if (depth == 0)
					return i + 1;
			}
		} else if (c == '"')
			in_str = true;
		else if (c == '[' || c == '{')
			depth++;
		else if ((c == ']' || c == '}') && --depth == 0)
			return i + 1;
	}
	return len;
}

static int dup_text(const char *s, char **out, char *err, size_t n)
{
	if (!(*out = strdup(s))) {
		snprintf(err, n, "out of memory");
		return 500;
	}
	return 0;
}

int rn_structured_ollama_format(const char *body, size_t len, const struct ob_json *v, char **gbnf, char *err,
				size_t n)
{
	*gbnf = NULL;
	if (!v)
		return 0;
	size_t raw_len = v->offset < len ? value_end(body, len, v->offset) - v->offset : 0;
	const char *raw = body + (v->offset < len ? v->offset : 0);
	if (raw_len == 2 && memcmp(raw, "\"\"", 2) == 0)
		return 0;
	if (raw_len == 6 && memcmp(raw, "\"json\"", 6) == 0)
		return dup_text(rn_grammar_json, gbnf, err, n);
	if (v->type == OB_JSON_OBJECT)
		return rn_structured_schema(v, "", gbnf, err, n);
	struct ob_buf q;
	ob_buf_init(&q, 0);
	if (!ob_go_quote(&q, raw, raw_len) || q.failed) {
		ob_buf_free(&q);
		snprintf(err, n, "out of memory");
		return 500;
	}
	snprintf(err, n, "invalid format: %.*s; expected \"json\" or a valid JSON Schema object",
		 q.len > 480 ? 480 : (int)q.len, q.p);
	ob_buf_free(&q);
	return 500;
}

int rn_structured_schema(const struct ob_json *s, const char *prefix, char **gbnf, char *err, size_t n)
{
	struct rn_error e = {0};
	*gbnf = rn_json_schema_to_gbnf(s, &e);
	if (*gbnf)
		return 0;
	snprintf(err, n, "%s%s", prefix, e.code == RN_ERR_NOMEM ? "out of memory" : e.msg);
	return e.code == RN_ERR_NOMEM ? 500 : 400;
}

int rn_structured_check(const char *gbnf, size_t len, const char *prefix, char *err, size_t n)
{
	struct rn_error e = {0};
	struct rn_grammar *g = rn_grammar_compile(gbnf, len, NULL, &e);
	if (g) {
		rn_grammar_free(g);
		return 0;
	}
	snprintf(err, n, "%s%s", prefix, e.code == RN_ERR_NOMEM ? "out of memory" : e.msg);
	return e.code == RN_ERR_NOMEM ? 500 : 400;
}
