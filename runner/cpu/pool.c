/* runner/cpu/pool.c — persistent thread pool: spin-then-sleep workers, generation-counted jobs, spin barrier.
 *
 * A job is published by bumping `gen`; workers that are spinning see it within ~100 ns, sleeping ones are
 * woken through a condition variable only when the sleeper count says someone sleeps (Dekker-style
 * seq_cst handshake, so no wake-up is lost and the fast path takes no lock). No work stealing and no queue:
 * the caller divides the work by thread index.
 */
#include "config.h"

#include "runner/cpu/pool.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CACHE_LINE 64

/* Spins between two looks at the clock, and between two sched_yield calls of a waiting thread (~30 us: when the
 * machine is oversubscribed, the thread we wait for may need our CPU; otherwise the yield returns at once). */
#define SPINS_PER_CLOCK_CHECK 256
#define SPINS_PER_YIELD 1024

struct worker_arg {
	struct rn_pool *pool;
	int ith;
};

struct rn_pool {
	int n_threads;
	int n_started; /* workers actually created (for cleanup of a half-built pool) */
	pthread_t *threads;
	struct worker_arg *args;
	pthread_mutex_t mutex;
	pthread_cond_t cond;

	/* The job: fn/ctx are written by the caller before the release of `gen` and read after its acquire. */
	rn_pool_fn fn;
	void *ctx;
	atomic_int spin_us;
	atomic_bool stop;

	_Alignas(CACHE_LINE) atomic_uint gen;
	_Alignas(CACHE_LINE) atomic_int done;       /* workers finished with the current job */
	_Alignas(CACHE_LINE) atomic_int n_sleeping; /* workers inside (or about to enter) pthread_cond_wait */
	_Alignas(CACHE_LINE) atomic_int bar_count;
	_Alignas(CACHE_LINE) atomic_uint bar_phase;
	char pad_end[CACHE_LINE];
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* One step of a busy wait: pause, and now and then let another thread have the CPU. */
static inline void spin_step(unsigned i)
{
	if (i % SPINS_PER_YIELD == 0)
		sched_yield();
	else
		cpu_relax();
}

static int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ------------------------------------------------------------------------------------------ core count */

static int read_int_file(const char *path, int *value)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	int ok = fscanf(f, "%d", value) == 1;
	fclose(f);
	return ok ? 0 : -1;
}

static int count_physical_cores(void)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof set, &set) != 0)
		return 1;
	int n_cpus = CPU_COUNT(&set);
	if (n_cpus < 1)
		return 1;

	/* Distinct (package, core) pairs; at most CPU_SETSIZE of them. */
	static long long seen[CPU_SETSIZE];
	int n_seen = 0;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &set))
			continue;
		char path[128];
		int pkg, core;
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", cpu);
		if (read_int_file(path, &pkg) != 0)
			return n_cpus;
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/core_id", cpu);
		if (read_int_file(path, &core) != 0)
			return n_cpus;
		long long key = ((long long)pkg << 32) | (unsigned)core;
		int dup = 0;
		for (int i = 0; i < n_seen && !dup; i++)
			dup = seen[i] == key;
		if (!dup)
			seen[n_seen++] = key;
	}
	return n_seen > 0 ? n_seen : n_cpus;
}

static int physical_cores_cached;
static pthread_once_t physical_cores_once = PTHREAD_ONCE_INIT;

static void physical_cores_init(void)
{
	physical_cores_cached = count_physical_cores();
}

int rn_cpu_physical_cores(void)
{
	pthread_once(&physical_cores_once, physical_cores_init);
	return physical_cores_cached;
}

/* ------------------------------------------------------------------------------------------ workers */

/* Waits until pool->gen differs from `seen`: spins for spin_us, then sleeps on the condition variable. */
static unsigned wait_for_job(struct rn_pool *pool, unsigned seen)
{
	unsigned g = atomic_load_explicit(&pool->gen, memory_order_acquire);
	if (g != seen)
		return g;
	int spin_us = atomic_load_explicit(&pool->spin_us, memory_order_relaxed);
	if (spin_us > 0) {
		int64_t deadline = now_us() + spin_us;
		for (unsigned i = 1;; i++) {
			spin_step(i);
			g = atomic_load_explicit(&pool->gen, memory_order_acquire);
			if (g != seen)
				return g;
			if (i % SPINS_PER_CLOCK_CHECK == 0 && now_us() >= deadline)
				break;
		}
	}
	/* Announce the sleep before the last look at gen (seq_cst on both sides: the caller either sees
	 * n_sleeping > 0 and broadcasts under the mutex, or we see its new gen here). */
	atomic_fetch_add_explicit(&pool->n_sleeping, 1, memory_order_seq_cst);
	pthread_mutex_lock(&pool->mutex);
	while ((g = atomic_load_explicit(&pool->gen, memory_order_seq_cst)) == seen)
		pthread_cond_wait(&pool->cond, &pool->mutex);
	pthread_mutex_unlock(&pool->mutex);
	atomic_fetch_sub_explicit(&pool->n_sleeping, 1, memory_order_relaxed);
	return g;
}

static void *worker_main(void *p)
{
	struct worker_arg *arg = p;
	struct rn_pool *pool = arg->pool;
	unsigned seen = 0;
	for (;;) {
		seen = wait_for_job(pool, seen);
		if (atomic_load_explicit(&pool->stop, memory_order_acquire))
			break;
		pool->fn(pool->ctx, arg->ith, pool->n_threads);
		atomic_fetch_add_explicit(&pool->done, 1, memory_order_release);
	}
	return NULL;
}

