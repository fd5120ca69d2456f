/* runner/logprob.c — log-softmax of one row of logits and its most probable entries (runner/logprob.h).
 * Double-precision sum over the whole vocabulary (151,936 entries for qwen2.5 stay accurate); the top list is
 * an insertion into a sorted array of at most RN_LOGPROB_TOP_MAX, so nothing sorts the vocabulary.
 */
#include "config.h"

#include <math.h>

#include "runner/logprob.h"

/* a NaN logit is treated as -inf (never chosen, never probable) */
static inline float logit_at(const float *x, int i)
{
	return isnan(x[i]) ? -INFINITY : x[i];
}

void rn_logprob_compute(const float *logits, int n, int32_t chosen, int n_top, struct rn_logprob *out)
{
	out->token = chosen;
	out->n_top = 0;
	if (n_top < 0)
		n_top = 0;
	if (n_top > RN_LOGPROB_TOP_MAX)
		n_top = RN_LOGPROB_TOP_MAX;
	if (n_top > n)
		n_top = n;
	float max = -INFINITY;
	for (int i = 0; i < n; i++) {
		float v = logit_at(logits, i);
		if (v > max)
			max = v;
	}
	double sum = 0.0;
	if (isfinite(max))
		for (int i = 0; i < n; i++)
			sum += exp((double)logit_at(logits, i) - (double)max);
	/* log p_i = x_i - max - log(sum); with no finite logit every entry is -inf */
	double lse = isfinite(max) && sum > 0 ? (double)max + log(sum) : INFINITY;
	out->logprob = chosen >= 0 && chosen < n ? (float)((double)logit_at(logits, chosen) - lse) : -INFINITY;
	if (out->logprob > 0.0f)
		out->logprob = 0.0f; /* rounding on a one-hot row */

	/* the n_top largest logits, by value then by lower id */
	int k = 0;
	for (int i = 0; i < n && n_top > 0; i++) {
		float v = logit_at(logits, i);
		if (k == n_top && !(v > logit_at(logits, out->top_token[k - 1])))
			continue;
		int j = k < n_top ? k++ : k - 1;
		while (j > 0 && v > logit_at(logits, out->top_token[j - 1])) {
			out->top_token[j] = out->top_token[j - 1];
			j--;
		}
		out->top_token[j] = i;
	}
	out->n_top = k;
	for (int j = 0; j < k; j++) {
		double lp = (double)logit_at(logits, out->top_token[j]) - lse;
		out->top_logprob[j] = lp > 0 ? 0.0f : (float)lp;
	}
}
