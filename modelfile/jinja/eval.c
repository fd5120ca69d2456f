/* modelfile/jinja/eval.c — the Jinja evaluator: statements, expressions, scoping and the sandbox.
 *
 * Scoping is jinja2's as chat templates see it: the top level and {% if %} share one namespace; each for-loop
 * iteration starts from the enclosing variables and its {% set %}s vanish with it (hence namespace()); a
 * macro sees its arguments, its own sets and the template's top level as it is at call time. Attribute and
 * item access follow jinja2's getattr/getitem fallbacks; the immutable sandbox refuses _private attributes
 * and the methods that modify lists and dicts (SecurityError once called). Part of jinja.c.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "modelfile/jinja/internal.h"

enum { JJ_FLOW_NEXT = 0, JJ_FLOW_BREAK, JJ_FLOW_CONTINUE };

static struct jj_val eval(struct jj_run *R, const struct jj_node *nd);
static int exec_body(struct jj_run *R, const struct jj_node *body);

/* Fails before the recursion of nested blocks and macro calls runs out of C stack (MF_JINJA_MAX_STACK). */
static void stack_check(struct jj_run *R)
{
	const char *sp = __builtin_frame_address(0);
	size_t used = R->stack_base > sp ? (size_t)(R->stack_base - sp) : (size_t)(sp - R->stack_base);
	if (used > MF_JINJA_MAX_STACK)
		jj_fail(&R->f, MF_JINJA_ELIMIT, "LimitError",
			"nesting limit exceeded: blocks nested in macro calls go deeper than %u KiB of stack",
			MF_JINJA_MAX_STACK >> 10);
}

/* A scratch buffer freed by the render's end whatever happens (errors unwind past its user). Release it
 * early with ob_buf_free. */
static struct ob_buf *tmpbuf(struct jj_run *R, size_t max)
{
	struct jj_tmpbuf *t = jj_alloc(&R->ar, &R->f, sizeof *t);
	ob_buf_init(&t->b, max);
	t->next = R->tmps;
	R->tmps = t;
	return &t->b;
}

/* Evaluated call arguments. */
struct jj_args {
	uint32_t n, nkw;
	struct jj_val *pos;
	const char *const *kwn;
	const size_t *kwl;
	struct jj_val *kw;
};

static struct jj_val call_value(struct jj_run *R, struct jj_val fn, const struct jj_args *a);
static struct jj_val call_method(struct jj_run *R, struct jj_val recv, int meth, const char *name, size_t len,
				 const struct jj_args *a);
static struct jj_val apply_filter(struct jj_run *R, int id, const char *name, struct jj_val v, const struct jj_args *a);
static bool apply_test(struct jj_run *R, int id, const char *name, struct jj_val v, const struct jj_args *a);
static bool meth_applies(struct jj_val recv, int meth);
static bool meth_unsafe(int meth);

/* ------------------------------------------------------------------------------------------ undefined */

/* The text jinja2's Undefined gives when used (its _undefined_message). */
static void undef_message(struct jj_run *R, struct jj_val u, char *buf, size_t size)
{
	char obj[96];
	object_type_repr(obj, sizeof obj, u.aux & 0xff, u.aux >> 8);
	struct ob_buf *b = tmpbuf(R, 0);
	switch (u.sub) {
	case JJ_UNDEF_NAME:
		write_str_repr(&R->f, b, u.s, u.len);
		ob_buf_puts(b, " is undefined");
		break;
	case JJ_UNDEF_ATTR:
		write_str_repr(&R->f, b, obj, strlen(obj));
		ob_buf_puts(b, " has no attribute ");
		write_str_repr(&R->f, b, u.s, u.len);
		break;
	case JJ_UNDEF_ITEM:
		ob_buf_puts(b, obj);
		ob_buf_puts(b, " has no element ");
		write_repr(&R->f, b, *u.recv, 0);
		break;
	case JJ_UNDEF_PLAIN:
		ob_buf_puts(b, "undefined value");
		break;
	default:
		ob_buf_append(b, u.s, u.len);
		break;
	}
	size_t n = b->len < size - 1 ? b->len : size - 1;
	jj_memcpy(buf, b->p ? b->p : "", n);
	buf[n] = 0;
	ob_buf_free(b);
}

__attribute__((noreturn)) static void fail_undef(struct jj_run *R, struct jj_val u)
{
	char msg[480];
	undef_message(R, u, msg, sizeof msg);
	if (u.sub == JJ_UNDEF_UNSAFE)
		jj_fail(&R->f, MF_JINJA_ESECURITY, "SecurityError", "%s", msg);
	jj_fail(&R->f, MF_JINJA_EUNDEFINED, "UndefinedError", "%s", msg);
}

static struct jj_val undef_attr(struct jj_val obj, const char *name, size_t len)
{
	struct jj_val u = jj_undef(JJ_UNDEF_ATTR, name, len);
	u.aux = (uint16_t)(obj.t | obj.sub << 8);
	return u;
}

static struct jj_val undef_item(struct jj_run *R, struct jj_val obj, struct jj_val key)
{
	if (key.t == JJ_STR)
		return undef_attr(obj, key.s, key.len);
	struct jj_val *k = jj_alloc(&R->ar, &R->f, sizeof *k);
	*k = key;
	struct jj_val u = {.t = JJ_UNDEF, .sub = JJ_UNDEF_ITEM, .aux = (uint16_t)(obj.t | obj.sub << 8), .recv = k};
	return u;
}

/* A message made now (a hint), raised as UndefinedError or SecurityError when the value is used. */
static struct jj_val undef_hint(struct jj_run *R, int kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static struct jj_val undef_hint(struct jj_run *R, int kind, const char *fmt, ...)
{
	char buf[400];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof buf)
		n = (int)sizeof buf - 1;
	return jj_undef(kind, jj_strdup(&R->ar, &R->f, buf, (size_t)n), (size_t)n);
}

static struct jj_val unsafe_attr(struct jj_run *R, struct jj_val obj, const char *name, size_t len)
{
	return undef_hint(R, JJ_UNDEF_UNSAFE, "access to attribute '%.*s' of '%s' object is unsafe.",
			  (int)(len > 100 ? 100 : len), name, jj_type_name(obj));
}

/* ------------------------------------------------------------------------------------------ variables */

