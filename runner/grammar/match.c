/* runner/grammar/match.c — the grammar matcher: a set of pushdown stacks of element positions (llama.cpp's
 * approach), advanced one code point at a time, with the state of a UTF-8 sequence a token left unfinished.
 * The mask walks the vocabulary trie once with the stack set, skipping every subtree whose prefix the grammar
 * rejects, and keeps the last few masks per state keyed by the stack set. Deliberately not here: choosing a
 * token (the sampler) or when to mask (the engine).
 *
 * Memory: a state's stacks live in one growable pool of uint32 words; the committed set sits at its start, and
 * every set computed while walking is written after it and dropped by resetting the top. A set is its stacks
 * one after the other, each as [len, bottom .. top].
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "runner/grammar/grammar_int.h"

#define HT_SIZE 8192u  /* dedup table for one advance; >= 2 x RN_GRAMMAR_MAX_STACKS */
#define MASK_CACHE 8   /* masks kept per state */

struct pos {
	size_t off, words; /* the set: pool[off .. off+words) */
	uint32_t n;        /* stacks in it */
	uint32_t cp;       /* the bits of an unfinished UTF-8 sequence */
	uint32_t need;     /* its continuation bytes still to come (0: none pending) */
	size_t top;        /* the pool's top after this set */
};

struct mask_entry {
	uint32_t *key;     /* [key_len]: the set's words, then cp and need */
	size_t key_len, key_cap;
	uint64_t hash;
	uint64_t *bits;    /* allowed tokens [(n_vocab + 63) / 64] */
	uint64_t used;     /* last use, for eviction */
};

struct rn_grammar_state {
	const struct rn_grammar *g;
	const struct rn_grammar_vocab *v;
	struct pos cur; /* committed (off 0) */
	uint32_t *pool;
	size_t pool_top, pool_cap;
	uint32_t *work; /* expansion work list: stacks as [bottom .. top, len], the last one on top */
	size_t work_top, work_cap;
	uint32_t *tmp;
	size_t tmp_cap;
	uint32_t ht[HT_SIZE];       /* out offset + 1 */
	uint32_t ht_used[RN_GRAMMAR_MAX_STACKS + 1];
	uint32_t n_ht_used;
	bool overflow;              /* the last advance went past a limit (or out of memory) */
	bool limited;               /* a mask walk: every expansion step counts against budget */
	uint64_t budget;
	uint64_t words;             /* copied by expansions in this advance */
	bool budget_hit;            /* the last mask walk ran out of budget (the mask then allows nothing) */
	struct pos *path;           /* mask walk: the set after each depth [max_depth + 1] */
	struct mask_entry cache[MASK_CACHE];
	uint64_t clock;
};

/* ---------------------------------------------------------------------------------------------------- */
/* stacks */

static bool is_end(const struct ge *e) { return e->type == GE_END || e->type == GE_ALT; }

static bool pool_reserve(struct rn_grammar_state *s, size_t words)
{
	if (ob_grow(&s->pool, &s->pool_cap, s->pool_top + words, sizeof *s->pool, 1024, 0) != OB_GROW_OK) {
		s->overflow = true;
		return false;
	}
	return true;
}

static bool work_push(struct rn_grammar_state *s, const uint32_t *base, uint32_t n, uint32_t extra1, uint32_t extra2)
{
	if (ob_grow(&s->work, &s->work_cap, s->work_top + n + 3, sizeof *s->work, 256, 0) != OB_GROW_OK) {
		s->overflow = true;
		return false;
	}
	uint32_t *w = s->work + s->work_top;
	if (n)
		memcpy(w, base, n * sizeof *w);
	uint32_t len = n;
	if (extra1 != UINT32_MAX)
		w[len++] = extra1;
	if (extra2 != UINT32_MAX)
		w[len++] = extra2;
	w[len] = len;
	s->work_top += len + 1;
	return true;
}

static uint32_t stack_hash(const uint32_t *st, uint32_t len)
{
	uint32_t h = 2166136261u ^ len;
	for (uint32_t k = 0; k < len; k++)
		h = (h ^ st[k]) * 16777619u;
	return h;
}

