/* runner/cuda/gemm.cu — the prefill matmuls: Y (+)= X W^T for a chunk of prompt tokens, on tensor cores.
 *
 * Quantized weights are dequantized to f16 in row chunks (or read from the f16 copies kept when memory allows)
 * and multiplied with f16 activations by cuBLAS with f32 accumulation and an f32 result; F16 and BF16 weights
 * are used in place. The dequantization works on tiles of 32 rows x 256 columns: each thread decodes whole
 * units into shared memory, then the tile leaves in coalesced 16-byte stores. FP8 weights use cuBLASLt's
 * block-scaled FP8 GEMM (128x128 weight tiles, 1x128 activation groups quantized on the fly, the row count
 * padded to a multiple of 4: rn_cu_f8_rows) on Hopper when a probe at load shows that it has an algorithm
 * and agrees with the f16 path at the row counts and betas prefill uses; otherwise they go through the f16
 * path too, and the stats say why.
 */
#include "runner/cuda/internal.cuh"

#define DQ_ROWS 32   /* rows of a dequantization tile */
#define DQ_COLS 256  /* columns of a tile: a K-quant super-block, 8 legacy blocks; every unit lies inside one */

/* Writes a unit's values into the tile (columns relative to the tile's first column c0). */
struct tile_writer {
	__half *t;
	int64_t c0;
	__device__ void operator()(int64_t col, float v) const { t[col - c0] = __float2half_rn(v); }
};

/* dst[r][c] = W[row0 + r][c] as f16 for r < nrows. Block (x, y) does rows 32y.. and columns 256x..: the
 * threads decode the tile's units into shared memory, then write the tile row by row with 16-byte stores
 * (w.cols is a multiple of 32, so every tile row is whole 16-byte vectors, aligned when dst is). */
static __global__ void __launch_bounds__(256) k_dequant_f16(struct rn_cw_mat w, int64_t row0, int64_t nrows,
							    __half *dst)
{
	__shared__ __align__(16) __half tile[DQ_ROWS * DQ_COLS];
	const int64_t c0 = (int64_t)blockIdx.x * DQ_COLS, r0 = (int64_t)blockIdx.y * DQ_ROWS;
	const int width = (int)(w.cols - c0 < DQ_COLS ? w.cols - c0 : DQ_COLS);
	const int rows = (int)(nrows - r0 < DQ_ROWS ? nrows - r0 : DQ_ROWS);
	const int usz = DQ_COLS / (int)rn_cw_units(w.type, DQ_COLS); /* values per unit: 4, 8, 16 or 32 */
	const int upr = width / usz;
	const int64_t u0 = c0 / usz;
	for (int i = threadIdx.x; i < rows * upr; i += blockDim.x) {
		const int rr = i / upr, uu = i % upr;
		struct tile_writer wr = {tile + rr * DQ_COLS, c0};
		rn_unit_dequant(w.type, w, row0 + r0 + rr, u0 + uu, wr);
	}
	__syncthreads();
	const int vpr = width / 8;
	for (int i = threadIdx.x; i < rows * vpr; i += blockDim.x) {
		const int rr = i / vpr, vv = i % vpr;
		*(uint4 *)(dst + (r0 + rr) * w.cols + c0 + 8 * vv) = *(const uint4 *)(tile + rr * DQ_COLS + 8 * vv);
	}
}

