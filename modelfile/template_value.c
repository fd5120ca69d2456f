/* modelfile/template_value.c — the Go values Ollama hands to templates, and how Go prints them.
 *
 * Each value carries its Go type (templateMessage, templateTool, api.ToolProperty, map[string]any …) so
 * that printing follows fmt's %v rules and the types' String() methods, JSON follows encoding/json with
 * the types' struct tags, and errors name the type as Go does. Builders turn a parsed request's JSON
 * (tools, tool-call arguments) into these values with Go's decoding rules. Pointers print as a fixed
 * placeholder address: Go prints a real (unpredictable) address there.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/gofmt.h"
#include "base/json.h"
#include "modelfile/template_internal.h"

#define FAKE_POINTER "0xc000010000"

/* ------------------------------------------------------------------------------------------ types */

static const struct tv_field_desc message_fields[] = {
	{"Role", "Role", false, TT_STRING},
	{"Content", "Content", false, TT_STRING},
	{"Thinking", "Thinking", false, TT_STRING},
	{"Images", "Images", false, TT_IMAGES},
	{"ToolCalls", "ToolCalls", false, TT_TOOLCALLS},
	{"ToolName", "ToolName", false, TT_STRING},
	{"ToolCallID", "ToolCallID", false, TT_STRING},
};

static const struct tv_field_desc toolcall_fields[] = {
	{"ID", "ID", false, TT_STRING},
	{"Function", "Function", false, TT_TOOLCALL_FUNC},
};

static const struct tv_field_desc toolcall_func_fields[] = {
	{"Index", "Index", false, TT_INT},
	{"Name", "Name", false, TT_STRING},
	{"Arguments", "Arguments", false, TT_ARGS},
};

static const struct tv_field_desc tool_fields[] = {
	{"Type", "type", false, TT_STRING},
	{"Items", "items", true, TT_NONE},
	{"Function", "function", false, TT_TOOL_FUNC},
};

static const struct tv_field_desc tool_func_fields[] = {
	{"Name", "name", false, TT_STRING},
	{"Description", "description", false, TT_STRING},
	{"Parameters", "parameters", false, TT_TOOL_PARAMS},
};

static const struct tv_field_desc tool_params_fields[] = {
	{"Type", "type", false, TT_STRING},
	{"Defs", "$defs", true, TT_NONE},
	{"Items", "items", true, TT_NONE},
	{"Required", "required", true, TT_STRING_SLICE},
	{"Properties", "properties", false, TT_PROPS},
};

static const struct tv_field_desc prop_fields[] = {
	{"AnyOf", "anyOf", true, TT_PROP_SLICE},
	{"Type", "type", true, TT_PROPTYPE},
	{"Items", "items", true, TT_NONE},
	{"Description", "description", true, TT_STRING},
	{"Enum", "enum", true, TT_ANY_SLICE},
	{"Properties", "properties", true, TT_PROPMAP},
	{"Required", "required", true, TT_STRING_SLICE},
};

#define FIELDS(f) f, sizeof f / sizeof f[0]

