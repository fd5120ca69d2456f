/* runner/cuda/ops.cu — the small kernels around the matmuls: embedding rows, RMSNorm / SwiGLU with the
 * activation formats the next matmul wants (f32, int8 blocks, f16, bf16, FP8 groups), the QKV epilogue
 * (bias, QK-norm, RoPE, KV-cache store), row gathers, bias adds and the re-rotation of cached keys.
 *
 * The arithmetic follows runner/cpu exactly where it decides results: RMSNorm sums squares in double, the
 * int8 activation blocks use 127/amax with round-half-even and ggml's scales (bit-identical bytes), F16/BF16
 * weights get activations rounded to f16/bf16 as the CPU rounds them, RoPE and the KV rows use the
 * CPU's cos/sin (precomputed on the host) with the CPU's roundings (common.cuh: rn_rope_pair), SwiGLU uses
 * the CPU's exp polynomial (rn_swiglu), q8_0 KV rows use d = amax/127 as f16.
 */
#include "runner/cuda/internal.cuh"

#define PREP_THREADS 512 /* one block per row: a decode row's 5120..17408 values in few strides */
#define PREP_WARPS (PREP_THREADS / RN_WARP)

/* ---------------------------------------------------------------------------------------------- prep */

static __device__ double block_sum_d(double v, double *sm)
{
	const int warp = threadIdx.x / RN_WARP, lane = threadIdx.x % RN_WARP;
#pragma unroll
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	if (lane == 0)
		sm[warp] = v;
	__syncthreads();
	double t = 0;
	for (int w = 0; w < (int)(blockDim.x / RN_WARP); w++)
		t += sm[w];
	__syncthreads();
	return t;
}

