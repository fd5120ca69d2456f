/* tests/runner/test_kvcache.c — KV element types, the per-sequence cell bookkeeping and the host storage of a
 * pool of blocks: block and row addressing through the tables, moves across block boundaries, block copies. */
#include "config.h"

#include <string.h>

#include "runner/kvcache.h"
#include "tests/check.h"

static void fill(struct rn_kv_cells *c, int seq, const int32_t *pos, int n)
{
	for (int i = 0; i < n; i++)
		c->pos[(size_t)seq * (size_t)c->n_ctx + (size_t)i] = pos[i];
	c->used[seq] = n;
}

int main(void)
{
	struct rn_error err = {0};
	enum rn_kv_type t;
	CHECK(rn_kv_type_parse("f16", &t, &err) == RN_OK && t == RN_KV_F16);
	CHECK(rn_kv_type_parse("q8_0", &t, &err) == RN_OK && t == RN_KV_Q8_0);
	CHECK(rn_kv_type_parse("", &t, &err) == RN_OK && t == RN_KV_F16);
	CHECK(rn_kv_type_parse(NULL, &t, &err) == RN_OK && t == RN_KV_F16);
	CHECK(rn_kv_type_parse("q4_0", &t, &err) == RN_ERR_INVALID_ARG);
	CHECK(strstr(err.msg, "q4_0") != NULL);
	CHECK_STREQ(rn_kv_type_name(RN_KV_Q8_0), "q8_0");
	CHECK_EQ_INT(rn_kv_row_bytes(RN_KV_F16, 128), 256);
	CHECK_EQ_INT(rn_kv_row_bytes(RN_KV_Q8_0, 128), 4 * 34);

	struct rn_kv_cells c;
	CHECK(rn_kv_cells_init(&c, 2, 16, &err) == RN_OK);
	CHECK_EQ_INT(rn_kv_cells_next_pos(&c, 0), 0);
	int32_t p[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
	fill(&c, 0, p, 10);
	CHECK_EQ_INT(rn_kv_cells_next_pos(&c, 0), 10);
	int c0, c1;
	rn_kv_cells_find(&c, 0, 2, 5, &c0, &c1);
	CHECK(c0 == 2 && c1 == 5);
	rn_kv_cells_find(&c, 0, 7, -1, &c0, &c1);
	CHECK(c0 == 7 && c1 == 10);
	rn_kv_cells_find(&c, 0, 20, 30, &c0, &c1);
	CHECK(c0 == 10 && c1 == 10);
	rn_kv_cells_find(&c, 1, 0, -1, &c0, &c1);
	CHECK(c0 == 0 && c1 == 0);

	/* context shift: remove [2, 5), shift [5, 10) by -3 -> positions 0..6 */
	rn_kv_cells_find(&c, 0, 2, 5, &c0, &c1);
	rn_kv_cells_remove(&c, 0, c0, c1);
	CHECK_EQ_INT(c.used[0], 7);
	CHECK_EQ_INT(c.pos[2], 5);
	rn_kv_cells_find(&c, 0, 5, -1, &c0, &c1);
	CHECK(c0 == 2 && c1 == 7);
	CHECK(rn_kv_cells_shift(&c, 0, c0, c1, -3, &err) == RN_OK);
	for (int i = 0; i < 7; i++)
		CHECK_EQ_INT(c.pos[i], i);
	CHECK_EQ_INT(rn_kv_cells_next_pos(&c, 0), 7);

	/* shifts that would break the order or go negative are refused and change nothing */
	rn_kv_cells_find(&c, 0, 3, 5, &c0, &c1);
	CHECK(rn_kv_cells_shift(&c, 0, c0, c1, -1, &err) == RN_ERR_INVALID_ARG);
	CHECK(rn_kv_cells_shift(&c, 0, c0, c1, 2, &err) == RN_ERR_INVALID_ARG);
	CHECK_EQ_INT(c.pos[3], 3);
	rn_kv_cells_find(&c, 0, 0, -1, &c0, &c1);
	CHECK(rn_kv_cells_shift(&c, 0, c0, c1, -1, &err) == RN_ERR_INVALID_ARG);
	CHECK(strstr(err.msg, "valid range") != NULL);
	/* a gap may be opened at the end */
	rn_kv_cells_find(&c, 0, 5, -1, &c0, &c1);
	CHECK(rn_kv_cells_shift(&c, 0, c0, c1, 100, &err) == RN_OK);
	CHECK_EQ_INT(rn_kv_cells_next_pos(&c, 0), 107);

	rn_kv_cells_free(&c);
	rn_kv_cells_free(&c); /* idempotent */

	/* host storage: a pool of 5 blocks of 32 cells, 3 layers x {K, V}, rows of 64 values in q8_0 (2 blocks a
	 * row, 2 heads) */
	struct rn_kv_store s;
	CHECK(rn_kv_store_init(&s, RN_KV_Q8_0, 3, 5, 64, 32, &err) == RN_OK);
	CHECK_EQ_INT(s.row_bytes, 68);
	CHECK_EQ_INT(s.head_bytes, 34);
	CHECK_EQ_INT(s.block_bytes, 32 * 68);
	CHECK_EQ_INT(s.bytes, 3 * 2 * 5 * 32 * 68);
	for (int l = 0; l < 3; l++)
		for (int v = 0; v < 2; v++)
			for (int b = 0; b < 5; b++)
				CHECK(rn_kv_store_block(&s, l, v, b) == s.data + ((size_t)((l * 2 + v) * 5 + b)) * 32 * 68);
	/* two sequences of 96 cells (3 blocks each) over the pool, blocks out of order; the last of sequence 0
	 * not attached */
	int32_t table[6] = {4, 1, -1, 0, 3, 2};
	struct rn_kv_pages pg = {.n_blocks = 5, .blocks_per_seq = 3, .table = table};
	CHECK_EQ_INT(rn_kv_pages_block(&pg, 0, 31), 4);
	CHECK_EQ_INT(rn_kv_pages_block(&pg, 0, 32), 1);
	CHECK_EQ_INT(rn_kv_pages_block(&pg, 1, 95), 2);
	/* every row of every attached cell in the place the tables say, tagged (layer, kind, seq, cell) at both ends */
	for (int l = 0; l < 3; l++)
		for (int v = 0; v < 2; v++)
			for (int q = 0; q < 2; q++)
				for (int k = 0; k < (q == 0 ? 64 : 96); k++) {
					uint8_t *r = rn_kv_store_row(&s, &pg, l, v, q, k);
					CHECK(r == rn_kv_store_block(&s, l, v, table[q * 3 + k / 32]) + (size_t)(k % 32) * 68);
					int32_t tag = ((l * 2 + v) << 16) | (q << 12) | k;
					memcpy(r, &tag, 4);
					memcpy(r + 64, &tag, 4);
				}
	/* move cells [40, 90) of sequence 1 down to [5, 55): overlapping ranges, runs cut at block boundaries at
	 * different offsets in source and destination; sequence 0 untouched */
	rn_kv_store_move(&s, &pg, 1, 40, 5, 50);
	int bad = 0;
	for (int l = 0; l < 3; l++)
		for (int v = 0; v < 2; v++)
			for (int q = 0; q < 2; q++)
				for (int k = 0; k < (q == 0 ? 64 : 96); k++) {
					const uint8_t *r = rn_kv_store_row(&s, &pg, l, v, q, k);
					int src = q == 1 && k >= 5 && k < 55 ? k + 35 : k;
					int32_t want = ((l * 2 + v) << 16) | (q << 12) | src, a, z;
					memcpy(&a, r, 4);
					memcpy(&z, r + 64, 4);
					bad += a != want || z != want;
				}
	CHECKF(bad == 0, "rn_kv_store_move: %d rows not where they belong", bad);
	/* copy-on-write: the first 10 rows of block 3 (sequence 1's cells 32..41) into block 4 (sequence 0's
	 * cells 0..31), every layer and kind; the rest of block 4 and block 3 unchanged */
	rn_kv_store_block_copy(&s, 3, 4, 10);
	bad = 0;
	for (int l = 0; l < 3; l++)
		for (int v = 0; v < 2; v++)
			for (int k = 0; k < 32; k++) {
				const uint8_t *r = rn_kv_store_block(&s, l, v, 4) + (size_t)k * 68;
				const uint8_t *o = rn_kv_store_block(&s, l, v, 3) + (size_t)k * 68;
				int32_t want = k < 10 ? ((l * 2 + v) << 16) | (1 << 12) | (32 + k + 35) : ((l * 2 + v) << 16) | k;
				int32_t a, z, src;
				memcpy(&a, r, 4);
				memcpy(&z, r + 64, 4);
				memcpy(&src, o, 4);
				bad += a != want || z != want ||
				       src != (((l * 2 + v) << 16) | (1 << 12) | (32 + k < 55 ? 32 + k + 35 : 32 + k));
			}
	CHECKF(bad == 0, "rn_kv_store_block_copy: %d rows wrong", bad);
	rn_kv_store_free(&s);
	CHECK(s.data == NULL);
	rn_kv_store_free(&s); /* idempotent */
	return check_done();
}
