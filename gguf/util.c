/* gguf/util.c — error formatting, escaping of untrusted strings for messages, the arena allocator, the
 * string hash and the few JSON helpers (over base/json.h, with gguf's error words) used by the gguf/ sources.
 * Nothing here prints.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "gguf/internal.h"

static const char *const status_text[GGUF_ERR__COUNT] = {
	[GGUF_OK] = "success",
	[GGUF_ERR_IO] = "input/output error",
	[GGUF_ERR_NOMEM] = "out of memory",
	[GGUF_ERR_TRUNCATED] = "truncated data",
	[GGUF_ERR_MAGIC] = "bad magic (not a GGUF file)",
	[GGUF_ERR_VERSION] = "unsupported GGUF version",
	[GGUF_ERR_COUNT] = "count too large",
	[GGUF_ERR_STRING] = "bad string length",
	[GGUF_ERR_KEY_EMPTY] = "empty metadata key",
	[GGUF_ERR_KEY_DUP] = "duplicate metadata key",
	[GGUF_ERR_KEY_INVALID] = "invalid metadata key",
	[GGUF_ERR_VALUE_TYPE] = "invalid metadata value type",
	[GGUF_ERR_ARRAY] = "invalid array",
	[GGUF_ERR_BOOL] = "invalid bool value",
	[GGUF_ERR_ALIGNMENT] = "invalid alignment",
	[GGUF_ERR_TENSOR_NAME] = "invalid tensor name",
	[GGUF_ERR_TENSOR_DUP] = "duplicate tensor name",
	[GGUF_ERR_NDIMS] = "too many dimensions",
	[GGUF_ERR_DIM] = "negative dimension",
	[GGUF_ERR_OVERFLOW] = "size overflow",
	[GGUF_ERR_TENSOR_TYPE] = "unknown tensor type",
	[GGUF_ERR_BLOCK] = "row length not a multiple of the block size",
	[GGUF_ERR_OFFSET] = "bad tensor data offset",
	[GGUF_ERR_DATA_BOUNDS] = "tensor data past the end of the file",
	[GGUF_ERR_NOT_FOUND] = "not found",
	[GGUF_ERR_TYPE_MISMATCH] = "type mismatch",
	[GGUF_ERR_ARCH] = "unsupported or incomplete model architecture",
	[GGUF_ERR_SHAPE] = "tensor missing or of the wrong type or shape",
	[GGUF_ERR_UNSUPPORTED] = "unsupported operation for this type",
	[GGUF_ERR_INVALID_ARG] = "invalid argument",
	[GGUF_ERR_JSON] = "malformed JSON",
	[GGUF_ERR_FORMAT] = "invalid checkpoint format",
	[GGUF_ERR_CANCELLED] = "cancelled",
};

const char *gguf_strerror(int code)
{
	if (code < 0 || code >= GGUF_ERR__COUNT || !status_text[code])
		return "unknown error";
	return status_text[code];
}

int gg_fail(struct gguf_error *err, int code, uint64_t offset, const char *fmt, ...)
{
	if (err) {
		err->code = code;
		err->offset = offset;
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
	}
	return code;
}

char *gg_escape(char *buf, size_t cap, const void *s, size_t n, size_t max_shown)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = s;
	size_t o = 0;
	if (cap == 0)
		return buf;
	for (size_t i = 0; i < n; i++) {
		if (i >= max_shown || o + 8 >= cap) {
			if (o + 4 <= cap) {
				memcpy(buf + o, "...", 3);
				o += 3;
			}
			break;
		}
		unsigned char c = p[i];
		if (c == '\\' || c == '\'' || c == '"') {
			buf[o++] = '\\';
			buf[o++] = (char)c;
		} else if (c >= 0x20 && c < 0x7f) {
			buf[o++] = (char)c;
		} else {
			buf[o++] = '\\';
			buf[o++] = 'x';
			buf[o++] = hex[c >> 4];
			buf[o++] = hex[c & 15];
		}
	}
	buf[o] = 0;
	return buf;
}

struct gg_chunk {
	struct gg_chunk *next;
	size_t used, cap;
	max_align_t data[];
};

#define GG_CHUNK_MIN (256u * 1024u)

void *gg_arena_alloc(struct gg_arena *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (n == 0)
		n = 16;
	struct gg_chunk *c = a->head;
	if (!c || c->cap - c->used < n) {
		size_t min = a->chunk ? a->chunk : GG_CHUNK_MIN;
		size_t cap = n > min ? n : min;
		if (cap > SIZE_MAX - sizeof(struct gg_chunk))
			return NULL;
		c = malloc(sizeof(struct gg_chunk) + cap);
		if (!c)
			return NULL;
		c->cap = cap;
		c->used = 0;
		c->next = a->head;
		a->head = c;
	}
	void *p = (char *)c->data + c->used;
	c->used += n;
	return p;
}

void gg_arena_free(struct gg_arena *a)
{
	struct gg_chunk *c = a->head;
	while (c) {
		struct gg_chunk *n = c->next;
		free(c);
		c = n;
	}
	a->head = NULL;
}

uint32_t *gg_hash_table(struct gg_arena *a, uint64_t n, uint64_t *mask)
{
	uint64_t cap = 16;
	while (cap < 2 * n)
		cap <<= 1;
	uint32_t *t = gg_arena_alloc(a, cap * sizeof *t);
	if (t)
		memset(t, 0, cap * sizeof *t);
	*mask = cap - 1;
	return t;
}

uint64_t gg_hash(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* ---------------------------------------------------------------------------------------------- JSON */

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && strcmp(s + n - k, suffix) == 0;
}

