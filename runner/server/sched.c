/* runner/server/sched.c — loaded models, keep_alive expiry, reloads, eviction, slot queues and engine threads.
 *
 * One mutex guards the runner table and every wait list; a janitor thread does all unloading (so no engine
 * thread ever joins itself) and wakes at the next expiry. Loading happens on the thread of the request that
 * asked for it while others wait. Jobs hand engine events to their connection through a small queue of
 * recycled events, waking the connection's thread once per event through an eventfd it polls together with
 * its socket (a hang-up is seen at once); or, while that thread sleeps, straight to the job's sink on the
 * engine thread (a streaming connection writes the token itself). The engine thread never blocks on a client.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "gguf/gguf.h"
#include "modelfile/create.h"
#include "runner/backend.h"
#include "runner/server/log.h"
#include "runner/server/metrics.h"
#include "runner/server/sched.h"

#define JANITOR_TICK_MS 250
#define WAIT_TICK_MS 20
#define FD_WAIT_TICK_MS 250  /* rn_job_next_fd: the socket itself reports a hang-up; gone() only this often */
#define JOB_FREE_EVENTS 8    /* recycled events kept per job */
#define JOB_TEXT_MIN 64      /* first text allocation of an event */
#define ENGINE_IDLE_WAIT_MS 100

enum runner_state { R_LOADING, R_READY, R_FAILED };

struct rn_runner {
	struct rn_sched *s;
	char *path, *name, *digest, *details_json;
	struct rn_load_params params; /* resolved (rn_sched_acquire), then placed (runner_load) */
	bool embedding;
	enum runner_state state;
	char error[512];
	int refs;             /* acquired references */
	int waiters;          /* threads waiting on this runner while it loads */
	bool in_table;
	int64_t keep_alive_ns;
	int64_t expires_mono; /* when refs == 0: unload at this monotonic time (INT64_MAX: never) */
	int64_t expires_wall;
	bool expire_now;      /* unload as soon as idle */
	bool needs_reload;    /* a request wants other options: unload when idle, hand out no more */
	const char *unload_reason; /* why it was doomed, for the log (a literal) */
	/* loaded objects */
	struct rn_model *model;
	struct rn_tok *tok;
	struct rn_engine *engine;
	struct rn_backend *emb;
	uint64_t size, size_vram;
	pthread_t thread;
	bool thread_started;
	bool stop;
	struct rn_job *wait_head, *wait_tail; /* jobs waiting for a free slot */
	pthread_mutex_t emb_mu;
};

struct rn_sched {
	struct rn_sched_config c;
	pthread_mutex_t mu;
	pthread_cond_t cv;     /* runner table / state changes */
	pthread_cond_t jcv;    /* janitor */
	struct rn_runner *runners[RN_SCHED_MAX_RUNNERS];
	int n;
	int pending;           /* requests waiting for a runner or a slot */
	bool stop;
	pthread_t janitor;
	struct rn_runner **doomed; /* removed from the table, to be unloaded by the janitor */
	size_t n_doomed, cap_doomed;
};

struct rn_job {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct rn_sched *s;
	struct rn_runner *r;
	struct rn_request req;
	int32_t *prompt;
	int32_t *preserved; /* req.preserved, copied */
	char **stops;
	int n_stops;
	struct rn_job_event *head, *tail;
	struct rn_job_event *free_ev; /* recycled events (rn_job_event_done) */
	int n_free;
	int efd;             /* eventfd the consumer sleeps on in rn_job_next_fd (-1: the condition variable) */
	bool sleeping;       /* the consumer sleeps in poll(): the next event writes efd */
	bool armed;          /* the consumer sleeps with nothing queued: events go to the sink */
	rn_job_sink_fn sink;
	void *sink_ctx;
	bool fd_ignored;     /* the client's socket is not watched any more (readable without a hang-up) */
	bool waiting;        /* in the runner's wait list */
	bool active;         /* submitted to the engine; final event not yet delivered */
	bool finished;       /* final event queued */
	bool cancelled;
	int slot;
	enum rn_done_reason reason;
	struct rn_engine_stats stats;
	struct rn_error error;
	struct rn_job *next; /* wait list */
};

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void deadline_in(struct timespec *ts, int ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

static void set_err(struct rn_sched_error *e, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(struct rn_sched_error *e, int status, const char *fmt, ...)
{
	if (!e)
		return;
	e->status = status;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	va_end(ap);
}

#define MAX_QUEUE_MSG "server busy, please try again.  maximum pending requests exceeded"

static bool queue_full(struct rn_sched *s)
{
	return s->c.max_queue > 0 && (unsigned)s->pending >= s->c.max_queue;
}

/* ---------------------------------------------------------------------------------------------------- */
/* runner objects */

static void runner_free(struct rn_runner *r)
{
	if (!r)
		return;
	if (r->thread_started) {
		pthread_mutex_lock(&r->s->mu);
		r->stop = true;
		pthread_mutex_unlock(&r->s->mu);
		/* the engine thread wakes at least every ENGINE_IDLE_WAIT_MS */
		pthread_join(r->thread, NULL);
	}
	rn_engine_free(r->engine);
	rn_backend_free(r->emb);
	rn_tok_free(r->tok);
	rn_model_free(r->model);
	pthread_mutex_destroy(&r->emb_mu);
	free(r->path);
	free(r->name);
	free(r->digest);
	free(r->details_json);
	free(r);
}

static struct rn_runner *runner_new(struct rn_sched *s, const struct rn_sched_model *m, const struct rn_load_params *p)
{
	struct rn_runner *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->s = s;
	pthread_mutex_init(&r->emb_mu, NULL);
	r->path = strdup(m->model_path);
	r->name = strdup(m->name ? m->name : "");
	r->digest = strdup(m->digest ? m->digest : "");
	r->details_json = m->details_json ? strdup(m->details_json) : NULL;
	if (!r->path || !r->name || !r->digest || (m->details_json && !r->details_json)) {
		runner_free(r);
		return NULL;
	}
	r->params = *p;
	r->embedding = m->embedding;
	r->state = R_LOADING;
	r->expires_mono = INT64_MAX;
	return r;
}

/* Removes r from the table and hands it to the janitor, which logs why (reason: a literal). Caller holds s->mu;
 * r->refs must be 0. */
static void doom_locked(struct rn_sched *s, struct rn_runner *r, const char *reason)
{
	r->unload_reason = reason;
	for (int i = 0; i < s->n; i++)
		if (s->runners[i] == r) {
			s->runners[i] = s->runners[--s->n];
			break;
		}
	r->in_table = false;
	if (OB_GROW(s->doomed, s->cap_doomed, s->n_doomed + 1, 0) != OB_GROW_OK)
		return; /* cannot defer: leak rather than free under the lock (extremely unlikely) */
	s->doomed[s->n_doomed++] = r;
	pthread_cond_broadcast(&s->jcv);
	pthread_cond_broadcast(&s->cv);
}

/* Engine thread: steps the engine; admits waiting jobs into free slots. */
static void admit_locked(struct rn_runner *r);

/* Set on the engine thread when a step handed something to a reader: a token line written to its socket by the
 * sink, or a connection thread woken through its eventfd. */
static _Thread_local bool handed_out;

static void *engine_main(void *arg)
{
	struct rn_runner *r = arg;
	struct rn_sched *s = r->s;
	for (;;) {
		pthread_mutex_lock(&s->mu);
		bool stop = r->stop;
		admit_locked(r);
		pthread_mutex_unlock(&s->mu);
		if (stop)
			break;
		int active = rn_engine_step(r->engine);
		if (handed_out) {
			/* A loopback socket write or an eventfd write wakes its reader as a "sync" wakeup: the kernel
			 * queues the reader on this CPU, expecting the writer to sleep. The engine thread computes on
			 * instead, so the reader would wait for a preemption (up to a scheduler tick) with its token
			 * in the socket. Yielding once per step lets it run now (and returns at once when nothing
			 * waits): measured with `orun bench --api`, p99 token delivery 1.6-3.0 ms -> 0.26-0.33 ms on a
			 * 2-core machine with both cores decoding, at no cost in tok/s. */
			handed_out = false;
			sched_yield();
		}
		if (active == 0)
			rn_engine_wait(r->engine, ENGINE_IDLE_WAIT_MS);
	}
	return NULL;
}

/* ---------------------------------------------------------------------------------------------------- */
/* log lines a person can follow: what is loaded, how, why an option was changed, why a model went away */

/* Ollama's format.HumanBytes2: binary units, one decimal. */
static const char *human_bytes2(uint64_t b, char *buf, size_t size)
{
	static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)b;
	int u = 0;
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, size, "%llu B", (unsigned long long)b);
	else
		snprintf(buf, size, "%.1f %s", v, units[u]);
	return buf;
}

