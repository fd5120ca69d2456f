/* runner/cpu/attention.c — attention over cached f16 / q8_0 keys and values for the CPU backend.
 *
 * All query heads that share a KV head are processed together, cells in blocks of ATT_BLOCK converted once
 * to f32, so each cached row is read and converted once per group instead of once per head. The split-K
 * functions let the forward pass divide one long row's cells between threads (decode at long context).
 */
#include "config.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ATT_X86 1
#endif

#include "runner/cpu/attention.h"
#include "runner/cpu/features.h"
#include "runner/cpu/ops.h"

#define ATT_BLOCK 32 /* cells converted to f32 at a time (q8_0 and the portable path) */
#define ATT_PREFETCH 16 /* cells ahead that one-token attention prefetches */

/* f16 keys and values are read in place by AVX2 code that sums in llama.cpp's orders (see dot_decode,
 * dot_prefill, values_f16_dims): orun's attention then equals llama.cpp's standard (non-flash) attention to
 * the bit. */
static bool fast_f16(const struct rn_attn_kv *kv, int d)
{
	return rn_cpu_features()->simd_ops && kv->type == RN_KV_F16 && d % 8 == 0 && kv->stride % 2 == 0;
}

#ifdef ATT_X86
#define TGT __attribute__((target("avx2,fma,f16c")))

#define CVT8(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)))

/* q . k as llama.cpp's one-token matmul computes it (ggml_vec_dot_f16): four 8-lane accumulators over steps of
 * 32, reduced as ((a0 + a2) + (a1 + a3)), then lo + hi and two horizontal adds; leftover elements in double. */
TGT static float dot_decode(const float *q, const uint16_t *k, int d)
{
	__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
	int i = 0;
	for (; i + 32 <= d; i += 32) {
		a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), CVT8(k + i), a0);
		a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), CVT8(k + i + 8), a1);
		a2 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 16), CVT8(k + i + 16), a2);
		a3 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 24), CVT8(k + i + 24), a3);
	}
	__m256 x = _mm256_add_ps(_mm256_add_ps(a0, a2), _mm256_add_ps(a1, a3));
	__m128 t = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
	t = _mm_hadd_ps(t, t);
	double s = _mm_cvtss_f32(_mm_hadd_ps(t, t));
	for (; i < d; i++)
		s += (double)(q[i] * _cvtsh_ss(k[i]));
	return (float)s;
}

/* dot_decode for the 8 cells k, k + ks, ..., k + 7 ks at once, d a multiple of 32, times scale, into s[0..8): each
 * cell's four accumulators and (a0 + a2) + (a1 + a3) as there, then the horizontal part for 8 cells together
 * with the same additions (lo + hi by cross-lane permutes, then two rounds of vhaddps), where one cell alone
 * spends about as many instructions on its reduction as on its 64 products. */
TGT static void dot_decode8(const float *q, const uint16_t *k, size_t ks, int d, float scale, float *s)
{
	__m256 x[8];
	for (int c = 0; c < 8; c++) {
		const uint16_t *kc = k + (size_t)c * ks;
		/* the cache rows come from DRAM (the weights streamed since have evicted them): fetch ATT_PREFETCH
		 * cells ahead. Near the last cell this may name addresses past the cache; a prefetch cannot fault.
		 * Measured (perf, SmolLM2 decode at depth ~400): the scores' share of the time 14 % -> 9 %. */
		for (int i = 0; i < d; i += 32)
			_mm_prefetch((const char *)(kc + (size_t)ATT_PREFETCH * ks + i), _MM_HINT_T0);
		__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
		for (int i = 0; i < d; i += 32) {
			a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), CVT8(kc + i), a0);
			a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), CVT8(kc + i + 8), a1);
			a2 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 16), CVT8(kc + i + 16), a2);
			a3 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 24), CVT8(kc + i + 24), a3);
		}
		x[c] = _mm256_add_ps(_mm256_add_ps(a0, a2), _mm256_add_ps(a1, a3));
	}
	__m256 t[4]; /* t[p] = cell 2p's lo + hi | cell 2p+1's lo + hi */
	for (int p = 0; p < 4; p++)
		t[p] = _mm256_add_ps(_mm256_permute2f128_ps(x[2 * p], x[2 * p + 1], 0x20),
				     _mm256_permute2f128_ps(x[2 * p], x[2 * p + 1], 0x31));
	/* cells 0 2 4 6 | 1 3 5 7 */
	__m256 r = _mm256_hadd_ps(_mm256_hadd_ps(t[0], t[1]), _mm256_hadd_ps(t[2], t[3]));
	r = _mm256_mul_ps(r, _mm256_set1_ps(scale));
	_mm256_storeu_ps(s, _mm256_permutevar8x32_ps(r, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

/* q . k as llama.cpp's batched matmul computes it (llamafile's tinyBLAS, d a multiple of 8): one 8-lane
 * accumulator, reduced as lo + hi, then (0 + 2, 1 + 3), then their sum. */
TGT static float dot_prefill(const float *q, const uint16_t *k, int d)
{
	__m256 a = _mm256_setzero_ps();
	for (int i = 0; i < d; i += 8)
		a = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), CVT8(k + i), a);
	__m128 x = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
	x = _mm_add_ps(x, _mm_movehl_ps(x, x));
	x = _mm_add_ss(x, _mm_movehdup_ps(x));
	return _mm_cvtss_f32(x);
}

