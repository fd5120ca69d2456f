/* runner/cuda/quant.cuh — the weight layouts the CUDA kernels read, and the per-type code that decodes them:
 * repacking of GGUF blocks at upload, dot products of one "unit" of a weight row with int8 or f32
 * activations (the decode matvec), and dequantization of a unit (prefill GEMMs, embedding rows).
 *
 * Every function here is __host__ __device__: runner/cuda/hostcheck.cu runs the very same code on the CPU
 * against the CPU backend and gguf's reference dequantization, so the bit-level decoding is verified on
 * machines without a GPU. Layouts (R rows, C columns, nb = C / block elements per row):
 *   F32, F16, BF16   plane0 = the GGUF rows unchanged
 *   FP8              plane0 = E4M3 values unchanged; plane1 = f32 tile scales [ceil(R/128)][TCP],
 *                    TCP = ceil(C/128) rounded up to 4 (the layout cuBLASLt's 128x128 block scaling reads)
 *   Q4_0  plane0 = qs [R][nb][16]   plane1 = d f16 [R][nb]
 *   Q4_1  plane0 = qs [R][nb][16]   plane1 = (d, m) f16 pairs [R][nb]
 *   Q5_0  plane0 = qs [R][nb][16]   plane1 = qh u32 [R][nb]   plane2 = d f16 [R][nb]
 *   Q5_1  plane0 = qs [R][nb][16]   plane1 = qh u32 [R][nb]   plane2 = (d, m) f16 pairs [R][nb]
 *   Q8_0  plane0 = qs [R][nb][32]   plane1 = d f16 [R][nb]
 *   Q4_K, Q5_K  plane0 = the GGUF super-blocks unchanged (144 / 176 bytes: 16-byte aligned already)
 *   Q6_K  plane0 = ql [R][nb][128]  plane1 = qh [R][nb][64]  plane2 = scales i8 [R][nb][16]  plane3 = d f16
 * so that every load in a kernel is an aligned 4-, 8- or 16-byte access.
 */
#ifndef ORUN_RUNNER_CUDA_QUANT_CUH
#define ORUN_RUNNER_CUDA_QUANT_CUH

#include "runner/cuda/common.cuh"

/* Weight types the CUDA backend computes with (dense ids, not GGUF's). */
enum rn_cw {
	CW_F32 = 0,
	CW_F16,
	CW_BF16,
	CW_Q4_0,
	CW_Q4_1,
	CW_Q5_0,
	CW_Q5_1,
	CW_Q8_0,
	CW_Q4_K,
	CW_Q5_K,
	CW_Q6_K,
	CW_FP8,
	CW_COUNT
};

/* How a weight type takes its activations in the decode matvec: the CPU backend's kinds, so that the values
 * are bit-identical to runner/cpu's — int8 blocks for the quantized types (scales as ggml's x86 quantizers),
 * f32 for F32 and FP8, and f32 rounded to f16 / bf16 for F16 / BF16 weights (stored as halves here). */
enum rn_ca { CA_F32 = 0, CA_Q8_32 = 1, CA_Q8_256 = 2, CA_F16 = 3, CA_BF16 = 4 };

#define RN_CU_MAX_PLANES 4
#define RN_CU_QK 32
#define RN_CU_QKK 256
#define RN_CU_FP8_TILE 128

struct rn_cw_info {
	uint32_t gguf_type;   /* enum gguf_type */
	int block_elems;      /* GGUF block: 1, 32 or 256 */
	int block_bytes;      /* GGUF bytes per block (FP8: 1, the scale grid is extra) */
	int unit_elems;       /* values per matvec unit */
	int units_per_block;  /* units of one GGUF block (1 for the plain types: a unit spans several elements) */
	int act;              /* enum rn_ca */
	int n_planes;
	int plane_bytes[RN_CU_MAX_PLANES]; /* bytes per GGUF block in each plane (plain types: per element) */
	const char *name;
};

/* The table, in enum rn_cw order. Host code only (device code uses the constants through templates). */
static const struct rn_cw_info rn_cw_table[CW_COUNT] = {
	/* gguf  blk  bytes unit upb act        planes plane bytes       name */
	{0, 1, 4, 4, 1, CA_F32, 1, {4, 0, 0, 0}, "F32"},
	{1, 1, 2, 8, 1, CA_F16, 1, {2, 0, 0, 0}, "F16"},
	{30, 1, 2, 8, 1, CA_BF16, 1, {2, 0, 0, 0}, "BF16"},
	{2, 32, 18, 32, 1, CA_Q8_32, 2, {16, 2, 0, 0}, "Q4_0"},
	{3, 32, 20, 32, 1, CA_Q8_32, 2, {16, 4, 0, 0}, "Q4_1"},
	{6, 32, 22, 32, 1, CA_Q8_32, 3, {16, 4, 2, 0}, "Q5_0"},
	{7, 32, 24, 32, 1, CA_Q8_32, 3, {16, 4, 4, 0}, "Q5_1"},
	{8, 32, 34, 32, 1, CA_Q8_32, 2, {32, 2, 0, 0}, "Q8_0"},
	{12, 256, 144, 32, 8, CA_Q8_256, 1, {144, 0, 0, 0}, "Q4_K"},
	{13, 256, 176, 32, 8, CA_Q8_256, 1, {176, 0, 0, 0}, "Q5_K"},
	{14, 256, 210, 32, 8, CA_Q8_256, 4, {128, 64, 16, 2}, "Q6_K"},
	{0x4F38, 1, 1, 16, 1, CA_F32, 2, {1, 0, 0, 0}, "FP8_E4M3_B128"},
};

