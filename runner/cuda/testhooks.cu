/* runner/cuda/testhooks.cu — entry points that run single kernels on device 0 for tests/cuda: the decode
 * matvec, the prefill GEMM paths and the activation quantization, each on caller-supplied data.
 *
 * They set up just what the kernel needs (a stream, cuBLAS, one uploaded matrix, the activation buffers) and
 * tear it down again; slow, and meant only for the kernel-level comparisons with the CPU backend.
 */
#include <stdio.h>
#include <stdlib.h>

#include "runner/cuda/internal.cuh"

/* A throw-away instance with the members the matvec / GEMM / prep launchers use. */
struct mini {
	struct rn_cu c;
	struct rn_cu_w w;
	float *xd, *yd;
};

static void mini_free(struct mini *m)
{
	struct rn_cu *c = &m->c;
	if (c->st)
		cudaStreamSynchronize(c->st);
	rn_cu_w_free(&m->w);
	rn_cu_ltplans_free(c);
	void *p[] = {m->xd, m->yd, c->xn, c->act.q32, c->act.d32, c->act.s32, c->act.sm32, c->act.q256, c->act.d256, c->act.s256,
		     c->act.h16, c->act.b16, c->act.f8, c->act.f8s, c->w16, c->blas_ws, c->hb, c->hb2};
	for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
		if (p[i])
			cudaFree(p[i]);
	if (c->blas)
		cublasDestroy(c->blas);
	if (c->lt)
		cublasLtDestroy(c->lt);
	if (c->st)
		cudaStreamDestroy(c->st);
}

static int mini_init(struct mini *m, int n, int64_t cols, int64_t rows, struct rn_error *err)
{
	memset(m, 0, sizeof *m);
	struct rn_cu *c = &m->c;
	if (rn_cuda_device_count() < 1)
		return rn_error_set(err, RN_ERR_BACKEND, "no CUDA device");
	RN_CU_CHECK(cudaSetDevice(0));
	rn_cu_mmv_init(0);
	RN_CU_CHECK(cudaStreamCreateWithFlags(&c->st, cudaStreamNonBlocking));
	RN_CU_BLAS(cublasCreate(&c->blas));
	RN_CU_BLAS(cublasLtCreate(&c->lt));
	RN_CU_CHECK(cudaMalloc(&c->blas_ws, RN_CU_BLAS_WS));
	RN_CU_BLAS(cublasSetWorkspace(c->blas, c->blas_ws, RN_CU_BLAS_WS));
	RN_CU_BLAS(cublasSetStream(c->blas, c->st));
	const int64_t MC = (cols + 255) / 256 * 256;
	const size_t N = (size_t)rn_cu_f8_rows(n < 64 ? 64 : n); /* FP8 GEMMs run on rows padded to 4 */
	c->act.ldq = MC;
	c->max_cols = (int)(MC > rows ? MC : rows);
	c->n_ff = (int)rows;
	c->p.n_batch = (int)N;
	c->dev = 0;
	RN_CU_CHECK(cudaMalloc((void **)&m->xd, N * MC * 4));
	RN_CU_CHECK(cudaMalloc((void **)&m->yd, N * (size_t)rows * 4));
	RN_CU_CHECK(cudaMalloc((void **)&c->xn, N * MC * 4));
	RN_CU_CHECK(cudaMalloc((void **)&c->hb, N * (size_t)rows * 4));
	RN_CU_CHECK(cudaMalloc((void **)&c->hb2, N * (size_t)rows * 4));
	RN_CU_CHECK(cudaMalloc((void **)&c->act.q32, N * MC));
	RN_CU_CHECK(cudaMalloc((void **)&c->act.d32, N * (MC / 32) * 4));
	RN_CU_CHECK(cudaMalloc((void **)&c->act.s32, N * (MC / 32) * 4));
	RN_CU_CHECK(cudaMalloc((void **)&c->act.sm32, N * (MC / 32) * 4));
	RN_CU_CHECK(cudaMalloc((void **)&c->act.q256, N * MC));
	RN_CU_CHECK(cudaMalloc((void **)&c->act.d256, N * (MC / 256) * 4));
	RN_CU_CHECK(cudaMalloc((void **)&c->act.s256, N * (MC / 16) * 2));
	RN_CU_CHECK(cudaMalloc((void **)&c->act.h16, N * MC * 2));
	RN_CU_CHECK(cudaMalloc((void **)&c->act.b16, N * MC * 2));
	RN_CU_CHECK(cudaMalloc((void **)&c->act.f8, N * MC));
	RN_CU_CHECK(cudaMalloc((void **)&c->act.f8s, N * (MC / 128) * 4));
	RN_CU_CHECK(cudaMalloc((void **)&c->w16, RN_CU_GEMM_CHUNK));
	return RN_OK;
}

