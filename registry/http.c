/* registry/http.c — the registry connection: base URL from the name, the bearer-token challenge, and
 * requests retried with backoff on resets and 5xx answers (Ollama's makeRequestWithRetry).
 *
 * Ollama's key-signed Authorization (an ed25519 signature of the request sent to ollama.com's token
 * endpoint) is not done: challenges are answered anonymously, as a Docker client without credentials does.
 */
#include "config.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "base/json.h"
#include "registry/internal.h"

static pthread_once_t global_once = PTHREAD_ONCE_INIT;

static void global_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

void rg_global_init(void)
{
	pthread_once(&global_once, global_init_once);
}

bool rg_cancelled(const struct rg_options *o)
{
	return o && mf_cancelled(o->cancel);
}

int rg_backoff(const struct rg_options *o, int attempt, struct mf_error *err)
{
	long ms = (long)RG_BACKOFF_MS << (attempt < 6 ? attempt : 6);
	for (long t = 0; t < ms; t += 20) {
		if (rg_cancelled(o))
			return mf_error_set(err, MF_ERR_CANCELLED, "request canceled");
		nanosleep(&(struct timespec){0, 20 * 1000000L}, NULL);
	}
	return MF_OK;
}

bool rg_curl_retriable(CURLcode rc)
{
	switch (rc) {
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_PARTIAL_FILE:
	case CURLE_GOT_NOTHING:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_SSL_CONNECT_ERROR:
		return true;
	default:
		return false;
	}
}

int rg_report(const struct rg_options *o, const char *status, const char *digest, int64_t total,
	      int64_t completed, struct mf_error *err)
{
	if (o && o->progress) {
		struct rg_progress p = {status, digest, total, completed};
		if (o->progress(o->ctx, &p) != 0)
			return mf_error_set(err, MF_ERR_CANCELLED, "request canceled");
	}
	return rg_cancelled(o) ? mf_error_set(err, MF_ERR_CANCELLED, "request canceled") : MF_OK;
}

/* ---------------------------------------------------------------------------------------------------- */

int rg_conn_open(struct rg_conn *c, const struct mf_name *n, const struct rg_options *o, struct mf_error *err)
{
	memset(c, 0, sizeof *c);
	c->o = o;
	if (!strcasecmp(n->scheme, "http") && !(o && o->insecure))
		return mf_error_set_http(err, MF_ERR_PARSE, 400, "insecure protocol http");
	const char *scheme = o && o->insecure ? "http" : "https";
	snprintf(c->base, sizeof c->base, "%s://%s", scheme, n->host);
	snprintf(c->repo, sizeof c->repo, "%s/%s", n->ns, n->model);
	snprintf(c->user_agent, sizeof c->user_agent, "User-Agent: orun/%s", PACKAGE_VERSION);
	rg_global_init();
	c->curl = curl_easy_init();
	if (!c->curl)
		return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	return MF_OK;
}

void rg_conn_close(struct rg_conn *c)
{
	if (c->curl)
		curl_easy_cleanup(c->curl);
	c->curl = NULL;
}

static int xferinfo(void *ctx, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	(void)dt, (void)dn, (void)ut, (void)un;
	return rg_cancelled(ctx) ? 1 : 0;
}

void rg_conn_setup(struct rg_conn *c, CURL *h)
{
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
	curl_easy_setopt(h, CURLOPT_UNRESTRICTED_AUTH, 0L); /* no Authorization to the blob store */
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L); /* a link that sends nothing for a minute is dead */
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, xferinfo);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, (void *)c->o);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, NULL);
	if (c->o && c->o->insecure) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
}

struct curl_slist *rg_conn_headers(const struct rg_conn *c, const char *const *extra)
{
	struct curl_slist *l = curl_slist_append(NULL, c->user_agent);
	if (l && c->auth[0])
		curl_slist_append(l, c->auth);
	for (size_t i = 0; extra && extra[i] && l; i++)
		curl_slist_append(l, extra[i]);
	return l;
}

/* ---------------------------------------------------------------------------------------------------- */
/* One request */

struct req_state {
	struct rg_resp *resp;
	size_t max_body;
	struct rg_body *body;
};

static size_t on_body(char *p, size_t sz, size_t n, void *ctx)
{
	struct req_state *st = ctx;
	size_t len = sz * n, room = st->max_body > st->resp->body.len ? st->max_body - st->resp->body.len : 0;
	size_t keep = len < room ? len : room;
	if (keep && !ob_buf_append(&st->resp->body, p, keep))
		return 0;
	return len;
}

