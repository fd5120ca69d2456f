/* runner/cuda/attention.cu — attention over the KV cache: split-K "flash-decoding" for decode steps, and
 * fused causal flash attention for prompt chunks.
 *
 * Decode: one block per (chunk of the row's cells, KV head, row) serves the query heads that share the KV head
 * (GQA: Qwen3-14B's 5 per KV head), so each K and V row is read once for all of them. Inside a block, groups
 * of D/8 lanes take one cell at a time (8 values per lane, 16-byte f16 loads, ATT_U cells in flight), each
 * group keeps its own online softmax state; groups merge through shuffles, warps through shared memory,
 * chunks in a combine kernel. The chunks depend only on the row's cell count and the device (rn_cu_att_chunk).
 * Prefill: a fused causal flash-attention kernel (k_flash_prefill: tensor-core tiles, online softmax, causal
 * tiles skipped), one launch per sequence segment.
 */
#include <mma.h>

#include "runner/cuda/internal.cuh"

#define ATT_THREADS 128
#define ATT_WARPS (ATT_THREADS / RN_WARP)
/* cells in flight per lane (each a 16-byte K and V load, issued before any is used): 2, or 1 where HPB > 5
 * heads of state would not fit 128 registers with two (ptxas -v: spills) */
#define ATT_U(HPB) ((HPB) <= 5 ? 2 : 1)

/* Bytes per decode launch (one layer; Qwen3-14B: 8 KV heads x 128, 40 query heads, f16 KV):
 *   K + V     n_keys x kv_dim x 2 x 2 B per row          32k cells: 32768 x 1024 x 4 = 128 MiB
 *   q8_0 KV   n_keys x kv_dim x 2 x (1 + 2/32) B         32k cells: 68 MiB
 *   partials  H x splits x (D + 2) x 4 B, written and read by the combine: 40 x 64 x 130 x 8 = 2.6 MB (2%)
 *   queries / output: H x D x 4 B each, negligible.
 * So at long context the launch is the KV read; at 4.8 TB/s 128 MiB is 28 us per layer, 1.1 ms per token for
 * 40 layers (next to ~8.5 GB / 1.8 ms of Q4_K_M weights). Latency: to keep 4.8 TB/s busy at ~0.6 us memory
 * latency, ~2.9 MB must be in flight, ~22 KB per SM of 132: 16 warps x 32 lanes x ATT_U cells x 32 B = 32 KB
 * at 4 blocks per SM (<= 128 registers); the grid has >= 2 blocks per SM at long context (rn_cu_att_target_for).
 */

int rn_cu_attention_target(void)
{
	static int cached[64]; /* per device ordinal; 0 = not read yet (benign race: every writer stores the same) */
	int dev = 0;
	if (cudaGetDevice(&dev) != cudaSuccess) {
		(void)cudaGetLastError();
		dev = 0;
	}
	int *slot = dev >= 0 && dev < 64 ? &cached[dev] : NULL;
	int t = slot ? __atomic_load_n(slot, __ATOMIC_RELAXED) : 0;
	if (!t) {
		int sms = 0;
		if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms < 1) {
			(void)cudaGetLastError();
			sms = 100;
		}
		t = rn_cu_att_target_for(sms);
		if (slot)
			__atomic_store_n(slot, t, __ATOMIC_RELAXED);
	}
	return t;
}

int rn_cu_attention_splits(int max_keys)
{
	return rn_cu_att_grid_splits(max_keys, rn_cu_attention_target());
}

struct att_args {
	const float *q;        /* [n][q_dim], RoPE applied */
	float *out;            /* [n][q_dim] when splits == 1 */
	float *part;           /* [n][H][splits][D + 2] otherwise */
	const uint8_t *kv;     /* f16 rows or q8 values */
	const __half *kv_d;    /* q8 scales or NULL */
	size_t k_plane, v_plane, seq_stride;
	const int32_t *seq, *cell;
	int q_dim, kv_dim, H, G, splits, target;
	float scale;
};

/* 8 consecutive cached values as loaded (f16: 16 bytes; q8: 8 bytes + the block's scale), converted later. */
struct raw8 {
	uint4 w;
	float d;
};

