/* modelfile/template_parse.c — lexer and parser for Go's text/template syntax, and Node.String().
 *
 * Follows the behaviour of Go's text/template/parse (trim markers, comments, raw strings, number and
 * character literals, variable scoping, else-if chains, define/block/template, break/continue) and its
 * error texts, so that a template Ollama rejects is rejected here with the same message. The whole source
 * is tokenised first; the parser then walks the token array. Complex numbers are refused.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/gofmt.h"
#include "base/unicode.h"
#include "base/utf8.h"
#include "modelfile/template_internal.h"

/* ------------------------------------------------------------------------------------------ lexer */

enum tk {
	TK_ERROR,
	TK_EOF,
	TK_TEXT,
	TK_LDELIM,
	TK_RDELIM,
	TK_SPACE,
	TK_BOOL,
	TK_CHAR,       /* a printable ASCII character not otherwise handled (',' mostly) */
	TK_CHARCONST,
	TK_COMPLEX,
	TK_ASSIGN,
	TK_DECLARE,
	TK_FIELD,
	TK_IDENT,
	TK_LPAREN,
	TK_NUMBER,
	TK_PIPE,
	TK_RAWSTRING,
	TK_RPAREN,
	TK_STRING,
	TK_VARIABLE,
	TK_KEYWORD, /* marker: keywords follow */
	TK_BLOCK,
	TK_BREAK,
	TK_CONTINUE,
	TK_DOT,
	TK_DEFINE,
	TK_ELSE,
	TK_END,
	TK_IF,
	TK_NIL,
	TK_RANGE,
	TK_TEMPLATE,
	TK_WITH,
};

struct tok {
	enum tk type;
	uint32_t pos;
	uint32_t line;
	const char *val;
	size_t n;
};

struct lexer {
	const char *src;
	size_t len;
	size_t pos, start;
	uint32_t line, start_line; /* lines at pos and at start */
	int paren_depth;
	struct tok *toks;
	size_t ntoks, cap;
	char errmsg[160];
	bool failed, nomem;
};

#define LEX_EOF (-1)

static bool is_space(int c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Decodes the rune at s[i] (Go's utf8.DecodeRuneInString); stores its byte length. Invalid bytes decode as
 * U+FFFD of length 1. */
static int32_t rune_at(const char *s, size_t len, size_t i, size_t *w)
{
	if (i >= len) {
		*w = 0;
		return LEX_EOF;
	}
	return (int32_t)ob_utf8_decode((const unsigned char *)s + i, len - i, w);
}

/* text/template's isAlphaNumeric: '_', unicode.IsLetter or unicode.IsDigit. */
static bool is_alnum_rune(int32_t r)
{
	return r == '_' || ob_rune_is_letter((uint32_t)r) || ob_rune_is_digit((uint32_t)r);
}

static bool lex_push(struct lexer *l, enum tk type)
{
	if (l->ntoks == l->cap && ob_grow(&l->toks, &l->cap, l->ntoks + 1, sizeof *l->toks, 256, 0) != OB_GROW_OK) {
		l->nomem = l->failed = true;
		return false;
	}
	struct tok *t = &l->toks[l->ntoks++];
	t->type = type;
	t->pos = (uint32_t)l->start;
	t->line = l->start_line;
	t->val = l->src + l->start;
	t->n = l->pos - l->start;
	l->start = l->pos;
	l->start_line = l->line;
	return true;
}

/* Moves pos forward over n bytes, counting newlines. */
static void lex_advance(struct lexer *l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (l->src[l->pos + i] == '\n')
			l->line++;
	l->pos += n;
}

static void lex_ignore(struct lexer *l)
{
	l->start = l->pos;
	l->start_line = l->line;
}

static void fmt_rune_u(char *buf, size_t size, int32_t r)
{
	/* Go's %#U: the rune itself after the number when strconv.IsPrint says it is printable */
	if (r >= 0 && ob_rune_is_print((uint32_t)r)) {
		char u8[OB_UTF8_MAX + 1] = {0};
		ob_utf8_encode(u8, (uint32_t)r);
		snprintf(buf, size, "U+%04X '%s'", (unsigned)r, u8);
	} else
		snprintf(buf, size, "U+%04X", (unsigned)(r < 0 ? 0 : r));
}

__attribute__((format(printf, 2, 3))) static void lex_error(struct lexer *l, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(l->errmsg, sizeof l->errmsg, fmt, ap);
	va_end(ap);
	/* the error token carries the message (like Go's itemError) */
	l->start = l->pos;
	if (lex_push(l, TK_ERROR)) {
		l->toks[l->ntoks - 1].val = l->errmsg;
		l->toks[l->ntoks - 1].n = strlen(l->errmsg);
	}
	l->failed = true;
}

/* Go's lexQuote / lexChar: the rest of a quoted item up to the closing `quote`, backslash escapes skipped;
 * what: the error when a newline or the end comes first. */
static bool lex_quote(struct lexer *l, char quote, const char *what)
{
	for (;;) {
		if (l->pos >= l->len || l->src[l->pos] == '\n') {
			lex_error(l, "%s", what);
			return false;
		}
		char c = l->src[l->pos++];
		if (c == '\\') {
			if (l->pos >= l->len || l->src[l->pos] == '\n') {
				lex_error(l, "%s", what);
				return false;
			}
			l->pos++;
		} else if (c == quote) {
			return true;
		}
	}
}

static bool has_prefix(const struct lexer *l, size_t at, const char *p)
{
	size_t n = strlen(p);
	return at <= l->len && l->len - at >= n && memcmp(l->src + at, p, n) == 0;
}

/* "- " (dash then a space character) right after a left delimiter. */
static bool has_left_trim(const struct lexer *l, size_t at)
{
	return at + 2 <= l->len && l->src[at] == '-' && is_space((unsigned char)l->src[at + 1]);
}

/* " -" (a space character then a dash) before a right delimiter. */
static bool has_right_trim(const struct lexer *l, size_t at)
{
	return at + 2 <= l->len && is_space((unsigned char)l->src[at]) && l->src[at + 1] == '-';
}

/* At a right delimiter (optionally trim-marked)? */
static bool at_right_delim(const struct lexer *l, bool *trim)
{
	if (has_right_trim(l, l->pos) && has_prefix(l, l->pos + 2, "}}")) {
		*trim = true;
		return true;
	}
	*trim = false;
	return has_prefix(l, l->pos, "}}");
}

static bool at_terminator(const struct lexer *l)
{
	if (l->pos >= l->len)
		return true;
	char c = l->src[l->pos];
	if (is_space((unsigned char)c))
		return true;
	switch (c) {
	case '.': case ',': case '|': case ':': case ')': case '(':
		return true;
	}
	return has_prefix(l, l->pos, "}}");
}

static size_t space_run(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n && is_space((unsigned char)s[i]))
		i++;
	return i;
}

static enum tk keyword(const char *w, size_t n)
{
	static const struct {
		const char *w;
		enum tk t;
	} kw[] = {
		{".", TK_DOT},         {"block", TK_BLOCK},       {"break", TK_BREAK}, {"continue", TK_CONTINUE},
		{"define", TK_DEFINE}, {"else", TK_ELSE},         {"end", TK_END},     {"if", TK_IF},
		{"range", TK_RANGE},   {"nil", TK_NIL},           {"template", TK_TEMPLATE}, {"with", TK_WITH},
	};
	for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++)
		if (strlen(kw[i].w) == n && memcmp(kw[i].w, w, n) == 0)
			return kw[i].t;
	return TK_ERROR;
}

