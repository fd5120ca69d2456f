/* gguf/json.h — a small private JSON layer on jsmn for the safetensors header and the Hugging Face config
 * files: parse into a token array (strict mode, size-capped), walk objects and arrays, read strings
 * (unescaped) and integers with range checks. Not part of the public API.
 */
#ifndef ORUN_GGUF_JSON_H
#define ORUN_GGUF_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GG_JSON_MAX_BYTES (256u << 20) /* largest JSON document accepted (jsmn offsets are int) */
#define GG_JSON_MAX_TOKENS (64u << 20) /* most tokens in one document */

enum gg_jtype { GG_J_UNDEF = 0, GG_J_OBJECT = 1, GG_J_ARRAY = 2, GG_J_STRING = 3, GG_J_PRIMITIVE = 4 };

struct gg_jtok {
	int type;  /* enum gg_jtype */
	int start; /* byte offsets into the document; strings exclude the quotes */
	int end;
	int size;  /* object: number of keys; array: number of elements */
};

struct gg_json {
	const char *s;
	size_t n;
	struct gg_jtok *t;
	int nt;
};

/* Parse (s, n). Returns 0, or -1 with *where (byte offset, best effort) and a reason in why. */
int gg_json_parse(struct gg_json *j, const char *s, size_t n, size_t *where, const char **why);
void gg_json_free(struct gg_json *j);

/* Index of the token after the subtree starting at i. */
int gg_json_skip(const struct gg_json *j, int i);
/* Value token of key in the object at obj, or -1. Keys compare after unescaping. */
int gg_json_get(const struct gg_json *j, int obj, const char *key);
/* Token of element k of the array at arr, or -1. O(k) */
int gg_json_at(const struct gg_json *j, int arr, int k);
/* True when the token is a string equal to z (after unescaping). */
bool gg_json_streq(const struct gg_json *j, int i, const char *z);
/* Unescape the string token i into a malloc'ed NUL-terminated buffer (*len bytes, may contain NUL from
 * \u0000). NULL when i is not a string, on a bad escape or out of memory. */
char *gg_json_str(const struct gg_json *j, int i, size_t *len);
/* An integer primitive in [lo, hi]; returns 0 or -1. */
int gg_json_int(const struct gg_json *j, int i, int64_t lo, int64_t hi, int64_t *out);
/* A number primitive as double; returns 0 or -1. */
int gg_json_num(const struct gg_json *j, int i, double *out);
/* true / false primitive; returns 0 or -1. */
int gg_json_bool(const struct gg_json *j, int i, bool *out);
bool gg_json_is_null(const struct gg_json *j, int i);

#endif
