/* runner/server/server.c — `orun serve`: start-up (store, prune, scheduler, HTTP listener), the route table,
 * logging, shutdown on SIGINT/SIGTERM, and the helpers the API files share (JSON replies, line pipes).
 *
 * Start-up mirrors Ollama's Serve(): log the configuration, prune unused blobs unless OLLAMA_NOPRUNE,
 * listen on OLLAMA_HOST. The per-endpoint logic lives in runner/api_*.c.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runner/backend.h"
#include "runner/kvcache.h"
#include "runner/server/server.h"

/* ---------------------------------------------------------------------------------------------------- */
/* logging */

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

void rn_srv_log(const struct rn_server *s, enum rn_log_level lv, const char *fmt, ...)
{
	if ((lv == RN_LOG_DEBUG && (!s || s->cfg.debug < 1)) || (s && s->quiet && lv < RN_LOG_ERROR))
		return;
	static const char *names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
	char msg[2048], ts[96];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	struct tm tm;
	localtime_r(&now.tv_sec, &tm);
	char zone[8];
	strftime(zone, sizeof zone, "%z", &tm);
	snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03ld%.3s:%.2s", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, now.tv_nsec / 1000000, zone, zone + 3);
	pthread_mutex_lock(&log_mu);
	fprintf(stderr, "time=%s level=%s source=orun msg=\"", ts, names[lv]);
	for (const char *p = msg; *p; p++) {
		if (*p == '"' || *p == '\\')
			fputc('\\', stderr);
		if (*p == '\n')
			fputs("\\n", stderr);
		else
			fputc(*p, stderr);
	}
	fputs("\"\n", stderr);
	pthread_mutex_unlock(&log_mu);
}

static void on_complete(void *app, const char *route, const char *method, const char *path, const char *remote,
			int status, double seconds)
{
	struct rn_server *s = app;
	rn_metrics_request(s->metrics, route, method, status, seconds);
	if (s->quiet)
		return;
	char when[32], dur[32];
	time_t t = time(NULL);
	struct tm tm;
	localtime_r(&t, &tm);
	strftime(when, sizeof when, "%Y/%m/%d - %H:%M:%S", &tm);
	if (seconds < 1e-3)
		snprintf(dur, sizeof dur, "%.3fµs", seconds * 1e6);
	else if (seconds < 1)
		snprintf(dur, sizeof dur, "%.6fms", seconds * 1e3);
	else
		snprintf(dur, sizeof dur, "%.9fs", seconds);
	pthread_mutex_lock(&log_mu);
	fprintf(stderr, "[GIN] %s | %3d | %13s | %15s | %-7s \"%s\"\n", when, status, dur, remote, method, path);
	pthread_mutex_unlock(&log_mu);
}

/* ---------------------------------------------------------------------------------------------------- */
/* shared helpers */

struct rn_server *rn_api_server(struct rn_http_req *r)
{
	return rn_http_req_app(r);
}

bool rn_api_req_gone(void *req)
{
	const struct rn_server *s = rn_http_req_app(req);
	return atomic_load(&s->stopping) || rn_http_req_client_gone(req);
}

void rn_api_send_jw(struct rn_http_req *r, int status, struct ob_jw *w)
{
	const char *s = ob_jw_str(w);
	if (s)
		rn_http_respond_json(r, status, s, w->len);
	else
		rn_http_respond_error(r, 500, ob_jw_status(w) == OB_JW_NOMEM ? "out of memory" : "json: unsupported value");
	ob_jw_free(w);
}

/* ---------------------------------------------------------------------------------------------------- */
/* line pipes */

struct pipe_item {
	char *line;
	size_t len;
	bool error;
	int status;
	struct pipe_item *next;
};

struct rn_pipe {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct pipe_item *head, *tail;
	bool closed;         /* producer finished (normally or with an error item) */
	bool consumer_gone;
	int refs;            /* producer + consumer */
	int fd;              /* the client's socket, for disconnect checks */
	struct pipe_item *cur; /* item being written */
};

struct rn_pipe *rn_pipe_new(void)
{
	struct rn_pipe *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->refs = 2;
	p->fd = -1;
	return p;
}

static void pipe_unref(struct rn_pipe *p)
{
	pthread_mutex_lock(&p->mu);
	bool last = --p->refs == 0;
	pthread_mutex_unlock(&p->mu);
	if (!last)
		return;
	struct pipe_item *it = p->head;
	while (it) {
		struct pipe_item *n = it->next;
		free(it->line);
		free(it);
		it = n;
	}
	if (p->cur) {
		free(p->cur->line);
		free(p->cur);
	}
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p);
}