/* A weight matrix in device (or, for the host checks, host) memory, repacked. */
struct rn_cw_mat {
	int type;          /* enum rn_cw */
	int64_t rows, cols;
	int64_t nb;        /* GGUF blocks per row (cols for the plain types) */
	int64_t tcp;       /* FP8: scale-grid row stride in floats */
	const uint8_t *p[RN_CU_MAX_PLANES];
};

/* Activations of n rows for the matvec. CA_F32 uses x, CA_F16 / CA_BF16 use x16; the Q8 kinds use qs/d/s
 * (and sm for Q8_32). */
struct rn_cw_act {
	const float *x;    /* [n][ldx] */
	int64_t ldx;
	const uint16_t *x16; /* [n][ldx16] f16 or bf16 bits */
	int64_t ldx16;
	const int8_t *qs;  /* [n][ldq] int8 values */
	int64_t ldq;
	const float *d;    /* [n][ldd] scale per block (32 or 256 values) */
	int64_t ldd;
	const void *s;     /* Q8_32: int32 block sums [n][lds]; Q8_256: int16 sums of 16 values [n][lds] */
	int64_t lds;
	const float *sm;   /* Q8_32: f16(d_unrounded * sum) per block [n][lds] (the +m formats' term) */
};

/* Bytes of one plane of a repacked matrix (0 for an unused plane). */
static inline int64_t rn_cw_plane_size(int type, int plane, int64_t rows, int64_t cols)
{
	const struct rn_cw_info *ti = &rn_cw_table[type];
	if (plane >= ti->n_planes)
		return 0;
	if (type == CW_FP8 && plane == 1) {
		int64_t tr = (rows + RN_CU_FP8_TILE - 1) / RN_CU_FP8_TILE, tc = (cols + RN_CU_FP8_TILE - 1) / RN_CU_FP8_TILE;
		return tr * ((tc + 3) / 4 * 4) * 4;
	}
	return rows * (cols / ti->block_elems) * ti->plane_bytes[plane];
}

/* ---------------------------------------------------------------------------------------------- host helpers */

#define RN_CU_PLANE_ALIGN 256 /* bytes; every plane of a repacked matrix starts at such an offset */

/* The CUDA weight type of a GGUF type, or -1 when there is no kernel for it. */
static inline int rn_cw_from_gguf(uint32_t gguf_type)
{
	for (int t = 0; t < CW_COUNT; t++)
		if (rn_cw_table[t].gguf_type == gguf_type)
			return t;
	return -1;
}

/* NULL when a matrix of this shape can be used, else why not. */
static inline const char *rn_cw_shape_error(int type, int64_t rows, int64_t cols)
{
	if (rows < 1 || cols < 1)
		return "empty matrix";
	const struct rn_cw_info *ti = &rn_cw_table[type];
	int64_t m = ti->block_elems > 1 ? ti->block_elems : ti->unit_elems;
	if (cols % m != 0)
		return ti->block_elems > 1 ? "row length is not a multiple of the block size"
					   : "row length is not a multiple of the CUDA kernels' load width (4, 8 or 16 values)";
	return NULL;
}

/* Bytes of the matrix in GGUF form (FP8: values + the f32 scale grid). */
static inline uint64_t rn_cw_gguf_bytes(int type, int64_t rows, int64_t cols)
{
	const struct rn_cw_info *ti = &rn_cw_table[type];
	uint64_t n = (uint64_t)rows * (uint64_t)(cols / ti->block_elems) * (uint64_t)ti->block_bytes;
	if (type == CW_FP8)
		n += 4ull * (uint64_t)((rows + 127) / 128) * (uint64_t)((cols + 127) / 128);
	return n;
}

static inline bool rn_cw_is_raw(int type)
{
	return type == CW_F32 || type == CW_F16 || type == CW_BF16 || type == CW_Q4_K || type == CW_Q5_K || type == CW_FP8;
}

