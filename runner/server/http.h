/* runner/server/http.h — orun's HTTP/1.1 server layer over libmicrohttpd, shaped like Ollama's gin setup.
 *
 * One thread per connection: a handler runs on its connection's thread and may block (waiting for a model
 * to load, for the first token). Routing answers gin's 404 `404 page not found` / 405 `405 method not
 * allowed`; CORS follows gin-contrib/cors with Ollama's configuration; the Host-header check
 * (DNS-rebinding protection) applies when the listener is on a loopback address. Streamed bodies come from
 * a source that yields one piece at a time; each piece goes out as one HTTP chunk, at once, on a socket
 * with TCP_NODELAY (runner/server/stream.h builds generation streams on this). Requests whose framing Go's
 * net/http refuses are refused (conflicting Content-Length, unsupported Transfer-Encoding); bodies, idle time
 * and connections per address are capped (struct rn_http_options). The layer knows nothing about models or
 * JSON schemas.
 */
#ifndef ORUN_RUNNER_SERVER_HTTP_H
#define ORUN_RUNNER_SERVER_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runner/server/envconfig.h"

#define RN_HTTP_MAX_BODY_DEFAULT (64u << 20) /* bytes of a request body collected in memory, when not set */
#define RN_HTTP_MAX_CONNECTIONS 4096         /* concurrent connections, when not set */
#define RN_HTTP_MAX_CONNECTIONS_PER_IP 1024  /* concurrent connections from one address (IPv6: a /64), when not set */
#define RN_HTTP_IDLE_TIMEOUT_S 120           /* seconds a connection may wait for a request, its headers or body */
#define RN_HTTP_FD_RESERVE 256               /* open files kept out of the connection cap (models, store, logs) */
#define RN_HTTP_LIMIT_LOG_NS 10000000000LL   /* at most one "limit reached" log line per 10 s */
#define RN_HTTP_MAX_HEADERS 16               /* extra response headers per request */
#define RN_HTTP_SLICE_NS 100000u             /* EEVDF slice asked for latency-sensitive threads (the minimum) */

enum rn_http_method {
	RN_HTTP_GET = 1 << 0,
	RN_HTTP_HEAD = 1 << 1,
	RN_HTTP_POST = 1 << 2,
	RN_HTTP_DELETE = 1 << 3,
	RN_HTTP_PUT = 1 << 4,
	RN_HTTP_PATCH = 1 << 5,
	RN_HTTP_OPTIONS = 1 << 6,
	/* Not a method: a route flag kept with the method bits. The route's body may be large (prompts, images
	 * in base64, documents to embed): it is capped by max_prompt_body instead of max_body. */
	RN_HTTP_PROMPT_BODY = 1 << 8,
};

struct rn_http_req;
struct rn_http_server;

/* Runs on the connection's thread once the whole body is in (or was streamed to `upload`). Must answer with
 * one of the rn_http_respond* calls; a handler that does not gets a 500. */
typedef void (*rn_http_handler)(struct rn_http_req *req);

/* Optional: runs once the headers are in, before any body is read. It may answer at once (the body is then
 * not read) or set up state for `upload` with rn_http_req_set_user. */
typedef void (*rn_http_begin)(struct rn_http_req *req);

/* Optional: receives the body piece by piece instead of collecting it in memory. Return 0 to go on, or -1
 * after answering (rn_http_respond_error) to stop: the rest of the body is discarded. */
typedef int (*rn_http_upload)(struct rn_http_req *req, const char *data, size_t n);

/* Optional: frees what begin/upload set with rn_http_req_set_user, whatever happened to the request. */
typedef void (*rn_http_cleanup)(struct rn_http_req *req, void *user);

struct rn_http_route {
	unsigned methods;        /* RN_HTTP_* method bits, and RN_HTTP_PROMPT_BODY */
	const char *path;        /* exact path; a last segment ":name" matches any one non-empty segment */
	rn_http_handler handler;
	rn_http_begin begin;
	rn_http_upload upload;
	rn_http_cleanup cleanup;
	const char *label;       /* name for metrics/logs; NULL = path */
};

/* A streamed response body. next() runs on the connection thread and blocks until it has the next piece:
 * it returns 1 with *data and *len set (valid until the next call), 0 at the end of the body, -1 to cut the
 * connection. close() runs exactly once when the response is finished or the connection is gone
 * (completed == false when the client left or next() failed); it frees ctx. */
struct rn_http_source {
	int (*next)(void *ctx, const char **data, size_t *len);
	void (*close)(void *ctx, bool completed);
	void *ctx;
};

/* Called when a request is finished (also for aborted ones): for metrics and the access log. route is the
 * route's label, or "" when no route matched; status is 0 when no response was sent. */
