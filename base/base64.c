/* base/base64.c — standard base64 (base64.h). Decoding follows Go's quantum-at-a-time reading, so that
 * corrupt input fails at the byte offset Go names; it does not check that padded quanta end in zero bits
 * (Go's StdEncoding is not Strict).
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "base/base64.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *ob_base64_encode(const void *data, size_t n, size_t *out_len)
{
	const unsigned char *p = data;
	if (n / 3 >= (SIZE_MAX - 1) / 4 - 1)
		return NULL;
	size_t len = (n + 2) / 3 * 4;
	char *out = malloc(len + 1);
	if (!out)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t x = (uint32_t)p[i] << 16;
		if (i + 1 < n)
			x |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			x |= p[i + 2];
		out[k++] = alphabet[x >> 18];
		out[k++] = alphabet[(x >> 12) & 63];
		out[k++] = i + 1 < n ? alphabet[(x >> 6) & 63] : '=';
		out[k++] = i + 2 < n ? alphabet[x & 63] : '=';
	}
	out[k] = 0;
	if (out_len)
		*out_len = k;
	return out;
}

static int value_of(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

static size_t skip_newlines(const char *s, size_t n, size_t i)
{
	while (i < n && (s[i] == '\r' || s[i] == '\n'))
		i++;
	return i;
}

/* Each `return false` names the offset Go's decodeQuantum gives for that defect. */
bool ob_base64_decode(const char *s, size_t n, unsigned char *out, size_t *out_len, size_t *bad_at)
{
	size_t k = 0, si = 0;
	for (;;) {
		uint32_t q[4] = {0, 0, 0, 0};
		size_t got = 4; /* characters of data in this quantum */
		for (size_t j = 0; j < 4; j++) {
			si = skip_newlines(s, n, si);
			if (si == n) {
				if (j == 0) {
					*out_len = k;
					return true;
				}
				*bad_at = si - j; /* a final quantum without its padding */
				return false;
			}
			unsigned char c = (unsigned char)s[si++];
			int v = value_of(c);
			if (v >= 0) {
				q[j] = (uint32_t)v;
				continue;
			}
			if (c != '=' || j < 2) {
				*bad_at = si - 1; /* not in the alphabet, or padding too early */
				return false;
			}
			if (j == 2) { /* "==" is due: the second '=' */
				si = skip_newlines(s, n, si);
				if (si == n || s[si] != '=') {
					*bad_at = si == n ? n : si - 1;
					return false;
				}
				si++;
			}
			si = skip_newlines(s, n, si);
			if (si < n) {
				*bad_at = si; /* data after the padding */
				return false;
			}
			got = j;
			break;
		}
		uint32_t x = q[0] << 18 | q[1] << 12 | q[2] << 6 | q[3];
		out[k++] = (unsigned char)(x >> 16);
		if (got >= 3)
			out[k++] = (unsigned char)(x >> 8);
		if (got == 4)
			out[k++] = (unsigned char)x;
		if (got < 4) {
			*out_len = k;
			return true;
		}
	}
}
