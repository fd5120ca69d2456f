/* base/utf8.h — orun's one UTF-8 codec.
 *
 * Two readings of input, on purpose: Go's (ob_utf8_decode, ob_utf8_check: overlongs, surrogates and values
 * past U+10FFFF are invalid, and an invalid byte reads as U+FFFD consuming one byte — what Ollama does with
 * text and what clients may receive), and llama.cpp's lenient one (ob_utf8_decode_lax: only the bit
 * patterns are checked — what the tokenizer must reproduce). Encoding: Go's utf8.EncodeRune, and a raw
 * encoder that is the inverse of the lenient decoder. Pure functions; no allocation.
 */
#ifndef ORUN_BASE_UTF8_H
#define ORUN_BASE_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OB_RUNE_ERROR 0xFFFDu
#define OB_UTF8_MAX 4 /* bytes in one encoded rune */

/* Go's utf8.DecodeRune: decodes one rune from s[0..n) (n >= 1) and stores its byte count in *size; invalid
 * or truncated input gives OB_RUNE_ERROR with *size 1. */
uint32_t ob_utf8_decode(const unsigned char *s, size_t n, size_t *size);

/* Go's utf8.DecodeLastRune: the last rune of s[0..n) and its byte count in *size (0 for empty input); an
 * invalid or truncated ending gives OB_RUNE_ERROR with *size 1. */
uint32_t ob_utf8_decode_last(const unsigned char *s, size_t n, size_t *size);

/* llama.cpp's unicode_len_utf8: the sequence length a lead byte announces by its high bits alone (1 for ASCII,
 * continuation and 0xF8+ bytes read as 1..4 as llama.cpp reads them: < 0xC0 -> 1, < 0xE0 -> 2, < 0xF0 -> 3,
 * else 4). */
static inline size_t ob_utf8_lead_len(unsigned char b)
{
	return b < 0xC0 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
}

/* llama.cpp's unicode_cpt_from_utf8: the code point of the 1-4 byte pattern at s[0..n) (n >= 1) with *size
 * bytes, without checking overlongs or surrogates; -1 with *size 1 for a continuation or 0xF8+ lead byte, a
 * truncated sequence, or a value past U+10FFFF (which llama.cpp would reject later). */
int32_t ob_utf8_decode_lax(const unsigned char *s, size_t n, size_t *size);

enum ob_utf8_status {
	OB_UTF8_VALID,      /* a complete valid sequence of *len bytes */
	OB_UTF8_INCOMPLETE, /* the n bytes are a proper prefix of a valid sequence */
	OB_UTF8_INVALID,    /* no valid sequence starts here */
};

/* Go-strict check of the sequence at s[0..n) (n >= 1); *len is set for OB_UTF8_VALID. */
enum ob_utf8_status ob_utf8_check(const unsigned char *s, size_t n, size_t *len);

/* Length of the valid sequence at s[0..n) (n >= 1), or 0 when it is invalid or truncated. Inline for the
 * scanners: ASCII and the common 2- and 3-byte forms are decided here, the rest by ob_utf8_check. */
static inline size_t ob_utf8_valid_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF && n >= 2 && (s[1] & 0xC0) == 0x80)
		return 2;
	if (c >= 0xE1 && c <= 0xEC && n >= 3 && (s[1] & 0xC0) == 0x80 && (s[2] & 0xC0) == 0x80)
		return 3;
	size_t len;
	return ob_utf8_check(s, n, &len) == OB_UTF8_VALID ? len : 0;
}

/* Length of the longest prefix of s[0..n) that is valid UTF-8 (Go's utf8.Valid on each prefix). */
size_t ob_utf8_valid_prefix(const char *s, size_t n);

/* Go's utf8.RuneCount: runes in s[0..n), each invalid byte counting as one. */
size_t ob_utf8_rune_count(const char *s, size_t n);

/* Go's utf8.EncodeRune: writes r into out (OB_UTF8_MAX bytes of room), returns the byte count; surrogates and
 * values past U+10FFFF are written as U+FFFD. */
size_t ob_utf8_encode(char *out, uint32_t r);

/* The inverse of ob_utf8_decode_lax: the 1-4 byte pattern of any r <= U+10FFFF, surrogates included (as
 * llama.cpp's unicode_cpt_to_utf8). */
size_t ob_utf8_encode_lax(char *out, uint32_t r);

#endif
