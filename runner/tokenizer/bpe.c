/* runner/tokenizer/bpe.c — byte-level BPE: pre-tokenizer split patterns (PCRE2) and the merge loop.
 *
 * Text is first decoded the lenient way llama.cpp does (invalid bytes become U+FFFD) and split by the
 * pre-tokenizer's patterns, applied one after another inside the pieces of the previous one. PCRE2 never sees
 * the real text: it matches a copy where each non-ASCII code point is replaced by a stand-in of the same class
 * (letter, number, punctuation, symbol, mark, white space, other) and the same UTF-8 length, so the classes come
 * from orun's Unicode 15.1 table (base/unicode.h; the reference's version) rather than from the installed
 * PCRE2's Unicode version.
 * Each piece is then mapped byte by byte to the GPT-2 byte alphabet and merged by rank (pair -> rank hash).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/unicode.h"
#include "base/utf8.h"
#include "gguf/gguf.h"
#include "runner/tokenizer/internal.h"

/* ------------------------------------------------------------------------------------------------------
 * Split patterns (llama.cpp's regex strings for each pre-tokenizer, as data)
 */

static const char pat_gpt2[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
static const char pat_llama3[] = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
				 "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char pat_qwen2[] = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
				"\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char pat_qwen35[] = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|"
				 "\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char pat_digit[] = "\\p{N}";
static const char pat_punct[] = "[\\p{P}\\$\\+<=>\\^~\\|]+";
static const char pat_digits[] = "\\p{N}+";
static const char pat_3digits[] = "[0-9][0-9][0-9]";

/* \s as llama.cpp means it: the White_Space property (PCRE2 10.42's \s lacks U+0085) */
static const char ws_body[] = "\\t-\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

/* Rewrite \s and \S into explicit classes. Returns a malloc'd pattern or NULL (out of memory, or \S inside a
 * class, which no supported pattern has). */
static char *expand_ws(const char *pat)
{
	size_t n = strlen(pat), cap = n * (sizeof ws_body + 4) + 1;
	char *out = malloc(cap), *o = out;
	bool in_class = false;
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		char c = pat[i];
		if (c == '\\' && i + 1 < n) {
			char e = pat[++i];
			if (e == 's' || e == 'S') {
				if (in_class && e == 'S') {
					free(out);
					return NULL;
				}
				o += sprintf(o, in_class ? "%s" : e == 's' ? "[%s]" : "[^%s]", ws_body);
			} else {
				*o++ = '\\';
				*o++ = e;
			}
			continue;
		}
		if (c == '[' && !in_class)
			in_class = true;
		else if (c == ']' && in_class)
			in_class = false;
		*o++ = c;
	}
	*o = 0;
	return out;
}

static int compile_patterns(struct rn_tok *tok, struct rn_tok_error *err)
{
	const char *pats[RN_TOK_MAX_REGEX] = {0};
	int n = 0;
	switch (tok->pre) {
	case RN_TOK_PRE_GPT2: pats[n++] = pat_gpt2; break;
	case RN_TOK_PRE_LLAMA3: pats[n++] = pat_llama3; break;
	case RN_TOK_PRE_QWEN2: pats[n++] = pat_qwen2; break;
	case RN_TOK_PRE_QWEN35: pats[n++] = pat_qwen35; break;
	case RN_TOK_PRE_SMOLLM:
		pats[n++] = pat_digit;
		pats[n++] = pat_gpt2;
		break;
	case RN_TOK_PRE_DEFAULT:
	default:
		pats[n++] = pat_punct;
		pats[n++] = pat_gpt2;
		pats[n++] = pat_digits;
		pats[n++] = pat_3digits;
		break;
	}
	for (int i = 0; i < n; i++) {
		char *p = expand_ws(pats[i]);
		if (!p)
			return rn_tok_fail(err, RN_TOK_ERR_NOMEM, "out of memory preparing a pre-tokenizer pattern");
		int ec;
		PCRE2_SIZE eo;
		tok->regex[i] = pcre2_compile((PCRE2_SPTR)p, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &ec, &eo, NULL);
		free(p);
		if (!tok->regex[i]) {
			PCRE2_UCHAR msg[160];
			pcre2_get_error_message(ec, msg, sizeof msg);
			return rn_tok_fail(err, RN_TOK_ERR_REGEX, "pre-tokenizer pattern %d of \"%s\" does not compile at offset %zu: %s",
					   i, tok->pre_name, (size_t)eo, (const char *)msg);
		}
		tok->n_regex = i + 1;
		/* without JIT (a platform PCRE2 cannot JIT for) the interpreter is used */
		tok->regex_jit[i] = pcre2_jit_compile(tok->regex[i], PCRE2_JIT_COMPLETE) == 0;
	}
	return RN_TOK_OK;
}

