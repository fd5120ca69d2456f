/* gguf/quantize.h — quantize f32 rows to Q8_0, Q5_0, Q4_K and Q6_K, and whole GGUF files to llama.cpp's
 * Q8_0 or Q4_K_M mixtures (the `create --quantize` path). Q8_0 and Q5_0 are bit-identical to llama.cpp's
 * reference quantizers; Q4_K and Q6_K are orun's own least-squares search (same block formats, RMS error at
 * least as good as llama.cpp's on the test models: tests/gguf/test_quantize.c).
 */
#ifndef ORUN_GGUF_QUANTIZE_H
#define ORUN_GGUF_QUANTIZE_H

#include "gguf/gguf.h"

/* Quantize n f32 values (n a multiple of the type's block size) into dst (gguf_row_size(type, n) bytes).
 * type: GGUF_TYPE_Q8_0, GGUF_TYPE_Q5_0, GGUF_TYPE_Q4_K, GGUF_TYPE_Q6_K, GGUF_TYPE_F16, GGUF_TYPE_BF16,
 * GGUF_TYPE_F32. Returns GGUF_OK, GGUF_ERR_UNSUPPORTED or GGUF_ERR_INVALID_ARG. Thread-safe. */
int gguf_quantize_row(uint32_t type, const float *src, void *dst, int64_t n) GGUF_WUR;

/* The mixtures `orun create --quantize` accepts (case-insensitive names "q8_0", "q4_K_M"). */
enum gguf_qmix {
	GGUF_QMIX_Q8_0 = 7,    /* llama.cpp LLAMA_FTYPE_MOSTLY_Q8_0 (also written as general.file_type) */
	GGUF_QMIX_Q4_K_M = 15, /* LLAMA_FTYPE_MOSTLY_Q4_K_M */
};

/* Parse a mixture name; GGUF_OK or GGUF_ERR_NOT_FOUND. */
int gguf_qmix_from_name(const char *name, enum gguf_qmix *mix) GGUF_WUR;

/* The type llama.cpp's llama-quantize picks for tensor t of file f in mixture mix (its
 * llama_tensor_get_type rules for llama / qwen2 / qwen3-style models: 1-D tensors and norms keep their type;
 * Q4_K_M gives output.weight (or tied token_embd.weight) Q6_K, attn_v.weight and ffn_down.weight Q6_K in the
 * "more bits" layers (counted in llama-quantize's order: by layer number, then name), Q4_K elsewhere; rows
 * not a multiple of 256 fall back to Q5_0 / Q8_0). i is the tensor's index in f. */
uint32_t gguf_qmix_tensor_type(const struct gguf_file *f, uint64_t i, enum gguf_qmix mix);

/* progress(ctx, done, total) after each tensor, and progress(ctx, 0, 0) every few rows inside a tensor (a poll
 * that reports nothing); may be NULL. A non-zero return stops the job: it fails with GGUF_ERR_CANCELLED and
 * leaves no output (the server cancels a create whose client left, or a create when it stops, this way). */
typedef int (*gguf_progress_fn)(void *ctx, uint64_t done, uint64_t total);

/* Quantize the GGUF at in_path into out_path (written atomically): every pair copied with general.file_type
 * set to the mixture and general.quantization_version 2, each tensor converted to
 * gguf_qmix_tensor_type(). Source tensors must be F32, F16, BF16 or FP8 (GGUF_ERR_UNSUPPORTED for already
 * quantized tensors that would change type). Uses one thread per online CPU (up to 64) for the rows of each
 * tensor; progress is called from the calling thread. Errors: those of gguf_open and gguf_writer_write_file. */
int gguf_quantize_file(const char *in_path, const char *out_path, enum gguf_qmix mix, gguf_progress_fn progress,
		       void *progress_ctx, struct gguf_error *err) GGUF_WUR;

#endif
