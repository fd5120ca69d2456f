/* runner/engine.c — slots, continuous batching, prompt truncation and prefix reuse, context shift,
 * sampling, stop strings and UTF-8 hold-back on top of a backend instance.
 *
 * Locking: submit/cancel (any thread) and the engine thread share only the slot states QUEUED/IDLE and the
 * cancel flags, under e->mu; everything else in an active slot belongs to the engine thread. Callbacks run
 * without the lock held. Deliberately not here: chat templates, tokenization of text, HTTP.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "runner/engine.h"
#include "runner/grammar/grammar.h"

enum slot_state { SLOT_IDLE = 0, SLOT_QUEUED, SLOT_PREFILL, SLOT_DECODE };

struct slot {
	int id;
	_Atomic int state;   /* enum slot_state; written under e->mu, read by the engine thread without it */
	atomic_bool cancel;
	/* the request, with its own copies */
	struct rn_request req;
	int32_t *prompt;
	size_t n_prompt, cap_prompt;
	char *stop[RN_ENGINE_MAX_STOP];
	size_t stop_len[RN_ENGINE_MAX_STOP];
	int n_stop;
	struct rn_sampler *smp;
	struct rn_tok_stream *ts;
	/* the KV cache content of this slot: token ids at positions 0 .. n_cache-1 */
	int32_t *cache;
	atomic_int n_cache;  /* written by the engine thread only */
	/* progress */
	size_t n_fed;        /* prompt tokens in the cache */
	int32_t next_token;  /* the sampled token to feed next (decode) */
	int n_gen, limit;
	bool until_full;
	int n_keep;
	int out_row;         /* this step: row of the logits output, or -1 */
	int n_fed_step;      /* this step: tokens added to the batch */
	/* text not yet released (a possible stop string) */
	char *pend;
	size_t pend_len, pend_cap;
	/* logprobs of tokens whose text is (partly) in pend: lp[i]'s text is pend[lp_span[i][0] .. lp_span[i][1]) */
	struct rn_logprob *lp;
	size_t (*lp_span)[2];
	size_t n_lp, cap_lp, cap_lp_span;
	float *lp_row;       /* the raw logits of this step, kept before the sampler changes them [n_vocab] */
	int32_t preserved[RN_ENGINE_MAX_PRESERVED]; /* rn_request.preserved, copied */
	size_t n_preserved;
	struct rn_engine_stats stats;
	int64_t t_start, t_first;
	int64_t last_used;   /* when the slot's last request ended (slot choice: least recently used); under e->mu */
	/* grammar (rn_request.grammar): the compiled rules and the matcher; g_on once grammar_after was seen */
	struct rn_grammar *gr;
	struct rn_grammar_state *gs;
	bool g_on;
	char *g_after;       /* rn_request.grammar_after, copied; NULL: on from the first token */
	size_t g_after_len;
	char *g_win;         /* the generated text's tail while waiting for g_after */
	size_t g_win_len, g_win_cap;
	float *g_row;        /* the logits before the sampler, for a resample under the mask [n_vocab] */
};

struct rn_engine {
	const struct rn_model *m;
	const struct rn_tok *tok;
	struct rn_load_params p; /* as the backend has them */
	struct rn_backend *b;
	struct slot *slots;
	int n_vocab;
	/* batch buffers */
	int32_t *bt_tok, *bt_pos, *bt_seq;
	uint8_t *bt_want;
	float *logits; /* [n_seq][n_vocab] */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int n_queued;
	struct rn_grammar_vocab *gvocab; /* built at the first grammar request, kept; under gv_mu */
	pthread_mutex_t gv_mu;
	struct rn_cache_stats cstats;    /* the prefix cache's counters after the last step; under mu */
};

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

const char *rn_done_reason_name(enum rn_done_reason r)
{
	switch (r) {
	case RN_DONE_STOP: return "stop";
	case RN_DONE_LENGTH: return "length";
	case RN_DONE_CANCEL: return "cancel";
	case RN_DONE_ERROR: return "error";
	default: return "";
	}
}

void rn_request_default(struct rn_request *r)
{
	memset(r, 0, sizeof *r);
	rn_sampler_params_default(&r->sampling);
	r->num_predict = -1;
	r->num_keep = 4;
	r->cache_prompt = true;
	r->truncate = true;
	r->shift = true;
	r->slot = -1;
}

/* ---------------------------------------------------------------------------------------------------- */

static void slot_release_request(struct slot *s)
{
	for (int i = 0; i < s->n_stop; i++)
		free(s->stop[i]);
	s->n_stop = 0;
	rn_sampler_free(s->smp);
	s->smp = NULL;
	rn_tok_stream_free(s->ts);
	s->ts = NULL;
	s->pend_len = 0;
	s->n_lp = 0;
	rn_grammar_state_free(s->gs);
	s->gs = NULL;
	rn_grammar_free(s->gr);
	s->gr = NULL;
	free(s->g_after);
	s->g_after = NULL;
	s->g_on = false;
	s->g_win_len = 0;
}

