/* modelfile/jinja/internal.h — shared internals of the Jinja engine (not a public API).
 *
 * Everything declared here is static: modelfile/jinja/jinja.c compiles the engine's files as one translation
 * unit, so these names never leave libmodelfile.a (only jinja.h's mf_jinja_ functions are global). Include
 * this header from those files only. Errors inside the lexer, parser and evaluator unwind with longjmp to the
 * entry point (jj_fail): everything they allocate lives in an arena or in buffers the entry point owns, so
 * nothing leaks and no caller needs to check a status on every expression.
 */
#ifndef ORUN_MODELFILE_JINJA_INTERNAL_H
#define ORUN_MODELFILE_JINJA_INTERNAL_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/buf.h"
#include "modelfile/jinja/jinja.h"

/* ------------------------------------------------------------------------------------------ arena */

/* A chunked bump allocator with a ceiling on the bytes handed out. */
struct jj_chunk;
struct jj_arena {
	struct jj_chunk *chunks;
	size_t used;  /* bytes handed out so far */
	size_t limit; /* ceiling on used */
};

/* Where a failure goes: the entry point's jmp_buf and error record. */
struct jj_fail {
	jmp_buf jb;
	struct mf_jinja_error *err;
	int line; /* line of the node being run, for messages */
	uint64_t steps, max_steps; /* work done and its ceiling (MF_JINJA_MAX_STEPS) */
};

static void jj_arena_init(struct jj_arena *a, size_t limit);
static void jj_arena_free(struct jj_arena *a);
/* Zeroed, 8-byte aligned memory; on the ceiling or no memory it fails through f (never returns NULL). */
static void *jj_alloc(struct jj_arena *a, struct jj_fail *f, size_t n);
static char *jj_strdup(struct jj_arena *a, struct jj_fail *f, const char *s, size_t n);

/* Records the error (status, Python class name, printf message) and unwinds to the entry point. */
static void jj_fail(struct jj_fail *f, int status, const char *type, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 4, 5)));

/* Counts n units of work (a statement, an expression, a loop iteration, an element visited by a builtin);
 * fails past the ceiling, so that no template runs unbounded. */
static inline void jj_charge(struct jj_fail *f, uint64_t n)
{
	f->steps += n;
	if (f->steps > f->max_steps)
		jj_fail(f, MF_JINJA_ELIMIT, "LimitError", "step limit exceeded: more than %llu steps",
			(unsigned long long)f->max_steps);
}

/* memcpy that accepts (NULL, 0): empty lists and strings may have no storage. */
static inline void jj_memcpy(void *dst, const void *src, size_t n)
{
	if (n)
		memcpy(dst, src, n);
}

/* ------------------------------------------------------------------------------------------ values */

enum jj_type {
	JJ_UNDEF,  /* jinja2's Undefined; sub = enum jj_undef_kind */
	JJ_NONE,
	JJ_BOOL,   /* b */
	JJ_INT,    /* i */
	JJ_FLOAT,  /* f */
	JJ_STR,    /* s, len: UTF-8 bytes (not NUL-terminated); sub = JJ_STR_MARKUP for markupsafe's Markup */
	JJ_LIST,   /* l; sub = enum jj_seq_kind */
	JJ_DICT,   /* d */
	JJ_NS,     /* d: a namespace() object, the one mutable value */
	JJ_LOOP,   /* loop: the `loop` variable of a for loop */
	JJ_MACRO,  /* node: a {% macro %} */
	JJ_FUNC,   /* sub = enum jj_func: a global function */
	JJ_METHOD, /* recv: a method bound to a str/dict/list/loop; sub = enum jj_meth */
};

#define JJ_STR_MARKUP 1 /* a string marked safe (|safe, |escape): `+` escapes the plain string it meets */

/* Kinds of list: each prints and serialises as its Python type does. */
enum jj_seq_kind {
	JJ_SEQ_LIST,
	JJ_SEQ_TUPLE,
	JJ_SEQ_GEN,        /* a generator (map, select, ...): one pass, no len, not JSON-serialisable */
	JJ_SEQ_REVERSED,   /* list_reverseiterator */
	JJ_SEQ_ITEMS,      /* dict_items view: a list of 2-tuples */
	JJ_SEQ_KEYS,       /* dict_keys */
	JJ_SEQ_VALUES,     /* dict_values */
};

