/* tools/bench_serve.c — `orun bench --serve`: a load generator over the HTTP API of a running server.
 *
 * N client threads stream /api/chat from the server OLLAMA_HOST names (orun serve, or Ollama itself: only the
 * public API is used) with prompts from a built-in set or a file, for a number of requests or a duration, and
 * time each answer from the client's side: time to first token (first streamed text or thinking), decode
 * tok/s (eval_count over the time from the first to the last line), end-to-end latency. It reports p50, p95
 * and p99 of each, the aggregate tok/s, the errors, and the server's peak memory (VmHWM of --pid, the largest
 * size_vram /api/ps showed) as a markdown table and a JSON line. It does not start or configure the server.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/json.h"
#include "tools/bench_serve.h"
#include "tools/client.h"

#define SERVE_MAX_STREAMS 256        /* concurrent streams */
#define SERVE_MAX_PROMPTS 4096       /* lines read from --prompts */
#define SERVE_MAX_PROMPT_FILE (16u << 20)
#define SERVE_MAX_RESULTS (1u << 20) /* requests recorded in one run */
#define SERVE_TICK_NS 200000000LL    /* progress and memory sampling period */

/* Short chat requests of different lengths and kinds, so that a run without --prompts is varied but the same
 * from run to run. */
static const char *const builtin_prompts[] = {
	"Explain in three sentences why the sky is blue.",
	"Write a Python function that checks whether a string is a palindrome, with a short docstring.",
	"List five practical tips for writing clear commit messages.",
	"Summarise the plot of Romeo and Juliet in one paragraph.",
	"What is the difference between a process and a thread? Answer briefly.",
	"Translate into French: The meeting has been moved to Thursday afternoon because of the holiday.",
	"Write a haiku about a server room at night.",
	"Give a step-by-step recipe for a simple tomato sauce.",
};

struct serve_opts {
	const char *model;
	int streams;      /* -c */
	long requests;    /* --requests (0 = by duration) */
	double duration;  /* --duration seconds (0 = by requests) */
	int num_predict;  /* -n */
	int num_ctx;      /* --ctx (0 = the server's default) */
	long pid;         /* --pid (0 = none) */
	bool json_only;   /* --json */
	bool warmup;      /* one request before measuring (not counted) */
	const char *const *prompts;
	size_t n_prompts;
};

struct result {
	double start;   /* seconds since the measured phase began */
	double ttft;    /* seconds to the first streamed text; < 0 when none came */
	double total;   /* seconds to the end of the stream */
	double tok_s;   /* decode tokens/s seen by the client (0 when under 2 tokens) */
	long tokens;    /* eval_count of the final line, else the streamed chunks */
	bool ok;
};

struct run {
	const struct serve_opts *o;
	int64_t t0, t_end; /* monotonic ns: start of the measured phase, its end (duration mode) */
	atomic_long next;  /* requests handed out */
	atomic_long done;  /* requests finished */
	atomic_long tokens;
	atomic_int live;   /* streams still running */
	pthread_mutex_t mu;
	struct result *res;
	size_t n_res, cap_res;
	long errors;
	char first_error[256];
	uint64_t peak_vram; /* largest size_vram of the model in /api/ps */
	uint64_t peak_rss;  /* largest VmRSS seen of --pid */
};

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: orun bench --serve --model NAME [-c STREAMS] [--requests N | --duration SECONDS]\n"
		   "                          [-n TOKENS] [--ctx N] [--prompts FILE] [--pid PID] [--json]\n\n"
		   "Generates load on a running Ollama-compatible server (OLLAMA_HOST: orun serve or Ollama itself):\n"
		   "STREAMS concurrent streaming /api/chat requests, prompts taken in turn from a built-in set or FILE\n"
		   "(one prompt per line). Reports time to first token, decode tok/s and latency per request (p50, p95,\n"
		   "p99), the aggregate tok/s, the errors and the server's peak memory, as a markdown table and a JSON\n"
		   "line. A progress bar shows on stderr when it is a terminal.\n\n"
		   "  --model NAME      the model to load (required)\n"
		   "  -c, --streams N   concurrent streams (default 1, at most %d)\n"
		   "  --requests N      requests to measure (default 8 x streams)\n"
		   "  --duration S      measure for S seconds instead (requests in flight then finish)\n"
		   "  -n TOKENS         num_predict of each request (default 128)\n"
		   "  --ctx N           num_ctx of each request (default: the server's)\n"
		   "  --prompts FILE    prompts, one per line (empty lines skipped)\n"
		   "  --pid PID         the server's process on this machine: its peak RSS (VmHWM) is reported\n"
		   "  --no-warmup       do not send one unmeasured request first (it loads the model)\n"
		   "  --json            print only the JSON line\n"
		   "  -h, --help        show this help\n",
		SERVE_MAX_STREAMS);
}

