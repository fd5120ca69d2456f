/* modelfile/jinja/lex.c — the Jinja lexer with jinja2's whitespace rules as transformers configures them.
 *
 * Mirrors jinja2's Lexer.tokeniter: newlines normalised to \n and one trailing newline dropped; `{%-`/`-%}`
 * strip all whitespace before/after a tag; trim_blocks drops the first newline after a block or comment tag;
 * lstrip_blocks drops the spaces and tabs between a line's start and a block or comment tag (not `{{`), unless
 * the tag says `+`; `{% raw %}` passes text through. Tag ends are only recognised while brackets are
 * balanced, as in jinja2. Compiled only as part of modelfile/jinja/jinja.c.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "modelfile/jinja/internal.h"

#define JJ_MAX_TOKENS (4u << 20)

struct jj_lex {
	struct mf_jinja *t;
	struct jj_fail *f;
	const char *src;
	size_t len, pos;
	int line;
	struct jj_lexer_out *out;
	char balance[MF_JINJA_MAX_NESTING];
	int nbalance;
};

static struct jj_token *lex_push(struct jj_lex *L, int type, int line)
{
	struct jj_lexer_out *o = L->out;
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 256;
		if (cap > JJ_MAX_TOKENS)
			jj_fail(L->f, MF_JINJA_ELIMIT, "LimitError", "template too large: more than %u tokens",
				JJ_MAX_TOKENS);
		struct jj_token *nt = jj_alloc(&L->t->arena, L->f, cap * sizeof *nt);
		if (o->n)
			jj_memcpy(nt, o->toks, o->n * sizeof *nt);
		o->toks = nt;
		o->cap = cap;
	}
	struct jj_token *tk = &o->toks[o->n++];
	memset(tk, 0, sizeof *tk);
	tk->type = (uint8_t)type;
	tk->line = line;
	return tk;
}

static int count_nl(const char *s, size_t n)
{
	int c = 0;
	for (const char *p = s, *end = s + n; (p = memchr(p, '\n', (size_t)(end - p))); p++)
		c++;
	return c;
}

/* Length of the run of Python whitespace (re's \s) at s[0..n). */
static size_t ws_len(const char *s, size_t n)
{
	return jj_lspace_len(s, n);
}

/* Emits the data before a tag, applying the tag's `-` or lstrip_blocks. */
static void lex_data(struct jj_lex *L, const char *text, size_t n, char sign, bool lstrip_ok, bool line_starting)
{
	int line = L->line;
	L->line += count_nl(text, n);
	if (sign == '-') {
		n = jj_rstrip_len(text, n);
	} else if (sign != '+' && lstrip_ok) {
		size_t l_pos = n;
		while (l_pos > 0 && text[l_pos - 1] != '\n')
			l_pos--;
		if ((l_pos > 0 || line_starting) && l_pos < n && ws_len(text + l_pos, n - l_pos) == n - l_pos)
			n = l_pos;
	}
	if (n > 0) {
		struct jj_token *tk = lex_push(L, JJ_T_DATA, line);
		tk->s = text;
		tk->len = n;
	}
}

static bool at(const struct jj_lex *L, size_t p, const char *lit)
{
	size_t n = strlen(lit);
	return p <= L->len && L->len - p >= n && memcmp(L->src + p, lit, n) == 0;
}

/* Matches a tag end at p: "+E", "-E" then whitespace, or "E" then (trim) one newline. Returns the end
 * position of the match or 0. */
static size_t match_end(const struct jj_lex *L, size_t p, const char *end, bool trim)
{
	size_t n = strlen(end);
	if (p < L->len && L->src[p] == '+' && at(L, p + 1, end))
		return p + 1 + n;
	if (p < L->len && L->src[p] == '-' && at(L, p + 1, end)) {
		size_t q = p + 1 + n;
		return q + ws_len(L->src + q, L->len - q);
	}
	if (at(L, p, end)) {
		size_t q = p + n;
		if (trim && q < L->len && L->src[q] == '\n')
			q++;
		return q;
	}
	return 0;
}

static bool is_name_start(unsigned char c)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}