template <bool Q8>
static __device__ __forceinline__ void load_raw8(const uint8_t *kv, const __half *kv_d, size_t off, raw8 &r)
{
	if (Q8) {
		const uint2 q = *(const uint2 *)(kv + off);
		r.w = make_uint4(q.x, q.y, 0u, 0u);
		r.d = __half2float(kv_d[off / 32]);
	} else {
		r.w = *(const uint4 *)((const __half *)kv + off);
		r.d = 1.0f;
	}
}

template <bool Q8>
static __device__ __forceinline__ void cvt8(const raw8 &r, float *o)
{
	if (Q8) {
#pragma unroll
		for (int i = 0; i < 8; i++)
			o[i] = r.d * (float)(int8_t)((i < 4 ? r.w.x : r.w.y) >> (8 * (i % 4)));
	} else {
		const uint32_t w[4] = {r.w.x, r.w.y, r.w.z, r.w.w};
#pragma unroll
		for (int i = 0; i < 4; i++) {
			o[2 * i] = __half2float(__ushort_as_half((unsigned short)(w[i] & 0xffffu)));
			o[2 * i + 1] = __half2float(__ushort_as_half((unsigned short)(w[i] >> 16)));
		}
	}
}

/* 8 values per lane keeps the per-thread state (HPB x 8 accumulators, HPB x 8 query values) small enough
 * for several blocks per SM; D / 8 lanes share a cell. */
#define ATT_DPL 8

