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
 *   orun_prefix_cache_{hits,misses,tokens_reused,blocks_evicted}_total{model}  counters of each loaded model's
 *   orun_prefix_cache_bytes{model}, orun_prefix_cache_budget_bytes{model}     prefix cache, and gauges of its
 *                                                          size held now and its budget (runner/kvpool.h)
 * Thread-safe; label values are escaped as the format requires. Series counts are bounded.
 */
#ifndef ORUN_RUNNER_SERVER_METRICS_H
#define ORUN_RUNNER_SERVER_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "runner/kvpool.h"

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

/* One loaded model's prefix cache as its engine counts it (rn_engine_cache_stats): the counters live in the
 * engine, not here, so they start from zero again when the model is reloaded (a counter reset, which
 * Prometheus's rate() expects). */
struct rn_metrics_cache {
	const char *model; /* the loaded model's name, as /api/ps shows it (borrowed for the call) */
	struct rn_cache_stats st;
};

/* The exposition text (malloc'd, NUL-terminated), or NULL when out of memory. caches: the loaded models'
 * prefix caches (n_caches of them, may be NULL when 0); those without a cache (enabled false) are left out,
 * and two instances of one model (a reload under way) are summed into one series. */
char *rn_metrics_render(struct rn_metrics *m, const struct rn_metrics_cache *caches, size_t n_caches, size_t *len);

#endif
