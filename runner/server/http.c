/* runner/server/http.c — libmicrohttpd glue: listening socket, admission, framing checks, routing, CORS, Host
 * check, bodies, responses.
 *
 * Runs libmicrohttpd with one thread per connection, so handlers and stream sources may block. The
 * listening socket is made here (Go-style bind errors, loopback detection for the Host check). Streamed
 * bodies use a content-reader callback that returns one source piece per call, which libmicrohttpd sends as
 * one chunk before it asks for the next. It does not parse JSON or know any endpoint.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "base/buf.h"
#include "base/json.h"
#include "runner/server/http.h"

#if MHD_VERSION < 0x00097002
typedef int rn_mhd_result;
#else
typedef enum MHD_Result rn_mhd_result;
#endif

#define RN_HTTP_STREAM_BLOCK (64u << 10) /* bytes the content reader may return per call */

/* Open connections from one address (an IPv4 address, or the /64 of an IPv6 one). */
struct rn_http_peer {
	unsigned char key[9]; /* AF_INET: 4 + the address; AF_INET6: 6 + the first 8 bytes */
	unsigned n;           /* open connections */
	int next;             /* next peer in the bucket, or -1 */
};

/* A "limit reached" log line, throttled. */
struct rn_http_limit_log {
	int64_t last_ns;        /* when the last line was logged (0: never) */
	unsigned long unlogged; /* hits since then */
};

/* Connection admission: the per-address counts and the limits' log lines. */
struct rn_http_admission {
	pthread_mutex_t mu;
	struct rn_http_peer *peers; /* max_connections + 1 entries: one per address with an open connection */
	int *buckets;               /* n_buckets chains of peers */
	unsigned n_buckets;         /* a power of two */
	int free_peer;              /* chain of unused peers */
	unsigned open;              /* open connections */
	struct rn_http_limit_log per_ip, total;
};

struct rn_http_server {
	struct MHD_Daemon *daemon;
	int listen_fd;
	int port;
	bool loopback;      /* listener bound to a loopback address: Host check on */
	bool allow_all;     /* "*" among the origins */
	struct rn_http_options o;
	char **origins;     /* normalized copies */
	size_t n_origins;
	int sndbuf;         /* ORUN_HTTP_SNDBUF: SO_SNDBUF of every connection (0: the kernel's autotuning) */
	unsigned max_connections, max_per_ip;
	unsigned idle_timeout_s; /* 0: none */
	struct rn_http_admission adm;
	bool adm_ready;     /* adm.mu initialised */
};

struct rn_http_header {
	char *name, *value;
};

struct stream_state;

struct rn_http_req {
	struct rn_http_server *srv;
	struct MHD_Connection *conn;
	const struct rn_http_route *route;
	char method[16];
	char *path;
	char param[512];
	int64_t start_ns;
	int fd;
	bool http11;  /* HTTP/1.1 request: a stream of unknown size goes out chunked */
	bool timeout_off; /* the idle timeout is off while the handler and its answer run */
	/* body */
	char *body;
	size_t body_len, body_cap;
	size_t max_body;  /* this route's cap */
	uint64_t declared; /* Content-Length, or UINT64_MAX when absent (chunked) */
	bool body_too_large;
	bool discard; /* answered early: drop the rest of the body */
	void *user;
	/* response */
	struct MHD_Response *response;
	int status;
	bool queued;
	struct rn_http_header headers[RN_HTTP_MAX_HEADERS];
	int n_headers;
	char remote[64];
	/* an in-memory request (rn_http_serve_memory; conn is NULL) */
	const struct rn_http_mem_request *mem;
	char mem_length[24];              /* its Content-Length: the body's length */
	char *mem_body;                   /* the answer's body (a complete one) */
	size_t mem_body_len;
	struct stream_state *mem_stream;  /* a streamed answer, drained after the handler */
};

/* ---------------------------------------------------------------------------------------------------- */
/* Clocks */

int64_t rn_http_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t rn_http_wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

char *rn_http_rfc3339(int64_t unix_ns, bool local, char *buf, size_t size)
{
	time_t sec = (time_t)(unix_ns / 1000000000LL);
	long nsec = (long)(unix_ns % 1000000000LL);
	if (nsec < 0) {
		nsec += 1000000000L;
		sec -= 1;
	}
	struct tm tm;
	if (local)
		localtime_r(&sec, &tm);
	else
		gmtime_r(&sec, &tm);
	char frac[16] = "";
	if (nsec) {
		snprintf(frac, sizeof frac, ".%09ld", nsec);
		size_t n = strlen(frac);
		while (n > 1 && frac[n - 1] == '0')
			frac[--n] = 0;
	}
	char zone[32] = "Z";
	if (local && tm.tm_gmtoff != 0) {
		long off = tm.tm_gmtoff;
		char sign = off < 0 ? '-' : '+';
		if (off < 0)
			off = -off;
		snprintf(zone, sizeof zone, "%c%02ld:%02ld", sign, off / 3600, (off / 60) % 60);
	}
	snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d%s%s", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		 tm.tm_hour, tm.tm_min, tm.tm_sec, frac, zone);
	return buf;
}

char *rn_http_rfc3339_now(char *buf, size_t size)
{
	return rn_http_rfc3339(rn_http_wall_ns(), false, buf, size);
}

/* ---------------------------------------------------------------------------------------------------- */
/* CORS and Host check (gin-contrib/cors v1.7 and Ollama's allowedHostsMiddleware) */

bool rn_http_origin_allowed(const char *const *origins, size_t n, const char *origin)
{
	for (size_t i = 0; i < n; i++) {
		const char *o = origins[i];
		if (strcmp(o, "*") == 0)
			return true;
	}
	/* exact match against the trimmed, lower-cased list */
	for (size_t i = 0; i < n; i++) {
		const char *o = origins[i];
		while (*o == ' ' || *o == '\t' || *o == '\n' || *o == '\r')
			o++;
		size_t len = strlen(o);
		while (len && (o[len - 1] == ' ' || o[len - 1] == '\t' || o[len - 1] == '\n' || o[len - 1] == '\r'))
			len--;
		if (strlen(origin) == len) {
			bool eq = true;
			for (size_t k = 0; k < len && eq; k++) {
				char a = o[k];
				if (a >= 'A' && a <= 'Z')
					a = (char)(a - 'A' + 'a');
				eq = a == origin[k];
			}
			if (eq)
				return true;
		}
	}
	/* wildcard rules (AllowWildcard): one '*', as prefix*suffix */
	size_t olen = strlen(origin);
	for (size_t i = 0; i < n; i++) {
		const char *o = origins[i];
		const char *star = strchr(o, '*');
		if (!star)
			continue;
		size_t pre = (size_t)(star - o);
		const char *suf = star + 1;
		size_t slen = strlen(suf);
		bool has_pre = olen >= pre && strncmp(origin, o, pre) == 0;
		bool has_suf = olen >= slen && strcmp(origin + olen - slen, suf) == 0;
		if (pre == 0 && has_suf)
			return true;
		if (slen == 0 && has_pre)
			return true;
		if (has_pre && has_suf)
			return true;
	}
	return false;
}

