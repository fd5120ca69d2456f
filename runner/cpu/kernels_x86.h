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
 * end of the matrix is harmless. The formats that take more instructions per byte than Q8_0 read further
 * ahead: measured on Zen 3 with 2 threads (tests/cpu/bench_matmul, weights beyond the L3 cache), 2048 bytes
 * gives Q5_0 +8 % and Q4_K +15 % against 1024, while Q8_0 loses 7 % with it. */
#ifndef KX_PREFETCH_AHEAD /* -D for experiments */
#define KX_PREFETCH_AHEAD 2048
#endif
#ifndef KX_PREFETCH_AHEAD_Q8_0
#define KX_PREFETCH_AHEAD_Q8_0 1024
#endif

KX_INL void kx_prefetch_at(const uint8_t *p, const int bytes, const int ahead)
{
	for (int o = 0; o < bytes; o += 64)
		_mm_prefetch((const char *)(p + ahead + o), _MM_HINT_T0);
}

KX_INL void kx_prefetch(const uint8_t *p, const int bytes)
{
	kx_prefetch_at(p, bytes, KX_PREFETCH_AHEAD);
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

/* Byte i = 0xFF when bit i of qh is set, else 0: each byte of qh spread over 8 bytes, one bit tested in each. */
KX_INL __m256i kx_bits32_mask(uint32_t qh)
{
	const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2,
						2, 3, 3, 3, 3, 3, 3, 3, 3);
	const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
	__m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)qh), spread);
	return _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
}

/* Byte i = 0x10 when bit i of qh is set, else 0. */
KX_INL __m256i kx_bits32(uint32_t qh)
{
	return _mm256_and_si256(kx_bits32_mask(qh), _mm256_set1_epi8(0x10));
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

/* The legacy formats are computed exactly as ggml's x86 (AVX2) dot products compute them, so that orun's
 * results equal llama.cpp's to the bit (llama.cpp's llamafile GEMM for Q4_0/Q5_0/Q8_0 batches has the same
 * per-block arithmetic):
 *   - the weight block is unpacked to its signed value (q - 8, q - 16, or q for Q8_0) or, for the "+ m"
 *     formats, to the unsigned q;
 *   - 8 int32 lanes hold the exact integer dot products of 4 consecutive elements (lane k: elements 4k..4k+3);
 *   - per block, acc = fma(float(lanes), d_w * d_x, acc), blocks in order (one 8-lane f32 chain per row);
 *   - the "+ m" formats add m_w * s_x (s_x = f16(d_x * sum q_x)) into one scalar chain, summs = fma(m, s, summs),
 *     as GCC contracts ggml's `summs += m * s`;
 *   - result = hsum(acc) + summs, hsum = ((a0+a4) + (a2+a6)) + ((a1+a5) + (a3+a7)).
 * Rows are independent FMA chains, so the kernels work on several weight rows at once (decode) or several
 * activation rows at once (batches) to hide the FMA latency; neither changes a row's arithmetic. */

/* The nibbles: the 16 bytes go to both 128-bit halves (a load-port broadcast) and the high half is shifted
 * right by 4 within each dword, so one AND keeps the low nibbles (elements 0..15) in the low half and the high
 * nibbles (16..31) in the high. */
KX_INL __m256i kx_nibbles32(const uint8_t *qs)
{
	__m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs));
	return _mm256_and_si256(_mm256_srlv_epi32(v, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)),
				_mm256_set1_epi8(15));
}

/* Byte i = 0xF0 when bit i of qh is clear, else 0: or-ed into a nibble it gives the signed q - 16 of Q5_0. */
KX_INL __m256i kx_bits32_neg(uint32_t qh)
{
	return _mm256_andnot_si256(kx_bits32_mask(qh), _mm256_set1_epi8((char)0xF0));
}

/* The plain legacy format of a type: an R8 type's base (runner/cpu/kernels.h), else the type itself. */
KX_INL int kx_base(const int type)
{
	return rn_r8_base(type) ? rn_r8_base(type) : type;
}

KX_INL int kx_legacy_signed(const int type)
{
	const int base = kx_base(type);
	return base == RN_MM_Q4_0 || base == RN_MM_Q5_0 || base == RN_MM_Q8_0;
}

KX_INL int kx_legacy_has_min(const int type)
{
	return rn_legacy_has_min(kx_base(type));
}

/* The unsigned q of a Q4_0/Q4_1/Q5_0/Q5_1 block (the offset of Q4_0/Q5_0 not applied). */
KX_INL __m256i kx_legacy_unpack_u(const uint8_t *blk, const int type)
{
	switch (type) {
	case RN_MM_Q4_0:
		return kx_nibbles32(blk + 2);
	case RN_MM_Q4_1:
		return kx_nibbles32(blk + 4);
	case RN_MM_Q5_0:
		return _mm256_or_si256(kx_nibbles32(blk + 6), kx_bits32(rn_load_u32(blk + 2)));
	default:
		return _mm256_or_si256(kx_nibbles32(blk + 8), kx_bits32(rn_load_u32(blk + 4)));
	}
}