static __global__ void __launch_bounds__(PREP_THREADS) k_prep(struct rn_cu_prep p)
{
	__shared__ double sm[PREP_WARPS];
	const int64_t row = blockIdx.x;
	const int tid = threadIdx.x, warp = tid / RN_WARP, lane = tid % RN_WARP;
	const int cols = p.cols;
	const float *x = p.in + row * p.ld_in;
	const float *mul = p.mul ? p.mul + row * p.ld_in : NULL;
	float *o = p.out.x + row * p.out.ldx;
	/* the norm weights are model constants: on their way to L2 while the previous kernel finishes */
	if (p.norm)
		for (int i = tid * 32; i < cols; i += PREP_THREADS * 32)
			rn_prefetch_l2(p.norm + i);
	rn_pdl_wait();
	rn_pdl_trigger();

	if (mul || p.norm) {
		double ss = 0;
		for (int i = tid; i < cols; i += PREP_THREADS) {
			float v = x[i];
			if (mul) {
				v = rn_swiglu(v, mul[i]);
				o[i] = v;
			}
			ss += (double)__fmul_rn(v, v);
		}
		if (p.norm) {
			double sum = block_sum_d(ss, sm);
			float scale = 1.0f / sqrtf(__fadd_rn((float)(sum / cols), p.eps));
			for (int i = tid; i < cols; i += PREP_THREADS) {
				float v = mul ? o[i] : x[i];
				o[i] = __fmul_rn(__fmul_rn(v, scale), p.norm[i]);
			}
		}
	} else if (o != x) {
		for (int i = tid; i < cols; i += PREP_THREADS)
			o[i] = x[i];
	}
	__syncthreads();

	if (p.fmt & PREP_Q8_32) {
		int8_t *q = p.out.q32 + row * p.out.ldq;
		for (int b = warp; b < cols / 32; b += PREP_WARPS) {
			float v = o[32 * b + lane];
			float amax = rn_warp_max(fabsf(v));
			float id = amax > 0.0f ? 127.0f / amax : 0.0f;
			int qv = __float2int_rn(__fmul_rn(v, id));
			q[32 * b + lane] = (int8_t)qv;
			int sum = qv;
#pragma unroll
			for (int s = 16; s > 0; s >>= 1)
				sum += __shfl_xor_sync(0xffffffffu, sum, s);
			if (lane == 0) {
				/* ggml's x86 Q8_0/Q8_1 quantizers, as runner/cpu: d = f16(amax/127), sm = f16(amax/127 * sum) */
				const float db = amax / 127.0f;
				p.out.d32[row * (p.out.ldq / 32) + b] = __half2float(__float2half_rn(db));
				p.out.s32[row * (p.out.ldq / 32) + b] = sum;
				p.out.sm32[row * (p.out.ldq / 32) + b] = __half2float(__float2half_rn(__fmul_rn(db, (float)sum)));
			}
		}
	}
	if (p.fmt & PREP_Q8_256) {
		int8_t *q = p.out.q256 + row * p.out.ldq;
		for (int b = warp; b < cols / 256; b += PREP_WARPS) {
			const float *src = o + 256 * b + 8 * lane;
			float v[8], amax = 0.0f;
#pragma unroll
			for (int i = 0; i < 8; i++) {
				v[i] = src[i];
				amax = fmaxf(amax, fabsf(v[i]));
			}
			amax = rn_warp_max(amax);
			float id = amax > 0.0f ? 127.0f / amax : 0.0f;
			uint32_t lo = 0, hi = 0;
			int sum = 0;
#pragma unroll
			for (int i = 0; i < 8; i++) {
				int qv = __float2int_rn(__fmul_rn(v[i], id));
				sum += qv;
				if (i < 4)
					lo |= (uint32_t)(uint8_t)qv << (8 * i);
				else
					hi |= (uint32_t)(uint8_t)qv << (8 * (i - 4));
			}
			*(uint2 *)(q + 256 * b + 8 * lane) = make_uint2(lo, hi);
			sum += __shfl_xor_sync(0xffffffffu, sum, 1);
			if ((lane & 1) == 0)
				p.out.s256[row * (p.out.ldq / 16) + 16 * b + lane / 2] = (int16_t)sum;
			if (lane == 0) /* ggml's Q8_K: d = 1 / (127 / amax) */
				p.out.d256[row * (p.out.ldq / 256) + b] = amax > 0.0f ? 1.0f / id : 0.0f;
		}
	}
	if (p.fmt & PREP_F16) {
		__half *h = p.out.h16 + row * p.out.ldq;
		for (int i = tid; i < cols; i += PREP_THREADS)
			h[i] = __float2half_rn(o[i]);
	}
	if (p.fmt & PREP_BF16) {
		__nv_bfloat16 *h = p.out.b16 + row * p.out.ldq;
		for (int i = tid; i < cols; i += PREP_THREADS)
			h[i] = __float2bfloat16_rn(o[i]);
	}
	if (p.fmt & PREP_FP8) {
		uint8_t *q = p.out.f8 + row * p.out.ldq;
		for (int g = warp; g < cols / 128; g += PREP_WARPS) {
			float4 v = *(const float4 *)(o + 128 * g + 4 * lane);
			float amax = rn_warp_max(fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w))));
			float scale = amax > 0.0f ? amax / 448.0f : 1.0f, inv = 1.0f / scale;
			uint32_t w = (uint32_t)__nv_cvt_float_to_fp8(v.x * inv, __NV_SATFINITE, __NV_E4M3) |
				     ((uint32_t)__nv_cvt_float_to_fp8(v.y * inv, __NV_SATFINITE, __NV_E4M3) << 8) |
				     ((uint32_t)__nv_cvt_float_to_fp8(v.z * inv, __NV_SATFINITE, __NV_E4M3) << 16) |
				     ((uint32_t)__nv_cvt_float_to_fp8(v.w * inv, __NV_SATFINITE, __NV_E4M3) << 24);
			*(uint32_t *)(q + 128 * g + 4 * lane) = w;
			if (lane == 0)
				p.out.f8s[rn_cu_f8s_at(g, row, p.n_rows_total)] = scale; /* gemm.cu's layout */
		}
	}
}

int rn_cu_prep(const struct rn_cu_prep *p, int n, cudaStream_t st, struct rn_error *err)
{
	if (n <= 0)
		return RN_OK;
	(void)rn_cu_launch(k_prep, dim3((unsigned)n), dim3(PREP_THREADS), 0, st, *p);
	RN_CU_LAUNCHED();
	return RN_OK;
}

/* ---------------------------------------------------------------------------------------------- embedding */

struct f32_writer {
	float *row;
	__device__ void operator()(int64_t col, float v) const { row[col] = v; }
};

