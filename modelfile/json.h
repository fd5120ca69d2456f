/* modelfile/json.h — JSON in and out, with Go's encoding/json rules where clients can see a difference.
 *
 * Parsing: jsmn tokenizes; orun validates the grammar jsmn leaves open (separators, keys, number and
 * literal syntax, control characters, trailing data) so that anything Go's decoder rejects is rejected
 * here too, then builds an immutable tree with unescaped strings. Writing: a growable buffer with a
 * ceiling, compact output, Go's string escaping (HTML-safe by default, as json.Marshal) and Go's float
 * formatting. Neither side prints or exits.
 */
#ifndef ORUN_MODELFILE_JSON_H
#define ORUN_MODELFILE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MF_JSON_MAX_INPUT (512u << 20) /* bytes: larger documents are refused */
#define MF_JSON_MAX_DEPTH 1000         /* nesting of arrays/objects */

enum mf_json_type {
	MF_JSON_NULL,
	MF_JSON_BOOL,
	MF_JSON_NUMBER,
	MF_JSON_STRING,
	MF_JSON_ARRAY,
	MF_JSON_OBJECT,
};

/* One value of a parsed document. Values live in one array in document order: a container's children
 * follow it, and `span` counts the nodes of its whole subtree (itself included). Object children come in
 * pairs: a key (a string node) followed by its value. Use the accessors below rather than the layout. */
struct mf_json {
	enum mf_json_type type;
	uint32_t span;   /* nodes in this subtree, >= 1 */
	uint32_t count;  /* array: elements; object: members; else 0 */
	bool boolean;    /* MF_JSON_BOOL */
	double number;   /* MF_JSON_NUMBER: the value as a double (±HUGE_VAL when out of range) */
	const char *str; /* MF_JSON_STRING: unescaped bytes, NUL-terminated (may hold inner NULs); NUMBER: the
			    literal as written, NUL-terminated */
	size_t len;      /* length of str in bytes */
	size_t offset;   /* byte offset of the value in the input */
};

struct mf_json_doc;

struct mf_json_error {
	size_t offset;    /* byte offset where parsing stopped */
	char message[160]; /* Go-like text, e.g. "invalid character 'x' looking for beginning of value" */
};

/* Parses text[0..len) (need not be NUL-terminated). Returns the document, or NULL with *err filled (out of
 * memory is reported as "out of memory"). The input is not referenced after the call. */
struct mf_json_doc *mf_json_parse(const char *text, size_t len, struct mf_json_error *err)
	__attribute__((warn_unused_result));

/* Frees a document; NULL is fine. Every mf_json pointer into it dies with it. */
void mf_json_free(struct mf_json_doc *doc);

/* The root value; never NULL for a parsed document. Borrowed. */
const struct mf_json *mf_json_root(const struct mf_json_doc *doc);

/* First child of an array or object (for objects: the first key), or NULL when empty / not a container. */
const struct mf_json *mf_json_first(const struct mf_json *parent);

/* The child after `child` in `parent` (for objects pass the member's VALUE to get the next key), or NULL. */
const struct mf_json *mf_json_after(const struct mf_json *parent, const struct mf_json *child);

/* Element i of an array (O(i)), or NULL. */
const struct mf_json *mf_json_at(const struct mf_json *arr, size_t i);

/* Value of member `key` of an object: the LAST member with exactly this key (Go: a later duplicate
 * overwrites), or NULL when absent or obj is not an object. */
const struct mf_json *mf_json_get(const struct mf_json *obj, const char *key);

/* As mf_json_get, but a member also matches when its key equals `key` case-insensitively (ASCII), as Go
 * matches JSON keys to struct fields; members are applied in order, so the last matching one wins. */
const struct mf_json *mf_json_get_fold(const struct mf_json *obj, const char *key);

/* Iterate an array's elements / an object's (key, value) members. */
#define MF_JSON_FOREACH(elem, arr)                                                                       \
	for (const struct mf_json *elem = mf_json_first(arr); elem; elem = mf_json_after((arr), elem))
#define MF_JSON_FOREACH_MEMBER(key, val, obj)                                                            \
	for (const struct mf_json *key = mf_json_first(obj), *val = key ? key + 1 : NULL; key;           \
	     key = mf_json_after((obj), val), val = key ? key + 1 : NULL)

