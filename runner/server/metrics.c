/* runner/server/metrics.c — counters, gauges and histograms behind one mutex, rendered in Prometheus text format.
 *
 * Label sets live in small linear tables (a server has a handful of routes and models); beyond
 * RN_METRICS_MAX_SERIES new label sets share one "other" series so memory stays bounded.
 */
#include "config.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/gofmt.h"
#include "runner/server/metrics.h"

#define LABEL_MAX 160

static const double dur_buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};
static const double ttft_buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
static const double itl_buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1};
#define NB(a) (sizeof a / sizeof a[0])
#define MAX_BUCKETS 16

struct hist {
	uint64_t counts[MAX_BUCKETS + 1]; /* cumulative computed at render; here per bucket, last = +Inf */
	uint64_t n;
	double sum;
};

struct req_series {
	char route[LABEL_MAX], method[16];
	int code;
	uint64_t count;
};

struct route_series {
	char route[LABEL_MAX];
	struct hist h;
};

struct model_series {
	char model[LABEL_MAX];
	uint64_t prompt, generated;
	struct hist ttft, itl;
};

struct rn_metrics {
	pthread_mutex_t mu;
	struct req_series req[RN_METRICS_MAX_SERIES];
	size_t n_req;
	struct route_series routes[RN_METRICS_MAX_SERIES];
	size_t n_routes;
	struct model_series models[RN_METRICS_MAX_SERIES];
	size_t n_models;
	int64_t queue, loaded, in_flight;
	uint64_t backpressure;
};

struct rn_metrics *rn_metrics_new(void)
{
	struct rn_metrics *m = calloc(1, sizeof *m);
	if (m)
		pthread_mutex_init(&m->mu, NULL);
	return m;
}

void rn_metrics_free(struct rn_metrics *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->mu);
	free(m);
}

static void copy_label(char *dst, const char *src)
{
	snprintf(dst, LABEL_MAX, "%s", src ? src : "");
}

static void hist_add(struct hist *h, const double *b, size_t nb, double v)
{
	size_t i = 0;
	while (i < nb && v > b[i])
		i++;
	h->counts[i]++;
	h->n++;
	h->sum += v;
}

/* The series labelled `label` in a table of *n series of `stride` bytes whose first member is the label:
 * found, or appended (the last free slot becomes the shared "other" series), or "other" once full. */
static void *series_get(void *table, size_t stride, size_t *n, const char *label)
{
	char *t = table;
	for (size_t i = 0; i < *n; i++)
		if (strcmp(t + i * stride, label) == 0)
			return t + i * stride;
	if (*n == RN_METRICS_MAX_SERIES)
		return t + (RN_METRICS_MAX_SERIES - 1) * stride;
	char *s = t + (*n)++ * stride;
	copy_label(s, *n == RN_METRICS_MAX_SERIES ? "other" : label);
	return s;
}

_Static_assert(offsetof(struct route_series, route) == 0, "series_get finds the label first");
_Static_assert(offsetof(struct model_series, model) == 0, "series_get finds the label first");

static struct route_series *route_get(struct rn_metrics *m, const char *route)
{
	return series_get(m->routes, sizeof m->routes[0], &m->n_routes, route);
}

static struct model_series *model_get(struct rn_metrics *m, const char *model)
{
	return series_get(m->models, sizeof m->models[0], &m->n_models, model);
}

/* Adds delta to a gauge under the lock; floor: never below zero. */
static void gauge_add(struct rn_metrics *m, int64_t *gauge, int64_t delta, bool floor)
{
	pthread_mutex_lock(&m->mu);
	*gauge += delta;
	if (floor && *gauge < 0)
		*gauge = 0;
	pthread_mutex_unlock(&m->mu);
}

void rn_metrics_request(struct rn_metrics *m, const char *route, const char *method, int status, double seconds)
{
	if (!m)
		return;
	if (!route || !*route)
		route = "unmatched";
	pthread_mutex_lock(&m->mu);
	struct req_series *s = NULL;
	for (size_t i = 0; i < m->n_req && !s; i++)
		if (m->req[i].code == status && strcmp(m->req[i].route, route) == 0 && strcmp(m->req[i].method, method) == 0)
			s = &m->req[i];
	if (!s) {
		if (m->n_req < RN_METRICS_MAX_SERIES) {
			s = &m->req[m->n_req++];
			copy_label(s->route, m->n_req == RN_METRICS_MAX_SERIES ? "other" : route);
			snprintf(s->method, sizeof s->method, "%s", method);
			s->code = status;
		} else {
			s = &m->req[RN_METRICS_MAX_SERIES - 1];
		}
	}
	s->count++;
	hist_add(&route_get(m, route)->h, dur_buckets, NB(dur_buckets), seconds);
	pthread_mutex_unlock(&m->mu);
}

void rn_metrics_in_flight(struct rn_metrics *m, int delta)
{
	if (m)
		gauge_add(m, &m->in_flight, delta, false);
}

