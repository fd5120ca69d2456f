/* runner/kvpool.c — the KV block pool's bookkeeping and the prefix cache's index (see runner/kvpool.h).
 *
 * Every block is in exactly one of three states: named by some table (ref > 0; published or not), published and
 * named by none (in the LRU list, kept for reuse), or free (in the free list). The index is a hash table of the
 * published blocks keyed by the chained hash; a lookup also compares the block's own tokens and its parent's
 * identity (block id and the generation it had when the child was published), so a hash collision or a parent
 * freed and reused for something else never matches.
 */
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "runner/kvpool.h"

struct blk {
	int32_t ref;        /* tables naming the block */
	bool published;
	int32_t parent;     /* published: the block holding the previous 32 tokens, -1 at position 0 */
	uint32_t gen;       /* bumped each time the block is freed, so stale children never match */
	uint32_t parent_gen;
	uint64_t hash;      /* published: chained hash of every token up to the block's end */
	int32_t hnext;      /* next block in the same hash bucket */
	int32_t prev, next; /* LRU list (published, ref 0) or free list (next only) */
	int32_t tok[RN_KV_BLOCK];
};

struct rn_kv_pool {
	int n_seq, n_ctx, bps, n_cache;
	int32_t n_blocks;
	struct rn_kv_pages pages;
	struct blk *b;
	int32_t free_head;
	int32_t mru, lru; /* the LRU list's ends */
	int32_t n_lru, n_free, n_published;
	int32_t *bucket;
	uint32_t mask;
	int *pub;   /* [n_seq] leading blocks of the sequence known to be published */
	int *taint; /* [n_seq] first cell never to publish (INT_MAX: none) */
	uint64_t block_bytes;
	uint64_t hits, misses, tokens_reused, evicted;
};

#define HASH_SEED 0x9e3779b97f4a7c15ull

static uint64_t chain_hash(uint64_t h, const int32_t *tok)
{
	for (int i = 0; i < RN_KV_BLOCK; i++) {
		h ^= (uint32_t)tok[i];
		h *= 0x100000001b3ull;
		h ^= h >> 29;
	}
	return h;
}

int64_t rn_kv_pool_blocks(int n_seq, int n_ctx, int n_cache)
{
	int64_t bps = ((int64_t)n_ctx + RN_KV_BLOCK - 1) / RN_KV_BLOCK;
	return (int64_t)n_seq * bps + (int64_t)n_cache + 1;
}

struct rn_kv_pool *rn_kv_pool_new(int n_seq, int n_ctx, int n_cache, uint64_t block_bytes, struct rn_error *err)
{
	if (n_seq < 1 || n_ctx < 1 || n_cache < 0) {
		rn_error_set(err, RN_ERR_INVALID_ARG, "KV pool of %d sequences x %d cells + %d cached blocks", n_seq, n_ctx,
			     n_cache);
		return NULL;
	}
	const int64_t nb = rn_kv_pool_blocks(n_seq, n_ctx, n_cache);
	if (nb > INT32_MAX / 4) {
		rn_error_set(err, RN_ERR_INVALID_ARG, "a KV pool of %lld blocks is too large", (long long)nb);
		return NULL;
	}
	struct rn_kv_pool *p = calloc(1, sizeof *p);
	uint32_t nbk = 1;
	while (nbk < (uint32_t)nb)
		nbk <<= 1;
	if (p) {
		p->n_seq = n_seq;
		p->n_ctx = n_ctx;
		p->bps = (n_ctx + RN_KV_BLOCK - 1) / RN_KV_BLOCK;
		p->n_cache = n_cache;
		p->n_blocks = (int32_t)nb;
		p->block_bytes = block_bytes;
		p->b = calloc((size_t)nb, sizeof *p->b);
		p->pages.table = malloc((size_t)n_seq * (size_t)p->bps * sizeof *p->pages.table);
		p->bucket = malloc((size_t)nbk * sizeof *p->bucket);
		p->pub = calloc((size_t)n_seq, sizeof *p->pub);
		p->taint = malloc((size_t)n_seq * sizeof *p->taint);
	}
	if (!p || !p->b || !p->pages.table || !p->bucket || !p->pub || !p->taint) {
		rn_kv_pool_free(p);
		rn_error_set(err, RN_ERR_NOMEM, "out of memory for a KV pool of %lld blocks", (long long)nb);
		return NULL;
	}
	p->pages.n_blocks = p->n_blocks;
	p->pages.blocks_per_seq = p->bps;
	for (size_t i = 0; i < (size_t)n_seq * (size_t)p->bps; i++)
		p->pages.table[i] = -1;
	p->mask = nbk - 1;
	for (uint32_t i = 0; i < nbk; i++)
		p->bucket[i] = -1;
	for (int s = 0; s < n_seq; s++)
		p->taint[s] = INT_MAX;
	/* the free list in increasing order: low blocks are reused first and the rest of the reservation stays
	 * uncommitted */
	p->free_head = -1;
	for (int32_t i = p->n_blocks - 1; i >= 0; i--) {
		p->b[i].parent = -1;
		p->b[i].hnext = -1;
		p->b[i].prev = -1;
		p->b[i].next = p->free_head;
		p->free_head = i;
	}
	p->n_free = p->n_blocks;
	p->mru = p->lru = -1;
	return p;
}

