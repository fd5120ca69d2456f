/* runner/cuda/forward.cu — the CUDA backend instance: load (memory check, weight upload, KV cache, scratch),
 * the transformer forward pass over a batch of rows from several sequences, and the KV-cache operations.
 *
 * A forward call with at most RN_CU_DECODE_MAX rows is a decode step: int8/f32 matvecs and split-K attention,
 * captured once per shape (rows, outputs, attention splits) as a CUDA graph and replayed with the step's
 * arrays copied in by the graph's first node. Larger calls are prompt chunks: f16/FP8 tensor-core GEMMs and
 * GEMM attention, run eagerly. The residual stream stays in f32 on the device throughout; only the logits (or
 * the hidden states, or with GPU sampling only the token ids) come back.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "runner/cuda/internal.cuh"

/* ---------------------------------------------------------------------------------------------- sizes */

struct cu_sizes {
	uint64_t weights, kv, scratch, prefill_cache;
};

static bool use_mmv(int n) { return n <= RN_CU_DECODE_MAX; }

static uint64_t kv_bytes_for(const struct rn_model *m, const struct rn_load_params *p)
{
	const uint64_t kv_dim = (uint64_t)m->hp.n_head_kv * (uint64_t)m->hp.head_dim;
	const uint64_t cells = 2ull * (uint64_t)m->hp.n_layer * (uint64_t)p->n_seq * (uint64_t)p->n_ctx;
	return p->kv_type == RN_KV_Q8_0 ? cells * kv_dim + cells * (kv_dim / 32) * 2 : cells * kv_dim * 2;
}

static int max_cols_of(const struct rn_model *m)
{
	int mc = m->hp.n_embd;
	int q = m->hp.n_head * m->hp.head_dim;
	if (q > mc)
		mc = q;
	if (m->hp.n_ff > mc)
		mc = m->hp.n_ff;
	return (mc + 255) / 256 * 256;
}

static int rope_tab_positions(const struct rn_load_params *p)
{
	int n = p->n_ctx > 4096 ? p->n_ctx : 4096;
	return n < RN_CU_ROPE_TAB_MAX ? n : RN_CU_ROPE_TAB_MAX;
}

static uint64_t scratch_bytes_for(const struct rn_model *m, const struct rn_load_params *p)
{
	const uint64_t B = (uint64_t)p->n_batch, E = (uint64_t)m->hp.n_embd, Q = (uint64_t)m->hp.n_head * m->hp.head_dim;
	const uint64_t KV = (uint64_t)m->hp.n_head_kv * m->hp.head_dim, F = (uint64_t)m->hp.n_ff;
	const uint64_t MC = (uint64_t)max_cols_of(m), V = (uint64_t)m->hp.n_vocab, D = (uint64_t)m->hp.head_dim;
	const uint64_t R = (uint64_t)rn_cu_f8_rows(B < RN_CU_DECODE_MAX ? RN_CU_DECODE_MAX : B); /* FP8 GEMMs pad to 4 */
	uint64_t s = 0;
	s += 4 * (R * E + R * MC + R * Q + R * (Q + 2 * KV) + R * Q + 2 * R * (F > MC ? F : MC)); /* x xn q qkv att hb hb2 */
	s += 4 * (R * E + R * Q);                                                          /* gathered x, att */
	s += 4 * (uint64_t)RN_CU_OUT_CHUNK * V;                                            /* logits */
	s += R * MC * (1 + 1 + 2 + 2 + 1) + R * (MC / 32) * 12 + R * (MC / 256) * 4 + R * (MC / 16) * 2 +
	     R * (MC / 128) * 4;                                                            /* activation formats */
	s += 4 * (uint64_t)RN_CU_DECODE_MAX * m->hp.n_head * RN_CU_ATT_MAX_SPLIT * (D + 2); /* attention partials */
	if (B > RN_CU_DECODE_MAX) {
		s += RN_CU_GEMM_CHUNK; /* dequantization; the flash prefill attention needs no scratch */
	}
	s += RN_CU_BLAS_WS;
	s += 4ull * (uint64_t)rope_tab_positions(p) * (uint64_t)m->hp.n_rot;
	s += 2ull * m->hp.n_layer * RN_CU_KVTMP_CELLS * KV * 2;
	s += rn_cu_sample_scratch_bytes(m->hp.n_vocab) + (uint64_t)RN_CU_OUT_CHUNK * RN_CUDA_HISTORY_MAX * 4;
	s += 1ull << 20; /* step arrays, small vectors */
	return s;
}

static const struct rn_tensor *layer_w(const struct rn_layer *l, int i)
{
	const struct rn_tensor *t[7] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->w_gate, &l->w_up, &l->w_down};
	return t[i];
}

/* The uploaded matrices of a layer: its Q/K/V parts, O, gate, up, down; returns how many (at most 7). */
static int layer_mats(struct rn_cu_layer *L, struct rn_cu_w **ws)
{
	int k = 0;
	for (int i = 0; i < L->n_qkv; i++)
		ws[k++] = &L->qkv[i];
	ws[k++] = &L->wo;
	ws[k++] = &L->gate;
	ws[k++] = &L->up;
	ws[k++] = &L->down;
	return k;
}

/* Q, K and V in one matvec where their types allow (ORUN_CUDA_QKV_FUSE=0: three, as before; for comparisons). */
static bool qkv_fuse_wanted(void)
{
	const char *e = getenv("ORUN_CUDA_QKV_FUSE");
	return !(e && strcmp(e, "0") == 0);
}

/* f16 copies of the quantized layer weights for prefill: 0 = off (ORUN_CUDA_PREFILL_F16=0), 1 = when memory
 * allows (the default: the load drops them rather than fail), 2 = required (ORUN_CUDA_PREFILL_F16=1: the load
 * fails without room for them). */
static int prefill_cache_wanted(void)
{
	const char *e = getenv("ORUN_CUDA_PREFILL_F16");
	if (!e || !*e)
		return 1;
	return strcmp(e, "0") == 0 ? 0 : 2;
}

/* Checks every tensor the backend will upload and sums the device bytes. */
static int sizes_for(const struct rn_model *m, const struct rn_load_params *p, struct cu_sizes *sz,
		     struct rn_error *err)
{
	memset(sz, 0, sizeof *sz);
	const struct rn_hparams *hp = &m->hp;
	if (hp->head_dim != 64 && hp->head_dim != 128 && hp->head_dim != 256)
		return rn_error_set(err, RN_ERR_INVALID_ARG, "head size %d has no CUDA attention kernel (64, 128, 256)",
				    hp->head_dim);
	if (hp->n_rot != hp->head_dim)
		return rn_error_set(err, RN_ERR_INVALID_ARG, "partial rotary embeddings are not supported by the CUDA backend");
	int rc;
	for (int l = 0; l < hp->n_layer; l++)
		for (int i = 0; i < 7; i++) {
			const struct rn_tensor *t = layer_w(&m->layers[l], i);
			if ((rc = rn_cu_w_check(t, err)))
				return rc;
			sz->weights += rn_cu_w_bytes(t);
			int type = rn_cw_from_gguf(t->type);
			if (type != CW_F16 && type != CW_BF16)
				sz->prefill_cache += (uint64_t)t->ne[0] * (uint64_t)t->ne[1] * 2;
		}
	if ((rc = rn_cu_w_check(&m->tok_embd, err)))
		return rc;
	sz->weights += rn_cu_w_bytes(&m->tok_embd);
	if (!hp->tied_output) {
		if ((rc = rn_cu_w_check(&m->output, err)))
			return rc;
		sz->weights += rn_cu_w_bytes(&m->output);
	}
	sz->kv = kv_bytes_for(m, p);
	sz->scratch = scratch_bytes_for(m, p);
	if (!prefill_cache_wanted() || p->n_batch <= RN_CU_DECODE_MAX) /* no prefill GEMMs, no copies */
		sz->prefill_cache = 0;
	return RN_OK;
}

