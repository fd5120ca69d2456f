/* runner/chatfmt/calls.c — reads the body of a tool call after a format's marker: JSON objects and arrays
 * ({"name", "arguments"} and its variants), <function=...> JSON, XML-like parameters (Qwen3-Coder, Seed-OSS,
 * MiniMax, GLM: a value that is valid JSON keeps its type, anything else is a string), separator forms
 * (DeepSeek, Kimi), Mistral's NAME[ARGS]{...}, <|python_tag|> code and Functionary's >>>NAME. A body that does
 * not read as a call fails, and the parser sends it as content; nothing here trusts the model's text.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "runner/chatfmt/internal.h"

size_t cf_jscan_feed(struct cf_jscan *js, const char *b, size_t n, size_t from)
{
	if (js->end)
		return js->end;
	if (!js->started) {
		size_t i = cf_skip_space(b, n, from);
		if (i == n)
			return 0;
		if (b[i] != '{' && b[i] != '[')
			return SIZE_MAX;
		js->started = true;
		js->pos = i;
	}
	for (size_t i = js->pos; i < n; i++) {
		char c = b[i];
		if (js->in_str) {
			if (js->esc)
				js->esc = false;
			else if (c == '\\')
				js->esc = true;
			else if (c == '"')
				js->in_str = false;
		} else if (c == '"') {
			js->in_str = true;
		} else if (c == '{' || c == '[') {
			js->depth++;
		} else if (c == '}' || c == ']') {
			if (--js->depth == 0) {
				js->pos = js->end = i + 1;
				return i + 1;
			}
		}
	}
	js->pos = n;
	return 0;
}

/* The extent of a complete container at s (after white space): the offset past it, or 0. */
static size_t json_span(const char *s, size_t n)
{
	struct cf_jscan js = {0};
	size_t e = cf_jscan_feed(&js, s, n, 0);
	return e == SIZE_MAX ? 0 : e;
}

static bool name_ok(const char *s, size_t n)
{
	if (n == 0 || n > CF_MAX_NAME)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] == 0 || s[i] == '\n' || s[i] == '\r')
			return false;
	return true;
}

static bool word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

int cf_add_call(struct rn_chatfmt *p, struct cf_out *out, const char *name, size_t name_len,
		const struct ob_json *args, const char *id, size_t id_len)
{
	if (!name_ok(name, name_len))
		return 0;
	struct ob_json_doc *inner = NULL;
	if (args && args->type == OB_JSON_STRING) {
		struct ob_json_error je;
		inner = ob_json_parse(args->str, args->len, &je);
		if (!inner)
			return 0;
		args = ob_json_root(inner);
	}
	if (args && args->type != OB_JSON_OBJECT && args->type != OB_JSON_NULL) {
		ob_json_free(inner);
		return 0;
	}
	struct ob_jw w;
	ob_jw_init(&w, 0, OB_JW_NO_HTML_ESCAPE);
	if (args && args->type == OB_JSON_OBJECT)
		ob_jw_value(&w, args, false);
	else
		ob_jw_raw(&w, "{}", 2);
	ob_json_free(inner);
	size_t alen;
	char *a = ob_jw_take(&w, &alen);
	char *nm = strndup(name, name_len);
	struct rn_tool_call *grown = realloc(*out->calls, (*out->n_calls + 1) * sizeof **out->calls);
	if (!a || !nm || !grown) {
		free(a);
		free(nm);
		if (grown)
			*out->calls = grown;
		p->failed = true;
		return -1;
	}
	*out->calls = grown;
	struct rn_tool_call *c = &grown[(*out->n_calls)++];
	memset(c, 0, sizeof *c);
	c->name = nm;
	c->arguments = a;
	c->index = p->n_calls++;
	if (id && id_len > 0 && id_len < sizeof c->id && !memchr(id, 0, id_len)) {
		memcpy(c->id, id, id_len);
		c->id[id_len] = 0;
	} else {
		rn_tool_call_id(c->id);
	}
	return 1;
}

/* Is s[0..n) (all of it) a proper prefix of lit, i.e. could lit still follow? */
static bool prefix_of(const char *s, size_t n, const char *lit)
{
	size_t k = strlen(lit);
	return n < k && memcmp(s, lit, n) == 0;
}

