/* runner/cpu/matmul.h — Y = X · W^T on the CPU for every weight type orun loads, weights used in place.
 *
 * W is a weight matrix exactly as mapped from a GGUF file (rows = ne[1] output features, cols = ne[0] input
 * features, row-major, in its block format). X holds n f32 activation rows (n = 1 for decode, up to num_batch
 * for prefill). Quantized weights are multiplied with integer dot products against activations quantized
 * once per matmul to int8 blocks, as llama.cpp does; float weights (F32, F16, BF16, FP8) use f32 activations.
 * Work is split across a thread pool by weight rows. SIMD paths (AVX2, AVX-VNNI, AVX-512 VNNI) are chosen at
 * run time from cpuid; the portable scalar path computes the same integer sums and is the cross-check.
 */
#ifndef ORUN_RUNNER_CPU_MATMUL_H
#define ORUN_RUNNER_CPU_MATMUL_H

#include <stddef.h>
#include <stdint.h>

#include "runner/cpu/pool.h"

/* ---------------------------------------------------------------------------------------------- weights */

/* Weight type ids: ggml's numbering, the same values as the tensor types in gguf/gguf.h. */
enum {
	RN_MM_F32 = 0,
	RN_MM_F16 = 1,
	RN_MM_Q4_0 = 2,
	RN_MM_Q4_1 = 3,
	RN_MM_Q5_0 = 6,
	RN_MM_Q5_1 = 7,
	RN_MM_Q8_0 = 8,
	RN_MM_Q2_K = 10,
	RN_MM_Q3_K = 11,
	RN_MM_Q4_K = 12,
	RN_MM_Q5_K = 13,
	RN_MM_Q6_K = 14,
	RN_MM_BF16 = 30,
	RN_MM_FP8 = 0x4F38, /* orun's FP8_E4M3_B128 (gguf/README.md): E4M3 bytes, one f32 scale per 128x128 tile */
	/* In memory only, never in a file: legacy rows regrouped by rn_mm_repack (8 blocks a group, same size);
	 * RN_MM_R8 | the legacy type id */
	RN_MM_R8 = 0x5200,
	RN_MM_Q4_0_R8 = RN_MM_R8 | RN_MM_Q4_0,
	RN_MM_Q4_1_R8 = RN_MM_R8 | RN_MM_Q4_1,
	RN_MM_Q5_0_R8 = RN_MM_R8 | RN_MM_Q5_0,
	RN_MM_Q5_1_R8 = RN_MM_R8 | RN_MM_Q5_1,
};

/* A weight matrix. Borrowed pointers: the mapping must outlive every matmul that uses it. */
struct rn_weight {
	int type;          /* RN_MM_* (a GGUF tensor type id) */
	int64_t rows;      /* ne[1]: output features, rows of W */
	int64_t cols;      /* ne[0]: input features; a multiple of the type's block size (32, or 256 for K-quants) */
	const void *data;  /* rows * rn_mm_row_bytes(type, cols) bytes, row-major, any alignment */
	const void *scale; /* RN_MM_FP8 only: the tile scale grid, ceil(rows/128) x ceil(cols/128) little-endian
			    * f32, row-major, any alignment (in a GGUF file it follows the values); else NULL */
};

/* Result codes of rn_mm_check. */
enum {
	RN_MM_OK = 0,
	RN_MM_EUNSUPPORTED = 1, /* a type this backend cannot multiply */
	RN_MM_ESHAPE = 2,       /* rows/cols not positive, or cols not a multiple of the block size */
	RN_MM_ESIZE = 3,        /* the data is shorter than the shape needs, or the size overflows */
};

/* Detail of a failed check: a message naming the type and the offending values. */
struct rn_mm_error {
	char msg[256];
};

/* Short name of a type ("q4_K", "f16"), or "?" for an unknown id. Static storage. */
const char *rn_mm_type_name(int type);

/* Whether rn_matmul supports this type id. */
int rn_mm_type_supported(int type);

/* Elements per block of a supported type (1 for F32/F16/BF16, 32 for the legacy quants, 256 for K-quants);
 * 0 for an unsupported type. */
int rn_mm_block_elems(int type);

