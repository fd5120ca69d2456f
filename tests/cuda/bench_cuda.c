/* tests/cuda/bench_cuda.c — the CUDA backend's speed on one model: decode tok/s at given context depths,
 * time to first token for a prompt, achieved GB/s and % of the spec-bandwidth roofline, peak GPU memory.
 *
 * Drives the backend through its ops table (as runner/backend.c does) with synthetic token ids, one sequence.
 * Decode is timed three ways: pipelined (rn_cuda_decode_submit/wait, step t + 1 enqueued before the host
 * waits for token t), one synchronous step at a time with GPU greedy sampling (only the id comes back), and
 * with the full logits copied to the host (the plain backend interface). Bytes per token = the model's weights read per token
 * (rn_model.bytes_per_token) + the KV rows read at the average depth of the timed steps. Prints a table and
 * one "BENCH_JSON {...}" line per model for tools/gpu-check.
 *
 * Not a test, but it checks its own work before it reports a speed: the three decode runs start from the same
 * token on the same cells, so their greedy tokens must be identical (any difference means a race, a stale graph
 * or a pipelining bug, and the speed would be meaningless): otherwise it prints "BENCH_FAIL ..." and exits 3
 * without a speed or a JSON line. The three prompt runs of the TTFT must give the same first token too.
 * Also reports stats.decode_launches: kernel launches of one decode step (0 when the backend does not count).
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runner/backend.h"
#include "runner/cuda/cuda.h"
#include "runner/model.h"

#define MAX_DEPTHS 8

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

struct run {
	void *st;
	const struct rn_model *m;
	int n_batch;
	int32_t *tok, *pos, *seq, *cell, *orow;
	float *logits;
};

static int32_t tok_id(int i, int V) { return (int32_t)(((int64_t)i * 7919 + 101) % V); }

#define RN_DEADLINE (-2) /* prefill's return when --deadline passed (not an error: the phase is skipped) */

static double deadline, deadline_at; /* --deadline seconds, and the absolute time it ends (0: none) */

/* Rows [c0, c0 + n) of sequence 0 in chunks of n_batch; the last chunk samples greedily (out: the token).
 * RN_DEADLINE when the deadline passes before a chunk. */
static int prefill(struct run *r, int c0, int n, int32_t *out, struct rn_error *err)
{
	const int V = r->m->hp.n_vocab;
	for (int k = 0; k < n; k += r->n_batch) {
		if (deadline_at > 0 && now() > deadline_at)
			return RN_DEADLINE;
		int cnt = n - k < r->n_batch ? n - k : r->n_batch;
		for (int i = 0; i < cnt; i++) {
			r->tok[i] = tok_id(c0 + k + i, V);
			r->pos[i] = r->cell[i] = c0 + k + i;
			r->seq[i] = 0;
		}
		r->orow[0] = cnt - 1;
		struct rn_batch_cells bc = {.b = {.n_tokens = cnt, .token = r->tok, .pos = r->pos, .seq = r->seq},
					    .cell = r->cell, .n_out = 1, .out_row = r->orow};
		struct rn_cuda_sampling s = {.temperature = 0};
		int rc = rn_cuda_forward_sample(r->st, &bc, &s, out, err);
		if (rc)
			return rc;
	}
	return RN_OK;
}

/* gen pipelined steps from cell c: step i + 1 is submitted (its token read on the GPU) before the host waits
 * for token i; out[i] gets step i's token. */
static int pipelined(struct run *r, int c, int gen, int32_t first, int32_t *out, struct rn_error *err)
{
	int32_t tok = first, pos = c, seq = 0, cell = c, orow = 0;
	struct rn_cuda_sampling s = {.temperature = 0};
	struct rn_batch_cells bc = {.b = {.n_tokens = 1, .token = &tok, .pos = &pos, .seq = &seq}, .cell = &cell,
				    .n_out = 1, .out_row = &orow};
	int prev = -1, rc;
	for (int i = 0; i < gen; i++) {
		int t;
		pos = cell = c + i;
		if ((rc = rn_cuda_decode_submit(r->st, &bc, &s, &t, err)))
			return rc;
		tok = RN_CUDA_TOKEN_FROM_SAMPLE;
		if (prev >= 0 && (rc = rn_cuda_decode_wait(r->st, prev, &out[i - 1], err)))
			return rc;
		prev = t;
	}
	return rn_cuda_decode_wait(r->st, prev, &out[gen - 1], err);
}

