/* runner/cpu/forward.c — the CPU backend: the transformer forward pass for llama / qwen2 / qwen3 over a
 * batch of tokens from several sequences, over the KV cache's host storage (runner/kvcache.h: a pool of blocks of
 * RN_KV_BLOCK cells that runner/backend.c assigns to the sequences through their block tables; f16 or q8_0 rows,
 * converted here).
 *
 * One forward call is one pool job: every thread walks the same layer loop and the phases are separated by
 * barriers, so decode pays one dispatch per token instead of one per op. Matmuls split weight rows between
 * threads by bytes; attention splits (row, head) pairs. ORUN_CPU_REFERENCE=1 replaces the int8 matmuls with
 * f32 dot products on dequantized weight rows (slow; a cross-check of the kernels, not a mode for users).
 */
#include "config.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runner/cpu/attention.h"
#include "runner/cpu/cpu.h"
#include "runner/cpu/matmul.h"
#include "runner/cpu/ops.h"
#include "runner/cpu/pool.h"

#define MAX_KINDS 3 /* enum rn_act_kind values */
#define SPLITK_MIN_CELLS 256 /* a single decoding row splits its cells between threads from this length on */

struct cpu_layer {
	struct rn_weight wq, wk, wv, wo, gate, up, down;
};

/* The buffers a thread computes matmul inputs in: the batch's shared ones, or, when one token is decoded on
 * several threads, a private set per thread. Then every thread computes the residual sums, norms, SwiGLU and
 * activation quantization of the token itself (the same operations on the same values, so the same bits) and
 * goes on to its share of the next matmul without waiting for one thread to do them: four barriers fewer per
 * layer. */
struct acts {
	float *x, *xn, *hb; /* residual stream, normed row, SwiGLU output (the shared set's hb is c->hb) */
	uint8_t *act[MAX_KINDS];
	float *act_f16, *act_bf16; /* f32 rows rounded to f16 / bf16 */
};

struct cpu {
	const struct rn_model *m;
	struct rn_load_params p;
	struct rn_rope rope;
	struct rn_pool *pool;
	int nth;
	bool reference;
	struct cpu_layer *layers;
	struct rn_weight out_w;
	int n_embd, q_dim, kv_dim, head_dim, n_head, n_head_kv, n_ff, n_vocab, max_cols;
	float kq_scale;
	struct rn_kv_store kv; /* the KV cache's rows: a pool of blocks */
	const struct rn_kv_pages *pg; /* which blocks hold each sequence's cells (runner/backend.c's, read only) */
	/* scratch for n_batch rows */
	float *x, *xn, *tmp, *q, *k, *v, *att, *hb, *hb2;
	float *cs;       /* [n_batch][n_rot] cos/sin per row */
	float *scores;   /* [nth][att_scratch] per-thread attention scratch */
	size_t att_scratch;
	float *split_s;  /* [n_head][n_ctx] scores of the one row of a split-K attention */
	float *deq;      /* [nth][max_cols] */
	struct acts shared; /* n_batch rows: x, xn, hb are c->x, c->xn, c->hb; act_f16/bf16 [n_batch][max_cols] */
	struct acts *own;   /* [nth], one row each (one-token decode on several threads), or NULL */
	size_t scratch_bytes;
	/* ORUN_CPU_DUMP=DIR:CALL (diagnostics, for comparing with llama.cpp tensor by tensor): the intermediate
	 * tensors of forward call CALL (0 = the first) are written to DIR as <seq>.bin f32 rows, listed with their
	 * names and shapes in DIR/index.txt. Unset, each dump point costs one test. */
	char dump_dir[256];
	long dump_call, n_calls;
	int dump_seq;
	/* decode matmul phases: tickets of the dynamically dealt tail (see mm_phase), 0 at the start of a job */
	_Alignas(64) atomic_long mm_ticket;
	char pad_end[64];
	/* use_mmap false: the weights' copy (every rn_weight's data points into it), or NULL */
	void *wcopy;
	size_t wcopy_bytes;
};

/* ---------------------------------------------------------------------------------------------------- */
/* KV rows to and from f32 */

static void kv_store(const struct cpu *c, uint8_t *dst, const float *x, int n)
{
	if (c->p.kv_type == RN_KV_Q8_0)
		rn_ops_store_q8_0(dst, x, n);
	else
		rn_ops_store_f16((uint16_t *)dst, x, n);
}

static void kv_load(const struct cpu *c, float *dst, const uint8_t *src, int n)
{
	if (c->p.kv_type == RN_KV_Q8_0)
		rn_ops_load_q8_0(dst, src, n);
	else
		rn_ops_load_f16(dst, (const uint16_t *)src, n);
}

/* ---------------------------------------------------------------------------------------------------- */
/* matmul phase helpers (called on every thread of a job) */

struct mm {
	const struct rn_weight *w;
	const struct gguf_tensor *gt; /* for the reference path's row dequantization (FP8 needs its scales) */
	const float *xf;    /* f32 input rows (stride = cols), for the reference path and F32-kind weights */
	float *y;
	int64_t ldy;
};

/* Quantize rows [r0, r1) of x (cols per row) for every activation kind the weights need. */
static void quantize_rows(struct cpu *c, struct acts *A, const float *x, int64_t cols, int64_t r0, int64_t r1,
			  const struct rn_weight *const *ws, int nw)
{
	if (c->reference)
		return;
	bool done[MAX_KINDS] = {false}, f16 = false, bf16 = false;
	for (int i = 0; i < nw; i++) {
		enum rn_act_kind k = rn_mm_act_kind(ws[i]->type);
		if (k == RN_ACT_F32) {
			/* llama.cpp multiplies F16 / BF16 weights with activations rounded to F16 / BF16; the kernels
			 * take f32 rows, so hand them rows rounded the same way */
			if (ws[i]->type == RN_MM_F16 && !f16) {
				f16 = true;
				for (int64_t r = r0; r < r1; r++)
					for (int64_t j = 0; j < cols; j++)
						A->act_f16[r * cols + j] = gguf_f16_to_f32(gguf_f32_to_f16(x[r * cols + j]));
			} else if (ws[i]->type == RN_MM_BF16 && !bf16) {
				bf16 = true;
				for (int64_t r = r0; r < r1; r++)
					for (int64_t j = 0; j < cols; j++)
						A->act_bf16[r * cols + j] = gguf_bf16_to_f32(gguf_f32_to_bf16(x[r * cols + j]));
			}
			continue;
		}
		if (done[k])
			continue;
		done[k] = true;
		rn_act_quantize_rows(k, x, cols, cols, r0, r1, A->act[k]);
	}
}