static int copy_x(struct mini *m, const float *x, int n, int64_t cols, struct rn_error *err)
{
	RN_CU_CHECK(cudaMemcpy2DAsync(m->xd, (size_t)m->c.act.ldq * 4, x, (size_t)cols * 4, (size_t)cols * 4, (size_t)n,
				      cudaMemcpyHostToDevice, m->c.st));
	return RN_OK;
}

static int run_prep(struct mini *m, unsigned fmt, int n, int64_t cols, struct rn_error *err)
{
	struct rn_cu_prep p;
	memset(&p, 0, sizeof p);
	p.in = m->xd;
	p.ld_in = m->c.act.ldq;
	p.cols = (int)cols;
	p.fmt = fmt;
	p.out = m->c.act;
	p.out.x = m->xd;
	p.out.ldx = m->c.act.ldq;
	p.n_rows_total = n;
	m->c.act.x = m->xd;
	m->c.act.ldx = m->c.act.ldq;
	return rn_cu_prep(&p, n, m->c.st, err);
}

extern "C" int rn_cuda_test_matvec(uint32_t gguf_type, const void *data, size_t size, int64_t rows, int64_t cols,
				   const float *x, int n, int gemm, float *y, char *msg, size_t msg_size)
{
	struct rn_error e;
	memset(&e, 0, sizeof e);
	struct rn_error *err = &e;
	struct mini m;
	int rc = mini_init(&m, n, cols, rows, err);
	struct rn_cu_uploader *up = NULL;
	struct rn_tensor t;
	memset(&t, 0, sizeof t);
	t.data = data;
	t.type = gguf_type;
	t.ne[0] = cols;
	t.ne[1] = rows;
	t.ne[2] = t.ne[3] = 1;
	t.nbytes = size;
	t.name = "test";
	if (!rc)
		rc = rn_cu_uploader_new(&up, m.c.st, err);
	if (!rc)
		rc = rn_cu_upload(up, &t, &m.w, err);
	if (up) {
		struct rn_error e2;
		int rc2 = rn_cu_uploader_finish(up, &e2);
		if (!rc && rc2) {
			rc = rc2;
			e = e2;
		}
	}
	if (!rc)
		rc = copy_x(&m, x, n, cols, err);
	if (!rc) {
		const int type = m.w.m.type;
		if (gemm == 0) {
			const int k = rn_cw_table[type].act;
			unsigned fmt = k == CA_Q8_32	  ? PREP_Q8_32
				       : k == CA_Q8_256 ? PREP_Q8_256
				       : k == CA_F16    ? PREP_F16
				       : k == CA_BF16   ? PREP_BF16
							: PREP_F32;
			rc = run_prep(&m, fmt, n, cols, err);
			if (!rc)
				rc = rn_cu_mmv(&m.w, &m.c.act, n, m.yd, rows, NULL, false, m.c.st, err);
		} else {
			if (gemm == 2 && type == CW_FP8) {
				rc = rn_cu_fp8_probe(&m.c, &m.w, err);
				if (!rc && !m.w.lt_fp8)
					rc = rn_error_set(err, RN_ERR_BACKEND, "cuBLASLt's block-scaled FP8 GEMM is not available "
									       "or disagrees with the f16 path on this device");
			}
			if (!rc)
				rc = run_prep(&m, m.w.lt_fp8 ? PREP_FP8 | PREP_F16 : type == CW_BF16 ? PREP_BF16 : PREP_F16, n, cols, err);
			if (!rc)
				rc = rn_cu_gemm(&m.c, &m.w, &m.c.act, n, m.yd, rows, NULL, false, err);
		}
	}
	if (!rc) {
		cudaError_t ce = cudaMemcpyAsync(y, m.yd, (size_t)n * (size_t)rows * 4, cudaMemcpyDeviceToHost, m.c.st);
		if (ce == cudaSuccess)
			ce = cudaStreamSynchronize(m.c.st);
		if (ce != cudaSuccess)
			rc = rn_cuda_set_error(err, ce, "result copy", __FILE__, __LINE__);
	}
	mini_free(&m);
	if (rc)
		snprintf(msg, msg_size, "%s", e.msg);
	return rc ? -1 : 0;
}

