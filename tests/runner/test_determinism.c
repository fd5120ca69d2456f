/* tests/runner/test_determinism.c — a token's logits on the CPU backend do not depend on how its prefix reached
 * the cache nor on what else its batch holds: bit for bit (memcmp), the logits of a prompt evaluated in one batch
 * equal those of the same tokens fed one at a time (the one-row path and, past SPLITK_MIN_CELLS cells with two
 * threads, the split-K path), in chunks of several sizes, interleaved with another sequence's tokens in the same
 * batches (a decode step beside a prefill, two prefills together), after rn_backend_kv_copy of a prefix from
 * another sequence (shared blocks, copy-on-write), and after attaching a prefix from the prefix cache. On tiny
 * seeded models (F32, F16 and quantized weights; f16 and q8_0 KV; head sizes of 20, 32 and 64, grouped-query
 * heads), and on the real test models when they are installed.
 */
#include "config.h"


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/backend.h"
#include "runner/model.h"
#include "tests/check.h"
#include "tests/runner/tinymodel.h"
#include "tests/testmodel.h"

#define N_TOK 300   /* > SPLITK_MIN_CELLS (runner/cpu/forward.c): one-token steps past 256 cells split K */
#define MAX_ROWS 512

struct run {
	const char *name; /* model, for messages */
	struct rn_backend *b;
	int V;
	int32_t tk[N_TOK], other[N_TOK]; /* the prompt under test, and another sequence's tokens */
	bool check[N_TOK];               /* positions whose logits are compared */
	int slot[N_TOK];                 /* index of a checked position's row in ref */
	float *ref;                      /* [checked positions][V]: the one-batch evaluation */
	float *out;                      /* [MAX_ROWS][V] */
	int mismatches;
};

/* One forward call of rows (seq, position, token); the rows of seq `main_seq` that are checked positions are
 * compared with the reference (label names the variant in messages). */
static void step(struct run *R, const char *label, int n, const int32_t *seq, const int32_t *pos, const int32_t *tok,
		 int main_seq)
{
	uint8_t want[MAX_ROWS];
	int n_out = 0;
	for (int i = 0; i < n; i++) {
		want[i] = seq[i] == main_seq && R->check[pos[i]];
		n_out += want[i];
	}
	if (n_out == 0) { /* the backend outputs the last row then; keep its logits out of the comparison */
		want[n - 1] = 1;
	}
	struct rn_batch bt = {.n_tokens = n, .token = tok, .pos = pos, .seq = seq, .want = want};
	struct rn_outputs o = {.logits = R->out};
	struct rn_error err = {0};
	int rc = rn_backend_forward(R->b, &bt, &o, &err);
	CHECKF(rc == RN_OK, "%s %s: %s", R->name, label, err.msg);
	if (rc != RN_OK || n_out == 0)
		return;
	for (int i = 0, k = 0; i < n; i++) {
		if (!want[i])
			continue;
		const float *got = R->out + (size_t)k++ * (size_t)R->V;
		const float *ref = R->ref + (size_t)R->slot[pos[i]] * (size_t)R->V;
		if (memcmp(got, ref, (size_t)R->V * sizeof *got) != 0) {
			if (R->mismatches++ < 8) {
				float md = 0;
				for (int j = 0; j < R->V; j++) {
					float d = got[j] > ref[j] ? got[j] - ref[j] : ref[j] - got[j];
					md = d > md ? d : md;
				}
				CHECKF(false, "%s %s: logits at position %d differ from the one-batch evaluation (max %g)",
				       R->name, label, pos[i], (double)md);
			} else {
				CHECK(false);
			}
		}
	}
}

/* Tokens [p0, p1) of the prompt into seq, chunk rows per call. */
static void feed_chunks(struct run *R, const char *label, int seq, int p0, int p1, int chunk)
{
	int32_t s[MAX_ROWS], p[MAX_ROWS], t[MAX_ROWS];
	for (int i = p0; i < p1; i += chunk) {
		int n = p1 - i < chunk ? p1 - i : chunk;
		for (int j = 0; j < n; j++)
			s[j] = seq, p[j] = i + j, t[j] = R->tk[i + j];
		step(R, label, n, s, p, t, seq);
	}
}

/* The prompt into seq a chunk at a time and another sequence's tokens into seq2 ochunk at a time, the rows of
 * each call interleaved (first, second, first, ...; the longer run's rest at the end). */
static void feed_beside(struct run *R, const char *label, int seq, int chunk, int seq2, int ochunk)
{
	int32_t s[MAX_ROWS], p[MAX_ROWS], t[MAX_ROWS];
	rn_backend_kv_clear(R->b, seq);
	rn_backend_kv_clear(R->b, seq2);
	for (int i = 0, o = 0; i < N_TOK; i += chunk, o += ochunk) {
		int a = N_TOK - i < chunk ? N_TOK - i : chunk, b = N_TOK - o < ochunk ? N_TOK - o : ochunk, n = 0;
		if (b < 0)
			b = 0;
		for (int j = 0; j < a || j < b; j++) {
			if (j < a)
				s[n] = seq, p[n] = i + j, t[n++] = R->tk[i + j];
			if (j < b)
				s[n] = seq2, p[n] = o + j, t[n++] = R->other[o + j];
		}
		step(R, label, n, s, p, t, seq);
	}
}