static const struct tv_type_desc tv_types[TT__COUNT] = {
	[TT_NONE] = {"interface {}", TV_NIL, 0, false, false, false, NULL, 0},
	[TT_BOOL] = {"bool", TV_BOOL, 0, false, false, false, NULL, 0},
	[TT_INT] = {"int", TV_INT, 0, false, false, false, NULL, 0},
	[TT_UINT8] = {"uint8", TV_UINT8, 0, false, false, false, NULL, 0},
	[TT_FLOAT64] = {"float64", TV_FLOAT, 0, false, false, false, NULL, 0},
	[TT_STRING] = {"string", TV_STRING, 0, false, false, false, NULL, 0},
	[TT_ANY_SLICE] = {"[]interface {}", TV_SLICE, TT_NONE, false, false, false, NULL, 0},
	[TT_ANY_MAP] = {"map[string]interface {}", TV_MAP, TT_NONE, false, false, false, NULL, 0},
	[TT_STRING_SLICE] = {"[]string", TV_SLICE, TT_STRING, false, false, false, NULL, 0},
	[TT_MESSAGES] = {"[]*template.templateMessage", TV_SLICE, TT_MESSAGE, false, false, false, NULL, 0},
	[TT_MESSAGE] = {"*template.templateMessage", TV_STRUCT, 0, false, true, false, FIELDS(message_fields)},
	[TT_IMAGES] = {"[]api.ImageData", TV_SLICE, TT_IMAGE, false, false, false, NULL, 0},
	[TT_IMAGE] = {"api.ImageData", TV_BYTES, TT_UINT8, false, false, false, NULL, 0},
	[TT_TOOLCALLS] = {"[]template.templateToolCall", TV_SLICE, TT_TOOLCALL, false, false, false, NULL, 0},
	[TT_TOOLCALL] = {"template.templateToolCall", TV_STRUCT, 0, false, false, false, FIELDS(toolcall_fields)},
	[TT_TOOLCALL_FUNC] = {"template.templateToolCallFunction", TV_STRUCT, 0, false, false, false,
			      FIELDS(toolcall_func_fields)},
	[TT_ARGS] = {"template.templateArgs", TV_MAP, TT_NONE, true, false, false, NULL, 0},
	[TT_TOOLS] = {"template.templateTools", TV_SLICE, TT_TOOL, true, false, false, NULL, 0},
	[TT_TOOL] = {"template.templateTool", TV_STRUCT, 0, true, false, false, FIELDS(tool_fields)},
	[TT_TOOL_FUNC] = {"template.templateToolFunction", TV_STRUCT, 0, true, false, false, FIELDS(tool_func_fields)},
	[TT_TOOL_PARAMS] = {"template.templateToolFunctionParameters", TV_STRUCT, 0, true, false, false,
			    FIELDS(tool_params_fields)},
	[TT_PROPS] = {"template.templateProperties", TV_MAP, TT_PROP, true, false, false, NULL, 0},
	[TT_PROP] = {"api.ToolProperty", TV_STRUCT, 0, false, false, false, FIELDS(prop_fields)},
	[TT_PROP_SLICE] = {"[]api.ToolProperty", TV_SLICE, TT_PROP, false, false, false, NULL, 0},
	[TT_PROPTYPE] = {"api.PropertyType", TV_SLICE, TT_STRING, true, false, false, NULL, 0},
	[TT_PROPMAP] = {"*api.ToolPropertiesMap", TV_MAP, TT_PROP, false, true, true, NULL, 0},
	[TT_PROPMAP_PLAIN] = {"map[string]api.ToolProperty", TV_MAP, TT_PROP, false, false, false, NULL, 0},
	[TT_DATA] = {"map[string]interface {}", TV_MAP, TT_NONE, false, false, false, NULL, 0},
};

struct tv tv_invalid(void)
{
	struct tv v;
	memset(&v, 0, sizeof v);
	return v;
}

struct tv tv_nil(void)
{
	struct tv v = tv_invalid();
	v.kind = TV_NIL;
	v.iface = 1;
	return v;
}

struct tv tv_bool(bool b)
{
	struct tv v = tv_invalid();
	v.kind = TV_BOOL;
	v.type = TT_BOOL;
	v.u.b = b;
	return v;
}

struct tv tv_int(int64_t i)
{
	struct tv v = tv_invalid();
	v.kind = TV_INT;
	v.type = TT_INT;
	v.u.i = i;
	return v;
}

struct tv tv_float(double f)
{
	struct tv v = tv_invalid();
	v.kind = TV_FLOAT;
	v.type = TT_FLOAT64;
	v.u.f = f;
	return v;
}

struct tv tv_string(const char *p, size_t n)
{
	struct tv v = tv_invalid();
	v.kind = TV_STRING;
	v.type = TT_STRING;
	v.u.s.p = p ? p : "";
	v.u.s.n = n;
	return v;
}

bool tv_zero(struct tpl_arena *a, uint8_t type, struct tv *out)
{
	*out = tv_invalid();
	if (type == TT_NONE) {
		*out = tv_nil();
		return true;
	}
	const struct tv_type_desc *d = &tv_types[type];
	out->kind = d->kind;
	out->type = type;
	switch (d->kind) {
	case TV_STRING:
		out->u.s.p = "";
		break;
	case TV_SLICE:
	case TV_MAP:
	case TV_BYTES:
		out->isnil = 1;
		break;
	case TV_STRUCT:
		if (d->is_ptr) {
			out->isnil = 1;
			break;
		}
		out->u.fields = tpl_arena_alloc(a, d->nfields * sizeof *out->u.fields);
		if (!out->u.fields)
			return false;
		for (size_t i = 0; i < d->nfields; i++)
			if (!tv_zero(a, d->fields[i].type, &out->u.fields[i]))
				return false;
		for (size_t i = 0; i < d->nfields; i++)
			if (d->fields[i].type == TT_NONE)
				out->u.fields[i].iface = 1;
		break;
	default:
		break;
	}
	return true;
}

int tv_field_index(uint8_t type, const char *name, size_t n)
{
	const struct tv_type_desc *d = &tv_types[type];
	for (size_t i = 0; i < d->nfields; i++)
		if (strlen(d->fields[i].name) == n && memcmp(d->fields[i].name, name, n) == 0)
			return (int)i;
	return -1;
}