/* ---------------------------------------------------------------------------------------------------- */
/* one request */

struct stream_state {
	int64_t t_start, t_first, t_last;
	long chunks, eval_count;
	char error[256];
};

static bool has_text(const struct ob_json *root)
{
	const struct ob_json *msg = ob_json_get(root, "message");
	const char *keys[] = {"content", "thinking"};
	for (int i = 0; msg && i < 2; i++) {
		const struct ob_json *v = ob_json_get(msg, keys[i]);
		if (v && v->type == OB_JSON_STRING && v->len)
			return true;
	}
	const struct ob_json *tc = msg ? ob_json_get(msg, "tool_calls") : NULL;
	return tc && tc->type == OB_JSON_ARRAY && tc->count;
}

static int on_line(void *ctx, const char *line, size_t n)
{
	struct stream_state *st = ctx;
	int64_t t = now_ns();
	struct ob_json_error je;
	struct ob_json_doc *d = ob_json_parse(line, n, &je);
	if (!d)
		return 0;
	const struct ob_json *root = ob_json_root(d);
	const struct ob_json *e = ob_json_get(root, "error");
	if (e && e->type == OB_JSON_STRING)
		snprintf(st->error, sizeof st->error, "%s", e->str);
	if (has_text(root)) {
		if (!st->t_first)
			st->t_first = t;
		st->chunks++;
	}
	st->t_last = t;
	const struct ob_json *ec = ob_json_get(root, "eval_count");
	int64_t v;
	if (ec && ob_json_int(ec, &v))
		st->eval_count = (long)v;
	ob_json_free(d);
	return 0;
}

static char *request_body(const struct serve_opts *o, const char *prompt)
{
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	ob_jw_key(&w, "model");
	ob_jw_string(&w, o->model);
	ob_jw_key(&w, "messages");
	ob_jw_arr(&w);
	ob_jw_obj(&w);
	ob_jw_key(&w, "role");
	ob_jw_string(&w, "user");
	ob_jw_key(&w, "content");
	ob_jw_string(&w, prompt);
	ob_jw_obj_end(&w);
	ob_jw_arr_end(&w);
	ob_jw_key(&w, "stream");
	ob_jw_bool(&w, true);
	ob_jw_key(&w, "options");
	ob_jw_obj(&w);
	ob_jw_key(&w, "num_predict");
	ob_jw_int(&w, o->num_predict);
	if (o->num_ctx > 0) {
		ob_jw_key(&w, "num_ctx");
		ob_jw_int(&w, o->num_ctx);
	}
	ob_jw_obj_end(&w);
	ob_jw_obj_end(&w);
	size_t len;
	return ob_jw_take(&w, &len);
}

/* Runs one request; fills *r (times relative to run->t0). */
static void one_request(struct run *run, struct client *c, const char *prompt, struct result *r)
{
	struct stream_state st = {.t_start = now_ns()};
	char *body = request_body(run->o, prompt);
	const bool built = body != NULL;
	int rc = built ? client_stream(c, "POST", "/api/chat", body, strlen(body), on_line, &st) : -1;
	free(body);
	int64_t t_end = now_ns();
	*r = (struct result){.start = (double)(st.t_start - run->t0) / 1e9, .total = (double)(t_end - st.t_start) / 1e9,
			     .ttft = st.t_first ? (double)(st.t_first - st.t_start) / 1e9 : -1};
	r->tokens = st.eval_count > 0 ? st.eval_count : st.chunks;
	r->ok = rc == 0 && !st.error[0] && built;
	if (st.t_first && st.t_last > st.t_first && r->tokens > 1)
		r->tok_s = (double)(r->tokens - 1) / ((double)(st.t_last - st.t_first) / 1e9);
	if (!r->ok) {
		pthread_mutex_lock(&run->mu);
		if (!run->first_error[0])
			snprintf(run->first_error, sizeof run->first_error, "%.255s",
				 st.error[0] ? st.error : built ? c->err : "out of memory");
		pthread_mutex_unlock(&run->mu);
	}
}

