/* tools/bench_serve.c — `orun bench --serve`: a load generator over the HTTP API of a running server.
 *
 * N client threads stream /api/chat from the server OLLAMA_HOST names (orun serve, or Ollama itself: only the
 * public API is used) with prompts from a built-in set or a file, for a number of requests or a duration, and
 * time each answer from the client's side: time to first token (first streamed text or thinking), decode
 * tok/s (eval_count over the time from the first to the last line), end-to-end latency. It reports p50, p95
 * and p99 of each, the aggregate tok/s, the errors, and the server's peak memory (VmHWM of --pid, the largest
 * size_vram /api/ps showed) as a markdown table and a JSON line. It does not start or configure the server.
 * --pattern webui replays Open WebUI's shape instead (a long shared system prompt, chats of several turns,
 * title requests between them) to measure a prefix cache shared by the slots (issue 16).
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
	/* --pattern webui (see the webui section) */
	bool webui;
	int prefix_tokens; /* --prefix-tokens: the shared system prompt's size, about */
	int chats;         /* --chats */
	int turns;         /* --turns */
	bool titles;       /* a title request between turns (--no-titles: none) */
	bool no_cache;     /* --no-cache: every request asks cache_prompt false (no reuse at all) */
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
		   "                          [-n TOKENS] [--ctx N] [--prompts FILE] [--pid PID] [--json]\n"
		   "       orun bench --serve --pattern webui --model NAME [-c STREAMS] [--prefix-tokens N]\n"
		   "                          [--chats N] [--turns N] [--no-titles] [--no-cache] [-n TOKENS] [--pid PID]\n"
		   "                          [--json]\n\n"
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
		   "  -h, --help        show this help\n\n"
		   "  --pattern webui   Open WebUI's pattern instead (issue 16): every chat starts with the same long\n"
		   "                    system prompt (tool schemas); CHATS chats of TURNS turns, a short title request\n"
		   "                    between turns; the first chat alone, then STREAMS chats at once (default 2:\n"
		   "                    start the server with OLLAMA_NUM_PARALLEL=2). Reports the TTFT of each turn of\n"
		   "                    the first chat and of the later ones (p50, p95), their ratio to the first chat's\n"
		   "                    first turn (the goal is at most 10 %%), the prefix cache's counters from\n"
		   "                    /metrics and the server's peak memory (--pid). To compare: --no-cache, or a\n"
		   "                    server started with ORUN_PREFIX_CACHE=0 (no block kept once no slot holds it).\n"
		   "  --prefix-tokens N the shared system prompt's size, about (default 5000)\n"
		   "  --chats N         chats (default 10)\n"
		   "  --turns N         turns per chat (default 3)\n"
		   "  --no-titles       no title request between turns\n"
		   "  --no-cache        every request asks cache_prompt false: every prompt evaluated in full\n"
		   "                    (-n defaults to 64 with this pattern; num_ctx to fit the prefix and the turns)\n",
		SERVE_MAX_STREAMS);
}

/* ---------------------------------------------------------------------------------------------------- */
/* one request */

struct stream_state {
	int64_t t_start, t_first, t_last;
	long chunks, eval_count;
	long prompt_eval_count;   /* of the final line, -1 when none came */
	struct ob_buf *content;   /* when set: the answer's text is appended here */
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
	const struct ob_json *pc = ob_json_get(root, "prompt_eval_count");
	if (pc && ob_json_int(pc, &v))
		st->prompt_eval_count = (long)v;
	const struct ob_json *msg = st->content ? ob_json_get(root, "message") : NULL;
	const struct ob_json *ct = msg ? ob_json_get(msg, "content") : NULL;
	if (ct && ct->type == OB_JSON_STRING)
		ob_buf_append(st->content, ct->str, ct->len);
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
	struct stream_state st = {.t_start = now_ns(), .prompt_eval_count = -1};
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
/* --pattern webui: what Open WebUI sends. Every chat starts with the same long system prompt (Open WebUI attaches
 * its ~36 built-in tool schemas, ~5,500 tokens, to every chat); each chat has a few turns, and between turns a
 * short side request (Open WebUI's "generate a concise title" task) that does not share that prefix and lands
 * on whichever slot is free. The first chat runs alone (its first turn evaluates the whole prefix); the other
 * chats then run `streams` at a time. The report compares the time to first token of every turn after the first
 * chat with the first chat's first turn: with a prefix cache shared by the slots it is a small fraction. */

#define WEBUI_MAX_CHATS 1000
#define WEBUI_MAX_TURNS 20
#define WEBUI_MAX_PREFIX (1 << 20)  /* tokens */
#define WEBUI_CHARS_PER_TOKEN 4.07  /* of the generated tool schemas with SmolLM2's tokenizer (15,530 characters:
				     * 3,814 tokens); the report prints the count the server measured */
