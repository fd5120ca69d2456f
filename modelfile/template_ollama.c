/* modelfile/template_ollama.c — Ollama's layer over the Go template engine (template/template.go,
 * thinking/template.go, tools/template.go).
 *
 * Parse appends {{ .Response }} when the template names neither .Messages nor .Response; Vars collects
 * identifiers; Execute picks fill-in-the-middle, messages (with collation) or the legacy loop whose last
 * turn runs a copy of the tree cut after the first .Response field. Thinking and tool-call tags are found by
 * the same tree walks Ollama uses. Messages are also decoded here from a parsed /api/chat request.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/unicode.h"
#include "modelfile/template_internal.h"

static void set_err(struct mf_tpl_error *err, int code, const char *msg)
{
	if (!err)
		return;
	err->code = code;
	err->line = err->col = 0;
	snprintf(err->msg, sizeof err->msg, "%s", msg);
}

/* ------------------------------------------------------------------------------------------ helpers */

static bool sv_eq(const struct tpl_sv *a, const char *s)
{
	return a->n == strlen(s) && memcmp(a->p, s, a->n) == 0;
}

/* Go's unicode.IsSpace for the runes strings.TrimSpace removes. */
/* Byte length of the white-space rune at s[i] (unicode.IsSpace), or 0. */
static size_t space_at(const char *s, size_t n, size_t i)
{
	size_t w;
	uint32_t r = ob_utf8_decode((const unsigned char *)s + i, n - i, &w);
	return ob_rune_is_space(r) ? w : 0;
}

/* strings.TrimSpace into a malloc'd string. */
static char *trim_dup(const char *s, size_t n)
{
	size_t b = 0, e = n;
	for (size_t w; b < e && (w = space_at(s, n, b)) > 0;)
		b += w;
	while (e > b) {
		size_t w;
		if (!ob_rune_is_space(ob_utf8_decode_last((const unsigned char *)s + b, e - b, &w)))
			break;
		e -= w;
	}
	char *r = malloc(e - b + 1);
	if (!r)
		return NULL;
	memcpy(r, s + b, e - b);
	r[e - b] = 0;
	return r;
}

static bool all_space(const char *s, size_t n)
{
	for (size_t i = 0, w; i < n; i += w)
		if ((w = space_at(s, n, i)) == 0)
			return false;
	return true;
}

/* ------------------------------------------------------------------------------------------ Vars */

struct idset {
	char **v;
	size_t n, cap;
	bool nomem;
};

static void idset_add(struct idset *s, const char *p, size_t n)
{
	char *low = malloc(n + 1);
	if (!low) {
		s->nomem = true;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		low[i] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
	}
	low[n] = 0;
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], low) == 0) {
			free(low);
			return;
		}
	if (s->n == s->cap && OB_GROW(s->v, s->cap, s->n + 1, 0) != OB_GROW_OK) {
		free(low);
		s->nomem = true;
		return;
	}
	s->v[s->n++] = low;
}