int rn_cu_dequant_f16(const struct rn_cu_w *w, int64_t row0, int64_t nrows, __half *dst, cudaStream_t st,
		      struct rn_error *err)
{
	if (nrows <= 0)
		return RN_OK;
	if (w->m.cols % 32 != 0 || ((uintptr_t)dst & 15) != 0)
		return rn_error_set(err, RN_ERR_INVALID_ARG, "f16 dequantization of %s: %lld columns / unaligned target",
				    w->name ? w->name : "a matrix", (long long)w->m.cols);
	const int64_t gx = (w->m.cols + DQ_COLS - 1) / DQ_COLS;
	/* grid.y is limited to 65535 tiles: split very tall matrices */
	const int64_t max_rows = 65535ll * DQ_ROWS;
	for (int64_t r = 0; r < nrows; r += max_rows) {
		const int64_t nr = nrows - r < max_rows ? nrows - r : max_rows;
		dim3 grid((unsigned)gx, (unsigned)((nr + DQ_ROWS - 1) / DQ_ROWS));
		k_dequant_f16<<<grid, 256, 0, st>>>(w->m, row0 + r, nr, dst + r * w->m.cols);
		RN_CU_LAUNCHED();
	}
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

/* The plan for (N, K, n, ldb, ldc, accumulate), n already padded (rn_cu_f8_rows): descriptors, layouts and the
 * heuristic's algorithm, made once. The scale pointers are set per call. */
static int lt_plan(struct rn_cu *c, int64_t N, int64_t K, int n, int64_t ldb, int64_t ldc, bool accumulate,
		   struct rn_cu_ltplan **out, struct rn_error *err)
{
	static uint64_t clock = 0;
	for (int i = 0; i < c->n_ltplans; i++) {
		struct rn_cu_ltplan *p = &c->ltplans[i];
		if (p->N == N && p->K == K && p->n == n && p->ldb == ldb && p->ldc == ldc && p->accumulate == (int)accumulate) {
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
	p->ldb = ldb;
	p->ldc = ldc;
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
	p->status = (int)s;
	p->found = found;
	if (s == CUBLAS_STATUS_SUCCESS && found > 0) {
		p->algo = heur.algo;
		p->ok = true;
	}
	return RN_OK;
}

/* y (+)= W x through cuBLASLt's block-scaled FP8 GEMM on rn_cu_f8_rows(n) rows (the pad rows zeroed here);
 * *unsupported (with *status, the cuBLAS status or -1 for "no algorithm") when it has no algorithm for the
 * shape or refuses to run it. */
static int gemm_fp8_lt(struct rn_cu *c, const struct rn_cu_w *w, const struct rn_cu_acts *a, int n, float *y,
		       int64_t ldy, bool accumulate, bool *unsupported, int *status, struct rn_error *err)
{
	*unsupported = false;
	*status = 0;
	const int64_t n4 = rn_cu_f8_rows(n), K = w->m.cols;
	struct rn_cu_ltplan *p = NULL;
	int rc = lt_plan(c, w->m.rows, K, (int)n4, a->ldq, ldy, accumulate, &p, err);
	if (rc)
		return rc;
	if (!p->ok) {
		*unsupported = true;
		*status = p->status ? p->status : -1;
		return RN_OK;
	}
	if (n4 > n) { /* the pad rows: E4M3 zeros and zero scales (a NaN there would reach only pad columns, but
		       * zeros keep them finite and the layout exactly the documented one) */
		RN_CU_CHECK(cudaMemsetAsync(a->f8 + (size_t)n * (size_t)a->ldq, 0, (size_t)(n4 - n) * (size_t)a->ldq, c->st));
		const struct rn_cu_f8pad pad = rn_cu_f8s_pad(n, K);
		RN_CU_CHECK(cudaMemset2DAsync(a->f8s + pad.off, (size_t)pad.pitch * 4, 0, (size_t)pad.width * 4,
					      (size_t)pad.height, c->st));
	}
	const void *sa = w->m.p[1], *sb = a->f8s;
	RN_CU_BLAS(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa));
	RN_CU_BLAS(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb));
	const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
	cublasStatus_t s = cublasLtMatmul(c->lt, p->desc, &alpha, w->m.p[0], p->la, a->f8, p->lb, &beta, y, p->lc, y, p->lc,
					  &p->algo, c->blas_ws, RN_CU_BLAS_WS, c->st);
	if (s != CUBLAS_STATUS_SUCCESS) {
		*unsupported = true;
		*status = (int)s;
	}
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
		int status = 0;
		rc = gemm_fp8_lt(c, w, a, n, y, ldy, accumulate, &unsupported, &status, err);
		if (rc)
			return rc;
		if (unsupported) {
			/* a row count the probe did not cover: the f16 path serves it (forward.cu's prep writes f16
			 * activations next to the FP8 ones for these weights), and the stats stop claiming FP8 */
			if (c->stats.prefill_fp8_lt)
				fprintf(stderr, "orun cuda: FP8 prefill falls back to f16 GEMMs: %s %lldx%lld, n=%d, beta=%d: "
						"cuBLASLt %s (status %d)\n",
					w->name ? w->name : "?", (long long)w->m.rows, (long long)w->m.cols, n, accumulate ? 1 : 0,
					status == -1 ? "found no algorithm" : "refused the GEMM", status);
			c->stats.prefill_fp8_lt = 0;
			snprintf(c->stats.prefill_fp8_why, sizeof c->stats.prefill_fp8_why,
				 "at run time: %s %lldx%lld, n=%d, beta=%d: cuBLASLt %s (status %d)", w->name ? w->name : "?",
				 (long long)w->m.rows, (long long)w->m.cols, n, accumulate ? 1 : 0,
				 status == -1 ? "found no algorithm" : "refused the GEMM", status);
			rc = gemm_f16(c, w, a, n, y, ldy, accumulate, err);
		}
	} else {
		rc = gemm_f16(c, w, a, n, y, ldy, accumulate, err);
	}
	if (rc)
		return rc;
	return rn_cu_add_bias(y, ldy, bias, w->m.rows, n, c->st, err);
}

