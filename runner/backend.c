/* runner/backend.c — the one place that knows which backends exist in this build, and the checks and
 * KV-cell bookkeeping every backend instance shares.
 *
 * The CUDA backend is registered behind the single ORUN_WITH_CUDA #ifdef the style guide allows; everything
 * else (servers, tools) asks about devices here. Backends receive only validated calls expressed in cells
 * (runner/kvcache.h); positions never reach them.
 */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "runner/backend.h"
#include "runner/cpu/cpu.h"

#ifdef ORUN_WITH_CUDA
#include "runner/cuda/cuda.h"
#endif

static const struct rn_backend_ops *const backends[] = {
	&rn_cpu_backend_ops,
#ifdef ORUN_WITH_CUDA
	&rn_cuda_backend_ops,
#endif
};

int rn_backend_count(void) { return (int)(sizeof backends / sizeof backends[0]); }

static const struct rn_backend_ops *ops_of(int i)
{
	return i >= 0 && i < rn_backend_count() ? backends[i] : NULL;
}

const char *rn_backend_name(int i)
{
	const struct rn_backend_ops *o = ops_of(i);
	return o ? o->name : "?";
}

int rn_backend_device_count(int i)
{
	const struct rn_backend_ops *o = ops_of(i);
	return o ? o->device_count() : 0;
}

int rn_backend_find(const char *name)
{
	for (int i = 0; name && i < rn_backend_count(); i++)
		if (strcmp(backends[i]->name, name) == 0)
			return i;
	return -1;
}

bool rn_backend_is_gpu(int i)
{
	const struct rn_backend_ops *o = ops_of(i);
	return o && o->gpu;
}

const char *rn_backend_device_prefix(int i)
{
	const struct rn_backend_ops *o = ops_of(i);
	return o ? o->device_prefix : "?";
}

int rn_backend_device_info(int i, int dev, struct rn_device_info *out)
{
	const struct rn_backend_ops *o = ops_of(i);
	memset(out, 0, sizeof *out);
	if (!o || !o->device_info || dev < 0 || dev >= o->device_count())
		return -1;
	return o->device_info(dev, out);
}

int rn_backend_device_memory(int i, int dev, uint64_t *free_bytes, uint64_t *total_bytes)
{
	const struct rn_backend_ops *o = ops_of(i);
	*free_bytes = *total_bytes = 0;
	if (!o || !o->device_memory || dev < 0 || dev >= o->device_count())
		return -1;
	return o->device_memory(dev, free_bytes, total_bytes);
}

uint64_t rn_backend_gpu_memory(void)
{
	uint64_t sum = 0;
	for (int i = 0; i < rn_backend_count(); i++) {
		if (!backends[i]->gpu)
			continue;
		for (int d = 0; d < backends[i]->device_count(); d++) {
			uint64_t fr = 0, tot = 0;
			if (rn_backend_device_memory(i, d, &fr, &tot) == 0)
				sum += tot;
		}
	}
	return sum;
}

const char *rn_backend_archs(int i)
{
	const struct rn_backend_ops *o = ops_of(i);
	return o && o->archs ? o->archs() : "";
}

/* ---------------------------------------------------------------------------------------------------- */

struct rn_backend {
	const struct rn_backend_ops *ops;
	void *state;
	const struct rn_model *model;
	struct rn_load_params params;
	struct rn_kv_cells cells;
	int32_t *cell;      /* [n_batch] scratch: destination cell per row */
	int32_t *out_row;   /* [n_batch] scratch: flagged rows */
	int *next_cell;     /* [n_seq] scratch */
	int32_t *last_pos;  /* [n_seq] scratch */
};

/* The checks that keep a bad value from reaching a backend; the defaults were applied by rn_load_params_resolve. */
static int check_params(const struct rn_model *m, const struct rn_load_params *p, struct rn_error *err)
{
	if (p->n_seq < 1 || p->n_seq > RN_MAX_SEQ)
		return rn_error_set(err, RN_ERR_INVALID_ARG, "%d sequences requested (allowed 1..%d)", p->n_seq, RN_MAX_SEQ);
	if (p->n_ctx < 1 || p->n_ctx > RN_MAX_CTX)
		return rn_error_set(err, RN_ERR_INVALID_ARG, "context of %d tokens requested (allowed 1..%d)", p->n_ctx,
				    RN_MAX_CTX);
	if (p->n_batch < 1 || p->n_batch > RN_MAX_BATCH)
		return rn_error_set(err, RN_ERR_INVALID_ARG, "batch of %d tokens requested (allowed 1..%d)", p->n_batch,
				    RN_MAX_BATCH);
	if (p->n_threads < 0)
		return rn_error_set(err, RN_ERR_INVALID_ARG, "%d threads requested", p->n_threads);
	if (p->rope_freq_base < 0 || p->rope_freq_scale < 0)
		return rn_error_set(err, RN_ERR_INVALID_ARG, "rope_freq_base %g / rope_freq_scale %g must be >= 0",
				    (double)p->rope_freq_base, (double)p->rope_freq_scale);
	if (p->device < 0)
		return rn_error_set(err, RN_ERR_INVALID_ARG, "device %d requested", p->device);
	if (p->kv_type == RN_KV_Q8_0 && m->hp.head_dim % 32 != 0)
		return rn_error_set(err, RN_ERR_INVALID_ARG, "a q8_0 KV cache needs a head size that is a multiple of 32 "
				    "(this model's is %d)", m->hp.head_dim);
	return RN_OK;
}

