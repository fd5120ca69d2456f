/* tests/cpu/test_pool.c — the thread pool: every thread runs each job once, jobs see each other's writes after
 * a barrier and the caller sees them after rn_pool_run, sleeping workers wake up, the row split is a partition.
 */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "runner/cpu/pool.h"
#include "tests/check.h"

struct count_job {
	atomic_int calls[RN_POOL_MAX_THREADS];
	atomic_int bad_nth;
	int expect_nth;
};

static void count_fn(void *p, int ith, int nth)
{
	struct count_job *j = p;
	atomic_fetch_add(&j->calls[ith], 1);
	if (nth != j->expect_nth)
		atomic_fetch_add(&j->bad_nth, 1);
}

/* Phases separated by barriers: in phase k every thread writes slot[ith] = k, then after the barrier checks
 * every other thread's slot (plain, non-atomic memory: the barrier must publish it). */
#define PHASES 200
struct barrier_job {
	struct rn_pool *pool;
	int slot[RN_POOL_MAX_THREADS * 16];
	atomic_int errors;
};

static void barrier_fn(void *p, int ith, int nth)
{
	struct barrier_job *j = p;
	for (int k = 1; k <= PHASES; k++) {
		j->slot[ith * 16] = k;
		rn_pool_barrier(j->pool);
		for (int t = 0; t < nth; t++)
			if (j->slot[t * 16] != k)
				atomic_fetch_add(&j->errors, 1);
		rn_pool_barrier(j->pool);
	}
}

struct sum_job {
	const int *data;
	int64_t n;
	long long part[RN_POOL_MAX_THREADS];
};

static void sum_fn(void *p, int ith, int nth)
{
	struct sum_job *j = p;
	int64_t b, e;
	rn_pool_split(j->n, 1, ith, nth, &b, &e);
	long long s = 0;
	for (int64_t i = b; i < e; i++)
		s += j->data[i];
	j->part[ith] = s;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void test_runs(int n_threads, int spin_us)
{
	struct rn_pool *pool = NULL;
	CHECK(rn_pool_new(n_threads, &pool) == 0);
	if (!pool)
		return;
	rn_pool_set_spin_us(pool, spin_us);
	CHECK_EQ_INT(rn_pool_size(pool), n_threads);

	static struct count_job cj;
	memset(&cj, 0, sizeof cj);
	cj.expect_nth = n_threads;
	const int runs = spin_us ? 5000 : 300;
	for (int r = 0; r < runs; r++) {
		if (!spin_us && r % 50 == 0)
			usleep(2000); /* let the workers fall asleep, so the wake-up path runs */
		rn_pool_run(pool, count_fn, &cj);
	}
	for (int t = 0; t < n_threads; t++)
		CHECKF(atomic_load(&cj.calls[t]) == runs, "%d threads, spin %d: thread %d ran %d of %d jobs", n_threads,
		       spin_us, t, atomic_load(&cj.calls[t]), runs);
	CHECK_EQ_INT(atomic_load(&cj.bad_nth), 0);

	static struct barrier_job bj;
	memset(&bj, 0, sizeof bj);
	bj.pool = pool;
	rn_pool_run(pool, barrier_fn, &bj);
	rn_pool_run(pool, barrier_fn, &bj);
	CHECKF(atomic_load(&bj.errors) == 0, "%d threads: %d stale reads after barriers", n_threads,
	       atomic_load(&bj.errors));

	enum { N = 100003 };
	static int data[N];
	long long expect = 0;
	for (int i = 0; i < N; i++) {
		data[i] = i % 1000 - 300;
		expect += data[i];
	}
	struct sum_job sj = { .data = data, .n = N };
	rn_pool_run(pool, sum_fn, &sj);
	long long got = 0;
	for (int t = 0; t < n_threads; t++)
		got += sj.part[t];
	CHECK_EQ_INT(got, expect);
	rn_pool_free(pool);
}

static void test_split(void)
{
	const int64_t ns[] = { 0, 1, 7, 64, 151936, 897 };
	const int64_t aligns[] = { 1, 8, 32 };
	for (size_t a = 0; a < 3; a++)
		for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++)
			for (int nth = 1; nth <= 5; nth++) {
				int64_t prev = 0, maxlen = 0, minlen = INT64_MAX;
				int ok = 1;
				for (int ith = 0; ith < nth; ith++) {
					int64_t b, e;
					rn_pool_split(ns[k], aligns[a], ith, nth, &b, &e);
					ok &= b == prev && e >= b && (b % aligns[a] == 0 || b == ns[k]);
					prev = e;
					if (e - b > maxlen)
						maxlen = e - b;
					if (e - b < minlen)
						minlen = e - b;
				}
				ok &= prev == ns[k];
				ok &= maxlen - minlen <= 2 * aligns[a]; /* the last unit may be partial */
				CHECKF(ok, "split of %lld by %d aligned %lld", (long long)ns[k], nth, (long long)aligns[a]);
			}
}

int main(void)
{
	int cores = rn_cpu_physical_cores();
	fprintf(stderr, "physical cores: %d\n", cores);
	CHECK(cores >= 1 && cores <= 4096);

	struct rn_pool *p = NULL;
	CHECK_EQ_INT(rn_pool_new(RN_POOL_MAX_THREADS + 1, &p), EINVAL);
	CHECK(p == NULL);
	CHECK(rn_pool_new(0, &p) == 0);
	CHECK_EQ_INT(rn_pool_size(p), cores);
	rn_pool_free(p);
	rn_pool_free(NULL);
	CHECK_EQ_INT(rn_pool_size(NULL), 1);

	test_split();
	test_runs(1, RN_POOL_DEFAULT_SPIN_US);
	test_runs(2, RN_POOL_DEFAULT_SPIN_US);
	test_runs(3, RN_POOL_DEFAULT_SPIN_US); /* more threads than this 2-core machine has */
	test_runs(2, 0);
	test_runs(4, 0);

	/* dispatch overhead, for information: an empty job on 2 threads */
	struct rn_pool *pool = NULL;
	if (rn_pool_new(2, &pool) == 0) {
		static struct count_job cj;
		cj.expect_nth = 2;
		const int runs = 20000;
		double t0 = now_s();
		for (int r = 0; r < runs; r++)
			rn_pool_run(pool, count_fn, &cj);
		double t1 = now_s();
		fprintf(stderr, "empty job on 2 threads: %.2f us per rn_pool_run\n", (t1 - t0) / runs * 1e6);
		rn_pool_free(pool);
	}
	return check_done();
}
