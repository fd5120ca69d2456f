/* runner/cuda/sample.cu — sampling on the GPU, so that only the chosen token id crosses to the host.
 *
 * The chain is runner/sampler.c's (llama.cpp's, which Ollama uses), step for step: penalties over the
 * history, then greedy argmax, or top-k (two-phase bitonic selection: per-slice top-k, then the merged top-k),
 * typical-p, top-p, min-p, temperature and the draw with the caller's uniform number. Candidate order is the
 * CPU's: logit descending, ties by ascending id. The steps after top-k work on at most RN_CUDA_TOPK_MAX
 * candidates and run on one block (their sequential parts on one thread, as on the CPU).
 */
#include <float.h>
#include <limits.h>

#include "runner/cuda/internal.cuh"

#define SORT_N 8192               /* elements one block sorts in shared memory */
#define SORT_THREADS 1024

struct samp_par {
	float temperature, top_p, min_p, typical_p, repeat_penalty, presence_penalty, frequency_penalty;
	int top_k, n_history;
	double u;
};

/* a comes before b: larger value first, ties by smaller id. NaN values were mapped to -inf on load. */
static __device__ __forceinline__ bool before(float va, int ia, float vb, int ib)
{
	return va > vb || (va == vb && ia < ib);
}

/* Bitonic sort of n (a power of two) (value, id) pairs in shared memory, `before` order; asc = ascending
 * values instead (ties still by smaller id). All threads of the block take part. */
static __device__ void block_sort(float *v, int *id, int n, bool asc)
{
	for (int k = 2; k <= n; k <<= 1)
		for (int j = k >> 1; j > 0; j >>= 1) {
			for (int i = threadIdx.x; i < n; i += blockDim.x) {
				int ixj = i ^ j;
				if (ixj > i) {
					bool first = (i & k) == 0;
					bool b = asc ? (v[ixj] < v[i] || (v[ixj] == v[i] && id[ixj] < id[i]))
						     : before(v[ixj], id[ixj], v[i], id[i]);
					if (first == b) {
						float tv = v[i];
						v[i] = v[ixj];
						v[ixj] = tv;
						int ti = id[i];
						id[i] = id[ixj];
						id[ixj] = ti;
					}
				}
			}
			__syncthreads();
		}
}

static __global__ void k_penalties(float *logits, int n_vocab, const int32_t *hist, struct samp_par p)
{
	for (int i = threadIdx.x; i < p.n_history; i += blockDim.x) {
		const int32_t t = hist[i];
		bool first = true;
		int count = 0;
		for (int k = 0; k < p.n_history; k++)
			if (hist[k] == t) {
				if (k < i)
					first = false;
				count++;
			}
		if (!first || t < 0 || t >= n_vocab)
			continue;
		float l = logits[t];
		l = l <= 0 ? l * p.repeat_penalty : l / p.repeat_penalty;
		logits[t] = l - ((float)count * p.frequency_penalty + p.presence_penalty);
	}
}

/* The first index of the largest logit (NaN never wins; all -inf or NaN gives 0), as the CPU's argmax. */
static __global__ void k_argmax(const float *logits, int n_vocab, int32_t *out, int32_t *sampled_slot)
{
	__shared__ float sv[32];
	__shared__ int si[32];
	float bv = -INFINITY;
	int bi = 0;
	for (int i = threadIdx.x; i < n_vocab; i += blockDim.x) {
		float x = logits[i];
		if (x > bv) {
			bv = x;
			bi = i;
		}
	}
	for (int o = 16; o > 0; o >>= 1) {
		float ov = __shfl_xor_sync(0xffffffffu, bv, o);
		int oi = __shfl_xor_sync(0xffffffffu, bi, o);
		if (ov > bv || (ov == bv && oi < bi)) {
			bv = ov;
			bi = oi;
		}
	}
	const int warp = threadIdx.x / RN_WARP, lane = threadIdx.x % RN_WARP;
	if (lane == 0) {
		sv[warp] = bv;
		si[warp] = bi;
	}
	__syncthreads();
	if (threadIdx.x == 0) {
		for (int w = 1; w < (int)(blockDim.x / RN_WARP); w++)
			if (sv[w] > bv || (sv[w] == bv && si[w] < bi)) {
				bv = sv[w];
				bi = si[w];
			}
		*out = bi;
		if (sampled_slot)
			*sampled_slot = bi;
	}
}

/* Phase 1: block b sorts slice b of the vocabulary and writes its k best (value, id) pairs. */
static __global__ void __launch_bounds__(SORT_THREADS) k_topk_slice(const float *logits, int n_vocab, int k,
								      float *cv, int *ci)
{
	extern __shared__ float ssm[];
	float *v = ssm;
	int *id = (int *)(ssm + SORT_N);
	const int base = blockIdx.x * SORT_N;
	for (int i = threadIdx.x; i < SORT_N; i += blockDim.x) {
		int g = base + i;
		float x = g < n_vocab ? logits[g] : -INFINITY;
		v[i] = x == x ? x : -INFINITY;
		id[i] = g < n_vocab ? g : INT_MAX;
	}
	__syncthreads();
	block_sort(v, id, SORT_N, false);
	for (int i = threadIdx.x; i < k; i += blockDim.x) {
		cv[blockIdx.x * k + i] = v[i];
		ci[blockIdx.x * k + i] = id[i];
	}
}