/* What an undefined value remembers, to word the error when it is used (jinja2's _undefined_message). */
enum jj_undef_kind {
	JJ_UNDEF_NAME,     /* '<name>' is undefined: s/len the name */
	JJ_UNDEF_ATTR,     /* '<obj> object' has no attribute '<name>': aux the object's type, s/len the name */
	JJ_UNDEF_ITEM,     /* <obj> object has no element <repr(key)>: aux the type, key in *recv */
	JJ_UNDEF_HINT,     /* the message s/len itself (UndefinedError) */
	JJ_UNDEF_UNSAFE,   /* the message s/len, raised as SecurityError when the value is used */
	JJ_UNDEF_PLAIN,    /* "undefined value" (a missing macro argument and the like: s/len its name) */
};

struct jj_list;
struct jj_dict;
struct jj_loop;
struct jj_node;

struct jj_val {
	uint8_t t;    /* enum jj_type */
	uint8_t sub;  /* see enum jj_type */
	uint16_t aux; /* JJ_UNDEF: the type (t | sub << 8) of the object an attribute/item was missing from */
	uint32_t pad;
	union {
		bool b;
		int64_t i;
		double f;
		const char *s;
		struct jj_list *l;
		struct jj_dict *d;
		struct jj_loop *loop;
		const struct jj_node *node;
		const struct jj_val *recv;
	};
	size_t len; /* JJ_STR / undefined name: bytes; JJ_METHOD with a name: the attribute's length */
};

struct jj_list {
	size_t n;
	struct jj_val *v;
	bool consumed; /* a generator that has been iterated */
};

struct jj_kv {
	struct jj_val k, v;
};

struct jj_dict {
	size_t n, cap;
	struct jj_kv *kv;
	uint32_t *index;  /* open-addressing hash of kv positions + 1 (0 = empty), NULL for small dicts */
	size_t index_cap; /* slots, a power of two */
};

struct jj_loop {
	const struct jj_list *items;
	size_t i; /* 0-based position */
};

/* ------------------------------------------------------------------------------------------ syntax */

enum jj_tok {
	JJ_T_EOF,
	JJ_T_DATA,
	JJ_T_VAR_BEGIN,
	JJ_T_VAR_END,
	JJ_T_BLOCK_BEGIN,
	JJ_T_BLOCK_END,
	JJ_T_NAME,
	JJ_T_STRING, /* the decoded value */
	JJ_T_INT,
	JJ_T_FLOAT,
	JJ_T_OP,     /* op: enum jj_op */
};

enum jj_op {
	JJ_OP_NONE,
	JJ_OP_ADD, JJ_OP_SUB, JJ_OP_MUL, JJ_OP_DIV, JJ_OP_FLOORDIV, JJ_OP_MOD, JJ_OP_POW, JJ_OP_TILDE,
	JJ_OP_LBRACKET, JJ_OP_RBRACKET, JJ_OP_LPAREN, JJ_OP_RPAREN, JJ_OP_LBRACE, JJ_OP_RBRACE,
	JJ_OP_EQ, JJ_OP_NE, JJ_OP_GT, JJ_OP_GE, JJ_OP_LT, JJ_OP_LE, JJ_OP_ASSIGN, JJ_OP_DOT, JJ_OP_COLON,
	JJ_OP_PIPE, JJ_OP_COMMA, JJ_OP_SEMICOLON,
	/* not tokens: operators the parser makes */
	JJ_OP_IN, JJ_OP_NOTIN, JJ_OP_NEG, JJ_OP_POS,
};

struct jj_token {
	uint8_t type; /* enum jj_tok */
	uint8_t op;   /* enum jj_op */
	int line;
	const char *s; /* DATA, NAME, STRING: bytes (arena or source); INT/FLOAT: the literal */
	size_t len;
	int64_t i;
	double f;
};

