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
	const size_t N = (size_t)(n < 64 ? 64 : n);
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
				rc = run_prep(&m, m.w.lt_fp8 ? PREP_FP8 : type == CW_BF16 ? PREP_BF16 : PREP_F16, n, cols, err);
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