struct rn_engine *rn_engine_new(const struct rn_model *m, const struct rn_tok *tok, const struct rn_load_params *p,
				struct rn_error *err)
{
	struct rn_engine *e = calloc(1, sizeof *e);
	if (!e) {
		rn_error_set(err, RN_ERR_NOMEM, "out of memory");
		return NULL;
	}
	e->m = m;
	e->tok = tok;
	if (p->n_seq < 1 || p->n_seq > RN_MAX_SEQ) {
		rn_error_set(err, RN_ERR_INVALID_ARG, "%d parallel slots requested (allowed 1..%d)", p->n_seq, RN_MAX_SEQ);
		goto fail;
	}
	if (tok && rn_tok_n_vocab(tok) > (uint32_t)m->hp.n_vocab) {
		rn_error_set(err, RN_ERR_VOCAB, "the tokenizer has %" PRIu32 " tokens but the model only %d",
			     rn_tok_n_vocab(tok), m->hp.n_vocab);
		goto fail;
	}
	e->n_vocab = m->hp.n_vocab;
	e->b = rn_backend_load(m, p, err);
	if (!e->b)
		goto fail;
	e->p = *rn_backend_params(e->b);
	const int S = e->p.n_seq, B = e->p.n_batch;
	e->slots = calloc((size_t)S, sizeof *e->slots);
	e->bt_tok = malloc((size_t)B * sizeof(int32_t));
	e->bt_pos = malloc((size_t)B * sizeof(int32_t));
	e->bt_seq = malloc((size_t)B * sizeof(int32_t));
	e->bt_want = malloc((size_t)B);
	e->logits = malloc((size_t)S * (size_t)e->n_vocab * sizeof(float));
	if (!e->slots || !e->bt_tok || !e->bt_pos || !e->bt_seq || !e->bt_want || !e->logits) {
		rn_error_set(err, RN_ERR_NOMEM, "out of memory for %d slots", S);
		goto fail;
	}
	for (int i = 0; i < S; i++) {
		e->slots[i].id = i;
		e->slots[i].cache = malloc((size_t)e->p.n_ctx * sizeof(int32_t));
		if (!e->slots[i].cache) {
			rn_error_set(err, RN_ERR_NOMEM, "out of memory for %d slots", S);
			goto fail;
		}
	}
	pthread_mutex_init(&e->mu, NULL);
	pthread_cond_init(&e->cv, NULL);
	pthread_mutex_init(&e->gv_mu, NULL);
	rn_backend_cache_stats(e->b, &e->cstats);
	return e;
fail:
	if (e->slots)
		for (int i = 0; i < e->p.n_seq; i++)
			free(e->slots[i].cache);
	free(e->slots);
	e->slots = NULL;
	rn_engine_free(e);
	return NULL;
}

void rn_engine_free(struct rn_engine *e)
{
	if (!e)
		return;
	if (e->slots) {
		for (int i = 0; i < e->p.n_seq; i++) {
			slot_release_request(&e->slots[i]);
			free(e->slots[i].cache);
			free(e->slots[i].prompt);
			free(e->slots[i].pend);
			free(e->slots[i].lp);
			free(e->slots[i].lp_span);
			free(e->slots[i].lp_row);
			free(e->slots[i].g_win);
			free(e->slots[i].g_row);
		}
		pthread_mutex_destroy(&e->mu);
		pthread_cond_destroy(&e->cv);
		pthread_mutex_destroy(&e->gv_mu);
	}
	rn_grammar_vocab_free(e->gvocab);
	free(e->slots);
	rn_backend_free(e->b);
	free(e->bt_tok);
	free(e->bt_pos);
	free(e->bt_seq);
	free(e->bt_want);
	free(e->logits);
	free(e);
}

const struct rn_load_params *rn_engine_params(const struct rn_engine *e) { return &e->p; }
struct rn_backend *rn_engine_backend(struct rn_engine *e) { return e->b; }

static size_t common_prefix(const int32_t *a, size_t na, const int32_t *b, size_t nb)
{
	size_t n = na < nb ? na : nb, i = 0;
	while (i < n && a[i] == b[i])
		i++;
	return i;
}

int rn_engine_idle_slots(struct rn_engine *e)
{
	pthread_mutex_lock(&e->mu);
	int n = 0;
	for (int i = 0; i < e->p.n_seq; i++)
		n += e->slots[i].state == SLOT_IDLE;
	pthread_mutex_unlock(&e->mu);
	return n;
}

/* ---------------------------------------------------------------------------------------------------- */
/* submit / cancel */

/* Compile r's grammar and start its matcher over the engine's vocabulary (built at the first grammar
 * request). Returns RN_OK with *gr and *gs NULL when r has no grammar. */
