/* tests/base/test_unicode.c — base/utf8 (Go's strict reading, llama.cpp's lenient one, both encoders) and
 * base/unicode (the one property table: classes, White_Space, Go's IsPrint at Unicode 15.0, widths). */
#include "config.h"

#include "base/unicode.h"
#include "base/utf8.h"
#include "tests/check.h"

static void test_decode(void)
{
	static const struct {
		const char *s;
		size_t n;
		uint32_t go;   /* ob_utf8_decode */
		size_t go_size;
		int32_t lax;   /* ob_utf8_decode_lax */
		size_t lax_size;
	} cases[] = {
		{"A", 1, 'A', 1, 'A', 1},
		{"\xc3\xa9", 2, 0xe9, 2, 0xe9, 2},
		{"\xe6\x97\xa5", 3, 0x65e5, 3, 0x65e5, 3},
		{"\xf0\x9f\x98\x80", 4, 0x1f600, 4, 0x1f600, 4},
		{"\xc0\x80", 2, OB_RUNE_ERROR, 1, 0, 2},             /* overlong: Go refuses, llama.cpp reads 0 */
		{"\xe0\x80\xaf", 3, OB_RUNE_ERROR, 1, '/', 3},        /* overlong '/' */
		{"\xed\xa0\x80", 3, OB_RUNE_ERROR, 1, 0xd800, 3},     /* surrogate */
		{"\xf4\x90\x80\x80", 4, OB_RUNE_ERROR, 1, -1, 1},     /* past U+10FFFF */
		{"\xf8\x88\x80\x80\x80", 5, OB_RUNE_ERROR, 1, -1, 1}, /* 5-byte pattern */
		{"\x80", 1, OB_RUNE_ERROR, 1, -1, 1},                 /* continuation byte */
		{"\xe6\x97", 2, OB_RUNE_ERROR, 1, -1, 1},             /* truncated */
		{"\xe6" "A", 2, OB_RUNE_ERROR, 1, -1, 1},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		const unsigned char *s = (const unsigned char *)cases[i].s;
		size_t size;
		uint32_t r = ob_utf8_decode(s, cases[i].n, &size);
		CHECKF(r == cases[i].go && size == cases[i].go_size, "case %zu: Go decode %x/%zu", i, r, size);
		int32_t l = ob_utf8_decode_lax(s, cases[i].n, &size);
		CHECKF(l == cases[i].lax && size == cases[i].lax_size, "case %zu: lax decode %d/%zu", i, l, size);
		/* the raw encoder is the lax decoder's inverse, up to overlong forms */
		if (l >= 0 && size == cases[i].n && !(i == 4 || i == 5)) {
			char o[OB_UTF8_MAX];
			CHECKF(ob_utf8_encode_lax(o, (uint32_t)l) == size && memcmp(o, s, size) == 0,
			       "case %zu: lax encode", i);
		}
	}
	size_t len;
	CHECK(ob_utf8_check((const unsigned char *)"\xe6\x97", 2, &len) == OB_UTF8_INCOMPLETE);
	CHECK(ob_utf8_check((const unsigned char *)"\xed\xa0", 2, &len) == OB_UTF8_INVALID);
	CHECK(ob_utf8_check((const unsigned char *)"\xf0\x9f\x98\x80", 4, &len) == OB_UTF8_VALID && len == 4);
	CHECK_EQ_INT(ob_utf8_valid_prefix("ab\xc3\xa9\xe6\x97", 6), 4);
	CHECK_EQ_INT(ob_utf8_valid_prefix("\xc0\x80", 2), 0);
	CHECK_EQ_INT(ob_utf8_rune_count("a\xc3\xa9\xff\xe6\x97\xa5", 7), 4);
	CHECK_EQ_INT(ob_utf8_valid_len((const unsigned char *)"\xc3\xa9", 2), 2);
	CHECK_EQ_INT(ob_utf8_valid_len((const unsigned char *)"\xe0\x80\xaf", 3), 0);
	CHECK_EQ_INT(ob_utf8_valid_len((const unsigned char *)"\xed\x9f\xbf", 3), 3);
	/* Go's DecodeLastRune */
	size_t size;
	CHECK(ob_utf8_decode_last((const unsigned char *)"a\xe6\x97\xa5", 4, &size) == 0x65e5 && size == 3);
	CHECK(ob_utf8_decode_last((const unsigned char *)"a\xe6\x97", 3, &size) == OB_RUNE_ERROR && size == 1);
	CHECK(ob_utf8_decode_last((const unsigned char *)"\x97\x97\x97\x97\x97", 5, &size) == OB_RUNE_ERROR &&
	      size == 1);
	CHECK(ob_utf8_decode_last((const unsigned char *)"", 0, &size) == OB_RUNE_ERROR && size == 0);
	CHECK(ob_utf8_decode_last((const unsigned char *)"ab", 2, &size) == 'b' && size == 1);
	CHECK_EQ_INT(ob_utf8_lead_len(0x41), 1);
	CHECK_EQ_INT(ob_utf8_lead_len(0x80), 1);
	CHECK_EQ_INT(ob_utf8_lead_len(0xc0), 2);
	CHECK_EQ_INT(ob_utf8_lead_len(0xef), 3);
	CHECK_EQ_INT(ob_utf8_lead_len(0xff), 4);
	CHECK_EQ_INT(ob_utf8_valid_len((const unsigned char *)"\xc3", 1), 0);
}

