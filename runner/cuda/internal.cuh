/* runner/cuda/internal.cuh — the CUDA backend's instance state and the launchers each .cu file provides to
 * runner/cuda/forward.cu. Internal to runner/cuda.
 *
 * Memory layout of an instance (all device memory, allocated once at load):
 *   weights    one allocation per matrix, repacked (runner/cuda/quant.cuh), optional f16 copies for prefill
 *   KV cache   f16: [n_layer][K,V][n_seq][n_ctx][kv_dim] halves;  q8_0: the same shape as int8 values, then
 *              the f16 scales [n_layer][K,V][n_seq][n_ctx][kv_dim/32]  (planar, so loads stay aligned)
 *   step       the per-forward arrays (token, position, sequence, cell, output rows, extra rope rows),
 *              copied from pinned host memory at the start of every forward, so a captured graph replays
 *              with new values
 *   scratch    activations for n_batch rows, attention partials, GEMM operands and workspaces
 */
#ifndef ORUN_RUNNER_CUDA_INTERNAL_CUH
#define ORUN_RUNNER_CUDA_INTERNAL_CUH

#include <cublasLt.h>
#include <cublas_v2.h>

extern "C" {
#include "runner/backend.h"
#include "runner/model.h"
}

#include "runner/cuda/cuda.h"
#include "runner/cuda/quant.cuh"

#define RN_CU_MMV_MAX 8          /* activation rows one decode matvec launch handles */
#define RN_CU_DECODE_MAX 16      /* forward calls with at most this many rows use the decode kernels */
#define RN_CU_ATT_MIN_CHUNK 64   /* fewest KV cells per split of the decode attention (attention.cu) */
#define RN_CU_ATT_MAX_SPLIT 256  /* most splits of one (row, KV head) */
#define RN_CU_OUT_CHUNK 64       /* LM-head rows computed (and copied out) at a time */
#define RN_CU_MAX_GRAPHS 48      /* instantiated decode graphs kept per instance */
#define RN_CU_GEMM_CHUNK (256ull << 20)   /* bytes of the f16 dequantization scratch for prefill GEMMs */
#define RN_CU_BLAS_WS (32ull << 20)       /* cuBLAS / cuBLASLt workspace */
#define RN_CU_RESERVE (512ull << 20)      /* device memory left free at load (context, graphs, fragmentation) */
#define RN_CU_ROPE_TAB_MAX 65536          /* positions of the precomputed cos/sin table */
#define RN_CU_RING 3                      /* pinned step / result buffers in flight */

/* One weight matrix on the device. */
struct rn_cu_w {
	struct rn_cw_mat m;
	void *buf;
	size_t bytes;
	uint32_t gguf_type;
	const char *name;
	__half *w16;       /* dequantized f16 copy [rows][cols] for prefill GEMMs, or NULL */
	bool lt_fp8;       /* FP8 prefill through cuBLASLt's block-scaled GEMM */
};

/* Q, K and V are uploaded as one matrix of rows Q|K|V when their types allow (rn_cu_qkv_plan), so that one
 * matvec launch computes all three into one row of c->qkv; otherwise as 2 or 3 consecutive parts. */
struct rn_cu_layer {
	struct rn_cu_w qkv[3];        /* parts in row order (Q first); n_qkv of them are used */
	int n_qkv;
	struct rn_cu_w wo, gate, up, down;
	const float *attn_norm, *ffn_norm, *q_norm, *k_norm, *bq, *bk, *bv, *bo; /* device, NULL when absent */
};

/* The per-forward arrays on the device (same layout in pinned host memory). */
struct rn_cu_step {
	int32_t *tok, *pos, *seq, *cell, *out_row;
	int32_t *perm;     /* rows gathered by sequence (prefill attention) */
	float *cs_extra;   /* [n][n_rot]: cos/sin of rows whose position is past the rope table */
};

