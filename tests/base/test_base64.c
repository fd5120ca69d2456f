/* tests/base/test_base64.c — base/base64: the RFC 4648 §10 vectors both ways, every byte value, and the
 * corrupt inputs with the offsets Go's base64.StdEncoding reports (its CorruptInputError), newlines included. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "tests/check.h"

static const struct {
	const char *raw, *enc;
} rfc4648[] = {
	{"", ""},         {"f", "Zg=="},        {"fo", "Zm8="},         {"foo", "Zm9v"},
	{"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"},
};

/* decodes s and returns the result (malloc'd, NUL-terminated) or NULL with *bad_at */
static char *decode(const char *s, size_t *len, size_t *bad_at)
{
	size_t n = strlen(s);
	unsigned char *out = malloc(ob_base64_decoded_max(n) + 1);
	CHECK(out != NULL);
	if (!ob_base64_decode(s, n, out, len, bad_at)) {
		free(out);
		return NULL;
	}
	CHECK(*len <= ob_base64_decoded_max(n));
	out[*len] = 0;
	return (char *)out;
}

static void test_vectors(void)
{
	for (size_t i = 0; i < sizeof rfc4648 / sizeof rfc4648[0]; i++) {
		size_t n = 0, bad = 0;
		char *e = ob_base64_encode(rfc4648[i].raw, strlen(rfc4648[i].raw), &n);
		CHECK(e != NULL);
		CHECK_STREQ(e, rfc4648[i].enc);
		CHECK_EQ_INT(n, strlen(rfc4648[i].enc));
		free(e);
		char *d = decode(rfc4648[i].enc, &n, &bad);
		CHECK(d != NULL);
		CHECK_STREQ(d, rfc4648[i].raw);
		free(d);
	}
	/* every byte value survives the round trip */
	unsigned char all[256];
	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	size_t n = 0, bad = 0;
	char *e = ob_base64_encode(all, sizeof all, &n);
	CHECK(e != NULL && n == 344 && strncmp(e, "AAECAwQF", 8) == 0 && strcmp(e + 336, "/P3+/w==") == 0);
	char *d = decode(e, &n, &bad);
	CHECK(d != NULL && n == 256 && memcmp(d, all, 256) == 0);
	free(d);
	free(e);
}

static void test_go_reading(void)
{
	/* accepted: newlines anywhere, unused low bits of a padded quantum */
	static const struct {
		const char *in, *out;
	} ok[] = {
		{"Zm9v\nYmFy", "foobar"}, {"Zm\r\n9v", "foo"}, {"Zg=\n=", "f"}, {"Zg==\n", "f"},
		{"\n", ""},                {"aGk=", "hi"},      {"aGl=", "hi"},  {"aGVsbG8=", "hello"},
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		size_t n = 0, bad = 0;
		char *d = decode(ok[i].in, &n, &bad);
		CHECKF(d != NULL, "%s", ok[i].in);
		if (d)
			CHECK_STREQ(d, ok[i].out);
		free(d);
	}
	char *e = ob_base64_encode("hello", 5, NULL);
	CHECK_STREQ(e, "aGVsbG8=");
	free(e);
	/* refused, at Go's offsets */
	static const struct {
		const char *in;
		size_t at;
	} bad[] = {
		{"a", 0},          /* a final quantum without padding: where it started */
		{"aGVsbG8", 4},    {"Zm9vYg", 4},
		{"Zm\n", 1},       /* Go counts back from the end by the characters read: the newline counts */
		{"a=b", 1},        /* padding too early */
		{"=", 0},          {"aG!s", 2}, /* not in the alphabet */
		{"Zm9v-_", 4},     /* the URL alphabet is not the standard one */
		{"aG=", 3},        /* "==" due, input ends: the length */
		{"Zg=x", 2},       /* "==" due, another byte: the offset before it */
		{"Zg=\nx", 3},
		{"aGVsbA=", 7},    /* a second quantum's "==" cut short */
		{"aGVsbG8==", 8},  /* data after the padding */
		{"Zg==Zg==", 4},   {"Zm9=x", 4}, {"Zg==\nx", 5},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		size_t n = 0, at = 99;
		char *d = decode(bad[i].in, &n, &at);
		CHECKF(d == NULL && at == bad[i].at, "%s: got %zu, want %zu", bad[i].in, at, bad[i].at);
		free(d);
	}
	char msg[64];
	snprintf(msg, sizeof msg, OB_BASE64_CORRUPT_FMT, (size_t)4);
	CHECK_STREQ(msg, "illegal base64 data at input byte 4");
}

int main(void)
{
	test_vectors();
	test_go_reading();
	return check_done();
}
