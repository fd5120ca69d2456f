/* gguf/gguf.h — orun's GGUF library: read and validate GGUF files, typed metadata look-ups, tensor look-up,
 * the tensor type table and reference dequantization to f32.
 *
 * A file is opened read-only (mmap) or parsed from (data, size); opening validates the whole header and
 * tensor directory and touches no tensor data. Everything returned is borrowed from the struct gguf_file and
 * stays valid until gguf_close(). Nothing here prints or exits. The writer is gguf/writer.h, safetensors and
 * the Hugging Face importer gguf/safetensors.h, quantization gguf/quantize.h.
 */
#ifndef ORUN_GGUF_GGUF_H
#define ORUN_GGUF_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define GGUF_WUR __attribute__((warn_unused_result))
#else
#define GGUF_WUR
#endif

/* ------------------------------------------------------------------------------------------------------
 * Limits (named so that error messages and tests can quote them)
 */
#define GGUF_MAGIC 0x46554747u           /* "GGUF" read as a little-endian u32 */
#define GGUF_VERSION_MIN 2u              /* v1 (32-bit counts) is rejected */
#define GGUF_VERSION_MAX 3u
#define GGUF_DEFAULT_ALIGNMENT 32u       /* when general.alignment is absent */
#define GGUF_MAX_ALIGNMENT (1u << 30)    /* largest general.alignment accepted (reader and writer) */
#define GGUF_MAX_DIMS 4                  /* ne[] has this many entries; n_dims <= this */
#define GGUF_MAX_TENSOR_NAME 63u         /* bytes in a tensor name (ggml: GGML_MAX_NAME - 1) */
#define GGUF_MAX_KEY_LEN 65535u          /* bytes in a metadata key */
#define GGUF_MAX_STRING_LEN (1u << 30)   /* bytes in one string value */
#define GGUF_MAX_ARRAY_ELEMS (1u << 30)  /* elements in one array */
#define GGUF_MAX_ARRAY_DEPTH 8u          /* arrays nested inside arrays, outermost is depth 1 */
#define GGUF_MAX_KV (1u << 20)           /* metadata pairs */
#define GGUF_MAX_TENSORS (1u << 20)      /* tensors in one file */

/* ------------------------------------------------------------------------------------------------------
 * Errors
 */
