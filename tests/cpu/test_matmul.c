/* tests/cpu/test_matmul.c — the CPU matmul against double-precision references, for every weight type and
 * every kernel set this CPU can run, on random blocks and on the real models' tensors.
 *
 * References come from gguf's dequantizers (bit-exact with ggml and the gguf Python package): the int8 paths
 * are checked against dequantized weights times the dequantized int8 activations (tight: float rounding only)
 * and against the raw f32 activations (loose: int8 activation error), and the kernel sets against each other.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "runner/cpu/matmul.h"
#include "runner/cpu/pool.h"
#include "tests/check.h"
#include "tests/testmodel.h"

/* ---------------------------------------------------------------------------------------------- random data */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* uniform in [-1, 1) */
static float rng_unit(void)
{
	return (float)((double)(rng_next() >> 11) / (double)(1ull << 53) * 2.0 - 1.0);
}

static void put_f16(uint8_t *p, float v)
{
	uint16_t h = gguf_f32_to_f16(v);
	memcpy(p, &h, 2);
}

/* Offsets of the f16 scale fields of each block type (-1 ends the list). */
static const int *scale_fields(int type, int *block_bytes, int *block_elems)
{
	static const int q4_0[] = { 0, -1 }, q4_1[] = { 0, 2, -1 }, q2k[] = { 80, 82, -1 }, q3k[] = { 108, -1 },
			 q4k[] = { 0, 2, -1 }, q6k[] = { 208, -1 };
	*block_elems = rn_mm_block_elems(type);
	*block_bytes = (int)rn_mm_row_bytes(type, *block_elems);
	switch (type) {
	case RN_MM_Q4_0:
	case RN_MM_Q5_0:
	case RN_MM_Q8_0:
		return q4_0;
	case RN_MM_Q4_1:
	case RN_MM_Q5_1:
		return q4_1;
	case RN_MM_Q2_K:
		return q2k;
	case RN_MM_Q3_K:
		return q3k;
	case RN_MM_Q4_K:
	case RN_MM_Q5_K:
		return q4k;
	case RN_MM_Q6_K:
		return q6k;
	default:
		return NULL;
	}
}

/* A random weight: every quant bit pattern is possible, scales are sane f16 values. For FP8 the buffer holds the
 * values followed by the scale grid, as in a GGUF file. Returns the buffer and its size. */
static uint8_t *make_weight(int type, int64_t rows, int64_t cols, size_t *size)
{
	size_t rb = rn_mm_row_bytes(type, cols);
	size_t n = rb * (size_t)rows, grid = 0;
	if (type == RN_MM_FP8)
		grid = 4 * (size_t)((rows + 127) / 128) * (size_t)((cols + 127) / 128);
	uint8_t *p = malloc(n + grid);
	if (!p)
		abort();
	for (size_t i = 0; i < n + grid; i++)
		p[i] = (uint8_t)rng_next();
	int bb, be;
	const int *fields = scale_fields(type, &bb, &be);
	if (fields) {
		for (size_t off = 0; off < n; off += (size_t)bb)
			for (int k = 0; fields[k] >= 0; k++)
				put_f16(p + off + fields[k], rng_unit() * 0.05f);
	} else if (type == RN_MM_F32) {
		for (size_t i = 0; i < n; i += 4) {
			float v = rng_unit();
			memcpy(p + i, &v, 4);
		}
	} else if (type == RN_MM_F16) {
		for (size_t i = 0; i < n; i += 2)
			put_f16(p + i, rng_unit());
	} else if (type == RN_MM_BF16) {
		for (size_t i = 0; i < n; i += 2) {
			uint16_t h = gguf_f32_to_bf16(rng_unit());
			memcpy(p + i, &h, 2);
		}
	} else if (type == RN_MM_FP8) {
		for (size_t i = 0; i < n; i++)
			if ((p[i] & 0x7f) == 0x7f) /* NaN codes */
				p[i] &= 0xfe;
		for (size_t i = 0; i < grid; i += 4) {
			float v = 0.001f + 0.01f * fabsf(rng_unit());
			memcpy(p + n + i, &v, 4);
		}
	}
	*size = n + grid;
	return p;
}

static float *make_x(int64_t n, int64_t cols)
{
	float *x = malloc(sizeof(float) * (size_t)(n * cols));
	if (!x)
		abort();
	for (int64_t i = 0; i < n * cols; i++) {
		x[i] = rng_unit();
		if (rng_next() % 61 == 0) /* a few outliers, as real activations have */
			x[i] *= 12.0f;
	}
	return x;
}

