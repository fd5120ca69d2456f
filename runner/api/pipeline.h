/* runner/api/pipeline.h — the generation path every face shares: Ollama's /api/chat and /api/generate,
 * OpenAI's /v1/chat/completions and /v1/completions, llama-server's /completion and /v1/chat/completions.
 *
 * A request goes through steps, each a function of runner/api/pipeline.c: decode (Go rules) → resolve the
 * model → options → schedule (acquire a runner) → render the prompt → submit the job → stream. One request
 * context owns everything a step allocates and frees it once. A face plugs in with a table of formatters
 * (struct rn_infer_face): the pipeline never names a face's functions, and a face never sees the context.
 * The Ollama and OpenAI faces run every step (rn_infer_run); llama-server decodes, renders and tokenizes
 * itself and runs only submit and stream (rn_infer_tokens).
 *
 * Streaming: each token's text goes through the thinking and tool-call parsers, then the face's chunk
 * formatter, and out as one HTTP chunk through runner/server/stream.h the moment it is ready: on the engine's
 * thread (a job sink) once the headers are out, on the connection's thread for the first and the last piece
 * and after a short write. runner/README.md draws it, with the measurement that chose the engine's thread.
 */
#ifndef ORUN_RUNNER_API_PIPELINE_H
#define ORUN_RUNNER_API_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/json.h"
#include "runner/api/api.h"
#include "runner/api/parsers.h"

enum rn_infer_kind { RN_INF_CHAT, RN_INF_GENERATE };

#define RN_INFER_FACE_STATE_MAX 128 /* bytes of a face's per-request state (struct rn_infer_face.state_size) */

/* What one emission carries to a formatter. Strings are borrowed for the call. */
struct rn_infer_emit {
	const char *content;
	size_t content_len;
	const char *thinking;
	size_t thinking_len;
	const struct rn_tool_call *calls;
	size_t n_calls;
	bool done;
	const char *done_reason; /* "stop" | "length" | "load" | "unload" (final only) */
	enum rn_done_reason reason;              /* final only */
	const struct rn_engine_stats *stats;     /* final only; NULL in load/unload replies */
	int64_t total_ns, load_ns, prompt_eval_count, prompt_eval_ns, eval_count, eval_ns;
	const int32_t *context;  /* generate's context (final, not raw) */
	size_t n_context;
	const char *model;       /* the model name as requested */
	int64_t created_unix;    /* when the request arrived (OpenAI's `created`) */
	size_t n_prompt_tokens;  /* tokens of the submitted prompt */
	int slot;                /* the engine slot the request ran in (llama-server's id_slot); -1: none */
	/* logprobs requested: the entries of the tokens this emission covers (streamed: since the last
	 * emission; whole: all), and the tokenizer for their text (rn_infer_logprob_text) */
	bool logprobs;
	const struct rn_logprob *lp;
	size_t n_lp;
	const struct rn_tok *tok;
};

/* A face's formatters. `state` is the face's per-request state: state_size bytes (at most
 * RN_INFER_FACE_STATE_MAX, plain data) copied from what the face passed in, kept with the request and given
 * to every call; the formatters of one request never run at the same time. `jw` is a scratch JSON writer
 * (flags jw_flags, reset before the call; the formatter may reset and reuse it): no allocation per token. */
struct rn_infer_face {
	const char *stream_type; /* Content-Type of a streamed answer */
	const char *whole_type;  /* Content-Type of a whole answer; NULL: gin's JSON type */
	unsigned jw_flags;       /* OB_JW_* */
	bool generate_context;   /* a generate's final emission carries `context` (the prompt's and answer's ids) */
	size_t state_size;
	/* One streamed emission as complete wire units (an NDJSON line, SSE events) appended to out; the final
	 * emission (e->done) carries the end markers too. Runs on the engine's or the connection's thread. */
	void (*chunk)(void *state, const struct rn_infer_emit *e, struct ob_jw *jw, struct ob_buf *out);
	/* The whole answer of a request that does not stream (the accumulated text, every tool call), or the
	 * reply to a load/unload request (e->stats NULL, done_reason "load"/"unload"), into jw. */
	void (*whole)(void *state, const struct rn_infer_emit *e, struct ob_jw *jw);
	/* An error before any output: the face's error body with this status. */
	void (*error)(struct rn_http_req *r, int status, const char *msg);
	/* An error after streaming began, as a last wire unit; NULL: cut the connection instead. */
	void (*stream_error)(void *state, const char *msg, struct ob_jw *jw, struct ob_buf *out);
	/* _debug_render_only: the answer that carries the rendered prompt (e: model and time only); NULL where
	 * the face has none. */
	void (*rendered)(void *state, const struct rn_infer_emit *e, const char *prompt, size_t len, bool chat,
			 struct ob_jw *jw);
};