extern "C" int rn_cuda_estimate(const struct rn_model *m, const struct rn_load_params *p,
				struct rn_cuda_estimate *e, struct rn_error *err)
{
	memset(e, 0, sizeof *e);
	struct cu_sizes sz;
	int rc = sizes_for(m, p, &sz, err);
	if (rc)
		return rc;
	e->weights = sz.weights + (prefill_cache_wanted() == 2 ? sz.prefill_cache : 0); /* else optional */
	e->kv = sz.kv;
	e->scratch = sz.scratch;
	e->reserve = RN_CU_RESERVE;
	e->total = e->weights + e->kv + e->scratch + e->reserve;
	size_t fr = 0, tot = 0;
	cudaError_t ce = cudaSetDevice(p->device);
	if (ce == cudaSuccess)
		ce = cudaMemGetInfo(&fr, &tot);
	if (ce != cudaSuccess)
		return rn_cuda_set_error(err, ce, "cudaMemGetInfo", __FILE__, __LINE__);
	e->device_free = fr;
	e->device_total = tot;
	return RN_OK;
}

extern "C" int rn_cuda_mem_info(int dev, uint64_t *free_bytes, uint64_t *total_bytes)
{
	size_t fr = 0, tot = 0;
	if (cudaSetDevice(dev) != cudaSuccess || cudaMemGetInfo(&fr, &tot) != cudaSuccess) {
		(void)cudaGetLastError();
		return -1;
	}
	*free_bytes = fr;
	*total_bytes = tot;
	return 0;
}

/* ---------------------------------------------------------------------------------------------- free */

static void note_peak(struct rn_cu *c)
{
	size_t fr = 0, tot = 0;
	if (cudaMemGetInfo(&fr, &tot) == cudaSuccess && tot - fr > c->stats.peak_used)
		c->stats.peak_used = tot - fr;
}

static void graphs_clear(struct rn_cu *c)
{
	for (int i = 0; i < c->n_graphs; i++)
		if (c->graphs[i].exec)
			cudaGraphExecDestroy(c->graphs[i].exec);
	c->n_graphs = 0;
}

extern "C" void rn_cuda_free(void *state)
{
	struct rn_cu *c = (struct rn_cu *)state;
	if (!c)
		return;
	if (c->st)
		cudaStreamSynchronize(c->st);
	graphs_clear(c);
	rn_cu_ltplans_free(c);
	if (c->layers) {
		for (int l = 0; l < c->n_layer; l++) {
			struct rn_cu_layer *L = &c->layers[l];
			struct rn_cu_w *ws[7] = {&L->qkv[0], &L->qkv[1], &L->qkv[2], &L->wo, &L->gate, &L->up, &L->down};
			for (int i = 0; i < 7; i++)
				rn_cu_w_free(ws[i]);
		}
		free(c->layers);
	}
	if (c->output.buf != c->tok_embd.buf)
		rn_cu_w_free(&c->output);
	rn_cu_w_free(&c->tok_embd);
	void *dev_ptrs[] = {c->smalls, c->kv, c->kv_d, c->kv_tmp, c->rope_tab, c->step_dev, c->x, c->xn, c->q, c->qkv,
			    c->att, c->hb, c->hb2, c->logits, c->act.q32, c->act.d32, c->act.s32, c->act.sm32, c->act.q256,
			    c->act.d256, c->act.s256, c->act.h16, c->act.b16, c->act.f8, c->act.f8s, c->att_part, c->w16,
			    c->sampled, c->samp_scratch, c->samp_out_dev,
			    c->samp_hist_dev, c->blas_ws, c->xg, c->attg, c->rot_cs};
	for (size_t i = 0; i < sizeof dev_ptrs / sizeof dev_ptrs[0]; i++)
		if (dev_ptrs[i])
			cudaFree(dev_ptrs[i]);
	for (int k = 0; k < RN_CU_RING; k++) {
		if (c->step_ring[k])
			cudaFreeHost(c->step_ring[k]);
		if (c->out_ring[k])
			cudaFreeHost(c->out_ring[k]);
		if (c->step_ev[k])
			cudaEventDestroy(c->step_ev[k]);
		if (c->out_ev[k])
			cudaEventDestroy(c->out_ev[k]);
	}
	if (c->blas)
		cublasDestroy(c->blas);
	if (c->lt)
		cublasLtDestroy(c->lt);
	if (c->st)
		cudaStreamDestroy(c->st);
	free(c);
}

/* ---------------------------------------------------------------------------------------------- load */

static int dalloc(struct rn_cu *c, void **p, size_t bytes, struct rn_error *err)
{
	cudaError_t e = cudaMalloc(p, bytes ? bytes : 16);
	if (e != cudaSuccess) {
		(void)cudaGetLastError();
		*p = NULL;
		return rn_error_set(err, RN_ERR_NOMEM, "cannot allocate %.1f MiB on the GPU (%s)", (double)bytes / 1048576.0,
				    cudaGetErrorString(e));
	}
	c->scratch_bytes += bytes;
	return RN_OK;
}

#define DALLOC(ptr, bytes)                                                                               \
	do {                                                                                             \
		if ((rc = dalloc(c, (void **)&(ptr), (size_t)(bytes), err)))                             \
			goto fail;                                                                       \
	} while (0)

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int pick_hpb(int g)
{
	for (int h = g < 8 ? g : 8; h >= 1; h--)
		if (g % h == 0)
			return h;
	return 1;
}

extern "C" int rn_cuda_load(const struct rn_model *m, const struct rn_load_params *p, void **state,
			    struct rn_error *err)
{
	const struct rn_hparams *hp = &m->hp;
	struct cu_sizes sz;
	int rc = sizes_for(m, p, &sz, err);
	if (rc)
		return rc;
	if (rn_cuda_device_count() <= p->device)
		return rn_error_set(err, RN_ERR_BACKEND, "CUDA device %d is not present (%d visible)", p->device,
				    rn_cuda_device_count());
	RN_CU_CHECK(cudaSetDevice(p->device));
	rn_cu_mmv_init(p->device);
	size_t fr = 0, tot = 0;
	RN_CU_CHECK(cudaMemGetInfo(&fr, &tot));
	char dev[128];
	rn_cuda_device_describe(p->device, dev, sizeof dev);
	if (prefill_cache_wanted() == 1 && sz.weights + sz.prefill_cache + sz.kv + sz.scratch + RN_CU_RESERVE > fr)
		sz.prefill_cache = 0; /* the f16 copies are optional: dequantize per call instead */
	const uint64_t need = sz.weights + sz.prefill_cache + sz.kv + sz.scratch + RN_CU_RESERVE;
	if (need > fr)
		return rn_error_set(err, RN_ERR_NOMEM,
				    "the model does not fit on GPU %d (%s): it needs %.2f GiB (weights %.2f GiB%s, KV cache "
				    "%.2f GiB for %d x %d tokens %s, scratch %.2f GiB, reserve %.2f GiB) but %.2f GiB are free; "
				    "use a smaller num_ctx / num_batch / OLLAMA_NUM_PARALLEL or the CPU (num_gpu 0)",
				    p->device, dev, (double)need / 1073741824.0,
				    (double)(sz.weights + sz.prefill_cache) / 1073741824.0,
				    sz.prefill_cache ? " incl. f16 prefill copies" : "", (double)sz.kv / 1073741824.0, p->n_seq,
				    p->n_ctx, rn_kv_type_name(p->kv_type), (double)sz.scratch / 1073741824.0,
				    (double)RN_CU_RESERVE / 1073741824.0, (double)fr / 1073741824.0);

