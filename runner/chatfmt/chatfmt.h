/* runner/chatfmt/chatfmt.h — llama-server's chat formats: which one a GGUF's Jinja chat template selects (as
 * llama.cpp's common/chat.cpp picks it), and an incremental parser per format that splits the generated text
 * into content, reasoning (reasoning_content / Ollama's `thinking`) and tool calls.
 *
 * The parser is fed the generated text in pieces (each ending on a UTF-8 boundary) and sends out everything
 * at once except a suffix that may be the start of one of the format's markers and the body of a tool call
 * that is not finished yet. The same text gives the same result however it is cut into pieces. A tool call
 * that cannot be parsed becomes content; nothing the model writes makes the parser fail, only memory.
 * One parser per request; not thread-safe. Tool calls use struct rn_tool_call of runner/api/parsers.h.
 */
#ifndef ORUN_RUNNER_CHATFMT_CHATFMT_H
#define ORUN_RUNNER_CHATFMT_CHATFMT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "runner/api/parsers.h"

/* llama.cpp's COMMON_CHAT_FORMAT_* that a template can select (rn_chatfmt_name gives llama.cpp's names). */
enum rn_chatfmt_kind {
	RN_CHATFMT_CONTENT_ONLY,
	RN_CHATFMT_GENERIC,
	RN_CHATFMT_MISTRAL_NEMO,
	RN_CHATFMT_MAGISTRAL,
	RN_CHATFMT_MINISTRAL_3, /* [TOOL_CALLS]name[ARGS]{...} and [THINK] (llama.cpp: a PEG parser, "peg-native") */
	RN_CHATFMT_LLAMA3,
	RN_CHATFMT_LLAMA3_BUILTIN, /* Llama 3.1 with builtin tools: <|python_tag|>name.call(...) */
	RN_CHATFMT_DEEPSEEK_R1,
	RN_CHATFMT_DEEPSEEK_V3_1,
	RN_CHATFMT_FIREFUNCTION_V2,
	RN_CHATFMT_FUNCTIONARY_V3_1,
	RN_CHATFMT_FUNCTIONARY_V3_2,
	RN_CHATFMT_HERMES,
	RN_CHATFMT_COMMAND_R7B,
	RN_CHATFMT_GRANITE,
	RN_CHATFMT_GPT_OSS,
	RN_CHATFMT_SEED_OSS,
	RN_CHATFMT_NEMOTRON_V2,
	RN_CHATFMT_NEMOTRON_V3, /* Qwen3-Coder XML tool calls with <think> (llama.cpp: "peg-constructed") */
	RN_CHATFMT_APERTUS,
	RN_CHATFMT_LFM2,
	RN_CHATFMT_MINIMAX_M2,
	RN_CHATFMT_GLM_4_5,
	RN_CHATFMT_KIMI_K2,
	RN_CHATFMT_QWEN3_CODER_XML,
	RN_CHATFMT_APRIEL_1_5,
	RN_CHATFMT_XIAOMI_MIMO,
	RN_CHATFMT_COUNT
};

/* As --reasoning-format: NONE leaves thinking in the content as the model wrote it; DEEPSEEK and AUTO (what
 * llama-server does by default) move it to the reasoning output. */
enum rn_chatfmt_reasoning { RN_CHATFMT_REASONING_NONE, RN_CHATFMT_REASONING_DEEPSEEK, RN_CHATFMT_REASONING_AUTO };

/* The format llama-server would use for a request WITH tools, from the template text alone (the order and
 * markers of common_chat_templates_apply_jinja; a request with a json_schema is not considered). */
enum rn_chatfmt_kind rn_chatfmt_detect(const char *template_src, size_t len);

/* The format for one request: kind from rn_chatfmt_detect, adjusted as llama.cpp adjusts it — without tools
 * (n_tools == 0) GENERIC and MISTRAL_NEMO give CONTENT_ONLY; LLAMA3 gives LLAMA3_BUILTIN when the template
 * has <|python_tag|> and a tool is one of Llama's builtins (wolfram_alpha, web_search, brave_search, python,
 * code_interpreter). tool_names may be NULL when n_tools is 0. */
enum rn_chatfmt_kind rn_chatfmt_for_request(enum rn_chatfmt_kind kind, const char *template_src, size_t len,
					    const char *const *tool_names, size_t n_tools);

/* llama.cpp's name of the format (common_chat_format_name), e.g. "Hermes 2 Pro"; "?" for an unknown kind. */
const char *rn_chatfmt_name(enum rn_chatfmt_kind k);

/* The tags around the format's thinking ("<think>", "</think>"), or false when it has none (GPT-OSS: its
 * analysis channel is not a tag pair, false). Static strings. Use them to see whether the rendered prompt
 * ends inside an opened thinking block (then set thinking_forced_open). */
bool rn_chatfmt_think_tags(enum rn_chatfmt_kind k, const char **open, const char **close);

/* Whether the rendered prompt[0..len) ends inside an opened thinking block of format k: it ends with the
 * format's opening tag, white space after it allowed (Qwen3 / DeepSeek R1 "<think>\n"), as llama.cpp's
 * thinking_forced_open. */
bool rn_chatfmt_prompt_opens_thinking(enum rn_chatfmt_kind k, const char *prompt, size_t len);

/* Whether the format can carry tool calls / thinking. */
bool rn_chatfmt_supports_tools(enum rn_chatfmt_kind k);
bool rn_chatfmt_supports_thinking(enum rn_chatfmt_kind k);

struct rn_chatfmt_opts {
	bool parse_tools;          /* the request has tools: look for tool calls */
	int reasoning;             /* enum rn_chatfmt_reasoning */
	bool thinking_forced_open; /* the rendered prompt ends inside an opened thinking block */
};

struct rn_chatfmt;

/* A parser for format k (opts NULL: no tools, reasoning AUTO, not forced open). NULL when out of memory. */
struct rn_chatfmt *rn_chatfmt_new(enum rn_chatfmt_kind k, const struct rn_chatfmt_opts *o)
	__attribute__((warn_unused_result));

/* Feeds s[0..n) (a piece of the generated text ending on a UTF-8 boundary). Appends what can be sent now to
 * *content and *reasoning and the tool calls completed by this piece to *calls / *n_calls (a malloc'd array
 * that grows; the caller frees it with rn_tool_calls_free; index counts calls over the parser's life; id is
 * the model's when it wrote a short one, else rn_tool_call_id's). Returns 0, or -1 when out of memory or an
 * output buffer's ceiling was reached (the parser is then unusable). Held text never passes
 * RN_PARSE_MAX_BUFFER: past it, an unfinished tool call is given up and sent as content. */
int rn_chatfmt_feed(struct rn_chatfmt *p, const char *s, size_t n, struct ob_buf *content, struct ob_buf *reasoning,
		    struct rn_tool_call **calls, size_t *n_calls) __attribute__((warn_unused_result));

/* The end of the generation: sends what was held back (an unfinished tool call as content; a partial marker
 * as text, except a partial closing thinking tag, which llama.cpp drops). Same outputs and returns as feed.
 * The parser accepts nothing after it. */
int rn_chatfmt_finish(struct rn_chatfmt *p, struct ob_buf *content, struct ob_buf *reasoning,
		      struct rn_tool_call **calls, size_t *n_calls) __attribute__((warn_unused_result));

/* Bytes the parser holds back now (for tests and limits). */
size_t rn_chatfmt_held(const struct rn_chatfmt *p);

void rn_chatfmt_free(struct rn_chatfmt *p);

#endif