const char *tv_type_name(const struct tv *v)
{
	if (v->kind == TV_INVALID)
		return "<nil>";
	if (v->iface)
		return "interface {}";
	return tv_types[v->type].go_name;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct tv_entry *x = a, *y = b;
	size_t n = x->key_n < y->key_n ? x->key_n : y->key_n;
	int c = memcmp(x->key, y->key, n);
	if (c)
		return c;
	return x->key_n < y->key_n ? -1 : x->key_n > y->key_n;
}

void tv_sort_entries(struct tv_entry *e, size_t n)
{
	if (n > 1)
		qsort(e, n, sizeof *e, cmp_entry);
}

bool tv_truth(const struct tv *v)
{
	switch (v->kind) {
	case TV_INVALID:
	case TV_NIL:
		return false;
	case TV_BOOL:
		return v->u.b;
	case TV_INT:
		return v->u.i != 0;
	case TV_UINT8:
		return v->u.i != 0;
	case TV_FLOAT:
		return v->u.f != 0;
	case TV_STRING:
	case TV_BYTES:
		return v->u.s.n > 0;
	case TV_SLICE:
		return v->u.seq.n > 0;
	case TV_MAP:
		if (tv_types[v->type].is_ptr)
			return !v->isnil;
		return v->u.map.n > 0;
	case TV_STRUCT:
		if (tv_types[v->type].is_ptr)
			return !v->isnil;
		return true;
	}
	return false;
}

/* ------------------------------------------------------------------------------------------ fmt */

/* fmt's %v for a float64: strconv 'g' with the shortest digits (base/gofmt.c), e.g. 1e+06, 123456,
 * 1.234567e+06, 1e-05. */
static void fmt_float_g(struct ob_buf *b, double f)
{
	char num[32];
	ob_go_format_float(num, f);
	ob_buf_puts(b, num);
}

static void json_to_buf(struct ob_buf *b, const struct tv *v, const char *nil_text)
{
	struct ob_jw w;
	ob_jw_init(&w, MF_TPL_MAX_OUTPUT, 0);
	tv_json(&w, v);
	const char *s = ob_jw_str(&w);
	if (s) {
		ob_buf_puts(b, s);
	} else if (!b->failed) { /* the writer's failure becomes the buffer's (tpl_buf_error) */
		b->failed = true;
		b->over = ob_jw_status(&w) != OB_JW_NOMEM;
	}
	(void)nil_text;
	ob_jw_free(&w);
}

bool tv_stringer(struct ob_buf *b, const struct tv *v)
{
	switch (v->type) {
	case TT_ARGS:
	case TT_PROPS:
		/* String() on a nil map gives "{}" */
		if (v->isnil)
			return ob_buf_puts(b, "{}");
		json_to_buf(b, v, NULL);
		return !b->failed;
	case TT_TOOLS:
	case TT_TOOL:
	case TT_TOOL_FUNC:
	case TT_TOOL_PARAMS:
		json_to_buf(b, v, NULL);
		return !b->failed;
	case TT_PROPTYPE:
		/* PropertyType.String(): "" / the one type / fmt %v of the []string */
		if (v->u.seq.n == 0)
			return true;
		if (v->u.seq.n == 1)
			return ob_buf_append(b, v->u.seq.v[0].u.s.p, v->u.seq.v[0].u.s.n);
		ob_buf_putc(b, '[');
		for (size_t i = 0; i < v->u.seq.n; i++) {
			if (i)
				ob_buf_putc(b, ' ');
			ob_buf_append(b, v->u.seq.v[i].u.s.p, v->u.seq.v[i].u.s.n);
		}
		return ob_buf_putc(b, ']');
	}
	return false;
}

