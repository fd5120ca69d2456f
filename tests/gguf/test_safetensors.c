/* tests/gguf/test_safetensors.c — the safetensors reader on a small good file built here and one bad file per
 * defect class (each with its expected code and message fragment); with a directory argument it also writes
 * them as the fuzzer's seed corpus (tests/fuzz/corpus/safetensors was made that way).
 */
#include "config.h"

#include <sys/stat.h>

#include "gguf/safetensors.h"
#include "tests/check.h"

static const char *corpus_dir;
static int n_classes;

/* header JSON + data of n bytes (pattern) -> file bytes; header_len_override when nonzero */
static uint8_t *build(const char *json, size_t data_n, uint64_t hl_override, size_t *out_n)
{
	size_t jl = strlen(json);
	size_t n = 8 + jl + data_n;
	uint8_t *b = malloc(n + 1);
	uint64_t hl = hl_override ? hl_override : jl;
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(hl >> (8 * i));
	memcpy(b + 8, json, jl);
	for (size_t i = 0; i < data_n; i++)
		b[8 + jl + i] = (uint8_t)(i * 5 + 1);
	*out_n = n;
	return b;
}

static void save(const char *name, const uint8_t *d, size_t n)
{
	if (!corpus_dir)
		return;
	char path[512];
	snprintf(path, sizeof path, "%s/%s.safetensors", corpus_dir, name);
	FILE *f = fopen(path, "wb");
	if (f) {
		fwrite(d, 1, n, f);
		fclose(f);
	}
}

static void bad(const char *name, const char *json, size_t data_n, uint64_t hl, int code, const char *frag)
{
	size_t n;
	uint8_t *b = build(json, data_n, hl, &n);
	struct gguf_error err = {0};
	struct gguf_st_file *f = gguf_st_parse(b, n, &err);
	CHECKF(f == NULL, "%s: accepted", name);
	if (!f) {
		CHECKF(err.code == code, "%s: code %d (%s), expected %d: %s", name, err.code, gguf_strerror(err.code), code,
		       err.msg);
		CHECKF(strstr(err.msg, frag) != NULL, "%s: message \"%s\" lacks \"%s\"", name, err.msg, frag);
		n_classes++;
	}
	gguf_st_close(f);
	save(name, b, n);
	free(b);
}

#define GOOD                                                                                             \
	"{\"__metadata__\":{\"format\":\"pt\"},\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}," \
	"\"b\\u00e9\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[24,32]},"                           \
	"\"c\":{\"dtype\":\"F8_E4M3\",\"shape\":[2,2],\"data_offsets\":[32,36]},"                           \
	"\"d\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[36,37]}}"

