/* registry/internal.h — what registry/http.c, pull.c and push.c share: one connection to a registry's
 * repository (base URL, bearer token, retries with backoff) over libcurl. Not installed; not for callers.
 */
#ifndef ORUN_REGISTRY_INTERNAL_H
#define ORUN_REGISTRY_INTERNAL_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "modelfile/name.h"
#include "registry/registry.h"

#define RG_URL_MAX 4096
#define RG_HEADER_MAX 2048 /* bytes kept of one response header we read (Location, WWW-Authenticate) */
#define RG_TOKEN_MAX 16384 /* bytes of a bearer token (a JWT with its certificate chain is a few KB) */

struct rg_conn {
	char base[MF_NAME_HOST_MAX + 16];             /* "https://host" */
	char repo[2 * MF_NAME_PART_MAX + 2];          /* "namespace/model" */
	char auth[RG_TOKEN_MAX + 32];                 /* "Authorization: Bearer <token>" or "" */
	char user_agent[128];
	const struct rg_options *o;
	CURL *curl; /* for the plain requests; chunks have handles of their own */
};

struct rg_resp {
	long status;
	struct ob_buf body;               /* the body, up to its ceiling (a longer one is cut off, not an error) */
	char location[RG_URL_MAX];        /* Location, resolved against the request's URL */
	char www_auth[RG_HEADER_MAX];     /* WWW-Authenticate */
};

/* A request body: bytes in memory, or n bytes of a file from off. */
struct rg_body {
	const void *data;
	size_t len;
	int fd; /* >= 0: read from the file instead */
	uint64_t off, n;
	uint64_t sent; /* progress, set while it goes out */
	void (*progress)(void *ctx, uint64_t sent);
	void *ctx;
};

/* Resolves the name's scheme (https; http when o->insecure; an explicit http:// name without insecure is
 * refused as Ollama refuses it) and opens the handle. */
int rg_conn_open(struct rg_conn *c, const struct mf_name *n, const struct rg_options *o, struct mf_error *err) MF_WUR;
void rg_conn_close(struct rg_conn *c);

/* The options every handle gets: TLS (verification off only when insecure), redirects followed (without
 * the Authorization header to another host), timeouts against stalled links, the cancel check. */
void rg_conn_setup(struct rg_conn *c, CURL *h);
/* The request headers every request gets (User-Agent, Authorization) plus extra (may be NULL, NULL-ended). */
struct curl_slist *rg_conn_headers(const struct rg_conn *c, const char *const *extra);

/* One request with retries: a connection failure or a 5xx is tried again after a backoff (RG_BACKOFF_MS,
 * doubling) up to RG_MAX_RETRIES times, a 401 with a Bearer challenge once after fetching a token. url is
 * absolute or a path from the registry's base. body may be NULL. max_body bounds what is kept of the
 * response body. MF_OK with resp filled (any HTTP status: the caller judges it), else MF_ERR_IO /
 * MF_ERR_CANCELLED. */
int rg_request(struct rg_conn *c, const char *method, const char *url, const char *const *headers,
	       struct rg_body *body, size_t max_body, struct rg_resp *resp, struct mf_error *err) MF_WUR;
void rg_resp_free(struct rg_resp *r);

/* Answers a Bearer challenge (WWW-Authenticate: Bearer realm=..,service=..,scope=..): GETs the token from
 * realm and sets c->auth. */
int rg_conn_authorize(struct rg_conn *c, const char *challenge, struct mf_error *err) MF_WUR;

/* An error from a registry answer: "<what>: <status>: <the registry's first error message>". */
int rg_status_error(struct mf_error *err, const char *what, const struct rg_resp *r);

/* Every layer (and the config) of m has a "sha256:<64 hex>" digest and a size >= 0: MF_OK or MF_ERR_FORMAT. */
struct mf_manifest;
int rg_manifest_check(const struct mf_manifest *m, struct mf_error *err) MF_WUR;

/* True when the job is to stop. */
bool rg_cancelled(const struct rg_options *o);
/* Sleeps the backoff of attempt (0-based), waking early to stop: MF_OK or MF_ERR_CANCELLED. */
int rg_backoff(const struct rg_options *o, int attempt, struct mf_error *err) MF_WUR;
/* Whether a libcurl failure is worth another attempt (resets, timeouts, truncated bodies). */
bool rg_curl_retriable(CURLcode rc);
/* Reports progress; MF_ERR_CANCELLED when the callback asks to stop. */
int rg_report(const struct rg_options *o, const char *status, const char *digest, int64_t total,
	      int64_t completed, struct mf_error *err) MF_WUR;

#endif