enum gguf_status {
	GGUF_OK = 0,
	GGUF_ERR_IO,            /* open/stat/mmap/read/write of a file failed (message has strerror) */
	GGUF_ERR_NOMEM,         /* an allocation failed */
	GGUF_ERR_TRUNCATED,     /* the data ends inside a field */
	GGUF_ERR_MAGIC,         /* the first four bytes are not "GGUF" */
	GGUF_ERR_VERSION,       /* version outside [GGUF_VERSION_MIN, GGUF_VERSION_MAX] (hint when byte-swapped) */
	GGUF_ERR_COUNT,         /* tensor or key/value count above its cap or above what the bytes left can hold */
	GGUF_ERR_STRING,        /* a string length above GGUF_MAX_STRING_LEN or above the bytes left */
	GGUF_ERR_KEY_EMPTY,     /* a metadata key of length 0 */
	GGUF_ERR_KEY_DUP,       /* the same metadata key twice */
	GGUF_ERR_KEY_INVALID,   /* a key longer than GGUF_MAX_KEY_LEN or containing a NUL byte */
	GGUF_ERR_VALUE_TYPE,    /* a metadata value type (or array element type) outside the known range */
	GGUF_ERR_ARRAY,         /* array count above GGUF_MAX_ARRAY_ELEMS / the bytes left, or nested too deep */
	GGUF_ERR_BOOL,          /* a bool byte other than 0 or 1 */
	GGUF_ERR_ALIGNMENT,     /* general.alignment not a u32, not a power of two, or above GGUF_MAX_ALIGNMENT */
	GGUF_ERR_TENSOR_NAME,   /* a tensor name empty, longer than GGUF_MAX_TENSOR_NAME, or containing NUL */
	GGUF_ERR_TENSOR_DUP,    /* the same tensor name twice */
	GGUF_ERR_NDIMS,         /* n_dims > GGUF_MAX_DIMS */
	GGUF_ERR_DIM,           /* a dimension < 0 (read as int64) */
	GGUF_ERR_OVERFLOW,      /* element count or byte size does not fit in int64 / size arithmetic overflows */
	GGUF_ERR_TENSOR_TYPE,   /* a tensor type id this library does not know */
	GGUF_ERR_BLOCK,         /* ne[0] not a multiple of the type's block size */
	GGUF_ERR_OFFSET,        /* a tensor offset differs from the aligned running layout */
	GGUF_ERR_DATA_BOUNDS,   /* tensor data (or the data section) extends past the end of the file */
	GGUF_ERR_NOT_FOUND,     /* look-up: no such key or tensor */
	GGUF_ERR_TYPE_MISMATCH, /* look-up: the value has another type, or does not fit the asked type */
	GGUF_ERR_ARCH,          /* model check: unsupported architecture or a missing/invalid hyperparameter */
	GGUF_ERR_SHAPE,         /* model check: a tensor missing or of the wrong type or shape */
	GGUF_ERR_UNSUPPORTED,   /* an operation this library does not implement for this type */
	GGUF_ERR_INVALID_ARG,   /* a caller-supplied argument out of range (writer, dequantize) */
	GGUF_ERR_JSON,          /* malformed JSON (safetensors header, config.json, tokenizer.json) */
	GGUF_ERR_FORMAT,        /* a safetensors / checkpoint structure error (bad dtype, offsets, shapes) */
	GGUF_ERR_CANCELLED,     /* a progress callback asked a long job (quantize, import) to stop */
	GGUF_ERR__COUNT
};

/* Detail of a failure. offset is the byte offset in the input where the problem was found (0 when it does
 * not apply); msg is a NUL-terminated sentence that quotes the offending values (keys and names escaped). */
struct gguf_error {
	int code;
	uint64_t offset;
	char msg[384];
};

/* A short fixed description of a status code ("truncated file", ...); never NULL. */
const char *gguf_strerror(int code);

/* ------------------------------------------------------------------------------------------------------
 * Tensor types: ggml's numbering, plus orun's own FP8 type (see gguf/README.md)
 */
enum gguf_type {
	GGUF_TYPE_F32 = 0,
	GGUF_TYPE_F16 = 1,
	GGUF_TYPE_Q4_0 = 2,
	GGUF_TYPE_Q4_1 = 3,
	GGUF_TYPE_Q5_0 = 6,
	GGUF_TYPE_Q5_1 = 7,
	GGUF_TYPE_Q8_0 = 8,
	GGUF_TYPE_Q8_1 = 9,
	GGUF_TYPE_Q2_K = 10,
	GGUF_TYPE_Q3_K = 11,
	GGUF_TYPE_Q4_K = 12,
	GGUF_TYPE_Q5_K = 13,
	GGUF_TYPE_Q6_K = 14,
	GGUF_TYPE_Q8_K = 15,
	GGUF_TYPE_IQ2_XXS = 16,
	GGUF_TYPE_IQ2_XS = 17,
	GGUF_TYPE_IQ3_XXS = 18,
	GGUF_TYPE_IQ1_S = 19,
	GGUF_TYPE_IQ4_NL = 20,
	GGUF_TYPE_IQ3_S = 21,
	GGUF_TYPE_IQ2_S = 22,
	GGUF_TYPE_IQ4_XS = 23,
	GGUF_TYPE_I8 = 24,
	GGUF_TYPE_I16 = 25,
	GGUF_TYPE_I32 = 26,
	GGUF_TYPE_I64 = 27,
	GGUF_TYPE_F64 = 28,
	GGUF_TYPE_IQ1_M = 29,
	GGUF_TYPE_BF16 = 30,
	GGUF_TYPE_TQ1_0 = 34,
	GGUF_TYPE_TQ2_0 = 35,
	GGUF_TYPE_MXFP4 = 39,
	GGUF_TYPE_NVFP4 = 40,
	GGUF_TYPE_Q1_0 = 41,
	GGUF_TYPE_Q2_0 = 42,
	/* orun's FP8: E4M3 bytes row-major, followed by one f32 scale per 128x128 tile (gguf/README.md).
	 * The id is far outside ggml's range so other readers reject the file instead of misreading it. */
	GGUF_TYPE_FP8_E4M3_B128 = 0x4F38, /* 20280 */
};