static __global__ void k_embed(struct rn_cw_mat e, const int32_t *tok, const int32_t *seq, const int32_t *sampled,
			       float *x, int64_t ldx)
{
	const int row = blockIdx.x;
	int32_t t = tok[row];
	if (t == RN_CUDA_TOKEN_FROM_SAMPLE)
		t = sampled[seq[row]];
	if (t < 0 || t >= e.rows)
		t = 0; /* the host validated ids; a bad sampled id cannot address outside the table */
	struct f32_writer wr = {x + (int64_t)row * ldx};
	const int64_t units = rn_cw_units(e.type, e.cols);
	for (int64_t u = threadIdx.x; u < units; u += blockDim.x)
		rn_unit_dequant(e.type, e, t, u, wr);
}

int rn_cu_embed(const struct rn_cu *c, int n, cudaStream_t st, struct rn_error *err)
{
	k_embed<<<n, 128, 0, st>>>(c->tok_embd.m, c->sd.tok, c->sd.seq, c->sampled, c->x, c->n_embd);
	RN_CU_LAUNCHED();
	return RN_OK;
}

/* ---------------------------------------------------------------------------------------------- QKV epilogue */

struct qkv_args {
	const float *qkv;  /* [n][qkv_dim]: Q | K | V of each row, as the fused matvec wrote them */
	float *q;          /* [n][q_dim]: Q after bias, norm and RoPE (attention's input) */
	int qkv_dim, q_dim, kv_dim, D, H, HK;
	const float *bq, *bk, *bv, *q_norm, *k_norm;
	float eps;
	int rope_neox;
	const float *rope_tab;
	int rope_tab_n, n_rot;
	const float *cs_extra;
	const int32_t *pos, *seq, *cell;
	uint8_t *kv;       /* f16 rows or q8 values */
	__half *kv_d;      /* q8 scales or NULL */
	size_t k_plane, v_plane; /* element offsets of this layer's K and V planes */
	size_t seq_stride;
};

/* Store one head (D values in sm) into a KV row at element offset `off`: f16, or q8_0 as the CPU does. */
static __device__ void kv_store_head(const float *h, int D, uint8_t *kv, __half *kv_d, size_t off)
{
	const int lane = threadIdx.x % RN_WARP;
	if (!kv_d) {
		__half *dst = (__half *)kv + off;
		for (int i = lane; i < D; i += RN_WARP)
			dst[i] = __float2half_rn(h[i]);
		return;
	}
	for (int b = 0; b < D / 32; b++) {
		float v = h[32 * b + lane];
		float amax = rn_warp_max(fabsf(v));
		float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
		kv[off + 32 * b + lane] = (uint8_t)(int8_t)__float2int_rn(__fmul_rn(v, id));
		if (lane == 0)
			kv_d[(off + 32 * b) / 32] = __float2half_rn(d);
	}
}

/* RoPE of one head in shared memory (pairs as the model's type), cos/sin from cs: fused as the CPU backend's
 * forward rotation (rn_ops_rope) or, for the re-rotation of cached keys, unfused as rn_rope_apply. */
static __device__ void rope_head(float *h, const float *cs, int n_rot, int neox, bool fused)
{
	const int lane = threadIdx.x % RN_WARP, half = n_rot / 2;
	__syncwarp();
	for (int i = lane; i < half; i += RN_WARP) {
		const float c = cs[2 * i], s = cs[2 * i + 1];
		const int i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
		if (fused)
			rn_rope_pair(c, s, &h[i0], &h[i1]);
		else
			rn_rope_pair_unfused(c, s, &h[i0], &h[i1]);
	}
	__syncwarp();
}