/* Before a load: the context size asked (or defaulted) and what it becomes, when they differ. */
static void log_ctx_adjust(const struct rn_sched *s, const struct rn_load_params *asked, const struct rn_load_defaults *d,
			   int used)
{
	if (!s->c.log)
		return;
	const bool was_asked = asked->n_ctx > 0;
	const int want = was_asked ? asked->n_ctx : d->n_ctx > 0 ? d->n_ctx : RN_LOAD_DEFAULT_CTX;
	if (want == used)
		return;
	if (d->n_ctx_max > 0 && want > d->n_ctx_max)
		rn_log_attrs(s->c.log, RN_LOG_WARN,
			     was_asked ? "requested context size too large for model" : "default context size too large for model",
			     "num_ctx=%d n_ctx_train=%d used=%d reason=\"capped at the model's training context\"", want,
			     d->n_ctx_max, used);
	else
		rn_log_attrs(s->c.log, RN_LOG_WARN, "requested context size too small", "num_ctx=%d used=%d reason=\"at least %d\"",
			     want, used, RN_LOAD_MIN_CTX);
}

/* Why the weights are copied or mapped (use_no_mmap's rule, told). */
static const char *placement_reason(int use_mmap, bool gpu, bool copied)
{
	if (use_mmap >= 0)
		return use_mmap ? "use_mmap=true asked" : "use_mmap=false asked";
	if (gpu)
		return "a GPU load reads the file mapping";
	return copied ? "a CPU load copies the weights when the file fits in the available memory"
		      : "the file does not fit in the available memory with an eighth to spare: left mapped";
}

/* num_gpu asked for part of the model: the CUDA backend offloads every layer or none; without a GPU, none. */
static void log_gpu_adjust(const struct rn_sched *s, const struct rn_runner *r, const struct rn_load_params *p)
{
	if (!s->c.log || p->num_gpu <= 0)
		return;
	const int n_layer = r->model->hp.n_layer;
	if (!rn_backend_is_gpu(rn_backend_resolve(p->backend)))
		rn_log_attrs(s->c.log, RN_LOG_WARN, "num_gpu asked without a GPU backend",
			     "num_gpu=%d used=0 reason=\"no GPU: the model runs on the CPU\"", p->num_gpu);
	else if (p->num_gpu < n_layer)
		rn_log_attrs(s->c.log, RN_LOG_WARN, "partial offload asked", "num_gpu=%d layers=%d used=%d "
			     "reason=\"the CUDA backend offloads every layer or none\"", p->num_gpu, n_layer, n_layer);
}

static void log_loading(const struct rn_sched *s, const struct rn_runner *r, const struct rn_load_params *p)
{
	if (!s->c.log)
		return;
	const struct gguf_file *f = r->model->gguf;
	uint32_t ft = 0;
	if (gguf_find_u32(f, "general.file_type", &ft) != GGUF_OK)
		ft = 0;
	char path[1200], name[300], size[32], threads[16];
	snprintf(threads, sizeof threads, p->n_threads > 0 ? "%d" : "auto", p->n_threads);
	rn_log_attrs(s->c.log, RN_LOG_INFO, "loading model",
		     "model=%s name=%s format=\"GGUF v%u\" arch=%s file_type=%s size=\"%s\" n_ctx_train=%d "
		     "num_ctx=%d num_batch=%d parallel=%d kv_cache=%s backend=%s threads=%s embedding=%s",
		     rn_log_value(r->path, path, sizeof path), rn_log_value(r->name, name, sizeof name),
		     gguf_version(f), r->model->hp.arch_name, mf_file_type_name(ft),
		     human_bytes2(gguf_file_size(f), size, sizeof size),
		     r->model->hp.n_ctx_train, p->n_ctx, p->n_batch, p->n_seq, rn_kv_type_name(p->kv_type),
		     rn_backend_name(rn_backend_resolve(p->backend)), threads, r->embedding ? "true" : "false");
}

/* At load: the prefix cache's budget and block size (a backend without one says so). Runs before the engine
 * thread starts, so the backend's own counters can be read directly. */
