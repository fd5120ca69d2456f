/* runner/cpu/attention.c — attention over cached f16 / q8_0 keys and values for the CPU backend.
 *
 * All query heads that share a KV head are processed together, cells in blocks of ATT_BLOCK converted once
 * to f32, so each cached row is read and converted once per group instead of once per head. The split-K
 * functions let the forward pass divide one long row's cells between threads (decode at long context).
 */
#include "config.h"

#include <string.h>

#include "runner/cpu/attention.h"
#include "runner/cpu/ops.h"

#define ATT_BLOCK 32 /* cells converted to f32 at a time */

size_t rn_attn_block_floats(int head_dim) { return (size_t)ATT_BLOCK * (size_t)head_dim; }

size_t rn_attn_scratch_floats(int group, int head_dim, int n_ctx)
{
	return rn_attn_block_floats(head_dim) + (size_t)group * (size_t)n_ctx;
}

/* Rows [c0, c1) of a K or V head as f32, c1 - c0 <= ATT_BLOCK. */
static void load_block(const uint8_t *base, size_t stride, enum rn_kv_type t, int c0, int c1, int d, float *dst)
{
	for (int j = c0; j < c1; j++, dst += d) {
		const uint8_t *row = base + (size_t)j * stride;
		if (t == RN_KV_Q8_0)
			rn_ops_load_q8_0(dst, row, d);
		else
			rn_ops_load_f16(dst, (const uint16_t *)row, d);
	}
}

void rn_attn_scores(const struct rn_attn_kv *kv, int c0, int c1, int group, int d, float scale, const float *q,
		    size_t q_stride, float *s, size_t s_stride, float *scratch)
{
	for (int j0 = c0; j0 < c1; j0 += ATT_BLOCK) {
		int j1 = j0 + ATT_BLOCK < c1 ? j0 + ATT_BLOCK : c1;
		load_block(kv->k, kv->stride, kv->type, j0, j1, d, scratch);
		for (int h = 0; h < group; h++) {
			const float *qh = q + (size_t)h * q_stride;
			float *sh = s + (size_t)h * s_stride;
			for (int j = j0; j < j1; j++)
				sh[j] = rn_ops_dot_f32(qh, scratch + (size_t)(j - j0) * (size_t)d, d) * scale;
		}
	}
}

void rn_attn_softmax(float *s, int nc)
{
	float m = rn_ops_max(s, nc);
	float sum = rn_ops_exp_sum(s, nc, m);
	rn_ops_scale_round_f16(s, s, (float)(1.0 / (double)sum), nc);
}

void rn_attn_values(const struct rn_attn_kv *kv, int c0, int c1, int group, int d, const float *p, size_t p_stride,
		    float *out, size_t out_stride, float *scratch)
{
	for (int h = 0; h < group; h++)
		memset(out + (size_t)h * out_stride, 0, (size_t)d * sizeof(float));
	for (int j0 = c0; j0 < c1; j0 += ATT_BLOCK) {
		int j1 = j0 + ATT_BLOCK < c1 ? j0 + ATT_BLOCK : c1;
		load_block(kv->v, kv->stride, kv->type, j0, j1, d, scratch);
		for (int h = 0; h < group; h++) {
			const float *ph = p + (size_t)h * p_stride;
			float *oh = out + (size_t)h * out_stride;
			for (int j = j0; j < j1; j++)
				if (ph[j] != 0)
					rn_ops_axpy_f32(oh, ph[j], scratch + (size_t)(j - j0) * (size_t)d, d);
		}
	}
}

void rn_attn_group(const struct rn_attn_kv *kv, int nc, int group, int d, float scale, const float *q,
		   size_t q_stride, float *out, size_t out_stride, float *scratch)
{
	float *blk = scratch, *s = scratch + rn_attn_block_floats(d);
	rn_attn_scores(kv, 0, nc, group, d, scale, q, q_stride, s, (size_t)nc, blk);
	for (int h = 0; h < group; h++)
		rn_attn_softmax(s + (size_t)h * (size_t)nc, nc);
	rn_attn_values(kv, 0, nc, group, d, s, (size_t)nc, out, out_stride, blk);
}
