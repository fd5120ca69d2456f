/* tests/base/test_json.c — base/json: what Go's decoder accepts and rejects, look-ups, escaping and
 * number formatting as Go's encoding/json writes them. */
#include "config.h"

#include <math.h>
#include <stdlib.h>

#include "base/json.h"
#include "tests/check.h"

static int parses(const char *s)
{
	struct ob_json_error err;
	struct ob_json_doc *d = ob_json_parse(s, strlen(s), &err);
	ob_json_free(d);
	return d != NULL;
}

static void check_error(const char *s, const char *msg, size_t offset)
{
	struct ob_json_error err;
	struct ob_json_doc *d = ob_json_parse(s, strlen(s), &err);
	CHECKF(d == NULL, "accepted %s", s);
	ob_json_free(d);
	if (!d) {
		CHECKF(strcmp(err.message, msg) == 0, "%s: message \"%s\", expected \"%s\"", s, err.message, msg);
		CHECKF(err.offset == offset, "%s: offset %zu, expected %zu", s, err.offset, offset);
	}
}

static void test_grammar(void)
{
	static const char *const good[] = {
		"{}", "[]", "0", "-0", "1.5e+10", "-1.25E-3", "\"\"", "true", "false", "null", " \t\r\n{ } ",
		"{\"a\":1,\"b\":[1,2,{\"c\":null}]}", "[[[[]]]]", "\"\\u00e9\\ud83d\\ude00\\n\\/\"", "[1 , 2 ]",
		"{\"a\" : \"b\" }", "123456789012345678901234567890",
	};
	static const char *const bad[] = {
		"", " ", "{", "[", "[1,]", "[,1]", "[1 2]", "{\"a\":1,}", "{\"a\" 1}", "{\"a\":1 \"b\":2}", "{a:1}",
		"{1:2}", "{\"a\"}", "01", "1.", ".5", "-", "+1", "1e", "1e+", "tru", "truex", "nul", "NaN",
		"Infinity", "'a'", "\"a", "\"\\x\"", "\"\\u12\"", "\"a\tb\"", "\"a\nb\"", "{} {}", "[] x", "1 2",
		"[}", "{]", "]", "}", "[1]]", "{\"a\":}", "{\"a\":1}}", "[1,,2]", "\"abc\" \"def\"",
	};
	for (size_t i = 0; i < sizeof good / sizeof *good; i++)
		CHECKF(parses(good[i]), "rejected valid %s", good[i]);
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		CHECKF(!parses(bad[i]), "accepted invalid %s", bad[i]);
	/* embedded NUL is not JSON */
	CHECK(!ob_json_parse("[1]\0", 4, NULL));
	/* deep nesting is bounded */
	size_t n = OB_JSON_MAX_DEPTH + 5;
	char *deep = malloc(2 * n + 1);
	memset(deep, '[', n);
	memset(deep + n, ']', n);
	deep[2 * n] = 0;
	CHECK(!parses(deep));
	deep[OB_JSON_MAX_DEPTH - 1] = 0; /* exactly MAX-1 opens, no closes: incomplete */
	CHECK(!parses(deep));
	free(deep);
}

static void test_messages(void)
{
	check_error("", "unexpected end of JSON input", 0);
	check_error("{\"model\": \"x\"", "unexpected end of JSON input", 13);
	check_error("{\"a\":1 \"b\":2}", "invalid character '\"' after object key:value pair", 7);
	check_error("[1 2]", "invalid character '2' after array element", 3);
	check_error("{x}", "invalid character 'x' looking for beginning of object key string", 1);
	check_error("{\"a\" 1}", "invalid character '1' after object key", 5);
	check_error("{} x", "invalid character 'x' after top-level value", 3);
	check_error("tru ", "invalid character ' ' in literal true (expecting 'e')", 3);
	check_error("\"a\nb\"", "invalid character '\\n' in string literal", 2);
	/* worded as Go's scanner words them, whichever check caught the error */
	check_error("{bad", "invalid character 'b' looking for beginning of object key string", 1);
	check_error("{\"a\":1,}", "invalid character '}' looking for beginning of object key string", 7);
	check_error("[1,]", "invalid character ']' looking for beginning of value", 3);
	check_error("01", "invalid character '1' after top-level value", 1);
	check_error("[-x]", "invalid character 'x' in numeric literal", 2);
	check_error("1.x", "invalid character 'x' after decimal point in numeric literal", 2);
	check_error("1ex", "invalid character 'x' in exponent of numeric literal", 2);
	check_error("\"\\q\"", "invalid character 'q' in string escape code", 2);
	check_error("\"\\u12x4\"", "invalid character 'x' in \\u hexadecimal character escape", 5);
	check_error("nulx", "invalid character 'x' in literal null (expecting 'l')", 3);
	check_error("[\x01]", "invalid character '\\x01' looking for beginning of value", 1);
	check_error("\xc3\xa9", "invalid character '\xc3\x83' looking for beginning of value", 0);
	check_error("{\"a\":1", "unexpected end of JSON input", 6);
}

