/* modelfile/template_util.c — the template engine's arena and output buffer.
 *
 * Both have ceilings (MF_TPL_MAX_MEMORY, MF_TPL_MAX_OUTPUT) so that a hostile template fails with a limit
 * error instead of exhausting memory. Nothing here knows about templates.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "modelfile/template_internal.h"

#define CHUNK_MIN (32u << 10)

struct tpl_chunk {
	struct tpl_chunk *next;
	size_t used, size;
	_Alignas(16) char data[];
};

void tpl_arena_init(struct tpl_arena *a, size_t limit)
{
	a->chunks = NULL;
	a->used_total = 0;
	a->limit = limit;
}

void tpl_arena_free(struct tpl_arena *a)
{
	if (!a)
		return;
	struct tpl_chunk *c = a->chunks;
	while (c) {
		struct tpl_chunk *next = c->next;
		free(c);
		c = next;
	}
	a->chunks = NULL;
	a->used_total = 0;
}

void *tpl_arena_alloc(struct tpl_arena *a, size_t n)
{
	if (n == 0)
		n = 1;
	if (n > SIZE_MAX / 2)
		return NULL;
	n = (n + 7) & ~(size_t)7;
	if (a->limit && (n > a->limit || a->used_total > a->limit - n))
		return NULL;
	struct tpl_chunk *c = a->chunks;
	if (!c || c->size - c->used < n) {
		size_t size = n > CHUNK_MIN ? n : CHUNK_MIN;
		c = malloc(sizeof *c + size);
		if (!c)
			return NULL;
		c->used = 0;
		c->size = size;
		c->next = a->chunks;
		a->chunks = c;
	}
	void *p = c->data + c->used;
	c->used += n;
	a->used_total += n;
	memset(p, 0, n);
	return p;
}

char *tpl_arena_strdup(struct tpl_arena *a, const char *s, size_t n)
{
	if (n == SIZE_MAX)
		return NULL;
	char *p = tpl_arena_alloc(a, n + 1);
	if (!p)
		return NULL;
	if (n)
		memcpy(p, s, n);
	p[n] = 0;
	return p;
}

void tpl_buf_init(struct tpl_buf *b, size_t max)
{
	b->p = NULL;
	b->len = b->cap = 0;
	b->max = max ? max : SIZE_MAX / 2;
	b->err = 0;
}

void tpl_buf_free(struct tpl_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

static bool reserve(struct tpl_buf *b, size_t n)
{
	if (b->err)
		return false;
	if (n > b->max || b->len > b->max - n) {
		b->err = MF_TPL_ERR_LIMIT;
		return false;
	}
	if (ob_grow(&b->p, &b->cap, b->len + n + 1, 1, 256, 0) != OB_GROW_OK) {
		b->err = MF_TPL_ERR_NOMEM;
		return false;
	}
	return true;
}

bool tpl_buf_put(struct tpl_buf *b, const char *s, size_t n)
{
	if (!reserve(b, n))
		return false;
	if (n)
		memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
	return true;
}

bool tpl_buf_puts(struct tpl_buf *b, const char *s)
{
	return tpl_buf_put(b, s, strlen(s));
}

bool tpl_buf_putc(struct tpl_buf *b, char c)
{
	return tpl_buf_put(b, &c, 1);
}

bool tpl_buf_pad(struct tpl_buf *b, char c, size_t n)
{
	if (!reserve(b, n))
		return false;
	memset(b->p + b->len, c, n);
	b->len += n;
	b->p[b->len] = 0;
	return true;
}

bool tpl_buf_printf(struct tpl_buf *b, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0) {
		if (!b->err)
			b->err = MF_TPL_ERR_NOMEM;
		return false;
	}
	if ((size_t)n < sizeof tmp)
		return tpl_buf_put(b, tmp, (size_t)n);
	if (!reserve(b, (size_t)n))
		return false;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return true;
}

const char *mf_tpl_strerror(int code)
{
	switch (code) {
	case MF_TPL_OK: return "success";
	case MF_TPL_ERR_PARSE: return "template parse error";
	case MF_TPL_ERR_EXEC: return "template execution error";
	case MF_TPL_ERR_DATA: return "invalid template data";
	case MF_TPL_ERR_NOMEM: return "out of memory";
	case MF_TPL_ERR_LIMIT: return "template limit exceeded";
	}
	return "unknown template error";
}