TGT static void scores_f16(const struct rn_attn_kv *kv, int c0, int c1, int group, int d, float scale, const float *q,
			   size_t q_stride, float *s, size_t s_stride, bool prefill)
{
	const size_t ks = kv->stride / 2;
	const uint16_t *k = (const uint16_t *)kv->k;
	for (int h = 0; h < group; h++) {
		const float *qh = q + (size_t)h * q_stride;
		float *sh = s + (size_t)h * s_stride;
		if (prefill)
			for (int j = c0; j < c1; j++)
				sh[j] = dot_prefill(qh, k + (size_t)j * ks, d) * scale;
		else {
			int j = c0;
			if (d % 32 == 0)
				for (; j + 8 <= c1; j += 8)
					dot_decode8(qh, k + (size_t)j * ks, ks, d, scale, sh + j);
			for (; j < c1; j++)
				sh[j] = dot_decode(qh, k + (size_t)j * ks, d) * scale;
		}
	}
}

/* out[d0..d1) = sum over cells j < nc of p[j] v_j[d0..d1), each output element summed over the cells in
 * llama.cpp's order (its matmul of the transposed f16 values with the f16 probabilities): one token, the cells
 * fall into 32 classes j % 32 (four 8-lane accumulators over steps of 32 cells) reduced as in dot_decode; a
 * batch, into 8 classes j % 8 reduced as in dot_prefill. acc: 256 floats of scratch. Cells past
 * nc would add p = 0 (masked) in llama.cpp, which changes nothing. */
TGT static void values_f16_dims(const uint16_t *v, size_t vs, int nc, int d0, int d1, const float *p, float *out,
				float *acc, bool prefill)
{
	for (int o = d0; o < d1; o += 8) {
		/* the class sums of this 8-element slice, kept in registers 8 classes at a time (classes j % 32 for
		 * one token: four passes, each over every fourth group of 8 cells) */
		const int passes = prefill ? 1 : 4, period = prefill ? 8 : 32;
		for (int q = 0; q < passes; q++) {
			__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
			int j = 8 * q;
#define ACC(a, l) a = _mm256_fmadd_ps(CVT8(v + (size_t)(j + (l)) * vs + o), _mm256_set1_ps(p[j + (l)]), a)
			for (; j + 8 <= nc; j += period) {
				ACC(a0, 0);
				ACC(a1, 1);
				ACC(a2, 2);
				ACC(a3, 3);
				ACC(a4, 4);
				ACC(a5, 5);
				ACC(a6, 6);
				ACC(a7, 7);
			}
			/* a last partial group (cells past nc are masked, p = 0: nothing to add) */
			if (j < nc) {
				const int r = nc - j;
				ACC(a0, 0);
				if (r > 1)
					ACC(a1, 1);
				if (r > 2)
					ACC(a2, 2);
				if (r > 3)
					ACC(a3, 3);
				if (r > 4)
					ACC(a4, 4);
				if (r > 5)
					ACC(a5, 5);
				if (r > 6)
					ACC(a6, 6);
			}
#undef ACC
			float *c = acc + (size_t)(8 * q) * 8;
			_mm256_storeu_ps(c, a0);
			_mm256_storeu_ps(c + 8, a1);
			_mm256_storeu_ps(c + 16, a2);
			_mm256_storeu_ps(c + 24, a3);
			_mm256_storeu_ps(c + 32, a4);
			_mm256_storeu_ps(c + 40, a5);
			_mm256_storeu_ps(c + 48, a6);
			_mm256_storeu_ps(c + 56, a7);
		}
#define A(c) _mm256_loadu_ps(acc + (size_t)(c) * 8)
		__m256 r;
		if (prefill) {
			__m256 h0 = _mm256_add_ps(A(0), A(4)), h1 = _mm256_add_ps(A(1), A(5));
			__m256 h2 = _mm256_add_ps(A(2), A(6)), h3 = _mm256_add_ps(A(3), A(7));
			r = _mm256_add_ps(_mm256_add_ps(h0, h2), _mm256_add_ps(h1, h3));
		} else {
			__m256 y[8];
			for (int l = 0; l < 8; l++)
				y[l] = _mm256_add_ps(_mm256_add_ps(A(l), A(16 + l)), _mm256_add_ps(A(8 + l), A(24 + l)));
			__m256 t0 = _mm256_add_ps(y[0], y[4]), t1 = _mm256_add_ps(y[1], y[5]);
			__m256 t2 = _mm256_add_ps(y[2], y[6]), t3 = _mm256_add_ps(y[3], y[7]);
			r = _mm256_add_ps(_mm256_add_ps(t0, t1), _mm256_add_ps(t2, t3));
		}
#undef A
		_mm256_storeu_ps(out + o, r);
	}
}

