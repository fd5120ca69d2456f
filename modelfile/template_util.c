/* modelfile/template_util.c — the template engine's arena and its error texts.
 *
 * The arena has a ceiling (MF_TPL_MAX_MEMORY), as the output buffer (base/buf's ob_buf) has
 * MF_TPL_MAX_OUTPUT, so that a hostile template fails with a limit error instead of exhausting memory.
 * Nothing here knows about templates.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

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
