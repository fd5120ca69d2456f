/* runner/api/ollama_format.c — Ollama's face of the generation pipeline: /api/chat and /api/generate, their
 * formatter tables (api.ChatResponse / api.GenerateResponse as NDJSON lines, {"error"} bodies) and handlers.
 *
 * Field order and omitempty follow Ollama's api types. What happens between the request and these formatters
 * is runner/api/pipeline.c; the model-management endpoints are in runner/api/ollama.c.
 */
#include "config.h"

#include <string.h>

#include "runner/api/api.h"
#include "runner/api/pipeline.h"

/* ---------------------------------------------------------------------------------------------------- */
/* api.ChatResponse, api.GenerateResponse */

static void write_metrics(struct ob_jw *w, const struct rn_infer_emit *e)
{
	if (e->total_ns) {
		ob_jw_key(w, "total_duration");
		ob_jw_int(w, e->total_ns);
	}
	if (e->load_ns) {
		ob_jw_key(w, "load_duration");
		ob_jw_int(w, e->load_ns);
	}
	if (e->prompt_eval_count) {
		ob_jw_key(w, "prompt_eval_count");
		ob_jw_int(w, e->prompt_eval_count);
	}
	if (e->prompt_eval_ns) {
		ob_jw_key(w, "prompt_eval_duration");
		ob_jw_int(w, e->prompt_eval_ns);
	}
	if (e->eval_count) {
		ob_jw_key(w, "eval_count");
		ob_jw_int(w, e->eval_count);
	}
	if (e->eval_ns) {
		ob_jw_key(w, "eval_duration");
		ob_jw_int(w, e->eval_ns);
	}
}

static void write_tool_calls(struct ob_jw *w, const struct rn_tool_call *c, size_t n)
{
	ob_jw_arr(w);
	for (size_t i = 0; i < n; i++) {
		ob_jw_obj(w);
		if (c[i].id[0]) {
			ob_jw_key(w, "id");
			ob_jw_string(w, c[i].id);
		}
		ob_jw_key(w, "function");
		ob_jw_obj(w);
		ob_jw_key(w, "index");
		ob_jw_int(w, c[i].index);
		ob_jw_key(w, "name");
		ob_jw_string(w, c[i].name);
		ob_jw_key(w, "arguments");
		if (c[i].arguments)
			ob_jw_raw(w, c[i].arguments, strlen(c[i].arguments));
		else
			ob_jw_raw(w, "{}", 2);
		ob_jw_obj_end(w);
		ob_jw_obj_end(w);
	}
	ob_jw_arr_end(w);
}

/* api.ChatResponse */
static void write_chat_response(struct ob_jw *w, const struct rn_infer_emit *e)
{
	char ts[64];
	ob_jw_obj(w);
	ob_jw_key(w, "model");
	ob_jw_string(w, e->model);
	ob_jw_key(w, "created_at");
	ob_jw_string(w, rn_http_rfc3339_now(ts, sizeof ts));
	ob_jw_key(w, "message");
	ob_jw_obj(w);
	ob_jw_key(w, "role");
	ob_jw_string(w, "assistant");
	ob_jw_key(w, "content");
	ob_jw_stringn(w, e->content ? e->content : "", e->content_len);
	if (e->thinking_len) {
		ob_jw_key(w, "thinking");
		ob_jw_stringn(w, e->thinking, e->thinking_len);
	}
	if (e->n_calls) {
		ob_jw_key(w, "tool_calls");
		write_tool_calls(w, e->calls, e->n_calls);
	}
	ob_jw_obj_end(w);
	ob_jw_key(w, "done");
	ob_jw_bool(w, e->done);
	if (e->done && e->done_reason && *e->done_reason) {
		ob_jw_key(w, "done_reason");
		ob_jw_string(w, e->done_reason);
	}
	write_metrics(w, e);
	ob_jw_obj_end(w);
}

