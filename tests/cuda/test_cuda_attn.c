/* tests/cuda/test_cuda_attn.c — the CUDA attention kernels against the CPU backend's attention.
 *
 * On the host (always, also without a GPU): rn_cuda_host_attn_check — the decode split plan (chunks of 32-cell
 * multiples covering each row exactly, at most T of them, grid splits that bound every row and grow with the
 * longest row), the decode cell loop (each cell read once, the bound warp-uniform) and the flash prefill's
 * causal bounds.
 *
 * On device 0 (skips (77) without one), against runner/cpu/attention.c's rn_attn_group on the same f16 / q8_0
 * cache (query rounded to f16 as the CPU forward pass rounds it):
 *   decode   Qwen3-14B's heads (40 / 8 x 128) at 1, 3, 257, 300, 1000, 5000 and 32,768 cells (odd chunk
 *            lengths, the split-K combine), rows of <= 64 cells (one chunk, no combine), several rows in one
 *            batch, f16 and q8_0; hpb 1 and 5; G = 8 (queries in shared memory), G = 7, head sizes 64 and
 *            256; a row gives the same bits alone, beside a 5,000-cell row and with 256 grid splits;
 *   prefill  1, 17, 300 and 2,048 tokens from cell 0; 300 tokens continuing 1,000 cached cells; two
 *            segments in one batch; f16 and q8_0; head sizes 64, 128, 256.
 * Tolerance: |gpu - cpu| <= 4e-3 x max|V| per output element. The CPU rounds each normalised probability to
 * f16 (relative 2^-11 = 4.9e-4); the decode kernel does not round them, the prefill kernel rounds the
 * unnormalised weights to f16 (q8_0 keys/values also to f16 in prefill), and both sum in another order, so
 * the expected difference is ~1e-3 x max|V| at most; 4e-3 leaves room for __expf. A wrong mask, a lost cell or
 * a bad combine moves outputs by ~1e-1. Every output element must be written (the output starts as NaN).
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "runner/cpu/attention.h"
#include "runner/cuda/cuda.h"
#include "tests/check.h"
#include "tests/cuda/wrand.h"

#define TOL 4e-3

/* One layer's cache in both layouts: the GPU's (f16 halves, or int8 values + f16 scales, planar) and the
 * CPU's (f16 halves, or ggml Q8_0 blocks of 34 bytes), from the same values. */
struct cache {
	int D, HK, kv_dim, n_ctx, n_seq, q8;
	uint16_t *kv16;      /* GPU f16 and CPU f16 (same layout) */
	int8_t *kv8;         /* GPU q8 values */
	uint16_t *kv8_d;     /* GPU q8 scales */
	uint8_t *cpu8;       /* CPU q8_0 rows */
	int32_t *table;      /* identity block table */
	float vmax;          /* max |V| as stored */
};

static void cache_free(struct cache *c)
{
	free(c->kv16);
	free(c->kv8);
	free(c->kv8_d);
	free(c->cpu8);
	free(c->table);
}

static void cache_init(struct cache *c, int D, int HK, int n_ctx, int n_seq, int q8, uint64_t seed)
{
	memset(c, 0, sizeof *c);
	c->D = D;
	c->HK = HK;
	c->kv_dim = D * HK;
	c->n_ctx = n_ctx;
	c->n_seq = n_seq;
	c->q8 = q8;
	const size_t vals = 2 * (size_t)n_seq * n_ctx * c->kv_dim;
	float *x = malloc(vals * sizeof *x);
	uint64_t s = seed;
	for (size_t i = 0; i < vals; i++)
		x[i] = wr_unif(&s);
	c->table = malloc(sizeof(int32_t) * (size_t)(n_ctx / 32 + 1));
	for (int b = 0; b <= n_ctx / 32; b++)
		c->table[b] = b;
	if (!q8) {
		c->kv16 = malloc(vals * 2);
		for (size_t i = 0; i < vals; i++) {
			c->kv16[i] = gguf_f32_to_f16(x[i]);
			const float v = fabsf(gguf_f16_to_f32(c->kv16[i]));
			if (i >= vals / 2 && v > c->vmax)
				c->vmax = v;
		}
	} else {
		c->kv8 = malloc(vals);
		c->kv8_d = malloc(vals / 32 * 2);
		c->cpu8 = malloc(vals / 32 * 34);
		for (size_t b = 0; b < vals / 32; b++) {
			float amax = 0.0f;
			for (int i = 0; i < 32; i++)
				amax = fmaxf(amax, fabsf(x[b * 32 + i]));
			const float d = amax / 127.0f, id = d > 0.0f ? 1.0f / d : 0.0f;
			const uint16_t dh = gguf_f32_to_f16(d);
			c->kv8_d[b] = dh;
			memcpy(c->cpu8 + b * 34, &dh, 2);
			for (int i = 0; i < 32; i++) {
				const int8_t q = (int8_t)lrintf(x[b * 32 + i] * id);
				c->kv8[b * 32 + i] = q;
				c->cpu8[b * 34 + 2 + i] = (uint8_t)q;
				const float v = fabsf(gguf_f16_to_f32(dh) * q);
				if (b * 32 >= vals / 2 && v > c->vmax)
					c->vmax = v;
			}
		}
	}
	free(x);
}