extern "C" int rn_cuda_test_act_quant(int kind, const float *x, int n, int64_t cols, void *dst, size_t row_bytes,
				      char *msg, size_t msg_size)
{
	struct rn_error e;
	memset(&e, 0, sizeof e);
	struct rn_error *err = &e;
	struct mini m;
	int rc = mini_init(&m, n, cols, 16, err);
	if (!rc && kind != 1 && kind != 2)
		rc = rn_error_set(err, RN_ERR_INVALID_ARG, "activation kind %d", kind);
	if (!rc)
		rc = copy_x(&m, x, n, cols, err);
	if (!rc)
		rc = run_prep(&m, kind == 1 ? PREP_Q8_32 : PREP_Q8_256, n, cols, err);
	const int64_t MC = m.c.act.ldq, B = kind == 1 ? 32 : 256, ns = kind == 1 ? cols / 32 : cols / 16;
	const int64_t sl = kind == 1 ? MC / 32 : MC / 16; /* device row pitch of the sums */
	int8_t *q = (int8_t *)malloc((size_t)(n * MC));
	float *d = (float *)malloc((size_t)(n * (MC / B)) * 4), *sm = (float *)malloc((size_t)(n * (MC / 32)) * 4);
	uint8_t *s = (uint8_t *)malloc((size_t)(n * sl) * 4);
	if (!rc && (!q || !d || !s || !sm))
		rc = rn_error_set(err, RN_ERR_NOMEM, "out of memory");
	if (!rc) {
		cudaError_t ce = cudaMemcpyAsync(q, kind == 1 ? (void *)m.c.act.q32 : (void *)m.c.act.q256, (size_t)(n * MC),
						 cudaMemcpyDeviceToHost, m.c.st);
		if (!ce)
			ce = cudaMemcpyAsync(d, kind == 1 ? m.c.act.d32 : m.c.act.d256, (size_t)(n * (MC / B)) * 4,
					     cudaMemcpyDeviceToHost, m.c.st);
		if (!ce)
			ce = cudaMemcpyAsync(s, kind == 1 ? (void *)m.c.act.s32 : (void *)m.c.act.s256,
					     (size_t)(n * sl) * (kind == 1 ? 4 : 2), cudaMemcpyDeviceToHost, m.c.st);
		if (!ce && kind == 1)
			ce = cudaMemcpyAsync(sm, m.c.act.sm32, (size_t)(n * (MC / 32)) * 4, cudaMemcpyDeviceToHost, m.c.st);
		if (!ce)
			ce = cudaStreamSynchronize(m.c.st);
		if (ce)
			rc = rn_cuda_set_error(err, ce, "activation copy", __FILE__, __LINE__);
	}
	if (!rc) {
		/* the CPU backend's row layout: int8 q[cols], f32 d[cols / B], then the sums (Q8_32: int32 s and
		 * f32 sm per block; Q8_256: int16 per 16 values) */
		for (int j = 0; j < n; j++) {
			uint8_t *row = (uint8_t *)dst + (size_t)j * row_bytes;
			memset(row, 0, row_bytes);
			memcpy(row, q + j * MC, (size_t)cols);
			memcpy(row + cols, d + j * (MC / B), (size_t)(cols / B) * 4);
			const size_t es = kind == 1 ? 4 : 2;
			uint8_t *sums = row + cols + (cols / B) * 4;
			memcpy(sums, s + (size_t)(j * sl) * es, (size_t)ns * es);
			if (kind == 1)
				memcpy(sums + (size_t)ns * 4, sm + j * (MC / 32), (size_t)ns * 4);
		}
	}
	free(sm);
	free(q);
	free(d);
	free(s);
	mini_free(&m);
	if (rc)
		snprintf(msg, msg_size, "%s", e.msg);
	return rc ? -1 : 0;
}

/* gemm (cuda-gemm) */

/* The FP8 scale layout and the probe's row counts, on the host: rn_cu_f8s_at against the documented layout
 * (VEC128_32F for B: token-major, the token count padded to a multiple of 4), the pad region gemm.cu zeroes
 * against the rows it must cover, and rn_cu_fp8_probe_rows against what prefill uses. */
