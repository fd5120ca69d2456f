/* gguf/model.h — the model-architecture helper: read the `<arch>.*` hyperparameters of a llama, qwen2 or
 * qwen3 GGUF and check that every tensor the architecture needs is present with a usable type and the
 * expected shape. Used by the engine before it builds a model, and by `orun gguf`.
 */
#ifndef ORUN_GGUF_MODEL_H
#define ORUN_GGUF_MODEL_H

#include "gguf/gguf.h"

enum gguf_arch {
	GGUF_ARCH_LLAMA = 1,
	GGUF_ARCH_QWEN2,
	GGUF_ARCH_QWEN3,
};

struct gguf_model_info {
	enum gguf_arch arch;
	char arch_name[16];      /* general.architecture */
	uint32_t n_layer;        /* <arch>.block_count */
	uint32_t n_ctx_train;    /* <arch>.context_length */
	uint32_t n_embd;         /* <arch>.embedding_length */
	uint32_t n_ff;           /* <arch>.feed_forward_length */
	uint32_t n_head;         /* <arch>.attention.head_count */
	uint32_t n_head_kv;      /* <arch>.attention.head_count_kv (default n_head) */
	uint32_t head_dim_k;     /* <arch>.attention.key_length (default n_embd / n_head) */
	uint32_t head_dim_v;     /* <arch>.attention.value_length (default head_dim_k) */
	uint32_t n_rot;          /* <arch>.rope.dimension_count (default head_dim_k) */
	uint32_t n_vocab;        /* token_embd.weight ne[1] (tokenizer.ggml.tokens must not be longer) */
	float rope_freq_base;    /* <arch>.rope.freq_base (default 10000) */
	float rope_freq_scale;   /* 1 / <arch>.rope.scaling.factor for linear scaling, else 1 */
	float rms_eps;           /* <arch>.attention.layer_norm_rms_epsilon (default 1e-5 llama, 1e-6 qwen) */
	bool tied_output;        /* no output.weight: the output projection reuses token_embd.weight */
	bool has_qkv_bias;       /* attn_{q,k,v}.bias present (qwen2: required) */
	bool has_qk_norm;        /* attn_{q,k}_norm.weight present (qwen3: required) */
	bool has_rope_freqs;     /* rope_freqs.weight present (llama 3 long-context factors) */
};

/* Read the hyperparameters and check the tensors. Expected shapes (ggml order, ne[0] first), E = n_embd,
 * Q = n_head * head_dim_k, K = n_head_kv * head_dim_k, V = n_head_kv * head_dim_v:
 *   token_embd.weight (E, n_vocab); output_norm.weight (E); output.weight (E, n_vocab) unless tied;
 *   blk.N.attn_norm.weight (E); attn_q.weight (E, Q); attn_k.weight (E, K); attn_v.weight (E, V);
 *   attn_output.weight (n_head * head_dim_v, E); ffn_norm.weight (E); ffn_gate.weight (E, n_ff);
 *   ffn_up.weight (E, n_ff); ffn_down.weight (n_ff, E); qwen2 adds attn_{q,k,v}.bias (Q), (K), (V);
 *   qwen3 adds attn_q_norm.weight and attn_k_norm.weight (head_dim_k).
 * Norms and biases must be F32; matrices any type this library can dequantize. Returns GGUF_OK with *mi
 * filled, GGUF_ERR_ARCH (unsupported architecture, missing or zero hyperparameter, inconsistent head
 * counts) or GGUF_ERR_SHAPE (the message names the tensor, the expected and the actual type/shape). */
int gguf_model_check(const struct gguf_file *f, struct gguf_model_info *mi, struct gguf_error *err) GGUF_WUR;

#endif