template <int D, int HPB, bool Q8>
static __global__ void __launch_bounds__(ATT_THREADS, HPB > 5 ? 3 : 4) k_attn_decode(struct att_args a)
{
	constexpr int LPC = D / ATT_DPL;      /* lanes per cell */
	constexpr int CPW = RN_WARP / LPC;    /* cells per warp step */
	constexpr int NG = ATT_WARPS * CPW;   /* cell groups per block */
	constexpr int U = ATT_U(HPB);
	__shared__ float sm[ATT_WARPS][HPB][D + 2];

	const int warp = threadIdx.x / RN_WARP, lane = threadIdx.x % RN_WARP;
	const int li = lane % LPC, sub = lane / LPC;
	const int split = blockIdx.x, row = blockIdx.z;
	const int n_keys = a.cell[row] + 1;
	const int chunk = rn_cu_att_chunk(n_keys, a.target);
	if (split >= (n_keys + chunk - 1) / chunk)
		return; /* past this row's chunks (the whole block: before any barrier) */
	const int subs = a.G / HPB;
	const int kvh = blockIdx.y / subs, h0 = kvh * a.G + (blockIdx.y % subs) * HPB;
	const int j0 = split * chunk, j1 = min(n_keys, j0 + chunk);

	/* the queries, rounded to f16 as the CPU backend rounds them for its f16 dot products; in registers, or
	 * in shared memory where HPB > 5 (HPB x 16 floats of q and accumulators would not fit 128 registers) */
	constexpr bool QS = HPB > 5;
	__shared__ float sq[QS ? HPB : 1][D];
	float q[QS ? 1 : HPB][ATT_DPL];
	if (QS) {
		for (int t = threadIdx.x; t < HPB * D; t += ATT_THREADS)
			sq[t / D][t % D] = __half2float(__float2half_rn(a.q[(int64_t)row * a.q_dim + h0 * D + t]));
		__syncthreads();
	} else {
#pragma unroll
		for (int h = 0; h < (QS ? 1 : HPB); h++)
#pragma unroll
			for (int i = 0; i < ATT_DPL; i++)
				q[h][i] = __half2float(
					__float2half_rn(a.q[(int64_t)row * a.q_dim + (h0 + h) * D + ATT_DPL * li + i]));
	}

	float m[HPB], l[HPB], acc[HPB][ATT_DPL];
#pragma unroll
	for (int h = 0; h < HPB; h++) {
		m[h] = -INFINITY;
		l[h] = 0.0f;
#pragma unroll
		for (int i = 0; i < ATT_DPL; i++)
			acc[h][i] = 0.0f;
	}
	const size_t base = (size_t)a.seq[row] * a.seq_stride + (size_t)kvh * D + ATT_DPL * li;
	for (int jb = j0 + warp * CPW; jb < j1; jb += U * NG) {
		raw8 kr[U], vr[U];
		bool ok[U];
#pragma unroll
		for (int u = 0; u < U; u++) {
			const int j = rn_cu_att_cell(jb, u, sub, NG);
			ok[u] = j < j1;
			/* a masked lane reads the split's last cell (in bounds, no divergence) and weighs it 0 */
			const size_t off = base + (size_t)(ok[u] ? j : j1 - 1) * a.kv_dim;
			load_raw8<Q8>(a.kv, a.kv_d, a.k_plane + off, kr[u]);
			load_raw8<Q8>(a.kv, a.kv_d, a.v_plane + off, vr[u]);
		}
		float s[HPB][U];
#pragma unroll
		for (int u = 0; u < U; u++) {
			float kf[ATT_DPL];
			cvt8<Q8>(kr[u], kf);
#pragma unroll
			for (int h = 0; h < HPB; h++) {
				float t = 0.0f;
#pragma unroll
				for (int i = 0; i < ATT_DPL; i++)
					t += (QS ? sq[h][ATT_DPL * li + i] : q[QS ? 0 : h][i]) * kf[i];
#pragma unroll
				for (int o = LPC / 2; o > 0; o >>= 1)
					t += __shfl_xor_sync(0xffffffffu, t, o);
				s[h][u] = ok[u] ? t * a.scale : -INFINITY;
			}
		}
		/* one rescale for the U cells; when every score so far is -inf (a group whose cells are all
		 * masked), base 0 makes corr = e^-inf = 0 and p = 0 instead of e^(-inf - -inf) = NaN */
		float p[HPB][U];
#pragma unroll
		for (int h = 0; h < HPB; h++) {
			float mn = m[h];
#pragma unroll
			for (int u = 0; u < U; u++)
				mn = fmaxf(mn, s[h][u]);
			const float bse = mn == -INFINITY ? 0.0f : mn;
			const float corr = __expf(m[h] - bse);
			l[h] *= corr;
#pragma unroll
			for (int u = 0; u < U; u++) {
				p[h][u] = __expf(s[h][u] - bse);
				l[h] += p[h][u];
			}
#pragma unroll
			for (int i = 0; i < ATT_DPL; i++)
				acc[h][i] *= corr;
			m[h] = mn;
		}
#pragma unroll
		for (int u = 0; u < U; u++) {
			float vf[ATT_DPL];
			cvt8<Q8>(vr[u], vf);
#pragma unroll
			for (int h = 0; h < HPB; h++)
#pragma unroll
				for (int i = 0; i < ATT_DPL; i++)
					acc[h][i] += p[h][u] * vf[i];
		}
	}
	/* merge the cell groups of the warp (lanes li, li + LPC, ... hold the same dims) */
#pragma unroll
	for (int o = LPC; o < RN_WARP; o <<= 1) {
#pragma unroll
		for (int h = 0; h < HPB; h++) {
			float mo = __shfl_xor_sync(0xffffffffu, m[h], o), lo = __shfl_xor_sync(0xffffffffu, l[h], o);
			float mn = fmaxf(m[h], mo);
			float ca = m[h] == -INFINITY ? 0.0f : __expf(m[h] - mn);
			float cb = mo == -INFINITY ? 0.0f : __expf(mo - mn);
			l[h] = l[h] * ca + lo * cb;
#pragma unroll
			for (int i = 0; i < ATT_DPL; i++) {
				float ao = __shfl_xor_sync(0xffffffffu, acc[h][i], o);
				acc[h][i] = acc[h][i] * ca + ao * cb;
			}
			m[h] = mn;
		}
	}
	if (lane < LPC) {
#pragma unroll
		for (int h = 0; h < HPB; h++) {
#pragma unroll
			for (int i = 0; i < ATT_DPL; i++)
				sm[warp][h][ATT_DPL * li + i] = acc[h][i];
			if (li == 0) {
				sm[warp][h][D] = m[h];
				sm[warp][h][D + 1] = l[h];
			}
		}
	}
	__syncthreads();
	/* merge the warps: thread t < D handles dimension t of every head */
	for (int t = threadIdx.x; t < D; t += ATT_THREADS) {
#pragma unroll
		for (int h = 0; h < HPB; h++) {
			float mm = -INFINITY;
			for (int w = 0; w < ATT_WARPS; w++)
				mm = fmaxf(mm, sm[w][h][D]);
			float L = 0.0f, o = 0.0f;
			for (int w = 0; w < ATT_WARPS; w++) {
				float mw = sm[w][h][D];
				float c = mw == -INFINITY ? 0.0f : __expf(mw - mm);
				L += sm[w][h][D + 1] * c;
				o += sm[w][h][t] * c;
			}
			if (a.splits == 1) {
				a.out[(int64_t)row * a.q_dim + (h0 + h) * D + t] = L > 0.0f ? o / L : 0.0f;
			} else {
				float *pp = a.part + (((int64_t)row * a.H + h0 + h) * a.splits + split) * (D + 2);
				pp[t] = o;
				if (t == 0) {
					pp[D] = mm;
					pp[D + 1] = L;
				}
			}
		}
	}
}

