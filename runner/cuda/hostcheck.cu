/* runner/cuda/hostcheck.cu — the CUDA backend's weight repacking, activation quantization, dot-product units
 * and dequantization run on the host, for tests on machines without a GPU.
 *
 * Nothing here runs in production: it exists so that tests/cuda/test_cuda_host can compare the exact code the
 * kernels execute (runner/cuda/quant.cuh, compiled for the host) with the CPU backend and with gguf's
 * reference dequantization. The warp/block structure of the kernels is not exercised here (the GPU tests do).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/cuda/cuda.h"
#include "runner/cuda/internal.cuh"
#include "runner/cuda/quant.cuh"

extern "C" {
#include "runner/cpu/features.h"
#include "runner/cpu/kernels.h"
#include "runner/cpu/ops.h"
}

/* A repacked matrix in host memory. */
struct host_mat {
	struct rn_cw_mat m;
	uint8_t *buf;
};

static void host_mat_free(struct host_mat *h)
{
	free(h->buf);
	h->buf = NULL;
}

static int host_repack(uint32_t gguf_type, const void *data, size_t size, int64_t rows, int64_t cols,
		       struct host_mat *h, char *msg, size_t msg_size)
{
	memset(h, 0, sizeof *h);
	int type = rn_cw_from_gguf(gguf_type);
	if (type < 0) {
		snprintf(msg, msg_size, "GGUF type %u has no CUDA kernel", gguf_type);
		return -1;
	}
	const char *why = rn_cw_shape_error(type, rows, cols);
	if (why) {
		snprintf(msg, msg_size, "%s [%lld x %lld]: %s", rn_cw_table[type].name, (long long)rows, (long long)cols, why);
		return -1;
	}
	uint64_t need = rn_cw_gguf_bytes(type, rows, cols);
	if (need != size) {
		snprintf(msg, msg_size, "%s [%lld x %lld] needs %llu bytes, got %zu", rn_cw_table[type].name, (long long)rows,
			 (long long)cols, (unsigned long long)need, size);
		return -1;
	}
	int64_t off[RN_CU_MAX_PLANES + 1];
	int64_t total = rn_cw_layout(type, rows, cols, off);
	h->buf = (uint8_t *)calloc(1, (size_t)total + 16);
	if (!h->buf) {
		snprintf(msg, msg_size, "out of memory");
		return -1;
	}
	h->m = rn_cw_mat_make(type, rows, cols, h->buf, off);
	uint8_t *planes[RN_CU_MAX_PLANES];
	for (int i = 0; i < RN_CU_MAX_PLANES; i++)
		planes[i] = h->buf + off[i];
	const uint8_t *src = (const uint8_t *)data;
	if (rn_cw_is_raw(type)) {
		memcpy(planes[0], src, (size_t)rn_cw_plane_size(type, 0, rows, cols));
		if (type == CW_FP8)
			rn_cw_fp8_grid_repack(src + rows * cols, rows, cols, (float *)planes[1]);
	} else {
		const int64_t nblk = rows * (cols / rn_cw_table[type].block_elems);
		for (int64_t b = 0; b < nblk; b++)
			rn_cw_repack_block(type, src + b * rn_cw_table[type].block_bytes, planes, b);
	}
	return 0;
}

/* The activation quantizers with exactly the device kernels' arithmetic (runner/cuda/ops.cu). */
static void host_quant_q8_32(const float *x, int64_t cols, int8_t *q, float *d, int32_t *s, float *sm)
{
	for (int64_t b = 0; b < cols / 32; b++) {
		float amax = 0.0f;
		for (int i = 0; i < 32; i++)
			amax = fmaxf(amax, fabsf(x[b * 32 + i]));
		float id = amax > 0.0f ? 127.0f / amax : 0.0f;
		int32_t sum = 0;
		for (int i = 0; i < 32; i++) {
			int v = (int)nearbyintf(x[b * 32 + i] * id);
			q[b * 32 + i] = (int8_t)v;
			sum += v;
		}
		const float db = amax / 127.0f;
		d[b] = rn_h2f(rn_f2h(db));
		s[b] = sum;
		sm[b] = rn_h2f(rn_f2h(db * (float)sum));
	}
}

