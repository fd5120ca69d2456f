/* runner/api/parsers.c — stop strings, thinking tags and template tool calls, fed piece by piece.
 *
 * The thinking and tool-call parsers reproduce Ollama's thinking/parser.go and tools/tools.go state machines
 * (including their quirks: text before an opening tag disables thinking; with tag "{" or "[" any content
 * before the JSON disables tool parsing). Tool-call arguments are re-encoded as Go re-encodes a decoded
 * map[string]any (numbers as float64, nested objects with sorted keys); the top level keeps the model's
 * order, where Go would use random map order.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/jsonutil.h"
#include "base/unicode.h"
#include "runner/api/parsers.h"

/* ---------------------------------------------------------------------------------------------------- */
/* stop strings */

long rn_stop_find(const char *text, size_t len, char *const *stops, size_t n_stops)
{
	long best = -1;
	for (size_t i = 0; i < n_stops; i++) {
		size_t sl = strlen(stops[i]);
		if (sl == 0 || sl > len)
			continue;
		const char *p = memmem(text, len, stops[i], sl);
		if (p && (best < 0 || p - text < best))
			best = (long)(p - text);
	}
	return best;
}

size_t rn_stop_partial(const char *text, size_t len, char *const *stops, size_t n_stops)
{
	size_t best = 0;
	for (size_t i = 0; i < n_stops; i++) {
		size_t sl = strlen(stops[i]);
		size_t max = sl - (sl > 0); /* a proper prefix */
		if (max > len)
			max = len;
		for (size_t k = max; k > best; k--) {
			if (memcmp(text + len - k, stops[i], k) == 0) {
				best = k;
				break;
			}
		}
	}
	return best;
}

/* ---------------------------------------------------------------------------------------------------- */
/* whitespace as Go's unicode.IsSpace */

bool rn_is_space_rune(uint32_t r)
{
	switch (r) {
	case '\t': case '\n': case '\v': case '\f': case '\r': case ' ': case 0x85: case 0xA0:
	case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
		return true;
	default:
		return r >= 0x2000 && r <= 0x200A;
	}
}

/* Bytes of leading whitespace in s[0..n). */
static size_t space_prefix(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		size_t sz;
		uint32_t r = ob_utf8_decode((const unsigned char *)s + i, n - i, &sz);
		if (!rn_is_space_rune(r))
			break;
		i += sz;
	}
	return i;
}

static bool has_prefix(const char *s, size_t n, const char *p)
{
	size_t pl = strlen(p);
	return n >= pl && memcmp(s, p, pl) == 0;
}

/* ---------------------------------------------------------------------------------------------------- */
/* thinking */

int rn_think_init(struct rn_think *t, const char *open, const char *close)
{
	memset(t, 0, sizeof *t);
	ob_buf_init(&t->acc, RN_PARSE_MAX_BUFFER);
	t->open = strdup(open);
	t->close = strdup(close);
	if (!t->open || !t->close) {
		rn_think_free(t);
		return -1;
	}
	t->state = RN_THINK_LOOKING;
	return 0;
}

void rn_think_free(struct rn_think *t)
{
	if (!t)
		return;
	free(t->open);
	free(t->close);
	ob_buf_free(&t->acc);
	t->open = t->close = NULL;
}

static void acc_set(struct ob_buf *b, const char *s, size_t n)
{
	/* s may point into b: move first (b->p is NULL until b first grows: nothing to move then) */
	if (n)
		memmove(b->p, s, n);
	b->len = n;
	if (b->p)
		b->p[n] = 0;
}

