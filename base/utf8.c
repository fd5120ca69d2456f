/* base/utf8.c — the UTF-8 codec (utf8.h): Go's strict reading and encoding, llama.cpp's lenient reading and
 * its inverse. One table of lead-byte rules serves every strict function; nothing here allocates.
 */
#include "config.h"

#include "base/utf8.h"

/* Go's first-byte rules: how many bytes follow a lead byte and the allowed range of the second byte (the
 * ranges exclude overlongs, surrogates and values past U+10FFFF). need == 0: not a lead byte. */
static void lead(unsigned c, unsigned *need, unsigned *lo, unsigned *hi)
{
	*lo = 0x80;
	*hi = 0xBF;
	if (c >= 0xC2 && c <= 0xDF) {
		*need = 1;
	} else if (c >= 0xE0 && c <= 0xEF) {
		*need = 2;
		if (c == 0xE0)
			*lo = 0xA0;
		else if (c == 0xED)
			*hi = 0x9F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		*need = 3;
		if (c == 0xF0)
			*lo = 0x90;
		else if (c == 0xF4)
			*hi = 0x8F;
	} else {
		*need = 0;
	}
}

enum ob_utf8_status ob_utf8_check(const unsigned char *s, size_t n, size_t *len)
{
	if (s[0] < 0x80) {
		*len = 1;
		return OB_UTF8_VALID;
	}
	unsigned need, lo, hi;
	lead(s[0], &need, &lo, &hi);
	if (!need)
		return OB_UTF8_INVALID;
	for (unsigned i = 1; i <= need; i++) {
		if (i >= n)
			return OB_UTF8_INCOMPLETE;
		unsigned b = s[i];
		if (i == 1 ? (b < lo || b > hi) : (b & 0xC0) != 0x80)
			return OB_UTF8_INVALID;
	}
	*len = need + 1;
	return OB_UTF8_VALID;
}

uint32_t ob_utf8_decode(const unsigned char *s, size_t n, size_t *size)
{
	size_t len;
	*size = 1;
	if (s[0] < 0x80)
		return s[0];
	if (ob_utf8_check(s, n, &len) != OB_UTF8_VALID)
		return OB_RUNE_ERROR;
	static const unsigned char mask[5] = {0, 0, 0x1F, 0x0F, 0x07};
	uint32_t r = s[0] & mask[len];
	for (size_t i = 1; i < len; i++)
		r = (r << 6) | (s[i] & 0x3F);
	*size = len;
	return r;
}

uint32_t ob_utf8_decode_last(const unsigned char *s, size_t n, size_t *size)
{
	if (n == 0) {
		*size = 0;
		return OB_RUNE_ERROR;
	}
	*size = 1;
	if (s[n - 1] < 0x80)
		return s[n - 1];
	/* back to the nearest lead byte within OB_UTF8_MAX bytes of the end */
	size_t start = n - 1, lim = n > OB_UTF8_MAX ? n - OB_UTF8_MAX : 0;
	while (start > lim && (s[start] & 0xC0) == 0x80)
		start--;
	size_t len;
	uint32_t r = ob_utf8_decode(s + start, n - start, &len);
	if (start + len != n)
		return OB_RUNE_ERROR;
	*size = len;
	return r;
}

int32_t ob_utf8_decode_lax(const unsigned char *s, size_t n, size_t *size)
{
	unsigned b = s[0];
	*size = 1;
	if (!(b & 0x80))
		return (int32_t)b;
	if (!(b & 0x40) || (b & 0xF8) == 0xF8)
		return -1;
	size_t len = !(b & 0x20) ? 2 : !(b & 0x10) ? 3 : 4;
	if (n < len)
		return -1;
	int32_t cp = (int32_t)(b & (0x7Fu >> len));
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return -1;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	if (cp > 0x10FFFF)
		return -1;
	*size = len;
	return cp;
}

size_t ob_utf8_valid_prefix(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, l;
	while (i < n) {
		if (u[i] < 0x80) {
			i++;
			continue;
		}
		if (ob_utf8_check(u + i, n - i, &l) != OB_UTF8_VALID)
			break;
		i += l;
	}
	return i;
}

size_t ob_utf8_rune_count(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t count = 0, i = 0, l;
	while (i < n) {
		i += u[i] < 0x80 ? 1 : ob_utf8_check(u + i, n - i, &l) == OB_UTF8_VALID ? l : 1;
		count++;
	}
	return count;
}

size_t ob_utf8_encode_lax(char *out, uint32_t r)
{
	unsigned char *o = (unsigned char *)out;
	if (r > 0x10FFFF)
		r = OB_RUNE_ERROR;
	if (r < 0x80) {
		o[0] = (unsigned char)r;
		return 1;
	}
	if (r < 0x800) {
		o[0] = (unsigned char)(0xC0 | (r >> 6));
		o[1] = (unsigned char)(0x80 | (r & 0x3F));
		return 2;
	}
	if (r < 0x10000) {
		o[0] = (unsigned char)(0xE0 | (r >> 12));
		o[1] = (unsigned char)(0x80 | ((r >> 6) & 0x3F));
		o[2] = (unsigned char)(0x80 | (r & 0x3F));
		return 3;
	}
	o[0] = (unsigned char)(0xF0 | (r >> 18));
	o[1] = (unsigned char)(0x80 | ((r >> 12) & 0x3F));
	o[2] = (unsigned char)(0x80 | ((r >> 6) & 0x3F));
	o[3] = (unsigned char)(0x80 | (r & 0x3F));
	return 4;
}

size_t ob_utf8_encode(char *out, uint32_t r)
{
	if (r >= 0xD800 && r <= 0xDFFF)
		r = OB_RUNE_ERROR;
	return ob_utf8_encode_lax(out, r);
}
