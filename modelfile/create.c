/* modelfile/create.c — the server side of `ollama create` (server/create.go, server/model.go).
 *
 * The request is decoded into a struct, then layers are gathered in Ollama's order: the base (a FROM
 * model's layers, or the uploaded GGUF files plus an autodetected template), adapters, then template,
 * system, licenses, merged parameters and messages; the config blob is written last, then the manifest.
 * Unlike Ollama's HEAD, an uploaded GGUF is kept byte for byte (validated by libgguf, not rewritten by an
 * external quantizer), so its blob digest is the uploaded one.
 */
#include "config.h"

#include <ctype.h>
#include <stdarg.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "gguf/quantize.h"
#include "gguf/safetensors.h"
#include "base/buf.h"
#include "modelfile/create.h"
#include "base/jsonutil.h"
#include "modelfile/model.h"
#include "modelfile/name.h"
#include "modelfile/parser.h"
#include "modelfile/request.h"
#include "modelfile/template.h"

#define PATH_CAP 4096

/* ---------------------------------------------------------------------------------------------------- */
/* File types */

static const char *const file_type_names[] = {
	"F32",    "F16",     "Q4_0",   "Q4_1",   NULL,     NULL,   NULL,     "Q8_0",   "Q5_0",   "Q5_1",
	"Q2_K",   "Q3_K_S",  "Q3_K_M", "Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K", "IQ2_XXS",
	"IQ2_XS", "Q2_K_S",  "IQ3_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S",  "IQ3_M",  "IQ2_S", "IQ2_M",
	"IQ4_XS", "IQ1_M",   "BF16",   NULL,     NULL,     NULL,     "TQ1_0",  "TQ2_0",  "MXFP4_MOE", "NVFP4",
	"Q1_0",
};

const char *mf_file_type_name(uint32_t ft)
{
	/* FileType(): general.file_type 0 reads as absent, hence "unknown" even for F32 */
	if (ft == 0 || ft >= sizeof file_type_names / sizeof file_type_names[0] || !file_type_names[ft])
		return "unknown";
	return file_type_names[ft];
}

bool mf_parse_file_type(const char *s, uint32_t *ft)
{
	static const struct {
		const char *name;
		uint32_t ft;
	} t[] = {{"F32", 0}, {"F16", 1}, {"Q8_0", 7}, {"Q4_K_S", 14}, {"Q4_K_M", 15}, {"Q4_K", 15}, {"BF16", 32}};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (strcmp(s, t[i].name) == 0) {
			*ft = t[i].ft;
			return true;
		}
	return false;
}

/* ---------------------------------------------------------------------------------------------------- */
/* The request */

struct named_digest {
	char *name, *digest;
};

struct digest_map {
	struct named_digest *v;
	size_t n;
};

struct mf_create_request {
	struct ob_json_doc *doc;   /* the body; the JSON pointers below point into it */
	struct ob_json_doc *legacy; /* the JSON built from a legacy Modelfile, when that form was used */
	char *model;      /* may hold NULs (then it is an invalid name): model_len is its length */
	size_t model_len;
	bool stream;
	char *quantize, *draft_quantize;
	char *from, *remote_host;
	size_t from_len; /* from may hold NULs, as model */
	struct digest_map files, adapters, draft_files;
	char *template_text, *system;
	char **licenses;
	size_t n_licenses;
	const struct ob_json *parameters; /* an object, or NULL */
	const struct ob_json *messages;   /* an array, or NULL */
	char *renderer, *parser, *requires;
	struct mf_cancel cancel; /* set by mf_create_request_set_cancel; {NULL} = never */
};

static void dmap_free(struct digest_map *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->v[i].name);
		free(m->v[i].digest);
	}
	free(m->v);
	memset(m, 0, sizeof *m);
}

void mf_create_request_free(struct mf_create_request *r)
{
	if (!r)
		return;
	ob_json_free(r->doc);
	ob_json_free(r->legacy);
	free(r->model);
	free(r->quantize);
	free(r->draft_quantize);
	free(r->from);
	free(r->remote_host);
	dmap_free(&r->files);
	dmap_free(&r->adapters);
	dmap_free(&r->draft_files);
	free(r->template_text);
	free(r->system);
	mf_strlist_free(r->licenses, r->n_licenses);
	free(r->renderer);
	free(r->parser);
	free(r->requires);
	free(r);
}

bool mf_create_request_stream(const struct mf_create_request *r)
{
	return r->stream;
}

const char *mf_create_request_model(const struct mf_create_request *r)
{
	return r->model;
}

void mf_create_request_set_cancel(struct mf_create_request *r, const struct mf_cancel *cancel)
{
	if (cancel)
		r->cancel = *cancel;
	else
		memset(&r->cancel, 0, sizeof r->cancel);
}

static int type_err(struct mf_error *err, const struct ob_json *v, const char *field, const char *gotype)
{
	return mf_error_set_http(err, MF_ERR_PARSE, 400, "json: cannot unmarshal %s into Go struct field CreateRequest.%s of type %s",
				 ob_json_type_name(v), field, gotype);
}

/* A string field (null/missing → NULL), copied whole: inner NULs are kept, so that a name can be checked
 * with its length (len, when not NULL; 0 for NULL). */
static int req_strn(const struct ob_json *obj, const char *key, char **out, size_t *len, struct mf_error *err)
{
	*out = NULL;
	if (len)
		*len = 0;
	const struct ob_json *v = ob_json_get_fold(obj, key);
	if (!v || v->type == OB_JSON_NULL)
		return MF_OK;
	if (v->type != OB_JSON_STRING)
		return type_err(err, v, key, "string");
	if (!(*out = malloc(v->len + 1)))
		return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	memcpy(*out, v->str, v->len);
	(*out)[v->len] = 0;
	if (len)
		*len = v->len;
	return MF_OK;
}

static int req_str(const struct ob_json *obj, const char *key, char **out, struct mf_error *err)
{
	return req_strn(obj, key, out, NULL, err);
}

static int cmp_named(const void *a, const void *b)
{
	return strcmp(((const struct named_digest *)a)->name, ((const struct named_digest *)b)->name);
}

/* By name, as Go iterates a sorted map here; an empty map has no array (qsort must not see NULL). */
static void dmap_sort(struct digest_map *m)
{
	if (m->n > 1)
		qsort(m->v, m->n, sizeof *m->v, cmp_named);
}

/* A map of file names to digests. A NUL inside a name or a digest would end the C string early (and turn
 * "a\u0000/../x" into "a"): such an entry is refused, a name as "file path must be relative" when names are
 * paths, a digest as "invalid digest format". */
static int req_map(const struct ob_json *obj, const char *key, bool paths, struct digest_map *m, struct mf_error *err)
{
	const struct ob_json *v = ob_json_get_fold(obj, key);
	if (!v || v->type == OB_JSON_NULL)
		return MF_OK;
	if (v->type != OB_JSON_OBJECT)
		return type_err(err, v, key, "map[string]string");
	if (v->count > MF_MAX_CREATE_FILES)
		return mf_error_set_http(err, MF_ERR_LIMIT, 400, "more than %d entries in %s", MF_MAX_CREATE_FILES, key);
	m->v = v->count ? calloc(v->count, sizeof *m->v) : NULL;
	if (v->count && !m->v)
		return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	OB_JSON_FOREACH_MEMBER(k, val, v)
	{
		if (val->type != OB_JSON_STRING && val->type != OB_JSON_NULL)
			return type_err(err, val, key, "string");
		if (paths && memchr(k->str, 0, k->len))
			return mf_error_set_http(err, MF_ERR_INVALID, 400, "file path must be relative");
		if (val->type == OB_JSON_STRING && memchr(val->str, 0, val->len))
			return mf_error_set_http(err, MF_ERR_PARSE, 400, "invalid digest format");
		/* a later duplicate key replaces the earlier one */
		size_t i;
		for (i = 0; i < m->n; i++)
			if (strlen(m->v[i].name) == k->len && memcmp(m->v[i].name, k->str, k->len) == 0)
				break;
		if (i == m->n) {
			m->v[i].name = strndup(k->str, k->len);
			if (!m->v[i].name)
				return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
			m->n++;
		}
		free(m->v[i].digest);
		m->v[i].digest = val->type == OB_JSON_STRING ? strndup(val->str, val->len) : strdup("");
		if (!m->v[i].digest)
			return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	}
	dmap_sort(m);
	return MF_OK;
}

/* io/fs.ValidPath: slash-separated elements, none empty, "." or ".." (the bare "." is the root). */
static bool valid_path(const char *p, size_t n)
{
	if (n == 1 && p[0] == '.')
		return true;
	if (n == 0 || memchr(p, 0, n))
		return false;
	size_t i = 0;
	while (i <= n) {
		size_t j = i;
		while (j < n && p[j] != '/')
			j++;
		size_t len = j - i;
		if (len == 0 || (len == 1 && p[i] == '.') || (len == 2 && p[i] == '.' && p[i + 1] == '.'))
			return false;
		i = j + 1;
	}
	return true;
}

