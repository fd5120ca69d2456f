/* tests/fuzz/fuzz_grammar.c — libFuzzer target for runner/grammar: the input is GBNF text, then (after a NUL)
 * the choices of a random walk. The text must compile or be refused with RN_ERR_INVALID_ARG and a
 * "grammar: " message; a grammar that compiles drives a small synthetic vocabulary (every byte, common
 * multi-byte pieces, pieces of the grammar text itself, an end-of-generation token): at each step the mask
 * and rn_grammar_state_allows must agree on every token, the walk takes only allowed tokens, each must be
 * accepted, and the bytes of the whole walk must be accepted again from the start in one go. Built as a real
 * fuzzer with --enable-fuzzing and replayed over its corpus in `make check`.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/grammar/grammar_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_STEPS 24
#define MAX_TEXT_PIECES 48

static const char *const COMMON[] = {
	"{", "}", "[", "]", "\"", ":", ",", " ", "\n", "true", "false", "null", "0", "12", "-1.5e3", "ab", "abc",
	"a\"", "\":", "\", \"", "\xc3\xa9", "\xc3", "\xa9", "\xe2\x82\xac", "\xe2\x82", "\xf0\x9f\x98\x80", "xyz",
	"\\n", "\\u00e9", "root", "::=", "{\"", "\"}", "  ", "\t",
};

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_grammar: %s\n", what);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t glen = nul ? (size_t)(nul - data) : size;
	const uint8_t *choice = nul ? nul + 1 : data + size;
	size_t n_choice = nul ? size - glen - 1 : 0;
	struct rn_error err = {0};
	struct rn_grammar *g = rn_grammar_compile((const char *)data, glen, NULL, &err);
	if (!g) {
		if (err.code != RN_ERR_INVALID_ARG && err.code != RN_ERR_NOMEM)
			fail("refused without RN_ERR_INVALID_ARG");
		if (strncmp(err.msg, "grammar: ", 9) != 0)
			fail("a refusal without the \"grammar: \" message");
		return 0;
	}
	/* the vocabulary: 256 single bytes, the common pieces, pieces of the grammar's own text, one EOG */
	enum { N_COMMON = sizeof COMMON / sizeof *COMMON };
	static char bytes[256];
	const char *text[256 + N_COMMON + MAX_TEXT_PIECES + 1];
	uint32_t len[256 + N_COMMON + MAX_TEXT_PIECES + 1];
	uint8_t eog[256 + N_COMMON + MAX_TEXT_PIECES + 1] = {0};
	uint32_t n = 0;
	for (int b = 0; b < 256; b++, n++) {
		bytes[b] = (char)b;
		text[n] = &bytes[b];
		len[n] = 1;
	}
	for (int k = 0; k < N_COMMON; k++, n++) {
		text[n] = COMMON[k];
		len[n] = (uint32_t)strlen(COMMON[k]);
	}
	for (size_t at = 0; at + 2 <= glen && n < 256 + N_COMMON + MAX_TEXT_PIECES; at += 3, n++) {
		text[n] = (const char *)data + at;
		len[n] = (uint32_t)(glen - at < 4 ? glen - at : 2 + at % 3);
	}
	eog[n] = 1;
	text[n] = "";
	len[n++] = 0;
	struct rn_grammar_vocab *v = rn_grammar_vocab_from_pieces(text, len, eog, n, &err);
	struct rn_grammar_state *st = v ? rn_grammar_state_new(g, v, &err) : NULL;
	if (!st) {
		if (v && err.code != RN_ERR_INVALID_ARG)
			fail("a state refused without RN_ERR_INVALID_ARG");
		rn_grammar_vocab_free(v);
		rn_grammar_free(g);
		return 0;
	}
	float logits[256 + N_COMMON + MAX_TEXT_PIECES + 1];
	int32_t allowed[256 + N_COMMON + MAX_TEXT_PIECES + 1];
	char walked[MAX_STEPS * 8];
	size_t n_walked = 0;
	for (int step = 0; step < MAX_STEPS; step++) {
		for (uint32_t t = 0; t < n; t++)
			logits[t] = 0;
		rn_grammar_state_mask(st, logits);
		if (rn_grammar_state_mask_failed(st))
			break; /* the walk's budget ran out: allowed nothing, by design */
		int n_allowed = 0;
		for (uint32_t t = 0; t < n; t++) {
			bool a = rn_grammar_state_allows(st, (int32_t)t);
			if (a != (logits[t] == 0))
				fail("the mask and allows disagree");
			if (a)
				allowed[n_allowed++] = (int32_t)t;
		}
		if (n_allowed == 0)
			break;
		int32_t t = allowed[(step < (int)n_choice ? choice[step] : 0) % n_allowed];
		if (rn_grammar_state_accept(st, t) != RN_OK)
			fail("an allowed token was not accepted");
		if (eog[t]) {
			if (!rn_grammar_state_can_end(st, NULL))
				fail("end of generation allowed where the grammar cannot end");
			break;
		}
		if (n_walked + len[t] <= sizeof walked) {
			memcpy(walked + n_walked, text[t], len[t]);
			n_walked += len[t];
		} else {
			break;
		}
	}
	rn_grammar_state_free(st);
	/* the same bytes in one go from the start */
	st = rn_grammar_state_new(g, v, &err);
	if (!st || !rn_grammar_state_accept_bytes(st, walked, n_walked))
		fail("the walk's bytes are not accepted again");
	rn_grammar_state_free(st);
	rn_grammar_vocab_free(v);
	rn_grammar_free(g);
	return 0;
}
