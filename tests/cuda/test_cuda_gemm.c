/* tests/cuda/test_cuda_gemm.c — the prefill GEMM paths of runner/cuda/gemm.cu.
 *
 * Without a GPU (runs everywhere): the FP8 activation-scale layout for cuBLASLt's block-scaled GEMM
 * (token-major, the token count padded to a multiple of 4, pad rows zero) and the FP8 probe's row counts.
 * On device 0 (skips, 77, without one):
 *  - the f16 dequantization kernel against gguf's reference dequantization rounded to f16: bit-exact (every
 *    type; Q4_1 / Q5_1 allowed 1 f16 ulp, see below), on shapes with partial tiles;
 *  - the f16 GEMM dequantizing per call and through an f16 copy (the prefill cache) against each other
 *    (1e-5: the same f16 operands, cuBLAS may choose another algorithm for another M) and the f64 product
 *    (4e-3: f16 activations), with beta 0 and 1;
 *  - on Hopper, cuBLASLt's block-scaled FP8 GEMM at n = 1, 3, 17, 2047, 2048 with beta 0 and 1 against the
 *    f16 path and the f64 product (5e-2: E4M3 activations, 3 mantissa bits, ~2-3% per value); the probe
 *    refusing on Hopper is a failure (prefill would silently lose FP8). Elsewhere the probe must refuse and
 *    say why.
 */
#include "config.h"

#include "runner/cuda/cuda.h"
#include "tests/check.h"
#include "tests/cuda/wrand.h"

static int ulp16(uint16_t a, uint16_t b)
{
	/* distance in f16 steps for finite values of the same sign (enough here: the test data has no NaN) */
	int ia = (a & 0x8000) ? -(int)(a & 0x7fff) : (int)a, ib = (b & 0x8000) ? -(int)(b & 0x7fff) : (int)b;
	return ia > ib ? ia - ib : ib - ia;
}

static void dequant_case(uint32_t type, int64_t rows, int64_t cols, uint64_t seed)
{
	const char *tn = gguf_type_name(type);
	size_t size = 0;
	uint8_t *w = wr_matrix(type, rows, cols, seed, &size);
	uint16_t *got = malloc((size_t)(rows * cols) * 2);
	float *row = malloc((size_t)cols * sizeof *row);
	char msg[512];
	int rc = rn_cuda_test_dequant_f16(type, w, size, rows, cols, got, msg, sizeof msg);
	CHECKF(rc == 0, "%s %lldx%lld dequant: %s", tn, (long long)rows, (long long)cols, msg);
	struct gguf_tensor t = wr_tensor(type, rows, cols, w, size);
	int64_t diff = 0, worst = 0, first = -1;
	for (int64_t r = 0; r < rows && rc == 0; r++) {
		CHECK(gguf_tensor_dequantize_row(&t, r, 0, cols, row) == GGUF_OK);
		for (int64_t c = 0; c < cols; c++) {
			uint16_t want = gguf_f32_to_f16(row[c]), g = got[r * cols + c];
			if (want != g) {
				if (first < 0)
					first = r * cols + c;
				diff++;
				int u = ulp16(want, g);
				if (u > worst)
					worst = u;
			}
		}
	}
	/* quant.cuh's Q4_1 / Q5_1 decode (d * q + m) is contracted into an fma by nvcc, one rounding fewer than
	 * gguf's: at most 1 f16 step after rounding, and rarely */
	const bool fma_types = type == GGUF_TYPE_Q4_1 || type == GGUF_TYPE_Q5_1;
	if (fma_types)
		CHECKF(rc != 0 || worst <= 1, "%s %lldx%lld: f16 dequantization differs by up to %lld f16 steps", tn,
		       (long long)rows, (long long)cols, (long long)worst);
	else
		CHECKF(rc != 0 || diff == 0, "%s %lldx%lld: %lld of %lld f16 values differ from gguf's (first at %lld, up to %lld steps)",
		       tn, (long long)rows, (long long)cols, (long long)diff, (long long)(rows * cols), (long long)first,
		       (long long)worst);
	printf("dequant %-14s %5lldx%-5lld %s (%lld differ)\n", tn, (long long)rows, (long long)cols,
	       rc ? "ERROR" : diff == 0 ? "bit-exact" : "differs", (long long)diff);
	free(w);
	free(got);
	free(row);
}

