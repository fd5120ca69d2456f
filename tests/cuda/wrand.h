/* tests/cuda/wrand.h — seeded random weight matrices in GGUF form for every type the CUDA backend reads,
 * built directly as blocks (random quants, sane scales) so that every bit of every field is exercised,
 * plus the CPU backend's reference product for them.
 *
 * Header-only (static functions): shared by the tests in tests/cuda.
 */
#ifndef ORUN_TESTS_CUDA_WRAND_H
#define ORUN_TESTS_CUDA_WRAND_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "runner/cpu/matmul.h"
#include "runner/cpu/pool.h"

static inline uint64_t wr_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [-1, 1). */
static inline float wr_unif(uint64_t *s) { return (float)(wr_next(s) >> 40) * (2.0f / 16777216.0f) - 1.0f; }

static inline void wr_put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }

/* The byte size of a `rows` x `cols` matrix of this type in GGUF form (the FP8 scale grid included), or 0
 * for an unknown type or shape. */
static inline uint64_t wr_matrix_bytes(uint32_t type, int64_t rows, int64_t cols)
{
	int64_t ne[4] = {cols, rows, 1, 1};
	uint64_t n = 0;
	if (!gguf_type_get(type) || gguf_tensor_nbytes(type, ne, &n) != GGUF_OK)
		return 0;
	return n;
}

/* Fills d (wr_matrix_bytes(type, rows, cols) bytes) with a random matrix in GGUF form: random bits in every
 * field, then sane scales. Values are scaled so that a product with unit activations stays O(1). wide: draw
 * 8 random bytes per generator step instead of 1 (8x faster, for the multi-GB models of the real shapes; a
 * different matrix for the same seed). Returns -1 for an unknown type. */