/* Add the stack st[0..len) to the set being built at out (dedup). */
static void out_add(struct rn_grammar_state *s, struct pos *out, const uint32_t *st, uint32_t len)
{
	uint32_t h = stack_hash(st, len) & (HT_SIZE - 1);
	while (s->ht[h]) {
		const uint32_t *o = s->pool + s->ht[h] - 1;
		if (o[0] == len && memcmp(o + 1, st, len * sizeof *st) == 0)
			return;
		h = (h + 1) & (HT_SIZE - 1);
	}
	if (out->n >= RN_GRAMMAR_MAX_STACKS) {
		s->overflow = true;
		return;
	}
	if (!pool_reserve(s, len + 1))
		return;
	uint32_t *o = s->pool + s->pool_top;
	o[0] = len;
	if (len)
		memcpy(o + 1, st, len * sizeof *st);
	s->ht[h] = (uint32_t)(s->pool_top + 1);
	s->ht_used[s->n_ht_used++] = h;
	s->pool_top += len + 1;
	out->words += len + 1;
	out->n++;
}

/* Expand the stacks on the work list until each has a terminal on top (or is empty: the grammar may end),
 * adding them to out. */
static void expand(struct rn_grammar_state *s, struct pos *out)
{
	const struct rn_grammar *g = s->g;
	while (s->work_top > 0 && !s->overflow) {
		uint32_t len = s->work[s->work_top - 1];
		uint32_t *st = s->work + s->work_top - 1 - len;
		if (len == 0 || g->el[st[len - 1]].type != GE_REF) {
			out_add(s, out, st, len);
			s->work_top -= len + 1;
			continue;
		}
		uint32_t r = s->g->el[st[len - 1]].v, n_alt = g->rule_alt[r + 1] - g->rule_alt[r];
		uint64_t cost = (uint64_t)(len + 1) * (n_alt + 1);
		s->words += cost;
		if (s->words > RN_GRAMMAR_MAX_EXPAND || (s->limited && s->budget < cost)) {
			s->budget_hit |= s->limited && s->budget < cost;
			s->overflow = true;
			break;
		}
		if (s->limited)
			s->budget -= cost;
		/* pop it into tmp, then push base (+ continuation) + each alternative's start */
		if (ob_grow(&s->tmp, &s->tmp_cap, len, sizeof *s->tmp, 64, 0) != OB_GROW_OK) {
			s->overflow = true;
			break;
		}
		memcpy(s->tmp, st, len * sizeof *st);
		s->work_top -= len + 1;
		uint32_t top = s->tmp[len - 1];
		uint32_t cont = is_end(&g->el[top + 1]) ? UINT32_MAX : top + 1;
		for (uint32_t a = g->rule_alt[r + 1]; a > g->rule_alt[r]; a--) {
			uint32_t start = g->alt[a - 1];
			if (!work_push(s, s->tmp, len - 1, cont, is_end(&g->el[start]) ? UINT32_MAX : start))
				break;
		}
	}
	s->work_top = 0;
}

static void ht_clear(struct rn_grammar_state *s)
{
	for (uint32_t k = 0; k < s->n_ht_used; k++)
		s->ht[s->ht_used[k]] = 0;
	s->n_ht_used = 0;
}

/* The set after code point c from the set in; written at the pool's top. */
static void advance(struct rn_grammar_state *s, const struct pos *in, uint32_t c, struct pos *out)
{
	const struct rn_grammar *g = s->g;
	*out = (struct pos){.off = s->pool_top};
	s->overflow = false;
	s->words = 0;
	size_t at = in->off, end = in->off + in->words;
	while (at < end && !s->overflow) {
		const uint32_t *st = s->pool + at;
		uint32_t len = st[0];
		at += len + 1;
		if (len == 0)
			continue;
		uint32_t top = st[len];
		if (!rn_grammar_el_match(g, &g->el[top], c))
			continue;
		if (!work_push(s, st + 1, len - 1, is_end(&g->el[top + 1]) ? UINT32_MAX : top + 1, UINT32_MAX))
			break;
		expand(s, out);
	}
	s->work_top = 0;
	ht_clear(s);
	out->top = s->pool_top;
}