extern "C" int rn_cuda_host_gemm_check(char *msg, size_t msg_size)
{
	int bad = 0;
	msg[0] = 0;
#define NOTE(...)                                                                                                \
	do {                                                                                                     \
		if (!bad++)                                                                                      \
			snprintf(msg, msg_size, __VA_ARGS__);                                                    \
	} while (0)
	const int64_t groups_list[3] = {1, 5, 136}; /* 128, 640, 17408 columns */
	float *buf = (float *)malloc((size_t)136 * 4104 * sizeof(float));
	if (!buf) {
		snprintf(msg, msg_size, "out of memory");
		return 1;
	}
	for (int64_t n = 1; n <= 4100 && bad < 1; n++) {
		const int64_t n4 = rn_cu_f8_rows(n);
		if (n4 % 4 != 0 || n4 < n || n4 >= n + 4)
			NOTE("rn_cu_f8_rows(%lld) = %lld", (long long)n, (long long)n4);
		for (int gi = 0; gi < 3; gi++) {
			const int64_t G = groups_list[gi], K = G * 128;
			/* what k_prep and gemm.cu write: every real (g, row) through rn_cu_f8s_at, then the pad region;
			 * the rest stays a marker that must not survive */
			for (int64_t i = 0; i < G * n4; i++)
				buf[i] = -1.0f;
			for (int64_t g = 0; g < G; g++)
				for (int64_t r = 0; r < n; r++) {
					int64_t at = rn_cu_f8s_at(g, r, n);
					if (at < 0 || at >= G * n4) {
						NOTE("n=%lld g=%lld row=%lld: index %lld outside [0, %lld)", (long long)n, (long long)g,
						     (long long)r, (long long)at, (long long)(G * n4));
						break;
					}
					buf[at] = (float)(g * 100000 + r + 1);
				}
			const struct rn_cu_f8pad pad = rn_cu_f8s_pad(n, K);
			if (pad.height != G || pad.pitch != n4 || pad.width != n4 - n)
				NOTE("rn_cu_f8s_pad(%lld, %lld) = {%lld, %lld, %lld, %lld}", (long long)n, (long long)K,
				     (long long)pad.off, (long long)pad.pitch, (long long)pad.width, (long long)pad.height);
			else
				for (int64_t h = 0; h < pad.height; h++)
					for (int64_t w = 0; w < pad.width; w++)
						buf[pad.off + h * pad.pitch + w] = 0.0f;
			/* the documented layout: element (token j, group g) at g * n4 + j; pad tokens zero */
			for (int64_t g = 0; g < G && bad < 1; g++)
				for (int64_t j = 0; j < n4; j++) {
					const float want = j < n ? (float)(g * 100000 + j + 1) : 0.0f;
					if (buf[g * n4 + j] != want) {
						NOTE("n=%lld K=%lld: scale (token %lld, group %lld) = %g, want %g", (long long)n,
						     (long long)K, (long long)j, (long long)g, (double)buf[g * n4 + j], (double)want);
						break;
					}
				}
		}
	}
	free(buf);
	for (int nb = RN_CU_DECODE_MAX + 1; nb <= 8192; nb++) {
		int ns[3];
		const int k = rn_cu_fp8_probe_rows(nb, ns);
		bool has_nb = false, has_odd = false, has_min = false;
		for (int i = 0; i < k; i++) {
			if (ns[i] <= RN_CU_DECODE_MAX || ns[i] > nb)
				NOTE("n_batch %d: probe row count %d outside the prefill range", nb, ns[i]);
			if (rn_cu_f8_rows(ns[i]) > rn_cu_f8_rows(nb))
				NOTE("n_batch %d: probe row count %d pads past the buffers", nb, ns[i]);
			has_nb |= ns[i] == nb;
			has_odd |= ns[i] % 2 == 1;
			has_min |= ns[i] == RN_CU_DECODE_MAX + 1;
		}
		if (k < 1 || k > 3 || !has_nb || !has_odd || !has_min)
			NOTE("n_batch %d: probe row counts (%d) miss n_batch, an odd count or %d", nb, k, RN_CU_DECODE_MAX + 1);
		if (bad)
			break;
	}
#undef NOTE
	return bad;
}

extern "C" int rn_cuda_test_device_cc(void)
{
	int n = 0, ma = 0, mi = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1)
		return -1;
	if (cudaDeviceGetAttribute(&ma, cudaDevAttrComputeCapabilityMajor, 0) != cudaSuccess ||
	    cudaDeviceGetAttribute(&mi, cudaDevAttrComputeCapabilityMinor, 0) != cudaSuccess)
		return -1;
	return ma * 10 + mi;
}

static int mini_upload(struct mini *m, uint32_t gguf_type, const void *data, size_t size, int64_t rows, int64_t cols,
		       struct rn_error *err)
{
	struct rn_cu_uploader *up = NULL;
	struct rn_tensor t;
	memset(&t, 0, sizeof t);
	t.data = data;
	t.type = gguf_type;
	t.ne[0] = cols;
	t.ne[1] = rows;
	t.ne[2] = t.ne[3] = 1;
	t.nbytes = size;
	t.name = "test";
	int rc = rn_cu_uploader_new(&up, m->c.st, err);
	if (!rc)
		rc = rn_cu_upload(up, &t, &m->w, err);
	if (up) {
		struct rn_error e2;
		int rc2 = rn_cu_uploader_finish(up, &e2);
		if (!rc && rc2) {
			*err = e2;
			rc = rc2;
		}
	}
	return rc;
}