/* Activation buffers for one linear layer's input, in every format a weight may want. */
struct rn_cu_acts {
	float *x;          /* [n][ldx] f32 (decode of float weights) */
	int64_t ldx;
	int8_t *q32;       /* Q8_32: values [n][ldq], scales [n][ldq/32] (f16-rounded), sums [n][ldq/32], and */
	float *d32;        /* sm = f16(unrounded scale x sum) [n][ldq/32] (ggml's Q8_1 "s") */
	int32_t *s32;
	float *sm32;
	int8_t *q256;      /* Q8_256: values [n][ldq], scales [n][ldq/256], sums of 16 [n][ldq/16] */
	float *d256;
	int16_t *s256;
	int64_t ldq;
	__half *h16;       /* f16 [n][ldq]: F16 weights' matvec, and the GEMMs */
	__nv_bfloat16 *b16;/* bf16 [n][ldq]: BF16 weights' matvec and GEMMs */
	uint8_t *f8;       /* E4M3 [n][ldq] and scales [ldq/128][n] for cuBLASLt FP8 */
	float *f8s;
};

/* Formats a prep kernel writes (bit set). */
enum { PREP_F32 = 1, PREP_Q8_32 = 2, PREP_Q8_256 = 4, PREP_F16 = 8, PREP_BF16 = 16, PREP_FP8 = 32 };

/* A cuBLASLt FP8 GEMM set up for one shape (weights N x K, n activation rows padded to rn_cu_f8_rows, the
 * leading dimensions, beta 0 or 1). */
struct rn_cu_ltplan {
	int64_t N, K, ldb, ldc;
	int n, accumulate;
	int status, found;  /* the heuristic's answer (for the probe's message) */
	cublasLtMatmulDesc_t desc;
	cublasLtMatrixLayout_t la, lb, lc;
	cublasLtMatmulAlgo_t algo;
	bool ok;            /* false: cuBLASLt has no algorithm for it (the f16 path is used) */
	uint64_t used;
};
#define RN_CU_MAX_LTPLANS 32

/* The FP8 probe's verdict for one weight shape (why: the reason when lt_ok is false). */
struct rn_cu_probe {
	int64_t rows, cols;
	bool lt_ok;
	char why[160];
};
#define RN_CU_MAX_PROBES 16

struct rn_cu_graph {
	int n, n_out, splits, mode;   /* the key */
	cudaGraphExec_t exec;
	uint64_t used;
};

struct rn_cu {
	int dev;
	cudaStream_t st;
	cublasHandle_t blas;
	cublasLtHandle_t lt;
	void *blas_ws;
	const struct rn_model *m;
	struct rn_load_params p;
	struct rn_rope rope;
	int n_layer, n_embd, n_head, n_head_kv, head_dim, q_dim, kv_dim, n_ff, n_vocab, n_rot, max_cols;
	float eps, kq_scale;
	int hpb;                      /* query heads per attention block (divides n_head / n_head_kv, <= 8) */

	struct rn_cu_layer *layers;
	struct rn_cu_w tok_embd, output;
	const float *output_norm;
	float *smalls;                /* every norm / bias vector in one allocation */

	/* KV cache */
	uint8_t *kv;                  /* f16 rows, or the int8 values of q8_0 */
	__half *kv_d;                 /* q8_0 scales, else NULL */
	size_t kv_bytes;
	size_t kv_seq_stride;         /* elements between two sequences of one (layer, K/V) plane */
	size_t kv_plane_stride;       /* elements between (layer, K/V) planes */
	uint8_t *kv_tmp;              /* staging for kv_move, RN_CU_KVTMP_CELLS cells of every plane */

	/* rope */
	float *rope_tab;              /* [rope_tab_n][n_rot] cos/sin pairs, as rn_rope_cos_sin writes them */
	int rope_tab_n;

	/* step arrays: one device buffer, a ring of pinned host buffers (a submitted step may still be copying
	 * its arrays while the host fills the next) */
	void *step_dev, *step_ring[RN_CU_RING];
	cudaEvent_t step_ev[RN_CU_RING];
	int step_slot;
	size_t step_bytes;
	struct rn_cu_step sd, sh;

