/* runner/api/decode.c — Go encoding/json decoding rules for request bodies, over base/json's tree.
 *
 * gin's ShouldBindJSON uses a json.Decoder: it reads the first JSON value and ignores whatever follows it,
 * and a truncated body is "unexpected EOF". Type errors name the Go struct and the JSON path of the field.
 * This file does not know any endpoint's fields; the api_* files say which fields exist.
 */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/api/decode.h"

void rn_dec_fail(struct rn_dec *d, const char *fmt, ...)
{
	if (d->failed)
		return;
	d->failed = true;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d->err, sizeof d->err, fmt, ap);
	va_end(ap);
}

struct ob_json_doc *rn_dec_parse(struct rn_dec *d, const char *body, size_t len, const struct ob_json **root)
{
	*root = NULL;
	size_t i = 0;
	while (i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\n' || body[i] == '\r'))
		i++;
	if (i == len) {
		rn_dec_fail(d, "missing request body");
		return NULL;
	}
	struct ob_json_error je;
	struct ob_json_doc *doc = ob_json_parse(body, len, &je);
	if (!doc && strstr(je.message, "after top-level value") && je.offset < len) {
		/* a json.Decoder stops after the first value: parse only that */
		doc = ob_json_parse(body, je.offset, &je);
	}
	if (!doc) {
		if (strcmp(je.message, "unexpected end of JSON input") == 0)
			rn_dec_fail(d, "unexpected EOF");
		else
			rn_dec_fail(d, "%s", je.message);
		return NULL;
	}
	const struct ob_json *r = ob_json_root(doc);
	if (r->type == OB_JSON_NULL)
		return doc;
	if (r->type != OB_JSON_OBJECT) {
		rn_dec_fail(d, "json: cannot unmarshal %s into Go value of type api.%s", ob_json_type_name(r), d->go_struct);
		ob_json_free(doc);
		return NULL;
	}
	*root = r;
	return doc;
}

/* Go's UnmarshalTypeError text for the value `what` ("string", "number 1.5") in member `field`. */
static void unmarshal_error(struct rn_dec *d, const char *what, const char *field, const char *go_type)
{
	if (d->prefix && d->prefix[0])
		rn_dec_fail(d, "json: cannot unmarshal %s into Go struct field %s.%s.%s of type %s", what, d->go_struct,
			    d->prefix, field, go_type);
	else
		rn_dec_fail(d, "json: cannot unmarshal %s into Go struct field %s.%s of type %s", what, d->go_struct, field,
			    go_type);
}

/* a number that does not fit go_type: Go quotes its literal */
static void number_error(struct rn_dec *d, const char *field, const struct ob_json *v, const char *go_type)
{
	char what[96];
	snprintf(what, sizeof what, "number %.60s", v->str ? v->str : "");
	unmarshal_error(d, what, field, go_type);
}

void rn_dec_type_error(struct rn_dec *d, const char *field, const struct ob_json *v, const char *go_type)
{
	unmarshal_error(d, ob_json_type_name(v), field, go_type);
}

const struct ob_json *rn_dec_get(const struct ob_json *obj, const char *field)
{
	if (!obj || obj->type != OB_JSON_OBJECT)
		return NULL;
	const struct ob_json *v = ob_json_get_fold(obj, field);
	if (!v || v->type == OB_JSON_NULL)
		return NULL;
	return v;
}

/* The member when present and of JSON type `type`; NULL when absent, null, or of another type (the error
 * recorded). */
static const struct ob_json *get_typed(struct rn_dec *d, const struct ob_json *obj, const char *field,
				       enum ob_json_type type, const char *go_type)
{
	const struct ob_json *v = rn_dec_get(obj, field);
	if (v && v->type != type) {
		rn_dec_type_error(d, field, v, go_type);
		return NULL;
	}
	return v;
}

bool rn_dec_string(struct rn_dec *d, const struct ob_json *obj, const char *field, const char **s, size_t *len)
{
	const struct ob_json *v = get_typed(d, obj, field, OB_JSON_STRING, "string");
	if (!v)
		return false;
	*s = v->str;
	if (len)
		*len = v->len;
	return true;
}

bool rn_dec_bool(struct rn_dec *d, const struct ob_json *obj, const char *field, bool *out)
{
	const struct ob_json *v = get_typed(d, obj, field, OB_JSON_BOOL, "bool");
	if (!v)
		return false;
	*out = v->boolean;
	return true;
}

bool rn_dec_int_value(struct rn_dec *d, const char *field, const struct ob_json *v, int64_t *out)
{
	if (v->type != OB_JSON_NUMBER) {
		rn_dec_type_error(d, field, v, "int");
		return false;
	}
	if (!ob_json_int(v, out)) {
		number_error(d, field, v, "int"); /* "json: cannot unmarshal number 1.5 into Go struct field X.f ..." */
		return false;
	}
	return true;
}

bool rn_dec_int(struct rn_dec *d, const struct ob_json *obj, const char *field, int64_t *out)
{
	const struct ob_json *v = rn_dec_get(obj, field);
	if (!v)
		return false;
	return rn_dec_int_value(d, field, v, out);
}

bool rn_dec_float(struct rn_dec *d, const struct ob_json *obj, const char *field, double *out)
{
	const struct ob_json *v = get_typed(d, obj, field, OB_JSON_NUMBER, "float64");
	if (!v)
		return false;
	if (isinf(v->number)) {
		number_error(d, field, v, "float64");
		return false;
	}
	*out = v->number;
	return true;
}

const struct ob_json *rn_dec_array(struct rn_dec *d, const struct ob_json *obj, const char *field, const char *go_type)
{
	return get_typed(d, obj, field, OB_JSON_ARRAY, go_type);
}

const struct ob_json *rn_dec_object(struct rn_dec *d, const struct ob_json *obj, const char *field, const char *go_type)
{
	return get_typed(d, obj, field, OB_JSON_OBJECT, go_type);
}
