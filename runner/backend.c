/* runner/backend.c — the one place that knows which backends exist in this build, and the checks and
 * KV-cell bookkeeping every backend instance shares.
 *
 * The CUDA backend is registered behind the single ORUN_WITH_CUDA #ifdef the style guide allows; everything
 * else (servers, tools) asks about devices here. Backends receive only validated calls expressed in cells
 * (runner/kvcache.h); positions never reach them.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
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
	int *first_cell;    /* [n_seq] scratch: the first cell a batch writes */
	struct rn_kv_pool *pool; /* paged backends: the blocks and the prefix cache; NULL otherwise */
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

/* Bytes of one KV block: RN_KV_BLOCK rows of keys and values in every layer. */
static uint64_t block_bytes(const struct rn_model *m, const struct rn_load_params *p)
{
	return (uint64_t)m->hp.n_layer * 2u * RN_KV_BLOCK * rn_kv_row_bytes(p->kv_type, m->hp.n_head_kv * m->hp.head_dim);
}

/* A size as ORUN_PREFIX_CACHE gives it: digits, then optionally K, M, G, T (powers of 1000, "B" after them
 * allowed) or KiB, MiB, GiB, TiB (powers of 1024). Returns -1 when it is not one. */
static long long parse_size(const char *s)
{
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (end == s || errno || !isdigit((unsigned char)s[0]))
		return -1;
	while (*end == ' ')
		end++;
	static const struct { const char *suffix; unsigned long long mul; } units[] = {
		{"", 1}, {"B", 1}, {"K", 1000ull}, {"KB", 1000ull}, {"KiB", 1ull << 10}, {"M", 1000000ull},
		{"MB", 1000000ull}, {"MiB", 1ull << 20}, {"G", 1000000000ull}, {"GB", 1000000000ull}, {"GiB", 1ull << 30},
		{"T", 1000000000000ull}, {"TB", 1000000000000ull}, {"TiB", 1ull << 40},
	};
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (strcmp(end, units[i].suffix) == 0)
			return v > (unsigned long long)LLONG_MAX / units[i].mul ? -1 : (long long)(v * units[i].mul);
	return -1;
}

uint64_t rn_mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	if (!f)
		return 0;
	char line[256];
	unsigned long long kb = 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb * 1024u;
}

/* The prefix cache's budget in blocks: rn_load_params.cache_bytes when asked, else ORUN_PREFIX_CACHE, else half
 * of the memory left once the weights (if they are not resident yet) and every slot's full KV are counted. */