static bool accept(struct lexer *l, const char *valid)
{
	if (l->pos < l->len && l->src[l->pos] && strchr(valid, l->src[l->pos])) {
		l->pos++;
		return true;
	}
	return false;
}

static void accept_run(struct lexer *l, const char *valid)
{
	while (accept(l, valid))
		;
}

static bool scan_number(struct lexer *l)
{
	accept(l, "+-");
	const char *digits = "0123456789_";
	if (accept(l, "0")) {
		if (accept(l, "xX"))
			digits = "0123456789abcdefABCDEF_";
		else if (accept(l, "oO"))
			digits = "01234567_";
		else if (accept(l, "bB"))
			digits = "01_";
	}
	accept_run(l, digits);
	if (accept(l, "."))
		accept_run(l, digits);
	if (strlen(digits) == 11 && accept(l, "eE")) {
		accept(l, "+-");
		accept_run(l, "0123456789_");
	}
	if (strlen(digits) == 23 && accept(l, "pP")) {
		accept(l, "+-");
		accept_run(l, "0123456789_");
	}
	accept(l, "i");
	size_t w;
	int32_t r = rune_at(l->src, l->len, l->pos, &w);
	if (r != LEX_EOF && is_alnum_rune(r)) {
		l->pos += w;
		return false;
	}
	return true;
}

/* Lexes one action starting after "{{" (and its trim marker). Returns false on error. */
static bool lex_action(struct lexer *l)
{
	for (;;) {
		bool trim;
		if (at_right_delim(l, &trim)) {
			if (l->paren_depth != 0) {
				lex_error(l, "unclosed left paren");
				return false;
			}
			if (trim) {
				l->pos += 2;
				lex_ignore(l);
			}
			l->pos += 2;
			if (!lex_push(l, TK_RDELIM))
				return false;
			if (trim) {
				lex_advance(l, space_run(l->src + l->pos, l->len - l->pos));
				lex_ignore(l);
			}
			return true;
		}
		size_t w;
		int32_t r = rune_at(l->src, l->len, l->pos, &w);
		if (r == LEX_EOF) {
			lex_error(l, "unclosed action");
			return false;
		}
		if (is_space(r)) {
			/* a run of spaces; careful with " -}}" */
			size_t n = space_run(l->src + l->pos, l->len - l->pos);
			lex_advance(l, n);
			if (has_right_trim(l, l->pos - 1) && has_prefix(l, l->pos + 1, "}}")) {
				/* back up before the last space: it belongs to the trim marker */
				l->pos--;
				if (l->src[l->pos] == '\n')
					l->line--;
				if (n == 1)
					continue; /* at the delimiter */
			}
			if (!lex_push(l, TK_SPACE))
				return false;
			continue;
		}
		l->pos += w;
		switch (r) {
		case '=':
			if (!lex_push(l, TK_ASSIGN))
				return false;
			continue;
		case ':':
			if (l->pos >= l->len || l->src[l->pos] != '=') {
				lex_error(l, "expected :=");
				return false;
			}
			l->pos++;
			if (!lex_push(l, TK_DECLARE))
				return false;
			continue;
		case '|':
			if (!lex_push(l, TK_PIPE))
				return false;
			continue;
		case '"':
			if (!lex_quote(l, '"', "unterminated quoted string") || !lex_push(l, TK_STRING))
				return false;
			continue;
		case '`': {
			const char *end = memchr(l->src + l->pos, '`', l->len - l->pos);
			if (!end) {
				lex_error(l, "unterminated raw quoted string");
				return false;
			}
			lex_advance(l, (size_t)(end - (l->src + l->pos)) + 1);
			if (!lex_push(l, TK_RAWSTRING))
				return false;
			continue;
		}
		case '\'':
			if (!lex_quote(l, '\'', "unterminated character constant") || !lex_push(l, TK_CHARCONST))
				return false;
			continue;
		case '$':
		case '.': {
			if (r == '.' && l->pos < l->len && l->src[l->pos] >= '0' && l->src[l->pos] <= '9')
				goto number; /* ".5" */
			if (at_terminator(l)) {
				if (!lex_push(l, r == '$' ? TK_VARIABLE : TK_DOT))
					return false;
				continue;
			}
			int32_t c;
			for (;;) {
				c = rune_at(l->src, l->len, l->pos, &w);
				if (c == LEX_EOF || !is_alnum_rune(c))
					break;
				l->pos += w;
			}
			if (!at_terminator(l)) {
				char u[32];
				fmt_rune_u(u, sizeof u, c);
				lex_error(l, "bad character %s", u);
				return false;
			}
			if (!lex_push(l, r == '$' ? TK_VARIABLE : TK_FIELD))
				return false;
			continue;
		}
		case '(':
			if (!lex_push(l, TK_LPAREN))
				return false;
			l->paren_depth++;
			continue;
		case ')':
			if (!lex_push(l, TK_RPAREN))
				return false;
			l->paren_depth--;
			if (l->paren_depth < 0) {
				lex_error(l, "unexpected right paren U+0029 ')'");
				return false;
			}
			continue;
		}
		if (r == '+' || r == '-' || (r >= '0' && r <= '9')) {
		number:
			l->pos = l->start;
			if (!scan_number(l)) {
				lex_error(l, "bad number syntax: \"%.*s\"", (int)(l->pos - l->start), l->src + l->start);
				return false;
			}
			enum tk type = TK_NUMBER;
			if (l->pos < l->len && (l->src[l->pos] == '+' || l->src[l->pos] == '-')) {
				if (!scan_number(l) || l->src[l->pos - 1] != 'i') {
					lex_error(l, "bad number syntax: \"%.*s\"", (int)(l->pos - l->start),
						  l->src + l->start);
					return false;
				}
				type = TK_COMPLEX;
			}
			if (!lex_push(l, type))
				return false;
			continue;
		}
		if (is_alnum_rune(r)) {
			int32_t c;
			for (;;) {
				c = rune_at(l->src, l->len, l->pos, &w);
				if (c == LEX_EOF || !is_alnum_rune(c))
					break;
				l->pos += w;
			}
			if (!at_terminator(l)) {
				char u[32];
				fmt_rune_u(u, sizeof u, c);
				lex_error(l, "bad character %s", u);
				return false;
			}
			const char *word = l->src + l->start;
			size_t wn = l->pos - l->start;
			enum tk kw = keyword(word, wn);
			enum tk type;
			if (kw != TK_ERROR)
				type = kw;
			else if ((wn == 4 && memcmp(word, "true", 4) == 0) || (wn == 5 && memcmp(word, "false", 5) == 0))
				type = TK_BOOL;
			else
				type = TK_IDENT;
			if (!lex_push(l, type))
				return false;
			continue;
		}
		if (r < 0x7f && r >= 0x20) {
			if (!lex_push(l, TK_CHAR))
				return false;
			continue;
		}
		char u[32];
		fmt_rune_u(u, sizeof u, r);
		lex_error(l, "unrecognized character in action: %s", u);
		return false;
	}
}