/* ---------------------------------------------------------------------------------------------- probe */

static __device__ __host__ float probe_value(int64_t i, uint32_t seed)
{
	uint32_t h = (uint32_t)i * 2654435761u ^ seed;
	h ^= h >> 15;
	h *= 2246822519u;
	h ^= h >> 13;
	return (float)(h & 0xffff) / 32768.0f - 1.0f;
}

static __global__ void k_probe_fill(float *x, int64_t n, uint32_t seed)
{
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
		x[i] = probe_value(i, seed);
}

/* acc[0] += sum (a - b)^2, acc[1] += sum (b - base)^2 over the first `count` values, acc[2] += the number of
 * values of a that are not finite; base is the fill of k_probe_fill(seed) when seed != 0, else 0. */
static __global__ void k_probe_err(const float *a, const float *b, int64_t count, uint32_t seed, double *acc)
{
	double d2 = 0, b2 = 0, bad = 0;
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x) {
		const double base = seed ? (double)probe_value(i, seed) : 0.0;
		const double d = (double)a[i] - (double)b[i], v = (double)b[i] - base;
		d2 += d * d;
		b2 += v * v;
		bad += isfinite(a[i]) ? 0.0 : 1.0;
	}
	for (int o = 16; o > 0; o >>= 1) {
		d2 += __shfl_xor_sync(0xffffffffu, d2, o);
		b2 += __shfl_xor_sync(0xffffffffu, b2, o);
		bad += __shfl_xor_sync(0xffffffffu, bad, o);
	}
	if ((threadIdx.x & 31) == 0) {
		atomicAdd(&acc[0], d2);
		atomicAdd(&acc[1], b2);
		atomicAdd(&acc[2], bad);
	}
}

#define PROBE_TOL 0.05 /* E4M3 activations carry 3 mantissa bits: ~2-3% per value, averaging down in the dots */

int rn_cu_fp8_probe_rows(int n_batch, int *ns)
{
	/* the largest chunk (TTFT at 2,048 is one), an odd count just below it, the smallest prefill chunk (odd);
	 * prefill uses every count from RN_CU_DECODE_MAX + 1 to n_batch */
	int k = 0;
	ns[k++] = n_batch;
	if (n_batch % 2 == 0 && n_batch - 1 > RN_CU_DECODE_MAX + 1)
		ns[k++] = n_batch - 1;
	if (n_batch > RN_CU_DECODE_MAX + 1)
		ns[k++] = RN_CU_DECODE_MAX + 1;
	return k;
}

static int fp8_probe_run(struct rn_cu *c, struct rn_cu_w *w, char *why, size_t why_size, struct rn_error *err);

int rn_cu_fp8_probe(struct rn_cu *c, struct rn_cu_w *w, struct rn_error *err)
{
	w->lt_fp8 = false;
	const int64_t rows = w->m.rows, cols = w->m.cols;
	/* one probe per shape: a wrong scale layout or an unsupported shape shows on any matrix of that shape */
	struct rn_cu_probe *pr = NULL;
	for (int i = 0; i < c->n_probes; i++)
		if (c->probes[i].rows == rows && c->probes[i].cols == cols)
			pr = &c->probes[i];
	struct rn_cu_probe fresh;
	if (!pr) {
		memset(&fresh, 0, sizeof fresh);
		fresh.rows = rows;
		fresh.cols = cols;
		int rc = fp8_probe_run(c, w, fresh.why, sizeof fresh.why, err);
		if (rc)
			return rc;
		fresh.lt_ok = w->lt_fp8;
		pr = &fresh;
		if (c->n_probes < RN_CU_MAX_PROBES)
			c->probes[c->n_probes++] = fresh;
	}
	w->lt_fp8 = pr->lt_ok;
	if (!pr->lt_ok && !c->stats.prefill_fp8_why[0])
		snprintf(c->stats.prefill_fp8_why, sizeof c->stats.prefill_fp8_why, "%s", pr->why);
	return RN_OK;
}

