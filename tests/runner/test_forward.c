/* tests/runner/test_forward.c — the CPU backend's forward pass and KV operations on tiny seeded models.
 *
 * 1. For llama, qwen2 and qwen3 (F32 and F16 weights, untied and tied), the logits of a batch equal those of
 *    a plain double-precision implementation of the architecture written here from the math (RMSNorm, QKV
 *    bias, per-head QK-norm, RoPE normal/NeoX, GQA, causal softmax attention, SwiGLU), to f16 rounding.
 * 2. The same tokens fed one at a time, interleaved with a second sequence, or in several batches give the
 *    same logits; kv_remove + re-feed, kv_copy, and context shift (remove + shift with key re-rotation)
 *    give the logits of the equivalent fresh sequence; q8_0 KV stays close to f16.
 * 3. Bad batches are refused (token, sequence, position, size, full context) and leave the cache as it was.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner/backend.h"
#include "runner/model.h"
#include "tests/check.h"
#include "tests/runner/tinymodel.h"

static uint8_t *imgs[64];
static int n_imgs;

static struct rn_model *load(const struct tiny_opts *o)
{
	size_t size = 0;
	uint8_t *img = tiny_model(o, &size);
	CHECK(img != NULL);
	if (!img)
		return NULL;
	imgs[n_imgs++] = img;
	struct gguf_error ge = {0};
	struct gguf_file *f = gguf_parse(img, size, &ge);
	CHECKF(f != NULL, "%s", ge.msg);
	struct rn_error err = {0};
	struct rn_model *m = f ? rn_model_load(f, &err) : NULL;
	CHECKF(m != NULL, "%s", err.msg);
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

/* ---------------------------------------------------------------------------------------------------- */
/* reference implementation, double precision */

static double *mat(const struct rn_tensor *t)
{
	int64_t n = t->ne[0] * t->ne[1];
	double *d = malloc((size_t)n * sizeof *d);
	for (int64_t i = 0; i < n; i++)
		d[i] = t->type == GGUF_TYPE_F16 ? gguf_f16_to_f32(((const uint16_t *)t->data)[i]) : ((const float *)t->data)[i];
	return d;
}

/* y[r] = sum_c W[r][c] x[c] */
static void matvec(const struct rn_tensor *t, const double *x, double *y)
{
	double *w = mat(t);
	for (int64_t r = 0; r < t->ne[1]; r++) {
		double s = 0;
		for (int64_t c = 0; c < t->ne[0]; c++)
			s += w[r * t->ne[0] + c] * x[c];
		y[r] = s;
	}
	free(w);
}

static void rmsnorm(double *y, const double *x, const float *w, int n, double eps)
{
	double s = 0;
	for (int i = 0; i < n; i++)
		s += x[i] * x[i];
	double k = 1.0 / sqrt(s / n + eps);
	for (int i = 0; i < n; i++)
		y[i] = x[i] * k * w[i];
}

static void rope(double *x, int pos, int hd, double base, bool neox)
{
	for (int i = 0; i < hd / 2; i++) {
		double th = pos * pow(base, -2.0 * i / hd), c = cos(th), s = sin(th);
		int a = neox ? i : 2 * i, b = neox ? i + hd / 2 : 2 * i + 1;
		double x0 = x[a], x1 = x[b];
		x[a] = x0 * c - x1 * s;
		x[b] = x0 * s + x1 * c;
	}
}