static inline int wr_fill(uint32_t type, int64_t rows, int64_t cols, uint64_t seed, uint8_t *d, bool wide)
{
	const struct gguf_type_info *ti = gguf_type_get(type);
	const uint64_t n = wr_matrix_bytes(type, rows, cols);
	if (!ti || n == 0)
		return -1;
	uint64_t s = seed * 0x2545f4914f6cdd1dull + type;
	const float a = 1.0f / sqrtf((float)cols);
	if (wide) {
		uint64_t i = 0;
		for (; i + 8 <= n; i += 8) {
			uint64_t v = wr_next(&s);
			memcpy(d + i, &v, 8);
		}
		for (; i < n; i++)
			d[i] = (uint8_t)wr_next(&s);
	} else {
		for (uint64_t i = 0; i < n; i++)
			d[i] = (uint8_t)wr_next(&s);
	}
	const int64_t nblk = rows * (cols / (int64_t)ti->block_elems);
	if (wide && (type == GGUF_TYPE_F16 || type == GGUF_TYPE_BF16)) {
		/* the value from the element's own random bits (uniform in [-1, 1)), no generator step per element */
		for (int64_t b = 0; b < nblk; b++) {
			int16_t r;
			memcpy(&r, d + 2 * b, 2);
			float v = (float)r * (1.0f / 32768.0f) * a * 1.7f;
			wr_put16(d + 2 * b, type == GGUF_TYPE_F16 ? gguf_f32_to_f16(v) : gguf_f32_to_bf16(v));
		}
		return 0;
	}
	for (int64_t b = 0; b < nblk; b++) {
		uint8_t *p = d + b * ti->block_bytes;
		switch (type) {
		case GGUF_TYPE_F32: {
			float v = wr_unif(&s) * a * 1.7f;
			memcpy(p, &v, 4);
			break;
		}
		case GGUF_TYPE_F16: wr_put16(p, gguf_f32_to_f16(wr_unif(&s) * a * 1.7f)); break;
		case GGUF_TYPE_BF16: wr_put16(p, gguf_f32_to_bf16(wr_unif(&s) * a * 1.7f)); break;
		case GGUF_TYPE_Q4_0:
		case GGUF_TYPE_Q5_0:
		case GGUF_TYPE_Q8_0: {
			float scale = type == GGUF_TYPE_Q8_0 ? a / 64.0f : type == GGUF_TYPE_Q5_0 ? a / 10.0f : a / 5.0f;
			wr_put16(p, gguf_f32_to_f16(scale * (0.5f + 0.5f * wr_unif(&s)) * (wr_next(&s) & 1 ? 1 : -1)));
			break;
		}
		/* The types with a minimum: its mean must cancel the mean quant's, else every weight of a matrix shares
		 * a positive (or negative) mean, each product picks up mean x (sum of the inputs), the residual stream
		 * turns into a constant vector within a layer or two and the logits stop depending on the input (seen:
		 * a 2-layer Q4_K model gave the same logits for every token, to 1e-3). */
		case GGUF_TYPE_Q4_1:
		case GGUF_TYPE_Q5_1: {
			const float qm = type == GGUF_TYPE_Q4_1 ? 7.5f : 15.5f; /* the mean quant */
			wr_put16(p, gguf_f32_to_f16(a / 10.0f * (0.5f + 0.5f * wr_unif(&s))));
			wr_put16(p + 2, gguf_f32_to_f16(-a / 20.0f * qm * (1.0f + 0.5f * wr_unif(&s))));
			break;
		}
		case GGUF_TYPE_Q4_K:
		case GGUF_TYPE_Q5_K: {
			/* sub-block mean d sc q - dmin m, sc and m uniform in 0..63: zero on average when dmin = qm d */
			const float dk = a / (type == GGUF_TYPE_Q4_K ? 200.0f : 400.0f), qm = type == GGUF_TYPE_Q4_K ? 7.5f : 15.5f;
			wr_put16(p, gguf_f32_to_f16(dk * (1.0f + 0.5f * wr_unif(&s))));
			wr_put16(p + 2, gguf_f32_to_f16(dk * qm * (1.0f + 0.5f * wr_unif(&s))));
			break;
		}
		case GGUF_TYPE_Q6_K:
			wr_put16(p + 208, gguf_f32_to_f16(a / 800.0f * (1.0f + 0.5f * wr_unif(&s))));
			break;
		case GGUF_TYPE_FP8_E4M3_B128:
			if ((p[0] & 0x7f) == 0x7f) /* never NaN */
				p[0] ^= 0x01;
			break;
		default:
			break;
		}
	}
	if (type == GGUF_TYPE_FP8_E4M3_B128) {
		int64_t tr = (rows + 127) / 128, tc = (cols + 127) / 128;
		uint8_t *g = d + rows * cols;
		for (int64_t i = 0; i < tr * tc; i++) {
			float v = a / 100.0f * (1.0f + 0.5f * wr_unif(&s));
			memcpy(g + 4 * i, &v, 4);
		}
	}
	return 0;
}

/* A random matrix of `rows` x `cols` in GGUF form (wr_fill, one byte per generator step) in a malloc'd buffer;
 * *size gets its byte size. NULL for an unknown type. */
static inline uint8_t *wr_matrix(uint32_t type, int64_t rows, int64_t cols, uint64_t seed, size_t *size)
{
	const uint64_t n = wr_matrix_bytes(type, rows, cols);
	uint8_t *d = n ? malloc(n + 16) : NULL;
	if (!d)
		return NULL;
	*size = n;
	if (wr_fill(type, rows, cols, seed, d, false) != 0) {
		free(d);
		return NULL;
	}
	return d;
}

/* A fake tensor record over data, enough for gguf_tensor_dequantize_row. */
static inline struct gguf_tensor wr_tensor(uint32_t type, int64_t rows, int64_t cols, const void *data,
					    size_t size)
{
	struct gguf_tensor t;
	memset(&t, 0, sizeof t);
	t.name = "test";
	t.type = type;
	t.n_dims = 2;
	t.ne[0] = cols;
	t.ne[1] = rows;
	t.ne[2] = t.ne[3] = 1;
	t.n_elements = (uint64_t)(rows * cols);
	t.n_bytes = size;
	t.data = data;
	return t;
}

/* The CPU backend's product y[j][r] for n activation rows x[j][cols], with the activations of F16 / BF16
 * weights rounded to f16 / bf16 as runner/cpu/forward.c rounds them. Returns 0, or -1 when the CPU backend
 * refuses it. */
static inline int wr_cpu_matmul_mt(uint32_t type, const void *data, size_t size, int64_t rows, int64_t cols,
				   const float *x, int n, float *y, int threads);

