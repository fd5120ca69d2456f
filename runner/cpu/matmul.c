/* runner/cpu/matmul.c — type table, weight checks, activation preparation, row tiling, threading, ISA choice.
 *
 * The per-type arithmetic lives in the kernel sets (kernels_scalar.c, kernels_x86.h); this file decides which
 * rows each thread computes and in what order: for a batch it walks tiles of weight rows that fit in L1/L2 and
 * feeds each weight row to the kernel with up to RN_NX_MAX activation rows at once, so a weight block is
 * read and unpacked once per group of activation rows rather than once per row; where the kernel set has an
 * unpacked path (legacy formats, whose 4/5-bit unpacking costs more than the dot product) a tile is unpacked
 * once per chunk of ACT_CHUNK_ROWS activations. For the quantized types the result never depends on the path
 * or the batch size: every path computes the same integer sums and float operations in the same order (the
 * float types use more FMA chains for a single row, so there it may differ in the last bits).
 */
#include "config.h"

#include "runner/cpu/matmul.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "runner/cpu/features.h"
#include "runner/cpu/kernels.h"

/* Activation rows processed against one tile of weight rows before moving to the next tile (keeps the
 * quantized activations of the chunk in L2), and the bytes of weights per tile (kept in L1/L2). */
#define ACT_CHUNK_ROWS 64
#define WEIGHT_TILE_BYTES (24 * 1024)
/* Batches of at least UNPACK_MIN_BATCH rows use a kernel set's unpacked path where it has one: tiles of up
 * to UNPACK_TILE_BYTES of unpacked weights (in L1/L2), each unpacked once per ACT_CHUNK_ROWS activations. */
#define UNPACK_MIN_BATCH 16
#define UNPACK_TILE_BYTES (40 * 1024)
/* Threads split the rows of a matrix in multiples of this. */
#define ROW_SPLIT_ALIGN 8

/* ---------------------------------------------------------------------------------------------- types */

struct type_info {
	int type;
	const char *name;
	int block_elems;
	int block_bytes;
	enum rn_act_kind act;
	enum rn_kslot slot;
};

static const struct type_info type_table[] = {
	{ RN_MM_F32, "f32", 1, 4, RN_ACT_F32, KS_F32 },
	{ RN_MM_F16, "f16", 1, 2, RN_ACT_F32, KS_F16 },
	{ RN_MM_BF16, "bf16", 1, 2, RN_ACT_F32, KS_BF16 },
	{ RN_MM_Q4_0, "q4_0", QK_LEGACY, Q4_0_BYTES, RN_ACT_Q8_32, KS_Q4_0 },
	{ RN_MM_Q4_1, "q4_1", QK_LEGACY, Q4_1_BYTES, RN_ACT_Q8_32, KS_Q4_1 },
	{ RN_MM_Q5_0, "q5_0", QK_LEGACY, Q5_0_BYTES, RN_ACT_Q8_32, KS_Q5_0 },
	{ RN_MM_Q5_1, "q5_1", QK_LEGACY, Q5_1_BYTES, RN_ACT_Q8_32, KS_Q5_1 },
	{ RN_MM_Q8_0, "q8_0", QK_LEGACY, Q8_0_BYTES, RN_ACT_Q8_32, KS_Q8_0 },
	{ RN_MM_Q2_K, "q2_K", QK_K, Q2_K_BYTES, RN_ACT_Q8_256, KS_Q2_K },
	{ RN_MM_Q3_K, "q3_K", QK_K, Q3_K_BYTES, RN_ACT_Q8_256, KS_Q3_K },
	{ RN_MM_Q4_K, "q4_K", QK_K, Q4_K_BYTES, RN_ACT_Q8_256, KS_Q4_K },
	{ RN_MM_Q5_K, "q5_K", QK_K, Q5_K_BYTES, RN_ACT_Q8_256, KS_Q5_K },
	{ RN_MM_Q6_K, "q6_K", QK_K, Q6_K_BYTES, RN_ACT_Q8_256, KS_Q6_K },
	{ RN_MM_FP8, "fp8_e4m3_b128", 1, 1, RN_ACT_F32, KS_FP8 },
	{ RN_MM_Q4_0_R8, "q4_0_r8", QK_LEGACY, Q4_0_BYTES, RN_ACT_Q8_32, KS_Q4_0_R8 },
	{ RN_MM_Q4_1_R8, "q4_1_r8", QK_LEGACY, Q4_1_BYTES, RN_ACT_Q8_32, KS_Q4_1_R8 },
	{ RN_MM_Q5_0_R8, "q5_0_r8", QK_LEGACY, Q5_0_BYTES, RN_ACT_Q8_32, KS_Q5_0_R8 },
	{ RN_MM_Q5_1_R8, "q5_1_r8", QK_LEGACY, Q5_1_BYTES, RN_ACT_Q8_32, KS_Q5_1_R8 },
};

