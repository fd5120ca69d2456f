/* runner/grammar/vocab.c — a tokenizer's vocabulary as the grammar sees it: each token's decoded bytes (the
 * piece llama.cpp would print; control and end-of-generation tokens are not text) in a byte trie laid out in
 * preorder, so that the matcher can walk every token that shares a prefix once and skip a whole subtree the
 * grammar rejects. Built once per tokenizer; immutable after.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "runner/grammar/grammar_int.h"
#include "runner/tokenizer/tokenizer.h"

struct entry {
	const char *p;
	uint32_t len;
	int32_t id;
};

static int entry_cmp(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	uint32_t n = x->len < y->len ? x->len : y->len;
	int c = n ? memcmp(x->p, y->p, n) : 0;
	if (c)
		return c;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

void rn_grammar_vocab_free(struct rn_grammar_vocab *v)
{
	if (!v)
		return;
	free(v->byte);
	free(v->depth);
	free(v->end);
	free(v->tok);
	free(v->tok_next);
	free(v->text);
	free(v->len);
	free(v->eog);
	free(v);
}

struct rn_grammar_vocab *rn_grammar_vocab_from_pieces(const char *const *text, const uint32_t *len,
						      const uint8_t *eog, uint32_t N, struct rn_error *err)
{
	struct rn_grammar_vocab *v = calloc(1, sizeof *v);
	struct entry *ent = NULL;
	uint32_t *path = NULL;
	if (!v)
		goto nomem;
	v->n_vocab = N;
	v->tok_next = malloc((N ? N : 1) * sizeof *v->tok_next);
	v->text = calloc(N ? N : 1, sizeof *v->text);
	v->len = calloc(N ? N : 1, sizeof *v->len);
	v->eog = calloc(N ? N : 1, 1);
	ent = malloc((N ? N : 1) * sizeof *ent);
	if (!v->tok_next || !v->text || !v->len || !v->eog || !ent)
		goto nomem;
	size_t n_ent = 0, total = 1;
	for (uint32_t id = 0; id < N; id++) {
		v->tok_next[id] = -1;
		if (eog && eog[id]) {
			v->eog[id] = 1;
			continue;
		}
		if (len[id] == 0)
			continue;
		v->text[id] = text[id];
		v->len[id] = len[id];
		ent[n_ent++] = (struct entry){text[id], len[id], (int32_t)id};
		total += len[id];
		if (len[id] > v->max_depth)
			v->max_depth = len[id];
	}
	qsort(ent, n_ent, sizeof *ent, entry_cmp);
	v->byte = malloc(total);
	v->depth = malloc(total * sizeof *v->depth);
	v->end = malloc(total * sizeof *v->end);
	v->tok = malloc(total * sizeof *v->tok);
	path = malloc((v->max_depth + 1) * sizeof *path);
	if (!v->byte || !v->depth || !v->end || !v->tok || !path)
		goto nomem;
	uint32_t n = 0, d = 0; /* nodes so far; depth of the open path (path[0..d] are open) */
	v->byte[0] = 0;
	v->depth[0] = 0;
	v->tok[0] = -1;
	path[0] = n++;
	const struct entry *prev = NULL;
	for (size_t k = 0; k < n_ent; k++) {
		const struct entry *e = &ent[k];
		uint32_t lcp = 0;
		if (prev)
			while (lcp < prev->len && lcp < e->len && prev->p[lcp] == e->p[lcp])
				lcp++;
		while (d > lcp) /* close the nodes below the common prefix */
			v->end[path[d--]] = n;
		for (uint32_t b = lcp; b < e->len; b++) {
			v->byte[n] = (uint8_t)e->p[b];
			v->depth[n] = b + 1;
			v->tok[n] = -1;
			path[++d] = n++;
		}
		uint32_t at = path[d];
		if (v->tok[at] < 0) {
			v->tok[at] = e->id;
		} else { /* the same text as an earlier token: chain it */
			int32_t t = v->tok[at];
			while (v->tok_next[t] >= 0)
				t = v->tok_next[t];
			v->tok_next[t] = e->id;
		}
		prev = e;
	}
	while (d > 0)
		v->end[path[d--]] = n;
	v->end[0] = n;
	v->n_nodes = n;
	free(ent);
	free(path);
	return v;
nomem:
	free(ent);
	free(path);
	rn_grammar_vocab_free(v);
	rn_error_set(err, RN_ERR_NOMEM, "grammar: out of memory for the vocabulary trie");
	return NULL;
}

struct rn_grammar_vocab *rn_grammar_vocab_new(const struct rn_tok *tok, struct rn_error *err)
{
	uint32_t N = rn_tok_n_vocab(tok);
	const char **text = calloc(N ? N : 1, sizeof *text);
	uint32_t *len = calloc(N ? N : 1, sizeof *len);
	uint8_t *eog = calloc(N ? N : 1, 1);
	struct rn_grammar_vocab *v = NULL;
	if (!text || !len || !eog) {
		rn_error_set(err, RN_ERR_NOMEM, "grammar: out of memory for the vocabulary trie");
		goto out;
	}
	for (uint32_t id = 0; id < N; id++) {
		size_t l;
		if (rn_tok_is_eog(tok, (int32_t)id))
			eog[id] = 1;
		else if (!rn_tok_is_control(tok, (int32_t)id) && rn_tok_piece(tok, (int32_t)id, false, &text[id], &l) == RN_TOK_OK)
			len[id] = (uint32_t)l; /* control tokens and empty pieces stay 0: never text */
	}
	v = rn_grammar_vocab_from_pieces(text, len, eog, N, err);
out:
	free(text);
	free(len);
	free(eog);
	return v;
}
