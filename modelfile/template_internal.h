/* modelfile/template_internal.h — shared internals of the Go text/template engine (not a public API).
 *
 * Everything declared here is static: modelfile/template.c compiles the template_*.c files as one translation
 * unit, so these names never leave libmodelfile.a (only template.h's mf_tpl_ functions are global). Include
 * this header from those files only.
 *
 * The parse tree mirrors Go's text/template/parse node types closely, because Ollama's extras (the legacy
 * cut after .Response, thinking-tag and tool-tag inference, identifier collection) are defined as walks
 * over that tree. Values model the Go types Ollama hands to templates (see template_value.c).
 */
#ifndef ORUN_MODELFILE_TEMPLATE_INTERNAL_H
#define ORUN_MODELFILE_TEMPLATE_INTERNAL_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "modelfile/template.h"

/* ------------------------------------------------------------------------------------------ arena */

/* A chunked bump allocator with a ceiling on the total bytes handed out. */
struct tpl_arena {
	struct tpl_chunk *chunks;
	size_t used_total; /* bytes handed out so far */
	size_t limit;      /* ceiling on used_total; 0 = none */
};

static void tpl_arena_init(struct tpl_arena *a, size_t limit);
static void tpl_arena_free(struct tpl_arena *a);
/* Zeroed memory, 8-byte aligned, or NULL (out of memory or over the ceiling). */
static void *tpl_arena_alloc(struct tpl_arena *a, size_t n);
/* Copies s[0..n) and appends a NUL. */
static char *tpl_arena_strdup(struct tpl_arena *a, const char *s, size_t n);

/* ------------------------------------------------------------------------------------------ buffer */

/* Output and scratch text go into base/buf's struct ob_buf (ceiling MF_TPL_MAX_OUTPUT where it is the
 * output). Its sticky failure as this engine's error code: 0 while the buffer is fine. */
static inline int tpl_buf_error(const struct ob_buf *b)
{
	return !b->failed ? MF_TPL_OK : b->over ? MF_TPL_ERR_LIMIT : MF_TPL_ERR_NOMEM;
}

/* ------------------------------------------------------------------------------------------ nodes */

enum tn_type {
	TN_TEXT,
	TN_ACTION,
	TN_BOOL,
	TN_CHAIN,
	TN_COMMAND,
	TN_DOT,
	TN_FIELD,
	TN_IDENTIFIER,
	TN_IF,
	TN_LIST,
	TN_NIL,
	TN_NUMBER,
	TN_PIPE,
	TN_RANGE,
	TN_STRING,
	TN_TEMPLATE,
	TN_VARIABLE,
	TN_WITH,
	TN_BREAK,
	TN_CONTINUE,
	TN_END_MARK,  /* parser-internal: {{end}} */
	TN_ELSE_MARK, /* parser-internal: {{else}} */
};

struct tpl_sv {
	const char *p;
	size_t n;
};

struct tn {
	enum tn_type type;
	uint32_t pos;  /* byte offset in the source */
	uint32_t line; /* 1-based line of pos */
	/* TEXT: the text; STRING: the unquoted value; IDENTIFIER: the name; NUMBER: the literal; TEMPLATE: the
	 * template name */
	const char *s;
	size_t n;
	/* STRING: the literal as written (with quotes) */
	const char *quoted;
	size_t quoted_n;
	/* LIST: items; COMMAND: args; PIPE: commands */
	struct tn **kids;
	size_t nkids, capkids;
	/* PIPE: declared/assigned variables (TN_VARIABLE) */
	struct tn **decl;
	size_t ndecl;
	bool is_assign; /* PIPE: `=` rather than `:=` */
	bool bval;      /* BOOL */
	/* ACTION/IF/RANGE/WITH/TEMPLATE: the pipeline (TEMPLATE: may be NULL); CHAIN: the term in `node` */
	struct tn *pipe;
	struct tn *node;
	struct tn *list, *else_list; /* IF/RANGE/WITH */
	/* FIELD: identifiers after the dots; VARIABLE: "$x" then fields; CHAIN: the fields */
	struct tpl_sv *ident;
	size_t nident;
	/* NUMBER */
	bool is_int, is_uint, is_float;
	int64_t i64;
	uint64_t u64;
	double f64;
	bool is_char; /* a character constant 'x' */
};

/* A named template: the main one ("") or one from {{define}} / {{block}}. */
struct tpl_tree {
	char *name;
	struct tn *root; /* TN_LIST */
};

/* ------------------------------------------------------------------------------------------ the template */