/* Tokenises the whole source. */
static bool lex_all(struct lexer *l)
{
	for (;;) {
		const char *p = NULL;
		for (size_t i = l->pos; i + 1 < l->len; i++)
			if (l->src[i] == '{' && l->src[i + 1] == '{') {
				p = l->src + i;
				break;
			}
		if (!p) {
			lex_advance(l, l->len - l->pos);
			if (l->pos > l->start && !lex_push(l, TK_TEXT))
				return false;
			return lex_push(l, TK_EOF);
		}
		size_t at = (size_t)(p - l->src);
		size_t text_end = at;
		bool trim = has_left_trim(l, at + 2);
		if (trim)
			while (text_end > l->start && is_space((unsigned char)l->src[text_end - 1]))
				text_end--;
		lex_advance(l, text_end - l->pos);
		if (l->pos > l->start && !lex_push(l, TK_TEXT))
			return false;
		lex_advance(l, at - l->pos);
		lex_ignore(l);
		/* left delimiter */
		size_t after = trim ? 2 : 0;
		if (has_prefix(l, at + 2 + after, "/*")) {
			/* comment: must close right before the right delimiter */
			lex_advance(l, 2 + after + 2); /* past the delimiter, the trim marker and the comment opener */
			const char *end = NULL;
			for (size_t i = l->pos; i + 1 < l->len; i++)
				if (l->src[i] == '*' && l->src[i + 1] == '/') {
					end = l->src + i;
					break;
				}
			if (!end) {
				lex_error(l, "unclosed comment");
				return false;
			}
			lex_advance(l, (size_t)(end - (l->src + l->pos)) + 2);
			bool rtrim;
			if (!at_right_delim(l, &rtrim)) {
				lex_error(l, "comment ends before closing delimiter");
				return false;
			}
			lex_advance(l, rtrim ? 4 : 2);
			if (rtrim)
				lex_advance(l, space_run(l->src + l->pos, l->len - l->pos));
			lex_ignore(l);
			continue;
		}
		lex_advance(l, 2);
		if (!lex_push(l, TK_LDELIM))
			return false;
		lex_advance(l, after);
		lex_ignore(l);
		l->paren_depth = 0;
		if (!lex_action(l))
			return false;
	}
}

/* ------------------------------------------------------------------------------------------ parser */

struct parser {
	struct mf_tpl *t;
	struct tpl_arena *a;
	const struct tok *toks;
	size_t ntoks, i;          /* next token */
	size_t lasti;             /* index of the token next() returned last (what backup() restores) */
	const struct tok *last;   /* the most recent token read (for error lines) */
	bool funcs_ollama;
	/* variables in scope (names) */
	struct tpl_sv *vars;
	size_t nvars, capvars;
	size_t var_base; /* first variable of the tree being parsed ({{define}}/{{block}} bodies start afresh) */
	int range_depth;
	int depth;
	int action_line;
	jmp_buf jb;
	struct mf_tpl_error *err;
	int code;
	const char *tree_name; /* name of the tree being parsed, for nothing but symmetry with Go */
};

__attribute__((format(printf, 2, 3), noreturn)) static void perr(struct parser *p, const char *fmt, ...)
{
	char m[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m, sizeof m, fmt, ap);
	va_end(ap);
	uint32_t line = p->last ? p->last->line : 1;
	if (p->err) {
		p->err->code = MF_TPL_ERR_PARSE;
		p->err->line = (int)line;
		int l2, col;
		tpl_location(p->t->src, p->last ? p->last->pos : 0, &l2, &col);
		p->err->col = col;
		snprintf(p->err->msg, sizeof p->err->msg, "template: :%u: %s", line, m);
	}
	p->code = MF_TPL_ERR_PARSE;
	longjmp(p->jb, 1);
}

/* An allocation failed: the tree outgrew MF_TPL_MAX_PARSE_MEMORY, or memory ran out. */
__attribute__((noreturn)) static void pnomem(struct parser *p)
{
	bool limit = p->a->limit && p->a->used_total + 4096 > p->a->limit;
	if (p->err) {
		p->err->code = limit ? MF_TPL_ERR_LIMIT : MF_TPL_ERR_NOMEM;
		p->err->line = 0;
		p->err->col = 0;
		snprintf(p->err->msg, sizeof p->err->msg, limit ? "template: parse tree larger than %u bytes"
							      : "template: out of memory",
			 MF_TPL_MAX_PARSE_MEMORY);
	}
	p->code = limit ? MF_TPL_ERR_LIMIT : MF_TPL_ERR_NOMEM;
	longjmp(p->jb, 1);
}

/* Go reports parse errors at the line of the most recently lexed token (the furthest one looked at). */
static void touch(struct parser *p, size_t i)
{
	if (!p->last || &p->toks[i] > p->last)
		p->last = &p->toks[i];
}

static const struct tok *next(struct parser *p)
{
	const struct tok *t = &p->toks[p->i];
	touch(p, p->i);
	p->lasti = p->i;
	if (p->i + 1 < p->ntoks)
		p->i++;
	return t;
}

static const struct tok *peek(struct parser *p)
{
	touch(p, p->i);
	return &p->toks[p->i];
}

/* Pushes back the token next() returned last (spaces skipped before it stay consumed, as in Go). */
static void backup(struct parser *p)
{
	p->i = p->lasti;
}

static const struct tok *next_non_space(struct parser *p)
{
	const struct tok *t;
	do
		t = next(p);
	while (t->type == TK_SPACE);
	return t;
}

static const struct tok *peek_non_space(struct parser *p)
{
	const struct tok *t = next_non_space(p);
	/* leave the cursor on the non-space token, as Go's peekNonSpace does */
	p->i = (size_t)(t - p->toks);
	return t;
}

/* Go's item.String() for messages. */
static void tok_string(char *buf, size_t size, const struct tok *t)
{
	if (t->type == TK_EOF) {
		snprintf(buf, size, "EOF");
		return;
	}
	if (t->type == TK_ERROR) {
		snprintf(buf, size, "%.*s", (int)t->n, t->val);
		return;
	}
	if (t->type > TK_KEYWORD) {
		snprintf(buf, size, "<%.*s>", (int)t->n, t->val);
		return;
	}
	/* %q, truncated to 10 runes with "..." (%.10q) */
	struct ob_buf b;
	ob_buf_init(&b, 0);
	size_t lim = t->n, runes = 0, i = 0;
	bool cut = false;
	while (i < t->n) {
		size_t w;
		rune_at(t->val, t->n, i, &w);
		if (runes == 10) {
			lim = i;
			cut = true;
			break;
		}
		runes++;
		i += w;
	}
	ob_buf_putc(&b, '"');
	for (size_t k = 0; k < lim; k++) {
		unsigned char c = (unsigned char)t->val[k];
		switch (c) {
		case '"': ob_buf_puts(&b, "\\\""); break;
		case '\\': ob_buf_puts(&b, "\\\\"); break;
		case '\n': ob_buf_puts(&b, "\\n"); break;
		case '\t': ob_buf_puts(&b, "\\t"); break;
		case '\r': ob_buf_puts(&b, "\\r"); break;
		default:
			if (c < 0x20 || c == 0x7f)
				ob_buf_printf(&b, "\\x%02x", c);
			else
				ob_buf_putc(&b, (char)c);
		}
	}
	ob_buf_putc(&b, '"');
	snprintf(buf, size, "%s%s", b.p ? b.p : "\"\"", cut ? "..." : "");
	ob_buf_free(&b);
}

__attribute__((noreturn)) static void unexpected(struct parser *p, const struct tok *t, const char *context)
{
	char s[64];
	if (t->type == TK_ERROR) {
		if (p->action_line != 0 && (uint32_t)p->action_line != t->line) {
			bool action = t->n >= 7 && memcmp(t->val + t->n - 7, " action", 7) == 0;
			perr(p, "%.*s%s:%d", (int)t->n, t->val, action ? " started at " : " in action started at ",
			     p->action_line);
		}
		perr(p, "%.*s", (int)t->n, t->val);
	}
	tok_string(s, sizeof s, t);
	perr(p, "unexpected %s in %s", s, context);
}

static const struct tok *expect(struct parser *p, enum tk type, const char *context)
{
	const struct tok *t = next_non_space(p);
	if (t->type != type)
		unexpected(p, t, context);
	return t;
}