static void reference(const struct rn_model *m, const int32_t *tok, int n, float *logits)
{
	const struct rn_hparams *hp = &m->hp;
	const int E = hp->n_embd, H = hp->n_head, HK = hp->n_head_kv, D = hp->head_dim, F = hp->n_ff, V = hp->n_vocab;
	const int Q = H * D, KV = HK * D;
	double *x = calloc((size_t)n * E, sizeof *x), *xn = malloc((size_t)E * sizeof *xn);
	double *q = malloc((size_t)n * Q * sizeof *q), *k = malloc((size_t)n * KV * sizeof *k);
	double *v = malloc((size_t)n * KV * sizeof *v), *att = malloc((size_t)n * Q * sizeof *att);
	double *tmp = malloc((size_t)(E > F ? E : F) * sizeof *tmp), *g = malloc((size_t)F * sizeof *g);
	double *u = malloc((size_t)F * sizeof *u), *sc = malloc((size_t)n * sizeof *sc), *lg = malloc((size_t)V * sizeof *lg);
	double *emb = mat(&m->tok_embd);
	for (int i = 0; i < n; i++)
		memcpy(x + (size_t)i * E, emb + (size_t)tok[i] * E, (size_t)E * sizeof *x);
	free(emb);
	for (int l = 0; l < hp->n_layer; l++) {
		const struct rn_layer *L = &m->layers[l];
		for (int i = 0; i < n; i++) {
			rmsnorm(xn, x + (size_t)i * E, L->attn_norm, E, hp->norm_eps);
			matvec(&L->wq, xn, q + (size_t)i * Q);
			matvec(&L->wk, xn, k + (size_t)i * KV);
			matvec(&L->wv, xn, v + (size_t)i * KV);
			for (int j = 0; j < Q && L->bq; j++)
				q[(size_t)i * Q + j] += L->bq[j];
			for (int j = 0; j < KV && L->bk; j++)
				k[(size_t)i * KV + j] += L->bk[j], v[(size_t)i * KV + j] += L->bv[j];
			for (int h = 0; h < H; h++) {
				double *qh = q + (size_t)i * Q + (size_t)h * D;
				if (L->q_norm)
					rmsnorm(qh, qh, L->q_norm, D, hp->norm_eps);
				rope(qh, i, D, hp->rope_freq_base, hp->rope_type == RN_ROPE_NEOX);
			}
			for (int h = 0; h < HK; h++) {
				double *kh = k + (size_t)i * KV + (size_t)h * D;
				if (L->k_norm)
					rmsnorm(kh, kh, L->k_norm, D, hp->norm_eps);
				rope(kh, i, D, hp->rope_freq_base, hp->rope_type == RN_ROPE_NEOX);
			}
		}
		for (int i = 0; i < n; i++)
			for (int h = 0; h < H; h++) {
				int gk = h / (H / HK);
				double mx = -1e300, sum = 0;
				for (int j = 0; j <= i; j++) {
					double s = 0;
					for (int d = 0; d < D; d++)
						s += q[(size_t)i * Q + h * D + d] * k[(size_t)j * KV + gk * D + d];
					sc[j] = s / sqrt((double)D);
					mx = sc[j] > mx ? sc[j] : mx;
				}
				for (int j = 0; j <= i; j++)
					sum += (sc[j] = exp(sc[j] - mx));
				for (int d = 0; d < D; d++) {
					double o = 0;
					for (int j = 0; j <= i; j++)
						o += sc[j] / sum * v[(size_t)j * KV + gk * D + d];
					att[(size_t)i * Q + h * D + d] = o;
				}
			}
		for (int i = 0; i < n; i++) {
			double *xi = x + (size_t)i * E;
			matvec(&L->wo, att + (size_t)i * Q, tmp);
			for (int j = 0; j < E; j++)
				xi[j] += tmp[j] + (L->bo ? L->bo[j] : 0);
			rmsnorm(xn, xi, L->ffn_norm, E, hp->norm_eps);
			matvec(&L->w_gate, xn, g);
			matvec(&L->w_up, xn, u);
			for (int j = 0; j < F; j++)
				g[j] = g[j] / (1 + exp(-g[j])) * u[j];
			matvec(&L->w_down, g, tmp);
			for (int j = 0; j < E; j++)
				xi[j] += tmp[j];
		}
	}
	for (int i = 0; i < n; i++) {
		rmsnorm(xn, x + (size_t)i * E, m->output_norm, E, hp->norm_eps);
		matvec(&m->output, xn, lg);
		for (int j = 0; j < V; j++)
			logits[(size_t)i * V + j] = (float)lg[j];
	}
	free(x), free(xn), free(q), free(k), free(v), free(att), free(tmp), free(g), free(u), free(sc), free(lg);
}

