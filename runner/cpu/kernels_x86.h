/* runner/cpu/kernels_x86.h — the x86 SIMD kernels, written once and compiled once per instruction set.
 *
 * Included (only) by kernels_avx2.c, kernels_avxvnni.c and kernels_avx512.c, which define:
 *   KX_TARGET    the __attribute__((target(...))) every function here carries (the rest of the build stays
 *                generic, and the kernel set is chosen at run time from cpuid);
 *   KX_VNNI      0: AVX2 vpmaddubsw + vpmaddwd; 1: AVX-VNNI (VEX) vpdpbusd/vpdpwssd; 2: the AVX-512 VNNI
 *                (EVEX, 256-bit via AVX512VL) forms of the same instructions;
 *   KX_ISA       the enum rn_isa value;  KX_EXPORT  the name of the function returning the kernel set.
 *
 * Arithmetic: weights are unpacked to unsigned bytes (signed for Q8_0, with the sign trick), multiplied with the
 * int8 activations in 32-bit integer lanes, and only per block (legacy formats) or per super-block (K-quants,
 * whose integer sub-scales are applied with vpmaddwd) converted to float. Horizontal adds (vphaddd: 2 cycles
 * each on Zen 3) stay out of the inner loops. No intermediate exceeds int16 in vpmaddubsw (|u| <= 128, |x| <= 127 and pairs stay < 32767), so the
 * VNNI forms give bit-identical integer sums. Each dot function takes up to RN_NX_MAX activation rows and
 * unpacks each weight block once for all of them.
 */
#ifndef KX_TARGET
#error "kernels_x86.h is a template: include it from kernels_avx2.c / kernels_avxvnni.c / kernels_avx512.c"
#endif

#include <immintrin.h>

#define KX_FN static KX_TARGET
#define KX_INL static inline __attribute__((always_inline)) KX_TARGET

/* ---------------------------------------------------------------------------------------------- primitives */

/* acc + (sum of each 4 consecutive u8*s8 products) in 8 int32 lanes. */
KX_INL __m256i kx_dot_u8s8(__m256i acc, __m256i u, __m256i s)
{
#if KX_VNNI == 2
	return _mm256_dpbusd_epi32(acc, u, s);
#elif KX_VNNI == 1
	return _mm256_dpbusd_avx_epi32(acc, u, s);
#else
	return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}

/* acc + (a[2i]*b[2i] + a[2i+1]*b[2i+1]) over int16 lanes, in 8 int32 lanes. */
KX_INL __m256i kx_dot_i16(__m256i acc, __m256i a, __m256i b)
{
#if KX_VNNI == 2
	return _mm256_dpwssd_epi32(acc, a, b);
#elif KX_VNNI == 1
	return _mm256_dpwssd_avx_epi32(acc, a, b);
#else
	return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
#endif
}

KX_INL float kx_hsum_ps(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

KX_INL int32_t kx_hsum_epi32(__m256i v)
{
	__m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
	return _mm_cvtsi128_si32(s);
}

KX_INL float kx_hmax_ps(__m256 v)
{
	__m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_max_ps(s, _mm_movehl_ps(s, s));
	s = _mm_max_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

/* Software prefetch of the weights, this many bytes ahead of the block being read: the hardware prefetcher
 * alone keeps too few misses in flight when DRAM latency is high (a busy machine), and a prefetch past the
 * end of the matrix is harmless. */
#define KX_PREFETCH_AHEAD 1024

KX_INL void kx_prefetch(const uint8_t *p, const int bytes)
{
	for (int o = 0; o < bytes; o += 64)
		_mm_prefetch((const char *)(p + KX_PREFETCH_AHEAD + o), _MM_HINT_T0);
}

/* Eight f16 values found `stride` bytes apart, as floats. */
KX_INL __m256 kx_gather_f16x8(const uint8_t *p, size_t stride)
{
	uint64_t lo = (uint64_t)rn_load_u16(p) | (uint64_t)rn_load_u16(p + stride) << 16 |
		      (uint64_t)rn_load_u16(p + 2 * stride) << 32 | (uint64_t)rn_load_u16(p + 3 * stride) << 48;
	uint64_t hi = (uint64_t)rn_load_u16(p + 4 * stride) | (uint64_t)rn_load_u16(p + 5 * stride) << 16 |
		      (uint64_t)rn_load_u16(p + 6 * stride) << 32 | (uint64_t)rn_load_u16(p + 7 * stride) << 48;
	/* keep the assembly in general-purpose registers (integer pipes, idle here): left alone, GCC's SLP
	 * vectoriser turns it into ~20 vector shuffles that compete with the dot products */
	__asm__("" : "+r"(lo), "+r"(hi));
	return _mm256_cvtph_ps(_mm_set_epi64x((long long)hi, (long long)lo));
}

/* As kx_gather_f16x8 for the first t (< 8) values; the other lanes are 0. */
KX_INL __m256 kx_gather_f16_n(const uint8_t *p, size_t stride, const int t)
{
	uint64_t lo = 0, hi = 0;
#pragma GCC unroll 8
	for (int k = 0; k < t; k++) {
		uint64_t v = rn_load_u16(p + k * stride);
		if (k < 4)
			lo |= v << (16 * k);
		else
			hi |= v << (16 * (k - 4));
	}
	__asm__("" : "+r"(lo), "+r"(hi));
	return _mm256_cvtph_ps(_mm_set_epi64x((long long)hi, (long long)lo));
}

/* One f16 as float through F16C (the scalar rn_f16_to_f32 is for portable code). */
KX_INL float kx_f16(const uint8_t *p)
{
	return _cvtsh_ss(rn_load_u16(p));
}

/* Byte i = 0x10 when bit i of qh is set, else 0. */
KX_INL __m256i kx_bits32(uint32_t qh)
{
	const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2,
						2, 3, 3, 3, 3, 3, 3, 3, 3);
	const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
	__m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)qh), spread);
	v = _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
	return _mm256_and_si256(v, _mm256_set1_epi8(0x10));
}

/* ---------------------------------------------------------------------------------------------- activations */

/* Rounds 32 floats times id to nearest-even int32 (the MXCSR default, as nearbyintf in the scalar path), stores
 * them as int8 in order and returns their sum. */
KX_INL int32_t kx_quant32(const float *x, __m256 vid, int8_t *q)
{
	__m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 0), vid));
	__m256i i1 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8), vid));
	__m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 16), vid));
	__m256i i3 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 24), vid));
	int32_t sum = kx_hsum_epi32(_mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3)));
	/* the packs interleave 128-bit halves: dword order i0lo i1lo i2lo i3lo | i0hi i1hi i2hi i3hi */
	__m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
	p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
	_mm256_storeu_si256((__m256i *)q, p);
	return sum;
}

