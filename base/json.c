/* base/json.c — JSON parsing (jsmn + grammar checks + unescaping) and a compact Go-compatible writer.
 *
 * jsmn finds token boundaries but accepts documents Go rejects (missing or trailing commas, raw control
 * characters, bare words), so every gap between tokens, every literal and every string is checked here.
 * Not a streaming parser: documents are bounded by OB_JSON_MAX_INPUT and parsed whole.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSMN_STATIC
#define JSMN_PARENT_LINKS
#include <jsmn.h>

#include "base/json.h"

#define ARENA_CHUNK (64u << 10)

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, size;
	char data[];
};

struct ob_json_doc {
	struct ob_json *nodes;
	uint32_t n_nodes;
	struct arena_chunk *chunks;
};

struct parser {
	const char *text;
	size_t len;
	jsmntok_t *tok;
	int n_tok;
	struct ob_json_doc *doc;
	struct ob_json_error *err;
	int failed;
};

/* ---------------------------------------------------------------------------------------------- arena */

static char *arena_alloc(struct ob_json_doc *doc, size_t n)
{
	struct arena_chunk *c = doc->chunks;
	if (!c || c->size - c->used < n) {
		size_t size = n > ARENA_CHUNK ? n : ARENA_CHUNK;
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

/* ---------------------------------------------------------------------------------------------- errors */

static int is_ws(char c);
static int hexval(char c);

static void quote_char(char *buf, size_t size, int c)
{
	/* Go's quoteChar: the byte as the rune U+00XX, quoted by strconv.Quote between single quotes */
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
	else
		snprintf(buf, size, "'%c%c'", 0xc0 | (c >> 6), 0x80 | (c & 0x3f));
}

/* Go's scanner over one string literal starting at t[*i] == '"': 0 = ok (*i after the closing quote),
 * 1 = error at *i (*ctx says why), 2 = input ended. */
static int go_scan_string(const char *t, size_t n, size_t *i, const char **ctx)
{
	size_t k = *i + 1;
	for (;; k++) {
		if (k >= n)
			return 2;
		unsigned char c = (unsigned char)t[k];
		if (c == '"')
			break;
		if (c < 0x20) {
			*ctx = "in string literal";
			goto bad;
		}
		if (c != '\\')
			continue;
		if (++k >= n)
			return 2;
		if (t[k] == 'u') {
			for (int h = 0; h < 4; h++) {
				if (++k >= n)
					return 2;
				if (hexval(t[k]) < 0) {
					*ctx = "in \\u hexadecimal character escape";
					goto bad;
				}
			}
		} else if (!t[k] || !strchr("bfnrt\\/\"", t[k])) {
			*ctx = "in string escape code";
			goto bad;
		}
	}
	*i = k + 1;
	return 0;
bad:
	*i = k;
	return 1;
}

/* Go's encoding/json scanner, used only to word an error: the first syntax error of text[0..n) with Go's
 * message and its byte offset. Returns 0 when it finds none (the caller keeps its own message). */
static int go_syntax_error(const char *t, size_t n, size_t *at, char *msg, size_t msize)
{
	char stack[OB_JSON_MAX_DEPTH];
	int depth = 0;
	size_t i = 0;
	const char *ctx;
	static const char *const lits[] = {"true", "false", "null"};
#define WS() while (i < n && is_ws(t[i])) i++
#define NEED() do { if (i >= n) goto eof; } while (0)
value:
	WS();
	NEED();
	switch (t[i]) {
	case '{':
		if (depth >= OB_JSON_MAX_DEPTH)
			return 0;
		stack[depth++] = '{';
		i++;
		WS();
		NEED();
		if (t[i] == '}') {
			i++;
			depth--;
			goto end_value;
		}
		if (t[i] != '"') {
			ctx = "looking for beginning of object key string";
			goto bad;
		}
		goto key;
	case '[':
		if (depth >= OB_JSON_MAX_DEPTH)
			return 0;
		stack[depth++] = '[';
		i++;
		WS();
		NEED();
		if (t[i] == ']') {
			i++;
			depth--;
			goto end_value;
		}
		goto value;
	case '"':
		goto string;
	case 't': case 'f': case 'n': {
		const char *lit = lits[t[i] == 't' ? 0 : t[i] == 'f' ? 1 : 2];
		for (size_t k = 1; lit[k]; k++) {
			i++;
			NEED();
			if (t[i] != lit[k]) {
				snprintf(msg, msize, "in literal %s (expecting '%c')", lit, lit[k]);
				ctx = NULL;
				goto bad;
			}
		}
		i++;
		goto end_value;
	}
	default:
		if (t[i] == '-' || (t[i] >= '0' && t[i] <= '9'))
			goto number;
		ctx = "looking for beginning of value";
		goto bad;
	}
key:
	switch (go_scan_string(t, n, &i, &ctx)) {
	case 1: goto bad;
	case 2: goto eof;
	}
	WS();
	NEED();
	if (t[i] != ':') {
		ctx = "after object key";
		goto bad;
	}
	i++;
	goto value;
string:
	switch (go_scan_string(t, n, &i, &ctx)) {
	case 1: goto bad;
	case 2: goto eof;
	}
	goto end_value;
number:
	if (t[i] == '-') {
		i++;
		NEED();
		if (t[i] < '0' || t[i] > '9') {
			ctx = "in numeric literal";
			goto bad;
		}
	}
	if (t[i] == '0')
		i++;
	else
		while (i < n && t[i] >= '0' && t[i] <= '9')
			i++;
	if (i < n && t[i] == '.') {
		i++;
		NEED();
		if (t[i] < '0' || t[i] > '9') {
			ctx = "after decimal point in numeric literal";
			goto bad;
		}
		while (i < n && t[i] >= '0' && t[i] <= '9')
			i++;
	}
	if (i < n && (t[i] == 'e' || t[i] == 'E')) {
		i++;
		NEED();
		if (t[i] == '+' || t[i] == '-') {
			i++;
			NEED();
		}
		if (t[i] < '0' || t[i] > '9') {
			ctx = "in exponent of numeric literal";
			goto bad;
		}
		while (i < n && t[i] >= '0' && t[i] <= '9')
			i++;
	}
	goto end_value;
end_value:
	WS();
	if (depth == 0) {
		if (i < n) {
			ctx = "after top-level value";
			goto bad;
		}
		return 0;
	}
	NEED();
	if (stack[depth - 1] == '{') {
		if (t[i] == ',') {
			i++;
			WS();
			NEED();
			if (t[i] != '"') {
				ctx = "looking for beginning of object key string";
				goto bad;
			}
			goto key;
		}
		if (t[i] == '}') {
			i++;
			depth--;
			goto end_value;
		}
		ctx = "after object key:value pair";
		goto bad;
	}
	if (t[i] == ',') {
		i++;
		goto value;
	}
	if (t[i] == ']') {
		i++;
		depth--;
		goto end_value;
	}
	ctx = "after array element";
	goto bad;
eof:
	*at = n;
	snprintf(msg, msize, "unexpected end of JSON input");
	return 1;
bad: {
	char q[16], lit[64];
	quote_char(q, sizeof q, (unsigned char)t[i]);
	if (!ctx) { /* the literal's message was left in msg */
		snprintf(lit, sizeof lit, "%.63s", msg);
		ctx = lit;
	}
	snprintf(msg, msize, "invalid character %s %s", q, ctx);
	*at = i;
	return 1;
}
#undef WS
#undef NEED
}

static int fail_at(struct parser *p, size_t pos, const char *context)
{
	if (p->failed)
		return -1;
	p->failed = 1;
	p->err->offset = pos;
	if (pos >= p->len) {
		snprintf(p->err->message, sizeof p->err->message, "unexpected end of JSON input");
		return -1;
	}
	char q[16];
	quote_char(q, sizeof q, (unsigned char)p->text[pos]);
	snprintf(p->err->message, sizeof p->err->message, "invalid character %s %s", q, context);
	return -1;
}

static int fail_msg(struct parser *p, size_t pos, const char *fmt, ...)
{
	if (p->failed)
		return -1;
	p->failed = 1;
	p->err->offset = pos;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->err->message, sizeof p->err->message, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---------------------------------------------------------------------------------------------- parse */

static int is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static size_t skip_ws(const struct parser *p, size_t pos)
{
	while (pos < p->len && is_ws(p->text[pos]))
		pos++;
	return pos;
}

/* Byte extent of token t in the text: strings include their quotes. */
static size_t tok_begin(const jsmntok_t *t)
{
	return t->type == JSMN_STRING ? (size_t)t->start - 1 : (size_t)t->start;
}

static size_t tok_end(const jsmntok_t *t)
{
	return t->type == JSMN_STRING ? (size_t)t->end + 1 : (size_t)t->end;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static size_t put_utf8(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Length of the valid UTF-8 sequence at s[0..n), or 0 when it is not one (overlongs, surrogates and
 * values past U+10FFFF are invalid, as in Go's utf8.DecodeRune). */
static size_t utf8_valid_len(const unsigned char *s, size_t n)
{
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		return n >= 2 && (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (s[0] >= 0xe0 && s[0] <= 0xef) {
		if (n < 3 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
			return 0;
		if (s[0] == 0xe0 && s[1] < 0xa0)
			return 0;
		if (s[0] == 0xed && s[1] >= 0xa0)
			return 0;
		return 3;
	}
	if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		if (n < 4 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80)
			return 0;
		if (s[0] == 0xf0 && s[1] < 0x90)
			return 0;
		if (s[0] == 0xf4 && s[1] >= 0x90)
			return 0;
		return 4;
	}
	return 0;
}

static int read_u4(const char *s, uint32_t *out)
{
	uint32_t v = 0;
	for (int i = 0; i < 4; i++) {
		int h = hexval(s[i]);
		if (h < 0)
			return -1;
		v = v << 4 | (uint32_t)h;
	}
	*out = v;
	return 0;
}

/* Unescapes the string body text[b..e) into the arena; invalid UTF-8 and lone surrogates become U+FFFD
 * as Go's decoder makes them. */
static int parse_string(struct parser *p, size_t b, size_t e, struct ob_json *node)
{
	/* Output is at most 3 bytes per input byte (an invalid byte becomes U+FFFD). */
	size_t cap = (e - b) * 3 + 1;
	char *o = arena_alloc(p->doc, cap);
	if (!o)
		return fail_msg(p, b, "out of memory");
	size_t n = 0;
	const unsigned char *s = (const unsigned char *)p->text;
	size_t i = b;
	while (i < e) {
		unsigned char c = s[i];
		if (c < 0x20)
			return fail_at(p, i, "in string literal");
		if (c == '\\') {
			if (i + 1 >= e)
				return fail_at(p, i + 1, "in string escape code");
			char x = (char)s[i + 1];
			i += 2;
			switch (x) {
			case '"': o[n++] = '"'; break;
			case '\\': o[n++] = '\\'; break;
			case '/': o[n++] = '/'; break;
			case 'b': o[n++] = '\b'; break;
			case 'f': o[n++] = '\f'; break;
			case 'n': o[n++] = '\n'; break;
			case 'r': o[n++] = '\r'; break;
			case 't': o[n++] = '\t'; break;
			case 'u': {
				uint32_t cp;
				if (i + 4 > e || read_u4(p->text + i, &cp) != 0)
					return fail_at(p, i, "in \\u hexadecimal character escape");
				i += 4;
				if (cp >= 0xd800 && cp < 0xdc00) {
					uint32_t lo;
					if (i + 6 <= e && s[i] == '\\' && s[i + 1] == 'u' &&
					    read_u4(p->text + i + 2, &lo) == 0 && lo >= 0xdc00 && lo < 0xe000) {
						cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
						i += 6;
					} else {
						cp = 0xfffd;
					}
				} else if (cp >= 0xdc00 && cp < 0xe000) {
					cp = 0xfffd;
				}
				n += put_utf8(o + n, cp);
				break;
			}
			default:
				return fail_at(p, i - 1, "in string escape code");
			}
			continue;
		}
		size_t l = utf8_valid_len(s + i, e - i);
		if (l == 0) {
			n += put_utf8(o + n, 0xfffd);
			i++;
			continue;
		}
		memcpy(o + n, s + i, l);
		n += l;
		i += l;
	}
	o[n] = 0;
	node->type = OB_JSON_STRING;
	node->str = o;
	node->len = n;
	return 0;
}

/* Checks the JSON number grammar on text[b..e); returns 0, or -1 with *bad at the first offending byte
 * (e when the literal stops early). */
static int number_check(const char *t, size_t b, size_t e, size_t *bad)
{
	size_t i = b;
	if (i < e && t[i] == '-')
		i++;
	if (i < e && t[i] == '0') {
		i++;
	} else if (i < e && t[i] >= '1' && t[i] <= '9') {
		while (i < e && t[i] >= '0' && t[i] <= '9')
			i++;
	} else {
		goto bad;
	}
	if (i < e && t[i] == '.') {
		i++;
		if (i >= e || t[i] < '0' || t[i] > '9')
			goto bad;
		while (i < e && t[i] >= '0' && t[i] <= '9')
			i++;
	}
	if (i < e && (t[i] == 'e' || t[i] == 'E')) {
		i++;
		if (i < e && (t[i] == '+' || t[i] == '-'))
			i++;
		if (i >= e || t[i] < '0' || t[i] > '9')
			goto bad;
		while (i < e && t[i] >= '0' && t[i] <= '9')
			i++;
	}
	if (i == e)
		return 0;
bad:
	*bad = i;
	return -1;
}

static int parse_primitive(struct parser *p, size_t b, size_t e, struct ob_json *node)
{
	const char *t = p->text + b;
	size_t n = e - b;
	static const char *const lits[] = {"true", "false", "null"};
	if (t[0] == 't' || t[0] == 'f' || t[0] == 'n') {
		const char *lit = lits[t[0] == 't' ? 0 : t[0] == 'f' ? 1 : 2];
		size_t ll = strlen(lit);
		for (size_t i = 1; i < ll; i++) {
			if (i >= n || t[i] != lit[i]) {
				char ctx[64];
				snprintf(ctx, sizeof ctx, "in literal %s (expecting '%c')", lit, lit[i]);
				return fail_at(p, b + i, ctx);
			}
		}
		if (n > ll)
			return fail_at(p, b + ll, "after top-level value");
		node->type = t[0] == 'n' ? OB_JSON_NULL : OB_JSON_BOOL;
		node->boolean = t[0] == 't';
		return 0;
	}
	if (t[0] != '-' && (t[0] < '0' || t[0] > '9'))
		return fail_at(p, b, "looking for beginning of value");
	size_t bad;
	if (number_check(p->text, b, e, &bad))
		return fail_at(p, bad, "in numeric literal");
	char *lit = arena_alloc(p->doc, n + 1);
	if (!lit)
		return fail_msg(p, b, "out of memory");
	memcpy(lit, t, n);
	lit[n] = 0;
	node->type = OB_JSON_NUMBER;
	node->str = lit;
	node->len = n;
	/* out of range gives ±HUGE_VAL: Go rejects such a literal only where it decodes it into a float */
	node->number = strtod(lit, NULL);
	return 0;
}

/* Builds the node for token *ti and its subtree; *ti advances past it. */
static int build(struct parser *p, int *ti, int depth)
{
	if (*ti >= p->n_tok)
		return fail_msg(p, p->len, "unexpected end of JSON input");
	const jsmntok_t *t = &p->tok[*ti];
	uint32_t self = p->doc->n_nodes++;
	struct ob_json *node = &p->doc->nodes[self];
	memset(node, 0, sizeof *node);
	node->offset = tok_begin(t);
	node->span = 1;
	(*ti)++;

	if (t->type == JSMN_STRING)
		return parse_string(p, (size_t)t->start, (size_t)t->end, node);
	if (t->type == JSMN_PRIMITIVE)
		return parse_primitive(p, (size_t)t->start, (size_t)t->end, node);

	if (depth >= OB_JSON_MAX_DEPTH)
		return fail_msg(p, node->offset, "exceeded max depth");
	int is_obj = t->type == JSMN_OBJECT;
	node->type = is_obj ? OB_JSON_OBJECT : OB_JSON_ARRAY;
	size_t pos = (size_t)t->start + 1;
	size_t close = (size_t)t->end - 1;
	int n = t->size;
	for (int i = 0; i < n; i++) {
		pos = skip_ws(p, pos);
		if (i > 0) {
			if (pos >= p->len || p->text[pos] != ',')
				return fail_at(p, pos, is_obj ? "after object key:value pair" : "after array element");
			pos = skip_ws(p, pos + 1);
		}
		if (*ti >= p->n_tok || tok_begin(&p->tok[*ti]) != pos)
			return fail_at(p, pos, is_obj ? "looking for beginning of object key string"
						      : "looking for beginning of value");
		if (is_obj) {
			if (p->tok[*ti].type != JSMN_STRING)
				return fail_at(p, pos, "looking for beginning of object key string");
			if (build(p, ti, depth + 1))
				return -1;
			pos = skip_ws(p, tok_end(&p->tok[*ti - 1]));
			if (pos >= p->len || p->text[pos] != ':')
				return fail_at(p, pos, "after object key");
			pos = skip_ws(p, pos + 1);
			if (*ti >= p->n_tok || tok_begin(&p->tok[*ti]) != pos)
				return fail_at(p, pos, "looking for beginning of value");
		}
		int child = *ti;
		if (build(p, ti, depth + 1))
			return -1;
		const jsmntok_t *ct = &p->tok[child];
		pos = ct->type == JSMN_ARRAY || ct->type == JSMN_OBJECT ? (size_t)ct->end : tok_end(ct);
	}
	pos = skip_ws(p, pos);
	if (pos != close)
		return fail_at(p, pos, n == 0 ? (is_obj ? "looking for beginning of object key string"
							 : "looking for beginning of value")
					   : (is_obj ? "after object key:value pair" : "after array element"));
	node = &p->doc->nodes[self];
	node->count = (uint32_t)n;
	node->span = p->doc->n_nodes - self;
	return 0;
}

/* Every syntax error is worded by Go's scanner rules, whichever check found it first. */
static void reword(struct parser *p)
{
	if (strstr(p->err->message, "out of memory") || strstr(p->err->message, "too large") ||
	    strstr(p->err->message, "max depth"))
		return;
	size_t at;
	char msg[sizeof p->err->message];
	if (go_syntax_error(p->text, p->len, &at, msg, sizeof msg)) {
		p->err->offset = at;
		snprintf(p->err->message, sizeof p->err->message, "%s", msg);
	}
}

static int count_tokens_error(struct parser *p, int r, size_t pos)
{
	if (r == JSMN_ERROR_PART)
		return fail_msg(p, p->len, "unexpected end of JSON input");
	if (r == JSMN_ERROR_NOMEM)
		return fail_msg(p, pos, "out of memory");
	return fail_at(p, pos, "looking for beginning of value");
}

struct ob_json_doc *ob_json_parse(const char *text, size_t len, struct ob_json_error *err)
{
	struct ob_json_error dummy;
	struct parser p = {.text = text, .len = len, .err = err ? err : &dummy};
	p.err->offset = 0;
	p.err->message[0] = 0;
	if (len > OB_JSON_MAX_INPUT) {
		fail_msg(&p, 0, "JSON document too large: %zu bytes (limit %u)", len, OB_JSON_MAX_INPUT);
		return NULL;
	}
	/* jsmn stops at a NUL byte; JSON text never contains one outside an error. */
	const char *nul = memchr(text, 0, len);
	if (nul) {
		fail_at(&p, (size_t)(nul - text), "looking for beginning of value");
		reword(&p);
		return NULL;
	}
	jsmn_parser jp;
	jsmn_init(&jp);
	int r = jsmn_parse(&jp, text, len, NULL, 0);
	if (r < 0) {
		count_tokens_error(&p, r, jp.pos);
		reword(&p);
		return NULL;
	}
	if (r == 0) {
		fail_msg(&p, len, "unexpected end of JSON input");
		return NULL;
	}
	p.doc = calloc(1, sizeof *p.doc);
	p.tok = malloc((size_t)r * sizeof *p.tok);
	if (p.doc)
		p.doc->nodes = malloc((size_t)r * sizeof *p.doc->nodes);
	if (!p.doc || !p.tok || !p.doc->nodes) {
		fail_msg(&p, 0, "out of memory");
		goto err;
	}
	jsmn_init(&jp);
	p.n_tok = jsmn_parse(&jp, text, len, p.tok, (unsigned)r);
	if (p.n_tok < 0) {
		count_tokens_error(&p, p.n_tok, jp.pos);
		goto err;
	}
	size_t start = skip_ws(&p, 0);
	if (start >= len) {
		fail_msg(&p, len, "unexpected end of JSON input");
		goto err;
	}
	if (tok_begin(&p.tok[0]) != start) {
		fail_at(&p, start, "looking for beginning of value");
		goto err;
	}
	int ti = 0;
	if (build(&p, &ti, 0))
		goto err;
	size_t end = p.tok[0].type == JSMN_ARRAY || p.tok[0].type == JSMN_OBJECT ? (size_t)p.tok[0].end
										  : tok_end(&p.tok[0]);
	end = skip_ws(&p, end);
	if (end != len || ti != p.n_tok) {
		fail_at(&p, end, "after top-level value");
		goto err;
	}
	free(p.tok);
	return p.doc;
err:
	free(p.tok);
	ob_json_free(p.doc);
	reword(&p);
	return NULL;
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

static int fold_eq(const char *a, size_t an, const char *b)
{
	size_t bn = strlen(b);
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
		else if (fold && fold_eq(k->str, k->len, key))
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
	size_t i = s[0] == '-';
	for (; s[i]; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	errno = 0;
	char *end;
	long long x = strtoll(s, &end, 10);
	if (errno == ERANGE || *end)
		return false;
	*out = x;
	return true;
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

/* ---------------------------------------------------------------------------------------------- writer */

void ob_jw_init(struct ob_jw *w, size_t limit, unsigned flags)
{
	memset(w, 0, sizeof *w);
	w->limit = limit ? limit : OB_JSON_MAX_INPUT;
	w->flags = flags;
}

void ob_jw_free(struct ob_jw *w)
{
	free(w->buf);
	w->buf = NULL;
	w->len = w->cap = 0;
}

void ob_jw_reset(struct ob_jw *w)
{
	w->len = 0;
	w->status = OB_JW_OK;
	w->depth = 0;
	w->state[0] = 0;
	if (w->buf)
		w->buf[0] = 0;
}

int ob_jw_status(const struct ob_jw *w)
{
	return w->status;
}

const char *ob_jw_str(const struct ob_jw *w)
{
	if (w->status)
		return NULL;
	return w->buf ? w->buf : "";
}

char *ob_jw_take(struct ob_jw *w, size_t *len)
{
	if (w->status)
		return NULL;
	char *b = w->buf;
	if (!b) {
		b = malloc(1);
		if (!b)
			return NULL;
		b[0] = 0;
	}
	if (len)
		*len = w->len;
	w->buf = NULL;
	w->len = w->cap = 0;
	return b;
}

static bool reserve(struct ob_jw *w, size_t n)
{
	if (w->status)
		return false;
	if (n > w->limit || w->len > w->limit - n) {
		w->status = OB_JW_TOO_LARGE;
		return false;
	}
	size_t need = w->len + n + 1;
	if (need <= w->cap)
		return true;
	size_t cap = w->cap ? w->cap : 256;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	char *b = realloc(w->buf, cap);
	if (!b) {
		w->status = OB_JW_NOMEM;
		return false;
	}
	w->buf = b;
	w->cap = cap;
	return true;
}

static void put(struct ob_jw *w, const char *s, size_t n)
{
	if (!reserve(w, n))
		return;
	memcpy(w->buf + w->len, s, n);
	w->len += n;
	w->buf[w->len] = 0;
}

/* Called before every value: the comma, and the check that a value is allowed here. */
static bool before_value(struct ob_jw *w)
{
	if (w->status)
		return false;
	uint8_t *st = &w->state[w->depth];
	if (w->depth > 0 && w->is_obj[w->depth]) {
		if (*st != 2) {
			w->status = OB_JW_INVALID; /* a value in an object needs a key first */
			return false;
		}
	} else if (*st == 1) {
		if (w->depth == 0) {
			w->status = OB_JW_INVALID; /* a second top-level value */
			return false;
		}
		put(w, ",", 1);
	}
	*st = 1;
	return w->status == 0;
}

static void open(struct ob_jw *w, char c, int is_obj)
{
	if (!before_value(w))
		return;
	if (w->depth >= OB_JSON_MAX_DEPTH) {
		w->status = OB_JW_INVALID;
		return;
	}
	put(w, &c, 1);
	w->depth++;
	w->state[w->depth] = 0;
	w->is_obj[w->depth] = (uint8_t)is_obj;
}

static void close_(struct ob_jw *w, char c, int is_obj)
{
	if (w->status)
		return;
	if (w->depth == 0 || w->is_obj[w->depth] != is_obj || w->state[w->depth] == 2) {
		w->status = OB_JW_INVALID;
		return;
	}
	put(w, &c, 1);
	w->depth--;
}

void ob_jw_obj(struct ob_jw *w) { open(w, '{', 1); }
void ob_jw_obj_end(struct ob_jw *w) { close_(w, '}', 1); }
void ob_jw_arr(struct ob_jw *w) { open(w, '[', 0); }
void ob_jw_arr_end(struct ob_jw *w) { close_(w, ']', 0); }

bool ob_jw_escape(struct ob_jw *w, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	int html = !(w->flags & OB_JW_NO_HTML_ESCAPE);
	size_t i = 0, run = 0; /* copy runs of safe bytes in one go */
	while (i < n) {
		unsigned char c = u[i];
		const char *esc = NULL;
		char ubuf[7];
		size_t adv = 1;
		if (c < 0x80) {
			if (c >= 0x20 && c != '"' && c != '\\' && !(html && (c == '<' || c == '>' || c == '&'))) {
				i++;
				continue;
			}
			switch (c) {
			case '"': esc = "\\\""; break;
			case '\\': esc = "\\\\"; break;
			case '\b': esc = "\\b"; break;
			case '\f': esc = "\\f"; break;
			case '\n': esc = "\\n"; break;
			case '\r': esc = "\\r"; break;
			case '\t': esc = "\\t"; break;
			default:
				ubuf[0] = '\\', ubuf[1] = 'u', ubuf[2] = '0', ubuf[3] = '0';
				ubuf[4] = hex[c >> 4], ubuf[5] = hex[c & 15], ubuf[6] = 0;
				esc = ubuf;
			}
		} else {
			size_t l = utf8_valid_len(u + i, n - i);
			if (l == 0) {
				esc = "\\ufffd";
			} else if (l == 3 && u[i] == 0xe2 && u[i + 1] == 0x80 && (u[i + 2] == 0xa8 || u[i + 2] == 0xa9)) {
				esc = u[i + 2] == 0xa8 ? "\\u2028" : "\\u2029";
				adv = 3;
			} else {
				i += l;
				continue;
			}
		}
		put(w, s + run, i - run);
		put(w, esc, strlen(esc));
		i += adv;
		run = i;
	}
	put(w, s + run, n - run);
	return w->status == 0;
}

void ob_jw_key(struct ob_jw *w, const char *key)
{
	ob_jw_keyn(w, key, strlen(key));
}

void ob_jw_keyn(struct ob_jw *w, const char *key, size_t n)
{
	if (w->status)
		return;
	if (w->depth == 0 || !w->is_obj[w->depth] || w->state[w->depth] == 2) {
		w->status = OB_JW_INVALID;
		return;
	}
	if (w->state[w->depth] == 1)
		put(w, ",", 1);
	put(w, "\"", 1);
	ob_jw_escape(w, key, n);
	put(w, "\":", 2);
	w->state[w->depth] = 2;
}

void ob_jw_stringn(struct ob_jw *w, const char *s, size_t n)
{
	if (!before_value(w))
		return;
	put(w, "\"", 1);
	ob_jw_escape(w, s, n);
	put(w, "\"", 1);
}

void ob_jw_string(struct ob_jw *w, const char *s)
{
	ob_jw_stringn(w, s, strlen(s));
}

void ob_jw_int(struct ob_jw *w, int64_t v)
{
	char b[32];
	int n = snprintf(b, sizeof b, "%lld", (long long)v);
	if (before_value(w))
		put(w, b, (size_t)n);
}

void ob_jw_uint(struct ob_jw *w, uint64_t v)
{
	char b[32];
	int n = snprintf(b, sizeof b, "%llu", (unsigned long long)v);
	if (before_value(w))
		put(w, b, (size_t)n);
}

int ob_json_format_float(char *buf, double v, int bits)
{
	if (isnan(v) || isinf(v))
		return 0;
	if (v == 0) {
		return snprintf(buf, 32, "%s", signbit(v) ? "-0" : "0");
	}
	/* shortest digits that read back as the same value (float64 or float32) */
	char e[40];
	int maxp = bits == 32 ? 9 : 17;
	for (int prec = 0; prec < maxp; prec++) {
		snprintf(e, sizeof e, "%.*e", prec, v);
		double back = strtod(e, NULL);
		if (bits == 32 ? (float)back == (float)v : back == v)
			break;
	}
	/* e = "[-]d.ddde[+-]XX": split into digits and decimal exponent */
	char digits[24];
	int nd = 0, neg = 0;
	const char *s = e;
	if (*s == '-')
		neg = 1, s++;
	for (; *s && *s != 'e'; s++)
		if (*s >= '0' && *s <= '9')
			digits[nd++] = *s;
	int exp10 = atoi(s + 1);
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	double a = fabs(v);
	int use_e = bits == 32 ? ((float)a < 1e-6f || (float)a >= 1e21f) : (a < 1e-6 || a >= 1e21);
	int n = 0;
	if (neg)
		buf[n++] = '-';
	if (use_e) {
		buf[n++] = digits[0];
		if (nd > 1) {
			buf[n++] = '.';
			memcpy(buf + n, digits + 1, (size_t)nd - 1);
			n += nd - 1;
		}
		int ae = exp10 < 0 ? -exp10 : exp10;
		/* Go writes at least two exponent digits, then trims "e-07" to "e-7" */
		if (exp10 < 0)
			n += sprintf(buf + n, "e-%d", ae);
		else
			n += sprintf(buf + n, "e+%02d", ae);
	} else if (exp10 >= 0) {
		for (int i = 0; i <= exp10; i++)
			buf[n++] = i < nd ? digits[i] : '0';
		if (nd > exp10 + 1) {
			buf[n++] = '.';
			for (int i = exp10 + 1; i < nd; i++)
				buf[n++] = digits[i];
		}
	} else {
		buf[n++] = '0';
		buf[n++] = '.';
		for (int i = 0; i < -exp10 - 1; i++)
			buf[n++] = '0';
		memcpy(buf + n, digits, (size_t)nd);
		n += nd;
	}
	buf[n] = 0;
	return n;
}

static void put_float(struct ob_jw *w, double v, int bits)
{
	char b[48];
	int n = ob_json_format_float(b, v, bits);
	if (n == 0) {
		if (!w->status)
			w->status = OB_JW_INVALID;
		return;
	}
	if (before_value(w))
		put(w, b, (size_t)n);
}

void ob_jw_float64(struct ob_jw *w, double v) { put_float(w, v, 64); }
void ob_jw_float32(struct ob_jw *w, float v) { put_float(w, v, 32); }

void ob_jw_bool(struct ob_jw *w, bool v)
{
	if (before_value(w))
		put(w, v ? "true" : "false", v ? 4 : 5);
}

void ob_jw_null(struct ob_jw *w)
{
	if (before_value(w))
		put(w, "null", 4);
}

void ob_jw_raw(struct ob_jw *w, const char *json, size_t n)
{
	if (before_value(w))
		put(w, json, n);
}

struct member_ref {
	const struct ob_json *key, *val;
	size_t index;
};

static int cmp_member(const void *a, const void *b)
{
	const struct member_ref *x = a, *y = b;
	size_t n = x->key->len < y->key->len ? x->key->len : y->key->len;
	int c = memcmp(x->key->str, y->key->str, n);
	if (c)
		return c;
	return (x->key->len > y->key->len) - (x->key->len < y->key->len);
}

static int cmp_member_stable(const void *a, const void *b)
{
	int c = cmp_member(a, b);
	if (c)
		return c;
	const struct member_ref *x = a, *y = b;
	return (x->index > y->index) - (x->index < y->index);
}

void ob_jw_value(struct ob_jw *w, const struct ob_json *v, bool sort_keys)
{
	if (w->status || !v)
		return;
	switch (v->type) {
	case OB_JSON_NULL: ob_jw_null(w); return;
	case OB_JSON_BOOL: ob_jw_bool(w, v->boolean); return;
	case OB_JSON_NUMBER: ob_jw_raw(w, v->str, v->len); return;
	case OB_JSON_STRING: ob_jw_stringn(w, v->str, v->len); return;
	case OB_JSON_ARRAY:
		ob_jw_arr(w);
		OB_JSON_FOREACH(e, v)
		ob_jw_value(w, e, sort_keys);
		ob_jw_arr_end(w);
		return;
	case OB_JSON_OBJECT:
		break;
	}
	ob_jw_obj(w);
	if (!sort_keys || v->count < 2) {
		OB_JSON_FOREACH_MEMBER(k, val, v)
		{
			ob_jw_keyn(w, k->str, k->len);
			ob_jw_value(w, val, sort_keys);
		}
	} else {
		struct member_ref *m = malloc(v->count * sizeof *m);
		if (!m) {
			w->status = OB_JW_NOMEM;
			return;
		}
		size_t n = 0;
		OB_JSON_FOREACH_MEMBER(k, val, v)
		{
			m[n].key = k;
			m[n].val = val;
			m[n].index = n;
			n++;
		}
		qsort(m, n, sizeof *m, cmp_member_stable);
		for (size_t i = 0; i < n; i++) {
			/* Go's map keeps one entry per key: the last duplicate wins */
			if (i + 1 < n && cmp_member(&m[i], &m[i + 1]) == 0)
				continue;
			ob_jw_keyn(w, m[i].key->str, m[i].key->len);
			ob_jw_value(w, m[i].val, sort_keys);
		}
		free(m);
	}
	ob_jw_obj_end(w);
}