static void log_cache(const struct rn_sched *s, const struct rn_backend *b)
{
	struct rn_cache_stats st;
	rn_backend_cache_stats(b, &st);
	if (!st.enabled) {
		rn_log_attrs(s->c.log, RN_LOG_INFO, "prefix cache", "device=%s enabled=false reason=\"%s\"",
			     rn_backend_instance_name(b), "this backend keeps each slot's KV apart: reuse stays within a slot");
		return;
	}
	char budget[32], block[32];
	rn_log_attrs(s->c.log, RN_LOG_INFO, "prefix cache", "device=%s budget=\"%s\" block_tokens=%d block_size=\"%s\"",
		     rn_backend_instance_name(b), human_bytes2(st.bytes_budget, budget, sizeof budget), RN_KV_BLOCK,
		     human_bytes2(st.block_bytes, block, sizeof block));
}

static void log_loaded(const struct rn_sched *s, const struct rn_runner *r, const struct rn_backend *b, int use_mmap,
		       int64_t ns)
{
	if (!s->c.log)
		return;
	const struct rn_load_params *bp = rn_backend_params(b);
	const bool gpu = rn_backend_is_gpu(bp->backend);
	const uint64_t file = gguf_file_size(r->model->gguf), copied = rn_backend_copied(b);
	const uint64_t other = rn_backend_memory(b) - copied;
	char name[300], wsize[32], osize[32], tsize[32], why[200];
	rn_log_attrs(s->c.log, RN_LOG_INFO, "model weights", "device=%s size=\"%s\" placement=\"%s\" reason=%s",
		     rn_backend_instance_name(b), human_bytes2(file, wsize, sizeof wsize),
		     copied ? "copied into memory" : "read in place from the file mapping",
		     rn_log_value(placement_reason(use_mmap, gpu, copied > 0), why, sizeof why));
	rn_log_attrs(s->c.log, RN_LOG_INFO, "kv cache and buffers", "device=%s size=\"%s\"", rn_backend_instance_name(b),
		     human_bytes2(other, osize, sizeof osize));
	if (!r->embedding)
		log_cache(s, b);
	rn_log_attrs(s->c.log, RN_LOG_INFO, "model loaded", "name=%s total=\"%s\" duration=%.2fs",
		     rn_log_value(r->name, name, sizeof name), human_bytes2(r->size, tsize, sizeof tsize), (double)ns / 1e9);
	rn_log(s->c.log, RN_LOG_INFO, "llama runner started in %.2f seconds", (double)ns / 1e9);
}

static void log_unload(const struct rn_sched *s, const struct rn_runner *r)
{
	if (!s->c.log)
		return;
	if (!r->model || r->state != R_READY)
		return;
	char name[300], size[32];
	rn_log_attrs(s->c.log, RN_LOG_INFO, "unloading model", "name=%s size=\"%s\" reason=\"%s\"",
		     rn_log_value(r->name, name, sizeof name), human_bytes2(r->size, size, sizeof size),
		     r->unload_reason ? r->unload_reason : "unknown");
}

/* use_mmap: 0 copies the weights into memory, 1 reads them in place from the file mapping, -1 (unset) chooses as
 * Ollama does (llm/server.go): a model that runs on the CPU is loaded into memory ("for CPU loads we want the
 * memory to be allocated, not FS cache"), a GPU load stays mapped. Unlike Ollama, a CPU load whose file would
 * not fit in the memory available now, with an eighth to spare, stays mapped rather than risk the OOM killer.
 * On the CPU the copy is also what lets the kernels repack Q4_0/Q4_1/Q5_0/Q5_1 (10-30 % faster decode). */
static bool use_no_mmap(int use_mmap, int backend, uint64_t file_size)
{
	if (use_mmap >= 0)
		return use_mmap == 0;
	if (rn_backend_resolve(backend) != rn_backend_find("cpu"))
		return false;
	const uint64_t avail = rn_mem_available();
	return avail > 0 && file_size + file_size / 8 < avail;
}

static int runner_load(struct rn_runner *r, struct rn_sched_error *err)
{
	struct rn_sched *s = r->s;
	struct rn_error e = {0};
	r->model = rn_model_open(r->path, &e);
	if (!r->model) {
		set_err(err, 500, "%s", e.msg);
		return -1;
	}
	struct rn_tok_error te = {0};
	if (rn_tok_load(r->model->gguf, NULL, &r->tok, &te) != RN_TOK_OK) {
		set_err(err, 500, "%s", te.msg);
		return -1;
	}
	/* placement (on a copy: other threads compare r->params meanwhile): num_gpu 0 keeps the model on the CPU;
	 * use_mmap as use_no_mmap says */
	struct rn_load_params p = r->params;
	p.backend = p.num_gpu == 0 ? rn_backend_find("cpu") : s->c.backend;
	p.no_mmap = use_no_mmap(p.use_mmap, p.backend, gguf_file_size(r->model->gguf));
	log_gpu_adjust(s, r, &p);
	log_loading(s, r, &p);
	const int64_t t0 = mono_ns();
	struct rn_backend *b;
	if (r->embedding) {
		r->emb = b = rn_backend_load(r->model, &p, &e);
	} else {
		r->engine = rn_engine_new(r->model, r->tok, &p, &e);
		b = r->engine ? rn_engine_backend(r->engine) : NULL;
	}
	if (!b) {
		set_err(err, 500, "%s", e.msg);
		return -1;
	}
	r->size = gguf_file_size(r->model->gguf) + rn_backend_memory(b) - rn_backend_copied(b);
	if (rn_backend_is_gpu(rn_backend_params(b)->backend))
		r->size_vram = r->size;
	log_loaded(s, r, b, p.use_mmap, mono_ns() - t0);
	if (r->embedding)
		return 0;
	if (pthread_create(&r->thread, NULL, engine_main, r) != 0) {
		set_err(err, 500, "cannot start the engine thread");
		return -1;
	}
	r->thread_started = true;
	(void)pthread_setname_np(r->thread, "orun-engine"); /* else it inherits the loader's name */
	return 0;
}

/* ---------------------------------------------------------------------------------------------------- */
/* janitor: unloads doomed runners and expired idle ones */

