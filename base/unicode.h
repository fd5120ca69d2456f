/* base/unicode.h — the few Unicode facts the Modelfile parser needs, as Go defines them.
 *
 * UTF-8 decoding follows Go's unicode/utf8.DecodeRune (an invalid byte decodes as U+FFFD and consumes one
 * byte), and ob_rune_is_print is Go's strconv.IsPrint (letters, marks, numbers, punctuation, symbols and
 * U+0020) for Unicode 15.0, the version of the Go release Ollama is built with.
 */
#ifndef ORUN_BASE_UNICODE_H
#define ORUN_BASE_UNICODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OB_RUNE_ERROR 0xFFFDu

/* Decodes one rune from s[0..n) (n >= 1); stores the byte count in *size (1 for invalid input). */
uint32_t ob_utf8_decode(const unsigned char *s, size_t n, size_t *size);

/* Encodes r into out (4 bytes of room) and returns the byte count; surrogates and values above U+10FFFF
 * are written as U+FFFD. */
size_t ob_utf8_encode(char *out, uint32_t r);

/* Go's strconv.IsPrint (Unicode 15.0). */
bool ob_rune_is_print(uint32_t r);

#endif