/* Dequantizes rows [r0, r1) of the weight with gguf's reference into out ((r1-r0) x cols). */
static void dequant_rows(const struct rn_weight *w, size_t size, int64_t r0, int64_t r1, float *out)
{
	struct gguf_tensor t;
	memset(&t, 0, sizeof t);
	t.name = "test";
	t.type = (uint32_t)w->type;
	t.n_dims = 2;
	t.ne[0] = w->cols;
	t.ne[1] = w->rows;
	t.ne[2] = t.ne[3] = 1;
	t.n_elements = (uint64_t)(w->cols * w->rows);
	t.n_bytes = size;
	t.data = w->data;
	for (int64_t r = r0; r < r1; r++) {
		int rc = gguf_tensor_dequantize_row(&t, r, 0, w->cols, out + (r - r0) * w->cols);
		CHECKF(rc == 0, "gguf_tensor_dequantize_row(%s, row %lld) = %d", rn_mm_type_name(w->type), (long long)r,
		       rc);
	}
}

/* The activations the int8 kernels really multiply: d * q from the quantized rows. */
static void act_dequant(const struct rn_act *a, float *out)
{
	size_t rb = rn_act_row_bytes(a->kind, a->cols);
	int bl = a->kind == RN_ACT_Q8_32 ? 32 : 256;
	for (int64_t i = 0; i < a->n; i++) {
		const int8_t *q = (const int8_t *)((const uint8_t *)a->data + (size_t)i * rb);
		const float *d = (const float *)(q + a->cols);
		for (int64_t c = 0; c < a->cols; c++)
			out[i * a->cols + c] = d[c / bl] * q[c];
	}
}

/* For Q4_1/Q5_1 (x = d*q + m), the min term of a block is m * sm with sm = f16(d_x * sum q_x), as in ggml's
 * Q8_1, rather than m * d_x * sum q_x: swap that term in the reference. */
static void min_term_as_ggml(const struct rn_weight *w, const struct rn_act *a, double *ref)
{
	size_t rb = rn_act_row_bytes(a->kind, a->cols), wrb = rn_mm_row_bytes(w->type, w->cols);
	int bb = w->type == RN_MM_Q4_1 ? 20 : 24;
	int64_t nb = a->cols / 32;
	for (int64_t i = 0; i < a->n; i++) {
		const int8_t *q = (const int8_t *)((const uint8_t *)a->data + (size_t)i * rb);
		const float *d = (const float *)(q + a->cols);
		const int32_t *s = (const int32_t *)(d + nb);
		const float *sm = (const float *)(s + nb);
		for (int64_t r = 0; r < w->rows; r++) {
			const uint8_t *row = (const uint8_t *)w->data + (size_t)r * wrb;
			double adj = 0;
			for (int64_t b = 0; b < nb; b++) {
				uint16_t mh;
				memcpy(&mh, row + b * bb + 2, 2);
				double m = gguf_f16_to_f32(mh);
				adj += m * ((double)sm[b] - (double)d[b] * (double)s[b]);
			}
			ref[i * w->rows + r] += adj;
		}
	}
}

/* y_ref[i][r] = sum_c w[r][c] * x[i][c] in double. */
static void ref_matmul(const float *wd, int64_t rows, int64_t cols, const float *x, int64_t n, double *y)
{
	for (int64_t i = 0; i < n; i++)
		for (int64_t r = 0; r < rows; r++) {
			double s = 0;
			for (int64_t c = 0; c < cols; c++)
				s += (double)wd[r * cols + c] * (double)x[i * cols + c];
			y[i * rows + r] = s;
		}
}

/* ||y - ref|| / ||ref|| over m values (ref all zero: the absolute norm). */
static double norm_err(const float *y, const double *ref, int64_t m)
{
	double e = 0, r = 0;
	for (int64_t k = 0; k < m; k++) {
		double d = (double)y[k] - ref[k];
		e += d * d;
		r += ref[k] * ref[k];
	}
	return r > 0 ? sqrt(e / r) : sqrt(e);
}

/* Normalised error allowed against the f32 activations: none but rounding for float weights; the int8
 * activation error for the others (larger with one scale per 256 values, as in llama.cpp's Q8_K, since the test
 * activations carry outliers). */
static double act_tolerance(enum rn_act_kind kind)
{
	return kind == RN_ACT_F32 ? 2e-5 : kind == RN_ACT_Q8_32 ? 3e-2 : 8e-2;
}

/* ---------------------------------------------------------------------------------------------- kernel sets */

static enum rn_isa isas[4];
static int n_isas;

static void find_isas(void)
{
	for (int i = RN_ISA_SCALAR; i <= RN_ISA_AVX512; i++) {
		if (rn_isa_available((enum rn_isa)i))
			isas[n_isas++] = (enum rn_isa)i;
		else
			fprintf(stderr, "note: kernel set %s is not available on this CPU/build: not tested here\n",
				rn_isa_name((enum rn_isa)i));
	}
}

