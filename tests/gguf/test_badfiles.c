/* tests/gguf/test_badfiles.c — hostile GGUF input: one hand-made bad file per defect class, each derived
 * from a small good file built byte by byte here (so every offset is known), with the error code, the byte
 * offset and a fragment of the message each must produce. Also writes the good and bad files as the seed
 * corpus for the fuzzer when given a directory argument (tests/fuzz/corpus/gguf was made that way).
 */
#include "config.h"

#include <errno.h>
#include <sys/stat.h>

#include "gguf/gguf.h"
#include "tests/check.h"

struct buf {
	uint8_t d[4096];
	size_t n;
};

static size_t put(struct buf *b, const void *p, size_t n)
{
	size_t at = b->n;
	memcpy(b->d + b->n, p, n);
	b->n += n;
	return at;
}
static size_t u32(struct buf *b, uint32_t v) { uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)}; return put(b, x, 4); }
static size_t u64(struct buf *b, uint64_t v) { size_t at = u32(b, (uint32_t)v); u32(b, (uint32_t)(v >> 32)); return at; }
static size_t str(struct buf *b, const char *s) { size_t at = u64(b, strlen(s)); put(b, s, strlen(s)); return at; }
static void set32(struct buf *b, size_t at, uint32_t v) { for (int i = 0; i < 4; i++) b->d[at + i] = (uint8_t)(v >> (8 * i)); }
static void set64(struct buf *b, size_t at, uint64_t v) { set32(b, at, (uint32_t)v); set32(b, at + 4, (uint32_t)(v >> 32)); }

/* Offsets of the fields of the good file. */
struct offs {
	size_t version, n_tensors, n_kv;
	size_t k0_len, k0_type, k0_val;          /* general.architecture = "llama" */
	size_t k1_len, k1_key, k1_type, k1_val;  /* general.alignment u32 32 */
	size_t k2_key, k2_type, k2_etype, k2_count, k2_s0; /* k.aaaa: [string] */
	size_t k3_key, k3_val;                   /* k.bbbb bool */
	size_t k4_etype, k4_count, k4_sub0_etype;/* k.cccc: [[u32]] */
	size_t t0_len, t0_name, t0_ndims, t0_ne0, t0_ne1, t0_type, t0_off; /* "a" F32 [4, 2] */
	size_t t1_len, t1_name, t1_ne0, t1_type, t1_off;                   /* "b" Q8_0 [32, 2] */
	size_t t2_name, t2_off;                                            /* "c" F16 [8] */
	size_t data;
};

static void good(struct buf *b, struct offs *o)
{
	memset(b, 0, sizeof *b);
	put(b, "GGUF", 4);
	o->version = u32(b, 3);
	o->n_tensors = u64(b, 3);
	o->n_kv = u64(b, 5);
	o->k0_len = str(b, "general.architecture");
	o->k0_type = u32(b, GGUF_VT_STRING);
	o->k0_val = str(b, "llama");
	o->k1_len = str(b, "general.alignment");
	o->k1_key = o->k1_len + 8;
	o->k1_type = u32(b, GGUF_VT_U32);
	o->k1_val = u32(b, 32);
	o->k2_key = str(b, "k.aaaa") + 8;
	o->k2_type = u32(b, GGUF_VT_ARRAY);
	o->k2_etype = u32(b, GGUF_VT_STRING);
	o->k2_count = u64(b, 3);
	o->k2_s0 = str(b, "x");
	str(b, "yy");
	str(b, "zzz");
	o->k3_key = str(b, "k.bbbb") + 8;
	u32(b, GGUF_VT_BOOL);
	uint8_t one = 1;
	o->k3_val = put(b, &one, 1);
	str(b, "k.cccc");
	u32(b, GGUF_VT_ARRAY);
	o->k4_etype = u32(b, GGUF_VT_ARRAY);
	o->k4_count = u64(b, 2);
	o->k4_sub0_etype = u32(b, GGUF_VT_U32);
	u64(b, 2);
	u32(b, 1);
	u32(b, 2);
	u32(b, GGUF_VT_U32);
	u64(b, 1);
	u32(b, 3);
	/* tensors: a F32 [4, 2] = 32 bytes at 0; b Q8_0 [32, 2] = 68 bytes at 32; c F16 [8] = 16 bytes at 128 */
	o->t0_len = str(b, "a");
	o->t0_name = o->t0_len + 8;
	o->t0_ndims = u32(b, 2);
	o->t0_ne0 = u64(b, 4);
	o->t0_ne1 = u64(b, 2);
	o->t0_type = u32(b, GGUF_TYPE_F32);
	o->t0_off = u64(b, 0);
	o->t1_len = str(b, "b");
	o->t1_name = o->t1_len + 8;
	u32(b, 2);
	o->t1_ne0 = u64(b, 32);
	u64(b, 2);
	o->t1_type = u32(b, GGUF_TYPE_Q8_0);
	o->t1_off = u64(b, 32);
	o->t2_name = str(b, "c") + 8;
	u32(b, 1);
	u64(b, 8);
	u32(b, GGUF_TYPE_F16);
	o->t2_off = u64(b, 128);
	while (b->n % 32)
		b->d[b->n++] = 0;
	o->data = b->n;
	for (int i = 0; i < 144; i++)
		b->d[b->n++] = (uint8_t)(i * 3);
}

