/* tools/cmd_bench.c — `orun bench`: prefill and decode speed of a model on this machine, time to first
 * token, peak RSS, achieved bandwidth and the share of this machine's memory-bandwidth roofline, which the
 * bench measures itself with a streaming read on the same number of threads.
 *
 * Like llama-bench it runs the backend on a synthetic prompt of random (non-control) tokens (prompt test from
 * an empty cache) and decodes greedily without stopping at end-of-generation tokens (generation test from
 * position --depth, 0 by default), so every run does the same work as llama-bench's pp and tg tests.
 */
#include "config.h"

#include "tools/argnum.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define BENCH_X86 1
#endif

#include "base/buf.h"
#include "base/json.h"
#include "runner/backend.h"
#include "runner/cpu/features.h"
#include "runner/cpu/pool.h"
#include "runner/grammar/grammar.h"
#include "runner/model.h"
#include "runner/sampler.h"
#include "runner/tokenizer/tokenizer.h"
#include "tools/commands.h"
#ifdef ORUN_WITH_SERVER
#include "tools/bench_api.h"
#endif

#define BW_BYTES ((size_t)1 << 30) /* streaming-read buffer: far larger than any last-level cache */
#define BW_PASSES 3 /* before every repetition: the machine's bandwidth drifts (other tenants), so each run's
			   * decode is set against the bandwidth measured just before it */
#define MAX_REPS 100

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---------------------------------------------------------------------------------------------------- */
/* memory bandwidth: every thread sums its share of a large buffer */

struct bw_job {
	const uint8_t *buf;
	size_t bytes;
	double sink[RN_POOL_MAX_THREADS];
};

#ifdef BENCH_X86
__attribute__((target("avx2"))) static double read_avx2(const uint8_t *p, size_t n)
{
	__m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
	for (size_t i = 0; i + 128 <= n; i += 128) {
		a0 = _mm256_xor_si256(a0, _mm256_load_si256((const __m256i *)(p + i)));
		a1 = _mm256_xor_si256(a1, _mm256_load_si256((const __m256i *)(p + i + 32)));
		a2 = _mm256_xor_si256(a2, _mm256_load_si256((const __m256i *)(p + i + 64)));
		a3 = _mm256_xor_si256(a3, _mm256_load_si256((const __m256i *)(p + i + 96)));
	}
	a0 = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
	return (double)_mm256_extract_epi64(a0, 0);
}
#endif

static double read_plain(const uint8_t *p, size_t n)
{
	uint64_t acc = 0;
	for (size_t i = 0; i + 8 <= n; i += 8) {
		uint64_t v;
		memcpy(&v, p + i, 8);
		acc ^= v;
	}
	return (double)acc;
}

static void bw_job(void *ctx, int ith, int nth)
{
	struct bw_job *J = ctx;
	int64_t b, e;
	rn_pool_split((int64_t)(J->bytes / 4096), 1, ith, nth, &b, &e);
	const uint8_t *p = J->buf + (size_t)b * 4096;
	size_t n = (size_t)(e - b) * 4096;
#ifdef BENCH_X86
	if (rn_cpu_features()->avx2) {
		J->sink[ith] = read_avx2(p, n);
		return;
	}
#endif
	J->sink[ith] = read_plain(p, n);
}

/* Best of BW_PASSES streaming reads of BW_BYTES, GB/s. The buffer asks for
 * transparent huge pages: with 4 KiB pages every page is a TLB walk (a costly one under a hypervisor), and the
 * roofline is the best read the machine does (measured on the 2-core test machine: ~20.5 GB/s with huge pages
 * against ~16.5 GB/s without). */
static uint8_t *bandwidth_buffer(void)
{
	uint8_t *buf = aligned_alloc((size_t)2 << 20, BW_BYTES);
	if (!buf)
		return NULL;
	(void)madvise(buf, BW_BYTES, MADV_HUGEPAGE);
	for (size_t i = 0; i < BW_BYTES; i += 4096)
		memset(buf + i, (int)(i >> 12), 4096);
	return buf;
}

static double measure_bandwidth(struct rn_pool *pool, const uint8_t *buf)
{
	struct bw_job J = {.buf = buf, .bytes = BW_BYTES};
	double best = 0;
	for (int pass = 0; pass < BW_PASSES; pass++) {
		double t0 = now_s();
		rn_pool_run(pool, bw_job, &J);
		double gbs = (double)BW_BYTES / (now_s() - t0) / 1e9;
		if (gbs > best)
			best = gbs;
	}
	return best;
}

