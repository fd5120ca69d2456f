/* base/json.c — the JSON reader (json.h): one strict pass over the text that checks Go's grammar, reports
 * the first error as Go's scanner words it, and builds the node array with unescaped strings as it goes.
 * Nesting is an explicit stack (cost linear in depth, bounded by OB_JSON_MAX_DEPTH); not a streaming parser.
 * Memory is bounded by the input: at most 24 bytes per input byte whatever its shape (new_node caps the node
 * array at what the unread bytes can still hold; single digits and "" take no arena), counted by
 * tests/base/test_json_reader.c.
 *
 * Why not jsmn or jansson (measured by tests/base/bench_json: CPU time, best of >= 3 parses, one core of a
 * shared 2-core machine, so +-20% noise; "before" is the previous reader: jsmn counted the tokens, tokenized
 * again, then orun re-scanned every gap for Go's grammar and re-scanned the whole text to word an error):
 *     build/cpu/tests/base/bench_json 1          (this reader alone), and with the others in the same run:
 *     cc -O2 -DBENCH_JANSSON -DBENCH_JSMN -I. -Ibuild/cpu tests/base/bench_json.c build/cpu/libbase.a \
 *        -ljansson -lm -o bench && ./bench 1
 *   body (bytes)              this reader   before      jansson 2.14   jsmn tokens only (no tree, no checks)
 *   chat-1k (1156)            2.8 us        5.1 us      2.9 us         1.9 us
 *   tools-30k (34321)         61 us         184 us      432 us         56 us
 *   messages-1m (1049987)     4.7 ms        6.2 ms      11.1 ms        1.8 ms
 *   context-1m (1048578)      5.6 ms        12.1 ms     18.5 ms        4.0 ms
 *   image-32m (33554518)      36 ms         142 ms      309 ms         45 ms
 *   memory held / input byte  3.8 3.8 1.1 8.7 1.0   before 59 6.6 3.4 8.7 3.0   jansson 4.4 6.5 1.3 7.1 1.0
 *   nesting 1e3 / 1e4 / 1e5   6 / 5 / 5 us  1.4 ms / 147 ms / 15.1 s  21 / 67 / 65 us  1.3 ms / 132 ms / 14.2 s
 * (past OB_JSON_MAX_DEPTH = 1000 the readers refuse the document; jsmn has no limit). jsmn alone is quadratic
 * in depth (at every close it walks back over its tokens) and needs a counting pass before the filling pass,
 * so no reader built on it can be linear or single-pass. jansson is not slower on small bodies but cannot
 * give what orun's callers need: its errors are its own ("'}' expected near '\"b\"'", positions after the
 * token) where clients see Go's text; it keeps one member per key ({"model":"a","MODEL":"b","model":"c"}:
 * Go's case-insensitive last match gives "c", jansson's object gives "b"); it refuses integers past int64
 * ("too big integer") where Go keeps the literal; it refuses invalid UTF-8 where Go substitutes U+FFFD.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/utf8.h"

#define ARENA_CHUNK (64u << 10) /* bytes: the usual arena block (the first is sized to the input) */
#define MAX_NODES UINT32_MAX    /* spans and counts are uint32_t */

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, size;
	char data[];
};

struct ob_json_doc {
	struct ob_json *nodes;
	size_t n_nodes, cap_nodes;
	struct arena_chunk *chunks;
};

/* an open array or object */
struct frame {
	uint32_t node;  /* index of its node */
	uint32_t count; /* elements / members so far */
};

struct reader {
	const unsigned char *t;
	size_t n;
	struct ob_json_doc *doc;
	struct ob_json_error *err;
	size_t steps; /* state transitions taken: linear in the input (checked by tests/base/test_json_reader.c) */
	int depth;
	struct frame stack[OB_JSON_MAX_DEPTH];
};

/* ---------------------------------------------------------------------------------------------- arena */

