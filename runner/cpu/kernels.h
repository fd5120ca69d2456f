/* runner/cpu/kernels.h — internal to runner/cpu: weight block layouts, activation row layout, kernel tables.
 *
 * Every quantized format is described here once, from its definition (ggml's block structs and reference
 * dequantizers); the scalar and SIMD kernels both follow these comments. Not a public header: the engine uses
 * runner/cpu/matmul.h.
 */
#ifndef ORUN_RUNNER_CPU_KERNELS_H
#define ORUN_RUNNER_CPU_KERNELS_H

#include <stdint.h>
#include <string.h>

#include "runner/cpu/matmul.h"

/* ---------------------------------------------------------------------------------------------- block formats
 *
 * All multi-byte fields are little-endian; "f16" is IEEE binary16. A row of `cols` elements is cols/QK blocks
 * back to back, with no padding between blocks or rows. In every format the value is a scale times a small
 * integer (plus an offset or a min), so x = sum over blocks of (scale * integer dot product) once the
 * activations are int8 too.
 *
 * Legacy formats, 32 elements per block. Element j < 16 is in the low nibble of qs[j], element j + 16 in the
 * high nibble of qs[j]. The 5-bit formats keep bit 4 of element j in bit j of the 32-bit qh.
 *   Q4_0 (18 B): f16 d, u8 qs[16]                 x = d * (q - 8)     q in 0..15
 *   Q4_1 (20 B): f16 d, f16 m, u8 qs[16]          x = d * q + m       q in 0..15
 *   Q5_0 (22 B): f16 d, u8 qh[4], u8 qs[16]       x = d * (q - 16)    q in 0..31
 *   Q5_1 (24 B): f16 d, f16 m, u8 qh[4], qs[16]   x = d * q + m       q in 0..31
 *   Q8_0 (34 B): f16 d, i8 qs[32]                 x = d * q           q in -128..127
 *
 * K-quants, 256 elements per super-block, split into sub-blocks of 16 or 32 elements with integer sub-scales
 * (and sub-mins) that one f16 super-scale d (and dmin) multiplies:
 *   Q2_K (84 B):  u8 scales[16], u8 qs[64], f16 d, f16 dmin.
 *        16 sub-blocks of 16: x = d * (scales[k] & 15) * q - dmin * (scales[k] >> 4), q in 0..3.
 *        Element e = 128*h + 32*j + l (h < 2, j < 4, l < 32) has q = (qs[32*h + l] >> 2*j) & 3, sub-block e/16.
 *   Q3_K (110 B): u8 hmask[32], u8 qs[64], u8 scales[12], f16 d.
 *        16 sub-blocks of 16 with 6-bit scales s_k: low 4 bits are scales[k] & 15 (k < 8) or
 *        scales[k-8] >> 4 (k >= 8), high 2 bits are (scales[8 + k%4] >> 2*(k/4)) & 3.
 *        x = d * (s_k - 32) * (u - 4), u = q2 | hbit << 2 in 0..7, where for e = 128*h + 32*j + l:
 *        q2 = (qs[32*h + l] >> 2*j) & 3 and hbit = (hmask[l] >> (4*h + j)) & 1.
 *   Q4_K (144 B): f16 d, f16 dmin, u8 scales[12], u8 qs[128].
 *        8 sub-blocks of 32 with 6-bit scale sc_j and 6-bit min m_j: for j < 4 sc = scales[j] & 63,
 *        m = scales[j+4] & 63; for j >= 4 sc = (scales[j+4] & 15) | (scales[j-4] >> 6) << 4,
 *        m = (scales[j+4] >> 4) | (scales[j] >> 6) << 4.  x = d * sc_j * q - dmin * m_j, q in 0..15.
 *        Element e = 64*c + l (c < 4, l < 32) is qs[32*c + l] & 15 (sub-block 2c), e = 64*c + 32 + l is
 *        qs[32*c + l] >> 4 (sub-block 2c + 1).
 *   Q5_K (176 B): f16 d, f16 dmin, u8 scales[12], u8 qh[32], u8 qs[128]. As Q4_K with q in 0..31: bit 4 of
 *        the element in sub-block j at position l < 32 is (qh[l] >> j) & 1.
 *   Q6_K (210 B): u8 ql[128], u8 qh[64], i8 scales[16], f16 d.
 *        16 sub-blocks of 16: x = d * scales[e/16] * (q - 32), q in 0..63. For half h < 2 (ql += 64*h,
 *        qh += 32*h) and l < 32: e = 128h + l:    q = (ql[l] & 15)    | ((qh[l] >> 0) & 3) << 4
 *                                 e = 128h+32+l:  q = (ql[l+32] & 15) | ((qh[l] >> 2) & 3) << 4
 *                                 e = 128h+64+l:  q = (ql[l] >> 4)    | ((qh[l] >> 4) & 3) << 4
 *                                 e = 128h+96+l:  q = (ql[l+32] >> 4) | ((qh[l] >> 6) & 3) << 4
 *
 * The R8 formats (orun's, in memory only: rn_mm_repack, for the weights use_mmap false copies at load) are Q4_0,
 * Q4_1, Q5_0 and Q5_1 rows with their blocks regrouped by 8 so that the SIMD kernels unpack them with fewer
 * instructions. A row's full groups come first, each the size of its 8 blocks, and its last nb % 8 blocks stay
 * in the plain format at the offsets they have there. A group of blocks k = 0..7 with values q_k[i] (element
 * i < 32), in this order:
 *   f16 d[8]                       the blocks' scales
 *   f16 m[8]                       the mins (Q4_1, Q5_1)
 *   u8 h[32]                       bit k of h[i] is bit 4 of q_k[i] (Q5_0, Q5_1)
 *   u8 qs[4][32]                   qs[p][i] = (q_{2p}[i] & 15) | (q_{2p+1}[i] & 15) << 4
 * so block k's low nibbles are one AND (or a shift and an AND) of qs[k/2] where the plain format needs two,
 * its fifth bits one 16-bit shift and an AND of h where Q5_0 needs a shuffle, a compare and two ANDs, and the
 * eight scales (and mins) one load each. 144, 160, 176 and 192 bytes a group.
 *
 * Float formats: F32, F16 (binary16), BF16 (the high 16 bits of a binary32), one element each.
 *
 * FP8 (orun's FP8_E4M3_B128, gguf/README.md): one OCP E4M3FN byte per element (sign, 4-bit exponent with bias 7,
 * 3-bit mantissa), rows of cols bytes, and a separate grid of f32 scales, one per 128x128 tile:
 * x[r][c] = e4m3(q[r][c]) * scale[r/128][c/128]. The kernels decode E4M3 through binary16: placing the low 7
 * bits at bit 7 of a half gives the same value times 2^-8 for normal and subnormal inputs alike, so
 * e4m3(b) = f16((b & 0x80) << 8 | (b & 0x7f) << 7) * 256 (the 256 goes into the tile scale). The NaN codes
 * 0x7f/0xff read as +-480; real checkpoints do not contain them.
 */

