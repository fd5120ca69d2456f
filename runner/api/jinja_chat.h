/* runner/api/jinja_chat.h — a GGUF Jinja chat template (tokenizer.chat_template, modelfile/jinja) on the
 * request path: what the template says about the model (capabilities, the tags of its output), Ollama's
 * messages in the OpenAI shape the template expects, Ollama's `think` as the template's keyword arguments,
 * and the render with the vocabulary's BOS/EOS texts, as llama-server's --jinja path renders.
 *
 * When a stored model uses its GGUF's template (runner/api/stored_model.h: no TEMPLATE layer and the GGUF
 * has one), /api/chat, /api/generate and /v1/chat/completions render through here; `orun llama-server
 * --jinja` renders /apply-template and /v1/chat/completions through here too. Nothing here is per-model
 * state: the parsed template is the caller's.
 */
#ifndef ORUN_RUNNER_API_JINJA_CHAT_H
#define ORUN_RUNNER_API_JINJA_CHAT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/json.h"
#include "modelfile/jinja/jinja.h"
#include "modelfile/template.h"

struct rn_tok;

/* What the template implies: tools when it names the variable `tools`; thinking when it names
 * enable_thinking / reasoning_effort / thinking_budget or its text holds `reasoning_content` or `<think>`. */
void rn_jchat_caps(const struct mf_jinja *t, const char *src, size_t len, bool *tools, bool *thinking);

/* Writes Ollama's messages as the OpenAI-shaped array chat templates read: role, content (a string),
 * reasoning_content (Ollama's thinking, when not empty), tool_calls ([{"id"?, "type":"function",
 * "function":{"name", "arguments": object}}], when any), tool_call_id (when not empty) and name (Ollama's
 * tool_name, when not empty). */
void rn_jchat_write_messages(const struct mf_tpl_message *v, size_t n, struct ob_jw *w);

/* Ollama's think as keyword arguments, as Ollama passes it to llama-server's chat_template_kwargs:
 * {"enable_thinking": on[, "reasoning_effort": level]} when set (the level when on and not empty). Writes
 * nothing and returns false when think is not set. */
bool rn_jchat_write_think(bool set, bool on, const char *level, struct ob_jw *w);

/* One render's inputs: messages (OpenAI-shaped array), tools (NULL or an empty array: None), extra keyword
 * arguments (an object, or NULL), and the tokenizer whose BOS/EOS texts the template sees (NULL: none). */
struct rn_jchat_in {
	const struct ob_json *messages;
	const struct ob_json *tools;
	const struct ob_json *extra;
	const struct rn_tok *tok;
	bool add_generation_prompt;
};

/* Renders t with in (apply_chat_template's variables); then, as llama.cpp does, drops a leading BOS text when
 * the vocabulary adds BOS itself and a trailing EOS text when it adds EOS. Returns 0 with *out malloc'd (*len
 * bytes), or the HTTP status with the message in err: 400 for what the template raised or refused (its
 * message verbatim: raise_exception's text), 500 when out of memory. */
int rn_jchat_render(const struct mf_jinja *t, const struct rn_jchat_in *in, char **out, size_t *len, char *err,
		    size_t err_size);

/* Appends s[0..n) to the malloc'd render *out of *len bytes (a prefilled assistant message). 0 or -1 (out of
 * memory; *out unchanged). */
int rn_jchat_append(char **out, size_t *len, const char *s, size_t n);

#endif