	struct rn_cu *c = (struct rn_cu *)calloc(1, sizeof *c);
	if (!c)
		return rn_error_set(err, RN_ERR_NOMEM, "out of memory");
	struct rn_cu_uploader *up = NULL;
	const double t0 = now_s();
	c->dev = p->device;
	c->m = m;
	c->p = *p;
	snprintf(c->stats.device, sizeof c->stats.device, "%s", dev);
	rn_rope_init(&c->rope, m, p->rope_freq_base, p->rope_freq_scale);
	c->n_layer = hp->n_layer;
	c->n_embd = hp->n_embd;
	c->n_head = hp->n_head;
	c->n_head_kv = hp->n_head_kv;
	c->head_dim = hp->head_dim;
	c->q_dim = hp->n_head * hp->head_dim;
	c->kv_dim = hp->n_head_kv * hp->head_dim;
	c->qkv_dim = c->q_dim + 2 * c->kv_dim;
	c->n_ff = hp->n_ff;
	c->n_vocab = hp->n_vocab;
	c->n_rot = hp->n_rot;
	c->max_cols = max_cols_of(m);
	c->eps = hp->norm_eps;
	c->kq_scale = 1.0f / sqrtf((float)hp->head_dim);
	c->hpb = pick_hpb(hp->n_head / hp->n_head_kv);
	{
		const char *g = getenv("ORUN_CUDA_GRAPHS");
		c->use_graphs = !(g && strcmp(g, "0") == 0);
	}
	if (cudaStreamCreateWithFlags(&c->st, cudaStreamNonBlocking) != cudaSuccess) {
		rc = rn_error_set(err, RN_ERR_BACKEND, "cannot create a CUDA stream");
		goto fail;
	}
	if (cublasCreate(&c->blas) != CUBLAS_STATUS_SUCCESS || cublasLtCreate(&c->lt) != CUBLAS_STATUS_SUCCESS) {
		rc = rn_error_set(err, RN_ERR_BACKEND, "cannot initialise cuBLAS");
		goto fail;
	}
	DALLOC(c->blas_ws, RN_CU_BLAS_WS);
	if (cublasSetWorkspace(c->blas, c->blas_ws, RN_CU_BLAS_WS) != CUBLAS_STATUS_SUCCESS ||
	    cublasSetStream(c->blas, c->st) != CUBLAS_STATUS_SUCCESS) {
		rc = rn_error_set(err, RN_ERR_BACKEND, "cannot configure cuBLAS");
		goto fail;
	}

	/* weights */
	if ((rc = rn_cu_uploader_new(&up, c->st, err)))
		goto fail;
	c->layers = (struct rn_cu_layer *)calloc((size_t)hp->n_layer, sizeof *c->layers);
	if (!c->layers) {
		rc = rn_error_set(err, RN_ERR_NOMEM, "out of memory");
		goto fail;
	}
	for (int l = 0; l < hp->n_layer; l++) {
		struct rn_cu_layer *L = &c->layers[l];
		const struct rn_layer *ml = &m->layers[l];
		const struct rn_tensor *t3[3] = {&ml->wq, &ml->wk, &ml->wv};
		int types[3], part[3];
		int64_t rows[3];
		for (int i = 0; i < 3; i++) {
			types[i] = rn_cw_from_gguf(t3[i]->type);
			rows[i] = t3[i]->ne[1];
		}
		L->n_qkv = rn_cu_qkv_plan(types, rows, qkv_fuse_wanted(), part);
		for (int pi = 0; pi < L->n_qkv; pi++) {
			const struct rn_tensor *ts[3];
			int nt = 0;
			for (int i = 0; i < 3; i++)
				if (part[i] == pi)
					ts[nt++] = t3[i];
			if ((rc = rn_cu_upload_cat(up, ts, nt, &L->qkv[pi], err)))
				goto fail;
		}
		struct rn_cu_w *rest[4] = {&L->wo, &L->gate, &L->up, &L->down};
		for (int i = 0; i < 4; i++)
			if ((rc = rn_cu_upload(up, layer_w(ml, 3 + i), rest[i], err)))
				goto fail;
	}
	if ((rc = rn_cu_upload(up, &m->tok_embd, &c->tok_embd, err)))
		goto fail;
	if (hp->tied_output || m->output.data == m->tok_embd.data)
		c->output = c->tok_embd;
	else if ((rc = rn_cu_upload(up, &m->output, &c->output, err)))
		goto fail;
	{
		/* the small vectors: norms and biases, converted to f32 by the model loader */
		size_t n_small = (size_t)hp->n_embd;
		for (int l = 0; l < hp->n_layer; l++) {
			const struct rn_layer *ml = &m->layers[l];
			n_small += 2 * (size_t)hp->n_embd + (ml->bo ? hp->n_embd : 0) + (ml->bq ? c->q_dim : 0) +
				   (ml->bk ? c->kv_dim : 0) + (ml->bv ? c->kv_dim : 0) + (ml->q_norm ? hp->head_dim : 0) +
				   (ml->k_norm ? hp->head_dim : 0);
		}
		DALLOC(c->smalls, n_small * sizeof(float));
		float *h = (float *)malloc(n_small * sizeof(float));
		if (!h) {
			rc = rn_error_set(err, RN_ERR_NOMEM, "out of memory");
			goto fail;
		}
		size_t o = 0;
#define SMALL(dst, src, n)                                                                               \
	do {                                                                                             \
		if (src) {                                                                               \
			memcpy(h + o, (src), (size_t)(n) * sizeof(float));                              \
			(dst) = c->smalls + o;                                                           \
			o += (size_t)(n);                                                                \
		} else                                                                                   \
			(dst) = NULL;                                                                    \
	} while (0)
		SMALL(c->output_norm, m->output_norm, hp->n_embd);
		for (int l = 0; l < hp->n_layer; l++) {
			const struct rn_layer *ml = &m->layers[l];
			struct rn_cu_layer *L = &c->layers[l];
			SMALL(L->attn_norm, ml->attn_norm, hp->n_embd);
			SMALL(L->ffn_norm, ml->ffn_norm, hp->n_embd);
			SMALL(L->bo, ml->bo, hp->n_embd);
			SMALL(L->bq, ml->bq, c->q_dim);
			SMALL(L->bk, ml->bk, c->kv_dim);
			SMALL(L->bv, ml->bv, c->kv_dim);
			SMALL(L->q_norm, ml->q_norm, hp->head_dim);
			SMALL(L->k_norm, ml->k_norm, hp->head_dim);
		}
#undef SMALL
		rc = rn_cu_upload_raw(up, h, o * sizeof(float), c->smalls, err);
		free(h);
		if (rc)
			goto fail;
	}
	rc = rn_cu_uploader_finish(up, err);
	up = NULL;
	if (rc)
		goto fail;
	for (int l = 0; l < hp->n_layer; l++) {
		struct rn_cu_layer *L = &c->layers[l];
		struct rn_cu_w *ws[7];
		const int nw = layer_mats(L, ws);
		for (int i = 0; i < nw; i++)
			c->stats.weight_bytes += ws[i]->bytes;
	}
	c->stats.weight_bytes += c->tok_embd.bytes + (c->output.buf != c->tok_embd.buf ? c->output.bytes : 0);
	c->stats.upload_seconds = now_s() - t0;