/* ---------------------------------------------------------------------------------------------- tests */

static void test_act_quantize(void)
{
	const int64_t cols = 512, n = 3;
	float *x = make_x(n, cols);
	x[5] = 0.0f;
	for (int64_t c = 256; c < 288; c++) /* an all-zero block */
		x[c] = 0.0f;
	for (int kind = RN_ACT_Q8_32; kind <= RN_ACT_Q8_256; kind++) {
		size_t rb = rn_act_row_bytes((enum rn_act_kind)kind, cols);
		CHECK(rb > 0 && rb % 64 == 0);
		uint8_t *first = NULL;
		for (int k = 0; k < n_isas; k++) {
			CHECK(rn_isa_set(isas[k]) == 0);
			uint8_t *buf = calloc(n, rb);
			rn_act_quantize_rows((enum rn_act_kind)kind, x, cols, cols, 0, n, buf);
			int bl = kind == RN_ACT_Q8_32 ? 32 : 256;
			int bad = 0;
			for (int64_t i = 0; i < n && !bad; i++) {
				const int8_t *q = (const int8_t *)(buf + i * rb);
				const float *d = (const float *)(q + cols);
				for (int64_t b = 0; b < cols / bl; b++) {
					float amax = 0;
					for (int c = 0; c < bl; c++)
						amax = fmaxf(amax, fabsf(x[i * cols + b * bl + c]));
					/* ggml's scales: f16(amax/127) for Q8_0/Q8_1, 1/(127/amax) for Q8_K */
					float dexp = kind == RN_ACT_Q8_32 ? gguf_f16_to_f32(gguf_f32_to_f16(amax / 127.0f))
							 : amax > 0 ? 1.0f / (127.0f / amax) : 0.0f;
					if (d[b] != dexp)
						bad = 1;
					for (int c = 0; c < bl; c++) {
						float xv = x[i * cols + b * bl + c];
						/* rounding error of q (half a step) plus that of the f16 scale */
						if (q[b * bl + c] < -127 || fabsf(d[b] * q[b * bl + c] - xv) > d[b] * 0.57f)
							bad = 1;
					}
				}
				if (kind == RN_ACT_Q8_32) {
					const int32_t *s = (const int32_t *)(d + cols / 32);
					const float *sm = (const float *)(s + cols / 32);
					for (int64_t b = 0; b < cols / 32; b++) {
						int32_t t = 0;
						float amax = 0;
						for (int c = 0; c < 32; c++) {
							t += q[b * 32 + c];
							amax = fmaxf(amax, fabsf(x[i * cols + b * 32 + c]));
						}
						bad |= t != s[b];
						bad |= sm[b] != gguf_f16_to_f32(gguf_f32_to_f16(amax / 127.0f * (float)t));
					}
				} else {
					const int16_t *s = (const int16_t *)(d + cols / 256);
					for (int64_t g = 0; g < cols / 16; g++) {
						int32_t t = 0;
						for (int c = 0; c < 16; c++)
							t += q[g * 16 + c];
						bad |= t != s[g];
					}
				}
			}
			CHECKF(!bad, "activation quantization (%s, kind %d) out of spec", rn_isa_name(isas[k]), kind);
			if (!first)
				first = buf;
			else {
				CHECKF(memcmp(first, buf, rb * n) == 0, "%s quantizes differently from %s (kind %d)",
				       rn_isa_name(isas[k]), rn_isa_name(isas[0]), kind);
				free(buf);
			}
		}
		free(first);
	}
	free(x);
}

struct case_shape {
	int type;
	int64_t rows, cols;
};

