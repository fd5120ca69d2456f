/* modelfile/jinja/api.c — the public face of the Jinja engine (modelfile/jinja/jinja.h): parsing with its
 * limits, the variables a caller builds (deep copies in their own arena), and the render entry point that
 * owns every allocation of a render so that an error anywhere unwinds without a leak. Part of jinja.c.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/json.h"
#include "modelfile/jinja/internal.h"

const char *mf_jinja_strerror(int status)
{
	switch (status) {
	case MF_JINJA_OK: return "success";
	case MF_JINJA_ESYNTAX: return "template syntax error";
	case MF_JINJA_ERAISED: return "the template raised an exception";
	case MF_JINJA_ETYPE: return "type error";
	case MF_JINJA_EVALUE: return "value error";
	case MF_JINJA_EUNDEFINED: return "undefined value";
	case MF_JINJA_ESECURITY: return "refused by the sandbox";
	case MF_JINJA_ERUNTIME: return "template runtime error";
	case MF_JINJA_ELIMIT: return "template limit exceeded";
	case MF_JINJA_ENOMEM: return "out of memory";
	case MF_JINJA_EINVAL: return "invalid argument";
	default: return "unknown error";
	}
}

static void err_clear(struct mf_jinja_error *e)
{
	memset(e, 0, sizeof *e);
}

static void err_set(struct mf_jinja_error *e, int status, const char *type, const char *msg)
{
	err_clear(e);
	e->status = status;
	snprintf(e->type, sizeof e->type, "%s", type);
	snprintf(e->message, sizeof e->message, "%s", msg);
}

/* ------------------------------------------------------------------------------------------ parse */

/* The parse proper; err is never NULL here and not assigned after setjmp. */
static int parse_into(const char *src, size_t len, struct mf_jinja *t, struct mf_jinja_error *err)
{
	struct jj_fail f = {.err = err, .line = 0, .max_steps = UINT64_MAX};
	if (setjmp(f.jb))
		return err->status;
	/* jinja2 normalises \r\n and \r to \n and drops one trailing newline (keep_trailing_newline=False) */
	char *norm = jj_alloc(&t->arena, &f, len + 1);
	size_t n = 0;
	for (size_t i = 0; i < len; i++) {
		if (src[i] == '\r') {
			norm[n++] = '\n';
			if (i + 1 < len && src[i + 1] == '\n')
				i++;
		} else {
			norm[n++] = src[i];
		}
	}
	if (n && norm[n - 1] == '\n')
		n--;
	norm[n] = 0;
	struct jj_lexer_out toks = {0};
	jj_lex(t, &f, norm, n, &toks);
	jj_parse(t, &f, toks.toks, toks.n);
	return MF_JINJA_OK;
}

int mf_jinja_parse(const char *src, size_t len, struct mf_jinja **out, struct mf_jinja_error *err)
{
	struct mf_jinja_error scratch;
	if (!err)
		err = &scratch;
	err_clear(err);
	*out = NULL;
	if (!src && len)
		return err_set(err, MF_JINJA_EINVAL, "ValueError", "no template text"), MF_JINJA_EINVAL;
	if (len > MF_JINJA_MAX_SOURCE) {
		err_set(err, MF_JINJA_ELIMIT, "LimitError", "");
		snprintf(err->message, sizeof err->message, "template too large: %zu bytes (limit %u)", len,
			 MF_JINJA_MAX_SOURCE);
		return MF_JINJA_ELIMIT;
	}
	struct mf_jinja *t = calloc(1, sizeof *t);
	if (!t)
		return err_set(err, MF_JINJA_ENOMEM, "MemoryError", "out of memory"), MF_JINJA_ENOMEM;
	jj_arena_init(&t->arena, 64u * MF_JINJA_MAX_SOURCE + (1u << 20));
	int rc = parse_into(src ? src : "", len, t, err);
	if (rc) {
		mf_jinja_free(t);
		return rc;
	}
	*out = t;
	return MF_JINJA_OK;
}

void mf_jinja_free(struct mf_jinja *t)
{
	if (!t)
		return;
	jj_arena_free(&t->arena);
	free(t);
}

bool mf_jinja_uses(const struct mf_jinja *t, const char *name)
{
	return t && name && jj_sym_find(t, name, strlen(name)) >= 0;
}

/* ------------------------------------------------------------------------------------------ variables */

