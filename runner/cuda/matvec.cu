/* runner/cuda/matvec.cu — the decode matvec: y = W x for up to RN_CU_MMV_MAX activation rows, memory-bound.
 *
 * One row of W per warp (or, for matrices with few rows, per 2 or 4 warps of a block so that enough loads are
 * in flight): each lane walks the row's units (runner/cuda/quant.cuh) with 16-byte loads, decodes them in
 * registers and multiplies with int8 activations through dp4a (quantized types) or with f32 activations
 * (F16, BF16, F32, FP8); the partial sums meet in a shuffle reduction. The weights are read once for all the
 * activation rows of the launch. Deliberately not here: the activation quantization (runner/cuda/ops.cu).
 */
#include <stdlib.h>

#include "runner/cuda/internal.cuh"

#define MMV_THREADS 128
#define MMV_WARPS (MMV_THREADS / RN_WARP)

static struct rn_cw_act make_act(const struct rn_cu_acts *a, int type)
{
	struct rn_cw_act r;
	memset(&r, 0, sizeof r);
	switch (rn_cw_table[type].act) {
	case CA_F32:
		r.x = a->x;
		r.ldx = a->ldx;
		break;
	case CA_F16:
		r.x16 = (const uint16_t *)a->h16;
		r.ldx16 = a->ldq;
		break;
	case CA_BF16:
		r.x16 = (const uint16_t *)a->b16;
		r.ldx16 = a->ldq;
		break;
	case CA_Q8_32:
		r.qs = a->q32;
		r.ldq = a->ldq;
		r.d = a->d32;
		r.ldd = a->ldq / 32;
		r.s = a->s32;
		r.sm = a->sm32;
		r.lds = a->ldq / 32;
		break;
	default:
		r.qs = a->q256;
		r.ldq = a->ldq;
		r.d = a->d256;
		r.ldd = a->ldq / 256;
		r.s = a->s256;
		r.lds = a->ldq / 16;
		break;
	}
	return r;
}

/* Sum acc over the wpr warps that share a row (warps w .. w + wpr - 1 of the block). */
template <int NC>
static __device__ __forceinline__ void reduce_row(float *acc, int wpr, float (*sm)[RN_CU_MMV_MAX])
{
	const int warp = threadIdx.x / RN_WARP, lane = threadIdx.x % RN_WARP;
#pragma unroll
	for (int j = 0; j < NC; j++)
		acc[j] = rn_warp_sum(acc[j]);
	if (wpr == 1)
		return;
	if (lane == 0)
#pragma unroll
		for (int j = 0; j < NC; j++)
			sm[warp][j] = acc[j];
	__syncthreads();
	if (warp % wpr == 0 && lane == 0)
		for (int k = 1; k < wpr; k++)
#pragma unroll
			for (int j = 0; j < NC; j++)
				acc[j] += sm[warp + k][j];
}

/* Before the dependency wait: the row's values (plane 0) on their way into L2, one 128-byte line per lane
 * and step, while the kernel before finishes (weights are never written during a forward). */
template <int TYPE>
static __device__ __forceinline__ void prefetch_row(const struct rn_cw_mat &w, int64_t row, int t, int nt)
{
	const int64_t bytes = rn_cw_row_bytes0(TYPE, w.cols);
	const uint8_t *base = w.p[0] + row * bytes;
	for (int64_t o = (int64_t)t * 128; o < bytes; o += (int64_t)nt * 128)
		rn_prefetch_l2(base + o);
}

template <int TYPE, int NC>
static __global__ void __launch_bounds__(MMV_THREADS) k_mmv(struct rn_cw_mat w, struct rn_cw_act a, float *y,
							      int64_t ldy, const float *bias, int accumulate, int wpr)
{
	__shared__ float sm[MMV_WARPS][RN_CU_MMV_MAX];
	const int warp = threadIdx.x / RN_WARP, lane = threadIdx.x % RN_WARP;
	const int64_t row = (int64_t)blockIdx.x * (MMV_WARPS / wpr) + warp / wpr;
	const bool live = row < w.rows;
	if (live)
		prefetch_row<TYPE>(w, row, (warp % wpr) * RN_WARP + lane, RN_WARP * wpr);
	rn_pdl_wait(); /* the activations (and, accumulating, y) come from the kernels before */
	rn_pdl_trigger();
	float acc[NC];
#pragma unroll
	for (int j = 0; j < NC; j++)
		acc[j] = 0.0f;
	if (live) {
		const int64_t units = rn_cw_units(TYPE, w.cols);
		const int stride = RN_WARP * wpr;
#pragma unroll 2
		for (int64_t u = (warp % wpr) * RN_WARP + lane; u < units; u += stride)
			rn_unit_dot<TYPE, NC>(w, row, u, a, acc);
	}
	reduce_row<NC>(acc, wpr, sm);
	if (!live || warp % wpr != 0)
		return;
	/* lane j writes output row j */
#pragma unroll
	for (int j = 0; j < NC; j++)
		if (lane == j) {
			float v = acc[j] + (bias ? bias[row] : 0.0f);
			float *dst = y + (int64_t)j * ldy + row;
			*dst = accumulate ? *dst + v : v;
		}
}

