/* runner/api/decode.h — decoding request bodies into C fields with Go encoding/json's rules and messages.
 *
 * Keys match struct fields case-insensitively (the last matching member wins), unknown keys are ignored,
 * null leaves a field unset, and a value of the wrong JSON type fails with Go's text, e.g.
 * `json: cannot unmarshal string into Go struct field ChatRequest.stream of type bool`. An empty body is
 * `missing request body` (gin's ShouldBindJSON on io.EOF). The decoder keeps the first error.
 */
#ifndef ORUN_RUNNER_API_DECODE_H
#define ORUN_RUNNER_API_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/json.h"

struct rn_dec {
	const char *go_struct; /* Go struct name in messages, e.g. "ChatRequest" */
	const char *prefix;    /* JSON path of the struct inside the document, e.g. "messages" ("" at top) */
	bool failed;
	char err[1024];        /* the first error */
};

/* Parses a request body. Returns the document, or NULL with d->err set: "missing request body" for an empty
 * (or all-whitespace) body, Go's syntax message otherwise, or "json: cannot unmarshal array into Go value of
 * type api.<go_struct>" when the top level is not an object (null is an empty request). *root gets the
 * object (NULL for a null body). */
struct ob_json_doc *rn_dec_parse(struct rn_dec *d, const char *body, size_t len, const struct ob_json **root);

/* Records an error (the first one wins). */
void rn_dec_fail(struct rn_dec *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Records Go's UnmarshalTypeError for member `field` holding v, which should have Go type `go_type`. */
void rn_dec_type_error(struct rn_dec *d, const char *field, const struct ob_json *v, const char *go_type);

/* The member for `field` (case-insensitive, last wins), or NULL when absent or null. */
const struct ob_json *rn_dec_get(const struct ob_json *obj, const char *field);

/* Typed fields: each returns true when the member is present (not null) and of the right type, storing the
 * value; false when absent/null (nothing stored) or of the wrong type (error recorded). */
bool rn_dec_string(struct rn_dec *d, const struct ob_json *obj, const char *field, const char **s, size_t *len);
bool rn_dec_bool(struct rn_dec *d, const struct ob_json *obj, const char *field, bool *out);
bool rn_dec_int(struct rn_dec *d, const struct ob_json *obj, const char *field, int64_t *out);
bool rn_dec_float(struct rn_dec *d, const struct ob_json *obj, const char *field, double *out);
/* Containers: `go_type` names the Go type for the message (e.g. "[]api.Message", "map[string]interface {}"). */
const struct ob_json *rn_dec_array(struct rn_dec *d, const struct ob_json *obj, const char *field, const char *go_type);
const struct ob_json *rn_dec_object(struct rn_dec *d, const struct ob_json *obj, const char *field, const char *go_type);

/* Go's integer decoding of one number value (an integer literal that fits int64). */
bool rn_dec_int_value(struct rn_dec *d, const char *field, const struct ob_json *v, int64_t *out);

#endif
