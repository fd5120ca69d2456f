/* runner/model.h — a loaded model: hyperparameters (with units) and per-layer weight views pointing into
 * the read-only GGUF mapping, shared by every backend (CPU and CUDA).
 *
 * Loading validates everything a forward pass relies on — architecture, hyperparameters, every expected
 * tensor's presence, type and shape, the vocabulary against the embedding — and fails with a message naming
 * the problem. It copies nothing large: the only allocations are the layer table and the small float vectors
 * (norm weights, biases) converted once so that backends never dequantize them.
 */
#ifndef ORUN_RUNNER_MODEL_H
#define ORUN_RUNNER_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "runner/error.h"

#define RN_MAX_LAYERS 1024    /* block_count above this is rejected */
#define RN_MAX_EMBD 65536     /* embedding_length, feed_forward_length and head sizes above this are rejected */
#define RN_MAX_FF (1 << 20)   /* feed_forward_length cap */
#define RN_MAX_HEADS 1024     /* attention head count cap */
#define RN_MAX_VOCAB (1 << 22) /* vocabulary cap */
#define RN_MAX_CTX (1 << 22)  /* context length cap (4M tokens) */

enum rn_arch {
	RN_ARCH_LLAMA = 0, /* Llama 2/3, SmolLM2, Mistral: normal RoPE, optional rope_freqs, optional biases */
	RN_ARCH_QWEN2,     /* Qwen2/2.5: NeoX RoPE, Q/K/V bias */
	RN_ARCH_QWEN3,     /* Qwen3 dense: NeoX RoPE, per-head RMSNorm on Q and K, no bias */
};

/* How RoPE pairs the values of a head: NORM rotates (x[2i], x[2i+1]); NEOX rotates (x[i], x[i + n_rot/2]). */
enum rn_rope_type { RN_ROPE_NORM = 0, RN_ROPE_NEOX = 1 };

enum rn_rope_scaling { RN_ROPE_SCALING_NONE = 0, RN_ROPE_SCALING_LINEAR, RN_ROPE_SCALING_YARN };

/* A view of one weight tensor inside the mapping. ne[0] is the row length (the input dimension of a matrix
 * used as y = W x), ne[1] the number of rows (the output dimension). */
struct rn_tensor {
	const void *data;  /* NULL when the tensor is absent (optional tensors only) */
	uint32_t type;     /* enum gguf_type */
	int64_t ne[4];
	uint64_t nbytes;   /* exact data size */
	const char *name;  /* borrowed from the GGUF file */
	const struct gguf_tensor *gt; /* the GGUF directory entry (for FP8's scale grid and the row API) */
};

/* Hyperparameters as stored in the file (the "train" values; per-load overrides go in struct rn_rope). */
struct rn_hparams {
	enum rn_arch arch;
	char arch_name[16];    /* "llama", "qwen2", "qwen3" */
	int n_layer;           /* transformer blocks */
	int n_embd;            /* model width (dim) */
	int n_head;            /* query heads */
	int n_head_kv;         /* key/value heads (GQA: n_head % n_head_kv == 0) */
	int head_dim;          /* values per query/key/value head */
	int n_ff;              /* SwiGLU hidden width */
	int n_vocab;           /* rows of the embedding and of the output matrix */
	int n_ctx_train;       /* <arch>.context_length, tokens */
	float norm_eps;        /* RMSNorm epsilon */
	/* RoPE, from the file */
	enum rn_rope_type rope_type;
	int n_rot;                     /* rotated values per head (== head_dim for these architectures) */
	float rope_freq_base;          /* theta base, default 10000 */
	float rope_freq_scale;         /* 1 / rope.scaling.factor (1 when unscaled) */
	enum rn_rope_scaling rope_scaling;
	int rope_orig_ctx;             /* rope.scaling.original_context_length, else n_ctx_train */
	float rope_attn_factor;        /* rope.scaling.attn_factor, default 1 */
	bool tied_output;              /* no output.weight: the embedding is the LM head */
};

/* Effective RoPE parameters for one loaded instance: the file's values with the load-time overrides
 * (rope_freq_base, rope_freq_scale) applied and YaRN's derived constants computed as llama.cpp does. */
struct rn_rope {
	enum rn_rope_type type;
	int n_rot;              /* values rotated per head */
	float freq_base;        /* theta_i = pos * freq_base^(-2i/n_rot) */
	float freq_scale;       /* position interpolation factor (1 = none) */
	float ext_factor;       /* YaRN extrapolation mix, 0 = plain (linear) scaling */
	float attn_factor;      /* magnitude scale applied to cos/sin */
	float beta_fast, beta_slow;
	int n_ctx_orig;         /* YaRN original context */
	float corr_dims[2];     /* YaRN ramp start/end, in rotated-pair units */
	const float *freq_factors; /* n_rot/2 divisors of theta (rope_freqs.weight), or NULL */
};

