/* base/buf.h — growable memory with a ceiling: the byte buffer (struct ob_buf) and the one growth rule every
 * growable array in orun uses (ob_grow), so that no size taken from input can grow memory without a bound.
 *
 * The buffer is always NUL-terminated after a successful append. Every append checks the ceiling and the
 * allocation; errors are sticky (after the first failure every append does nothing and returns false).
 */
#ifndef ORUN_BASE_BUF_H
#define ORUN_BASE_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------------------------- arrays */

enum ob_grow_status {
	OB_GROW_OK = 0,
	OB_GROW_NOMEM, /* the allocation failed; the array is unchanged */
	OB_GROW_LIMIT, /* `need` passes the ceiling `max`; the array is unchanged */
};

/* Makes room for at least `need` elements of `elem` bytes in the array *(T **)pp of *cap elements: when
 * need > *cap the array is reallocated to the larger of need and twice *cap (at least `min_cap`), never past
 * `max` elements (0: as many as fit in SIZE_MAX / 2 bytes). On failure the array and *cap are unchanged.
 * pp is the address of the array's pointer (any object pointer type; NULL for an empty array). Use OB_GROW. */
int ob_grow(void *pp, size_t *cap, size_t need, size_t elem, size_t min_cap, size_t max)
	__attribute__((warn_unused_result));

/* OB_GROW(array, cap, need, max): ob_grow with the element size taken from the array (min_cap 8). */
#define OB_GROW(arr, cap, need, max) ob_grow(&(arr), &(cap), (need), sizeof *(arr), 8, (max))

/* ------------------------------------------------------------------------------------------- buffer */

struct ob_buf {
	char *p;
	size_t len, cap;
	size_t max; /* ceiling in bytes, 0 = SIZE_MAX/2 */
	bool failed;
	bool over;  /* the failure was the ceiling (else: out of memory) */
};

/* The growth step under ob_buf, for a byte buffer kept in another struct (the JSON writer's): makes room for
 * n more bytes and a NUL after the first len bytes of *p (capacity *cap), never past max bytes of content
 * (0: SIZE_MAX / 2). Returns OB_GROW_OK, or OB_GROW_LIMIT / OB_GROW_NOMEM with *p and *cap unchanged. */
int ob_buf_grow(char **p, size_t *cap, size_t len, size_t n, size_t max) __attribute__((warn_unused_result));

/* Zeroes b and sets its ceiling. */
void ob_buf_init(struct ob_buf *b, size_t max);
void ob_buf_free(struct ob_buf *b);
void ob_buf_reset(struct ob_buf *b);
/* Makes room for n more bytes (and the NUL) without appending: false (sticky) on the ceiling or memory. */
bool ob_buf_reserve(struct ob_buf *b, size_t n);
bool ob_buf_append(struct ob_buf *b, const void *data, size_t n);
bool ob_buf_puts(struct ob_buf *b, const char *s);
bool ob_buf_putc(struct ob_buf *b, char c);
/* Appends n copies of byte c. */
bool ob_buf_pad(struct ob_buf *b, char c, size_t n);
bool ob_buf_printf(struct ob_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends the UTF-8 encoding of rune r (invalid runes as U+FFFD). */
bool ob_buf_put_rune(struct ob_buf *b, uint32_t r);
/* Hands the NUL-terminated contents to the caller (free() it; never NULL unless failed); b is emptied. */
char *ob_buf_take(struct ob_buf *b);

/* Appends the whole file at path (a small text file: a template, a prompt). False when it cannot be opened
 * or read (b then failed, over false), or when it passes b's ceiling (over true). */
bool ob_buf_read_file(struct ob_buf *b, const char *path);

#endif