static char *arena_alloc(struct ob_json_doc *doc, size_t n, size_t hint)
{
	struct arena_chunk *c = doc->chunks;
	if (!c || c->size - c->used < n) {
		size_t size = n > hint ? n : hint;
		c = malloc(sizeof *c + size);
		if (!c)
			return NULL;
		c->used = 0;
		c->size = size;
		c->next = doc->chunks;
		doc->chunks = c;
	}
	char *p = c->data + c->used;
	c->used += n;
	return p;
}

/* Gives back the unused tail of the latest allocation p, which was n bytes and now holds used. */
static void arena_trim(struct ob_json_doc *doc, size_t n, size_t used)
{
	doc->chunks->used -= n - used;
}

/* ---------------------------------------------------------------------------------------------- errors */

/* Go's quoteChar: the byte as the rune U+00XX, quoted by strconv.Quote between single quotes. */
static void quote_char(char *buf, size_t size, int c)
{
	static const char ctl[] = "abtnvfr"; /* \a .. \r for 7 .. 13 */
	if (c == '\'')
		snprintf(buf, size, "'\\''");
	else if (c == '"')
		snprintf(buf, size, "'\"'");
	else if (c >= 7 && c <= 13)
		snprintf(buf, size, "'\\%c'", ctl[c - 7]);
	else if (c < 0x20 || c == 0x7f)
		snprintf(buf, size, "'\\x%02x'", c);
	else if (c < 0x7f)
		snprintf(buf, size, "'%c'", c);
	else if (c <= 0xa0 || c == 0xad)
		snprintf(buf, size, "'\\u%04x'", c);
	else {
		char u[OB_UTF8_MAX + 1] = {0};
		ob_utf8_encode(u, (uint32_t)c);
		snprintf(buf, size, "'%s'", u);
	}
}

static int fail_msg(struct reader *r, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail_msg(struct reader *r, size_t pos, const char *fmt, ...)
{
	r->err->offset = pos;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->err->message, sizeof r->err->message, fmt, ap);
	va_end(ap);
	return -1;
}

/* Go's syntax error at pos: "unexpected end of JSON input" past the end, else the character and context. */
static int fail_at(struct reader *r, size_t pos, const char *context)
{
	if (pos >= r->n)
		return fail_msg(r, r->n, "unexpected end of JSON input");
	char q[16];
	quote_char(q, sizeof q, r->t[pos]);
	return fail_msg(r, pos, "invalid character %s %s", q, context);
}

/* ---------------------------------------------------------------------------------------------- scanning */

/* Bytes a string scan must stop at: '"', '\\', control characters and the start of multi-byte UTF-8. */
static int str_special(unsigned char c)
{
	return c == '"' || c == '\\' || c < 0x20 || c >= 0x80;
}

/* The first special byte at or after t[k] (or n), eight bytes at a time. In (v - ones) & ~v & highs the
 * lowest flagged byte is the first zero byte of v, and x - 0x20 * ones flags a byte below 0x20 first: any
 * false flag sits above a true one, so the lowest flag of the sum is the first special byte. */
static inline size_t skip_plain(const unsigned char *t, size_t k, size_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
	for (; k + 8 <= n; k += 8) {
		uint64_t x;
		memcpy(&x, t + k, 8);
		uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
		uint64_t hit = (((q - ones) & ~q) | ((b - ones) & ~b) | (x - ones * 0x20) | x) & highs;
		if (hit)
			return k + (size_t)__builtin_ctzll(hit) / 8;
	}
#endif
	while (k < n && !str_special(t[k]))
		k++;
	return k;
}

/* The byte an escape \x stands for, or -1 when x is not one of Go's escapes (\u is handled apart). */
static int unescape(unsigned char x)
{
	switch (x) {
	case '"': return '"';
	case '\\': return '\\';
	case '/': return '/';
	case 'b': return '\b';
	case 'f': return '\f';
	case 'n': return '\n';
	case 'r': return '\r';
	case 't': return '\t';
	}
	return -1;
}

