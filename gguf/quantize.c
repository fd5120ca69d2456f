/* gguf/quantize.c — f32 rows to Q8_0 / Q5_0 (llama.cpp's reference formulas, bit for bit) and Q4_K / Q6_K
 * (orun's own search: per sub-block least-squares fits over a grid of candidate scales, then the 6/8-bit
 * sub-block scales quantized against the fp16 super-block scale and nudged by +-1 where that lowers the
 * squared error), plus the whole-file Q8_0 / Q4_K_M converter with llama.cpp's per-tensor type choice.
 * Compiled with -ffp-contract=off like the dequantizers (bit-exact Q8_0 needs unfused f32 arithmetic).
 * gguf_quantize_file splits each tensor's rows over one thread per online CPU (the output does not depend on
 * the thread count: rows are independent).
 */
#include "config.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

#include "gguf/internal.h"
#include "gguf/quantize.h"
#include "gguf/writer.h"

#define QK_K 256

/* ---------------------------------------------------------------- Q8_0 and Q5_0 (llama.cpp's formulas) */

/* (int8_t)v for v in [-128, 127] (truncating, as the C cast); out-of-range and NaN values, which only
 * non-finite input produces and for which the cast is undefined, saturate (NaN gives 0). */
static inline int to_i8(float v)
{
	if (v != v)
		return 0;
	if (v <= -128.0f)
		return -128;
	if (v >= 127.0f)
		return 127;
	return (int)(int8_t)v;
}

static void q8_0_block(const float *x, uint8_t *b)
{
	float amax = 0.0f;
	for (int j = 0; j < 32; j++) {
		float a = fabsf(x[j]);
		if (a > amax)
			amax = a;
	}
	const float d = amax / 127.0f;
	const float id = d != 0.0f ? 1.0f / d : 0.0f;
	gg_st16(b, gguf_f32_to_f16(d));
	for (int j = 0; j < 32; j++)
		b[2 + j] = (uint8_t)(int8_t)to_i8(roundf(x[j] * id));
}

static void q5_0_block(const float *x, uint8_t *b)
{
	float amax = 0.0f, max = 0.0f;
	for (int j = 0; j < 32; j++)
		if (fabsf(x[j]) > amax) {
			amax = fabsf(x[j]);
			max = x[j];
		}
	const float d = max / -16.0f;
	const float id = d != 0.0f ? 1.0f / d : 0.0f;
	gg_st16(b, gguf_f32_to_f16(d));
	uint32_t qh = 0;
	uint8_t *qs = b + 6;
	for (int j = 0; j < 16; j++) {
		int q0 = to_i8(x[j] * id + 16.5f), q1 = to_i8(x[j + 16] * id + 16.5f);
		q0 = q0 < 31 ? q0 : 31;
		q1 = q1 < 31 ? q1 : 31;
		qs[j] = (uint8_t)((q0 & 0xf) | ((q1 & 0xf) << 4));
		qh |= (uint32_t)((q0 >> 4) & 1) << j;
		qh |= (uint32_t)((q1 >> 4) & 1) << (j + 16);
	}
	gg_st32(b + 2, qh);
}

/* ---------------------------------------------------------------- Q4_K */


/* Round to nearest (ties to even) and clamp to [lo, hi], without a libm call: the value is clamped in float
 * first (so infinities and huge outliers are safe), then 1.5 * 2^23 is added, which leaves the rounded integer
 * in the low mantissa bits. NaN maps to lo. */
static inline int round_clamp(float v, int lo, int hi)
{
	if (!(v > (float)lo)) /* also catches NaN */
		return lo;
	if (v > (float)hi)
		return hi;
	float r = v + 12582912.0f;
	int32_t bits;
	memcpy(&bits, &r, 4);
	return (bits & 0x7fffff) - 0x400000;
}

/* Squared error of x ~ s*q - o with q = clamp(round((x+o)/s), 0, 15). */
static float err_asym(const float *x, int n, float s, float o, uint8_t *q)
{
	float e = 0.0f;
	float inv = s != 0.0f ? 1.0f / s : 0.0f;
	for (int i = 0; i < n; i++) {
		int v = s != 0.0f ? round_clamp((x[i] + o) * inv, 0, 15) : 0;
		if (q)
			q[i] = (uint8_t)v;
		float d = s * (float)v - o - x[i];
		e += d * d;
	}
	return e;
}