/* The value of a block as the sign trick uses it: signed q - off for Q4_0/Q5_0, q for Q8_0, unsigned q for the
 * "+ m" formats. */
KX_INL __m256i kx_legacy_unpack(const uint8_t *blk, const int type)
{
	switch (type) {
	case RN_MM_Q4_0:
		return _mm256_sub_epi8(kx_nibbles32(blk + 2), _mm256_set1_epi8(8));
	case RN_MM_Q4_1:
		return kx_nibbles32(blk + 4);
	case RN_MM_Q5_0:
		return _mm256_or_si256(kx_nibbles32(blk + 6), kx_bits32_neg(rn_load_u32(blk + 2)));
	case RN_MM_Q5_1:
		return _mm256_or_si256(kx_nibbles32(blk + 8), kx_bits32(rn_load_u32(blk + 4)));
	default:
		return _mm256_loadu_si256((const __m256i *)(blk + 2));
	}
}

/* The 8 lanes of one block against 32 activation bytes: aw = |w| for the signed formats (sign trick:
 * |w| * sign(x, w) = w * x with an unsigned left operand), aw = w for the unsigned ones. */
KX_INL __m256 kx_legacy_lanes(__m256i wq, __m256i aw, const int8_t *xq, const int type)
{
	__m256i xv = _mm256_loadu_si256((const __m256i *)xq);
	if (kx_legacy_signed(type))
		xv = _mm256_sign_epi8(xv, wq);
	return _mm256_cvtepi32_ps(kx_dot_u8s8(_mm256_setzero_si256(), aw, xv));
}

KX_INL int kx_legacy_bytes(const int type)
{
	return rn_legacy_bytes(kx_base(type));
}

/* The activation side of a legacy dot: int8 q, scales d, and sm (f16(d * sum q), the "+ m" term's factor);
 * for decode with Q4_0 / Q5_0 also xo, each block's offset term kx_legacy_xoff (else NULL). */
struct kx_xl {
	const int8_t *q;
	const float *d, *sm;
	const __m256i *xo;
};

KX_INL void kx_xl_init(struct kx_xl *xl, const void *const *x, int64_t cols, const int nx)
{
#pragma GCC unroll 4
	for (int j = 0; j < nx; j++) {
		xl[j].q = x[j];
		xl[j].d = rn_act_q8_d(x[j], cols);
		xl[j].sm = rn_act_q8_32_sm(x[j], cols);
		xl[j].xo = NULL;
	}
}

KX_INL float kx_fmaf(float a, float b, float c)
{
	return _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(b), _mm_set_ss(c)));
}

/* The offset term of one activation block for the unsigned q of Q4_0/Q5_0: off * x summed in int16 pairs
 * (AVX2: subtracted before vpmaddwd) or, with VNNI, in negated int32 lanes (the vpdpbusd accumulator). */
KX_INL __m256i kx_legacy_xoff(__m256i xv, const int off)
{
#if KX_VNNI
	return _mm256_sub_epi32(_mm256_setzero_si256(),
				kx_dot_u8s8(_mm256_setzero_si256(), _mm256_set1_epi8((char)off), xv));
#else
	return _mm256_maddubs_epi16(_mm256_set1_epi8((char)off), xv);
#endif
}

/* The int32 lanes of one block of an offset format from its unsigned q (wq) and the activations (xv), xo being
 * kx_legacy_xoff(xv, off) (zero when off is 0). */
KX_INL __m256i kx_legacy_lanes_u(__m256i wq, __m256i xv, __m256i xo, const int off)
{
#if KX_VNNI
	(void)off;
	return kx_dot_u8s8(xo, wq, xv);
#else
	__m256i p = _mm256_maddubs_epi16(wq, xv);
	if (off)
		p = _mm256_sub_epi16(p, xo);
	return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
#endif
}

/* Decode, one group of T (<= 8) blocks starting at block b of NR weight rows (row bytes rb apart) against one
 * activation row. The per-block factors d_w * d_x (and, for the "+ m" formats, m_w) are built for the group in
 * vectors (the f16 scales gathered through general-purpose registers) and kept in a small aligned array that the
 * per-block step broadcasts from (a load, no shuffle); the product d_w * d_x is one correctly rounded f32
 * multiply either way, so this changes no bit. The integer lanes of the offset formats are formed from the
 * unsigned q: q*x summed in int16 pairs minus off*x summed the same way (computed once per block for all NR
 * rows; both exact in int16), then widened, which gives the same int32 lanes as (q - off) * x at three
 * instructions fewer per block than the sign trick. Q8_0 keeps the sign trick. */