int rn_backend_resolve(int index)
{
	if (index >= 0)
		return index;
	for (int i = rn_backend_count() - 1; i >= 0; i--)
		if (backends[i]->device_count() > 0)
			return i;
	return -1;
}

struct rn_backend *rn_backend_load(const struct rn_model *m, const struct rn_load_params *p, struct rn_error *err)
{
	const int index = rn_backend_resolve(p->backend);
	if (index < 0 || index >= rn_backend_count()) {
		rn_error_set(err, RN_ERR_BACKEND, "no backend with index %d", index);
		return NULL;
	}
	const struct rn_backend_ops *e = backends[index];
	if (e->device_count() < 1) {
		rn_error_set(err, RN_ERR_BACKEND, "the %s backend found no device", e->name);
		return NULL;
	}
	struct rn_backend *b = calloc(1, sizeof *b);
	if (!b) {
		rn_error_set(err, RN_ERR_NOMEM, "out of memory");
		return NULL;
	}
	b->ops = e;
	b->model = m;
	b->params = *p;
	b->params.backend = index;
	if (check_params(m, &b->params, err) != RN_OK)
		goto fail;
	const struct rn_load_params *q = &b->params;
	if (rn_kv_cells_init(&b->cells, q->n_seq, q->n_ctx, err) != RN_OK)
		goto fail;
	b->cell = malloc((size_t)q->n_batch * sizeof *b->cell);
	b->out_row = malloc((size_t)q->n_batch * sizeof *b->out_row);
	b->next_cell = malloc((size_t)q->n_seq * sizeof *b->next_cell);
	b->last_pos = malloc((size_t)q->n_seq * sizeof *b->last_pos);
	if (!b->cell || !b->out_row || !b->next_cell || !b->last_pos) {
		rn_error_set(err, RN_ERR_NOMEM, "out of memory");
		goto fail;
	}
	if (b->ops->load(m, q, &b->state, err) != RN_OK)
		goto fail;
	return b;
fail:
	rn_backend_free(b);
	return NULL;
}

void rn_backend_free(struct rn_backend *b)
{
	if (!b)
		return;
	if (b->state)
		b->ops->free(b->state);
	rn_kv_cells_free(&b->cells);
	free(b->cell);
	free(b->out_row);
	free(b->next_cell);
	free(b->last_pos);
	free(b);
}

const struct rn_load_params *rn_backend_params(const struct rn_backend *b) { return &b->params; }
const char *rn_backend_instance_name(const struct rn_backend *b) { return b->ops->name; }
const struct rn_model *rn_backend_model(const struct rn_backend *b) { return b->model; }

static int check_seq(const struct rn_backend *b, int seq, struct rn_error *err)
{
	if (seq < 0 || seq >= b->params.n_seq)
		return rn_error_set(err, RN_ERR_INVALID_ARG, "sequence %d out of range [0, %d)", seq, b->params.n_seq);
	return RN_OK;
}

