/* runner/sampler.c — penalties, top-k (heap), typical-p, top-p, min-p, temperature and a seeded draw.
 *
 * The generator is xoshiro256** seeded through splitmix64, so a given seed gives the same sequence on every
 * platform. Deliberately not here: grammars, mirostat, DRY, XTC (Ollama removed or never exposed them).
 */
#include "config.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runner/sampler.h"

#define MAX_HISTORY (1 << 20) /* cap on the penalty window, tokens */

struct cand {
	int32_t id;
	float logit;
	float p;
};

struct rn_sampler {
	struct rn_sampler_params p;
	int n_vocab;
	int window;        /* penalty window, tokens (0 = off) */
	int32_t *hist;     /* ring of the last `window` tokens */
	int hist_n, hist_head;
	int32_t *tmp;      /* [window] scratch for counting */
	struct cand *cand; /* [n_vocab] */
	uint64_t rng[4];
};

void rn_sampler_params_default(struct rn_sampler_params *p)
{
	p->temperature = 0.8f;
	p->top_k = 40;
	p->top_p = 0.9f;
	p->min_p = 0.0f;
	p->typical_p = 1.0f;
	p->repeat_last_n = 64;
	p->repeat_penalty = 1.0f;
	p->presence_penalty = 0.0f;
	p->frequency_penalty = 0.0f;
	p->seed = -1;
}

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(uint64_t *s)
{
	uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return r;
}

/* Uniform double in [0, 1) with 53 random bits. */
static double rng_uniform(uint64_t *s) { return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0); }

static uint64_t random_seed(void)
{
	uint64_t v = 0;
	FILE *f = fopen("/dev/urandom", "rb");
	if (f) {
		if (fread(&v, sizeof v, 1, f) != 1)
			v = 0;
		fclose(f);
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return v ^ ((uint64_t)ts.tv_sec * 1000000007ull) ^ (uint64_t)ts.tv_nsec ^ (uint64_t)(uintptr_t)&v;
}

struct rn_sampler *rn_sampler_new(const struct rn_sampler_params *p, int n_vocab, int n_ctx, struct rn_error *err)
{
	if (n_vocab < 1) {
		rn_error_set(err, RN_ERR_INVALID_ARG, "vocabulary of %d tokens", n_vocab);
		return NULL;
	}
	if (!(p->temperature == p->temperature) || !(p->top_p == p->top_p) || !(p->min_p == p->min_p) ||
	    !(p->typical_p == p->typical_p) || !isfinite(p->repeat_penalty) || !isfinite(p->presence_penalty) ||
	    !isfinite(p->frequency_penalty)) {
		rn_error_set(err, RN_ERR_INVALID_ARG, "a sampling option is NaN or infinite");
		return NULL;
	}
	if (p->repeat_last_n < -1) {
		rn_error_set(err, RN_ERR_INVALID_ARG, "repeat_last_n = %d (allowed: -1, 0 or a positive count)",
			     p->repeat_last_n);
		return NULL;
	}
	if (p->repeat_penalty < 0) {
		rn_error_set(err, RN_ERR_INVALID_ARG, "repeat_penalty = %g must not be negative", (double)p->repeat_penalty);
		return NULL;
	}
	struct rn_sampler *s = calloc(1, sizeof *s);
	if (!s) {
		rn_error_set(err, RN_ERR_NOMEM, "out of memory");
		return NULL;
	}
	s->p = *p;
	s->n_vocab = n_vocab;
	int w = p->repeat_last_n == -1 ? n_ctx : p->repeat_last_n;
	if (w > MAX_HISTORY)
		w = MAX_HISTORY;
	if (w < 0)
		w = 0;
	bool penalties = p->repeat_penalty != 1.0f || p->presence_penalty != 0.0f || p->frequency_penalty != 0.0f;
	s->window = penalties ? w : 0;
	if (s->window > 0) {
		s->hist = malloc((size_t)s->window * sizeof *s->hist);
		s->tmp = malloc((size_t)s->window * sizeof *s->tmp);
	}
	s->cand = malloc((size_t)n_vocab * sizeof *s->cand);
	if (!s->cand || (s->window > 0 && (!s->hist || !s->tmp))) {
		rn_sampler_free(s);
		rn_error_set(err, RN_ERR_NOMEM, "out of memory for the sampler (%d tokens)", n_vocab);
		return NULL;
	}
	uint64_t x = p->seed < 0 ? random_seed() : (uint64_t)p->seed;
	for (int i = 0; i < 4; i++)
		s->rng[i] = splitmix64(&x);
	return s;
}

void rn_sampler_free(struct rn_sampler *s)
{
	if (!s)
		return;
	free(s->hist);
	free(s->tmp);
	free(s->cand);
	free(s);
}

void rn_sampler_reset(struct rn_sampler *s)
{
	s->hist_n = 0;
	s->hist_head = 0;
}

void rn_sampler_accept(struct rn_sampler *s, int32_t token)
{
	if (s->window == 0)
		return;
	s->hist[s->hist_head] = token;
	s->hist_head = (s->hist_head + 1) % s->window;
	if (s->hist_n < s->window)
		s->hist_n++;
}

static int cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return (x > y) - (x < y);
}