/* One type and shape: every kernel set, n = 1 and an odd batch, against the references and each other. */
static void test_type(int type, int64_t rows, int64_t cols, int64_t n)
{
	size_t size;
	uint8_t *wbuf = make_weight(type, rows, cols, &size);
	struct rn_weight w = { .type = type, .rows = rows, .cols = cols, .data = wbuf };
	if (type == RN_MM_FP8)
		w.scale = wbuf + rows * cols;
	struct rn_mm_error err;
	int rc = rn_mm_check(&w, size, &err);
	CHECKF(rc == RN_MM_OK, "rn_mm_check: %s", err.msg);
	float *wd = malloc(sizeof(float) * (size_t)(rows * cols));
	dequant_rows(&w, size, 0, rows, wd);
	float *x = make_x(n, cols);
	double *ref = malloc(sizeof(double) * (size_t)(n * rows));
	double *refq = malloc(sizeof(double) * (size_t)(n * rows));
	ref_matmul(wd, rows, cols, x, n, ref);
	enum rn_act_kind kind = rn_mm_act_kind(type);
	size_t work = rn_matmul_work_size(type, n, cols);
	void *abuf = aligned_alloc(64, work ? work : 64);
	float *xq = malloc(sizeof(float) * (size_t)(n * cols));
	float *y = malloc(sizeof(float) * (size_t)(n * rows)), *y0 = malloc(sizeof(float) * (size_t)(n * rows));

	/* tolerances: float rounding only, and the int8 activation error vs the raw activations */
	const double tight = 2e-5, loose = act_tolerance(kind);
	for (int k = 0; k < n_isas; k++) {
		CHECK(rn_isa_set(isas[k]) == 0);
		struct rn_act act;
		rn_act_prepare(NULL, kind, x, cols, n, cols, abuf, &act);
		if (kind != RN_ACT_F32) {
			act_dequant(&act, xq);
			ref_matmul(wd, rows, cols, xq, n, refq);
			if (type == RN_MM_Q4_1 || type == RN_MM_Q5_1)
				min_term_as_ggml(&w, &act, refq);
		} else {
			memcpy(refq, ref, sizeof(double) * (size_t)(n * rows));
		}
		for (int64_t i = 0; i < n * rows; i++)
			y[i] = NAN;
		rn_matmul(NULL, &w, &act, y, rows);
		double e_tight = norm_err(y, refq, n * rows), e_loose = norm_err(y, ref, n * rows);
		CHECKF(e_tight <= tight, "%s %s %lldx%lld n=%lld: error %.3g vs int8-activation reference (limit %.1g)",
		       rn_mm_type_name(type), rn_isa_name(isas[k]), (long long)rows, (long long)cols, (long long)n,
		       e_tight, tight);
		CHECKF(e_loose <= loose, "%s %s %lldx%lld n=%lld: error %.3g vs f32 reference (limit %.1g)",
		       rn_mm_type_name(type), rn_isa_name(isas[k]), (long long)rows, (long long)cols, (long long)n,
		       e_loose, loose);
		if (k == 0) {
			memcpy(y0, y, sizeof(float) * (size_t)(n * rows));
		} else {
			/* kernel sets agree up to float summation order, element by element */
			double rms = 0;
			for (int64_t i = 0; i < n * rows; i++)
				rms += refq[i] * refq[i];
			rms = sqrt(rms / (double)(n * rows));
			int64_t worst = 0;
			double wd_max = 0;
			for (int64_t i = 0; i < n * rows; i++) {
				double dd = fabs((double)y[i] - (double)y0[i]);
				if (dd > wd_max) {
					wd_max = dd;
					worst = i;
				}
			}
			CHECKF(wd_max <= 1e-5 * rms + 1e-6 * fabs((double)y0[worst]),
			       "%s: %s and %s differ by %.3g at %lld (rms %.3g)", rn_mm_type_name(type),
			       rn_isa_name(isas[k]), rn_isa_name(isas[0]), wd_max, (long long)worst, rms);
		}
	}
	free(wbuf);
	free(wd);
	free(x);
	free(ref);
	free(refq);
	free(abuf);
	free(xq);
	free(y);
	free(y0);
}

/* The ways of calling a matmul (one job with quantization, prepared activations, multi, row ranges, pools of
 * 1..3 threads) give bit-identical results with one kernel set. */
