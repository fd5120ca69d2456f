/* tests/server/test_http.c — the HTTP layer (runner/server/http.c) over real sockets: routing (404/405, trailing
 * slash), CORS as gin-contrib/cors with Ollama's origins, the Host-header check, request bodies, streamed
 * bodies (one chunk per piece, each arriving before the next is produced), client-disconnect detection, and
 * the OLLAMA_HOST / duration parsers of runner/server/envconfig.c and the Go decoding helpers.
 */
#include "config.h"

#include <arpa/inet.h>
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

static int connect_to(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
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

/* Sends a raw request and reads the whole response (Connection: close). Returns malloc'd text. */
static char *roundtrip(int port, const char *req, size_t req_len)
{
	int fd = connect_to(port);
	if (fd < 0)
		return NULL;
	if (write(fd, req, req_len) != (ssize_t)req_len) {
		close(fd);
		return NULL;
	}
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (len + 4096 > cap)
			buf = realloc(buf, cap *= 2);
		ssize_t n = read(fd, buf + len, cap - len - 1);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = 0;
	close(fd);
	return buf;
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

static void test_server(void)
{
	struct rn_srv_host h;
	rn_srv_parse_host("127.0.0.1:0", &h, NULL, 0);
	const char *origins[] = {"https://app.example.com", "http://*.corp.test", "http://localhost", "http://localhost:*",
				 "app://*"};
	struct rn_http_options o = {.listen = &h, .origins = origins, .n_origins = 5, .routes = routes, .max_body = 1000};
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
	free(r);

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
	test_decode();
	test_server();
	return check_done();
}