/* out[row][h][d] = sum_s part[s][d] e^(m_s - M) / sum_s l_s e^(m_s - M) over the row's own chunks, in index
 * order (so the sum does not depend on the grid's splits): one block per (head, row). */
static __global__ void k_attn_combine(const float *part, float *out, const int32_t *cell, int q_dim, int H, int D,
				      int splits, int target)
{
	const int h = blockIdx.x, row = blockIdx.y;
	const int ns = rn_cu_att_nsplit(cell[row] + 1, target);
	const float *pp = part + ((int64_t)row * H + h) * splits * (D + 2);
	float mm = -INFINITY;
	for (int s = 0; s < ns; s++)
		mm = fmaxf(mm, pp[s * (D + 2) + D]);
	for (int t = threadIdx.x; t < D; t += blockDim.x) {
		float L = 0.0f, o = 0.0f;
		for (int s = 0; s < ns; s++) {
			float ms = pp[s * (D + 2) + D];
			float c = ms == -INFINITY ? 0.0f : __expf(ms - mm);
			L += pp[s * (D + 2) + D + 1] * c;
			o += pp[s * (D + 2) + t] * c;
		}
		out[(int64_t)row * q_dim + h * D + t] = L > 0.0f ? o / L : 0.0f;
	}
}
template <int D, bool Q8>
static void launch_decode_d(int hpb, dim3 grid, cudaStream_t st, const struct att_args &a)
{
	switch (hpb) {
#define C(N)                                                                                             \
	case N: k_attn_decode<D, N, Q8><<<grid, ATT_THREADS, 0, st>>>(a); break;
		C(1) C(2) C(3) C(4) C(5) C(6) C(7) C(8)
#undef C
	}
}

int rn_cu_attention_decode(const struct rn_cu *c, int layer, int n, int splits, cudaStream_t st, struct rn_error *err)
{
	struct att_args a;
	a.q = c->q;
	a.out = c->att;
	a.part = c->att_part;
	a.kv = c->kv;
	a.kv_d = c->kv_d;
	a.k_plane = (size_t)(2 * layer) * c->kv_plane_stride;
	a.v_plane = (size_t)(2 * layer + 1) * c->kv_plane_stride;
	a.seq_stride = c->kv_seq_stride;
	a.seq = c->sd.seq;
	a.cell = c->sd.cell;
	a.q_dim = c->q_dim;
	a.kv_dim = c->kv_dim;
	a.H = c->n_head;
	a.G = c->n_head / c->n_head_kv;
	a.splits = splits;
	a.target = rn_cu_attention_target();
	a.scale = c->kq_scale;
	dim3 grid((unsigned)splits, (unsigned)(c->n_head_kv * (a.G / c->hpb)), (unsigned)n);
	const bool q8 = c->kv_d != NULL;
	switch (c->head_dim) {
	case 64:
		q8 ? launch_decode_d<64, true>(c->hpb, grid, st, a) : launch_decode_d<64, false>(c->hpb, grid, st, a);
		break;
	case 128:
		q8 ? launch_decode_d<128, true>(c->hpb, grid, st, a) : launch_decode_d<128, false>(c->hpb, grid, st, a);
		break;
	case 256:
		q8 ? launch_decode_d<256, true>(c->hpb, grid, st, a) : launch_decode_d<256, false>(c->hpb, grid, st, a);
		break;
	default:
		return rn_error_set(err, RN_ERR_INVALID_ARG, "head size %d has no CUDA attention kernel", c->head_dim);
	}
	RN_CU_LAUNCHED();
	if (splits > 1) {
		k_attn_combine<<<dim3((unsigned)c->n_head, (unsigned)n), 128, 0, st>>>(
			c->att_part, c->att, c->sd.cell, c->q_dim, c->n_head, c->head_dim, splits, a.target);
		RN_CU_LAUNCHED();
	}
	return RN_OK;
}

