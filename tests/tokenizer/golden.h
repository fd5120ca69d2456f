/* tests/tokenizer/golden.h — shared by the tokenizer tests: the corpus, the reference's golden files, and the
 * check of one tokenizer against them (ids with parse_special on and off, pieces, round trip, streaming).
 *
 * Files (tests/data/tokenizer/README.md): corpus.inp (one escaped string per line), NAME.special.out and
 * NAME.nospecial.out (ids per line), NAME.pieces (hex pieces per line, "-" for an empty one).
 */
#ifndef ORUN_TESTS_TOKENIZER_GOLDEN_H
#define ORUN_TESTS_TOKENIZER_GOLDEN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "runner/tokenizer/tokenizer.h"
#include "tests/check.h"
#include "tests/testmodel.h"

struct buf {
	char *p;
	size_t n;
};

struct lines {
	struct buf *v;
	size_t n;
};

static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, len = 0;
	char *p = malloc(cap + 1);
	size_t got;
	while (p && (got = fread(p + len, 1, cap - len, f)) > 0) {
		len += got;
		if (len == cap) {
			cap *= 2;
			char *q = realloc(p, cap + 1);
			if (!q) {
				free(p);
				p = NULL;
			}
			p = q;
		}
	}
	fclose(f);
	if (p)
		p[len] = 0;
	*n = len;
	return p;
}

/* Split a file into lines (each must end with '\n'); the text is kept in *all. */
static struct lines read_lines(const char *path, char **all)
{
	struct lines L = {0};
	size_t n;
	char *p = slurp(path, &n);
	*all = p;
	if (!p || n == 0 || p[n - 1] != '\n') {
		fprintf(stderr, "cannot read %s (missing, empty, or no final newline)\n", path);
		return L;
	}
	for (size_t i = 0; i < n; i++)
		L.n += p[i] == '\n';
	L.v = calloc(L.n, sizeof *L.v);
	size_t k = 0, start = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\n') {
			L.v[k].p = p + start;
			L.v[k].n = i - start;
			k++;
			start = i + 1;
		}
	}
	return L;
}

static int hexd(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* corpus.inp escapes: \\ \n \r \t \xHH */
static struct buf unescape(struct buf in)
{
	struct buf o = {malloc(in.n + 1), 0};
	for (size_t i = 0; i < in.n; i++) {
		char c = in.p[i];
		if (c != '\\' || i + 1 >= in.n) {
			o.p[o.n++] = c;
			continue;
		}
		char e = in.p[++i];
		if (e == 'n')
			o.p[o.n++] = '\n';
		else if (e == 'r')
			o.p[o.n++] = '\r';
		else if (e == 't')
			o.p[o.n++] = '\t';
		else if (e == 'x' && i + 2 < in.n) {
			o.p[o.n++] = (char)(hexd(in.p[i + 1]) * 16 + hexd(in.p[i + 2]));
			i += 2;
		} else
			o.p[o.n++] = e;
	}
	return o;
}

static size_t parse_ids(struct buf line, int32_t **ids)
{
	size_t n = 0, cap = 16;
	*ids = malloc(cap * sizeof **ids);
	const char *p = line.p, *end = line.p + line.n;
	while (p < end) {
		char *e;
		long v = strtol(p, &e, 10);
		if (e == p)
			break;
		if (n == cap)
			*ids = realloc(*ids, (cap *= 2) * sizeof **ids);
		(*ids)[n++] = (int32_t)v;
		p = e;
		while (p < end && *p == ' ')
			p++;
	}
	return n;
}

/* Pieces line: hex words separated by spaces, "-" = empty. Returns the count; *pieces is an array of bufs. */
static size_t parse_pieces(struct buf line, struct buf **pieces)
{
	size_t n = 0;
	for (size_t i = 0; i < line.n; i++)
		n += line.p[i] == ' ';
	n = line.n ? n + 1 : 0;
	*pieces = calloc(n ? n : 1, sizeof **pieces);
	size_t k = 0, i = 0;
	while (i < line.n) {
		size_t j = i;
		while (j < line.n && line.p[j] != ' ')
			j++;
		struct buf b = {malloc((j - i) / 2 + 1), 0};
		if (!(j - i == 1 && line.p[i] == '-'))
			for (size_t h = i; h + 1 < j; h += 2)
				b.p[b.n++] = (char)(hexd(line.p[h]) * 16 + hexd(line.p[h + 1]));
		(*pieces)[k++] = b;
		i = j + 1;
	}
	return k;
}

/* Strict UTF-8 validity, written independently of the tokenizer's own helper. */
static bool utf8_ok(const unsigned char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		unsigned c = s[i];
		size_t k;
		unsigned cp;
		if (c < 0x80) {
			i++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			k = 1;
			cp = c & 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			k = 2;
			cp = c & 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			k = 3;
			cp = c & 0x07;
		} else
			return false;
		if (i + k >= n)
			return false;
		for (size_t j = 1; j <= k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + j] & 0x3f);
		}
		if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += k + 1;
	}
	return true;
}