/* Ollama's Identifiers(): returns an error text or NULL. */
static const char *identifiers(const struct tn *n, struct idset *s)
{
	if (!n)
		return NULL;
	const char *e;
	switch (n->type) {
	case TN_LIST:
		for (size_t i = 0; i < n->nkids; i++)
			if ((e = identifiers(n->kids[i], s)))
				return e;
		return NULL;
	case TN_TEMPLATE:
		if (!n->pipe)
			return "undefined template specified";
		return identifiers(n->pipe, s);
	case TN_ACTION:
		if (!n->pipe)
			return "undefined action in template";
		return identifiers(n->pipe, s);
	case TN_IF:
	case TN_RANGE:
	case TN_WITH:
		if (!n->pipe)
			return "undefined branch";
		if ((e = identifiers(n->pipe, s)))
			return e;
		if ((e = identifiers(n->list, s)))
			return e;
		return identifiers(n->else_list, s);
	case TN_PIPE:
		for (size_t c = 0; c < n->nkids; c++)
			for (size_t a = 0; a < n->kids[c]->nkids; a++)
				if ((e = identifiers(n->kids[c]->kids[a], s)))
					return e;
		return NULL;
	case TN_FIELD:
	case TN_VARIABLE:
		for (size_t i = 0; i < n->nident; i++)
			idset_add(s, n->ident[i].p, n->ident[i].n);
		return NULL;
	default:
		return NULL;
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int compute_vars(struct mf_tpl *t)
{
	struct idset s = {0};
	for (size_t i = 0; i < t->ntrees; i++) {
		const char *e = identifiers(t->trees[i].root, &s);
		if (e) {
			t->vars_error = true;
			snprintf(t->vars_errmsg, sizeof t->vars_errmsg, "%s", e);
			break;
		}
	}
	if (s.nomem) {
		for (size_t i = 0; i < s.n; i++)
			free(s.v[i]);
		free(s.v);
		return MF_TPL_ERR_NOMEM;
	}
	if (s.n)
		qsort(s.v, s.n, sizeof *s.v, cmp_str);
	t->vars = s.v;
	t->nvars = s.n;
	return 0;
}

bool mf_tpl_uses(const struct mf_tpl *t, const char *name)
{
	for (size_t i = 0; i < t->nvars; i++)
		if (strcmp(t->vars[i], name) == 0)
			return true;
	return false;
}

const char *const *mf_tpl_vars(const struct mf_tpl *t, size_t *n)
{
	*n = t->nvars;
	return (const char *const *)t->vars;
}

bool mf_tpl_contains(const struct mf_tpl *t, const char *s)
{
	size_t n = strlen(s);
	if (n == 0)
		return true;
	if (n > t->src_len)
		return false;
	for (size_t i = 0; i + n <= t->src_len; i++)
		if (memcmp(t->src + i, s, n) == 0)
			return true;
	return false;
}

const char *mf_tpl_source(const struct mf_tpl *t, size_t *len)
{
	if (len)
		*len = t->src_len;
	return t->src;
}

/* ------------------------------------------------------------------------------------------ InferTags */

struct infer {
	const struct tn **anc;
	size_t nanc, cap;
	const struct tn *open_text, *close_text; /* the chosen text nodes (NULL = keep "") */
	bool nomem;
};

static bool field_first_is(const struct tn *n, const char *name)
{
	return n->type == TN_FIELD && n->nident > 0 && sv_eq(&n->ident[0], name);
}

/* Does the range's pipeline mention a field whose first identifier is `name`? */
static bool pipe_uses_field(const struct tn *n, const char *name)
{
	if (!n)
		return false;
	switch (n->type) {
	case TN_FIELD:
		return field_first_is(n, name);
	case TN_PIPE:
	case TN_COMMAND:
		for (size_t i = 0; i < n->nkids; i++)
			if (pipe_uses_field(n->kids[i], name))
				return true;
		return false;
	default:
		return false;
	}
}

/* A pseudo node kind for Go's BranchNode, which thinking.InferTags pushes as its own ancestor. */
static void infer_visit(struct infer *in, const struct tn *n);

static void infer_push(struct infer *in, const struct tn *n)
{
	if (in->nanc == in->cap && OB_GROW(in->anc, in->cap, in->nanc + 1, 0) != OB_GROW_OK) {
		in->nomem = true;
		return;
	}
	in->anc[in->nanc++] = n;
}

static void infer_field(struct infer *in, const struct tn *n)
{
	if (!field_first_is(n, "Thinking"))
		return;
	const struct tn *range = NULL;
	for (size_t i = in->nanc; i-- > 0;)
		if (in->anc[i]->type == TN_RANGE) {
			range = in->anc[i];
			break;
		}
	if (!range || !pipe_uses_field(range->pipe, "Messages"))
		return;
	for (size_t i = in->nanc; i-- > 0;) {
		const struct tn *l = in->anc[i];
		if (l->type == TN_LIST) {
			if (l->nkids && l->kids[0]->type == TN_TEXT)
				in->open_text = l->kids[0];
			if (l->nkids && l->kids[l->nkids - 1]->type == TN_TEXT)
				in->close_text = l->kids[l->nkids - 1];
			break;
		}
	}
}

static void infer_visit(struct infer *in, const struct tn *n)
{
	if (!n || in->nomem)
		return;
	infer_push(in, n);
	if (in->nomem)
		return;
	switch (n->type) {
	case TN_LIST:
		for (size_t i = 0; i < n->nkids; i++)
			infer_visit(in, n->kids[i]);
		break;
	case TN_IF:
	case TN_RANGE:
	case TN_WITH:
		/* Go visits the embedded BranchNode: pipe, list, else list */
		infer_visit(in, n->pipe);
		infer_visit(in, n->list);
		infer_visit(in, n->else_list);
		break;
	case TN_ACTION:
	case TN_TEMPLATE:
		infer_visit(in, n->pipe);
		break;
	case TN_PIPE:
	case TN_COMMAND:
		for (size_t i = 0; i < n->nkids; i++)
			infer_visit(in, n->kids[i]);
		break;
	case TN_FIELD:
		infer_field(in, n);
		break;
	default:
		break;
	}
	in->nanc--;
}

/* ------------------------------------------------------------------------------------------ tool tag */

static bool is_toolcalls_if(const struct tn *n)
{
	if (!n->pipe)
		return false;
	for (size_t c = 0; c < n->pipe->nkids; c++)
		for (size_t a = 0; a < n->pipe->kids[c]->nkids; a++) {
			const struct tn *arg = n->pipe->kids[c]->kids[a];
			if (arg->type == TN_FIELD)
				for (size_t i = 0; i < arg->nident; i++)
					if (sv_eq(&arg->ident[i], "ToolCalls"))
						return true;
		}
	return false;
}

static const struct tn *find_toolcall_if(const struct tn *list)
{
	if (!list)
		return NULL;
	for (size_t i = 0; i < list->nkids; i++) {
		const struct tn *n = list->kids[i], *r;
		switch (n->type) {
		case TN_IF:
			if (is_toolcalls_if(n))
				return n;
			/* fall through */
		case TN_RANGE:
		case TN_WITH:
			if ((r = find_toolcall_if(n->list)))
				return r;
			if ((r = find_toolcall_if(n->else_list)))
				return r;
			break;
		case TN_LIST:
			if ((r = find_toolcall_if(n)))
				return r;
			break;
		default:
			break;
		}
	}
	return NULL;
}

static const struct tn *find_text(const struct tn *list)
{
	if (!list)
		return NULL;
	for (size_t i = 0; i < list->nkids; i++) {
		const struct tn *n = list->kids[i], *r;
		switch (n->type) {
		case TN_TEXT:
			if (all_space(n->s, n->n))
				continue;
			return n;
		case TN_IF:
		case TN_RANGE:
		case TN_WITH:
			if ((r = find_text(n->list)))
				return r;
			if ((r = find_text(n->else_list)))
				return r;
			return NULL;
		case TN_LIST:
			if ((r = find_text(n)))
				return r;
			break;
		case TN_ACTION:
			return NULL;
		default:
			break;
		}
	}
	return NULL;
}

static char *tool_tag(const struct mf_tpl *t)
{
	const struct tn *tc = find_toolcall_if(t->trees[0].root);
	const struct tn *tn = tc ? find_text(tc->list) : NULL;
	if (!tn)
		return trim_dup("{", 1);
	/* CRLF → LF, cut at the first '{', trim */
	size_t n = tn->n;
	const char *brace = memchr(tn->s, '{', n);
	if (brace)
		n = (size_t)(brace - tn->s);
	char *tmp = malloc(n + 1);
	if (!tmp)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (tn->s[i] == '\r' && i + 1 < n && tn->s[i + 1] == '\n')
			continue;
		tmp[k++] = tn->s[i];
	}
	char *tag = trim_dup(tmp, k);
	free(tmp);
	if (tag && !*tag) {
		free(tag);
		return trim_dup("{", 1);
	}
	return tag;
}

const char *mf_tpl_think_open(const struct mf_tpl *t)
{
	return t->think_open;
}

const char *mf_tpl_think_close(const struct mf_tpl *t)
{
	return t->think_close;
}

const char *mf_tpl_tool_tag(const struct mf_tpl *t)
{
	return t->tool_tag;
}

bool mf_tpl_tool_round_trip(const struct mf_tpl *t)
{
	if (t->vars_error || !mf_tpl_uses(t, "tools") || !mf_tpl_uses(t, "toolcalls"))
		return false;
	return mf_tpl_contains(t, "eq .Role \"tool\"") || mf_tpl_contains(t, "tool_response") ||
	       mf_tpl_contains(t, "TOOL_RESULTS");
}

/* ------------------------------------------------------------------------------------------ parse */

void mf_tpl_free(struct mf_tpl *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nvars; i++)
		free(t->vars[i]);
	free(t->vars);
	free(t->think_open);
	free(t->think_close);
	free(t->tool_tag);
	free(t->src);
	tpl_arena_free(&t->arena);
	free(t);
}