KX_INL void kx_legacy_dgroup(const uint8_t *raw, size_t rb, int64_t b, const int T, const struct kx_xl *xl,
			     __m256 *acc, __m128 *summs, const int NR, const int type)
{
	const int bytes = kx_legacy_bytes(type), has_min = kx_legacy_has_min(type);
	const int off = rn_legacy_off(kx_base(type));
	float sc[4][8] __attribute__((aligned(32)));
	__m256 dx;
	if (T == 8) {
		dx = _mm256_loadu_ps(xl->d + b);
	} else {
		const __m256i live = _mm256_cmpgt_epi32(_mm256_set1_epi32(T), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
		dx = _mm256_maskload_ps(xl->d + b, live);
	}
#pragma GCC unroll 4
	for (int i = 0; i < NR; i++) {
		const uint8_t *g = raw + (size_t)i * rb + (size_t)b * (size_t)bytes;
		kx_prefetch_at(g, T * bytes, type == RN_MM_Q8_0 ? KX_PREFETCH_AHEAD_Q8_0 : KX_PREFETCH_AHEAD);
		__m256 dw = T == 8 ? kx_gather_f16x8(g, (size_t)bytes) : kx_gather_f16_n(g, (size_t)bytes, T);
		_mm256_store_ps(sc[i], _mm256_mul_ps(dw, dx));
	}
	/* the broadcasts below address sc through one opaque pointer: left to itself GCC hoists the 8 * NR element
	 * addresses out of the caller's block loop, where they take (or spill) a register each */
	const float *scp = &sc[0][0];
	__asm__("" : "+r"(scp));
#pragma GCC unroll 8
	for (int k = 0; k < T; k++) {
		const __m256i xv = _mm256_loadu_si256((const __m256i *)(xl->q + (b + k) * QK_LEGACY));
		__m256i xo = _mm256_setzero_si256();
		if (off)
			xo = _mm256_load_si256(xl->xo + b + k);
		if (has_min) {
			/* lane i: row i's chain summs = fma(m_w, sm_x, summs), the m of the NR rows gathered in a GPR */
			uint64_t m = 0;
#pragma GCC unroll 4
			for (int i = 0; i < NR; i++)
				m |= (uint64_t)rn_load_u16(raw + (size_t)i * rb + (size_t)(b + k) * (size_t)bytes + 2) << (16 * i);
			__asm__("" : "+r"(m));
			__m128 mv = _mm_cvtph_ps(_mm_cvtsi64_si128((long long)m));
			*summs = _mm_fmadd_ps(mv, _mm_broadcast_ss(xl->sm + b + k), *summs);
		}
#pragma GCC unroll 4
		for (int i = 0; i < NR; i++) {
			const uint8_t *blk = raw + (size_t)i * rb + (size_t)(b + k) * (size_t)bytes;
			__m256i lanes;
			if (type == RN_MM_Q8_0) {
				__m256i wq = _mm256_loadu_si256((const __m256i *)(blk + 2));
				lanes = kx_dot_u8s8(_mm256_setzero_si256(), _mm256_sign_epi8(wq, wq), _mm256_sign_epi8(xv, wq));
			} else {
				lanes = kx_legacy_lanes_u(kx_legacy_unpack_u(blk, type), xv, xo, off);
			}
			acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(lanes), _mm256_broadcast_ss(scp + 8 * i + k), acc[i]);
		}
	}
}

/* The R8 formats (runner/cpu/kernels.h). Block k's fifth bits as 0x10 bytes: bit k of h moved to bit 4 by a
 * 16-bit shift (a shift of at most 4 keeps every byte's bit 4 inside its own byte) and masked. */
KX_INL __m256i kx_r8_hbits(__m256i h, const int k)
{
	const __m256i v = k < 4 ? _mm256_slli_epi16(h, 4 - k) : k > 4 ? _mm256_srli_epi16(h, k - 4) : h;
	return _mm256_and_si256(v, _mm256_set1_epi8(0x10));
}

/* The unsigned q of block k of the R8 group at g of format base, h being the group's fifth-bit bytes (Q5_0,
 * Q5_1; unused otherwise). */
KX_INL __m256i kx_r8_unpack_u(const uint8_t *g, __m256i h, const int k, const int base)
{
	__m256i qs = _mm256_loadu_si256((const __m256i *)(g + rn_r8_qs_at(base) + 32 * (k / 2)));
	if (k & 1)
		qs = _mm256_srli_epi16(qs, 4);
	qs = _mm256_and_si256(qs, _mm256_set1_epi8(15));
	return rn_legacy_five(base) ? _mm256_or_si256(qs, kx_r8_hbits(h, k)) : qs;
}

/* Block b of an R8 row of nb blocks of format base, as kx_legacy_unpack gives a plain block (signed q - off for
 * Q4_0/Q5_0, unsigned q for Q4_1/Q5_1); *d its scale, *m its min (Q4_1/Q5_1). */