extern "C" int rn_cuda_test_dequant_f16(uint32_t gguf_type, const void *data, size_t size, int64_t rows, int64_t cols,
					uint16_t *out, char *msg, size_t msg_size)
{
	struct rn_error e;
	memset(&e, 0, sizeof e);
	struct rn_error *err = &e;
	struct mini m;
	__half *d = NULL;
	int rc = mini_init(&m, 1, cols, rows, err);
	if (!rc)
		rc = mini_upload(&m, gguf_type, data, size, rows, cols, err);
	if (!rc) {
		cudaError_t ce = cudaMalloc((void **)&d, (size_t)(rows * cols) * 2);
		if (ce)
			rc = rn_cuda_set_error(err, ce, "cudaMalloc", __FILE__, __LINE__);
	}
	if (!rc)
		rc = rn_cu_dequant_f16(&m.w, 0, rows, d, m.c.st, err);
	if (!rc) {
		cudaError_t ce = cudaMemcpyAsync(out, d, (size_t)(rows * cols) * 2, cudaMemcpyDeviceToHost, m.c.st);
		if (!ce)
			ce = cudaStreamSynchronize(m.c.st);
		if (ce)
			rc = rn_cuda_set_error(err, ce, "dequant copy", __FILE__, __LINE__);
	}
	if (d)
		cudaFree(d);
	mini_free(&m);
	if (rc)
		snprintf(msg, msg_size, "%s", e.msg);
	return rc ? -1 : 0;
}

extern "C" int rn_cuda_test_gemm(uint32_t gguf_type, const void *data, size_t size, int64_t rows, int64_t cols,
				 const float *x, int n, int mode, int accumulate, float *y, char *msg, size_t msg_size)
{
	struct rn_error e;
	memset(&e, 0, sizeof e);
	struct rn_error *err = &e;
	struct mini m;
	int rc = mini_init(&m, n, cols, rows, err);
	if (!rc)
		rc = mini_upload(&m, gguf_type, data, size, rows, cols, err);
	if (!rc)
		rc = copy_x(&m, x, n, cols, err);
	if (!rc && accumulate) {
		cudaError_t ce = cudaMemcpyAsync(m.yd, y, (size_t)n * (size_t)rows * 4, cudaMemcpyHostToDevice, m.c.st);
		if (ce)
			rc = rn_cuda_set_error(err, ce, "C copy", __FILE__, __LINE__);
	}
	const int type = m.w.m.type;
	if (!rc && mode == 1 && type != CW_F16 && type != CW_BF16) { /* the f16 copy the prefill cache keeps */
		cudaError_t ce = cudaMalloc((void **)&m.w.w16, (size_t)(rows * cols) * 2);
		if (ce)
			rc = rn_cuda_set_error(err, ce, "cudaMalloc", __FILE__, __LINE__);
		else
			rc = rn_cu_dequant_f16(&m.w, 0, rows, m.w.w16, m.c.st, err);
	}
	if (!rc && mode == 2) {
		if (type != CW_FP8)
			rc = rn_error_set(err, RN_ERR_INVALID_ARG, "mode 2 needs FP8 weights");
		else {
			m.c.p.n_batch = n > RN_CU_DECODE_MAX ? n : RN_CU_DECODE_MAX + 1;
			rc = rn_cu_fp8_probe(&m.c, &m.w, err);
			if (!rc && !m.w.lt_fp8)
				rc = rn_error_set(err, RN_ERR_BACKEND, "FP8 probe: %s", m.c.stats.prefill_fp8_why);
			m.c.stats.prefill_fp8_lt = 1;
		}
	}
	if (!rc)
		rc = run_prep(&m, m.w.lt_fp8 ? PREP_FP8 | PREP_F16 : type == CW_BF16 ? PREP_BF16 : PREP_F16, n, cols, err);
	if (!rc)
		rc = rn_cu_gemm(&m.c, &m.w, &m.c.act, n, m.yd, rows, NULL, accumulate != 0, err);
	if (!rc && mode == 2 && !m.c.stats.prefill_fp8_lt)
		rc = rn_error_set(err, RN_ERR_BACKEND, "FP8 GEMM fell back to f16: %s", m.c.stats.prefill_fp8_why);
	if (!rc) {
		cudaError_t ce = cudaMemcpyAsync(y, m.yd, (size_t)n * (size_t)rows * 4, cudaMemcpyDeviceToHost, m.c.st);
		if (ce == cudaSuccess)
			ce = cudaStreamSynchronize(m.c.st);
		if (ce != cudaSuccess)
			rc = rn_cuda_set_error(err, ce, "result copy", __FILE__, __LINE__);
	}
	if (m.w.w16) {
		cudaStreamSynchronize(m.c.st);
		cudaFree(m.w.w16);
		m.w.w16 = NULL;
	}
	mini_free(&m);
	if (rc)
		snprintf(msg, msg_size, "%s", e.msg);
	return rc ? -1 : 0;
}