static void host_quant_q8_256(const float *x, int64_t cols, int8_t *q, float *d, int16_t *bs)
{
	for (int64_t b = 0; b < cols / 256; b++) {
		float amax = 0.0f;
		for (int i = 0; i < 256; i++)
			amax = fmaxf(amax, fabsf(x[b * 256 + i]));
		float id = amax > 0.0f ? 127.0f / amax : 0.0f;
		for (int g = 0; g < 16; g++) {
			int sum = 0;
			for (int i = 0; i < 16; i++) {
				int v = (int)nearbyintf(x[b * 256 + g * 16 + i] * id);
				q[b * 256 + g * 16 + i] = (int8_t)v;
				sum += v;
			}
			bs[b * 16 + g] = (int16_t)sum;
		}
		d[b] = amax > 0.0f ? 1.0f / id : 0.0f;
	}
}

/* Activations of rows [j0, ...) of a. */
static struct rn_cw_act act_shift(const struct rn_cw_act &a, int j0, int kind)
{
	struct rn_cw_act r = a;
	if (a.x)
		r.x = a.x + (int64_t)j0 * a.ldx;
	if (a.x16)
		r.x16 = a.x16 + (int64_t)j0 * a.ldx16;
	if (a.qs)
		r.qs = a.qs + (int64_t)j0 * a.ldq;
	if (a.d)
		r.d = a.d + (int64_t)j0 * a.ldd;
	if (a.s)
		r.s = (const uint8_t *)a.s + (int64_t)j0 * a.lds * (kind == CA_Q8_32 ? 4 : 2);
	if (a.sm)
		r.sm = a.sm + (int64_t)j0 * a.lds;
	return r;
}

template <int TYPE, int NC>
static void host_pass(const struct rn_cw_mat &w, const struct rn_cw_act &a, int j0, float *y)
{
	const int64_t units = rn_cw_units(TYPE, w.cols);
	struct rn_cw_act as = act_shift(a, j0, rn_cw_table[TYPE].act);
	for (int64_t r = 0; r < w.rows; r++) {
		float acc[NC];
		for (int j = 0; j < NC; j++)
			acc[j] = 0.0f;
		for (int64_t u = 0; u < units; u++)
			rn_unit_dot<TYPE, NC>(w, r, u, as, acc);
		for (int j = 0; j < NC; j++)
			y[(int64_t)(j0 + j) * w.rows + r] = acc[j];
	}
}

/* The rows in passes of up to 4, through the same multi-row unit code the kernels instantiate. */
template <int TYPE>
static void host_rows(const struct rn_cw_mat &w, const struct rn_cw_act &a, int n, float *y)
{
	for (int j0 = 0; j0 < n; j0 += 4) {
		switch (n - j0 >= 4 ? 4 : n - j0) {
		case 1: host_pass<TYPE, 1>(w, a, j0, y); break;
		case 2: host_pass<TYPE, 2>(w, a, j0, y); break;
		case 3: host_pass<TYPE, 3>(w, a, j0, y); break;
		default: host_pass<TYPE, 4>(w, a, j0, y); break;
		}
	}
}

