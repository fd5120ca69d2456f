/* tests/base/test_json_reader.c — the reader's own guarantees beyond Go's grammar (tests/base/test_json.c):
 * work linear in the input at any nesting (counted in state transitions, not timed), the depth limit and its
 * message, Go's texts at every kind of end of input, and strings with escapes, invalid UTF-8 and NULs.
 * It includes base/json.c to count the transitions of its one pass.
 */
#include "config.h"

#include <malloc.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

/* The reader's memory, counted from outside it: base/json.c's malloc/calloc/realloc/free and its ob_grow calls
 * go through these counters (the macros apply to base/json.c only), sized by malloc_usable_size. */
static size_t mem_live, mem_peak;
static void mem_add(size_t before, size_t after)
{
	mem_live += after - before;
	if (mem_live > mem_peak)
		mem_peak = mem_live;
}
static void *counted_malloc(size_t n)
{
	void *p = malloc(n);
	mem_add(0, p ? malloc_usable_size(p) : 0);
	return p;
}
static void *counted_calloc(size_t n, size_t k)
{
	void *p = calloc(n, k);
	mem_add(0, p ? malloc_usable_size(p) : 0);
	return p;
}
static void *counted_realloc(void *p, size_t n)
{
	size_t before = p ? malloc_usable_size(p) : 0;
	void *q = realloc(p, n);
	if (q)
		mem_add(before, malloc_usable_size(q));
	return q;
}
static void counted_free(void *p)
{
	mem_live -= p ? malloc_usable_size(p) : 0;
	free(p);
}
static int counted_grow(void *pp, size_t *cap, size_t need, size_t elem, size_t min_cap, size_t max)
{
	void *p;
	memcpy(&p, pp, sizeof p);
	size_t before = p ? malloc_usable_size(p) : 0;
	int rc = ob_grow(pp, cap, need, elem, min_cap, max);
	memcpy(&p, pp, sizeof p);
	mem_add(before, p ? malloc_usable_size(p) : 0);
	return rc;
}
#define malloc counted_malloc
#define calloc counted_calloc
#define realloc counted_realloc
#define free counted_free
#define ob_grow counted_grow
#include "base/json.c"
#undef malloc
#undef calloc
#undef realloc
#undef free
#undef ob_grow

#include "tests/check.h"

static char *nested(size_t depth, const char *open, const char *inner, const char *close, size_t *len)
{
	size_t no = strlen(open), ni = strlen(inner), nc = strlen(close);
	char *s = malloc(depth * (no + nc) + ni + 1);
	size_t k = 0;
	for (size_t d = 0; d < depth; d++, k += no)
		memcpy(s + k, open, no);
	memcpy(s + k, inner, ni);
	k += ni;
	for (size_t d = 0; d < depth; d++, k += nc)
		memcpy(s + k, close, nc);
	s[k] = 0;
	*len = k;
	return s;
}

/* Parses s; returns whether it was accepted and stores the transitions per input byte. */
static bool steps_per_byte(const char *s, size_t len, double *ratio, struct ob_json_error *err)
{
	size_t steps = 0;
	struct ob_json_doc *d = parse_counted(s, len, err, &steps);
	ob_json_free(d);
	*ratio = (double)steps / (double)(len ? len : 1);
	return d != NULL;
}

static void test_linear_depth(void)
{
	static const struct {
		const char *open, *inner, *close;
	} shapes[] = {{"[", "", "]"}, {"{\"k\":", "1", "}"}, {"[1,", "2", "]"}, {" [ ", "\"x\"", " ] "}};
	for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
		for (size_t depth = 1; depth <= OB_JSON_MAX_DEPTH; depth *= 10) {
			size_t len;
			char *s = nested(depth, shapes[k].open, shapes[k].inner, shapes[k].close, &len);
			double ratio;
			struct ob_json_error err;
			bool ok = steps_per_byte(s, len, &ratio, &err);
			CHECKF(ok, "depth %zu shape %zu: %s", depth, k, err.message);
			/* at most one transition per byte plus a constant: the cost cannot grow with the depth */
			CHECKF(ratio <= 1.5, "depth %zu shape %zu: %.2f transitions per byte", depth, k, ratio);
			free(s);
		}
		/* past the limit: refused where the limit is crossed, having read only that far */
		size_t len;
		char *s = nested(100000, shapes[k].open, shapes[k].inner, shapes[k].close, &len);
		size_t steps = 0;
		struct ob_json_error err;
		struct ob_json_doc *d = parse_counted(s, len, &err, &steps);
		CHECK(d == NULL);
		ob_json_free(d);
		CHECK_STREQ(err.message, "exceeded max depth");
		CHECK_EQ_INT(err.offset, OB_JSON_MAX_DEPTH * strlen(shapes[k].open) + (shapes[k].open[0] == ' '));
		CHECKF(steps <= 3 * OB_JSON_MAX_DEPTH + 3, "%zu transitions before the refusal", steps);
		free(s);
	}
	/* the tree of a deep document is complete: spans and counts at every level */
	size_t len;
	char *s = nested(OB_JSON_MAX_DEPTH, "[", "", "]", &len);
	struct ob_json_doc *d = ob_json_parse(s, len, NULL);
	CHECK(d != NULL);
	const struct ob_json *v = ob_json_root(d);
	size_t levels = 0;
	while (v) {
		CHECK_EQ_INT(v->span, OB_JSON_MAX_DEPTH - levels);
		levels++;
		v = ob_json_first(v);
	}
	CHECK_EQ_INT(levels, OB_JSON_MAX_DEPTH);
	ob_json_free(d);
	free(s);
}