struct tn *tpl_node_new(struct tpl_arena *a, enum tn_type type, uint32_t pos, uint32_t line)
{
	struct tn *n = tpl_arena_alloc(a, sizeof *n);
	if (!n)
		return NULL;
	n->type = type;
	n->pos = pos;
	n->line = line;
	return n;
}

bool tpl_node_add(struct tpl_arena *a, struct tn *parent, struct tn *kid)
{
	if (parent->nkids == parent->capkids) {
		size_t cap = parent->capkids ? parent->capkids * 2 : 4;
		struct tn **k = tpl_arena_alloc(a, cap * sizeof *k);
		if (!k)
			return false;
		if (parent->nkids)
			memcpy(k, parent->kids, parent->nkids * sizeof *k);
		parent->kids = k;
		parent->capkids = cap;
	}
	parent->kids[parent->nkids++] = kid;
	return true;
}

static struct tn *nnew(struct parser *p, enum tn_type type, uint32_t pos, uint32_t line)
{
	struct tn *n = tpl_node_new(p->a, type, pos, line);
	if (!n)
		pnomem(p);
	return n;
}

static void nadd(struct parser *p, struct tn *parent, struct tn *kid)
{
	if (!tpl_node_add(p->a, parent, kid))
		pnomem(p);
}

/* Splits "a.b.c" into identifiers. */
static void split_ident(struct parser *p, struct tn *n, const char *s, size_t len)
{
	size_t count = 1;
	for (size_t i = 0; i < len; i++)
		if (s[i] == '.')
			count++;
	n->ident = tpl_arena_alloc(p->a, count * sizeof *n->ident);
	if (!n->ident)
		pnomem(p);
	size_t start = 0, k = 0;
	for (size_t i = 0; i <= len; i++)
		if (i == len || s[i] == '.') {
			n->ident[k].p = s + start;
			n->ident[k].n = i - start;
			k++;
			start = i + 1;
		}
	n->nident = count;
}

static struct tn *new_field(struct parser *p, uint32_t pos, uint32_t line, const char *s, size_t len)
{
	struct tn *n = nnew(p, TN_FIELD, pos, line);
	split_ident(p, n, s + 1, len - 1); /* drop the leading '.' */
	return n;
}

static struct tn *new_variable(struct parser *p, uint32_t pos, uint32_t line, const char *s, size_t len)
{
	struct tn *n = nnew(p, TN_VARIABLE, pos, line);
	split_ident(p, n, s, len);
	return n;
}

static void push_var(struct parser *p, const char *s, size_t n)
{
	if (p->nvars == p->capvars && OB_GROW(p->vars, p->capvars, p->nvars + 1, 0) != OB_GROW_OK)
		pnomem(p);
	p->vars[p->nvars].p = s;
	p->vars[p->nvars].n = n;
	p->nvars++;
}

static struct tn *use_var(struct parser *p, const struct tok *t)
{
	struct tn *v = new_variable(p, t->pos, t->line, t->val, t->n);
	for (size_t i = p->var_base; i < p->nvars; i++)
		if (p->vars[i].n == v->ident[0].n && memcmp(p->vars[i].p, v->ident[0].p, v->ident[0].n) == 0)
			return v;
	perr(p, "undefined variable \"%.*s\"", (int)v->ident[0].n, v->ident[0].p);
}

static bool has_function(const struct parser *p, const char *s, size_t n)
{
	static const char *const builtins[] = {"and", "call", "html", "index", "slice", "js", "len", "not", "or",
					       "print", "printf", "println", "urlquery", "eq", "ge", "gt", "le",
					       "lt", "ne"};
	static const char *const ollama[] = {"json", "currentDate", "yesterdayDate", "toTypeScriptType"};
	for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
		if (strlen(builtins[i]) == n && memcmp(builtins[i], s, n) == 0)
			return true;
	if (p->funcs_ollama)
		for (size_t i = 0; i < sizeof ollama / sizeof ollama[0]; i++)
			if (strlen(ollama[i]) == n && memcmp(ollama[i], s, n) == 0)
				return true;
	return false;
}

/* strconv.Unquote for "..." and `...` literals; the result goes to the arena. */
static bool unquote(struct parser *p, const struct tok *t, const char **out, size_t *outn)
{
	const char *s = t->val;
	size_t n = t->n;
	if (n < 2)
		return false;
	if (s[0] == '`') {
		if (s[n - 1] != '`')
			return false;
		/* carriage returns are dropped from raw strings */
		char *o = tpl_arena_alloc(p->a, n);
		if (!o)
			pnomem(p);
		size_t k = 0;
		for (size_t i = 1; i + 1 < n; i++)
			if (s[i] != '\r')
				o[k++] = s[i];
		o[k] = 0;
		*out = o;
		*outn = k;
		return true;
	}
	if (s[0] != '"' || s[n - 1] != '"')
		return false;
	char *o = tpl_arena_alloc(p->a, n * 2 + 1);
	if (!o)
		pnomem(p);
	size_t k = 0;
	for (size_t i = 1; i + 1 < n;) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\n')
			return false;
		if (c != '\\') {
			o[k++] = (char)c;
			i++;
			continue;
		}
		if (i + 2 >= n)
			return false;
		char e = s[i + 1];
		i += 2;
		uint32_t r;
		switch (e) {
		case 'a': o[k++] = '\a'; continue;
		case 'b': o[k++] = '\b'; continue;
		case 'f': o[k++] = '\f'; continue;
		case 'n': o[k++] = '\n'; continue;
		case 'r': o[k++] = '\r'; continue;
		case 't': o[k++] = '\t'; continue;
		case 'v': o[k++] = '\v'; continue;
		case '\\': o[k++] = '\\'; continue;
		case '"': o[k++] = '"'; continue;
		case 'x':
		case 'u':
		case 'U': {
			int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
			if (i + (size_t)digits > n - 1)
				return false;
			r = 0;
			for (int d = 0; d < digits; d++) {
				char h = s[i + (size_t)d];
				int v = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
					: h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
				if (v < 0)
					return false;
				r = r * 16 + (uint32_t)v;
			}
			i += (size_t)digits;
			if (e == 'x') {
				o[k++] = (char)r;
				continue;
			}
			if (r > 0x10ffff || (r >= 0xd800 && r <= 0xdfff))
				return false;
			break;
		}
		case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': {
			if (i + 2 > n - 1)
				return false;
			r = (uint32_t)(e - '0');
			for (int d = 0; d < 2; d++) {
				char h = s[i + (size_t)d];
				if (h < '0' || h > '7')
					return false;
				r = r * 8 + (uint32_t)(h - '0');
			}
			if (r > 255)
				return false;
			i += 2;
			o[k++] = (char)r;
			continue;
		}
		default:
			return false;
		}
		k += ob_utf8_encode(o + k, r);
	}
	o[k] = 0;
	*out = o;
	*outn = k;
	return true;
}

/* strconv.ParseUint(s, 0, 64): base prefixes 0b/0o/0x, a leading 0 for octal, underscores per Go syntax. */
static bool parse_uint_base0(const char *s0, size_t n0, uint64_t *out)
{
	const char *s = s0;
	size_t n = n0;
	if (n == 0)
		return false;
	int base = 10;
	if (s[0] == '0') {
		if (n >= 3 && (s[1] == 'b' || s[1] == 'B'))
			base = 2, s += 2, n -= 2;
		else if (n >= 3 && (s[1] == 'o' || s[1] == 'O'))
			base = 8, s += 2, n -= 2;
		else if (n >= 3 && (s[1] == 'x' || s[1] == 'X'))
			base = 16, s += 2, n -= 2;
		else
			base = 8, s += 1, n -= 1;
	}
	uint64_t v = 0;
	bool underscores = false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '_') {
			underscores = true;
			continue;
		}
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'z' ? c - 'a' + 10
			: c >= 'A' && c <= 'Z' ? c - 'A' + 10 : 99;
		if (d >= base)
			return false;
		if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
			return false; /* out of range */
		v = v * (uint64_t)base + (uint64_t)d;
	}
	if (underscores && !ob_go_underscore_ok(s0, n0))
		return false;
	*out = v;
	return true;
}

