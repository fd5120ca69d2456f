/* runner/grammar/json_schema.h — a JSON schema turned into a GBNF grammar, as llama.cpp's
 * json_schema_to_grammar and Ollama's SchemaToGrammar do, and the JSON grammar of `format: "json"`.
 *
 * Types, properties (in their order; required and optional), additionalProperties, enum, const, nested
 * objects, arrays with minItems/maxItems, anyOf/oneOf/allOf, $ref and $defs, string formats (date, time,
 * date-time, uuid), min/max length, numbers with bounds, pattern where it compiles. A feature the converter
 * cannot honour is refused with an error naming it, never silently loosened.
 */
#ifndef ORUN_RUNNER_GRAMMAR_JSON_SCHEMA_H
#define ORUN_RUNNER_GRAMMAR_JSON_SCHEMA_H

#include <stddef.h>

#include "base/json.h"
#include "runner/error.h"

/* The GBNF of any JSON value with an object or array at the top (what `format: "json"` means). */
extern const char rn_grammar_json[];

/* The GBNF text for schema (a JSON object; `true`/`{}` accept any value). Returns a malloc'd NUL-terminated
 * string, or NULL with *err: RN_ERR_INVALID_ARG and a message naming the keyword or the place in the schema
 * ("json schema: unsupported keyword 'patternProperties' at #/properties/a"), RN_ERR_NOMEM. */
char *rn_json_schema_to_gbnf(const struct ob_json *schema, struct rn_error *err);

#endif