bool tv_fmt_value(struct ob_buf *b, const struct tv *v, int depth)
{
	if (depth > 64)
		return ob_buf_puts(b, "...");
	if (v->kind != TV_INVALID && v->kind != TV_NIL && tv_types[v->type].stringer)
		return tv_stringer(b, v);
	switch (v->kind) {
	case TV_INVALID:
		return ob_buf_puts(b, depth == 0 ? "<nil>" : "<invalid reflect.Value>");
	case TV_NIL:
		return ob_buf_puts(b, "<nil>");
	case TV_BOOL:
		return ob_buf_puts(b, v->u.b ? "true" : "false");
	case TV_INT:
	case TV_UINT8:
		return ob_buf_printf(b, "%lld", (long long)v->u.i);
	case TV_FLOAT:
		fmt_float_g(b, v->u.f);
		return !b->failed;
	case TV_STRING:
		return ob_buf_append(b, v->u.s.p, v->u.s.n);
	case TV_BYTES:
		ob_buf_putc(b, '[');
		for (size_t i = 0; i < v->u.s.n; i++)
			ob_buf_printf(b, i ? " %u" : "%u", (unsigned char)v->u.s.p[i]);
		return ob_buf_putc(b, ']');
	case TV_SLICE:
		ob_buf_putc(b, '[');
		for (size_t i = 0; i < v->u.seq.n; i++) {
			if (i)
				ob_buf_putc(b, ' ');
			tv_fmt_value(b, &v->u.seq.v[i], depth + 1);
		}
		return ob_buf_putc(b, ']');
	case TV_MAP:
		if (tv_types[v->type].is_ptr) {
			/* *api.ToolPropertiesMap: a struct holding a pointer */
			if (v->isnil)
				return ob_buf_puts(b, "<nil>");
			return ob_buf_puts(b, depth == 0 ? "&{" FAKE_POINTER "}" : FAKE_POINTER);
		}
		ob_buf_puts(b, "map[");
		for (size_t i = 0; i < v->u.map.n; i++) {
			if (i)
				ob_buf_putc(b, ' ');
			ob_buf_append(b, v->u.map.e[i].key, v->u.map.e[i].key_n);
			ob_buf_putc(b, ':');
			tv_fmt_value(b, &v->u.map.e[i].val, depth + 1);
		}
		return ob_buf_putc(b, ']');
	case TV_STRUCT: {
		const struct tv_type_desc *d = &tv_types[v->type];
		if (d->is_ptr) {
			if (v->isnil)
				return ob_buf_puts(b, "<nil>");
			if (depth > 0)
				return ob_buf_puts(b, FAKE_POINTER);
			ob_buf_putc(b, '&');
		}
		ob_buf_putc(b, '{');
		for (size_t i = 0; i < d->nfields; i++) {
			if (i)
				ob_buf_putc(b, ' ');
			tv_fmt_value(b, &v->u.fields[i], depth + 1);
		}
		return ob_buf_putc(b, '}');
	}
	}
	return false;
}

bool tv_fmt_deref(struct ob_buf *b, const struct tv *v)
{
	if (v->kind == TV_STRUCT && tv_types[v->type].is_ptr && !v->isnil) {
		const struct tv_type_desc *d = &tv_types[v->type];
		ob_buf_putc(b, '{');
		for (size_t i = 0; i < d->nfields; i++) {
			if (i)
				ob_buf_putc(b, ' ');
			tv_fmt_value(b, &v->u.fields[i], 1);
		}
		return ob_buf_putc(b, '}');
	}
	if (v->kind == TV_MAP && tv_types[v->type].is_ptr && !v->isnil)
		return ob_buf_puts(b, "{" FAKE_POINTER "}");
	return tv_fmt_value(b, v, 0);
}

/* ------------------------------------------------------------------------------------------ JSON */

static bool json_empty(const struct tv *v)
{
	switch (v->kind) {
	case TV_INVALID:
	case TV_NIL:
		return true;
	case TV_BOOL:
		return !v->u.b;
	case TV_INT:
	case TV_UINT8:
		return v->u.i == 0;
	case TV_FLOAT:
		return v->u.f == 0;
	case TV_STRING:
	case TV_BYTES:
		return v->u.s.n == 0;
	case TV_SLICE:
		return v->u.seq.n == 0;
	case TV_MAP:
		if (tv_types[v->type].is_ptr)
			return v->isnil;
		return v->u.map.n == 0;
	case TV_STRUCT:
		return tv_types[v->type].is_ptr && v->isnil;
	}
	return false;
}

/* []byte: Go marshals it as a base64 string */
static void base64_json(struct ob_jw *w, const unsigned char *p, size_t n)
{
	size_t len;
	char *s = ob_base64_encode(p, n, &len);
	if (!s) {
		if (!w->status)
			w->status = OB_JW_NOMEM;
		return;
	}
	ob_jw_stringn(w, s, len);
	free(s);
}

