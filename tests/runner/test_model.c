/* tests/runner/test_model.c — loading llama / qwen2 / qwen3 models: hyperparameters, tensor binding, and one
 * hand-made bad input per loader check (missing / mis-shaped / wrongly typed tensor, unsupported
 * architecture or layout, bad hyperparameter, vocabulary mismatch), each failing with a message that names
 * the problem. Also RoPE: YaRN constants and the composition used by context shift. */
#include "config.h"

#include <math.h>

#include "runner/model.h"
#include "tests/check.h"
#include "tests/runner/tinymodel.h"

static uint8_t *img;

static struct rn_model *load(const struct tiny_opts *o, struct rn_error *err)
{
	size_t size = 0;
	free(img);
	img = tiny_model(o, &size);
	CHECK(img != NULL);
	if (!img)
		return NULL;
	struct gguf_error ge = {0};
	struct gguf_file *f = gguf_parse(img, size, &ge);
	CHECKF(f != NULL, "%s", ge.msg);
	if (!f)
		return NULL;
	struct rn_model *m = rn_model_load(f, err);
	if (!m)
		gguf_close(f);
	return m;
}

static void free_model(struct rn_model *m)
{
	if (!m)
		return;
	struct gguf_file *f = m->gguf;
	rn_model_free(m);
	gguf_close(f);
}

/* The load must fail with code and a message containing every given fragment. */
static void expect_fail(const struct tiny_opts *o, int code, const char *frag1, const char *frag2)
{
	struct rn_error err = {0};
	struct rn_model *m = load(o, &err);
	CHECKF(m == NULL, "loaded although it should fail with '%s'", frag1);
	free_model(m);
	CHECKF(err.code == code, "code %d (%s), expected %d: %s", err.code, rn_strerror(err.code), code, err.msg);
	CHECKF(strstr(err.msg, frag1) != NULL, "message '%s' lacks '%s'", err.msg, frag1);
	if (frag2)
		CHECKF(strstr(err.msg, frag2) != NULL, "message '%s' lacks '%s'", err.msg, frag2);
}

