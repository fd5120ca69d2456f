/* runner/api/api.h — what the API handlers run with, and the handlers the servers route to.
 *
 * Dependencies go one way: runner/server/server.c (`orun serve`) and runner/api/llamaserver.c build a
 * struct rn_api over their services and name the handlers in their route tables; the handlers use the
 * services (runner/server/sched, metrics, log) and the transport (runner/server/http, stream), never the
 * code that routes to them. The handlers run on libmicrohttpd's connection threads (one per connection); the
 * struct is shared by all of them and read-only once the server has started, except `stopping`.
 */
#ifndef ORUN_RUNNER_API_API_H
#define ORUN_RUNNER_API_API_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/json.h"
#include "modelfile/store.h"
#include "runner/server/http.h"
#include "runner/server/log.h"
#include "runner/server/metrics.h"
#include "runner/server/sched.h"

/* The Ollama release whose API orun follows (reference/ollama-wire.md); /api/version reports it so that
 * clients (Open WebUI, the ollama CLI) enable the features orun implements (think levels, thinking by
 * default, tool calls). orun's own version is PACKAGE_VERSION. */
#define RN_OLLAMA_VERSION "0.32.15"

struct rn_api {
	struct mf_store *store;     /* the model store (NULL in the llama-server runner mode) */
	struct rn_sched *sched;
	struct rn_metrics *metrics; /* may be NULL */
	struct rn_log log;
	int default_num_ctx; /* num_ctx when neither request, model nor OLLAMA_CONTEXT_LENGTH set it */
	atomic_bool stopping;   /* shutting down: waiting requests give up (set by the main thread, read by all) */
	atomic_int creates;     /* create threads still running: the server's stop waits for them (their cleanup) */
	/* Measurement only (orun bench --api --placement): true = the engine's thread only queues each token's
	 * text and the connection's thread runs the parsers, formats and writes it. The default (false) is the
	 * placement measured faster per token (runner/README.md). */
	bool format_on_connection;
	/* Optional tap for measurements (orun bench --api): called for every streamed token line with the
	 * connection's socket, the monotonic time the engine delivered the token and the time the line was
	 * formatted, about to be written. Runs where the line is formatted (runner/README.md): it must be quick. */
	void (*emit_tap)(void *ctx, int fd, int64_t t_engine_ns, int64_t t_line_ns);
	void *emit_tap_ctx;
};

/* The API context of a request (the app pointer the server was started with). */
struct rn_api *rn_api_of(struct rn_http_req *r);
/* For rn_sched/rn_job `gone` callbacks: ctx is the struct rn_http_req; true once the client left or the
 * server is stopping. */
bool rn_api_req_gone(void *req);
/* Sends the writer's JSON (gin's c.JSON, or a 500 when the writer failed) and frees the writer. */
void rn_api_send_jw(struct rn_http_req *r, int status, struct ob_jw *w);
/* Ollama's error body {"error": msg} with this status (rn_http_respond_error), in the shape of a face's error
 * responder (struct rn_infer_face.error). */
void rn_api_respond_error(struct rn_http_req *r, int status, const char *msg);

struct rn_dec;
/* Reads the request body as Go's api.<go_struct> (runner/api/decode.h): sets *d up for that struct and
 * returns the document (the caller frees it) with *root its object (NULL for a null body); for a body Go
 * would refuse, answers 400 with the decoder's message through respond_error and returns NULL. */
struct ob_json_doc *rn_api_decode(struct rn_http_req *r, struct rn_dec *d, const char *go_struct,
				  const struct ob_json **root,
				  void (*respond_error)(struct rn_http_req *r, int status, const char *msg));

/* ---------------------------------------------------------------------------------------------------- */
/* The handlers `orun serve` routes to. */

/* Ollama's model management (runner/api/ollama.c) */
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
void rn_api_metrics(struct rn_http_req *r);
void rn_api_status(struct rn_http_req *r);
/* Ollama's inference (runner/api/ollama_format.c, over runner/api/pipeline.c) */
void rn_api_generate(struct rn_http_req *r);
void rn_api_chat(struct rn_http_req *r);
/* embeddings (runner/api/embed.c) */
void rn_api_embed(struct rn_http_req *r);
void rn_api_embeddings(struct rn_http_req *r);
void rn_oai_embeddings(struct rn_http_req *r);
/* OpenAI's /v1 (runner/api/openai.c) */
void rn_oai_chat(struct rn_http_req *r);
void rn_oai_completions(struct rn_http_req *r);
void rn_oai_models(struct rn_http_req *r);
void rn_oai_model(struct rn_http_req *r);
/* OpenAI's error body {"error":{"message","type","param":null,"code":null}} with the type for the status. */
void rn_oai_respond_error(struct rn_http_req *r, int status, const char *msg);

#endif
