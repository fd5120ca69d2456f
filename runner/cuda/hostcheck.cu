/* runner/cuda/hostcheck.cu — the CUDA backend's weight repacking, activation quantization, dot-product units
 * and dequantization run on the host, for tests on machines without a GPU.
 *
 * Nothing here runs in production: it exists so that tests/cuda/test_cuda_host can compare the exact code the
 * kernels execute (runner/cuda/quant.cuh, compiled for the host) with the CPU backend and with gguf's
 * reference dequantization. The warp/block structure of the kernels is not exercised here (the GPU tests do).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/cuda/cuda.h"
#include "runner/cuda/quant.cuh"

/* A repacked matrix in host memory. */
struct host_mat {
	struct rn_cw_mat m;
	uint8_t *buf;
};

static void host_mat_free(struct host_mat *h)
{
	free(h->buf);
	h->buf = NULL;
}

static int host_repack(uint32_t gguf_type, const void *data, size_t size, int64_t rows, int64_t cols,
		       struct host_mat *h, char *msg, size_t msg_size)
{
	memset(h, 0, sizeof *h);
	int type = rn_cw_from_gguf(gguf_type);
	if (type < 0) {
		snprintf(msg, msg_size, "GGUF type %u has no CUDA kernel", gguf_type);
		return -1;
	}
	const char *why = rn_cw_shape_error(type, rows, cols);
	if (why) {
		snprintf(msg, msg_size, "%s [%lld x %lld]: %s", rn_cw_table[type].name, (long long)rows, (long long)cols, why);
		return -1;
	}
	uint64_t need = rn_cw_gguf_bytes(type, rows, cols);
	if (need != size) {
		snprintf(msg, msg_size, "%s [%lld x %lld] needs %llu bytes, got %zu", rn_cw_table[type].name, (long long)rows,
			 (long long)cols, (unsigned long long)need, size);
		return -1;
	}
	int64_t off[RN_CU_MAX_PLANES + 1];
	int64_t total = rn_cw_layout(type, rows, cols, off);
	h->buf = (uint8_t *)calloc(1, (size_t)total + 16);
	if (!h->buf) {
		snprintf(msg, msg_size, "out of memory");
		return -1;
	}
	h->m = rn_cw_mat_make(type, rows, cols, h->buf, off);
	uint8_t *planes[RN_CU_MAX_PLANES];
	for (int i = 0; i < RN_CU_MAX_PLANES; i++)
		planes[i] = h->buf + off[i];
	const uint8_t *src = (const uint8_t *)data;
	if (rn_cw_is_raw(type)) {
		memcpy(planes[0], src, (size_t)rn_cw_plane_size(type, 0, rows, cols));
		if (type == CW_FP8)
			rn_cw_fp8_grid_repack(src + rows * cols, rows, cols, (float *)planes[1]);
	} else {
		const int64_t nblk = rows * (cols / rn_cw_table[type].block_elems);
		for (int64_t b = 0; b < nblk; b++)
			rn_cw_repack_block(type, src + b * rn_cw_table[type].block_bytes, planes, b);
	}
	return 0;
}

/* The activation quantizers with exactly the device kernels' arithmetic (runner/cuda/ops.cu). */
static void host_quant_q8_32(const float *x, int64_t cols, int8_t *q, float *d, int32_t *s, float *sm)
{
	for (int64_t b = 0; b < cols / 32; b++) {
		float amax = 0.0f;
		for (int i = 0; i < 32; i++)
			amax = fmaxf(amax, fabsf(x[b * 32 + i]));
		float id = amax > 0.0f ? 127.0f / amax : 0.0f;
		int32_t sum = 0;
		for (int i = 0; i < 32; i++) {
			int v = (int)nearbyintf(x[b * 32 + i] * id);
			q[b * 32 + i] = (int8_t)v;
			sum += v;
		}
		const float db = amax / 127.0f;
		d[b] = rn_h2f(rn_f2h(db));
		s[b] = sum;
		sm[b] = rn_h2f(rn_f2h(db * (float)sum));
	}
}