/* Plane offsets of the repacked matrix in one allocation (off[RN_CU_MAX_PLANES] = total); returns the total. */
static inline int64_t rn_cw_layout(int type, int64_t rows, int64_t cols, int64_t *off)
{
	int64_t o = 0;
	for (int i = 0; i < RN_CU_MAX_PLANES; i++) {
		off[i] = o;
		o += (rn_cw_plane_size(type, i, rows, cols) + RN_CU_PLANE_ALIGN - 1) / RN_CU_PLANE_ALIGN * RN_CU_PLANE_ALIGN;
	}
	off[RN_CU_MAX_PLANES] = o;
	return o;
}

static inline struct rn_cw_mat rn_cw_mat_make(int type, int64_t rows, int64_t cols, const uint8_t *base,
					      const int64_t *off)
{
	struct rn_cw_mat m;
	memset(&m, 0, sizeof m);
	m.type = type;
	m.rows = rows;
	m.cols = cols;
	m.nb = cols / rn_cw_table[type].block_elems;
	m.tcp = ((cols + RN_CU_FP8_TILE - 1) / RN_CU_FP8_TILE + 3) / 4 * 4;
	for (int i = 0; i < RN_CU_MAX_PLANES; i++)
		m.p[i] = i < rn_cw_table[type].n_planes ? base + off[i] : NULL;
	return m;
}

/* The FP8 scale grid (ceil(rows/128) x ceil(cols/128) unaligned little-endian f32) into the padded layout. */
static inline void rn_cw_fp8_grid_repack(const uint8_t *grid, int64_t rows, int64_t cols, float *dst)
{
	int64_t tr = (rows + 127) / 128, tc = (cols + 127) / 128, tcp = (tc + 3) / 4 * 4;
	for (int64_t r = 0; r < tr; r++)
		for (int64_t c = 0; c < tcp; c++)
			dst[r * tcp + c] = c < tc ? rn_ldu_f32(grid + 4 * (r * tc + c)) : 0.0f;
}

/* ---------------------------------------------------------------------------------------------- repack */

/* Repack GGUF block `blk` (global index row * nb + b) of a quantized type from src into the planes. The
 * plain types and Q4_K/Q5_K are copied as they are and never come here. */
RN_HD void rn_cw_repack_block(int type, const uint8_t *src, uint8_t *const *planes, int64_t blk)
{
	switch (type) {
	case CW_Q4_0:
		for (int i = 0; i < 16; i++)
			planes[0][blk * 16 + i] = src[2 + i];
		*(uint16_t *)(planes[1] + blk * 2) = rn_ldu16(src);
		break;
	case CW_Q4_1:
		for (int i = 0; i < 16; i++)
			planes[0][blk * 16 + i] = src[4 + i];
		*(uint32_t *)(planes[1] + blk * 4) = rn_ldu32(src);
		break;
	case CW_Q5_0:
		for (int i = 0; i < 16; i++)
			planes[0][blk * 16 + i] = src[6 + i];
		*(uint32_t *)(planes[1] + blk * 4) = rn_ldu32(src + 2);
		*(uint16_t *)(planes[2] + blk * 2) = rn_ldu16(src);
		break;
	case CW_Q5_1:
		for (int i = 0; i < 16; i++)
			planes[0][blk * 16 + i] = src[8 + i];
		*(uint32_t *)(planes[1] + blk * 4) = rn_ldu32(src + 4);
		*(uint32_t *)(planes[2] + blk * 4) = rn_ldu32(src);
		break;
	case CW_Q8_0:
		for (int i = 0; i < 32; i++)
			planes[0][blk * 32 + i] = src[2 + i];
		*(uint16_t *)(planes[1] + blk * 2) = rn_ldu16(src);
		break;
	case CW_Q6_K:
		for (int i = 0; i < 128; i++)
			planes[0][blk * 128 + i] = src[i];
		for (int i = 0; i < 64; i++)
			planes[1][blk * 64 + i] = src[128 + i];
		for (int i = 0; i < 16; i++)
			planes[2][blk * 16 + i] = src[192 + i];
		*(uint16_t *)(planes[3] + blk * 2) = rn_ldu16(src + 208);
		break;
	default:
		break;
	}
}

/* ---------------------------------------------------------------------------------------------- helpers */

/* Bit i (i < 4) of x moved to bit 4 of byte i. */
RN_HD uint32_t rn_spread4(uint32_t x)
{
	return ((x & 1u) << 4) | ((x & 2u) << 11) | ((x & 4u) << 18) | ((x & 8u) << 25);
}

/* The 6-bit scale and min of sub-block j (< 8) from the 12 packed bytes of a Q4_K/Q5_K super-block. */
RN_HD void rn_k4_sm(const uint8_t *s, int j, int *sc, int *m)
{
	if (j < 4) {
		*sc = s[j] & 63;
		*m = s[j + 4] & 63;
	} else {
		*sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
		*m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
	}
}