KX_INL __m256i kx_r8_block(const uint8_t *row, int64_t nb, int64_t b, float *d, float *m, const int base)
{
	const int bytes = rn_legacy_bytes(base);
	if (b >= nb / R8_GROUP * R8_GROUP) {
		const uint8_t *blk = row + (size_t)b * (size_t)bytes;
		*d = kx_f16(blk);
		*m = rn_legacy_has_min(base) ? kx_f16(blk + 2) : 0.0f;
		return kx_legacy_unpack(blk, base);
	}
	const uint8_t *g = row + (size_t)(b / R8_GROUP) * (size_t)(R8_GROUP * bytes);
	const int k = (int)(b % R8_GROUP);
	*d = kx_f16(g + 2 * k);
	*m = rn_legacy_has_min(base) ? kx_f16(g + R8_M_AT + 2 * k) : 0.0f;
	const __m256i h = _mm256_loadu_si256((const __m256i *)(g + rn_r8_h_at(base)));
	return _mm256_sub_epi8(kx_r8_unpack_u(g, h, k, base), _mm256_set1_epi8((char)rn_legacy_off(base)));
}

/* Decode, one full R8 group (blocks b .. b+7) of NR rows of format base: as kx_legacy_dgroup with T = 8 for the
 * plain format, the same integer lanes and float operations in the same order, with the scales (and mins) of
 * the group loaded at once and the unsigned q built in 1.5 instructions a block (3.5 with fifth bits) where the
 * plain format takes 2 (7). */
KX_INL void kx_r8_dgroup(const uint8_t *raw, size_t rb, int64_t b, const struct kx_xl *xl, __m256 *acc,
			 __m128 *summs, const int NR, const int base)
{
	const int bytes = rn_legacy_bytes(base), off = rn_legacy_off(base), has_min = rn_legacy_has_min(base);
	float sc[4][8] __attribute__((aligned(32))), mn[4][8] __attribute__((aligned(32)));
	__m256i h[4];
	const __m256 dx = _mm256_loadu_ps(xl->d + b);
#pragma GCC unroll 4
	for (int i = 0; i < NR; i++) {
		const uint8_t *g = raw + (size_t)i * rb + (size_t)b * (size_t)bytes;
		kx_prefetch_at(g, R8_GROUP * bytes, KX_PREFETCH_AHEAD);
		const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)g));
		_mm256_store_ps(sc[i], _mm256_mul_ps(dw, dx));
		if (has_min)
			_mm256_store_ps(mn[i], _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(g + R8_M_AT))));
		h[i] = rn_legacy_five(base) ? _mm256_loadu_si256((const __m256i *)(g + rn_r8_h_at(base)))
					    : _mm256_setzero_si256();
	}
	const float *scp = &sc[0][0]; /* as kx_legacy_dgroup */
	__asm__("" : "+r"(scp));
#pragma GCC unroll 8
	for (int k = 0; k < R8_GROUP; k++) {
		const __m256i xv = _mm256_loadu_si256((const __m256i *)(xl->q + (b + k) * QK_LEGACY));
		__m256i xo = _mm256_setzero_si256();
		if (off)
			xo = _mm256_load_si256(xl->xo + b + k);
		if (has_min) {
			/* lane i: row i's chain summs = fma(m_w, sm_x, summs), as kx_legacy_dgroup */
			const __m128 mv = NR == 1 ? _mm_load_ss(&mn[0][k])
						  : _mm_setr_ps(mn[0][k], NR > 1 ? mn[1][k] : 0.0f, NR > 2 ? mn[2][k] : 0.0f,
								NR > 3 ? mn[3][k] : 0.0f);
			*summs = _mm_fmadd_ps(mv, _mm_broadcast_ss(xl->sm + b + k), *summs);
		}
#pragma GCC unroll 4
		for (int i = 0; i < NR; i++) {
			const uint8_t *g = raw + (size_t)i * rb + (size_t)b * (size_t)bytes;
			const __m256i lanes = kx_legacy_lanes_u(kx_r8_unpack_u(g, h[i], k, base), xv, xo, off);
			acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(lanes), _mm256_broadcast_ss(scp + 8 * i + k), acc[i]);
		}
	}
}

/* Decode: NR raw weight rows (rb bytes apart) against one activation row (for Q4_0 / Q5_0 with xl->xo), their
 * results at out[i * ostride]: groups of 8 blocks, then the last 1..7 as groups of 4, 2 and 1, each compiled for
 * its size (rows of 576 or 896 columns spend a good part of their time there). Blocks stay in order within each
 * row's chain. */
