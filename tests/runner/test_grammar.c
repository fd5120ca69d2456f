/* tests/runner/test_grammar.c — runner/grammar: the GBNF compiler's accept and refuse cases (with the line and
 * column of the message), the matcher on strings (Ollama's JSON grammar on valid and invalid JSON, classes,
 * repetitions, UTF-8, a token ending inside a character), and with qwen2.5's tokenizer installed: the mask
 * against rn_grammar_state_allows over the whole vocabulary, and the engine generating under the JSON
 * grammar (greedy and sampled), with grammar_after, and in parallel slots.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/json.h"
#include "runner/engine.h"
#include "runner/grammar/grammar.h"
#include "tests/check.h"
#include "tests/testmodel.h"

/* Ollama's grammar for format "json" (llm/server.go, as its runner receives it) and a nested object as a
 * JSON schema converter writes it: tests/data/grammar/ (also the inputs of `orun bench --grammar`). */
static char *JSON_GBNF, *NESTED_GBNF;

static char *read_data(const char *rel)
{
	struct ob_buf b = {.max = 1 << 20};
	if (!ob_buf_read_file(&b, tm_srcpath(rel))) {
		fprintf(stderr, "FAIL: cannot read %s\n", tm_srcpath(rel));
		exit(1);
	}
	return ob_buf_take(&b);
}

static struct rn_grammar *compile(const char *text, struct rn_error *err)
{
	return rn_grammar_compile(text, strlen(text), NULL, err);
}

/* The whole of s is a sentence of g (when full) or a prefix of one. */
static bool matches(const struct rn_grammar *g, const char *s, size_t n, bool full)
{
	struct rn_error err;
	struct rn_grammar_state *st = rn_grammar_state_new(g, NULL, &err);
	if (!st)
		return false;
	bool ok = rn_grammar_state_accept_bytes(st, s, n) && (!full || rn_grammar_state_can_end(st, NULL));
	rn_grammar_state_free(st);
	return ok;
}

static bool gmatch(const char *grammar, const char *s)
{
	struct rn_error err;
	struct rn_grammar *g = compile(grammar, &err);
	CHECKF(g != NULL, "%s: %s", grammar, err.msg);
	bool ok = g && matches(g, s, strlen(s), true);
	rn_grammar_free(g);
	return ok;
}