/* Publishes a new generation and wakes sleepers. */
static void publish(struct rn_pool *pool)
{
	atomic_fetch_add_explicit(&pool->gen, 1, memory_order_seq_cst);
	if (atomic_load_explicit(&pool->n_sleeping, memory_order_seq_cst) > 0) {
		pthread_mutex_lock(&pool->mutex);
		pthread_cond_broadcast(&pool->cond);
		pthread_mutex_unlock(&pool->mutex);
	}
}

/* ------------------------------------------------------------------------------------------ public */

static void pool_destroy(struct rn_pool *pool)
{
	if (pool->n_started > 0) {
		atomic_store_explicit(&pool->stop, 1, memory_order_release);
		publish(pool);
		for (int i = 0; i < pool->n_started; i++)
			pthread_join(pool->threads[i], NULL);
	}
	pthread_cond_destroy(&pool->cond);
	pthread_mutex_destroy(&pool->mutex);
	free(pool->threads);
	free(pool->args);
	free(pool);
}

int rn_pool_new(int n_threads, struct rn_pool **out)
{
	*out = NULL;
	if (n_threads <= 0)
		n_threads = rn_cpu_physical_cores();
	if (n_threads > RN_POOL_MAX_THREADS)
		return EINVAL;

	struct rn_pool *pool = aligned_alloc(CACHE_LINE, (sizeof *pool + CACHE_LINE - 1) / CACHE_LINE * CACHE_LINE);
	if (!pool)
		return ENOMEM;
	memset(pool, 0, sizeof *pool);
	pool->n_threads = n_threads;
	atomic_init(&pool->spin_us, RN_POOL_DEFAULT_SPIN_US);
	if (pthread_mutex_init(&pool->mutex, NULL) != 0) {
		free(pool);
		return ENOMEM;
	}
	if (pthread_cond_init(&pool->cond, NULL) != 0) {
		pthread_mutex_destroy(&pool->mutex);
		free(pool);
		return ENOMEM;
	}
	int n_workers = n_threads - 1;
	if (n_workers > 0) {
		pool->threads = calloc((size_t)n_workers, sizeof *pool->threads);
		pool->args = calloc((size_t)n_workers, sizeof *pool->args);
		if (!pool->threads || !pool->args) {
			pool_destroy(pool);
			return ENOMEM;
		}
	}

	/* Workers inherit a full signal mask so that signals keep going to the application's threads. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = 0;
	for (int i = 0; i < n_workers; i++) {
		pool->args[i].pool = pool;
		pool->args[i].ith = i + 1;
		rc = pthread_create(&pool->threads[i], NULL, worker_main, &pool->args[i]);
		if (rc != 0)
			break;
		pool->n_started++;
#ifdef __GLIBC__
		char name[16];
		snprintf(name, sizeof name, "orun-pool-%d", i + 1);
		pthread_setname_np(pool->threads[i], name);
#endif
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		pool_destroy(pool);
		return rc == EAGAIN ? EAGAIN : ENOMEM;
	}
	*out = pool;
	return 0;
}

void rn_pool_free(struct rn_pool *pool)
{
	if (pool)
		pool_destroy(pool);
}

int rn_pool_size(const struct rn_pool *pool)
{
	return pool ? pool->n_threads : 1;
}

void rn_pool_set_spin_us(struct rn_pool *pool, int spin_us)
{
	if (pool)
		atomic_store_explicit(&pool->spin_us, spin_us < 0 ? 0 : spin_us, memory_order_relaxed);
}

void rn_pool_run(struct rn_pool *pool, rn_pool_fn fn, void *ctx)
{
	if (!pool || pool->n_threads == 1) {
		fn(ctx, 0, 1);
		return;
	}
	int n_workers = pool->n_threads - 1;
	pool->fn = fn;
	pool->ctx = ctx;
	atomic_store_explicit(&pool->done, 0, memory_order_relaxed);
	publish(pool);
	fn(ctx, 0, pool->n_threads);
	for (unsigned i = 1; atomic_load_explicit(&pool->done, memory_order_acquire) != n_workers; i++)
		spin_step(i);
}

void rn_pool_barrier(struct rn_pool *pool)
{
	if (!pool || pool->n_threads == 1)
		return;
	unsigned phase = atomic_load_explicit(&pool->bar_phase, memory_order_acquire);
	if (atomic_fetch_add_explicit(&pool->bar_count, 1, memory_order_acq_rel) == pool->n_threads - 1) {
		atomic_store_explicit(&pool->bar_count, 0, memory_order_relaxed);
		atomic_store_explicit(&pool->bar_phase, phase + 1, memory_order_release);
		return;
	}
	for (unsigned i = 1; atomic_load_explicit(&pool->bar_phase, memory_order_acquire) == phase; i++)
		spin_step(i);
}

void rn_pool_split(int64_t n, int64_t align, int ith, int nth, int64_t *begin, int64_t *end)
{
	if (align < 1)
		align = 1;
	if (nth < 1)
		nth = 1;
	int64_t units = (n + align - 1) / align;
	int64_t per = units / nth, extra = units % nth;
	int64_t u0 = ith * per + (ith < extra ? ith : extra);
	int64_t u1 = u0 + per + (ith < extra ? 1 : 0);
	int64_t b = u0 * align, e = u1 * align;
	*begin = b < n ? b : n;
	*end = e < n ? e : n;
}