/* The time to first token: the same prompt three times from cell 0, the median into *ttft; the three first
 * tokens must agree (else BENCH_FAIL and *failed). */
static int time_prompt(struct run *r, int prompt, const char *label, double *ttft, int *failed, struct rn_error *err)
{
	double ts[3];
	int32_t first[3] = {-1, -1, -1};
	int rc = RN_OK;
	for (int k = 0; k < 3 && rc == RN_OK; k++) {
		double a = now();
		rc = prefill(r, 0, prompt, &first[k], err);
		ts[k] = now() - a;
	}
	if (rc)
		return rc;
	if (first[0] != first[1] || first[0] != first[2]) {
		printf("BENCH_FAIL %s: the same %d-token prompt gave first tokens %d, %d, %d: prefill is not "
		       "deterministic (a race?); no speed reported\n", label, prompt, first[0], first[1], first[2]);
		*failed = 1;
		return RN_OK;
	}
	qsort(ts, 3, sizeof ts[0], cmp_d);
	*ttft = ts[1];
	printf("time to first token, %d prompt tokens: %.1f ms (median of 3, spread %.1f%%; %.0f tok/s prefill)\n", prompt,
	       ts[1] * 1e3, 100.0 * (ts[2] - ts[0]) / ts[1], prompt / ts[1]);
	return RN_OK;
}

/* The first step where a, b and c differ, or -1. */
static int first_diff(const int32_t *a, const int32_t *b, const int32_t *c, int n)
{
	for (int i = 0; i < n; i++)
		if (a[i] != b[i] || a[i] != c[i])
			return i;
	return -1;
}

/* One decode step at cell c with token t; GPU greedy (logits == NULL) or logits to the host + argmax. */
static int step(struct run *r, int c, int32_t *t, bool logits, struct rn_error *err)
{
	int32_t pos = c, seq = 0, cell = c, orow = 0, tok = *t;
	struct rn_batch_cells bc = {.b = {.n_tokens = 1, .token = &tok, .pos = &pos, .seq = &seq}, .cell = &cell,
				    .n_out = 1, .out_row = &orow};
	if (!logits) {
		struct rn_cuda_sampling s = {.temperature = 0};
		return rn_cuda_forward_sample(r->st, &bc, &s, t, err);
	}
	struct rn_outputs o = {.logits = r->logits};
	int rc = rn_cuda_forward(r->st, &bc, &o, err);
	if (rc)
		return rc;
	int b = 0;
	for (int i = 1; i < r->m->hp.n_vocab; i++)
		if (r->logits[i] > r->logits[b])
			b = i;
	*t = b;
	return RN_OK;
}

static void usage(void)
{
	printf("Usage: bench_cuda -m MODEL.gguf [options]\n"
	       "  --depths A,B,..   decode context depths (default 128,32768)\n"
	       "  --gen N           timed decode steps per depth (default 64)\n"
	       "  --prompt N        prompt tokens for the time to first token (default 2048; 0 = skip)\n"
	       "  --kv f16|q8_0     KV cache type (default f16)\n"
	       "  --spec-gbs G      spec memory bandwidth in GB/s for the roofline (default 4800, H200)\n"
	       "  --label NAME      name in the JSON line\n"
	       "  --deadline S      start no prompt or depth after S seconds (skipped ones are reported; default none)\n");
}