/* One step of thinking.Parser's eat(); returns true when it should run again. */
static bool think_eat(struct rn_think *t, struct ob_buf *thinking, struct ob_buf *content)
{
	const char *acc = t->acc.p ? t->acc.p : "";
	size_t n = t->acc.len;
	switch (t->state) {
	case RN_THINK_LOOKING: {
		size_t sp = space_prefix(acc, n);
		const char *tr = acc + sp;
		size_t tn = n - sp;
		size_t ol = strlen(t->open);
		if (has_prefix(tr, tn, t->open)) {
			/* strings.Split(trimmed, open)[1:] joined by open == everything after the first open tag */
			const char *after = tr + ol;
			size_t an = tn - ol;
			size_t sp2 = space_prefix(after, an);
			after += sp2;
			an -= sp2;
			acc_set(&t->acc, after, an);
			t->state = an == 0 ? RN_THINK_STARTED_EATING : RN_THINK_THINKING;
			return true;
		}
		if (tn <= ol && memcmp(t->open, tr, tn) == 0)
			return false; /* a partial opening tag (or only whitespace so far) */
		t->state = RN_THINK_DONE;
		ob_buf_append(content, acc, n);
		t->acc.len = 0;
		return false;
	}
	case RN_THINK_STARTED_EATING: {
		size_t sp = space_prefix(acc, n);
		if (sp == n) {
			t->acc.len = 0;
			return false;
		}
		t->state = RN_THINK_THINKING;
		acc_set(&t->acc, acc + sp, n - sp);
		return true;
	}
	case RN_THINK_THINKING: {
		size_t cl = strlen(t->close);
		const char *hit = cl ? memmem(acc, n, t->close, cl) : NULL;
		if (hit) {
			ob_buf_append(thinking, acc, (size_t)(hit - acc));
			const char *rest = hit + cl;
			size_t rn = n - (size_t)(rest - acc);
			size_t sp = space_prefix(rest, rn);
			rest += sp;
			rn -= sp;
			ob_buf_append(content, rest, rn);
			t->state = rn == 0 ? RN_THINK_DONE_EATING : RN_THINK_DONE;
			t->acc.len = 0;
			return false;
		}
		/* longest suffix of acc that is a prefix of the closing tag */
		size_t ov = 0;
		size_t max = cl < n ? cl : n;
		for (size_t k = max; k > 0; k--)
			if (memcmp(acc + n - k, t->close, k) == 0) {
				ov = k;
				break;
			}
		ob_buf_append(thinking, acc, n - ov);
		acc_set(&t->acc, acc + n - ov, ov);
		return false;
	}
	case RN_THINK_DONE_EATING: {
		size_t sp = space_prefix(acc, n);
		if (sp < n)
			t->state = RN_THINK_DONE;
		ob_buf_append(content, acc + sp, n - sp);
		t->acc.len = 0;
		return false;
	}
	case RN_THINK_DONE:
		ob_buf_append(content, acc, n);
		t->acc.len = 0;
		return false;
	}
	return false;
}

int rn_think_add(struct rn_think *t, const char *s, size_t n, struct ob_buf *thinking, struct ob_buf *content)
{
	if (n && !ob_buf_append(&t->acc, s, n))
		return -1;
	while (think_eat(t, thinking, content))
		;
	return (thinking->failed || content->failed || t->acc.failed) ? -1 : 0;
}

/* ---------------------------------------------------------------------------------------------------- */
/* tool calls */

int rn_tools_init(struct rn_tools *p, const char *tag, const char *const *names, size_t n_names)
{
	memset(p, 0, sizeof *p);
	ob_buf_init(&p->buf, RN_PARSE_MAX_BUFFER);
	p->tag = strdup(tag);
	p->names = calloc(n_names ? n_names : 1, sizeof *p->names);
	if (!p->tag || !p->names)
		goto fail;
	for (size_t i = 0; i < n_names; i++) {
		if (!(p->names[i] = strdup(names[i])))
			goto fail;
		p->n_names++;
	}
	return 0;
fail:
	rn_tools_free(p);
	return -1;
}

void rn_tools_free(struct rn_tools *p)
{
	if (!p)
		return;
	free(p->tag);
	for (size_t i = 0; i < p->n_names; i++)
		free(p->names[i]);
	free(p->names);
	ob_buf_free(&p->buf);
	memset(p, 0, sizeof *p);
}

void rn_tool_calls_free(struct rn_tool_call *calls, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(calls[i].name);
		free(calls[i].arguments);
	}
	free(calls);
}

void rn_tool_call_id(char *id)
{
	static const char letters[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	static uint64_t state;
	pthread_mutex_lock(&mu);
	if (!state) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		state = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)(uintptr_t)&ts;
		if (!state)
			state = 0x9e3779b97f4a7c15ULL;
	}
	memcpy(id, "call_", 5);
	for (int i = 0; i < 8; i++) {
		state ^= state << 13;
		state ^= state >> 7;
		state ^= state << 17;
		id[5 + i] = letters[state % 36];
	}
	id[13] = 0;
	pthread_mutex_unlock(&mu);
}

/* Index of the tag in buf, or of a partial tag at its end (*found false), or -1. */
static long find_tag(const struct rn_tools *p, bool *found)
{
	const char *b = p->buf.p ? p->buf.p : "";
	size_t n = p->buf.len, tl = strlen(p->tag);
	*found = false;
	const char *hit = tl ? memmem(b, n, p->tag, tl) : NULL;
	if (hit) {
		*found = true;
		return (long)(hit - b);
	}
	size_t max = n < tl ? n : tl;
	for (size_t i = max; i > 0; i--)
		if (memcmp(b + n - i, p->tag, i) == 0)
			return (long)(n - i);
	return -1;
}

/* findTool: the earliest (then longest) tool name in the buffer; none while the buffer ends with a partial
 * name. Returns the name index or -1, and the end offset of the name. */