/* ---------------------------------------------------------------------------------------------------- */

static float max_diff(const float *a, const float *b, size_t n)
{
	float m = 0;
	for (size_t i = 0; i < n; i++)
		m = fmaxf(m, fabsf(a[i] - b[i]));
	return m;
}

static float max_abs(const float *a, size_t n)
{
	float m = 0;
	for (size_t i = 0; i < n; i++)
		m = fmaxf(m, fabsf(a[i]));
	return m;
}

static struct rn_backend *open_backend(const struct rn_model *m, int n_seq, int n_ctx, int n_batch, enum rn_kv_type kv)
{
	struct rn_load_params p;
	rn_load_params_init(&p);
	p.n_seq = n_seq;
	p.n_ctx = n_ctx;
	p.n_batch = n_batch;
	p.n_threads = 2;
	p.kv_type = kv;
	p.backend = rn_backend_find("cpu");
	struct rn_error err = {0};
	struct rn_backend *b = rn_backend_load(m, &p, &err);
	CHECKF(b != NULL, "%s", err.msg);
	return b;
}

/* Feed tokens [0, n) of seq at positions pos0.. in one batch, logits of every row into out. */
static int feed(struct rn_backend *b, int seq, const int32_t *tok, int n, int pos0, float *out, bool all)
{
	int32_t pos[64], sq[64];
	uint8_t want[64];
	for (int i = 0; i < n; i++) {
		pos[i] = pos0 + i;
		sq[i] = seq;
		want[i] = all || i == n - 1;
	}
	struct rn_batch bt = {.n_tokens = n, .token = tok, .pos = pos, .seq = sq, .want = want};
	struct rn_outputs o = {.logits = out};
	struct rn_error err = {0};
	int rc = rn_backend_forward(b, &bt, &o, &err);
	CHECKF(rc == RN_OK, "%s", err.msg);
	return rc;
}

static const int32_t toks[12] = {5, 17, 99, 3, 64, 127, 0, 42, 42, 8, 77, 31};

static void test_against_reference(const char *arch, uint32_t type, bool tied)
{
	struct tiny_opts o;
	tiny_defaults(&o, arch);
	o.mat_type = type;
	o.tied = tied;
	o.seed = 7;
	struct rn_model *m = load(&o);
	if (!m)
		return;
	const int V = m->hp.n_vocab, n = 12;
	float *ref = malloc((size_t)n * V * sizeof *ref), *got = malloc((size_t)n * V * sizeof *got);
	reference(m, toks, n, ref);
	struct rn_backend *b = open_backend(m, 1, 64, 32, RN_KV_F16);
	if (b && feed(b, 0, toks, n, 0, got, true) == RN_OK) {
		float d = max_diff(ref, got, (size_t)n * V), s = max_abs(ref, (size_t)n * V);
		CHECKF(d < 0.01f * s + 0.01f, "%s %s%s: max |logit diff| %g (max |logit| %g)", arch, gguf_type_name(type),
		       tied ? " tied" : "", (double)d, (double)s);
		int agree = 0;
		for (int i = 0; i < n; i++) {
			int a = 0, c = 0;
			for (int j = 1; j < V; j++) {
				if (ref[(size_t)i * V + j] > ref[(size_t)i * V + a])
					a = j;
				if (got[(size_t)i * V + j] > got[(size_t)i * V + c])
					c = j;
			}
			agree += a == c;
		}
		CHECKF(agree == n, "%s: top-1 agrees at %d of %d positions", arch, agree, n);
		fprintf(stderr, "%s %s%s: max |logit diff| vs double reference %.2e (max |logit| %.2f)\n", arch,
			gguf_type_name(type), tied ? " tied" : "", (double)d, (double)s);
	}
	rn_backend_free(b);
	free(ref);
	free(got);
	free_model(m);
}

/* use_mmap false: the CPU backend copies the matrix weights (huge pages) and lets the file mapping's pages go.
 * The logits must equal the mapped backend's to the bit, and the mapping must still read the same afterwards
 * (a third, mapped backend opened after the copy agrees too). The model is a real file here, opened mapped. */