#define QK_LEGACY 32
#define QK_K 256

#define Q4_0_BYTES 18
#define Q4_1_BYTES 20
#define Q5_0_BYTES 22
#define Q5_1_BYTES 24
#define Q8_0_BYTES 34
#define Q2_K_BYTES 84
#define Q3_K_BYTES 110
#define Q4_K_BYTES 144
#define Q5_K_BYTES 176
#define Q6_K_BYTES 210
#define R8_GROUP 8 /* blocks */
#define R8_M_AT 16 /* the mins of an R8 group, after its 8 scales */

/* Byte offsets of fields inside the K-quant super-blocks. */
#define Q2_K_SCALES 0
#define Q2_K_QS 16
#define Q2_K_D 80
#define Q2_K_DMIN 82
#define Q3_K_HMASK 0
#define Q3_K_QS 32
#define Q3_K_SCALES 96
#define Q3_K_D 108
#define Q4_K_D 0
#define Q4_K_DMIN 2
#define Q4_K_SCALES 4
#define Q4_K_QS 16
#define Q5_K_D 0
#define Q5_K_DMIN 2
#define Q5_K_SCALES 4
#define Q5_K_QH 16
#define Q5_K_QS 48
#define Q6_K_QL 0
#define Q6_K_QH 128
#define Q6_K_SCALES 192
#define Q6_K_D 208