struct bad_case {
	const char *name;
	int code;
	long long offset; /* expected err.offset, -1 = don't check */
	const char *msg;  /* a fragment the message must contain */
};

static const char *corpus_dir;

static void save(const char *name, const uint8_t *d, size_t n)
{
	if (!corpus_dir)
		return;
	char path[512];
	snprintf(path, sizeof path, "%s/%s.gguf", corpus_dir, name);
	FILE *f = fopen(path, "wb");
	if (f) {
		fwrite(d, 1, n, f);
		fclose(f);
	}
}

static int n_classes;

static void expect(const struct bad_case *c, const uint8_t *d, size_t n)
{
	struct gguf_error err = {0};
	struct gguf_file *f = gguf_parse(d, n, &err);
	CHECKF(f == NULL, "%s: accepted", c->name);
	gguf_close(f);
	if (f)
		return;
	CHECKF(err.code == c->code, "%s: code %d (%s), expected %d (%s): %s", c->name, err.code, gguf_strerror(err.code),
	       c->code, gguf_strerror(c->code), err.msg);
	CHECKF(c->offset < 0 || (long long)err.offset == c->offset, "%s: offset %llu, expected %lld (%s)", c->name,
	       (unsigned long long)err.offset, c->offset, err.msg);
	CHECKF(strstr(err.msg, c->msg) != NULL, "%s: message \"%s\" lacks \"%s\"", c->name, err.msg, c->msg);
	save(c->name, d, n);
	n_classes++;
}

#define CASE(nm, cd, off, frag, ...)                                                                     \
	do {                                                                                             \
		struct buf b;                                                                            \
		struct offs o;                                                                           \
		good(&b, &o);                                                                            \
		(void)o;                                                                                 \
		__VA_ARGS__;                                                                             \
		struct bad_case c = {nm, cd, (long long)(off), frag};                                    \
		expect(&c, b.d, b.n);                                                                    \
	} while (0)

