/* runner/logprob.h — token log-probabilities for Ollama's `logprobs`/`top_logprobs` (and the OpenAI and
 * llama-server faces built on them): the log-softmax of the model's raw logits at one step, before any
 * sampling option (penalties, top-k, temperature…) touches them, as Ollama's runners compute them.
 * Only computed when a request asks; one pass for the maximum, one for the sum, one for the top entries.
 */
#ifndef ORUN_RUNNER_LOGPROB_H
#define ORUN_RUNNER_LOGPROB_H

#include <stdint.h>

#define RN_LOGPROB_TOP_MAX 20 /* Ollama's limit on top_logprobs (0..20) */

/* One generated token's entry. */
struct rn_logprob {
	int32_t token;                        /* the sampled token */
	float logprob;                        /* its log-probability (<= 0; -inf when its logit is -inf or NaN) */
	int n_top;                            /* entries in top_* (0..RN_LOGPROB_TOP_MAX) */
	int32_t top_token[RN_LOGPROB_TOP_MAX]; /* the most probable tokens, most probable first (ties: lower id) */
	float top_logprob[RN_LOGPROB_TOP_MAX];
};

/* Fill *out for token `chosen` from logits[0..n) (not modified) with the n_top (clamped to 0..RN_LOGPROB_TOP_MAX
 * and to n) most probable tokens. NaN logits count as -inf; a row with no finite logit gives -inf everywhere.
 * Never fails; no allocation. */
void rn_logprob_compute(const float *logits, int n, int32_t chosen, int n_top, struct rn_logprob *out);

#endif