/* Dense index of the supported types, for kernel tables. */
enum rn_kslot {
	KS_F32,
	KS_F16,
	KS_BF16,
	KS_Q4_0,
	KS_Q4_1,
	KS_Q5_0,
	KS_Q5_1,
	KS_Q8_0,
	KS_Q2_K,
	KS_Q3_K,
	KS_Q4_K,
	KS_Q5_K,
	KS_Q6_K,
	KS_FP8,
	KS_Q4_0_R8,
	KS_Q4_1_R8,
	KS_Q5_0_R8,
	KS_Q5_1_R8,
	KS_COUNT
};

/* Slot of a type id, or -1 when unsupported. */
int rn_kslot_of_type(int type);

/* ---------------------------------------------------------------------------------------------- scalars */

static inline uint16_t rn_load_u16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
}

static inline uint32_t rn_load_u32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

/* IEEE binary16 -> binary32, exact for every input (subnormals, infinities, NaN payloads). */
static inline float rn_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
	if (exp == 0x1f) {
		bits = sign | 0x7f800000u | (man << 13);
	} else if (exp != 0) {
		bits = sign | ((exp + 112) << 23) | (man << 13);
	} else if (man == 0) {
		bits = sign;
	} else {
		/* subnormal: normalise the mantissa */
		int e = -1;
		do {
			e++;
			man <<= 1;
		} while (!(man & 0x400));
		bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
	}
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

/* binary32 -> binary16 bits, round to nearest even (overflow to infinity, NaN stays NaN). */
static inline uint16_t rn_f32_to_f16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t sign = (x >> 16) & 0x8000, ax = x & 0x7fffffff;
	if (ax > 0x7f800000)
		return (uint16_t)(sign | 0x7e00);
	if (ax >= 0x477ff000) /* rounds to >= 65520: infinity */
		return (uint16_t)(sign | 0x7c00);
	if (ax < 0x38800000) { /* below the smallest normal half: a subnormal (or zero) */
		if (ax < 0x33000000) /* < 2^-25 rounds to zero */
			return (uint16_t)sign;
		uint32_t man = (ax & 0x7fffff) | 0x800000;
		int shift = 126 - (int)(ax >> 23); /* 14..24 */
		uint32_t v = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
		if (rem > half || (rem == half && (v & 1)))
			v++;
		return (uint16_t)(sign | v);
	}
	uint32_t v = ((ax >> 13) - (112u << 10)), rem = ax & 0x1fff;
	if (rem > 0x1000 || (rem == 0x1000 && (v & 1)))
		v++;
	return (uint16_t)(sign | v);
}

