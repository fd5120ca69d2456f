/* runner/cuda/gemm.cu — the prefill matmuls: Y (+)= X W^T for a chunk of prompt tokens, on tensor cores.
 *
 * Quantized weights are dequantized to f16 in row chunks (or read from the f16 copies kept when memory allows)
 * and multiplied with f16 activations by cuBLAS with f32 accumulation and an f32 result; F16 and BF16 weights
 * are used in place. FP8 weights use cuBLASLt's block-scaled FP8 GEMM (128x128 weight tiles, 1x128
 * activation groups quantized on the fly) on Hopper when a probe at load shows it agrees with the f16 path;
 * otherwise they go through the f16 path too.
 */
#include "runner/cuda/internal.cuh"

struct h16_writer {
	__half *row;
	__device__ void operator()(int64_t col, float v) const { row[col] = __float2half_rn(v); }
};

/* dst[r][c] = W[row0 + r][c] as f16 for r < nrows: one thread per unit. */
static __global__ void k_dequant_f16(struct rn_cw_mat w, int64_t row0, int64_t nrows, __half *dst)
{
	const int64_t units = rn_cw_units(w.type, w.cols);
	const int64_t total = nrows * units;
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
		const int64_t r = i / units, u = i % units;
		struct h16_writer wr = {dst + r * w.cols};
		rn_unit_dequant(w.type, w, row0 + r, u, wr);
	}
}

int rn_cu_dequant_f16(const struct rn_cu_w *w, int64_t row0, int64_t nrows, __half *dst, cudaStream_t st,
		      struct rn_error *err)
{
	int64_t total = nrows * rn_cw_units(w->m.type, w->m.cols);
	int64_t blocks = (total + 255) / 256;
	if (blocks > 65536)
		blocks = 65536;
	k_dequant_f16<<<(unsigned)blocks, 256, 0, st>>>(w->m, row0, nrows, dst);
	RN_CU_LAUNCHED();
	return RN_OK;
}

/* ---------------------------------------------------------------------------------------------- FP8 */

static void plan_destroy(struct rn_cu_ltplan *p)
{
	if (p->lb)
		cublasLtMatrixLayoutDestroy(p->lb);
	if (p->la)
		cublasLtMatrixLayoutDestroy(p->la);
	if (p->lc)
		cublasLtMatrixLayoutDestroy(p->lc);
	if (p->desc)
		cublasLtMatmulDescDestroy(p->desc);
	memset(p, 0, sizeof *p);
}

void rn_cu_ltplans_free(struct rn_cu *c)
{
	for (int i = 0; i < c->n_ltplans; i++)
		plan_destroy(&c->ltplans[i]);
	c->n_ltplans = 0;
}

/* The plan for (N, K, n, accumulate): descriptors, layouts and the heuristic's algorithm, made once. The
 * scale pointers are set per call. */
