/* runner/kvpool.h — who holds which KV block, and the prefix cache over them.
 *
 * A paged backend keeps every sequence's cells in blocks of RN_KV_BLOCK cells from one pool (runner/kvcache.h).
 * This is the bookkeeping of that pool, with no rows in it (the backend has those): each sequence's block
 * table, a reference count per block (how many tables name it), and an index of published blocks. A block is
 * published when it is full and its 32 tokens sit at positions 32 i .. 32 i + 31 of a sequence whose earlier
 * blocks are published too; its key is the chained hash of every token from position 0 to its end, checked
 * against the block's own tokens and its parent's identity, so a published block is the KV of exactly that
 * prefix and any sequence may attach it instead of evaluating the prefix again.
 *
 * Rules that keep shared data safe: a published block is never written (a write into one goes to a private
 * copy first: copy-on-write, through the caller's copy function), nor is a block named by two tables. A block
 * no table names is free, or, when published, kept in a least-recently-used list of at most n_cache blocks
 * (the budget); past that the oldest is unpublished and freed. Only full blocks written by a successful
 * forward call are published, so a request cancelled mid-prefill leaves nothing half-written in the index.
 *
 * Not thread-safe: the engine thread (through runner/backend.c) is its only user.
 */
#ifndef ORUN_RUNNER_KVPOOL_H
#define ORUN_RUNNER_KVPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runner/error.h"
#include "runner/kvcache.h"

struct rn_cache_stats {
	bool enabled;              /* a paged backend (the pool exists) */
	uint64_t hits, misses;     /* requests that did / did not start from cached tokens */
	uint64_t tokens_reused;    /* prompt tokens not evaluated because they were cached */
	uint64_t blocks_evicted;   /* published blocks dropped to keep the budget */
	uint64_t blocks_cached;    /* published blocks now (in use by a sequence or kept for reuse) */
	uint64_t blocks_used;      /* blocks named by some table now */
	uint64_t blocks_total;     /* the pool */
	uint64_t bytes_held;       /* bytes of the blocks in use or kept now */
	uint64_t bytes_budget;     /* the most bytes of unused published blocks kept (the budget) */
	uint64_t block_bytes;      /* bytes of one block (every layer, keys and values) */
};

struct rn_kv_pool;

/* A pool for n_seq sequences of n_ctx cells plus n_cache blocks for the cache (its budget); block_bytes only
 * feeds the statistics. The pool holds n_seq * ceil(n_ctx / RN_KV_BLOCK) + n_cache + 1 blocks (rn_kv_pool_blocks),
 * so every sequence can always get the blocks it needs, one copy-on-write in flight included. NULL with *err on
 * a bad size or no memory. */
struct rn_kv_pool *rn_kv_pool_new(int n_seq, int n_ctx, int n_cache, uint64_t block_bytes, struct rn_error *err) RN_WUR;
void rn_kv_pool_free(struct rn_kv_pool *p);

/* The blocks a pool of these sizes holds (what the backend's store must have room for). */
int64_t rn_kv_pool_blocks(int n_seq, int n_ctx, int n_cache);

/* The tables, for the backend (live: they change as the pool works). */
const struct rn_kv_pages *rn_kv_pool_pages(const struct rn_kv_pool *p);

/* Copies the first n rows of block src into block dst (the backend's copy-on-write). */
typedef void (*rn_kv_copy_fn)(void *ctx, int32_t src, int32_t dst, int n);

/* Make cells [c0, c1) of seq writable, seq having `used` cells in use: every block those cells fall in gets
 * attached if missing and, when it is published or named by another table, replaced by a private copy of its
 * first min(used - start, RN_KV_BLOCK) rows (copy called for them). Never fails for c1 <= n_ctx. */
void rn_kv_pool_writable(struct rn_kv_pool *p, int seq, int c0, int c1, int used, rn_kv_copy_fn copy, void *ctx);

/* seq keeps its first n cells: blocks wholly at or past n are released. */
void rn_kv_pool_truncate(struct rn_kv_pool *p, int seq, int n);

/* dst's content becomes the first n cells of src, their blocks shared (dst's old blocks are released). */
void rn_kv_pool_share(struct rn_kv_pool *p, int src, int dst, int n);

/* Tokens of tok[0 .. n) held as a published prefix (a multiple of RN_KV_BLOCK). Touches nothing. */
size_t rn_kv_pool_match(const struct rn_kv_pool *p, const int32_t *tok, size_t n);

/* seq's content becomes the published prefix of tok of n tokens (n <= rn_kv_pool_match): its old blocks are
 * released, the prefix's blocks attached. Returns n, or fewer when less is published; 0 (seq unchanged) when
 * nothing is, or there was no memory to do it. */
size_t rn_kv_pool_attach(struct rn_kv_pool *p, int seq, const int32_t *tok, size_t n);

/* Count a request that started from `reused` cached tokens (a hit when > 0, else a miss), whether they came from
 * its own sequence or from blocks it attached. */
void rn_kv_pool_account(struct rn_kv_pool *p, size_t reused);

/* seq's first n cells hold tok[0 .. n) at positions 0 .. n-1: publish its full blocks not yet published (a block
 * whose prefix another block already holds is swapped for that one and freed). */
void rn_kv_pool_publish(struct rn_kv_pool *p, int seq, const int32_t *tok, size_t n);

/* seq's cells from from_cell on no longer hold the KV of a fresh evaluation of its tokens (they moved, or their
 * keys were re-rotated: a context shift): they are never published, until seq is truncated to from_cell or less,
 * attached or emptied. */
void rn_kv_pool_taint(struct rn_kv_pool *p, int seq, int from_cell);

void rn_kv_pool_stats(const struct rn_kv_pool *p, struct rn_cache_stats *st);

/* Checks every invariant (reference counts match the tables, the index and the LRU list agree, no published
 * block is in a free list); for tests. Returns RN_OK or RN_ERR_INVALID_ARG naming the first broken one. */
int rn_kv_pool_check(const struct rn_kv_pool *p, struct rn_error *err) RN_WUR;

#endif
