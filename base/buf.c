/* base/buf.c — the growth rule for arrays (ob_grow) and the byte buffer with a ceiling built on it (buf.h).
 * Growth doubles, so appending n bytes one at a time costs O(n) copies; nothing here shrinks memory.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/utf8.h"

int ob_grow(void *pp, size_t *cap, size_t need, size_t elem, size_t min_cap, size_t max)
{
	if (elem == 0)
		abort(); /* a caller's bug, never input */
	if (need <= *cap)
		return OB_GROW_OK;
	size_t limit = (SIZE_MAX / 2) / elem;
	if (max == 0 || max > limit)
		max = limit;
	if (need > max)
		return OB_GROW_LIMIT;
	size_t c = *cap > max / 2 ? max : *cap * 2;
	if (c < min_cap)
		c = min_cap;
	if (c < need)
		c = need;
	if (c > max)
		c = max;
	void *p;
	memcpy(&p, pp, sizeof p); /* pp points at a T *, whatever T is */
	void *np = realloc(p, c * elem);
	if (!np)
		return OB_GROW_NOMEM;
	memcpy(pp, &np, sizeof np);
	*cap = c;
	return OB_GROW_OK;
}

void ob_buf_init(struct ob_buf *b, size_t max)
{
	memset(b, 0, sizeof *b);
	b->max = max;
}

void ob_buf_free(struct ob_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

void ob_buf_reset(struct ob_buf *b)
{
	b->len = 0;
	if (b->p)
		b->p[0] = 0;
}

int ob_buf_grow(char **p, size_t *cap, size_t len, size_t n, size_t max)
{
	if (max == 0 || max > SIZE_MAX / 2)
		max = SIZE_MAX / 2;
	if (n > max || len > max - n)
		return OB_GROW_LIMIT;
	return ob_grow(p, cap, len + n + 1, 1, 64, 0);
}

bool ob_buf_reserve(struct ob_buf *b, size_t n)
{
	if (b->failed)
		return false;
	int g = ob_buf_grow(&b->p, &b->cap, b->len, n, b->max);
	if (g != OB_GROW_OK) {
		b->failed = true;
		b->over = g == OB_GROW_LIMIT;
		return false;
	}
	return true;
}

bool ob_buf_append(struct ob_buf *b, const void *data, size_t n)
{
	if (!ob_buf_reserve(b, n))
		return false;
	if (n)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = 0;
	return true;
}

bool ob_buf_puts(struct ob_buf *b, const char *s)
{
	return ob_buf_append(b, s, strlen(s));
}

bool ob_buf_putc(struct ob_buf *b, char c)
{
	return ob_buf_append(b, &c, 1);
}

bool ob_buf_pad(struct ob_buf *b, char c, size_t n)
{
	if (!ob_buf_reserve(b, n))
		return false;
	memset(b->p + b->len, c, n);
	b->len += n;
	b->p[b->len] = 0;
	return true;
}

bool ob_buf_printf(struct ob_buf *b, const char *fmt, ...)
{
	char tmp[256]; /* most texts fit: one formatting pass */
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->failed = true;
		return false;
	}
	if ((size_t)n < sizeof tmp)
		return ob_buf_append(b, tmp, (size_t)n);
	if (!ob_buf_reserve(b, (size_t)n))
		return false;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return true;
}

bool ob_buf_put_rune(struct ob_buf *b, uint32_t r)
{
	char tmp[4];
	size_t n = ob_utf8_encode(tmp, r);
	return ob_buf_append(b, tmp, n);
}

char *ob_buf_take(struct ob_buf *b)
{
	if (b->failed)
		return NULL;
	if (!b->p && !ob_buf_reserve(b, 0))
		return NULL;
	b->p[b->len] = 0;
	char *p = b->p;
	b->p = NULL;
	b->len = b->cap = 0;
	return p;
}

bool ob_buf_read_file(struct ob_buf *b, const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		b->failed = true;
		return false;
	}
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		if (!ob_buf_append(b, chunk, n))
			break;
	if (ferror(f))
		b->failed = true;
	fclose(f);
	return !b->failed;
}
