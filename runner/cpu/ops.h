/* runner/cpu/ops.h — the CPU backend's small vector operations around the matmuls: RMSNorm, RoPE, SwiGLU,
 * f16 / q8_0 rows of the KV cache, and the f32 dot products, weighted sums and softmax steps of attention.
 *
 * Internal to runner/cpu (the forward pass). Each function has an AVX2+FMA+F16C path, used where
 * runner/cpu/features.h allows it (ORUN_CPU_ISA=scalar forces the other), and a portable scalar path
 * computing the same thing (up to float summation order).
 */
#ifndef ORUN_RUNNER_CPU_OPS_H
#define ORUN_RUNNER_CPU_OPS_H

#include <stdint.h>

/* y = x / sqrt(mean(x^2) + eps) * w, n values (y may equal x). */
void rn_ops_rmsnorm(float *y, const float *x, const float *w, int n, float eps);

/* RoPE of one head in place, forward: n_rot/2 pairs rotated by the (cos, sin) table cs, pairs (2i, 2i+1) when
 * neox is 0, (i, i + n_rot/2) when 1. Rounded as llama.cpp's x86 build rounds it (see ops.c). */
void rn_ops_rope(float *x, const float *cs, int n_rot, int neox);

/* g[i] = silu(g[i]) * u[i], n values. */
void rn_ops_swiglu(float *g, const float *u, int n);

/* KV rows. f16: n halves. q8_0: n/32 blocks {f16 d; int8 q[32]} (n a multiple of 32). */
void rn_ops_store_f16(uint16_t *dst, const float *x, int n);
void rn_ops_load_f16(float *dst, const uint16_t *src, int n);
void rn_ops_store_q8_0(void *dst, const float *x, int n);
void rn_ops_load_q8_0(float *dst, const void *src, int n);

/* Largest value of x[0..n). */
float rn_ops_max(const float *x, int n);

/* x[i] = exp(x[i] - m) for n values; returns their sum in double. The AVX2 path is llama.cpp's softmax to the
 * bit (its exp, and f32 sums of each 8 values from x[0] added to a double); the portable one is not. */
double rn_ops_exp_sum(float *x, int n, float m);

/* sum of a[i] * b[i]. */
float rn_ops_dot_f32(const float *a, const float *b, int n);

/* y[i] += a * x[i]. */
void rn_ops_axpy_f32(float *y, float a, const float *x, int n);

/* y[i] = the f16 value nearest to x[i] * s (round to nearest even), as f32; y may equal x. */
void rn_ops_scale_round_f16(float *y, const float *x, float s, int n);

#endif
