/* runner/cpu/ops.c — RMSNorm, RoPE, SwiGLU, KV-row conversion and attention's f32 steps for the CPU backend,
 * with an AVX2+FMA+F16C path (target attributes, chosen at run time: runner/cpu/features.h) and a portable
 * scalar path.
 *
 * Deliberately not here: the weight matmuls (runner/cpu/matmul.h, the kernel engineer's) and any threading.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define OPS_X86 1
#endif

#include "gguf/gguf.h"
#include "runner/cpu/features.h"
#include "runner/cpu/ops.h"

/* The AVX2 paths run where runner/cpu/features.h allows them (ORUN_CPU_ISA=scalar forces the portable ones). */
#define AVX2 (rn_cpu_features()->simd_ops)

/* ---------------------------------------------------------------------------------------------------- */
/* scalar */

static float f16_to_f32(uint16_t h) { return gguf_f16_to_f32(h); }
static uint16_t f32_to_f16(float f) { return gguf_f32_to_f16(f); }

static void s_rmsnorm(float *y, const float *x, const float *w, int n, float eps)
{
	double sum = 0;
	for (int i = 0; i < n; i++)
		sum += (double)(x[i] * x[i]);
	float scale = 1.0f / sqrtf((float)(sum / n) + eps);
	for (int i = 0; i < n; i++)
		y[i] = x[i] * scale * w[i];
}

static void s_store_q8_0(void *dst, const float *x, int n)
{
	uint8_t *p = dst;
	for (int b = 0; b < n / 32; b++, p += 34, x += 32) {
		float amax = 0;
		for (int i = 0; i < 32; i++)
			amax = fmaxf(amax, fabsf(x[i]));
		float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
		uint16_t h = f32_to_f16(d);
		memcpy(p, &h, 2);
		for (int i = 0; i < 32; i++)
			p[2 + i] = (uint8_t)(int8_t)nearbyintf(x[i] * id);
	}
}

static void s_load_q8_0(float *dst, const void *src, int n)
{
	const uint8_t *p = src;
	for (int b = 0; b < n / 32; b++, p += 34, dst += 32) {
		uint16_t h;
		memcpy(&h, p, 2);
		float d = f16_to_f32(h);
		for (int i = 0; i < 32; i++)
			dst[i] = d * (float)(int8_t)p[2 + i];
	}
}

/* ---------------------------------------------------------------------------------------------------- */
/* AVX2 */

#ifdef OPS_X86
#define TGT __attribute__((target("avx2,fma,f16c")))

TGT static inline float hsum256(__m256 v)
{
	__m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
	lo = _mm_add_ps(lo, hi);
	lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
	lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
	return _mm_cvtss_f32(lo);
}

/* exp(x) for x <= 0-ish arguments of softmax; Cephes-style range reduction and a degree-6 polynomial,
 * relative error about 2e-7 over [-87, 88]. */
/* exp of 8 floats with llama.cpp's x86 vector exp (ggml_v_expf, AVX2+FMA), operation for operation, so that
 * SwiGLU and softmax round as llama.cpp's do: exp(x) = 2^n (1 + p(b)), n = round(x / ln 2) through the
 * 1.5 * 2^23 shift, b = x - n ln 2 with ln 2 in two parts, p a degree-5 polynomial evaluated as
 * ((c5 b + c4) b^2 + (c3 b + c2)) b^2 + c1 b; when |n| > 126 the scale 2^n is applied in two factors
 * (s1 * (s2 + s2 p)) and beyond |n| > 192 the result is s1^2 (0 or infinity). */
TGT static inline __m256 exp256(__m256 x)
{
	const __m256 shift = _mm256_set1_ps(0x1.8p23f), abs_mask = _mm256_set1_ps(-0.0f);
	const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), shift);
	const __m256 n = _mm256_sub_ps(z, shift);
	const __m256 b = _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f),
					  _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
	const __m256i e = _mm256_slli_epi32(_mm256_castps_si256(z), 23);
	const __m256 k = _mm256_castsi256_ps(_mm256_add_epi32(e, _mm256_castps_si256(_mm256_set1_ps(1.0f))));
	const __m256 an = _mm256_andnot_ps(abs_mask, n);
	const __m256 big = _mm256_cmp_ps(an, _mm256_set1_ps(126.0f), _CMP_GT_OQ);
	const __m256 b2 = _mm256_mul_ps(b, b);
	const __m256 hi = _mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f));
	const __m256 mid = _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f));
	const __m256 p = _mm256_fmadd_ps(_mm256_fmadd_ps(hi, b2, mid), b2,
					 _mm256_mul_ps(_mm256_set1_ps(0x1.ffffecp-1f), b));
	if (!_mm256_movemask_ps(big))
		return _mm256_fmadd_ps(p, k, k);
	/* 2^n = s1 * s2 with s1 = 2^(+-127) (sign of n) */
	const __m256i g = _mm256_and_si256(_mm256_castps_si256(_mm256_cmp_ps(n, _mm256_setzero_ps(), _CMP_LE_OQ)),
					   _mm256_set1_epi32((int)0x82000000u));
	const __m256 s1 = _mm256_castsi256_ps(_mm256_add_epi32(g, _mm256_set1_epi32(0x7f000000)));
	const __m256 s2 = _mm256_castsi256_ps(_mm256_sub_epi32(e, g));
	const __m256 huge = _mm256_cmp_ps(an, _mm256_set1_ps(192.0f), _CMP_GT_OQ);
	const __m256 scaled = _mm256_mul_ps(_mm256_fmadd_ps(s2, p, s2), s1);
	const __m256 normal = _mm256_fmadd_ps(k, p, k);
	const __m256 r = _mm256_or_ps(_mm256_and_ps(big, scaled), _mm256_andnot_ps(big, normal));
	return _mm256_or_ps(_mm256_and_ps(huge, _mm256_mul_ps(s1, s1)), _mm256_andnot_ps(huge, r));
}