static struct jj_val lookup(struct jj_run *R, int sym)
{
	for (const struct jj_scope *s = R->scope; s; s = s->parent)
		for (uint32_t k = s->n; k-- > 0;)
			if (s->syms[k] == sym)
				return s->vals[k];
	if (R->globals[sym].t != JJ_UNSET)
		return R->globals[sym];
	const struct jj_sym *y = &R->t->syms[sym];
	if (y->builtin >= 0) {
		struct jj_val v = {.t = JJ_FUNC, .sub = (uint8_t)y->builtin};
		return v;
	}
	return jj_undef(JJ_UNDEF_NAME, y->name, y->len);
}

static void scope_set(struct jj_run *R, struct jj_scope *s, int sym, struct jj_val v)
{
	for (uint32_t k = 0; k < s->n; k++)
		if (s->syms[k] == sym) {
			s->vals[k] = v;
			return;
		}
	if (s->n == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 8;
		int *syms = jj_alloc(&R->ar, &R->f, cap * sizeof *syms);
		struct jj_val *vals = jj_alloc(&R->ar, &R->f, cap * sizeof *vals);
		if (s->n) {
			jj_memcpy(syms, s->syms, s->n * sizeof *syms);
			jj_memcpy(vals, s->vals, s->n * sizeof *vals);
		}
		s->syms = syms;
		s->vals = vals;
		s->cap = cap;
	}
	s->syms[s->n] = sym;
	s->vals[s->n] = v;
	s->n++;
}

static void assign_sym(struct jj_run *R, int sym, struct jj_val v)
{
	if (R->scope)
		scope_set(R, R->scope, sym, v);
	else
		R->globals[sym] = v;
}

/* ------------------------------------------------------------------------------------------ iteration */

/* The items iterating v yields (Python's iter()): the list itself for lists (a generator is used up), keys of
 * a dict, characters of a string, nothing for undefined; TypeError for the rest. */
static const struct jj_list *iter_items(struct jj_run *R, struct jj_val v)
{
	static struct jj_val no_items[1];
	static const struct jj_list empty = {.v = no_items};
	switch (v.t) {
	case JJ_LIST:
		if (v.sub == JJ_SEQ_GEN) {
			if (v.l->consumed)
				return &empty;
			v.l->consumed = true;
		}
		return v.l;
	case JJ_DICT: {
		struct jj_list *l = jj_list_new(&R->ar, &R->f, v.d->n);
		for (size_t k = 0; k < v.d->n; k++)
			l->v[k] = v.d->kv[k].k;
		return l;
	}
	case JJ_STR: {
		size_t n = jj_strlen_cp(v);
		struct jj_list *l = jj_list_new(&R->ar, &R->f, n);
		for (size_t i = 0, k = 0; i < v.len; k++) {
			size_t cl;
			jj_cp(v.s + i, v.len - i, &cl);
			l->v[k] = jj_str(v.s + i, cl);
			i += cl;
		}
		return l;
	}
	case JJ_UNDEF: return &empty;
	default: break;
	}
	jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "'%s' object is not iterable", jj_type_name(v));
}

/* Binds a for/set target (a name or a tuple of names) to v. */
static void bind_target(struct jj_run *R, const struct jj_node *target, struct jj_val v)
{
	if (target->kind == JJ_E_NAME) {
		assign_sym(R, target->sym, v);
		return;
	}
	const struct jj_list *items = iter_items(R, v);
	if (items->n < target->n)
		jj_fail(&R->f, MF_JINJA_EVALUE, "ValueError", "not enough values to unpack (expected %u, got %zu)",
			target->n, items->n);
	if (items->n > target->n)
		jj_fail(&R->f, MF_JINJA_EVALUE, "ValueError", "too many values to unpack (expected %u)", target->n);
	for (uint32_t k = 0; k < target->n; k++)
		assign_sym(R, target->list[k]->sym, items->v[k]);
}

/* ------------------------------------------------------------------------------------------ access */

static int64_t py_index(struct jj_run *R, struct jj_val v)
{
	(void)R;
	return int_of(v);
}

/* Python's slice.indices. */
static void slice_indices(size_t length, const struct jj_val *start, const struct jj_val *stop, int64_t step,
			  int64_t *pstart, int64_t *pstop)
{
	int64_t len = (int64_t)length;
	int64_t lower = step > 0 ? 0 : -1, upper = step > 0 ? len : len - 1;
	const struct jj_val *ends[2] = {start, stop};
	int64_t out[2];
	for (int k = 0; k < 2; k++) {
		if (!ends[k] || ends[k]->t == JJ_NONE) {
			out[k] = (k == 0) == (step < 0) ? upper : lower;
			continue;
		}
		int64_t x = int_of(*ends[k]);
		if (x < 0) {
			x += len;
			if (x < lower)
				x = lower;
		} else if (x > upper) {
			x = upper;
		}
		out[k] = x;
	}
	*pstart = out[0];
	*pstop = out[1];
}

static bool slice_arg_ok(const struct jj_val *v)
{
	return !v || v->t == JJ_NONE || is_intlike(*v);
}

/* Byte offsets of the code points of s (n + 1 entries). */
static size_t *cp_offsets(struct jj_run *R, struct jj_val s, size_t *count)
{
	size_t n = jj_strlen_cp(s);
	size_t *off = jj_alloc(&R->ar, &R->f, (n + 1) * sizeof *off);
	for (size_t i = 0, k = 0; k < n; k++) {
		off[k] = i;
		size_t cl;
		jj_cp(s.s + i, s.len - i, &cl);
		i += cl;
	}
	off[n] = s.len;
	*count = n;
	return off;
}