int mf_tpl_parse(const char *src, size_t len, struct mf_tpl **out, struct mf_tpl_error *err)
{
	*out = NULL;
	if (!src && len)
		len = 0;
	if (len > MF_TPL_MAX_SOURCE) {
		char m[128];
		snprintf(m, sizeof m, "template: text of %zu bytes is larger than the limit of %u bytes", len,
			 MF_TPL_MAX_SOURCE);
		set_err(err, MF_TPL_ERR_LIMIT, m);
		return MF_TPL_ERR_LIMIT;
	}
	struct mf_tpl *t = calloc(1, sizeof *t);
	if (!t) {
		set_err(err, MF_TPL_ERR_NOMEM, "template: out of memory");
		return MF_TPL_ERR_NOMEM;
	}
	tpl_arena_init(&t->arena, MF_TPL_MAX_PARSE_MEMORY);
	t->src = malloc(len + 1);
	if (!t->src) {
		mf_tpl_free(t);
		set_err(err, MF_TPL_ERR_NOMEM, "template: out of memory");
		return MF_TPL_ERR_NOMEM;
	}
	if (len)
		memcpy(t->src, src, len);
	t->src[len] = 0;
	t->src_len = len;
	int rc = tpl_parse(t, true, err);
	if (rc) {
		mf_tpl_free(t);
		return rc;
	}
	rc = compute_vars(t);
	if (rc) {
		mf_tpl_free(t);
		set_err(err, rc, "template: out of memory");
		return rc;
	}
	if (t->vars_error) {
		/* Ollama's Parse returns the Vars() error */
		set_err(err, MF_TPL_ERR_PARSE, t->vars_errmsg);
		mf_tpl_free(t);
		return MF_TPL_ERR_PARSE;
	}
	if (!mf_tpl_uses(t, "messages") && !mf_tpl_uses(t, "response")) {
		/* append {{ .Response }} */
		struct tn *act = tpl_node_new(&t->arena, TN_ACTION, 0, 1);
		struct tn *pipe = tpl_node_new(&t->arena, TN_PIPE, 0, 1);
		struct tn *cmd = tpl_node_new(&t->arena, TN_COMMAND, 0, 1);
		struct tn *field = tpl_node_new(&t->arena, TN_FIELD, 0, 1);
		struct tpl_sv *id = tpl_arena_alloc(&t->arena, sizeof *id);
		if (!act || !pipe || !cmd || !field || !id || !tpl_node_add(&t->arena, cmd, field) ||
		    !tpl_node_add(&t->arena, pipe, cmd) || !tpl_node_add(&t->arena, t->trees[0].root, act)) {
			mf_tpl_free(t);
			set_err(err, MF_TPL_ERR_NOMEM, "template: out of memory");
			return MF_TPL_ERR_NOMEM;
		}
		id->p = "Response";
		id->n = 8;
		field->ident = id;
		field->nident = 1;
		act->pipe = pipe;
		t->appended_response = true;
		/* Ollama's later Vars() calls see "response" too */
		for (size_t i = 0; i < t->nvars; i++)
			free(t->vars[i]);
		free(t->vars);
		t->vars = NULL;
		t->nvars = 0;
		if (compute_vars(t)) {
			mf_tpl_free(t);
			set_err(err, MF_TPL_ERR_NOMEM, "template: out of memory");
			return MF_TPL_ERR_NOMEM;
		}
	}
	struct infer in = {0};
	infer_visit(&in, t->trees[0].root);
	free(in.anc);
	t->think_open = in.open_text ? trim_dup(in.open_text->s, in.open_text->n) : trim_dup("", 0);
	t->think_close = in.close_text ? trim_dup(in.close_text->s, in.close_text->n) : trim_dup("", 0);
	t->tool_tag = tool_tag(t);
	if (in.nomem || !t->think_open || !t->think_close || !t->tool_tag) {
		mf_tpl_free(t);
		set_err(err, MF_TPL_ERR_NOMEM, "template: out of memory");
		return MF_TPL_ERR_NOMEM;
	}
	*out = t;
	return MF_TPL_OK;
}

