/* modelfile/jinja/parse.c — the Jinja parser: tokens to a tree, following jinja2's Parser rule for rule
 * (precedence, tuples, slices, call arguments, tests with one bare argument, `set` blocks and namespace
 * targets), with the statements chat templates use: if/elif/else, for (filter, else), set, macro, call,
 * filter, raw, break/continue (loopcontrols) and transformers' {% generation %}. No include/extends/import:
 * chat templates are single strings. Nesting is capped (MF_JINJA_MAX_NESTING). Part of jinja.c.
 */
#include <string.h>

#include "modelfile/jinja/internal.h"

struct jj_parser {
	struct mf_jinja *t;
	struct jj_fail *f;
	const struct jj_token *tk;
	size_t n, i;
	int depth;
	int loops; /* enclosing for loops (in the current macro) */
};

static const char *tok_desc(const struct jj_token *tk, char *buf, size_t size)
{
	static const char *const ops[] = {
		[JJ_OP_ADD] = "+", [JJ_OP_SUB] = "-", [JJ_OP_MUL] = "*", [JJ_OP_DIV] = "/", [JJ_OP_FLOORDIV] = "//",
		[JJ_OP_MOD] = "%", [JJ_OP_POW] = "**", [JJ_OP_TILDE] = "~", [JJ_OP_LBRACKET] = "[",
		[JJ_OP_RBRACKET] = "]", [JJ_OP_LPAREN] = "(", [JJ_OP_RPAREN] = ")", [JJ_OP_LBRACE] = "{",
		[JJ_OP_RBRACE] = "}", [JJ_OP_EQ] = "==", [JJ_OP_NE] = "!=", [JJ_OP_GT] = ">", [JJ_OP_GE] = ">=",
		[JJ_OP_LT] = "<", [JJ_OP_LE] = "<=", [JJ_OP_ASSIGN] = "=", [JJ_OP_DOT] = ".", [JJ_OP_COLON] = ":",
		[JJ_OP_PIPE] = "|", [JJ_OP_COMMA] = ",", [JJ_OP_SEMICOLON] = ";",
	};
	switch (tk->type) {
	case JJ_T_EOF: return "end of template";
	case JJ_T_DATA: return "template data";
	case JJ_T_VAR_BEGIN: return "begin of print statement";
	case JJ_T_VAR_END: return "end of print statement";
	case JJ_T_BLOCK_BEGIN: return "begin of statement block";
	case JJ_T_BLOCK_END: return "end of statement block";
	case JJ_T_OP: return tk->op < sizeof ops / sizeof ops[0] && ops[tk->op] ? ops[tk->op] : "operator";
	default: break;
	}
	snprintf(buf, size, "%.*s", (int)(tk->len > 60 ? 60 : tk->len), tk->s);
	return buf;
}

__attribute__((noreturn)) static void p_fail_unexpected(struct jj_parser *P, const char *what)
{
	char b[80];
	P->f->line = P->tk[P->i].line;
	jj_fail(P->f, MF_JINJA_ESYNTAX, "TemplateSyntaxError", "%s '%s'", what, tok_desc(&P->tk[P->i], b, sizeof b));
}

static const struct jj_token *cur(const struct jj_parser *P)
{
	return &P->tk[P->i];
}

static const struct jj_token *peek(const struct jj_parser *P)
{
	return P->i + 1 < P->n ? &P->tk[P->i + 1] : &P->tk[P->n - 1];
}

static void advance(struct jj_parser *P)
{
	if (P->i + 1 < P->n)
		P->i++;
}

static bool is_op(const struct jj_token *tk, int op)
{
	return tk->type == JJ_T_OP && tk->op == op;
}

static bool is_name(const struct jj_token *tk, const char *name)
{
	size_t n = strlen(name);
	return tk->type == JJ_T_NAME && tk->len == n && memcmp(tk->s, name, n) == 0;
}

static void expect_op(struct jj_parser *P, int op, const char *text)
{
	if (!is_op(cur(P), op)) {
		char b[80], m[120];
		snprintf(m, sizeof m, "expected token '%s', got", text);
		(void)b;
		p_fail_unexpected(P, m);
	}
	advance(P);
}

static void expect_type(struct jj_parser *P, int type, const char *text)
{
	if (cur(P)->type != type) {
		char m[120];
		snprintf(m, sizeof m, "expected token '%s', got", text);
		p_fail_unexpected(P, m);
	}
	advance(P);
}

static const struct jj_token *expect_name(struct jj_parser *P)
{
	if (cur(P)->type != JJ_T_NAME)
		p_fail_unexpected(P, "expected token 'name', got");
	const struct jj_token *tk = cur(P);
	advance(P);
	return tk;
}

static void enter(struct jj_parser *P)
{
	if (++P->depth > MF_JINJA_MAX_NESTING) {
		P->f->line = cur(P)->line;
		jj_fail(P->f, MF_JINJA_ELIMIT, "LimitError", "nesting limit (%d levels of blocks and expressions) exceeded",
			MF_JINJA_MAX_NESTING);
	}
}

static struct jj_node *node_new(struct jj_parser *P, int kind, int line)
{
	struct jj_node *nd = jj_alloc(&P->t->arena, P->f, sizeof *nd);
	nd->kind = (uint8_t)kind;
	nd->line = line;
	nd->meth = -1;
	nd->sym = -1;
	return nd;
}

/* A growable array of node pointers in the arena (copied on growth; trees are small). */
struct nvec {
	struct jj_node **v;
	uint32_t n, cap;
};