static struct jj_val do_slice(struct jj_run *R, struct jj_val obj, const struct jj_val *a, const struct jj_val *b,
			      const struct jj_val *c)
{
	if (obj.t == JJ_UNDEF)
		fail_undef(R, obj);
	bool seq = obj.t == JJ_LIST && (obj.sub == JJ_SEQ_LIST || obj.sub == JJ_SEQ_TUPLE);
	if ((!seq && obj.t != JJ_STR) || !slice_arg_ok(a) || !slice_arg_ok(b) || !slice_arg_ok(c)) {
		/* jinja2 turns the TypeError into an undefined value */
		struct jj_val sl = jj_str("slice", 5);
		return undef_item(R, obj, sl);
	}
	int64_t step = c && c->t != JJ_NONE ? int_of(*c) : 1;
	if (step == 0)
		jj_fail(&R->f, MF_JINJA_EVALUE, "ValueError", "slice step cannot be zero");
	size_t n, *off = NULL;
	bool ascii = obj.t == JJ_STR && jj_is_ascii(obj.s, obj.len);
	if (obj.t == JJ_STR)
		n = ascii ? obj.len : (off = cp_offsets(R, obj, &n), n);
	else
		n = obj.l->n;
	int64_t start, stop;
	slice_indices(n, a, b, step, &start, &stop);
	size_t count = 0;
	if (step > 0 && start < stop)
		count = (size_t)((stop - start + step - 1) / step);
	else if (step < 0 && start > stop)
		count = (size_t)((start - stop - step - 1) / -step);
	jj_charge(&R->f, count / 16);
	if (obj.t == JJ_STR) {
		if (step == 1) {
			size_t s0 = ascii ? (size_t)start : off[start], s1 = ascii ? (size_t)stop : off[stop];
			return count ? jj_str(obj.s + s0, s1 - s0) : jj_str("", 0);
		}
		char *buf = jj_alloc(&R->ar, &R->f, obj.len + 1);
		size_t o = 0;
		for (size_t k = 0; k < count; k++) {
			int64_t i = start + (int64_t)k * step;
			size_t b0 = ascii ? (size_t)i : off[i], b1 = ascii ? (size_t)i + 1 : off[i + 1];
			jj_memcpy(buf + o, obj.s + b0, b1 - b0);
			o += b1 - b0;
		}
		return jj_str(buf, o);
	}
	struct jj_list *l = jj_list_new(&R->ar, &R->f, count);
	for (size_t k = 0; k < count; k++)
		l->v[k] = obj.l->v[start + (int64_t)k * step];
	return jj_list_val(l, obj.sub);
}

/* A string result that keeps the Markup mark of the string it came from. */
static struct jj_val keep_markup(struct jj_val from, struct jj_val v)
{
	if (from.t == JJ_STR && v.t == JJ_STR)
		v.sub = from.sub;
	return v;
}

static struct jj_val loop_attr(struct jj_run *R, struct jj_val obj, const char *name, size_t len, int meth);

/* jinja2's sandboxed getattr(obj, name): methods of str/dict/list, then obj[name]; undefined when absent. */
static struct jj_val get_attr(struct jj_run *R, struct jj_val obj, const char *name, size_t len, int meth)
{
	if (obj.t == JJ_UNDEF)
		fail_undef(R, obj);
	if (len && name[0] == '_')
		return unsafe_attr(R, obj, name, len);
	if (meth >= 0 && meth_applies(obj, meth)) {
		if (meth_unsafe(meth))
			return unsafe_attr(R, obj, name, len);
		struct jj_val *recv = jj_alloc(&R->ar, &R->f, sizeof *recv);
		*recv = obj;
		struct jj_val m = {.t = JJ_METHOD, .sub = (uint8_t)meth, .recv = recv};
		return m;
	}
	switch (obj.t) {
	case JJ_DICT:
	case JJ_NS: {
		const struct jj_val *v = jj_dict_get_str(obj.d, name, len);
		if (v)
			return *v;
		break;
	}
	case JJ_LOOP: return loop_attr(R, obj, name, len, meth);
	default: break;
	}
	return undef_attr(obj, name, len);
}

/* jinja2's getitem(obj, key): obj[key], else for a string key getattr(obj, key), else undefined. */
static struct jj_val get_item(struct jj_run *R, struct jj_val obj, struct jj_val key)
{
	if (obj.t == JJ_UNDEF)
		fail_undef(R, obj);
	switch (obj.t) {
	case JJ_LIST:
		if ((obj.sub == JJ_SEQ_LIST || obj.sub == JJ_SEQ_TUPLE) && is_intlike(key)) {
			int64_t i = py_index(R, key), n = (int64_t)obj.l->n;
			if (i < 0)
				i += n;
			if (i >= 0 && i < n)
				return obj.l->v[i];
			return undef_item(R, obj, key);
		}
		break;
	case JJ_DICT: {
		if (key.t == JJ_LIST && (key.sub == JJ_SEQ_LIST))
			break; /* unhashable: TypeError, caught by jinja2 */
		if (key.t == JJ_DICT || key.t == JJ_NS)
			break;
		const struct jj_val *v = jj_dict_get(&R->f, obj.d, key);
		if (v)
			return *v;
		break;
	}
	case JJ_STR:
		if (is_intlike(key)) {
			int64_t i = py_index(R, key);
			if (jj_is_ascii(obj.s, obj.len)) {
				int64_t n = (int64_t)obj.len;
				if (i < 0)
					i += n;
				if (i >= 0 && i < n)
					return jj_str(obj.s + i, 1);
				return undef_item(R, obj, key);
			}
			size_t n, *off = cp_offsets(R, obj, &n);
			if (i < 0)
				i += (int64_t)n;
			if (i >= 0 && i < (int64_t)n)
				return jj_str(obj.s + off[i], off[i + 1] - off[i]);
			return undef_item(R, obj, key);
		}
		break;
	default: break;
	}
	if (key.t == JJ_STR)
		return get_attr(R, obj, key.s, key.len, jj_meth_lookup(key.s, key.len));
	return undef_item(R, obj, key);
}

static struct jj_val loop_attr(struct jj_run *R, struct jj_val obj, const char *name, size_t len, int meth)
{
	const struct jj_loop *lp = obj.loop;
	size_t n = lp->items->n, i = lp->i;
#define IS(lit) (len == sizeof lit - 1 && memcmp(name, lit, len) == 0)
	if (IS("index"))
		return jj_int((int64_t)i + 1);
	if (IS("index0"))
		return jj_int((int64_t)i);
	if (IS("revindex"))
		return jj_int((int64_t)(n - i));
	if (IS("revindex0"))
		return jj_int((int64_t)(n - i - 1));
	if (IS("first"))
		return jj_bool(i == 0);
	if (IS("last"))
		return jj_bool(i + 1 == n);
	if (IS("length"))
		return jj_int((int64_t)n);
	if (IS("depth"))
		return jj_int(1);
	if (IS("depth0"))
		return jj_int(0);
	if (IS("previtem"))
		return i > 0 ? lp->items->v[i - 1] : undef_hint(R, JJ_UNDEF_HINT, "there is no previous item");
	if (IS("nextitem"))
		return i + 1 < n ? lp->items->v[i + 1] : undef_hint(R, JJ_UNDEF_HINT, "there is no next item");
#undef IS
	if (meth == JJ_M_CYCLE || meth == JJ_M_CHANGED) {
		struct jj_val *recv = jj_alloc(&R->ar, &R->f, sizeof *recv);
		*recv = obj;
		struct jj_val m = {.t = JJ_METHOD, .sub = (uint8_t)meth, .recv = recv};
		return m;
	}
	return undef_attr(obj, name, len);
}

