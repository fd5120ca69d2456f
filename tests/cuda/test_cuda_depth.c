/* tests/cuda/test_cuda_depth.c — decode attention deep into the context against the CPU backend: at 300, 1,000
 * and 5,000 cached cells, so the split-K partials and their combine run with several splits of uneven length.
 *
 * The model has Qwen3-14B's attention shape (40 query / 8 KV heads x 128, QK-norm, 5 query heads per KV head)
 * with a narrow residual (512), small FFN and vocabulary so that the CPU's half stays cheap: 2 layers, Q8_0.
 * The sequence is filled by decode-path calls of 16 rows (every call compared on its last row), so both
 * backends write K/V from the same int8 products and any difference at depth is the attention's. At each
 * depth, three single-row steps (cells d, d + 1, d + 2: split lengths odd and even) are compared; at 5,000 the
 * CUDA instance keeps the sequence in slot 126 of 128 (its K/V rows lie past 2^31 elements into a
 * [layer][K,V][slot][cell] cache). Then the same with a q8_0 KV cache to 1,000 cells.
 *
 * The test's power: the tokens change every 61 cells (the values differ by region) and the QK-norm weights are
 * near 1.3 (scores with a std of ~1.7: attention spread over tens to hundreds of cells, not the plain mean), so
 * the logits depend on the early cells. On the CPU the test measures how much: the same query over only the
 * last 256 cells (what a kernel that lost every split but the last would give) must move the logits by more
 * than 10x the tolerance, else the check could not see such a bug and fails.
 *
 * Tolerance: 5e-2 normalised logit error per row, as tests/cuda/test_cuda_shapes.c's int8 decode (there: any
 * difference between two correct backends, even f32 summation order, grows through int8 requantization to
 * ~1.5% on the logits, measured on the CPU; 5e-2 is ~3x that), while losing the early splits moves these
 * logits by ~1.3 (the power check, which must exceed 10x the tolerance). No clear argmax may differ (top-2
 * margin > 1% of the largest |logit|).
 * Skips (77) without a CUDA device; ORUN_CUDA_TEST_CPU=1 runs the CPU half (and the power check) there.
 * ORUN_CUDA_TEST_QUICK=1: 300 cells only, both KV types, slot 0 (for compute-sanitizer).
 */
#include "config.h"

#include "tests/cuda/cmp.h"
#include "tests/cuda/synth.h"

#define TOL 5e-2
#define SEG 61     /* cells per run of one token */
#define CHUNK 16   /* rows per fill call: the most the decode kernels take */
#define HIGH_SLOTS 128

static int32_t tok_of_cell(int cell, int V) { return (int32_t)(((int64_t)(cell / SEG) * 7919 + 29) % V); }

static void check_res(const char *what, const struct cmp_res *r, bool gpu)
{
	if (gpu) {
		CHECKF(r->worst < TOL, "%s: logits error %.3g (tolerance %.0e)", what, r->worst, TOL);
		CHECKF(r->flips == 0, "%s: %d rows whose clear argmax differs from the CPU's", what, r->flips);
	}
	CHECKF(r->rows == 0 || (r->cpu_rms > 0.05 && r->cpu_rms < 100), "%s: CPU logits rms %.3g", what, r->cpu_rms);
}

/* Fill cells [from, to) of seq with CHUNK-row calls; returns the merged comparison. */
static struct cmp_res fill(struct cmp *P, struct call *c, int seq, int from, int to, int V)
{
	struct cmp_res all = {0};
	for (int c0 = from; c0 < to; c0 += CHUNK) {
		int n = to - c0 < CHUNK ? to - c0 : CHUNK;
		call_reset(c);
		for (int i = 0; i < n; i++)
			call_add(c, tok_of_cell(c0 + i, V), c0 + i, seq, c0 + i, i == n - 1);
		struct cmp_res r = cmp_run(P, c, "fill");
		cmp_res_merge(&all, &r);
	}
	return all;
}

/* The CPU's logits for one row (seq, pos, cell, tok) into out. */
static int cpu_row(struct cmp *P, int seq, int32_t tok, int pos, int cell, float *out)
{
	struct call c = {0};
	call_add(&c, tok, pos, seq, cell, true);
	struct rn_batch_cells bc = call_cells(&c, c.seq);
	struct rn_outputs o = {.logits = out};
	struct rn_error e = {0};
	int rc = rn_cpu_backend_ops.forward(P->cpu, &bc, &o, &e);
	CHECKF(rc == RN_OK, "CPU forward: %s", e.msg);
	call_free(&c);
	return rc;
}

/* How far the logits of the step at cell d move when only the last 256 cells are visible (CPU, seq 1 holds
 * the same tokens at the same positions in its cells 0..255). */
