/* tests/fuzz/fuzz_chatfmt.c — libFuzzer target for the chat-format parsers (runner/chatfmt): random model
 * output through a random format, fed in random pieces and in one piece.
 *
 * Input: one byte choosing the format, one byte of flags (request has tools, reasoning none, thinking forced
 * open, pieces of one byte), one seed byte for the piece sizes, then the model's output. Checks: pieces and one piece give the
 * same content, reasoning and calls; every call has a name, JSON-object arguments, an id, and indexes count
 * up from 0; the parser never holds more than it was given; without tools, reasoning or a format that changes
 * text (Content-only, reasoning none) the content is the output unchanged.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "runner/chatfmt/chatfmt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT 8192

enum { F_TOOLS = 1, F_NO_REASONING = 2, F_FORCED = 4, F_BYTES = 8 };

static void die(const char *what)
{
	fprintf(stderr, "fuzz_chatfmt: %s\n", what);
	abort();
}

struct run {
	struct ob_buf content, reasoning;
	struct rn_tool_call *calls;
	size_t n_calls;
};

/* 1..16 bytes mostly, now and then a long piece; any byte boundary. A zero state: one byte at a time. */
static size_t piece(uint32_t *st, size_t left)
{
	if (*st == 0)
		return 1;
	*st ^= *st << 13;
	*st ^= *st >> 17;
	*st ^= *st << 5;
	size_t k = (*st & 7) == 0 ? 1 + (*st >> 8) % 512 : 1 + (*st >> 8) % 16;
	return k < left ? k : left;
}

static void parse(enum rn_chatfmt_kind k, const struct rn_chatfmt_opts *o, const char *text, size_t len, uint32_t seed,
		  bool pieces, struct run *r)
{
	ob_buf_init(&r->content, 0);
	ob_buf_init(&r->reasoning, 0);
	r->calls = NULL;
	r->n_calls = 0;
	struct rn_chatfmt *p = rn_chatfmt_new(k, o);
	if (!p)
		die("out of memory");
	for (size_t fed = 0; fed < len;) {
		size_t n = pieces ? piece(&seed, len - fed) : len;
		if (rn_chatfmt_feed(p, text + fed, n, &r->content, &r->reasoning, &r->calls, &r->n_calls) < 0)
			die("feed failed on a small input");
		fed += n;
		if (rn_chatfmt_held(p) > fed)
			die("the parser holds more than it was given");
	}
	if (rn_chatfmt_finish(p, &r->content, &r->reasoning, &r->calls, &r->n_calls) < 0)
		die("finish failed on a small input");
	if (rn_chatfmt_held(p) != 0)
		die("something is held after finish");
	rn_chatfmt_free(p);
}

static void check_calls(const struct run *r)
{
	for (size_t i = 0; i < r->n_calls; i++) {
		const struct rn_tool_call *c = &r->calls[i];
		if (!c->name || !c->name[0])
			die("a call without a name");
		if (c->index != (int)i)
			die("call indexes do not count up");
		if (!c->id[0] || strlen(c->id) >= sizeof c->id)
			die("a malformed call id");
		struct ob_json_error je;
		struct ob_json_doc *d = c->arguments ? ob_json_parse(c->arguments, strlen(c->arguments), &je) : NULL;
		if (!d || ob_json_root(d)->type != OB_JSON_OBJECT)
			die("call arguments are not a JSON object");
		ob_json_free(d);
	}
}

static bool same_buf(const struct ob_buf *a, const struct ob_buf *b)
{
	return a->len == b->len && (a->len == 0 || memcmp(a->p, b->p, a->len) == 0);
}

static void free_run(struct run *r)
{
	ob_buf_free(&r->content);
	ob_buf_free(&r->reasoning);
	rn_tool_calls_free(r->calls, r->n_calls);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 3 || size > MAX_INPUT)
		return 0;
	enum rn_chatfmt_kind k = (enum rn_chatfmt_kind)(data[0] % RN_CHATFMT_COUNT);
	struct rn_chatfmt_opts o = {
		.parse_tools = data[1] & F_TOOLS,
		.reasoning = (data[1] & F_NO_REASONING) ? RN_CHATFMT_REASONING_NONE : RN_CHATFMT_REASONING_AUTO,
		.thinking_forced_open = data[1] & F_FORCED,
	};
	uint32_t seed = (data[1] & F_BYTES) ? 0 : 0x9e3779b9u ^ (uint32_t)data[2] * 0x01000193u;
	const char *text = (const char *)data + 3;
	size_t len = size - 3;

	struct run whole, cut;
	parse(k, &o, text, len, seed, false, &whole);
	parse(k, &o, text, len, seed, true, &cut);
	check_calls(&whole);
	check_calls(&cut);
	if (!same_buf(&whole.content, &cut.content))
		die("the content differs in pieces");
	if (!same_buf(&whole.reasoning, &cut.reasoning))
		die("the reasoning differs in pieces");
	if (whole.n_calls != cut.n_calls)
		die("the number of calls differs in pieces");
	for (size_t i = 0; i < whole.n_calls; i++)
		if (strcmp(whole.calls[i].name, cut.calls[i].name) || strcmp(whole.calls[i].arguments, cut.calls[i].arguments))
			die("a call differs in pieces");
	if (k == RN_CHATFMT_CONTENT_ONLY && o.reasoning == RN_CHATFMT_REASONING_NONE &&
	    (whole.content.len != len || (len && memcmp(whole.content.p, text, len))))
		die("content-only without reasoning changed the text");
	if (!o.parse_tools && whole.n_calls)
		die("a call without tools");
	free_run(&whole);
	free_run(&cut);
	return 0;
}
