/* tests/cuda/synth.h — small llama / qwen2 / qwen3 models in memory with the weights in any type the CUDA
 * backend reads (random blocks from tests/cuda/wrand.h), for comparing the CUDA forward pass with the CPU's.
 *
 * Header-only (static functions), tests/cuda only.
 */
#ifndef ORUN_TESTS_CUDA_SYNTH_H
#define ORUN_TESTS_CUDA_SYNTH_H

#include <stdio.h>

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

struct synth_bufs {
	void *p[512];
	int n;
};

static inline int synth_matrix(struct gguf_writer *w, struct synth_bufs *b, const char *name, uint32_t type,
			       int64_t rows, int64_t cols, uint64_t seed)
{
	size_t size = 0;
	uint8_t *d = wr_matrix(type, rows, cols, seed, &size);
	if (!d || b->n == 512)
		return GGUF_ERR_NOMEM;
	b->p[b->n++] = d;
	int64_t ne[2] = {cols, rows};
	return gguf_w_tensor(w, name, type, 2, ne, d, NULL, NULL);
}

/* A vector near `off` (norm weights around 1, biases around 0). */
static inline int synth_vector(struct gguf_writer *w, struct synth_bufs *b, const char *name, int64_t n, float off,
			       float a, uint64_t seed)
{
	float *d = malloc((size_t)n * sizeof *d);
	if (!d || b->n == 512)
		return GGUF_ERR_NOMEM;
	b->p[b->n++] = d;
	uint64_t s = seed;
	for (int64_t i = 0; i < n; i++)
		d[i] = off + a * wr_unif(&s);
	int64_t ne[1] = {n};
	return gguf_w_tensor(w, name, GGUF_TYPE_F32, 1, ne, d, NULL, NULL);
}

/* The model as a GGUF image in a malloc'd buffer (*size), or NULL. */
static inline uint8_t *synth_model(const struct synth_opts *o, size_t *size)
{
	struct gguf_writer *w = gguf_writer_new();
	struct synth_bufs b = {.n = 0};
	char key[128], tn[80];
	int e = w ? GGUF_OK : GGUF_ERR_NOMEM;
	const char *A = o->arch;
	const int64_t hd = o->head_dim, q = (int64_t)o->heads * hd, kv = (int64_t)o->kv_heads * hd;
	const uint32_t et = o->emb_type ? o->emb_type : o->type == GGUF_TYPE_FP8_E4M3_B128 ? GGUF_TYPE_F16 : o->type;
	const uint32_t ot = o->out_type ? o->out_type : o->type;
	uint64_t seed = o->seed * 7919;
#define K(s) (snprintf(key, sizeof key, "%s." s, A), key)
	e = e ? e : gguf_w_str(w, "general.architecture", A);
	e = e ? e : gguf_w_u32(w, K("block_count"), (uint32_t)o->layers);
	e = e ? e : gguf_w_u32(w, K("context_length"), 4096);
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
	e = e ? e : synth_vector(w, &b, "output_norm.weight", o->dim, 1.0f, 0.2f, seed++);
	if (!o->tied)
		e = e ? e : synth_matrix(w, &b, "output.weight", ot, o->vocab, o->dim, seed++);
	for (int l = 0; l < o->layers && e == GGUF_OK; l++) {
#define T(s) (snprintf(tn, sizeof tn, "blk.%d." s, l), tn)
		e = e ? e : synth_vector(w, &b, T("attn_norm.weight"), o->dim, 1.0f, 0.2f, seed++);
		e = e ? e : synth_matrix(w, &b, T("attn_q.weight"), o->type, q, o->dim, seed++);
		e = e ? e : synth_matrix(w, &b, T("attn_k.weight"), o->type, kv, o->dim, seed++);
		e = e ? e : synth_matrix(w, &b, T("attn_v.weight"), o->type, kv, o->dim, seed++);
		e = e ? e : synth_matrix(w, &b, T("attn_output.weight"), o->type, o->dim, q, seed++);
		if (strcmp(A, "qwen2") == 0) {
			e = e ? e : synth_vector(w, &b, T("attn_q.bias"), q, 0.0f, 0.1f, seed++);
			e = e ? e : synth_vector(w, &b, T("attn_k.bias"), kv, 0.0f, 0.1f, seed++);
			e = e ? e : synth_vector(w, &b, T("attn_v.bias"), kv, 0.0f, 0.1f, seed++);
		}
		if (strcmp(A, "qwen3") == 0) {
			e = e ? e : synth_vector(w, &b, T("attn_q_norm.weight"), hd, 1.0f, 0.2f, seed++);
			e = e ? e : synth_vector(w, &b, T("attn_k_norm.weight"), hd, 1.0f, 0.2f, seed++);
		}
		e = e ? e : synth_vector(w, &b, T("ffn_norm.weight"), o->dim, 1.0f, 0.2f, seed++);
		e = e ? e : synth_matrix(w, &b, T("ffn_gate.weight"), o->type, o->ff, o->dim, seed++);
		e = e ? e : synth_matrix(w, &b, T("ffn_up.weight"), o->type, o->ff, o->dim, seed++);
		e = e ? e : synth_matrix(w, &b, T("ffn_down.weight"), o->type, o->dim, o->ff, seed++);
#undef T
	}
	uint8_t *out = NULL;
	if (e == GGUF_OK && gguf_writer_write_mem(w, &out, size, NULL) != GGUF_OK)
		out = NULL;
	if (e != GGUF_OK)
		fprintf(stderr, "synth_model: writer error %s\n", gguf_strerror(e));
	for (int i = 0; i < b.n; i++)
		free(b.p[i]);
	gguf_writer_free(w);
	return out;
}

#endif
