/* tests/cuda/test_cuda_models.c — greedy 64-token continuations of the real test models (tests/models.tsv)
 * on the CUDA backend must be identical to the CPU backend's.
 *
 * Each model gets a real prompt (tokenized with orun's tokenizer), processed as one chunk (the GEMM path),
 * then 64 greedy steps (the graph-captured decode path), feeding each backend its own choices; the first
 * divergence, if any, is reported with both backends' top-2 logits. Skips (77) when there is no CUDA device
 * or when neither model is installed (say which).
 */
#include "config.h"

#include <math.h>

#include "runner/backend.h"
#include "runner/cpu/cpu.h"
#include "runner/cuda/cuda.h"
#include "runner/model.h"
#include "runner/tokenizer/tokenizer.h"
#include "tests/check.h"
#include "tests/testmodel.h"

#define NGEN 64

static const char *PROMPT =
	"The following is a short story about a lighthouse keeper who finds a message in a bottle. It begins on a "
	"stormy night in late November, when";

static int32_t argmax(const float *l, int n, float *top, float *second)
{
	int b = 0;
	float s = -INFINITY;
	for (int i = 1; i < n; i++)
		if (l[i] > l[b]) {
			s = l[b];
			b = i;
		} else if (l[i] > s) {
			s = l[i];
		}
	*top = l[b];
	*second = s;
	return b;
}

/* Prompt + NGEN greedy tokens on one backend; out gets the NGEN ids, margins the top-2 gaps. */
static int generate(const struct rn_backend_ops *ops, const struct rn_model *m, const int32_t *prompt, int np,
		    int32_t *out, float *margin, struct rn_error *err)
{
	struct rn_load_params p = {.n_seq = 1, .n_ctx = 512, .n_batch = 256, .n_threads = 2};
	void *st = NULL;
	/* a paged backend (the CPU) gets its one sequence's blocks in order */
	int32_t table[512 / RN_KV_BLOCK];
	for (int i = 0; i < 512 / RN_KV_BLOCK; i++)
		table[i] = i;
	const struct rn_kv_pages pages = {.n_blocks = 512 / RN_KV_BLOCK, .blocks_per_seq = 512 / RN_KV_BLOCK, .table = table};
	int rc = ops->load_paged ? ops->load_paged(m, &p, &pages, &st, err) : ops->load(m, &p, &st, err);
	if (rc)
		return rc;
	const int V = m->hp.n_vocab;
	float *logits = malloc((size_t)V * sizeof *logits);
	int32_t pos[256], seq[256], cell[256], orow[1];
	for (int i = 0; i < np; i++) {
		pos[i] = cell[i] = i;
		seq[i] = 0;
	}
	orow[0] = np - 1;
	struct rn_batch_cells bc = {.b = {.n_tokens = np, .token = prompt, .pos = pos, .seq = seq, .want = NULL},
				    .cell = cell, .n_out = 1, .out_row = orow};
	struct rn_outputs o = {.logits = logits};
	rc = ops->forward(st, &bc, &o, err);
	for (int t = 0; t < NGEN && rc == RN_OK; t++) {
		float a, b;
		int32_t tok = argmax(logits, V, &a, &b);
		out[t] = tok;
		margin[t] = a - b;
		int32_t p1 = np + t, s1 = 0, c1 = np + t, r1 = 0;
		struct rn_batch_cells d = {.b = {.n_tokens = 1, .token = &tok, .pos = &p1, .seq = &s1, .want = NULL},
					   .cell = &c1, .n_out = 1, .out_row = &r1};
		rc = ops->forward(st, &d, &o, err);
	}
	free(logits);
	ops->free(st);
	return rc;
}

static int check_model(const char *id)
{
	const char *path = tm_model_path(id);
	if (!path) {
		printf("%s: model not installed, not compared\n", id);
		return 0;
	}
	struct rn_error err = {0};
	struct rn_model *m = rn_model_open(path, &err);
	CHECKF(m != NULL, "%s: %s", path, err.msg);
	if (!m)
		return 1;
	struct rn_tok *tok = NULL;
	struct rn_tok_error te;
	CHECK(rn_tok_load(m->gguf, NULL, &tok, &te) == RN_TOK_OK);
	int32_t prompt[256];
	size_t np = 0;
	CHECK(tok && rn_tok_encode(tok, PROMPT, strlen(PROMPT), true, false, prompt, 256, &np, &te) == RN_TOK_OK);
	int32_t gc[NGEN], gg[NGEN];
	float mc[NGEN], mg[NGEN];
	int r1 = generate(&rn_cpu_backend_ops, m, prompt, (int)np, gc, mc, &err);
	CHECKF(r1 == RN_OK, "%s CPU: %s", id, err.msg);
	int r2 = generate(&rn_cuda_backend_ops, m, prompt, (int)np, gg, mg, &err);
	CHECKF(r2 == RN_OK, "%s CUDA: %s", id, err.msg);
	int first = -1;
	for (int t = 0; t < NGEN && r1 == RN_OK && r2 == RN_OK; t++)
		if (gc[t] != gg[t]) {
			first = t;
			break;
		}
	CHECKF(first < 0, "%s: greedy continuations diverge at token %d (CPU %d, margin %.4g; CUDA %d, margin %.4g)", id,
	       first, first >= 0 ? gc[first] : 0, first >= 0 ? (double)mc[first] : 0.0, first >= 0 ? gg[first] : 0,
	       first >= 0 ? (double)mg[first] : 0.0);
	if (r1 == RN_OK && r2 == RN_OK && tok) {
		char text[4096];
		size_t len = 0;
		if (rn_tok_detokenize(tok, gg, NGEN, true, false, text, sizeof text - 1, &len) == RN_TOK_OK) {
			text[len < sizeof text ? len : sizeof text - 1] = 0;
			printf("%s (%zu prompt tokens): %s %d/64 identical; CUDA text: %s\n", id, np,
			       first < 0 ? "all" : "NOT", first < 0 ? NGEN : first, text);
		}
	}
	rn_tok_free(tok);
	rn_model_free(m);
	return 1;
}

int main(void)
{
	if (rn_cuda_device_count() == 0)
		SKIP("no CUDA device (rn_cuda_device_count() == 0): the comparison compiles and links but cannot run here");
	int compared = check_model("qwen2") + check_model("llama");
	if (compared == 0)
		SKIP("neither test model is installed in $ORUN_CACHE/models (tools/install-deps fetches them)");
	return check_done();
}
