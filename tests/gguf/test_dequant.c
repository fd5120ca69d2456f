/* tests/gguf/test_dequant.c — the dequantizers against the reference: random blocks of every type with the
 * values the `gguf` Python package (and ml_dtypes for FP8) computed, bit for bit, and sampled rows of every
 * tensor of both real test models against per-tensor hashes of the reference values. The golden data comes
 * from tests/gguf/make_golden.py (see its header for the exact command and versions).
 */
#include "config.h"

#include <math.h>

#include "gguf/gguf.h"
#include "tests/check.h"
#include "tests/testmodel.h"

static unsigned char *slurp(const char *path, size_t *n)
{
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return NULL;
	fseek(fp, 0, SEEK_END);
	long sz = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	unsigned char *b = malloc((size_t)sz + 1);
	if (b && fread(b, 1, (size_t)sz, fp) != (size_t)sz) {
		free(b);
		b = NULL;
	}
	fclose(fp);
	*n = (size_t)sz;
	return b;
}

static uint32_t ld32(const unsigned char *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

/* Same bits, or both NaN (NaN payloads differ between numpy and C only in which operand is propagated). */
static int same(float a, float b)
{
	if (isnan(a) && isnan(b))
		return 1;
	uint32_t x, y;
	memcpy(&x, &a, 4);
	memcpy(&y, &b, 4);
	return x == y;
}

static void test_blocks(void)
{
	size_t n;
	unsigned char *d = slurp(tm_srcpath("tests/data/gguf/dequant-blocks.bin"), &n);
	CHECKF(d != NULL, "cannot read tests/data/gguf/dequant-blocks.bin");
	if (!d)
		return;
	size_t o = 0;
	int types = 0;
	while (o + 12 <= n) {
		uint32_t type = ld32(d + o), nb = ld32(d + o + 4), inb = ld32(d + o + 8);
		o += 12;
		const struct gguf_type_info *ti = gguf_type_get(type);
		CHECKF(ti != NULL, "type %u", type);
		if (!ti)
			break;
		uint64_t nel = type == GGUF_TYPE_FP8_E4M3_B128 ? nb : (uint64_t)nb * ti->block_elems;
		const unsigned char *in = d + o, *ref = d + o + inb;
		o += inb + nel * 4;
		CHECK(o <= n);
		if (o > n)
			break;
		float *out = calloc(nel, sizeof *out);
		int e;
		if (type == GGUF_TYPE_FP8_E4M3_B128) {
			/* 200 rows x 300 columns with a 2 x 3 scale grid, as a tensor */
			struct gguf_tensor t = {.name = "fp8", .type = type, .n_dims = 2, .ne = {300, 200, 1, 1},
						.n_elements = nel, .data = in};
			CHECK(gguf_tensor_nbytes(type, t.ne, &t.n_bytes) == GGUF_OK && t.n_bytes == inb);
			e = gguf_tensor_dequantize(&t, out);
			CHECK_EQ_INT(gguf_dequantize(type, in, out + 0, 128), GGUF_ERR_UNSUPPORTED);
			/* a partial row range */
			float part[50];
			CHECK_EQ_INT(gguf_tensor_dequantize_row(&t, 131, 250, 50, part), GGUF_OK);
			CHECK(memcmp(part, ref + (131 * 300 + 250) * 4, sizeof part) == 0);
		} else {
			e = gguf_dequantize(type, in, out, nel);
		}
		CHECKF(e == GGUF_OK, "%s: %s", ti->name, gguf_strerror(e));
		uint64_t bad = 0, first_bad = 0;
		for (uint64_t i = 0; i < nel; i++) {
			float r;
			memcpy(&r, ref + 4 * i, 4);
			if (!same(out[i], r) && bad++ == 0)
				first_bad = i;
		}
		if (bad) {
			float r;
			memcpy(&r, ref + 4 * first_bad, 4);
			CHECKF(bad == 0, "%s: %llu of %llu values differ, first at %llu: %.9g vs reference %.9g", ti->name,
			       (unsigned long long)bad, (unsigned long long)nel, (unsigned long long)first_bad,
			       out[first_bad], r);
		}
		free(out);
		types++;
	}
	CHECK_EQ_INT(types, 14);
	free(d);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 0x100000001b3ull;
	return h;
}

static void test_model(const char *id, const char *tsv, size_t tsv_len)
{
	struct gguf_error err;
	const char *path = tm_require_model(id);
	struct gguf_file *f = gguf_open(path, &err);
	CHECKF(f != NULL, "%s: %s", path, f ? "" : err.msg);
	if (!f)
		return;
	char marker[32];
	snprintf(marker, sizeof marker, "@%s\n", id);
	const char *p = strstr(tsv, marker);
	CHECKF(p != NULL, "no section %s in dequant-models.tsv", marker);
	if (!p)
		return;
	p += strlen(marker);
	uint64_t seen = 0;
	while (p < tsv + tsv_len && *p && *p != '@') {
		char name[128], type[32];
		unsigned nrows;
		unsigned long long want;
		if (sscanf(p, "%127s %31s %u %llx", name, type, &nrows, &want) != 4)
			break;
		p = strchr(p, '\n');
		p = p ? p + 1 : tsv + tsv_len;
		const struct gguf_tensor *t = gguf_find_tensor(f, name);
		CHECKF(t != NULL, "%s: tensor %s missing", id, name);
		if (!t)
			continue;
		CHECK_STREQ(gguf_type_name(t->type), type);
		int64_t rows = t->ne[1] * t->ne[2] * t->ne[3];
		float *row = malloc((size_t)t->ne[0] * sizeof *row);
		uint64_t h = 0xcbf29ce484222325ull;
		unsigned hashed = 0;
		int e = 0;
		for (int64_t r = 0; r < rows && !e; r++) {
			if (r % 64 != 0 && r != rows - 1)
				continue;
			e = gguf_tensor_dequantize_row(t, r, 0, t->ne[0], row);
			h = fnv(h, row, (size_t)t->ne[0] * 4);
			hashed++;
		}
		CHECKF(e == GGUF_OK, "%s: %s: %s", id, name, gguf_strerror(e));
		CHECK_EQ_INT(hashed, nrows);
		CHECKF(h == want, "%s: %s (%s): hash %016llx, reference %016llx", id, name, type, (unsigned long long)h, want);
		free(row);
		seen++;
	}
	CHECK_EQ_INT(seen, gguf_tensor_count(f));
	fprintf(stderr, "%s: %llu tensors match the reference\n", id, (unsigned long long)seen);
	gguf_close(f);
}

static void test_row_api(void)
{
	/* a split row gives the same values as the whole row, and bad ranges are refused */
	const char *path = tm_model_path("qwen2");
	if (!path)
		return;
	struct gguf_file *f = gguf_open(path, NULL);
	CHECK(f != NULL);
	if (!f)
		return;
	const struct gguf_tensor *t = gguf_find_tensor(f, "blk.0.ffn_down.weight"); /* Q6_K, 4864 x 896 */
	float whole[4864], part[4864];
	CHECK_EQ_INT(gguf_tensor_dequantize_row(t, 895, 0, 4864, whole), GGUF_OK);
	CHECK_EQ_INT(gguf_tensor_dequantize_row(t, 895, 0, 256, part), GGUF_OK);
	CHECK_EQ_INT(gguf_tensor_dequantize_row(t, 895, 256, 4864 - 256, part + 256), GGUF_OK);
	CHECK(memcmp(whole, part, sizeof whole) == 0);
	CHECK_EQ_INT(gguf_tensor_dequantize_row(t, 896, 0, 256, part), GGUF_ERR_INVALID_ARG);
	CHECK_EQ_INT(gguf_tensor_dequantize_row(t, 0, 32, 256, part), GGUF_ERR_INVALID_ARG);
	CHECK_EQ_INT(gguf_tensor_dequantize_row(t, 0, 4864 - 256, 512, part), GGUF_ERR_INVALID_ARG);
	CHECK_EQ_INT(gguf_dequantize(GGUF_TYPE_Q4_0, t->data, part, 31), GGUF_ERR_INVALID_ARG);
	CHECK_EQ_INT(gguf_dequantize(GGUF_TYPE_IQ2_XXS, t->data, part, 256), GGUF_ERR_UNSUPPORTED);
	CHECK_EQ_INT(gguf_dequantize(4, t->data, part, 256), GGUF_ERR_TENSOR_TYPE);
	gguf_close(f);
}

static void test_scalars(void)
{
	/* every f16 converts to f32 and back unchanged (NaNs stay NaN) */
	int bad = 0;
	for (uint32_t h = 0; h < 65536; h++) {
		float f = gguf_f16_to_f32((uint16_t)h);
		uint16_t back = gguf_f32_to_f16(f);
		if (isnan(f) ? (back & 0x7c00) != 0x7c00 || !(back & 0x3ff) : back != h)
			bad++;
	}
	CHECK_EQ_INT(bad, 0);
	CHECK(gguf_f32_to_f16(65520.0f) == 0x7c00);         /* rounds to infinity */
	CHECK(gguf_f32_to_f16(65519.0f) == 0x7bff);         /* largest half */
	CHECK(gguf_f32_to_f16(5.9604645e-8f) == 0x0001);    /* smallest subnormal */
	CHECK(gguf_f32_to_f16(2.9802322e-8f) == 0x0000);    /* half of it: ties to even (0) */
	CHECK(gguf_f32_to_f16(1.0009765625f + 0.00048828125f) == 0x3c02); /* tie, odd -> even up */
	CHECK(gguf_f32_to_bf16(1.00390625f) == 0x3f80);     /* tie to even */
	CHECK(gguf_f32_to_bf16(1.01171875f) == 0x3f82);
	CHECK(gguf_bf16_to_f32(0x3f80) == 1.0f);
	CHECK(gguf_e4m3_to_f32(0x7e) == 448.0f);
	CHECK(gguf_e4m3_to_f32(0x01) == 0.001953125f);
	CHECK(gguf_e4m3_to_f32(0xb8) == -1.0f);
	CHECK(isnan(gguf_e4m3_to_f32(0x7f)) && isnan(gguf_e4m3_to_f32(0xff)));
}

int main(void)
{
	test_scalars();
	test_blocks();
	test_row_api();
	size_t n;
	char *tsv = (char *)slurp(tm_srcpath("tests/data/gguf/dequant-models.tsv"), &n);
	CHECKF(tsv != NULL, "cannot read tests/data/gguf/dequant-models.tsv");
	if (tsv) {
		tsv[n] = 0;
		test_model("qwen2", tsv, n);
		test_model("llama", tsv, n);
		free(tsv);
	}
	return check_done();
}
