/* runner/api/pull.c — /api/pull and /api/push: the registry job (registry/registry.h) on a thread of its
 * own, its progress streamed as Ollama's status objects through the line queue of runner/api/lines.h.
 *
 * A job stops when its client leaves or the server stops (its partial files stay for the next pull);
 * stream:false answers the last object once at the end.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modelfile/name.h"
#include "registry/registry.h"
#include "runner/api/api.h"
#include "runner/api/decode.h"
#include "runner/api/lines.h"

struct registry_job {
	struct mf_store *store;
	struct rn_log log;
	struct rn_lines *pipe;
	struct rn_api *api;
	bool push;
	char *name;
	struct rg_options opts;
	struct mf_cancel cancel;
};

static bool job_cancelled(void *ctx)
{
	struct registry_job *j = ctx;
	return rn_lines_gone(j->pipe) || atomic_load(&j->api->stopping);
}

static int job_progress(void *ctx, const struct rg_progress *p)
{
	struct registry_job *j = ctx;
	return rn_lines_progress(j->pipe, p->status, p->digest, p->total, p->completed) < 0 ? 1 : 0;
}

static void *job_main(void *arg)
{
	struct registry_job *j = arg;
	struct mf_error e = {0};
	int rc = j->push ? rg_push(j->store, j->name, &j->opts, &e) : rg_pull(j->store, j->name, &j->opts, &e);
	const char *what = j->push ? "push" : "pull";
	if (rc == MF_ERR_CANCELLED) {
		rn_log(&j->log, RN_LOG_INFO, "%s %s cancelled: the client left or the server is stopping", what, j->name);
		rn_lines_error(j->pipe, 499, e.msg);
	} else if (rc != MF_OK) {
		rn_log(&j->log, RN_LOG_WARN, "%s %s failed: %s", what, j->name, e.msg);
		rn_lines_error(j->pipe, e.http_status ? e.http_status : 500, e.msg);
	} else {
		rn_lines_close(j->pipe);
	}
	mf_store_close(j->store);
	rn_lines_release(j->pipe);
	struct rn_api *api = j->api;
	free(j->name);
	free(j);
	atomic_fetch_sub(&api->creates, 1); /* the server's stop waits for it, as for a create */
	return NULL;
}

static void registry_request(struct rn_http_req *r, bool push)
{
	struct rn_api *s = rn_api_of(r);
	struct rn_dec d;
	const struct ob_json *root;
	struct ob_json_doc *doc = rn_api_decode(r, &d, push ? "PushRequest" : "PullRequest", &root, rn_api_respond_error);
	if (!doc)
		return;
	const char *model = "", *name = "";
	size_t mlen = 0, nlen = 0;
	bool insecure = false, stream = true;
	rn_dec_string(&d, root, "model", &model, &mlen);
	rn_dec_string(&d, root, "name", &name, &nlen);
	rn_dec_bool(&d, root, "insecure", &insecure);
	rn_dec_bool(&d, root, "stream", &stream);
	const char *n = mlen ? model : name;
	size_t len = mlen ? mlen : nlen;
	struct mf_name nm;
	mf_name_parse_n(n, len, &nm);
	char *copy = mf_name_is_valid(&nm) && !d.failed ? strndup(n, len) : NULL;
	ob_json_free(doc);
	if (d.failed || !copy) {
		free(copy);
		rn_http_respond_error(r, 400, d.failed ? d.err : "invalid model name");
		return;
	}
	struct registry_job *j = calloc(1, sizeof *j);
	struct rn_lines *p = rn_lines_new(&s->stopping);
	struct mf_error e = {0};
	if (!j || !p || mf_store_open(mf_store_root(s->store), &j->store, &e) != MF_OK) {
		free(copy);
		free(j);
		rn_lines_release(p);
		rn_lines_release(p);
		rn_http_respond_error(r, 500, j && p ? e.msg : "out of memory");
		return;
	}
	j->log = s->log;
	j->pipe = p;
	j->api = s;
	j->push = push;
	j->name = copy;
	j->cancel = (struct mf_cancel){job_cancelled, j};
	j->opts = (struct rg_options){.insecure = insecure, .cancel = &j->cancel, .progress = job_progress, .ctx = j,
				      .noprune = mf_env_bool("OLLAMA_NOPRUNE")};
	atomic_fetch_add(&s->creates, 1);
	pthread_t t;
	if (pthread_create(&t, NULL, job_main, j) != 0) {
		atomic_fetch_sub(&s->creates, 1);
		mf_store_close(j->store);
		free(j->name);
		free(j);
		rn_lines_release(p);
		rn_lines_release(p);
		rn_http_respond_error(r, 500, "cannot start the job");
		return;
	}
	pthread_detach(t);
	rn_lines_respond(r, p, stream);
}

void rn_api_pull(struct rn_http_req *r)
{
	registry_request(r, false);
}

void rn_api_push(struct rn_http_req *r)
{
	registry_request(r, true);
}
