/* runner/tokenizer/stream.c — UTF-8 helpers and the streaming detokenizer.
 *
 * Two decoders on purpose: rn_tok_utf8_lax reproduces llama.cpp's lenient reading of input text (what the
 * tokenizer must match), while the stream and rn_tok_utf8_valid_prefix are strict (what clients may receive:
 * no overlongs, surrogates or code points past U+10FFFF), replacing each bad byte with U+FFFD as Go does.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "runner/tokenizer/internal.h"

int32_t rn_tok_utf8_lax(const uint8_t *s, size_t n, size_t *adv)
{
	uint8_t b = s[0];
	*adv = 1;
	if (!(b & 0x80))
		return b;
	if (!(b & 0x40))
		return -1;
	if (!(b & 0x20)) {
		if (n < 2 || (s[1] & 0xc0) != 0x80)
			return -1;
		*adv = 2;
		return ((b & 0x1f) << 6) | (s[1] & 0x3f);
	}
	if (!(b & 0x10)) {
		if (n < 3 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
			return -1;
		*adv = 3;
		return ((b & 0x0f) << 12) | ((s[1] & 0x3f) << 6) | (s[2] & 0x3f);
	}
	if (!(b & 0x08)) {
		if (n < 4 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80)
			return -1;
		int32_t cp = ((b & 0x07) << 18) | ((s[1] & 0x3f) << 12) | ((s[2] & 0x3f) << 6) | (s[3] & 0x3f);
		if (cp > 0x10ffff) /* llama.cpp aborts on these later; orun reads the lead byte as invalid */
			return -1;
		*adv = 4;
		return cp;
	}
	return -1;
}

enum { U8_VALID, U8_INCOMPLETE, U8_INVALID };

/* Strict check of the sequence at s[0..n): U8_VALID with *len, U8_INCOMPLETE when the bytes so far are a
 * proper prefix of a valid sequence that the data ends inside, U8_INVALID otherwise. */
static int utf8_check(const uint8_t *s, size_t n, size_t *len)
{
	uint8_t b = s[0];
	size_t need;
	uint8_t lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
	if (b < 0x80) {
		*len = 1;
		return U8_VALID;
	}
	if (b >= 0xc2 && b <= 0xdf) {
		need = 2;
	} else if (b >= 0xe0 && b <= 0xef) {
		need = 3;
		if (b == 0xe0)
			lo = 0xa0;
		else if (b == 0xed)
			hi = 0x9f;
	} else if (b >= 0xf0 && b <= 0xf4) {
		need = 4;
		if (b == 0xf0)
			lo = 0x90;
		else if (b == 0xf4)
			hi = 0x8f;
	} else {
		return U8_INVALID;
	}
	for (size_t i = 1; i < need; i++) {
		if (i >= n)
			return U8_INCOMPLETE;
		uint8_t c = s[i];
		if (i == 1 ? (c < lo || c > hi) : (c & 0xc0) != 0x80)
			return U8_INVALID;
	}
	*len = need;
	return U8_VALID;
}

size_t rn_tok_utf8_valid_prefix(const char *s, size_t n)
{
	const uint8_t *u = (const uint8_t *)s;
	size_t i = 0, l;
	while (i < n && utf8_check(u + i, n - i, &l) == U8_VALID)
		i += l;
	return i;
}

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
	if (n <= s->cap)
		return true;
	size_t cap = s->cap ? s->cap : 256;
	while (cap < n)
		cap *= 2;
	char *o = realloc(s->out, cap);
	if (!o)
		return false;
	s->out = o;
	s->cap = cap;
	return true;
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
			size_t run = rn_tok_utf8_valid_prefix((const char *)piece + (i - hn), n - (i - hn));
			if (run) {
				memcpy(s->out + w, piece + (i - hn), run);
				w += run;
				i += run;
				continue;
			}
		}
		size_t l;
		int st = utf8_check(tmp, avail, &l);
		if (st == U8_VALID) {
			memcpy(s->out + w, tmp, l);
			w += l;
			i += l;
		} else if (st == U8_INCOMPLETE && !final) {
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
	const char *p;
	size_t n;
	*out = "";
	*len = 0;
	if (rn_tok_piece(s->tok, id, s->special, &p, &n) != RN_TOK_OK)
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