static const struct type_info *type_lookup(int type)
{
	for (size_t i = 0; i < sizeof type_table / sizeof type_table[0]; i++)
		if (type_table[i].type == type)
			return &type_table[i];
	return NULL;
}

int rn_kslot_of_type(int type)
{
	const struct type_info *t = type_lookup(type);
	return t ? (int)t->slot : -1;
}

const char *rn_mm_type_name(int type)
{
	const struct type_info *t = type_lookup(type);
	return t ? t->name : "?";
}

int rn_mm_type_supported(int type)
{
	return type_lookup(type) != NULL;
}

int rn_mm_block_elems(int type)
{
	const struct type_info *t = type_lookup(type);
	return t ? t->block_elems : 0;
}

size_t rn_mm_row_bytes(int type, int64_t cols)
{
	const struct type_info *t = type_lookup(type);
	if (!t || cols <= 0 || cols % t->block_elems != 0)
		return 0;
	uint64_t blocks = (uint64_t)(cols / t->block_elems);
	if (blocks > SIZE_MAX / (uint64_t)t->block_bytes)
		return 0;
	return (size_t)blocks * (size_t)t->block_bytes;
}

enum rn_act_kind rn_mm_act_kind(int type)
{
	const struct type_info *t = type_lookup(type);
	return t ? t->act : RN_ACT_F32;
}

const char *rn_mm_strerror(int code)
{
	switch (code) {
	case RN_MM_OK:
		return "success";
	case RN_MM_EUNSUPPORTED:
		return "unsupported weight type";
	case RN_MM_ESHAPE:
		return "bad weight shape";
	case RN_MM_ESIZE:
		return "weight data too short";
	default:
		return "unknown matmul error";
	}
}

int rn_mm_check(const struct rn_weight *w, size_t data_size, struct rn_mm_error *err)
{
	struct rn_mm_error tmp;
	if (!err)
		err = &tmp;
	err->msg[0] = 0;
	const struct type_info *t = type_lookup(w->type);
	if (!t) {
		snprintf(err->msg, sizeof err->msg, "weight type %d is not supported by the CPU matmul", w->type);
		return RN_MM_EUNSUPPORTED;
	}
	if (w->rows <= 0 || w->cols <= 0 || w->cols % t->block_elems != 0) {
		snprintf(err->msg, sizeof err->msg,
			 "%s weight of %lld x %lld: rows and cols must be positive and cols a multiple of %d", t->name,
			 (long long)w->rows, (long long)w->cols, t->block_elems);
		return RN_MM_ESHAPE;
	}
	size_t row_bytes = rn_mm_row_bytes(w->type, w->cols);
	if (row_bytes == 0 || (uint64_t)w->rows > SIZE_MAX / row_bytes) {
		snprintf(err->msg, sizeof err->msg, "%s weight of %lld x %lld: size overflows", t->name,
			 (long long)w->rows, (long long)w->cols);
		return RN_MM_ESIZE;
	}
	if (!w->data || (size_t)w->rows * row_bytes > data_size) {
		snprintf(err->msg, sizeof err->msg, "%s weight of %lld x %lld needs %zu bytes, %zu available", t->name,
			 (long long)w->rows, (long long)w->cols, (size_t)w->rows * row_bytes,
			 w->data ? data_size : (size_t)0);
		return RN_MM_ESIZE;
	}
	if (w->type == RN_MM_FP8) {
		/* the grid: ceil(rows/128) x ceil(cols/128) floats, inside [data, data + data_size) */
		uint64_t n_tr = ((uint64_t)w->rows + RN_FP8_TILE - 1) / RN_FP8_TILE;
		uint64_t n_tc = ((uint64_t)w->cols + RN_FP8_TILE - 1) / RN_FP8_TILE;
		uint64_t grid = n_tr * n_tc * 4; /* no overflow: both factors are below 2^57 / 128 */
		const uint8_t *base = w->data, *sc = w->scale;
		if (!sc || sc < base || (size_t)(sc - base) > data_size || grid > data_size - (size_t)(sc - base)) {
			snprintf(err->msg, sizeof err->msg,
				 "fp8 weight of %lld x %lld: its %llu-byte scale grid is missing or outside the %zu "
				 "bytes of the tensor", (long long)w->rows, (long long)w->cols,
				 (unsigned long long)grid, data_size);
			return RN_MM_ESIZE;
		}
	}
	return RN_MM_OK;
}