static int find_tool(const struct rn_tools *p, size_t *end)
{
	const char *b = p->buf.p;
	size_t n = p->buf.len;
	if (n == 0)
		return -1;
	size_t longest = 0;
	for (size_t i = 0; i < p->n_names; i++)
		if (strlen(p->names[i]) > longest)
			longest = strlen(p->names[i]);
	for (size_t i = 1; i <= (n < longest ? n : longest); i++) {
		const char *tail = b + n - i;
		for (size_t k = 0; k < p->n_names; k++) {
			size_t nl = strlen(p->names[k]);
			if (i < nl && memcmp(p->names[k], tail, i) == 0)
				return -1;
		}
	}
	int found = -1;
	long start = -1;
	for (size_t k = 0; k < p->n_names; k++) {
		size_t nl = strlen(p->names[k]);
		if (nl == 0)
			continue;
		const char *hit = memmem(b, n, p->names[k], nl);
		if (!hit)
			continue;
		long pos = (long)(hit - b);
		if (start != -1) {
			if (pos > start)
				continue;
			if (pos == start && nl <= strlen(p->names[found]))
				continue;
		}
		found = (int)k;
		start = pos;
		*end = (size_t)pos + nl;
	}
	return found;
}

/* The arguments object in document order, each value as Go re-encodes what it decoded into `any` (numbers as
 * float64, nested objects with sorted keys, the last duplicate winning). */
static void write_go_value(struct ob_jw *w, const struct ob_json *v, bool top)
{
	if (!top || v->type != OB_JSON_OBJECT) {
		if (!ob_jw_go_value(w, v) && w->status == OB_JW_OK)
			w->status = OB_JW_INVALID;
		return;
	}
	ob_jw_obj(w);
	OB_JSON_FOREACH_MEMBER(k, val, v)
	{
		ob_jw_keyn(w, k->str, k->len);
		write_go_value(w, val, false);
	}
	ob_jw_obj_end(w);
}

static char *encode_args(const struct ob_json *obj)
{
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	write_go_value(&w, obj, true);
	size_t len;
	char *s = ob_jw_take(&w, &len);
	ob_jw_free(&w);
	return s;
}

/* findMap: obj[name] as an object, or a JSON string holding one. *out gets malloc'd JSON text. */
static bool find_map(const struct ob_json *obj, const char *name, char **out)
{
	const struct ob_json *v = ob_json_get(obj, name);
	if (!v)
		return false;
	if (v->type == OB_JSON_OBJECT) {
		*out = encode_args(v);
		return true;
	}
	if (v->type == OB_JSON_STRING) {
		struct ob_json_error je;
		struct ob_json_doc *d = ob_json_parse(v->str, v->len, &je);
		if (!d)
			return false;
		const struct ob_json *r = ob_json_root(d);
		bool ok = false;
		if (r->type == OB_JSON_OBJECT) {
			*out = encode_args(r);
			ok = true;
		} else if (r->type == OB_JSON_NULL) {
			*out = NULL; /* a nil map: found, but no arguments */
			ok = true;
		}
		ob_json_free(d);
		return ok;
	}
	return false;
}

/* findObject: true when found; *args gets the arguments (NULL for "found, but none"). */
static bool find_object(const struct ob_json *obj, const char *tool, char **args)
{
	if (ob_json_get(obj, "name")) {
		if (find_map(obj, "arguments", args) || find_map(obj, "parameters", args))
			return true;
		*args = NULL;
		return true;
	}
	if (find_map(obj, tool, args))
		return true;
	OB_JSON_FOREACH_MEMBER(k, v, obj)
	{
		(void)k;
		if (v->type == OB_JSON_OBJECT) {
			if (find_object(v, tool, args))
				return true;
		} else if (v->type == OB_JSON_ARRAY) {
			OB_JSON_FOREACH(e, v)
			{
				if (e->type == OB_JSON_OBJECT && find_object(e, tool, args))
					return true;
			}
		}
	}
	return false;
}

/* Where a scan of JSON-ish text stands: inside a string, and just after a backslash (counted outside strings
 * too, as Ollama's scanners count it). */
struct json_scan {
	bool in_str, esc;
};

/* Feeds c to the scan; true when c is structural: outside a string, not a quote, not escaped. */
static bool json_scan_structural(struct json_scan *js, char c)
{
	if (js->esc) {
		js->esc = false;
		return false;
	}
	if (c == '\\') {
		js->esc = true;
		return false;
	}
	if (c == '"') {
		js->in_str = !js->in_str;
		return false;
	}
	return !js->in_str;
}

