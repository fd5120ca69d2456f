/* tools/wordwrap.h — Ollama's displayResponse word wrap for streamed answers (`orun run`, one-shot and
 * interactive): a word that would pass the terminal width less a margin of 5 is moved to the next line
 * with cursor movement, so it needs a terminal on stdout.
 */
#ifndef ORUN_TOOLS_WORDWRAP_H
#define ORUN_TOOLS_WORDWRAP_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"

#define WRAP_WORD_MAX 4096 /* bytes of the word being wrapped (a longer one is no longer moved) */

/* The state of one answer on the screen (Ollama's displayResponseState). */
struct wrap {
	size_t line_len;    /* cells on the current line */
	struct ob_buf word; /* the word being printed (to move it to the next line) */
};

void wrap_init(struct wrap *w);
/* Frees the word buffer; accepts a zeroed struct. */
void wrap_free(struct wrap *w);
/* A fresh line and no word (after the thinking block closes, as Ollama starts a new state). */
void wrap_reset(struct wrap *w);
/* Prints n bytes of answer text s on stdout, wrapped at the width of the terminal on stdout (80 when it
 * has none) when wordwrap is set, else as they come. */
void wrap_print(struct wrap *w, const char *s, size_t n, bool wordwrap);

#endif