int rn_mm_weight_from_tensor(const struct gguf_tensor *t, struct rn_weight *w, struct rn_mm_error *err)
{
	memset(w, 0, sizeof *w);
	w->type = (int)t->type;
	w->cols = t->ne[0];
	w->rows = t->ne[1];
	w->data = t->data;
	if (t->ne[2] != 1 || t->ne[3] != 1) {
		if (err)
			snprintf(err->msg, sizeof err->msg, "tensor %s is not 2-D (%lld x %lld x %lld x %lld)",
				 t->name, (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2],
				 (long long)t->ne[3]);
		return RN_MM_ESHAPE;
	}
	if (t->type == RN_MM_FP8 && t->n_bytes >= (uint64_t)t->ne[0] * (uint64_t)t->ne[1])
		w->scale = (const uint8_t *)t->data + t->ne[0] * t->ne[1];
	int rc = rn_mm_check(w, (size_t)t->n_bytes, err);
	if (rc != RN_MM_OK && err) {
		char msg[sizeof err->msg];
		snprintf(msg, sizeof msg, "tensor %.80s: %.160s", t->name, err->msg);
		memcpy(err->msg, msg, sizeof msg);
	}
	return rc;
}

/* ---------------------------------------------------------------------------------------------- ISA */

static int isa_supported[4];
static pthread_once_t isa_once = PTHREAD_ONCE_INIT;
static _Atomic(const struct rn_kernel_set *) current_set;

static const struct rn_kernel_set *kernels_for(enum rn_isa isa)
{
	switch (isa) {
#ifdef RN_HAVE_AVX2_KERNELS
	case RN_ISA_AVX2:
		return rn_kernels_avx2();
#endif
#ifdef RN_HAVE_AVXVNNI_KERNELS
	case RN_ISA_AVXVNNI:
		return rn_kernels_avxvnni();
#endif
#ifdef RN_HAVE_AVX512_KERNELS
	case RN_ISA_AVX512:
		return rn_kernels_avx512();
#endif
	default:
		return rn_kernels_scalar();
	}
}

