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
 *    say why;
 *  - the whole prefill of a small qwen3 model (Q4_K and FP8) with the f16 cache (the default) and without
 *    (ORUN_CUDA_PREFILL_F16=0): stats as expected, logits of a 40- and a 63-row chunk agree (1e-5: the same
 *    f16 operands) and match the CPU backend (3e-2 Q4_K, 8e-2 FP8, as tests/cuda/test_cuda_forward.c).
 */
#include "config.h"

#include <math.h>

#include "runner/backend.h"
#include "runner/cpu/cpu.h"
#include "runner/cuda/cuda.h"
#include "runner/model.h"
#include "tests/check.h"
#include "tests/cuda/synth.h"

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


#define NB 64

/* One load of the CUDA backend with ORUN_CUDA_PREFILL_F16 = env (NULL: unset); logits [NB][V] of a chunk of n
 * rows (every row wanted) at positions 0.. of sequence 0. */
static int prefill_logits(const struct rn_model *m, const char *env, int n, float *logits, struct rn_cuda_stats *st)
{
	if (env)
		setenv("ORUN_CUDA_PREFILL_F16", env, 1);
	else
		unsetenv("ORUN_CUDA_PREFILL_F16");
	struct rn_load_params p = {0};
	p.n_seq = 1;
	p.n_ctx = 256;
	p.n_batch = NB;
	p.n_threads = 2;
	p.kv_type = RN_KV_F16;
	struct rn_error err = {0};
	void *g = NULL;
	int rc = rn_cuda_backend_ops.load(m, &p, &g, &err);
	CHECKF(rc == RN_OK, "CUDA load (ORUN_CUDA_PREFILL_F16=%s): %s", env ? env : "unset", err.msg);
	if (rc)
		return rc;
	int32_t tok[NB], pos[NB], seq[NB], cell[NB], out_row[NB];
	uint8_t want[NB];
	for (int i = 0; i < n; i++) {
		tok[i] = (int32_t)((i * 7919 + 13) % m->hp.n_vocab);
		pos[i] = cell[i] = out_row[i] = i;
		seq[i] = 0;
		want[i] = 1;
	}
	struct rn_batch_cells bc;
	memset(&bc, 0, sizeof bc);
	bc.b.n_tokens = n;
	bc.b.token = tok;
	bc.b.pos = pos;
	bc.b.seq = seq;
	bc.b.want = want;
	bc.cell = cell;
	bc.n_out = n;
	bc.out_row = out_row;
	struct rn_outputs o = {.logits = logits};
	rc = rn_cuda_backend_ops.forward(g, &bc, &o, &err);
	CHECKF(rc == RN_OK, "CUDA forward n=%d: %s", n, err.msg);
	rn_cuda_get_stats(g, st);
	rn_cuda_backend_ops.free(g);
	unsetenv("ORUN_CUDA_PREFILL_F16");
	return rc;
}

static int cpu_logits(const struct rn_model *m, int n, float *logits)
{
	struct rn_load_params p = {0};
	p.n_seq = 1;
	p.n_ctx = 256;
	p.n_batch = NB;
	p.n_threads = 2;
	p.kv_type = RN_KV_F16;
	int32_t table[8];
	for (int i = 0; i < 8; i++)
		table[i] = i;
	struct rn_kv_pages pages = {.n_blocks = 8, .blocks_per_seq = 8, .table = table};
	struct rn_error err = {0};
	void *c = NULL;
	int rc = rn_cpu_backend_ops.load_paged(m, &p, &pages, &c, &err);
	CHECKF(rc == RN_OK, "CPU load: %s", err.msg);
	if (rc)
		return rc;
	int32_t tok[NB], pos[NB], seq[NB], cell[NB], out_row[NB];
	uint8_t want[NB];
	for (int i = 0; i < n; i++) {
		tok[i] = (int32_t)((i * 7919 + 13) % m->hp.n_vocab);
		pos[i] = cell[i] = out_row[i] = i;
		seq[i] = 0;
		want[i] = 1;
	}
	struct rn_batch_cells bc;
	memset(&bc, 0, sizeof bc);
	bc.b.n_tokens = n;
	bc.b.token = tok;
	bc.b.pos = pos;
	bc.b.seq = seq;
	bc.b.want = want;
	bc.cell = cell;
	bc.n_out = n;
	bc.out_row = out_row;
	struct rn_outputs o = {.logits = logits};
	rc = rn_cpu_backend_ops.forward(c, &bc, &o, &err);
	CHECKF(rc == RN_OK, "CPU forward: %s", err.msg);
	rn_cpu_backend_ops.free(c);
	return rc;
}

