/* tests/runner/test_kvcache.c — KV element types and the per-sequence cell bookkeeping. */
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
	return check_done();
}