/* Integer value of a number written as an integer literal (no fraction or exponent) that fits int64, as
 * Go decodes into an int field. Returns true and stores it, else false. */
bool mf_json_int(const struct mf_json *v, int64_t *out);

/* String equality with a C string (NUL-terminated), false for non-strings. */
bool mf_json_str_eq(const struct mf_json *v, const char *s);

/* Go's name for the JSON type, as in "cannot unmarshal string into ...": "string", "number", "bool",
 * "array", "object", "null". */
const char *mf_json_type_name(const struct mf_json *v);

/* ---------------------------------------------------------------------------------------------------- */
/* Writer */

enum {
	MF_JW_NO_HTML_ESCAPE = 1 << 0, /* leave <, > and & alone (Go: Encoder.SetEscapeHTML(false)) */
};

enum mf_jw_status {
	MF_JW_OK = 0,
	MF_JW_NOMEM,     /* allocation failed */
	MF_JW_TOO_LARGE, /* output would pass the writer's ceiling */
	MF_JW_INVALID,   /* NaN/Inf, or a misuse such as a value where a key is due */
};

/* A compact JSON writer into a growable buffer. Zero-initialise or call mf_jw_init. Errors are sticky:
 * after the first one every call does nothing and mf_jw_status() says why. */
struct mf_jw {
	char *buf;
	size_t len, cap;
	size_t limit;     /* ceiling in bytes (0 = MF_JSON_MAX_INPUT) */
	unsigned flags;   /* MF_JW_* */
	int status;       /* enum mf_jw_status */
	int depth;
	uint8_t state[MF_JSON_MAX_DEPTH + 1]; /* per level: 0 = first item, 1 = after an item, 2 = after a key */
	uint8_t is_obj[MF_JSON_MAX_DEPTH + 1];
};

void mf_jw_init(struct mf_jw *w, size_t limit, unsigned flags);
/* Releases the buffer; the writer may be re-initialised afterwards. */
void mf_jw_free(struct mf_jw *w);
/* Starts over, keeping the buffer and settings. */
void mf_jw_reset(struct mf_jw *w);
int mf_jw_status(const struct mf_jw *w);
/* The output so far (NUL-terminated) or NULL on error; owned by the writer. */
const char *mf_jw_str(const struct mf_jw *w);
/* Hands the buffer to the caller (free() it); the writer is left empty. NULL on error. */
char *mf_jw_take(struct mf_jw *w, size_t *len);

void mf_jw_obj(struct mf_jw *w);
void mf_jw_obj_end(struct mf_jw *w);
void mf_jw_arr(struct mf_jw *w);
void mf_jw_arr_end(struct mf_jw *w);
void mf_jw_key(struct mf_jw *w, const char *key);
void mf_jw_keyn(struct mf_jw *w, const char *key, size_t n);
void mf_jw_string(struct mf_jw *w, const char *s);
void mf_jw_stringn(struct mf_jw *w, const char *s, size_t n);
void mf_jw_int(struct mf_jw *w, int64_t v);
void mf_jw_uint(struct mf_jw *w, uint64_t v);
void mf_jw_float64(struct mf_jw *w, double v); /* Go's float64 encoding; NaN/Inf → MF_JW_INVALID */
void mf_jw_float32(struct mf_jw *w, float v);  /* Go's float32 encoding (shortest float32 digits) */
void mf_jw_bool(struct mf_jw *w, bool v);
void mf_jw_null(struct mf_jw *w);
/* Inserts an already-encoded JSON value verbatim (the caller vouches for it). */
void mf_jw_raw(struct mf_jw *w, const char *json, size_t n);
/* Re-encodes a parsed value compactly. With sort_keys, object members come out sorted by key (as Go
 * marshals a map); otherwise in document order. */
void mf_jw_value(struct mf_jw *w, const struct mf_json *v, bool sort_keys);

/* Appends s[0..n) to the output as the body of a JSON string (no quotes) with Go's escaping; returns false on
 * allocation failure or ceiling. Exposed for writers that build strings piecewise. */
bool mf_jw_escape(struct mf_jw *w, const char *s, size_t n);

/* Formats v as Go's encoding/json writes a float64 (bits = 64) or float32 (bits = 32) into buf (>= 32
 * bytes); returns the length, or 0 for NaN/Inf. */
int mf_json_format_float(char *buf, double v, int bits);

#endif