/* For formatters: appends jw's JSON to out as one SSE event ("data: <json>\n\n") or one NDJSON line
 * ("<json>\n"); out is marked failed when jw failed. */
void rn_infer_put_sse(struct ob_buf *out, const struct ob_jw *jw);
void rn_infer_put_line(struct ob_buf *out, const struct ob_jw *jw);
/* For formatters: e's tool calls as OpenAI writes them, [{"id", "index" (with_index), "type":"function",
 * "function":{"name", "arguments": the JSON text as a string}}]. */
void rn_infer_write_tool_calls(struct ob_jw *jw, const struct rn_infer_emit *e, bool with_index);
/* For formatters: the text of token id as a single piece (special tokens as their text), or "" when it has
 * none. Borrowed from the tokenizer. */
const char *rn_infer_logprob_text(const struct rn_infer_emit *e, int32_t id, size_t *len);
/* For formatters: e's logprob entries as a JSON array. Ollama's []api.Logprob (also its OpenAI face's
 * logprobs.content): [{"token","logprob","bytes"?,"top_logprobs"?:[{"token","logprob","bytes"?}]}] with Go's
 * omitempty; llama-server's (completion_probabilities, and logprobs.content of its chat): [{"id","token",
 * "bytes","logprob","top_logprobs":[{"id","token","bytes","logprob"}]}], every member present. A -inf
 * logprob is written as -9999 (JSON has no infinity; OpenAI's own floor for "improbable"). */
enum rn_infer_lp_shape { RN_INFER_LP_OLLAMA, RN_INFER_LP_LLAMA };
void rn_infer_write_logprobs(struct ob_jw *jw, const struct rn_infer_emit *e, enum rn_infer_lp_shape shape);
/* For formatters: an OpenAI-style choice's member "logprobs":{"content":[entries in `shape`]}, when logprobs
 * were asked and e has entries (else nothing: Go's omitempty). */
void rn_infer_write_choice_logprobs(struct ob_jw *jw, const struct rn_infer_emit *e, enum rn_infer_lp_shape shape);
/* For `rendered` formatters: the member "_debug_info":{"rendered_template":prompt} of Ollama's debug render
 * answer (the Ollama and OpenAI faces both send it). */
void rn_infer_write_debug_info(struct ob_jw *jw, const char *prompt, size_t len);

/* Runs every step for a chat (kind CHAT, body = api.ChatRequest) or a generate (kind GENERATE, body =
 * api.GenerateRequest) and answers r in face's format. state: the face's initial per-request state. */
void rn_infer_run(struct rn_http_req *r, enum rn_infer_kind kind, const char *body, size_t len,
		  const struct rn_infer_face *face, const void *state);

/* The output parser a face that renders its own prompt with a Jinja chat template asks for (all borrowed for
 * the call): runner/chatfmt's parser of the format chat_template's text selects (as llama-server selects
 * it), tool calls for the functions of `tools` (a "tools" array; NULL or empty: none), reasoning an enum
 * rn_chatfmt_reasoning (--reasoning-format), started inside thinking when prompt ends in an opened thinking
 * block. chat_template NULL: the text as generated. */
struct rn_infer_parsers {
	const char *chat_template;
	size_t chat_template_len;
	const char *prompt;
	size_t prompt_len;
	const struct ob_json *tools;
	int reasoning;
	bool thinking; /* the model is asked to think: a grammar (rq->grammar) applies after the format's closing
			* thinking tag */
};

/* Runs the submit and stream steps for a prompt the face tokenized itself, on a runner the caller holds (not
 * released here): rq gives sampling, limits, stop strings and grammar (its prompt is set here; the grammar text
 * is copied, the scheduler copies the rest of what it keeps). Takes over tokens (malloc'd). model: the name to echo (copied). parsers: NULL for the text
 * as generated. */
void rn_infer_tokens(struct rn_http_req *r, struct rn_api *api, struct rn_runner *runner, struct rn_request *rq,
		     int32_t *tokens, size_t n_tokens, bool stream, const char *model, const struct rn_infer_face *face,
		     const void *state, const struct rn_infer_parsers *parsers);

#endif