static int grammar_prepare(struct rn_engine *e, const struct rn_request *r, struct rn_grammar **gr,
			   struct rn_grammar_state **gs, struct rn_error *err)
{
	*gr = NULL;
	*gs = NULL;
	if (!r->grammar)
		return RN_OK;
	if (!e->tok)
		return rn_error_set(err, RN_ERR_INVALID_ARG, "a grammar needs the model's tokenizer, and this engine has none");
	if (!(*gr = rn_grammar_compile(r->grammar, r->grammar_len, NULL, err)))
		return err ? err->code : RN_ERR_INVALID_ARG;
	pthread_mutex_lock(&e->gv_mu);
	if (!e->gvocab)
		e->gvocab = rn_grammar_vocab_new(e->tok, err);
	struct rn_grammar_vocab *v = e->gvocab;
	pthread_mutex_unlock(&e->gv_mu);
	if (!v || !(*gs = rn_grammar_state_new(*gr, v, err))) {
		rn_grammar_free(*gr);
		*gr = NULL;
		return err ? err->code : RN_ERR_NOMEM;
	}
	return RN_OK;
}

int rn_engine_submit(struct rn_engine *e, const struct rn_request *r, struct rn_error *err)
{
	if (!r->prompt || r->n_prompt < 1) {
		rn_error_set(err, RN_ERR_INVALID_ARG, "the prompt is empty");
		return -1;
	}
	for (size_t i = 0; i < r->n_prompt; i++)
		if (r->prompt[i] < 0 || r->prompt[i] >= e->n_vocab) {
			rn_error_set(err, RN_ERR_INVALID_ARG, "prompt token %zu is %" PRId32 ", outside the vocabulary [0, %d)",
				     i, r->prompt[i], e->n_vocab);
			return -1;
		}
	if (r->n_stop < 0 || r->n_stop > RN_ENGINE_MAX_STOP) {
		rn_error_set(err, RN_ERR_INVALID_ARG, "%d stop strings (at most %d)", r->n_stop, RN_ENGINE_MAX_STOP);
		return -1;
	}
	for (int i = 0; i < r->n_stop; i++)
		if (!r->stop[i] || strlen(r->stop[i]) > RN_ENGINE_MAX_STOP_LEN) {
			rn_error_set(err, RN_ERR_INVALID_ARG, "stop string %d is missing or longer than %d bytes", i,
				     RN_ENGINE_MAX_STOP_LEN);
			return -1;
		}
	if (r->num_predict < -2) {
		rn_error_set(err, RN_ERR_INVALID_ARG, "num_predict = %d (allowed: -2, -1 or >= 0)", r->num_predict);
		return -1;
	}
	if (r->logprobs && (r->top_logprobs < 0 || r->top_logprobs > RN_LOGPROB_TOP_MAX)) {
		rn_error_set(err, RN_ERR_INVALID_ARG, "top_logprobs = %d (allowed 0..%d)", r->top_logprobs,
			     RN_LOGPROB_TOP_MAX);
		return -1;
	}
	if (r->n_preserved > RN_ENGINE_MAX_PRESERVED) {
		rn_error_set(err, RN_ERR_INVALID_ARG, "%zu preserved tokens (at most %d)", r->n_preserved,
			     RN_ENGINE_MAX_PRESERVED);
		return -1;
	}
	if (r->slot >= e->p.n_seq) {
		rn_error_set(err, RN_ERR_INVALID_ARG, "slot %d out of range [0, %d)", r->slot, e->p.n_seq);
		return -1;
	}
	struct rn_sampler *smp = rn_sampler_new(&r->sampling, e->n_vocab, e->p.n_ctx, err);
	if (!smp)
		return -1;
	struct rn_grammar *gr;
	struct rn_grammar_state *gs;
	if (grammar_prepare(e, r, &gr, &gs, err) != RN_OK) {
		rn_sampler_free(smp);
		return -1;
	}
	struct rn_tok_stream *ts = NULL;
	if (e->tok && !(ts = rn_tok_stream_new(e->tok, r->render_special))) {
		rn_sampler_free(smp);
		rn_grammar_state_free(gs);
		rn_grammar_free(gr);
		rn_error_set(err, RN_ERR_NOMEM, "out of memory");
		return -1;
	}

	pthread_mutex_lock(&e->mu);
	int chosen = -1;
	if (r->slot >= 0) {
		if (e->slots[r->slot].state == SLOT_IDLE)
			chosen = r->slot;
	} else {
		/* the idle slot whose content shares the longest prefix with the prompt, counted only from a whole
		 * block on (what any slot could take from the prefix cache is the same everywhere); among equals the
		 * least recently used, so a short side request (a title, tags) lands on the slot that waited longest
		 * and the conversation just answered keeps its slot */
		size_t best = 0;
		for (int i = 0; i < e->p.n_seq; i++) {
			struct slot *s = &e->slots[i];
			if (s->state != SLOT_IDLE)
				continue;
			size_t l = common_prefix(s->cache, (size_t)s->n_cache, r->prompt, r->n_prompt);
			if (l < RN_KV_BLOCK)
				l = 0;
			if (chosen < 0 || l > best || (l == best && s->last_used < e->slots[chosen].last_used)) {
				chosen = i;
				best = l;
			}
		}
	}
	if (chosen < 0) {
		pthread_mutex_unlock(&e->mu);
		rn_sampler_free(smp);
		rn_tok_stream_free(ts);
		rn_grammar_state_free(gs);
		rn_grammar_free(gr);
		if (r->slot >= 0)
			rn_error_set(err, RN_ERR_BUSY, "slot %d is busy", r->slot);
		else
			rn_error_set(err, RN_ERR_BUSY, "all %d slots are busy", e->p.n_seq);
		return -1;
	}
	struct slot *s = &e->slots[chosen];
	int rc = RN_OK;
	if (s->cap_prompt < r->n_prompt) {
		int32_t *np = realloc(s->prompt, r->n_prompt * sizeof *np);
		if (!np)
			rc = RN_ERR_NOMEM;
		else {
			s->prompt = np;
			s->cap_prompt = r->n_prompt;
		}
	}
	if (rc == RN_OK && r->logprobs && !s->lp_row &&
	    !(s->lp_row = malloc((size_t)e->n_vocab * sizeof *s->lp_row)))
		rc = RN_ERR_NOMEM;
	if (rc == RN_OK && gs && !s->g_row && !(s->g_row = malloc((size_t)e->n_vocab * sizeof *s->g_row)))
		rc = RN_ERR_NOMEM;
	if (rc == RN_OK && gs && r->grammar_after && r->grammar_after[0]) {
		if (!(s->g_after = strdup(r->grammar_after)))
			rc = RN_ERR_NOMEM;
		else
			s->g_after_len = strlen(r->grammar_after);
	}
	int n_stop = 0;
	for (int i = 0; rc == RN_OK && i < r->n_stop; i++) {
		if (!r->stop[i][0])
			continue; /* an empty stop string would match everywhere; ignore it */
		if (!(s->stop[n_stop] = strdup(r->stop[i])))
			rc = RN_ERR_NOMEM;
		else
			s->stop_len[n_stop] = strlen(r->stop[i]), n_stop++;
	}
	s->n_stop = n_stop;
	if (rc != RN_OK) {
		slot_release_request(s);
		pthread_mutex_unlock(&e->mu);
		rn_sampler_free(smp);
		rn_tok_stream_free(ts);
		rn_grammar_state_free(gs);
		rn_grammar_free(gr);
		rn_error_set(err, RN_ERR_NOMEM, "out of memory");
		return -1;
	}
	memcpy(s->prompt, r->prompt, r->n_prompt * sizeof *s->prompt);
	s->n_prompt = r->n_prompt;
	s->req = *r;
	s->req.prompt = s->prompt;
	s->req.stop = NULL;
	if (r->n_preserved)
		memcpy(s->preserved, r->preserved, r->n_preserved * sizeof *s->preserved);
	s->n_preserved = r->n_preserved;
	s->req.preserved = NULL;
	s->smp = smp;
	s->ts = ts;
	s->gr = gr;
	s->gs = gs;
	s->g_on = gs && !s->g_after;
	s->g_win_len = 0;
	s->req.grammar = NULL;
	s->req.grammar_after = NULL;
	atomic_store(&s->cancel, false);
	s->state = SLOT_QUEUED;
	s->t_start = now_ns();
	e->n_queued++;
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
	return chosen;
}

