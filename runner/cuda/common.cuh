/* runner/cuda/common.cuh — small helpers shared by the CUDA backend's .cu files: error checks, half /
 * bfloat16 / E4M3 conversions and the int8 dot product, each usable in device code and in host code.
 *
 * The host versions exist so that the exact arithmetic the kernels run (block decoding, integer dot products,
 * activation quantization) can be executed and checked on a machine without a GPU (runner/cuda/hostcheck.cu).
 * Internal to runner/cuda; never included from C.
 */
#ifndef ORUN_RUNNER_CUDA_COMMON_CUH
#define ORUN_RUNNER_CUDA_COMMON_CUH

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#define RN_HD __host__ __device__ __forceinline__
#else
#error "runner/cuda/*.cuh are compiled by nvcc only"
#endif

#define RN_WARP 32

/* Loop unrolling in code shared by host and device (the host compiler does not know the pragma). */
#if defined(__CUDA_ARCH__)
#define RN_UNROLL _Pragma("unroll")
#else
#define RN_UNROLL
#endif

/* ---------------------------------------------------------------------------------------------- scalars */

/* IEEE binary16 bits -> float, exact (subnormals, infinities, NaN) on host and device. */
RN_HD float rn_h2f(uint16_t h)
{
#if defined(__CUDA_ARCH__)
	return __half2float(__ushort_as_half(h));
#else
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
	if (exp == 0x1f) {
		bits = sign | 0x7f800000u | (man << 13);
	} else if (exp != 0) {
		bits = sign | ((exp + 112) << 23) | (man << 13);
	} else if (man == 0) {
		bits = sign;
	} else {
		int e = -1;
		do {
			e++;
			man <<= 1;
		} while (!(man & 0x400));
		bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
	}
	float f;
	memcpy(&f, &bits, 4);
	return f;
#endif
}

/* float -> binary16 bits, round to nearest even (as gguf_f32_to_f16 and the F16C instruction). */
RN_HD uint16_t rn_f2h(float f)
{
#if defined(__CUDA_ARCH__)
	return __half_as_ushort(__float2half_rn(f));
#else
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t sign = (x >> 16) & 0x8000, ax = x & 0x7fffffffu;
	if (ax > 0x7f800000u)
		return (uint16_t)(sign | 0x7e00 | ((ax >> 13) & 0x3ff));
	if (ax >= 0x477ff000u) /* rounds to >= 65536: infinity */
		return (uint16_t)(sign | 0x7c00);
	if (ax < 0x38800000u) { /* subnormal or zero in half */
		if (ax < 0x33000000u)
			return (uint16_t)sign;
		uint32_t e = ax >> 23, m = (ax & 0x7fffff) | 0x800000;
		uint32_t shift = 126 - e; /* 14..24 */
		uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
		if (rem > half || (rem == half && (r & 1)))
			r++;
		return (uint16_t)(sign | r);
	}
	uint32_t r = ax + 0xc8000000u; /* rebias exponent: -112 << 23 */
	uint32_t rem = r & 0x1fff;
	r >>= 13;
	if (rem > 0x1000 || (rem == 0x1000 && (r & 1)))
		r++;
	return (uint16_t)(sign | r);
#endif
}

RN_HD float rn_bf2f(uint16_t h)
{
	uint32_t bits = (uint32_t)h << 16;
	float f;
#if defined(__CUDA_ARCH__)
	f = __uint_as_float(bits);
#else
	memcpy(&f, &bits, 4);
#endif
	return f;
}

/* Rounds to nearest even, like gguf_f32_to_bf16 (NaN stays NaN). */
RN_HD uint16_t rn_f2bf(float f)
{
	uint32_t x;
#if defined(__CUDA_ARCH__)
	x = __float_as_uint(f);
#else
	memcpy(&x, &f, 4);
#endif
	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((x >> 16) | 0x40);
	x += 0x7fff + ((x >> 16) & 1);
	return (uint16_t)(x >> 16);
}

/* Bits of a float and back, on host and device. */
RN_HD uint32_t rn_fbits(float f)
{
#if defined(__CUDA_ARCH__)
	return __float_as_uint(f);
#else
	uint32_t x;
	memcpy(&x, &f, 4);
	return x;
#endif
}

RN_HD float rn_ffrom(uint32_t x)
{
#if defined(__CUDA_ARCH__)
	return __uint_as_float(x);
#else
	float f;
	memcpy(&f, &x, 4);
	return f;
#endif
}