/* The same from the packed bytes held in three registers (s[0..3] in s0, s[4..7] in s1, s[8..11] in s2),
 * without taking the address of a register array (which would put it in local memory). */
RN_HD int rn_k4_byte(uint32_t s0, uint32_t s1, uint32_t s2, int k)
{
	uint32_t w = k < 4 ? s0 : k < 8 ? s1 : s2;
	return (int)((w >> (8 * (k & 3))) & 255u);
}

RN_HD void rn_k4_sm_w(uint32_t s0, uint32_t s1, uint32_t s2, int j, int *sc, int *m)
{
	if (j < 4) {
		*sc = rn_k4_byte(s0, s1, s2, j) & 63;
		*m = rn_k4_byte(s0, s1, s2, j + 4) & 63;
	} else {
		int hi = rn_k4_byte(s0, s1, s2, j + 4);
		*sc = (hi & 15) | ((rn_k4_byte(s0, s1, s2, j - 4) >> 6) << 4);
		*m = (hi >> 4) | ((rn_k4_byte(s0, s1, s2, j) >> 6) << 4);
	}
}

/* Four E4M3 bytes of w to floats (exact). */
RN_HD void rn_fp8x4(uint32_t w, float *o)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
	__half2 lo = __half2(__nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(w & 0xffff), __NV_E4M3));
	__half2 hi = __half2(__nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(w >> 16), __NV_E4M3));
	float2 a = __half22float2(lo), b = __half22float2(hi);
	o[0] = a.x;
	o[1] = a.y;
	o[2] = b.x;
	o[3] = b.y;
#else
	for (int i = 0; i < 4; i++)
		o[i] = rn_e4m3_to_f((uint8_t)(w >> (8 * i)));
#endif
}

/* Activation accessors for row j. */
RN_HD const int8_t *rn_act_q(const struct rn_cw_act &a, int j) { return a.qs + (int64_t)j * a.ldq; }
RN_HD float rn_act_d(const struct rn_cw_act &a, int j, int64_t blk) { return a.d[(int64_t)j * a.ldd + blk]; }
RN_HD int32_t rn_act_s32(const struct rn_cw_act &a, int j, int64_t blk)
{
	return ((const int32_t *)a.s)[(int64_t)j * a.lds + blk];
}
RN_HD float rn_act_sm(const struct rn_cw_act &a, int j, int64_t blk) { return a.sm[(int64_t)j * a.lds + blk]; }
RN_HD int32_t rn_act_s16(const struct rn_cw_act &a, int j, int64_t i)
{
	return ((const int16_t *)a.s)[(int64_t)j * a.lds + i];
}

/* ---------------------------------------------------------------------------------------------- dot units */

/* acc[j] += dot(unit u of row `row`, activation row j) for j < NC. A unit is one 32-value block for the
 * legacy types, an eighth of a super-block for the K-quants, 8 (F16, BF16), 4 (F32) or 16 (FP8) values. */

template <int NC>
RN_HD void rn_unit_legacy(int type, const struct rn_cw_mat &w, int64_t row, int64_t u, const struct rn_cw_act &a,
			  float *acc)
{
	const int64_t blk = row * w.nb + u;
	uint32_t q[8];
	float d, m = 0.0f;
	int32_t offset = 0;
	if (type == CW_Q8_0) {
		uint4 v0 = rn_ld128(w.p[0] + blk * 32), v1 = rn_ld128(w.p[0] + blk * 32 + 16);
		q[0] = v0.x, q[1] = v0.y, q[2] = v0.z, q[3] = v0.w, q[4] = v1.x, q[5] = v1.y, q[6] = v1.z, q[7] = v1.w;
		d = rn_h2f(rn_ld16(w.p[1] + blk * 2));
	} else {
		uint4 v = rn_ld128(w.p[0] + blk * 16);
		uint32_t ws[4] = {v.x, v.y, v.z, v.w};
		uint32_t qh = 0;
		if (type == CW_Q5_0 || type == CW_Q5_1)
			qh = rn_ld32(w.p[1] + blk * 4);
RN_UNROLL
		for (int i = 0; i < 4; i++) {
			q[i] = ws[i] & 0x0F0F0F0Fu;
			q[i + 4] = (ws[i] >> 4) & 0x0F0F0F0Fu;
			if (type == CW_Q5_0 || type == CW_Q5_1) {
				q[i] |= rn_spread4((qh >> (4 * i)) & 15u);
				q[i + 4] |= rn_spread4((qh >> (16 + 4 * i)) & 15u);
			}
		}
		if (type == CW_Q4_0) {
			d = rn_h2f(rn_ld16(w.p[1] + blk * 2));
			offset = 8;
		} else if (type == CW_Q4_1) {
			uint32_t dm = rn_ld32(w.p[1] + blk * 4);
			d = rn_h2f((uint16_t)dm);
			m = rn_h2f((uint16_t)(dm >> 16));
		} else if (type == CW_Q5_0) {
			d = rn_h2f(rn_ld16(w.p[2] + blk * 2));
			offset = 16;
		} else {
			uint32_t dm = rn_ld32(w.p[2] + blk * 4);
			d = rn_h2f((uint16_t)dm);
			m = rn_h2f((uint16_t)(dm >> 16));
		}
	}
RN_UNROLL
	for (int j = 0; j < NC; j++) {
		const int8_t *xq = rn_act_q(a, j) + u * 32;
		uint4 x0 = rn_ld128(xq), x1 = rn_ld128(xq + 16);
		int xs[8] = {(int)x0.x, (int)x0.y, (int)x0.z, (int)x0.w, (int)x1.x, (int)x1.y, (int)x1.z, (int)x1.w};
		int isum = 0;
RN_UNROLL
		for (int i = 0; i < 8; i++)
			isum = rn_dp4a((int)q[i], xs[i], isum);
		float dx = rn_act_d(a, j, u);
		if (type == CW_Q4_1 || type == CW_Q5_1)
			acc[j] += (d * dx) * (float)isum + m * rn_act_sm(a, j, u);
		else
			acc[j] += (d * dx) * (float)(isum - offset * rn_act_s32(a, j, u));
	}
}