/* Softmax of the first n candidates (sorted descending) into p, as the CPU: float exps, double sum. */
static __device__ void softmax_serial(const float *l, float *p, int n)
{
	float mx = l[0];
	double sum = 0;
	for (int i = 0; i < n; i++) {
		p[i] = expf(l[i] - mx);
		sum += p[i];
	}
	for (int i = 0; i < n; i++)
		p[i] = (float)(p[i] / sum);
}

/* Phase 2: merge the slices' candidates, keep the k best and run the rest of the chain. */
static __global__ void __launch_bounds__(SORT_THREADS) k_topk_final(const float *cv, const int *ci, int n_cand,
								      struct samp_par p, int32_t *out, int32_t *sampled_slot)
{
	extern __shared__ float ssm[];
	float *v = ssm;
	int *id = (int *)(ssm + SORT_N);
	__shared__ float pr[RN_CUDA_TOPK_MAX], sc[RN_CUDA_TOPK_MAX];
	__shared__ int n_keep;
	for (int i = threadIdx.x; i < SORT_N; i += blockDim.x) {
		v[i] = i < n_cand ? cv[i] : -INFINITY;
		id[i] = i < n_cand ? ci[i] : INT_MAX;
	}
	__syncthreads();
	block_sort(v, id, SORT_N, false);
	int n = p.top_k;
	/* candidates that are padding (fewer real tokens than k) are dropped, as the CPU's heap holds only real ones */
	if (threadIdx.x == 0) {
		int m = 0;
		while (m < n && id[m] != INT_MAX)
			m++;
		n_keep = m;
	}
	__syncthreads();
	n = n_keep;
	if (n == 0 || v[0] == -INFINITY) {
		if (threadIdx.x == 0) {
			int t = n ? id[0] : 0;
			*out = t;
			if (sampled_slot)
				*sampled_slot = t;
		}
		return;
	}
	if (p.typical_p < 1.0f && n > 1) {
		/* locally typical: keep the tokens whose surprise is closest to the entropy, by mass */
		if (threadIdx.x == 0) {
			softmax_serial(v, pr, n);
			double ent = 0;
			for (int i = 0; i < n; i++)
				if (pr[i] > 0)
					ent -= pr[i] * log((double)pr[i]);
			for (int i = 0; i < n; i++)
				sc[i] = pr[i] > 0 ? (float)fabs(-log((double)pr[i]) - ent) : INFINITY;
		}
		__syncthreads();
		/* sort (score, index) ascending in the upper part of the shared arrays */
		float *sv = v + SORT_N / 2;
		int *si = id + SORT_N / 2;
		int ns = 1;
		while (ns < n)
			ns <<= 1;
		for (int i = threadIdx.x; i < ns; i += blockDim.x) {
			sv[i] = i < n ? sc[i] : INFINITY;
			si[i] = i < n ? i : INT_MAX;
		}
		__syncthreads();
		block_sort(sv, si, ns, true);
		if (threadIdx.x == 0) {
			double cum = 0;
			int keep = n;
			for (int i = 0; i < n; i++) {
				cum += pr[si[i]];
				if (cum > p.typical_p) {
					keep = i + 1;
					break;
				}
			}
			/* kept candidates: their (logit, id) into sc / scratch ids, then back in logit order */
			for (int i = 0; i < keep; i++) {
				sc[i] = v[si[i]];
				si[i + SORT_N / 4] = id[si[i]];
			}
			n_keep = keep;
		}
		__syncthreads();
		const int keep = n_keep;
		float *kv_ = v + SORT_N / 4 * 3;
		int *ki = id + SORT_N / 4 * 3;
		int nk = 1;
		while (nk < keep)
			nk <<= 1;
		for (int i = threadIdx.x; i < nk; i += blockDim.x) {
			kv_[i] = i < keep ? sc[i] : -INFINITY;
			ki[i] = i < keep ? si[i + SORT_N / 4] : INT_MAX;
		}
		__syncthreads();
		block_sort(kv_, ki, nk, false);
		for (int i = threadIdx.x; i < keep; i += blockDim.x) {
			v[i] = kv_[i];
			id[i] = ki[i];
		}
		__syncthreads();
		n = keep;
	}
	if (threadIdx.x != 0)
		return;
	if (p.top_p < 1.0f && n > 1) {
		softmax_serial(v, pr, n);
		double cum = 0;
		for (int i = 0; i < n; i++) {
			cum += pr[i];
			if (cum >= p.top_p) {
				n = i + 1;
				break;
			}
		}
	}
	if (p.min_p > 0.0f && n > 1) {
		float min_logit = v[0] + logf(p.min_p);
		int m = 1;
		while (m < n && v[m] >= min_logit)
			m++;
		n = m;
	}
	for (int i = 0; i < n; i++)
		v[i] /= p.temperature;
	softmax_serial(v, pr, n);
	double cum = 0;
	int t = id[n - 1];
	for (int i = 0; i < n; i++) {
		cum += pr[i];
		if (p.u < cum) {
			t = id[i];
			break;
		}
	}
	*out = t;
	if (sampled_slot)
		*sampled_slot = t;
}