/* y0 + the f64 product, or the product alone */
static void ref_product(uint32_t type, const uint8_t *w, size_t size, int64_t rows, int64_t cols, const float *x, int n,
			const float *y0, double *yd)
{
	wr_ref_matmul(type, w, size, rows, cols, x, n, yd);
	if (y0)
		for (int64_t i = 0; i < (int64_t)n * rows; i++)
			yd[i] += y0[i];
}

static void gemm_cases(uint32_t type, int64_t rows, int64_t cols, const float *x, const float *y0, uint64_t seed)
{
	const char *tn = gguf_type_name(type);
	size_t size = 0;
	uint8_t *w = wr_matrix(type, rows, cols, seed, &size);
	const int ns[3] = {17, 100, 301};
	char msg[512];
	for (int t = 0; t < 3; t++) {
		const int n = ns[t];
		for (int acc = 0; acc < 2; acc++) {
			float *y[2];
			double *yd = malloc((size_t)n * (size_t)rows * sizeof *yd);
			ref_product(type, w, size, rows, cols, x, n, acc ? y0 : NULL, yd);
			for (int mode = 0; mode < 2; mode++) {
				y[mode] = malloc((size_t)n * (size_t)rows * sizeof(float));
				if (acc)
					memcpy(y[mode], y0, (size_t)n * (size_t)rows * sizeof(float));
				int rc = rn_cuda_test_gemm(type, w, size, rows, cols, x, n, mode, acc, y[mode], msg, sizeof msg);
				CHECKF(rc == 0, "%s n=%d beta=%d mode %d: %s", tn, n, acc, mode, msg);
				double e = rc ? 1.0 : wr_nerr_d(y[mode], yd, (int64_t)n * rows);
				CHECKF(e < 4e-3, "%s %lldx%lld n=%d beta=%d %s: error %.3g vs f64 (tolerance 4e-3)", tn,
				       (long long)rows, (long long)cols, n, acc, mode ? "f16 cache" : "per-call dequant", e);
			}
			double d = wr_nerr_f(y[1], y[0], (int64_t)n * rows);
			CHECKF(d < 1e-5, "%s n=%d beta=%d: f16 cache vs per-call dequantization differ by %.3g (tolerance 1e-5)",
			       tn, n, acc, d);
			printf("gemm %-14s n=%-4d beta=%d  cache vs no-cache %.2e\n", tn, n, acc, d);
			free(y[0]);
			free(y[1]);
			free(yd);
		}
	}
	free(w);
}

static void fp8_cases(int cc, const float *x, const float *y0)
{
	const uint32_t type = GGUF_TYPE_FP8_E4M3_B128;
	const int64_t rows = 256, cols = 1024;
	size_t size = 0;
	uint8_t *w = wr_matrix(type, rows, cols, 99, &size);
	const int ns[5] = {1, 3, 17, 2047, 2048};
	char msg[512];
	for (int t = 0; t < 5; t++) {
		const int n = ns[t];
		for (int acc = 0; acc < 2; acc++) {
			float *y8 = malloc((size_t)n * (size_t)rows * sizeof(float)), *y16 = malloc((size_t)n * (size_t)rows * sizeof(float));
			double *yd = malloc((size_t)n * (size_t)rows * sizeof *yd);
			if (acc) {
				memcpy(y8, y0, (size_t)n * (size_t)rows * sizeof(float));
				memcpy(y16, y0, (size_t)n * (size_t)rows * sizeof(float));
			}
			int rc = rn_cuda_test_gemm(type, w, size, rows, cols, x, n, 2, acc, y8, msg, sizeof msg);
			if (cc != 90) {
				/* not Hopper: the probe must refuse and say so (the f16 path serves FP8 there) */
				CHECKF(rc != 0 && strstr(msg, "sm_") != NULL, "FP8 on sm_%d: the probe %s (%s)", cc,
				       rc ? "refused without naming the architecture" : "accepted", msg);
				if (t == 0 && acc == 0)
					printf("fp8-lt: refused on sm_%d as expected: %s\n", cc, msg);
				free(y8);
				free(y16);
				free(yd);
				continue;
			}
			CHECKF(rc == 0, "FP8 cuBLASLt n=%d beta=%d on Hopper: %s", n, acc, msg);
			ref_product(type, w, size, rows, cols, x, n, acc ? y0 : NULL, yd);
			int rc16 = rn_cuda_test_gemm(type, w, size, rows, cols, x, n, 0, acc, y16, msg, sizeof msg);
			CHECKF(rc16 == 0, "FP8 f16 path n=%d: %s", n, msg);
			double ed = rc ? 1.0 : wr_nerr_d(y8, yd, (int64_t)n * rows);
			double ef = rc || rc16 ? 1.0 : wr_nerr_f(y8, y16, (int64_t)n * rows);
			/* beta 1 adds C of the same size as the product: the error is normalised by |C + product| then, so
			 * compare the product part too */
			double ep = ed;
			if (acc && !rc) {
				double num = 0, den = 0;
				for (int64_t i = 0; i < (int64_t)n * rows; i++) {
					double p = (double)y8[i] - (double)y0[i], r = yd[i] - (double)y0[i];
					num += (p - r) * (p - r);
					den += r * r;
				}
				ep = den > 0 ? sqrt(num / den) : 1.0;
			}
			CHECKF(ed < 5e-2 && ep < 5e-2, "FP8 cuBLASLt n=%d beta=%d: error %.3g vs f64 (product part %.3g, tolerance 5e-2)",
			       n, acc, ed, ep);
			CHECKF(ef < 5e-2, "FP8 cuBLASLt n=%d beta=%d: differs from the f16 path by %.3g (tolerance 5e-2)", n, acc,
			       ef);
			printf("fp8-lt n=%-4d beta=%d  vs f64 %.2e (product %.2e)  vs f16 path %.2e\n", n, acc, ed, ep, ef);
			free(y8);
			free(y16);
			free(yd);
		}
	}
	free(w);
}