	/* scratch (rows = n_batch) */
	float *x, *xn, *q, *att, *hb, *hb2, *logits;
	float *qkv;                   /* [n][qkv_dim] the Q|K|V matvec output (before bias, norm, RoPE); q gets Q after */
	int qkv_dim;                  /* q_dim + 2 kv_dim */
	float *xg, *attg;             /* the output rows of the last layer, gathered */
	float *rot_cs;                /* [n_rot] cos/sin of a KV rotation */
	struct rn_cu_acts act;
	float *att_part;              /* decode attention partials [n][n_head][splits][head_dim + 2] */
	int max_splits;
	__half *w16;                  /* prefill dequantization scratch, RN_CU_GEMM_CHUNK bytes */
	int32_t *perm_dev;            /* [n_batch] gathered order -> batch row */
	int32_t *sampled;             /* [n_seq] last token sampled on the GPU for each sequence */
	float *samp_scratch;          /* sampling candidates */
	size_t samp_scratch_bytes;
	int32_t *samp_out_dev;        /* [RN_CU_OUT_CHUNK] sampled ids of the last step */
	int32_t *out_ring[RN_CU_RING];/* pinned copies of sampled ids, one per submitted step */
	cudaEvent_t out_ev[RN_CU_RING];
	int out_n[RN_CU_RING];
	int out_slot;
	bool out_busy[RN_CU_RING];
	int32_t *samp_hist_dev;       /* [RN_CU_OUT_CHUNK][RN_CUDA_HISTORY_MAX] */
	void *samp_par_dev, *samp_par_host;
	bool samp_smem_set;           /* the top-k kernels' shared-memory attribute is set on this device */

	/* graphs */
	struct rn_cu_graph graphs[RN_CU_MAX_GRAPHS];
	int n_graphs;
	bool use_graphs;
	uint64_t clock;

	/* cuBLASLt FP8 plans and probe verdicts */
	struct rn_cu_ltplan ltplans[RN_CU_MAX_LTPLANS];
	int n_ltplans;
	struct rn_cu_probe probes[RN_CU_MAX_PROBES];
	int n_probes;

	/* errors from the void KV operations, reported by the next forward */
	int sticky;
	char sticky_msg[600];

	struct rn_cuda_stats stats;
	uint64_t scratch_bytes;
};

#define RN_CU_KVTMP_CELLS 256

/* How Q, K and V (weight types type[i] of enum rn_cw, rows[i] rows each, Q first) are grouped into uploaded
 * matrices: part[i] = the matrix of tensor i; returns the number of matrices. Adjacent tensors share one when
 * their types are equal (FP8: when the rows before are a multiple of the 128-row scale tile), unless fuse is
 * false. Q4_K_M files often give V another type (Q6_K) than Q and K: then Q|K and V. */
static inline int rn_cu_qkv_plan(const int *type, const int64_t *rows, bool fuse, int *part)
{
	int np = 1;
	int64_t part_rows = rows[0];
	part[0] = 0;
	for (int i = 1; i < 3; i++) {
		const bool join = fuse && type[i] == type[i - 1] && (type[i] != CW_FP8 || part_rows % RN_CU_FP8_TILE == 0);
		if (!join) {
			np++;
			part_rows = 0;
		}
		part[i] = np - 1;
		part_rows += rows[i];
	}
	return np;
}

/* The graph table (host code; checked on the host by runner/cuda/hostcheck.cu). rn_cu_graph_slot gives the
 * entry a new graph goes into: a free one at the end, else the least recently used, whose exec the caller
 * destroys (it is returned with *evict set). rn_cu_graph_drop removes entry i (a capture that failed),
 * moving the last entry into its place, so the table never keeps a dead entry nor loses a live one. */
static inline int rn_cu_graph_slot(struct rn_cu_graph *t, int *n, int max, bool *evict)
{
	*evict = false;
	if (*n < max)
		return (*n)++;
	int k = 0;
	for (int i = 1; i < *n; i++)
		if (t[i].used < t[k].used)
			k = i;
	*evict = true;
	return k;
}

static inline void rn_cu_graph_drop(struct rn_cu_graph *t, int *n, int i)
{
	if (i < 0 || i >= *n)
		return;
	t[i] = t[*n - 1];
	memset(&t[*n - 1], 0, sizeof t[0]);
	(*n)--;
}

/* ---------------------------------------------------------------------------------------------- errors */

/* Fill err with RN_ERR_BACKEND naming the CUDA call that failed; returns RN_ERR_BACKEND. */
int rn_cuda_set_error(struct rn_error *err, cudaError_t e, const char *what, const char *file, int line);
int rn_cublas_error(struct rn_error *err, int status, const char *what, const char *file, int line);