struct mf_jinja_vars *mf_jinja_vars_new(void)
{
	struct mf_jinja_vars *v = calloc(1, sizeof *v);
	if (v)
		jj_arena_init(&v->arena, MF_JINJA_MAX_MEMORY);
	return v;
}

void mf_jinja_vars_free(struct mf_jinja_vars *v)
{
	if (!v)
		return;
	jj_arena_free(&v->arena);
	free(v->names);
	free(v->lens);
	free(v->vals);
	free(v);
}

/* Runs a setter's body with the vars arena's failure path: 0, or the status it failed with. */
#define VARS_TRY(vars, f, err)                                                                                    \
	struct mf_jinja_error err;                                                                                \
	struct jj_fail f = {.err = &err, .max_steps = UINT64_MAX};                                               \
	if (setjmp(f.jb))                                                                                         \
		return err.status;

static void vars_put(struct mf_jinja_vars *vars, struct jj_fail *f, const char *name, size_t n, struct jj_val v)
{
	for (size_t k = 0; k < vars->n; k++)
		if (vars->lens[k] == n && memcmp(vars->names[k], name, n) == 0) {
			vars->vals[k] = v;
			return;
		}
	if (vars->n == vars->cap) {
		size_t cap = vars->cap ? vars->cap * 2 : 16;
		const char **names = realloc(vars->names, cap * sizeof *names);
		if (names)
			vars->names = names;
		size_t *lens = realloc(vars->lens, cap * sizeof *lens);
		if (lens)
			vars->lens = lens;
		struct jj_val *vals = realloc(vars->vals, cap * sizeof *vals);
		if (vals)
			vars->vals = vals;
		if (!names || !lens || !vals)
			jj_fail(f, MF_JINJA_ENOMEM, "MemoryError", "out of memory");
		vars->cap = cap;
	}
	vars->names[vars->n] = jj_strdup(&vars->arena, f, name, n);
	vars->lens[vars->n] = n;
	vars->vals[vars->n] = v;
	vars->n++;
}

int mf_jinja_vars_set_json(struct mf_jinja_vars *vars, const char *name, const struct ob_json *j)
{
	if (!vars || !name)
		return MF_JINJA_EINVAL;
	VARS_TRY(vars, f, err);
	vars_put(vars, &f, name, strlen(name), j ? jj_from_json(&vars->arena, &f, j) : jj_none());
	return MF_JINJA_OK;
}

int mf_jinja_vars_set_object(struct mf_jinja_vars *vars, const struct ob_json *obj)
{
	if (!vars || !obj || obj->type != OB_JSON_OBJECT)
		return MF_JINJA_EINVAL;
	VARS_TRY(vars, f, err);
	OB_JSON_FOREACH_MEMBER(key, val, obj)
	vars_put(vars, &f, key->str, key->len, jj_from_json(&vars->arena, &f, val));
	return MF_JINJA_OK;
}

static int vars_set(struct mf_jinja_vars *vars, const char *name, struct jj_val v, const char *s, size_t len)
{
	if (!vars || !name)
		return MF_JINJA_EINVAL;
	VARS_TRY(vars, f, err);
	if (v.t == JJ_STR)
		v = jj_str(jj_strdup(&vars->arena, &f, s ? s : "", s ? len : 0), s ? len : 0);
	vars_put(vars, &f, name, strlen(name), v);
	return MF_JINJA_OK;
}

int mf_jinja_vars_set_string(struct mf_jinja_vars *vars, const char *name, const char *s, size_t len)
{
	return vars_set(vars, name, jj_str(NULL, 0), s, len);
}

int mf_jinja_vars_set_bool(struct mf_jinja_vars *vars, const char *name, bool b)
{
	return vars_set(vars, name, jj_bool(b), NULL, 0);
}

int mf_jinja_vars_set_int(struct mf_jinja_vars *vars, const char *name, int64_t i)
{
	return vars_set(vars, name, jj_int(i), NULL, 0);
}

int mf_jinja_vars_set_none(struct mf_jinja_vars *vars, const char *name)
{
	return vars_set(vars, name, jj_none(), NULL, 0);
}

