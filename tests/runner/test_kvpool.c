/* tests/runner/test_kvpool.c — the KV block pool and the prefix cache's index (runner/kvpool.c), without a model:
 * a fake store keeps one number per cell (the token written there), so every check is about what a sequence
 * would read through its table. Fixed cases (publish, match, attach, copy-on-write, eviction under a budget,
 * deduplication, taint), then a long random walk of every operation on three sequences checked after each
 * step against a plain model of what each sequence holds.
 */
#include "config.h"

#include "runner/kvpool.h"
#include "tests/check.h"

#define MAXB 4096

static int32_t store[MAXB][RN_KV_BLOCK]; /* the fake rows: the token each cell holds */
static int copies;

static void copy_rows(void *ctx, int32_t src, int32_t dst, int n)
{
	(void)ctx;
	memcpy(store[dst], store[src], (size_t)n * sizeof store[0][0]);
	copies++;
}

/* seq writes tok[c0 .. c1) into cells c0 .. c1, having `used` cells before. */
static void write_cells(struct rn_kv_pool *p, int seq, const int32_t *tok, int c0, int c1, int used)
{
	rn_kv_pool_writable(p, seq, c0, c1, used, copy_rows, NULL);
	const struct rn_kv_pages *pg = rn_kv_pool_pages(p);
	for (int c = c0; c < c1; c++)
		store[rn_kv_pages_block(pg, seq, c)][c % RN_KV_BLOCK] = tok[c];
}

/* What seq reads in its first n cells equals tok. */
static bool reads(const struct rn_kv_pool *p, int seq, const int32_t *tok, int n)
{
	const struct rn_kv_pages *pg = rn_kv_pool_pages(p);
	for (int c = 0; c < n; c++) {
		int32_t b = rn_kv_pages_block(pg, seq, c);
		if (b < 0 || b >= pg->n_blocks || store[b][c % RN_KV_BLOCK] != tok[c])
			return false;
	}
	return true;
}