#define WEBUI_TITLE_PREDICT 24

static const char *const webui_topics[] = {
	"planning a vegetable garden on a small balcony", "learning to play the piano as an adult",
	"choosing a database for a small web shop", "training for a first half marathon",
	"writing a cover letter for a junior developer job", "organising a week-long trip to Japan",
	"reducing the energy bill of an old house", "teaching a child to ride a bicycle",
	"setting up backups for a family's photos", "baking sourdough bread at home",
	"preparing for a job interview in data science", "keeping a small aquarium healthy",
};

static const char *const webui_followups[] = {
	"Can you give me a concrete example?",
	"What are the most common mistakes, and how do I avoid them?",
	"Summarise the plan in three short bullet points.",
	"How long will this take, realistically?",
	"What would you do differently on a tight budget?",
};

/* A deterministic pseudo-random word list for the tool schemas: the same prefix every run. */
static uint32_t webui_rand(uint32_t *x)
{
	*x = *x * 1664525u + 1013904223u;
	return *x >> 8;
}

/* The shared system prompt: tool schemas in the shape Open WebUI sends (name, description, JSON parameters),
 * about `tokens` tokens long. NULL when out of memory. */
static char *webui_prefix(int tokens)
{
	static const char *const verbs[] = {"search", "fetch", "create", "update", "delete", "list", "summarise",
					    "translate", "convert", "schedule", "query", "export"};
	static const char *const things[] = {"notes", "calendar_events", "web_pages", "files", "knowledge_base",
					     "memories", "images", "contacts", "channels", "chats", "folders", "models"};
	static const char *const words[] = {"the", "user", "current", "selected", "given", "result", "optional",
					    "identifier", "query", "string", "number", "limit", "page", "time", "zone",
					    "language", "format", "returned", "items", "matching", "filter", "content"};
	const size_t nv = sizeof verbs / sizeof *verbs, nt = sizeof things / sizeof *things,
		     nw = sizeof words / sizeof *words;
	struct ob_buf b;
	ob_buf_init(&b, (size_t)WEBUI_MAX_PREFIX * 8);
	ob_buf_puts(&b, "You are a helpful assistant. You have access to the following tools; call one only when it "
			"helps to answer the user.\n\nAvailable Tools: [");
	const size_t want = (size_t)(tokens * WEBUI_CHARS_PER_TOKEN);
	uint32_t x = 12345;
	for (int k = 0; b.len < want && !b.failed; k++) {
		const char *v = verbs[webui_rand(&x) % nv], *t = things[webui_rand(&x) % nt];
		ob_buf_printf(&b, "%s{\"type\": \"function\", \"function\": {\"name\": \"%s_%s_%d\", \"description\": \"",
			      k ? ", " : "", v, t, k);
		for (int w = 0; w < 12; w++)
			ob_buf_printf(&b, "%s%s", w ? " " : "", words[webui_rand(&x) % nw]);
		ob_buf_puts(&b, ".\", \"parameters\": {\"type\": \"object\", \"properties\": {");
		const int np = 2 + (int)(webui_rand(&x) % 3);
		for (int q = 0; q < np; q++)
			ob_buf_printf(&b, "%s\"%s_%s\": {\"type\": \"%s\", \"description\": \"%s %s %s\"}", q ? ", " : "",
				      words[webui_rand(&x) % nw], words[webui_rand(&x) % nw],
				      webui_rand(&x) % 2 ? "string" : "integer", words[webui_rand(&x) % nw],
				      words[webui_rand(&x) % nw], words[webui_rand(&x) % nw]);
		ob_buf_puts(&b, "}, \"required\": []}}}");
	}
	ob_buf_puts(&b, "]\n\nAnswer briefly and clearly.");
	if (b.failed) {
		ob_buf_free(&b);
		return NULL;
	}
	return ob_buf_take(&b);
}