struct mf_tpl {
	struct tpl_arena arena; /* nodes, strings */
	char *src;              /* the source text as given, NUL-terminated */
	size_t src_len;
	struct tpl_tree *trees; /* trees[0] is the main template */
	size_t ntrees, captrees;
	bool appended_response; /* Ollama appended {{ .Response }} */
	char **vars;            /* lower-cased identifiers, sorted, unique */
	size_t nvars;
	bool vars_error;        /* Ollama's Identifiers() failed (e.g. {{template "x"}} without a pipeline) */
	char vars_errmsg[96];
	char *think_open, *think_close; /* inferred thinking tags ("" when none) */
	char *tool_tag;                 /* inferred tool-call tag ("{" when none) */
};

/* Parses src into t->trees (Go's parse.Parse with Ollama's function names). Returns 0 or an MF_TPL_ERR_*
 * code with *err filled. `funcs_ollama` adds json/currentDate/yesterdayDate/toTypeScriptType to the names
 * the parser accepts. */
static int tpl_parse(struct mf_tpl *t, bool funcs_ollama, struct mf_tpl_error *err);

/* Go's Node.String() for error messages ("<.Foo>", "<len .X>"). */
static void tpl_node_string(struct ob_buf *b, const struct tn *n);

/* Line and column (0-based byte in the line, as Go's ErrorContext) of a byte offset in src. */
static void tpl_location(const char *src, size_t pos, int *line, int *col);

/* Allocation helpers for the tree (used by the parser and by Ollama's tree surgery). */
static struct tn *tpl_node_new(struct tpl_arena *a, enum tn_type type, uint32_t pos, uint32_t line);
static bool tpl_node_add(struct tpl_arena *a, struct tn *parent, struct tn *kid);

/* ------------------------------------------------------------------------------------------ values */

/* Go kinds the engine distinguishes. */
enum tv_kind {
	TV_INVALID = 0, /* reflect.Value{}: "no value" */
	TV_NIL,         /* a nil interface value (any(nil)) */
	TV_BOOL,
	TV_INT,   /* int */
	TV_UINT8, /* a byte of an api.ImageData */
	TV_FLOAT, /* float64 */
	TV_STRING,
	TV_BYTES,  /* api.ImageData ([]byte) */
	TV_SLICE,  /* elements in u.seq */
	TV_MAP,    /* entries sorted by key (Go map) or in insertion order (ordered map) in u.map */
	TV_STRUCT, /* fields in u.fields, laid out by the type's field table */
};

/* Go types, for printing, JSON, method look-up and error messages. */
enum tv_type {
	TT_NONE = 0,
	TT_BOOL,
	TT_INT,
	TT_UINT8,
	TT_FLOAT64,
	TT_STRING,
	TT_ANY_SLICE,     /* []interface {} */
	TT_ANY_MAP,       /* map[string]interface {} */
	TT_STRING_SLICE,  /* []string */
	TT_MESSAGES,      /* []*template.templateMessage */
	TT_MESSAGE,       /* *template.templateMessage */
	TT_IMAGES,        /* []api.ImageData */
	TT_IMAGE,         /* api.ImageData */
	TT_TOOLCALLS,     /* []template.templateToolCall */
	TT_TOOLCALL,      /* template.templateToolCall */
	TT_TOOLCALL_FUNC, /* template.templateToolCallFunction */
	TT_ARGS,          /* template.templateArgs (map[string]any, String() = JSON) */
	TT_TOOLS,         /* template.templateTools (String() = JSON) */
	TT_TOOL,          /* template.templateTool (String() = JSON) */
	TT_TOOL_FUNC,     /* template.templateToolFunction (JSON, as the pending upstream fix prints it) */
	TT_TOOL_PARAMS,   /* template.templateToolFunctionParameters (likewise) */
	TT_PROPS,         /* template.templateProperties (map[string]api.ToolProperty, String() = JSON) */
	TT_PROP,          /* api.ToolProperty */
	TT_PROP_SLICE,    /* []api.ToolProperty */
	TT_PROPTYPE,      /* api.PropertyType ([]string, String()) */
	TT_PROPMAP,       /* *api.ToolPropertiesMap (ordered) */
	TT_PROPMAP_PLAIN, /* map[string]api.ToolProperty (ToolPropertiesMap.ToMap) */
	TT_DATA,          /* map[string]interface {}: the top-level data */
	TT__COUNT
};

struct tv;
struct tv_entry;

