/* runner/api/ollama.c — the model-management half of Ollama's REST API: /, /api/version, /api/tags,
 * /api/show, /api/copy, /api/delete, /api/blobs/:digest, /api/create, /api/ps, /api/status, /metrics.
 * (/api/pull and /api/push are in runner/api/pull.c.)
 *
 * Field names, order, omitempty and error texts follow Ollama's handlers (server/routes.go) and api types.
 * Inference endpoints (/api/chat, /api/generate) are in runner/api/ollama_format.c, over the pipeline.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "modelfile/create.h"
#include "base/jsonutil.h"
#include "modelfile/model.h"
#include "modelfile/name.h"
#include "runner/api/api.h"
#include "runner/api/decode.h"
#include "runner/api/lines.h"
#include "runner/api/stored_model.h"

void rn_api_root(struct rn_http_req *r)
{
	rn_http_respond(r, 200, "text/plain; charset=utf-8", "Ollama is running", 17);
}

void rn_api_version(struct rn_http_req *r)
{
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	ob_jw_key(&w, "version");
	ob_jw_string(&w, RN_OLLAMA_VERSION);
	ob_jw_obj_end(&w);
	rn_api_send_jw(r, 200, &w);
}

void rn_api_status(struct rn_http_req *r)
{
	static const char body[] = "{\"cloud\":{\"disabled\":true,\"source\":\"none\"}}";
	rn_http_respond_json(r, 200, body, sizeof body - 1);
}

void rn_api_metrics(struct rn_http_req *r)
{
	struct rn_api *s = rn_api_of(r);
	/* the prefix caches live in the loaded engines: read them now */
	struct rn_sched_info *v = NULL;
	size_t nv = 0;
	struct rn_metrics_cache *caches = NULL;
	if (s->sched && rn_sched_list(s->sched, &v, &nv) == 0 && nv && (caches = calloc(nv, sizeof *caches)))
		for (size_t i = 0; i < nv; i++)
			caches[i] = (struct rn_metrics_cache){.model = v[i].name, .st = v[i].cache};
	size_t n = 0;
	char *text = rn_metrics_render(s->metrics, caches, caches ? nv : 0, &n);
	free(caches);
	rn_sched_info_free(v, nv);
	if (!text) {
		rn_http_respond_error(r, 500, "out of memory");
		return;
	}
	rn_http_respond(r, 200, "text/plain; version=0.0.4; charset=utf-8", text, n);
	free(text);
}

/* The model a request names: "model", or the deprecated "name" when that is empty (never NULL); *len is its
 * length in bytes (a NUL inside counts: such a name is invalid). */
static const char *decode_model(struct rn_dec *d, const struct ob_json *root, size_t *len)
{
	const char *model = "", *name = "";
	size_t mlen = 0, nlen = 0;
	rn_dec_string(d, root, "model", &model, &mlen);
	rn_dec_string(d, root, "name", &name, &nlen);
	*len = mlen ? mlen : nlen;
	return mlen ? model : name;
}

/* ---------------------------------------------------------------------------------------------------- */
/* /api/tags */

static void write_time(struct ob_jw *w, int64_t sec, int64_t nsec)
{
	char ts[64];
	rn_http_rfc3339(sec * 1000000000LL + nsec, true, ts, sizeof ts);
	ob_jw_string(w, ts);
}