/* One warp per (row, head); heads are the H query heads, then HK key heads, then HK value heads. */
#define QKV_WARPS 4
static __global__ void __launch_bounds__(QKV_WARPS *RN_WARP) k_qkv_post(struct qkv_args a, int n)
{
	extern __shared__ float qsm[];
	const int warp = threadIdx.x / RN_WARP, lane = threadIdx.x % RN_WARP;
	const int per_row = a.H + 2 * a.HK;
	const int64_t task = (int64_t)blockIdx.x * QKV_WARPS + warp;
	rn_pdl_wait();
	rn_pdl_trigger();
	if (task >= (int64_t)n * per_row)
		return;
	const int row = (int)(task / per_row), h = (int)(task % per_row), D = a.D;
	float *sh = qsm + warp * D;
	/* head h's values start at h * D of the Q|K|V row in every case (K at q_dim, V at q_dim + kv_dim) */
	const float *src = a.qkv + (int64_t)row * a.qkv_dim + (int64_t)h * D;
	const float *bias, *norm;
	int kind; /* 0 q, 1 k, 2 v */
	if (h < a.H) {
		kind = 0;
		bias = a.bq ? a.bq + h * D : NULL;
		norm = a.q_norm;
	} else if (h < a.H + a.HK) {
		kind = 1;
		bias = a.bk ? a.bk + (h - a.H) * D : NULL;
		norm = a.k_norm;
	} else {
		kind = 2;
		bias = a.bv ? a.bv + (h - a.H - a.HK) * D : NULL;
		norm = NULL;
	}
	double ss = 0;
	for (int i = lane; i < D; i += RN_WARP) {
		float v = src[i];
		if (bias)
			v = __fadd_rn(v, bias[i]);
		sh[i] = v;
		ss += (double)__fmul_rn(v, v);
	}
	__syncwarp();
	if (norm) {
#pragma unroll
		for (int o = 16; o > 0; o >>= 1)
			ss += __shfl_xor_sync(0xffffffffu, ss, o);
		float scale = 1.0f / sqrtf(__fadd_rn((float)(ss / D), a.eps));
		for (int i = lane; i < D; i += RN_WARP)
			sh[i] = __fmul_rn(__fmul_rn(sh[i], scale), norm[i]);
	}
	if (kind < 2) {
		const int32_t p = a.pos[row];
		const float *cs = p < a.rope_tab_n ? a.rope_tab + (int64_t)p * a.n_rot : a.cs_extra + (int64_t)row * a.n_rot;
		rope_head(sh, cs, a.n_rot, a.rope_neox, true);
	}
	if (kind == 0) {
		float *dst = a.q + (int64_t)row * a.q_dim + (int64_t)h * D;
		for (int i = lane; i < D; i += RN_WARP)
			dst[i] = sh[i];
		return;
	}
	const int g = kind == 1 ? h - a.H : h - a.H - a.HK;
	size_t off = (kind == 1 ? a.k_plane : a.v_plane) + (size_t)a.seq[row] * a.seq_stride +
		     (size_t)a.cell[row] * (size_t)a.kv_dim + (size_t)g * (size_t)D;
	kv_store_head(sh, D, a.kv, a.kv_d, off);
}

int rn_cu_qkv_post(const struct rn_cu *c, const struct rn_cu_layer *l, int layer, int n, cudaStream_t st,
		   struct rn_error *err)
{
	struct qkv_args a;
	a.qkv = c->qkv;
	a.q = c->q;
	a.qkv_dim = c->qkv_dim;
	a.q_dim = c->q_dim;
	a.kv_dim = c->kv_dim;
	a.D = c->head_dim;
	a.H = c->n_head;
	a.HK = c->n_head_kv;
	a.bq = l->bq;
	a.bk = l->bk;
	a.bv = l->bv;
	a.q_norm = l->q_norm;
	a.k_norm = l->k_norm;
	a.eps = c->eps;
	a.rope_neox = c->rope.type == RN_ROPE_NEOX;
	a.rope_tab = c->rope_tab;
	a.rope_tab_n = c->rope_tab_n;
	a.n_rot = c->n_rot;
	a.cs_extra = c->sd.cs_extra;
	a.pos = c->sd.pos;
	a.seq = c->sd.seq;
	a.cell = c->sd.cell;
	a.kv = c->kv;
	a.kv_d = c->kv_d;
	a.k_plane = (size_t)(2 * layer) * c->kv_plane_stride;
	a.v_plane = (size_t)(2 * layer + 1) * c->kv_plane_stride;
	a.seq_stride = c->kv_seq_stride;
	int64_t tasks = (int64_t)n * (c->n_head + 2 * c->n_head_kv);
	unsigned blocks = (unsigned)((tasks + QKV_WARPS - 1) / QKV_WARPS);
	(void)rn_cu_launch(k_qkv_post, dim3(blocks), dim3(QKV_WARPS * RN_WARP), QKV_WARPS * c->head_dim * sizeof(float), st,
			   a, n);
	RN_CU_LAUNCHED();
	return RN_OK;
}

/* ---------------------------------------------------------------------------------------------- rows */