int mf_jinja_vars_set_chat(struct mf_jinja_vars *vars, const struct mf_jinja_chat *chat)
{
	if (!vars || !chat)
		return MF_JINJA_EINVAL;
	if (chat->extra && chat->extra->type != OB_JSON_OBJECT)
		return MF_JINJA_EINVAL;
	int rc;
	if ((rc = mf_jinja_vars_set_json(vars, "messages", chat->messages)) ||
	    (rc = mf_jinja_vars_set_json(vars, "tools", chat->tools)) ||
	    (rc = mf_jinja_vars_set_json(vars, "documents", chat->documents)) ||
	    (rc = mf_jinja_vars_set_bool(vars, "add_generation_prompt", chat->add_generation_prompt)) ||
	    (rc = mf_jinja_vars_set_string(vars, "bos_token", chat->bos_token ? chat->bos_token : "",
					   chat->bos_token ? strlen(chat->bos_token) : 0)) ||
	    (rc = mf_jinja_vars_set_string(vars, "eos_token", chat->eos_token ? chat->eos_token : "",
					   chat->eos_token ? strlen(chat->eos_token) : 0)))
		return rc;
	if (chat->extra)
		return mf_jinja_vars_set_object(vars, chat->extra);
	return MF_JINJA_OK;
}

/* ------------------------------------------------------------------------------------------ render */

/* strftime_now's clock when the caller sets none: SOURCE_DATE_EPOCH (UTC) when set, else now (local). */
static void clock_now(int64_t *now, bool *local)
{
	const char *sde = getenv("SOURCE_DATE_EPOCH");
	if (sde && *sde) {
		char *end;
		long long v = strtoll(sde, &end, 10);
		if (*end == 0) {
			*now = v;
			*local = false;
			return;
		}
	}
	*now = (int64_t)time(NULL);
	*local = true;
}

/* The render proper into R->out; 0 or the status it failed with. */
static int render_into(struct jj_run *R, const struct mf_jinja_vars *vars)
{
	if (setjmp(R->f.jb))
		return R->f.err->status;
	R->stack_base = __builtin_frame_address(0);
	const struct mf_jinja *t = R->t;
	R->globals = jj_alloc(&R->ar, &R->f, (t->nsyms + 1) * sizeof *R->globals);
	for (size_t k = 0; k < t->nsyms; k++)
		R->globals[k].t = JJ_UNSET;
	for (size_t k = 0; vars && k < vars->n; k++) {
		int sym = jj_sym_find(t, vars->names[k], vars->lens[k]);
		if (sym >= 0)
			R->globals[sym] = vars->vals[k];
	}
	exec_body(R, t->root);
	buf_check(&R->f, R->out);
	return MF_JINJA_OK;
}

int mf_jinja_render(const struct mf_jinja *t, const struct mf_jinja_vars *vars, const struct mf_jinja_options *opt,
		    char **out, size_t *len, struct mf_jinja_error *err)
{
	struct mf_jinja_error scratch;
	if (!err)
		err = &scratch;
	err_clear(err);
	*out = NULL;
	*len = 0;
	if (!t)
		return err_set(err, MF_JINJA_EINVAL, "ValueError", "no template"), MF_JINJA_EINVAL;
	struct jj_run *R = calloc(1, sizeof *R);
	if (!R)
		return err_set(err, MF_JINJA_ENOMEM, "MemoryError", "out of memory"), MF_JINJA_ENOMEM;
	struct ob_buf result;
	R->t = t;
	R->max_output = opt && opt->max_output && opt->max_output < MF_JINJA_MAX_OUTPUT ? opt->max_output
											 : MF_JINJA_MAX_OUTPUT;
	R->f.max_steps = opt && opt->max_steps && opt->max_steps < MF_JINJA_MAX_STEPS ? opt->max_steps : MF_JINJA_MAX_STEPS;
	R->f.err = err;
	if (opt && opt->has_now) {
		R->now = opt->now;
		R->now_local = false;
	} else {
		clock_now(&R->now, &R->now_local);
	}
	jj_arena_init(&R->ar, MF_JINJA_MAX_MEMORY);
	ob_buf_init(&result, R->max_output);
	R->out = &result;
	int status = render_into(R, vars);
	for (struct jj_tmpbuf *tb = R->tmps; tb; tb = tb->next)
		ob_buf_free(&tb->b);
	jj_arena_free(&R->ar);
	free(R);
	if (status == MF_JINJA_OK) {
		*len = result.len;
		*out = result.p ? ob_buf_take(&result) : strdup("");
		if (!*out) {
			status = MF_JINJA_ENOMEM;
			err_set(err, status, "MemoryError", "out of memory");
			*len = 0;
		}
	}
	ob_buf_free(&result);
	return status;
}