static void isa_init(void)
{
	const struct rn_cpu_features *f = rn_cpu_features();
	isa_supported[RN_ISA_SCALAR] = 1;
#ifdef RN_HAVE_AVX2_KERNELS
	isa_supported[RN_ISA_AVX2] = f->avx2 && f->fma && f->f16c;
#endif
#ifdef RN_HAVE_AVXVNNI_KERNELS
	isa_supported[RN_ISA_AVXVNNI] = isa_supported[RN_ISA_AVX2] && f->avxvnni;
#endif
#ifdef RN_HAVE_AVX512_KERNELS
	isa_supported[RN_ISA_AVX512] = isa_supported[RN_ISA_AVX2] && f->avx512f && f->avx512bw && f->avx512vl &&
				       f->avx512vnni;
#endif
	enum rn_isa best = RN_ISA_SCALAR;
	for (int i = RN_ISA_AVX512; i > RN_ISA_SCALAR; i--) {
		if (isa_supported[i]) {
			best = (enum rn_isa)i;
			break;
		}
	}
	if (f->isa_env[0]) {
		for (int i = RN_ISA_SCALAR; i <= RN_ISA_AVX512; i++)
			if (strcmp(f->isa_env, rn_isa_name((enum rn_isa)i)) == 0 && isa_supported[i])
				best = (enum rn_isa)i;
	}
	atomic_store(&current_set, kernels_for(best));
}

const char *rn_isa_name(enum rn_isa isa)
{
	switch (isa) {
	case RN_ISA_SCALAR:
		return "scalar";
	case RN_ISA_AVX2:
		return "avx2";
	case RN_ISA_AVXVNNI:
		return "avxvnni";
	case RN_ISA_AVX512:
		return "avx512";
	}
	return "?";
}

int rn_isa_available(enum rn_isa isa)
{
	pthread_once(&isa_once, isa_init);
	return (int)isa >= 0 && isa <= RN_ISA_AVX512 && isa_supported[isa];
}

enum rn_isa rn_isa_current(void)
{
	pthread_once(&isa_once, isa_init);
	return atomic_load_explicit(&current_set, memory_order_relaxed)->isa;
}

int rn_isa_set(enum rn_isa isa)
{
	if (!rn_isa_available(isa))
		return -1;
	atomic_store(&current_set, kernels_for(isa));
	return 0;
}

static const struct rn_kernel_set *kernels(void)
{
	pthread_once(&isa_once, isa_init);
	return atomic_load_explicit(&current_set, memory_order_relaxed);
}

/* ---------------------------------------------------------------------------------------------- repacking */

/* The legacy formats with an R8 layout. */
static int has_r8(int type)
{
	return type == RN_MM_Q4_0 || type == RN_MM_Q4_1 || type == RN_MM_Q5_0 || type == RN_MM_Q5_1;
}

int rn_mm_repack_type(int type)
{
	return has_r8(type) && kernels()->isa != RN_ISA_SCALAR ? RN_MM_R8 | type : type;
}

/* One row of nb blocks of a legacy format into its R8 layout (runner/cpu/kernels.h). Written as loops over
 * 16 bytes that the compiler vectorizes: the copy happens at load, for every matrix of the model. */
static void repack_row(const uint8_t *src, int64_t nb, int base, uint8_t *dst)
{
	const int bytes = rn_legacy_bytes(base), hm = rn_legacy_has_min(base), five = rn_legacy_five(base);
	const int qs_in = (hm ? 4 : 2) + (five ? 4 : 0), qh_in = hm ? 4 : 2;
	const int64_t full = nb / R8_GROUP * R8_GROUP;
	for (int64_t b0 = 0; b0 < full; b0 += R8_GROUP) {
		const uint8_t *gs = src + b0 * bytes;
		uint8_t *g = dst + b0 * bytes;
		for (int k = 0; k < R8_GROUP; k++) {
			memcpy(g + 2 * k, gs + k * bytes, 2);
			if (hm)
				memcpy(g + R8_M_AT + 2 * k, gs + k * bytes + 2, 2);
		}
		/* element i < 16 is the low nibble of qs[i], element i + 16 the high one */
		for (int p = 0; p < 4; p++) {
			const uint8_t *qa = gs + (2 * p) * bytes + qs_in, *qb = gs + (2 * p + 1) * bytes + qs_in;
			uint8_t *gq = g + rn_r8_qs_at(base) + 32 * p;
			for (int i = 0; i < 16; i++) {
				gq[i] = (uint8_t)((qa[i] & 15) | (qb[i] << 4));
				gq[i + 16] = (uint8_t)((qa[i] >> 4) | (qb[i] & 0xF0));
			}
		}
		if (five) {
			uint8_t *h = g + rn_r8_h_at(base);
			memset(h, 0, 32);
			for (int k = 0; k < R8_GROUP; k++) {
				const uint8_t *qh = gs + k * bytes + qh_in;
				for (int i = 0; i < 32; i++)
					h[i] |= (uint8_t)(((qh[i / 8] >> (i % 8)) & 1) << k);
			}
		}
	}
	memcpy(dst + full * bytes, src + full * bytes, (size_t)((nb - full) * bytes));
}