bool rn_http_host_allowed_name(const char *host)
{
	char h[256];
	size_t n = strlen(host);
	if (n >= sizeof h)
		return false;
	for (size_t i = 0; i <= n; i++)
		h[i] = (char)((host[i] >= 'A' && host[i] <= 'Z') ? host[i] - 'A' + 'a' : host[i]);
	if (h[0] == 0 || strcmp(h, "localhost") == 0)
		return true;
	char hn[256];
	if (gethostname(hn, sizeof hn) == 0) {
		hn[sizeof hn - 1] = 0;
		for (char *p = hn; *p; p++)
			if (*p >= 'A' && *p <= 'Z')
				*p = (char)(*p - 'A' + 'a');
		if (strcmp(h, hn) == 0)
			return true;
	}
	static const char *tlds[] = {".localhost", ".local", ".internal"};
	for (size_t i = 0; i < 3; i++) {
		size_t tl = strlen(tlds[i]);
		if (n >= tl && strcmp(h + n - tl, tlds[i]) == 0)
			return true;
	}
	return false;
}

static bool ip_is_local_interface(int family, const void *addr)
{
	struct ifaddrs *ifs = NULL, *i;
	bool found = false;
	if (getifaddrs(&ifs) != 0)
		return false;
	for (i = ifs; i && !found; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != family)
			continue;
		if (family == AF_INET)
			found = memcmp(&((struct sockaddr_in *)i->ifa_addr)->sin_addr, addr, 4) == 0;
		else
			found = memcmp(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, addr, 16) == 0;
	}
	freeifaddrs(ifs);
	return found;
}

/* netip: loopback, private, unspecified, or an address of this machine. -1 when host is not an IP literal. */
static int ip_host_allowed(const char *host)
{
	unsigned char a[16];
	if (inet_pton(AF_INET, host, a) == 1) {
		if (a[0] == 127 || a[0] == 10 || (a[0] == 172 && (a[1] & 0xf0) == 16) || (a[0] == 192 && a[1] == 168))
			return 1;
		if (!a[0] && !a[1] && !a[2] && !a[3])
			return 1;
		return ip_is_local_interface(AF_INET, a);
	}
	if (inet_pton(AF_INET6, host, a) == 1) {
		static const unsigned char zero[16], one[16] = {[15] = 1};
		if (!memcmp(a, zero, 16) || !memcmp(a, one, 16) || (a[0] & 0xfe) == 0xfc)
			return 1;
		if (a[10] == 0xff && a[11] == 0xff && !memcmp(a, zero, 10)) { /* v4-mapped */
			char v4[32];
			snprintf(v4, sizeof v4, "%u.%u.%u.%u", a[12], a[13], a[14], a[15]);
			return ip_host_allowed(v4);
		}
		return ip_is_local_interface(AF_INET6, a);
	}
	return -1;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Request accessors */

const char *rn_http_req_method(const struct rn_http_req *r)
{
	return r->method;
}
const char *rn_http_req_path(const struct rn_http_req *r)
{
	return r->path;
}
const char *rn_http_req_param(const struct rn_http_req *r)
{
	return r->param;
}
/* An in-memory request's header: its framing is its body's, whatever the caller passed. */
static const char *mem_header(const struct rn_http_req *r, const char *name)
{
	if (strcasecmp(name, "Content-Length") == 0)
		return r->mem_length;
	if (strcasecmp(name, "Transfer-Encoding") == 0)
		return NULL;
	for (size_t i = 0; i < r->mem->n_headers; i++)
		if (strcasecmp(r->mem->headers[i].name, name) == 0)
			return r->mem->headers[i].value;
	return NULL;
}
const char *rn_http_req_header(const struct rn_http_req *r, const char *name)
{
	if (!r->conn)
		return mem_header(r, name);
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}
const char *rn_http_req_query(const struct rn_http_req *r, const char *key)
{
	if (!r->conn)
		return NULL;
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}
const char *rn_http_req_body(const struct rn_http_req *r, size_t *len)
{
	if (len)
		*len = r->body_len;
	return r->body ? r->body : "";
}
void *rn_http_req_app(const struct rn_http_req *r)
{
	return r->srv->o.app;
}
void *rn_http_req_user(const struct rn_http_req *r)
{
	return r->user;
}
void rn_http_req_set_user(struct rn_http_req *r, void *user)
{
	r->user = user;
}
int64_t rn_http_req_start_ns(const struct rn_http_req *r)
{
	return r->start_ns;
}
int rn_http_req_fd(const struct rn_http_req *r)
{
	return r->fd;
}

bool rn_http_fd_gone(int fd)
{
	if (fd < 0)
		return false;
	struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP};
	if (poll(&p, 1, 0) <= 0)
		return false;
	if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))
		return true;
	if (p.revents & POLLIN) {
		char c;
		ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
		if (n == 0)
			return true;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return true;
	}
	return false;
}

bool rn_http_req_chunked(const struct rn_http_req *r)
{
	return r->http11;
}

bool rn_http_req_client_gone(const struct rn_http_req *r)
{
	return rn_http_fd_gone(r->fd);
}

/* ---------------------------------------------------------------------------------------------------- */
/* Responses */

bool rn_http_responded(const struct rn_http_req *r)
{
	return r->response != NULL;
}

int rn_http_add_header(struct rn_http_req *r, const char *name, const char *value)
{
	if (r->n_headers >= RN_HTTP_MAX_HEADERS)
		return -1;
	char *n = strdup(name), *v = strdup(value);
	if (!n || !v) {
		free(n);
		free(v);
		return -1;
	}
	r->headers[r->n_headers].name = n;
	r->headers[r->n_headers].value = v;
	r->n_headers++;
	return 0;
}

static void set_response(struct rn_http_req *r, struct MHD_Response *resp, int status, const char *content_type)
{
	if (content_type)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
	for (int i = 0; i < r->n_headers; i++)
		MHD_add_response_header(resp, r->headers[i].name, r->headers[i].value);
	if (!r->conn) { /* the previous answer's body goes with it */
		free(r->mem_body);
		r->mem_body = NULL;
		r->mem_body_len = 0;
		r->mem_stream = NULL;
	}
	if (r->response)
		MHD_destroy_response(r->response);
	r->response = resp;
	r->status = status;
}