void rn_api_tags(struct rn_http_req *r)
{
	struct rn_api *s = rn_api_of(r);
	struct mf_manifest **list = NULL;
	size_t n = 0;
	struct mf_error e = {0};
	if (mf_store_list(s->store, &list, &n, &e) != MF_OK) {
		rn_http_respond_error(r, 500, e.msg);
		return;
	}
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	ob_jw_key(&w, "models");
	ob_jw_arr(&w);
	for (size_t i = 0; i < n; i++) {
		const struct mf_manifest *mf = list[i];
		char full[MF_NAME_STRING_MAX], shortest[MF_NAME_STRING_MAX];
		mf_name_string(&mf->name, full);
		mf_name_display(&mf->name, shortest);
		int st;
		char msg[512];
		struct rn_srv_model *sm = rn_srv_model_load(s->store, full, &st, msg, sizeof msg);
		if (!sm) {
			rn_log(&s->log, RN_LOG_WARN, "skipping model in list: %s: %s", full, msg);
			continue;
		}
		ob_jw_obj(&w);
		ob_jw_key(&w, "name");
		ob_jw_string(&w, shortest);
		ob_jw_key(&w, "model");
		ob_jw_string(&w, shortest);
		ob_jw_omitempty_string(&w, "remote_model", sm->m->config.remote_model);
		ob_jw_omitempty_string(&w, "remote_host", sm->m->config.remote_host);
		ob_jw_key(&w, "modified_at");
		write_time(&w, mf->mtime_sec, mf->mtime_nsec);
		ob_jw_key(&w, "size");
		ob_jw_int(&w, mf_manifest_total_size(mf));
		ob_jw_key(&w, "digest");
		ob_jw_string(&w, mf->digest);
		ob_jw_key(&w, "details");
		rn_srv_model_write_details(sm, &w, true, true);
		if (sm->n_caps) {
			ob_jw_key(&w, "capabilities");
			rn_srv_model_write_caps(sm, &w);
		}
		ob_jw_obj_end(&w);
		rn_srv_model_free(sm);
	}
	ob_jw_arr_end(&w);
	ob_jw_obj_end(&w);
	mf_manifest_list_free(list, n);
	rn_api_send_jw(r, 200, &w);
}

/* ---------------------------------------------------------------------------------------------------- */
/* /api/show */

static void write_gguf_section(struct ob_jw *w, const char *path, bool verbose, bool tensors, const char *key)
{
	struct gguf_error ge = {0};
	struct gguf_file *f = path ? gguf_open(path, &ge) : NULL;
	ob_jw_key(w, key);
	if (!f) {
		ob_jw_obj(w);
		ob_jw_obj_end(w);
		return;
	}
	rn_gguf_write_model_info(f, verbose, w);
	if (tensors) {
		ob_jw_key(w, "tensors");
		rn_gguf_write_tensors(f, w);
	}
	gguf_close(f);
}