int main(void)
{
	struct tiny_opts o;
	struct rn_error err = {0};

	/* good files of each architecture */
	const char *archs[] = {"llama", "qwen2", "qwen3"};
	for (int a = 0; a < 3; a++) {
		tiny_defaults(&o, archs[a]);
		struct rn_model *m = load(&o, &err);
		CHECKF(m != NULL, "%s: %s", archs[a], err.msg);
		if (!m)
			continue;
		const struct rn_hparams *hp = &m->hp;
		CHECK_STREQ(hp->arch_name, archs[a]);
		CHECK_EQ_INT(hp->n_layer, 2);
		CHECK_EQ_INT(hp->n_embd, 64);
		CHECK_EQ_INT(hp->n_head, 4);
		CHECK_EQ_INT(hp->n_head_kv, 2);
		CHECK_EQ_INT(hp->head_dim, 16);
		CHECK_EQ_INT(hp->n_ff, 96);
		CHECK_EQ_INT(hp->n_vocab, 128);
		CHECK_EQ_INT(hp->n_ctx_train, 256);
		CHECK_EQ_INT(hp->rope_type, a == 0 ? RN_ROPE_NORM : RN_ROPE_NEOX);
		CHECK(!hp->tied_output);
		CHECK((m->layers[1].bq != NULL) == (a == 1));
		CHECK((m->layers[1].q_norm != NULL) == (a == 2));
		CHECK(m->layers[0].wq.ne[0] == 64 && m->layers[0].wq.ne[1] == 64);
		CHECK(m->layers[0].wk.ne[1] == 32);
		CHECK(m->output_norm[0] > 0.5f && m->output_norm[0] < 1.5f);
		CHECK(m->bytes_per_token > 0 && m->bytes_per_token < m->weight_bytes);
		free_model(m);
	}
	/* tied output; F16 matrices */
	tiny_defaults(&o, "qwen3");
	o.tied = true;
	o.mat_type = GGUF_TYPE_F16;
	struct rn_model *m = load(&o, &err);
	CHECKF(m != NULL, "%s", err.msg);
	if (m) {
		CHECK(m->hp.tied_output);
		CHECK(m->output.data == m->tok_embd.data);
		CHECK_EQ_INT(m->layers[0].wq.type, GGUF_TYPE_F16);
	}
	free_model(m);

	/* bad inputs */
	tiny_defaults(&o, "gpt9");
	expect_fail(&o, RN_ERR_ARCH, "unsupported architecture 'gpt9'", "llama, qwen2, qwen3");
	tiny_defaults(&o, "qwen2");
	o.skip = "blk.1.ffn_up.weight";
	expect_fail(&o, RN_ERR_TENSOR, "missing tensor 'blk.1.ffn_up.weight'", "[64, 96]");
	tiny_defaults(&o, "llama");
	o.bad_shape = "blk.0.attn_k.weight";
	expect_fail(&o, RN_ERR_TENSOR, "'blk.0.attn_k.weight' has shape [64, 64]", "expected [64, 32]");
	tiny_defaults(&o, "qwen3");
	o.bad_shape = "blk.1.attn_q_norm.weight";
	expect_fail(&o, RN_ERR_TENSOR, "'blk.1.attn_q_norm.weight' has shape [48]", "expected [16]");
	tiny_defaults(&o, "qwen3");
	o.skip = "blk.0.attn_k_norm.weight";
	expect_fail(&o, RN_ERR_TENSOR, "missing tensor 'blk.0.attn_k_norm.weight'", NULL);
	tiny_defaults(&o, "qwen2");
	o.no_bias = true;
	expect_fail(&o, RN_ERR_TENSOR, "missing tensor 'blk.0.attn_q.bias'", NULL);
	tiny_defaults(&o, "qwen3");
	o.bad_type = "blk.1.ffn_down.weight";
	expect_fail(&o, RN_ERR_TYPE, "'blk.1.ffn_down.weight' has type I32", NULL);
	tiny_defaults(&o, "llama");
	o.bad_type = "output_norm.weight";
	expect_fail(&o, RN_ERR_TYPE, "'output_norm.weight' has type I32", "expected F32");
	tiny_defaults(&o, "qwen2");
	o.skip = "token_embd.weight";
	expect_fail(&o, RN_ERR_TENSOR, "missing tensor 'token_embd.weight'", NULL);
	tiny_defaults(&o, "qwen3");
	o.n_tokens = 150; /* the tokenizer has more tokens than the embedding has rows */
	expect_fail(&o, RN_ERR_VOCAB, "150 tokens", "token_embd.weight has 128 rows");
	tiny_defaults(&o, "llama");
	o.no_head_count = true;
	expect_fail(&o, RN_ERR_ARCH, "missing hyperparameter llama.attention.head_count", NULL);
	tiny_defaults(&o, "qwen2");
	o.kv_heads = 3;
	expect_fail(&o, RN_ERR_ARCH, "head_count = 4 is not a multiple of head_count_kv = 3", NULL);
	tiny_defaults(&o, "llama");
	o.experts = 8;
	expect_fail(&o, RN_ERR_ARCH, "llama.expert_count = 8", "mixture-of-experts");
	tiny_defaults(&o, "qwen2");
	o.extra = "output.bias";
	expect_fail(&o, RN_ERR_ARCH, "tensor 'output.bias'", "output bias");
	tiny_defaults(&o, "llama");
	o.extra = "blk.0.attn_qkv.weight";
	expect_fail(&o, RN_ERR_ARCH, "tensor 'blk.0.attn_qkv.weight'", "fused QKV");
	tiny_defaults(&o, "qwen3");
	o.rope_scaling = "longrope";
	expect_fail(&o, RN_ERR_ARCH, "qwen3.rope.scaling.type = 'longrope'", NULL);

	/* no tokenizer: the vocabulary comes from the embedding */
	tiny_defaults(&o, "qwen3");
	o.n_tokens = -1;
	m = load(&o, &err);
	CHECKF(m && m->hp.n_vocab == 128, "%s", m ? "wrong vocab" : err.msg);
	free_model(m);

	/* a file that is not GGUF at all */
	CHECK(rn_model_open("/nonexistent/model.gguf", &err) == NULL);
	CHECK_EQ_INT(err.code, RN_ERR_IO);
	CHECK(strstr(err.msg, "/nonexistent/model.gguf") != NULL);

	/* RoPE: YaRN constants as llama.cpp computes them (factor 4, original context 64, head size 16) */
	tiny_defaults(&o, "qwen3");
	o.rope_scaling = "yarn";
	o.rope_factor = 4.0f;
	o.rope_orig_ctx = 64;
	m = load(&o, &err);
	CHECKF(m != NULL, "%s", err.msg);
	if (m) {
		struct rn_rope r;
		rn_rope_init(&r, m, 0, 0);
		CHECK(r.ext_factor == 1.0f);
		CHECK(fabsf(r.freq_scale - 0.25f) < 1e-7f);
		/* the net magnitude scale is 0.1 ln 4 + 1 */
		float cs[16];
		rn_rope_cos_sin(&r, 0, cs);
		CHECKF(fabsf(cs[0] - (0.1f * logf(4.0f) + 1.0f)) < 1e-5f, "cos(0) * mscale = %g", (double)cs[0]);
		/* corr dims: floor/ceil of 16 ln(64 / (b 2 pi)) / (2 ln 10000) for b = 32 and 1, clamped to [0, 15] */
		CHECK(r.corr_dims[0] == 0.0f);
		CHECK(r.corr_dims[1] == ceilf(16.0f * logf(64.0f / (2.0f * (float)M_PI)) / (2.0f * logf(10000.0f))));
		/* rotating at p, then by d with a unit-length table, equals rotating at p + d */
		float x[16], y[16], csd[16], csp[16];
		for (int i = 0; i < 16; i++)
			x[i] = y[i] = sinf((float)i + 0.3f);
		rn_rope_cos_sin(&r, 37, csp);
		rn_rope_apply(&r, csp, x, 1.0f);
		rn_rope_cos_sin(&r, 12, csd);
		for (int i = 0; i < 8; i++) {
			float n = sqrtf(csd[2 * i] * csd[2 * i] + csd[2 * i + 1] * csd[2 * i + 1]);
			csd[2 * i] /= n;
			csd[2 * i + 1] /= n;
		}
		rn_rope_apply(&r, csd, x, 1.0f);
		rn_rope_cos_sin(&r, 49, csp);
		rn_rope_apply(&r, csp, y, 1.0f);
		float md = 0;
		for (int i = 0; i < 16; i++)
			md = fmaxf(md, fabsf(x[i] - y[i]));
		CHECKF(md < 1e-4f, "rotation composition differs by %g", (double)md);
		/* rope_freq_scale override 1 turns YaRN's interpolation off */
		rn_rope_init(&r, m, 0, 1.0f);
		CHECK(r.freq_scale == 1.0f);
	}
	free_model(m);
	free(img);
	return check_done();
}