static void test_encode(void)
{
	char o[OB_UTF8_MAX];
	CHECK(ob_utf8_encode(o, 0x7f) == 1 && o[0] == 0x7f);
	CHECK(ob_utf8_encode(o, 0x7ff) == 2 && memcmp(o, "\xdf\xbf", 2) == 0);
	CHECK(ob_utf8_encode(o, 0xffff) == 3 && memcmp(o, "\xef\xbf\xbf", 3) == 0);
	CHECK(ob_utf8_encode(o, 0x10ffff) == 4 && memcmp(o, "\xf4\x8f\xbf\xbf", 4) == 0);
	CHECK(ob_utf8_encode(o, 0xd800) == 3 && memcmp(o, "\xef\xbf\xbd", 3) == 0);   /* Go: surrogate -> U+FFFD */
	CHECK(ob_utf8_encode(o, 0x110000) == 3 && memcmp(o, "\xef\xbf\xbd", 3) == 0);
	CHECK(ob_utf8_encode_lax(o, 0xdfff) == 3 && memcmp(o, "\xed\xbf\xbf", 3) == 0); /* llama.cpp keeps it */
	/* every scalar value round-trips through Go's pair */
	int bad = 0;
	for (uint32_t r = 0; r < 0x110000; r++) {
		if (r >= 0xd800 && r <= 0xdfff)
			continue;
		size_t n = ob_utf8_encode(o, r), size;
		if (ob_utf8_decode((const unsigned char *)o, n, &size) != r || size != n)
			bad++;
	}
	CHECK_EQ_INT(bad, 0);
}