/* ------------------------------------------------------------------------------------------------------
 * Byte alphabet and merges
 */

/* GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the others map to 256, 257, ... */
static uint32_t byte_char(int b, int *next_extra)
{
	if ((b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff))
		return (uint32_t)b;
	return 256u + (uint32_t)(*next_extra)++;
}

static uint64_t pair_hash(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return k;
}

static int pairmap_init(struct rn_pairmap *m, uint32_t n, struct rn_tok_error *err)
{
	uint32_t slots = 1024;
	while (slots < n + n / 2) /* load <= 2/3: small enough to stay in cache, probes stay short */
		slots *= 2;
	m->slot = malloc((size_t)slots * sizeof *m->slot);
	if (!m->slot)
		return rn_tok_fail(err, RN_TOK_ERR_NOMEM, "out of memory for a %u-slot merge table", slots);
	for (uint32_t i = 0; i < slots; i++)
		m->slot[i].key = UINT64_MAX;
	m->mask = slots - 1;
	return RN_TOK_OK;
}

static inline const struct rn_pair *pairmap_slot(const struct rn_pairmap *m, uint64_t key)
{
	uint32_t j = (uint32_t)pair_hash(key) & m->mask;
	while (m->slot[j].key != UINT64_MAX && m->slot[j].key != key)
		j = (j + 1) & m->mask;
	return &m->slot[j];
}

int rn_tok_bpe_init(struct rn_tok *tok, const struct gguf_array *merges, struct rn_tok_error *err)
{
	int rc, extra = 0;
	for (int i = 0; i < 0x144; i++)
		tok->byte_dec[i] = -1;
	for (int b = 0; b < 256; b++) {
		uint32_t cp = byte_char(b, &extra);
		tok->byte_dec[cp] = (int16_t)b;
		char u[OB_UTF8_MAX];
		size_t ul = ob_utf8_encode(u, cp); /* cp < 0x144: one or two bytes */
		memcpy(tok->byte_enc[b], u, ul);
		tok->byte_enc_len[b] = (uint8_t)ul;
		char c = (char)b;
		tok->single_tok[b] = rn_tok_vocab_find(tok, &c, 1);
	}

	if (merges->n > RN_TOK_MAX_MERGES)
		return rn_tok_fail(err, RN_TOK_ERR_LENGTH, "tokenizer.ggml.merges has %llu rules, more than the limit %u",
				   (unsigned long long)merges->n, RN_TOK_MAX_MERGES);
	uint32_t n = (uint32_t)merges->n;
	if ((rc = pairmap_init(&tok->merges, n, err)) != RN_TOK_OK)
		return rc;
	char *buf = NULL;
	size_t cap = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct gguf_str s = gguf_arr_str(merges, i);
		/* "left right", split at the first space after the first byte (llama.cpp: find(' ', 1)) */
		const char *sp = s.len > 1 ? memchr(s.ptr + 1, ' ', (size_t)s.len - 1) : NULL;
		if (!sp)
			continue; /* llama.cpp records ("", "") for it, which never matches */
		size_t ll = (size_t)(sp - s.ptr), rl = (size_t)s.len - ll - 1;
		if (ll + rl > RN_TOK_MAX_TOKEN_BYTES) {
			free(buf);
			return rn_tok_fail(err, RN_TOK_ERR_LENGTH, "merge rule %u is %llu bytes long, more than the limit %u", i,
					   (unsigned long long)s.len, RN_TOK_MAX_TOKEN_BYTES);
		}
		if (ob_grow(&buf, &cap, ll + rl, 1, 64, 0) != OB_GROW_OK) {
			free(buf);
			return rn_tok_fail(err, RN_TOK_ERR_NOMEM, "out of memory reading merge rules");
		}
		memcpy(buf, s.ptr, ll);
		memcpy(buf + ll, sp + 1, rl);
		int32_t l, r, res;
		if ((rc = rn_tok_sym_intern(tok, buf, ll, &l, err)) != RN_TOK_OK ||
		    (rc = rn_tok_sym_intern(tok, buf + ll, rl, &r, err)) != RN_TOK_OK ||
		    (rc = rn_tok_sym_intern(tok, buf, ll + rl, &res, err)) != RN_TOK_OK) {
			free(buf);
			return rc;
		}
		uint64_t key = ((uint64_t)(uint32_t)l << 32) | (uint32_t)r;
		struct rn_pair *slot = (struct rn_pair *)pairmap_slot(&tok->merges, key);
		if (slot->key == UINT64_MAX) /* the first rule for a pair wins (map emplace) */
			*slot = (struct rn_pair){key, (int32_t)i, res};
	}
	free(buf);
	tok->n_merges = n;

	for (int b = 0; b < 256; b++)
		tok->byte_sym[b] = rn_tok_sym_find(tok, (const char *)tok->byte_enc[b], tok->byte_enc_len[b]);
	return compile_patterns(tok, err);
}