static size_t skip_ws(const unsigned char *t, size_t i, size_t n)
{
	while (i < n && (t[i] == ' ' || t[i] == '\n' || t[i] == '\r' || t[i] == '\t'))
		i++;
	return i;
}

static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static uint32_t read_u4(const unsigned char *s)
{
	return (uint32_t)(hexval(s[0]) << 12 | hexval(s[1]) << 8 | hexval(s[2]) << 4 | hexval(s[3]));
}

/* A node for the value that starts at t[offset]. The array grows by doubling, but never past the most nodes
 * the rest of the input can still hold: a complete value of b bytes has at most (b + 1) / 2 nodes (every
 * value after the first needs a separator or a closing bracket besides itself), so the text from offset on
 * holds at most (n - offset + 1) / 2 of them plus the containers it leaves open (at most the depth limit).
 * The slack of the last doubling is thus paid for by bytes not read yet, and the array never passes one
 * node per two input bytes (24 bytes of memory per input byte, the cost of "[0,0,...]"). */
static struct ob_json *new_node(struct reader *r, enum ob_json_type type, size_t offset)
{
	struct ob_json_doc *d = r->doc;
	if (d->n_nodes == d->cap_nodes) {
		size_t max = d->n_nodes + (r->n - offset + 1) / 2 + OB_JSON_MAX_DEPTH;
		if (max > MAX_NODES)
			max = MAX_NODES;
		int g = ob_grow(&d->nodes, &d->cap_nodes, d->n_nodes + 1, sizeof *d->nodes, 16, max);
		if (g != OB_GROW_OK) {
			fail_msg(r, offset, g == OB_GROW_LIMIT ? "JSON document has too many values" : "out of memory");
			return NULL;
		}
	}
	struct ob_json *v = &d->nodes[d->n_nodes++];
	memset(v, 0, sizeof *v);
	v->type = type;
	v->span = 1;
	v->offset = offset;
	return v;
}

/* The string literal at t[*pos] == '"': checks it as Go's scanner does, then stores its unescaped bytes
 * (invalid UTF-8 and lone surrogates become U+FFFD, as Go's decoder makes them). *pos moves past it. */
static int read_string(struct reader *r, size_t *pos)
{
	const unsigned char *t = r->t;
	size_t n = r->n, b = *pos + 1, k = b;
	size_t n_invalid = 0;
	bool escapes = false;
	for (;;) {
		k = skip_plain(t, k, n);
		if (k >= n)
			return fail_at(r, n, "");
		unsigned char c = t[k];
		if (c == '"')
			break;
		if (c == '\\') {
			escapes = true;
			if (++k >= n)
				return fail_at(r, n, "");
			if (t[k] == 'u') {
				for (int h = 0; h < 4; h++)
					if (++k >= n || hexval(t[k]) < 0)
						return fail_at(r, k, "in \\u hexadecimal character escape");
				k++;
			} else if (unescape(t[k]) >= 0) {
				k++;
			} else {
				return fail_at(r, k, "in string escape code");
			}
			continue;
		}
		if (c < 0x20)
			return fail_at(r, k, "in string literal");
		size_t l = ob_utf8_valid_len(t + k, n - k);
		if (l) {
			k += l;
		} else {
			n_invalid++;
			k++;
		}
	}
	size_t e = k; /* the closing quote */
	struct ob_json *v = new_node(r, OB_JSON_STRING, *pos);
	if (!v)
		return -1;
	if (e == b) { /* "" costs no arena: two input bytes must not cost more than a node */
		v->str = "";
		*pos = e + 1;
		return 0;
	}
	/* the output never passes the input plus two bytes per invalid byte (1 -> U+FFFD), escapes shrink */
	size_t bound = (e - b) + 2 * n_invalid + 1;
	char *o = arena_alloc(r->doc, bound, ARENA_CHUNK);
	if (!o)
		return fail_msg(r, *pos, "out of memory");
	size_t w = 0;
	if (!escapes && !n_invalid) {
		memcpy(o, t + b, e - b);
		w = e - b;
	} else {
		for (size_t i = b; i < e;) {
			size_t j = skip_plain(t, i, e); /* no '"' before e: an escaped one stops the run at its '\\' */
			memcpy(o + w, t + i, j - i);
			w += j - i;
			i = j;
			if (i >= e)
				break;
			if (t[i] == '\\') {
				unsigned char x = t[i + 1];
				i += 2;
				if (x != 'u') {
					o[w++] = (char)unescape(x);
					continue;
				}
				uint32_t cp = read_u4(t + i);
				i += 4;
				if (cp >= 0xd800 && cp < 0xdc00 && i + 6 <= e && t[i] == '\\' && t[i + 1] == 'u') {
					uint32_t lo = read_u4(t + i + 2);
					if (lo >= 0xdc00 && lo < 0xe000) {
						cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
						i += 6;
					}
				}
				w += ob_utf8_encode(o + w, cp); /* a lone surrogate becomes U+FFFD */
				continue;
			}
			/* a byte >= 0x80 (control characters were refused) */
			size_t l = ob_utf8_valid_len(t + i, e - i);
			if (l) {
				memcpy(o + w, t + i, l);
				w += l;
				i += l;
			} else {
				w += ob_utf8_encode(o + w, OB_RUNE_ERROR);
				i++;
			}
		}
	}
	o[w] = 0;
	arena_trim(r->doc, bound, w + 1);
	v->str = o;
	v->len = w;
	*pos = e + 1;
	return 0;
}

static bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

/* The number literal at t[*pos] ('-' or a digit), with Go's grammar and messages. */
static int read_number(struct reader *r, size_t *pos)
{
	const unsigned char *t = r->t;
	size_t n = r->n, b = *pos, i = b;
	bool plain = true; /* an integer literal: no fraction or exponent */
	if (t[i] == '-') {
		if (++i >= n)
			return fail_at(r, n, "");
		if (!is_digit(t[i]))
			return fail_at(r, i, "in numeric literal");
	}
	if (t[i] == '0')
		i++;
	else
		while (i < n && is_digit(t[i]))
			i++;
	if (i < n && t[i] == '.') {
		plain = false;
		if (++i >= n)
			return fail_at(r, n, "");
		if (!is_digit(t[i]))
			return fail_at(r, i, "after decimal point in numeric literal");
		while (i < n && is_digit(t[i]))
			i++;
	}
	if (i < n && (t[i] == 'e' || t[i] == 'E')) {
		plain = false;
		if (++i < n && (t[i] == '+' || t[i] == '-'))
			i++;
		if (i >= n)
			return fail_at(r, n, "");
		if (!is_digit(t[i]))
			return fail_at(r, i, "in exponent of numeric literal");
		while (i < n && is_digit(t[i]))
			i++;
	}
	struct ob_json *v = new_node(r, OB_JSON_NUMBER, b);
	if (!v)
		return -1;
	if (i - b == 1) { /* a single digit points at a constant: "[0,0,...]" costs one node per two bytes, no more */
		static const char one_digit[10][2] = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
		v->str = one_digit[t[b] - '0'];
	} else {
		char *lit = arena_alloc(r->doc, i - b + 1, ARENA_CHUNK);
		if (!lit)
			return fail_msg(r, b, "out of memory");
		memcpy(lit, t + b, i - b);
		lit[i - b] = 0;
		v->str = lit;
	}
	v->len = i - b;
	size_t digits = i - b - (t[b] == '-');
	if (plain && digits <= 15) { /* exact in a double: skip strtod */
		int64_t x = 0;
		for (size_t k = i - digits; k < i; k++)
			x = x * 10 + (t[k] - '0');
		v->number = t[b] == '-' ? -(double)x : (double)x;
		if (x == 0 && t[b] == '-')
			v->number = -0.0;
	} else {
		/* out of range gives ±HUGE_VAL: Go rejects such a literal only where it decodes it into a float */
		v->number = strtod(v->str, NULL);
	}
	*pos = i;
	return 0;
}