/* ------------------------------------------------------------------------------------------ legacy cut */

struct cut {
	struct tpl_arena *a;
	bool cut;
	bool broken; /* Go would panic (an else branch after the cut) */
	bool nomem;
};

static struct tn *cut_clone(struct cut *c, const struct tn *n)
{
	struct tn *m = tpl_arena_alloc(c->a, sizeof *m);
	if (!m) {
		c->nomem = true;
		return NULL;
	}
	*m = *n;
	m->kids = NULL;
	m->nkids = m->capkids = 0;
	return m;
}

static bool is_response_field(const struct tn *n)
{
	if (n->type != TN_FIELD)
		return false;
	for (size_t i = 0; i < n->nident; i++)
		if (sv_eq(&n->ident[i], "Response"))
			return true;
	return false;
}

/* Ollama's deleteNode walk: returns the kept (possibly rebuilt) node, or NULL when deleted. */
static const struct tn *cut_walk(struct cut *c, const struct tn *n)
{
	if (c->nomem || !n)
		return NULL;
	if (is_response_field(n)) {
		c->cut = true;
		return n;
	}
	if (c->cut)
		return NULL;
	switch (n->type) {
	case TN_LIST: {
		struct tn *m = cut_clone(c, n);
		if (!m)
			return NULL;
		for (size_t i = 0; i < n->nkids; i++) {
			const struct tn *k = cut_walk(c, n->kids[i]);
			if (k && !tpl_node_add(c->a, m, (struct tn *)k)) {
				c->nomem = true;
				return NULL;
			}
		}
		return m;
	}
	case TN_IF:
	case TN_WITH:
	case TN_RANGE: {
		/* the branch's pipeline is not walked; its lists are */
		struct tn *m = cut_clone(c, n);
		if (!m)
			return NULL;
		m->list = (struct tn *)cut_walk(c, n->list);
		if (!m->list) {
			c->broken = true;
			return NULL;
		}
		if (n->else_list) {
			m->else_list = (struct tn *)cut_walk(c, n->else_list);
			if (!m->else_list) {
				c->broken = true;
				return NULL;
			}
		}
		return m;
	}
	case TN_ACTION: {
		const struct tn *p = cut_walk(c, n->pipe);
		if (!p)
			return NULL;
		struct tn *m = cut_clone(c, n);
		if (m)
			m->pipe = (struct tn *)p;
		return m;
	}
	case TN_PIPE: {
		struct tn *m = cut_clone(c, n);
		if (!m)
			return NULL;
		for (size_t i = 0; i < n->nkids; i++) {
			const struct tn *cmd = n->kids[i];
			struct tn *mc = cut_clone(c, cmd);
			if (!mc)
				return NULL;
			for (size_t k = 0; k < cmd->nkids; k++) {
				const struct tn *arg = cut_walk(c, cmd->kids[k]);
				if (arg && !tpl_node_add(c->a, mc, (struct tn *)arg)) {
					c->nomem = true;
					return NULL;
				}
			}
			if (mc->nkids == 0)
				return NULL;
			if (!tpl_node_add(c->a, m, mc)) {
				c->nomem = true;
				return NULL;
			}
		}
		if (m->nkids == 0)
			return NULL;
		return m;
	}
	default:
		return n;
	}
}

/* ------------------------------------------------------------------------------------------ data */

struct data_field {
	const char *key;
	struct tv val;
};

static int make_data(struct tpl_arena *a, const struct data_field *f, size_t n, struct tv *out)
{
	struct tv_entry *e = tpl_arena_alloc(a, n * sizeof *e);
	if (!e)
		return MF_TPL_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		e[i].key = f[i].key;
		e[i].key_n = strlen(f[i].key);
		e[i].val = f[i].val;
		e[i].val.iface = 1;
	}
	tv_sort_entries(e, n);
	*out = tv_invalid();
	out->kind = TV_MAP;
	out->type = TT_DATA;
	out->u.map.e = e;
	out->u.map.n = n;
	return 0;
}

static struct tv str_tv(struct mf_tpl_str s)
{
	return tv_string(s.p ? s.p : "", s.p ? s.n : 0);
}

static bool str_empty(struct mf_tpl_str s)
{
	return !s.p || s.n == 0;
}

static bool str_is(struct mf_tpl_str s, const char *lit)
{
	size_t n = strlen(lit);
	return s.p && s.n == n && memcmp(s.p, lit, n) == 0;
}

/* A collated message: the first message of a run plus the joined content. */
struct cmsg {
	const struct mf_tpl_message *m;
	struct mf_tpl_str content;
};