static bool is_name_char(unsigned char c)
{
	return is_name_start(c) || (c >= '0' && c <= '9');
}

static bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

/* Digits with single underscores between them ((\d+_)*\d+), from p; returns the end or p when none. */
static size_t scan_digits(const struct jj_lex *L, size_t p)
{
	size_t q = p;
	if (q >= L->len || !is_digit((unsigned char)L->src[q]))
		return p;
	while (q < L->len && is_digit((unsigned char)L->src[q]))
		q++;
	while (q + 1 < L->len && L->src[q] == '_' && is_digit((unsigned char)L->src[q + 1])) {
		q++;
		while (q < L->len && is_digit((unsigned char)L->src[q]))
			q++;
	}
	return q;
}

/* jinja2's float_re at p (not after a '.'): returns the end, or 0. */
static size_t scan_float(const struct jj_lex *L, size_t p)
{
	if (p > 0 && L->src[p - 1] == '.')
		return 0;
	size_t q = scan_digits(L, p);
	if (q == p)
		return 0;
	/* (\.digits)? e[+-]? digits */
	size_t r = q;
	if (r < L->len && L->src[r] == '.') {
		size_t s = scan_digits(L, r + 1);
		r = s > r + 1 ? s : q;
	}
	if (r < L->len && (L->src[r] == 'e' || L->src[r] == 'E')) {
		size_t s = r + 1;
		if (s < L->len && (L->src[s] == '+' || L->src[s] == '-'))
			s++;
		size_t e = scan_digits(L, s);
		if (e > s)
			return e;
	}
	/* | \.digits */
	if (q < L->len && L->src[q] == '.') {
		size_t s = scan_digits(L, q + 1);
		if (s > q + 1)
			return s;
	}
	return 0;
}

static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* jinja2's integer_re at p; stores the value. Returns the end, or 0. */
static size_t scan_int(struct jj_lex *L, size_t p, int64_t *val)
{
	const char *s = L->src;
	size_t n = L->len;
	int base = 10;
	size_t q = p;
	if (s[q] == '0' && q + 1 < n && strchr("bBoOxX", s[q + 1]) && s[q + 1]) {
		char b = (char)(s[q + 1] | 0x20);
		base = b == 'b' ? 2 : b == 'o' ? 8 : 16;
		q += 2;
		size_t start = q;
		while (q < n) {
			size_t r = q;
			if (s[r] == '_')
				r++;
			int h = r < n ? hexval((unsigned char)s[r]) : -1;
			if (h < 0 || h >= base)
				break;
			q = r + 1;
		}
		if (q == start)
			return 0; /* "0x" alone: the 0 below */
	} else if (s[q] == '0') {
		q++;
		while (q + 1 < n && s[q] == '_' && s[q + 1] == '0')
			q += 2;
		while (q < n && s[q] == '0')
			q++;
		*val = 0;
		return q;
	} else if (is_digit((unsigned char)s[q])) {
		q = scan_digits(L, p);
	} else {
		return 0;
	}
	uint64_t v = 0;
	for (size_t i = base == 10 ? p : p + 2; i < q; i++) {
		if (s[i] == '_')
			continue;
		unsigned d = (unsigned)hexval((unsigned char)s[i]);
		if (v > (UINT64_MAX - d) / (unsigned)base || v * (unsigned)base + d > (uint64_t)INT64_MAX)
			jj_fail(L->f, MF_JINJA_ELIMIT, "LimitError", "integer literal %.*s does not fit 64 bits",
				(int)(q - p > 40 ? 40 : q - p), s + p);
		v = v * (unsigned)base + d;
	}
	*val = (int64_t)v;
	return q;
}