/* ------------------------------------------------------------------------------------------ operators */

__attribute__((noreturn)) static void fail_binop(struct jj_run *R, const char *sym, struct jj_val a, struct jj_val b)
{
	jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "unsupported operand type(s) for %s: '%s' and '%s'", sym,
		jj_type_name(a), jj_type_name(b));
}

static struct jj_val concat_str(struct jj_run *R, const char *a, size_t na, const char *b, size_t nb)
{
	if (na > R->max_output || nb > R->max_output - na)
		jj_fail(&R->f, MF_JINJA_ELIMIT, "LimitError", "string size limit exceeded: more than %zu bytes",
			R->max_output);
	char *p = jj_alloc(&R->ar, &R->f, na + nb + 1);
	jj_memcpy(p, a, na);
	jj_memcpy(p + na, b, nb);
	jj_charge(&R->f, (na + nb) / 256);
	return jj_str(p, na + nb);
}

/* markupsafe's escape: & < > ' " as entities; a Markup string is left alone. The result is Markup. */
static struct jj_val markup_escape(struct jj_run *R, struct jj_val s)
{
	if (s.sub == JJ_STR_MARKUP)
		return s;
	size_t extra = 0;
	for (size_t i = 0; i < s.len; i++)
		switch (s.s[i]) {
		case '&':
		case '\'':
		case '"': extra += 4; break;
		case '<':
		case '>': extra += 3; break;
		default: break;
		}
	struct jj_val r = s;
	if (extra) {
		char *p = jj_alloc(&R->ar, &R->f, s.len + extra + 1);
		size_t o = 0;
		for (size_t i = 0; i < s.len; i++) {
			const char *e = NULL;
			switch (s.s[i]) {
			case '&': e = "&amp;"; break;
			case '<': e = "&lt;"; break;
			case '>': e = "&gt;"; break;
			case '\'': e = "&#39;"; break;
			case '"': e = "&#34;"; break;
			default: p[o++] = s.s[i]; continue;
			}
			jj_memcpy(p + o, e, strlen(e));
			o += strlen(e);
		}
		r = jj_str(p, o);
	}
	r.sub = JJ_STR_MARKUP;
	return r;
}

static struct jj_val repeat(struct jj_run *R, struct jj_val seq, int64_t times)
{
	if (times < 0)
		times = 0;
	size_t unit = seq.t == JJ_STR ? seq.len : seq.l->n;
	if (unit && (uint64_t)times > (uint64_t)R->max_output / unit)
		jj_fail(&R->f, MF_JINJA_ELIMIT, "LimitError", "size limit exceeded: repeating %zu items %lld times",
			unit, (long long)times);
	size_t total = unit * (size_t)times;
	jj_charge(&R->f, total / 64);
	if (seq.t == JJ_STR) {
		char *p = jj_alloc(&R->ar, &R->f, total + 1);
		for (int64_t k = 0; k < times; k++)
			jj_memcpy(p + (size_t)k * unit, seq.s, unit);
		struct jj_val r = jj_str(p, total);
		r.sub = seq.sub;
		return r;
	}
	struct jj_list *l = jj_list_new(&R->ar, &R->f, total);
	for (int64_t k = 0; total && k < times; k++)
		jj_memcpy(l->v + (size_t)k * unit, seq.l->v, unit * sizeof *l->v);
	return jj_list_val(l, seq.sub);
}

/* Python's printf-style str % args for %s, %r, %d, %i and %%: flags, widths and other conversions are refused. */
static struct jj_val percent_format(struct jj_run *R, struct jj_val fmt, const struct jj_val *args, uint32_t n)
{
	struct ob_buf *b = tmpbuf(R, R->max_output);
	uint32_t ai = 0;
	for (size_t i = 0; i < fmt.len; i++) {
		if (fmt.s[i] != '%') {
			ob_buf_putc(b, fmt.s[i]);
			continue;
		}
		char c = i + 1 < fmt.len ? fmt.s[++i] : 0;
		if (c == '%') {
			ob_buf_putc(b, '%');
			continue;
		}
		if (c != 's' && c != 'd' && c != 'r' && c != 'i')
			jj_fail(&R->f, MF_JINJA_ERUNTIME, "TemplateRuntimeError",
				"printf-style conversion '%%%c' is not supported by orun's Jinja engine", c ? c : ' ');
		if (ai >= n)
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "not enough arguments for format string");
		struct jj_val x = args[ai++];
		if (c == 'r')
			write_repr(&R->f, b, x, 0);
		else if (c == 's')
			jj_write_str(&R->f, b, x);
		else if (is_number(x))
			jj_write_str(&R->f, b, jj_int(x.t == JJ_FLOAT ? (int64_t)x.f : int_of(x)));
		else
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "%%%c format: a real number is required, not %s", c,
				jj_type_name(x));
	}
	if (ai < n)
		jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "not all arguments converted during string formatting");
	buf_check(&R->f, b);
	struct jj_val s = jj_str(jj_strdup(&R->ar, &R->f, b->p ? b->p : "", b->len), b->len);
	ob_buf_free(b);
	return s;
}

static int64_t floordiv_i(int64_t a, int64_t b)
{
	int64_t q = a / b;
	if ((a % b != 0) && ((a < 0) != (b < 0)))
		q--;
	return q;
}