static int cache_blocks(const struct rn_backend *b, int *n, struct rn_error *err)
{
	const struct rn_load_params *p = &b->params;
	const uint64_t bb = block_bytes(b->model, p);
	long long bytes = p->cache_bytes;
	if (bytes < 0) {
		const char *env = getenv("ORUN_PREFIX_CACHE");
		if (env && env[0]) {
			if ((bytes = parse_size(env)) < 0)
				return rn_error_set(err, RN_ERR_INVALID_ARG, "ORUN_PREFIX_CACHE=%s is not a size (bytes, or a number "
						    "with K, M, G, KiB, MiB or GiB)", env);
		} else {
			uint64_t avail = rn_mem_available();
			uint64_t slots = (uint64_t)(rn_kv_pool_blocks(p->n_seq, p->n_ctx, 0)) * bb;
			uint64_t need = slots + (p->no_mmap ? 0 : b->model->weight_bytes);
			bytes = avail > need ? (long long)((avail - need) / 2) : 0;
		}
	}
	/* at most 2^16 blocks (2M tokens: more than any memory holds for a real model; it bounds the bookkeeping
	 * for tiny test models) */
	const long long cap = 1 << 16;
	long long blocks = bb ? bytes / (long long)bb : 0;
	*n = (int)(blocks < 0 ? 0 : blocks > cap ? cap : blocks);
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
	b->first_cell = malloc((size_t)q->n_seq * sizeof *b->first_cell);
	if (!b->cell || !b->out_row || !b->next_cell || !b->last_pos || !b->first_cell) {
		rn_error_set(err, RN_ERR_NOMEM, "out of memory");
		goto fail;
	}
	if (b->ops->load_paged) {
		int n_cache = 0;
		if (cache_blocks(b, &n_cache, err) != RN_OK)
			goto fail;
		if (!(b->pool = rn_kv_pool_new(q->n_seq, q->n_ctx, n_cache, block_bytes(m, q), err)))
			goto fail;
		if (b->ops->load_paged(m, q, rn_kv_pool_pages(b->pool), &b->state, err) != RN_OK)
			goto fail;
	} else if (b->ops->load(m, q, &b->state, err) != RN_OK) {
		goto fail;
	}
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
	free(b->first_cell);
	rn_kv_pool_free(b->pool);
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

static void block_copy(void *ctx, int32_t src, int32_t dst, int n)
{
	struct rn_backend *b = ctx;
	b->ops->kv_block_copy(b->state, src, dst, n);
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
	if (b->pool) {
		/* the blocks the batch writes become private (attached, or copied when shared or published), and
		 * cells written at a position other than their index can never be published */
		for (int s = 0; s < p->n_seq; s++)
			b->first_cell[s] = -1;
		for (int i = 0; i < n; i++) {
			int s = batch->seq[i];
			if (b->first_cell[s] < 0)
				b->first_cell[s] = b->cell[i];
			if (batch->pos[i] != b->cell[i])
				rn_kv_pool_taint(b->pool, s, b->cell[i]);
		}
		for (int s = 0; s < p->n_seq; s++)
			if (b->first_cell[s] >= 0)
				rn_kv_pool_writable(b->pool, s, b->first_cell[s], b->next_cell[s], b->cells.used[s],
						    block_copy, b);
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
	const int used = b->cells.used[seq], tail = used - c1;
	if (tail > 0) {
		if (b->pool) {
			rn_kv_pool_writable(b->pool, seq, c0, used, used, block_copy, b);
			rn_kv_pool_taint(b->pool, seq, c0); /* the moved cells' KV saw the removed ones */
		}
		b->ops->kv_move(b->state, seq, c1, c0, tail);
	}
	rn_kv_cells_remove(&b->cells, seq, c0, c1);
	if (b->pool)
		rn_kv_pool_truncate(b->pool, seq, b->cells.used[seq]);
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
	if (b->pool) {
		rn_kv_pool_writable(b->pool, seq, c0, c1, b->cells.used[seq], block_copy, b);
		rn_kv_pool_taint(b->pool, seq, c0);
	}
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
		if (b->pool)
			rn_kv_pool_truncate(b->pool, dst, c1);
		return RN_OK;
	}
	if (b->pool)
		rn_kv_pool_share(b->pool, src, dst, c1); /* the blocks are shared, copied only when written */
	else if (c1 > 0)
		b->ops->kv_copy(b->state, src, dst, c1);
	memcpy(b->cells.pos + (size_t)dst * (size_t)b->params.n_ctx, b->cells.pos + (size_t)src * (size_t)b->params.n_ctx,
	       (size_t)c1 * sizeof(int32_t));
	b->cells.used[dst] = c1;
	return RN_OK;
}

void rn_backend_kv_clear(struct rn_backend *b, int seq)
{
	if (seq >= 0 && seq < b->params.n_seq) {
		b->cells.used[seq] = 0;
		if (b->pool)
			rn_kv_pool_truncate(b->pool, seq, 0);
	}
}

size_t rn_backend_kv_match(const struct rn_backend *b, const int32_t *tok, size_t n)
{
	return b->pool ? rn_kv_pool_match(b->pool, tok, n) : 0;
}

int rn_backend_kv_attach(struct rn_backend *b, int seq, const int32_t *tok, size_t n, struct rn_error *err)
{
	int rc = check_seq(b, seq, err);
	if (rc)
		return rc;
	if (!b->pool || n == 0)
		return RN_OK;
	if (n > (size_t)b->params.n_ctx || n % RN_KV_BLOCK)
		return rn_error_set(err, RN_ERR_INVALID_ARG, "cannot attach %zu cached tokens (a multiple of %d up to %d)", n,
				    RN_KV_BLOCK, b->params.n_ctx);
	size_t got = rn_kv_pool_attach(b->pool, seq, tok, n);
	if (got == 0)
		return rn_error_set(err, RN_ERR_NOMEM, "could not attach %zu cached tokens", n);
	int32_t *pos = b->cells.pos + (size_t)seq * (size_t)b->params.n_ctx;
	for (size_t i = 0; i < got; i++)
		pos[i] = (int32_t)i;
	b->cells.used[seq] = (int)got;
	if (got < n)
		return rn_error_set(err, RN_ERR_INVALID_ARG, "only %zu of %zu tokens are cached", got, n);
	return RN_OK;
}

void rn_backend_kv_publish(struct rn_backend *b, int seq, const int32_t *tok, size_t n)
{
	if (!b->pool || seq < 0 || seq >= b->params.n_seq)
		return;
	if (n > (size_t)b->cells.used[seq])
		n = (size_t)b->cells.used[seq];
	rn_kv_pool_publish(b->pool, seq, tok, n);
}

void rn_backend_kv_account(struct rn_backend *b, size_t reused)
{
	if (b->pool)
		rn_kv_pool_account(b->pool, reused);
}

int rn_backend_kv_check(const struct rn_backend *b, struct rn_error *err)
{
	return b->pool ? rn_kv_pool_check(b->pool, err) : RN_OK;
}

void rn_backend_cache_stats(const struct rn_backend *b, struct rn_cache_stats *st)
{
	if (b->pool)
		rn_kv_pool_stats(b->pool, st);
	else
		memset(st, 0, sizeof *st);
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