/* Copies a header's value (trimmed) when the line names it. */
static void header_value(const char *line, size_t n, const char *name, char *out, size_t cap)
{
	size_t k = strlen(name);
	if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':')
		return;
	const char *v = line + k + 1, *e = line + n;
	while (v < e && (*v == ' ' || *v == '\t'))
		v++;
	while (e > v && isspace((unsigned char)e[-1]))
		e--;
	size_t m = (size_t)(e - v) < cap - 1 ? (size_t)(e - v) : cap - 1;
	memcpy(out, v, m);
	out[m] = 0;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ctx)
{
	struct req_state *st = ctx;
	size_t len = sz * n;
	if (len >= 5 && !strncmp(p, "HTTP/", 5)) { /* a new response (after a redirect): forget the last one's */
		st->resp->www_auth[0] = st->resp->location[0] = 0;
		ob_buf_reset(&st->resp->body);
	}
	header_value(p, len, "WWW-Authenticate", st->resp->www_auth, sizeof st->resp->www_auth);
	header_value(p, len, "Location", st->resp->location, sizeof st->resp->location);
	return len;
}

static size_t on_read(char *p, size_t sz, size_t n, void *ctx)
{
	struct rg_body *b = ctx;
	size_t want = sz * n;
	if (b->fd >= 0) {
		uint64_t left = b->n - b->sent;
		if (want > left)
			want = (size_t)left;
		ssize_t r = want ? pread(b->fd, p, want, (off_t)(b->off + b->sent)) : 0;
		if (r < 0)
			return CURL_READFUNC_ABORT;
		want = (size_t)r;
	} else {
		size_t left = b->len - (size_t)b->sent;
		if (want > left)
			want = left;
		if (want)
			memcpy(p, (const char *)b->data + b->sent, want);
	}
	b->sent += want;
	if (b->progress)
		b->progress(b->ctx, b->sent);
	return want;
}

int rg_request(struct rg_conn *c, const char *method, const char *url, const char *const *headers,
	       struct rg_body *body, size_t max_body, struct rg_resp *resp, struct mf_error *err)
{
	char full[RG_URL_MAX];
	if (url[0] == '/')
		snprintf(full, sizeof full, "%s%s", c->base, url);
	else
		snprintf(full, sizeof full, "%s", url);
	memset(resp, 0, sizeof *resp);
	ob_buf_init(&resp->body, max_body + 1);
	bool authorized = false;
	for (int attempt = 0;;) {
		if (rg_cancelled(c->o))
			return mf_error_set(err, MF_ERR_CANCELLED, "request canceled");
		CURL *h = c->curl;
		curl_easy_reset(h);
		rg_conn_setup(c, h);
		struct curl_slist *hl = rg_conn_headers(c, headers);
		struct req_state st = {resp, max_body, body};
		ob_buf_reset(&resp->body);
		resp->www_auth[0] = resp->location[0] = 0;
		curl_easy_setopt(h, CURLOPT_URL, full);
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, &st);
		curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
		curl_easy_setopt(h, CURLOPT_HEADERDATA, &st);
		if (!strcmp(method, "HEAD"))
			curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
		else if (!strcmp(method, "GET"))
			curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
		else {
			curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
			curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
			if (body) {
				body->sent = 0;
				curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
				curl_easy_setopt(h, CURLOPT_READDATA, body);
				curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE,
						 (curl_off_t)(body->fd >= 0 ? body->n : body->len));
			} else {
				curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)0);
			}
		}
		/* a POST/PUT/PATCH answered with a redirect is not followed (the upload flow reads Location) */
		if (strcmp(method, "GET") && strcmp(method, "HEAD"))
			curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
		CURLcode rc = curl_easy_perform(h);
		curl_slist_free_all(hl);
		if (rc == CURLE_ABORTED_BY_CALLBACK && rg_cancelled(c->o))
			return mf_error_set(err, MF_ERR_CANCELLED, "request canceled");
		if (rc != CURLE_OK) {
			if (rg_curl_retriable(rc) && ++attempt < RG_MAX_RETRIES) {
				int b = rg_backoff(c->o, attempt - 1, err);
				if (b != MF_OK)
					return b;
				continue;
			}
			return mf_error_set(err, MF_ERR_IO, "%s %s: %s", method, full, curl_easy_strerror(rc));
		}
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
		if (resp->location[0] == '/') { /* relative to the registry (the upload flow's Location) */
			char rel[RG_URL_MAX];
			size_t b = strlen(c->base), n = strlen(resp->location);
			memcpy(rel, resp->location, n + 1);
			if (b + n < sizeof resp->location) {
				memcpy(resp->location, c->base, b);
				memcpy(resp->location + b, rel, n + 1);
			}
		}
		if (resp->status == 401 && !authorized && !strncasecmp(resp->www_auth, "Bearer ", 7)) {
			authorized = true;
			char challenge[RG_HEADER_MAX];
			snprintf(challenge, sizeof challenge, "%s", resp->www_auth);
			int a = rg_conn_authorize(c, challenge, err);
			if (a != MF_OK)
				return a;
			continue;
		}
		if (resp->status >= 500 && ++attempt < RG_MAX_RETRIES) {
			int b = rg_backoff(c->o, attempt - 1, err);
			if (b != MF_OK)
				return b;
			continue;
		}
		return MF_OK;
	}
}