/* strconv.ParseFloat(s, 64) for the literals the lexer lets through: decimal or hex (with a p exponent). */
static bool parse_float_go(const char *s, size_t n, double *out)
{
	if (n == 0 || n > 200 || !ob_go_underscore_ok(s, n))
		return false;
	char buf[256];
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] != '_')
			buf[k++] = s[i];
	buf[k] = 0;
	/* shape check: [sign] (decimal mantissa [e exp] | 0x hex mantissa p exp) */
	size_t i = 0;
	if (buf[i] == '+' || buf[i] == '-')
		i++;
	bool hex = buf[i] == '0' && (buf[i + 1] == 'x' || buf[i + 1] == 'X');
	if (hex)
		i += 2;
	size_t digits = 0;
	while (hex ? isxdigit((unsigned char)buf[i]) : isdigit((unsigned char)buf[i]))
		i++, digits++;
	if (buf[i] == '.') {
		i++;
		while (hex ? isxdigit((unsigned char)buf[i]) : isdigit((unsigned char)buf[i]))
			i++, digits++;
	}
	if (digits == 0)
		return false;
	if (hex) {
		if (buf[i] != 'p' && buf[i] != 'P')
			return false;
		i++;
	} else if (buf[i] == 'e' || buf[i] == 'E')
		i++;
	else if (buf[i] != 0)
		return false;
	if (buf[i - 1] == 'e' || buf[i - 1] == 'E' || buf[i - 1] == 'p' || buf[i - 1] == 'P') {
		if (buf[i] == '+' || buf[i] == '-')
			i++;
		if (!isdigit((unsigned char)buf[i]))
			return false;
		while (isdigit((unsigned char)buf[i]))
			i++;
	}
	if (buf[i] != 0)
		return false;
	errno = 0;
	char *end;
	double v = strtod(buf, &end);
	if (*end)
		return false;
	if (errno == ERANGE && isinf(v))
		return false;
	*out = v;
	return true;
}

static struct tn *new_number(struct parser *p, const struct tok *t)
{
	struct tn *n = nnew(p, TN_NUMBER, t->pos, t->line);
	n->s = t->val;
	n->n = t->n;
	if (t->type == TK_COMPLEX)
		perr(p, "complex constants are not supported: %.*s", (int)t->n, t->val);
	if (t->type == TK_CHARCONST) {
		/* 'x' — strconv.UnquoteChar of the body, which must be used up exactly */
		const char *s = t->val + 1;
		size_t len = t->n - 2, used = 0;
		int64_t r = -1;
		if (t->n >= 3 && s[0] == '\\' && len >= 2) {
			char e = s[1];
			used = 2;
			switch (e) {
			case 'a': r = '\a'; break;
			case 'b': r = '\b'; break;
			case 'f': r = '\f'; break;
			case 'n': r = '\n'; break;
			case 'r': r = '\r'; break;
			case 't': r = '\t'; break;
			case 'v': r = '\v'; break;
			case '\\': r = '\\'; break;
			case '\'': r = '\''; break;
			case 'x':
			case 'u':
			case 'U': {
				size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
				if (len < 2 + digits)
					break;
				int64_t v = 0;
				for (size_t k = 0; k < digits; k++) {
					char h = s[2 + k];
					int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
						: h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
					if (d < 0) {
						v = -1;
						break;
					}
					v = v * 16 + d;
				}
				if (v < 0 || (e != 'x' && (v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))))
					break;
				r = v;
				used = 2 + digits;
				break;
			}
			default:
				if (e >= '0' && e <= '7' && len >= 4) {
					int64_t v = 0;
					for (size_t k = 0; k < 3; k++) {
						char h = s[1 + k];
						if (h < '0' || h > '7') {
							v = -1;
							break;
						}
						v = v * 8 + (h - '0');
					}
					if (v >= 0 && v <= 255) {
						r = v;
						used = 4;
					}
				}
			}
		} else if (len >= 1 && s[0] != '\'') {
			size_t w;
			int32_t rr = rune_at(s, len, 0, &w);
			r = rr;
			used = w;
		}
		if (r < 0 || used != len)
			perr(p, "malformed character constant: %.*s", (int)t->n, t->val);
		n->is_char = true;
		n->is_int = n->is_uint = n->is_float = true;
		n->i64 = r;
		n->u64 = (uint64_t)r;
		n->f64 = (double)r;
		return n;
	}
	const char *s = t->val;
	size_t len = t->n;
	/* integers: ParseUint then ParseInt, both with base 0 */
	uint64_t u;
	if (parse_uint_base0(s, len, &u)) {
		n->is_uint = true;
		n->u64 = u;
	}
	bool neg = len > 0 && s[0] == '-';
	bool sign = len > 0 && (s[0] == '-' || s[0] == '+');
	if (parse_uint_base0(s + sign, len - sign, &u)) {
		if (neg && u <= (uint64_t)INT64_MAX + 1) {
			n->is_int = true;
			n->i64 = u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u;
		} else if (!neg && u <= (uint64_t)INT64_MAX) {
			n->is_int = true;
			n->i64 = (int64_t)u;
		}
		if (n->is_int && n->i64 == 0) {
			n->is_uint = true; /* -0 */
			n->u64 = 0;
		}
	}
	if (n->is_int) {
		n->is_float = true;
		n->f64 = (double)n->i64;
	} else if (n->is_uint) {
		n->is_float = true;
		n->f64 = (double)n->u64;
	} else {
		double f;
		if (parse_float_go(s, len, &f)) {
			if (!memchr(s, '.', len) && !memchr(s, 'e', len) && !memchr(s, 'E', len) &&
			    !memchr(s, 'p', len) && !memchr(s, 'P', len))
				perr(p, "integer overflow: \"%.*s\"", (int)len, s);
			n->is_float = true;
			n->f64 = f;
			if (f >= -9.223372036854775808e18 && f < 9.223372036854775808e18 && (double)(int64_t)f == f) {
				n->is_int = true;
				n->i64 = (int64_t)f;
			}
			if (f >= 0 && f < 1.8446744073709551616e19 && (double)(uint64_t)f == f) {
				n->is_uint = true;
				n->u64 = (uint64_t)f;
			}
		}
	}
	if (!n->is_int && !n->is_uint && !n->is_float)
		perr(p, "illegal number syntax: \"%.*s\"", (int)len, s);
	return n;
}

static struct tn *pipeline(struct parser *p, const char *context, enum tk end);

static void depth_in(struct parser *p)
{
	if (++p->depth > MF_TPL_MAX_PARSE_DEPTH)
		perr(p, "max nesting depth of %d exceeded", MF_TPL_MAX_PARSE_DEPTH);
}

