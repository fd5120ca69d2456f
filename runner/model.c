/* runner/model.c — read <arch>.* hyperparameters and bind every weight of a llama / qwen2 / qwen3 GGUF,
 * checking presence, type and shape; compute the effective RoPE constants (YaRN as llama.cpp does).
 *
 * Deliberately not here: tokenizer metadata (runner/tokenizer), any arithmetic on the big matrices (the
 * backends), mixture-of-experts and fused-QKV layouts (rejected with a clear message).
 */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "runner/model.h"

/* ---------------------------------------------------------------------------------------------------- */
/* metadata */

struct loader {
	struct gguf_file *f;
	struct rn_model *m;
	struct rn_error *err;
	char prefix[24]; /* "qwen2." */
	/* the small float vectors are gathered first, then converted into one allocation */
	struct small_req {
		const struct gguf_tensor *t;
		const float **dst;
	} *small;
	size_t n_small, cap_small;
};

static const char *key_of(struct loader *L, const char *suffix, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s%s", L->prefix, suffix);
	return buf;
}

/* Required or optional unsigned hyperparameter in [lo, hi]. */
static int get_dim(struct loader *L, const char *suffix, bool required, uint32_t def, uint32_t lo, uint32_t hi,
		   int *out)
{
	char key[96];
	key_of(L, suffix, key, sizeof key);
	uint32_t v = def;
	int rc = gguf_find_u32(L->f, key, &v);
	if (rc == GGUF_ERR_NOT_FOUND) {
		if (required)
			return rn_error_set(L->err, RN_ERR_ARCH, "missing hyperparameter %s", key);
		v = def;
	} else if (rc != GGUF_OK) {
		const struct gguf_kv *kv = gguf_find_kv(L->f, key);
		if (kv && kv->val.type == GGUF_VT_ARRAY)
			return rn_error_set(L->err, RN_ERR_ARCH, "hyperparameter %s is a per-layer array; "
				"only one value for all layers is supported", key);
		return rn_error_set(L->err, RN_ERR_ARCH, "hyperparameter %s has type %s, expected an unsigned integer",
				    key, kv ? gguf_vtype_name(kv->val.type) : "?");
	}
	if (v < lo || v > hi)
		return rn_error_set(L->err, RN_ERR_ARCH, "hyperparameter %s = %" PRIu32 " is outside [%" PRIu32
				    ", %" PRIu32 "]", key, v, lo, hi);
	*out = (int)v;
	return RN_OK;
}

static int get_float(struct loader *L, const char *suffix, bool required, float def, float *out)
{
	char key[96];
	key_of(L, suffix, key, sizeof key);
	float v = def;
	int rc = gguf_find_f32(L->f, key, &v);
	if (rc == GGUF_ERR_NOT_FOUND) {
		if (required)
			return rn_error_set(L->err, RN_ERR_ARCH, "missing hyperparameter %s", key);
		v = def;
	} else if (rc != GGUF_OK) {
		return rn_error_set(L->err, RN_ERR_ARCH, "hyperparameter %s is not a float", key);
	}
	if (!isfinite(v))
		return rn_error_set(L->err, RN_ERR_ARCH, "hyperparameter %s = %g is not finite", key, (double)v);
	*out = v;
	return RN_OK;
}

/* ---------------------------------------------------------------------------------------------------- */
/* tensors */

static void shape_str(char *buf, size_t cap, const int64_t *ne, int n)
{
	size_t o = 0;
	o += (size_t)snprintf(buf + o, cap - o, "[");
	for (int i = 0; i < n && o < cap; i++)
		o += (size_t)snprintf(buf + o, cap - o, "%s%" PRId64, i ? ", " : "", ne[i]);
	if (o < cap)
		snprintf(buf + o, cap - o, "]");
}

static int tensor_dims(const struct gguf_tensor *t)
{
	int n = (int)t->n_dims;
	if (n < 1)
		n = 1;
	return n;
}

/* Does t have exactly the shape ne[0..n-1] (trailing dims 1)? */
static bool shape_eq(const struct gguf_tensor *t, const int64_t *ne, int n)
{
	for (int i = 0; i < GGUF_MAX_DIMS; i++) {
		int64_t want = i < n ? ne[i] : 1;
		if (t->ne[i] != want)
			return false;
	}
	return true;
}

