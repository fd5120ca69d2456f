/* runner/cpu/pool.h — the CPU backend's persistent thread pool.
 *
 * One pool per engine thread: the caller and (n_threads - 1) workers run the same function, each with its own
 * index, and rn_pool_run() returns when all of them are done. Workers spin briefly after a job (decode issues a
 * few hundred short jobs per token) and then sleep, so an idle pool costs no CPU.
 */
#ifndef ORUN_RUNNER_CPU_POOL_H
#define ORUN_RUNNER_CPU_POOL_H

#include <stdint.h>

/* Upper limit on the threads of one pool (a named cap on a user-supplied num_thread). */
#define RN_POOL_MAX_THREADS 256

/* Default spin time of an idle worker before it sleeps, in microseconds. */
#define RN_POOL_DEFAULT_SPIN_US 1000

struct rn_pool;

/* A job: called once on every thread of the pool with ith = 0 .. nth-1 (ith 0 is the caller of rn_pool_run).
 * All nth calls run concurrently, so a job may use rn_pool_barrier() between its phases. */
typedef void (*rn_pool_fn)(void *ctx, int ith, int nth);

/* Number of physical cores this process may run on: distinct (package, core) pairs among the CPUs in its
 * affinity mask, read from /sys/devices/system/cpu/cpuN/topology. Falls back to the number of CPUs in the
 * affinity mask (then to 1) when the topology cannot be read. Never fails; cached after the first call. */
int rn_cpu_physical_cores(void);

/* Creates a pool of n_threads threads in all, the calling thread included (n_threads - 1 workers are started).
 * n_threads <= 0 means rn_cpu_physical_cores(). Returns 0 and sets *out, or ENOMEM / EAGAIN (thread creation
 * failed) / EINVAL (n_threads > RN_POOL_MAX_THREADS), leaving *out NULL. */
int rn_pool_new(int n_threads, struct rn_pool **out) __attribute__((warn_unused_result));

/* Stops and joins the workers and frees the pool. Accepts NULL. Must not be called while a job runs. */
void rn_pool_free(struct rn_pool *pool);

/* Number of threads, the caller included (>= 1). rn_pool_size(NULL) is 1. */
int rn_pool_size(const struct rn_pool *pool);

/* How long an idle worker spins waiting for the next job before it sleeps (default RN_POOL_DEFAULT_SPIN_US).
 * 0 makes workers sleep at once (best when the machine is oversubscribed). Takes effect from the next job. */
void rn_pool_set_spin_us(struct rn_pool *pool, int spin_us);

/* Runs fn(ctx, ith, nth) on every thread of the pool, ith 0 on the calling thread, and returns when every
 * call has returned (all writes made by the jobs are then visible to the caller). pool NULL runs
 * fn(ctx, 0, 1) on the caller. Not reentrant: one rn_pool_run at a time per pool, and a job must not call
 * rn_pool_run on its own pool. */
void rn_pool_run(struct rn_pool *pool, rn_pool_fn fn, void *ctx);

/* Barrier for the threads of the job now running: returns on each thread once all nth threads of the job
 * have called it; writes made before it are visible to every thread after it. Must be called by all threads
 * of the job the same number of times (or by none). No-op for pool NULL. Cost: well under a microsecond
 * when the threads arrive together (spin, then yield). */
void rn_pool_barrier(struct rn_pool *pool);

/* Splits [0, n) into nth nearly equal contiguous parts aligned to `align` (>= 1) and returns part ith as
 * [*begin, *end). Parts may be empty. A helper for jobs that divide rows between threads. */
void rn_pool_split(int64_t n, int64_t align, int ith, int nth, int64_t *begin, int64_t *end);

#endif