/* llama.cpp's penalties: a repeated token's logit is divided by repeat_penalty when positive (multiplied
 * when negative), then count * frequency_penalty + presence_penalty is subtracted. */
static void apply_penalties(struct rn_sampler *s, float *logits)
{
	if (s->hist_n == 0)
		return;
	memcpy(s->tmp, s->hist, (size_t)s->hist_n * sizeof *s->tmp);
	qsort(s->tmp, (size_t)s->hist_n, sizeof *s->tmp, cmp_i32);
	for (int i = 0; i < s->hist_n;) {
		int j = i;
		while (j < s->hist_n && s->tmp[j] == s->tmp[i])
			j++;
		int32_t id = s->tmp[i];
		int count = j - i;
		if (id >= 0 && id < s->n_vocab) {
			float *l = &logits[id];
			if (*l <= 0)
				*l *= s->p.repeat_penalty;
			else
				*l /= s->p.repeat_penalty;
			*l -= (float)count * s->p.frequency_penalty + s->p.presence_penalty;
		}
		i = j;
	}
}

int32_t rn_argmax(const float *x, int n)
{
	/* the largest value in 32 independent lanes (a loop GCC turns into vector maxima: no NaN is ever taken, as
	 * `x > m` is false for it), then the first index holding it: ~60 us for Qwen's 151,936 logits on Zen 3
	 * where one compare chain takes ~110 us (and ~680 us when it reloads x[best]) */
	enum { LANES = 32 };
	float m[LANES];
	for (int k = 0; k < LANES; k++)
		m[k] = -INFINITY;
	int i = 0;
	for (; i + LANES <= n; i += LANES)
		for (int k = 0; k < LANES; k++)
			m[k] = x[i + k] > m[k] ? x[i + k] : m[k];
	float bv = -INFINITY;
	for (int k = 0; k < LANES; k++)
		bv = m[k] > bv ? m[k] : bv;
	for (; i < n; i++)
		bv = x[i] > bv ? x[i] : bv;
	if (!(bv > -INFINITY))
		return 0;
	for (i = 0; i < n; i++)
		if (x[i] == bv)
			break;
	return i;
}

static int cmp_cand_desc(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	if (x->logit != y->logit)
		return x->logit < y->logit ? 1 : -1;
	return (x->id > y->id) - (x->id < y->id);
}

/* Min-heap on logit (ties: larger id is "smaller", so that equal logits keep the lowest ids). */
static bool heap_less(const struct cand *a, const struct cand *b)
{
	return a->logit < b->logit || (a->logit == b->logit && a->id > b->id);
}