void rn_api_show(struct rn_http_req *r)
{
	struct rn_api *s = rn_api_of(r);
	struct rn_dec d;
	const struct ob_json *root;
	struct ob_json_doc *doc = rn_api_decode(r, &d, "ShowRequest", &root, rn_api_respond_error);
	if (!doc)
		return;
	size_t mlen = 0;
	const char *model = decode_model(&d, root, &mlen), *system = NULL;
	bool verbose = false;
	rn_dec_string(&d, root, "system", &system, NULL);
	const char *tmpl_unused;
	rn_dec_string(&d, root, "template", &tmpl_unused, NULL);
	rn_dec_bool(&d, root, "verbose", &verbose);
	rn_dec_object(&d, root, "options", "map[string]interface {}");
	if (d.failed) {
		rn_http_respond_error(r, 400, d.err);
		ob_json_free(doc);
		return;
	}
	if (!mlen) {
		rn_http_respond_error(r, 400, "model is required");
		ob_json_free(doc);
		return;
	}
	struct mf_name nm;
	mf_name_parse_n(model, mlen, &nm);
	if (!mf_name_is_valid(&nm)) {
		rn_http_respond_error(r, 400, "invalid model name");
		ob_json_free(doc);
		return;
	}
	int st;
	char msg[1024];
	struct rn_srv_model *sm = rn_srv_model_load(s->store, model, &st, msg, sizeof msg);
	if (!sm) {
		if (st == 404) {
			char disp[MF_NAME_STRING_MAX];
			rn_http_respond_errorf(r, 404, "model '%s' not found", mf_name_display(&nm, disp));
		} else {
			rn_http_respond_error(r, st, msg);
		}
		ob_json_free(doc);
		return;
	}
	struct mf_model *m = sm->m;
	char *saved_system = NULL;
	if (system && *system) {
		saved_system = m->system;
		m->system = (char *)system;
	}
	char *license = mf_model_show_license(m);
	/* a model on its GGUF's Jinja template: that template is the one shown; the Modelfile has no TEMPLATE line
	 * (one would turn into a Go template layer when the Modelfile is created again) */
	char *saved_template = m->template_text;
	if (sm->jinja)
		m->template_text = NULL;
	char *modelfile = mf_model_show_modelfile(m);
	m->template_text = saved_template;
	char *params = mf_model_show_parameters(m);
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	ob_jw_omitempty_string(&w, "license", license);
	ob_jw_omitempty_string(&w, "modelfile", modelfile);
	ob_jw_omitempty_string(&w, "parameters", params);
	ob_jw_omitempty_string(&w, "template",
			       sm->jinja ? sm->jinja_src : m->template_text ? m->template_text : MF_DEFAULT_TEMPLATE);
	ob_jw_omitempty_string(&w, "system", m->system);
	ob_jw_omitempty_string(&w, "renderer", m->config.renderer);
	ob_jw_omitempty_string(&w, "parser", m->config.parser);
	ob_jw_key(&w, "details");
	rn_srv_model_write_details(sm, &w, false, true);
	if (m->n_messages) {
		ob_jw_key(&w, "messages");
		ob_jw_arr(&w);
		for (size_t i = 0; i < m->n_messages; i++) {
			ob_jw_obj(&w);
			ob_jw_key(&w, "role");
			ob_jw_string(&w, m->messages[i].role);
			ob_jw_key(&w, "content");
			ob_jw_string(&w, m->messages[i].content);
			ob_jw_obj_end(&w);
		}
		ob_jw_arr_end(&w);
	}
	ob_jw_omitempty_string(&w, "remote_model", m->config.remote_model);
	ob_jw_omitempty_string(&w, "remote_host", m->config.remote_host);
	write_gguf_section(&w, m->model_path, verbose, m->model_path != NULL, "model_info");
	if (m->n_projectors)
		write_gguf_section(&w, m->projector_paths[0], verbose, false, "projector_info");
	if (sm->n_caps) {
		ob_jw_key(&w, "capabilities");
		rn_srv_model_write_caps(sm, &w);
	}
	ob_jw_key(&w, "modified_at");
	write_time(&w, m->manifest->mtime_sec, m->manifest->mtime_nsec);
	ob_jw_omitempty_string(&w, "requires", m->config.requires);
	ob_jw_obj_end(&w);
	if (saved_system)
		m->system = saved_system;
	free(license);
	free(modelfile);
	free(params);
	rn_srv_model_free(sm);
	ob_json_free(doc);
	rn_api_send_jw(r, 200, &w);
}

/* ---------------------------------------------------------------------------------------------------- */
/* /api/copy, /api/delete */

void rn_api_copy(struct rn_http_req *r)
{
	struct rn_api *s = rn_api_of(r);
	struct rn_dec d;
	const struct ob_json *root;
	struct ob_json_doc *doc = rn_api_decode(r, &d, "CopyRequest", &root, rn_api_respond_error);
	if (!doc)
		return;
	const char *src = "", *dst = "";
	size_t slen = 0, dlen = 0;
	rn_dec_string(&d, root, "source", &src, &slen);
	rn_dec_string(&d, root, "destination", &dst, &dlen);
	struct mf_name sn, dn;
	mf_name_parse_n(src, slen, &sn);
	mf_name_parse_n(dst, dlen, &dn);
	char q[MF_NAME_QUOTE_MAX];
	if (d.failed) {
		rn_http_respond_error(r, 400, d.err);
	} else if (!mf_name_is_valid(&sn)) {
		rn_http_respond_errorf(r, 400, "source %s is invalid", mf_name_quote(src, slen, q));
	} else if (!mf_name_is_valid(&dn)) {
		rn_http_respond_errorf(r, 400, "destination %s is invalid", mf_name_quote(dst, dlen, q));
	} else {
		struct mf_error e = {0};
		if (mf_store_copy(s->store, src, dst, &e) != MF_OK)
			rn_http_respond_error(r, e.http_status ? e.http_status : 500, e.msg);
		else
			rn_http_respond(r, 200, NULL, "", 0);
	}
	ob_json_free(doc);
}