/* The activation descriptor for weight w over n rows of x (already quantized by quantize_rows). */
static struct rn_act act_for(const struct acts *A, const struct rn_weight *w, const float *x, int64_t n)
{
	enum rn_act_kind k = rn_mm_act_kind(w->type);
	struct rn_act a = {.kind = k, .n = n, .cols = w->cols, .ld = w->cols};
	if (k != RN_ACT_F32)
		a.data = A->act[k];
	else if (w->type == RN_MM_F16)
		a.data = A->act_f16;
	else if (w->type == RN_MM_BF16)
		a.data = A->act_bf16;
	else
		a.data = x;
	return a;
}

static void ref_rows(struct cpu *c, int ith, const struct mm *op, int64_t n, int64_t r0, int64_t r1)
{
	const struct rn_weight *w = op->w;
	float *row = c->deq + (size_t)ith * (size_t)c->max_cols;
	size_t rb = rn_mm_row_bytes(w->type, w->cols);
	for (int64_t r = r0; r < r1; r++) {
		int rc = op->gt ? gguf_tensor_dequantize_row(op->gt, r, 0, w->cols, row)
				: gguf_dequantize((uint32_t)w->type, (const uint8_t *)w->data + (size_t)r * rb, row,
						  (uint64_t)w->cols);
		if (rc != GGUF_OK)
			memset(row, 0, (size_t)w->cols * sizeof *row);
		for (int64_t i = 0; i < n; i++)
			op->y[i * op->ldy + r] = rn_ops_dot_f32(op->xf + i * w->cols, row, (int)w->cols);
	}
}

/* The first row of a weight (rb bytes a row, `rows` rows, its bytes starting at `base` in the concatenation of a
 * phase's weights) whose first byte lies at or after byte b, rounded up to the 4-row groups of the kernels. Byte
 * ranges [lo, hi) that tile [0, total) map to row ranges that tile every weight. */
static int64_t mm_row_at(uint64_t b, uint64_t base, uint64_t rb, int64_t rows)
{
	if (b <= base)
		return 0;
	int64_t r = (int64_t)((b - base + rb - 1) / rb);
	r = (r + 3) & ~(int64_t)3;
	return r < rows ? r : rows;
}

/* The rows of the phase's weights whose first byte lies in [lo, hi), against n input rows. */
static void mm_range(struct cpu *c, const struct acts *A, int ith, const struct mm *ops, int n_ops, const uint64_t *rb,
		     int64_t n, uint64_t lo, uint64_t hi)
{
	uint64_t base = 0;
	for (int i = 0; i < n_ops; i++) {
		const struct rn_weight *w = ops[i].w;
		int64_t r0 = mm_row_at(lo, base, rb[i], w->rows), r1 = mm_row_at(hi, base, rb[i], w->rows);
		if (r0 < r1) {
			if (c->reference) {
				ref_rows(c, ith, &ops[i], n, r0, r1);
			} else {
				struct rn_act a = act_for(A, w, ops[i].xf, n);
				rn_matmul_rows(w, &a, ops[i].y, ops[i].ldy, r0, r1);
			}
		}
		base += rb[i] * (uint64_t)w->rows;
	}
}

/* Share of a decode phase's bytes dealt statically (the rest is dealt in chunks as threads come free), and the
 * smallest chunk and most chunks of that dynamic tail. Threads of one phase finish apart by tens of microseconds
 * when each takes a fixed share (measured with 2 threads on the qwen2 test model: ~25 us at every ffn_gate/up
 * phase, ~10-17 us at ffn_down), which the tail evens out for one atomic increment per chunk. */
#define MM_STATIC_SHARE 0.75
#define MM_CHUNK_MIN ((uint64_t)32 << 10)
#define MM_CHUNKS_MAX 256

/* Runs several matmuls over the same n input rows. Prefill: the threads split the total weight bytes evenly.
 * Decode (n = 1): each thread takes its even share of the first MM_STATIC_SHARE of the bytes, then chunks of the
 * rest from a shared ticket counter. *ticket_base is this thread's count of the tickets of earlier phases of the
 * job: every phase hands out its K chunks plus one failed claim per thread (each thread stops at its first), so
 * all threads advance it alike, and the barrier after each phase keeps phases' tickets apart. Which thread
 * computes a row does not change its result. */
static void mm_phase(struct cpu *c, const struct acts *A, int ith, int nth, const struct mm *ops, int n_ops, int64_t n,
		     long *ticket_base)
{
	uint64_t total = 0, rb[8];
	for (int i = 0; i < n_ops; i++) {
		rb[i] = rn_mm_row_bytes(ops[i].w->type, ops[i].w->cols);
		total += rb[i] * (uint64_t)ops[i].w->rows;
	}
	if (n > 1 || nth == 1) {
		mm_range(c, A, ith, ops, n_ops, rb, n, total * (uint64_t)ith / (uint64_t)nth,
			 total * (uint64_t)(ith + 1) / (uint64_t)nth);
		return;
	}
	const uint64_t fixed = (uint64_t)((double)total * MM_STATIC_SHARE);
	mm_range(c, A, ith, ops, n_ops, rb, n, fixed * (uint64_t)ith / (uint64_t)nth,
		 fixed * (uint64_t)(ith + 1) / (uint64_t)nth);
	const uint64_t tail = total - fixed;
	uint64_t chunk = tail / MM_CHUNKS_MAX;
	if (chunk < MM_CHUNK_MIN)
		chunk = MM_CHUNK_MIN;
	const long k = tail ? (long)((tail + chunk - 1) / chunk) : 0;
	for (;;) {
		long t = atomic_fetch_add_explicit(&c->mm_ticket, 1, memory_order_relaxed) - *ticket_base;
		if (t >= k)
			break;
		uint64_t lo = fixed + (uint64_t)t * chunk, hi = lo + chunk < total ? lo + chunk : total;
		mm_range(c, A, ith, ops, n_ops, rb, n, lo, hi);
	}
	*ticket_base += k + nth;
}

/* ---------------------------------------------------------------------------------------------------- */
/* the forward job */

struct job {
	struct cpu *c;
	const struct rn_batch_cells *bc;
	const struct rn_outputs *out;
	int n;         /* live rows (n_tokens, then n_out in the last layer) */
};