#define GGUF_FP8_TILE 128 /* the FP8 type's scale tile is GGUF_FP8_TILE x GGUF_FP8_TILE elements */

struct gguf_type_info {
	const char *name;     /* "F32", "Q4_K", "FP8_E4M3_B128" ... */
	uint32_t block_elems; /* elements per block (1 for plain types and for FP8) */
	uint32_t block_bytes; /* bytes per block (1 for FP8: the scale grid is extra, see gguf_tensor_nbytes) */
	bool dequant;         /* gguf_dequantize and the row API support it */
};

/* The entry for a tensor type id, or NULL when the id is unknown. Static storage. */
const struct gguf_type_info *gguf_type_get(uint32_t type);

/* The type's name, or "?" when unknown. */
const char *gguf_type_name(uint32_t type);

/* Look a type up by name (case-insensitive, "q4_k", "Q8_0", "bf16", "fp8"); returns 0 and sets *type, or
 * GGUF_ERR_NOT_FOUND. */
int gguf_type_from_name(const char *name, uint32_t *type) GGUF_WUR;

/* Exact data size in bytes of a tensor of this type and shape (ne[0..3], unused dims 1), overflow-checked:
 * (n_elements / block_elems) * block_bytes, and for FP8 ne0*ne1*ne2*ne3 + 4*ceil(ne0/128)*ceil(ne1/128)*ne2*ne3.
 * Returns GGUF_OK, GGUF_ERR_TENSOR_TYPE, GGUF_ERR_DIM (negative), GGUF_ERR_BLOCK (ne[0] not a multiple of the
 * block) or GGUF_ERR_OVERFLOW (more than INT64_MAX elements or bytes). */
int gguf_tensor_nbytes(uint32_t type, const int64_t ne[GGUF_MAX_DIMS], uint64_t *nbytes) GGUF_WUR;

/* Bytes of one row of ne0 elements (ne0 a multiple of the block size) for a blocked type; 0 for FP8 and
 * unknown types (FP8 rows are ne0 bytes plus a shared scale grid: use the tensor API). */
uint64_t gguf_row_size(uint32_t type, int64_t ne0);

/* ------------------------------------------------------------------------------------------------------
 * Metadata values
 */
enum gguf_vtype {
	GGUF_VT_U8 = 0,
	GGUF_VT_I8 = 1,
	GGUF_VT_U16 = 2,
	GGUF_VT_I16 = 3,
	GGUF_VT_U32 = 4,
	GGUF_VT_I32 = 5,
	GGUF_VT_F32 = 6,
	GGUF_VT_BOOL = 7,
	GGUF_VT_STRING = 8,
	GGUF_VT_ARRAY = 9,
	GGUF_VT_U64 = 10,
	GGUF_VT_I64 = 11,
	GGUF_VT_F64 = 12,
	GGUF_VT__COUNT
};

/* "u8", "i32", "f32", "bool", "string", "array" ... ("?" when out of range). */
const char *gguf_vtype_name(uint32_t vtype);

/* A string inside the mapped file: len bytes at ptr, NOT NUL-terminated, not checked for UTF-8. */
struct gguf_str {
	const char *ptr;
	uint64_t len;
};

