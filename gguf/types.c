/* gguf/types.c — the tensor type table (ggml's numbering and block geometry, plus orun's FP8 type), byte-size
 * arithmetic for tensors with overflow checks, and the scalar f16 / bf16 / E4M3 conversions.
 * The block sizes follow the GGUF specification; the conversions are written from the IEEE formats.
 */
#include "config.h"

#include <strings.h>

#include "gguf/internal.h"

#define QK_K 256

struct type_row {
	uint32_t id;
	struct gguf_type_info info;
};

static const struct type_row type_rows[] = {
	{GGUF_TYPE_F32, {"F32", 1, 4, true}},
	{GGUF_TYPE_F16, {"F16", 1, 2, true}},
	{GGUF_TYPE_Q4_0, {"Q4_0", 32, 2 + 16, true}},
	{GGUF_TYPE_Q4_1, {"Q4_1", 32, 2 + 2 + 16, true}},
	{GGUF_TYPE_Q5_0, {"Q5_0", 32, 2 + 4 + 16, true}},
	{GGUF_TYPE_Q5_1, {"Q5_1", 32, 2 + 2 + 4 + 16, true}},
	{GGUF_TYPE_Q8_0, {"Q8_0", 32, 2 + 32, true}},
	{GGUF_TYPE_Q8_1, {"Q8_1", 32, 2 + 2 + 32, false}},
	{GGUF_TYPE_Q2_K, {"Q2_K", QK_K, 2 + 2 + QK_K / 16 + QK_K / 4, true}},
	{GGUF_TYPE_Q3_K, {"Q3_K", QK_K, 2 + QK_K / 4 + QK_K / 8 + 12, true}},
	{GGUF_TYPE_Q4_K, {"Q4_K", QK_K, 2 + 2 + QK_K / 2 + 12, true}},
	{GGUF_TYPE_Q5_K, {"Q5_K", QK_K, 2 + 2 + QK_K / 2 + QK_K / 8 + 12, true}},
	{GGUF_TYPE_Q6_K, {"Q6_K", QK_K, 2 + QK_K / 2 + QK_K / 4 + QK_K / 16, true}},
	{GGUF_TYPE_Q8_K, {"Q8_K", QK_K, 4 + QK_K + QK_K / 8, false}},
	{GGUF_TYPE_IQ2_XXS, {"IQ2_XXS", QK_K, 2 + QK_K / 4, false}},
	{GGUF_TYPE_IQ2_XS, {"IQ2_XS", QK_K, 2 + QK_K / 4 + QK_K / 32, false}},
	{GGUF_TYPE_IQ3_XXS, {"IQ3_XXS", QK_K, 2 + QK_K / 4 + QK_K / 8, false}},
	{GGUF_TYPE_IQ1_S, {"IQ1_S", QK_K, 2 + QK_K / 8 + QK_K / 16, false}},
	{GGUF_TYPE_IQ4_NL, {"IQ4_NL", 32, 2 + 16, false}},
	{GGUF_TYPE_IQ3_S, {"IQ3_S", QK_K, 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4, false}},
	{GGUF_TYPE_IQ2_S, {"IQ2_S", QK_K, 2 + QK_K / 4 + QK_K / 16, false}},
	{GGUF_TYPE_IQ4_XS, {"IQ4_XS", QK_K, 2 + 2 + QK_K / 2 + QK_K / 64, false}},
	{GGUF_TYPE_I8, {"I8", 1, 1, false}},
	{GGUF_TYPE_I16, {"I16", 1, 2, false}},
	{GGUF_TYPE_I32, {"I32", 1, 4, false}},
	{GGUF_TYPE_I64, {"I64", 1, 8, false}},
	{GGUF_TYPE_F64, {"F64", 1, 8, false}},
	{GGUF_TYPE_IQ1_M, {"IQ1_M", QK_K, QK_K / 8 + QK_K / 16 + QK_K / 32, false}},
	{GGUF_TYPE_BF16, {"BF16", 1, 2, true}},
	{GGUF_TYPE_TQ1_0, {"TQ1_0", QK_K, 2 + 4 * 13, false}},
	{GGUF_TYPE_TQ2_0, {"TQ2_0", QK_K, 2 + 64, false}},
	{GGUF_TYPE_MXFP4, {"MXFP4", 32, 1 + 16, false}},
	{GGUF_TYPE_NVFP4, {"NVFP4", 64, 4 + 32, false}},
	{GGUF_TYPE_Q1_0, {"Q1_0", 128, 2 + 16, false}},
	{GGUF_TYPE_Q2_0, {"Q2_0", 64, 2 + 16, false}},
	{GGUF_TYPE_FP8_E4M3_B128, {"FP8_E4M3_B128", 1, 1, true}},
};

#define N_TYPE_ROWS (sizeof type_rows / sizeof type_rows[0])

const struct gguf_type_info *gguf_type_get(uint32_t type)
{
	/* ids up to 42 are dense except the removed ones; a linear scan of 36 rows is cheap and obviously right */
	for (size_t i = 0; i < N_TYPE_ROWS; i++)
		if (type_rows[i].id == type)
			return &type_rows[i].info;
	return NULL;
}

const char *gguf_type_name(uint32_t type)
{
	const struct gguf_type_info *t = gguf_type_get(type);
	return t ? t->name : "?";
}

int gguf_type_from_name(const char *name, uint32_t *type)
{
	if (!name)
		return GGUF_ERR_NOT_FOUND;
	if (strcasecmp(name, "fp8") == 0 || strcasecmp(name, "fp8_e4m3") == 0) {
		*type = GGUF_TYPE_FP8_E4M3_B128;
		return GGUF_OK;
	}
	for (size_t i = 0; i < N_TYPE_ROWS; i++)
		if (strcasecmp(type_rows[i].info.name, name) == 0) {
			*type = type_rows[i].id;
			return GGUF_OK;
		}
	return GGUF_ERR_NOT_FOUND;
}

