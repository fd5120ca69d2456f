/* runner/tokenizer/stream.c — the streaming detokenizer: generated pieces become text that is always valid
 * UTF-8 in Go's strict sense (no overlongs, surrogates or code points past U+10FFFF; base/utf8.h), an
 * incomplete sequence at a piece's end held back for the next, each byte that can never be valid replaced
 * with U+FFFD as Go does.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/utf8.h"
#include "runner/tokenizer/internal.h"

struct rn_tok_stream {
	const struct rn_tok *tok;
	bool special;
	uint8_t pend[4];
	size_t n_pend;
	char *out;
	size_t cap;
};

struct rn_tok_stream *rn_tok_stream_new(const struct rn_tok *tok, bool special)
{
	struct rn_tok_stream *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->tok = tok;
	s->special = special;
	return s;
}

void rn_tok_stream_free(struct rn_tok_stream *s)
{
	if (!s)
		return;
	free(s->out);
	free(s);
}

void rn_tok_stream_reset(struct rn_tok_stream *s)
{
	s->n_pend = 0;
}

size_t rn_tok_stream_pending(const struct rn_tok_stream *s)
{
	return s->n_pend;
}

static bool reserve(struct rn_tok_stream *s, size_t n)
{
	return ob_grow(&s->out, &s->cap, n, 1, 256, 0) == OB_GROW_OK;
}

/* Copy the complete part of pend + piece to s->out; keep an incomplete tail in pend (unless final). */
static size_t drain(struct rn_tok_stream *s, const uint8_t *piece, size_t n, bool final)
{
	/* work on pend + piece without joining them: the tail is at most 3 bytes */
	uint8_t head[8];
	size_t w = 0;
	size_t hn = s->n_pend;
	memcpy(head, s->pend, hn);
	s->n_pend = 0;
	/* first the sequences that start in the pending bytes (they may extend into piece) */
	size_t i = 0; /* index over the virtual concatenation */
	size_t total = hn + n;
	while (i < total) {
		uint8_t tmp[4];
		size_t avail = total - i < 4 ? total - i : 4;
		for (size_t k = 0; k < avail; k++) {
			size_t at = i + k;
			tmp[k] = at < hn ? head[at] : piece[at - hn];
		}
		if (i >= hn) {
			/* fast path inside piece: copy the longest valid run at once */
			size_t run = ob_utf8_valid_prefix((const char *)piece + (i - hn), n - (i - hn));
			if (run) {
				memcpy(s->out + w, piece + (i - hn), run);
				w += run;
				i += run;
				continue;
			}
		}
		size_t l;
		enum ob_utf8_status st = ob_utf8_check(tmp, avail, &l);
		if (st == OB_UTF8_VALID) {
			memcpy(s->out + w, tmp, l);
			w += l;
			i += l;
		} else if (st == OB_UTF8_INCOMPLETE && !final) {
			memcpy(s->pend, tmp, avail);
			s->n_pend = avail;
			break;
		} else {
			memcpy(s->out + w, "\xef\xbf\xbd", 3);
			w += 3;
			i += 1;
		}
	}
	return w;
}

int rn_tok_stream_push(struct rn_tok_stream *s, int32_t id, const char **out, size_t *len)
{
	return rn_tok_stream_push_as(s, id, s->special, out, len);
}

int rn_tok_stream_push_as(struct rn_tok_stream *s, int32_t id, bool special, const char **out, size_t *len)
{
	const char *p;
	size_t n;
	*out = "";
	*len = 0;
	if (rn_tok_piece(s->tok, id, special, &p, &n) != RN_TOK_OK)
		return RN_TOK_ERR_RANGE;
	if (!reserve(s, 3 * (n + s->n_pend) + 1))
		return RN_TOK_ERR_NOMEM;
	*len = drain(s, (const uint8_t *)p, n, false);
	*out = s->out;
	return RN_TOK_OK;
}

int rn_tok_stream_flush(struct rn_tok_stream *s, const char **out, size_t *len)
{
	*out = "";
	*len = 0;
	if (!reserve(s, 3 * s->n_pend + 1))
		return RN_TOK_ERR_NOMEM;
	*len = drain(s, NULL, 0, true);
	*out = s->out;
	return RN_TOK_OK;
}