typedef void (*rn_http_on_complete)(void *app, const char *route, const char *method, const char *path,
				    const char *remote, int status, double seconds);

/* A transport event worth a warning in the log: a connection limit reached, a limit lowered at start. Runs on
 * the listening thread or a connection's thread; at most one call per RN_HTTP_LIMIT_LOG_NS for the limits. */
typedef void (*rn_http_on_warning)(void *app, const char *msg);

/* The limits. A request body collected in memory (a route without `upload`) is refused with 413 past its cap,
 * before it is read when Content-Length says so. The idle timeout closes a connection that sends nothing while
 * orun waits for a request, its headers or its body; it is off while a handler runs and while its answer goes
 * out, so a slow model load or a long silent prefill never cuts a stream. A new connection is closed at once,
 * with a throttled warning naming its address, when that address already has max_connections_per_ip open or
 * when max_connections are open in all. */
struct rn_http_options {
	const struct rn_srv_host *listen; /* required */
	const char *const *origins;       /* allowed CORS origins (OLLAMA_ORIGINS + defaults); "*" = any */
	size_t n_origins;
	size_t max_body;                  /* bytes, routes without RN_HTTP_PROMPT_BODY: 0 = RN_HTTP_MAX_BODY_DEFAULT */
	size_t max_prompt_body;           /* bytes, routes with RN_HTTP_PROMPT_BODY: 0 = RN_HTTP_MAX_BODY_DEFAULT */
	unsigned max_connections;         /* 0 = RN_HTTP_MAX_CONNECTIONS; lowered to fit the open-file limit */
	unsigned max_connections_per_ip;  /* 0 = RN_HTTP_MAX_CONNECTIONS_PER_IP */
	int idle_timeout_s;               /* seconds: 0 = RN_HTTP_IDLE_TIMEOUT_S, < 0 = none */
	const struct rn_http_route *routes; /* terminated by a route with path == NULL; must outlive the server */
	void *app;                        /* handed to handlers through rn_http_req_app */
	rn_http_on_complete on_complete;  /* may be NULL */
	rn_http_on_warning on_warning;    /* NULL = one line on stderr */
	bool no_host_check;               /* skip the Host-header check (the llama-server runner mode) */
	bool no_cors;                     /* skip CORS handling */
};

/* Binds, listens and starts serving. Raises the process's soft open-file limit to its hard limit (as Go's
 * runtime does at start). Returns NULL with a message in err (e.g. "listen tcp 127.0.0.1:11434: bind: address
 * already in use"). */
struct rn_http_server *rn_http_start(const struct rn_http_options *o, char *err, size_t err_size);

/* The connection cap in force (max_connections, or less when the open-file limit is lower). */
unsigned rn_http_max_connections(const struct rn_http_server *s);

/* The limits in force as one line for the log ("bodies up to 1048576 bytes (67108864 with a prompt), 4096
 * connections (1024 per address), idle timeout 120 s"). Returns buf. */
char *rn_http_limits_text(const struct rn_http_server *s, char *buf, size_t size);

/* The port actually bound (useful with port 0). */
int rn_http_port(const struct rn_http_server *s);

/* Stops accepting, waits for the connection threads to finish and frees the server. Accepts NULL.
 * Streaming sources must end (their next() calls must return) for this to return. */
void rn_http_stop(struct rn_http_server *s);

/* ---------------------------------------------------------------------------------------------------- */
/* Request accessors: valid during the handler (and begin/upload); strings are borrowed. */

const char *rn_http_req_method(const struct rn_http_req *r);
const char *rn_http_req_path(const struct rn_http_req *r);
/* The segment matched by a ":name" route segment, or "". */
const char *rn_http_req_param(const struct rn_http_req *r);
/* A request header (case-insensitive name) or NULL. */
const char *rn_http_req_header(const struct rn_http_req *r, const char *name);
/* A query-string argument or NULL. */
const char *rn_http_req_query(const struct rn_http_req *r, const char *key);
/* The collected body (NUL-terminated; may hold NULs) and its length; "" when none. */
const char *rn_http_req_body(const struct rn_http_req *r, size_t *len);
void *rn_http_req_app(const struct rn_http_req *r);
void *rn_http_req_user(const struct rn_http_req *r);
void rn_http_req_set_user(struct rn_http_req *r, void *user);
/* Monotonic time (ns) when the request's headers arrived. */
int64_t rn_http_req_start_ns(const struct rn_http_req *r);
/* The connection's socket (for rn_http_fd_gone from a stream source, and runner/server/stream.c). */
int rn_http_req_fd(const struct rn_http_req *r);
/* True once the client has closed or reset the connection (checked without blocking). */
bool rn_http_req_client_gone(const struct rn_http_req *r);
bool rn_http_fd_gone(int fd);

