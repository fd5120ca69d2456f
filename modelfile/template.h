/* modelfile/template.h — Ollama's chat templates: Go text/template with Ollama's data model.
 *
 * mf_tpl_parse is Ollama's template.Parse (Go text/template, Option("missingkey=zero"), Ollama's functions,
 * {{ .Response }} appended when the template names neither .Messages nor .Response); mf_tpl_execute is
 * Ollama's Template.Execute with its three modes (fill-in-the-middle, messages, legacy .Prompt/.Response
 * with the cut after .Response). Also here: identifier collection (capabilities), thinking-tag and
 * tool-call-tag inference, and detection of a bundled template from a GGUF's Jinja chat template.
 * The library never prints; every failure comes back as a code plus a Go-like message with line/column.
 */
#ifndef ORUN_MODELFILE_TEMPLATE_H
#define ORUN_MODELFILE_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define MF_TPL_WUR __attribute__((warn_unused_result))
#else
#define MF_TPL_WUR
#endif

struct ob_json;

/* Limits: a hostile template (or data) cannot hang the caller or exhaust memory. */
#define MF_TPL_MAX_SOURCE (256u << 10)         /* bytes of template text (library templates are < 20 KiB) */
#define MF_TPL_MAX_PARSE_MEMORY (64u << 20)    /* bytes of parse tree per template */
#define MF_TPL_MAX_PARSE_DEPTH 200             /* nesting of control blocks and parentheses */
#define MF_TPL_MAX_CALL_DEPTH 100              /* nested {{template}} calls while executing */
#define MF_TPL_MAX_OUTPUT (64u << 20)          /* bytes of rendered output */
#define MF_TPL_MAX_MEMORY (64u << 20)          /* bytes of intermediate values per execution */
#define MF_TPL_MAX_STEPS (10u * 1000 * 1000)   /* nodes evaluated per execution */
#define MF_TPL_MAX_ITERATIONS (1u * 1000 * 1000) /* range iterations per execution, all loops together */
#define MF_TPL_MAX_WIDTH 1000000               /* printf width/precision (Go's fmt refuses larger) */

enum mf_tpl_status {
	MF_TPL_OK = 0,
	MF_TPL_ERR_PARSE,  /* the template text is not a valid template */
	MF_TPL_ERR_EXEC,   /* execution failed (Go's ExecError) */
	MF_TPL_ERR_DATA,   /* messages/tools JSON that Ollama's decoder would reject */
	MF_TPL_ERR_NOMEM,  /* an allocation failed */
	MF_TPL_ERR_LIMIT,  /* one of the MF_TPL_MAX_* limits was reached */
};

struct mf_tpl_error {
	int code;      /* enum mf_tpl_status */
	int line;      /* 1-based line in the template (0 when not tied to a position) */
	int col;       /* 0-based byte column in that line, as Go's ErrorContext counts */
	char msg[512]; /* Go's text, e.g. `template: :3:14: executing "" at <.Foo>: can't evaluate field Foo in
			  type *template.templateMessage` or `template: :1: unclosed action` */
};

/* Status code as a short fixed text; never NULL. */
const char *mf_tpl_strerror(int code);

/* ------------------------------------------------------------------------------------- parse */

struct mf_tpl;

/* Parses a template as Ollama's template.Parse does. The text is copied. Returns MF_TPL_OK and *out, or an
 * error code with *err filled (err may be NULL). Texts over MF_TPL_MAX_SOURCE are MF_TPL_ERR_LIMIT.
 * A parsed template is immutable: any number of threads may execute it and read its properties at once. */
int mf_tpl_parse(const char *src, size_t len, struct mf_tpl **out, struct mf_tpl_error *err) MF_TPL_WUR;

/* Frees a template; NULL is fine. */
void mf_tpl_free(struct mf_tpl *t);

/* The source text as given (NUL-terminated, borrowed). */
const char *mf_tpl_source(const struct mf_tpl *t, size_t *len);

/* Ollama's Template.Vars(): every field and variable identifier, lower-cased, sorted, unique (borrowed). */
const char *const *mf_tpl_vars(const struct mf_tpl *t, size_t *n);

/* Whether Vars() contains `name` (give it lower-case: "tools", "suffix", "messages", "toolcalls"). */
bool mf_tpl_uses(const struct mf_tpl *t, const char *name);

/* Ollama's Template.Contains: a plain substring test on the source. */
bool mf_tpl_contains(const struct mf_tpl *t, const char *s);

/* Thinking tags inferred from the template (thinking.InferTags): the trimmed first and last text of the
 * list around a .Thinking inside `range .Messages`; "" when none. The model has the thinking capability
 * when both are non-empty. Borrowed. */
const char *mf_tpl_think_open(const struct mf_tpl *t);
const char *mf_tpl_think_close(const struct mf_tpl *t);

/* The tool-call tag (tools.parseTag): the first non-blank text inside `{{ if .ToolCalls }}`, cut at the first
 * '{' and trimmed, e.g. "<tool_call>" or "[TOOL_CALLS]"; "{" when there is none. Borrowed. */
const char *mf_tpl_tool_tag(const struct mf_tpl *t);

/* Ollama's goTemplateHasToolRoundTrip: uses tools and toolcalls and renders tool results. */
bool mf_tpl_tool_round_trip(const struct mf_tpl *t);

/* ------------------------------------------------------------------------------------- data */

/* A byte string (need not be NUL-terminated; may contain NULs). p may be NULL when n is 0. */
struct mf_tpl_str {
	const char *p;
	size_t n;
};

struct mf_tpl_tool_call {
	struct mf_tpl_str id;
	int64_t index;
	struct mf_tpl_str name;
	const struct ob_json *arguments; /* a JSON object, or NULL/null for none ("{}" when printed) */
};