KX_INL __m256 kx_absmax32(const float *x, __m256 m)
{
	const __m256 abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
	for (int i = 0; i < 32; i += 8)
		m = _mm256_max_ps(m, _mm256_and_ps(_mm256_loadu_ps(x + i), abs));
	return m;
}

/* binary32 -> nearest-even binary16 -> binary32 */
KX_INL float kx_round_f16(float v)
{
	return _cvtsh_ss(_cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT));
}

KX_FN void kx_quant_q8_32(const float *x, int64_t cols, void *dst)
{
	int8_t *q = dst;
	float *d = (float *)(q + cols);
	int32_t *s = (int32_t *)(d + cols / QK_LEGACY);
	float *sm = (float *)(s + cols / QK_LEGACY);
	for (int64_t b = 0; b < cols / QK_LEGACY; b++) {
		const float *xb = x + b * QK_LEGACY;
		float amax = kx_hmax_ps(kx_absmax32(xb, _mm256_setzero_ps()));
		float id = amax > 0.0f ? 127.0f / amax : 0.0f;
		int32_t sum = kx_quant32(xb, _mm256_set1_ps(id), q + b * QK_LEGACY);
		const float db = amax / 127.0f;
		s[b] = sum;
		d[b] = kx_round_f16(db);
		sm[b] = kx_round_f16(db * (float)sum);
	}
}

KX_FN void kx_quant_q8_256(const float *x, int64_t cols, void *dst)
{
	int8_t *q = dst;
	float *d = (float *)(q + cols);
	int16_t *bs = (int16_t *)(d + cols / QK_K);
	for (int64_t b = 0; b < cols / QK_K; b++) {
		const float *xb = x + b * QK_K;
		__m256 m = _mm256_setzero_ps();
		for (int i = 0; i < QK_K; i += 32)
			m = kx_absmax32(xb + i, m);
		float amax = kx_hmax_ps(m);
		float id = amax > 0.0f ? 127.0f / amax : 0.0f;
		__m256 vid = _mm256_set1_ps(id);
		int8_t *qb = q + b * QK_K;
		for (int i = 0; i < QK_K; i += 32)
			kx_quant32(xb + i, vid, qb + i);
		/* sums of 16: sign-extend to int16 pairs and add through vpmaddubsw-free widening */
		for (int g = 0; g < QK_K / 16; g++) {
			__m256i v = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(qb + 16 * g)));
			__m256i w = _mm256_madd_epi16(v, _mm256_set1_epi16(1));
			bs[b * (QK_K / 16) + g] = (int16_t)kx_hsum_epi32(w);
		}
		d[b] = amax > 0.0f ? 1.0f / id : 0.0f;
	}
}

/* ---------------------------------------------------------------------------------------------- legacy */

/* Unpacked weights of one legacy block: unsigned q for Q4/Q5 (offset or min applied later), signed for Q8_0.
 * The nibbles: the 16 bytes go to both 128-bit halves (a load-port broadcast) and the high half is shifted right
 * by 4 within each dword, so one AND keeps the low nibbles in the low half and the high nibbles in the high. */
KX_INL __m256i kx_nibbles32(const uint8_t *qs)
{
	__m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs));
	return _mm256_and_si256(_mm256_srlv_epi32(v, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)),
				_mm256_set1_epi8(15));
}

KX_INL __m256i kx_legacy_unpack(const uint8_t *blk, const int type)
{
	switch (type) {
	case RN_MM_Q4_0:
		return kx_nibbles32(blk + 2);
	case RN_MM_Q4_1:
		return kx_nibbles32(blk + 4);
	case RN_MM_Q5_0:
		return _mm256_or_si256(kx_nibbles32(blk + 6), kx_bits32(rn_load_u32(blk + 2)));
	case RN_MM_Q5_1:
		return _mm256_or_si256(kx_nibbles32(blk + 8), kx_bits32(rn_load_u32(blk + 4)));
	default:
		return _mm256_loadu_si256((const __m256i *)(blk + 2));
	}
}

/* Integer dot of one unpacked block with 32 activation bytes, as 8 int32 lanes; aw is |w| for Q8_0 (sign
 * trick: |w| * sign(x, w) = w * x with an unsigned left operand). */
KX_INL __m256i kx_legacy_dot(__m256i wq, __m256i aw, const int8_t *xq, const int type)
{
	__m256i xv = _mm256_loadu_si256((const __m256i *)xq);
	if (type == RN_MM_Q8_0)
		return kx_dot_u8s8(_mm256_setzero_si256(), aw, _mm256_sign_epi8(xv, wq));
	return kx_dot_u8s8(_mm256_setzero_si256(), wq, xv);
}

KX_INL int kx_legacy_bytes(const int type)
{
	return type == RN_MM_Q4_0 ? Q4_0_BYTES
	       : type == RN_MM_Q4_1 ? Q4_1_BYTES
	       : type == RN_MM_Q5_0 ? Q5_0_BYTES
	       : type == RN_MM_Q5_1 ? Q5_1_BYTES
				    : Q8_0_BYTES;
}

/* Legacy formats, 8 blocks at a time. Per block the integer lanes are converted to float and scaled by
 * d_w * d_x, broadcast from a small stack array (a load, no shuffle); the 8 scaled blocks are summed in a fixed
 * tree and added to the accumulator once per group, so the result does not depend on nx and the FMA latency
 * chain is one per group. The offset (-8 for Q4_0, -16 for Q5_0) and the min (Q4_1, Q5_1) are applied per group
 * with the activation block sums: sum_b d_w d_x (s_b - off * sx_b) = sum_b d_w d_x s_b - off * sum_b d_w d_x sx_b,
 * and sum_b m_b * sm_b (sm = f16(d_x * sx), as ggml's Q8_1 "s").
 * t = number of valid blocks in the group (8 except at the end of a row). */
/* A legacy weight row as kx_legacy_group reads it: the raw blocks (decode), or the row unpacked once by
 * kx_legacy_unpack_rows for many activation rows (prefill): q[cols] unpacked bytes, for Q8_0 then |q|[cols],
 * then f32 d[cols/32] and, for Q4_1/Q5_1, f32 m[cols/32]. */
struct kx_lrow {
	const uint8_t *raw;
	const uint8_t *uq, *uaq;
	const float *ud, *um;
};

