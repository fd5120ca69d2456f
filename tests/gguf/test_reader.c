/* tests/gguf/test_reader.c — the GGUF reader on the two real test models: header, typed metadata look-ups,
 * string arrays with O(1) access, tensor look-up and the architecture check. The values checked here were
 * read with the `gguf` Python package (GGUFReader) from the same files; tests/integration/test_gguf_cli.py
 * compares every key and tensor.
 */
#include "config.h"

#include <math.h>
#include <time.h>

#include "gguf/gguf.h"
#include "gguf/model.h"
#include "gguf/writer.h"
#include "tests/check.h"
#include "tests/testmodel.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void test_qwen2(const char *path)
{
	struct gguf_error err;
	double t0 = now();
	struct gguf_file *f = gguf_open(path, &err);
	double dt = now() - t0;
	CHECKF(f != NULL, "%s: %s", path, f ? "" : err.msg);
	if (!f)
		return;
	fprintf(stderr, "qwen2: opened in %.2f ms\n", dt * 1e3);
	CHECK_EQ_INT(gguf_version(f), 3);
	CHECK_EQ_INT(gguf_kv_count(f), 26);
	CHECK_EQ_INT(gguf_tensor_count(f), 291);
	CHECK_EQ_INT(gguf_alignment(f), 32);
	CHECK_EQ_INT(gguf_data_offset(f), 5947776);
	CHECK_EQ_INT(gguf_get_u32(f, "qwen2.block_count", 0), 24);
	CHECK_EQ_INT(gguf_get_u32(f, "qwen2.attention.head_count_kv", 0), 2);
	CHECK_EQ_INT(gguf_get_u32(f, "general.file_type", 0), 15);
	CHECK(gguf_get_f32(f, "qwen2.rope.freq_base", 0) == 1000000.0f);
	CHECK(gguf_get_f32(f, "qwen2.attention.layer_norm_rms_epsilon", 0) == 1e-6f);
	CHECK(gguf_get_bool(f, "tokenizer.ggml.add_bos_token", true) == false);
	CHECK_EQ_INT(gguf_get_u32(f, "no.such.key", 77), 77);
	/* type checks on look-ups */
	uint32_t u;
	CHECK_EQ_INT(gguf_find_u32(f, "general.architecture", &u), GGUF_ERR_TYPE_MISMATCH);
	CHECK_EQ_INT(gguf_find_u32(f, "missing", &u), GGUF_ERR_NOT_FOUND);
	uint64_t u64;
	CHECK_EQ_INT(gguf_find_u64(f, "tokenizer.ggml.eos_token_id", &u64), GGUF_OK);
	CHECK_EQ_INT(u64, 151645);
	int32_t i32;
	CHECK_EQ_INT(gguf_find_i32(f, "tokenizer.ggml.eos_token_id", &i32), GGUF_OK);
	CHECK_EQ_INT(i32, 151645);
	char buf[64];
	CHECK_EQ_INT(gguf_get_str_buf(f, "general.architecture", buf, sizeof buf), GGUF_OK);
	CHECK_STREQ(buf, "qwen2");
	CHECK_EQ_INT(gguf_get_str_buf(f, "general.architecture", buf, 3), GGUF_ERR_INVALID_ARG);
	CHECK_STREQ(buf, "qw");
	struct gguf_str pre = gguf_get_str(f, "tokenizer.ggml.pre", (struct gguf_str){NULL, 0});
	CHECK(gguf_str_eq(pre, "qwen2"));
	CHECK_EQ_INT(gguf_get_str(f, "tokenizer.chat_template", (struct gguf_str){0}).len, 2507);

	const struct gguf_array *toks = NULL, *merges = NULL, *tt = NULL;
	CHECK_EQ_INT(gguf_find_arr(f, "tokenizer.ggml.tokens", &toks), GGUF_OK);
	CHECK_EQ_INT(gguf_find_arr(f, "tokenizer.ggml.merges", &merges), GGUF_OK);
	CHECK_EQ_INT(gguf_find_arr(f, "tokenizer.ggml.token_type", &tt), GGUF_OK);
	if (toks && merges && tt) {
		CHECK_EQ_INT(toks->n, 151936);
		CHECK_EQ_INT(merges->n, 151387);
		CHECK(gguf_str_eq(gguf_arr_str(toks, 0), "!"));
		CHECK(gguf_str_eq(gguf_arr_str(toks, 151643), "<|endoftext|>"));
		CHECK(gguf_str_eq(gguf_arr_str(toks, 151645), "<|im_end|>"));
		CHECK(gguf_str_eq(gguf_arr_str(merges, 0), "\xc4\xa0 \xc4\xa0"));
		CHECK_EQ_INT(gguf_arr_i32(tt, 0), 1);
		CHECK_EQ_INT(gguf_arr_i32(tt, 151643), 3);
		CHECK_EQ_INT(gguf_arr_int(tt, 151643), 3);
		/* iterate everything: total bytes of all token strings, timed */
		t0 = now();
		uint64_t total = 0;
		for (uint64_t i = 0; i < toks->n; i++)
			total += gguf_arr_str(toks, i).len;
		for (uint64_t i = 0; i < merges->n; i++)
			total += gguf_arr_str(merges, i).len;
		fprintf(stderr, "qwen2: iterated %llu strings (%llu bytes) in %.2f ms\n",
			(unsigned long long)(toks->n + merges->n), (unsigned long long)total, (now() - t0) * 1e3);
		CHECK(total > 1000000);
	}

	const struct gguf_tensor *t = gguf_find_tensor(f, "blk.0.ffn_down.weight");
	CHECK(t != NULL);
	if (t) {
		CHECK_EQ_INT(t->type, GGUF_TYPE_Q6_K);
		CHECK_EQ_INT(t->n_dims, 2);
		CHECK_EQ_INT(t->ne[0], 4864);
		CHECK_EQ_INT(t->ne[1], 896);
		CHECK_EQ_INT(t->ne[2], 1);
		CHECK_EQ_INT(t->n_bytes, 3575040);
		CHECK_EQ_INT(t->file_offset, 244187008);
		CHECK((const uint8_t *)t->data == gguf_file_data(f) + 244187008);
		CHECK_EQ_INT(gguf_row_size(t->type, t->ne[0]) * 896, t->n_bytes);
	}
	t = gguf_find_tensor(f, "output.weight");
	CHECK(t && t->type == GGUF_TYPE_Q8_0 && t->ne[1] == 151936);
	CHECK(gguf_find_tensor(f, "blk.24.ffn_down.weight") == NULL);
	CHECK(gguf_tensor_at(f, 0) == gguf_find_tensor(f, "output.weight"));
	for (uint64_t i = 0; i < gguf_tensor_count(f); i++)
		CHECK(gguf_find_tensor(f, gguf_tensor_at(f, i)->name) == gguf_tensor_at(f, i));
	for (uint64_t i = 0; i < gguf_kv_count(f); i++)
		CHECK(gguf_find_kv(f, gguf_kv_at(f, i)->key) == gguf_kv_at(f, i));

	struct gguf_model_info mi;
	int e = gguf_model_check(f, &mi, &err);
	CHECKF(e == GGUF_OK, "%s", err.msg);
	CHECK_EQ_INT(mi.arch, GGUF_ARCH_QWEN2);
	CHECK_EQ_INT(mi.n_layer, 24);
	CHECK_EQ_INT(mi.n_embd, 896);
	CHECK_EQ_INT(mi.n_ff, 4864);
	CHECK_EQ_INT(mi.n_head, 14);
	CHECK_EQ_INT(mi.n_head_kv, 2);
	CHECK_EQ_INT(mi.head_dim_k, 64);
	CHECK_EQ_INT(mi.n_rot, 64);
	CHECK_EQ_INT(mi.n_vocab, 151936);
	CHECK_EQ_INT(mi.n_ctx_train, 32768);
	CHECK(mi.has_qkv_bias && !mi.tied_output && !mi.has_qk_norm);
	gguf_close(f);
}