/* Go's replacement of invalid UTF-8: each byte that does not start a valid sequence becomes U+FFFD. */
static struct buf sanitize(const char *s, size_t n)
{
	struct buf o = {malloc(3 * n + 1), 0};
	size_t i = 0;
	while (i < n) {
		size_t k;
		for (k = 4; k >= 1; k--)
			if (i + k <= n && utf8_ok((const unsigned char *)s + i, k))
				break;
		if (k >= 1) {
			memcpy(o.p + o.n, s + i, k);
			o.n += k;
			i += k;
		} else {
			memcpy(o.p + o.n, "\xef\xbf\xbd", 3);
			o.n += 3;
			i++;
		}
	}
	return o;
}

static void print_escaped(const char *s, size_t n)
{
	for (size_t i = 0; i < n && i < 120; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f)
			fputc(c, stderr);
		else
			fprintf(stderr, "\\x%02x", c);
	}
}

static void print_ids(const char *label, const int32_t *v, size_t n)
{
	fprintf(stderr, "    %s:", label);
	for (size_t i = 0; i < n && i < 60; i++)
		fprintf(stderr, " %d", v[i]);
	fprintf(stderr, n > 60 ? " ...\n" : "\n");
}

struct corpus {
	struct buf *s;
	size_t n;
	char *raw;
};

static struct corpus load_corpus(void)
{
	struct corpus c = {0};
	struct lines L = read_lines(tm_srcpath("tests/data/tokenizer/corpus.inp"), &c.raw);
	c.n = L.n;
	c.s = calloc(L.n ? L.n : 1, sizeof *c.s);
	for (size_t i = 0; i < L.n; i++)
		c.s[i] = unescape(L.v[i]);
	free(L.v);
	return c;
}

struct golden_stats {
	size_t ids_ok, ids_total, pieces_ok, pieces_total, roundtrip_ok, roundtrip_total, stream_ok, stream_total;
};

static bool same_ids(const int32_t *a, size_t na, const int32_t *b, size_t nb)
{
	return na == nb && (na == 0 || memcmp(a, b, na * sizeof *a) == 0);
}