void rn_api_delete(struct rn_http_req *r)
{
	struct rn_api *s = rn_api_of(r);
	struct rn_dec d;
	const struct ob_json *root;
	struct ob_json_doc *doc = rn_api_decode(r, &d, "DeleteRequest", &root, rn_api_respond_error);
	if (!doc)
		return;
	size_t n_len = 0;
	const char *n = decode_model(&d, root, &n_len);
	if (d.failed) {
		rn_http_respond_error(r, 400, d.err);
		ob_json_free(doc);
		return;
	}
	struct mf_name nm;
	mf_name_parse_n(n, n_len, &nm);
	if (!mf_name_is_valid(&nm)) {
		char q[MF_NAME_QUOTE_MAX];
		rn_http_respond_errorf(r, 400, "name %s is invalid", mf_name_quote(n, n_len, q));
		ob_json_free(doc);
		return;
	}
	struct mf_error e = {0};
	if (mf_store_delete(s->store, n, &e) != MF_OK) {
		if (e.code == MF_ERR_NOT_FOUND)
			rn_http_respond_errorf(r, 404, "model '%s' not found", n);
		else
			rn_http_respond_error(r, e.http_status ? e.http_status : 500, e.msg);
	} else {
		rn_http_respond(r, 200, NULL, "", 0);
	}
	ob_json_free(doc);
}

/* ---------------------------------------------------------------------------------------------------- */
/* /api/blobs/:digest */

void rn_api_blob_head(struct rn_http_req *r)
{
	struct rn_api *s = rn_api_of(r);
	const char *digest = rn_http_req_param(r);
	char path[4096];
	struct mf_error e = {0};
	if (mf_store_blob_path(s->store, digest, path, sizeof path, &e) != MF_OK) {
		rn_http_respond_error(r, 400, e.msg);
		return;
	}
	if (!mf_store_blob_exists(s->store, digest)) {
		rn_http_respond_errorf(r, 404, "blob \"%s\" not found", digest);
		return;
	}
	rn_http_respond(r, 200, NULL, "", 0);
}

void rn_api_blob_begin(struct rn_http_req *r)
{
	struct rn_api *s = rn_api_of(r);
	const char *digest = rn_http_req_param(r);
	char path[4096];
	struct mf_error e = {0};
	if (mf_store_blob_path(s->store, digest, path, sizeof path, &e) != MF_OK) {
		rn_http_respond_error(r, 400, e.msg);
		return;
	}
	if (mf_store_blob_exists(s->store, digest)) {
		rn_http_respond(r, 200, NULL, "", 0);
		return;
	}
	struct mf_blob_writer *bw = NULL;
	if (mf_blob_writer_open(s->store, &bw, &e) != MF_OK) {
		rn_http_respond_error(r, 500, e.msg);
		return;
	}
	rn_http_req_set_user(r, bw);
}

int rn_api_blob_upload(struct rn_http_req *r, const char *data, size_t n)
{
	struct mf_blob_writer *bw = rn_http_req_user(r);
	struct mf_error e = {0};
	if (!bw)
		return -1;
	if (mf_blob_writer_write(bw, data, n, &e) != MF_OK) {
		rn_http_respond_error(r, 500, e.msg);
		return -1;
	}
	return 0;
}