static int collate(struct tpl_arena *a, const struct mf_tpl_values *v, struct cmsg **out, size_t *nout,
		   struct mf_tpl_str *system)
{
	struct cmsg *c = tpl_arena_alloc(a, (v->n_messages ? v->n_messages : 1) * sizeof *c);
	if (!c)
		return MF_TPL_ERR_NOMEM;
	size_t n = 0, sys_len = 0;
	for (size_t i = 0; i < v->n_messages; i++)
		if (str_is(v->messages[i].role, "system"))
			sys_len += v->messages[i].content.n + 2;
	char *sys = tpl_arena_alloc(a, sys_len + 1);
	if (!sys)
		return MF_TPL_ERR_NOMEM;
	size_t sk = 0;
	for (size_t i = 0; i < v->n_messages; i++) {
		const struct mf_tpl_message *m = &v->messages[i];
		if (str_is(m->role, "system")) {
			if (sk)
				memcpy(sys + sk, "\n\n", 2), sk += 2;
			if (m->content.n)
				memcpy(sys + sk, m->content.p, m->content.n);
			sk += m->content.n;
		}
		bool same = n > 0 && c[n - 1].m->role.n == m->role.n &&
			    (m->role.n == 0 || memcmp(c[n - 1].m->role.p, m->role.p, m->role.n) == 0);
		if (same && !str_is(m->role, "tool")) {
			size_t len = c[n - 1].content.n + 2 + m->content.n;
			char *p = tpl_arena_alloc(a, len + 1);
			if (!p)
				return MF_TPL_ERR_NOMEM;
			if (c[n - 1].content.n)
				memcpy(p, c[n - 1].content.p, c[n - 1].content.n);
			memcpy(p + c[n - 1].content.n, "\n\n", 2);
			if (m->content.n)
				memcpy(p + c[n - 1].content.n + 2, m->content.p, m->content.n);
			c[n - 1].content.p = p;
			c[n - 1].content.n = len;
		} else {
			c[n].m = m;
			c[n].content = m->content;
			if (!c[n].content.p)
				c[n].content.n = 0;
			n++;
		}
	}
	system->p = sys;
	system->n = sk;
	*out = c;
	*nout = n;
	return 0;
}

static int build_messages(struct tpl_arena *a, const struct cmsg *c, size_t n, bool any, struct tv *out,
			  struct mf_tpl_error *err)
{
	tv_zero(a, TT_MESSAGES, out);
	if (!any)
		return 0; /* no messages: a nil slice */
	out->isnil = 0;
	out->u.seq.n = n;
	out->u.seq.v = tpl_arena_alloc(a, (n ? n : 1) * sizeof(struct tv));
	if (!out->u.seq.v)
		return MF_TPL_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct mf_tpl_message *m = c[i].m;
		struct tv *mv = &out->u.seq.v[i];
		*mv = tv_invalid();
		mv->kind = TV_STRUCT;
		mv->type = TT_MESSAGE;
		struct tv *f = tpl_arena_alloc(a, 7 * sizeof *f);
		if (!f)
			return MF_TPL_ERR_NOMEM;
		mv->u.fields = f;
		f[0] = str_tv(m->role);
		f[1] = str_tv(c[i].content);
		f[2] = str_tv(m->thinking);
		tv_zero(a, TT_IMAGES, &f[3]);
		if (m->images) {
			/* Images is nil only when the request had none */
			f[3].isnil = 0;
			f[3].u.seq.n = m->n_images;
			f[3].u.seq.v = tpl_arena_alloc(a, (m->n_images ? m->n_images : 1) * sizeof(struct tv));
			if (!f[3].u.seq.v)
				return MF_TPL_ERR_NOMEM;
			for (size_t k = 0; k < m->n_images; k++) {
				struct tv *iv = &f[3].u.seq.v[k];
				*iv = tv_invalid();
				iv->kind = TV_BYTES;
				iv->type = TT_IMAGE;
				iv->u.s.p = m->images[k].data ? (const char *)m->images[k].data : "";
				iv->u.s.n = m->images[k].data ? m->images[k].len : 0;
				iv->isnil = m->images[k].data == NULL;
			}
		}
		tv_zero(a, TT_TOOLCALLS, &f[4]);
		if (m->n_tool_calls) {
			f[4].isnil = 0;
			f[4].u.seq.n = m->n_tool_calls;
			f[4].u.seq.v = tpl_arena_alloc(a, m->n_tool_calls * sizeof(struct tv));
			if (!f[4].u.seq.v)
				return MF_TPL_ERR_NOMEM;
			for (size_t k = 0; k < m->n_tool_calls; k++) {
				const struct mf_tpl_tool_call *tc = &m->tool_calls[k];
				struct tv *cv = &f[4].u.seq.v[k];
				if (!tv_zero(a, TT_TOOLCALL, cv))
					return MF_TPL_ERR_NOMEM;
				cv->u.fields[0] = str_tv(tc->id);
				struct tv *fn = cv->u.fields[1].u.fields;
				fn[0] = tv_int(tc->index);
				fn[1] = str_tv(tc->name);
				int rc = tv_build_args(a, tc->arguments, &fn[2], err);
				if (rc)
					return rc;
			}
		}
		f[5] = str_tv(m->tool_name);
		f[6] = str_tv(m->tool_call_id);
	}
	return 0;
}