/* Every variant against the one-batch evaluation, on a backend of 4 sequences (full: every chunk size and copy
 * length; else a few, for the real models, whose batches take seconds). */
static void run_variants(struct run *R, bool full)
{
	char label[64];
	/* one token at a time: the one-row path, then split-K past SPLITK_MIN_CELLS */
	rn_backend_kv_clear(R->b, 1);
	feed_chunks(R, "token by token", 1, 0, N_TOK, 1);
	static const int chunks[] = {2, 7, 8, 31, 32, 33, 100};
	for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
		if (!full && chunks[c] != 7 && chunks[c] != 33)
			continue;
		snprintf(label, sizeof label, "chunks of %d", chunks[c]);
		rn_backend_kv_clear(R->b, 1);
		feed_chunks(R, label, 1, 0, N_TOK, chunks[c]);
	}
	/* a decode step beside another sequence's prefill, a prefill beside a decode step, two prefills */
	feed_beside(R, "one token beside a chunk of 7", 2, 1, 3, 7);
	feed_beside(R, "chunks of 9 beside one token", 2, 9, 3, 1);
	if (full)
		feed_beside(R, "chunks of 40 beside chunks of 13", 3, 40, 1, 13);
	/* a prefix copied from sequence 0 (which holds the whole prompt), the rest in one batch or one at a time;
	 * lengths inside, at and across the KV blocks of 32 cells, and past SPLITK_MIN_CELLS */
	static const int copied[] = {1, 31, 32, 33, 64, 257};
	for (size_t c = 0; c < sizeof copied / sizeof copied[0]; c++) {
		if (!full && copied[c] != 33 && copied[c] != 257)
			continue;
		struct rn_error err = {0};
		for (int by_one = 0; by_one < 2; by_one++) {
			snprintf(label, sizeof label, "after kv_copy of %d cells%s", copied[c], by_one ? ", then one by one" : "");
			CHECKF(rn_backend_kv_copy(R->b, 0, 2, copied[c], &err) == RN_OK, "%s: %s", label, err.msg);
			CHECK_EQ_INT(rn_backend_kv_used(R->b, 2), copied[c]);
			feed_chunks(R, label, 2, copied[c], by_one ? (copied[c] + 40 < N_TOK ? copied[c] + 40 : N_TOK) : N_TOK,
				    by_one ? 1 : MAX_ROWS);
		}
	}
	/* a prefix taken from the prefix cache (sequence 0's blocks, published after the reference), the rest in
	 * one batch or one at a time */
	const size_t cached = rn_backend_kv_match(R->b, R->tk, N_TOK);
	CHECKF(cached == N_TOK / RN_KV_BLOCK * RN_KV_BLOCK, "%s: %zu tokens cached of the %d published", R->name, cached,
	       N_TOK / RN_KV_BLOCK * RN_KV_BLOCK);
	static const size_t attached[] = {32, 256, 288};
	for (size_t c = 0; c < sizeof attached / sizeof attached[0]; c++) {
		if (attached[c] > cached || (!full && attached[c] != 256))
			continue;
		for (int by_one = 0; by_one < 2; by_one++) {
			struct rn_error err = {0};
			const int n = (int)attached[c];
			snprintf(label, sizeof label, "after attaching %d cached tokens%s", n, by_one ? ", then one by one" : "");
			CHECKF(rn_backend_kv_attach(R->b, 3, R->tk, attached[c], &err) == RN_OK, "%s: %s", label, err.msg);
			CHECK_EQ_INT(rn_backend_kv_used(R->b, 3), n);
			feed_chunks(R, label, 3, n, by_one ? (n + 40 < N_TOK ? n + 40 : N_TOK) : N_TOK, by_one ? 1 : MAX_ROWS);
		}
	}
}

/* A backend over m (4 sequences of 512 cells, batches of 512, 2 threads) and the one-batch reference in seq 0;
 * then every variant. */
