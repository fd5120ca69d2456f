/* runner/chatfmt/internal.h — what the files of runner/chatfmt share: the table that describes each format
 * (thinking tags, tool-call markers and how the text after each marker is read), the parser's state, and
 * the tool-call body readers of calls.c. Not a public header.
 */
#ifndef ORUN_RUNNER_CHATFMT_INTERNAL_H
#define ORUN_RUNNER_CHATFMT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/json.h"
#include "runner/chatfmt/chatfmt.h"

#define CF_MAX_MARKERS 12
#define CF_MAX_NAME 256 /* bytes of a function name read from the output */

/* How the text after a marker is read. */
enum cf_body {
	CF_DROP,            /* the marker is dropped, the text after it is content (<|START_RESPONSE|>) */
	CF_JSON_TAGGED,     /* marker {"name": ..., "arguments": {...}} end */
	CF_JSON_BARE,       /* {"name": ...} where the marker is the object's start */
	CF_FUNC_EQ,         /* <function=NAME>{...}</function> */
	CF_FUNC_ATTR,       /* <function name="NAME">{...}</function> */
	CF_JSON_ARRAY,      /* marker [ {call}, ... ] [end] */
	CF_MISTRAL,         /* [TOOL_CALLS] then a JSON array or NAME[ARGS]{...} */
	CF_XML,             /* marker <function=NAME><parameter=K>V</parameter>...</function> end (see cf_xml) */
	CF_SEP_JSON,        /* marker (begin NAME sep {...} end)* end: DeepSeek, Kimi (see cf_sep) */
	CF_PYTHON_CODE,     /* <|python_tag|> then code to the end: a "python" call {"code": ...} */
	CF_PYTHON_BUILTIN,  /* <|python_tag|>name.call(k=v, ...), else as CF_PYTHON_CODE */
	CF_LLAMA_START,     /* at the start: {"name": ..., "parameters": {...}} */
	CF_GENERIC_START,   /* at the start: {"tool_call"|"tool_calls"|"response": ...} */
	CF_FUNCTIONARY,     /* >>>NAME\n{...} | >>>all\ntext | >>>python\ncode; at the start without >>> */
};

/* The member names of a call object in a JSON array. */
struct cf_keys {
	const char *name, *args, *id;
	bool short_form; /* {"NAME": {args}} (Apertus) */
};

/* XML-like calls: [tool_start NAME tool_sep] (key_start KEY key_val_sep [key_val_sep2] VALUE val_end)*
 * [tool_end]; without tool_start, the body is one call whose name runs to the first key_start (GLM). */
struct cf_xml {
	const char *tool_start, *tool_sep, *key_start, *key_val_sep, *key_val_sep2, *val_end, *tool_end;
	bool trim; /* a string value loses its surrounding white space (Qwen3-Coder) */
};

/* Calls with a separator before JSON arguments: ([call_begin] [name_prefix] NAME name_end [json_open] {...}
 * [json_close] call_end)* */
struct cf_sep {
	const char *call_begin;
	bool begin_required;
	const char *name_prefix, *name_end, *json_open, *json_close, *call_end;
	bool kimi_ids; /* NAME is "functions.NAME:IDX" */
};

struct cf_marker {
	const char *text;
	enum cf_body body;
	const char *end; /* closes the body; NULL: the body ends with its JSON (or at the end of the output) */
	const struct cf_keys *keys;
	const struct cf_xml *xml;
	const struct cf_sep *sep;
	bool is_tool; /* only looked for when the request has tools */
};

struct cf_format {
	const char *name;
	const char *think_open, *think_close; /* NULL: no thinking */
	enum cf_body start;                   /* CF_DROP: nothing special at the start */
	bool harmony;                         /* GPT-OSS: its own reader (harmony.c) */
	bool trim_content; /* llama.cpp's XML-call engine: content blocks lose surrounding white space and are
			      joined by a blank line around calls */
	struct cf_marker markers[CF_MAX_MARKERS];
};

const struct cf_format *cf_format_get(enum rn_chatfmt_kind k);