static int check_files(const struct digest_map *m, bool paths, struct mf_error *err)
{
	for (size_t i = 0; i < m->n; i++) {
		if (paths && !valid_path(m->v[i].name, strlen(m->v[i].name)))
			return mf_error_set_http(err, MF_ERR_INVALID, 400, "file path must be relative");
		if (!*m->v[i].digest)
			return mf_error_set_http(err, MF_ERR_PARSE, 400, "invalid digest format");
	}
	return MF_OK;
}

/* api.Message as decoded: role/content/thinking/tool_name/tool_call_id strings, images strings,
 * tool_calls objects. */
static int check_messages(const struct ob_json *a, struct mf_error *err)
{
	OB_JSON_FOREACH(m, a)
	{
		if (m->type == OB_JSON_NULL)
			continue;
		if (m->type != OB_JSON_OBJECT)
			return mf_error_set_http(err, MF_ERR_PARSE, 400,
						 "json: cannot unmarshal %s into Go struct field CreateRequest.messages of type api.Message",
						 ob_json_type_name(m));
		static const char *const strs[] = {"role", "content", "thinking", "tool_name", "tool_call_id"};
		for (size_t i = 0; i < 5; i++) {
			const struct ob_json *v = ob_json_get_fold(m, strs[i]);
			if (v && v->type != OB_JSON_STRING && v->type != OB_JSON_NULL)
				return mf_error_set_http(err, MF_ERR_PARSE, 400,
							 "json: cannot unmarshal %s into Go struct field Message.messages.%s of type string",
							 ob_json_type_name(v), strs[i]);
		}
		const struct ob_json *im = ob_json_get_fold(m, "images");
		if (im && im->type != OB_JSON_NULL) {
			if (im->type != OB_JSON_ARRAY)
				return mf_error_set_http(err, MF_ERR_PARSE, 400,
							 "json: cannot unmarshal %s into Go struct field Message.messages.images of type []api.ImageData",
							 ob_json_type_name(im));
			OB_JSON_FOREACH(e, im)
			if (e->type != OB_JSON_STRING)
				return mf_error_set_http(err, MF_ERR_PARSE, 400,
							 "json: cannot unmarshal %s into Go struct field Message.messages.images of type api.ImageData",
							 ob_json_type_name(e));
		}
		const struct ob_json *tc = ob_json_get_fold(m, "tool_calls");
		if (tc && tc->type != OB_JSON_NULL && tc->type != OB_JSON_ARRAY)
			return mf_error_set_http(err, MF_ERR_PARSE, 400,
						 "json: cannot unmarshal %s into Go struct field Message.messages.tool_calls of type []api.ToolCall",
						 ob_json_type_name(tc));
	}
	return MF_OK;
}

static int parse_legacy(struct mf_create_request *r, const char *text, size_t len, struct mf_warnings *w,
			struct mf_error *err);

static int decode_fields(struct mf_create_request *r, const struct ob_json *root, struct mf_error *err)
{
	int rc;
	char *model = NULL, *name = NULL, *quantization = NULL;
	size_t model_len = 0, name_len = 0;
	if ((rc = req_strn(root, "model", &model, &model_len, err)) ||
	    (rc = req_strn(root, "name", &name, &name_len, err)) ||
	    (rc = req_str(root, "quantize", &r->quantize, err)) || (rc = req_str(root, "quantization", &quantization, err)) ||
	    (rc = req_str(root, "draft_quantize", &r->draft_quantize, err)) ||
	    (rc = req_strn(root, "from", &r->from, &r->from_len, err)) ||
	    (rc = req_str(root, "remote_host", &r->remote_host, err)) ||
	    (rc = req_str(root, "template", &r->template_text, err)) || (rc = req_str(root, "system", &r->system, err)) ||
	    (rc = req_str(root, "renderer", &r->renderer, err)) || (rc = req_str(root, "parser", &r->parser, err)) ||
	    (rc = req_str(root, "requires", &r->requires, err)) ||
	    (rc = req_map(root, "files", true, &r->files, err)) ||
	    (rc = req_map(root, "adapters", false, &r->adapters, err)) ||
	    (rc = req_map(root, "draft_files", true, &r->draft_files, err))) {
		free(model);
		free(name);
		free(quantization);
		return rc;
	}
	/* cmp.Or(r.Model, r.Name), cmp.Or(r.Quantize, r.Quantization) */
	if (!r->model_len) {
		free(r->model);
		r->model = model_len ? model : name;
		r->model_len = model_len ? model_len : name_len;
		if (r->model == model)
			free(name);
		else
			free(model);
	} else {
		free(model);
		free(name);
	}
	if ((!r->quantize || !*r->quantize) && quantization) {
		free(r->quantize);
		r->quantize = quantization;
	} else {
		free(quantization);
	}
	const struct ob_json *st = ob_json_get_fold(root, "stream");
	if (st && st->type != OB_JSON_NULL && st->type != OB_JSON_BOOL)
		return type_err(err, st, "stream", "bool");
	if (st && st->type == OB_JSON_BOOL)
		r->stream = st->boolean;
	const struct ob_json *lic = ob_json_get_fold(root, "license");
	if (lic && lic->type == OB_JSON_STRING) {
		if (lic->len && mf_strlist_add(&r->licenses, &r->n_licenses, lic->str) != MF_OK) /* str is NUL-terminated */
			return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	} else if (lic && lic->type == OB_JSON_ARRAY) {
		OB_JSON_FOREACH(e, lic)
		{
			if (e->type != OB_JSON_STRING)
				return mf_error_set_http(err, MF_ERR_PARSE, 400, "json: cannot unmarshal %s into Go value of type string",
							 ob_json_type_name(e));
			if (mf_strlist_add(&r->licenses, &r->n_licenses, e->str) != MF_OK)
				return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
		}
	} else if (lic && lic->type != OB_JSON_NULL) {
		return mf_error_set_http(err, MF_ERR_PARSE, 400, "json: cannot unmarshal %s into Go value of type []string",
					 ob_json_type_name(lic));
	}
	const struct ob_json *p = ob_json_get_fold(root, "parameters");
	if (p && p->type != OB_JSON_NULL && p->type != OB_JSON_OBJECT)
		return type_err(err, p, "parameters", "map[string]interface {}");
	r->parameters = p && p->type == OB_JSON_OBJECT ? p : NULL;
	const struct ob_json *msgs = ob_json_get_fold(root, "messages");
	if (msgs && msgs->type != OB_JSON_NULL && msgs->type != OB_JSON_ARRAY)
		return type_err(err, msgs, "messages", "[]api.Message");
	if (msgs && msgs->type == OB_JSON_ARRAY) {
		if ((rc = check_messages(msgs, err)) != MF_OK)
			return rc;
		r->messages = msgs;
	}
	return MF_OK;
}

