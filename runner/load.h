/* runner/load.h — the load-time parameters of a model instance, and the one function that applies their
 * defaults.
 *
 * One struct travels from the request to the backend: a caller fills in what was asked (Ollama's options,
 * llama-server's or orun generate's flags), rn_load_params_resolve applies every default once (num_ctx from
 * OLLAMA_CONTEXT_LENGTH or the server's default, capped at the model's context; num_batch ...), the loader
 * (the scheduler, or a tool) decides the placement, and the engine and the backend take it as it is: they
 * check it, they never default it. Plain data; no state.
 */
#ifndef ORUN_RUNNER_LOAD_H
#define ORUN_RUNNER_LOAD_H

#include <stdbool.h>

#include "runner/kvcache.h"

struct mf_options;

#define RN_LOAD_MIN_CTX 4         /* smallest context a request may get (Ollama clamps num_ctx to 4) */
#define RN_LOAD_DEFAULT_CTX 4096  /* num_ctx without a server (orun generate, llama-server without -c) */
#define RN_LOAD_DEFAULT_BATCH 512 /* num_batch */
#define RN_LOAD_EMBED_BATCH 2048  /* embedding models: num_batch defaults to min(this, n_ctx) */

/* Before rn_load_params_resolve, the first group holds what was asked, 0 (-1 where said) meaning "not asked";
 * after it, every field holds the value the instance is built with. */
struct rn_load_params {
	/* ---- asked (request options, command-line flags), then resolved */
	int n_ctx;             /* KV cells per sequence, tokens (num_ctx): asked, else rn_load_defaults.n_ctx;
				* capped at the model's context, at least RN_LOAD_MIN_CTX */
	int n_batch;           /* most tokens per forward call (num_batch): asked, else RN_LOAD_DEFAULT_BATCH
				* (embedding models: min(RN_LOAD_EMBED_BATCH, n_ctx)) */
	int n_threads;         /* CPU threads including the caller (num_thread); 0 = the CPU backend's choice
				* (physical cores) */
	float rope_freq_base;  /* 0 = the file's value */
	float rope_freq_scale; /* 0 = the file's value */
	int num_gpu;           /* layers to offload (num_gpu): -1 automatic, 0 the CPU only; the CUDA backend
				* offloads every layer or none */
	int main_gpu;          /* the GPU to use (main_gpu): -1 not asked (device 0) */
	int use_mmap;          /* use_mmap: -1 automatic (the loader decides), 0 copy the weights, 1 read them in
				* place from the file mapping */
	/* ---- from the loader's configuration (rn_load_defaults), set by rn_load_params_resolve */
	int n_seq;             /* sequences (slots) of the KV cache: OLLAMA_NUM_PARALLEL, llama-server -np; 1 for
				* embedding models */
	enum rn_kv_type kv_type; /* OLLAMA_KV_CACHE_TYPE, llama-server --cache-type-k, generate --kv-type */
	/* ---- placement: not part of rn_load_params_equal */
	int device;            /* device of the backend: main_gpu, or 0 (set by rn_load_params_resolve) */
	int backend;           /* backend index (rn_backend_find), -1 = the best available: set by the loader
				* (scheduler, tool) from num_gpu */
	bool no_mmap;          /* the backend copies the weights into the process instead of reading them from the
				* file mapping: set by the loader from use_mmap (for -1, its own choice) */
	long long cache_bytes; /* the prefix cache's budget (runner/kvpool.h), bytes: -1 = not asked, then the
				* ORUN_PREFIX_CACHE environment variable, else sized by the backend from the memory left
				* after the weights and the slots' KV; 0 = keep no block no slot holds */
};

/* The loader's side of the resolution. */
struct rn_load_defaults {
	int n_ctx;               /* num_ctx when none was asked: the server's (OLLAMA_CONTEXT_LENGTH, else by VRAM),
				  * RN_LOAD_DEFAULT_CTX for the tools; <= 0 = RN_LOAD_DEFAULT_CTX */
	int n_ctx_max;           /* the model's context length (rn_model_context_length): n_ctx is capped at it;
				  * 0 = no cap (orun bench measures at any depth) */
	int n_seq;               /* slots; <= 0 = 1 */
	enum rn_kv_type kv_type;
	bool embedding;          /* one sequence; num_batch's default is min(RN_LOAD_EMBED_BATCH, n_ctx) */
};

/* Nothing asked: every field "not asked" (num_gpu, main_gpu, use_mmap and backend -1), placement on the best
 * backend, mapped. */
void rn_load_params_init(struct rn_load_params *p);

/* What Ollama's options ask (num_ctx, num_batch when given, num_gpu, num_thread, main_gpu and use_mmap when
 * given, rope_freq_*), on top of rn_load_params_init. */
void rn_load_params_from_options(struct rn_load_params *p, const struct mf_options *o);

/* Applies the defaults to what p asks, in place (see the fields). Never fails: a value out of range is left
 * for the engine and the backend to refuse. */
void rn_load_params_resolve(struct rn_load_params *p, const struct rn_load_defaults *d);

/* Whether two resolved parameter sets build interchangeable instances: every field but the placement. */
bool rn_load_params_equal(const struct rn_load_params *a, const struct rn_load_params *b);

#endif