static void host_quant_q8_256(const float *x, int64_t cols, int8_t *q, float *d, int16_t *bs)
{
	for (int64_t b = 0; b < cols / 256; b++) {
		float amax = 0.0f;
		for (int i = 0; i < 256; i++)
			amax = fmaxf(amax, fabsf(x[b * 256 + i]));
		float id = amax > 0.0f ? 127.0f / amax : 0.0f;
		for (int g = 0; g < 16; g++) {
			int sum = 0;
			for (int i = 0; i < 16; i++) {
				int v = (int)nearbyintf(x[b * 256 + g * 16 + i] * id);
				q[b * 256 + g * 16 + i] = (int8_t)v;
				sum += v;
			}
			bs[b * 16 + g] = (int16_t)sum;
		}
		d[b] = amax > 0.0f ? 1.0f / id : 0.0f;
	}
}

/* Activations of rows [j0, ...) of a. */
static struct rn_cw_act act_shift(const struct rn_cw_act &a, int j0, int kind)
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
		r.s = (const uint8_t *)a.s + (int64_t)j0 * a.lds * (kind == CA_Q8_32 ? 4 : 2);
	if (a.sm)
		r.sm = a.sm + (int64_t)j0 * a.lds;
	return r;
}

template <int TYPE, int NC>
static void host_pass(const struct rn_cw_mat &w, const struct rn_cw_act &a, int j0, float *y)
{
	const int64_t units = rn_cw_units(TYPE, w.cols);
	struct rn_cw_act as = act_shift(a, j0, rn_cw_table[TYPE].act);
	for (int64_t r = 0; r < w.rows; r++) {
		float acc[NC];
		for (int j = 0; j < NC; j++)
			acc[j] = 0.0f;
		for (int64_t u = 0; u < units; u++)
			rn_unit_dot<TYPE, NC>(w, r, u, as, acc);
		for (int j = 0; j < NC; j++)
			y[(int64_t)(j0 + j) * w.rows + r] = acc[j];
	}
}

/* The rows in passes of up to 4, through the same multi-row unit code the kernels instantiate. */
template <int TYPE>
static void host_rows(const struct rn_cw_mat &w, const struct rn_cw_act &a, int n, float *y)
{
	for (int j0 = 0; j0 < n; j0 += 4) {
		switch (n - j0 >= 4 ? 4 : n - j0) {
		case 1: host_pass<TYPE, 1>(w, a, j0, y); break;
		case 2: host_pass<TYPE, 2>(w, a, j0, y); break;
		case 3: host_pass<TYPE, 3>(w, a, j0, y); break;
		default: host_pass<TYPE, 4>(w, a, j0, y); break;
		}
	}
}

