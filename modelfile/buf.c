/* modelfile/buf.c — growable buffer with a ceiling (see buf.h). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modelfile/buf.h"
#include "modelfile/unicode.h"

void mf_buf_init(struct mf_buf *b, size_t max)
{
	memset(b, 0, sizeof *b);
	b->max = max;
}

void mf_buf_free(struct mf_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

void mf_buf_reset(struct mf_buf *b)
{
	b->len = 0;
	if (b->p)
		b->p[0] = 0;
}

static bool reserve(struct mf_buf *b, size_t n)
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

bool mf_buf_append(struct mf_buf *b, const void *data, size_t n)
{
	if (!reserve(b, n))
		return false;
	if (n)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = 0;
	return true;
}

bool mf_buf_puts(struct mf_buf *b, const char *s)
{
	return mf_buf_append(b, s, strlen(s));
}

bool mf_buf_putc(struct mf_buf *b, char c)
{
	return mf_buf_append(b, &c, 1);
}

bool mf_buf_printf(struct mf_buf *b, const char *fmt, ...)
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

bool mf_buf_put_rune(struct mf_buf *b, uint32_t r)
{
	char tmp[4];
	size_t n = mf_utf8_encode(tmp, r);
	return mf_buf_append(b, tmp, n);
}

char *mf_buf_take(struct mf_buf *b)
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
