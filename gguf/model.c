/* gguf/model.c — hyperparameters and tensor inventory of llama / qwen2 / qwen3 GGUF files, checked against
 * the shapes those architectures need (see gguf/model.h). It reads metadata and the tensor directory only.
 */
#include "config.h"

#include <stdio.h>

#include "gguf/internal.h"
#include "gguf/model.h"

static int need_u32(const struct gguf_file *f, const char *arch, const char *suffix, uint32_t *out,
		    struct gguf_error *err)
{
	char key[128];
	snprintf(key, sizeof key, "%s.%s", arch, suffix);
	int e = gguf_find_u32(f, key, out);
	if (e == GGUF_ERR_NOT_FOUND)
		return gg_fail(err, GGUF_ERR_ARCH, 0, "missing hyperparameter %s", key);
	if (e)
		return gg_fail(err, GGUF_ERR_ARCH, gguf_find_kv(f, key)->offset, "hyperparameter %s is not a u32", key);
	if (*out == 0)
		return gg_fail(err, GGUF_ERR_ARCH, gguf_find_kv(f, key)->offset, "hyperparameter %s is 0", key);
	return 0;
}

static int opt_u32(const struct gguf_file *f, const char *arch, const char *suffix, uint32_t def, uint32_t *out,
		   struct gguf_error *err)
{
	char key[128];
	snprintf(key, sizeof key, "%s.%s", arch, suffix);
	int e = gguf_find_u32(f, key, out);
	if (e == GGUF_ERR_NOT_FOUND) {
		*out = def;
		return 0;
	}
	if (e || *out == 0)
		return gg_fail(err, GGUF_ERR_ARCH, gguf_find_kv(f, key)->offset, "hyperparameter %s is not a positive u32",
			       key);
	return 0;
}

static int opt_f32(const struct gguf_file *f, const char *arch, const char *suffix, float def, float *out,
		   struct gguf_error *err)
{
	char key[128];
	snprintf(key, sizeof key, "%s.%s", arch, suffix);
	int e = gguf_find_f32(f, key, out);
	if (e == GGUF_ERR_NOT_FOUND) {
		*out = def;
		return 0;
	}
	if (e || !(*out > 0))
		return gg_fail(err, GGUF_ERR_ARCH, gguf_find_kv(f, key)->offset, "hyperparameter %s is not a positive float",
			       key);
	return 0;
}

static void shape_str(char *buf, size_t cap, int n, const int64_t *ne)
{
	size_t o = 0;
	o += (size_t)snprintf(buf + o, cap - o, "(");
	for (int i = 0; i < n && o < cap; i++)
		o += (size_t)snprintf(buf + o, cap - o, "%s%lld", i ? ", " : "", (long long)ne[i]);
	if (o < cap)
		snprintf(buf + o, cap - o, ")");
}

/* Check one tensor: present (unless optional), shape (n dims given), type (F32 when vec, else dequantizable). */
static int check_tensor(const struct gguf_file *f, const char *name, int n, int64_t d0, int64_t d1, bool vec,
			bool optional, bool *present, struct gguf_error *err)
{
	const struct gguf_tensor *t = gguf_find_tensor(f, name);
	int64_t want[4] = {d0, d1, 1, 1};
	char ws[64], gs[64];
	if (present)
		*present = t != NULL;
	if (!t) {
		if (optional)
			return 0;
		shape_str(ws, sizeof ws, n, want);
		return gg_fail(err, GGUF_ERR_SHAPE, 0, "tensor '%s' is missing (expected shape %s)", name, ws);
	}
	bool ok = true;
	for (int i = 0; i < 4; i++)
		if (t->ne[i] != want[i])
			ok = false;
	if (!ok) {
		shape_str(ws, sizeof ws, n, want);
		shape_str(gs, sizeof gs, t->n_dims > 0 ? (int)t->n_dims : 1, t->ne);
		return gg_fail(err, GGUF_ERR_SHAPE, t->info_offset, "tensor '%s' has shape %s, expected %s", name, gs, ws);
	}
	const struct gguf_type_info *ti = gguf_type_get(t->type);
	if (vec && t->type != GGUF_TYPE_F32)
		return gg_fail(err, GGUF_ERR_SHAPE, t->info_offset, "tensor '%s' has type %s, expected F32", name, ti->name);
	if (!vec && !ti->dequant)
		return gg_fail(err, GGUF_ERR_SHAPE, t->info_offset,
			       "tensor '%s' has type %s, which this engine cannot use (expected F32, F16, BF16, Q4_0, Q4_1, "
			       "Q5_0, Q5_1, Q8_0, Q2_K..Q6_K or FP8)",
			       name, ti->name);
	return 0;
}