int mf_create_request_parse(const char *body, size_t len, struct mf_create_request **out, struct mf_warnings *w,
			    struct mf_error *err)
{
	*out = NULL;
	size_t i = 0;
	while (i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\n' || body[i] == '\r'))
		i++;
	if (i == len)
		return mf_error_set_http(err, MF_ERR_PARSE, 400, "missing request body");
	if (len > MF_MAX_CREATE_BODY)
		return mf_error_set_http(err, MF_ERR_LIMIT, 400, "request body is %zu bytes, more than the limit of %u", len,
					 MF_MAX_CREATE_BODY);
	struct mf_create_request *r = calloc(1, sizeof *r);
	if (!r)
		return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	r->stream = true;
	struct ob_json_error jerr;
	r->doc = ob_json_parse(body, len, &jerr);
	int rc = MF_OK;
	if (!r->doc) {
		rc = mf_error_set_http(err, strcmp(jerr.message, "out of memory") ? MF_ERR_PARSE : MF_ERR_NOMEM,
				       strcmp(jerr.message, "out of memory") ? 400 : 500, "%s", jerr.message);
		goto fail;
	}
	const struct ob_json *root = ob_json_root(r->doc);
	if (root->type != OB_JSON_OBJECT) {
		rc = mf_error_set_http(err, MF_ERR_PARSE, 400, "json: cannot unmarshal %s into Go value of type api.CreateRequest",
				       ob_json_type_name(root));
		goto fail;
	}
	if ((rc = decode_fields(r, root, err)) != MF_OK)
		goto fail;

	/* the legacy form: the server parses the Modelfile text (Ollama <= 0.5.4, older Open WebUI). The other
	 * legacy field, "path" (a Modelfile on the server), is not read: like any unknown field it is ignored,
	 * as Ollama has done since v0.5.5 (issue 20, F5). */
	char *modelfile = NULL;
	size_t modelfile_len = 0;
	if ((rc = req_strn(root, "modelfile", &modelfile, &modelfile_len, err)) != MF_OK)
		goto fail;
	if (!r->from_len && !r->files.n && modelfile_len)
		rc = parse_legacy(r, modelfile, modelfile_len, w, err);
	free(modelfile);
	if (rc != MF_OK)
		goto fail;

	if ((rc = check_files(&r->files, true, err)) || (rc = check_files(&r->draft_files, true, err)))
		goto fail;
	if (r->draft_quantize && *r->draft_quantize && !r->draft_files.n) {
		rc = mf_error_set_http(err, MF_ERR_INVALID, 400, "--draft-quantize requires a DRAFT model");
		goto fail;
	}
	if ((rc = check_files(&r->adapters, false, err)))
		goto fail;
	struct mf_name n;
	mf_name_parse_n(r->model ? r->model : "", r->model_len, &n);
	if (!mf_name_is_valid(&n)) {
		rc = mf_error_set_http(err, MF_ERR_PARSE, 400, "invalid model name");
		goto fail;
	}
	*out = r;
	return MF_OK;
fail:
	mf_create_request_free(r);
	return rc;
}

/* Adds an uploaded blob ("@sha256:<hex>" in a legacy Modelfile) to a files map, named "sha256-<hex>" (no
 * extension: the kind is detected from the blob's magic). */
static int legacy_blob(struct digest_map *m, const char *ref, struct mf_error *err)
{
	const char *digest = ref + 1;
	if (!mf_digest_valid(digest))
		return mf_error_set_http(err, MF_ERR_PARSE, 400, "invalid digest format");
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->v[i].name + 7, digest + 7) == 0)
			return MF_OK; /* the same blob twice */
	struct named_digest *v = realloc(m->v, (m->n + 1) * sizeof *v);
	if (!v)
		return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	m->v = v;
	v = &m->v[m->n];
	v->name = malloc(strlen(digest) + 1);
	v->digest = malloc(MF_DIGEST_LEN + 1);
	if (!v->name || !v->digest) {
		free(v->name);
		free(v->digest);
		return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	}
	sprintf(v->name, "sha256-%s", digest + 7);
	snprintf(v->digest, MF_DIGEST_LEN + 1, "sha256:%s", digest + 7);
	m->n++;
	return MF_OK;
}

/* A legacy Modelfile, read as Ollama <= 0.5.4's server read it, less the files on the server: FROM a valid
 * model name is that model; FROM/ADAPTER/DRAFT "@sha256:<hex>" is an uploaded blob; anything else is
 * "invalid model reference: <arg>" (Ollama's text when no such file existed), decided without touching the
 * file system, so the answer tells nothing about the server's files and no server file reaches the store
 * (issue 20, F5). The other commands become the JSON form the current CLI sends, decoded like any other
 * request, so both forms behave the same. */
static int parse_legacy(struct mf_create_request *r, const char *text, size_t len, struct mf_warnings *w,
			struct mf_error *err)
{
	struct mf_modelfile *mf;
	int rc = mf_parse(text, len, &mf, err);
	if (rc != MF_OK) {
		if (err)
			err->http_status = 400;
		return rc;
	}
	struct mf_create_spec spec = {0};
	struct digest_map files = {0}, adapters = {0}, draft_files = {0};
	struct mf_modelfile *rest = mf_modelfile_new();
	if (!rest) {
		mf_modelfile_free(mf);
		return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < mf->n_cmds && rc == MF_OK; i++) {
		const struct mf_command *c = &mf->cmds[i];
		bool is_model = strcmp(c->name, "model") == 0, is_adapter = strcmp(c->name, "adapter") == 0,
		     is_draft = strcmp(c->name, "draft") == 0;
		struct mf_name n;
		mf_name_parse(c->args, &n);
		if (!is_model && !is_adapter && !is_draft) {
			if (mf_modelfile_add(rest, c->name, c->args) != MF_OK)
				rc = mf_error_set(err, MF_ERR_NOMEM, "out of memory");
		} else if (is_model && mf_name_is_valid(&n)) {
			free(spec.from);
			if (!(spec.from = strdup(c->args)))
				rc = mf_error_set(err, MF_ERR_NOMEM, "out of memory");
		} else if (c->args[0] == '@') {
			rc = legacy_blob(is_model ? &files : is_adapter ? &adapters : &draft_files, c->args, err);
		} else {
			rc = mf_error_set_http(err, MF_ERR_INVALID, 400, "invalid model reference: %s", c->args);
		}
	}
	if (rc == MF_OK) {
		/* no FROM/ADAPTER/DRAFT is left in rest: nothing below looks at a file */
		rc = mf_spec_from_modelfile(rest, "/", false, &spec, w, err);
		if (rc != MF_OK && err && err->http_status == 500 && err->code != MF_ERR_NOMEM)
			err->http_status = 400;
	}
	char *json = NULL;
	size_t jlen = 0;
	if (rc == MF_OK) {
		spec.model = strdup("");
		json = spec.model ? mf_spec_to_json(&spec, &jlen, err) : NULL;
		if (!json)
			rc = spec.model && err ? err->code : mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	}
	if (rc == MF_OK) {
		struct ob_json_error jerr;
		r->legacy = ob_json_parse(json, jlen, &jerr);
		if (!r->legacy)
			rc = mf_error_set(err, MF_ERR_NOMEM, "%s", jerr.message);
	}
	if (rc == MF_OK) {
		/* keep the outer request's model/stream/quantize; take the rest from the Modelfile */
		char *model = r->model, *quantize = r->quantize;
		bool stream = r->stream;
		r->model = NULL;
		r->quantize = NULL;
		char **fields[] = {&r->draft_quantize, &r->from, &r->remote_host, &r->template_text, &r->system,
				   &r->renderer, &r->parser, &r->requires};
		for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
			free(*fields[k]);
			*fields[k] = NULL;
		}
		mf_strlist_free(r->licenses, r->n_licenses);
		r->licenses = NULL;
		r->n_licenses = 0;
		dmap_free(&r->files);
		dmap_free(&r->adapters);
		dmap_free(&r->draft_files);
		rc = decode_fields(r, ob_json_root(r->legacy), err);
		free(r->model);
		r->model = model;
		if (quantize) {
			free(r->quantize);
			r->quantize = quantize;
		}
		r->stream = stream;
	}
	if (rc == MF_OK) {
		/* the blobs the Modelfile named (the JSON form carries no blob references of the legacy kind) */
		dmap_free(&r->files);
		dmap_free(&r->adapters);
		dmap_free(&r->draft_files);
		r->files = files;
		r->adapters = adapters;
		r->draft_files = draft_files;
		memset(&files, 0, sizeof files);
		memset(&adapters, 0, sizeof adapters);
		memset(&draft_files, 0, sizeof draft_files);
		dmap_sort(&r->files);
		dmap_sort(&r->adapters);
		dmap_sort(&r->draft_files);
	}
	dmap_free(&files);
	dmap_free(&adapters);
	dmap_free(&draft_files);
	free(json);
	mf_spec_free(&spec);
	mf_modelfile_free(rest);
	mf_modelfile_free(mf);
	return rc;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Layers being assembled */

struct clayer {
	struct mf_layer l; /* owned strings */
	char *status;      /* announced at the end (layer.Status), or NULL */
	bool gguf;         /* a weights layer whose GGUF was read: the fields below are set */
	char arch[128];    /* general.architecture ("unknown" when absent) */
	char kind[64];     /* general.type ("unknown" when absent) */
	uint32_t file_type;
	bool has_file_type;
	uint64_t n_params; /* sum of the tensors' element counts (Ollama's general.parameter_count) */
	bool fp8;          /* has orun's FP8 tensors (an FP8 import carries no general.file_type) */
	char *chat_template;
	char *data;        /* a text layer's bytes (NewLayer), kept to write its blob again if a concurrent
			      delete removed it before the commit; NULL for weights */
	size_t data_len;
};

struct layers {
	struct clayer *v;
	size_t n, cap;
};

struct run {
	struct mf_store *s;
	const struct mf_create_request *r;
	mf_progress_fn fn;
	void *ctx;
	struct mf_warnings *w;
	struct mf_error *err;
	struct mf_config cfg;
	struct layers L;
	const struct mf_cancel *cancel; /* the request's; asked inside the long steps */
	int status; /* the HTTP status of the failure: 400 for what Ollama answers as a bad request; 0 = 500 */
};

