/* tests/cuda/test_cuda_sampler.c — GPU sampling's penalty and typical-p paths against runner/sampler.c.
 *
 * A one-layer model with Qwen3's vocabulary (151,936 tokens, so the GPU's top-k runs over the real row) and
 * logits spread over several units (output norm weights near 6). For one decode step, the logits are copied to
 * the host (rn_cuda_forward) and then, for each option set and 16 seeds, the same step is sampled on the GPU
 * (rn_cuda_forward_sample: the step re-run writes the same cells with the same values) with the uniform number
 * the CPU sampler would draw for that seed, while rn_sampler_sample (seeded, the history accepted) chooses on
 * the host logits. Option sets: penalties (repeat, presence, frequency over a history holding the leading
 * tokens 1-3 times) with greedy and with top-k / top-p; typical-p alone, with penalties and min-p, with top-p,
 * and at 0.99 over 256 candidates.
 *
 * Tolerance: the tokens must be identical, except where the choice is a near tie: the test's own copy of the
 * chain (ref_chain, checked here to choose exactly as runner/sampler.c on every draw) reports how close each
 * decision on computed values came to its threshold (typical-p's score order and mass cut, top-p's and min-p's
 * cuts, the draw's cumulative sum); below 1e-5 the GPU may decide either way (its expf / logf, within 2 ulp,
 * and sums of up to 256 probabilities in another order differ from the host's by ~1e-6; 1e-5 is 10x that).
 * Decisions on the logits themselves (penalties, argmax, top-k) compare the same floats on both sides: exact.
 * Near ties are counted and printed and may be at most 1 draw in 8 (else the logits do not test much).
 * Skips (77) without a CUDA device; ORUN_CUDA_TEST_CPU=1 runs the host half there (the CPU backend's logits,
 * rn_sampler against ref_chain, and the uniform numbers against the seeds). ORUN_CUDA_TEST_QUICK=1: 4 seeds.
 */
#include "config.h"

#include "runner/sampler.h"
#include "tests/cuda/cmp.h"
#include "tests/cuda/synth.h"

#define NSEED 16
#define NEAR 1e-5

/* runner/sampler.c's generator: xoshiro256** seeded through splitmix64; the first draw of a seed. */
static uint64_t sm64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static double first_uniform(uint64_t seed)
{
	uint64_t s[4], x = seed;
	for (int i = 0; i < 4; i++)
		s[i] = sm64(&x);
	uint64_t r = rotl64(s[1] * 5, 7) * 9;
	return (double)(r >> 11) * (1.0 / 9007199254740992.0);
}

struct opt {
	const char *name;
	struct rn_sampler_params p;
};

struct cand {
	int32_t id;
	float logit, p;
};

static int cmp_desc(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	if (x->logit != y->logit)
		return x->logit < y->logit ? 1 : -1;
	return (x->id > y->id) - (x->id < y->id);
}

struct scored {
	float score;
	int idx;
};

