/* runner/chatfmt/harmony.c — GPT-OSS's harmony output, as llama.cpp's common_chat_parse_gpt_oss reads it:
 * messages "<|channel|>analysis<|message|>...<|end|>" (reasoning), "<|channel|>final<|message|>..." and plain
 * commentary (content), "<|channel|>commentary to=functions.NAME [<|constrain|>json]<|message|>{...}" or
 * " to=functions.NAME<|channel|>commentary ..." (tool calls), each after "<|start|>assistant" but the first.
 * Text between messages is dropped as llama.cpp drops it; output that does not start like a header is content.
 */
#include "config.h"

#include <string.h>

#include "runner/chatfmt/internal.h"

#define H_MESSAGE "<|message|>"
#define H_END "<|end|>"
#define H_START "<|start|>assistant"
#define H_CHANNEL "<|channel|>"
#define H_TO " to=functions."
#define H_MAX_HEADER 1024 /* bytes of a header before the text is taken as content */

enum h_kind { H_UNKNOWN, H_ANALYSIS, H_TEXT, H_CALL };

static bool word_dash(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* ( (<|constrain|>)?[A-Za-z0-9_-]+)? up to the end of s[0..n) */
static bool constraint(const char *s, size_t n)
{
	if (n == 0)
		return true;
	if (s[0] != ' ')
		return false;
	size_t i = 1;
	if (cf_starts(s + i, n - i, "<|constrain|>"))
		i += strlen("<|constrain|>");
	if (i == n)
		return false;
	for (; i < n; i++)
		if (!word_dash(s[i]))
			return false;
	return true;
}

/* " to=functions.NAME" at s: the length of NAME ([^<\s]+), or 0. */
static size_t recipient(const char *s, size_t n)
{
	if (!cf_starts(s, n, H_TO))
		return 0;
	size_t i = strlen(H_TO), b = i;
	while (i < n && s[i] != '<' && !cf_is_space(s[i]))
		i++;
	return i - b;
}

static size_t channel_ac(const char *s, size_t n)
{
	if (cf_starts(s, n, H_CHANNEL "analysis"))
		return strlen(H_CHANNEL "analysis");
	if (cf_starts(s, n, H_CHANNEL "commentary"))
		return strlen(H_CHANNEL "commentary");
	return 0;
}

static enum h_kind classify(const char *h, size_t n, const char **name, size_t *nl)
{
	size_t r = recipient(h, n), c;
	if (r) {
		size_t i = strlen(H_TO) + r;
		if ((c = channel_ac(h + i, n - i)) && constraint(h + i + c, n - i - c)) {
			*name = h + strlen(H_TO);
			*nl = r;
			return H_CALL;
		}
		return H_UNKNOWN;
	}
	if ((c = channel_ac(h, n)) && (r = recipient(h + c, n - c))) {
		size_t i = c + strlen(H_TO) + r;
		if (constraint(h + i, n - i)) {
			*name = h + c + strlen(H_TO);
			*nl = r;
			return H_CALL;
		}
		return H_UNKNOWN;
	}
	if (n == strlen(H_CHANNEL "analysis") && cf_starts(h, n, H_CHANNEL "analysis"))
		return H_ANALYSIS;
	if (cf_starts(h, n, H_CHANNEL "final") && constraint(h + strlen(H_CHANNEL "final"), n - strlen(H_CHANNEL "final")))
		return H_TEXT;
	if (n == strlen(H_CHANNEL "commentary") && cf_starts(h, n, H_CHANNEL "commentary"))
		return H_TEXT;
	return H_UNKNOWN;
}

/* Could s[0..n) begin a header ("<|channel|>..." or " to=...")? */
static bool header_like(const char *s, size_t n)
{
	static const char *const starts[] = {H_CHANNEL, " to="};
	for (int i = 0; i < 2; i++) {
		size_t k = strlen(starts[i]);
		if (memcmp(s, starts[i], n < k ? n : k) == 0)
			return true;
	}
	return false;
}

/* One step; false when more text is needed. */
static bool step(struct rn_chatfmt *p, bool final, struct cf_out *out)
{
	const char *b = p->buf.p ? p->buf.p : "";
	size_t n = p->buf.len;
	switch (p->st) {
	case CF_H_HEADER: {
		if (n == 0) {
			if (final)
				p->st = CF_FINISHED;
			return false;
		}
		/* a header ends within H_MAX_HEADER bytes, or the text is not harmony */
		size_t lim = H_MAX_HEADER + strlen(H_MESSAGE);
		const char *m = cf_find(b, n < lim ? n : lim, H_MESSAGE);
		if (!header_like(b, n) || (!m && (final || n >= lim))) {
			p->st = CF_CONTENT; /* not harmony: llama.cpp falls back to plain content */
			return true;
		}
		if (!m)
			return false;
		const char *name = NULL;
		size_t hl = (size_t)(m - b), nl = 0;
		enum h_kind k = classify(b, hl, &name, &nl);
		if (k == H_CALL) {
			if (nl > CF_MAX_NAME - 1)
				nl = CF_MAX_NAME - 1;
			memcpy(p->h_name, name, nl);
			p->h_name[nl] = 0;
			memset(&p->js, 0, sizeof p->js);
		}
		if (k == H_ANALYSIS && p->o.reasoning == RN_CHATFMT_REASONING_NONE) {
			cf_emit(out->content, b, hl + strlen(H_MESSAGE));
			k = H_TEXT;
			p->h_keep_end = true;
		} else {
			p->h_keep_end = false;
		}
		p->reasoning_started = false;
		cf_consume(p, hl + strlen(H_MESSAGE));
		p->st = k == H_CALL ? CF_H_CALL : k == H_ANALYSIS ? CF_H_REASON : k == H_TEXT ? CF_H_CONTENT : CF_H_SEEK;
		return true;
	}
	case CF_H_REASON: {
		if (!p->reasoning_started) {
			cf_consume(p, cf_skip_space(b, n, 0));
			b = p->buf.p ? p->buf.p : "";
			n = p->buf.len;
			if (n == 0 && !final)
				return false;
			p->reasoning_started = true;
		}
		const char *e = cf_find(b, n, H_END);
		size_t upto = e ? (size_t)(e - b) : n - cf_partial(b, n, H_END), last = upto;
		while (last && cf_is_space(b[last - 1]))
			last--;
		if (!e && upto - last > RN_PARSE_MAX_BUFFER)
			last = upto;
		cf_emit(out->reasoning, b, last);
		if (e || final) {
			cf_consume(p, e ? upto + strlen(H_END) : n);
			p->st = e ? CF_H_SEEK : CF_FINISHED;
			return e != NULL;
		}
		cf_consume(p, last);
		return false;
	}
	case CF_H_CONTENT: {
		const char *e = cf_find(b, n, H_END);
		if (e) {
			size_t k = (size_t)(e - b) + (p->h_keep_end ? strlen(H_END) : 0);
			cf_emit(out->content, b, k);
			cf_consume(p, (size_t)(e - b) + strlen(H_END));
			p->h_keep_end = false;
			p->st = CF_H_SEEK;
			return true;
		}
		size_t send = final ? n : n - cf_partial(b, n, H_END);
		cf_emit(out->content, b, send);
		cf_consume(p, send);
		if (final)
			p->st = CF_FINISHED;
		return false;
	}
	case CF_H_CALL: {
		size_t e = cf_jscan_feed(&p->js, b, n, 0);
		if (e == 0 && !final && n <= RN_PARSE_MAX_BUFFER)
			return false;
		int r = 0;
		if (e != 0 && e != SIZE_MAX) {
			struct ob_json_error je;
			struct ob_json_doc *d = ob_json_parse(b, e, &je);
			if (d && ob_json_root(d)->type == OB_JSON_OBJECT)
				r = p->o.parse_tools ? cf_add_call(p, out, p->h_name, strlen(p->h_name), ob_json_root(d), NULL, 0)
						     : 1;
			ob_json_free(d);
		}
		if (r < 0)
			return false;
		if (r == 1) {
			cf_consume(p, e);
			p->st = CF_H_SEEK;
		} else {
			p->st = CF_H_CONTENT; /* not a call: the message is content */
			p->h_keep_end = false;
		}
		return true;
	}
	case CF_H_SEEK: {
		const char *s = cf_find(b, n, H_START);
		if (s) {
			cf_consume(p, (size_t)(s - b) + strlen(H_START));
			p->st = CF_H_HEADER;
			return true;
		}
		cf_consume(p, final ? n : n - cf_partial(b, n, H_START));
		if (final)
			p->st = CF_FINISHED;
		return false;
	}
	case CF_CONTENT:
		cf_emit(out->content, b, n);
		cf_consume(p, n);
		if (final)
			p->st = CF_FINISHED;
		return false;
	default:
		return false;
	}
}

int cf_harmony_run(struct rn_chatfmt *p, bool final, struct cf_out *out)
{
	while (step(p, final, out))
		if (p->failed || out->content->failed || out->reasoning->failed)
			return -1;
	return p->failed || out->content->failed || out->reasoning->failed ? -1 : 0;
}