static void barrier(struct cpu *c) { rn_pool_barrier(c->pool); }

/* ORUN_CPU_DUMP: rows x cols floats (row stride ld) as DIR/<seq>.bin, listed in DIR/index.txt. Called by
 * every thread; does nothing unless this is the call being dumped. */
static void dump(struct cpu *c, int ith, const char *name, int layer, const float *p, int rows, int cols, int ld)
{
	if (!c->dump_dir[0] || c->dump_call != c->n_calls)
		return;
	barrier(c);
	if (ith == 0) {
		char path[300];
		snprintf(path, sizeof path, "%s/%04d.bin", c->dump_dir, c->dump_seq);
		FILE *f = fopen(path, "wb");
		for (int r = 0; f && r < rows; r++)
			fwrite(p + (size_t)r * (size_t)ld, sizeof *p, (size_t)cols, f);
		if (f)
			fclose(f);
		snprintf(path, sizeof path, "%s/index.txt", c->dump_dir);
		f = fopen(path, "a");
		if (f) {
			if (layer >= 0)
				fprintf(f, "%04d %s-%d %d %d\n", c->dump_seq, name, layer, cols, rows);
			else
				fprintf(f, "%04d %s %d %d\n", c->dump_seq, name, cols, rows);
			fclose(f);
		}
		c->dump_seq++;
	}
	barrier(c);
}

static void split(int64_t n, int ith, int nth, int64_t *b, int64_t *e) { rn_pool_split(n, 1, ith, nth, b, e); }

/* The rows [*b, *e) this thread computes of an n-row step that is not a matmul: its share, or, with private
 * buffers (A != &c->shared), all of them. */
static void rows_of(const struct cpu *c, const struct acts *A, int64_t n, int ith, int nth, int64_t *b, int64_t *e)
{
	if (A != &c->shared) {
		*b = 0;
		*e = n;
	} else {
		split(n, ith, nth, b, e);
	}
}

/* The token embeddings into A->x, and each row's RoPE table (by the first thread only when every thread embeds
 * the token into its own buffers). */
static void embed_rows(struct cpu *c, struct acts *A, const struct rn_batch_cells *bc, int ith, int nth)
{
	const struct rn_tensor *te = &c->m->tok_embd;
	size_t rb = (size_t)gguf_row_size(te->type, te->ne[0]);
	int64_t b, e;
	rows_of(c, A, bc->b.n_tokens, ith, nth, &b, &e);
	for (int64_t i = b; i < e; i++) {
		float *x = A->x + (size_t)i * (size_t)c->n_embd;
		const uint8_t *src = (const uint8_t *)te->data + (size_t)bc->b.token[i] * rb;
		if (gguf_dequantize(te->type, src, x, (uint64_t)c->n_embd) != GGUF_OK)
			memset(x, 0, (size_t)c->n_embd * sizeof *x);
		if (A == &c->shared || ith == 0)
			rn_rope_cos_sin(&c->rope, bc->b.pos[i], c->cs + (size_t)i * (size_t)c->rope.n_rot);
	}
}

/* x[i] += tmp[i] (+ bias) when add, then xn[i] = rmsnorm(x[i]) * w, then quantize xn[i] for ws. */
static void resid_norm_quant(struct cpu *c, struct acts *A, int n, int ith, int nth, bool add, const float *bias,
			     const float *w, const struct rn_weight *const *ws, int nw)
{
	int64_t b, e;
	rows_of(c, A, n, ith, nth, &b, &e);
	const int E = c->n_embd;
	for (int64_t i = b; i < e; i++) {
		float *x = A->x + (size_t)i * (size_t)E, *t = c->tmp + (size_t)i * (size_t)E;
		if (add) {
			if (bias)
				for (int j = 0; j < E; j++)
					x[j] += t[j] + bias[j];
			else
				for (int j = 0; j < E; j++)
					x[j] += t[j];
		}
		rn_ops_rmsnorm(A->xn + (size_t)i * (size_t)E, x, w, E, c->m->hp.norm_eps);
	}
	if (b < e)
		quantize_rows(c, A, A->xn, E, b, e, ws, nw);
}

/* Bias, QK-norm, RoPE and the KV-cache store for every (row, head) of the batch. */
static void qkv_post(struct cpu *c, const struct rn_layer *ml, int layer, const struct rn_batch_cells *bc, int n,
		     int ith, int nth)
{
	const int H = c->n_head, HK = c->n_head_kv, D = c->head_dim;
	const int64_t tasks = (int64_t)n * (H + 2 * HK);
	int64_t b, e;
	split(tasks, ith, nth, &b, &e);
	const float eps = c->m->hp.norm_eps;
	for (int64_t t = b; t < e; t++) {
		int i = (int)(t / (H + 2 * HK)), h = (int)(t % (H + 2 * HK));
		const float *cs = c->cs + (size_t)i * (size_t)c->rope.n_rot;
		if (h < H) {
			float *q = c->q + (size_t)i * (size_t)c->q_dim + (size_t)h * (size_t)D;
			if (ml->bq)
				for (int j = 0; j < D; j++)
					q[j] += ml->bq[h * D + j];
			if (ml->q_norm)
				rn_ops_rmsnorm(q, q, ml->q_norm, D, eps);
			rn_ops_rope(q, cs, c->rope.n_rot, c->rope.type == RN_ROPE_NEOX);
			rn_ops_scale_round_f16(q, q, 1.0f, D); /* llama.cpp multiplies f16 keys with an f16 query */
		} else if (h < H + HK) {
			int g = h - H;
			float *k = c->k + (size_t)i * (size_t)c->kv_dim + (size_t)g * (size_t)D;
			if (ml->bk)
				for (int j = 0; j < D; j++)
					k[j] += ml->bk[g * D + j];
			if (ml->k_norm)
				rn_ops_rmsnorm(k, k, ml->k_norm, D, eps);
			rn_ops_rope(k, cs, c->rope.n_rot, c->rope.type == RN_ROPE_NEOX);
			uint8_t *dst = rn_kv_store_row(&c->kv, c->pg, layer, 0, bc->b.seq[i], bc->cell[i]) +
				       (size_t)g * c->kv.head_bytes;
			kv_store(c, dst, k, D);
		} else {
			int g = h - H - HK;
			float *v = c->v + (size_t)i * (size_t)c->kv_dim + (size_t)g * (size_t)D;
			if (ml->bv)
				for (int j = 0; j < D; j++)
					v[j] += ml->bv[g * D + j];
			uint8_t *dst = rn_kv_store_row(&c->kv, c->pg, layer, 1, bc->b.seq[i], bc->cell[i]) +
				       (size_t)g * c->kv.head_bytes;
			kv_store(c, dst, v, D);
		}
	}
}