void tv_json(struct ob_jw *w, const struct tv *v)
{
	switch (v->kind) {
	case TV_INVALID:
	case TV_NIL:
		ob_jw_null(w);
		return;
	case TV_BOOL:
		ob_jw_bool(w, v->u.b);
		return;
	case TV_INT:
	case TV_UINT8:
		ob_jw_int(w, v->u.i);
		return;
	case TV_FLOAT:
		ob_jw_float64(w, v->u.f);
		return;
	case TV_STRING:
		ob_jw_stringn(w, v->u.s.p, v->u.s.n);
		return;
	case TV_BYTES:
		if (v->isnil)
			ob_jw_null(w);
		else
			base64_json(w, (const unsigned char *)v->u.s.p, v->u.s.n);
		return;
	case TV_SLICE:
		if (v->type == TT_PROPTYPE && v->u.seq.n == 1) {
			/* PropertyType.MarshalJSON: a single type as a plain string */
			tv_json(w, &v->u.seq.v[0]);
			return;
		}
		if (v->isnil) {
			ob_jw_null(w);
			return;
		}
		ob_jw_arr(w);
		for (size_t i = 0; i < v->u.seq.n; i++)
			tv_json(w, &v->u.seq.v[i]);
		ob_jw_arr_end(w);
		return;
	case TV_MAP:
		if (v->isnil) {
			ob_jw_null(w);
			return;
		}
		ob_jw_obj(w);
		for (size_t i = 0; i < v->u.map.n; i++) {
			ob_jw_keyn(w, v->u.map.e[i].key, v->u.map.e[i].key_n);
			tv_json(w, &v->u.map.e[i].val);
		}
		ob_jw_obj_end(w);
		return;
	case TV_STRUCT: {
		const struct tv_type_desc *d = &tv_types[v->type];
		if (d->is_ptr && v->isnil) {
			ob_jw_null(w);
			return;
		}
		ob_jw_obj(w);
		for (size_t i = 0; i < d->nfields; i++) {
			if (d->fields[i].omitempty && json_empty(&v->u.fields[i]))
				continue;
			ob_jw_key(w, d->fields[i].json);
			tv_json(w, &v->u.fields[i]);
		}
		ob_jw_obj_end(w);
		return;
	}
	}
}

/* ------------------------------------------------------------------------------------------ TypeScript */

static const char *ts_type(const char *t, size_t n)
{
	static const struct {
		const char *json, *ts;
	} map[] = {{"string", "string"}, {"number", "number"},   {"integer", "number"}, {"boolean", "boolean"},
		   {"array", "any[]"},   {"object", "Record<string, any>"}, {"null", "null"}};
	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
		if (strlen(map[i].json) == n && memcmp(map[i].json, t, n) == 0)
			return map[i].ts;
	return "any";
}

bool tv_prop_typescript(struct ob_buf *b, const struct tv *prop)
{
	const struct tv *any_of = &prop->u.fields[0];
	const struct tv *type = &prop->u.fields[1];
	if (any_of->u.seq.n > 0) {
		for (size_t i = 0; i < any_of->u.seq.n; i++) {
			if (i)
				ob_buf_puts(b, " | ");
			tv_prop_typescript(b, &any_of->u.seq.v[i]);
		}
		return !b->failed;
	}
	if (type->u.seq.n == 0)
		return ob_buf_puts(b, "any");
	for (size_t i = 0; i < type->u.seq.n; i++) {
		if (i)
			ob_buf_puts(b, " | ");
		ob_buf_puts(b, ts_type(type->u.seq.v[i].u.s.p, type->u.seq.v[i].u.s.n));
	}
	return !b->failed;
}

/* ------------------------------------------------------------------------------------------ builders */

/* Go's decoding of JSON into interface{}: objects → map[string]any (a later duplicate key wins), arrays →
 * []any, numbers → float64, null → nil. */
int tv_from_json_any(struct tpl_arena *a, const struct ob_json *j, struct tv *out)
{
	*out = tv_invalid();
	switch (j->type) {
	case OB_JSON_NULL:
		*out = tv_nil();
		return 0;
	case OB_JSON_BOOL:
		*out = tv_bool(j->boolean);
		break;
	case OB_JSON_NUMBER:
		if (isinf(j->number))
			return MF_TPL_ERR_DATA;
		*out = tv_float(j->number);
		break;
	case OB_JSON_STRING:
		*out = tv_string(j->str, j->len);
		break;
	case OB_JSON_ARRAY: {
		out->kind = TV_SLICE;
		out->type = TT_ANY_SLICE;
		out->u.seq.n = j->count;
		out->u.seq.v = tpl_arena_alloc(a, (j->count ? j->count : 1) * sizeof(struct tv));
		if (!out->u.seq.v)
			return MF_TPL_ERR_NOMEM;
		size_t i = 0;
		OB_JSON_FOREACH(e, j)
		{
			int rc = tv_from_json_any(a, e, &out->u.seq.v[i]);
			if (rc)
				return rc;
			out->u.seq.v[i].iface = 1;
			i++;
		}
		break;
	}
	case OB_JSON_OBJECT: {
		out->kind = TV_MAP;
		out->type = TT_ANY_MAP;
		struct tv_entry *e = tpl_arena_alloc(a, (j->count ? j->count : 1) * sizeof *e);
		if (!e)
			return MF_TPL_ERR_NOMEM;
		size_t n = 0;
		OB_JSON_FOREACH_MEMBER(k, val, j)
		{
			size_t at = n;
			for (size_t q = 0; q < n; q++)
				if (e[q].key_n == k->len && memcmp(e[q].key, k->str, k->len) == 0) {
					at = q;
					break;
				}
			e[at].key = k->str;
			e[at].key_n = k->len;
			int rc = tv_from_json_any(a, val, &e[at].val);
			if (rc)
				return rc;
			e[at].val.iface = 1;
			if (at == n)
				n++;
		}
		tv_sort_entries(e, n);
		out->u.map.e = e;
		out->u.map.n = n;
		break;
	}
	}
	return 0;
}