/* An array value. Elements live in the file: fixed-size elements are little-endian at data + i * size;
 * strings and nested arrays are reached through an index built at open, so every accessor is O(1).
 * Use the gguf_arr_* accessors; the fields after n are private. */
struct gguf_array {
	uint32_t type;       /* element type, enum gguf_vtype */
	uint64_t n;          /* element count */
	const uint8_t *data; /* first element in the file (for fixed-size types) */
	const uint64_t *offs_;          /* private: strings: offset of element i's length field from data */
	const struct gguf_array *sub_;  /* private: arrays of arrays: the n element arrays */
};

/* One metadata value. Integers are widened: the unsigned types in u, the signed ones in i; f32 and f64 in f
 * (an f32 widens exactly, so (float)f gives the stored float back). */
struct gguf_value {
	uint32_t type; /* enum gguf_vtype */
	union {
		uint64_t u;
		int64_t i;
		double f;
		bool b;
		struct gguf_str str;
		struct gguf_array arr;
	} v;
};

struct gguf_kv {
	const char *key;       /* NUL-terminated copy owned by the file (keys never contain NUL) */
	uint64_t key_len;
	uint64_t offset;       /* file offset of the key's length field */
	struct gguf_value val;
	uint64_t val_offset;   /* file offset of the encoded value (after its u32 type field) */
	uint64_t val_size;     /* bytes of the encoded value: [val_offset, val_offset + val_size) */
};

/* Element accessors. They assert on i >= a->n or on the wrong element type (programmer errors); values come
 * from the file, decoded little-endian. gguf_arr_int converts any integer element type and bool to int64
 * (a u64 above INT64_MAX is returned as INT64_MAX); gguf_arr_float any numeric type to double. */
struct gguf_str gguf_arr_str(const struct gguf_array *a, uint64_t i);
const struct gguf_array *gguf_arr_arr(const struct gguf_array *a, uint64_t i);
int64_t gguf_arr_int(const struct gguf_array *a, uint64_t i);
double gguf_arr_float(const struct gguf_array *a, uint64_t i);
float gguf_arr_f32(const struct gguf_array *a, uint64_t i);     /* element type F32 only */
int32_t gguf_arr_i32(const struct gguf_array *a, uint64_t i);   /* element type I32 only */
uint32_t gguf_arr_u32(const struct gguf_array *a, uint64_t i);  /* element type U32 only */
uint64_t gguf_arr_u64(const struct gguf_array *a, uint64_t i);  /* element type U64 only */
uint8_t gguf_arr_u8(const struct gguf_array *a, uint64_t i);    /* element types U8, I8 (raw byte) and BOOL */

/* Size in bytes of a fixed-size value type (u8 1 ... f64 8), 0 for string/array/unknown. */
size_t gguf_vtype_size(uint32_t vtype);

/* ------------------------------------------------------------------------------------------------------
 * Files
 */
struct gguf_file;

struct gguf_tensor {
	const char *name;     /* NUL-terminated copy owned by the file */
	uint32_t type;        /* enum gguf_type */
	uint32_t n_dims;      /* as stored, 0..4 */
	int64_t ne[GGUF_MAX_DIMS]; /* elements per dimension, ggml order: ne[0] is the row length; unused = 1 */
	uint64_t n_elements;  /* ne[0]*ne[1]*ne[2]*ne[3] */
	uint64_t n_bytes;     /* exact data size (gguf_tensor_nbytes), padding excluded */
	uint64_t offset;      /* offset of the data from the start of the data section, as stored */
	uint64_t file_offset; /* absolute offset of the data in the file */
	uint64_t info_offset; /* file offset of this tensor's record in the tensor directory */
	const void *data;     /* n_bytes at file_offset inside the mapping/buffer (never dereferenced at open) */
};