static void test_api_paths(void)
{
	/* n = 21: the unpacked prefill path of the legacy formats (n >= 16) plus a remainder of 1 row */
	/* the legacy formats at 23 blocks a row: their decode kernels' tail groups of 4, 2 and 1 blocks */
	const int64_t rows = 53, n = 21;
	const int types[] = { RN_MM_Q4_K, RN_MM_Q8_0, RN_MM_F16, RN_MM_F32, RN_MM_BF16, RN_MM_Q4_0, RN_MM_Q4_1,
			      RN_MM_Q5_0, RN_MM_Q5_1 };
	struct rn_pool *pools[3] = { NULL, NULL, NULL };
	for (int p = 0; p < 3; p++)
		CHECK(rn_pool_new(p + 1, &pools[p]) == 0);
	rn_isa_set(isas[n_isas - 1]);
	for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
		/* the float types at 517 columns: the kernels' 32-column steps, an 8-column step and a tail */
		const int64_t cols = types[t] == RN_MM_Q4_K ? 512 : types[t] == RN_MM_F16 || types[t] == RN_MM_F32 ||
						      types[t] == RN_MM_BF16 ? 517 : 23 * 32;
		size_t size;
		uint8_t *wbuf = make_weight(types[t], rows, cols, &size);
		struct rn_weight w = { .type = types[t], .rows = rows, .cols = cols, .data = wbuf };
		float *x = make_x(n, cols);
		const int64_t ldy = rows + 3;
		float *ya = calloc((size_t)(n * ldy), sizeof(float)), *yb = calloc((size_t)(n * ldy), sizeof(float));
		size_t work = rn_matmul_work_size(types[t], n, cols);
		void *abuf = aligned_alloc(64, work ? work : 64);
		rn_matmul_f32(NULL, &w, x, cols, n, ya, ldy, abuf);
		for (int p = 0; p < 3; p++) {
			memset(yb, 0, sizeof(float) * (size_t)(n * ldy));
			rn_matmul_f32(pools[p], &w, x, cols, n, yb, ldy, abuf);
			CHECKF(memcmp(ya, yb, sizeof(float) * (size_t)(n * ldy)) == 0, "%s: rn_matmul_f32 with %d threads",
			       rn_mm_type_name(types[t]), p + 1);

			struct rn_act act;
			rn_act_prepare(pools[p], rn_mm_act_kind(types[t]), x, cols, n, cols, abuf, &act);
			memset(yb, 0, sizeof(float) * (size_t)(n * ldy));
			struct rn_mm_op ops[2] = { { &w, &act, yb, ldy }, { &w, &act, yb, ldy } };
			rn_matmul_multi(pools[p], ops, 2);
			CHECKF(memcmp(ya, yb, sizeof(float) * (size_t)(n * ldy)) == 0, "%s: rn_matmul_multi with %d threads",
			       rn_mm_type_name(types[t]), p + 1);
		}
		struct rn_act act;
		rn_act_prepare(NULL, rn_mm_act_kind(types[t]), x, cols, n, cols, abuf, &act);
		memset(yb, 0, sizeof(float) * (size_t)(n * ldy));
		rn_matmul_rows(&w, &act, yb, ldy, 0, 20);
		rn_matmul_rows(&w, &act, yb, ldy, 20, rows);
		CHECKF(memcmp(ya, yb, sizeof(float) * (size_t)(n * ldy)) == 0, "%s: rn_matmul_rows in two ranges",
		       rn_mm_type_name(types[t]));
		/* a single activation row taken from inside the batch */
		struct rn_act one = act;
		one.n = 1;
		one.data = (const uint8_t *)act.data + 4 * (act.kind == RN_ACT_F32 ? sizeof(float) * (size_t)cols
										   : rn_act_row_bytes(act.kind, cols));
		rn_matmul(pools[1], &w, &one, yb, ldy);
		CHECKF(memcmp(ya + 4 * ldy, yb, sizeof(float) * (size_t)rows) == 0, "%s: n = 1 from row 4 of a batch",
		       rn_mm_type_name(types[t]));
		/* every row of the batch equals the same row computed alone (decode kernels), and with the rows in
		 * batches of every size up to RN_NX_MAX + 1: a token's logits must not depend on its batch */
		for (int64_t nb = 1; nb <= 5; nb++) {
			int same = 1;
			for (int64_t i = 0; i < n; i += nb) {
				struct rn_act part = act;
				part.n = i + nb <= n ? nb : n - i;
				part.data = (const uint8_t *)act.data +
					    (size_t)i * (act.kind == RN_ACT_F32 ? sizeof(float) * (size_t)cols
										: rn_act_row_bytes(act.kind, cols));
				rn_matmul(NULL, &w, &part, yb, ldy);
				same &= memcmp(ya + i * ldy, yb, sizeof(float) * (size_t)(part.n * ldy - (ldy - rows))) == 0;
			}
			CHECKF(same, "%s: batch rows differ from the rows in batches of %d", rn_mm_type_name(types[t]),
			       (int)nb);
		}
		free(wbuf);
		free(x);
		free(ya);
		free(yb);
		free(abuf);
	}
	for (int p = 0; p < 3; p++)
		rn_pool_free(pools[p]);
}

/* The legacy formats repacked for the copied weights of use_mmap false (R8 types): with every kernel set and
 * every path (decode, rows of 2..4, the unpacked prefill of n >= 16, several threads) the results equal the
 * plain format's to the bit. Shapes: whole 8-block groups only, groups and a tail, a tail only. */