static int shape_error(struct loader *L, const struct gguf_tensor *t, const int64_t *ne, int n)
{
	char want[96], got[96];
	shape_str(want, sizeof want, ne, n);
	shape_str(got, sizeof got, t->ne, tensor_dims(t));
	return rn_error_set(L->err, RN_ERR_TENSOR, "tensor '%s' has shape %s, expected %s", t->name, got, want);
}

bool rn_model_matrix_type_ok(uint32_t type)
{
	switch (type) {
	case GGUF_TYPE_F32:
	case GGUF_TYPE_F16:
	case GGUF_TYPE_BF16:
	case GGUF_TYPE_Q4_0:
	case GGUF_TYPE_Q4_1:
	case GGUF_TYPE_Q5_0:
	case GGUF_TYPE_Q5_1:
	case GGUF_TYPE_Q8_0:
	case GGUF_TYPE_Q2_K:
	case GGUF_TYPE_Q3_K:
	case GGUF_TYPE_Q4_K:
	case GGUF_TYPE_Q5_K:
	case GGUF_TYPE_Q6_K:
	case GGUF_TYPE_FP8_E4M3_B128: {
		const struct gguf_type_info *ti = gguf_type_get(type);
		return ti && ti->dequant;
	}
	default:
		return false;
	}
}

/* Bind a 2-D matrix (rows x cols, i.e. ne = {cols, rows}). */
static int bind_matrix(struct loader *L, const char *name, int64_t cols, int64_t rows, bool required,
		       struct rn_tensor *w)
{
	memset(w, 0, sizeof *w);
	const struct gguf_tensor *t = gguf_find_tensor(L->f, name);
	if (!t) {
		if (!required)
			return RN_OK;
		char want[64];
		int64_t ne[2] = {cols, rows};
		shape_str(want, sizeof want, ne, 2);
		return rn_error_set(L->err, RN_ERR_TENSOR, "missing tensor '%s' (expected shape %s)", name, want);
	}
	int64_t ne[2] = {cols, rows};
	if (!shape_eq(t, ne, 2))
		return shape_error(L, t, ne, 2);
	if (!rn_model_matrix_type_ok(t->type))
		return rn_error_set(L->err, RN_ERR_TYPE, "tensor '%s' has type %s, which orun cannot compute with "
				    "(supported: F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K..Q6_K FP8)",
				    t->name, gguf_type_name(t->type));
	w->data = t->data;
	w->type = t->type;
	for (int i = 0; i < 4; i++)
		w->ne[i] = t->ne[i];
	w->nbytes = t->n_bytes;
	w->name = t->name;
	w->gt = t;
	L->m->weight_bytes += t->n_bytes;
	L->m->n_params += t->n_elements;
	return RN_OK;
}

/* Queue a 1-D float vector of n values for conversion (F32, F16 or BF16 stored). */
static int bind_vector(struct loader *L, const char *name, int64_t n, bool required, const float **dst)
{
	*dst = NULL;
	const struct gguf_tensor *t = gguf_find_tensor(L->f, name);
	if (!t) {
		if (!required)
			return RN_OK;
		return rn_error_set(L->err, RN_ERR_TENSOR, "missing tensor '%s' (expected shape [%" PRId64 "])", name, n);
	}
	int64_t ne[1] = {n};
	if (!shape_eq(t, ne, 1))
		return shape_error(L, t, ne, 1);
	if (t->type != GGUF_TYPE_F32 && t->type != GGUF_TYPE_F16 && t->type != GGUF_TYPE_BF16)
		return rn_error_set(L->err, RN_ERR_TYPE, "tensor '%s' has type %s, expected F32 (or F16/BF16)", t->name,
				    gguf_type_name(t->type));
	if (ob_grow(&L->small, &L->cap_small, L->n_small + 1, sizeof *L->small, 64, 0) != OB_GROW_OK)
		return rn_error_set(L->err, RN_ERR_NOMEM, "out of memory binding tensor '%s'", name);
	L->small[L->n_small].t = t;
	L->small[L->n_small].dst = dst;
	L->n_small++;
	L->m->weight_bytes += t->n_bytes;
	L->m->n_params += t->n_elements;
	return RN_OK;
}