/* ---------------------------------------------------------------------------------------------------- */

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void test_compile_errors(void)
{
	static const struct {
		const char *text, *msg;
	} bad[] = {
		{"root ::= foo\n", "line 1 column 10: undefined rule 'foo'"},
		{"a ::= \"x\"\n", "no rule named 'root'"},
		{"root ::= \"abc\n", "line 1 column 10: a string literal without its closing"},
		{"root ::= [a-z\n", "line 1 column 10: a '[' without its ']'"},
		{"root ::= (\"a\"\n", "line 1 column 10: a '(' without its ')'"},
		{"root ::= \"a\")\n", "line 1 column 13: a ')' without its '('"},
		{"root ::= \"\\q\"\n", "line 1 column 11: unknown escape '\\q'"},
		{"root ::= \"\\x4\"\n", "line 1 column 11: '\\x' needs 2 hexadecimal digits"},
		{"root ::= [z-a]\n", "line 1 column 11: a class range that ends before it starts"},
		{"root ::= root \"a\"\n", "rule 'root' is left-recursive"},
		{"root ::= x\nx ::= y? x \"a\"\ny ::= \"b\"\n", "rule 'x' is left-recursive"},
		{"root ::= (\"\")*\n", "left-recursive"},
		{"root ::= \"a\"{3,2}\n", "line 1 column 13: a repetition {m,n} with n below m"},
		{"root ::= \"a\"{20000}\n", "a repetition count above 10000"},
		{"root ::= \"a\"{1,\n", "a '{' without its '}'"},
		{"root ::= *\n", "'*' with nothing before it to repeat"},
		{"root ::= \"a\"\nroot ::= \"b\"\n", "line 2 column 1: rule 'root' is defined twice"},
		{"root = \"a\"\n", "line 1 column 6: '::=' expected"},
		{"root ::= \"a\" ! \n", "line 1 column 14: unexpected '!'"},
		{"root ::= \"\xff\"\n", "invalid UTF-8"},
		{"\n\n  root ::= \"a\" | bogus\n", "line 3 column 18: undefined rule 'bogus'"},
		{"root ::= \"\\U00110000\"\n", "beyond U+10FFFF"},
		{"root ::= [\\-a]\n", "line 1 column 11: unknown escape '\\-'"}, /* as llama.cpp */
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct rn_error err = {0};
		struct rn_grammar *g = compile(bad[i].text, &err);
		CHECKF(g == NULL, "compiled: %s", bad[i].text);
		CHECK_EQ_INT(err.code, RN_ERR_INVALID_ARG);
		CHECKF(strstr(err.msg, bad[i].msg) != NULL, "%s: got \"%s\", want \"%s\"", bad[i].text, err.msg, bad[i].msg);
		rn_grammar_free(g);
	}
	/* deep nesting is refused, not a stack overflow */
	char deep[2000];
	size_t n = 0;
	n += (size_t)snprintf(deep, sizeof deep, "root ::= ");
	for (int k = 0; k < 300; k++)
		deep[n++] = '(';
	deep[n++] = '"', deep[n++] = 'a', deep[n++] = '"';
	for (int k = 0; k < 300; k++)
		deep[n++] = ')';
	deep[n] = 0;
	struct rn_error err = {0};
	CHECK(compile(deep, &err) == NULL);
	CHECKF(strstr(err.msg, "nested deeper than") != NULL, "%s", err.msg);
	/* a huge expansion is refused */
	char big[400];
	n = (size_t)snprintf(big, sizeof big, "root ::= \"");
	for (int k = 0; k < 200; k++)
		big[n++] = 'a';
	snprintf(big + n, sizeof big - n, "\"{6000}\n");
	CHECK(compile(big, &err) == NULL);
	CHECKF(strstr(err.msg, "more than") != NULL, "%s", err.msg);

	const char *const good[] = {
		JSON_GBNF,
		NESTED_GBNF,
		"root ::= \"\"\n",
		"root ::=\n  \"a\" # comment\n\n# another\nx-1 ::= [^\\]\\[] | . \"\\u00e9\\U0001F600\\x41\\t\\r\\n\\\\\\\"\"\n",
		"root ::= (\n  \"a\" |\n  \"b\"\n)+ \"c\"{2} \"d\"{1,} \"e\"{,3} \"f\"{2,4}\n",
		"root::=\"a\"",
	};
	for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
		struct rn_grammar *g = compile(good[i], &err);
		CHECKF(g != NULL, "%s: %s", good[i], err.msg);
		rn_grammar_free(g);
	}
	/* another start rule */
	struct rn_grammar *g = rn_grammar_compile("a ::= \"x\"\nb ::= \"y\"\n", 20, "b", &err);
	CHECKF(g != NULL, "%s", err.msg);
	CHECK(g && matches(g, "y", 1, true) && !matches(g, "x", 1, true));
	rn_grammar_free(g);
}