void rn_metrics_tokens(struct rn_metrics *m, const char *model, uint64_t prompt, uint64_t generated)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	struct model_series *s = model_get(m, model);
	s->prompt += prompt;
	s->generated += generated;
	pthread_mutex_unlock(&m->mu);
}

/* One observation of a model's time to first token (itl false) or inter-token latency (itl true). */
static void model_observe(struct rn_metrics *m, const char *model, bool itl, double seconds)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	struct model_series *s = model_get(m, model);
	if (itl)
		hist_add(&s->itl, itl_buckets, NB(itl_buckets), seconds);
	else
		hist_add(&s->ttft, ttft_buckets, NB(ttft_buckets), seconds);
	pthread_mutex_unlock(&m->mu);
}

void rn_metrics_ttft(struct rn_metrics *m, const char *model, double seconds)
{
	model_observe(m, model, false, seconds);
}

void rn_metrics_inter_token(struct rn_metrics *m, const char *model, double seconds)
{
	model_observe(m, model, true, seconds);
}

void rn_metrics_queue(struct rn_metrics *m, int delta)
{
	if (m)
		gauge_add(m, &m->queue, delta, false);
}

void rn_metrics_backpressure(struct rn_metrics *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	m->backpressure++;
	pthread_mutex_unlock(&m->mu);
}

void rn_metrics_model_loaded(struct rn_metrics *m)
{
	if (m)
		gauge_add(m, &m->loaded, 1, false);
}

void rn_metrics_model_unloaded(struct rn_metrics *m)
{
	if (m)
		gauge_add(m, &m->loaded, -1, true);
}

/* Label values escape backslash, double quote and newline. */
static void put_label(struct ob_buf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			ob_buf_puts(b, "\\\\");
		else if (*s == '"')
			ob_buf_puts(b, "\\\"");
		else if (*s == '\n')
			ob_buf_puts(b, "\\n");
		else
			ob_buf_putc(b, *s);
	}
}

static void put_hist(struct ob_buf *b, const char *name, const char *lname, const char *lval, const struct hist *h,
		     const double *bk, size_t nb)
{
	uint64_t cum = 0;
	for (size_t i = 0; i <= nb; i++) {
		cum += h->counts[i];
		ob_buf_printf(b, "%s_bucket{%s=\"", name, lname);
		put_label(b, lval);
		if (i < nb)
			ob_buf_printf(b, "\",le=\"%g\"} %llu\n", bk[i], (unsigned long long)cum);
		else
			ob_buf_printf(b, "\",le=\"+Inf\"} %llu\n", (unsigned long long)cum);
	}
	ob_buf_printf(b, "%s_sum{%s=\"", name, lname);
	put_label(b, lval);
	char sum[32];
	ob_go_format_float_as(sum, h->sum, 'g', 64); /* Go's strconv 'g', shortest digits, as the Go client writes */
	ob_buf_printf(b, "\"} %s\n", sum);
	ob_buf_printf(b, "%s_count{%s=\"", name, lname);
	put_label(b, lval);
	ob_buf_printf(b, "\"} %llu\n", (unsigned long long)h->n);
}

static void proc_memory(uint64_t *rss, uint64_t *vsz)
{
	*rss = *vsz = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f)
		return;
	unsigned long long size = 0, res = 0;
	if (fscanf(f, "%llu %llu", &size, &res) == 2) {
		long page = sysconf(_SC_PAGESIZE);
		*vsz = size * (uint64_t)page;
		*rss = res * (uint64_t)page;
	}
	fclose(f);
}

/* The prefix-cache families: caches[i] whose model first appears at i carries the sum of every entry of that
 * model (a reload briefly holds two instances; one series per label set is what the format allows). */
static void put_caches(struct ob_buf *b, const struct rn_metrics_cache *c, size_t n)
{
	static const struct {
		const char *name, *type, *help;
	} fam[] = {
		{"orun_prefix_cache_hits_total", "counter",
		 "Requests that started from cached prompt tokens (their slot's own or the shared prefix cache's)."},
		{"orun_prefix_cache_misses_total", "counter", "Requests that evaluated their whole prompt."},
		{"orun_prefix_cache_tokens_reused_total", "counter",
		 "Prompt tokens not evaluated because they were cached."},
		{"orun_prefix_cache_blocks_evicted_total", "counter",
		 "Cached KV blocks dropped (least recently used) to keep the cache within its budget."},
		{"orun_prefix_cache_bytes", "gauge", "Bytes of the KV blocks in use by a sequence or kept for reuse now."},
		{"orun_prefix_cache_budget_bytes", "gauge",
		 "The most bytes of unused cached KV blocks kept (ORUN_PREFIX_CACHE, else sized from free memory)."},
	};
	for (size_t f = 0; f < sizeof fam / sizeof fam[0]; f++) {
		ob_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", fam[f].name, fam[f].help, fam[f].name, fam[f].type);
		for (size_t i = 0; i < n; i++) {
			if (!c[i].st.enabled)
				continue;
			bool seen = false;
			for (size_t j = 0; j < i && !seen; j++)
				seen = c[j].st.enabled && strcmp(c[j].model, c[i].model) == 0;
			if (seen)
				continue;
			uint64_t v = 0;
			for (size_t j = i; j < n; j++) {
				const struct rn_cache_stats *st = &c[j].st;
				if (!st->enabled || strcmp(c[j].model, c[i].model) != 0)
					continue;
				const uint64_t x[] = {st->hits, st->misses, st->tokens_reused, st->blocks_evicted,
						      st->bytes_held, st->bytes_budget};
				v += x[f];
			}
			ob_buf_printf(b, "%s{model=\"", fam[f].name);
			put_label(b, c[i].model);
			ob_buf_printf(b, "\"} %llu\n", (unsigned long long)v);
		}
	}
}

