/* runner/cuda/weights.cu — weight upload: from the read-only GGUF mapping through pinned staging buffers to
 * the device, repacked into the layouts of runner/cuda/quant.cuh.
 *
 * Two pinned buffers alternate: while the DMA engine copies one to the device (and a repack kernel spreads
 * it into planes), the host fills the other from the mapping, so disk/page-cache reads, PCIe copies and
 * repacking overlap. Each matrix is one device allocation holding its planes. Nothing is kept on the host.
 */
#include <stdio.h>
#include <stdlib.h>

#include "runner/cuda/internal.cuh"

#define STAGE_BYTES (64u << 20)

struct rn_cu_uploader {
	cudaStream_t st;
	void *pin[2];
	uint8_t *raw[2]; /* device staging for the types that are repacked */
	cudaEvent_t ev[2];
	bool busy[2];
	int cur;
};

int rn_cuda_set_error(struct rn_error *err, cudaError_t e, const char *what, const char *file, int line)
{
	const char *base = strrchr(file, '/');
	return rn_error_set(err, RN_ERR_BACKEND, "CUDA error %s (%s) in %s at %s:%d", cudaGetErrorName(e),
			    cudaGetErrorString(e), what, base ? base + 1 : file, line);
}

int rn_cublas_error(struct rn_error *err, int status, const char *what, const char *file, int line)
{
	const char *base = strrchr(file, '/');
	return rn_error_set(err, RN_ERR_BACKEND, "cuBLAS status %d (%s) in %s at %s:%d", status,
			    cublasGetStatusString((cublasStatus_t)status), what, base ? base + 1 : file, line);
}

int rn_cu_uploader_new(struct rn_cu_uploader **out, cudaStream_t st, struct rn_error *err)
{
	struct rn_cu_uploader *up = (struct rn_cu_uploader *)calloc(1, sizeof *up);
	if (!up)
		return rn_error_set(err, RN_ERR_NOMEM, "out of memory");
	*out = up;
	up->st = st;
	for (int i = 0; i < 2; i++) {
		RN_CU_CHECK(cudaMallocHost(&up->pin[i], STAGE_BYTES));
		RN_CU_CHECK(cudaMalloc((void **)&up->raw[i], STAGE_BYTES));
		RN_CU_CHECK(cudaEventCreateWithFlags(&up->ev[i], cudaEventDisableTiming));
	}
	return RN_OK;
}

int rn_cu_uploader_finish(struct rn_cu_uploader *up, struct rn_error *err)
{
	if (!up)
		return RN_OK;
	cudaError_t e = cudaStreamSynchronize(up->st);
	for (int i = 0; i < 2; i++) {
		if (up->pin[i])
			cudaFreeHost(up->pin[i]);
		if (up->raw[i])
			cudaFree(up->raw[i]);
		if (up->ev[i])
			cudaEventDestroy(up->ev[i]);
	}
	free(up);
	if (e != cudaSuccess)
		return rn_cuda_set_error(err, e, "cudaStreamSynchronize (upload)", __FILE__, __LINE__);
	return RN_OK;
}

/* The next staging buffer, once the copy that last used it has finished. */
static int next_stage(struct rn_cu_uploader *up, int *k, struct rn_error *err)
{
	*k = up->cur;
	up->cur ^= 1;
	if (up->busy[*k])
		RN_CU_CHECK(cudaEventSynchronize(up->ev[*k]));
	up->busy[*k] = false;
	return RN_OK;
}

int rn_cu_upload_raw(struct rn_cu_uploader *up, const void *src, size_t bytes, void *dst, struct rn_error *err)
{
	const uint8_t *s = (const uint8_t *)src;
	uint8_t *d = (uint8_t *)dst;
	for (size_t o = 0; o < bytes; o += STAGE_BYTES) {
		size_t n = bytes - o < STAGE_BYTES ? bytes - o : STAGE_BYTES;
		int k, rc;
		if ((rc = next_stage(up, &k, err)))
			return rc;
		memcpy(up->pin[k], s + o, n);
		RN_CU_CHECK(cudaMemcpyAsync(d + o, up->pin[k], n, cudaMemcpyHostToDevice, up->st));
		RN_CU_CHECK(cudaEventRecord(up->ev[k], up->st));
		up->busy[k] = true;
	}
	return RN_OK;
}