/* The CPU's view of (plane, seq, KV head g). */
static struct rn_attn_kv cpu_kv(const struct cache *c, int seq, int g)
{
	struct rn_attn_kv kv;
	memset(&kv, 0, sizeof kv);
	const size_t cells_k = (size_t)seq * c->n_ctx, cells_v = ((size_t)c->n_seq + seq) * c->n_ctx;
	if (!c->q8) {
		kv.stride = (size_t)c->kv_dim * 2;
		kv.k = (const uint8_t *)c->kv16 + cells_k * kv.stride + (size_t)g * c->D * 2;
		kv.v = (const uint8_t *)c->kv16 + cells_v * kv.stride + (size_t)g * c->D * 2;
		kv.type = RN_KV_F16;
	} else {
		kv.stride = (size_t)c->kv_dim / 32 * 34;
		kv.k = c->cpu8 + cells_k * kv.stride + (size_t)g * c->D / 32 * 34;
		kv.v = c->cpu8 + cells_v * kv.stride + (size_t)g * c->D / 32 * 34;
		kv.type = RN_KV_Q8_0;
	}
	kv.table = c->table;
	kv.block_bytes = kv.stride * RN_KV_BLOCK;
	return kv;
}

struct rows {
	int n, H;
	float *q;          /* [n][H x D] */
	int32_t *seq, *cell;
};

static void rows_init(struct rows *r, int n, int H, int D, uint64_t seed)
{
	r->n = n;
	r->H = H;
	r->q = malloc(sizeof(float) * (size_t)n * H * D);
	r->seq = calloc((size_t)n, sizeof(int32_t));
	r->cell = calloc((size_t)n, sizeof(int32_t));
	uint64_t s = seed;
	for (size_t i = 0; i < (size_t)n * H * D; i++)
		r->q[i] = 2.5f * wr_unif(&s);
}

static void rows_free(struct rows *r)
{
	free(r->q);
	free(r->seq);
	free(r->cell);
}

/* The CPU backend's attention of every row: out[n][H x D]. */
static void cpu_ref(const struct cache *c, const struct rows *r, float scale, float *out)
{
	const int D = c->D, G = r->H / c->HK, qd = r->H * D;
	float *qr = malloc(sizeof(float) * (size_t)qd);
	float *scr = malloc(sizeof(float) * rn_attn_scratch_floats(G, D, c->n_ctx));
	for (int i = 0; i < r->n; i++) {
		for (int k = 0; k < qd; k++)
			qr[k] = gguf_f16_to_f32(gguf_f32_to_f16(r->q[(size_t)i * qd + k]));
		for (int g = 0; g < c->HK; g++) {
			const struct rn_attn_kv kv = cpu_kv(c, r->seq[i], g);
			rn_attn_group(&kv, r->cell[i] + 1, G, D, scale, qr + (size_t)g * G * D, (size_t)D,
				      out + (size_t)i * qd + (size_t)g * G * D, (size_t)D, scr);
		}
	}
	free(qr);
	free(scr);
}

static int run_gpu(const struct cache *c, const struct rows *r, float scale, int prefill, int hpb, int splits,
		   float *out, const char *what)
{
	struct rn_cuda_attn_test t;
	memset(&t, 0, sizeof t);
	t.head_dim = c->D;
	t.n_head = r->H;
	t.n_head_kv = c->HK;
	t.n_ctx = c->n_ctx;
	t.n_seq = c->n_seq;
	t.q8 = c->q8;
	t.kv16 = c->kv16;
	t.kv8 = c->kv8;
	t.kv8_d = c->kv8_d;
	t.n = r->n;
	t.q = r->q;
	t.seq = r->seq;
	t.cell = r->cell;
	t.scale = scale;
	t.prefill = prefill;
	t.hpb = hpb;
	t.splits = splits;
	char msg[512];
	const int rc = rn_cuda_test_attention(&t, out, msg, sizeof msg);
	CHECKF(rc == 0, "%s: %s", what, msg);
	return rc;
}