int main(int argc, char **argv)
{
	const char *path = NULL, *label = "model";
	int depths[MAX_DEPTHS] = {128, 32768}, n_depths = 2, gen = 64, prompt = 2048;
	double spec = 4800.0;
	enum rn_kv_type kv = RN_KV_F16;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage();
			return 0;
		} else if (!strcmp(a, "-m") && v) {
			path = v, i++;
		} else if (!strcmp(a, "--depths") && v) {
			n_depths = 0;
			for (char *s = (char *)v; *s && n_depths < MAX_DEPTHS;) {
				depths[n_depths++] = (int)strtol(s, &s, 10);
				if (*s == ',')
					s++;
				else
					break;
			}
			i++;
		} else if (!strcmp(a, "--gen") && v) {
			gen = atoi(v), i++;
		} else if (!strcmp(a, "--prompt") && v) {
			prompt = atoi(v), i++;
		} else if (!strcmp(a, "--kv") && v) {
			struct rn_error e;
			if (rn_kv_type_parse(v, &kv, &e) != RN_OK) {
				fprintf(stderr, "bench_cuda: %s\n", e.msg);
				return 2;
			}
			i++;
		} else if (!strcmp(a, "--spec-gbs") && v) {
			spec = atof(v), i++;
		} else if (!strcmp(a, "--label") && v) {
			label = v, i++;
		} else if (!strcmp(a, "--deadline") && v) {
			deadline = atof(v), i++;
		} else {
			fprintf(stderr, "bench_cuda: unknown or incomplete option '%s'\n", a);
			usage();
			return 2;
		}
	}
	if (!path || gen < 1 || prompt < 0) {
		usage();
		return 2;
	}
	if (rn_cuda_device_count() == 0) {
		fprintf(stderr, "bench_cuda: no CUDA device\n");
		return 1;
	}
	struct rn_error err = {0};
	double t0 = now();
	deadline_at = deadline > 0 ? t0 + deadline : 0;
	struct rn_model *m = rn_model_open(path, &err);
	if (!m) {
		fprintf(stderr, "bench_cuda: %s: %s\n", path, err.msg);
		return 1;
	}
	int max_depth = 0;
	for (int i = 0; i < n_depths; i++)
		max_depth = depths[i] > max_depth ? depths[i] : max_depth;
	struct rn_load_params p = {0};
	p.n_seq = 1;
	p.n_ctx = (max_depth > prompt ? max_depth : prompt) + gen + 16;
	p.n_batch = prompt > 512 ? prompt : 512;
	p.kv_type = kv;
	p.device = 0;
	struct rn_cuda_estimate est;
	if (rn_cuda_estimate(m, &p, &est, &err) == RN_OK)
		printf("memory estimate: weights %.2f GiB, KV %.2f GiB, scratch %.2f GiB, total %.2f GiB of %.2f GiB free\n",
		       est.weights / 1073741824.0, est.kv / 1073741824.0, est.scratch / 1073741824.0, est.total / 1073741824.0,
		       est.device_free / 1073741824.0);
	struct run r = {0};
	r.m = m;
	r.n_batch = p.n_batch;
	double tl = now();
	if (rn_cuda_load(m, &p, &r.st, &err) != RN_OK) {
		fprintf(stderr, "bench_cuda: load: %s\n", err.msg);
		rn_model_free(m);
		return 1;
	}
	tl = now() - tl;
	const int V = m->hp.n_vocab;
	r.tok = malloc((size_t)p.n_batch * 4);
	r.pos = malloc((size_t)p.n_batch * 4);
	r.seq = malloc((size_t)p.n_batch * 4);
	r.cell = malloc((size_t)p.n_batch * 4);
	r.orow = malloc(4);
	r.logits = malloc((size_t)V * 4);
	struct rn_cuda_stats st;
	rn_cuda_get_stats(r.st, &st);
	printf("%s: %s, %d layers, dim %d, %d/%d heads x %d, ff %d, vocab %d; %.2f GB read per token (weights)\n", label,
	       m->hp.arch_name, m->hp.n_layer, m->hp.n_embd, m->hp.n_head, m->hp.n_head_kv, m->hp.head_dim, m->hp.n_ff, V,
	       m->bytes_per_token / 1e9);
	printf("device %s; load %.1f s (upload %.1f s, %.2f GiB of weights), FP8 prefill on cuBLASLt: %s, f16 prefill "
	       "copies: %s\n",
	       st.device, tl, st.upload_seconds, st.weight_bytes / 1073741824.0, st.prefill_fp8_lt ? "yes" : "no",
	       st.prefill_cache ? "yes" : "no");
	if (!st.prefill_fp8_lt && st.prefill_fp8_why[0])
		printf("FP8 prefill not on cuBLASLt: %s\n", st.prefill_fp8_why);

	int rc = RN_OK, failed = 0, skipped = 0;
	int32_t t = 0;
	int32_t *tpp[3], *ts_ = malloc((size_t)gen * 4), *tl_ = malloc((size_t)gen * 4);
	for (int k = 0; k < 3; k++)
		tpp[k] = malloc((size_t)gen * 4);
	/* warm-up: cuBLAS handles, kernels' first launch, a graph */
	const int wu = 64 < prompt ? 64 : 17;
	rc = prefill(&r, 0, wu, &t, &err);
	for (int i = 0; i < 4 && rc == RN_OK; i++)
		rc = step(&r, wu + i, &t, false, &err);

	double ttft = 0;
	const uint64_t kv_row = (uint64_t)m->hp.n_layer * 2ull * (uint64_t)rn_kv_row_bytes(kv, m->hp.n_head_kv * m->hp.head_dim);
	char runs[3072];
	int rl = 0;
	runs[0] = 0;
	printf("%8s %10s %10s %10s %9s %9s %10s %12s %8s\n", "depth", "tok/s", "sync", "logits", "GB/s", "% spec",
	       "roofline", "ms/token", "spread");
	int launches = 0;
	for (int di = 0; di <= n_depths && rc == RN_OK && !failed; di++) {
		/* the time to first token after the first depth's decode (short-context decode speed comes first) */
		if (di == (n_depths > 0 ? 1 : 0) && prompt > 0) {
			rc = time_prompt(&r, prompt, label, &ttft, &failed, &err);
			if (rc == RN_DEADLINE) {
				printf("time to first token: skipped, the --deadline of %.0f s has passed\n", deadline);
				skipped++;
				rc = RN_OK;
			}
			if (rc || failed)
				break;
		}
		if (di == n_depths)
			break;
		const int d = depths[di] > 1 ? depths[di] : 1;
		/* fill the cache up to the depth (untimed), then 4 warm-up steps */
		rc = prefill(&r, 0, d, &t, &err);
		if (rc == RN_DEADLINE) {
			printf("%8d skipped: the --deadline of %.0f s has passed\n", d, deadline);
			skipped++;
			rc = RN_OK;
			continue;
		}
		int c = d;
		for (int i = 0; i < 4 && rc == RN_OK; i++)
			rc = step(&r, c++, &t, false, &err);
		const int c0 = c;
		const int32_t tstart = t;
		/* pipelined, three times (the median is reported, the spread beside it): the host waits for token i
		 * after submitting step i + 1 */
		double dts[3];
		for (int k = 0; k < 3 && rc == RN_OK; k++) {
			double a0 = now();
			rc = pipelined(&r, c0, gen, tstart, tpp[k], &err);
			dts[k] = now() - a0;
		}
		/* the same cells again from the same token, one synchronous step at a time (only the id comes back) */
		t = tstart;
		c = c0;
		double a = now();
		for (int i = 0; i < gen && rc == RN_OK; i++) {
			rc = step(&r, c++, &t, false, &err);
			ts_[i] = t;
		}
		double dt = now() - a;
		/* and with the logits copied to the host and the argmax taken there */
		c = c0;
		t = tstart;
		double b = now();
		for (int i = 0; i < gen && rc == RN_OK; i++) {
			rc = step(&r, c++, &t, true, &err);
			tl_[i] = t;
		}
		double dt2 = now() - b;
		if (rc)
			break;
		int fd = first_diff(tpp[0], ts_, tl_, gen);
		for (int k = 1; k < 3 && fd < 0; k++)
			fd = first_diff(tpp[0], tpp[k], tpp[k], gen);
		if (fd >= 0) {
			printf("BENCH_FAIL %s depth %d: the decode runs disagree at step %d of %d (pipelined %d / %d / %d, "
			       "synchronous %d, logits + host argmax %d): no speed reported\n", label, d, fd, gen, tpp[0][fd],
			       tpp[1][fd], tpp[2][fd], ts_[fd], tl_[fd]);
			failed = 1;
			break;
		}
		rn_cuda_get_stats(r.st, &st);
		launches = st.decode_launches;
		qsort(dts, 3, sizeof dts[0], cmp_d);
		const double dtp = dts[1], spread = (dts[2] - dts[0]) / dts[1];
		const double avg_depth = c0 + gen / 2.0;
		const double bytes = (double)m->bytes_per_token + (double)kv_row * avg_depth;
		const double tpps = gen / dtp, tps = gen / dt, tps2 = gen / dt2, gbs = bytes * tpps / 1e9;
		printf("%8d %10.1f %10.1f %10.1f %9.0f %8.1f%% %10.1f %12.3f %7.1f%%\n", d, tpps, tps, tps2, gbs,
		       100.0 * gbs / spec, spec * 1e9 / bytes, 1e3 / tpps, 100.0 * spread);
		rl += snprintf(runs + rl, sizeof runs - (size_t)rl,
			       "%s{\"depth\":%d,\"tok_s\":%.2f,\"tok_s_sync\":%.2f,\"tok_s_logits\":%.2f,\"gbs\":%.1f,"
			       "\"pct_spec\":%.2f,\"roofline_tok_s\":%.2f,\"spread\":%.4f}",
			       rl ? "," : "", d, tpps, tps, tps2, gbs, 100.0 * gbs / spec, spec * 1e9 / bytes, spread);
	}
	if (rc == RN_OK && !failed)
		printf("tokens checked: the pipelined, synchronous and logits runs chose the same %d tokens at every depth\n"
		       "decode launches per token: %d (stats.decode_launches%s)\n", gen, launches,
		       launches ? "" : "; 0: not counted by this build");
	printf("(tok/s: pipelined GPU greedy decode, the host waits for token t after submitting t + 1; sync: one step\n"
	       " at a time, only the id comes back; logits: the logits copied to the host; GB/s and %% from tok/s)\n");
	if (rc) {
		fprintf(stderr, "bench_cuda: %s\n", err.msg);
	} else if (failed) {
		fprintf(stderr, "bench_cuda: %s: the self-check failed (BENCH_FAIL above)\n", label);
	} else {
		uint64_t fr = 0, tot = 0;
		rn_cuda_mem_info(0, &fr, &tot);
		rn_cuda_get_stats(r.st, &st);
		printf("peak GPU memory in use: %.2f GiB (instance %.2f GiB); %d graphs, %d graph launches; total %.1f s\n",
		       st.peak_used / 1073741824.0, rn_cuda_memory(r.st) / 1073741824.0, st.graphs, st.graph_launches,
		       now() - t0);
		printf("BENCH_JSON {\"label\":\"%s\",\"device\":\"%s\",\"bytes_per_token\":%llu,\"ttft_ms\":%.2f,"
		       "\"prompt\":%d,\"load_s\":%.2f,\"fp8_lt\":%d,\"prefill_f16\":%d,\"runs\":[%s],\"peak_gib\":%.2f,"
		       "\"instance_gib\":%.2f,\"launches_per_token\":%d,\"tokens_checked\":%d,\"skipped\":%d}\n",
		       label, st.device, (unsigned long long)m->bytes_per_token, ttft * 1e3, prompt, tl, st.prefill_fp8_lt,
		       st.prefill_cache, runs, st.peak_used / 1073741824.0, rn_cuda_memory(r.st) / 1073741824.0, launches,
		       gen, skipped);
	}
	rn_cuda_free(r.st);
	rn_model_free(m);
	free(r.tok);
	free(r.pos);
	free(r.seq);
	free(r.cell);
	free(r.orow);
	free(r.logits);
	for (int k = 0; k < 3; k++)
		free(tpp[k]);
	free(ts_);
	free(tl_);
	return rc ? 1 : failed ? 3 : 0;
}