	/* KV cache */
	c->kv_seq_stride = (size_t)p->n_ctx * (size_t)c->kv_dim;
	c->kv_plane_stride = (size_t)p->n_seq * c->kv_seq_stride;
	c->kv_bytes = (size_t)sz.kv;
	if (p->kv_type == RN_KV_Q8_0) {
		size_t nv = 2 * (size_t)hp->n_layer * c->kv_plane_stride;
		if ((rc = dalloc(c, (void **)&c->kv, nv, err)) || (rc = dalloc(c, (void **)&c->kv_d, nv / 32 * 2, err)))
			goto fail;
		RN_CU_TRY(cudaMemsetAsync(c->kv, 0, nv, c->st), err, cuda_fail);
		RN_CU_TRY(cudaMemsetAsync(c->kv_d, 0, nv / 32 * 2, c->st), err, cuda_fail);
	} else {
		if ((rc = dalloc(c, (void **)&c->kv, c->kv_bytes, err)))
			goto fail;
		RN_CU_TRY(cudaMemsetAsync(c->kv, 0, c->kv_bytes, c->st), err, cuda_fail);
	}
	c->scratch_bytes -= c->kv_bytes;
	DALLOC(c->kv_tmp, 2ull * hp->n_layer * RN_CU_KVTMP_CELLS * c->kv_dim * 2);

	/* RoPE table: the CPU backend's cos/sin, so both rotate identically */
	{
		c->rope_tab_n = rope_tab_positions(p);
		size_t nt = (size_t)c->rope_tab_n * (size_t)c->n_rot;
		float *h = (float *)malloc(nt * sizeof(float));
		if (!h) {
			rc = rn_error_set(err, RN_ERR_NOMEM, "out of memory");
			goto fail;
		}
		for (int pos = 0; pos < c->rope_tab_n; pos++)
			rn_rope_cos_sin(&c->rope, pos, h + (size_t)pos * c->n_rot);
		rc = dalloc(c, (void **)&c->rope_tab, nt * sizeof(float), err);
		cudaError_t ce = rc ? cudaSuccess : cudaMemcpy(c->rope_tab, h, nt * sizeof(float), cudaMemcpyHostToDevice);
		free(h);
		if (rc)
			goto fail;
		RN_CU_TRY(ce, err, cuda_fail);
		DALLOC(c->rot_cs, (size_t)c->n_rot * sizeof(float));
	}

	/* step arrays: [tok n][pos n][seq n][cell n][out_row n][perm n][cs_extra n x n_rot], packed per call */
	{
		const size_t B = (size_t)(p->n_batch > RN_CU_DECODE_MAX ? p->n_batch : RN_CU_DECODE_MAX);
		c->step_bytes = B * 6 * sizeof(int32_t) + 64 + B * (size_t)c->n_rot * sizeof(float);
		DALLOC(c->step_dev, c->step_bytes);
		for (int k = 0; k < RN_CU_RING; k++) {
			RN_CU_TRY(cudaMallocHost(&c->step_ring[k], c->step_bytes), err, cuda_fail);
			RN_CU_TRY(cudaMallocHost((void **)&c->out_ring[k], (size_t)RN_CU_OUT_CHUNK * 4), err, cuda_fail);
			RN_CU_TRY(cudaEventCreateWithFlags(&c->step_ev[k], cudaEventDisableTiming), err, cuda_fail);
			RN_CU_TRY(cudaEventCreateWithFlags(&c->out_ev[k], cudaEventDisableTiming), err, cuda_fail);
		}
	}

	/* scratch (rows rounded up to 4: cuBLASLt's FP8 GEMMs run on rn_cu_f8_rows(n) rows) */
	{
		const size_t B = (size_t)rn_cu_f8_rows(p->n_batch > RN_CU_DECODE_MAX ? p->n_batch : RN_CU_DECODE_MAX);
		const size_t E = (size_t)c->n_embd, Q = (size_t)c->q_dim, KV = (size_t)c->kv_dim, MC = (size_t)c->max_cols;
		const size_t F = (size_t)c->n_ff > MC ? (size_t)c->n_ff : MC;
		DALLOC(c->x, B * E * 4);
		DALLOC(c->xn, B * MC * 4);
		DALLOC(c->q, B * Q * 4);
		DALLOC(c->qkv, B * (Q + 2 * KV) * 4);
		DALLOC(c->att, B * Q * 4);
		DALLOC(c->hb, B * F * 4);
		DALLOC(c->hb2, B * F * 4);
		DALLOC(c->xg, B * E * 4);
		DALLOC(c->attg, B * Q * 4);
		DALLOC(c->logits, (size_t)RN_CU_OUT_CHUNK * (size_t)c->n_vocab * 4);
		c->act.ldq = (int64_t)MC;
		DALLOC(c->act.q32, B * MC);
		DALLOC(c->act.d32, B * (MC / 32) * 4);
		DALLOC(c->act.s32, B * (MC / 32) * 4);
		DALLOC(c->act.sm32, B * (MC / 32) * 4);
		DALLOC(c->act.q256, B * MC);
		DALLOC(c->act.d256, B * (MC / 256) * 4);
		DALLOC(c->act.s256, B * (MC / 16) * 2);
		DALLOC(c->act.h16, B * MC * 2);
		DALLOC(c->act.b16, B * MC * 2);
		DALLOC(c->act.f8, B * MC);
		DALLOC(c->act.f8s, B * (MC / 128) * 4);
		c->max_splits = RN_CU_ATT_MAX_SPLIT;
		DALLOC(c->att_part, (size_t)RN_CU_DECODE_MAX * c->n_head * RN_CU_ATT_MAX_SPLIT * (c->head_dim + 2) * 4);
		if (p->n_batch > RN_CU_DECODE_MAX) {
			DALLOC(c->w16, RN_CU_GEMM_CHUNK);
		}
		DALLOC(c->sampled, (size_t)p->n_seq * 4);
		RN_CU_TRY(cudaMemsetAsync(c->sampled, 0, (size_t)p->n_seq * 4, c->st), err, cuda_fail);
		c->samp_scratch_bytes = rn_cu_sample_scratch_bytes(c->n_vocab);
		DALLOC(c->samp_scratch, c->samp_scratch_bytes);
		DALLOC(c->samp_out_dev, (size_t)RN_CU_OUT_CHUNK * 4);
		DALLOC(c->samp_hist_dev, (size_t)RN_CUDA_HISTORY_MAX * 4);
	}
	c->stats.kv_bytes = c->kv_bytes;