static void test_no_mmap(const char *arch, uint32_t type)
{
	struct tiny_opts o;
	tiny_defaults(&o, arch);
	o.mat_type = type;
	o.seed = 11;
	o.dim = 256; /* weights of several pages */
	o.ff = 512;
	if (type != GGUF_TYPE_F32 && type != GGUF_TYPE_F16)
		o.dim = 288; /* rows of 9 blocks: a repacked group of 8 and a plain tail (runner/cpu/kernels.h R8) */
	size_t size = 0;
	uint8_t *img = tiny_model(&o, &size);
	CHECK(img != NULL);
	char path[] = "/tmp/orun-test-nommap-XXXXXX";
	int fd = img ? mkstemp(path) : -1;
	CHECK(fd >= 0);
	if (fd < 0) {
		free(img);
		return;
	}
	CHECK(write(fd, img, size) == (ssize_t)size);
	close(fd);
	free(img);
	struct rn_error err = {0};
	struct rn_model *m = rn_model_open(path, &err);
	CHECKF(m != NULL, "%s", err.msg);
	if (!m) {
		unlink(path);
		return;
	}
	const int V = m->hp.n_vocab, n = 12;
	float *a = malloc((size_t)n * V * sizeof *a), *b = malloc((size_t)n * V * sizeof *b),
	      *c = malloc((size_t)n * V * sizeof *c);
	struct rn_load_params p;
	rn_load_params_init(&p);
	p.n_seq = 1;
	p.n_ctx = 64;
	p.n_batch = 32;
	p.n_threads = 2;
	p.backend = rn_backend_find("cpu");
	struct rn_backend *mapped = rn_backend_load(m, &p, &err);
	CHECKF(mapped != NULL, "%s", err.msg);
	p.no_mmap = true;
	struct rn_backend *copied = rn_backend_load(m, &p, &err);
	CHECKF(copied != NULL, "%s", err.msg);
	CHECK(copied && mapped && rn_backend_memory(copied) > rn_backend_memory(mapped));
	/* the copy is reported, and it is all the difference: the model occupies the same either way */
	CHECK(copied && mapped && rn_backend_copied(copied) > 0 && rn_backend_copied(mapped) == 0 &&
	      rn_backend_memory(copied) - rn_backend_copied(copied) == rn_backend_memory(mapped));
	p.no_mmap = false;
	struct rn_backend *after = rn_backend_load(m, &p, &err);
	CHECKF(after != NULL, "%s", err.msg);
	if (a && b && c && mapped && copied && after && feed(mapped, 0, toks, n, 0, a, true) == RN_OK &&
	    feed(copied, 0, toks, n, 0, b, true) == RN_OK && feed(after, 0, toks, n, 0, c, true) == RN_OK) {
		size_t finite = 0;
		for (size_t i = 0; i < (size_t)n * V; i++)
			finite += isfinite(a[i]) && a[i] != 0.0f;
		CHECKF(finite == (size_t)n * V, "%s %s: %zu of %zu logits finite and nonzero", arch, gguf_type_name(type),
		       finite, (size_t)n * V);
		CHECKF(memcmp(a, b, (size_t)n * V * sizeof *a) == 0, "%s %s: copied weights change the logits", arch,
		       gguf_type_name(type));
		CHECKF(memcmp(a, c, (size_t)n * V * sizeof *a) == 0, "%s %s: the mapping reads differently after the copy",
		       arch, gguf_type_name(type));
		/* one-token steps too (the decode kernels) */
		feed(mapped, 0, toks, 1, n, a, true);
		feed(copied, 0, toks, 1, n, b, true);
		CHECK(memcmp(a, b, (size_t)V * sizeof *a) == 0);
	}
	rn_backend_free(mapped);
	rn_backend_free(copied);
	rn_backend_free(after);
	free(a);
	free(b);
	free(c);
	rn_model_free(m); /* closes the file it opened */
	unlink(path);
}

