/* runner/server/sched.h — the scheduler: which models are loaded, for how long, and who waits for what.
 *
 * As Ollama's server/sched.go: a model loads on first use and stays for its keep_alive (the request's, else
 * OLLAMA_KEEP_ALIVE); 0 unloads right after the request, negative never expires; a request whose load-time
 * options differ (num_ctx, num_batch, num_gpu, num_thread, use_mmap, rope_freq_*) reloads the model once it
 * is idle; OLLAMA_MAX_LOADED_MODELS evicts the idle runner with the shortest keep_alive; OLLAMA_MAX_QUEUE
 * bounds the requests waiting anywhere (503 beyond). Each loaded chat model has one engine thread driving
 * runner/engine.h with OLLAMA_NUM_PARALLEL slots; requests beyond the free slots wait in FIFO order and join
 * at the next engine step. Embedding models (GGUF pooling_type) load a single-sequence backend instead.
 *
 * Thread-safety: every function may be called from any thread.
 */
#ifndef ORUN_RUNNER_SERVER_SCHED_H
#define ORUN_RUNNER_SERVER_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runner/engine.h"
#include "runner/model.h"
#include "runner/tokenizer/tokenizer.h"

#define RN_SCHED_MAX_RUNNERS 64 /* loaded models, whatever OLLAMA_MAX_LOADED_MODELS says */
#define RN_KEEP_ALIVE_UNSET INT64_MIN

struct rn_metrics;
struct rn_log;

struct rn_sched_config {
	unsigned num_parallel;   /* slots per chat model (0 = 1) */
	int default_num_ctx;     /* num_ctx of a request that asks none: OLLAMA_CONTEXT_LENGTH, else by VRAM (orun
				  * serve); 0 = RN_LOAD_DEFAULT_CTX */
	unsigned max_loaded;     /* 0 = automatic: 3 */
	unsigned max_queue;      /* requests waiting for a runner or a slot; 0 = unlimited */
	int64_t keep_alive_ns;   /* default keep_alive */
	enum rn_kv_type kv_type; /* OLLAMA_KV_CACHE_TYPE */
	int backend;             /* backend index, -1 = best available */
	struct rn_metrics *metrics; /* may be NULL */
	const struct rn_log *log;   /* load, unload, option and truncation lines; NULL = none */
};

/* What to load and how to describe it in /api/ps. Strings are copied. */
struct rn_sched_model {
	const char *model_path;  /* the GGUF (blob) path: the runner's identity together with the options */
	const char *name;        /* display name (DisplayShortest) */
	const char *digest;      /* manifest digest (hex), or "" */
	const char *details_json;/* the "details" object as JSON, or NULL */
	bool embedding;          /* load for embeddings (pooling_type present) */
};

struct rn_sched;
struct rn_runner;

struct rn_sched_error {
	int status;     /* HTTP status: 404, 499, 500, 503 */
	char msg[512];
};

struct rn_sched *rn_sched_new(const struct rn_sched_config *c);
/* Unloads everything (waits for engine threads); NULL is fine. */
void rn_sched_free(struct rn_sched *s);

/* Returns a loaded runner for m with the load-time parameters `asked` (runner/load.h: what the request asks,
 * from rn_load_params_from_options or a command line), loading it if needed (blocking), with a reference held.
 * The defaults are applied here, once: rn_load_params_resolve with this scheduler's configuration
 * (default_num_ctx, num_parallel, kv_type) and the model's own context length; a loaded runner is reused only
 * when the result is rn_load_params_equal to its own (else it is reloaded once idle). keep_alive_ns: the
 * request's keep_alive, or RN_KEEP_ALIVE_UNSET. gone(gone_ctx) is polled while waiting: when it returns true
 * the call gives up with 499 "request canceled". Errors: 503 "server busy, please try again.  maximum pending
 * requests exceeded", 500 with the load failure, 499. */
struct rn_runner *rn_sched_acquire(struct rn_sched *s, const struct rn_sched_model *m,
				   const struct rn_load_params *asked, int64_t keep_alive_ns, bool (*gone)(void *),
				   void *gone_ctx, struct rn_sched_error *err);

/* Drops the reference taken by acquire; when the last one goes the keep_alive timer starts (0 = unload now). */
void rn_sched_release(struct rn_sched *s, struct rn_runner *r);

/* keep_alive 0 with an empty request: unload the runners of this model path as soon as they are idle. */
void rn_sched_expire(struct rn_sched *s, const char *model_path);

/* Runner accessors (valid while a reference is held); n_ctx and n_batch as resolved. */
const struct rn_model *rn_runner_model(const struct rn_runner *r);
const struct rn_tok *rn_runner_tok(const struct rn_runner *r);
int rn_runner_n_ctx(const struct rn_runner *r);
int rn_runner_n_batch(const struct rn_runner *r);

/* ---------------------------------------------------------------------------------------------------- */
/* Generation jobs: a request on a runner, with its events queued for the connection thread. */

enum rn_job_ev_kind { RN_JOB_TEXT, RN_JOB_DONE };

