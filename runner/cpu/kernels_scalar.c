/* runner/cpu/kernels_scalar.c — portable kernels: the fallback on CPUs without AVX2 and the tests' cross-check.
 *
 * Each block is unpacked to small integers once and dotted with up to RN_NX_MAX int8 activation rows using
 * exactly the integer sums the SIMD kernels compute (same offsets, same sub-scale products), so the ISAs agree
 * to float rounding. Plain C, no intrinsics; the compiler may auto-vectorise the inner loops.
 */
#include "config.h"

#include <math.h>

#include "runner/cpu/kernels.h"

/* ---------------------------------------------------------------------------------------------- activations */

static void quant_q8_32(const float *x, int64_t cols, void *dst)
{
	int8_t *q = dst;
	float *d = (float *)(q + cols);
	int32_t *s = (int32_t *)(d + cols / QK_LEGACY);
	float *sm = (float *)(s + cols / QK_LEGACY);
	for (int64_t b = 0; b < cols / QK_LEGACY; b++) {
		const float *xb = x + b * QK_LEGACY;
		float amax = 0.0f;
		for (int i = 0; i < QK_LEGACY; i++) {
			float a = fabsf(xb[i]);
			amax = a > amax ? a : amax;
		}
		float id = amax > 0.0f ? 127.0f / amax : 0.0f;
		int32_t sum = 0;
		for (int i = 0; i < QK_LEGACY; i++) {
			int v = (int)nearbyintf(xb[i] * id);
			q[b * QK_LEGACY + i] = (int8_t)v;
			sum += v;
		}
		const float db = amax / 127.0f;
		d[b] = rn_f16_to_f32(rn_f32_to_f16(db));
		s[b] = sum;
		sm[b] = rn_f16_to_f32(rn_f32_to_f16(db * (float)sum));
	}
}

static void quant_q8_256(const float *x, int64_t cols, void *dst)
{
	int8_t *q = dst;
	float *d = (float *)(q + cols);
	int16_t *bs = (int16_t *)(d + cols / QK_K);
	for (int64_t b = 0; b < cols / QK_K; b++) {
		const float *xb = x + b * QK_K;
		float amax = 0.0f;
		for (int i = 0; i < QK_K; i++) {
			float a = fabsf(xb[i]);
			amax = a > amax ? a : amax;
		}
		float id = amax > 0.0f ? 127.0f / amax : 0.0f;
		for (int g = 0; g < QK_K / 16; g++) {
			int sum = 0;
			for (int i = 0; i < 16; i++) {
				int v = (int)nearbyintf(xb[g * 16 + i] * id);
				q[b * QK_K + g * 16 + i] = (int8_t)v;
				sum += v;
			}
			bs[b * (QK_K / 16) + g] = (int16_t)sum;
		}
		d[b] = amax > 0.0f ? 1.0f / id : 0.0f;
	}
}

/* ---------------------------------------------------------------------------------------------- helpers */

static inline int32_t idot(const uint8_t *w, const int8_t *x, int n)
{
	int32_t s = 0;
	for (int i = 0; i < n; i++)
		s += (int32_t)w[i] * x[i];
	return s;
}

static inline int32_t idot_s(const int8_t *w, const int8_t *x, int n)
{
	int32_t s = 0;
	for (int i = 0; i < n; i++)
		s += (int32_t)w[i] * x[i];
	return s;
}

static inline const uint8_t *wrow(const struct rn_weight *w, int64_t row, size_t row_bytes)
{
	return (const uint8_t *)w->data + (size_t)row * row_bytes;
}

/* Low nibbles are elements 0..15, high nibbles 16..31 (Q4_0, Q4_1, and the low bits of Q5_0/Q5_1). */
static inline void unpack_nibbles32(const uint8_t *qs, uint8_t *u)
{
	for (int i = 0; i < 16; i++) {
		u[i] = qs[i] & 15;
		u[i + 16] = qs[i] >> 4;
	}
}

static inline void add_high_bits32(uint32_t qh, uint8_t *u)
{
	for (int i = 0; i < 32; i++)
		u[i] |= ((qh >> i) & 1) << 4;
}

/* ---------------------------------------------------------------------------------------------- legacy types */