KX_INL void kx_legacy_rows1(const uint8_t *raw, size_t rb, int64_t nb, const struct kx_xl *xl, float *out,
			    int64_t ostride, const int NR, const int type)
{
	__m256 acc[4];
	__m128 summs = _mm_setzero_ps();
#pragma GCC unroll 4
	for (int i = 0; i < NR; i++)
		acc[i] = _mm256_setzero_ps();
	int64_t b = 0;
	for (; b + 8 <= nb; b += 8) {
		if (rn_r8_base(type))
			kx_r8_dgroup(raw, rb, b, xl, acc, &summs, NR, rn_r8_base(type));
		else
			kx_legacy_dgroup(raw, rb, b, 8, xl, acc, &summs, NR, type);
	}
	const int tt = kx_base(type); /* an R8 row ends in plain blocks */
	if (nb - b >= 4) {
		kx_legacy_dgroup(raw, rb, b, 4, xl, acc, &summs, NR, tt);
		b += 4;
	}
	if (nb - b >= 2) {
		kx_legacy_dgroup(raw, rb, b, 2, xl, acc, &summs, NR, tt);
		b += 2;
	}
	if (nb - b >= 1)
		kx_legacy_dgroup(raw, rb, b, 1, xl, acc, &summs, NR, tt);
	float sm[4] __attribute__((aligned(16)));
	_mm_store_ps(sm, summs);
#pragma GCC unroll 4
	for (int i = 0; i < NR; i++)
		out[i * ostride] = kx_legacy_has_min(type) ? kx_hsum_ps(acc[i]) + sm[i] : kx_hsum_ps(acc[i]);
}

/* A legacy weight row unpacked once by kx_legacy_unpack_rows for many activation rows (prefill): w[cols]
 * unpacked bytes, for the signed formats then |w|[cols], then f32 d[cols/32] and, for Q4_1/Q5_1, f32 m[cols/32]. */
struct kx_lrow {
	const uint8_t *uq, *uaq;
	const float *ud, *um;
};

/* One weight row (raw, or unpacked when wrow is not NULL) against nx activation rows. */
KX_INL void kx_legacy_row(const uint8_t *raw, const struct kx_lrow *wrow, int64_t nb, const struct kx_xl *xl,
			  float *out, const int nx, const int type)
{
	const int bytes = kx_legacy_bytes(type), has_min = kx_legacy_has_min(type), sgn = kx_legacy_signed(type);
	__m256 acc[RN_NX_MAX];
	float summs[RN_NX_MAX];
#pragma GCC unroll 4
	for (int j = 0; j < nx; j++) {
		acc[j] = _mm256_setzero_ps();
		summs[j] = 0.0f;
	}
	for (int64_t b = 0; b < nb; b++) {
		__m256i wq, aw;
		float dw, mw = 0.0f;
		if (wrow) {
			wq = _mm256_load_si256((const __m256i *)(wrow->uq + b * QK_LEGACY));
			aw = sgn ? _mm256_load_si256((const __m256i *)(wrow->uaq + b * QK_LEGACY)) : wq;
			dw = wrow->ud[b];
			if (has_min)
				mw = wrow->um[b];
		} else if (rn_r8_base(type)) {
			if ((b & 1) == 0)
				_mm_prefetch((const char *)(raw + (size_t)b * (size_t)bytes + KX_PREFETCH_AHEAD), _MM_HINT_T0);
			wq = kx_r8_block(raw, nb, b, &dw, &mw, rn_r8_base(type));
			aw = sgn ? _mm256_sign_epi8(wq, wq) : wq;
		} else {
			const uint8_t *blk = raw + (size_t)b * (size_t)bytes;
			if ((b & 1) == 0)
				_mm_prefetch((const char *)(blk + KX_PREFETCH_AHEAD), _MM_HINT_T0);
			wq = kx_legacy_unpack(blk, type);
			aw = sgn ? _mm256_sign_epi8(wq, wq) : wq;
			dw = kx_f16(blk);
			if (has_min)
				mw = kx_f16(blk + 2);
		}
#pragma GCC unroll 4
		for (int j = 0; j < nx; j++) {
			__m256 f = kx_legacy_lanes(wq, aw, xl[j].q + b * QK_LEGACY, type);
			acc[j] = _mm256_fmadd_ps(f, _mm256_set1_ps(dw * xl[j].d[b]), acc[j]);
			if (has_min)
				summs[j] = kx_fmaf(mw, xl[j].sm[b], summs[j]);
		}
	}
#pragma GCC unroll 4
	for (int j = 0; j < nx; j++)
		out[j] = has_min ? kx_hsum_ps(acc[j]) + summs[j] : kx_hsum_ps(acc[j]);
}

KX_INL void kx_legacy(const struct rn_weight *w, int64_t row, const void *const *x, float *out, const int nx,
		      const int type)
{
	const int64_t nb = w->cols / QK_LEGACY;
	struct kx_xl xl[RN_NX_MAX];
	kx_xl_init(xl, x, w->cols, nx);
	kx_legacy_row((const uint8_t *)w->data + (size_t)row * (size_t)nb * (size_t)kx_legacy_bytes(type), NULL, nb, xl,
		      out, nx, type);
}

/* The legacy decode kernel reads two rows at once, each its own FMA chain (one row's chain, 4 cycles a block, is
 * what limits a core), taken from the two halves of its range so that they are two sequential streams at least
 * this far apart. Zen 3, cache-resident 32-row matrices, best of 8 interleaved runs: Q8_0 2.11 -> 1.28 ns a block,
 * Q5_0_R8 1.66 -> 1.42, Q4_1_R8 1.82 -> 1.35; weights beyond the L3 cache on huge pages, 2 threads
 * (tests/cpu/bench_matmul --huge, 4 interleaved runs): the 151936x896 output matrix Q8_0 13.5-19.3 -> 21.0-23.4
 * GB/s, Q5_0_R8 13.5-17.3 -> 14.1-21.1. Two neighbouring rows read together instead interleave within pages,
 * which the hardware prefetcher does not follow: they stream Q8_0 at half the rate of one row. */