static int pipe_add(struct rn_pipe *p, const char *line, size_t len, bool error, int status)
{
	struct pipe_item *it = calloc(1, sizeof *it);
	char *copy = malloc(len + 1);
	if (!it || !copy) {
		free(it);
		free(copy);
		return -1;
	}
	memcpy(copy, line, len);
	copy[len] = 0;
	it->line = copy;
	it->len = len;
	it->error = error;
	it->status = status;
	pthread_mutex_lock(&p->mu);
	bool gone = p->consumer_gone;
	if (!gone && !p->closed) {
		if (p->tail)
			p->tail->next = it;
		else
			p->head = it;
		p->tail = it;
		if (error)
			p->closed = true;
		it = NULL;
	}
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	if (it) {
		free(it->line);
		free(it);
	}
	return gone ? -1 : 0;
}

int rn_pipe_push(struct rn_pipe *p, const char *line, size_t len)
{
	return pipe_add(p, line, len, false, 200);
}

void rn_pipe_error(struct rn_pipe *p, int status, const char *msg)
{
	(void)pipe_add(p, msg, strlen(msg), true, status);
}

void rn_pipe_close(struct rn_pipe *p)
{
	pthread_mutex_lock(&p->mu);
	p->closed = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

bool rn_pipe_consumer_gone(struct rn_pipe *p)
{
	pthread_mutex_lock(&p->mu);
	bool g = p->consumer_gone;
	pthread_mutex_unlock(&p->mu);
	return g;
}

void rn_pipe_release(struct rn_pipe *p)
{
	if (p)
		pipe_unref(p);
}

/* Next item (blocking); NULL at the end. Marks the consumer gone when the socket closes. */
static struct pipe_item *pipe_pop(struct rn_pipe *p)
{
	pthread_mutex_lock(&p->mu);
	while (!p->head && !p->closed) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&p->cv, &p->mu, &ts);
		if (!p->head && rn_http_fd_gone(p->fd)) {
			p->consumer_gone = true;
			pthread_mutex_unlock(&p->mu);
			return NULL;
		}
	}
	struct pipe_item *it = p->head;
	if (it) {
		p->head = it->next;
		if (!p->head)
			p->tail = NULL;
		it->next = NULL;
	}
	pthread_mutex_unlock(&p->mu);
	return it;
}

static int pipe_next(void *ctx, const char **data, size_t *len)
{
	struct rn_pipe *p = ctx;
	if (p->cur) {
		free(p->cur->line);
		free(p->cur);
		p->cur = NULL;
	}
	struct pipe_item *it = pipe_pop(p);
	if (!it)
		return 0;
	if (it->error) {
		/* after streaming started: a final {"error"} line */
		struct ob_jw w;
		ob_jw_init(&w, 0, 0);
		ob_jw_obj(&w);
		ob_jw_key(&w, "error");
		ob_jw_stringn(&w, it->line, it->len);
		ob_jw_obj_end(&w);
		size_t n;
		char *s = ob_jw_take(&w, &n);
		ob_jw_free(&w);
		free(it->line);
		if (!s) {
			free(it);
			return -1;
		}
		char *line = realloc(s, n + 2);
		if (!line) {
			free(s);
			free(it);
			return -1;
		}
		line[n] = '\n';
		line[n + 1] = 0;
		it->line = line;
		it->len = n + 1;
	}
	p->cur = it;
	*data = it->line;
	*len = it->len;
	return 1;
}

