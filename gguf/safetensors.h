/* gguf/safetensors.h — read safetensors files and Hugging Face checkpoint directories, and import a Qwen3 /
 * Qwen2 / Llama checkpoint into a GGUF with llama.cpp's metadata keys and tensor names.
 *
 * A safetensors file is an 8-byte little-endian header length, a JSON header naming each tensor's dtype,
 * shape and [begin, end) byte range in the data that follows, then the data. The reader validates the
 * header as strictly as the GGUF reader: sizes against the file, dtypes, shapes, exact byte counts, ranges
 * that tile the data without gaps or overlap, duplicate names. Tensors are borrowed views into the mapping.
 */
#ifndef ORUN_GGUF_SAFETENSORS_H
#define ORUN_GGUF_SAFETENSORS_H

#include "gguf/gguf.h"

#define GGUF_ST_MAX_HEADER (100u << 20) /* bytes of JSON header (the format's own limit is 100 MB) */
#define GGUF_ST_MAX_DIMS 8
#define GGUF_ST_MAX_TENSORS (1u << 20)
#define GGUF_ST_MAX_NAME 1024u          /* bytes in a tensor name */
#define GGUF_ST_MAX_SHARDS 4096u

enum gguf_st_dtype {
	GGUF_ST_BOOL, GGUF_ST_U8, GGUF_ST_I8, GGUF_ST_I16, GGUF_ST_U16, GGUF_ST_F16, GGUF_ST_BF16, GGUF_ST_I32,
	GGUF_ST_U32, GGUF_ST_F32, GGUF_ST_F64, GGUF_ST_I64, GGUF_ST_U64, GGUF_ST_F8_E4M3, GGUF_ST_F8_E5M2,
	GGUF_ST__COUNT
};

/* "F32", "BF16", "F8_E4M3" ... ("?" when out of range), and the element size in bytes (0 when unknown). */
const char *gguf_st_dtype_name(uint32_t dtype);
size_t gguf_st_dtype_size(uint32_t dtype);

struct gguf_st_tensor {
	const char *name;       /* NUL-terminated, owned by the file */
	uint32_t dtype;         /* enum gguf_st_dtype */
	uint32_t n_dims;        /* 0..GGUF_ST_MAX_DIMS */
	int64_t shape[GGUF_ST_MAX_DIMS]; /* PyTorch order: shape[n_dims-1] varies fastest (row-major) */
	uint64_t n_elements;
	uint64_t n_bytes;
	uint64_t offset;        /* absolute file offset of the data */
	const void *data;       /* inside the mapping */
};

struct gguf_st_file;

/* Open (mmap, read-only) or parse a buffer (kept alive by the caller). NULL with *err on failure: codes
 * GGUF_ERR_IO, GGUF_ERR_NOMEM, GGUF_ERR_TRUNCATED (shorter than 8 bytes or than the header length says),
 * GGUF_ERR_COUNT (header length above GGUF_ST_MAX_HEADER), GGUF_ERR_JSON (malformed header JSON),
 * GGUF_ERR_FORMAT (not an object, bad entry, unknown dtype, negative or overflowing shape, byte count not
 * matching the shape, ranges outside the data, overlapping or leaving gaps), GGUF_ERR_TENSOR_DUP. */
struct gguf_st_file *gguf_st_open(const char *path, struct gguf_error *err) GGUF_WUR;
struct gguf_st_file *gguf_st_parse(const void *data, size_t size, struct gguf_error *err) GGUF_WUR;
void gguf_st_close(struct gguf_st_file *f); /* accepts NULL */

uint64_t gguf_st_count(const struct gguf_st_file *f);
const struct gguf_st_tensor *gguf_st_at(const struct gguf_st_file *f, uint64_t i); /* file's JSON order */
const struct gguf_st_tensor *gguf_st_find(const struct gguf_st_file *f, const char *name);
/* A string value of the header's "__metadata__" object, NUL-terminated, or NULL. */
const char *gguf_st_meta(const struct gguf_st_file *f, const char *key);

/* A checkpoint directory: model.safetensors, or model.safetensors.index.json with its shards (every entry
 * of weight_map must name a plain file in the directory that holds the tensor; no tensor may appear in two
 * shards). Errors as gguf_st_open plus GGUF_ERR_FORMAT for index problems (message names the file). */
struct gguf_st_model;
struct gguf_st_model *gguf_st_model_open(const char *dir, struct gguf_error *err) GGUF_WUR;
void gguf_st_model_close(struct gguf_st_model *m);
uint64_t gguf_st_model_count(const struct gguf_st_model *m);
const struct gguf_st_tensor *gguf_st_model_at(const struct gguf_st_model *m, uint64_t i);
const struct gguf_st_tensor *gguf_st_model_find(const struct gguf_st_model *m, const char *name);

/* Read one element of a float tensor (F32, F16, BF16, F64, F8_E4M3) as f32; i < n_elements. */
float gguf_st_get_f32(const struct gguf_st_tensor *t, uint64_t i);

/* ------------------------------------------------------------------------------------------------------
 * Import a Hugging Face checkpoint directory into GGUF
 */
struct gguf_import_opts {
	const char *name;  /* general.name (default: config.json "_name_or_path" or the directory's name) */
	/* progress: called after each tensor with (done, total); may be NULL; a non-zero return stops the
	 * import with GGUF_ERR_CANCELLED (no output left) */
	int (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *progress_ctx;
};

/* Convert dir (config.json, tokenizer.json, tokenizer_config.json, safetensors shards) of a
 * Qwen3ForCausalLM, Qwen2ForCausalLM or LlamaForCausalLM model into the GGUF file out_path, as llama.cpp's
 * convert_hf_to_gguf.py names things: <arch>.* hyperparameters, token_embd / blk.N.* / output tensor
 * names, tokenizer.ggml.* (gpt2 BPE vocabulary, token types, merges, special token ids, add_bos/add_eos,
 * pre-tokenizer kind) and tokenizer.chat_template. Matrices keep their dtype (F32, F16, BF16); FP8 E4M3
 * weights with a weight_scale_inv tile grid become GGUF_TYPE_FP8_E4M3_B128; 1-D tensors become F32. Llama's
 * q/k projections are permuted for llama.cpp's RoPE like convert_hf_to_gguf.py does. The output is written
 * atomically (see gguf_writer_write_file); opts may be NULL. Errors: GGUF_ERR_IO, GGUF_ERR_JSON,
 * GGUF_ERR_FORMAT (missing/inconsistent config or tensors; the message names the file or tensor),
 * GGUF_ERR_UNSUPPORTED (architecture, tokenizer or dtype not handled), GGUF_ERR_NOMEM. */
int gguf_import_safetensors(const char *dir, const char *out_path, const struct gguf_import_opts *opts,
			    struct gguf_error *err) GGUF_WUR;

#endif
