/* tests/cuda/test_cuda_kernels.c — every CUDA matmul kernel against the CPU backend, on device 0.
 *
 * For each weight type: the decode matvec (1..11 activation rows, so the 8-row passes and the multi-row
 * templates are all exercised, on a small matrix that uses 4 warps per row and a tall one that uses 1) must
 * match rn_matmul on the same int8 activations to float summation order; the prefill GEMM (f16 tensor cores)
 * must match the f64 product to f16 rounding; the FP8 cuBLASLt path, where the device has it, to FP8
 * activation rounding. The GPU's activation quantization must produce the CPU's bytes exactly.
 * Then Qwen3-14B's real matrices (K/V 1024 x 5120, gate/up 17408 x 5120, down 5120 x 17408, the LM head
 * 151936 x 5120) in the types its Q4_K_M, Q8_0 and FP8 files use: rows of 5120 and 17408 values make every lane
 * of the matvec walk several units (17408 / 32 / 32 = 17 for one warp a row), with 1, 5 and 8 activation rows;
 * tolerance 1e-5 as above (the same integer or exact float products: f32 summation order only, ~1e-7 x the
 * square root of the units summed). The FP8 cuBLASLt GEMM at odd token counts (17, 37: scale rows padded to a
 * multiple of 4) against the f64 product: 5e-2 as above (E4M3 activations, ~3.6% rms per rounding, averaged
 * over 5120 or 17408 products).
 * Skips (77) when there is no CUDA device; ORUN_CUDA_TEST_CPU=1 runs the real shapes' CPU references there.
 * ORUN_CUDA_TEST_QUICK=1: the 37-row matrices with 1 and 11 activation rows, no real shapes (for
 * compute-sanitizer).
 */
#include "config.h"

#include "tests/cuda/cmp.h"

struct tcase {
	uint32_t type;
	int64_t cols;
};

static const struct tcase cases[] = {
	{GGUF_TYPE_F32, 1024}, {GGUF_TYPE_F16, 1024}, {GGUF_TYPE_BF16, 1024}, {GGUF_TYPE_Q4_0, 1024},
	{GGUF_TYPE_Q4_1, 1024}, {GGUF_TYPE_Q5_0, 1024}, {GGUF_TYPE_Q5_1, 1024}, {GGUF_TYPE_Q8_0, 1024},
	{GGUF_TYPE_Q4_K, 1024}, {GGUF_TYPE_Q5_K, 1024}, {GGUF_TYPE_Q6_K, 1024}, {GGUF_TYPE_FP8_E4M3_B128, 1024},
};

#define NMAX 48

static void act_quant_check(int kind, int64_t cols)
{
	enum rn_act_kind k = kind == 1 ? RN_ACT_Q8_32 : RN_ACT_Q8_256;
	const int n = 5;
	size_t rb = rn_act_row_bytes(k, cols);
	float *x = malloc((size_t)(n * cols) * sizeof *x);
	uint8_t *cpu = aligned_alloc(64, rb * n), *gpu = aligned_alloc(64, rb * n);
	uint64_t s = 5 + kind;
	for (int64_t i = 0; i < n * cols; i++)
		x[i] = wr_unif(&s) * (i % 301 == 7 ? 30.0f : 1.0f);
	for (int64_t c = 0; c < 32; c++)
		x[c] = 0.0f; /* an all-zero block */
	rn_act_quantize_rows(k, x, cols, cols, 0, n, cpu);
	char msg[512];
	int rc = rn_cuda_test_act_quant(kind, x, n, cols, gpu, rb, msg, sizeof msg);
	CHECKF(rc == 0, "rn_cuda_test_act_quant(%d): %s", kind, msg);
	/* q, d and the sums (Q8_32: int32 s and f32 sm per block; Q8_256: int16 per 16 values) */
	size_t used = kind == 1 ? (size_t)cols + (size_t)(cols / 32) * 12
				: (size_t)cols + (size_t)(cols / 256) * 4 + (size_t)(cols / 16) * 2;
	int diff = 0;
	for (int j = 0; j < n && rc == 0; j++)
		diff += memcmp(cpu + (size_t)j * rb, gpu + (size_t)j * rb, used) != 0;
	CHECKF(rc == 0 && diff == 0, "activation kind %d: %d of %d rows differ from the CPU's bytes", kind, diff, n);
	free(x);
	free(cpu);
	free(gpu);
}

/* One of Qwen3-14B's matrices: the decode matvec (1, 5, 8 rows) against the CPU backend and, for FP8, the
 * cuBLASLt GEMM at odd token counts against the f64 product. Without a GPU only the CPU side runs. */