static void pipe_stream_close(void *ctx, bool completed)
{
	struct rn_pipe *p = ctx;
	if (!completed) {
		pthread_mutex_lock(&p->mu);
		p->consumer_gone = true;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
	pipe_unref(p);
}

void rn_pipe_respond(struct rn_http_req *r, struct rn_pipe *p, bool stream)
{
	p->fd = rn_http_req_fd(r);
	struct pipe_item *first = pipe_pop(p);
	if (!first) {
		if (rn_http_req_client_gone(r))
			rn_http_respond_error(r, 499, "request canceled");
		else
			rn_http_respond_error(r, 500, "unexpected end of response");
		pipe_unref(p);
		return;
	}
	if (first->error) {
		char *msg = first->line;
		rn_http_respond_error(r, first->status ? first->status : 500, msg);
		free(first->line);
		free(first);
		pipe_unref(p);
		return;
	}
	if (!stream) {
		/* waitForStream: the last progress object, or the error */
		struct pipe_item *last = first;
		for (;;) {
			struct pipe_item *it = pipe_pop(p);
			if (!it)
				break;
			if (it->error) {
				rn_http_respond_error(r, it->status ? it->status : 500, it->line);
				free(it->line);
				free(it);
				free(last->line);
				free(last);
				pipe_unref(p);
				return;
			}
			free(last->line);
			free(last);
			last = it;
		}
		size_t n = last->len;
		while (n && last->line[n - 1] == '\n')
			n--;
		rn_http_respond_json(r, 200, last->line, n);
		free(last->line);
		free(last);
		pipe_unref(p);
		return;
	}
	struct rn_http_source src = {pipe_next, pipe_stream_close, p};
	rn_http_respond_stream(r, 200, "application/x-ndjson", first->line, first->len, &src);
	free(first->line);
	free(first);
}

/* ---------------------------------------------------------------------------------------------------- */
/* routes */

const struct rn_http_route rn_serve_routes[] = {
	{RN_HTTP_GET | RN_HTTP_HEAD, "/", rn_api_root, NULL, NULL, NULL, NULL},
	{RN_HTTP_GET | RN_HTTP_HEAD, "/api/version", rn_api_version, NULL, NULL, NULL, NULL},
	{RN_HTTP_GET, "/api/status", rn_api_status, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST, "/api/pull", rn_api_pull, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST, "/api/push", rn_api_push, NULL, NULL, NULL, NULL},
	{RN_HTTP_GET | RN_HTTP_HEAD, "/api/tags", rn_api_tags, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST, "/api/show", rn_api_show, NULL, NULL, NULL, NULL},
	{RN_HTTP_DELETE, "/api/delete", rn_api_delete, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST, "/api/create", rn_api_create, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST, "/api/blobs/:digest", rn_api_blob_post, rn_api_blob_begin, rn_api_blob_upload,
	 rn_api_blob_cleanup, "/api/blobs/:digest"},
	{RN_HTTP_HEAD, "/api/blobs/:digest", rn_api_blob_head, NULL, NULL, NULL, "/api/blobs/:digest"},
	{RN_HTTP_POST, "/api/copy", rn_api_copy, NULL, NULL, NULL, NULL},
	{RN_HTTP_GET, "/api/ps", rn_api_ps, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST, "/api/generate", rn_api_generate, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST, "/api/chat", rn_api_chat, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST, "/api/embed", rn_api_embed, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST, "/api/embeddings", rn_api_embeddings, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST, "/v1/chat/completions", rn_oai_chat, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST, "/v1/completions", rn_oai_completions, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST, "/v1/embeddings", rn_oai_embeddings, NULL, NULL, NULL, NULL},
	{RN_HTTP_GET, "/v1/models", rn_oai_models, NULL, NULL, NULL, NULL},
	{RN_HTTP_GET, "/v1/models/:model", rn_oai_model, NULL, NULL, NULL, "/v1/models/:model"},
	{RN_HTTP_GET, "/metrics", rn_api_metrics, NULL, NULL, NULL, NULL},
	{0, NULL, NULL, NULL, NULL, NULL, NULL},
};

/* ---------------------------------------------------------------------------------------------------- */
/* start / run */

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

struct rn_server *rn_server_start(const struct rn_srv_config *cfg, bool quiet)
{
	struct rn_server *sp = calloc(1, sizeof *sp);
	if (!sp) {
		fprintf(stderr, "Error: out of memory\n");
		return NULL;
	}
	struct rn_server srv_init;
	memset(&srv_init, 0, sizeof srv_init);
	*sp = srv_init;
	struct rn_server *s = sp;
	s->cfg = *cfg;
	s->quiet = quiet;
	for (size_t i = 0; i < cfg->n_warnings; i++)
		rn_srv_log(s, RN_LOG_WARN, "%s", cfg->warnings[i]);

	char env[8192];
	char ka[40];
	rn_go_format_duration(cfg->keep_alive_ns, ka, sizeof ka);
	snprintf(env, sizeof env,
		 "server config env=\"map[OLLAMA_CONTEXT_LENGTH:%u OLLAMA_HOST:%s://%s:%d OLLAMA_KEEP_ALIVE:%s "
		 "OLLAMA_KV_CACHE_TYPE:%s OLLAMA_MAX_LOADED_MODELS:%u OLLAMA_MAX_QUEUE:%u OLLAMA_MODELS:%s "
		 "OLLAMA_NOPRUNE:%s OLLAMA_NUM_PARALLEL:%u]\"",
		 cfg->context_length, cfg->host.scheme, cfg->host.host, cfg->host.port, ka, cfg->kv_cache_type,
		 cfg->max_loaded, cfg->max_queue, cfg->models, cfg->noprune ? "true" : "false", cfg->num_parallel);
	rn_srv_log(s, RN_LOG_INFO, "%s", env);

	enum rn_kv_type kv = RN_KV_F16;
	struct rn_error ke = {0};
	if (rn_kv_type_parse(cfg->kv_cache_type, &kv, &ke) != RN_OK) {
		fprintf(stderr, "Error: %s\n", ke.msg);
		free(s);
		return NULL;
	}
	struct mf_error me = {0};
	if (mf_store_open(cfg->models, &s->store, &me) != MF_OK) {
		fprintf(stderr, "Error: %s\n", me.msg);
		free(s);
		return NULL;
	}
	if (!cfg->noprune) {
		size_t nb = 0, nr = 0;
		if (mf_store_prune(s->store, &nb, &nr, &me) != MF_OK)
			rn_srv_log(s, RN_LOG_WARN, "corrupt manifests detected, skipping prune operation.  Re-pull or "
						    "delete to clear error=\"%s\"", me.msg);
		else if (nr)
			rn_srv_log(s, RN_LOG_INFO, "total unused blobs removed: %zu", nr);
	}
	s->backend = -1;
	for (int i = 0; i < rn_backend_count(); i++)
		if (strcmp(rn_backend_name(i), "cpu") != 0 && rn_backend_device_count(i) > 0)
			s->is_gpu = true;
	/* Ollama's default context (HEAD): OLLAMA_CONTEXT_LENGTH, else by total VRAM: >= 47 GiB 262144,
	 * >= 23 GiB 32768, else 4096 (so 4096 without a GPU). Always capped at the model's own context later. */
	const uint64_t vram = rn_backend_gpu_memory();
	s->default_num_ctx = cfg->context_length ? (int)cfg->context_length
			     : vram >= (47ULL << 30)  ? 262144
			     : vram >= (23ULL << 30)  ? 32768
						      : 4096;
	s->metrics = rn_metrics_new();
	struct rn_sched_config sc = {
		.num_parallel = cfg->num_parallel ? cfg->num_parallel : 1,
		.default_num_ctx = s->default_num_ctx,
		.max_loaded = cfg->max_loaded,
		.max_queue = cfg->max_queue,
		.keep_alive_ns = cfg->keep_alive_ns,
		.kv_type = kv,
		.backend = s->backend,
		.metrics = s->metrics,
	};
	s->sched = rn_sched_new(&sc);
	if (!s->metrics || !s->sched) {
		fprintf(stderr, "Error: out of memory\n");
		rn_server_stop(s);
		return NULL;
	}
	struct rn_http_options ho = {
		.listen = &s->cfg.host,
		.origins = (const char *const *)cfg->origins,
		.n_origins = cfg->n_origins,
		.routes = rn_serve_routes,
		.app = s,
		.on_complete = on_complete,
	};
	char err[512];
	s->http = rn_http_start(&ho, err, sizeof err);
	if (!s->http) {
		fprintf(stderr, "Error: %s\n", err);
		rn_server_stop(s);
		return NULL;
	}
	char hp[300];
	rn_srv_join_host_port(cfg->host.host, rn_http_port(s->http), hp, sizeof hp);
	rn_srv_log(s, RN_LOG_INFO, "Listening on %s (version %s, orun %s)", hp, RN_OLLAMA_VERSION, PACKAGE_VERSION);
	char backends[128] = "";
	for (int i = 0; i < rn_backend_count(); i++) {
		size_t l = strlen(backends);
		snprintf(backends + l, sizeof backends - l, "%s%s(%d)", i ? " " : "", rn_backend_name(i),
			 rn_backend_device_count(i));
	}
	rn_srv_log(s, RN_LOG_INFO, "backends: %s; default_num_ctx=%d", backends, s->default_num_ctx);
	return s;
}

int rn_server_port(const struct rn_server *s)
{
	return rn_http_port(s->http);
}

void rn_server_stop(struct rn_server *s)
{
	if (!s)
		return;
	atomic_store(&s->stopping, true);
	/* waiting requests give up (gone() sees stopping), streams end, then the engines stop */
	rn_http_stop(s->http);
	rn_sched_free(s->sched);
	rn_metrics_free(s->metrics);
	mf_store_close(s->store);
	free(s);
}

int rn_serve(const struct rn_srv_config *cfg)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	struct rn_server *s = rn_server_start(cfg, false);
	if (!s)
		return 1;
	while (!got_signal)
		pause();
	rn_srv_log(s, RN_LOG_INFO, "shutting down (signal %d)", (int)got_signal);
	rn_server_stop(s);
	return 0;
}
