/* runner/server/server.h — `orun serve`: the process that answers Ollama's REST API, the OpenAI-compatible /v1
 * API and /metrics, over the model store, the scheduler and the engine.
 *
 * server.c is the top of the server: it builds the services (store, scheduler, metrics, the HTTP listener),
 * hands them to the API handlers as a struct rn_api (runner/api/api.h) and routes to the handlers. The
 * dependency goes one way: server.c → runner/api/ → the services in runner/server/ (http, stream, sched,
 * metrics, log, envconfig); no handler calls back into server.c.
 */
#ifndef ORUN_RUNNER_SERVER_SERVER_H
#define ORUN_RUNNER_SERVER_SERVER_H

#include <stdbool.h>

#include "runner/api/api.h"
#include "runner/server/envconfig.h"
#include "runner/server/http.h"

struct rn_server {
	struct rn_api api; /* what the handlers run with: the HTTP layer's app pointer */
	struct rn_srv_config cfg;
	struct rn_http_server *http;
	int backend;         /* backend index for models (-1 = best) */
	bool is_gpu;         /* the best backend is a GPU with a device */
};

/* Runs the server until SIGINT/SIGTERM. Returns the process exit status (1 when it cannot start, with the
 * reason on stderr as Ollama prints it: "Error: listen tcp ...: bind: address already in use"). */
int rn_serve(const struct rn_srv_config *cfg);

/* The same in-process: starts listening (cfg is copied; its origins must outlive the server) and returns at
 * once, or NULL after printing the reason. quiet silences the log. Stop with rn_server_stop. The caller may
 * set s->api.emit_tap before the first request. */
struct rn_server *rn_server_start(const struct rn_srv_config *cfg, bool quiet);
int rn_server_port(const struct rn_server *s);
void rn_server_stop(struct rn_server *s);

/* The route table `orun serve` answers with (static, terminated by a NULL path): for tests and fuzz targets,
 * which run it without a socket through rn_http_serve_memory. */
const struct rn_http_route *rn_server_routes(void);

#endif