struct mf_tpl_image {
	const void *data; /* decoded image bytes (api.ImageData) */
	size_t len;
};

/* One api.Message. The engine borrows every pointer for the duration of mf_tpl_execute only. */
struct mf_tpl_message {
	struct mf_tpl_str role; /* as Ollama stores it: lower-cased by the JSON decoder */
	struct mf_tpl_str content;
	struct mf_tpl_str thinking;
	const struct mf_tpl_image *images;
	size_t n_images;
	const struct mf_tpl_tool_call *tool_calls;
	size_t n_tool_calls;
	struct mf_tpl_str tool_name;
	struct mf_tpl_str tool_call_id;
};

/* Ollama's template.Values. */
struct mf_tpl_values {
	const struct mf_tpl_message *messages;
	size_t n_messages;
	/* The request's "tools" array exactly as parsed (api.Tools is decoded from it with Go's rules: unknown
	 * keys dropped, keys matched case-insensitively); NULL = no tools (nil). */
	const struct ob_json *tools;
	struct mf_tpl_str prompt; /* with suffix: fill-in-the-middle mode */
	struct mf_tpl_str suffix;
	bool think;
	struct mf_tpl_str think_level; /* "low" | "medium" | "high" | "max" | "" */
	bool is_think_set;
	bool force_legacy; /* run the legacy .System/.Prompt/.Response path even for messages templates */
	int64_t now;       /* seconds since the epoch for currentDate/yesterdayDate (local time); 0 = now */
};

/* Renders the template as Ollama's Template.Execute does:
 *  - prompt and suffix both non-empty: {Prompt, Suffix, Response:"", Think, ThinkLevel, IsThinkSet};
 *  - the template names .Messages (and !force_legacy): messages collated (consecutive same-role messages
 *    joined with "\n\n", except tool messages), System = all system messages joined with "\n\n", Tools,
 *    Response "", Think, ThinkLevel, IsThinkSet;
 *  - otherwise the legacy loop: one execution per completed turn, then the last turn with everything from
 *    the first .Response field onward cut (executed without Ollama's functions, as Ollama does).
 * On success *out is a malloc'd NUL-terminated string (free() it) of *out_len bytes. */
int mf_tpl_execute(const struct mf_tpl *t, const struct mf_tpl_values *v, char **out, size_t *out_len,
		   struct mf_tpl_error *err) MF_TPL_WUR;

/* A plain Go template (Ollama's functions, missingkey=zero, no {{ .Response }} appended) executed with data
 * decoded from JSON as Go's json.Unmarshal into interface{} would (map[string]any, []any, float64 …), data
 * NULL meaning nil; `now` is the time currentDate sees (seconds since the epoch; 0 = now). For the engine's
 * tests and fuzz target. On success *out is malloc'd, NUL-terminated, of *out_len bytes (out_len may be
 * NULL). */
int mf_tpl_render_generic(const char *src, size_t len, const struct ob_json *data, int64_t now, char **out,
			  size_t *out_len, struct mf_tpl_error *err) MF_TPL_WUR;

/* Messages decoded from a parsed /api/chat "messages" array with Go's rules (role lower-cased, keys matched
 * case-insensitively, images base64-decoded, tool call arguments kept as JSON nodes of `arr`'s document).
 * The server may edit items[i] (e.g. content with image tags) before rendering; strings point into the
 * JSON document or into this object, which must not outlive the document. */
struct mf_tpl_messages {
	struct mf_tpl_message *items;
	size_t n;
	struct mf_tpl_messages_priv *priv;
};

int mf_tpl_messages_from_json(const struct ob_json *arr, struct mf_tpl_messages **out, struct mf_tpl_error *err)
	MF_TPL_WUR;
void mf_tpl_messages_free(struct mf_tpl_messages *m);

/* Checks that a "tools" array decodes as Ollama's api.Tools (MF_TPL_ERR_DATA with Go's message if not). */
int mf_tpl_tools_check(const struct ob_json *tools, struct mf_tpl_error *err) MF_TPL_WUR;

/* ------------------------------------------------------------------------------------- detection */

/* A template of the bundled corpus (Ollama's template/ folder; data in modelfile/templates/). */
struct mf_tpl_named {
	const char *name;       /* e.g. "chatml" */
	const char *text;       /* the Go template (CRLF normalised to LF), NUL-terminated */
	size_t text_len;
	const char *const *stop; /* the "stop" list of its parameters file */
	size_t n_stop;
	bool has_params;        /* a parameters file exists (Ollama then writes a params layer) */
};

/* Ollama's template.Named: the bundled template whose Jinja reference (index.json) is closest to `jinja`
 * by Levenshtein distance over runes, first one wins a tie; NULL when the best distance is not below 100.
 * Borrowed, static. */
const struct mf_tpl_named *mf_tpl_named_match(const char *jinja, size_t len);

/* The params layer Ollama writes for it: json.NewEncoder(..).Encode({"stop": [...]}) — HTML-escaped, with a
 * trailing newline. malloc'd (free() it); NULL when out of memory or when !has_params. */
char *mf_tpl_named_params_json(const struct mf_tpl_named *n, size_t *len);

/* The first Jinja template of index.json that names t (the reference the GGUF templates are matched against),
 * with its length in *len; NULL when index.json names none. Borrowed, static. */
const char *mf_tpl_named_jinja(const struct mf_tpl_named *t, size_t *len);

/* All bundled templates (for listing and tests). */
size_t mf_tpl_named_count(void);
const struct mf_tpl_named *mf_tpl_named_at(size_t i);

#endif
