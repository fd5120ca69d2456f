/* runner/backend.h — which compute backends this build has, and the interface every backend implements.
 *
 * Only runner/backend.c knows the list; everything else asks here. The CPU backend is always present and
 * is the reference; CUDA is present when configure built it (it may still find no device at run time).
 *
 * A backend instance holds a model's weights in the form its kernels read, a KV cache of n_seq sequences
 * (slots) of n_ctx cells each, and scratch space for batches of up to n_batch tokens. One forward call
 * takes tokens from several sequences at once (continuous batching) and returns logits for the rows the
 * caller flagged. Instances are not thread-safe: one thread (the engine's) drives an instance.
 */
#ifndef ORUN_RUNNER_BACKEND_H
#define ORUN_RUNNER_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "runner/error.h"
#include "runner/kvcache.h"
#include "runner/kvpool.h"
#include "runner/load.h"
#include "runner/model.h"

/* Number of compiled-in backends (>= 1). */
int rn_backend_count(void);

/* Name of backend i ("cpu", "cuda"), 0 <= i < rn_backend_count(); static storage. */
const char *rn_backend_name(int i);

/* Number of usable devices for backend i: the CPU backend reports 1; CUDA reports the visible GPUs
 * (0 when the driver or a device is missing). Never fails. */
int rn_backend_device_count(int i);

/* Index of the backend with this name, or -1. */
int rn_backend_find(const char *name);

/* Whether backend i computes on devices with memory of their own (GPUs); false for the CPU and bad indexes. */
bool rn_backend_is_gpu(int i);

/* The name llama.cpp gives backend i's devices before their index ("CUDA": CUDA0, CUDA1 ...; "CPU"), as
 * llama-server prints it; "?" for a bad index. Static storage. */
const char *rn_backend_device_prefix(int i);

/* What a device is, from its properties (no context is created). */
struct rn_device_info {
	char name[256];         /* "NVIDIA H200" */
	uint64_t total_bytes;   /* device memory, bytes */
	int cc_major, cc_minor; /* CUDA compute capability */
};

/* Describes device dev of backend i into *out. Returns 0, or -1 when there is no such device, it cannot be
 * queried, or the backend does not describe its devices (the CPU). */
int rn_backend_device_info(int i, int dev, struct rn_device_info *out);

/* Free and total memory of device dev of backend i now, bytes (CUDA: cudaMemGetInfo, which creates the
 * device's context). Returns 0, or -1 as rn_backend_device_info. */
int rn_backend_device_memory(int i, int dev, uint64_t *free_bytes, uint64_t *total_bytes);

/* The host memory the system can still give (MemAvailable from /proc/meminfo), bytes; 0 when unknown. */
uint64_t rn_mem_available(void);

/* Total memory of every device of every GPU backend (rn_backend_device_memory), bytes; 0 without any: what
 * Ollama's default context length is chosen by. */
uint64_t rn_backend_gpu_memory(void);

/* The device architectures backend i's kernels were compiled for, as llama.cpp's system_info lists them:
 * "800,890,900" for configure's default CUDA_ARCHS=80;89;90a. "" for a backend without any (the CPU) and for
 * bad indexes. Static storage. */
const char *rn_backend_archs(int i);

#define RN_MAX_SEQ 256      /* sequences (slots) one instance may hold */
#define RN_MAX_BATCH 65536  /* tokens one forward call may carry */

/* One forward call's input: n_tokens rows, each a token of some sequence at some position.
 * Within one sequence the rows must come in increasing position order and every position must be larger
 * than the last position cached for that sequence (tokens are appended to the sequence's cells). Rows of
 * different sequences may be interleaved in any order. */
struct rn_batch {
	int n_tokens;             /* 1 .. n_batch */
	const int32_t *token;     /* [n_tokens] ids in [0, n_vocab) */
	const int32_t *pos;       /* [n_tokens] position in its sequence, >= 0 */
	const int32_t *seq;       /* [n_tokens] sequence id in [0, n_seq) */
	const uint8_t *want;      /* [n_tokens] nonzero: output this row; NULL = only the last row */
};

/* What forward writes, for the flagged rows in batch order (row k = k-th flagged row). Either pointer may be
 * NULL when not wanted. */
struct rn_outputs {
	float *logits;  /* [n_out][n_vocab] */
	float *hidden;  /* [n_out][n_embd]: final hidden state after the output norm (for embeddings) */
};