void rn_engine_cancel(struct rn_engine *e, int slot)
{
	if (slot >= 0 && slot < e->p.n_seq)
		atomic_store(&e->slots[slot].cancel, true);
}

bool rn_engine_wait(struct rn_engine *e, int timeout_ms)
{
	pthread_mutex_lock(&e->mu);
	if (e->n_queued == 0) {
		if (timeout_ms < 0) {
			pthread_cond_wait(&e->cv, &e->mu);
		} else {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += timeout_ms / 1000;
			ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&e->cv, &e->mu, &ts);
		}
	}
	bool work = e->n_queued > 0;
	pthread_mutex_unlock(&e->mu);
	return work;
}

/* ---------------------------------------------------------------------------------------------------- */
/* events */

/* How many queued logprob entries go out with the release of pend[0..upto): those with some text before upto,
 * and those with no text of their own at or before it. */
static size_t lp_ready(const struct slot *s, size_t upto)
{
	size_t k = 0;
	while (k < s->n_lp && (s->lp_span[k][0] < upto ||
			       (s->lp_span[k][0] == s->lp_span[k][1] && s->lp_span[k][0] <= upto)))
		k++;
	return k;
}

/* Drop the first k entries; the rest move to the front with their spans shifted back by `shift` bytes. */
static void lp_consume(struct slot *s, size_t k, size_t shift)
{
	if (s->n_lp == 0)
		return; /* nothing queued (s->lp may still be NULL) */
	memmove(s->lp, s->lp + k, (s->n_lp - k) * sizeof *s->lp);
	memmove(s->lp_span, s->lp_span + k, (s->n_lp - k) * sizeof *s->lp_span);
	s->n_lp -= k;
	for (size_t i = 0; i < s->n_lp; i++) {
		s->lp_span[i][0] = s->lp_span[i][0] > shift ? s->lp_span[i][0] - shift : 0;
		s->lp_span[i][1] = s->lp_span[i][1] > shift ? s->lp_span[i][1] - shift : 0;
	}
}

/* A token event releasing text pend[0..len) (text may point elsewhere for the final flush), with the logprob
 * entries of n_lp queued tokens. */