static void test_llama(const char *path)
{
	struct gguf_error err;
	struct gguf_file *f = gguf_open(path, &err);
	CHECKF(f != NULL, "%s: %s", path, f ? "" : err.msg);
	if (!f)
		return;
	CHECK_EQ_INT(gguf_kv_count(f), 33);
	CHECK_EQ_INT(gguf_tensor_count(f), 272);
	const struct gguf_array *langs;
	CHECK_EQ_INT(gguf_find_arr(f, "general.languages", &langs), GGUF_OK);
	CHECK(langs->type == GGUF_VT_STRING && langs->n == 1 && gguf_str_eq(gguf_arr_str(langs, 0), "en"));
	CHECK(gguf_get_f32(f, "llama.rope.freq_base", 0) == 100000.0f);
	struct gguf_model_info mi;
	int e = gguf_model_check(f, &mi, &err);
	CHECKF(e == GGUF_OK, "%s", err.msg);
	CHECK_EQ_INT(mi.arch, GGUF_ARCH_LLAMA);
	CHECK_EQ_INT(mi.n_layer, 30);
	CHECK_EQ_INT(mi.n_embd, 576);
	CHECK_EQ_INT(mi.n_head, 9);
	CHECK_EQ_INT(mi.n_head_kv, 3);
	CHECK_EQ_INT(mi.n_vocab, 49152);
	CHECK(mi.tied_output && !mi.has_qkv_bias);
	const struct gguf_tensor *t = gguf_find_tensor(f, "token_embd.weight");
	CHECK(t && t->type == GGUF_TYPE_Q8_0);
	t = gguf_find_tensor(f, "blk.3.attn_q.weight");
	CHECK(t && t->type == GGUF_TYPE_Q4_1 && t->ne[0] == 576 && t->ne[1] == 576);
	gguf_close(f);
}