int gguf_model_check(const struct gguf_file *f, struct gguf_model_info *mi, struct gguf_error *err)
{
	memset(mi, 0, sizeof *mi);
	struct gguf_str a;
	if (gguf_find_str(f, "general.architecture", &a))
		return gg_fail(err, GGUF_ERR_ARCH, 0, "general.architecture is missing or not a string");
	char esc[64];
	if (gguf_str_eq(a, "llama"))
		mi->arch = GGUF_ARCH_LLAMA;
	else if (gguf_str_eq(a, "qwen2"))
		mi->arch = GGUF_ARCH_QWEN2;
	else if (gguf_str_eq(a, "qwen3"))
		mi->arch = GGUF_ARCH_QWEN3;
	else
		return gg_fail(err, GGUF_ERR_ARCH, gguf_find_kv(f, "general.architecture")->offset,
			       "architecture '%s' is not supported (llama, qwen2, qwen3 are)",
			       gg_escape(esc, sizeof esc, a.ptr, a.len, 40));
	memcpy(mi->arch_name, a.ptr, a.len);
	const char *ar = mi->arch_name;
	int e;
	if ((e = need_u32(f, ar, "block_count", &mi->n_layer, err)) ||
	    (e = need_u32(f, ar, "embedding_length", &mi->n_embd, err)) ||
	    (e = need_u32(f, ar, "feed_forward_length", &mi->n_ff, err)) ||
	    (e = need_u32(f, ar, "attention.head_count", &mi->n_head, err)) ||
	    (e = opt_u32(f, ar, "context_length", 2048, &mi->n_ctx_train, err)) ||
	    (e = opt_u32(f, ar, "attention.head_count_kv", mi->n_head, &mi->n_head_kv, err)))
		return e;
	if (mi->n_head % mi->n_head_kv)
		return gg_fail(err, GGUF_ERR_ARCH, 0, "head_count %u is not a multiple of head_count_kv %u", mi->n_head,
			       mi->n_head_kv);
	if ((e = opt_u32(f, ar, "attention.key_length", mi->n_embd / mi->n_head, &mi->head_dim_k, err)) ||
	    (e = opt_u32(f, ar, "attention.value_length", mi->head_dim_k, &mi->head_dim_v, err)) ||
	    (e = opt_u32(f, ar, "rope.dimension_count", mi->head_dim_k, &mi->n_rot, err)))
		return e;
	if (mi->head_dim_k == 0 || mi->n_rot > mi->head_dim_k || (mi->n_rot & 1))
		return gg_fail(err, GGUF_ERR_ARCH, 0, "rope dimension count %u does not fit head size %u", mi->n_rot,
			       mi->head_dim_k);
	float eps_def = mi->arch == GGUF_ARCH_LLAMA ? 1e-5f : 1e-6f;
	if ((e = opt_f32(f, ar, "rope.freq_base", 10000.0f, &mi->rope_freq_base, err)) ||
	    (e = opt_f32(f, ar, "attention.layer_norm_rms_epsilon", eps_def, &mi->rms_eps, err)))
		return e;
	mi->rope_freq_scale = 1.0f;
	char key[128];
	snprintf(key, sizeof key, "%s.rope.scaling.type", ar);
	struct gguf_str st;
	if (!gguf_find_str(f, key, &st) && gguf_str_eq(st, "linear")) {
		float fac;
		if ((e = opt_f32(f, ar, "rope.scaling.factor", 1.0f, &fac, err)))
			return e;
		mi->rope_freq_scale = 1.0f / fac;
	}

	const struct gguf_tensor *emb = gguf_find_tensor(f, "token_embd.weight");
	if (!emb)
		return gg_fail(err, GGUF_ERR_SHAPE, 0, "tensor 'token_embd.weight' is missing");
	if (emb->ne[1] <= 0 || emb->ne[1] > INT32_MAX)
		return gg_fail(err, GGUF_ERR_SHAPE, emb->info_offset, "tensor 'token_embd.weight' has %lld rows",
			       (long long)emb->ne[1]);
	mi->n_vocab = (uint32_t)emb->ne[1];
	const struct gguf_array *toks;
	if (!gguf_find_arr(f, "tokenizer.ggml.tokens", &toks) && toks->n > mi->n_vocab)
		return gg_fail(err, GGUF_ERR_SHAPE, emb->info_offset,
			       "tokenizer.ggml.tokens has %llu tokens but token_embd.weight only %u rows",
			       (unsigned long long)toks->n, mi->n_vocab);

	const int64_t E = mi->n_embd, Q = (int64_t)mi->n_head * mi->head_dim_k,
		      K = (int64_t)mi->n_head_kv * mi->head_dim_k, V = (int64_t)mi->n_head_kv * mi->head_dim_v,
		      O = (int64_t)mi->n_head * mi->head_dim_v, FF = mi->n_ff, NV = mi->n_vocab;
	bool present;
	if ((e = check_tensor(f, "token_embd.weight", 2, E, NV, false, false, NULL, err)) ||
	    (e = check_tensor(f, "output_norm.weight", 1, E, 1, true, false, NULL, err)) ||
	    (e = check_tensor(f, "output.weight", 2, E, NV, false, true, &present, err)))
		return e;
	mi->tied_output = !present;
	if ((e = check_tensor(f, "rope_freqs.weight", 1, mi->n_rot / 2, 1, true, true, &mi->has_rope_freqs, err)))
		return e;
	char n[96];
#define T(suffix, nd, d0, d1, vec, opt, pres)                                                               \
	do {                                                                                             \
		snprintf(n, sizeof n, "blk.%u.%s", l, suffix);                                           \
		if ((e = check_tensor(f, n, nd, d0, d1, vec, opt, pres, err)))                           \
			return e;                                                                        \
	} while (0)
	for (uint32_t l = 0; l < mi->n_layer; l++) {
		T("attn_norm.weight", 1, E, 1, true, false, NULL);
		T("attn_q.weight", 2, E, Q, false, false, NULL);
		T("attn_k.weight", 2, E, K, false, false, NULL);
		T("attn_v.weight", 2, E, V, false, false, NULL);
		T("attn_output.weight", 2, O, E, false, false, NULL);
		T("ffn_norm.weight", 1, E, 1, true, false, NULL);
		T("ffn_gate.weight", 2, E, FF, false, false, NULL);
		T("ffn_up.weight", 2, E, FF, false, false, NULL);
		T("ffn_down.weight", 2, FF, E, false, false, NULL);
		bool qb, kb, vb;
		bool need_bias = mi->arch == GGUF_ARCH_QWEN2;
		T("attn_q.bias", 1, Q, 1, true, !need_bias, &qb);
		T("attn_k.bias", 1, K, 1, true, !need_bias, &kb);
		T("attn_v.bias", 1, V, 1, true, !need_bias, &vb);
		if (qb != kb || kb != vb) {
			snprintf(n, sizeof n, "blk.%u.attn_%s.bias", l, !qb ? "q" : !kb ? "k" : "v");
			return gg_fail(err, GGUF_ERR_SHAPE, 0, "tensor '%s' is missing (the other q/k/v biases exist)", n);
		}
		if (l == 0)
			mi->has_qkv_bias = qb;
		else if (qb != mi->has_qkv_bias)
			return gg_fail(err, GGUF_ERR_SHAPE, 0, "layer %u %s q/k/v biases unlike layer 0", l,
				       qb ? "has" : "lacks");
		if (mi->arch == GGUF_ARCH_QWEN3) {
			T("attn_q_norm.weight", 1, mi->head_dim_k, 1, true, false, NULL);
			T("attn_k_norm.weight", 1, mi->head_dim_k, 1, true, false, NULL);
			mi->has_qk_norm = true;
		}
	}
#undef T
	return GGUF_OK;
}