static struct jj_val binop(struct jj_run *R, int op, struct jj_val a, struct jj_val b)
{
	if (a.t == JJ_UNDEF)
		fail_undef(R, a);
	if (b.t == JJ_UNDEF)
		fail_undef(R, b);
	static const char *const syms[] = {[JJ_OP_ADD] = "+", [JJ_OP_SUB] = "-", [JJ_OP_MUL] = "*",
					   [JJ_OP_DIV] = "/", [JJ_OP_FLOORDIV] = "//", [JJ_OP_MOD] = "%",
					   [JJ_OP_POW] = "** or pow()"};
	const char *sym = syms[op];
	if (is_number(a) && is_number(b)) {
		bool fl = a.t == JJ_FLOAT || b.t == JJ_FLOAT;
		int64_t x = int_of(a), y = int_of(b), r;
		double fx = float_of(a), fy = float_of(b);
		switch (op) {
		case JJ_OP_ADD:
			if (fl)
				return jj_float(fx + fy);
			if (__builtin_add_overflow(x, y, &r))
				break;
			return jj_int(r);
		case JJ_OP_SUB:
			if (fl)
				return jj_float(fx - fy);
			if (__builtin_sub_overflow(x, y, &r))
				break;
			return jj_int(r);
		case JJ_OP_MUL:
			if (fl)
				return jj_float(fx * fy);
			if (__builtin_mul_overflow(x, y, &r))
				break;
			return jj_int(r);
		case JJ_OP_DIV:
			if (fy == 0)
				jj_fail(&R->f, MF_JINJA_ERUNTIME, "ZeroDivisionError",
					fl ? "float division by zero" : "division by zero");
			return jj_float(fx / fy);
		case JJ_OP_FLOORDIV:
			if (fl) {
				if (fy == 0)
					jj_fail(&R->f, MF_JINJA_ERUNTIME, "ZeroDivisionError", "float floor division by zero");
				return jj_float(floor(fx / fy));
			}
			if (y == 0)
				jj_fail(&R->f, MF_JINJA_ERUNTIME, "ZeroDivisionError", "integer division or modulo by zero");
			if (x == INT64_MIN && y == -1)
				break;
			return jj_int(floordiv_i(x, y));
		case JJ_OP_MOD:
			if (fl) {
				if (fy == 0)
					jj_fail(&R->f, MF_JINJA_ERUNTIME, "ZeroDivisionError", "float modulo");
				double m = fmod(fx, fy);
				if (m != 0 && ((m < 0) != (fy < 0)))
					m += fy;
				return jj_float(m);
			}
			if (y == 0)
				jj_fail(&R->f, MF_JINJA_ERUNTIME, "ZeroDivisionError", "integer modulo by zero");
			if (y == -1)
				return jj_int(0);
			return jj_int(x - floordiv_i(x, y) * y);
		case JJ_OP_POW:
			if (fl || y < 0)
				return jj_float(pow(fx, fy));
			r = 1;
			for (int64_t k = 0; k < y; k++) {
				if (__builtin_mul_overflow(r, x, &r))
					goto overflow;
				if (r == 0 || r == 1)
					break;
			}
			if (r == -1)
				r = (y & 1) ? -1 : 1;
			return jj_int(r);
		default: break;
		}
	overflow:
		jj_fail(&R->f, MF_JINJA_ELIMIT, "LimitError", "integer overflow: %lld %s %lld does not fit 64 bits",
			(long long)x, sym, (long long)y);
	}
	if (op == JJ_OP_ADD && ((a.t == JJ_STR && a.sub == JJ_STR_MARKUP) || (b.t == JJ_STR && b.sub == JJ_STR_MARKUP))) {
		/* Markup.__add__ / __radd__: the plain string is escaped, the result is Markup */
		if (a.t != JJ_STR || b.t != JJ_STR)
			fail_binop(R, sym, a, b);
		a = markup_escape(R, a);
		b = markup_escape(R, b);
		struct jj_val r = concat_str(R, a.s, a.len, b.s, b.len);
		r.sub = JJ_STR_MARKUP;
		return r;
	}
	if (op == JJ_OP_ADD) {
		if (a.t == JJ_STR) {
			if (b.t != JJ_STR)
				jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "can only concatenate str (not \"%s\") to str",
					jj_type_name(b));
			return concat_str(R, a.s, a.len, b.s, b.len);
		}
		if (a.t == JJ_LIST && (a.sub == JJ_SEQ_LIST || a.sub == JJ_SEQ_TUPLE)) {
			const char *tn = a.sub == JJ_SEQ_LIST ? "list" : "tuple";
			if (b.t != JJ_LIST || b.sub != a.sub)
				jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "can only concatenate %s (not \"%s\") to %s", tn,
					jj_type_name(b), tn);
			struct jj_list *l = jj_list_new(&R->ar, &R->f, a.l->n + b.l->n);
			jj_memcpy(l->v, a.l->v, a.l->n * sizeof *l->v);
			jj_memcpy(l->v + a.l->n, b.l->v, b.l->n * sizeof *l->v);
			jj_charge(&R->f, l->n / 16);
			return jj_list_val(l, a.sub);
		}
	}
	if (op == JJ_OP_MUL) {
		bool sa = a.t == JJ_STR || (a.t == JJ_LIST && (a.sub == JJ_SEQ_LIST || a.sub == JJ_SEQ_TUPLE));
		bool sb = b.t == JJ_STR || (b.t == JJ_LIST && (b.sub == JJ_SEQ_LIST || b.sub == JJ_SEQ_TUPLE));
		if (sa && is_intlike(b))
			return repeat(R, a, int_of(b));
		if (sb && is_intlike(a))
			return repeat(R, b, int_of(a));
		if (sa || sb)
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "can't multiply sequence by non-int of type '%s'",
				jj_type_name(sa ? b : a));
	}
	if (op == JJ_OP_MOD && a.t == JJ_STR) {
		if (b.t == JJ_LIST && b.sub == JJ_SEQ_TUPLE)
			return keep_markup(a, percent_format(R, a, b.l->v, (uint32_t)b.l->n));
		return keep_markup(a, percent_format(R, a, &b, 1));
	}
	fail_binop(R, sym, a, b);
}

/* Python's `a in b`. */
static bool contains(struct jj_run *R, struct jj_val a, struct jj_val b)
{
	switch (b.t) {
	case JJ_STR:
		if (a.t == JJ_UNDEF)
			fail_undef(R, a);
		if (a.t != JJ_STR)
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "'in <string>' requires string as left operand, not %s",
				jj_type_name(a));
		jj_charge(&R->f, b.len / 256);
		return a.len == 0 || (a.len <= b.len && memmem(b.s, b.len, a.s, a.len) != NULL);
	case JJ_DICT:
		if ((a.t == JJ_LIST && a.sub == JJ_SEQ_LIST) || a.t == JJ_DICT)
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "unhashable type: '%s'", jj_type_name(a));
		return jj_dict_get(&R->f, b.d, a) != NULL;
	case JJ_LIST: {
		const struct jj_list *l = iter_items(R, b);
		jj_charge(&R->f, l->n / 8);
		for (size_t k = 0; k < l->n; k++)
			if (jj_eq(&R->f, l->v[k], a))
				return true;
		return false;
	}
	case JJ_UNDEF: return false;
	default: break;
	}
	jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "argument of type '%s' is not iterable", jj_type_name(b));
}

