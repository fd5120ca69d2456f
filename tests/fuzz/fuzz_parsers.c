/* tests/fuzz/fuzz_parsers.c — libFuzzer target for the parsers that read model output (runner/api/parsers.c):
 * stop strings, thinking tags, tool calls, fed random model output in random piece sizes.
 *
 * Input: one byte of flags, one seed byte for the piece sizes, then fields separated by 0xFF: the opening and
 * closing thinking tags, the tool tag, up to four tool names, up to three stop strings; the last field is the
 * model's output. The output goes through the stop-string hold-back (as the engine holds back a possible stop
 * string), then, as the pipeline's process_event, the thinking parser and the tool-call parser, then the
 * tool parser's end. Checks: what the stop hold-back emits plus what it holds is exactly the input before the
 * stop; no emitted text contains a whole stop string; the thinking parser gives the same thinking and content
 * in pieces as in one piece; without a call, the tool parser's content plus what it holds is exactly its
 * input; every call names a requested tool, has JSON-object arguments and a "call_" id, indexes count up;
 * what the parsers hold stays under the input's size.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "runner/api/parsers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT 4096
#define MAX_FIELD 64 /* bytes of a tag, name or stop string */
#define SEP 0xFF

enum { F_THINK = 1, F_TOOLS = 2, F_STOP = 4, F_PREFILL = 8 };

static void die(const char *what)
{
	fprintf(stderr, "fuzz_parsers: %s\n", what);
	abort();
}

/* The next field of data[*pos..size): up to SEP (or the end), at most MAX_FIELD bytes, as a new C string
 * (cut at a NUL, as the strings the pipeline passes are). */
static char *field(const uint8_t *data, size_t size, size_t *pos)
{
	size_t s = *pos, e = s;
	while (e < size && data[e] != SEP)
		e++;
	*pos = e < size ? e + 1 : e;
	size_t n = e - s < MAX_FIELD ? e - s : MAX_FIELD;
	char *f = malloc(n + 1);
	if (!f)
		die("out of memory");
	memcpy(f, data + s, n);
	f[n] = 0;
	return f;
}

/* The next piece of text[0..left): 1..16 bytes mostly, now and then a long one, never ending inside a UTF-8
 * sequence (the engine holds back incomplete UTF-8 before any parser sees a piece). */
static size_t piece(uint32_t *st, const char *text, size_t left)
{
	*st ^= *st << 13;
	*st ^= *st >> 17;
	*st ^= *st << 5;
	size_t k = (*st & 7) == 0 ? 1 + (*st >> 8) % 512 : 1 + (*st >> 8) % 16;
	if (k > left)
		k = left;
	for (int i = 0; i < 3 && k < left && ((unsigned char)text[k] & 0xC0) == 0x80; i++)
		k++;
	return k;
}

static bool contains(const char *s, size_t n, const char *needle)
{
	size_t k = strlen(needle);
	return k && n >= k && memmem(s, n, needle, k);
}

/* The stop hold-back in pieces: returns the text released before the stop (or the end), as the engine would. */
static void run_stops(const char *text, size_t len, char **stops, size_t n_stops, uint32_t seed, struct ob_buf *out)
{
	struct ob_buf pend;
	ob_buf_init(&pend, 0);
	size_t fed = 0;
	bool stopped = false;
	while (fed < len && !stopped) {
		size_t k = piece(&seed, text + fed, len - fed);
		ob_buf_append(&pend, text + fed, k);
		fed += k;
		long at = rn_stop_find(pend.p, pend.len, stops, n_stops);
		size_t keep;
		if (at >= 0) {
			if ((size_t)at > pend.len)
				die("rn_stop_find past the end");
			ob_buf_append(out, pend.p, (size_t)at);
			stopped = true;
			keep = 0;
		} else {
			keep = rn_stop_partial(pend.p, pend.len, stops, n_stops);
			if (keep > pend.len)
				die("rn_stop_partial holds more than it has");
			ob_buf_append(out, pend.p, pend.len - keep);
			memmove(pend.p, pend.p + pend.len - keep, keep);
		}
		pend.len = keep;
		if (pend.len > fed)
			die("the hold-back grew past the input");
	}
	if (!stopped)
		ob_buf_append(out, pend.p ? pend.p : "", pend.len); /* the end releases what was held */
	for (size_t i = 0; i < n_stops; i++)
		if (contains(out->p ? out->p : "", out->len, stops[i]))
			die("released text holds a whole stop string");
	if (out->len > len || (out->len && memcmp(out->p, text, out->len) != 0))
		die("released text is not a prefix of the output");
	if (!stopped && out->len != len)
		die("without a stop, text was lost");
	ob_buf_free(&pend);
}