static int convert_small(struct loader *L)
{
	uint64_t total = 0;
	for (size_t i = 0; i < L->n_small; i++)
		total += L->small[i].t->n_elements;
	if (total == 0)
		return RN_OK;
	float *buf = malloc(total * sizeof(float));
	if (!buf)
		return rn_error_set(L->err, RN_ERR_NOMEM, "out of memory converting %" PRIu64 " norm/bias values", total);
	L->m->small_ = buf;
	float *p = buf;
	for (size_t i = 0; i < L->n_small; i++) {
		const struct gguf_tensor *t = L->small[i].t;
		int rc = gguf_tensor_dequantize(t, p);
		if (rc != GGUF_OK)
			return rn_error_set(L->err, RN_ERR_TYPE, "cannot convert tensor '%s' (%s): %s", t->name,
					    gguf_type_name(t->type), gguf_strerror(rc));
		for (uint64_t j = 0; j < t->n_elements; j++)
			if (!isfinite(p[j]))
				return rn_error_set(L->err, RN_ERR_TENSOR, "tensor '%s' holds a non-finite value at %" PRIu64,
						    t->name, j);
		*L->small[i].dst = p;
		p += t->n_elements;
	}
	return RN_OK;
}

/* Reject tensors that signal a layout this loader does not implement. */
static int reject_unsupported(struct loader *L)
{
	static const char *const bad[] = {"blk.0.attn_qkv.weight", "blk.0.ffn_gate_inp.weight",
					  "blk.0.ffn_gate_exps.weight", "blk.0.rope_long.weight", "output.bias"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (gguf_find_tensor(L->f, bad[i]))
			return rn_error_set(L->err, RN_ERR_ARCH, "tensor '%s' means a layout orun does not support "
					    "(fused QKV, mixture of experts, LongRoPE or an output bias)", bad[i]);
	char key[96];
	uint32_t experts = 0;
	if (gguf_find_u32(L->f, key_of(L, "expert_count", key, sizeof key), &experts) == GGUF_OK && experts > 0)
		return rn_error_set(L->err, RN_ERR_ARCH, "%s = %" PRIu32 ": mixture-of-experts models are not supported",
				    key, experts);
	return RN_OK;
}

/* ---------------------------------------------------------------------------------------------------- */

static int read_arch(struct loader *L, struct rn_hparams *hp)
{
	struct gguf_str a;
	int rc = gguf_find_str(L->f, "general.architecture", &a);
	if (rc != GGUF_OK)
		return rn_error_set(L->err, RN_ERR_ARCH, "general.architecture is %s",
				    rc == GGUF_ERR_NOT_FOUND ? "missing" : "not a string");
	if (gguf_str_eq(a, "llama"))
		hp->arch = RN_ARCH_LLAMA;
	else if (gguf_str_eq(a, "qwen2"))
		hp->arch = RN_ARCH_QWEN2;
	else if (gguf_str_eq(a, "qwen3"))
		hp->arch = RN_ARCH_QWEN3;
	else {
		char name[64];
		size_t n = a.len < sizeof name - 1 ? (size_t)a.len : sizeof name - 1;
		for (size_t i = 0; i < n; i++)
			name[i] = (a.ptr[i] >= 0x20 && a.ptr[i] < 0x7f) ? a.ptr[i] : '?';
		name[n] = 0;
		return rn_error_set(L->err, RN_ERR_ARCH, "unsupported architecture '%s%s' (supported: llama, qwen2, qwen3)",
				    name, a.len > n ? "..." : "");
	}
	static const char *const names[] = {"llama", "qwen2", "qwen3"};
	snprintf(hp->arch_name, sizeof hp->arch_name, "%s", names[hp->arch]);
	snprintf(L->prefix, sizeof L->prefix, "%s.", names[hp->arch]);
	return RN_OK;
}

static int read_hparams(struct loader *L, struct rn_hparams *hp)
{
	int rc;
	if ((rc = get_dim(L, "block_count", true, 0, 1, RN_MAX_LAYERS, &hp->n_layer)) ||
	    (rc = get_dim(L, "embedding_length", true, 0, 1, RN_MAX_EMBD, &hp->n_embd)) ||
	    (rc = get_dim(L, "feed_forward_length", true, 0, 1, RN_MAX_FF, &hp->n_ff)) ||
	    (rc = get_dim(L, "attention.head_count", true, 0, 1, RN_MAX_HEADS, &hp->n_head)) ||
	    (rc = get_dim(L, "attention.head_count_kv", false, (uint32_t)hp->n_head, 1, RN_MAX_HEADS, &hp->n_head_kv)) ||
	    (rc = get_dim(L, "context_length", false, 4096, 1, RN_MAX_CTX, &hp->n_ctx_train)))
		return rc;
	if (hp->n_head % hp->n_head_kv != 0)
		return rn_error_set(L->err, RN_ERR_ARCH, "%sattention.head_count = %d is not a multiple of "
				    "head_count_kv = %d", L->prefix, hp->n_head, hp->n_head_kv);
	int head_k = 0, head_v = 0;
	uint32_t def_head = (uint32_t)(hp->n_embd / hp->n_head);
	char kl[96];
	if (hp->n_embd % hp->n_head != 0 && !gguf_find_kv(L->f, key_of(L, "attention.key_length", kl, sizeof kl)))
		return rn_error_set(L->err, RN_ERR_ARCH, "%sembedding_length = %d is not a multiple of head_count = %d "
				    "and %s is absent", L->prefix, hp->n_embd, hp->n_head, kl);
	if ((rc = get_dim(L, "attention.key_length", false, def_head, 1, RN_MAX_EMBD, &head_k)) ||
	    (rc = get_dim(L, "attention.value_length", false, def_head, 1, RN_MAX_EMBD, &head_v)))
		return rc;
	if (head_k != head_v)
		return rn_error_set(L->err, RN_ERR_ARCH, "attention.key_length = %d differs from value_length = %d; "
				    "orun needs equal key and value head sizes", head_k, head_v);
	if (head_k % 2 != 0)
		return rn_error_set(L->err, RN_ERR_ARCH, "head size %d is odd; RoPE needs an even head size", head_k);
	hp->head_dim = head_k;
	if ((rc = get_dim(L, "rope.dimension_count", false, (uint32_t)head_k, 2, RN_MAX_EMBD, &hp->n_rot)))
		return rc;
	if (hp->n_rot != head_k)
		return rn_error_set(L->err, RN_ERR_ARCH, "%srope.dimension_count = %d differs from the head size %d "
				    "(partial rotary embeddings are not supported for %s)", L->prefix, hp->n_rot, head_k,
				    hp->arch_name);
	if ((rc = get_float(L, "attention.layer_norm_rms_epsilon", true, 0, &hp->norm_eps)))
		return rc;
	if (!(hp->norm_eps > 0 && hp->norm_eps < 1))
		return rn_error_set(L->err, RN_ERR_ARCH, "%sattention.layer_norm_rms_epsilon = %g is outside (0, 1)",
				    L->prefix, (double)hp->norm_eps);
	if ((rc = get_float(L, "rope.freq_base", false, 10000.0f, &hp->rope_freq_base)))
		return rc;
	if (!(hp->rope_freq_base > 1.0f))
		return rn_error_set(L->err, RN_ERR_ARCH, "%srope.freq_base = %g must be > 1", L->prefix,
				    (double)hp->rope_freq_base);

	/* RoPE scaling: type (default "linear", as llama.cpp), factor (or the older scale_linear key) */
	char key[96];
	struct gguf_str st;
	hp->rope_scaling = RN_ROPE_SCALING_LINEAR;
	if (gguf_find_str(L->f, key_of(L, "rope.scaling.type", key, sizeof key), &st) == GGUF_OK) {
		if (gguf_str_eq(st, "none"))
			hp->rope_scaling = RN_ROPE_SCALING_NONE;
		else if (gguf_str_eq(st, "linear"))
			hp->rope_scaling = RN_ROPE_SCALING_LINEAR;
		else if (gguf_str_eq(st, "yarn"))
			hp->rope_scaling = RN_ROPE_SCALING_YARN;
		else
			return rn_error_set(L->err, RN_ERR_ARCH, "%s = '%.*s' is not supported (none, linear, yarn)", key,
					    (int)(st.len > 32 ? 32 : st.len), st.ptr);
	}
	float factor = 0;
	if ((rc = get_float(L, "rope.scaling.factor", false, 0, &factor)))
		return rc;
	if (factor == 0 && (rc = get_float(L, "rope.scale_linear", false, 0, &factor)))
		return rc;
	if (factor < 0 || factor > 1024)
		return rn_error_set(L->err, RN_ERR_ARCH, "%srope.scaling.factor = %g is outside [0, 1024]", L->prefix,
				    (double)factor);
	hp->rope_freq_scale = factor == 0 ? 1.0f : 1.0f / factor;
	if ((rc = get_dim(L, "rope.scaling.original_context_length", false, (uint32_t)hp->n_ctx_train, 1, RN_MAX_CTX,
			  &hp->rope_orig_ctx)))
		return rc;
	if ((rc = get_float(L, "rope.scaling.attn_factor", false, 1.0f, &hp->rope_attn_factor)))
		return rc;
	hp->rope_type = hp->arch == RN_ARCH_LLAMA ? RN_ROPE_NORM : RN_ROPE_NEOX;
	return RN_OK;
}

/* The vocabulary size the tokenizer defines (tokenizer.ggml.tokens), else <arch>.vocab_size, else 0. */
static int read_vocab(struct loader *L, int *n_vocab)
{
	const struct gguf_array *toks = NULL;
	*n_vocab = 0;
	int rc = gguf_find_arr(L->f, "tokenizer.ggml.tokens", &toks);
	if (rc == GGUF_OK) {
		if (toks->type != GGUF_VT_STRING)
			return rn_error_set(L->err, RN_ERR_VOCAB, "tokenizer.ggml.tokens is an array of %s, expected strings",
					    gguf_vtype_name(toks->type));
		if (toks->n == 0 || toks->n > RN_MAX_VOCAB)
			return rn_error_set(L->err, RN_ERR_VOCAB, "tokenizer.ggml.tokens has %" PRIu64 " entries (allowed 1..%d)",
					    toks->n, RN_MAX_VOCAB);
		*n_vocab = (int)toks->n;
		return RN_OK;
	}
	if (rc != GGUF_ERR_NOT_FOUND)
		return rn_error_set(L->err, RN_ERR_VOCAB, "tokenizer.ggml.tokens is not an array");
	int v = 0;
	if ((rc = get_dim(L, "vocab_size", false, 0, 0, RN_MAX_VOCAB, &v)))
		return rc;
	*n_vocab = v;
	return RN_OK;
}

static int bind_tensors(struct loader *L)
{
	struct rn_model *m = L->m;
	struct rn_hparams *hp = &m->hp;
	const int64_t E = hp->n_embd, Q = (int64_t)hp->n_head * hp->head_dim, KV = (int64_t)hp->n_head_kv * hp->head_dim;
	int rc;

	/* embedding first: it decides the vocabulary check */
	const struct gguf_tensor *te = gguf_find_tensor(L->f, "token_embd.weight");
	if (!te)
		return rn_error_set(L->err, RN_ERR_TENSOR, "missing tensor 'token_embd.weight' (expected shape [%" PRId64
				    ", n_vocab])", E);
	if (te->ne[0] != E || te->ne[2] != 1 || te->ne[3] != 1 || te->ne[1] < 1) {
		int64_t ne[2] = {E, hp->n_vocab ? hp->n_vocab : te->ne[1]};
		return shape_error(L, te, ne, 2);
	}
	if (hp->n_vocab == 0) {
		if (te->ne[1] > RN_MAX_VOCAB)
			return rn_error_set(L->err, RN_ERR_VOCAB, "token_embd.weight has %" PRId64 " rows (limit %d)",
					    te->ne[1], RN_MAX_VOCAB);
		hp->n_vocab = (int)te->ne[1];
	} else if (te->ne[1] != hp->n_vocab) {
		return rn_error_set(L->err, RN_ERR_VOCAB, "the vocabulary has %d tokens but token_embd.weight has %" PRId64
				    " rows", hp->n_vocab, te->ne[1]);
	}
	const struct gguf_type_info *ti = gguf_type_get(te->type);
	if (!ti || !ti->dequant)
		return rn_error_set(L->err, RN_ERR_TYPE, "tensor 'token_embd.weight' has type %s, which cannot be "
				    "dequantized", gguf_type_name(te->type));
	if ((rc = bind_matrix(L, "token_embd.weight", E, hp->n_vocab, true, &m->tok_embd)))
		return rc;
	if ((rc = bind_vector(L, "output_norm.weight", E, true, &m->output_norm)))
		return rc;
	const struct gguf_tensor *to = gguf_find_tensor(L->f, "output.weight");
	if (to && to->ne[0] == E && to->ne[1] != hp->n_vocab && to->n_dims == 2)
		return rn_error_set(L->err, RN_ERR_VOCAB, "the vocabulary has %d tokens but output.weight has %" PRId64
				    " rows", hp->n_vocab, to->ne[1]);
	if ((rc = bind_matrix(L, "output.weight", E, hp->n_vocab, false, &m->output)))
		return rc;
	if (!m->output.data) {
		m->output = m->tok_embd;
		hp->tied_output = true;
	}
	if (hp->arch == RN_ARCH_LLAMA && (rc = bind_vector(L, "rope_freqs.weight", hp->n_rot / 2, false, &m->rope_freqs)))
		return rc;

	m->layers = calloc((size_t)hp->n_layer, sizeof *m->layers);
	if (!m->layers)
		return rn_error_set(L->err, RN_ERR_NOMEM, "out of memory for %d layers", hp->n_layer);
	for (int i = 0; i < hp->n_layer; i++) {
		struct rn_layer *l = &m->layers[i];
		char n[GGUF_MAX_TENSOR_NAME + 1];
#define NAME(s) (snprintf(n, sizeof n, "blk.%d." s, i), n)
		bool qwen2 = hp->arch == RN_ARCH_QWEN2, qwen3 = hp->arch == RN_ARCH_QWEN3;
		if ((rc = bind_vector(L, NAME("attn_norm.weight"), E, true, &l->attn_norm)) ||
		    (rc = bind_matrix(L, NAME("attn_q.weight"), E, Q, true, &l->wq)) ||
		    (rc = bind_matrix(L, NAME("attn_k.weight"), E, KV, true, &l->wk)) ||
		    (rc = bind_matrix(L, NAME("attn_v.weight"), E, KV, true, &l->wv)) ||
		    (rc = bind_matrix(L, NAME("attn_output.weight"), Q, E, true, &l->wo)) ||
		    (rc = bind_vector(L, NAME("attn_q.bias"), Q, qwen2, &l->bq)) ||
		    (rc = bind_vector(L, NAME("attn_k.bias"), KV, qwen2, &l->bk)) ||
		    (rc = bind_vector(L, NAME("attn_v.bias"), KV, qwen2, &l->bv)) ||
		    (rc = bind_vector(L, NAME("ffn_norm.weight"), E, true, &l->ffn_norm)) ||
		    (rc = bind_matrix(L, NAME("ffn_gate.weight"), E, hp->n_ff, true, &l->w_gate)) ||
		    (rc = bind_matrix(L, NAME("ffn_up.weight"), E, hp->n_ff, true, &l->w_up)) ||
		    (rc = bind_matrix(L, NAME("ffn_down.weight"), hp->n_ff, E, true, &l->w_down)))
			return rc;
		if (hp->arch == RN_ARCH_LLAMA && (rc = bind_vector(L, NAME("attn_output.bias"), E, false, &l->bo)))
			return rc;
		if (qwen3 && ((rc = bind_vector(L, NAME("attn_q_norm.weight"), hp->head_dim, true, &l->q_norm)) ||
			      (rc = bind_vector(L, NAME("attn_k_norm.weight"), hp->head_dim, true, &l->k_norm))))
			return rc;
		if (hp->arch == RN_ARCH_LLAMA) {
			/* Optional MLP biases exist in a few llama-arch files; orun does not apply them, so refuse. */
			if (gguf_find_tensor(L->f, NAME("ffn_gate.bias")) || gguf_find_tensor(L->f, NAME("ffn_up.bias")) ||
			    gguf_find_tensor(L->f, NAME("ffn_down.bias")))
				return rn_error_set(L->err, RN_ERR_ARCH, "tensor '%s' (feed-forward bias) is not supported", n);
		}
#undef NAME
	}
	return RN_OK;
}

static void compute_bytes_per_token(struct rn_model *m)
{
	uint64_t b = 0;
	const struct rn_hparams *hp = &m->hp;
	for (int i = 0; i < hp->n_layer; i++) {
		const struct rn_layer *l = &m->layers[i];
		b += l->wq.nbytes + l->wk.nbytes + l->wv.nbytes + l->wo.nbytes;
		b += l->w_gate.nbytes + l->w_up.nbytes + l->w_down.nbytes;
		b += 4u * (uint64_t)(2 * hp->n_embd); /* the two norms, as f32 */
	}
	b += m->output.nbytes + 4u * (uint64_t)hp->n_embd;
	b += m->tok_embd.nbytes / (uint64_t)hp->n_vocab; /* one embedding row */
	m->bytes_per_token = b;
}

struct rn_model *rn_model_load(struct gguf_file *f, struct rn_error *err)
{
	struct rn_model *m = calloc(1, sizeof *m);
	if (!m) {
		rn_error_set(err, RN_ERR_NOMEM, "out of memory");
		return NULL;
	}
	m->gguf = f;
	struct loader L = {.f = f, .m = m, .err = err};
	int rc;
	if ((rc = read_arch(&L, &m->hp)) || (rc = reject_unsupported(&L)) || (rc = read_hparams(&L, &m->hp)) ||
	    (rc = read_vocab(&L, &m->hp.n_vocab)) || (rc = bind_tensors(&L)) || (rc = convert_small(&L))) {
		free(L.small);
		rn_model_free(m);
		return NULL;
	}
	free(L.small);
	compute_bytes_per_token(m);
	return m;
}

struct rn_model *rn_model_open(const char *path, struct rn_error *err)
{
	struct gguf_error ge = {0};
	struct gguf_file *f = gguf_open(path, &ge);
	if (!f) {
		rn_error_set(err, ge.code == GGUF_ERR_IO ? RN_ERR_IO : RN_ERR_FORMAT, "%s: %s", path, ge.msg);
		return NULL;
	}
	struct rn_model *m = rn_model_load(f, err);
	if (!m) {
		if (err) {
			/* prefix the file name so that CLI messages say which model failed */
			char tmp[sizeof err->msg];
			memcpy(tmp, err->msg, sizeof tmp);
			size_t lp = strlen(path);
			if (lp > 200)
				lp = 200;
			int k = snprintf(err->msg, sizeof err->msg, "%.*s: ", (int)lp, path);
			if (k > 0 && (size_t)k < sizeof err->msg)
				memcpy(err->msg + k, tmp, sizeof err->msg - (size_t)k - 1);
			err->msg[sizeof err->msg - 1] = 0;
		}
		gguf_close(f);
		return NULL;
	}
	m->owns_gguf = true;
	return m;
}

int rn_model_context_length(const char *path)
{
	struct gguf_error ge = {0};
	struct gguf_file *f = gguf_open(path, &ge);
	if (!f)
		return 0;
	struct rn_error e = {0};
	struct loader L = {.f = f, .err = &e};
	struct rn_hparams hp;
	memset(&hp, 0, sizeof hp);
	int n = 0;
	if (read_arch(&L, &hp) != RN_OK || get_dim(&L, "context_length", false, 4096, 1, RN_MAX_CTX, &n) != RN_OK)
		n = 0;
	gguf_close(f);
	return n;
}

void rn_model_free(struct rn_model *m)
{
	if (!m)
		return;
	free(m->layers);
	free(m->small_);
	if (m->owns_gguf)
		gguf_close(m->gguf);
	free(m);
}

/* ---------------------------------------------------------------------------------------------------- */
/* RoPE */

/* The dimension (in rotated values) at which rotation n_rot_turns complete within the original context. */
static float yarn_corr_dim(int n_dims, int n_ctx_orig, float n_turns, float base)
{
	return (float)n_dims * logf((float)n_ctx_orig / (n_turns * 2.0f * (float)M_PI)) / (2.0f * logf(base));
}

void rn_rope_init(struct rn_rope *r, const struct rn_model *m, float freq_base, float freq_scale)
{
	const struct rn_hparams *hp = &m->hp;
	memset(r, 0, sizeof *r);
	r->type = hp->rope_type;
	r->n_rot = hp->n_rot;
	r->freq_base = freq_base > 0 ? freq_base : hp->rope_freq_base;
	r->freq_scale = freq_scale > 0 ? freq_scale : hp->rope_freq_scale;
	if (hp->rope_scaling == RN_ROPE_SCALING_NONE)
		r->freq_scale = 1.0f;
	r->n_ctx_orig = hp->rope_orig_ctx;
	r->beta_fast = 32.0f;
	r->beta_slow = 1.0f;
	r->attn_factor = 1.0f;
	r->ext_factor = hp->rope_scaling == RN_ROPE_SCALING_YARN ? 1.0f : 0.0f;
	if (r->ext_factor != 0) {
		/* llama.cpp: attn_factor = mscale(1/freq_scale) / (1 + 0.1 ln(1/freq_scale)); the rotation then
		 * multiplies by (1 + 0.1 ln(1/freq_scale)) again, so the net magnitude scale is mscale. */
		float factor = 1.0f / r->freq_scale;
		float ms = factor <= 1.0f ? 1.0f : 0.1f * logf(factor) + 1.0f;
		r->attn_factor = ms * (1.0f / (1.0f + 0.1f * logf(factor)));
	}
	r->attn_factor *= hp->rope_attn_factor;
	float start = floorf(yarn_corr_dim(r->n_rot, r->n_ctx_orig, r->beta_fast, r->freq_base));
	float end = ceilf(yarn_corr_dim(r->n_rot, r->n_ctx_orig, r->beta_slow, r->freq_base));
	r->corr_dims[0] = start > 0 ? start : 0;
	r->corr_dims[1] = end < (float)(r->n_rot - 1) ? end : (float)(r->n_rot - 1);
	r->freq_factors = m->rope_freqs;
}

void rn_rope_cos_sin(const struct rn_rope *r, int32_t pos, float *cs)
{
	const int half = r->n_rot / 2;
	const float theta_scale = powf(r->freq_base, -2.0f / (float)r->n_rot);
	float mscale = r->attn_factor;
	if (r->ext_factor != 0)
		mscale *= 1.0f + 0.1f * logf(1.0f / r->freq_scale);
	/* theta is advanced by repeated float multiplication, as ggml does, so that angles agree closely with
	 * llama.cpp even at large positions. */
	float theta = (float)pos;
	for (int i = 0; i < half; i++) {
		float t_extrap = r->freq_factors ? theta / r->freq_factors[i] : theta;
		float t_interp = r->freq_scale * t_extrap;
		float t = t_interp;
		if (r->ext_factor != 0) {
			float lo = r->corr_dims[0], hi = r->corr_dims[1];
			float y = ((float)i - lo) / (hi - lo > 0.001f ? hi - lo : 0.001f);
			float ramp = 1.0f - (y < 0 ? 0 : y > 1 ? 1 : y);
			float mix = ramp * r->ext_factor;
			t = t_interp * (1 - mix) + t_extrap * mix;
		}
		cs[2 * i] = cosf(t) * mscale;
		cs[2 * i + 1] = sinf(t) * mscale;
		theta *= theta_scale;
	}
}

void rn_rope_apply(const struct rn_rope *r, const float *cs, float *x, float sign)
{
	const int half = r->n_rot / 2;
	if (r->type == RN_ROPE_NORM) {
		for (int i = 0; i < half; i++) {
			float c = cs[2 * i], s = sign * cs[2 * i + 1];
			float x0 = x[2 * i], x1 = x[2 * i + 1];
			x[2 * i] = x0 * c - x1 * s;
			x[2 * i + 1] = x0 * s + x1 * c;
		}
	} else {
		for (int i = 0; i < half; i++) {
			float c = cs[2 * i], s = sign * cs[2 * i + 1];
			float x0 = x[i], x1 = x[i + half];
			x[i] = x0 * c - x1 * s;
			x[i + half] = x0 * s + x1 * c;
		}
	}
}