TGT static void v_rmsnorm(float *y, const float *x, const float *w, int n, float eps)
{
	__m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
	int i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 v = _mm256_loadu_ps(x + i);
		v = _mm256_mul_ps(v, v);
		acc0 = _mm256_add_pd(acc0, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
		acc1 = _mm256_add_pd(acc1, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
	}
	double t[4];
	_mm256_storeu_pd(t, _mm256_add_pd(acc0, acc1));
	double sum = t[0] + t[1] + t[2] + t[3];
	for (; i < n; i++)
		sum += (double)(x[i] * x[i]);
	float scale = 1.0f / sqrtf((float)(sum / n) + eps);
	__m256 s = _mm256_set1_ps(scale);
	for (i = 0; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), s), _mm256_loadu_ps(w + i)));
	for (; i < n; i++)
		y[i] = x[i] * scale * w[i];
}

TGT static void v_swiglu(float *g, const float *u, int n)
{
	int i = 0;
	const __m256 one = _mm256_set1_ps(1.0f);
	for (; i + 8 <= n; i += 8) {
		__m256 x = _mm256_loadu_ps(g + i);
		__m256 e = exp256(_mm256_sub_ps(_mm256_setzero_ps(), x));
		__m256 s = _mm256_div_ps(x, _mm256_add_ps(one, e));
		_mm256_storeu_ps(g + i, _mm256_mul_ps(s, _mm256_loadu_ps(u + i)));
	}
	for (; i < n; i++)
		g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

TGT static void v_store_f16(uint16_t *dst, const float *x, int n)
{
	int i = 0;
	for (; i + 8 <= n; i += 8)
		_mm_storeu_si128((__m128i *)(dst + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
	for (; i < n; i++)
		dst[i] = f32_to_f16(x[i]);
}

TGT static void v_load_f16(float *dst, const uint16_t *src, int n)
{
	int i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
	for (; i < n; i++)
		dst[i] = f16_to_f32(src[i]);
}

TGT static float v_max(const float *x, int n)
{
	int i = 0;
	float m = -INFINITY;
	if (n >= 8) {
		__m256 vm = _mm256_loadu_ps(x);
		for (i = 8; i + 8 <= n; i += 8)
			vm = _mm256_max_ps(vm, _mm256_loadu_ps(x + i));
		float t[8];
		_mm256_storeu_ps(t, vm);
		for (int j = 0; j < 8; j++)
			m = fmaxf(m, t[j]);
	}
	for (; i < n; i++)
		m = fmaxf(m, x[i]);
	return m;
}

/* llama.cpp's softmax numerator and sum (ggml_vec_soft_max_f32): eight values at a time from x[0], each eight
 * summed in f32 as (lo + hi), then pairwise, then the two halves, and added to a double. A last partial group is
 * summed as a full one with zeros in the missing lanes, as llama.cpp's rows run on into masked (exp = 0) cells. */
TGT static double v_exp_sum(float *x, int n, float m)
{
	const __m256 vm = _mm256_set1_ps(m);
	double sum = 0;
	for (int i = 0; i < n; i += 8) {
		__m256 e;
		if (i + 8 <= n) {
			e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
			_mm256_storeu_ps(x + i, e);
		} else {
			const __m256i live = _mm256_cmpgt_epi32(_mm256_set1_epi32(n - i),
								_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
			e = exp256(_mm256_sub_ps(_mm256_maskload_ps(x + i, live), vm));
			e = _mm256_and_ps(e, _mm256_castsi256_ps(live));
			_mm256_maskstore_ps(x + i, live, e);
		}
		__m128 h = _mm_add_ps(_mm256_extractf128_ps(e, 1), _mm256_castps256_ps128(e));
		h = _mm_add_ps(h, _mm_movehl_ps(h, h));
		h = _mm_add_ss(h, _mm_movehdup_ps(h));
		sum += (double)_mm_cvtss_f32(h);
	}
	return sum;
}

TGT static float v_dot_f32(const float *a, const float *b, int n)
{
	__m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
	int i = 0;
	for (; i + 16 <= n; i += 16) {
		a0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), a0);
		a1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), a1);
	}
	float s = hsum256(_mm256_add_ps(a0, a1));
	for (; i < n; i++)
		s += a[i] * b[i];
	return s;
}
TGT static void v_axpy_f32(float *y, float a, const float *x, int n)
{
	__m256 va = _mm256_set1_ps(a);
	int i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
	for (; i < n; i++)
		y[i] += a * x[i];
}