/* "[u,u,...,u]" (or "{u,u,...}" when obj) of about `size` bytes. */
static char *repeated(const char *unit, size_t size, bool obj, size_t *len)
{
	size_t nu = strlen(unit), k = 0;
	char *s = malloc(size + nu + 3);
	s[k++] = obj ? '{' : '[';
	while (k + nu + 2 <= size) {
		if (k > 1)
			s[k++] = ',';
		memcpy(s + k, unit, nu);
		k += nu;
	}
	s[k++] = obj ? '}' : ']';
	s[k] = 0;
	*len = k;
	return s;
}

/* The most memory the reader holds while it parses s: counted, not timed. */
static size_t peak_bytes(const char *s, size_t len, bool *ok)
{
	mem_live = mem_peak = 0;
	struct ob_json_error err;
	struct ob_json_doc *d = ob_json_parse(s, len, &err);
	*ok = d != NULL;
	ob_json_free(d);
	return mem_peak;
}

/* Memory per input byte has a fixed ceiling whatever the shape: the node array never grows past the
 * structural bound of nodes (every value after the first needs two bytes: itself and a separator), and
 * number literals and strings cost at most their own bytes (three per invalid UTF-8 byte, which becomes
 * U+FFFD). The worst shape is "[0,0,...]": one 48-byte node per two input bytes. */
static void test_memory_bound(void)
{
	static const struct {
		const char *unit;
		bool obj;
	} shapes[] = {{"0", false},      {"[]", false},     {"{}", false},         {"\"\"", false}, {"10", false},
		      {"-1", false},     {"true", false},   {"null", false},       {"[0]", false},    {"1e5", false},
		      {"\"\":0", true}, {"\"\":[]", true}, {"\"a\":\"\"", true}};
	const size_t per_byte = 24, slack = 128u << 10;
	printf("JSON reader: most memory held per input byte (1 MiB inputs):");
	for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
		/* 1 MiB, and 2^19 + 1 elements of "0" (one past a power of two: the worst case for doubling) */
		size_t sizes[] = {1u << 20, (2u << 19) + 3};
		for (size_t z = 0; z < 2; z++) {
			size_t len;
			char *s = repeated(shapes[k].unit, sizes[z], shapes[k].obj, &len);
			bool ok;
			size_t peak = peak_bytes(s, len, &ok);
			CHECKF(ok, "%s", shapes[k].unit);
			CHECKF(peak <= per_byte * len + slack, "%s x %zu bytes: up to %zu bytes held (%.1f per input byte)",
			       shapes[k].unit, len, peak, (double)peak / (double)len);
			if (z == 0)
				printf(" %s %.1f;", shapes[k].unit, (double)peak / (double)len);
			free(s);
		}
	}
	/* one string of invalid bytes: each becomes U+FFFD (three bytes) */
	size_t len = 1u << 20;
	char *s = malloc(len + 1);
	memset(s, 0xff, len);
	s[0] = s[len - 1] = '"';
	bool ok;
	size_t peak = peak_bytes(s, len, &ok);
	CHECK(ok);
	CHECKF(peak <= 3 * len + slack, "invalid UTF-8: up to %zu bytes held for %zu", peak, len);
	printf(" \"\\xff...\" %.1f\n", (double)peak / (double)len);
	free(s);
}

static void check_error(const char *s, size_t n, const char *msg, size_t offset)
{
	struct ob_json_error err;
	struct ob_json_doc *d = ob_json_parse(s, n, &err);
	CHECKF(d == NULL, "accepted %.*s", (int)n, s);
	ob_json_free(d);
	if (!d) {
		CHECKF(strcmp(err.message, msg) == 0, "%.*s: message \"%s\", expected \"%s\"", (int)n, s, err.message,
		       msg);
		CHECKF(err.offset == offset, "%.*s: offset %zu, expected %zu", (int)n, s, err.offset, offset);
	}
}

