/* modelfile/template_exec.c — executes a parsed template with Go text/template semantics.
 *
 * Mirrors Go's exec.go: pipelines with interface unwrapping, field and method look-up on the data model's
 * types, missingkey=zero, variable scoping (declare, reassign from inside range/if), if/with/range with
 * else, break/continue, {{template}} calls, the builtin functions and Ollama's (json, currentDate,
 * yesterdayDate, toTypeScriptType), and fmt's printing. Errors unwind with longjmp to tpl_exec and carry
 * Go's message; every loop and allocation counts against the MF_TPL_MAX_* limits.
 */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/gofmt.h"
#include "base/json.h"
#include "base/utf8.h"
#include "modelfile/template_internal.h"

struct xvar {
	const char *name;
	size_t n;
	struct tv val;
};

enum { CTL_NONE, CTL_BREAK, CTL_CONTINUE };

struct xs {
	const struct mf_tpl *t;
	const struct tpl_exec_opts *o;
	struct tpl_arena *a;
	struct ob_buf *out;
	struct mf_tpl_error *err;
	jmp_buf jb;
	int code;
	const struct tn *at;
	const char *tmpl_name;
	struct xvar *vars;
	size_t nvars, capvars, frame; /* frame: first variable visible to the running template */
	int depth;
	uint64_t steps, iterations;
	int ctl;
	const struct tn *root; /* the tree being executed (for a detached tree: the one {{template ""}} names) */
};

/* ------------------------------------------------------------------------------------------ errors */

__attribute__((format(printf, 2, 3), noreturn)) static void xerr(struct xs *s, const char *fmt, ...)
{
	char m[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m, sizeof m, fmt, ap);
	va_end(ap);
	if (s->err) {
		s->err->code = MF_TPL_ERR_EXEC;
		if (s->at) {
			int line, col;
			tpl_location(s->t->src, s->at->pos, &line, &col);
			s->err->line = line;
			s->err->col = col;
			struct ob_buf b;
			ob_buf_init(&b, 4096);
			tpl_node_string(&b, s->at);
			snprintf(s->err->msg, sizeof s->err->msg, "template: :%d:%d: executing \"%s\" at <%s>: %s", line, col,
				 s->tmpl_name, b.p ? b.p : "", m);
			ob_buf_free(&b);
		} else {
			s->err->line = s->err->col = 0;
			snprintf(s->err->msg, sizeof s->err->msg, "template: %s: %s", s->tmpl_name, m);
		}
	}
	s->code = MF_TPL_ERR_EXEC;
	longjmp(s->jb, 1);
}

/* Ends execution for a resource reason; `what` names the limit for MF_TPL_ERR_LIMIT. */
__attribute__((noreturn)) static void xfail_what(struct xs *s, int code, const char *what)
{
	if (s->err) {
		s->err->code = code;
		s->err->line = s->err->col = 0;
		if (code == MF_TPL_ERR_NOMEM)
			snprintf(s->err->msg, sizeof s->err->msg, "template: out of memory");
		else
			snprintf(s->err->msg, sizeof s->err->msg, "template: execution stopped: %s", what);
	}
	s->code = code;
	longjmp(s->jb, 1);
}

static const char *limit_text(struct xs *s, int code)
{
	static _Thread_local char m[120];
	if (code == MF_TPL_ERR_LIMIT && s->a->limit && s->a->used_total + 4096 > s->a->limit)
		snprintf(m, sizeof m, "intermediate values over %u bytes", MF_TPL_MAX_MEMORY);
	else
		snprintf(m, sizeof m, "output or a string over %u bytes", MF_TPL_MAX_OUTPUT);
	return m;
}

__attribute__((noreturn)) static void xfail(struct xs *s, int code)
{
	xfail_what(s, code, limit_text(s, code));
}

static void *xalloc(struct xs *s, size_t n)
{
	void *p = tpl_arena_alloc(s->a, n);
	if (!p)
		xfail(s, s->a->limit && s->a->used_total + n > s->a->limit ? MF_TPL_ERR_LIMIT : MF_TPL_ERR_NOMEM);
	return p;
}

static void step(struct xs *s)
{
	if (++s->steps > MF_TPL_MAX_STEPS) {
		char m[64];
		snprintf(m, sizeof m, "more than %u evaluation steps", MF_TPL_MAX_STEPS);
		xfail_what(s, MF_TPL_ERR_LIMIT, m);
	}
}

/* Checks a scratch buffer after formatting; limit or out-of-memory ends execution. */
static void buf_check(struct xs *s, struct ob_buf *b)
{
	if (b->failed) {
		int code = tpl_buf_error(b);
		ob_buf_free(b);
		xfail(s, code);
	}
}

/* Moves a scratch buffer's contents into the arena as a string value. */
static struct tv buf_to_string(struct xs *s, struct ob_buf *b)
{
	buf_check(s, b);
	char *p = tpl_arena_strdup(s->a, b->p ? b->p : "", b->len);
	size_t n = b->len;
	ob_buf_free(b);
	if (!p)
		xfail(s, MF_TPL_ERR_LIMIT);
	return tv_string(p, n);
}

/* ------------------------------------------------------------------------------------------ variables */

static size_t mark(struct xs *s)
{
	return s->nvars;
}

static void pop(struct xs *s, size_t m)
{
	s->nvars = m;
}

static void push(struct xs *s, const char *name, size_t n, struct tv v)
{
	if (s->nvars == s->capvars) {
		int g = ob_grow(&s->vars, &s->capvars, s->nvars + 1, sizeof *s->vars, 32, 1u << 20);
		if (g)
			xfail(s, g == OB_GROW_LIMIT ? MF_TPL_ERR_LIMIT : MF_TPL_ERR_NOMEM);
	}
	s->vars[s->nvars].name = name;
	s->vars[s->nvars].n = n;
	s->vars[s->nvars].val = v;
	s->nvars++;
}

static struct xvar *find_var(struct xs *s, const char *name, size_t n)
{
	for (size_t i = s->nvars; i-- > s->frame;)
		if (s->vars[i].n == n && memcmp(s->vars[i].name, name, n) == 0)
			return &s->vars[i];
	return NULL;
}

static void set_var(struct xs *s, const char *name, size_t n, struct tv v)
{
	struct xvar *x = find_var(s, name, n);
	if (!x)
		xerr(s, "undefined variable: %.*s", (int)n, name);
	x->val = v;
}

static struct tv var_value(struct xs *s, const struct tpl_sv *id)
{
	struct xvar *x = find_var(s, id->p, id->n);
	if (!x)
		xerr(s, "undefined variable: %.*s", (int)id->n, id->p);
	return x->val;
}

/* ------------------------------------------------------------------------------------------ values */

/* reflect.Value of an interface: its dynamic value, or invalid for a nil interface. */
static struct tv indirect_iface(struct tv v)
{
	if (v.kind == TV_NIL)
		return tv_invalid();
	v.iface = 0;
	return v;
}

/* ------------------------------------------------------------------------------------------ printf */

struct fspec {
	bool minus, plus, sharp, space, zero;
	int width, prec; /* -1 = none */
};

/* Pads and writes s (width counted in runes). */
static void fmt_pad(struct ob_buf *b, const struct fspec *f, const char *p, size_t n, bool numeric)
{
	size_t w = ob_utf8_rune_count(p, n);
	size_t pad = f->width > 0 && (size_t)f->width > w ? (size_t)f->width - w : 0;
	if (!pad) {
		ob_buf_append(b, p, n);
		return;
	}
	if (f->minus) {
		ob_buf_append(b, p, n);
		ob_buf_pad(b, ' ', pad);
	} else if (f->zero && numeric) {
		/* zero padding goes after the sign */
		if (n && (p[0] == '-' || p[0] == '+' || p[0] == ' ')) {
			ob_buf_putc(b, p[0]);
			ob_buf_pad(b, '0', pad);
			ob_buf_append(b, p + 1, n - 1);
		} else {
			ob_buf_pad(b, '0', pad);
			ob_buf_append(b, p, n);
		}
	} else if (f->zero && !numeric) {
		ob_buf_pad(b, '0', pad);
		ob_buf_append(b, p, n);
	} else {
		ob_buf_pad(b, ' ', pad);
		ob_buf_append(b, p, n);
	}
}

/* %q: strconv.Quote (base/gofmt.c). */
static void quote_go(struct ob_buf *b, const char *p, size_t n)
{
	ob_go_quote(b, p, n);
}

static void fmt_arg(struct xs *s, struct ob_buf *b, const struct fspec *f, char verb, const struct tv *v0);

static void bad_verb(struct xs *s, struct ob_buf *b, char verb, const struct tv *v)
{
	ob_buf_printf(b, "%%!%c(", verb);
	if (v->kind == TV_INVALID || v->kind == TV_NIL) {
		ob_buf_puts(b, "<nil>)");
		return;
	}
	ob_buf_puts(b, tv_types[v->type].go_name);
	ob_buf_putc(b, '=');
	struct tv u = *v;
	u.iface = 0;
	tv_fmt_value(b, &u, 0);
	ob_buf_putc(b, ')');
	(void)s;
}