enum jj_node_kind {
	/* statements */
	JJ_N_BODY,      /* list: statements */
	JJ_N_DATA,      /* s/len */
	JJ_N_OUTPUT,    /* a: expression */
	JJ_N_IF,        /* a: test, b: body, c: else (JJ_N_IF for elif, a body, or NULL) */
	JJ_N_FOR,       /* a: target, b: iterable, c: body, d: else body, e: filter test */
	JJ_N_SET,       /* a: target, b: value */
	JJ_N_SET_BLOCK, /* a: target, b: body, list: filters (JJ_E_FILTER with a NULL subject) */
	JJ_N_MACRO,     /* sym: name, list: parameters (JJ_E_NAME) and defaults in `defaults`, b: body */
	JJ_N_CALL_BLOCK,/* a: the call expression, b: body (the caller), list/defaults: caller's parameters */
	JJ_N_FILTER_BLOCK, /* b: body, list: filters */
	JJ_N_BREAK,
	JJ_N_CONTINUE,
	/* expressions */
	JJ_E_CONST,     /* v */
	JJ_E_NAME,      /* sym */
	JJ_E_NSREF,     /* sym: the namespace variable, s/len the attribute (a {% set ns.attr %} target) */
	JJ_E_ATTR,      /* a: object, s/len: attribute name, meth: enum jj_meth of that name */
	JJ_E_ITEM,      /* a: object, b: key */
	JJ_E_SLICE,     /* a: object, b/c/d: start/stop/step (each may be NULL) */
	JJ_E_CALL,      /* a: callee, list: positional args, kwnames/kwargs */
	JJ_E_FILTER,    /* a: subject, sym-free: fid, list/kw: args */
	JJ_E_TEST,      /* a: subject, tid, list: args, neg */
	JJ_E_UNARY,     /* op, a */
	JJ_E_BINARY,    /* op, a, b */
	JJ_E_AND,       /* a, b */
	JJ_E_OR,        /* a, b */
	JJ_E_NOT,       /* a */
	JJ_E_COMPARE,   /* a: first operand, list: further operands, ops: operators */
	JJ_E_COND,      /* a: test, b: then, c: else (NULL: undefined) */
	JJ_E_LIST,      /* list */
	JJ_E_TUPLE,     /* list */
	JJ_E_DICT,      /* list: keys, kwargs: values */
	JJ_E_CONCAT,    /* list: operands of ~ */
};

struct jj_node {
	uint8_t kind; /* enum jj_node_kind */
	uint8_t op;   /* enum jj_op */
	bool neg;     /* JJ_E_TEST: `is not` */
	int16_t meth; /* JJ_E_ATTR: enum jj_meth or -1; JJ_E_FILTER: enum jj_filter; JJ_E_TEST: enum jj_test */
	int line;
	int sym;      /* JJ_E_NAME, JJ_E_NSREF, JJ_N_MACRO: symbol id */
	struct jj_node *a, *b, *c, *d, *e;
	struct jj_node **list;
	uint32_t n;
	uint32_t nkw;
	const char **kwnames; /* keyword argument names (NUL-terminated, template arena) */
	size_t *kwlens;
	struct jj_node **kwargs; /* keyword values; JJ_E_DICT: the values; JJ_N_MACRO: defaults (NULL: none) */
	uint8_t *ops;            /* JJ_E_COMPARE: n operators */
	const char *s;
	size_t len;
	struct jj_val v;
};

/* A symbol: a name the template mentions. */
struct jj_sym {
	const char *name;
	size_t len;
	int8_t builtin; /* enum jj_func of a global of that name, or -1 */
};

struct mf_jinja {
	struct jj_arena arena; /* the tree, the symbols, the normalised source */
	struct jj_node *root;
	struct jj_sym *syms;
	size_t nsyms, syms_cap;
	uint32_t *sym_index; /* hash of symbols by name: position + 1 */
	size_t sym_index_cap;
	size_t nmacros;
};

/* ------------------------------------------------------------------------------------------ builtins */