size_t rn_cu_sample_scratch_bytes(int n_vocab)
{
	size_t nb = ((size_t)n_vocab + SORT_N - 1) / SORT_N;
	return nb * RN_CUDA_TOPK_MAX * (sizeof(float) + sizeof(int));
}

int rn_cu_sample_check(const struct rn_cu *c, int n_out, const struct rn_cuda_sampling *s, struct rn_error *err)
{
	const int V = c->n_vocab;
	const int nb = (V + SORT_N - 1) / SORT_N;
	for (int r = 0; r < n_out; r++) {
		const struct rn_cuda_sampling *q = &s[r];
		if (!(q->temperature == q->temperature) || !(q->top_p == q->top_p) || !(q->min_p == q->min_p) ||
		    !(q->typical_p == q->typical_p) || !(q->u >= 0.0 && q->u < 1.0))
			return rn_error_set(err, RN_ERR_INVALID_ARG, "a sampling option is NaN, or u is outside [0, 1)");
		if (q->n_history < 0 || q->n_history > RN_CUDA_HISTORY_MAX || (q->n_history > 0 && !q->history))
			return rn_error_set(err, RN_ERR_INVALID_ARG, "a penalty history of %d tokens (the GPU sampler takes up to %d)",
					    q->n_history, RN_CUDA_HISTORY_MAX);
		const bool greedy = q->temperature <= 0.0f;
		if (!greedy && (q->top_k < 1 || q->top_k > RN_CUDA_TOPK_MAX || q->top_k >= V || nb * q->top_k > SORT_N))
			return rn_error_set(err, RN_ERR_INVALID_ARG, "top_k %d cannot be sampled on the GPU (1..%d)", q->top_k,
					    RN_CUDA_TOPK_MAX);
	}
	return RN_OK;
}

int rn_cu_sample(struct rn_cu *c, const float *logits, int n_out, const struct rn_cuda_sampling *s,
		 struct rn_error *err)
{
	const int V = c->n_vocab;
	const int nb = (V + SORT_N - 1) / SORT_N;
	/* a function attribute belongs to the device (context) it is set on: once per instance, each instance
	 * being on its own device (a process-wide flag left a second device without it) */
	if (!c->samp_smem_set) {
		size_t bytes = SORT_N * (sizeof(float) + sizeof(int));
		RN_CU_CHECK(cudaFuncSetAttribute(k_topk_slice, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
		RN_CU_CHECK(cudaFuncSetAttribute(k_topk_final, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
		c->samp_smem_set = true;
	}
	int rc = rn_cu_sample_check(c, n_out, s, err);
	if (rc)
		return rc;
	for (int r = 0; r < n_out; r++) {
		const struct rn_cuda_sampling *q = &s[r];
		struct samp_par p;
		p.temperature = q->temperature;
		p.top_p = q->top_p;
		p.min_p = q->min_p;
		p.typical_p = q->typical_p;
		p.repeat_penalty = q->repeat_penalty;
		p.presence_penalty = q->presence_penalty;
		p.frequency_penalty = q->frequency_penalty;
		p.top_k = q->top_k;
		p.n_history = q->n_history;
		p.u = q->u;
		float *row = (float *)logits + (size_t)r * (size_t)V;
		const int32_t seq = c->sh.seq[c->sh.out_row[r]];
		int32_t *slot = c->sampled + seq;
		const bool penalties = q->n_history > 0 &&
				       (q->repeat_penalty != 1.0f || q->presence_penalty != 0.0f || q->frequency_penalty != 0.0f);
		if (penalties) {
			/* a synchronous copy: the history buffer is reused by the next row */
			RN_CU_CHECK(cudaMemcpyAsync(c->samp_hist_dev, q->history, (size_t)q->n_history * sizeof(int32_t),
						    cudaMemcpyHostToDevice, c->st));
			k_penalties<<<1, 256, 0, c->st>>>(row, V, c->samp_hist_dev, p);
			RN_CU_LAUNCHED();
			RN_CU_CHECK(cudaStreamSynchronize(c->st));
		}
		if (q->temperature <= 0.0f) {
			k_argmax<<<1, 1024, 0, c->st>>>(row, V, c->samp_out_dev + r, slot);
			RN_CU_LAUNCHED();
			continue;
		}
		float *cv = c->samp_scratch;
		int *ci = (int *)(c->samp_scratch + (size_t)nb * RN_CUDA_TOPK_MAX);
		size_t smem = SORT_N * (sizeof(float) + sizeof(int));
		k_topk_slice<<<nb, SORT_THREADS, smem, c->st>>>(row, V, q->top_k, cv, ci);
		RN_CU_LAUNCHED();
		k_topk_final<<<1, SORT_THREADS, smem, c->st>>>(cv, ci, nb * q->top_k, p, c->samp_out_dev + r, slot);
		RN_CU_LAUNCHED();
	}
	return RN_OK;
}
