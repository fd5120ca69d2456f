/* tests/cuda/cmp.h — one model on the CPU backend and the CUDA backend side by side, fed identical forward
 * calls through their ops tables, logits compared row by row; or on the CPU backend alone (the reference half
 * of a GPU test, run where there is no GPU).
 *
 * The CPU backend is paged: here every sequence owns its blocks in order (no pool, no sharing), so cells,
 * kv_move and kv_rotate mean the same on both backends. The CUDA instance may hold more sequences than the
 * CPU's and use sequence s + gpu_seq_off where the CPU uses s (a sequence in a high slot puts its KV rows far
 * into the cache without a CPU cache that large). Header-only (static functions), tests/cuda only.
 */
#ifndef ORUN_TESTS_CUDA_CMP_H
#define ORUN_TESTS_CUDA_CMP_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runner/backend.h"
#include "runner/cpu/cpu.h"
#include "runner/cpu/pool.h"
#include "runner/cuda/cuda.h"
#include "runner/model.h"
#include "tests/check.h"
#include "tests/cuda/wrand.h"

static inline double cmp_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Whether the test runs both halves (a device) or only the CPU's (no device and ORUN_CUDA_TEST_CPU=1); without
 * either it skips (77) saying so. */
static inline bool cmp_gpu_or_skip(const char *what)
{
	if (rn_cuda_device_count() > 0) {
		char dev[160];
		rn_cuda_device_describe(0, dev, sizeof dev);
		printf("device 0: %s\n", dev);
		return true;
	}
	const char *e = getenv("ORUN_CUDA_TEST_CPU");
	if (e && *e && strcmp(e, "0") != 0) {
		printf("no CUDA device: ORUN_CUDA_TEST_CPU is set, running the CPU reference half of %s only\n", what);
		return false;
	}
	SKIP("no CUDA device (rn_cuda_device_count() == 0): %s compiles and links but cannot run here "
	     "(ORUN_CUDA_TEST_CPU=1 runs its CPU reference half)", what);
	return false;
}

/* ORUN_CUDA_TEST_QUICK=1: a small subset of each test (what tools/gpu-check runs under compute-sanitizer). */
static inline bool cmp_quick(void)
{
	const char *e = getenv("ORUN_CUDA_TEST_QUICK");
	return e && *e && strcmp(e, "0") != 0;
}

/* Threads for the CPU side: ORUN_TEST_THREADS, else the physical cores. */
static inline int cmp_threads(void)
{
	const char *e = getenv("ORUN_TEST_THREADS");
	int n = e && *e ? atoi(e) : 0;
	return n > 0 ? n : rn_cpu_physical_cores();
}

struct cmp {
	void *cpu, *gpu; /* gpu NULL: the CPU half only */
	const struct rn_model *m;
	int n_seq, n_ctx, n_batch, bps, gpu_seq_off;
	int32_t *table;
	struct rn_kv_pages pages;
	float *lc, *lg;      /* logits [n_batch][vocab] */
	double t_cpu, t_gpu; /* seconds spent in each backend's forward calls */
};

/* One forward call's rows (grows as needed). */
struct call {
	int n, n_out, cap;
	int32_t *tok, *pos, *seq, *cell, *out_row, *gseq;
	uint8_t *want;
};

static inline void call_reset(struct call *c)
{
	c->n = 0;
	c->n_out = 0;
}

static inline void call_free(struct call *c)
{
	free(c->tok);
	free(c->pos);
	free(c->seq);
	free(c->cell);
	free(c->out_row);
	free(c->gseq);
	free(c->want);
	memset(c, 0, sizeof *c);
}

static inline void call_add(struct call *c, int32_t tok, int32_t pos, int32_t seq, int32_t cell, bool want)
{
	if (c->n == c->cap) {
		int cap = c->cap ? 2 * c->cap : 64;
		c->tok = realloc(c->tok, (size_t)cap * 4);
		c->pos = realloc(c->pos, (size_t)cap * 4);
		c->seq = realloc(c->seq, (size_t)cap * 4);
		c->cell = realloc(c->cell, (size_t)cap * 4);
		c->out_row = realloc(c->out_row, (size_t)cap * 4);
		c->gseq = realloc(c->gseq, (size_t)cap * 4);
		c->want = realloc(c->want, (size_t)cap);
		if (!c->tok || !c->pos || !c->seq || !c->cell || !c->out_row || !c->gseq || !c->want) {
			fprintf(stderr, "call_add: out of memory\n");
			exit(1);
		}
		c->cap = cap;
	}
	int i = c->n++;
	c->tok[i] = tok;
	c->pos[i] = pos;
	c->seq[i] = seq;
	c->cell[i] = cell;
	c->want[i] = want;
	if (want)
		c->out_row[c->n_out++] = i;
}

