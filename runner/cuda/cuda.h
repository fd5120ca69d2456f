/* runner/cuda/cuda.h — the only crossing from C into CUDA.
 *
 * Plain C declarations of the extern "C" entry points implemented in the .cu files of runner/cuda. Host .c
 * files include this header and never a CUDA header. The backend itself is reached through the ops table
 * rn_cuda_backend_ops (runner/backend.h's interface); the other entry points are what the engine, the server
 * and the tools need beyond that interface (memory estimate, GPU sampling, statistics) and the tests' hooks.
 */
#ifndef ORUN_RUNNER_CUDA_H
#define ORUN_RUNNER_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rn_model;
struct rn_load_params;
struct rn_batch_cells;
struct rn_outputs;
struct rn_error;
struct rn_backend_ops;
struct rn_device_info;

/* ---------------------------------------------------------------------------------------------- devices */

/* Number of visible CUDA devices; 0 when there is no driver or no device (never an error). */
int rn_cuda_device_count(void);

/* Writes "NAME, N MiB, sm_XY" for device dev into buf (always NUL-terminated). Returns 0, or -1 when the
 * device cannot be queried. */
int rn_cuda_device_describe(int dev, char *buf, int size);

/* Name, memory and compute capability of device dev (cudaGetDeviceProperties: no context is created). Returns
 * 0, or -1 when the device cannot be queried. */
int rn_cuda_device_info(int dev, struct rn_device_info *out);

/* Free and total memory of device dev in bytes (cudaMemGetInfo). Returns 0, or -1 when it cannot be queried. */
int rn_cuda_mem_info(int dev, uint64_t *free_bytes, uint64_t *total_bytes);

/* The architectures the kernels were compiled for, as nvcc's __CUDA_ARCH_LIST__ gives them from the -gencode
 * flags (configure's CUDA_ARCHS): "800,890,900" for 80;89;90a. Static storage. */
const char *rn_cuda_archs(void);

/* ---------------------------------------------------------------------------------------------- backend */

/* The CUDA backend's entry for runner/backend.c (defined in runner/cuda/backend_cuda.c). */
extern const struct rn_backend_ops rn_cuda_backend_ops;

/* The functions behind the ops table; see struct rn_backend_ops in runner/backend.h for the contracts.
 * rn_cuda_load checks first that weights + KV cache + scratch fit in the device's free memory and fails with
 * RN_ERR_NOMEM and a message giving each part otherwise; types without a CUDA kernel fail with RN_ERR_TYPE. */
int rn_cuda_load(const struct rn_model *m, const struct rn_load_params *p, void **state, struct rn_error *err);
void rn_cuda_free(void *state);
int rn_cuda_forward(void *state, const struct rn_batch_cells *b, const struct rn_outputs *out, struct rn_error *err);
void rn_cuda_kv_move(void *state, int seq, int src, int dst, int n);
int rn_cuda_kv_rotate(void *state, int seq, int c0, int c1, int32_t delta, struct rn_error *err);
void rn_cuda_kv_copy(void *state, int src, int dst, int n);
uint64_t rn_cuda_memory(const void *state);

/* Device memory a load with these parameters would need, by part, and what the device has. Lets the engine
 * or the server decide between the GPU and the CPU (Ollama's num_gpu: 0 = CPU only; this backend offloads
 * every layer or none). Returns RN_OK, RN_ERR_TYPE / RN_ERR_INVALID_ARG for a model the backend cannot run
 * (message says why), RN_ERR_BACKEND when the device cannot be queried. */
struct rn_cuda_estimate {
	uint64_t weights;      /* repacked weights, embedding and LM head included */
	uint64_t kv;           /* the KV cache (n_seq x n_ctx cells) */
	uint64_t scratch;      /* activations, attention and GEMM workspaces, cuBLAS workspace, rope table */
	uint64_t reserve;      /* kept free for the CUDA context, graphs and fragmentation */
	uint64_t total;        /* the sum of the above */
	uint64_t device_free;  /* cudaMemGetInfo at the time of the call */
	uint64_t device_total;
};
int rn_cuda_estimate(const struct rn_model *m, const struct rn_load_params *p, struct rn_cuda_estimate *e,
		     struct rn_error *err);