static void test_properties(void)
{
	CHECK_EQ_INT(ob_rune_class('A'), OB_UCLASS_LETTER);
	CHECK_EQ_INT(ob_rune_class(0x4e00), OB_UCLASS_LETTER);
	CHECK_EQ_INT(ob_rune_class('7'), OB_UCLASS_NUMBER);
	CHECK_EQ_INT(ob_rune_class(0x00b2), OB_UCLASS_NUMBER);   /* superscript two: No */
	CHECK_EQ_INT(ob_rune_class(','), OB_UCLASS_PUNCT);
	CHECK_EQ_INT(ob_rune_class(0x20ac), OB_UCLASS_SYMBOL);   /* euro sign */
	CHECK_EQ_INT(ob_rune_class(0x0301), OB_UCLASS_MARK);
	CHECK_EQ_INT(ob_rune_class(0x3000), OB_UCLASS_SEPARATOR);
	CHECK_EQ_INT(ob_rune_class(0xe000), OB_UCLASS_OTHER);    /* private use */
	CHECK_EQ_INT(ob_rune_class(0x110000), OB_UCLASS_OTHER);
	/* the table's version is llama.cpp's 15.1: CJK Extension I is letters, Unicode 16's additions are not */
	CHECK_EQ_INT(ob_rune_class(0x2ebf0), OB_UCLASS_LETTER);
	CHECK_EQ_INT(ob_rune_class(0x1c89), OB_UCLASS_OTHER);
	CHECK(ob_uprops('\t') & OB_UPROP_WHITE_SPACE);
	CHECK(ob_uprops(0x85) & OB_UPROP_WHITE_SPACE);
	CHECK(ob_uprops(0x3000) & OB_UPROP_WHITE_SPACE);
	CHECK(!(ob_uprops(0x200b) & OB_UPROP_WHITE_SPACE)); /* zero width space is not White_Space */

	/* Go's IsPrint (Go's Unicode 15.0) */
	CHECK(ob_rune_is_print(' ') && ob_rune_is_print('~') && ob_rune_is_print(0xe9) && ob_rune_is_print(0x1f600));
	CHECK(!ob_rune_is_print(0x7f) && !ob_rune_is_print(0xa0) && !ob_rune_is_print(0xad));
	CHECK(!ob_rune_is_print(0x3000));
	CHECK(!ob_rune_is_print(0x200b) && !ob_rune_is_print(0xe000) && !ob_rune_is_print(0xfffe));
	CHECK(!ob_rune_is_print(0x2ebf0) && !ob_rune_is_print(0x31ef) && !ob_rune_is_print(0x2ffc)); /* added in 15.1 */
	CHECK(ob_rune_is_print(0x2ebe0) && ob_rune_is_print(0x31e3)); /* neighbours from 15.0 and earlier */

	/* Go's unicode.IsLetter / IsDigit / IsSpace */
	CHECK(ob_rune_is_letter('x') && ob_rune_is_letter(0x4e00) && ob_rune_is_letter(0x01c5));
	CHECK(!ob_rune_is_letter('1'));
	CHECK(!ob_rune_is_letter(0x2ebf0)); /* 15.1: not a letter to Go yet */
	CHECK(ob_rune_is_digit('7') && ob_rune_is_digit(0x0966));
	CHECK(!ob_rune_is_digit(0x00b2) && !ob_rune_is_digit(0x2160)); /* superscript two, Roman numeral one */
	CHECK(ob_rune_is_space(' ') && ob_rune_is_space(0x85) && ob_rune_is_space(0x2028) && !ob_rune_is_space(0x200b));

	/* terminal widths (go-runewidth outside East Asian locales) */
	CHECK_EQ_INT(ob_rune_width('a'), 1);
	CHECK_EQ_INT(ob_rune_width(0), 0);
	CHECK_EQ_INT(ob_rune_width(0x0301), 0);
	CHECK_EQ_INT(ob_rune_width(0x200d), 0);
	CHECK_EQ_INT(ob_rune_width(0xfe0f), 0);
	CHECK_EQ_INT(ob_rune_width(0x4e2d), 2);
	CHECK_EQ_INT(ob_rune_width(0xff21), 2);  /* fullwidth A */
	CHECK_EQ_INT(ob_rune_width(0x1f600), 2);
	CHECK_EQ_INT(ob_rune_width(0xac00), 2);  /* Hangul syllable */
	CHECK_EQ_INT(ob_rune_width(0x00e9), 1);
	CHECK_EQ_INT(ob_utf8_width("abc", 3), 3);
	CHECK_EQ_INT(ob_utf8_width("\xe4\xb8\xad\xe6\x96\x87", 6), 4);
	CHECK_EQ_INT(ob_utf8_width("e\xcc\x81", 3), 1); /* e + combining acute */
	CHECK_EQ_INT(ob_utf8_width("a\xff" "b", 3), 3);  /* an invalid byte is U+FFFD, one cell */
}

int main(void)
{
	test_decode();
	test_encode();
	test_properties();
	return check_done();
}