/* Some stack of the set may take a code point in [lo, hi]. */
static bool set_may_take(const struct rn_grammar_state *s, const struct pos *in, uint32_t lo, uint32_t hi)
{
	size_t at = in->off, end = in->off + in->words;
	while (at < end) {
		const uint32_t *st = s->pool + at;
		uint32_t len = st[0];
		at += len + 1;
		if (len && rn_grammar_el_match_range(s->g, &s->g->el[st[len]], lo, hi))
			return true;
	}
	return false;
}

/* in followed by byte b: false when the grammar rejects it. out may share in's set (a UTF-8 sequence goes
 * on). The pool's top must be at in->top. */
static bool step_byte(struct rn_grammar_state *s, const struct pos *in, uint8_t b, struct pos *out)
{
	uint32_t cp, need;
	if (in->need == 0) {
		if (b < 0x80) {
			advance(s, in, b, out);
			return out->n > 0 && !s->overflow;
		}
		if (b >= 0xC2 && b <= 0xDF)
			need = 1, cp = b & 0x1Fu;
		else if (b >= 0xE0 && b <= 0xEF)
			need = 2, cp = b & 0x0Fu;
		else if (b >= 0xF0 && b <= 0xF4)
			need = 3, cp = b & 0x07u;
		else
			return false;
	} else {
		if ((b & 0xC0) != 0x80)
			return false;
		/* the second byte of a 3- or 4-byte sequence: no overlong forms, no surrogates, nothing past U+10FFFF
		 * (a 4-byte sequence's third byte has in->cp >= 0x10, a 3-byte one's second in->cp <= 0xF) */
		if (in->need == 2 && in->cp <= 0xF &&
		    ((in->cp == 0x0 && b < 0xA0) || (in->cp == 0xD && b >= 0xA0)))
			return false;
		if (in->need == 3 && ((in->cp == 0 && b < 0x90) || (in->cp == 4 && b >= 0x90)))
			return false;
		cp = in->cp << 6 | (b & 0x3Fu);
		need = in->need - 1;
		if (need == 0) {
			if (cp > 0x10FFFF)
				return false;
			advance(s, in, cp, out);
			return out->n > 0 && !s->overflow;
		}
	}
	uint32_t lo = cp << (6 * need), hi = lo | ((1u << (6 * need)) - 1);
	if (in->need == 0) { /* a lead byte: only the code points its sequence can really encode */
		if (need == 2 && lo < 0x800)
			lo = 0x800;
		if (need == 2 && cp == 0xD)
			hi = 0xD7FF;
		if (need == 3 && lo < 0x10000)
			lo = 0x10000;
		if (hi > 0x10FFFF)
			hi = 0x10FFFF;
		if (lo > hi)
			return false;
	}
	if (!set_may_take(s, in, lo, hi))
		return false;
	*out = *in;
	out->cp = cp;
	out->need = need;
	out->top = s->pool_top;
	return true;
}

/* Walk bytes from the committed set; on success *end is the set after them (in the pool). */
static bool walk(struct rn_grammar_state *s, const char *text, size_t len, struct pos *end)
{
	struct pos a = s->cur, b;
	s->pool_top = s->cur.top;
	for (size_t k = 0; k < len; k++) {
		if (!step_byte(s, &a, (uint8_t)text[k], &b)) {
			s->pool_top = s->cur.top;
			return false;
		}
		a = b;
	}
	*end = a;
	return true;
}

/* Make the set at p the committed one. */
static void commit(struct rn_grammar_state *s, const struct pos *p)
{
	if (p->off != 0 && p->words)
		memmove(s->pool, s->pool + p->off, p->words * sizeof *s->pool);
	s->cur = *p;
	s->cur.off = 0;
	s->cur.top = p->words;
	s->pool_top = s->cur.top;
}

/* ---------------------------------------------------------------------------------------------------- */
/* state */