static void test_matcher(void)
{
	static const char *const json_ok[] = {
		"{}", "{ }", "{\"a\":1}", "{\"a\": [1, 2.5, -3e10, true, false, null, \"x\"]}",
		"{\"k\": {\"n\": {\"m\": []}}}", "{\"esc\": \"\\n\\t\\\"\\\\\\u00e9\"}",
		"{\"u\": \"h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80\"}",
		"{\n  \"a\": 0\n}", "{\"a\":-0.5E+3}",
	};
	static const char *const json_bad[] = {
		"", "[]", "{", "{\"a\"}", "{\"a\":}", "{a:1}", "{\"a\":01}", "{\"a\":1,}", "{\"a\":\"\x01\"}",
		"{\"a\":tru}", "{\"a\":\"\\x\"}", "{\"a\":1}}", "{\"a\":.5}", "{\"a\":\"\\u12\"}",
	};
	struct rn_error err;
	struct rn_grammar *g = compile(JSON_GBNF, &err);
	CHECKF(g != NULL, "%s", err.msg);
	for (size_t i = 0; g && i < sizeof json_ok / sizeof *json_ok; i++)
		CHECKF(matches(g, json_ok[i], strlen(json_ok[i]), true), "rejected %s", json_ok[i]);
	for (size_t i = 0; g && i < sizeof json_bad / sizeof *json_bad; i++)
		CHECKF(!matches(g, json_bad[i], strlen(json_bad[i]), true), "accepted %s", json_bad[i]);
	/* prefixes of a valid text are accepted, and the state after "{}" can end */
	CHECK(g && matches(g, "{\"a\": [1, ", 10, false));
	CHECK(g && !matches(g, "{\"a\": [1, ]", 11, false));
	rn_grammar_free(g);

	CHECK(gmatch("root ::= [a-c]+ [^x-z]\n", "abcaw"));
	CHECK(!gmatch("root ::= [a-c]+ [^x-z]\n", "abcy"));
	CHECK(!gmatch("root ::= [a-c]+ [^x-z]\n", "w"));
	CHECK(gmatch("root ::= \"a\"{3}\n", "aaa"));
	CHECK(!gmatch("root ::= \"a\"{3}\n", "aa"));
	CHECK(!gmatch("root ::= \"a\"{3}\n", "aaaa"));
	CHECK(gmatch("root ::= \"a\"{2,4}\n", "aaaa") && gmatch("root ::= \"a\"{2,4}\n", "aa"));
	CHECK(!gmatch("root ::= \"a\"{2,4}\n", "a") && !gmatch("root ::= \"a\"{2,4}\n", "aaaaa"));
	CHECK(gmatch("root ::= \"a\"{,2} \"b\"\n", "b") && gmatch("root ::= \"a\"{,2} \"b\"\n", "aab"));
	CHECK(!gmatch("root ::= \"a\"{,2} \"b\"\n", "aaab"));
	CHECK(gmatch("root ::= (\"ab\"){2,}\n", "ababab") && !gmatch("root ::= (\"ab\"){2,}\n", "ab"));
	CHECK(gmatch("root ::= \"x\"? \"y\"* \"z\"+\n", "zz") && gmatch("root ::= \"x\"? \"y\"* \"z\"+\n", "xyyz"));
	CHECK(!gmatch("root ::= \"x\"? \"y\"* \"z\"+\n", "xxz"));
	CHECK(gmatch("root ::= . . .\n", "a\xc3\xa9\xe2\x82\xac"));
	CHECK(gmatch("root ::= [\xc3\xa0-\xc3\xbf]+\n", "\xc3\xa9\xc3\xa0"));
	CHECK(!gmatch("root ::= [\xc3\xa0-\xc3\xbf]+\n", "\xc3\x9f"));
	CHECK(gmatch("root ::= \"\\u00e9\" [\\U0001F600-\\U0001F64F]\n", "\xc3\xa9\xf0\x9f\x98\x81"));
	CHECK(gmatch("root ::= \"\" | \"a\"\n", ""));
	CHECK(gmatch("root ::= [\\]\\[-]+\n", "[]-"));
	CHECK(gmatch("root ::= x\nx ::= \"(\" x \")\" | \"\"\n", "((()))"));
	CHECK(!gmatch("root ::= x\nx ::= \"(\" x \")\" | \"\"\n", "(()"));

	/* large grammars: a 2,000-value enum, a 30,000-rule chain whose start expands too deep (refused when the
	 * state starts, quickly: the expansion work is bounded), 20,000 nullable rules in the worst order for a
	 * fixed-point pass (the compiler's work list is linear) */
	struct ob_buf b = {0};
	ob_buf_printf(&b, "root ::= \"v0\"");
	for (int k = 1; k < 2000; k++)
		ob_buf_printf(&b, " | \"v%d\"", k);
	ob_buf_printf(&b, "\n");
	g = rn_grammar_compile(b.p, b.len, NULL, &err);
	CHECKF(g != NULL, "%s", err.msg);
	CHECK(g && matches(g, "v1234", 5, true) && !matches(g, "v2000", 5, true));
	rn_grammar_free(g);
	b.len = 0;
	ob_buf_printf(&b, "root ::= r1 \"x\" | \"a\"\n");
	for (int k = 1; k < 30000; k++)
		ob_buf_printf(&b, "r%d ::= r%d \"x\" | \"a\"\n", k, k + 1);
	ob_buf_printf(&b, "r30000 ::= \"z\"\n");
	double t0 = now_ms();
	g = rn_grammar_compile(b.p, b.len, NULL, &err);
	double t1 = now_ms();
	CHECKF(g != NULL, "%s", err.msg);
	struct rn_grammar_state *st = g ? rn_grammar_state_new(g, NULL, &err) : NULL;
	fprintf(stderr, "30,000-rule chain: compiled in %.1f ms, start %s in %.1f ms: %s\n", t1 - t0,
		st ? "accepted" : "refused", now_ms() - t1, st ? "" : err.msg);
	CHECK(st == NULL && err.code == RN_ERR_INVALID_ARG);
	rn_grammar_state_free(st);
	rn_grammar_free(g);
	b.len = 0;
	ob_buf_printf(&b, "root ::= r1 \"end\"\n");
	for (int k = 1; k < 20000; k++)
		ob_buf_printf(&b, "r%d ::= r%d | \"\"\n", k, k + 1);
	ob_buf_printf(&b, "r20000 ::= \"\"\n");
	t0 = now_ms();
	g = rn_grammar_compile(b.p, b.len, NULL, &err);
	fprintf(stderr, "20,000 nullable rules: compiled in %.1f ms\n", now_ms() - t0);
	CHECKF(g != NULL, "%s", err.msg);
	rn_grammar_free(g);
	free(b.p);

	/* a character split over several byte pushes (byte-fallback tokens): the partial state carries over,
	 * and a prefix that no code point the grammar takes can start is refused at its first byte */
	g = compile("root ::= \"\xe2\x82\xac\" [a]\n", &err);
	st = g ? rn_grammar_state_new(g, NULL, &err) : NULL;
	CHECK(st != NULL);
	if (st) {
		CHECK(!rn_grammar_state_accept_bytes(st, "\xe3", 1));
		CHECK(rn_grammar_state_accept_bytes(st, "\xe2", 1));
		CHECK(!rn_grammar_state_can_end(st, NULL));
		CHECK(!rn_grammar_state_accept_bytes(st, "\x83", 1));
		CHECK(rn_grammar_state_accept_bytes(st, "\x82", 1));
		CHECK(rn_grammar_state_accept_bytes(st, "\xac" "a", 2));
		bool final = false;
		CHECK(rn_grammar_state_can_end(st, &final) && final);
	}
	rn_grammar_state_free(st);
	rn_grammar_free(g);

	/* only shortest-form UTF-8: an overlong spelling of ASCII (SmolLM2's byte tokens could write "f" as
	 * E0 81 A6), a surrogate or a code point past U+10FFFF is refused, and so is a lead byte whose every
	 * real continuation the grammar rejects (else a byte token could lead into a dead end) */
	g = compile("root ::= \"false\"\n", &err);
	CHECKF(g != NULL, "%s", err.msg);
	if (g) {
		CHECK(!matches(g, "\xe0\x81\xa6" "alse", 7, true));
		CHECK(!matches(g, "\xc1\xa6" "alse", 6, true));
		CHECK(!matches(g, "\xf0\x80\x81\xa6" "alse", 8, true));
		CHECK(!matches(g, "\xe0", 1, false));
		CHECK(!matches(g, "\xf0", 1, false));
		CHECK(matches(g, "false", 5, true));
	}
	rn_grammar_free(g);
	CHECK(gmatch("root ::= [^a]\n", "\xe0\xa0\x80"));        /* U+0800, the first 3-byte code point */
	CHECK(!gmatch("root ::= [^a]\n", "\xed\xa0\x80"));       /* U+D800, a surrogate */
	CHECK(gmatch("root ::= [^a]\n", "\xed\x9f\xbf"));        /* U+D7FF */
	CHECK(gmatch("root ::= [^a]\n", "\xf4\x8f\xbf\xbf"));   /* U+10FFFF */
	CHECK(!gmatch("root ::= [^a]\n", "\xf4\x90\x80\x80"));  /* past U+10FFFF */
	CHECK(gmatch("root ::= [^a]\n", "\xf0\x90\x80\x80"));   /* U+10000 */

	/* an ambiguous grammar: the stacks are capped, never a hang */
	g = compile("root ::= x*\nx ::= \"a\" | \"a\" \"a\" | \"a\" y\ny ::= \"a\"*\n", &err);
	CHECKF(g != NULL, "%s", err.msg);
	if (g) {
		char a[200];
		memset(a, 'a', sizeof a);
		(void)matches(g, a, sizeof a, true);
	}
	rn_grammar_free(g);
}

