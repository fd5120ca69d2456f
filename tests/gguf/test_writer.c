/* tests/gguf/test_writer.c — writer round trips: seeded random files (every value type, string arrays,
 * nested arrays, every tensor type, random shapes and alignments) written to memory and to disk, read back
 * and compared value by value and byte by byte; copying every pair of a real model; writer argument errors.
 */
#include "config.h"

#include <unistd.h>

#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "tests/check.h"
#include "tests/testmodel.h"

static const char *corpus_dir; /* argv[1]: save the in-memory random files there (fuzzer seeds) */
static uint64_t rng_state;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* What was put in, to compare with what comes out. */
struct exp_kv {
	char key[48];
	uint32_t vt;
	uint64_t bits;            /* scalar */
	char *s;                  /* string / string array (concatenated) */
	uint64_t slen;
	uint32_t et;              /* array element type */
	uint64_t n;
	uint8_t *raw;             /* fixed-size array elements, LE */
};

static const uint32_t tensor_types[] = {
	GGUF_TYPE_F32, GGUF_TYPE_F16, GGUF_TYPE_BF16, GGUF_TYPE_Q4_0, GGUF_TYPE_Q4_1, GGUF_TYPE_Q5_0,
	GGUF_TYPE_Q5_1, GGUF_TYPE_Q8_0, GGUF_TYPE_Q2_K, GGUF_TYPE_Q3_K, GGUF_TYPE_Q4_K, GGUF_TYPE_Q5_K,
	GGUF_TYPE_Q6_K, GGUF_TYPE_Q8_K, GGUF_TYPE_IQ4_XS, GGUF_TYPE_I32, GGUF_TYPE_FP8_E4M3_B128,
};

static int fill_pattern(void *ctx, const struct gguf_tensor *t, void *dst, uint64_t n, struct gguf_error *err)
{
	uint8_t *d = dst;
	uint64_t seed = (uint64_t)(uintptr_t)ctx;
	for (uint64_t i = 0; i < n; i++)
		d[i] = (uint8_t)(seed + i * 7);
	return GGUF_OK;
}