/* attention (cuda-attn) */

/* The split plan, the decode cell loop and the flash prefill's causal bounds, on the host. */
extern "C" int rn_cuda_host_attn_check(char *msg, size_t msg_size)
{
	int bad = 0;
#define ATT_FAIL(...)                                                                                    \
	do {                                                                                             \
		if (!bad++)                                                                              \
			snprintf(msg, msg_size, __VA_ARGS__);                                            \
	} while (0)
	msg[0] = 0;
	/* T per SM count: a power of two, >= 2 x sms / 8 unless capped, <= RN_CU_ATT_MAX_SPLIT */
	for (int sms = 1; sms <= 1024; sms++) {
		const int t = rn_cu_att_target_for(sms);
		if ((t & (t - 1)) || t > RN_CU_ATT_MAX_SPLIT || (t < RN_CU_ATT_MAX_SPLIT && 8 * t < 2 * sms))
			ATT_FAIL("target_for(%d) = %d", sms, t);
	}
	if (rn_cu_att_target_for(132) != 64)
		ATT_FAIL("target_for(132) = %d, expected 64 (H100/H200)", rn_cu_att_target_for(132));
	/* chunks: multiples of 32, >= MIN_CHUNK, cover [0, n) exactly with <= T of them, and the grid's splits
	 * (a power of two) bound the chunk count of every row up to max_keys (monotone in max_keys) */
	for (int t = 1; t <= RN_CU_ATT_MAX_SPLIT; t *= 2) {
		int prev = 0;
		for (int n = 1; n <= 300000; n += n < 20000 ? 1 : 97) {
			const int c = rn_cu_att_chunk(n, t), ns = rn_cu_att_nsplit(n, t), gs = rn_cu_att_grid_splits(n, t);
			if (c % 32 || c < RN_CU_ATT_MIN_CHUNK || ns < 1 || ns > t || (ns - 1) * c >= n || ns * c < n)
				ATT_FAIL("T %d n %d: chunk %d, %d chunks", t, n, c, ns);
			if ((gs & (gs - 1)) || gs > t || gs < ns || gs < prev)
				ATT_FAIL("T %d n %d: grid splits %d (row chunks %d, previous %d)", t, n, gs, ns, prev);
			prev = gs;
		}
	}
	/* the decode loop: every cell of a chunk is read by exactly one (warp, lane group, u), cells >= j1 only
	 * as masked lanes; the loop bound does not involve the lane group (warp-uniform by construction) */
	static int seen[4096];
	for (int cpw = 1; cpw <= 4; cpw *= 2)
		for (int U = 1; U <= 2; U++)
			for (int len = 1; len <= 700; len += len < 70 ? 1 : 37) {
				const int warps = 4, ng = warps * cpw, j0 = 1000, j1 = j0 + len;
				memset(seen, 0, sizeof seen);
				for (int w = 0; w < warps; w++)
					for (int jb = j0 + w * cpw; jb < j1; jb += U * ng)
						for (int sub = 0; sub < cpw; sub++)
							for (int u = 0; u < U; u++) {
								const int j = rn_cu_att_cell(jb, u, sub, ng);
								if (j < j0)
									ATT_FAIL("cell %d before the chunk", j);
								else if (j < j1)
									seen[j - j0]++;
							}
				for (int j = 0; j < len; j++)
					if (seen[j] != 1)
						ATT_FAIL("cpw %d U %d len %d: cell %d read %d times", cpw, U, len, j, seen[j]);
			}
	/* flash prefill: a block (and a warp) reads keys up to first + its last token: every valid row's keys */
	for (int G = 1; G <= 8; G++)
		for (int cnt = 1; cnt <= 300; cnt += cnt < 40 ? 1 : 13)
			for (int br = 32; br <= 64; br += 32) {
				const int rows = cnt * G, tiles = (rows + br - 1) / br;
				for (int tl = 0; tl < tiles; tl++) {
					const int rt0 = tl * br, tb = rn_cu_fa_last_token(rt0, br, G, cnt);
					if (tb < 0 || tb >= cnt)
						ATT_FAIL("G %d cnt %d tile %d: last token %d", G, cnt, tl, tb);
					for (int w = 0; w < br / 16; w++) {
						const int tw = rn_cu_fa_last_token(rt0 + w * 16, 16, G, cnt);
						if (tw > tb)
							ATT_FAIL("G %d cnt %d: warp's last token %d past the block's %d", G, cnt, tw, tb);
						for (int r = rt0 + w * 16; r < rt0 + w * 16 + 16 && r < rows; r++)
							if (r / G > tw)
								ATT_FAIL("G %d cnt %d: row %d (token %d) past its warp's last token %d",
									 G, cnt, r, r / G, tw);
					}
				}
			}
#undef ATT_FAIL
	return bad;
}

