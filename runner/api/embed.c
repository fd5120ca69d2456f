/* runner/api/embed.c — /api/embed, /api/embeddings and /v1/embeddings.
 *
 * A model embeds when its GGUF has <arch>.pooling_type (Ollama's embedding capability); others get a clear
 * 400. The runner is a single-sequence backend; each input is tokenized (BOS/EOS as the vocabulary asks),
 * truncated to the context unless truncate is false, pooled as the GGUF says (mean, cls, last). /api/embed
 * and /v1/embeddings L2-normalize (and cut to `dimensions`, normalizing again); /api/embeddings does not.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "modelfile/name.h"
#include "modelfile/params.h"
#include "runner/api/api.h"
#include "runner/api/decode.h"
#include "runner/api/stored_model.h"
#include "runner/tokenizer/tokenizer.h"

enum embed_api { EMB_EMBED, EMB_EMBEDDINGS, EMB_OPENAI };

struct embed_out {
	float **vecs;
	int *dims;
	size_t n;
	int64_t prompt_tokens;
	int64_t t_loaded;
};

static void embed_out_free(struct embed_out *o)
{
	for (size_t i = 0; i < o->n; i++)
		free(o->vecs[i]);
	free(o->vecs);
	free(o->dims);
}

static void respond(struct rn_http_req *r, enum embed_api api, int status, const char *msg)
{
	if (api == EMB_OPENAI)
		rn_oai_respond_error(r, status, msg);
	else
		rn_http_respond_error(r, status, msg);
}

/* normalize(): L2 with a 1e-12 floor; NaN/Inf fail. */
static int normalize(float *v, int n)
{
	float sum = 0;
	for (int i = 0; i < n; i++) {
		if (isnan(v[i]) || isinf(v[i]))
			return -1;
		sum += v[i] * v[i];
	}
	double s = sqrt((double)sum);
	float norm = (float)(1.0 / (s > 1e-12 ? s : 1e-12));
	for (int i = 0; i < n; i++)
		v[i] *= norm;
	return 0;
}