/* api.GenerateResponse */
static void write_generate_response(struct ob_jw *w, const struct rn_infer_emit *e)
{
	char ts[64];
	ob_jw_obj(w);
	ob_jw_key(w, "model");
	ob_jw_string(w, e->model);
	ob_jw_key(w, "created_at");
	ob_jw_string(w, rn_http_rfc3339_now(ts, sizeof ts));
	ob_jw_key(w, "response");
	ob_jw_stringn(w, e->content ? e->content : "", e->content_len);
	if (e->thinking_len) {
		ob_jw_key(w, "thinking");
		ob_jw_stringn(w, e->thinking, e->thinking_len);
	}
	ob_jw_key(w, "done");
	ob_jw_bool(w, e->done);
	if (e->done && e->done_reason && *e->done_reason) {
		ob_jw_key(w, "done_reason");
		ob_jw_string(w, e->done_reason);
	}
	if (e->n_context) {
		ob_jw_key(w, "context");
		ob_jw_arr(w);
		for (size_t i = 0; i < e->n_context; i++)
			ob_jw_int(w, e->context[i]);
		ob_jw_arr_end(w);
	}
	write_metrics(w, e);
	if (e->n_calls) {
		ob_jw_key(w, "tool_calls");
		write_tool_calls(w, e->calls, e->n_calls);
	}
	ob_jw_obj_end(w);
}

/* ---------------------------------------------------------------------------------------------------- */
/* the formatter tables */

static void chat_chunk(void *state, const struct rn_infer_emit *e, struct ob_jw *jw, struct ob_buf *out)
{
	(void)state;
	write_chat_response(jw, e);
	rn_infer_put_line(out, jw);
}

static void chat_whole(void *state, const struct rn_infer_emit *e, struct ob_jw *jw)
{
	(void)state;
	write_chat_response(jw, e);
}

static void generate_chunk(void *state, const struct rn_infer_emit *e, struct ob_jw *jw, struct ob_buf *out)
{
	(void)state;
	write_generate_response(jw, e);
	rn_infer_put_line(out, jw);
}

static void generate_whole(void *state, const struct rn_infer_emit *e, struct ob_jw *jw)
{
	(void)state;
	write_generate_response(jw, e);
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

static void error_body(struct rn_http_req *r, int status, const char *msg)
{
	rn_http_respond_error(r, status, msg);
}

/* _debug_render_only: an empty, not-done response with _debug_info.rendered_template */
static void rendered(void *state, const struct rn_infer_emit *e, const char *prompt, size_t len, bool chat,
		     struct ob_jw *w)
{
	(void)state;
	char ts[64];
	ob_jw_obj(w);
	ob_jw_key(w, "model");
	ob_jw_string(w, e->model);
	ob_jw_key(w, "created_at");
	ob_jw_string(w, rn_http_rfc3339_now(ts, sizeof ts));
	if (chat) {
		ob_jw_key(w, "message");
		ob_jw_raw(w, "{\"role\":\"\",\"content\":\"\"}", 24);
	} else {
		ob_jw_key(w, "response");
		ob_jw_string(w, "");
	}
	ob_jw_key(w, "done");
	ob_jw_bool(w, false);
	ob_jw_key(w, "_debug_info");
	ob_jw_obj(w);
	ob_jw_key(w, "rendered_template");
	ob_jw_stringn(w, prompt, len);
	ob_jw_obj_end(w);
	ob_jw_obj_end(w);
}

static const struct rn_infer_face chat_face = {
	.stream_type = "application/x-ndjson",
	.chunk = chat_chunk,
	.whole = chat_whole,
	.error = error_body,
	.stream_error = stream_error,
	.rendered = rendered,
};

static const struct rn_infer_face generate_face = {
	.stream_type = "application/x-ndjson",
	.generate_context = true,
	.chunk = generate_chunk,
	.whole = generate_whole,
	.error = error_body,
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