static void fmt_int(struct ob_buf *b, const struct fspec *f, char verb, int64_t x)
{
	char tmp[96];
	char digits[80];
	int nd = 0;
	uint64_t u = x < 0 ? (uint64_t)0 - (uint64_t)x : (uint64_t)x;
	int base = verb == 'b' ? 2 : (verb == 'o' || verb == 'O') ? 8 : (verb == 'x' || verb == 'X') ? 16 : 10;
	const char *dig = verb == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
	do {
		digits[nd++] = dig[u % (uint64_t)base];
		u /= (uint64_t)base;
	} while (u && nd < 70);
	int prec = f->prec;
	if (prec == 0 && x == 0) {
		nd = 0;
	}
	while (prec > nd && nd < 70)
		digits[nd++] = '0';
	int k = 0;
	if (x < 0)
		tmp[k++] = '-';
	else if (f->plus)
		tmp[k++] = '+';
	else if (f->space)
		tmp[k++] = ' ';
	if (f->sharp || verb == 'O') {
		if (verb == 'o' && (nd == 0 || digits[nd - 1] != '0'))
			tmp[k++] = '0';
		else if (verb == 'O')
			tmp[k++] = '0', tmp[k++] = 'o';
		else if (verb == 'x')
			tmp[k++] = '0', tmp[k++] = 'x';
		else if (verb == 'X')
			tmp[k++] = '0', tmp[k++] = 'X';
		else if (verb == 'b')
			tmp[k++] = '0', tmp[k++] = 'b';
	}
	while (nd > 0)
		tmp[k++] = digits[--nd];
	struct fspec g = *f;
	if (f->prec >= 0)
		g.zero = false;
	fmt_pad(b, &g, tmp, (size_t)k, true);
}

static void fmt_float(struct ob_buf *b, const struct fspec *f, char verb, double x)
{
	char tmp[512];
	struct ob_buf t;
	ob_buf_init(&t, 0);
	if (verb == 'v' || ((verb == 'g' || verb == 'G') && f->prec < 0)) {
		struct tv v = tv_float(x);
		tv_fmt_value(&t, &v, 0);
		if (verb == 'G' && t.p)
			for (char *c = t.p; *c; c++)
				if (*c == 'e')
					*c = 'E';
	} else {
		char cfmt[16];
		int prec = f->prec < 0 ? 6 : f->prec;
		if (prec > 400)
			prec = 400;
		char cv = verb == 'F' ? 'f' : verb;
		snprintf(cfmt, sizeof cfmt, "%%.%d%c", prec, cv);
		snprintf(tmp, sizeof tmp, cfmt, x);
		ob_buf_puts(&t, tmp);
		if (isinf(x) || isnan(x)) {
			ob_buf_free(&t);
			ob_buf_init(&t, 0);
			ob_buf_puts(&t, isnan(x) ? "NaN" : x > 0 ? "+Inf" : "-Inf");
		}
	}
	const char *p = t.p ? t.p : "";
	size_t n = t.len;
	char sign[2] = {0, 0};
	if (n && p[0] != '-' && p[0] != '+') {
		if (f->plus)
			sign[0] = '+';
		else if (f->space)
			sign[0] = ' ';
	}
	if (isinf(x) && p[0] == '+' && !f->plus) {
		p++;
		n--;
	}
	struct ob_buf u;
	ob_buf_init(&u, 0);
	if (sign[0])
		ob_buf_putc(&u, sign[0]);
	ob_buf_append(&u, p, n);
	struct fspec g = *f;
	if (isinf(x) || isnan(x))
		g.zero = false;
	fmt_pad(b, &g, u.p ? u.p : "", u.len, true);
	ob_buf_free(&u);
	ob_buf_free(&t);
}

static void fmt_string(struct ob_buf *b, const struct fspec *f, char verb, const char *p, size_t n)
{
	if (f->prec >= 0) {
		/* precision truncates to that many runes (an invalid byte is one) */
		size_t runes = 0, i = 0, w;
		for (; i < n && runes < (size_t)f->prec; i += w, runes++)
			ob_utf8_decode((const unsigned char *)p + i, n - i, &w);
		n = i;
	}
	struct ob_buf t;
	ob_buf_init(&t, 0);
	switch (verb) {
	case 'q':
		quote_go(&t, p, n);
		break;
	case 'x':
	case 'X': {
		const char *dig = verb == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
		for (size_t i = 0; i < n; i++) {
			if (i && f->space)
				ob_buf_putc(&t, ' ');
			if (f->sharp && (i == 0 || f->space))
				ob_buf_puts(&t, verb == 'X' ? "0X" : "0x");
			ob_buf_putc(&t, dig[(unsigned char)p[i] >> 4]);
			ob_buf_putc(&t, dig[(unsigned char)p[i] & 15]);
		}
		break;
	}
	default:
		ob_buf_append(&t, p, n);
	}
	fmt_pad(b, f, t.p ? t.p : "", t.len, false);
	ob_buf_free(&t);
}

/* An element inside a composite: a nil interface prints as <nil> whatever the verb (fmt's depth > 0). */
static void fmt_elem(struct xs *s, struct ob_buf *b, const struct fspec *f, char verb, const struct tv *v)
{
	if (v->kind == TV_NIL || v->kind == TV_INVALID)
		ob_buf_puts(b, "<nil>");
	else
		fmt_arg(s, b, f, verb, v);
}

static void fmt_arg(struct xs *s, struct ob_buf *b, const struct fspec *f, char verb, const struct tv *v0)
{
	struct tv v = *v0;
	v.iface = 0;
	if (v.kind == TV_INVALID || v.kind == TV_NIL) {
		if (verb == 'v' || verb == 'T') {
			fmt_pad(b, f, "<nil>", 5, false);
			return;
		}
		bad_verb(s, b, verb, &v);
		return;
	}
	if (verb == 'T') {
		const char *name = tv_types[v.type].go_name;
		fmt_pad(b, f, name, strlen(name), false);
		return;
	}
	/* String() methods apply to %v %s %q %x %X */
	if (tv_types[v.type].stringer && strchr("vsqxX", verb)) {
		struct ob_buf t;
		ob_buf_init(&t, MF_TPL_MAX_OUTPUT);
		tv_stringer(&t, &v);
		buf_check(s, &t);
		fmt_string(b, f, verb == 'v' ? 's' : verb, t.p ? t.p : "", t.len);
		ob_buf_free(&t);
		return;
	}
	switch (v.kind) {
	case TV_BOOL:
		if (verb == 'v' || verb == 't') {
			const char *t = v.u.b ? "true" : "false";
			fmt_pad(b, f, t, strlen(t), false);
		} else
			bad_verb(s, b, verb, &v);
		return;
	case TV_INT:
	case TV_UINT8:
		switch (verb) {
		case 'v':
		case 'd':
			fmt_int(b, f, 'd', v.u.i);
			return;
		case 'b':
		case 'o':
		case 'O':
		case 'x':
		case 'X':
			fmt_int(b, f, verb, v.u.i);
			return;
		case 'c': {
			char u[OB_UTF8_MAX];
			int64_t r = v.u.i;
			size_t n = ob_utf8_encode(u, r < 0 || r > 0x10ffff ? OB_RUNE_ERROR : (uint32_t)r);
			fmt_pad(b, f, u, (size_t)n, false);
			return;
		}
		case 'U': {
			char u[24];
			int n = snprintf(u, sizeof u, "U+%04llX", (unsigned long long)v.u.i);
			fmt_pad(b, f, u, (size_t)n, false);
			return;
		}
		case 'e':
		case 'E':
		case 'f':
		case 'F':
		case 'g':
		case 'G':
			bad_verb(s, b, verb, &v);
			return;
		case 'q': {
			char u[16];
			int n = snprintf(u, sizeof u, "'%c'", (int)(v.u.i & 0x7f));
			fmt_pad(b, f, u, (size_t)n, false);
			return;
		}
		}
		bad_verb(s, b, verb, &v);
		return;
	case TV_FLOAT:
		if (strchr("veEfFgG", verb)) {
			fmt_float(b, f, verb, v.u.f);
			return;
		}
		bad_verb(s, b, verb, &v);
		return;
	case TV_STRING:
		if (strchr("vsqxX", verb)) {
			fmt_string(b, f, verb == 'v' ? 's' : verb, v.u.s.p, v.u.s.n);
			return;
		}
		bad_verb(s, b, verb, &v);
		return;
	case TV_BYTES:
		if (verb == 's' || verb == 'q' || verb == 'x' || verb == 'X') {
			fmt_string(b, f, verb, v.u.s.p, v.u.s.n);
			return;
		}
		break;
	default:
		break;
	}
	/* composite values: the verb applies element by element */
	if (verb == 'v' || v.kind == TV_STRUCT || v.kind == TV_SLICE || v.kind == TV_MAP || v.kind == TV_BYTES) {
		struct ob_buf t;
		ob_buf_init(&t, MF_TPL_MAX_OUTPUT);
		if (verb == 'v' || v.kind == TV_BYTES || (v.kind == TV_MAP && tv_types[v.type].is_ptr)) {
			tv_fmt_value(&t, &v, 0);
		} else if (v.kind == TV_SLICE) {
			struct fspec g = {.width = -1, .prec = -1};
			ob_buf_putc(&t, '[');
			for (size_t i = 0; i < v.u.seq.n; i++) {
				if (i)
					ob_buf_putc(&t, ' ');
				fmt_elem(s, &t, &g, verb, &v.u.seq.v[i]);
			}
			ob_buf_putc(&t, ']');
		} else if (v.kind == TV_MAP) {
			struct fspec g = {.width = -1, .prec = -1};
			ob_buf_puts(&t, "map[");
			for (size_t i = 0; i < v.u.map.n; i++) {
				if (i)
					ob_buf_putc(&t, ' ');
				struct tv k = tv_string(v.u.map.e[i].key, v.u.map.e[i].key_n);
				fmt_arg(s, &t, &g, verb, &k);
				ob_buf_putc(&t, ':');
				fmt_elem(s, &t, &g, verb, &v.u.map.e[i].val);
			}
			ob_buf_putc(&t, ']');
		} else {
			const struct tv_type_desc *d = &tv_types[v.type];
			struct fspec g = {.width = -1, .prec = -1};
			if (d->is_ptr && v.isnil) {
				ob_buf_puts(&t, "<nil>");
			} else {
				if (d->is_ptr)
					ob_buf_putc(&t, '&');
				ob_buf_putc(&t, '{');
				for (size_t i = 0; i < d->nfields; i++) {
					if (i)
						ob_buf_putc(&t, ' ');
					fmt_elem(s, &t, &g, verb, &v.u.fields[i]);
				}
				ob_buf_putc(&t, '}');
			}
		}
		buf_check(s, &t);
		fmt_pad(b, f, t.p ? t.p : "", t.len, false);
		ob_buf_free(&t);
		return;
	}
	bad_verb(s, b, verb, &v);
}