static void test_tree(void)
{
	const char *s = "{\"model\":\"qwen3\",\"stream\":false,\"n\":-42,\"f\":0.5,\"Model\":\"B\",\"arr\":[1,\"two\",[3],{}],"
			"\"model\":\"last\",\"s\":\"caf\\u00e9 \\ud83d\\ude00 \\ud800 x\"}";
	struct ob_json_error err;
	struct ob_json_doc *d = ob_json_parse(s, strlen(s), &err);
	CHECKF(d != NULL, "%s at %zu", err.message, err.offset);
	if (!d)
		return;
	const struct ob_json *r = ob_json_root(d);
	CHECK_EQ_INT(r->type, OB_JSON_OBJECT);
	CHECK_EQ_INT(r->count, 8);
	CHECK(ob_json_str_eq(ob_json_get(r, "model"), "last")); /* later duplicate wins */
	CHECK(ob_json_str_eq(ob_json_get_fold(r, "MODEL"), "last"));
	CHECK(ob_json_get(r, "MODEL") == NULL);
	const struct ob_json *stream = ob_json_get(r, "stream");
	CHECK(stream && stream->type == OB_JSON_BOOL && !stream->boolean);
	int64_t n = 0;
	CHECK(ob_json_int(ob_json_get(r, "n"), &n) && n == -42);
	CHECK(!ob_json_int(ob_json_get(r, "f"), &n));
	CHECK(ob_json_get(r, "f")->number == 0.5);
	const struct ob_json *arr = ob_json_get(r, "arr");
	CHECK_EQ_INT(arr->count, 4);
	CHECK(ob_json_str_eq(ob_json_at(arr, 1), "two"));
	CHECK_EQ_INT(ob_json_at(arr, 2)->type, OB_JSON_ARRAY);
	CHECK_EQ_INT(ob_json_at(arr, 3)->type, OB_JSON_OBJECT);
	CHECK(ob_json_at(arr, 4) == NULL);
	int count = 0;
	OB_JSON_FOREACH(e, arr)
	count++;
	CHECK_EQ_INT(count, 4);
	count = 0;
	OB_JSON_FOREACH_MEMBER(k, v, r)
	{
		CHECK(k->type == OB_JSON_STRING);
		CHECK(v != NULL);
		count++;
	}
	CHECK_EQ_INT(count, 8);
	/* a lone surrogate becomes U+FFFD, a pair becomes one 4-byte character */
	CHECK(ob_json_str_eq(ob_json_get(r, "s"), "caf\xc3\xa9 \xf0\x9f\x98\x80 \xef\xbf\xbd x"));
	CHECK_STREQ(ob_json_type_name(ob_json_get(r, "arr")), "array");
	ob_json_free(d);

	/* invalid UTF-8 in a string is replaced, as Go's decoder does */
	d = ob_json_parse("\"a\xff" "b\"", 5, &err);
	CHECK(d && ob_json_str_eq(ob_json_root(d), "a\xef\xbf\xbd" "b"));
	ob_json_free(d);

	int64_t big;
	d = ob_json_parse("[9223372036854775807, 9223372036854775808, 1e3]", 47, &err);
	CHECK(d != NULL);
	if (d) {
		CHECK(ob_json_int(ob_json_at(ob_json_root(d), 0), &big) && big == INT64_MAX);
		CHECK(!ob_json_int(ob_json_at(ob_json_root(d), 1), &big));
		CHECK(!ob_json_int(ob_json_at(ob_json_root(d), 2), &big));
	}
	ob_json_free(d);
}

static void check_float(double v, int bits, const char *want)
{
	char b[48];
	ob_json_format_float(b, v, bits);
	CHECKF(strcmp(b, want) == 0, "%.17g (float%d): got %s, want %s", v, bits, b, want);
}

