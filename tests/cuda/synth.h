/* tests/cuda/synth.h — llama / qwen2 / qwen3 models in memory with the weights in any type the CUDA backend
 * reads (random blocks from tests/cuda/wrand.h), for comparing the CUDA forward pass with the CPU's: small ones,
 * and Qwen3-14B's real shapes with fewer layers (synth_qwen3_14b). Tensor data is produced while the image is
 * written, so a model costs its own size in memory plus its largest tensor.
 *
 * Header-only (static functions), tests/cuda only.
 */
#ifndef ORUN_TESTS_CUDA_SYNTH_H
#define ORUN_TESTS_CUDA_SYNTH_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/writer.h"
#include "tests/cuda/wrand.h"

struct synth_opts {
	const char *arch;   /* llama, qwen2, qwen3 */
	int layers, dim, heads, kv_heads, head_dim, ff, vocab;
	uint32_t type;      /* layer matrices */
	uint32_t emb_type;  /* token embedding; 0 = type (F16 when type is FP8: the CPU backend refuses FP8 there) */
	uint32_t out_type;  /* output matrix; 0 = type */
	bool tied;
	float rope_base;
	float yarn;         /* > 0: rope.scaling.type yarn with this factor */
	uint64_t seed;
	/* zero = as before these were added */
	bool q4km;          /* Q4_K_M's mix (type Q4_K): output Q6_K, attn_v / ffn_down Q6_K in synth_more_bits layers */
	float qk_norm;      /* > 0: attn_q_norm / attn_k_norm weights around this instead of 1 (sharper attention) */
	float out_norm;     /* > 0: output_norm weights around this instead of 1 (logits spread wider) */
	int ctx;            /* context_length; 0: 4096 */
	bool wide;          /* wr_fill's fast generator (8 random bytes a step) */
};

static inline void synth_defaults(struct synth_opts *o, const char *arch, uint32_t type)
{
	memset(o, 0, sizeof *o);
	o->arch = arch;
	o->layers = 2;
	o->dim = 512;
	o->heads = 10; /* GQA 5:1 and head size 128, as Qwen3-14B */
	o->kv_heads = 2;
	o->head_dim = 128;
	o->ff = 1024;
	o->vocab = 1000;
	o->type = type;
	o->rope_base = 1e6f;
	o->seed = 1;
}

/* A tensor to produce when the file is written (gguf_writer's fill callback), so that building a model needs
 * its own size in memory once plus its largest tensor, not twice its size. */
struct synth_tensor {
	char name[96];
	uint32_t type;
	int64_t rows, cols; /* a vector: rows 1 */
	bool vec;           /* f32 vector near off (norm weights around 1, biases around 0) */
	float off, a;
	uint64_t seed;
};

struct synth_bufs {
	struct synth_tensor *t;
	int n, cap;
	bool wide;
};

static inline int synth_fill(void *ctx, const struct gguf_tensor *gt, void *dst, uint64_t nbytes, struct gguf_error *err)
{
	const struct synth_bufs *b = ctx;
	const struct synth_tensor *t = NULL;
	for (int i = 0; i < b->n && !t; i++)
		if (strcmp(b->t[i].name, gt->name) == 0)
			t = &b->t[i];
	if (!t)
		return GGUF_ERR_INVALID_ARG;
	if (t->vec) {
		float *d = dst;
		uint64_t s = t->seed;
		for (int64_t i = 0; i < t->cols; i++)
			d[i] = t->off + t->a * wr_unif(&s);
		return GGUF_OK;
	}
	if (wr_matrix_bytes(t->type, t->rows, t->cols) != nbytes || wr_fill(t->type, t->rows, t->cols, t->seed, dst, b->wide)) {
		if (err)
			snprintf(err->msg, sizeof err->msg, "synth: cannot fill %s", t->name);
		return GGUF_ERR_INVALID_ARG;
	}
	return GGUF_OK;
}

static inline struct synth_tensor *synth_add(struct synth_bufs *b)
{
	if (b->n == b->cap) {
		int cap = b->cap ? 2 * b->cap : 64;
		struct synth_tensor *t = realloc(b->t, (size_t)cap * sizeof *t);
		if (!t)
			return NULL;
		b->t = t;
		b->cap = cap;
	}
	struct synth_tensor *t = &b->t[b->n++];
	memset(t, 0, sizeof *t);
	return t;
}

