/* runner/api/structured.h — structured output as the faces ask for it, turned into the GBNF text the engine
 * constrains with (struct rn_request.grammar): Ollama's `format` ("json" or a JSON schema), a JSON schema
 * (OpenAI's response_format, llama-server's json_schema), and a check that GBNF text compiles, so that a bad
 * grammar is answered 400 before anything is queued.
 *
 * The grammar language and the schema converter are runner/grammar/; this is only the faces' side of them.
 */
#ifndef ORUN_RUNNER_API_STRUCTURED_H
#define ORUN_RUNNER_API_STRUCTURED_H

#include <stddef.h>

#include "base/json.h"

#define RN_STRUCTURED_ERR_MAX 640 /* bytes of an error message (a quoted bad format is cut short) */

/* Ollama's `format` member: v is its value parsed from body[0..len) (v->offset into body), NULL when absent or
 * null. As Ollama compares the raw JSON: `""` → no grammar; `"json"` → rn_grammar_json; an object → its
 * schema's grammar; anything else → `invalid format: %q; expected "json" or a valid JSON Schema object` with
 * the raw bytes Go-quoted. Returns 0 with *gbnf malloc'd (NULL: unconstrained), or an HTTP status with err:
 * 500 for a bad format (Ollama answers it as an internal error), 400 for a schema the converter refuses (its
 * message), 500 out of memory. */
int rn_structured_ollama_format(const char *body, size_t len, const struct ob_json *v, char **gbnf, char *err,
				size_t n) __attribute__((warn_unused_result));

/* The grammar of JSON schema s (an object, or true): 0 with *gbnf malloc'd, or 400 with the converter's message
 * prefixed by `prefix` (may be ""), 500 out of memory. */
int rn_structured_schema(const struct ob_json *s, const char *prefix, char **gbnf, char *err, size_t n)
	__attribute__((warn_unused_result));

/* Whether gbnf[0..len) compiles: 0, or 400 with the compiler's message (prefixed), 500 out of memory. */
int rn_structured_check(const char *gbnf, size_t len, const char *prefix, char *err, size_t n)
	__attribute__((warn_unused_result));

#endif