int main(int argc, char **argv)
{
	if (argc > 1) {
		corpus_dir = argv[1];
		mkdir(corpus_dir, 0755);
	}
	size_t n;
	uint8_t *b = build(GOOD, 37, 0, &n);
	struct gguf_error err;
	struct gguf_st_file *f = gguf_st_parse(b, n, &err);
	CHECKF(f != NULL, "good file: %s", f ? "" : err.msg);
	if (f) {
		CHECK_EQ_INT(gguf_st_count(f), 4);
		const struct gguf_st_tensor *t = gguf_st_find(f, "b\xc3\xa9");
		CHECK(t && t->dtype == GGUF_ST_BF16 && t->n_dims == 1 && t->shape[0] == 4 && t->offset == 8 + strlen(GOOD) + 24);
		t = gguf_st_find(f, "a");
		CHECK(t && t->n_elements == 6 && t->n_bytes == 24 && t->data == b + 8 + strlen(GOOD));
		t = gguf_st_find(f, "d");
		CHECK(t && t->n_dims == 0 && t->n_elements == 1);
		CHECK_STREQ(gguf_st_meta(f, "format"), "pt");
		CHECK(gguf_st_meta(f, "nope") == NULL);
		gguf_st_close(f);
	}
	save("good", b, n);
	for (size_t k = 0; k < n; k++) { /* every prefix is refused */
		f = gguf_st_parse(b, k, &err);
		CHECKF(f == NULL, "prefix %zu accepted", k);
		gguf_st_close(f);
	}
	free(b);

	bad("short", "", 0, 0, GGUF_ERR_JSON, "empty JSON");
	bad("header-over-cap", GOOD, 37, (uint64_t)GGUF_ST_MAX_HEADER + 1, GGUF_ERR_COUNT, "exceeds the limit");
	bad("header-past-end", GOOD, 0, 100000, GGUF_ERR_TRUNCATED, "header length 100000 exceeds");
	bad("bad-json", "{\"a\":{\"dtype\":\"F32\",}", 0, 0, GGUF_ERR_JSON, "header JSON");
	bad("trailing-json", "{} {}", 0, 0, GGUF_ERR_JSON, "trailing characters");
	bad("not-object", "[1,2]", 0, 0, GGUF_ERR_FORMAT, "not an object");
	bad("entry-not-object", "{\"a\":5}", 0, 0, GGUF_ERR_FORMAT, "tensor 'a': entry is not an object");
	bad("no-dtype", "{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, 0, GGUF_ERR_FORMAT, "lacks \"dtype\"");
	bad("unknown-dtype", "{\"a\":{\"dtype\":\"F17\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, 0, GGUF_ERR_FORMAT,
	    "unknown dtype 'F17'");
	bad("negative-dim", "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, 0, GGUF_ERR_FORMAT,
	    "shape dimension 0 is not a non-negative integer");
	bad("too-many-dims", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}", 1, 0,
	    GGUF_ERR_FORMAT, "at most 8 dimensions");
	bad("overflow", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,4]}}", 4, 0,
	    GGUF_ERR_FORMAT, "element count overflows");
	bad("size-mismatch", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, 0, GGUF_ERR_FORMAT,
	    "hold 4 bytes, the F32 shape needs 8");
	bad("offsets-past-data", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, 0, GGUF_ERR_FORMAT,
	    "outside the 4 bytes of data");
	bad("offsets-reversed", "{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[4,0]}}", 4, 0, GGUF_ERR_FORMAT,
	    "data_offsets [4, 0]");
	bad("offsets-not-pair", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0]}}", 1, 0, GGUF_ERR_FORMAT,
	    "data_offsets is not [begin, end]");
	bad("overlap",
	    "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[2,6]}}",
	    6, 0, GGUF_ERR_FORMAT, "overlap");
	bad("gap",
	    "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[4,6]}}",
	    6, 0, GGUF_ERR_FORMAT, "leave a gap");
	bad("trailing-data", "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 5, 0, GGUF_ERR_FORMAT,
	    "3 bytes after the last tensor");
	bad("duplicate",
	    "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]}}",
	    4, 0, GGUF_ERR_TENSOR_DUP, "duplicate tensor name 'a'");
	bad("bad-escape", "{\"a\\x\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, 0, GGUF_ERR_JSON, "JSON");
	bad("empty-name", "{\"\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, 0, GGUF_ERR_FORMAT,
	    "is empty");
	bad("metadata-not-object", "{\"__metadata__\":3}", 0, 0, GGUF_ERR_FORMAT, "__metadata__ is not an object");
	bad("shape-not-int", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1.5],\"data_offsets\":[0,1]}}", 1, 0, GGUF_ERR_FORMAT,
	    "not a non-negative integer");
	/* found by the fuzzer: jsmn takes "formit:""pt" as a key with no value; the tree check refuses it */
	bad("key-without-value", "{\"__metadata__\":{\"formit:\"\"pt\"}}", 0, 0, GGUF_ERR_JSON, "object key without value");
	fprintf(stderr, "%d safetensors defect classes rejected\n", n_classes);
	CHECK(n_classes >= 25);
	return check_done();
}
