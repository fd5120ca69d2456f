/* base/unicode-gen.c — generates the printable-range table of base/unicode.c from ICU.
 *
 * Not part of the build (ICU is not a dependency of orun). Go's strconv.IsPrint is true for general
 * categories L, M, N, P, S and for U+0020; this prints those code points as inclusive ranges.
 *     cc base/unicode-gen.c $(pkg-config --cflags --libs icu-uc) -o gen && ./gen
 */
#include <stdio.h>
#include <unicode/uchar.h>
#include <unicode/uversion.h>

static int printable(UChar32 c)
{
	if (c == 0x20)
		return 1;
	switch (u_charType(c)) {
	case U_UPPERCASE_LETTER: case U_LOWERCASE_LETTER: case U_TITLECASE_LETTER: case U_MODIFIER_LETTER:
	case U_OTHER_LETTER: case U_NON_SPACING_MARK: case U_ENCLOSING_MARK: case U_COMBINING_SPACING_MARK:
	case U_DECIMAL_DIGIT_NUMBER: case U_LETTER_NUMBER: case U_OTHER_NUMBER: case U_CONNECTOR_PUNCTUATION:
	case U_DASH_PUNCTUATION: case U_START_PUNCTUATION: case U_END_PUNCTUATION: case U_INITIAL_PUNCTUATION:
	case U_FINAL_PUNCTUATION: case U_OTHER_PUNCTUATION: case U_MATH_SYMBOL: case U_CURRENCY_SYMBOL:
	case U_MODIFIER_SYMBOL: case U_OTHER_SYMBOL:
		return 1;
	}
	return 0;
}

int main(void)
{
	UVersionInfo v;
	char vs[32];
	u_getUnicodeVersion(v);
	u_versionToString(v, vs);
	printf("/* Unicode %s */\n", vs);
	UChar32 start = -1;
	for (UChar32 c = 0; c <= 0x110000; c++) {
		int p = c <= 0x10FFFF && printable(c);
		if (p && start < 0)
			start = c;
		if (!p && start >= 0) {
			printf("\t{0x%05X, 0x%05X},\n", start, c - 1);
			start = -1;
		}
	}
	return 0;
}