/* The opening tag the template left at the end of the prompt, fed first and its output dropped, as
 * init_parsers does. */
static void think_prefill(struct rn_think *t, const char *open)
{
	struct ob_buf a, b;
	ob_buf_init(&a, 0);
	ob_buf_init(&b, 0);
	(void)rn_think_add(t, open, strlen(open), &a, &b);
	ob_buf_free(&a);
	ob_buf_free(&b);
}

/* The thinking parser over text in one piece: (thinking, content) for comparison. */
static void think_whole(const char *open, const char *close, bool prefill, const char *text, size_t len,
			struct ob_buf *th, struct ob_buf *co)
{
	struct rn_think t;
	if (rn_think_init(&t, open, close) < 0)
		die("out of memory");
	if (prefill)
		think_prefill(&t, open);
	if (rn_think_add(&t, text, len, th, co) < 0)
		die("rn_think_add failed on a small input");
	rn_think_free(&t);
}

static void check_calls(const struct rn_tool_call *calls, size_t n, char **names, size_t n_names, int *next_index)
{
	for (size_t i = 0; i < n; i++) {
		const struct rn_tool_call *c = &calls[i];
		bool known = false;
		for (size_t k = 0; k < n_names; k++)
			known |= strcmp(c->name, names[k]) == 0;
		if (!known)
			die("a call to a tool the request does not have");
		if (c->index != (*next_index)++)
			die("call indexes do not count up");
		if (strncmp(c->id, "call_", 5) != 0 || strlen(c->id) != 13)
			die("a malformed call id");
		if (c->arguments) {
			struct ob_json_error je;
			struct ob_json_doc *d = ob_json_parse(c->arguments, strlen(c->arguments), &je);
			if (!d || ob_json_root(d)->type != OB_JSON_OBJECT)
				die("call arguments are not a JSON object");
			ob_json_free(d);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2 || size > MAX_INPUT)
		return 0;
	unsigned flags = data[0];
	uint32_t seed = 0x9e3779b9u ^ (uint32_t)data[1] * 0x01000193u;
	size_t pos = 2;
	char *open = field(data, size, &pos), *close = field(data, size, &pos), *tag = field(data, size, &pos);
	char *names[4], *stops[3];
	for (int i = 0; i < 4; i++)
		names[i] = field(data, size, &pos);
	for (int i = 0; i < 3; i++)
		stops[i] = field(data, size, &pos);
	const char *text = (const char *)data + pos;
	size_t len = size - pos;
	size_t n_names = 0, n_stops = 0;
	while (n_names < 4 && names[n_names][0])
		n_names++;
	while (n_stops < 3 && stops[n_stops][0])
		n_stops++;
	bool use_think = (flags & F_THINK) && open[0] && close[0];
	bool use_tools = (flags & F_TOOLS) && tag[0];

	/* 1. stop strings */
	struct ob_buf model;
	ob_buf_init(&model, 0);
	if (flags & F_STOP)
		run_stops(text, len, stops, n_stops, seed, &model);
	else
		ob_buf_append(&model, text, len);
	const char *mt = model.p ? model.p : "";

	/* 2. thinking, then tools on the content, piece by piece as process_event */
	struct rn_think think;
	struct rn_tools tools;
	if (use_think && rn_think_init(&think, open, close) < 0)
		die("out of memory");
	if (use_tools && rn_tools_init(&tools, tag, (const char *const *)names, n_names) < 0)
		die("out of memory");
	struct ob_buf all_th, all_co, th, co, co2;
	ob_buf_init(&all_th, 0);
	ob_buf_init(&all_co, 0);
	ob_buf_init(&th, 0);
	ob_buf_init(&co, 0);
	ob_buf_init(&co2, 0);
	if (use_think && (flags & F_PREFILL))
		think_prefill(&think, open);
	size_t tools_in = 0;
	int next_index = 0, n_calls_total = 0;
	uint32_t st = seed ^ 0x5bd1e995u;
	for (size_t fed = 0; fed <= model.len;) {
		bool done = fed == model.len;
		size_t k = done ? 0 : piece(&st, mt + fed, model.len - fed);
		th.len = co.len = co2.len = 0;
		if (use_think) {
			if (rn_think_add(&think, mt + fed, k, &th, &co) < 0)
				die("rn_think_add failed on a small input");
			ob_buf_append(&all_th, th.p ? th.p : "", th.len);
			if (think.acc.len > model.len + strlen(open))
				die("the thinking parser holds more than it was given");
		} else {
			ob_buf_append(&co, mt + fed, k);
		}
		if (use_tools) {
			struct rn_tool_call *calls = NULL;
			size_t nc = 0;
			tools_in += co.len;
			if (rn_tools_add(&tools, co.p ? co.p : "", co.len, &co2, &calls, &nc) < 0)
				die("rn_tools_add failed on a small input");
			if (done && rn_tools_content(&tools, &co2) < 0)
				die("rn_tools_content failed");
			check_calls(calls, nc, names, n_names, &next_index);
			n_calls_total += (int)nc;
			rn_tool_calls_free(calls, nc);
			ob_buf_append(&all_co, co2.p ? co2.p : "", co2.len);
			if (tools.buf.len > tools_in)
				die("the tool parser holds more than it was given");
		} else {
			ob_buf_append(&all_co, co.p ? co.p : "", co.len);
		}
		if (done)
			break;
		fed += k;
	}

	/* 3. what came out against what went in */
	if (use_think) {
		struct ob_buf wth, wco;
		ob_buf_init(&wth, 0);
		ob_buf_init(&wco, 0);
		think_whole(open, close, flags & F_PREFILL, mt, model.len, &wth, &wco);
		if (!use_tools && (wth.len != all_th.len || wco.len != all_co.len ||
				   (wth.len && memcmp(wth.p, all_th.p, wth.len)) || (wco.len && memcmp(wco.p, all_co.p, wco.len))))
			die("the thinking parser split differently in pieces than in one piece");
		if (wth.len != all_th.len || (wth.len && memcmp(wth.p, all_th.p, wth.len)))
			die("the thinking text differs in pieces");
		ob_buf_free(&wth);
		ob_buf_free(&wco);
		/* a prefilled tag the parser did not take as a tag (one starting with white space) is held as text */
		size_t given = model.len + ((flags & F_PREFILL) ? strlen(open) : 0);
		if (!use_tools && all_th.len + all_co.len > given)
			die("the thinking parser emitted more than it was given");
	} else if (!use_tools && (all_co.len != model.len || (model.len && memcmp(all_co.p, mt, model.len))))
		die("without parsers, the content is not the output");
	if (use_tools && n_calls_total == 0) {
		/* bytes only move from the parser's buffer to the content; at the end rn_tools_content copies what
		 * is held for "{" and "[" (Ollama's tools.Parser.Content), other tags leave it held */
		bool bracket = strcmp(tag, "{") == 0 || strcmp(tag, "[") == 0;
		if (all_co.len + (bracket ? 0 : tools.buf.len) != tools_in)
			die("the tool parser lost or made up content");
	}
	if (use_think)
		rn_think_free(&think);
	if (use_tools)
		rn_tools_free(&tools);
	ob_buf_free(&all_th);
	ob_buf_free(&all_co);
	ob_buf_free(&th);
	ob_buf_free(&co);
	ob_buf_free(&co2);
	ob_buf_free(&model);
	free(open);
	free(close);
	free(tag);
	for (int i = 0; i < 4; i++)
		free(names[i]);
	for (int i = 0; i < 3; i++)
		free(stops[i]);
	return 0;
}