/* Open a GGUF file: map it read-only (MAP_PRIVATE, PROT_READ), validate it, index its metadata. Reads only
 * the header, metadata and tensor directory pages. Returns a complete file or NULL with *err filled (err may
 * be NULL). Free with gguf_close. The file must not be truncated while it is open: reading a mapped page past
 * a new end of file raises SIGBUS (replace model files by renaming, as gguf_writer_write_file does). */
struct gguf_file *gguf_open(const char *path, struct gguf_error *err) GGUF_WUR;

/* As gguf_open, on a buffer the caller keeps alive and unchanged until gguf_close (nothing is copied). */
struct gguf_file *gguf_parse(const void *data, size_t size, struct gguf_error *err) GGUF_WUR;

/* Unmap and free. Accepts NULL. */
void gguf_close(struct gguf_file *f);

uint32_t gguf_version(const struct gguf_file *f);
uint32_t gguf_alignment(const struct gguf_file *f);     /* general.alignment or GGUF_DEFAULT_ALIGNMENT */
uint64_t gguf_data_offset(const struct gguf_file *f);   /* file offset of the (aligned) data section */
uint64_t gguf_file_size(const struct gguf_file *f);
const uint8_t *gguf_file_data(const struct gguf_file *f); /* the whole mapping / buffer */
const char *gguf_path(const struct gguf_file *f);       /* as passed to gguf_open; "" for gguf_parse */

/* Metadata, in file order. gguf_kv_at asserts i < gguf_kv_count. gguf_find_kv is a hash look-up, NULL when
 * absent. */
uint64_t gguf_kv_count(const struct gguf_file *f);
const struct gguf_kv *gguf_kv_at(const struct gguf_file *f, uint64_t i);
const struct gguf_kv *gguf_find_kv(const struct gguf_file *f, const char *key);

/* Typed look-ups. gguf_find_* return GGUF_OK and set *out, GGUF_ERR_NOT_FOUND, or GGUF_ERR_TYPE_MISMATCH
 * when the value's type differs or (for integers) the value does not fit: any integer type is accepted if
 * the value is in range (an i32 key read as u32 must be >= 0), bool only as bool, f32 from f32 or f64.
 * gguf_get_* return the value, or def when the key is absent or mismatched. */
int gguf_find_u32(const struct gguf_file *f, const char *key, uint32_t *out) GGUF_WUR;
int gguf_find_i32(const struct gguf_file *f, const char *key, int32_t *out) GGUF_WUR;
int gguf_find_u64(const struct gguf_file *f, const char *key, uint64_t *out) GGUF_WUR;
int gguf_find_i64(const struct gguf_file *f, const char *key, int64_t *out) GGUF_WUR;
int gguf_find_f32(const struct gguf_file *f, const char *key, float *out) GGUF_WUR;
int gguf_find_bool(const struct gguf_file *f, const char *key, bool *out) GGUF_WUR;
int gguf_find_str(const struct gguf_file *f, const char *key, struct gguf_str *out) GGUF_WUR;
/* Any array; *out borrows from the file. */
int gguf_find_arr(const struct gguf_file *f, const char *key, const struct gguf_array **out) GGUF_WUR;

uint32_t gguf_get_u32(const struct gguf_file *f, const char *key, uint32_t def);
int32_t gguf_get_i32(const struct gguf_file *f, const char *key, int32_t def);
uint64_t gguf_get_u64(const struct gguf_file *f, const char *key, uint64_t def);
float gguf_get_f32(const struct gguf_file *f, const char *key, float def);
bool gguf_get_bool(const struct gguf_file *f, const char *key, bool def);
/* A string value as a view (not NUL-terminated); def when absent/mismatched (def may be {NULL,0}). */
struct gguf_str gguf_get_str(const struct gguf_file *f, const char *key, struct gguf_str def);