/* A failure Ollama reports with HTTP 400. */
static int bad_request(struct run *R, int code, const char *fmt, ...) MF_PRINTF(3, 4);
static int bad_request(struct run *R, int code, const char *fmt, ...)
{
	char msg[MF_ERROR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	R->status = 400;
	return mf_error_set_http(R->err, code, 400, "%s", msg);
}

static void clayer_clear(struct clayer *c)
{
	free(c->l.media_type);
	free(c->l.digest);
	free(c->l.from);
	free(c->l.name);
	free(c->status);
	free(c->chat_template);
	free(c->data);
	memset(c, 0, sizeof *c);
}

static void layers_free(struct layers *L)
{
	for (size_t i = 0; i < L->n; i++)
		clayer_clear(&L->v[i]);
	free(L->v);
	memset(L, 0, sizeof *L);
}

static struct clayer *layers_push(struct layers *L)
{
	if (L->n == L->cap && OB_GROW(L->v, L->cap, L->n + 1, 0) != OB_GROW_OK)
		return NULL;
	struct clayer *c = &L->v[L->n++];
	memset(c, 0, sizeof *c);
	return c;
}

static int oom(struct run *R)
{
	return mf_error_set(R->err, MF_ERR_NOMEM, "out of memory");
}

static int cancelled(struct run *R)
{
	return mf_error_set(R->err, MF_ERR_CANCELLED, "request canceled");
}

/* A GGUF job's failure: cancelled by its progress callback, out of memory, or a bad file. */
static int gguf_failed(struct run *R, const struct gguf_error *ge)
{
	if (ge->code == GGUF_ERR_CANCELLED)
		return cancelled(R);
	return mf_error_set(R->err, ge->code == GGUF_ERR_NOMEM ? MF_ERR_NOMEM : MF_ERR_FORMAT, "%s", ge->msg);
}

static int progress(struct run *R, const char *status, const char *digest, int64_t total, int64_t completed)
{
	if (mf_cancelled(R->cancel))
		return cancelled(R);
	if (!R->fn)
		return MF_OK;
	struct mf_progress p = {status, digest, total, completed};
	if (R->fn(R->ctx, &p) != 0)
		return cancelled(R);
	return MF_OK;
}

static char *strf(const char *fmt, const char *a)
{
	size_t n = strlen(fmt) + strlen(a) + 1;
	char *s = malloc(n);
	if (s)
		snprintf(s, n, fmt, a);
	return s;
}

/* Sets the layer's identity; status is "<prefix> <digest>". */
static int set_layer(struct run *R, struct clayer *c, const char *media, const char *digest, int64_t size,
		     const char *from, const char *name, const char *status_prefix)
{
	c->l.media_type = strdup(media);
	c->l.digest = strdup(digest);
	c->l.size = size;
	c->l.from = from && *from ? strdup(from) : NULL;
	c->l.name = name && *name ? strdup(name) : NULL;
	char *st = NULL;
	if (status_prefix) {
		size_t n = strlen(status_prefix) + strlen(digest) + 2;
		st = malloc(n);
		if (st)
			snprintf(st, n, "%s %s", status_prefix, digest);
	}
	c->status = st;
	if (!c->l.media_type || !c->l.digest || (from && *from && !c->l.from) || (name && *name && !c->l.name) ||
	    (status_prefix && !st))
		return oom(R);
	return MF_OK;
}

/* NewLayer: stores data as a blob and appends a layer announcing "creating new layer" / "using existing
 * layer". */
static int new_layer(struct run *R, const char *media, const void *data, size_t n, struct clayer **out)
{
	char digest[MF_DIGEST_LEN + 1];
	bool created = false;
	int rc = mf_store_put_blob(R->s, data, n, digest, &created, R->err);
	if (rc != MF_OK)
		return rc;
	struct clayer *c = layers_push(&R->L);
	if (!c)
		return oom(R);
	rc = set_layer(R, c, media, digest, (int64_t)n, NULL, NULL, created ? "creating new layer" : "using existing layer");
	if (rc == MF_OK && !(c->data = malloc(n ? n : 1)))
		rc = oom(R);
	if (rc == MF_OK) {
		memcpy(c->data, data, n);
		c->data_len = n;
	}
	if (out)
		*out = c;
	return rc;
}

/* Reads what create needs from a GGUF blob. */
static int read_gguf(struct run *R, const char *path, struct clayer *c, const char *source)
{
	struct gguf_error ge;
	struct gguf_file *f = gguf_open(path, &ge);
	if (!f)
		return mf_error_set(R->err, ge.code == GGUF_ERR_NOMEM ? MF_ERR_NOMEM : MF_ERR_FORMAT, "%s", ge.msg);
	c->gguf = true;
	if (gguf_get_str_buf(f, "general.architecture", c->arch, sizeof c->arch) != GGUF_OK)
		strcpy(c->arch, "unknown");
	if (gguf_get_str_buf(f, "general.type", c->kind, sizeof c->kind) != GGUF_OK)
		strcpy(c->kind, "unknown");
	c->has_file_type = gguf_find_u32(f, "general.file_type", &c->file_type) == GGUF_OK;
	if (!c->has_file_type)
		c->file_type = 0;
	c->n_params = 0;
	c->fp8 = false;
	for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
		c->n_params += gguf_tensor_at(f, i)->n_elements;
		if (gguf_tensor_at(f, i)->type == GGUF_TYPE_FP8_E4M3_B128)
			c->fp8 = true;
	}
	free(c->chat_template);
	c->chat_template = NULL;
	struct gguf_str ct = gguf_get_str(f, "tokenizer.chat_template", (struct gguf_str){NULL, 0});
	int rc = MF_OK;
	if (ct.ptr && ct.len) {
		c->chat_template = strndup(ct.ptr, (size_t)ct.len);
		if (!c->chat_template)
			rc = oom(R);
	}
	char key[192];
	snprintf(key, sizeof key, "%s.split.count", c->arch);
	uint32_t splits = gguf_get_u32(f, "split.count", gguf_get_u32(f, key, 0));
	if (rc == MF_OK && splits > 1)
		rc = mf_error_set(R->err, MF_ERR_INVALID, "split GGUF %s (%u shards) is not supported by orun yet: merge it first",
				  source, splits);
	gguf_close(f);
	return rc;
}

/* The file type create reports: Ollama's name of general.file_type, or "FP8" for orun's FP8 imports. */
static const char *layer_file_type(const struct clayer *c)
{
	if (!c->has_file_type && c->fp8)
		return "FP8";
	return c->has_file_type ? mf_file_type_name(c->file_type) : "unknown";
}

/* isProjectorGGUF */
static bool is_projector(const char *path, const struct clayer *c)
{
	if (strcmp(c->kind, "projector") == 0 || strcmp(c->kind, "mmproj") == 0)
		return true;
	struct gguf_error ge;
	struct gguf_file *f = gguf_open(path, &ge);
	if (!f)
		return false;
	char k1[192], k2[192], k3[192], k4[192];
	snprintf(k1, sizeof k1, "%s.block_count", c->arch);
	snprintf(k2, sizeof k2, "%s.vision.block_count", c->arch);
	snprintf(k3, sizeof k3, "%s.has_vision_encoder", c->arch);
	snprintf(k4, sizeof k4, "%s.has_audio_encoder", c->arch);
	uint32_t bc = gguf_get_u32(f, k1, 0), vbc = gguf_get_u32(f, k2, 0);
	bool r = (bc == 0 && vbc > 0) ||
		 (strcmp(c->arch, "clip") == 0 && bc == 0 && (gguf_get_bool(f, k3, false) || gguf_get_bool(f, k4, false)));
	gguf_close(f);
	return r;
}

static void canonical(const char *in, char out[MF_DIGEST_LEN + 1])
{
	snprintf(out, MF_DIGEST_LEN + 1, "sha256:%s", in + 7);
	for (char *p = out + 7; *p; p++)
		*p = (char)tolower((unsigned char)*p);
}

/* The autodetected template (and its stop parameters) for the layers that carry a chat template. */
static int detect_template(struct run *R, size_t first)
{
	size_t end = R->L.n;
	for (size_t i = first; i < end; i++) {
		if (!R->L.v[i].chat_template)
			continue;
		const struct mf_tpl_named *t = mf_tpl_named_match(R->L.v[i].chat_template, strlen(R->L.v[i].chat_template));
		if (!t)
			continue;
		struct clayer *c;
		int rc = new_layer(R, MF_MEDIA_TEMPLATE, t->text, t->text_len, &c);
		if (rc != MF_OK)
			return rc;
		free(c->status);
		if (!(c->status = strf("using autodetected template %s", t->name)))
			return oom(R);
		if (t->has_params) {
			/* json.NewEncoder(..).Encode(t.Parameters), Parameters being struct{ Stop []string } */
			struct ob_jw jw;
			ob_jw_init(&jw, 0, 0);
			ob_jw_obj(&jw);
			ob_jw_key(&jw, "stop");
			if (!t->stop) {
				ob_jw_null(&jw);
			} else {
				ob_jw_arr(&jw);
				for (size_t k = 0; k < t->n_stop; k++)
					ob_jw_string(&jw, t->stop[k]);
				ob_jw_arr_end(&jw);
			}
			ob_jw_obj_end(&jw);
			size_t n = 0;
			char *js = ob_jw_take_line(&jw, &n);
			if (!js)
				return oom(R);
			rc = new_layer(R, MF_MEDIA_PARAMS, js, n, NULL);
			free(js);
			if (rc != MF_OK)
				return rc;
		}
	}
	return MF_OK;
}

