/* tools/bench_api.c — `orun bench --api`: what the HTTP streaming path costs on top of the engine.
 *
 * In one process and one run: the same model and the same rendered chat prompt go (1) through `orun serve`'s
 * /api/chat streaming path, read by raw-socket clients on loopback (one, or --parallel N at once on one model
 * with N slots), and, with one stream, (2) through the engine alone (runner/engine.h, no HTTP). Both decode
 * greedily with prompt caching off, so every run evaluates the whole prompt. Reported: time to first token
 * and decode tok/s (+ GB/s) of each path, their ratio, the aggregate tok/s of N streams, and the delivery
 * delay of every streamed token (engine sampled it → its line was read by the client; one monotonic clock),
 * against the goals of issue [server]: >= 99.5 % of the engine's tok/s, TTFT at most 1 ms more, p99 delivery
 * delay <= 200 us. The delivery delay is split into the server's part (sampled -> line formatted, about to be
 * written) and the kernel's (written -> read by the sleeping client), and the kernel's part is set beside this
 * machine's floor: a bare loopback write -> blocked read() measured while the engine decodes, no orun code on
 * its path. --placement both alternates the two places the per-token work can run (runner/README.md) run by run.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "modelfile/create.h"
#include "base/json.h"
#include "modelfile/model.h"
#include "modelfile/store.h"
#include "runner/cpu/pool.h"
#include "runner/engine.h"
#include "runner/server/http.h"
#include "runner/server/server.h"
#include "runner/server/envconfig.h"
#include "runner/tokenizer/tokenizer.h"
#include "tools/argnum.h"
#include "tools/bench_api.h"

#define BENCH_MAX_TOKENS 65536

static int64_t mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The 1-minute load average (Linux /proc/loadavg), or -1: the figures mean little on a busy machine. */
static double loadavg1(void)
{
	FILE *f = fopen("/proc/loadavg", "r");
	double v = -1;
	if (f) {
		if (fscanf(f, "%lf", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: orun bench --api (-m FILE.gguf | --model NAME) [-n TOKENS] [--runs R] [--prompt TEXT]\n"
		   "                        [--ctx N] [-t THREADS] [--parallel N] [--placement engine|connection|both]\n\n"
		   "Runs the same model and chat prompt through `orun serve`'s streaming /api/chat (in-process, loopback)\n"
		   "and through the engine alone, and reports TTFT, decode tok/s and per-token delivery delay. Both load\n"
		   "the weights into memory (use_mmap false), as `orun serve` does by itself for a CPU load.\n"
		   "  -m FILE       a GGUF file (put into a temporary store by hard link, or copied)\n"
		   "  --model NAME  a model of the store in OLLAMA_MODELS instead\n"
		   "  -n N          tokens to generate per run (default 128)\n"
		   "  --runs R      measured runs per path after one warm-up (default 3)\n"
		   "  --prompt T    the user message (default: a fixed paragraph request)\n"
		   "  --ctx N       num_ctx (default 4096)\n"
		   "  -t N          threads (num_thread; default: automatic)\n"
		   "  --parallel N  N streams at once on one model with N slots (OLLAMA_NUM_PARALLEL=N; default 1; the\n"
		   "                engine-alone runs only with 1)\n"
		   "  --placement P where a token's parsers, JSON and write run: engine (the engine's thread, the\n"
		   "                default), connection (the connection's thread), or both, alternated run by run\n");
}

/* ---------------------------------------------------------------------------------------------------- */
/* delivery taps: the server reports (socket, engine time, line time) per token line, the clients their read
 * times; a socket's peer port names the client (looked up once per connection) */

#define BENCH_MAX_STREAMS 16

struct taps {
	pthread_mutex_t mu;
	int fds[BENCH_MAX_STREAMS], ports[BENCH_MAX_STREAMS];
	int n_fds;
	int *port;              /* the client's port of each line */
	int64_t *engine, *line; /* the token sampled; its line formatted, about to be written to the socket */
	size_t n, cap;
};

static int peer_port(int fd)
{
	struct sockaddr_in a;
	socklen_t al = sizeof a;
	if (getpeername(fd, (struct sockaddr *)&a, &al) != 0)
		return -1;
	return ntohs(a.sin_port);
}

static void tap(void *ctx, int fd, int64_t t_engine, int64_t t_line)
{
	struct taps *t = ctx;
	pthread_mutex_lock(&t->mu);
	int port = -1;
	for (int i = 0; i < t->n_fds && port < 0; i++)
		if (t->fds[i] == fd)
			port = t->ports[i];
	if (port < 0 && t->n_fds < BENCH_MAX_STREAMS) {
		port = peer_port(fd);
		t->fds[t->n_fds] = fd;
		t->ports[t->n_fds++] = port;
	}
	if (t->n < t->cap) {
		t->port[t->n] = port;
		t->engine[t->n] = t_engine;
		t->line[t->n++] = t_line;
	}
	pthread_mutex_unlock(&t->mu);
}

static void taps_reset(struct taps *t)
{
	pthread_mutex_lock(&t->mu);
	t->n = 0;
	t->n_fds = 0;
	pthread_mutex_unlock(&t->mu);
}

/* ---------------------------------------------------------------------------------------------------- */
/* a raw HTTP client for one streamed /api/chat */

struct run_result {
	int port;            /* the client's local port */
	int64_t t_send, t_first, t_last;
	size_t n_lines;      /* content lines */
	int64_t *reads;      /* read time of each content line */
	int64_t eval_count, eval_ns, prompt_count;
	char error[256];
};

static int http_connect(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
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

/* Handles one decoded chunk payload (one NDJSON line). */
static void on_chunk(struct run_result *rr, const char *p, size_t n, int64_t t)
{
	struct ob_json_error je;
	struct ob_json_doc *d = ob_json_parse(p, n, &je);
	if (!d)
		return;
	const struct ob_json *root = ob_json_root(d);
	const struct ob_json *err = ob_json_get(root, "error");
	if (err && err->type == OB_JSON_STRING)
		snprintf(rr->error, sizeof rr->error, "%s", err->str);
	const struct ob_json *msg = ob_json_get(root, "message");
	const struct ob_json *c = msg ? ob_json_get(msg, "content") : NULL;
	const struct ob_json *done = ob_json_get(root, "done");
	bool is_done = done && done->type == OB_JSON_BOOL && done->boolean;
	if (!is_done && c && c->type == OB_JSON_STRING && c->len) {
		if (!rr->n_lines)
			rr->t_first = t;
		rr->t_last = t;
		if (rr->n_lines < BENCH_MAX_TOKENS)
			rr->reads[rr->n_lines] = t;
		rr->n_lines++;
	}
	if (is_done) {
		const struct ob_json *v;
		if ((v = ob_json_get(root, "eval_count")))
			(void)ob_json_int(v, &rr->eval_count);
		if ((v = ob_json_get(root, "eval_duration")))
			(void)ob_json_int(v, &rr->eval_ns);
		if ((v = ob_json_get(root, "prompt_eval_count")))
			(void)ob_json_int(v, &rr->prompt_count);
	}
	ob_json_free(d);
}

/* POSTs body to path and reads a chunked NDJSON answer; each chunk's read time is taken when its last byte
 * arrived. Returns 0, or -1 with rr->error. */
static int stream_chat(int port, const char *body, struct run_result *rr, bool want_whole, char **whole)
{
	/* the client asks for the short slice a latency-sensitive reader would (as the server's connection threads) */
	(void)rn_http_thread_latency_hint();
	int fd = http_connect(port);
	if (fd < 0) {
		snprintf(rr->error, sizeof rr->error, "cannot connect to 127.0.0.1:%d", port);
		return -1;
	}
	struct sockaddr_in la;
	socklen_t lal = sizeof la;
	rr->port = getsockname(fd, (struct sockaddr *)&la, &lal) == 0 ? ntohs(la.sin_port) : -1;
	char head[256];
	int hl = snprintf(head, sizeof head,
			  "POST /api/chat HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
			  "Content-Length: %zu\r\nConnection: close\r\n\r\n",
			  strlen(body));
	rr->t_send = mono();
	if (write(fd, head, (size_t)hl) != hl || write(fd, body, strlen(body)) != (ssize_t)strlen(body)) {
		close(fd);
		snprintf(rr->error, sizeof rr->error, "write failed");
		return -1;
	}
	struct ob_buf in;
	ob_buf_init(&in, 256u << 20);
	char buf[65536];
	bool headers = false, chunked = false;
	size_t pos = 0; /* parse position in in */
	for (;;) {
		ssize_t k = read(fd, buf, sizeof buf);
		int64_t t = mono();
		if (k <= 0)
			break;
		ob_buf_append(&in, buf, (size_t)k);
		if (in.failed)
			break;
		if (!headers) {
			char *e = in.p ? strstr(in.p, "\r\n\r\n") : NULL;
			if (!e)
				continue;
			headers = true;
			chunked = strstr(in.p, "chunked") != NULL;
			pos = (size_t)(e - in.p) + 4;
			if (strncmp(in.p + 9, "200", 3) != 0) {
				/* an error answer: its body follows */
				continue;
			}
		}
		if (!chunked)
			continue;
		for (;;) {
			char *crlf = memmem(in.p + pos, in.len - pos, "\r\n", 2);
			if (!crlf)
				break;
			size_t size = strtoul(in.p + pos, NULL, 16);
			size_t data = (size_t)(crlf - in.p) + 2;
			if (in.len < data + size + 2)
				break;
			if (size == 0) {
				pos = data + 2;
				goto out;
			}
			on_chunk(rr, in.p + data, size, t);
			pos = data + size + 2;
		}
	}
out:
	close(fd);
	if (want_whole && whole)
		*whole = in.p && headers ? strdup(strstr(in.p, "\r\n\r\n") + 4) : NULL;
	if (in.p && strncmp(in.p + 9, "200", 3) != 0 && !rr->error[0])
		snprintf(rr->error, sizeof rr->error, "%.200s", in.p);
	ob_buf_free(&in);
	return rr->error[0] ? -1 : 0;
}

/* ---------------------------------------------------------------------------------------------------- */
/* the engine alone */

struct eng_run {
	int64_t t_submit, t_first, t_last;
	size_t n;
	bool done;
	pthread_mutex_t mu;
};

static int eng_cb(void *user, const struct rn_event *ev)
{
	struct eng_run *r = user;
	int64_t t = mono();
	if (ev->done) {
		r->done = true;
		return 0;
	}
	if (ev->token >= 0) {
		if (!r->n)
			r->t_first = t;
		r->t_last = t;
		r->n++;
	}
	return 0;
}

/* One greedy engine-alone run of the prompt (prompt caching off, as the API runs), timed into *er. */
static int engine_once(struct rn_engine *eng, const int32_t *ids, size_t n_ids, int n_predict, struct eng_run *er,
		       struct rn_error *err)
{
	struct rn_request rq;
	rn_request_default(&rq);
	rq.prompt = ids;
	rq.n_prompt = n_ids;
	rq.sampling.temperature = 0;
	rq.sampling.seed = 1;
	rq.num_predict = n_predict;
	rq.cache_prompt = false;
	rq.on_event = eng_cb;
	rq.user = er;
	er->t_submit = mono();
	return rn_engine_run(eng, &rq, err);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* p50 / p99 / max of n values in ns, as us (sorts v) */
struct pct {
	double p50, p99, max;
};

static struct pct percentiles(int64_t *v, size_t n)
{
	struct pct p = {NAN, NAN, NAN};
	if (!n)
		return p;
	qsort(v, n, sizeof *v, cmp_i64);
	p.p50 = (double)v[n / 2] / 1e3;
	p.p99 = (double)v[(size_t)((double)(n - 1) * 0.99)] / 1e3;
	p.max = (double)v[n - 1] / 1e3;
	return p;
}

/* ---------------------------------------------------------------------------------------------------- */
/* the machine's own wake-up floor: while the engine-alone runs decode, a probe thread writes a timestamp to a
 * loopback TCP connection every PROBE_PERIOD_NS and a reader blocked in read() (with the same latency hint as
 * the client) records how late it got it. No orun code is on that path: it is what the kernel gives a sleeping
 * reader on this machine under this load, the part of the delivery delay no server can remove. */

#define PROBE_PERIOD_NS 7000000LL
#define PROBE_MAX 8192

struct probe {
	int wfd, rfd;
	atomic_bool stop;
	int64_t delays[PROBE_MAX];
	size_t n;
	pthread_t writer, reader;
	bool started;
};

static void *probe_writer(void *arg)
{
	struct probe *p = arg;
	while (!atomic_load(&p->stop)) {
		struct timespec ts = {0, PROBE_PERIOD_NS};
		nanosleep(&ts, NULL);
		int64_t t = mono();
		if (write(p->wfd, &t, sizeof t) != (ssize_t)sizeof t)
			break;
	}
	shutdown(p->wfd, SHUT_WR);
	return NULL;
}

static void *probe_reader(void *arg)
{
	struct probe *p = arg;
	(void)rn_http_thread_latency_hint();
	for (;;) {
		int64_t t;
		size_t got = 0;
		while (got < sizeof t) {
			ssize_t k = read(p->rfd, (char *)&t + got, sizeof t - got);
			if (k <= 0)
				return NULL;
			got += (size_t)k;
		}
		int64_t d = mono() - t;
		if (p->n < PROBE_MAX)
			p->delays[p->n++] = d;
	}
}

/* Connects a loopback TCP pair (TCP_NODELAY, as the server's sockets) and starts the two threads. */
static int probe_start(struct probe *p)
{
	int ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0)
		return -1;
	struct sockaddr_in a = {.sin_family = AF_INET};
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	socklen_t al = sizeof a;
	if (bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 1) != 0 ||
	    getsockname(ls, (struct sockaddr *)&a, &al) != 0) {
		close(ls);
		return -1;
	}
	p->rfd = http_connect(ntohs(a.sin_port));
	p->wfd = p->rfd >= 0 ? accept(ls, NULL, NULL) : -1;
	close(ls);
	if (p->wfd < 0) {
		if (p->rfd >= 0)
			close(p->rfd);
		return -1;
	}
	int one = 1;
	setsockopt(p->wfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	atomic_store(&p->stop, false);
	if (pthread_create(&p->reader, NULL, probe_reader, p) != 0) {
		close(p->rfd);
		close(p->wfd);
		return -1;
	}
	if (pthread_create(&p->writer, NULL, probe_writer, p) != 0) {
		shutdown(p->rfd, SHUT_RDWR);
		pthread_join(p->reader, NULL);
		close(p->rfd);
		close(p->wfd);
		return -1;
	}
	p->started = true;
	return 0;
}

static void probe_stop(struct probe *p)
{
	if (!p->started)
		return;
	atomic_store(&p->stop, true);
	pthread_join(p->writer, NULL);
	pthread_join(p->reader, NULL);
	close(p->rfd);
	close(p->wfd);
	p->started = false;
}

static double median(double *v, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : 0;
}

/* Hard-links (or copies) a GGUF into a fresh temporary store and creates "bench" from it. */
static int make_store(const char *gguf, char *dir, size_t dir_size, char *err, size_t err_size)
{
	snprintf(dir, dir_size, "%s/orun-bench-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir)) {
		snprintf(err, err_size, "mkdtemp: %s", strerror(errno));
		return -1;
	}
	struct mf_store *st = NULL;
	struct mf_error e = {0};
	char digest[MF_DIGEST_LEN + 1];
	uint64_t size;
	if (mf_store_open(dir, &st, &e) != MF_OK || mf_sha256_file(gguf, digest, &size, &e) != MF_OK) {
		snprintf(err, err_size, "%s", e.msg);
		mf_store_close(st);
		return -1;
	}
	char blob[4200];
	if (mf_store_blob_path(st, digest, blob, sizeof blob, &e) != MF_OK) {
		snprintf(err, err_size, "%s", e.msg);
		mf_store_close(st);
		return -1;
	}
	if (link(gguf, blob) != 0) {
		bool created;
		char d2[MF_DIGEST_LEN + 1];
		if (mf_store_put_file(st, gguf, d2, &size, &created, &e) != MF_OK) {
			snprintf(err, err_size, "%s", e.msg);
			mf_store_close(st);
			return -1;
		}
	}
	char req[512];
	snprintf(req, sizeof req, "{\"model\":\"bench\",\"files\":{\"model.gguf\":\"%s\"}}", digest);
	struct mf_create_request *cr = NULL;
	struct mf_warnings w = {0};
	int rc = mf_create_request_parse(req, strlen(req), &cr, &w, &e);
	if (rc == MF_OK)
		rc = mf_create_run(st, cr, NULL, NULL, &w, &e);
	mf_create_request_free(cr);
	mf_warnings_free(&w);
	mf_store_close(st);
	if (rc != MF_OK) {
		snprintf(err, err_size, "create: %s", e.msg);
		return -1;
	}
	return 0;
}

static void rm_tree(const char *dir)
{
	char cmd[4300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "warning: could not remove %s\n", dir);
}

static char *json_string(const char *s)
{
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_string(&w, s);
	size_t n;
	char *r = ob_jw_take(&w, &n);
	ob_jw_free(&w);
	return r;
}

/* ---------------------------------------------------------------------------------------------------- */
/* N streams through the API */

/* What one placement measured over the runs (ns arrays pooled over runs and streams). */
struct series {
	const char *name;
	bool on_connection;
	double *tps, *ttft, *first_engine; /* per run: aggregate tok/s, median stream's TTFT and first sample (ms) */
	double *tps_runs;                  /* tps in run order (median() sorts tps) */
	double *stream_tps;                /* per run and stream */
	int64_t *delays, *d_server, *d_wire, *gaps;
	size_t n_stream_tps, n_delays, n_gaps, cap;
	int64_t eval_count, prompt_count;
	size_t last_lines;
};

struct client {
	pthread_t thread;
	int port;
	const char *body;
	struct run_result rr;
	int rc;
};

static void *client_main(void *arg)
{
	struct client *c = arg;
	c->rc = stream_chat(c->port, c->body, &c->rr, false, NULL);
	return NULL;
}

static int series_alloc(struct series *se, const char *name, bool on_connection, int runs, int n, int n_predict)
{
	se->name = name;
	se->on_connection = on_connection;
	se->cap = (size_t)runs * (size_t)n * (size_t)n_predict;
	se->tps = calloc((size_t)runs, sizeof(double));
	se->tps_runs = calloc((size_t)runs, sizeof(double));
	se->ttft = calloc((size_t)runs, sizeof(double));
	se->first_engine = calloc((size_t)runs, sizeof(double));
	se->stream_tps = calloc((size_t)runs * (size_t)n, sizeof(double));
	se->delays = calloc(se->cap, sizeof(int64_t));
	se->d_server = calloc(se->cap, sizeof(int64_t));
	se->d_wire = calloc(se->cap, sizeof(int64_t));
	se->gaps = calloc(se->cap, sizeof(int64_t));
	return se->tps && se->tps_runs && se->ttft && se->first_engine && se->stream_tps && se->delays && se->d_server && se->d_wire &&
			       se->gaps
		       ? 0
		       : -1;
}

static void series_free(struct series *se)
{
	free(se->tps);
	free(se->tps_runs);
	free(se->ttft);
	free(se->first_engine);
	free(se->stream_tps);
	free(se->delays);
	free(se->d_server);
	free(se->d_wire);
	free(se->gaps);
}

/* One run of n concurrent streamed chats; with run >= 0 its figures go into se. Returns 0, or -1. */
static int api_run(int port, const char *body, int n, struct client *cl, struct taps *taps, struct series *se,
		   int run)
{
	taps_reset(taps);
	for (int i = 0; i < n; i++) {
		int64_t *reads = cl[i].rr.reads;
		memset(&cl[i].rr, 0, sizeof cl[i].rr);
		cl[i].rr.reads = reads;
		cl[i].port = port;
		cl[i].body = body;
		cl[i].rc = -1;
		if (pthread_create(&cl[i].thread, NULL, client_main, &cl[i]) != 0) {
			for (int k = 0; k < i; k++)
				pthread_join(cl[k].thread, NULL);
			fprintf(stderr, "Error: cannot start a client thread\n");
			return -1;
		}
	}
	int fail = 0;
	for (int i = 0; i < n; i++) {
		pthread_join(cl[i].thread, NULL);
		if (cl[i].rc != 0 && !fail) {
			fprintf(stderr, "Error: /api/chat: %s\n", cl[i].rr.error);
			fail = 1;
		}
	}
	if (fail)
		return -1;
	if (run < 0)
		return 0;
	int64_t first = INT64_MAX, last = 0;
	size_t tokens = 0;
	double ttft[BENCH_MAX_STREAMS], first_engine[BENCH_MAX_STREAMS];
	pthread_mutex_lock(&taps->mu);
	for (int i = 0; i < n; i++) {
		const struct run_result *rr = &cl[i].rr;
		if (rr->t_first < first)
			first = rr->t_first;
		if (rr->t_last > last)
			last = rr->t_last;
		tokens += rr->n_lines > 1 ? rr->n_lines - 1 : 0;
		ttft[i] = (double)(rr->t_first - rr->t_send) / 1e6;
		first_engine[i] = NAN;
		se->stream_tps[se->n_stream_tps++] =
			rr->n_lines > 1 ? (double)(rr->n_lines - 1) / ((double)(rr->t_last - rr->t_first) / 1e9) : 0;
		/* this stream's tap records in order, paired with its reads */
		size_t k = 0, m = rr->n_lines < BENCH_MAX_TOKENS ? rr->n_lines : BENCH_MAX_TOKENS;
		for (size_t j = 0; j < taps->n && k < m; j++) {
			if (taps->port[j] != rr->port)
				continue;
			if (k == 0)
				first_engine[i] = (double)(taps->engine[j] - rr->t_send) / 1e6;
			if (se->n_delays < se->cap) {
				se->d_server[se->n_delays] = taps->line[j] - taps->engine[j];
				se->d_wire[se->n_delays] = rr->reads[k] - taps->line[j];
				se->delays[se->n_delays++] = rr->reads[k] - taps->engine[j];
			}
			k++;
		}
		for (size_t j = 1; j < m && se->n_gaps < se->cap; j++)
			se->gaps[se->n_gaps++] = rr->reads[j] - rr->reads[j - 1];
		se->eval_count = rr->eval_count;
		se->prompt_count = rr->prompt_count;
		se->last_lines = rr->n_lines;
	}
	pthread_mutex_unlock(&taps->mu);
	se->tps[run] = last > first ? (double)tokens / ((double)(last - first) / 1e9) : 0;
	se->tps_runs[run] = se->tps[run];
	se->ttft[run] = median(ttft, n);
	se->first_engine[run] = median(first_engine, n);
	return 0;
}

int bench_api(int argc, char **argv)
{
	const char *file = NULL, *name = NULL, *placement = "engine";
	const char *prompt = "Explain, in a long and detailed answer, how a transformer language model turns a prompt "
			     "into text, step by step.";
	int n_predict = 128, runs = 3, ctx = 4096, threads = 0, parallel = 1;
	enum { O_API = 256, O_MODEL, O_RUNS, O_PROMPT, O_CTX, O_PARALLEL, O_PLACEMENT };
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'},
		{"api", no_argument, NULL, O_API},
		{"model", required_argument, NULL, O_MODEL}, /* a store name; -m is a file */
		{"runs", required_argument, NULL, O_RUNS},
		{"prompt", required_argument, NULL, O_PROMPT},
		{"ctx", required_argument, NULL, O_CTX},
		{"parallel", required_argument, NULL, O_PARALLEL},
		{"placement", required_argument, NULL, O_PLACEMENT},
		{NULL, 0, NULL, 0},
	};
	const char *cmd = "orun bench --api";
	char a[64];
	int c, bad = 0;
	optind = 1;
	while (!bad && (c = argopt_next(cmd, argc, argv, "hm:n:t:", longopts, a, sizeof a)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return 0;
		case O_API:
			break;
		case 'm':
			file = optarg;
			break;
		case O_MODEL:
			name = optarg;
			break;
		case 'n':
			bad = argnum_int(cmd, a, optarg, 2, BENCH_MAX_TOKENS, &n_predict);
			break;
		case O_RUNS:
			bad = argnum_int(cmd, a, optarg, 1, 1000, &runs);
			break;
		case O_PROMPT:
			prompt = optarg;
			break;
		case O_CTX:
			bad = argnum_int(cmd, a, optarg, 64, RN_MAX_CTX, &ctx);
			break;
		case 't':
			bad = argnum_int(cmd, a, optarg, 0, RN_POOL_MAX_THREADS, &threads);
			break;
		case O_PARALLEL:
			bad = argnum_int(cmd, a, optarg, 1, BENCH_MAX_STREAMS, &parallel);
			break;
		case O_PLACEMENT:
			placement = optarg;
			break;
		default: /* '?': argopt_next said why */
			bad = 1;
		}
	}
	if (bad || argopt_no_operands(cmd, argc, argv)) {
		usage(stderr);
		return 2;
	}
	bool pl_engine = !strcmp(placement, "engine") || !strcmp(placement, "both");
	bool pl_conn = !strcmp(placement, "connection") || !strcmp(placement, "both");
	if ((!file) == (!name) || n_predict < 2 || n_predict > BENCH_MAX_TOKENS || runs < 1 || runs > 1000 || ctx < 64 ||
	    parallel < 1 || parallel > BENCH_MAX_STREAMS || (!pl_engine && !pl_conn)) {
		usage(stderr);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	char store[4096] = "", err[MF_ERROR_MSG_MAX + 64];
	bool tmp_store = false;
	if (file) {
		if (make_store(file, store, sizeof store, err, sizeof err) != 0) {
			fprintf(stderr, "Error: %s\n", err);
			if (store[0])
				rm_tree(store);
			return 1;
		}
		tmp_store = true;
		name = "bench";
	}
	struct rn_srv_config cfg;
	if (rn_srv_config_from_env(&cfg) != 0)
		return 1;
	rn_srv_parse_host("127.0.0.1:0", &cfg.host, NULL, 0);
	if (store[0])
		snprintf(cfg.models, sizeof cfg.models, "%s", store);
	cfg.noprune = true;
	cfg.num_parallel = (unsigned)parallel;
	cfg.keep_alive_ns = RN_SRV_KEEP_FOREVER;
	size_t cap = (size_t)parallel * (size_t)n_predict * 2 + 64;
	struct taps taps = {.cap = cap};
	pthread_mutex_init(&taps.mu, NULL);
	taps.engine = calloc(taps.cap, sizeof *taps.engine);
	taps.line = calloc(taps.cap, sizeof *taps.line);
	taps.port = calloc(taps.cap, sizeof *taps.port);
	struct client *cl = calloc((size_t)parallel, sizeof *cl);
	struct series ser[2] = {0};
	int n_ser = 0;
	struct probe *probe = calloc(1, sizeof *probe);
	double *eng_tps = calloc((size_t)runs, sizeof(double)), *eng_ttft = calloc((size_t)runs, sizeof(double));
	int rc = 1;
	char *rendered = NULL;
	struct rn_server *srv = NULL;
	bool ok = taps.engine && taps.line && taps.port && cl && probe && eng_tps && eng_ttft;
	for (int i = 0; ok && i < parallel; i++)
		ok = (cl[i].rr.reads = calloc((size_t)BENCH_MAX_TOKENS, sizeof(int64_t))) != NULL;
	if (ok && pl_engine)
		ok = series_alloc(&ser[n_ser++], pl_conn ? "/api/chat, engine thread" : "/api/chat (streamed)", false, runs,
				  parallel, n_predict) == 0;
	if (ok && pl_conn)
		ok = series_alloc(&ser[n_ser++], pl_engine ? "/api/chat, connection" : "/api/chat (streamed)", true, runs,
				  parallel, n_predict) == 0;
	if (!ok)
		goto out;
	srv = rn_server_start(&cfg, true);
	if (!srv)
		goto out;
	srv->api.emit_tap = tap;
	srv->api.emit_tap_ctx = &taps;
	int port = rn_server_port(srv);
	char *pj = json_string(prompt), *mj = json_string(name);
	char body[8192], render_body[8192];
	snprintf(body, sizeof body,
		 "{\"model\":%s,\"messages\":[{\"role\":\"user\",\"content\":%s}],\"stream\":true,"
		 "\"options\":{\"temperature\":0,\"seed\":1,\"num_predict\":%d,\"num_ctx\":%d,\"num_thread\":%d,"
		 "\"cache_prompt\":false,\"use_mmap\":false}}",
		 mj, pj, n_predict, ctx, threads);
	snprintf(render_body, sizeof render_body,
		 "{\"model\":%s,\"messages\":[{\"role\":\"user\",\"content\":%s}],\"_debug_render_only\":true,"
		 "\"options\":{\"num_ctx\":%d,\"num_thread\":%d,\"use_mmap\":false}}",
		 mj, pj, ctx, threads);
	free(pj);
	free(mj);

	/* the prompt exactly as the server renders it (this also loads the model) */
	struct run_result rr = {.reads = cl[0].rr.reads};
	char *whole = NULL;
	(void)stream_chat(port, render_body, &rr, true, &whole);
	if (whole) {
		struct ob_json_error je;
		struct ob_json_doc *d = ob_json_parse(whole, strlen(whole), &je);
		const struct ob_json *di = d ? ob_json_get(ob_json_root(d), "_debug_info") : NULL;
		const struct ob_json *rt = di ? ob_json_get(di, "rendered_template") : NULL;
		if (rt && rt->type == OB_JSON_STRING)
			rendered = strdup(rt->str);
		ob_json_free(d);
		free(whole);
	}
	if (!rendered) {
		fprintf(stderr, "Error: the server did not render the prompt: %s\n", rr.error);
		goto out;
	}

	/* the engine alone, on the same rendered prompt and options; both paths stay loaded and their runs
	 * alternate, so slow drifts of the machine's load hit both alike (an idle server uses no CPU) */
	char model_path[4096] = "";
	{
		struct mf_store *st = NULL;
		struct mf_model *mm = NULL;
		struct mf_error e = {0};
		if (mf_store_open(cfg.models, &st, &e) == MF_OK && mf_model_load(st, name, &mm, &e) == MF_OK &&
		    mm->model_path)
			snprintf(model_path, sizeof model_path, "%s", mm->model_path);
		mf_model_free(mm);
		mf_store_close(st);
		if (!model_path[0]) {
			fprintf(stderr, "Error: %s\n", e.msg);
			goto out;
		}
	}
	struct rn_error re = {0};
	struct rn_model *model = rn_model_open(model_path, &re);
	struct rn_tok *tok = NULL;
	struct rn_tok_error te = {0};
	if (!model || rn_tok_load(model->gguf, NULL, &tok, &te) != RN_TOK_OK) {
		fprintf(stderr, "Error: %s\n", model ? te.msg : re.msg);
		rn_model_free(model);
		goto out;
	}
	/* with one stream: the engine alone beside the API, both with the weights copied into memory (use_mmap
	 * false), what `orun serve` does by itself for a CPU load, so that the two read the same memory */
	struct rn_engine *eng = NULL;
	int32_t *ids = NULL;
	size_t n_ids = 0;
	if (parallel == 1) {
		struct rn_load_params lp;
		rn_load_params_init(&lp);
		lp.n_ctx = ctx;
		lp.n_threads = threads;
		lp.use_mmap = 0;
		rn_load_params_resolve(&lp, &(struct rn_load_defaults){.n_ctx_max = model->hp.n_ctx_train, .n_seq = 1});
		lp.no_mmap = true;
		eng = rn_engine_new(model, tok, &lp, &re);
		if (!eng || rn_tok_encode_alloc(tok, rendered, strlen(rendered), true, true, &ids, &n_ids, &te) != RN_TOK_OK) {
			fprintf(stderr, "Error: %s\n", eng ? te.msg : re.msg);
			rn_engine_free(eng);
			rn_tok_free(tok);
			rn_model_free(model);
			goto out;
		}
	}
	int fail = 0;
	double load_before = loadavg1();
	for (int r = -1; r < runs && !fail; r++) {
		/* (a) /api/chat streamed, each placement in turn (the order alternates run by run) */
		for (int k = 0; k < n_ser && !fail; k++) {
			struct series *se = &ser[(r & 1) && n_ser == 2 ? 1 - k : k];
			srv->api.format_on_connection = se->on_connection;
			fail = api_run(port, body, parallel, cl, &taps, se, r) != 0;
		}
		if (fail || !eng)
			continue;
		/* (b) the engine alone */
		struct eng_run er = {0};
		struct rn_error e2 = {0};
		if (engine_once(eng, ids, n_ids, n_predict, &er, &e2) != RN_OK) {
			fprintf(stderr, "Error: engine: %s\n", e2.msg);
			fail = 1;
			break;
		}
		if (r >= 0) {
			eng_ttft[r] = (double)(er.t_first - er.t_submit) / 1e6;
			eng_tps[r] = er.n > 1 ? (double)(er.n - 1) / ((double)(er.t_last - er.t_first) / 1e9) : 0;
			if (r == runs - 1)
				printf("engine run: %zu tokens, prompt %zu tokens\n", er.n, n_ids);
		}
	}
	for (int k = 0; k < n_ser && !fail; k++)
		printf("api run (%s): %zu tokens streamed, server eval_count %lld, prompt %lld tokens\n", ser[k].name,
		       ser[k].last_lines, (long long)ser[k].eval_count, (long long)ser[k].prompt_count);
	/* one more engine-alone run, not counted above, with the wake-up probe running beside it */
	bool probed = false;
	if (!fail && eng && probe_start(probe) == 0) {
		struct eng_run er = {0};
		struct rn_error e2 = {0};
		probed = engine_once(eng, ids, n_ids, n_predict, &er, &e2) == RN_OK;
		probe_stop(probe);
	}
	uint64_t bpt = model->bytes_per_token;
	char arch[16];
	snprintf(arch, sizeof arch, "%s", model->hp.arch_name);
	rn_engine_free(eng);
	free(ids);
	rn_tok_free(tok);
	rn_model_free(model);
	rn_server_stop(srv);
	srv = NULL;
	if (fail)
		goto out;

	/* report (medians over the runs) */
	if (parallel == 1)
		printf("\nmodel %s (%s), %d tokens per run, median of %d runs, prompt caching off, load average %.2f -> "
		       "%.2f\n",
		       name, arch, n_predict, runs, load_before, loadavg1());
	else
		printf("\nmodel %s (%s), %d streams at once (OLLAMA_NUM_PARALLEL=%d) x %d tokens per run, median of %d "
		       "runs, prompt caching off, load average %.2f -> %.2f\n",
		       name, arch, parallel, parallel, n_predict, runs, load_before, loadavg1());
	double et = eng ? median(eng_ttft, runs) : 0, es = eng ? median(eng_tps, runs) : 0;
	printf("%-26s %12s %14s %10s %18s\n", "path", "TTFT ms", "decode tok/s", "GB/s", "per stream tok/s");
	if (parallel == 1)
		printf("%-26s %12.2f %14.2f %10.2f\n", "engine alone", et, es, es * (double)bpt / 1e9);
	for (int k = 0; k < n_ser; k++) {
		struct series *se = &ser[k];
		double at = median(se->ttft, runs), as = median(se->tps, runs);
		double ps = median(se->stream_tps, (int)se->n_stream_tps);
		printf("%-26s %12.2f %14.2f %10.2f %18.2f\n", se->name, at, as, as * (double)bpt / 1e9, ps);
	}
	for (int k = 0; k < n_ser; k++) {
		struct series *se = &ser[k];
		double at = median(se->ttft, runs), as = median(se->tps, runs), af = median(se->first_engine, runs);
		struct pct all = percentiles(se->delays, se->n_delays), srv_part = percentiles(se->d_server, se->n_delays),
			   wire = percentiles(se->d_wire, se->n_delays), gap = percentiles(se->gaps, se->n_gaps);
		printf("\n%s:\n", se->name);
		printf("decode tok/s of each run, in run order:");
		for (int r = 0; r < runs; r++)
			printf(" %.2f", se->tps_runs[r]);
		printf("\n");
		printf("api TTFT = %.2f ms until the server's engine sampled the first token (request parsing, template, "
		       "tokenizer, queue, prefill) + %.3f ms delivery\n", af, at - af);
		if (parallel == 1)
			printf("api vs engine: TTFT %+.3f ms (goal <= +1 ms), decode %.2f %% (goal >= 99.5 %%)\n", at - et,
			       es > 0 ? 100.0 * as / es : 0);
		printf("delivery delay, token sampled -> line read by the client (%zu tokens): p50 %.1f us, p99 %.1f us "
		       "(goal <= 200 us), max %.1f us\n",
		       se->n_delays, all.p50, all.p99, all.max);
		printf("  of which in the server, sampled -> line ready to write:  p50 %.1f us, p99 %.1f us, max %.1f us\n",
		       srv_part.p50, srv_part.p99, srv_part.max);
		printf("  and written -> read by the sleeping client (kernel):    p50 %.1f us, p99 %.1f us, max %.1f us\n",
		       wire.p50, wire.p99, wire.max);
		printf("gap between a stream's token lines at its client: p50 %.3f ms, p99 %.3f ms, max %.3f ms\n",
		       gap.p50 / 1e3, gap.p99 / 1e3, gap.max / 1e3);
	}
	if (probed) {
		struct pct floor = percentiles(probe->delays, probe->n);
		printf("\nthis machine's floor for the kernel part, a bare loopback write -> blocked read() while the engine "
		       "decodes (%zu probes): p50 %.1f us, p99 %.1f us, max %.1f us\n",
		       probe->n, floor.p50, floor.p99, floor.max);
	}
	else if (parallel == 1)
		printf("\nthis machine's wake-up floor: not measured (the probe could not start)\n");
	rc = 0;
out:
	rn_server_stop(srv);
	if (tmp_store)
		rm_tree(store);
	free(rendered);
	free(taps.engine);
	free(taps.line);
	free(taps.port);
	for (int i = 0; cl && i < parallel; i++)
		free(cl[i].rr.reads);
	free(cl);
	for (int k = 0; k < n_ser; k++)
		series_free(&ser[k]);
	free(probe);
	free(eng_tps);
	free(eng_ttft);
	rn_srv_config_free(&cfg);
	return rc;
}