static int emit(struct slot *s, int32_t token, const char *text, size_t len, size_t n_lp)
{
	struct rn_event ev = {.token = token, .text = text ? text : "", .len = len, .slot = s->id,
			      .logprobs = n_lp ? s->lp : NULL, .n_logprobs = n_lp};
	return s->req.on_event ? s->req.on_event(s->req.user, &ev) : 0;
}

/* End the request: release what text remains (unless a stop string cut it), deliver the final event and
 * return the slot to idle. The KV cache and s->cache stay for the next request's prefix reuse. */
static void finish(struct rn_engine *e, struct slot *s, enum rn_done_reason reason, const struct rn_error *error,
		   bool keep_pending)
{
	int64_t t = now_ns();
	if (s->t_first) {
		s->stats.prompt_ns = s->t_first - s->t_start;
		s->stats.eval_ns = t - s->t_first;
	} else {
		s->stats.prompt_ns = t - s->t_start;
		s->stats.eval_ns = 0;
	}
	s->stats.n_eval = s->n_gen;
	/* text still held back: a partial stop string that never completed, and incomplete UTF-8 */
	char *tail = NULL;
	size_t tail_len = 0;
	if (keep_pending && reason != RN_DONE_ERROR) {
		const char *fl = NULL;
		size_t fl_len = 0;
		if (s->ts && rn_tok_stream_flush(s->ts, &fl, &fl_len) != RN_TOK_OK)
			fl_len = 0;
		tail = malloc(s->pend_len + fl_len + 1);
		if (tail) {
			if (s->pend_len)
				memcpy(tail, s->pend, s->pend_len);
			if (fl_len)
				memcpy(tail + s->pend_len, fl, fl_len);
			tail_len = s->pend_len + fl_len;
		}
	}
	struct rn_event ev = {
		.token = -1,
		.text = tail ? tail : "",
		.len = tail_len,
		.done = true,
		.reason = reason,
		.stats = &s->stats,
		.error = error,
		.slot = s->id,
		.logprobs = keep_pending && s->n_lp ? s->lp : NULL,
		.n_logprobs = keep_pending ? s->n_lp : 0,
	};
	if (s->req.on_event)
		(void)s->req.on_event(s->req.user, &ev);
	free(tail);
	slot_release_request(s);
	pthread_mutex_lock(&e->mu);
	s->state = SLOT_IDLE;
	s->last_used = t;
	pthread_mutex_unlock(&e->mu);
}

static void fail(struct rn_engine *e, struct slot *s, int code, const char *msg)
{
	struct rn_error er;
	rn_error_set(&er, code, "%s", msg);
	finish(e, s, RN_DONE_ERROR, &er, false);
}

static int pend_append(struct slot *s, const char *p, size_t n)
{
	if (ob_grow(&s->pend, &s->pend_cap, s->pend_len + n + 1, 1, 256, 0) != OB_GROW_OK)
		return RN_ERR_NOMEM;
	memcpy(s->pend + s->pend_len, p, n);
	s->pend_len += n;
	s->pend[s->pend_len] = 0;
	return RN_OK;
}

/* Length of the longest suffix of (t, n) that is a proper prefix of stop string (p, pl). */
static size_t partial_suffix(const char *t, size_t n, const char *p, size_t pl)
{
	size_t max = pl - 1 < n ? pl - 1 : n;
	for (size_t k = max; k > 0; k--)
		if (memcmp(t + n - k, p, k) == 0)
			return k;
	return 0;
}

static const char *find_bytes(const char *h, size_t hn, const char *n, size_t nn)
{
	if (nn == 0 || nn > hn)
		return NULL;
	for (size_t i = 0; i + nn <= hn; i++)
		if (h[i] == n[0] && memcmp(h + i, n, nn) == 0)
			return h + i;
	return NULL;
}

/* Queue the logprob entry of token tok, computed from the step's raw logits, for the text pend[start..end). */
static int lp_push(struct rn_engine *e, struct slot *s, int32_t tok, size_t start, size_t end)
{
	if (ob_grow(&s->lp, &s->cap_lp, s->n_lp + 1, sizeof *s->lp, 8, 0) != OB_GROW_OK ||
	    ob_grow(&s->lp_span, &s->cap_lp_span, s->n_lp + 1, sizeof *s->lp_span, 8, 0) != OB_GROW_OK)
		return RN_ERR_NOMEM;
	rn_logprob_compute(s->lp_row, e->n_vocab, tok, s->req.top_logprobs, &s->lp[s->n_lp]);
	s->lp_span[s->n_lp][0] = start;
	s->lp_span[s->n_lp][1] = end;
	s->n_lp++;
	return RN_OK;
}