/* One legacy row against nx activation rows. `offset` is the integer subtracted from q (8 for Q4_0, 16 for
 * Q5_0, 0 otherwise); has_min selects the "+ m" formats. */
static inline void dot_legacy(const struct rn_weight *w, int64_t row, const void *const *x, float *out, int nx,
			      int type)
{
	const int64_t nb = w->cols / QK_LEGACY;
	const int r8 = rn_r8_base(type) != 0, base = r8 ? rn_r8_base(type) : type; /* R8: base's blocks regrouped */
	const size_t bytes = (size_t)rn_legacy_bytes(base);
	const uint8_t *wr = wrow(w, row, (size_t)nb * bytes);
	const int32_t offset = rn_legacy_off(base);
	float acc[RN_NX_MAX] = { 0 }, accm[RN_NX_MAX] = { 0 };
	for (int64_t b = 0; b < nb; b++) {
		const uint8_t *blk = wr + b * bytes;
		float d, m = 0.0f;
		uint8_t u[32];
		if (r8) {
			rn_r8_block(wr, nb, b, base, u, &d, &m);
		} else {
			d = rn_f16_to_f32(rn_load_u16(blk));
			switch (base) {
			case RN_MM_Q4_0:
				unpack_nibbles32(blk + 2, u);
				break;
			case RN_MM_Q4_1:
				m = rn_f16_to_f32(rn_load_u16(blk + 2));
				unpack_nibbles32(blk + 4, u);
				break;
			case RN_MM_Q5_0:
				unpack_nibbles32(blk + 6, u);
				add_high_bits32(rn_load_u32(blk + 2), u);
				break;
			case RN_MM_Q5_1:
				m = rn_f16_to_f32(rn_load_u16(blk + 2));
				unpack_nibbles32(blk + 8, u);
				add_high_bits32(rn_load_u32(blk + 4), u);
				break;
			default: /* Q8_0 */
				break;
			}
		}
		for (int j = 0; j < nx; j++) {
			const int8_t *qx = (const int8_t *)x[j] + b * QK_LEGACY;
			float dx = rn_act_q8_d(x[j], w->cols)[b];
			int32_t sx = rn_act_q8_32_sums(x[j], w->cols)[b];
			float smx = rn_act_q8_32_sm(x[j], w->cols)[b];
			int32_t isum;
			if (base == RN_MM_Q8_0)
				isum = idot_s((const int8_t *)(blk + 2), qx, 32);
			else
				isum = idot(u, qx, 32);
			/* sum_b d dx (isum - offset sx) = sum_b d dx isum - offset sum_b d dx sx, as the SIMD code */
			acc[j] += (float)isum * (d * dx);
			if (rn_legacy_has_min(base))
				accm[j] += m * smx;
			else if (offset)
				accm[j] += (d * dx) * (float)sx;
		}
	}
	for (int j = 0; j < nx; j++)
		out[j] = rn_legacy_has_min(base) ? acc[j] + accm[j] : acc[j] - (float)offset * accm[j];
}

/* ---------------------------------------------------------------------------------------------- K-quants */

/* Unpacks a K-quant super-block: u[256] unsigned integers, sc[16] integer scales per 16 elements, mn[16]
 * integer mins per 16 elements (0 when the format has none), *d and *dmin the float super-scales. The value
 * of element e is d * sc[e/16] * (u[e] - off) - dmin * mn[e/16], with *off the format's integer offset. */