/* ---------------------------------------------------------------------------------------------- prefill */

/* Fused causal flash attention for a prompt chunk (one launch per sequence segment).
 *
 * The rows of a segment's KV head g are its (token, query head) pairs, token-major: row r = t x G + h, so one
 * block's BR rows share every K/V tile (GQA: each tile is loaded once for the G heads of the KV head). A block
 * (BR rows = WARPS x 16, one KV head) keeps its queries (f16) in shared memory and streams K/V tiles of BK cells
 * (f16 rows copied, q8_0 cells converted to f16 as k_kv_to_f16 did) over keys [0, first + t_max] only: tiles
 * past the block's last token are never loaded, and a warp skips the tiles past its own last token (the
 * causal skip). Per tile each warp computes its 16 x BK scores with tensor cores (wmma 16x16x16, f16 in, f32
 * accumulate), masks key j > first + t with -inf, updates its rows' online softmax (2 lanes per row), rounds
 * the tile's weights p = e^(s - m) to f16, rescales its f32 output rows in shared memory and adds P V (wmma).
 * Output rows go straight to c->att through the gathered order (perm), so no gather / scatter passes remain.
 *
 * Numerics vs the CPU backend (runner/cpu/attention.c, which rounds each *normalised* probability to f16 and
 * sums p_j v_j in f32): here the unnormalised weights e^(s_j - m_running) are rounded to f16, the running sum
 * l adds those rounded weights (so the weights that multiply V sum to exactly l), and the output is divided by
 * l at the end; the score and value sums run in tensor-core order. Each weight thus differs by one f16
 * rounding (relative 2^-11) from the CPU's, and sums by f32 reordering: tests/cuda/test_cuda_attn.c allows
 * 4e-3 x max|V| per output element (the old cuBLAS path's f16 rounding was of the same size).
 *
 * Traffic (Qwen3-14B, 2,048 tokens from cell 0): no score matrix in memory (the old path wrote and read ~80 GB
 * of f32 scores and f16 probabilities). K/V tiles are read once per row tile: 160 row tiles (BR = 64 rows,
 * ~13 tokens) x ~1,024 keys on average x 512 B = 84 MB per KV head and layer, 27 GB in all, from L2 (one
 * head's K/V is 1 MB); DRAM sees the KV cache about once per layer. Tensor-core work is the causal 1.7 TFLOP
 * (40 layers); per K tile a warp moves ~42 KB through shared memory (Q, K, V fragments, O loaded and stored
 * around P V) for 32 mma: shared-memory bound at roughly a third of the mma rate, ~5-10 ms for the 40 layers
 * by estimate. Next steps after measuring: O and Q in registers (mma.sync with a known fragment layout
 * instead of wmma), cp.async double-buffered K/V tiles, BK = 64 where shared memory allows (sm_90).
 */

struct fa_args {
	const float *q;        /* [n][q_dim] f32 (batch order) */
	float *out;            /* [n][q_dim] (batch order) */
	const int32_t *perm;   /* gathered row -> batch row */
	const uint8_t *kv;     /* f16 rows or q8 values */
	const __half *kv_d;    /* q8 scales or NULL */
	size_t k_base, v_base; /* element offset of this (layer, seq) K and V planes' cell 0 */
	int q_dim, kv_dim, G;
	int r0, cnt, first;    /* the segment: gathered rows [r0, r0 + cnt) are cells first .. first + cnt - 1 */
	float scale;
};

/* Leading dimensions of the shared tiles, padded so that the 16 rows a fragment load or a lane pair's row
 * loop touches fall in different banks (wmma needs multiples of 16 bytes and 32-byte aligned tile starts:
 * every region below is a multiple of 32 bytes for D in {64, 128, 256}, BK in {32, 64}). */
