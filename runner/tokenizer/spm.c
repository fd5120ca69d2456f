/* runner/tokenizer/spm.c — SentencePiece-style tokenization (tokenizer.ggml.model "llama").
 *
 * The text's spaces become U+2581 (and one is put in front when asked), it is cut into UTF-8 characters, and
 * the adjacent pair whose joined text is the vocabulary token with the highest score is joined, again and
 * again (ties: the leftmost pair), as llama.cpp's llm_tokenizer_spm does. What is left and is not a token is
 * written as byte tokens <0xXX>. No normalization beyond the space escape, as in llama.cpp.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/utf8.h"
#include "runner/tokenizer/internal.h"

int32_t rn_tok_spm_byte_token(const struct rn_tok *tok, uint8_t b)
{
	static const char hex[] = "0123456789ABCDEF";
	char buf[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
	int32_t id = rn_tok_vocab_find(tok, buf, 6);
	if (id < 0) /* llama.cpp falls back to the byte itself as a token */
		id = rn_tok_vocab_find(tok, (const char *)&b, 1);
	return id;
}

struct bigram {
	float score;
	int32_t left, right;
	uint32_t size;
};

struct spm {
	const struct rn_tok *tok;
	const char *text;
	uint32_t *start, *len;
	int32_t *prev, *next;
	struct rn_tok_heap heap; /* of struct bigram */
	bool oom;
};

/* higher score first; equal scores: smaller left index first */
static bool better(const void *pa, const void *pb)
{
	const struct bigram *a = pa, *b = pb;
	return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static void try_bigram(struct spm *s, int32_t l, int32_t r)
{
	if (l < 0 || r < 0)
		return;
	uint32_t size = s->len[l] + s->len[r];
	int32_t id = rn_tok_vocab_find(s->tok, s->text + s->start[l], size);
	if (id < 0)
		return;
	struct bigram b = {s->tok->tokens[id].score, l, r, size};
	if (!rn_tok_heap_push(&s->heap, &b, sizeof b, better))
		s->oom = true;
}

int rn_tok_spm_encode(const struct rn_tok *tok, const char *raw, size_t raw_len, bool space_prefix,
		      struct rn_tok_ids *out, struct rn_tok_error *err)
{
	/* escape: ' ' -> U+2581 (3 bytes); a leading space when asked */
	size_t n_sp = space_prefix;
	for (size_t i = 0; i < raw_len; i++)
		n_sp += raw[i] == ' ';
	size_t n = raw_len + space_prefix + 2 * n_sp;
	if (n == 0)
		return RN_TOK_OK;
	char *text = malloc(n);
	struct spm s = {.tok = tok, .text = text};
	s.start = malloc(n * sizeof *s.start);
	s.len = malloc(n * sizeof *s.len);
	s.prev = malloc(n * sizeof *s.prev);
	s.next = malloc(n * sizeof *s.next);
	if (!text || !s.start || !s.len || !s.prev || !s.next) {
		s.oom = true;
		goto done;
	}
	size_t j = 0;
	if (space_prefix) {
		memcpy(text, "\xe2\x96\x81", 3);
		j = 3;
	}
	for (size_t i = 0; i < raw_len; i++) {
		if (raw[i] == ' ') {
			memcpy(text + j, "\xe2\x96\x81", 3);
			j += 3;
		} else {
			text[j++] = raw[i];
		}
	}

	/* characters by their lead byte (llama.cpp's unicode_len_utf8: continuation and invalid bytes are 1) */
	int32_t m = 0;
	for (size_t off = 0; off < n;) {
		size_t l = ob_utf8_lead_len((unsigned char)text[off]);
		if (l > n - off)
			l = n - off;
		s.start[m] = (uint32_t)off;
		s.len[m] = (uint32_t)l;
		s.prev[m] = m - 1;
		off += l;
		s.next[m] = off == n ? -1 : m + 1;
		m++;
	}
	for (int32_t i = 1; i < m; i++)
		try_bigram(&s, i - 1, i);
	while (s.heap.n && !s.oom) {
		struct bigram b;
		rn_tok_heap_pop(&s.heap, &b, sizeof b, better);
		if (s.len[b.left] == 0 || s.len[b.right] == 0 || s.len[b.left] + s.len[b.right] != b.size)
			continue;
		s.len[b.left] += s.len[b.right];
		s.len[b.right] = 0;
		s.next[b.left] = s.next[b.right];
		if (s.next[b.right] >= 0)
			s.prev[s.next[b.right]] = b.left;
		try_bigram(&s, s.prev[b.left], b.left);
		try_bigram(&s, b.left, s.next[b.left]);
	}
	for (int32_t i = 0; i >= 0 && !s.oom; i = s.next[i]) {
		int32_t id = rn_tok_vocab_find(tok, text + s.start[i], s.len[i]);
		if (id >= 0) {
			rn_tok_ids_push(out, id);
			continue;
		}
		for (uint32_t k = 0; k < s.len[i]; k++) {
			int32_t b = tok->byte_tok[(uint8_t)text[s.start[i] + k]];
			/* no byte token at all: llama.cpp throws; orun writes the unknown token (or nothing) */
			if (b < 0)
				b = tok->sp.unk;
			if (b >= 0)
				rn_tok_ids_push(out, b);
		}
	}
done:
	free(text);
	free(s.start);
	free(s.len);
	free(s.prev);
	free(s.next);
	free(s.heap.v);
	if (s.oom)
		return rn_tok_fail(err, RN_TOK_ERR_NOMEM, "out of memory tokenizing %zu bytes", raw_len);
	return RN_TOK_OK;
}
