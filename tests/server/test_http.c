/* tests/server/test_http.c — the HTTP layer (runner/server/http.c) over real sockets: routing (404/405, trailing
 * slash), CORS as gin-contrib/cors with Ollama's origins, the Host-header check, request bodies and their caps,
 * framing refused as Go refuses it, streamed bodies (one chunk per piece, each arriving before the next is
 * produced), client-disconnect detection, the idle timeout (never while a handler or its stream runs), the
 * connection limits per address and in all, and the OLLAMA_HOST / duration parsers of
 * runner/server/envconfig.c and the Go decoding helpers.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "runner/server/http.h"
#include "runner/api/decode.h"
#include "runner/server/envconfig.h"
#include "tests/check.h"

/* ------------------------------------------------------------------------------------ a tiny client */

/* A connection to 127.0.0.1:port from the loopback address `from` (any address of 127/8 is local). */
static int connect_from(const char *from, int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in src = {.sin_family = AF_INET};
	inet_pton(AF_INET, from, &src.sin_addr);
	if (bind(fd, (struct sockaddr *)&src, sizeof src) != 0) {
		close(fd);
		return -1;
	}
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		close(fd);
		return -1;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return fd;
}

static int connect_to(int port)
{
	return connect_from("127.0.0.1", port);
}

/* Reads what arrives on fd within wait_ms of silence; *closed tells whether the peer closed (EOF or reset). */
static char *read_for(int fd, int wait_ms, bool *closed)
{
	struct timeval tv = {wait_ms / 1000, (wait_ms % 1000) * 1000};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	*closed = false;
	for (;;) {
		if (len + 4096 > cap)
			buf = realloc(buf, cap *= 2);
		ssize_t n = read(fd, buf + len, cap - len - 1);
		if (n > 0) {
			len += (size_t)n;
			continue;
		}
		*closed = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
		break;
	}
	buf[len] = 0;
	return buf;
}

/* Sends a raw request on a new connection; returns what came back within wait_ms and whether orun closed. */
static char *exchange(int port, const char *req, size_t len, int wait_ms, bool *closed)
{
	int fd = connect_to(port);
	if (fd < 0 || write(fd, req, len) != (ssize_t)len) {
		if (fd >= 0)
			close(fd);
		*closed = true;
		return strdup("");
	}
	char *r = read_for(fd, wait_ms, closed);
	close(fd);
	return r;
}

/* How many responses a buffer holds. */
static int count_responses(const char *buf)
{
	int n = 0;
	for (const char *p = buf; (p = strstr(p, "HTTP/1.1 ")); p++)
		n++;
	return n;
}

/* Sends a raw request and reads the whole response (Connection: close). Returns malloc'd text. */
static char *roundtrip(int port, const char *req, size_t req_len)
{
	bool closed;
	return exchange(port, req, req_len, 10000, &closed);
}

static char *request(int port, const char *method, const char *path, const char *headers, const char *body)
{
	char req[8192];
	int n = snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s", method, path,
			 headers ? headers : "");
	if (body)
		n += snprintf(req + n, sizeof req - (size_t)n, "Content-Length: %zu\r\n\r\n%s", strlen(body), body);
	else
		n += snprintf(req + n, sizeof req - (size_t)n, "\r\n");
	return roundtrip(port, req, (size_t)n);
}

static int status_of(const char *resp)
{
	int st = 0;
	if (resp)
		sscanf(resp, "HTTP/1.%*d %d", &st);
	return st;
}

static const char *body_of(const char *resp)
{
	const char *b = resp ? strstr(resp, "\r\n\r\n") : NULL;
	return b ? b + 4 : "";
}

static bool has_header(const char *resp, const char *line)
{
	char pat[512];
	snprintf(pat, sizeof pat, "\r\n%s\r\n", line);
	const char *end = strstr(resp, "\r\n\r\n");
	const char *p = strcasestr(resp, pat);
	return p && end && p < end;
}

/* ------------------------------------------------------------------------------------ the server side */

static void h_root(struct rn_http_req *r)
{
	rn_http_respond(r, 200, "text/plain; charset=utf-8", "Ollama is running", 17);
}

static void h_echo(struct rn_http_req *r)
{
	size_t n;
	const char *b = rn_http_req_body(r, &n);
	char out[256];
	snprintf(out, sizeof out, "%s %zu %s", rn_http_req_method(r), n, rn_http_req_param(r));
	rn_http_respond(r, 200, "text/plain", out, strlen(out));
	(void)b;
}

static void h_error(struct rn_http_req *r)
{
	rn_http_respond_error(r, 404, "model 'x<y>' not found");
}

/* A stream of 5 pieces; each piece is produced only after the test says the previous one arrived. */
struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int allowed;  /* pieces the producer may emit */
	int produced;
	bool closed, completed;
	int fd;
	bool saw_gone;
	char piece[64];
};
static struct gate g_gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, false, false, -1, false, ""};

