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
#define ATT_PREFETCH 16 /* cells ahead that the f16 scores prefetch (a multiple of 8) */
/* the prefetched group of 8 then lies in the block being read or the next one (scores_f16) */
_Static_assert(ATT_PREFETCH % 8 == 0 && ATT_PREFETCH < RN_KV_BLOCK, "ATT_PREFETCH: a multiple of 8 below a block");

/* f16 keys and values are read in place by AVX2 code that sums in the order of llama.cpp's batched matmuls (see
 * dot_batch, values_f16_dims): orun's attention of a prompt's tokens then equals llama.cpp's standard
 * (non-flash) attention to the bit. llama.cpp sums a sequence's only token of a batch (a decode step) in another
 * order (ggml_vec_dot_f16: four accumulators over steps of 32, 32 value classes); orun does not follow it there,
 * so that a token's result never depends on what else the batch holds: the same logits whether its prefix was
 * evaluated in one batch, token by token, taken from the prefix cache, or beside other sequences. */
static bool fast_f16(const struct rn_attn_kv *kv, int d)
{
	return rn_cpu_features()->simd_ops && kv->type == RN_KV_F16 && d % 8 == 0 && kv->stride % 2 == 0;
}

/* The first row of the block holding cell j (keys when base is kv->k, values when kv->v). */
static inline const uint8_t *block_of(const struct rn_attn_kv *kv, const uint8_t *base, int j)
{
	return base + (size_t)kv->table[j / RN_KV_BLOCK] * kv->block_bytes;
}

/* The row of cell j. */
static inline const uint8_t *row_of(const struct rn_attn_kv *kv, const uint8_t *base, int j)
{
	return block_of(kv, base, j) + (size_t)(j % RN_KV_BLOCK) * kv->stride;
}

#ifdef ATT_X86
#define TGT __attribute__((target("avx2,fma,f16c")))

#define CVT8(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)))

/* q . k as llama.cpp's batched matmul computes it (llamafile's tinyBLAS, d a multiple of 8): one 8-lane
 * accumulator, reduced as lo + hi, then (0 + 2, 1 + 3), then their sum. */
TGT static float dot_batch(const float *q, const uint16_t *k, int d)
{
	__m256 a = _mm256_setzero_ps();
	for (int i = 0; i < d; i += 8)
		a = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), CVT8(k + i), a);
	__m128 x = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
	x = _mm_add_ps(x, _mm_movehl_ps(x, x));
	x = _mm_add_ss(x, _mm_movehdup_ps(x));
	return _mm_cvtss_f32(x);
}

/* dot_batch for the 8 cells k, k + ks, ..., k + 7 ks at once, times scale, into s[0..8): each cell's accumulator
 * as there (the 8 chains interleaved, one load of q for all), then the horizontal part of the 8 cells together
 * with the same additions: lo + hi by cross-lane permutes, (0 + 2, 1 + 3) by two shuffles and an add, their sum
 * by one vhaddps; one cell alone spends about as many instructions on its reduction as on its products. */