void gguf_fp8_grid(const int64_t ne[GGUF_MAX_DIMS], int64_t *n_tiles_row, int64_t *n_tiles_col)
{
	*n_tiles_col = ne[0] / GGUF_FP8_TILE + (ne[0] % GGUF_FP8_TILE != 0);
	*n_tiles_row = ne[1] / GGUF_FP8_TILE + (ne[1] % GGUF_FP8_TILE != 0);
}

int gguf_tensor_nbytes(uint32_t type, const int64_t ne[GGUF_MAX_DIMS], uint64_t *nbytes)
{
	const struct gguf_type_info *t = gguf_type_get(type);
	if (!t)
		return GGUF_ERR_TENSOR_TYPE;
	uint64_t n = 1;
	for (int i = 0; i < GGUF_MAX_DIMS; i++) {
		if (ne[i] < 0)
			return GGUF_ERR_DIM;
		if (gg_mul_ovf(n, (uint64_t)ne[i], &n) || n > INT64_MAX)
			return GGUF_ERR_OVERFLOW;
	}
	if (ne[0] % t->block_elems != 0)
		return GGUF_ERR_BLOCK;
	uint64_t bytes;
	if (gg_mul_ovf(n / t->block_elems, t->block_bytes, &bytes))
		return GGUF_ERR_OVERFLOW;
	if (type == GGUF_TYPE_FP8_E4M3_B128) {
		int64_t tr, tc;
		gguf_fp8_grid(ne, &tr, &tc);
		uint64_t g;
		if (gg_mul_ovf((uint64_t)tr, (uint64_t)tc, &g) || gg_mul_ovf(g, (uint64_t)ne[2], &g) ||
		    gg_mul_ovf(g, (uint64_t)ne[3], &g) || gg_mul_ovf(g, 4, &g) || gg_add_ovf(bytes, g, &bytes))
			return GGUF_ERR_OVERFLOW;
	}
	if (bytes > INT64_MAX)
		return GGUF_ERR_OVERFLOW;
	*nbytes = bytes;
	return GGUF_OK;
}

uint64_t gguf_row_size(uint32_t type, int64_t ne0)
{
	const struct gguf_type_info *t = gguf_type_get(type);
	if (!t || type == GGUF_TYPE_FP8_E4M3_B128 || ne0 < 0 || ne0 % t->block_elems)
		return 0;
	return (uint64_t)ne0 / t->block_elems * t->block_bytes;
}

/* ---------------------------------------------------------------- scalar conversions */

float gguf_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f;
	uint32_t man = h & 0x3ff;
	uint32_t bits;
	if (exp == 0x1f) {
		bits = sign | 0x7f800000u | (man << 13); /* inf / NaN, payload kept */
	} else if (exp == 0) {
		if (man == 0) {
			bits = sign;
		} else { /* subnormal: normalise */
			int e = -1;
			do {
				e++;
				man <<= 1;
			} while (!(man & 0x400));
			man &= 0x3ff;
			bits = sign | ((uint32_t)(127 - 15 - e) << 23) | (man << 13);
		}
	} else {
		bits = sign | ((exp + (127 - 15)) << 23) | (man << 13);
	}
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

uint16_t gguf_f32_to_f16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t sign = (x >> 16) & 0x8000;
	uint32_t exp = (x >> 23) & 0xff;
	uint32_t man = x & 0x7fffff;
	if (exp == 0xff) /* inf or NaN (keep a quiet NaN) */
		return (uint16_t)(sign | 0x7c00 | (man ? 0x200 | (man >> 13) : 0));
	int32_t e = (int32_t)exp - 127 + 15;
	if (e >= 0x1f)
		return (uint16_t)(sign | 0x7c00);
	if (e <= 0) {
		if (e < -10)
			return (uint16_t)sign; /* underflows to zero even after rounding */
		man |= 0x800000;
		uint32_t shift = (uint32_t)(14 - e);
		uint32_t half = man >> shift;
		uint32_t rem = man & ((1u << shift) - 1);
		uint32_t mid = 1u << (shift - 1);
		if (rem > mid || (rem == mid && (half & 1)))
			half++;
		return (uint16_t)(sign | half);
	}
	uint32_t half = ((uint32_t)e << 10) | (man >> 13);
	uint32_t rem = man & 0x1fff;
	if (rem > 0x1000 || (rem == 0x1000 && (half & 1)))
		half++; /* may carry into the exponent, up to infinity: correct */
	return (uint16_t)(sign | half);
}

float gguf_bf16_to_f32(uint16_t h)
{
	uint32_t bits = (uint32_t)h << 16;
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

uint16_t gguf_f32_to_bf16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	if ((x & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((x >> 16) | 0x40); /* quiet NaN */
	x += 0x7fff + ((x >> 16) & 1);
	return (uint16_t)(x >> 16);
}

float gguf_e4m3_to_f32(uint8_t b)
{
	uint32_t sign = (uint32_t)(b & 0x80) << 24;
	uint32_t exp = (b >> 3) & 0xf;
	uint32_t man = b & 7;
	uint32_t bits;
	if (exp == 0xf && man == 7) {
		bits = sign | 0x7fc00000u; /* E4M3FN: only S.1111.111 is NaN */
	} else if (exp == 0) {
		float v = (float)man * (1.0f / 512.0f); /* subnormal: man * 2^-9, exact */
		return (b & 0x80) ? -v : v;
	} else {
		bits = sign | ((exp + 127 - 7) << 23) | (man << 20);
	}
	float f;
	memcpy(&f, &bits, 4);
	return f;
}