struct webui_msg {
	const char *role;
	char *content; /* owned */
};

struct webui_result {
	double ttft;      /* seconds; < 0 when no text came */
	double total;
	long prompt_eval; /* prompt_eval_count of the answer, -1 when none */
	bool ok, done;
};

struct webui_run {
	const struct serve_opts *o;
	const char *prefix;
	int num_ctx;
	atomic_int next_chat;
	pthread_mutex_t mu;
	struct webui_result *turn;  /* [chats][turns] */
	struct webui_result *title; /* [chats][turns - 1] */
	long errors;
	char first_error[256];
};

static char *webui_body(const struct webui_run *run, const struct webui_msg *m, int n, int num_predict)
{
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	ob_jw_key(&w, "model");
	ob_jw_string(&w, run->o->model);
	ob_jw_key(&w, "messages");
	ob_jw_arr(&w);
	for (int i = 0; i < n; i++) {
		ob_jw_obj(&w);
		ob_jw_key(&w, "role");
		ob_jw_string(&w, m[i].role);
		ob_jw_key(&w, "content");
		ob_jw_string(&w, m[i].content);
		ob_jw_obj_end(&w);
	}
	ob_jw_arr_end(&w);
	ob_jw_key(&w, "stream");
	ob_jw_bool(&w, true);
	ob_jw_key(&w, "options");
	ob_jw_obj(&w);
	ob_jw_key(&w, "num_predict");
	ob_jw_int(&w, num_predict);
	ob_jw_key(&w, "num_ctx"); /* the same for every request: another one would reload the model */
	ob_jw_int(&w, run->num_ctx);
	ob_jw_key(&w, "temperature"); /* greedy: the same answers, hence the same prompts, run after run */
	ob_jw_int(&w, 0);
	ob_jw_key(&w, "seed");
	ob_jw_int(&w, 42);
	if (run->o->no_cache) {
		ob_jw_key(&w, "cache_prompt");
		ob_jw_bool(&w, false);
	}
	ob_jw_obj_end(&w);
	ob_jw_obj_end(&w);
	size_t len;
	return ob_jw_take(&w, &len);
}

/* One streamed chat request; the answer's text into *answer (malloc'd) when answer is not NULL. */
static void webui_request(struct webui_run *run, struct client *c, const struct webui_msg *m, int n, int num_predict,
			  struct webui_result *r, char **answer)
{
	struct ob_buf text;
	ob_buf_init(&text, 1u << 20);
	struct stream_state st = {.t_start = now_ns(), .prompt_eval_count = -1, .content = answer ? &text : NULL};
	char *body = webui_body(run, m, n, num_predict);
	int rc = body ? client_stream(c, "POST", "/api/chat", body, strlen(body), on_line, &st) : -1;
	free(body);
	int64_t t_end = now_ns();
	*r = (struct webui_result){.ttft = st.t_first ? (double)(st.t_first - st.t_start) / 1e9 : -1,
				   .total = (double)(t_end - st.t_start) / 1e9, .prompt_eval = st.prompt_eval_count,
				   .done = true};
	r->ok = rc == 0 && !st.error[0] && body && !text.failed;
	if (answer)
		*answer = r->ok ? ob_buf_take(&text) : NULL;
	ob_buf_free(&text);
	if (!r->ok) {
		pthread_mutex_lock(&run->mu);
		run->errors++;
		if (!run->first_error[0])
			snprintf(run->first_error, sizeof run->first_error, "%.255s",
				 st.error[0] ? st.error : c->err[0] ? c->err : "out of memory");
		pthread_mutex_unlock(&run->mu);
	}
}

/* Open WebUI's title task (a short prompt of its own, the chat's first exchange quoted). */
static char *webui_title_prompt(const char *user, const char *assistant)
{
	struct ob_buf b;
	ob_buf_init(&b, 1u << 20);
	ob_buf_printf(&b, "### Task:\nGenerate a concise, 3-5 word title with an emoji summarizing the chat history.\n"
			  "### Output:\nJSON format: { \"title\": \"your concise title here\" }\n### Chat History:\n"
			  "<chat_history>\nUSER: %s\nASSISTANT: %.400s\n</chat_history>", user, assistant);
	return b.failed ? (ob_buf_free(&b), NULL) : ob_buf_take(&b);
}