/* Loads the model and embeds every input. Answers the request itself on failure and returns -1. */
static int embed_inputs(struct rn_http_req *r, enum embed_api api, const char *model, const char *const *inputs,
			size_t n_inputs, bool truncate, const struct ob_json *opts_obj, int64_t keep_alive,
			struct embed_out *out)
{
	struct rn_api *s = rn_api_of(r);
	memset(out, 0, sizeof *out);
	struct mf_name nm;
	mf_name_parse(model, &nm);
	if (!mf_name_is_valid(&nm)) {
		if (!*model && api == EMB_EMBEDDINGS)
			respond(r, api, 400, "model is required");
		else if (!*model)
			respond(r, api, 404, "model '' not found");
		else
			respond(r, api, 400, "invalid model name");
		return -1;
	}
	int st;
	char err[1024];
	struct rn_srv_model *sm = rn_srv_model_load(s->store, model, &st, err, sizeof err);
	if (!sm) {
		if (st == 404) {
			char m[600];
			snprintf(m, sizeof m, "model \"%s\" not found, try pulling it first", model);
			respond(r, api, 404, m);
		} else
			respond(r, api, st, err);
		return -1;
	}
	enum rn_cap want = RN_CAP_EMBEDDING;
	if (rn_srv_model_check(sm, &want, 1, err, sizeof err) || !sm->m->model_path) {
		respond(r, api, 400, err);
		rn_srv_model_free(sm);
		return -1;
	}
	struct mf_options o;
	mf_options_init(&o);
	struct mf_warnings warns = {0};
	struct mf_error me = {0};
	if ((sm->m->params && mf_options_apply_json(&o, ob_json_root(sm->m->params), &warns, &me) != MF_OK) ||
	    (opts_obj && mf_options_apply_json(&o, opts_obj, &warns, &me) != MF_OK)) {
		respond(r, api, me.http_status ? me.http_status : 500, me.msg);
		mf_warnings_free(&warns);
		mf_options_free(&o);
		rn_srv_model_free(sm);
		return -1;
	}
	mf_warnings_free(&warns);
	/* what the options ask; the scheduler applies the defaults (for embedding models num_batch is min(2048, num_ctx):
	 * a whole input is evaluated at once) */
	struct rn_load_params lo;
	rn_load_params_from_options(&lo, &o);
	mf_options_free(&o);
	struct ob_jw dw;
	ob_jw_init(&dw, 0, 0);
	rn_srv_model_write_details(sm, &dw, false, false);
	size_t dn;
	char *details = ob_jw_take(&dw, &dn);
	ob_jw_free(&dw);
	struct rn_sched_model smod = {
		.model_path = sm->m->model_path,
		.name = sm->m->short_name,
		.digest = sm->m->manifest ? sm->m->manifest->digest : "",
		.details_json = details,
		.embedding = true,
	};
	struct rn_sched_error se = {0};
	struct rn_runner *runner = rn_sched_acquire(s->sched, &smod, &lo, keep_alive, rn_api_req_gone, r, &se);
	free(details);
	if (!runner) {
		respond(r, api, se.status, se.msg);
		rn_srv_model_free(sm);
		return -1;
	}
	out->t_loaded = rn_http_now_ns();
	int rc = 0;
	out->vecs = calloc(n_inputs ? n_inputs : 1, sizeof *out->vecs);
	out->dims = calloc(n_inputs ? n_inputs : 1, sizeof *out->dims);
	if (!out->vecs || !out->dims) {
		respond(r, api, 500, "out of memory");
		rc = -1;
	}
	for (size_t i = 0; rc == 0 && i < n_inputs; i++) {
		int32_t *ids = NULL;
		size_t n = 0;
		struct rn_tok_error te = {0};
		if (rn_tok_encode_alloc(rn_runner_tok(runner), inputs[i], strlen(inputs[i]), true, true, &ids, &n, &te) !=
		    RN_TOK_OK) {
			respond(r, api, 500, te.msg);
			rc = -1;
			break;
		}
		int ctx = rn_runner_n_ctx(runner);
		if (n > (size_t)ctx) {
			if (!truncate) {
				free(ids);
				respond(r, api, 400, "the input length exceeds the context length");
				rc = -1;
				break;
			}
			n = (size_t)ctx;
		}
		int dim = 0;
		float *v = NULL;
		if (n > 0 && rn_runner_embed(s->sched, runner, ids, n, &v, &dim, rn_api_req_gone, r, &se) < 0) {
			free(ids);
			respond(r, api, se.status, se.msg);
			rc = -1;
			break;
		}
		free(ids);
		out->vecs[out->n] = v;
		out->dims[out->n] = dim;
		out->n++;
		out->prompt_tokens += (int64_t)n;
	}
	if (rc == 0)
		rn_metrics_tokens(s->metrics, model, (uint64_t)out->prompt_tokens, 0);
	rn_sched_release(s->sched, runner);
	rn_srv_model_free(sm);
	if (rc < 0)
		embed_out_free(out);
	return rc;
}

/* Decodes `input` (string or []string; "" counts as no input for /api/embed). */
static int decode_input(const struct ob_json *in, const char ***out, size_t *n, bool empty_string_is_input)
{
	*out = NULL;
	*n = 0;
	if (!in || in->type == OB_JSON_NULL)
		return 0;
	if (in->type == OB_JSON_STRING) {
		if (in->len == 0 && !empty_string_is_input)
			return 0;
		*out = malloc(sizeof **out);
		if (!*out)
			return -2;
		(*out)[0] = in->str;
		*n = 1;
		return 0;
	}
	if (in->type != OB_JSON_ARRAY)
		return -1;
	*out = calloc(in->count ? in->count : 1, sizeof **out);
	if (!*out)
		return -2;
	OB_JSON_FOREACH(e, in)
	{
		if (e->type != OB_JSON_STRING) {
			free(*out);
			*out = NULL;
			return -1;
		}
		(*out)[(*n)++] = e->str;
	}
	return 0;
}