	/* FP8 prefill through cuBLASLt where it agrees with the f16 path; optional f16 copies for prefill */
	if (p->n_batch > RN_CU_DECODE_MAX) {
		bool any_fp8 = false, all_lt = true;
		for (int l = 0; l < hp->n_layer; l++) {
			struct rn_cu_layer *L = &c->layers[l];
			struct rn_cu_w *ws[7];
			const int nw = layer_mats(L, ws);
			for (int i = 0; i < nw; i++) {
				if (ws[i]->m.type != CW_FP8)
					continue;
				any_fp8 = true;
				if ((rc = rn_cu_fp8_probe(c, ws[i], err)))
					goto fail;
				all_lt = all_lt && ws[i]->lt_fp8;
			}
		}
		c->stats.prefill_fp8_lt = any_fp8 && all_lt;
		if (any_fp8 && !all_lt) /* no silent fallback: say which probe failed and why */
			fprintf(stderr, "orun cuda: FP8 prefill GEMMs use the f16 path: %s\n", c->stats.prefill_fp8_why);
		if (sz.prefill_cache) {
			for (int l = 0; l < hp->n_layer; l++) {
				struct rn_cu_layer *L = &c->layers[l];
				struct rn_cu_w *ws[7];
				const int nw = layer_mats(L, ws);
				for (int i = 0; i < nw; i++) {
					struct rn_cu_w *w = ws[i];
					if (w->m.type == CW_F16 || w->m.type == CW_BF16 || w->lt_fp8)
						continue;
					DALLOC(w->w16, (size_t)(w->m.rows * w->m.cols) * 2);
					if ((rc = rn_cu_dequant_f16(w, 0, w->m.rows, w->w16, c->st, err)))
						goto fail;
				}
			}
			c->stats.prefill_cache = 1;
		}
	}
	RN_CU_TRY(cudaStreamSynchronize(c->st), err, cuda_fail);
	c->stats.scratch_bytes = c->scratch_bytes;
	note_peak(c);
	*state = c;
	return RN_OK;
cuda_fail:
	rc = RN_ERR_BACKEND;
fail:
	if (up) {
		struct rn_error ignored;
		(void)rn_cu_uploader_finish(up, &ignored);
	}
	rn_cuda_free(c);
	return rc;
}

/* ---------------------------------------------------------------------------------------------- forward */

/* Formats the input of these weights needs for an n-row linear layer. */
static unsigned fmt_for(const struct rn_cu_w *w, int n)
{
	if (use_mmv(n)) {
		switch (rn_cw_table[w->m.type].act) {
		case CA_Q8_32: return PREP_Q8_32;
		case CA_Q8_256: return PREP_Q8_256;
		case CA_F16: return PREP_F16;
		case CA_BF16: return PREP_BF16;
		default: return PREP_F32;
		}
	}
	if (w->lt_fp8) /* f16 as well: the f16 path serves a row count cuBLASLt refuses (rn_cu_gemm) */
		return PREP_FP8 | PREP_F16;
	return w->m.type == CW_BF16 ? PREP_BF16 : PREP_F16;
}

static int prep(struct rn_cu *c, const float *in, int64_t ld_in, const float *mul, const float *norm, int cols,
		float *out, int64_t ld_out, const struct rn_cu_w *const *ws, int nw, int n, struct rn_error *err)
{
	struct rn_cu_prep p;
	memset(&p, 0, sizeof p);
	p.in = in;
	p.ld_in = ld_in;
	p.mul = mul;
	p.norm = norm;
	p.eps = c->eps;
	p.cols = cols;
	for (int i = 0; i < nw; i++)
		p.fmt |= fmt_for(ws[i], n);
	p.out = c->act;
	p.out.x = out;
	p.out.ldx = ld_out;
	p.n_rows_total = n;
	c->act.x = out;
	c->act.ldx = ld_out;
	return rn_cu_prep(&p, n, c->st, err);
}

static int linear(struct rn_cu *c, const struct rn_cu_w *w, int n, float *y, int64_t ldy, const float *bias,
		  bool accumulate, struct rn_error *err)
{
	if (use_mmv(n))
		return rn_cu_mmv(w, &c->act, n, y, ldy, bias, accumulate, c->st, err);
	return rn_cu_gemm(c, w, &c->act, n, y, ldy, bias, accumulate, err);
}

/* Point the step arrays (device and host) at their places for a call of n rows. */
static void step_layout(struct rn_cu *c, int n)
{
	int32_t *d = (int32_t *)c->step_dev, *h = (int32_t *)c->step_ring[c->step_slot];
	struct rn_cu_step *S[2] = {&c->sd, &c->sh};
	int32_t *b[2] = {d, h};
	for (int i = 0; i < 2; i++) {
		S[i]->tok = b[i];
		S[i]->pos = b[i] + n;
		S[i]->seq = b[i] + 2 * n;
		S[i]->cell = b[i] + 3 * n;
		S[i]->out_row = b[i] + 4 * n;
		S[i]->perm = b[i] + 5 * n;
		S[i]->cs_extra = (float *)(b[i] + ((6 * n + 15) / 16 * 16));
	}
	c->perm_dev = c->sd.perm;
}

static size_t step_used_bytes(const struct rn_cu *c, int n)
{
	return (size_t)((6 * n + 15) / 16 * 16) * sizeof(int32_t) + (size_t)n * (size_t)c->n_rot * sizeof(float);
}

/* The device work of one forward call after its step arrays are on the device, up to and including the LM
 * head of the first min(n_out, OUT_CHUNK) rows. Enqueued on c->st; also what a decode graph captures. */
static int enqueue(struct rn_cu *c, int n, int n_out, int splits, bool want_logits, const int32_t *seg, int n_seg,
		   struct rn_error *err)
{
	int rc;
	const int E = c->n_embd;
	if ((rc = rn_cu_embed(c, n, c->st, err)))
		return rc;
	float *x = c->x, *att = c->att;
	int T = n;
	for (int l = 0; l < c->n_layer; l++) {
		const struct rn_cu_layer *L = &c->layers[l];
		const bool last = l == c->n_layer - 1;
		const struct rn_cu_w *qkv[3] = {&L->qkv[0], &L->qkv[1], &L->qkv[2]};
		if ((rc = prep(c, x, E, NULL, L->attn_norm, E, c->xn, E, qkv, L->n_qkv, T, err)))
			return rc;
		/* one matvec (or GEMM) per uploaded part, each into its columns of the Q|K|V rows */
		for (int i = 0, r0 = 0; i < L->n_qkv; r0 += (int)L->qkv[i].m.rows, i++)
			if ((rc = linear(c, &L->qkv[i], T, c->qkv + r0, c->qkv_dim, NULL, false, err)))
				return rc;
		if ((rc = rn_cu_qkv_post(c, L, l, T, c->st, err)))
			return rc;
		rc = use_mmv(T) ? rn_cu_attention_decode(c, l, T, splits, c->st, err)
				: rn_cu_attention_prefill(c, l, T, seg, n_seg, c->st, err);
		if (rc)
			return rc;
		if (last) {
			if (n_out == 0)
				return RN_OK;
			/* out_row is increasing (runner/backend.h), so n_out == n means every row in order: nothing to
			 * gather (a decode step's usual case: two launches fewer) */
			if (n_out != n) {
				if ((rc = rn_cu_gather_rows(c->attg, att, c->q_dim, c->q_dim, c->sd.out_row, n_out, c->st, err)) ||
				    (rc = rn_cu_gather_rows(c->xg, x, E, E, c->sd.out_row, n_out, c->st, err)))
					return rc;
				att = c->attg;
				x = c->xg;
			}
			T = n_out;
		}
		const struct rn_cu_w *wo[1] = {&L->wo};
		const struct rn_cu_w *gu[2] = {&L->gate, &L->up};
		const struct rn_cu_w *dn[1] = {&L->down};
		if ((rc = prep(c, att, c->q_dim, NULL, NULL, c->q_dim, att, c->q_dim, wo, 1, T, err)) ||
		    (rc = linear(c, &L->wo, T, x, E, L->bo, true, err)) ||
		    (rc = prep(c, x, E, NULL, L->ffn_norm, E, c->xn, E, gu, 2, T, err)))
			return rc;
		if (use_mmv(T) && L->gate.m.type == L->up.m.type) {
			if ((rc = rn_cu_mmv_gu(&L->gate, &L->up, &c->act, T, c->hb, c->n_ff, c->st, err)) ||
			    (rc = prep(c, c->hb, c->n_ff, NULL, NULL, c->n_ff, c->hb, c->n_ff, dn, 1, T, err)))
				return rc;
		} else {
			if ((rc = linear(c, &L->gate, T, c->hb, c->n_ff, NULL, false, err)) ||
			    (rc = linear(c, &L->up, T, c->hb2, c->n_ff, NULL, false, err)) ||
			    (rc = prep(c, c->hb, c->n_ff, c->hb2, NULL, c->n_ff, c->hb, c->n_ff, dn, 1, T, err)))
				return rc;
		}
		if ((rc = linear(c, &L->down, T, x, E, NULL, true, err)))
			return rc;
	}
	/* output norm into xn (f32, also the hidden states); the LM head's input formats in the same launch when
	 * its one chunk covers every output row, else per chunk (here the first; rn_cuda_forward the rest) */
	const int nc = T < RN_CU_OUT_CHUNK ? T : RN_CU_OUT_CHUNK;
	const struct rn_cu_w *ow[1] = {&c->output};
	if (want_logits && nc == T)
		return (rc = prep(c, x, E, NULL, c->output_norm, E, c->xn, E, ow, 1, T, err))
			       ? rc
			       : linear(c, &c->output, nc, c->logits, c->n_vocab, NULL, false, err);
	if ((rc = prep(c, x, E, NULL, c->output_norm, E, c->xn, E, NULL, 0, T, err)))
		return rc;
	if (want_logits) {
		if ((rc = prep(c, c->xn, E, NULL, NULL, E, c->xn, E, ow, 1, nc, err)) ||
		    (rc = linear(c, &c->output, nc, c->logits, c->n_vocab, NULL, false, err)))
			return rc;
	}
	return RN_OK;
}

