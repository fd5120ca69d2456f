/* runner/server/server.h — `orun serve`: the process that answers Ollama's REST API, the OpenAI-compatible /v1 API
 * and /metrics, over the model store, the scheduler and the engine.
 *
 * The server object is shared (read-only after start) by the API handlers in runner/api_*.c, which run on
 * libmicrohttpd's connection threads. Logging goes to stderr in Ollama's slog text style, plus gin-style
 * request lines.
 */
#ifndef ORUN_RUNNER_SERVER_SERVER_H
#define ORUN_RUNNER_SERVER_SERVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/json.h"
#include "modelfile/store.h"
#include "runner/server/http.h"
#include "runner/server/metrics.h"
#include "runner/server/sched.h"
#include "runner/server/envconfig.h"

/* The Ollama release whose API orun follows (reference/ollama-wire.md); /api/version reports it so that
 * clients (Open WebUI, the ollama CLI) enable the features orun implements (think levels, thinking by
 * default, tool calls). orun's own version is PACKAGE_VERSION. */
#define RN_OLLAMA_VERSION "0.32.15"

struct rn_server {
	struct rn_srv_config cfg;
	struct mf_store *store;
	struct rn_sched *sched;
	struct rn_metrics *metrics;
	struct rn_http_server *http;
	int default_num_ctx; /* num_ctx when neither request, model nor OLLAMA_CONTEXT_LENGTH set it */
	int backend;         /* backend index for models (-1 = best) */
	bool is_gpu;         /* the best backend is a GPU with a device */
	atomic_bool stopping;   /* shutting down: waiting requests give up (set by the main thread, read by all) */
	bool quiet;             /* no log lines (in-process use, e.g. orun bench --api) */
	/* Optional tap for measurements: called on the connection thread for every streamed token line with the
	 * monotonic time the engine delivered the token and the time the line was handed to the socket layer. */
	void (*emit_tap)(void *ctx, int64_t t_engine_ns, int64_t t_line_ns);
	void *emit_tap_ctx;
};

enum rn_log_level { RN_LOG_DEBUG, RN_LOG_INFO, RN_LOG_WARN, RN_LOG_ERROR };

/* One log line on stderr: `time=... level=INFO msg="..."` (printf-style message). */
void rn_srv_log(const struct rn_server *s, enum rn_log_level lv, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Runs the server until SIGINT/SIGTERM. Returns the process exit status (1 when it cannot start, with the
 * reason on stderr as Ollama prints it: "Error: listen tcp ...: bind: address already in use"). */
int rn_serve(const struct rn_srv_config *cfg);

/* The same in-process: starts listening (cfg is copied; its origins must outlive the server) and returns at
 * once, or NULL after printing the reason. quiet silences the log. Stop with rn_server_stop. */
struct rn_server *rn_server_start(const struct rn_srv_config *cfg, bool quiet);
int rn_server_port(const struct rn_server *s);
void rn_server_stop(struct rn_server *s);

/* The route table of `orun serve` (terminated by a NULL path). */
extern const struct rn_http_route rn_serve_routes[];

/* Handlers of the Ollama API (runner/api/ollama.c, runner/api/pipeline.c, runner/api/embed.c) and of /v1
 * (runner/api/openai.c), used in the route table. */
void rn_api_root(struct rn_http_req *r);
void rn_api_version(struct rn_http_req *r);
void rn_api_tags(struct rn_http_req *r);
void rn_api_show(struct rn_http_req *r);
void rn_api_copy(struct rn_http_req *r);
void rn_api_delete(struct rn_http_req *r);
void rn_api_blob_head(struct rn_http_req *r);
void rn_api_blob_begin(struct rn_http_req *r);
int rn_api_blob_upload(struct rn_http_req *r, const char *data, size_t n);
void rn_api_blob_post(struct rn_http_req *r);
void rn_api_blob_cleanup(struct rn_http_req *r, void *user);
void rn_api_create(struct rn_http_req *r);
void rn_api_pull(struct rn_http_req *r);
void rn_api_push(struct rn_http_req *r);
void rn_api_ps(struct rn_http_req *r);
void rn_api_generate(struct rn_http_req *r);
void rn_api_chat(struct rn_http_req *r);
void rn_api_embed(struct rn_http_req *r);
void rn_api_embeddings(struct rn_http_req *r);
void rn_api_metrics(struct rn_http_req *r);
void rn_api_status(struct rn_http_req *r);
void rn_oai_chat(struct rn_http_req *r);
void rn_oai_completions(struct rn_http_req *r);
void rn_oai_embeddings(struct rn_http_req *r);
void rn_oai_models(struct rn_http_req *r);
void rn_oai_model(struct rn_http_req *r);

/* Helpers shared by the API files. */
/* Sends the writer's JSON (or a 500 when it failed) and frees the writer. */
void rn_api_send_jw(struct rn_http_req *r, int status, struct ob_jw *w);
/* The server of a request. */
struct rn_server *rn_api_server(struct rn_http_req *r);
/* For rn_sched/rn_job `gone` callbacks: ctx is the struct rn_http_req. */
bool rn_api_req_gone(void *req);

/* A queue of complete response lines between a producer thread and the connection (streamed create, pull).
 * The first item decides the status: an error item before any line becomes the HTTP error response. */
struct rn_pipe;
struct rn_pipe *rn_pipe_new(void);
/* Producer side. push copies the line; error ends the stream with {"error": msg} (status used only if no
 * line was sent yet). close ends it normally. Returns -1 when the consumer is gone (the producer should stop). */
int rn_pipe_push(struct rn_pipe *p, const char *line, size_t len);
void rn_pipe_error(struct rn_pipe *p, int status, const char *msg);
void rn_pipe_close(struct rn_pipe *p);
bool rn_pipe_consumer_gone(struct rn_pipe *p);
/* Drops the producer's reference (the pipe is freed when both sides let go). */
void rn_pipe_release(struct rn_pipe *p);
/* Consumer side: answers the request from the pipe (streamed NDJSON, or, with stream false, only the last
 * line as application/json). Takes over the consumer reference. */
void rn_pipe_respond(struct rn_http_req *r, struct rn_pipe *p, bool stream);

#endif
