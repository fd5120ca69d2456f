/* tests/cuda/test_cuda_shapes.c — the whole forward pass at Qwen3-14B's real shapes against the CPU backend.
 *
 * A 2-layer model with Qwen3-14B's dimensions (5120 wide, ff 17408, vocab 151936, 40/8 heads x 128 with QK-norm,
 * untied output; tests/cuda/synth.h synth_qwen3_14b, deterministic) in Q4_K_M (Q4_K with Q6_K output and Q6_K
 * attn_v / ffn_down in layer 1, as llama.cpp's mix), Q8_0 and FP8 (E4M3 128x128 tiles, BF16 embedding and output).
 * Identical calls go to both backends (tests/cuda/cmp.h):
 *   sequence 0, the prefill path (> 16 rows): 37 tokens, then prompts that continue the sequence — 29 tokens
 *     (attention over the cached cells plus the causal chunk), 18 and 19 (FP8's activation scales padded to a
 *     multiple of 4 rows: counts = 1, 2, 3 mod 4) — then one decode step on the cells prefill wrote;
 *   sequence 1, the decode path only (<= 16 rows a call): three single-row steps (graph captured and replayed),
 *     7 rows in one call, 16 rows in one call (the most the decode kernels take), all at the real widths, so
 *     every matvec runs several iterations per lane (5120 / 17408 columns);
 *   one call with a row of each sequence.
 * Skips (77) without a CUDA device; ORUN_CUDA_TEST_CPU=1 runs the CPU half alone there (model building, the
 * CPU's logits, their scale), as a check of the reference side. ORUN_SHAPES_FORMATS="Q8_0 FP8" limits the formats.
 *
 * Tolerances (normalised logit error ||gpu - cpu|| / ||cpu|| per row, the worst row). Measured first, on the
 * CPU alone: perturbing the model by as little as 1e-6 relative (the QK-norm weights, so the difference starts
 * at attention as the backends' would) moves the CPU's own decode logits by 0.7-1.5e-2 (2-layer Q8_0 and
 * Q4_K_M models of synth_defaults' size; 1.4-1.8e-2 for perturbations of 3e-4 to 3e-3, the size of f16
 * rounding; at these shapes, 3e-4: Q8_0 1.43e-2, Q4_K_M 1.77e-2, FP8 1.56e-3). Every int8 requantization of
 * a layer's input turns a relative difference e into
 * about sqrt(e * s) (one-step flips, s = step / rms ~ 1/60), so any difference at all, even f32 summation
 * order, grows to the level of the rounding itself within a few requantizations: the logits of two correct
 * backends differ by ~1.5% whatever either does, unless they agree to the bit.
 *   Q4_K_M and Q8_0, decode and prefill: 5e-2, ~3x that level. Prefill's difference is of the same kind and
 *     no larger (the GPU's GEMMs take f16 activations where the CPU quantizes to int8: one-sided rounding,
 *     s / sqrt(12) a stage against two-sided s / sqrt(6)). A wrong kernel (a lost split, a wrong scale, a
 *     wrong row) moves logits by 0.1-1 (test_cuda_depth measures 1.3 for lost splits).
 *   FP8 decode: 1e-2. FP8 weights take f32 activations on both backends and the BF16 LM head bf16-rounded
 *     ones; the same perturbations move the CPU's logits by 0.9-3.2e-3; 1e-2 is 3x the largest.
 *   FP8 prefill on cuBLASLt: 8e-2. E4M3 activations in 1x128 groups are 2.1% off per GEMM (computed on the
 *     CPU for these inputs), where the CPU keeps f32; the logits sum several such stages through the
 *     residual: 8e-2 is ~2x the expected 3-4%. FP8 prefill on the f16 path: 1e-2 (f16 activations).
 *   decode steps that read K/V written by prefill, and the mixed call: the prefill tolerance.
 *   argmax: no row may pick another token where the CPU's top-2 margin exceeds 1% of its largest |logit|.
 * FP8 on an sm_90 device must run prefill on cuBLASLt (stats.prefill_fp8_lt; the probe's failure is printed).
 */