static void test_writer(void)
{
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	ob_jw_key(&w, "model");
	ob_jw_string(&w, "a<b>&\"\\\n\t\x01\x1f\xe2\x80\xa8\xff");
	ob_jw_key(&w, "n");
	ob_jw_int(&w, -3);
	ob_jw_key(&w, "list");
	ob_jw_arr(&w);
	ob_jw_bool(&w, true);
	ob_jw_null(&w);
	ob_jw_float64(&w, 0.1);
	ob_jw_arr_end(&w);
	ob_jw_obj_end(&w);
	CHECK_STREQ(ob_jw_str(&w), "{\"model\":\"a\\u003cb\\u003e\\u0026\\\"\\\\\\n\\t\\u0001\\u001f\\u2028\\ufffd\","
				   "\"n\":-3,\"list\":[true,null,0.1]}");
	ob_jw_free(&w);

	ob_jw_init(&w, 0, OB_JW_NO_HTML_ESCAPE);
	ob_jw_string(&w, "<&>");
	CHECK_STREQ(ob_jw_str(&w), "\"<&>\"");
	ob_jw_int(&w, 1); /* a second top-level value is a misuse */
	CHECK_EQ_INT(ob_jw_status(&w), OB_JW_INVALID);
	ob_jw_free(&w);

	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	ob_jw_int(&w, 1); /* value without key */
	CHECK_EQ_INT(ob_jw_status(&w), OB_JW_INVALID);
	ob_jw_free(&w);

	ob_jw_init(&w, 16, 0); /* ceiling */
	ob_jw_string(&w, "this is longer than sixteen bytes");
	CHECK_EQ_INT(ob_jw_status(&w), OB_JW_TOO_LARGE);
	CHECK(ob_jw_str(&w) == NULL);
	ob_jw_free(&w);

	ob_jw_init(&w, 0, 0);
	ob_jw_float64(&w, NAN);
	CHECK_EQ_INT(ob_jw_status(&w), OB_JW_INVALID);
	ob_jw_free(&w);

	/* re-encoding: document order, or sorted as Go marshals a map (last duplicate wins) */
	const char *s = "{ \"b\": [1, 2.50, {\"z\":1, \"a\":2}], \"a\": \"x\", \"b\": true }";
	struct ob_json_doc *d = ob_json_parse(s, strlen(s), NULL);
	CHECK(d != NULL);
	ob_jw_init(&w, 0, 0);
	ob_jw_value(&w, ob_json_root(d), false);
	CHECK_STREQ(ob_jw_str(&w), "{\"b\":[1,2.50,{\"z\":1,\"a\":2}],\"a\":\"x\",\"b\":true}");
	ob_jw_reset(&w);
	ob_jw_value(&w, ob_json_root(d), true);
	CHECK_STREQ(ob_jw_str(&w), "{\"a\":\"x\",\"b\":true}");
	size_t len = 0;
	char *taken = ob_jw_take(&w, &len);
	CHECK(taken && len == strlen("{\"a\":\"x\",\"b\":true}"));
	free(taken);
	ob_jw_free(&w);
	ob_json_free(d);

	/* Go's float formatting (strconv 'f'/-1, 'e' below 1e-6 and from 1e21, "e-07" trimmed to "e-7") */
	check_float(0, 64, "0");
	check_float(1, 64, "1");
	check_float(-2.5, 64, "-2.5");
	check_float(0.1, 64, "0.1");
	check_float(100, 64, "100");
	check_float(1e20, 64, "100000000000000000000");
	check_float(1e21, 64, "1e+21");
	check_float(1.5e300, 64, "1.5e+300");
	check_float(0.000001, 64, "0.000001");
	check_float(0.0000001, 64, "1e-7");
	check_float(1.2345e-10, 64, "1.2345e-10");
	check_float(123456789.125, 64, "123456789.125");
	check_float(0.7, 32, "0.7");
	check_float(0.1f, 32, "0.1");
	check_float(0.1f, 64, "0.10000000149011612");
	check_float(3.4028234663852886e38, 32, "3.4028235e+38");
	check_float(1.0 / 3.0, 64, "0.3333333333333333");
}

int main(void)
{
	test_grammar();
	test_messages();
	test_tree();
	test_writer();
	return check_done();
}
