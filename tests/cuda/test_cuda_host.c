/* tests/cuda/test_cuda_host.c — the CUDA backend's decoding code, compiled for the host, against the CPU
 * backend and gguf's reference dequantization. Runs on every CUDA build, GPU or not.
 *
 * For every weight type the kernels read: random GGUF blocks are repacked exactly as the upload does, then
 * (1) dequantized unit by unit and compared with gguf_tensor_dequantize_row, (2) multiplied with activation
 * rows through the very unit code the decode kernels run (int8 dp4a sums included), compared with the CPU
 * backend's rn_matmul on the same int8 activations (tight: only float summation order differs) and with a
 * double-precision product (loose: activation quantization). Plus the scalar conversions against gguf's.
 */
#include "config.h"

#include "runner/cuda/cuda.h"
#include "tests/check.h"
#include "tests/cuda/wrand.h"

struct tcase {
	uint32_t type;
	int64_t rows, cols;
	double tol_ref; /* vs the double-precision product with f32 activations */
};

static const struct tcase cases[] = {
	{GGUF_TYPE_F32, 37, 808, 1e-6},
	{GGUF_TYPE_F16, 37, 808, 2e-3},  /* activations rounded to f16 (as the CPU backend) */
	{GGUF_TYPE_BF16, 37, 808, 1e-2}, /* activations rounded to bf16 */
	{GGUF_TYPE_Q4_0, 37, 800, 3e-2},
	{GGUF_TYPE_Q4_1, 37, 800, 3e-2},
	{GGUF_TYPE_Q5_0, 37, 800, 3e-2},
	{GGUF_TYPE_Q5_1, 37, 800, 3e-2},
	{GGUF_TYPE_Q8_0, 37, 800, 3e-2},
	{GGUF_TYPE_Q4_K, 37, 768, 3e-2},
	{GGUF_TYPE_Q5_K, 37, 768, 3e-2},
	{GGUF_TYPE_Q6_K, 37, 768, 3e-2},
	{GGUF_TYPE_FP8_E4M3_B128, 200, 272, 1e-6},
};

#define NX 5

int main(void)
{
	char msg[512];
	int bad = rn_cuda_host_selfcheck(msg, sizeof msg);
	CHECKF(bad == 0, "%d scalar conversion mismatches; first: %s", bad, msg);

	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		const struct tcase *tc = &cases[k];
		const char *tn = gguf_type_name(tc->type);
		size_t size = 0;
		uint8_t *w = wr_matrix(tc->type, tc->rows, tc->cols, 7 + k, &size);
		CHECKF(w != NULL, "%s: no test matrix", tn);
		if (!w)
			continue;
		const int64_t R = tc->rows, C = tc->cols;

		/* (1) dequantization */
		float *deq = malloc((size_t)(R * C) * sizeof *deq), *ref = malloc((size_t)(R * C) * sizeof *ref);
		int rc = rn_cuda_host_dequant(tc->type, w, size, R, C, deq, msg, sizeof msg);
		CHECKF(rc == 0, "%s: rn_cuda_host_dequant: %s", tn, msg);
		struct gguf_tensor t = wr_tensor(tc->type, R, C, w, size);
		for (int64_t r = 0; r < R; r++)
			CHECK(gguf_tensor_dequantize_row(&t, r, 0, C, ref + r * C) == GGUF_OK);
		double e_deq = wr_nerr_f(deq, ref, R * C);
		int64_t exact = 0;
		for (int64_t i = 0; i < R * C; i++)
			exact += deq[i] == ref[i];
		CHECKF(rc == 0 && e_deq < 1e-6, "%s: dequantization error %.3g (%lld of %lld values exact)", tn, e_deq,
		       (long long)exact, (long long)(R * C));

		/* (2) matvec through the kernels' unit code */
		float x[NX * 1024];
		uint64_t s = 99 + k;
		for (int64_t i = 0; i < NX * C; i++)
			x[i] = wr_unif(&s) * ((i % 97) == 3 ? 8.0f : 1.0f);
		float *y = malloc((size_t)(NX * R) * sizeof *y), *yc = malloc((size_t)(NX * R) * sizeof *yc);
		double *yd = malloc((size_t)(NX * R) * sizeof *yd);
		for (int n = 1; n <= NX; n += 2) {
			rc = rn_cuda_host_matvec(tc->type, w, size, R, C, x, n, y, msg, sizeof msg);
			CHECKF(rc == 0, "%s: rn_cuda_host_matvec: %s", tn, msg);
			CHECK(wr_cpu_matmul(tc->type, w, size, R, C, x, n, yc) == 0);
			wr_ref_matmul(tc->type, w, size, R, C, x, n, yd);
			double e_cpu = wr_nerr_f(y, yc, n * R), e_ref = wr_nerr_d(y, yd, n * R);
			/* the same integers and scales on both sides: only float summation order differs */
			CHECKF(rc == 0 && e_cpu < 2e-6, "%s, %d rows: CUDA unit code vs CPU rn_matmul error %.3g", tn, n, e_cpu);
			CHECKF(rc == 0 && e_ref < tc->tol_ref, "%s, %d rows: error vs the f64 product %.3g (tolerance %.1g)", tn,
			       n, e_ref, tc->tol_ref);
			if (n == NX)
				printf("%-14s dequant err %.2e (%5.1f%% exact)  matvec vs CPU %.2e  vs f64 %.2e\n", tn, e_deq,
				       100.0 * (double)exact / (double)(R * C), e_cpu, e_ref);
		}
		free(y);
		free(yc);
		free(yd);
		free(deq);
		free(ref);
		free(w);
	}

	/* bad input: a type without kernel, a wrong size, a ragged shape */
	uint8_t junk[64] = {0};
	float out[64];
	CHECK(rn_cuda_host_dequant(GGUF_TYPE_Q2_K, junk, sizeof junk, 1, 256, out, msg, sizeof msg) == -1);
	CHECKF(strstr(msg, "no CUDA kernel") != NULL, "message: %s", msg);
	CHECK(rn_cuda_host_dequant(GGUF_TYPE_Q8_0, junk, 33, 1, 32, out, msg, sizeof msg) == -1);
	CHECKF(strstr(msg, "needs 34 bytes") != NULL, "message: %s", msg);
	CHECK(rn_cuda_host_dequant(GGUF_TYPE_F16, junk, 12, 1, 6, out, msg, sizeof msg) == -1);
	CHECKF(strstr(msg, "multiple of 16") != NULL || strstr(msg, "multiple") != NULL, "message: %s", msg);
	return check_done();
}