static struct rn_cu_graph *graph_find(struct rn_cu *c, int n, int n_out, int splits, int mode)
{
	for (int i = 0; i < c->n_graphs; i++) {
		struct rn_cu_graph *g = &c->graphs[i];
		if (g->n == n && g->n_out == n_out && g->splits == splits && g->mode == mode) {
			g->used = ++c->clock;
			return g;
		}
	}
	return NULL;
}

/* Kernel nodes of a captured graph: the kernel launches of one step (the step arrays' copy precedes the graph;
 * sampling follows it). Qwen3-14B (40 layers), one row, attention unsplit (+1 a layer when split):
 *   before (a651dbf): 486 = embedding + 40 x 12 (prep, Q, K, V, QKV epilogue, attention, prep, O, prep,
 *                     gate/up, prep, down) + 2 row gathers + final norm + LM-head prep + LM head;
 *   now:              403 = embedding + 40 x 10 (one Q|K|V matvec) + norm with the LM-head formats + LM head,
 *                     when Q, K and V share a type (Q8_0, FP8); Q4_K_M files whose V is Q6_K in some layers
 *                     take 11 in those layers (Q|K, then V). */
static int graph_kernel_nodes(cudaGraph_t graph)
{
	size_t nn = 0;
	if (cudaGraphGetNodes(graph, NULL, &nn) != cudaSuccess || nn == 0) {
		(void)cudaGetLastError();
		return 0;
	}
	cudaGraphNode_t *nodes = (cudaGraphNode_t *)malloc(nn * sizeof *nodes);
	if (!nodes)
		return 0;
	int k = 0;
	if (cudaGraphGetNodes(graph, nodes, &nn) == cudaSuccess) {
		for (size_t i = 0; i < nn; i++) {
			cudaGraphNodeType ty;
			if (cudaGraphNodeGetType(nodes[i], &ty) == cudaSuccess && ty == cudaGraphNodeTypeKernel)
				k++;
		}
	}
	(void)cudaGetLastError();
	free(nodes);
	return k;
}

static int graph_capture(struct rn_cu *c, int n, int n_out, int splits, int mode, struct rn_cu_graph **out,
			 struct rn_error *err)
{
	/* a failed capture drops exactly the entry it was given (with a full table that is the evicted LRU entry,
	 * not the last one: dropping the last left a dead entry and lost a live graph) */
	bool evict = false;
	const int slot = rn_cu_graph_slot(c->graphs, &c->n_graphs, RN_CU_MAX_GRAPHS, &evict);
	struct rn_cu_graph *g = &c->graphs[slot];
	if (evict && g->exec)
		cudaGraphExecDestroy(g->exec);
	memset(g, 0, sizeof *g);
	cudaGraph_t graph = NULL;
	cudaError_t e = cudaStreamBeginCapture(c->st, cudaStreamCaptureModeThreadLocal);
	if (e != cudaSuccess) {
		rn_cu_graph_drop(c->graphs, &c->n_graphs, slot);
		return rn_cuda_set_error(err, e, "cudaStreamBeginCapture", __FILE__, __LINE__);
	}
	int rc = enqueue(c, n, n_out, splits, mode == 0, NULL, 0, err);
	e = cudaStreamEndCapture(c->st, &graph);
	if (rc) {
		if (graph)
			cudaGraphDestroy(graph);
		rn_cu_graph_drop(c->graphs, &c->n_graphs, slot);
		return rc;
	}
	if (e != cudaSuccess) {
		rn_cu_graph_drop(c->graphs, &c->n_graphs, slot);
		return rn_cuda_set_error(err, e, "cudaStreamEndCapture", __FILE__, __LINE__);
	}
	const int launches = graph_kernel_nodes(graph);
	e = cudaGraphInstantiate(&g->exec, graph, 0);
	cudaGraphDestroy(graph);
	if (e != cudaSuccess) {
		rn_cu_graph_drop(c->graphs, &c->n_graphs, slot);
		return rn_cuda_set_error(err, e, "cudaGraphInstantiate", __FILE__, __LINE__);
	}
	if (n == 1 && n_out == 1 && mode == 0 && launches > 0)
		c->stats.decode_launches = launches;
	g->n = n;
	g->n_out = n_out;
	g->splits = splits;
	g->mode = mode;
	g->used = ++c->clock;
	c->stats.graphs++;
	*out = g;
	return RN_OK;
}

/* Fill the host step arrays from the batch; returns the largest key count of any row. */
static int step_fill(struct rn_cu *c, const struct rn_batch_cells *bc)
{
	const int n = bc->b.n_tokens;
	int max_keys = 1;
	for (int i = 0; i < n; i++) {
		c->sh.tok[i] = bc->b.token[i];
		c->sh.pos[i] = bc->b.pos[i];
		c->sh.seq[i] = bc->b.seq[i];
		c->sh.cell[i] = bc->cell[i];
		if (bc->cell[i] + 1 > max_keys)
			max_keys = bc->cell[i] + 1;
		if (bc->b.pos[i] >= c->rope_tab_n)
			rn_rope_cos_sin(&c->rope, bc->b.pos[i], c->sh.cs_extra + (size_t)i * c->n_rot);
	}
	for (int k = 0; k < bc->n_out; k++)
		c->sh.out_row[k] = bc->out_row[k];
	/* rows gathered by sequence (stable, sequences in order of first appearance), for the prefill attention:
	 * O(rows x distinct sequences), at most RN_MAX_BATCH x RN_MAX_SEQ */
	if (n > RN_CU_DECODE_MAX) {
		bool done[RN_MAX_SEQ] = {false};
		int w = 0;
		for (int i = 0; i < n; i++) {
			const int s = bc->b.seq[i];
			if (done[s])
				continue;
			done[s] = true;
			for (int j = i; j < n; j++)
				if (bc->b.seq[j] == s)
					c->sh.perm[w++] = j;
		}
	}
	return max_keys;
}