static void check_pool(const struct rn_kv_pool *p, int line)
{
	struct rn_error err = {0};
	int rc = rn_kv_pool_check(p, &err);
	CHECKF(rc == RN_OK, "line %d: %s", line, err.msg);
}
#define CHECK_POOL(p) check_pool(p, __LINE__)

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static void fixed_cases(void)
{
	struct rn_error err = {0};
	enum { CTX = 256 };
	int32_t a[CTX], b[CTX];
	for (int i = 0; i < CTX; i++)
		a[i] = b[i] = 1000 + i;
	b[70] = 7; /* b shares a's first 70 tokens */

	struct rn_kv_pool *p = rn_kv_pool_new(3, CTX, 6, 100, &err);
	CHECK(p != NULL);
	CHECK_EQ_INT(rn_kv_pool_blocks(3, CTX, 6), 3 * 8 + 6 + 1);
	struct rn_cache_stats st;
	rn_kv_pool_stats(p, &st);
	CHECK(st.enabled && st.blocks_total == 31 && st.blocks_used == 0 && st.bytes_budget == 600);

	/* seq 0 evaluates 100 tokens in two batches; its three full blocks are published */
	write_cells(p, 0, a, 0, 60, 0);
	rn_kv_pool_publish(p, 0, a, 60);
	write_cells(p, 0, a, 60, 100, 60);
	rn_kv_pool_publish(p, 0, a, 100);
	CHECK_POOL(p);
	CHECK(reads(p, 0, a, 100));
	rn_kv_pool_stats(p, &st);
	CHECK_EQ_INT(st.blocks_cached, 3);
	CHECK_EQ_INT(st.blocks_used, 4);
	CHECK_EQ_INT(rn_kv_pool_match(p, a, 100), 96);
	CHECK_EQ_INT(rn_kv_pool_match(p, a, 95), 64);  /* only whole blocks of the prompt */
	CHECK_EQ_INT(rn_kv_pool_match(p, b, 200), 64); /* b differs in the third block */
	CHECK_EQ_INT(rn_kv_pool_match(p, a + 1, 99), 0);

	/* seq 1 attaches b's cached prefix: the same blocks, no copy */
	copies = 0;
	CHECK_EQ_INT(rn_kv_pool_attach(p, 1, b, 64), 64);
	CHECK_EQ_INT(copies, 0);
	const struct rn_kv_pages *pg = rn_kv_pool_pages(p);
	CHECK(rn_kv_pages_block(pg, 1, 0) == rn_kv_pages_block(pg, 0, 0));
	CHECK(rn_kv_pages_block(pg, 1, 63) == rn_kv_pages_block(pg, 0, 63));
	CHECK(reads(p, 1, b, 64));
	/* it goes on with its own tokens: new blocks, seq 0 unchanged */
	write_cells(p, 1, b, 64, 130, 64);
	rn_kv_pool_publish(p, 1, b, 130);
	CHECK_POOL(p);
	CHECK(reads(p, 0, a, 100));
	CHECK(reads(p, 1, b, 130));
	CHECK_EQ_INT(rn_kv_pool_match(p, b, 130), 128);

	/* seq 0 truncated inside a published block, then written: copy-on-write of the 16 rows kept */
	rn_kv_pool_truncate(p, 0, 80);
	int32_t old_blk = rn_kv_pages_block(pg, 0, 64);
	copies = 0;
	int32_t c[CTX];
	memcpy(c, a, sizeof c);
	for (int i = 80; i < CTX; i++)
		c[i] = 5000 + i;
	write_cells(p, 0, c, 80, 90, 80);
	CHECK_EQ_INT(copies, 1);
	CHECK(rn_kv_pages_block(pg, 0, 64) != old_blk);
	CHECK(reads(p, 0, c, 90));
	CHECK_EQ_INT(rn_kv_pool_match(p, a, 100), 96); /* the published block is still there, unchanged */
	CHECK_POOL(p);

	/* taint: after a "context shift" from cell 40 nothing from block 1 on is published */
	rn_kv_pool_truncate(p, 2, 0);
	int32_t d[CTX];
	for (int i = 0; i < CTX; i++)
		d[i] = 9000 + i;
	write_cells(p, 2, d, 0, 100, 0);
	rn_kv_pool_taint(p, 2, 40);
	rn_kv_pool_publish(p, 2, d, 100);
	CHECK_EQ_INT(rn_kv_pool_match(p, d, 100), 32);
	rn_kv_pool_truncate(p, 2, 32); /* truncated to before the taint: publishable again */
	write_cells(p, 2, d, 32, 100, 32);
	rn_kv_pool_publish(p, 2, d, 100);
	CHECK_EQ_INT(rn_kv_pool_match(p, d, 100), 96);
	CHECK_POOL(p);

	/* deduplication: seq 1 evaluates d's prefix itself, then publishes: it ends on seq 2's blocks */
	write_cells(p, 1, d, 0, 64, 0); /* (overwrites: its blocks 0, 1 were shared/published: copies) */
	rn_kv_pool_truncate(p, 1, 64);
	rn_kv_pool_publish(p, 1, d, 64);
	CHECK(rn_kv_pages_block(pg, 1, 0) == rn_kv_pages_block(pg, 2, 0));
	CHECK(rn_kv_pages_block(pg, 1, 33) == rn_kv_pages_block(pg, 2, 33));
	CHECK(reads(p, 1, d, 64));
	CHECK_POOL(p);

	/* share (kv_copy): seq 0 := seq 2's first 50 cells, then both go on differently */
	rn_kv_pool_share(p, 2, 0, 50);
	CHECK(reads(p, 0, d, 50));
	int32_t e2[CTX];
	memcpy(e2, d, sizeof e2);
	for (int i = 50; i < CTX; i++)
		e2[i] = 7000 + i;
	write_cells(p, 0, e2, 50, 70, 50);
	CHECK(reads(p, 0, e2, 70));
	CHECK(reads(p, 2, d, 100));
	CHECK_POOL(p);

	/* the budget: everything released, at most 6 unused published blocks stay; the rest are evicted, the
	 * later blocks of a prefix first */
	for (int s = 0; s < 3; s++)
		rn_kv_pool_truncate(p, s, 0);
	CHECK_POOL(p);
	rn_kv_pool_stats(p, &st);
	CHECK_EQ_INT(st.blocks_used, 0);
	CHECK(st.blocks_cached <= 6);
	CHECK(st.blocks_evicted > 0);
	CHECK_EQ_INT(st.bytes_held, st.blocks_cached * 100);
	rn_kv_pool_account(p, 0);
	rn_kv_pool_account(p, 64);
	rn_kv_pool_stats(p, &st);
	CHECK(st.hits == 1 && st.misses == 1 && st.tokens_reused == 64);
	rn_kv_pool_free(p);

	/* a budget of 0: nothing is kept once unused, sharing while in use still works */
	p = rn_kv_pool_new(2, 64, 0, 1, &err);
	write_cells(p, 0, a, 0, 64, 0);
	rn_kv_pool_publish(p, 0, a, 64);
	CHECK_EQ_INT(rn_kv_pool_attach(p, 1, a, 64), 64);
	rn_kv_pool_truncate(p, 0, 0);
	CHECK_EQ_INT(rn_kv_pool_match(p, a, 64), 64); /* seq 1 still holds them */
	rn_kv_pool_truncate(p, 1, 0);
	CHECK_EQ_INT(rn_kv_pool_match(p, a, 64), 0);
	CHECK_POOL(p);
	rn_kv_pool_free(p);

	CHECK(rn_kv_pool_new(0, 64, 0, 1, &err) == NULL && err.code == RN_ERR_INVALID_ARG);
	CHECK(rn_kv_pool_new(1, 64, -1, 1, &err) == NULL);
	CHECK(rn_kv_pool_new(1, 1 << 30, 1 << 30, 1, &err) == NULL && strstr(err.msg, "too large"));
}