static struct tn *term(struct parser *p)
{
	const struct tok *t = next_non_space(p);
	switch (t->type) {
	case TK_IDENT: {
		if (!has_function(p, t->val, t->n))
			perr(p, "function \"%.*s\" not defined", (int)t->n, t->val);
		struct tn *n = nnew(p, TN_IDENTIFIER, t->pos, t->line);
		n->s = t->val;
		n->n = t->n;
		return n;
	}
	case TK_DOT:
		return nnew(p, TN_DOT, t->pos, t->line);
	case TK_NIL:
		return nnew(p, TN_NIL, t->pos, t->line);
	case TK_VARIABLE:
		return use_var(p, t);
	case TK_FIELD:
		return new_field(p, t->pos, t->line, t->val, t->n);
	case TK_BOOL: {
		struct tn *n = nnew(p, TN_BOOL, t->pos, t->line);
		n->bval = t->n == 4;
		return n;
	}
	case TK_CHARCONST:
	case TK_COMPLEX:
	case TK_NUMBER:
		return new_number(p, t);
	case TK_LPAREN: {
		depth_in(p);
		struct tn *n = pipeline(p, "parenthesized pipeline", TK_RPAREN);
		p->depth--;
		return n;
	}
	case TK_STRING:
	case TK_RAWSTRING: {
		struct tn *n = nnew(p, TN_STRING, t->pos, t->line);
		if (!unquote(p, t, &n->s, &n->n))
			perr(p, "invalid syntax");
		n->quoted = t->val;
		n->quoted_n = t->n;
		return n;
	}
	default:
		backup(p);
		return NULL;
	}
}

static void node_str_to(struct parser *p, const struct tn *n, const char **s, size_t *len)
{
	struct ob_buf b;
	ob_buf_init(&b, 0);
	tpl_node_string(&b, n);
	if (b.failed)
		pnomem(p);
	*s = tpl_arena_strdup(p->a, b.p ? b.p : "", b.len);
	*len = b.len;
	ob_buf_free(&b);
	if (!*s)
		pnomem(p);
}

static struct tn *operand(struct parser *p)
{
	struct tn *node = term(p);
	if (!node)
		return NULL;
	if (peek(p)->type == TK_FIELD) {
		/* a chain: term.Field1.Field2 */
		struct tn *chain = nnew(p, TN_CHAIN, peek(p)->pos, peek(p)->line);
		chain->node = node;
		size_t count = 0, cap = 4;
		struct tpl_sv *f = tpl_arena_alloc(p->a, cap * sizeof *f);
		if (!f)
			pnomem(p);
		while (peek(p)->type == TK_FIELD) {
			const struct tok *t = next(p);
			if (count == cap) {
				struct tpl_sv *g = tpl_arena_alloc(p->a, cap * 2 * sizeof *g);
				if (!g)
					pnomem(p);
				memcpy(g, f, count * sizeof *g);
				f = g;
				cap *= 2;
			}
			/* a field token may hold several names when lexed from ".a.b"? no: one per token */
			f[count].p = t->val + 1;
			f[count].n = t->n - 1;
			count++;
		}
		chain->ident = f;
		chain->nident = count;
		switch (node->type) {
		case TN_FIELD:
		case TN_VARIABLE: {
			/* put the fields on the original node, as Go does */
			const char *s;
			size_t len;
			node_str_to(p, chain, &s, &len);
			return node->type == TN_FIELD ? new_field(p, chain->pos, chain->line, s, len)
						      : new_variable(p, chain->pos, chain->line, s, len);
		}
		case TN_BOOL:
		case TN_STRING:
		case TN_NUMBER:
		case TN_NIL:
		case TN_DOT: {
			struct ob_buf b;
			ob_buf_init(&b, 0);
			tpl_node_string(&b, node);
			char m[200];
			snprintf(m, sizeof m, "%s", b.p ? b.p : "");
			ob_buf_free(&b);
			/* %q of the node string */
			struct ob_buf q;
			ob_buf_init(&q, 0);
			ob_buf_putc(&q, '"');
			for (const char *c = m; *c; c++) {
				if (*c == '"' || *c == '\\')
					ob_buf_putc(&q, '\\');
				ob_buf_putc(&q, *c);
			}
			ob_buf_putc(&q, '"');
			snprintf(m, sizeof m, "%s", q.p ? q.p : "");
			ob_buf_free(&q);
			perr(p, "unexpected . after term %s", m);
		}
		default:
			return chain;
		}
	}
	return node;
}

static struct tn *command(struct parser *p)
{
	const struct tok *first = peek_non_space(p);
	struct tn *cmd = nnew(p, TN_COMMAND, first->pos, first->line);
	for (;;) {
		peek_non_space(p);
		struct tn *op = operand(p);
		if (op)
			nadd(p, cmd, op);
		const struct tok *t = next(p);
		switch (t->type) {
		case TK_SPACE:
			continue;
		case TK_RDELIM:
		case TK_RPAREN:
			backup(p);
			break;
		case TK_PIPE:
			break;
		default:
			unexpected(p, t, "operand");
		}
		break;
	}
	if (cmd->nkids == 0)
		perr(p, "empty command");
	return cmd;
}

static void check_pipeline(struct parser *p, struct tn *pipe, const char *context)
{
	if (pipe->nkids == 0)
		perr(p, "missing value for %s", context);
	for (size_t i = 1; i < pipe->nkids; i++) {
		switch (pipe->kids[i]->kids[0]->type) {
		case TN_BOOL:
		case TN_DOT:
		case TN_NIL:
		case TN_NUMBER:
		case TN_STRING:
			perr(p, "non executable command in pipeline stage %zu", i + 1);
		default:
			break;
		}
	}
}

static void add_decl(struct parser *p, struct tn *pipe, struct tn *v)
{
	struct tn **d = tpl_arena_alloc(p->a, (pipe->ndecl + 1) * sizeof *d);
	if (!d)
		pnomem(p);
	if (pipe->ndecl)
		memcpy(d, pipe->decl, pipe->ndecl * sizeof *d);
	d[pipe->ndecl++] = v;
	pipe->decl = d;
}

static struct tn *pipeline(struct parser *p, const char *context, enum tk end)
{
	const struct tok *first = peek_non_space(p);
	struct tn *pipe = nnew(p, TN_PIPE, first->pos, first->line);
decls:;
	const struct tok *v = peek_non_space(p);
	if (v->type == TK_VARIABLE) {
		next(p);
		size_t after_var = p->i; /* the token adjacent to the variable */
		const struct tok *adjacent = peek(p);
		const struct tok *nt = peek_non_space(p);
		if (nt->type == TK_ASSIGN || nt->type == TK_DECLARE) {
			pipe->is_assign = nt->type == TK_ASSIGN;
			next_non_space(p);
			add_decl(p, pipe, new_variable(p, v->pos, v->line, v->val, v->n));
			push_var(p, v->val, v->n);
		} else if (nt->type == TK_CHAR && nt->n == 1 && nt->val[0] == ',') {
			next_non_space(p);
			add_decl(p, pipe, new_variable(p, v->pos, v->line, v->val, v->n));
			push_var(p, v->val, v->n);
			if (strcmp(context, "range") == 0 && pipe->ndecl < 2) {
				enum tk ty = peek_non_space(p)->type;
				if (ty == TK_VARIABLE || ty == TK_RDELIM || ty == TK_RPAREN)
					goto decls;
				perr(p, "range can only initialize variables");
			}
			perr(p, "too many declarations in %s", context);
		} else if (adjacent->type == TK_SPACE) {
			p->i = after_var - 1; /* back to the variable */
		} else {
			p->i = after_var - 1;
		}
	}
	for (;;) {
		const struct tok *t = next_non_space(p);
		if (t->type == end) {
			check_pipeline(p, pipe, context);
			return pipe;
		}
		switch (t->type) {
		case TK_BOOL:
		case TK_CHARCONST:
		case TK_COMPLEX:
		case TK_DOT:
		case TK_FIELD:
		case TK_IDENT:
		case TK_NUMBER:
		case TK_NIL:
		case TK_RAWSTRING:
		case TK_STRING:
		case TK_VARIABLE:
		case TK_LPAREN:
			backup(p);
			nadd(p, pipe, command(p));
			break;
		default:
			unexpected(p, t, context);
		}
	}
}