/* true, false or null at t[*pos]: "in literal true (expecting 'e')" at the first wrong byte. */
static int read_literal(struct reader *r, size_t *pos)
{
	static const char *const lits[] = {"true", "false", "null"};
	const unsigned char *t = r->t;
	size_t b = *pos;
	const char *lit = lits[t[b] == 't' ? 0 : t[b] == 'f' ? 1 : 2];
	size_t k = 1;
	for (; lit[k]; k++) {
		if (b + k >= r->n)
			return fail_at(r, r->n, "");
		if (t[b + k] != (unsigned char)lit[k]) {
			char ctx[48];
			snprintf(ctx, sizeof ctx, "in literal %s (expecting '%c')", lit, lit[k]);
			return fail_at(r, b + k, ctx);
		}
	}
	struct ob_json *v = new_node(r, t[b] == 'n' ? OB_JSON_NULL : OB_JSON_BOOL, b);
	if (!v)
		return -1;
	v->boolean = t[b] == 't';
	*pos = b + k;
	return 0;
}

/* Opens an array or object at t[pos]. */
static int open_container(struct reader *r, enum ob_json_type type, size_t pos)
{
	if (r->depth >= OB_JSON_MAX_DEPTH)
		return fail_msg(r, pos, "exceeded max depth");
	if (!new_node(r, type, pos))
		return -1;
	r->stack[r->depth].node = (uint32_t)(r->doc->n_nodes - 1);
	r->stack[r->depth].count = 0;
	r->depth++;
	return 0;
}

static void close_container(struct reader *r)
{
	struct frame *f = &r->stack[--r->depth];
	struct ob_json *v = &r->doc->nodes[f->node];
	v->count = f->count;
	v->span = (uint32_t)(r->doc->n_nodes - f->node);
}

/* The document: Go's scanner states as labels, one byte of look-ahead, no recursion. */
static int read_document(struct reader *r)
{
	const unsigned char *t = r->t;
	size_t n = r->n, i = 0;
value:
	r->steps++;
	i = skip_ws(t, i, n);
	if (i >= n)
		return fail_at(r, n, "");
	switch (t[i]) {
	case '{':
		if (open_container(r, OB_JSON_OBJECT, i))
			return -1;
		i = skip_ws(t, i + 1, n);
		if (i < n && t[i] == '}')
			goto close;
		if (i < n && t[i] != '"')
			return fail_at(r, i, "looking for beginning of object key string");
		goto key;
	case '[':
		if (open_container(r, OB_JSON_ARRAY, i))
			return -1;
		i = skip_ws(t, i + 1, n);
		if (i < n && t[i] == ']')
			goto close;
		goto value;
	case '"':
		if (read_string(r, &i))
			return -1;
		goto end_value;
	case 't':
	case 'f':
	case 'n':
		if (read_literal(r, &i))
			return -1;
		goto end_value;
	default:
		if (t[i] == '-' || is_digit(t[i])) {
			if (read_number(r, &i))
				return -1;
			goto end_value;
		}
		return fail_at(r, i, "looking for beginning of value");
	}
key: /* t[i] is '"' or the input ended */
	r->steps++;
	if (i >= n)
		return fail_at(r, n, "");
	if (read_string(r, &i))
		return -1;
	i = skip_ws(t, i, n);
	if (i < n && t[i] != ':')
		return fail_at(r, i, "after object key");
	i++;
	goto value;
close: /* t[i] closes the innermost container */
	close_container(r);
	i++;
end_value:
	r->steps++;
	i = skip_ws(t, i, n);
	if (r->depth == 0) {
		if (i < n)
			return fail_at(r, i, "after top-level value");
		return 0;
	}
	r->stack[r->depth - 1].count++;
	if (i >= n)
		return fail_at(r, n, "");
	if (r->doc->nodes[r->stack[r->depth - 1].node].type == OB_JSON_OBJECT) {
		if (t[i] == '}')
			goto close;
		if (t[i] != ',')
			return fail_at(r, i, "after object key:value pair");
		i = skip_ws(t, i + 1, n);
		if (i < n && t[i] != '"')
			return fail_at(r, i, "looking for beginning of object key string");
		goto key;
	}
	if (t[i] == ']')
		goto close;
	if (t[i] != ',')
		return fail_at(r, i, "after array element");
	i++;
	goto value;
}