/* Chat number k: its turns, and the title request after each turn but the last. */
static void webui_chat(struct webui_run *run, struct client *c, int k)
{
	const struct serve_opts *o = run->o;
	const size_t n_topics = sizeof webui_topics / sizeof *webui_topics;
	const size_t n_follow = sizeof webui_followups / sizeof *webui_followups;
	struct webui_msg m[1 + 2 * WEBUI_MAX_TURNS] = {{"system", (char *)run->prefix}};
	int n = 1;
	for (int t = 0; t < o->turns; t++) {
		char q[512];
		if (t == 0)
			snprintf(q, sizeof q, "Chat %d: I need help with %s. Where do I start?", k + 1,
				 webui_topics[(size_t)k % n_topics]);
		else
			snprintf(q, sizeof q, "%s", webui_followups[(size_t)(t - 1 + k) % n_follow]);
		if (!(m[n].content = strdup(q)))
			break;
		m[n++].role = "user";
		char *answer = NULL;
		webui_request(run, c, m, n, o->num_predict, &run->turn[k * o->turns + t], &answer);
		if (!answer)
			break;
		m[n].role = "assistant";
		m[n++].content = answer;
		if (o->titles && t + 1 < o->turns) {
			struct webui_msg tm = {"user", webui_title_prompt(m[1].content, m[2].content)};
			if (!tm.content)
				break;
			webui_request(run, c, &tm, 1, WEBUI_TITLE_PREDICT, &run->title[k * (o->turns - 1) + t], NULL);
			free(tm.content);
		}
	}
	for (int i = 1; i < n; i++)
		free(m[i].content);
}

static void *webui_worker(void *arg)
{
	struct webui_run *run = arg;
	struct client c;
	if (client_init(&c) != 0) {
		pthread_mutex_lock(&run->mu);
		run->errors++;
		snprintf(run->first_error, sizeof run->first_error, "%.255s", c.err);
		pthread_mutex_unlock(&run->mu);
		return NULL;
	}
	for (int k; (k = atomic_fetch_add(&run->next_chat, 1)) < run->o->chats;)
		webui_chat(run, &c, k);
	client_cleanup(&c);
	return NULL;
}

/* A number of /metrics: the sum of the samples of `name` (every label set), or -1 when the server has none. */
static double metric_sum(const char *text, const char *name)
{
	double sum = -1;
	size_t nl = strlen(name);
	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (strncmp(p, name, nl) != 0 || (p[nl] != '{' && p[nl] != ' '))
			continue;
		const char *sp = strchr(p, ' '), *nlp = strchr(p, '\n');
		if (p[nl] == '{')
			sp = strstr(p, "} ") ? strstr(p, "} ") + 1 : NULL;
		if (!sp || (nlp && sp > nlp))
			continue;
		sum = (sum < 0 ? 0 : sum) + strtod(sp + 1, NULL);
	}
	return sum;
}

struct webui_cache {
	double hits, tokens_reused, evicted, budget;
};

static void webui_metrics(struct webui_cache *wc)
{
	*wc = (struct webui_cache){-1, -1, -1, -1};
	struct client c;
	if (client_init(&c) != 0)
		return;
	struct client_response resp = {0};
	if (client_do(&c, "GET", "/metrics", NULL, 0, &resp) == 0 && resp.body) {
		wc->hits = metric_sum(resp.body, "orun_prefix_cache_hits_total");
		wc->tokens_reused = metric_sum(resp.body, "orun_prefix_cache_tokens_reused_total");
		wc->evicted = metric_sum(resp.body, "orun_prefix_cache_blocks_evicted_total");
		wc->budget = metric_sum(resp.body, "orun_prefix_cache_budget_bytes");
	}
	free(resp.body);
	client_cleanup(&c);
}

/* Percentiles of the successful results' TTFT picked by want(chat, turn). */
static struct dist webui_dist(const struct webui_run *run, const struct webui_result *v, int per_chat, int chat_lo,
			      int chat_hi, int turn)
{
	struct dist d = {NAN, NAN, NAN, NAN, 0};
	size_t cap = (size_t)(chat_hi - chat_lo) * (size_t)(per_chat ? per_chat : 1) + 1;
	double *x = malloc(cap * sizeof *x), sum = 0;
	if (!x)
		return d;
	for (int k = chat_lo; k < chat_hi; k++)
		for (int t = 0; t < per_chat; t++) {
			const struct webui_result *r = &v[k * per_chat + t];
			if ((turn < 0 || t == turn) && r->done && r->ok && r->ttft >= 0) {
				x[d.n++] = r->ttft;
				sum += r->ttft;
			}
		}
	qsort(x, d.n, sizeof *x, cmp_double);
	if (d.n)
		d = (struct dist){pct(x, d.n, 50), pct(x, d.n, 95), pct(x, d.n, 99), sum / (double)d.n, d.n};
	free(x);
	(void)run;
	return d;
}