static inline float rn_bf16_to_f32(uint16_t h)
{
	uint32_t bits = (uint32_t)h << 16;
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

/* E4M3 byte -> the binary16 bits of its value / 256 (see the FP8 format above). */
static inline uint16_t rn_e4m3_to_f16_scaled(uint8_t b)
{
	return (uint16_t)(((b & 0x80) << 8) | ((b & 0x7f) << 7));
}

#define RN_FP8_TILE 128

/* Scale of FP8 tile (tr, tc): grid of n_tc columns, unaligned little-endian f32. */
static inline float rn_fp8_scale(const void *grid, int64_t n_tc, int64_t tr, int64_t tc)
{
	float s;
	memcpy(&s, (const uint8_t *)grid + 4 * (size_t)(tr * n_tc + tc), 4);
	return s;
}

/* The 6-bit scale and min of sub-block j (< 8) of a Q4_K/Q5_K super-block (12 packed bytes). */
static inline void rn_k4_scale_min(const uint8_t *s, int j, int *sc, int *m)
{
	if (j < 4) {
		*sc = s[j] & 63;
		*m = s[j + 4] & 63;
	} else {
		*sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
		*m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
	}
}

/* The signed scale (s_k - 32, in -32..31) of sub-block k (< 16) of a Q3_K super-block. */
static inline int rn_k3_scale(const uint8_t *s, int k)
{
	int lo = k < 8 ? s[k] & 15 : s[k - 8] >> 4;
	int hi = (s[8 + k % 4] >> (2 * (k / 4))) & 3;
	return (lo | hi << 4) - 32;
}

/* The legacy format an R8 type regroups (RN_MM_Q4_0, Q4_1, Q5_0 or Q5_1), or 0 for any other type; and a
 * legacy format's block bytes, whether it has a min (m) and fifth bits (h), and its offset (q - off). */
static inline int rn_r8_base(int type)
{
	return (type & ~0xff) == RN_MM_R8 ? type & 0xff : 0;
}

static inline int rn_legacy_bytes(int type)
{
	return type == RN_MM_Q4_0 ? Q4_0_BYTES
	       : type == RN_MM_Q4_1 ? Q4_1_BYTES
	       : type == RN_MM_Q5_0 ? Q5_0_BYTES
	       : type == RN_MM_Q5_1 ? Q5_1_BYTES
				    : Q8_0_BYTES;
}

static inline int rn_legacy_has_min(int type)
{
	return type == RN_MM_Q4_1 || type == RN_MM_Q5_1;
}

static inline int rn_legacy_five(int type)
{
	return type == RN_MM_Q5_0 || type == RN_MM_Q5_1;
}

static inline int rn_legacy_off(int type)
{
	return type == RN_MM_Q4_0 ? 8 : type == RN_MM_Q5_0 ? 16 : 0;
}

/* Byte offsets of the fields of an R8 group of legacy format `base` (the mins, if any, at R8_M_AT). */
static inline int rn_r8_h_at(int base)
{
	return rn_legacy_has_min(base) ? 32 : 16;
}

static inline int rn_r8_qs_at(int base)
{
	return rn_r8_h_at(base) + (rn_legacy_five(base) ? 32 : 0);
}

/* Block b of an R8 row of nb blocks of format `base` (the portable path): its unsigned q (0..15 or 0..31) in
 * u[32], its scale in *d and, for the formats with a min, the min in *m. */
static inline void rn_r8_block(const uint8_t *row, int64_t nb, int64_t b, int base, uint8_t *u, float *d, float *m)
{
	const int bytes = rn_legacy_bytes(base), hm = rn_legacy_has_min(base), five = rn_legacy_five(base);
	if (b >= nb / R8_GROUP * R8_GROUP) {
		const uint8_t *blk = row + b * bytes, *qs = blk + (hm ? 4 : 2) + (five ? 4 : 0);
		uint32_t qh = five ? rn_load_u32(blk + (hm ? 4 : 2)) : 0;
		for (int i = 0; i < 16; i++) {
			u[i] = (uint8_t)((qs[i] & 15) | ((qh >> i) & 1) << 4);
			u[i + 16] = (uint8_t)((qs[i] >> 4) | ((qh >> (i + 16)) & 1) << 4);
		}
		*d = rn_f16_to_f32(rn_load_u16(blk));
		*m = hm ? rn_f16_to_f32(rn_load_u16(blk + 2)) : 0.0f;
		return;
	}
	const uint8_t *g = row + b / R8_GROUP * R8_GROUP * bytes;
	const int k = (int)(b % R8_GROUP);
	const uint8_t *qs = g + rn_r8_qs_at(base) + 32 * (k / 2), *h = g + rn_r8_h_at(base);
	for (int i = 0; i < 32; i++)
		u[i] = (uint8_t)(((k & 1 ? qs[i] >> 4 : qs[i]) & 15) | (five ? ((h[i] >> k) & 1) << 4 : 0));
	*d = rn_f16_to_f32(rn_load_u16(g + 2 * k));
	*m = hm ? rn_f16_to_f32(rn_load_u16(g + R8_M_AT + 2 * k)) : 0.0f;
}

/* ---------------------------------------------------------------------------------------------- activations
 *
 * A quantized activation row (see rn_act_row_bytes) is: int8 q[cols]; f32 d[cols/B]; then for Q8_32 int32
 * s[cols/32] (the sum of the block's q) and f32 sm[cols/32]; for Q8_256 int16 bs[cols/16] (sums of 16
 * consecutive q). q = round-to-nearest-even(x * 127/amax), in -127..127. The scales follow ggml's x86 activation
 * quantizers exactly, so that orun multiplies the same numbers as llama.cpp: for Q8_32 (ggml's Q8_0/Q8_1)
 * d = f16(amax/127) and sm = f16(amax/127 * s) (the "d * sum" term the +m formats use); for Q8_256 (ggml's Q8_K)
 * d = 1 / (127/amax). Rows are padded to 64 bytes.
 */
static inline const float *rn_act_q8_d(const void *row, int64_t cols)
{
	return (const float *)((const uint8_t *)row + cols);
}

static inline const int32_t *rn_act_q8_32_sums(const void *row, int64_t cols)
{
	return (const int32_t *)((const uint8_t *)row + cols + cols / QK_LEGACY * 4);
}

static inline const float *rn_act_q8_32_sm(const void *row, int64_t cols)
{
	return (const float *)((const uint8_t *)row + cols + cols / QK_LEGACY * 8);
}

static inline const int16_t *rn_act_q8_256_bsums(const void *row, int64_t cols)
{
	return (const int16_t *)((const uint8_t *)row + cols + cols / QK_K * 4);
}

/* ---------------------------------------------------------------------------------------------- kernel sets */

/* Largest number of activation rows one dot call handles (weights unpacked once, used NX times). */
#define RN_NX_MAX 4

/* y[j * ldy + r] = dot(row r of w, activation row x[j]) for row0 <= r < row1 and j < nx, nx = index + 1 in
 * the table. x[j] points at a quantized row (Q8 kinds) or at an f32 row (RN_ACT_F32). The row loop is inside the
 * kernel so that the activation-side set-up is done once per call. */
typedef void (*rn_dot_fn)(const struct rn_weight *w, int64_t row0, int64_t row1, const void *const *x, float *y,
			  int64_t ldy);

/* Quantizes one f32 row of cols elements into an activation row (kind Q8_32 or Q8_256). */
typedef void (*rn_quant_fn)(const float *x, int64_t cols, void *dst);

/* Prefill for types whose blocks are costly to unpack (the legacy formats): a tile of weight rows is unpacked
 * once into a buffer of rows of rn_unpacked_row_bytes (the layout is the kernel set's own business), then
 * multiplied with many groups of RN_NX_MAX activation rows. The results are bit-identical to the dot kernels'. */
typedef void (*rn_unpack_fn)(const struct rn_weight *w, int64_t row0, int64_t row1, uint8_t *dst, size_t stride);
/* y[j * ldy + r] for rows 0 <= r < n_rows of the unpacked tile and j < RN_NX_MAX. */
typedef void (*rn_dot_unpacked_fn)(const struct rn_weight *w, const uint8_t *ubuf, size_t stride, int64_t n_rows,
				   const void *const *x, float *y, int64_t ldy);

/* Bytes of one unpacked legacy row: one byte per element (two for the signed formats Q4_0, Q5_0, Q8_0: the
 * value and its magnitude) and two floats per block, 64-aligned. */
static inline size_t rn_unpacked_row_bytes(int type, int64_t cols)
{
	const int base = rn_r8_base(type) ? rn_r8_base(type) : type;
	int sgn = base == RN_MM_Q4_0 || base == RN_MM_Q5_0 || base == RN_MM_Q8_0;
	size_t b = (size_t)cols * (sgn ? 2 : 1) + (size_t)cols / QK_LEGACY * 8;
	return (b + 63) / 64 * 64;
}

struct rn_kernel_set {
	enum rn_isa isa;
	rn_dot_fn dot[KS_COUNT][RN_NX_MAX];
	rn_unpack_fn unpack[KS_COUNT];               /* NULL: no unpacked prefill path */
	rn_dot_unpacked_fn dot_unpacked4[KS_COUNT];
	rn_quant_fn quant_q8_32;
	rn_quant_fn quant_q8_256;
};

/* Which x86 kernel sets this compiler can build (AVX2 always on x86; the VNNI ones need a recent compiler:
 * configure checks AVX-512 VNNI, and AVX-VNNI came with GCC 11 / clang 12). */
#if defined(__x86_64__) || defined(__i386__)
#define RN_HAVE_AVX2_KERNELS 1
#ifdef ORUN_HAVE_AVX512_COMPILER
#define RN_HAVE_AVX512_KERNELS 1
#if (defined(__clang__) && __clang_major__ >= 12) || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 11)
#define RN_HAVE_AVXVNNI_KERNELS 1
#endif
#endif
#endif

const struct rn_kernel_set *rn_kernels_scalar(void);
#ifdef RN_HAVE_AVX2_KERNELS
const struct rn_kernel_set *rn_kernels_avx2(void);
#endif
#ifdef RN_HAVE_AVXVNNI_KERNELS
const struct rn_kernel_set *rn_kernels_avxvnni(void);
#endif
#ifdef RN_HAVE_AVX512_KERNELS
const struct rn_kernel_set *rn_kernels_avx512(void);
#endif

#endif