/* Takes back the calls added since `before` (a body that failed half-way). */
static void rollback(struct rn_chatfmt *p, struct cf_out *out, size_t before)
{
	while (*out->n_calls > before) {
		struct rn_tool_call *c = &(*out->calls)[--*out->n_calls];
		free(c->name);
		free(c->arguments);
		p->n_calls--;
	}
}

/* A call object: {name, arguments, id} under the keys k (or {"NAME": {args}} for a short form). 1, 0 or -1. */
static int add_object(struct rn_chatfmt *p, struct cf_out *out, const struct ob_json *o, const struct cf_keys *k)
{
	if (!o || o->type != OB_JSON_OBJECT)
		return 0;
	if (k->short_form) {
		if (o->count != 1)
			return 0;
		const struct ob_json *key = ob_json_first(o);
		return cf_add_call(p, out, key->str, key->len, key + 1, NULL, 0);
	}
	const struct ob_json *name = ob_json_get(o, k->name), *args = ob_json_get(o, k->args), *id = ob_json_get(o, k->id);
	if (!name || name->type != OB_JSON_STRING)
		return 0;
	if (id && id->type != OB_JSON_STRING)
		id = NULL;
	return cf_add_call(p, out, name->str, name->len, args, id ? id->str : NULL, id ? id->len : 0);
}

/* Parses s[0..n) (one JSON value, white space around allowed) and adds the call(s) in it: an object, or an
 * array of objects. 1 when all were added, 0 when it does not read as calls, -1 out of memory. */
static int add_json(struct rn_chatfmt *p, struct cf_out *out, const char *s, size_t n, const struct cf_keys *k)
{
	struct ob_json_error je;
	struct ob_json_doc *d = ob_json_parse(s, n, &je);
	if (!d)
		return 0;
	const struct ob_json *root = ob_json_root(d);
	int r = 1;
	if (root->type == OB_JSON_ARRAY) {
		OB_JSON_FOREACH(e, root)
		{
			if ((r = add_object(p, out, e, k)) != 1)
				break;
		}
	} else {
		r = add_object(p, out, root, k);
	}
	ob_json_free(d);
	return r;
}