/* A token was sampled: text, stop strings, event. Returns true when the request ended. */
static bool on_token(struct rn_engine *e, struct slot *s, int32_t tok)
{
	const char *piece = NULL;
	size_t plen = 0;
	bool special = s->req.render_special;
	for (size_t i = 0; i < s->n_preserved && !special; i++)
		special = s->preserved[i] == tok;
	if (s->ts && rn_tok_stream_push_as(s->ts, tok, special, &piece, &plen) != RN_TOK_OK)
		plen = 0;
	size_t start = s->pend_len;
	if ((plen && pend_append(s, piece, plen) != RN_OK) ||
	    (s->req.logprobs && lp_push(e, s, tok, start, s->pend_len) != RN_OK)) {
		fail(e, s, RN_ERR_NOMEM, "out of memory for the generated text");
		return true;
	}
	/* a complete stop string: release the text before it and stop */
	const char *cut = NULL;
	for (int i = 0; i < s->n_stop; i++) {
		const char *m = find_bytes(s->pend, s->pend_len, s->stop[i], s->stop_len[i]);
		if (m && (!cut || m < cut))
			cut = m;
	}
	if (cut) {
		size_t keep = (size_t)(cut - s->pend);
		int rc = emit(s, tok, s->pend, keep, lp_ready(s, keep));
		s->pend_len = 0;
		s->n_lp = 0; /* the tokens of the stop string: no entries */
		(void)rc;
		finish(e, s, RN_DONE_STOP, NULL, false);
		return true;
	}
	size_t hold = 0;
	for (int i = 0; i < s->n_stop; i++) {
		size_t k = partial_suffix(s->pend, s->pend_len, s->stop[i], s->stop_len[i]);
		if (k > hold)
			hold = k;
	}
	size_t out = s->pend_len - hold;
	size_t n_lp = lp_ready(s, out);
	int rc = emit(s, tok, s->pend, out, n_lp);
	lp_consume(s, n_lp, out);
	if (hold) /* (pend is NULL until a token had text) */
		memmove(s->pend, s->pend + out, hold);
	s->pend_len = hold;
	if (rc != 0 || atomic_load(&s->cancel)) {
		finish(e, s, RN_DONE_CANCEL, NULL, false);
		return true;
	}
	if (s->n_gen >= s->limit) {
		finish(e, s, RN_DONE_LENGTH, NULL, true);
		return true;
	}
	return false;
}

/* ---------------------------------------------------------------------------------------------------- */
/* grammar */

/* Before the grammar is on: look for grammar_after in the generated text; once found, feed the grammar what
 * followed it in the same token and switch it on. */
static void grammar_watch(struct rn_engine *e, struct slot *s, int32_t tok)
{
	const char *piece;
	size_t plen;
	if (rn_tok_piece(e->tok, tok, true, &piece, &plen) != RN_TOK_OK || plen == 0)
		return;
	if (ob_grow(&s->g_win, &s->g_win_cap, s->g_win_len + plen, 1, 64, 0) != OB_GROW_OK)
		return;
	memcpy(s->g_win + s->g_win_len, piece, plen);
	s->g_win_len += plen;
	const char *m = find_bytes(s->g_win, s->g_win_len, s->g_after, s->g_after_len);
	if (m) {
		size_t rest = s->g_win_len - (size_t)(m - s->g_win) - s->g_after_len;
		/* text that breaks the grammar (the model went on after the trigger with something else) is
		 * dropped: the grammar starts fresh with the next token */
		(void)rn_grammar_state_accept_bytes(s->gs, m + s->g_after_len, rest);
		s->g_on = true;
		s->g_win_len = 0;
		return;
	}
	size_t keep = s->g_after_len - 1;
	if (s->g_win_len > keep) {
		memmove(s->g_win, s->g_win + s->g_win_len - keep, keep);
		s->g_win_len = keep;
	}
}

/* ---------------------------------------------------------------------------------------------------- */
/* activation, context shift */

/* Prepare a queued request: truncate the prompt to the window, reuse the cached prefix. Returns false when
 * the request ended (error event delivered). */