template <int TYPE, int NC>
static __global__ void __launch_bounds__(MMV_THREADS) k_mmv_gu(struct rn_cw_mat g, struct rn_cw_mat up, struct rn_cw_act a,
								 float *y, int64_t ldy, int wpr)
{
	__shared__ float sm[MMV_WARPS][RN_CU_MMV_MAX];
	const int warp = threadIdx.x / RN_WARP, lane = threadIdx.x % RN_WARP;
	const int64_t row = (int64_t)blockIdx.x * (MMV_WARPS / wpr) + warp / wpr;
	const bool live = row < g.rows;
	if (live) {
		prefetch_row<TYPE>(g, row, (warp % wpr) * RN_WARP + lane, RN_WARP * wpr);
		prefetch_row<TYPE>(up, row, (warp % wpr) * RN_WARP + lane, RN_WARP * wpr);
	}
	rn_pdl_wait();
	rn_pdl_trigger();
	float ag[NC], au[NC];
#pragma unroll
	for (int j = 0; j < NC; j++)
		ag[j] = au[j] = 0.0f;
	if (live) {
		const int64_t units = rn_cw_units(TYPE, g.cols);
		const int stride = RN_WARP * wpr;
		for (int64_t u = (warp % wpr) * RN_WARP + lane; u < units; u += stride) {
			rn_unit_dot<TYPE, NC>(g, row, u, a, ag);
			rn_unit_dot<TYPE, NC>(up, row, u, a, au);
		}
	}
	reduce_row<NC>(ag, wpr, sm);
	__syncthreads();
	reduce_row<NC>(au, wpr, sm);
	if (!live || warp % wpr != 0)
		return;
#pragma unroll
	for (int j = 0; j < NC; j++)
		if (lane == j) {
			float gv = ag[j];
			/* as the CPU: g / (1 + exp(-g)) * u with its exp polynomial (common.cuh) */
			y[(int64_t)j * ldy + row] = rn_swiglu(gv, au[j]);
		}
}

static int mmv_sms = 0; /* multiprocessors of the device, read once at load (never during graph capture) */
bool rn_cu_pdl = false;

void rn_cu_mmv_init(int dev)
{
	int n = 0;
	if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n < 1) {
		(void)cudaGetLastError();
		n = 100;
	}
	mmv_sms = n;
	int major = 0;
	if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) {
		(void)cudaGetLastError();
		major = 0;
	}
	const char *e = getenv("ORUN_CUDA_PDL");
	rn_cu_pdl = major >= 9 && !(e && strcmp(e, "0") == 0);
}

/* Warps per row: enough blocks to cover the device four times with one warp per row, else more per row. */
static int pick_wpr(int64_t rows)
{
	const int sms = mmv_sms ? mmv_sms : 100;
	if (rows / MMV_WARPS >= 4 * sms)
		return 1;
	if (rows / (MMV_WARPS / 2) >= 4 * sms)
		return 2;
	return 4;
}

template <int TYPE>
static void launch_mmv(int nc, dim3 grid, cudaStream_t st, const struct rn_cw_mat &m, const struct rn_cw_act &a,
		       float *y, int64_t ldy, const float *bias, int acc, int wpr)
{
	switch (nc) {
#define C(N)                                                                                             \
	case N: (void)rn_cu_launch(k_mmv<TYPE, N>, grid, dim3(MMV_THREADS), 0, st, m, a, y, ldy, bias, acc, wpr); break;
		C(1) C(2) C(3) C(4) C(5) C(6) C(7) C(8)
#undef C
	}
}

