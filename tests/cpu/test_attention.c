/* tests/cpu/test_attention.c — the attention kernels sum in one order whatever the grouping of the cells: scores
 * of all cells at once equal each cell's alone and those of arbitrary ranges to the bit, for head sizes that take
 * the fast f16 path and for one that does not; the whole-group entry equals the split-K pieces; and, where the
 * AVX2 f16 path runs, its scores and weighted values equal a scalar model of llama.cpp's batched order (one
 * 8-lane FMA accumulator per dot product reduced (l + h) pairwise; values summed in 8 classes of cells) to the bit.
 * The cells lie in blocks of RN_KV_BLOCK in scrambled order behind a block table, as in the paged cache.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "runner/cpu/attention.h"
#include "runner/cpu/features.h"
#include "tests/check.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;

static float unit(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (float)(rng >> 40) / 8388608.0f - 1.0f; /* [-1, 1) */
}

static float h2f(const uint8_t *p)
{
	uint16_t h;
	memcpy(&h, p, 2);
	return gguf_f16_to_f32(h);
}

/* The paged layout of the cache (runner/kvcache.h): cell j's row in block table[j / RN_KV_BLOCK]. */
struct layout {
	const int32_t *table;
	size_t stride, block_bytes;
};

static const uint8_t *cell(const struct layout *L, const uint8_t *base, int j)
{
	return base + (size_t)L->table[j / RN_KV_BLOCK] * L->block_bytes + (size_t)(j % RN_KV_BLOCK) * L->stride;
}

/* q . k in the batched order: lanes l = i % 8 each an FMA chain, then y[l] = a[l] + a[l + 4], then
 * (y0 + y2) + (y1 + y3). */
static float model_dot(const float *q, const uint8_t *k, int d)
{
	float a[8] = {0};
	for (int i = 0; i < d; i += 8)
		for (int l = 0; l < 8; l++)
			a[l] = fmaf(q[i + l], h2f(k + 2 * (size_t)(i + l)), a[l]);
	float y[4];
	for (int l = 0; l < 4; l++)
		y[l] = a[l] + a[l + 4];
	return (y[0] + y[2]) + (y[1] + y[3]);
}

/* element o of sum_j p[j] v_j in the batched order: classes j % 8, each an FMA chain over its cells, then
 * ((c0 + c4) + (c2 + c6)) + ((c1 + c5) + (c3 + c7)). */
static float model_value(const struct layout *L, const uint8_t *v, int nc, int o, const float *p)
{
	float a[8] = {0};
	for (int j = 0; j < nc; j++)
		a[j % 8] = fmaf(h2f(cell(L, v, j) + 2 * (size_t)o), p[j], a[j % 8]);
	float h0 = a[0] + a[4], h1 = a[1] + a[5], h2 = a[2] + a[6], h3 = a[3] + a[7];
	return (h0 + h2) + (h1 + h3);
}