static const char oom_body[] = "{\"error\":\"out of memory\"}";

static int respond_oom(struct rn_http_req *r)
{
	struct MHD_Response *resp =
		MHD_create_response_from_buffer(sizeof oom_body - 1, (void *)oom_body, MHD_RESPMEM_PERSISTENT);
	if (resp)
		set_response(r, resp, 500, "application/json; charset=utf-8");
	return -1;
}

int rn_http_respond(struct rn_http_req *r, int status, const char *content_type, const void *body, size_t len)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return respond_oom(r);
	set_response(r, resp, status, content_type);
	if (!r->conn && (r->mem_body = malloc(len ? len : 1))) {
		memcpy(r->mem_body, body, len);
		r->mem_body_len = len;
	}
	return 0;
}

int rn_http_respond_json(struct rn_http_req *r, int status, const char *json, size_t len)
{
	return rn_http_respond(r, status, "application/json; charset=utf-8", json, len);
}

int rn_http_respond_error(struct rn_http_req *r, int status, const char *msg)
{
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	ob_jw_key(&w, "error");
	ob_jw_string(&w, msg);
	ob_jw_obj_end(&w);
	const char *s = ob_jw_str(&w);
	int rc = s ? rn_http_respond_json(r, status, s, w.len) : respond_oom(r);
	ob_jw_free(&w);
	return rc;
}