void rn_api_blob_post(struct rn_http_req *r)
{
	struct mf_blob_writer *bw = rn_http_req_user(r);
	if (!bw) {
		rn_http_respond_error(r, 500, "no upload in progress");
		return;
	}
	rn_http_req_set_user(r, NULL);
	char got[MF_DIGEST_LEN + 1];
	bool created = false;
	struct mf_error e = {0};
	if (mf_blob_writer_commit(bw, rn_http_req_param(r), got, &created, &e) != MF_OK) {
		rn_http_respond_error(r, e.http_status ? e.http_status : 500, e.msg);
		return;
	}
	rn_http_respond(r, 201, NULL, "", 0);
}

void rn_api_blob_cleanup(struct rn_http_req *r, void *user)
{
	(void)r;
	mf_blob_writer_abort(user);
}

/* ---------------------------------------------------------------------------------------------------- */
/* /api/create */

/* A create runs on its own thread and owns everything it uses (a store handle on the same folder, a copy
 * of the log settings), so a server that stops while it winds up is never touched. It stops when its client
 * leaves or the server stops: the request's cancel check asks the pipe (issue 20, F6). */
struct create_job {
	struct mf_store *store;
	struct rn_log log;
	struct mf_create_request *req;
	struct rn_lines *pipe;
	struct rn_api *api;
};

/* A create stops when its client left or the server stops. */
static bool create_cancelled(void *ctx)
{
	struct create_job *cj = ctx;
	return rn_lines_gone(cj->pipe) || atomic_load(&cj->api->stopping);
}

static int create_progress(void *ctx, const struct mf_progress *p)
{
	struct create_job *cj = ctx;
	return rn_lines_progress(cj->pipe, p->status, p->digest, p->total, p->completed) < 0 ? 1 : 0;
}

static void *create_main(void *arg)
{
	struct create_job *cj = arg;
	struct mf_warnings warns = {0};
	struct mf_error e = {0};
	int rc = mf_create_run(cj->store, cj->req, create_progress, cj, &warns, &e);
	for (size_t i = 0; i < warns.n; i++)
		rn_log(&cj->log, RN_LOG_WARN, "%s", warns.items[i]);
	mf_warnings_free(&warns);
	if (rc != MF_OK) {
		if (rc != MF_ERR_CANCELLED)
			rn_log(&cj->log, RN_LOG_WARN, "create %s failed: %s", mf_create_request_model(cj->req), e.msg);
		else
			rn_log(&cj->log, RN_LOG_INFO, "create %s cancelled: the client left or the server is stopping",
			       mf_create_request_model(cj->req));
		rn_lines_error(cj->pipe, e.http_status ? e.http_status : 500, e.msg);
	} else {
		rn_lines_close(cj->pipe);
	}
	mf_create_request_free(cj->req);
	mf_store_close(cj->store);
	rn_lines_release(cj->pipe);
	struct rn_api *api = cj->api;
	free(cj);
	atomic_fetch_sub(&api->creates, 1); /* the last use of the server by this thread */
	return NULL;
}

void rn_api_create(struct rn_http_req *r)
{
	struct rn_api *s = rn_api_of(r);
	size_t len;
	const char *body = rn_http_req_body(r, &len);
	struct mf_create_request *req = NULL;
	struct mf_warnings warns = {0};
	struct mf_error e = {0};
	if (mf_create_request_parse(body, len, &req, &warns, &e) != MF_OK) {
		mf_warnings_free(&warns);
		rn_http_respond_error(r, e.http_status ? e.http_status : 400, e.msg);
		return;
	}
	for (size_t i = 0; i < warns.n; i++)
		rn_log(&s->log, RN_LOG_WARN, "%s", warns.items[i]);
	mf_warnings_free(&warns);
	struct create_job *cj = calloc(1, sizeof *cj);
	struct rn_lines *p = rn_lines_new(&s->stopping);
	pthread_t t;
	if (!cj || !p || mf_store_open(mf_store_root(s->store), &cj->store, &e) != MF_OK) {
		if (cj)
			mf_store_close(cj->store);
		free(cj);
		rn_lines_release(p);
		rn_lines_release(p);
		mf_create_request_free(req);
		rn_http_respond_error(r, 500, cj && p ? e.msg : "out of memory");
		return;
	}
	cj->log = s->log;
	cj->req = req;
	cj->pipe = p;
	cj->api = s;
	mf_create_request_set_cancel(req, &(struct mf_cancel){create_cancelled, cj});
	bool stream = mf_create_request_stream(req);
	atomic_fetch_add(&s->creates, 1);
	if (pthread_create(&t, NULL, create_main, cj) != 0) {
		atomic_fetch_sub(&s->creates, 1);
		mf_store_close(cj->store);
		free(cj);
		rn_lines_release(p);
		rn_lines_release(p);
		mf_create_request_free(req);
		rn_http_respond_error(r, 500, "cannot start the create");
		return;
	}
	pthread_detach(t);
	rn_lines_respond(r, p, stream);
}