static void nvec_push(struct jj_parser *P, struct nvec *a, struct jj_node *nd)
{
	if (a->n == a->cap) {
		uint32_t cap = a->cap ? a->cap * 2 : 4;
		struct jj_node **v = jj_alloc(&P->t->arena, P->f, cap * sizeof *v);
		if (a->n)
			jj_memcpy(v, a->v, a->n * sizeof *v);
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = nd;
}

/* ------------------------------------------------------------------------------------------ symbols */

static size_t sym_hash(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return (size_t)h;
}

static int jj_sym_find(const struct mf_jinja *t, const char *s, size_t n)
{
	if (!t->sym_index_cap)
		return -1;
	size_t mask = t->sym_index_cap - 1;
	for (size_t h = sym_hash(s, n) & mask;; h = (h + 1) & mask) {
		uint32_t e = t->sym_index[h];
		if (!e)
			return -1;
		const struct jj_sym *y = &t->syms[e - 1];
		if (y->len == n && memcmp(y->name, s, n) == 0)
			return (int)(e - 1);
	}
}

static int jj_sym_intern(struct mf_jinja *t, struct jj_fail *f, const char *s, size_t n)
{
	int id = jj_sym_find(t, s, n);
	if (id >= 0)
		return id;
	if (t->nsyms == t->syms_cap) {
		size_t cap = t->syms_cap ? t->syms_cap * 2 : 32;
		struct jj_sym *v = jj_alloc(&t->arena, f, cap * sizeof *v);
		if (t->nsyms)
			jj_memcpy(v, t->syms, t->nsyms * sizeof *v);
		t->syms = v;
		t->syms_cap = cap;
	}
	if ((t->nsyms + 1) * 2 > t->sym_index_cap) {
		size_t cap = t->sym_index_cap ? t->sym_index_cap * 2 : 64;
		uint32_t *idx = jj_alloc(&t->arena, f, cap * sizeof *idx);
		for (size_t k = 0; k < t->nsyms; k++) {
			size_t h = sym_hash(t->syms[k].name, t->syms[k].len) & (cap - 1);
			while (idx[h])
				h = (h + 1) & (cap - 1);
			idx[h] = (uint32_t)(k + 1);
		}
		t->sym_index = idx;
		t->sym_index_cap = cap;
	}
	struct jj_sym *y = &t->syms[t->nsyms];
	y->name = jj_strdup(&t->arena, f, s, n);
	y->len = n;
	y->builtin = (int8_t)jj_func_lookup(s, n);
	size_t mask = t->sym_index_cap - 1, h = sym_hash(s, n) & mask;
	while (t->sym_index[h])
		h = (h + 1) & mask;
	t->sym_index[h] = (uint32_t)(t->nsyms + 1);
	return (int)t->nsyms++;
}

/* ------------------------------------------------------------------------------------------ expressions */

static struct jj_node *parse_expression(struct jj_parser *P, bool with_condexpr);
static struct jj_node *parse_tuple(struct jj_parser *P, bool simplified, bool with_condexpr, const char *extra_end,
				   bool explicit_parens);
static struct jj_node *parse_unary(struct jj_parser *P, bool with_filter);
static struct jj_node *parse_primary(struct jj_parser *P);
static struct jj_node *parse_postfix(struct jj_parser *P, struct jj_node *node);
static struct jj_node *parse_filter(struct jj_parser *P, struct jj_node *node, bool start_inline);

static struct jj_node *parse_condexpr(struct jj_parser *P);

static struct jj_node *parse_or(struct jj_parser *P);

static struct jj_node *parse_expression(struct jj_parser *P, bool with_condexpr)
{
	enter(P);
	struct jj_node *nd = with_condexpr ? parse_condexpr(P) : parse_or(P);
	P->depth--;
	return nd;
}

static struct jj_node *parse_condexpr(struct jj_parser *P)
{
	int line = cur(P)->line;
	struct jj_node *e1 = parse_or(P);
	while (is_name(cur(P), "if")) {
		advance(P);
		struct jj_node *e2 = parse_or(P), *e3 = NULL;
		if (is_name(cur(P), "else")) {
			advance(P);
			enter(P);
			e3 = parse_condexpr(P);
			P->depth--;
		}
		struct jj_node *c = node_new(P, JJ_E_COND, line);
		c->a = e2;
		c->b = e1;
		c->c = e3;
		e1 = c;
	}
	return e1;
}

static struct jj_node *parse_not(struct jj_parser *P);
static struct jj_node *parse_and(struct jj_parser *P);

static struct jj_node *parse_or(struct jj_parser *P)
{
	struct jj_node *l = parse_and(P);
	while (is_name(cur(P), "or")) {
		int line = cur(P)->line;
		advance(P);
		struct jj_node *nd = node_new(P, JJ_E_OR, line);
		nd->a = l;
		nd->b = parse_and(P);
		l = nd;
	}
	return l;
}

static struct jj_node *parse_and(struct jj_parser *P)
{
	struct jj_node *l = parse_not(P);
	while (is_name(cur(P), "and")) {
		int line = cur(P)->line;
		advance(P);
		struct jj_node *nd = node_new(P, JJ_E_AND, line);
		nd->a = l;
		nd->b = parse_not(P);
		l = nd;
	}
	return l;
}

static struct jj_node *parse_math1(struct jj_parser *P);

static struct jj_node *parse_compare(struct jj_parser *P)
{
	int line = cur(P)->line;
	struct jj_node *first = parse_math1(P);
	struct nvec operands = {0};
	uint8_t ops[64];
	uint8_t *opv = ops;
	uint32_t opcap = 64;
	for (;;) {
		const struct jj_token *tk = cur(P);
		int op = JJ_OP_NONE;
		if (tk->type == JJ_T_OP && (tk->op == JJ_OP_EQ || tk->op == JJ_OP_NE || tk->op == JJ_OP_LT ||
					    tk->op == JJ_OP_LE || tk->op == JJ_OP_GT || tk->op == JJ_OP_GE)) {
			op = tk->op;
			advance(P);
		} else if (is_name(tk, "in")) {
			op = JJ_OP_IN;
			advance(P);
		} else if (is_name(tk, "not") && is_name(peek(P), "in")) {
			op = JJ_OP_NOTIN;
			advance(P);
			advance(P);
		} else {
			break;
		}
		if (operands.n == opcap) {
			uint8_t *nv = jj_alloc(&P->t->arena, P->f, opcap * 2);
			jj_memcpy(nv, opv, opcap);
			opv = nv;
			opcap *= 2;
		}
		opv[operands.n] = (uint8_t)op;
		nvec_push(P, &operands, parse_math1(P));
	}
	if (!operands.n)
		return first;
	struct jj_node *nd = node_new(P, JJ_E_COMPARE, line);
	nd->a = first;
	nd->list = operands.v;
	nd->n = operands.n;
	nd->ops = jj_alloc(&P->t->arena, P->f, operands.n);
	jj_memcpy(nd->ops, opv, operands.n);
	return nd;
}

static struct jj_node *parse_not(struct jj_parser *P)
{
	if (is_name(cur(P), "not")) {
		int line = cur(P)->line;
		advance(P);
		enter(P);
		struct jj_node *nd = node_new(P, JJ_E_NOT, line);
		nd->a = parse_not(P);
		P->depth--;
		return nd;
	}
	return parse_compare(P);
}

static struct jj_node *binary(struct jj_parser *P, int op, struct jj_node *l, struct jj_node *r, int line)
{
	struct jj_node *nd = node_new(P, JJ_E_BINARY, line);
	nd->op = (uint8_t)op;
	nd->a = l;
	nd->b = r;
	return nd;
}

static struct jj_node *parse_concat(struct jj_parser *P);

static struct jj_node *parse_math1(struct jj_parser *P)
{
	struct jj_node *l = parse_concat(P);
	while (is_op(cur(P), JJ_OP_ADD) || is_op(cur(P), JJ_OP_SUB)) {
		int op = cur(P)->op, line = cur(P)->line;
		advance(P);
		l = binary(P, op, l, parse_concat(P), line);
	}
	return l;
}

static struct jj_node *parse_math2(struct jj_parser *P);

static struct jj_node *parse_concat(struct jj_parser *P)
{
	int line = cur(P)->line;
	struct jj_node *first = parse_math2(P);
	if (!is_op(cur(P), JJ_OP_TILDE))
		return first;
	struct nvec args = {0};
	nvec_push(P, &args, first);
	while (is_op(cur(P), JJ_OP_TILDE)) {
		advance(P);
		nvec_push(P, &args, parse_math2(P));
	}
	struct jj_node *nd = node_new(P, JJ_E_CONCAT, line);
	nd->list = args.v;
	nd->n = args.n;
	return nd;
}

static struct jj_node *parse_pow(struct jj_parser *P);

static struct jj_node *parse_math2(struct jj_parser *P)
{
	struct jj_node *l = parse_pow(P);
	while (is_op(cur(P), JJ_OP_MUL) || is_op(cur(P), JJ_OP_DIV) || is_op(cur(P), JJ_OP_FLOORDIV) ||
	       is_op(cur(P), JJ_OP_MOD)) {
		int op = cur(P)->op, line = cur(P)->line;
		advance(P);
		l = binary(P, op, l, parse_pow(P), line);
	}
	return l;
}

static struct jj_node *parse_pow(struct jj_parser *P)
{
	struct jj_node *l = parse_unary(P, true);
	while (is_op(cur(P), JJ_OP_POW)) {
		int line = cur(P)->line;
		advance(P);
		l = binary(P, JJ_OP_POW, l, parse_unary(P, true), line);
	}
	return l;
}

static struct jj_node *parse_test(struct jj_parser *P, struct jj_node *node);
static void parse_call_args(struct jj_parser *P, struct jj_node *nd);

static struct jj_node *parse_filter_expr(struct jj_parser *P, struct jj_node *node)
{
	for (;;) {
		if (is_op(cur(P), JJ_OP_PIPE)) {
			node = parse_filter(P, node, false);
		} else if (is_name(cur(P), "is")) {
			node = parse_test(P, node);
		} else if (is_op(cur(P), JJ_OP_LPAREN)) {
			struct jj_node *c = node_new(P, JJ_E_CALL, cur(P)->line);
			c->a = node;
			parse_call_args(P, c);
			node = c;
		} else {
			return node;
		}
	}
}

static struct jj_node *parse_unary(struct jj_parser *P, bool with_filter)
{
	enter(P);
	const struct jj_token *tk = cur(P);
	struct jj_node *node;
	if (is_op(tk, JJ_OP_SUB) || is_op(tk, JJ_OP_ADD)) {
		int line = tk->line, op = tk->op == JJ_OP_SUB ? JJ_OP_NEG : JJ_OP_POS;
		advance(P);
		node = node_new(P, JJ_E_UNARY, line);
		node->op = (uint8_t)op;
		node->a = parse_unary(P, false);
	} else {
		node = parse_primary(P);
	}
	node = parse_postfix(P, node);
	if (with_filter)
		node = parse_filter_expr(P, node);
	P->depth--;
	return node;
}

static struct jj_node *const_node(struct jj_parser *P, int line, struct jj_val v)
{
	struct jj_node *nd = node_new(P, JJ_E_CONST, line);
	nd->v = v;
	return nd;
}

static struct jj_node *parse_primary(struct jj_parser *P)
{
	const struct jj_token *tk = cur(P);
	int line = tk->line;
	struct jj_val v = {0};
	switch (tk->type) {
	case JJ_T_NAME:
		advance(P);
		if (is_name(tk, "true") || is_name(tk, "True") || is_name(tk, "false") || is_name(tk, "False")) {
			v.t = JJ_BOOL;
			v.b = tk->s[0] == 't' || tk->s[0] == 'T';
			return const_node(P, line, v);
		}
		if (is_name(tk, "none") || is_name(tk, "None")) {
			v.t = JJ_NONE;
			return const_node(P, line, v);
		}
	{
		struct jj_node *nd = node_new(P, JJ_E_NAME, line);
		nd->sym = jj_sym_intern(P->t, P->f, tk->s, tk->len);
		nd->s = P->t->syms[nd->sym].name;
		nd->len = tk->len;
		return nd;
	}
	case JJ_T_STRING: {
		advance(P);
		v.t = JJ_STR;
		v.s = tk->s;
		v.len = tk->len;
		if (cur(P)->type == JJ_T_STRING) { /* adjacent literals concatenate */
			size_t total = tk->len;
			size_t j = P->i;
			for (; P->tk[j].type == JJ_T_STRING; j++)
				total += P->tk[j].len;
			char *buf = jj_alloc(&P->t->arena, P->f, total + 1);
			jj_memcpy(buf, tk->s, tk->len);
			size_t o = tk->len;
			for (; cur(P)->type == JJ_T_STRING; advance(P)) {
				jj_memcpy(buf + o, cur(P)->s, cur(P)->len);
				o += cur(P)->len;
			}
			v.s = buf;
			v.len = total;
		}
		return const_node(P, line, v);
	}
	case JJ_T_INT:
		advance(P);
		v.t = JJ_INT;
		v.i = tk->i;
		return const_node(P, line, v);
	case JJ_T_FLOAT:
		advance(P);
		v.t = JJ_FLOAT;
		v.f = tk->f;
		return const_node(P, line, v);
	case JJ_T_OP:
		if (tk->op == JJ_OP_LPAREN) {
			advance(P);
			struct jj_node *nd = parse_tuple(P, false, true, NULL, true);
			expect_op(P, JJ_OP_RPAREN, ")");
			return nd;
		}
		if (tk->op == JJ_OP_LBRACKET) {
			advance(P);
			struct nvec items = {0};
			while (!is_op(cur(P), JJ_OP_RBRACKET)) {
				if (items.n)
					expect_op(P, JJ_OP_COMMA, ",");
				if (is_op(cur(P), JJ_OP_RBRACKET))
					break;
				nvec_push(P, &items, parse_expression(P, true));
			}
			expect_op(P, JJ_OP_RBRACKET, "]");
			struct jj_node *nd = node_new(P, JJ_E_LIST, line);
			nd->list = items.v;
			nd->n = items.n;
			return nd;
		}
		if (tk->op == JJ_OP_LBRACE) {
			advance(P);
			struct nvec keys = {0}, vals = {0};
			while (!is_op(cur(P), JJ_OP_RBRACE)) {
				if (keys.n)
					expect_op(P, JJ_OP_COMMA, ",");
				if (is_op(cur(P), JJ_OP_RBRACE))
					break;
				nvec_push(P, &keys, parse_expression(P, true));
				expect_op(P, JJ_OP_COLON, ":");
				nvec_push(P, &vals, parse_expression(P, true));
			}
			expect_op(P, JJ_OP_RBRACE, "}");
			struct jj_node *nd = node_new(P, JJ_E_DICT, line);
			nd->list = keys.v;
			nd->kwargs = vals.v;
			nd->n = keys.n;
			return nd;
		}
		break;
	default:
		break;
	}
	p_fail_unexpected(P, "unexpected");
}

static bool is_tuple_end(const struct jj_parser *P, const char *extra_end)
{
	const struct jj_token *tk = cur(P);
	if (tk->type == JJ_T_VAR_END || tk->type == JJ_T_BLOCK_END || is_op(tk, JJ_OP_RPAREN))
		return true;
	return extra_end && is_name(tk, extra_end);
}

static struct jj_node *parse_tuple(struct jj_parser *P, bool simplified, bool with_condexpr, const char *extra_end,
				   bool explicit_parens)
{
	int line = cur(P)->line;
	struct nvec args = {0};
	bool is_tuple = false;
	enter(P);
	for (;;) {
		if (args.n)
			expect_op(P, JJ_OP_COMMA, ",");
		if (is_tuple_end(P, extra_end))
			break;
		nvec_push(P, &args, simplified ? parse_primary(P) : parse_expression(P, with_condexpr));
		if (is_op(cur(P), JJ_OP_COMMA))
			is_tuple = true;
		else
			break;
	}
	P->depth--;
	if (!is_tuple) {
		if (args.n)
			return args.v[0];
		if (!explicit_parens)
			p_fail_unexpected(P, "Expected an expression, got");
	}
	struct jj_node *nd = node_new(P, JJ_E_TUPLE, line);
	nd->list = args.v;
	nd->n = args.n;
	return nd;
}

static struct jj_node *parse_subscribed(struct jj_parser *P)
{
	int line = cur(P)->line;
	struct jj_node *args[3] = {0};
	if (is_op(cur(P), JJ_OP_COLON)) {
		advance(P);
	} else {
		struct jj_node *e = parse_expression(P, true);
		if (!is_op(cur(P), JJ_OP_COLON))
			return e;
		advance(P);
		args[0] = e;
	}
	if (!is_op(cur(P), JJ_OP_COLON) && !is_op(cur(P), JJ_OP_RBRACKET) && !is_op(cur(P), JJ_OP_COMMA))
		args[1] = parse_expression(P, true);
	if (is_op(cur(P), JJ_OP_COLON)) {
		advance(P);
		if (!is_op(cur(P), JJ_OP_RBRACKET) && !is_op(cur(P), JJ_OP_COMMA))
			args[2] = parse_expression(P, true);
	}
	struct jj_node *nd = node_new(P, JJ_E_SLICE, line); /* a (the object) is filled by the caller */
	nd->b = args[0];
	nd->c = args[1];
	nd->d = args[2];
	return nd;
}

static struct jj_node *parse_postfix(struct jj_parser *P, struct jj_node *node)
{
	for (;;) {
		const struct jj_token *tk = cur(P);
		int line = tk->line;
		if (is_op(tk, JJ_OP_DOT)) {
			advance(P);
			const struct jj_token *at = cur(P);
			if (at->type == JJ_T_NAME) {
				advance(P);
				struct jj_node *nd = node_new(P, JJ_E_ATTR, line);
				nd->a = node;
				nd->s = at->s;
				nd->len = at->len;
				nd->meth = (int16_t)jj_meth_lookup(at->s, at->len);
				node = nd;
			} else if (at->type == JJ_T_INT) {
				advance(P);
				struct jj_node *nd = node_new(P, JJ_E_ITEM, line);
				nd->a = node;
				struct jj_val v = {.t = JJ_INT, .i = at->i};
				nd->b = const_node(P, line, v);
				node = nd;
			} else {
				p_fail_unexpected(P, "expected name or number, got");
			}
		} else if (is_op(tk, JJ_OP_LBRACKET)) {
			advance(P);
			struct nvec args = {0};
			while (!is_op(cur(P), JJ_OP_RBRACKET)) {
				if (args.n)
					expect_op(P, JJ_OP_COMMA, ",");
				nvec_push(P, &args, parse_subscribed(P));
			}
			expect_op(P, JJ_OP_RBRACKET, "]");
			if (args.n == 1 && args.v[0]->kind == JJ_E_SLICE && !args.v[0]->a) {
				args.v[0]->a = node;
				node = args.v[0];
				continue;
			}
			struct jj_node *nd = node_new(P, JJ_E_ITEM, line);
			nd->a = node;
			if (args.n == 1) {
				nd->b = args.v[0];
			} else {
				struct jj_node *tup = node_new(P, JJ_E_TUPLE, line);
				tup->list = args.v;
				tup->n = args.n;
				nd->b = tup;
			}
			node = nd;
		} else if (is_op(tk, JJ_OP_LPAREN)) {
			struct jj_node *c = node_new(P, JJ_E_CALL, line);
			c->a = node;
			parse_call_args(P, c);
			node = c;
		} else {
			return node;
		}
	}
}

static void parse_call_args(struct jj_parser *P, struct jj_node *nd)
{
	expect_op(P, JJ_OP_LPAREN, "(");
	struct nvec args = {0}, kwargs = {0};
	const char *names[64];
	size_t lens[64];
	const char **namev = names;
	size_t *lenv = lens;
	uint32_t namecap = 64;
	bool require_comma = false;
	enter(P);
	while (!is_op(cur(P), JJ_OP_RPAREN)) {
		if (require_comma) {
			expect_op(P, JJ_OP_COMMA, ",");
			if (is_op(cur(P), JJ_OP_RPAREN))
				break;
		}
		if (is_op(cur(P), JJ_OP_MUL) || is_op(cur(P), JJ_OP_POW)) {
			P->f->line = cur(P)->line;
			jj_fail(P->f, MF_JINJA_ESYNTAX, "TemplateSyntaxError",
				"*args and **kwargs in calls are not supported");
		}
		if (cur(P)->type == JJ_T_NAME && is_op(peek(P), JJ_OP_ASSIGN)) {
			const struct jj_token *k = cur(P);
			advance(P);
			advance(P);
			if (kwargs.n == namecap) {
				const char **nn = jj_alloc(&P->t->arena, P->f, namecap * 2 * sizeof *nn);
				size_t *nl = jj_alloc(&P->t->arena, P->f, namecap * 2 * sizeof *nl);
				jj_memcpy(nn, namev, namecap * sizeof *nn);
				jj_memcpy(nl, lenv, namecap * sizeof *nl);
				namev = nn;
				lenv = nl;
				namecap *= 2;
			}
			namev[kwargs.n] = jj_strdup(&P->t->arena, P->f, k->s, k->len);
			lenv[kwargs.n] = k->len;
			nvec_push(P, &kwargs, parse_expression(P, true));
		} else {
			if (kwargs.n) {
				P->f->line = cur(P)->line;
				jj_fail(P->f, MF_JINJA_ESYNTAX, "TemplateSyntaxError", "invalid syntax for function call expression");
			}
			nvec_push(P, &args, parse_expression(P, true));
		}
		require_comma = true;
	}
	P->depth--;
	expect_op(P, JJ_OP_RPAREN, ")");
	nd->list = args.v;
	nd->n = args.n;
	nd->kwargs = kwargs.v;
	nd->nkw = kwargs.n;
	if (kwargs.n) {
		nd->kwnames = jj_alloc(&P->t->arena, P->f, kwargs.n * sizeof *nd->kwnames);
		nd->kwlens = jj_alloc(&P->t->arena, P->f, kwargs.n * sizeof *nd->kwlens);
		jj_memcpy(nd->kwnames, namev, kwargs.n * sizeof *namev);
		jj_memcpy(nd->kwlens, lenv, kwargs.n * sizeof *lenv);
	}
}

/* A dotted name after `|` or `is`. */
static void parse_dotted(struct jj_parser *P, char *buf, size_t size, int *line)
{
	const struct jj_token *tk = expect_name(P);
	*line = tk->line;
	snprintf(buf, size, "%.*s", (int)(tk->len > 100 ? 100 : tk->len), tk->s);
	while (is_op(cur(P), JJ_OP_DOT)) {
		advance(P);
		tk = expect_name(P);
		size_t o = strlen(buf);
		snprintf(buf + o, size - o, ".%.*s", (int)(tk->len > 100 ? 100 : tk->len), tk->s);
	}
}

/* A filter or test node for the dotted name at the cursor, applied to node; an unknown name fails as
 * jinja2's compiler fails (TemplateAssertionError). */
static struct jj_node *named_node(struct jj_parser *P, int kind, struct jj_node *node)
{
	char name[128];
	int line;
	parse_dotted(P, name, sizeof name, &line);
	size_t n = strlen(name);
	int id = kind == JJ_E_FILTER ? jj_filter_lookup(name, n) : jj_test_lookup(name, n);
	if (id < 0) {
		P->f->line = line;
		jj_fail(P->f, MF_JINJA_ESYNTAX, "TemplateAssertionError", "No %s named '%s'.",
			kind == JJ_E_FILTER ? "filter" : "test", name);
	}
	struct jj_node *nd = node_new(P, kind, line);
	nd->a = node;
	nd->meth = (int16_t)id;
	nd->s = jj_strdup(&P->t->arena, P->f, name, n);
	nd->len = n;
	return nd;
}

static struct jj_node *parse_filter(struct jj_parser *P, struct jj_node *node, bool start_inline)
{
	while (is_op(cur(P), JJ_OP_PIPE) || start_inline) {
		if (!start_inline)
			advance(P);
		start_inline = false;
		struct jj_node *nd = named_node(P, JJ_E_FILTER, node);
		if (is_op(cur(P), JJ_OP_LPAREN))
			parse_call_args(P, nd);
		node = nd;
	}
	return node;
}

static struct jj_node *parse_test(struct jj_parser *P, struct jj_node *node)
{
	advance(P); /* is */
	bool neg = false;
	if (is_name(cur(P), "not")) {
		advance(P);
		neg = true;
	}
	struct jj_node *nd = named_node(P, JJ_E_TEST, node);
	nd->neg = neg;
	const struct jj_token *tk = cur(P);
	if (is_op(tk, JJ_OP_LPAREN)) {
		parse_call_args(P, nd);
	} else if ((tk->type == JJ_T_NAME || tk->type == JJ_T_STRING || tk->type == JJ_T_INT || tk->type == JJ_T_FLOAT ||
		    is_op(tk, JJ_OP_LBRACKET) || is_op(tk, JJ_OP_LBRACE)) &&
		   !is_name(tk, "else") && !is_name(tk, "or") && !is_name(tk, "and")) {
		if (is_name(tk, "is")) {
			P->f->line = tk->line;
			jj_fail(P->f, MF_JINJA_ESYNTAX, "TemplateSyntaxError", "You cannot chain multiple tests with is");
		}
		struct jj_node *arg = parse_postfix(P, parse_primary(P));
		nd->list = jj_alloc(&P->t->arena, P->f, sizeof *nd->list);
		nd->list[0] = arg;
		nd->n = 1;
	}
	return nd;
}

/* ------------------------------------------------------------------------------------------ statements */

static struct jj_node *subparse(struct jj_parser *P, const char *const *end_tokens);

/* After a statement's header: the block end, then statements up to one of end_tokens (left current). */
static struct jj_node *parse_statements(struct jj_parser *P, const char *const *end_tokens, bool drop_needle)
{
	if (is_op(cur(P), JJ_OP_COLON))
		advance(P);
	expect_type(P, JJ_T_BLOCK_END, "end of statement block");
	struct jj_node *body = subparse(P, end_tokens);
	if (cur(P)->type == JJ_T_EOF) {
		P->f->line = cur(P)->line;
		char want[160] = "";
		for (size_t k = 0; end_tokens[k]; k++) {
			size_t o = strlen(want);
			snprintf(want + o, sizeof want - o, "%s'%s'", k ? " or " : "", end_tokens[k]);
		}
		jj_fail(P->f, MF_JINJA_ESYNTAX, "TemplateSyntaxError",
			"Unexpected end of template. Jinja was looking for the following tags: %s.", want);
	}
	if (drop_needle)
		advance(P);
	return body;
}

static struct jj_node *parse_assign_target(struct jj_parser *P, bool name_only, const char *extra_end,
					   bool with_namespace)
{
	const struct jj_token *tk = cur(P);
	if (with_namespace && tk->type == JJ_T_NAME && is_op(peek(P), JJ_OP_DOT)) {
		advance(P);
		advance(P);
		const struct jj_token *attr = expect_name(P);
		struct jj_node *nd = node_new(P, JJ_E_NSREF, tk->line);
		nd->sym = jj_sym_intern(P->t, P->f, tk->s, tk->len);
		nd->s = attr->s;
		nd->len = attr->len;
		return nd;
	}
	struct jj_node *target;
	if (name_only) {
		expect_name(P);
		target = node_new(P, JJ_E_NAME, tk->line);
		target->sym = jj_sym_intern(P->t, P->f, tk->s, tk->len);
		target->s = P->t->syms[target->sym].name;
		target->len = tk->len;
		return target;
	}
	target = parse_tuple(P, true, true, extra_end, false);
	bool ok = target->kind == JJ_E_NAME;
	if (target->kind == JJ_E_TUPLE) {
		ok = true;
		for (uint32_t k = 0; k < target->n; k++)
			ok = ok && target->list[k]->kind == JJ_E_NAME;
	}
	if (!ok) {
		P->f->line = tk->line;
		jj_fail(P->f, MF_JINJA_ESYNTAX, "TemplateSyntaxError", "can't assign to this expression");
	}
	return target;
}

static const char *const end_for[] = {"endfor", "else", NULL};
static const char *const end_for2[] = {"endfor", NULL};
static const char *const end_if[] = {"elif", "else", "endif", NULL};
static const char *const end_if2[] = {"endif", NULL};
static const char *const end_set[] = {"endset", NULL};
static const char *const end_macro[] = {"endmacro", NULL};
static const char *const end_call[] = {"endcall", NULL};
static const char *const end_filter[] = {"endfilter", NULL};
static const char *const end_generation[] = {"endgeneration", NULL};

static struct jj_node *parse_for(struct jj_parser *P, int line)
{
	struct jj_node *nd = node_new(P, JJ_N_FOR, line);
	nd->a = parse_assign_target(P, false, "in", false);
	if (!is_name(cur(P), "in"))
		p_fail_unexpected(P, "expected token 'in', got");
	advance(P);
	nd->b = parse_tuple(P, false, false, "recursive", false);
	if (is_name(cur(P), "if")) {
		advance(P);
		nd->e = parse_expression(P, true);
	}
	if (is_name(cur(P), "recursive")) {
		P->f->line = cur(P)->line;
		jj_fail(P->f, MF_JINJA_ESYNTAX, "TemplateSyntaxError", "recursive for loops are not supported");
	}
	P->loops++;
	nd->c = parse_statements(P, end_for, false);
	P->loops--;
	bool is_else = is_name(cur(P), "else");
	advance(P);
	if (is_else)
		nd->d = parse_statements(P, end_for2, true);
	return nd;
}

static struct jj_node *parse_if(struct jj_parser *P, int line)
{
	struct jj_node *result = node_new(P, JJ_N_IF, line), *node = result;
	for (;;) {
		node->a = parse_tuple(P, false, false, NULL, false);
		node->b = parse_statements(P, end_if, false);
		const struct jj_token *tk = cur(P);
		advance(P);
		if (is_name(tk, "elif")) {
			enter(P);
			struct jj_node *e = node_new(P, JJ_N_IF, tk->line);
			node->c = e;
			node = e;
			continue;
		}
		if (is_name(tk, "else"))
			node->c = parse_statements(P, end_if2, true);
		break;
	}
	return result;
}

static void parse_signature(struct jj_parser *P, struct jj_node *nd)
{
	expect_op(P, JJ_OP_LPAREN, "(");
	struct nvec args = {0}, defs = {0};
	bool any_default = false;
	while (!is_op(cur(P), JJ_OP_RPAREN)) {
		if (args.n)
			expect_op(P, JJ_OP_COMMA, ",");
		nvec_push(P, &args, parse_assign_target(P, true, NULL, false));
		if (is_op(cur(P), JJ_OP_ASSIGN)) {
			advance(P);
			nvec_push(P, &defs, parse_expression(P, true));
			any_default = true;
		} else {
			if (any_default) {
				P->f->line = cur(P)->line;
				jj_fail(P->f, MF_JINJA_ESYNTAX, "TemplateSyntaxError",
					"non-default argument follows default argument");
			}
			nvec_push(P, &defs, NULL);
		}
	}
	expect_op(P, JJ_OP_RPAREN, ")");
	nd->list = args.v;
	nd->n = args.n;
	nd->kwargs = defs.v;
}

/* The body of a macro or call block: a loop around the definition does not make break/continue valid in it. */
static struct jj_node *parse_callable_body(struct jj_parser *P, const char *const *end)
{
	int loops = P->loops;
	P->loops = 0;
	struct jj_node *body = parse_statements(P, end, true);
	P->loops = loops;
	return body;
}

static struct jj_node *parse_statement(struct jj_parser *P)
{
	const struct jj_token *tk = cur(P);
	int line = tk->line;
	if (tk->type != JJ_T_NAME)
		p_fail_unexpected(P, "tag name expected, got");
	P->f->line = line;
	enter(P);
	struct jj_node *nd;
	if (is_name(tk, "for")) {
		advance(P);
		nd = parse_for(P, line);
	} else if (is_name(tk, "if")) {
		advance(P);
		nd = parse_if(P, line);
	} else if (is_name(tk, "set")) {
		advance(P);
		struct jj_node *target = parse_assign_target(P, false, NULL, true);
		if (is_op(cur(P), JJ_OP_ASSIGN)) {
			advance(P);
			nd = node_new(P, JJ_N_SET, line);
			nd->a = target;
			nd->b = parse_tuple(P, false, true, NULL, false);
		} else {
			nd = node_new(P, JJ_N_SET_BLOCK, line);
			nd->a = target;
			if (is_op(cur(P), JJ_OP_PIPE))
				nd->c = parse_filter(P, NULL, false);
			nd->b = parse_statements(P, end_set, true);
		}
	} else if (is_name(tk, "macro")) {
		advance(P);
		nd = node_new(P, JJ_N_MACRO, line);
		const struct jj_token *name = expect_name(P);
		nd->sym = jj_sym_intern(P->t, P->f, name->s, name->len);
		nd->s = P->t->syms[nd->sym].name;
		nd->len = name->len;
		parse_signature(P, nd);
		nd->b = parse_callable_body(P, end_macro);
		P->t->nmacros++;
	} else if (is_name(tk, "call")) {
		advance(P);
		nd = node_new(P, JJ_N_CALL_BLOCK, line);
		nd->s = "caller";
		nd->len = 6;
		jj_sym_intern(P->t, P->f, "caller", 6);
		if (is_op(cur(P), JJ_OP_LPAREN))
			parse_signature(P, nd);
		nd->a = parse_expression(P, true);
		if (nd->a->kind != JJ_E_CALL) {
			P->f->line = line;
			jj_fail(P->f, MF_JINJA_ESYNTAX, "TemplateSyntaxError", "expected call");
		}
		nd->b = parse_callable_body(P, end_call);
	} else if (is_name(tk, "filter")) {
		advance(P);
		nd = node_new(P, JJ_N_FILTER_BLOCK, line);
		nd->c = parse_filter(P, NULL, true);
		nd->b = parse_statements(P, end_filter, true);
	} else if (is_name(tk, "generation")) {
		advance(P);
		nd = parse_statements(P, end_generation, true);
	} else if (is_name(tk, "break") || is_name(tk, "continue")) {
		advance(P);
		if (!P->loops)
			jj_fail(P->f, MF_JINJA_ESYNTAX, "TemplateSyntaxError", "'%.*s' outside of a for loop", (int)tk->len,
				tk->s);
		nd = node_new(P, tk->s[0] == 'b' ? JJ_N_BREAK : JJ_N_CONTINUE, line);
	} else {
		jj_fail(P->f, MF_JINJA_ESYNTAX, "TemplateSyntaxError", "Encountered unknown tag '%.*s'.",
			(int)(tk->len > 60 ? 60 : tk->len), tk->s);
	}
	P->depth--;
	return nd;
}

static bool is_end_token(const struct jj_parser *P, const char *const *end_tokens)
{
	if (!end_tokens)
		return false;
	for (size_t k = 0; end_tokens[k]; k++)
		if (is_name(cur(P), end_tokens[k]))
			return true;
	return false;
}

static struct jj_node *subparse(struct jj_parser *P, const char *const *end_tokens)
{
	struct jj_node *body = node_new(P, JJ_N_BODY, cur(P)->line);
	struct nvec items = {0};
	for (;;) {
		const struct jj_token *tk = cur(P);
		if (tk->type == JJ_T_EOF)
			break;
		if (tk->type == JJ_T_DATA) {
			struct jj_node *nd = node_new(P, JJ_N_DATA, tk->line);
			nd->s = tk->s;
			nd->len = tk->len;
			nvec_push(P, &items, nd);
			advance(P);
		} else if (tk->type == JJ_T_VAR_BEGIN) {
			advance(P);
			struct jj_node *nd = node_new(P, JJ_N_OUTPUT, tk->line);
			nd->a = parse_tuple(P, false, true, NULL, false);
			expect_type(P, JJ_T_VAR_END, "end of print statement");
			nvec_push(P, &items, nd);
		} else if (tk->type == JJ_T_BLOCK_BEGIN) {
			advance(P);
			if (is_end_token(P, end_tokens))
				break;
			nvec_push(P, &items, parse_statement(P));
			expect_type(P, JJ_T_BLOCK_END, "end of statement block");
		} else {
			p_fail_unexpected(P, "unexpected");
		}
	}
	body->list = items.v;
	body->n = items.n;
	return body;
}

static void jj_parse(struct mf_jinja *t, struct jj_fail *f, const struct jj_token *toks, size_t n)
{
	struct jj_parser P = {.t = t, .f = f, .tk = toks, .n = n};
	t->root = subparse(&P, NULL);
	if (cur(&P)->type != JJ_T_EOF) {
		/* an end tag nobody opened: jinja2 reports it as an unknown tag */
		const struct jj_token *tk = cur(&P);
		f->line = tk->line;
		jj_fail(f, MF_JINJA_ESYNTAX, "TemplateSyntaxError", "Encountered unknown tag '%.*s'.",
			(int)(tk->len > 60 ? 60 : tk->len), tk->s);
	}
}
