/* tools/mkmodel_quant.c — straightforward row quantizers for `orun mkmodel` (see mkmodel_quant.h): per block
 * the range decides the scale, values are rounded to nearest even. No error-minimising search: synthetic
 * weights only need to be valid and deterministic, and a Qwen3-14B-sized file must quantize in seconds.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "gguf/gguf.h"
#include "tools/mkmodel_quant.h"

static void put_f16(uint8_t *p, float v)
{
	uint16_t h = gguf_f32_to_f16(v);
	memcpy(p, &h, 2);
}

static float f16r(float v) { return gguf_f16_to_f32(gguf_f32_to_f16(v)); }

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

static int rnd(float v) { return (int)nearbyintf(v); }

static void q8_0(const float *x, uint8_t *y, int64_t n)
{
	for (int64_t b = 0; b < n / 32; b++, x += 32, y += 34) {
		float amax = 0;
		for (int i = 0; i < 32; i++)
			amax = fmaxf(amax, fabsf(x[i]));
		float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
		put_f16(y, d);
		for (int i = 0; i < 32; i++)
			y[2 + i] = (uint8_t)(int8_t)clampi(rnd(x[i] * id), -127, 127);
	}
}

static void q4_0(const float *x, uint8_t *y, int64_t n)
{
	for (int64_t b = 0; b < n / 32; b++, x += 32, y += 18) {
		float amax = 0, mx = 0;
		for (int i = 0; i < 32; i++)
			if (fabsf(x[i]) > amax) {
				amax = fabsf(x[i]);
				mx = x[i];
			}
		float d = f16r(mx / -8.0f), id = d != 0 ? 1.0f / d : 0.0f;
		put_f16(y, d);
		for (int i = 0; i < 16; i++) {
			int a = clampi(rnd(x[i] * id) + 8, 0, 15), c = clampi(rnd(x[i + 16] * id) + 8, 0, 15);
			y[2 + i] = (uint8_t)(a | (c << 4));
		}
	}
}

/* Scales/mins of a Q4_K / Q5_K super-block: 8 sub-blocks of 32, value = d*sc*q - dmin*m with q in
 * [0, qmax]. Writes d, dmin and the 12 packed scale bytes; returns the integer sc/m in sc[], mn[]. */
static void kq_scales(const float *x, int qmax, uint8_t *y, int sc[8], int mn[8], float *dd, float *dm)
{
	float s[8], m[8], smax = 0, mmax = 0;
	for (int j = 0; j < 8; j++) {
		float lo = 0, hi = 0;
		for (int i = 0; i < 32; i++) {
			lo = fminf(lo, x[32 * j + i]);
			hi = fmaxf(hi, x[32 * j + i]);
		}
		s[j] = (hi - lo) / (float)qmax;
		m[j] = -lo;
		smax = fmaxf(smax, s[j]);
		mmax = fmaxf(mmax, m[j]);
	}
	*dd = f16r(smax / 63.0f);
	*dm = f16r(mmax / 63.0f);
	put_f16(y, *dd);
	put_f16(y + 2, *dm);
	for (int j = 0; j < 8; j++) {
		sc[j] = *dd > 0 ? clampi(rnd(s[j] / *dd), 0, 63) : 0;
		mn[j] = *dm > 0 ? clampi(rnd(m[j] / *dm), 0, 63) : 0;
	}
	uint8_t *p = y + 4;
	memset(p, 0, 12);
	for (int j = 0; j < 4; j++) {
		p[j] = (uint8_t)sc[j];
		p[j + 4] = (uint8_t)mn[j];
	}
	for (int j = 4; j < 8; j++) {
		p[j + 4] = (uint8_t)((sc[j] & 15) | ((mn[j] & 15) << 4));
		p[j - 4] |= (uint8_t)((sc[j] >> 4) << 6);
		p[j] |= (uint8_t)((mn[j] >> 4) << 6);
	}
}

static int kq_value(float v, float d, float dmin, int sc, int mn, int qmax)
{
	float step = d * (float)sc;
	if (step == 0)
		return 0;
	return clampi(rnd((v + dmin * (float)mn) / step), 0, qmax);
}

static void q4_k(const float *x, uint8_t *y, int64_t n)
{
	for (int64_t b = 0; b < n / 256; b++, x += 256, y += 144) {
		int sc[8], mn[8];
		float d, dmin;
		kq_scales(x, 15, y, sc, mn, &d, &dmin);
		uint8_t *qs = y + 16;
		for (int c = 0; c < 4; c++)
			for (int l = 0; l < 32; l++) {
				int j0 = 2 * c, j1 = 2 * c + 1;
				int lo = kq_value(x[64 * c + l], d, dmin, sc[j0], mn[j0], 15);
				int hi = kq_value(x[64 * c + 32 + l], d, dmin, sc[j1], mn[j1], 15);
				qs[32 * c + l] = (uint8_t)(lo | (hi << 4));
			}
	}
}

