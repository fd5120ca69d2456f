/* runner/server/server.c — `orun serve`: start-up (store, prune, scheduler, HTTP listener), the route table,
 * the access log, shutdown on SIGINT/SIGTERM.
 *
 * Start-up mirrors Ollama's Serve(): log the configuration, prune unused blobs unless OLLAMA_NOPRUNE,
 * listen on OLLAMA_HOST. The per-endpoint logic lives in runner/api/ (the handlers named in the route table).
 */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner/api/lines.h"
#include "runner/backend.h"
#include "runner/kvcache.h"
#include "runner/server/server.h"
/* ---------------------------------------------------------------------------------------------------- */
/* the access log */

static void on_complete(void *app, const char *route, const char *method, const char *path, const char *remote,
			int status, double seconds)
{
	struct rn_api *a = app;
	rn_metrics_request(a->metrics, route, method, status, seconds);
	rn_log_access(&a->log, status, seconds, remote, method, path);
}

static void on_http_warning(void *app, const char *msg)
{
	struct rn_api *a = app;
	rn_log(&a->log, RN_LOG_WARN, "%s", msg);
}

/* ---------------------------------------------------------------------------------------------------- */
/* routes (RN_HTTP_PROMPT_BODY: bodies with prompts, images in base64 or documents get the larger cap) */

static const struct rn_http_route routes[] = {
	{RN_HTTP_GET | RN_HTTP_HEAD, "/", rn_api_root, NULL, NULL, NULL, NULL},
	{RN_HTTP_GET | RN_HTTP_HEAD, "/api/version", rn_api_version, NULL, NULL, NULL, NULL},
	{RN_HTTP_GET, "/api/status", rn_api_status, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST, "/api/pull", rn_api_pull, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST, "/api/push", rn_api_push, NULL, NULL, NULL, NULL},
	{RN_HTTP_GET | RN_HTTP_HEAD, "/api/tags", rn_api_tags, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST, "/api/show", rn_api_show, NULL, NULL, NULL, NULL},
	{RN_HTTP_DELETE, "/api/delete", rn_api_delete, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST | RN_HTTP_PROMPT_BODY, "/api/create", rn_api_create, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST, "/api/blobs/:digest", rn_api_blob_post, rn_api_blob_begin, rn_api_blob_upload,
	 rn_api_blob_cleanup, "/api/blobs/:digest"},
	{RN_HTTP_HEAD, "/api/blobs/:digest", rn_api_blob_head, NULL, NULL, NULL, "/api/blobs/:digest"},
	{RN_HTTP_POST, "/api/copy", rn_api_copy, NULL, NULL, NULL, NULL},
	{RN_HTTP_GET, "/api/ps", rn_api_ps, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST | RN_HTTP_PROMPT_BODY, "/api/generate", rn_api_generate, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST | RN_HTTP_PROMPT_BODY, "/api/chat", rn_api_chat, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST | RN_HTTP_PROMPT_BODY, "/api/embed", rn_api_embed, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST | RN_HTTP_PROMPT_BODY, "/api/embeddings", rn_api_embeddings, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST | RN_HTTP_PROMPT_BODY, "/v1/chat/completions", rn_oai_chat, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST | RN_HTTP_PROMPT_BODY, "/v1/completions", rn_oai_completions, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST | RN_HTTP_PROMPT_BODY, "/v1/embeddings", rn_oai_embeddings, NULL, NULL, NULL, NULL},
	{RN_HTTP_GET, "/v1/models", rn_oai_models, NULL, NULL, NULL, NULL},
	{RN_HTTP_GET, "/v1/models/:model", rn_oai_model, NULL, NULL, NULL, "/v1/models/:model"},
	{RN_HTTP_GET, "/metrics", rn_api_metrics, NULL, NULL, NULL, NULL},
	{0, NULL, NULL, NULL, NULL, NULL, NULL},
};