/* Segments (seq, first gathered row, rows, first cell) of the gathered order; seg holds 4 * n ints. */
static int step_segments(const struct rn_cu *c, const struct rn_batch_cells *bc, int32_t *seg)
{
	const int n = bc->b.n_tokens;
	int ns = 0;
	for (int k = 0; k < n;) {
		int r = c->sh.perm[k], s = bc->b.seq[r], j = k;
		while (j < n && bc->b.seq[c->sh.perm[j]] == s)
			j++;
		seg[4 * ns] = s;
		seg[4 * ns + 1] = k;
		seg[4 * ns + 2] = j - k;
		seg[4 * ns + 3] = bc->cell[r];
		ns++;
		k = j;
	}
	return ns;
}

static int forward_common(struct rn_cu *c, const struct rn_batch_cells *bc, bool want_logits, struct rn_error *err)
{
	if (c->sticky) {
		c->sticky = 0;
		return rn_error_set(err, RN_ERR_BACKEND, "%s", c->sticky_msg);
	}
	const int n = bc->b.n_tokens, n_out = bc->n_out;
	RN_CU_CHECK(cudaSetDevice(c->dev));
	/* the next pinned step buffer, once the copy of its previous contents has been done */
	const int k = (c->step_slot + 1) % RN_CU_RING;
	RN_CU_CHECK(cudaEventSynchronize(c->step_ev[k]));
	c->step_slot = k;
	step_layout(c, n);
	const int max_keys = step_fill(c, bc);
	RN_CU_CHECK(cudaMemcpyAsync(c->step_dev, c->step_ring[k], step_used_bytes(c, n), cudaMemcpyHostToDevice, c->st));
	RN_CU_CHECK(cudaEventRecord(c->step_ev[k], c->st));
	int rc;
	if (use_mmv(n)) {
		const int splits = rn_cu_attention_splits(max_keys);
		const int mode = want_logits ? 0 : 1;
		if (c->use_graphs) {
			struct rn_cu_graph *g = graph_find(c, n, n_out, splits, mode);
			if (!g && (rc = graph_capture(c, n, n_out, splits, mode, &g, err)))
				return rc;
			RN_CU_CHECK(cudaGraphLaunch(g->exec, c->st));
			c->stats.graph_launches++;
		} else if ((rc = enqueue(c, n, n_out, splits, want_logits, NULL, 0, err))) {
			return rc;
		}
	} else {
		int32_t *seg = (int32_t *)malloc((size_t)n * 4 * sizeof(int32_t));
		if (!seg)
			return rn_error_set(err, RN_ERR_NOMEM, "out of memory");
		int n_seg = step_segments(c, bc, seg);
		rc = enqueue(c, n, n_out, 1, want_logits, seg, n_seg, err);
		free(seg);
		if (rc)
			return rc;
		note_peak(c);
	}
	return RN_OK;
}

extern "C" int rn_cuda_forward(void *state, const struct rn_batch_cells *bc, const struct rn_outputs *out,
			       struct rn_error *err)
{
	struct rn_cu *c = (struct rn_cu *)state;
	const bool want_logits = out && out->logits;
	int rc = forward_common(c, bc, want_logits, err);
	if (rc)
		return rc;
	const int n_out = bc->n_out, V = c->n_vocab, E = c->n_embd;
	if (out && out->hidden && n_out > 0)
		RN_CU_CHECK(cudaMemcpyAsync(out->hidden, c->xn, (size_t)n_out * E * sizeof(float), cudaMemcpyDeviceToHost, c->st));
	if (want_logits && n_out > 0) {
		const int nc0 = n_out < RN_CU_OUT_CHUNK ? n_out : RN_CU_OUT_CHUNK;
		RN_CU_CHECK(cudaMemcpyAsync(out->logits, c->logits, (size_t)nc0 * V * sizeof(float), cudaMemcpyDeviceToHost,
					    c->st));
		/* more output rows than one LM-head chunk (prompt logits): the rest chunk by chunk */
		for (int k0 = RN_CU_OUT_CHUNK; k0 < n_out; k0 += RN_CU_OUT_CHUNK) {
			const int nc = n_out - k0 < RN_CU_OUT_CHUNK ? n_out - k0 : RN_CU_OUT_CHUNK;
			const struct rn_cu_w *ow[1] = {&c->output};
			float *xr = c->xn + (size_t)k0 * E;
			RN_CU_CHECK(cudaStreamSynchronize(c->st)); /* the previous chunk's copy is done with c->logits */
			if ((rc = prep(c, xr, E, NULL, NULL, E, xr, E, ow, 1, nc, err)) ||
			    (rc = linear(c, &c->output, nc, c->logits, V, NULL, false, err)))
				return rc;
			RN_CU_CHECK(cudaMemcpyAsync(out->logits + (size_t)k0 * V, c->logits, (size_t)nc * V * sizeof(float),
						    cudaMemcpyDeviceToHost, c->st));
		}
	}
	RN_CU_CHECK(cudaStreamSynchronize(c->st));
	return RN_OK;
}

/* Enqueue forward + sampling + the copy of the ids into out slot k (no wait). */
static int submit(struct rn_cu *c, const struct rn_batch_cells *bc, const struct rn_cuda_sampling *s, int *ticket,
		  struct rn_error *err)
{
	if (bc->n_out < 1 || bc->n_out > RN_CU_OUT_CHUNK)
		return rn_error_set(err, RN_ERR_INVALID_ARG, "%d rows to sample in one call (1..%d)", bc->n_out,
				    RN_CU_OUT_CHUNK);
	int rc = rn_cu_sample_check(c, bc->n_out, s, err);
	if (rc)
		return rc;
	const int k = (c->out_slot + 1) % RN_CU_RING;
	if (c->out_busy[k])
		return rn_error_set(err, RN_ERR_INVALID_ARG, "%d decode steps are already in flight: wait for ticket %d first",
				    RN_CU_RING, k);
	if ((rc = forward_common(c, bc, true, err)) || (rc = rn_cu_sample(c, c->logits, bc->n_out, s, err)))
		return rc;
	RN_CU_CHECK(cudaMemcpyAsync(c->out_ring[k], c->samp_out_dev, (size_t)bc->n_out * sizeof(int32_t),
				    cudaMemcpyDeviceToHost, c->st));
	RN_CU_CHECK(cudaEventRecord(c->out_ev[k], c->st));
	c->out_slot = k;
	c->out_busy[k] = true;
	c->out_n[k] = bc->n_out;
	*ticket = k;
	return RN_OK;
}

extern "C" int rn_cuda_decode_wait(void *state, int ticket, int32_t *tokens, struct rn_error *err)
{
	struct rn_cu *c = (struct rn_cu *)state;
	if (ticket < 0 || ticket >= RN_CU_RING || !c->out_busy[ticket])
		return rn_error_set(err, RN_ERR_INVALID_ARG, "ticket %d is not in flight", ticket);
	c->out_busy[ticket] = false;
	RN_CU_CHECK(cudaEventSynchronize(c->out_ev[ticket]));
	memcpy(tokens, c->out_ring[ticket], (size_t)c->out_n[ticket] * sizeof(int32_t));
	return RN_OK;
}