/* ob_json_parse, also telling how many state transitions the reader took (*steps, when steps is not NULL). */
static struct ob_json_doc *parse_counted(const char *text, size_t len, struct ob_json_error *err, size_t *steps)
{
	struct ob_json_error dummy;
	if (!err)
		err = &dummy;
	err->offset = 0;
	err->message[0] = 0;
	if (len > OB_JSON_MAX_INPUT) {
		err->offset = 0;
		snprintf(err->message, sizeof err->message, "JSON document too large: %zu bytes (limit %u)", len,
			 OB_JSON_MAX_INPUT);
		return NULL;
	}
	struct reader *r = malloc(sizeof *r);
	struct ob_json_doc *doc = calloc(1, sizeof *doc);
	/* the first arena block holds what a small document needs (strings and number literals never pass
	 * the input's size, plus one NUL each) */
	char *first = doc ? arena_alloc(doc, 0, len < ARENA_CHUNK ? len + 64 : ARENA_CHUNK) : NULL;
	if (!r || !first) {
		free(r);
		ob_json_free(doc);
		snprintf(err->message, sizeof err->message, "out of memory");
		return NULL;
	}
	r->t = (const unsigned char *)text;
	r->n = len;
	r->doc = doc;
	r->err = err;
	r->steps = 0;
	r->depth = 0;
	int rc = read_document(r);
	if (steps)
		*steps = r->steps;
	free(r);
	if (rc) {
		ob_json_free(doc);
		return NULL;
	}
	if (doc->cap_nodes > doc->n_nodes) { /* give back the growth slack */
		struct ob_json *shrunk = realloc(doc->nodes, doc->n_nodes * sizeof *doc->nodes);
		if (shrunk) {
			doc->nodes = shrunk;
			doc->cap_nodes = doc->n_nodes;
		}
	}
	return doc;
}

struct ob_json_doc *ob_json_parse(const char *text, size_t len, struct ob_json_error *err)
{
	return parse_counted(text, len, err, NULL);
}

void ob_json_free(struct ob_json_doc *doc)
{
	if (!doc)
		return;
	while (doc->chunks) {
		struct arena_chunk *c = doc->chunks;
		doc->chunks = c->next;
		free(c);
	}
	free(doc->nodes);
	free(doc);
}

/* ---------------------------------------------------------------------------------------------- look-ups */

const struct ob_json *ob_json_root(const struct ob_json_doc *doc)
{
	return doc ? &doc->nodes[0] : NULL;
}

const struct ob_json *ob_json_first(const struct ob_json *parent)
{
	if (!parent || (parent->type != OB_JSON_ARRAY && parent->type != OB_JSON_OBJECT) || parent->count == 0)
		return NULL;
	return parent + 1;
}

const struct ob_json *ob_json_after(const struct ob_json *parent, const struct ob_json *child)
{
	if (!parent || !child)
		return NULL;
	const struct ob_json *next = child + child->span;
	return next < parent + parent->span ? next : NULL;
}

const struct ob_json *ob_json_at(const struct ob_json *arr, size_t i)
{
	if (!arr || arr->type != OB_JSON_ARRAY || i >= arr->count)
		return NULL;
	const struct ob_json *e = ob_json_first(arr);
	while (i-- && e)
		e = ob_json_after(arr, e);
	return e;
}