struct rn_layer {
	const float *attn_norm;  /* (n_embd) RMSNorm weight before attention */
	struct rn_tensor wq;     /* (n_head * head_dim rows, n_embd cols) */
	struct rn_tensor wk;     /* (n_head_kv * head_dim, n_embd) */
	struct rn_tensor wv;     /* (n_head_kv * head_dim, n_embd) */
	struct rn_tensor wo;     /* (n_embd, n_head * head_dim) */
	const float *bq;         /* (n_head * head_dim) or NULL */
	const float *bk;         /* (n_head_kv * head_dim) or NULL */
	const float *bv;         /* (n_head_kv * head_dim) or NULL */
	const float *bo;         /* (n_embd) or NULL (llama only) */
	const float *q_norm;     /* (head_dim) per-head RMSNorm weight (qwen3) or NULL */
	const float *k_norm;     /* (head_dim) (qwen3) or NULL */
	const float *ffn_norm;   /* (n_embd) RMSNorm weight before the feed-forward block */
	struct rn_tensor w_gate; /* (n_ff, n_embd) */
	struct rn_tensor w_up;   /* (n_ff, n_embd) */
	struct rn_tensor w_down; /* (n_embd, n_ff) */
};

struct rn_model {
	struct gguf_file *gguf;   /* the mapping; owned when opened with rn_model_open */
	bool owns_gguf;
	struct rn_hparams hp;
	struct rn_tensor tok_embd;   /* (n_vocab, n_embd) */
	const float *output_norm;    /* (n_embd) */
	struct rn_tensor output;     /* (n_vocab, n_embd); a copy of tok_embd's view when tied */
	const float *rope_freqs;     /* (n_rot / 2) or NULL */
	struct rn_layer *layers;     /* [n_layer] */
	uint64_t weight_bytes;       /* bytes of all tensors the model uses (embedding included) */
	uint64_t bytes_per_token;    /* bytes read per decoded token: every matrix + norms + the LM head, one
	                              * embedding row (the roofline's numerator) */
	uint64_t n_params;           /* parameters (elements) of all tensors used */
	float *small_;               /* private: one allocation holding every converted norm/bias vector */
};

/* Open a GGUF file and load the model from it. The model owns the mapping. Returns NULL with *err filled
 * (RN_ERR_IO / RN_ERR_FORMAT from the file, RN_ERR_ARCH / RN_ERR_TENSOR / RN_ERR_TYPE / RN_ERR_VOCAB from
 * validation, RN_ERR_NOMEM). Free with rn_model_free. */
struct rn_model *rn_model_open(const char *path, struct rn_error *err) RN_WUR;

/* Load from an already-open GGUF file that the caller keeps open until rn_model_free (not owned). */
struct rn_model *rn_model_load(struct gguf_file *f, struct rn_error *err) RN_WUR;

/* The model's own context length, tokens, as rn_model_open reads it into hp.n_ctx_train (<arch>.context_length,
 * 4096 when absent), from the file's metadata alone (no weights are read): what num_ctx is capped at before
 * the model is loaded. 0 when the file cannot be read or its architecture or value is not supported (the load
 * will then fail with the reason). */
int rn_model_context_length(const char *path);

/* Free the model (and the mapping when owned). Accepts NULL. */
void rn_model_free(struct rn_model *m);

/* True when a weight of this GGUF type can be used as a matrix by the CPU backend. */
bool rn_model_matrix_type_ok(uint32_t type);

/* Compute the effective RoPE parameters. freq_base / freq_scale override the file when > 0 (0 = file value),
 * as Ollama's rope_freq_base / rope_freq_scale options do. Never fails. */
void rn_rope_init(struct rn_rope *r, const struct rn_model *m, float freq_base, float freq_scale);

/* cos/sin for every rotated pair of one position: cs[2*i] = cos(theta_i) * mscale, cs[2*i+1] = sin(...),
 * i in [0, n_rot/2). Both backends use this so that their rotations agree. */
void rn_rope_cos_sin(const struct rn_rope *r, int32_t pos, float *cs);

/* Rotate one head of n values in place (values beyond n_rot are left as they are). sign = +1 forward,
 * -1 to undo a rotation (used when shifting cached keys). */
void rn_rope_apply(const struct rn_rope *r, const float *cs, float *x, float sign);

#endif