void rn_mm_repack(const struct rn_weight *w, void *dst)
{
	const size_t rb = rn_mm_row_bytes(w->type, w->cols);
	if (!has_r8(w->type)) {
		fprintf(stderr, "rn_mm_repack: type %s has no repacked layout\n", rn_mm_type_name(w->type));
		abort();
	}
	for (int64_t r = 0; r < w->rows; r++)
		repack_row((const uint8_t *)w->data + (size_t)r * rb, w->cols / QK_LEGACY, w->type,
			   (uint8_t *)dst + (size_t)r * rb);
}

/* ---------------------------------------------------------------------------------------------- activations */

size_t rn_act_row_bytes(enum rn_act_kind kind, int64_t cols)
{
	size_t bytes;
	if (cols <= 0)
		return 0;
	if (kind == RN_ACT_Q8_32 && cols % QK_LEGACY == 0)
		bytes = (size_t)cols + (size_t)cols / QK_LEGACY * 12;
	else if (kind == RN_ACT_Q8_256 && cols % QK_K == 0)
		bytes = (size_t)cols + (size_t)cols / QK_K * 4 + (size_t)cols / 16 * 2;
	else
		return 0;
	return (bytes + 63) / 64 * 64;
}

static void quantize_rows(const struct rn_kernel_set *ks, enum rn_act_kind kind, const float *x, int64_t ldx,
			  int64_t cols, int64_t r0, int64_t r1, void *dst)
{
	size_t rb = rn_act_row_bytes(kind, cols);
	if (rb == 0) {
		fprintf(stderr, "rn_act_quantize_rows: bad kind %d or cols %lld\n", (int)kind, (long long)cols);
		abort();
	}
	rn_quant_fn q = kind == RN_ACT_Q8_32 ? ks->quant_q8_32 : ks->quant_q8_256;
	for (int64_t r = r0; r < r1; r++)
		q(x + r * ldx, cols, (uint8_t *)dst + (size_t)r * rb);
}

void rn_act_quantize_rows(enum rn_act_kind kind, const float *x, int64_t ldx, int64_t cols, int64_t r0, int64_t r1,
			  void *dst)
{
	quantize_rows(kernels(), kind, x, ldx, cols, r0, r1, dst);
}

struct quant_job {
	const struct rn_kernel_set *ks;
	enum rn_act_kind kind;
	const float *x;
	int64_t ldx, n, cols;
	void *dst;
};

static void quant_job_fn(void *p, int ith, int nth)
{
	struct quant_job *j = p;
	int64_t r0, r1;
	rn_pool_split(j->n, 1, ith, nth, &r0, &r1);
	quantize_rows(j->ks, j->kind, j->x, j->ldx, j->cols, r0, r1, j->dst);
}

static void act_describe(enum rn_act_kind kind, const float *x, int64_t ldx, int64_t n, int64_t cols, void *dst,
			 struct rn_act *out)
{
	out->kind = kind;
	out->n = n;
	out->cols = cols;
	out->data = kind == RN_ACT_F32 ? (const void *)x : dst;
	out->ld = kind == RN_ACT_F32 ? ldx : 0;
}

void rn_act_prepare(struct rn_pool *pool, enum rn_act_kind kind, const float *x, int64_t ldx, int64_t n,
		    int64_t cols, void *dst, struct rn_act *out)
{
	act_describe(kind, x, ldx, n, cols, dst, out);
	if (kind == RN_ACT_F32 || n <= 0)
		return;
	struct quant_job j = { kernels(), kind, x, ldx, n, cols, dst };
	if (n == 1)
		quant_job_fn(&j, 0, 1);
	else
		rn_pool_run(pool, quant_job_fn, &j);
}