enum cf_state {
	CF_THINK_LOOK,  /* before a possible opening thinking tag */
	CF_THINKING,
	CF_AFTER_THINK, /* after a closing tag: white space, maybe another block */
	CF_START,       /* the first content: a format's start-only call */
	CF_CONTENT,
	CF_BODY,        /* after a marker, until the call is complete */
	CF_EAT_SPACE,   /* after a call */
	CF_H_HEADER,    /* GPT-OSS: before <|message|> */
	CF_H_REASON,
	CF_H_CONTENT,
	CF_H_CALL,
	CF_H_SEEK,      /* GPT-OSS: before the next <|start|>assistant */
	CF_FINISHED,
};

/* A JSON container's extent, found incrementally. */
struct cf_jscan {
	size_t pos;   /* bytes scanned */
	size_t end;   /* once complete: the offset past the container */
	int depth;
	bool in_str, esc, started;
};

/* Outcome of reading a body. */
enum cf_step { CF_MORE, CF_DONE, CF_FAIL };

/* The outputs of one feed or finish call. */
struct cf_out {
	struct ob_buf *content, *reasoning;
	struct rn_tool_call **calls;
	size_t *n_calls;
	size_t cap; /* capacity of *calls, when known to be larger than *n_calls */
};

struct rn_chatfmt {
	const struct cf_format *f;
	enum rn_chatfmt_kind kind;
	struct rn_chatfmt_opts o;
	enum cf_state st;
	struct ob_buf buf;       /* text not yet sent */
	bool reasoning_started;  /* leading white space of this thinking block was skipped */
	bool start_done;
	const struct cf_marker *cur; /* CF_BODY: the marker being read (&start_marker at the start) */
	struct cf_marker start_marker;
	size_t end_scan;         /* CF_BODY: where the search for the end marker resumes */
	struct cf_jscan js;      /* CF_BODY / CF_H_CALL: the JSON being scanned */
	size_t js_from;          /* where that JSON starts in buf */
	char h_name[CF_MAX_NAME]; /* CF_H_CALL: the function */
	bool h_keep_end;          /* CF_H_CONTENT: the message's <|end|> is content too (reasoning NONE) */
	struct ob_buf ws;        /* trim_content: white space held after the content sent so far */
	bool content_sent;       /* trim_content: some content went out */
	bool need_sep;           /* trim_content: a call came after content: "\n\n" before more content */
	int n_calls;
	bool failed;
};

/* 0 when buf[from..n) holds no complete JSON container yet, else the offset just past it; SIZE_MAX when the
 * text at from (after white space) does not start an object or array. State is kept in *js between calls
 * (start with it zeroed, and the same from). */
size_t cf_jscan_feed(struct cf_jscan *js, const char *b, size_t n, size_t from);

/* Adds a call (name[0..name_len), arguments: a JSON object / a string holding one / NULL for {}) to out.
 * Returns 1 when added, 0 when the arguments are not an object, -1 when out of memory. */
int cf_add_call(struct rn_chatfmt *p, struct cf_out *out, const char *name, size_t name_len,
		const struct ob_json *args, const char *id, size_t id_len);

/* Reads the body of the marker p->cur at the start of b[0..n) (the marker is b[0..mlen)). On CF_DONE *used is
 * the bytes taken (marker included) and the calls are in out. final: no more text will come. */
enum cf_step cf_body_step(struct rn_chatfmt *p, const char *b, size_t n, size_t mlen, bool final, size_t *used,
			  struct cf_out *out);

/* GPT-OSS harmony: runs the CF_H_* states over buf. Returns -1 when out of memory. */
int cf_harmony_run(struct rn_chatfmt *p, bool final, struct cf_out *out);

/* Shared helpers (stream.c). */
bool cf_is_space(char c);
size_t cf_skip_space(const char *s, size_t n, size_t i);
bool cf_starts(const char *s, size_t n, const char *lit);
/* Length of the longest proper prefix of lit that ends s[0..n). */
size_t cf_partial(const char *s, size_t n, const char *lit);
const char *cf_find(const char *s, size_t n, const char *lit);
bool cf_emit(struct ob_buf *b, const char *s, size_t n);
/* Sends content s[0..n) (with the trim_content rules of the format). */
void cf_content(struct rn_chatfmt *p, struct cf_out *out, const char *s, size_t n);
/* Drops the first n bytes of p->buf. */
void cf_consume(struct rn_chatfmt *p, size_t n);

#endif