/* Q4_K / Q5_K: unit p of super-block b covers qs bytes [32c + 16h, +16) with c = p / 2, h = p % 2: the low
 * nibbles are values 64c + 16h + [0, 16) (sub-block 2c), the high nibbles 64c + 32 + 16h + [0, 16)
 * (sub-block 2c + 1). The min terms use the activation's sums of exactly these two 16-value groups. */
template <int NC>
RN_HD void rn_unit_k45(int type, const struct rn_cw_mat &w, int64_t row, int64_t u, const struct rn_cw_act &a,
		       float *acc)
{
	const int64_t b = u >> 3;
	const int p = (int)(u & 7), c = p >> 1, h = p & 1;
	const bool five = type == CW_Q5_K;
	const uint8_t *blk = w.p[0] + (row * w.nb + b) * (five ? 176 : 144);
	uint4 hd = rn_ld128(blk);
	float d = rn_h2f((uint16_t)hd.x), dmin = rn_h2f((uint16_t)(hd.x >> 16));
	int sc0, m0, sc1, m1;
	rn_k4_sm_w(hd.y, hd.z, hd.w, 2 * c, &sc0, &m0);
	rn_k4_sm_w(hd.y, hd.z, hd.w, 2 * c + 1, &sc1, &m1);
	uint4 qv = rn_ld128(blk + (five ? 48 : 16) + 32 * c + 16 * h);
	uint32_t qw[4] = {qv.x, qv.y, qv.z, qv.w};
	uint32_t lo[4], hi[4];
	uint32_t hh[4] = {0, 0, 0, 0};
	if (five) {
		uint4 hv = rn_ld128(blk + 16 + 16 * h);
		hh[0] = hv.x, hh[1] = hv.y, hh[2] = hv.z, hh[3] = hv.w;
	}
RN_UNROLL
	for (int i = 0; i < 4; i++) {
		lo[i] = qw[i] & 0x0F0F0F0Fu;
		hi[i] = (qw[i] >> 4) & 0x0F0F0F0Fu;
		if (five) {
			lo[i] |= ((hh[i] >> (2 * c)) & 0x01010101u) << 4;
			hi[i] |= ((hh[i] >> (2 * c + 1)) & 0x01010101u) << 4;
		}
	}
RN_UNROLL
	for (int j = 0; j < NC; j++) {
		const int8_t *xq = rn_act_q(a, j) + b * 256 + 64 * c + 16 * h;
		uint4 xa = rn_ld128(xq), xb = rn_ld128(xq + 32);
		int xl[4] = {(int)xa.x, (int)xa.y, (int)xa.z, (int)xa.w}, xh[4] = {(int)xb.x, (int)xb.y, (int)xb.z, (int)xb.w};
		int il = 0, ih = 0;
RN_UNROLL
		for (int i = 0; i < 4; i++) {
			il = rn_dp4a((int)lo[i], xl[i], il);
			ih = rn_dp4a((int)hi[i], xh[i], ih);
		}
		int32_t bl = rn_act_s16(a, j, b * 16 + 4 * c + h), bh = rn_act_s16(a, j, b * 16 + 4 * c + 2 + h);
		float dx = rn_act_d(a, j, b);
		acc[j] += (d * dx) * (float)(sc0 * il + sc1 * ih) - (dmin * dx) * (float)(m0 * bl + m1 * bh);
	}
}