static void test_kv_operations(const char *arch, enum rn_kv_type kvt)
{
	struct tiny_opts o;
	tiny_defaults(&o, arch);
	o.seed = 11;
	if (kvt == RN_KV_Q8_0)
		o.dim = 128; /* q8_0 rows need a head size that is a multiple of 32 */
	struct rn_model *m = load(&o);
	if (!m)
		return;
	const int V = m->hp.n_vocab;
	float *all = malloc(12 * (size_t)V * sizeof(float)), *one = malloc((size_t)V * sizeof(float));
	float *x = malloc((size_t)V * sizeof(float));
	struct rn_backend *b = open_backend(m, 3, 32, 16, kvt);
	struct rn_error err = {0};
	if (!b)
		goto out;
	const float tol = kvt == RN_KV_Q8_0 ? 0.05f : 2e-3f;
	/* one batch vs one token at a time in sequence 1 */
	feed(b, 0, toks, 12, 0, all, true);
	for (int i = 0; i < 12; i++) {
		feed(b, 1, toks + i, 1, i, one, false);
		float d = max_diff(one, all + (size_t)i * V, (size_t)V);
		CHECKF(d < tol, "%s: token %d alone differs from the batch by %g", arch, i, (double)d);
	}
	CHECK_EQ_INT(rn_backend_kv_used(b, 0), 12);
	CHECK_EQ_INT(rn_backend_kv_next_pos(b, 1), 12);

	/* an interleaved batch of two sequences (2 and a continuation of 0) */
	rn_backend_kv_clear(b, 2);
	CHECK(rn_backend_kv_remove(b, 0, 6, -1, &err) == RN_OK);
	CHECK_EQ_INT(rn_backend_kv_used(b, 0), 6);
	{
		int32_t t[8], p[8], s[8];
		uint8_t w[8];
		for (int i = 0; i < 4; i++) {
			t[2 * i] = toks[6 + i], p[2 * i] = 6 + i, s[2 * i] = 0, w[2 * i] = 1;
			t[2 * i + 1] = toks[i], p[2 * i + 1] = i, s[2 * i + 1] = 2, w[2 * i + 1] = 1;
		}
		float *out = malloc(8 * (size_t)V * sizeof(float));
		struct rn_batch bt = {.n_tokens = 8, .token = t, .pos = p, .seq = s, .want = w};
		struct rn_outputs ob = {.logits = out};
		CHECK(rn_backend_forward(b, &bt, &ob, &err) == RN_OK);
		for (int i = 0; i < 4; i++) {
			float d0 = max_diff(out + (size_t)(2 * i) * V, all + (size_t)(6 + i) * V, (size_t)V);
			float d2 = max_diff(out + (size_t)(2 * i + 1) * V, all + (size_t)i * V, (size_t)V);
			CHECKF(d0 < tol && d2 < tol, "%s: interleaved row %d differs (%g, %g)", arch, i, (double)d0, (double)d2);
		}
		free(out);
	}

	/* kv_copy: sequence 2 becomes the first 6 cells of sequence 1, then continues like it */
	CHECK(rn_backend_kv_copy(b, 1, 2, 6, &err) == RN_OK);
	CHECK_EQ_INT(rn_backend_kv_used(b, 2), 6);
	feed(b, 2, toks + 6, 1, 6, one, false);
	CHECKF(max_diff(one, all + 6 * (size_t)V, (size_t)V) < tol, "%s: after kv_copy", arch);
	/* the copy shares sequence 1's block (copy-on-write): another token written at sequence 2's cell 7 must
	 * leave sequence 1's cells alone, whose 8th token then gives the one-batch logits to the bit */
	feed(b, 2, toks, 1, 7, one, false);
	CHECK(rn_backend_kv_remove(b, 1, 7, -1, &err) == RN_OK);
	feed(b, 1, toks + 7, 1, 7, one, false);
	CHECKF(memcmp(one, all + 7 * (size_t)V, (size_t)V * sizeof *one) == 0, "%s: sequence 1 changed by a write into "
	       "its copy", arch);

	/* a removal without a shift leaves a gap in positions: still valid, and the batch rules still hold */
	CHECK(rn_backend_kv_remove(b, 0, 3, 4, &err) == RN_OK);
	CHECK_EQ_INT(rn_backend_kv_used(b, 0), 9);

	/* bad batches change nothing */
	int used = rn_backend_kv_used(b, 0);
	int32_t bad_tok = V, p0 = 20, s0 = 0, s9 = 9, p_old = 2;
	struct rn_batch bt = {.n_tokens = 1, .token = &bad_tok, .pos = &p0, .seq = &s0};
	struct rn_outputs ob = {.logits = x};
	CHECK(rn_backend_forward(b, &bt, &ob, &err) == RN_ERR_INVALID_ARG);
	CHECK(strstr(err.msg, "outside the vocabulary") != NULL);
	bt.token = &toks[0];
	bt.seq = &s9;
	CHECK(rn_backend_forward(b, &bt, &ob, &err) == RN_ERR_INVALID_ARG);
	bt.seq = &s0;
	bt.pos = &p_old;
	CHECK(rn_backend_forward(b, &bt, &ob, &err) == RN_ERR_INVALID_ARG);
	CHECK(strstr(err.msg, "not after its last position") != NULL);
	bt.n_tokens = 0;
	CHECK(rn_backend_forward(b, &bt, &ob, &err) == RN_ERR_INVALID_ARG);
	CHECK_EQ_INT(rn_backend_kv_used(b, 0), used);
	CHECK(rn_backend_kv_shift(b, 0, 5, -1, -100, &err) == RN_ERR_INVALID_ARG);
	CHECK(rn_backend_kv_remove(b, 7, 0, -1, &err) == RN_ERR_INVALID_ARG);
	/* fill sequence 0 to its 32 cells, then one more is RN_ERR_CONTEXT */
	int32_t pos_next = rn_backend_kv_next_pos(b, 0);
	while (rn_backend_kv_used(b, 0) < 32) {
		int32_t t = 1, p = pos_next++;
		struct rn_batch b1 = {.n_tokens = 1, .token = &t, .pos = &p, .seq = &s0};
		CHECK(rn_backend_forward(b, &b1, &ob, &err) == RN_OK);
	}
	{
		int32_t t = 1, p = pos_next;
		struct rn_batch b1 = {.n_tokens = 1, .token = &t, .pos = &p, .seq = &s0};
		CHECK(rn_backend_forward(b, &b1, &ob, &err) == RN_ERR_CONTEXT);
		CHECK(strstr(err.msg, "is full") != NULL);
	}
	CHECK(rn_backend_memory(b) > 0);
out:
	rn_backend_free(b);
	free(all);
	free(one);
	free(x);
	free_model(m);
}

