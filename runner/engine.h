/* runner/engine.h — the sequence manager on top of a backend: slots, prompt processing in num_batch chunks,
 * prefix reuse, context shift, sampling, stop strings, and one event per generated token.
 *
 * One engine per loaded model, driven by one thread (the "engine thread") that calls rn_engine_step() in a
 * loop; each step advances every active slot together in one forward call (continuous batching: decoding
 * slots add one token each, prefilling slots share the rest of the num_batch budget). Requests arrive from
 * any thread through rn_engine_submit(); their events (token id + the text that became safe to show) are
 * delivered on the engine thread through the request's callback, so a server can write each one straight to
 * its connection. Behaviour follows Ollama's runners: truncation and context shift keep num_keep tokens
 * (+ BOS) and drop half of the rest; num_predict is capped at 10 x num_ctx; stop strings end the generation
 * and are not shown; text is held back only for a possible stop string or an incomplete UTF-8 character.
 */
#ifndef ORUN_RUNNER_ENGINE_H
#define ORUN_RUNNER_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runner/backend.h"
#include "runner/logprob.h"
#include "runner/error.h"
#include "runner/model.h"
#include "runner/sampler.h"
#include "runner/tokenizer/tokenizer.h"

#define RN_ENGINE_MAX_STOP 16        /* stop strings per request */
#define RN_ENGINE_MAX_STOP_LEN 1024  /* bytes per stop string */
#define RN_ENGINE_MAX_PRESERVED 256  /* preserved tokens per request */
#define RN_ENGINE_PREDICT_CAP 10     /* num_predict is capped at this many times num_ctx */

enum rn_done_reason {
	RN_DONE_NONE = 0,  /* not finished */
	RN_DONE_STOP,      /* end-of-generation token or a stop string ("stop") */
	RN_DONE_LENGTH,    /* num_predict reached, or the context is full and shift is off ("length") */
	RN_DONE_CANCEL,    /* the callback or rn_engine_cancel asked to stop */
	RN_DONE_ERROR,     /* the request could not run (bad prompt, backend failure): see event.error */
};

/* "stop", "length", "cancel", "error", "" */
const char *rn_done_reason_name(enum rn_done_reason r);

struct rn_engine_stats {
	int n_prompt;         /* prompt tokens after truncation (Ollama's prompt_eval_count counts these) */
	int n_cached;         /* of which reused from the slot's cache (not evaluated again) */
	int n_eval;           /* tokens sampled (Ollama's eval_count) */
	int n_shift;          /* context shifts during this request */
	bool truncated;       /* the prompt was truncated to fit the context */
	int n_prompt_in;      /* prompt tokens as submitted (before truncation) */
	int n_keep;           /* tokens kept from the start when truncating (num_keep, BOS included) */
	int64_t prompt_ns;    /* submit (activation) to the first sampled token: prompt processing */
	int64_t eval_ns;      /* first sampled token to the end */
};

struct rn_event {
	int32_t token;          /* the sampled token, or -1 in the final event */
	const char *text;       /* text released by this event (valid UTF-8, no stop string), borrowed until the
				 * callback returns; may be empty */
	size_t len;
	bool done;              /* the final event of the request (exactly one per accepted request) */
	enum rn_done_reason reason;              /* final event only */
	const struct rn_engine_stats *stats;     /* final event only */
	const struct rn_error *error;            /* RN_DONE_ERROR only */
	int slot;
	/* With rn_request.logprobs: the entries of the tokens whose text this event releases (some of it, or
	 * all of a token with no text of its own), in order; borrowed until the callback returns. A token cut
	 * entirely by a stop string never gets one, nor does an end-of-generation token (as Ollama). */
	const struct rn_logprob *logprobs;
	size_t n_logprobs;
};

/* Called on the engine thread. Return 0 to continue, nonzero to cancel the request (a final event with
 * RN_DONE_CANCEL follows unless this already was the final event). */
typedef int (*rn_event_fn)(void *user, const struct rn_event *ev);

