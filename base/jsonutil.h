/* base/jsonutil.h — small helpers over base/json.h used by the store and create: the output of
 * Go's json.Encoder (a trailing newline) and re-encoding decoded JSON as Go re-encodes a map[string]any.
 */
#ifndef ORUN_BASE_JSONUTIL_H
#define ORUN_BASE_JSONUTIL_H

#include <stddef.h>

#include "base/json.h"

/* Takes the writer's output and appends "\n" (json.Encoder.Encode); frees the writer's buffer. NULL when the
 * writer failed or memory ran out. */
char *ob_jw_take_line(struct ob_jw *w, size_t *len);

/* Writes v as Go writes the value it decoded into `any`: numbers as float64 (Go's formatting), object keys
 * sorted and de-duplicated (the last duplicate wins), strings with Go's escaping. Returns false for a number
 * out of float64 range (Go could not have decoded it). */
bool ob_jw_go_value(struct ob_jw *w, const struct ob_json *v);

#endif
