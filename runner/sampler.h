/* runner/sampler.h — choose the next token from a row of logits with Ollama's sampling options.
 *
 * The chain is llama.cpp's (which Ollama's llama-server runner uses): repetition penalties over the last
 * repeat_last_n tokens, top_k, typical_p, top_p, min_p, temperature, then a draw from the distribution with
 * a seeded generator (same seed, same logits → same tokens). temperature <= 0 is greedy (after penalties).
 * Fast on large vocabularies: top_k selects with a heap in one pass; nothing sorts the whole vocabulary
 * unless top_k is disabled and top_p/typical_p need it.
 */
#ifndef ORUN_RUNNER_SAMPLER_H
#define ORUN_RUNNER_SAMPLER_H

#include <stdint.h>

#include "runner/error.h"

/* Ollama's options (api.Options, HEAD defaults in comments). */
struct rn_sampler_params {
	float temperature;       /* 0.8; <= 0: greedy */
	int top_k;               /* 40; <= 0: disabled */
	float top_p;             /* 0.9; >= 1: disabled */
	float min_p;             /* 0.0; <= 0: disabled */
	float typical_p;         /* 1.0; >= 1: disabled */
	int repeat_last_n;       /* 64; 0: no penalties; -1: the whole context (n_ctx given to rn_sampler_new) */
	float repeat_penalty;    /* 1.0 (1.1 before Ollama v0.32.10); 1: off */
	float presence_penalty;  /* 0.0 */
	float frequency_penalty; /* 0.0 */
	int64_t seed;            /* -1: random */
};

/* Fill p with Ollama's defaults. */
void rn_sampler_params_default(struct rn_sampler_params *p);

struct rn_sampler;

/* A sampler for a vocabulary of n_vocab tokens; n_ctx resolves repeat_last_n = -1. Returns NULL with *err
 * (RN_ERR_INVALID_ARG for an option out of range, naming it; RN_ERR_NOMEM). */
struct rn_sampler *rn_sampler_new(const struct rn_sampler_params *p, int n_vocab, int n_ctx,
				  struct rn_error *err) RN_WUR;

void rn_sampler_free(struct rn_sampler *s); /* accepts NULL */

/* Forget the token history (the generator state is kept). */
void rn_sampler_reset(struct rn_sampler *s);

/* Record a token in the penalty history (prompt tokens and every sampled token). */
void rn_sampler_accept(struct rn_sampler *s, int32_t token);

/* Choose a token from logits[0..n_vocab). The array is used as scratch and modified (penalties). Returns the
 * token id; never fails (all-NaN or -inf rows give token 0). Does not call rn_sampler_accept. */
int32_t rn_sampler_sample(struct rn_sampler *s, float *logits);

/* Greedy choice: the first index of the largest of x[0..n), NaNs ignored; 0 when none exceeds -inf. */
int32_t rn_argmax(const float *x, int n);

#endif
