/* runner/api/ollama_format.c — Ollama's face of the generation pipeline: /api/chat and /api/generate, their
 * formatter tables (api.ChatResponse / api.GenerateResponse as NDJSON lines, {"error"} bodies) and handlers.
 *
 * Field order and omitempty follow Ollama's api types. What happens between the request and these formatters
 * is runner/api/pipeline.c; the model-management endpoints are in runner/api/ollama.c.
 */
#include "config.h"

#include <string.h>

#include "base/jsonutil.h"
#include "runner/api/api.h"
#include "runner/api/pipeline.h"

/* ---------------------------------------------------------------------------------------------------- */
/* api.ChatResponse, api.GenerateResponse */

static void write_metrics(struct ob_jw *w, const struct rn_infer_emit *e)
{
	ob_jw_omitempty_int(w, "total_duration", e->total_ns);
	ob_jw_omitempty_int(w, "load_duration", e->load_ns);
	ob_jw_omitempty_int(w, "prompt_eval_count", e->prompt_eval_count);
	ob_jw_omitempty_int(w, "prompt_eval_duration", e->prompt_eval_ns);
	ob_jw_omitempty_int(w, "eval_count", e->eval_count);
	ob_jw_omitempty_int(w, "eval_duration", e->eval_ns);
}

/* tool_calls (omitempty): []api.ToolCall */
static void write_tool_calls(struct ob_jw *w, const struct rn_infer_emit *e)
{
	if (!e->n_calls)
		return;
	ob_jw_key(w, "tool_calls");
	ob_jw_arr(w);
	for (size_t i = 0; i < e->n_calls; i++) {
		const struct rn_tool_call *c = &e->calls[i];
		ob_jw_obj(w);
		ob_jw_omitempty_string(w, "id", c->id);
		ob_jw_key(w, "function");
		ob_jw_obj(w);
		ob_jw_key(w, "index");
		ob_jw_int(w, c->index);
		ob_jw_key(w, "name");
		ob_jw_string(w, c->name);
		ob_jw_key(w, "arguments");
		if (c->arguments)
			ob_jw_raw(w, c->arguments, strlen(c->arguments));
		else
			ob_jw_raw(w, "{}", 2);
		ob_jw_obj_end(w);
		ob_jw_obj_end(w);
	}
	ob_jw_arr_end(w);
}

/* The members every response starts with: model, created_at (now) */
static void write_head(struct ob_jw *w, const struct rn_infer_emit *e)
{
	char ts[64];
	ob_jw_obj(w);
	ob_jw_key(w, "model");
	ob_jw_string(w, e->model);
	ob_jw_key(w, "created_at");
	ob_jw_string(w, rn_http_rfc3339_now(ts, sizeof ts));
}

/* logprobs (omitempty): []api.Logprob */
static void write_logprobs(struct ob_jw *w, const struct rn_infer_emit *e)
{
	if (!e->logprobs || !e->n_lp)
		return;
	ob_jw_key(w, "logprobs");
	rn_infer_write_logprobs(w, e, RN_INFER_LP_OLLAMA);
}

/* done, and done_reason (omitempty) once done */
static void write_done(struct ob_jw *w, const struct rn_infer_emit *e)
{
	ob_jw_key(w, "done");
	ob_jw_bool(w, e->done);
	if (e->done)
		ob_jw_omitempty_string(w, "done_reason", e->done_reason);
}

/* ---------------------------------------------------------------------------------------------------- */
/* the formatter tables: the same object streamed (one NDJSON line per emission) or whole */

/* api.ChatResponse */
static void chat_whole(void *state, const struct rn_infer_emit *e, struct ob_jw *w)
{
	(void)state;
	write_head(w, e);
	ob_jw_key(w, "message");
	ob_jw_obj(w);
	ob_jw_key(w, "role");
	ob_jw_string(w, "assistant");
	ob_jw_key(w, "content");
	ob_jw_stringn(w, e->content ? e->content : "", e->content_len);
	ob_jw_omitempty_stringn(w, "thinking", e->thinking, e->thinking_len);
	write_tool_calls(w, e);
	ob_jw_obj_end(w);
	write_done(w, e);
	write_logprobs(w, e);
	write_metrics(w, e);
	ob_jw_obj_end(w);
}

static void chat_chunk(void *state, const struct rn_infer_emit *e, struct ob_jw *w, struct ob_buf *out)
{
	chat_whole(state, e, w);
	rn_infer_put_line(out, w);
}

/* api.GenerateResponse */
static void generate_whole(void *state, const struct rn_infer_emit *e, struct ob_jw *w)
{
	(void)state;
	write_head(w, e);
	ob_jw_key(w, "response");
	ob_jw_stringn(w, e->content ? e->content : "", e->content_len);
	ob_jw_omitempty_stringn(w, "thinking", e->thinking, e->thinking_len);
	write_done(w, e);
	if (e->n_context) {
		ob_jw_key(w, "context");
		ob_jw_arr(w);
		for (size_t i = 0; i < e->n_context; i++)
			ob_jw_int(w, e->context[i]);
		ob_jw_arr_end(w);
	}
	write_metrics(w, e);
	write_tool_calls(w, e);
	write_logprobs(w, e);
	ob_jw_obj_end(w);
}

static void generate_chunk(void *state, const struct rn_infer_emit *e, struct ob_jw *w, struct ob_buf *out)
{
	generate_whole(state, e, w);
	rn_infer_put_line(out, w);
}

/* after streaming started: a last {"error": msg} line */
static void stream_error(void *state, const char *msg, struct ob_jw *jw, struct ob_buf *out)
{
	(void)state;
	ob_jw_obj(jw);
	ob_jw_key(jw, "error");
	ob_jw_string(jw, msg);
	ob_jw_obj_end(jw);
	rn_infer_put_line(out, jw);
}

/* _debug_render_only: an empty, not-done response with _debug_info.rendered_template */
static void rendered(void *state, const struct rn_infer_emit *e, const char *prompt, size_t len, bool chat,
		     struct ob_jw *w)
{
	(void)state;
	write_head(w, e);
	if (chat) {
		ob_jw_key(w, "message");
		ob_jw_raw(w, "{\"role\":\"\",\"content\":\"\"}", 24);
	} else {
		ob_jw_key(w, "response");
		ob_jw_string(w, "");
	}
	ob_jw_key(w, "done");
	ob_jw_bool(w, false);
	rn_infer_write_debug_info(w, prompt, len);
	ob_jw_obj_end(w);
}

static const struct rn_infer_face chat_face = {
	.stream_type = "application/x-ndjson",
	.chunk = chat_chunk,
	.whole = chat_whole,
	.error = rn_api_respond_error,
	.stream_error = stream_error,
	.rendered = rendered,
};

static const struct rn_infer_face generate_face = {
	.stream_type = "application/x-ndjson",
	.generate_context = true,
	.chunk = generate_chunk,
	.whole = generate_whole,
	.error = rn_api_respond_error,
	.stream_error = stream_error,
	.rendered = rendered,
};

/* ---------------------------------------------------------------------------------------------------- */
/* the routes */

void rn_api_chat(struct rn_http_req *r)
{
	size_t len;
	const char *body = rn_http_req_body(r, &len);
	rn_infer_run(r, RN_INF_CHAT, body, len, &chat_face, NULL);
}

void rn_api_generate(struct rn_http_req *r)
{
	size_t len;
	const char *body = rn_http_req_body(r, &len);
	rn_infer_run(r, RN_INF_GENERATE, body, len, &generate_face, NULL);
}