/* ---------------------------------------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f, "Usage: orun bench -m FILE [options]\n\n"
		   "Measures prefill and decode speed on this machine, time to first token, peak RSS, achieved\n"
		   "bandwidth (weight and KV-cache bytes read per token x tokens/s) and the share of the memory-\n"
		   "bandwidth roofline measured here with a streaming read (huge pages) on the same threads.\n\n"
		   "Options:\n"
		   "  -m, --model FILE     GGUF model\n"
		   "  -p, --prompt N       prompt tokens (default 512)\n"
		   "  -n, --gen N          generated tokens (default 128)\n"
		   "  -d, --depth N        context already in the cache when generation starts (default 0)\n"
		   "  -r, --reps N         repetitions, the median is reported (default 3)\n"
		   "  -t, --threads N      CPU threads (default: physical cores)\n"
		   "  -b, --batch N        prompt tokens per forward pass (num_batch, default 512)\n"
		   "      --kv-type T      f16 (default) or q8_0\n"
		   "      --no-mmap        copy the weights into memory (huge pages) instead of reading them in place\n"
		   "                       from the file mapping (Ollama's use_mmap false, llama-bench's -mmp 0)\n"
		   "      --no-bandwidth   skip the streaming-read measurement\n"
		   "      --grammar FILE   decode under this GBNF grammar (the engine's sample-then-mask path); the\n"
		   "                       grammar restarts when it ends; prints how often the mask was needed\n"
		   "      --json           one JSON object with every figure\n"
		   "      --api            measure the HTTP streaming path of orun serve against the engine instead\n"
		   "                       (see orun bench --api --help)\n"
		   "  -h, --help           show this help\n");
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
	double s[MAX_REPS];
	memcpy(s, v, (size_t)n * sizeof *v); /* the runs stay in their order for the JSON */
	qsort(s, (size_t)n, sizeof *s, cmp_double);
	return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

/* "key": [v0, v1, ...] */
static void jw_runs(struct ob_jw *w, const char *key, const double *v, int n)
{
	ob_jw_key(w, key);
	ob_jw_arr(w);
	for (int r = 0; r < n; r++)
		ob_jw_float64(w, v[r]);
	ob_jw_arr_end(w);
}

/* Feed n tokens of seq 0 from position p0 in batches of B; the logits of the last one land in out. */
static int prefill(struct rn_backend *b, const int32_t *tok, int n, int p0, int B, int32_t *pos, int32_t *seq,
		   const struct rn_outputs *out, struct rn_error *err)
{
	for (int done = 0; done < n;) {
		int k = n - done < B ? n - done : B;
		for (int i = 0; i < k; i++)
			pos[i] = p0 + done + i;
		struct rn_batch bt = {.n_tokens = k, .token = tok + done, .pos = pos, .seq = seq};
		int rc = rn_backend_forward(b, &bt, out, err);
		if (rc != RN_OK)
			return rc;
		done += k;
	}
	return RN_OK;
}

/* --grammar: the decode loop chooses greedily under the grammar, as the engine does. */
struct bench_grammar {
	struct rn_grammar *g;
	struct rn_grammar_vocab *v;
	struct rn_grammar_state *gs;
	struct rn_sampler *smp;
	float *scratch;
	const struct rn_tok *tok;
	int n_vocab;
	long n_tokens, n_masked, n_restarts;
	double seconds; /* in the grammar (choice, accept, restart), all runs */
};

static int bench_grammar_open(struct bench_grammar *bg, const char *path, const struct rn_tok *tok, int n_vocab)
{
	struct ob_buf text = {.max = 1 << 20};
	struct rn_error err = {0};
	struct rn_sampler_params sp;
	rn_sampler_params_default(&sp);
	sp.temperature = 0;
	sp.repeat_last_n = 0;
	if (!ob_buf_read_file(&text, path)) {
		fprintf(stderr, "orun bench: cannot read %s%s\n", path, text.over ? " (over 1 MiB)" : "");
		free(text.p);
		return -1;
	}
	bg->tok = tok;
	bg->n_vocab = n_vocab;
	if (!tok)
		rn_error_set(&err, RN_ERR_INVALID_ARG, "the model has no tokenizer");
	else if ((bg->g = rn_grammar_compile(text.p, text.len, NULL, &err)) && (bg->v = rn_grammar_vocab_new(tok, &err)))
		bg->gs = rn_grammar_state_new(bg->g, bg->v, &err);
	free(text.p);
	if (bg->gs && !((bg->smp = rn_sampler_new(&sp, n_vocab, 1, &err)) &&
			(bg->scratch = malloc((size_t)n_vocab * sizeof *bg->scratch))))
		rn_error_set(&err, RN_ERR_NOMEM, "out of memory");
	if (!bg->gs || !bg->scratch) {
		fprintf(stderr, "orun bench: %s: %s\n", path, err.msg);
		return -1;
	}
	return 0;
}