static bool compare(struct jj_run *R, int op, struct jj_val a, struct jj_val b)
{
	switch (op) {
	case JJ_OP_EQ: return jj_eq(&R->f, a, b);
	case JJ_OP_NE: return !jj_eq(&R->f, a, b);
	case JJ_OP_IN: return contains(R, a, b);
	case JJ_OP_NOTIN: return !contains(R, a, b);
	default:
		if (a.t == JJ_UNDEF)
			fail_undef(R, a);
		if (b.t == JJ_UNDEF)
			fail_undef(R, b);
		return jj_order(&R->f, a, b, op, 0);
	}
}

/* ------------------------------------------------------------------------------------------ calls */

static void eval_args(struct jj_run *R, const struct jj_node *nd, struct jj_args *a)
{
	memset(a, 0, sizeof *a);
	a->n = nd->n;
	a->nkw = nd->nkw;
	if (nd->n) {
		a->pos = jj_alloc(&R->ar, &R->f, nd->n * sizeof *a->pos);
		for (uint32_t k = 0; k < nd->n; k++)
			a->pos[k] = eval(R, nd->list[k]);
	}
	if (nd->nkw) {
		a->kw = jj_alloc(&R->ar, &R->f, nd->nkw * sizeof *a->kw);
		for (uint32_t k = 0; k < nd->nkw; k++)
			a->kw[k] = eval(R, nd->kwargs[k]);
		a->kwn = nd->kwnames;
		a->kwl = nd->kwlens;
	}
}

/* Binds a->pos and a->kw to the parameters names[0..n): out[k] is set and have[k] true for each given one.
 * TypeError (worded as Python's) for too many positional or an unknown keyword argument. */
static void bind_args(struct jj_run *R, const char *fname, const struct jj_args *a, const char *const *names, int n,
		      struct jj_val *out, bool *have)
{
	for (int k = 0; k < n; k++)
		have[k] = false;
	if ((int)a->n > n)
		jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "%s() takes at most %d argument%s (%u given)", fname, n,
			n == 1 ? "" : "s", a->n);
	for (uint32_t k = 0; k < a->n; k++) {
		out[k] = a->pos[k];
		have[k] = true;
	}
	for (uint32_t k = 0; k < a->nkw; k++) {
		int j;
		for (j = 0; j < n; j++)
			if (strlen(names[j]) == a->kwl[k] && memcmp(names[j], a->kwn[k], a->kwl[k]) == 0)
				break;
		if (j == n)
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "%s() got an unexpected keyword argument '%s'", fname,
				a->kwn[k]);
		if (have[j])
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "%s() got multiple values for argument '%s'", fname,
				names[j]);
		out[j] = a->kw[k];
		have[j] = true;
	}
}

/* Renders body into a string of its own (a captured block or a macro's result). */
static struct jj_val capture(struct jj_run *R, const struct jj_node *body)
{
	struct ob_buf *b = tmpbuf(R, R->max_output), *saved = R->out;
	R->out = b;
	exec_body(R, body);
	R->out = saved;
	struct jj_val v = jj_str(jj_strdup(&R->ar, &R->f, b->p ? b->p : "", b->len), b->len);
	ob_buf_free(b);
	return v;
}

static struct jj_val call_macro(struct jj_run *R, const struct jj_node *m, const struct jj_args *a,
				const struct jj_val *caller)
{
	if (R->depth >= MF_JINJA_MAX_CALL_DEPTH)
		jj_fail(&R->f, MF_JINJA_ELIMIT, "LimitError", "recursion limit (%d nested macro calls) exceeded",
			MF_JINJA_MAX_CALL_DEPTH);
	if (a->n > m->n)
		jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "macro '%.*s' takes not more than %u argument(s)",
			(int)m->len, m->s, m->n);
	struct jj_scope *scope = jj_alloc(&R->ar, &R->f, sizeof *scope);
	struct jj_scope *saved = R->scope;
	R->scope = scope;
	bool *have = jj_alloc(&R->ar, &R->f, (m->n + 1) * sizeof *have);
	for (uint32_t k = 0; k < a->n; k++) {
		scope_set(R, scope, m->list[k]->sym, a->pos[k]);
		have[k] = true;
	}
	for (uint32_t k = 0; k < a->nkw; k++) {
		uint32_t j;
		for (j = 0; j < m->n; j++)
			if (m->list[j]->len == a->kwl[k] && memcmp(m->list[j]->s, a->kwn[k], a->kwl[k]) == 0)
				break;
		if (j == m->n) {
			if (caller && a->kwl[k] == 6 && memcmp(a->kwn[k], "caller", 6) == 0)
				continue;
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "macro '%.*s' takes no keyword argument '%s'",
				(int)m->len, m->s, a->kwn[k]);
		}
		if (have[j])
			jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "macro '%.*s' got multiple values for argument '%s'",
				(int)m->len, m->s, a->kwn[k]);
		scope_set(R, scope, m->list[j]->sym, a->kw[k]);
		have[j] = true;
	}
	for (uint32_t k = 0; k < m->n; k++) {
		if (have[k])
			continue;
		struct jj_val v;
		if (m->kwargs[k])
			v = eval(R, m->kwargs[k]);
		else
			v = undef_hint(R, JJ_UNDEF_HINT, "parameter '%.*s' was not provided", (int)m->list[k]->len,
				       m->list[k]->s);
		scope_set(R, scope, m->list[k]->sym, v);
	}
	if (caller) {
		int sym = jj_sym_find(R->t, "caller", 6);
		if (sym >= 0)
			scope_set(R, scope, sym, *caller);
	}
	R->depth++;
	struct jj_val out = capture(R, m->b);
	R->depth--;
	R->scope = saved;
	return out;
}

static struct jj_val call_value(struct jj_run *R, struct jj_val fn, const struct jj_args *a);

/* ------------------------------------------------------------------------------------------ expressions */

static struct jj_val eval_filter_chain(struct jj_run *R, const struct jj_node *nd, struct jj_val subject)
{
	if (!nd)
		return subject;
	struct jj_val v = nd->a ? eval_filter_chain(R, nd->a, subject) : subject;
	struct jj_args a;
	eval_args(R, nd, &a);
	return apply_filter(R, nd->meth, nd->s, v, &a);
}

