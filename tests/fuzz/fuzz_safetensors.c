/* tests/fuzz/fuzz_safetensors.c — libFuzzer target for the safetensors reader: parse (data, size); when
 * accepted, look every tensor up by name, read the first and last element of each float tensor and the
 * metadata. Built as a real fuzzer with --enable-fuzzing and replayed over its corpus in `make check`.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile float sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gguf_error err;
	struct gguf_st_file *f = gguf_st_parse(data, size, &err);
	if (!f) {
		if (err.code <= GGUF_OK || err.code >= GGUF_ERR__COUNT || !memchr(err.msg, 0, sizeof err.msg))
			abort();
		return 0;
	}
	for (uint64_t i = 0; i < gguf_st_count(f); i++) {
		const struct gguf_st_tensor *t = gguf_st_at(f, i);
		if (gguf_st_find(f, t->name) != t || t->offset + t->n_bytes > size)
			abort();
		uint32_t d = t->dtype;
		if (t->n_elements && (d == GGUF_ST_F32 || d == GGUF_ST_F16 || d == GGUF_ST_BF16 || d == GGUF_ST_F64 ||
				      d == GGUF_ST_F8_E4M3))
			sink += gguf_st_get_f32(t, 0) + gguf_st_get_f32(t, t->n_elements - 1);
	}
	sink += gguf_st_meta(f, "format") != NULL;
	gguf_st_close(f);
	return 0;
}
