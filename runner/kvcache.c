/* runner/kvcache.c — KV element types, the per-sequence cell bookkeeping (positions only) and the host
 * storage of the cached rows (layout, reservation, moves and copies; the f32 conversion is the backend's). */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "runner/kvcache.h"

const char *rn_kv_type_name(enum rn_kv_type t)
{
	return t == RN_KV_Q8_0 ? "q8_0" : "f16";
}

int rn_kv_type_parse(const char *s, enum rn_kv_type *out, struct rn_error *err)
{
	if (!s || !*s || strcmp(s, "f16") == 0) {
		*out = RN_KV_F16;
		return RN_OK;
	}
	if (strcmp(s, "q8_0") == 0) {
		*out = RN_KV_Q8_0;
		return RN_OK;
	}
	return rn_error_set(err, RN_ERR_INVALID_ARG, "KV cache type '%.32s' is not supported (f16, q8_0)", s);
}

size_t rn_kv_row_bytes(enum rn_kv_type t, int n)
{
	if (t == RN_KV_Q8_0)
		return (size_t)(n / 32) * 34u;
	return (size_t)n * 2u;
}

int rn_kv_cells_init(struct rn_kv_cells *c, int n_seq, int n_ctx, struct rn_error *err)
{
	memset(c, 0, sizeof *c);
	c->used = calloc((size_t)n_seq, sizeof *c->used);
	c->pos = malloc((size_t)n_seq * (size_t)n_ctx * sizeof *c->pos);
	if (!c->used || !c->pos) {
		rn_kv_cells_free(c);
		return rn_error_set(err, RN_ERR_NOMEM, "out of memory for the KV bookkeeping of %d x %d cells", n_seq, n_ctx);
	}
	c->n_seq = n_seq;
	c->n_ctx = n_ctx;
	return RN_OK;
}

void rn_kv_cells_free(struct rn_kv_cells *c)
{
	free(c->used);
	free(c->pos);
	memset(c, 0, sizeof *c);
}

/* First cell of seq whose position is >= p (binary search over the increasing positions). */
static int lower_bound(const struct rn_kv_cells *c, int seq, int32_t p)
{
	const int32_t *pos = c->pos + (size_t)seq * (size_t)c->n_ctx;
	int lo = 0, hi = c->used[seq];
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (pos[mid] < p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void rn_kv_cells_find(const struct rn_kv_cells *c, int seq, int32_t p0, int32_t p1, int *c0, int *c1)
{
	*c0 = lower_bound(c, seq, p0 < 0 ? 0 : p0);
	*c1 = p1 < 0 ? c->used[seq] : lower_bound(c, seq, p1);
	if (*c1 < *c0)
		*c1 = *c0;
}

int32_t rn_kv_cells_next_pos(const struct rn_kv_cells *c, int seq)
{
	int n = c->used[seq];
	return n ? c->pos[(size_t)seq * (size_t)c->n_ctx + (size_t)n - 1] + 1 : 0;
}

void rn_kv_cells_remove(struct rn_kv_cells *c, int seq, int c0, int c1)
{
	int32_t *pos = c->pos + (size_t)seq * (size_t)c->n_ctx;
	int n = c->used[seq];
	if (c0 >= c1)
		return;
	memmove(pos + c0, pos + c1, (size_t)(n - c1) * sizeof *pos);
	c->used[seq] = n - (c1 - c0);
}

int rn_kv_cells_shift(struct rn_kv_cells *c, int seq, int c0, int c1, int32_t delta, struct rn_error *err)
{
	int32_t *pos = c->pos + (size_t)seq * (size_t)c->n_ctx;
	int n = c->used[seq];
	if (c0 >= c1 || delta == 0)
		return RN_OK;
	int64_t first = (int64_t)pos[c0] + delta, last = (int64_t)pos[c1 - 1] + delta;
	if (first < 0 || last > INT32_MAX)
		return rn_error_set(err, RN_ERR_INVALID_ARG, "shifting positions %" PRId32 "..%" PRId32 " by %" PRId32
				    " leaves the valid range", pos[c0], pos[c1 - 1], delta);
	if (c0 > 0 && first <= pos[c0 - 1])
		return rn_error_set(err, RN_ERR_INVALID_ARG, "shifting position %" PRId32 " by %" PRId32
				    " would overlap cached position %" PRId32, pos[c0], delta, pos[c0 - 1]);
	if (c1 < n && last >= pos[c1])
		return rn_error_set(err, RN_ERR_INVALID_ARG, "shifting position %" PRId32 " by %" PRId32
				    " would overlap cached position %" PRId32, pos[c1 - 1], delta, pos[c1]);
	for (int i = c0; i < c1; i++)
		pos[i] += delta;
	return RN_OK;
}

/* ---------------------------------------------------------------------------------------------------- */
/* host storage */

int rn_kv_store_init(struct rn_kv_store *s, enum rn_kv_type type, int n_layer, int n_blocks, int kv_dim,
		     int head_dim, struct rn_error *err)
{
	memset(s, 0, sizeof *s);
	const size_t row = rn_kv_row_bytes(type, kv_dim);
	const size_t bytes = (size_t)n_layer * 2u * (size_t)n_blocks * RN_KV_BLOCK * row;
	/* reserved address space, committed by the kernel only where rows are written */
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return rn_error_set(err, RN_ERR_NOMEM, "cannot reserve %.1f MiB for the KV cache (%d blocks of %d tokens)",
				    (double)bytes / 1048576.0, n_blocks, RN_KV_BLOCK);
	*s = (struct rn_kv_store){
		.type = type,
		.n_layer = n_layer,
		.n_blocks = n_blocks,
		.row_bytes = row,
		.head_bytes = rn_kv_row_bytes(type, head_dim),
		.block_bytes = RN_KV_BLOCK * row,
		.bytes = bytes,
		.data = p,
	};
	return RN_OK;
}

void rn_kv_store_free(struct rn_kv_store *s)
{
	if (s->data)
		munmap(s->data, s->bytes);
	memset(s, 0, sizeof *s);
}

void rn_kv_store_move(const struct rn_kv_store *s, const struct rn_kv_pages *pg, int seq, int src, int dst, int n)
{
	/* runs of cells that stay inside one source and one destination block move with one memmove */
	for (int l = 0; l < s->n_layer; l++)
		for (int t = 0; t < 2; t++)
			for (int i = 0; i < n;) {
				int a = src + i, b = dst + i;
				int run = RN_KV_BLOCK - a % RN_KV_BLOCK;
				if (RN_KV_BLOCK - b % RN_KV_BLOCK < run)
					run = RN_KV_BLOCK - b % RN_KV_BLOCK;
				if (n - i < run)
					run = n - i;
				memmove(rn_kv_store_row(s, pg, l, t, seq, b), rn_kv_store_row(s, pg, l, t, seq, a),
					(size_t)run * s->row_bytes);
				i += run;
			}
}

void rn_kv_store_block_copy(const struct rn_kv_store *s, int32_t src, int32_t dst, int n)
{
	for (int l = 0; l < s->n_layer; l++)
		for (int t = 0; t < 2; t++)
			memcpy(rn_kv_store_block(s, l, t, dst), rn_kv_store_block(s, l, t, src), (size_t)n * s->row_bytes);
}
