/* tests/fuzz/fuzz_http.c — libFuzzer target for the transport's decisions before a handler runs: CORS (Origin
 * against the allowed origins, preflights), the Host check of a loopback listener, routing over `orun serve`'s
 * route table (404, 405, trailing-slash redirects, ":digest" segments), the per-route body caps, begin/upload.
 *
 * The input is a request (tests/fuzz/fuzz_request.h), run in memory by rn_http_serve_memory over the real
 * table with every handler replaced by a stub that answers 200. Settings: "@loopback: 0" (a non-loopback
 * listener), "@origins: V" (OLLAMA_ORIGINS=V through envconfig, which adds Ollama's defaults), "@host: V"
 * (OLLAMA_HOST=V through rn_srv_parse_host), "@cap: N" (the body caps). Checks: a stub runs only for a route
 * that matches the path and the method, with the body intact; no 403 without an Origin header unless the
 * Host check applies; 404 / 405 / 413 only where the table and the caps say so.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/buf.h"
#include "runner/server/envconfig.h"
#include "runner/server/http.h"
#include "runner/server/server.h"
#include "tests/fuzz/fuzz_request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT 8192
#define MAX_ROUTES 64
#define DEFAULT_CAP 4096 /* body cap unless @cap says otherwise: small, so that 413 is reachable */

static struct rn_http_route routes[MAX_ROUTES];
static struct rn_srv_config defaults; /* Ollama's default origins */

/* What the stubs saw. */
static struct {
	const struct fz_request *q;
	const struct rn_http_route *route;
	size_t uploaded;
} seen;

static void die(const char *what)
{
	fprintf(stderr, "fuzz_http: %s\n", what);
	abort();
}

/* The route table's pattern rule, restated: exact, or a last segment ":name" matching one non-empty segment. */
static bool pattern_match(const char *pattern, const char *path)
{
	const char *colon = strstr(pattern, "/:");
	if (!colon)
		return strcmp(pattern, path) == 0;
	size_t pre = (size_t)(colon - pattern) + 1;
	return strncmp(pattern, path, pre) == 0 && path[pre] && !strchr(path + pre, '/');
}

/* The route a stub runs for: the first whose pattern and method match. */
static const struct rn_http_route *route_of(struct rn_http_req *r)
{
	static const char *const names[] = {"GET", "HEAD", "POST", "DELETE", "PUT", "PATCH", "OPTIONS"};
	unsigned bit = 0;
	for (unsigned i = 0; i < 7; i++)
		if (strcmp(rn_http_req_method(r), names[i]) == 0)
			bit = 1u << i;
	for (const struct rn_http_route *rt = routes; rt->path; rt++)
		if ((rt->methods & bit) && pattern_match(rt->path, rn_http_req_path(r)))
			return rt;
	return NULL;
}

/* Does a route's pattern match path (any method)? */
static bool path_known(const char *path)
{
	for (const struct rn_http_route *rt = routes; rt->path; rt++)
		if (pattern_match(rt->path, path))
			return true;
	return false;
}

static void stub_handler(struct rn_http_req *r)
{
	const struct rn_http_route *rt = route_of(r);
	if (!rt)
		die("a handler ran for a path and method no route has");
	seen.route = rt;
	if (!rt->upload) {
		size_t n;
		const char *b = rn_http_req_body(r, &n);
		if (n != seen.q->req.body_len || (n && memcmp(b, seen.q->req.body, n) != 0) || b[n] != 0)
			die("the handler's body is not the request's");
	} else if (seen.uploaded != seen.q->req.body_len) {
		die("upload did not see the whole body");
	}
	const char *param = rn_http_req_param(r);
	if (strchr(rt->path, ':') && (!*param || strchr(param, '/')))
		die("a \":name\" segment is empty or holds a '/'");
	rn_http_respond(r, 200, "text/plain", rt->path, strlen(rt->path));
}

static void stub_begin(struct rn_http_req *r)
{
	rn_http_req_set_user(r, malloc(1)); /* freed by the cleanup, whatever happens */
}

static int stub_upload(struct rn_http_req *r, const char *d, size_t n)
{
	seen.uploaded += n;
	if (n >= 4 && memcmp(d, "FAIL", 4) == 0) {
		rn_http_respond_error(r, 400, "stub upload refused");
		return -1;
	}
	return 0;
}

static void stub_cleanup(struct rn_http_req *r, void *user)
{
	(void)r;
	free(user);
}