/* E4M3FN byte -> float, exact: the bit pattern placed into a binary16 gives value / 256 (bias 7 vs 15) for
 * every code but S.1111.111, which is NaN in E4M3FN (through binary16 it would read as +-480). */
RN_HD float rn_e4m3_to_f(uint8_t b)
{
	if ((b & 0x7f) == 0x7f)
		return rn_ffrom(((uint32_t)(b & 0x80) << 24) | 0x7fc00000u);
	return rn_h2f((uint16_t)(((b & 0x80) << 8) | ((b & 0x7f) << 7))) * 256.0f;
}

/* ---------------------------------------------------------------------------------------------- rounding */

/* Single roundings that the device compiler must not contract into fused multiply-adds (nvcc fuses a * b + c
 * by default; the host build has no FMA contraction on x86-64 without -mfma). */
RN_HD float rn_fadd(float a, float b)
{
#if defined(__CUDA_ARCH__)
	return __fadd_rn(a, b);
#else
	return a + b;
#endif
}
RN_HD float rn_fsub(float a, float b)
{
#if defined(__CUDA_ARCH__)
	return __fsub_rn(a, b);
#else
	return a - b;
#endif
}
RN_HD float rn_fmul(float a, float b)
{
#if defined(__CUDA_ARCH__)
	return __fmul_rn(a, b);
#else
	return a * b;
#endif
}
RN_HD float rn_fdiv(float a, float b)
{
#if defined(__CUDA_ARCH__)
	return __fdiv_rn(a, b);
#else
	return a / b;
#endif
}
/* a * b + c with one rounding (fmaf is exact by definition on the host too). */
RN_HD float rn_fma(float a, float b, float c)
{
#if defined(__CUDA_ARCH__)
	return __fmaf_rn(a, b, c);
#else
	return fmaf(a, b, c);
#endif
}

/* ---------------------------------------------------------------------------------------------- CPU twins */

/* exp(x) as runner/cpu/ops.c's exp256 (llama.cpp's ggml_v_expf, AVX2+FMA) computes each lane, operation for
 * operation: n = round(x / ln 2) through the 1.5 * 2^23 shift, b = x - n ln 2 (ln 2 in two parts), a degree-5
 * polynomial, the scale 2^n in two factors when |n| > 126, 0 or infinity beyond |n| > 192. The vector code's
 * "any lane big" branch selects per lane, so a lane's result never depends on its neighbours. */
RN_HD float rn_cpu_expf(float x)
{
	const float shift = 0x1.8p23f;
	const float z = rn_fma(x, 0x1.715476p+0f, shift);
	const float n = rn_fsub(z, shift);
	const float b = rn_fma(-n, 0x1.7f7d1cp-20f, rn_fma(-n, 0x1.62e4p-1f, x));
	const uint32_t e = rn_fbits(z) << 23;
	const float k = rn_ffrom(e + rn_fbits(1.0f));
	const float an = fabsf(n);
	const float b2 = rn_fmul(b, b);
	const float hi = rn_fma(0x1.0e4020p-7f, b, 0x1.573e2ep-5f);
	const float mid = rn_fma(0x1.555e66p-3f, b, 0x1.fffdb6p-2f);
	const float p = rn_fma(rn_fma(hi, b2, mid), b2, rn_fmul(0x1.ffffecp-1f, b));
	if (!(an > 126.0f))
		return rn_fma(p, k, k);
	const uint32_t g = n <= 0.0f ? 0x82000000u : 0u;
	const float s1 = rn_ffrom(g + 0x7f000000u);
	const float s2 = rn_ffrom(e - g);
	if (an > 192.0f)
		return rn_fmul(s1, s1);
	return rn_fmul(rn_fma(s2, p, s2), s1);
}

/* SwiGLU of one value as runner/cpu/ops.c's AVX2 path: g / (1 + exp(0 - g)) * u, each step rounded once, so
 * the int8 activations quantized from it match the CPU backend's bytes. */
RN_HD float rn_swiglu(float g, float u)
{
	return rn_fmul(rn_fdiv(g, rn_fadd(1.0f, rn_cpu_expf(rn_fsub(0.0f, g)))), u);
}

/* One RoPE pair as runner/cpu/ops.c's rn_ops_rope (llama.cpp's x86 build): x0' = fma(c, x0, -(s x1)),
 * x1' = fma(s, x0, c x1). */
RN_HD void rn_rope_pair(float c, float s, float *x0, float *x1)
{
	const float a = *x0, b = *x1;
	const float sx1 = rn_fmul(s, b), cx1 = rn_fmul(c, b);
	*x0 = rn_fma(c, a, -sx1);
	*x1 = rn_fma(s, a, cx1);
}