/* fmt.Sprintf with Go's verbs, flags, widths (including '*'), argument indexes and error notations. */
static struct tv go_sprintf(struct xs *s, const char *fmt, size_t fn, const struct tv *args, size_t nargs)
{
	struct ob_buf b;
	ob_buf_init(&b, MF_TPL_MAX_OUTPUT);
	size_t argi = 0;
	bool reordered = false;
	for (size_t i = 0; i < fn;) {
		if (fmt[i] != '%') {
			size_t j = i;
			while (j < fn && fmt[j] != '%')
				j++;
			ob_buf_append(&b, fmt + i, j - i);
			i = j;
			continue;
		}
		i++;
		struct fspec f = {.width = -1, .prec = -1};
		for (; i < fn; i++) {
			char c = fmt[i];
			if (c == '#')
				f.sharp = true;
			else if (c == '0')
				f.zero = !f.minus;
			else if (c == '+')
				f.plus = true;
			else if (c == '-')
				f.minus = true, f.zero = false;
			else if (c == ' ')
				f.space = true;
			else
				break;
		}
		/* argument index [n] */
#define ARG_INDEX()                                                                                          \
	do {                                                                                                     \
		if (i < fn && fmt[i] == '[') {                                                                   \
			size_t j = i + 1;                                                                        \
			size_t num = 0;                                                                          \
			bool okn = false;                                                                        \
			while (j < fn && fmt[j] >= '0' && fmt[j] <= '9' && num < 1000000)                       \
				num = num * 10 + (size_t)(fmt[j++] - '0'), okn = true;                           \
			if (j < fn && fmt[j] == ']' && okn && num >= 1 && num <= nargs) {                        \
				argi = num - 1;                                                                  \
				i = j + 1;                                                                       \
				reordered = true;                                                                \
			} else {                                                                                 \
				ob_buf_puts(&b, "%!(BADINDEX)");                                                \
				while (i < fn && fmt[i] != ']')                                                  \
					i++;                                                                     \
				if (i < fn)                                                                      \
					i++;                                                                     \
				argi = nargs;                                                                    \
				reordered = true;                                                                \
				goto next_verb;                                                                  \
			}                                                                                        \
		}                                                                                                \
	} while (0)
		ARG_INDEX();
		if (i < fn && fmt[i] == '*') {
			i++;
			if (argi < nargs && indirect_iface(args[argi]).kind == TV_INT) {
				int64_t w = args[argi].u.i;
				if (w > MF_TPL_MAX_WIDTH || w < -MF_TPL_MAX_WIDTH) {
					ob_buf_puts(&b, "%!(BADWIDTH)");
				} else {
					if (w < 0)
						f.minus = true, f.zero = false, w = -w;
					f.width = (int)w;
				}
			} else
				ob_buf_puts(&b, "%!(BADWIDTH)");
			argi++;
		} else {
			int w = -1;
			while (i < fn && fmt[i] >= '0' && fmt[i] <= '9') {
				w = (w < 0 ? 0 : w) * 10 + (fmt[i] - '0');
				if (w > MF_TPL_MAX_WIDTH)
					w = MF_TPL_MAX_WIDTH + 1;
				i++;
			}
			if (w > MF_TPL_MAX_WIDTH) {
				ob_buf_puts(&b, "%!(BADWIDTH)");
				w = -1;
			}
			f.width = w;
		}
		if (i < fn && fmt[i] == '.') {
			i++;
			ARG_INDEX();
			if (i < fn && fmt[i] == '*') {
				i++;
				if (argi < nargs && indirect_iface(args[argi]).kind == TV_INT) {
					int64_t p = args[argi].u.i;
					if (p < 0 || p > MF_TPL_MAX_WIDTH) {
						f.prec = -1;
						ob_buf_puts(&b, "%!(BADPREC)");
					} else
						f.prec = (int)p;
				} else
					ob_buf_puts(&b, "%!(BADPREC)");
				argi++;
			} else {
				int p = 0;
				while (i < fn && fmt[i] >= '0' && fmt[i] <= '9') {
					p = p * 10 + (fmt[i] - '0');
					if (p > MF_TPL_MAX_WIDTH)
						p = MF_TPL_MAX_WIDTH + 1;
					i++;
				}
				if (p > MF_TPL_MAX_WIDTH) {
					ob_buf_puts(&b, "%!(BADPREC)");
					p = -1;
				}
				f.prec = p;
			}
		}
		ARG_INDEX();
		if (i >= fn) {
			ob_buf_puts(&b, "%!(NOVERB)");
			break;
		}
		{
			/* the verb is a rune */
			char verb = fmt[i];
			size_t vlen;
			ob_utf8_decode((const unsigned char *)fmt + i, fn - i, &vlen);
			if (verb == '%') {
				ob_buf_putc(&b, '%');
				i += 1;
				continue;
			}
			if (argi >= nargs) {
				ob_buf_puts(&b, "%!");
				ob_buf_append(&b, fmt + i, vlen);
				ob_buf_puts(&b, "(MISSING)");
				i += vlen;
				continue;
			}
			if (vlen > 1) {
				ob_buf_puts(&b, "%!");
				ob_buf_append(&b, fmt + i, vlen);
				ob_buf_putc(&b, '(');
				struct tv u = args[argi];
				u.iface = 0;
				if (u.kind == TV_INVALID || u.kind == TV_NIL)
					ob_buf_puts(&b, "<nil>");
				else {
					ob_buf_puts(&b, tv_types[u.type].go_name);
					ob_buf_putc(&b, '=');
					tv_fmt_value(&b, &u, 0);
				}
				ob_buf_putc(&b, ')');
				argi++;
				i += vlen;
				continue;
			}
			fmt_arg(s, &b, &f, verb, &args[argi]);
			argi++;
			i += 1;
		}
	next_verb:
		buf_check(s, &b);
	}
#undef ARG_INDEX
	if (!reordered && argi < nargs) {
		ob_buf_puts(&b, "%!(EXTRA ");
		for (size_t k = argi; k < nargs; k++) {
			if (k > argi)
				ob_buf_puts(&b, ", ");
			struct tv u = args[k];
			u.iface = 0;
			if (u.kind == TV_INVALID || u.kind == TV_NIL)
				ob_buf_puts(&b, "<nil>");
			else {
				ob_buf_puts(&b, tv_types[u.type].go_name);
				ob_buf_putc(&b, '=');
				tv_fmt_value(&b, &u, 0);
			}
		}
		ob_buf_putc(&b, ')');
	}
	return buf_to_string(s, &b);
}

/* fmt.Sprint / Sprintln. */
static struct tv go_sprint(struct xs *s, const struct tv *args, size_t nargs, bool ln)
{
	struct ob_buf b;
	ob_buf_init(&b, MF_TPL_MAX_OUTPUT);
	bool prev_string = false;
	for (size_t i = 0; i < nargs; i++) {
		struct tv v = args[i];
		v.iface = 0;
		bool is_string = v.kind == TV_STRING;
		if (i > 0 && (ln || (!is_string && !prev_string)))
			ob_buf_putc(&b, ' ');
		tv_fmt_value(&b, &v, 0);
		prev_string = is_string;
		buf_check(s, &b);
	}
	if (ln)
		ob_buf_putc(&b, '\n');
	return buf_to_string(s, &b);
}

/* text/template's evalArgs: one string argument as is, else printable values through fmt.Sprint. */
static void eval_args_string(struct xs *s, const struct tv *args, size_t nargs, struct ob_buf *b)
{
	if (nargs == 1 && indirect_iface(args[0]).kind == TV_STRING) {
		struct tv v = indirect_iface(args[0]);
		ob_buf_append(b, v.u.s.p, v.u.s.n);
		return;
	}
	bool prev_string = false;
	for (size_t i = 0; i < nargs; i++) {
		struct tv v = args[i];
		v.iface = 0;
		bool is_string = v.kind == TV_STRING;
		if (i > 0 && !is_string && !prev_string)
			ob_buf_putc(b, ' ');
		if (v.kind == TV_INVALID || v.kind == TV_NIL)
			ob_buf_puts(b, "<no value>");
		else if ((v.kind == TV_STRUCT || v.kind == TV_MAP) && tv_types[v.type].is_ptr)
			tv_fmt_deref(b, &v); /* printableValue follows pointers */
		else
			tv_fmt_value(b, &v, 0);
		prev_string = is_string;
		buf_check(s, b);
	}
}