/* ---------------------------------------------------------------------------------------------------- */
/* with the real vocabulary */

/* The mask and allows agree on every token, after each of the prefixes. */
static void check_mask(struct rn_grammar_state *st, int n_vocab, float *row, const char *what)
{
	for (int t = 0; t < n_vocab; t++)
		row[t] = 0;
	double t0 = now_ms();
	rn_grammar_state_mask(st, row);
	double t1 = now_ms();
	rn_grammar_state_mask(st, row); /* cached */
	double t2 = now_ms();
	int allowed = 0, bad = 0;
	for (int t = 0; t < n_vocab; t++) {
		bool a = rn_grammar_state_allows(st, t);
		allowed += a;
		if (a != (row[t] == 0)) {
			if (bad++ < 5)
				fprintf(stderr, "%s: token %d: allows %d, mask %d\n", what, t, a, row[t] == 0);
		}
	}
	double t3 = now_ms();
	CHECKF(bad == 0, "%s: %d tokens where mask and allows disagree", what, bad);
	fprintf(stderr, "mask after %-24s %6d allowed; mask %.2f ms (cached %.3f ms), %d x allows %.2f ms\n", what,
		allowed, t1 - t0, t2 - t1, n_vocab, t3 - t2);
}

static void test_vocab(const struct rn_tok *tok)
{
	struct rn_error err;
	double t0 = now_ms();
	struct rn_grammar_vocab *v = rn_grammar_vocab_new(tok, &err);
	fprintf(stderr, "vocabulary trie of %u tokens: %.1f ms\n", rn_tok_n_vocab(tok), now_ms() - t0);
	CHECKF(v != NULL, "%s", err.msg);
	struct rn_grammar *g = compile(JSON_GBNF, &err);
	CHECK(g != NULL);
	int n_vocab = (int)rn_tok_n_vocab(tok);
	float *row = malloc((size_t)n_vocab * sizeof *row);
	static const char *const prefixes[] = {"", "{", "{\"na", "{\"name\": ", "{\"name\": \"J\xc3", "{\"a\": [1, 2",
					       "{\"a\": {\"b\": tr", "{\"a\": 1}"};
	for (size_t i = 0; v && g && row && i < sizeof prefixes / sizeof *prefixes; i++) {
		struct rn_grammar_state *st = rn_grammar_state_new(g, v, &err);
		CHECK(st != NULL);
		if (!st)
			continue;
		CHECK(rn_grammar_state_accept_bytes(st, prefixes[i], strlen(prefixes[i])));
		check_mask(st, n_vocab, row, prefixes[i][0] ? prefixes[i] : "(start)");
		rn_grammar_state_free(st);
	}
	/* end-of-generation only where the grammar can end; control tokens never */
	struct rn_grammar_state *st = v && g ? rn_grammar_state_new(g, v, &err) : NULL;
	int32_t eos = rn_tok_eos(tok);
	if (st && eos >= 0) {
		CHECK(!rn_grammar_state_allows(st, eos));
		CHECK(rn_grammar_state_accept_bytes(st, "{}", 2));
		CHECK(rn_grammar_state_allows(st, eos));
		CHECK(rn_grammar_state_accept(st, eos) == RN_OK);
	}
	rn_grammar_state_free(st);
	/* byte-fallback style: a token that ends inside a character, then the rest */
	struct rn_grammar *g2 = compile("root ::= \"\xc3\xa9\xc3\xa9\"\n", &err);
	st = v && g2 ? rn_grammar_state_new(g2, v, &err) : NULL;
	if (st) {
		int32_t byte_c3 = -1;
		for (int t = 0; t < n_vocab && byte_c3 < 0; t++) {
			const char *p;
			size_t l;
			if (rn_tok_piece(tok, t, false, &p, &l) == RN_TOK_OK && l == 1 && (unsigned char)p[0] == 0xC3)
				byte_c3 = t;
		}
		CHECK(byte_c3 >= 0);
		CHECK(rn_grammar_state_allows(st, byte_c3));
		CHECK(rn_grammar_state_accept(st, byte_c3) == RN_OK);
		check_mask(st, n_vocab, row, "a lone 0xC3");
	}
	rn_grammar_state_free(st);
	rn_grammar_free(g2);
	free(row);
	rn_grammar_free(g);
	rn_grammar_vocab_free(v);
}

