/* tests/runner/test_prefix_engine.c — the prefix cache through the engine, on SmolLM2 (issue 16).
 *
 * Every answer is compared with a reference: the same prompt evaluated from nothing in one big batch by an
 * engine of one slot with no cache. Equal means the same tokens AND bit-identical log-probabilities (the
 * top 5 at every step), so a cached prefix, a prefix evaluated in small chunks, a prefix taken from another
 * slot and a step shared with another sequence must all give the very same logits. Cases: a hit across
 * slots; the same prompt again elsewhere; two slots sharing one prefix in the same steps; eviction under a
 * tiny budget; a request cancelled mid-prefill (nothing half-written is published); a context shift in one
 * slot while another shares its prefix; the pool's invariants after each.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/engine.h"
#include "runner/tokenizer/tokenizer.h"
#include "tests/check.h"
#include "tests/testmodel.h"

#define MAXG 200

struct run {
	int32_t ids[MAXG];
	struct rn_logprob lp[MAXG];
	int n, n_lp;
	bool done;
	enum rn_done_reason reason;
	struct rn_engine_stats stats;
};

static int on_event(void *user, const struct rn_event *ev)
{
	struct run *r = user;
	if (ev->token >= 0 && r->n < MAXG)
		r->ids[r->n++] = ev->token;
	for (size_t i = 0; i < ev->n_logprobs && r->n_lp < MAXG; i++)
		r->lp[r->n_lp++] = ev->logprobs[i];
	if (ev->done) {
		r->done = true;
		r->reason = ev->reason;
		r->stats = *ev->stats;
	}
	return 0;
}

static const struct rn_model *M;
static const struct rn_tok *T;

static struct rn_engine *engine(int n_seq, int n_ctx, int n_batch, long long cache_bytes)
{
	struct rn_load_params p;
	rn_load_params_init(&p);
	p.n_ctx = n_ctx;
	p.n_batch = n_batch;
	p.n_threads = 2;
	p.cache_bytes = cache_bytes;
	rn_load_params_resolve(&p, &(struct rn_load_defaults){.n_ctx_max = M->hp.n_ctx_train, .n_seq = n_seq});
	struct rn_error err = {0};
	struct rn_engine *e = rn_engine_new(M, T, &p, &err);
	CHECKF(e != NULL, "%s", err.msg);
	return e;
}

static int submit(struct rn_engine *e, const int32_t *ids, size_t n, struct run *r, int slot, int predict, bool cache)
{
	struct rn_request q;
	rn_request_default(&q);
	q.prompt = ids;
	q.n_prompt = n;
	q.sampling.temperature = 0;
	q.num_predict = predict;
	q.cache_prompt = cache;
	q.logprobs = true;
	q.top_logprobs = 5;
	q.slot = slot;
	q.on_event = on_event;
	q.user = r;
	memset(r, 0, sizeof *r);
	struct rn_error err = {0};
	int s = rn_engine_submit(e, &q, &err);
	CHECKF(s >= 0, "submit: %s", err.msg);
	return s;
}

static void drain(struct rn_engine *e)
{
	while (rn_engine_step(e) > 0)
		;
}

static void pool_ok(struct rn_engine *e, const char *what)
{
	struct rn_error err = {0};
	int rc = rn_backend_kv_check(rn_engine_backend(e), &err);
	CHECKF(rc == RN_OK, "%s: %s", what, err.msg);
}

static bool same(const struct run *a, const struct run *b, const char *what)
{
	bool ok = a->done && b->done && a->n == b->n && a->n > 0 && memcmp(a->ids, b->ids, (size_t)a->n * sizeof a->ids[0]) == 0 &&
		  a->n_lp == b->n_lp;
	for (int i = 0; ok && i < a->n_lp; i++) {
		const struct rn_logprob *x = &a->lp[i], *y = &b->lp[i];
		ok = x->token == y->token && memcmp(&x->logprob, &y->logprob, sizeof x->logprob) == 0 && x->n_top == y->n_top &&
		     memcmp(x->top_token, y->top_token, (size_t)x->n_top * sizeof x->top_token[0]) == 0 &&
		     memcmp(x->top_logprob, y->top_logprob, (size_t)x->n_top * sizeof x->top_logprob[0]) == 0;
		if (!ok)
			fprintf(stderr, "%s: step %d differs: token %d/%d logprob %.9g/%.9g\n", what, i, x->token, y->token,
				(double)x->logprob, (double)y->logprob);
	}
	CHECKF(ok, "%s: %d tokens vs %d (reference)", what, a->n, b->n);
	return ok;
}

/* The reference answer: from nothing, one batch, one slot, no cache. */
static void reference(const int32_t *ids, size_t n, int predict, int n_ctx, struct run *out)
{
	struct rn_engine *e = engine(1, n_ctx, 512, 0);
	if (!e)
		return;
	submit(e, ids, n, out, 0, predict, false);
	drain(e);
	CHECK_EQ_INT(out->stats.n_cached, 0);
	rn_engine_free(e);
}