void rn_tok_bpe_free(struct rn_tok *tok)
{
	for (int i = 0; i < tok->n_regex; i++)
		pcre2_code_free(tok->regex[i]);
	tok->n_regex = 0;
}

size_t rn_tok_bpe_decode_text(const struct rn_tok *tok, const char *s, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";
	size_t j = 0;
	for (size_t i = 0; i < n;) {
		size_t adv;
		int32_t cp = ob_utf8_decode_lax((const unsigned char *)s + i, n - i, &adv);
		i += adv;
		if (cp < 0)
			cp = 0xfffd;
		if (cp < 0x144 && tok->byte_dec[cp] >= 0) {
			if (out)
				out[j] = (char)tok->byte_dec[cp];
			j++;
			continue;
		}
		/* llama.cpp: "[UNK_BYTE_0x" + the character's UTF-8 in hex + the whole token text + "]" */
		uint8_t u[OB_UTF8_MAX];
		size_t ul = ob_utf8_encode_lax((char *)u, (uint32_t)cp);
		if (out)
			memcpy(out + j, "[UNK_BYTE_0x", 12);
		j += 12;
		for (size_t k = 0; k < ul; k++) {
			if (out) {
				out[j] = hex[u[k] >> 4];
				out[j + 1] = hex[u[k] & 15];
			}
			j += 2;
		}
		if (out)
			memcpy(out + j, s, n);
		j += n;
		if (out)
			out[j] = ']';
		j++;
	}
	return j;
}

/* ------------------------------------------------------------------------------------------------------
 * Encoding
 */

struct heap_ent {
	int32_t rank, left, right, lid, rid, result;
};

/* Per-call cache of word -> ids: natural text repeats its words, and a hit skips the merge loop. Started
 * after WC_START words (short texts pay nothing), never more than WC_SLOTS / 2 entries. */
#define WC_START 1024
#define WC_SLOTS (1u << 15)
#define WC_MAX_WORD 64 /* bytes; longer words are not cached */

struct wc_slot {
	uint32_t hash; /* 0: empty */
	uint32_t word_off; /* in work.norm */
	uint32_t ids_off;  /* in work.wc_ids */
	uint16_t word_len, n_ids;
};

struct work {
	const struct rn_tok *tok;
	struct rn_tok_ids *out;
	const uint8_t *norm; /* normalized text (what the words are made of) */
	const uint8_t *subj; /* the same with stand-in code points, what PCRE2 matches */
	pcre2_match_data *md;
	pcre2_match_context *mctx;
	pcre2_jit_stack *jstack;
	/* merge loop scratch */
	int32_t *id, *prev, *next;
	uint32_t *len;
	size_t cap;
	struct rn_tok_heap heap; /* of struct heap_ent */
	uint8_t *enc;
	size_t enc_cap;
	/* word cache */
	size_t n_words, wc_n;
	struct wc_slot *wc;
	int32_t *wc_ids;
	size_t wc_ids_n, wc_ids_cap;
	bool oom;
	struct rn_tok_error *err;
	int rc;
};

