/* gguf/dequant.c — reference dequantization of every supported tensor type to f32, one block at a time.
 *
 * Written from the GGUF block layouts; each formula keeps the order of f32 operations of ggml's reference
 * dequantizers (and the `gguf` Python package), so results are bit-identical: the library is compiled with
 * -ffp-contract=off so no multiply-add is fused. Scalar on purpose: the engine has its own fast kernels and
 * tests them against these.
 */
#include "config.h"

#include "gguf/internal.h"

#define QK_K 256

static void dq_f32(const uint8_t *b, float *y) { y[0] = gg_ldf32(b); }
static void dq_f16(const uint8_t *b, float *y) { y[0] = gguf_f16_to_f32(gg_ld16(b)); }
static void dq_bf16(const uint8_t *b, float *y) { y[0] = gguf_bf16_to_f32(gg_ld16(b)); }

static void dq_q4_0(const uint8_t *b, float *y)
{
	const float d = gguf_f16_to_f32(gg_ld16(b));
	const uint8_t *qs = b + 2;
	for (int j = 0; j < 16; j++) {
		y[j] = d * (float)((qs[j] & 0xf) - 8);
		y[j + 16] = d * (float)((qs[j] >> 4) - 8);
	}
}

static void dq_q4_1(const uint8_t *b, float *y)
{
	const float d = gguf_f16_to_f32(gg_ld16(b));
	const float m = gguf_f16_to_f32(gg_ld16(b + 2));
	const uint8_t *qs = b + 4;
	for (int j = 0; j < 16; j++) {
		y[j] = d * (float)(qs[j] & 0xf) + m;
		y[j + 16] = d * (float)(qs[j] >> 4) + m;
	}
}