static void one_random_file(uint64_t seed, int to_disk)
{
	rng_state = seed * 0x9e3779b97f4a7c15ull + 1;
	struct gguf_writer *w = gguf_writer_new();
	CHECK(w != NULL);
	int nkv = (int)(rnd() % 24);
	struct exp_kv *ex = calloc((size_t)nkv + 1, sizeof *ex);
	int e;
	uint32_t align = 1u << (rnd() % 8); /* 1 .. 128 */
	if (rnd() % 2) {
		CHECK_EQ_INT(gguf_writer_set_alignment(w, align), GGUF_OK);
	} else {
		align = GGUF_DEFAULT_ALIGNMENT;
	}
	for (int i = 0; i < nkv; i++) {
		struct exp_kv *x = &ex[i];
		snprintf(x->key, sizeof x->key, "k%d.%llu", i, (unsigned long long)(rnd() % 1000));
		uint32_t vt = (uint32_t)(rnd() % GGUF_VT__COUNT);
		x->vt = vt;
		uint64_t b = rnd();
		switch (vt) {
		case GGUF_VT_U8: e = gguf_w_u8(w, x->key, (uint8_t)b); x->bits = (uint8_t)b; break;
		case GGUF_VT_I8: e = gguf_w_i8(w, x->key, (int8_t)b); x->bits = (uint64_t)(int64_t)(int8_t)b; break;
		case GGUF_VT_U16: e = gguf_w_u16(w, x->key, (uint16_t)b); x->bits = (uint16_t)b; break;
		case GGUF_VT_I16: e = gguf_w_i16(w, x->key, (int16_t)b); x->bits = (uint64_t)(int64_t)(int16_t)b; break;
		case GGUF_VT_U32: e = gguf_w_u32(w, x->key, (uint32_t)b); x->bits = (uint32_t)b; break;
		case GGUF_VT_I32: e = gguf_w_i32(w, x->key, (int32_t)b); x->bits = (uint64_t)(int64_t)(int32_t)b; break;
		case GGUF_VT_U64: e = gguf_w_u64(w, x->key, b); x->bits = b; break;
		case GGUF_VT_I64: e = gguf_w_i64(w, x->key, (int64_t)b); x->bits = b; break;
		case GGUF_VT_BOOL: e = gguf_w_bool(w, x->key, b & 1); x->bits = b & 1; break;
		case GGUF_VT_F32: {
			float f = (float)((int64_t)b % 100000) / 7.0f;
			e = gguf_w_f32(w, x->key, f);
			double d = f;
			memcpy(&x->bits, &d, 8);
			break;
		}
		case GGUF_VT_F64: {
			double d = (double)((int64_t)b % 1000000) / 3.0;
			e = gguf_w_f64(w, x->key, d);
			memcpy(&x->bits, &d, 8);
			break;
		}
		case GGUF_VT_STRING: {
			x->slen = rnd() % 40;
			x->s = malloc(x->slen + 1);
			for (uint64_t j = 0; j < x->slen; j++)
				x->s[j] = (char)(1 + rnd() % 255); /* any byte but NUL is fine in values */
			e = gguf_w_strn(w, x->key, x->s, x->slen);
			break;
		}
		default: { /* array: strings, fixed, or nested (raw encoding) */
			int kind = (int)(rnd() % 3);
			x->n = rnd() % 300;
			if (kind == 0) {
				x->et = GGUF_VT_STRING;
				const char **strs = calloc(x->n + 1, sizeof *strs);
				uint64_t *lens = calloc(x->n + 1, sizeof *lens);
				x->s = malloc(x->n * 9 + 1);
				char *p = x->s;
				for (uint64_t j = 0; j < x->n; j++) {
					lens[j] = rnd() % 9;
					strs[j] = p;
					for (uint64_t k = 0; k < lens[j]; k++)
						*p++ = (char)('a' + rnd() % 26);
				}
				x->slen = (uint64_t)(p - x->s);
				e = gguf_w_arr_str(w, x->key, strs, lens, x->n);
				/* keep lens for the check: store in raw */
				x->raw = (uint8_t *)lens;
				free(strs);
			} else if (kind == 1) {
				static const uint32_t fixed[] = {GGUF_VT_U8, GGUF_VT_I8, GGUF_VT_U16, GGUF_VT_I16, GGUF_VT_U32,
								 GGUF_VT_I32, GGUF_VT_F32, GGUF_VT_BOOL, GGUF_VT_U64,
								 GGUF_VT_I64, GGUF_VT_F64};
				x->et = fixed[rnd() % 11];
				size_t sz = gguf_vtype_size(x->et);
				x->raw = malloc(x->n * sz + 1);
				for (uint64_t j = 0; j < x->n * sz; j++)
					x->raw[j] = (uint8_t)rnd();
				if (x->et == GGUF_VT_BOOL)
					for (uint64_t j = 0; j < x->n; j++)
						x->raw[j] &= 1;
				/* native array (little-endian host) */
				e = gguf_w_arr(w, x->key, x->et, x->raw, x->n);
			} else {
				/* [[u32 x m_i] x n]: raw GGUF encoding of a nested array */
				x->et = GGUF_VT_ARRAY;
				x->n = rnd() % 6;
				uint8_t buf[12 + 6 * (12 + 5 * 4)];
				size_t o = 0;
				memcpy(buf, (uint32_t[]){GGUF_VT_ARRAY}, 4);
				uint64_t n = x->n;
				memcpy(buf + 4, &n, 8);
				o = 12;
				x->raw = malloc(6 * 6);
				for (uint64_t j = 0; j < x->n; j++) {
					uint64_t m = rnd() % 5;
					x->raw[j * 6] = (uint8_t)m;
					memcpy(buf + o, (uint32_t[]){GGUF_VT_U32}, 4);
					memcpy(buf + o + 4, &m, 8);
					o += 12;
					for (uint64_t k = 0; k < m; k++) {
						uint32_t v = (uint32_t)(j * 100 + k);
						memcpy(buf + o, &v, 4);
						o += 4;
					}
				}
				e = gguf_w_raw(w, x->key, GGUF_VT_ARRAY, buf, o);
			}
		}
		}
		CHECKF(e == GGUF_OK, "seed %llu key %s type %u: %s", (unsigned long long)seed, x->key, vt, gguf_strerror(e));
	}
	/* tensors */
	int nt = (int)(rnd() % 12);
	uint8_t **tdata = calloc((size_t)nt + 1, sizeof *tdata);
	int64_t (*shapes)[4] = calloc((size_t)nt + 1, sizeof *shapes);
	uint32_t *ttypes = calloc((size_t)nt + 1, sizeof *ttypes);
	int *modes = calloc((size_t)nt + 1, sizeof *modes);
	for (int i = 0; i < nt; i++) {
		uint32_t type = tensor_types[rnd() % (sizeof tensor_types / sizeof tensor_types[0])];
		const struct gguf_type_info *ti = gguf_type_get(type);
		uint32_t nd = 1 + (uint32_t)(rnd() % 4);
		int64_t ne[4] = {1, 1, 1, 1};
		ne[0] = (int64_t)ti->block_elems * (int64_t)(1 + rnd() % (type == GGUF_TYPE_FP8_E4M3_B128 ? 300 : 4));
		for (uint32_t d = 1; d < nd; d++)
			ne[d] = (int64_t)(rnd() % 4); /* zero-size tensors included */
		char name[32];
		snprintf(name, sizeof name, "t%d.weight", i);
		uint64_t nb;
		CHECK(gguf_tensor_nbytes(type, ne, &nb) == GGUF_OK);
		modes[i] = (int)(rnd() % 3); /* 0 data, 1 fill callback, 2 zeros */
		tdata[i] = malloc(nb + 1);
		for (uint64_t j = 0; j < nb; j++)
			tdata[i][j] = modes[i] == 0 ? (uint8_t)rnd() : modes[i] == 1 ? (uint8_t)(i + j * 7) : 0;
		e = gguf_w_tensor(w, name, type, nd, ne, modes[i] == 0 ? tdata[i] : NULL, modes[i] == 1 ? fill_pattern : NULL,
				  (void *)(uintptr_t)i);
		CHECKF(e == GGUF_OK, "tensor %s: %s", name, gguf_strerror(e));
		memcpy(shapes[i], ne, sizeof ne);
		ttypes[i] = type;
	}
	uint8_t *mem = NULL;
	size_t size = 0;
	struct gguf_error err;
	char path[] = "/tmp/orun-test-writer-XXXXXX";
	struct gguf_file *f;
	if (to_disk) {
		int fd = mkstemp(path);
		close(fd);
		e = gguf_writer_write_file(w, path, &err);
		CHECKF(e == GGUF_OK, "write_file: %s", err.msg);
		f = gguf_open(path, &err);
	} else {
		e = gguf_writer_write_mem(w, &mem, &size, &err);
		CHECKF(e == GGUF_OK, "write_mem: %s", err.msg);
		if (corpus_dir && seed <= 40 && size < 16384) {
			char cp[512];
			snprintf(cp, sizeof cp, "%s/writer-%03llu.gguf", corpus_dir, (unsigned long long)seed);
			FILE *fp = fopen(cp, "wb");
			if (fp) {
				fwrite(mem, 1, size, fp);
				fclose(fp);
			}
		}
		f = gguf_parse(mem, size, &err);
	}
	CHECKF(f != NULL, "seed %llu: read back: offset %llu: %s", (unsigned long long)seed,
	       (unsigned long long)err.offset, f ? "" : err.msg);
	if (f) {
		CHECK_EQ_INT(gguf_alignment(f), align);
		CHECK_EQ_INT(gguf_tensor_count(f), nt);
		for (int i = 0; i < nkv; i++) {
			struct exp_kv *x = &ex[i];
			const struct gguf_kv *kv = gguf_find_kv(f, x->key);
			CHECKF(kv && kv->val.type == x->vt, "key %s", x->key);
			if (!kv || kv->val.type != x->vt)
				continue;
			switch (x->vt) {
			case GGUF_VT_STRING:
				CHECK(kv->val.v.str.len == x->slen && memcmp(kv->val.v.str.ptr, x->s, x->slen) == 0);
				break;
			case GGUF_VT_F32: case GGUF_VT_F64: {
				double d;
				memcpy(&d, &x->bits, 8);
				CHECK(kv->val.v.f == d);
				break;
			}
			case GGUF_VT_BOOL: CHECK_EQ_INT(kv->val.v.b, x->bits); break;
			case GGUF_VT_ARRAY: {
				const struct gguf_array *a = &kv->val.v.arr;
				CHECK_EQ_INT(a->type, x->et);
				CHECK_EQ_INT(a->n, x->n);
				if (a->type != x->et || a->n != x->n)
					break;
				if (x->et == GGUF_VT_STRING) {
					const uint64_t *lens = (const uint64_t *)x->raw;
					const char *p = x->s;
					for (uint64_t j = 0; j < x->n; j++) {
						struct gguf_str s = gguf_arr_str(a, j);
						CHECK(s.len == lens[j] && memcmp(s.ptr, p, s.len) == 0);
						p += lens[j];
					}
				} else if (x->et == GGUF_VT_ARRAY) {
					for (uint64_t j = 0; j < x->n; j++) {
						const struct gguf_array *sub = gguf_arr_arr(a, j);
						CHECK(sub->type == GGUF_VT_U32 && sub->n == x->raw[j * 6]);
						for (uint64_t k = 0; k < sub->n; k++)
							CHECK_EQ_INT(gguf_arr_u32(sub, k), j * 100 + k);
					}
				} else {
					CHECK(memcmp(a->data, x->raw, x->n * gguf_vtype_size(x->et)) == 0);
					for (uint64_t j = 0; j < x->n && x->et == GGUF_VT_F32; j++) {
						float fv;
						memcpy(&fv, x->raw + 4 * j, 4);
						CHECK(gguf_arr_f32(a, j) == fv || fv != fv);
					}
				}
				break;
			}
			default:
				if (x->vt == GGUF_VT_I8 || x->vt == GGUF_VT_I16 || x->vt == GGUF_VT_I32 || x->vt == GGUF_VT_I64)
					CHECK(kv->val.v.i == (int64_t)x->bits);
				else
					CHECK(kv->val.v.u == x->bits);
			}
		}
		for (int i = 0; i < nt; i++) {
			const struct gguf_tensor *t = gguf_tensor_at(f, (uint64_t)i);
			CHECK_EQ_INT(t->type, ttypes[i]);
			CHECK(memcmp(t->ne, shapes[i], sizeof shapes[i]) == 0);
			CHECK_EQ_INT(t->file_offset % align, 0);
			CHECKF(memcmp(t->data, tdata[i], t->n_bytes) == 0, "seed %llu tensor %d (mode %d) data differs",
			       (unsigned long long)seed, i, modes[i]);
		}
		gguf_close(f);
	}
	if (to_disk)
		unlink(path);
	free(mem);
	for (int i = 0; i < nkv; i++) {
		free(ex[i].s);
		free(ex[i].raw);
	}
	for (int i = 0; i < nt; i++)
		free(tdata[i]);
	free(ex);
	free(tdata);
	free(shapes);
	free(ttypes);
	free(modes);
	gguf_writer_free(w);
}