int main(void)
{
	char msg[512];
	int bad = rn_cuda_host_gemm_check(msg, sizeof msg);
	CHECKF(bad == 0, "host gemm check: %d mismatches, first: %s", bad, msg);
	printf("host: FP8 scale layout (n = 1..4100, K = 128..17408) and probe row counts: %s\n", bad ? "FAIL" : "ok");
	if (rn_cuda_device_count() == 0) {
		if (check_failures)
			return check_done();
		SKIP("no CUDA device (rn_cuda_device_count() == 0): the host checks passed; the GEMM kernels need a GPU");
	}
	char dev[160];
	rn_cuda_device_describe(0, dev, sizeof dev);
	const int cc = rn_cuda_test_device_cc();
	printf("device 0: %s (cc %d)\n", dev, cc);

	static const uint32_t types[] = {GGUF_TYPE_F32,  GGUF_TYPE_F16,  GGUF_TYPE_BF16, GGUF_TYPE_Q4_0,
					 GGUF_TYPE_Q4_1, GGUF_TYPE_Q5_0, GGUF_TYPE_Q5_1, GGUF_TYPE_Q8_0,
					 GGUF_TYPE_Q4_K, GGUF_TYPE_Q5_K, GGUF_TYPE_Q6_K, GGUF_TYPE_FP8_E4M3_B128};
	for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
		const bool kq = types[k] == GGUF_TYPE_Q4_K || types[k] == GGUF_TYPE_Q5_K || types[k] == GGUF_TYPE_Q6_K;
		dequant_case(types[k], 37, 1024, 7 + k);         /* a partial 32-row tile */
		dequant_case(types[k], 70, kq ? 1280 : 896, 8 + k); /* legacy/float: a partial 256-column tile */
	}
	dequant_case(GGUF_TYPE_Q4_K, 1024, 5120, 21);          /* Qwen3-14B's K/V shape */

	const int nmax = 2048;
	const int64_t cmax = 1024, rmax = 256;
	float *x = malloc((size_t)nmax * cmax * sizeof *x), *y0 = malloc((size_t)nmax * rmax * sizeof *y0);
	uint64_t s = 31;
	for (int64_t i = 0; i < (int64_t)nmax * cmax; i++)
		x[i] = wr_unif(&s) * (i % 97 == 3 ? 8.0f : 1.0f);
	for (int64_t i = 0; i < (int64_t)nmax * rmax; i++)
		y0[i] = wr_unif(&s) * 4.0f;
	gemm_cases(GGUF_TYPE_Q4_K, 256, 1024, x, y0, 41);
	gemm_cases(GGUF_TYPE_Q6_K, 256, 1024, x, y0, 42);
	gemm_cases(GGUF_TYPE_Q8_0, 256, 1024, x, y0, 43);
	fp8_cases(cc, x, y0);
	free(x);
	free(y0);
	return check_done();
}