static void real_shape(uint32_t type, int64_t R, int64_t C, bool gpu, const float *x)
{
	const char *tn = gguf_type_name(type);
	double t0 = cmp_now();
	const size_t size = wr_matrix_bytes(type, R, C);
	uint8_t *w = malloc(size + 16);
	CHECKF(w && wr_fill(type, R, C, 101 + (uint64_t)R, w, true) == 0, "%s %lldx%lld: no matrix", tn, (long long)R,
	       (long long)C);
	const int NM = 8;
	float *y = malloc((size_t)(NM * R) * sizeof *y), *yc = malloc((size_t)(NM * R) * sizeof *yc);
	const int ns[3] = {1, 5, 8};
	const double tol = 1e-5;
	double worst = 0, tc = 0;
	char msg[512];
	for (int t = 0; t < 3 && w; t++) {
		const int n = ns[t];
		double a = cmp_now();
		CHECK(wr_cpu_matmul_mt(type, w, size, R, C, x, n, yc, cmp_threads()) == 0);
		tc += cmp_now() - a;
		if (!gpu)
			continue;
		int rc = rn_cuda_test_matvec(type, w, size, R, C, x, n, 0, y, msg, sizeof msg);
		CHECKF(rc == 0, "%s %lldx%lld n=%d matvec: %s", tn, (long long)R, (long long)C, n, msg);
		double e = rc == 0 ? wr_nerr_f(y, yc, n * R) : 1e9;
		CHECKF(e < tol, "%s %lldx%lld n=%d: GPU matvec vs CPU error %.3g (tolerance %.0e)", tn, (long long)R,
		       (long long)C, n, e, tol);
		worst = e > worst ? e : worst;
	}
	printf("%-14s %6lld x %-5lld matvec n=1,5,8 vs CPU %s", tn, (long long)R, (long long)C,
	       gpu ? "" : "(CPU side only)");
	if (gpu)
		printf("%.2e", worst);
	if (type == GGUF_TYPE_FP8_E4M3_B128 && w) {
		/* cuBLASLt's FP8 GEMM at odd token counts (the f64 reference is what costs: 17 and 37 rows on
		 * 1024 x 5120, 17 on 5120 x 17408) */
		const int ng[2] = {17, 37};
		for (int k = 0; k < (R == 1024 ? 2 : R == 5120 ? 1 : 0); k++) {
			double *yd = malloc((size_t)(ng[k] * R) * sizeof *yd);
			float *yg = malloc((size_t)(ng[k] * R) * sizeof *yg);
			double a = cmp_now();
			wr_ref_matmul(type, w, size, R, C, x, ng[k], yd);
			tc += cmp_now() - a;
			if (gpu) {
				int rc = rn_cuda_test_matvec(type, w, size, R, C, x, ng[k], 2, yg, msg, sizeof msg);
				if (rc == 0) {
					double ef = wr_nerr_d(yg, yd, ng[k] * R);
					CHECKF(ef < 5e-2, "FP8 cuBLASLt GEMM %lldx%lld n=%d vs f64 error %.3g", (long long)R,
					       (long long)C, ng[k], ef);
					printf("  fp8-lt n=%d vs f64 %.2e", ng[k], ef);
				} else {
					printf("  fp8-lt n=%d unavailable: %s", ng[k], msg);
				}
			}
			free(yd);
			free(yg);
		}
	}
	printf("  (%.1f s; CPU side %.1f s)\n", cmp_now() - t0, tc);
	free(w);
	free(y);
	free(yc);
}

static void real_shapes(bool gpu)
{
	const int64_t XC = 17408, XN = 40;
	float *x = malloc((size_t)(XN * XC) * sizeof *x);
	uint64_t s = 17;
	for (int64_t i = 0; i < XN * XC; i++)
		x[i] = wr_unif(&s) * (i % 89 == 5 ? 6.0f : 1.0f);
	/* read as [n][C] for each matrix's C (n * C <= XN * XC) */
	const struct {
		uint32_t type;
		int64_t rows, cols;
	} m[] = {
		{GGUF_TYPE_Q4_K, 1024, 5120},  {GGUF_TYPE_Q4_K, 17408, 5120}, {GGUF_TYPE_Q4_K, 5120, 17408},
		{GGUF_TYPE_Q6_K, 1024, 5120},  {GGUF_TYPE_Q6_K, 5120, 17408}, {GGUF_TYPE_Q6_K, 151936, 5120},
		{GGUF_TYPE_Q8_0, 1024, 5120},  {GGUF_TYPE_Q8_0, 17408, 5120}, {GGUF_TYPE_Q8_0, 5120, 17408},
		{GGUF_TYPE_Q8_0, 151936, 5120}, {GGUF_TYPE_FP8_E4M3_B128, 1024, 5120},
		{GGUF_TYPE_FP8_E4M3_B128, 5120, 17408}, {GGUF_TYPE_FP8_E4M3_B128, 17408, 5120},
		{GGUF_TYPE_BF16, 151936, 5120},
	};
	const char *only = getenv("ORUN_KERNELS_REAL"); /* e.g. "Q8_0 FP8": types whose names start so */
	for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
		bool take = !only || !*only;
		for (const char *w = only; w && *w && !take;) {
			size_t l = strcspn(w, " ,");
			take = l > 0 && strncmp(gguf_type_name(m[i].type), w, l) == 0;
			w += l + (w[l] != 0);
		}
		if (!take)
			continue;
		real_shape(m[i].type, m[i].rows, m[i].cols, gpu, x);
	}
	free(x);
}

