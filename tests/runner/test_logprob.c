/* tests/runner/test_logprob.c — rn_logprob_compute: the log-softmax against a direct computation, sums over
 * the vocabulary and the top list, ordering and ties, -inf and NaN logits, clamping of n_top, a 151,936-entry
 * row (qwen2.5's vocabulary). With SmolLM2 installed: the engine's entries against the log-softmax of the
 * logits of an independent forward pass over the same tokens, under a repetition penalty (which changes what
 * the sampler sees but not the reported logprobs). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/backend.h"
#include "runner/engine.h"
#include "runner/logprob.h"
#include "tests/check.h"
#include "tests/testmodel.h"

#define MAX_STEPS 8

struct collect {
	int32_t ids[MAX_STEPS];
	int n_ids;
	struct rn_logprob lp[MAX_STEPS];
	int n_lp;
};

static int on_event(void *user, const struct rn_event *ev)
{
	struct collect *c = user;
	if (ev->token >= 0 && c->n_ids < MAX_STEPS)
		c->ids[c->n_ids++] = ev->token;
	for (size_t i = 0; i < ev->n_logprobs && c->n_lp < MAX_STEPS; i++)
		c->lp[c->n_lp++] = ev->logprobs[i];
	return 0;
}

static void test_engine_logprobs(void)
{
	const char *path = tm_model_path("llama");
	if (!path) {
		fprintf(stderr, "engine logprobs: SmolLM2 missing, skipped\n");
		return;
	}
	struct rn_error err = {0};
	struct rn_model *m = rn_model_open(path, &err);
	CHECKF(m != NULL, "%s", err.msg);
	struct rn_tok *tok = NULL;
	if (!m || rn_tok_load(m->gguf, NULL, &tok, NULL) != RN_TOK_OK) {
		rn_model_free(m);
		return;
	}
	struct rn_load_params ep;
	rn_load_params_init(&ep);
	ep.n_ctx = 64;
	ep.n_batch = 64;
	ep.n_threads = 2;
	rn_load_params_resolve(&ep, &(struct rn_load_defaults){.n_ctx_max = m->hp.n_ctx_train, .n_seq = 1});
	struct rn_engine *e = rn_engine_new(m, tok, &ep, &err);
	struct rn_backend *b = rn_backend_load(m, &ep, &err);
	CHECKF(e && b, "%s", err.msg);
	int32_t *ids = NULL;
	size_t n = 0;
	const char *prompt = "The history of the printing press begins";
	CHECK(rn_tok_encode_alloc(tok, prompt, strlen(prompt), true, true, &ids, &n, NULL) == RN_TOK_OK);
	const int n_vocab = (int)m->hp.n_vocab;
	float *logits = malloc((size_t)MAX_STEPS * (size_t)n_vocab * sizeof *logits);
	if (!e || !b || !ids || !logits)
		goto out;

	struct collect c = {0};
	struct rn_request q;
	rn_request_default(&q);
	q.prompt = ids;
	q.n_prompt = n;
	q.sampling.temperature = 0;
	q.sampling.repeat_penalty = 1.5f; /* the sampler's view differs from the raw logits */
	q.num_predict = 6;
	q.logprobs = true;
	q.top_logprobs = 5;
	q.on_event = on_event;
	q.user = &c;
	CHECKF(rn_engine_run(e, &q, &err) == RN_OK, "%s", err.msg);
	CHECK(c.n_ids >= 1 && c.n_lp == c.n_ids);

	/* the same tokens through a separate backend instance, scheduled as the engine does (the prompt in one
	 * batch, then one token per call: batched and single-row arithmetic differ in the last bits, which on
	 * these quantized models moves logits by tenths), keeping each step's logits */
	int total = (int)n + c.n_ids;
	int32_t *all = malloc((size_t)total * sizeof *all), *pos = malloc((size_t)total * sizeof *pos),
		*seq = calloc((size_t)total, sizeof *seq);
	CHECK(all && pos && seq);
	if (all && pos && seq) {
		memcpy(all, ids, n * sizeof *all);
		memcpy(all + n, c.ids, (size_t)c.n_ids * sizeof *all);
		for (int i = 0; i < total; i++)
			pos[i] = i;
		struct rn_batch bt = {.n_tokens = (int)n, .token = all, .pos = pos, .seq = seq};
		CHECKF(rn_backend_forward(b, &bt, &(struct rn_outputs){.logits = logits}, &err) == RN_OK, "%s", err.msg);
		for (int i = 1; i < c.n_lp; i++) {
			struct rn_batch one = {.n_tokens = 1, .token = all + n - 1 + i, .pos = pos + n - 1 + i, .seq = seq};
			float *dst = logits + (size_t)i * (size_t)n_vocab;
			CHECKF(rn_backend_forward(b, &one, &(struct rn_outputs){.logits = dst}, &err) == RN_OK, "%s",
			       err.msg);
		}
		for (int i = 0; i < c.n_lp; i++) {
			const float *row = logits + (size_t)i * (size_t)n_vocab;
			double mx = -INFINITY, z = 0;
			for (int v = 0; v < n_vocab; v++)
				mx = row[v] > mx ? row[v] : mx;
			for (int v = 0; v < n_vocab; v++)
				z += exp(row[v] - mx);
			double ref = row[c.ids[i]] - mx - log(z);
			CHECK(c.lp[i].token == c.ids[i]);
			CHECKF(fabs(c.lp[i].logprob - ref) < 1e-4, "step %d: %g vs %g", i, c.lp[i].logprob, ref);
			CHECK(c.lp[i].n_top == 5);
			double st = 0;
			for (int j = 0; j < c.lp[i].n_top; j++) {
				double r = row[c.lp[i].top_token[j]] - mx - log(z);
				CHECKF(fabs(c.lp[i].top_logprob[j] - r) < 1e-4, "step %d top %d: %g vs %g", i, j,
				       c.lp[i].top_logprob[j], r);
				st += exp(c.lp[i].top_logprob[j]);
			}
			CHECK(st <= 1.0 + 1e-6);
		}
	}
	free(all);
	free(pos);
	free(seq);