void rg_resp_free(struct rg_resp *r)
{
	if (r)
		ob_buf_free(&r->body);
}

int rg_status_error(struct mf_error *err, const char *what, const struct rg_resp *r)
{
	/* the distribution API's {"errors":[{"code","message"}]} */
	char detail[512] = "";
	struct ob_json_error je;
	struct ob_json_doc *doc = r->body.len ? ob_json_parse(r->body.p, r->body.len, &je) : NULL;
	if (doc) {
		const struct ob_json *e0 = ob_json_at(ob_json_get(ob_json_root(doc), "errors"), 0);
		const struct ob_json *m = ob_json_get(e0, "message");
		if (m && m->type == OB_JSON_STRING)
			snprintf(detail, sizeof detail, ": %s", m->str);
		ob_json_free(doc);
	}
	int code = r->status == 404 ? MF_ERR_NOT_FOUND : MF_ERR_IO;
	return mf_error_set_http(err, code, r->status == 404 ? 404 : 500, "%s: %ld%s", what, r->status, detail);
}

/* ---------------------------------------------------------------------------------------------------- */
/* Bearer tokens */

/* The value of key in a challenge's comma-separated key="value" list. */
static bool challenge_param(const char *s, const char *key, char *out, size_t cap)
{
	size_t k = strlen(key);
	for (const char *p = s; *p;) {
		while (*p == ' ' || *p == ',')
			p++;
		const char *eq = strchr(p, '=');
		if (!eq)
			return false;
		bool match = (size_t)(eq - p) == k && !strncasecmp(p, key, k);
		const char *v = eq + 1, *e;
		if (*v == '"') {
			v++;
			e = strchr(v, '"');
			if (!e)
				return false;
		} else {
			e = v + strcspn(v, ",");
		}
		if (match) {
			size_t m = (size_t)(e - v) < cap - 1 ? (size_t)(e - v) : cap - 1;
			memcpy(out, v, m);
			out[m] = 0;
			return true;
		}
		p = *e == '"' ? e + 1 : e;
	}
	return false;
}

int rg_conn_authorize(struct rg_conn *c, const char *challenge, struct mf_error *err)
{
	char realm[1024] = "", service[512] = "", scope[512] = "";
	const char *params = challenge + 7; /* after "Bearer " */
	if (!challenge_param(params, "realm", realm, sizeof realm) || !realm[0])
		return mf_error_set(err, MF_ERR_IO, "registry challenge without a realm: %s", challenge);
	challenge_param(params, "service", service, sizeof service);
	challenge_param(params, "scope", scope, sizeof scope);
	char *es = curl_easy_escape(c->curl, service, 0), *ec = curl_easy_escape(c->curl, scope, 0);
	char url[RG_URL_MAX];
	snprintf(url, sizeof url, "%s%sservice=%s&scope=%s", realm, strchr(realm, '?') ? "&" : "?", es ? es : "",
		 ec ? ec : "");
	curl_free(es);
	curl_free(ec);
	c->auth[0] = 0; /* the token request itself goes without the old token */
	struct rg_resp r;
	int rc = rg_request(c, "GET", url, NULL, NULL, RG_MAX_BODY, &r, err);
	if (rc != MF_OK) {
		rg_resp_free(&r);
		return rc;
	}
	if (r.status != 200) {
		rc = rg_status_error(err, "registry token", &r);
		rg_resp_free(&r);
		return rc;
	}
	struct ob_json_error je;
	struct ob_json_doc *doc = ob_json_parse(r.body.p ? r.body.p : "", r.body.len, &je);
	rg_resp_free(&r);
	const struct ob_json *root = doc ? ob_json_root(doc) : NULL;
	const struct ob_json *t = ob_json_get(root, "token");
	if (!t || t->type != OB_JSON_STRING || !t->len)
		t = ob_json_get(root, "access_token");
	if (!t || t->type != OB_JSON_STRING || !t->len || t->len > RG_TOKEN_MAX) {
		ob_json_free(doc);
		return mf_error_set(err, MF_ERR_IO, "registry token: no token in the answer of %s", realm);
	}
	snprintf(c->auth, sizeof c->auth, "Authorization: Bearer %s", t->str);
	ob_json_free(doc);
	return MF_OK;
}