static void ms_cell(double s)
{
	if (isnan(s) || s < 0)
		printf(" - |");
	else
		printf(" %.0f |", s * 1e3);
}

static void pct_cell(double a, double b)
{
	if (isnan(a) || isnan(b) || !(b > 0))
		printf(" - |");
	else
		printf(" %.1f %% |", 100 * a / b);
}

static void jw_num(struct ob_jw *w, const char *key, double v, double scale)
{
	ob_jw_key(w, key);
	if (isnan(v) || v < 0)
		ob_jw_null(w);
	else
		ob_jw_float64(w, round(v * scale * 1000) / 1000);
}

static void webui_report(const struct webui_run *run, double wall, uint64_t hwm, const struct webui_cache *c0,
			 const struct webui_cache *c1)
{
	const struct serve_opts *o = run->o;
	const struct webui_result *first = &run->turn[0];
	const double base = first->ok ? first->ttft : NAN;
	struct dist later = webui_dist(run, run->turn, o->turns, 1, o->chats, -1);
	struct dist titles = webui_dist(run, run->title, o->turns - 1, 0, o->chats, -1);
	const bool have_cache = c0->tokens_reused >= 0 && c1->tokens_reused >= 0;
	if (!o->json_only) {
		printf("Open WebUI pattern: %d chats x %d turns%s, a shared system prompt of %ld tokens (the first "
		       "turn's prompt_eval_count), num_ctx %d, num_predict %d; the first chat alone, then %d chats at "
		       "once; wall %.1f s, %ld errors\n\n",
		       o->chats, o->turns, o->titles ? " with a title request between turns" : "", first->prompt_eval,
		       run->num_ctx, o->num_predict, o->streams, wall, run->errors);
		printf("| TTFT ms | first chat | later chats p50 | later p95 | p50 / first chat's turn 1 | p95 / first "
		       "chat's turn 1 |\n|---|---:|---:|---:|---:|---:|\n");
		for (int t = 0; t < o->turns; t++) {
			struct dist d = webui_dist(run, run->turn, o->turns, 1, o->chats, t);
			const struct webui_result *f = &run->turn[t];
			printf("| turn %d |", t + 1);
			ms_cell(f->ok ? f->ttft : NAN);
			ms_cell(d.p50);
			ms_cell(d.p95);
			pct_cell(d.p50, base);
			pct_cell(d.p95, base);
			printf("\n");
		}
		printf("| every turn after the first chat |");
		ms_cell(base);
		ms_cell(later.p50);
		ms_cell(later.p95);
		pct_cell(later.p50, base);
		pct_cell(later.p95, base);
		printf("\n");
		if (o->titles) {
			printf("| title requests |  -  |");
			ms_cell(titles.p50);
			ms_cell(titles.p95);
			printf(" - | - |\n");
		}
		const bool met = !isnan(later.p95) && base > 0 && later.p95 <= 0.1 * base && !run->errors;
		printf("\ngoal (issue 16): TTFT p50 and p95 of every turn after the first chat at most 10 %% of the first "
		       "chat's first turn: %s\n", met ? "met" : "NOT met");
		if (o->pid)
			printf("server peak memory (VmHWM of pid %ld): %.1f MiB\n", o->pid, (double)hwm / 1048576.0);
		else
			printf("server peak memory: unknown (give --pid PID of the server)\n");
		if (have_cache)
			printf("prefix cache during the run (/metrics): %.0f hits, %.0f tokens reused, %.0f blocks evicted, "
			       "budget %.1f MiB\n", c1->hits - c0->hits, c1->tokens_reused - c0->tokens_reused,
			       c1->evicted - c0->evicted, c1->budget / 1048576.0);
		else
			printf("prefix cache: the server's /metrics has no orun_prefix_cache_* counters\n");
		if (o->no_cache)
			printf("--no-cache: every request asked cache_prompt false (every prompt evaluated in full)\n");
		else
			printf("to compare: --no-cache (no reuse at all), or a server started with ORUN_PREFIX_CACHE=0 "
			       "(a prefix is shared only while a slot holds it)\n");
		if (run->errors)
			printf("first error: %s\n", run->first_error);
		printf("\n");
	}
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	ob_jw_key(&w, "pattern");
	ob_jw_string(&w, "webui");
	ob_jw_key(&w, "model");
	ob_jw_string(&w, o->model);
	ob_jw_key(&w, "chats");
	ob_jw_int(&w, o->chats);
	ob_jw_key(&w, "turns");
	ob_jw_int(&w, o->turns);
	ob_jw_key(&w, "streams");
	ob_jw_int(&w, o->streams);
	ob_jw_key(&w, "titles");
	ob_jw_bool(&w, o->titles);
	ob_jw_key(&w, "no_cache");
	ob_jw_bool(&w, o->no_cache);
	ob_jw_key(&w, "prefix_tokens");
	ob_jw_int(&w, first->prompt_eval);
	ob_jw_key(&w, "num_ctx");
	ob_jw_int(&w, run->num_ctx);
	ob_jw_key(&w, "errors");
	ob_jw_int(&w, run->errors);
	ob_jw_key(&w, "wall_s");
	ob_jw_float64(&w, round(wall * 1000) / 1000);
	ob_jw_key(&w, "turns_ttft_ms");
	ob_jw_arr(&w);
	for (int t = 0; t < o->turns; t++) {
		struct dist d = webui_dist(run, run->turn, o->turns, 1, o->chats, t);
		ob_jw_obj(&w);
		ob_jw_key(&w, "turn");
		ob_jw_int(&w, t + 1);
		jw_num(&w, "first_chat", run->turn[t].ok ? run->turn[t].ttft : NAN, 1e3);
		jw_num(&w, "later_p50", d.p50, 1e3);
		jw_num(&w, "later_p95", d.p95, 1e3);
		ob_jw_obj_end(&w);
	}
	ob_jw_arr_end(&w);
	jw_num(&w, "first_ttft_ms", base, 1e3);
	jw_num(&w, "later_p50_ms", later.p50, 1e3);
	jw_num(&w, "later_p95_ms", later.p95, 1e3);
	jw_num(&w, "ratio_p50", base > 0 ? later.p50 / base : NAN, 1);
	jw_num(&w, "ratio_p95", base > 0 ? later.p95 / base : NAN, 1);
	jw_num(&w, "title_p50_ms", titles.p50, 1e3);
	ob_jw_key(&w, "peak_rss_bytes");
	if (o->pid)
		ob_jw_uint(&w, hwm);
	else
		ob_jw_null(&w);
	jw_num(&w, "cache_tokens_reused", have_cache ? c1->tokens_reused - c0->tokens_reused : NAN, 1);
	jw_num(&w, "cache_blocks_evicted", have_cache ? c1->evicted - c0->evicted : NAN, 1);
	jw_num(&w, "cache_budget_bytes", have_cache ? c1->budget : NAN, 1);
	ob_jw_obj_end(&w);
	const char *s = ob_jw_str(&w);
	if (s)
		printf("%s\n", s);
	ob_jw_free(&w);
	fflush(stdout);
}

