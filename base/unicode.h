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

#include "base/utf8.h"

/* Go's strconv.IsPrint (Unicode 15.0). */
bool ob_rune_is_print(uint32_t r);

#endif