template <int TYPE>
static void launch_gu(int nc, dim3 grid, cudaStream_t st, const struct rn_cw_mat &g, const struct rn_cw_mat &u,
		      const struct rn_cw_act &a, float *y, int64_t ldy, int wpr)
{
	switch (nc) {
#define C(N)                                                                                             \
	case N: (void)rn_cu_launch(k_mmv_gu<TYPE, N>, grid, dim3(MMV_THREADS), 0, st, g, u, a, y, ldy, wpr); break;
		C(1) C(2) C(3) C(4) C(5) C(6) C(7) C(8)
#undef C
	}
}

#define TYPE_SWITCH(type, F, ...)                                                                        \
	switch (type) {                                                                                  \
	case CW_F32: F<CW_F32>(__VA_ARGS__); break;                                                      \
	case CW_F16: F<CW_F16>(__VA_ARGS__); break;                                                      \
	case CW_BF16: F<CW_BF16>(__VA_ARGS__); break;                                                    \
	case CW_Q4_0: F<CW_Q4_0>(__VA_ARGS__); break;                                                    \
	case CW_Q4_1: F<CW_Q4_1>(__VA_ARGS__); break;                                                    \
	case CW_Q5_0: F<CW_Q5_0>(__VA_ARGS__); break;                                                    \
	case CW_Q5_1: F<CW_Q5_1>(__VA_ARGS__); break;                                                    \
	case CW_Q8_0: F<CW_Q8_0>(__VA_ARGS__); break;                                                    \
	case CW_Q4_K: F<CW_Q4_K>(__VA_ARGS__); break;                                                    \
	case CW_Q5_K: F<CW_Q5_K>(__VA_ARGS__); break;                                                    \
	case CW_Q6_K: F<CW_Q6_K>(__VA_ARGS__); break;                                                    \
	case CW_FP8: F<CW_FP8>(__VA_ARGS__); break;                                                      \
	default: break;                                                                                  \
	}

/* Activation rows [j0, j0 + n) of a. */
static struct rn_cw_act act_rows(const struct rn_cw_act &a, int j0, int type)
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
		r.s = (const uint8_t *)a.s + (int64_t)j0 * a.lds * (rn_cw_table[type].act == CA_Q8_32 ? 4 : 2);
	if (a.sm)
		r.sm = a.sm + (int64_t)j0 * a.lds;
	return r;
}

int rn_cu_mmv(const struct rn_cu_w *w, const struct rn_cu_acts *a, int n, float *y, int64_t ldy, const float *bias,
	      bool accumulate, cudaStream_t st, struct rn_error *err)
{
	const int type = w->m.type;
	const int wpr = pick_wpr(w->m.rows);
	dim3 grid((unsigned)((w->m.rows + MMV_WARPS / wpr - 1) / (MMV_WARPS / wpr)));
	struct rn_cw_act act = make_act(a, type);
	for (int j0 = 0; j0 < n; j0 += RN_CU_MMV_MAX) {
		int nc = n - j0 < RN_CU_MMV_MAX ? n - j0 : RN_CU_MMV_MAX;
		struct rn_cw_act aj = act_rows(act, j0, type);
		TYPE_SWITCH(type, launch_mmv, nc, grid, st, w->m, aj, y + (int64_t)j0 * ldy, ldy, bias, accumulate ? 1 : 0,
			    wpr)
		RN_CU_LAUNCHED();
	}
	return RN_OK;
}

int rn_cu_mmv_gu(const struct rn_cu_w *gate, const struct rn_cu_w *up, const struct rn_cu_acts *a, int n, float *hb,
		 int64_t ldy, cudaStream_t st, struct rn_error *err)
{
	const int type = gate->m.type;
	const int wpr = pick_wpr(gate->m.rows);
	dim3 grid((unsigned)((gate->m.rows + MMV_WARPS / wpr - 1) / (MMV_WARPS / wpr)));
	struct rn_cw_act act = make_act(a, type);
	for (int j0 = 0; j0 < n; j0 += RN_CU_MMV_MAX) {
		int nc = n - j0 < RN_CU_MMV_MAX ? n - j0 : RN_CU_MMV_MAX;
		struct rn_cw_act aj = act_rows(act, j0, type);
		TYPE_SWITCH(type, launch_gu, nc, grid, st, gate->m, up->m, aj, hb + (int64_t)j0 * ldy, ldy, wpr)
		RN_CU_LAUNCHED();
	}
	return RN_OK;
}