void rn_grammar_state_free(struct rn_grammar_state *s)
{
	if (!s)
		return;
	free(s->pool);
	free(s->work);
	free(s->tmp);
	free(s->path);
	for (int k = 0; k < MASK_CACHE; k++) {
		free(s->cache[k].key);
		free(s->cache[k].bits);
	}
	free(s);
}

struct rn_grammar_state *rn_grammar_state_new(const struct rn_grammar *g, const struct rn_grammar_vocab *v,
					      struct rn_error *err)
{
	struct rn_grammar_state *s = calloc(1, sizeof *s);
	if (!s || !(s->path = malloc(((v ? v->max_depth : 0) + 1) * sizeof *s->path)))
		goto nomem;
	s->g = g;
	s->v = v;
	/* the start: each alternative of the root rule, expanded */
	struct pos out = {.off = 0};
	uint32_t r = g->root;
	for (uint32_t a = g->rule_alt[r]; a < g->rule_alt[r + 1] && !s->overflow; a++) {
		uint32_t start = g->alt[a];
		if (work_push(s, NULL, 0, is_end(&g->el[start]) ? UINT32_MAX : start, UINT32_MAX))
			expand(s, &out);
	}
	ht_clear(s);
	if (s->overflow) {
		rn_grammar_state_free(s);
		rn_error_set(err, RN_ERR_INVALID_ARG, "grammar: the start rule expands to more than %u stacks or %u words",
			     RN_GRAMMAR_MAX_STACKS, RN_GRAMMAR_MAX_EXPAND);
		return NULL;
	}
	out.top = s->pool_top;
	s->cur = out;
	return s;
nomem:
	rn_grammar_state_free(s);
	rn_error_set(err, RN_ERR_NOMEM, "grammar: out of memory");
	return NULL;
}

const struct rn_grammar_vocab *rn_grammar_state_vocab(const struct rn_grammar_state *s) { return s->v; }

bool rn_grammar_state_mask_failed(const struct rn_grammar_state *s) { return s->budget_hit; }

bool rn_grammar_state_can_end(const struct rn_grammar_state *s, bool *final)
{
	bool empty = false;
	size_t at = s->cur.off, end = s->cur.off + s->cur.words;
	while (at < end) {
		uint32_t len = s->pool[at];
		empty |= len == 0;
		at += len + 1;
	}
	bool can = empty && s->cur.need == 0;
	if (final)
		*final = can && s->cur.n == 1;
	return can;
}

bool rn_grammar_state_allows(struct rn_grammar_state *s, int32_t token)
{
	const struct rn_grammar_vocab *v = s->v;
	if (!v || token < 0 || (uint32_t)token >= v->n_vocab)
		return false;
	if (v->eog[token])
		return rn_grammar_state_can_end(s, NULL);
	if (v->len[token] == 0)
		return false;
	struct pos end;
	bool ok = walk(s, v->text[token], v->len[token], &end);
	s->pool_top = s->cur.top;
	return ok;
}

int rn_grammar_state_accept(struct rn_grammar_state *s, int32_t token)
{
	const struct rn_grammar_vocab *v = s->v;
	if (!v || token < 0 || (uint32_t)token >= v->n_vocab)
		return RN_ERR_INVALID_ARG;
	if (v->eog[token])
		return rn_grammar_state_can_end(s, NULL) ? RN_OK : RN_ERR_INVALID_ARG;
	return rn_grammar_state_accept_bytes(s, v->text[token], v->len[token]) && v->len[token] ? RN_OK
												  : RN_ERR_INVALID_ARG;
}

bool rn_grammar_state_accept_bytes(struct rn_grammar_state *s, const char *text, size_t len)
{
	if (len == 0)
		return true;
	struct pos end;
	if (!walk(s, text, len, &end))
		return false;
	commit(s, &end);
	return true;
}

/* ---------------------------------------------------------------------------------------------------- */
/* mask */

static uint64_t key_hash(const struct rn_grammar_state *s)
{
	uint64_t h = 1469598103934665603ull ^ s->cur.cp ^ ((uint64_t)s->cur.need << 32);
	for (size_t k = 0; k < s->cur.words; k++)
		h = (h ^ s->pool[k]) * 1099511628211ull;
	return h;
}