static int run(const struct mf_tpl *t, const struct tn *root, const struct tv *data, bool ollama_funcs,
	       const struct mf_tpl_values *v, struct tpl_arena *a, struct ob_buf *out, struct mf_tpl_error *err)
{
	struct tpl_exec_opts o = {
		.funcs_ollama = ollama_funcs,
		.missingkey_zero = ollama_funcs,
		.now = v->now,
		.detached = !ollama_funcs,
	};
	return tpl_exec(t, root, data, &o, a, out, err);
}

/* The end of a rendering: on success the text goes to *out (malloc'd) and *out_len; b is emptied either way. */
static int hand_over(int rc, struct ob_buf *b, char **out, size_t *out_len, struct mf_tpl_error *err)
{
	if (rc) {
		ob_buf_free(b);
		return rc;
	}
	size_t n = b->len;
	*out = ob_buf_take(b);
	if (!*out) {
		set_err(err, MF_TPL_ERR_NOMEM, "template: out of memory");
		return MF_TPL_ERR_NOMEM;
	}
	if (out_len)
		*out_len = n;
	return MF_TPL_OK;
}

int mf_tpl_execute(const struct mf_tpl *t, const struct mf_tpl_values *v, char **out, size_t *out_len,
		   struct mf_tpl_error *err)
{
	*out = NULL;
	if (out_len)
		*out_len = 0;
	struct tpl_arena a;
	tpl_arena_init(&a, MF_TPL_MAX_MEMORY);
	struct ob_buf b;
	ob_buf_init(&b, MF_TPL_MAX_OUTPUT);
	int rc;
	struct cmsg *c = NULL;
	size_t nc = 0;
	struct mf_tpl_str system = {0};
	struct tv think = tv_bool(v->think), level = str_tv(v->think_level), is_set = tv_bool(v->is_think_set);
	struct tv data;
	rc = collate(&a, v, &c, &nc, &system);
	if (rc)
		goto fail;
	if (!str_empty(v->prompt) && !str_empty(v->suffix)) {
		struct data_field f[] = {
			{"Prompt", str_tv(v->prompt)}, {"Suffix", str_tv(v->suffix)}, {"Response", tv_string("", 0)},
			{"Think", think},              {"ThinkLevel", level},          {"IsThinkSet", is_set},
		};
		if ((rc = make_data(&a, f, sizeof f / sizeof f[0], &data)))
			goto fail;
		rc = run(t, NULL, &data, true, v, &a, &b, err);
	} else if (!v->force_legacy && mf_tpl_uses(t, "messages")) {
		struct tv msgs, tools;
		if ((rc = build_messages(&a, c, nc, v->n_messages > 0, &msgs, err)))
			goto fail;
		if ((rc = tv_build_tools(&a, v->tools, &tools, err)))
			goto fail;
		struct data_field f[] = {
			{"System", str_tv(system)}, {"Messages", msgs}, {"Tools", tools}, {"Response", tv_string("", 0)},
			{"Think", think},           {"ThinkLevel", level}, {"IsThinkSet", is_set},
		};
		if ((rc = make_data(&a, f, sizeof f / sizeof f[0], &data)))
			goto fail;
		rc = run(t, NULL, &data, true, v, &a, &b, err);
	} else {
		struct mf_tpl_str sys = {0}, prompt = {0}, response = {0};
		for (size_t i = 0; i < nc; i++) {
			bool flush = false;
			const struct mf_tpl_message *m = c[i].m;
			if (str_is(m->role, "system"))
				flush = !str_empty(prompt) || !str_empty(response);
			else if (str_is(m->role, "user"))
				flush = !str_empty(response);
			if (flush) {
				struct data_field f[] = {
					{"System", str_tv(sys)}, {"Prompt", str_tv(prompt)}, {"Response", str_tv(response)},
					{"Think", think},        {"ThinkLevel", level},       {"IsThinkSet", is_set},
				};
				if ((rc = make_data(&a, f, sizeof f / sizeof f[0], &data)))
					goto fail;
				if ((rc = run(t, NULL, &data, true, v, &a, &b, err)))
					goto done;
				sys = prompt = response = (struct mf_tpl_str){0};
			}
			if (str_is(m->role, "system"))
				sys = c[i].content;
			else if (str_is(m->role, "user"))
				prompt = c[i].content;
			else if (str_is(m->role, "assistant"))
				response = c[i].content;
		}
		struct cut cu = {.a = &a};
		const struct tn *root = cut_walk(&cu, t->trees[0].root);
		if (cu.nomem) {
			rc = MF_TPL_ERR_NOMEM;
			goto fail;
		}
		if (cu.broken || !root) {
			rc = MF_TPL_ERR_EXEC;
			set_err(err, rc, "template: cannot cut the template after .Response (a .Response inside a branch "
					 "with an else clause)");
			goto done;
		}
		struct data_field f[] = {
			{"System", str_tv(sys)}, {"Prompt", str_tv(prompt)}, {"Response", str_tv(response)},
			{"Think", think},        {"ThinkLevel", level},       {"IsThinkSet", is_set},
		};
		if ((rc = make_data(&a, f, sizeof f / sizeof f[0], &data)))
			goto fail;
		rc = run(t, root, &data, false, v, &a, &b, err);
	}
	goto done;
fail:
	if (rc == MF_TPL_ERR_NOMEM)
		set_err(err, rc, "template: out of memory");
done:
	tpl_arena_free(&a);
	return hand_over(rc, &b, out, out_len, err);
}