extern "C" int rn_cuda_host_matvec(uint32_t gguf_type, const void *data, size_t size, int64_t rows, int64_t cols,
				   const float *x, int n, float *y, char *msg, size_t msg_size)
{
	struct host_mat h;
	if (host_repack(gguf_type, data, size, rows, cols, &h, msg, msg_size) != 0)
		return -1;
	const int type = h.m.type;
	struct rn_cw_act a;
	memset(&a, 0, sizeof a);
	int8_t *q = NULL;
	float *d = NULL, *sm = NULL;
	void *s = NULL;
	uint16_t *x16 = NULL;
	int rc = 0;
	const int kind = rn_cw_table[type].act;
	if (kind == CA_F32) {
		a.x = x;
		a.ldx = cols;
	} else if (kind == CA_F16 || kind == CA_BF16) {
		x16 = (uint16_t *)malloc((size_t)(n * cols) * 2 + 16);
		if (!x16) {
			snprintf(msg, msg_size, "out of memory");
			rc = -1;
			goto out;
		}
		for (int64_t i = 0; i < n * cols; i++)
			x16[i] = kind == CA_F16 ? rn_f2h(x[i]) : rn_f2bf(x[i]);
		a.x16 = x16;
		a.ldx16 = cols;
	} else {
		const int64_t B = kind == CA_Q8_32 ? 32 : 256;
		q = (int8_t *)malloc((size_t)(n * cols) + 16);
		d = (float *)malloc((size_t)n * (size_t)(cols / B) * sizeof(float) + 16);
		s = malloc((size_t)n * (size_t)(cols / 16) * sizeof(int32_t) + 16);
		sm = (float *)malloc((size_t)n * (size_t)(cols / 32) * sizeof(float) + 16);
		if (!q || !d || !s || !sm) {
			snprintf(msg, msg_size, "out of memory");
			rc = -1;
			goto out;
		}
		for (int j = 0; j < n; j++) {
			if (kind == CA_Q8_32)
				host_quant_q8_32(x + (int64_t)j * cols, cols, q + (int64_t)j * cols, d + (int64_t)j * (cols / 32),
						 (int32_t *)s + (int64_t)j * (cols / 32), sm + (int64_t)j * (cols / 32));
			else
				host_quant_q8_256(x + (int64_t)j * cols, cols, q + (int64_t)j * cols, d + (int64_t)j * (cols / 256),
						  (int16_t *)s + (int64_t)j * (cols / 16));
		}
		a.qs = q;
		a.ldq = cols;
		a.d = d;
		a.ldd = cols / B;
		a.s = s;
		a.sm = sm;
		a.lds = kind == CA_Q8_32 ? cols / 32 : cols / 16;
	}
	switch (type) {
	case CW_F32: host_rows<CW_F32>(h.m, a, n, y); break;
	case CW_F16: host_rows<CW_F16>(h.m, a, n, y); break;
	case CW_BF16: host_rows<CW_BF16>(h.m, a, n, y); break;
	case CW_Q4_0: host_rows<CW_Q4_0>(h.m, a, n, y); break;
	case CW_Q4_1: host_rows<CW_Q4_1>(h.m, a, n, y); break;
	case CW_Q5_0: host_rows<CW_Q5_0>(h.m, a, n, y); break;
	case CW_Q5_1: host_rows<CW_Q5_1>(h.m, a, n, y); break;
	case CW_Q8_0: host_rows<CW_Q8_0>(h.m, a, n, y); break;
	case CW_Q4_K: host_rows<CW_Q4_K>(h.m, a, n, y); break;
	case CW_Q5_K: host_rows<CW_Q5_K>(h.m, a, n, y); break;
	case CW_Q6_K: host_rows<CW_Q6_K>(h.m, a, n, y); break;
	case CW_FP8: host_rows<CW_FP8>(h.m, a, n, y); break;
	default: break;
	}
out:
	free(q);
	free(d);
	free(s);
	free(sm);
	free(x16);
	host_mat_free(&h);
	return rc;
}

struct host_cv {
	float *row;
	RN_HD void operator()(int64_t col, float v) const { row[col] = v; }
};