void rn_kv_pool_free(struct rn_kv_pool *p)
{
	if (!p)
		return;
	free(p->b);
	free(p->pages.table);
	free(p->bucket);
	free(p->pub);
	free(p->taint);
	free(p);
}

const struct rn_kv_pages *rn_kv_pool_pages(const struct rn_kv_pool *p) { return &p->pages; }

static int32_t *table_of(struct rn_kv_pool *p, int seq) { return p->pages.table + (size_t)seq * (size_t)p->bps; }

/* ---------------------------------------------------------------------------------------------------- */
/* lists and the index */

static void lru_unlink(struct rn_kv_pool *p, int32_t id)
{
	struct blk *k = &p->b[id];
	if (k->prev >= 0)
		p->b[k->prev].next = k->next;
	else
		p->mru = k->next;
	if (k->next >= 0)
		p->b[k->next].prev = k->prev;
	else
		p->lru = k->prev;
	k->prev = k->next = -1;
	p->n_lru--;
}

static void lru_push(struct rn_kv_pool *p, int32_t id)
{
	struct blk *k = &p->b[id];
	k->prev = -1;
	k->next = p->mru;
	if (p->mru >= 0)
		p->b[p->mru].prev = id;
	p->mru = id;
	if (p->lru < 0)
		p->lru = id;
	p->n_lru++;
}

static void free_push(struct rn_kv_pool *p, int32_t id)
{
	struct blk *k = &p->b[id];
	k->gen++;
	k->prev = -1;
	k->next = p->free_head;
	p->free_head = id;
	p->n_free++;
}

static void index_remove(struct rn_kv_pool *p, int32_t id)
{
	int32_t *at = &p->bucket[p->b[id].hash & p->mask];
	while (*at >= 0 && *at != id)
		at = &p->b[*at].hnext;
	if (*at == id)
		*at = p->b[id].hnext;
	p->b[id].hnext = -1;
	p->b[id].published = false;
	p->n_published--;
}

static void index_insert(struct rn_kv_pool *p, int32_t id)
{
	int32_t *head = &p->bucket[p->b[id].hash & p->mask];
	p->b[id].hnext = *head;
	*head = id;
	p->b[id].published = true;
	p->n_published++;
}

/* The published block holding tok's 32 tokens after `parent` (-1: at position 0) with chained hash h, or -1. */
static int32_t index_find(const struct rn_kv_pool *p, uint64_t h, int32_t parent, const int32_t *tok)
{
	for (int32_t id = p->bucket[h & p->mask]; id >= 0; id = p->b[id].hnext) {
		const struct blk *k = &p->b[id];
		if (k->hash != h || k->parent != parent)
			continue;
		if (parent >= 0 && (!p->b[parent].published || k->parent_gen != p->b[parent].gen))
			continue;
		if (memcmp(k->tok, tok, sizeof k->tok) == 0)
			return id;
	}
	return -1;
}

/* The oldest unused published block leaves the index and becomes free. */
static void evict_one(struct rn_kv_pool *p)
{
	int32_t id = p->lru;
	lru_unlink(p, id);
	index_remove(p, id);
	free_push(p, id);
	p->evicted++;
}

