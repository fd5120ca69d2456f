/* runner/cpu/attention.h — causal attention of query heads over the CPU KV cache (internal to runner/cpu).
 *
 * Numerics follow llama.cpp's standard attention so that both engines agree to float rounding: keys and
 * values are f16 (or q8_0) rows, the query is rounded to f16 by the caller, the softmax is computed in f32
 * and each probability rounded to f16 before it weights the values, sums in f32 in the order of llama.cpp's
 * batched matmuls (a prompt's) for every query, a decode step's included.
 */
#ifndef ORUN_RUNNER_CPU_ATTENTION_H
#define ORUN_RUNNER_CPU_ATTENTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runner/kvcache.h"

/* The cached rows of one KV head of one sequence in one layer, in blocks of RN_KV_BLOCK cells found through the
 * sequence's block table (runner/kvcache.h): cell j's key is k + table[j / RN_KV_BLOCK] * block_bytes +
 * (j % RN_KV_BLOCK) * stride, its value the same from v. */
struct rn_attn_kv {
	const uint8_t *k;     /* this head's part of the first row of block 0 of the layer's keys */
	const uint8_t *v;     /* the same in the layer's values */
	const int32_t *table; /* the sequence's blocks, one per RN_KV_BLOCK cells (every cell read is attached) */
	size_t block_bytes;   /* bytes from one block to the next */
	size_t stride;        /* bytes from one cell to the next inside a block */
	enum rn_kv_type type;
};

/* Floats of per-thread scratch rn_attn_group needs; the split-K helpers need only the first
 * rn_attn_block_floats(head_dim) (at least 32 x head_dim).
 *
 * Every entry sums in one order whatever the cells' grouping (all at once, in ranges, one at a time) and
 * whoever calls (a prompt's rows, a decode step, the split-K pieces): a query's result depends only on the query
 * and the cells, never on the batch it came in. */
size_t rn_attn_scratch_floats(int group, int head_dim, int n_ctx);
size_t rn_attn_block_floats(int head_dim);

/* out[h] (h < group, rows out_stride floats apart) = attention of query q[h] (rows q_stride apart, already
 * rounded to f16) over cells [0, nc). */
void rn_attn_group(const struct rn_attn_kv *kv, int nc, int group, int head_dim, float scale, const float *q,
		   size_t q_stride, float *out, size_t out_stride, float *scratch);

/* Split-K pieces for one long row: scaled scores s[h][j] for cells [c0, c1); then, once every score of a
 * head is in, probabilities in place (softmax over [0, nc), each rounded to f16); then elements [d0, d1) of
 * out[h] (overwritten; d0, d1 multiples of 8 for the fast path): the values of all cells [0, nc) weighted by
 * those probabilities. Splitting the values by output elements rather than by cells keeps each element's sum
 * in one order. */
void rn_attn_scores(const struct rn_attn_kv *kv, int c0, int c1, int group, int head_dim, float scale, const float *q,
		    size_t q_stride, float *s, size_t s_stride, float *scratch);
void rn_attn_softmax(float *s, int nc);
void rn_attn_values(const struct rn_attn_kv *kv, int nc, int d0, int d1, int group, int head_dim, const float *p,
		    size_t p_stride, float *out, size_t out_stride, float *scratch);

#endif