/* Links blob to dir/name, creating the folders name needs. */
static int link_file(struct run *R, const char *dir, const char *name, const char *blob)
{
	char dst[PATH_CAP];
	int k = snprintf(dst, sizeof dst, "%s/%s", dir, name);
	if (k < 0 || (size_t)k >= sizeof dst)
		return mf_error_set(R->err, MF_ERR_LIMIT, "path too long");
	for (char *p = dst + strlen(dir) + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			if (mkdir(dst, 0755) != 0 && errno != EEXIST)
				return mf_error_set(R->err, MF_ERR_IO, "mkdir %s: %s", dst, strerror(errno));
			*p = '/';
		}
	unlink(dst);
	if (symlink(blob, dst) != 0)
		return mf_error_set(R->err, MF_ERR_IO, "symlink %s: %s", dst, strerror(errno));
	return MF_OK;
}

/* The importer's progress: only asks whether to go on (Ollama reports no progress while converting). */
static int on_import(void *ctx, uint64_t done, uint64_t total)
{
	struct run *R = ctx;
	(void)done;
	(void)total;
	return mf_cancelled(R->cancel);
}

/* convertFromSafetensors: the files are linked into a folder inside the store, converted with libgguf's
 * importer (FP8 weights kept as orun's FP8 type), and the GGUF becomes the model layer. */
static int convert_safetensors(struct run *R, const struct digest_map *files, bool adapter, const char *media,
			       bool detect)
{
	if (adapter)
		return mf_error_set(R->err, MF_ERR_INVALID, "converting a safetensors adapter is not supported by orun");
	if (media && strcmp(media, MF_MEDIA_DRAFT) == 0)
		return mf_error_set(R->err, MF_ERR_INVALID, "converting a safetensors draft model is not supported by orun");
	char dir[PATH_CAP];
	int lock;
	int rc = mf_store_temp_dir(R->s, dir, sizeof dir, &lock, R->err);
	if (rc != MF_OK)
		return rc;
	for (size_t i = 0; i < files->n && rc == MF_OK; i++) {
		char blob[PATH_CAP];
		if (!valid_path(files->v[i].name, strlen(files->v[i].name)))
			rc = mf_error_set(R->err, MF_ERR_INVALID, "file path must be relative: %s", files->v[i].name);
		else if ((rc = mf_store_blob_path(R->s, files->v[i].digest, blob, sizeof blob, R->err)) == MF_OK)
			rc = link_file(R, dir, files->v[i].name, blob);
	}
	if (rc == MF_OK)
		rc = progress(R, "converting model", NULL, 0, 0);
	char out[PATH_CAP];
	if (rc == MF_OK && snprintf(out, sizeof out, "%s/fp16", dir) >= (int)sizeof out)
		rc = mf_error_set(R->err, MF_ERR_LIMIT, "path too long");
	if (rc == MF_OK) {
		struct gguf_error ge;
		struct gguf_import_opts io = {.progress = on_import, .progress_ctx = R};
		if (gguf_import_safetensors(dir, out, &io, &ge) != GGUF_OK)
			rc = gguf_failed(R, &ge);
	}
	char digest[MF_DIGEST_LEN + 1];
	uint64_t size = 0;
	bool created = false;
	if (rc == MF_OK)
		rc = mf_store_adopt_file(R->s, out, digest, &size, &created, R->cancel, R->err);
	mf_store_temp_dir_remove(dir, lock);
	if (rc != MF_OK)
		return rc;
	size_t first = R->L.n;
	struct clayer *c = layers_push(&R->L);
	if (!c)
		return oom(R);
	if ((rc = set_layer(R, c, media ? media : MF_MEDIA_MODEL, digest, (int64_t)size, NULL, NULL,
			    created ? "creating new layer" : "using existing layer")) != MF_OK)
		return rc;
	char path[PATH_CAP];
	if ((rc = mf_store_blob_path(R->s, digest, path, sizeof path, R->err)) != MF_OK ||
	    (rc = read_gguf(R, path, &R->L.v[first], "the converted model")) != MF_OK)
		return rc;
	return detect ? detect_template(R, first) : MF_OK;
}

/* convertModelFromFilesWithMediaType */
static int convert_files(struct run *R, const struct digest_map *files, bool adapter, const char *media, bool detect)
{
	bool st = false, gg = false;
	for (size_t i = 0; i < files->n; i++) {
		size_t n = strlen(files->v[i].name);
		if (n >= 12 && strcmp(files->v[i].name + n - 12, ".safetensors") == 0)
			st = true;
		else if (n >= 5 && strcmp(files->v[i].name + n - 5, ".gguf") == 0)
			gg = true;
	}
	if (!st && !gg) {
		/* by content: the GGUF magic in the first bytes of a blob */
		for (size_t i = 0; i < files->n && !gg; i++) {
			char path[PATH_CAP];
			if (mf_store_blob_path(R->s, files->v[i].digest, path, sizeof path, NULL) != MF_OK)
				break;
			FILE *f = fopen(path, "rb");
			unsigned char m[4] = {0};
			if (f) {
				if (fread(m, 1, 4, f) == 4 && (memcmp(m, "GGUF", 4) == 0 || memcmp(m, "FUGG", 4) == 0))
					gg = true;
				fclose(f);
			}
		}
	}
	if (st)
		return convert_safetensors(R, files, adapter, media, detect);
	if (!gg)
		return bad_request(R, MF_ERR_INVALID, "unknown type");
	if (files->n == 0)
		return bad_request(R, MF_ERR_INVALID, "no files provided to convert");
	if (files->n > 1 && adapter)
		return bad_request(R, MF_ERR_INVALID, "only one adapter is currently supported");
	size_t first = R->L.n;
	for (size_t i = 0; i < files->n; i++) {
		int rc = progress(R, "parsing GGUF", NULL, 0, 0);
		if (rc != MF_OK)
			return rc;
		char path[PATH_CAP];
		if ((rc = mf_store_blob_path(R->s, files->v[i].digest, path, sizeof path, R->err)) != MF_OK)
			return rc;
		FILE *f = fopen(path, "rb");
		if (!f)
			return mf_error_set(R->err, errno == ENOENT ? MF_ERR_NOT_FOUND : MF_ERR_IO, "open %s: %s", path,
					    strerror(errno));
		unsigned char m[4] = {0};
		size_t got = fread(m, 1, 4, f);
		fclose(f);
		if (got < 4 || (memcmp(m, "GGUF", 4) != 0 && memcmp(m, "FUGG", 4) != 0))
			return bad_request(R, MF_ERR_INVALID, "supplied file was not in GGUF format");
		struct stat sb;
		if (stat(path, &sb) != 0)
			return mf_error_set(R->err, MF_ERR_IO, "stat %s: %s", path, strerror(errno));
		struct clayer *c = layers_push(&R->L);
		if (!c)
			return oom(R);
		if ((rc = read_gguf(R, path, c, files->v[i].name)) != MF_OK)
			return rc;
		const char *mt = media;
		if (!mt) {
			mt = MF_MEDIA_MODEL;
			if (strcmp(c->kind, "adapter") == 0)
				mt = MF_MEDIA_ADAPTER;
			else if (is_projector(path, c))
				mt = MF_MEDIA_PROJECTOR;
		}
		char digest[MF_DIGEST_LEN + 1];
		canonical(files->v[i].digest, digest);
		if ((rc = set_layer(R, c, mt, digest, sb.st_size, NULL, NULL, "using existing layer")) != MF_OK)
			return rc;
		mf_store_touch_blob(R->s, digest);
	}
	return detect ? detect_template(R, first) : MF_OK;
}

static bool weights_media(const char *mt)
{
	return strcmp(mt, MF_MEDIA_MODEL) == 0 || strcmp(mt, MF_MEDIA_PROJECTOR) == 0 || strcmp(mt, MF_MEDIA_ADAPTER) == 0 ||
	       strcmp(mt, MF_MEDIA_DRAFT) == 0;
}