/* ---------------------------------------------------------------------------------------------- matmul */

static void check_args(const struct rn_weight *w, const struct rn_act *x, int64_t ldy)
{
	const struct type_info *t = type_lookup(w->type);
	if (!t || x->kind != t->act || x->cols != w->cols || ldy < w->rows || w->cols % t->block_elems != 0 ||
	    (x->kind == RN_ACT_F32 && x->ld < x->cols)) {
		fprintf(stderr, "rn_matmul: bad arguments (type %d, act kind %d, cols %lld/%lld, ldy %lld, rows %lld)\n",
			w->type, (int)x->kind, (long long)w->cols, (long long)x->cols, (long long)ldy,
			(long long)w->rows);
		abort();
	}
}

static inline const void *act_row(const struct rn_act *x, int64_t i, size_t rb)
{
	if (x->kind == RN_ACT_F32)
		return (const float *)x->data + i * x->ld;
	return (const uint8_t *)x->data + (size_t)i * rb;
}

static void matmul_rows(const struct rn_kernel_set *ks, const struct rn_weight *w, const struct rn_act *x, float *y,
			int64_t ldy, int64_t row0, int64_t row1)
{
	const struct type_info *t = type_lookup(w->type);
	rn_dot_fn const *dot = ks->dot[t->slot];
	size_t rb = rn_act_row_bytes(x->kind, x->cols);

	if (x->n == 1) {
		const void *xp[1] = { x->data };
		dot[0](w, row0, row1, xp, y, ldy);
		return;
	}

	if (x->n >= UNPACK_MIN_BATCH && ks->unpack[t->slot] &&
	    rn_unpacked_row_bytes(w->type, w->cols) * 4 <= UNPACK_TILE_BYTES) {
		/* unpack each tile of weight rows once per chunk of activation rows */
		size_t us = rn_unpacked_row_bytes(w->type, w->cols);
		int64_t tile = (int64_t)(UNPACK_TILE_BYTES / us);
		uint8_t *ubuf = aligned_alloc(64, UNPACK_TILE_BYTES);
		if (ubuf) {
			for (int64_t i0 = 0; i0 < x->n; i0 += ACT_CHUNK_ROWS) {
				int64_t i1 = i0 + ACT_CHUNK_ROWS < x->n ? i0 + ACT_CHUNK_ROWS : x->n;
				for (int64_t r0 = row0; r0 < row1; r0 += tile) {
					int64_t r1 = r0 + tile < row1 ? r0 + tile : row1;
					ks->unpack[t->slot](w, r0, r1, ubuf, us);
					int64_t i = i0;
					for (; i + RN_NX_MAX <= i1; i += RN_NX_MAX) {
						const void *xp[RN_NX_MAX];
						for (int j = 0; j < RN_NX_MAX; j++)
							xp[j] = act_row(x, i + j, rb);
						ks->dot_unpacked4[t->slot](w, ubuf, us, r1 - r0, xp, y + i * ldy + r0,
									   ldy);
					}
					if (i < i1) {
						/* the last 1..3 rows of the chunk: the plain kernels */
						int nx = (int)(i1 - i);
						const void *xp[RN_NX_MAX];
						for (int j = 0; j < nx; j++)
							xp[j] = act_row(x, i + j, rb);
						dot[nx - 1](w, r0, r1, xp, y + i * ldy, ldy);
					}
				}
			}
			free(ubuf);
			return;
		}
	}

	size_t wrow_bytes = rn_mm_row_bytes(w->type, w->cols);
	int64_t tile = (int64_t)(WEIGHT_TILE_BYTES / wrow_bytes);
	if (tile < 4)
		tile = 4;
	for (int64_t i0 = 0; i0 < x->n; i0 += ACT_CHUNK_ROWS) {
		int64_t i1 = i0 + ACT_CHUNK_ROWS < x->n ? i0 + ACT_CHUNK_ROWS : x->n;
		for (int64_t r0 = row0; r0 < row1; r0 += tile) {
			int64_t r1 = r0 + tile < row1 ? r0 + tile : row1;
			for (int64_t i = i0; i < i1;) {
				int nx = i1 - i >= RN_NX_MAX ? RN_NX_MAX : (int)(i1 - i);
				const void *xp[RN_NX_MAX];
				for (int j = 0; j < nx; j++)
					xp[j] = act_row(x, i + j, rb);
				dot[nx - 1](w, r0, r1, xp, y + i * ldy, ldy);
				i += nx;
			}
		}
	}
}