struct dctx {
	struct tpl_arena *a;
	struct mf_tpl_error *err;
	char path[160]; /* Go's error field path, e.g. "Tool.function.parameters" */
};

static int data_err(struct dctx *d, const struct ob_json *j, const char *gotype)
{
	if (d->err) {
		d->err->code = MF_TPL_ERR_DATA;
		d->err->line = d->err->col = 0;
		snprintf(d->err->msg, sizeof d->err->msg, "json: cannot unmarshal %s into Go struct field %s of type %s",
			 ob_json_type_name(j), d->path, gotype);
	}
	return MF_TPL_ERR_DATA;
}

static int nomem(struct dctx *d)
{
	if (d->err) {
		d->err->code = MF_TPL_ERR_NOMEM;
		snprintf(d->err->msg, sizeof d->err->msg, "out of memory");
	}
	return MF_TPL_ERR_NOMEM;
}

/* Go names a decoding error's location as "<innermost struct>.<JSON path from the request root>". */
static void path_set(struct dctx *d, const char *strct, const char *field)
{
	snprintf(d->path, sizeof d->path, "%s.tools.%s", strct, field);
}

static int dec_string(struct dctx *d, const struct ob_json *j, struct tv *out)
{
	if (j->type == OB_JSON_NULL)
		return 0; /* Go leaves the field alone */
	if (j->type != OB_JSON_STRING)
		return data_err(d, j, "string");
	*out = tv_string(j->str, j->len);
	return 0;
}

static int dec_any(struct dctx *d, const struct ob_json *j, struct tv *out)
{
	int rc = tv_from_json_any(d->a, j, out);
	if (rc == MF_TPL_ERR_NOMEM)
		return nomem(d);
	if (rc)
		return data_err(d, j, "float64");
	out->iface = 1;
	return 0;
}

static int dec_strings(struct dctx *d, const struct ob_json *j, uint8_t type, struct tv *out)
{
	if (j->type == OB_JSON_NULL) {
		tv_zero(d->a, type, out);
		return 0;
	}
	if (j->type != OB_JSON_ARRAY)
		return data_err(d, j, "[]string");
	out->kind = TV_SLICE;
	out->type = type;
	out->isnil = 0;
	out->u.seq.n = j->count;
	out->u.seq.v = tpl_arena_alloc(d->a, (j->count ? j->count : 1) * sizeof(struct tv));
	if (!out->u.seq.v)
		return nomem(d);
	size_t i = 0;
	OB_JSON_FOREACH(e, j)
	{
		if (e->type == OB_JSON_NULL)
			out->u.seq.v[i] = tv_string("", 0);
		else if (e->type != OB_JSON_STRING)
			return data_err(d, e, "string");
		else
			out->u.seq.v[i] = tv_string(e->str, e->len);
		i++;
	}
	return 0;
}

static int dec_prop(struct dctx *d, const struct ob_json *j, struct tv *out, int depth);

/* An ordered map of ToolProperty (api.ToolPropertiesMap); `ordered` keeps insertion order. */
static int dec_propmap(struct dctx *d, const struct ob_json *j, uint8_t type, struct tv *out, int depth)
{
	tv_zero(d->a, type, out);
	if (j->type == OB_JSON_NULL)
		return 0;
	if (j->type != OB_JSON_OBJECT)
		return data_err(d, j, "api.ToolPropertiesMap");
	struct tv_entry *e = tpl_arena_alloc(d->a, (j->count ? j->count : 1) * sizeof *e);
	if (!e)
		return nomem(d);
	size_t n = 0;
	OB_JSON_FOREACH_MEMBER(k, val, j)
	{
		size_t at = n;
		for (size_t q = 0; q < n; q++)
			if (e[q].key_n == k->len && memcmp(e[q].key, k->str, k->len) == 0) {
				at = q; /* Set on an existing key keeps its position */
				break;
			}
		e[at].key = k->str;
		e[at].key_n = k->len;
		int rc = dec_prop(d, val, &e[at].val, depth + 1);
		if (rc)
			return rc;
		if (at == n)
			n++;
	}
	out->isnil = 0;
	out->u.map.e = e;
	out->u.map.n = n;
	return 0;
}