#include "config.h"

#include "tests/cuda/cmp.h"
#include "tests/cuda/synth.h"

#define NCTX 128
#define NBATCH 64

static int32_t tok_at(int i, int V) { return (int32_t)(((int64_t)i * 7919 + 13) % V); }

struct fmt {
	const char *name;
	double tol_dec, tol_pre, tol_pre_f16; /* tol_pre_f16: FP8 prefill when cuBLASLt is not used */
};

/* A prompt chunk of n tokens for seq at cells c0.., every 4th row and the last wanted. */
static void chunk(struct call *c, int seq, int c0, int n, int t0, int V)
{
	call_reset(c);
	for (int i = 0; i < n; i++)
		call_add(c, tok_at(t0 + c0 + i, V), c0 + i, seq, c0 + i, i % 4 == 0 || i == n - 1);
}

static void report(const char *fmt, const char *what, const struct cmp_res *r, double tol, bool gpu)
{
	if (gpu) {
		CHECKF(r->worst < tol, "%s %s: logits error %.3g (tolerance %.1g)", fmt, what, r->worst, tol);
		CHECKF(r->flips == 0, "%s %s: %d rows whose clear argmax differs from the CPU's", fmt, what, r->flips);
		printf("%-7s %-34s rows %3d  error %.2e (tol %.0e)  flips %d  | cpu rms %.3f, min top-2 margin %.3f rms\n", fmt,
		       what, r->rows, r->worst, tol, r->flips, r->cpu_rms, r->cpu_margin);
	} else {
		printf("%-7s %-34s rows %3d  cpu logits rms %.3f, min top-2 margin %.3f rms, rows differ by %.2f\n", fmt, what,
		       r->rows, r->cpu_rms, r->cpu_margin, r->distinct);
	}
	/* the comparison means something only if the logits spread over a few units (not saturated, not ~0) and
	 * depend on the input (rows of different tokens and positions differ) */
	CHECKF(r->rows == 0 || (r->cpu_rms > 0.05 && r->cpu_rms < 100), "%s %s: CPU logits rms %.3g", fmt, what, r->cpu_rms);
	CHECKF(r->call_rows < 2 || r->distinct > 0.3, "%s %s: the CPU's rows differ by only %.3g: the logits hardly depend on the "
						 "input", fmt, what, r->distinct);
}