/* ---------------------------------------------------------------------------------------------------- */
/* the engine */

struct gen {
	char text[8192];
	size_t len;
	bool done;
	enum rn_done_reason reason;
	int n_tokens;
	int n_shift;
	int n_cached;
};

static int on_event(void *user, const struct rn_event *ev)
{
	struct gen *g = user;
	if (g->len + ev->len < sizeof g->text) {
		memcpy(g->text + g->len, ev->text, ev->len);
		g->len += ev->len;
		g->text[g->len] = 0;
	}
	if (ev->token >= 0)
		g->n_tokens++;
	if (ev->done) {
		g->done = true;
		g->reason = ev->reason;
		g->n_shift = ev->stats ? ev->stats->n_shift : 0;
		g->n_cached = ev->stats ? ev->stats->n_cached : 0;
		if (ev->error)
			fprintf(stderr, "engine error: %s\n", ev->error->msg);
	}
	return 0;
}

/* A request for the test prompt, constrained by grammar (NULL: none), events into out. */
static void req_for(struct rn_request *r, const int32_t *ids, size_t n_ids, int num_predict, const char *grammar,
		    struct gen *out)
{
	rn_request_default(r);
	r->prompt = ids;
	r->n_prompt = n_ids;
	r->num_predict = num_predict;
	r->sampling.temperature = 0;
	r->grammar = grammar;
	r->grammar_len = grammar ? strlen(grammar) : 0;
	r->on_event = on_event;
	r->user = out;
}

