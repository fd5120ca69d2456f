/* tests/cuda/test_cuda_kernels.c — every CUDA matmul kernel against the CPU backend, on device 0.
 *
 * For each weight type: the decode matvec (1..11 activation rows, so the 8-row passes and the multi-row
 * templates are all exercised, on a small matrix that uses 4 warps per row and a tall one that uses 1) must
 * match rn_matmul on the same int8 activations to float summation order; the prefill GEMM (f16 tensor cores)
 * must match the f64 product to f16 rounding; the FP8 cuBLASLt path, where the device has it, to FP8
 * activation rounding. The GPU's activation quantization must produce the CPU's bytes exactly.
 * Skips (77) when there is no CUDA device.
 */
#include "config.h"

#include "runner/cuda/cuda.h"
#include "tests/check.h"
#include "tests/cuda/wrand.h"

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

int main(void)
{
	if (rn_cuda_device_count() == 0)
		SKIP("no CUDA device (rn_cuda_device_count() == 0): the kernels compile and link but cannot run here");
	char dev[160], msg[512];
	rn_cuda_device_describe(0, dev, sizeof dev);
	printf("device 0: %s\n", dev);

	act_quant_check(1, 1024);
	act_quant_check(2, 1024);
	act_quant_check(2, 17408);

	const int64_t rows_list[2] = {37, 4096};
	float *x = malloc((size_t)NMAX * 4096 * sizeof *x);
	uint64_t s = 11;
	for (int64_t i = 0; i < (int64_t)NMAX * 4096; i++)
		x[i] = wr_unif(&s) * (i % 97 == 3 ? 8.0f : 1.0f);
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		const struct tcase *tc = &cases[k];
		const char *tn = gguf_type_name(tc->type);
		for (int ri = 0; ri < 2; ri++) {
			const int64_t R = rows_list[ri], C = tc->cols;
			size_t size = 0;
			uint8_t *w = wr_matrix(tc->type, R, C, 3 + k, &size);
			float *y = malloc((size_t)(NMAX * R) * sizeof *y), *yc = malloc((size_t)(NMAX * R) * sizeof *yc);
			double *yd = malloc((size_t)(NMAX * R) * sizeof *yd);
			const double tol_cpu = 1e-5; /* same integers and scales as the CPU: summation order only */
			const int ns[4] = {1, 2, 8, 11};
			for (int t = 0; t < 4; t++) {
				int n = ns[t];
				int rc = rn_cuda_test_matvec(tc->type, w, size, R, C, x, n, 0, y, msg, sizeof msg);
				CHECKF(rc == 0, "%s %lldx%lld n=%d matvec: %s", tn, (long long)R, (long long)C, n, msg);
				CHECK(wr_cpu_matmul(tc->type, w, size, R, C, x, n, yc) == 0);
				double e = wr_nerr_f(y, yc, n * R);
				CHECKF(rc == 0 && e < tol_cpu, "%s %lldx%lld n=%d: GPU matvec vs CPU error %.3g (tolerance %.1g)", tn,
				       (long long)R, (long long)C, n, e, tol_cpu);
				if (t == 3)
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
	return check_done();
}