/* memory() counts the slots' KV cache, the scratch and a weight copy, not the prefix cache's blocks beyond the
 * slots (rn_backend_cache_stats reports those): the same with a cache budget of 0 and of 64 MiB. */
static void test_memory(void)
{
	struct tiny_opts o;
	tiny_defaults(&o, "qwen2");
	struct rn_model *m = load(&o);
	if (!m)
		return;
	uint64_t mem[2] = {0, 0};
	for (int i = 0; i < 2; i++) {
		struct rn_load_params p;
		rn_load_params_init(&p);
		p.n_seq = 3;
		p.n_ctx = 100; /* 4 blocks a slot, the last one partly used */
		p.n_batch = 16;
		p.n_threads = 2;
		p.cache_bytes = i == 0 ? 0 : 64ll << 20;
		p.backend = rn_backend_find("cpu");
		struct rn_error err = {0};
		struct rn_backend *b = rn_backend_load(m, &p, &err);
		CHECKF(b != NULL, "%s", err.msg);
		mem[i] = b ? rn_backend_memory(b) : 0;
		rn_backend_free(b);
	}
	const uint64_t slots = (uint64_t)m->hp.n_layer * 2 * 3 * 4 * RN_KV_BLOCK *
			       rn_kv_row_bytes(RN_KV_F16, m->hp.n_head_kv * m->hp.head_dim);
	CHECKF(mem[0] == mem[1], "memory() with a cache of 0: %llu bytes, of 64 MiB: %llu", (unsigned long long)mem[0],
	       (unsigned long long)mem[1]);
	CHECKF(mem[0] > slots && mem[0] < slots + (8u << 20), "memory() %llu bytes for %llu bytes of slots' KV",
	       (unsigned long long)mem[0], (unsigned long long)slots);
	free_model(m);
}