static void test_types(void)
{
	CHECK_STREQ(gguf_type_name(GGUF_TYPE_Q4_K), "Q4_K");
	CHECK_STREQ(gguf_type_name(4), "?");
	CHECK(gguf_type_get(43) == NULL);
	CHECK_EQ_INT(gguf_type_get(GGUF_TYPE_Q6_K)->block_bytes, 210);
	CHECK_EQ_INT(gguf_type_get(GGUF_TYPE_Q4_K)->block_bytes, 144);
	CHECK_EQ_INT(gguf_type_get(GGUF_TYPE_Q2_K)->block_bytes, 84);
	CHECK_EQ_INT(gguf_type_get(GGUF_TYPE_Q3_K)->block_bytes, 110);
	CHECK_EQ_INT(gguf_type_get(GGUF_TYPE_Q5_K)->block_bytes, 176);
	uint32_t ty;
	CHECK(gguf_type_from_name("q8_0", &ty) == GGUF_OK && ty == GGUF_TYPE_Q8_0);
	CHECK(gguf_type_from_name("fp8", &ty) == GGUF_OK && ty == GGUF_TYPE_FP8_E4M3_B128);
	CHECK(gguf_type_from_name("q9", &ty) == GGUF_ERR_NOT_FOUND);
	int64_t ne[4] = {300, 200, 1, 1};
	uint64_t nb;
	CHECK(gguf_tensor_nbytes(GGUF_TYPE_FP8_E4M3_B128, ne, &nb) == GGUF_OK && nb == 300 * 200 + 4 * 3 * 2);
	CHECK(gguf_tensor_nbytes(GGUF_TYPE_Q8_0, ne, &nb) == GGUF_ERR_BLOCK);
	int64_t big[4] = {1LL << 40, 1LL << 30, 1, 1};
	CHECK(gguf_tensor_nbytes(GGUF_TYPE_F32, big, &nb) == GGUF_ERR_OVERFLOW);
	int64_t neg[4] = {32, -1, 1, 1};
	CHECK(gguf_tensor_nbytes(GGUF_TYPE_F32, neg, &nb) == GGUF_ERR_DIM);
	CHECK_STREQ(gguf_strerror(GGUF_ERR_MAGIC), "bad magic (not a GGUF file)");
	CHECK_STREQ(gguf_strerror(9999), "unknown error");
}