static struct rn_attn_kv kv_head(const struct cpu *c, int layer, int seq, int g)
{
	struct rn_attn_kv kv = {
		.k = rn_kv_store_block(&c->kv, layer, 0, 0) + (size_t)g * c->kv.head_bytes,
		.v = rn_kv_store_block(&c->kv, layer, 1, 0) + (size_t)g * c->kv.head_bytes,
		.table = c->pg->table + (size_t)seq * (size_t)c->pg->blocks_per_seq,
		.block_bytes = c->kv.block_bytes,
		.stride = c->kv.row_bytes,
		.type = c->p.kv_type,
	};
	return kv;
}

/* Attention of every row over the cells [0, cell] of its sequence, the query heads of one KV head together.
 * A single long row (decode) splits its cells between the threads instead: scores, softmax per head,
 * weighted values per chunk, sum of the chunks, with a barrier between the steps. Every path sums in the same
 * order (runner/cpu/attention.h), so a row's result does not depend on which path the batch takes. */
static void attention(struct cpu *c, int layer, const struct rn_batch_cells *bc, int n, int ith, int nth)
{
	const int HK = c->n_head_kv, G = c->n_head / c->n_head_kv, D = c->head_dim, H = c->n_head;
	float *scratch = c->scores + (size_t)ith * c->att_scratch;
	int64_t b, e;
	if (n == 1 && nth > 1 && bc->cell[0] + 1 >= SPLITK_MIN_CELLS) {
		/* one long row: scores split by cells, values by 8-element slices of each head (every element then
		 * sums its cells in one order, as the unsplit path does) */
		const int nc = bc->cell[0] + 1, seq = bc->b.seq[0];
		const size_t NC = (size_t)c->p.n_ctx;
		int nch = (2 * nth + HK - 1) / HK;
		int csz = ((nc + nch - 1) / nch + 31) & ~31;
		nch = (nc + csz - 1) / csz;
		split((int64_t)HK * nch, ith, nth, &b, &e);
		for (int64_t it = b; it < e; it++) {
			int g = (int)(it / nch), ch = (int)(it % nch), c0 = ch * csz, c1 = c0 + csz < nc ? c0 + csz : nc;
			struct rn_attn_kv kv = kv_head(c, layer, seq, g);
			rn_attn_scores(&kv, c0, c1, G, D, c->kq_scale, c->q + (size_t)g * G * D, (size_t)D,
				       c->split_s + (size_t)g * G * NC, NC, scratch);
		}
		barrier(c);
		split(H, ith, nth, &b, &e);
		for (int64_t h = b; h < e; h++)
			rn_attn_softmax(c->split_s + (size_t)h * NC, nc);
		barrier(c);
		const int nsl = D % 8 == 0 ? D / 8 : 1, slw = D % 8 == 0 ? 8 : D;
		split((int64_t)H * nsl, ith, nth, &b, &e);
		for (int64_t it = b; it < e; it++) {
			int h = (int)(it / nsl), sl = (int)(it % nsl);
			struct rn_attn_kv kv = kv_head(c, layer, seq, h / G);
			rn_attn_values(&kv, nc, sl * slw, sl * slw + slw, 1, D, c->split_s + (size_t)h * NC, NC,
				       c->att + (size_t)h * D, (size_t)D, scratch);
		}
		return;
	}
	if (n == 1) {
		/* one short row: the threads take contiguous ranges of query heads, each range in pieces of the KV
		 * groups it covers (heads of one group still share their converted keys). Dealing whole groups would
		 * leave a thread idle when the groups do not divide evenly (SmolLM2: 3 groups on 2 threads, 2:1) */
		split(H, ith, nth, &b, &e);
		for (int64_t h0 = b; h0 < e;) {
			const int g = (int)(h0 / G);
			const int64_t h1 = (int64_t)(g + 1) * G < e ? (int64_t)(g + 1) * G : e;
			struct rn_attn_kv kv = kv_head(c, layer, bc->b.seq[0], g);
			rn_attn_group(&kv, bc->cell[0] + 1, (int)(h1 - h0), D, c->kq_scale, c->q + (size_t)h0 * D, (size_t)D,
				      c->att + (size_t)h0 * D, (size_t)D, scratch);
			h0 = h1;
		}
		return;
	}
	/* tasks dealt round-robin: a causal batch's later rows see more cells, contiguous ranges would leave the
	 * first thread waiting */
	for (int64_t t = ith; t < (int64_t)n * HK; t += nth) {
		int i = (int)(t / HK), g = (int)(t % HK);
		struct rn_attn_kv kv = kv_head(c, layer, bc->b.seq[i], g);
		size_t off = (size_t)i * (size_t)c->q_dim + (size_t)g * G * D;
		rn_attn_group(&kv, bc->cell[i] + 1, G, D, c->kq_scale, c->q + off, (size_t)D, c->att + off, (size_t)D,
			      scratch);
	}
}

/* Whether this forward call writes the ORUN_CPU_DUMP tensors (then every step runs on the shared buffers). */
static bool dumping(const struct cpu *c) { return c->dump_dir[0] && c->dump_call == c->n_calls; }