static int pick_hpb_test(int g)
{
	for (int h = g < 8 ? g : 8; h >= 1; h--)
		if (g % h == 0)
			return h;
	return 1;
}

static int attn_run(const struct rn_cuda_attn_test *t, float *out, struct rn_error *err)
{
	struct rn_cu cu;
	memset(&cu, 0, sizeof cu);
	struct rn_cu *c = &cu;
	if (rn_cuda_device_count() < 1)
		return rn_error_set(err, RN_ERR_BACKEND, "no CUDA device");
	const int D = t->head_dim, H = t->n_head, HK = t->n_head_kv, n = t->n;
	if (D < 1 || HK < 1 || H % HK || n < 1 || (!t->prefill && n > RN_CU_DECODE_MAX))
		return rn_error_set(err, RN_ERR_INVALID_ARG, "attention test shape");
	c->head_dim = D;
	c->n_head = H;
	c->n_head_kv = HK;
	c->q_dim = H * D;
	c->kv_dim = HK * D;
	c->kq_scale = t->scale;
	c->hpb = t->hpb > 0 ? t->hpb : pick_hpb_test(H / HK);
	c->p.n_ctx = t->n_ctx;
	c->kv_seq_stride = (size_t)t->n_ctx * c->kv_dim;
	c->kv_plane_stride = (size_t)t->n_seq * c->kv_seq_stride;
	const size_t vals = 2 * c->kv_plane_stride;
	int max_keys = 0;
	for (int i = 0; i < n; i++)
		max_keys = t->cell[i] + 1 > max_keys ? t->cell[i] + 1 : max_keys;
	int32_t *perm = (int32_t *)malloc((size_t)n * 4), *seg = (int32_t *)malloc((size_t)n * 16);
	int n_seg = 0, rc = RN_OK;
	if (!perm || !seg) {
		free(perm);
		free(seg);
		return rn_error_set(err, RN_ERR_NOMEM, "out of memory");
	}
	/* rows gathered by sequence (order of first appearance) and the segments, as forward.cu builds them */
	{
		int w = 0;
		for (int i = 0; i < n; i++) {
			bool first_seen = true;
			for (int k = 0; k < i; k++)
				first_seen = first_seen && t->seq[k] != t->seq[i];
			if (!first_seen)
				continue;
			seg[4 * n_seg] = t->seq[i];
			seg[4 * n_seg + 1] = w;
			seg[4 * n_seg + 3] = t->cell[i];
			for (int j = i; j < n; j++)
				if (t->seq[j] == t->seq[i])
					perm[w++] = j;
			seg[4 * n_seg + 2] = w - seg[4 * n_seg + 1];
			n_seg++;
		}
	}
	const int splits = t->splits > 0 ? t->splits : rn_cu_attention_splits(max_keys);
	int32_t *dseq = NULL;
	cudaError_t ce = cudaSetDevice(0);
	if (!ce)
		ce = cudaStreamCreateWithFlags(&c->st, cudaStreamNonBlocking);
	if (!ce)
		ce = cudaMalloc((void **)&c->q, (size_t)n * c->q_dim * 4);
	if (!ce)
		ce = cudaMalloc((void **)&c->att, (size_t)n * c->q_dim * 4);
	if (!ce)
		ce = cudaMalloc((void **)&c->att_part, (size_t)n * H * RN_CU_ATT_MAX_SPLIT * (D + 2) * 4);
	if (!ce)
		ce = cudaMalloc((void **)&dseq, (size_t)n * 3 * 4);
	if (!ce)
		ce = cudaMalloc((void **)&c->kv, t->q8 ? vals : vals * 2);
	if (!ce && t->q8)
		ce = cudaMalloc((void **)&c->kv_d, vals / 32 * 2);
	if (!ce)
		ce = cudaMemcpy(c->kv, t->q8 ? (const void *)t->kv8 : (const void *)t->kv16, t->q8 ? vals : vals * 2,
				cudaMemcpyHostToDevice);
	if (!ce && t->q8)
		ce = cudaMemcpy(c->kv_d, t->kv8_d, vals / 32 * 2, cudaMemcpyHostToDevice);
	if (!ce)
		ce = cudaMemcpy(c->q, t->q, (size_t)n * c->q_dim * 4, cudaMemcpyHostToDevice);
	if (!ce)
		ce = cudaMemset(c->att, 0xff, (size_t)n * c->q_dim * 4); /* NaN: every element must be written */
	if (!ce)
		ce = cudaMemcpy(dseq, t->seq, (size_t)n * 4, cudaMemcpyHostToDevice);
	if (!ce)
		ce = cudaMemcpy(dseq + n, t->cell, (size_t)n * 4, cudaMemcpyHostToDevice);
	if (!ce)
		ce = cudaMemcpy(dseq + 2 * n, perm, (size_t)n * 4, cudaMemcpyHostToDevice);
	if (ce)
		rc = rn_cuda_set_error(err, ce, "attention test setup", __FILE__, __LINE__);
	c->sd.seq = dseq;
	c->sd.cell = dseq + n;
	c->perm_dev = dseq + 2 * n;
	if (!rc && !t->prefill && (splits < rn_cu_att_grid_splits(max_keys, rn_cu_attention_target()) ||
				   splits > RN_CU_ATT_MAX_SPLIT))
		rc = rn_error_set(err, RN_ERR_INVALID_ARG, "splits %d below what the rows need", splits);
	if (!rc)
		rc = t->prefill ? rn_cu_attention_prefill(c, 0, n, seg, n_seg, c->st, err)
				: rn_cu_attention_decode(c, 0, n, splits, c->st, err);
	if (!rc) {
		ce = cudaMemcpyAsync(out, c->att, (size_t)n * c->q_dim * 4, cudaMemcpyDeviceToHost, c->st);
		if (!ce)
			ce = cudaStreamSynchronize(c->st);
		if (ce)
			rc = rn_cuda_set_error(err, ce, "attention test run", __FILE__, __LINE__);
	}
	if (c->st)
		cudaStreamSynchronize(c->st);
	void *p[] = {c->q, c->att, c->att_part, dseq, c->kv, c->kv_d};
	for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
		if (p[i])
			cudaFree(p[i]);
	if (c->st)
		cudaStreamDestroy(c->st);
	free(perm);
	free(seg);
	return rc;
}