/* A random walk over every operation on 3 sequences whose prompts share prefixes from a small set. */
static void random_walk(void)
{
	struct rn_error err = {0};
	enum { S = 3, CTX = 200, STEPS = 20000 };
	struct rn_kv_pool *p = rn_kv_pool_new(S, CTX, 6, 1, &err);
	CHECK(p != NULL);
	int32_t bases[4][CTX];
	for (int k = 0; k < 4; k++)
		for (int i = 0; i < CTX; i++)
			bases[k][i] = i < 70 ? i : k * 1000 + i; /* all share 70 tokens, then 4 families */
	int32_t tok[S][CTX];
	int attached = 0, shared_writes = 0;
	int used[S] = {0}, fresh[S]; /* fresh: cells from which the content is not "evaluated" (taint) */
	for (int s = 0; s < S; s++)
		fresh[s] = CTX;
	for (int step = 0; step < STEPS; step++) {
		int s = (int)rnd(S), op = (int)rnd(8);
		if (op <= 2) { /* evaluate more tokens of some family, maybe diverging */
			int n = 1 + (int)rnd(60);
			if (used[s] + n > CTX)
				n = CTX - used[s];
			if (n <= 0)
				continue;
			const int32_t *src = bases[rnd(4)];
			for (int i = used[s]; i < used[s] + n; i++)
				tok[s][i] = rnd(10) ? src[i] : 50000 + (int32_t)rnd(100);
			int before = copies;
			write_cells(p, s, tok[s], used[s], used[s] + n, used[s]);
			shared_writes += copies > before;
			used[s] += n;
			rn_kv_pool_publish(p, s, tok[s], (size_t)used[s]);
		} else if (op == 3) { /* truncate */
			int n = used[s] ? (int)rnd((uint32_t)used[s] + 1) : 0;
			rn_kv_pool_truncate(p, s, n);
			used[s] = n;
			if (fresh[s] >= n)
				fresh[s] = CTX;
		} else if (op == 4) { /* a new prompt: attach the cached prefix */
			const int32_t *src = bases[rnd(4)];
			size_t m = rn_kv_pool_match(p, src, CTX);
			CHECK(m % RN_KV_BLOCK == 0);
			if (m == 0)
				continue;
			CHECK_EQ_INT(rn_kv_pool_attach(p, s, src, m), m);
			attached++;
			memcpy(tok[s], src, m * sizeof tok[s][0]);
			used[s] = (int)m;
			fresh[s] = CTX;
		} else if (op == 5) { /* share another sequence's content */
			int o = (int)rnd(S);
			int n = used[o] ? (int)rnd((uint32_t)used[o] + 1) : 0;
			rn_kv_pool_share(p, o, s, n);
			if (o != s)
				memcpy(tok[s], tok[o], (size_t)n * sizeof tok[s][0]);
			used[s] = n;
			fresh[s] = fresh[o] < n ? fresh[o] : CTX;
		} else if (op == 6) { /* a context shift: remove a range, the rest moves down, never published */
			if (used[s] < 10)
				continue;
			int c0 = (int)rnd((uint32_t)used[s] - 5), k = 1 + (int)rnd(4);
			rn_kv_pool_writable(p, s, c0, used[s], used[s], copy_rows, NULL);
			rn_kv_pool_taint(p, s, c0);
			const struct rn_kv_pages *pg = rn_kv_pool_pages(p);
			for (int c = c0; c + k < used[s]; c++) {
				tok[s][c] = tok[s][c + k];
				store[rn_kv_pages_block(pg, s, c)][c % RN_KV_BLOCK] = tok[s][c];
			}
			used[s] -= k;
			rn_kv_pool_truncate(p, s, used[s]);
			if (c0 < fresh[s])
				fresh[s] = c0;
		} else { /* clear */
			rn_kv_pool_truncate(p, s, 0);
			used[s] = 0;
			fresh[s] = CTX;
		}
		if (step % 50 == 0 || step == STEPS - 1) {
			struct rn_error e2 = {0};
			int rc = rn_kv_pool_check(p, &e2);
			CHECKF(rc == RN_OK, "step %d: %s", step, e2.msg);
			if (rc != RN_OK)
				break;
		}
		bool ok = true;
		for (int q = 0; q < S; q++)
			ok = ok && reads(p, q, tok[q], used[q]);
		CHECKF(ok, "step %d (op %d on seq %d): a sequence reads other tokens than it wrote", step, op, s);
		if (!ok)
			break;
	}
	struct rn_cache_stats st;
	rn_kv_pool_stats(p, &st);
	CHECKF(attached > 100 && shared_writes > 100, "attached %d, copy-on-write %d", attached, shared_writes);
	CHECKF(st.blocks_evicted > 0 && st.blocks_cached > 0, "evicted %llu cached %llu", (unsigned long long)st.blocks_evicted,
	       (unsigned long long)st.blocks_cached);
	rn_kv_pool_free(p);
}

int main(void)
{
	fixed_cases();
	random_walk();
	return check_done();
}