extern "C" int rn_cuda_decode_submit(void *state, const struct rn_batch_cells *bc, const struct rn_cuda_sampling *s,
				     int *ticket, struct rn_error *err)
{
	struct rn_cu *c = (struct rn_cu *)state;
	if (bc->b.n_tokens < 1 || bc->b.n_tokens > RN_CU_DECODE_MAX)
		return rn_error_set(err, RN_ERR_INVALID_ARG, "a pipelined decode step takes 1..%d rows, got %d", RN_CU_DECODE_MAX,
				    bc->b.n_tokens);
	for (int i = 0; i < bc->b.n_tokens; i++) {
		const int32_t t = bc->b.token[i], q = bc->b.seq[i], cell = bc->cell[i];
		if ((t < 0 && t != RN_CUDA_TOKEN_FROM_SAMPLE) || t >= c->n_vocab || q < 0 || q >= c->p.n_seq || cell < 0 ||
		    cell >= c->p.n_ctx || bc->b.pos[i] < 0)
			return rn_error_set(err, RN_ERR_INVALID_ARG, "row %d: token %d, sequence %d, cell %d, position %d out of range",
					    i, t, q, cell, bc->b.pos[i]);
	}
	for (int r = 0; r < bc->n_out; r++)
		if (s[r].n_history > 0 && (s[r].repeat_penalty != 1.0f || s[r].presence_penalty != 0.0f ||
					   s[r].frequency_penalty != 0.0f))
			return rn_error_set(err, RN_ERR_INVALID_ARG, "penalties need the previous token on the host: use "
								     "rn_cuda_forward_sample");
	return submit(c, bc, s, ticket, err);
}

extern "C" int rn_cuda_forward_sample(void *state, const struct rn_batch_cells *bc, const struct rn_cuda_sampling *s,
				      int32_t *tokens, struct rn_error *err)
{
	struct rn_cu *c = (struct rn_cu *)state;
	if (bc->n_out == 0) {
		int rc = forward_common(c, bc, false, err);
		if (rc)
			return rc;
		RN_CU_CHECK(cudaStreamSynchronize(c->st));
		return RN_OK;
	}
	int ticket = -1;
	int rc = submit(c, bc, s, &ticket, err);
	if (rc)
		return rc;
	return rn_cuda_decode_wait(state, ticket, tokens, err);
}

/* ---------------------------------------------------------------------------------------------- KV */

static void set_sticky(struct rn_cu *c, const struct rn_error *e)
{
	if (!c->sticky) {
		c->sticky = 1;
		snprintf(c->sticky_msg, sizeof c->sticky_msg, "an earlier KV-cache operation failed: %s", e->msg);
	}
}

/* Copy cells [src, src + n) of `seq_src` to [dst, dst + n) of `seq_dst` in every (layer, K/V) plane of one
 * element array (elem bytes per value, vals values per cell), through kv_tmp when the ranges may overlap. */
static int kv_copy_planes(struct rn_cu *c, uint8_t *base, size_t elem, size_t vals, int seq_src, int src, int seq_dst,
			  int dst, int n, struct rn_error *err)
{
	const size_t cell_b = vals * elem;
	const size_t pitch = c->kv_plane_stride / (size_t)c->kv_dim * vals * elem;
	const size_t seq_b = (size_t)c->p.n_ctx * cell_b;
	const size_t height = 2 * (size_t)c->n_layer;
	if (seq_src != seq_dst) {
		RN_CU_CHECK(cudaMemcpy2DAsync(base + seq_dst * seq_b + dst * cell_b, pitch, base + seq_src * seq_b + src * cell_b,
					      pitch, (size_t)n * cell_b, height, cudaMemcpyDeviceToDevice, c->st));
		return RN_OK;
	}
	const int C = RN_CU_KVTMP_CELLS;
	const bool down = dst < src;
	for (int k = 0; k < n; k += C) {
		const int cnt = n - k < C ? n - k : C;
		const int off = down ? k : n - k - cnt; /* down: front to back; up: back to front */
		const size_t w = (size_t)cnt * cell_b;
		uint8_t *sp = base + seq_src * seq_b + (size_t)(src + off) * cell_b;
		uint8_t *dp = base + seq_dst * seq_b + (size_t)(dst + off) * cell_b;
		RN_CU_CHECK(cudaMemcpy2DAsync(c->kv_tmp, w, sp, pitch, w, height, cudaMemcpyDeviceToDevice, c->st));
		RN_CU_CHECK(cudaMemcpy2DAsync(dp, pitch, c->kv_tmp, w, w, height, cudaMemcpyDeviceToDevice, c->st));
	}
	return RN_OK;
}

static int kv_transfer(struct rn_cu *c, int seq_src, int src, int seq_dst, int dst, int n, struct rn_error *err)
{
	int rc;
	if (c->kv_d) {
		if ((rc = kv_copy_planes(c, c->kv, 1, (size_t)c->kv_dim, seq_src, src, seq_dst, dst, n, err)) ||
		    (rc = kv_copy_planes(c, (uint8_t *)c->kv_d, 2, (size_t)c->kv_dim / 32, seq_src, src, seq_dst, dst, n, err)))
			return rc;
	} else if ((rc = kv_copy_planes(c, c->kv, 2, (size_t)c->kv_dim, seq_src, src, seq_dst, dst, n, err))) {
		return rc;
	}
	RN_CU_CHECK(cudaStreamSynchronize(c->st));
	return RN_OK;
}

extern "C" void rn_cuda_kv_move(void *state, int seq, int src, int dst, int n)
{
	struct rn_cu *c = (struct rn_cu *)state;
	struct rn_error e;
	if (n > 0 && src != dst && kv_transfer(c, seq, src, seq, dst, n, &e) != RN_OK)
		set_sticky(c, &e);
}

extern "C" void rn_cuda_kv_copy(void *state, int src, int dst, int n)
{
	struct rn_cu *c = (struct rn_cu *)state;
	struct rn_error e;
	if (n > 0 && src != dst && kv_transfer(c, src, 0, dst, 0, n, &e) != RN_OK)
		set_sticky(c, &e);
}

extern "C" int rn_cuda_kv_rotate(void *state, int seq, int c0, int c1, int32_t delta, struct rn_error *err)
{
	struct rn_cu *c = (struct rn_cu *)state;
	if (c1 <= c0)
		return RN_OK;
	/* a pure rotation: the magnitude scale (YaRN) was applied when the key was stored, so the cos/sin pairs
	 * are renormalised to unit length, as the CPU backend does */
	float *cs = (float *)malloc((size_t)c->n_rot * sizeof(float));
	if (!cs)
		return rn_error_set(err, RN_ERR_NOMEM, "out of memory");
	rn_rope_cos_sin(&c->rope, delta, cs);
	for (int i = 0; i < c->n_rot / 2; i++) {
		float r = sqrtf(cs[2 * i] * cs[2 * i] + cs[2 * i + 1] * cs[2 * i + 1]);
		if (r > 0) {
			cs[2 * i] /= r;
			cs[2 * i + 1] /= r;
		}
	}
	cudaError_t e = cudaMemcpy(c->rot_cs, cs, (size_t)c->n_rot * sizeof(float), cudaMemcpyHostToDevice);
	free(cs);
	RN_CU_CHECK(e);
	int rc = rn_cu_kv_rotate_launch(c, seq, c0, c1, c->rot_cs, c->st, err);
	if (rc)
		return rc;
	RN_CU_CHECK(cudaStreamSynchronize(c->st));
	return RN_OK;
}

extern "C" uint64_t rn_cuda_memory(const void *state)
{
	/* device memory: the uploaded weights are an allocation too (the mapping stays on the host) */
	const struct rn_cu *c = (const struct rn_cu *)state;
	return c->stats.weight_bytes + (uint64_t)c->kv_bytes + c->scratch_bytes;
}

extern "C" void rn_cuda_get_stats(const void *state, struct rn_cuda_stats *st)
{
	const struct rn_cu *c = (const struct rn_cu *)state;
	*st = c->stats;
}