struct repack_planes {
	uint8_t *p[RN_CU_MAX_PLANES];
};

static __global__ void k_repack(int type, const uint8_t *src, int block_bytes, struct repack_planes planes, int64_t blk0,
				int64_t n)
{
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
		rn_cw_repack_block(type, src + i * block_bytes, planes.p, blk0 + i);
}

uint64_t rn_cu_w_bytes(const struct rn_tensor *t)
{
	int type = rn_cw_from_gguf(t->type);
	if (type < 0)
		return 0;
	int64_t off[RN_CU_MAX_PLANES + 1];
	return (uint64_t)rn_cw_layout(type, t->ne[1], t->ne[0], off);
}

int rn_cu_w_check(const struct rn_tensor *t, struct rn_error *err)
{
	int type = rn_cw_from_gguf(t->type);
	if (type < 0)
		return rn_error_set(err, RN_ERR_TYPE, "tensor '%s' has type %s, which the CUDA backend has no kernel for",
				    t->name, gguf_type_name(t->type));
	if (t->ne[2] != 1 || t->ne[3] != 1)
		return rn_error_set(err, RN_ERR_TENSOR, "tensor '%s' is not a matrix", t->name);
	const char *why = rn_cw_shape_error(type, t->ne[1], t->ne[0]);
	if (why)
		return rn_error_set(err, RN_ERR_TENSOR, "tensor '%s' (%s, %lld x %lld): %s", t->name, gguf_type_name(t->type),
				    (long long)t->ne[1], (long long)t->ne[0], why);
	if (rn_cw_gguf_bytes(type, t->ne[1], t->ne[0]) > t->nbytes)
		return rn_error_set(err, RN_ERR_TENSOR, "tensor '%s' holds %llu bytes, its shape needs %llu", t->name,
				    (unsigned long long)t->nbytes, (unsigned long long)rn_cw_gguf_bytes(type, t->ne[1], t->ne[0]));
	return RN_OK;
}

void rn_cu_w_free(struct rn_cu_w *w)
{
	if (w->buf)
		cudaFree(w->buf);
	if (w->w16)
		cudaFree(w->w16);
	w->buf = NULL;
	w->w16 = NULL;
}