/* the lowest rank first; equal ranks: the leftmost pair */
static bool heap_first(const void *pa, const void *pb)
{
	const struct heap_ent *a = pa, *b = pb;
	return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

static void try_pair(struct work *w, int32_t l, int32_t r)
{
	if (l < 0 || r < 0 || w->id[l] < 0 || w->id[r] < 0)
		return;
	uint64_t key = ((uint64_t)(uint32_t)w->id[l] << 32) | (uint32_t)w->id[r];
	const struct rn_pair *p = pairmap_slot(&w->tok->merges, key);
	if (p->key == UINT64_MAX)
		return;
	struct heap_ent e = {p->rank, l, r, w->id[l], w->id[r], p->result};
	if (!rn_tok_heap_push(&w->heap, &e, sizeof e, heap_first))
		w->oom = true;
}

static bool grow(struct work *w, size_t n)
{
	if (n <= w->cap)
		return true;
	/* four arrays of one length: each grows from the same capacity by the same rule */
	size_t c0 = w->cap, c1 = w->cap, c2 = w->cap, c3 = w->cap;
	if (ob_grow(&w->id, &c0, n, sizeof *w->id, 64, 0) || ob_grow(&w->prev, &c1, n, sizeof *w->prev, 64, 0) ||
	    ob_grow(&w->next, &c2, n, sizeof *w->next, 64, 0) || ob_grow(&w->len, &c3, n, sizeof *w->len, 64, 0)) {
		w->oom = true;
		return false;
	}
	w->cap = c0;
	return true;
}

/* A symbol that is not a token: llama.cpp looks each byte of its byte-level text up as a one-byte token. */
static void emit_fallback(struct work *w, const uint8_t *bytes, size_t n)
{
	const struct rn_tok *tok = w->tok;
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < tok->byte_enc_len[bytes[i]]; k++) {
			int32_t t = tok->single_tok[tok->byte_enc[bytes[i]][k]];
			if (t >= 0)
				rn_tok_ids_push(w->out, t);
		}
}

static void bpe_merge(struct work *w, const uint8_t *s, size_t n)
{
	const struct rn_tok *tok = w->tok;
	if (tok->ignore_merges) {
		if (ob_grow(&w->enc, &w->enc_cap, 2 * n, 1, 64, 0) != OB_GROW_OK) {
			w->oom = true;
			return;
		}
		size_t el = 0;
		for (size_t i = 0; i < n; i++)
			for (int k = 0; k < tok->byte_enc_len[s[i]]; k++)
				w->enc[el++] = tok->byte_enc[s[i]][k];
		int32_t t = rn_tok_vocab_find(tok, (const char *)w->enc, el);
		if (t >= 0) {
			rn_tok_ids_push(w->out, t);
			return;
		}
	}
	if (n == 1) {
		int32_t t = tok->byte_sym[s[0]];
		if (t >= 0 && (uint32_t)t < tok->n_vocab)
			rn_tok_ids_push(w->out, t);
		else
			emit_fallback(w, s, 1);
		return;
	}
	if (!grow(w, n))
		return;
	for (size_t i = 0; i < n; i++) {
		w->id[i] = tok->byte_sym[s[i]];
		w->len[i] = 1;
		w->prev[i] = (int32_t)i - 1;
		w->next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
	}
	w->heap.n = 0;
	/* the first look-ups are independent: start their cache misses together */
	for (size_t i = 1; i < n; i++) {
		if (w->id[i - 1] < 0 || w->id[i] < 0)
			continue;
		uint64_t key = ((uint64_t)(uint32_t)w->id[i - 1] << 32) | (uint32_t)w->id[i];
		__builtin_prefetch(&tok->merges.slot[(uint32_t)pair_hash(key) & tok->merges.mask]);
	}
	for (size_t i = 1; i < n; i++)
		try_pair(w, (int32_t)i - 1, (int32_t)i);
	while (w->heap.n) {
		struct heap_ent e;
		rn_tok_heap_pop(&w->heap, &e, sizeof e, heap_first);
		int32_t l = e.left, r = e.right;
		/* stale: one side already merged away, or changed since the pair was queued */
		if (w->len[l] == 0 || w->len[r] == 0 || w->id[l] != e.lid || w->id[r] != e.rid || w->next[l] != r)
			continue;
		w->id[l] = e.result;
		w->len[l] += w->len[r];
		w->len[r] = 0;
		w->next[l] = w->next[r];
		if (w->next[r] >= 0)
			w->prev[w->next[r]] = l;
		try_pair(w, w->prev[l], l);
		try_pair(w, l, w->next[l]);
	}
	for (int32_t i = 0; i >= 0; i = w->next[i]) {
		int32_t t = w->id[i];
		if (t >= 0 && (uint32_t)t < tok->n_vocab)
			rn_tok_ids_push(w->out, t);
		else
			emit_fallback(w, s + i, w->len[i]);
	}
}