/* findArguments: the first balanced JSON object that parses; returns its arguments (malloc'd JSON, NULL when
 * none) and sets *end to the offset of its closing brace. */
static char *find_arguments(const char *b, size_t n, const char *tool, size_t *end)
{
	long start = -1;
	int braces = 0;
	struct json_scan js = {0};
	for (size_t i = 0; i < n; i++) {
		char c = b[i];
		if (!json_scan_structural(&js, c))
			continue;
		if (c == '{') {
			if (braces == 0)
				start = (long)i;
			braces++;
		} else if (c == '}') {
			braces--;
			if (braces == 0 && start != -1) {
				struct ob_json_error je;
				struct ob_json_doc *d = ob_json_parse(b + start, i + 1 - (size_t)start, &je);
				if (!d || ob_json_root(d)->type != OB_JSON_OBJECT) {
					ob_json_free(d);
					start = -1;
					continue;
				}
				const struct ob_json *root = ob_json_root(d);
				char *args = NULL;
				if (!find_object(root, tool, &args))
					args = encode_args(root);
				ob_json_free(d);
				*end = i;
				return args;
			}
			if (braces < 0)
				braces = 0;
		}
	}
	return NULL;
}

static bool tools_done(const struct rn_tools *p)
{
	char open, close;
	if (strcmp(p->tag, "{") == 0) {
		open = '{';
		close = '}';
	} else if (strcmp(p->tag, "[") == 0) {
		open = '[';
		close = ']';
	} else {
		return false;
	}
	int count = 0;
	struct json_scan js = {0};
	for (size_t i = 0; i < p->buf.len; i++) {
		char c = p->buf.p[i];
		if (!json_scan_structural(&js, c))
			continue;
		if (c == open)
			count++;
		else if (c == close) {
			count--;
			if (count == 0)
				return true;
		}
	}
	return false;
}

static bool only_space(const char *s, size_t n)
{
	/* strings.TrimSpace(s) == "" */
	return space_prefix(s, n) == n;
}

int rn_tools_add(struct rn_tools *p, const char *s, size_t n, struct ob_buf *content, struct rn_tool_call **calls,
		 size_t *n_calls)
{
	if (p->state == RN_TOOLS_DONE) {
		ob_buf_append(content, s, n);
		return content->failed ? -1 : 0;
	}
	if (n && !ob_buf_append(&p->buf, s, n))
		return -1;
	bool bracket = strcmp(p->tag, "{") == 0 || strcmp(p->tag, "[") == 0;
	if (p->state == RN_TOOLS_LOOKING) {
		bool found;
		long i = find_tag(p, &found);
		size_t cut = i < 0 ? p->buf.len : (size_t)i;
		const char *b = p->buf.p ? p->buf.p : "";
		if (bracket && !only_space(b, cut)) {
			p->state = RN_TOOLS_DONE;
			ob_buf_append(content, b, p->buf.len);
			p->buf.len = 0;
			return content->failed ? -1 : 0;
		}
		ob_buf_append(content, b, cut);
		acc_set(&p->buf, b + cut, p->buf.len - cut);
		if (!found)
			return content->failed ? -1 : 0;
		p->state = RN_TOOLS_CALLING;
	}
	for (;;) {
		size_t end = 0;
		int t = find_tool(p, &end);
		if (t < 0)
			break;
		size_t aend = 0;
		char *args = find_arguments(p->buf.p, p->buf.len, p->names[t], &aend);
		if (!args)
			break;
		if (aend > end)
			end = aend;
		struct rn_tool_call *nc = realloc(*calls, (*n_calls + 1) * sizeof *nc);
		if (!nc) {
			free(args);
			return -1;
		}
		*calls = nc;
		struct rn_tool_call *c = &nc[*n_calls];
		memset(c, 0, sizeof *c);
		c->name = strdup(p->names[t]);
		c->arguments = args;
		c->index = p->n++;
		rn_tool_call_id(c->id);
		(*n_calls)++;
		if (!c->name)
			return -1;
		/* tools.go advances the buffer by `end`, the offset of the closing brace, not past it */
		acc_set(&p->buf, p->buf.p + end, p->buf.len - end);
	}
	if (tools_done(p)) {
		p->state = RN_TOOLS_DONE;
		ob_buf_append(content, p->buf.p, p->buf.len);
		p->buf.len = 0;
	}
	return content->failed ? -1 : 0;
}

int rn_tools_content(struct rn_tools *p, struct ob_buf *content)
{
	if (p->n > 0)
		return 0;
	if (strcmp(p->tag, "{") == 0 || strcmp(p->tag, "[") == 0)
		ob_buf_append(content, p->buf.p ? p->buf.p : "", p->buf.len);
	return content->failed ? -1 : 0;
}