const struct rn_http_route *rn_server_routes(void)
{
	return routes;
}

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
	s->api.log.debug = cfg->debug;
	s->api.log.quiet = quiet;
	for (size_t i = 0; i < cfg->n_warnings; i++)
		rn_log(&s->api.log, RN_LOG_WARN, "%s", cfg->warnings[i]);

	char env[8192];
	char ka[40];
	rn_go_format_duration(cfg->keep_alive_ns, ka, sizeof ka);
	snprintf(env, sizeof env,
		 "server config env=\"map[OLLAMA_CONTEXT_LENGTH:%u OLLAMA_HOST:%s://%s:%d OLLAMA_KEEP_ALIVE:%s "
		 "OLLAMA_KV_CACHE_TYPE:%s OLLAMA_MAX_LOADED_MODELS:%u OLLAMA_MAX_QUEUE:%u OLLAMA_MODELS:%s "
		 "OLLAMA_NOPRUNE:%s OLLAMA_NUM_PARALLEL:%u]\"",
		 cfg->context_length, cfg->host.scheme, cfg->host.host, cfg->host.port, ka, cfg->kv_cache_type,
		 cfg->max_loaded, cfg->max_queue, cfg->models, cfg->noprune ? "true" : "false", cfg->num_parallel);
	rn_log(&s->api.log, RN_LOG_INFO, "%s", env);

	enum rn_kv_type kv = RN_KV_F16;
	struct rn_error ke = {0};
	if (rn_kv_type_parse(cfg->kv_cache_type, &kv, &ke) != RN_OK) {
		fprintf(stderr, "Error: %s\n", ke.msg);
		free(s);
		return NULL;
	}
	struct mf_error me = {0};
	if (mf_store_open(cfg->models, &s->api.store, &me) != MF_OK) {
		fprintf(stderr, "Error: %s\n", me.msg);
		free(s);
		return NULL;
	}
	size_t nt = 0;
	uint64_t tb = 0;
	if (mf_store_clean_temp(s->api.store, &nt, &tb, &me) == MF_OK && nt) /* not models: even with OLLAMA_NOPRUNE */
		rn_log(&s->api.log, RN_LOG_INFO, "removed %zu temporary files of interrupted creates (%.1f MB)", nt,
		       (double)tb / 1e6);
	if (!cfg->noprune) {
		size_t nb = 0, nr = 0;
		if (mf_store_prune(s->api.store, &nb, &nr, &me) != MF_OK)
			rn_log(&s->api.log, RN_LOG_WARN, "corrupt manifests detected, skipping prune operation.  Re-pull or "
						    "delete to clear error=\"%s\"", me.msg);
		else if (nr)
			rn_log(&s->api.log, RN_LOG_INFO, "total unused blobs removed: %zu", nr);
	}
	s->backend = -1;
	for (int i = 0; i < rn_backend_count(); i++)
		if (strcmp(rn_backend_name(i), "cpu") != 0 && rn_backend_device_count(i) > 0)
			s->is_gpu = true;
	/* Ollama's default context (HEAD): OLLAMA_CONTEXT_LENGTH, else by total VRAM: >= 47 GiB 262144,
	 * >= 23 GiB 32768, else 4096 (so 4096 without a GPU). Always capped at the model's own context later. */
	const uint64_t vram = rn_backend_gpu_memory();
	s->api.default_num_ctx = cfg->context_length ? (int)cfg->context_length
			     : vram >= (47ULL << 30)  ? 262144
			     : vram >= (23ULL << 30)  ? 32768
						      : 4096;
	s->api.metrics = rn_metrics_new();
	struct rn_sched_config sc = {
		.num_parallel = cfg->num_parallel ? cfg->num_parallel : 1,
		.default_num_ctx = s->api.default_num_ctx,
		.max_loaded = cfg->max_loaded,
		.max_queue = cfg->max_queue,
		.keep_alive_ns = cfg->keep_alive_ns,
		.kv_type = kv,
		.backend = s->backend,
		.metrics = s->api.metrics,
		.log = &s->api.log,
	};
	s->api.sched = rn_sched_new(&sc);
	if (!s->api.metrics || !s->api.sched) {
		fprintf(stderr, "Error: out of memory\n");
		rn_server_stop(s);
		return NULL;
	}
	struct rn_http_options ho = {
		.listen = &s->cfg.host,
		.origins = (const char *const *)cfg->origins,
		.n_origins = cfg->n_origins,
		.routes = routes,
		.app = &s->api,
		.on_complete = on_complete,
		.on_warning = on_http_warning,
		.max_body = cfg->http_max_body,
		.max_prompt_body = cfg->http_max_prompt_body,
		.max_connections = cfg->http_max_connections,
		.max_connections_per_ip = cfg->http_max_connections_per_ip,
		.idle_timeout_s = cfg->http_idle_timeout_s,
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
	rn_log(&s->api.log, RN_LOG_INFO, "Listening on %s (version %s, orun %s)", hp, RN_OLLAMA_VERSION, PACKAGE_VERSION);
	char backends[128] = "";
	for (int i = 0; i < rn_backend_count(); i++) {
		size_t l = strlen(backends);
		snprintf(backends + l, sizeof backends - l, "%s%s(%d)", i ? " " : "", rn_backend_name(i),
			 rn_backend_device_count(i));
	}
	rn_log(&s->api.log, RN_LOG_INFO, "backends: %s; default_num_ctx=%d", backends, s->api.default_num_ctx);
	rn_log(&s->api.log, RN_LOG_INFO, "HTTP limits: %s", rn_http_limits_text(s->http, env, sizeof env));
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
	atomic_store(&s->api.stopping, true);
	/* waiting requests give up (gone() sees stopping), streams end, then the engines stop */
	rn_http_stop(s->http);
	/* creates see stopping at their next check (every few rows while quantizing) and remove their temporary
	 * files: wait for them, a bounded time (what is left after that is removed at the next start) */
	for (int ms = 0; atomic_load(&s->api.creates) > 0 && ms < RN_LINES_STOP_WAIT_MS; ms += 10)
		usleep(10000);
	rn_sched_free(s->api.sched);
	rn_metrics_free(s->api.metrics);
	mf_store_close(s->api.store);
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
	rn_log(&s->api.log, RN_LOG_INFO, "shutting down (signal %d)", (int)got_signal);
	rn_server_stop(s);
	return 0;
}