struct tv {
	uint8_t kind;  /* enum tv_kind */
	uint8_t type;  /* enum tv_type (TT_NONE for INVALID/NIL) */
	uint8_t isnil; /* SLICE/MAP/BYTES/STRUCT-pointer: a typed nil */
	uint8_t iface; /* the value sits in an interface slot (static type interface {}) */
	union {
		bool b;
		int64_t i;
		double f;
		struct {
			const char *p;
			size_t n;
		} s; /* STRING, BYTES */
		struct {
			struct tv *v;
			size_t n;
		} seq; /* SLICE */
		struct {
			struct tv_entry *e;
			size_t n;
		} map; /* MAP */
		struct tv *fields; /* STRUCT */
	} u;
};

struct tv_entry {
	const char *key;
	size_t key_n;
	struct tv val;
};

/* Description of a Go type. */
struct tv_field_desc {
	const char *name;      /* Go field name */
	const char *json;      /* JSON key */
	bool omitempty;
	uint8_t type;          /* static type of the field; TT_NONE = interface {} */
};

struct tv_type_desc {
	const char *go_name;   /* as Go's %s / reflect.Type.String() writes it */
	uint8_t kind;          /* kind of a value of this type */
	uint8_t elem;          /* SLICE/MAP: element type (TT_NONE = interface {}) */
	bool stringer;         /* has a String() method (value receiver) that printing uses */
	bool is_ptr;           /* a pointer to a struct (fields reached through it) */
	bool ordered;          /* MAP kept in insertion order */
	const struct tv_field_desc *fields;
	size_t nfields;
};

static const struct tv_type_desc tv_types[TT__COUNT];

/* Constructors (values live in an arena). */
static struct tv tv_invalid(void);
static struct tv tv_nil(void);
static struct tv tv_bool(bool b);
static struct tv tv_int(int64_t i);
static struct tv tv_float(double f);
static struct tv tv_string(const char *p, size_t n);
/* A zero value of type `type` (a struct gets zeroed fields); NULL-safe on allocation failure: returns
 * false. */
static bool tv_zero(struct tpl_arena *a, uint8_t type, struct tv *out);

/* Field look-up on a struct type: index or -1. */
static int tv_field_index(uint8_t type, const char *name, size_t n);

/* Type name as Go prints it ("interface {}" for TT_NONE with iface, "<nil>"…) */
static const char *tv_type_name(const struct tv *v);

/* Go's fmt: append v as %v would (depth 0 = top-level operand). */
static bool tv_fmt_value(struct ob_buf *b, const struct tv *v, int depth);
/* fmt of what a pointer points to (text/template's printableValue follows a pointer before printing). */
static bool tv_fmt_deref(struct ob_buf *b, const struct tv *v);
/* The String() output of a stringer value. */
static bool tv_stringer(struct ob_buf *b, const struct tv *v);

/* Go's encoding/json Marshal of v into the writer's buffer (HTML-escaped). */
struct ob_jw;
static void tv_json(struct ob_jw *w, const struct tv *v);

/* Truthiness (text/template's isTrue after indirecting interfaces). */
static bool tv_truth(const struct tv *v);

/* Builders from Ollama's request types: see template_value.c. */
static int tv_build_tools(struct tpl_arena *a, const struct ob_json *tools, struct tv *out, struct mf_tpl_error *err);
static int tv_build_args(struct tpl_arena *a, const struct ob_json *args, struct tv *out, struct mf_tpl_error *err);
static int tv_from_json_any(struct tpl_arena *a, const struct ob_json *j, struct tv *out);

/* Go's ToolProperty.ToTypeScriptType on a TT_PROP value. */
static bool tv_prop_typescript(struct ob_buf *b, const struct tv *prop);

/* Sorts map entries by key (bytewise, as Go's fmtsort and encoding/json do). */
static void tv_sort_entries(struct tv_entry *e, size_t n);

/* ------------------------------------------------------------------------------------------ execution */

struct tpl_exec_opts {
	bool funcs_ollama;    /* json, currentDate, yesterdayDate, toTypeScriptType are defined */
	bool missingkey_zero; /* Option("missingkey=zero") */
	int64_t now;          /* seconds since the epoch for currentDate; 0 = time(NULL) */
	bool detached;        /* a tree built by Ollama's legacy cut: no {{define}}d templates are visible */
};

/* Executes tree `root_tree` (an index into t->trees, or a detached tree when `root` is not NULL) with dot =
 * data, appending to out. Returns 0 or an MF_TPL_ERR_* code with *err filled (Go-like message). */
static int tpl_exec(const struct mf_tpl *t, const struct tn *root, const struct tv *data, const struct tpl_exec_opts *o,
	     struct tpl_arena *arena, struct ob_buf *out, struct mf_tpl_error *err);

#endif