static int32_t *encode(const char *text, size_t *n)
{
	int32_t *ids = NULL;
	CHECK(rn_tok_encode_alloc(T, text, strlen(text), true, true, &ids, n, NULL) == RN_TOK_OK);
	return ids;
}

int main(void)
{
	const char *path = tm_require_model("llama");
	struct rn_error err = {0};
	struct rn_model *m = rn_model_open(path, &err);
	CHECKF(m != NULL, "%s", err.msg);
	struct rn_tok *tok = NULL;
	if (!m || rn_tok_load(m->gguf, NULL, &tok, NULL) != RN_TOK_OK)
		return check_done();
	M = m;
	T = tok;

	/* a shared "system prompt" of ~126 tokens, then different questions */
	static const char sys[] =
		"<|im_start|>system\nYou are a careful assistant for a public library. You answer questions about the "
		"library's opening hours, its lending rules, the reading rooms, the archive of local newspapers, the "
		"children's corner, the study carrels that can be booked a week ahead, the printers and scanners, the "
		"wireless network, the lost and found office, and the events calendar. Keep answers short, friendly and "
		"precise. When you do not know something, say so and suggest asking at the front desk on the ground "
		"floor, which is staffed every day from nine in the morning until six in the evening.<|im_end|>\n"
		"<|im_start|>user\n";
	static const char *qs[] = {
		"How many books can I borrow at once?<|im_end|>\n<|im_start|>assistant\n",
		"Can I print in colour?<|im_end|>\n<|im_start|>assistant\n",
		"Where is the newspaper archive?<|im_end|>\n<|im_start|>assistant\n",
		"Is there a quiet room for studying?<|im_end|>\n<|im_start|>assistant\n",
	};
	/* fewer generated tokens under ASan + UBSan (TM_SANITIZED): every case still runs, prefixes and all */
	enum { NQ = 4, PRED = TM_SANITIZED ? 8 : 24, PRED_SHIFT = TM_SANITIZED ? 16 : 40 };
	int32_t *P[NQ];
	size_t N[NQ];
	struct run ref[NQ], r[4];
	char buf[4096];
	for (int i = 0; i < NQ; i++) {
		snprintf(buf, sizeof buf, "%s%s", sys, qs[i]);
		P[i] = encode(buf, &N[i]);
		reference(P[i], N[i], PRED, 1024, &ref[i]);
	}
	size_t nsys;
	int32_t *S = encode(sys, &nsys);
	const size_t shared_blocks = (nsys - 1) / RN_KV_BLOCK * RN_KV_BLOCK; /* the last sys token may merge */
	CHECKF(shared_blocks >= 96, "the shared prefix is only %zu tokens", nsys);

	/* 1. a hit across slots: P0 in slot 0 (chunks of 64), then P1 in slot 1 starts from slot 0's blocks */
	struct rn_engine *e = engine(2, 1024, 64, -1);
	if (!e)
		return check_done();
	struct rn_cache_stats cs;
	rn_engine_cache_stats(e, &cs);
	CHECK(cs.enabled && cs.block_bytes > 0 && cs.bytes_budget > 0);
	submit(e, P[0], N[0], &r[0], 0, PRED, true);
	drain(e);
	same(&r[0], &ref[0], "P0 in chunks of 64");
	CHECK_EQ_INT(r[0].stats.n_cached, 0);
	submit(e, P[1], N[1], &r[1], 1, PRED, true);
	drain(e);
	same(&r[1], &ref[1], "P1 from slot 0's blocks");
	CHECKF((size_t)r[1].stats.n_cached >= shared_blocks, "P1 reused %d tokens, expected >= %zu", r[1].stats.n_cached,
	       shared_blocks);
	rn_engine_cache_stats(e, &cs);
	CHECK(cs.hits == 1 && cs.misses == 1 && cs.tokens_reused == (uint64_t)r[1].stats.n_cached);
	pool_ok(e, "after a hit across slots");

	/* 2. P0 again in slot 1: all its full blocks come from the cache (slot 0 still holds them) */
	submit(e, P[0], N[0], &r[2], 1, PRED, true);
	drain(e);
	same(&r[2], &ref[0], "P0 again in slot 1");
	CHECKF((size_t)r[2].stats.n_cached >= (N[0] - 1) / RN_KV_BLOCK * RN_KV_BLOCK, "reused %d of %zu",
	       r[2].stats.n_cached, N[0]);

	/* 3. two slots sharing one prefix in the same steps, side by side in each batch */
	submit(e, P[2], N[2], &r[0], 0, PRED, true);
	submit(e, P[3], N[3], &r[1], 1, PRED, true);
	drain(e);
	same(&r[0], &ref[2], "P2 beside P3");
	same(&r[1], &ref[3], "P3 beside P2");
	CHECK((size_t)r[0].stats.n_cached >= shared_blocks && (size_t)r[1].stats.n_cached >= shared_blocks);
	pool_ok(e, "after two slots shared a prefix");
	rn_engine_free(e);

	/* 4. eviction under a budget of 2 blocks: answers stay the same, blocks are evicted */
	e = engine(1, 1024, 64, -1);
	rn_engine_cache_stats(e, &cs);
	rn_engine_free(e);
	e = engine(1, 1024, 64, (long long)(2 * cs.block_bytes));
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < NQ; i++) {
			submit(e, P[i], N[i], &r[0], -1, PRED, true);
			drain(e);
			char what[64];
			snprintf(what, sizeof what, "budget of 2 blocks, round %d, P%d", round, i);
			same(&r[0], &ref[i], what);
			/* another prompt in between, so the slot's own content does not carry the prefix */
			submit(e, S + 40, nsys - 40, &r[1], -1, 4, true);
			drain(e);
		}
	rn_engine_cache_stats(e, &cs);
	CHECKF(cs.blocks_evicted > 0, "no block evicted under a 2-block budget");
	CHECKF(cs.bytes_held <= cs.bytes_budget + (rn_engine_params(e)->n_ctx / RN_KV_BLOCK + 1) * cs.block_bytes,
	       "held %llu bytes", (unsigned long long)cs.bytes_held);
	pool_ok(e, "after eviction");
	rn_engine_free(e);

	/* 5. cancelled mid-prefill: only complete blocks were published; the next request is right */
	e = engine(2, 1024, 16, -1);
	int s = submit(e, P[0], N[0], &r[0], 0, PRED, true);
	for (int k = 0; k < 3; k++)
		rn_engine_step(e);
	rn_engine_cancel(e, s);
	drain(e);
	CHECK(r[0].done && r[0].reason == RN_DONE_CANCEL && r[0].n == 0);
	pool_ok(e, "after a cancel mid-prefill");
	submit(e, P[0], N[0], &r[1], 1, PRED, true);
	drain(e);
	same(&r[1], &ref[0], "P0 after a cancelled prefill of it");
	CHECKF(r[1].stats.n_cached == 32, "reused %d tokens after 3 steps of 16 (one whole block expected)",
	       r[1].stats.n_cached);
	rn_engine_free(e);

	/* 6. a context shift in slot 0 while slot 1 shares its prefix: a context a few tokens longer than the
	 * prompts, so that both answers shift (keeping num_keep tokens, the rest of the blocks become private) */
	size_t nmax = 0;
	for (int i = 0; i < NQ; i++)
		nmax = N[i] > nmax ? N[i] : nmax;
	const int n_ctx = (int)nmax + 6;
	struct run ref_shift[2];
	reference(P[0], N[0], PRED_SHIFT, n_ctx, &ref_shift[0]);
	reference(P[1], N[1], PRED_SHIFT, n_ctx, &ref_shift[1]);
	CHECKF(ref_shift[0].stats.n_shift >= 1, "the reference did not shift (%d tokens)", ref_shift[0].n);
	e = engine(2, n_ctx, 64, -1);
	submit(e, P[0], N[0], &r[0], 0, PRED_SHIFT, true);
	drain(e);
	submit(e, P[0], N[0], &r[1], 0, PRED_SHIFT, true); /* again in the slot that shifted: from the cache's blocks */
	submit(e, P[1], N[1], &r[2], 1, PRED_SHIFT, true);
	drain(e);
	same(&r[0], &ref_shift[0], "P0 with a context shift");
	same(&r[1], &ref_shift[0], "P0 again in the slot that shifted");
	same(&r[2], &ref_shift[1], "P1 beside a shifting slot");
	CHECK((size_t)r[1].stats.n_cached >= shared_blocks && (size_t)r[2].stats.n_cached >= shared_blocks);
	pool_ok(e, "after context shifts");
	rn_engine_free(e);

	for (int i = 0; i < NQ; i++)
		free(P[i]);
	free(S);
	rn_tok_free(tok);
	rn_model_free(m);
	return check_done();
}