static void wc_store(struct work *w, uint32_t h, uint32_t j, const uint8_t *s, size_t n, size_t first)
{
	size_t k = w->out->n - first;
	if (w->out->oom || k > UINT16_MAX || w->wc_n >= WC_SLOTS / 2)
		return;
	if (ob_grow(&w->wc_ids, &w->wc_ids_cap, w->wc_ids_n + k, sizeof *w->wc_ids, 4096, 0) != OB_GROW_OK)
		return; /* the cache is an optimisation: just stop filling it */
	memcpy(w->wc_ids + w->wc_ids_n, w->out->v + first, k * sizeof *w->wc_ids);
	w->wc[j] = (struct wc_slot){h, (uint32_t)(s - w->norm), (uint32_t)w->wc_ids_n, (uint16_t)n, (uint16_t)k};
	w->wc_ids_n += k;
	w->wc_n++;
}

static void bpe_word(struct work *w, const uint8_t *s, size_t n)
{
	if (n == 0)
		return;
	if (n > WC_MAX_WORD || n == 1 || (size_t)(s - w->norm) > UINT32_MAX) {
		bpe_merge(w, s, n);
		return;
	}
	if (!w->wc && ++w->n_words >= WC_START)
		w->wc = calloc(WC_SLOTS, sizeof *w->wc); /* NULL: run without a cache */
	if (!w->wc) {
		bpe_merge(w, s, n);
		return;
	}
	uint32_t h = rn_tok_hash(s, n), j = h & (WC_SLOTS - 1);
	for (;; j = (j + 1) & (WC_SLOTS - 1)) {
		const struct wc_slot *c = &w->wc[j];
		if (c->hash == 0)
			break;
		if (c->hash == h && c->word_len == n && memcmp(w->norm + c->word_off, s, n) == 0) {
			for (uint32_t k = 0; k < c->n_ids; k++)
				rn_tok_ids_push(w->out, w->wc_ids[c->ids_off + k]);
			return;
		}
	}
	size_t first = w->out->n;
	bpe_merge(w, s, n);
	wc_store(w, h, j, s, n, first);
}

static int match(struct work *w, int level, const uint8_t *subj, size_t len, size_t start, size_t *ms, size_t *me)
{
	const struct rn_tok *tok = w->tok;
	pcre2_code *re = tok->regex[level];
	int rc;
	for (;;) {
		if (tok->regex_jit[level])
			rc = pcre2_jit_match(re, subj, len, start, 0, w->md, w->mctx);
		else
			rc = pcre2_match(re, subj, len, start, PCRE2_NO_UTF_CHECK, w->md, w->mctx);
		if (rc != PCRE2_ERROR_JIT_STACKLIMIT || w->jstack)
			break;
		/* a long piece needs more JIT stack than the default 32 KiB: give this call its own */
		w->mctx = pcre2_match_context_create(NULL);
		w->jstack = pcre2_jit_stack_create(64 * 1024, 64 * 1024 * 1024, NULL);
		if (!w->mctx || !w->jstack) {
			w->oom = true;
			return -1;
		}
		pcre2_jit_stack_assign(w->mctx, NULL, w->jstack);
	}
	if (rc == PCRE2_ERROR_NOMATCH)
		return 0;
	if (rc < 0) {
		PCRE2_UCHAR msg[160];
		pcre2_get_error_message(rc, msg, sizeof msg);
		w->rc = rn_tok_fail(w->err, RN_TOK_ERR_REGEX, "pre-tokenizer pattern %d of \"%s\" failed to match: %s", level,
				    tok->pre_name, (const char *)msg);
		return -1;
	}
	PCRE2_SIZE *ov = pcre2_get_ovector_pointer(w->md);
	*ms = ov[0];
	*me = ov[1];
	return 1;
}

/* Apply pattern `level` to norm[off, off + len): matches and the gaps between them are the pieces the next
 * pattern splits further; after the last pattern each piece is a word. */