int rn_http_respond_errorf(struct rn_http_req *r, int status, const char *fmt, ...)
{
	char buf[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	return rn_http_respond_error(r, status, buf);
}

struct stream_state {
	struct rn_http_source src;
	char *first;
	size_t first_len, first_off;
	const char *cur;
	size_t cur_len, cur_off;
	bool ended, closed;
};

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct stream_state *s = cls;
	if (s->first_off < s->first_len) {
		size_t k = s->first_len - s->first_off;
		if (k > max)
			k = max;
		memcpy(buf, s->first + s->first_off, k);
		s->first_off += k;
		return (ssize_t)k;
	}
	while (s->cur_off >= s->cur_len) {
		if (s->ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
		const char *d = NULL;
		size_t n = 0;
		int rc = s->src.next(s->src.ctx, &d, &n);
		if (rc == 0) {
			s->ended = true;
			return MHD_CONTENT_READER_END_OF_STREAM;
		}
		if (rc < 0)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		s->cur = d;
		s->cur_len = n;
		s->cur_off = 0;
	}
	size_t k = s->cur_len - s->cur_off;
	if (k > max)
		k = max;
	memcpy(buf, s->cur + s->cur_off, k);
	s->cur_off += k;
	return (ssize_t)k;
}

static void stream_free(void *cls)
{
	struct stream_state *s = cls;
	if (!s->closed && s->src.close)
		s->src.close(s->src.ctx, s->ended);
	free(s->first);
	free(s);
}

int rn_http_respond_stream(struct rn_http_req *r, int status, const char *content_type, const char *first,
			   size_t first_len, const struct rn_http_source *src)
{
	struct stream_state *s = calloc(1, sizeof *s);
	if (!s || (first_len && !(s->first = malloc(first_len)))) {
		free(s);
		if (src->close)
			src->close(src->ctx, false);
		return respond_oom(r);
	}
	s->src = *src;
	if (first_len)
		memcpy(s->first, first, first_len);
	s->first_len = first_len;
	struct MHD_Response *resp =
		MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, RN_HTTP_STREAM_BLOCK, stream_reader, s, stream_free);
	if (!resp) {
		stream_free(s);
		return respond_oom(r);
	}
	set_response(r, resp, status, content_type);
	if (!r->conn)
		r->mem_stream = s;
	return 0;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Dispatch */

static unsigned method_bit(const char *m)
{
	static const struct {
		const char *name;
		unsigned bit;
	} t[] = {{"GET", RN_HTTP_GET},	     {"HEAD", RN_HTTP_HEAD},   {"POST", RN_HTTP_POST},
		 {"DELETE", RN_HTTP_DELETE}, {"PUT", RN_HTTP_PUT},     {"PATCH", RN_HTTP_PATCH},
		 {"OPTIONS", RN_HTTP_OPTIONS}};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (strcmp(m, t[i].name) == 0)
			return t[i].bit;
	return 0;
}

/* Does the route's pattern match path? Fills param for a ":name" last segment. */
static bool route_match(const char *pattern, const char *path, char *param, size_t psize)
{
	const char *colon = strstr(pattern, "/:");
	if (!colon)
		return strcmp(pattern, path) == 0;
	size_t pre = (size_t)(colon - pattern) + 1; /* including the '/' */
	if (strncmp(pattern, path, pre) != 0)
		return false;
	const char *seg = path + pre;
	if (!*seg || strchr(seg, '/'))
		return false;
	if (param) {
		snprintf(param, psize, "%s", seg);
	}
	return true;
}

static void find_route(struct rn_http_server *s, const char *path, unsigned mbit, const struct rn_http_route **hit,
		       bool *path_known, char *param, size_t psize)
{
	*hit = NULL;
	*path_known = false;
	for (const struct rn_http_route *rt = s->o.routes; rt && rt->path; rt++) {
		if (!route_match(rt->path, path, param, psize))
			continue;
		*path_known = true;
		if (rt->methods & mbit) {
			*hit = rt;
			return;
		}
	}
}

static void respond_text(struct rn_http_req *r, int status, const char *text)
{
	rn_http_respond(r, status, "text/plain", text, strlen(text));
}

/* CORS (runs first, as the first gin middleware). Returns true when it answered. */
static bool apply_cors(struct rn_http_req *r)
{
	struct rn_http_server *s = r->srv;
	if (s->o.no_cors)
		return false;
	const char *origin = rn_http_req_header(r, "Origin");
	if (!origin || !*origin)
		return false;
	const char *host = rn_http_req_header(r, "Host");
	if (host) {
		char a[600];
		snprintf(a, sizeof a, "http://%s", host);
		if (strcmp(origin, a) == 0)
			return false;
		snprintf(a, sizeof a, "https://%s", host);
		if (strcmp(origin, a) == 0)
			return false;
	}
	if (!rn_http_origin_allowed((const char *const *)s->origins, s->n_origins, origin)) {
		rn_http_respond(r, 403, NULL, "", 0);
		return true;
	}
	if (strcmp(r->method, "OPTIONS") == 0) {
		rn_http_add_header(r, "Access-Control-Allow-Methods", "GET,POST,PUT,PATCH,DELETE,HEAD,OPTIONS");
		rn_http_add_header(r, "Access-Control-Allow-Headers",
				   "Authorization,Content-Type,User-Agent,Accept,X-Requested-With,Openai-Beta,"
				   "X-Stainless-Arch,X-Stainless-Async,X-Stainless-Custom-Poll-Interval,"
				   "X-Stainless-Helper-Method,X-Stainless-Lang,X-Stainless-Os,"
				   "X-Stainless-Package-Version,X-Stainless-Poll-Helper,X-Stainless-Retry-Count,"
				   "X-Stainless-Runtime,X-Stainless-Runtime-Version,X-Stainless-Timeout");
		rn_http_add_header(r, "Access-Control-Max-Age", "43200");
		if (s->allow_all) {
			rn_http_add_header(r, "Access-Control-Allow-Origin", "*");
		} else {
			rn_http_add_header(r, "Vary", "Origin");
			rn_http_add_header(r, "Vary", "Access-Control-Request-Method");
			rn_http_add_header(r, "Vary", "Access-Control-Request-Headers");
			rn_http_add_header(r, "Access-Control-Allow-Origin", origin);
		}
		rn_http_respond(r, 204, NULL, "", 0);
		return true;
	}
	if (s->allow_all) {
		rn_http_add_header(r, "Access-Control-Allow-Origin", "*");
	} else {
		rn_http_add_header(r, "Vary", "Origin");
		rn_http_add_header(r, "Access-Control-Allow-Origin", origin);
	}
	return false;
}

/* Ollama's allowedHostsMiddleware. Returns true when it answered. */
static bool apply_host_check(struct rn_http_req *r)
{
	struct rn_http_server *s = r->srv;
	if (s->o.no_host_check || !s->loopback)
		return false;
	const char *hh = rn_http_req_header(r, "Host");
	char host[300];
	snprintf(host, sizeof host, "%s", hh ? hh : "");
	/* net.SplitHostPort; on failure the whole value is the host */
	const char *colon = strrchr(host, ':');
	if (colon) {
		if (host[0] == '[') {
			char *rb = strchr(host, ']');
			if (rb && rb + 1 == colon) {
				memmove(host, host + 1, (size_t)(rb - host - 1));
				host[rb - host - 1] = 0;
			}
		} else if (strchr(host, ':') == colon) {
			host[colon - host] = 0;
		}
	}
	if (ip_host_allowed(host) == 1)
		return false;
	if (rn_http_host_allowed_name(host)) {
		if (strcmp(r->method, "OPTIONS") == 0) {
			rn_http_respond(r, 204, NULL, "", 0);
			return true;
		}
		return false;
	}
	rn_http_respond(r, 403, NULL, "", 0);
	return true;
}

/* Framing: Go's net/http rules (transfer.go) where libmicrohttpd is lenient. libmicrohttpd frames the body by
 * the FIRST Content-Length, honours Transfer-Encoding on HTTP/1.0, and reads a body with a Transfer-Encoding
 * other than chunked until the connection closes: a proxy in front that frames by another header would see
 * other requests than orun does. An answer given before the body makes libmicrohttpd close the connection
 * after it, so nothing after the headers is ever read as a request. */
struct framing {
	unsigned n_cl, n_te;
	const char *cl, *te; /* the first of each */
	bool cl_differ;
};

static bool is_ows(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Go's textproto.TrimString: the value without leading and trailing ASCII white space. */
static const char *trim_ows(const char *v, size_t *len)
{
	size_t n = strlen(v);
	while (n && is_ows(v[n - 1]))
		n--;
	while (n && is_ows(*v)) {
		v++;
		n--;
	}
	*len = n;
	return v;
}

static rn_mhd_result framing_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct framing *f = cls;
	(void)kind;
	if (!value)
		value = "";
	if (strcasecmp(key, "Content-Length") == 0) {
		if (f->n_cl++ == 0) {
			f->cl = value;
		} else {
			size_t a, b;
			const char *x = trim_ows(f->cl, &a), *y = trim_ows(value, &b);
			if (a != b || memcmp(x, y, a) != 0)
				f->cl_differ = true;
		}
	} else if (strcasecmp(key, "Transfer-Encoding") == 0) {
		if (f->n_te++ == 0)
			f->te = value;
	}
	return MHD_YES;
}

/* Refuses a request whose body framing is ambiguous; returns true when it answered. */
static bool check_framing(struct rn_http_req *r)
{
	struct framing f = {0};
	MHD_get_connection_values(r->conn, MHD_HEADER_KIND, framing_header, &f);
	size_t n = 0;
	const char *te = f.n_te ? trim_ows(f.te, &n) : "";
	int status = 0;
	if (f.cl_differ)
		status = 400; /* Go: "http: message cannot contain multiple Content-Length headers" */
	else if (f.n_te && !r->http11)
		status = 400; /* RFC 9112 6.1: faulty framing (Go ignores the header, libmicrohttpd would not) */
	else if (f.n_te > 1 || (f.n_te && (n != 7 || strncasecmp(te, "chunked", 7) != 0)))
		status = 501; /* Go: "too many transfer encodings", "unsupported transfer encoding" */
	else if (f.n_te && f.n_cl)
		status = 400; /* Go lets chunked win; refused as RFC 9112 6.1 allows: a proxy may frame by the length */
	if (status == 400)
		rn_http_respond(r, 400, "text/plain; charset=utf-8", "400 Bad Request", 15);
	else if (status == 501)
		rn_http_respond(r, 501, "text/plain; charset=utf-8", "Unsupported transfer encoding", 29);
	return status != 0;
}

static void respond_too_large(struct rn_http_req *r)
{
	rn_http_respond_errorf(r, 413, "request body too large: the limit is %zu bytes", r->max_body);
}

/* The route's body cap; a body that says in advance it is larger is refused before it is read. Returns true
 * when it answered. */
static bool check_body_size(struct rn_http_req *r)
{
	const struct rn_http_server *s = r->srv;
	r->max_body = (r->route->methods & RN_HTTP_PROMPT_BODY) ? s->o.max_prompt_body : s->o.max_body;
	r->declared = UINT64_MAX;
	const char *cl = rn_http_req_header(r, "Content-Length");
	if (cl) /* libmicrohttpd has checked it is a number */
		r->declared = strtoull(cl, NULL, 10);
	if (r->route->upload || r->declared == UINT64_MAX || r->declared <= r->max_body)
		return false;
	respond_too_large(r);
	return true;
}

static void route_request(struct rn_http_req *r)
{
	struct rn_http_server *s = r->srv;
	if (apply_cors(r) || apply_host_check(r))
		return;
	unsigned mbit = method_bit(r->method);
	bool known = false;
	const struct rn_http_route *rt = NULL;
	find_route(s, r->path, mbit, &rt, &known, r->param, sizeof r->param);
	if (rt) {
		r->route = rt;
		(void)check_body_size(r);
		return;
	}
	size_t n = strlen(r->path);
	if (!known && n > 1 && r->path[n - 1] == '/') {
		/* gin's RedirectTrailingSlash: 301 for GET, 307 otherwise */
		char *p = strndup(r->path, n - 1);
		bool k2 = false;
		const struct rn_http_route *rt2 = NULL;
		if (p)
			find_route(s, p, mbit, &rt2, &k2, NULL, 0);
		if (rt2) {
			rn_http_add_header(r, "Location", p);
			int code = strcmp(r->method, "GET") == 0 ? 301 : 307;
			char body[600];
			snprintf(body, sizeof body, "<a href=\"%s\">%s</a>.\n\n",
				 p, code == 301 ? "Moved Permanently" : "Temporary Redirect");
			rn_http_respond(r, code, "text/html; charset=utf-8", body, strlen(body));
			free(p);
			return;
		}
		free(p);
	}
	if (known)
		respond_text(r, 405, "405 method not allowed");
	else
		respond_text(r, 404, "404 page not found");
}

static int body_append(struct rn_http_req *r, const char *data, size_t n)
{
	if (n > r->max_body - r->body_len) {
		r->body_too_large = true;
		return -1;
	}
	/* a body of announced length is held once, without doubling slack */
	size_t need = r->body_len + n + 1;
	if (!r->body && r->declared != UINT64_MAX && r->declared >= need - 1)
		need = (size_t)r->declared + 1;
	if (ob_grow(&r->body, &r->body_cap, need, 1, 4096, 0) != OB_GROW_OK)
		return -1;
	memcpy(r->body + r->body_len, data, n);
	r->body_len += n;
	r->body[r->body_len] = 0;
	return 0;
}

static rn_mhd_result queue(struct rn_http_req *r)
{
	if (r->queued)
		return MHD_YES;
	if (!r->response)
		rn_http_respond_error(r, 500, "internal error: the handler sent no response");
	if (!r->response)
		return MHD_NO;
	r->queued = true;
	rn_mhd_result rc = MHD_queue_response(r->conn, (unsigned)r->status, r->response);
	MHD_destroy_response(r->response);
	r->response = NULL;
	return rc;
}

/* The kernel's struct sched_attr (sched_setattr(2)), spelled out: not every libc declares it. */
struct rn_sched_attr {
	uint32_t size, sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime, sched_deadline, sched_period;
	uint32_t sched_util_min, sched_util_max;
};

int rn_http_thread_latency_hint(void)
{
#if defined(__linux__) && defined(SYS_sched_getattr) && defined(SYS_sched_setattr)
	static _Thread_local bool done;
	if (done)
		return 0;
	done = true;
	struct rn_sched_attr a;
	memset(&a, 0, sizeof a);
	/* keep the policy and nice value as they are; only the requested slice changes */
	if (syscall(SYS_sched_getattr, 0, &a, (unsigned)sizeof a, 0) != 0)
		return -1;
	if (a.sched_policy != 0 /* SCHED_OTHER */)
		return -1;
	a.size = sizeof a;
	a.sched_flags = 0;
	a.sched_runtime = RN_HTTP_SLICE_NS;
	return syscall(SYS_sched_setattr, 0, &a, 0) == 0 ? 0 : -1;
#else
	return -1;
#endif
}

static rn_mhd_result on_access(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
			       const char *version, const char *upload_data, size_t *upload_size, void **con_cls)
{
	struct rn_http_server *s = cls;
	struct rn_http_req *r = *con_cls;
	if (!r) {
		(void)rn_http_thread_latency_hint(); /* this connection's thread (no effect before Linux 6.6) */
		r = calloc(1, sizeof *r);
		if (!r)
			return MHD_NO;
		*con_cls = r;
		r->srv = s;
		r->conn = conn;
		r->start_ns = rn_http_now_ns();
		r->fd = -1;
		r->http11 = version && strcmp(version, "HTTP/1.1") == 0;
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (ci)
			r->fd = ci->connect_fd;
		ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		if (ci && ci->client_addr) {
			const struct sockaddr *sa = ci->client_addr;
			if (sa->sa_family == AF_INET)
				inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, r->remote, sizeof r->remote);
			else if (sa->sa_family == AF_INET6)
				inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, r->remote,
					  sizeof r->remote);
		}
		snprintf(r->method, sizeof r->method, "%s", method);
		r->path = strdup(url);
		if (!r->path)
			return MHD_NO;
		if (!check_framing(r))
			route_request(r);
		if (!r->response && r->route->begin)
			r->route->begin(r);
		if (r->response) {
			/* answered before the body: libmicrohttpd skips the body (and closes if one was sent) */
			r->discard = true;
			return queue(r);
		}
		return MHD_YES;
	}
	if (*upload_size) {
		size_t n = *upload_size;
		*upload_size = 0;
		if (r->discard)
			return MHD_YES;
		if (r->route->upload) {
			if (r->route->upload(r, upload_data, n) < 0) {
				if (!r->response)
					rn_http_respond_error(r, 500, "upload failed");
				r->discard = true;
			}
		} else if (body_append(r, upload_data, n) < 0) {
			if (r->body_too_large)
				respond_too_large(r);
			else
				respond_oom(r);
			r->discard = true;
		}
		return MHD_YES;
	}
	if (!r->response && r->route) {
		/* the handler may wait minutes (a model load, a long prefill before the first token): no idle
		 * timeout until its answer is out (on_completed turns it back on) */
		if (s->idle_timeout_s) {
			MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
			r->timeout_off = true;
		}
		r->route->handler(r);
	}
	return queue(r);
}