static inline int wr_cpu_matmul(uint32_t type, const void *data, size_t size, int64_t rows, int64_t cols,
				const float *x, int n, float *y)
{
	return wr_cpu_matmul_mt(type, data, size, rows, cols, x, n, y, 1);
}

/* wr_cpu_matmul on a pool of `threads` threads (<= 0: the physical cores): the same result, each output is
 * one thread's dot product (for the real shapes: 151936 x 5120 takes seconds on one core). */
static inline int wr_cpu_matmul_mt(uint32_t type, const void *data, size_t size, int64_t rows, int64_t cols,
				   const float *x, int n, float *y, int threads)
{
	struct rn_weight w;
	memset(&w, 0, sizeof w);
	w.type = (int)type;
	w.rows = rows;
	w.cols = cols;
	w.data = data;
	if (type == GGUF_TYPE_FP8_E4M3_B128)
		w.scale = (const uint8_t *)data + rows * cols;
	if (rn_mm_check(&w, size, NULL) != RN_MM_OK)
		return -1;
	struct rn_pool *pool = NULL;
	if (rn_pool_new(threads, &pool) != 0)
		return -1;
	enum rn_act_kind kind = rn_mm_act_kind((int)type);
	struct rn_act a;
	void *buf = NULL;
	float *xr = NULL;
	if (kind == RN_ACT_F32) {
		a.kind = kind;
		a.n = n;
		a.cols = cols;
		a.data = x;
		a.ld = cols;
		if (type == GGUF_TYPE_F16 || type == GGUF_TYPE_BF16) {
			xr = malloc((size_t)(n * cols) * sizeof *xr);
			for (int64_t i = 0; i < n * cols; i++)
				xr[i] = type == GGUF_TYPE_F16 ? gguf_f16_to_f32(gguf_f32_to_f16(x[i]))
							      : gguf_bf16_to_f32(gguf_f32_to_bf16(x[i]));
			a.data = xr;
		}
	} else {
		size_t rb = rn_act_row_bytes(kind, cols);
		buf = aligned_alloc(64, (rb * (size_t)n + 63) / 64 * 64);
		rn_act_quantize_rows(kind, x, cols, cols, 0, n, buf);
		a.kind = kind;
		a.n = n;
		a.cols = cols;
		a.data = buf;
		a.ld = 0;
	}
	rn_matmul(pool, &w, &a, y, rows);
	free(buf);
	free(xr);
	rn_pool_free(pool);
	return 0;
}

/* The product through gguf's reference dequantization, in double: y[j][r]. */
static inline void wr_ref_matmul(uint32_t type, const void *data, size_t size, int64_t rows, int64_t cols,
				 const float *x, int n, double *y)
{
	struct gguf_tensor t = wr_tensor(type, rows, cols, data, size);
	float *row = malloc((size_t)cols * sizeof *row);
	for (int64_t r = 0; r < rows; r++) {
		if (gguf_tensor_dequantize_row(&t, r, 0, cols, row) != GGUF_OK)
			memset(row, 0, (size_t)cols * sizeof *row);
		for (int j = 0; j < n; j++) {
			double acc = 0;
			for (int64_t c = 0; c < cols; c++)
				acc += (double)row[c] * x[(int64_t)j * cols + c];
			y[(int64_t)j * rows + r] = acc;
		}
	}
	free(row);
}

/* ||a - b|| / ||b|| over n values. */
static inline double wr_nerr_f(const float *a, const float *b, int64_t n)
{
	double num = 0, den = 0;
	for (int64_t i = 0; i < n; i++) {
		double d = (double)a[i] - (double)b[i];
		num += d * d;
		den += (double)b[i] * (double)b[i];
	}
	return den > 0 ? sqrt(num / den) : sqrt(num);
}

static inline double wr_nerr_d(const float *a, const double *b, int64_t n)
{
	double num = 0, den = 0;
	for (int64_t i = 0; i < n; i++) {
		double d = (double)a[i] - b[i];
		num += d * d;
		den += b[i] * b[i];
	}
	return den > 0 ? sqrt(num / den) : sqrt(num);
}

#endif
