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
#include "runner/cpu/ops.h"

#define ATT_BLOCK 32 /* cells converted to f32 at a time (q8_0 and the portable path) */

/* f16 keys and values are read in place by AVX2 code: eight cells' dot products accumulate side by side and
 * are reduced together; value rows are accumulated into registers per query head. */
static int att_avx2 = -1;

static bool fast_f16(const struct rn_attn_kv *kv, int d)
{
	if (att_avx2 < 0) {
		int ok = 0;
#ifdef ATT_X86
		__builtin_cpu_init();
		ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
#endif
		const char *isa = getenv("ORUN_CPU_ISA");
		if (isa && strcmp(isa, "scalar") == 0)
			ok = 0;
		att_avx2 = ok;
	}
	return att_avx2 > 0 && kv->type == RN_KV_F16 && d % 8 == 0 && kv->stride % 2 == 0;
}

#ifdef ATT_X86
#define TGT __attribute__((target("avx2,fma,f16c")))

/* s[j] = scale * q . k_j for the 8 cells j at k, k + ks, ... (ks in halves) */
TGT static void scores8(const float *q, const uint16_t *k, size_t ks, int d, float scale, float *s)
{
	__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
#define KV8(j) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + (j) * ks + i)))
	for (int i = 0; i < d; i += 8) {
		__m256 qv = _mm256_loadu_ps(q + i);
		a0 = _mm256_fmadd_ps(qv, KV8(0), a0);
		a1 = _mm256_fmadd_ps(qv, KV8(1), a1);
		a2 = _mm256_fmadd_ps(qv, KV8(2), a2);
		a3 = _mm256_fmadd_ps(qv, KV8(3), a3);
		a4 = _mm256_fmadd_ps(qv, KV8(4), a4);
		a5 = _mm256_fmadd_ps(qv, KV8(5), a5);
		a6 = _mm256_fmadd_ps(qv, KV8(6), a6);
		a7 = _mm256_fmadd_ps(qv, KV8(7), a7);
	}
#undef KV8
	__m256 t0 = _mm256_hadd_ps(a0, a1), t1 = _mm256_hadd_ps(a2, a3);
	__m256 t2 = _mm256_hadd_ps(a4, a5), t3 = _mm256_hadd_ps(a6, a7);
	__m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
	__m256 r = _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
	_mm256_storeu_ps(s, _mm256_mul_ps(r, _mm256_set1_ps(scale)));
}

TGT static float dot1(const float *q, const uint16_t *k, int d)
{
	__m256 a = _mm256_setzero_ps();
	for (int i = 0; i < d; i += 8)
		a = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + i))), a);
	__m128 x = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
	x = _mm_add_ps(x, _mm_movehl_ps(x, x));
	x = _mm_add_ss(x, _mm_movehdup_ps(x));
	return _mm_cvtss_f32(x);
}

TGT static void scores_f16(const struct rn_attn_kv *kv, int c0, int c1, int group, int d, float scale, const float *q,
			   size_t q_stride, float *s, size_t s_stride)
{
	const size_t ks = kv->stride / 2;
	const uint16_t *k = (const uint16_t *)kv->k;
	for (int h = 0; h < group; h++) {
		const float *qh = q + (size_t)h * q_stride;
		float *sh = s + (size_t)h * s_stride;
		int j = c0;
		for (; j + 8 <= c1; j += 8)
			scores8(qh, k + (size_t)j * ks, ks, d, scale, sh + j);
		for (; j < c1; j++)
			sh[j] = dot1(qh, k + (size_t)j * ks, d) * scale;
	}
}