/* Bytes of one row of `cols` elements of this type, or 0 when the type is unsupported, cols is not a positive
 * multiple of the block size, or the size overflows. */
size_t rn_mm_row_bytes(int type, int64_t cols);

/* Validates a weight before use: supported type, positive shape, cols a multiple of the block size, and
 * rows * row_bytes <= data_size (the bytes available at w->data); for FP8 also that the scale grid lies inside
 * those data_size bytes. Returns RN_MM_OK or an RN_MM_E* code with err->msg filled in (err may be NULL). Call
 * once at load; the matmul functions assume a checked weight. */
int rn_mm_check(const struct rn_weight *w, size_t data_size, struct rn_mm_error *err)
	__attribute__((warn_unused_result));

/* Fills *w from a 2-D GGUF tensor (gguf/gguf.h; ne[2] = ne[3] = 1) and checks it as rn_mm_check does; for FP8
 * the scale grid is the one stored after the values. The weight borrows the tensor's mapping. */
struct gguf_tensor;
int rn_mm_weight_from_tensor(const struct gguf_tensor *t, struct rn_weight *w, struct rn_mm_error *err)
	__attribute__((warn_unused_result));

/* Repacking, for weights copied into memory (use_mmap false): the type whose layout the current kernel set
 * reads with fewer instructions per byte than `type`'s, or `type` itself when there is none: with the SIMD
 * kernel sets, Q4_0/Q4_1/Q5_0/Q5_1 -> their R8 types (runner/cpu/kernels.h), the same size, and the same
 * results to the bit. */
int rn_mm_repack_type(int type);

/* Writes the rows of w (a checked weight of a type with rn_mm_repack_type(type) != type) in the repacked
 * layout to dst: w->rows * rn_mm_row_bytes(type, cols) bytes, not overlapping w->data. The weight that reads
 * dst has type rn_mm_repack_type(w->type) and the same shape. */
void rn_mm_repack(const struct rn_weight *w, void *dst);

/* Message for an RN_MM_* code. Static storage. */
const char *rn_mm_strerror(int code);

/* ---------------------------------------------------------------------------------------------- activations */

/* How a weight type wants its activations. */
enum rn_act_kind {
	RN_ACT_F32 = 0,    /* plain f32 rows (F32, F16, BF16 and FP8 weights) */
	RN_ACT_Q8_32 = 1,  /* int8 in 32-element blocks, an f32 scale and the block sum per block (legacy quants) */
	RN_ACT_Q8_256 = 2, /* int8 in 256-element super-blocks, one f32 scale each, int16 sums per 16 (K-quants) */
};

/* Activations as a matmul consumes them. Borrowed pointers. */
struct rn_act {
	enum rn_act_kind kind;
	int64_t n;        /* rows (tokens) */
	int64_t cols;     /* elements per row; must equal the weight's cols */
	const void *data; /* RN_ACT_F32: n rows of ld floats; Q8 kinds: n rows of rn_act_row_bytes(kind, cols) */
	int64_t ld;       /* RN_ACT_F32: row stride in floats (>= cols); ignored for the Q8 kinds */
};

/* The activation kind a weight type multiplies with. Weights of different types with the same kind can share
 * one quantized activation (e.g. Q/K/V or gate/up projections of one input). */
enum rn_act_kind rn_mm_act_kind(int type);

/* Bytes of one quantized activation row (a multiple of 64; 0 for RN_ACT_F32 or a cols that is not a multiple
 * of the kind's block, 32 or 256). Layout of a row, for the curious: int8 q[cols], then f32 d[cols/B], then
 * the sums (Q8_32: int32 s[cols/32] and f32 sm[cols/32]; Q8_256: int16 per 16); x[i] ~= d[i/B] * q[i]. The
 * scales are ggml's (x86 build) to the bit: Q8_32 d = f16(amax/127), sm = f16(amax/127 * s); Q8_256
 * d = 1/(127/amax); see runner/cpu/kernels.h. */
size_t rn_act_row_bytes(enum rn_act_kind kind, int64_t cols);