static void setup(void)
{
	size_t n = 0;
	for (const struct rn_http_route *rt = rn_server_routes(); rt->path; rt++) {
		if (n + 1 >= MAX_ROUTES)
			die("more routes than MAX_ROUTES");
		routes[n] = *rt;
		routes[n].handler = stub_handler;
		routes[n].begin = rt->begin ? stub_begin : NULL;
		routes[n].upload = rt->upload ? stub_upload : NULL;
		routes[n].cleanup = rt->cleanup ? stub_cleanup : NULL;
		n++;
	}
	unsetenv("OLLAMA_ORIGINS");
	if (rn_srv_config_from_env(&defaults) != 0)
		die("out of memory");
}

static bool has_header(const struct fz_request *q, const char *name)
{
	for (size_t i = 0; i < q->req.n_headers; i++)
		if (strcasecmp(q->headers[i].name, name) == 0 && q->headers[i].value[0])
			return true;
	return false;
}

/* What the answer may be, given the request. */
static void check(const struct fz_request *q, int status, size_t max_body, bool custom_origins)
{
	switch (status) {
	case -1:
		if (!custom_origins)
			die("a request failed before it started"); /* only a bad OLLAMA_ORIGINS may */
		break;
	case 200:
		if (!seen.route)
			die("200 without a handler");
		break;
	case 403:
		if (!has_header(q, "Origin") && !q->req.loopback)
			die("403 without an Origin header on a non-loopback listener");
		break;
	case 404:
		if (path_known(q->req.path))
			die("404 for a path a route has");
		break;
	case 405:
		if (!path_known(q->req.path))
			die("405 for a path no route has");
		break;
	case 413:
		if (q->req.body_len <= max_body)
			die("413 under the cap");
		break;
	case 204: /* a preflight, or OPTIONS to an allowed host name */
	case 301:
	case 307: /* gin's trailing-slash redirects */
	case 400: /* the stub upload's refusal */
		break;
	default:
		fprintf(stderr, "fuzz_http: status %d\n", status);
		die("unexpected status");
	}
	if (status != 200 && seen.route)
		die("a handler ran but its answer was replaced");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	if (!ready) {
		setup();
		ready = true;
	}
	struct fz_request q = {0};
	if (size > MAX_INPUT || fz_request_parse(&q, data, size) != 0) {
		fz_request_free(&q);
		return 0;
	}
	struct rn_srv_config cfg, *oc = &defaults;
	const char *origins = fz_setting(&q, "origins");
	if (origins) {
		/* putenv of one static buffer: setenv would keep every value it ever had (glibc never frees them) */
		static char env[32 + MAX_INPUT];
		snprintf(env, sizeof env, "OLLAMA_ORIGINS=%s", origins);
		putenv(env);
		int rc = rn_srv_config_from_env(&cfg);
		unsetenv("OLLAMA_ORIGINS");
		if (rc != 0)
			die("out of memory");
		oc = &cfg;
	}
	const char *host = fz_setting(&q, "host");
	if (host) {
		struct rn_srv_host h;
		char warn[256];
		rn_srv_parse_host(host, &h, warn, sizeof warn);
		if (h.port < 0 || h.port > 65535 || !memchr(h.host, 0, sizeof h.host) || !memchr(h.path, 0, sizeof h.path))
			die("rn_srv_parse_host gave a bad address");
	}
	const char *cap = fz_setting(&q, "cap");
	size_t max_body = cap ? (size_t)strtoul(cap, NULL, 10) % (1u << 20) : DEFAULT_CAP;
	if (!max_body)
		max_body = 1; /* 0 would mean the transport's default */
	const char *lb = fz_setting(&q, "loopback");
	q.req.loopback = !lb || strcmp(lb, "0") != 0;

	struct rn_http_options o = {
		.origins = (const char *const *)oc->origins,
		.n_origins = oc->n_origins,
		.max_body = max_body,
		.max_prompt_body = max_body * 2,
		.routes = routes,
	};
	memset(&seen, 0, sizeof seen);
	seen.q = &q;
	struct ob_buf out;
	ob_buf_init(&out, 1u << 20);
	char err[512];
	int status = rn_http_serve_memory(&o, &q.req, &out, err, sizeof err);
	const struct rn_http_route *rt = seen.route;
	check(&q, status, rt && (rt->methods & RN_HTTP_PROMPT_BODY) ? max_body * 2 : max_body, origins != NULL);
	ob_buf_free(&out);
	if (oc == &cfg)
		rn_srv_config_free(&cfg);
	fz_request_free(&q);
	return 0;
}