static void split(struct work *w, int level, size_t off, size_t len)
{
	if (w->oom || w->rc)
		return;
	if (level == w->tok->n_regex) {
		bpe_word(w, w->norm + off, len);
		return;
	}
	const uint8_t *subj = w->subj + off;
	size_t gap = 0, pos = 0;
	while (pos < len) {
		size_t ms, me;
		int m = match(w, level, subj, len, pos, &ms, &me);
		if (m < 0)
			return;
		if (m == 0)
			break;
		if (me == ms) { /* an empty match (none of the patterns has one): look again one character on */
			if (ms >= len)
				break;
			pos = ms + ob_utf8_lead_len(subj[ms]);
			continue;
		}
		if (ms > gap)
			split(w, level + 1, off + gap, ms - gap);
		split(w, level + 1, off + ms, me - ms);
		gap = pos = me;
	}
	if (gap < len)
		split(w, level + 1, off + gap, len - gap);
}

/* Stand-ins by UTF-8 length (2, 3, 4) and class: code points whose class is the same in every Unicode
 * version PCRE2 may have. Index: enum ob_uclass, then white space last. */
static const uint32_t stand_in[3][8] = {
	/* other, letter, number, punct, symbol, mark, separator(non-space: none exist), white space */
	{0x0080, 0x00e0, 0x00b2, 0x00a1, 0x00a2, 0x0300, 0x0080, 0x00a0},
	{0xe000, 0x4e00, 0x0966, 0x2010, 0x20ac, 0x0900, 0xe000, 0x3000},
	{0xf0000, 0x20000, 0x10107, 0x10100, 0x1d100, 0x101fd, 0xf0000, 0xf0000},
};

int rn_tok_bpe_encode(const struct rn_tok *tok, const char *text, size_t len, struct rn_tok_ids *out,
		      struct rn_tok_error *err)
{
	const uint8_t *in = (const uint8_t *)text;
	struct work w = {.tok = tok, .out = out, .err = err};
	uint8_t *norm = NULL, *subj = NULL;
	size_t nlen = len;
	size_t i = 0;
	while (i < len && in[i] < 0x80)
		i++;
	if (i == len) {
		w.norm = w.subj = in; /* ASCII: nothing to replace */
	} else {
		/* invalid bytes become U+FFFD (3 bytes): at most 3x */
		norm = malloc(3 * len);
		subj = malloc(3 * len);
		if (!norm || !subj) {
			free(norm);
			free(subj);
			return rn_tok_fail(err, RN_TOK_ERR_NOMEM, "out of memory for %zu bytes of text", 3 * len);
		}
		memcpy(norm, in, i);
		memcpy(subj, in, i);
		size_t j = i;
		while (i < len) {
			if (in[i] < 0x80) {
				norm[j] = subj[j] = in[i++];
				j++;
				continue;
			}
			size_t adv;
			int32_t cp = ob_utf8_decode_lax(in + i, len - i, &adv);
			i += adv;
			if (cp < 0)
				cp = 0xfffd;
			size_t l = ob_utf8_encode_lax((char *)norm + j, (uint32_t)cp);
			if (cp < 0x80) { /* an overlong form of an ASCII character */
				subj[j] = (uint8_t)cp;
			} else {
				unsigned c = ob_uprops((uint32_t)cp);
				unsigned k = (c & OB_UPROP_WHITE_SPACE) ? 7 : (c & OB_UCLASS_MASK);
				ob_utf8_encode_lax((char *)subj + j, stand_in[l - 2][k]);
			}
			j += l;
		}
		nlen = j;
		w.norm = norm;
		w.subj = subj;
	}
	w.md = pcre2_match_data_create(1, NULL);
	if (!w.md) {
		w.oom = true;
	} else {
		split(&w, 0, 0, nlen);
	}
	int rc = w.rc;
	if (!rc && w.oom)
		rc = rn_tok_fail(err, RN_TOK_ERR_NOMEM, "out of memory tokenizing %zu bytes", len);
	pcre2_match_data_free(w.md);
	pcre2_match_context_free(w.mctx);
	pcre2_jit_stack_free(w.jstack);
	free(w.id);
	free(w.prev);
	free(w.next);
	free(w.len);
	free(w.heap.v);
	free(w.enc);
	free(w.wc);
	free(w.wc_ids);
	free(norm);
	free(subj);
	return rc;
}