static int bench_webui(const struct serve_opts *o)
{
	struct webui_run run = {.o = o};
	pthread_mutex_init(&run.mu, NULL);
	int status = 1;
	char *prefix = webui_prefix(o->prefix_tokens);
	run.turn = calloc((size_t)o->chats * (size_t)o->turns, sizeof *run.turn);
	run.title = calloc((size_t)o->chats * (size_t)(o->turns > 1 ? o->turns - 1 : 1), sizeof *run.title);
	if (!prefix || !run.turn || !run.title) {
		fprintf(stderr, "Error: out of memory\n");
		goto out;
	}
	run.prefix = prefix;
	/* a context for the prefix and every turn (the prefix's size is a guess until the server counts it) */
	int need = o->prefix_tokens + o->prefix_tokens / 4 + o->turns * (o->num_predict + 64) + 256;
	run.num_ctx = o->num_ctx > 0 ? o->num_ctx : 2048;
	while (!o->num_ctx && run.num_ctx < need)
		run.num_ctx *= 2;
	struct client c;
	if (client_connect(&c) != 0) {
		fprintf(stderr, "Error: %s\n", c.err);
		goto out;
	}
	if (o->warmup) { /* loads the model with this num_ctx; shares nothing with the chats */
		struct webui_msg hi = {"user", "Say hello."};
		struct webui_result r;
		webui_request(&run, &c, &hi, 1, 4, &r, NULL);
		if (!r.ok) {
			fprintf(stderr, "Error: the warm-up request failed: %s\n", run.first_error);
			client_cleanup(&c);
			goto out;
		}
		run.errors = 0;
		run.first_error[0] = 0;
	}
	struct webui_cache c0, c1;
	webui_metrics(&c0);
	const int64_t t0 = now_ns();
	if (!o->json_only)
		fprintf(stderr, "chat 1 of %d alone (its first turn evaluates the whole prefix)...\n", o->chats);
	webui_chat(&run, &c, 0);
	client_cleanup(&c);
	if (!o->json_only && o->chats > 1)
		fprintf(stderr, "chats 2 to %d, %d at once...\n", o->chats, o->streams);
	atomic_store(&run.next_chat, 1);
	pthread_t th[SERVE_MAX_STREAMS];
	int started = 0;
	for (; started < o->streams && started < o->chats - 1; started++)
		if (pthread_create(&th[started], NULL, webui_worker, &run) != 0)
			break;
	if (!started && o->chats > 1)
		webui_worker(&run); /* no thread: run them here */
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	const double wall = (double)(now_ns() - t0) / 1e9;
	webui_metrics(&c1);
	uint64_t hwm = o->pid ? proc_kb(o->pid, "VmHWM") : 0;
	webui_report(&run, wall, hwm, &c0, &c1);
	status = run.errors ? 1 : 0;
out:
	free(prefix);
	free(run.turn);
	free(run.title);
	pthread_mutex_destroy(&run.mu);
	return status;
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
	struct serve_opts o = {.streams = 0, .num_predict = 0, .warmup = true, .prompts = builtin_prompts,
			       .n_prompts = sizeof builtin_prompts / sizeof builtin_prompts[0], .prefix_tokens = 5000,
			       .chats = 10, .turns = 3, .titles = true};
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
		} else if (!strcmp(a, "--pattern")) {
			if (!val || (strcmp(val, "webui") && strcmp(val, "plain"))) {
				fprintf(stderr, "orun bench --serve: --pattern is webui or plain, got '%s'\n", val ? val : "");
				return 2;
			}
			o.webui = !strcmp(argv[++i], "webui");
		} else if (!strcmp(a, "--prefix-tokens")) {
			if (!parse_long(val, 1, WEBUI_MAX_PREFIX, &v))
				return bad_value(a, val);
			o.prefix_tokens = (int)v;
			i++;
		} else if (!strcmp(a, "--chats")) {
			if (!parse_long(val, 1, WEBUI_MAX_CHATS, &v))
				return bad_value(a, val);
			o.chats = (int)v;
			i++;
		} else if (!strcmp(a, "--turns")) {
			if (!parse_long(val, 1, WEBUI_MAX_TURNS, &v))
				return bad_value(a, val);
			o.turns = (int)v;
			i++;
		} else if (!strcmp(a, "--no-titles")) {
			o.titles = false;
		} else if (!strcmp(a, "--no-cache")) {
			o.no_cache = true;
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
	/* the defaults of each pattern: webui is issue 16's Open WebUI case (2 parallel slots, short answers) */
	if (!o.streams)
		o.streams = o.webui ? 2 : 1;
	if (!o.num_predict)
		o.num_predict = o.webui ? 64 : 128;
	if (o.pid && !proc_kb(o.pid, "VmRSS")) {
		fprintf(stderr, "orun bench --serve: no process %ld on this machine (--pid)\n", o.pid);
		return 2;
	}
	if (o.webui) {
		if (o.requests || o.duration || prompts_file) {
			fprintf(stderr, "orun bench --serve: --pattern webui sets its own requests (--chats, --turns); "
					"--requests, --duration and --prompts do not apply\n");
			return 2;
		}
		return bench_webui(&o);
	}
	if (o.requests && o.duration) {
		fprintf(stderr, "orun bench --serve: give --requests or --duration, not both\n");
		return 2;
	}
	if (!o.requests && !o.duration)
		o.requests = 8L * o.streams;
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