static bool activate(struct rn_engine *e, struct slot *s)
{
	const int n_ctx = e->p.n_ctx;
	const int bos = e->tok && rn_tok_add_bos(e->tok) ? 1 : 0;
	int keep = s->req.num_keep < 0 ? (int)s->n_prompt : s->req.num_keep + bos;
	if (keep > (int)s->n_prompt)
		keep = (int)s->n_prompt;
	s->n_keep = keep;
	s->stats = (struct rn_engine_stats){.n_prompt_in = (int)s->n_prompt, .n_keep = keep};
	if (s->n_prompt >= (size_t)n_ctx) {
		char msg[160];
		if (!s->req.truncate) {
			snprintf(msg, sizeof msg, "the input length exceeds the context length (%zu tokens, context %d)",
				 s->n_prompt, n_ctx);
			fail(e, s, RN_ERR_CONTEXT, msg);
			return false;
		}
		if (keep >= n_ctx) {
			snprintf(msg, sizeof msg, "cannot truncate the prompt: num_keep keeps %d tokens of a %d-token context",
				 keep, n_ctx);
			fail(e, s, RN_ERR_CONTEXT, msg);
			return false;
		}
		/* as Ollama: keep the first `keep` tokens and the end, leaving half of the rest free */
		int half = (n_ctx - keep) / 2;
		int target = n_ctx - (half > 1 ? half : 1);
		size_t tail = (size_t)(target - keep);
		memmove(s->prompt + keep, s->prompt + s->n_prompt - tail, tail * sizeof *s->prompt);
		s->n_prompt = (size_t)target;
		s->stats.truncated = true;
	}
	size_t lcp = 0;
	struct rn_error er;
	if (s->req.cache_prompt) {
		/* the slot's own content, or the prefix cache's blocks when they cover more (shared, not copied) */
		lcp = common_prefix(s->cache, (size_t)s->n_cache, s->prompt, s->n_prompt);
		size_t shared = rn_backend_kv_match(e->b, s->prompt, s->n_prompt);
		if (shared > lcp) {
			if (rn_backend_kv_attach(e->b, s->id, s->prompt, shared, &er) != RN_OK) {
				fail(e, s, er.code, er.msg);
				return false;
			}
			memcpy(s->cache, s->prompt, shared * sizeof *s->cache);
			s->n_cache = (int)shared;
			lcp = shared;
		}
		if (lcp >= s->n_prompt)
			lcp = s->n_prompt - 1; /* evaluate at least the last token to get its logits (the same logits as
						* in a batch: attention sums in one order whatever the batch) */
	}
	if (rn_backend_kv_remove(e->b, s->id, (int32_t)lcp, -1, &er) != RN_OK) {
		fail(e, s, er.code, er.msg);
		return false;
	}
	rn_backend_kv_account(e->b, lcp);
	s->n_cache = (int)lcp;
	s->n_fed = lcp;
	s->stats.n_prompt = (int)s->n_prompt;
	s->stats.n_cached = (int)lcp;
	for (size_t i = 0; i < s->n_prompt; i++)
		rn_sampler_accept(s->smp, s->prompt[i]);
	int cap = RN_ENGINE_PREDICT_CAP * n_ctx;
	s->until_full = s->req.num_predict == -2;
	s->limit = s->req.num_predict < 0 ? cap : (s->req.num_predict < cap ? s->req.num_predict : cap);
	s->n_gen = 0;
	s->t_first = 0;
	s->pend_len = 0;
	s->state = SLOT_PREFILL;
	return true;
}

/* The slot's cache is full and it must add a token: drop half of what follows the kept prefix. Returns
 * false when the request ended. */
static bool context_shift(struct rn_engine *e, struct slot *s)
{
	const int n_ctx = e->p.n_ctx;
	if (!s->req.shift || s->until_full) {
		finish(e, s, RN_DONE_LENGTH, NULL, true);
		return false;
	}
	int keep = s->n_keep;
	if (keep >= n_ctx - 1) {
		finish(e, s, RN_DONE_LENGTH, NULL, true); /* nothing left to discard */
		return false;
	}
	int discard = (n_ctx - keep) / 2;
	if (discard < 1)
		discard = 1;
	struct rn_error er;
	if (rn_backend_kv_remove(e->b, s->id, keep, keep + discard, &er) != RN_OK ||
	    rn_backend_kv_shift(e->b, s->id, keep + discard, -1, -discard, &er) != RN_OK) {
		fail(e, s, er.code, er.msg);
		return false;
	}
	memmove(s->cache + keep, s->cache + keep + discard, (size_t)(s->n_cache - keep - discard) * sizeof *s->cache);
	s->n_cache -= discard;
	s->stats.n_shift++;
	return true;
}

/* ---------------------------------------------------------------------------------------------------- */
/* the step */

