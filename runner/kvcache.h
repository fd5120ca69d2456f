/* runner/kvcache.h — the KV cache: its element types, the cell bookkeeping shared by every backend, and the
 * storage of the cached rows in host memory (the CPU backend's; the CUDA backend keeps its rows on the device).
 *
 * Each sequence (slot) owns n_ctx cells. Cells are filled in order and always hold increasing positions,
 * so "the cells a query at cell c may attend to" is simply cells [0, c]. Positions and cells differ only
 * after a removal without a shift. The bookkeeping does the arithmetic on positions; the backends move and
 * re-rotate the stored rows when told which cells to touch (the host storage below moves and copies them).
 */
#ifndef ORUN_RUNNER_KVCACHE_H
#define ORUN_RUNNER_KVCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runner/error.h"

/* Element type of cached keys and values (OLLAMA_KV_CACHE_TYPE). */
enum rn_kv_type {
	RN_KV_F16 = 0, /* IEEE half, one per value (the default) */
	RN_KV_Q8_0,    /* ggml's Q8_0 blocks: 32 int8 values and one f16 scale, 34 bytes */
};

/* "f16" / "q8_0". */
const char *rn_kv_type_name(enum rn_kv_type t);

/* Parse an OLLAMA_KV_CACHE_TYPE value ("f16", "q8_0"; "" or NULL = f16). Returns RN_OK or
 * RN_ERR_INVALID_ARG naming the value and the accepted ones. */
int rn_kv_type_parse(const char *s, enum rn_kv_type *out, struct rn_error *err) RN_WUR;

/* Bytes of one cached row of n values (n a multiple of 32 for Q8_0). */
size_t rn_kv_row_bytes(enum rn_kv_type t, int n);

/* Cell bookkeeping of n_seq sequences of n_ctx cells. */
struct rn_kv_cells {
	int n_seq;
	int n_ctx;
	int *used;      /* [n_seq] cells in use */
	int32_t *pos;   /* [n_seq][n_ctx] position of each used cell, increasing */
};

int rn_kv_cells_init(struct rn_kv_cells *c, int n_seq, int n_ctx, struct rn_error *err) RN_WUR;
void rn_kv_cells_free(struct rn_kv_cells *c);

/* The cells of seq whose positions lie in [p0, p1) (p1 < 0: no upper bound) are [*c0, *c1). */
void rn_kv_cells_find(const struct rn_kv_cells *c, int seq, int32_t p0, int32_t p1, int *c0, int *c1);

/* Position after the last used cell of seq (0 when empty). */
int32_t rn_kv_cells_next_pos(const struct rn_kv_cells *c, int seq);

/* Delete cells [c0, c1) of seq, moving the later ones down. */
void rn_kv_cells_remove(struct rn_kv_cells *c, int seq, int c0, int c1);

/* Check that adding delta to cells [c0, c1) of seq keeps positions increasing and >= 0 (RN_ERR_INVALID_ARG
 * otherwise), then apply it. */
int rn_kv_cells_shift(struct rn_kv_cells *c, int seq, int c0, int c1, int32_t delta, struct rn_error *err) RN_WUR;

/* ---------------------------------------------------------------------------------------------------- */
/* Pages: a sequence's cells live in blocks of RN_KV_BLOCK cells taken from one pool shared by every sequence
 * of an instance (runner/kvpool.h owns who holds which block). Cell c of seq is cell c % RN_KV_BLOCK of block
 * table[seq * blocks_per_seq + c / RN_KV_BLOCK]. Two sequences whose tables name the same block read the same
 * rows: a prefix cached once serves every slot without a copy. A paged backend reads and writes its rows only
 * through these tables; runner/backend.c makes a block private (copy-on-write) before anything writes to it. */
#define RN_KV_BLOCK 32

struct rn_kv_pages {
	int n_blocks;        /* blocks in the pool */
	int blocks_per_seq;  /* ceil(n_ctx / RN_KV_BLOCK) */
	int32_t *table;      /* [n_seq][blocks_per_seq]: block id, or -1 where no block is attached */
};

/* The block holding cell `cell` of seq (-1 when none is attached). */
static inline int32_t rn_kv_pages_block(const struct rn_kv_pages *pg, int seq, int cell)
{
	return pg->table[(size_t)seq * (size_t)pg->blocks_per_seq + (size_t)(cell / RN_KV_BLOCK)];
}

/* ---------------------------------------------------------------------------------------------------- */
/* Host storage of a pool of blocks: rows of n_layer x {K, V} x n_blocks x RN_KV_BLOCK cells, each row the
 * kv_dim values of one token in rn_kv_row_bytes(type, kv_dim) bytes, a KV head's head_dim values at head_bytes
 * strides inside it. The RN_KV_BLOCK rows of one block are contiguous (block_bytes apart from the next block of
 * the same layer and kind). The rows are converted to and from f32 by the backend. */
struct rn_kv_store {
	enum rn_kv_type type;
	int n_layer, n_blocks;
	size_t row_bytes;   /* bytes of one cell's row (kv_dim values) */
	size_t head_bytes;  /* bytes of one KV head's head_dim values inside a row */
	size_t block_bytes; /* RN_KV_BLOCK * row_bytes */
	size_t bytes;       /* the whole reservation */
	uint8_t *data;      /* [n_layer][2][n_blocks][RN_KV_BLOCK][row_bytes] */
};

/* Reserves the storage of n_blocks blocks (address space only: the kernel commits pages where rows are written,
 * so a large pool costs memory only as it fills). Returns RN_OK, or RN_ERR_NOMEM naming the size with *s
 * zeroed. */
int rn_kv_store_init(struct rn_kv_store *s, enum rn_kv_type type, int n_layer, int n_blocks, int kv_dim,
		     int head_dim, struct rn_error *err) RN_WUR;
/* Releases the storage; a zeroed or freed store is fine. */
void rn_kv_store_free(struct rn_kv_store *s);

/* The first row of block `block` in layer `layer`'s keys (kv 0) or values (kv 1). */
static inline uint8_t *rn_kv_store_block(const struct rn_kv_store *s, int layer, int kv, int32_t block)
{
	size_t idx = ((size_t)layer * 2 + (size_t)kv) * (size_t)s->n_blocks + (size_t)block;
	return s->data + idx * s->block_bytes;
}

/* The row of cell `cell` of seq through the tables, in layer `layer`'s keys (kv 0) or values (kv 1). */
static inline uint8_t *rn_kv_store_row(const struct rn_kv_store *s, const struct rn_kv_pages *pg, int layer, int kv,
				       int seq, int cell)
{
	return rn_kv_store_block(s, layer, kv, rn_kv_pages_block(pg, seq, cell)) +
	       (size_t)(cell % RN_KV_BLOCK) * s->row_bytes;
}

/* Moves cells [src, src + n) of seq to [dst, dst + n) in every layer's keys and values, through the tables
 * (ranges may overlap; dst < src or the ranges are disjoint; every block touched is attached). */
void rn_kv_store_move(const struct rn_kv_store *s, const struct rn_kv_pages *pg, int seq, int src, int dst, int n);
/* Copies the first n rows of block src to block dst in every layer's keys and values (copy-on-write). */
void rn_kv_store_block_copy(const struct rn_kv_store *s, int32_t src, int32_t dst, int n);

#endif