/* Copy a string value into buf (cap bytes, NUL-terminated, truncated if needed). Returns GGUF_OK,
 * GGUF_ERR_NOT_FOUND, GGUF_ERR_TYPE_MISMATCH, or GGUF_ERR_INVALID_ARG when it had to truncate (buf then holds
 * the first cap-1 bytes). */
int gguf_get_str_buf(const struct gguf_file *f, const char *key, char *buf, size_t cap) GGUF_WUR;

/* True when s equals the NUL-terminated string z byte for byte. */
bool gguf_str_eq(struct gguf_str s, const char *z);

/* Tensors, in file order. gguf_tensor_at asserts i < gguf_tensor_count; gguf_find_tensor is a hash look-up,
 * NULL when absent. */
uint64_t gguf_tensor_count(const struct gguf_file *f);
const struct gguf_tensor *gguf_tensor_at(const struct gguf_file *f, uint64_t i);
const struct gguf_tensor *gguf_find_tensor(const struct gguf_file *f, const char *name);

/* Let the whole pages of a tensor's data leave this process's memory (madvise DONTNEED on the read-only file
 * mapping: the page cache keeps them, and a later read faults them in again, unchanged); for a caller that has
 * copied the tensor. A no-op for gguf_parse buffers, whose contents DONTNEED would discard. */
void gguf_tensor_release(const struct gguf_file *f, const struct gguf_tensor *t);

/* ------------------------------------------------------------------------------------------------------
 * Dequantization (reference, scalar, bit-exact with ggml / the gguf Python package)
 */

/* Scalar conversions. f16 and bf16 are IEEE half / bfloat16 bit patterns; E4M3 is OCP FP8 E4M3FN (no
 * infinities, 0x7F/0xFF are NaN). gguf_f32_to_f16 and gguf_f32_to_bf16 round to nearest even (NaN stays NaN). */
float gguf_f16_to_f32(uint16_t h);
uint16_t gguf_f32_to_f16(float f);
float gguf_bf16_to_f32(uint16_t h);
uint16_t gguf_f32_to_bf16(float f);
float gguf_e4m3_to_f32(uint8_t b);

/* Dequantize n elements of a blocked type from src (which starts at a block boundary) into dst.
 * n must be a multiple of the type's block size. Returns GGUF_OK, GGUF_ERR_TENSOR_TYPE (unknown id),
 * GGUF_ERR_UNSUPPORTED (no dequantizer, and for FP8, which needs its scale grid: use the tensor API) or
 * GGUF_ERR_INVALID_ARG (n not a multiple of the block). src may be unaligned. */
int gguf_dequantize(uint32_t type, const void *src, float *dst, uint64_t n) GGUF_WUR;

/* Dequantize elements [first, first + n) of one row (row = index over ne[1]*ne[2]*ne[3], 0-based) of a
 * tensor into dst: first and n must be multiples of the block size and first + n <= ne[0]. Works for every
 * type with dequant support, FP8 included (its tile scales applied). Errors as gguf_dequantize, plus
 * GGUF_ERR_INVALID_ARG for a row or range outside the tensor. */
int gguf_tensor_dequantize_row(const struct gguf_tensor *t, int64_t row, int64_t first, int64_t n, float *dst) GGUF_WUR;

/* The whole tensor into dst (n_elements floats). */
int gguf_tensor_dequantize(const struct gguf_tensor *t, float *dst) GGUF_WUR;

/* FP8 layout helpers: the scale grid of an FP8 tensor (n_tiles_row x n_tiles_col per 2-D slice), with
 * n_tiles_col = ceil(ne0/128), n_tiles_row = ceil(ne1/128); the grid of slice k (k over ne2*ne3) starts
 * after all ne0*ne1*ne2*ne3 value bytes, at k * n_tiles_row * n_tiles_col floats (little-endian f32). */
void gguf_fp8_grid(const int64_t ne[GGUF_MAX_DIMS], int64_t *n_tiles_row, int64_t *n_tiles_col);

#endif
