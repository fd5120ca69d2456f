/* modelfile/model.c — ConfigV2 encode/decode, GetModel, and the texts of `ollama show`.
 *
 * Parameter values print as Go's fmt prints the values json.Decode put in a map[string]any (%v for
 * --modelfile, %#v for --parameters); Go iterates that map in random order, orun in key order.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/gofmt.h"
#include "base/jsonutil.h"
#include "base/utf8.h"
#include "modelfile/model.h"
#include "modelfile/parser.h"

#define PATH_CAP 4096

/* ---------------------------------------------------------------------------------------------------- */
/* Config */

int mf_config_set(char **field, const char *s)
{
	char *c = strdup(s ? s : "");
	if (!c)
		return MF_ERR_NOMEM;
	free(*field);
	*field = c;
	return MF_OK;
}

int mf_strlist_add(char ***list, size_t *n, const char *s)
{
	char *c = strdup(s);
	char **l = c ? realloc(*list, (*n + 1) * sizeof *l) : NULL;
	if (!l) {
		free(c);
		return MF_ERR_NOMEM;
	}
	l[(*n)++] = c;
	*list = l;
	return MF_OK;
}

void mf_strlist_free(char **list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

#define CONFIG_STRINGS(X)                                                                                \
	X(model_format) X(model_family) X(model_type) X(file_type) X(renderer) X(parser) X(requires)       \
	X(remote_host) X(remote_model) X(base_name) X(draft_model_format) X(draft_architecture)           \
	X(draft_tensor_prefix) X(draft_config) X(architecture) X(os)

int mf_config_init(struct mf_config *c)
{
	memset(c, 0, sizeof *c);
#define INIT(f)                                                                                          \
	if (!(c->f = strdup(""))) {                                                                      \
		mf_config_free(c);                                                                       \
		return MF_ERR_NOMEM;                                                                     \
	}
	CONFIG_STRINGS(INIT)
#undef INIT
	return MF_OK;
}

void mf_config_free(struct mf_config *c)
{
	if (!c)
		return;
#define FREE(f) free(c->f);
	CONFIG_STRINGS(FREE)
#undef FREE
	mf_strlist_free(c->model_families, c->n_model_families);
	mf_strlist_free(c->capabilities, c->n_capabilities);
	memset(c, 0, sizeof *c);
}

static int cfg_str(const struct ob_json *obj, const char *key, char **field, struct mf_error *err)
{
	const struct ob_json *v = ob_json_get_fold(obj, key);
	if (!v || v->type == OB_JSON_NULL)
		return MF_OK;
	if (v->type != OB_JSON_STRING)
		return mf_error_set(err, MF_ERR_FORMAT,
				    "json: cannot unmarshal %s into Go struct field ConfigV2.%s of type string",
				    ob_json_type_name(v), key);
	char *s = strndup(v->str, v->len);
	if (!s)
		return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	free(*field);
	*field = s;
	return MF_OK;
}

static int cfg_list(const struct ob_json *obj, const char *key, char ***list, size_t *n, struct mf_error *err)
{
	const struct ob_json *v = ob_json_get_fold(obj, key);
	if (!v || v->type == OB_JSON_NULL)
		return MF_OK;
	if (v->type != OB_JSON_ARRAY)
		return mf_error_set(err, MF_ERR_FORMAT,
				    "json: cannot unmarshal %s into Go struct field ConfigV2.%s of type []string",
				    ob_json_type_name(v), key);
	OB_JSON_FOREACH(e, v)
	{
		if (e->type != OB_JSON_STRING)
			return mf_error_set(err, MF_ERR_FORMAT,
					    "json: cannot unmarshal %s into Go struct field ConfigV2.%s of type string",
					    ob_json_type_name(e), key);
		char *s = strndup(e->str, e->len);
		if (!s || mf_strlist_add(list, n, s) != MF_OK) {
			free(s);
			return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
		}
		free(s);
	}
	return MF_OK;
}

static int cfg_int(const struct ob_json *obj, const char *key, int64_t *out, struct mf_error *err)
{
	const struct ob_json *v = ob_json_get_fold(obj, key);
	if (!v || v->type == OB_JSON_NULL)
		return MF_OK;
	if (v->type != OB_JSON_NUMBER || !ob_json_int(v, out))
		return mf_error_set(err, MF_ERR_FORMAT,
				    "json: cannot unmarshal %s into Go struct field ConfigV2.%s of type int",
				    v->type == OB_JSON_NUMBER ? "number" : ob_json_type_name(v), key);
	return MF_OK;
}

int mf_config_parse(const char *data, size_t n, struct mf_config *c, struct mf_error *err)
{
	if (mf_config_init(c) != MF_OK)
		return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	if (n > MF_MAX_CONFIG_SIZE)
		return mf_error_set(err, MF_ERR_LIMIT, "config blob is %zu bytes, more than the limit of %u", n,
				    MF_MAX_CONFIG_SIZE);
	struct ob_json_error jerr;
	struct ob_json_doc *doc = ob_json_parse(data, n, &jerr);
	if (!doc)
		return mf_error_set(err, MF_ERR_FORMAT, "%s", jerr.message);
	const struct ob_json *r = ob_json_root(doc);
	int rc = MF_OK;
	if (r->type != OB_JSON_OBJECT) {
		rc = mf_error_set(err, MF_ERR_FORMAT, "json: cannot unmarshal %s into Go value of type model.ConfigV2",
				  ob_json_type_name(r));
		goto out;
	}
	if ((rc = cfg_str(r, "model_format", &c->model_format, err)) || (rc = cfg_str(r, "model_family", &c->model_family, err)) ||
	    (rc = cfg_list(r, "model_families", &c->model_families, &c->n_model_families, err)) ||
	    (rc = cfg_str(r, "model_type", &c->model_type, err)) || (rc = cfg_str(r, "file_type", &c->file_type, err)) ||
	    (rc = cfg_str(r, "renderer", &c->renderer, err)) || (rc = cfg_str(r, "parser", &c->parser, err)) ||
	    (rc = cfg_str(r, "requires", &c->requires, err)) || (rc = cfg_str(r, "remote_host", &c->remote_host, err)) ||
	    (rc = cfg_str(r, "remote_model", &c->remote_model, err)) ||
	    (rc = cfg_list(r, "capabilities", &c->capabilities, &c->n_capabilities, err)) ||
	    (rc = cfg_int(r, "context_length", &c->context_length, err)) ||
	    (rc = cfg_int(r, "embedding_length", &c->embedding_length, err)) ||
	    (rc = cfg_str(r, "base_name", &c->base_name, err)) || (rc = cfg_str(r, "architecture", &c->architecture, err)) ||
	    (rc = cfg_str(r, "os", &c->os, err)))
		goto out;
	const struct ob_json *d = ob_json_get_fold(r, "draft");
	if (d && d->type == OB_JSON_OBJECT) {
		c->has_draft = true;
		if ((rc = cfg_str(d, "model_format", &c->draft_model_format, err)) ||
		    (rc = cfg_str(d, "architecture", &c->draft_architecture, err)) ||
		    (rc = cfg_str(d, "tensor_prefix", &c->draft_tensor_prefix, err)) ||
		    (rc = cfg_str(d, "config", &c->draft_config, err)))
			goto out;
	}
out:
	ob_json_free(doc);
	return rc;
}

static void put_str(struct ob_jw *w, const char *key, const char *v, bool omitempty)
{
	if (omitempty && (!v || !*v))
		return;
	ob_jw_key(w, key);
	ob_jw_string(w, v ? v : "");
}

char *mf_config_encode(const struct mf_config *c, size_t *len)
{
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	put_str(&w, "model_format", c->model_format, false);
	put_str(&w, "model_family", c->model_family, false);
	ob_jw_key(&w, "model_families");
	if (!c->n_model_families) {
		ob_jw_null(&w);
	} else {
		ob_jw_arr(&w);
		for (size_t i = 0; i < c->n_model_families; i++)
			ob_jw_string(&w, c->model_families[i]);
		ob_jw_arr_end(&w);
	}
	put_str(&w, "model_type", c->model_type, false);
	put_str(&w, "file_type", c->file_type, false);
	put_str(&w, "renderer", c->renderer, true);
	put_str(&w, "parser", c->parser, true);
	put_str(&w, "requires", c->requires, true);
	put_str(&w, "remote_host", c->remote_host, true);
	put_str(&w, "remote_model", c->remote_model, true);
	if (c->n_capabilities) {
		ob_jw_key(&w, "capabilities");
		ob_jw_arr(&w);
		for (size_t i = 0; i < c->n_capabilities; i++)
			ob_jw_string(&w, c->capabilities[i]);
		ob_jw_arr_end(&w);
	}
	if (c->context_length) {
		ob_jw_key(&w, "context_length");
		ob_jw_int(&w, c->context_length);
	}
	if (c->embedding_length) {
		ob_jw_key(&w, "embedding_length");
		ob_jw_int(&w, c->embedding_length);
	}
	put_str(&w, "base_name", c->base_name, true);
	if (c->has_draft) {
		ob_jw_key(&w, "draft");
		ob_jw_obj(&w);
		put_str(&w, "model_format", c->draft_model_format, true);
		put_str(&w, "architecture", c->draft_architecture, true);
		put_str(&w, "tensor_prefix", c->draft_tensor_prefix, true);
		put_str(&w, "config", c->draft_config, true);
		ob_jw_obj_end(&w);
	}
	put_str(&w, "architecture", c->architecture, false);
	put_str(&w, "os", c->os, false);
	ob_jw_obj_end(&w);
	return ob_jw_take_line(&w, len);
}

/* ---------------------------------------------------------------------------------------------------- */
/* GetModel */

void mf_model_free(struct mf_model *m)
{
	if (!m)
		return;
	mf_manifest_free(m->manifest);
	mf_config_free(&m->config);
	free(m->model_path);
	free(m->parent_model);
	free(m->draft_path);
	mf_strlist_free(m->adapter_paths, m->n_adapters);
	mf_strlist_free(m->projector_paths, m->n_projectors);
	free(m->template_text);
	free(m->system);
	mf_strlist_free(m->licenses, m->n_licenses);
	ob_json_free(m->params);
	ob_json_free(m->messages_doc);
	for (size_t i = 0; i < m->n_messages; i++) {
		free(m->messages[i].role);
		free(m->messages[i].content);
	}
	free(m->messages);
	free(m);
}

static int read_text_layer(const struct mf_store *s, const struct mf_layer *l, char **out, size_t *len,
			   struct mf_error *err)
{
	size_t n = 0;
	int rc = mf_store_read_blob(s, l->digest, MF_MAX_TEXT_LAYER, out, &n, err);
	if (len)
		*len = n;
	return rc;
}

static int load_messages(struct mf_model *m, const char *data, size_t n, struct mf_error *err)
{
	struct ob_json_error jerr;
	m->messages_doc = ob_json_parse(data, n, &jerr);
	if (!m->messages_doc)
		return mf_error_set(err, MF_ERR_FORMAT, "%s", jerr.message);
	const struct ob_json *a = ob_json_root(m->messages_doc);
	if (a->type == OB_JSON_NULL)
		return MF_OK;
	if (a->type != OB_JSON_ARRAY)
		return mf_error_set(err, MF_ERR_FORMAT, "json: cannot unmarshal %s into Go value of type []api.Message",
				    ob_json_type_name(a));
	m->messages = a->count ? calloc(a->count, sizeof *m->messages) : NULL;
	if (a->count && !m->messages)
		return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	OB_JSON_FOREACH(e, a)
	{
		if (e->type != OB_JSON_OBJECT)
			return mf_error_set(err, MF_ERR_FORMAT,
					    "json: cannot unmarshal %s into Go value of type api.Message", ob_json_type_name(e));
		const struct ob_json *r = ob_json_get_fold(e, "role"), *c = ob_json_get_fold(e, "content");
		struct mf_message *msg = &m->messages[m->n_messages++];
		msg->role = r && r->type == OB_JSON_STRING ? strndup(r->str, r->len) : strdup("");
		msg->content = c && c->type == OB_JSON_STRING ? strndup(c->str, c->len) : strdup("");
		if (!msg->role || !msg->content)
			return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
		/* api.Message lower-cases the role on decode */
		for (char *p = msg->role; *p; p++)
			if (*p >= 'A' && *p <= 'Z')
				*p = (char)(*p - 'A' + 'a');
	}
	return MF_OK;
}

int mf_model_load(const struct mf_store *s, const char *name, struct mf_model **out, struct mf_error *err)
{
	*out = NULL;
	struct mf_name n;
	mf_name_parse(name, &n);
	if (!mf_name_is_valid(&n))
		return mf_error_set(err, MF_ERR_PARSE, "invalid model name");
	struct mf_model *m = calloc(1, sizeof *m);
	if (!m)
		return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	int rc = mf_store_resolve_name(s, &n, &m->name, err);
	if (rc != MF_OK)
		goto fail;
	mf_name_display(&m->name, m->short_name);
	mf_name_string(&m->name, m->full_name);
	rc = mf_store_read_manifest(s, &m->name, &m->manifest, err);
	if (rc == MF_ERR_NOT_FOUND) {
		rc = mf_error_set(err, MF_ERR_NOT_FOUND, "model '%s' not found", name);
		goto fail;
	}
	if (rc != MF_OK)
		goto fail;
	if (m->manifest->config.digest && *m->manifest->config.digest) {
		char *data;
		size_t len;
		rc = mf_store_read_blob(s, m->manifest->config.digest, MF_MAX_CONFIG_SIZE, &data, &len, err);
		if (rc != MF_OK)
			goto fail;
		rc = mf_config_parse(data, len, &m->config, err);
		free(data);
	} else {
		rc = mf_config_init(&m->config) == MF_OK ? MF_OK : mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	}
	if (rc != MF_OK)
		goto fail;

	for (size_t i = 0; i < m->manifest->n_layers && rc == MF_OK; i++) {
		const struct mf_layer *l = &m->manifest->layers[i];
		const char *mt = l->media_type ? l->media_type : "";
		char path[PATH_CAP];
		if (!l->digest || mf_store_blob_path(s, l->digest, path, sizeof path, err) != MF_OK) {
			rc = mf_error_set(err, MF_ERR_FORMAT, "invalid digest format");
			break;
		}
		char *text = NULL;
		size_t len = 0;
		if (strcmp(mt, MF_MEDIA_MODEL) == 0) {
			free(m->model_path);
			free(m->parent_model);
			m->model_path = strdup(path);
			m->parent_model = strdup(l->from ? l->from : "");
			if (!m->model_path || !m->parent_model)
				rc = mf_error_set(err, MF_ERR_NOMEM, "out of memory");
		} else if (strcmp(mt, MF_MEDIA_DRAFT) == 0) {
			free(m->draft_path);
			if (!(m->draft_path = strdup(path)))
				rc = mf_error_set(err, MF_ERR_NOMEM, "out of memory");
		} else if (strcmp(mt, MF_MEDIA_EMBED) == 0) {
			m->has_embed_layer = true;
		} else if (strcmp(mt, MF_MEDIA_ADAPTER) == 0) {
			if (mf_strlist_add(&m->adapter_paths, &m->n_adapters, path) != MF_OK)
				rc = mf_error_set(err, MF_ERR_NOMEM, "out of memory");
		} else if (strcmp(mt, MF_MEDIA_PROJECTOR) == 0) {
			if (mf_strlist_add(&m->projector_paths, &m->n_projectors, path) != MF_OK)
				rc = mf_error_set(err, MF_ERR_NOMEM, "out of memory");
		} else if (strcmp(mt, MF_MEDIA_TEMPLATE) == 0 || strcmp(mt, MF_MEDIA_PROMPT) == 0) {
			if ((rc = read_text_layer(s, l, &text, &len, err)) == MF_OK) {
				free(m->template_text);
				m->template_text = text;
				m->has_template = true;
				text = NULL;
			}
		} else if (strcmp(mt, MF_MEDIA_SYSTEM) == 0) {
			if ((rc = read_text_layer(s, l, &text, &len, err)) == MF_OK) {
				free(m->system);
				m->system = text;
				text = NULL;
			}
		} else if (strcmp(mt, MF_MEDIA_PARAMS) == 0) {
			if ((rc = read_text_layer(s, l, &text, &len, err)) == MF_OK) {
				struct ob_json_error jerr;
				struct ob_json_doc *d = ob_json_parse(text, len, &jerr);
				if (!d) {
					rc = mf_error_set(err, MF_ERR_FORMAT, "%s", jerr.message);
				} else if (ob_json_root(d)->type != OB_JSON_OBJECT && ob_json_root(d)->type != OB_JSON_NULL) {
					rc = mf_error_set(err, MF_ERR_FORMAT,
							  "json: cannot unmarshal %s into Go value of type map[string]interface {}",
							  ob_json_type_name(ob_json_root(d)));
					ob_json_free(d);
				} else {
					ob_json_free(m->params);
					m->params = d;
				}
			}
		} else if (strcmp(mt, MF_MEDIA_MESSAGES) == 0) {
			if ((rc = read_text_layer(s, l, &text, &len, err)) == MF_OK) {
				if (m->messages_doc) { /* a later layer replaces the list */
					for (size_t k = 0; k < m->n_messages; k++) {
						free(m->messages[k].role);
						free(m->messages[k].content);
					}
					free(m->messages);
					m->messages = NULL;
					m->n_messages = 0;
					ob_json_free(m->messages_doc);
					m->messages_doc = NULL;
				}
				rc = load_messages(m, text, len, err);
			}
		} else if (strcmp(mt, MF_MEDIA_LICENSE) == 0) {
			if ((rc = read_text_layer(s, l, &text, &len, err)) == MF_OK &&
			    mf_strlist_add(&m->licenses, &m->n_licenses, text) != MF_OK)
				rc = mf_error_set(err, MF_ERR_NOMEM, "out of memory");
		}
		free(text);
	}
	if (rc == MF_OK && !m->template_text && !(m->template_text = strdup(MF_DEFAULT_TEMPLATE)))
		rc = mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	if (rc == MF_OK && !m->system && !(m->system = strdup("")))
		rc = mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	if (rc != MF_OK)
		goto fail;
	*out = m;
	return MF_OK;
fail:
	mf_model_free(m);
	return rc;
}

/* ---------------------------------------------------------------------------------------------------- */
/* show */

/* Go's %v (sharp = false) or %#v (sharp = true) of a value json.Decode produced. */
static void go_print(struct ob_buf *b, const struct ob_json *v, bool sharp)
{
	char num[40];
	switch (v->type) {
	case OB_JSON_NULL: ob_buf_puts(b, "<nil>"); return;
	case OB_JSON_BOOL: ob_buf_puts(b, v->boolean ? "true" : "false"); return;
	case OB_JSON_NUMBER:
		ob_go_format_float(num, v->number);
		ob_buf_puts(b, num);
		return;
	case OB_JSON_STRING:
		if (sharp)
			ob_go_quote(b, v->str, v->len);
		else
			ob_buf_append(b, v->str, v->len);
		return;
	case OB_JSON_ARRAY: {
		ob_buf_puts(b, sharp ? "[]interface {}{" : "[");
		bool first = true;
		OB_JSON_FOREACH(e, v)
		{
			if (!first)
				ob_buf_puts(b, sharp ? ", " : " ");
			first = false;
			go_print(b, e, sharp);
		}
		ob_buf_puts(b, sharp ? "}" : "]");
		return;
	}
	case OB_JSON_OBJECT: {
		/* fmt prints maps with sorted keys: map[k:v k2:v2] / map[string]interface {}{"k":v, ...} */
		struct ob_jw w;
		ob_jw_init(&w, 0, 0);
		ob_jw_go_value(&w, v); /* sorted, de-duplicated copy to walk */
		struct ob_json_error jerr;
		const char *js = ob_jw_str(&w);
		struct ob_json_doc *d = js ? ob_json_parse(js, strlen(js), &jerr) : NULL;
		ob_buf_puts(b, sharp ? "map[string]interface {}{" : "map[");
		bool first = true;
		if (d)
			OB_JSON_FOREACH_MEMBER(k, val, ob_json_root(d))
			{
				if (!first)
					ob_buf_puts(b, sharp ? ", " : " ");
				first = false;
				if (sharp)
					ob_go_quote(b, k->str, k->len);
				else
					ob_buf_append(b, k->str, k->len);
				ob_buf_putc(b, ':');
				go_print(b, val, sharp);
			}
		ob_buf_puts(b, sharp ? "}" : "]");
		ob_json_free(d);
		ob_jw_free(&w);
		return;
	}
	}
}

static char *print_value(const struct ob_json *v, bool sharp)
{
	struct ob_buf b;
	ob_buf_init(&b, 0);
	go_print(&b, v, sharp);
	char *s = ob_buf_take(&b);
	if (!s)
		ob_buf_free(&b);
	return s;
}

/* The params object's members sorted by key (de-duplicated): a parsed copy the caller frees. */
static struct ob_json_doc *sorted_params(const struct mf_model *m)
{
	if (!m->params || ob_json_root(m->params)->type != OB_JSON_OBJECT)
		return NULL;
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	if (!ob_jw_go_value(&w, ob_json_root(m->params)) || !ob_jw_str(&w)) {
		ob_jw_free(&w);
		return NULL;
	}
	struct ob_json_error jerr;
	struct ob_json_doc *d = ob_json_parse(ob_jw_str(&w), strlen(ob_jw_str(&w)), &jerr);
	ob_jw_free(&w);
	return d;
}

char *mf_model_show_modelfile(const struct mf_model *m)
{
	struct mf_modelfile *mf = mf_modelfile_new();
	if (!mf)
		return NULL;
	bool ok = mf_modelfile_add(mf, "model", m->model_path ? m->model_path : "") == MF_OK;
	for (size_t i = 0; ok && i < m->n_adapters; i++)
		ok = mf_modelfile_add(mf, "adapter", m->adapter_paths[i]) == MF_OK;
	if (ok && m->draft_path)
		ok = mf_modelfile_add(mf, "draft", m->draft_path) == MF_OK;
	for (size_t i = 0; ok && i < m->n_projectors; i++)
		ok = mf_modelfile_add(mf, "model", m->projector_paths[i]) == MF_OK;
	if (ok && m->template_text)
		ok = mf_modelfile_add(mf, "template", m->template_text) == MF_OK;
	if (ok && m->system && *m->system)
		ok = mf_modelfile_add(mf, "system", m->system) == MF_OK;
	if (ok && *m->config.renderer)
		ok = mf_modelfile_add(mf, "renderer", m->config.renderer) == MF_OK;
	if (ok && *m->config.parser)
		ok = mf_modelfile_add(mf, "parser", m->config.parser) == MF_OK;
	struct ob_json_doc *params = ok ? sorted_params(m) : NULL;
	if (params) {
		OB_JSON_FOREACH_MEMBER(k, v, ob_json_root(params))
		{
			char *key = strndup(k->str, k->len);
			if (!key) {
				ok = false;
				break;
			}
			if (v->type == OB_JSON_ARRAY) {
				OB_JSON_FOREACH(e, v)
				{
					char *s = print_value(e, false);
					ok = ok && s && mf_modelfile_add(mf, key, s) == MF_OK;
					free(s);
				}
			} else {
				char *s = print_value(v, false);
				ok = ok && s && mf_modelfile_add(mf, key, s) == MF_OK;
				free(s);
			}
			free(key);
		}
		ob_json_free(params);
	}
	for (size_t i = 0; ok && i < m->n_licenses; i++)
		ok = mf_modelfile_add(mf, "license", m->licenses[i]) == MF_OK;
	for (size_t i = 0; ok && i < m->n_messages; i++) {
		size_t n = strlen(m->messages[i].role) + strlen(m->messages[i].content) + 3;
		char *a = malloc(n);
		ok = a != NULL;
		if (a) {
			snprintf(a, n, "%s: %s", m->messages[i].role, m->messages[i].content);
			ok = mf_modelfile_add(mf, "message", a) == MF_OK;
			free(a);
		}
	}
	char *body = ok ? mf_modelfile_string(mf) : NULL;
	mf_modelfile_free(mf);
	if (!body)
		return NULL;
	struct ob_buf b;
	ob_buf_init(&b, 0);
	ob_buf_puts(&b, "# Modelfile generated by \"ollama show\"\n");
	ob_buf_puts(&b, "# To build a new Modelfile based on this, replace FROM with:\n");
	ob_buf_printf(&b, "# FROM %s\n\n", m->short_name);
	ob_buf_puts(&b, body);
	free(body);
	char *s = ob_buf_take(&b);
	if (!s)
		ob_buf_free(&b);
	return s;
}

/* "%-30s %#v\n"-style line into b (fmt pads by runes). */
static void param_line(struct ob_buf *b, const char *key, size_t klen, const struct ob_json *v, bool *first)
{
	if (!*first)
		ob_buf_putc(b, '\n');
	*first = false;
	ob_buf_append(b, key, klen);
	size_t runes = ob_utf8_rune_count(key, klen);
	if (runes < 30)
		ob_buf_pad(b, ' ', 30 - runes);
	ob_buf_putc(b, ' ');
	go_print(b, v, true);
}

char *mf_model_show_parameters(const struct mf_model *m)
{
	struct ob_buf b;
	ob_buf_init(&b, 0);
	ob_buf_puts(&b, "");
	struct ob_json_doc *params = sorted_params(m);
	bool first = true;
	if (params) {
		OB_JSON_FOREACH_MEMBER(k, v, ob_json_root(params))
		{
			if (v->type == OB_JSON_ARRAY) {
				OB_JSON_FOREACH(e, v)
				param_line(&b, k->str, k->len, e, &first);
			} else {
				param_line(&b, k->str, k->len, v, &first);
			}
		}
		ob_json_free(params);
	}
	char *s = ob_buf_take(&b);
	if (!s)
		ob_buf_free(&b);
	return s;
}

char *mf_model_show_license(const struct mf_model *m)
{
	struct ob_buf b;
	ob_buf_init(&b, 0);
	ob_buf_puts(&b, "");
	for (size_t i = 0; i < m->n_licenses; i++) {
		if (i)
			ob_buf_putc(&b, '\n');
		ob_buf_puts(&b, m->licenses[i]);
	}
	char *s = ob_buf_take(&b);
	if (!s)
		ob_buf_free(&b);
	return s;
}

char *mf_human_number(uint64_t n, char *buf)
{
	const double billion = 1e9, million = 1e6, thousand = 1e3;
	if (n >= 1000000000ull) {
		double x = (double)n / billion;
		snprintf(buf, 32, x == floor(x) ? "%.0fB" : "%.1fB", x);
	} else if (n >= 1000000ull) {
		double x = (double)n / million;
		snprintf(buf, 32, x == floor(x) ? "%.0fM" : "%.2fM", x);
	} else if (n >= 1000ull) {
		snprintf(buf, 32, "%.0fK", (double)n / thousand);
	} else {
		snprintf(buf, 32, "%llu", (unsigned long long)n);
	}
	return buf;
}