extern "C" int rn_cuda_host_matvec(uint32_t gguf_type, const void *data, size_t size, int64_t rows, int64_t cols,
				   const float *x, int n, float *y, char *msg, size_t msg_size)
{
	struct host_mat h;
	if (host_repack(gguf_type, data, size, rows, cols, &h, msg, msg_size) != 0)
		return -1;
	const int type = h.m.type;
	struct rn_cw_act a;
	memset(&a, 0, sizeof a);
	int8_t *q = NULL;
	float *d = NULL, *sm = NULL;
	void *s = NULL;
	uint16_t *x16 = NULL;
	int rc = 0;
	const int kind = rn_cw_table[type].act;
	if (kind == CA_F32) {
		a.x = x;
		a.ldx = cols;
	} else if (kind == CA_F16 || kind == CA_BF16) {
		x16 = (uint16_t *)malloc((size_t)(n * cols) * 2 + 16);
		if (!x16) {
			snprintf(msg, msg_size, "out of memory");
			rc = -1;
			goto out;
		}
		for (int64_t i = 0; i < n * cols; i++)
			x16[i] = kind == CA_F16 ? rn_f2h(x[i]) : rn_f2bf(x[i]);
		a.x16 = x16;
		a.ldx16 = cols;
	} else {
		const int64_t B = kind == CA_Q8_32 ? 32 : 256;
		q = (int8_t *)malloc((size_t)(n * cols) + 16);
		d = (float *)malloc((size_t)n * (size_t)(cols / B) * sizeof(float) + 16);
		s = malloc((size_t)n * (size_t)(cols / 16) * sizeof(int32_t) + 16);
		sm = (float *)malloc((size_t)n * (size_t)(cols / 32) * sizeof(float) + 16);
		if (!q || !d || !s || !sm) {
			snprintf(msg, msg_size, "out of memory");
			rc = -1;
			goto out;
		}
		for (int j = 0; j < n; j++) {
			if (kind == CA_Q8_32)
				host_quant_q8_32(x + (int64_t)j * cols, cols, q + (int64_t)j * cols, d + (int64_t)j * (cols / 32),
						 (int32_t *)s + (int64_t)j * (cols / 32), sm + (int64_t)j * (cols / 32));
			else
				host_quant_q8_256(x + (int64_t)j * cols, cols, q + (int64_t)j * cols, d + (int64_t)j * (cols / 256),
						  (int16_t *)s + (int64_t)j * (cols / 16));
		}
		a.qs = q;
		a.ldq = cols;
		a.d = d;
		a.ldd = cols / B;
		a.s = s;
		a.sm = sm;
		a.lds = kind == CA_Q8_32 ? cols / 32 : cols / 16;
	}
	switch (type) {
	case CW_F32: host_rows<CW_F32>(h.m, a, n, y); break;
	case CW_F16: host_rows<CW_F16>(h.m, a, n, y); break;
	case CW_BF16: host_rows<CW_BF16>(h.m, a, n, y); break;
	case CW_Q4_0: host_rows<CW_Q4_0>(h.m, a, n, y); break;
	case CW_Q4_1: host_rows<CW_Q4_1>(h.m, a, n, y); break;
	case CW_Q5_0: host_rows<CW_Q5_0>(h.m, a, n, y); break;
	case CW_Q5_1: host_rows<CW_Q5_1>(h.m, a, n, y); break;
	case CW_Q8_0: host_rows<CW_Q8_0>(h.m, a, n, y); break;
	case CW_Q4_K: host_rows<CW_Q4_K>(h.m, a, n, y); break;
	case CW_Q5_K: host_rows<CW_Q5_K>(h.m, a, n, y); break;
	case CW_Q6_K: host_rows<CW_Q6_K>(h.m, a, n, y); break;
	case CW_FP8: host_rows<CW_FP8>(h.m, a, n, y); break;
	default: break;
	}
out:
	free(q);
	free(d);
	free(s);
	free(sm);
	free(x16);
	host_mat_free(&h);
	return rc;
}

struct host_cv {
	float *row;
	RN_HD void operator()(int64_t col, float v) const { row[col] = v; }
};

extern "C" int rn_cuda_host_dequant(uint32_t gguf_type, const void *data, size_t size, int64_t rows, int64_t cols,
				    float *out, char *msg, size_t msg_size)
{
	struct host_mat h;
	if (host_repack(gguf_type, data, size, rows, cols, &h, msg, msg_size) != 0)
		return -1;
	const int64_t units = rn_cw_units(h.m.type, cols);
	for (int64_t r = 0; r < rows; r++) {
		struct host_cv cv = {out + r * cols};
		for (int64_t u = 0; u < units; u++)
			rn_unit_dequant(h.m.type, h.m, r, u, cv);
	}
	host_mat_free(&h);
	return 0;
}

extern "C" {
#include "gguf/gguf.h"
}