/* ---------------------------------------------------------------------------------------------------- */
/* the streams */

static void *stream_main(void *arg)
{
	struct run *run = arg;
	const struct serve_opts *o = run->o;
	struct client c;
	if (client_init(&c) != 0) {
		pthread_mutex_lock(&run->mu);
		snprintf(run->first_error, sizeof run->first_error, "%.255s", c.err);
		run->errors++;
		pthread_mutex_unlock(&run->mu);
		atomic_fetch_sub(&run->live, 1);
		return NULL;
	}
	for (;;) {
		long i = atomic_fetch_add(&run->next, 1);
		if ((o->requests && i >= o->requests) || (run->t_end && now_ns() >= run->t_end))
			break;
		struct result r;
		one_request(run, &c, o->prompts[(size_t)i % o->n_prompts], &r);
		pthread_mutex_lock(&run->mu);
		if (run->n_res == run->cap_res && run->cap_res < SERVE_MAX_RESULTS) {
			size_t cap = run->cap_res ? run->cap_res * 2 : 64;
			struct result *p = realloc(run->res, cap * sizeof *p);
			if (p) {
				run->res = p;
				run->cap_res = cap;
			}
		}
		if (run->n_res < run->cap_res)
			run->res[run->n_res++] = r;
		if (!r.ok)
			run->errors++;
		pthread_mutex_unlock(&run->mu);
		atomic_fetch_add(&run->tokens, r.ok ? r.tokens : 0);
		atomic_fetch_add(&run->done, 1);
	}
	client_cleanup(&c);
	atomic_fetch_sub(&run->live, 1);
	return NULL;
}

/* VmRSS (or VmHWM) of pid in bytes, 0 when unreadable. */
static uint64_t proc_kb(long pid, const char *field)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%ld/status", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	unsigned long long kb = 0;
	size_t fl = strlen(field);
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, field, fl) && line[fl] == ':') {
			kb = strtoull(line + fl + 1, NULL, 10);
			break;
		}
	fclose(f);
	return (uint64_t)kb * 1024u;
}

/* The GPU memory of the loaded models (the sum of size_vram in /api/ps), its largest value into run->peak_vram. */
static void sample_vram(struct run *run)
{
	struct ob_json_doc *d;
	char err[CLIENT_ERR_MAX];
	if (client_get_json("/api/ps", &d, err) != 0)
		return;
	const struct ob_json *models = ob_json_get(ob_json_root(d), "models");
	uint64_t sum = 0;
	for (const struct ob_json *m = models ? ob_json_first(models) : NULL; m; m = ob_json_after(models, m)) {
		const struct ob_json *v = ob_json_get(m, "size_vram");
		int64_t x;
		if (v && ob_json_int(v, &x) && x > 0)
			sum += (uint64_t)x;
	}
	if (sum > run->peak_vram)
		run->peak_vram = sum;
	ob_json_free(d);
}