/* Decodes a string literal's body as Python's unicode_escape codec does (jinja2 decodes them so). */
static void lex_string(struct jj_lex *L, struct jj_token *tk, const char *s, size_t n)
{
	if (!memchr(s, '\\', n)) {
		tk->s = s;
		tk->len = n;
		return;
	}
	char *out = jj_alloc(&L->t->arena, L->f, n + 1);
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		if (s[i] != '\\' || i + 1 == n) {
			out[o++] = s[i++];
			continue;
		}
		char c = s[i + 1];
		i += 2;
		uint32_t cp;
		int digits = 0;
		switch (c) {
		case '\n': continue;
		case '\\': out[o++] = '\\'; continue;
		case '\'': out[o++] = '\''; continue;
		case '"': out[o++] = '"'; continue;
		case 'a': out[o++] = '\a'; continue;
		case 'b': out[o++] = '\b'; continue;
		case 'f': out[o++] = '\f'; continue;
		case 'n': out[o++] = '\n'; continue;
		case 'r': out[o++] = '\r'; continue;
		case 't': out[o++] = '\t'; continue;
		case 'v': out[o++] = '\v'; continue;
		case 'x': digits = 2; break;
		case 'u': digits = 4; break;
		case 'U': digits = 8; break;
		default:
			if (c >= '0' && c <= '7') {
				cp = (uint32_t)(c - '0');
				for (int k = 0; k < 2 && i < n && s[i] >= '0' && s[i] <= '7'; k++)
					cp = cp * 8 + (uint32_t)(s[i++] - '0');
				o += ob_utf8_encode_lax(out + o, cp);
				continue;
			}
			out[o++] = '\\'; /* unknown escapes stay as written */
			i--;
			continue;
		}
		cp = 0;
		for (int k = 0; k < digits; k++) {
			int h = i < n ? hexval((unsigned char)s[i]) : -1;
			if (h < 0)
				jj_fail(L->f, MF_JINJA_ESYNTAX, "TemplateSyntaxError",
					"(unicode error) 'unicodeescape' codec can't decode bytes: truncated \\%c escape", c);
			cp = cp * 16 + (uint32_t)h;
			i++;
		}
		if (cp > 0x10FFFF)
			jj_fail(L->f, MF_JINJA_ESYNTAX, "TemplateSyntaxError",
				"(unicode error) 'unicodeescape' codec can't decode bytes: illegal Unicode character");
		o += ob_utf8_encode_lax(out + o, cp);
	}
	tk->s = out;
	tk->len = o;
}

static const struct {
	const char *text;
	uint8_t op;
} lex_ops[] = {
	{"//", JJ_OP_FLOORDIV}, {"**", JJ_OP_POW}, {"==", JJ_OP_EQ}, {"!=", JJ_OP_NE}, {">=", JJ_OP_GE},
	{"<=", JJ_OP_LE}, {"+", JJ_OP_ADD}, {"-", JJ_OP_SUB}, {"/", JJ_OP_DIV}, {"*", JJ_OP_MUL},
	{"%", JJ_OP_MOD}, {"~", JJ_OP_TILDE}, {"[", JJ_OP_LBRACKET}, {"]", JJ_OP_RBRACKET},
	{"(", JJ_OP_LPAREN}, {")", JJ_OP_RPAREN}, {"{", JJ_OP_LBRACE}, {"}", JJ_OP_RBRACE}, {">", JJ_OP_GT},
	{"<", JJ_OP_LT}, {"=", JJ_OP_ASSIGN}, {".", JJ_OP_DOT}, {":", JJ_OP_COLON}, {"|", JJ_OP_PIPE},
	{",", JJ_OP_COMMA}, {";", JJ_OP_SEMICOLON},
};

/* Tokens inside {{ }} or {% %} up to the closing tag; returns with L->pos after it and whether the
 * closing match ended on a newline (line_starting). */
