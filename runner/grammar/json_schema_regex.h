/* runner/grammar/json_schema_regex.h — internal to the JSON schema converter: a schema's `pattern` (the
 * ECMAScript regex subset llama.cpp's converter supports) compiled into GBNF over the JSON text of a string's
 * contents, and the GBNF spelling of literal text. Not a public interface: json_schema.c is the only user.
 */
#ifndef ORUN_RUNNER_GRAMMAR_JSON_SCHEMA_REGEX_H
#define ORUN_RUNNER_GRAMMAR_JSON_SCHEMA_REGEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

#define RN_JS_MAX_REPEAT 4096   /* the largest count in minItems/maxItems/minLength/maxLength and regex {m,n} */
#define RN_JS_REGEX_MAX_DEPTH 32 /* nested groups in a pattern */
#define RN_JS_REGEX_MAX_RANGES 512 /* code point ranges in one character class */

/* Appends to out the GBNF expression for the contents (between the quotes) of a JSON string that the
 * pattern pat[0..len) matches: anchored at both ends when it starts with '^' and ends with '$', else padded
 * with `char*` (then *uses_char is set: the caller must define the `char` rule). Escaped and control
 * characters of the pattern are matched in their JSON spelling (a quote as \"); a character JSON can only
 * hold escaped in a way the grammar does not produce (other control characters, U+007F) is left out of
 * classes, never let in raw. The expression may be empty (the pattern "^$"). Returns true, or false with msg
 * (a sentence: "unsupported regex syntax '(?=' at offset 3") and out unchanged; out of memory is a failed out. */
bool rn_js_regex_gbnf(struct ob_buf *out, const char *pat, size_t len, bool *uses_char, char *msg, size_t msgsz);

/* Appends s[0..n) as a GBNF string literal: quotes, backslash-escaped quote and backslash, control bytes as
 * \n, \r, \t or \xHH; other bytes (UTF-8 included) as they are. */
void rn_js_gbnf_literal(struct ob_buf *out, const char *s, size_t n);

/* Appends code point c as GBNF writes it inside a class [ ]: letters and digits as they are, other ASCII as
 * \xHH, the rest as \uHHHH or \UHHHHHHHH. */
void rn_js_gbnf_class_char(struct ob_buf *out, uint32_t c);

#endif