static void test_scores(int d, int nc, int group)
{
	const size_t stride = (size_t)d * 2 + 32; /* cells not packed back to back, as in a real cache row */
	/* the blocks in reverse order, one unused block first: every step from a block to the next jumps */
	const int nb = (nc + RN_KV_BLOCK - 1) / RN_KV_BLOCK;
	int32_t *table = malloc(sizeof(int32_t) * (size_t)nb);
	for (int b = 0; b < nb; b++)
		table[b] = nb - b;
	const struct layout L = {table, stride, stride * RN_KV_BLOCK};
	uint8_t *k = calloc((size_t)(nb + 1), L.block_bytes), *v = calloc((size_t)(nb + 1), L.block_bytes);
	float *q = malloc(sizeof(float) * (size_t)(group * d));
	float *sa = malloc(sizeof(float) * (size_t)(group * nc)), *sb = malloc(sizeof(float) * (size_t)(group * nc));
	float *scratch = malloc(sizeof(float) * rn_attn_scratch_floats(group, d, nc));
	float *oa = malloc(sizeof(float) * (size_t)(group * d)), *ob = malloc(sizeof(float) * (size_t)(group * d));
	for (int j = 0; j < nc; j++)
		for (int i = 0; i < d; i++) {
			uint16_t hk = gguf_f32_to_f16(unit() * 3), hv = gguf_f32_to_f16(unit());
			memcpy((uint8_t *)cell(&L, k, j) + 2 * (size_t)i, &hk, 2);
			memcpy((uint8_t *)cell(&L, v, j) + 2 * (size_t)i, &hv, 2);
		}
	for (int i = 0; i < group * d; i++)
		q[i] = gguf_f16_to_f32(gguf_f32_to_f16(unit())); /* the forward pass rounds the query to f16 */
	const struct rn_attn_kv kv = {
		.k = k, .v = v, .table = table, .block_bytes = L.block_bytes, .stride = stride, .type = RN_KV_F16};
	const float scale = 1.0f / sqrtf((float)d);
	rn_attn_scores(&kv, 0, nc, group, d, scale, q, (size_t)d, sa, (size_t)nc, scratch);
	for (int j = 0; j < nc; j++)
		rn_attn_scores(&kv, j, j + 1, group, d, scale, q, (size_t)d, sb, (size_t)nc, scratch);
	int nonzero = 0;
	for (int i = 0; i < group * nc; i++)
		nonzero += sa[i] != 0.0f && isfinite(sa[i]);
	CHECKF(nonzero == group * nc, "d=%d nc=%d: %d of %d scores finite and nonzero", d, nc, nonzero, group * nc);
	CHECKF(memcmp(sa, sb, sizeof(float) * (size_t)(group * nc)) == 0,
	       "d=%d nc=%d group=%d: scores of all cells at once differ from each cell alone", d, nc, group);
	/* ranges starting anywhere, and ranges of 32 (the split-K pieces of the forward pass) */
	static const int steps[] = {13, 32};
	for (size_t st = 0; st < sizeof steps / sizeof steps[0]; st++) {
		memset(sb, 0, sizeof(float) * (size_t)(group * nc));
		for (int c0 = 0; c0 < nc; c0 += steps[st]) {
			const int c1 = c0 + steps[st] < nc ? c0 + steps[st] : nc;
			rn_attn_scores(&kv, c0, c1, group, d, scale, q, (size_t)d, sb, (size_t)nc, scratch);
		}
		CHECKF(memcmp(sa, sb, sizeof(float) * (size_t)(group * nc)) == 0, "d=%d nc=%d: ranges of %d differ", d,
		       nc, steps[st]);
	}
	const bool fast = rn_cpu_features()->simd_ops && d % 8 == 0;
	if (fast) {
		int same = 0;
		for (int h = 0; h < group; h++)
			for (int j = 0; j < nc; j++) {
				float want = model_dot(q + (size_t)h * (size_t)d, cell(&L, k, j), d) * scale;
				same += memcmp(&want, &sa[(size_t)h * (size_t)nc + (size_t)j], sizeof want) == 0;
			}
		CHECKF(same == group * nc, "d=%d nc=%d: %d of %d scores equal the batched order's", d, nc, same,
		       group * nc);
	}
	/* the whole-group entry equals scores + softmax + values done by hand, and a values call per 8-element
	 * slice (the split-K division of the values) equals one for the whole head */
	rn_attn_group(&kv, nc, group, d, scale, q, (size_t)d, oa, (size_t)d, scratch);
	for (int h = 0; h < group; h++)
		rn_attn_softmax(sa + (size_t)h * (size_t)nc, nc);
	rn_attn_values(&kv, nc, 0, d, group, d, sa, (size_t)nc, ob, (size_t)d, scratch);
	CHECKF(memcmp(oa, ob, sizeof(float) * (size_t)(group * d)) == 0, "d=%d nc=%d: rn_attn_group differs", d, nc);
	if (d % 8 == 0) {
		memset(ob, 0, sizeof(float) * (size_t)(group * d));
		for (int h = 0; h < group; h++)
			for (int o = 0; o < d; o += 8)
				rn_attn_values(&kv, nc, o, o + 8, 1, d, sa + (size_t)h * (size_t)nc, (size_t)nc,
					       ob + (size_t)h * (size_t)d, (size_t)d, scratch);
		CHECKF(memcmp(oa, ob, sizeof(float) * (size_t)(group * d)) == 0, "d=%d nc=%d: slices differ", d, nc);
	}
	if (fast) {
		int same = 0;
		for (int h = 0; h < group; h++)
			for (int o = 0; o < d; o++) {
				float want = model_value(&L, v, nc, o, sa + (size_t)h * (size_t)nc);
				same += memcmp(&want, &oa[(size_t)h * (size_t)d + (size_t)o], sizeof want) == 0;
			}
		CHECKF(same == group * d, "d=%d nc=%d: %d of %d values equal the batched order's", d, nc, same, group * d);
	}
	free(table);
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
	static const int ds[] = {64, 128, 96, 72, 60};
	static const int ncs[] = {1, 7, 8, 9, 31, 32, 33, 45, 64, 300};
	for (size_t a = 0; a < sizeof ds / sizeof ds[0]; a++)
		for (size_t b = 0; b < sizeof ncs / sizeof ncs[0]; b++) {
			test_scores(ds[a], ncs[b], 3);
			test_scores(ds[a], ncs[b], 1);
		}
	return check_done();
}