static void test_repack(void)
{
	static const int bases[] = { RN_MM_Q4_0, RN_MM_Q4_1, RN_MM_Q5_0, RN_MM_Q5_1 };
	static const int64_t shape[][2] = { { 19, 256 }, { 37, 896 }, { 21, 544 }, { 9, 96 } };
	static const int64_t ns[] = { 1, 2, 3, 4, 7, 21, 67 };
	struct rn_pool *pool = NULL;
	CHECK(rn_pool_new(2, &pool) == 0);
	CHECK(rn_mm_repack_type(RN_MM_Q8_0) == RN_MM_Q8_0 && rn_mm_repack_type(RN_MM_Q4_K) == RN_MM_Q4_K);
	for (size_t bi = 0; bi < sizeof bases / sizeof bases[0]; bi++)
		for (size_t sh = 0; sh < sizeof shape / sizeof shape[0]; sh++) {
			const int base = bases[bi], r8 = RN_MM_R8 | base;
			const int64_t rows = shape[sh][0], cols = shape[sh][1];
			size_t size;
			uint8_t *wbuf = make_weight(base, rows, cols, &size);
			uint8_t *rbuf = malloc(size);
			struct rn_weight w = { .type = base, .rows = rows, .cols = cols, .data = wbuf };
			rn_mm_repack(&w, rbuf);
			struct rn_weight r = { .type = r8, .rows = rows, .cols = cols, .data = rbuf };
			CHECK(rn_mm_check(&r, size, NULL) == RN_MM_OK);
			/* the layout really changed where there are whole groups, and the tail is as it was */
			const int64_t nb = cols / 32, full = nb / 8 * 8;
			const size_t bb = rn_mm_row_bytes(base, 32);
			CHECKF((full == 0) == (memcmp(wbuf, rbuf, size) == 0), "%s %lldx%lld: repacked bytes",
			       rn_mm_type_name(r8), (long long)rows, (long long)cols);
			for (int64_t i = 0; i < rows; i++)
				CHECK(memcmp(wbuf + (size_t)(i * nb + full) * bb, rbuf + (size_t)(i * nb + full) * bb,
					     (size_t)(nb - full) * bb) == 0);
			for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
				const int64_t n = ns[t];
				float *x = make_x(n, cols);
				float *ya = malloc(sizeof(float) * (size_t)(n * rows));
				float *yb = malloc(sizeof(float) * (size_t)(n * rows));
				void *abuf = aligned_alloc(64, rn_matmul_work_size(base, n, cols));
				for (int k = 0; k < n_isas; k++) {
					CHECK(rn_isa_set(isas[k]) == 0);
					CHECK(rn_mm_repack_type(base) == (isas[k] == RN_ISA_SCALAR ? base : r8));
					rn_matmul_f32(pool, &w, x, cols, n, ya, rows, abuf);
					rn_matmul_f32(t % 2 ? pool : NULL, &r, x, cols, n, yb, rows, abuf);
					CHECKF(memcmp(ya, yb, sizeof(float) * (size_t)(n * rows)) == 0,
					       "%s %s %lldx%lld n=%lld: results differ from %s", rn_mm_type_name(r8),
					       rn_isa_name(isas[k]), (long long)rows, (long long)cols, (long long)n,
					       rn_mm_type_name(base));
				}
				free(x);
				free(ya);
				free(yb);
				free(abuf);
			}
			free(wbuf);
			free(rbuf);
		}
	rn_pool_free(pool);
	rn_isa_set(isas[n_isas - 1]);
}

/* Rows longer than the decode kernel keeps Q4_0 / Q5_0 offset terms for (KX_XO_MAX = 4096 blocks) take the
 * general kernel: one token's results still equal the same row's in a batch of two, plain and R8 alike. */
static void test_long_rows(void)
{
	static const int bases[] = { RN_MM_Q4_0, RN_MM_Q5_0, RN_MM_Q8_0 };
	static const int64_t colss[] = { 4096 * 32, 4097 * 32 + 7 * 32 };
	const int64_t rows = 3;
	for (size_t bi = 0; bi < sizeof bases / sizeof bases[0]; bi++)
		for (size_t ci = 0; ci < sizeof colss / sizeof colss[0]; ci++) {
			const int base = bases[bi];
			const int64_t cols = colss[ci];
			size_t size;
			uint8_t *wbuf = make_weight(base, rows, cols, &size);
			uint8_t *rbuf = malloc(size);
			struct rn_weight w = { .type = base, .rows = rows, .cols = cols, .data = wbuf };
			struct rn_weight r = w;
			if (rn_mm_repack_type(base) != base) {
				rn_mm_repack(&w, rbuf);
				r.type = rn_mm_repack_type(base);
				r.data = rbuf;
			}
			float *x = make_x(2, cols);
			float y1[3], yr[3], y2[6];
			void *abuf = aligned_alloc(64, rn_matmul_work_size(base, 2, cols));
			rn_matmul_f32(NULL, &w, x, cols, 1, y1, rows, abuf);
			rn_matmul_f32(NULL, &r, x, cols, 1, yr, rows, abuf);
			rn_matmul_f32(NULL, &w, x, cols, 2, y2, rows, abuf);
			CHECKF(memcmp(y1, y2, sizeof y1) == 0 && memcmp(y1, yr, sizeof y1) == 0,
			       "%s %lld cols: one token %g %g %g, in a batch %g %g %g, repacked %g %g %g", rn_mm_type_name(base),
			       (long long)cols, (double)y1[0], (double)y1[1], (double)y1[2], (double)y2[0], (double)y2[1],
			       (double)y2[2], (double)yr[0], (double)yr[1], (double)yr[2]);
			free(x);
			free(abuf);
			free(wbuf);
			free(rbuf);
		}
}