static bool lex_tag(struct jj_lex *L, bool block)
{
	const char *s = L->src;
	L->nbalance = 0;
	for (;;) {
		if (L->pos >= L->len)
			return false; /* the parser reports the unexpected end */
		size_t p = L->pos;
		if (L->nbalance == 0) {
			size_t e = block ? match_end(L, p, "%}", true) : 0;
			if (!block) {
				if (s[p] == '-' && at(L, p + 1, "}}"))
					e = p + 3 + ws_len(s + p + 3, L->len - p - 3);
				else if (at(L, p, "}}"))
					e = p + 2;
			}
			if (e) {
				lex_push(L, block ? JJ_T_BLOCK_END : JJ_T_VAR_END, L->line);
				L->line += count_nl(s + p, e - p);
				L->pos = e;
				return s[e - 1] == '\n';
			}
		}
		size_t w = ws_len(s + p, L->len - p);
		if (w) {
			L->line += count_nl(s + p, w);
			L->pos += w;
			continue;
		}
		unsigned char c = (unsigned char)s[p];
		size_t e = is_digit(c) ? scan_float(L, p) : 0;
		if (e) {
			struct jj_token *tk = lex_push(L, JJ_T_FLOAT, L->line);
			char buf[128];
			size_t k = 0;
			for (size_t i = p; i < e && k + 1 < sizeof buf; i++)
				if (s[i] != '_')
					buf[k++] = s[i];
			buf[k] = 0;
			tk->f = strtod(buf, NULL);
			tk->s = s + p;
			tk->len = e - p;
			L->pos = e;
			continue;
		}
		int64_t iv;
		if (is_digit(c) && (e = scan_int(L, p, &iv))) {
			struct jj_token *tk = lex_push(L, JJ_T_INT, L->line);
			tk->i = iv;
			tk->s = s + p;
			tk->len = e - p;
			L->pos = e;
			continue;
		}
		if (is_name_start(c)) {
			size_t q = p + 1;
			while (q < L->len && is_name_char((unsigned char)s[q]))
				q++;
			struct jj_token *tk = lex_push(L, JJ_T_NAME, L->line);
			tk->s = s + p;
			tk->len = q - p;
			L->pos = q;
			continue;
		}
		if (c == '\'' || c == '"') {
			size_t q = p + 1;
			while (q < L->len && s[q] != (char)c) {
				if (s[q] == '\\' && q + 1 < L->len)
					q++;
				q++;
			}
			if (q >= L->len)
				jj_fail(L->f, MF_JINJA_ESYNTAX, "TemplateSyntaxError", "unexpected char %s at %zu",
					c == '\'' ? "\"'\"" : "'\"'", p);
			struct jj_token *tk = lex_push(L, JJ_T_STRING, L->line);
			lex_string(L, tk, s + p + 1, q - p - 1);
			L->line += count_nl(s + p, q + 1 - p);
			L->pos = q + 1;
			continue;
		}
		size_t k;
		for (k = 0; k < sizeof lex_ops / sizeof lex_ops[0]; k++)
			if (at(L, p, lex_ops[k].text))
				break;
		if (k == sizeof lex_ops / sizeof lex_ops[0]) {
			size_t cl;
			uint32_t cp = jj_cp(s + p, L->len - p, &cl);
			if (cp >= 0x20 && cp < 0x7f)
				jj_fail(L->f, MF_JINJA_ESYNTAX, "TemplateSyntaxError", "unexpected char '%c' at %zu",
					(char)cp, p);
			jj_fail(L->f, MF_JINJA_ESYNTAX, "TemplateSyntaxError", "unexpected char U+%04X at %zu", cp, p);
		}
		uint8_t op = lex_ops[k].op;
		if (op == JJ_OP_LBRACE || op == JJ_OP_LPAREN || op == JJ_OP_LBRACKET) {
			if (L->nbalance == MF_JINJA_MAX_NESTING)
				jj_fail(L->f, MF_JINJA_ELIMIT, "LimitError", "nesting limit (%d brackets) exceeded",
					MF_JINJA_MAX_NESTING);
			L->balance[L->nbalance++] = op == JJ_OP_LBRACE ? '}' : op == JJ_OP_LPAREN ? ')' : ']';
		} else if (op == JJ_OP_RBRACE || op == JJ_OP_RPAREN || op == JJ_OP_RBRACKET) {
			char ch = lex_ops[k].text[0];
			if (L->nbalance == 0)
				jj_fail(L->f, MF_JINJA_ESYNTAX, "TemplateSyntaxError", "unexpected '%c'", ch);
			char want = L->balance[--L->nbalance];
			if (want != ch)
				jj_fail(L->f, MF_JINJA_ESYNTAX, "TemplateSyntaxError", "unexpected '%c', expected '%c'",
					ch, want);
		}
		struct jj_token *tk = lex_push(L, JJ_T_OP, L->line);
		tk->op = op;
		L->pos = p + strlen(lex_ops[k].text);
	}
}

