/* runner/api/parsers.h — the incremental output parsers between the model and the client: stop strings
 * (llama-server's hold-back), thinking tags (Ollama's thinking.Parser) and template-derived tool calls
 * (Ollama's tools.Parser).
 *
 * Each parser is fed text pieces as they are generated and returns what can be sent now; everything else is
 * held back only as long as it is ambiguous (a possible stop string, a partial tag, an unfinished tool call).
 * Parsers own their buffers; none of them is thread-safe (one per request).
 */
#ifndef ORUN_RUNNER_API_PARSERS_H
#define ORUN_RUNNER_API_PARSERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/json.h"

#define RN_PARSE_MAX_BUFFER (64u << 20) /* bytes a parser may hold back */

/* ---------------------------------------------------------------------------------------------------- */
/* Stop strings: scans the generated text for any of the stop strings. */

/* Where the first stop string occurs in text[0..len): returns its offset, or -1. */
long rn_stop_find(const char *text, size_t len, char *const *stops, size_t n_stops);

/* Bytes at the end of text[0..len) that are a proper prefix of some stop string (to be held back). */
size_t rn_stop_partial(const char *text, size_t len, char *const *stops, size_t n_stops);

/* ---------------------------------------------------------------------------------------------------- */
/* Thinking: <open>thinking</close>content, with Ollama's whitespace rules. */

enum rn_think_state {
	RN_THINK_LOOKING,          /* before the opening tag; only whitespace so far */
	RN_THINK_STARTED_EATING,   /* after the opening tag, eating whitespace */
	RN_THINK_THINKING,
	RN_THINK_DONE_EATING,      /* after the closing tag, eating whitespace */
	RN_THINK_DONE,
};

struct rn_think {
	char *open, *close;
	enum rn_think_state state;
	struct ob_buf acc;
};

/* Returns 0, or -1 when out of memory. */
int rn_think_init(struct rn_think *t, const char *open, const char *close);
void rn_think_free(struct rn_think *t);

/* thinking.Parser.AddContent: feeds s[0..n); appends the thinking text to *thinking and the content to
 * *content (both may receive nothing while a tag is ambiguous). Returns 0, or -1 when out of memory. */
int rn_think_add(struct rn_think *t, const char *s, size_t n, struct ob_buf *thinking, struct ob_buf *content);

/* ---------------------------------------------------------------------------------------------------- */
/* Tool calls recognised from a tag (e.g. "<tool_call>", "[TOOL_CALLS]" or "{"), as tools.Parser. */

struct rn_tool_call {
	char *name;
	int index;       /* function.index: running count over the request */
	char *arguments; /* compact JSON object text (keys in the order the model wrote them) */
	char id[16];     /* "call_" + 8 random [a-z0-9] */
};

enum rn_tools_state { RN_TOOLS_LOOKING, RN_TOOLS_CALLING, RN_TOOLS_DONE };

struct rn_tools {
	char *tag;
	char **names; /* the request's tool names */
	size_t n_names;
	enum rn_tools_state state;
	struct ob_buf buf;
	int n;        /* calls found so far */
};

/* names: the function names of the request's tools. Returns 0, or -1 when out of memory. */
int rn_tools_init(struct rn_tools *p, const char *tag, const char *const *names, size_t n_names);
void rn_tools_free(struct rn_tools *p);

/* tools.Parser.Add: feeds s[0..n); appends passing content to *content and new calls to *calls / *n_calls
 * (a malloc'd array the caller frees with rn_tool_calls_free). Returns 0, or -1 when out of memory. */
int rn_tools_add(struct rn_tools *p, const char *s, size_t n, struct ob_buf *content, struct rn_tool_call **calls,
		 size_t *n_calls);

/* tools.Parser.Content: what is left to send at the end ("" unless the tag is "{" or "[" and no call was
 * found). Appends to *content. */
int rn_tools_content(struct rn_tools *p, struct ob_buf *content);

void rn_tool_calls_free(struct rn_tool_call *calls, size_t n);

/* Fills id with "call_" + 8 random characters from [a-z0-9] (thread-safe). id must hold 14 bytes. */
void rn_tool_call_id(char *id);

/* True for Go's unicode.IsSpace runes. */
bool rn_is_space_rune(uint32_t r);

#endif