static void run_format(const struct fmt *F, bool gpu)
{
	struct synth_opts o;
	if (synth_qwen3_14b(&o, F->name, 2) != 0) {
		CHECKF(0, "unknown format %s", F->name);
		return;
	}
	double t0 = cmp_now();
	size_t size = 0;
	uint8_t *buf = synth_model(&o, &size);
	CHECKF(buf != NULL, "%s: synth_model", F->name);
	if (!buf)
		return;
	struct gguf_error ge;
	struct gguf_file *f = gguf_parse(buf, size, &ge);
	CHECKF(f != NULL, "%s: parse: %s", F->name, ge.msg);
	struct rn_error err = {0};
	struct rn_model *m = f ? rn_model_load(f, &err) : NULL;
	CHECKF(m != NULL, "%s: model: %s", F->name, err.msg);
	printf("%s: 2 layers of Qwen3-14B, %.2f GB, built in %.1f s\n", F->name, size / 1e9, cmp_now() - t0);
	struct cmp P;
	double tl = cmp_now();
	if (!m || !cmp_load(&P, m, 2, NCTX, NBATCH, RN_KV_F16, gpu, 0)) {
		cmp_free(&P);
		rn_model_free(m);
		gguf_close(f);
		free(buf);
		return;
	}
	tl = cmp_now() - tl;
	const int V = m->hp.n_vocab;
	double tol_pre = F->tol_pre;
	if (P.gpu) {
		struct rn_cuda_stats st;
		rn_cuda_get_stats(P.gpu, &st);
		if (o.type == GGUF_TYPE_FP8_E4M3_B128) {
			struct rn_device_info di;
			bool hopper = rn_cuda_device_info(0, &di) == 0 && di.cc_major == 9;
			printf("%s: prefill on cuBLASLt FP8: %s%s%s\n", F->name, st.prefill_fp8_lt ? "yes" : "no",
			       st.prefill_fp8_why[0] ? " — " : "", st.prefill_fp8_why);
			CHECKF(st.prefill_fp8_lt || !hopper, "FP8 on sm_90 must prefill on cuBLASLt's FP8 path: %s",
			       st.prefill_fp8_why[0] ? st.prefill_fp8_why : "(no reason given)");
			if (!st.prefill_fp8_lt)
				tol_pre = F->tol_pre_f16;
		}
	}
	struct call c = {0};
	struct cmp_res pre = {0}, dec = {0}, mixed = {0}, r;
	/* sequence 0: prefill, then prompts that continue it */
	const int sizes[4] = {37, 29, 18, 19};
	int c0 = 0;
	const char *names[4] = {"prefill 37", "prefill +29 (continues seq 0)", "prefill +18", "prefill +19"};
	for (int k = 0; k < 4; k++) {
		chunk(&c, 0, c0, sizes[k], 0, V);
		r = cmp_run(&P, &c, names[k]);
		report(F->name, names[k], &r, tol_pre, P.gpu != NULL);
		cmp_res_merge(&pre, &r);
		c0 += sizes[k];
	}
	call_reset(&c);
	call_add(&c, tok_at(1000, V), c0, 0, c0, true);
	r = cmp_run(&P, &c, "decode after prefill");
	report(F->name, "decode on prefill's cells", &r, tol_pre, P.gpu != NULL);
	cmp_res_merge(&pre, &r);
	c0++;
	/* sequence 1: the decode path only */
	int d = 0;
	for (int i = 0; i < 3; i++, d++) {
		call_reset(&c);
		call_add(&c, tok_at(2000 + d, V), d, 1, d, true);
		r = cmp_run(&P, &c, "decode step");
		cmp_res_merge(&dec, &r);
	}
	report(F->name, "decode, 3 single steps", &dec, F->tol_dec, P.gpu != NULL);
	call_reset(&c);
	for (int i = 0; i < 7; i++, d++)
		call_add(&c, tok_at(2000 + d, V), d, 1, d, true);
	r = cmp_run(&P, &c, "decode 7 rows");
	report(F->name, "decode, 7 rows in one call", &r, F->tol_dec, P.gpu != NULL);
	cmp_res_merge(&dec, &r);
	call_reset(&c);
	for (int i = 0; i < 16; i++, d++)
		call_add(&c, tok_at(2000 + d, V), d, 1, d, i % 2 == 1);
	r = cmp_run(&P, &c, "decode 16 rows");
	report(F->name, "decode, 16 rows in one call", &r, F->tol_dec, P.gpu != NULL);
	cmp_res_merge(&dec, &r);
	/* both sequences in one decode call */
	call_reset(&c);
	call_add(&c, tok_at(3000, V), c0, 0, c0, true);
	call_add(&c, tok_at(3001, V), d, 1, d, true);
	mixed = cmp_run(&P, &c, "two sequences");
	report(F->name, "decode, one row of each sequence", &mixed, tol_pre, P.gpu != NULL);
	printf("%s: load %.1f s; forward calls: CPU %.1f s, GPU %.2f s\n", F->name, tl, P.t_cpu, P.t_gpu);
	call_free(&c);
	cmp_free(&P);
	rn_model_free(m);
	gguf_close(f);
	free(buf);
}

int main(void)
{
	bool gpu = cmp_gpu_or_skip("the real-shape forward test");
	const struct fmt fmts[] = {
		{"Q4_K_M", 5e-2, 5e-2, 5e-2},
		{"Q8_0", 5e-2, 5e-2, 5e-2},
		{"FP8", 1e-2, 8e-2, 1e-2},
	};
	const char *only = getenv("ORUN_SHAPES_FORMATS");
	for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++)
		if (!only || !*only || strstr(only, fmts[i].name))
			run_format(&fmts[i], gpu);
	return check_done();
}