/* out[h][0..64) += sum_j p[h][j] v_j[0..64) over cells [c0, c1), for one 64-wide slice of the head */
TGT static void values_f16_64(const uint16_t *v, size_t vs, int c0, int c1, const float *p, float *out)
{
	__m256 a0 = _mm256_loadu_ps(out), a1 = _mm256_loadu_ps(out + 8), a2 = _mm256_loadu_ps(out + 16),
	       a3 = _mm256_loadu_ps(out + 24), a4 = _mm256_loadu_ps(out + 32), a5 = _mm256_loadu_ps(out + 40),
	       a6 = _mm256_loadu_ps(out + 48), a7 = _mm256_loadu_ps(out + 56);
	for (int j = c0; j < c1; j++) {
		if (p[j] == 0)
			continue;
		__m256 pj = _mm256_set1_ps(p[j]);
		const uint16_t *r = v + (size_t)j * vs;
#define V8(o) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(r + (o))))
		a0 = _mm256_fmadd_ps(pj, V8(0), a0);
		a1 = _mm256_fmadd_ps(pj, V8(8), a1);
		a2 = _mm256_fmadd_ps(pj, V8(16), a2);
		a3 = _mm256_fmadd_ps(pj, V8(24), a3);
		a4 = _mm256_fmadd_ps(pj, V8(32), a4);
		a5 = _mm256_fmadd_ps(pj, V8(40), a5);
		a6 = _mm256_fmadd_ps(pj, V8(48), a6);
		a7 = _mm256_fmadd_ps(pj, V8(56), a7);
#undef V8
	}
	_mm256_storeu_ps(out, a0);
	_mm256_storeu_ps(out + 8, a1);
	_mm256_storeu_ps(out + 16, a2);
	_mm256_storeu_ps(out + 24, a3);
	_mm256_storeu_ps(out + 32, a4);
	_mm256_storeu_ps(out + 40, a5);
	_mm256_storeu_ps(out + 48, a6);
	_mm256_storeu_ps(out + 56, a7);
}

TGT static void values_f16_8(const uint16_t *v, size_t vs, int c0, int c1, const float *p, float *out)
{
	__m256 a = _mm256_loadu_ps(out);
	for (int j = c0; j < c1; j++)
		a = _mm256_fmadd_ps(_mm256_set1_ps(p[j]), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + (size_t)j * vs))), a);
	_mm256_storeu_ps(out, a);
}

static void values_f16(const struct rn_attn_kv *kv, int c0, int c1, int group, int d, const float *p, size_t p_stride,
		       float *out, size_t out_stride)
{
	const size_t vs = kv->stride / 2;
	const uint16_t *v = (const uint16_t *)kv->v;
	for (int h = 0; h < group; h++) {
		const float *ph = p + (size_t)h * p_stride;
		float *oh = out + (size_t)h * out_stride;
		memset(oh, 0, (size_t)d * sizeof *oh);
		int i = 0;
		for (; i + 64 <= d; i += 64)
			values_f16_64(v + i, vs, c0, c1, ph, oh + i);
		for (; i < d; i += 8)
			values_f16_8(v + i, vs, c0, c1, ph, oh + i);
	}
}
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
	float m = rn_ops_max(s, nc);
	float sum = rn_ops_exp_sum(s, nc, m);
	rn_ops_scale_round_f16(s, s, (float)(1.0 / (double)sum), nc);
}

void rn_attn_values(const struct rn_attn_kv *kv, int c0, int c1, int group, int d, const float *p, size_t p_stride,
		    float *out, size_t out_stride, float *scratch)
{
#ifdef ATT_X86
	if (fast_f16(kv, d)) {
		values_f16(kv, c0, c1, group, d, p, p_stride, out, out_stride);
		return;
	}
#endif
	for (int h = 0; h < group; h++)
		memset(out + (size_t)h * out_stride, 0, (size_t)d * sizeof(float));
	for (int j0 = c0; j0 < c1; j0 += ATT_BLOCK) {
		int j1 = j0 + ATT_BLOCK < c1 ? j0 + ATT_BLOCK : c1;
		load_block(kv->v, kv->stride, kv->type, j0, j1, d, scratch);
		for (int h = 0; h < group; h++) {
			const float *ph = p + (size_t)h * p_stride;
			float *oh = out + (size_t)h * out_stride;
			for (int j = j0; j < j1; j++)
				if (ph[j] != 0)
					rn_ops_axpy_f32(oh, ph[j], scratch + (size_t)(j - j0) * (size_t)d, d);
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
	rn_attn_values(kv, 0, nc, group, d, s, (size_t)nc, out, out_stride, blk);
}