KX_INL void kx_legacy_group(const struct kx_lrow *wrow, int64_t b, const int t, const int8_t *const *xq,
			    const float *const *xd, const int32_t *const *xs, const float *const *xm, __m256 *acc,
			    __m256 *accm, const int nx, const int type, const int unpacked)
{
	const int bytes = kx_legacy_bytes(type);
	const int has_min = type == RN_MM_Q4_1 || type == RN_MM_Q5_1;
	const int has_off = type == RN_MM_Q4_0 || type == RN_MM_Q5_0;
	const uint8_t *g = unpacked ? NULL : wrow->raw + b * bytes;
	float sc[RN_NX_MAX][8] __attribute__((aligned(32)));
	__m256 dw, mw = _mm256_setzero_ps();
	if (unpacked) {
		const __m256i live = _mm256_cmpgt_epi32(_mm256_set1_epi32(t), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
		dw = t == 8 ? _mm256_loadu_ps(wrow->ud + b) : _mm256_maskload_ps(wrow->ud + b, live);
		if (has_min)
			mw = t == 8 ? _mm256_loadu_ps(wrow->um + b) : _mm256_maskload_ps(wrow->um + b, live);
	} else if (t == 8) {
		kx_prefetch(g, 8 * bytes);
		dw = kx_gather_f16x8(g, (size_t)bytes);
		if (has_min)
			mw = kx_gather_f16x8(g + 2, (size_t)bytes);
	} else {
		/* built in registers: small stores followed by a wide load would stall on store forwarding */
		dw = kx_gather_f16_n(g, (size_t)bytes, t);
		if (has_min)
			mw = kx_gather_f16_n(g + 2, (size_t)bytes, t);
	}
#pragma GCC unroll 4
	for (int j = 0; j < nx; j++) {
		__m256 dx, sxf, smx;
		if (t == 8) {
			dx = _mm256_loadu_ps(xd[j] + b);
			sxf = _mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(xs[j] + b)));
			smx = _mm256_loadu_ps(xm[j] + b);
		} else {
			const __m256i live = _mm256_cmpgt_epi32(_mm256_set1_epi32(t), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
			dx = _mm256_maskload_ps(xd[j] + b, live);
			sxf = _mm256_cvtepi32_ps(_mm256_maskload_epi32(xs[j] + b, live));
			smx = _mm256_maskload_ps(xm[j] + b, live);
		}
		__m256 s = _mm256_mul_ps(dw, dx);
		_mm256_store_ps(sc[j], s);
		if (has_min)
			accm[j] = _mm256_fmadd_ps(mw, smx, accm[j]);
		else if (has_off)
			accm[j] = _mm256_fmadd_ps(s, sxf, accm[j]);
	}
	/* fixed tree: ((f0 s0 + f1 s1) + (f2 s2 + f3 s3)) + ((f4 s4 + f5 s5) + (f6 s6 + f7 s7)), built as the blocks
	 * come so that only three partial sums per activation row are alive (pa, pb: the current pairs; h: the
	 * finished half) */
	__m256 pa[RN_NX_MAX], pb[RN_NX_MAX], h[RN_NX_MAX];
#pragma GCC unroll 4
	for (int j = 0; j < nx; j++)
		pa[j] = pb[j] = h[j] = _mm256_setzero_ps();
#pragma GCC unroll 8
	for (int k = 0; k < 8; k++) {
		if (k < t) {
			__m256i wq, aw;
			if (unpacked) {
				wq = _mm256_load_si256((const __m256i *)(wrow->uq + (b + k) * QK_LEGACY));
				aw = type == RN_MM_Q8_0
					     ? _mm256_load_si256((const __m256i *)(wrow->uaq + (b + k) * QK_LEGACY))
					     : wq;
			} else {
				wq = kx_legacy_unpack(g + k * bytes, type);
				aw = type == RN_MM_Q8_0 ? _mm256_sign_epi8(wq, wq) : wq;
			}
#pragma GCC unroll 4
			for (int j = 0; j < nx; j++) {
				__m256 f = _mm256_cvtepi32_ps(kx_legacy_dot(wq, aw, xq[j] + (b + k) * QK_LEGACY, type));
				__m256 bsc = _mm256_broadcast_ss(&sc[j][k]);
				__m256 *p = k % 4 < 2 ? &pa[j] : &pb[j];
				*p = k % 2 == 0 ? _mm256_mul_ps(f, bsc) : _mm256_fmadd_ps(f, bsc, *p);
			}
		} else {
#pragma GCC unroll 4
			for (int j = 0; j < nx; j++)
				if (k % 2 == 0)
					*(k % 4 < 2 ? &pa[j] : &pb[j]) = _mm256_setzero_ps();
		}
		if (k == 3 || k == 7) {
#pragma GCC unroll 4
			for (int j = 0; j < nx; j++) {
				__m256 q = _mm256_add_ps(pa[j], pb[j]);
				h[j] = k == 3 ? q : _mm256_add_ps(h[j], q);
			}
		}
	}
#pragma GCC unroll 4
	for (int j = 0; j < nx; j++)
		acc[j] = _mm256_add_ps(acc[j], h[j]);
}

KX_INL void kx_legacy_row(const struct kx_lrow *wrow, int64_t cols, const void *const *x, float *out, const int nx,
			  const int type, const int unpacked)
{
	const int64_t nb = cols / QK_LEGACY;
	const int8_t *xq[RN_NX_MAX];
	const float *xd[RN_NX_MAX];
	const int32_t *xs[RN_NX_MAX];
	const float *xm[RN_NX_MAX];
	__m256 acc[RN_NX_MAX], accm[RN_NX_MAX];
#pragma GCC unroll 4
	for (int j = 0; j < nx; j++) {
		xq[j] = x[j];
		xd[j] = rn_act_q8_d(x[j], cols);
		xs[j] = rn_act_q8_32_sums(x[j], cols);
		xm[j] = rn_act_q8_32_sm(x[j], cols);
		acc[j] = accm[j] = _mm256_setzero_ps();
	}
	int64_t b = 0;
	for (; b + 8 <= nb; b += 8)
		kx_legacy_group(wrow, b, 8, xq, xd, xs, xm, acc, accm, nx, type, unpacked);
	/* the last 1..7 blocks as groups of 4, 2 and 1, each compiled for its size (no run-time lane logic:
	 * short rows such as 576 or 896 columns spend a good part of their time here) */
	if (nb - b >= 4) {
		kx_legacy_group(wrow, b, 4, xq, xd, xs, xm, acc, accm, nx, type, unpacked);
		b += 4;
	}
	if (nb - b >= 2) {
		kx_legacy_group(wrow, b, 2, xq, xd, xs, xm, acc, accm, nx, type, unpacked);
		b += 2;
	}
	if (nb - b >= 1)
		kx_legacy_group(wrow, b, 1, xq, xd, xs, xm, acc, accm, nx, type, unpacked);
	const float moff = type == RN_MM_Q4_0 ? -8.0f : type == RN_MM_Q5_0 ? -16.0f : 1.0f;
#pragma GCC unroll 4
	for (int j = 0; j < nx; j++)
		out[j] = kx_hsum_ps(acc[j]) + moff * kx_hsum_ps(accm[j]);
}