/* ------------------------------------------------------------------------------------------ builtins */

enum ptype { P_VALUE, P_ANY, P_STRING };

struct fn_desc {
	const char *name;
	int nfixed;      /* fixed parameters */
	bool variadic;   /* then any number of the last type */
	enum ptype fixed_type, var_type;
	bool ollama;
};

enum fn_id {
	F_AND, F_OR, F_NOT, F_LEN, F_INDEX, F_SLICE, F_PRINT, F_PRINTF, F_PRINTLN, F_EQ, F_NE, F_LT, F_LE, F_GT, F_GE,
	F_HTML, F_JS, F_URLQUERY, F_CALL, F_JSON, F_CURRENTDATE, F_YESTERDAYDATE, F_TOTS, F__COUNT
};

static const struct fn_desc fns[F__COUNT] = {
	[F_AND] = {"and", 1, true, P_VALUE, P_VALUE, false},
	[F_OR] = {"or", 1, true, P_VALUE, P_VALUE, false},
	[F_NOT] = {"not", 1, false, P_VALUE, P_VALUE, false},
	[F_LEN] = {"len", 1, false, P_VALUE, P_VALUE, false},
	[F_INDEX] = {"index", 1, true, P_VALUE, P_VALUE, false},
	[F_SLICE] = {"slice", 1, true, P_VALUE, P_VALUE, false},
	[F_PRINT] = {"print", 0, true, P_ANY, P_ANY, false},
	[F_PRINTF] = {"printf", 1, true, P_STRING, P_ANY, false},
	[F_PRINTLN] = {"println", 0, true, P_ANY, P_ANY, false},
	[F_EQ] = {"eq", 1, true, P_VALUE, P_VALUE, false},
	[F_NE] = {"ne", 2, false, P_VALUE, P_VALUE, false},
	[F_LT] = {"lt", 2, false, P_VALUE, P_VALUE, false},
	[F_LE] = {"le", 2, false, P_VALUE, P_VALUE, false},
	[F_GT] = {"gt", 2, false, P_VALUE, P_VALUE, false},
	[F_GE] = {"ge", 2, false, P_VALUE, P_VALUE, false},
	[F_HTML] = {"html", 0, true, P_ANY, P_ANY, false},
	[F_JS] = {"js", 0, true, P_ANY, P_ANY, false},
	[F_URLQUERY] = {"urlquery", 0, true, P_ANY, P_ANY, false},
	[F_CALL] = {"call", 1, true, P_VALUE, P_VALUE, false},
	[F_JSON] = {"json", 1, false, P_ANY, P_ANY, true},
	[F_CURRENTDATE] = {"currentDate", 0, true, P_STRING, P_STRING, true},
	[F_YESTERDAYDATE] = {"yesterdayDate", 0, true, P_STRING, P_STRING, true},
	[F_TOTS] = {"toTypeScriptType", 1, false, P_ANY, P_ANY, true},
};

static int find_fn(const struct xs *s, const char *name, size_t n)
{
	for (int i = 0; i < F__COUNT; i++)
		if (strlen(fns[i].name) == n && memcmp(fns[i].name, name, n) == 0) {
			if (fns[i].ollama && !s->o->funcs_ollama)
				return -1;
			return i;
		}
	return -1;
}

enum bkind { K_INVALID, K_BOOL, K_COMPLEX, K_INT, K_FLOAT, K_INTEGER, K_STRING, K_UINT };

static enum bkind basic_kind(const struct tv *v)
{
	switch (v->kind) {
	case TV_BOOL: return K_BOOL;
	case TV_INT: return K_INT;
	case TV_UINT8: return K_UINT;
	case TV_FLOAT: return K_FLOAT;
	case TV_STRING: return K_STRING;
	default: return K_INVALID;
	}
}

static bool values_identical(const struct tv *a, const struct tv *b)
{
	/* Go's == on interfaces holding comparable non-basic values: only pointers reach here */
	if (a->type != b->type)
		return false;
	if (a->kind == TV_STRUCT && tv_types[a->type].is_ptr)
		return a->u.fields == b->u.fields && a->isnil == b->isnil;
	if (a->kind == TV_MAP && tv_types[a->type].is_ptr)
		return a->u.map.e == b->u.map.e && a->isnil == b->isnil;
	return false;
}

static bool is_comparable_type(const struct tv *v)
{
	/* slices and maps are not comparable; structs only when all fields are (ours hold slices/maps) */
	switch (v->kind) {
	case TV_SLICE:
	case TV_BYTES:
		return false;
	case TV_MAP:
		return tv_types[v->type].is_ptr;
	case TV_STRUCT:
		return tv_types[v->type].is_ptr;
	default:
		return true;
	}
}

static bool is_nil_value(const struct tv *v)
{
	switch (v->kind) {
	case TV_INVALID:
	case TV_NIL:
		return true;
	case TV_SLICE:
	case TV_MAP:
	case TV_BYTES:
	case TV_STRUCT:
		return v->isnil;
	default:
		return false;
	}
}

/* Go's "non-comparable type(s)" messages. */
static const char *non_comparable(struct xs *s, const struct tv *a1, const struct tv *a)
{
	static _Thread_local char msg[300];
	struct ob_buf b;
	struct fspec f = {.width = -1, .prec = -1};
	ob_buf_init(&b, 250);
	if (a1->type != a->type) {
		ob_buf_puts(&b, "non-comparable types ");
		fmt_arg(s, &b, &f, 's', a1);
		ob_buf_printf(&b, ": %s, %s: ", tv_types[a1->type].go_name, tv_types[a->type].go_name);
		fmt_arg(s, &b, &f, 'v', a);
	} else {
		ob_buf_puts(&b, "non-comparable type ");
		fmt_arg(s, &b, &f, 's', a);
		ob_buf_printf(&b, ": %s", tv_types[a->type].go_name);
	}
	snprintf(msg, sizeof msg, "%s", b.p ? b.p : "non-comparable type");
	ob_buf_free(&b);
	return msg;
}

static bool fn_eq(struct xs *s, const struct tv *args, size_t n, const char **err)
{
	struct tv a1 = indirect_iface(args[0]);
	if (n < 2) {
		*err = "missing argument for comparison";
		return false;
	}
	enum bkind k1 = basic_kind(&a1);
	for (size_t i = 1; i < n; i++) {
		struct tv a = indirect_iface(args[i]);
		enum bkind k2 = basic_kind(&a);
		bool truth = false;
		if (k1 != k2) {
			if (k1 == K_INT && k2 == K_UINT)
				truth = a1.u.i >= 0 && a1.u.i == a.u.i;
			else if (k1 == K_UINT && k2 == K_INT)
				truth = a.u.i >= 0 && a1.u.i == a.u.i;
			else if (a1.kind != TV_INVALID && a.kind != TV_INVALID) {
				*err = "incompatible types for comparison";
				return false;
			}
		} else {
			switch (k1) {
			case K_BOOL: truth = a1.u.b == a.u.b; break;
			case K_FLOAT: truth = a1.u.f == a.u.f; break;
			case K_INT:
			case K_UINT: truth = a1.u.i == a.u.i; break;
			case K_STRING:
				truth = a1.u.s.n == a.u.s.n && memcmp(a1.u.s.p, a.u.s.p, a.u.s.n) == 0;
				break;
			default:
				/* non-basic kinds (or both invalid): Go compares nil-ness, else requires comparable
				 * types */
				if (a1.kind == TV_INVALID || a.kind == TV_INVALID) {
					truth = a1.kind == a.kind;
				} else if (is_nil_value(&a1) || is_nil_value(&a)) {
					truth = is_nil_value(&a1) == is_nil_value(&a);
				} else if (a1.type != a.type || !is_comparable_type(&a)) {
					*err = non_comparable(s, &a1, &a);
					return false;
				} else
					truth = values_identical(&a1, &a);
			}
		}
		if (truth)
			return true;
	}
	return false;
}

static bool fn_lt(struct xs *s, const struct tv *x, const struct tv *y, const char **err)
{
	struct tv a = indirect_iface(*x), b = indirect_iface(*y);
	enum bkind k1 = basic_kind(&a), k2 = basic_kind(&b);
	if (k1 == K_INVALID || k2 == K_INVALID) {
		*err = "invalid type for comparison";
		return false;
	}
	if (k1 != k2) {
		if (k1 == K_INT && k2 == K_UINT)
			return a.u.i < 0 || a.u.i < b.u.i;
		if (k1 == K_UINT && k2 == K_INT)
			return b.u.i >= 0 && a.u.i < b.u.i;
		*err = "incompatible types for comparison";
		return false;
	}
	switch (k1) {
	case K_BOOL:
	case K_COMPLEX:
		*err = "invalid type for comparison";
		return false;
	case K_FLOAT: return a.u.f < b.u.f;
	case K_INT:
	case K_UINT: return a.u.i < b.u.i;
	case K_STRING: {
		size_t m = a.u.s.n < b.u.s.n ? a.u.s.n : b.u.s.n;
		int c = memcmp(a.u.s.p, b.u.s.p, m);
		return c < 0 || (c == 0 && a.u.s.n < b.u.s.n);
	}
	default:
		*err = "invalid type for comparison";
		return false;
	}
}

static size_t seq_len(const struct tv *v)
{
	return v->kind == TV_BYTES ? v->u.s.n : v->kind == TV_STRING ? v->u.s.n : v->u.seq.n;
}