static void forward_job(void *ctx, int ith, int nth)
{
	struct job *J = ctx;
	struct cpu *c = J->c;
	const struct rn_model *m = c->m;
	const struct rn_batch_cells *bc = J->bc;
	const int E = c->n_embd;
	int n = bc->b.n_tokens;
	long tickets = 0; /* mm_phase's count of the tickets handed out so far in this job */
	/* one token on several threads: each thread its own residual stream and matmul inputs (struct acts) */
	const bool own = n == 1 && nth > 1 && c->own && !dumping(c);
	struct acts *A = own ? &c->own[ith] : &c->shared;

	embed_rows(c, A, bc, ith, nth);
	if (!own)
		barrier(c); /* own: the RoPE table is next read after the QKV matmul's barrier */
	dump(c, ith, "embd", -1, c->x, n, E, E);
	bool pending = false; /* c->tmp holds a residual still to be added to x */
	for (int l = 0; l < m->hp.n_layer; l++) {
		const struct rn_layer *ml = &m->layers[l];
		struct cpu_layer *cl = &c->layers[l];
		const bool last = l == m->hp.n_layer - 1;

		/* attention block */
		const struct rn_weight *qkv[3] = {&cl->wq, &cl->wk, &cl->wv};
		resid_norm_quant(c, A, n, ith, nth, pending, NULL, ml->attn_norm, qkv, 3);
		if (!own)
			barrier(c);
		if (l > 0)
			dump(c, ith, "l_out", l - 1, c->x, n, E, E);
		dump(c, ith, "attn_norm", l, c->xn, n, E, E);
		struct mm ops[3] = {
			{&cl->wq, ml->wq.gt, A->xn, c->q, c->q_dim},
			{&cl->wk, ml->wk.gt, A->xn, c->k, c->kv_dim},
			{&cl->wv, ml->wv.gt, A->xn, c->v, c->kv_dim},
		};
		mm_phase(c, A, ith, nth, ops, 3, n, &tickets);
		barrier(c);
		dump(c, ith, "Qcur", l, c->q, n, c->q_dim, c->q_dim);
		dump(c, ith, "Kcur", l, c->k, n, c->kv_dim, c->kv_dim);
		dump(c, ith, "Vcur", l, c->v, n, c->kv_dim, c->kv_dim);
		qkv_post(c, ml, l, bc, n, ith, nth);
		barrier(c);
		dump(c, ith, "Qrope", l, c->q, n, c->q_dim, c->q_dim);
		dump(c, ith, "Krope", l, c->k, n, c->kv_dim, c->kv_dim);
		attention(c, l, bc, n, ith, nth);
		barrier(c);
		dump(c, ith, "kqv_out", l, c->att, n, c->q_dim, c->q_dim);
		if (last && own) {
			/* the one row is row 0: nothing moves */
			n = bc->n_out;
			if (n == 0)
				return;
		} else if (last) {
			/* only the flagged rows matter from here on */
			if (ith == 0) {
				for (int k = 0; k < bc->n_out; k++) {
					int r = bc->out_row[k];
					if (r != k) {
						memcpy(c->att + (size_t)k * (size_t)c->q_dim, c->att + (size_t)r * (size_t)c->q_dim,
						       (size_t)c->q_dim * sizeof(float));
						memcpy(c->x + (size_t)k * (size_t)E, c->x + (size_t)r * (size_t)E,
						       (size_t)E * sizeof(float));
					}
				}
				J->n = bc->n_out;
			}
			barrier(c);
			n = J->n;
			if (n == 0)
				return;
		}
		{
			int64_t b, e;
			rows_of(c, A, n, ith, nth, &b, &e);
			const struct rn_weight *wo[1] = {&cl->wo};
			if (b < e)
				quantize_rows(c, A, c->att, c->q_dim, b, e, wo, 1);
		}
		if (!own)
			barrier(c);
		struct mm op_o = {&cl->wo, ml->wo.gt, c->att, c->tmp, E};
		mm_phase(c, A, ith, nth, &op_o, 1, n, &tickets);
		barrier(c);
		dump(c, ith, "attn_out", l, c->tmp, n, E, E);

		/* feed-forward block */
		const struct rn_weight *gu[2] = {&cl->gate, &cl->up};
		resid_norm_quant(c, A, n, ith, nth, true, ml->bo, ml->ffn_norm, gu, 2);
		if (!own)
			barrier(c);
		dump(c, ith, "ffn_inp", l, c->x, n, E, E);
		dump(c, ith, "ffn_norm", l, c->xn, n, E, E);
		struct mm ops2[2] = {
			{&cl->gate, ml->w_gate.gt, A->xn, c->hb, c->n_ff},
			{&cl->up, ml->w_up.gt, A->xn, c->hb2, c->n_ff},
		};
		mm_phase(c, A, ith, nth, ops2, 2, n, &tickets);
		barrier(c);
		dump(c, ith, "ffn_gate", l, c->hb, n, c->n_ff, c->n_ff);
		dump(c, ith, "ffn_up", l, c->hb2, n, c->n_ff, c->n_ff);
		{
			int64_t b, e;
			rows_of(c, A, n, ith, nth, &b, &e);
			if (A->hb != c->hb && b < e)
				memcpy(A->hb, c->hb, (size_t)(e - b) * (size_t)c->n_ff * sizeof(float)); /* own: b = 0 */
			for (int64_t i = b; i < e; i++)
				rn_ops_swiglu(A->hb + (size_t)i * (size_t)c->n_ff, c->hb2 + (size_t)i * (size_t)c->n_ff, c->n_ff);
			const struct rn_weight *dn[1] = {&cl->down};
			if (b < e)
				quantize_rows(c, A, A->hb, c->n_ff, b, e, dn, 1);
		}
		if (!own)
			barrier(c);
		struct mm op_d = {&cl->down, ml->w_down.gt, A->hb, c->tmp, E};
		dump(c, ith, "ffn_swiglu", l, c->hb, n, c->n_ff, c->n_ff);
		mm_phase(c, A, ith, nth, &op_d, 1, n, &tickets);
		barrier(c);
		dump(c, ith, "ffn_out", l, c->tmp, n, E, E);
		pending = true;
	}

	/* output norm and LM head for the n (= n_out) remaining rows */
	const struct rn_weight *ow[1] = {&c->out_w};
	resid_norm_quant(c, A, n, ith, nth, pending, NULL, m->output_norm, ow, 1);
	dump(c, ith, "l_out", m->hp.n_layer - 1, c->x, n, E, E);
	dump(c, ith, "result_norm", -1, c->xn, n, E, E);
	if (J->out->hidden) {
		int64_t b, e;
		split(n, ith, nth, &b, &e); /* own: thread 0 copies its row */
		if (b < e)
			memcpy(J->out->hidden + (size_t)b * (size_t)E, A->xn + (size_t)b * (size_t)E,
			       (size_t)(e - b) * (size_t)E * sizeof(float));
	}
	if (!own)
		barrier(c);
	if (J->out->logits) {
		struct mm op_out = {&c->out_w, m->output.gt, A->xn, J->out->logits, c->n_vocab};
		mm_phase(c, A, ith, nth, &op_out, 1, n, &tickets);
		dump(c, ith, "result_output", -1, J->out->logits, n, c->n_vocab, c->n_vocab);
	}
}

