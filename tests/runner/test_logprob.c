/* tests/runner/test_logprob.c — rn_logprob_compute: the log-softmax against a direct computation, sums over
 * the vocabulary and the top list, ordering and ties, -inf and NaN logits, clamping of n_top, a 151,936-entry
 * row (qwen2.5's vocabulary). */
#include "config.h"

#include <math.h>
#include <stdlib.h>

#include "runner/logprob.h"
#include "tests/check.h"

int main(void)
{
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