/* A block for a table: a free one, else the least recently used cached one. -1 cannot happen (the pool has a
 * block for every table entry plus one). */
static int32_t block_alloc(struct rn_kv_pool *p)
{
	if (p->free_head < 0 && p->lru >= 0)
		evict_one(p);
	int32_t id = p->free_head;
	if (id < 0)
		return -1;
	p->free_head = p->b[id].next;
	p->n_free--;
	struct blk *k = &p->b[id];
	k->next = k->prev = -1;
	k->ref = 1;
	k->parent = -1;
	return id;
}

static void block_retain(struct rn_kv_pool *p, int32_t id)
{
	if (p->b[id].ref++ == 0 && p->b[id].published)
		lru_unlink(p, id);
}

/* A table stops naming the block: kept as the most recently used when published (the budget permitting),
 * else freed. */
static void block_release(struct rn_kv_pool *p, int32_t id)
{
	if (--p->b[id].ref > 0)
		return;
	if (!p->b[id].published) {
		free_push(p, id);
		return;
	}
	lru_push(p, id);
	while (p->n_lru > p->n_cache)
		evict_one(p);
}

/* ---------------------------------------------------------------------------------------------------- */
/* tables */

void rn_kv_pool_writable(struct rn_kv_pool *p, int seq, int c0, int c1, int used, rn_kv_copy_fn copy, void *ctx)
{
	if (c0 >= c1)
		return;
	int32_t *t = table_of(p, seq);
	for (int i = c0 / RN_KV_BLOCK; i <= (c1 - 1) / RN_KV_BLOCK && i < p->bps; i++) {
		int32_t id = t[i];
		if (id < 0) {
			t[i] = block_alloc(p);
			continue;
		}
		if (!p->b[id].published && p->b[id].ref == 1)
			continue; /* private already */
		int32_t nid = block_alloc(p); /* before the release: the rows are still needed */
		int rows = used - i * RN_KV_BLOCK;
		rows = rows < 0 ? 0 : rows > RN_KV_BLOCK ? RN_KV_BLOCK : rows;
		if (rows > 0 && copy)
			copy(ctx, id, nid, rows);
		t[i] = nid;
		block_release(p, id);
		if (i < p->pub[seq])
			p->pub[seq] = i;
	}
}

/* Release the entries [from, bps) of seq's table, the last first, so that a prefix's first blocks end up the
 * most recently used (evicted after its later ones). */
static void release_from(struct rn_kv_pool *p, int seq, int from)
{
	int32_t *t = table_of(p, seq);
	for (int i = p->bps - 1; i >= from; i--)
		if (t[i] >= 0) {
			block_release(p, t[i]);
			t[i] = -1;
		}
}

void rn_kv_pool_truncate(struct rn_kv_pool *p, int seq, int n)
{
	if (n < 0)
		n = 0;
	release_from(p, seq, (n + RN_KV_BLOCK - 1) / RN_KV_BLOCK);
	if (p->pub[seq] > n / RN_KV_BLOCK)
		p->pub[seq] = n / RN_KV_BLOCK;
	if (p->taint[seq] >= n)
		p->taint[seq] = INT_MAX;
}

void rn_kv_pool_share(struct rn_kv_pool *p, int src, int dst, int n)
{
	if (src == dst) {
		rn_kv_pool_truncate(p, dst, n);
		return;
	}
	int k = (n + RN_KV_BLOCK - 1) / RN_KV_BLOCK;
	if (k > p->bps)
		k = p->bps;
	int32_t *ts = table_of(p, src), *td = table_of(p, dst);
	for (int i = 0; i < k; i++)
		if (ts[i] >= 0)
			block_retain(p, ts[i]);
	release_from(p, dst, 0);
	for (int i = 0; i < k; i++)
		td[i] = ts[i];
	int full = n / RN_KV_BLOCK;
	p->pub[dst] = p->pub[src] < full ? p->pub[src] : full;
	p->taint[dst] = p->taint[src] < n ? p->taint[src] : INT_MAX;
}