static void unpack_k(int type, const uint8_t *blk, uint8_t *u, int32_t *sc, int32_t *mn, int32_t *off, float *d,
		     float *dmin)
{
	*off = 0;
	*dmin = 0.0f;
	memset(mn, 0, 16 * sizeof *mn);
	switch (type) {
	case RN_MM_Q2_K: {
		const uint8_t *qs = blk + Q2_K_QS;
		for (int e = 0; e < QK_K; e++) {
			int h = e / 128, j = (e / 32) % 4, l = e % 32;
			u[e] = (qs[32 * h + l] >> (2 * j)) & 3;
		}
		for (int k = 0; k < 16; k++) {
			sc[k] = blk[Q2_K_SCALES + k] & 15;
			mn[k] = blk[Q2_K_SCALES + k] >> 4;
		}
		*d = rn_f16_to_f32(rn_load_u16(blk + Q2_K_D));
		*dmin = rn_f16_to_f32(rn_load_u16(blk + Q2_K_DMIN));
		break;
	}
	case RN_MM_Q3_K: {
		const uint8_t *qs = blk + Q3_K_QS, *hm = blk + Q3_K_HMASK;
		for (int e = 0; e < QK_K; e++) {
			int h = e / 128, j = (e / 32) % 4, l = e % 32;
			u[e] = (uint8_t)(((qs[32 * h + l] >> (2 * j)) & 3) | (((hm[l] >> (4 * h + j)) & 1) << 2));
		}
		for (int k = 0; k < 16; k++)
			sc[k] = rn_k3_scale(blk + Q3_K_SCALES, k);
		*off = 4;
		*d = rn_f16_to_f32(rn_load_u16(blk + Q3_K_D));
		break;
	}
	case RN_MM_Q4_K:
	case RN_MM_Q5_K: {
		int five = type == RN_MM_Q5_K;
		const uint8_t *qs = blk + (five ? Q5_K_QS : Q4_K_QS);
		const uint8_t *qh = blk + Q5_K_QH;
		for (int e = 0; e < QK_K; e++) {
			int c = e / 64, hi = (e / 32) % 2, l = e % 32;
			uint8_t q = hi ? qs[32 * c + l] >> 4 : qs[32 * c + l] & 15;
			if (five)
				q |= ((qh[l] >> (2 * c + hi)) & 1) << 4;
			u[e] = q;
		}
		for (int j = 0; j < 8; j++) {
			int s, m;
			rn_k4_scale_min(blk + Q4_K_SCALES, j, &s, &m);
			sc[2 * j] = sc[2 * j + 1] = s;
			mn[2 * j] = mn[2 * j + 1] = m;
		}
		*d = rn_f16_to_f32(rn_load_u16(blk + Q4_K_D));
		*dmin = rn_f16_to_f32(rn_load_u16(blk + Q4_K_DMIN));
		break;
	}
	default: { /* Q6_K */
		for (int h = 0; h < 2; h++) {
			const uint8_t *ql = blk + Q6_K_QL + 64 * h, *qh = blk + Q6_K_QH + 32 * h;
			uint8_t *o = u + 128 * h;
			for (int l = 0; l < 32; l++) {
				o[l] = (uint8_t)((ql[l] & 15) | ((qh[l] & 3) << 4));
				o[l + 32] = (uint8_t)((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4));
				o[l + 64] = (uint8_t)((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
				o[l + 96] = (uint8_t)((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
			}
		}
		for (int k = 0; k < 16; k++)
			sc[k] = (int8_t)blk[Q6_K_SCALES + k];
		*off = 32;
		*d = rn_f16_to_f32(rn_load_u16(blk + Q6_K_D));
		break;
	}
	}
}

static inline void dot_kquant(const struct rn_weight *w, int64_t row, const void *const *x, float *out, int nx,
			      int type, size_t bytes)
{
	const int64_t nb = w->cols / QK_K;
	const uint8_t *wr = wrow(w, row, (size_t)nb * bytes);
	float acc[RN_NX_MAX] = { 0 }, accm[RN_NX_MAX] = { 0 };
	for (int64_t b = 0; b < nb; b++) {
		uint8_t u[QK_K];
		int32_t sc[16], mn[16], off;
		float d, dmin;
		unpack_k(type, wr + b * bytes, u, sc, mn, &off, &d, &dmin);
		for (int j = 0; j < nx; j++) {
			const int8_t *qx = (const int8_t *)x[j] + b * QK_K;
			const int16_t *bs = rn_act_q8_256_bsums(x[j], w->cols) + b * 16;
			float dx = rn_act_q8_d(x[j], w->cols)[b];
			int32_t isum = 0, imin = 0;
			for (int k = 0; k < 16; k++) {
				isum += sc[k] * (idot(u + 16 * k, qx + 16 * k, 16) - off * bs[k]);
				imin += mn[k] * bs[k];
			}
			acc[j] += (float)isum * (d * dx);
			accm[j] += (float)imin * (dmin * dx);
		}
	}
	for (int j = 0; j < nx; j++)
		out[j] = acc[j] - accm[j];
}

/* ---------------------------------------------------------------------------------------------- float types */

static inline void dot_float(const struct rn_weight *w, int64_t row, const void *const *x, float *out, int nx,
			     int type)
{
	const int64_t n = w->cols;
	const uint8_t *wr = wrow(w, row, (size_t)n * (type == RN_MM_F32 ? 4 : 2));
	float acc[RN_NX_MAX] = { 0 };
	for (int64_t c = 0; c < n; c++) {
		float v;
		if (type == RN_MM_F32)
			memcpy(&v, wr + 4 * c, 4);
		else if (type == RN_MM_F16)
			v = rn_f16_to_f32(rn_load_u16(wr + 2 * c));
		else
			v = rn_bf16_to_f32(rn_load_u16(wr + 2 * c));
		for (int j = 0; j < nx; j++)
			acc[j] += v * ((const float *)x[j])[c];
	}
	for (int j = 0; j < nx; j++)
		out[j] = acc[j];
}

/* FP8: per 128-column tile, sum of e4m3/256 * x, then times the tile scale * 256. */
static inline void dot_fp8(const struct rn_weight *w, int64_t row, const void *const *x, float *out, int nx)
{
	const int64_t n = w->cols, n_tc = (n + RN_FP8_TILE - 1) / RN_FP8_TILE;
	const uint8_t *wr = wrow(w, row, (size_t)n);
	float acc[RN_NX_MAX] = { 0 };
	for (int64_t tc = 0; tc < n_tc; tc++) {
		const int64_t c0 = tc * RN_FP8_TILE, c1 = c0 + RN_FP8_TILE < n ? c0 + RN_FP8_TILE : n;
		const float s = rn_fp8_scale(w->scale, n_tc, row / RN_FP8_TILE, tc) * 256.0f;
		float part[RN_NX_MAX] = { 0 };
		for (int64_t c = c0; c < c1; c++) {
			float v = rn_f16_to_f32(rn_e4m3_to_f16_scaled(wr[c]));
			for (int j = 0; j < nx; j++)
				part[j] += v * ((const float *)x[j])[c];
		}
		for (int j = 0; j < nx; j++)
			acc[j] += part[j] * s;
	}
	for (int j = 0; j < nx; j++)
		out[j] = acc[j];
}

/* ---------------------------------------------------------------------------------------------- tables */

/* The table entries: the row loop around one row-against-nx-activations body. */
#define DEFINE_NX_ONE(name, call, nx)                                                                     \
	static void name##_##nx(const struct rn_weight *w, int64_t row0, int64_t row1, const void *const *x,  \
				float *y, int64_t ldy)                                                     \
	{                                                                                                \
		for (int64_t r = row0; r < row1; r++) {                                                  \
			float o[RN_NX_MAX];                                                              \
			call(nx);                                                                        \
			for (int j = 0; j < nx; j++)                                                     \
				y[j * ldy + r] = o[j];                                                   \
		}                                                                                        \
	}
#define DEFINE_NX(name, call)                                                                            \
	DEFINE_NX_ONE(name, call, 1)                                                                     \
	DEFINE_NX_ONE(name, call, 2)                                                                     \
	DEFINE_NX_ONE(name, call, 3)                                                                     \
	DEFINE_NX_ONE(name, call, 4)

#define CALL_F32(nx) dot_float(w, r, x, o, nx, RN_MM_F32)
#define CALL_F16(nx) dot_float(w, r, x, o, nx, RN_MM_F16)
#define CALL_BF16(nx) dot_float(w, r, x, o, nx, RN_MM_BF16)
#define CALL_Q4_0(nx) dot_legacy(w, r, x, o, nx, RN_MM_Q4_0)
#define CALL_Q4_1(nx) dot_legacy(w, r, x, o, nx, RN_MM_Q4_1)
#define CALL_Q5_0(nx) dot_legacy(w, r, x, o, nx, RN_MM_Q5_0)
#define CALL_Q5_1(nx) dot_legacy(w, r, x, o, nx, RN_MM_Q5_1)
#define CALL_Q8_0(nx) dot_legacy(w, r, x, o, nx, RN_MM_Q8_0)
#define CALL_Q4_0_R8(nx) dot_legacy(w, r, x, o, nx, RN_MM_Q4_0_R8)
#define CALL_Q4_1_R8(nx) dot_legacy(w, r, x, o, nx, RN_MM_Q4_1_R8)
#define CALL_Q5_0_R8(nx) dot_legacy(w, r, x, o, nx, RN_MM_Q5_0_R8)
#define CALL_Q5_1_R8(nx) dot_legacy(w, r, x, o, nx, RN_MM_Q5_1_R8)
#define CALL_Q2_K(nx) dot_kquant(w, r, x, o, nx, RN_MM_Q2_K, Q2_K_BYTES)
#define CALL_Q3_K(nx) dot_kquant(w, r, x, o, nx, RN_MM_Q3_K, Q3_K_BYTES)
#define CALL_Q4_K(nx) dot_kquant(w, r, x, o, nx, RN_MM_Q4_K, Q4_K_BYTES)
#define CALL_Q5_K(nx) dot_kquant(w, r, x, o, nx, RN_MM_Q5_K, Q5_K_BYTES)
#define CALL_Q6_K(nx) dot_kquant(w, r, x, o, nx, RN_MM_Q6_K, Q6_K_BYTES)
#define CALL_FP8(nx) dot_fp8(w, r, x, o, nx)

DEFINE_NX(s_f32, CALL_F32)
DEFINE_NX(s_f16, CALL_F16)
DEFINE_NX(s_bf16, CALL_BF16)
DEFINE_NX(s_q4_0, CALL_Q4_0)
DEFINE_NX(s_q4_1, CALL_Q4_1)
DEFINE_NX(s_q5_0, CALL_Q5_0)
DEFINE_NX(s_q5_1, CALL_Q5_1)
DEFINE_NX(s_q8_0, CALL_Q8_0)
DEFINE_NX(s_q4_0_r8, CALL_Q4_0_R8)
DEFINE_NX(s_q4_1_r8, CALL_Q4_1_R8)
DEFINE_NX(s_q5_0_r8, CALL_Q5_0_R8)
DEFINE_NX(s_q5_1_r8, CALL_Q5_1_R8)
DEFINE_NX(s_q2_k, CALL_Q2_K)
DEFINE_NX(s_q3_k, CALL_Q3_K)
DEFINE_NX(s_q4_k, CALL_Q4_K)
DEFINE_NX(s_q5_k, CALL_Q5_K)
DEFINE_NX(s_q6_k, CALL_Q6_K)
DEFINE_NX(s_fp8, CALL_FP8)

#define ROW(name) { name##_1, name##_2, name##_3, name##_4 }

static const struct rn_kernel_set scalar_set = {
	.isa = RN_ISA_SCALAR,
	.dot = {
		[KS_F32] = ROW(s_f32),
		[KS_F16] = ROW(s_f16),
		[KS_BF16] = ROW(s_bf16),
		[KS_Q4_0] = ROW(s_q4_0),
		[KS_Q4_1] = ROW(s_q4_1),
		[KS_Q5_0] = ROW(s_q5_0),
		[KS_Q5_1] = ROW(s_q5_1),
		[KS_Q8_0] = ROW(s_q8_0),
		[KS_Q2_K] = ROW(s_q2_k),
		[KS_Q3_K] = ROW(s_q3_k),
		[KS_Q4_K] = ROW(s_q4_k),
		[KS_Q5_K] = ROW(s_q5_k),
		[KS_Q6_K] = ROW(s_q6_k),
		[KS_FP8] = ROW(s_fp8),
		[KS_Q4_0_R8] = ROW(s_q4_0_r8),
		[KS_Q4_1_R8] = ROW(s_q4_1_r8),
		[KS_Q5_0_R8] = ROW(s_q5_0_r8),
		[KS_Q5_1_R8] = ROW(s_q5_1_r8),
	},
	.quant_q8_32 = quant_q8_32,
	.quant_q8_256 = quant_q8_256,
};

const struct rn_kernel_set *rn_kernels_scalar(void)
{
	return &scalar_set;
}