int mf_tpl_render_generic(const char *src, size_t len, const struct ob_json *data, int64_t now, char **out,
			  size_t *out_len, struct mf_tpl_error *err)
{
	*out = NULL;
	if (len > MF_TPL_MAX_SOURCE) {
		set_err(err, MF_TPL_ERR_LIMIT, "template: text larger than the limit");
		return MF_TPL_ERR_LIMIT;
	}
	struct mf_tpl *t = calloc(1, sizeof *t);
	if (!t || !(t->src = malloc(len + 1))) {
		free(t);
		set_err(err, MF_TPL_ERR_NOMEM, "template: out of memory");
		return MF_TPL_ERR_NOMEM;
	}
	tpl_arena_init(&t->arena, MF_TPL_MAX_PARSE_MEMORY);
	if (len)
		memcpy(t->src, src, len);
	t->src[len] = 0;
	t->src_len = len;
	int rc = tpl_parse(t, true, err);
	if (rc) {
		mf_tpl_free(t);
		return rc;
	}
	struct tpl_arena a;
	tpl_arena_init(&a, MF_TPL_MAX_MEMORY);
	struct ob_buf b;
	ob_buf_init(&b, MF_TPL_MAX_OUTPUT);
	struct tv dv = tv_invalid();
	if (data) {
		rc = tv_from_json_any(&a, data, &dv);
		if (rc) {
			set_err(err, rc, rc == MF_TPL_ERR_NOMEM ? "template: out of memory" : "template: bad data");
			goto done;
		}
	}
	struct tpl_exec_opts o = {.funcs_ollama = true, .missingkey_zero = true, .now = now};
	rc = tpl_exec(t, NULL, &dv, &o, &a, &b, err);
done:
	tpl_arena_free(&a);
	mf_tpl_free(t);
	return hand_over(rc, &b, out, out_len, err);
}

/* ------------------------------------------------------------------------------------------ requests */

struct mf_tpl_messages_priv {
	struct tpl_arena arena;
};

/* Go's decoding error; api.Message has its own UnmarshalJSON, so every error inside a message is reported
 * at the request's "messages" field. */
static int msg_err(struct mf_tpl_error *err, const struct ob_json *j, const char *field, const char *type)
{
	(void)field;
	if (err) {
		err->code = MF_TPL_ERR_DATA;
		err->line = err->col = 0;
		snprintf(err->msg, sizeof err->msg, "json: cannot unmarshal %s into Go struct field ChatRequest.messages of type %s",
			 ob_json_type_name(j), type);
	}
	return MF_TPL_ERR_DATA;
}

static int get_str(const struct ob_json *obj, const char *key, struct mf_tpl_str *out, const char *field,
		   struct mf_tpl_error *err)
{
	const struct ob_json *v = ob_json_get_fold(obj, key);
	if (!v || v->type == OB_JSON_NULL)
		return 0;
	if (v->type != OB_JSON_STRING)
		return msg_err(err, v, field, "string");
	out->p = v->str;
	out->n = v->len;
	return 0;
}

/* a []byte field (api.ImageData): Go's base64.StdEncoding, errors as encoding/json reports them */
static int b64decode(struct tpl_arena *a, const char *s, size_t n, struct mf_tpl_image *out, struct mf_tpl_error *err)
{
	unsigned char *o = tpl_arena_alloc(a, ob_base64_decoded_max(n) + 1);
	if (!o)
		return MF_TPL_ERR_NOMEM;
	size_t bad_at;
	if (!ob_base64_decode(s, n, o, &out->len, &bad_at)) {
		if (err) {
			err->code = MF_TPL_ERR_DATA;
			err->line = err->col = 0;
			snprintf(err->msg, sizeof err->msg, OB_BASE64_CORRUPT_FMT, bad_at);
		}
		return MF_TPL_ERR_DATA;
	}
	out->data = o;
	return 0;
}