/* Q6_K: unit p of super-block b is half n = p / 4, lane group q = p % 4: positions l in [8q, 8q + 8) of
 * the four 32-value groups 128n + 32g + l (g = 0..3), each with its own 16-value scale. */
template <int NC>
RN_HD void rn_unit_q6k(const struct rn_cw_mat &w, int64_t row, int64_t u, const struct rn_cw_act &a, float *acc)
{
	const int64_t b = u >> 3, blk = row * w.nb + b;
	const int p = (int)(u & 7), n = p >> 2, q = p & 3;
	uint2 qa = rn_ld64(w.p[0] + blk * 128 + 64 * n + 8 * q);
	uint2 qb = rn_ld64(w.p[0] + blk * 128 + 64 * n + 32 + 8 * q);
	uint2 qh = rn_ld64(w.p[1] + blk * 64 + 32 * n + 8 * q);
	const int8_t *sc = (const int8_t *)(w.p[2] + blk * 16);
	float d = rn_h2f(rn_ld16(w.p[3] + blk * 2));
	uint32_t A[2] = {qa.x, qa.y}, B[2] = {qb.x, qb.y}, H[2] = {qh.x, qh.y};
	uint32_t v[4][2];
RN_UNROLL
	for (int i = 0; i < 2; i++) {
		v[0][i] = rn_sub_bytes((A[i] & 0x0F0F0F0Fu) | ((H[i] & 0x03030303u) << 4), 0x20202020u);
		v[1][i] = rn_sub_bytes((B[i] & 0x0F0F0F0Fu) | (((H[i] >> 2) & 0x03030303u) << 4), 0x20202020u);
		v[2][i] = rn_sub_bytes(((A[i] >> 4) & 0x0F0F0F0Fu) | (((H[i] >> 4) & 0x03030303u) << 4), 0x20202020u);
		v[3][i] = rn_sub_bytes(((B[i] >> 4) & 0x0F0F0F0Fu) | (((H[i] >> 6) & 0x03030303u) << 4), 0x20202020u);
	}
	int s[4];
RN_UNROLL
	for (int g = 0; g < 4; g++)
		s[g] = sc[8 * n + 2 * g + (q >> 1)];
RN_UNROLL
	for (int j = 0; j < NC; j++) {
		const int8_t *xq = rn_act_q(a, j) + b * 256 + 128 * n + 8 * q;
		int isum = 0;
RN_UNROLL
		for (int g = 0; g < 4; g++) {
			uint2 x = rn_ld64(xq + 32 * g);
			int t = rn_dp4a((int)v[g][0], (int)x.x, 0);
			t = rn_dp4a((int)v[g][1], (int)x.y, t);
			isum += s[g] * t;
		}
		acc[j] += (d * rn_act_d(a, j, b)) * (float)isum;
	}
}

template <int NC>
RN_HD void rn_unit_float(int type, const struct rn_cw_mat &w, int64_t row, int64_t u, const struct rn_cw_act &a,
			 float *acc)
{
	float v[16];
	int n;
	float scale = 1.0f;
	if (type == CW_F32) {
		float4 r = *(const float4 *)(w.p[0] + (row * w.cols + u * 4) * 4);
		v[0] = r.x, v[1] = r.y, v[2] = r.z, v[3] = r.w;
		n = 4;
	} else if (type == CW_F16 || type == CW_BF16) {
		/* both operands are halves (the activations rounded as the CPU backend rounds them) */
		uint4 r = rn_ld128(w.p[0] + (row * w.cols + u * 8) * 2);
		const uint32_t rw[4] = {r.x, r.y, r.z, r.w};
		float wv[8];
		RN_UNROLL
		for (int i = 0; i < 4; i++) {
			if (type == CW_F16) {
				wv[2 * i] = rn_h2f((uint16_t)rw[i]);
				wv[2 * i + 1] = rn_h2f((uint16_t)(rw[i] >> 16));
			} else {
				wv[2 * i] = rn_bf2f((uint16_t)rw[i]);
				wv[2 * i + 1] = rn_bf2f((uint16_t)(rw[i] >> 16));
			}
		}
		RN_UNROLL
		for (int j = 0; j < NC; j++) {
			uint4 xr = rn_ld128(a.x16 + (int64_t)j * a.ldx16 + u * 8);
			const uint32_t xw[4] = {xr.x, xr.y, xr.z, xr.w};
			float s = 0.0f;
			RN_UNROLL
			for (int i = 0; i < 4; i++) {
				float x0, x1;
				if (type == CW_F16) {
					x0 = rn_h2f((uint16_t)xw[i]);
					x1 = rn_h2f((uint16_t)(xw[i] >> 16));
				} else {
					x0 = rn_bf2f((uint16_t)xw[i]);
					x1 = rn_bf2f((uint16_t)(xw[i] >> 16));
				}
				s += wv[2 * i] * x0 + wv[2 * i + 1] * x1;
			}
			acc[j] += s;
		}
		return;
	} else { /* FP8: 16 values, one tile scale */
		uint4 r = rn_ld128(w.p[0] + row * w.cols + u * 16);
		rn_fp8x4(r.x, v);
		rn_fp8x4(r.y, v + 4);
		rn_fp8x4(r.z, v + 8);
		rn_fp8x4(r.w, v + 12);
		n = 16;
		const float *grid = (const float *)w.p[1];
		scale = grid[(row / RN_CU_FP8_TILE) * w.tcp + (u * 16) / RN_CU_FP8_TILE];
	}
RN_UNROLL
	for (int j = 0; j < NC; j++) {
		const float *x = a.x + (int64_t)j * a.ldx + u * n;
		float s = 0.0f;
RN_UNROLL
		for (int i = 0; i < 16; i += 4) {
			if (i >= n)
				break;
			float4 xv = *(const float4 *)(x + i);
			s += v[i] * xv.x + v[i + 1] * xv.y + v[i + 2] * xv.z + v[i + 3] * xv.w;
		}
		acc[j] += s * scale;
	}
}