/* A batch as a backend sees it: the caller's rows plus, for each row, the cell of its sequence that the
 * row's key and value go to. Cells were validated by runner/backend.c: cell[i] is free, rows of one
 * sequence get consecutive cells in batch order, and a row at cell c attends to cells [0, c] of its
 * sequence (earlier cells hold earlier positions). */
struct rn_batch_cells {
	struct rn_batch b;
	const int32_t *cell;    /* [n_tokens] */
	int n_out;              /* flagged rows */
	const int32_t *out_row; /* [n_out] batch row of each output, increasing */
};

/* The interface a backend implements (CPU: runner/cpu/cpu.h; CUDA: runner/cuda). Every call comes from
 * runner/backend.c after its arguments were checked, so backends deal only in cells, never in positions.
 * Errors: RN_ERR_NOMEM, RN_ERR_BACKEND (device failure), RN_ERR_INVALID_ARG (a value the backend cannot
 * handle, e.g. a model type it has no kernel for, reported at load). */
struct rn_backend_ops {
	const char *name;
	const char *device_prefix; /* see rn_backend_device_prefix */
	bool gpu;                  /* see rn_backend_is_gpu */
	int (*device_count)(void);
	/* Device queries (see the rn_backend_ functions of the same names); NULL when the backend has none. */
	int (*device_info)(int dev, struct rn_device_info *out);
	int (*device_memory)(int dev, uint64_t *free_bytes, uint64_t *total_bytes);
	const char *(*archs)(void);
	/* Build an instance. The model (weights) must outlive it; p is resolved (runner/load.h) and checked.
	 * A backend has exactly one of the two: load keeps n_ctx cells per sequence in a layout of its own (no
	 * prefix sharing across sequences); load_paged keeps a pool of pg->n_blocks blocks of RN_KV_BLOCK cells and
	 * finds every cell through pg's tables (runner/kvcache.h), which runner/backend.c owns and keeps current:
	 * the instance reads them at each call and never writes them. */
	int (*load)(const struct rn_model *m, const struct rn_load_params *p, void **state, struct rn_error *err);
	int (*load_paged)(const struct rn_model *m, const struct rn_load_params *p, const struct rn_kv_pages *pg,
			  void **state, struct rn_error *err);
	void (*free)(void *state);
	/* Compute the batch: write K/V of every row into its cell, then the outputs of the flagged rows. */
	int (*forward)(void *state, const struct rn_batch_cells *b, const struct rn_outputs *out, struct rn_error *err);
	/* Move n cells of seq from cell src to cell dst (memmove semantics; used to close gaps). */
	void (*kv_move)(void *state, int seq, int src, int dst, int n);
	/* Re-rotate the keys in cells [c0, c1) of seq by delta positions (context shift). */
	int (*kv_rotate)(void *state, int seq, int c0, int c1, int32_t delta, struct rn_error *err);
	/* Copy cells [0, n) of sequence src over those of dst (load only; paged backends share blocks instead). */
	void (*kv_copy)(void *state, int src, int dst, int n);
	/* Copy the first n rows of block src to block dst (load_paged only: copy-on-write). */
	void (*kv_block_copy)(void *state, int32_t src, int32_t dst, int n);
	/* Bytes the instance allocated (KV cache, scratch, a copy of the weights) beyond the mapped weights. */
	uint64_t (*memory)(const void *state);
	/* Of those, the bytes of weights copied out of the mapping (no_mmap), whose mapped pages were released;
	 * NULL when the backend never copies. */
	uint64_t (*copied)(const void *state);
};

/* An instance: the ops and their state, plus the cell bookkeeping (runner/kvcache.h) every backend shares. */
struct rn_backend;

/* The backend rn_backend_load would use for `index`: index itself, or for -1 the best available (a GPU backend
 * with a device, else the CPU); -1 when there is none. */
int rn_backend_resolve(int index);

/* Load an instance of backend p->backend (see rn_backend_resolve) with the parameters p, which
 * rn_load_params_resolve has completed: nothing is defaulted here. Values out of range (n_seq, n_ctx, n_batch,
 * n_threads, rope_*, a q8_0 cache on heads that are not multiples of 32) fail with RN_ERR_INVALID_ARG naming
 * the value. Returns NULL with *err filled. */
struct rn_backend *rn_backend_load(const struct rn_model *m, const struct rn_load_params *p,
				   struct rn_error *err) RN_WUR;