/* One pair as runner/model.c's rn_rope_apply (used for the re-rotation of cached keys): separately rounded
 * products, x0' = x0 c - x1 s, x1' = x0 s + x1 c. */
RN_HD void rn_rope_pair_unfused(float c, float s, float *x0, float *x1)
{
	const float a = *x0, b = *x1;
	*x0 = rn_fsub(rn_fmul(a, c), rn_fmul(b, s));
	*x1 = rn_fadd(rn_fmul(a, s), rn_fmul(b, c));
}

/* ---------------------------------------------------------------------------------------------- integers */

/* Sum of the four signed byte products of a and b, plus c: the dp4a instruction, and its host twin. */
RN_HD int rn_dp4a(int a, int b, int c)
{
#if defined(__CUDA_ARCH__)
	return __dp4a(a, b, c);
#else
	for (int i = 0; i < 4; i++)
		c += (int)(int8_t)(a >> (8 * i)) * (int)(int8_t)(b >> (8 * i));
	return c;
#endif
}

/* Per-byte a - b (no byte ever borrows here: callers keep every byte of a >= the byte of b). */
RN_HD uint32_t rn_sub_bytes(uint32_t a, uint32_t b)
{
#if defined(__CUDA_ARCH__)
	return __vsub4(a, b);
#else
	uint32_t r = 0;
	for (int i = 0; i < 4; i++)
		r |= (uint32_t)(uint8_t)((a >> (8 * i)) - (b >> (8 * i))) << (8 * i);
	return r;
#endif
}

/* Loads that compile to one 4/8/16-byte access on the device; p must be aligned to the access size. */
RN_HD uint32_t rn_ld32(const void *p) { return *(const uint32_t *)p; }
RN_HD uint2 rn_ld64(const void *p) { return *(const uint2 *)p; }
RN_HD uint4 rn_ld128(const void *p) { return *(const uint4 *)p; }
RN_HD uint16_t rn_ld16(const void *p) { return *(const uint16_t *)p; }

/* Unaligned little-endian loads for the raw GGUF blocks read by the repack code. */
RN_HD uint16_t rn_ldu16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
RN_HD uint32_t rn_ldu32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
RN_HD float rn_ldu_f32(const uint8_t *p)
{
	uint32_t u = rn_ldu32(p);
	float f;
#if defined(__CUDA_ARCH__)
	f = __uint_as_float(u);
#else
	memcpy(&f, &u, 4);
#endif
	return f;
}

#if defined(__CUDA_ARCH__) || defined(__CUDACC__)
/* ---------------------------------------------------------------------------------------------- warps */

static __device__ __forceinline__ float rn_warp_sum(float v)
{
#pragma unroll
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

static __device__ __forceinline__ float rn_warp_max(float v)
{
#pragma unroll
	for (int o = 16; o > 0; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

/* ---------------------------------------------------------------------------------------------- PDL */

/* Programmatic dependent launch (sm_90+; no-ops below): a kernel launched by rn_cu_launch may start while its
 * predecessor in the stream is still running, so every such kernel calls rn_pdl_wait() before its first
 * access to memory that an earlier kernel writes or reads (only constant model data, e.g. norm weights, may
 * be touched before it). rn_pdl_wait returns once the predecessor grid has completed and its writes are
 * visible. rn_pdl_trigger lets the next kernel's blocks be scheduled (they then wait in their rn_pdl_wait). */
static __device__ __forceinline__ void rn_pdl_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

static __device__ __forceinline__ void rn_pdl_trigger(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

/* Bring the 128-byte line holding p into L2 (no register written, no fault on a valid address). */
static __device__ __forceinline__ void rn_prefetch_l2(const void *p)
{
	asm volatile("prefetch.L2 [%0];" ::"l"(p));
}
#endif

/* ---------------------------------------------------------------------------------------------- errors */

/* Every CUDA call in the backend goes through one of these; a failure is turned into an RN_ERR_BACKEND
 * message naming the call, the file:line and CUDA's own error string. */
#define RN_CU_TRY(call, err_struct, label)                                                             \
	do {                                                                                             \
		cudaError_t rn_e_ = (call);                                                              \
		if (rn_e_ != cudaSuccess) {                                                              \
			rn_cuda_set_error((err_struct), rn_e_, #call, __FILE__, __LINE__);               \
			goto label;                                                                      \
		}                                                                                        \
	} while (0)

#endif