struct rn_request {
	const int32_t *prompt;   /* token ids, already tokenized with BOS where the model wants it; copied */
	size_t n_prompt;         /* >= 1 */
	struct rn_sampler_params sampling;
	int num_predict;         /* tokens to generate: -1 no limit, -2 until the context is full; capped at
				  * RN_ENGINE_PREDICT_CAP x n_ctx */
	int num_keep;            /* tokens kept at the start on truncation and context shift (+1 when the model
				  * adds BOS); -1 = the whole prompt. Ollama's default is 4. */
	bool cache_prompt;       /* reuse the longest common prefix with the slot's cached tokens */
	bool truncate;           /* a prompt that does not fit: truncate (true) or fail with RN_ERR_CONTEXT */
	bool shift;              /* the context fills while generating: shift (true) or stop with LENGTH */
	const char *const *stop; /* stop strings (copied); NULL when n_stop is 0 */
	int n_stop;
	bool render_special;     /* show control tokens in the text (Ollama: false) */
	const int32_t *preserved; /* tokens shown as their text even without render_special (llama-server's
				   * preserved_tokens); copied; NULL when n_preserved is 0 */
	size_t n_preserved;       /* at most RN_ENGINE_MAX_PRESERVED */
	bool logprobs;           /* events carry each token's log-probability (runner/logprob.h) */
	int top_logprobs;        /* with logprobs: the most probable tokens per entry, 0..RN_LOGPROB_TOP_MAX */
	const char *grammar;     /* GBNF text (runner/grammar/grammar.h) constraining the output; compiled at
				  * submit (a bad grammar fails the submit with RN_ERR_INVALID_ARG); NULL: none */
	size_t grammar_len;
	const char *grammar_after; /* with grammar: the generated text that switches it on (e.g. "</think>": the
				    * model thinks freely, then the answer is constrained); NULL: from the first
				    * token. Copied. */
	int slot;                /* the slot to use, or -1: the idle slot sharing the longest prefix */
	rn_event_fn on_event;
	void *user;
};

/* Fill r with Ollama's defaults: sampling defaults, num_predict -1, num_keep 4, cache_prompt, truncate and
 * shift on, slot -1. */
void rn_request_default(struct rn_request *r);

struct rn_engine;

/* Create an engine for model m (borrowed; must outlive the engine) and tokenizer tok (borrowed; may be NULL:
 * then events carry no text, stop strings never match and no token ends the generation by itself). Loads a
 * backend instance (rn_backend_load) with p->n_seq slots of p->n_ctx cells; p is resolved
 * (rn_load_params_resolve) and placed, nothing is defaulted here. Returns NULL with *err filled. */
struct rn_engine *rn_engine_new(const struct rn_model *m, const struct rn_tok *tok, const struct rn_load_params *p,
				struct rn_error *err) RN_WUR;

/* Free the engine; active requests are dropped without events. Accepts NULL. */
void rn_engine_free(struct rn_engine *e);

/* The parameters the backend was built with, and the backend. Borrowed. */
const struct rn_load_params *rn_engine_params(const struct rn_engine *e);
struct rn_backend *rn_engine_backend(struct rn_engine *e);

/* Queue a request (any thread). Returns the slot it will run in (>= 0), or -1 with *err: RN_ERR_BUSY when no
 * slot is free (or the asked slot is busy), RN_ERR_INVALID_ARG for a bad request (empty prompt, token ids out
 * of range, too many stop strings, bad sampling options), RN_ERR_NOMEM. Prompt-length problems are reported
 * through the request's final event (RN_DONE_ERROR with RN_ERR_CONTEXT) since truncation happens at
 * activation. */
int rn_engine_submit(struct rn_engine *e, const struct rn_request *r, struct rn_error *err) RN_WUR;

/* Ask the request in slot to stop (any thread); its final event comes from the next step. */
void rn_engine_cancel(struct rn_engine *e, int slot);

/* Engine thread: activate queued requests, run one forward call over every active slot, sample, deliver
 * events. Returns the number of slots still active or queued (0 = idle), or -1 when the backend failed (the
 * affected requests got RN_DONE_ERROR events). */
int rn_engine_step(struct rn_engine *e);

/* Engine thread: block until a request is queued or timeout_ms passes (timeout_ms < 0: forever). Returns
 * true when there is work. */
bool rn_engine_wait(struct rn_engine *e, int timeout_ms);

/* Convenience for one-shot tools (generate, bench): submit r and step until it finishes. Returns RN_OK, or the
 * submit error; generation errors arrive as the final event. */
int rn_engine_run(struct rn_engine *e, const struct rn_request *r, struct rn_error *err) RN_WUR;

/* The prefix cache's counters (runner/kvpool.h) as of the last step (any thread). */
void rn_engine_cache_stats(struct rn_engine *e, struct rn_cache_stats *st);

/* Idle slots (for a scheduler). */
int rn_engine_idle_slots(struct rn_engine *e);

#endif