/* Context shift: with one layer a token's key and value depend only on the token and its position, so a
 * cache that dropped positions [2, 5) and moved [5, 12) down by 3 (keys re-rotated) must give the next token
 * the same logits as a fresh sequence of tokens 0, 1, 5..11. (With more layers the kept tokens' states still
 * remember the dropped ones, which is why a context shift is an approximation.) */
static void test_shift(const char *arch, enum rn_kv_type kvt, float yarn)
{
	struct tiny_opts o;
	tiny_defaults(&o, arch);
	o.layers = 1;
	o.seed = 13;
	if (kvt == RN_KV_Q8_0)
		o.dim = 128;
	if (yarn > 0) {
		o.rope_scaling = "yarn";
		o.rope_factor = yarn;
		o.rope_orig_ctx = 8;
	}
	struct rn_model *m = load(&o);
	if (!m)
		return;
	const int V = m->hp.n_vocab;
	float *all = malloc(12 * (size_t)V * sizeof(float)), *one = malloc((size_t)V * sizeof(float));
	struct rn_backend *b = open_backend(m, 2, 32, 16, kvt);
	struct rn_error err = {0};
	if (b) {
		feed(b, 0, toks, 12, 0, all, true);
		CHECK(rn_backend_kv_remove(b, 0, 2, 5, &err) == RN_OK);
		CHECK(rn_backend_kv_shift(b, 0, 5, -1, -3, &err) == RN_OK);
		CHECK_EQ_INT(rn_backend_kv_next_pos(b, 0), 9);
		int32_t nxt = 50;
		feed(b, 0, &nxt, 1, 9, one, false);
		int32_t fresh[10] = {toks[0], toks[1], toks[5], toks[6], toks[7], toks[8], toks[9], toks[10], toks[11], 50};
		feed(b, 1, fresh, 10, 0, all, true);
		float d = max_diff(one, all + 9 * (size_t)V, (size_t)V);
		float tol = kvt == RN_KV_Q8_0 ? 0.05f : 5e-3f;
		CHECKF(d < tol, "%s%s: after context shift, logits differ from the fresh sequence by %g", arch,
		       yarn > 0 ? " (yarn)" : "", (double)d);
	}
	rn_backend_free(b);
	free(all);
	free(one);
	free_model(m);
}

/* A single decoding row at long context splits its cells between threads (split-K); it must give what the
 * whole-batch path and the double-precision reference give. */
static void test_long_context(const char *arch, enum rn_kv_type kvt)
{
	struct tiny_opts o;
	tiny_defaults(&o, arch);
	o.seed = 17;
	if (kvt == RN_KV_Q8_0)
		o.dim = 128;
	o.ctx = 1024;
	struct rn_model *m = load(&o);
	if (!m)
		return;
	const int V = m->hp.n_vocab, N = 301;
	int32_t *tk = malloc(N * sizeof *tk);
	for (int i = 0; i < N; i++)
		tk[i] = (int32_t)((i * 37 + 11) % V);
	float *ref = malloc((size_t)N * V * sizeof *ref), *a = malloc((size_t)V * sizeof *a), *bb = malloc((size_t)V * sizeof *bb);
	reference(m, tk, N, ref);
	struct rn_backend *be = open_backend(m, 2, 512, 512, kvt);
	if (be) {
		int32_t pos[512], sq[512];
		for (int i = 0; i < N; i++)
			pos[i] = i, sq[i] = 0;
		struct rn_batch bt = {.n_tokens = N, .token = tk, .pos = pos, .seq = sq};
		struct rn_outputs out = {.logits = a};
		struct rn_error err = {0};
		CHECK(rn_backend_forward(be, &bt, &out, &err) == RN_OK);
		for (int i = 0; i < N; i++)
			sq[i] = 1;
		bt.n_tokens = N - 1;
		bt.seq = sq;
		out.logits = bb;
		CHECK(rn_backend_forward(be, &bt, &out, &err) == RN_OK);
		struct rn_batch one = {.n_tokens = 1, .token = tk + N - 1, .pos = pos + N - 1, .seq = sq};
		CHECK(rn_backend_forward(be, &one, &out, &err) == RN_OK);
		float tol = kvt == RN_KV_Q8_0 ? 0.05f : 2e-3f;
		float d = max_diff(a, bb, (size_t)V), dr = max_diff(a, ref + (size_t)(N - 1) * V, (size_t)V);
		CHECKF(d < tol, "%s: split-K decode differs from the batch by %g", arch, (double)d);
		CHECKF(dr < (kvt == RN_KV_Q8_0 ? 0.2f : 0.02f), "%s: 301st token differs from the reference by %g", arch, (double)dr);
	}
	rn_backend_free(be);
	free(tk);
	free(ref);
	free(a);
	free(bb);
	free_model(m);
}