/* Compare with the CPU; returns the largest difference / max|V|. */
static double compare(const struct cache *c, const struct rows *r, const float *gpu, const float *cpu,
		      const char *what)
{
	const size_t total = (size_t)r->n * r->H * c->D;
	double worst = 0.0;
	size_t at = 0, nan = 0;
	for (size_t i = 0; i < total; i++) {
		if (!isfinite(gpu[i])) {
			nan++;
			continue;
		}
		const double d = fabs((double)gpu[i] - cpu[i]) / c->vmax;
		if (d > worst) {
			worst = d;
			at = i;
		}
	}
	const size_t qd = (size_t)r->H * c->D;
	CHECKF(nan == 0, "%s: %zu of %zu outputs not finite (unwritten or NaN)", what, nan, total);
	CHECKF(worst <= TOL, "%s: max |gpu - cpu| / max|V| = %.3g at row %zu head %zu dim %zu (gpu %g cpu %g)", what,
	       worst, at / qd, at % qd / c->D, at % c->D, gpu[at], cpu[at]);
	printf("%-58s max err %.2e\n", what, worst);
	return worst;
}

static void decode_case(int D, int H, int HK, int q8, int hpb, const int *cells, int n, const char *name)
{
	int maxc = 0;
	for (int i = 0; i < n; i++)
		maxc = cells[i] + 1 > maxc ? cells[i] + 1 : maxc;
	struct cache c;
	cache_init(&c, D, HK, (maxc + 31) / 32 * 32, n, q8, 11 + (uint64_t)D + (uint64_t)q8);
	struct rows r;
	rows_init(&r, n, H, D, 7 + (uint64_t)n);
	for (int i = 0; i < n; i++) {
		r.seq[i] = i;
		r.cell[i] = cells[i];
	}
	const float scale = 1.0f / sqrtf((float)D);
	const size_t sz = (size_t)n * H * D;
	float *gpu = malloc(sz * sizeof(float)), *cpu = malloc(sz * sizeof(float));
	cpu_ref(&c, &r, scale, cpu);
	char what[200];
	snprintf(what, sizeof what, "decode %s D%d %d/%d %s hpb %d", name, D, H, HK, q8 ? "q8_0" : "f16", hpb);
	if (run_gpu(&c, &r, scale, 0, hpb, 0, gpu, what) == 0)
		compare(&c, &r, gpu, cpu, what);
	free(gpu);
	free(cpu);
	rows_free(&r);
	cache_free(&c);
}

/* A row's bits do not depend on its batch: row 0 (cell0 + 1 cells) alone, then beside a 5,000-cell row (more
 * grid splits), then with the grid's splits forced to the maximum (for a row of <= 64 cells: the one-chunk
 * path that writes the output directly against the partial + combine path). */
static void batch_independence(int q8, int cell0)
{
	const int D = 128, H = 40, HK = 8;
	struct cache c;
	cache_init(&c, D, HK, 5024, 2, q8, 99);
	struct rows r;
	rows_init(&r, 2, H, D, 5);
	r.seq[0] = 0;
	r.cell[0] = cell0;
	r.seq[1] = 1;
	r.cell[1] = 4999;
	const float scale = 1.0f / sqrtf((float)D);
	const size_t qd = (size_t)H * D;
	float *a = malloc(2 * qd * sizeof(float)), *b = malloc(2 * qd * sizeof(float)), *m = malloc(2 * qd * sizeof(float));
	struct rows one = r;
	one.n = 1;
	int rc = run_gpu(&c, &one, scale, 0, 0, 0, a, "decode alone");
	rc |= run_gpu(&c, &r, scale, 0, 0, 0, b, "decode beside 5000 cells");
	rc |= run_gpu(&c, &r, scale, 0, 0, 256, m, "decode with 256 grid splits");
	if (rc == 0) {
		CHECKF(memcmp(a, b, qd * sizeof(float)) == 0, "%s: a %d-cell row changes beside a 5,000-cell row",
		       q8 ? "q8_0" : "f16", cell0 + 1);
		CHECKF(memcmp(a, m, qd * sizeof(float)) == 0, "%s: a %d-cell row changes with 256 grid splits",
		       q8 ? "q8_0" : "f16", cell0 + 1);
	}
	free(a);
	free(b);
	free(m);
	rows_free(&r);
	cache_free(&c);
}

/* Prefill: segments {seq, first cell, tokens}; every segment's cached cells [0, first) are in the cache
 * already (random values), its new tokens at [first, first + tokens). Rows interleave the segments' tokens
 * (order of first appearance kept), as a batch may. */
struct pseg {
	int seq, first, cnt;
};

