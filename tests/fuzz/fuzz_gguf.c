/* tests/fuzz/fuzz_gguf.c — libFuzzer target for the GGUF reader: parse (data, size); when accepted, read
 * every metadata value and array element, look every key and tensor up, dequantize the first row of each
 * tensor, run the model check, and write the file back with the writer, which must parse again to the same
 * counts. Built as a real fuzzer with --enable-fuzzing, and linked with tests/fuzz/replay.c for `make check`.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/model.h"
#include "gguf/writer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

static void walk_array(const struct gguf_array *a)
{
	for (uint64_t i = 0; i < a->n; i++) {
		switch (a->type) {
		case GGUF_VT_STRING: {
			struct gguf_str s = gguf_arr_str(a, i);
			if (s.len)
				sink += (uint8_t)s.ptr[0] + (uint8_t)s.ptr[s.len - 1];
			break;
		}
		case GGUF_VT_ARRAY: walk_array(gguf_arr_arr(a, i)); break;
		case GGUF_VT_F32: case GGUF_VT_F64: sink += (uint64_t)(gguf_arr_float(a, i) != 0); break;
		case GGUF_VT_U64: sink += gguf_arr_u64(a, i); break;
		default: sink += (uint64_t)gguf_arr_int(a, i);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gguf_error err;
	struct gguf_file *f = gguf_parse(data, size, &err);
	if (!f) {
		if (err.code <= GGUF_OK || err.code >= GGUF_ERR__COUNT || !memchr(err.msg, 0, sizeof err.msg))
			abort();
		return 0;
	}
	for (uint64_t i = 0; i < gguf_kv_count(f); i++) {
		const struct gguf_kv *kv = gguf_kv_at(f, i);
		if (gguf_find_kv(f, kv->key) != kv)
			abort();
		if (kv->val.type == GGUF_VT_ARRAY)
			walk_array(&kv->val.v.arr);
		uint32_t u;
		float fl;
		struct gguf_str s;
		sink += gguf_find_u32(f, kv->key, &u) + gguf_find_f32(f, kv->key, &fl) + gguf_find_str(f, kv->key, &s);
	}
	float row[4096];
	for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
		const struct gguf_tensor *t = gguf_tensor_at(f, i);
		if (gguf_find_tensor(f, t->name) != t)
			abort();
		const struct gguf_type_info *ti = gguf_type_get(t->type);
		int64_t rows = t->ne[1] * t->ne[2] * t->ne[3];
		if (ti->dequant && rows > 0 && t->ne[0] > 0 && t->ne[0] <= 4096) {
			if (gguf_tensor_dequantize_row(t, rows - 1, 0, t->ne[0], row) != GGUF_OK)
				abort();
			sink += (uint64_t)(row[0] != 0);
		}
	}
	struct gguf_model_info mi;
	sink += (uint64_t)gguf_model_check(f, &mi, &err);

	/* write it back: every pair and tensor copied; the result must parse with the same counts (not for huge
	 * alignments, where a valid tiny file legitimately becomes a gigabyte of padding) */
	if (gguf_alignment(f) > 4096) {
		gguf_close(f);
		return 0;
	}
	struct gguf_writer *w = gguf_writer_new();
	int e = w ? GGUF_OK : GGUF_ERR_NOMEM;
	for (uint64_t i = 0; i < gguf_kv_count(f) && !e; i++)
		e = gguf_w_copy_kv(w, f, gguf_kv_at(f, i));
	for (uint64_t i = 0; i < gguf_tensor_count(f) && !e; i++) {
		const struct gguf_tensor *t = gguf_tensor_at(f, i);
		e = gguf_w_tensor(w, t->name, t->type, t->n_dims ? t->n_dims : 1, t->ne, t->data, NULL, NULL);
	}
	uint8_t *mem = NULL;
	size_t n = 0;
	if (!e && gguf_writer_write_mem(w, &mem, &n, &err) == GGUF_OK) {
		struct gguf_file *g = gguf_parse(mem, n, &err);
		if (!g || gguf_kv_count(g) != gguf_kv_count(f) || gguf_tensor_count(g) != gguf_tensor_count(f))
			abort();
		gguf_close(g);
	} else if (e && e != GGUF_ERR_NOMEM) {
		abort(); /* anything the reader accepts, the writer must accept */
	}
	free(mem);
	gguf_writer_free(w);
	gguf_close(f);
	return 0;
}
