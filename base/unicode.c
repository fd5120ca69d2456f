/* base/unicode.c — look-ups in the generated property table (base/unicode_data.c) and the Go and terminal
 * rules derived from it (unicode.h). The table is read-only; nothing here allocates.
 */
#include "config.h"

#include "base/unicode.h"

extern const uint32_t ob_uprop_ranges[];
extern const size_t ob_uprop_n_ranges;
extern const uint16_t ob_uprop_index[];

#define INDEX_SHIFT 8 /* base/unicode_gen.py: blocks of 256 code points */

unsigned ob_uprops(uint32_t r)
{
	if (r >= 0x110000)
		return OB_UCLASS_OTHER;
	/* the last range starting at or before r: between the ranges holding r's block's first code point and
	 * the next block's (most blocks hold one or two ranges) */
	uint32_t b = r >> INDEX_SHIFT;
	size_t lo = ob_uprop_index[b];
	size_t hi = b + 1 < (0x110000 >> INDEX_SHIFT) ? (size_t)ob_uprop_index[b + 1] + 1 : ob_uprop_n_ranges;
	uint32_t key = r << 8 | 0xFF;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (ob_uprop_ranges[mid] <= key)
			lo = mid;
		else
			hi = mid;
	}
	return ob_uprop_ranges[lo] & 0xFF;
}

bool ob_rune_is_print(uint32_t r)
{
	if (r == 0x20)
		return true;
	unsigned p = ob_uprops(r);
	unsigned c = p & OB_UCLASS_MASK;
	return c != OB_UCLASS_OTHER && c != OB_UCLASS_SEPARATOR && !(p & OB_UPROP_NEW_IN_15_1);
}

bool ob_rune_is_letter(uint32_t r)
{
	unsigned p = ob_uprops(r);
	return (p & OB_UCLASS_MASK) == OB_UCLASS_LETTER && !(p & OB_UPROP_NEW_IN_15_1);
}

bool ob_rune_is_digit(uint32_t r)
{
	return ob_uprops(r) & OB_UPROP_DIGIT;
}

bool ob_rune_is_space(uint32_t r)
{
	return ob_uprops(r) & OB_UPROP_WHITE_SPACE;
}

int ob_rune_width(uint32_t r)
{
	return (int)(ob_uprops(r) >> OB_UPROP_WIDTH_SHIFT) & 3;
}

size_t ob_utf8_width(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t w = 0, i = 0;
	while (i < n) {
		if (u[i] >= 0x20 && u[i] < 0x7F) { /* printable ASCII: one cell */
			w++;
			i++;
			continue;
		}
		size_t size;
		uint32_t r = ob_utf8_decode(u + i, n - i, &size);
		i += size;
		w += (size_t)ob_rune_width(r);
	}
	return w;
}