static void progress(struct run *run, bool final)
{
	pthread_mutex_lock(&run->mu);
	long errors = run->errors;
	pthread_mutex_unlock(&run->mu);
	const struct serve_opts *o = run->o;
	double el = (double)(now_ns() - run->t0) / 1e9, frac;
	long done = atomic_load(&run->done);
	if (o->requests)
		frac = (double)done / (double)o->requests;
	else
		frac = el / o->duration;
	if (frac > 1)
		frac = 1;
	char bar[31];
	int fill = (int)(frac * 30);
	for (int i = 0; i < 30; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[30] = 0;
	fprintf(stderr, "\r\033[K[%s] %ld requests, %ld errors, %.1f tok/s, %.1f s%s", bar, done, errors,
		el > 0 ? (double)atomic_load(&run->tokens) / el : 0.0, el, final ? "\n" : "");
	fflush(stderr);
}

/* ---------------------------------------------------------------------------------------------------- */
/* the report */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Linear interpolation between the closest ranks (numpy's default) of sorted v[0..n). */
static double pct(const double *v, size_t n, double p)
{
	if (!n)
		return NAN;
	double k = (double)(n - 1) * p / 100.0;
	size_t lo = (size_t)k, hi = lo + 1 < n ? lo + 1 : lo;
	return v[lo] + (v[hi] - v[lo]) * (k - (double)lo);
}

struct dist {
	double p50, p95, p99, mean;
	size_t n;
};

/* Percentiles of one field of the successful results (ttft, tok_s or total); values < 0 are skipped. */
static struct dist distribution(const struct run *run, size_t field)
{
	struct dist d = {NAN, NAN, NAN, NAN, 0};
	double *v = malloc((run->n_res ? run->n_res : 1) * sizeof *v);
	if (!v)
		return d;
	double sum = 0;
	for (size_t i = 0; i < run->n_res; i++) {
		const struct result *r = &run->res[i];
		double x = field == 0 ? r->ttft : field == 1 ? r->tok_s : r->total;
		if (r->ok && x >= 0 && (field != 1 || x > 0)) {
			v[d.n++] = x;
			sum += x;
		}
	}
	qsort(v, d.n, sizeof *v, cmp_double);
	if (d.n)
		d = (struct dist){pct(v, d.n, 50), pct(v, d.n, 95), pct(v, d.n, 99), sum / (double)d.n, d.n};
	free(v);
	return d;
}

static void jw_dist(struct ob_jw *w, const char *key, struct dist d, double scale)
{
	ob_jw_key(w, key);
	ob_jw_obj(w);
	const char *k[] = {"p50", "p95", "p99", "mean"};
	double x[] = {d.p50, d.p95, d.p99, d.mean};
	for (int i = 0; i < 4; i++) {
		ob_jw_key(w, k[i]);
		if (isnan(x[i]))
			ob_jw_null(w);
		else
			ob_jw_float64(w, round(x[i] * scale * 1000) / 1000);
	}
	ob_jw_obj_end(w);
}

/* | label | p50 | p95 | p99 | mean |, "-" where no request gave a value */
static void table_row(const char *label, struct dist d, double scale, int decimals)
{
	printf("| %s |", label);
	const double x[] = {d.p50, d.p95, d.p99, d.mean};
	for (int i = 0; i < 4; i++)
		if (isnan(x[i]))
			printf(" - |");
		else
			printf(" %.*f |", decimals, x[i] * scale);
	printf("\n");
}

static void report(const struct run *run, double wall, uint64_t hwm)
{
	const struct serve_opts *o = run->o;
	struct dist ttft = distribution(run, 0), tps = distribution(run, 1), lat = distribution(run, 2);
	long tokens = atomic_load(&run->tokens);
	size_t ok = run->n_res - (size_t)(run->errors < (long)run->n_res ? run->errors : (long)run->n_res);
	double agg = wall > 0 ? (double)tokens / wall : 0;
	uint64_t peak_rss = hwm > run->peak_rss ? hwm : run->peak_rss;
	if (!o->json_only) {
		printf("| model | streams | requests | errors | wall s | aggregate tok/s |\n|---|---:|---:|---:|---:|---:|\n");
		printf("| %s | %d | %zu | %ld | %.2f | %.1f |\n\n", o->model, o->streams, run->n_res, run->errors, wall, agg);
		printf("| per request | p50 | p95 | p99 | mean |\n|---|---:|---:|---:|---:|\n");
		table_row("TTFT ms", ttft, 1e3, 1);
		table_row("decode tok/s", tps, 1, 1);
		table_row("latency s", lat, 1, 2);
		printf("\n");
		printf("| server memory | |\n|---|---:|\n");
		if (o->pid) {
			printf("| peak RSS during the run (pid %ld) | %.1f MiB |\n", o->pid, (double)run->peak_rss / 1048576.0);
			printf("| peak RSS since the server started (VmHWM) | %.1f MiB |\n", (double)peak_rss / 1048576.0);
		} else
			printf("| peak RSS | (give --pid) |\n");
		printf("| peak GPU memory (/api/ps size_vram) | %.1f MiB |\n", (double)run->peak_vram / 1048576.0);
		if (run->errors)
			printf("\nfirst error: %s\n", run->first_error);
		printf("\n");
	}
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	ob_jw_key(&w, "model");
	ob_jw_string(&w, o->model);
	ob_jw_key(&w, "streams");
	ob_jw_int(&w, o->streams);
	ob_jw_key(&w, "requests");
	ob_jw_uint(&w, run->n_res);
	ob_jw_key(&w, "ok");
	ob_jw_uint(&w, ok);
	ob_jw_key(&w, "errors");
	ob_jw_int(&w, run->errors);
	if (run->errors) {
		ob_jw_key(&w, "first_error");
		ob_jw_string(&w, run->first_error);
	}
	ob_jw_key(&w, "num_predict");
	ob_jw_int(&w, o->num_predict);
	ob_jw_key(&w, "wall_s");
	ob_jw_float64(&w, round(wall * 1000) / 1000);
	ob_jw_key(&w, "tokens");
	ob_jw_int(&w, tokens);
	ob_jw_key(&w, "aggregate_tok_s");
	ob_jw_float64(&w, round(agg * 1000) / 1000);
	jw_dist(&w, "ttft_ms", ttft, 1e3);
	jw_dist(&w, "decode_tok_s", tps, 1);
	jw_dist(&w, "latency_s", lat, 1);
	ob_jw_key(&w, "server_pid");
	if (o->pid)
		ob_jw_int(&w, o->pid);
	else
		ob_jw_null(&w);
	ob_jw_key(&w, "peak_rss_bytes"); /* VmHWM: since the server started */
	if (o->pid)
		ob_jw_uint(&w, peak_rss);
	else
		ob_jw_null(&w);
	ob_jw_key(&w, "run_peak_rss_bytes"); /* VmRSS sampled every 200 ms during the run */
	if (o->pid)
		ob_jw_uint(&w, run->peak_rss);
	else
		ob_jw_null(&w);
	ob_jw_key(&w, "peak_vram_bytes");
	ob_jw_uint(&w, run->peak_vram);
	ob_jw_obj_end(&w);
	const char *s = ob_jw_str(&w);
	if (s)
		printf("%s\n", s);
	ob_jw_free(&w);
	fflush(stdout);
}

/* ---------------------------------------------------------------------------------------------------- */
/* arguments */

static int bad_value(const char *flag, const char *v)
{
	fprintf(stderr, "orun bench --serve: %s wants a positive number, got '%s'\n", flag, v ? v : "");
	return 2;
}

static bool parse_long(const char *s, long lo, long hi, long *out)
{
	if (!s || !*s)
		return false;
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

/* Prompts of a file, one per non-empty line; the lines point into *text (kept by the caller). */
static int read_prompts(const char *path, struct ob_buf *text, const char ***out, size_t *n)
{
	ob_buf_init(text, SERVE_MAX_PROMPT_FILE);
	if (!ob_buf_read_file(text, path) || !ob_buf_putc(text, 0)) {
		fprintf(stderr, "orun bench --serve: cannot read %s: %s\n", path, text->failed ? "too large" : strerror(errno));
		return 2;
	}
	const char **v = calloc(SERVE_MAX_PROMPTS, sizeof *v);
	if (!v)
		return 1;
	*n = 0;
	for (char *p = text->p, *nl; *p && *n < SERVE_MAX_PROMPTS; p = nl + 1) {
		nl = strchr(p, '\n');
		if (!nl)
			nl = p + strlen(p);
		bool last = *nl == 0;
		*nl = 0;
		if (nl > p && nl[-1] == '\r')
			nl[-1] = 0;
		if (*p)
			v[(*n)++] = p;
		if (last)
			break;
	}
	if (!*n) {
		free(v);
		fprintf(stderr, "orun bench --serve: %s holds no prompt\n", path);
		return 2;
	}
	*out = v;
	return 0;
}

int bench_serve(int argc, char **argv)
{
	struct serve_opts o = {.streams = 1, .num_predict = 128, .warmup = true, .prompts = builtin_prompts,
			       .n_prompts = sizeof builtin_prompts / sizeof builtin_prompts[0]};
	const char *prompts_file = NULL;
	long v;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--serve"))
			continue;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(a, "--json")) {
			o.json_only = true;
		} else if (!strcmp(a, "--no-warmup")) {
			o.warmup = false;
		} else if (!strcmp(a, "--model") || !strcmp(a, "-m")) {
			if (!val)
				return bad_value(a, val);
			o.model = argv[++i];
		} else if (!strcmp(a, "--prompts")) {
			if (!val)
				return bad_value(a, val);
			prompts_file = argv[++i];
		} else if (!strcmp(a, "-c") || !strcmp(a, "--streams")) {
			if (!parse_long(val, 1, SERVE_MAX_STREAMS, &v))
				return bad_value(a, val);
			o.streams = (int)v;
			i++;
		} else if (!strcmp(a, "--requests")) {
			if (!parse_long(val, 1, SERVE_MAX_RESULTS, &v))
				return bad_value(a, val);
			o.requests = v;
			i++;
		} else if (!strcmp(a, "--duration")) {
			char *end;
			o.duration = val ? strtod(val, &end) : 0;
			if (!val || *end || !(o.duration > 0) || o.duration > 86400)
				return bad_value(a, val);
			i++;
		} else if (!strcmp(a, "-n")) {
			if (!parse_long(val, 1, 1 << 20, &v))
				return bad_value(a, val);
			o.num_predict = (int)v;
			i++;
		} else if (!strcmp(a, "--ctx")) {
			if (!parse_long(val, 1, 1 << 24, &v))
				return bad_value(a, val);
			o.num_ctx = (int)v;
			i++;
		} else if (!strcmp(a, "--pid")) {
			if (!parse_long(val, 1, 1L << 30, &v))
				return bad_value(a, val);
			o.pid = v;
			i++;
		} else {
			fprintf(stderr, "orun bench --serve: unknown option '%s' (see orun bench --serve --help)\n", a);
			return 2;
		}
	}
	if (!o.model) {
		fprintf(stderr, "orun bench --serve: --model NAME is required (see orun bench --serve --help)\n");
		return 2;
	}
	if (o.requests && o.duration) {
		fprintf(stderr, "orun bench --serve: give --requests or --duration, not both\n");
		return 2;
	}
	if (!o.requests && !o.duration)
		o.requests = 8L * o.streams;
	if (o.pid && !proc_kb(o.pid, "VmRSS")) {
		fprintf(stderr, "orun bench --serve: no process %ld on this machine (--pid)\n", o.pid);
		return 2;
	}
	struct ob_buf text = {0};
	const char **file_prompts = NULL;
	if (prompts_file) {
		int rc = read_prompts(prompts_file, &text, &file_prompts, &o.n_prompts);
		if (rc) {
			ob_buf_free(&text);
			return rc;
		}
		o.prompts = file_prompts;
	}

	struct run run = {.o = &o};
	pthread_mutex_init(&run.mu, NULL);
	int status = 0;
	struct client c;
	if (client_connect(&c) != 0) {
		fprintf(stderr, "Error: %s\n", c.err);
		status = 1;
		goto out;
	}
	if (o.warmup) {
		struct result r;
		run.t0 = now_ns();
		one_request(&run, &c, o.prompts[0], &r);
		if (!r.ok) {
			fprintf(stderr, "Error: the warm-up request failed: %s\n", run.first_error);
			client_cleanup(&c);
			status = 1;
			goto out;
		}
	}
	client_cleanup(&c);
	if (o.pid)
		run.peak_rss = proc_kb(o.pid, "VmRSS");

	const bool tty = isatty(2) && !o.json_only;
	pthread_t th[SERVE_MAX_STREAMS];
	int started = 0;
	run.t0 = now_ns();
	run.t_end = o.duration ? run.t0 + (int64_t)(o.duration * 1e9) : 0;
	atomic_store(&run.live, o.streams);
	for (; started < o.streams; started++)
		if (pthread_create(&th[started], NULL, stream_main, &run) != 0)
			break;
	atomic_fetch_sub(&run.live, o.streams - started);
	if (!started) {
		fprintf(stderr, "Error: cannot start a client thread\n");
		status = 1;
		goto out;
	}
	/* sample memory and draw the progress bar until every stream has stopped */
	while (atomic_load(&run.live) > 0) {
		if (o.pid) {
			uint64_t rss = proc_kb(o.pid, "VmRSS");
			if (rss > run.peak_rss)
				run.peak_rss = rss;
		}
		sample_vram(&run);
		if (tty)
			progress(&run, false);
		struct timespec ts = {0, SERVE_TICK_NS};
		nanosleep(&ts, NULL);
	}
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	double wall = (double)(now_ns() - run.t0) / 1e9;
	if (tty)
		progress(&run, true);
	uint64_t hwm = o.pid ? proc_kb(o.pid, "VmHWM") : 0;
	report(&run, wall, hwm);
	status = run.errors ? 1 : 0;
out:
	free(run.res);
	free(file_prompts);
	ob_buf_free(&text);
	pthread_mutex_destroy(&run.mu);
	return status;
}