static int gate_next(void *ctx, const char **data, size_t *len)
{
	struct gate *g = ctx;
	pthread_mutex_lock(&g->mu);
	while (g->produced >= g->allowed && g->produced < 5) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 20 * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&g->cv, &g->mu, &ts);
		if (rn_http_fd_gone(g->fd)) {
			g->saw_gone = true;
			pthread_mutex_unlock(&g->mu);
			return -1;
		}
	}
	if (g->produced >= 5) {
		pthread_mutex_unlock(&g->mu);
		return 0;
	}
	snprintf(g->piece, sizeof g->piece, "{\"n\":%d}\n", g->produced++);
	*data = g->piece;
	*len = strlen(g->piece);
	pthread_mutex_unlock(&g->mu);
	return 1;
}

static void gate_close(void *ctx, bool completed)
{
	struct gate *g = ctx;
	pthread_mutex_lock(&g->mu);
	g->closed = true;
	g->completed = completed;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

static void h_stream(struct rn_http_req *r)
{
	pthread_mutex_lock(&g_gate.mu);
	g_gate.fd = rn_http_req_fd(r);
	pthread_mutex_unlock(&g_gate.mu);
	struct rn_http_source src = {gate_next, gate_close, &g_gate};
	rn_http_respond_stream(r, 200, "application/x-ndjson", "", 0, &src);
}

static const struct rn_http_route routes[] = {
	{RN_HTTP_GET | RN_HTTP_HEAD, "/", h_root, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST, "/echo", h_echo, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST | RN_HTTP_PROMPT_BODY, "/prompt", h_echo, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST | RN_HTTP_HEAD, "/blobs/:digest", h_echo, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST, "/err", h_error, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST, "/stream", h_stream, NULL, NULL, NULL, NULL},
	{0, NULL, NULL, NULL, NULL, NULL, NULL},
};

static int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void test_stream(int port)
{
	int fd = connect_to(port);
	CHECK(fd >= 0);
	const char *req = "POST /stream HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n";
	CHECK(write(fd, req, strlen(req)) == (ssize_t)strlen(req));
	char buf[8192];
	size_t len = 0;
	/* Release one piece at a time; each must arrive (as its own chunk) before the next exists. */
	int64_t worst = 0;
	for (int i = 0; i < 5; i++) {
		int64_t t0 = now_us();
		pthread_mutex_lock(&g_gate.mu);
		g_gate.allowed = i + 1;
		pthread_cond_broadcast(&g_gate.cv);
		pthread_mutex_unlock(&g_gate.mu);
		char want[32];
		snprintf(want, sizeof want, "{\"n\":%d}\n", i);
		while (!strstr(buf, want) && len < sizeof buf - 1) {
			ssize_t n = read(fd, buf + len, sizeof buf - 1 - len);
			if (n <= 0)
				break;
			len += (size_t)n;
			buf[len] = 0;
		}
		CHECKF(strstr(buf, want) != NULL, "piece %d never arrived; got: %s", i, buf);
		int64_t dt = now_us() - t0;
		if (dt > worst)
			worst = dt;
	}
	/* the producer wakes every 20 ms at worst; a piece must not wait for Nagle or a buffer to fill */
	CHECKF(worst < 100000, "a streamed piece took %lld us to arrive", (long long)worst);
	CHECK(strstr(buf, "Transfer-Encoding: chunked") != NULL);
	CHECK(strstr(buf, "Content-Type: application/x-ndjson") != NULL);
	/* each piece is one chunk: "8\r\n{"n":0}\n\r\n" */
	CHECK(strstr(buf, "\r\n8\r\n{\"n\":0}\n\r\n") != NULL);
	CHECK(strstr(buf, "\r\n8\r\n{\"n\":4}\n\r\n") != NULL);
	while (!strstr(buf, "\r\n0\r\n\r\n") && len < sizeof buf - 1) {
		ssize_t n = read(fd, buf + len, sizeof buf - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		buf[len] = 0;
	}
	CHECK(strstr(buf, "\r\n0\r\n\r\n") != NULL);
	close(fd);
	for (int i = 0; i < 100; i++) {
		pthread_mutex_lock(&g_gate.mu);
		bool c = g_gate.closed;
		pthread_mutex_unlock(&g_gate.mu);
		if (c)
			break;
		usleep(10000);
	}
	CHECK(g_gate.closed && g_gate.completed);
	printf("streamed piece worst arrival: %lld us\n", (long long)worst);

	/* A client that leaves mid-stream is noticed while the producer waits. */
	pthread_mutex_lock(&g_gate.mu);
	g_gate.allowed = 1;
	g_gate.produced = 0;
	g_gate.closed = g_gate.completed = g_gate.saw_gone = false;
	pthread_mutex_unlock(&g_gate.mu);
	fd = connect_to(port);
	CHECK(write(fd, req, strlen(req)) == (ssize_t)strlen(req));
	len = 0;
	buf[0] = 0;
	while (!strstr(buf, "{\"n\":0}")) {
		ssize_t n = read(fd, buf + len, sizeof buf - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		buf[len] = 0;
	}
	close(fd);
	int64_t t0 = now_us();
	bool closed = false;
	for (int i = 0; i < 200 && !closed; i++) {
		pthread_mutex_lock(&g_gate.mu);
		closed = g_gate.closed;
		pthread_mutex_unlock(&g_gate.mu);
		if (!closed)
			usleep(5000);
	}
	CHECK(closed);
	CHECK(g_gate.saw_gone);
	CHECK(!g_gate.completed);
	printf("disconnect noticed after %lld us\n", (long long)(now_us() - t0));
}

/* Framing Go's net/http refuses (transfer.go) is refused before the body is read, and the connection is
 * closed after the answer: what follows the headers is never taken for another request. */
static void test_framing(int port)
{
	static const struct {
		const char *what, *req;
		int status;
		const char *body;
	} cases[] = {
		{"two different Content-Length",
		 "POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 7\r\nContent-Length: 40\r\n\r\n{\"a\":1}"
		 "GET /smuggled HTTP/1.1\r\nHost: localhost\r\n\r\n",
		 400, "400 Bad Request"},
		{"Content-Length with Transfer-Encoding",
		 "POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
		 "7\r\n{\"a\":1}\r\n0\r\n\r\n",
		 400, "400 Bad Request"},
		{"two Transfer-Encoding",
		 "POST /echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n"
		 "7\r\n{\"a\":1}\r\n0\r\n\r\n",
		 501, "Unsupported transfer encoding"},
		{"Transfer-Encoding gzip", "POST /echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: gzip\r\n\r\n{}",
		 501, "Unsupported transfer encoding"},
		{"Transfer-Encoding chunked, chunked",
		 "POST /echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked, chunked\r\n\r\n"
		 "2\r\n{}\r\n0\r\n\r\n",
		 501, "Unsupported transfer encoding"},
		{"Transfer-Encoding on HTTP/1.0",
		 "POST /echo HTTP/1.0\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", 400,
		 "400 Bad Request"},
		/* libmicrohttpd answers this one itself (0.9.75 writes its status line and headers twice) */
		{"an invalid Content-Length", "POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1x\r\n\r\n{}", 400,
		 NULL},
		/* what Go accepts */
		{"the same Content-Length twice",
		 "POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 7\r\nContent-Length: 7\r\n\r\n{\"a\":1}", 200,
		 "POST 7 "},
		{"Transfer-Encoding Chunked",
		 "POST /echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: Chunked\r\n\r\n7\r\n{\"a\":1}\r\n0\r\n\r\n",
		 200, "POST 7 "},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		bool closed;
		char *r = exchange(port, cases[i].req, strlen(cases[i].req), 500, &closed);
		CHECKF(status_of(r) == cases[i].status, "%s: %d, expected %d", cases[i].what, status_of(r), cases[i].status);
		if (cases[i].body)
			CHECKF(strcmp(body_of(r), cases[i].body) == 0, "%s: body \"%s\"", cases[i].what, body_of(r));
		if (cases[i].status >= 400)
			CHECKF(closed, "%s: the connection stays open", cases[i].what);
		if (cases[i].status >= 400 && cases[i].body)
			CHECKF(count_responses(r) == 1, "%s: %d responses", cases[i].what, count_responses(r));
		free(r);
	}
}

static void test_server(void)
{
	struct rn_srv_host h;
	rn_srv_parse_host("127.0.0.1:0", &h, NULL, 0);
	const char *origins[] = {"https://app.example.com", "http://*.corp.test", "http://localhost", "http://localhost:*",
				 "app://*"};
	struct rn_http_options o = {.listen = &h, .origins = origins, .n_origins = 5, .routes = routes, .max_body = 1000,
				    .max_prompt_body = 4000};
	char err[256];
	struct rn_http_server *s = rn_http_start(&o, err, sizeof err);
	CHECKF(s != NULL, "%s", err);
	if (!s)
		return;
	int port = rn_http_port(s);
	CHECK(port > 0);

	char *r = request(port, "GET", "/", NULL, NULL);
	CHECK_EQ_INT(status_of(r), 200);
	CHECK_STREQ(body_of(r), "Ollama is running");
	CHECK(has_header(r, "Content-Type: text/plain; charset=utf-8"));
	free(r);

	r = request(port, "HEAD", "/", NULL, NULL);
	CHECK_EQ_INT(status_of(r), 200);
	CHECK_STREQ(body_of(r), "");
	free(r);

	r = request(port, "GET", "/nope", NULL, NULL);
	CHECK_EQ_INT(status_of(r), 404);
	CHECK_STREQ(body_of(r), "404 page not found");
	free(r);

	r = request(port, "GET", "/echo", NULL, NULL);
	CHECK_EQ_INT(status_of(r), 405);
	CHECK_STREQ(body_of(r), "405 method not allowed");
	free(r);

	r = request(port, "POST", "/echo", NULL, "{\"a\":1}");
	CHECK_EQ_INT(status_of(r), 200);
	CHECK_STREQ(body_of(r), "POST 7 ");
	free(r);

	r = request(port, "POST", "/blobs/sha256:abc", NULL, "xyz");
	CHECK_EQ_INT(status_of(r), 200);
	CHECK_STREQ(body_of(r), "POST 3 sha256:abc");
	free(r);

	r = request(port, "POST", "/blobs/", NULL, "xyz");
	CHECK_EQ_INT(status_of(r), 404);
	free(r);

	/* gin's trailing-slash redirect */
	r = request(port, "POST", "/echo/", NULL, "{}");
	CHECK_EQ_INT(status_of(r), 307);
	CHECK(has_header(r, "Location: /echo"));
	free(r);

	/* body ceiling */
	char big[1200];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = 0;
	r = request(port, "POST", "/echo", NULL, big);
	CHECK_EQ_INT(status_of(r), 413);
	CHECK_STREQ(body_of(r), "{\"error\":\"request body too large: the limit is 1000 bytes\"}");
	free(r);
	/* a route that takes prompts has its own, larger cap */
	r = request(port, "POST", "/prompt", NULL, big);
	CHECK_EQ_INT(status_of(r), 200);
	CHECK_STREQ(body_of(r), "POST 1199 ");
	free(r);
	/* a body announced past the cap is refused before it is sent */
	bool closed;
	const char *huge = "POST /prompt HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5000000000\r\n\r\n{";
	r = exchange(port, huge, strlen(huge), 2000, &closed);
	CHECK_EQ_INT(status_of(r), 413);
	CHECK_STREQ(body_of(r), "{\"error\":\"request body too large: the limit is 4000 bytes\"}");
	CHECK(closed);
	free(r);
	/* a chunked body past the cap */
	char chunked[5200];
	int k = snprintf(chunked, sizeof chunked, "POST /prompt HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
						  "Transfer-Encoding: chunked\r\n\r\n1194\r\n");
	memset(chunked + k, 'x', 4500);
	k += 4500;
	k += snprintf(chunked + k, sizeof chunked - (size_t)k, "\r\n0\r\n\r\n");
	r = exchange(port, chunked, (size_t)k, 2000, &closed);
	CHECK_EQ_INT(status_of(r), 413);
	free(r);

	test_framing(port);

	r = request(port, "POST", "/err", NULL, "{}");
	CHECK_EQ_INT(status_of(r), 404);
	CHECK_STREQ(body_of(r), "{\"error\":\"model 'x\\u003cy\\u003e' not found\"}");
	CHECK(has_header(r, "Content-Type: application/json; charset=utf-8"));
	free(r);

	/* CORS */
	r = request(port, "GET", "/", "Origin: https://app.example.com\r\n", NULL);
	CHECK_EQ_INT(status_of(r), 200);
	CHECK(has_header(r, "Access-Control-Allow-Origin: https://app.example.com"));
	CHECK(has_header(r, "Vary: Origin"));
	free(r);
	r = request(port, "GET", "/", "Origin: http://a.corp.test\r\n", NULL);
	CHECK_EQ_INT(status_of(r), 200);
	free(r);
	r = request(port, "GET", "/", "Origin: http://localhost:3000\r\n", NULL);
	CHECK_EQ_INT(status_of(r), 200);
	free(r);
	r = request(port, "GET", "/", "Origin: https://evil.example\r\n", NULL);
	CHECK_EQ_INT(status_of(r), 403);
	free(r);
	r = request(port, "OPTIONS", "/echo",
		    "Origin: app://x\r\nAccess-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: content-type\r\n",
		    NULL);
	CHECK_EQ_INT(status_of(r), 204);
	CHECK(has_header(r, "Access-Control-Allow-Origin: app://x"));
	CHECK(has_header(r, "Access-Control-Allow-Methods: GET,POST,PUT,PATCH,DELETE,HEAD,OPTIONS"));
	CHECK(has_header(r, "Access-Control-Max-Age: 43200"));
	free(r);
	/* same-origin requests with an Origin header are not CORS */
	r = request(port, "GET", "/", "Origin: http://127.0.0.1\r\n", NULL);
	CHECK_EQ_INT(status_of(r), 200);
	free(r);

	/* Host check: the listener is on loopback */
	char req[512];
	snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: evil.example.com\r\nConnection: close\r\n\r\n");
	r = roundtrip(port, req, strlen(req));
	CHECK_EQ_INT(status_of(r), 403);
	free(r);
	const char *good[] = {"localhost:11434", "foo.localhost", "printer.local", "db.internal", "10.1.2.3:80",
			      "192.168.0.5", "[::1]:11434", "0.0.0.0"};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", good[i]);
		r = roundtrip(port, req, strlen(req));
		CHECKF(status_of(r) == 200, "Host %s: %d", good[i], status_of(r));
		free(r);
	}
	snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: 8.8.8.8\r\nConnection: close\r\n\r\n");
	r = roundtrip(port, req, strlen(req));
	CHECK_EQ_INT(status_of(r), 403);
	free(r);

	test_stream(port);
	rn_http_stop(s);

	/* a port in use gives Go's message */
	struct rn_srv_host h2;
	rn_srv_parse_host("127.0.0.1:0", &h2, NULL, 0);
	struct rn_http_server *a = rn_http_start(&o, err, sizeof err);
	CHECK(a != NULL);
	if (a) {
		h2.port = rn_http_port(a);
		struct rn_http_options o2 = o;
		o2.listen = &h2;
		struct rn_http_server *b = rn_http_start(&o2, err, sizeof err);
		CHECK(b == NULL);
		char want[128];
		snprintf(want, sizeof want, "listen tcp 127.0.0.1:%d: bind: address already in use", h2.port);
		CHECK_STREQ(err, want);
		rn_http_stop(b);
		rn_http_stop(a);
	}
	/* a bad OLLAMA_ORIGINS entry is refused, as gin-contrib/cors panics on it */
	const char *bad[] = {"example.com"};
	struct rn_http_options o3 = o;
	o3.origins = bad;
	o3.n_origins = 1;
	CHECK(rn_http_start(&o3, err, sizeof err) == NULL);
	CHECK(strstr(err, "bad origin") != NULL);
}

/* ------------------------------------------------------------------------------------ timeouts and limits */

/* A handler that answers only after 2.5 s (a model load), and a stream with 2.5 s between pieces (a long
 * prefill before the first token): both outlast the 1 s idle timeout of test_idle_timeout's server. */
static void h_slow(struct rn_http_req *r)
{
	usleep(2500000);
	rn_http_respond(r, 200, "text/plain", "slow", 4);
}

struct slow_stream {
	int sent;
};

static int slow_next(void *ctx, const char **data, size_t *len)
{
	struct slow_stream *st = ctx;
	if (st->sent == 2)
		return 0;
	usleep(2500000);
	*data = st->sent++ ? "{\"n\":1}\n" : "{\"n\":0}\n";
	*len = 8;
	return 1;
}

static void slow_close(void *ctx, bool completed)
{
	(void)completed;
	free(ctx);
}

static void h_slow_stream(struct rn_http_req *r)
{
	struct rn_http_source src = {slow_next, slow_close, calloc(1, sizeof(struct slow_stream))};
	rn_http_respond_stream(r, 200, "application/x-ndjson", "", 0, &src);
}

static const struct rn_http_route slow_routes[] = {
	{RN_HTTP_GET | RN_HTTP_HEAD, "/", h_root, NULL, NULL, NULL, NULL},
	{RN_HTTP_GET, "/slow", h_slow, NULL, NULL, NULL, NULL},
	{RN_HTTP_GET, "/slowstream", h_slow_stream, NULL, NULL, NULL, NULL},
	{0, NULL, NULL, NULL, NULL, NULL, NULL},
};

static pthread_mutex_t warn_mu = PTHREAD_MUTEX_INITIALIZER;
static char warn_log[4096];

static void on_warning(void *app, const char *msg)
{
	(void)app;
	pthread_mutex_lock(&warn_mu);
	size_t n = strlen(warn_log);
	snprintf(warn_log + n, sizeof warn_log - n, "%s\n", msg);
	pthread_mutex_unlock(&warn_mu);
}

static bool warned(const char *what)
{
	pthread_mutex_lock(&warn_mu);
	bool yes = strstr(warn_log, what) != NULL;
	pthread_mutex_unlock(&warn_mu);
	return yes;
}

static void test_idle_timeout(void)
{
	struct rn_srv_host h;
	rn_srv_parse_host("127.0.0.1:0", &h, NULL, 0);
	struct rn_http_options o = {.listen = &h, .routes = slow_routes, .idle_timeout_s = 1, .no_cors = true};
	char err[256];
	struct rn_http_server *s = rn_http_start(&o, err, sizeof err);
	CHECKF(s != NULL, "%s", err);
	if (!s)
		return;
	int port = rn_http_port(s);

	/* a connection that never sends a request, and one that stops in the middle of its headers */
	bool closed;
	int fd = connect_to(port);
	int64_t t0 = now_us();
	char *r = read_for(fd, 5000, &closed);
	int64_t idle_us = now_us() - t0;
	CHECKF(closed && idle_us < 4000000, "idle connection: closed %d after %lld us", closed, (long long)idle_us);
	free(r);
	close(fd);
	const char *partial = "GET / HTTP/1.1\r\nHost: loc";
	t0 = now_us();
	r = exchange(port, partial, strlen(partial), 5000, &closed);
	CHECKF(closed && now_us() - t0 < 4000000, "half-sent headers: closed %d", closed);
	free(r);

	/* a handler slower than the timeout answers; the connection then idles out as before */
	const char *slow = "GET /slow HTTP/1.1\r\nHost: localhost\r\n\r\n";
	fd = connect_to(port);
	CHECK(write(fd, slow, strlen(slow)) == (ssize_t)strlen(slow));
	r = read_for(fd, 4000, &closed);
	CHECKF(status_of(r) == 200 && strcmp(body_of(r), "slow") == 0, "slow handler: %s", r);
	CHECKF(closed, "the kept-alive connection is not closed once idle");
	free(r);
	close(fd);

	/* a stream that is silent for longer than the timeout goes on to its end */
	const char *ss = "GET /slowstream HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
	r = exchange(port, ss, strlen(ss), 4000, &closed);
	CHECKF(strstr(r, "{\"n\":0}") && strstr(r, "{\"n\":1}") && strstr(r, "\r\n0\r\n\r\n"), "slow stream: %s", r);
	free(r);
	printf("idle connection closed after %lld ms (timeout 1 s)\n", (long long)(idle_us / 1000));
	rn_http_stop(s);
}

/* One address may not hold more than max_connections_per_ip connections: the next one is closed at once,
 * with a log line naming it, while other addresses are served; past max_connections every new connection is
 * closed at once, until one closes. */
static void test_limits(void)
{
	struct rn_srv_host h;
	rn_srv_parse_host("127.0.0.1:0", &h, NULL, 0);
	struct rn_http_options o = {.listen = &h, .routes = slow_routes, .max_connections = 6,
				    .max_connections_per_ip = 3, .no_cors = true, .on_warning = on_warning};
	char err[256];
	struct rn_http_server *s = rn_http_start(&o, err, sizeof err);
	CHECKF(s != NULL, "%s", err);
	if (!s)
		return;
	int port = rn_http_port(s);
	CHECK_EQ_INT(rn_http_max_connections(s), 6);
	const char *get = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
	bool closed;
	int held[6];
	/* three kept-alive connections from 127.0.0.2, each answered once (so the server has counted it) */
	for (int i = 0; i < 3; i++) {
		held[i] = connect_from("127.0.0.2", port);
		CHECK(write(held[i], get, strlen(get)) == (ssize_t)strlen(get));
		char *r = read_for(held[i], 300, &closed);
		CHECK_EQ_INT(status_of(r), 200);
		free(r);
	}
	int fd = connect_from("127.0.0.2", port);
	CHECK(fd >= 0);
	(void)!write(fd, get, strlen(get));
	char *r = read_for(fd, 2000, &closed);
	CHECKF(closed && status_of(r) == 0, "a 4th connection from 127.0.0.2: %s", r);
	free(r);
	close(fd);
	CHECK(warned("refused a connection from 127.0.0.2: 3 connections from this address are open"));
	/* another address is served */
	fd = connect_from("127.0.0.3", port);
	CHECK(write(fd, get, strlen(get)) == (ssize_t)strlen(get));
	r = read_for(fd, 1000, &closed);
	CHECK_EQ_INT(status_of(r), 200);
	free(r);
	close(fd);
	/* once one of the three closes, 127.0.0.2 may connect again (the count drops when orun has cleaned up) */
	close(held[2]);
	bool served = false;
	for (int k = 0; k < 40 && !served; k++) {
		usleep(50000);
		fd = connect_from("127.0.0.2", port);
		(void)!write(fd, get, strlen(get));
		r = read_for(fd, 500, &closed);
		served = status_of(r) == 200;
		free(r);
		if (served)
			held[2] = fd;
		else
			close(fd);
	}
	CHECK(served);
	/* the total: six open, the seventh is refused, then served once one closes */
	for (int i = 3; i < 6; i++) {
		held[i] = connect_from("127.0.0.4", port);
		(void)!write(held[i], get, strlen(get));
		r = read_for(held[i], 500, &closed);
		CHECK_EQ_INT(status_of(r), 200);
		free(r);
	}
	fd = connect_from("127.0.0.5", port);
	(void)!write(fd, get, strlen(get));
	r = read_for(fd, 2000, &closed);
	CHECKF(closed && status_of(r) == 0, "a 7th connection past the limit of 6: %s", r);
	free(r);
	close(fd);
	CHECK(warned("refused a connection from 127.0.0.5: 6 connections are open (ORUN_HTTP_MAX_CONNECTIONS)"));
	close(held[0]);
	served = false;
	for (int k = 0; k < 40 && !served; k++) {
		usleep(50000);
		fd = connect_from("127.0.0.5", port);
		(void)!write(fd, get, strlen(get));
		r = read_for(fd, 500, &closed);
		served = status_of(r) == 200;
		free(r);
		close(fd);
	}
	CHECK(served);
	for (int i = 1; i < 6; i++)
		close(held[i]);
	rn_http_stop(s);
}

/* ------------------------------------------------------------------------------------ pure helpers */

static void test_host_parse(void)
{
	static const struct {
		const char *in, *scheme, *host;
		int port;
	} cases[] = {
		{"", "http", "127.0.0.1", 11434},
		{"1.2.3.4", "http", "1.2.3.4", 11434},
		{":1234", "http", "", 1234},
		{"1.2.3.4:1234", "http", "1.2.3.4", 1234},
		{"example.com", "http", "example.com", 11434},
		{"example.com:1234", "http", "example.com", 1234},
		{"0.0.0.0", "http", "0.0.0.0", 11434},
		{"0.0.0.0:8080", "http", "0.0.0.0", 8080},
		{"http://1.2.3.4", "http", "1.2.3.4", 80},
		{"https://1.2.3.4", "https", "1.2.3.4", 443},
		{"https://1.2.3.4:1234", "https", "1.2.3.4", 1234},
		{"[::1]", "http", "::1", 11434},
		{"::1", "http", "::1", 11434},
		{"[::1]:1234", "http", "::1", 1234},
		{"  1.2.3.4  ", "http", "1.2.3.4", 11434},
		{"ollama.com", "https", "ollama.com", 443},
		{"1.2.3.4:99999", "http", "1.2.3.4", 11434},
		{"http://localhost:11435/path", "http", "localhost", 11435},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct rn_srv_host h;
		char warn[128];
		rn_srv_parse_host(cases[i].in, &h, warn, sizeof warn);
		CHECKF(strcmp(h.scheme, cases[i].scheme) == 0 && strcmp(h.host, cases[i].host) == 0 &&
			       h.port == cases[i].port,
		       "OLLAMA_HOST=%s -> %s://%s:%d", cases[i].in, h.scheme, h.host, h.port);
	}
	struct rn_srv_host h, c;
	rn_srv_parse_host("0.0.0.0:5000", &h, NULL, 0);
	rn_srv_connectable_host(&h, &c);
	CHECK_STREQ(c.host, "127.0.0.1");
	char hp[64];
	CHECK_STREQ(rn_srv_join_host_port("::1", 80, hp, sizeof hp), "[::1]:80");
}

static void test_durations(void)
{
	static const struct {
		const char *in;
		int64_t ns;
	} ok[] = {
		{"0", 0}, {"5m", 300000000000LL}, {"1h30m", 5400000000000LL}, {"1.5s", 1500000000LL},
		{"-1s", -1000000000LL}, {"300ms", 300000000LL}, {".5h", 1800000000000LL}, {"1us", 1000},
		{"2h45m10.5s", 9910500000000LL}, {"+3ns", 3},
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		int64_t ns = -42;
		char msg[128];
		int rc = rn_go_parse_duration(ok[i].in, &ns, msg, sizeof msg);
		CHECKF(rc == 0 && ns == ok[i].ns, "%s -> rc %d %lld", ok[i].in, rc, (long long)ns);
	}
	static const struct {
		const char *in, *msg;
	} bad[] = {
		{"", "time: invalid duration \"\""},
		{"5", "time: missing unit in duration \"5\""},
		{"5d", "time: unknown unit \"d\" in duration \"5d\""},
		{"abc", "time: invalid duration \"abc\""},
		{".s", "time: invalid duration \".s\""},
		{"9999999999h", "time: invalid duration \"9999999999h\""},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int64_t ns;
		char msg[128] = "";
		CHECK(rn_go_parse_duration(bad[i].in, &ns, msg, sizeof msg) < 0);
		CHECK_STREQ(msg, bad[i].msg);
	}
	char buf[40];
	CHECK_STREQ(rn_go_format_duration(300000000000LL, buf, sizeof buf), "5m0s");
	CHECK_STREQ(rn_go_format_duration(5400000000000LL, buf, sizeof buf), "1h30m0s");
	CHECK_STREQ(rn_go_format_duration(1500000000LL, buf, sizeof buf), "1.5s");
	CHECK_STREQ(rn_go_format_duration(0, buf, sizeof buf), "0s");
	CHECK_STREQ(rn_go_format_duration(1500, buf, sizeof buf), "1.5\xc2\xb5s");
	CHECK_STREQ(rn_go_format_duration(-2000000LL, buf, sizeof buf), "-2ms");
}

/* ORUN_HTTP_*: sizes with K/M/G, the idle timeout as a Go duration or seconds (0 or less: none). */
static void test_http_env(void)
{
	static const char *const keys[] = {"ORUN_HTTP_MAX_BODY", "ORUN_HTTP_MAX_PROMPT_BODY", "ORUN_HTTP_MAX_CONNECTIONS",
					   "ORUN_HTTP_MAX_CONNECTIONS_PER_IP", "ORUN_HTTP_IDLE_TIMEOUT"};
	for (size_t i = 0; i < 5; i++)
		unsetenv(keys[i]);
	struct rn_srv_config c;
	CHECK(rn_srv_config_from_env(&c) == 0);
	CHECK(c.http_max_body == RN_SRV_HTTP_MAX_BODY && c.http_max_prompt_body == 0 && c.http_max_connections == 0 &&
	      c.http_max_connections_per_ip == 0 && c.http_idle_timeout_s == 0);
	rn_srv_config_free(&c);
	static const struct {
		const char *body, *prompt, *idle;
		size_t want_body, want_prompt;
		int want_idle;
		bool warns;
	} cases[] = {
		{"4K", "64MiB", "90s", 4096, 64u << 20, 90, false},
		{"2000", "1g", "1500ms", 2000, 1u << 30, 2, false},
		{"0", "3MB", "0", RN_SRV_HTTP_MAX_BODY, 3u << 20, -1, false},
		{"lots", "-5", "soon", RN_SRV_HTTP_MAX_BODY, 0, 0, true},
		{"1T", "", "45", RN_SRV_HTTP_MAX_BODY, 0, 45, true},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		setenv("ORUN_HTTP_MAX_BODY", cases[i].body, 1);
		setenv("ORUN_HTTP_MAX_PROMPT_BODY", cases[i].prompt, 1);
		setenv("ORUN_HTTP_IDLE_TIMEOUT", cases[i].idle, 1);
		setenv("ORUN_HTTP_MAX_CONNECTIONS_PER_IP", "12", 1);
		CHECK(rn_srv_config_from_env(&c) == 0);
		CHECKF(c.http_max_body == cases[i].want_body && c.http_max_prompt_body == cases[i].want_prompt &&
			       c.http_idle_timeout_s == cases[i].want_idle && c.http_max_connections_per_ip == 12,
		       "case %zu: %zu %zu %d", i, c.http_max_body, c.http_max_prompt_body, c.http_idle_timeout_s);
		CHECKF((c.n_warnings > 0) == cases[i].warns, "case %zu: %zu warnings", i, c.n_warnings);
		rn_srv_config_free(&c);
	}
	for (size_t i = 0; i < 5; i++)
		unsetenv(keys[i]);
}

static void test_decode(void)
{
	struct rn_dec d = {.go_struct = "ChatRequest", .prefix = ""};
	const struct ob_json *root;
	struct ob_json_doc *doc = rn_dec_parse(&d, "  \n", 3, &root);
	CHECK(!doc);
	CHECK_STREQ(d.err, "missing request body");

	d = (struct rn_dec){.go_struct = "ChatRequest", .prefix = ""};
	const char *j = "{\"Model\":\"a\",\"stream\":\"yes\",\"top_logprobs\":1.5} trailing";
	doc = rn_dec_parse(&d, j, strlen(j), &root);
	CHECKF(doc != NULL, "%s", d.err);
	const char *s;
	size_t n;
	CHECK(rn_dec_string(&d, root, "model", &s, &n) && strcmp(s, "a") == 0);
	bool b;
	CHECK(!rn_dec_bool(&d, root, "stream", &b));
	CHECK_STREQ(d.err, "json: cannot unmarshal string into Go struct field ChatRequest.stream of type bool");
	d.failed = false;
	int64_t i64;
	CHECK(!rn_dec_int(&d, root, "top_logprobs", &i64));
	CHECK_STREQ(d.err, "json: cannot unmarshal number 1.5 into Go struct field ChatRequest.top_logprobs of type int");
	ob_json_free(doc);

	d = (struct rn_dec){.go_struct = "ChatRequest", .prefix = ""};
	doc = rn_dec_parse(&d, "[1]", 3, &root);
	CHECK(!doc);
	CHECK_STREQ(d.err, "json: cannot unmarshal array into Go value of type api.ChatRequest");
	d = (struct rn_dec){.go_struct = "ChatRequest", .prefix = ""};
	doc = rn_dec_parse(&d, "{\"model\":", 9, &root);
	CHECK(!doc);
	CHECK_STREQ(d.err, "unexpected EOF");

	char ts[48];
	CHECK_STREQ(rn_http_rfc3339(1700000000123456000LL, false, ts, sizeof ts), "2023-11-14T22:13:20.123456Z");
	CHECK_STREQ(rn_http_rfc3339(1700000000000000000LL, false, ts, sizeof ts), "2023-11-14T22:13:20Z");
}

int main(void)
{
	test_host_parse();
	test_durations();
	test_http_env();
	test_decode();
	test_server();
	test_idle_timeout();
	test_limits();
	return check_done();
}