#define FA_LDH(n) ((n) + 8) /* f16 rows: Q, K, V [.][D], P [16][BK] */
#define FA_LDF(n) ((n) + 4) /* f32 rows: S [16][BK], O [16][D] */

/* Dynamic shared memory of k_flash_prefill<D, WARPS, BK> (bytes). */
static __host__ __device__ constexpr size_t fa_smem(int D, int warps, int bk)
{
	return (size_t)warps * 16 * FA_LDH(D) * 2        /* Q   [BR][D] f16 */
	       + 2 * (size_t)bk * FA_LDH(D) * 2          /* K, V [BK][D] f16 */
	       + (size_t)warps * 16 * FA_LDF(bk) * 4     /* S   per warp [16][BK] f32 */
	       + (size_t)warps * 16 * FA_LDH(bk) * 2     /* P   per warp [16][BK] f16 */
	       + (size_t)warps * 16 * FA_LDF(D) * 4;     /* O   per warp [16][D] f32 */
}

/* Copy cells [k0, k0 + BK) of one plane (head g's D values each) into t[BK][D] as f16; cells >= klim are zero
 * (their weights are 0, and 0 x garbage could be NaN). */
template <int D, int BK, int NT, bool Q8>
static __device__ __forceinline__ void fa_load_tile(__half *t, const struct fa_args &a, size_t plane, int g, int k0,
						    int klim)
{
	constexpr int CH = D / 8; /* 8-value chunks per cell */
	for (int i = threadIdx.x; i < BK * CH; i += NT) {
		const int kc = i / CH, ch = i % CH, j = k0 + kc;
		uint4 w = make_uint4(0u, 0u, 0u, 0u);
		if (j < klim) {
			const size_t off = plane + (size_t)j * a.kv_dim + (size_t)g * D + 8 * ch;
			if (Q8) {
				const uint2 qv = *(const uint2 *)(a.kv + off);
				const float d = __half2float(a.kv_d[off / 32]);
				uint32_t o[4];
#pragma unroll
				for (int e = 0; e < 4; e++) {
					const uint32_t src = e < 2 ? qv.x : qv.y;
					const float lo = d * (float)(int8_t)(src >> (16 * (e % 2)));
					const float hi = d * (float)(int8_t)(src >> (16 * (e % 2) + 8));
					o[e] = (uint32_t)__half_as_ushort(__float2half_rn(lo)) |
					       ((uint32_t)__half_as_ushort(__float2half_rn(hi)) << 16);
				}
				w = make_uint4(o[0], o[1], o[2], o[3]);
			} else {
				w = *(const uint4 *)((const __half *)a.kv + off);
			}
		}
		*(uint4 *)(t + (size_t)kc * FA_LDH(D) + 8 * ch) = w;
	}
}