void rn_matmul_rows(const struct rn_weight *w, const struct rn_act *x, float *y, int64_t ldy, int64_t row0,
		    int64_t row1)
{
	check_args(w, x, ldy);
	matmul_rows(kernels(), w, x, y, ldy, row0, row1);
}

struct mm_job {
	const struct rn_kernel_set *ks;
	const struct rn_mm_op *ops;
	int n_ops;
	/* rn_matmul_f32 only: quantize first */
	struct rn_pool *pool;
	const float *xf;
	int64_t ldx;
	void *work;
};

static void mm_job_fn(void *p, int ith, int nth)
{
	struct mm_job *j = p;
	if (j->xf) {
		const struct rn_act *x = j->ops[0].x;
		int64_t r0, r1;
		rn_pool_split(x->n, 1, ith, nth, &r0, &r1);
		quantize_rows(j->ks, x->kind, j->xf, j->ldx, x->cols, r0, r1, j->work);
		rn_pool_barrier(j->pool);
	}
	for (int k = 0; k < j->n_ops; k++) {
		const struct rn_mm_op *op = &j->ops[k];
		int64_t r0, r1;
		rn_pool_split(op->w->rows, ROW_SPLIT_ALIGN, ith, nth, &r0, &r1);
		if (r0 < r1)
			matmul_rows(j->ks, op->w, op->x, op->y, op->ldy, r0, r1);
	}
}

void rn_matmul_multi(struct rn_pool *pool, const struct rn_mm_op *ops, int n_ops)
{
	for (int k = 0; k < n_ops; k++)
		check_args(ops[k].w, ops[k].x, ops[k].ldy);
	struct mm_job j = { .ks = kernels(), .ops = ops, .n_ops = n_ops };
	rn_pool_run(pool, mm_job_fn, &j);
}

void rn_matmul(struct rn_pool *pool, const struct rn_weight *w, const struct rn_act *x, float *y, int64_t ldy)
{
	struct rn_mm_op op = { w, x, y, ldy };
	rn_matmul_multi(pool, &op, 1);
}

size_t rn_matmul_work_size(int type, int64_t n, int64_t cols)
{
	enum rn_act_kind kind = rn_mm_act_kind(type);
	if (kind == RN_ACT_F32 || n <= 0)
		return 0;
	size_t rb = rn_act_row_bytes(kind, cols);
	if (rb == 0 || (uint64_t)n > SIZE_MAX / rb)
		return 0;
	return rb * (size_t)n;
}

void rn_matmul_f32(struct rn_pool *pool, const struct rn_weight *w, const float *x, int64_t ldx, int64_t n, float *y,
		   int64_t ldy, void *work)
{
	struct rn_act act;
	enum rn_act_kind kind = rn_mm_act_kind(w->type);
	act_describe(kind, x, ldx, n, w->cols, work, &act);
	struct rn_mm_op op = { w, &act, y, ldy };
	check_args(w, &act, ldy);
	struct mm_job j = { .ks = kernels(), .ops = &op, .n_ops = 1 };
	if (kind != RN_ACT_F32) {
		j.pool = pool;
		j.xf = x;
		j.ldx = ldx;
		j.work = work;
	}
	rn_pool_run(pool, mm_job_fn, &j);
}