extern "C" int rn_cuda_host_dequant(uint32_t gguf_type, const void *data, size_t size, int64_t rows, int64_t cols,
				    float *out, char *msg, size_t msg_size)
{
	struct host_mat h;
	if (host_repack(gguf_type, data, size, rows, cols, &h, msg, msg_size) != 0)
		return -1;
	const int64_t units = rn_cw_units(h.m.type, cols);
	for (int64_t r = 0; r < rows; r++) {
		struct host_cv cv = {out + r * cols};
		for (int64_t u = 0; u < units; u++)
			rn_unit_dequant(h.m.type, h.m, r, u, cv);
	}
	host_mat_free(&h);
	return 0;
}

extern "C" {
#include "gguf/gguf.h"
}

/* The scalar helpers of common.cuh (host side) against gguf's reference conversions. */
/* ---------------------------------------------------------------------------------------------- CPU twins */

static uint64_t hc_next(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 11;
}

/* A float of any sign and exponent in [-e, e] (powers of two), random mantissa. */
static float hc_float(uint64_t *s, int e)
{
	uint64_t r = hc_next(s);
	int ex = (int)(r % (uint64_t)(2 * e + 1)) - e;
	float m = 1.0f + (float)((r >> 12) & 0x7fffff) / 8388608.0f;
	return ldexpf((r >> 40) & 1 ? -m : m, ex);
}

/* The kernels' SwiGLU, RoPE and graph-table code against the CPU backend's functions, bit for bit; counts
 * mismatches (bad0: mismatches already noted, so that msg keeps the first). */
