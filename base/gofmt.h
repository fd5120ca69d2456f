/* base/gofmt.h — the few pieces of Go's fmt and strconv whose exact output users see: how
 * `ollama show` prints parameter values (%v and %#v) and Go's number and bool parsing.
 */
#ifndef ORUN_BASE_GOFMT_H
#define ORUN_BASE_GOFMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

/* Go's fmt %v (and %#v) of a float64, i.e. strconv.FormatFloat(v, 'g', -1, 64): the shortest digits that
 * read back exactly, in exponent form when the decimal exponent is < -4 or >= 6: e.g. 0.7, 131072, 1e+06,
 * 1.234567e+06, 1.5e-07, +Inf, NaN.
 * buf needs 32 bytes; returns the length. */
int ob_go_format_float(char *buf, double v);

/* strconv.FormatFloat(v, fmt, -1, bits) for fmt 'e', 'f' or 'g' and bits 64, or 32 for a float32 value held
 * in v: the shortest digits that read back as that type; NaN, +Inf, -Inf as Go writes them. buf needs 32
 * bytes; returns the length. */
int ob_go_format_float_as(char *buf, double v, char fmt, int bits);

/* Appends Go's strconv.Quote(s[0..n)) to b (double quotes, Go escapes, printable runes kept). */
bool ob_go_quote(struct ob_buf *b, const char *s, size_t n);

/* strconv's underscoreOK for the number literal s[0..n): underscores only between digits, a base prefix
 * (0b 0o 0x) counting as a digit, an optional sign first. */
bool ob_go_underscore_ok(const char *s, size_t n);

/* strconv.ParseFloat(s, 32): Go's float literal syntax (decimal or 0x hex with p exponent, underscores
 * between digits, inf/infinity/nan) rounded to float32; false on a syntax or range error. */
bool ob_go_parse_float32(const char *s, float *out);

/* strconv.ParseInt(s, 10, 64); false on a syntax or range error. */
bool ob_go_parse_int64(const char *s, int64_t *out);

/* strconv.ParseBool: 1 t T TRUE true True 0 f F FALSE false False. */
bool ob_go_parse_bool(const char *s, bool *out);

/* Go's int64(f) conversion on amd64: truncation toward zero; NaN or out of range gives INT64_MIN. */
int64_t ob_go_float_to_int(double f);

#endif