out:
	free(logits);
	free(ids);
	rn_backend_free(b);
	rn_engine_free(e);
	rn_tok_free(tok);
	rn_model_free(m);
}

int main(void)
{
	test_engine_logprobs();
	struct rn_logprob lp;
	/* direct computation on a small row */
	const float x[5] = {1.0f, 3.0f, 2.0f, -1.0f, 3.0f};
	double z = 0;
	for (int i = 0; i < 5; i++)
		z += exp(x[i]);
	rn_logprob_compute(x, 5, 2, 3, &lp);
	CHECK(lp.token == 2);
	CHECKF(fabs(lp.logprob - (2.0 - log(z))) < 1e-6, "%g", lp.logprob);
	CHECK(lp.n_top == 3);
	CHECK(lp.top_token[0] == 1 && lp.top_token[1] == 4 && lp.top_token[2] == 2); /* tie: lower id first */
	CHECK(lp.top_logprob[0] == lp.top_logprob[1] && lp.top_logprob[1] > lp.top_logprob[2]);
	double st = 0;
	for (int j = 0; j < lp.n_top; j++) {
		CHECK(lp.top_logprob[j] <= 0);
		st += exp(lp.top_logprob[j]);
	}
	CHECK(st <= 1.0 + 1e-6);
	/* all five: the probabilities sum to 1 */
	rn_logprob_compute(x, 5, 0, 5, &lp);
	st = 0;
	for (int j = 0; j < lp.n_top; j++)
		st += exp(lp.top_logprob[j]);
	CHECKF(fabs(st - 1.0) < 1e-6, "%g", st);
	CHECK(lp.top_token[4] == 3);

	/* n_top clamped to the row and to RN_LOGPROB_TOP_MAX; 0 and negative give none */
	rn_logprob_compute(x, 5, 0, 50, &lp);
	CHECK(lp.n_top == 5);
	rn_logprob_compute(x, 5, 0, 0, &lp);
	CHECK(lp.n_top == 0);
	rn_logprob_compute(x, 5, 0, -3, &lp);
	CHECK(lp.n_top == 0);

	/* -inf and NaN logits: probability 0, never ahead of a finite one, nothing NaN */
	const float y[4] = {-INFINITY, NAN, 0.5f, -INFINITY};
	rn_logprob_compute(y, 4, 2, 4, &lp);
	CHECKF(fabs(lp.logprob) < 1e-7, "%g", lp.logprob);
	CHECK(lp.top_token[0] == 2);
	for (int j = 0; j < lp.n_top; j++)
		CHECK(!isnan(lp.top_logprob[j]));
	CHECK(isinf(lp.top_logprob[1]) && lp.top_logprob[1] < 0);
	rn_logprob_compute(y, 4, 1, 2, &lp);
	CHECK(isinf(lp.logprob) && lp.logprob < 0);
	/* no finite logit at all */
	const float w[3] = {NAN, -INFINITY, NAN};
	rn_logprob_compute(w, 3, 0, 3, &lp);
	CHECK(isinf(lp.logprob) && lp.logprob < 0 && lp.n_top == 3);
	for (int j = 0; j < lp.n_top; j++)
		CHECK(!isnan(lp.top_logprob[j]));
	/* a token out of range */
	rn_logprob_compute(x, 5, 9, 1, &lp);
	CHECK(isinf(lp.logprob) && lp.logprob < 0);

	/* qwen2.5's vocabulary: the full sum is 1, the top 20 in order, the chosen one agrees with the list */
	enum { NV = 151936 };
	float *big = malloc(NV * sizeof *big);
	CHECK(big != NULL);
	unsigned s = 12345;
	for (int i = 0; i < NV; i++) {
		s = s * 1103515245u + 12345u;
		big[i] = (float)((s >> 8) % 20000) / 1000.0f - 10.0f;
	}
	big[777] = 14.0f;
	rn_logprob_compute(big, NV, 777, 20, &lp);
	CHECK(lp.n_top == 20 && lp.top_token[0] == 777 && lp.top_logprob[0] == lp.logprob);
	for (int j = 1; j < lp.n_top; j++)
		CHECK(lp.top_logprob[j] <= lp.top_logprob[j - 1]);
	double all = 0;
	for (int i = 0; i < NV; i++) {
		struct rn_logprob one;
		if (i % 4096 == 0 || i == 777) {
			rn_logprob_compute(big, NV, i, 0, &one);
			CHECK(one.logprob <= 0);
		}
	}
	/* the full sum, from the same normaliser: exp(logprob(i)) = exp(x_i - x_777) * p(777) */
	for (int i = 0; i < NV; i++)
		all += exp((double)big[i] - 14.0) * exp((double)lp.logprob);
	CHECKF(fabs(all - 1.0) < 1e-4, "%g", all);
	free(big);
	return check_done();
}
