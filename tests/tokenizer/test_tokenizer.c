/* tests/tokenizer/test_tokenizer.c — the tokenizer on synthetic files: the SentencePiece model against
 * llama.cpp's golden ids, one bad GGUF per defect class, and the API's edges (buffer sizes, ranges, the
 * streaming decoder on split and invalid UTF-8). Needs no downloaded model; tests/tokenizer/test_golden.c
 * covers the real ones.
 */
#include "config.h"

#include "tests/tokenizer/golden.h"

static void test_spm(const struct corpus *c)
{
	struct gguf_file *f;
	struct rn_tok *tok = load_tok(tm_srcpath("tests/data/tokenizer/spm-tiny.gguf"), NULL, &f);
	if (!tok) {
		gguf_close(f);
		return;
	}
	CHECK(rn_tok_kind(tok) == RN_TOK_KIND_SPM);
	CHECK_STREQ(rn_tok_model_name(tok), "llama");
	CHECK(rn_tok_add_bos(tok) && !rn_tok_add_eos(tok) && rn_tok_add_space_prefix(tok));
	CHECK_EQ_INT(rn_tok_bos(tok), 1);
	CHECK_EQ_INT(rn_tok_eos(tok), 2);
	CHECK_EQ_INT(rn_tok_specials(tok)->unk, 0);
	CHECK_EQ_INT(rn_tok_specials(tok)->nl, rn_tok_find(tok, "<0x0A>", 6));
	/* llama.cpp prints "EOG token = 2 '</s>'" and "260 '<|im_end|>'" for this file */
	const int32_t *eog;
	size_t n_eog = rn_tok_eog_ids(tok, &eog);
	CHECK_EQ_INT(n_eog, 2);
	CHECK(rn_tok_is_eog(tok, 2) && rn_tok_is_eog(tok, rn_tok_find(tok, "<|im_end|>", 10)) && !rn_tok_is_eog(tok, 1));
	CHECK(!rn_tok_is_eog(tok, -1) && !rn_tok_is_eog(tok, (int32_t)rn_tok_n_vocab(tok)));
	CHECK_EQ_INT(rn_tok_type(tok, 3), RN_TOK_TYPE_BYTE);
	CHECK(rn_tok_attr(tok, rn_tok_find(tok, "<|user|>", 8)) & RN_TOK_ATTR_USER_DEFINED);

	struct golden_stats st = {0};
	check_golden("spm", tok, c, &st);
	print_stats("spm (synthetic SentencePiece)", &st);

	/* pieces: control tokens only with special; byte tokens are one byte; U+2581 becomes a space */
	const char *p;
	size_t n;
	CHECK(rn_tok_piece(tok, 1, true, &p, &n) == RN_TOK_OK && n == 3 && memcmp(p, "<s>", 3) == 0);
	CHECK(rn_tok_piece(tok, 1, false, &p, &n) == RN_TOK_OK && n == 0);
	CHECK(rn_tok_piece(tok, rn_tok_find(tok, "<0x41>", 6), false, &p, &n) == RN_TOK_OK && n == 1 && p[0] == 'A');
	int32_t the = rn_tok_find(tok, "\xe2\x96\x81The", 6);
	CHECK(the >= 0 && rn_tok_piece(tok, the, false, &p, &n) == RN_TOK_OK && n == 4 && memcmp(p, " The", 4) == 0);
	CHECK(rn_tok_piece(tok, -1, true, &p, &n) == RN_TOK_ERR_RANGE);
	CHECK(rn_tok_piece(tok, (int32_t)rn_tok_n_vocab(tok), true, &p, &n) == RN_TOK_ERR_RANGE);

	/* detokenize: the leading space of the first piece goes unless a BOS is removed before it */
	int32_t ids[4] = {1, the, rn_tok_find(tok, "<0x41>", 6), 2};
	char out[64];
	size_t len;
	CHECK(rn_tok_detokenize(tok, ids, 4, true, false, out, sizeof out, &len) == RN_TOK_OK && len == 5 &&
	      memcmp(out, " TheA", 5) == 0);
	CHECK(rn_tok_detokenize(tok, ids + 1, 2, false, false, out, sizeof out, &len) == RN_TOK_OK && len == 4 &&
	      memcmp(out, "TheA", 4) == 0);
	CHECK(rn_tok_detokenize(tok, ids, 4, false, true, out, sizeof out, &len) == RN_TOK_OK && len == 12 &&
	      memcmp(out, "<s> TheA</s>", 12) == 0);
	CHECK(rn_tok_detokenize(tok, ids, 4, false, true, out, 3, &len) == RN_TOK_ERR_NOSPACE && len == 12);
	int32_t bad[1] = {-5};
	CHECK(rn_tok_detokenize(tok, bad, 1, false, true, out, sizeof out, &len) == RN_TOK_ERR_RANGE);

	/* encode into a small buffer: NOSPACE with the full count, the first cap ids written */
	int32_t small[3];
	size_t cnt;
	struct rn_tok_error err;
	int32_t *all;
	size_t n_all;
	CHECK(rn_tok_encode_alloc(tok, "The quick brown fox", 19, true, true, &all, &n_all, &err) == RN_TOK_OK && n_all > 3);
	CHECK(rn_tok_encode(tok, "The quick brown fox", 19, true, true, small, 3, &cnt, &err) == RN_TOK_ERR_NOSPACE &&
	      cnt == n_all && memcmp(small, all, sizeof small) == 0);
	CHECK(rn_tok_encode(tok, "", 0, true, true, small, 3, &cnt, &err) == RN_TOK_OK && cnt == 1 && small[0] == 1);
	CHECK(rn_tok_encode(tok, "", 0, false, true, NULL, 0, &cnt, &err) == RN_TOK_OK && cnt == 0);
	free(all);

	/* streaming over byte tokens: a character split in three is held back until complete */
	struct rn_tok_stream *s = rn_tok_stream_new(tok, false);
	const char *o;
	size_t on;
	int32_t e4 = rn_tok_find(tok, "<0xE4>", 6), bd = rn_tok_find(tok, "<0xBD>", 6), a0 = rn_tok_find(tok, "<0xA0>", 6);
	int32_t ff = rn_tok_find(tok, "<0xFF>", 6), x41 = rn_tok_find(tok, "<0x41>", 6);
	CHECK(rn_tok_stream_push(s, e4, &o, &on) == RN_TOK_OK && on == 0 && rn_tok_stream_pending(s) == 1);
	CHECK(rn_tok_stream_push(s, bd, &o, &on) == RN_TOK_OK && on == 0 && rn_tok_stream_pending(s) == 2);
	CHECK(rn_tok_stream_push(s, a0, &o, &on) == RN_TOK_OK && on == 3 && memcmp(o, "\xe4\xbd\xa0", 3) == 0);
	/* a byte that can never start a character is replaced at once */
	CHECK(rn_tok_stream_push(s, ff, &o, &on) == RN_TOK_OK && on == 3 && memcmp(o, "\xef\xbf\xbd", 3) == 0);
	/* an incomplete sequence broken by an ASCII byte: one U+FFFD per byte, as Go writes it */
	CHECK(rn_tok_stream_push(s, e4, &o, &on) == RN_TOK_OK && on == 0);
	CHECK(rn_tok_stream_push(s, bd, &o, &on) == RN_TOK_OK && on == 0);
	CHECK(rn_tok_stream_push(s, x41, &o, &on) == RN_TOK_OK && on == 7 && memcmp(o, "\xef\xbf\xbd\xef\xbf\xbd" "A", 7) == 0);
	/* what is held back at the end comes out replaced */
	CHECK(rn_tok_stream_push(s, e4, &o, &on) == RN_TOK_OK && on == 0);
	CHECK(rn_tok_stream_flush(s, &o, &on) == RN_TOK_OK && on == 3 && memcmp(o, "\xef\xbf\xbd", 3) == 0);
	CHECK(rn_tok_stream_pending(s) == 0);
	/* control tokens are silent without special, and out-of-range ids are refused */
	CHECK(rn_tok_stream_push(s, 2, &o, &on) == RN_TOK_OK && on == 0);
	CHECK(rn_tok_stream_push(s, -1, &o, &on) == RN_TOK_ERR_RANGE);
	rn_tok_stream_free(s);
	rn_tok_stream_free(NULL);

	rn_tok_free(tok);
	gguf_close(f);
}

