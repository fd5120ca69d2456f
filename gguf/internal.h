/* gguf/internal.h — helpers shared by the gguf/ sources and not part of the public API: explicit
 * little-endian loads and stores, error formatting with escaped quotes, checked arithmetic, and an arena
 * allocator for per-file indexes. Include only from the .c files of gguf/.
 */
#ifndef ORUN_GGUF_INTERNAL_H
#define ORUN_GGUF_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gguf/gguf.h"

static inline uint16_t gg_ld16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t gg_ld32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t gg_ld64(const uint8_t *p) { return (uint64_t)gg_ld32(p) | ((uint64_t)gg_ld32(p + 4) << 32); }
static inline float gg_ldf32(const uint8_t *p)
{
	uint32_t u = gg_ld32(p);
	float f;
	memcpy(&f, &u, 4);
	return f;
}
static inline double gg_ldf64(const uint8_t *p)
{
	uint64_t u = gg_ld64(p);
	double d;
	memcpy(&d, &u, 8);
	return d;
}
static inline void gg_st16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void gg_st32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static inline void gg_st64(uint8_t *p, uint64_t v) { gg_st32(p, (uint32_t)v); gg_st32(p + 4, (uint32_t)(v >> 32)); }
static inline void gg_stf32(uint8_t *p, float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	gg_st32(p, u);
}

/* a + b and a * b on u64 with overflow detection: return 1 on overflow. */
static inline int gg_add_ovf(uint64_t a, uint64_t b, uint64_t *r) { return __builtin_add_overflow(a, b, r); }
static inline int gg_mul_ovf(uint64_t a, uint64_t b, uint64_t *r) { return __builtin_mul_overflow(a, b, r); }

/* Round v up to a multiple of the power of two `align`; returns 1 on overflow. */
static inline int gg_align_up(uint64_t v, uint64_t align, uint64_t *r)
{
	if (gg_add_ovf(v, align - 1, r))
		return 1;
	*r &= ~(align - 1);
	return 0;
}

/* Fill *err (may be NULL) and return code. */
int gg_fail(struct gguf_error *err, int code, uint64_t offset, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Write a printable, quoted-safe rendering of (s, n) into buf (cap bytes): printable ASCII kept, backslash
 * and quote escaped, other bytes as \xNN; cut with "..." past max_shown input bytes. Returns buf. */
char *gg_escape(char *buf, size_t cap, const void *s, size_t n, size_t max_shown);

/* Arena: many small allocations freed together. Allocation failure returns NULL. */
struct gg_arena {
	struct gg_chunk *head;
	size_t chunk; /* bytes per chunk (0: 256 KiB); small inputs set it lower so parsing them stays cheap */
};
void *gg_arena_alloc(struct gg_arena *a, size_t n);
void gg_arena_free(struct gg_arena *a);

/* Read a whole (small) file into a malloc'ed NUL-terminated buffer of *len bytes; NULL with *err (GGUF_ERR_IO,
 * GGUF_ERR_FORMAT when larger than max, GGUF_ERR_NOMEM). Defined in safetensors.c. */
char *gg_read_file(const char *path, size_t max, size_t *len, struct gguf_error *err);

/* ------------------------------------------------------------------ JSON (base/json.h) */

struct ob_json;
struct ob_json_doc;

#define GG_JSON_MAX_BYTES (256u << 20) /* largest JSON file read (tokenizer.json, the shard index) */

/* Parse (s, n), a JSON document from `what` ("header JSON", "config.json"...) that starts at byte `base` of
 * its file. Returns 0 with *doc, or GGUF_ERR_JSON with *err: "<what>: <reason>" at base + the error offset,
 * the reason in gguf's words ("empty JSON document", "trailing characters after the JSON value", "object key
 * without value", "unexpected end of the JSON document") followed by Go's text where it says more. */
int gg_json_parse(const char *what, const char *s, size_t n, uint64_t base, struct ob_json_doc **doc,
		  struct gguf_error *err);
/* A malloc'ed NUL-terminated copy of a string value (*len bytes when len is not NULL; may hold NULs), or
 * NULL when v is NULL, not a string, or memory ran out. */
char *gg_json_dup(const struct ob_json *v, size_t *len);
/* An integer literal in [lo, hi]: true and *out, else false (v may be NULL). */
bool gg_json_int(const struct ob_json *v, int64_t lo, int64_t hi, int64_t *out);
/* Byte offset of v in its document as gguf reports it: for a string, its first byte after the quote. */
uint64_t gg_json_pos(const struct ob_json *v);

/* An open-addressing table of uint32_t slots (0 = empty) for n entries, zeroed, in the arena: a power of two
 * at least 2n and 16 slots; *mask = slots - 1. NULL when the arena is out of memory. */
uint32_t *gg_hash_table(struct gg_arena *a, uint64_t n, uint64_t *mask);

/* Hash of a byte string (FNV-1a 64). */
uint64_t gg_hash(const void *p, size_t n);

#endif