static void dq_q5_0(const uint8_t *b, float *y)
{
	const float d = gguf_f16_to_f32(gg_ld16(b));
	const uint32_t qh = gg_ld32(b + 2);
	const uint8_t *qs = b + 6;
	for (int j = 0; j < 16; j++) {
		int lo = (qs[j] & 0xf) | (int)(((qh >> j) & 1) << 4);
		int hi = (qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
		y[j] = d * (float)(lo - 16);
		y[j + 16] = d * (float)(hi - 16);
	}
}

static void dq_q5_1(const uint8_t *b, float *y)
{
	const float d = gguf_f16_to_f32(gg_ld16(b));
	const float m = gguf_f16_to_f32(gg_ld16(b + 2));
	const uint32_t qh = gg_ld32(b + 4);
	const uint8_t *qs = b + 8;
	for (int j = 0; j < 16; j++) {
		int lo = (qs[j] & 0xf) | (int)(((qh >> j) & 1) << 4);
		int hi = (qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
		y[j] = d * (float)lo + m;
		y[j + 16] = d * (float)hi + m;
	}
}

static void dq_q8_0(const uint8_t *b, float *y)
{
	const float d = gguf_f16_to_f32(gg_ld16(b));
	for (int j = 0; j < 32; j++)
		y[j] = (float)(int8_t)b[2 + j] * d;
}

/* Q2_K: scales[16] (low nibble scale, high nibble min), qs[64] (2-bit), d, dmin. */
static void dq_q2_k(const uint8_t *b, float *y)
{
	const uint8_t *sc = b, *qs = b + 16;
	const float d = gguf_f16_to_f32(gg_ld16(b + 80));
	const float dmin = gguf_f16_to_f32(gg_ld16(b + 82));
	for (int e = 0; e < QK_K; e++) {
		int half = e / 128, r = e % 128, s = r / 32, l = r % 32;
		int q = (qs[half * 32 + l] >> (2 * s)) & 3;
		uint8_t g = sc[e / 16];
		float dl = d * (float)(g & 0xf), ml = dmin * (float)(g >> 4);
		y[e] = dl * (float)q - ml;
	}
}

/* Q3_K: hmask[32], qs[64] (low 2 bits), scales[12] (16 x 6-bit, offset 32), d. */
static void dq_q3_k(const uint8_t *b, float *y)
{
	const uint8_t *hm = b, *qs = b + 32, *sc = b + 96;
	const float d = gguf_f16_to_f32(gg_ld16(b + 108));
	float dl[16];
	for (int j = 0; j < 16; j++) {
		int lo = j < 8 ? (sc[j] & 0xf) : (sc[j - 8] >> 4);
		int hi = (sc[8 + (j % 4)] >> (2 * (j / 4))) & 3;
		dl[j] = d * (float)((int8_t)(uint8_t)(lo | (hi << 4)) - 32);
	}
	for (int e = 0; e < QK_K; e++) {
		int half = e / 128, r = e % 128, s = r / 32, l = r % 32;
		int ql = (qs[half * 32 + l] >> (2 * s)) & 3;
		int h = (hm[e % 32] >> (e / 32)) & 1;
		y[e] = dl[e / 16] * (float)(ql - (h ? 0 : 4));
	}
}

/* The 8 (scale, min) pairs of Q4_K / Q5_K, 6 bits each, packed in 12 bytes. */
static void scale_min_k4(const uint8_t *q, int j, int *sc, int *m)
{
	if (j < 4) {
		*sc = q[j] & 63;
		*m = q[j + 4] & 63;
	} else {
		*sc = (q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4);
		*m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
	}
}

static void dq_q4_k(const uint8_t *b, float *y)
{
	const float d = gguf_f16_to_f32(gg_ld16(b));
	const float dmin = gguf_f16_to_f32(gg_ld16(b + 2));
	const uint8_t *scales = b + 4, *qs = b + 16;
	for (int j = 0; j < 8; j++) {
		int sc, m;
		scale_min_k4(scales, j, &sc, &m);
		float dl = d * (float)sc, ml = dmin * (float)m;
		const uint8_t *q = qs + (j / 2) * 32;
		int shift = (j & 1) * 4;
		for (int l = 0; l < 32; l++)
			y[j * 32 + l] = dl * (float)((q[l] >> shift) & 0xf) - ml;
	}
}

static void dq_q5_k(const uint8_t *b, float *y)
{
	const float d = gguf_f16_to_f32(gg_ld16(b));
	const float dmin = gguf_f16_to_f32(gg_ld16(b + 2));
	const uint8_t *scales = b + 4, *qh = b + 16, *qs = b + 48;
	for (int j = 0; j < 8; j++) {
		int sc, m;
		scale_min_k4(scales, j, &sc, &m);
		float dl = d * (float)sc, ml = dmin * (float)m;
		const uint8_t *q = qs + (j / 2) * 32;
		int shift = (j & 1) * 4;
		for (int l = 0; l < 32; l++) {
			int v = ((q[l] >> shift) & 0xf) | (((qh[l] >> j) & 1) << 4);
			y[j * 32 + l] = dl * (float)v - ml;
		}
	}
}

/* Q6_K: ql[128] (low 4 bits), qh[64] (high 2 bits), scales[16] (int8), d. */
static void dq_q6_k(const uint8_t *b, float *y)
{
	const uint8_t *ql = b, *qh = b + 128;
	const int8_t *sc = (const int8_t *)(b + 192);
	const float d = gguf_f16_to_f32(gg_ld16(b + 208));
	for (int e = 0; e < QK_K; e++) {
		int half = e / 128, r = e % 128;
		int lo = (ql[half * 64 + r % 64] >> (4 * (r / 64))) & 0xf;
		int hi = (qh[half * 32 + r % 32] >> (2 * (r / 32))) & 3;
		int q = (int)(int8_t)(uint8_t)(lo | (hi << 4)) - 32;
		y[e] = (d * (float)sc[e / 16]) * (float)q;
	}
}

typedef void (*dq_fn)(const uint8_t *b, float *y);

static dq_fn dq_for(uint32_t type)
{
	switch (type) {
	case GGUF_TYPE_F32: return dq_f32;
	case GGUF_TYPE_F16: return dq_f16;
	case GGUF_TYPE_BF16: return dq_bf16;
	case GGUF_TYPE_Q4_0: return dq_q4_0;
	case GGUF_TYPE_Q4_1: return dq_q4_1;
	case GGUF_TYPE_Q5_0: return dq_q5_0;
	case GGUF_TYPE_Q5_1: return dq_q5_1;
	case GGUF_TYPE_Q8_0: return dq_q8_0;
	case GGUF_TYPE_Q2_K: return dq_q2_k;
	case GGUF_TYPE_Q3_K: return dq_q3_k;
	case GGUF_TYPE_Q4_K: return dq_q4_k;
	case GGUF_TYPE_Q5_K: return dq_q5_k;
	case GGUF_TYPE_Q6_K: return dq_q6_k;
	default: return NULL;
	}
}

int gguf_dequantize(uint32_t type, const void *src, float *dst, uint64_t n)
{
	const struct gguf_type_info *ti = gguf_type_get(type);
	if (!ti)
		return GGUF_ERR_TENSOR_TYPE;
	dq_fn fn = dq_for(type);
	if (!fn)
		return GGUF_ERR_UNSUPPORTED;
	if (n % ti->block_elems)
		return GGUF_ERR_INVALID_ARG;
	const uint8_t *b = src;
	for (uint64_t i = 0; i < n / ti->block_elems; i++)
		fn(b + i * ti->block_bytes, dst + i * ti->block_elems);
	return GGUF_OK;
}

static int fp8_row(const struct gguf_tensor *t, int64_t row, int64_t first, int64_t n, float *dst)
{
	int64_t tr, tc;
	gguf_fp8_grid(t->ne, &tr, &tc);
	const uint8_t *base = t->data;
	int64_t slice = row / t->ne[1], r = row % t->ne[1];
	const uint8_t *q = base + (uint64_t)row * (uint64_t)t->ne[0];
	const uint8_t *grid = base + t->n_elements + 4 * (uint64_t)(slice * tr * tc + (r / GGUF_FP8_TILE) * tc);
	for (int64_t c = first; c < first + n; c++) {
		float s = gg_ldf32(grid + 4 * (c / GGUF_FP8_TILE));
		dst[c - first] = gguf_e4m3_to_f32(q[c]) * s;
	}
	return GGUF_OK;
}

int gguf_tensor_dequantize_row(const struct gguf_tensor *t, int64_t row, int64_t first, int64_t n, float *dst)
{
	const struct gguf_type_info *ti = gguf_type_get(t->type);
	if (!ti)
		return GGUF_ERR_TENSOR_TYPE;
	int64_t rows = t->ne[1] * t->ne[2] * t->ne[3];
	if (row < 0 || row >= rows || first < 0 || n < 0 || first > t->ne[0] || n > t->ne[0] - first)
		return GGUF_ERR_INVALID_ARG;
	if (t->type == GGUF_TYPE_FP8_E4M3_B128)
		return fp8_row(t, row, first, n, dst);
	if (first % ti->block_elems || n % ti->block_elems)
		return GGUF_ERR_INVALID_ARG;
	const uint8_t *src = (const uint8_t *)t->data + (uint64_t)row * gguf_row_size(t->type, t->ne[0]) +
			     (uint64_t)first / ti->block_elems * ti->block_bytes;
	return gguf_dequantize(t->type, src, dst, (uint64_t)n);
}

int gguf_tensor_dequantize(const struct gguf_tensor *t, float *dst)
{
	int64_t rows = t->ne[1] * t->ne[2] * t->ne[3];
	if (t->ne[0] == 0 || rows == 0)
		return gguf_type_get(t->type) ? GGUF_OK : GGUF_ERR_TENSOR_TYPE;
	if (t->type != GGUF_TYPE_FP8_E4M3_B128)
		return gguf_dequantize(t->type, t->data, dst, t->n_elements);
	for (int64_t r = 0; r < rows; r++) {
		int e = fp8_row(t, r, 0, t->ne[0], dst + r * t->ne[0]);
		if (e)
			return e;
	}
	return GGUF_OK;
}