static void heap_down(struct cand *h, int n, int i)
{
	for (;;) {
		int l = 2 * i + 1, r = l + 1, m = i;
		if (l < n && heap_less(&h[l], &h[m]))
			m = l;
		if (r < n && heap_less(&h[r], &h[m]))
			m = r;
		if (m == i)
			return;
		struct cand t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

/* The k largest logits, sorted descending, into s->cand; returns k. NaN logits are skipped. */
static int top_k_select(struct rn_sampler *s, const float *logits, int k)
{
	struct cand *h = s->cand;
	int n = 0;
	for (int i = 0; i < s->n_vocab; i++) {
		float v = logits[i];
		if (v != v)
			continue;
		struct cand c = {i, v, 0};
		if (n < k) {
			h[n++] = c;
			if (n == k)
				for (int j = k / 2 - 1; j >= 0; j--)
					heap_down(h, k, j);
		} else if (heap_less(&h[0], &c)) {
			h[0] = c;
			heap_down(h, k, 0);
		}
	}
	qsort(h, (size_t)n, sizeof *h, cmp_cand_desc);
	return n;
}

/* p = softmax(logit) over cand[0..n); returns nothing (sums to 1). cand must be sorted descending. */
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

/* Locally typical sampling: keep the tokens whose surprise is closest to the entropy until their mass
 * exceeds tp. cand sorted descending on entry and on return. */
static int typical(struct rn_sampler *s, int n, float tp)
{
	struct cand *c = s->cand;
	softmax(c, n);
	double ent = 0;
	for (int i = 0; i < n; i++)
		if (c[i].p > 0)
			ent -= c[i].p * log(c[i].p);
	struct scored *sc = malloc((size_t)n * sizeof *sc);
	struct cand *kept = malloc((size_t)n * sizeof *kept);
	if (!sc || !kept) {
		free(sc);
		free(kept);
		return n; /* out of memory: skip this filter rather than fail the request */
	}
	for (int i = 0; i < n; i++) {
		sc[i].score = c[i].p > 0 ? (float)fabs(-log(c[i].p) - ent) : INFINITY;
		sc[i].idx = i;
	}
	qsort(sc, (size_t)n, sizeof *sc, cmp_scored);
	double cum = 0;
	int keep = n;
	for (int i = 0; i < n; i++) {
		cum += c[sc[i].idx].p;
		if (cum > tp) {
			keep = i + 1;
			break;
		}
	}
	for (int i = 0; i < keep; i++)
		kept[i] = c[sc[i].idx];
	memcpy(c, kept, (size_t)keep * sizeof *c);
	free(sc);
	free(kept);
	qsort(c, (size_t)keep, sizeof *c, cmp_cand_desc);
	return keep;
}

int32_t rn_sampler_sample(struct rn_sampler *s, float *logits)
{
	const struct rn_sampler_params *p = &s->p;
	if (s->window > 0)
		apply_penalties(s, logits);
	if (p->temperature <= 0)
		return rn_argmax(logits, s->n_vocab);

	int n;
	if (p->top_k > 0 && p->top_k < s->n_vocab) {
		n = top_k_select(s, logits, p->top_k);
	} else {
		n = 0;
		for (int i = 0; i < s->n_vocab; i++)
			if (logits[i] == logits[i])
				s->cand[n++] = (struct cand){i, logits[i], 0};
		qsort(s->cand, (size_t)n, sizeof *s->cand, cmp_cand_desc);
	}
	if (n == 0 || s->cand[0].logit == -INFINITY)
		return n ? s->cand[0].id : 0;
	struct cand *c = s->cand;
	if (p->typical_p < 1.0f && n > 1)
		n = typical(s, n, p->typical_p);
	if (p->top_p < 1.0f && n > 1) {
		softmax(c, n);
		double cum = 0;
		for (int i = 0; i < n; i++) {
			cum += c[i].p;
			if (cum >= p->top_p) {
				n = i + 1;
				break;
			}
		}
	}
	if (p->min_p > 0.0f && n > 1) {
		float min_logit = c[0].logit + logf(p->min_p);
		int m = 1;
		while (m < n && c[m].logit >= min_logit)
			m++;
		n = m;
	}
	for (int i = 0; i < n; i++)
		c[i].logit /= p->temperature;
	softmax(c, n);
	double u = rng_uniform(s->rng), cum = 0;
	for (int i = 0; i < n; i++) {
		cum += c[i].p;
		if (u < cum)
			return c[i].id;
	}
	return c[n - 1].id;
}