static int dec_prop(struct dctx *d, const struct ob_json *j, struct tv *out, int depth)
{
	if (depth > 64)
		return data_err(d, j, "api.ToolProperty");
	if (!tv_zero(d->a, TT_PROP, out))
		return nomem(d);
	if (j->type == OB_JSON_NULL)
		return 0;
	if (j->type != OB_JSON_OBJECT)
		return data_err(d, j, "api.ToolProperty");
	struct tv *f = out->u.fields;
	const struct ob_json *v;
	int rc;
	if ((v = ob_json_get_fold(j, "anyOf")) && v->type != OB_JSON_NULL) {
		path_set(d, "ToolFunctionParameters", "function.parameters.properties");
		if (v->type != OB_JSON_ARRAY)
			return data_err(d, v, "[]api.ToolProperty");
		f[0].isnil = 0;
		f[0].u.seq.n = v->count;
		f[0].u.seq.v = tpl_arena_alloc(d->a, (v->count ? v->count : 1) * sizeof(struct tv));
		if (!f[0].u.seq.v)
			return nomem(d);
		size_t i = 0;
		OB_JSON_FOREACH(e, v)
		{
			if ((rc = dec_prop(d, e, &f[0].u.seq.v[i++], depth + 1)))
				return rc;
		}
	}
	if ((v = ob_json_get_fold(j, "type"))) {
		/* PropertyType.UnmarshalJSON: a string (null counts as "") or an array of strings */
		path_set(d, "ToolFunctionParameters", "function.parameters.properties");
		if (v->type == OB_JSON_STRING || v->type == OB_JSON_NULL) {
			f[1].isnil = 0;
			f[1].u.seq.n = 1;
			f[1].u.seq.v = tpl_arena_alloc(d->a, sizeof(struct tv));
			if (!f[1].u.seq.v)
				return nomem(d);
			f[1].u.seq.v[0] = v->type == OB_JSON_STRING ? tv_string(v->str, v->len) : tv_string("", 0);
		} else if (v->type == OB_JSON_ARRAY) {
			if ((rc = dec_strings(d, v, TT_PROPTYPE, &f[1])))
				return rc;
		} else
			return data_err(d, v, "[]string");
	}
	if ((v = ob_json_get_fold(j, "items"))) {
		path_set(d, "ToolFunctionParameters", "function.parameters.properties");
		if ((rc = dec_any(d, v, &f[2])))
			return rc;
	}
	if ((v = ob_json_get_fold(j, "description"))) {
		path_set(d, "ToolFunctionParameters", "function.parameters.properties");
		if ((rc = dec_string(d, v, &f[3])))
			return rc;
	}
	if ((v = ob_json_get_fold(j, "enum"))) {
		path_set(d, "ToolFunctionParameters", "function.parameters.properties");
		if (v->type == OB_JSON_NULL) {
			tv_zero(d->a, TT_ANY_SLICE, &f[4]);
		} else if (v->type != OB_JSON_ARRAY) {
			return data_err(d, v, "[]interface {}");
		} else if ((rc = dec_any(d, v, &f[4]))) {
			return rc;
		}
		f[4].iface = 0;
	}
	if ((v = ob_json_get_fold(j, "properties"))) {
		path_set(d, "ToolFunctionParameters", "function.parameters.properties");
		if ((rc = dec_propmap(d, v, TT_PROPMAP, &f[5], depth)))
			return rc;
	}
	if ((v = ob_json_get_fold(j, "required"))) {
		path_set(d, "ToolFunctionParameters", "function.parameters.properties");
		if ((rc = dec_strings(d, v, TT_STRING_SLICE, &f[6])))
			return rc;
	}
	return 0;
}

/* api.Tool → templateTool (convertToolsForTemplate): unknown keys are dropped, the top-level properties
 * become a plain map (sorted when printed). */