/* A finished request (also an aborted one): the completion callback, the route's cleanup, then free. */
static void req_end(struct rn_http_req *r)
{
	const struct rn_http_server *s = r->srv;
	if (s->o.on_complete) {
		double secs = (double)(rn_http_now_ns() - r->start_ns) / 1e9;
		const char *label = r->route ? (r->route->label ? r->route->label : r->route->path) : "";
		s->o.on_complete(s->o.app, label, r->method, r->path ? r->path : "", r->remote,
				 r->queued ? r->status : 0, secs);
	}
	if (r->route && r->route->cleanup)
		r->route->cleanup(r, r->user);
	if (r->response)
		MHD_destroy_response(r->response);
	for (int i = 0; i < r->n_headers; i++) {
		free(r->headers[i].name);
		free(r->headers[i].value);
	}
	free(r->mem_body);
	free(r->body);
	free(r->path);
	free(r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	(void)toe;
	struct rn_http_server *s = cls;
	struct rn_http_req *r = *con_cls;
	if (!r)
		return;
	*con_cls = NULL;
	if (r->timeout_off) /* the connection waits for its next request: idle time counts again, from now */
		MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT, s->idle_timeout_s);
	req_end(r);
}

/* ---------------------------------------------------------------------------------------------------- */
/* Admission: connections per address and in all, checked by the accept policy on the listening thread, which
 * also runs the connection-started notifications (so the count it reads is exact). libmicrohttpd's own limits
 * would refuse as well (with poll() it accepts and closes past its limit, it never leaves a client waiting in
 * the listen queue) but silently; and it counts every IPv6 address apart although a host holds a whole /64. */

