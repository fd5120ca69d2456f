/* tools/wordwrap.c — Ollama's displayResponse (cmd/cmd.go): answer text printed rune by rune, a word
 * that would pass the width less 5 moved to the next line (cursor back over it, clear to the end of the
 * line), a word longer than the width less 10 broken where it is. Widths are terminal cells (East Asian
 * wide runes count 2). It does not know about thinking blocks or colours: the callers print those.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "base/unicode.h"
#include "base/utf8.h"
#include "tools/wordwrap.h"

void wrap_init(struct wrap *w)
{
	w->line_len = 0;
	ob_buf_init(&w->word, WRAP_WORD_MAX);
}

void wrap_free(struct wrap *w)
{
	ob_buf_free(&w->word);
}

/* Ollama's term.GetSize on stdout, 80 when that fails (not a terminal). */
static size_t term_width(void)
{
	struct winsize ws;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return 80;
}

void wrap_reset(struct wrap *w)
{
	w->line_len = 0;
	w->word.len = 0;
}

void wrap_print(struct wrap *w, const char *s, size_t n, bool wordwrap)
{
	size_t width = term_width();
	if (!wordwrap || width < 10) {
		fwrite(w->word.p ? w->word.p : "", 1, w->word.len, stdout);
		fwrite(s, 1, n, stdout);
		w->word.len = 0;
		return;
	}
	for (size_t i = 0; i < n;) {
		size_t k;
		uint32_t r = ob_utf8_decode((const unsigned char *)s + i, n - i, &k);
		const char *ch = s + i;
		i += k;
		size_t cw = (size_t)ob_rune_width(r);
		size_t ww = ob_utf8_width(w->word.p ? w->word.p : "", w->word.len);
		if (r != '\n' && r != '\r' && w->line_len + 1 > width - 5) {
			if (ww > width - 10) { /* a word longer than the line: break it */
				fwrite(ch, 1, k, stdout);
				w->word.len = 0;
				w->line_len = cw;
				continue;
			}
			if (r == ' ' || r == '\t') { /* the space becomes the line break */
				fputs("\n", stdout);
				wrap_reset(w);
				continue;
			}
			/* move the word begun on this line to the next one */
			if (ww > 0)
				printf("\x1b[%zuD", ww);
			fputs("\x1b[K\n", stdout); /* clear to the end of the line */
			fwrite(w->word.p ? w->word.p : "", 1, w->word.len, stdout);
			fwrite(ch, 1, k, stdout);
			w->line_len = ww + cw;
			if (!ob_buf_append(&w->word, ch, k))
				w->word.len = 0;
			continue;
		}
		fwrite(ch, 1, k, stdout);
		w->line_len += cw;
		if (cw >= 2 || r == ' ' || r == '\t')
			w->word.len = 0;
		else if (r == '\n' || r == '\r')
			wrap_reset(w);
		else if (!ob_buf_append(&w->word, ch, k))
			w->word.len = 0;
	}
}