#define KX_DECODE_SPLIT_MIN 4096

/* Blocks of Q4_0 / Q5_0 offset terms kx_legacy_decode keeps on the stack (128 KiB). */
#define KX_XO_MAX 4096

/* Decode entry: rows [row0, row1) against one activation row, row0 + i with row0 + half + i (KX_DECODE_SPLIT_MIN). */
KX_INL void kx_legacy_decode(const struct rn_weight *w, int64_t row0, int64_t row1, const void *const *x, float *y,
			     const int type)
{
	const int64_t nb = w->cols / QK_LEGACY;
	const size_t rb = (size_t)nb * (size_t)kx_legacy_bytes(type);
	struct kx_xl xl;
	kx_xl_init(&xl, x, w->cols, 1);
	const int off = rn_legacy_off(kx_base(type));
	if (off && nb > KX_XO_MAX) {
		/* rows too long for the offset terms on the stack: the general kernel (the same results) */
		for (int64_t r = row0; r < row1; r++)
			kx_legacy_row((const uint8_t *)w->data + (size_t)r * rb, NULL, nb, &xl, y + r, 1, type);
		return;
	}
	/* the offset term of Q4_0 / Q5_0 depends on the activations only: once per call, not once per row (a load
	 * instead of a vpmaddubsw per block; the same values) */
	__m256i xo[off ? nb : 1];
	if (off) {
		for (int64_t b = 0; b < nb; b++)
			xo[b] = kx_legacy_xoff(_mm256_loadu_si256((const __m256i *)(xl.q + b * QK_LEGACY)), off);
		xl.xo = xo;
	}
	const uint8_t *data = w->data;
	const int64_t half = (row1 - row0) / 2;
	int64_t r = row0;
	if ((size_t)half * rb >= KX_DECODE_SPLIT_MIN) {
		for (int64_t i = 0; i < half; i++)
			kx_legacy_rows1(data + (size_t)(row0 + i) * rb, (size_t)half * rb, nb, &xl, y + row0 + i, half, 2,
					type);
		r = row0 + 2 * half;
	}
	for (; r < row1; r++)
		kx_legacy_rows1(data + (size_t)r * rb, rb, nb, &xl, y + r, 1, 1, type);
}

/* Prefill: unpack rows [row0, row1) once into dst (rows of rn_unpacked_row_bytes), for many activation rows. */
KX_INL void kx_legacy_unpack_rows(const struct rn_weight *w, int64_t row0, int64_t row1, uint8_t *dst,
				  size_t stride, const int type)
{
	const int bytes = kx_legacy_bytes(type), has_min = kx_legacy_has_min(type), sgn = kx_legacy_signed(type);
	const int64_t nb = w->cols / QK_LEGACY;
	for (int64_t r = row0; r < row1; r++) {
		const uint8_t *raw = (const uint8_t *)w->data + (size_t)r * (size_t)nb * (size_t)bytes;
		uint8_t *uq = dst + (size_t)(r - row0) * stride;
		uint8_t *uaq = uq + w->cols;
		float *ud = (float *)(uq + w->cols * (sgn ? 2 : 1)), *um = ud + nb;
		for (int64_t b = 0; b < nb; b++) {
			const uint8_t *blk = raw + b * bytes;
			float d, m = 0.0f;
			__m256i wq;
			if (rn_r8_base(type)) {
				wq = kx_r8_block(raw, nb, b, &d, &m, rn_r8_base(type));
			} else {
				wq = kx_legacy_unpack(blk, type);
				d = kx_f16(blk);
				if (has_min)
					m = kx_f16(blk + 2);
			}
			_mm256_store_si256((__m256i *)(uq + b * QK_LEGACY), wq);
			if (sgn)
				_mm256_store_si256((__m256i *)(uaq + b * QK_LEGACY), _mm256_sign_epi8(wq, wq));
			ud[b] = d;
			if (has_min)
				um[b] = m;
		}
	}
}