static void q5_k(const float *x, uint8_t *y, int64_t n)
{
	for (int64_t b = 0; b < n / 256; b++, x += 256, y += 176) {
		int sc[8], mn[8];
		float d, dmin;
		kq_scales(x, 31, y, sc, mn, &d, &dmin);
		uint8_t *qh = y + 16, *qs = y + 48;
		memset(qh, 0, 32);
		for (int c = 0; c < 4; c++)
			for (int l = 0; l < 32; l++) {
				int j0 = 2 * c, j1 = 2 * c + 1;
				int lo = kq_value(x[64 * c + l], d, dmin, sc[j0], mn[j0], 31);
				int hi = kq_value(x[64 * c + 32 + l], d, dmin, sc[j1], mn[j1], 31);
				qs[32 * c + l] = (uint8_t)((lo & 15) | ((hi & 15) << 4));
				qh[l] |= (uint8_t)(((lo >> 4) & 1) << j0);
				qh[l] |= (uint8_t)(((hi >> 4) & 1) << j1);
			}
	}
}

static void q6_k(const float *x, uint8_t *y, int64_t n)
{
	for (int64_t b = 0; b < n / 256; b++, x += 256, y += 210) {
		float s[16], smax = 0;
		for (int j = 0; j < 16; j++) {
			float amax = 0;
			for (int i = 0; i < 16; i++)
				amax = fmaxf(amax, fabsf(x[16 * j + i]));
			s[j] = amax / 31.0f;
			smax = fmaxf(smax, s[j]);
		}
		float d = f16r(smax / 127.0f);
		uint8_t *ql = y, *qh = y + 128;
		int8_t *scales = (int8_t *)(y + 192);
		put_f16(y + 208, d);
		int sq[16];
		for (int j = 0; j < 16; j++) {
			sq[j] = d > 0 ? clampi(rnd(s[j] / d), -128, 127) : 0;
			scales[j] = (int8_t)sq[j];
		}
		uint8_t q[256];
		for (int e = 0; e < 256; e++) {
			float step = d * (float)sq[e / 16];
			q[e] = (uint8_t)(step != 0 ? clampi(rnd(x[e] / step), -32, 31) + 32 : 32);
		}
		memset(qh, 0, 64);
		for (int h = 0; h < 2; h++) {
			uint8_t *L = ql + 64 * h, *H = qh + 32 * h;
			const uint8_t *Q = q + 128 * h;
			for (int l = 0; l < 32; l++) {
				L[l] = (uint8_t)((Q[l] & 15) | ((Q[l + 64] & 15) << 4));
				L[l + 32] = (uint8_t)((Q[l + 32] & 15) | ((Q[l + 96] & 15) << 4));
				H[l] = (uint8_t)((Q[l] >> 4) | ((Q[l + 32] >> 4) << 2) | ((Q[l + 64] >> 4) << 4) |
						 ((Q[l + 96] >> 4) << 6));
			}
		}
	}
}

uint8_t mkq_e4m3(float x)
{
	if (x != x)
		return 0x7F;
	uint8_t sign = signbit(x) ? 0x80 : 0;
	float a = fabsf(x);
	if (a >= 448.0f)
		return sign | 0x7E;
	if (a < 0.015625f) { /* below 2^-6: subnormal, steps of 2^-9 (8 steps reach the smallest normal) */
		int m = rnd(a * 512.0f);
		return sign | (uint8_t)m; /* m == 8 encodes 2^-6 exactly */
	}
	int e;
	float f = frexpf(a, &e); /* a = f * 2^e, f in [0.5, 1) */
	int mant = rnd((f * 2.0f - 1.0f) * 8.0f);
	int exp = e - 1 + 7;
	if (mant == 8) {
		mant = 0;
		exp++;
	}
	if (exp > 15 || (exp == 15 && mant == 7))
		return sign | 0x7E;
	return sign | (uint8_t)(exp << 3) | (uint8_t)mant;
}

bool mkq_supported(uint32_t type)
{
	switch (type) {
	case GGUF_TYPE_F32:
	case GGUF_TYPE_F16:
	case GGUF_TYPE_BF16:
	case GGUF_TYPE_Q8_0:
	case GGUF_TYPE_Q4_0:
	case GGUF_TYPE_Q4_K:
	case GGUF_TYPE_Q5_K:
	case GGUF_TYPE_Q6_K:
		return true;
	default:
		return false;
	}
}

bool mkq_row(uint32_t type, const float *src, void *dst, int64_t n)
{
	uint8_t *y = dst;
	switch (type) {
	case GGUF_TYPE_F32:
		memcpy(dst, src, (size_t)n * sizeof(float));
		return true;
	case GGUF_TYPE_F16:
		for (int64_t i = 0; i < n; i++)
			put_f16(y + 2 * i, src[i]);
		return true;
	case GGUF_TYPE_BF16:
		for (int64_t i = 0; i < n; i++) {
			uint16_t h = gguf_f32_to_bf16(src[i]);
			memcpy(y + 2 * i, &h, 2);
		}
		return true;
	case GGUF_TYPE_Q8_0:
		q8_0(src, y, n);
		return true;
	case GGUF_TYPE_Q4_0:
		q4_0(src, y, n);
		return true;
	case GGUF_TYPE_Q4_K:
		q4_k(src, y, n);
		return true;
	case GGUF_TYPE_Q5_K:
		q5_k(src, y, n);
		return true;
	case GGUF_TYPE_Q6_K:
		q6_k(src, y, n);
		return true;
	default:
		return false;
	}
}