/* Best (s >= 0, o >= 0) for 4-bit asymmetric quantization of one sub-block, x ~ s*q - o. */
static void fit_asym(const float *x, int n, float *s_out, float *o_out)
{
	float xmin = x[0], xmax = x[0];
	for (int i = 1; i < n; i++) {
		if (x[i] < xmin)
			xmin = x[i];
		if (x[i] > xmax)
			xmax = x[i];
	}
	if (xmin > 0.0f)
		xmin = 0.0f;
	if (xmax <= xmin) {
		*s_out = 0.0f;
		*o_out = -xmin;
		return;
	}
	float best_s = (xmax - xmin) / 15.0f, best_o = -xmin;
	float best_e = err_asym(x, n, best_s, best_o, NULL);
	for (int k = -10; k <= 16; k++) {
		float iscale = (15.0f + 0.1f * (float)k) / (xmax - xmin);
		/* quantize with this grid, then least-squares refit s and o for those levels */
		float A = 0, B = 0, C = 0, D = 0, X2 = 0;
		for (int i = 0; i < n; i++) {
			int v = round_clamp((x[i] - xmin) * iscale, 0, 15);
			A += (float)(v * v);
			B += (float)v;
			C += x[i] * (float)v;
			D += x[i];
			X2 += x[i] * x[i];
		}
		float det = (float)n * A - B * B;
		if (det <= 0.0f)
			continue;
		float s = ((float)n * C - B * D) / det;
		float b = (D - s * B) / (float)n; /* x ~ s*q + b, b = -o */
		if (b > 0.0f) {
			b = 0.0f;
			s = A > 0.0f ? C / A : 0.0f;
		}
		if (s <= 0.0f)
			continue;
		/* the fit's squared error from the sums: sum (x - s q - b)^2 */
		float e = X2 + s * s * A + (float)n * b * b - 2.0f * s * C - 2.0f * b * D + 2.0f * s * b * B;
		if (e < best_e) {
			best_e = e;
			best_s = s;
			best_o = -b;
		}
	}
	*s_out = best_s;
	*o_out = best_o;
}