template <int D, int WARPS, int BK, bool Q8>
static __global__ void __launch_bounds__(WARPS * RN_WARP, 2) k_flash_prefill(struct fa_args a)
{
	using namespace nvcuda;
	constexpr int NT = WARPS * RN_WARP, BR = WARPS * 16;
	constexpr int LQ = FA_LDH(D), LS = FA_LDF(BK), LP = FA_LDH(BK), LO = FA_LDF(D);
	extern __shared__ __align__(128) unsigned char fa_sm[];
	__half *sQ = (__half *)fa_sm;
	__half *sK = sQ + BR * LQ, *sV = sK + BK * LQ;
	float *sS = (float *)(sV + BK * LQ);
	__half *sP = (__half *)(sS + WARPS * 16 * LS);
	float *sO = (float *)(sP + WARPS * 16 * LP);

	const int warp = threadIdx.x / RN_WARP, lane = threadIdx.x % RN_WARP;
	const int g = blockIdx.y, G = a.G, rows = a.cnt * G;
	/* the heaviest row tiles (latest tokens) first */
	const int rt0 = (gridDim.x - 1 - blockIdx.x) * BR;
	const int t_blk = rn_cu_fa_last_token(rt0, BR, G, a.cnt);              /* last token of the block */
	const int t_warp = rn_cu_fa_last_token(rt0 + warp * 16, 16, G, a.cnt); /* last token of the warp */
	const int klim = a.first + t_blk + 1;                      /* keys the block reads */

	/* queries (rounded to f16 as the CPU rounds them), zero rows past the segment */
	for (int i = threadIdx.x; i < BR * D; i += NT) {
		const int r = rt0 + i / D, d = i % D;
		float v = 0.0f;
		if (r < rows) {
			const int t = r / G, h = r % G;
			v = a.q[(int64_t)a.perm[a.r0 + t] * a.q_dim + (int64_t)(g * G + h) * D + d];
		}
		sQ[(i / D) * LQ + d] = __float2half_rn(v);
	}
	float *oW = sO + warp * 16 * LO;
	for (int i = lane; i < 16 * LO; i += RN_WARP)
		oW[i] = 0.0f;

	/* this lane's row of the warp's 16 and its half of a tile's columns (every other column) */
	const int rw = lane / 2, hf = lane % 2, r = rt0 + warp * 16 + rw;
	const int lim = r < rows ? a.first + r / G : -1; /* last key of the row (inclusive) */
	float m = -INFINITY, l = 0.0f;
	float *sW = sS + warp * 16 * LS;
	__half *pW = sP + warp * 16 * LP;

	for (int k0 = 0; k0 < klim; k0 += BK) {
		__syncthreads(); /* the previous tile's readers are done (and, first time, sQ / oW are written) */
		fa_load_tile<D, BK, NT, Q8>(sK, a, a.k_base, g, k0, klim);
		fa_load_tile<D, BK, NT, Q8>(sV, a, a.v_base, g, k0, klim);
		__syncthreads();
		if (k0 > a.first + t_warp)
			continue; /* every key of the tile is past this warp's last token (warp-uniform) */
		/* S = Q_w K^T */
#pragma unroll
		for (int n = 0; n < BK / 16; n++) {
			wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
			wmma::fill_fragment(acc, 0.0f);
#pragma unroll
			for (int k = 0; k < D / 16; k++) {
				wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fq;
				wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fk;
				wmma::load_matrix_sync(fq, sQ + (warp * 16) * LQ + k * 16, LQ);
				wmma::load_matrix_sync(fk, sK + (n * 16) * LQ + k * 16, LQ);
				wmma::mma_sync(acc, fq, fk, acc);
			}
			wmma::store_matrix_sync(sW + n * 16, acc, LS, wmma::mem_row_major);
		}
		__syncwarp();
		/* online softmax of row rw over this tile (two lanes per row, every other column each) */
		float mx = -INFINITY;
		for (int c = hf; c < BK; c += 2) {
			const float s = k0 + c <= lim ? sW[rw * LS + c] * a.scale : -INFINITY;
			sW[rw * LS + c] = s;
			mx = fmaxf(mx, s);
		}
		mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
		const float mn = fmaxf(m, mx);
		const float bse = mn == -INFINITY ? 0.0f : mn; /* no e^(-inf - -inf) for a fully masked row */
		const float corr = __expf(m - bse);
		float sum = 0.0f;
		for (int c = hf; c < BK; c += 2) {
			const __half p = __float2half_rn(__expf(sW[rw * LS + c] - bse));
			pW[rw * LP + c] = p;
			sum += __half2float(p);
		}
		sum += __shfl_xor_sync(0xffffffffu, sum, 1);
		l = l * corr + sum;
		m = mn;
		for (int c = hf; c < D; c += 2)
			oW[rw * LO + c] *= corr;
		__syncwarp();
		/* O_w += P_w V */
#pragma unroll
		for (int dt = 0; dt < D / 16; dt++) {
			wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
			wmma::load_matrix_sync(acc, oW + dt * 16, LO, wmma::mem_row_major);
#pragma unroll
			for (int k = 0; k < BK / 16; k++) {
				wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fp;
				wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fv;
				wmma::load_matrix_sync(fp, pW + k * 16, LP);
				wmma::load_matrix_sync(fv, sV + (k * 16) * LQ + dt * 16, LQ);
				wmma::mma_sync(acc, fp, fv, acc);
			}
			wmma::store_matrix_sync(oW + dt * 16, acc, LO, wmma::mem_row_major);
		}
		__syncwarp();
	}
	__syncwarp();
	if (r < rows) {
		const int t = r / G, h = r % G;
		float *o = a.out + (int64_t)a.perm[a.r0 + t] * a.q_dim + (int64_t)(g * G + h) * D;
		const float inv = l > 0.0f ? 1.0f / l : 0.0f;
		for (int c = hf; c < D; c += 2)
			o[c] = oW[rw * LO + c] * inv;
	}
}

