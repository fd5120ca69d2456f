/* modelfile/jinja/jinja.h — GGUF chat templates (Jinja) rendered as Hugging Face transformers renders them.
 *
 * The engine is Python jinja2 in the configuration of transformers' chat_template_utils: an
 * ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and loop controls, a {% generation %} tag
 * that renders its body, transformers' `tojson` (json.dumps with ensure_ascii=False: no HTML escaping, key
 * order kept), and the globals raise_exception and strftime_now. Values follow Python: None prints "None",
 * floats print as Python's repr, containers print as Python's repr, an undefined variable prints "".
 * Where jinja2 raises, rendering fails with the same exception class and, for the cases chat templates
 * reach, the same message. The library never prints; nothing here reads files or the network.
 *
 * Use: mf_jinja_parse once per template (the result is immutable and may be rendered from several threads
 * at once), build the variables with mf_jinja_vars_* (one set per request), mf_jinja_render.
 */
#ifndef ORUN_MODELFILE_JINJA_H
#define ORUN_MODELFILE_JINJA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define MF_JINJA_WUR __attribute__((warn_unused_result))
#else
#define MF_JINJA_WUR
#endif

struct ob_json;

/* Limits against hostile templates and data; each failure names its limit (status MF_JINJA_ELIMIT). */
#define MF_JINJA_MAX_SOURCE (1u << 20)          /* bytes of template text (real templates are < 20 KiB) */
#define MF_JINJA_MAX_NESTING 200                /* nesting of blocks, brackets and operators in the source */
#define MF_JINJA_MAX_OUTPUT (16u << 20)         /* bytes of rendered output (and of any captured block) */
#define MF_JINJA_MAX_MEMORY (256u << 20)        /* bytes of values made while rendering */
#define MF_JINJA_MAX_STEPS (20u * 1000 * 1000)  /* statements, expressions and loop iterations per render */
#define MF_JINJA_MAX_CALL_DEPTH 100             /* nested macro calls */
#define MF_JINJA_MAX_STACK (1u << 20)           /* bytes of C stack a render may use (blocks nested in recursive
						   macros): renders are safe on any thread with 2 MiB of stack */
#define MF_JINJA_MAX_RANGE 100000               /* items of range(): jinja2's sandbox MAX_RANGE */

enum mf_jinja_status {
	MF_JINJA_OK = 0,
	MF_JINJA_ESYNTAX,    /* TemplateSyntaxError: the template does not parse */
	MF_JINJA_ERAISED,    /* TemplateError: the template called raise_exception(message) */
	MF_JINJA_ETYPE,      /* TypeError (e.g. str + None, iterating None) */
	MF_JINJA_EVALUE,     /* ValueError (e.g. unpacking the wrong number of values) */
	MF_JINJA_EUNDEFINED, /* UndefinedError: an undefined value used beyond printing and testing */
	MF_JINJA_ESECURITY,  /* SecurityError: the sandbox refused (e.g. list.append, a _private attribute) */
	MF_JINJA_ERUNTIME,   /* other errors jinja2 raises: ZeroDivisionError, OverflowError, unknown filter... */
	MF_JINJA_ELIMIT,     /* one of the MF_JINJA_MAX_* limits */
	MF_JINJA_ENOMEM,     /* out of memory */
	MF_JINJA_EINVAL,     /* misuse of this API: e.g. a context that is not a JSON object */
};

/* What failed: the Python exception class jinja2 would raise ("TypeError", "TemplateError",
 * "UndefinedError", "SecurityError", "TemplateSyntaxError", ...; "LimitError" for orun's limits), its message
 * as jinja2 words it where chat templates reach it (raise_exception's text verbatim), and the template line. */
struct mf_jinja_error {
	int status;        /* enum mf_jinja_status */
	int line;          /* 1-based template line, 0 when not tied to one */
	char type[32];     /* Python exception class name */
	char message[512]; /* truncated (on a UTF-8 boundary) when longer */
};

/* A short English description of a status, e.g. "type error". Never NULL. */
const char *mf_jinja_strerror(int status);

/* ------------------------------------------------------------------------------------------ parse */

struct mf_jinja;

/* Parses src[0..len) (any bytes; need not be NUL-terminated). Newlines are normalised and one trailing
 * newline dropped as jinja2 does. Returns MF_JINJA_OK with *out set (free with mf_jinja_free), else a status
 * with *err filled (ESYNTAX, ELIMIT, ENOMEM) and *out NULL. The source is copied; nothing is kept. */