KX_INL void kx_legacy(const struct rn_weight *w, int64_t row, const void *const *x, float *out, const int nx,
		      const int type)
{
	const int64_t nb = w->cols / QK_LEGACY;
	struct kx_lrow wrow = { .raw = (const uint8_t *)w->data +
				       (size_t)row * (size_t)nb * (size_t)kx_legacy_bytes(type) };
	kx_legacy_row(&wrow, w->cols, x, out, nx, type, 0);
}

/* Prefill: unpack rows [row0, row1) once into dst (rows of rn_unpacked_row_bytes), for many activation rows. */
KX_INL void kx_legacy_unpack_rows(const struct rn_weight *w, int64_t row0, int64_t row1, uint8_t *dst,
				  size_t stride, const int type)
{
	const int bytes = kx_legacy_bytes(type);
	const int has_min = type == RN_MM_Q4_1 || type == RN_MM_Q5_1;
	const int64_t nb = w->cols / QK_LEGACY;
	for (int64_t r = row0; r < row1; r++) {
		const uint8_t *raw = (const uint8_t *)w->data + (size_t)r * (size_t)nb * (size_t)bytes;
		uint8_t *uq = dst + (size_t)(r - row0) * stride;
		uint8_t *uaq = uq + w->cols;
		float *ud = (float *)(uq + w->cols * (type == RN_MM_Q8_0 ? 2 : 1)), *um = ud + nb;
		for (int64_t b = 0; b < nb; b++) {
			const uint8_t *blk = raw + b * bytes;
			__m256i wq = kx_legacy_unpack(blk, type);
			_mm256_store_si256((__m256i *)(uq + b * QK_LEGACY), wq);
			if (type == RN_MM_Q8_0)
				_mm256_store_si256((__m256i *)(uaq + b * QK_LEGACY), _mm256_sign_epi8(wq, wq));
			ud[b] = kx_f16(blk);
			if (has_min)
				um[b] = kx_f16(blk + 2);
		}
	}
}

/* Prefill: rows 0 .. n_rows-1 of an unpacked tile against nx activation rows: y[j * ldy + r]. */
KX_INL void kx_legacy_unpacked(const struct rn_weight *w, const uint8_t *ubuf, size_t stride, int64_t n_rows,
			       const void *const *x, float *y, int64_t ldy, const int nx, const int type)
{
	const int64_t nb = w->cols / QK_LEGACY;
	for (int64_t r = 0; r < n_rows; r++) {
		struct kx_lrow wrow;
		wrow.raw = NULL;
		wrow.uq = ubuf + (size_t)r * stride;
		wrow.uaq = wrow.uq + w->cols;
		wrow.ud = (const float *)(wrow.uq + w->cols * (type == RN_MM_Q8_0 ? 2 : 1));
		wrow.um = wrow.ud + nb;
		float o[RN_NX_MAX];
		kx_legacy_row(&wrow, w->cols, x, o, nx, type, 1);
		for (int j = 0; j < nx; j++)
			y[j * ldy + r] = o[j];
	}
}

/* ---------------------------------------------------------------------------------------------- K-quants */

/* Shuffle controls for the formats with 16 scales per super-block. kx_sc_pair[t]: low half lanes = int16
 * word 2t, high half lanes = int16 word 2t+1 (of the 8 words in each half). */
#define KX_W(b) (char)(b), (char)((b) + 1)
#define KX_PAIR_ROW(t)                                                                                   \
	{ KX_W(4 * (t)), KX_W(4 * (t)), KX_W(4 * (t)), KX_W(4 * (t)), KX_W(4 * (t)), KX_W(4 * (t)),         \
	  KX_W(4 * (t)), KX_W(4 * (t)), KX_W(4 * (t) + 2), KX_W(4 * (t) + 2), KX_W(4 * (t) + 2),            \
	  KX_W(4 * (t) + 2), KX_W(4 * (t) + 2), KX_W(4 * (t) + 2), KX_W(4 * (t) + 2), KX_W(4 * (t) + 2) }
static const char kx_sc_pair[4][32] __attribute__((aligned(32))) = {
	KX_PAIR_ROW(0), KX_PAIR_ROW(1), KX_PAIR_ROW(2), KX_PAIR_ROW(3),
};

/* For the formats with 16 sub-blocks of 16: from 16 int8 scales, the per-32-element scale vectors
 * (lanes 0-7 = scale 2g, lanes 8-15 = scale 2g+1) are shuffles of these two. */
struct kx_sc16 {
	__m256i lo, hi; /* int16 scales 0..7 / 8..15 in both 128-bit halves */
	__m256i all;    /* int16 scales 0..15 */
};

KX_INL struct kx_sc16 kx_sc16_make(__m128i sc8)
{
	struct kx_sc16 s;
	s.all = _mm256_cvtepi8_epi16(sc8);
	s.lo = _mm256_permute2x128_si256(s.all, s.all, 0x00);
	s.hi = _mm256_permute2x128_si256(s.all, s.all, 0x11);
	return s;
}

KX_INL __m256i kx_sc16_group(const struct kx_sc16 *s, int g)
{
	return _mm256_shuffle_epi8(g < 4 ? s->lo : s->hi, _mm256_load_si256((const __m256i *)kx_sc_pair[g % 4]));
}

/* Per-row activation pointers for a K-quant dot. */
struct kx_xk {
	const int8_t *q;
	const float *d;
	const int16_t *bs;
};

KX_INL void kx_xk_init(struct kx_xk *xk, const void *const *x, int64_t cols, const int nx)
{
#pragma GCC unroll 4
	for (int j = 0; j < nx; j++) {
		xk[j].q = x[j];
		xk[j].d = rn_act_q8_d(x[j], cols);
		xk[j].bs = rn_act_q8_256_bsums(x[j], cols);
	}
}