static void *janitor_main(void *arg)
{
	struct rn_sched *s = arg;
	pthread_mutex_lock(&s->mu);
	while (!s->stop || s->n_doomed) {
		int64_t now = mono_ns();
		for (int i = 0; i < s->n; i++) {
			struct rn_runner *r = s->runners[i];
			if (r->state == R_READY && r->refs == 0 &&
			    (r->expire_now || r->needs_reload || r->expires_mono <= now)) {
				doom_locked(s, r, r->needs_reload ? "reloading with other load options"
						  : r->expire_now  ? "keep_alive 0 (a request or orun stop asked)"
								   : "keep_alive expired");
				i--;
			}
		}
		if (s->n_doomed) {
			struct rn_runner **list = s->doomed;
			size_t n = s->n_doomed;
			s->doomed = NULL;
			s->n_doomed = s->cap_doomed = 0;
			pthread_mutex_unlock(&s->mu);
			for (size_t i = 0; i < n; i++) {
				if (s->c.metrics)
					rn_metrics_model_unloaded(s->c.metrics);
				log_unload(s, list[i]);
				runner_free(list[i]);
			}
			free(list);
			pthread_mutex_lock(&s->mu);
			pthread_cond_broadcast(&s->cv);
			continue;
		}
		if (s->stop)
			break;
		struct timespec ts;
		deadline_in(&ts, JANITOR_TICK_MS);
		pthread_cond_timedwait(&s->jcv, &s->mu, &ts);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

struct rn_sched *rn_sched_new(const struct rn_sched_config *c)
{
	struct rn_sched *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->c = *c;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	pthread_cond_init(&s->jcv, NULL);
	if (pthread_create(&s->janitor, NULL, janitor_main, s) != 0) {
		free(s);
		return NULL;
	}
	return s;
}

void rn_sched_free(struct rn_sched *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	for (int i = 0; i < s->n; i++) {
		struct rn_runner *r = s->runners[i];
		if (r->state != R_LOADING) {
			doom_locked(s, r, "server stopping");
			i--;
		}
	}
	pthread_cond_broadcast(&s->jcv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->janitor, NULL);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	pthread_cond_destroy(&s->jcv);
	free(s->doomed);
	free(s);
}

/* ---------------------------------------------------------------------------------------------------- */
/* acquire / release */

static unsigned max_loaded(const struct rn_sched *s)
{
	unsigned m = s->c.max_loaded ? s->c.max_loaded : 3;
	return m > RN_SCHED_MAX_RUNNERS ? RN_SCHED_MAX_RUNNERS : m;
}

static void set_session(struct rn_sched *s, struct rn_runner *r, int64_t keep_alive_ns)
{
	r->keep_alive_ns = keep_alive_ns == RN_KEEP_ALIVE_UNSET ? s->c.keep_alive_ns : keep_alive_ns;
	if (r->keep_alive_ns < 0)
		r->keep_alive_ns = INT64_MAX;
}

/* The model's own context length, which num_ctx is capped at: from a loaded runner of the same file, else read
 * from the file's metadata (a few milliseconds, and only before the model's first load). */
static int model_context_length(struct rn_sched *s, const char *path)
{
	int n = 0;
	pthread_mutex_lock(&s->mu);
	for (int i = 0; i < s->n && !n; i++)
		if (s->runners[i]->state == R_READY && strcmp(s->runners[i]->path, path) == 0)
			n = s->runners[i]->model->hp.n_ctx_train;
	pthread_mutex_unlock(&s->mu);
	return n ? n : rn_model_context_length(path);
}

struct rn_runner *rn_sched_acquire(struct rn_sched *s, const struct rn_sched_model *m,
				   const struct rn_load_params *asked, int64_t keep_alive_ns, bool (*gone)(void *),
				   void *gone_ctx, struct rn_sched_error *err)
{
	struct rn_load_params p = *asked;
	const struct rn_load_defaults d = {
		.n_ctx = s->c.default_num_ctx,
		.n_ctx_max = model_context_length(s, m->model_path),
		.n_seq = (int)s->c.num_parallel,
		.kv_type = s->c.kv_type,
		.embedding = m->embedding,
	};
	rn_load_params_resolve(&p, &d);
	pthread_mutex_lock(&s->mu);
	if (queue_full(s)) {
		pthread_mutex_unlock(&s->mu);
		set_err(err, 503, MAX_QUEUE_MSG);
		return NULL;
	}
	s->pending++;
	if (s->c.metrics)
		rn_metrics_queue(s->c.metrics, +1);
	struct rn_runner *result = NULL;
	for (;;) {
		if (gone && gone(gone_ctx)) {
			set_err(err, 499, "request canceled");
			break;
		}
		struct rn_runner *same = NULL;
		int n_path = 0;
		for (int i = 0; i < s->n; i++) {
			struct rn_runner *r = s->runners[i];
			if (strcmp(r->path, m->model_path) != 0)
				continue;
			n_path++;
			if (r->embedding == m->embedding && rn_load_params_equal(&r->params, &p) && !r->needs_reload &&
			    !r->expire_now)
				same = r;
		}
		if (same) {
			if (same->state == R_READY) {
				same->refs++;
				set_session(s, same, keep_alive_ns);
				result = same;
				break;
			}
			if (same->state == R_LOADING) {
				struct timespec ts;
				deadline_in(&ts, WAIT_TICK_MS * 5);
				same->waiters++;
				pthread_cond_timedwait(&s->cv, &s->mu, &ts);
				same->waiters--;
				if (same->state == R_FAILED) {
					set_err(err, 500, "%s", same->error);
					if (!same->in_table && same->waiters == 0 && same->refs == 0)
						runner_free(same); /* last one out (no threads, nothing loaded) */
					break;
				}
				continue;
			}
		}
		if (n_path) {
			/* loaded with other options (or being unloaded): reload once idle */
			for (int i = 0; i < s->n; i++)
				if (strcmp(s->runners[i]->path, m->model_path) == 0 && s->runners[i] != same) {
					s->runners[i]->needs_reload = true;
					pthread_cond_broadcast(&s->jcv);
				}
			struct timespec ts;
			deadline_in(&ts, WAIT_TICK_MS * 5);
			pthread_cond_timedwait(&s->cv, &s->mu, &ts);
			continue;
		}
		if ((unsigned)s->n >= max_loaded(s)) {
			/* evict the idle runner with the shortest keep_alive, or wait for one to become idle */
			struct rn_runner *victim = NULL;
			for (int i = 0; i < s->n; i++) {
				struct rn_runner *r = s->runners[i];
				if (r->state == R_READY && r->refs == 0 &&
				    (!victim || r->keep_alive_ns < victim->keep_alive_ns))
					victim = r;
			}
			if (victim)
				doom_locked(s, victim, "evicted to make room (OLLAMA_MAX_LOADED_MODELS)");
			struct timespec ts;
			deadline_in(&ts, WAIT_TICK_MS * 5);
			pthread_cond_timedwait(&s->cv, &s->mu, &ts);
			continue;
		}
		if (s->n_doomed) {
			/* let the janitor finish unloading before loading more */
			struct timespec ts;
			deadline_in(&ts, WAIT_TICK_MS * 5);
			pthread_cond_timedwait(&s->cv, &s->mu, &ts);
			continue;
		}
		/* load it here */
		log_ctx_adjust(s, asked, &d, p.n_ctx);
		struct rn_runner *r = runner_new(s, m, &p);
		if (!r) {
			set_err(err, 500, "out of memory");
			break;
		}
		r->refs = 1;
		set_session(s, r, keep_alive_ns);
		r->in_table = true;
		s->runners[s->n++] = r;
		pthread_mutex_unlock(&s->mu);
		struct rn_sched_error le = {0};
		int rc = runner_load(r, &le);
		pthread_mutex_lock(&s->mu);
		if (rc == 0) {
			r->state = R_READY;
			if (s->c.metrics)
				rn_metrics_model_loaded(s->c.metrics);
			pthread_cond_broadcast(&s->cv);
			result = r;
			break;
		}
		r->state = R_FAILED;
		snprintf(r->error, sizeof r->error, "%s", le.msg);
		if (err)
			*err = le;
		r->refs = 0;
		for (int i = 0; i < s->n; i++)
			if (s->runners[i] == r) {
				s->runners[i] = s->runners[--s->n];
				break;
			}
		r->in_table = false;
		pthread_cond_broadcast(&s->cv);
		if (r->waiters == 0) {
			pthread_mutex_unlock(&s->mu);
			runner_free(r);
			pthread_mutex_lock(&s->mu);
		}
		break;
	}
	s->pending--;
	if (s->c.metrics)
		rn_metrics_queue(s->c.metrics, -1);
	pthread_mutex_unlock(&s->mu);
	return result;
}

void rn_sched_release(struct rn_sched *s, struct rn_runner *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&s->mu);
	if (r->refs > 0)
		r->refs--;
	if (r->refs == 0) {
		if (r->keep_alive_ns == 0)
			r->expire_now = true;
		if (r->keep_alive_ns == INT64_MAX) {
			r->expires_mono = INT64_MAX;
			r->expires_wall = INT64_MAX;
		} else {
			r->expires_mono = mono_ns() + r->keep_alive_ns;
			r->expires_wall = wall_ns() + r->keep_alive_ns;
		}
		pthread_cond_broadcast(&s->jcv);
	}
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

void rn_sched_expire(struct rn_sched *s, const char *model_path)
{
	pthread_mutex_lock(&s->mu);
	for (int i = 0; i < s->n; i++)
		if (strcmp(s->runners[i]->path, model_path) == 0)
			s->runners[i]->expire_now = true;
	pthread_cond_broadcast(&s->jcv);
	pthread_mutex_unlock(&s->mu);
}

const struct rn_model *rn_runner_model(const struct rn_runner *r)
{
	return r->model;
}
const struct rn_tok *rn_runner_tok(const struct rn_runner *r)
{
	return r->tok;
}
int rn_runner_n_ctx(const struct rn_runner *r)
{
	return r->params.n_ctx;
}
int rn_runner_n_batch(const struct rn_runner *r)
{
	return r->params.n_batch;
}

/* ---------------------------------------------------------------------------------------------------- */
/* jobs */

/* Caller holds j->mu. An event with room for n bytes of text (+ NUL), from the free list when it has one;
 * NULL when out of memory. */
static struct rn_job_event *event_get_locked(struct rn_job *j, size_t n)
{
	struct rn_job_event *e = j->free_ev;
	if (e) {
		j->free_ev = e->next;
		j->n_free--;
	} else if (!(e = calloc(1, sizeof *e))) {
		return NULL;
	}
	e->next = NULL;
	e->n_logprobs = 0;
	if (ob_grow(&e->text, &e->cap, n + 1, 1, JOB_TEXT_MIN, 0) != OB_GROW_OK) {
		rn_job_event_free(e);
		return NULL;
	}
	return e;
}

/* Caller holds j->mu. Appends e; returns true when the consumer must be woken through efd (after unlocking). */
static bool event_push_locked(struct rn_job *j, struct rn_job_event *e)
{
	if (j->tail)
		j->tail->next = e;
	else
		j->head = e;
	j->tail = e;
	bool wake = j->sleeping;
	j->sleeping = false; /* one write per sleep */
	return wake;
}

static void job_wake(struct rn_job *j)
{
	uint64_t one = 1;
	ssize_t w = write(j->efd, &one, sizeof one);
	(void)w; /* EAGAIN: the counter is already nonzero, the consumer wakes anyway */
}

/* After each request: how much of its prompt came from the prefix cache, and the cache's size. On the engine
 * thread, the only user of the backend's pool, so its counters are read directly (no lock to take). */
static void log_request_cache(const struct rn_job *j, const struct rn_event *ev)
{
	const struct rn_sched *s = j->s;
	if (!s->c.log)
		return;
	const struct rn_engine_stats *st = ev->stats;
	struct rn_cache_stats cs;
	rn_backend_cache_stats(rn_engine_backend(j->r->engine), &cs);
	char held[32] = "none", budget[32] = "none", qheld[40], qbudget[40];
	if (cs.enabled) {
		human_bytes2(cs.bytes_held, held, sizeof held);
		human_bytes2(cs.bytes_budget, budget, sizeof budget);
	}
	rn_log_attrs(s->c.log, RN_LOG_INFO, "prompt cache",
		     "slot=%d prompt=%d cached=%d evaluated=%d generated=%d cache_held=%s cache_budget=%s", ev->slot,
		     st->n_prompt, st->n_cached, st->n_prompt - st->n_cached, st->n_eval,
		     rn_log_value(held, qheld, sizeof qheld), rn_log_value(budget, qbudget, sizeof qbudget));
}

static int job_on_event(void *user, const struct rn_event *ev)
{
	struct rn_job *j = user;
	int64_t t = mono_ns();
	bool consumed = false; /* the sink took the text: an empty event only wakes the consumer */
	pthread_mutex_lock(&j->mu);
	if (j->slot != ev->slot) /* before the event is seen (admit_locked may not have stored it yet); written once,
				  * so rn_job_slot's unlocked read never meets a write */
		j->slot = ev->slot;
	int cancel = j->cancelled;
	if (j->armed && !ev->done && !cancel && !j->head) {
		/* the consumer sleeps: hand the token to its sink right here */
		struct rn_job_event se = {.kind = RN_JOB_TEXT, .text = (char *)ev->text, .len = ev->len,
					  .token = ev->token, .t_ns = t,
					  .logprobs = (struct rn_logprob *)ev->logprobs, .n_logprobs = ev->n_logprobs};
		enum rn_sink_result sr = j->sink(j->sink_ctx, &se);
		handed_out = true;
		if (sr == RN_SINK_DONE || sr == RN_SINK_CANCEL) {
			pthread_mutex_unlock(&j->mu);
			return sr == RN_SINK_CANCEL;
		}
		if (sr == RN_SINK_WAKE) {
			j->armed = false;
			consumed = true;
		}
	}
	size_t len = consumed ? 0 : ev->len;
	size_t n_lp = consumed ? 0 : ev->n_logprobs;
	struct rn_job_event *e = event_get_locked(j, len);
	if (e && n_lp && ob_grow(&e->logprobs, &e->cap_logprobs, n_lp, sizeof *e->logprobs, 4, 0) != OB_GROW_OK) {
		rn_job_event_free(e);
		e = NULL;
	}
	bool wake = false;
	if (e) {
		if (n_lp)
			memcpy(e->logprobs, ev->logprobs, n_lp * sizeof *e->logprobs);
		e->n_logprobs = n_lp;
		if (len)
			memcpy(e->text, ev->text, len);
		e->text[len] = 0;
		e->kind = ev->done ? RN_JOB_DONE : RN_JOB_TEXT;
		e->len = len;
		e->token = ev->token;
		e->t_ns = t;
		wake = event_push_locked(j, e);
	} else {
		cancel = 1; /* out of memory: stop this request */
	}
	if (ev->done) {
		j->finished = true;
		j->active = false;
		j->reason = ev->reason;
		if (ev->stats)
			j->stats = *ev->stats;
		if (ev->stats && ev->stats->truncated && j->s->c.log) /* Ollama's line, at the end of the request */
			rn_log_attrs(j->s->c.log, RN_LOG_WARN, "truncating input prompt", "limit=%d prompt=%d keep=%d new=%d",
				     ev->stats->n_prompt, ev->stats->n_prompt_in, ev->stats->n_keep, ev->stats->n_prompt);
		if (ev->stats && ev->reason != RN_DONE_ERROR)
			log_request_cache(j, ev);
		if (ev->error)
			j->error = *ev->error;
		if (!e) {
			/* the final event could not be queued: the consumer sees `finished` */
			j->reason = RN_DONE_ERROR;
			rn_error_set(&j->error, RN_ERR_NOMEM, "out of memory");
			wake = j->sleeping;
			j->sleeping = false;
		}
	}
	/* the condition variable serves rn_job_free (waits for the final event) and consumers without efd */
	bool signal_cv = ev->done || j->efd < 0;
	pthread_mutex_unlock(&j->mu);
	if (signal_cv)
		pthread_cond_broadcast(&j->cv);
	if (wake) {
		job_wake(j);
		handed_out = true;
	}
	return cancel;
}

/* Caller holds s->mu. Submits waiting jobs while slots are free, in order; a job that asked for one slot
 * (llama-server's id_slot) while it is busy stays queued without holding up the jobs behind it, as upstream
 * defers only that task. */
static void admit_locked(struct rn_runner *r)
{
	struct rn_sched *s = r->s;
	struct rn_job *prev = NULL, *next;
	for (struct rn_job *j = r->wait_head; j; j = next) {
		next = j->next;
		struct rn_error e = {0};
		pthread_mutex_lock(&j->mu);
		if (j->cancelled) {
			pthread_mutex_unlock(&j->mu);
		} else {
			j->active = true;
			pthread_mutex_unlock(&j->mu);
			int slot = rn_engine_submit(r->engine, &j->req, &e);
			if (slot < 0 && e.code == RN_ERR_BUSY) {
				pthread_mutex_lock(&j->mu);
				j->active = false;
				pthread_mutex_unlock(&j->mu);
				if (j->req.slot < 0)
					break; /* every slot is busy */
				prev = j;
				continue;
			}
			pthread_mutex_lock(&j->mu);
			if (slot < 0) {
				/* a request the engine refuses: deliver it as a failed job */
				j->active = false;
				j->finished = true;
				j->reason = RN_DONE_ERROR;
				j->error = e;
				struct rn_job_event *ev = event_get_locked(j, 0);
				bool wake = false;
				if (ev) {
					ev->kind = RN_JOB_DONE;
					ev->text[0] = 0;
					ev->len = 0;
					ev->token = -1;
					ev->t_ns = mono_ns();
					wake = event_push_locked(j, ev);
				} else {
					wake = j->sleeping;
					j->sleeping = false;
				}
				pthread_cond_broadcast(&j->cv);
				pthread_mutex_unlock(&j->mu);
				if (wake)
					job_wake(j);
			} else {
				if (j->slot != slot) /* job_on_event may have stored it already (see there) */
					j->slot = slot;
				pthread_mutex_unlock(&j->mu);
			}
		}
		if (prev)
			prev->next = next;
		else
			r->wait_head = next;
		if (r->wait_tail == j)
			r->wait_tail = prev;
		j->next = NULL;
		j->waiting = false;
		s->pending--;
		if (s->c.metrics)
			rn_metrics_queue(s->c.metrics, -1);
	}
}

struct rn_job *rn_job_submit(struct rn_sched *s, struct rn_runner *runner, const struct rn_request *r,
			     struct rn_sched_error *err)
{
	if (!runner->engine) {
		set_err(err, 500, "this model is loaded for embeddings only");
		return NULL;
	}
	struct rn_job *j = calloc(1, sizeof *j);
	if (!j) {
		set_err(err, 500, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv, NULL);
	j->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); /* -1 (no fds left): the condition variable instead */
	j->s = s;
	j->r = runner;
	j->slot = -1;
	j->req = *r;
	j->prompt = malloc((r->n_prompt ? r->n_prompt : 1) * sizeof *j->prompt);
	j->stops = calloc(r->n_stop > 0 ? (size_t)r->n_stop : 1, sizeof *j->stops);
	if (!j->prompt || !j->stops)
		goto nomem;
	memcpy(j->prompt, r->prompt, r->n_prompt * sizeof *j->prompt);
	for (int i = 0; i < r->n_stop; i++) {
		if (!(j->stops[i] = strdup(r->stop[i])))
			goto nomem;
		j->n_stops++;
	}
	if (r->n_preserved) {
		if (!(j->preserved = malloc(r->n_preserved * sizeof *j->preserved)))
			goto nomem;
		memcpy(j->preserved, r->preserved, r->n_preserved * sizeof *j->preserved);
	}
	j->req.preserved = j->preserved;
	j->req.prompt = j->prompt;
	j->req.stop = (const char *const *)j->stops;
	j->req.n_stop = j->n_stops;
	j->req.on_event = job_on_event;
	j->req.user = j;

	pthread_mutex_lock(&s->mu);
	if (queue_full(s)) {
		pthread_mutex_unlock(&s->mu);
		set_err(err, 503, MAX_QUEUE_MSG);
		rn_job_free(j);
		return NULL;
	}
	j->waiting = true;
	if (runner->wait_tail)
		runner->wait_tail->next = j;
	else
		runner->wait_head = j;
	runner->wait_tail = j;
	s->pending++;
	if (s->c.metrics)
		rn_metrics_queue(s->c.metrics, +1);
	admit_locked(runner);
	pthread_mutex_unlock(&s->mu);
	return j;
nomem:
	set_err(err, 500, "out of memory");
	rn_job_free(j);
	return NULL;
}

static void job_cancel(struct rn_job *j)
{
	struct rn_sched *s = j->s;
	pthread_mutex_lock(&s->mu);
	pthread_mutex_lock(&j->mu);
	j->cancelled = true;
	if (j->waiting) {
		struct rn_runner *r = j->r;
		struct rn_job **pp = &r->wait_head, *prev = NULL;
		while (*pp && *pp != j) {
			prev = *pp;
			pp = &(*pp)->next;
		}
		if (*pp) {
			*pp = j->next;
			if (r->wait_tail == j)
				r->wait_tail = prev;
			s->pending--;
			if (s->c.metrics)
				rn_metrics_queue(s->c.metrics, -1);
		}
		j->waiting = false;
	}
	if (j->active && j->slot >= 0)
		rn_engine_cancel(j->r->engine, j->slot);
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
	pthread_mutex_unlock(&s->mu);
}

struct rn_job_event *rn_job_next_fd(struct rn_job *j, int fd, bool (*gone)(void *), void *gone_ctx)
{
	pthread_mutex_lock(&j->mu);
	for (;;) {
		if (j->head) {
			struct rn_job_event *e = j->head;
			j->head = e->next;
			if (!j->head)
				j->tail = NULL;
			e->next = NULL;
			pthread_mutex_unlock(&j->mu);
			return e;
		}
		if (j->cancelled || j->finished) {
			pthread_mutex_unlock(&j->mu);
			return NULL;
		}
		bool check = false, fd_event = false;
		if (j->efd >= 0) {
			/* sleep in poll() on the eventfd (one write per event) and the client's socket (hang-up) */
			bool watch = fd >= 0 && !j->fd_ignored;
			j->sleeping = true;
			j->armed = j->sink != NULL;
			pthread_mutex_unlock(&j->mu);
			struct pollfd p[2] = {{.fd = j->efd, .events = POLLIN}, {.fd = fd, .events = POLLRDHUP}};
			int rc = poll(p, watch ? 2 : 1, watch ? FD_WAIT_TICK_MS : WAIT_TICK_MS);
			if (rc > 0 && (p[0].revents & POLLIN)) {
				uint64_t v;
				ssize_t k = read(j->efd, &v, sizeof v);
				(void)k;
			}
			fd_event = watch && rc > 0 && p[1].revents != 0;
			check = rc == 0 || fd_event;
			pthread_mutex_lock(&j->mu);
			j->sleeping = false;
			j->armed = false;
		} else {
			struct timespec ts;
			deadline_in(&ts, WAIT_TICK_MS);
			j->armed = j->sink != NULL;
			check = pthread_cond_timedwait(&j->cv, &j->mu, &ts) == ETIMEDOUT;
			j->armed = false;
		}
		if (check && gone && !j->head) {
			pthread_mutex_unlock(&j->mu);
			if (gone(gone_ctx)) {
				job_cancel(j);
				return NULL;
			}
			pthread_mutex_lock(&j->mu);
			if (fd_event)
				j->fd_ignored = true; /* readable but not gone: stop watching (no busy loop) */
		}
	}
}

struct rn_job_event *rn_job_next(struct rn_job *j, bool (*gone)(void *), void *gone_ctx)
{
	return rn_job_next_fd(j, -1, gone, gone_ctx);
}

void rn_job_set_sink(struct rn_job *j, rn_job_sink_fn fn, void *ctx)
{
	pthread_mutex_lock(&j->mu);
	j->sink = fn;
	j->sink_ctx = ctx;
	j->armed = false;
	pthread_mutex_unlock(&j->mu);
}

void rn_job_event_done(struct rn_job *j, struct rn_job_event *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&j->mu);
	if (j->n_free < JOB_FREE_EVENTS) {
		e->next = j->free_ev;
		j->free_ev = e;
		j->n_free++;
		e = NULL;
	}
	pthread_mutex_unlock(&j->mu);
	rn_job_event_free(e);
}

void rn_job_event_free(struct rn_job_event *e)
{
	if (!e)
		return;
	free(e->text);
	free(e->logprobs);
	free(e);
}

int rn_job_slot(const struct rn_job *j)
{
	return j->slot; /* stored under j->mu by job_on_event before each event is queued or sunk */
}

void rn_job_result(const struct rn_job *j, enum rn_done_reason *reason, struct rn_engine_stats *stats,
		   struct rn_error *error)
{
	if (reason)
		*reason = j->reason;
	if (stats)
		*stats = j->stats;
	if (error)
		*error = j->error;
}

void rn_job_free(struct rn_job *j)
{
	if (!j)
		return;
	if (j->s) {
		pthread_mutex_lock(&j->mu);
		bool live = j->waiting || j->active;
		pthread_mutex_unlock(&j->mu);
		if (live) {
			job_cancel(j);
			/* wait for the engine's final event so that it no longer references the job */
			pthread_mutex_lock(&j->mu);
			while (j->active)
				pthread_cond_wait(&j->cv, &j->mu);
			pthread_mutex_unlock(&j->mu);
		}
	}
	for (int list = 0; list < 2; list++) {
		struct rn_job_event *e = list ? j->free_ev : j->head;
		while (e) {
			struct rn_job_event *n = e->next;
			rn_job_event_free(e);
			e = n;
		}
	}
	if (j->efd >= 0)
		close(j->efd);
	free(j->prompt);
	free(j->preserved);
	for (int i = 0; i < j->n_stops; i++)
		free(j->stops[i]);
	free(j->stops);
	pthread_mutex_destroy(&j->mu);
	pthread_cond_destroy(&j->cv);
	free(j);
}

/* ---------------------------------------------------------------------------------------------------- */
/* embeddings */

enum { POOL_NONE = 0, POOL_MEAN = 1, POOL_CLS = 2, POOL_LAST = 3 };

int rn_runner_embed(struct rn_sched *s, struct rn_runner *r, const int32_t *tokens, size_t n, float **out,
		    int *n_embd_out, bool (*gone)(void *), void *gone_ctx, struct rn_sched_error *err)
{
	(void)s;
	if (!r->emb) {
		set_err(err, 500, "this model is not loaded for embeddings");
		return -1;
	}
	if (n == 0) {
		set_err(err, 400, "the input is empty");
		return -1;
	}
	if (n > (size_t)r->params.n_ctx) {
		set_err(err, 400, "the input length exceeds the context length");
		return -1;
	}
	char key[64];
	snprintf(key, sizeof key, "%s.pooling_type", r->model->hp.arch_name);
	uint32_t pooling = gguf_get_u32(r->model->gguf, key, POOL_MEAN);
	if (pooling != POOL_MEAN && pooling != POOL_CLS && pooling != POOL_LAST) {
		set_err(err, 400, "unsupported pooling type %u for embeddings", pooling);
		return -1;
	}
	int n_embd = r->model->hp.n_embd;
	const int n_batch = r->params.n_batch;
	float *acc = calloc((size_t)n_embd, sizeof *acc);
	float *hid = malloc((size_t)n_batch * (size_t)n_embd * sizeof *hid);
	int32_t *pos = malloc((size_t)n_batch * sizeof *pos);
	int32_t *seq = calloc((size_t)n_batch, sizeof *seq);
	uint8_t *want = calloc((size_t)n_batch, 1);
	int rc = -1;
	if (!acc || !hid || !pos || !seq || !want) {
		set_err(err, 500, "out of memory");
		goto out;
	}
	pthread_mutex_lock(&r->emb_mu);
	rn_backend_kv_clear(r->emb, 0);
	for (size_t at = 0; at < n; at += (size_t)n_batch) {
		if (gone && gone(gone_ctx)) {
			pthread_mutex_unlock(&r->emb_mu);
			set_err(err, 499, "request canceled");
			goto out;
		}
		int m = (int)(n - at < (size_t)n_batch ? n - at : (size_t)n_batch);
		int n_out = 0;
		for (int i = 0; i < m; i++) {
			pos[i] = (int32_t)(at + (size_t)i);
			bool w = pooling == POOL_MEAN || (pooling == POOL_CLS && at + (size_t)i == 0) ||
				 (pooling == POOL_LAST && at + (size_t)i == n - 1);
			want[i] = w;
			n_out += w;
		}
		struct rn_batch b = {.n_tokens = m, .token = tokens + at, .pos = pos, .seq = seq, .want = want};
		struct rn_outputs o = {.logits = NULL, .hidden = hid};
		struct rn_error e = {0};
		if (n_out == 0) {
			/* nothing to read from this chunk, but the keys/values must still be computed */
			want[m - 1] = 1;
			n_out = 1;
			if (rn_backend_forward(r->emb, &b, &o, &e) != RN_OK) {
				pthread_mutex_unlock(&r->emb_mu);
				set_err(err, 500, "%s", e.msg);
				goto out;
			}
			continue;
		}
		if (rn_backend_forward(r->emb, &b, &o, &e) != RN_OK) {
			pthread_mutex_unlock(&r->emb_mu);
			set_err(err, 500, "%s", e.msg);
			goto out;
		}
		for (int k = 0; k < n_out; k++)
			for (int d = 0; d < n_embd; d++)
				acc[d] += hid[(size_t)k * (size_t)n_embd + (size_t)d];
	}
	rn_backend_kv_clear(r->emb, 0);
	pthread_mutex_unlock(&r->emb_mu);
	if (pooling == POOL_MEAN)
		for (int d = 0; d < n_embd; d++)
			acc[d] /= (float)n;
	*out = acc;
	acc = NULL;
	*n_embd_out = n_embd;
	rc = 0;
out:
	free(acc);
	free(hid);
	free(pos);
	free(seq);
	free(want);
	return rc;
}

/* ---------------------------------------------------------------------------------------------------- */
/* /api/ps */

static int cmp_info(const void *a, const void *b)
{
	const struct rn_sched_info *x = a, *y = b;
	/* longest remaining first, compared in seconds as Ollama does */
	int64_t xs = x->expires_unix_ns / 1000000000LL, ys = y->expires_unix_ns / 1000000000LL;
	return (ys > xs) - (ys < xs);
}

int rn_sched_list(struct rn_sched *s, struct rn_sched_info **out, size_t *n)
{
	pthread_mutex_lock(&s->mu);
	struct rn_sched_info *v = calloc((size_t)s->n + 1, sizeof *v);
	size_t k = 0;
	int rc = 0;
	if (!v) {
		rc = -1;
		goto done;
	}
	for (int i = 0; i < s->n; i++) {
		struct rn_runner *r = s->runners[i];
		if (r->state == R_FAILED)
			continue;
		struct rn_sched_info *x = &v[k];
		x->name = strdup(r->name);
		x->digest = strdup(r->digest);
		x->details_json = r->details_json ? strdup(r->details_json) : NULL;
		if (!x->name || !x->digest || (r->details_json && !x->details_json)) {
			rn_sched_info_free(v, k + 1);
			v = NULL;
			rc = -1;
			goto done;
		}
		x->size = (int64_t)r->size;
		x->size_vram = (int64_t)r->size_vram;
		x->context_length = r->params.n_ctx;
		if (r->state == R_READY && r->engine)
			rn_engine_cache_stats(r->engine, &x->cache);
		int64_t ka = r->keep_alive_ns;
		if (r->refs > 0 || r->state == R_LOADING)
			x->expires_unix_ns = ka == INT64_MAX ? INT64_MAX : wall_ns() + ka;
		else
			x->expires_unix_ns = r->expires_wall;
		k++;
	}
	qsort(v, k, sizeof *v, cmp_info);
done:
	pthread_mutex_unlock(&s->mu);
	*out = v;
	*n = k;
	return rc;
}

void rn_sched_info_free(struct rn_sched_info *v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].digest);
		free(v[i].details_json);
	}
	free(v);
}

int rn_sched_queue_depth(struct rn_sched *s)
{
	pthread_mutex_lock(&s->mu);
	int n = s->pending;
	pthread_mutex_unlock(&s->mu);
	return n;
}