static void test_copy_model(void)
{
	const char *path = tm_model_path("qwen2");
	if (!path)
		return;
	struct gguf_error err;
	struct gguf_file *src = gguf_open(path, &err);
	CHECK(src != NULL);
	if (!src)
		return;
	struct gguf_writer *w = gguf_writer_new();
	for (uint64_t i = 0; i < gguf_kv_count(src); i++)
		CHECK_EQ_INT(gguf_w_copy_kv(w, src, gguf_kv_at(src, i)), GGUF_OK);
	/* one small tensor copied as-is */
	const struct gguf_tensor *t = gguf_find_tensor(src, "blk.0.attn_k.weight");
	CHECK_EQ_INT(gguf_w_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, NULL, NULL), GGUF_OK);
	uint8_t *mem;
	size_t size;
	CHECK_EQ_INT(gguf_writer_write_mem(w, &mem, &size, &err), GGUF_OK);
	struct gguf_file *f = gguf_parse(mem, size, &err);
	CHECKF(f != NULL, "%s", f ? "" : err.msg);
	if (f) {
		CHECK_EQ_INT(gguf_kv_count(f), gguf_kv_count(src));
		for (uint64_t i = 0; i < gguf_kv_count(src); i++) {
			const struct gguf_kv *a = gguf_kv_at(src, i), *b = gguf_kv_at(f, i);
			CHECK_STREQ(a->key, b->key);
			CHECK(a->val.type == b->val.type && a->val_size == b->val_size &&
			      memcmp(gguf_file_data(src) + a->val_offset, mem + b->val_offset, a->val_size) == 0);
		}
		const struct gguf_tensor *u = gguf_find_tensor(f, "blk.0.attn_k.weight");
		CHECK(u && u->n_bytes == t->n_bytes && memcmp(u->data, t->data, t->n_bytes) == 0);
		gguf_close(f);
	}
	free(mem);
	gguf_writer_free(w);
	gguf_close(src);
}