/* Prefill: rows 0 .. n_rows-1 of an unpacked tile against nx activation rows: y[j * ldy + r]. */
KX_INL void kx_legacy_unpacked(const struct rn_weight *w, const uint8_t *ubuf, size_t stride, int64_t n_rows,
			       const void *const *x, float *y, int64_t ldy, const int nx, const int type)
{
	const int64_t nb = w->cols / QK_LEGACY;
	const int sgn = kx_legacy_signed(type);
	struct kx_xl xl[RN_NX_MAX];
	kx_xl_init(xl, x, w->cols, nx);
	for (int64_t r = 0; r < n_rows; r++) {
		struct kx_lrow wrow;
		wrow.uq = ubuf + (size_t)r * stride;
		wrow.uaq = wrow.uq + w->cols;
		wrow.ud = (const float *)(wrow.uq + w->cols * (sgn ? 2 : 1));
		wrow.um = wrow.ud + nb;
		float o[RN_NX_MAX];
		kx_legacy_row(NULL, &wrow, nb, xl, o, nx, type);
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
	struct kx_xk xk[RN_NX_MAX];
	__m256 acc[RN_NX_MAX];
	__m128 accm[RN_NX_MAX]; /* Q4_K: four lanes of the mins' term */
	float summs[RN_NX_MAX]; /* Q5_K: one chain */
	kx_xk_init(xk, x, w->cols, nx);
#pragma GCC unroll 4
	for (int j = 0; j < nx; j++) {
		acc[j] = _mm256_setzero_ps();
		accm[j] = _mm_setzero_ps();
		summs[j] = 0.0f;
	}

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
		const __m128i mn16 = _mm_cvtepu8_epi16(_mm_srli_si128(scm, 8));
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
			acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[j]), _mm256_set1_ps(d * dx), acc[j]);
			/* the mins' term as ggml's x86 kernels form it: the 16-element sums paired into the 8 sub-block
			 * sums, times the mins in int32 pairs (4 lanes), scaled by -(d_x * dmin) */
			const __m256i bs = _mm256_loadu_si256((const __m256i *)(xk[j].bs + b * 16));
			const __m128i prod = _mm_madd_epi16(
				mn16, _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1)));
			const float nm = -(dx * dmin);
			if (five) {
				__m128i t = _mm_add_epi32(prod, _mm_shuffle_epi32(prod, 0x4e));
				t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xb1));
				const int32_t ip = _mm_cvtsi128_si32(t);
				summs[j] = kx_fmaf(nm, (float)ip, summs[j]);
			} else {
				accm[j] = _mm_fmadd_ps(_mm_set1_ps(nm), _mm_cvtepi32_ps(prod), accm[j]);
			}
		}
	}