#define RN_CU_CHECK(call)                                                                                \
	do {                                                                                             \
		cudaError_t rn_e_ = (call);                                                              \
		if (rn_e_ != cudaSuccess)                                                                \
			return rn_cuda_set_error(err, rn_e_, #call, __FILE__, __LINE__);                 \
	} while (0)

#define RN_CU_BLAS(call)                                                                                 \
	do {                                                                                             \
		int rn_s_ = (int)(call);                                                                 \
		if (rn_s_ != 0)                                                                          \
			return rn_cublas_error(err, rn_s_, #call, __FILE__, __LINE__);                   \
	} while (0)

/* After a launch: the launch configuration error, if any. */
#define RN_CU_LAUNCHED() RN_CU_CHECK(cudaGetLastError())

/* ---------------------------------------------------------------------------------------------- launch */

/* Programmatic dependent launch for the decode kernels (matvec.cu's rn_cu_mmv_init sets it at load: devices
 * of compute capability 9.0 or more, unless ORUN_CUDA_PDL=0). Process-wide, like the SM count read there. */
extern bool rn_cu_pdl;

/* Launch kernel k, with the programmatic-stream-serialization attribute when rn_cu_pdl: the kernel must then
 * call rn_pdl_wait() (common.cuh) before touching memory written by earlier work. Works inside stream capture
 * (the graph gets a programmatic edge). */
template <typename... KArgs, typename... Args>
static inline cudaError_t rn_cu_launch(void (*k)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t st,
				       Args &&...args)
{
	cudaLaunchConfig_t cfg = {};
	cfg.gridDim = grid;
	cfg.blockDim = block;
	cfg.dynamicSmemBytes = smem;
	cfg.stream = st;
	cudaLaunchAttribute at[1];
	memset(at, 0, sizeof at);
	if (rn_cu_pdl) {
		at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
		at[0].val.programmaticStreamSerializationAllowed = 1;
		cfg.attrs = at;
		cfg.numAttrs = 1;
	}
	return cudaLaunchKernelEx(&cfg, k, static_cast<Args &&>(args)...);
}

/* ---------------------------------------------------------------------------------------------- launchers */

/* weights.cu: upload one GGUF tensor into a repacked device matrix (staging through the uploader). */
struct rn_cu_uploader;
int rn_cu_uploader_new(struct rn_cu_uploader **up, cudaStream_t st, struct rn_error *err);
int rn_cu_upload(struct rn_cu_uploader *up, const struct rn_tensor *t, struct rn_cu_w *w, struct rn_error *err);
/* n tensors of one type and row length as one matrix, their rows one after the other (FP8: every part but
 * the last a multiple of 128 rows, so the scale tiles stay whole). */
int rn_cu_upload_cat(struct rn_cu_uploader *up, const struct rn_tensor *const *ts, int n, struct rn_cu_w *w,
		     struct rn_error *err);
int rn_cu_upload_raw(struct rn_cu_uploader *up, const void *src, size_t bytes, void *dst, struct rn_error *err);
int rn_cu_uploader_finish(struct rn_cu_uploader *up, struct rn_error *err); /* waits, frees */
void rn_cu_w_free(struct rn_cu_w *w);
int rn_cu_w_check(const struct rn_tensor *t, struct rn_error *err);
uint64_t rn_cu_w_bytes(const struct rn_tensor *t);

/* matvec.cu: read the device's multiprocessor count (once, at load). */
void rn_cu_mmv_init(int dev);
/* matvec.cu: y[j * ldy + r] (+)= W[r] . act[j] (+ bias[r]) for n <= RN_CU_MMV_MAX rows. */
int rn_cu_mmv(const struct rn_cu_w *w, const struct rn_cu_acts *a, int n, float *y, int64_t ldy, const float *bias,
	      bool accumulate, cudaStream_t st, struct rn_error *err);
/* gate/up fused: hb[j * ldy + r] = silu(gate[r] . act[j]) * (up[r] . act[j]); both of the same type. */
int rn_cu_mmv_gu(const struct rn_cu_w *gate, const struct rn_cu_w *up, const struct rn_cu_acts *a, int n, float *hb,
		 int64_t ldy, cudaStream_t st, struct rn_error *err);

/* ops.cu */
struct rn_cu_prep {
	const float *in;       /* [n][ld_in] */
	int64_t ld_in;
	const float *mul;      /* swiglu: out = silu(in) * mul, [n][ld_in]; or NULL */
	const float *norm;     /* RMSNorm weight [cols], or NULL */
	float eps;
	int cols;
	unsigned fmt;          /* PREP_* */
	struct rn_cu_acts out; /* out.x receives the f32 result (may equal in) */
	int n_rows_total;      /* rows of the call: the FP8 scales go to rn_cu_f8s_at(g, row, n_rows_total) */
};
int rn_cu_prep(const struct rn_cu_prep *p, int n, cudaStream_t st, struct rn_error *err);
int rn_cu_embed(const struct rn_cu *c, int n, cudaStream_t st, struct rn_error *err);
int rn_cu_qkv_post(const struct rn_cu *c, const struct rn_cu_layer *l, int layer, int n, cudaStream_t st,
		   struct rn_error *err);
int rn_cu_gather_rows(float *dst, const float *src, int64_t ld, int64_t cols, const int32_t *rows, int n,
		      cudaStream_t st, struct rn_error *err);
int rn_cu_add_bias(float *y, int64_t ldy, const float *bias, int64_t cols, int n, cudaStream_t st,
		   struct rn_error *err);
int rn_cu_kv_rotate_launch(const struct rn_cu *c, int seq, int c0, int c1, const float *cs_dev, cudaStream_t st,
			   struct rn_error *err);

/* attention.cu */
int rn_cu_attention_decode(const struct rn_cu *c, int layer, int n, int splits, cudaStream_t st, struct rn_error *err);
int rn_cu_attention_prefill(struct rn_cu *c, int layer, int n, const int32_t *seg_host, int n_seg, cudaStream_t st,
			    struct rn_error *err);
/* The decode grid's splits for a step whose longest row has max_keys cells (a power of two, >= every row's
 * chunk count; deterministic for (max_keys, current device)). */
int rn_cu_attention_splits(int max_keys);
/* The current device's split target T (a power of two <= RN_CU_ATT_MAX_SPLIT; the SM count is read once). */
int rn_cu_attention_target(void);

/* The split plan of the decode attention (host and device; runner/cuda/testhooks.cu checks it on the host).
 * A row of n_keys cells is cut into chunks of rn_cu_att_chunk(n_keys, T) cells (a multiple of 32, at least
 * RN_CU_ATT_MIN_CHUNK): chunk s holds cells [s * chunk, min(n_keys, (s + 1) * chunk)). The chunks depend only
 * on the row's own cell count and the device, never on the other rows of the batch, so a row's result is the
 * same whatever it is batched with (README "Joining the prefix cache"), and 32-cell multiples map onto whole
 * KV blocks. At most T chunks: chunk >= ceil(n_keys / T). */
static __host__ __device__ __forceinline__ int rn_cu_att_chunk(int n_keys, int target)
{
	int per = (n_keys + target - 1) / target;
	per = (per + 31) / 32 * 32;
	return per < RN_CU_ATT_MIN_CHUNK ? RN_CU_ATT_MIN_CHUNK : per;
}

static __host__ __device__ __forceinline__ int rn_cu_att_nsplit(int n_keys, int target)
{
	const int c = rn_cu_att_chunk(n_keys, target);
	return (n_keys + c - 1) / c;
}

/* T for a device with sms multiprocessors: the power of two >= 2 x sms / 8, so that one row of a model with 8
 * KV heads (Qwen3-14B) at long context launches >= 2 blocks per SM; at most RN_CU_ATT_MAX_SPLIT. */
static __host__ __device__ __forceinline__ int rn_cu_att_target_for(int sms)
{
	const int want = (2 * sms + 7) / 8;
	int t = 1;
	while (t < want && t < RN_CU_ATT_MAX_SPLIT)
		t *= 2;
	return t;
}

/* Grid splits for max_keys: ceil(max_keys / MIN_CHUNK) rounded up to a power of two, at most T (a row's chunk
 * count is ceil(n / MIN_CHUNK) while n <= MIN_CHUNK x T, and <= T beyond: so this bounds every row of the step
 * and grows with max_keys; powers of two keep the number of captured graphs small). */
static __host__ __device__ __forceinline__ int rn_cu_att_grid_splits(int max_keys, int target)
{
	if (max_keys > RN_CU_ATT_MIN_CHUNK * target)
		return target;
	const int want = (max_keys + RN_CU_ATT_MIN_CHUNK - 1) / RN_CU_ATT_MIN_CHUNK;
	int s = 1;
	while (s < want)
		s *= 2;
	return s;
}

/* The cell that lane group sub of warp w of k_attn_decode reads as its u-th cell in the iteration whose first
 * cell is jb (jb = j0 + w x cpw, then + U x ng each iteration, while jb < j1: the same bound for every lane of
 * the warp, so the shuffles inside see all 32 lanes; a cell >= j1 is masked, never skipped). */
static __host__ __device__ __forceinline__ int rn_cu_att_cell(int jb, int u, int sub, int ng)
{
	return jb + u * ng + sub;
}

/* k_flash_prefill: the last token of rows [r_begin, r_begin + nrows) of a segment of cnt tokens whose rows are
 * (token, head) pairs token-major, G heads per token; keys [0, first + that token] are all those rows read. */
static __host__ __device__ __forceinline__ int rn_cu_fa_last_token(int r_begin, int nrows, int G, int cnt)
{
	const int t = (r_begin + nrows - 1) / G;
	return t < cnt - 1 ? t : cnt - 1;
}

/* gemm.cu: the layout of the FP8 activations' scales for cuBLASLt's block-scaled GEMM (B operand, scale mode
 * VEC128_32F): one f32 per 128 values of K for each token, token-major ("outer-dimension major": the scales
 * of group g of all tokens are contiguous), with the token count padded to a multiple of 4, which the
 * block-scaled GEMMs require of their M and N. The GEMM runs on rn_cu_f8_rows(n) activation rows; the pad
 * rows' E4M3 values and scales are zero (gemm.cu writes them), so their output columns are beta * C. */
RN_HD int64_t rn_cu_f8_rows(int64_t n) { return (n + 3) / 4 * 4; }
/* Index of the scale of 128-group g of activation row `row` (< n) in a call of n rows. */
RN_HD int64_t rn_cu_f8s_at(int64_t g, int64_t row, int64_t n) { return g * rn_cu_f8_rows(n) + row; }
/* The scales of the pad rows n..rn_cu_f8_rows(n)-1 for K values per row: `height` runs of `width` floats,
 * `pitch` floats apart, the first at `off` (what gemm.cu zeroes with one cudaMemset2DAsync). */
struct rn_cu_f8pad {
	int64_t off, pitch, width, height;
};
RN_HD struct rn_cu_f8pad rn_cu_f8s_pad(int64_t n, int64_t K)
{
	struct rn_cu_f8pad r = {rn_cu_f8s_at(0, n, n), rn_cu_f8_rows(n), rn_cu_f8_rows(n) - n, K / 128};
	return r;
}

/* gemm.cu: y[j * ldy + r] (+)= W[r] . act[j] for any n, through dequantization + cuBLAS (or cuBLASLt FP8).
 * FP8 through cuBLASLt writes rn_cu_f8_rows(n) rows of y (the pad rows get beta * y): y and the activation
 * buffers must hold that many rows. */
int rn_cu_gemm(struct rn_cu *c, const struct rn_cu_w *w, const struct rn_cu_acts *a, int n, float *y, int64_t ldy,
	       const float *bias, bool accumulate, struct rn_error *err);
int rn_cu_dequant_f16(const struct rn_cu_w *w, int64_t row0, int64_t nrows, __half *dst, cudaStream_t st,
		      struct rn_error *err);
/* Decide w->lt_fp8 by running cuBLASLt's FP8 GEMM and the f16 path at the row counts and betas prefill uses;
 * when it says no, c->stats.prefill_fp8_why gets the first reason (shape, n, beta, what failed). */
int rn_cu_fp8_probe(struct rn_cu *c, struct rn_cu_w *w, struct rn_error *err);
/* The row counts the probe tries for a given n_batch (> RN_CU_DECODE_MAX) into ns[3]; returns how many. */
int rn_cu_fp8_probe_rows(int n_batch, int *ns);
void rn_cu_ltplans_free(struct rn_cu *c);

/* sample.cu: check the options (RN_ERR_INVALID_ARG for what the GPU path cannot do), then enqueue the
 * sampling of n_out logit rows; ids go to c->samp_out_dev and to c->sampled[seq of the row]. */
int rn_cu_sample_check(const struct rn_cu *c, int n_out, const struct rn_cuda_sampling *s, struct rn_error *err);
int rn_cu_sample(struct rn_cu *c, const float *logits, int n_out, const struct rn_cuda_sampling *s,
		 struct rn_error *err);
size_t rn_cu_sample_scratch_bytes(int n_vocab);

#endif