/* The scalar helpers of common.cuh (host side) against gguf's reference conversions. */
extern "C" int rn_cuda_host_selfcheck(char *msg, size_t msg_size)
{
	int bad = 0;
	msg[0] = 0;
#define NOTE(...)                                                                                        \
	do {                                                                                             \
		if (!bad++)                                                                              \
			snprintf(msg, msg_size, __VA_ARGS__);                                            \
	} while (0)
	for (uint32_t h = 0; h < 65536; h++) {
		float a = rn_h2f((uint16_t)h), b = gguf_f16_to_f32((uint16_t)h);
		if (memcmp(&a, &b, 4) != 0 && !(a != a && b != b))
			NOTE("rn_h2f(0x%04x) = %g, gguf says %g", h, (double)a, (double)b);
		float c = rn_bf2f((uint16_t)h), e = gguf_bf16_to_f32((uint16_t)h);
		if (memcmp(&c, &e, 4) != 0)
			NOTE("rn_bf2f(0x%04x) = %g, gguf says %g", h, (double)c, (double)e);
	}
	for (uint32_t b = 0; b < 256; b++) {
		float a = rn_e4m3_to_f((uint8_t)b), r = gguf_e4m3_to_f32((uint8_t)b);
		if ((b & 0x7f) != 0x7f && a != r)
			NOTE("rn_e4m3_to_f(0x%02x) = %g, gguf says %g", b, (double)a, (double)r);
		float v[4];
		rn_fp8x4(b | (b << 8) | (b << 16) | (b << 24), v);
		if ((b & 0x7f) != 0x7f && v[3] != r)
			NOTE("rn_fp8x4 byte 3 of 0x%02x = %g, gguf says %g", b, (double)v[3], (double)r);
	}
	/* every float exponent with random and boundary mantissas, both signs */
	static const uint32_t edge[8] = {0, 1, 0xfff, 0x1000, 0x1001, 0x2000, 0x7fffff, 0x3000};
	uint64_t s = 12345;
	for (uint32_t e = 0; e < 256; e++)
		for (int k = 0; k < 600; k++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			uint32_t man = k < 8 ? edge[k] : (uint32_t)(s >> 41);
			uint32_t bits = ((uint32_t)(k & 1) << 31) | (e << 23) | (man & 0x7fffff);
			float f;
			memcpy(&f, &bits, 4);
			uint16_t a = rn_f2h(f), r = gguf_f32_to_f16(f);
			if (a != r && !(f != f && (a & 0x7c00) == 0x7c00 && (a & 0x3ff) && (r & 0x3ff)))
				NOTE("rn_f2h(0x%08x) = 0x%04x, gguf says 0x%04x", bits, a, r);
			uint16_t c = rn_f2bf(f), d = gguf_f32_to_bf16(f);
			if (c != d && !(f != f && (c & 0x7f80) == 0x7f80 && (d & 0x7f80) == 0x7f80))
				NOTE("rn_f2bf(0x%08x) = 0x%04x, gguf says 0x%04x", bits, c, d);
		}
	for (int k = 0; k < 100000; k++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		int a = (int)(s >> 32), b = (int)s, ref = 7;
		for (int i = 0; i < 4; i++)
			ref += (int8_t)(a >> (8 * i)) * (int8_t)(b >> (8 * i));
		if (rn_dp4a(a, b, 7) != ref)
			NOTE("rn_dp4a(0x%08x, 0x%08x) = %d, expected %d", (unsigned)a, (unsigned)b, rn_dp4a(a, b, 7), ref);
		uint32_t x = (uint32_t)(s >> 13) & 0x3f3f3f3fu, y = rn_sub_bytes(x, 0x20202020u);
		for (int i = 0; i < 4; i++)
			if ((int8_t)(y >> (8 * i)) != (int)((x >> (8 * i)) & 255) - 32)
				NOTE("rn_sub_bytes(0x%08x) byte %d wrong", x, i);
	}
#undef NOTE
	return bad;
}
