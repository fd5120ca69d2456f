/* runner/cuda/attention.cu — attention over the KV cache: split-K "flash-decoding" for decode steps, and
 * GEMM-based causal attention (cuBLAS on f16 tiles) for prompt chunks.
 *
 * Decode: one block per (chunk of the row's cells, KV head, row) serves the query heads that share the KV head
 * (GQA: Qwen3-14B's 5 per KV head), so each K and V row is read once for all of them. Inside a block, groups
 * of D/8 lanes take one cell at a time (8 values per lane, 16-byte f16 loads, ATT_U cells in flight), each
 * group keeps its own online softmax state; groups merge through shuffles, warps through shared memory,
 * chunks in a combine kernel. The chunks depend only on the row's cell count and the device (rn_cu_att_chunk).
 * Prefill: per sequence segment and KV head, S = K Q^T (strided-batched over the group's query heads with
 * the same K), a causal softmax writing f16 probabilities (rounded as the CPU backend rounds them), O = V P.
 */
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

/* The cell that lane group sub of warp w reads as its u-th cell in the iteration whose first cell is jb
 * (jb = j0 + w * cpw, j0 + w * cpw + ATT_U * ng, ...: the loop bound jb < j1 is the same for every lane of
 * the warp, so the shuffles inside see all 32 lanes; a cell >= j1 is masked, never skipped). Host-checked. */
static __host__ __device__ __forceinline__ int att_cell(int jb, int u, int sub, int ng)
{
	return jb + u * ng + sub;
}

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
			const int j = att_cell(jb, u, sub, NG);
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

/* dst[k] = f16(src[perm[k]]) for the queries, in sequence-gathered order. */
static __global__ void k_gather_q16(__half *dst, const float *src, int64_t cols, const int32_t *perm)
{
	const int k = blockIdx.x;
	const float *s = src + (int64_t)perm[k] * cols;
	__half *d = dst + (int64_t)k * cols;
	for (int64_t i = threadIdx.x; i < cols; i += blockDim.x)
		d[i] = __float2half_rn(s[i]);
}

static __global__ void k_scatter(float *dst, const float *src, int64_t cols, const int32_t *perm)
{
	const int k = blockIdx.x;
	const float *s = src + (int64_t)k * cols;
	float *d = dst + (int64_t)perm[k] * cols;
	for (int64_t i = threadIdx.x; i < cols; i += blockDim.x)
		d[i] = s[i];
}

/* q8_0 cells [0, n) of one (layer, seq) K and V to f16 rows [2][n][kv_dim]. */
static __global__ void k_kv_to_f16(__half *dst, const uint8_t *kv, const __half *kv_d, size_t k_off, size_t v_off,
				   int kv_dim, int n, int64_t dst_plane)
{
	const int64_t total = (int64_t)n * kv_dim;
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < 2 * total; i += (int64_t)gridDim.x * blockDim.x) {
		const int t = i >= total;
		const int64_t e = i - t * total;
		const size_t off = (t ? v_off : k_off) + (size_t)e;
		dst[t * dst_plane + e] = __float2half_rn(__half2float(kv_d[off / 32]) * (float)(int8_t)kv[off]);
	}
}

/* Causal softmax of the score rows: row (h, t) of a [G][qc][ld] block keeps keys [0, first + t]; writes the
 * normalised probabilities as f16 (zero past the limit) exactly as runner/cpu rounds them. */
static __global__ void k_softmax_causal(const float *s, __half *p, int64_t ld, int qc, int n_keys, int first)
{
	__shared__ float red[32];
	__shared__ double redd[32];
	const int r = blockIdx.x, t = r % qc;
	const float *sr = s + (int64_t)r * ld;
	__half *pr = p + (int64_t)r * ld;
	const int lim = min(n_keys, first + t + 1);
	const int warp = threadIdx.x / RN_WARP, lane = threadIdx.x % RN_WARP, nw = blockDim.x / RN_WARP;
	float mx = -INFINITY;
	for (int j = threadIdx.x; j < lim; j += blockDim.x)
		mx = fmaxf(mx, sr[j]);
	mx = rn_warp_max(mx);
	if (lane == 0)
		red[warp] = mx;
	__syncthreads();
	mx = -INFINITY;
	for (int w = 0; w < nw; w++)
		mx = fmaxf(mx, red[w]);
	double sum = 0;
	for (int j = threadIdx.x; j < lim; j += blockDim.x)
		sum += (double)expf(sr[j] - mx);
#pragma unroll
	for (int o = 16; o > 0; o >>= 1)
		sum += __shfl_xor_sync(0xffffffffu, sum, o);
	if (lane == 0)
		redd[warp] = sum;
	__syncthreads();
	sum = 0;
	for (int w = 0; w < nw; w++)
		sum += redd[w];
	const float inv = (float)(1.0 / sum);
	for (int j = threadIdx.x; j < (int)ld; j += blockDim.x)
		pr[j] = __float2half_rn(j < lim ? expf(sr[j] - mx) * inv : 0.0f);
}