/* The element i of a slice/string/bytes value. */
static struct tv elem_at(const struct tv *v, size_t i)
{
	if (v->kind == TV_STRING || v->kind == TV_BYTES) {
		struct tv b = tv_int((unsigned char)v->u.s.p[i]);
		b.kind = TV_UINT8;
		b.type = TT_UINT8;
		return b;
	}
	return v->u.seq.v[i];
}

/* indexArg: an int index within [0, cap]. */
static bool index_arg(const struct tv *idx0, size_t cap, int64_t *out, char *msg, size_t msize)
{
	struct tv idx = indirect_iface(*idx0);
	int64_t x;
	if (idx.kind == TV_INT || idx.kind == TV_UINT8)
		x = idx.u.i;
	else if (idx.kind == TV_INVALID) {
		snprintf(msg, msize, "cannot index slice/array with nil");
		return false;
	} else {
		snprintf(msg, msize, "cannot index slice/array with type %s", tv_types[idx.type].go_name);
		return false;
	}
	if (x < 0 || (uint64_t)x > cap) {
		snprintf(msg, msize, "index out of range: %lld", (long long)x);
		return false;
	}
	*out = x;
	return true;
}

static struct tv fn_index(struct xs *s, const struct tv *args, size_t n, char *msg, size_t msize, bool *ok)
{
	struct tv item = indirect_iface(args[0]);
	*ok = false;
	if (item.kind == TV_INVALID) {
		snprintf(msg, msize, "index of untyped nil");
		return tv_invalid();
	}
	for (size_t i = 1; i < n; i++) {
		struct tv idx = indirect_iface(args[i]);
		item.iface = 0;
		if ((item.kind == TV_STRUCT || item.kind == TV_MAP) && tv_types[item.type].is_ptr && item.isnil) {
			snprintf(msg, msize, "index of nil pointer");
			return tv_invalid();
		}
		if (item.kind == TV_SLICE || item.kind == TV_STRING || item.kind == TV_BYTES) {
			int64_t x;
			if (!index_arg(&idx, seq_len(&item), &x, msg, msize))
				return tv_invalid();
			if ((size_t)x == seq_len(&item)) {
				snprintf(msg, msize, "reflect: slice index out of range");
				if (item.kind == TV_STRING)
					snprintf(msg, msize, "reflect: string index out of range");
				return tv_invalid();
			}
			item = elem_at(&item, (size_t)x);
		} else if (item.kind == TV_MAP && !tv_types[item.type].is_ptr) {
			if (idx.kind == TV_INVALID) {
				snprintf(msg, msize, "value is nil; should be of type string");
				return tv_invalid();
			}
			if (idx.kind != TV_STRING) {
				snprintf(msg, msize, "value has type %s; should be string", tv_types[idx.type].go_name);
				return tv_invalid();
			}
			bool found = false;
			for (size_t k = 0; k < item.u.map.n; k++)
				if (item.u.map.e[k].key_n == idx.u.s.n &&
				    memcmp(item.u.map.e[k].key, idx.u.s.p, idx.u.s.n) == 0) {
					uint8_t et = tv_types[item.type].elem;
					item = item.u.map.e[k].val;
					if (et == TT_NONE)
						item.iface = 1;
					found = true;
					break;
				}
			if (!found) {
				uint8_t et = tv_types[item.type].elem;
				if (!tv_zero(s->a, et, &item))
					xfail(s, MF_TPL_ERR_NOMEM);
			}
		} else {
			const char *tn = tv_types[item.type].go_name;
			if ((item.kind == TV_STRUCT || item.kind == TV_MAP) && tv_types[item.type].is_ptr)
				tn = item.type == TT_PROPMAP ? "api.ToolPropertiesMap" : "template.templateMessage";
			snprintf(msg, msize, "can't index item of type %s", tn);
			return tv_invalid();
		}
	}
	*ok = true;
	return item;
}

static struct tv fn_slice(struct xs *s, const struct tv *args, size_t n, char *msg, size_t msize, bool *ok)
{
	(void)s;
	struct tv item = indirect_iface(args[0]);
	*ok = false;
	if (item.kind == TV_INVALID) {
		snprintf(msg, msize, "slice of untyped nil");
		return tv_invalid();
	}
	if (n - 1 > 3) {
		snprintf(msg, msize, "too many slice indexes: %zu", n - 1);
		return tv_invalid();
	}
	if (item.kind == TV_STRING) {
		if (n - 1 == 3) {
			snprintf(msg, msize, "cannot 3-index slice a string");
			return tv_invalid();
		}
	} else if (item.kind != TV_SLICE && item.kind != TV_BYTES) {
		snprintf(msg, msize, "can't slice item of type %s", tv_types[item.type].go_name);
		return tv_invalid();
	}
	size_t cap = seq_len(&item);
	int64_t idx[3] = {0, (int64_t)cap, (int64_t)cap};
	for (size_t i = 1; i < n; i++)
		if (!index_arg(&args[i], cap, &idx[i - 1], msg, msize))
			return tv_invalid();
	if (idx[0] > idx[1]) {
		snprintf(msg, msize, "invalid slice index: %lld > %lld", (long long)idx[0], (long long)idx[1]);
		return tv_invalid();
	}
	if (n - 1 == 3 && idx[1] > idx[2]) {
		snprintf(msg, msize, "invalid slice index: %lld > %lld", (long long)idx[1], (long long)idx[2]);
		return tv_invalid();
	}
	struct tv r = item;
	r.iface = 0;
	r.isnil = 0;
	if (item.kind == TV_SLICE) {
		r.u.seq.v = item.u.seq.v + idx[0];
		r.u.seq.n = (size_t)(idx[1] - idx[0]);
		if (item.isnil && idx[0] == 0 && idx[1] == 0)
			r.isnil = 1;
	} else {
		r.u.s.p = item.u.s.p + idx[0];
		r.u.s.n = (size_t)(idx[1] - idx[0]);
	}
	*ok = true;
	return r;
}

static struct tv fn_len(struct xs *s, const struct tv *arg, char *msg, size_t msize, bool *ok)
{
	(void)s;
	struct tv v = indirect_iface(*arg);
	*ok = false;
	if (v.kind == TV_INVALID) {
		if (arg->kind == TV_NIL)
			snprintf(msg, msize, "len of nil pointer");
		else
			snprintf(msg, msize, "reflect: call of reflect.Value.Type on zero Value");
		return tv_invalid();
	}
	if ((v.kind == TV_STRUCT || v.kind == TV_MAP) && tv_types[v.type].is_ptr) {
		if (v.isnil)
			snprintf(msg, msize, "len of nil pointer");
		else
			snprintf(msg, msize, "len of type %s",
				 v.type == TT_PROPMAP ? "api.ToolPropertiesMap" : "template.templateMessage");
		return tv_invalid();
	}
	switch (v.kind) {
	case TV_STRING:
	case TV_BYTES:
		*ok = true;
		return tv_int((int64_t)v.u.s.n);
	case TV_SLICE:
		*ok = true;
		return tv_int((int64_t)v.u.seq.n);
	case TV_MAP:
		*ok = true;
		return tv_int((int64_t)v.u.map.n);
	default:
		snprintf(msg, msize, "len of type %s", tv_types[v.type].go_name);
		return tv_invalid();
	}
}

/* html: text/template's HTMLEscape of one byte */
static void html_escape_byte(struct ob_buf *b, unsigned char c)
{
	switch (c) {
	case '"': ob_buf_puts(b, "&#34;"); break;
	case '\'': ob_buf_puts(b, "&#39;"); break;
	case '&': ob_buf_puts(b, "&amp;"); break;
	case '<': ob_buf_puts(b, "&lt;"); break;
	case '>': ob_buf_puts(b, "&gt;"); break;
	case 0: ob_buf_puts(b, "\xef\xbf\xbd"); break;
	default: ob_buf_putc(b, (char)c);
	}
}

/* js: JSEscape of one byte */
static void js_escape_byte(struct ob_buf *b, unsigned char c)
{
	static const char hex[] = "0123456789ABCDEF";
	switch (c) {
	case '\\': ob_buf_puts(b, "\\\\"); break;
	case '\'': ob_buf_puts(b, "\\'"); break;
	case '"': ob_buf_puts(b, "\\\""); break;
	case '<': ob_buf_puts(b, "\\u003C"); break;
	case '>': ob_buf_puts(b, "\\u003E"); break;
	case '&': ob_buf_puts(b, "\\u0026"); break;
	case '=': ob_buf_puts(b, "\\u003D"); break;
	default:
		if (c < ' ') {
			char e[7] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15], 0};
			ob_buf_puts(b, e);
		} else
			ob_buf_putc(b, (char)c);
	}
}

/* urlquery: QueryEscape of one byte */
static void url_escape_byte(struct ob_buf *b, unsigned char c)
{
	static const char hex[] = "0123456789ABCDEF";
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
	    c == '_' || c == '.' || c == '~')
		ob_buf_putc(b, (char)c);
	else if (c == ' ')
		ob_buf_putc(b, '+');
	else {
		char e[4] = {'%', hex[c >> 4], hex[c & 15], 0};
		ob_buf_puts(b, e);
	}
}