extern "C" int rn_cuda_test_attention(const struct rn_cuda_attn_test *t, float *out, char *msg, size_t msg_size)
{
	struct rn_error e;
	memset(&e, 0, sizeof e);
	int rc = attn_run(t, out, &e);
	if (rc)
		snprintf(msg, msg_size, "%s", e.msg);
	return rc ? -1 : 0;
}

/* decode (cuda-decode) */

extern "C" int rn_cuda_test_swiglu(const float *g, const float *u, int n, int64_t cols, float *out, char *msg,
				   size_t msg_size)
{
	struct rn_error e;
	memset(&e, 0, sizeof e);
	struct rn_error *err = &e;
	struct mini m;
	float *ud = NULL;
	int rc = mini_init(&m, n, cols, 16, err);
	if (!rc)
		rc = copy_x(&m, g, n, cols, err);
	if (!rc) {
		cudaError_t ce = cudaMalloc((void **)&ud, (size_t)(n * m.c.act.ldq) * 4);
		if (!ce)
			ce = cudaMemcpy2DAsync(ud, (size_t)m.c.act.ldq * 4, u, (size_t)cols * 4, (size_t)cols * 4, (size_t)n,
					       cudaMemcpyHostToDevice, m.c.st);
		if (ce)
			rc = rn_cuda_set_error(err, ce, "swiglu input", __FILE__, __LINE__);
	}
	if (!rc) {
		/* k_prep's SwiGLU path (no norm), f32 out into xd, plus the Q8_256 bytes as the down matvec wants */
		struct rn_cu_prep p;
		memset(&p, 0, sizeof p);
		p.in = m.xd;
		p.ld_in = m.c.act.ldq;
		p.mul = ud;
		p.cols = (int)cols;
		p.fmt = PREP_Q8_256;
		p.out = m.c.act;
		p.out.x = m.xd;
		p.out.ldx = m.c.act.ldq;
		p.n_rows_total = n;
		rc = rn_cu_prep(&p, n, m.c.st, err);
	}
	if (!rc) {
		cudaError_t ce = cudaMemcpy2DAsync(out, (size_t)cols * 4, m.xd, (size_t)m.c.act.ldq * 4, (size_t)cols * 4, (size_t)n,
						   cudaMemcpyDeviceToHost, m.c.st);
		if (!ce)
			ce = cudaStreamSynchronize(m.c.st);
		if (ce)
			rc = rn_cuda_set_error(err, ce, "swiglu output", __FILE__, __LINE__);
	}
	if (ud)
		cudaFree(ud);
	mini_free(&m);
	if (rc)
		snprintf(msg, msg_size, "%s", e.msg);
	return rc ? -1 : 0;
}