int gg_json_parse(const char *what, const char *s, size_t n, uint64_t base, struct ob_json_doc **doc,
		  struct gguf_error *err)
{
	struct ob_json_error je;
	*doc = ob_json_parse(s, n, &je);
	if (*doc)
		return 0;
	const char *m = je.message, *reason = "invalid JSON";
	char deep[64];
	bool detail = strncmp(m, "invalid character ", 18) == 0;
	if (strcmp(m, "unexpected end of JSON input") == 0) {
		size_t k = 0;
		while (k < n && (s[k] == ' ' || s[k] == '\t' || s[k] == '\n' || s[k] == '\r'))
			k++;
		reason = k == n ? "empty JSON document" : "unexpected end of the JSON document";
	} else if (ends_with(m, " after top-level value")) {
		reason = "trailing characters after the JSON value";
	} else if (ends_with(m, " after object key")) {
		reason = "object key without value";
	} else if (strcmp(m, "exceeded max depth") == 0) {
		snprintf(deep, sizeof deep, "nested deeper than %d levels", OB_JSON_MAX_DEPTH);
		reason = deep;
	} else if (strcmp(m, "out of memory") == 0) {
		return gg_fail(err, GGUF_ERR_NOMEM, base + je.offset, "%s: out of memory", what);
	} else if (!detail) {
		reason = m;
	}
	if (detail)
		return gg_fail(err, GGUF_ERR_JSON, base + je.offset, "%s: %s (%s)", what, reason, m);
	return gg_fail(err, GGUF_ERR_JSON, base + je.offset, "%s: %s", what, reason);
}

char *gg_json_dup(const struct ob_json *v, size_t *len)
{
	if (!v || v->type != OB_JSON_STRING)
		return NULL;
	char *s = malloc(v->len + 1);
	if (!s)
		return NULL;
	memcpy(s, v->str, v->len + 1);
	if (len)
		*len = v->len;
	return s;
}

bool gg_json_int(const struct ob_json *v, int64_t lo, int64_t hi, int64_t *out)
{
	int64_t x;
	if (!ob_json_int(v, &x) || x < lo || x > hi)
		return false;
	*out = x;
	return true;
}

uint64_t gg_json_pos(const struct ob_json *v)
{
	return v->offset + (v->type == OB_JSON_STRING);
}