static int lt_plan(struct rn_cu *c, int64_t N, int64_t K, int n, int64_t ldb, int64_t ldc, bool accumulate,
		   struct rn_cu_ltplan **out, struct rn_error *err)
{
	static uint64_t clock = 0;
	for (int i = 0; i < c->n_ltplans; i++) {
		struct rn_cu_ltplan *p = &c->ltplans[i];
		if (p->N == N && p->K == K && p->n == n && p->accumulate == (int)accumulate) {
			p->used = ++clock;
			*out = p;
			return RN_OK;
		}
	}
	struct rn_cu_ltplan *p;
	if (c->n_ltplans < RN_CU_MAX_LTPLANS) {
		p = &c->ltplans[c->n_ltplans++];
	} else {
		p = &c->ltplans[0];
		for (int i = 1; i < c->n_ltplans; i++)
			if (c->ltplans[i].used < p->used)
				p = &c->ltplans[i];
		plan_destroy(p);
	}
	memset(p, 0, sizeof *p);
	p->N = N;
	p->K = K;
	p->n = n;
	p->accumulate = accumulate;
	p->used = ++clock;
	*out = p;
	cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
	int32_t mode_a = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F, mode_b = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
	size_t ws = RN_CU_BLAS_WS;
	cublasLtMatmulPreference_t pref = NULL;
	cublasLtMatmulHeuristicResult_t heur;
	int found = 0;
	RN_CU_BLAS(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
	RN_CU_BLAS(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
	RN_CU_BLAS(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
	RN_CU_BLAS(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode_a, sizeof mode_a));
	RN_CU_BLAS(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode_b, sizeof mode_b));
	RN_CU_BLAS(cublasLtMatrixLayoutCreate(&p->la, CUDA_R_8F_E4M3, (uint64_t)K, (uint64_t)N, K));
	RN_CU_BLAS(cublasLtMatrixLayoutCreate(&p->lb, CUDA_R_8F_E4M3, (uint64_t)K, (uint64_t)n, ldb));
	RN_CU_BLAS(cublasLtMatrixLayoutCreate(&p->lc, CUDA_R_32F, (uint64_t)N, (uint64_t)n, ldc));
	RN_CU_BLAS(cublasLtMatmulPreferenceCreate(&pref));
	cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
	if (s == CUBLAS_STATUS_SUCCESS)
		s = cublasLtMatmulAlgoGetHeuristic(c->lt, p->desc, p->la, p->lb, p->lc, p->lc, pref, 1, &heur, &found);
	cublasLtMatmulPreferenceDestroy(pref);
	if (s == CUBLAS_STATUS_SUCCESS && found > 0) {
		p->algo = heur.algo;
		p->ok = true;
	}
	return RN_OK;
}

/* y (+)= W x through cuBLASLt's block-scaled FP8 GEMM; *unsupported when it has no algorithm for the shape
 * or refuses to run it (the caller then uses the f16 path). */
static int gemm_fp8_lt(struct rn_cu *c, const struct rn_cu_w *w, const struct rn_cu_acts *a, int n, float *y,
		       int64_t ldy, bool accumulate, bool *unsupported, struct rn_error *err)
{
	*unsupported = false;
	struct rn_cu_ltplan *p = NULL;
	int rc = lt_plan(c, w->m.rows, w->m.cols, n, a->ldq, ldy, accumulate, &p, err);
	if (rc)
		return rc;
	if (!p->ok) {
		*unsupported = true;
		return RN_OK;
	}
	const void *sa = w->m.p[1], *sb = a->f8s;
	RN_CU_BLAS(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa));
	RN_CU_BLAS(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb));
	const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
	cublasStatus_t s = cublasLtMatmul(c->lt, p->desc, &alpha, w->m.p[0], p->la, a->f8, p->lb, &beta, y, p->lc, y, p->lc,
					  &p->algo, c->blas_ws, RN_CU_BLAS_WS, c->st);
	if (s != CUBLAS_STATUS_SUCCESS)
		*unsupported = true;
	return RN_OK;
}

/* ---------------------------------------------------------------------------------------------- f16 path */

static int gemm_f16(struct rn_cu *c, const struct rn_cu_w *w, const struct rn_cu_acts *a, int n, float *y,
		    int64_t ldy, bool accumulate, struct rn_error *err)
{
	const int64_t rows = w->m.rows, cols = w->m.cols;
	const bool bf = w->m.type == CW_BF16;
	const bool direct = w->m.type == CW_F16 || bf || w->w16;
	const void *B = bf ? (const void *)a->b16 : (const void *)a->h16;
	const cudaDataType_t t = bf ? CUDA_R_16BF : CUDA_R_16F;
	const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
	int64_t chunk = direct ? rows : (int64_t)(RN_CU_GEMM_CHUNK / 2) / cols;
	if (chunk < 1)
		chunk = 1;
	RN_CU_BLAS(cublasSetStream(c->blas, c->st));
	for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
		const int64_t nr = rows - r0 < chunk ? rows - r0 : chunk;
		const void *A;
		if (w->w16)
			A = w->w16 + r0 * cols;
		else if (direct)
			A = (const uint8_t *)w->m.p[0] + (size_t)(r0 * cols) * 2;
		else {
			int rc = rn_cu_dequant_f16(w, r0, nr, c->w16, c->st, err);
			if (rc)
				return rc;
			A = c->w16;
		}
		RN_CU_BLAS(cublasGemmEx(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)nr, n, (int)cols, &alpha, A, t, (int)cols, B, t,
					(int)a->ldq, &beta, y + r0, CUDA_R_32F, (int)ldy, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
	}
	return RN_OK;
}

int rn_cu_gemm(struct rn_cu *c, const struct rn_cu_w *w, const struct rn_cu_acts *a, int n, float *y, int64_t ldy,
	       const float *bias, bool accumulate, struct rn_error *err)
{
	int rc;
	if (w->lt_fp8) {
		bool unsupported = false;
		rc = gemm_fp8_lt(c, w, a, n, y, ldy, accumulate, &unsupported, err);
		if (rc)
			return rc;
		if (unsupported) /* a shape the probe did not cover: the f16 path is always available */
			rc = gemm_f16(c, w, a, n, y, ldy, accumulate, err);
	} else {
		rc = gemm_f16(c, w, a, n, y, ldy, accumulate, err);
	}
	if (rc)
		return rc;
	return rn_cu_add_bias(y, ldy, bias, w->m.rows, n, c->st, err);
}

/* ---------------------------------------------------------------------------------------------- probe */