int rn_engine_step(struct rn_engine *e)
{
	const int S = e->p.n_seq;
	/* activate queued requests */
	for (int i = 0; i < S; i++) {
		struct slot *s = &e->slots[i];
		pthread_mutex_lock(&e->mu);
		bool queued = s->state == SLOT_QUEUED;
		if (queued)
			e->n_queued--;
		pthread_mutex_unlock(&e->mu);
		if (queued)
			(void)activate(e, s);
	}
	/* cancellations */
	for (int i = 0; i < S; i++) {
		struct slot *s = &e->slots[i];
		if ((s->state == SLOT_PREFILL || s->state == SLOT_DECODE) && atomic_load(&s->cancel))
			finish(e, s, RN_DONE_CANCEL, NULL, false);
	}

	/* build the batch: decoding slots first (one token each), then prompt chunks */
	int n = 0, n_out = 0;
	const int B = e->p.n_batch;
	for (int i = 0; i < S; i++) {
		e->slots[i].out_row = -1;
		e->slots[i].n_fed_step = 0;
	}
	for (int i = 0; i < S && n < B; i++) {
		struct slot *s = &e->slots[i];
		if (s->state != SLOT_DECODE)
			continue;
		if (s->n_cache >= e->p.n_ctx && !context_shift(e, s))
			continue;
		e->bt_tok[n] = s->next_token;
		e->bt_pos[n] = s->n_cache;
		e->bt_seq[n] = s->id;
		e->bt_want[n] = 1;
		s->out_row = n_out++;
		s->n_fed_step = 1;
		n++;
	}
	for (int i = 0; i < S && n < B; i++) {
		struct slot *s = &e->slots[i];
		if (s->state != SLOT_PREFILL)
			continue;
		size_t left = s->n_prompt - s->n_fed;
		size_t take = left < (size_t)(B - n) ? left : (size_t)(B - n);
		for (size_t k = 0; k < take; k++) {
			e->bt_tok[n] = s->prompt[s->n_fed + k];
			e->bt_pos[n] = s->n_cache + (int)k;
			e->bt_seq[n] = s->id;
			e->bt_want[n] = 0;
			n++;
		}
		s->n_fed_step = (int)take;
		if (take == left) {
			e->bt_want[n - 1] = 1;
			s->out_row = n_out++;
		}
	}

	int active = 0;
	if (n > 0) {
		struct rn_batch batch = {.n_tokens = n, .token = e->bt_tok, .pos = e->bt_pos, .seq = e->bt_seq,
					 .want = e->bt_want};
		struct rn_outputs out = {.logits = e->logits};
		struct rn_error er;
		if (rn_backend_forward(e->b, &batch, &out, &er) != RN_OK) {
			for (int i = 0; i < S; i++)
				if (e->slots[i].n_fed_step > 0)
					finish(e, &e->slots[i], RN_DONE_ERROR, &er, false);
			return -1;
		}
		for (int i = 0; i < S; i++) {
			struct slot *s = &e->slots[i];
			if (s->n_fed_step == 0)
				continue;
			if (s->state == SLOT_PREFILL) {
				memcpy(s->cache + s->n_cache, s->prompt + s->n_fed, (size_t)s->n_fed_step * sizeof(int32_t));
				s->n_fed += (size_t)s->n_fed_step;
			} else {
				s->cache[s->n_cache] = s->next_token;
			}
			s->n_cache += s->n_fed_step;
			/* the blocks this step filled become shareable */
			rn_backend_kv_publish(e->b, s->id, s->cache, (size_t)s->n_cache);
			if (s->out_row < 0)
				continue;
			/* the slot has logits: sample */
			if (s->n_gen >= s->limit) {
				finish(e, s, RN_DONE_LENGTH, NULL, true);
				continue;
			}
			float *lg = e->logits + (size_t)s->out_row * (size_t)e->n_vocab;
			if (s->req.logprobs) /* the sampler changes lg: logprobs are of the raw logits */
				memcpy(s->lp_row, lg, (size_t)e->n_vocab * sizeof *lg);
			/* under a grammar, the raw logits are copied for a second draw only when penalties change them */
			const struct rn_sampler_params *sp = &s->req.sampling;
			bool pen = sp->repeat_last_n != 0 && (sp->repeat_penalty != 1.0f || sp->presence_penalty != 0.0f ||
							      sp->frequency_penalty != 0.0f);
			bool masked;
			int32_t t = s->g_on ? rn_grammar_sample(s->gs, s->smp, lg, pen ? s->g_row : NULL, e->n_vocab,
								&masked)
					    : rn_sampler_sample(s->smp, lg);
			if (t < 0) {
				fail(e, s, RN_ERR_INVALID_ARG, "the grammar allows no token here (or its stacks went past "
				     "their limit)");
				continue;
			}
			rn_sampler_accept(s->smp, t);
			s->n_gen++;
			if (!s->t_first)
				s->t_first = now_ns();
			s->state = SLOT_DECODE;
			s->next_token = t;
			if (e->tok && rn_tok_is_eog(e->tok, t)) {
				finish(e, s, RN_DONE_STOP, NULL, true);
				continue;
			}
			bool g_final = false;
			if (s->g_on) {
				if (rn_grammar_state_accept(s->gs, t) != RN_OK) { /* allowed a moment ago: cannot happen */
					fail(e, s, RN_ERR_INVALID_ARG, "the grammar rejected the token it allowed");
					continue;
				}
				(void)rn_grammar_state_can_end(s->gs, &g_final);
			} else if (s->gs) {
				grammar_watch(e, s, t);
				(void)rn_grammar_state_can_end(s->gs, &g_final);
				g_final = g_final && s->g_on;
			}
			if (!on_token(e, s, t) && g_final) /* nothing can follow: done */
				finish(e, s, RN_DONE_STOP, NULL, true);
		}
	}
	for (int i = 0; i < S; i++) {
		enum slot_state st = e->slots[i].state;
		active += st != SLOT_IDLE;
	}
	struct rn_cache_stats cs;
	rn_backend_cache_stats(e->b, &cs);
	pthread_mutex_lock(&e->mu);
	e->cstats = cs;
	pthread_mutex_unlock(&e->mu);
	return active;
}

void rn_engine_cache_stats(struct rn_engine *e, struct rn_cache_stats *st)
{
	pthread_mutex_lock(&e->mu);
	*st = e->cstats;
	pthread_mutex_unlock(&e->mu);
}

int rn_engine_run(struct rn_engine *e, const struct rn_request *r, struct rn_error *err)
{
	int slot = rn_engine_submit(e, r, err);
	if (slot < 0)
		return err ? err->code : RN_ERR_BUSY;
	while (e->slots[slot].state != SLOT_IDLE)
		if (rn_engine_step(e) < 0)
			break;
	return RN_OK;
}
