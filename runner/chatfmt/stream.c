/* runner/chatfmt/stream.c — the incremental parser shared by every chat format: thinking blocks at the start
 * (llama.cpp's try_parse_reasoning: leading white space kept as content, reasoning stripped, white space
 * after the block dropped), then content scanned for the format's markers, each marker's body read by
 * calls.c. Text goes out as soon as it cannot be the start of a marker. GPT-OSS runs in harmony.c.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "runner/chatfmt/internal.h"

bool cf_is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

size_t cf_skip_space(const char *s, size_t n, size_t i)
{
	while (i < n && cf_is_space(s[i]))
		i++;
	return i;
}

bool cf_starts(const char *s, size_t n, const char *lit)
{
	size_t k = strlen(lit);
	return n >= k && memcmp(s, lit, k) == 0;
}

size_t cf_partial(const char *s, size_t n, const char *lit)
{
	size_t k = strlen(lit);
	for (size_t i = (n < k ? n : k - 1); i > 0; i--)
		if (memcmp(s + n - i, lit, i) == 0)
			return i;
	return 0;
}

const char *cf_find(const char *s, size_t n, const char *lit)
{
	size_t k = strlen(lit);
	return k && n >= k ? memmem(s, n, lit, k) : NULL;
}

bool cf_emit(struct ob_buf *b, const char *s, size_t n)
{
	return n == 0 || ob_buf_append(b, s, n);
}

void cf_content(struct rn_chatfmt *p, struct cf_out *out, const char *s, size_t n)
{
	if (!p->f->trim_content) {
		cf_emit(out->content, s, n);
		return;
	}
	size_t last = n;
	while (last && cf_is_space(s[last - 1]))
		last--;
	if (last) {
		if (p->need_sep && p->content_sent)
			cf_emit(out->content, "\n\n", 2);
		else
			cf_emit(out->content, p->ws.p, p->ws.len);
		p->ws.len = 0;
		p->need_sep = false;
		cf_emit(out->content, s, last);
		p->content_sent = true;
	}
	if (!cf_emit(&p->ws, s + last, n - last))
		p->failed = true;
	if (p->ws.len > RN_PARSE_MAX_BUFFER) { /* white space without end: it goes out after all */
		cf_emit(out->content, p->ws.p, p->ws.len);
		p->ws.len = 0;
	}
}

void cf_consume(struct rn_chatfmt *p, size_t n)
{
	if (n == 0)
		return;
	memmove(p->buf.p, p->buf.p + n, p->buf.len - n);
	p->buf.len -= n;
	if (p->buf.p)
		p->buf.p[p->buf.len] = 0;
}

struct rn_chatfmt *rn_chatfmt_new(enum rn_chatfmt_kind k, const struct rn_chatfmt_opts *o)
{
	const struct cf_format *f = cf_format_get(k);
	if (!f)
		f = cf_format_get(RN_CHATFMT_CONTENT_ONLY);
	struct rn_chatfmt *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->f = f;
	p->kind = k;
	if (o)
		p->o = *o;
	else
		p->o.reasoning = RN_CHATFMT_REASONING_AUTO;
	ob_buf_init(&p->buf, 2 * (size_t)RN_PARSE_MAX_BUFFER); /* past the limit a body is given up */
	ob_buf_init(&p->ws, 0);
	if (f->harmony)
		p->st = CF_H_HEADER;
	else if (!f->think_open || p->o.reasoning == RN_CHATFMT_REASONING_NONE)
		p->st = CF_START;
	else
		p->st = p->o.thinking_forced_open ? CF_THINKING : CF_THINK_LOOK;
	p->start_marker.body = f->start;
	p->start_marker.is_tool = true;
	return p;
}

void rn_chatfmt_free(struct rn_chatfmt *p)
{
	if (!p)
		return;
	ob_buf_free(&p->buf);
	ob_buf_free(&p->ws);
	free(p);
}

size_t rn_chatfmt_held(const struct rn_chatfmt *p)
{
	return p ? p->buf.len : 0;
}

/* Emits reasoning b[0..n) without trailing white space (leading white space was skipped before). */
static void reason(struct cf_out *out, const char *b, size_t n)
{
	while (n && cf_is_space(b[n - 1]))
		n--;
	cf_emit(out->reasoning, b, n);
}