static struct jj_val eval(struct jj_run *R, const struct jj_node *nd)
{
	jj_charge(&R->f, 1);
	stack_check(R);
	switch (nd->kind) {
	case JJ_E_CONST: return nd->v;
	case JJ_E_NAME: return lookup(R, nd->sym);
	case JJ_E_ATTR: {
		struct jj_val obj = eval(R, nd->a);
		R->f.line = nd->line;
		return get_attr(R, obj, nd->s, nd->len, nd->meth);
	}
	case JJ_E_ITEM: {
		struct jj_val obj = eval(R, nd->a), key = eval(R, nd->b);
		R->f.line = nd->line;
		struct jj_val v = get_item(R, obj, key);
		return obj.t == JJ_STR && is_intlike(key) ? keep_markup(obj, v) : v;
	}
	case JJ_E_SLICE: {
		if (!nd->a) /* a slice among several subscripts, x[1, :]: no such key anywhere */
			return jj_undef(JJ_UNDEF_HINT, "slice", 5);
		struct jj_val obj = eval(R, nd->a), b, c, d;
		if (nd->b)
			b = eval(R, nd->b);
		if (nd->c)
			c = eval(R, nd->c);
		if (nd->d)
			d = eval(R, nd->d);
		R->f.line = nd->line;
		return keep_markup(obj, do_slice(R, obj, nd->b ? &b : NULL, nd->c ? &c : NULL, nd->d ? &d : NULL));
	}
	case JJ_E_CALL: {
		struct jj_args a;
		const struct jj_node *callee = nd->a;
		if (callee->kind == JJ_E_ATTR && callee->meth >= 0) {
			/* obj.method(...): call without making a bound method */
			struct jj_val obj = eval(R, callee->a);
			if (meth_applies(obj, callee->meth) || (obj.t == JJ_LOOP && (callee->meth == JJ_M_CYCLE ||
										   callee->meth == JJ_M_CHANGED))) {
				eval_args(R, nd, &a);
				R->f.line = nd->line;
				if (meth_unsafe(callee->meth))
					fail_undef(R, unsafe_attr(R, obj, callee->s, callee->len));
				return call_method(R, obj, callee->meth, callee->s, callee->len, &a);
			}
			R->f.line = callee->line;
			struct jj_val fn = get_attr(R, obj, callee->s, callee->len, callee->meth);
			eval_args(R, nd, &a);
			R->f.line = nd->line;
			return call_value(R, fn, &a);
		}
		struct jj_val fn = eval(R, callee);
		eval_args(R, nd, &a);
		R->f.line = nd->line;
		return call_value(R, fn, &a);
	}
	case JJ_E_FILTER: {
		struct jj_val v = eval(R, nd->a);
		struct jj_args a;
		eval_args(R, nd, &a);
		R->f.line = nd->line;
		return apply_filter(R, nd->meth, nd->s, v, &a);
	}
	case JJ_E_TEST: {
		struct jj_val v = eval(R, nd->a);
		struct jj_args a;
		eval_args(R, nd, &a);
		R->f.line = nd->line;
		bool r = apply_test(R, nd->meth, nd->s, v, &a);
		return jj_bool(nd->neg ? !r : r);
	}
	case JJ_E_UNARY: {
		struct jj_val v = eval(R, nd->a);
		R->f.line = nd->line;
		if (v.t == JJ_UNDEF)
			fail_undef(R, v);
		if (v.t == JJ_FLOAT)
			return jj_float(nd->op == JJ_OP_NEG ? -v.f : v.f);
		if (is_intlike(v)) {
			int64_t i = int_of(v);
			if (nd->op == JJ_OP_NEG && i == INT64_MIN)
				jj_fail(&R->f, MF_JINJA_ELIMIT, "LimitError", "integer overflow");
			return jj_int(nd->op == JJ_OP_NEG ? -i : i);
		}
		jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "bad operand type for unary %c: '%s'",
			nd->op == JJ_OP_NEG ? '-' : '+', jj_type_name(v));
	}
	case JJ_E_BINARY: {
		struct jj_val a = eval(R, nd->a), b = eval(R, nd->b);
		R->f.line = nd->line;
		return binop(R, nd->op, a, b);
	}
	case JJ_E_AND: {
		struct jj_val a = eval(R, nd->a);
		return jj_truthy(a) ? eval(R, nd->b) : a;
	}
	case JJ_E_OR: {
		struct jj_val a = eval(R, nd->a);
		return jj_truthy(a) ? a : eval(R, nd->b);
	}
	case JJ_E_NOT: return jj_bool(!jj_truthy(eval(R, nd->a)));
	case JJ_E_COMPARE: {
		struct jj_val left = eval(R, nd->a);
		for (uint32_t k = 0; k < nd->n; k++) {
			struct jj_val right = eval(R, nd->list[k]);
			R->f.line = nd->line;
			if (!compare(R, nd->ops[k], left, right))
				return jj_bool(false);
			left = right;
		}
		return jj_bool(true);
	}
	case JJ_E_COND:
		if (jj_truthy(eval(R, nd->a)))
			return eval(R, nd->b);
		if (nd->c)
			return eval(R, nd->c);
		return undef_hint(R, JJ_UNDEF_HINT, "the inline if-expression on line %d evaluated to false and no else "
				  "section was defined.", nd->line);
	case JJ_E_LIST:
	case JJ_E_TUPLE: {
		struct jj_list *l = jj_list_new(&R->ar, &R->f, nd->n);
		for (uint32_t k = 0; k < nd->n; k++)
			l->v[k] = eval(R, nd->list[k]);
		return jj_list_val(l, nd->kind == JJ_E_LIST ? JJ_SEQ_LIST : JJ_SEQ_TUPLE);
	}
	case JJ_E_DICT: {
		struct jj_dict *d = jj_dict_new(&R->ar, &R->f, nd->n);
		for (uint32_t k = 0; k < nd->n; k++) {
			struct jj_val key = eval(R, nd->list[k]), val = eval(R, nd->kwargs[k]);
			R->f.line = nd->line;
			jj_dict_set(&R->ar, &R->f, d, key, val);
		}
		struct jj_val v = {.t = JJ_DICT, .d = d};
		return v;
	}
	case JJ_E_CONCAT: {
		struct jj_val *parts = jj_alloc(&R->ar, &R->f, nd->n * sizeof *parts);
		for (uint32_t k = 0; k < nd->n; k++)
			parts[k] = eval(R, nd->list[k]);
		R->f.line = nd->line;
		size_t total = 0;
		bool all_str = true;
		for (uint32_t k = 0; k < nd->n; k++) {
			all_str = all_str && (parts[k].t == JJ_STR || parts[k].t == JJ_UNDEF);
			total += parts[k].t == JJ_STR ? parts[k].len : 0;
		}
		if (all_str) {
			if (total > R->max_output)
				jj_fail(&R->f, MF_JINJA_ELIMIT, "LimitError", "string size limit exceeded: more than %zu bytes",
					R->max_output);
			char *p = jj_alloc(&R->ar, &R->f, total + 1);
			size_t o = 0;
			for (uint32_t k = 0; k < nd->n; k++)
				if (parts[k].t == JJ_STR) {
					jj_memcpy(p + o, parts[k].s, parts[k].len);
					o += parts[k].len;
				}
			return jj_str(p, o);
		}
		struct ob_buf *b = tmpbuf(R, R->max_output);
		for (uint32_t k = 0; k < nd->n; k++)
			jj_write_str(&R->f, b, parts[k]);
		struct jj_val v = jj_str(jj_strdup(&R->ar, &R->f, b->p ? b->p : "", b->len), b->len);
		ob_buf_free(b);
		return v;
	}
	default: break;
	}
	jj_fail(&R->f, MF_JINJA_ERUNTIME, "TemplateRuntimeError", "cannot evaluate node %d", nd->kind);
}