TGT static void v_scale_round_f16(float *y, const float *x, float s, int n)
{
	__m256 vs = _mm256_set1_ps(s);
	int i = 0;
	for (; i + 8 <= n; i += 8) {
		__m128i h = _mm256_cvtps_ph(_mm256_mul_ps(_mm256_loadu_ps(x + i), vs), _MM_FROUND_TO_NEAREST_INT);
		_mm256_storeu_ps(y + i, _mm256_cvtph_ps(h));
	}
	for (; i < n; i++)
		y[i] = f16_to_f32(f32_to_f16(x[i] * s));
}

#endif /* OPS_X86 */

/* ---------------------------------------------------------------------------------------------------- */
/* dispatch */

#ifdef OPS_X86
#define DISPATCH(vcall, scall)                                                                           \
	do {                                                                                             \
		if (AVX2) {                                                                              \
			vcall;                                                                           \
		} else {                                                                                 \
			scall;                                                                           \
		}                                                                                        \
	} while (0)
#else
#define DISPATCH(vcall, scall) scall
#endif

void rn_ops_rmsnorm(float *y, const float *x, const float *w, int n, float eps)
{
	DISPATCH(v_rmsnorm(y, x, w, n, eps), s_rmsnorm(y, x, w, n, eps));
}

/* RoPE with llama.cpp's roundings. Its rotation loop, x0' = x0 c - x1 s and x1' = x0 s + x1 c, is compiled
 * by GCC with contraction, one product rounded and the other fused into it: x0' = fma(c, x0, -(s x1)) and
 * x1' = fma(s, x0, c x1) (read from its x86-64 AVX2 build, ops.cpp at llama.cpp 0c1e57098bba, and checked
 * against its tensors for both pair layouts). fmaf is exact by definition (a libm call where the CPU has no
 * FMA), so every path gives the same bits. */
void rn_ops_rope(float *x, const float *cs, int n_rot, int neox)
{
	const int half = n_rot / 2;
	const int i1 = neox ? half : 1, step = neox ? 1 : 2; /* x1's offset from x0; pair stride */
	for (int i = 0; i < half; i++) {
		float *p = x + i * step;
		const float c = cs[2 * i], s = cs[2 * i + 1], x0 = p[0], x1 = p[i1];
		const float sx1 = s * x1, cx1 = c * x1;
		p[0] = fmaf(c, x0, -sx1);
		p[i1] = fmaf(s, x0, cx1);
	}
}

void rn_ops_swiglu(float *g, const float *u, int n)
{
	DISPATCH(v_swiglu(g, u, n), for (int i = 0; i < n; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i]);
}

void rn_ops_store_f16(uint16_t *dst, const float *x, int n)
{
	DISPATCH(v_store_f16(dst, x, n), for (int i = 0; i < n; i++) dst[i] = f32_to_f16(x[i]));
}

void rn_ops_load_f16(float *dst, const uint16_t *src, int n)
{
	DISPATCH(v_load_f16(dst, src, n), for (int i = 0; i < n; i++) dst[i] = f16_to_f32(src[i]));
}

void rn_ops_store_q8_0(void *dst, const float *x, int n) { s_store_q8_0(dst, x, n); }

void rn_ops_load_q8_0(float *dst, const void *src, int n) { s_load_q8_0(dst, src, n); }

float rn_ops_max(const float *x, int n)
{
	float m = -INFINITY;
	DISPATCH(m = v_max(x, n), for (int i = 0; i < n; i++) m = fmaxf(m, x[i]));
	return m;
}

double rn_ops_exp_sum(float *x, int n, float m)
{
	double sum = 0;
	DISPATCH(sum = v_exp_sum(x, n, m), for (int i = 0; i < n; i++) {
		x[i] = expf(x[i] - m);
		sum += x[i];
	});
	return sum;
}

float rn_ops_dot_f32(const float *a, const float *b, int n)
{
	float s = 0;
	DISPATCH(s = v_dot_f32(a, b, n), for (int i = 0; i < n; i++) s += a[i] * b[i]);
	return s;
}

void rn_ops_axpy_f32(float *y, float a, const float *x, int n)
{
	DISPATCH(v_axpy_f32(y, a, x, n), for (int i = 0; i < n; i++) y[i] += a * x[i]);
}

void rn_ops_scale_round_f16(float *y, const float *x, float s, int n)
{
	DISPATCH(v_scale_round_f16(y, x, s, n), for (int i = 0; i < n; i++) y[i] = f16_to_f32(f32_to_f16(x[i] * s)));
}
