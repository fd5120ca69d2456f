/* base/buf.h — a growable byte buffer with a ceiling, used by the modelfile library's builders.
 *
 * The buffer is always NUL-terminated after a successful append. Every append checks the ceiling and the
 * allocation; errors are sticky (after the first failure every append does nothing and returns false).
 */
#ifndef ORUN_BASE_BUF_H
#define ORUN_BASE_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ob_buf {
	char *p;
	size_t len, cap;
	size_t max; /* ceiling in bytes, 0 = SIZE_MAX/2 */
	bool failed;
	bool over;  /* the failure was the ceiling (else: out of memory) */
};

/* Zeroes b and sets its ceiling. */
void ob_buf_init(struct ob_buf *b, size_t max);
void ob_buf_free(struct ob_buf *b);
void ob_buf_reset(struct ob_buf *b);
bool ob_buf_append(struct ob_buf *b, const void *data, size_t n);
bool ob_buf_puts(struct ob_buf *b, const char *s);
bool ob_buf_putc(struct ob_buf *b, char c);
bool ob_buf_printf(struct ob_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends the UTF-8 encoding of rune r (invalid runes as U+FFFD). */
bool ob_buf_put_rune(struct ob_buf *b, uint32_t r);
/* Hands the NUL-terminated contents to the caller (free() it; never NULL unless failed); b is emptied. */
char *ob_buf_take(struct ob_buf *b);

#endif