/* At p (just after "{%" and its sign): `\s*raw\s*` then "-%}\s*" or "%}". Returns the end, or 0. */
static size_t match_raw_begin(const struct jj_lex *L, size_t p)
{
	p += ws_len(L->src + p, L->len - p);
	if (!at(L, p, "raw"))
		return 0;
	p += 3;
	p += ws_len(L->src + p, L->len - p);
	if (L->src[p] == '-' && at(L, p + 1, "%}"))
		return p + 3 + ws_len(L->src + p + 3, L->len - p - 3);
	if (at(L, p, "%}"))
		return p + 2;
	return 0;
}

static void lex_raw(struct jj_lex *L)
{
	const char *s = L->src;
	for (size_t q = L->pos; q + 1 < L->len; q++) {
		if (s[q] != '{' || s[q + 1] != '%')
			continue;
		size_t r = q + 2;
		char sign = r < L->len && (s[r] == '-' || s[r] == '+') ? s[r] : 0;
		if (sign)
			r++;
		r += ws_len(s + r, L->len - r);
		if (!at(L, r, "endraw"))
			continue;
		r += 6;
		r += ws_len(s + r, L->len - r);
		size_t e = match_end(L, r, "%}", true);
		if (!e)
			continue;
		lex_data(L, s + L->pos, q - L->pos, sign, true, L->pos > 0 && s[L->pos - 1] == '\n');
		L->line += count_nl(s + q, e - q);
		L->pos = e;
		return;
	}
	jj_fail(L->f, MF_JINJA_ESYNTAX, "TemplateSyntaxError", "Missing end of raw directive");
}

static void jj_lex(struct mf_jinja *t, struct jj_fail *f, const char *src, size_t len, struct jj_lexer_out *out)
{
	struct jj_lex L = {.t = t, .f = f, .src = src, .len = len, .line = 1, .out = out};
	bool line_starting = true;
	while (L.pos < len) {
		size_t q = L.pos;
		const char *hit = NULL;
		while ((hit = memchr(src + q, '{', len - q))) {
			q = (size_t)(hit - src);
			if (q + 1 < len && (src[q + 1] == '{' || src[q + 1] == '%' || src[q + 1] == '#'))
				break;
			q++;
			hit = NULL;
			if (q >= len)
				break;
		}
		if (!hit) {
			struct jj_token *tk = lex_push(&L, JJ_T_DATA, L.line);
			tk->s = src + L.pos;
			tk->len = len - L.pos;
			L.line += count_nl(src + L.pos, len - L.pos);
			break;
		}
		char kind = src[q + 1];
		size_t p = q + 2;
		char sign = p < len && (src[p] == '-' || src[p] == '+') ? src[p] : 0;
		if (sign)
			p++;
		size_t raw_end = kind == '%' ? match_raw_begin(&L, p) : 0;
		lex_data(&L, src + L.pos, q - L.pos, sign, kind != '{', line_starting);
		f->line = L.line;
		if (raw_end) {
			L.line += count_nl(src + q, raw_end - q);
			L.pos = raw_end;
			lex_raw(&L);
			line_starting = src[L.pos - 1] == '\n';
			continue;
		}
		L.pos = p;
		if (kind == '#') {
			size_t e = 0, r;
			for (r = p; r < len; r++)
				if ((e = match_end(&L, r, "#}", true)))
					break;
			if (!e)
				jj_fail(f, MF_JINJA_ESYNTAX, "TemplateSyntaxError", "Missing end of comment tag");
			L.line += count_nl(src + p, e - p);
			L.pos = e;
			line_starting = src[e - 1] == '\n';
			continue;
		}
		lex_push(&L, kind == '%' ? JJ_T_BLOCK_BEGIN : JJ_T_VAR_BEGIN, L.line);
		line_starting = lex_tag(&L, kind == '%');
	}
	lex_push(&L, JJ_T_EOF, L.line);
}