static void warn(const struct rn_http_server *s, const char *msg)
{
	if (s->o.on_warning)
		s->o.on_warning(s->o.app, msg);
	else
		fprintf(stderr, "%s\n", msg);
}

/* Logs a limit hit, at most once per RN_HTTP_LIMIT_LOG_NS (counting the others). Called with adm.mu held. */
static void limit_hit(struct rn_http_server *s, struct rn_http_limit_log *l, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void limit_hit(struct rn_http_server *s, struct rn_http_limit_log *l, const char *fmt, ...)
{
	int64_t now = rn_http_now_ns();
	if (l->last_ns && now - l->last_ns < RN_HTTP_LIMIT_LOG_NS) {
		l->unlogged++;
		return;
	}
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (l->unlogged && k > 0 && (size_t)k < sizeof msg)
		snprintf(msg + k, sizeof msg - (size_t)k, " (%lu more times since the last report)", l->unlogged);
	l->last_ns = now;
	l->unlogged = 0;
	warn(s, msg);
}

/* The key an address is counted under: the IPv4 address (also when mapped into IPv6), or an IPv6 /64. */
static bool peer_key(const struct sockaddr *sa, unsigned char key[9])
{
	memset(key, 0, 9);
	if (sa->sa_family == AF_INET) {
		key[0] = 4;
		memcpy(key + 1, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a6)) {
			key[0] = 4;
			memcpy(key + 1, a6->s6_addr + 12, 4);
		} else {
			key[0] = 6;
			memcpy(key + 1, a6->s6_addr, 8);
		}
		return true;
	}
	return false;
}

static unsigned peer_bucket(const struct rn_http_admission *a, const unsigned char key[9])
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (int i = 0; i < 9; i++)
		h = (h ^ key[i]) * 16777619u;
	return h & (a->n_buckets - 1);
}

static int peer_find(const struct rn_http_admission *a, const unsigned char key[9])
{
	for (int i = a->buckets[peer_bucket(a, key)]; i >= 0; i = a->peers[i].next)
		if (memcmp(a->peers[i].key, key, 9) == 0)
			return i;
	return -1;
}

static void addr_text(const struct sockaddr *sa, char *buf, size_t size)
{
	snprintf(buf, size, "?");
	if (sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buf, (socklen_t)size);
	else if (sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, buf, (socklen_t)size);
}

/* libmicrohttpd's accept policy: runs on the listening thread for every new connection. */
static rn_mhd_result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	struct rn_http_server *s = cls;
	unsigned char key[9];
	(void)addrlen;
	bool keyed = addr && peer_key(addr, key);
	struct rn_http_admission *a = &s->adm;
	char ip[INET6_ADDRSTRLEN] = "?";
	pthread_mutex_lock(&a->mu);
	int i = keyed ? peer_find(a, key) : -1;
	bool full = a->open >= s->max_connections, crowd = i >= 0 && a->peers[i].n >= s->max_per_ip;
	if ((full || crowd) && addr)
		addr_text(addr, ip, sizeof ip);
	if (full)
		limit_hit(s, &a->total, "refused a connection from %s: %u connections are open (ORUN_HTTP_MAX_CONNECTIONS)",
			  ip, a->open);
	else if (crowd)
		limit_hit(s, &a->per_ip, "refused a connection from %s%s: %u connections from this address are open "
			     "(ORUN_HTTP_MAX_CONNECTIONS_PER_IP)", ip, key[0] == 6 ? " (its /64)" : "", a->peers[i].n);
	pthread_mutex_unlock(&a->mu);
	return full || crowd ? MHD_NO : MHD_YES;
}

/* A connection started: count it, under its address; *ctx remembers the address's entry. */
static void admission_start(struct rn_http_server *s, struct MHD_Connection *conn, void **ctx)
{
	struct rn_http_admission *a = &s->adm;
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	unsigned char key[9];
	bool keyed = ci && ci->client_addr && peer_key(ci->client_addr, key);
	pthread_mutex_lock(&a->mu);
	a->open++;
	int i = keyed ? peer_find(a, key) : -1;
	if (keyed && i < 0 && a->free_peer >= 0) {
		i = a->free_peer;
		a->free_peer = a->peers[i].next;
		memcpy(a->peers[i].key, key, 9);
		a->peers[i].n = 0;
		unsigned b = peer_bucket(a, key);
		a->peers[i].next = a->buckets[b];
		a->buckets[b] = i;
	}
	if (i >= 0)
		a->peers[i].n++;
	*ctx = (void *)(intptr_t)(i + 1);
	pthread_mutex_unlock(&a->mu);
}

static void admission_end(struct rn_http_server *s, void *ctx)
{
	struct rn_http_admission *a = &s->adm;
	int i = (int)(intptr_t)ctx - 1;
	pthread_mutex_lock(&a->mu);
	a->open--;
	if (i >= 0 && --a->peers[i].n == 0) {
		int *link = &a->buckets[peer_bucket(a, a->peers[i].key)];
		while (*link != i)
			link = &a->peers[*link].next;
		*link = a->peers[i].next;
		a->peers[i].next = a->free_peer;
		a->free_peer = i;
	}
	pthread_mutex_unlock(&a->mu);
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct rn_http_server *s = cls;
	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		admission_end(s, *socket_context);
		return;
	}
	if (toe != MHD_CONNECTION_NOTIFY_STARTED)
		return;
	admission_start(s, conn, socket_context);
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci) {
		int one = 1;
		(void)setsockopt(ci->connect_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		if (s->sndbuf > 0)
			(void)setsockopt(ci->connect_fd, SOL_SOCKET, SO_SNDBUF, &s->sndbuf, sizeof s->sndbuf);
	}
}

