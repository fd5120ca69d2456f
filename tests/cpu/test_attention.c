/* tests/cpu/test_attention.c — the attention kernels' summation orders do not depend on how the cells are
 * grouped: one-token scores computed 8 cells at a time (dot_decode8) equal each cell's alone to the bit, for
 * head sizes that take the 8-cell path and for one that does not, and the whole-group entry equals the
 * split-K pieces.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "runner/cpu/attention.h"
#include "tests/check.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;

static float unit(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (float)(rng >> 40) / 8388608.0f - 1.0f; /* [-1, 1) */
}

static void test_scores(int d, int nc, int group, bool prefill)
{
	const size_t stride = (size_t)d * 2 + 32; /* cells not packed back to back, as in a real cache row */
	uint8_t *k = malloc(stride * (size_t)nc), *v = malloc(stride * (size_t)nc);
	float *q = malloc(sizeof(float) * (size_t)(group * d));
	float *sa = malloc(sizeof(float) * (size_t)(group * nc)), *sb = malloc(sizeof(float) * (size_t)(group * nc));
	float *scratch = malloc(sizeof(float) * rn_attn_scratch_floats(group, d, nc));
	float *oa = malloc(sizeof(float) * (size_t)(group * d)), *ob = malloc(sizeof(float) * (size_t)(group * d));
	for (int j = 0; j < nc; j++)
		for (int i = 0; i < d; i++) {
			uint16_t hk = gguf_f32_to_f16(unit() * 3), hv = gguf_f32_to_f16(unit());
			memcpy(k + (size_t)j * stride + 2 * (size_t)i, &hk, 2);
			memcpy(v + (size_t)j * stride + 2 * (size_t)i, &hv, 2);
		}
	for (int i = 0; i < group * d; i++)
		q[i] = unit();
	const struct rn_attn_kv kv = {.k = k, .v = v, .stride = stride, .type = RN_KV_F16};
	const float scale = 1.0f / sqrtf((float)d);
	rn_attn_scores(&kv, 0, nc, group, d, scale, q, (size_t)d, sa, (size_t)nc, scratch, prefill);
	for (int j = 0; j < nc; j++)
		rn_attn_scores(&kv, j, j + 1, group, d, scale, q, (size_t)d, sb, (size_t)nc, scratch, prefill);
	int nonzero = 0;
	for (int i = 0; i < group * nc; i++)
		nonzero += sa[i] != 0.0f && isfinite(sa[i]);
	CHECKF(nonzero == group * nc, "d=%d nc=%d: %d of %d scores finite and nonzero", d, nc, nonzero, group * nc);
	CHECKF(memcmp(sa, sb, sizeof(float) * (size_t)(group * nc)) == 0,
	       "d=%d nc=%d group=%d %s: scores of all cells at once differ from each cell alone", d, nc, group,
	       prefill ? "batch" : "one token");
	/* ranges starting anywhere (the split-K pieces of the forward pass) */
	for (int c0 = 0; c0 < nc; c0 += 13) {
		const int c1 = c0 + 13 < nc ? c0 + 13 : nc;
		rn_attn_scores(&kv, c0, c1, group, d, scale, q, (size_t)d, sb, (size_t)nc, scratch, prefill);
	}
	CHECKF(memcmp(sa, sb, sizeof(float) * (size_t)(group * nc)) == 0, "d=%d nc=%d: split ranges differ", d, nc);
	/* the whole-group entry equals scores + softmax + values done by hand */
	rn_attn_group(&kv, nc, group, d, scale, q, (size_t)d, oa, (size_t)d, scratch, prefill);
	for (int h = 0; h < group; h++)
		rn_attn_softmax(sa + (size_t)h * (size_t)nc, nc);
	rn_attn_values(&kv, nc, 0, d, group, d, sa, (size_t)nc, ob, (size_t)d, scratch, prefill);
	CHECKF(memcmp(oa, ob, sizeof(float) * (size_t)(group * d)) == 0, "d=%d nc=%d: rn_attn_group differs", d, nc);
	free(k);
	free(v);
	free(q);
	free(sa);
	free(sb);
	free(scratch);
	free(oa);
	free(ob);
}

int main(void)
{
	static const int ds[] = {64, 128, 96, 72};
	static const int ncs[] = {1, 7, 8, 9, 45, 300};
	for (size_t a = 0; a < sizeof ds / sizeof ds[0]; a++)
		for (size_t b = 0; b < sizeof ncs / sizeof ncs[0]; b++) {
			test_scores(ds[a], ncs[b], 3, false);
			test_scores(ds[a], ncs[b], 1, true);
		}
	return check_done();
}