static int decode_message(struct tpl_arena *a, const struct ob_json *j, struct mf_tpl_message *m,
			  struct mf_tpl_error *err)
{
	memset(m, 0, sizeof *m);
	if (j->type == OB_JSON_NULL)
		return 0;
	if (j->type != OB_JSON_OBJECT)
		return msg_err(err, j, "ChatRequest.messages", "api.Message");
	int rc;
	if ((rc = get_str(j, "role", &m->role, "Message.role", err)) ||
	    (rc = get_str(j, "content", &m->content, "Message.content", err)) ||
	    (rc = get_str(j, "thinking", &m->thinking, "Message.thinking", err)) ||
	    (rc = get_str(j, "tool_name", &m->tool_name, "Message.tool_name", err)) ||
	    (rc = get_str(j, "tool_call_id", &m->tool_call_id, "Message.tool_call_id", err)))
		return rc;
	/* UnmarshalJSON lower-cases the role */
	if (m->role.n) {
		char *r = tpl_arena_strdup(a, m->role.p, m->role.n);
		if (!r)
			return MF_TPL_ERR_NOMEM;
		for (size_t i = 0; i < m->role.n; i++)
			if (r[i] >= 'A' && r[i] <= 'Z')
				r[i] = (char)(r[i] - 'A' + 'a');
		m->role.p = r;
	}
	const struct ob_json *imgs = ob_json_get_fold(j, "images");
	if (imgs && imgs->type != OB_JSON_NULL) {
		if (imgs->type != OB_JSON_ARRAY)
			return msg_err(err, imgs, "Message.images", "[]api.ImageData");
		struct mf_tpl_image *im = tpl_arena_alloc(a, (imgs->count ? imgs->count : 1) * sizeof *im);
		if (!im)
			return MF_TPL_ERR_NOMEM;
		size_t i = 0;
		OB_JSON_FOREACH(e, imgs)
		{
			if (e->type == OB_JSON_NULL) {
				im[i].data = NULL;
				im[i].len = 0;
			} else if (e->type != OB_JSON_STRING)
				return msg_err(err, e, "Message.images", "api.ImageData");
			else if ((rc = b64decode(a, e->str, e->len, &im[i], err)))
				return rc;
			i++;
		}
		m->images = im;
		m->n_images = imgs->count;
	}
	const struct ob_json *tcs = ob_json_get_fold(j, "tool_calls");
	if (tcs && tcs->type != OB_JSON_NULL) {
		if (tcs->type != OB_JSON_ARRAY)
			return msg_err(err, tcs, "Message.tool_calls", "[]api.ToolCall");
		struct mf_tpl_tool_call *tc = tpl_arena_alloc(a, (tcs->count ? tcs->count : 1) * sizeof *tc);
		if (!tc)
			return MF_TPL_ERR_NOMEM;
		size_t i = 0;
		OB_JSON_FOREACH(e, tcs)
		{
			struct mf_tpl_tool_call *c = &tc[i++];
			memset(c, 0, sizeof *c);
			if (e->type == OB_JSON_NULL)
				continue;
			if (e->type != OB_JSON_OBJECT)
				return msg_err(err, e, "Message.tool_calls", "api.ToolCall");
			if ((rc = get_str(e, "id", &c->id, "ToolCall.tool_calls.id", err)))
				return rc;
			const struct ob_json *fn = ob_json_get_fold(e, "function");
			if (!fn || fn->type == OB_JSON_NULL)
				continue;
			if (fn->type != OB_JSON_OBJECT)
				return msg_err(err, fn, "ToolCall.tool_calls.function", "api.ToolCallFunction");
			const struct ob_json *idx = ob_json_get_fold(fn, "index");
			if (idx && idx->type != OB_JSON_NULL) {
				int64_t iv;
				if (idx->type != OB_JSON_NUMBER)
					return msg_err(err, idx, "ToolCallFunction.tool_calls.function.index", "int");
				if (!ob_json_int(idx, &iv)) {
					if (err) {
						err->code = MF_TPL_ERR_DATA;
						err->line = err->col = 0;
						snprintf(err->msg, sizeof err->msg,
							 "json: cannot unmarshal number %s into Go struct field "
							 "ChatRequest.messages of type int",
							 idx->str);
					}
					return MF_TPL_ERR_DATA;
				}
				c->index = iv;
			}
			if ((rc = get_str(fn, "name", &c->name, "ToolCallFunction.tool_calls.function.name", err)))
				return rc;
			const struct ob_json *args = ob_json_get_fold(fn, "arguments");
			if (args && args->type != OB_JSON_NULL && args->type != OB_JSON_OBJECT) {
				/* the ordered map's parser (jsonparser.ObjectEach) says this */
				if (err) {
					err->code = MF_TPL_ERR_DATA;
					err->line = err->col = 0;
					snprintf(err->msg, sizeof err->msg,
						 "Value looks like object, but can't find closing '}' symbol");
				}
				return MF_TPL_ERR_DATA;
			}
			c->arguments = args;
		}
		m->tool_calls = tc;
		m->n_tool_calls = tcs->count;
	}
	return 0;
}

int mf_tpl_messages_from_json(const struct ob_json *arr, struct mf_tpl_messages **out, struct mf_tpl_error *err)
{
	*out = NULL;
	struct mf_tpl_messages *m = calloc(1, sizeof *m);
	struct mf_tpl_messages_priv *p = calloc(1, sizeof *p);
	if (!m || !p) {
		free(m);
		free(p);
		set_err(err, MF_TPL_ERR_NOMEM, "out of memory");
		return MF_TPL_ERR_NOMEM;
	}
	m->priv = p;
	tpl_arena_init(&p->arena, 0);
	int rc = 0;
	if (arr && arr->type != OB_JSON_NULL) {
		if (arr->type != OB_JSON_ARRAY) {
			rc = msg_err(err, arr, "ChatRequest.messages", "[]api.Message");
			goto fail;
		}
		m->items = tpl_arena_alloc(&p->arena, (arr->count ? arr->count : 1) * sizeof *m->items);
		if (!m->items) {
			rc = MF_TPL_ERR_NOMEM;
			goto fail;
		}
		size_t i = 0;
		OB_JSON_FOREACH(e, arr)
		{
			if ((rc = decode_message(&p->arena, e, &m->items[i++], err)))
				goto fail;
		}
		m->n = arr->count;
	}
	*out = m;
	return 0;
fail:
	if (rc == MF_TPL_ERR_NOMEM)
		set_err(err, rc, "out of memory");
	mf_tpl_messages_free(m);
	return rc;
}

void mf_tpl_messages_free(struct mf_tpl_messages *m)
{
	if (!m)
		return;
	if (m->priv) {
		tpl_arena_free(&m->priv->arena);
		free(m->priv);
	}
	free(m);
}

int mf_tpl_tools_check(const struct ob_json *tools, struct mf_tpl_error *err)
{
	struct tpl_arena a;
	tpl_arena_init(&a, MF_TPL_MAX_MEMORY);
	struct tv t;
	int rc = tv_build_tools(&a, tools, &t, err);
	tpl_arena_free(&a);
	return rc;
}