static double worst_row(const float *a, const float *b, int n, int V)
{
	double w = 0;
	for (int k = 0; k < n; k++) {
		double e = wr_nerr_f(a + (size_t)k * V, b + (size_t)k * V, V);
		if (!(e == e))
			e = 1e9;
		w = e > w ? e : w;
	}
	return w;
}

static void forward_case(uint32_t type, int cc)
{
	struct synth_opts o;
	synth_defaults(&o, "qwen3", type);
	size_t size = 0;
	uint8_t *buf = synth_model(&o, &size);
	CHECK(buf != NULL);
	if (!buf)
		return;
	struct gguf_error ge;
	struct gguf_file *f = gguf_parse(buf, size, &ge);
	CHECKF(f != NULL, "parse: %s", ge.msg);
	struct rn_error err = {0};
	struct rn_model *m = f ? rn_model_load(f, &err) : NULL;
	CHECKF(m != NULL, "model: %s", err.msg);
	const char *tn = gguf_type_name(type);
	const int V = m ? m->hp.n_vocab : 0;
	const bool fp8 = type == GGUF_TYPE_FP8_E4M3_B128;
	const double tol_cpu = fp8 ? 8e-2 : 3e-2;
	float *lc = malloc((size_t)NB * V * sizeof(float)), *l0 = malloc((size_t)NB * V * sizeof(float)),
	      *l1 = malloc((size_t)NB * V * sizeof(float));
	const int ns[2] = {40, 63};
	for (int t = 0; m && t < 2; t++) {
		const int n = ns[t];
		struct rn_cuda_stats s0, s1;
		memset(&s0, 0, sizeof s0);
		memset(&s1, 0, sizeof s1);
		if (prefill_logits(m, "0", n, l0, &s0) || prefill_logits(m, NULL, n, l1, &s1) || cpu_logits(m, n, lc))
			continue;
		CHECKF(s0.prefill_cache == 0, "%s: ORUN_CUDA_PREFILL_F16=0 still keeps the f16 copies", tn);
		if (fp8 && cc == 90) {
			CHECKF(s1.prefill_fp8_lt == 1 && s1.prefill_fp8_why[0] == 0, "%s on Hopper: FP8 prefill not on cuBLASLt: %s",
			       tn, s1.prefill_fp8_why);
		} else if (fp8) {
			CHECKF(s1.prefill_fp8_lt == 0 && strstr(s1.prefill_fp8_why, "sm_") != NULL,
			       "%s on sm_%d: prefill_fp8_lt %d, why \"%s\"", tn, cc, s1.prefill_fp8_lt, s1.prefill_fp8_why);
		}
		if (!fp8 || !s1.prefill_fp8_lt)
			CHECKF(s1.prefill_cache == 1, "%s: the f16 prefill copies are not kept by default", tn);
		double d = worst_row(l1, l0, n, V), e0 = worst_row(l0, lc, n, V), e1 = worst_row(l1, lc, n, V);
		/* FP8 on cuBLASLt uses no f16 copies: both loads then run the same FP8 GEMMs */
		CHECKF(d < 1e-5, "%s n=%d: prefill with and without the f16 copies differ by %.3g (tolerance 1e-5)", tn, n, d);
		CHECKF(e0 < tol_cpu && e1 < tol_cpu, "%s n=%d: prefill vs the CPU %.3g (no cache) %.3g (cache), tolerance %.1g",
		       tn, n, e0, e1, tol_cpu);
		printf("forward %-14s n=%d  cache vs no-cache %.2e  vs CPU %.2e  fp8-lt %d  cache %d%s%s\n", tn, n, d, e1,
		       s1.prefill_fp8_lt, s1.prefill_cache, s1.prefill_fp8_why[0] ? "  why: " : "", s1.prefill_fp8_why);
	}
	free(lc);
	free(l0);
	free(l1);
	rn_model_free(m);
	gguf_close(f);
	free(buf);
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
	forward_case(GGUF_TYPE_Q4_K, cc);
	forward_case(GGUF_TYPE_FP8_E4M3_B128, cc);
	free(x);
	free(y0);
	return check_done();
}