/* The next token under the grammar; the grammar starts again when it ended (an end-of-generation token, or
 * nothing can follow), so that every token of the run is constrained. -1 when none is allowed. */
static int32_t bench_grammar_pick(struct bench_grammar *bg, float *logits)
{
	bool masked, final = false;
	double t0 = now_s();
	int32_t t = rn_grammar_sample(bg->gs, bg->smp, logits, bg->scratch, bg->n_vocab, &masked);
	if (t < 0 || rn_grammar_state_accept(bg->gs, t) != RN_OK) {
		fprintf(stderr, "orun bench: the grammar allows no token\n");
		return -1;
	}
	bg->n_tokens++;
	bg->n_masked += masked;
	(void)rn_grammar_state_can_end(bg->gs, &final);
	if (final || rn_tok_is_eog(bg->tok, t)) {
		struct rn_error err;
		struct rn_grammar_state *ns = rn_grammar_state_new(bg->g, bg->v, &err);
		if (ns) {
			rn_grammar_state_free(bg->gs);
			bg->gs = ns;
			bg->n_restarts++;
		}
	}
	bg->seconds += now_s() - t0;
	return t;
}

static void bench_grammar_close(struct bench_grammar *bg)
{
	rn_grammar_state_free(bg->gs);
	rn_grammar_vocab_free(bg->v);
	rn_grammar_free(bg->g);
	rn_sampler_free(bg->smp);
	free(bg->scratch);
}