static inline struct rn_batch_cells call_cells(const struct call *c, const int32_t *seq)
{
	struct rn_batch_cells bc;
	memset(&bc, 0, sizeof bc);
	bc.b.n_tokens = c->n;
	bc.b.token = c->tok;
	bc.b.pos = c->pos;
	bc.b.seq = seq;
	bc.b.want = c->want;
	bc.cell = c->cell;
	bc.n_out = c->n_out;
	bc.out_row = c->out_row;
	return bc;
}

/* Loads both backends (the CUDA one only when gpu): the CPU with n_seq sequences, the GPU with n_seq +
 * gpu_seq_off. Returns false (a failed CHECK said why) when a load fails. */
static inline bool cmp_load(struct cmp *P, const struct rn_model *m, int n_seq, int n_ctx, int n_batch,
			    enum rn_kv_type kv, bool gpu, int gpu_seq_off)
{
	memset(P, 0, sizeof *P);
	P->m = m;
	P->n_seq = n_seq;
	P->n_ctx = n_ctx;
	P->n_batch = n_batch;
	P->gpu_seq_off = gpu_seq_off;
	P->bps = (n_ctx + RN_KV_BLOCK - 1) / RN_KV_BLOCK;
	P->table = malloc((size_t)n_seq * (size_t)P->bps * sizeof *P->table);
	for (int i = 0; P->table && i < n_seq * P->bps; i++)
		P->table[i] = i;
	P->pages = (struct rn_kv_pages){.n_blocks = n_seq * P->bps, .blocks_per_seq = P->bps, .table = P->table};
	struct rn_load_params p = {0};
	p.n_seq = n_seq;
	p.n_ctx = n_ctx;
	p.n_batch = n_batch;
	p.n_threads = cmp_threads();
	p.kv_type = kv;
	struct rn_error err = {0};
	int rc = rn_cpu_backend_ops.load_paged(m, &p, &P->pages, &P->cpu, &err);
	CHECKF(rc == RN_OK, "CPU load: %s", err.msg);
	if (rc == RN_OK && gpu) {
		p.n_seq = n_seq + gpu_seq_off;
		rc = rn_cuda_backend_ops.load(m, &p, &P->gpu, &err);
		CHECKF(rc == RN_OK, "CUDA load: %s", err.msg);
	}
	P->lc = malloc((size_t)n_batch * (size_t)m->hp.n_vocab * sizeof(float));
	P->lg = malloc((size_t)n_batch * (size_t)m->hp.n_vocab * sizeof(float));
	return rc == RN_OK && P->lc && P->lg;
}

static inline void cmp_free(struct cmp *P)
{
	if (P->cpu)
		rn_cpu_backend_ops.free(P->cpu);
	if (P->gpu)
		rn_cuda_backend_ops.free(P->gpu);
	free(P->table);
	free(P->lc);
	free(P->lg);
	memset(P, 0, sizeof *P);
}

/* What one call's comparison found. */
struct cmp_res {
	double worst;      /* the largest per-row ||gpu - cpu|| / ||cpu|| of the logits (0 without a GPU) */
	int flips;         /* rows whose argmax differs where the CPU's top-2 margin is clear (> 1% of max |logit|) */
	int rows;          /* rows compared */
	double cpu_rms;    /* the CPU logits' rms over every row (what the errors are relative to) */
	double cpu_margin; /* the smallest top-2 margin of the CPU rows, over the rms */
	int nonfinite;     /* CPU or GPU logits that are NaN or infinite */
	double distinct;   /* ||cpu row last - cpu row 0|| / ||cpu row 0|| of a call: how much the logits depend on
			    * the input (0 with one row); a model whose rows all look alike would hide wrong kernels */
	int call_rows;     /* the most output rows of one call merged here (distinct means something from 2) */
};