/* Quantizes rows [r0, r1) of x (f32, row stride ldx floats, cols per row) into dst, which holds whole rows of
 * rn_act_row_bytes(kind, cols) bytes starting with row 0 (row r is written at dst + r * row_bytes). Runs on
 * the calling thread; the building block for fused jobs. kind must be a Q8 kind. Rounds to nearest-even, so
 * every ISA produces the same bytes. */
void rn_act_quantize_rows(enum rn_act_kind kind, const float *x, int64_t ldx, int64_t cols, int64_t r0, int64_t r1,
			  void *dst);

/* Prepares n rows of x for a matmul with weights whose act kind is `kind`, using the pool: for the Q8 kinds
 * quantizes into dst (n * rn_act_row_bytes(kind, cols) bytes, 32-byte alignment recommended); for
 * RN_ACT_F32 only fills *out to point at x (dst unused). x must stay alive while *out is used. */
void rn_act_prepare(struct rn_pool *pool, enum rn_act_kind kind, const float *x, int64_t ldx, int64_t n,
		    int64_t cols, void *dst, struct rn_act *out);

/* ---------------------------------------------------------------------------------------------- matmul */

/* y[i * ldy + r] = sum_c x[i][c] * W[r][c] for i < x->n and r < w->rows, using the pool (rows divided between
 * its threads). x->kind must be rn_mm_act_kind(w->type) and x->cols == w->cols; ldy >= w->rows. y must not
 * overlap x. Violations of these preconditions abort (programmer errors). */
void rn_matmul(struct rn_pool *pool, const struct rn_weight *w, const struct rn_act *x, float *y, int64_t ldy);

/* Single-threaded building block: as rn_matmul but only for weight rows [row0, row1), on the calling thread.
 * y is indexed by absolute row as in rn_matmul. Use it inside your own pool job to fuse several steps. */
void rn_matmul_rows(const struct rn_weight *w, const struct rn_act *x, float *y, int64_t ldy, int64_t row0,
		    int64_t row1);

/* Several independent matmuls in one pool job (one synchronisation instead of n_ops): each thread takes its
 * share of the rows of every op. Typical use: Q, K and V (or gate and up) projections of one quantized input. */
struct rn_mm_op {
	const struct rn_weight *w;
	const struct rn_act *x;
	float *y;
	int64_t ldy;
};
void rn_matmul_multi(struct rn_pool *pool, const struct rn_mm_op *ops, int n_ops);

/* Bytes of scratch rn_matmul_f32 needs for n activation rows against a weight of this type and cols. */
size_t rn_matmul_work_size(int type, int64_t n, int64_t cols);

/* Convenience: quantizes x (n rows, stride ldx) into work (rn_matmul_work_size bytes; 32-byte alignment
 * recommended) and multiplies, in a single pool job. */
void rn_matmul_f32(struct rn_pool *pool, const struct rn_weight *w, const float *x, int64_t ldx, int64_t n, float *y,
		   int64_t ldy, void *work);

/* ---------------------------------------------------------------------------------------------- ISA */

/* Kernel sets, in increasing order of capability. AVXVNNI and AVX512 are the AVX2 kernels with the VEX
 * (AVX-VNNI) or EVEX (AVX-512 VNNI + VL) vpdpbusd/vpdpwssd integer dot-product instructions. */
enum rn_isa {
	RN_ISA_SCALAR = 0,
	RN_ISA_AVX2 = 1,    /* AVX2 + FMA + F16C */
	RN_ISA_AVXVNNI = 2, /* AVX2 + AVX-VNNI */
	RN_ISA_AVX512 = 3,  /* AVX-512 F/BW/VL + VNNI */
};

/* "scalar", "avx2", "avxvnni", "avx512". */
const char *rn_isa_name(enum rn_isa isa);

/* Whether this CPU and this build can run the kernel set (the OS must also save the AVX/AVX-512 state). */
int rn_isa_available(enum rn_isa isa);

/* The kernel set in use: the best available one, or ORUN_CPU_ISA from the environment ("scalar", "avx2", ...)
 * when that one is available. */
enum rn_isa rn_isa_current(void);

/* Selects the kernel set for all later matmuls (tests and benchmarks). Returns 0, or -1 when unavailable.
 * Not safe while matmuls run on other threads. */
int rn_isa_set(enum rn_isa isa);

#endif