KX_INL void kx_q4k_q5k(const struct rn_weight *w, int64_t row, const void *const *x, float *out, const int nx,
		       const int five)
{
	const int bytes = five ? Q5_K_BYTES : Q4_K_BYTES;
	const int64_t nb = w->cols / QK_K;
	const uint8_t *wr = (const uint8_t *)w->data + (size_t)row * (size_t)nb * (size_t)bytes;
	const __m256i m4 = _mm256_set1_epi8(15), h5 = _mm256_set1_epi8(0x10);
	const __m128i dup_mins = _mm_setr_epi8(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15);
	struct kx_xk xk[RN_NX_MAX];
	__m256 acc[RN_NX_MAX], accm[RN_NX_MAX];
	kx_xk_init(xk, x, w->cols, nx);
#pragma GCC unroll 4
	for (int j = 0; j < nx; j++)
		acc[j] = accm[j] = _mm256_setzero_ps();

	for (int64_t b = 0; b < nb; b++) {
		const uint8_t *blk = wr + b * bytes;
		kx_prefetch(blk, bytes);
		const float d = kx_f16(blk + Q4_K_D);
		const float dmin = kx_f16(blk + Q4_K_DMIN);
		const uint32_t a0 = rn_load_u32(blk + Q4_K_SCALES), a1 = rn_load_u32(blk + Q4_K_SCALES + 4),
			       a2 = rn_load_u32(blk + Q4_K_SCALES + 8);
		/* 6-bit scales sc0..7 and mins m0..7 as bytes (see kernels.h) */
		const uint32_t sc_lo = a0 & 0x3f3f3f3f, mn_lo = a1 & 0x3f3f3f3f;
		const uint32_t sc_hi = (a2 & 0x0f0f0f0f) | ((a0 >> 6) & 0x03030303) << 4;
		const uint32_t mn_hi = ((a2 >> 4) & 0x0f0f0f0f) | ((a1 >> 6) & 0x03030303) << 4;
		const __m128i scm = _mm_setr_epi32((int)sc_lo, (int)sc_hi, (int)mn_lo, (int)mn_hi);
		const __m256i mn16 = _mm256_cvtepu8_epi16(_mm_shuffle_epi8(scm, dup_mins));
		/* the 8 scales as int16 in both halves; a vpshufb per sub-block makes its vpmaddwd operand (a store and
		 * broadcast loads instead measured 10% slower: the loads wait for store forwarding) */
		const __m256i s16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(scm));
		const uint8_t *qs = blk + (five ? Q5_K_QS : Q4_K_QS);
		__m256i qh = five ? _mm256_loadu_si256((const __m256i *)(blk + Q5_K_QH)) : _mm256_setzero_si256();
		__m256i isum[RN_NX_MAX];
#pragma GCC unroll 4
		for (int j = 0; j < nx; j++)
			isum[j] = _mm256_setzero_si256();
#pragma GCC unroll 4
		for (int c = 0; c < 4; c++) {
			__m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
			__m256i wl = _mm256_and_si256(q, m4);
			__m256i wh = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
			if (five) {
				/* bit 2c (low nibbles) and 2c+1 (high nibbles) of qh[l] become bit 4 */
				__m256i hl = 2 * c <= 4 ? _mm256_slli_epi16(qh, 4 - 2 * c)
							: _mm256_srli_epi16(qh, 2 * c - 4);
				__m256i hh = 2 * c + 1 <= 4 ? _mm256_slli_epi16(qh, 3 - 2 * c)
							    : _mm256_srli_epi16(qh, 2 * c - 3);
				wl = _mm256_or_si256(wl, _mm256_and_si256(hl, h5));
				wh = _mm256_or_si256(wh, _mm256_and_si256(hh, h5));
			}
			__m256i sl = _mm256_shuffle_epi8(s16, _mm256_set1_epi16((short)(0x0100 + 0x0202 * (2 * c))));
			__m256i sh = _mm256_shuffle_epi8(s16, _mm256_set1_epi16((short)(0x0100 + 0x0202 * (2 * c + 1))));
#pragma GCC unroll 4
			for (int j = 0; j < nx; j++) {
				const int8_t *xq = xk[j].q + b * QK_K + 64 * c;
				__m256i xl = _mm256_loadu_si256((const __m256i *)xq);
				__m256i xh = _mm256_loadu_si256((const __m256i *)(xq + 32));
				isum[j] = kx_dot_i16(isum[j], _mm256_maddubs_epi16(wl, xl), sl);
				isum[j] = kx_dot_i16(isum[j], _mm256_maddubs_epi16(wh, xh), sh);
			}
		}
#pragma GCC unroll 4
		for (int j = 0; j < nx; j++) {
			const float dx = xk[j].d[b];
			__m256i bs = _mm256_loadu_si256((const __m256i *)(xk[j].bs + b * 16));
			acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[j]), _mm256_set1_ps(d * dx), acc[j]);
			accm[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(bs, mn16)),
						  _mm256_set1_ps(dmin * dx), accm[j]);
		}
	}
#pragma GCC unroll 4
	for (int j = 0; j < nx; j++)
		out[j] = kx_hsum_ps(acc[j]) - kx_hsum_ps(accm[j]);
}

KX_INL void kx_q6k(const struct rn_weight *w, int64_t row, const void *const *x, float *out, const int nx)
{
	const int64_t nb = w->cols / QK_K;
	const uint8_t *wr = (const uint8_t *)w->data + (size_t)row * (size_t)nb * Q6_K_BYTES;
	const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
	struct kx_xk xk[RN_NX_MAX];
	__m256 acc[RN_NX_MAX];
	kx_xk_init(xk, x, w->cols, nx);
#pragma GCC unroll 4
	for (int j = 0; j < nx; j++)
		acc[j] = _mm256_setzero_ps();

	for (int64_t b = 0; b < nb; b++) {
		const uint8_t *blk = wr + b * Q6_K_BYTES;
		kx_prefetch(blk, Q6_K_BYTES);
		const float d = kx_f16(blk + Q6_K_D);
		const struct kx_sc16 sc = kx_sc16_make(_mm_loadu_si128((const __m128i *)(blk + Q6_K_SCALES)));
		__m256i isum[RN_NX_MAX];
#pragma GCC unroll 4
		for (int j = 0; j < nx; j++)
			isum[j] = _mm256_setzero_si256();
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++) {
			__m256i ql0 = _mm256_loadu_si256((const __m256i *)(blk + Q6_K_QL + 64 * h));
			__m256i ql1 = _mm256_loadu_si256((const __m256i *)(blk + Q6_K_QL + 64 * h + 32));
			__m256i qh = _mm256_loadu_si256((const __m256i *)(blk + Q6_K_QH + 32 * h));
			__m256i wq[4];
			wq[0] = _mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30));
			wq[1] = _mm256_or_si256(_mm256_and_si256(ql1, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30));
			wq[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4), _mm256_and_si256(qh, m30));
			wq[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
						_mm256_and_si256(_mm256_srli_epi16(qh, 2), m30));
#pragma GCC unroll 4
			for (int i = 0; i < 4; i++) {
				__m256i s = kx_sc16_group(&sc, 4 * h + i);
#pragma GCC unroll 4
				for (int j = 0; j < nx; j++) {
					__m256i xv = _mm256_loadu_si256(
						(const __m256i *)(xk[j].q + b * QK_K + 128 * h + 32 * i));
					isum[j] = kx_dot_i16(isum[j], _mm256_maddubs_epi16(wq[i], xv), s);
				}
			}
		}