static __global__ void k_gather(float *dst, const float *src, int64_t ld, int64_t cols, const int32_t *rows)
{
	const int k = blockIdx.x;
	const float *s = src + (int64_t)rows[k] * ld;
	float *d = dst + (int64_t)k * ld;
	for (int64_t i = threadIdx.x; i < cols; i += blockDim.x)
		d[i] = s[i];
}

int rn_cu_gather_rows(float *dst, const float *src, int64_t ld, int64_t cols, const int32_t *rows, int n,
		      cudaStream_t st, struct rn_error *err)
{
	if (n <= 0)
		return RN_OK;
	k_gather<<<n, 256, 0, st>>>(dst, src, ld, cols, rows);
	RN_CU_LAUNCHED();
	return RN_OK;
}

static __global__ void k_add_bias(float *y, int64_t ldy, const float *bias, int64_t cols)
{
	float *r = y + (int64_t)blockIdx.x * ldy;
	for (int64_t i = threadIdx.x; i < cols; i += blockDim.x)
		r[i] += bias[i];
}

int rn_cu_add_bias(float *y, int64_t ldy, const float *bias, int64_t cols, int n, cudaStream_t st,
		   struct rn_error *err)
{
	if (n <= 0 || !bias)
		return RN_OK;
	k_add_bias<<<n, 256, 0, st>>>(y, ldy, bias, cols);
	RN_CU_LAUNCHED();
	return RN_OK;
}

/* ---------------------------------------------------------------------------------------------- KV rotation */

struct rot_args {
	uint8_t *kv;
	__half *kv_d;
	size_t plane_stride, seq_stride;
	int kv_dim, D, HK, n_layer, c0, c1, n_rot, neox;
	int seq;
	const float *cs;
};

/* One warp per (layer, cell, KV head): load the key head, rotate by the (unit) cos/sin, store as the CPU. */
static __global__ void __launch_bounds__(QKV_WARPS *RN_WARP) k_kv_rotate(struct rot_args a)
{
	extern __shared__ float rsm[];
	const int warp = threadIdx.x / RN_WARP, lane = threadIdx.x % RN_WARP;
	const int64_t per_layer = (int64_t)(a.c1 - a.c0) * a.HK;
	const int64_t task = (int64_t)blockIdx.x * QKV_WARPS + warp;
	if (task >= per_layer * a.n_layer)
		return;
	const int layer = (int)(task / per_layer), r = (int)(task % per_layer);
	const int cell = a.c0 + r / a.HK, g = r % a.HK, D = a.D;
	float *sh = rsm + warp * D;
	size_t off = (size_t)(2 * layer) * a.plane_stride + (size_t)a.seq * a.seq_stride + (size_t)cell * a.kv_dim +
		     (size_t)g * D;
	for (int i = lane; i < D; i += RN_WARP)
		sh[i] = a.kv_d ? __half2float(a.kv_d[(off + i) / 32]) * (float)(int8_t)a.kv[off + i]
			       : __half2float(((const __half *)a.kv)[off + i]);
	rope_head(sh, a.cs, a.n_rot, a.neox, false);
	kv_store_head(sh, D, a.kv, a.kv_d, off);
}

int rn_cu_kv_rotate_launch(const struct rn_cu *c, int seq, int c0, int c1, const float *cs_dev, cudaStream_t st,
			   struct rn_error *err)
{
	struct rot_args a;
	a.kv = c->kv;
	a.kv_d = c->kv_d;
	a.plane_stride = c->kv_plane_stride;
	a.seq_stride = c->kv_seq_stride;
	a.kv_dim = c->kv_dim;
	a.D = c->head_dim;
	a.HK = c->n_head_kv;
	a.n_layer = c->n_layer;
	a.c0 = c0;
	a.c1 = c1;
	a.n_rot = c->n_rot;
	a.neox = c->rope.type == RN_ROPE_NEOX;
	a.seq = seq;
	a.cs = cs_dev;
	int64_t tasks = (int64_t)(c1 - c0) * c->n_head_kv * c->n_layer;
	unsigned blocks = (unsigned)((tasks + QKV_WARPS - 1) / QKV_WARPS);
	k_kv_rotate<<<blocks, QKV_WARPS * RN_WARP, QKV_WARPS * c->head_dim * sizeof(float), st>>>(a);
	RN_CU_LAUNCHED();
	return RN_OK;
}