static int64_t keep_alive_of(const struct ob_json *root, char *err, size_t n, bool *bad)
{
	*bad = false;
	const struct ob_json *v = rn_dec_get(root, "keep_alive");
	if (!v)
		return RN_KEEP_ALIVE_UNSET;
	if (v->type == OB_JSON_NUMBER)
		return v->number < 0 ? INT64_MAX : (v->number * 1e9 >= 9.2e18 ? INT64_MAX : (int64_t)(v->number * 1e9));
	if (v->type == OB_JSON_STRING) {
		int64_t ns;
		if (rn_go_parse_duration(v->str, &ns, err, n) < 0) {
			*bad = true;
			return 0;
		}
		return ns < 0 ? INT64_MAX : ns;
	}
	snprintf(err, n, "Unsupported type: '%s'", v->type == OB_JSON_BOOL ? "bool" : v->type == OB_JSON_ARRAY ? "[]interface {}" : "map[string]interface {}");
	*bad = true;
	return 0;
}

static void write_vec32(struct ob_jw *w, const float *v, int n)
{
	ob_jw_arr(w);
	for (int i = 0; i < n; i++)
		ob_jw_float32(w, v[i]);
	ob_jw_arr_end(w);
}

static void embed_common(struct rn_http_req *r, enum embed_api api)
{
	const char *gs = api == EMB_EMBEDDINGS ? "EmbeddingRequest" : "EmbedRequest";
	struct rn_dec d;
	const struct ob_json *root;
	struct ob_json_doc *doc =
		rn_api_decode(r, &d, gs, &root, api == EMB_OPENAI ? rn_oai_respond_error : rn_api_respond_error);
	if (!doc)
		return;
	int64_t t0 = rn_http_req_start_ns(r);
	const char *model = "", *prompt = "", *encoding = "";
	bool truncate = true;
	int64_t dims = 0;
	size_t model_len = 0;
	rn_dec_string(&d, root, "model", &model, &model_len);
	if (api == EMB_EMBEDDINGS)
		rn_dec_string(&d, root, "prompt", &prompt, NULL);
	rn_dec_bool(&d, root, "truncate", &truncate);
	rn_dec_int(&d, root, "dimensions", &dims);
	if (api == EMB_OPENAI)
		rn_dec_string(&d, root, "encoding_format", &encoding, NULL);
	const struct ob_json *opts = api == EMB_OPENAI ? NULL : rn_dec_object(&d, root, "options", "map[string]interface {}");
	if (d.failed || memchr(model, 0, model_len)) { /* a NUL inside: an invalid name, not a shorter one */
		respond(r, api, 400, d.failed ? d.err : "invalid model name");
		ob_json_free(doc);
		return;
	}
	char err[512];
	bool bad;
	int64_t keep_alive = api == EMB_OPENAI ? RN_KEEP_ALIVE_UNSET : keep_alive_of(root, err, sizeof err, &bad);
	if (api != EMB_OPENAI && bad) {
		respond(r, api, 400, err);
		ob_json_free(doc);
		return;
	}
	if (api == EMB_OPENAI && *encoding && strcasecmp(encoding, "float") != 0 && strcasecmp(encoding, "base64") != 0) {
		char m[300];
		snprintf(m, sizeof m, "Invalid value for 'encoding_format' = %s. Supported values: ['float', 'base64'].",
			 encoding);
		respond(r, api, 400, m);
		ob_json_free(doc);
		return;
	}
	const char **inputs = NULL;
	size_t n_inputs = 0;
	if (api == EMB_EMBEDDINGS) {
		if (*prompt) {
			inputs = malloc(sizeof *inputs);
			if (inputs) {
				inputs[0] = prompt;
				n_inputs = 1;
			}
		}
	} else {
		const struct ob_json *in = rn_dec_get(root, "input");
		if (api == EMB_OPENAI && (!in || (in->type == OB_JSON_ARRAY && in->count == 0))) {
			respond(r, api, 400, "invalid input");
			ob_json_free(doc);
			return;
		}
		int rc = decode_input(in, &inputs, &n_inputs, api == EMB_OPENAI);
		if (rc < 0) {
			respond(r, api, rc == -2 ? 500 : 400, rc == -2 ? "out of memory" : "invalid input type");
			ob_json_free(doc);
			return;
		}
	}
	struct embed_out eo;
	if (embed_inputs(r, api, model, inputs, n_inputs, truncate, opts, keep_alive, &eo) < 0) {
		free(inputs);
		ob_json_free(doc);
		return;
	}
	free(inputs);
	for (size_t i = 0; i < eo.n && api != EMB_EMBEDDINGS; i++) {
		if (!eo.vecs[i])
			continue;
		if (normalize(eo.vecs[i], eo.dims[i]) < 0 ||
		    (dims > 0 && dims < eo.dims[i] && (eo.dims[i] = (int)dims, normalize(eo.vecs[i], eo.dims[i]) < 0))) {
			respond(r, api, 400, "embedding contains NaN or Inf values");
			embed_out_free(&eo);
			ob_json_free(doc);
			return;
		}
	}
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	if (api == EMB_EMBEDDINGS) {
		ob_jw_key(&w, "embedding");
		ob_jw_arr(&w);
		if (eo.n && eo.vecs[0])
			for (int k = 0; k < eo.dims[0]; k++)
				ob_jw_float64(&w, (double)eo.vecs[0][k]);
		ob_jw_arr_end(&w);
	} else if (api == EMB_EMBED) {
		ob_jw_key(&w, "model");
		ob_jw_string(&w, model);
		ob_jw_key(&w, "embeddings");
		ob_jw_arr(&w);
		for (size_t i = 0; i < eo.n; i++)
			write_vec32(&w, eo.vecs[i], eo.vecs[i] ? eo.dims[i] : 0);
		ob_jw_arr_end(&w);
		if (eo.n) {
			ob_jw_key(&w, "total_duration");
			ob_jw_int(&w, rn_http_now_ns() - t0);
			if (eo.t_loaded - t0) {
				ob_jw_key(&w, "load_duration");
				ob_jw_int(&w, eo.t_loaded - t0);
			}
			if (eo.prompt_tokens) {
				ob_jw_key(&w, "prompt_eval_count");
				ob_jw_int(&w, eo.prompt_tokens);
			}
		}
	} else {
		ob_jw_key(&w, "object");
		ob_jw_string(&w, "list");
		ob_jw_key(&w, "data");
		ob_jw_arr(&w);
		for (size_t i = 0; i < eo.n; i++) {
			ob_jw_obj(&w);
			ob_jw_key(&w, "object");
			ob_jw_string(&w, "embedding");
			ob_jw_key(&w, "embedding");
			if (strcasecmp(encoding, "base64") == 0) {
				/* little-endian float32 bytes (x86/ARM hosts are little-endian) */
				size_t n = 0;
				char *b64 = ob_base64_encode(eo.vecs[i], (size_t)eo.dims[i] * sizeof(float), &n);
				ob_jw_stringn(&w, b64 ? b64 : "", n);
				free(b64);
			} else {
				write_vec32(&w, eo.vecs[i], eo.vecs[i] ? eo.dims[i] : 0);
			}
			ob_jw_key(&w, "index");
			ob_jw_int(&w, (int64_t)i);
			ob_jw_obj_end(&w);
		}
		ob_jw_arr_end(&w);
		ob_jw_key(&w, "model");
		ob_jw_string(&w, model);
		ob_jw_key(&w, "usage");
		ob_jw_obj(&w);
		ob_jw_key(&w, "prompt_tokens");
		ob_jw_int(&w, eo.prompt_tokens);
		ob_jw_key(&w, "total_tokens");
		ob_jw_int(&w, eo.prompt_tokens);
		ob_jw_obj_end(&w);
	}
	ob_jw_obj_end(&w);
	embed_out_free(&eo);
	ob_json_free(doc);
	if (api == EMB_OPENAI) {
		const char *js = ob_jw_str(&w);
		if (js)
			rn_http_respond(r, 200, "application/json", js, w.len);
		else
			respond(r, api, 500, "out of memory");
		ob_jw_free(&w);
	} else {
		rn_api_send_jw(r, 200, &w);
	}
}

void rn_api_embed(struct rn_http_req *r)
{
	embed_common(r, EMB_EMBED);
}

void rn_api_embeddings(struct rn_http_req *r)
{
	embed_common(r, EMB_EMBEDDINGS);
}

void rn_oai_embeddings(struct rn_http_req *r)
{
	embed_common(r, EMB_OPENAI);
}