static struct mask_entry *cache_find(struct rn_grammar_state *s, uint64_t h)
{
	for (int k = 0; k < MASK_CACHE; k++) {
		struct mask_entry *c = &s->cache[k];
		if (c->bits && c->hash == h && c->key_len == s->cur.words + 2 && c->key[s->cur.words] == s->cur.cp &&
		    c->key[s->cur.words + 1] == s->cur.need &&
		    (s->cur.words == 0 || memcmp(c->key, s->pool, s->cur.words * sizeof *s->pool) == 0))
			return c;
	}
	return NULL;
}

/* The allowed tokens of the committed set into bits (cleared first): one preorder walk of the trie. */
static void compute_allowed(struct rn_grammar_state *s, uint64_t *bits)
{
	const struct rn_grammar_vocab *v = s->v;
	memset(bits, 0, ((v->n_vocab + 63) / 64) * sizeof *bits);
	s->path[0] = s->cur;
	s->limited = true;
	s->budget = RN_GRAMMAR_MASK_BUDGET;
	s->budget_hit = false;
	uint32_t i = 1;
	while (i < v->n_nodes && !s->budget_hit) {
		uint32_t d = v->depth[i];
		const struct pos *parent = &s->path[d - 1];
		s->pool_top = parent->top;
		if (!step_byte(s, parent, v->byte[i], &s->path[d])) {
			i = v->end[i];
			continue;
		}
		for (int32_t t = v->tok[i]; t >= 0; t = v->tok_next[t])
			bits[t >> 6] |= 1ull << (t & 63);
		i++;
	}
	s->pool_top = s->cur.top;
	s->limited = false;
	if (s->budget_hit) { /* allow nothing rather than a mask that disagrees with allows */
		memset(bits, 0, ((v->n_vocab + 63) / 64) * sizeof *bits);
		return;
	}
	if (rn_grammar_state_can_end(s, NULL))
		for (uint32_t t = 0; t < v->n_vocab; t++)
			if (v->eog[t])
				bits[t >> 6] |= 1ull << (t & 63);
}

void rn_grammar_state_mask(struct rn_grammar_state *s, float *logits)
{
	const struct rn_grammar_vocab *v = s->v;
	if (!v)
		return;
	uint64_t h = key_hash(s);
	struct mask_entry *c = cache_find(s, h);
	if (!c) { /* evict the least recently used entry */
		c = &s->cache[0];
		for (int k = 1; k < MASK_CACHE; k++)
			if (s->cache[k].used < c->used)
				c = &s->cache[k];
		size_t nw = (v->n_vocab + 63) / 64;
		if (!c->bits && !(c->bits = malloc(nw * sizeof *c->bits)))
			c = NULL;
		else if (ob_grow(&c->key, &c->key_cap, s->cur.words + 2, sizeof *c->key, 16, 0) != OB_GROW_OK)
			c = NULL;
		if (c) {
			compute_allowed(s, c->bits);
			c->hash = s->budget_hit ? 0 : h; /* never found again */
			if (s->cur.words)
				memcpy(c->key, s->pool, s->cur.words * sizeof *s->pool);
			c->key[s->cur.words] = s->cur.cp;
			c->key[s->cur.words + 1] = s->cur.need;
			c->key_len = s->budget_hit ? 0 : s->cur.words + 2;
		}
	}
	if (!c) { /* out of memory for the cache: token by token */
		for (uint32_t t = 0; t < v->n_vocab; t++)
			if (!rn_grammar_state_allows(s, (int32_t)t))
				logits[t] = -INFINITY;
		return;
	}
	c->used = ++s->clock;
	const uint64_t *bits = c->bits;
	for (uint32_t w = 0; w * 64 < v->n_vocab; w++) {
		uint64_t b = bits[w];
		if (b == UINT64_MAX)
			continue;
		uint32_t lim = v->n_vocab - w * 64 < 64 ? v->n_vocab - w * 64 : 64;
		for (uint32_t k = 0; k < lim; k++)
			if (!(b >> k & 1))
				logits[w * 64 + k] = -INFINITY;
	}
}
