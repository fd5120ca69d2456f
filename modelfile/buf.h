/* modelfile/buf.h — a growable byte buffer with a ceiling, used by the modelfile library's builders.
 *
 * The buffer is always NUL-terminated after a successful append. Every append checks the ceiling and the
 * allocation; errors are sticky (after the first failure every append does nothing and returns false).
 */
#ifndef ORUN_MODELFILE_BUF_H
#define ORUN_MODELFILE_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mf_buf {
	char *p;
	size_t len, cap;
	size_t max; /* ceiling in bytes, 0 = SIZE_MAX/2 */
	bool failed;
	bool over;  /* the failure was the ceiling (else: out of memory) */
};

/* Zeroes b and sets its ceiling. */
void mf_buf_init(struct mf_buf *b, size_t max);
void mf_buf_free(struct mf_buf *b);
void mf_buf_reset(struct mf_buf *b);
bool mf_buf_append(struct mf_buf *b, const void *data, size_t n);
bool mf_buf_puts(struct mf_buf *b, const char *s);
bool mf_buf_putc(struct mf_buf *b, char c);
bool mf_buf_printf(struct mf_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends the UTF-8 encoding of rune r (invalid runes as U+FFFD). */
bool mf_buf_put_rune(struct mf_buf *b, uint32_t r);
/* Hands the NUL-terminated contents to the caller (free() it; never NULL unless failed); b is emptied. */
char *mf_buf_take(struct mf_buf *b);

#endif