static __global__ void k_probe_fill(float *x, int64_t n, uint32_t seed)
{
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
		uint32_t h = (uint32_t)i * 2654435761u ^ seed;
		h ^= h >> 15;
		h *= 2246822519u;
		h ^= h >> 13;
		x[i] = (float)(h & 0xffff) / 32768.0f - 1.0f;
	}
}

static int fp8_probe_run(struct rn_cu *c, struct rn_cu_w *w, int n, struct rn_error *err);

/* Decide whether w (FP8) can use cuBLASLt's block-scaled FP8 GEMM: run it and the f16 path on the same random
 * activations (64 rows) and accept it when the results agree to FP8 activation rounding. Leaves w->lt_fp8 set
 * accordingly; errors only for CUDA failures. */
int rn_cu_fp8_probe(struct rn_cu *c, struct rn_cu_w *w, struct rn_error *err)
{
	w->lt_fp8 = false;
	const int n = 64;
	const int64_t rows = w->m.rows, cols = w->m.cols;
	/* one probe per shape: a wrong scale layout or an unsupported shape shows on any matrix of that shape */
	for (int i = 0; i < c->n_probes; i++)
		if (c->probes[i].rows == rows && c->probes[i].cols == cols) {
			w->lt_fp8 = c->probes[i].lt_ok;
			return RN_OK;
		}
	int rc = RN_OK;
	if ((rc = fp8_probe_run(c, w, n, err)))
		return rc;
	if (c->n_probes < RN_CU_MAX_PROBES)
		c->probes[c->n_probes++] = (struct rn_cu_probe){rows, cols, w->lt_fp8};
	return RN_OK;
}

/* The probe itself: see rn_cu_fp8_probe. */
static int fp8_probe_run(struct rn_cu *c, struct rn_cu_w *w, int n, struct rn_error *err)
{
	const int64_t rows = w->m.rows, cols = w->m.cols;
	if (cols % 128 != 0 || rows % 16 != 0 || n > c->p.n_batch)
		return RN_OK;
	int dev_major = 0;
	RN_CU_CHECK(cudaDeviceGetAttribute(&dev_major, cudaDevAttrComputeCapabilityMajor, c->dev));
	if (dev_major != 9)
		return RN_OK;
	float *y1 = c->hb, *y2 = c->hb2; /* hb and hb2 hold n_batch x max(n_ff, max_cols) floats */
	if (rows > (int64_t)(c->n_ff > c->max_cols ? c->n_ff : c->max_cols))
		return RN_OK;
	k_probe_fill<<<256, 256, 0, c->st>>>(c->xn, (int64_t)n * cols, 1234u);
	RN_CU_LAUNCHED();
	struct rn_cu_prep p;
	memset(&p, 0, sizeof p);
	p.in = c->xn;
	p.ld_in = cols;
	p.cols = (int)cols;
	p.fmt = PREP_F16 | PREP_FP8;
	p.out = c->act;
	p.out.x = c->xn;
	p.out.ldx = cols;
	p.n_rows_total = n;
	int rc = rn_cu_prep(&p, n, c->st, err);
	if (rc)
		return rc;
	bool unsupported = false;
	w->lt_fp8 = false;
	rc = gemm_fp8_lt(c, w, &c->act, n, y1, rows, false, &unsupported, err);
	if (rc || unsupported)
		return rc;
	if ((rc = gemm_f16(c, w, &c->act, n, y2, rows, false, err)))
		return rc;
	size_t bytes = (size_t)n * (size_t)rows * sizeof(float);
	float *h1 = (float *)malloc(bytes), *h2 = (float *)malloc(bytes);
	if (!h1 || !h2) {
		free(h1);
		free(h2);
		return rn_error_set(err, RN_ERR_NOMEM, "out of memory");
	}
	cudaError_t e1 = cudaMemcpyAsync(h1, y1, bytes, cudaMemcpyDeviceToHost, c->st);
	cudaError_t e2 = cudaMemcpyAsync(h2, y2, bytes, cudaMemcpyDeviceToHost, c->st);
	cudaError_t e3 = cudaStreamSynchronize(c->st);
	if (e1 || e2 || e3) {
		free(h1);
		free(h2);
		return rn_cuda_set_error(err, e1 ? e1 : e2 ? e2 : e3, "probe copy", __FILE__, __LINE__);
	}
	double num = 0, den = 0;
	for (size_t i = 0; i < (size_t)n * (size_t)rows; i++) {
		double d = (double)h1[i] - h2[i];
		num += d * d;
		den += (double)h2[i] * h2[i];
	}
	free(h1);
	free(h2);
	double e = den > 0 ? sqrt(num / den) : 1.0;
	/* E4M3 activations carry 3 mantissa bits: ~2-3% per value, averaging down over the dot products */
	w->lt_fp8 = e == e && e < 0.05;
	return RN_OK;
}