#pragma GCC unroll 4
		for (int j = 0; j < nx; j++) {
			/* q - 32: subtract 32 * sum_k scale_k * bsum_k */
			__m256i bs = _mm256_loadu_si256((const __m256i *)(xk[j].bs + b * 16));
			__m256i off = _mm256_slli_epi32(_mm256_madd_epi16(bs, sc.all), 5);
			acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(isum[j], off)),
						 _mm256_set1_ps(d * xk[j].d[b]), acc[j]);
		}
	}
#pragma GCC unroll 4
	for (int j = 0; j < nx; j++)
		out[j] = kx_hsum_ps(acc[j]);
}

KX_INL void kx_q3k(const struct rn_weight *w, int64_t row, const void *const *x, float *out, const int nx)
{
	const int64_t nb = w->cols / QK_K;
	const uint8_t *wr = (const uint8_t *)w->data + (size_t)row * (size_t)nb * Q3_K_BYTES;
	const __m256i m3 = _mm256_set1_epi8(3), m4b = _mm256_set1_epi8(4);
	struct kx_xk xk[RN_NX_MAX];
	__m256 acc[RN_NX_MAX];
	kx_xk_init(xk, x, w->cols, nx);
#pragma GCC unroll 4
	for (int j = 0; j < nx; j++)
		acc[j] = _mm256_setzero_ps();

	for (int64_t b = 0; b < nb; b++) {
		const uint8_t *blk = wr + b * Q3_K_BYTES;
		kx_prefetch(blk, Q3_K_BYTES);
		const float d = kx_f16(blk + Q3_K_D);
		/* 16 6-bit scales (see kernels.h), as int8 s - 32 */
		const uint32_t a0 = rn_load_u32(blk + Q3_K_SCALES), a1 = rn_load_u32(blk + Q3_K_SCALES + 4),
			       a2 = rn_load_u32(blk + Q3_K_SCALES + 8);
		const uint32_t s0 = (a0 & 0x0f0f0f0f) | ((a2 >> 0) & 0x03030303) << 4;
		const uint32_t s1 = (a1 & 0x0f0f0f0f) | ((a2 >> 2) & 0x03030303) << 4;
		const uint32_t s2 = ((a0 >> 4) & 0x0f0f0f0f) | ((a2 >> 4) & 0x03030303) << 4;
		const uint32_t s3 = ((a1 >> 4) & 0x0f0f0f0f) | ((a2 >> 6) & 0x03030303) << 4;
		const __m128i sc8 = _mm_sub_epi8(_mm_setr_epi32((int)s0, (int)s1, (int)s2, (int)s3), _mm_set1_epi8(32));
		const struct kx_sc16 sc = kx_sc16_make(sc8);
		const __m256i hm = _mm256_loadu_si256((const __m256i *)(blk + Q3_K_HMASK));
		__m256i isum[RN_NX_MAX];
#pragma GCC unroll 4
		for (int j = 0; j < nx; j++)
			isum[j] = _mm256_setzero_si256();
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++) {
			__m256i q = _mm256_loadu_si256((const __m256i *)(blk + Q3_K_QS + 32 * h));
#pragma GCC unroll 4
			for (int i = 0; i < 4; i++) {
				/* u = 2-bit value | hmask bit (4h + i) << 2 */
				const int p = 4 * h + i;
				__m256i hb = p >= 2 ? _mm256_srli_epi16(hm, p - 2) : _mm256_slli_epi16(hm, 2 - p);
				__m256i wq = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 2 * i), m3),
							     _mm256_and_si256(hb, m4b));
				__m256i s = kx_sc16_group(&sc, p);
#pragma GCC unroll 4
				for (int j = 0; j < nx; j++) {
					__m256i xv = _mm256_loadu_si256(
						(const __m256i *)(xk[j].q + b * QK_K + 128 * h + 32 * i));
					isum[j] = kx_dot_i16(isum[j], _mm256_maddubs_epi16(wq, xv), s);
				}
			}
		}
#pragma GCC unroll 4
		for (int j = 0; j < nx; j++) {
			/* u - 4: subtract 4 * sum_k scale_k * bsum_k */
			__m256i bs = _mm256_loadu_si256((const __m256i *)(xk[j].bs + b * 16));
			__m256i off = _mm256_slli_epi32(_mm256_madd_epi16(bs, sc.all), 2);
			acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(isum[j], off)),
						 _mm256_set1_ps(d * xk[j].d[b]), acc[j]);
		}
	}
#pragma GCC unroll 4
	for (int j = 0; j < nx; j++)
		out[j] = kx_hsum_ps(acc[j]);
}

KX_INL void kx_q2k(const struct rn_weight *w, int64_t row, const void *const *x, float *out, const int nx)
{
	const int64_t nb = w->cols / QK_K;
	const uint8_t *wr = (const uint8_t *)w->data + (size_t)row * (size_t)nb * Q2_K_BYTES;
	const __m256i m3 = _mm256_set1_epi8(3);
	const __m128i m4 = _mm_set1_epi8(15);
	struct kx_xk xk[RN_NX_MAX];
	__m256 acc[RN_NX_MAX], accm[RN_NX_MAX];
	kx_xk_init(xk, x, w->cols, nx);
#pragma GCC unroll 4
	for (int j = 0; j < nx; j++)
		acc[j] = accm[j] = _mm256_setzero_ps();

	for (int64_t b = 0; b < nb; b++) {
		const uint8_t *blk = wr + b * Q2_K_BYTES;
		kx_prefetch(blk, Q2_K_BYTES);
		const float d = kx_f16(blk + Q2_K_D);
		const float dmin = kx_f16(blk + Q2_K_DMIN);
		const __m128i raw = _mm_loadu_si128((const __m128i *)(blk + Q2_K_SCALES));
		const struct kx_sc16 sc = kx_sc16_make(_mm_and_si128(raw, m4));
		const __m256i mn16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(raw, 4), m4));
		__m256i isum[RN_NX_MAX];
#pragma GCC unroll 4
		for (int j = 0; j < nx; j++)
			isum[j] = _mm256_setzero_si256();
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++) {
			__m256i q = _mm256_loadu_si256((const __m256i *)(blk + Q2_K_QS + 32 * h));
#pragma GCC unroll 4
			for (int i = 0; i < 4; i++) {
				__m256i wq = _mm256_and_si256(_mm256_srli_epi16(q, 2 * i), m3);
				__m256i s = kx_sc16_group(&sc, 4 * h + i);
#pragma GCC unroll 4
				for (int j = 0; j < nx; j++) {
					__m256i xv = _mm256_loadu_si256(
						(const __m256i *)(xk[j].q + b * QK_K + 128 * h + 32 * i));
					isum[j] = kx_dot_i16(isum[j], _mm256_maddubs_epi16(wq, xv), s);
				}
			}
		}