static void test_check_errors(void)
{
	uint8_t buf[4096] = { 0 };
	struct rn_mm_error err;
	struct rn_weight w = { .type = 15 /* Q8_K */, .rows = 2, .cols = 256, .data = buf };
	CHECK_EQ_INT(rn_mm_check(&w, sizeof buf, &err), RN_MM_EUNSUPPORTED);
	CHECKF(strstr(err.msg, "15") != NULL, "%s", err.msg);
	w.type = RN_MM_Q4_K;
	w.cols = 200;
	CHECK_EQ_INT(rn_mm_check(&w, sizeof buf, &err), RN_MM_ESHAPE);
	CHECKF(strstr(err.msg, "200") != NULL && strstr(err.msg, "256") != NULL, "%s", err.msg);
	w.cols = 512;
	w.rows = 20;
	CHECK_EQ_INT(rn_mm_check(&w, sizeof buf, &err), RN_MM_ESIZE);
	CHECKF(strstr(err.msg, "5760") != NULL, "%s", err.msg);
	w.rows = 2;
	CHECK_EQ_INT(rn_mm_check(&w, sizeof buf, &err), RN_MM_OK);
	w.rows = -1;
	CHECK_EQ_INT(rn_mm_check(&w, sizeof buf, &err), RN_MM_ESHAPE);
	w.rows = INT64_MAX / 2;
	CHECK_EQ_INT(rn_mm_check(&w, sizeof buf, &err), RN_MM_ESIZE);
	w = (struct rn_weight){ .type = RN_MM_FP8, .rows = 10, .cols = 300, .data = buf };
	CHECK_EQ_INT(rn_mm_check(&w, sizeof buf, &err), RN_MM_ESIZE); /* no grid */
	w.scale = buf + 3000;
	CHECK_EQ_INT(rn_mm_check(&w, 3000 + 12, &err), RN_MM_OK);
	CHECK_EQ_INT(rn_mm_check(&w, 3000 + 11, &err), RN_MM_ESIZE);
	CHECK_EQ_INT(rn_mm_check(&w, 3000 + 11, NULL), RN_MM_ESIZE);
	CHECK(rn_mm_row_bytes(RN_MM_Q6_K, 512) == 420);
	CHECK(rn_mm_row_bytes(RN_MM_Q6_K, 100) == 0);
	CHECK(rn_mm_row_bytes(RN_MM_F32, INT64_MAX) == 0); /* overflows size_t */
	CHECK(rn_mm_row_bytes(RN_MM_Q4_0, 0) == 0);
	CHECK(!rn_mm_type_supported(9) && rn_mm_type_supported(RN_MM_FP8));
	CHECK_STREQ(rn_mm_type_name(RN_MM_Q5_0), "q5_0");
}