/* Tile shapes: BR = WARPS x 16 rows, BK cells; shared memory <= 99 KB (sm_89's limit per block):
 * D = 64: 4 warps, BK 64: 70 KB; D = 128: 4 warps, BK 32: 81 KB; D = 256: 2 warps, BK 32: 89 KB. */
template <int D> struct fa_shape;
template <> struct fa_shape<64> { static constexpr int WARPS = 4, BK = 64; };
template <> struct fa_shape<128> { static constexpr int WARPS = 4, BK = 32; };
template <> struct fa_shape<256> { static constexpr int WARPS = 2, BK = 32; };

template <int D, bool Q8>
static int fa_launch(const struct fa_args &a, int n_head_kv, cudaStream_t st, struct rn_error *err)
{
	constexpr int W = fa_shape<D>::WARPS, BK = fa_shape<D>::BK, BR = W * 16;
	constexpr size_t SM = fa_smem(D, W, BK);
	static_assert(SM <= 99 * 1024, "flash prefill tile exceeds 99 KB of shared memory");
	static_assert((BR * FA_LDH(D) * 2) % 32 == 0 && (BK * FA_LDH(D) * 2) % 32 == 0 && (16 * FA_LDF(BK) * 4) % 32 == 0 &&
			      (16 * FA_LDH(BK) * 2) % 32 == 0 && (16 * FA_LDF(D) * 4) % 32 == 0 && (16 * FA_LDH(D) * 2) % 32 == 0,
		      "flash prefill: every wmma tile must start 32-byte aligned");
	RN_CU_CHECK(cudaFuncSetAttribute(k_flash_prefill<D, W, BK, Q8>, cudaFuncAttributeMaxDynamicSharedMemorySize,
					 (int)SM));
	const int tiles = (a.cnt * a.G + BR - 1) / BR;
	k_flash_prefill<D, W, BK, Q8><<<dim3((unsigned)tiles, (unsigned)n_head_kv), W * RN_WARP, SM, st>>>(a);
	RN_CU_LAUNCHED();
	return RN_OK;
}

int rn_cu_attention_prefill(struct rn_cu *c, int layer, int n, const int32_t *seg, int n_seg, cudaStream_t st,
			    struct rn_error *err)
{
	(void)n;
	const size_t k_plane = (size_t)(2 * layer) * c->kv_plane_stride, v_plane = (size_t)(2 * layer + 1) * c->kv_plane_stride;
	const bool q8 = c->kv_d != NULL;
	for (int sgi = 0; sgi < n_seg; sgi++) {
		struct fa_args a;
		a.q = c->q;
		a.out = c->att;
		a.perm = c->perm_dev;
		a.kv = c->kv;
		a.kv_d = c->kv_d;
		const size_t so = (size_t)seg[4 * sgi] * c->kv_seq_stride;
		a.k_base = k_plane + so;
		a.v_base = v_plane + so;
		a.q_dim = c->q_dim;
		a.kv_dim = c->kv_dim;
		a.G = c->n_head / c->n_head_kv;
		a.r0 = seg[4 * sgi + 1];
		a.cnt = seg[4 * sgi + 2];
		a.first = seg[4 * sgi + 3];
		a.scale = c->kq_scale;
		if (a.cnt < 1)
			continue;
		int rc;
		switch (c->head_dim) {
		case 64: rc = q8 ? fa_launch<64, true>(a, c->n_head_kv, st, err) : fa_launch<64, false>(a, c->n_head_kv, st, err); break;
		case 128: rc = q8 ? fa_launch<128, true>(a, c->n_head_kv, st, err) : fa_launch<128, false>(a, c->n_head_kv, st, err); break;
		case 256: rc = q8 ? fa_launch<256, true>(a, c->n_head_kv, st, err) : fa_launch<256, false>(a, c->n_head_kv, st, err); break;
		default: return rn_error_set(err, RN_ERR_INVALID_ARG, "head size %d has no CUDA attention kernel", c->head_dim);
		}
		if (rc)
			return rc;
	}
	return RN_OK;
}