/* Dispatch on the type (a compile-time constant in the kernels, so the switch folds away). */
template <int TYPE, int NC>
RN_HD void rn_unit_dot(const struct rn_cw_mat &w, int64_t row, int64_t u, const struct rn_cw_act &a, float *acc)
{
	if (TYPE == CW_Q4_0 || TYPE == CW_Q4_1 || TYPE == CW_Q5_0 || TYPE == CW_Q5_1 || TYPE == CW_Q8_0)
		rn_unit_legacy<NC>(TYPE, w, row, u, a, acc);
	else if (TYPE == CW_Q4_K || TYPE == CW_Q5_K)
		rn_unit_k45<NC>(TYPE, w, row, u, a, acc);
	else if (TYPE == CW_Q6_K)
		rn_unit_q6k<NC>(w, row, u, a, acc);
	else
		rn_unit_float<NC>(TYPE, w, row, u, a, acc);
}

/* Units in one row of `cols` values. */
/* Bytes of one row in plane 0 (the values; every type keeps them row after row there): what a matvec row
 * streams first. Equals rn_cw_plane_size(type, 0, 1, cols) (checked on the host). */
RN_HD int64_t rn_cw_row_bytes0(int type, int64_t cols)
{
	switch (type) {
	case CW_F32: return cols * 4;
	case CW_F16:
	case CW_BF16: return cols * 2;
	case CW_FP8: return cols;
	case CW_Q4_K: return cols / 256 * 144;
	case CW_Q5_K: return cols / 256 * 176;
	case CW_Q6_K: return cols / 256 * 128;
	case CW_Q8_0: return cols / 32 * 32;
	default: return cols / 32 * 16; /* Q4_0, Q4_1, Q5_0, Q5_1: 16 bytes of nibbles a block */
	}
}

RN_HD int64_t rn_cw_units(int type, int64_t cols)
{
	switch (type) {
	case CW_F32: return cols / 4;
	case CW_F16:
	case CW_BF16: return cols / 8;
	case CW_FP8: return cols / 16;
	case CW_Q4_K:
	case CW_Q5_K:
	case CW_Q6_K: return cols / 256 * 8;
	default: return cols / 32;
	}
}

/* ---------------------------------------------------------------------------------------------- dequantize */

/* Writes the values of unit u of row `row` into out[column] (out is the row's start), as T (float, __half
 * or __nv_bfloat16 through the converter cv). */