/* One step of the thinking states; false when more text is needed. */
static bool step_think(struct rn_chatfmt *p, bool final, struct cf_out *out)
{
	const char *b = p->buf.p ? p->buf.p : "";
	size_t n = p->buf.len;
	const char *open = p->f->think_open, *close = p->f->think_close;
	switch (p->st) {
	case CF_THINK_LOOK: {
		size_t w = cf_skip_space(b, n, 0);
		if (cf_starts(b + w, n - w, open)) {
			if (!p->f->trim_content)
				cf_emit(out->content, b, w); /* white space before the tag stays content */
			cf_consume(p, w + strlen(open));
			p->st = CF_THINKING;
			p->reasoning_started = false;
			return true;
		}
		if (!final && w <= RN_PARSE_MAX_BUFFER &&
		    (w == n || (n - w < strlen(open) && memcmp(b + w, open, n - w) == 0)))
			return false;
		p->st = CF_START;
		return true;
	}
	case CF_THINKING: {
		if (!p->reasoning_started) {
			size_t w = cf_skip_space(b, n, 0);
			cf_consume(p, w);
			b = p->buf.p ? p->buf.p : "";
			n = p->buf.len;
			if (n == 0 && !final)
				return false;
			p->reasoning_started = true;
		}
		const char *e = cf_find(b, n, close);
		if (e) {
			reason(out, b, (size_t)(e - b));
			cf_consume(p, (size_t)(e - b) + strlen(close));
			p->st = CF_AFTER_THINK;
			return true;
		}
		/* llama.cpp drops a partial closing tag even at the end */
		size_t keep = cf_partial(b, n, close);
		size_t upto = n - keep;
		if (final) {
			reason(out, b, upto);
			cf_consume(p, n);
			p->st = CF_FINISHED;
			return false;
		}
		size_t last = upto; /* hold trailing white space: it is dropped if the block closes next */
		while (last && cf_is_space(b[last - 1]))
			last--;
		if (upto - last > RN_PARSE_MAX_BUFFER) /* white space without end goes out after all */
			last = upto;
		cf_emit(out->reasoning, b, last);
		cf_consume(p, last);
		return false;
	}
	case CF_AFTER_THINK: {
		size_t w = cf_skip_space(b, n, 0);
		cf_consume(p, w);
		b = p->buf.p ? p->buf.p : "";
		n = p->buf.len;
		if (cf_starts(b, n, open)) {
			cf_consume(p, strlen(open));
			p->st = CF_THINKING;
			p->reasoning_started = false;
			return true;
		}
		if (!final && (n == 0 || (n < strlen(open) && memcmp(b, open, n) == 0)))
			return false;
		p->st = CF_START;
		return true;
	}
	default:
		return false;
	}
}

/* The earliest marker in b[0..n) (the longest at that offset) that is looked for now, or NULL; *partial gets
 * the longest suffix of b that is a proper prefix of a marker. */
static const struct cf_marker *find_marker(const struct rn_chatfmt *p, const char *b, size_t n, size_t *at,
					   size_t *partial)
{
	const struct cf_marker *best = NULL;
	size_t best_at = n;
	*partial = 0;
	for (int i = 0; i < CF_MAX_MARKERS && p->f->markers[i].text; i++) {
		const struct cf_marker *m = &p->f->markers[i];
		if (m->is_tool && !p->o.parse_tools)
			continue;
		const char *hit = cf_find(b, n, m->text);
		size_t pos = hit ? (size_t)(hit - b) : n;
		if (hit && (pos < best_at || (pos == best_at && strlen(m->text) > strlen(best->text)))) {
			best = m;
			best_at = pos;
		}
		size_t k = cf_partial(b, n, m->text);
		if (k > *partial)
			*partial = k;
	}
	*at = best_at;
	return best;
}

static void enter_body(struct rn_chatfmt *p, const struct cf_marker *m)
{
	p->cur = m;
	p->st = CF_BODY;
	p->end_scan = 0;
	memset(&p->js, 0, sizeof p->js);
	p->js_from = 0;
}