/* The probe itself: for each row count of rn_cu_fp8_probe_rows and beta 0 and 1 (Q/K/V and gate/up write,
 * O and down accumulate into the residual), run cuBLASLt's FP8 GEMM and the f16 path on the same random
 * activations (and, for beta 1, the same random C) and accept when every run has an algorithm and agrees
 * to PROBE_TOL (normalised RMS of the difference over the product). Sets w->lt_fp8; why gets the first
 * failure. Errors only for CUDA failures. */
static int fp8_probe_run(struct rn_cu *c, struct rn_cu_w *w, char *why, size_t why_size, struct rn_error *err)
{
	const int64_t rows = w->m.rows, cols = w->m.cols;
	w->lt_fp8 = false;
	if (cols % 128 != 0 || rows % 16 != 0) {
		snprintf(why, why_size, "%lldx%lld: shape not a multiple of 16 rows x 128 columns", (long long)rows,
			 (long long)cols);
		return RN_OK;
	}
	int dev_major = 0, dev_minor = 0;
	RN_CU_CHECK(cudaDeviceGetAttribute(&dev_major, cudaDevAttrComputeCapabilityMajor, c->dev));
	RN_CU_CHECK(cudaDeviceGetAttribute(&dev_minor, cudaDevAttrComputeCapabilityMinor, c->dev));
	if (dev_major != 9) {
		snprintf(why, why_size, "sm_%d%d: cuBLASLt's 1x128 / 128x128 block-scaled FP8 GEMM is for Hopper (sm_90)",
			 dev_major, dev_minor);
		return RN_OK;
	}
	float *y1 = c->hb, *y2 = c->hb2; /* hb and hb2 hold rn_cu_f8_rows(n_batch) x max(n_ff, max_cols) floats */
	if (rows > (int64_t)(c->n_ff > c->max_cols ? c->n_ff : c->max_cols)) {
		snprintf(why, why_size, "%lldx%lld: more rows than the probe's buffers", (long long)rows, (long long)cols);
		return RN_OK;
	}
	double *acc = (double *)c->blas_ws; /* the workspace is free between GEMMs on this stream */
	int ns[3];
	const int nn = rn_cu_fp8_probe_rows(c->p.n_batch, ns);
	for (int t = 0; t < nn; t++) {
		const int n = ns[t];
		const int64_t n4 = rn_cu_f8_rows(n);
		k_probe_fill<<<256, 256, 0, c->st>>>(c->xn, (int64_t)n * cols, 1234u + (uint32_t)n);
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
		for (int acc_i = 0; acc_i < 2; acc_i++) {
			const bool accumulate = acc_i == 1;
			const uint32_t seed = accumulate ? 777u : 0u;
			if (accumulate) { /* the same C for both paths (all n4 rows: the pad rows are read too) */
				k_probe_fill<<<256, 256, 0, c->st>>>(y1, n4 * rows, seed);
				RN_CU_LAUNCHED();
				k_probe_fill<<<256, 256, 0, c->st>>>(y2, n4 * rows, seed);
				RN_CU_LAUNCHED();
			}
			bool unsupported = false;
			int status = 0;
			if ((rc = gemm_fp8_lt(c, w, &c->act, n, y1, rows, accumulate, &unsupported, &status, err)))
				return rc;
			if (unsupported) {
				snprintf(why, why_size, "%lldx%lld, n=%d, beta=%d: cuBLASLt %s (status %d)", (long long)rows,
					 (long long)cols, n, acc_i, status == -1 ? "found no algorithm" : "refused the GEMM",
					 status);
				return RN_OK;
			}
			if ((rc = gemm_f16(c, w, &c->act, n, y2, rows, accumulate, err)))
				return rc;
			RN_CU_CHECK(cudaMemsetAsync(acc, 0, 3 * sizeof(double), c->st));
			k_probe_err<<<256, 256, 0, c->st>>>(y1, y2, (int64_t)n * rows, seed, acc);
			RN_CU_LAUNCHED();
			double h[3];
			RN_CU_CHECK(cudaMemcpyAsync(h, acc, sizeof h, cudaMemcpyDeviceToHost, c->st));
			RN_CU_CHECK(cudaStreamSynchronize(c->st));
			const double e = h[1] > 0 ? sqrt(h[0] / h[1]) : 1.0;
			if (h[2] != 0 || !(e < PROBE_TOL)) {
				snprintf(why, why_size, "%lldx%lld, n=%d, beta=%d: differs from the f16 path by %.3g (limit %.2g)%s",
					 (long long)rows, (long long)cols, n, acc_i, e, PROBE_TOL,
					 h[2] != 0 ? ", non-finite values" : "");
				return RN_OK;
			}
		}
	}
	w->lt_fp8 = true;
	return RN_OK;
}
