/* base/buf.c — growable buffer with a ceiling (see buf.h). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/unicode.h"

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

static bool reserve(struct ob_buf *b, size_t n)
{
	if (b->failed)
		return false;
	size_t max = b->max ? b->max : SIZE_MAX / 2;
	if (n > max || b->len > max - n) {
		b->failed = b->over = true;
		return false;
	}
	size_t need = b->len + n + 1;
	if (need <= b->cap)
		return true;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap > SIZE_MAX / 4 ? need : cap * 2;
	char *p = realloc(b->p, cap);
	if (!p) {
		b->failed = true;
		return false;
	}
	b->p = p;
	b->cap = cap;
	return true;
}

bool ob_buf_append(struct ob_buf *b, const void *data, size_t n)
{
	if (!reserve(b, n))
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

bool ob_buf_printf(struct ob_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !reserve(b, (size_t)n))
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
	if (!b->p && !reserve(b, 0))
		return NULL;
	if (b->p)
		b->p[b->len] = 0;
	char *p = b->p;
	b->p = NULL;
	b->len = b->cap = 0;
	return p;
}
