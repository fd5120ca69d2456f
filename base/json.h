/* base/json.h — JSON in and out, with Go's encoding/json rules where clients can see a difference.
 *
 * Parsing (base/json.c): one strict pass that accepts exactly what Go's decoder accepts, reports the first
 * error with Go's scanner text and its byte offset, and builds an immutable tree with unescaped strings;
 * time and memory are linear in the input (nesting included). Writing (base/jsonw.c): a growable buffer
 * with a ceiling, compact output, Go's string escaping (HTML-safe by default, as json.Marshal) and Go's
 * float formatting. Neither side prints or exits.
 */
#ifndef ORUN_BASE_JSON_H
#define ORUN_BASE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OB_JSON_MAX_INPUT (512u << 20) /* bytes: larger documents are refused */
#define OB_JSON_MAX_DEPTH 1000         /* nesting of arrays/objects */

enum ob_json_type {
	OB_JSON_NULL,
	OB_JSON_BOOL,
	OB_JSON_NUMBER,
	OB_JSON_STRING,
	OB_JSON_ARRAY,
	OB_JSON_OBJECT,
};

/* One value of a parsed document. Values live in one array in document order: a container's children
 * follow it, and `span` counts the nodes of its whole subtree (itself included). Object children come in
 * pairs: a key (a string node) followed by its value. Use the accessors below rather than the layout. */
struct ob_json {
	enum ob_json_type type;
	uint32_t span;   /* nodes in this subtree, >= 1 */
	uint32_t count;  /* array: elements; object: members; else 0 */
	bool boolean;    /* OB_JSON_BOOL */
	double number;   /* OB_JSON_NUMBER: the value as a double (±HUGE_VAL when out of range) */
	const char *str; /* OB_JSON_STRING: unescaped bytes, NUL-terminated (may hold inner NULs); NUMBER: the
			    literal as written, NUL-terminated */
	size_t len;      /* length of str in bytes */
	size_t offset;   /* byte offset of the value in the input */
};

struct ob_json_doc;

struct ob_json_error {
	size_t offset;    /* byte offset where parsing stopped */
	char message[160]; /* Go-like text, e.g. "invalid character 'x' looking for beginning of value" */
};

/* Parses text[0..len) (need not be NUL-terminated). Returns the document, or NULL with *err filled (out of
 * memory is reported as "out of memory"). The input is not referenced after the call. */
struct ob_json_doc *ob_json_parse(const char *text, size_t len, struct ob_json_error *err)
	__attribute__((warn_unused_result));

/* Frees a document; NULL is fine. Every ob_json pointer into it dies with it. */
void ob_json_free(struct ob_json_doc *doc);

/* The root value; never NULL for a parsed document. Borrowed. */
const struct ob_json *ob_json_root(const struct ob_json_doc *doc);

/* First child of an array or object (for objects: the first key), or NULL when empty / not a container. */
const struct ob_json *ob_json_first(const struct ob_json *parent);

/* The child after `child` in `parent` (for objects pass the member's VALUE to get the next key), or NULL. */
const struct ob_json *ob_json_after(const struct ob_json *parent, const struct ob_json *child);

/* Element i of an array (O(i)), or NULL. */
const struct ob_json *ob_json_at(const struct ob_json *arr, size_t i);

/* Value of member `key` of an object: the LAST member with exactly this key (Go: a later duplicate
 * overwrites), or NULL when absent or obj is not an object. */
const struct ob_json *ob_json_get(const struct ob_json *obj, const char *key);

/* As ob_json_get, but a member also matches when its key equals `key` case-insensitively (ASCII), as Go
 * matches JSON keys to struct fields; members are applied in order, so the last matching one wins. */
const struct ob_json *ob_json_get_fold(const struct ob_json *obj, const char *key);

/* Iterate an array's elements / an object's (key, value) members. */
#define OB_JSON_FOREACH(elem, arr)                                                                       \
	for (const struct ob_json *elem = ob_json_first(arr); elem; elem = ob_json_after((arr), elem))
#define OB_JSON_FOREACH_MEMBER(key, val, obj)                                                            \
	for (const struct ob_json *key = ob_json_first(obj), *val = key ? key + 1 : NULL; key;           \
	     key = ob_json_after((obj), val), val = key ? key + 1 : NULL)

/* Integer value of a number written as an integer literal (no fraction or exponent) that fits int64, as
 * Go decodes into an int field. Returns true and stores it, else false. */
bool ob_json_int(const struct ob_json *v, int64_t *out);

/* Go's order of two strings (bytes compared unsigned, a prefix first) on string values: <0, 0 or >0. */
int ob_json_str_cmp(const struct ob_json *a, const struct ob_json *b);