int mf_jinja_parse(const char *src, size_t len, struct mf_jinja **out, struct mf_jinja_error *err) MF_JINJA_WUR;

/* Frees a template; NULL is fine. */
void mf_jinja_free(struct mf_jinja *t);

/* Whether the template names variable `name` anywhere (as {{ name }}, name.attr, a test or a call argument),
 * e.g. "tools", "enable_thinking", "reasoning_effort", "documents": what callers read capabilities from. */
bool mf_jinja_uses(const struct mf_jinja *t, const char *name);

/* ------------------------------------------------------------------------------------------ variables */

/* The variables a render sees: render(**vars). Built by the caller, read-only while rendering, so one set
 * may serve several renders (and threads) at once. Values are deep copies: the caller's JSON documents and
 * strings may be freed after each call. A later setting of the same name replaces the earlier one. */
struct mf_jinja_vars;

/* NULL when out of memory. */
struct mf_jinja_vars *mf_jinja_vars_new(void) MF_JINJA_WUR;
void mf_jinja_vars_free(struct mf_jinja_vars *v);

/* name = the JSON value converted as Python's json.loads does: null → None, true/false → True/False, an
 * integer literal that fits 64 bits → int (others → float), strings, arrays → list, objects → dict (key
 * order kept; a duplicate key keeps its first position and its last value). v NULL sets None. 0 or
 * MF_JINJA_ENOMEM / MF_JINJA_ELIMIT (MF_JINJA_MAX_MEMORY) / MF_JINJA_EINVAL (name NULL). */
int mf_jinja_vars_set_json(struct mf_jinja_vars *vars, const char *name, const struct ob_json *v) MF_JINJA_WUR;
/* Every member of the JSON object obj becomes a variable (render(**obj)): MF_JINJA_EINVAL when obj is not
 * an object. */
int mf_jinja_vars_set_object(struct mf_jinja_vars *vars, const struct ob_json *obj) MF_JINJA_WUR;
int mf_jinja_vars_set_string(struct mf_jinja_vars *vars, const char *name, const char *s, size_t len) MF_JINJA_WUR;
int mf_jinja_vars_set_bool(struct mf_jinja_vars *vars, const char *name, bool b) MF_JINJA_WUR;
int mf_jinja_vars_set_int(struct mf_jinja_vars *vars, const char *name, int64_t i) MF_JINJA_WUR;
int mf_jinja_vars_set_none(struct mf_jinja_vars *vars, const char *name) MF_JINJA_WUR;

/* Everything a chat request passes, as transformers' apply_chat_template does: messages (a JSON array of
 * OpenAI-shaped messages: role, content as a string, null or a list of parts, tool_calls with arguments as
 * objects, tool_call_id, name, reasoning_content), tools (a JSON array, or NULL for None — defined, as
 * transformers passes it), documents (NULL for None), add_generation_prompt, bos_token and eos_token (NULL
 * for the empty string), and extra keyword arguments (a JSON object such as {"enable_thinking": false,
 * "reasoning_effort": "low"}, or NULL), set after the others so that they may override them. */
struct mf_jinja_chat {
	const struct ob_json *messages;
	const struct ob_json *tools;
	const struct ob_json *documents;
	bool add_generation_prompt;
	const char *bos_token;
	const char *eos_token;
	const struct ob_json *extra;
};
int mf_jinja_vars_set_chat(struct mf_jinja_vars *vars, const struct mf_jinja_chat *chat) MF_JINJA_WUR;

/* ------------------------------------------------------------------------------------------ render */

struct mf_jinja_options {
	/* strftime_now's clock (seconds since the epoch, formatted in UTC) when has_now; else the clock is
	 * SOURCE_DATE_EPOCH when that is set in the environment (UTC), else the local time now. */
	bool has_now;
	int64_t now;
	/* Ceilings below the MF_JINJA_MAX_* defaults (0: the default). */
	size_t max_output;
	uint64_t max_steps;
};

/* Renders t with vars (NULL: no variables) under opt (NULL: defaults). On MF_JINJA_OK, *out is the output,
 * NUL-terminated (free() it), and *len its length (it may hold NUL bytes from the data). On failure *out is
 * NULL, *len 0 and *err says what failed. Thread-safe for distinct outputs: t and vars are only read. */
int mf_jinja_render(const struct mf_jinja *t, const struct mf_jinja_vars *vars, const struct mf_jinja_options *opt,
		    char **out, size_t *len, struct mf_jinja_error *err) MF_JINJA_WUR;

#endif