static int rn_cuda_host_check_cpu_twins(char *msg, size_t msg_size, int bad0)
{
	int bad = 0;
#define NOTE2(...)                                                                                       \
	do {                                                                                             \
		if (!bad0 && !bad)                                                                       \
			snprintf(msg, msg_size, __VA_ARGS__);                                            \
		bad++;                                                                                   \
	} while (0)
	uint64_t s = 777;
	/* SwiGLU: runner/cpu's AVX2 path (exp polynomial) is the one the GPU copies; its scalar fallback uses libm's
	 * expf, so the bit-exact comparison needs the AVX2 path (ORUN_CPU_ISA=scalar or a CPU without AVX2+FMA
	 * falls back to a 2-ulp check against expf) */
	const bool exact = rn_cpu_features()->simd_ops;
	enum { N = 4096 };
	static float g[N], u[N], ref[N];
	for (int rep = 0; rep < 256; rep++) {
		for (int i = 0; i < N; i++) {
			/* mostly the range real activations take, plus the far tails (|n| > 126 and > 192 of the
			 * polynomial's scale) and specials */
			int r = (int)(hc_next(&s) % 16);
			g[i] = r < 10 ? hc_float(&s, 4) : r < 13 ? hc_float(&s, 8) : r < 15 ? (float)((int)(hc_next(&s) % 400) - 200) + (float)(hc_next(&s) % 1024) / 1024.0f : hc_float(&s, 126);
			u[i] = hc_float(&s, 3);
		}
		if (rep == 0) {
			const float sp[] = {0.0f, -0.0f, 87.0f, -87.0f, 88.7f, -88.7f, 126.5f * 0.6931472f, -126.5f * 0.6931472f, 150.0f, -150.0f,
					    192.5f * 0.6931472f, -192.5f * 0.6931472f, 1e-40f, -1e-40f, INFINITY, -INFINITY, 3.4e38f, -3.4e38f};
			for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++)
				g[i] = sp[i];
		}
		memcpy(ref, g, sizeof ref);
		rn_ops_swiglu(ref, u, N);
		for (int i = 0; i < N; i++) {
			float a = rn_swiglu(g[i], u[i]);
			bool same = rn_fbits(a) == rn_fbits(ref[i]) || (a != a && ref[i] != ref[i]);
			if (!exact)
				same = same || fabsf(a - ref[i]) <= 2.5e-7f * fabsf(ref[i]) + 1e-37f;
			if (!same)
				NOTE2("rn_swiglu(%a, %a) = %a, runner/cpu's SwiGLU gives %a", (double)g[i], (double)u[i], (double)a,
				      (double)ref[i]);
		}
	}
	/* RoPE: the forward rotation against rn_ops_rope (fmaf, every CPU path), the re-rotation against
	 * rn_rope_apply, both pair layouts */
	for (int neox = 0; neox < 2; neox++)
		for (int rep = 0; rep < 2000; rep++) {
			const int n_rot = rep % 2 ? 128 : 64;
			float x[256] = {0}, y[256], z[256], cs[256] = {0};
			for (int i = 0; i < n_rot; i++) {
				x[i] = hc_float(&s, 6);
				float th = (float)(hc_next(&s) % 100000) * 1e-3f;
				cs[i & ~1] = cosf(th);
				cs[i | 1] = sinf(th);
			}
			memcpy(y, x, sizeof x);
			memcpy(z, x, sizeof x);
			rn_ops_rope(y, cs, n_rot, neox);
			struct rn_rope rp;
			memset(&rp, 0, sizeof rp);
			rp.type = neox ? RN_ROPE_NEOX : RN_ROPE_NORM;
			rp.n_rot = n_rot;
			rn_rope_apply(&rp, cs, z, 1.0f);
			const int half = n_rot / 2;
			for (int i = 0; i < half; i++) {
				const int i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
				float a0 = x[i0], a1 = x[i1], b0 = x[i0], b1 = x[i1];
				rn_rope_pair(cs[2 * i], cs[2 * i + 1], &a0, &a1);
				rn_rope_pair_unfused(cs[2 * i], cs[2 * i + 1], &b0, &b1);
				if (rn_fbits(a0) != rn_fbits(y[i0]) || rn_fbits(a1) != rn_fbits(y[i1]))
					NOTE2("rn_rope_pair (neox %d, pair %d) = (%a, %a), rn_ops_rope gives (%a, %a)", neox, i,
					      (double)a0, (double)a1, (double)y[i0], (double)y[i1]);
				if (rn_fbits(b0) != rn_fbits(z[i0]) || rn_fbits(b1) != rn_fbits(z[i1]))
					NOTE2("rn_rope_pair_unfused (neox %d, pair %d) = (%a, %a), rn_rope_apply gives (%a, %a)",
					      neox, i, (double)b0, (double)b1, (double)z[i0], (double)z[i1]);
			}
		}
	/* the graph table: fill it, evict the LRU entry, fail that capture: the entry given is the one dropped */
	{
		struct rn_cu_graph t[RN_CU_MAX_GRAPHS];
		memset(t, 0, sizeof t);
		int n = 0;
		bool ev = false;
		for (int i = 0; i < RN_CU_MAX_GRAPHS; i++) {
			int k = rn_cu_graph_slot(t, &n, RN_CU_MAX_GRAPHS, &ev);
			if (k != i || ev)
				NOTE2("graph slot %d of an empty table: got %d (evict %d)", i, k, (int)ev);
			t[k].n = i + 1;
			t[k].used = (uint64_t)(1000 - (i * 7919) % 997); /* distinct, scattered */
			t[k].exec = (cudaGraphExec_t)(uintptr_t)(0x1000 + i);
		}
		int lru = 0;
		for (int i = 1; i < n; i++)
			if (t[i].used < t[lru].used)
				lru = i;
		int k = rn_cu_graph_slot(t, &n, RN_CU_MAX_GRAPHS, &ev);
		if (k != lru || !ev || n != RN_CU_MAX_GRAPHS)
			NOTE2("full graph table: slot %d (evict %d, %d entries), the LRU entry is %d", k, (int)ev, n, lru);
		const int last_key = t[n - 1].n;
		memset(&t[k], 0, sizeof t[k]);
		rn_cu_graph_drop(t, &n, k); /* the capture failed */
		bool last_kept = false, dead = false;
		for (int i = 0; i < n; i++) {
			last_kept = last_kept || t[i].n == last_key;
			dead = dead || !t[i].exec || t[i].n == 0;
		}
		if (n != RN_CU_MAX_GRAPHS - 1 || !last_kept || dead)
			NOTE2("failed capture in a full graph table: %d entries left, last live graph kept %d, dead entry %d", n,
			      (int)last_kept, (int)dead);
	}
	/* the matvec's L2 prefetch covers exactly plane 0's row */
	for (int t = 0; t < CW_COUNT; t++)
		for (int64_t cols = 256; cols <= 17408; cols += 256 * 17)
			if (rn_cw_row_bytes0(t, cols) != rn_cw_plane_size(t, 0, 1, cols))
				NOTE2("rn_cw_row_bytes0(%s, %lld) = %lld, plane 0 holds %lld a row", rn_cw_table[t].name, (long long)cols,
				      (long long)rn_cw_row_bytes0(t, cols), (long long)rn_cw_plane_size(t, 0, 1, cols));
	/* the Q|K|V grouping */
	{
		struct qcase {
			int t[3];
			int64_t r[3];
			bool fuse;
			int np, part[3];
		};
		static const struct qcase qc[] = {
			{{CW_Q8_0, CW_Q8_0, CW_Q8_0}, {5120, 1024, 1024}, true, 1, {0, 0, 0}},
			{{CW_Q4_K, CW_Q4_K, CW_Q6_K}, {5120, 1024, 1024}, true, 2, {0, 0, 1}},
			{{CW_Q4_K, CW_Q6_K, CW_Q4_K}, {5120, 1024, 1024}, true, 3, {0, 1, 2}},
			{{CW_FP8, CW_FP8, CW_FP8}, {5120, 1024, 1024}, true, 1, {0, 0, 0}},
			{{CW_FP8, CW_FP8, CW_FP8}, {192, 64, 64}, true, 3, {0, 1, 2}},
			{{CW_FP8, CW_FP8, CW_FP8}, {256, 64, 64}, true, 2, {0, 0, 1}},
			{{CW_Q8_0, CW_Q8_0, CW_Q8_0}, {5120, 1024, 1024}, false, 3, {0, 1, 2}},
		};
		for (size_t k = 0; k < sizeof qc / sizeof qc[0]; k++) {
			int part[3] = {-1, -1, -1};
			int np = rn_cu_qkv_plan(qc[k].t, qc[k].r, qc[k].fuse, part);
			if (np != qc[k].np || memcmp(part, qc[k].part, sizeof part) != 0)
				NOTE2("rn_cu_qkv_plan case %zu: %d parts (%d %d %d), expected %d (%d %d %d)", k, np, part[0], part[1],
				      part[2], qc[k].np, qc[k].part[0], qc[k].part[1], qc[k].part[2]);
		}
	}