static void check_json_output(const struct gen *o, const char *what, const struct rn_grammar *g)
{
	fprintf(stderr, "%s (%s, %d tokens): %s\n", what, rn_done_reason_name(o->reason), o->n_tokens, o->text);
	CHECKF(o->done, "%s: not finished", what);
	CHECKF(o->reason == RN_DONE_STOP || o->reason == RN_DONE_LENGTH, "%s: %s", what, rn_done_reason_name(o->reason));
	CHECKF(matches(g, o->text, o->len, o->reason == RN_DONE_STOP), "%s: the output breaks the grammar", what);
	if (o->reason == RN_DONE_STOP) {
		struct ob_json_error je;
		struct ob_json_doc *d = ob_json_parse(o->text, o->len, &je);
		CHECKF(d != NULL, "%s: not JSON: %s", what, je.message);
		ob_json_free(d);
	}
}

static struct rn_engine *engine_for(struct rn_model *m, const struct rn_tok *tok, int n_ctx, int n_seq)
{
	struct rn_error err = {0};
	struct rn_load_params ep;
	rn_load_params_init(&ep);
	ep.n_ctx = n_ctx;
	ep.n_threads = 2;
	rn_load_params_resolve(&ep, &(struct rn_load_defaults){.n_ctx_max = m->hp.n_ctx_train, .n_seq = n_seq});
	struct rn_engine *e = rn_engine_new(m, tok, &ep, &err);
	CHECKF(e != NULL, "%s", err.msg);
	return e;
}