static inline int synth_matrix(struct gguf_writer *w, struct synth_bufs *b, const char *name, uint32_t type,
			       int64_t rows, int64_t cols, uint64_t seed)
{
	struct synth_tensor *t = synth_add(b);
	if (!t)
		return GGUF_ERR_NOMEM;
	snprintf(t->name, sizeof t->name, "%s", name);
	t->type = type;
	t->rows = rows;
	t->cols = cols;
	t->seed = seed;
	int64_t ne[2] = {cols, rows};
	return gguf_w_tensor(w, name, type, 2, ne, NULL, synth_fill, b);
}

/* A vector near `off` (norm weights around 1, biases around 0). */
static inline int synth_vector(struct gguf_writer *w, struct synth_bufs *b, const char *name, int64_t n, float off,
			       float a, uint64_t seed)
{
	struct synth_tensor *t = synth_add(b);
	if (!t)
		return GGUF_ERR_NOMEM;
	snprintf(t->name, sizeof t->name, "%s", name);
	t->type = GGUF_TYPE_F32;
	t->rows = 1;
	t->cols = n;
	t->vec = true;
	t->off = off;
	t->a = a;
	t->seed = seed;
	int64_t ne[1] = {n};
	return gguf_w_tensor(w, name, GGUF_TYPE_F32, 1, ne, NULL, synth_fill, b);
}

/* llama.cpp's use_more_bits(): the layers whose attn_v and ffn_down Q4_K_M stores in Q6_K (the first and
 * last eighth and every third one between), as tools/cmd_mkmodel.c. */
static inline bool synth_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

/* The model as a GGUF image in a malloc'd buffer (*size), or NULL. */
static inline uint8_t *synth_model(const struct synth_opts *o, size_t *size)
{
	struct gguf_writer *w = gguf_writer_new();
	struct synth_bufs b = {.wide = o->wide};
	char key[128], tn[80];
	int e = w ? GGUF_OK : GGUF_ERR_NOMEM;
	const char *A = o->arch;
	const int64_t hd = o->head_dim, q = (int64_t)o->heads * hd, kv = (int64_t)o->kv_heads * hd;
	const uint32_t et = o->emb_type ? o->emb_type : o->type == GGUF_TYPE_FP8_E4M3_B128 ? GGUF_TYPE_F16 : o->type;
	const uint32_t ot = o->out_type ? o->out_type : o->q4km ? GGUF_TYPE_Q6_K : o->type;
	const float qkn = o->qk_norm > 0 ? o->qk_norm : 1.0f;
	uint64_t seed = o->seed * 7919;
#define K(s) (snprintf(key, sizeof key, "%s." s, A), key)
	e = e ? e : gguf_w_str(w, "general.architecture", A);
	e = e ? e : gguf_w_u32(w, K("block_count"), (uint32_t)o->layers);
	e = e ? e : gguf_w_u32(w, K("context_length"), o->ctx > 0 ? (uint32_t)o->ctx : 4096);
	e = e ? e : gguf_w_u32(w, K("embedding_length"), (uint32_t)o->dim);
	e = e ? e : gguf_w_u32(w, K("feed_forward_length"), (uint32_t)o->ff);
	e = e ? e : gguf_w_u32(w, K("attention.head_count"), (uint32_t)o->heads);
	e = e ? e : gguf_w_u32(w, K("attention.head_count_kv"), (uint32_t)o->kv_heads);
	e = e ? e : gguf_w_u32(w, K("attention.key_length"), (uint32_t)hd);
	e = e ? e : gguf_w_u32(w, K("attention.value_length"), (uint32_t)hd);
	e = e ? e : gguf_w_f32(w, K("attention.layer_norm_rms_epsilon"), 1e-6f);
	e = e ? e : gguf_w_f32(w, K("rope.freq_base"), o->rope_base);
	if (o->yarn > 0) {
		e = e ? e : gguf_w_str(w, K("rope.scaling.type"), "yarn");
		e = e ? e : gguf_w_f32(w, K("rope.scaling.factor"), o->yarn);
		e = e ? e : gguf_w_u32(w, K("rope.scaling.original_context_length"), 1024);
	}
#undef K
	{
		char **toks = calloc((size_t)o->vocab, sizeof *toks);
		for (int i = 0; toks && i < o->vocab; i++) {
			toks[i] = malloc(16);
			snprintf(toks[i], 16, "t%d", i);
		}
		e = e ? e : gguf_w_str(w, "tokenizer.ggml.model", "gpt2");
		e = e ? e : gguf_w_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)toks, NULL, (uint64_t)o->vocab);
		for (int i = 0; toks && i < o->vocab; i++)
			free(toks[i]);
		free(toks);
	}
	e = e ? e : synth_matrix(w, &b, "token_embd.weight", et, o->vocab, o->dim, seed++);
	const float on = o->out_norm > 0 ? o->out_norm : 1.0f;
	e = e ? e : synth_vector(w, &b, "output_norm.weight", o->dim, on, 0.2f * on, seed++);
	if (!o->tied)
		e = e ? e : synth_matrix(w, &b, "output.weight", ot, o->vocab, o->dim, seed++);
	for (int l = 0; l < o->layers && e == GGUF_OK; l++) {
		const uint32_t mt = o->q4km && synth_more_bits(l, o->layers) ? GGUF_TYPE_Q6_K : o->type;
#define T(s) (snprintf(tn, sizeof tn, "blk.%d." s, l), tn)
		e = e ? e : synth_vector(w, &b, T("attn_norm.weight"), o->dim, 1.0f, 0.2f, seed++);
		e = e ? e : synth_matrix(w, &b, T("attn_q.weight"), o->type, q, o->dim, seed++);
		e = e ? e : synth_matrix(w, &b, T("attn_k.weight"), o->type, kv, o->dim, seed++);
		e = e ? e : synth_matrix(w, &b, T("attn_v.weight"), mt, kv, o->dim, seed++);
		e = e ? e : synth_matrix(w, &b, T("attn_output.weight"), o->type, o->dim, q, seed++);
		if (strcmp(A, "qwen2") == 0) {
			e = e ? e : synth_vector(w, &b, T("attn_q.bias"), q, 0.0f, 0.1f, seed++);
			e = e ? e : synth_vector(w, &b, T("attn_k.bias"), kv, 0.0f, 0.1f, seed++);
			e = e ? e : synth_vector(w, &b, T("attn_v.bias"), kv, 0.0f, 0.1f, seed++);
		}
		if (strcmp(A, "qwen3") == 0) {
			e = e ? e : synth_vector(w, &b, T("attn_q_norm.weight"), hd, qkn, 0.2f * qkn, seed++);
			e = e ? e : synth_vector(w, &b, T("attn_k_norm.weight"), hd, qkn, 0.2f * qkn, seed++);
		}
		e = e ? e : synth_vector(w, &b, T("ffn_norm.weight"), o->dim, 1.0f, 0.2f, seed++);
		e = e ? e : synth_matrix(w, &b, T("ffn_gate.weight"), o->type, o->ff, o->dim, seed++);
		e = e ? e : synth_matrix(w, &b, T("ffn_up.weight"), o->type, o->ff, o->dim, seed++);
		e = e ? e : synth_matrix(w, &b, T("ffn_down.weight"), mt, o->dim, o->ff, seed++);
#undef T
	}
	uint8_t *out = NULL;
	struct gguf_error ge = {0};
	if (e == GGUF_OK && (e = gguf_writer_write_mem(w, &out, size, &ge)) != GGUF_OK)
		out = NULL;
	if (e != GGUF_OK)
		fprintf(stderr, "synth_model: writer error %s %s\n", gguf_strerror(e), ge.msg);
	free(b.t);
	gguf_writer_free(w);
	return out;
}