/* The html, js and urlquery functions: their arguments as one string (evalArgs), escaped byte by byte. */
static struct tv escape(struct xs *s, const struct tv *args, size_t n,
			void (*escape_byte)(struct ob_buf *b, unsigned char c))
{
	struct ob_buf in, b;
	ob_buf_init(&in, MF_TPL_MAX_OUTPUT);
	eval_args_string(s, args, n, &in);
	ob_buf_init(&b, MF_TPL_MAX_OUTPUT);
	for (size_t i = 0; i < in.len; i++)
		escape_byte(&b, (unsigned char)in.p[i]);
	ob_buf_free(&in);
	return buf_to_string(s, &b);
}

static struct tv date_string(struct xs *s, int days_back)
{
	time_t now = s->o->now ? (time_t)s->o->now : time(NULL);
	struct tm tm;
	if (!localtime_r(&now, &tm))
		memset(&tm, 0, sizeof tm);
	if (days_back) {
		tm.tm_mday -= days_back;
		tm.tm_isdst = -1;
		time_t t2 = mktime(&tm);
		if (t2 == (time_t)-1 || !localtime_r(&t2, &tm))
			memset(&tm, 0, sizeof tm);
	}
	char buf[32];
	int n = snprintf(buf, sizeof buf, "%04d-%02d-%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
	char *p = tpl_arena_strdup(s->a, buf, (size_t)n);
	if (!p)
		xfail(s, MF_TPL_ERR_LIMIT);
	return tv_string(p, (size_t)n);
}

/* Runs builtin `id` on evaluated arguments. `node` is the command for error positions. */
static struct tv call_builtin(struct xs *s, int id, const struct tn *node, struct tv *args, size_t n)
{
	char msg[200];
	bool ok = true;
	const char *err = NULL;
	struct tv r = tv_invalid();
	msg[0] = 0;
	switch (id) {
	case F_NOT:
		return tv_bool(!tv_truth(&args[0]));
	case F_LEN:
		r = fn_len(s, &args[0], msg, sizeof msg, &ok);
		break;
	case F_INDEX:
		r = fn_index(s, args, n, msg, sizeof msg, &ok);
		break;
	case F_SLICE:
		r = fn_slice(s, args, n, msg, sizeof msg, &ok);
		break;
	case F_PRINT:
		return go_sprint(s, args, n, false);
	case F_PRINTLN:
		return go_sprint(s, args, n, true);
	case F_PRINTF: {
		struct tv f = indirect_iface(args[0]);
		return go_sprintf(s, f.u.s.p, f.u.s.n, args + 1, n - 1);
	}
	case F_EQ:
		r = tv_bool(fn_eq(s, args, n, &err));
		break;
	case F_NE: {
		bool e = fn_eq(s, args, n, &err);
		r = tv_bool(!e);
		break;
	}
	case F_LT:
		r = tv_bool(fn_lt(s, &args[0], &args[1], &err));
		break;
	case F_LE: {
		bool lt = fn_lt(s, &args[0], &args[1], &err);
		if (!lt && !err)
			lt = fn_eq(s, args, 2, &err);
		r = tv_bool(lt);
		break;
	}
	case F_GT: {
		bool le = fn_lt(s, &args[0], &args[1], &err);
		if (!le && !err)
			le = fn_eq(s, args, 2, &err);
		r = tv_bool(!le);
		break;
	}
	case F_GE: {
		bool lt = fn_lt(s, &args[0], &args[1], &err);
		r = tv_bool(!lt);
		break;
	}
	case F_HTML:
		return escape(s, args, n, html_escape_byte);
	case F_JS:
		return escape(s, args, n, js_escape_byte);
	case F_URLQUERY:
		return escape(s, args, n, url_escape_byte);
	case F_CALL: {
		struct tv f = indirect_iface(args[0]);
		ok = false;
		if (f.kind == TV_INVALID)
			snprintf(msg, sizeof msg, "call of nil");
		else
			snprintf(msg, sizeof msg, "non-function of type %s", tv_types[f.type].go_name);
		break;
	}
	case F_JSON: {
		struct ob_jw w;
		ob_jw_init(&w, MF_TPL_MAX_OUTPUT, 0);
		struct tv v = args[0];
		tv_json(&w, &v);
		size_t len = 0;
		char *j = ob_jw_take(&w, &len);
		ob_jw_free(&w);
		if (!j)
			return tv_string("", 0); /* Ollama ignores marshal errors */
		char *p = tpl_arena_strdup(s->a, j, len);
		free(j);
		if (!p)
			xfail(s, MF_TPL_ERR_LIMIT);
		return tv_string(p, len);
	}
	case F_CURRENTDATE:
		return date_string(s, 0);
	case F_YESTERDAYDATE:
		return date_string(s, 1);
	case F_TOTS: {
		struct tv v = indirect_iface(args[0]);
		if (v.kind == TV_STRUCT && v.type == TT_PROP) {
			struct ob_buf b;
			ob_buf_init(&b, MF_TPL_MAX_OUTPUT);
			tv_prop_typescript(&b, &v);
			return buf_to_string(s, &b);
		}
		return tv_string("any", 3);
	}
	}
	if (err) {
		s->at = node;
		xerr(s, "error calling %s: %s", fns[id].name, err);
	}
	if (!ok) {
		s->at = node;
		xerr(s, "error calling %s: %s", fns[id].name, msg);
	}
	return r;
}

/* ------------------------------------------------------------------------------------------ evaluation */

static struct tv eval_pipeline(struct xs *s, struct tv dot, const struct tn *pipe);
static void walk(struct xs *s, struct tv dot, const struct tn *node);

struct final {
	bool has;
	struct tv v;
};

static void not_a_function(struct xs *s, const struct tn *cmd_args0, size_t nargs, const struct final *fin)
{
	if (nargs > 1 || fin->has) {
		struct ob_buf b;
		ob_buf_init(&b, 4096);
		tpl_node_string(&b, cmd_args0);
		char m[200];
		snprintf(m, sizeof m, "%s", b.p ? b.p : "");
		ob_buf_free(&b);
		xerr(s, "can't give argument to non-function %s", m);
	}
}

static struct tv ideal_constant(struct xs *s, const struct tn *c)
{
	s->at = c;
	bool hex_int = c->n > 2 && c->s[0] == '0' && (c->s[1] == 'x' || c->s[1] == 'X') && !memchr(c->s, 'p', c->n) &&
		       !memchr(c->s, 'P', c->n);
	bool rune_int = c->n > 0 && c->s[0] == '\'';
	bool has_float_chars = false;
	for (size_t i = 0; i < c->n; i++)
		if (strchr(".eEpP", c->s[i]))
			has_float_chars = true;
	if (c->is_float && !hex_int && !rune_int && has_float_chars)
		return tv_float(c->f64);
	if (c->is_int)
		return tv_int(c->i64);
	if (c->is_uint)
		xerr(s, "%.*s overflows int", (int)c->n, c->s);
	return tv_invalid();
}

/* validateType for a parameter of type `pt`. */
static struct tv validate(struct xs *s, struct tv v, enum ptype pt)
{
	switch (pt) {
	case P_VALUE:
		return v;
	case P_ANY:
		if (v.kind == TV_INVALID)
			return tv_nil();
		return v;
	case P_STRING: {
		if (v.kind == TV_INVALID)
			xerr(s, "invalid value; expected string");
		struct tv u = indirect_iface(v);
		if (u.kind != TV_STRING)
			xerr(s, "wrong type for value; expected string; got %s", tv_type_name(&v));
		return u;
	}
	}
	return v;
}

static struct tv eval_field_node(struct xs *s, struct tv dot, const struct tn *field, const struct tn *const *args,
				 size_t nargs, const struct final *fin);
static struct tv eval_variable_node(struct xs *s, struct tv dot, const struct tn *var, const struct tn *const *args,
				    size_t nargs, const struct final *fin);
static struct tv eval_chain_node(struct xs *s, struct tv dot, const struct tn *chain, const struct tn *const *args,
				 size_t nargs, const struct final *fin);
static struct tv eval_function(struct xs *s, struct tv dot, const struct tn *ident, const struct tn *cmd,
			       const struct tn *const *args, size_t nargs, const struct final *fin);

static const struct final NO_FINAL = {false, {0}};

static struct tv eval_arg(struct xs *s, struct tv dot, enum ptype pt, const struct tn *n)
{
	s->at = n;
	switch (n->type) {
	case TN_DOT:
		return validate(s, dot, pt);
	case TN_NIL:
		if (pt == P_STRING)
			xerr(s, "cannot assign nil to string");
		return pt == P_ANY ? tv_nil() : tv_invalid();
	case TN_FIELD:
		return validate(s, eval_field_node(s, dot, n, NULL, 0, &NO_FINAL), pt);
	case TN_VARIABLE:
		return validate(s, eval_variable_node(s, dot, n, NULL, 0, &NO_FINAL), pt);
	case TN_PIPE:
		return validate(s, eval_pipeline(s, dot, n), pt);
	case TN_IDENTIFIER:
		return validate(s, eval_function(s, dot, n, n, NULL, 0, &NO_FINAL), pt);
	case TN_CHAIN:
		return validate(s, eval_chain_node(s, dot, n, NULL, 0, &NO_FINAL), pt);
	default:
		break;
	}
	if (pt == P_STRING) {
		if (n->type == TN_STRING)
			return tv_string(n->s, n->n);
		struct ob_buf b;
		ob_buf_init(&b, 4096);
		tpl_node_string(&b, n);
		char m[200];
		snprintf(m, sizeof m, "%s", b.p ? b.p : "");
		ob_buf_free(&b);
		xerr(s, "expected string; found %s", m);
	}
	switch (n->type) {
	case TN_BOOL:
		return tv_bool(n->bval);
	case TN_NUMBER:
		return ideal_constant(s, n);
	case TN_STRING:
		return tv_string(n->s, n->n);
	default:
		xerr(s, "can't handle argument");
	}
}

/* Calls builtin `id` named by `name` with argument nodes args[1..] and the piped final value. */
static struct tv eval_call(struct xs *s, struct tv dot, int id, const struct tn *node, const struct tn *const *args,
			   size_t nargs, const struct final *fin)
{
	const struct fn_desc *d = &fns[id];
	size_t given = (nargs ? nargs - 1 : 0) + (fin->has ? 1 : 0);
	if (d->variadic) {
		if (given < (size_t)d->nfixed)
			xerr(s, "wrong number of args for %s: want at least %d got %zu", d->name, d->nfixed,
			     nargs ? nargs - 1 : 0);
	} else if (given != (size_t)d->nfixed)
		xerr(s, "wrong number of args for %s: want %d got %zu", d->name, d->nfixed, given);
	/* and/or short-circuit and return the deciding operand */
	if (id == F_AND || id == F_OR) {
		struct tv v = tv_invalid();
		for (size_t i = 1; i < nargs; i++) {
			v = eval_arg(s, dot, P_VALUE, args[i]);
			if (tv_truth(&v) == (id == F_OR))
				return v;
		}
		if (fin->has)
			v = fin->v;
		return v;
	}
	if (given > 1u << 16)
		xerr(s, "too many arguments");
	struct tv *argv = xalloc(s, (given ? given : 1) * sizeof *argv);
	size_t i = 0;
	for (; i + 1 < nargs; i++) {
		enum ptype pt = (int)i < d->nfixed ? d->fixed_type : d->var_type;
		argv[i] = eval_arg(s, dot, pt, args[i + 1]);
	}
	if (fin->has) {
		enum ptype pt = (int)i < d->nfixed ? d->fixed_type : d->var_type;
		argv[i] = validate(s, fin->v, pt);
	}
	return call_builtin(s, id, node, argv, given);
}

static struct tv eval_function(struct xs *s, struct tv dot, const struct tn *ident, const struct tn *cmd,
			       const struct tn *const *args, size_t nargs, const struct final *fin)
{
	s->at = ident;
	int id = find_fn(s, ident->s, ident->n);
	if (id < 0)
		xerr(s, "\"%.*s\" is not a defined function", (int)ident->n, ident->s);
	return eval_call(s, dot, id, cmd, args, nargs, fin);
}

/* Methods Go finds with MethodByName before looking at fields: returns true when `name` is one. */
static bool call_method(struct xs *s, const struct tv *recv, const char *name, size_t n, size_t nargs,
			const struct final *fin, struct tv *out)
{
	const struct tv_type_desc *d = &tv_types[recv->type];
	bool is_string = n == 6 && memcmp(name, "String", 6) == 0;
	bool is_ts = recv->type == TT_PROP && n == 16 && memcmp(name, "ToTypeScriptType", 16) == 0;
	bool is_len = recv->type == TT_PROPMAP && n == 3 && memcmp(name, "Len", 3) == 0;
	bool is_tomap = recv->type == TT_PROPMAP && n == 5 && memcmp(name, "ToMap", 5) == 0;
	if (!((is_string && d->stringer) || is_ts || is_len || is_tomap))
		return false;
	size_t given = (nargs ? nargs - 1 : 0) + (fin->has ? 1 : 0);
	if (given != 0)
		xerr(s, "wrong number of args for %.*s: want 0 got %zu", (int)n, name, given);
	struct ob_buf b;
	ob_buf_init(&b, MF_TPL_MAX_OUTPUT);
	if (is_string) {
		tv_stringer(&b, recv);
		*out = buf_to_string(s, &b);
	} else if (is_ts) {
		tv_prop_typescript(&b, recv);
		*out = buf_to_string(s, &b);
	} else if (is_len) {
		ob_buf_free(&b);
		*out = tv_int(recv->isnil ? 0 : (int64_t)recv->u.map.n);
	} else {
		ob_buf_free(&b);
		*out = *recv;
		out->type = TT_PROPMAP_PLAIN;
		if (!recv->isnil) {
			struct tv_entry *e = xalloc(s, (recv->u.map.n ? recv->u.map.n : 1) * sizeof *e);
			memcpy(e, recv->u.map.e, recv->u.map.n * sizeof *e);
			tv_sort_entries(e, recv->u.map.n);
			out->u.map.e = e;
		}
	}
	return true;
}

static struct tv eval_field(struct xs *s, struct tv dot, const struct tpl_sv *name, const struct tn *node, size_t nargs,
			    const struct final *fin, struct tv recv)
{
	(void)dot;
	if (recv.kind == TV_INVALID)
		return tv_invalid(); /* missingkey is never "error" for Ollama */
	const char *tname = tv_type_name(&recv);
	if (recv.kind == TV_NIL)
		xerr(s, "nil pointer evaluating %s.%.*s", tname, (int)name->n, name->p);
	struct tv r = recv;
	r.iface = 0;
	struct tv out;
	if (!((r.kind == TV_STRUCT || r.kind == TV_MAP) && tv_types[r.type].is_ptr && r.isnil) &&
	    call_method(s, &r, name->p, name->n, nargs, fin, &out))
		return out;
	bool has_args = nargs > 1 || fin->has;
	if (r.kind == TV_STRUCT) {
		int fi = tv_field_index(r.type, name->p, name->n);
		if (fi >= 0) {
			if (tv_types[r.type].is_ptr && r.isnil)
				xerr(s, "nil pointer evaluating %s.%.*s", tname, (int)name->n, name->p);
			if (has_args)
				xerr(s, "%.*s has arguments but cannot be invoked as function", (int)name->n, name->p);
			return r.u.fields[fi];
		}
	} else if (r.kind == TV_MAP && !tv_types[r.type].is_ptr) {
		if (has_args)
			xerr(s, "%.*s is not a method but has arguments", (int)name->n, name->p);
		uint8_t et = tv_types[r.type].elem;
		for (size_t i = 0; i < r.u.map.n; i++)
			if (r.u.map.e[i].key_n == name->n && memcmp(r.u.map.e[i].key, name->p, name->n) == 0) {
				struct tv v = r.u.map.e[i].val;
				if (et == TT_NONE)
					v.iface = 1;
				return v;
			}
		if (!s->o->missingkey_zero)
			return tv_invalid();
		struct tv z;
		if (!tv_zero(s->a, et, &z))
			xfail(s, MF_TPL_ERR_NOMEM);
		return z;
	}
	xerr(s, "can't evaluate field %.*s in type %s", (int)name->n, name->p, tname);
}

static struct tv eval_field_chain(struct xs *s, struct tv dot, struct tv recv, const struct tn *node,
				  const struct tpl_sv *ident, size_t n, size_t nargs, const struct final *fin)
{
	for (size_t i = 0; i + 1 < n; i++)
		recv = eval_field(s, dot, &ident[i], node, 0, &NO_FINAL, recv);
	return eval_field(s, dot, &ident[n - 1], node, nargs, fin, recv);
}

static struct tv eval_field_node(struct xs *s, struct tv dot, const struct tn *field, const struct tn *const *args,
				 size_t nargs, const struct final *fin)
{
	s->at = field;
	(void)args;
	return eval_field_chain(s, dot, dot, field, field->ident, field->nident, nargs, fin);
}

static struct tv eval_chain_node(struct xs *s, struct tv dot, const struct tn *chain, const struct tn *const *args,
				 size_t nargs, const struct final *fin)
{
	s->at = chain;
	(void)args;
	if (chain->node->type == TN_NIL)
		xerr(s, "indirection through explicit nil"); /* the parser already refuses nil.Field */
	struct tv v = eval_arg(s, dot, P_VALUE, chain->node);
	s->at = chain;
	return eval_field_chain(s, dot, v, chain, chain->ident, chain->nident, nargs, fin);
}

static struct tv eval_variable_node(struct xs *s, struct tv dot, const struct tn *var, const struct tn *const *args,
				    size_t nargs, const struct final *fin)
{
	s->at = var;
	struct tv v = var_value(s, &var->ident[0]);
	if (var->nident == 1) {
		if (args)
			not_a_function(s, args[0], nargs, fin);
		return v;
	}
	return eval_field_chain(s, dot, v, var, var->ident + 1, var->nident - 1, nargs, fin);
}

static struct tv eval_command(struct xs *s, struct tv dot, const struct tn *cmd, const struct final *fin)
{
	step(s);
	const struct tn *first = cmd->kids[0];
	const struct tn *const *args = (const struct tn *const *)cmd->kids;
	size_t nargs = cmd->nkids;
	switch (first->type) {
	case TN_FIELD:
		return eval_field_node(s, dot, first, args, nargs, fin);
	case TN_CHAIN:
		return eval_chain_node(s, dot, first, args, nargs, fin);
	case TN_IDENTIFIER:
		return eval_function(s, dot, first, cmd, args, nargs, fin);
	case TN_PIPE:
		not_a_function(s, first, nargs, fin);
		return eval_pipeline(s, dot, first);
	case TN_VARIABLE:
		return eval_variable_node(s, dot, first, args, nargs, fin);
	default:
		break;
	}
	s->at = first;
	not_a_function(s, first, nargs, fin);
	switch (first->type) {
	case TN_BOOL:
		return tv_bool(first->bval);
	case TN_DOT:
		return dot;
	case TN_NIL:
		xerr(s, "nil is not a command");
	case TN_NUMBER:
		return ideal_constant(s, first);
	case TN_STRING:
		return tv_string(first->s, first->n);
	default:
		xerr(s, "can't evaluate command");
	}
}

static struct tv eval_pipeline(struct xs *s, struct tv dot, const struct tn *pipe)
{
	struct tv value = tv_invalid();
	if (!pipe)
		return value;
	s->at = pipe;
	struct final fin = {false, {0}};
	for (size_t i = 0; i < pipe->nkids; i++) {
		value = eval_command(s, dot, pipe->kids[i], &fin);
		/* an interface value is replaced by what it holds (nil → invalid) */
		if (value.iface)
			value = indirect_iface(value);
		fin.has = true;
		fin.v = value;
	}
	for (size_t i = 0; i < pipe->ndecl; i++) {
		const struct tpl_sv *id = &pipe->decl[i]->ident[0];
		if (pipe->is_assign)
			set_var(s, id->p, id->n, value);
		else
			push(s, id->p, id->n, value);
	}
	return value;
}

/* ------------------------------------------------------------------------------------------ walking */

static void print_value(struct xs *s, const struct tn *node, struct tv v)
{
	s->at = node;
	if (v.kind == TV_INVALID) {
		if (!ob_buf_puts(s->out, "<no value>"))
			xfail(s, tpl_buf_error(s->out));
		return;
	}
	if (v.kind == TV_STRING) {
		if (!ob_buf_append(s->out, v.u.s.p, v.u.s.n))
			xfail(s, tpl_buf_error(s->out));
		return;
	}
	struct ob_buf b;
	ob_buf_init(&b, MF_TPL_MAX_OUTPUT);
	/* printableValue: a pointer is followed (nil stays nil) */
	tv_fmt_deref(&b, &v);
	buf_check(s, &b);
	if (!ob_buf_append(s->out, b.p ? b.p : "", b.len)) {
		ob_buf_free(&b);
		xfail(s, tpl_buf_error(s->out));
	}
	ob_buf_free(&b);
}

static void walk_list(struct xs *s, struct tv dot, const struct tn *list)
{
	for (size_t i = 0; i < list->nkids && s->ctl == CTL_NONE; i++)
		walk(s, dot, list->kids[i]);
}

static void walk_if_with(struct xs *s, struct tv dot, const struct tn *node)
{
	size_t m = mark(s);
	struct tv val = eval_pipeline(s, dot, node->pipe);
	bool truth = tv_truth(&val);
	if (truth) {
		if (node->type == TN_WITH)
			walk_list(s, val, node->list);
		else
			walk_list(s, dot, node->list);
	} else if (node->else_list)
		walk_list(s, dot, node->else_list);
	pop(s, m);
}

static void range_iteration(struct xs *s, const struct tn *r, struct tv index, struct tv elem, size_t m)
{
	if (++s->iterations > MF_TPL_MAX_ITERATIONS) {
		char why[64];
		snprintf(why, sizeof why, "more than %u range iterations", MF_TPL_MAX_ITERATIONS);
		xfail_what(s, MF_TPL_ERR_LIMIT, why);
	}
	const struct tn *pipe = r->pipe;
	if (pipe->ndecl > 0) {
		if (pipe->is_assign) {
			const struct tpl_sv *id = &pipe->decl[0]->ident[0];
			set_var(s, id->p, id->n, pipe->ndecl > 1 ? index : elem);
		} else
			s->vars[s->nvars - 1].val = elem;
	}
	if (pipe->ndecl > 1) {
		if (pipe->is_assign) {
			const struct tpl_sv *id = &pipe->decl[1]->ident[0];
			set_var(s, id->p, id->n, elem);
		} else
			s->vars[s->nvars - 2].val = index;
	}
	walk_list(s, elem, r->list);
	if (s->ctl == CTL_CONTINUE)
		s->ctl = CTL_NONE;
	pop(s, m);
}

static void walk_range(struct xs *s, struct tv dot, const struct tn *r)
{
	s->at = r;
	size_t outer = mark(s);
	struct tv val = eval_pipeline(s, dot, r->pipe);
	val.iface = 0;
	size_t m = mark(s);
	bool ran = false;
	switch (val.kind) {
	case TV_SLICE:
	case TV_BYTES:
	case TV_STRING:
		if (val.kind == TV_STRING)
			goto bad;
		for (size_t i = 0; i < seq_len(&val) && s->ctl != CTL_BREAK; i++) {
			struct tv e = elem_at(&val, i);
			if (val.kind == TV_SLICE && tv_types[val.type].elem == TT_NONE)
				e.iface = 1;
			range_iteration(s, r, tv_int((int64_t)i), e, m);
			ran = true;
		}
		break;
	case TV_MAP:
		if (tv_types[val.type].is_ptr)
			goto bad;
		for (size_t i = 0; i < val.u.map.n && s->ctl != CTL_BREAK; i++) {
			struct tv k = tv_string(val.u.map.e[i].key, val.u.map.e[i].key_n);
			struct tv e = val.u.map.e[i].val;
			if (tv_types[val.type].elem == TT_NONE)
				e.iface = 1;
			range_iteration(s, r, k, e, m);
			ran = true;
		}
		break;
	case TV_INT:
		/* Go 1.22: range over an integer */
		if (r->pipe->ndecl > 1)
			xerr(s, "can't use %lld to iterate over more than one variable", (long long)val.u.i);
		for (int64_t i = 0; i < val.u.i && s->ctl != CTL_BREAK; i++) {
			range_iteration(s, r, tv_invalid(), tv_int(i), m);
			ran = true;
		}
		break;
	case TV_INVALID:
	case TV_NIL:
		break;
	case TV_STRUCT:
		if (tv_types[val.type].is_ptr && val.isnil)
			break;
		goto bad;
	default:
	bad: {
		struct ob_buf b;
		ob_buf_init(&b, 4096);
		tv_fmt_deref(&b, &val);
		char m2[200];
		snprintf(m2, sizeof m2, "%s", b.p ? b.p : "");
		ob_buf_free(&b);
		xerr(s, "range can't iterate over %s", m2);
	}
	}
	if (s->ctl == CTL_BREAK)
		s->ctl = CTL_NONE;
	if (!ran && r->else_list)
		walk_list(s, dot, r->else_list);
	pop(s, outer);
}

static void walk_template(struct xs *s, struct tv dot, const struct tn *node)
{
	s->at = node;
	const struct tpl_tree *tree = NULL;
	for (size_t i = 0; i < s->t->ntrees; i++)
		if (strlen(s->t->trees[i].name) == node->n && memcmp(s->t->trees[i].name, node->s, node->n) == 0)
			tree = &s->t->trees[i];
	/* the cut-down legacy tree runs in a new template named "" that has no other definitions */
	struct tpl_tree self = {"", (struct tn *)s->root};
	if (s->o->detached)
		tree = node->n == 0 ? &self : NULL;
	if (!tree)
		xerr(s, "template \"%.*s\" not defined", (int)node->n, node->s);
	if (s->depth >= MF_TPL_MAX_CALL_DEPTH)
		xerr(s, "exceeded maximum template depth (%d)", MF_TPL_MAX_CALL_DEPTH);
	struct tv ndot = eval_pipeline(s, dot, node->pipe);
	size_t saved_frame = s->frame;
	size_t m = mark(s);
	const char *saved_name = s->tmpl_name;
	s->depth++;
	s->frame = s->nvars;
	push(s, "$", 1, ndot);
	s->tmpl_name = tree->name;
	walk_list(s, ndot, tree->root);
	s->ctl = CTL_NONE;
	s->tmpl_name = saved_name;
	s->depth--;
	pop(s, m);
	s->frame = saved_frame;
}

static void walk(struct xs *s, struct tv dot, const struct tn *node)
{
	step(s);
	s->at = node;
	switch (node->type) {
	case TN_ACTION: {
		struct tv v = eval_pipeline(s, dot, node->pipe);
		if (node->pipe->ndecl == 0)
			print_value(s, node, v);
		break;
	}
	case TN_BREAK:
		s->ctl = CTL_BREAK;
		break;
	case TN_CONTINUE:
		s->ctl = CTL_CONTINUE;
		break;
	case TN_IF:
	case TN_WITH:
		walk_if_with(s, dot, node);
		break;
	case TN_LIST:
		walk_list(s, dot, node);
		break;
	case TN_RANGE:
		walk_range(s, dot, node);
		break;
	case TN_TEMPLATE:
		walk_template(s, dot, node);
		break;
	case TN_TEXT:
		if (!ob_buf_append(s->out, node->s, node->n))
			xfail(s, tpl_buf_error(s->out));
		break;
	default:
		xerr(s, "unknown node");
	}
}

int tpl_exec(const struct mf_tpl *t, const struct tn *root, const struct tv *data, const struct tpl_exec_opts *o,
	     struct tpl_arena *arena, struct ob_buf *out, struct mf_tpl_error *err)
{
	struct xs s;
	memset(&s, 0, sizeof s);
	s.t = t;
	s.o = o;
	s.a = arena;
	s.out = out;
	s.err = err;
	s.tmpl_name = "";
	s.root = root ? root : t->trees[0].root;
	if (setjmp(s.jb)) {
		free(s.vars);
		return s.code;
	}
	push(&s, "$", 1, *data);
	walk_list(&s, *data, s.root);
	free(s.vars);
	return MF_TPL_OK;
}