static inline void cmp_res_merge(struct cmp_res *a, const struct cmp_res *b)
{
	a->worst = b->worst > a->worst ? b->worst : a->worst;
	a->flips += b->flips;
	a->nonfinite += b->nonfinite;
	a->cpu_rms = a->rows + b->rows > 0 ? sqrt((a->cpu_rms * a->cpu_rms * a->rows + b->cpu_rms * b->cpu_rms * b->rows) /
						  (a->rows + b->rows))
					    : 0;
	a->cpu_margin = a->rows == 0 || b->cpu_margin < a->cpu_margin ? b->cpu_margin : a->cpu_margin;
	a->distinct = b->distinct > a->distinct ? b->distinct : a->distinct;
	a->call_rows = b->call_rows > a->call_rows ? b->call_rows : a->call_rows;
	a->rows += b->rows;
}

/* Runs the call on both (the CPU alone without a GPU) and compares the flagged rows' logits. */
static inline struct cmp_res cmp_run(struct cmp *P, const struct call *c, const char *what)
{
	struct cmp_res r;
	memset(&r, 0, sizeof r);
	for (int i = 0; i < c->n; i++)
		c->gseq[i] = c->seq[i] + P->gpu_seq_off;
	struct rn_batch_cells b1 = call_cells(c, c->seq), b2 = call_cells(c, c->gseq);
	struct rn_error e1 = {0}, e2 = {0};
	struct rn_outputs o1 = {.logits = P->lc}, o2 = {.logits = P->lg};
	double t = cmp_now();
	int r1 = rn_cpu_backend_ops.forward(P->cpu, &b1, &o1, &e1);
	P->t_cpu += cmp_now() - t;
	CHECKF(r1 == RN_OK, "%s: CPU forward: %s", what, e1.msg);
	int r2 = RN_OK;
	if (P->gpu) {
		t = cmp_now();
		r2 = rn_cuda_backend_ops.forward(P->gpu, &b2, &o2, &e2);
		P->t_gpu += cmp_now() - t;
		CHECKF(r2 == RN_OK, "%s: CUDA forward: %s", what, e2.msg);
	}
	if (r1 || r2) {
		r.worst = 1e9;
		return r;
	}
	const int V = P->m->hp.n_vocab;
	double ss = 0;
	r.cpu_margin = INFINITY;
	for (int k = 0; k < c->n_out; k++) {
		const float *a = P->lg + (size_t)k * V, *b = P->lc + (size_t)k * V;
		int ia = 0, ib = 0;
		float b1v = -INFINITY, b2v = -INFINITY, amax = 0;
		double rs = 0;
		for (int i = 0; i < V; i++) {
			if (!isfinite(b[i]) || (P->gpu && !isfinite(a[i])))
				r.nonfinite++;
			if (P->gpu && a[i] > a[ia])
				ia = i;
			if (b[i] > b1v) {
				b2v = b1v;
				b1v = b[i];
				ib = i;
			} else if (b[i] > b2v) {
				b2v = b[i];
			}
			amax = fabsf(b[i]) > amax ? fabsf(b[i]) : amax;
			rs += (double)b[i] * b[i];
		}
		ss += rs;
		double rrms = sqrt(rs / V), mg = rrms > 0 ? (b1v - b2v) / rrms : 0;
		r.cpu_margin = mg < r.cpu_margin ? mg : r.cpu_margin;
		if (P->gpu) {
			double e = wr_nerr_f(a, b, V);
			if (!(e == e))
				e = 1e9;
			r.worst = e > r.worst ? e : r.worst;
			if (ia != ib && b1v - b2v > 1e-2f * amax)
				r.flips++;
		}
	}
	r.rows = c->n_out;
	r.call_rows = c->n_out;
	if (c->n_out > 1)
		r.distinct = wr_nerr_f(P->lc + (size_t)(c->n_out - 1) * V, P->lc, V);
	r.cpu_rms = c->n_out ? sqrt(ss / ((double)c->n_out * V)) : 0;
	if (c->n_out == 0)
		r.cpu_margin = 0;
	CHECKF(r.nonfinite == 0, "%s: %d logits are NaN or infinite", what, r.nonfinite);
	return r;
}

#endif