/* One step of the content and call states; false when more text is needed. */
static bool step_content(struct rn_chatfmt *p, bool final, struct cf_out *out)
{
	const char *b = p->buf.p ? p->buf.p : "";
	size_t n = p->buf.len;
	switch (p->st) {
	case CF_START:
		if (p->f->start != CF_DROP && p->o.parse_tools && !p->start_done) {
			enter_body(p, &p->start_marker);
			return true;
		}
		p->st = p->f->trim_content ? CF_EAT_SPACE : CF_CONTENT;
		return true;
	case CF_CONTENT: {
		size_t at, partial;
		const struct cf_marker *m = find_marker(p, b, n, &at, &partial);
		if (m) {
			cf_content(p, out, b, at);
			cf_consume(p, at);
			enter_body(p, m);
			return true;
		}
		size_t send = final ? n : n - partial;
		cf_content(p, out, b, send);
		cf_consume(p, send);
		if (final)
			p->st = CF_FINISHED;
		return false;
	}
	case CF_EAT_SPACE: {
		size_t w = cf_skip_space(b, n, 0);
		cf_consume(p, w);
		if (p->buf.len == 0 && !final)
			return false;
		p->st = CF_CONTENT;
		return true;
	}
	case CF_BODY: {
		const struct cf_marker *m = p->cur;
		size_t mlen = m->text ? strlen(m->text) : 0, used = 0, before = *out->n_calls;
		enum cf_step r = cf_body_step(p, b, n, mlen, final, &used, out);
		if (r == CF_MORE && n > RN_PARSE_MAX_BUFFER)
			r = CF_FAIL;
		if (r == CF_MORE && final)
			r = CF_FAIL;
		if (r == CF_MORE)
			return false;
		if (r == CF_DONE) {
			cf_consume(p, used);
			if (m == &p->start_marker)
				p->start_done = true;
			if (*out->n_calls > before) {
				p->st = CF_EAT_SPACE;
				p->ws.len = 0; /* content before a call loses its trailing white space */
				p->need_sep = p->content_sent;
			} else {
				p->st = CF_CONTENT;
			}
			return true;
		}
		/* not a call after all: the marker is text, and the search goes on after it */
		if (m == &p->start_marker)
			p->start_done = true;
		cf_content(p, out, b, mlen);
		cf_consume(p, mlen);
		p->st = CF_CONTENT;
		return true;
	}
	default:
		return false;
	}
}

static int run(struct rn_chatfmt *p, bool final, struct cf_out *out)
{
	if (p->f->harmony)
		return cf_harmony_run(p, final, out);
	for (;;) {
		bool more;
		switch (p->st) {
		case CF_THINK_LOOK:
		case CF_THINKING:
		case CF_AFTER_THINK: more = step_think(p, final, out); break;
		case CF_FINISHED: more = false; break;
		default: more = step_content(p, final, out); break;
		}
		if (p->failed || out->content->failed || out->reasoning->failed)
			return -1;
		if (!more)
			break;
	}
	return 0;
}

int rn_chatfmt_feed(struct rn_chatfmt *p, const char *s, size_t n, struct ob_buf *content, struct ob_buf *reasoning,
		    struct rn_tool_call **calls, size_t *n_calls)
{
	if (p->failed)
		return -1;
	if (p->st == CF_FINISHED)
		return 0;
	if (!cf_emit(&p->buf, s, n)) {
		p->failed = true;
		return -1;
	}
	struct cf_out out = {content, reasoning, calls, n_calls, 0};
	if (run(p, false, &out) < 0) {
		p->failed = true;
		return -1;
	}
	return 0;
}

int rn_chatfmt_finish(struct rn_chatfmt *p, struct ob_buf *content, struct ob_buf *reasoning,
		      struct rn_tool_call **calls, size_t *n_calls)
{
	if (p->failed)
		return -1;
	struct cf_out out = {content, reasoning, calls, n_calls, 0};
	if (p->st != CF_FINISHED && run(p, true, &out) < 0) {
		p->failed = true;
		return -1;
	}
	p->st = CF_FINISHED;
	p->buf.len = 0;
	return 0;
}