/* Whether a streamed answer to r is chunked (an HTTP/1.1 request; HTTP/1.0 streams are sent unframed and end
 * with the connection). runner/server/stream.c writes chunks straight to the socket only then. */
bool rn_http_req_chunked(const struct rn_http_req *r);

/* Asks the kernel for a short scheduler slice (RN_HTTP_SLICE_NS, sched_setattr's sched_runtime for a
 * SCHED_OTHER thread; policy and nice unchanged) for the calling thread, once per thread. Under Linux >= 6.6
 * (EEVDF) a woken thread with a shorter slice than the running one preempts it at once instead of waiting for
 * the running thread's slice to end: connection threads get the CPU promptly while compute threads fill every
 * core. Returns 0, or -1 where the kernel refuses or lacks it (harmless: the default slice stays). Every
 * connection thread calls it when its first request arrives. */
int rn_http_thread_latency_hint(void);

/* ---------------------------------------------------------------------------------------------------- */
/* Responses: exactly one per request. Each returns 0, or -1 when out of memory (a 500 is then sent). */

/* Adds a header to the response about to be made (e.g. Location). Copies both strings. */
int rn_http_add_header(struct rn_http_req *r, const char *name, const char *value);
/* A complete body with this content type (NULL: no Content-Type, as for an empty 200). Copies body. */
int rn_http_respond(struct rn_http_req *r, int status, const char *content_type, const void *body, size_t len);
/* JSON body, Content-Type "application/json; charset=utf-8" (gin's c.JSON). */
int rn_http_respond_json(struct rn_http_req *r, int status, const char *json, size_t len);
/* {"error": msg} with Go's escaping. */
int rn_http_respond_error(struct rn_http_req *r, int status, const char *msg);
int rn_http_respond_errorf(struct rn_http_req *r, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A streamed body (chunked): `first` (may be empty) goes out before whatever src yields. The server owns src
 * from here on, also when this fails (src->close is then called with completed == false). */
int rn_http_respond_stream(struct rn_http_req *r, int status, const char *content_type, const char *first,
			   size_t first_len, const struct rn_http_source *src);
bool rn_http_responded(const struct rn_http_req *r);

/* Monotonic clock in ns, and the wall clock as Go's time.Time JSON text in UTC with nanoseconds
 * ("2024-05-01T12:34:56.123456789Z"; Go drops trailing zeros of the fraction). buf >= 40 bytes. */
int64_t rn_http_now_ns(void);
char *rn_http_rfc3339_now(char *buf, size_t size);
/* Same for a given wall-clock time in ns since the epoch; local = false gives UTC ("Z"), true the local zone
 * offset ("+02:00"), as Go's time.Time from os.Stat does. */
char *rn_http_rfc3339(int64_t unix_ns, bool local, char *buf, size_t size);
int64_t rn_http_wall_ns(void);

/* ---------------------------------------------------------------------------------------------------- */
/* In-memory requests, for tests and fuzz targets (tests/fuzz/fuzz_http.c, fuzz_api.c): no socket. */

struct rn_http_mem_header {
	const char *name, *value;
};

struct rn_http_mem_request {
	const char *method;
	const char *path;                        /* as libmicrohttpd hands it over: no query */
	const struct rn_http_mem_header *headers; /* Content-Length and Transfer-Encoding are ignored */
	size_t n_headers;
	const char *body;
	size_t body_len;
	bool loopback; /* as if the listener were on a loopback address (the Host check applies) */
};

struct ob_buf;

/* Runs one request through what a connection runs once libmicrohttpd has its headers and framing: CORS, the
 * Host check, routing (404, 405, gin's trailing-slash redirects), the route's body cap, begin and upload or
 * the collected body, the handler, cleanup and o->on_complete, with o's routes, origins, limits and app
 * (o->listen is not used). The client never leaves and the request has no socket (rn_http_req_fd is -1); a
 * streamed answer is read to its end on this thread after the handler returns. Returns the status (0 when a
 * streamed answer was cut) and appends the body to out (which may be NULL); -1 with the reason in err when
 * o's origins are refused or memory ran out. Thread-safe as the handlers are. */
int rn_http_serve_memory(const struct rn_http_options *o, const struct rn_http_mem_request *in, struct ob_buf *out,
			 char *err, size_t err_size);

/* Pure helpers, exposed for tests. */
/* gin-contrib/cors origin match against the configured list (wildcards with one '*'). */
bool rn_http_origin_allowed(const char *const *origins, size_t n, const char *origin);
/* Ollama's allowedHost(): localhost, the machine's hostname, *.localhost / *.local / *.internal, "". */
bool rn_http_host_allowed_name(const char *host);

#endif