/* Tensor t into rows [row0, row0 + t's rows) of the repacked matrix w (allocated, of w->m.rows rows). */
static int upload_rows(struct rn_cu_uploader *up, const struct rn_tensor *t, struct rn_cu_w *w, int64_t row0,
		       const int64_t *off, struct rn_error *err)
{
	int rc;
	const int type = w->m.type;
	const int64_t rows = t->ne[1], cols = t->ne[0];
	const uint8_t *src = (const uint8_t *)t->data;
	uint8_t *base = (uint8_t *)w->buf;
	if (rn_cw_is_raw(type)) {
		/* plane 0 is rows x (bytes per row): the part starts row0 rows in */
		if ((rc = rn_cu_upload_raw(up, src, (size_t)rn_cw_plane_size(type, 0, rows, cols),
					   base + off[0] + rn_cw_plane_size(type, 0, row0, cols), err)))
			return rc;
		if (type == CW_FP8) {
			if (row0 % RN_CU_FP8_TILE != 0)
				return rn_error_set(err, RN_ERR_TENSOR, "tensor '%s': FP8 part at row %lld, not on a 128-row tile",
						    t->name, (long long)row0);
			size_t gb = (size_t)rn_cw_plane_size(type, 1, rows, cols);
			float *g = (float *)malloc(gb);
			if (!g)
				return rn_error_set(err, RN_ERR_NOMEM, "out of memory");
			rn_cw_fp8_grid_repack(src + rows * cols, rows, cols, g);
			rc = rn_cu_upload_raw(up, g, gb, base + off[1] + (size_t)(row0 / RN_CU_FP8_TILE) * (size_t)w->m.tcp * 4,
					      err);
			/* the staging copy was taken before the call returned */
			free(g);
			if (rc)
				return rc;
		}
		return RN_OK;
	}
	const int bb = rn_cw_table[type].block_bytes;
	const int64_t nb = cols / rn_cw_table[type].block_elems, row_bytes = nb * bb;
	int64_t chunk_rows = (int64_t)STAGE_BYTES / row_bytes;
	if (chunk_rows < 1)
		return rn_error_set(err, RN_ERR_TENSOR, "tensor '%s' has rows of %lld bytes, more than the upload staging holds",
				    t->name, (long long)row_bytes);
	struct repack_planes planes;
	for (int i = 0; i < RN_CU_MAX_PLANES; i++)
		planes.p[i] = base + off[i];
	for (int64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
		const int64_t nr = rows - r0 < chunk_rows ? rows - r0 : chunk_rows;
		const size_t n = (size_t)(nr * row_bytes);
		int k;
		if ((rc = next_stage(up, &k, err)))
			return rc;
		memcpy(up->pin[k], src + r0 * row_bytes, n);
		RN_CU_CHECK(cudaMemcpyAsync(up->raw[k], up->pin[k], n, cudaMemcpyHostToDevice, up->st));
		const int64_t nblk = nr * nb;
		int64_t blocks = (nblk + 255) / 256;
		/* planes are indexed by the global block number (row * nb + b) of the whole matrix */
		k_repack<<<(unsigned)(blocks < 4096 ? blocks : 4096), 256, 0, up->st>>>(type, up->raw[k], bb, planes,
										       (row0 + r0) * nb, nblk);
		RN_CU_LAUNCHED();
		RN_CU_CHECK(cudaEventRecord(up->ev[k], up->st));
		up->busy[k] = true;
	}
	return RN_OK;
}

int rn_cu_upload_cat(struct rn_cu_uploader *up, const struct rn_tensor *const *ts, int n, struct rn_cu_w *w,
		     struct rn_error *err)
{
	int rc;
	int64_t rows = 0;
	for (int i = 0; i < n; i++) {
		if ((rc = rn_cu_w_check(ts[i], err)))
			return rc;
		if (ts[i]->type != ts[0]->type || ts[i]->ne[0] != ts[0]->ne[0])
			return rn_error_set(err, RN_ERR_TENSOR, "tensors '%s' and '%s' cannot be one matrix (type or row length)",
					    ts[0]->name, ts[i]->name);
		rows += ts[i]->ne[1];
	}
	const int type = rn_cw_from_gguf(ts[0]->type);
	const int64_t cols = ts[0]->ne[0];
	int64_t off[RN_CU_MAX_PLANES + 1];
	const int64_t total = rn_cw_layout(type, rows, cols, off);
	memset(w, 0, sizeof *w);
	w->gguf_type = ts[0]->type;
	w->name = ts[0]->name;
	RN_CU_CHECK(cudaMalloc(&w->buf, (size_t)total));
	w->bytes = (size_t)total;
	w->m = rn_cw_mat_make(type, rows, cols, (const uint8_t *)w->buf, off);
	if (type == CW_FP8) /* the scale grid's tiles past the last row stay zero (never read) */
		RN_CU_CHECK(cudaMemsetAsync((uint8_t *)w->buf + off[1], 0, (size_t)(off[2] - off[1]), up->st));
	int64_t row0 = 0;
	for (int i = 0; i < n; i++) {
		if ((rc = upload_rows(up, ts[i], w, row0, off, err)))
			return rc;
		row0 += ts[i]->ne[1];
	}
	return RN_OK;
}

int rn_cu_upload(struct rn_cu_uploader *up, const struct rn_tensor *t, struct rn_cu_w *w, struct rn_error *err)
{
	return rn_cu_upload_cat(up, &t, 1, w, err);
}
