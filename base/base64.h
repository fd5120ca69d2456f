/* base/base64.h — standard base64 (RFC 4648 §4: the "+/" alphabet, padded), read as Go's
 * encoding/base64.StdEncoding reads it: what Ollama does with []byte JSON fields (message images) and what
 * clients of the embedding endpoints decode. Pure functions; the caller owns every buffer.
 */
#ifndef ORUN_BASE_BASE64_H
#define ORUN_BASE_BASE64_H

#include <stdbool.h>
#include <stddef.h>

/* Go's CorruptInputError text, for the offset ob_base64_decode reports. */
#define OB_BASE64_CORRUPT_FMT "illegal base64 data at input byte %zu"

/* The most bytes ob_base64_decode writes for n input bytes. */
static inline size_t ob_base64_decoded_max(size_t n)
{
	return n / 4 * 3;
}

/* Encodes data[0..n) (padded, no line breaks) into a malloc'd NUL-terminated string of 4 * ceil(n / 3)
 * characters; *out_len (may be NULL) gets that length. NULL when out of memory or when the length would not
 * fit a size_t. */
char *ob_base64_encode(const void *data, size_t n, size_t *out_len) __attribute__((warn_unused_result));

/* Decodes s[0..n) as Go's StdEncoding.Decode does into out (room for ob_base64_decoded_max(n) bytes): quanta
 * of four characters, '=' padding required on the last one, '\r' and '\n' ignored anywhere, the unused low
 * bits of a padded quantum ignored (not strict). Returns true with *out_len; false for corrupt input with
 * *bad_at set to the byte offset Go reports (OB_BASE64_CORRUPT_FMT). out may hold partial output then. */
bool ob_base64_decode(const char *s, size_t n, unsigned char *out, size_t *out_len, size_t *bad_at)
	__attribute__((warn_unused_result));

#endif