/* Free an instance. Accepts NULL. */
void rn_backend_free(struct rn_backend *b);

/* The parameters the instance was built with (backend resolved to an index); borrowed. */
const struct rn_load_params *rn_backend_params(const struct rn_backend *b);
const char *rn_backend_instance_name(const struct rn_backend *b);
const struct rn_model *rn_backend_model(const struct rn_backend *b);

/* Run the model on a batch (see struct rn_batch for the position rules). out->logits receives n_vocab floats
 * per flagged row. Returns RN_OK or an error (RN_ERR_INVALID_ARG for a bad token id, sequence, position or
 * batch size; RN_ERR_CONTEXT when a sequence has no free cell). */
int rn_backend_forward(struct rn_backend *b, const struct rn_batch *batch, const struct rn_outputs *out,
		       struct rn_error *err) RN_WUR;

/* Remove the cached positions [p0, p1) of sequence seq (p1 < 0: to the end). */
int rn_backend_kv_remove(struct rn_backend *b, int seq, int32_t p0, int32_t p1, struct rn_error *err) RN_WUR;

/* Add delta to the cached positions in [p0, p1) of seq and re-rotate their keys accordingly (context
 * shift). The result must keep the sequence's positions increasing and >= 0, else RN_ERR_INVALID_ARG. */
int rn_backend_kv_shift(struct rn_backend *b, int seq, int32_t p0, int32_t p1, int32_t delta,
			struct rn_error *err) RN_WUR;

/* Make sequence dst a copy of the cells of src with position < p1 (p1 < 0: all). */
int rn_backend_kv_copy(struct rn_backend *b, int src, int dst, int32_t p1, struct rn_error *err) RN_WUR;

/* Empty sequence seq. */
void rn_backend_kv_clear(struct rn_backend *b, int seq);

/* Number of cached cells of seq, and the position after the last one (0 when empty). */
int rn_backend_kv_used(const struct rn_backend *b, int seq);
int32_t rn_backend_kv_next_pos(const struct rn_backend *b, int seq);

/* ---------------------------------------------------------------------------------------------------- */
/* The prefix cache (runner/kvpool.h): full blocks of RN_KV_BLOCK cells whose tokens are known are published,
 * keyed by the chained hash of every token from position 0 to their end; any sequence can then start from the
 * longest published prefix of its prompt without evaluating it, the blocks shared (never copied) and evicted
 * least recently used within a budget once no sequence holds them. Only a paged backend has one: elsewhere
 * match returns 0 and publish does nothing. */

/* Tokens of tok[0 .. n) (a multiple of RN_KV_BLOCK, <= n) that the cache holds as a prefix. Touches nothing. */
size_t rn_backend_kv_match(const struct rn_backend *b, const int32_t *tok, size_t n);

/* Make seq's content the first n tokens of tok (n a multiple of RN_KV_BLOCK that rn_backend_kv_match returned
 * for it) taken from the cache; what seq held before is released. */
int rn_backend_kv_attach(struct rn_backend *b, int seq, const int32_t *tok, size_t n, struct rn_error *err) RN_WUR;

/* seq's cells hold tok[0 .. n) at positions 0 .. n-1 (after a successful forward): publish its full blocks
 * that are not yet published. Cells at other positions (after a context shift) are never published. */
void rn_backend_kv_publish(struct rn_backend *b, int seq, const int32_t *tok, size_t n);

/* Count a request that started from `reused` cached tokens (0: a miss) in the statistics. */
void rn_backend_kv_account(struct rn_backend *b, size_t reused);

/* Checks the pool's invariants (runner/kvpool.h rn_kv_pool_check; for tests). RN_OK without a pool. */
int rn_backend_kv_check(const struct rn_backend *b, struct rn_error *err) RN_WUR;

/* The cache's counters (struct rn_cache_stats: runner/kvpool.h); all zero, enabled false, without a pool. */
void rn_backend_cache_stats(const struct rn_backend *b, struct rn_cache_stats *st);

/* Bytes allocated by the instance beyond the mapped weights (a copy of the weights included), and the bytes of
 * that copy (0 when the weights are read in place): memory - copied + the file's size is what the loaded model
 * occupies, mapped or copied. */
uint64_t rn_backend_memory(const struct rn_backend *b);
uint64_t rn_backend_copied(const struct rn_backend *b);

#endif
