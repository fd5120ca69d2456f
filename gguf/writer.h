/* gguf/writer.h — build a GGUF file (v3, little-endian): metadata in insertion order, tensor directory, and
 * the data section with every tensor aligned. Used by the importer, the quantizer, tools and tests.
 *
 * Metadata values are copied when set; tensor data is either borrowed (pointer valid until the write
 * returns), produced by a callback at write time (so a multi-GB file never needs all of its data in
 * memory), or all zeros (written as a hole, giving sparse files). Nothing is written until
 * gguf_writer_write_file / gguf_writer_write_mem.
 */
#ifndef ORUN_GGUF_WRITER_H
#define ORUN_GGUF_WRITER_H

#include "gguf/gguf.h"

struct gguf_writer;

/* Fills dst (nbytes, the tensor's exact size) with the tensor's data; returns 0, or a GGUF_ERR_* code that
 * aborts the write (the callback may fill err with details). */
typedef int (*gguf_fill_fn)(void *ctx, const struct gguf_tensor *t, void *dst, uint64_t nbytes,
			    struct gguf_error *err);

/* A new empty writer (alignment GGUF_DEFAULT_ALIGNMENT), or NULL when out of memory. */
struct gguf_writer *gguf_writer_new(void) GGUF_WUR;
/* Accepts NULL. */
void gguf_writer_free(struct gguf_writer *w);

/* Every setter returns GGUF_OK, GGUF_ERR_NOMEM, GGUF_ERR_KEY_EMPTY / GGUF_ERR_KEY_INVALID (key "" or too long
 * or containing NUL), GGUF_ERR_KEY_DUP (key already set: use gguf_writer_remove first to replace) or
 * GGUF_ERR_INVALID_ARG. Keys are NUL-terminated C strings. */
int gguf_w_u8(struct gguf_writer *w, const char *key, uint8_t v) GGUF_WUR;
int gguf_w_i8(struct gguf_writer *w, const char *key, int8_t v) GGUF_WUR;
int gguf_w_u16(struct gguf_writer *w, const char *key, uint16_t v) GGUF_WUR;
int gguf_w_i16(struct gguf_writer *w, const char *key, int16_t v) GGUF_WUR;
int gguf_w_u32(struct gguf_writer *w, const char *key, uint32_t v) GGUF_WUR;
int gguf_w_i32(struct gguf_writer *w, const char *key, int32_t v) GGUF_WUR;
int gguf_w_u64(struct gguf_writer *w, const char *key, uint64_t v) GGUF_WUR;
int gguf_w_i64(struct gguf_writer *w, const char *key, int64_t v) GGUF_WUR;
int gguf_w_f32(struct gguf_writer *w, const char *key, float v) GGUF_WUR;
int gguf_w_f64(struct gguf_writer *w, const char *key, double v) GGUF_WUR;
int gguf_w_bool(struct gguf_writer *w, const char *key, bool v) GGUF_WUR;
int gguf_w_str(struct gguf_writer *w, const char *key, const char *v) GGUF_WUR;
int gguf_w_strn(struct gguf_writer *w, const char *key, const char *v, uint64_t len) GGUF_WUR;
/* An array of n fixed-size elements (elem_type u8..f64 or bool), given as a native C array of that type
 * (uint8_t, int16_t, float, bool ...; bools are written as 0/1). */
int gguf_w_arr(struct gguf_writer *w, const char *key, uint32_t elem_type, const void *elems, uint64_t n) GGUF_WUR;
/* An array of n strings; lens may be NULL (then each string is NUL-terminated). */
int gguf_w_arr_str(struct gguf_writer *w, const char *key, const char *const *strs, const uint64_t *lens,
		   uint64_t n) GGUF_WUR;
/* A value already in GGUF encoding (what follows the u32 type field: e.g. for an array the element type,
 * count and elements; nested arrays allowed). It is validated like the reader does; GGUF_ERR_* of the
 * reader on a malformed encoding. */
int gguf_w_raw(struct gguf_writer *w, const char *key, uint32_t vtype, const void *enc, uint64_t n) GGUF_WUR;
/* Copy a pair from an opened file (any type, arrays included). */
int gguf_w_copy_kv(struct gguf_writer *w, const struct gguf_file *src, const struct gguf_kv *kv) GGUF_WUR;
/* Remove a key if present (returns GGUF_OK either way). */
int gguf_writer_remove(struct gguf_writer *w, const char *key);
/* Set the data alignment (a power of two, 1..2^30): also writes general.alignment as a u32 key (replacing
 * any earlier one). Default GGUF_DEFAULT_ALIGNMENT with no key. Setting general.alignment through any other
 * setter (or copying it) sets the alignment the same way; a value that is not a u32 power of two up to
 * 2^30 is refused with GGUF_ERR_ALIGNMENT. */
int gguf_writer_set_alignment(struct gguf_writer *w, uint32_t alignment) GGUF_WUR;

/* Add a tensor (in file order). n_dims 1..4, ne[i] for i < n_dims (the rest are taken as 1). data may be:
 * a pointer to exactly gguf_tensor_nbytes() bytes, borrowed until the write returns; or NULL with fill
 * non-NULL (called once during the write); or NULL with fill NULL for all-zero data (written as a hole).
 * Errors: GGUF_ERR_TENSOR_NAME, GGUF_ERR_TENSOR_DUP, GGUF_ERR_NDIMS, GGUF_ERR_TENSOR_TYPE, GGUF_ERR_DIM,
 * GGUF_ERR_BLOCK, GGUF_ERR_OVERFLOW, GGUF_ERR_NOMEM. */
int gguf_w_tensor(struct gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims, const int64_t *ne,
		  const void *data, gguf_fill_fn fill, void *fill_ctx) GGUF_WUR;

uint64_t gguf_writer_kv_count(const struct gguf_writer *w);
uint64_t gguf_writer_tensor_count(const struct gguf_writer *w);

/* Write the file: to path + ".tmp-XXXXXX" in the same folder, fsync'd, then renamed over path, so a reader
 * never sees a half-written file. Returns GGUF_OK or GGUF_ERR_IO / GGUF_ERR_NOMEM / a fill callback's code,
 * with *err filled (err may be NULL); on failure path is untouched. */
int gguf_writer_write_file(const struct gguf_writer *w, const char *path, struct gguf_error *err) GGUF_WUR;

/* Write into a malloc'ed buffer (*out, *size; caller frees). */
int gguf_writer_write_mem(const struct gguf_writer *w, uint8_t **out, size_t *size, struct gguf_error *err) GGUF_WUR;

#endif