int rn_backend_forward(struct rn_backend *b, const struct rn_batch *batch, const struct rn_outputs *out,
		       struct rn_error *err)
{
	const struct rn_load_params *p = &b->params;
	const int n = batch->n_tokens;
	if (n < 1 || n > p->n_batch)
		return rn_error_set(err, RN_ERR_INVALID_ARG, "batch of %d tokens (allowed 1..%d)", n, p->n_batch);
	if (!batch->token || !batch->pos || !batch->seq)
		return rn_error_set(err, RN_ERR_INVALID_ARG, "batch without token, pos or seq arrays");
	for (int s = 0; s < p->n_seq; s++)
		b->next_cell[s] = -1;
	int n_out = 0;
	const int n_vocab = b->model->hp.n_vocab;
	for (int i = 0; i < n; i++) {
		int s = batch->seq[i];
		int rc = check_seq(b, s, err);
		if (rc)
			return rc;
		if (batch->token[i] < 0 || batch->token[i] >= n_vocab)
			return rn_error_set(err, RN_ERR_INVALID_ARG, "token id %" PRId32 " at batch row %d is outside the "
					    "vocabulary [0, %d)", batch->token[i], i, n_vocab);
		if (b->next_cell[s] < 0) {
			b->next_cell[s] = b->cells.used[s];
			b->last_pos[s] = rn_kv_cells_next_pos(&b->cells, s) - 1;
			if (b->cells.used[s] == 0)
				b->last_pos[s] = -1;
		}
		if (batch->pos[i] <= b->last_pos[s])
			return rn_error_set(err, RN_ERR_INVALID_ARG, "batch row %d: position %" PRId32 " of sequence %d is "
					    "not after its last position %" PRId32, i, batch->pos[i], s, b->last_pos[s]);
		if (b->next_cell[s] >= p->n_ctx)
			return rn_error_set(err, RN_ERR_CONTEXT, "sequence %d is full (%d cells)", s, p->n_ctx);
		b->cell[i] = b->next_cell[s]++;
		b->last_pos[s] = batch->pos[i];
		if (batch->want ? batch->want[i] != 0 : i == n - 1)
			b->out_row[n_out++] = i;
	}
	struct rn_batch_cells bc = {.b = *batch, .cell = b->cell, .n_out = n_out, .out_row = b->out_row};
	int rc = b->ops->forward(b->state, &bc, out, err);
	if (rc != RN_OK)
		return rc;
	for (int i = 0; i < n; i++) {
		int s = batch->seq[i];
		b->cells.pos[(size_t)s * (size_t)p->n_ctx + (size_t)b->cell[i]] = batch->pos[i];
	}
	for (int i = 0; i < n; i++) {
		int s = batch->seq[i];
		if (b->cell[i] + 1 > b->cells.used[s])
			b->cells.used[s] = b->cell[i] + 1;
	}
	return RN_OK;
}

int rn_backend_kv_remove(struct rn_backend *b, int seq, int32_t p0, int32_t p1, struct rn_error *err)
{
	int rc = check_seq(b, seq, err);
	if (rc)
		return rc;
	int c0, c1;
	rn_kv_cells_find(&b->cells, seq, p0, p1, &c0, &c1);
	if (c0 >= c1)
		return RN_OK;
	int tail = b->cells.used[seq] - c1;
	if (tail > 0)
		b->ops->kv_move(b->state, seq, c1, c0, tail);
	rn_kv_cells_remove(&b->cells, seq, c0, c1);
	return RN_OK;
}

int rn_backend_kv_shift(struct rn_backend *b, int seq, int32_t p0, int32_t p1, int32_t delta, struct rn_error *err)
{
	int rc = check_seq(b, seq, err);
	if (rc)
		return rc;
	int c0, c1;
	rn_kv_cells_find(&b->cells, seq, p0, p1, &c0, &c1);
	if (c0 >= c1 || delta == 0)
		return RN_OK;
	if ((rc = rn_kv_cells_shift(&b->cells, seq, c0, c1, delta, err)) != RN_OK)
		return rc;
	if ((rc = b->ops->kv_rotate(b->state, seq, c0, c1, delta, err)) != RN_OK) {
		struct rn_error ignored;
		if (rn_kv_cells_shift(&b->cells, seq, c0, c1, -delta, &ignored) != RN_OK)
			b->cells.used[seq] = c0; /* cannot happen (the inverse shift of a valid one); drop the range */
		return rc;
	}
	return RN_OK;
}

int rn_backend_kv_copy(struct rn_backend *b, int src, int dst, int32_t p1, struct rn_error *err)
{
	int rc;
	if ((rc = check_seq(b, src, err)) || (rc = check_seq(b, dst, err)))
		return rc;
	int c0, c1;
	rn_kv_cells_find(&b->cells, src, 0, p1, &c0, &c1);
	if (src == dst) {
		b->cells.used[dst] = c1;
		return RN_OK;
	}
	if (c1 > 0)
		b->ops->kv_copy(b->state, src, dst, c1);
	memcpy(b->cells.pos + (size_t)dst * (size_t)b->params.n_ctx, b->cells.pos + (size_t)src * (size_t)b->params.n_ctx,
	       (size_t)c1 * sizeof(int32_t));
	b->cells.used[dst] = c1;
	return RN_OK;
}

void rn_backend_kv_clear(struct rn_backend *b, int seq)
{
	if (seq >= 0 && seq < b->params.n_seq)
		b->cells.used[seq] = 0;
}

int rn_backend_kv_used(const struct rn_backend *b, int seq)
{
	return seq >= 0 && seq < b->params.n_seq ? b->cells.used[seq] : 0;
}

int32_t rn_backend_kv_next_pos(const struct rn_backend *b, int seq)
{
	return seq >= 0 && seq < b->params.n_seq ? rn_kv_cells_next_pos(&b->cells, seq) : 0;
}

uint64_t rn_backend_memory(const struct rn_backend *b)
{
	return b->ops->memory ? b->ops->memory(b->state) : 0;
}

uint64_t rn_backend_copied(const struct rn_backend *b)
{
	return b->ops->copied ? b->ops->copied(b->state) : 0;
}