int cmd_bench(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--api")) {
#ifdef ORUN_WITH_SERVER
			return bench_api(argc, argv); /* the HTTP streaming path against the engine (tools/bench_api.c) */
#else
			fprintf(stderr, "orun bench: --api needs the server part of the build (configure without "
					"--disable-server)\n");
			return 2;
#endif
		}
	const char *model = NULL, *kv = getenv("OLLAMA_KV_CACHE_TYPE"), *grammar_file = NULL;
	int n_prompt = 512, n_gen = 128, reps = 3, threads = 0, batch = 512, depth = 0;
	bool json = false, bandwidth = true, no_mmap = false;
	enum { O_KV_TYPE = 256, O_NO_BANDWIDTH, O_NO_MMAP, O_JSON, O_GRAMMAR };
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'},
		{"model", required_argument, NULL, 'm'},
		{"prompt", required_argument, NULL, 'p'},
		{"gen", required_argument, NULL, 'n'},
		{"reps", required_argument, NULL, 'r'},
		{"threads", required_argument, NULL, 't'},
		{"batch", required_argument, NULL, 'b'},
		{"depth", required_argument, NULL, 'd'},
		{"kv-type", required_argument, NULL, O_KV_TYPE},
		{"no-bandwidth", no_argument, NULL, O_NO_BANDWIDTH},
		{"no-mmap", no_argument, NULL, O_NO_MMAP},
		{"json", no_argument, NULL, O_JSON},
		{"grammar", required_argument, NULL, O_GRAMMAR},
		{NULL, 0, NULL, 0},
	};
	const char *cmd = "orun bench";
	char a[64];
	int c, bad = 0;
	optind = 1;
	while (!bad && (c = argopt_next(cmd, argc, argv, "hm:p:n:r:t:b:d:", longopts, a, sizeof a)) != -1) {
		const char *v = optarg;
		switch (c) {
		case 'h':
			usage(stdout);
			return 0;
		case 'm':
			model = v;
			break;
		case 'p':
			bad = argnum_int(cmd, a, v, 1, 1 << 20, &n_prompt);
			break;
		case 'n':
			bad = argnum_int(cmd, a, v, 0, 1 << 20, &n_gen);
			break;
		case 'r':
			bad = argnum_int(cmd, a, v, 1, MAX_REPS, &reps);
			break;
		case 't':
			bad = argnum_int(cmd, a, v, 1, RN_POOL_MAX_THREADS, &threads);
			break;
		case 'b':
			bad = argnum_int(cmd, a, v, 1, RN_MAX_BATCH, &batch);
			break;
		case 'd':
			bad = argnum_int(cmd, a, v, 0, 1 << 20, &depth);
			break;
		case O_KV_TYPE:
			kv = v;
			break;
		case O_NO_BANDWIDTH:
			bandwidth = false;
			break;
		case O_NO_MMAP:
			no_mmap = true;
			break;
		case O_JSON:
			json = true;
			break;
		case O_GRAMMAR:
			grammar_file = v;
			break;
		default: /* '?': argopt_next said why */
			bad = 1;
		}
	}
	if (bad || argopt_no_operands(cmd, argc, argv))
		return 2;
	if (!model) {
		fprintf(stderr, "orun bench: -m FILE is required\n\n");
		usage(stderr);
		return 2;
	}
	struct rn_error err = {0};
	enum rn_kv_type kvt;
	if (rn_kv_type_parse(kv, &kvt, &err) != RN_OK) {
		fprintf(stderr, "orun bench: %s\n", err.msg);
		return 2;
	}
	int rc = 1;
	struct rn_pool *pool = NULL;
	struct rn_model *m = NULL;
	struct rn_tok *tok = NULL;
	struct rn_backend *b = NULL;
	int32_t *prompt = NULL, *pos = NULL, *seq = NULL;
	float *logits = NULL;
	double gbs = 0;
	uint8_t *bwbuf = NULL; /* the bandwidth test's buffer */
	struct bench_grammar bg = {0};
	double t_load = now_s();
	m = rn_model_open(model, &err);
	if (!m) {
		fprintf(stderr, "orun bench: %s\n", err.msg);
		goto out;
	}
	if (rn_tok_load(m->gguf, NULL, &tok, NULL) != RN_TOK_OK) /* only to keep control tokens out of the prompt */
		tok = NULL;
	int n_ctx = (n_prompt > depth ? n_prompt : depth) + n_gen + 1;
	const int n_big = n_prompt > depth ? n_prompt : depth;
	struct rn_load_params bp;
	rn_load_params_init(&bp);
	bp.n_ctx = n_ctx;
	bp.n_batch = batch < n_big ? batch : n_big;
	bp.n_threads = threads;
	bp.use_mmap = no_mmap ? 0 : 1;
	/* no cap at the model's context: the speed at any depth is what is measured */
	rn_load_params_resolve(&bp, &(struct rn_load_defaults){.n_ctx_max = 0, .n_seq = 1, .kv_type = kvt});
	bp.no_mmap = no_mmap;
	b = rn_backend_load(m, &bp, &err);
	if (!b) {
		fprintf(stderr, "orun bench: %s\n", err.msg);
		goto out;
	}
	t_load = now_s() - t_load;
	if (grammar_file && bench_grammar_open(&bg, grammar_file, tok, m->hp.n_vocab) != 0)
		goto out;
	const int V = m->hp.n_vocab, B = rn_backend_params(b)->n_batch;
	const int n_rand = n_prompt > depth ? n_prompt : depth;
	prompt = malloc((size_t)n_rand * sizeof *prompt);
	pos = malloc((size_t)(B > 1 ? B : 1) * sizeof *pos);
	seq = calloc((size_t)(B > 1 ? B : 1), sizeof *seq);
	logits = malloc((size_t)V * sizeof *logits);
	if (!prompt || !pos || !seq || !logits) {
		fprintf(stderr, "orun bench: out of memory\n");
		goto out;
	}
	uint64_t s = 0x1234567;
	for (int i = 0; i < n_rand; i++) {
		int32_t t;
		do {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			t = (int32_t)((s >> 33) % (uint64_t)V);
		} while (tok && (rn_tok_is_control(tok, t) || (uint32_t)t >= rn_tok_n_vocab(tok)));
		prompt[i] = t;
	}
	double t_decode = 0; /* all runs' decode seconds, for the grammar's share */
	double pp[MAX_REPS], tg[MAX_REPS], ttft[MAX_REPS], bw[MAX_REPS], ratio[MAX_REPS];
	double rss_mib = 0;
	struct rn_outputs out = {.logits = logits};
	/* as llama-bench: the prompt test processes n_prompt tokens from an empty cache; the generation test
	 * decodes n_gen tokens one at a time starting at position `depth` (0 unless --depth) */
	for (int r = -1; r < reps; r++) { /* r = -1: warm-up (pages the weights in), not counted */
		if (r == 0) {
			/* peak RSS of the model run (the warm-up), before the bandwidth test allocates its buffer */
			struct rusage ru;
			getrusage(RUSAGE_SELF, &ru);
			rss_mib = (double)ru.ru_maxrss / 1024.0;
			if (bandwidth) {
				if (rn_pool_new(threads, &pool) != 0) {
					fprintf(stderr, "orun bench: cannot start %d threads\n", threads);
					goto out;
				}
				rn_pool_set_spin_us(pool, 0); /* its threads sleep at once while the model runs */
				if (!(bwbuf = bandwidth_buffer()))
					bandwidth = false;
			}
		}
		if (r >= 0)
			bw[r] = bandwidth ? measure_bandwidth(pool, bwbuf) : 0;
		rn_backend_kv_clear(b, 0);
		double t0 = now_s();
		if (prefill(b, prompt, n_prompt, 0, B, pos, seq, &out, &err) != RN_OK) {
			fprintf(stderr, "orun bench: %s\n", err.msg);
			goto out;
		}
		int32_t t = rn_argmax(logits, V);
		double t1 = now_s();
		rn_backend_kv_clear(b, 0);
		if (depth > 0 && prefill(b, prompt, depth, 0, B, pos, seq, &out, &err) != RN_OK) {
			fprintf(stderr, "orun bench: %s\n", err.msg);
			goto out;
		}
		double t2 = now_s();
		for (int g = 0; g < n_gen; g++) {
			int32_t p = depth + g;
			struct rn_batch bt = {.n_tokens = 1, .token = &t, .pos = &p, .seq = seq};
			if (rn_backend_forward(b, &bt, &out, &err) != RN_OK) {
				fprintf(stderr, "orun bench: %s\n", err.msg);
				goto out;
			}
			t = bg.gs ? bench_grammar_pick(&bg, logits) : rn_argmax(logits, V);
			if (t < 0)
				goto out;
		}
		double t3 = now_s();
		t_decode += t3 - t2;
		if (r >= 0) {
			ttft[r] = (t1 - t0) * 1e3;
			pp[r] = n_prompt / (t1 - t0);
			tg[r] = n_gen > 0 ? n_gen / (t3 - t2) : 0;
		}
	}
	const struct rn_load_params *rp = rn_backend_params(b);
	/* bytes read per decoded token: the weights, plus the KV cache the token attends to (keys and values of
	 * every layer at each cached position; on average depth + (n_gen + 1) / 2 positions over the run) */
	const double kv_elem = rp->kv_type == RN_KV_Q8_0 ? 34.0 / 32.0 : 2.0;
	const double kv_bpt = n_gen > 0 ? (double)m->hp.n_layer * 2.0 * (double)m->hp.n_head_kv * (double)m->hp.head_dim *
						    kv_elem * ((double)depth + (n_gen + 1) / 2.0)
					: 0.0;
	double bpt = (double)m->bytes_per_token + kv_bpt;
	/* the roofline: the median of the bandwidths measured before each run, and each run's decode against its own */
	double roof_pct = 0;
	if (bandwidth) {
		for (int r = 0; r < reps; r++)
			ratio[r] = bw[r] > 0 ? 100.0 * bpt * tg[r] / 1e9 / bw[r] : 0;
		gbs = median(bw, reps);
		roof_pct = median(ratio, reps);
	}
	double pp_m = median(pp, reps), tg_m = median(tg, reps), ttft_m = median(ttft, reps);
	free(bwbuf);
	bwbuf = NULL;
	double achieved = bpt * tg_m / 1e9;
	if (json) {
		struct ob_jw w;
		ob_jw_init(&w, 0, OB_JW_NO_HTML_ESCAPE);
		ob_jw_obj(&w);
		ob_jw_key(&w, "model");
		ob_jw_string(&w, model);
		ob_jw_key(&w, "architecture");
		ob_jw_string(&w, m->hp.arch_name);
		ob_jw_key(&w, "backend");
		ob_jw_string(&w, rn_backend_instance_name(b));
		ob_jw_key(&w, "threads");
		ob_jw_int(&w, threads);
		ob_jw_key(&w, "n_prompt");
		ob_jw_int(&w, n_prompt);
		ob_jw_key(&w, "n_gen");
		ob_jw_int(&w, n_gen);
		ob_jw_key(&w, "depth");
		ob_jw_int(&w, depth);
		ob_jw_key(&w, "n_batch");
		ob_jw_int(&w, rp->n_batch);
		ob_jw_key(&w, "kv_type");
		ob_jw_string(&w, rn_kv_type_name(rp->kv_type));
		ob_jw_key(&w, "mmap");
		ob_jw_bool(&w, !rp->no_mmap);
		ob_jw_key(&w, "reps");
		ob_jw_int(&w, reps);
		ob_jw_key(&w, "prefill_tokens_per_second");
		ob_jw_float64(&w, pp_m);
		ob_jw_key(&w, "decode_tokens_per_second");
		ob_jw_float64(&w, tg_m);
		ob_jw_key(&w, "time_to_first_token_ms");
		ob_jw_float64(&w, ttft_m);
		ob_jw_key(&w, "load_seconds");
		ob_jw_float64(&w, t_load);
		ob_jw_key(&w, "peak_rss_mib");
		ob_jw_float64(&w, rss_mib);
		ob_jw_key(&w, "bytes_per_token");
		ob_jw_uint(&w, m->bytes_per_token);
		ob_jw_key(&w, "kv_bytes_per_token");
		ob_jw_uint(&w, (uint64_t)kv_bpt);
		ob_jw_key(&w, "achieved_gb_per_second");
		ob_jw_float64(&w, achieved);
		ob_jw_key(&w, "measured_bandwidth_gb_per_second");
		ob_jw_float64(&w, gbs);
		ob_jw_key(&w, "roofline_tokens_per_second");
		ob_jw_float64(&w, gbs > 0 ? gbs * 1e9 / bpt : 0);
		ob_jw_key(&w, "roofline_percent");
		ob_jw_float64(&w, roof_pct);
		jw_runs(&w, "prefill_runs", pp, reps);
		jw_runs(&w, "decode_runs", tg, reps);
		if (bandwidth) {
			jw_runs(&w, "bandwidth_runs", bw, reps);
			jw_runs(&w, "roofline_percent_runs", ratio, reps);
		}
		ob_jw_obj_end(&w);
		printf("%s\n", ob_jw_str(&w) ? ob_jw_str(&w) : "{}");
		ob_jw_free(&w);
	} else {
		printf("model              %s (%s, %.1f M params, %.1f MiB read per token: weights %.1f, KV cache %.1f "
		       "on average)\n",
		       model, m->hp.arch_name, (double)m->n_params / 1e6, bpt / 1048576.0,
		       (double)m->bytes_per_token / 1048576.0, kv_bpt / 1048576.0);
		printf("backend            %s, %d threads, batch %d, KV %s, weights %s\n", rn_backend_instance_name(b),
		       threads ? threads : rn_cpu_physical_cores(), rp->n_batch, rn_kv_type_name(rp->kv_type),
		       rp->no_mmap ? "copied (no mmap)" : "mapped");
		printf("prefill            %.2f tok/s (%d tokens, median of %d)\n", pp_m, n_prompt, reps);
		printf("decode             %.2f tok/s (%d tokens from depth %d, median of %d)\n", tg_m, n_gen, depth, reps);
		if (bg.gs)
			printf("grammar            %s: %.3f ms per token, %.2f%% of the decode time; %ld tokens, the "
			       "sampled one rejected (mask used) for %ld, %ld restarts\n", grammar_file,
			       bg.n_tokens ? bg.seconds * 1e3 / (double)bg.n_tokens : 0, 100.0 * bg.seconds / t_decode,
			       bg.n_tokens, bg.n_masked, bg.n_restarts);
		printf("time to first tok  %.1f ms\n", ttft_m);
		printf("peak RSS           %.1f MiB\n", rss_mib);
		printf("achieved           %.2f GB/s\n", achieved);
		if (gbs > 0) {
			double lo = ratio[0], hi = ratio[0];
			for (int r = 1; r < reps; r++) {
				lo = ratio[r] < lo ? ratio[r] : lo;
				hi = ratio[r] > hi ? ratio[r] : hi;
			}
			printf("roofline           %.2f GB/s streaming read -> %.1f tok/s; decode at %.1f%% of it (median over "
			       "the runs, each against the bandwidth measured just before it; runs %.1f-%.1f%%)\n",
			       gbs, gbs * 1e9 / bpt, roof_pct, lo, hi);
		}
	}
	rc = 0;
out:
	rn_pool_free(pool);
	free(bwbuf);
	free(prompt);
	free(pos);
	free(seq);
	free(logits);
	rn_backend_free(b);
	bench_grammar_close(&bg);
	rn_tok_free(tok);
	rn_model_free(m);
	return rc;
}