char *rn_metrics_render(struct rn_metrics *m, const struct rn_metrics_cache *caches, size_t n_caches, size_t *len)
{
	struct ob_buf b;
	ob_buf_init(&b, 64u << 20);
	pthread_mutex_lock(&m->mu);
	ob_buf_puts(&b, "# HELP ollama_http_requests_total HTTP requests answered, by route, method and status code.\n"
			"# TYPE ollama_http_requests_total counter\n");
	for (size_t i = 0; i < m->n_req; i++) {
		ob_buf_puts(&b, "ollama_http_requests_total{route=\"");
		put_label(&b, m->req[i].route);
		ob_buf_printf(&b, "\",method=\"%s\",code=\"%d\"} %llu\n", m->req[i].method, m->req[i].code,
			      (unsigned long long)m->req[i].count);
	}
	ob_buf_puts(&b, "# HELP ollama_request_duration_seconds Time from request to the end of the response, "
			"streaming included.\n# TYPE ollama_request_duration_seconds histogram\n");
	for (size_t i = 0; i < m->n_routes; i++)
		put_hist(&b, "ollama_request_duration_seconds", "route", m->routes[i].route, &m->routes[i].h, dur_buckets,
			 NB(dur_buckets));
	ob_buf_puts(&b, "# HELP ollama_inference_tokens_total Tokens processed, by model and type (prompt or "
			"generated).\n# TYPE ollama_inference_tokens_total counter\n");
	for (size_t i = 0; i < m->n_models; i++) {
		ob_buf_puts(&b, "ollama_inference_tokens_total{model=\"");
		put_label(&b, m->models[i].model);
		ob_buf_printf(&b, "\",type=\"prompt\"} %llu\n", (unsigned long long)m->models[i].prompt);
		ob_buf_puts(&b, "ollama_inference_tokens_total{model=\"");
		put_label(&b, m->models[i].model);
		ob_buf_printf(&b, "\",type=\"generated\"} %llu\n", (unsigned long long)m->models[i].generated);
	}
	ob_buf_puts(&b, "# HELP ollama_time_to_first_token_seconds Time from request to the first generated token "
			"sent.\n# TYPE ollama_time_to_first_token_seconds histogram\n");
	for (size_t i = 0; i < m->n_models; i++)
		put_hist(&b, "ollama_time_to_first_token_seconds", "model", m->models[i].model, &m->models[i].ttft,
			 ttft_buckets, NB(ttft_buckets));
	ob_buf_puts(&b, "# HELP ollama_inter_token_seconds Time between consecutive streamed tokens.\n"
			"# TYPE ollama_inter_token_seconds histogram\n");
	for (size_t i = 0; i < m->n_models; i++)
		put_hist(&b, "ollama_inter_token_seconds", "model", m->models[i].model, &m->models[i].itl, itl_buckets,
			 NB(itl_buckets));
	ob_buf_printf(&b,
		      "# HELP ollama_queue_depth Requests waiting for a model to load or for a free slot.\n"
		      "# TYPE ollama_queue_depth gauge\nollama_queue_depth %lld\n"
		      "# HELP ollama_models_loaded Models loaded in memory.\n"
		      "# TYPE ollama_models_loaded gauge\nollama_models_loaded %lld\n"
		      "# HELP ollama_requests_in_flight Inference requests being served.\n"
		      "# TYPE ollama_requests_in_flight gauge\nollama_requests_in_flight %lld\n"
		      "# HELP orun_stream_backpressure_total Streamed lines a client's socket did not take at once (slow "
		      "readers).\n"
		      "# TYPE orun_stream_backpressure_total counter\norun_stream_backpressure_total %llu\n",
		      (long long)m->queue, (long long)m->loaded, (long long)m->in_flight,
		      (unsigned long long)m->backpressure);
	pthread_mutex_unlock(&m->mu);
	put_caches(&b, caches, n_caches);
	uint64_t rss, vsz;
	proc_memory(&rss, &vsz);
	ob_buf_printf(&b,
		      "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
		      "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %llu\n"
		      "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
		      "# TYPE process_virtual_memory_bytes gauge\nprocess_virtual_memory_bytes %llu\n",
		      (unsigned long long)rss, (unsigned long long)vsz);
	if (b.failed) {
		ob_buf_free(&b);
		return NULL;
	}
	*len = b.len;
	return ob_buf_take(&b);
}