/* Check tok against NAME.{special,nospecial}.out and NAME.pieces for every corpus string. */
static void check_golden(const char *name, const struct rn_tok *tok, const struct corpus *c, struct golden_stats *st)
{
	char path[512], *raw_sp, *raw_nsp, *raw_pc;
	snprintf(path, sizeof path, "tests/data/tokenizer/%s.special.out", name);
	struct lines gsp = read_lines(tm_srcpath(path), &raw_sp);
	snprintf(path, sizeof path, "tests/data/tokenizer/%s.nospecial.out", name);
	struct lines gnsp = read_lines(tm_srcpath(path), &raw_nsp);
	snprintf(path, sizeof path, "tests/data/tokenizer/%s.pieces", name);
	struct lines gpc = read_lines(tm_srcpath(path), &raw_pc);
	CHECKF(gsp.n == c->n && gnsp.n == c->n && gpc.n == c->n, "%s: golden files have %zu/%zu/%zu lines for %zu strings", name,
	       gsp.n, gnsp.n, gpc.n, c->n);
	if (gsp.n != c->n || gnsp.n != c->n || gpc.n != c->n)
		return;
	bool add = rn_tok_add_bos(tok);
	struct rn_tok_stream *stream = rn_tok_stream_new(tok, true);
	for (size_t i = 0; i < c->n; i++) {
		const struct buf s = c->s[i];
		for (int ps = 1; ps >= 0; ps--) {
			int32_t *want, *got;
			size_t nw = parse_ids(ps ? gsp.v[i] : gnsp.v[i], &want), ng;
			struct rn_tok_error err = {0};
			int rc = rn_tok_encode_alloc(tok, s.p, s.n, add, ps, &got, &ng, &err);
			st->ids_total++;
			bool ok = rc == RN_TOK_OK && same_ids(want, nw, got, ng);
			st->ids_ok += ok;
			CHECKF(ok, "%s: corpus line %zu, parse_special=%d: ids differ from llama.cpp's (rc %d %s)", name, i + 1, ps, rc,
			       rc ? err.msg : "");
			if (!ok) {
				fprintf(stderr, "    text: \"");
				print_escaped(s.p, s.n);
				fprintf(stderr, "\"\n");
				print_ids("llama.cpp", want, nw);
				print_ids("orun     ", got, ng);
			}
			if (ps) {
				/* pieces of the reference's ids; the reference's decode and ours */
				struct buf *pcs;
				size_t np = parse_pieces(gpc.v[i], &pcs);
				CHECKF(np == nw, "%s: line %zu: %zu pieces for %zu ids", name, i + 1, np, nw);
				size_t ref_n = 0, our_n = 0;
				for (size_t k = 0; k < np; k++)
					ref_n += pcs[k].n;
				char *ref = malloc(ref_n + 1), *our = NULL;
				ref_n = 0;
				for (size_t k = 0; k < np && k < nw; k++) {
					const char *p;
					size_t pn;
					int prc = rn_tok_piece(tok, want[k], true, &p, &pn);
					/* llama-tokenize prints pieces with printf("%s"): a piece stops at its first NUL byte */
					const char *nul = prc == RN_TOK_OK ? memchr(p, 0, pn) : NULL;
					size_t shown = nul ? (size_t)(nul - p) : pn;
					st->pieces_total++;
					bool pok = prc == RN_TOK_OK && shown == pcs[k].n && memcmp(p, pcs[k].p, shown) == 0;
					st->pieces_ok += pok;
					CHECKF(pok, "%s: line %zu: piece of token %d differs from llama.cpp's", name, i + 1, want[k]);
					memcpy(ref + ref_n, pcs[k].p, pcs[k].n);
					ref_n += pcs[k].n;
				}
				size_t cap = 16;
				our = malloc(cap);
				for (size_t k = 0; k < ng; k++) {
					const char *p;
					size_t pn;
					if (rn_tok_piece(tok, got[k], true, &p, &pn) != RN_TOK_OK)
						continue;
					while (our_n + pn > cap)
						our = realloc(our, cap *= 2);
					memcpy(our + our_n, p, pn);
					our_n += pn;
				}
				/* round trip where the reference's decode gives the text back. BPE: the pieces joined (what
				 * llama-server's /detokenize returns). SentencePiece, whose pieces carry the prefix space:
				 * llama_detokenize(remove_special = false) of the ids after the BOS, which drops the first
				 * piece's leading space. */
				if (rn_tok_kind(tok) == RN_TOK_KIND_BPE && ref_n == s.n && memcmp(ref, s.p, s.n) == 0 &&
				    memchr(s.p, 0, s.n) == NULL) {
					st->roundtrip_total++;
					bool rt = our_n == s.n && memcmp(our, s.p, s.n) == 0;
					st->roundtrip_ok += rt;
					CHECKF(rt, "%s: line %zu: decode(encode(s)) != s", name, i + 1);
				}
				if (rn_tok_kind(tok) == RN_TOK_KIND_SPM && nw > 0 && want[0] == rn_tok_bos(tok) && np == nw) {
					size_t skip = ref_n - pcs[0].n, off = pcs[0].n; /* the reference text after its BOS */
					if (np > 1 && pcs[1].n > 0 && pcs[1].p[0] == ' ') {
						skip--;
						off++;
					}
					if (skip == s.n && memcmp(ref + off, s.p, s.n) == 0 && memchr(s.p, 0, s.n) == NULL) {
						st->roundtrip_total++;
						char *dt = malloc(s.n + 64);
						size_t dn = 0;
						int drc = rn_tok_detokenize(tok, got + 1, ng - 1, false, true, dt, s.n + 64, &dn);
						bool rt = drc == RN_TOK_OK && dn == s.n && memcmp(dt, s.p, s.n) == 0;
						st->roundtrip_ok += rt;
						CHECKF(rt, "%s: line %zu: detokenize(encode(s)) != s", name, i + 1);
						free(dt);
					}
				}
				/* streaming: every chunk valid UTF-8, and together the (sanitized) full decode */
				rn_tok_stream_reset(stream);
				struct buf all = {malloc(3 * our_n + 16), 0};
				bool chunks_ok = true;
				for (size_t k = 0; k < ng; k++) {
					const char *o;
					size_t on;
					if (rn_tok_stream_push(stream, got[k], &o, &on) != RN_TOK_OK) {
						chunks_ok = false;
						break;
					}
					chunks_ok &= utf8_ok((const unsigned char *)o, on);
					memcpy(all.p + all.n, o, on);
					all.n += on;
				}
				const char *o;
				size_t on;
				chunks_ok &= rn_tok_stream_flush(stream, &o, &on) == RN_TOK_OK && utf8_ok((const unsigned char *)o, on);
				memcpy(all.p + all.n, o, on);
				all.n += on;
				struct buf want_s = sanitize(our, our_n);
				st->stream_total++;
				bool sok = chunks_ok && all.n == want_s.n && memcmp(all.p, want_s.p, all.n) == 0;
				st->stream_ok += sok;
				CHECKF(sok, "%s: line %zu: streamed text is not the sanitized full decode (chunks valid: %d)", name, i + 1,
				       chunks_ok);
				free(all.p);
				free(want_s.p);
				for (size_t k = 0; k < np; k++)
					free(pcs[k].p);
				free(pcs);
				free(ref);
				free(our);
			}
			free(want);
			free(got);
		}
	}
	rn_tok_stream_free(stream);
	free(gsp.v);
	free(gnsp.v);
	free(gpc.v);
	free(raw_sp);
	free(raw_nsp);
	free(raw_pc);
}

static void print_stats(const char *name, const struct golden_stats *st)
{
	fprintf(stderr, "%s: ids %zu/%zu identical to llama.cpp, pieces %zu/%zu, round trips %zu/%zu, streams %zu/%zu\n", name,
		st->ids_ok, st->ids_total, st->pieces_ok, st->pieces_total, st->roundtrip_ok, st->roundtrip_total, st->stream_ok,
		st->stream_total);
}

static struct rn_tok *load_tok(const char *path, const char *pre_override, struct gguf_file **fp)
{
	struct gguf_error gerr = {0};
	struct gguf_file *f = gguf_open(path, &gerr);
	CHECKF(f != NULL, "gguf_open(%s): %s", path, gerr.msg);
	*fp = f;
	if (!f)
		return NULL;
	struct rn_tok_options opt = {pre_override};
	struct rn_tok *tok = NULL;
	struct rn_tok_error err = {0};
	int rc = rn_tok_load(f, pre_override ? &opt : NULL, &tok, &err);
	CHECKF(rc == RN_TOK_OK, "rn_tok_load(%s): %s", path, err.msg);
	return tok;
}

#endif