/* parseFromModel: every layer of the base model, reused by digest, "from" = the base's short name. */
static int from_model(struct run *R, const char *from, size_t from_len)
{
	struct mf_name n, resolved;
	mf_name_parse_n(from, from_len, &n);
	if (!mf_name_is_valid(&n))
		return bad_request(R, MF_ERR_PARSE, "invalid model name");
	int rc = mf_store_resolve_name(R->s, &n, &resolved, R->err);
	if (rc != MF_OK)
		return rc;
	struct mf_manifest *m;
	rc = mf_store_read_manifest(R->s, &resolved, &m, R->err);
	if (rc == MF_ERR_NOT_FOUND) { /* Ollama would pull it (500 "pull model manifest: ..." when the registry has
					 none); orun's create does not pull, so it says what is missing and what to do:
					 404, as /api/show */
		char shown[MF_NAME_STRING_MAX];
		mf_name_display(&resolved, shown);
		R->status = 404;
		return mf_error_set_http(R->err, MF_ERR_NOT_FOUND, 404,
					 "FROM model '%s' not found: it is not in the store; pull it first (`orun pull %s`), "
					 "create it from its GGUF file, or give FROM the path of a GGUF file",
					 shown, shown);
	}
	if (rc != MF_OK)
		return rc;
	char short_name[MF_NAME_STRING_MAX];
	mf_name_display(&resolved, short_name);
	for (size_t i = 0; i < m->n_layers && rc == MF_OK; i++) {
		const struct mf_layer *src = &m->layers[i];
		char path[PATH_CAP];
		struct stat sb;
		if (!src->digest || (rc = mf_store_blob_path(R->s, src->digest, path, sizeof path, R->err)) != MF_OK) {
			rc = src->digest ? rc : mf_error_set(R->err, MF_ERR_FORMAT, "creating new layer from layer with empty digest");
			break;
		}
		if (stat(path, &sb) != 0) {
			rc = mf_error_set(R->err, MF_ERR_NOT_FOUND, "stat %s: %s", path, strerror(errno));
			break;
		}
		mf_store_touch_blob(R->s, src->digest);
		struct clayer *c = layers_push(&R->L);
		if (!c) {
			rc = oom(R);
			break;
		}
		const char *mt = src->media_type ? src->media_type : "";
		if ((rc = set_layer(R, c, mt, src->digest, sb.st_size, short_name, src->name, "using existing layer")) != MF_OK)
			break;
		if (weights_media(mt))
			rc = read_gguf(R, path, c, short_name);
	}
	/* the base config's renderer, parser, requires, model_format and capabilities are inherited */
	if (rc == MF_OK && m->config.digest && *m->config.digest) {
		char *data;
		size_t len;
		struct mf_config base;
		if (mf_store_read_blob(R->s, m->config.digest, MF_MAX_CONFIG_SIZE, &data, &len, NULL) == MF_OK) {
			if (mf_config_parse(data, len, &base, NULL) == MF_OK) {
				if (!*R->cfg.renderer && mf_config_set(&R->cfg.renderer, base.renderer) != MF_OK)
					rc = oom(R);
				if (!*R->cfg.parser && mf_config_set(&R->cfg.parser, base.parser) != MF_OK)
					rc = oom(R);
				if (!*R->cfg.requires && mf_config_set(&R->cfg.requires, base.requires) != MF_OK)
					rc = oom(R);
				if (!*R->cfg.model_format && mf_config_set(&R->cfg.model_format, base.model_format) != MF_OK)
					rc = oom(R);
				if (!R->cfg.n_capabilities) {
					R->cfg.capabilities = base.capabilities;
					R->cfg.n_capabilities = base.n_capabilities;
					base.capabilities = NULL;
					base.n_capabilities = 0;
				}
			}
			mf_config_free(&base);
			free(data);
		}
	}
	mf_manifest_free(m);
	return rc;
}

/* ---------------------------------------------------------------------------------------------------- */
/* createModel */

static bool digest_in_layers(const struct layers *L, const char *digest)
{
	for (size_t i = 0; i < L->n; i++)
		if (L->v[i].l.digest && strcmp(L->v[i].l.digest, digest) == 0)
			return true;
	return false;
}

/* removeLayer: drops the layers of a media type; their blobs go unless something else uses them. */
static int remove_layers(struct run *R, const char *media)
{
	size_t k = 0;
	char **gone = NULL;
	size_t n_gone = 0;
	for (size_t i = 0; i < R->L.n; i++) {
		if (R->L.v[i].l.media_type && strcmp(R->L.v[i].l.media_type, media) == 0) {
			if (mf_strlist_add(&gone, &n_gone, R->L.v[i].l.digest) != MF_OK) {
				mf_strlist_free(gone, n_gone);
				return oom(R);
			}
			clayer_clear(&R->L.v[i]);
			continue;
		}
		R->L.v[k++] = R->L.v[i];
	}
	R->L.n = k;
	int rc = MF_OK;
	for (size_t i = 0; i < n_gone && rc == MF_OK; i++)
		if (!digest_in_layers(&R->L, gone[i]))
			rc = mf_store_remove_blob_if_unused(R->s, gone[i], R->err);
	mf_strlist_free(gone, n_gone);
	return rc;
}

struct quant_progress {
	struct run *R;
	const char *status;
	int64_t size;
	bool cancelled;
};

static int on_quantize(void *ctx, uint64_t done, uint64_t total)
{
	struct quant_progress *q = ctx;
	if (!q->cancelled && mf_cancelled(q->R->cancel))
		q->cancelled = true;
	if (q->cancelled || !total) /* total 0: a poll inside a tensor */
		return q->cancelled;
	float f = (float)done / (float)total;
	if (progress(q->R, q->status, "0000000000000000000", q->size, (int64_t)(f * (float)q->size)) != MF_OK)
		q->cancelled = true;
	return q->cancelled;
}

/* quantizeLayer: the layer's GGUF requantized by libgguf into a new blob that replaces the layer. */
static int quantize_layer(struct run *R, size_t idx, const char *type_name, uint32_t want)
{
	(void)want;
	enum gguf_qmix mix;
	if (gguf_qmix_from_name(type_name, &mix) != GGUF_OK)
		return mf_error_set(R->err, MF_ERR_INVALID, "quantizing to %s is not supported by orun (q8_0 and q4_K_M are)",
				    type_name);
	char status[160];
	snprintf(status, sizeof status, "quantizing %s model to %s", layer_file_type(&R->L.v[idx]), type_name);
	char in[PATH_CAP], dir[PATH_CAP], out[PATH_CAP];
	int lock = -1;
	int rc = mf_store_blob_path(R->s, R->L.v[idx].l.digest, in, sizeof in, R->err);
	if (rc == MF_OK)
		rc = mf_store_temp_dir(R->s, dir, sizeof dir, &lock, R->err);
	if (rc != MF_OK)
		return rc;
	if (snprintf(out, sizeof out, "%s/model.gguf", dir) >= (int)sizeof out)
		rc = mf_error_set(R->err, MF_ERR_LIMIT, "path too long");
	struct quant_progress qp = {R, status, R->L.v[idx].l.size, false};
	struct gguf_error ge;
	if (rc == MF_OK && gguf_quantize_file(in, out, mix, on_quantize, &qp, &ge) != GGUF_OK)
		rc = gguf_failed(R, &ge);
	if (rc == MF_OK)
		rc = progress(R, "verifying conversion", NULL, 0, 0);
	char digest[MF_DIGEST_LEN + 1];
	uint64_t size;
	bool created;
	if (rc == MF_OK)
		rc = mf_store_adopt_file(R->s, out, digest, &size, &created, R->cancel, R->err);
	mf_store_temp_dir_remove(dir, lock);
	if (rc != MF_OK)
		return rc;
	struct clayer *c = &R->L.v[idx];
	char *media = strdup(c->l.media_type);
	if (!media)
		return oom(R);
	clayer_clear(c);
	rc = set_layer(R, c, media, digest, (int64_t)size, NULL, NULL, created ? "creating new layer" : "using existing layer");
	free(media);
	char path[PATH_CAP];
	if (rc == MF_OK && (rc = mf_store_blob_path(R->s, digest, path, sizeof path, R->err)) == MF_OK)
		rc = read_gguf(R, path, c, "the quantized model");
	return rc;
}

static int str_upper(const char *s, char *out, size_t cap)
{
	size_t n = strlen(s);
	if (n >= cap)
		return -1;
	for (size_t i = 0; i <= n; i++)
		out[i] = (char)toupper((unsigned char)s[i]);
	return 0;
}

/* Go's map merge of the parameters: the request's keys win, then each params layer's (first wins). */
struct pmember {
	const struct ob_json *key, *val;
	size_t order;
};