static void test_engine(struct rn_model *m, const struct rn_tok *tok)
{
	struct rn_error err = {0};
	struct rn_engine *e = engine_for(m, tok, 512, 4);
	if (!e)
		return;
	static const char prompt[] = "<|im_start|>user\nDescribe a cat as a JSON object with a name and an age."
				     "<|im_end|>\n<|im_start|>assistant\n";
	int32_t *ids = NULL;
	size_t n_ids = 0;
	CHECK(rn_tok_encode_alloc(tok, prompt, strlen(prompt), false, true, &ids, &n_ids, NULL) == RN_TOK_OK);
	struct rn_grammar *g = compile(JSON_GBNF, &err);
	struct rn_grammar *gn = compile(NESTED_GBNF, &err);

	/* a bad grammar fails the submit with the compiler's message */
	struct rn_request r;
	req_for(&r, ids, n_ids, -1, "root ::= nope\n", NULL);
	CHECK(rn_engine_submit(e, &r, &err) < 0);
	CHECK_EQ_INT(err.code, RN_ERR_INVALID_ARG);
	CHECKF(strstr(err.msg, "undefined rule 'nope'") != NULL, "%s", err.msg);

	/* four slots at once: greedy JSON, sampled JSON (top_k, top_p, min_p, repeat penalty), greedy nested,
	 * sampled JSON with the other options (typical_p, no top_k, presence and frequency penalties) */
	static struct gen out[4];
	memset(out, 0, sizeof out);
	for (int i = 0; i < 4; i++) {
		req_for(&r, ids, n_ids, 160, i == 2 ? NESTED_GBNF : JSON_GBNF, &out[i]);
		if (i == 1)
			r.sampling.temperature = 0.8f, r.sampling.seed = 42, r.sampling.repeat_penalty = 1.1f,
			r.sampling.min_p = 0.05f;
		else if (i == 3)
			r.sampling.seed = 7, r.sampling.temperature = 1.2f, r.sampling.top_k = 0, r.sampling.top_p = 1,
			r.sampling.typical_p = 0.9f, r.sampling.presence_penalty = 0.5f, r.sampling.frequency_penalty = 0.3f;
		CHECKF(rn_engine_submit(e, &r, &err) >= 0, "%s", err.msg);
	}
	while (rn_engine_step(e) > 0)
		;
	if (g && gn) {
		check_json_output(&out[0], "greedy json", g);
		check_json_output(&out[1], "sampled json", g);
		check_json_output(&out[2], "greedy nested", gn);
		check_json_output(&out[3], "sampled json (typical)", g);
	}

	/* the prompt cache: the same greedy request again reuses the cached prompt and gives the same text (the
	 * grammar's state is about the generated text only) */
	static struct gen again;
	memset(&again, 0, sizeof again);
	req_for(&r, ids, n_ids, 160, JSON_GBNF, &again);
	CHECK(rn_engine_run(e, &r, &err) == RN_OK);
	CHECK(again.n_cached > 0);
	CHECK_STREQ(again.text, out[0].text);

	/* a stop string still ends the request, the text before it a prefix the grammar takes */
	struct gen stopped = {0};
	const char *stop[] = {"age"};
	req_for(&r, ids, n_ids, 64, JSON_GBNF, &stopped);
	r.stop = stop;
	r.n_stop = 1;
	CHECK(rn_engine_run(e, &r, &err) == RN_OK);
	CHECK(stopped.reason == RN_DONE_STOP && strstr(stopped.text, "age") == NULL);
	CHECK(g && matches(g, stopped.text, stopped.len, false));

	/* grammar_after: the text up to the trigger is free, the rest constrained. The trigger is the greedy
	 * output's first token, so the same greedy run meets it at once. */
	struct gen free_run = {0}, after = {0};
	req_for(&r, ids, n_ids, 1, NULL, &free_run);
	CHECK(rn_engine_run(e, &r, &err) == RN_OK);
	CHECK(free_run.len > 0);
	static const char digits[] = "root ::= [0-9]{3} \"!\"\n";
	r.num_predict = 20;
	r.grammar = digits;
	r.grammar_len = strlen(digits);
	r.grammar_after = free_run.text;
	r.user = &after;
	CHECK(rn_engine_run(e, &r, &err) == RN_OK);
	fprintf(stderr, "grammar_after \"%s\": %s (%s)\n", free_run.text, after.text, rn_done_reason_name(after.reason));
	CHECK(after.reason == RN_DONE_STOP); /* the grammar is final after "!" */
	CHECK(after.len == free_run.len + 4 && memcmp(after.text, free_run.text, free_run.len) == 0);
	struct rn_grammar *gd = compile(digits, &err);
	CHECK(gd && after.len >= free_run.len &&
	      matches(gd, after.text + free_run.len, after.len - free_run.len, true));
	rn_grammar_free(gd);

	rn_engine_free(e);

	/* an engine without a tokenizer refuses a grammar request, saying why */
	e = engine_for(m, NULL, 64, 1);
	req_for(&r, ids, n_ids, -1, JSON_GBNF, NULL);
	CHECK(e && rn_engine_submit(e, &r, &err) < 0 && err.code == RN_ERR_INVALID_ARG &&
	      strstr(err.msg, "tokenizer") != NULL);
	rn_engine_free(e);

	/* a small context: the generation shifts it several times; the grammar is about the generated text only
	 * and keeps constraining (a JSON array of numbers never ends by itself under this grammar) */
	e = engine_for(m, tok, 64, 1);
	static const char numbers[] = "root ::= \"[\" [0-9]+ (\", \" [0-9]+)*\n";
	static struct gen shifted;
	memset(&shifted, 0, sizeof shifted);
	const int n_shifted = TM_SANITIZED ? 48 : 120; /* fewer under ASan + UBSan: the prompt + 48 still shift a 64 */
	req_for(&r, ids, n_ids, n_shifted, numbers, &shifted);
	CHECK(e && rn_engine_run(e, &r, &err) == RN_OK);
	struct rn_grammar *gnum = compile(numbers, &err);
	fprintf(stderr, "shifted (%s, %d tokens): %.80s...\n", rn_done_reason_name(shifted.reason), shifted.n_tokens,
		shifted.text);
	CHECK(shifted.reason == RN_DONE_LENGTH && shifted.n_tokens == n_shifted && shifted.n_shift > 0);
	CHECK(gnum && matches(gnum, shifted.text, shifted.len, false));
	rn_grammar_free(gnum);
	rn_engine_free(e);

	free(ids);
	rn_grammar_free(g);
	rn_grammar_free(gn);
}

int main(void)
{
	JSON_GBNF = read_data("tests/data/grammar/json.gbnf");
	NESTED_GBNF = read_data("tests/data/grammar/nested.gbnf");
	test_compile_errors();
	test_matcher();
	const char *path = tm_model_path("qwen2");
	if (!path) {
		fprintf(stderr, "qwen2.5 missing: vocabulary and engine tests skipped\n");
		free(JSON_GBNF);
		free(NESTED_GBNF);
		return check_done();
	}
	struct rn_error err = {0};
	struct rn_model *m = rn_model_open(path, &err);
	CHECKF(m != NULL, "%s", err.msg);
	struct rn_tok *tok = NULL;
	if (m && rn_tok_load(m->gguf, NULL, &tok, NULL) == RN_TOK_OK) {
		test_vocab(tok);
		test_engine(m, tok);
	}
	rn_tok_free(tok);
	rn_model_free(m);
	free(JSON_GBNF);
	free(NESTED_GBNF);
	return check_done();
}
