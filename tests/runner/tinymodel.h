/* tests/runner/tinymodel.h — build tiny llama / qwen2 / qwen3 GGUF files in memory for the runner tests,
 * with seeded random F32 (or F16) weights and optional defects (a missing tensor, a wrong shape, a wrong
 * type, a bad hyperparameter) so that each loader check has a hand-made bad input.
 *
 * Header-only (static functions) because only tests/runner uses it.
 */
#ifndef ORUN_TESTS_RUNNER_TINYMODEL_H
#define ORUN_TESTS_RUNNER_TINYMODEL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/quantize.h"
#include "gguf/writer.h"

struct tiny_opts {
	const char *arch;      /* written as general.architecture */
	int layers, dim, heads, kv_heads, ff, vocab;
	int n_tokens;          /* tokenizer.ggml.tokens entries: 0 = vocab, -1 = no tokenizer */
	uint32_t mat_type;     /* GGUF_TYPE_F32 (default), F16, Q4_1 or a type gguf_quantize_row writes, for the matrices */
	bool tied;
	bool no_bias;          /* qwen2 without attn_*.bias */
	const char *skip;      /* tensor left out */
	const char *bad_shape; /* tensor whose last dimension is off by 32 */
	const char *bad_type;  /* tensor stored as I32 instead */
	const char *extra;     /* an additional 1-D tensor of `dim` values with this name */
	bool no_head_count;
	int experts;           /* <arch>.expert_count */
	const char *rope_scaling; /* rope.scaling.type */
	float rope_factor;
	int rope_orig_ctx;
	int ctx;
	float weight_scale;    /* matrices uniform in +-weight_scale/sqrt(cols) (default 1.7) */
	uint64_t seed;
};

static void tiny_defaults(struct tiny_opts *o, const char *arch)
{
	memset(o, 0, sizeof *o);
	o->arch = arch;
	o->layers = 2;
	o->dim = 64;
	o->heads = 4;
	o->kv_heads = 2;
	o->ff = 96;
	o->vocab = 128;
	o->mat_type = GGUF_TYPE_F32;
	o->ctx = 256;
	o->seed = 1;
}

struct tiny_buf {
	void *p[512];
	int n;
};