/* ---------------------------------------------------------------------------------------------------- */
/* /api/ps */

void rn_api_ps(struct rn_http_req *r)
{
	struct rn_api *s = rn_api_of(r);
	struct rn_sched_info *v = NULL;
	size_t n = 0;
	if (rn_sched_list(s->sched, &v, &n) != 0) {
		rn_http_respond_error(r, 500, "out of memory");
		return;
	}
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	ob_jw_key(&w, "models");
	ob_jw_arr(&w);
	for (size_t i = 0; i < n; i++) {
		ob_jw_obj(&w);
		ob_jw_key(&w, "name");
		ob_jw_string(&w, v[i].name);
		ob_jw_key(&w, "model");
		ob_jw_string(&w, v[i].name);
		ob_jw_key(&w, "size");
		ob_jw_int(&w, v[i].size);
		ob_jw_key(&w, "digest");
		ob_jw_string(&w, v[i].digest);
		ob_jw_key(&w, "details");
		if (v[i].details_json)
			ob_jw_raw(&w, v[i].details_json, strlen(v[i].details_json));
		else
			ob_jw_raw(&w, "{}", 2);
		ob_jw_key(&w, "expires_at");
		char ts[64];
		if (v[i].expires_unix_ns == INT64_MAX) {
			/* Go: time.Now().Add(math.MaxInt64) */
			int64_t now = rn_http_wall_ns();
			int64_t sec = now / 1000000000LL + INT64_MAX / 1000000000LL;
			int64_t nsec = now % 1000000000LL + INT64_MAX % 1000000000LL;
			sec += nsec / 1000000000LL;
			nsec %= 1000000000LL;
			/* rn_http_rfc3339 takes ns since the epoch: split to avoid overflow */
			time_t tt = (time_t)sec;
			struct tm tm;
			localtime_r(&tt, &tm);
			char frac[16] = "";
			if (nsec) {
				snprintf(frac, sizeof frac, ".%09lld", (long long)nsec);
				size_t k = strlen(frac);
				while (k > 1 && frac[k - 1] == '0')
					frac[--k] = 0;
			}
			char zone[40] = "Z";
			if (tm.tm_gmtoff)
				snprintf(zone, sizeof zone, "%c%02ld:%02ld", tm.tm_gmtoff < 0 ? '-' : '+',
					 labs(tm.tm_gmtoff) / 3600, (labs(tm.tm_gmtoff) / 60) % 60);
			snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d%s%s", tm.tm_year + 1900, tm.tm_mon + 1,
				 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac, zone);
		} else {
			rn_http_rfc3339(v[i].expires_unix_ns, true, ts, sizeof ts);
		}
		ob_jw_string(&w, ts);
		ob_jw_key(&w, "size_vram");
		ob_jw_int(&w, v[i].size_vram);
		ob_jw_key(&w, "context_length");
		ob_jw_int(&w, v[i].context_length);
		ob_jw_obj_end(&w);
	}
	ob_jw_arr_end(&w);
	ob_jw_obj_end(&w);
	rn_sched_info_free(v, n);
	rn_api_send_jw(r, 200, &w);
}
