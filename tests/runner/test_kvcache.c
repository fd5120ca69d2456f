/* tests/runner/test_kvcache.c — KV element types, the per-sequence cell bookkeeping and the host storage. */
#include "config.h"

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

	/* host storage: 3 layers x {K, V} x 2 sequences x 8 cells of 64 values in q8_0 (2 blocks a row, 2 heads) */
	struct rn_kv_store s;
	CHECK(rn_kv_store_init(&s, RN_KV_Q8_0, 3, 2, 8, 64, 32, &err) == RN_OK);
	CHECK_EQ_INT(s.row_bytes, 68);
	CHECK_EQ_INT(s.head_bytes, 34);
	CHECK_EQ_INT(s.bytes, 3 * 2 * 2 * 8 * 68);
	/* every row distinct and in its own place: the row of (l, t, seq, cell) starts where the layout says */
	for (int l = 0; l < 3; l++)
		for (int v = 0; v < 2; v++)
			for (int q = 0; q < 2; q++)
				for (int k = 0; k < 8; k++) {
					uint8_t *r = rn_kv_store_row(&s, l, v, q, k);
					CHECK(r == s.data + ((size_t)((l * 2 + v) * 2 + q) * 8 + (size_t)k) * 68);
					memset(r, (l * 2 + v) * 16 + q * 8 + k, s.row_bytes);
				}
	/* move cells [3, 7) of sequence 1 down to [1, 5) in every layer; sequence 0 untouched */
	rn_kv_store_move(&s, 1, 3, 1, 4);
	for (int l = 0; l < 3; l++)
		for (int v = 0; v < 2; v++)
			for (int k = 0; k < 8; k++) {
				int want1 = (l * 2 + v) * 16 + 8 + (k >= 1 && k < 5 ? k + 2 : k);
				CHECK_EQ_INT(rn_kv_store_row(&s, l, v, 1, k)[67], want1);
				CHECK_EQ_INT(rn_kv_store_row(&s, l, v, 0, k)[0], (l * 2 + v) * 16 + k);
			}
	/* copy the first 3 cells of sequence 1 to sequence 0 */
	rn_kv_store_copy(&s, 1, 0, 3);
	for (int l = 0; l < 3; l++)
		for (int v = 0; v < 2; v++)
			for (int k = 0; k < 8; k++)
				CHECK_EQ_INT(rn_kv_store_row(&s, l, v, 0, k)[5],
					     k < 3 ? rn_kv_store_row(&s, l, v, 1, k)[5] : (l * 2 + v) * 16 + k);
	rn_kv_store_free(&s);
	CHECK(s.data == NULL);
	rn_kv_store_free(&s); /* idempotent */
	return check_done();
}