int main(void)
{
	bool gpu = cmp_gpu_or_skip("the kernel test");
	char msg[512];
	if (!gpu) {
		real_shapes(false);
		return check_done();
	}

	act_quant_check(1, 1024);
	act_quant_check(2, 1024);
	act_quant_check(2, 17408);

	const bool quick = cmp_quick();
	const int64_t rows_list[2] = {37, 4096};
	float *x = malloc((size_t)NMAX * 4096 * sizeof *x);
	uint64_t s = 11;
	for (int64_t i = 0; i < (int64_t)NMAX * 4096; i++)
		x[i] = wr_unif(&s) * (i % 97 == 3 ? 8.0f : 1.0f);
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		const struct tcase *tc = &cases[k];
		const char *tn = gguf_type_name(tc->type);
		for (int ri = 0; ri < (quick ? 1 : 2); ri++) {
			const int64_t R = rows_list[ri], C = tc->cols;
			size_t size = 0;
			uint8_t *w = wr_matrix(tc->type, R, C, 3 + k, &size);
			float *y = malloc((size_t)(NMAX * R) * sizeof *y), *yc = malloc((size_t)(NMAX * R) * sizeof *yc);
			double *yd = malloc((size_t)(NMAX * R) * sizeof *yd);
			const double tol_cpu = 1e-5; /* same integers and scales as the CPU: summation order only */
			const int ns[4] = {1, 11, 2, 8};
			for (int t = 0; t < (quick ? 2 : 4); t++) {
				int n = ns[t];
				int rc = rn_cuda_test_matvec(tc->type, w, size, R, C, x, n, 0, y, msg, sizeof msg);
				CHECKF(rc == 0, "%s %lldx%lld n=%d matvec: %s", tn, (long long)R, (long long)C, n, msg);
				CHECK(wr_cpu_matmul(tc->type, w, size, R, C, x, n, yc) == 0);
				double e = wr_nerr_f(y, yc, n * R);
				CHECKF(rc == 0 && e < tol_cpu, "%s %lldx%lld n=%d: GPU matvec vs CPU error %.3g (tolerance %.1g)", tn,
				       (long long)R, (long long)C, n, e, tol_cpu);
				if (t == (quick ? 1 : 3))
					printf("%-14s %5lld rows  matvec vs CPU %.2e", tn, (long long)R, e);
			}
			/* the prefill path: f16 tensor cores against the f64 product */
			const int ng = NMAX;
			wr_ref_matmul(tc->type, w, size, R, C, x, ng, yd);
			int rc = rn_cuda_test_matvec(tc->type, w, size, R, C, x, ng, 1, y, msg, sizeof msg);
			CHECKF(rc == 0, "%s GEMM: %s", tn, msg);
			double eg = wr_nerr_d(y, yd, ng * R);
			double tol_g = tc->type == GGUF_TYPE_BF16 ? 1e-2 : 4e-3; /* bf16 activations for BF16 weights */
			CHECKF(rc == 0 && eg < tol_g, "%s %lldx%lld: GEMM vs f64 error %.3g", tn, (long long)R, (long long)C, eg);
			printf("  gemm vs f64 %.2e", eg);
			if (tc->type == GGUF_TYPE_FP8_E4M3_B128 && R % 128 == 0) {
				rc = rn_cuda_test_matvec(tc->type, w, size, R, C, x, ng, 2, y, msg, sizeof msg);
				if (rc == 0) {
					double ef = wr_nerr_d(y, yd, ng * R);
					CHECKF(ef < 5e-2, "FP8 cuBLASLt GEMM vs f64 error %.3g", ef);
					printf("  fp8-lt vs f64 %.2e", ef);
				} else {
					/* not a failure of orun's kernels: the f16 path serves FP8 then; reported, not counted */
					printf("  fp8-lt unavailable: %s", msg);
				}
			}
			printf("\n");
			free(w);
			free(y);
			free(yc);
			free(yd);
		}
	}
	free(x);
	if (!quick)
		real_shapes(true);
	return check_done();
}