/* A few rows of every tensor type of a real model, against gguf's dequantization of the same rows. */
static void test_model(const char *id)
{
	const char *path = tm_model_path(id);
	if (!path) {
		fprintf(stderr, "note: model %s not installed: real-tensor checks skipped\n", id);
		return;
	}
	struct gguf_error gerr;
	struct gguf_file *f = gguf_open(path, &gerr);
	CHECKF(f != NULL, "gguf_open(%s): %s", path, gerr.msg);
	if (!f)
		return;
	static const char *names[] = { "token_embd.weight", "output.weight",
				       "blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_v.weight",
				       "blk.0.attn_output.weight", "blk.0.ffn_gate.weight", "blk.0.ffn_up.weight",
				       "blk.0.ffn_down.weight", "blk.1.attn_v.weight", "blk.1.ffn_down.weight",
				       "blk.3.ffn_down.weight", "blk.5.attn_v.weight", "blk.11.ffn_down.weight" };
	int seen_types[64] = { 0 };
	int n_checked = 0;
	for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
		const struct gguf_tensor *t = gguf_find_tensor(f, names[k]);
		if (!t)
			continue;
		struct rn_weight w;
		struct rn_mm_error err;
		int rc = rn_mm_weight_from_tensor(t, &w, &err);
		CHECKF(rc == RN_MM_OK, "%s: %s", names[k], err.msg);
		if (rc != RN_MM_OK)
			continue;
		/* 16 rows: the first 8 and the last 8 */
		const int64_t n = 5, nr = 16, cols = w.cols;
		float *wd = malloc(sizeof(float) * (size_t)(nr * cols));
		int64_t rsel[16];
		for (int i = 0; i < 16; i++)
			rsel[i] = i < 8 ? i : w.rows - 16 + i;
		for (int i = 0; i < 16; i++)
			dequant_rows(&w, (size_t)t->n_bytes, rsel[i], rsel[i] + 1, wd + i * cols);
		float *x = make_x(n, cols);
		double *ref = malloc(sizeof(double) * (size_t)(n * nr));
		ref_matmul(wd, nr, cols, x, n, ref);
		size_t work = rn_matmul_work_size(w.type, n, cols);
		void *abuf = aligned_alloc(64, work ? work : 64);
		float *y = malloc(sizeof(float) * (size_t)(n * nr));
		float *yw = malloc(sizeof(float) * (size_t)(n * w.rows));
		for (int ki = 0; ki < n_isas; ki++) {
			rn_isa_set(isas[ki]);
			struct rn_act act;
			rn_act_prepare(NULL, rn_mm_act_kind(w.type), x, cols, n, cols, abuf, &act);
			rn_matmul_rows(&w, &act, yw, w.rows, 0, 8);
			rn_matmul_rows(&w, &act, yw, w.rows, w.rows - 8, w.rows);
			for (int64_t i = 0; i < n; i++)
				for (int r = 0; r < nr; r++)
					y[i * nr + r] = yw[i * w.rows + rsel[r]];
			double e = norm_err(y, ref, n * nr);
			double lim = act_tolerance(rn_mm_act_kind(w.type));
			CHECKF(e <= lim, "%s %s (%s %lldx%lld) via %s: error %.3g (limit %.1g)", id, names[k],
			       rn_mm_type_name(w.type), (long long)w.rows, (long long)cols, rn_isa_name(isas[ki]), e, lim);
		}
		if (w.type >= 0 && w.type < 64 && !seen_types[w.type]) {
			seen_types[w.type] = 1;
			fprintf(stderr, "  %s: %s checked on %s (%lld x %lld)\n", id, rn_mm_type_name(w.type), names[k],
				(long long)w.rows, (long long)cols);
		}
		n_checked++;
		free(wd);
		free(x);
		free(ref);
		free(abuf);
		free(y);
		free(yw);
	}
	CHECKF(n_checked >= 5, "%s: only %d tensors found", id, n_checked);
	gguf_close(f);
}

int main(void)
{
	find_isas();
	CHECK(n_isas >= 1 && isas[0] == RN_ISA_SCALAR);
	fprintf(stderr, "kernel sets tested: ");
	for (int k = 0; k < n_isas; k++)
		fprintf(stderr, "%s ", rn_isa_name(isas[k]));
	fprintf(stderr, "(default %s)\n", rn_isa_name(rn_isa_current()));

	test_act_quantize();
	test_check_errors();

	/* shapes: rows not a multiple of anything; legacy cols with 8-block groups plus a tail, and tail only;
	 * float cols with a tail; FP8 with partial tiles in both directions */
	static const struct case_shape cases[] = {
		{ RN_MM_F32, 37, 100 },	   { RN_MM_F16, 37, 264 },   { RN_MM_BF16, 37, 264 },
		{ RN_MM_Q4_0, 37, 544 },   { RN_MM_Q4_0, 5, 96 },    { RN_MM_Q4_1, 37, 544 },
		{ RN_MM_Q4_1, 5, 96 },	   { RN_MM_Q5_0, 37, 544 },  { RN_MM_Q5_0, 5, 96 },
		{ RN_MM_Q5_1, 37, 544 },   { RN_MM_Q5_1, 5, 96 },    { RN_MM_Q8_0, 37, 544 },
		{ RN_MM_Q8_0, 5, 96 },	   { RN_MM_Q2_K, 37, 512 },  { RN_MM_Q3_K, 37, 512 },
		{ RN_MM_Q4_K, 37, 512 },   { RN_MM_Q5_K, 37, 512 },  { RN_MM_Q6_K, 37, 512 },
		{ RN_MM_FP8, 200, 300 },
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		test_type(cases[c].type, cases[c].rows, cases[c].cols, 1);
		test_type(cases[c].type, cases[c].rows, cases[c].cols, 7);
	}
	/* a batch larger than one activation chunk (64 rows); legacy rows with a partial 8-block group */
	test_type(RN_MM_Q4_K, 24, 256, 67);
	test_type(RN_MM_Q5_0, 24, 544, 67);
	test_type(RN_MM_Q8_0, 24, 544, 67);
	test_type(RN_MM_Q4_1, 24, 544, 67);
	test_api_paths();
	test_repack();
	test_long_rows();
	test_model("qwen2");
	test_model("llama");
	return check_done();
}