static int cpu_forward(void *state, const struct rn_batch_cells *bc, const struct rn_outputs *out, struct rn_error *err)
{
	struct cpu *c = state;
	struct rn_outputs none = {0};
	struct job J = {.c = c, .bc = bc, .out = out ? out : &none, .n = bc->b.n_tokens};
	atomic_store_explicit(&c->mm_ticket, 0, memory_order_relaxed); /* published to the workers by rn_pool_run */
	rn_pool_run(c->pool, forward_job, &J);
	c->n_calls++;
	return RN_OK;
}

/* ---------------------------------------------------------------------------------------------------- */
/* KV operations */

static void cpu_kv_move(void *state, int seq, int src, int dst, int n)
{
	const struct cpu *c = state;
	rn_kv_store_move(&c->kv, c->pg, seq, src, dst, n);
}

static void cpu_kv_block_copy(void *state, int32_t src, int32_t dst, int n)
{
	rn_kv_store_block_copy(&((struct cpu *)state)->kv, src, dst, n);
}

struct rot_job {
	struct cpu *c;
	int seq, c0, c1;
	const float *cs;
};

static void rotate_job(void *ctx, int ith, int nth)
{
	struct rot_job *R = ctx;
	struct cpu *c = R->c;
	const int D = c->head_dim;
	float *buf = c->deq + (size_t)ith * (size_t)c->max_cols;
	int64_t per_layer = (int64_t)(R->c1 - R->c0) * c->n_head_kv;
	int64_t b, e;
	split(per_layer * c->m->hp.n_layer, ith, nth, &b, &e);
	for (int64_t t = b; t < e; t++) {
		int l = (int)(t / per_layer), r = (int)(t % per_layer);
		int cell = R->c0 + r / c->n_head_kv, g = r % c->n_head_kv;
		uint8_t *p = rn_kv_store_row(&c->kv, c->pg, l, 0, R->seq, cell) + (size_t)g * c->kv.head_bytes;
		kv_load(c, buf, p, D);
		rn_rope_apply(&c->rope, R->cs, buf, 1.0f);
		kv_store(c, p, buf, D);
	}
}

static int cpu_kv_rotate(void *state, int seq, int c0, int c1, int32_t delta, struct rn_error *err)
{
	struct cpu *c = state;
	/* a pure rotation by delta positions: YaRN's magnitude scale was applied when the key was stored and
	 * must not be applied twice, so the cos/sin table is renormalised to unit length */
	float *cs = malloc((size_t)c->rope.n_rot * sizeof *cs);
	if (!cs)
		return rn_error_set(err, RN_ERR_NOMEM, "out of memory");
	rn_rope_cos_sin(&c->rope, delta, cs);
	for (int i = 0; i < c->rope.n_rot / 2; i++) {
		float r = sqrtf(cs[2 * i] * cs[2 * i] + cs[2 * i + 1] * cs[2 * i + 1]);
		if (r > 0) {
			cs[2 * i] /= r;
			cs[2 * i + 1] /= r;
		}
	}
	struct rot_job R = {.c = c, .seq = seq, .c0 = c0, .c1 = c1, .cs = cs};
	rn_pool_run(c->pool, rotate_job, &R);
	free(cs);
	return RN_OK;
}

/* The slots' KV (n_seq sequences of blocks_per_seq blocks, every layer, keys and values), not the whole pool's
 * reservation: the blocks beyond are the prefix cache's, reported by rn_backend_cache_stats as they fill. */
static uint64_t cpu_memory(const void *state)
{
	const struct cpu *c = state;
	const uint64_t slots = (uint64_t)c->p.n_seq * (uint64_t)c->pg->blocks_per_seq * 2u * (uint64_t)c->kv.n_layer *
			       (uint64_t)c->kv.block_bytes;
	return slots + (uint64_t)c->scratch_bytes + (uint64_t)c->wcopy_bytes;
}

static uint64_t cpu_copied(const void *state)
{
	return ((const struct cpu *)state)->wcopy_bytes;
}

/* ---------------------------------------------------------------------------------------------------- */
/* load / free */

static void cpu_free(void *state)
{
	struct cpu *c = state;
	if (!c)
		return;
	rn_pool_free(c->pool);
	rn_kv_store_free(&c->kv);
	if (c->wcopy)
		munmap(c->wcopy, c->wcopy_bytes);
	free(c->layers);
	free(c->x);
	free(c->xn);
	free(c->tmp);
	free(c->q);
	free(c->k);
	free(c->v);
	free(c->att);
	free(c->hb);
	free(c->hb2);
	free(c->cs);
	free(c->scores);
	free(c->split_s);
	free(c->deq);
	for (int t = 0; c->own && t < c->nth; t++) {
		struct acts *A = &c->own[t];
		free(A->x);
		free(A->xn);
		free(A->hb);
		for (int i = 0; i < MAX_KINDS; i++)
			free(A->act[i]);
		free(A->act_f16);
		free(A->act_bf16);
	}
	free(c->own);
	for (int i = 0; i < MAX_KINDS; i++)
		free(c->shared.act[i]);
	free(c->shared.act_f16);
	free(c->shared.act_bf16);
	free(c);
}

static int bind_weight(const struct rn_tensor *t, struct rn_weight *w, struct rn_error *err)
{
	memset(w, 0, sizeof *w);
	struct rn_mm_error me = {{0}};
	int rc = t->gt ? rn_mm_weight_from_tensor(t->gt, w, &me) : RN_MM_EUNSUPPORTED;
	if (rc == RN_MM_EUNSUPPORTED)
		return rn_error_set(err, RN_ERR_TYPE, "tensor '%s' has type %s, which the CPU backend cannot multiply",
				    t->name, gguf_type_name(t->type));
	if (rc != RN_MM_OK)
		return rn_error_set(err, RN_ERR_TENSOR, "tensor '%s': %s", t->name, me.msg);
	return RN_OK;
}

/* use_mmap false: copies the matrix weights into anonymous memory asking for transparent huge pages, and lets the
 * file mapping's pages of those ranges go (the page cache keeps them); a type with a layout the kernels read
 * faster is repacked on the way (rn_mm_repack: the legacy formats, same size, same results to the bit). Decode
 * reads every weight once per token, and with 4 KiB pages of a file mapping each page is a TLB miss, a two-level
 * walk under a hypervisor: measured on the 2-core test machine, qwen2 decode +8-15 % before repacking. A copy
 * fails softly: the weights stay in place. */