static double power(struct cmp *P, int d, int V)
{
	const int W = 256;
	struct call c = {0};
	for (int i = 0; i < W; i += CHUNK) {
		call_reset(&c);
		for (int j = i; j < i + CHUNK && j < W; j++)
			call_add(&c, tok_of_cell(d - W + j, V), d - W + j, 1, j, false);
		struct rn_batch_cells bc = call_cells(&c, c.seq);
		struct rn_outputs o = {0};
		struct rn_error e = {0};
		CHECKF(rn_cpu_backend_ops.forward(P->cpu, &bc, &o, &e) == RN_OK, "CPU forward: %s", e.msg);
	}
	call_free(&c);
	float *a = malloc((size_t)V * 4), *b = malloc((size_t)V * 4);
	double pw = 0;
	if (cpu_row(P, 0, tok_of_cell(d, V), d, d, a) == RN_OK && cpu_row(P, 1, tok_of_cell(d, V), d, W, b) == RN_OK)
		pw = wr_nerr_f(b, a, V);
	free(a);
	free(b);
	return pw;
}

static void run_kv(const struct rn_model *m, enum rn_kv_type kv, const int *depths, int nd, bool gpu, bool high)
{
	const int V = m->hp.n_vocab;
	const int top = depths[nd - 1], n_ctx = (top + 3 + RN_KV_BLOCK) / RN_KV_BLOCK * RN_KV_BLOCK;
	const char *kn = kv == RN_KV_F16 ? "f16" : "q8_0";
	struct cmp P;
	/* the CPU holds seq 0 and seq 1 (the power check's); the GPU puts seq 0 in its last slot when high */
	if (!cmp_load(&P, m, 2, n_ctx, CHUNK, kv, gpu, high ? HIGH_SLOTS - 2 : 0)) {
		cmp_free(&P);
		return;
	}
	struct call c = {0};
	int filled = 0;
	for (int k = 0; k < nd; k++) {
		const int d = depths[k];
		char what[96];
		struct cmp_res fr = fill(&P, &c, 0, filled, d, V);
		snprintf(what, sizeof what, "%s KV: fill %d..%d (16-row calls)", kn, filled, d);
		check_res(what, &fr, P.gpu != NULL);
		struct cmp_res sr = {0};
		for (int s = 0; s < 3; s++) {
			call_reset(&c);
			call_add(&c, tok_of_cell(d + s, V), d + s, 0, d + s, true);
			struct cmp_res r = cmp_run(&P, &c, "step");
			cmp_res_merge(&sr, &r);
		}
		snprintf(what, sizeof what, "%s KV: 3 steps at %d cells", kn, d);
		check_res(what, &sr, P.gpu != NULL);
		filled = d + 3;
		if (P.gpu)
			printf("%-40s fill error %.2e, steps error %.2e (tol %.0e), flips %d | cpu rms %.3f\n", what, fr.worst,
			       sr.worst, TOL, fr.flips + sr.flips, sr.cpu_rms);
		else
			printf("%-40s cpu logits rms %.3f, min top-2 margin %.3f rms\n", what, sr.cpu_rms, sr.cpu_margin);
		if (k == nd - 1 && d >= 1000) {
			/* the power check needs the CPU's seq 1 empty and seq 0 at d + 3 cells: run it last */
			double pw = power(&P, d, V);
			printf("%s KV at %d cells: the last 256 cells alone move the logits by %.3f (10x tolerance = %.2f)\n", kn, d,
			       pw, 10 * TOL);
			CHECKF(pw > 10 * TOL, "%s KV at %d cells: logits move only %.3g without the early cells: the test "
					      "could not see a lost split", kn, d, pw);
		}
	}
	printf("%s KV: forward calls CPU %.1f s, GPU %.2f s\n", kn, P.t_cpu, P.t_gpu);
	call_free(&c);
	cmp_free(&P);
}

int main(void)
{
	bool gpu = cmp_gpu_or_skip("the deep-context decode attention test");
	struct synth_opts o;
	synth_defaults(&o, "qwen3", GGUF_TYPE_Q8_0);
	o.heads = 40;
	o.kv_heads = 8;
	o.head_dim = 128;
	o.dim = 512;
	o.ff = 512;
	o.vocab = 1000;
	o.qk_norm = 1.3f;
	o.ctx = 8192;
	size_t size = 0;
	uint8_t *buf = synth_model(&o, &size);
	CHECK(buf != NULL);
	if (!buf)
		return check_done();
	struct gguf_error ge;
	struct gguf_file *f = gguf_parse(buf, size, &ge);
	CHECKF(f != NULL, "parse: %s", ge.msg);
	struct rn_error err = {0};
	struct rn_model *m = f ? rn_model_load(f, &err) : NULL;
	CHECKF(m != NULL, "model: %s", err.msg);
	if (m) {
		const bool quick = cmp_quick();
		const int d1[3] = {300, 1000, 5000};
		run_kv(m, RN_KV_F16, d1, quick ? 1 : 3, gpu, !quick);
		const int d2[2] = {300, 1000};
		run_kv(m, RN_KV_Q8_0, d2, quick ? 1 : 2, gpu, false);
	}
	rn_model_free(m);
	gguf_close(f);
	free(buf);
	return check_done();
}