/* The members of object obj as a Go map decoded from it holds them: one per key (the last duplicate wins),
 * sorted by key as Go's encoders sort map keys. Stores a malloc'ed array of the KEY nodes in *keys (a
 * member's value is key + 1; free() the array) and returns the count; SIZE_MAX when memory ran out (*keys
 * NULL). An empty or non-object obj gives 0. */
size_t ob_json_map_members(const struct ob_json *obj, const struct ob_json ***keys) __attribute__((warn_unused_result));

/* String equality with a C string (NUL-terminated), false for non-strings. */
bool ob_json_str_eq(const struct ob_json *v, const char *s);

/* Go's name for the JSON type, as in "cannot unmarshal string into ...": "string", "number", "bool",
 * "array", "object", "null". */
const char *ob_json_type_name(const struct ob_json *v);

/* ---------------------------------------------------------------------------------------------------- */
/* Writer */

enum {
	OB_JW_NO_HTML_ESCAPE = 1 << 0, /* leave <, > and & alone (Go: Encoder.SetEscapeHTML(false)) */
};

enum ob_jw_status {
	OB_JW_OK = 0,
	OB_JW_NOMEM,     /* allocation failed */
	OB_JW_TOO_LARGE, /* output would pass the writer's ceiling */
	OB_JW_INVALID,   /* NaN/Inf, or a misuse such as a value where a key is due */
};

/* A compact JSON writer into a growable buffer. Zero-initialise or call ob_jw_init. Errors are sticky:
 * after the first one every call does nothing and ob_jw_status() says why. */
struct ob_jw {
	char *buf;
	size_t len, cap;
	size_t limit;     /* ceiling in bytes (0 = OB_JSON_MAX_INPUT) */
	unsigned flags;   /* OB_JW_* */
	int status;       /* enum ob_jw_status */
	int depth;
	uint8_t state[OB_JSON_MAX_DEPTH + 1]; /* per level: 0 = first item, 1 = after an item, 2 = after a key */
	uint8_t is_obj[OB_JSON_MAX_DEPTH + 1];
};

void ob_jw_init(struct ob_jw *w, size_t limit, unsigned flags);
/* Releases the buffer; the writer may be re-initialised afterwards. */
void ob_jw_free(struct ob_jw *w);
/* Starts over, keeping the buffer and settings. */
void ob_jw_reset(struct ob_jw *w);
int ob_jw_status(const struct ob_jw *w);
/* The output so far (NUL-terminated) or NULL on error; owned by the writer. */
const char *ob_jw_str(const struct ob_jw *w);
/* Hands the buffer to the caller (free() it); the writer is left empty. NULL on error. */
char *ob_jw_take(struct ob_jw *w, size_t *len);

void ob_jw_obj(struct ob_jw *w);
void ob_jw_obj_end(struct ob_jw *w);
void ob_jw_arr(struct ob_jw *w);
void ob_jw_arr_end(struct ob_jw *w);
void ob_jw_key(struct ob_jw *w, const char *key);
void ob_jw_keyn(struct ob_jw *w, const char *key, size_t n);
void ob_jw_string(struct ob_jw *w, const char *s);
void ob_jw_stringn(struct ob_jw *w, const char *s, size_t n);
void ob_jw_int(struct ob_jw *w, int64_t v);
void ob_jw_uint(struct ob_jw *w, uint64_t v);
void ob_jw_float64(struct ob_jw *w, double v); /* Go's float64 encoding; NaN/Inf → OB_JW_INVALID */
void ob_jw_float32(struct ob_jw *w, float v);  /* Go's float32 encoding (shortest float32 digits) */
void ob_jw_bool(struct ob_jw *w, bool v);
void ob_jw_null(struct ob_jw *w);
/* Inserts an already-encoded JSON value verbatim (the caller vouches for it). */
void ob_jw_raw(struct ob_jw *w, const char *json, size_t n);
/* Re-encodes a parsed value compactly. With sort_keys, object members come out sorted by key (as Go
 * marshals a map); otherwise in document order. */
void ob_jw_value(struct ob_jw *w, const struct ob_json *v, bool sort_keys);

/* Appends s[0..n) to the output as the body of a JSON string (no quotes) with Go's escaping; returns false on
 * allocation failure or ceiling. Exposed for writers that build strings piecewise. */
bool ob_jw_escape(struct ob_jw *w, const char *s, size_t n);

/* Formats v as Go's encoding/json writes a float64 (bits = 64) or float32 (bits = 32) into buf (>= 32
 * bytes); returns the length, or 0 for NaN/Inf. */
int ob_json_format_float(char *buf, double v, int bits);

#endif