int rn_cu_attention_prefill(struct rn_cu *c, int layer, int n, const int32_t *seg, int n_seg, cudaStream_t st,
			    struct rn_error *err)
{
	const int D = c->head_dim, G = c->n_head / c->n_head_kv;
	k_gather_q16<<<n, 256, 0, st>>>(c->q16, c->q, c->q_dim, c->perm_dev);
	RN_CU_LAUNCHED();
	const size_t k_plane = (size_t)(2 * layer) * c->kv_plane_stride, v_plane = (size_t)(2 * layer + 1) * c->kv_plane_stride;
	RN_CU_BLAS(cublasSetStream(c->blas, st));
	for (int sgi = 0; sgi < n_seg; sgi++) {
		const int seq = seg[4 * sgi], r0 = seg[4 * sgi + 1], cnt = seg[4 * sgi + 2], first = seg[4 * sgi + 3];
		const int n_keys = first + cnt;
		const int64_t nkp = (n_keys + 7) / 8 * 8;
		const __half *kb, *vb;
		if (c->kv_d) {
			size_t so = (size_t)seq * c->kv_seq_stride;
			k_kv_to_f16<<<1024, 256, 0, st>>>(c->kv16, c->kv, c->kv_d, k_plane + so, v_plane + so, c->kv_dim, n_keys,
							  (int64_t)c->p.n_ctx * c->kv_dim);
			RN_CU_LAUNCHED();
			kb = c->kv16;
			vb = c->kv16 + (size_t)c->p.n_ctx * c->kv_dim;
		} else {
			kb = (const __half *)c->kv + k_plane + (size_t)seq * c->kv_seq_stride;
			vb = (const __half *)c->kv + v_plane + (size_t)seq * c->kv_seq_stride;
		}
		int64_t qc = (int64_t)(RN_CU_ATT_SBUF / 4) / ((int64_t)G * nkp);
		if (qc < 1)
			qc = 1;
		if (qc > cnt)
			qc = cnt;
		for (int g = 0; g < c->n_head_kv; g++) {
			for (int t0 = 0; t0 < cnt; t0 += (int)qc) {
				const int nq = cnt - t0 < qc ? cnt - t0 : (int)qc;
				const float alpha = c->kq_scale, beta = 0.0f, one = 1.0f;
				/* S_h (n_keys x nq, col-major, ld nkp) = K_g^T Q_h for the G heads of KV head g */
				RN_CU_BLAS(cublasGemmStridedBatchedEx(
					c->blas, CUBLAS_OP_T, CUBLAS_OP_N, n_keys, nq, D, &alpha, kb + (size_t)g * D, CUDA_R_16F,
					c->kv_dim, 0, c->q16 + (int64_t)(r0 + t0) * c->q_dim + (int64_t)g * G * D, CUDA_R_16F,
					c->q_dim, D, &beta, c->att_s, CUDA_R_32F, (int)nkp, nkp * nq, G, CUBLAS_COMPUTE_32F,
					CUBLAS_GEMM_DEFAULT));
				k_softmax_causal<<<(unsigned)(G * nq), 256, 0, st>>>(c->att_s, c->att_p, nkp, nq, n_keys,
										    first + t0);
				RN_CU_LAUNCHED();
				/* O_h (D x nq, col-major, ld q_dim) = V_g P_h */
				RN_CU_BLAS(cublasGemmStridedBatchedEx(
					c->blas, CUBLAS_OP_N, CUBLAS_OP_N, D, nq, n_keys, &one, vb + (size_t)g * D, CUDA_R_16F,
					c->kv_dim, 0, c->att_p, CUDA_R_16F, (int)nkp, nkp * nq, &beta,
					c->att_g + (int64_t)(r0 + t0) * c->q_dim + (int64_t)g * G * D, CUDA_R_32F, c->q_dim, D, G,
					CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
			}
		}
	}
	k_scatter<<<n, 256, 0, st>>>(c->att, c->att_g, c->q_dim, c->perm_dev);
	RN_CU_LAUNCHED();
	return RN_OK;
}