#pragma GCC unroll 4
		for (int j = 0; j < nx; j++) {
			const float dx = xk[j].d[b];
			__m256i bs = _mm256_loadu_si256((const __m256i *)(xk[j].bs + b * 16));
			acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[j]), _mm256_set1_ps(d * dx), acc[j]);
			accm[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(bs, mn16)),
						  _mm256_set1_ps(dmin * dx), accm[j]);
		}
	}
#pragma GCC unroll 4
	for (int j = 0; j < nx; j++)
		out[j] = kx_hsum_ps(acc[j]) - kx_hsum_ps(accm[j]);
}

/* ---------------------------------------------------------------------------------------------- float types */

KX_INL __m256 kx_load_w8(const uint8_t *p, const int type)
{
	if (type == RN_MM_F32)
		return _mm256_loadu_ps((const float *)p);
	__m128i h = _mm_loadu_si128((const __m128i *)p);
	if (type == RN_MM_F16)
		return _mm256_cvtph_ps(h);
	return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

KX_INL float kx_load_w1(const uint8_t *p, const int type)
{
	float v;
	if (type == RN_MM_F32)
		memcpy(&v, p, 4);
	else if (type == RN_MM_F16)
		v = rn_f16_to_f32(rn_load_u16(p));
	else
		v = rn_bf16_to_f32(rn_load_u16(p));
	return v;
}

KX_INL void kx_float(const struct rn_weight *w, int64_t row, const void *const *x, float *out, const int nx,
		     const int type)
{
	/* nx = 1 needs several independent FMA chains to hide the FMA latency; larger nx has them already */
	enum { U = 4 };
	const int units = nx == 1 ? 4 : nx == 2 ? 2 : 1;
	const int es = type == RN_MM_F32 ? 4 : 2;
	const int64_t n = w->cols;
	const uint8_t *wr = (const uint8_t *)w->data + (size_t)row * (size_t)n * (size_t)es;
	const float *xf[RN_NX_MAX];
	__m256 acc[RN_NX_MAX][U];
#pragma GCC unroll 4
	for (int j = 0; j < nx; j++) {
		xf[j] = x[j];
#pragma GCC unroll 4
		for (int u = 0; u < U; u++)
			acc[j][u] = _mm256_setzero_ps();
	}
	int64_t c = 0;
	for (; c + 8 * units <= n; c += 8 * units) {
#pragma GCC unroll 4
		for (int u = 0; u < units; u++) {
			__m256 wv = kx_load_w8(wr + (c + 8 * u) * es, type);
#pragma GCC unroll 4
			for (int j = 0; j < nx; j++)
				acc[j][u] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(xf[j] + c + 8 * u), acc[j][u]);
		}
	}
	for (; c + 8 <= n; c += 8) {
		__m256 wv = kx_load_w8(wr + c * es, type);
		for (int j = 0; j < nx; j++)
			acc[j][0] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(xf[j] + c), acc[j][0]);
	}
	float tail[RN_NX_MAX] = { 0 };
	for (; c < n; c++) {
		float v = kx_load_w1(wr + c * es, type);
		for (int j = 0; j < nx; j++)
			tail[j] += v * xf[j][c];
	}
#pragma GCC unroll 4
	for (int j = 0; j < nx; j++) {
		__m256 s = _mm256_add_ps(_mm256_add_ps(acc[j][0], acc[j][1]), _mm256_add_ps(acc[j][2], acc[j][3]));
		out[j] = kx_hsum_ps(s) + tail[j];
	}
}

/* 16 E4M3 bytes -> 16 floats (each value / 256; see kernels.h). */
KX_INL void kx_e4m3x16(const uint8_t *p, __m256 *lo, __m256 *hi)
{
	__m256i v = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)p));
	__m256i h = _mm256_or_si256(_mm256_and_si256(_mm256_slli_epi16(v, 7), _mm256_set1_epi16(0x3f80)),
				    _mm256_and_si256(_mm256_slli_epi16(v, 8), _mm256_set1_epi16((short)0x8000)));
	*lo = _mm256_cvtph_ps(_mm256_castsi256_si128(h));
	*hi = _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1));
}

KX_INL void kx_fp8(const struct rn_weight *w, int64_t row, const void *const *x, float *out, const int nx)
{
	const int64_t n = w->cols, n_tc = (n + RN_FP8_TILE - 1) / RN_FP8_TILE;
	const uint8_t *wr = (const uint8_t *)w->data + (size_t)row * (size_t)n;
	const float *xf[RN_NX_MAX];
	__m256 acc[RN_NX_MAX];
	float tail[RN_NX_MAX] = { 0 };
#pragma GCC unroll 4
	for (int j = 0; j < nx; j++) {
		xf[j] = x[j];
		acc[j] = _mm256_setzero_ps();
	}
	for (int64_t tc = 0; tc < n_tc; tc++) {
		const int64_t c0 = tc * RN_FP8_TILE, c1 = c0 + RN_FP8_TILE < n ? c0 + RN_FP8_TILE : n;
		const float s = rn_fp8_scale(w->scale, n_tc, row / RN_FP8_TILE, tc) * 256.0f;
		__m256 t0[RN_NX_MAX], t1[RN_NX_MAX];
		float part[RN_NX_MAX] = { 0 };
#pragma GCC unroll 4
		for (int j = 0; j < nx; j++)
			t0[j] = t1[j] = _mm256_setzero_ps();
		int64_t c = c0;
		for (; c + 16 <= c1; c += 16) {
			__m256 lo, hi;
			kx_e4m3x16(wr + c, &lo, &hi);
#pragma GCC unroll 4
			for (int j = 0; j < nx; j++) {
				t0[j] = _mm256_fmadd_ps(lo, _mm256_loadu_ps(xf[j] + c), t0[j]);
				t1[j] = _mm256_fmadd_ps(hi, _mm256_loadu_ps(xf[j] + c + 8), t1[j]);
			}
		}
		for (; c < c1; c++) {
			float v = rn_f16_to_f32(rn_e4m3_to_f16_scaled(wr[c]));
			for (int j = 0; j < nx; j++)
				part[j] += v * xf[j][c];
		}
#pragma GCC unroll 4
		for (int j = 0; j < nx; j++) {
			acc[j] = _mm256_fmadd_ps(_mm256_add_ps(t0[j], t1[j]), _mm256_set1_ps(s), acc[j]);
			tail[j] += part[j] * s;
		}
	}
#pragma GCC unroll 4
	for (int j = 0; j < nx; j++)
		out[j] = kx_hsum_ps(acc[j]) + tail[j];
}

/* ---------------------------------------------------------------------------------------------- tables */

/* The table entries: the row loop around one row-against-nx-activations body (inlined, so the activation
 * set-up is hoisted out of the loop). */