int main(int argc, char **argv)
{
	if (argc > 1) {
		corpus_dir = argv[1];
		mkdir(corpus_dir, 0755);
	}
	/* the good file itself */
	{
		struct buf b;
		struct offs o;
		good(&b, &o);
		struct gguf_error err;
		struct gguf_file *f = gguf_parse(b.d, b.n, &err);
		CHECKF(f != NULL, "good file rejected: %s", f ? "" : err.msg);
		if (f) {
			CHECK_EQ_INT(gguf_data_offset(f), o.data);
			CHECK_EQ_INT(gguf_tensor_count(f), 3);
			const struct gguf_array *a;
			CHECK(gguf_find_arr(f, "k.cccc", &a) == GGUF_OK && a->n == 2 && gguf_arr_u32(gguf_arr_arr(a, 1), 0) == 3);
			gguf_close(f);
		}
		save("good", b.d, b.n);
		/* GGUF v2 has the same layout for everything checked here: accepted */
		set32(&b, o.version, 2);
		f = gguf_parse(b.d, b.n, &err);
		CHECKF(f != NULL && gguf_version(f) == 2, "v2 file rejected: %s", f ? "" : err.msg);
		gguf_close(f);
		set32(&b, o.version, 3);
		/* every prefix of the good file is rejected, never accepted or crashed on */
		for (size_t n = 0; n < b.n; n++) {
			f = gguf_parse(b.d, n, &err);
			CHECKF(f == NULL, "prefix of %zu bytes accepted", n);
			gguf_close(f);
		}
	}
	CASE("empty", GGUF_ERR_TRUNCATED, 0, "too short for the GGUF magic", b.n = 0);
	CASE("short-magic", GGUF_ERR_TRUNCATED, 0, "3 bytes", b.n = 3);
	CASE("bad-magic", GGUF_ERR_MAGIC, 0, "bad magic 'GGML', expected 'GGUF'", memcpy(b.d, "GGML", 4));
	CASE("binary-magic", GGUF_ERR_MAGIC, 0, "bad magic '\\x00\\xff\\x01\\x7f'", memcpy(b.d, "\0\xff\x01\x7f", 4));
	CASE("version-1", GGUF_ERR_VERSION, 4, "version 1 is not supported", set32(&b, o.version, 1));
	CASE("version-4", GGUF_ERR_VERSION, 4, "GGUF version 4 is not supported", set32(&b, o.version, 4));
	CASE("big-endian", GGUF_ERR_VERSION, 4, "big-endian", set32(&b, o.version, 0x03000000));
	CASE("truncated-header", GGUF_ERR_TRUNCATED, 8, "the header (tensor count)", b.n = 12);
	CASE("too-many-tensors", GGUF_ERR_COUNT, 8, "tensor count 1048577 exceeds the limit", set64(&b, o.n_tensors, GGUF_MAX_TENSORS + 1));
	CASE("too-many-kv-for-size", GGUF_ERR_COUNT, 8, "1000 key/value pairs need at least", set64(&b, o.n_kv, 1000));
	CASE("huge-kv-count", GGUF_ERR_COUNT, 16, "key/value count 18446744073709551615", set64(&b, o.n_kv, UINT64_MAX));
	CASE("empty-key", GGUF_ERR_KEY_EMPTY, o.k0_len, "pair 0 has an empty key", set64(&b, o.k0_len, 0));
	CASE("key-too-long", GGUF_ERR_KEY_INVALID, o.k0_len, "key length 65536 exceeds", set64(&b, o.k0_len, 65536));
	CASE("key-past-end", GGUF_ERR_STRING, o.k0_len, "key length 60000 exceeds the", set64(&b, o.k0_len, 60000));
	CASE("key-with-nul", GGUF_ERR_KEY_INVALID, o.k1_len, "'gen\\x00ral.alignment' contains a NUL", b.d[o.k1_key + 3] = 0);
	CASE("duplicate-key", GGUF_ERR_KEY_DUP, o.k3_key - 8, "duplicate key 'k.aaaa' (pairs 2 and 3)", memcpy(b.d + o.k3_key, "k.aaaa", 6));
	CASE("value-type", GGUF_ERR_VALUE_TYPE, o.k0_type, "value type 13 is not a GGUF value type", set32(&b, o.k0_type, 13));
	CASE("array-element-type", GGUF_ERR_VALUE_TYPE, o.k2_etype, "array element type 99", set32(&b, o.k2_etype, 99));
	CASE("string-past-end", GGUF_ERR_STRING, o.k0_val, "string length 5000 exceeds the", set64(&b, o.k0_val, 5000));
	CASE("string-over-cap", GGUF_ERR_STRING, o.k2_s0, "exceeds the limit 1073741824", set64(&b, o.k2_s0, (1ull << 30) + 1));
	CASE("array-past-end", GGUF_ERR_ARRAY, o.k2_etype, "array of 1000 string elements needs at least 8000 bytes", set64(&b, o.k2_count, 1000));
	CASE("array-over-cap", GGUF_ERR_ARRAY, o.k2_etype, "exceeds the limit 1073741824", set64(&b, o.k2_count, (1ull << 30) + 1));
	CASE("bool-value", GGUF_ERR_BOOL, o.k3_val, "bool value is 2", b.d[o.k3_val] = 2);
	CASE("nested-array-type", GGUF_ERR_VALUE_TYPE, o.k4_sub0_etype, "array element type 77", set32(&b, o.k4_sub0_etype, 77));
	CASE("alignment-not-pow2", GGUF_ERR_ALIGNMENT, o.k1_len, "general.alignment 48 is not a power of two", set32(&b, o.k1_val, 48));
	CASE("alignment-zero", GGUF_ERR_ALIGNMENT, o.k1_len, "general.alignment 0 is not a power of two", set32(&b, o.k1_val, 0));
	CASE("alignment-over-cap", GGUF_ERR_ALIGNMENT, o.k1_len, "general.alignment 2147483648 exceeds the limit 1073741824", set32(&b, o.k1_val, 1u << 31));
	CASE("alignment-type", GGUF_ERR_ALIGNMENT, o.k1_len, "general.alignment has type i32, must be u32", set32(&b, o.k1_type, GGUF_VT_I32));
	CASE("tensor-name-empty", GGUF_ERR_TENSOR_NAME, o.t0_len, "tensor 0 has an empty name", set64(&b, o.t0_len, 0));
	CASE("tensor-name-long", GGUF_ERR_TENSOR_NAME, o.t0_len, "is 64 bytes, longer than the limit 63", set64(&b, o.t0_len, 64));
	CASE("tensor-name-nul", GGUF_ERR_TENSOR_NAME, o.t1_len, "name '\\x00' contains a NUL", b.d[o.t1_name] = 0);
	CASE("tensor-duplicate", GGUF_ERR_TENSOR_DUP, o.t1_len, "duplicate tensor name 'a' (tensors 0 and 1)", b.d[o.t1_name] = 'a');
	CASE("tensor-ndims", GGUF_ERR_NDIMS, o.t0_ndims, "tensor 'a': 5 dimensions, at most 4", set32(&b, o.t0_ndims, 5));
	CASE("tensor-negative-dim", GGUF_ERR_DIM, o.t0_ne1, "tensor 'a': dimension 1 is -2", set64(&b, o.t0_ne1, (uint64_t)-2));
	CASE("tensor-overflow", GGUF_ERR_OVERFLOW, o.t0_ndims, "shape (4611686018427387904, 4, 1, 1) of type F32 overflows",
	     set64(&b, o.t0_ne0, 1ull << 62); set64(&b, o.t0_ne1, 4));
	CASE("tensor-bytes-overflow", GGUF_ERR_OVERFLOW, o.t0_ndims, "overflows", set64(&b, o.t0_ne0, 1ull << 61));
	CASE("tensor-type", GGUF_ERR_TENSOR_TYPE, o.t0_type, "tensor 'a': unknown tensor type 4", set32(&b, o.t0_type, 4));
	CASE("tensor-type-huge", GGUF_ERR_TENSOR_TYPE, o.t0_type, "unknown tensor type 4294967295", set32(&b, o.t0_type, UINT32_MAX));
	CASE("tensor-block", GGUF_ERR_BLOCK, o.t1_ne0 - 4, "ne[0]=33 is not a multiple of Q8_0's block size 32", set64(&b, o.t1_ne0, 33));
	CASE("tensor-offset-misaligned", GGUF_ERR_OFFSET, o.t1_len, "tensor 'b': data offset 36, expected 32", set64(&b, o.t1_off, 36));
	CASE("tensor-offset-order", GGUF_ERR_OFFSET, o.t2_name - 8, "tensor 'c': data offset 0, expected 128", set64(&b, o.t2_off, 0));
	CASE("tensor-data-past-end", GGUF_ERR_DATA_BOUNDS, o.t2_name - 8, "tensor 'c': data [", b.n -= 10);
	CASE("tensor-huge-offset", GGUF_ERR_OFFSET, o.t0_len, "data offset 18446744073709551584", set64(&b, o.t0_off, (uint64_t)-32));
	CASE("truncated-in-kv", GGUF_ERR_TRUNCATED, -1, "file ends inside", b.n = o.k3_val);
	CASE("truncated-in-tensors", GGUF_ERR_TRUNCATED, -1, "file ends inside a tensor", b.n = o.t1_type + 2);
	/* arrays nested deeper than the limit: [[[[...]]]] nine levels, built from scratch */
	{
		struct buf b;
		memset(&b, 0, sizeof b);
		put(&b, "GGUF", 4);
		u32(&b, 3);
		u64(&b, 0);
		u64(&b, 1);
		str(&b, "deep");
		u32(&b, GGUF_VT_ARRAY);
		size_t at = 0;
		for (int d = 1; d <= 9; d++) {
			size_t p = u32(&b, GGUF_VT_ARRAY);
			if (d == 9)
				at = p;
			u64(&b, 1);
		}
		u32(&b, GGUF_VT_U8);
		u64(&b, 0);
		struct bad_case c = {"array-too-deep", GGUF_ERR_ARRAY, (long long)at, "arrays nested deeper than 8 levels"};
		expect(&c, b.d, b.n);
	}
	fprintf(stderr, "%d bad-file classes rejected with the expected code\n", n_classes);
	CHECK(n_classes >= 40);
	return check_done();
}