/* ------------------------------------------------------------------------------------------ statements */

static int exec_for(struct jj_run *R, const struct jj_node *nd)
{
	struct jj_val it = eval(R, nd->b);
	R->f.line = nd->line;
	const struct jj_list *items = iter_items(R, it);
	struct jj_scope *scope = jj_alloc(&R->ar, &R->f, sizeof *scope);
	scope->parent = R->scope;
	struct jj_scope *saved = R->scope;
	R->scope = scope;
	if (nd->e) { /* {% for x in xs if cond %}: the loop sees only the items that pass */
		struct jj_list *kept = jj_list_new(&R->ar, &R->f, items->n);
		kept->n = 0;
		for (size_t k = 0; k < items->n; k++) {
			jj_charge(&R->f, 1);
			scope->n = 0;
			bind_target(R, nd->a, items->v[k]);
			if (jj_truthy(eval(R, nd->e)))
				kept->v[kept->n++] = items->v[k];
		}
		items = kept;
	}
	struct jj_loop *lp = jj_alloc(&R->ar, &R->f, sizeof *lp);
	lp->items = items;
	int loop_sym = jj_sym_find(R->t, "loop", 4);
	struct jj_val loopv = {.t = JJ_LOOP, .loop = lp};
	for (size_t k = 0; k < items->n; k++) {
		jj_charge(&R->f, 1);
		scope->n = 0;
		lp->i = k;
		if (loop_sym >= 0)
			scope_set(R, scope, loop_sym, loopv);
		R->f.line = nd->line;
		bind_target(R, nd->a, items->v[k]);
		if (exec_body(R, nd->c) == JJ_FLOW_BREAK)
			break;
	}
	R->scope = saved;
	if (items->n == 0 && nd->d)
		return exec_body(R, nd->d);
	return JJ_FLOW_NEXT;
}

static void exec_set(struct jj_run *R, const struct jj_node *target, struct jj_val v)
{
	if (target->kind == JJ_E_NSREF) {
		struct jj_val ns = lookup(R, target->sym);
		R->f.line = target->line;
		if (ns.t != JJ_NS)
			jj_fail(&R->f, MF_JINJA_ERUNTIME, "TemplateRuntimeError",
				"cannot assign attribute on non-namespace object");
		struct jj_val key = jj_str(target->s, target->len);
		jj_dict_set(&R->ar, &R->f, ns.d, key, v);
		return;
	}
	R->f.line = target->line;
	bind_target(R, target, v);
}

static void write_out(struct jj_run *R, struct jj_val v)
{
	if (v.t == JJ_STR)
		put(&R->f, R->out, v.s, v.len);
	else
		jj_write_str(&R->f, R->out, v);
}

static int exec_body(struct jj_run *R, const struct jj_node *body)
{
	stack_check(R);
	for (uint32_t k = 0; k < body->n; k++) {
		const struct jj_node *nd = body->list[k];
		jj_charge(&R->f, 1);
		R->f.line = nd->line;
		int flow = JJ_FLOW_NEXT;
		switch (nd->kind) {
		case JJ_N_DATA: put(&R->f, R->out, nd->s, nd->len); break;
		case JJ_N_OUTPUT: write_out(R, eval(R, nd->a)); break;
		case JJ_N_BODY: flow = exec_body(R, nd); break;
		case JJ_N_IF: {
			const struct jj_node *branch = nd;
			for (;;) {
				if (jj_truthy(eval(R, branch->a))) {
					flow = exec_body(R, branch->b);
					break;
				}
				if (!branch->c)
					break;
				if (branch->c->kind != JJ_N_IF) {
					flow = exec_body(R, branch->c);
					break;
				}
				branch = branch->c;
				jj_charge(&R->f, 1);
			}
			break;
		}
		case JJ_N_FOR: flow = exec_for(R, nd); break;
		case JJ_N_SET: exec_set(R, nd->a, eval(R, nd->b)); break;
		case JJ_N_SET_BLOCK: {
			struct jj_val v = capture(R, nd->b);
			if (nd->c)
				v = eval_filter_chain(R, nd->c, v);
			exec_set(R, nd->a, v);
			break;
		}
		case JJ_N_FILTER_BLOCK: write_out(R, eval_filter_chain(R, nd->c, capture(R, nd->b))); break;
		case JJ_N_MACRO: {
			struct jj_val m = {.t = JJ_MACRO, .node = nd};
			assign_sym(R, nd->sym, m);
			break;
		}
		case JJ_N_CALL_BLOCK: {
			const struct jj_node *call = nd->a;
			struct jj_val fn = eval(R, call->a);
			struct jj_args a;
			eval_args(R, call, &a);
			struct jj_val caller = {.t = JJ_MACRO, .node = nd, .sub = 1};
			R->f.line = nd->line;
			if (fn.t != JJ_MACRO)
				jj_fail(&R->f, MF_JINJA_ETYPE, "TypeError", "'%s' object is not callable", jj_type_name(fn));
			struct jj_val *cv = jj_alloc(&R->ar, &R->f, sizeof *cv);
			*cv = caller;
			write_out(R, call_macro(R, fn.node, &a, cv));
			break;
		}
		case JJ_N_BREAK: return JJ_FLOW_BREAK;
		case JJ_N_CONTINUE: return JJ_FLOW_CONTINUE;
		default: break;
		}
		if (flow != JJ_FLOW_NEXT)
			return flow;
	}
	return JJ_FLOW_NEXT;
}