#pragma GCC unroll 4
	for (int j = 0; j < nx; j++) {
		if (five) {
			out[j] = kx_hsum_ps(acc[j]) + summs[j];
		} else {
			__m128 m = _mm_add_ps(accm[j], _mm_movehl_ps(accm[j], accm[j]));
			m = _mm_add_ss(m, _mm_movehdup_ps(m));
			out[j] = kx_hsum_ps(acc[j]) + _mm_cvtss_f32(m);
		}
	}
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
	/* four FMA chains per activation row, whatever nx: one row needs them to hide the FMA latency, and the same
	 * chains for every nx keep a row's result independent of the batch it came in (KX_CALL_FLOAT splits nx > 2
	 * into calls of at most two rows: four rows would need 16 accumulators, more than the 16 registers) */
	enum { U = 4 };
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
	for (; c + 8 * U <= n; c += 8 * U) {
#pragma GCC unroll 4
		for (int u = 0; u < U; u++) {
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

#define KX_CALL_FLOAT(nx, type)                                                                          \
	do {                                                                                             \
		if ((nx) <= 2) {                                                                         \
			kx_float(w, r, x, o, nx, type);                                                  \
		} else {                                                                                 \
			kx_float(w, r, x, o, 2, type);                                                   \
			kx_float(w, r, x + 2, o + 2, (nx) - 2, type);                                    \
		}                                                                                        \
	} while (0)
#define KX_CALL_F32(nx) KX_CALL_FLOAT(nx, RN_MM_F32)
#define KX_CALL_F16(nx) KX_CALL_FLOAT(nx, RN_MM_F16)
#define KX_CALL_BF16(nx) KX_CALL_FLOAT(nx, RN_MM_BF16)
#define KX_CALL_Q4_0(nx) kx_legacy(w, r, x, o, nx, RN_MM_Q4_0)
#define KX_CALL_Q4_1(nx) kx_legacy(w, r, x, o, nx, RN_MM_Q4_1)
#define KX_CALL_Q5_0(nx) kx_legacy(w, r, x, o, nx, RN_MM_Q5_0)
#define KX_CALL_Q5_1(nx) kx_legacy(w, r, x, o, nx, RN_MM_Q5_1)
#define KX_CALL_Q8_0(nx) kx_legacy(w, r, x, o, nx, RN_MM_Q8_0)
#define KX_CALL_Q4_0_R8(nx) kx_legacy(w, r, x, o, nx, RN_MM_Q4_0_R8)
#define KX_CALL_Q4_1_R8(nx) kx_legacy(w, r, x, o, nx, RN_MM_Q4_1_R8)
#define KX_CALL_Q5_0_R8(nx) kx_legacy(w, r, x, o, nx, RN_MM_Q5_0_R8)
#define KX_CALL_Q5_1_R8(nx) kx_legacy(w, r, x, o, nx, RN_MM_Q5_1_R8)
#define KX_CALL_Q2_K(nx) kx_q2k(w, r, x, o, nx)
#define KX_CALL_Q3_K(nx) kx_q3k(w, r, x, o, nx)
#define KX_CALL_Q4_K(nx) kx_q4k_q5k(w, r, x, o, nx, 0)
#define KX_CALL_Q5_K(nx) kx_q4k_q5k(w, r, x, o, nx, 1)
#define KX_CALL_Q6_K(nx) kx_q6k(w, r, x, o, nx)
#define KX_CALL_FP8(nx) kx_fp8(w, r, x, o, nx)

KX_DEFINE_NX(kx_f32, KX_CALL_F32)
KX_DEFINE_NX(kx_f16, KX_CALL_F16)
KX_DEFINE_NX(kx_bf16, KX_CALL_BF16)
/* legacy formats: one activation row goes through the four-weight-rows decode kernel */
#define KX_DEFINE_LEGACY(name, call, type)                                                               \
	KX_FN void name##_1(const struct rn_weight *w, int64_t row0, int64_t row1, const void *const *x,     \
			    float *y, int64_t ldy)                                                       \
	{                                                                                                \
		(void)ldy;                                                                               \
		kx_legacy_decode(w, row0, row1, x, y, type);                                             \
	}                                                                                                \
	KX_DEFINE_NX_ONE(name, call, 2)                                                                  \
	KX_DEFINE_NX_ONE(name, call, 3)                                                                  \
	KX_DEFINE_NX_ONE(name, call, 4)
KX_DEFINE_LEGACY(kx_q4_0, KX_CALL_Q4_0, RN_MM_Q4_0)
KX_DEFINE_LEGACY(kx_q4_1, KX_CALL_Q4_1, RN_MM_Q4_1)
KX_DEFINE_LEGACY(kx_q5_0, KX_CALL_Q5_0, RN_MM_Q5_0)
KX_DEFINE_LEGACY(kx_q5_1, KX_CALL_Q5_1, RN_MM_Q5_1)
KX_DEFINE_LEGACY(kx_q8_0, KX_CALL_Q8_0, RN_MM_Q8_0)
KX_DEFINE_LEGACY(kx_q4_0_r8, KX_CALL_Q4_0_R8, RN_MM_Q4_0_R8)
KX_DEFINE_LEGACY(kx_q4_1_r8, KX_CALL_Q4_1_R8, RN_MM_Q4_1_R8)
KX_DEFINE_LEGACY(kx_q5_0_r8, KX_CALL_Q5_0_R8, RN_MM_Q5_0_R8)
KX_DEFINE_LEGACY(kx_q5_1_r8, KX_CALL_Q5_1_R8, RN_MM_Q5_1_R8)
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
KX_DEFINE_UNPACKED(kx_q4_0_r8, RN_MM_Q4_0_R8)
KX_DEFINE_UNPACKED(kx_q4_1_r8, RN_MM_Q4_1_R8)
KX_DEFINE_UNPACKED(kx_q5_0_r8, RN_MM_Q5_0_R8)
KX_DEFINE_UNPACKED(kx_q5_1_r8, RN_MM_Q5_1_R8)

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
		[KS_Q4_0_R8] = KX_ROW(kx_q4_0_r8),
		[KS_Q4_1_R8] = KX_ROW(kx_q4_1_r8),
		[KS_Q5_0_R8] = KX_ROW(kx_q5_0_r8),
		[KS_Q5_1_R8] = KX_ROW(kx_q5_1_r8),
	},
	.unpack = {
		[KS_Q4_0] = kx_q4_0_unpack,
		[KS_Q4_1] = kx_q4_1_unpack,
		[KS_Q5_0] = kx_q5_0_unpack,
		[KS_Q5_1] = kx_q5_1_unpack,
		[KS_Q8_0] = kx_q8_0_unpack,
		[KS_Q4_0_R8] = kx_q4_0_r8_unpack,
		[KS_Q4_1_R8] = kx_q4_1_r8_unpack,
		[KS_Q5_0_R8] = kx_q5_0_r8_unpack,
		[KS_Q5_1_R8] = kx_q5_1_r8_unpack,
	},
	.dot_unpacked4 = {
		[KS_Q4_0] = kx_q4_0_u4,
		[KS_Q4_1] = kx_q4_1_u4,
		[KS_Q5_0] = kx_q5_0_u4,
		[KS_Q5_1] = kx_q5_1_u4,
		[KS_Q8_0] = kx_q8_0_u4,
		[KS_Q4_0_R8] = kx_q4_0_r8_u4,
		[KS_Q4_1_R8] = kx_q4_1_r8_u4,
		[KS_Q5_0_R8] = kx_q5_0_r8_u4,
		[KS_Q5_1_R8] = kx_q5_1_r8_u4,
	},
	.quant_q8_32 = kx_quant_q8_32,
	.quant_q8_256 = kx_quant_q8_256,
};

const struct rn_kernel_set *KX_EXPORT(void)
{
	return &kx_set;
}