static int cmp_pmember(const void *a, const void *b)
{
	const struct pmember *x = a, *y = b;
	int c = ob_json_str_cmp(x->key, y->key);
	if (c)
		return c;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int set_parameters(struct run *R)
{
	struct ob_json_doc **docs = NULL;
	size_t n_docs = 0;
	int rc = MF_OK;
	for (size_t i = 0; i < R->L.n && rc == MF_OK; i++) {
		if (!R->L.v[i].l.media_type || strcmp(R->L.v[i].l.media_type, MF_MEDIA_PARAMS) != 0)
			continue;
		char *data;
		size_t len;
		if ((rc = mf_store_read_blob(R->s, R->L.v[i].l.digest, MF_MAX_TEXT_LAYER, &data, &len, R->err)) != MF_OK)
			break;
		struct ob_json_error jerr;
		struct ob_json_doc *d = ob_json_parse(data, len, &jerr);
		free(data);
		if (!d) {
			rc = mf_error_set(R->err, MF_ERR_FORMAT, "%s", jerr.message);
			break;
		}
		struct ob_json_doc **nd = realloc(docs, (n_docs + 1) * sizeof *nd);
		if (!nd) {
			ob_json_free(d);
			rc = oom(R);
			break;
		}
		docs = nd;
		docs[n_docs++] = d;
		if (ob_json_root(d)->type != OB_JSON_OBJECT && ob_json_root(d)->type != OB_JSON_NULL)
			rc = mf_error_set(R->err, MF_ERR_FORMAT, "json: cannot unmarshal %s into Go value of type map[string]interface {}",
					  ob_json_type_name(ob_json_root(d)));
	}
	/* members in priority order: the request first (its last duplicate wins), then each layer */
	struct pmember *m = NULL;
	size_t n = 0, cap = 0, order = 0;
	const struct ob_json *sources[1 + 64];
	size_t n_src = 0;
	if (R->r->parameters)
		sources[n_src++] = R->r->parameters;
	for (size_t i = 0; i < n_docs && n_src < sizeof sources / sizeof sources[0]; i++)
		if (ob_json_root(docs[i])->type == OB_JSON_OBJECT)
			sources[n_src++] = ob_json_root(docs[i]);
	for (size_t s = 0; s < n_src && rc == MF_OK; s++) {
		/* within one object the last duplicate wins: give later members an earlier order */
		size_t count = sources[s]->count, j = 0;
		OB_JSON_FOREACH_MEMBER(k, v, sources[s])
		{
			if (n == cap && OB_GROW(m, cap, n + 1, 0) != OB_GROW_OK) {
				rc = oom(R);
				break;
			}
			m[n].key = k;
			m[n].val = v;
			m[n].order = order + (count - 1 - j);
			n++;
			j++;
		}
		order += count;
	}
	if (rc == MF_OK && n) {
		qsort(m, n, sizeof *m, cmp_pmember);
		struct ob_jw w;
		ob_jw_init(&w, 0, 0);
		ob_jw_obj(&w);
		for (size_t i = 0; i < n && rc == MF_OK; i++) {
			if (i > 0 && m[i].key->len == m[i - 1].key->len && memcmp(m[i].key->str, m[i - 1].key->str, m[i].key->len) == 0)
				continue; /* a higher-priority member with this key came first */
			ob_jw_keyn(&w, m[i].key->str, m[i].key->len);
			if (!ob_jw_go_value(&w, m[i].val))
				rc = mf_error_set(R->err, MF_ERR_INVALID, "json: unsupported value in parameter %.*s", (int)m[i].key->len,
						  m[i].key->str);
		}
		ob_jw_obj_end(&w);
		size_t len = 0;
		char *js = rc == MF_OK ? ob_jw_take_line(&w, &len) : (ob_jw_free(&w), NULL);
		if (rc == MF_OK && !js)
			rc = oom(R);
		if (rc == MF_OK)
			rc = remove_layers(R, MF_MEDIA_PARAMS);
		if (rc == MF_OK)
			rc = new_layer(R, MF_MEDIA_PARAMS, js, len, NULL);
		free(js);
	}
	free(m);
	for (size_t i = 0; i < n_docs; i++)
		ob_json_free(docs[i]);
	free(docs);
	return rc;
}

/* json.Encoder of []api.Message (field order and omitempty of the Go struct). */
static int set_messages(struct run *R)
{
	const struct ob_json *a = R->r->messages;
	if (!a || a->count == 0)
		return MF_OK;
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_arr(&w);
	OB_JSON_FOREACH(m, a)
	{
		if (m->type != OB_JSON_OBJECT) {
			ob_jw_obj(&w);
			ob_jw_key(&w, "role");
			ob_jw_string(&w, "");
			ob_jw_key(&w, "content");
			ob_jw_string(&w, "");
			ob_jw_obj_end(&w);
			continue;
		}
		const struct ob_json *role = ob_json_get_fold(m, "role"), *content = ob_json_get_fold(m, "content"),
				     *thinking = ob_json_get_fold(m, "thinking"), *images = ob_json_get_fold(m, "images"),
				     *calls = ob_json_get_fold(m, "tool_calls"), *tname = ob_json_get_fold(m, "tool_name"),
				     *tid = ob_json_get_fold(m, "tool_call_id");
		ob_jw_obj(&w);
		ob_jw_key(&w, "role");
		if (role && role->type == OB_JSON_STRING) {
			char *lower = strndup(role->str, role->len);
			if (!lower) {
				ob_jw_free(&w);
				return oom(R);
			}
			for (char *p = lower; *p; p++)
				*p = (char)tolower((unsigned char)*p);
			ob_jw_stringn(&w, lower, role->len);
			free(lower);
		} else {
			ob_jw_string(&w, "");
		}
		ob_jw_key(&w, "content");
		if (content && content->type == OB_JSON_STRING)
			ob_jw_stringn(&w, content->str, content->len);
		else
			ob_jw_string(&w, "");
		if (thinking && thinking->type == OB_JSON_STRING && thinking->len) {
			ob_jw_key(&w, "thinking");
			ob_jw_stringn(&w, thinking->str, thinking->len);
		}
		if (images && images->type == OB_JSON_ARRAY && images->count) {
			ob_jw_key(&w, "images");
			ob_jw_value(&w, images, false);
		}
		if (calls && calls->type == OB_JSON_ARRAY && calls->count) {
			ob_jw_key(&w, "tool_calls");
			ob_jw_arr(&w);
			OB_JSON_FOREACH(c, calls)
			{
				const struct ob_json *id = c->type == OB_JSON_OBJECT ? ob_json_get_fold(c, "id") : NULL;
				const struct ob_json *fnc = c->type == OB_JSON_OBJECT ? ob_json_get_fold(c, "function") : NULL;
				ob_jw_obj(&w);
				if (id && id->type == OB_JSON_STRING && id->len) {
					ob_jw_key(&w, "id");
					ob_jw_stringn(&w, id->str, id->len);
				}
				ob_jw_key(&w, "function");
				ob_jw_obj(&w);
				const struct ob_json *idx = fnc && fnc->type == OB_JSON_OBJECT ? ob_json_get_fold(fnc, "index") : NULL;
				const struct ob_json *nm = fnc && fnc->type == OB_JSON_OBJECT ? ob_json_get_fold(fnc, "name") : NULL;
				const struct ob_json *args = fnc && fnc->type == OB_JSON_OBJECT ? ob_json_get_fold(fnc, "arguments") : NULL;
				int64_t index = 0;
				if (idx)
					(void)ob_json_int(idx, &index);
				ob_jw_key(&w, "index");
				ob_jw_int(&w, index);
				ob_jw_key(&w, "name");
				if (nm && nm->type == OB_JSON_STRING)
					ob_jw_stringn(&w, nm->str, nm->len);
				else
					ob_jw_string(&w, "");
				ob_jw_key(&w, "arguments");
				if (args && args->type == OB_JSON_OBJECT)
					ob_jw_value(&w, args, false); /* HEAD keeps the arguments' key order */
				else {
					ob_jw_obj(&w);
					ob_jw_obj_end(&w);
				}
				ob_jw_obj_end(&w);
				ob_jw_obj_end(&w);
			}
			ob_jw_arr_end(&w);
		}
		if (tname && tname->type == OB_JSON_STRING && tname->len) {
			ob_jw_key(&w, "tool_name");
			ob_jw_stringn(&w, tname->str, tname->len);
		}
		if (tid && tid->type == OB_JSON_STRING && tid->len) {
			ob_jw_key(&w, "tool_call_id");
			ob_jw_stringn(&w, tid->str, tid->len);
		}
		ob_jw_obj_end(&w);
	}
	ob_jw_arr_end(&w);
	size_t len = 0;
	char *js = ob_jw_take_line(&w, &len);
	if (!js)
		return oom(R);
	int rc = remove_layers(R, MF_MEDIA_MESSAGES);
	if (rc == MF_OK)
		rc = new_layer(R, MF_MEDIA_MESSAGES, js, len, NULL);
	free(js);
	return rc;
}

/* The commit, under the store lock (issue 20, F7): a delete may have removed a blob this create reuses
 * (the model it shares layers with was deleted meanwhile) after the create looked at it. Every blob the
 * manifest will name is checked here, where no delete can run: a text layer is written again, a missing
 * weights blob fails the create, and only then is the config written and the manifest renamed into place. */
static int commit(struct run *R, const struct mf_name *name)
{
	size_t clen;
	char *cjs = mf_config_encode(&R->cfg, &clen);
	if (!cjs)
		return oom(R);
	struct mf_layer *ls = R->L.n ? calloc(R->L.n, sizeof *ls) : NULL;
	if (R->L.n && !ls) {
		free(cjs);
		return oom(R);
	}
	int lock;
	int rc = mf_store_lock(R->s, R->cancel, &lock, R->err);
	for (size_t i = 0; i < R->L.n && rc == MF_OK; i++) {
		const struct clayer *c = &R->L.v[i];
		ls[i] = c->l;
		if (mf_store_blob_exists(R->s, c->l.digest))
			continue;
		char again[MF_DIGEST_LEN + 1];
		if (!c->data)
			rc = mf_error_set(R->err, MF_ERR_NOT_FOUND,
					  "blob %s was removed while the model was being created (its model was "
					  "deleted meanwhile); create it again",
					  c->l.digest);
		else if ((rc = mf_store_put_blob(R->s, c->data, c->data_len, again, NULL, R->err)) == MF_OK &&
			 strcmp(again, c->l.digest) != 0)
			rc = mf_error_set(R->err, MF_ERR_DIGEST, "layer %s written again as %s", c->l.digest, again);
	}
	char cdigest[MF_DIGEST_LEN + 1];
	if (rc == MF_OK)
		rc = mf_store_put_blob(R->s, cjs, clen, cdigest, NULL, R->err);
	struct mf_layer config = {MF_MEDIA_CONFIG, cdigest, (int64_t)clen, NULL, NULL};
	if (rc == MF_OK)
		rc = mf_store_write_manifest(R->s, name, &config, ls, R->L.n, R->err);
	mf_store_unlock(lock);
	free(ls);
	free(cjs);
	return rc;
}

static int create_model(struct run *R, const struct mf_name *name)
{
	const struct mf_create_request *r = R->r;
	int rc = MF_OK;
	for (size_t i = 0; i < R->L.n && rc == MF_OK; i++) {
		struct clayer *c = &R->L.v[i];
		if (!c->gguf)
			continue;
		const char *mt = c->l.media_type;
		char quant[64] = "";
		if (strcmp(mt, MF_MEDIA_MODEL) == 0 && r->quantize && *r->quantize)
			str_upper(r->quantize, quant, sizeof quant);
		else if (strcmp(mt, MF_MEDIA_DRAFT) == 0 && r->draft_quantize && *r->draft_quantize)
			str_upper(r->draft_quantize, quant, sizeof quant);
		if (quant[0]) {
			uint32_t want;
			if (!mf_parse_file_type(quant, &want))
				return mf_error_set(R->err, MF_ERR_INVALID,
						    "unsupported quantization type %s - supported types are F32, F16, Q4_K_S, Q4_K_M, Q8_0",
						    quant);
			/* an F32 file (file_type 0) counts as F32 here, where Ollama reads it as unknown; orun's FP8 too */
			uint32_t ft = c->file_type;
			bool source_ok = ft == 1 || ft == 32 || (ft == 0 && c->has_file_type) || (!c->has_file_type && c->fp8);
			if (strcmp(mt, MF_MEDIA_DRAFT) == 0 && !source_ok)
				return mf_error_set(R->err, MF_ERR_INVALID,
						    "draft quantization requires an unquantized draft model, got %s",
						    mf_file_type_name(ft));
			if (!source_ok)
				return mf_error_set(R->err, MF_ERR_INVALID, "quantization is only supported for F16, BF16 and F32 models");
			if ((ft != want || !c->has_file_type) && (rc = quantize_layer(R, i, quant, want)) != MF_OK)
				return rc;
			c = &R->L.v[i];
			mt = c->l.media_type;
		}
		if (strcmp(mt, MF_MEDIA_MODEL) == 0) {
			char num[32];
			if ((!*R->cfg.model_format && mf_config_set(&R->cfg.model_format, "gguf") != MF_OK) ||
			    (!*R->cfg.model_family && mf_config_set(&R->cfg.model_family, c->arch) != MF_OK) ||
			    (!*R->cfg.model_type && mf_config_set(&R->cfg.model_type, mf_human_number(c->n_params, num)) != MF_OK) ||
			    (!*R->cfg.file_type && mf_config_set(&R->cfg.file_type, layer_file_type(c)) != MF_OK) ||
			    mf_strlist_add(&R->cfg.model_families, &R->cfg.n_model_families, c->arch) != MF_OK)
				return oom(R);
		} else if (strcmp(mt, MF_MEDIA_DRAFT) == 0) {
			R->cfg.has_draft = true;
			if (mf_config_set(&R->cfg.draft_model_format, "gguf") != MF_OK ||
			    mf_config_set(&R->cfg.draft_architecture, c->arch) != MF_OK)
				return oom(R);
		}
	}

	if (r->template_text && *r->template_text) {
		if ((rc = remove_layers(R, MF_MEDIA_TEMPLATE)) != MF_OK)
			return rc;
		struct mf_tpl *t = NULL;
		struct mf_tpl_error te;
		int trc = mf_tpl_parse(r->template_text, strlen(r->template_text), &t, &te);
		mf_tpl_free(t);
		if (trc != MF_TPL_OK)
			return trc == MF_TPL_ERR_NOMEM ? mf_error_set(R->err, MF_ERR_NOMEM, "template error: %s", te.msg)
						       : bad_request(R, MF_ERR_INVALID, "template error: %s", te.msg);
		if ((rc = new_layer(R, MF_MEDIA_TEMPLATE, r->template_text, strlen(r->template_text), NULL)) != MF_OK)
			return rc;
	}
	if (r->system && *r->system) {
		if ((rc = remove_layers(R, MF_MEDIA_SYSTEM)) != MF_OK ||
		    (rc = new_layer(R, MF_MEDIA_SYSTEM, r->system, strlen(r->system), NULL)) != MF_OK)
			return rc;
	}
	for (size_t i = 0; i < r->n_licenses; i++)
		if ((rc = new_layer(R, MF_MEDIA_LICENSE, r->licenses[i], strlen(r->licenses[i]), NULL)) != MF_OK)
			return rc;
	if ((rc = set_parameters(R)) != MF_OK || (rc = set_messages(R)) != MF_OK)
		return rc;

	for (size_t i = 0; i < R->L.n; i++)
		if (R->L.v[i].status && (rc = progress(R, R->L.v[i].status, NULL, 0, 0)) != MF_OK)
			return rc;
	if ((rc = progress(R, "writing manifest", NULL, 0, 0)) != MF_OK)
		return rc;
	return commit(R, name);
}

int mf_create_run(struct mf_store *s, const struct mf_create_request *r, mf_progress_fn fn, void *ctx,
		  struct mf_warnings *w, struct mf_error *err)
{
	struct run R = {.s = s, .r = r, .fn = fn, .ctx = ctx, .w = w, .err = err, .cancel = &r->cancel};
	if (mf_config_init(&R.cfg) != MF_OK)
		return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	int rc = MF_OK;
	if (mf_config_set(&R.cfg.os, "linux") != MF_OK || mf_config_set(&R.cfg.architecture, "amd64") != MF_OK ||
	    mf_config_set(&R.cfg.renderer, r->renderer) != MF_OK || mf_config_set(&R.cfg.parser, r->parser) != MF_OK ||
	    mf_config_set(&R.cfg.requires, r->requires) != MF_OK) {
		rc = oom(&R);
		goto out;
	}
	struct mf_name n, name;
	mf_name_parse_n(r->model ? r->model : "", r->model_len, &n);
	if (!mf_name_is_valid(&n)) {
		rc = bad_request(&R, MF_ERR_PARSE, "invalid model name");
		goto out;
	}
	if ((rc = mf_store_resolve_name(s, &n, &name, err)) != MF_OK)
		goto out;
	struct mf_manifest *old = NULL;
	if (mf_store_read_manifest(s, &name, &old, NULL) != MF_OK)
		old = NULL;

	if (rc == MF_OK) {
		if (r->from_len) {
			if (r->remote_host && *r->remote_host)
				rc = bad_request(&R, MF_ERR_INVALID, "remote models are not supported by orun");
			else
				rc = from_model(&R, r->from, r->from_len);
		} else if (r->files.n) {
			rc = convert_files(&R, &r->files, false, NULL, true);
		} else {
			rc = bad_request(&R, MF_ERR_INVALID, "neither 'from' or 'files' was specified");
		}
	}
	if (rc == MF_OK && r->draft_files.n)
		rc = convert_files(&R, &r->draft_files, false, MF_MEDIA_DRAFT, false);
	if (rc == MF_OK && r->adapters.n)
		rc = convert_files(&R, &r->adapters, true, NULL, true);
	if (rc == MF_OK)
		rc = create_model(&R, &name);
	if (rc == MF_OK && old && !mf_env_bool("OLLAMA_NOPRUNE"))
		rc = mf_store_remove_unused_layers(s, old, err);
	mf_manifest_free(old);
	if (rc == MF_OK)
		rc = progress(&R, "success", NULL, 0, 0);
out:
	if (rc != MF_OK && err)
		err->http_status = R.status ? R.status : 500;
	layers_free(&R.L);
	mf_config_free(&R.cfg);
	return rc;
}