static void prefill_case(int D, int H, int HK, int q8, const struct pseg *sg, int ns, const char *name)
{
	int n = 0, maxc = 0;
	for (int i = 0; i < ns; i++) {
		n += sg[i].cnt;
		maxc = sg[i].first + sg[i].cnt > maxc ? sg[i].first + sg[i].cnt : maxc;
	}
	struct cache c;
	cache_init(&c, D, HK, (maxc + 31) / 32 * 32, ns, q8, 21 + (uint64_t)D + (uint64_t)q8);
	struct rows r;
	rows_init(&r, n, H, D, 3 + (uint64_t)n);
	int k = 0, done[8] = {0};
	while (k < n)
		for (int i = 0; i < ns; i++)
			for (int rep = 0; rep < 3 && done[i] < sg[i].cnt; rep++, k++) {
				r.seq[k] = sg[i].seq;
				r.cell[k] = sg[i].first + done[i]++;
			}
	const float scale = 1.0f / sqrtf((float)D);
	const size_t sz = (size_t)n * H * D;
	float *gpu = malloc(sz * sizeof(float)), *cpu = malloc(sz * sizeof(float));
	cpu_ref(&c, &r, scale, cpu);
	char what[200];
	snprintf(what, sizeof what, "prefill %s D%d %d/%d %s", name, D, H, HK, q8 ? "q8_0" : "f16");
	if (run_gpu(&c, &r, scale, 1, 0, 0, gpu, what) == 0)
		compare(&c, &r, gpu, cpu, what);
	free(gpu);
	free(cpu);
	rows_free(&r);
	cache_free(&c);
}

int main(void)
{
	char msg[512];
	const int bad = rn_cuda_host_attn_check(msg, sizeof msg);
	CHECKF(bad == 0, "host attention checks: %d failures, first: %s", bad, msg);
	if (check_failures)
		return check_done();
	if (rn_cuda_device_count() == 0)
		SKIP("no CUDA device (rn_cuda_device_count() == 0): host attention checks passed; the kernels cannot run here");

	/* ORUN_CUDA_TEST_QUICK=1 (tools/gpu-check's compute-sanitizer pass): the odd lengths (the half-warp loop of
	 * issue 19 item 1), a split row beside short ones, batch independence and two small prefills, f16 KV only */
	const char *quick_env = getenv("ORUN_CUDA_TEST_QUICK");
	const bool quick = quick_env && strcmp(quick_env, "1") == 0;
	static const int odd[] = {0, 2, 256, 299};              /* 1, 3, 257, 300 cells */
	static const int small[] = {0, 2, 40, 63};             /* one chunk each: grid splits 1, no combine */
	static const int mixed[] = {0, 2, 256, 299, 999, 4999}; /* + 1000, 5000 (several chunks, combine) */
	if (quick) {
		static const int some[] = {0, 2, 299, 999};
		static const struct pseg q17[] = {{0, 0, 17}}, qcont[] = {{0, 100, 45}};
		decode_case(128, 40, 8, 0, 0, odd, 4, "1/3/257/300");
		decode_case(128, 40, 8, 0, 0, some, 4, "1/3/300/1000");
		batch_independence(0, 299);
		prefill_case(128, 40, 8, 0, q17, 1, "17");
		prefill_case(128, 40, 8, 0, qcont, 1, "45 after 100 cached");
		return check_done();
	}
	for (int q8 = 0; q8 <= 1; q8++) {
		decode_case(128, 40, 8, q8, 0, odd, 4, "1/3/257/300");
		decode_case(128, 40, 8, q8, 0, small, 4, "1/3/41/64");
		decode_case(128, 40, 8, q8, 0, mixed, 6, "1..5000");
		decode_case(128, 40, 8, q8, 1, mixed, 6, "1..5000");
		decode_case(128, 64, 8, q8, 0, mixed, 6, "G8 1..5000");
		decode_case(128, 28, 4, q8, 0, mixed, 6, "G7 1..5000");
		decode_case(64, 32, 8, q8, 0, mixed, 6, "1..5000");
		decode_case(256, 16, 4, q8, 0, mixed, 6, "1..5000");
		{
			const int one[] = {32767};
			decode_case(128, 40, 8, q8, 0, one, 1, "32k");
		}
		batch_independence(q8, 299);
		batch_independence(q8, 40);

		static const struct pseg p1[] = {{0, 0, 1}}, p17[] = {{0, 0, 17}}, p300[] = {{0, 0, 300}},
					 p2048[] = {{0, 0, 2048}}, cont[] = {{0, 1000, 300}},
					 two[] = {{0, 0, 77}, {1, 500, 130}};
		prefill_case(128, 40, 8, q8, p1, 1, "1");
		prefill_case(128, 40, 8, q8, p17, 1, "17");
		prefill_case(128, 40, 8, q8, p300, 1, "300");
		prefill_case(128, 40, 8, q8, p2048, 1, "2048");
		prefill_case(128, 40, 8, q8, cont, 1, "300 after 1000 cached");
		prefill_case(128, 40, 8, q8, two, 2, "two segments (77 | 130 after 500)");
		prefill_case(64, 32, 8, q8, cont, 1, "300 after 1000 cached");
		prefill_case(256, 16, 4, q8, cont, 1, "300 after 1000 cached");
		prefill_case(128, 28, 4, q8, two, 2, "G7 two segments");
	}
	return check_done();
}