enum jj_func {
	JJ_F_RANGE,
	JJ_F_DICT,
	JJ_F_NAMESPACE,
	JJ_F_RAISE,
	JJ_F_STRFTIME,
	JJ_F_CYCLER,
	JJ_F_JOINER,
	JJ_F_LIPSUM,
	JJ_F_COUNT,
};

/* Methods by name: one id per name, whichever types have it (meth_applies in builtins.c says which). */
enum jj_meth {
	JJ_M_SPLIT, JJ_M_RSPLIT, JJ_M_STRIP, JJ_M_LSTRIP, JJ_M_RSTRIP, JJ_M_STARTSWITH, JJ_M_ENDSWITH,
	JJ_M_REPLACE, JJ_M_TITLE, JJ_M_UPPER, JJ_M_LOWER, JJ_M_CAPITALIZE, JJ_M_FIND, JJ_M_RFIND, JJ_M_INDEX,
	JJ_M_RINDEX, JJ_M_COUNT, JJ_M_JOIN, JJ_M_FORMAT, JJ_M_SPLITLINES, JJ_M_ISDIGIT, JJ_M_ISALPHA,
	JJ_M_ISALNUM, JJ_M_ISSPACE, JJ_M_ISUPPER, JJ_M_ISLOWER, JJ_M_REMOVEPREFIX, JJ_M_REMOVESUFFIX,
	JJ_M_ZFILL, JJ_M_CENTER, JJ_M_LJUST, JJ_M_RJUST, JJ_M_PARTITION, JJ_M_RPARTITION, JJ_M_SWAPCASE,
	JJ_M_CASEFOLD, JJ_M_EXPANDTABS, JJ_M_ENCODE, JJ_M_ISTITLE, JJ_M_ISNUMERIC, JJ_M_ISDECIMAL,
	JJ_M_ISASCII, JJ_M_ISIDENTIFIER, JJ_M_ISPRINTABLE, JJ_M_TRANSLATE, JJ_M_MAKETRANS, JJ_M_FORMAT_MAP,
	/* dict (and list: copy, pop, clear) */
	JJ_M_GET, JJ_M_ITEMS, JJ_M_KEYS, JJ_M_VALUES, JJ_M_COPY, JJ_M_FROMKEYS,
	/* the ones that modify: refused by the immutable sandbox */
	JJ_M_POP, JJ_M_POPITEM, JJ_M_SETDEFAULT, JJ_M_UPDATE, JJ_M_CLEAR, JJ_M_APPEND, JJ_M_EXTEND,
	JJ_M_INSERT, JJ_M_REMOVE, JJ_M_REVERSE, JJ_M_SORT,
	/* loop */
	JJ_M_CYCLE, JJ_M_CHANGED,
	JJ_M_COUNT_,
};

enum jj_filter {
	JJ_FI_ABS, JJ_FI_ATTR, JJ_FI_BATCH, JJ_FI_CAPITALIZE, JJ_FI_CENTER, JJ_FI_COUNT, JJ_FI_D, JJ_FI_DEFAULT,
	JJ_FI_DICTSORT, JJ_FI_E, JJ_FI_ESCAPE, JJ_FI_FIRST, JJ_FI_FLOAT, JJ_FI_FORCEESCAPE, JJ_FI_FORMAT,
	JJ_FI_INDENT, JJ_FI_INT, JJ_FI_ITEMS, JJ_FI_JOIN, JJ_FI_LAST, JJ_FI_LENGTH, JJ_FI_LIST, JJ_FI_LOWER,
	JJ_FI_MAP, JJ_FI_MAX, JJ_FI_MIN, JJ_FI_PPRINT, JJ_FI_REJECT, JJ_FI_REJECTATTR, JJ_FI_REPLACE,
	JJ_FI_REVERSE, JJ_FI_ROUND, JJ_FI_SAFE, JJ_FI_SELECT, JJ_FI_SELECTATTR, JJ_FI_SLICE, JJ_FI_SORT,
	JJ_FI_STRING, JJ_FI_STRIPTAGS, JJ_FI_SUM, JJ_FI_TITLE, JJ_FI_TOJSON, JJ_FI_TRIM, JJ_FI_TRUNCATE,
	JJ_FI_UNIQUE, JJ_FI_UPPER, JJ_FI_URLENCODE, JJ_FI_WORDCOUNT, JJ_FI_WORDWRAP, JJ_FI_XMLATTR,
	JJ_FI_COUNT_,
};