#define KX_DEFINE_NX_ONE(name, call, nx)                                                                  \
	KX_FN void name##_##nx(const struct rn_weight *w, int64_t row0, int64_t row1, const void *const *x,   \
			       float *y, int64_t ldy)                                                    \
	{                                                                                                \
		for (int64_t r = row0; r < row1; r++) {                                                  \
			float o[RN_NX_MAX];                                                              \
			call(nx);                                                                        \
			for (int j = 0; j < nx; j++)                                                     \
				y[j * ldy + r] = o[j];                                                   \
		}                                                                                        \
	}
#define KX_DEFINE_NX(name, call)                                                                         \
	KX_DEFINE_NX_ONE(name, call, 1)                                                                  \
	KX_DEFINE_NX_ONE(name, call, 2)                                                                  \
	KX_DEFINE_NX_ONE(name, call, 3)                                                                  \
	KX_DEFINE_NX_ONE(name, call, 4)

#define KX_CALL_F32(nx) kx_float(w, r, x, o, nx, RN_MM_F32)
#define KX_CALL_F16(nx) kx_float(w, r, x, o, nx, RN_MM_F16)
#define KX_CALL_BF16(nx) kx_float(w, r, x, o, nx, RN_MM_BF16)
#define KX_CALL_Q4_0(nx) kx_legacy(w, r, x, o, nx, RN_MM_Q4_0)
#define KX_CALL_Q4_1(nx) kx_legacy(w, r, x, o, nx, RN_MM_Q4_1)
#define KX_CALL_Q5_0(nx) kx_legacy(w, r, x, o, nx, RN_MM_Q5_0)
#define KX_CALL_Q5_1(nx) kx_legacy(w, r, x, o, nx, RN_MM_Q5_1)
#define KX_CALL_Q8_0(nx) kx_legacy(w, r, x, o, nx, RN_MM_Q8_0)
#define KX_CALL_Q2_K(nx) kx_q2k(w, r, x, o, nx)
#define KX_CALL_Q3_K(nx) kx_q3k(w, r, x, o, nx)
#define KX_CALL_Q4_K(nx) kx_q4k_q5k(w, r, x, o, nx, 0)
#define KX_CALL_Q5_K(nx) kx_q4k_q5k(w, r, x, o, nx, 1)
#define KX_CALL_Q6_K(nx) kx_q6k(w, r, x, o, nx)
#define KX_CALL_FP8(nx) kx_fp8(w, r, x, o, nx)

KX_DEFINE_NX(kx_f32, KX_CALL_F32)
KX_DEFINE_NX(kx_f16, KX_CALL_F16)
KX_DEFINE_NX(kx_bf16, KX_CALL_BF16)
KX_DEFINE_NX(kx_q4_0, KX_CALL_Q4_0)
KX_DEFINE_NX(kx_q4_1, KX_CALL_Q4_1)
KX_DEFINE_NX(kx_q5_0, KX_CALL_Q5_0)
KX_DEFINE_NX(kx_q5_1, KX_CALL_Q5_1)
KX_DEFINE_NX(kx_q8_0, KX_CALL_Q8_0)
KX_DEFINE_NX(kx_q2_k, KX_CALL_Q2_K)
KX_DEFINE_NX(kx_q3_k, KX_CALL_Q3_K)
KX_DEFINE_NX(kx_q4_k, KX_CALL_Q4_K)
KX_DEFINE_NX(kx_q5_k, KX_CALL_Q5_K)
KX_DEFINE_NX(kx_q6_k, KX_CALL_Q6_K)
KX_DEFINE_NX(kx_fp8, KX_CALL_FP8)

/* The unpacked (prefill) entries of the legacy formats. */
#define KX_DEFINE_UNPACKED(name, type)                                                                   \
	KX_FN void name##_unpack(const struct rn_weight *w, int64_t row0, int64_t row1, uint8_t *dst,       \
				 size_t stride)                                                          \
	{                                                                                                \
		kx_legacy_unpack_rows(w, row0, row1, dst, stride, type);                                 \
	}                                                                                                \
	KX_FN void name##_u4(const struct rn_weight *w, const uint8_t *ubuf, size_t stride, int64_t n_rows,    \
			     const void *const *x, float *y, int64_t ldy)                                \
	{                                                                                                \
		kx_legacy_unpacked(w, ubuf, stride, n_rows, x, y, ldy, 4, type);                         \
	}
KX_DEFINE_UNPACKED(kx_q4_0, RN_MM_Q4_0)
KX_DEFINE_UNPACKED(kx_q4_1, RN_MM_Q4_1)
KX_DEFINE_UNPACKED(kx_q5_0, RN_MM_Q5_0)
KX_DEFINE_UNPACKED(kx_q5_1, RN_MM_Q5_1)
KX_DEFINE_UNPACKED(kx_q8_0, RN_MM_Q8_0)

#define KX_ROW(name) { name##_1, name##_2, name##_3, name##_4 }

static const struct rn_kernel_set kx_set = {
	.isa = KX_ISA,
	.dot = {
		[KS_F32] = KX_ROW(kx_f32),
		[KS_F16] = KX_ROW(kx_f16),
		[KS_BF16] = KX_ROW(kx_bf16),
		[KS_Q4_0] = KX_ROW(kx_q4_0),
		[KS_Q4_1] = KX_ROW(kx_q4_1),
		[KS_Q5_0] = KX_ROW(kx_q5_0),
		[KS_Q5_1] = KX_ROW(kx_q5_1),
		[KS_Q8_0] = KX_ROW(kx_q8_0),
		[KS_Q2_K] = KX_ROW(kx_q2_k),
		[KS_Q3_K] = KX_ROW(kx_q3_k),
		[KS_Q4_K] = KX_ROW(kx_q4_k),
		[KS_Q5_K] = KX_ROW(kx_q5_k),
		[KS_Q6_K] = KX_ROW(kx_q6_k),
		[KS_FP8] = KX_ROW(kx_fp8),
	},
	.unpack = {
		[KS_Q4_0] = kx_q4_0_unpack,
		[KS_Q4_1] = kx_q4_1_unpack,
		[KS_Q5_0] = kx_q5_0_unpack,
		[KS_Q5_1] = kx_q5_1_unpack,
		[KS_Q8_0] = kx_q8_0_unpack,
	},
	.dot_unpacked4 = {
		[KS_Q4_0] = kx_q4_0_u4,
		[KS_Q4_1] = kx_q4_1_u4,
		[KS_Q5_0] = kx_q5_0_u4,
		[KS_Q5_1] = kx_q5_1_u4,
		[KS_Q8_0] = kx_q8_0_u4,
	},
	.quant_q8_32 = kx_quant_q8_32,
	.quant_q8_256 = kx_quant_q8_256,
};

const struct rn_kernel_set *KX_EXPORT(void)
{
	return &kx_set;
}