void rn_kv_pool_taint(struct rn_kv_pool *p, int seq, int from_cell)
{
	if (from_cell < p->taint[seq])
		p->taint[seq] = from_cell;
	if (p->pub[seq] > from_cell / RN_KV_BLOCK)
		p->pub[seq] = from_cell / RN_KV_BLOCK;
}

/* ---------------------------------------------------------------------------------------------------- */
/* the prefix cache */

/* Walk tok's published chain for at most n tokens, writing the blocks found to `out` when not NULL. Returns how
 * many were found. */
static int walk(const struct rn_kv_pool *p, const int32_t *tok, size_t n, int32_t *out)
{
	uint64_t h = HASH_SEED;
	int32_t parent = -1;
	int k = 0;
	for (; (size_t)(k + 1) * RN_KV_BLOCK <= n && k < p->bps; k++) {
		h = chain_hash(h, tok + (size_t)k * RN_KV_BLOCK);
		int32_t id = index_find(p, h, parent, tok + (size_t)k * RN_KV_BLOCK);
		if (id < 0)
			break;
		if (out)
			out[k] = id;
		parent = id;
	}
	return k;
}

size_t rn_kv_pool_match(const struct rn_kv_pool *p, const int32_t *tok, size_t n)
{
	return (size_t)walk(p, tok, n, NULL) * RN_KV_BLOCK;
}

size_t rn_kv_pool_attach(struct rn_kv_pool *p, int seq, const int32_t *tok, size_t n)
{
	int k = walk(p, tok, n, NULL);
	int32_t *chain = k > 0 ? malloc((size_t)k * sizeof *chain) : NULL;
	if (!chain)
		return 0; /* nothing to attach, or no memory to do it: the caller evaluates the prompt */
	(void)walk(p, tok, (size_t)k * RN_KV_BLOCK, chain);
	/* retain the chain before releasing the old content: a block in both must not reach the LRU list and be
	 * evicted in between */
	for (int i = 0; i < k; i++)
		block_retain(p, chain[i]);
	release_from(p, seq, 0);
	memcpy(table_of(p, seq), chain, (size_t)k * sizeof *chain);
	free(chain);
	p->pub[seq] = k;
	p->taint[seq] = INT_MAX;
	return (size_t)k * RN_KV_BLOCK;
}

void rn_kv_pool_account(struct rn_kv_pool *p, size_t reused)
{
	if (reused > 0)
		p->hits++;
	else
		p->misses++;
	p->tokens_reused += reused;
}

void rn_kv_pool_publish(struct rn_kv_pool *p, int seq, const int32_t *tok, size_t n)
{
	int32_t *t = table_of(p, seq);
	size_t lim = n < (size_t)p->taint[seq] ? n : (size_t)p->taint[seq];
	int full = (int)(lim / RN_KV_BLOCK);
	if (full > p->bps)
		full = p->bps;
	for (int i = p->pub[seq]; i < full; i++) {
		int32_t id = t[i], parent = i > 0 ? t[i - 1] : -1;
		if (id < 0 || (parent >= 0 && !p->b[parent].published))
			return; /* cannot happen: the earlier blocks are published */
		uint64_t h = chain_hash(i > 0 ? p->b[parent].hash : HASH_SEED, tok + (size_t)i * RN_KV_BLOCK);
		int32_t have = index_find(p, h, parent, tok + (size_t)i * RN_KV_BLOCK);
		if (have == id) {
			p->pub[seq] = i + 1;
			continue;
		}
		if (p->b[id].published)
			return; /* a published block with other content (cannot happen: writes copy first) */
		if (have >= 0) {
			/* another sequence published the same prefix first (both evaluated it): keep one copy */
			block_retain(p, have);
			t[i] = have;
			block_release(p, id);
		} else {
			struct blk *k = &p->b[id];
			k->hash = h;
			k->parent = parent;
			k->parent_gen = parent >= 0 ? p->b[parent].gen : 0;
			memcpy(k->tok, tok + (size_t)i * RN_KV_BLOCK, sizeof k->tok);
			index_insert(p, id);
		}
		p->pub[seq] = i + 1;
	}
}

