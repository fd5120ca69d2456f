/* tests/fuzz/fuzz_tokenizer.c — fuzz target for runner/tokenizer.
 *
 * The first byte chooses what the rest is. Even: text, tokenized (parse_special on and off, with and without
 * add_special) by the synthetic SentencePiece model and by a small byte-level BPE vocabulary under each
 * pre-tokenizer family, then streamed back and detokenized. Odd: a GGUF file, parsed and handed to
 * rn_tok_load; a vocabulary that loads is then exercised the same way on a fixed text and on every id.
 * Nothing may crash, and every id and every streamed chunk is checked.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "runner/tokenizer/tokenizer.h"
#include "tests/testmodel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define N_TOKS 7

static struct gguf_file *files[2];
static struct rn_tok *toks[N_TOKS];

static void die(const char *what)
{
	fprintf(stderr, "fuzz_tokenizer: %s\n", what);
	abort();
}

static void setup(void)
{
	static const char *const pres[] = {"default", "gpt-2", "llama-bpe", "qwen2", "qwen35", "smollm"};
	struct gguf_error gerr;
	struct rn_tok_error err;
	files[0] = gguf_open(tm_srcpath("tests/data/tokenizer/spm-tiny.gguf"), &gerr);
	files[1] = gguf_open(tm_srcpath("tests/data/tokenizer/bad/ok-bos-out-of-range.gguf"), &gerr);
	if (!files[0] || !files[1])
		die("cannot open the tokenizer test files (ORUN_SRCDIR?)");
	if (rn_tok_load(files[0], NULL, &toks[0], &err) != RN_TOK_OK)
		die(err.msg);
	for (int i = 0; i < 6; i++) {
		struct rn_tok_options opt = {pres[i]};
		if (rn_tok_load(files[1], &opt, &toks[1 + i], &err) != RN_TOK_OK)
			die(err.msg);
	}
}

static bool utf8_valid(const char *s, size_t n)
{
	return rn_tok_utf8_valid_prefix(s, n) == n;
}

static void exercise(const struct rn_tok *tok, const char *text, size_t len)
{
	uint32_t nv = rn_tok_n_vocab(tok);
	for (int mode = 0; mode < 4; mode++) {
		int32_t *ids;
		size_t n;
		struct rn_tok_error err;
		if (rn_tok_encode_alloc(tok, text, len, mode & 1, mode & 2, &ids, &n, &err) != RN_TOK_OK)
			die(err.msg); /* small inputs never hit a limit */
		struct rn_tok_stream *s = rn_tok_stream_new(tok, mode & 1);
		if (!s)
			die("out of memory");
		for (size_t k = 0; k < n; k++) {
			const char *o;
			size_t on;
			if (ids[k] < 0 || (uint32_t)ids[k] >= nv)
				die("id out of range");
			if (rn_tok_stream_push(s, ids[k], &o, &on) != RN_TOK_OK || !utf8_valid(o, on))
				die("stream chunk");
		}
		const char *o;
		size_t on;
		if (rn_tok_stream_flush(s, &o, &on) != RN_TOK_OK || !utf8_valid(o, on))
			die("stream flush");
		rn_tok_stream_free(s);
		size_t need = 0;
		int rc = rn_tok_detokenize(tok, ids, n, mode & 1, mode & 2, NULL, 0, &need);
		if (rc != RN_TOK_OK && rc != RN_TOK_ERR_NOSPACE)
			die("detokenize size");
		char *buf = malloc(need + 1);
		size_t got;
		if (!buf || rn_tok_detokenize(tok, ids, n, mode & 1, mode & 2, buf, need, &got) != RN_TOK_OK || got > need)
			die("detokenize");
		free(buf);
		free(ids);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!toks[0])
		setup();
	if (size == 0)
		return 0;
	const char *rest = (const char *)data + 1;
	size_t n = size - 1;
	if (!(data[0] & 1)) {
		for (int i = 0; i < N_TOKS; i++)
			exercise(toks[i], rest, n);
		return 0;
	}
	struct gguf_file *f = gguf_parse(rest, n, NULL);
	if (!f)
		return 0;
	struct rn_tok *tok = NULL;
	struct rn_tok_error err;
	if (rn_tok_load(f, NULL, &tok, &err) == RN_TOK_OK) {
		static const char text[] = "Hello <|im_start|>world</s> 123 \xe4\xbd\xa0\xff 's  \n\n";
		exercise(tok, text, sizeof text - 1);
		uint32_t nv = rn_tok_n_vocab(tok);
		for (uint32_t id = 0; id < nv && id < 4096; id++) {
			const char *p;
			size_t pn;
			if (rn_tok_piece(tok, (int32_t)id, id & 1, &p, &pn) != RN_TOK_OK)
				die("piece");
			(void)rn_tok_is_eog(tok, (int32_t)id);
		}
	}
	rn_tok_free(tok);
	gguf_close(f);
	return 0;
}
