/* base/jsonutil.h — small helpers over base/json.h for writing what Go writes: the output of Go's
 * json.Encoder (a trailing newline), re-encoding decoded JSON as Go re-encodes a map[string]any, and the
 * members of a struct with `omitempty` fields.
 */
#ifndef ORUN_BASE_JSONUTIL_H
#define ORUN_BASE_JSONUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "base/json.h"

/* Takes the writer's output and appends "\n" (json.Encoder.Encode); frees the writer's buffer. NULL when the
 * writer failed or memory ran out. */
char *ob_jw_take_line(struct ob_jw *w, size_t *len);

/* Writes v as Go writes the value it decoded into `any`: numbers as float64 (Go's formatting), object keys
 * sorted and de-duplicated (the last duplicate wins), strings with Go's escaping. Returns false for a number
 * out of float64 range (Go could not have decoded it). */
bool ob_jw_go_value(struct ob_jw *w, const struct ob_json *v);

/* A struct field tagged `json:",omitempty"`: writes the member key: value unless the value is empty (a NULL
 * or "" string, a zero-length stringn, 0). */
void ob_jw_omitempty_string(struct ob_jw *w, const char *key, const char *s);
void ob_jw_omitempty_stringn(struct ob_jw *w, const char *key, const char *s, size_t n);
void ob_jw_omitempty_int(struct ob_jw *w, const char *key, int64_t v);

#endif