/* A one-layer qwen3 built with the writer: accepted; then with one tensor of the wrong shape, type or missing. */
static int check_synthetic(int variant, struct gguf_error *err)
{
	struct gguf_writer *w = gguf_writer_new();
	int e = 0;
	e |= gguf_w_str(w, "general.architecture", "qwen3");
	e |= gguf_w_u32(w, "qwen3.block_count", 1);
	e |= gguf_w_u32(w, "qwen3.embedding_length", 64);
	e |= gguf_w_u32(w, "qwen3.feed_forward_length", 96);
	e |= gguf_w_u32(w, "qwen3.attention.head_count", 4);
	e |= gguf_w_u32(w, "qwen3.attention.head_count_kv", 2);
	e |= gguf_w_u32(w, "qwen3.attention.key_length", 16);
	int64_t kv_rows = variant == 1 ? 16 : 32;
	struct {
		const char *n;
		uint32_t t;
		int64_t d0, d1;
	} ts[] = {
		{"token_embd.weight", GGUF_TYPE_Q8_0, 64, 100}, {"output_norm.weight", GGUF_TYPE_F32, 64, 1},
		{"blk.0.attn_norm.weight", GGUF_TYPE_F32, 64, 1}, {"blk.0.attn_q.weight", GGUF_TYPE_BF16, 64, 64},
		{"blk.0.attn_k.weight", GGUF_TYPE_BF16, 64, kv_rows}, {"blk.0.attn_v.weight", GGUF_TYPE_BF16, 64, 32},
		{"blk.0.attn_output.weight", GGUF_TYPE_BF16, 64, 64}, {"blk.0.ffn_norm.weight", GGUF_TYPE_F32, 64, 1},
		{"blk.0.ffn_gate.weight", GGUF_TYPE_F16, 64, 96}, {"blk.0.ffn_up.weight", GGUF_TYPE_F16, 64, 96},
		{"blk.0.ffn_down.weight", variant == 2 ? GGUF_TYPE_IQ4_NL : GGUF_TYPE_F16, 96, 64},
		{"blk.0.attn_q_norm.weight", GGUF_TYPE_F32, 16, 1}, {"blk.0.attn_k_norm.weight", GGUF_TYPE_F32, 16, 1},
	};
	for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
		if (variant == 3 && strcmp(ts[i].n, "blk.0.attn_k_norm.weight") == 0)
			continue;
		e |= gguf_w_tensor(w, ts[i].n, ts[i].t, ts[i].d1 > 1 ? 2 : 1, (int64_t[]){ts[i].d0, ts[i].d1}, NULL, NULL, NULL);
	}
	uint8_t *mem = NULL;
	size_t size = 0;
	e |= gguf_writer_write_mem(w, &mem, &size, err);
	gguf_writer_free(w);
	CHECK_EQ_INT(e, 0);
	struct gguf_file *f = gguf_parse(mem, size, err);
	CHECK(f != NULL);
	struct gguf_model_info mi;
	e = f ? gguf_model_check(f, &mi, err) : -1;
	if (e == GGUF_OK)
		CHECK(mi.arch == GGUF_ARCH_QWEN3 && mi.has_qk_norm && mi.tied_output && mi.head_dim_k == 16 && mi.n_vocab == 100);
	gguf_close(f);
	free(mem);
	return e;
}

static void test_model_check(void)
{
	struct gguf_error err;
	CHECK_EQ_INT(check_synthetic(0, &err), GGUF_OK);
	CHECK_EQ_INT(check_synthetic(1, &err), GGUF_ERR_SHAPE);
	CHECK_STREQ(err.msg, "tensor 'blk.0.attn_k.weight' has shape (64, 16), expected (64, 32)");
	CHECK_EQ_INT(check_synthetic(2, &err), GGUF_ERR_SHAPE);
	CHECKF(strstr(err.msg, "tensor 'blk.0.ffn_down.weight' has type IQ4_NL, which this engine cannot use") != NULL, "%s",
	       err.msg);
	CHECK_EQ_INT(check_synthetic(3, &err), GGUF_ERR_SHAPE);
	CHECK_STREQ(err.msg, "tensor 'blk.0.attn_k_norm.weight' is missing (expected shape (16))");
}

int main(void)
{
	test_model_check();
	test_types();
	test_qwen2(tm_require_model("qwen2"));
	test_llama(tm_require_model("llama"));
	return check_done();
}