void rn_kv_pool_stats(const struct rn_kv_pool *p, struct rn_cache_stats *st)
{
	memset(st, 0, sizeof *st);
	st->enabled = true;
	st->hits = p->hits;
	st->misses = p->misses;
	st->tokens_reused = p->tokens_reused;
	st->blocks_evicted = p->evicted;
	st->blocks_cached = (uint64_t)p->n_published;
	st->blocks_total = (uint64_t)p->n_blocks;
	st->blocks_used = (uint64_t)(p->n_blocks - p->n_free - p->n_lru);
	st->block_bytes = p->block_bytes;
	st->bytes_held = (uint64_t)(p->n_blocks - p->n_free) * p->block_bytes;
	st->bytes_budget = (uint64_t)p->n_cache * p->block_bytes;
}

int rn_kv_pool_check(const struct rn_kv_pool *p, struct rn_error *err)
{
	int32_t *ref = calloc((size_t)p->n_blocks, sizeof *ref);
	char *where = calloc((size_t)p->n_blocks, 1); /* 1 free, 2 lru */
	int rc = RN_OK;
	if (!ref || !where) {
		rc = rn_error_set(err, RN_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < (size_t)p->n_seq * (size_t)p->bps; i++) {
		int32_t id = p->pages.table[i];
		if (id < -1 || id >= p->n_blocks) {
			rc = rn_error_set(err, RN_ERR_INVALID_ARG, "table entry %zu names block %d", i, id);
			goto out;
		}
		if (id >= 0)
			ref[id]++;
	}
	int n_free = 0, n_lru = 0, n_pub = 0;
	for (int32_t id = p->free_head; id >= 0 && n_free <= p->n_blocks; id = p->b[id].next, n_free++)
		where[id] |= 1;
	for (int32_t id = p->mru, prev = -1; id >= 0 && n_lru <= p->n_blocks; prev = id, id = p->b[id].next, n_lru++) {
		where[id] |= 2;
		if (p->b[id].prev != prev) {
			rc = rn_error_set(err, RN_ERR_INVALID_ARG, "LRU list broken at block %d", id);
			goto out;
		}
	}
	if (n_free != p->n_free || n_lru != p->n_lru) {
		rc = rn_error_set(err, RN_ERR_INVALID_ARG, "lists hold %d free and %d cached blocks, counted %d and %d",
				  n_free, n_lru, p->n_free, p->n_lru);
		goto out;
	}
	if (n_lru > p->n_cache) {
		rc = rn_error_set(err, RN_ERR_INVALID_ARG, "%d unused cached blocks over a budget of %d", n_lru, p->n_cache);
		goto out;
	}
	for (int32_t id = 0; id < p->n_blocks; id++) {
		const struct blk *k = &p->b[id];
		n_pub += k->published;
		if (k->ref != ref[id]) {
			rc = rn_error_set(err, RN_ERR_INVALID_ARG, "block %d: reference count %d, tables name it %d times", id,
					  k->ref, ref[id]);
			goto out;
		}
		int want = ref[id] > 0 ? 0 : k->published ? 2 : 1;
		if (where[id] != want) {
			rc = rn_error_set(err, RN_ERR_INVALID_ARG, "block %d (ref %d, %s) is in the wrong list (%d)", id,
					  ref[id], k->published ? "published" : "unpublished", where[id]);
			goto out;
		}
		if (k->published && index_find(p, k->hash, k->parent, k->tok) != id &&
		    !(k->parent >= 0 && (!p->b[k->parent].published || p->b[k->parent].gen != k->parent_gen))) {
			rc = rn_error_set(err, RN_ERR_INVALID_ARG, "published block %d is not found by its key", id);
			goto out;
		}
	}
	if (n_pub != p->n_published)
		rc = rn_error_set(err, RN_ERR_INVALID_ARG, "%d published blocks, counted %d", n_pub, p->n_published);
	for (int s = 0; rc == RN_OK && s < p->n_seq; s++) {
		const int32_t *t = p->pages.table + (size_t)s * (size_t)p->bps;
		for (int i = 0; i < p->pub[s]; i++)
			if (t[i] < 0 || !p->b[t[i]].published) {
				rc = rn_error_set(err, RN_ERR_INVALID_ARG, "sequence %d: block %d counted published is not", s, i);
				break;
			}
	}
out:
	free(ref);
	free(where);
	return rc;
}