static int dec_tool(struct dctx *d, const struct ob_json *j, struct tv *out)
{
	if (!tv_zero(d->a, TT_TOOL, out))
		return nomem(d);
	if (j->type == OB_JSON_NULL)
		return 0;
	if (j->type != OB_JSON_OBJECT) {
		snprintf(d->path, sizeof d->path, "ChatRequest.tools");
		return data_err(d, j, "api.Tool");
	}
	struct tv *f = out->u.fields;
	const struct ob_json *v, *fn;
	int rc;
	if ((v = ob_json_get_fold(j, "type"))) {
		path_set(d, "Tool", "type");
		if ((rc = dec_string(d, v, &f[0])))
			return rc;
	}
	if ((v = ob_json_get_fold(j, "items"))) {
		path_set(d, "Tool", "items");
		if ((rc = dec_any(d, v, &f[1])))
			return rc;
	}
	fn = ob_json_get_fold(j, "function");
	if (!fn || fn->type == OB_JSON_NULL)
		return 0;
	if (fn->type != OB_JSON_OBJECT) {
		path_set(d, "Tool", "function");
		return data_err(d, fn, "api.ToolFunction");
	}
	struct tv *ff = f[2].u.fields;
	if ((v = ob_json_get_fold(fn, "name"))) {
		path_set(d, "ToolFunction", "function.name");
		if ((rc = dec_string(d, v, &ff[0])))
			return rc;
	}
	if ((v = ob_json_get_fold(fn, "description"))) {
		path_set(d, "ToolFunction", "function.description");
		if ((rc = dec_string(d, v, &ff[1])))
			return rc;
	}
	const struct ob_json *params = ob_json_get_fold(fn, "parameters");
	if (!params || params->type == OB_JSON_NULL)
		return 0;
	if (params->type != OB_JSON_OBJECT) {
		path_set(d, "ToolFunction", "function.parameters");
		return data_err(d, params, "api.ToolFunctionParameters");
	}
	struct tv *pf = ff[2].u.fields;
	if ((v = ob_json_get_fold(params, "type"))) {
		path_set(d, "ToolFunctionParameters", "function.parameters.type");
		if ((rc = dec_string(d, v, &pf[0])))
			return rc;
	}
	if ((v = ob_json_get_fold(params, "$defs"))) {
		path_set(d, "ToolFunctionParameters", "function.parameters.$defs");
		if ((rc = dec_any(d, v, &pf[1])))
			return rc;
	}
	if ((v = ob_json_get_fold(params, "items"))) {
		path_set(d, "ToolFunctionParameters", "function.parameters.items");
		if ((rc = dec_any(d, v, &pf[2])))
			return rc;
	}
	if ((v = ob_json_get_fold(params, "required"))) {
		path_set(d, "ToolFunctionParameters", "function.parameters.required");
		if ((rc = dec_strings(d, v, TT_STRING_SLICE, &pf[3])))
			return rc;
	}
	if ((v = ob_json_get_fold(params, "properties"))) {
		path_set(d, "ToolFunctionParameters", "function.parameters.properties");
		/* ToMap(): a plain map, so keys print sorted */
		if ((rc = dec_propmap(d, v, TT_PROPS, &pf[4], 0)))
			return rc;
		tv_sort_entries(pf[4].u.map.e, pf[4].u.map.n);
	}
	return 0;
}

int tv_build_tools(struct tpl_arena *a, const struct ob_json *tools, struct tv *out, struct mf_tpl_error *err)
{
	struct dctx d = {.a = a, .err = err};
	tv_zero(a, TT_TOOLS, out);
	if (!tools || tools->type == OB_JSON_NULL)
		return 0;
	if (tools->type != OB_JSON_ARRAY) {
		snprintf(d.path, sizeof d.path, "ChatRequest.tools");
		return data_err(&d, tools, "api.Tools");
	}
	out->isnil = 0;
	out->u.seq.n = tools->count;
	out->u.seq.v = tpl_arena_alloc(a, (tools->count ? tools->count : 1) * sizeof(struct tv));
	if (!out->u.seq.v)
		return nomem(&d);
	size_t i = 0;
	OB_JSON_FOREACH(t, tools)
	{
		int rc = dec_tool(&d, t, &out->u.seq.v[i++]);
		if (rc)
			return rc;
	}
	return 0;
}

/* Tool-call arguments (ToolCallFunctionArguments → ToMap → templateArgs). */
int tv_build_args(struct tpl_arena *a, const struct ob_json *args, struct tv *out, struct mf_tpl_error *err)
{
	struct dctx d = {.a = a, .err = err};
	tv_zero(a, TT_ARGS, out);
	if (!args || args->type == OB_JSON_NULL)
		return 0;
	if (args->type != OB_JSON_OBJECT) {
		snprintf(d.path, sizeof d.path, "ToolCallFunction.function.arguments");
		return data_err(&d, args, "map[string]interface {}");
	}
	struct tv m;
	int rc = tv_from_json_any(a, args, &m);
	if (rc == MF_TPL_ERR_NOMEM)
		return nomem(&d);
	if (rc) {
		snprintf(d.path, sizeof d.path, "ToolCallFunction.function.arguments");
		return data_err(&d, args, "float64");
	}
	out->isnil = 0;
	out->u.map = m.u.map;
	return 0;
}