/* What a loaded instance did; for `orun bench` and the logs. */
struct rn_cuda_stats {
	char device[128];          /* rn_cuda_device_describe */
	uint64_t weight_bytes;     /* device bytes of the weights as uploaded */
	uint64_t kv_bytes;
	uint64_t scratch_bytes;
	uint64_t peak_used;        /* highest (total - free) device memory seen after load and at each forward */
	double upload_seconds;     /* time of the weight upload */
	int graphs;                /* CUDA graphs instantiated so far */
	int graph_launches;        /* forward calls served by replaying a graph */
	int prefill_fp8_lt;        /* 1 when FP8 prefill GEMMs run on cuBLASLt's block-scaled FP8 path */
	int prefill_cache;         /* 1 when f16 copies of the layer weights are kept for prefill */
	int decode_launches;       /* kernel launches of one decode step (1 row, 1 output) as last captured; 0 before */
	char prefill_fp8_why[160]; /* when FP8 weights are loaded but prefill_fp8_lt is 0: which probe failed and how */
};
void rn_cuda_get_stats(const void *state, struct rn_cuda_stats *st);

/* ---------------------------------------------------------------------------------------------- GPU sampling */

/* Sampling options for one output row, Ollama's chain as in runner/sampler.h: penalties over `history`,
 * top_k, typical_p, top_p, min_p, temperature, then the draw with `u`, a uniform number in [0, 1) the caller
 * takes from its seeded generator (so seeds reproduce; one u per sample, as rn_sampler_sample uses one).
 * temperature <= 0 is greedy. The GPU path needs 1 <= top_k <= RN_CUDA_TOPK_MAX (or greedy) and a history of
 * at most RN_CUDA_HISTORY_MAX tokens; rn_cuda_forward_sample reports RN_ERR_INVALID_ARG otherwise, and the
 * caller falls back to logits + rn_sampler. */
#define RN_CUDA_TOPK_MAX 256
#define RN_CUDA_HISTORY_MAX 1024
struct rn_cuda_sampling {
	float temperature;
	int top_k;
	float top_p, min_p, typical_p;
	float repeat_penalty, presence_penalty, frequency_penalty;
	const int32_t *history; /* the last repeat_last_n tokens of the sequence (prompt included), any order */
	int n_history;
	double u;
};

/* As rn_cuda_forward, but samples each flagged row on the GPU and returns only the token ids ([n_out]);
 * logits never leave the device. */
int rn_cuda_forward_sample(void *state, const struct rn_batch_cells *b, const struct rn_cuda_sampling *s,
			   int32_t *tokens, struct rn_error *err);

/* Pipelined decode: the host hands token t to its client while the GPU computes t + 1. A step may name its
 * input token RN_CUDA_TOKEN_FROM_SAMPLE: the id the previous step sampled for that sequence, read on the
 * device, so step t + 1 can be submitted before the host has seen token t. rn_cuda_decode_submit enqueues the
 * forward pass (1..16 rows, cells chosen by the caller as runner/backend.c would) and the sampling and returns
 * at once with a ticket; rn_cuda_decode_wait blocks until that step's ids ([n_out]) are on the host. At most
 * 3 steps may be in flight. Penalties are refused here (their history needs the previous token on the host);
 * the caller uses rn_cuda_forward_sample for those. The caller keeps runner/backend.c's cell bookkeeping in
 * step (see runner/cuda/README.md for the interface this implies). */
#define RN_CUDA_TOKEN_FROM_SAMPLE (-1)
int rn_cuda_decode_submit(void *state, const struct rn_batch_cells *b, const struct rn_cuda_sampling *s, int *ticket,
			  struct rn_error *err);
int rn_cuda_decode_wait(void *state, int ticket, int32_t *tokens, struct rn_error *err);

/* ---------------------------------------------------------------------------------------------- test hooks */

/* These run the backend's own block decoding and dot-product code, compiled for the host, on weights given
 * in GGUF form (for FP8 including the scale grid that follows the values): the checks that need no GPU.
 * rn_cuda_host_matvec quantizes the n activation rows x ([n][cols]) the way the GPU does and writes
 * y[j * rows + r]; rn_cuda_host_dequant writes the whole matrix as f32 ([rows][cols]). Return 0, or -1 with
 * msg filled (unsupported type, shape, or a data size that does not match). */
int rn_cuda_host_matvec(uint32_t gguf_type, const void *data, size_t size, int64_t rows, int64_t cols, const float *x,
			int n, float *y, char *msg, size_t msg_size);
int rn_cuda_host_dequant(uint32_t gguf_type, const void *data, size_t size, int64_t rows, int64_t cols, float *out,
			 char *msg, size_t msg_size);

/* The host twins of the scalar conversions and integer helpers (half, bfloat16, E4M3, dp4a) against gguf's
 * reference conversions, exhaustively where the domain is small. Returns the number of mismatches (0 = all
 * agree) and describes the first one in msg. */
int rn_cuda_host_selfcheck(char *msg, size_t msg_size);

/* The same on device 0 with the real kernels: upload + repack, quantize x on the GPU, run the decode matvec
 * (n <= 8 rows per launch; more are done in passes) and, when gemm is nonzero, the prefill path instead
 * (dequantize + cuBLAS, or cuBLASLt FP8). Returns 0, or -1 with msg (no device, CUDA error). */