struct rn_job_event {
	enum rn_job_ev_kind kind;
	char *text;          /* RN_JOB_TEXT: the released text (may be empty) */
	size_t len;
	int32_t token;
	int64_t t_ns;        /* monotonic time the engine delivered it */
	struct rn_job_event *next;
	size_t cap;          /* bytes allocated at text (events are recycled: see rn_job_event_done) */
	struct rn_logprob *logprobs; /* the engine event's logprob entries (rn_event.logprobs), n_logprobs of them */
	size_t n_logprobs, cap_logprobs;
};

struct rn_job;

/* Queues a generation (r's prompt and stop strings are copied; on_event/user are ignored). Returns the job
 * (owned by the caller: rn_job_free) or NULL with err (503 when the queue is full). */
struct rn_job *rn_job_submit(struct rn_sched *s, struct rn_runner *runner, const struct rn_request *r,
			     struct rn_sched_error *err);

/* Waits for the next event (blocking; gone() is polled every few ms and cancels the job when it returns
 * true). Returns the event (give it back with rn_job_event_done, or free it with rn_job_event_free), or NULL
 * when the job is cancelled. After the RN_JOB_DONE event, rn_job_result gives the outcome. */
struct rn_job_event *rn_job_next(struct rn_job *j, bool (*gone)(void *), void *gone_ctx);

/* As rn_job_next, and also sleeps on the client's socket fd (>= 0): the caller wakes once per event, or at
 * once when the socket reports a hang-up or an error (then gone() decides). gone() is still polled, rarely,
 * for other reasons to stop (a server shutting down). A socket that turns readable without a hang-up (a
 * client sending more data) is not watched any more for this job. fd < 0: the same as rn_job_next. */
struct rn_job_event *rn_job_next_fd(struct rn_job *j, int fd, bool (*gone)(void *), void *gone_ctx);

/* An engine-thread sink, for a streaming connection that writes each token itself without waking its own
 * thread: while the job's consumer sleeps in rn_job_next* with nothing queued, each non-final event goes to
 * fn(ctx, ev) on the engine thread instead of the queue. fn runs under the job's lock: it must not block and
 * must not call rn_job_* functions. It returns one of: */
enum rn_sink_result {
	RN_SINK_DONE,   /* handled; the consumer sleeps on */
	RN_SINK_WAKE,   /* handled, but the consumer has work to do (an empty event is queued to wake it) */
	RN_SINK_QUEUE,  /* not handled: queue the event as usual */
	RN_SINK_CANCEL, /* handled; cancel the request (e.g. the client is gone) */
};
typedef enum rn_sink_result (*rn_job_sink_fn)(void *ctx, const struct rn_job_event *ev);

/* Sets (or with fn NULL clears) the job's sink. Call from the consumer's thread. */
void rn_job_set_sink(struct rn_job *j, rn_job_sink_fn fn, void *ctx);

/* Gives an event back to its job for reuse (the engine thread then allocates nothing per token in the
 * steady state). e must come from rn_job_next* of this job; NULL is fine. */
void rn_job_event_done(struct rn_job *j, struct rn_job_event *e);
void rn_job_event_free(struct rn_job_event *e);

/* Outcome of a finished job. */
void rn_job_result(const struct rn_job *j, enum rn_done_reason *reason, struct rn_engine_stats *stats,
		   struct rn_error *error);

/* The engine slot the job runs in, or -1 while it waits for one. Takes no lock (a job's sink may call it): call
 * it from the sink, or from the consumer's thread once rn_job_next* returned an event, when it is settled. */
int rn_job_slot(const struct rn_job *j);

/* Cancels (if running) and frees the job; NULL is fine. */
void rn_job_free(struct rn_job *j);

/* ---------------------------------------------------------------------------------------------------- */
/* Embeddings (runners loaded with embedding = true) */

/* Embeds one token sequence (already tokenized, fits n_ctx): the pooled hidden state (pooling from the GGUF:
 * mean, cls or last), not normalised. *out is malloc'd (n_embd floats). Runs on the runner's worker, one
 * sequence at a time. Returns 0 or -1 with err. */
int rn_runner_embed(struct rn_sched *s, struct rn_runner *r, const int32_t *tokens, size_t n, float **out,
		    int *n_embd, bool (*gone)(void *), void *gone_ctx, struct rn_sched_error *err);

/* ---------------------------------------------------------------------------------------------------- */
/* /api/ps */

struct rn_sched_info {
	char *name, *digest, *details_json;
	int64_t size, size_vram;
	int64_t expires_unix_ns; /* wall clock; a far-future value when it never expires */
	int context_length;
	struct rn_cache_stats cache; /* its prefix cache (rn_engine_cache_stats) once loaded, for /metrics (not
				      * part of /api/ps); all zero while loading, for embedding models and without
				      * a paged backend */
};

/* Snapshot of the loaded (and loading) runners, sorted by expires_at descending. Free with
 * rn_sched_info_free. */
int rn_sched_list(struct rn_sched *s, struct rn_sched_info **out, size_t *n);
void rn_sched_info_free(struct rn_sched_info *v, size_t n);

/* Requests waiting (for a runner or a slot), for /metrics. */
int rn_sched_queue_depth(struct rn_sched *s);

#endif