#undef NOTE2
	return bad;
}

extern "C" int rn_cuda_host_selfcheck(char *msg, size_t msg_size)
{
	int bad = 0;
	msg[0] = 0;
#define NOTE(...)                                                                                        \
	do {                                                                                             \
		if (!bad++)                                                                              \
			snprintf(msg, msg_size, __VA_ARGS__);                                            \
	} while (0)
	for (uint32_t h = 0; h < 65536; h++) {
		float a = rn_h2f((uint16_t)h), b = gguf_f16_to_f32((uint16_t)h);
		if (memcmp(&a, &b, 4) != 0 && !(a != a && b != b))
			NOTE("rn_h2f(0x%04x) = %g, gguf says %g", h, (double)a, (double)b);
		float c = rn_bf2f((uint16_t)h), e = gguf_bf16_to_f32((uint16_t)h);
		if (memcmp(&c, &e, 4) != 0)
			NOTE("rn_bf2f(0x%04x) = %g, gguf says %g", h, (double)c, (double)e);
	}
	/* E4M3FN, all 256 codes: bit-identical to gguf's decoder (S.1111.111 is NaN, not +-480), and for the 254
	 * finite codes to runner/cpu's binary16 decoding (rn_e4m3_to_f16_scaled, value / 256) */
	for (uint32_t b = 0; b < 256; b++) {
		float a = rn_e4m3_to_f((uint8_t)b), r = gguf_e4m3_to_f32((uint8_t)b);
		const bool nan_code = (b & 0x7f) == 0x7f;
		if (nan_code ? !(a != a && r != r) : rn_fbits(a) != rn_fbits(r))
			NOTE("rn_e4m3_to_f(0x%02x) = %g, gguf says %g", b, (double)a, (double)r);
		if (!nan_code && rn_fbits(a) != rn_fbits(gguf_f16_to_f32(rn_e4m3_to_f16_scaled((uint8_t)b)) * 256.0f))
			NOTE("rn_e4m3_to_f(0x%02x) = %g, runner/cpu decodes %g", b, (double)a,
			     (double)(gguf_f16_to_f32(rn_e4m3_to_f16_scaled((uint8_t)b)) * 256.0f));
		for (int pos = 0; pos < 4; pos++) {
			float v[4];
			rn_fp8x4((b << (8 * pos)) | (0x38u << (8 * ((pos + 1) % 4))), v);
			if (nan_code ? !(v[pos] != v[pos]) : rn_fbits(v[pos]) != rn_fbits(r))
				NOTE("rn_fp8x4 byte %d of 0x%02x = %g, gguf says %g", pos, b, (double)v[pos], (double)r);
		}
	}
	bad += rn_cuda_host_check_cpu_twins(msg, msg_size, bad);
	/* every float exponent with random and boundary mantissas, both signs */
	static const uint32_t edge[8] = {0, 1, 0xfff, 0x1000, 0x1001, 0x2000, 0x7fffff, 0x3000};
	uint64_t s = 12345;
	for (uint32_t e = 0; e < 256; e++)
		for (int k = 0; k < 600; k++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			uint32_t man = k < 8 ? edge[k] : (uint32_t)(s >> 41);
			uint32_t bits = ((uint32_t)(k & 1) << 31) | (e << 23) | (man & 0x7fffff);
			float f;
			memcpy(&f, &bits, 4);
			uint16_t a = rn_f2h(f), r = gguf_f32_to_f16(f);
			if (a != r && !(f != f && (a & 0x7c00) == 0x7c00 && (a & 0x3ff) && (r & 0x3ff)))
				NOTE("rn_f2h(0x%08x) = 0x%04x, gguf says 0x%04x", bits, a, r);
			uint16_t c = rn_f2bf(f), d = gguf_f32_to_bf16(f);
			if (c != d && !(f != f && (c & 0x7f80) == 0x7f80 && (d & 0x7f80) == 0x7f80))
				NOTE("rn_f2bf(0x%08x) = 0x%04x, gguf says 0x%04x", bits, c, d);
		}
	for (int k = 0; k < 100000; k++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		int a = (int)(s >> 32), b = (int)s, ref = 7;
		for (int i = 0; i < 4; i++)
			ref += (int8_t)(a >> (8 * i)) * (int8_t)(b >> (8 * i));
		if (rn_dp4a(a, b, 7) != ref)
			NOTE("rn_dp4a(0x%08x, 0x%08x) = %d, expected %d", (unsigned)a, (unsigned)b, rn_dp4a(a, b, 7), ref);
		uint32_t x = (uint32_t)(s >> 13) & 0x3f3f3f3fu, y = rn_sub_bytes(x, 0x20202020u);
		for (int i = 0; i < 4; i++)
			if ((int8_t)(y >> (8 * i)) != (int)((x >> (8 * i)) & 255) - 32)
				NOTE("rn_sub_bytes(0x%08x) byte %d wrong", x, i);
	}
#undef NOTE
	return bad;
}