/* ---------------------------------------------------------------------------------------------------- */
/* Start / stop */

static bool addr_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const unsigned char *a = (const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr;
		return a[0] == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		if (IN6_IS_ADDR_LOOPBACK(a))
			return true;
		if (IN6_IS_ADDR_V4MAPPED(a))
			return a->s6_addr[12] == 127;
	}
	return false;
}

static int make_listener(const struct rn_srv_host *h, int *port, bool *loopback, char *err, size_t err_size)
{
	char hp[300], portstr[16];
	rn_srv_join_host_port(h->host, h->port, hp, sizeof hp);
	snprintf(portstr, sizeof portstr, "%d", h->port);
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res = NULL;
	int gai = getaddrinfo(h->host[0] ? h->host : NULL, portstr, &hints, &res);
	if (gai != 0) {
		snprintf(err, err_size, "listen tcp %s: lookup %s: %s", hp, h->host, gai_strerror(gai));
		return -1;
	}
	/* With no host, prefer the IPv6 wildcard (dual stack) as Go does; else the first address. */
	struct addrinfo *pick = res;
	if (!h->host[0])
		for (struct addrinfo *a = res; a; a = a->ai_next)
			if (a->ai_family == AF_INET6) {
				pick = a;
				break;
			}
	int fd = socket(pick->ai_family, pick->ai_socktype | SOCK_CLOEXEC, pick->ai_protocol);
	if (fd < 0) {
		snprintf(err, err_size, "listen tcp %s: socket: %s", hp, strerror(errno));
		freeaddrinfo(res);
		return -1;
	}
	int one = 1, zero = 0;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (pick->ai_family == AF_INET6 && !h->host[0])
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
	if (bind(fd, pick->ai_addr, pick->ai_addrlen) != 0) {
		snprintf(err, err_size, "listen tcp %s: bind: %s", hp, strerror(errno));
		for (char *p = err; *p; p++) /* Go prints errno texts in lower case */
			if (p > err && p[-1] == ':' && *p == ' ' && p[1] >= 'A' && p[1] <= 'Z')
				p[1] = (char)(p[1] - 'A' + 'a');
		close(fd);
		freeaddrinfo(res);
		return -1;
	}
	*loopback = addr_is_loopback(pick->ai_addr);
	freeaddrinfo(res);
	if (listen(fd, 1024) != 0) {
		snprintf(err, err_size, "listen tcp %s: listen: %s", hp, strerror(errno));
		close(fd);
		return -1;
	}
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET)
			*port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		else if (ss.ss_family == AF_INET6)
			*port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	}
	return fd;
}

/* Raises the soft open-file limit to the hard one (Go's runtime does the same at start) and returns the
 * connection cap that leaves RN_HTTP_FD_RESERVE files for the rest of the process. */
static unsigned fit_fd_limit(const struct rn_http_server *s, unsigned want)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return want;
	if (rl.rlim_cur < rl.rlim_max) {
		struct rlimit up = {rl.rlim_max, rl.rlim_max};
		if (setrlimit(RLIMIT_NOFILE, &up) == 0)
			rl.rlim_cur = rl.rlim_max;
	}
	if (rl.rlim_cur == RLIM_INFINITY)
		return want;
	rlim_t room = rl.rlim_cur > 2 * RN_HTTP_FD_RESERVE ? rl.rlim_cur - RN_HTTP_FD_RESERVE : rl.rlim_cur / 2;
	if (want <= room)
		return want;
	char msg[256];
	snprintf(msg, sizeof msg, "at most %llu connections (ORUN_HTTP_MAX_CONNECTIONS=%u): the open-file limit is %llu",
		 (unsigned long long)room, want, (unsigned long long)rl.rlim_cur);
	warn(s, msg);
	return (unsigned)room;
}

static int admission_init(struct rn_http_server *s)
{
	struct rn_http_admission *a = &s->adm;
	if (pthread_mutex_init(&a->mu, NULL) != 0)
		return -1;
	s->adm_ready = true;
	a->n_buckets = 16;
	while (a->n_buckets < s->max_connections)
		a->n_buckets *= 2;
	a->peers = calloc((size_t)s->max_connections + 1, sizeof *a->peers);
	a->buckets = malloc(a->n_buckets * sizeof *a->buckets);
	if (!a->peers || !a->buckets)
		return -1;
	for (unsigned i = 0; i < a->n_buckets; i++)
		a->buckets[i] = -1;
	for (unsigned i = 0; i <= s->max_connections; i++)
		a->peers[i].next = i < s->max_connections ? (int)i + 1 : -1;
	a->free_peer = 0;
	return 0;
}

static void admission_free(struct rn_http_server *s)
{
	free(s->adm.peers);
	free(s->adm.buckets);
	if (s->adm_ready)
		pthread_mutex_destroy(&s->adm.mu);
}

/* The allowed CORS origins of s->o, checked (one '*' at most, a known scheme otherwise) and copied. Returns 0,
 * or -1 with the reason in err. */
static int set_origins(struct rn_http_server *s, char *err, size_t err_size)
{
	const struct rn_http_options *o = &s->o;
	if (o->no_cors)
		return 0;
	s->origins = calloc(o->n_origins + 1, sizeof *s->origins);
	if (!s->origins)
		goto nomem;
	for (size_t i = 0; i < o->n_origins; i++) {
		const char *og = o->origins[i];
		if (strcmp(og, "*") == 0)
			s->allow_all = true;
		size_t stars = 0;
		for (const char *p = og; *p; p++)
			stars += *p == '*';
		if (stars > 1) {
			snprintf(err, err_size, "OLLAMA_ORIGINS: only one * is allowed (in \"%s\")", og);
			return -1;
		}
		if (!stars && strncmp(og, "http://", 7) && strncmp(og, "https://", 8) &&
		    strncmp(og, "chrome-extension://", 19) && strncmp(og, "safari-extension://", 19) &&
		    strncmp(og, "moz-extension://", 16) && strncmp(og, "ms-browser-extension://", 23)) {
			snprintf(err, err_size,
				 "OLLAMA_ORIGINS: bad origin \"%s\": origins must contain '*' or include "
				 "http://,https://,chrome-extension://,safari-extension://,moz-extension://,"
				 "ms-browser-extension://",
				 og);
			return -1;
		}
		if (!(s->origins[s->n_origins++] = strdup(og)))
			goto nomem;
	}
	return 0;
nomem:
	snprintf(err, err_size, "out of memory");
	return -1;
}

