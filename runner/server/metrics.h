/* runner/server/metrics.h — Prometheus metrics for `orun serve` (GET /metrics, text exposition format 0.0.4).
 *
 * Exposed series (names the seed documents alert on are kept as they wrote them):
 *   ollama_http_requests_total{route,method,code}          counter
 *   ollama_request_duration_seconds{route}                 histogram, whole request incl. streaming
 *   ollama_inference_tokens_total{model,type}              counter, type = prompt | generated
 *   ollama_time_to_first_token_seconds{model}              histogram, request start → first token out
 *   ollama_inter_token_seconds{model}                      histogram, gap between streamed tokens
 *   ollama_queue_depth, ollama_models_loaded, ollama_requests_in_flight   gauges
 *   process_resident_memory_bytes, process_virtual_memory_bytes          gauges (from /proc)
 * Thread-safe; label values are escaped as the format requires. Series counts are bounded.
 */
#ifndef ORUN_RUNNER_SERVER_METRICS_H
#define ORUN_RUNNER_SERVER_METRICS_H

#include <stddef.h>
#include <stdint.h>

#define RN_METRICS_MAX_SERIES 512 /* distinct label sets per metric; more are folded into "other" */

struct rn_metrics;

struct rn_metrics *rn_metrics_new(void);
void rn_metrics_free(struct rn_metrics *m);

/* A finished HTTP request (status 0 = no response: counted as code "0"). */
void rn_metrics_request(struct rn_metrics *m, const char *route, const char *method, int status, double seconds);
void rn_metrics_in_flight(struct rn_metrics *m, int delta);
void rn_metrics_tokens(struct rn_metrics *m, const char *model, uint64_t prompt, uint64_t generated);
void rn_metrics_ttft(struct rn_metrics *m, const char *model, double seconds);
void rn_metrics_inter_token(struct rn_metrics *m, const char *model, double seconds);
void rn_metrics_queue(struct rn_metrics *m, int delta);
void rn_metrics_model_loaded(struct rn_metrics *m);
void rn_metrics_model_unloaded(struct rn_metrics *m);
/* A streamed token line the client's socket did not take at once (a slow reader): the engine thread left its
 * tail to the connection's thread. */
void rn_metrics_backpressure(struct rn_metrics *m);

/* The exposition text (malloc'd, NUL-terminated), or NULL when out of memory. */
char *rn_metrics_render(struct rn_metrics *m, size_t *len);

#endif