enum jj_test {
	JJ_TE_BOOLEAN, JJ_TE_CALLABLE, JJ_TE_DEFINED, JJ_TE_DIVISIBLEBY, JJ_TE_EQ, JJ_TE_ESCAPED, JJ_TE_EVEN,
	JJ_TE_FALSE, JJ_TE_FILTER, JJ_TE_FLOAT, JJ_TE_GE, JJ_TE_GT, JJ_TE_IN, JJ_TE_INTEGER, JJ_TE_ITERABLE,
	JJ_TE_LE, JJ_TE_LOWER, JJ_TE_LT, JJ_TE_MAPPING, JJ_TE_NE, JJ_TE_NONE, JJ_TE_NUMBER, JJ_TE_ODD,
	JJ_TE_SAMEAS, JJ_TE_SEQUENCE, JJ_TE_STRING, JJ_TE_TEST, JJ_TE_TRUE, JJ_TE_UNDEFINED, JJ_TE_UPPER,
	JJ_TE_COUNT_,
};

/* Name tables (builtins.c): look-ups by name, -1 when unknown. */
static int jj_func_lookup(const char *s, size_t n);
static int jj_meth_lookup(const char *s, size_t n);
static int jj_filter_lookup(const char *s, size_t n);
static int jj_test_lookup(const char *s, size_t n);

/* ------------------------------------------------------------------------------------------ lexer, parser */

struct jj_lexer_out {
	struct jj_token *toks;
	size_t n, cap;
};

/* Tokenises the normalised source; fails through f. */
static void jj_lex(struct mf_jinja *t, struct jj_fail *f, const char *src, size_t len, struct jj_lexer_out *out);
/* Builds t->root from the tokens; fails through f. */
static void jj_parse(struct mf_jinja *t, struct jj_fail *f, const struct jj_token *toks, size_t n);
/* The symbol id of a name, added when new. */
static int jj_sym_intern(struct mf_jinja *t, struct jj_fail *f, const char *s, size_t n);
static int jj_sym_find(const struct mf_jinja *t, const char *s, size_t n);

/* ------------------------------------------------------------------------------------------ rendering */

#define JJ_UNSET 0xff /* jj_val.t of a global slot no variable fills */
#define JJ_MAX_VALUE_DEPTH 1000 /* nesting of containers printed, compared or serialised (Python's recursion
				   limit) */

/* Variables of one for-loop iteration or one macro call: a small map from symbol to value. */
struct jj_scope {
	struct jj_scope *parent; /* NULL: the template's top level (globals) comes next */
	uint32_t n, cap;
	int *syms;
	struct jj_val *vals;
};

struct mf_jinja_vars {
	struct jj_arena arena;
	size_t n, cap;
	const char **names;
	size_t *lens;
	struct jj_val *vals;
};

struct jj_tmpbuf {
	struct ob_buf b;
	struct jj_tmpbuf *next;
};

struct jj_run {
	const struct mf_jinja *t;
	struct jj_arena ar;
	struct jj_fail f;
	struct ob_buf *out;     /* where output goes now (the result, or a block being captured) */
	struct jj_val *globals; /* per symbol: the top-level variables; t == JJ_UNSET when none */
	struct jj_scope *scope; /* innermost loop or macro scope, NULL at the top level */
	size_t max_output;
	int depth; /* nested macro calls */
	const char *stack_base; /* the entry point's frame: how deep the evaluator's recursion has gone */
	int64_t now;    /* strftime_now's clock, seconds since the epoch */
	bool now_local; /* format it as local time (else UTC) */
	struct jj_tmpbuf *tmps; /* scratch buffers, freed at the end of the render whatever happens */
};

#endif