static uint64_t tiny_rng(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Q4_1 for the tests (gguf_quantize_row does not write it): d = (max - min) / 15, m = min, q = round((x - m) / d). */
static void tiny_q4_1_row(const float *x, uint8_t *dst, int64_t n)
{
	for (int64_t b = 0; b < n / 32; b++, x += 32, dst += 20) {
		float lo = x[0], hi = x[0];
		for (int i = 1; i < 32; i++) {
			lo = x[i] < lo ? x[i] : lo;
			hi = x[i] > hi ? x[i] : hi;
		}
		const float d = (hi - lo) / 15.0f, id = d > 0 ? 1.0f / d : 0.0f;
		const uint16_t hd = gguf_f32_to_f16(d), hm = gguf_f32_to_f16(lo);
		memcpy(dst, &hd, 2);
		memcpy(dst + 2, &hm, 2);
		for (int i = 0; i < 16; i++) {
			int a = (int)lrintf((x[i] - lo) * id), c = (int)lrintf((x[i + 16] - lo) * id);
			a = a < 0 ? 0 : a > 15 ? 15 : a;
			c = c < 0 ? 0 : c > 15 ? 15 : c;
			dst[4 + i] = (uint8_t)(a | c << 4);
		}
	}
}

static int tiny_tensor(struct gguf_writer *w, struct tiny_buf *bufs, const struct tiny_opts *o, const char *name,
		       int64_t ne0, int64_t ne1, int kind /* 0 matrix, 1 norm, 2 bias, 3 embedding */)
{
	if (o->skip && strcmp(o->skip, name) == 0)
		return GGUF_OK;
	uint32_t type = kind == 0 || kind == 3 ? o->mat_type : GGUF_TYPE_F32;
	if (o->bad_shape && strcmp(o->bad_shape, name) == 0) {
		if (ne1 > 1)
			ne1 += 32;
		else
			ne0 += 32;
	}
	if (o->bad_type && strcmp(o->bad_type, name) == 0)
		type = GGUF_TYPE_I32;
	int64_t n = ne0 * ne1;
	uint64_t s = o->seed * 1000003u;
	for (const char *c = name; *c; c++)
		s = s * 131u + (uint8_t)*c;
	float scale = o->weight_scale > 0 ? o->weight_scale : 1.7f;
	float a = kind == 0 ? scale / sqrtf((float)ne0) : kind == 1 ? 0.2f : kind == 2 ? 0.1f : 1.0f;
	float off = kind == 1 ? 1.0f : 0.0f;
	const bool quant = type != GGUF_TYPE_F16 && type != GGUF_TYPE_F32 && type != GGUF_TYPE_I32;
	size_t bytes = quant ? (size_t)n * 4 + (size_t)gguf_row_size(type, ne0) * (size_t)ne1
			     : (size_t)n * (type == GGUF_TYPE_F16 ? 2 : 4);
	void *data = malloc(bytes);
	if (!data || bufs->n == (int)(sizeof bufs->p / sizeof bufs->p[0]))
		return GGUF_ERR_NOMEM;
	bufs->p[bufs->n++] = data;
	if (quant)
		type = GGUF_TYPE_F32; /* the values first, quantized below */
	for (int64_t i = 0; i < n; i++) {
		float u = (float)(tiny_rng(&s) >> 40) * (1.0f / 16777216.0f);
		float v = off + a * (2.0f * u - 1.0f);
		if (type == GGUF_TYPE_F16)
			((uint16_t *)data)[i] = gguf_f32_to_f16(v);
		else if (type == GGUF_TYPE_I32)
			((int32_t *)data)[i] = (int32_t)(v * 1000);
		else
			((float *)data)[i] = v;
	}
	int64_t ne[2] = {ne0, ne1};
	if (quant) {
		uint8_t *qd = (uint8_t *)data + (size_t)n * 4;
		const size_t rb = (size_t)gguf_row_size(o->mat_type, ne0);
		for (int64_t r = 0; r < ne1; r++) {
			const float *src = (const float *)data + r * ne0;
			if (o->mat_type == GGUF_TYPE_Q4_1) {
				tiny_q4_1_row(src, qd + (size_t)r * rb, ne0);
				continue;
			}
			int qe = gguf_quantize_row(o->mat_type, src, qd + (size_t)r * rb, ne0);
			if (qe != GGUF_OK)
				return qe;
		}
		return gguf_w_tensor(w, name, o->mat_type, ne1 > 1 ? 2 : 1, ne, qd, NULL, NULL);
	}
	return gguf_w_tensor(w, name, type, ne1 > 1 ? 2 : 1, ne, data, NULL, NULL);
}

/* A GGUF image in a malloc'd buffer (*size bytes), or NULL. */
static uint8_t *tiny_model(const struct tiny_opts *o, size_t *size)
{
	struct gguf_writer *w = gguf_writer_new();
	struct tiny_buf bufs = {.n = 0};
	char key[128], tn[64];
	int e = GGUF_OK;
	const char *A = o->arch;
	const int64_t hd = o->dim / o->heads, q = (int64_t)o->heads * hd, kv = (int64_t)o->kv_heads * hd;
#define K(s) (snprintf(key, sizeof key, "%s." s, A), key)
	e = e ? e : gguf_w_str(w, "general.architecture", A);
	e = e ? e : gguf_w_u32(w, K("block_count"), (uint32_t)o->layers);
	e = e ? e : gguf_w_u32(w, K("context_length"), (uint32_t)o->ctx);
	e = e ? e : gguf_w_u32(w, K("embedding_length"), (uint32_t)o->dim);
	e = e ? e : gguf_w_u32(w, K("feed_forward_length"), (uint32_t)o->ff);
	if (!o->no_head_count)
		e = e ? e : gguf_w_u32(w, K("attention.head_count"), (uint32_t)o->heads);
	e = e ? e : gguf_w_u32(w, K("attention.head_count_kv"), (uint32_t)o->kv_heads);
	e = e ? e : gguf_w_f32(w, K("attention.layer_norm_rms_epsilon"), 1e-6f);
	e = e ? e : gguf_w_f32(w, K("rope.freq_base"), 10000.0f);
	if (o->experts)
		e = e ? e : gguf_w_u32(w, K("expert_count"), (uint32_t)o->experts);
	if (o->rope_scaling)
		e = e ? e : gguf_w_str(w, K("rope.scaling.type"), o->rope_scaling);
	if (o->rope_factor > 0)
		e = e ? e : gguf_w_f32(w, K("rope.scaling.factor"), o->rope_factor);
	if (o->rope_orig_ctx > 0)
		e = e ? e : gguf_w_u32(w, K("rope.scaling.original_context_length"), (uint32_t)o->rope_orig_ctx);
#undef K
	int nt = o->n_tokens == 0 ? o->vocab : o->n_tokens;
	if (nt > 0) {
		char **toks = calloc((size_t)nt, sizeof *toks);
		for (int i = 0; i < nt; i++) {
			toks[i] = malloc(16);
			snprintf(toks[i], 16, "t%d", i);
		}
		e = e ? e : gguf_w_str(w, "tokenizer.ggml.model", "gpt2");
		e = e ? e : gguf_w_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)toks, NULL, (uint64_t)nt);
		for (int i = 0; i < nt; i++)
			free(toks[i]);
		free(toks);
	}
	e = e ? e : tiny_tensor(w, &bufs, o, "token_embd.weight", o->dim, o->vocab, 3);
	e = e ? e : tiny_tensor(w, &bufs, o, "output_norm.weight", o->dim, 1, 1);
	if (o->extra)
		e = e ? e : tiny_tensor(w, &bufs, o, o->extra, o->dim, 1, 2);
	if (!o->tied)
		e = e ? e : tiny_tensor(w, &bufs, o, "output.weight", o->dim, o->vocab, 0);
	for (int l = 0; l < o->layers && e == GGUF_OK; l++) {
#define T(s) (snprintf(tn, sizeof tn, "blk.%d." s, l), tn)
		e = e ? e : tiny_tensor(w, &bufs, o, T("attn_norm.weight"), o->dim, 1, 1);
		e = e ? e : tiny_tensor(w, &bufs, o, T("attn_q.weight"), o->dim, q, 0);
		e = e ? e : tiny_tensor(w, &bufs, o, T("attn_k.weight"), o->dim, kv, 0);
		e = e ? e : tiny_tensor(w, &bufs, o, T("attn_v.weight"), o->dim, kv, 0);
		e = e ? e : tiny_tensor(w, &bufs, o, T("attn_output.weight"), q, o->dim, 0);
		if (strcmp(A, "qwen2") == 0 && !o->no_bias) {
			e = e ? e : tiny_tensor(w, &bufs, o, T("attn_q.bias"), q, 1, 2);
			e = e ? e : tiny_tensor(w, &bufs, o, T("attn_k.bias"), kv, 1, 2);
			e = e ? e : tiny_tensor(w, &bufs, o, T("attn_v.bias"), kv, 1, 2);
		}
		if (strcmp(A, "qwen3") == 0) {
			e = e ? e : tiny_tensor(w, &bufs, o, T("attn_q_norm.weight"), hd, 1, 1);
			e = e ? e : tiny_tensor(w, &bufs, o, T("attn_k_norm.weight"), hd, 1, 1);
		}
		e = e ? e : tiny_tensor(w, &bufs, o, T("ffn_norm.weight"), o->dim, 1, 1);
		e = e ? e : tiny_tensor(w, &bufs, o, T("ffn_gate.weight"), o->dim, o->ff, 0);
		e = e ? e : tiny_tensor(w, &bufs, o, T("ffn_up.weight"), o->dim, o->ff, 0);
		e = e ? e : tiny_tensor(w, &bufs, o, T("ffn_down.weight"), o->ff, o->dim, 0);
#undef T
	}
	uint8_t *out = NULL;
	if (e == GGUF_OK && gguf_writer_write_mem(w, &out, size, NULL) != GGUF_OK)
		out = NULL;
	if (e != GGUF_OK)
		fprintf(stderr, "tiny_model: writer error %s\n", gguf_strerror(e));
	for (int i = 0; i < bufs.n; i++)
		free(bufs.p[i]);
	gguf_writer_free(w);
	return out;
}

#endif