static void test_errors(void)
{
	static const char *const eof[] = {"-", "1.", "1e", "1e+", "tr", "\"abc", "\"\\", "\"\\u12", "[1,", "{\"a\"",
					  "{\"a\":", "[", "{", " ", "{\"a\":1,"};
	for (size_t i = 0; i < sizeof eof / sizeof *eof; i++)
		check_error(eof[i], strlen(eof[i]), "unexpected end of JSON input", strlen(eof[i]));
	check_error("[1]\0", 4, "invalid character '\\x00' after top-level value", 3);
	check_error("\"a\0\"", 4, "invalid character '\\x00' in string literal", 2);
	check_error("[1e+x]", 6, "invalid character 'x' in exponent of numeric literal", 4);
	check_error("{\"a\":1 ,}", 9, "invalid character '}' looking for beginning of object key string", 8);
	check_error("[\"\\u00zz\"]", 10, "invalid character 'z' in \\u hexadecimal character escape", 6);
	check_error("{\"a\":1]", 7, "invalid character ']' after object key:value pair", 6);
	check_error("[1}", 3, "invalid character '}' after array element", 2);
	check_error("\xef\xbb\xbf{}", 5, "invalid character '\xc3\xaf' looking for beginning of value", 0);
	check_error("[\x7f]", 3, "invalid character '\\x7f' looking for beginning of value", 1);
	check_error("[\xa0]", 3, "invalid character '\\u00a0' looking for beginning of value", 1);
}

static void test_strings(void)
{
	/* escapes of every kind, invalid bytes among them, and a long plain run for the 8-byte scan */
	const char *s = "[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041\\u00e9\\u20ac\\ud83d\\ude00\", \"\\u0000x\", "
			"\"a\xff\xc3\xa9\xed\xa0\x80z\","
			"\"\\udc00\\ud800\\u0041\", \"0123456789abcdef0123456789abcdef\xe6\x97\xa5!\"]";
	struct ob_json_error err;
	struct ob_json_doc *d = ob_json_parse(s, strlen(s), &err);
	CHECKF(d != NULL, "%s at %zu", err.message, err.offset);
	if (!d)
		return;
	const struct ob_json *r = ob_json_root(d);
	CHECK(ob_json_str_eq(ob_json_at(r, 0), "\"\\/\b\f\n\r\tA\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));
	const struct ob_json *nul = ob_json_at(r, 1);
	CHECK(nul->len == 2 && memcmp(nul->str, "\0x", 2) == 0);
	/* Go: each invalid byte is U+FFFD, an encoded surrogate is three invalid bytes */
	CHECK(ob_json_str_eq(ob_json_at(r, 2), "a\xef\xbf\xbd\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdz"));
	CHECK(ob_json_str_eq(ob_json_at(r, 3), "\xef\xbf\xbd\xef\xbf\xbd" "A"));
	CHECK(ob_json_str_eq(ob_json_at(r, 4), "0123456789abcdef0123456789abcdef\xe6\x97\xa5!"));
	ob_json_free(d);

	/* numbers: the literal as written, the value, integers beyond 2^53 exactly through ob_json_int */
	s = "[-0, 123456789012345, 9007199254740993, -9223372036854775808, 1.5e3, -0.25]";
	d = ob_json_parse(s, strlen(s), NULL);
	CHECK(d != NULL);
	if (d) {
		r = ob_json_root(d);
		CHECK(ob_json_at(r, 0)->number == 0 && signbit(ob_json_at(r, 0)->number));
		CHECK(ob_json_at(r, 1)->number == 123456789012345.0);
		int64_t x;
		CHECK(ob_json_int(ob_json_at(r, 2), &x) && x == 9007199254740993LL);
		CHECK(ob_json_int(ob_json_at(r, 3), &x) && x == INT64_MIN);
		CHECK(ob_json_at(r, 4)->number == 1500 && strcmp(ob_json_at(r, 4)->str, "1.5e3") == 0);
		CHECK(ob_json_at(r, 5)->number == -0.25);
	}
	ob_json_free(d);
}

static void test_map_members(void)
{
	/* Go's map from an object: last duplicate wins, keys in byte order (a prefix first, bytes unsigned) */
	const char *s = "{\"b\":1,\"a\":2,\"\xc3\xa9\":3,\"ab\":4,\"b\":5,\"A\":6}";
	struct ob_json_doc *d = ob_json_parse(s, strlen(s), NULL);
	CHECK(d != NULL);
	if (!d)
		return;
	const struct ob_json **keys;
	size_t n = ob_json_map_members(ob_json_root(d), &keys);
	static const char *const want_k[] = {"A", "a", "ab", "b", "\xc3\xa9"};
	static const int want_v[] = {6, 2, 4, 5, 3};
	CHECK_EQ_INT(n, 5);
	for (size_t i = 0; i < n && i < 5; i++) {
		CHECK(ob_json_str_eq(keys[i], want_k[i]));
		CHECK(keys[i][1].number == want_v[i]);
	}
	free(keys);
	CHECK(ob_json_map_members(ob_json_at(ob_json_root(d), 0), &keys) == 0 && keys == NULL);
	ob_json_free(d);
}

int main(void)
{
	test_linear_depth();
	test_memory_bound();
	test_map_members();
	test_errors();
	test_strings();
	return check_done();
}