static struct tn *text_or_action(struct parser *p);

static bool is_end(const struct tn *n)
{
	return n->type == TN_END_MARK;
}

static bool is_else(const struct tn *n)
{
	return n->type == TN_ELSE_MARK;
}

/* Parses items until {{end}} or {{else}}; returns the list and stores the terminating marker in *stop. */
static struct tn *item_list(struct parser *p, struct tn **stop)
{
	const struct tok *pk = peek_non_space(p);
	struct tn *list = nnew(p, TN_LIST, pk->pos, pk->line);
	while (peek_non_space(p)->type != TK_EOF) {
		struct tn *n = text_or_action(p);
		if (is_end(n) || is_else(n)) {
			*stop = n;
			return list;
		}
		nadd(p, list, n);
	}
	perr(p, "unexpected EOF");
}

static struct tn *parse_control(struct parser *p, const char *context, enum tn_type type)
{
	size_t saved_vars = p->nvars;
	depth_in(p);
	struct tn *pipe = pipeline(p, context, TK_RDELIM);
	struct tn *node = nnew(p, type, pipe->pos, pipe->line);
	node->pipe = pipe;
	bool is_range = type == TN_RANGE;
	if (is_range)
		p->range_depth++;
	struct tn *stop = NULL;
	node->list = item_list(p, &stop);
	if (is_range)
		p->range_depth--;
	if (is_else(stop)) {
		enum tk pk = peek(p)->type;
		if (type == TN_IF && pk == TK_IF) {
			next(p);
			struct tn *el = nnew(p, TN_LIST, stop->pos, stop->line);
			nadd(p, el, parse_control(p, "if", TN_IF));
			node->else_list = el;
		} else if (type == TN_WITH && pk == TK_WITH) {
			next(p);
			struct tn *el = nnew(p, TN_LIST, stop->pos, stop->line);
			nadd(p, el, parse_control(p, "with", TN_WITH));
			node->else_list = el;
		} else {
			node->else_list = item_list(p, &stop);
			if (!is_end(stop)) {
				perr(p, "expected end; found {{else}}");
			}
		}
	}
	p->nvars = saved_vars;
	p->depth--;
	return node;
}

static void add_tree(struct parser *p, const char *name, size_t n, struct tn *root)
{
	struct mf_tpl *t = p->t;
	for (size_t i = 0; i < t->ntrees; i++) {
		if (strlen(t->trees[i].name) == n && memcmp(t->trees[i].name, name, n) == 0) {
			/* Go: replace an empty definition; two non-empty ones are an error */
			bool old_empty = true, new_empty = true;
			for (size_t k = 0; k < t->trees[i].root->nkids; k++) {
				const struct tn *c = t->trees[i].root->kids[k];
				if (!(c->type == TN_TEXT && space_run(c->s, c->n) == c->n))
					old_empty = false;
			}
			for (size_t k = 0; k < root->nkids; k++) {
				const struct tn *c = root->kids[k];
				if (!(c->type == TN_TEXT && space_run(c->s, c->n) == c->n))
					new_empty = false;
			}
			if (old_empty) {
				t->trees[i].root = root;
				return;
			}
			if (!new_empty)
				perr(p, "template: multiple definition of template \"%.*s\"", (int)n, name);
			return;
		}
	}
	if (t->ntrees == t->captrees) {
		size_t cap = t->captrees ? t->captrees * 2 : 4;
		struct tpl_tree *tr = tpl_arena_alloc(p->a, cap * sizeof *tr);
		if (!tr)
			pnomem(p);
		if (t->ntrees)
			memcpy(tr, t->trees, t->ntrees * sizeof *tr);
		t->trees = tr;
		t->captrees = cap;
	}
	t->trees[t->ntrees].name = tpl_arena_strdup(p->a, name, n);
	if (!t->trees[t->ntrees].name)
		pnomem(p);
	t->trees[t->ntrees].root = root;
	t->ntrees++;
}

/* Parses the body of a {{define}} or {{block}} as its own tree (fresh variable scope). */
static struct tn *parse_sub_tree(struct parser *p, const char *context)
{
	size_t saved_n = p->nvars, saved_base = p->var_base;
	int saved_range = p->range_depth;
	p->var_base = p->nvars;
	p->range_depth = 0;
	push_var(p, "$", 1);
	struct tn *stop = NULL;
	struct tn *root = item_list(p, &stop);
	p->nvars = saved_n;
	p->var_base = saved_base;
	p->range_depth = saved_range;
	if (!is_end(stop))
		perr(p, "unexpected {{else}} in %s", context);
	return root;
}

static void template_name(struct parser *p, const struct tok *t, const char *context, const char **s, size_t *n)
{
	if (t->type != TK_STRING && t->type != TK_RAWSTRING)
		unexpected(p, t, context);
	if (!unquote(p, t, s, n))
		perr(p, "invalid syntax");
}

static struct tn *action(struct parser *p)
{
	const struct tok *t = next_non_space(p);
	switch (t->type) {
	case TK_BLOCK: {
		const struct tok *nt = next_non_space(p);
		const char *name;
		size_t nn;
		template_name(p, nt, "block clause", &name, &nn);
		struct tn *pipe = pipeline(p, "block clause", TK_RDELIM);
		depth_in(p);
		struct tn *root = parse_sub_tree(p, "block clause");
		p->depth--;
		add_tree(p, name, nn, root);
		struct tn *n = nnew(p, TN_TEMPLATE, nt->pos, nt->line);
		n->s = name;
		n->n = nn;
		n->pipe = pipe;
		return n;
	}
	case TK_BREAK:
	case TK_CONTINUE: {
		const struct tok *nt = next_non_space(p);
		bool brk = t->type == TK_BREAK;
		if (nt->type != TK_RDELIM)
			unexpected(p, nt, brk ? "{{break}}" : "{{continue}}");
		if (p->range_depth == 0)
			perr(p, brk ? "{{break}} outside {{range}}" : "{{continue}} outside {{range}}");
		return nnew(p, brk ? TN_BREAK : TN_CONTINUE, t->pos, t->line);
	}
	case TK_ELSE: {
		const struct tok *pk = peek_non_space(p);
		if (pk->type == TK_IF || pk->type == TK_WITH)
			return nnew(p, TN_ELSE_MARK, pk->pos, pk->line);
		const struct tok *r = expect(p, TK_RDELIM, "else");
		return nnew(p, TN_ELSE_MARK, r->pos, r->line);
	}
	case TK_END: {
		const struct tok *r = expect(p, TK_RDELIM, "end");
		return nnew(p, TN_END_MARK, r->pos, r->line);
	}
	case TK_IF:
		return parse_control(p, "if", TN_IF);
	case TK_RANGE:
		return parse_control(p, "range", TN_RANGE);
	case TK_WITH:
		return parse_control(p, "with", TN_WITH);
	case TK_TEMPLATE: {
		const struct tok *nt = next_non_space(p);
		const char *name;
		size_t nn;
		template_name(p, nt, "template clause", &name, &nn);
		struct tn *pipe = NULL;
		if (next_non_space(p)->type != TK_RDELIM) {
			backup(p);
			pipe = pipeline(p, "template clause", TK_RDELIM);
		}
		struct tn *n = nnew(p, TN_TEMPLATE, nt->pos, nt->line);
		n->s = name;
		n->n = nn;
		n->pipe = pipe;
		return n;
	}
	default:
		break;
	}
	backup(p);
	const struct tok *pk = peek(p);
	struct tn *n = nnew(p, TN_ACTION, pk->pos, pk->line);
	n->pipe = pipeline(p, "command", TK_RDELIM);
	return n;
}