static int fold_eq(const char *a, size_t an, const char *b, size_t bn)
{
	if (an != bn)
		return 0;
	for (size_t i = 0; i < an; i++) {
		unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
		if (x >= 'A' && x <= 'Z')
			x = (unsigned char)(x + 32);
		if (y >= 'A' && y <= 'Z')
			y = (unsigned char)(y + 32);
		if (x != y)
			return 0;
	}
	return 1;
}

static const struct ob_json *get(const struct ob_json *obj, const char *key, int fold)
{
	if (!obj || obj->type != OB_JSON_OBJECT)
		return NULL;
	const struct ob_json *found = NULL;
	size_t kl = strlen(key);
	OB_JSON_FOREACH_MEMBER(k, v, obj)
	{
		if (k->len == kl && memcmp(k->str, key, kl) == 0)
			found = v;
		else if (fold && fold_eq(k->str, k->len, key, kl))
			found = v;
	}
	return found;
}

const struct ob_json *ob_json_get(const struct ob_json *obj, const char *key)
{
	return get(obj, key, 0);
}

const struct ob_json *ob_json_get_fold(const struct ob_json *obj, const char *key)
{
	return get(obj, key, 1);
}

bool ob_json_int(const struct ob_json *v, int64_t *out)
{
	if (!v || v->type != OB_JSON_NUMBER)
		return false;
	const char *s = v->str;
	bool neg = s[0] == '-';
	uint64_t x = 0;
	for (size_t i = neg; s[i]; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		unsigned d = (unsigned)(s[i] - '0');
		if (x > (UINT64_MAX - d) / 10)
			return false;
		x = x * 10 + d;
	}
	if (neg ? x > (uint64_t)INT64_MAX + 1 : x > (uint64_t)INT64_MAX)
		return false;
	*out = neg ? (int64_t)(0 - x) : (int64_t)x;
	return true;
}

int ob_json_str_cmp(const struct ob_json *a, const struct ob_json *b)
{
	size_t n = a->len < b->len ? a->len : b->len;
	int c = memcmp(a->str, b->str, n);
	if (c)
		return c;
	return (a->len > b->len) - (a->len < b->len);
}

/* order of members: by key, then by position (a later duplicate sorts after the earlier one) */
static int cmp_keys_stable(const void *pa, const void *pb)
{
	const struct ob_json *a = *(const struct ob_json *const *)pa, *b = *(const struct ob_json *const *)pb;
	int c = ob_json_str_cmp(a, b);
	return c ? c : (a > b) - (a < b);
}

size_t ob_json_map_members(const struct ob_json *obj, const struct ob_json ***keys)
{
	*keys = NULL;
	if (!obj || obj->type != OB_JSON_OBJECT || obj->count == 0)
		return 0;
	const struct ob_json **k = malloc(obj->count * sizeof *k);
	if (!k)
		return SIZE_MAX;
	size_t n = 0;
	OB_JSON_FOREACH_MEMBER(key, val, obj)
	k[n++] = key;
	qsort(k, n, sizeof *k, cmp_keys_stable);
	size_t u = 0;
	for (size_t i = 0; i < n; i++) {
		if (i + 1 < n && ob_json_str_cmp(k[i], k[i + 1]) == 0)
			continue; /* a later duplicate replaces this one */
		k[u++] = k[i];
	}
	*keys = k;
	return u;
}

bool ob_json_str_eq(const struct ob_json *v, const char *s)
{
	return v && v->type == OB_JSON_STRING && v->len == strlen(s) && memcmp(v->str, s, v->len) == 0;
}

const char *ob_json_type_name(const struct ob_json *v)
{
	if (!v)
		return "null";
	switch (v->type) {
	case OB_JSON_NULL: return "null";
	case OB_JSON_BOOL: return "bool";
	case OB_JSON_NUMBER: return "number";
	case OB_JSON_STRING: return "string";
	case OB_JSON_ARRAY: return "array";
	case OB_JSON_OBJECT: return "object";
	}
	return "?";
}