#define HUGE_PAGE ((size_t)2 << 20)
static void copy_weights(struct cpu *c)
{
	const struct rn_model *m = c->m;
	const int L = m->hp.n_layer;
	const size_t nw = (size_t)L * 7 + 1;
	struct rn_weight **ws = malloc(nw * sizeof *ws);
	const struct gguf_tensor **gts = malloc(nw * sizeof *gts);
	if (!ws || !gts) {
		free(ws);
		free(gts);
		return;
	}
	size_t k = 0, total = 0;
	for (int l = 0; l < L; l++) {
		struct cpu_layer *cl = &c->layers[l];
		const struct rn_layer *ml = &m->layers[l];
		struct rn_weight *lw[7] = {&cl->wq, &cl->wk, &cl->wv, &cl->wo, &cl->gate, &cl->up, &cl->down};
		const struct rn_tensor *lt[7] = {&ml->wq, &ml->wk, &ml->wv, &ml->wo, &ml->w_gate, &ml->w_up, &ml->w_down};
		for (int i = 0; i < 7; i++) {
			gts[k] = lt[i]->gt;
			ws[k++] = lw[i];
		}
	}
	gts[k] = m->output.gt;
	ws[k++] = &c->out_w;
	for (size_t i = 0; i < k; i++)
		total += ((size_t)ws[i]->rows * rn_mm_row_bytes(ws[i]->type, ws[i]->cols) + 63) & ~(size_t)63;
	/* a huge-page-aligned region: map one page more and trim */
	size_t bytes = (total + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
	uint8_t *raw = mmap(NULL, bytes + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED) {
		free(ws);
		free(gts);
		return;
	}
	uint8_t *base = (uint8_t *)(((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
	if (base > raw)
		munmap(raw, (size_t)(base - raw));
	if (base + bytes < raw + bytes + HUGE_PAGE)
		munmap(base + bytes, (size_t)(raw + bytes + HUGE_PAGE - (base + bytes)));
	(void)madvise(base, bytes, MADV_HUGEPAGE);
	size_t off = 0;
	for (size_t i = 0; i < k; i++) {
		const size_t n = (size_t)ws[i]->rows * rn_mm_row_bytes(ws[i]->type, ws[i]->cols);
		const int rt = rn_mm_repack_type(ws[i]->type);
		if (rt != ws[i]->type) {
			rn_mm_repack(ws[i], base + off);
			ws[i]->type = rt;
		} else {
			memcpy(base + off, ws[i]->data, n);
		}
		ws[i]->data = base + off;
		off += (n + 63) & ~(size_t)63;
		if (gts[i])
			gguf_tensor_release(m->gguf, gts[i]); /* the mapped pages of the source leave this process */
	}
	(void)mprotect(base, bytes, PROT_READ);
	c->wcopy = base;
	c->wcopy_bytes = bytes;
	free(ws);
	free(gts);
}

static void *xalloc(struct cpu *c, size_t n, size_t size)
{
	size_t bytes = n * size;
	c->scratch_bytes += bytes;
	return aligned_alloc(64, (bytes + 63) & ~(size_t)63);
}

static int cpu_load_paged(const struct rn_model *m, const struct rn_load_params *p, const struct rn_kv_pages *pg,
			  void **state, struct rn_error *err)
{
	const struct rn_hparams *hp = &m->hp;
	struct cpu *c = aligned_alloc(64, (sizeof *c + 63) & ~(size_t)63); /* mm_ticket has a cache line of its own */
	if (!c)
		return rn_error_set(err, RN_ERR_NOMEM, "out of memory");
	memset(c, 0, sizeof *c);
	atomic_init(&c->mm_ticket, 0);
	int rc = RN_OK;
	c->m = m;
	c->p = *p;
	c->pg = pg;
	const char *ref = getenv("ORUN_CPU_REFERENCE");
	c->reference = ref && *ref && strcmp(ref, "0") != 0;
	const char *dd = getenv("ORUN_CPU_DUMP");
	if (dd && *dd) {
		snprintf(c->dump_dir, sizeof c->dump_dir, "%s", dd);
		char *colon = strrchr(c->dump_dir, ':');
		if (colon) {
			*colon = 0;
			c->dump_call = atol(colon + 1);
		}
	}
	rn_rope_init(&c->rope, m, p->rope_freq_base, p->rope_freq_scale);
	c->n_embd = hp->n_embd;
	c->n_head = hp->n_head;
	c->n_head_kv = hp->n_head_kv;
	c->head_dim = hp->head_dim;
	c->q_dim = hp->n_head * hp->head_dim;
	c->kv_dim = hp->n_head_kv * hp->head_dim;
	c->n_ff = hp->n_ff;
	c->n_vocab = hp->n_vocab;
	c->kq_scale = 1.0f / sqrtf((float)hp->head_dim);
	c->max_cols = c->n_embd;
	if (c->q_dim > c->max_cols)
		c->max_cols = c->q_dim;
	if (c->n_ff > c->max_cols)
		c->max_cols = c->n_ff;

	c->layers = calloc((size_t)hp->n_layer, sizeof *c->layers);
	if (!c->layers) {
		rc = rn_error_set(err, RN_ERR_NOMEM, "out of memory");
		goto fail;
	}
	for (int l = 0; l < hp->n_layer; l++) {
		const struct rn_layer *ml = &m->layers[l];
		struct cpu_layer *cl = &c->layers[l];
		if ((rc = bind_weight(&ml->wq, &cl->wq, err)) || (rc = bind_weight(&ml->wk, &cl->wk, err)) ||
		    (rc = bind_weight(&ml->wv, &cl->wv, err)) || (rc = bind_weight(&ml->wo, &cl->wo, err)) ||
		    (rc = bind_weight(&ml->w_gate, &cl->gate, err)) || (rc = bind_weight(&ml->w_up, &cl->up, err)) ||
		    (rc = bind_weight(&ml->w_down, &cl->down, err)))
			goto fail;
	}
	if ((rc = bind_weight(&m->output, &c->out_w, err)))
		goto fail;
	if (p->no_mmap && !c->reference)
		copy_weights(c);
	{
		const struct gguf_type_info *ti = gguf_type_get(m->tok_embd.type);
		if (!ti || !ti->dequant || c->n_embd % (int)ti->block_elems != 0) {
			rc = rn_error_set(err, RN_ERR_TYPE, "token_embd.weight (%s) cannot be read row by row",
					  gguf_type_name(m->tok_embd.type));
			goto fail;
		}
		if (m->tok_embd.type == GGUF_TYPE_FP8_E4M3_B128) {
			rc = rn_error_set(err, RN_ERR_TYPE, "an FP8 token_embd.weight is not supported by the CPU backend");
			goto fail;
		}
	}

	int perr = rn_pool_new(p->n_threads, &c->pool);
	if (perr != 0) {
		rc = rn_error_set(err, RN_ERR_BACKEND, "cannot start %d CPU threads (error %d)", p->n_threads, perr);
		goto fail;
	}
	c->nth = rn_pool_size(c->pool);

	rc = rn_kv_store_init(&c->kv, p->kv_type, hp->n_layer, pg->n_blocks, c->kv_dim, c->head_dim, err);
	if (rc != RN_OK)
		goto fail;

	const size_t B = (size_t)p->n_batch;
	c->x = xalloc(c, B * (size_t)c->n_embd, sizeof(float));
	c->xn = xalloc(c, B * (size_t)c->n_embd, sizeof(float));
	c->tmp = xalloc(c, B * (size_t)c->n_embd, sizeof(float));
	c->q = xalloc(c, B * (size_t)c->q_dim, sizeof(float));
	c->k = xalloc(c, B * (size_t)c->kv_dim, sizeof(float));
	c->v = xalloc(c, B * (size_t)c->kv_dim, sizeof(float));
	c->att = xalloc(c, B * (size_t)c->q_dim, sizeof(float));
	c->hb = xalloc(c, B * (size_t)c->n_ff, sizeof(float));
	c->hb2 = xalloc(c, B * (size_t)c->n_ff, sizeof(float));
	c->cs = xalloc(c, B * (size_t)c->rope.n_rot, sizeof(float));
	c->att_scratch = rn_attn_scratch_floats(c->n_head / c->n_head_kv, c->head_dim, p->n_ctx);
	c->scores = xalloc(c, (size_t)c->nth * c->att_scratch, sizeof(float));
	c->split_s = xalloc(c, (size_t)c->n_head * (size_t)p->n_ctx, sizeof(float));
	c->deq = xalloc(c, (size_t)c->nth * (size_t)c->max_cols, sizeof(float));
	bool has_f16 = c->out_w.type == RN_MM_F16, has_bf16 = c->out_w.type == RN_MM_BF16;
	for (int l = 0; l < hp->n_layer; l++) {
		const struct rn_weight *ws[7] = {&c->layers[l].wq, &c->layers[l].wk, &c->layers[l].wv, &c->layers[l].wo,
						 &c->layers[l].gate, &c->layers[l].up, &c->layers[l].down};
		for (int i = 0; i < 7; i++) {
			has_f16 |= ws[i]->type == RN_MM_F16;
			has_bf16 |= ws[i]->type == RN_MM_BF16;
		}
	}
	c->shared.x = c->x;
	c->shared.xn = c->xn;
	c->shared.hb = c->hb;
	if (has_f16)
		c->shared.act_f16 = xalloc(c, B * (size_t)c->max_cols, sizeof(float));
	if (has_bf16)
		c->shared.act_bf16 = xalloc(c, B * (size_t)c->max_cols, sizeof(float));
	bool ok = (!has_f16 || c->shared.act_f16) && (!has_bf16 || c->shared.act_bf16) && c->split_s && c->x && c->xn &&
		  c->tmp && c->q && c->k && c->v && c->att && c->hb && c->hb2 && c->cs && c->scores && c->deq;
	if (ok && c->nth > 1 && !c->reference) {
		c->own = calloc((size_t)c->nth, sizeof *c->own);
		ok = c->own != NULL;
		for (int t = 0; ok && t < c->nth; t++) {
			struct acts *A = &c->own[t];
			A->x = xalloc(c, (size_t)c->n_embd, sizeof(float));
			A->xn = xalloc(c, (size_t)c->n_embd, sizeof(float));
			A->hb = xalloc(c, (size_t)c->n_ff, sizeof(float));
			if (has_f16)
				A->act_f16 = xalloc(c, (size_t)c->max_cols, sizeof(float));
			if (has_bf16)
				A->act_bf16 = xalloc(c, (size_t)c->max_cols, sizeof(float));
			ok = A->x && A->xn && A->hb && (!has_f16 || A->act_f16) && (!has_bf16 || A->act_bf16);
		}
	}
	for (int k = RN_ACT_Q8_32; k <= RN_ACT_Q8_256 && ok; k++) {
		size_t rb = rn_act_row_bytes((enum rn_act_kind)k, c->max_cols);
		/* max_cols may not be a multiple of 256 while every matrix's cols is: size for the largest real cols */
		size_t rb_e = rn_act_row_bytes((enum rn_act_kind)k, c->n_embd);
		size_t rb_q = rn_act_row_bytes((enum rn_act_kind)k, c->q_dim);
		size_t rb_f = rn_act_row_bytes((enum rn_act_kind)k, c->n_ff);
		if (rb_e > rb)
			rb = rb_e;
		if (rb_q > rb)
			rb = rb_q;
		if (rb_f > rb)
			rb = rb_f;
		if (rb == 0)
			continue;
		c->shared.act[k] = xalloc(c, B, rb);
		ok = c->shared.act[k] != NULL;
		for (int t = 0; ok && c->own && t < c->nth; t++)
			ok = (c->own[t].act[k] = xalloc(c, 1, rb)) != NULL;
	}
	if (!ok) {
		rc = rn_error_set(err, RN_ERR_NOMEM, "out of memory for the batch buffers (num_batch %d)", p->n_batch);
		goto fail;
	}
	*state = c;
	return RN_OK;
fail:
	cpu_free(c);
	return rc;
}

static int cpu_device_count(void) { return 1; }

const struct rn_backend_ops rn_cpu_backend_ops = {
	.name = "cpu",
	.device_prefix = "CPU",
	.device_count = cpu_device_count,
	.load_paged = cpu_load_paged,
	.free = cpu_free,
	.forward = cpu_forward,
	.kv_move = cpu_kv_move,
	.kv_rotate = cpu_kv_rotate,
	.kv_copy = NULL, /* runner/backend.c shares blocks instead */
	.kv_block_copy = cpu_kv_block_copy,
	.memory = cpu_memory,
	.copied = cpu_copied,
};
