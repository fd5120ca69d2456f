/* modelfile/jinja/util.c — the Jinja engine's arena, its one failure path, and the Python string helpers the
 * lexer and the evaluator share (whitespace as str.isspace, code points of possibly invalid UTF-8).
 * Compiled only as part of modelfile/jinja/jinja.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "modelfile/jinja/internal.h"

struct jj_chunk {
	struct jj_chunk *next;
	size_t used, cap;
	_Alignas(16) unsigned char data[];
};

#define JJ_CHUNK_MIN (16u << 10)

static void jj_arena_init(struct jj_arena *a, size_t limit)
{
	memset(a, 0, sizeof *a);
	a->limit = limit;
}

static void jj_arena_free(struct jj_arena *a)
{
	struct jj_chunk *c = a->chunks;
	while (c) {
		struct jj_chunk *next = c->next;
		free(c);
		c = next;
	}
	a->chunks = NULL;
	a->used = 0;
}

static void jj_fail(struct jj_fail *f, int status, const char *type, const char *fmt, ...)
{
	struct mf_jinja_error *e = f->err;
	e->status = status;
	e->line = f->line;
	snprintf(e->type, sizeof e->type, "%s", type);
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(e->message, sizeof e->message, fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof e->message) /* cut on a UTF-8 boundary */
		e->message[ob_utf8_valid_prefix(e->message, sizeof e->message - 1)] = 0;
	longjmp(f->jb, 1);
}

static void *jj_alloc(struct jj_arena *a, struct jj_fail *f, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (n > a->limit - a->used || a->used > a->limit)
		jj_fail(f, MF_JINJA_ELIMIT, "LimitError", "memory limit exceeded: rendering needs more than %zu MiB",
			a->limit >> 20);
	struct jj_chunk *c = a->chunks;
	if (!c || c->cap - c->used < n) {
		size_t cap = n > JJ_CHUNK_MIN ? n : JJ_CHUNK_MIN;
		if (c && c->cap * 2 > cap && c->cap < (16u << 20))
			cap = c->cap * 2;
		c = malloc(sizeof *c + cap);
		if (!c)
			jj_fail(f, MF_JINJA_ENOMEM, "MemoryError", "out of memory");
		c->cap = cap;
		c->used = 0;
		c->next = a->chunks;
		a->chunks = c;
	}
	void *p = c->data + c->used;
	c->used += n;
	a->used += n;
	memset(p, 0, n);
	return p;
}

/* Uninitialised memory (for bytes that are written at once). */
static void *jj_alloc_raw(struct jj_arena *a, struct jj_fail *f, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	struct jj_chunk *c = a->chunks;
	if (c && c->cap - c->used >= n && n <= a->limit - a->used) {
		void *p = c->data + c->used;
		c->used += n;
		a->used += n;
		return p;
	}
	return jj_alloc(a, f, n);
}

static char *jj_strdup(struct jj_arena *a, struct jj_fail *f, const char *s, size_t n)
{
	if (n >= SIZE_MAX / 2)
		jj_fail(f, MF_JINJA_ELIMIT, "LimitError", "memory limit exceeded");
	char *p = jj_alloc_raw(a, f, n + 1);
	if (n)
		jj_memcpy(p, s, n);
	p[n] = 0;
	return p;
}

/* ------------------------------------------------------------------------------------------ strings */

/* The code point at s[0..n) and its byte length; an invalid byte reads as U+DC00 + the byte (like Python's
 * surrogateescape) so that every byte is one character and nothing is lost. */
static uint32_t jj_cp(const char *s, size_t n, size_t *size)
{
	size_t k = ob_utf8_valid_len((const unsigned char *)s, n);
	if (k == 0) {
		*size = 1;
		return 0xDC00u + (unsigned char)s[0];
	}
	*size = k;
	return ob_utf8_decode((const unsigned char *)s, k, &k);
}

/* Python's str.isspace for one code point. */
static bool jj_isspace(uint32_t c)
{
	if (c < 0x80)
		return c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f);
	return c == 0x85 || c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 ||
	       c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

/* Length of s[0..n) without its trailing str.isspace characters (Python's rstrip()). */
static size_t jj_rstrip_len(const char *s, size_t n)
{
	while (n > 0) {
		size_t k;
		uint32_t c = ob_utf8_decode_last((const unsigned char *)s, n, &k);
		if (k == 0 || !jj_isspace(c))
			break;
		n -= k;
	}
	return n;
}

/* Bytes of leading str.isspace characters in s[0..n) (Python's lstrip()). */
static size_t jj_lspace_len(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		size_t k;
		uint32_t c = jj_cp(s + i, n - i, &k);
		if (!jj_isspace(c))
			break;
		i += k;
	}
	return i;
}

/* Code points in s[0..n). */
static size_t jj_cplen(const char *s, size_t n)
{
	size_t count = 0;
	for (size_t i = 0; i < n; count++) {
		unsigned char b = (unsigned char)s[i];
		if (b < 0x80) {
			i++;
			continue;
		}
		size_t k;
		jj_cp(s + i, n - i, &k);
		i += k;
	}
	return count;
}

static bool jj_is_ascii(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] >= 0x80)
			return false;
	return true;
}