template <typename CV>
RN_HD void rn_unit_dequant(int type, const struct rn_cw_mat &w, int64_t row, int64_t u, CV cv)
{
	switch (type) {
	case CW_Q4_0:
	case CW_Q4_1:
	case CW_Q5_0:
	case CW_Q5_1:
	case CW_Q8_0: {
		const int64_t blk = row * w.nb + u;
		float d, m = 0.0f;
		if (type == CW_Q8_0) {
			d = rn_h2f(rn_ld16(w.p[1] + blk * 2));
			const int8_t *q = (const int8_t *)(w.p[0] + blk * 32);
			for (int i = 0; i < 32; i++)
				cv(u * 32 + i, d * (float)q[i]);
			break;
		}
		const uint8_t *qs = w.p[0] + blk * 16;
		uint32_t qh = 0;
		int off = 0;
		if (type == CW_Q4_0) {
			d = rn_h2f(rn_ld16(w.p[1] + blk * 2));
			off = 8;
		} else if (type == CW_Q4_1) {
			uint32_t dm = rn_ld32(w.p[1] + blk * 4);
			d = rn_h2f((uint16_t)dm);
			m = rn_h2f((uint16_t)(dm >> 16));
		} else if (type == CW_Q5_0) {
			qh = rn_ld32(w.p[1] + blk * 4);
			d = rn_h2f(rn_ld16(w.p[2] + blk * 2));
			off = 16;
		} else {
			qh = rn_ld32(w.p[1] + blk * 4);
			uint32_t dm = rn_ld32(w.p[2] + blk * 4);
			d = rn_h2f((uint16_t)dm);
			m = rn_h2f((uint16_t)(dm >> 16));
		}
		for (int i = 0; i < 16; i++) {
			int lo = qs[i] & 15, hi = qs[i] >> 4;
			lo |= (int)((qh >> i) & 1) << 4;
			hi |= (int)((qh >> (i + 16)) & 1) << 4;
			cv(u * 32 + i, d * (float)(lo - off) + m);
			cv(u * 32 + 16 + i, d * (float)(hi - off) + m);
		}
		break;
	}
	case CW_Q4_K:
	case CW_Q5_K: {
		const int64_t b = u >> 3;
		const int p = (int)(u & 7), c = p >> 1, h = p & 1;
		const bool five = type == CW_Q5_K;
		const uint8_t *blk = w.p[0] + (row * w.nb + b) * (five ? 176 : 144);
		float d = rn_h2f(rn_ldu16(blk)), dmin = rn_h2f(rn_ldu16(blk + 2));
		int sc0, m0, sc1, m1;
		rn_k4_sm(blk + 4, 2 * c, &sc0, &m0);
		rn_k4_sm(blk + 4, 2 * c + 1, &sc1, &m1);
		const uint8_t *qs = blk + (five ? 48 : 16) + 32 * c + 16 * h, *qh = blk + 16 + 16 * h;
		for (int i = 0; i < 16; i++) {
			int lo = qs[i] & 15, hi = qs[i] >> 4;
			if (five) {
				lo |= ((qh[i] >> (2 * c)) & 1) << 4;
				hi |= ((qh[i] >> (2 * c + 1)) & 1) << 4;
			}
			cv(b * 256 + 64 * c + 16 * h + i, d * (float)sc0 * (float)lo - dmin * (float)m0);
			cv(b * 256 + 64 * c + 32 + 16 * h + i, d * (float)sc1 * (float)hi - dmin * (float)m1);
		}
		break;
	}
	case CW_Q6_K: {
		const int64_t b = u >> 3, blk = row * w.nb + b;
		const int p = (int)(u & 7), n = p >> 2, q = p & 3;
		const uint8_t *ql = w.p[0] + blk * 128 + 64 * n, *qh = w.p[1] + blk * 64 + 32 * n;
		const int8_t *sc = (const int8_t *)(w.p[2] + blk * 16);
		float d = rn_h2f(rn_ld16(w.p[3] + blk * 2));
		for (int i = 0; i < 8; i++) {
			int l = 8 * q + i;
			int v0 = (ql[l] & 15) | ((qh[l] & 3) << 4);
			int v1 = (ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4);
			int v2 = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4);
			int v3 = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
			int64_t base = b * 256 + 128 * n + l;
			cv(base, d * (float)sc[8 * n + 0 + (l >> 4)] * (float)(v0 - 32));
			cv(base + 32, d * (float)sc[8 * n + 2 + (l >> 4)] * (float)(v1 - 32));
			cv(base + 64, d * (float)sc[8 * n + 4 + (l >> 4)] * (float)(v2 - 32));
			cv(base + 96, d * (float)sc[8 * n + 6 + (l >> 4)] * (float)(v3 - 32));
		}
		break;
	}
	case CW_F32: {
		const float *r = (const float *)(w.p[0] + (row * w.cols + u * 4) * 4);
		for (int i = 0; i < 4; i++)
			cv(u * 4 + i, r[i]);
		break;
	}
	case CW_F16:
	case CW_BF16: {
		const uint16_t *r = (const uint16_t *)(w.p[0] + (row * w.cols + u * 8) * 2);
		for (int i = 0; i < 8; i++)
			cv(u * 8 + i, type == CW_F16 ? rn_h2f(r[i]) : rn_bf2f(r[i]));
		break;
	}
	default: { /* FP8 */
		const uint8_t *r = w.p[0] + row * w.cols + u * 16;
		const float *grid = (const float *)w.p[1];
		float s = grid[(row / RN_CU_FP8_TILE) * w.tcp + (u * 16) / RN_CU_FP8_TILE];
		for (int i = 0; i < 16; i++)
			cv(u * 16 + i, rn_e4m3_to_f(r[i]) * s);
		break;
	}
	}
}

#endif
