/* tests/runner/test_sampler.c — the sampler: greedy, seeded determinism, top-k / top-p / min-p / typical-p
 * truncation, repetition penalties as llama.cpp applies them, option validation, large vocabularies. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runner/sampler.h"
#include "tests/check.h"

static struct rn_sampler *mk(struct rn_sampler_params *p, int n_vocab)
{
	struct rn_error err = {0};
	struct rn_sampler *s = rn_sampler_new(p, n_vocab, 4096, &err);
	CHECKF(s != NULL, "%s", err.msg);
	return s;
}

/* Draw many tokens with fresh copies of logits; count how often each appears. */
static void histogram(struct rn_sampler *s, const float *logits, int n, int draws, int *count)
{
	float *tmp = malloc((size_t)n * sizeof *tmp);
	memset(count, 0, (size_t)n * sizeof *count);
	for (int d = 0; d < draws; d++) {
		memcpy(tmp, logits, (size_t)n * sizeof *tmp);
		int t = rn_sampler_sample(s, tmp);
		CHECK(t >= 0 && t < n);
		if (t >= 0 && t < n)
			count[t]++;
	}
	free(tmp);
}

int main(void)
{
	struct rn_sampler_params p;
	rn_sampler_params_default(&p);
	CHECK(p.temperature == 0.8f && p.top_k == 40 && p.top_p == 0.9f && p.min_p == 0.0f && p.typical_p == 1.0f);
	CHECK(p.repeat_last_n == 64 && p.repeat_penalty == 1.0f && p.seed == -1);

	/* greedy */
	float l[8] = {0.1f, 2.0f, -1.0f, 3.5f, 3.4f, 0.0f, -5.0f, 1.0f};
	p.temperature = 0;
	struct rn_sampler *s = mk(&p, 8);
	float t1[8];
	memcpy(t1, l, sizeof l);
	CHECK_EQ_INT(rn_sampler_sample(s, t1), 3);
	rn_sampler_free(s);

	/* repeat penalty flips the greedy choice: 3.5/1.1 = 3.18 < 3.4 */
	p.repeat_penalty = 1.1f;
	s = mk(&p, 8);
	rn_sampler_accept(s, 3);
	memcpy(t1, l, sizeof l);
	CHECK_EQ_INT(rn_sampler_sample(s, t1), 4);
	CHECK(fabsf(t1[3] - 3.5f / 1.1f) < 1e-6f);
	/* negative logits are multiplied */
	rn_sampler_accept(s, 6);
	memcpy(t1, l, sizeof l);
	(void)rn_sampler_sample(s, t1);
	CHECK(fabsf(t1[6] - (-5.0f * 1.1f)) < 1e-5f);
	rn_sampler_reset(s);
	memcpy(t1, l, sizeof l);
	CHECK_EQ_INT(rn_sampler_sample(s, t1), 3);
	rn_sampler_free(s);

	/* frequency and presence penalties: 3.5 - 2*0.1 - 0.05 */
	rn_sampler_params_default(&p);
	p.temperature = 0;
	p.frequency_penalty = 0.1f;
	p.presence_penalty = 0.05f;
	s = mk(&p, 8);
	rn_sampler_accept(s, 3);
	rn_sampler_accept(s, 3);
	memcpy(t1, l, sizeof l);
	CHECK_EQ_INT(rn_sampler_sample(s, t1), 4);
	CHECK(fabsf(t1[3] - (3.5f - 0.2f - 0.05f)) < 1e-5f);
	rn_sampler_free(s);

	/* repeat_last_n limits the window */
	rn_sampler_params_default(&p);
	p.temperature = 0;
	p.repeat_penalty = 2.0f;
	p.repeat_last_n = 2;
	s = mk(&p, 8);
	rn_sampler_accept(s, 3);
	rn_sampler_accept(s, 1);
	rn_sampler_accept(s, 2);
	memcpy(t1, l, sizeof l);
	CHECK_EQ_INT(rn_sampler_sample(s, t1), 3); /* 3 fell out of the window */
	rn_sampler_free(s);

	/* same seed -> same sequence; different seed -> (almost surely) different */
	const int V = 1000;
	float *big = malloc(V * sizeof *big), *tmp = malloc(V * sizeof *tmp);
	for (int i = 0; i < V; i++)
		big[i] = sinf((float)i * 0.37f) * 2.0f;
	rn_sampler_params_default(&p);
	p.seed = 42;
	p.top_k = 0;
	p.top_p = 1.0f;
	p.temperature = 1.5f;
	struct rn_sampler *a = mk(&p, V), *b = mk(&p, V);
	p.seed = 43;
	struct rn_sampler *c = mk(&p, V);
	int same = 0, differ = 0;
	for (int i = 0; i < 50; i++) {
		memcpy(tmp, big, V * sizeof *tmp);
		int x = rn_sampler_sample(a, tmp);
		memcpy(tmp, big, V * sizeof *tmp);
		int y = rn_sampler_sample(b, tmp);
		memcpy(tmp, big, V * sizeof *tmp);
		int z = rn_sampler_sample(c, tmp);
		same += x == y;
		differ += x != z;
	}
	CHECK_EQ_INT(same, 50);
	CHECK(differ > 10);
	rn_sampler_free(a);
	rn_sampler_free(b);
	rn_sampler_free(c);

	/* top_k = 2 only ever yields the two best */
	int *count = malloc(V * sizeof *count);
	rn_sampler_params_default(&p);
	p.seed = 1;
	p.top_k = 2;
	p.top_p = 1.0f;
	p.temperature = 5.0f;
	s = mk(&p, 8);
	histogram(s, l, 8, 2000, count);
	CHECK(count[3] + count[4] == 2000);
	CHECK(count[3] > 700 && count[4] > 700); /* nearly equal logits, high temperature */
	rn_sampler_free(s);

	/* top_p: probabilities 0.5, 0.3, 0.2 -> top_p 0.7 keeps the first two (0.5 < 0.7 <= 0.8) */
	float pl[3] = {logf(0.5f), logf(0.3f), logf(0.2f)};
	rn_sampler_params_default(&p);
	p.seed = 7;
	p.top_k = 0;
	p.top_p = 0.7f;
	p.temperature = 1.0f;
	s = mk(&p, 3);
	histogram(s, pl, 3, 4000, count);
	CHECK_EQ_INT(count[2], 0);
	CHECKF(abs(count[0] - 2500) < 200, "count[0] = %d (expected ~2500 of 4000)", count[0]);
	rn_sampler_free(s);

	/* min_p 0.5: keeps tokens with p >= 0.5 * p_max = 0.25 -> 0 and 1 */
	rn_sampler_params_default(&p);
	p.seed = 9;
	p.top_k = 0;
	p.top_p = 1.0f;
	p.min_p = 0.5f;
	p.temperature = 1.0f;
	s = mk(&p, 3);
	histogram(s, pl, 3, 3000, count);
	CHECK_EQ_INT(count[2], 0);
	CHECK(count[1] > 0);
	rn_sampler_free(s);

	/* typical_p keeps the tokens whose surprise is closest to the entropy first: for p = 0.4, 0.15 x 4
	 * (entropy 1.50 nats) the 0.15 tokens (surprise 1.90) come before the 0.4 one (0.92), and typical_p 0.5
	 * is reached with four of them, so the most likely token is never drawn */
	float tl[5] = {logf(0.4f), logf(0.15f), logf(0.15f), logf(0.15f), logf(0.15f)};
	rn_sampler_params_default(&p);
	p.seed = 3;
	p.top_k = 0;
	p.top_p = 1.0f;
	p.typical_p = 0.5f;
	p.temperature = 1.0f;
	s = mk(&p, 5);
	histogram(s, tl, 5, 500, count);
	CHECK_EQ_INT(count[0], 0);
	rn_sampler_free(s);

	/* sampling follows the distribution: temperature 1, no truncation */
	rn_sampler_params_default(&p);
	p.seed = 11;
	p.top_k = 0;
	p.top_p = 1.0f;
	p.temperature = 1.0f;
	s = mk(&p, 3);
	histogram(s, pl, 3, 10000, count);
	CHECKF(abs(count[0] - 5000) < 300 && abs(count[1] - 3000) < 300 && abs(count[2] - 2000) < 300,
	       "counts %d %d %d for p = 0.5 0.3 0.2", count[0], count[1], count[2]);
	rn_sampler_free(s);

	/* a vocabulary the size of Qwen's: default options pick from the top 40 only */
	const int QV = 151936;
	float *ql = malloc(QV * sizeof *ql), *qt = malloc(QV * sizeof *qt);
	for (int i = 0; i < QV; i++)
		ql[i] = (float)((i * 7919) % 1000) / 100.0f;
	rn_sampler_params_default(&p);
	p.seed = 5;
	s = mk(&p, QV);
	for (int d = 0; d < 200; d++) {
		memcpy(qt, ql, QV * sizeof *qt);
		int t = rn_sampler_sample(s, qt);
		CHECKF(ql[t] >= 9.6f, "token %d with logit %g is not among the 40 best", t, (double)ql[t]);
	}
	rn_sampler_free(s);

	/* NaN and -inf rows do not crash */
	for (int i = 0; i < 8; i++)
		t1[i] = NAN;
	rn_sampler_params_default(&p);
	p.seed = 1;
	s = mk(&p, 8);
	int t = rn_sampler_sample(s, t1);
	CHECK(t >= 0 && t < 8);
	for (int i = 0; i < 8; i++)
		t1[i] = -INFINITY;
	t = rn_sampler_sample(s, t1);
	CHECK(t >= 0 && t < 8);
	rn_sampler_free(s);

	/* rn_argmax: the first index of the largest value, against the plain loop, over sizes around the 32 lanes */
	{
		enum { N = 1000 };
		float *x = malloc(N * sizeof *x);
		CHECK(x != NULL);
		uint32_t r = 12345;
		for (int n = 1; x && n <= N; n += n < 70 ? 1 : 131) {
			for (int trial = 0; trial < 4; trial++) {
				for (int i = 0; i < n; i++) {
					r = r * 1664525u + 1013904223u;
					x[i] = (float)(r >> 24) - 128.0f; /* ties are common */
					if (trial == 1 && r % 7 == 0)
						x[i] = NAN;
					if (trial == 2 && r % 3 == 0)
						x[i] = -INFINITY;
				}
				if (trial == 3)
					x[n - 1] = 1000.0f; /* the largest in the tail after the lanes */
				int32_t want = 0;
				float bv = -INFINITY;
				for (int i = 0; i < n; i++)
					if (x[i] > bv) {
						bv = x[i];
						want = i;
					}
				CHECKF(rn_argmax(x, n) == want, "n = %d trial %d: rn_argmax %d, want %d", n, trial,
				       (int)rn_argmax(x, n), (int)want);
			}
		}
		x[0] = NAN;
		for (int i = 1; i < 40; i++)
			x[i] = -INFINITY;
		CHECK_EQ_INT(rn_argmax(x, 40), 0); /* nothing above -inf */
		x[0] = -0.0f;
		x[1] = 0.0f;
		CHECK_EQ_INT(rn_argmax(x, 40), 0); /* -0 and +0 tie: the first */
		free(x);
	}

	/* bad options */
	struct rn_error err = {0};
	rn_sampler_params_default(&p);
	p.repeat_last_n = -5;
	CHECK(rn_sampler_new(&p, 8, 100, &err) == NULL);
	CHECK_EQ_INT(err.code, RN_ERR_INVALID_ARG);
	CHECK(strstr(err.msg, "repeat_last_n") != NULL);
	rn_sampler_params_default(&p);
	p.temperature = NAN;
	CHECK(rn_sampler_new(&p, 8, 100, &err) == NULL);
	CHECK(rn_sampler_new(&p, 0, 100, &err) == NULL);

	free(big);
	free(tmp);
	free(count);
	free(ql);
	free(qt);
	return check_done();
}