static int cmp_scored(const void *a, const void *b)
{
	const struct scored *x = a, *y = b;
	if (x->score != y->score)
		return x->score < y->score ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

static void softmax(struct cand *c, int n)
{
	float mx = c[0].logit;
	double sum = 0;
	for (int i = 0; i < n; i++) {
		c[i].p = expf(c[i].logit - mx);
		sum += c[i].p;
	}
	for (int i = 0; i < n; i++)
		c[i].p = (float)(c[i].p / sum);
}

static void near(double *m, double v)
{
	v = fabs(v);
	if (v < *m)
		*m = v;
}

/* runner/sampler.c's chain, step for step, on logits (modified), drawing u; *margin gets the smallest distance
 * of a decision on computed values (probabilities, typical scores, cumulative sums, min-p's cut relative to the
 * top logit) from its threshold. Decisions on the logits themselves (argmax, top-k) compare the same floats on
 * both sides (the GPU samples the logits it copied out; penalties are the same float operations): no margin. */
static int32_t ref_chain(const struct rn_sampler_params *p, float *l, int V, const int32_t *hist, int nh, double u,
			 double *margin)
{
	*margin = INFINITY;
	if (nh > 0 && (p->repeat_penalty != 1.0f || p->presence_penalty != 0.0f || p->frequency_penalty != 0.0f)) {
		int32_t *t = malloc((size_t)nh * sizeof *t);
		memcpy(t, hist, (size_t)nh * sizeof *t);
		for (int i = 0; i < nh; i++) /* sort (insertion: nh is small) */
			for (int j = i; j > 0 && t[j - 1] > t[j]; j--) {
				int32_t x = t[j];
				t[j] = t[j - 1];
				t[j - 1] = x;
			}
		for (int i = 0; i < nh;) {
			int j = i;
			while (j < nh && t[j] == t[i])
				j++;
			float *x = &l[t[i]];
			if (*x <= 0)
				*x *= p->repeat_penalty;
			else
				*x /= p->repeat_penalty;
			*x -= (float)(j - i) * p->frequency_penalty + p->presence_penalty;
			i = j;
		}
		free(t);
	}
	struct cand *c = malloc((size_t)V * sizeof *c);
	for (int i = 0; i < V; i++)
		c[i] = (struct cand){i, l[i], 0};
	qsort(c, (size_t)V, sizeof *c, cmp_desc);
	const double scale = fabs(c[0].logit) > 1 ? fabs(c[0].logit) : 1;
	int32_t tok;
	if (p->temperature <= 0) {
		tok = c[0].id;
		free(c);
		return tok;
	}
	int n = V;
	if (p->top_k > 0 && p->top_k < V)
		n = p->top_k;
	if (p->typical_p < 1.0f && n > 1) {
		softmax(c, n);
		double ent = 0;
		for (int i = 0; i < n; i++)
			if (c[i].p > 0)
				ent -= c[i].p * log(c[i].p);
		struct scored *sc = malloc((size_t)n * sizeof *sc);
		for (int i = 0; i < n; i++) {
			sc[i].score = c[i].p > 0 ? (float)fabs(-log(c[i].p) - ent) : INFINITY;
			sc[i].idx = i;
		}
		qsort(sc, (size_t)n, sizeof *sc, cmp_scored);
		double cum = 0, prev = 0;
		int keep = n;
		for (int i = 0; i < n; i++) {
			cum += c[sc[i].idx].p;
			if (cum > p->typical_p) {
				keep = i + 1;
				near(margin, cum - p->typical_p);
				near(margin, p->typical_p - prev);
				break;
			}
			prev = cum;
		}
		if (keep < n)
			near(margin, sc[keep].score - sc[keep - 1].score);
		struct cand *kept = malloc((size_t)keep * sizeof *kept);
		for (int i = 0; i < keep; i++)
			kept[i] = c[sc[i].idx];
		memcpy(c, kept, (size_t)keep * sizeof *c);
		free(kept);
		free(sc);
		qsort(c, (size_t)keep, sizeof *c, cmp_desc);
		n = keep;
	}
	if (p->top_p < 1.0f && n > 1) {
		softmax(c, n);
		double cum = 0, prev = 0;
		for (int i = 0; i < n; i++) {
			cum += c[i].p;
			if (cum >= p->top_p) {
				near(margin, cum - p->top_p);
				near(margin, p->top_p - prev);
				n = i + 1;
				break;
			}
			prev = cum;
		}
	}
	if (p->min_p > 0.0f && n > 1) {
		float ml = c[0].logit + logf(p->min_p);
		int m = 1;
		while (m < n && c[m].logit >= ml)
			m++;
		near(margin, (c[m - 1].logit - ml) / scale);
		if (m < n)
			near(margin, (c[m].logit - ml) / scale);
		n = m;
	}
	for (int i = 0; i < n; i++)
		c[i].logit /= p->temperature;
	softmax(c, n);
	double cum = 0, prev = 0;
	tok = c[n - 1].id;
	for (int i = 0; i < n; i++) {
		cum += c[i].p;
		if (u < cum) {
			tok = c[i].id;
			near(margin, cum - u);
			if (i > 0)
				near(margin, u - prev);
			break;
		}
		prev = cum;
	}
	free(c);
	return tok;
}

/* rn_sampler_sample with seed `seed` and the history accepted, on a copy of the logits. */
static int32_t cpu_sample(const struct rn_sampler_params *p0, const float *logits, int V, const int32_t *hist, int nh,
			  uint64_t seed, float *tmp)
{
	struct rn_sampler_params p = *p0;
	p.seed = (int64_t)seed;
	p.repeat_last_n = nh;
	struct rn_error e = {0};
	struct rn_sampler *s = rn_sampler_new(&p, V, 4096, &e);
	CHECKF(s != NULL, "rn_sampler_new: %s", e.msg);
	if (!s)
		return -1;
	for (int i = 0; i < nh; i++)
		rn_sampler_accept(s, hist[i]);
	memcpy(tmp, logits, (size_t)V * sizeof *tmp);
	int32_t t = rn_sampler_sample(s, tmp);
	rn_sampler_free(s);
	return t;
}

static struct rn_sampler_params params(float temp, int top_k, float top_p, float min_p, float typical, float rep,
				       float pres, float freq)
{
	struct rn_sampler_params p;
	rn_sampler_params_default(&p);
	p.temperature = temp;
	p.top_k = top_k;
	p.top_p = top_p;
	p.min_p = min_p;
	p.typical_p = typical;
	p.repeat_penalty = rep;
	p.presence_penalty = pres;
	p.frequency_penalty = freq;
	return p;
}

/* The uniform numbers: with 1000 equal logits and no filter, the CPU draws token floor(u * 1000). */
static void check_uniforms(void)
{
	enum { N = 1000 };
	float l[N], tmp[N];
	for (int i = 0; i < N; i++)
		l[i] = 0.5f;
	struct rn_sampler_params p = params(1.0f, 0, 1.0f, 0.0f, 1.0f, 1.0f, 0.0f, 0.0f);
	int bad = 0;
	for (uint64_t seed = 1; seed <= 64; seed++) {
		double u = first_uniform(seed);
		int32_t want = (int32_t)(u * N), got = cpu_sample(&p, l, N, NULL, 0, seed, tmp);
		double frac = u * N - want;
		if (got != want && frac > 1e-3 && frac < 1 - 1e-3)
			bad++;
	}
	CHECKF(bad == 0, "%d of 64 seeds: the first uniform number differs from runner/sampler.c's", bad);
}

int main(void)
{
	bool gpu = cmp_gpu_or_skip("the GPU sampling test");
	check_uniforms();
	struct synth_opts o;
	synth_defaults(&o, "qwen3", GGUF_TYPE_Q8_0);
	o.layers = 1;
	o.ff = 512;
	o.vocab = 151936;
	o.out_norm = 6.0f;
	size_t size = 0;
	uint8_t *buf = synth_model(&o, &size);
	CHECK(buf != NULL);
	struct gguf_error ge;
	struct gguf_file *f = buf ? gguf_parse(buf, size, &ge) : NULL;
	CHECKF(f != NULL, "parse: %s", ge.msg);
	struct rn_error err = {0};
	struct rn_model *m = f ? rn_model_load(f, &err) : NULL;
	CHECKF(m != NULL, "model: %s", err.msg);
	struct cmp P;
	if (!m || !cmp_load(&P, m, 1, 64, 16, RN_KV_F16, gpu, 0)) {
		cmp_free(&P);
		rn_model_free(m);
		gguf_close(f);
		free(buf);
		return check_done();
	}
	const int V = m->hp.n_vocab;
	/* a short prompt, then the step whose logits are sampled (cell 8) */
	struct call c = {0};
	for (int i = 0; i < 8; i++)
		call_add(&c, (int32_t)((i * 7919 + 5) % V), i, 0, i, i == 7);
	cmp_run(&P, &c, "prompt");
	call_reset(&c);
	call_add(&c, 4242, 8, 0, 8, true);
	struct rn_batch_cells bc = call_cells(&c, c.seq);
	struct rn_error e = {0};
	float *logits = malloc((size_t)V * 4), *tmp = malloc((size_t)V * 4), *work = malloc((size_t)V * 4);
	struct rn_outputs out = {.logits = logits};
	int rc = P.gpu ? rn_cuda_backend_ops.forward(P.gpu, &bc, &out, &e) : rn_cpu_backend_ops.forward(P.cpu, &bc, &out, &e);
	CHECKF(rc == RN_OK, "%s forward: %s", P.gpu ? "CUDA" : "CPU", e.msg);
	/* the history: the 12 leading tokens 1-3 times each, and 20 others */
	int32_t hist[64];
	int nh = 0;
	{
		memcpy(tmp, logits, (size_t)V * 4);
		for (int k = 0; k < 12; k++) {
			int32_t b = rn_argmax(tmp, V);
			tmp[b] = -INFINITY;
			for (int r = 0; r <= k % 3; r++)
				hist[nh++] = b;
		}
		for (int k = 0; k < 20; k++)
			hist[nh++] = (int32_t)((k * 104729 + 77) % V);
	}
	double rms = 0;
	for (int i = 0; i < V; i++)
		rms += (double)logits[i] * logits[i];
	rms = sqrt(rms / V);
	printf("logits rms %.2f over %d tokens; history of %d tokens\n", rms, V, nh);
	CHECKF(rms > 1 && rms < 50, "logits rms %.3g: want a spread of a few units for typical-p", rms);
	const struct opt opts[] = {
		{"greedy + penalties", params(0.0f, 40, 1.0f, 0.0f, 1.0f, 1.5f, 0.5f, 0.25f)},
		{"penalties, top-k 64, top-p .95", params(0.9f, 64, 0.95f, 0.0f, 1.0f, 1.2f, 0.0f, 0.3f)},
		{"typical .6, top-k 200", params(1.0f, 200, 1.0f, 0.0f, 0.6f, 1.0f, 0.0f, 0.0f)},
		{"typical .3 + penalties + min-p", params(0.7f, 256, 1.0f, 0.02f, 0.3f, 1.1f, 0.3f, 0.0f)},
		{"typical .95 + top-p .8, top-k 40", params(1.3f, 40, 0.8f, 0.0f, 0.95f, 1.0f, 0.0f, 0.0f)},
		{"typical .99, top-k 256", params(1.0f, 256, 1.0f, 0.0f, 0.99f, 1.0f, 0.0f, 0.0f)},
	};
	int total = 0, close_all = 0;
	for (size_t k = 0; k < sizeof opts / sizeof opts[0] && rc == RN_OK; k++) {
		const struct rn_sampler_params *p = &opts[k].p;
		const bool pen = p->repeat_penalty != 1.0f || p->presence_penalty != 0.0f || p->frequency_penalty != 0.0f;
		int agree = 0, nt = 0, distinct = 0, close = 0;
		int32_t seen[NSEED];
		const uint64_t nseed = cmp_quick() ? 4 : NSEED;
		for (uint64_t seed = 1; seed <= nseed; seed++) {
			const double u = first_uniform(seed * 1000003);
			int32_t want = cpu_sample(p, logits, V, pen ? hist : NULL, pen ? nh : 0, seed * 1000003, tmp);
			double margin;
			memcpy(work, logits, (size_t)V * 4);
			int32_t ref = ref_chain(p, work, V, pen ? hist : NULL, pen ? nh : 0, u, &margin);
			CHECKF(ref == want, "%s seed %llu: the test's chain chose %d, runner/sampler.c %d", opts[k].name,
			       (unsigned long long)seed, ref, want);
			int d = 1;
			for (int i = 0; i < distinct; i++)
				d &= seen[i] != want;
			if (d)
				seen[distinct++] = want;
			close += margin < NEAR;
			total++;
			if (!P.gpu)
				continue;
			struct rn_cuda_sampling s = {.temperature = p->temperature,
						     .top_k = p->top_k,
						     .top_p = p->top_p,
						     .min_p = p->min_p,
						     .typical_p = p->typical_p,
						     .repeat_penalty = p->repeat_penalty,
						     .presence_penalty = p->presence_penalty,
						     .frequency_penalty = p->frequency_penalty,
						     .history = pen ? hist : NULL,
						     .n_history = pen ? nh : 0,
						     .u = u};
			int32_t got = -1;
			rc = rn_cuda_forward_sample(P.gpu, &bc, &s, &got, &e);
			CHECKF(rc == RN_OK, "%s: rn_cuda_forward_sample: %s", opts[k].name, e.msg);
			if (rc)
				break;
			if (got == want) {
				agree++;
			} else if (margin < NEAR) {
				nt++;
				printf("  %s seed %llu: GPU %d, CPU %d on a near tie (margin %.2g)\n", opts[k].name,
				       (unsigned long long)seed, got, want, margin);
			} else {
				CHECKF(0, "%s seed %llu (u = %.6f): GPU chose %d, runner/sampler.c %d (margin %.3g)", opts[k].name,
				       (unsigned long long)seed, u, got, want, margin);
			}
		}
		close_all += close;
		printf("%-34s %2d distinct tokens over %d seeds, %d near ties (margin < %.0e)", opts[k].name, distinct,
		       (int)nseed, close, NEAR);
		if (P.gpu)
			printf("; GPU = CPU on %d, differ on a near tie %d", agree, nt);
		printf("\n");
	}
	CHECKF(close_all * 8 <= total, "%d of %d draws were near ties: the logits do not separate the choices", close_all,
	       total);
	free(logits);
	free(tmp);
	free(work);
	call_free(&c);
	cmp_free(&P);
	rn_model_free(m);
	gguf_close(f);
	free(buf);
	return check_done();
}