/* The hidden state output is the normalised final state: logits = output . hidden. */
static void test_hidden(void)
{
	struct tiny_opts o;
	tiny_defaults(&o, "qwen2");
	struct rn_model *m = load(&o);
	if (!m)
		return;
	const int V = m->hp.n_vocab, E = m->hp.n_embd;
	struct rn_backend *b = open_backend(m, 1, 16, 8, RN_KV_F16);
	float *lg = malloc((size_t)V * sizeof *lg), *hid = malloc((size_t)E * sizeof *hid);
	int32_t pos[3] = {0, 1, 2}, seq[3] = {0, 0, 0};
	struct rn_batch bt = {.n_tokens = 3, .token = toks, .pos = pos, .seq = seq};
	struct rn_outputs ob = {.logits = lg, .hidden = hid};
	struct rn_error err = {0};
	CHECK(b && rn_backend_forward(b, &bt, &ob, &err) == RN_OK);
	const float *w = m->output.data;
	float md = 0;
	for (int r = 0; r < V; r++) {
		double s = 0;
		for (int c = 0; c < E; c++)
			s += (double)w[(size_t)r * E + c] * hid[c];
		md = fmaxf(md, fabsf((float)s - lg[r]));
	}
	CHECKF(md < 1e-3f, "logits differ from output . hidden by %g", (double)md);
	rn_backend_free(b);
	free(lg);
	free(hid);
	free_model(m);
}

int main(void)
{
	CHECK(rn_backend_find("cpu") == 0);
	CHECK(rn_backend_find("tpu") == -1);
	test_against_reference("llama", GGUF_TYPE_F32, false);
	test_against_reference("qwen2", GGUF_TYPE_F32, false);
	test_against_reference("qwen3", GGUF_TYPE_F32, false);
	test_against_reference("qwen3", GGUF_TYPE_F16, true);
	test_against_reference("llama", GGUF_TYPE_F16, true);
	test_kv_operations("llama", RN_KV_F16);
	test_kv_operations("qwen2", RN_KV_F16);
	test_kv_operations("qwen3", RN_KV_F16);
	test_kv_operations("qwen3", RN_KV_Q8_0);
	test_shift("llama", RN_KV_F16, 0);
	test_shift("qwen2", RN_KV_F16, 0);
	test_shift("qwen3", RN_KV_F16, 0);
	test_shift("qwen3", RN_KV_Q8_0, 0);
	test_shift("qwen3", RN_KV_F16, 4.0f);
	test_long_context("qwen2", RN_KV_F16);
	test_long_context("llama", RN_KV_Q8_0);
	test_hidden();
	test_memory();
	test_no_mmap("qwen2", GGUF_TYPE_F16);
	test_no_mmap("llama", GGUF_TYPE_F32);
	test_no_mmap("qwen2", GGUF_TYPE_Q5_0); /* repacked on the copy */
	test_no_mmap("llama", GGUF_TYPE_Q4_1);
	for (int i = 0; i < n_imgs; i++)
		free(imgs[i]);
	return check_done();
}