int rn_cuda_test_matvec(uint32_t gguf_type, const void *data, size_t size, int64_t rows, int64_t cols, const float *x,
			int n, int gemm, float *y, char *msg, size_t msg_size);

/* Quantize n rows of x ([n][cols]) on the GPU into the CPU backend's activation row layout (runner/cpu/
 * matmul.h: int8 q[cols], f32 d[cols/B], sums) for kind 1 (Q8_32) or 2 (Q8_256), so a test can compare the
 * bytes with rn_act_quantize_rows. Returns 0 or -1 with msg. */
int rn_cuda_test_act_quant(int kind, const float *x, int n, int64_t cols, void *dst, size_t row_bytes, char *msg,
			   size_t msg_size);

/* gemm (cuda-gemm) */
/* Host check (no GPU): the FP8 activation-scale layout for cuBLASLt (rn_cu_f8s_at, the pad region gemm.cu
 * zeroes) and the FP8 probe's row counts. Returns the number of mismatches, the first described in msg. */
int rn_cuda_host_gemm_check(char *msg, size_t msg_size);
/* Compute capability of device 0 as major * 10 + minor, or -1. */
int rn_cuda_test_device_cc(void);
/* Dequantize a whole matrix (GGUF form) to f16 on device 0 with the prefill kernel; out[rows * cols] gets the
 * half bits. Returns 0 or -1 with msg. */
int rn_cuda_test_dequant_f16(uint32_t gguf_type, const void *data, size_t size, int64_t rows, int64_t cols,
			     uint16_t *out, char *msg, size_t msg_size);
/* One prefill GEMM on device 0: y[j * rows + r] (+)= W[r] . x[j] for n rows of x ([n][cols]); with accumulate
 * y holds C on entry (beta 1). mode 0: the f16 path dequantizing per call; 1: through an f16 copy of the
 * weights (the prefill cache); 2: cuBLASLt's block-scaled FP8 GEMM after the load-time probe (FP8 weights;
 * -1 with the probe's reason when it says no or the GEMM falls back). Returns 0 or -1 with msg. */
int rn_cuda_test_gemm(uint32_t gguf_type, const void *data, size_t size, int64_t rows, int64_t cols, const float *x,
		      int n, int mode, int accumulate, float *y, char *msg, size_t msg_size);

/* attention (cuda-attn) */

/* The decode split plan, the decode cell loop's coverage and the flash prefill's causal bounds, checked on the
 * host (no GPU). Returns the number of failures (0 = all hold) and describes the first in msg. */
int rn_cuda_host_attn_check(char *msg, size_t msg_size);

/* One layer of KV cache and a batch of query rows, for the attention kernels on device 0. The cache is the
 * backend's layout for one layer: f16 (q8 == 0): kv16 = halves [2 (K, V)][n_seq][n_ctx][n_head_kv x head_dim];
 * q8_0 (q8 == 1): int8 values kv8 of the same shape, then the f16 scales kv8_d [2][n_seq][n_ctx][kv_dim / 32].
 * Row i is the query q[i] ([n][n_head x head_dim], RoPE applied) of sequence seq[i] at cell cell[i] (it attends
 * cells [0, cell[i]]). prefill == 0 runs the decode kernels (n <= 16; hpb query heads per block, 0 = as the
 * backend picks; splits = the grid's splits, 0 = rn_cu_attention_splits of the longest row); prefill == 1 the
 * flash prefill (the rows of a sequence at consecutive cells in order, as runner/backend.c places a batch). */
struct rn_cuda_attn_test {
	int head_dim, n_head, n_head_kv, n_ctx, n_seq, q8;
	const uint16_t *kv16;
	const int8_t *kv8;
	const uint16_t *kv8_d;
	int n;
	const float *q;
	const int32_t *seq, *cell;
	float scale;
	int prefill, hpb, splits;
};
/* Writes out[n][n_head x head_dim]; returns 0, or -1 with msg (no device, bad shape, CUDA error). */
int rn_cuda_test_attention(const struct rn_cuda_attn_test *t, float *out, char *msg, size_t msg_size);

/* decode (cuda-decode) */

/* SwiGLU on the GPU through the prep kernel's path (silu(g) * u, n rows of cols values): the f32 results,
 * which must be bit-identical to runner/cpu's rn_ops_swiglu (AVX2 path). Returns 0 or -1 with msg. */
int rn_cuda_test_swiglu(const float *g, const float *u, int n, int64_t cols, float *out, char *msg, size_t msg_size);

#ifdef __cplusplus
}
#endif

#endif