static void test_model(const char *name, const struct rn_model *m, enum rn_kv_type kvt, int check_every, bool full)
{
	struct run *R = calloc(1, sizeof *R);
	if (!R)
		return;
	R->name = name;
	R->V = m->hp.n_vocab;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	int n_chk = 0;
	for (int i = 0; i < N_TOK; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		R->tk[i] = (int32_t)((x >> 33) % (uint64_t)R->V);
		R->other[i] = (int32_t)((x >> 13) % (uint64_t)R->V);
		/* checked: every check_every-th position, both sides of each 32-cell boundary, and the last ones
		 * (the split-K steps) */
		R->check[i] = i % check_every == 0 || i % 32 == 31 || i % 32 == 0 || i >= N_TOK - 4;
		if (R->check[i])
			R->slot[i] = n_chk++;
	}
	R->ref = malloc((size_t)n_chk * (size_t)R->V * sizeof(float));
	R->out = malloc((size_t)MAX_ROWS * (size_t)R->V * sizeof(float));
	struct rn_load_params p;
	rn_load_params_init(&p);
	p.n_seq = 4;
	p.n_ctx = 512;
	p.n_batch = MAX_ROWS;
	p.n_threads = 2;
	p.kv_type = kvt;
	p.cache_bytes = 256ll << 20; /* room for the published prompt's blocks */
	p.backend = rn_backend_find("cpu");
	struct rn_error err = {0};
	R->b = R->ref && R->out ? rn_backend_load(m, &p, &err) : NULL;
	CHECKF(R->b != NULL, "%s: %s", name, err.msg);
	if (R->b) {
		/* the reference: the whole prompt as one batch, every checked row wanted */
		int32_t s[N_TOK], pp[N_TOK];
		uint8_t want[N_TOK];
		for (int i = 0; i < N_TOK; i++)
			s[i] = 0, pp[i] = i, want[i] = R->check[i];
		struct rn_batch bt = {.n_tokens = N_TOK, .token = R->tk, .pos = pp, .seq = s, .want = want};
		struct rn_outputs o = {.logits = R->ref};
		CHECKF(rn_backend_forward(R->b, &bt, &o, &err) == RN_OK, "%s: %s", name, err.msg);
		size_t finite = 0;
		for (size_t i = 0; i < (size_t)n_chk * (size_t)R->V; i++)
			finite += R->ref[i] == R->ref[i] && R->ref[i] != 0.0f;
		CHECKF(finite == (size_t)n_chk * (size_t)R->V, "%s: %zu of %zu reference logits finite and nonzero", name,
		       finite, (size_t)n_chk * (size_t)R->V);
		rn_backend_kv_publish(R->b, 0, R->tk, N_TOK);
		run_variants(R, full);
		fprintf(stderr, "%s, KV %s: %d of the compared rows differ\n", name, rn_kv_type_name(kvt), R->mismatches);
	}
	rn_backend_free(R->b);
	free(R->ref);
	free(R->out);
	free(R);
}

static void test_tiny(const char *arch, uint32_t type, int dim, int heads, int kv_heads, enum rn_kv_type kvt)
{
	struct tiny_opts o;
	tiny_defaults(&o, arch);
	o.mat_type = type;
	o.dim = dim;
	o.heads = heads;
	o.kv_heads = kv_heads;
	o.ff = 2 * dim;
	o.ctx = 1024;
	o.seed = 23;
	size_t size = 0;
	uint8_t *img = tiny_model(&o, &size);
	CHECK(img != NULL);
	if (!img)
		return;
	struct gguf_error ge = {0};
	struct gguf_file *f = gguf_parse(img, size, &ge);
	CHECKF(f != NULL, "%s", ge.msg);
	struct rn_error err = {0};
	struct rn_model *m = f ? rn_model_load(f, &err) : NULL;
	CHECKF(m != NULL, "%s", err.msg);
	if (m) {
		char name[96];
		snprintf(name, sizeof name, "tiny %s %s, head size %d, %d/%d heads", arch, gguf_type_name(type), dim / heads,
			 heads, kv_heads);
		test_model(name, m, kvt, 1, true);
		rn_model_free(m);
	}
	gguf_close(f);
	free(img);
}

static void test_real(const char *id, enum rn_kv_type kvt)
{
	const char *path = tm_model_path(id);
	if (!path) {
		fprintf(stderr, "real model %s not installed: not compared\n", id);
		return;
	}
	struct rn_error err = {0};
	struct rn_model *m = rn_model_open(path, &err);
	CHECKF(m != NULL, "%s", err.msg);
	if (!m)
		return;
	test_model(id, m, kvt, 37, false);
	rn_model_free(m);
}

int main(void)
{
	test_tiny("llama", GGUF_TYPE_F32, 256, 4, 4, RN_KV_F16);   /* head size 64 */
	test_tiny("qwen2", GGUF_TYPE_F16, 256, 8, 2, RN_KV_F16);   /* head size 32, groups of 4 */
	test_tiny("qwen3", GGUF_TYPE_Q8_0, 256, 4, 2, RN_KV_F16);
	test_tiny("llama", GGUF_TYPE_Q4_1, 256, 4, 2, RN_KV_Q8_0);
	test_tiny("qwen2", GGUF_TYPE_Q4_K, 256, 8, 2, RN_KV_Q8_0);
	test_tiny("qwen2", GGUF_TYPE_F32, 60, 3, 1, RN_KV_F16);    /* head size 20: the portable path */
#if TM_SANITIZED
	/* under ASan + UBSan (tools/test-all's second pass) the real models' runs cost minutes (SmolLM2 ~3.5, Qwen2.5
	 * more) for paths the tiny models above already take with every variant; the plain build compares them */
	fprintf(stderr, "sanitizer build: the real models are compared in the plain build only\n");
#else
	test_real("llama", RN_KV_F16);
	test_real("qwen2", RN_KV_F16);
	test_real("qwen2", RN_KV_Q8_0);
#endif
	return check_done();
}