static void q4_k_block(const float *x, uint8_t *b)
{
	float s[8], o[8];
	for (int j = 0; j < 8; j++)
		fit_asym(x + 32 * j, 32, &s[j], &o[j]);
	float smax = 0.0f, omax = 0.0f;
	for (int j = 0; j < 8; j++) {
		if (s[j] > smax)
			smax = s[j];
		if (o[j] > omax)
			omax = o[j];
	}
	uint16_t dh = gguf_f32_to_f16(smax / 63.0f), mh = gguf_f32_to_f16(omax / 63.0f);
	float d = gguf_f16_to_f32(dh), dmin = gguf_f16_to_f32(mh);
	int sc[8], m[8];
	uint8_t q[QK_K];
	for (int j = 0; j < 8; j++) {
		const float *xj = x + 32 * j;
		int sc0 = d > 0.0f ? round_clamp(s[j] / d, 0, 63) : 0;
		int m0 = dmin > 0.0f ? round_clamp(o[j] / dmin, 0, 63) : 0;
		float best = INFINITY;
		sc[j] = sc0;
		m[j] = m0;
		for (int a = -1; a <= 1; a++)
			for (int c = -1; c <= 1; c++) {
				int sa = sc0 + a, mc = m0 + c;
				if (sa < 0 || sa > 63 || mc < 0 || mc > 63)
					continue;
				float e = err_asym(xj, 32, d * (float)sa, dmin * (float)mc, NULL);
				if (e < best) {
					best = e;
					sc[j] = sa;
					m[j] = mc;
				}
			}
		/* the dequantizer computes (d*sc)*q - (dmin*m): quantize against exactly those products */
		(void)err_asym(xj, 32, d * (float)sc[j], dmin * (float)m[j], q + 32 * j);
	}
	gg_st16(b, dh);
	gg_st16(b + 2, mh);
	uint8_t *p = b + 4;
	for (int j = 0; j < 4; j++) {
		p[j] = (uint8_t)((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
		p[j + 4] = (uint8_t)((m[j] & 63) | ((m[j + 4] >> 4) << 6));
		p[j + 8] = (uint8_t)((sc[j + 4] & 0xf) | ((m[j + 4] & 0xf) << 4));
	}
	uint8_t *qs = b + 16;
	for (int j = 0; j < 8; j += 2)
		for (int l = 0; l < 32; l++)
			qs[(j / 2) * 32 + l] = (uint8_t)(q[32 * j + l] | (q[32 * (j + 1) + l] << 4));
}

/* ---------------------------------------------------------------- Q6_K */

static float err_sym(const float *x, int n, float s, int8_t *q)
{
	float e = 0.0f, inv = s != 0.0f ? 1.0f / s : 0.0f;
	for (int i = 0; i < n; i++) {
		int v = s != 0.0f ? round_clamp(x[i] * inv, -32, 31) : 0;
		if (q)
			q[i] = (int8_t)v;
		float d = s * (float)v - x[i];
		e += d * d;
	}
	return e;
}

/* Best signed scale for 6-bit symmetric levels [-32, 31] of one sub-block. */
static float fit_sym(const float *x, int n)
{
	float amax = 0.0f, vmax = 0.0f;
	for (int i = 0; i < n; i++)
		if (fabsf(x[i]) > amax) {
			amax = fabsf(x[i]);
			vmax = x[i];
		}
	if (amax == 0.0f)
		return 0.0f;
	float best_s = vmax / -32.0f, best_e = err_sym(x, n, best_s, NULL);
	for (int k = -12; k <= 12; k++) {
		float iscale = -(32.0f + 0.25f * (float)k) / vmax;
		float num = 0, den = 0, X2 = 0;
		for (int i = 0; i < n; i++) {
			int v = round_clamp(x[i] * iscale, -32, 31);
			num += x[i] * (float)v;
			den += (float)(v * v);
			X2 += x[i] * x[i];
		}
		if (den <= 0.0f)
			continue;
		float s = num / den;
		float e = X2 - num * num / den; /* sum (x - s q)^2 at the least-squares s */
		if (e < best_e) {
			best_e = e;
			best_s = s;
		}
	}
	return best_s;
}

static void q6_k_block(const float *x, uint8_t *b)
{
	float s[16];
	float smax = 0.0f, sabs = 0.0f;
	for (int j = 0; j < 16; j++) {
		s[j] = fit_sym(x + 16 * j, 16);
		if (fabsf(s[j]) > sabs) {
			sabs = fabsf(s[j]);
			smax = s[j];
		}
	}
	uint16_t dh = gguf_f32_to_f16(smax != 0.0f ? smax / -128.0f : 0.0f);
	float d = gguf_f16_to_f32(dh);
	int sc[16];
	int8_t q[QK_K];
	for (int j = 0; j < 16; j++) {
		const float *xj = x + 16 * j;
		int sc0 = d != 0.0f ? round_clamp(s[j] / d, -128, 127) : 0;
		float best = INFINITY;
		sc[j] = sc0;
		for (int a = -1; a <= 1; a++) {
			int v = sc0 + a;
			if (v < -128 || v > 127)
				continue;
			float e = err_sym(xj, 16, d * (float)v, NULL);
			if (e < best) {
				best = e;
				sc[j] = v;
			}
		}
		(void)err_sym(xj, 16, d * (float)sc[j], q + 16 * j);
	}
	uint8_t *ql = b, *qh = b + 128;
	memset(b, 0, 192);
	for (int e = 0; e < QK_K; e++) {
		int v = q[e] + 32;
		int h = e / 128, r = e % 128;
		ql[h * 64 + r % 64] |= (uint8_t)((v & 0xf) << (4 * (r / 64)));
		qh[h * 32 + r % 32] |= (uint8_t)(((v >> 4) & 3) << (2 * (r / 32)));
	}
	for (int j = 0; j < 16; j++)
		b[192 + j] = (uint8_t)(int8_t)sc[j];
	gg_st16(b + 208, dh);
}

int gguf_quantize_row(uint32_t type, const float *src, void *dst, int64_t n)
{
	const struct gguf_type_info *ti = gguf_type_get(type);
	if (!ti)
		return GGUF_ERR_TENSOR_TYPE;
	if (n < 0 || n % ti->block_elems)
		return GGUF_ERR_INVALID_ARG;
	uint8_t *d = dst;
	int64_t nb = n / ti->block_elems;
	switch (type) {
	case GGUF_TYPE_F32:
		for (int64_t i = 0; i < n; i++)
			gg_stf32(d + 4 * i, src[i]);
		break;
	case GGUF_TYPE_F16:
		for (int64_t i = 0; i < n; i++)
			gg_st16(d + 2 * i, gguf_f32_to_f16(src[i]));
		break;
	case GGUF_TYPE_BF16:
		for (int64_t i = 0; i < n; i++)
			gg_st16(d + 2 * i, gguf_f32_to_bf16(src[i]));
		break;
	case GGUF_TYPE_Q8_0:
		for (int64_t i = 0; i < nb; i++)
			q8_0_block(src + 32 * i, d + 34 * i);
		break;
	case GGUF_TYPE_Q5_0:
		for (int64_t i = 0; i < nb; i++)
			q5_0_block(src + 32 * i, d + 22 * i);
		break;
	case GGUF_TYPE_Q4_K:
		for (int64_t i = 0; i < nb; i++)
			q4_k_block(src + QK_K * i, d + 144 * i);
		break;
	case GGUF_TYPE_Q6_K:
		for (int64_t i = 0; i < nb; i++)
			q6_k_block(src + QK_K * i, d + 210 * i);
		break;
	default:
		return GGUF_ERR_UNSUPPORTED;
	}
	return GGUF_OK;
}

/* ---------------------------------------------------------------- mixtures */

int gguf_qmix_from_name(const char *name, enum gguf_qmix *mix)
{
	if (name && strcasecmp(name, "q8_0") == 0)
		*mix = GGUF_QMIX_Q8_0;
	else if (name && strcasecmp(name, "q4_k_m") == 0)
		*mix = GGUF_QMIX_Q4_K_M;
	else
		return GGUF_ERR_NOT_FOUND;
	return GGUF_OK;
}

static bool ends_with(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && strcmp(s + a - b, suf) == 0;
}

/* llama.cpp's tensor_allows_quantization for the tensors of llama / qwen2 / qwen3 models. */
static bool quantizable(const struct gguf_tensor *t)
{
	uint32_t nd = t->n_dims;
	while (nd > 1 && t->ne[nd - 1] == 1) /* ggml_n_dims ignores trailing 1s */
		nd--;
	if (nd < 2 || !ends_with(t->name, "weight") || strstr(t->name, "_norm.weight"))
		return false;
	return true;
}

/* llama-quantize visits tensors ordered by layer number ("blk.N."; others first) and then by name, and counts
 * the attn_v / ffn_down tensors in that order. */
static int layer_of(const char *name)
{
	int l = -1;
	if (strncmp(name, "blk.", 4) == 0)
		l = atoi(name + 4);
	return l;
}

static bool name_before(const char *a, const char *b)
{
	int la = layer_of(a), lb = layer_of(b);
	return la != lb ? la < lb : strcmp(a, b) < 0;
}

static bool more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

static uint32_t fallback(const struct gguf_tensor *t, uint32_t type)
{
	const struct gguf_type_info *ti = gguf_type_get(type);
	if (t->ne[0] % ti->block_elems == 0)
		return type;
	uint32_t fb = type == GGUF_TYPE_Q4_K ? GGUF_TYPE_Q5_0 : type == GGUF_TYPE_Q6_K ? GGUF_TYPE_Q8_0 : type;
	if (t->ne[0] % gguf_type_get(fb)->block_elems)
		fb = GGUF_TYPE_F16;
	return fb;
}

uint32_t gguf_qmix_tensor_type(const struct gguf_file *f, uint64_t i, enum gguf_qmix mix)
{
	const struct gguf_tensor *t = gguf_tensor_at(f, i);
	if (!quantizable(t))
		return t->type;
	uint32_t type = mix == GGUF_QMIX_Q8_0 ? GGUF_TYPE_Q8_0 : GGUF_TYPE_Q4_K;
	bool has_output = gguf_find_tensor(f, "output.weight") != NULL;
	const char *n = t->name;
	if (strcmp(n, "output.weight") == 0 || (!has_output && strcmp(n, "token_embd.weight") == 0)) {
		if (t->ne[0] % gguf_type_get(type)->block_elems)
			type = GGUF_TYPE_Q8_0;
		else if (type != GGUF_TYPE_Q8_0)
			type = GGUF_TYPE_Q6_K;
	} else if (mix == GGUF_QMIX_Q4_K_M) {
		if (ends_with(n, "attn_v.weight") || ends_with(n, "ffn_down.weight")) {
			const char *suffix = ends_with(n, "attn_v.weight") ? "attn_v.weight" : "ffn_down.weight";
			int idx = 0, count = 0;
			for (uint64_t k = 0; k < gguf_tensor_count(f); k++)
				if (ends_with(gguf_tensor_at(f, k)->name, suffix)) {
					if (name_before(gguf_tensor_at(f, k)->name, n))
						idx++;
					count++;
				}
			if (more_bits(idx, count))
				type = GGUF_TYPE_Q6_K;
		} else if (ends_with(n, "attn_qkv.weight")) {
			type = GGUF_TYPE_Q5_K;
		}
	}
	return fallback(t, type);
}

struct qjob {
	const struct gguf_file *in;
	uint64_t done, total;
	gguf_progress_fn progress;
	void *ctx;
	atomic_bool stop; /* the progress callback said stop while a tensor's rows were being converted */
};

#define QUANT_POLL_ROWS 16 /* rows between two polls of the progress callback inside a tensor */

struct qtensor {
	const struct gguf_tensor *src;
	struct qjob *job;
};

/* Rows [r0, r1) of one tensor, run on a worker thread; the calling thread's range (poll) also asks the
 * progress callback every QUANT_POLL_ROWS rows whether to stop (progress(ctx, 0, 0): a poll, no progress),
 * so a cancel does not wait for a large tensor to finish. */
struct qrange {
	const struct gguf_tensor *src;
	uint32_t type;
	uint8_t *dst;
	uint64_t row_bytes;
	int64_t r0, r1;
	struct qjob *job;
	bool poll;
	int err;
};

static void *quant_rows(void *arg)
{
	struct qrange *q = arg;
	float *row = malloc((size_t)q->src->ne[0] * sizeof *row + 1);
	if (!row) {
		q->err = GGUF_ERR_NOMEM;
		return NULL;
	}
	struct qjob *job = q->job;
	for (int64_t r = q->r0; r < q->r1 && !q->err; r++) {
		if (q->poll && job->progress && (r - q->r0) % QUANT_POLL_ROWS == QUANT_POLL_ROWS - 1 &&
		    job->progress(job->ctx, 0, 0) != 0)
			atomic_store(&job->stop, true);
		if (atomic_load(&job->stop)) {
			q->err = GGUF_ERR_CANCELLED;
			break;
		}
		q->err = gguf_tensor_dequantize_row(q->src, r, 0, q->src->ne[0], row);
		if (!q->err)
			q->err = gguf_quantize_row(q->type, row, q->dst + (uint64_t)r * q->row_bytes, q->src->ne[0]);
	}
	free(row);
	return NULL;
}

#define QUANT_MAX_THREADS 64

static int fill_q(void *ctx, const struct gguf_tensor *t, void *dst, uint64_t nbytes, struct gguf_error *err)
{
	const struct qtensor *qt = ctx;
	const struct gguf_tensor *s = qt->src;
	if (s->type == t->type) {
		memcpy(dst, s->data, nbytes);
	} else {
		int64_t rows = s->ne[1] * s->ne[2] * s->ne[3];
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		int nth = ncpu < 1 ? 1 : ncpu > QUANT_MAX_THREADS ? QUANT_MAX_THREADS : (int)ncpu;
		if ((int64_t)nth > rows)
			nth = rows > 0 ? (int)rows : 1;
		if (s->n_elements < (1u << 16))
			nth = 1; /* small tensors: not worth a thread */
		struct qrange rg[QUANT_MAX_THREADS];
		pthread_t th[QUANT_MAX_THREADS];
		bool started[QUANT_MAX_THREADS] = {false};
		for (int k = 0; k < nth; k++) {
			rg[k] = (struct qrange){s, t->type, dst, gguf_row_size(t->type, t->ne[0]), rows * k / nth,
						rows * (k + 1) / nth, qt->job, k == 0, 0};
			if (k > 0)
				started[k] = pthread_create(&th[k], NULL, quant_rows, &rg[k]) == 0;
		}
		quant_rows(&rg[0]);
		int e = rg[0].err;
		for (int k = 1; k < nth; k++) {
			if (started[k])
				pthread_join(th[k], NULL);
			else
				quant_rows(&rg[k]); /* thread creation failed: do it here */
			if (!e)
				e = rg[k].err;
		}
		if (e == GGUF_ERR_CANCELLED)
			return gg_fail(err, e, 0, "cancelled in tensor %llu of %llu", (unsigned long long)qt->job->done + 1,
				       (unsigned long long)qt->job->total);
		if (e)
			return gg_fail(err, e, s->file_offset, "tensor '%s': %s to %s: %s", s->name, gguf_type_name(s->type),
				       gguf_type_name(t->type), gguf_strerror(e));
	}
	qt->job->done++;
	if (qt->job->progress && qt->job->progress(qt->job->ctx, qt->job->done, qt->job->total) != 0)
		return gg_fail(err, GGUF_ERR_CANCELLED, 0, "cancelled after %llu of %llu tensors",
			       (unsigned long long)qt->job->done, (unsigned long long)qt->job->total);
	return GGUF_OK;
}

int gguf_quantize_file(const char *in_path, const char *out_path, enum gguf_qmix mix, gguf_progress_fn progress,
		       void *progress_ctx, struct gguf_error *err)
{
	if (mix != GGUF_QMIX_Q8_0 && mix != GGUF_QMIX_Q4_K_M)
		return gg_fail(err, GGUF_ERR_INVALID_ARG, 0, "unknown quantization mixture %d", (int)mix);
	struct gguf_file *in = gguf_open(in_path, err);
	if (!in)
		return err ? err->code : GGUF_ERR_IO;
	uint64_t nt = gguf_tensor_count(in);
	struct qjob job = {.in = in, .total = nt, .progress = progress, .ctx = progress_ctx};
	atomic_init(&job.stop, false);
	struct qtensor *qts = calloc(nt ? nt : 1, sizeof *qts);
	struct gguf_writer *w = gguf_writer_new();
	int e = (!qts || !w) ? gg_fail(err, GGUF_ERR_NOMEM, 0, "out of memory") : 0;
	for (uint64_t i = 0; i < gguf_kv_count(in) && !e; i++) {
		const struct gguf_kv *kv = gguf_kv_at(in, i);
		if (strcmp(kv->key, "general.file_type") == 0 || strcmp(kv->key, "general.quantization_version") == 0)
			continue;
		e = gguf_w_copy_kv(w, in, kv);
		if (e)
			e = gg_fail(err, e, kv->offset, "copying key '%s': %s", kv->key, gguf_strerror(e));
	}
	if (!e)
		e = gguf_w_u32(w, "general.file_type", (uint32_t)mix);
	if (!e)
		e = gguf_w_u32(w, "general.quantization_version", 2);
	for (uint64_t i = 0; i < nt && !e; i++) {
		const struct gguf_tensor *t = gguf_tensor_at(in, i);
		uint32_t type = gguf_qmix_tensor_type(in, i, mix);
		if (type != t->type) {
			bool src_ok = t->type == GGUF_TYPE_F32 || t->type == GGUF_TYPE_F16 || t->type == GGUF_TYPE_BF16 ||
				      t->type == GGUF_TYPE_FP8_E4M3_B128;
			if (!src_ok) {
				e = gg_fail(err, GGUF_ERR_UNSUPPORTED, t->info_offset,
					    "tensor '%s' is already quantized (%s); requantizing to %s is not supported", t->name,
					    gguf_type_name(t->type), gguf_type_name(type));
				break;
			}
		}
		qts[i] = (struct qtensor){t, &job};
		e = gguf_w_tensor(w, t->name, type, t->n_dims ? t->n_dims : 1, t->ne, NULL, fill_q, &qts[i]);
		if (e)
			e = gg_fail(err, e, t->info_offset, "tensor '%s': %s", t->name, gguf_strerror(e));
	}
	if (!e)
		e = gguf_writer_write_file(w, out_path, err);
	gguf_writer_free(w);
	free(qts);
	gguf_close(in);
	return e;
}