static void set_body_caps(struct rn_http_server *s)
{
	if (!s->o.max_body)
		s->o.max_body = RN_HTTP_MAX_BODY_DEFAULT;
	if (!s->o.max_prompt_body)
		s->o.max_prompt_body = RN_HTTP_MAX_BODY_DEFAULT;
}

static void free_origins(struct rn_http_server *s)
{
	for (size_t i = 0; i < s->n_origins; i++)
		free(s->origins[i]);
	free(s->origins);
	s->origins = NULL;
	s->n_origins = 0;
}

/* Everything of a server but the daemon (stopped first, when there is one): the listening socket, the
 * origins, the admission table, the struct. */
static void server_release(struct rn_http_server *s)
{
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	free_origins(s);
	admission_free(s);
	free(s);
}

struct rn_http_server *rn_http_start(const struct rn_http_options *o, char *err, size_t err_size)
{
	struct rn_http_server *s = calloc(1, sizeof *s);
	if (!s) {
		snprintf(err, err_size, "out of memory");
		return NULL;
	}
	s->o = *o;
	s->listen_fd = -1;
	set_body_caps(s);
	s->idle_timeout_s = o->idle_timeout_s < 0   ? 0
			    : o->idle_timeout_s ? (unsigned)o->idle_timeout_s
						: RN_HTTP_IDLE_TIMEOUT_S;
	s->max_per_ip = o->max_connections_per_ip ? o->max_connections_per_ip : RN_HTTP_MAX_CONNECTIONS_PER_IP;
	s->max_connections = fit_fd_limit(s, o->max_connections ? o->max_connections : RN_HTTP_MAX_CONNECTIONS);
	if (admission_init(s) != 0)
		goto nomem;
	if (set_origins(s, err, err_size) != 0)
		goto fail;
	/* a diagnostic knob: a small fixed send buffer makes a slow client's back-pressure show at once (the tests
	 * use it to exercise the hand-over of a short streamed write); unset, the kernel sizes the buffer */
	const char *sb = getenv("ORUN_HTTP_SNDBUF");
	if (sb && *sb) {
		char *end;
		long v = strtol(sb, &end, 10);
		if (*end || v <= 0 || v > (1L << 30)) {
			snprintf(err, err_size, "ORUN_HTTP_SNDBUF: \"%s\" is not a size in bytes", sb);
			goto fail;
		}
		s->sndbuf = (int)v;
	}
	s->listen_fd = make_listener(o->listen, &s->port, &s->loopback, err, err_size);
	if (s->listen_fd < 0)
		goto fail;
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO;
	s->daemon = MHD_start_daemon(
		flags, 0, on_accept, s, on_access, s, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)s->listen_fd,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
		/* one above orun's own cap, so that on_accept refuses first, and says so */
		MHD_OPTION_CONNECTION_LIMIT, s->max_connections + 1, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(128u << 10),
		MHD_OPTION_CONNECTION_TIMEOUT, s->idle_timeout_s, MHD_OPTION_END);
	if (!s->daemon) {
		snprintf(err, err_size, "cannot start the HTTP server (libmicrohttpd) on port %d", s->port);
		goto fail;
	}
	return s;
nomem:
	snprintf(err, err_size, "out of memory");
fail:
	server_release(s);
	return NULL;
}

int rn_http_port(const struct rn_http_server *s)
{
	return s->port;
}

unsigned rn_http_max_connections(const struct rn_http_server *s)
{
	return s->max_connections;
}

char *rn_http_limits_text(const struct rn_http_server *s, char *buf, size_t size)
{
	char idle[32] = "none";
	if (s->idle_timeout_s)
		snprintf(idle, sizeof idle, "%u s", s->idle_timeout_s);
	snprintf(buf, size, "bodies up to %zu bytes (%zu with a prompt), %u connections (%u per address), idle timeout %s",
		 s->o.max_body, s->o.max_prompt_body, s->max_connections, s->max_per_ip, idle);
	return buf;
}

void rn_http_stop(struct rn_http_server *s)
{
	if (!s)
		return;
	if (s->daemon)
		MHD_stop_daemon(s->daemon);
	server_release(s);
}

/* ---------------------------------------------------------------------------------------------------- */
/* In-memory requests */

/* The streamed answer, read to its end as libmicrohttpd would read it. Returns 0, or -1 when the source cut
 * the stream. */
static int drain_stream(struct stream_state *st, struct ob_buf *out)
{
	char buf[4096];
	for (;;) {
		ssize_t k = stream_reader(st, 0, buf, sizeof buf);
		if (k == MHD_CONTENT_READER_END_OF_STREAM)
			return 0;
		if (k < 0)
			return -1;
		if (out)
			ob_buf_append(out, buf, (size_t)k);
	}
}

int rn_http_serve_memory(const struct rn_http_options *o, const struct rn_http_mem_request *in, struct ob_buf *out,
			 char *err, size_t err_size)
{
	struct rn_http_server s;
	memset(&s, 0, sizeof s);
	s.o = *o;
	s.listen_fd = -1;
	s.loopback = in->loopback;
	set_body_caps(&s);
	struct rn_http_req *r = NULL;
	int status = -1;
	if (set_origins(&s, err, err_size) != 0)
		goto done;
	if (!(r = calloc(1, sizeof *r)) || !(r->path = strdup(in->path))) {
		snprintf(err, err_size, "out of memory");
		goto done;
	}
	r->srv = &s;
	r->mem = in;
	r->start_ns = rn_http_now_ns();
	r->fd = -1;
	snprintf(r->method, sizeof r->method, "%s", in->method);
	snprintf(r->mem_length, sizeof r->mem_length, "%zu", in->body_len);
	/* as on_access: route, begin, the body (one piece), the handler */
	route_request(r);
	if (!r->response && r->route->begin)
		r->route->begin(r);
	if (!r->response && in->body_len) {
		if (r->route->upload) {
			if (r->route->upload(r, in->body, in->body_len) < 0 && !r->response)
				rn_http_respond_error(r, 500, "upload failed");
		} else if (body_append(r, in->body, in->body_len) < 0) {
			if (r->body_too_large)
				respond_too_large(r);
			else
				respond_oom(r);
		}
	}
	if (!r->response)
		r->route->handler(r);
	if (!r->response)
		rn_http_respond_error(r, 500, "internal error: the handler sent no response");
	status = r->status;
	r->queued = true;
	if (r->mem_stream) {
		if (drain_stream(r->mem_stream, out) < 0)
			status = 0; /* the connection would have been cut */
	} else if (out && r->mem_body_len) {
		ob_buf_append(out, r->mem_body, r->mem_body_len);
	}
done:
	if (r)
		req_end(r);
	free_origins(&s);
	return status;
}