/* Adds a call named name[0..nl) whose arguments are the JSON object in s[0..n). */
static int add_named(struct rn_chatfmt *p, struct cf_out *out, const char *name, size_t nl, const char *s, size_t n)
{
	struct ob_json_error je;
	struct ob_json_doc *d = ob_json_parse(s, n, &je);
	if (!d)
		return 0;
	const struct ob_json *root = ob_json_root(d);
	int r = root->type == OB_JSON_OBJECT ? cf_add_call(p, out, name, nl, root, NULL, 0) : 0;
	ob_json_free(d);
	return r;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Bodies closed by an end marker */

static int parse_func(struct rn_chatfmt *p, struct cf_out *out, const char *s, size_t n, const char *sep)
{
	const char *e = cf_find(s, n, sep);
	if (!e)
		return 0;
	size_t nl = (size_t)(e - s), a = nl + strlen(sep);
	return add_named(p, out, s, nl, s + a, n - a);
}

/* One XML-like parameter value: valid JSON (white space around it allowed) keeps its type, anything else is a
 * string, trimmed when the format says so. */
static void xml_value(struct ob_jw *w, const char *v, size_t n, bool trim)
{
	size_t i = cf_skip_space(v, n, 0), e = n;
	while (e > i && cf_is_space(v[e - 1]))
		e--;
	struct ob_json_error je;
	struct ob_json_doc *d = e > i ? ob_json_parse(v + i, e - i, &je) : NULL;
	if (d)
		ob_jw_value(w, ob_json_root(d), false);
	else if (trim)
		ob_jw_stringn(w, v + i, e - i);
	else
		ob_jw_stringn(w, v, n);
	ob_json_free(d);
}

static int add_xml_call(struct rn_chatfmt *p, struct cf_out *out, const char *name, size_t nl, struct ob_jw *w)
{
	ob_jw_obj_end(w);
	if (ob_jw_status(w))
		return -1;
	struct ob_json_error je;
	struct ob_json_doc *d = ob_json_parse(ob_jw_str(w), w->len, &je);
	if (!d)
		return 0;
	int r = cf_add_call(p, out, name, nl, ob_json_root(d), NULL, 0);
	ob_json_free(d);
	return r;
}

/* Parameters from s[*i..n) into w (an open object); stops at anything that is not a parameter. */
static bool xml_params(const char *s, size_t n, size_t *i, const struct cf_xml *x, struct ob_jw *w)
{
	for (;;) {
		size_t j = cf_skip_space(s, n, *i);
		if (!cf_starts(s + j, n - j, x->key_start))
			return true;
		j += strlen(x->key_start);
		const char *ke = cf_find(s + j, n - j, x->key_val_sep);
		if (!ke)
			return false;
		size_t klen = (size_t)(ke - (s + j));
		const char *key = s + j;
		j += klen + strlen(x->key_val_sep);
		if (x->key_val_sep2) {
			j = cf_skip_space(s, n, j);
			if (!cf_starts(s + j, n - j, x->key_val_sep2))
				return false;
			j += strlen(x->key_val_sep2);
		}
		const char *ve = cf_find(s + j, n - j, x->val_end);
		if (!ve)
			return false;
		ob_jw_keyn(w, key, klen);
		xml_value(w, s + j, (size_t)(ve - (s + j)), x->trim);
		*i = (size_t)(ve - s) + strlen(x->val_end);
	}
}

static int parse_xml(struct rn_chatfmt *p, struct cf_out *out, const char *s, size_t n, const struct cf_xml *x)
{
	struct ob_jw w;
	ob_jw_init(&w, 0, OB_JW_NO_HTML_ESCAPE);
	int r = 0, calls = 0;
	size_t i = 0;
	if (!x->tool_start) {
		const char *ke = cf_find(s, n, x->key_start);
		size_t e = ke ? (size_t)(ke - s) : n, b = cf_skip_space(s, e, 0);
		while (e > b && cf_is_space(s[e - 1]))
			e--;
		i = ke ? (size_t)(ke - s) : n;
		ob_jw_obj(&w);
		if (xml_params(s, n, &i, x, &w) && cf_skip_space(s, n, i) == n)
			r = add_xml_call(p, out, s + b, e - b, &w);
		ob_jw_free(&w);
		return r;
	}
	for (;;) {
		i = cf_skip_space(s, n, i);
		if (i == n) {
			r = calls > 0;
			break;
		}
		if (!cf_starts(s + i, n - i, x->tool_start))
			break;
		i += strlen(x->tool_start);
		const char *ne = cf_find(s + i, n - i, x->tool_sep);
		if (!ne)
			break;
		const char *name = s + i;
		size_t nl = (size_t)(ne - name);
		i += nl + strlen(x->tool_sep);
		size_t nb = cf_skip_space(name, nl, 0);
		name += nb;
		nl -= nb;
		while (nl && cf_is_space(name[nl - 1]))
			nl--;
		ob_jw_reset(&w);
		ob_jw_obj(&w);
		if (!xml_params(s, n, &i, x, &w))
			break;
		i = cf_skip_space(s, n, i);
		if (!cf_starts(s + i, n - i, x->tool_end))
			break;
		i += strlen(x->tool_end);
		if ((r = add_xml_call(p, out, name, nl, &w)) != 1)
			break;
		calls++;
		r = 0;
	}
	ob_jw_free(&w);
	return r;
}

/* "functions.get_weather:0" -> "get_weather" (only when both the prefix and the :N suffix are there) */
static void kimi_name(const char **name, size_t *nl)
{
	size_t k = *nl;
	while (k > 0 && (*name)[k - 1] >= '0' && (*name)[k - 1] <= '9')
		k--;
	if (*nl > 10 && memcmp(*name, "functions.", 10) == 0 && k > 10 && k < *nl && (*name)[k - 1] == ':') {
		*name += 10;
		*nl = k - 1 - 10;
	}
}

static int parse_sep(struct rn_chatfmt *p, struct cf_out *out, const char *s, size_t n, const struct cf_sep *f)
{
	size_t i = 0;
	int calls = 0;
	for (;;) {
		i = cf_skip_space(s, n, i);
		if (i == n)
			return calls > 0;
		if (cf_starts(s + i, n - i, f->call_begin))
			i += strlen(f->call_begin);
		else if (f->begin_required)
			return 0;
		if (f->name_prefix) {
			if (!cf_starts(s + i, n - i, f->name_prefix))
				return 0;
			i += strlen(f->name_prefix);
		}
		const char *ne = cf_find(s + i, n - i, f->name_end);
		if (!ne)
			return 0;
		const char *name = s + i;
		size_t nl = (size_t)(ne - name);
		i += nl + strlen(f->name_end);
		if (f->kimi_ids)
			kimi_name(&name, &nl);
		if (f->json_open) {
			if (!cf_starts(s + i, n - i, f->json_open))
				return 0;
			i += strlen(f->json_open);
		}
		i = cf_skip_space(s, n, i);
		size_t span = json_span(s + i, n - i);
		if (span == 0)
			return 0;
		int r = add_named(p, out, name, nl, s + i, span);
		if (r != 1)
			return r;
		calls++;
		i = cf_skip_space(s, n, i + span);
		if (f->json_close) {
			if (!cf_starts(s + i, n - i, f->json_close))
				return 0;
			i = cf_skip_space(s, n, i + strlen(f->json_close));
		}
		if (!cf_starts(s + i, n - i, f->call_end))
			return 0;
		i += strlen(f->call_end);
	}
}

/* Bodies that end with an end marker: waits for it, then reads what is between. */
static enum cf_step ended_body(struct rn_chatfmt *p, const char *b, size_t n, size_t mlen, size_t *used,
			       struct cf_out *out)
{
	const struct cf_marker *m = p->cur;
	/* what must come first (after white space): llama.cpp gives up on the marker at once otherwise */
	const char *expect = m->body == CF_JSON_TAGGED			    ? "{"
			     : m->body == CF_XML			    ? m->xml->tool_start
			     : m->body == CF_SEP_JSON && m->sep->begin_required ? m->sep->call_begin
									    : NULL;
	if (expect) {
		size_t i = cf_skip_space(b, n, mlen), k = strlen(expect);
		bool xml = m->body == CF_JSON_TAGGED && m->xml && (cf_starts(b + i, n - i, m->xml->tool_start) ||
								   prefix_of(b + i, n - i, m->xml->tool_start));
		if (i < n && !xml && memcmp(b + i, expect, n - i < k ? n - i : k) != 0)
			return CF_FAIL;
	}
	size_t el = strlen(m->end), from = p->end_scan > mlen ? p->end_scan : mlen;
	const char *e = cf_find(b + from, n - from, m->end);
	if (!e) {
		p->end_scan = n >= el ? n - el + 1 : mlen;
		if (p->end_scan < mlen)
			p->end_scan = mlen;
		return CF_MORE;
	}
	const char *s = b + mlen;
	size_t sn = (size_t)(e - s);
	int r;
	switch (m->body) {
	case CF_JSON_TAGGED:
		if (m->xml && cf_starts(s + cf_skip_space(s, sn, 0), sn - cf_skip_space(s, sn, 0), m->xml->tool_start))
			r = parse_xml(p, out, s, sn, m->xml); /* Qwen3.5 writes Qwen3-Coder calls in a Hermes template */
		else
			r = add_json(p, out, s, sn, m->keys);
		break;
	case CF_FUNC_EQ: r = parse_func(p, out, s, sn, ">"); break;
	case CF_FUNC_ATTR: r = parse_func(p, out, s, sn, "\">"); break;
	case CF_XML: r = parse_xml(p, out, s, sn, m->xml); break;
	case CF_SEP_JSON: r = parse_sep(p, out, s, sn, m->sep); break;
	default: r = 0; break;
	}
	if (r < 0)
		return CF_FAIL;
	if (r == 0)
		return CF_FAIL;
	*used = (size_t)(e - b) + el;
	return CF_DONE;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Bodies that end with their JSON */

/* Waits for the JSON container starting at b[from] (after white space). */
static enum cf_step json_end(struct rn_chatfmt *p, const char *b, size_t n, size_t from, size_t *end)
{
	if (p->js_from != from) {
		memset(&p->js, 0, sizeof p->js);
		p->js_from = from;
	}
	size_t e = cf_jscan_feed(&p->js, b, n, from);
	if (e == SIZE_MAX)
		return CF_FAIL;
	if (e == 0)
		return CF_MORE;
	*end = e;
	return CF_DONE;
}

static enum cf_step json_array(struct rn_chatfmt *p, const char *b, size_t n, size_t mlen, size_t *used,
			       struct cf_out *out)
{
	const struct cf_marker *m = p->cur;
	size_t i = cf_skip_space(b, n, mlen), e;
	if (i == n)
		return CF_MORE;
	if (b[i] != '[')
		return CF_FAIL;
	enum cf_step r = json_end(p, b, n, mlen, &e);
	if (r != CF_DONE)
		return r;
	size_t u = e;
	if (m->end) {
		size_t j = cf_skip_space(b, n, e), el = strlen(m->end);
		if (n - j < el)
			return memcmp(b + j, m->end, n - j) == 0 ? CF_MORE : CF_FAIL;
		if (memcmp(b + j, m->end, el) != 0)
			return CF_FAIL;
		u = j + el;
	}
	if (add_json(p, out, b + i, e - i, m->keys) != 1)
		return CF_FAIL;
	*used = u;
	return CF_DONE;
}

static bool mistral_name_char(char c)
{
	return word_char(c) || c == '-' || c == '.';
}

/* [TOOL_CALLS] then a JSON array, or NAME[ARGS]{...}, or NAME[CALL_ID]ID[ARGS]{...} (Mistral Small 3.2). */
static enum cf_step mistral(struct rn_chatfmt *p, const char *b, size_t n, size_t mlen, size_t *used,
			    struct cf_out *out)
{
	size_t i = cf_skip_space(b, n, mlen), j = i, e;
	if (i == n)
		return CF_MORE;
	if (b[i] == '[')
		return json_array(p, b, n, mlen, used, out);
	while (j < n && mistral_name_char(b[j]) && j - i <= CF_MAX_NAME)
		j++;
	if (j - i > CF_MAX_NAME)
		return CF_FAIL;
	if (j == n)
		return CF_MORE;
	size_t from, id = 0, idl = 0;
	if (cf_starts(b + j, n - j, "[ARGS]")) {
		from = j + 6;
	} else if (cf_starts(b + j, n - j, "[CALL_ID]")) {
		size_t k = id = j + 9;
		while (k < n && word_char(b[k]) && k - id <= 64)
			k++;
		if (k - id > 64)
			return CF_FAIL;
		if (k == n || prefix_of(b + k, n - k, "[ARGS]"))
			return CF_MORE;
		if (!cf_starts(b + k, n - k, "[ARGS]"))
			return CF_FAIL;
		idl = k - id;
		from = k + 6;
	} else {
		return prefix_of(b + j, n - j, "[ARGS]") || prefix_of(b + j, n - j, "[CALL_ID]") ? CF_MORE : CF_FAIL;
	}
	if (j == i)
		return CF_FAIL;
	enum cf_step r = json_end(p, b, n, from, &e);
	if (r != CF_DONE)
		return r;
	struct ob_json_error je;
	struct ob_json_doc *d = ob_json_parse(b + from, e - from, &je);
	int ok = d && ob_json_root(d)->type == OB_JSON_OBJECT
			 ? cf_add_call(p, out, b + i, j - i, ob_json_root(d), idl ? b + id : NULL, idl)
			 : 0;
	ob_json_free(d);
	if (ok != 1)
		return CF_FAIL;
	*used = e;
	return CF_DONE;
}

/* name.call(k=v, ...) of Llama's builtin tools, into a call; false when code[0..n) is not that. */
static int builtin_call(struct rn_chatfmt *p, struct cf_out *out, const char *s, size_t n)
{
	size_t i = cf_skip_space(s, n, 0), nb = i;
	while (i < n && word_char(s[i]))
		i++;
	size_t ne = i;
	i = cf_skip_space(s, n, i);
	if (ne == nb || !cf_starts(s + i, n - i, "."))
		return 0;
	i = cf_skip_space(s, n, i + 1);
	if (!cf_starts(s + i, n - i, "call("))
		return 0;
	i += 5;
	struct ob_jw w;
	ob_jw_init(&w, 0, OB_JW_NO_HTML_ESCAPE);
	ob_jw_obj(&w);
	int r = 0;
	for (;;) {
		i = cf_skip_space(s, n, i);
		size_t kb = i;
		while (i < n && word_char(s[i]))
			i++;
		size_t ke = i;
		if (ke == kb)
			break;
		i = cf_skip_space(s, n, i);
		if (!cf_starts(s + i, n - i, "="))
			goto out;
		i = cf_skip_space(s, n, i + 1);
		/* the value: a string, a container or a bare literal up to , or ) */
		size_t vb = i;
		if (i < n && s[i] == '"') {
			for (i++; i < n && s[i] != '"'; i++)
				if (s[i] == '\\')
					i++;
			if (i >= n)
				goto out;
			i++;
		} else if (i < n && (s[i] == '{' || s[i] == '[')) {
			size_t sp = json_span(s + i, n - i);
			if (!sp)
				goto out;
			i += sp;
		} else {
			while (i < n && s[i] != ',' && s[i] != ')')
				i++;
		}
		size_t ve = i;
		while (ve > vb && cf_is_space(s[ve - 1]))
			ve--;
		struct ob_json_error je;
		struct ob_json_doc *d = ob_json_parse(s + vb, ve - vb, &je);
		if (!d)
			goto out;
		ob_jw_keyn(&w, s + kb, ke - kb);
		ob_jw_value(&w, ob_json_root(d), false);
		ob_json_free(d);
		i = cf_skip_space(s, n, i);
		if (!cf_starts(s + i, n - i, ","))
			break;
		i++;
	}
	i = cf_skip_space(s, n, i);
	if (!cf_starts(s + i, n - i, ")") || cf_skip_space(s, n, i + 1) != n)
		goto out;
	r = add_xml_call(p, out, s + nb, ne - nb, &w);
out:
	ob_jw_free(&w);
	return r;
}

/* The code of a python call: {"code": code} */
static int code_call(struct rn_chatfmt *p, struct cf_out *out, const char *code, size_t n)
{
	struct ob_jw w;
	ob_jw_init(&w, 0, OB_JW_NO_HTML_ESCAPE);
	ob_jw_obj(&w);
	ob_jw_key(&w, "code");
	ob_jw_stringn(&w, code, n);
	int r = add_xml_call(p, out, "python", 6, &w);
	ob_jw_free(&w);
	return r;
}

/* The JSON container at the start of the output: CF_DONE with the parsed *doc (free it) ending at *end. */
static enum cf_step start_doc(struct rn_chatfmt *p, const char *b, size_t n, size_t *end, struct ob_json_doc **doc)
{
	enum cf_step r = json_end(p, b, n, 0, end);
	if (r != CF_DONE)
		return r;
	struct ob_json_error je;
	*doc = ob_json_parse(b, *end, &je);
	return *doc ? CF_DONE : CF_FAIL;
}

static enum cf_step generic(struct rn_chatfmt *p, const char *b, size_t n, size_t *used, struct cf_out *out)
{
	size_t e;
	struct ob_json_doc *d;
	enum cf_step r = start_doc(p, b, n, &e, &d);
	if (r != CF_DONE)
		return r;
	const struct ob_json *root = ob_json_root(d), *v;
	int ok = 0;
	if (root->type != OB_JSON_OBJECT) {
		ok = 0;
	} else if ((v = ob_json_get(root, "tool_calls")) && v->type == OB_JSON_ARRAY) {
		ok = 1;
		OB_JSON_FOREACH(c, v)
		{
			if ((ok = add_object(p, out, c, &(struct cf_keys){"name", "arguments", "id", false})) != 1)
				break;
		}
	} else if ((v = ob_json_get(root, "tool_call"))) {
		ok = add_object(p, out, v, &(struct cf_keys){"name", "arguments", "id", false});
	} else if ((v = ob_json_get(root, "response"))) {
		ok = 1;
		if (v->type == OB_JSON_STRING) {
			cf_content(p, out, v->str, v->len);
		} else {
			struct ob_jw w;
			ob_jw_init(&w, 0, OB_JW_NO_HTML_ESCAPE);
			ob_jw_value(&w, v, false);
			const char *t = ob_jw_str(&w);
			if (t)
				cf_content(p, out, t, w.len);
			ob_jw_free(&w);
		}
	}
	ob_json_free(d);
	if (ok != 1)
		return CF_FAIL;
	*used = e;
	return CF_DONE;
}

static enum cf_step llama_start(struct rn_chatfmt *p, const char *b, size_t n, size_t *used, struct cf_out *out)
{
	size_t e;
	struct ob_json_doc *d;
	enum cf_step r = start_doc(p, b, n, &e, &d);
	if (r != CF_DONE)
		return r;
	const struct ob_json *o = ob_json_root(d);
	const struct ob_json *type = ob_json_get(o, "type"), *name = ob_json_get(o, "name"),
			     *params = ob_json_get(o, "parameters");
	int ok = 0;
	if (o->type == OB_JSON_OBJECT && (!type || ob_json_str_eq(type, "function")) && name &&
	    name->type == OB_JSON_STRING && params && params->type == OB_JSON_OBJECT)
		ok = cf_add_call(p, out, name->str, name->len, params, NULL, 0);
	ob_json_free(d);
	if (ok != 1)
		return CF_FAIL;
	*used = e;
	return CF_DONE;
}

/* >>>NAME\n{...}, >>>all\n (content follows), >>>python\ncode; at the start without the >>>. */
static enum cf_step functionary(struct rn_chatfmt *p, const char *b, size_t n, size_t mlen, bool final,
				size_t *used, struct cf_out *out)
{
	size_t i = mlen;
	while (i < n && word_char(b[i]))
		i++;
	if (i - mlen > 64)
		return CF_FAIL;
	if (i == n)
		return CF_MORE;
	if (b[i] != '\n' || i == mlen)
		return CF_FAIL;
	const char *name = b + mlen;
	size_t nl = i - mlen, k = i + 1;
	if (nl == 3 && memcmp(name, "all", 3) == 0) {
		*used = k;
		return CF_DONE;
	}
	if (nl == 6 && memcmp(name, "python", 6) == 0 && (k == n || b[k] != '{')) {
		if (!final)
			return CF_MORE;
		if (code_call(p, out, b + k, n - k) != 1)
			return CF_FAIL;
		*used = n;
		return CF_DONE;
	}
	if (k < n && b[k] != '{')
		return CF_FAIL;
	size_t e;
	enum cf_step r = json_end(p, b, n, k, &e);
	if (r != CF_DONE)
		return r;
	if (add_named(p, out, name, nl, b + k, e - k) != 1)
		return CF_FAIL;
	*used = e;
	return CF_DONE;
}

/* The end of the output inside a tagged JSON call whose closing tag never came (the model stopped right after
 * the JSON, as qwen2.5 does when the reply was prefilled with "<tool_call>"): the call when the JSON is whole
 * and only white space follows it, as Ollama's tool parser takes it; else CF_FAIL (the marker is text). */
static enum cf_step unclosed_json(struct rn_chatfmt *p, const char *b, size_t n, size_t mlen, size_t *used,
				  struct cf_out *out)
{
	size_t from = cf_skip_space(b, n, mlen), e;
	if (from >= n || b[from] != '{' || json_end(p, b, n, from, &e) != CF_DONE || cf_skip_space(b, n, e) != n)
		return CF_FAIL;
	if (add_json(p, out, b + from, e - from, p->cur->keys) != 1)
		return CF_FAIL;
	*used = n;
	return CF_DONE;
}

enum cf_step cf_body_step(struct rn_chatfmt *p, const char *b, size_t n, size_t mlen, bool final, size_t *used,
			  struct cf_out *out)
{
	const struct cf_marker *m = p->cur;
	size_t before = *out->n_calls, e;
	enum cf_step r = CF_FAIL;
	switch (m->body) {
	case CF_DROP:
		*used = mlen;
		return CF_DONE;
	case CF_JSON_TAGGED:
	case CF_FUNC_EQ:
	case CF_FUNC_ATTR:
	case CF_XML:
	case CF_SEP_JSON:
		r = ended_body(p, b, n, mlen, used, out);
		if (r == CF_MORE && final && m->body == CF_JSON_TAGGED)
			r = unclosed_json(p, b, n, mlen, used, out);
		break;
	case CF_JSON_BARE:
		r = json_end(p, b, n, 0, &e);
		if (r == CF_DONE) {
			r = add_json(p, out, b, e, m->keys) == 1 ? CF_DONE : CF_FAIL;
			*used = e;
		}
		break;
	case CF_JSON_ARRAY: r = json_array(p, b, n, mlen, used, out); break;
	case CF_MISTRAL: r = mistral(p, b, n, mlen, used, out); break;
	case CF_PYTHON_CODE:
	case CF_PYTHON_BUILTIN:
		if (!final)
			return CF_MORE;
		if (m->body == CF_PYTHON_BUILTIN && builtin_call(p, out, b + mlen, n - mlen) == 1)
			r = CF_DONE;
		else
			r = code_call(p, out, b + mlen, n - mlen) == 1 ? CF_DONE : CF_FAIL;
		*used = n;
		break;
	case CF_LLAMA_START: r = llama_start(p, b, n, used, out); break;
	case CF_GENERIC_START: r = generic(p, b, n, used, out); break;
	case CF_FUNCTIONARY: r = functionary(p, b, n, mlen, final, used, out); break;
	}
	if (r == CF_FAIL)
		rollback(p, out, before);
	return r;
}