struct bad_case {
	const char *file;
	int code;
	const char *needle; /* the message must name this */
};

static void test_bad(void)
{
	static const struct bad_case cases[] = {
		{"bad-no-model.gguf", RN_TOK_ERR_MISSING, "tokenizer.ggml.model"},
		{"bad-model-not-string.gguf", RN_TOK_ERR_TYPE, "tokenizer.ggml.model"},
		{"bad-unknown-model.gguf", RN_TOK_ERR_UNSUPPORTED, "wordpiece-9000"},
		{"bad-unknown-pre.gguf", RN_TOK_ERR_UNSUPPORTED, "no-such-pre"},
		{"bad-no-tokens.gguf", RN_TOK_ERR_MISSING, "tokenizer.ggml.tokens"},
		{"bad-tokens-not-strings.gguf", RN_TOK_ERR_TYPE, "tokenizer.ggml.tokens"},
		{"bad-empty-vocab.gguf", RN_TOK_ERR_VOCAB, "empty"},
		{"bad-no-merges.gguf", RN_TOK_ERR_MISSING, "tokenizer.ggml.merges"},
		{"bad-types-short.gguf", RN_TOK_ERR_LENGTH, "tokenizer.ggml.token_type"},
		{"bad-scores-short.gguf", RN_TOK_ERR_LENGTH, "tokenizer.ggml.scores"},
		{"bad-dup-token.gguf", RN_TOK_ERR_VOCAB, "same text"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char rel[256];
		snprintf(rel, sizeof rel, "tests/data/tokenizer/bad/%s", cases[i].file);
		struct gguf_error gerr = {0};
		struct gguf_file *f = gguf_open(tm_srcpath(rel), &gerr);
		CHECKF(f != NULL, "%s: gguf_open: %s", cases[i].file, gerr.msg);
		if (!f)
			continue;
		struct rn_tok *tok = (struct rn_tok *)1;
		struct rn_tok_error err = {0};
		int rc = rn_tok_load(f, NULL, &tok, &err);
		CHECKF(rc == cases[i].code && tok == NULL, "%s: rc %d (%s), want %d", cases[i].file, rc, err.msg, cases[i].code);
		CHECKF(err.code == rc && strstr(err.msg, cases[i].needle) != NULL, "%s: message \"%s\" does not name \"%s\"",
		       cases[i].file, err.msg, cases[i].needle);
		fprintf(stderr, "%s: %s\n", cases[i].file, err.msg);
		gguf_close(f);
	}

	/* a special id out of range is not an error: llama.cpp keeps the default (BPE: 11) */
	struct gguf_file *f;
	struct rn_tok *tok = load_tok(tm_srcpath("tests/data/tokenizer/bad/ok-bos-out-of-range.gguf"), NULL, &f);
	if (tok) {
		CHECK_EQ_INT(rn_tok_bos(tok), 11);
		/* this tiny vocabulary: "the" merges to one token, and <|endoftext|> is control and end-of-generation */
		int32_t ids[32];
		size_t n;
		struct rn_tok_error err;
		CHECK(rn_tok_encode(tok, " the", 4, false, false, ids, 32, &n, &err) == RN_TOK_OK && n == 1 &&
		      ids[0] == rn_tok_find(tok, "\xc4\xa0the", 5));
		int32_t eot = rn_tok_find(tok, "<|endoftext|>", 13);
		CHECK(rn_tok_is_eog(tok, eot) && rn_tok_is_control(tok, eot));
		CHECK(rn_tok_encode(tok, "<|endoftext|>", 13, false, true, ids, 32, &n, &err) == RN_TOK_OK && n == 1 && ids[0] == eot);
		CHECK(rn_tok_encode(tok, "<|endoftext|>", 13, false, false, ids, 32, &n, &err) == RN_TOK_OK && n == 13);
	}
	rn_tok_free(tok);
	gguf_close(f);

	/* an unknown pre-tokenizer name given as an override is refused like one in the file */
	struct gguf_error gerr = {0};
	f = gguf_open(tm_srcpath("tests/data/tokenizer/bad/ok-bos-out-of-range.gguf"), &gerr);
	if (f) {
		struct rn_tok_options opt = {"tekken"};
		struct rn_tok_error err = {0};
		CHECK(rn_tok_load(f, &opt, &tok, &err) == RN_TOK_ERR_UNSUPPORTED && strstr(err.msg, "tekken"));
		gguf_close(f);
	}
	CHECK(strcmp(rn_tok_strerror(RN_TOK_ERR_RANGE), rn_tok_strerror(12345)) != 0);
	rn_tok_free(NULL);
}

/* Random bytes (with pieces of special tokens and multi-byte characters mixed in) must always tokenize: ids in
 * range, and the stream of their pieces always valid UTF-8. */
static void test_random(const char *rel)
{
	struct gguf_file *f;
	struct rn_tok *tok = load_tok(tm_srcpath(rel), NULL, &f);
	if (!tok) {
		gguf_close(f);
		return;
	}
	static const char *const bits[] = {"<|im_start|>", "<|im_end|>", "<s>", "</s>", "<|endoftext|>", "<|user|>", " ", "  ",
					   "\n", "\t", "'s", "\xe4\xbd\xa0", "\xf0\x9f\x98\x80", "\xe2\x96\x81", "\xc4\xa0", "12", "ab"};
	uint32_t seed = 12345;
	struct rn_tok_stream *s = rn_tok_stream_new(tok, true);
	int bad = 0;
	for (int iter = 0; iter < 3000; iter++) {
		char text[256];
		size_t n = 0;
		int parts = (int)((seed = seed * 1103515245u + 12345u) >> 16) % 12;
		for (int p = 0; p < parts && n < 200; p++) {
			seed = seed * 1103515245u + 12345u;
			if ((seed >> 16) % 3 == 0) {
				const char *b = bits[(seed >> 8) % (sizeof bits / sizeof bits[0])];
				memcpy(text + n, b, strlen(b));
				n += strlen(b);
			} else {
				int k = (int)((seed >> 20) % 5) + 1;
				for (int j = 0; j < k; j++) {
					seed = seed * 1103515245u + 12345u;
					text[n++] = (char)(seed >> 16);
				}
			}
		}
		int32_t *ids;
		size_t m;
		struct rn_tok_error err;
		if (rn_tok_encode_alloc(tok, text, n, iter & 1, iter & 2, &ids, &m, &err) != RN_TOK_OK) {
			bad++;
			continue;
		}
		rn_tok_stream_reset(s);
		for (size_t k = 0; k < m; k++) {
			const char *o;
			size_t on;
			if (ids[k] < 0 || (uint32_t)ids[k] >= rn_tok_n_vocab(tok) || rn_tok_stream_push(s, ids[k], &o, &on) != RN_TOK_OK ||
			    !utf8_ok((const unsigned char *)o, on))
				bad++;
		}
		const char *o;
		size_t on;
		if (rn_tok_stream_flush(s, &o, &on) != RN_TOK_OK || !utf8_ok((const unsigned char *)o, on))
			bad++;
		free(ids);
	}
	CHECKF(bad == 0, "%s: %d failures on random input", rel, bad);
	rn_tok_stream_free(s);
	rn_tok_free(tok);
	gguf_close(f);
}

static void test_utf8_prefix(void)
{
	CHECK_EQ_INT(rn_tok_utf8_valid_prefix("abc", 3), 3);
	CHECK_EQ_INT(rn_tok_utf8_valid_prefix("a\xe4\xbd", 3), 1);
	CHECK_EQ_INT(rn_tok_utf8_valid_prefix("\xed\xa0\x80", 3), 0); /* surrogate */
	CHECK_EQ_INT(rn_tok_utf8_valid_prefix("\xc0\x80", 2), 0);     /* overlong */
	CHECK_EQ_INT(rn_tok_utf8_valid_prefix("\xf4\x90\x80\x80", 4), 0);
	CHECK_EQ_INT(rn_tok_utf8_valid_prefix("\xf0\x9f\x98\x80!", 5), 5);
}

int main(void)
{
	struct corpus c = load_corpus();
	CHECKF(c.n >= 200, "corpus has %zu strings", c.n);
	test_spm(&c);
	test_bad();
	test_random("tests/data/tokenizer/spm-tiny.gguf");
	test_random("tests/data/tokenizer/bad/ok-bos-out-of-range.gguf");
	test_utf8_prefix();
	for (size_t i = 0; i < c.n; i++)
		free(c.s[i].p);
	free(c.s);
	free(c.raw);
	return check_done();
}