/* Qwen3-14B's shapes (tools/cmd_mkmodel.c --preset qwen3-14b: 5120 wide, 40/8 heads x 128 with QK-norm, ff
 * 17408, vocab 151936, untied output) with `layers` layers, in the file type `ftype` as orun mkmodel writes it:
 * "Q4_K_M" (Q4_K; Q6_K output and, in llama.cpp's use_more_bits layers, attn_v / ffn_down), "Q8_0", or "FP8"
 * (E4M3 with 128x128 scales; BF16 embedding and output). Returns -1 for another name. */
static inline int synth_qwen3_14b(struct synth_opts *o, const char *ftype, int layers)
{
	if (strcmp(ftype, "Q4_K_M") == 0)
		synth_defaults(o, "qwen3", GGUF_TYPE_Q4_K);
	else if (strcmp(ftype, "Q8_0") == 0)
		synth_defaults(o, "qwen3", GGUF_TYPE_Q8_0);
	else if (strcmp(ftype, "FP8") == 0)
		synth_defaults(o, "qwen3", GGUF_TYPE_FP8_E4M3_B128);
	else
		return -1;
	o->q4km = strcmp(ftype, "Q4_K_M") == 0;
	if (o->type == GGUF_TYPE_FP8_E4M3_B128)
		o->emb_type = o->out_type = GGUF_TYPE_BF16;
	o->layers = layers;
	o->dim = 5120;
	o->heads = 40;
	o->kv_heads = 8;
	o->head_dim = 128;
	o->ff = 17408;
	o->vocab = 151936;
	o->ctx = 40960;
	o->wide = true;
	return 0;
}

#endif