static void test_errors(void)
{
	struct gguf_writer *w = gguf_writer_new();
	int64_t ne[4] = {32, 2, 1, 1};
	CHECK_EQ_INT(gguf_w_u32(w, "a", 1), GGUF_OK);
	CHECK_EQ_INT(gguf_w_u32(w, "a", 2), GGUF_ERR_KEY_DUP);
	CHECK_EQ_INT(gguf_w_u32(w, "", 2), GGUF_ERR_KEY_EMPTY);
	CHECK_EQ_INT(gguf_writer_remove(w, "a"), GGUF_OK);
	CHECK_EQ_INT(gguf_w_u32(w, "a", 2), GGUF_OK);
	CHECK_EQ_INT(gguf_writer_set_alignment(w, 48), GGUF_ERR_ALIGNMENT);
	CHECK_EQ_INT(gguf_w_u32(w, "general.alignment", 48), GGUF_ERR_ALIGNMENT);
	CHECK_EQ_INT(gguf_w_i32(w, "general.alignment", 64), GGUF_ERR_ALIGNMENT);
	CHECK_EQ_INT(gguf_w_arr(w, "s", GGUF_VT_STRING, NULL, 0), GGUF_ERR_INVALID_ARG);
	uint8_t bad[] = {9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0}; /* array of 1 array with nothing after it */
	CHECK_EQ_INT(gguf_w_raw(w, "r", GGUF_VT_ARRAY, bad, sizeof bad), GGUF_ERR_ARRAY);
	uint8_t badbool[] = {2};
	CHECK_EQ_INT(gguf_w_raw(w, "b", GGUF_VT_BOOL, badbool, 1), GGUF_ERR_BOOL);
	CHECK_EQ_INT(gguf_w_tensor(w, "x", GGUF_TYPE_Q8_0, 2, (int64_t[]){31, 2}, NULL, NULL, NULL), GGUF_ERR_BLOCK);
	CHECK_EQ_INT(gguf_w_tensor(w, "x", 4, 2, ne, NULL, NULL, NULL), GGUF_ERR_TENSOR_TYPE);
	CHECK_EQ_INT(gguf_w_tensor(w, "x", GGUF_TYPE_F32, 5, ne, NULL, NULL, NULL), GGUF_ERR_NDIMS);
	CHECK_EQ_INT(gguf_w_tensor(w, "x", GGUF_TYPE_F32, 2, (int64_t[]){-1, 2}, NULL, NULL, NULL), GGUF_ERR_DIM);
	CHECK_EQ_INT(gguf_w_tensor(w, "", GGUF_TYPE_F32, 2, ne, NULL, NULL, NULL), GGUF_ERR_TENSOR_NAME);
	CHECK_EQ_INT(gguf_w_tensor(w, "0123456789012345678901234567890123456789012345678901234567890123", GGUF_TYPE_F32,
				   2, ne, NULL, NULL, NULL), GGUF_ERR_TENSOR_NAME);
	CHECK_EQ_INT(gguf_w_tensor(w, "x", GGUF_TYPE_F32, 2, ne, NULL, NULL, NULL), GGUF_OK);
	CHECK_EQ_INT(gguf_w_tensor(w, "x", GGUF_TYPE_F32, 2, ne, NULL, NULL, NULL), GGUF_ERR_TENSOR_DUP);
	struct gguf_error err;
	CHECK_EQ_INT(gguf_writer_write_file(w, "/nonexistent-dir/x.gguf", &err), GGUF_ERR_IO);
	gguf_writer_free(w);
	gguf_writer_free(NULL);
}

int main(int argc, char **argv)
{
	corpus_dir = argc > 1 ? argv[1] : NULL;
	test_errors();
	for (uint64_t s = 1; s <= 300; s++)
		one_random_file(s, s % 10 == 0);
	test_copy_model();
	return check_done();
}