static struct tn *text_or_action(struct parser *p)
{
	const struct tok *t = next_non_space(p);
	switch (t->type) {
	case TK_TEXT: {
		struct tn *n = nnew(p, TN_TEXT, t->pos, t->line);
		n->s = t->val;
		n->n = t->n;
		return n;
	}
	case TK_LDELIM: {
		int saved = p->action_line;
		p->action_line = (int)t->line;
		struct tn *n = action(p);
		p->action_line = saved;
		return n;
	}
	default:
		unexpected(p, t, "input");
	}
}

int tpl_parse(struct mf_tpl *t, bool funcs_ollama, struct mf_tpl_error *err)
{
	struct lexer l;
	memset(&l, 0, sizeof l);
	l.src = t->src;
	l.len = t->src_len;
	l.line = l.start_line = 1;
	if (!lex_all(&l) && l.nomem) {
		free(l.toks);
		if (err) {
			err->code = MF_TPL_ERR_NOMEM;
			err->line = err->col = 0;
			snprintf(err->msg, sizeof err->msg, "template: out of memory");
		}
		return MF_TPL_ERR_NOMEM;
	}
	struct parser p;
	memset(&p, 0, sizeof p);
	p.t = t;
	p.a = &t->arena;
	p.toks = l.toks;
	p.ntoks = l.ntoks;
	p.funcs_ollama = funcs_ollama;
	p.err = err;
	if (setjmp(p.jb)) {
		free(p.vars);
		free(l.toks);
		return p.code;
	}
	push_var(&p, "$", 1);
	/* the main tree goes first so that it is trees[0] */
	struct tn *root = nnew(&p, TN_LIST, peek(&p)->pos, peek(&p)->line);
	add_tree(&p, "", 0, root);
	size_t main_idx = 0;
	while (peek(&p)->type != TK_EOF) {
		if (peek(&p)->type == TK_LDELIM) {
			size_t save = p.i;
			const struct tok *delim = next(&p);
			if (next_non_space(&p)->type == TK_DEFINE) {
				int saved_line = p.action_line;
				p.action_line = (int)delim->line;
				const struct tok *nt = next_non_space(&p);
				if (nt->type != TK_STRING && nt->type != TK_RAWSTRING)
					unexpected(&p, nt, "define clause");
				const char *name;
				size_t nn;
				if (!unquote(&p, nt, &name, &nn))
					perr(&p, "invalid syntax");
				expect(&p, TK_RDELIM, "define clause");
				depth_in(&p);
				struct tn *sub = parse_sub_tree(&p, "define clause");
				p.depth--;
				p.action_line = saved_line;
				add_tree(&p, name, nn, sub);
				continue;
			}
			p.i = save;
		}
		struct tn *n = text_or_action(&p);
		if (is_end(n) || is_else(n))
			perr(&p, "unexpected %s", is_end(n) ? "{{end}}" : "{{else}}");
		nadd(&p, t->trees[main_idx].root, n);
	}
	free(p.vars);
	free(l.toks);
	return MF_TPL_OK;
}

/* ------------------------------------------------------------------------------------------ Node.String */

void tpl_location(const char *src, size_t pos, int *line, int *col)
{
	int ln = 1;
	size_t last_nl = (size_t)-1;
	for (size_t i = 0; i < pos && src[i]; i++)
		if (src[i] == '\n') {
			ln++;
			last_nl = i;
		}
	*line = ln;
	*col = last_nl == (size_t)-1 ? (int)pos : (int)(pos - last_nl - 1);
}

static void idents(struct ob_buf *b, const struct tpl_sv *id, size_t n, bool leading_dot)
{
	for (size_t i = 0; i < n; i++) {
		if (i > 0 || leading_dot)
			ob_buf_putc(b, '.');
		ob_buf_append(b, id[i].p, id[i].n);
	}
}

void tpl_node_string(struct ob_buf *b, const struct tn *n)
{
	if (!n)
		return;
	switch (n->type) {
	case TN_TEXT:
		ob_buf_append(b, n->s, n->n);
		break;
	case TN_ACTION:
		ob_buf_puts(b, "{{");
		tpl_node_string(b, n->pipe);
		ob_buf_puts(b, "}}");
		break;
	case TN_BOOL:
		ob_buf_puts(b, n->bval ? "true" : "false");
		break;
	case TN_CHAIN:
		if (n->node->type == TN_PIPE) {
			ob_buf_putc(b, '(');
			tpl_node_string(b, n->node);
			ob_buf_putc(b, ')');
		} else
			tpl_node_string(b, n->node);
		idents(b, n->ident, n->nident, true);
		break;
	case TN_COMMAND:
		for (size_t i = 0; i < n->nkids; i++) {
			if (i > 0)
				ob_buf_putc(b, ' ');
			if (n->kids[i]->type == TN_PIPE) {
				ob_buf_putc(b, '(');
				tpl_node_string(b, n->kids[i]);
				ob_buf_putc(b, ')');
			} else
				tpl_node_string(b, n->kids[i]);
		}
		break;
	case TN_DOT:
		ob_buf_putc(b, '.');
		break;
	case TN_FIELD:
		idents(b, n->ident, n->nident, true);
		break;
	case TN_IDENTIFIER:
		ob_buf_append(b, n->s, n->n);
		break;
	case TN_LIST:
		for (size_t i = 0; i < n->nkids; i++)
			tpl_node_string(b, n->kids[i]);
		break;
	case TN_NIL:
		ob_buf_puts(b, "nil");
		break;
	case TN_NUMBER:
		ob_buf_append(b, n->s, n->n);
		break;
	case TN_PIPE:
		if (n->ndecl) {
			for (size_t i = 0; i < n->ndecl; i++) {
				if (i > 0)
					ob_buf_puts(b, ", ");
				tpl_node_string(b, n->decl[i]);
			}
			ob_buf_puts(b, n->is_assign ? " = " : " := ");
		}
		for (size_t i = 0; i < n->nkids; i++) {
			if (i > 0)
				ob_buf_puts(b, " | ");
			tpl_node_string(b, n->kids[i]);
		}
		break;
	case TN_IF:
	case TN_RANGE:
	case TN_WITH:
		ob_buf_puts(b, n->type == TN_IF ? "{{if " : n->type == TN_RANGE ? "{{range " : "{{with ");
		tpl_node_string(b, n->pipe);
		ob_buf_puts(b, "}}");
		tpl_node_string(b, n->list);
		if (n->else_list) {
			ob_buf_puts(b, "{{else}}");
			tpl_node_string(b, n->else_list);
		}
		ob_buf_puts(b, "{{end}}");
		break;
	case TN_STRING:
		ob_buf_append(b, n->quoted, n->quoted_n);
		break;
	case TN_TEMPLATE:
		ob_buf_puts(b, "{{template \"");
		ob_buf_append(b, n->s, n->n);
		ob_buf_putc(b, '"');
		if (n->pipe) {
			ob_buf_putc(b, ' ');
			tpl_node_string(b, n->pipe);
		}
		ob_buf_puts(b, "}}");
		break;
	case TN_VARIABLE:
		idents(b, n->ident, n->nident, false);
		break;
	case TN_BREAK:
		ob_buf_puts(b, "{{break}}");
		break;
	case TN_CONTINUE:
		ob_buf_puts(b, "{{continue}}");
		break;
	case TN_END_MARK:
		ob_buf_puts(b, "{{end}}");
		break;
	case TN_ELSE_MARK:
		ob_buf_puts(b, "{{else}}");
		break;
	}
}