static void values_f16(const struct rn_attn_kv *kv, int nc, int d0, int d1, int group, const float *p, size_t p_stride,
		       float *out, size_t out_stride, float *acc, bool prefill)
{
	const size_t vs = kv->stride / 2;
	const uint16_t *v = (const uint16_t *)kv->v;
	for (int h = 0; h < group; h++)
		values_f16_dims(v, vs, nc, d0, d1, p + (size_t)h * p_stride, out + (size_t)h * out_stride, acc, prefill);
}
#undef CVT8
#endif

size_t rn_attn_block_floats(int head_dim) { return (size_t)ATT_BLOCK * (size_t)head_dim; }

size_t rn_attn_scratch_floats(int group, int head_dim, int n_ctx)
{
	return rn_attn_block_floats(head_dim) + (size_t)group * (size_t)n_ctx;
}

/* Rows [c0, c1) of a K or V head as f32, c1 - c0 <= ATT_BLOCK. */
static void load_block(const uint8_t *base, size_t stride, enum rn_kv_type t, int c0, int c1, int d, float *dst)
{
	for (int j = c0; j < c1; j++, dst += d) {
		const uint8_t *row = base + (size_t)j * stride;
		if (t == RN_KV_Q8_0)
			rn_ops_load_q8_0(dst, row, d);
		else
			rn_ops_load_f16(dst, (const uint16_t *)row, d);
	}
}

void rn_attn_scores(const struct rn_attn_kv *kv, int c0, int c1, int group, int d, float scale, const float *q,
		    size_t q_stride, float *s, size_t s_stride, float *scratch, bool prefill)
{
#ifdef ATT_X86
	if (fast_f16(kv, d)) {
		scores_f16(kv, c0, c1, group, d, scale, q, q_stride, s, s_stride, prefill);
		return;
	}
#endif
	for (int j0 = c0; j0 < c1; j0 += ATT_BLOCK) {
		int j1 = j0 + ATT_BLOCK < c1 ? j0 + ATT_BLOCK : c1;
		load_block(kv->k, kv->stride, kv->type, j0, j1, d, scratch);
		for (int h = 0; h < group; h++) {
			const float *qh = q + (size_t)h * q_stride;
			float *sh = s + (size_t)h * s_stride;
			for (int j = j0; j < j1; j++)
				sh[j] = rn_ops_dot_f32(qh, scratch + (size_t)(j - j0) * (size_t)d, d) * scale;
		}
	}
}

void rn_attn_softmax(float *s, int nc)
{
	/* as llama.cpp: the reciprocal of the double sum, rounded to float, scales every probability */
	float m = rn_ops_max(s, nc);
	double sum = rn_ops_exp_sum(s, nc, m);
	rn_ops_scale_round_f16(s, s, (float)(1.0 / sum), nc);
}

void rn_attn_values(const struct rn_attn_kv *kv, int nc, int d0, int d1, int group, int d, const float *p,
		    size_t p_stride, float *out, size_t out_stride, float *scratch, bool prefill)
{
#ifdef ATT_X86
	if (fast_f16(kv, d) && d0 % 8 == 0 && d1 % 8 == 0) {
		values_f16(kv, nc, d0, d1, group, p, p_stride, out, out_stride, scratch, prefill);
		return;
	}
#endif
	(void)prefill;
	for (int h = 0; h < group; h++)
		memset(out + (size_t)h * out_stride + d0, 0, (size_t)(d1 - d0) * sizeof(float));
	for (int j0 = 0; j0 < nc; j0 += ATT_BLOCK) {
		int j1 = j0 + ATT_BLOCK < nc ? j0 + ATT_BLOCK : nc;
		load_block(kv->v, kv->stride, kv->type, j0, j1, d, scratch);
		for (int h = 0; h < group; h++) {
			const float *ph = p + (size_t)h * p_stride;
			float *oh = out + (size_t)h * out_stride;
			for (int j = j0; j < j1; j++)
				if (ph[j] != 0)
					rn_ops_axpy_f32(oh + d0, ph[j], scratch + (size_t)(j - j0) * (size_t)d + d0, d1 - d0);
		}
	}
}

void rn_attn_group(const struct rn_attn_kv *kv, int nc, int group, int d, float scale, const float *q,
		   size_t q_stride, float *out, size_t out_stride, float *scratch, bool prefill)
{
	float *blk = scratch, *s = scratch + rn_attn_block_floats(d);
	rn_attn_scores(kv, 0, nc, group, d, scale, q, q_stride, s, (size_t)nc, blk, prefill);
	for (int h = 0; h < group; h++)
		rn_attn_softmax(s + (size_t)h * (size_t)nc, nc);
	rn_attn_values(kv, nc, 0, d, group, d, s, (size_t)nc, out, out_stride, blk, prefill);
}
