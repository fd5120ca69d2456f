/* runner/api/pipeline.h — the inference path shared by /api/chat, /api/generate and the OpenAI /v1
 * endpoints: decode the request (Go rules), resolve the model, check capabilities, merge options, acquire a
 * runner, render the prompt with the model's template (history truncation as Ollama's chatPrompt), tokenize,
 * queue the job, then stream what the engine produces through the thinking and tool-call parsers to the
 * client — one NDJSON line (or one SSE event) per token, written the moment it is ready.
 */
#ifndef ORUN_RUNNER_API_PIPELINE_H
#define ORUN_RUNNER_API_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/json.h"
#include "runner/server/http.h"
#include "runner/api/parsers.h"

enum rn_infer_kind { RN_INF_CHAT, RN_INF_GENERATE };
enum rn_infer_out { RN_OUT_OLLAMA, RN_OUT_OPENAI };

/* What the OpenAI layer adds to a native request. */
struct rn_oai_opts {
	bool stream;        /* OpenAI's stream (default false) */
	bool include_usage; /* stream_options.include_usage */
	char id[32];        /* "chatcmpl-N" / "cmpl-N" */
};

/* Runs a chat (kind CHAT, body = api.ChatRequest) or a generate (kind GENERATE, body = api.GenerateRequest)
 * and answers r. With out == RN_OUT_OPENAI the body is the converted native request and oai says how to
 * shape the answer. */
void rn_infer_run(struct rn_http_req *r, enum rn_infer_kind kind, const char *body, size_t len, enum rn_infer_out out,
		  const struct rn_oai_opts *oai);

/* OpenAI error body {"error":{"message","type","param":null,"code":null}} with the type for the status. */
void rn_oai_respond_error(struct rn_http_req *r, int status, const char *msg);

/* ---------------------------------------------------------------------------------------------------- */
/* What one emission carries (for the formatters). */

struct rn_infer_emit {
	const char *content;
	size_t content_len;
	const char *thinking;
	size_t thinking_len;
	const struct rn_tool_call *calls;
	size_t n_calls;
	bool done;
	const char *done_reason; /* "stop" | "length" (final only) */
	int64_t total_ns, load_ns, prompt_eval_count, prompt_eval_ns, eval_count, eval_ns;
	const int32_t *context;  /* generate's context (final, not raw) */
	size_t n_context;
	const char *model;       /* the model name as requested */
	int64_t created_unix;    /* for OpenAI chunks: the stream's created value */
};

/* OpenAI formatters (runner/api/openai.c). `first` tells whether the role chunk is still due; tool_sent
 * records whether a tool call went out (finish_reason tool_calls). Output goes to out as complete SSE events. */
void rn_oai_chat_chunk(const struct rn_oai_opts *o, const struct rn_infer_emit *e, bool *first, bool *tool_sent,
		       struct ob_buf *out);
void rn_oai_chat_whole(const struct rn_oai_opts *o, const struct rn_infer_emit *e, struct ob_jw *w);
void rn_oai_completion_chunk(const struct rn_oai_opts *o, const struct rn_infer_emit *e, struct ob_buf *out);
void rn_oai_completion_whole(const struct rn_oai_opts *o, const struct rn_infer_emit *e, struct ob_jw *w);

#endif