TGT static void dot_batch8(const float *q, const uint16_t *k, size_t ks, int d, float scale, float *s)
{
	/* fully unrolled so that the 8 accumulators live in registers (GCC -O2 keeps x[] on the stack otherwise: a
	 * store and a load per FMA, measured 30-40 % slower attention at depth 2000-4000) */
	__m256 x[8];
#pragma GCC unroll 8
	for (int c = 0; c < 8; c++)
		x[c] = _mm256_setzero_ps();
	for (int i = 0; i < d; i += 8) {
		const __m256 qi = _mm256_loadu_ps(q + i);
#pragma GCC unroll 8
		for (int c = 0; c < 8; c++)
			x[c] = _mm256_fmadd_ps(qi, CVT8(k + (size_t)c * ks + i), x[c]);
	}
	__m256 t[4]; /* t[p] = cell 2p's lo + hi | cell 2p+1's lo + hi */
#pragma GCC unroll 4
	for (int p = 0; p < 4; p++)
		t[p] = _mm256_add_ps(_mm256_permute2f128_ps(x[2 * p], x[2 * p + 1], 0x20),
				     _mm256_permute2f128_ps(x[2 * p], x[2 * p + 1], 0x31));
	/* (0 + 2, 1 + 3) of cells 0 and 2 | 1 and 3, then of cells 4 and 6 | 5 and 7 */
	__m256 w0 = _mm256_add_ps(_mm256_shuffle_ps(t[0], t[1], 0x44), _mm256_shuffle_ps(t[0], t[1], 0xee));
	__m256 w1 = _mm256_add_ps(_mm256_shuffle_ps(t[2], t[3], 0x44), _mm256_shuffle_ps(t[2], t[3], 0xee));
	/* cells 0 2 4 6 | 1 3 5 7 */
	__m256 r = _mm256_mul_ps(_mm256_hadd_ps(w0, w1), _mm256_set1_ps(scale));
	_mm256_storeu_ps(s, _mm256_permutevar8x32_ps(r, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

/* Groups of 8 cells aligned to multiples of 8 (never across a block of RN_KV_BLOCK) take dot_batch8, every head
 * of the group over one group of cells before the next (its keys then stay in L1 for all heads); the others
 * dot_batch. Either way each score is the same sum. */
TGT static void scores_f16(const struct rn_attn_kv *kv, int c0, int c1, int group, int d, float scale, const float *q,
			   size_t q_stride, float *s, size_t s_stride)
{
	const size_t ks = kv->stride / 2;
	for (int j0 = c0; j0 < c1;) {
		const int base = j0 - j0 % RN_KV_BLOCK, end = base + RN_KV_BLOCK < c1 ? base + RN_KV_BLOCK : c1;
		/* cell j of this block at kb + (j - base) ks; the next block's first row at kn */
		const uint16_t *kb = (const uint16_t *)block_of(kv, kv->k, j0);
		const uint16_t *kn = end < c1 ? (const uint16_t *)block_of(kv, kv->k, end) : NULL;
		int j = j0;
		for (; j < end && j % 8 != 0; j++)
			for (int h = 0; h < group; h++)
				s[(size_t)h * s_stride + (size_t)j] =
					dot_batch(q + (size_t)h * q_stride, kb + (size_t)(j - base) * ks, d) * scale;
		for (; j + 8 <= end; j += 8) {
			/* the cache rows come from DRAM (the weights streamed since have evicted them): fetch the group
			 * of cells ATT_PREFETCH ahead, in this block or the next. Near the last cell this may name rows
			 * past those in use; a prefetch cannot fault. */
			const int ahead = j - base + ATT_PREFETCH;
			const uint16_t *pf = ahead < RN_KV_BLOCK ? kb + (size_t)ahead * ks
					     : kn ? kn + (size_t)(ahead - RN_KV_BLOCK) * ks : NULL;
			for (int c = 0; pf && c < 8; c++)
				for (int i = 0; i < d; i += 32)
					_mm_prefetch((const char *)(pf + (size_t)c * ks + i), _MM_HINT_T0);
			for (int h = 0; h < group; h++)
				dot_batch8(q + (size_t)h * q_stride, kb + (size_t)(j - base) * ks, ks, d, scale,
					   s + (size_t)h * s_stride + (size_t)j);
		}
		for (; j < end; j++)
			for (int h = 0; h < group; h++)
				s[(size_t)h * s_stride + (size_t)j] =
					dot_batch(q + (size_t)h * q_stride, kb + (size_t)(j - base) * ks, d) * scale;
		j0 = end;
	}
}

/* out[d0..d1) = sum over cells j < nc of p[j] v_j[d0..d1), each output element summed over the cells in
 * llama.cpp's batched order (its matmul of the transposed f16 values with the f16 probabilities): the cells fall
 * into 8 classes j % 8, one 8-lane accumulator each, reduced as in dot_batch; a block of RN_KV_BLOCK cells holds
 * whole groups of 8, so walking the blocks in order keeps every class's cells in order. Cells past nc would add
 * p = 0 (masked) in llama.cpp, which changes nothing. */
TGT static void values_f16_dims(const struct rn_attn_kv *kv, int nc, int d0, int d1, const float *p, float *out)
{
	const size_t vs = kv->stride / 2;
	for (int o = d0; o < d1; o += 8) {
		__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
		for (int base = 0; base < nc; base += RN_KV_BLOCK) {
			const uint16_t *v = (const uint16_t *)block_of(kv, kv->v, base) + o;
			const float *pb = p + base;
			const int n = nc - base < RN_KV_BLOCK ? nc - base : RN_KV_BLOCK;
			int j = 0;
#define ACC(a, l) a = _mm256_fmadd_ps(CVT8(v + (size_t)(j + (l)) * vs), _mm256_set1_ps(pb[j + (l)]), a)
			for (; j + 8 <= n; j += 8) {
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
			if (j < n) {
				const int r = n - j;
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
		}
		__m256 h0 = _mm256_add_ps(a0, a4), h1 = _mm256_add_ps(a1, a5);
		__m256 h2 = _mm256_add_ps(a2, a6), h3 = _mm256_add_ps(a3, a7);
		_mm256_storeu_ps(out + o, _mm256_add_ps(_mm256_add_ps(h0, h2), _mm256_add_ps(h1, h3)));
	}
}

static void values_f16(const struct rn_attn_kv *kv, int nc, int d0, int d1, int group, const float *p, size_t p_stride,
		       float *out, size_t out_stride)
{
	for (int h = 0; h < group; h++)
		values_f16_dims(kv, nc, d0, d1, p + (size_t)h * p_stride, out + (size_t)h * out_stride);
}
#undef CVT8
#endif

size_t rn_attn_block_floats(int head_dim) { return (size_t)ATT_BLOCK * (size_t)head_dim; }

size_t rn_attn_scratch_floats(int group, int head_dim, int n_ctx)
{
	return rn_attn_block_floats(head_dim) + (size_t)group * (size_t)n_ctx;
}

/* Rows [c0, c1) of a K or V head (base kv->k or kv->v) as f32, c1 - c0 <= ATT_BLOCK. */
static void load_block(const struct rn_attn_kv *kv, const uint8_t *base, int c0, int c1, int d, float *dst)
{
	for (int j = c0; j < c1; j++, dst += d) {
		const uint8_t *row = row_of(kv, base, j);
		if (kv->type == RN_KV_Q8_0)
			rn_ops_load_q8_0(dst, row, d);
		else
			rn_ops_load_f16(dst, (const uint16_t *)row, d);
	}
}

void rn_attn_scores(const struct rn_attn_kv *kv, int c0, int c1, int group, int d, float scale, const float *q,
		    size_t q_stride, float *s, size_t s_stride, float *scratch)
{
#ifdef ATT_X86
	if (fast_f16(kv, d)) {
		scores_f16(kv, c0, c1, group, d, scale, q, q_stride, s, s_stride);
		return;
	}
#endif
	for (int j0 = c0; j0 < c1; j0 += ATT_BLOCK) {
		int j1 = j0 + ATT_BLOCK < c1 ? j0 + ATT_BLOCK : c1;
		load_block(kv, kv->k, j0, j1, d, scratch);
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
		    size_t p_stride, float *out, size_t out_stride, float *scratch)
{
#ifdef ATT_X86
	if (fast_f16(kv, d) && d0 % 8 == 0 && d1 % 8 == 0) {
		values_f16(kv, nc, d0, d1, group, p, p_stride, out, out_stride);
		return;
	}
#endif
	for (int h = 0; h < group; h++)
		memset(out + (size_t)h * out_stride + d0, 0, (size_t)(d1 - d0) * sizeof(float));
	for (int j0 = 0; j0 < nc; j0 += ATT_BLOCK) {
		int j1 = j0 + ATT_BLOCK < nc ? j0 + ATT_BLOCK : nc;
		load_block(kv, kv->v, j0, j1, d, scratch);
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
		   size_t q_stride, float *out, size_t out_stride, float *scratch)
{
	float *blk = scratch, *s = scratch + rn_attn_block_floats(d);
	rn_attn_scores(kv, 0, nc, group, d, scale, q, q_stride, s, (size_t)nc, blk);
	for (int h = 0; h < group; h++)
		rn_attn_softmax(s + (size_t)h * (size_t)nc, nc);
	rn_attn_values(kv, nc, 0, d, group, d, s, (size_t)nc, out, out_stride, blk);
}
