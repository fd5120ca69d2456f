/* runner/api/pipeline.c — a generation request from the decoded body to the last streamed byte, in steps:
 * decode → resolve the model → options → schedule → render → submit → stream.
 *
 * Follows Ollama's ChatHandler / GenerateHandler step by step (checks and their order, messages, option
 * precedence, think defaults, history truncation, thinking/tool parsing, final metrics). Every step returns
 * STEP_NEXT, STEP_ANSWERED (its reply is out) or STEP_FAILED (status and message in the context, answered once
 * by the face's error formatter); the context (struct rn_infer) owns what the steps allocate and
 * infer_free releases it. Output is shaped only by the face's formatter table. `format` becomes the request's
 * grammar (runner/api/structured.h), switched on after the closing thinking tag when the model thinks. Not
 * supported yet, with a clear error: images (no vision engine).
 */
#include "config.h"

#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonutil.h"
#include "modelfile/name.h"
#include "modelfile/params.h"
#include "modelfile/template.h"
#include "runner/api/decode.h"
#include "runner/api/jinja_chat.h"
#include "runner/api/pipeline.h"
#include "runner/api/stored_model.h"
#include "runner/api/structured.h"
#include "runner/chatfmt/chatfmt.h"
#include "runner/server/stream.h"
#include "runner/tokenizer/tokenizer.h"

#define MAX_CHAT_MESSAGES 100000 /* messages in one request (model history included) */

enum { STEP_FAILED = -1, STEP_NEXT = 0, STEP_ANSWERED = 1 };

struct think_val {
	bool set;      /* the request (or the default) gave think */
	bool on;       /* think.Bool() */
	char level[8]; /* think.String(): "low" | "medium" | "high" | "max" | "" */
};

/* The request as decoded: views into the context's JSON document, except msgs. */
struct infer_in {
	const struct ob_json *root;
	const char *model;
	size_t model_len; /* model may hold a NUL (an invalid name, issue 20 F4) */
	bool stream, truncate, shift, logprobs, debug_render, raw;
	int64_t top_logprobs;
	int64_t keep_alive;
	const struct ob_json *opts, *tools, *messages, *context;
	const struct ob_json *format; /* NULL: absent or null */
	const char *body;             /* the raw body, for format's raw bytes: valid during rn_infer_run only */
	size_t body_len;
	const char *prompt, *suffix, *system, *tmpl;
	struct think_val think;
	struct mf_tpl_messages *msgs; /* the chat's messages, converted (owned) */
	bool empty;                   /* no messages / no prompt: a load or unload request */
};

struct rn_infer {
	struct rn_http_req *r;
	struct rn_api *api;
	enum rn_infer_kind kind;
	const struct rn_infer_face *face;
	alignas(max_align_t) unsigned char state[RN_INFER_FACE_STATE_MAX]; /* the face's per-request state */
	int64_t t_start, t_loaded, created_unix;
	struct ob_json_doc *doc;
	struct infer_in in;
	char *model_name; /* as requested, echoed in responses */
	struct rn_srv_model *sm;
	struct rn_runner *runner;
	bool runner_held; /* acquired by the schedule step: released by infer_free */
	struct rn_job *job;
	bool stream, raw, had_tools, want_context;
	bool use_think;
	struct rn_think think;
	bool use_tools;
	struct rn_tools tools;
	struct rn_chatfmt *cf; /* a Jinja-template model's output parser (replaces think and tools) */
	enum rn_chatfmt_kind cf_kind;
	char *grammar;             /* the request's GBNF (format, response_format, grammar, json_schema), or NULL */
	const char *grammar_after; /* the closing thinking tag that switches it on (static or sm's), or NULL */
	char *prompt;
	size_t prompt_len;
	int32_t *tokens;
	size_t n_tokens;
	struct mf_options opts;
	/* accumulation */
	struct ob_buf acc_content, acc_thinking, gen_text;
	struct ob_buf acc_lp; /* struct rn_logprob entries not yet emitted (whole: all of them) */
	struct rn_tool_call *calls;
	size_t n_calls;
	/* output; per-token scratch kept across events (no allocation per token once grown) */
	struct ob_buf line;
	struct ob_buf th, co, co2;
	struct ob_jw jw;
	struct rn_stream *w; /* a streamed answer's writer; owned here until started, then it owns the context */
	bool started;
	bool finished, any_output;
	int err_status;
	char err_msg[1024];
	/* metrics */
	int64_t t_last_out;
	bool in_flight;
	bool rq_logprobs; /* the submitted request asked for logprobs */
};

static void infer_free(struct rn_infer *I)
{
	if (!I)
		return;
	rn_job_free(I->job);
	if (I->runner_held)
		rn_sched_release(I->api->sched, I->runner);
	if (I->in_flight)
		rn_metrics_in_flight(I->api->metrics, -1);
	if (I->use_think)
		rn_think_free(&I->think);
	if (I->use_tools)
		rn_tools_free(&I->tools);
	rn_chatfmt_free(I->cf);
	free(I->grammar);
	rn_tool_calls_free(I->calls, I->n_calls);
	ob_buf_free(&I->acc_content);
	ob_buf_free(&I->acc_thinking);
	ob_buf_free(&I->acc_lp);
	ob_buf_free(&I->gen_text);
	ob_buf_free(&I->line);
	ob_buf_free(&I->th);
	ob_buf_free(&I->co);
	ob_buf_free(&I->co2);
	ob_jw_free(&I->jw);
	if (!I->started)
		rn_stream_free(I->w);
	mf_options_free(&I->opts);
	free(I->prompt);
	free(I->tokens);
	free(I->model_name);
	mf_tpl_messages_free(I->in.msgs);
	rn_srv_model_free(I->sm);
	ob_json_free(I->doc);
	free(I);
}

static struct rn_infer *infer_new(struct rn_http_req *r, struct rn_api *api, enum rn_infer_kind kind,
				  const struct rn_infer_face *face, const void *state)
{
	struct rn_infer *I = calloc(1, sizeof *I);
	if (!I)
		return NULL;
	I->r = r;
	I->api = api;
	I->kind = kind;
	I->face = face;
	if (face->state_size)
		memcpy(I->state, state, face->state_size < sizeof I->state ? face->state_size : sizeof I->state);
	I->t_start = rn_http_req_start_ns(r);
	I->created_unix = rn_http_wall_ns() / 1000000000LL;
	mf_options_init(&I->opts);
	ob_buf_init(&I->acc_content, 0);
	ob_buf_init(&I->acc_thinking, 0);
	ob_buf_init(&I->acc_lp, 0);
	ob_buf_init(&I->gen_text, 0);
	ob_buf_init(&I->line, 0);
	ob_buf_init(&I->th, RN_PARSE_MAX_BUFFER);
	ob_buf_init(&I->co, RN_PARSE_MAX_BUFFER);
	ob_buf_init(&I->co2, RN_PARSE_MAX_BUFFER);
	ob_jw_init(&I->jw, 0, face->jw_flags);
	return I;
}

/* Records why the request failed (answered once, by the face, when the steps stop). */
static int fail(struct rn_infer *I, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct rn_infer *I, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(I->err_msg, sizeof I->err_msg, fmt, ap);
	va_end(ap);
	I->err_status = status;
	return STEP_FAILED;
}

static bool infer_gone(void *ctx)
{
	struct rn_infer *I = ctx;
	return atomic_load(&I->api->stopping) || rn_http_req_client_gone(I->r);
}

/* Empties a scratch buffer for the next event, keeping its allocation. */
static struct ob_buf *scratch(struct ob_buf *b)
{
	ob_buf_reset(b);
	b->failed = false;
	b->over = false;
	return b;
}

static struct ob_jw *scratch_jw(struct rn_infer *I)
{
	ob_jw_reset(&I->jw);
	return &I->jw;
}

static void put_framed(struct ob_buf *out, const struct ob_jw *jw, const char *before, const char *after)
{
	const char *s = ob_jw_str(jw);
	if (!s) {
		out->failed = true;
		return;
	}
	ob_buf_puts(out, before);
	ob_buf_append(out, s, jw->len);
	ob_buf_puts(out, after);
}

void rn_infer_put_sse(struct ob_buf *out, const struct ob_jw *jw)
{
	put_framed(out, jw, "data: ", "\n\n");
}

void rn_infer_put_line(struct ob_buf *out, const struct ob_jw *jw)
{
	put_framed(out, jw, "", "\n");
}

const char *rn_infer_logprob_text(const struct rn_infer_emit *e, int32_t id, size_t *len)
{
	const char *p = NULL;
	if (!e->tok || rn_tok_piece(e->tok, id, true, &p, len) != RN_TOK_OK || !p) {
		*len = 0;
		return "";
	}
	return p;
}

/* one entry's members (the object is open) */
static void write_token_logprob(struct ob_jw *w, const struct rn_infer_emit *e, int32_t id, float lp,
				enum rn_infer_lp_shape shape)
{
	size_t n;
	const char *t = rn_infer_logprob_text(e, id, &n);
	bool llama = shape == RN_INFER_LP_LLAMA;
	if (llama) {
		ob_jw_key(w, "id");
		ob_jw_int(w, id);
	}
	ob_jw_key(w, "token");
	ob_jw_stringn(w, t, n);
	if (!llama) {
		ob_jw_key(w, "logprob");
		ob_jw_float64(w, lp < -9999.0f ? -9999.0 : (double)lp);
	}
	if (n || llama) {
		ob_jw_key(w, "bytes");
		ob_jw_arr(w);
		for (size_t i = 0; i < n; i++)
			ob_jw_int(w, (unsigned char)t[i]);
		ob_jw_arr_end(w);
	}
	if (llama) {
		ob_jw_key(w, "logprob");
		ob_jw_float64(w, lp < -9999.0f ? -9999.0 : (double)lp);
	}
}

void rn_infer_write_logprobs(struct ob_jw *w, const struct rn_infer_emit *e, enum rn_infer_lp_shape shape)
{
	ob_jw_arr(w);
	for (size_t i = 0; i < e->n_lp; i++) {
		const struct rn_logprob *lp = &e->lp[i];
		ob_jw_obj(w);
		write_token_logprob(w, e, lp->token, lp->logprob, shape);
		if (lp->n_top || shape == RN_INFER_LP_LLAMA) {
			ob_jw_key(w, "top_logprobs");
			ob_jw_arr(w);
			for (int j = 0; j < lp->n_top; j++) {
				ob_jw_obj(w);
				write_token_logprob(w, e, lp->top_token[j], lp->top_logprob[j], shape);
				ob_jw_obj_end(w);
			}
			ob_jw_arr_end(w);
		}
		ob_jw_obj_end(w);
	}
	ob_jw_arr_end(w);
}

void rn_infer_write_choice_logprobs(struct ob_jw *w, const struct rn_infer_emit *e, enum rn_infer_lp_shape shape)
{
	if (!e->logprobs || !e->n_lp)
		return;
	ob_jw_key(w, "logprobs");
	ob_jw_obj(w);
	ob_jw_key(w, "content");
	rn_infer_write_logprobs(w, e, shape);
	ob_jw_obj_end(w);
}

void rn_infer_write_tool_calls(struct ob_jw *w, const struct rn_infer_emit *e, bool with_index)
{
	ob_jw_arr(w);
	for (size_t i = 0; i < e->n_calls; i++) {
		const struct rn_tool_call *c = &e->calls[i];
		ob_jw_obj(w);
		ob_jw_key(w, "id");
		ob_jw_string(w, c->id);
		if (with_index) {
			ob_jw_key(w, "index");
			ob_jw_int(w, c->index);
		}
		ob_jw_key(w, "type");
		ob_jw_string(w, "function");
		ob_jw_key(w, "function");
		ob_jw_obj(w);
		ob_jw_key(w, "name");
		ob_jw_string(w, c->name ? c->name : "");
		ob_jw_key(w, "arguments");
		ob_jw_string(w, c->arguments ? c->arguments : "{}");
		ob_jw_obj_end(w);
		ob_jw_obj_end(w);
	}
	ob_jw_arr_end(w);
}

void rn_infer_write_debug_info(struct ob_jw *jw, const char *prompt, size_t len)
{
	ob_jw_key(jw, "_debug_info");
	ob_jw_obj(jw);
	ob_jw_key(jw, "rendered_template");
	ob_jw_stringn(jw, prompt, len);
	ob_jw_obj_end(jw);
}

/* ---------------------------------------------------------------------------------------------------- */
/* events → emissions → the face's formatters */

static const char *reason_name(enum rn_done_reason r)
{
	return r == RN_DONE_LENGTH ? "length" : "stop";
}

static int append_calls(struct rn_infer *I, struct rn_tool_call *calls, size_t n)
{
	if (!n)
		return 0;
	struct rn_tool_call *v = realloc(I->calls, (I->n_calls + n) * sizeof *v);
	if (!v)
		return -1;
	I->calls = v;
	memcpy(v + I->n_calls, calls, n * sizeof *v);
	I->n_calls += n;
	free(calls); /* the strings moved into I->calls */
	return 0;
}

/* Generate's final `context`: the ids of prompt + generated text, as Ollama re-tokenizes them (llama-server's
 * /tokenize without add_special). *ids is malloc'd, or NULL when it could not be made. */
static void final_context(struct rn_infer *I, int32_t **ids, size_t *n)
{
	struct ob_buf all;
	ob_buf_init(&all, 0);
	ob_buf_append(&all, I->prompt ? I->prompt : "", I->prompt_len);
	ob_buf_append(&all, I->gen_text.p ? I->gen_text.p : "", I->gen_text.len);
	struct rn_tok_error te;
	if (all.failed || rn_tok_encode_alloc(rn_runner_tok(I->runner), all.p ? all.p : "", all.len, false, true, ids,
					      n, &te) != RN_TOK_OK) {
		*ids = NULL;
		*n = 0;
	}
	ob_buf_free(&all);
}

/* Handles one job event: the thinking and tool-call parsers, then (streaming) the face's chunk into I->line,
 * or (not streaming) the accumulated answer and, with the final event, the face's whole answer into I->line.
 * Returns -1 when out of memory. */
static int process_event(struct rn_infer *I, const struct rn_job_event *ev)
{
	bool done = ev->kind == RN_JOB_DONE;
	const char *t = ev->text ? ev->text : "";
	size_t tn = ev->len;
	if (ev->n_logprobs && !ob_buf_append(&I->acc_lp, ev->logprobs, ev->n_logprobs * sizeof *ev->logprobs))
		return -1;
	if (!done && tn == 0)
		return 0; /* a token whose text is still held back (UTF-8, stop-string prefix) */
	if (I->want_context)
		ob_buf_append(&I->gen_text, t, tn);

	struct ob_buf *th = scratch(&I->th), *co = scratch(&I->co);
	struct rn_tool_call *calls = NULL;
	size_t n_calls = 0;
	bool emit = true;

	if (I->cf) {
		if (rn_chatfmt_feed(I->cf, t, tn, co, th, &calls, &n_calls) < 0 ||
		    (done && rn_chatfmt_finish(I->cf, co, th, &calls, &n_calls) < 0))
			goto nomem;
		if (I->kind == RN_INF_CHAT && th->len == 0 && co->len == 0 && n_calls == 0 && !done)
			emit = false;
	} else if (I->use_think) {
		if (rn_think_add(&I->think, t, tn, th, co) < 0)
			goto nomem;
		if (I->kind == RN_INF_CHAT && th->len == 0 && co->len == 0 && !done)
			emit = false;
	} else {
		ob_buf_append(co, t, tn);
	}
	if (emit && I->use_tools) {
		struct ob_buf *c2 = scratch(&I->co2);
		if (rn_tools_add(&I->tools, co->p ? co->p : "", co->len, c2, &calls, &n_calls) < 0)
			goto nomem;
		if (c2->len == 0 && n_calls == 0 && th->len == 0) {
			if (done) {
				if (rn_tools_content(&I->tools, c2) < 0)
					goto nomem;
			} else {
				emit = false;
			}
		}
		co = c2;
	}
	if (!emit)
		return 0;
	if (co->failed || th->failed)
		goto nomem;

	struct rn_infer_emit e = {
		.content = co->p ? co->p : "",
		.content_len = co->len,
		.thinking = th->p ? th->p : "",
		.thinking_len = th->len,
		.calls = calls,
		.n_calls = n_calls,
		.done = done,
		.model = I->model_name,
		.created_unix = I->created_unix,
		.n_prompt_tokens = I->n_tokens,
		.slot = I->job ? rn_job_slot(I->job) : -1,
		.logprobs = I->rq_logprobs,
		.lp = (const struct rn_logprob *)I->acc_lp.p,
		.n_lp = I->acc_lp.len / sizeof(struct rn_logprob),
		.tok = rn_runner_tok(I->runner),
	};
	struct rn_engine_stats st;
	int32_t *ctx = NULL;
	size_t n_ctx = 0;
	if (done) {
		rn_job_result(I->job, &e.reason, &st, NULL);
		int64_t now = rn_http_now_ns();
		e.done_reason = reason_name(e.reason);
		e.stats = &st;
		e.total_ns = now - I->t_start;
		e.load_ns = I->t_loaded - I->t_start;
		e.prompt_eval_count = st.n_prompt;
		e.prompt_eval_ns = st.prompt_ns;
		e.eval_count = st.n_eval;
		e.eval_ns = st.eval_ns;
		rn_metrics_tokens(I->api->metrics, I->model_name, (uint64_t)st.n_prompt, (uint64_t)st.n_eval);
		if (I->want_context) {
			final_context(I, &ctx, &n_ctx);
			e.context = ctx;
			e.n_context = n_ctx;
		}
	}

	if (I->stream) {
		I->face->chunk(I->state, &e, scratch_jw(I), &I->line);
		I->acc_lp.len = 0;
		int64_t now = rn_http_now_ns();
		if (e.content_len || e.thinking_len || e.n_calls) {
			if (!I->any_output)
				rn_metrics_ttft(I->api->metrics, I->model_name, (double)(now - I->t_start) / 1e9);
			else
				rn_metrics_inter_token(I->api->metrics, I->model_name, (double)(now - I->t_last_out) / 1e9);
			I->t_last_out = now;
			I->any_output = true;
			if (I->api->emit_tap && !done)
				I->api->emit_tap(I->api->emit_tap_ctx, rn_http_req_fd(I->r), ev->t_ns, now);
		}
		rn_tool_calls_free(calls, n_calls);
	} else {
		ob_buf_append(&I->acc_content, e.content, e.content_len);
		ob_buf_append(&I->acc_thinking, e.thinking, e.thinking_len);
		int rc = 0;
		if (I->kind == RN_INF_GENERATE || I->had_tools)
			rc = append_calls(I, calls, n_calls);
		else
			rn_tool_calls_free(calls, n_calls);
		if (rc < 0) {
			rn_tool_calls_free(calls, n_calls);
			free(ctx);
			return -1;
		}
		if (done) {
			/* the whole answer, from the accumulated pieces and the final metrics */
			struct rn_infer_emit whole = e;
			whole.content = I->acc_content.p ? I->acc_content.p : "";
			whole.content_len = I->acc_content.len;
			whole.thinking = I->acc_thinking.p ? I->acc_thinking.p : "";
			whole.thinking_len = I->acc_thinking.len;
			whole.calls = I->calls;
			whole.n_calls = I->n_calls;
			struct ob_jw *w = scratch_jw(I);
			I->face->whole(I->state, &whole, w);
			const char *s = ob_jw_str(w);
			if (s)
				ob_buf_append(&I->line, s, w->len);
			else
				I->line.failed = true;
		}
	}
	free(ctx);
	return I->line.failed ? -1 : 0;
nomem:
	rn_tool_calls_free(calls, n_calls);
	return -1;
}

/* One job event, with the final event's outcome: a cancelled job stops (-1); a failed one sets err_status and
 * err_msg and stops, or, once output went out, ends the stream with the face's error unit in I->line. Gives
 * the event back. Returns 0, or -1 to stop. */
static int take_event(struct rn_infer *I, struct rn_job_event *ev)
{
	if (ev->kind == RN_JOB_DONE) {
		I->finished = true;
		enum rn_done_reason reason;
		struct rn_error err;
		rn_job_result(I->job, &reason, NULL, &err);
		if (reason == RN_DONE_CANCEL || reason == RN_DONE_ERROR) {
			rn_job_event_done(I->job, ev);
			if (reason == RN_DONE_CANCEL)
				return -1;
			I->err_status = err.code == RN_ERR_CONTEXT ? 400 : 500;
			snprintf(I->err_msg, sizeof I->err_msg, "%s", err.msg[0] ? err.msg : "generation failed");
			rn_log(&I->api->log, RN_LOG_WARN, "generation failed: %s", I->err_msg);
			if (!(I->stream && I->any_output && I->face->stream_error))
				return -1;
			/* after streaming started: a last error unit */
			I->face->stream_error(I->state, I->err_msg, scratch_jw(I), scratch(&I->line));
			return I->line.failed ? -1 : 0;
		}
	}
	int rc = process_event(I, ev);
	rn_job_event_done(I->job, ev);
	return rc;
}

/* The job's sink, on the engine thread while the connection's thread sleeps in rn_job_next_fd (under the
 * job's lock, so the two never touch the context together): runs the parsers and the face's formatter and
 * writes the token's chunk straight to the socket, so a token reaches the client without waking the
 * connection's thread. A tail the socket did not take is left to the connection's thread (the engine never
 * blocks). */
static enum rn_sink_result infer_sink(void *ctx, const struct rn_job_event *ev)
{
	struct rn_infer *I = ctx;
	if (!rn_stream_direct(I->w))
		return RN_SINK_QUEUE; /* libmicrohttpd has not sent the headers yet */
	if (process_event(I, ev) < 0) {
		I->line.len = 0;
		return RN_SINK_CANCEL;
	}
	if (I->line.len == 0)
		return RN_SINK_DONE; /* text held back (UTF-8, stop string, partial tag) */
	enum rn_stream_status st = rn_stream_write(I->w, I->line.p, I->line.len);
	I->line.len = 0;
	if (st == RN_STREAM_GONE)
		return RN_SINK_CANCEL; /* the client is gone */
	if (st == RN_STREAM_HELD) {
		rn_metrics_backpressure(I->api->metrics);
		return RN_SINK_WAKE;
	}
	return RN_SINK_DONE;
}

/* The stream's producer (connection thread): waits for events until a piece went out (or is held for the
 * writer) or the body is complete. Returns 1, 0 at the end, -1 to cut the connection (err_status set when the
 * generation failed). Also makes the first piece, before the answer starts. */
static int stream_next(void *ctx, struct rn_stream *w)
{
	struct rn_infer *I = ctx;
	for (;;) {
		if (rn_stream_flush(w) < 0)
			return -1; /* the tail of a chunk the engine's thread could not write without blocking */
		if (I->finished)
			return 0;
		struct rn_job_event *ev = rn_job_next_fd(I->job, rn_http_req_fd(I->r), infer_gone, I);
		if (!ev || take_event(I, ev) < 0)
			return -1;
		if (I->line.len == 0)
			continue;
		enum rn_stream_status st = rn_stream_write(w, I->line.p, I->line.len);
		I->line.len = 0;
		if (st == RN_STREAM_GONE)
			return -1;
		if (st == RN_STREAM_HELD && rn_stream_direct(w))
			rn_metrics_backpressure(I->api->metrics);
		return 1;
	}
}

static void stream_close(void *ctx, bool completed)
{
	(void)completed;
	infer_free(ctx);
}

/* A request that does not stream: every event until the final one; the face's whole answer in I->line. */
static int collect_whole(struct rn_infer *I)
{
	while (!I->finished) {
		struct rn_job_event *ev = rn_job_next_fd(I->job, rn_http_req_fd(I->r), infer_gone, I);
		if (!ev || take_event(I, ev) < 0)
			return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------------------------------------------- */
/* options, think, messages */

static void think_from_json(const struct ob_json *v, struct think_val *t, char *err, size_t err_size, bool *bad)
{
	*bad = false;
	memset(t, 0, sizeof *t);
	if (!v || v->type == OB_JSON_NULL)
		return;
	if (v->type == OB_JSON_BOOL) {
		t->set = true;
		t->on = v->boolean;
		snprintf(t->level, sizeof t->level, "%s", v->boolean ? "medium" : "");
		return;
	}
	if (v->type == OB_JSON_STRING) {
		if (strcmp(v->str, "high") && strcmp(v->str, "medium") && strcmp(v->str, "low") && strcmp(v->str, "max")) {
			snprintf(err, err_size,
				 "invalid think value: \"%.100s\" (must be \"high\", \"medium\", \"low\", \"max\", true, or false)",
				 v->str);
			*bad = true;
			return;
		}
		t->set = true;
		t->on = true;
		snprintf(t->level, sizeof t->level, "%s", v->str);
		return;
	}
	snprintf(err, err_size, "think must be a boolean or string (\"high\", \"medium\", \"low\", \"max\", true, or false)");
	*bad = true;
}

/* api.Duration: number = seconds; string = Go duration; negative = forever. */
static int keep_alive_from_json(const struct ob_json *v, int64_t *out, char *err, size_t err_size)
{
	*out = RN_KEEP_ALIVE_UNSET;
	if (!v || v->type == OB_JSON_NULL)
		return 0;
	if (v->type == OB_JSON_NUMBER) {
		if (v->number < 0)
			*out = INT64_MAX;
		else if (v->number * 1e9 >= 9.2e18)
			*out = INT64_MAX;
		else
			*out = (int64_t)(v->number * 1e9);
		return 0;
	}
	if (v->type == OB_JSON_STRING) {
		int64_t ns;
		if (rn_go_parse_duration(v->str, &ns, err, err_size) < 0)
			return -1;
		*out = ns < 0 ? INT64_MAX : ns;
		return 0;
	}
	const char *t = v->type == OB_JSON_BOOL ? "bool" : v->type == OB_JSON_ARRAY ? "[]interface {}" : "map[string]interface {}";
	snprintf(err, err_size, "Unsupported type: '%s'", t);
	return -1;
}

/* A Go %q of s (ASCII-safe enough for model names). */
static void quote(const char *s, char *buf, size_t size)
{
	size_t w = 0;
	if (size < 3)
		return;
	buf[w++] = '"';
	for (; *s && w + 4 < size; s++) {
		if (*s == '"' || *s == '\\')
			buf[w++] = '\\';
		buf[w++] = *s;
	}
	buf[w++] = '"';
	buf[w] = 0;
}

/* Model messages + request messages, with the model's SYSTEM in front when the first request message is not
 * a system message (and, for qwen3 / deepseek-r1, <think> blocks stripped from earlier assistant turns). */
struct msg_list {
	struct mf_tpl_message *v;
	size_t n;
	char **owned; /* strings allocated here */
	size_t n_owned;
};

static void msg_list_free(struct msg_list *l)
{
	for (size_t i = 0; i < l->n_owned; i++)
		free(l->owned[i]);
	free(l->owned);
	free(l->v);
	memset(l, 0, sizeof *l);
}

static char *own(struct msg_list *l, char *s)
{
	if (!s)
		return NULL;
	char **o = realloc(l->owned, (l->n_owned + 1) * sizeof *o);
	if (!o) {
		free(s);
		return NULL;
	}
	l->owned = o;
	o[l->n_owned++] = s;
	return s;
}

static struct mf_tpl_str str_of(const char *s)
{
	struct mf_tpl_str r = {s ? s : "", s ? strlen(s) : 0};
	return r;
}

static int build_messages(const struct rn_srv_model *sm, const struct mf_tpl_message *req, size_t n_req,
			  const char *system_override, bool add_system, struct msg_list *out)
{
	const struct mf_model *m = sm->m;
	size_t total = n_req + m->n_messages + 1;
	if (total > MAX_CHAT_MESSAGES)
		return -1;
	out->v = calloc(total, sizeof *out->v);
	if (!out->v)
		return -1;
	const char *sys = system_override && *system_override ? system_override : m->system;
	if (add_system && sys && *sys) {
		out->v[out->n].role = str_of("system");
		out->v[out->n].content = str_of(sys);
		out->n++;
	}
	for (size_t i = 0; i < m->n_messages; i++) {
		out->v[out->n].role = str_of(m->messages[i].role);
		out->v[out->n].content = str_of(m->messages[i].content);
		out->n++;
	}
	for (size_t i = 0; i < n_req; i++)
		out->v[out->n++] = req[i];
	/* filterThinkTags */
	if (strcmp(m->config.model_family, "qwen3") == 0 || strcmp(m->name.model, "deepseek-r1") == 0) {
		long last_user = -1;
		for (size_t i = 0; i < out->n; i++)
			if (out->v[i].role.n == 4 && memcmp(out->v[i].role.p, "user", 4) == 0)
				last_user = (long)i;
		for (long i = 0; i < last_user; i++) {
			struct mf_tpl_message *msg = &out->v[i];
			if (!(msg->role.n == 9 && memcmp(msg->role.p, "assistant", 9) == 0))
				continue;
			struct rn_think t;
			if (rn_think_init(&t, "<think>", "</think>") < 0)
				return -1;
			struct ob_buf th, co;
			ob_buf_init(&th, 0);
			ob_buf_init(&co, 0);
			int rc = rn_think_add(&t, msg->content.p, msg->content.n, &th, &co);
			rn_think_free(&t);
			ob_buf_free(&th);
			if (rc < 0) {
				ob_buf_free(&co);
				return -1;
			}
			char *c = own(out, ob_buf_take(&co));
			if (!c)
				c = own(out, strdup(""));
			if (!c)
				return -1;
			msg->content = str_of(c);
		}
	}
	return 0;
}

static int tokenize(struct rn_infer *I, const char *text, size_t len, int32_t **ids, size_t *n)
{
	struct rn_tok_error te = {0};
	if (rn_tok_encode_alloc(rn_runner_tok(I->runner), text, len, true, true, ids, n, &te) != RN_TOK_OK)
		return fail(I, 500, "%s", te.msg);
	return 0;
}

static int render(struct rn_infer *I, const struct mf_tpl *tpl, struct mf_tpl_values *v, char **out, size_t *len)
{
	struct mf_tpl_error te = {0};
	if (mf_tpl_execute(tpl, v, out, len, &te) != MF_TPL_OK)
		return fail(I, 500, "%s", te.msg);
	return 0;
}

/* The messages through the model's GGUF Jinja template (runner/api/jinja_chat.h): Ollama's messages in the
 * OpenAI shape, the request's tools only when it has some, think as enable_thinking / reasoning_effort, the
 * vocabulary's BOS/EOS texts. A template's refusal (raise_exception) is answered 400 with its message. */
static int render_jinja(struct rn_infer *I, const struct mf_tpl_message *msgs, size_t n, const struct ob_json *tools,
			const struct think_val *tv, char **out, size_t *len)
{
	/* a last assistant message is a prefill, as llama-server takes it: the rest rendered with the generation
	 * prompt, then its content */
	bool prefill = n && msgs[n - 1].role.n == 9 && memcmp(msgs[n - 1].role.p, "assistant", 9) == 0;
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	rn_jchat_write_messages(msgs, prefill ? n - 1 : n, &w);
	struct ob_json_error je;
	struct ob_json_doc *md = ob_jw_str(&w) ? ob_json_parse(ob_jw_str(&w), w.len, &je) : NULL;
	ob_jw_reset(&w);
	bool has_extra = rn_jchat_write_think(tv->set, tv->on, tv->level, &w);
	struct ob_json_doc *xd = has_extra && ob_jw_str(&w) ? ob_json_parse(ob_jw_str(&w), w.len, &je) : NULL;
	ob_jw_free(&w);
	int rc = 0;
	if (!md || (has_extra && !xd)) {
		rc = fail(I, 500, "out of memory");
	} else {
		struct rn_jchat_in in = {
			.messages = ob_json_root(md),
			.tools = tools,
			.extra = xd ? ob_json_root(xd) : NULL,
			.tok = rn_runner_tok(I->runner),
			.add_generation_prompt = true,
		};
		char err[512];
		int st = rn_jchat_render(I->sm->jinja, &in, out, len, err, sizeof err);
		if (st)
			rc = fail(I, st, "%s", err);
		else if (prefill && rn_jchat_append(out, len, msgs[n - 1].content.p, msgs[n - 1].content.n) < 0)
			rc = fail(I, 500, "out of memory");
	}
	ob_json_free(md);
	ob_json_free(xd);
	return rc;
}

/* Ollama's chatPrompt: drop messages from the front (keeping system messages and the last message) until
 * the rendered prompt fits num_ctx, then render it. */
static int chat_prompt(struct rn_infer *I, const struct msg_list *msgs, const struct ob_json *tools,
		       const struct think_val *tv, bool truncate, int num_ctx)
{
	const struct mf_tpl *tpl = I->sm->tpl;
	struct mf_tpl_values v = {0};
	v.tools = tools;
	v.think = tv->on;
	v.think_level = str_of(tv->level);
	v.is_think_set = tv->set;
	struct mf_tpl_message *buf = calloc(msgs->n + 1, sizeof *buf);
	if (!buf)
		return fail(I, 500, "out of memory");
	size_t last = msgs->n ? msgs->n - 1 : 0;
	char *best = NULL;
	size_t best_len = 0;
	for (size_t i = 0; i <= last; i++) {
		size_t k = 0;
		for (size_t j = 0; j < i; j++)
			if (msgs->v[j].role.n == 6 && memcmp(msgs->v[j].role.p, "system", 6) == 0)
				buf[k++] = msgs->v[j];
		for (size_t j = i; j < msgs->n; j++)
			buf[k++] = msgs->v[j];
		v.messages = buf;
		v.n_messages = k;
		char *p = NULL;
		size_t pl = 0;
		int rc = I->sm->jinja ? render_jinja(I, buf, k, tools, tv, &p, &pl) : render(I, tpl, &v, &p, &pl);
		if (rc < 0) {
			free(buf);
			return -1;
		}
		if (!truncate) {
			best = p;
			best_len = pl;
			break;
		}
		int32_t *ids = NULL;
		size_t n = 0;
		if (tokenize(I, p, pl, &ids, &n) < 0) {
			free(p);
			free(buf);
			return -1;
		}
		if ((long)n <= num_ctx || i == last) {
			if (i > 0)
				rn_log_attrs(&I->api->log, RN_LOG_WARN, "truncating input messages which exceed context length",
					     "truncated=%zu", msgs->n - i);
			best = p;
			best_len = pl;
			/* keep the ids: the prompt need not be tokenized twice */
			free(I->tokens);
			I->tokens = ids;
			I->n_tokens = n;
			break;
		}
		free(ids);
		free(p);
	}
	free(buf);
	I->prompt = best;
	I->prompt_len = best_len;
	return 0;
}

/* ---------------------------------------------------------------------------------------------------- */
/* request checks */

static int images_present(const struct ob_json *root, bool chat)
{
	if (chat) {
		const struct ob_json *msgs = rn_dec_get(root, "messages");
		if (!msgs || msgs->type != OB_JSON_ARRAY)
			return 0;
		OB_JSON_FOREACH(m, msgs)
		{
			const struct ob_json *im = rn_dec_get(m, "images");
			if (im && im->type == OB_JSON_ARRAY && im->count)
				return 1;
		}
		return 0;
	}
	const struct ob_json *im = rn_dec_get(root, "images");
	return im && im->type == OB_JSON_ARRAY && im->count;
}

static void write_details_json(const struct rn_srv_model *sm, char **out)
{
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	rn_srv_model_write_details(sm, &w, false, false);
	size_t n;
	*out = ob_jw_take(&w, &n);
	ob_jw_free(&w);
}

/* ---------------------------------------------------------------------------------------------------- */
/* answers that are not a generation */

/* Sends a whole answer the face wrote into jw (content type: the face's, or gin's JSON type when NULL). */
static void send_jw(struct rn_infer *I, struct ob_jw *w, const char *content_type)
{
	const char *s = ob_jw_str(w);
	if (!s)
		I->face->error(I->r, 500, ob_jw_status(w) == OB_JW_NOMEM ? "out of memory" : "json: unsupported value");
	else if (content_type)
		rn_http_respond(I->r, 200, content_type, s, w->len);
	else
		rn_http_respond_json(I->r, 200, s, w->len);
}

/* The reply to an empty request (no messages, no prompt): the model was loaded ("load") or unloaded
 * ("unload"); a done answer without text or metrics. */
static void reply_done(struct rn_infer *I, const char *reason)
{
	struct rn_infer_emit e = {
		.content = "",
		.thinking = "",
		.done = true,
		.done_reason = reason,
		.slot = -1,
		.model = I->model_name,
		.created_unix = I->created_unix,
	};
	struct ob_jw *w = scratch_jw(I);
	I->face->whole(I->state, &e, w);
	send_jw(I, w, I->face->whole_type);
}

/* ---------------------------------------------------------------------------------------------------- */
/* the steps */

/* decode: the body by Go's encoding/json rules into I->in, with Ollama's early checks. */
static int step_decode(struct rn_infer *I, const char *body, size_t len)
{
	bool chat = I->kind == RN_INF_CHAT;
	const char *gs = chat ? "ChatRequest" : "GenerateRequest";
	struct infer_in *in = &I->in;
	struct rn_dec d = {.go_struct = gs, .prefix = ""};
	I->doc = rn_dec_parse(&d, body, len, &in->root);
	if (!I->doc)
		return fail(I, 400, "%s", d.err);
	const struct ob_json *root = in->root;
	in->body = body;
	in->body_len = len;
	in->format = rn_dec_get(root, "format");
	in->model = "";
	rn_dec_string(&d, root, "model", &in->model, &in->model_len);
	in->stream = true;
	rn_dec_bool(&d, root, "stream", &in->stream);
	in->opts = rn_dec_object(&d, root, "options", "map[string]interface {}");
	in->truncate = true;
	in->shift = true;
	rn_dec_bool(&d, root, "truncate", &in->truncate);
	rn_dec_bool(&d, root, "shift", &in->shift);
	rn_dec_bool(&d, root, "logprobs", &in->logprobs);
	rn_dec_bool(&d, root, "_debug_render_only", &in->debug_render);
	rn_dec_int(&d, root, "top_logprobs", &in->top_logprobs);
	in->prompt = in->suffix = in->system = in->tmpl = "";
	if (chat) {
		in->messages = rn_dec_array(&d, root, "messages", "[]api.Message");
		in->tools = rn_dec_array(&d, root, "tools", "api.Tools");
	} else {
		rn_dec_string(&d, root, "prompt", &in->prompt, NULL);
		rn_dec_string(&d, root, "suffix", &in->suffix, NULL);
		rn_dec_string(&d, root, "system", &in->system, NULL);
		rn_dec_string(&d, root, "template", &in->tmpl, NULL);
		rn_dec_bool(&d, root, "raw", &in->raw);
		in->context = rn_dec_array(&d, root, "context", "[]int");
		rn_dec_array(&d, root, "images", "[]api.ImageData");
	}
	if (d.failed)
		return fail(I, 400, "%s", d.err);
	char err[1024];
	bool bad;
	think_from_json(rn_dec_get(root, "think"), &in->think, err, sizeof err, &bad);
	if (bad)
		return fail(I, 400, "%s", err);
	if (keep_alive_from_json(rn_dec_get(root, "keep_alive"), &in->keep_alive, err, sizeof err) < 0)
		return fail(I, 400, "%s", err);
	struct mf_tpl_error te = {0};
	if (in->messages && mf_tpl_messages_from_json(in->messages, &in->msgs, &te) != MF_TPL_OK)
		return fail(I, 400, "%s", te.msg);
	if (in->tools && mf_tpl_tools_check(in->tools, &te) != MF_TPL_OK)
		return fail(I, 400, "%s", te.msg);
	if (in->context) {
		OB_JSON_FOREACH(c, in->context)
		{
			int64_t x;
			struct rn_dec d2 = {.go_struct = gs, .prefix = ""};
			if (!rn_dec_int_value(&d2, "context", c, &x))
				return fail(I, 400, "%s", d2.err);
		}
	}
	if (in->top_logprobs < 0 || in->top_logprobs > 20)
		return fail(I, 400, "top_logprobs must be between 0 and 20");
	if (!(I->model_name = strdup(in->model)))
		return fail(I, 500, "out of memory");
	I->stream = in->stream;
	I->raw = in->raw;
	I->had_tools = in->tools && in->tools->count > 0;
	I->want_context = !chat && !in->raw && I->face->generate_context;
	in->empty = chat ? !in->msgs || in->msgs->n == 0 : *in->prompt == 0;
	return STEP_NEXT;
}

/* resolve: the model's name → its manifest and layers; unload requests; capabilities and the think default. */
static int step_resolve(struct rn_infer *I)
{
	bool chat = I->kind == RN_INF_CHAT;
	struct infer_in *in = &I->in;
	const char *model = in->model;
	struct mf_name nm;
	mf_name_parse_n(model, in->model_len, &nm);
	if (!in->model_len)
		return chat ? fail(I, 400, "model is required") : fail(I, 404, "model '' not found");
	if (!mf_name_is_valid(&nm))
		return fail(I, 400, "invalid model name");
	int st;
	char err[1024];
	I->sm = rn_srv_model_load(I->api->store, model, &st, err, sizeof err);
	if (!I->sm)
		return st == 404 ? fail(I, 404, "model '%s' not found", model) : fail(I, st, "%s", err);
	const struct rn_srv_model *sm = I->sm;
	if (in->empty && in->keep_alive == 0) {
		if (sm->m->model_path)
			rn_sched_expire(I->api->sched, sm->m->model_path);
		reply_done(I, "unload");
		return STEP_ANSWERED;
	}
	if (!chat && in->raw && (*in->tmpl || *in->system || (in->context && in->context->count)))
		return fail(I, 400, "raw mode does not support template, system, or context");

	enum rn_cap want[4];
	int n_want = 0;
	want[n_want++] = RN_CAP_COMPLETION;
	if (chat && I->had_tools)
		want[n_want++] = RN_CAP_TOOLS;
	if (!chat && *in->suffix)
		want[n_want++] = RN_CAP_INSERT;
	struct think_val *tv = &in->think;
	char q[300];
	quote(model, q, sizeof q);
	if (rn_srv_model_has(sm, RN_CAP_THINKING)) {
		if (!tv->set) {
			tv->set = true;
			tv->on = true;
			snprintf(tv->level, sizeof tv->level, "medium");
		}
	} else if (tv->set && tv->on)
		return fail(I, 400, "%s does not support thinking", q);
	if (!rn_srv_model_has(sm, RN_CAP_COMPLETION))
		return fail(I, 400, "%s does not support %s", q, chat ? "chat" : "generate");
	if (rn_srv_model_check(sm, want, n_want, err, sizeof err))
		return fail(I, 400, "%s", err);
	return STEP_NEXT;
}

/* options: the defaults, the model's params layer, the request's options; then what orun does not do yet
 * (images), said plainly. */
static int step_options(struct rn_infer *I)
{
	struct infer_in *in = &I->in;
	const struct rn_srv_model *sm = I->sm;
	struct mf_warnings warns = {0};
	struct mf_error me = {0};
	int rc = MF_OK;
	if (sm->m->params)
		rc = mf_options_apply_json(&I->opts, ob_json_root(sm->m->params), &warns, &me);
	if (rc == MF_OK && in->opts)
		rc = mf_options_apply_json(&I->opts, in->opts, &warns, &me);
	for (size_t i = 0; rc == MF_OK && i < warns.n; i++)
		rn_log(&I->api->log, RN_LOG_WARN, "%s", warns.items[i]);
	mf_warnings_free(&warns);
	if (rc != MF_OK)
		return fail(I, me.http_status ? me.http_status : 500, "%s", me.msg);

	if (images_present(in->root, I->kind == RN_INF_CHAT)) {
		enum rn_cap v = RN_CAP_VISION;
		char err[1024];
		if (rn_srv_model_check(sm, &v, 1, err, sizeof err))
			return fail(I, 400, "%s", err);
		return fail(I, 400, "images are not supported by orun yet (no vision engine)");
	}
	if (!sm->m->model_path)
		return fail(I, 500, "model '%s' has no model layer", in->model);
	return STEP_NEXT;
}

/* schedule: the load-time options, then a runner from the scheduler (loading the model, or waiting for it);
 * a load request ends here. */
static int step_schedule(struct rn_infer *I)
{
	struct rn_api *s = I->api;
	const struct rn_srv_model *sm = I->sm;
	struct rn_load_params lo; /* what the options ask; the scheduler applies the defaults */
	rn_load_params_from_options(&lo, &I->opts);
	char *details = NULL;
	write_details_json(sm, &details);
	struct rn_sched_model smod = {
		.model_path = sm->m->model_path,
		.name = sm->m->short_name,
		.digest = sm->m->manifest ? sm->m->manifest->digest : "",
		.details_json = details,
		.embedding = false,
	};
	struct rn_sched_error se = {0};
	I->runner = rn_sched_acquire(s->sched, &smod, &lo, I->in.keep_alive, infer_gone, I, &se);
	free(details);
	if (!I->runner)
		return fail(I, se.status, "%s", se.msg);
	I->runner_held = true;
	I->t_loaded = rn_http_now_ns();
	if (I->in.empty) {
		reply_done(I, "load");
		return STEP_ANSWERED;
	}
	return STEP_NEXT;
}

/* The chat's prompt: model messages and the request's, rendered with the model's template (history truncated
 * to the context, as Ollama's chatPrompt). */
static int render_chat(struct rn_infer *I)
{
	const struct infer_in *in = &I->in;
	const struct rn_srv_model *sm = I->sm;
	size_t n = in->msgs ? in->msgs->n : 0;
	bool add_system = !(n && in->msgs->items[0].role.n == 6 && memcmp(in->msgs->items[0].role.p, "system", 6) == 0);
	struct msg_list ml = {0};
	int rc;
	if (build_messages(sm, n ? in->msgs->items : NULL, n, NULL, add_system, &ml) < 0)
		rc = fail(I, 500, "out of memory");
	else if (!sm->tpl)
		rc = fail(I, 500, "%s", sm->tpl_error);
	else
		rc = chat_prompt(I, &ml, in->tools, &in->think, in->truncate, rn_runner_n_ctx(I->runner));
	msg_list_free(&ml);
	return rc < 0 ? STEP_FAILED : STEP_NEXT;
}

/* generate's deprecated `context`: its ids, detokenized, go in front of the prompt. */
static int context_prefix(struct rn_infer *I, struct ob_buf *pre)
{
	const struct ob_json *context = I->in.context;
	int32_t *ids = malloc(context->count * sizeof *ids);
	if (!ids)
		return STEP_NEXT;
	size_t k = 0;
	OB_JSON_FOREACH(c, context)
	{
		int64_t x = 0;
		ob_json_int(c, &x);
		ids[k++] = (int32_t)x;
	}
	const struct rn_tok *tok = rn_runner_tok(I->runner);
	size_t need = 0;
	/* as llama-server's /detokenize: special tokens rendered */
	int trc = rn_tok_detokenize(tok, ids, k, false, true, NULL, 0, &need);
	char *txt = (trc == RN_TOK_OK || trc == RN_TOK_ERR_NOSPACE) ? malloc(need + 1) : NULL;
	int rc = STEP_NEXT;
	if (txt && rn_tok_detokenize(tok, ids, k, false, true, txt, need, &need) == RN_TOK_OK)
		ob_buf_append(pre, txt, need);
	else if (!txt || trc == RN_TOK_ERR_RANGE)
		rc = fail(I, 500, "invalid context: a token id is out of range");
	free(txt);
	free(ids);
	return rc;
}

/* generate with a suffix: the template's .Prompt and .Suffix (fill-in-the-middle). */
static int render_suffix(struct rn_infer *I, const struct mf_tpl *tpl, struct ob_buf *pre)
{
	const struct infer_in *in = &I->in;
	struct mf_tpl_values v = {0};
	v.prompt = str_of(in->prompt);
	v.suffix = str_of(in->suffix);
	v.think = in->think.on;
	v.think_level = str_of(in->think.level);
	v.is_think_set = in->think.set;
	char *p = NULL;
	size_t pl = 0;
	if (render(I, tpl, &v, &p, &pl) < 0)
		return STEP_FAILED;
	ob_buf_append(pre, p, pl);
	free(p);
	return STEP_NEXT;
}

/* generate's prompt as a message: [system (request or model)] + model MESSAGEs (only without context) + the
 * prompt, through the model's template (with truncation, as chat) or the request's own template. */
static int render_prompt(struct rn_infer *I, const struct mf_tpl *tpl, struct ob_buf *pre)
{
	const struct infer_in *in = &I->in;
	const struct mf_model *m = I->sm->m;
	struct msg_list ml = {0};
	ml.v = calloc(m->n_messages + 2, sizeof *ml.v);
	if (!ml.v)
		return fail(I, 500, "out of memory");
	const char *sys = *in->system ? in->system : m->system;
	if (sys && *sys) {
		ml.v[ml.n].role = str_of("system");
		ml.v[ml.n].content = str_of(sys);
		ml.n++;
	}
	if (!in->context)
		for (size_t i = 0; i < m->n_messages; i++) {
			ml.v[ml.n].role = str_of(m->messages[i].role);
			ml.v[ml.n].content = str_of(m->messages[i].content);
			ml.n++;
		}
	ml.v[ml.n].role = str_of("user");
	ml.v[ml.n].content = str_of(in->prompt);
	ml.n++;
	int rc;
	if (!*in->tmpl) {
		rc = chat_prompt(I, &ml, NULL, &in->think, in->truncate, rn_runner_n_ctx(I->runner));
		if (rc == 0) {
			if (pre->len) { /* a context prefix: the ids no longer match */
				free(I->tokens);
				I->tokens = NULL;
				I->n_tokens = 0;
			}
			ob_buf_append(pre, I->prompt, I->prompt_len);
			free(I->prompt);
			I->prompt = NULL;
		}
	} else {
		struct mf_tpl_values v = {0};
		v.messages = ml.v;
		v.n_messages = ml.n;
		v.think = in->think.on;
		v.think_level = str_of(in->think.level);
		v.is_think_set = in->think.set;
		char *p = NULL;
		size_t pl = 0;
		rc = render(I, tpl, &v, &p, &pl);
		if (rc == 0) {
			ob_buf_append(pre, p, pl);
			free(p);
		}
	}
	msg_list_free(&ml);
	return rc < 0 ? STEP_FAILED : STEP_NEXT;
}

/* The generate's prompt: raw as given, or rendered (the request's template or the model's). */
static int render_generate(struct rn_infer *I)
{
	const struct infer_in *in = &I->in;
	if (in->raw) {
		I->prompt = strdup(in->prompt);
		I->prompt_len = strlen(in->prompt);
		return I->prompt ? STEP_NEXT : fail(I, 500, "out of memory");
	}
	struct mf_tpl *own_tpl = NULL;
	const struct mf_tpl *tpl = I->sm->tpl;
	struct ob_buf pre;
	ob_buf_init(&pre, 0);
	int rc = STEP_NEXT;
	struct mf_tpl_error te = {0};
	if (*in->tmpl && mf_tpl_parse(in->tmpl, strlen(in->tmpl), &own_tpl, &te) != MF_TPL_OK)
		rc = fail(I, 500, "%s", te.msg);
	else if (*in->tmpl)
		tpl = own_tpl;
	if (rc == STEP_NEXT && !tpl)
		rc = fail(I, 500, "%s", I->sm->tpl_error);
	if (rc == STEP_NEXT && in->context && in->context->count)
		rc = context_prefix(I, &pre);
	if (rc == STEP_NEXT)
		rc = *in->suffix ? render_suffix(I, tpl, &pre) : render_prompt(I, tpl, &pre);
	if (rc == STEP_NEXT && pre.failed)
		rc = fail(I, 500, "out of memory");
	if (rc == STEP_NEXT) {
		I->prompt_len = pre.len;
		I->prompt = ob_buf_take(&pre);
		if (!I->prompt)
			I->prompt = strdup("");
		if (!I->prompt)
			rc = fail(I, 500, "out of memory");
	}
	ob_buf_free(&pre);
	mf_tpl_free(own_tpl);
	return rc;
}

/* render: the prompt text (and, when truncation tokenized it, its ids); _debug_render_only ends here. */
static int step_render(struct rn_infer *I)
{
	bool chat = I->kind == RN_INF_CHAT;
	int rc = chat ? render_chat(I) : render_generate(I);
	if (rc != STEP_NEXT || !I->in.debug_render)
		return rc;
	struct rn_infer_emit e = {.model = I->model_name, .created_unix = I->created_unix, .slot = -1};
	struct ob_jw *w = scratch_jw(I);
	I->face->rendered(I->state, &e, I->prompt, I->prompt_len, chat, w);
	send_jw(I, w, NULL);
	return STEP_ANSWERED;
}

/* Whether the prompt, trailing whitespace aside, ends with tag. */
static bool prompt_ends_with(const struct rn_infer *I, const char *tag)
{
	size_t pl = I->prompt ? I->prompt_len : 0;
	while (pl && (I->prompt[pl - 1] == ' ' || I->prompt[pl - 1] == '\n' || I->prompt[pl - 1] == '\t' ||
		      I->prompt[pl - 1] == '\r'))
		pl--;
	size_t tl = strlen(tag);
	return pl >= tl && memcmp(I->prompt + pl - tl, tag, tl) == 0;
}

/* The thinking parser with tags open/close, started inside the thinking state when the prompt ends with the
 * opening tag (the template prefilled it). */
static int start_think(struct rn_infer *I, const char *open, const char *close)
{
	if (rn_think_init(&I->think, open, close) < 0)
		return fail(I, 500, "out of memory");
	I->use_think = true;
	size_t ol = strlen(open);
	if (prompt_ends_with(I, open)) {
		struct ob_buf a, b;
		ob_buf_init(&a, 0);
		ob_buf_init(&b, 0);
		(void)rn_think_add(&I->think, open, ol, &a, &b);
		ob_buf_free(&a);
		ob_buf_free(&b);
	}
	return STEP_NEXT;
}

/* The tool-call parser for the function names of a "tools" array, with tag. */
static int start_tools(struct rn_infer *I, const char *tag, const struct ob_json *tools)
{
	size_t k = 0;
	const char **names = calloc(tools->count ? tools->count : 1, sizeof *names);
	if (!names)
		return fail(I, 500, "out of memory");
	OB_JSON_FOREACH(t, tools)
	{
		const struct ob_json *fn = rn_dec_get(t, "function");
		const struct ob_json *nmv = fn ? rn_dec_get(fn, "name") : NULL;
		names[k++] = nmv && nmv->type == OB_JSON_STRING ? nmv->str : "";
	}
	int rc = rn_tools_init(&I->tools, tag, names, k);
	free(names);
	if (rc < 0)
		return fail(I, 500, "out of memory");
	I->use_tools = true;
	return STEP_NEXT;
}

/* THE output parser of a chat rendered with a GGUF's Jinja template, for both servers: runner/chatfmt's parser
 * of the format llama-server picks from the template's text (Hermes for Qwen, Llama 3.x, Mistral, DeepSeek
 * R1, GPT-OSS, ...), for the request's tools (parse_tools: look for calls) and reasoning (enum
 * rn_chatfmt_reasoning), started inside thinking when the rendered prompt ends in an opened thinking block,
 * and inside a call when it ends with a prefilled "<tool_call>" (an assistant prefill). */
static int start_chatfmt(struct rn_infer *I, const char *src, size_t len, const struct ob_json *tools, bool parse_tools,
			 int reasoning)
{
	size_t n = tools && tools->type == OB_JSON_ARRAY ? tools->count : 0, k = 0;
	const char **names = calloc(n ? n : 1, sizeof *names);
	if (!names)
		return fail(I, 500, "out of memory");
	if (n) {
		OB_JSON_FOREACH(t, tools)
		{
			const struct ob_json *fn = rn_dec_get(t, "function");
			const struct ob_json *nmv = fn ? rn_dec_get(fn, "name") : NULL;
			names[k++] = nmv && nmv->type == OB_JSON_STRING ? nmv->str : "";
		}
	}
	enum rn_chatfmt_kind kind = rn_chatfmt_for_request(rn_chatfmt_detect(src, len), src, len, names, k);
	free(names);
	I->cf_kind = kind;
	struct rn_chatfmt_opts o = {
		.parse_tools = parse_tools && k > 0,
		.reasoning = reasoning,
		.thinking_forced_open = reasoning != RN_CHATFMT_REASONING_NONE &&
					rn_chatfmt_prompt_opens_thinking(kind, I->prompt, I->prompt ? I->prompt_len : 0),
	};
	if (!(I->cf = rn_chatfmt_new(kind, &o)))
		return fail(I, 500, "out of memory");
	static const char prefill[] = "<tool_call>";
	if (o.parse_tools && prompt_ends_with(I, prefill)) {
		struct ob_buf a, b;
		struct rn_tool_call *calls = NULL;
		size_t n_calls = 0;
		ob_buf_init(&a, 0);
		ob_buf_init(&b, 0);
		int rc = rn_chatfmt_feed(I->cf, prefill, sizeof prefill - 1, &a, &b, &calls, &n_calls);
		ob_buf_free(&a);
		ob_buf_free(&b);
		rn_tool_calls_free(calls, n_calls);
		if (rc < 0)
			return fail(I, 500, "out of memory");
	}
	return STEP_NEXT;
}

/* The output parsers: for a model on its GGUF's Jinja template, the chat format's (start_chatfmt; thinking
 * only when the request asks for it, as on the Go-template path); else the thinking parser (starting inside
 * the thinking state when the template prefilled the opening tag) and the tool-call parser (for the request's
 * tools, with the template's tool tag). */
static int init_parsers(struct rn_infer *I)
{
	const struct rn_srv_model *sm = I->sm;
	if (sm->jinja)
		return start_chatfmt(I, sm->jinja_src, sm->jinja_len, I->in.tools, I->kind == RN_INF_CHAT && I->had_tools,
				     I->in.think.on ? RN_CHATFMT_REASONING_AUTO : RN_CHATFMT_REASONING_NONE);
	const char *open = sm->think_open, *close = sm->think_close;
	const char *tool_tag = sm->tpl ? mf_tpl_tool_tag(sm->tpl) : NULL;
	if (I->in.think.on && *open && *close && start_think(I, open, close) != STEP_NEXT)
		return STEP_FAILED;
	if (I->kind == RN_INF_CHAT && I->had_tools && tool_tag && *tool_tag)
		return start_tools(I, tool_tag, I->in.tools);
	return STEP_NEXT;
}

/* The text after which the request's grammar applies: with thinking on, the thinking parser's closing tag, so
 * that the model thinks freely and the answer is constrained within the one request (Ollama cancels at the
 * first answer token and starts again with the thinking as a prefill, one more prompt evaluation). NULL: from
 * the first token (think false, a model that does not think, a prompt that already closed the thinking). */
static const char *grammar_trigger(const struct rn_infer *I, bool thinking)
{
	const char *open, *close = NULL;
	if (!thinking)
		return NULL;
	if (I->use_think)
		close = I->sm->think_close;
	else if (!I->cf || !rn_chatfmt_think_tags(I->cf_kind, &open, &close))
		return NULL;
	return close && *close && !prompt_ends_with(I, close) ? close : NULL;
}

/* Queues the job for I->tokens (rq: the rest of the request) and, for a streamed answer, makes its writer and
 * (unless the connection's thread formats, runner/README.md) hands the job's events to the engine-thread sink. */
static int submit(struct rn_infer *I, struct rn_request *rq)
{
	rq->prompt = I->tokens;
	rq->n_prompt = I->n_tokens;
	rq->grammar = I->grammar;
	rq->grammar_len = I->grammar ? strlen(I->grammar) : 0;
	rq->grammar_after = I->grammar ? I->grammar_after : NULL;
	if (I->stream && !(I->w = rn_stream_new(I->r)))
		return fail(I, 500, "out of memory");
	struct rn_sched_error se = {0};
	I->job = rn_job_submit(I->api->sched, I->runner, rq, &se);
	if (!I->job)
		return fail(I, se.status ? se.status : 500, "%s", se.msg);
	if (I->stream && !I->api->format_on_connection)
		rn_job_set_sink(I->job, infer_sink, I);
	rn_metrics_in_flight(I->api->metrics, +1);
	I->in_flight = true;
	return STEP_NEXT;
}

/* submit: the parsers, the grammar of `format` (its errors come here, after rendering, as Ollama's come from
 * its runner), the prompt's ids, the sampling options, the job. */
static int step_submit(struct rn_infer *I)
{
	if (init_parsers(I) != STEP_NEXT)
		return STEP_FAILED;
	char err[RN_STRUCTURED_ERR_MAX];
	int st = rn_structured_ollama_format(I->in.body, I->in.body_len, I->in.format, &I->grammar, err, sizeof err);
	if (st)
		return fail(I, st, "%s", err);
	I->grammar_after = grammar_trigger(I, I->in.think.on);
	if (!I->tokens && tokenize(I, I->prompt, I->prompt_len, &I->tokens, &I->n_tokens) < 0)
		return STEP_FAILED;
	if (I->n_tokens == 0)
		return fail(I, 400, "the prompt is empty after tokenization");
	struct rn_request rq;
	rn_request_default(&rq);
	rq.sampling.temperature = I->opts.temperature;
	rq.sampling.top_k = (int)I->opts.top_k;
	rq.sampling.top_p = I->opts.top_p;
	rq.sampling.min_p = I->opts.min_p;
	rq.sampling.typical_p = I->opts.typical_p;
	rq.sampling.repeat_last_n = (int)I->opts.repeat_last_n;
	rq.sampling.repeat_penalty = I->opts.repeat_penalty;
	rq.sampling.presence_penalty = I->opts.presence_penalty;
	rq.sampling.frequency_penalty = I->opts.frequency_penalty;
	rq.sampling.seed = I->opts.seed;
	rq.num_predict = I->opts.num_predict < 0 ? -1 : (int)(I->opts.num_predict > INT32_MAX ? INT32_MAX : I->opts.num_predict);
	rq.num_keep = (int)I->opts.num_keep;
	rq.cache_prompt = I->opts.cache_prompt;
	rq.truncate = I->in.truncate;
	rq.shift = I->in.shift;
	rq.logprobs = I->rq_logprobs = I->in.logprobs;
	rq.top_logprobs = (int)I->in.top_logprobs;
	rq.stop = (const char *const *)I->opts.stop;
	rq.n_stop = (int)I->opts.n_stop;
	return submit(I, &rq);
}

/* stream: waits for the first piece (so that a failure before any output is still an HTTP error), then
 * streams the rest, or answers with the whole text. Takes over I. */
static void step_stream(struct rn_infer *I)
{
	int rc = I->stream ? stream_next(I, I->w) : collect_whole(I);
	if (rc < 0) {
		if (I->err_status)
			I->face->error(I->r, I->err_status, I->err_msg);
		else if (infer_gone(I))
			I->face->error(I->r, 499, "request canceled");
		else
			I->face->error(I->r, 500, "generation failed");
		infer_free(I);
		return;
	}
	if (!I->stream) {
		if (I->face->whole_type)
			rn_http_respond(I->r, 200, I->face->whole_type, I->line.p, I->line.len);
		else
			rn_http_respond_json(I->r, 200, I->line.p, I->line.len);
		infer_free(I);
		return;
	}
	struct rn_stream_producer p = {stream_next, stream_close, I};
	I->started = true; /* the writer owns I from here on, and I no longer owns the writer */
	rn_stream_start(I->w, 200, I->face->stream_type, &p);
}

/* ---------------------------------------------------------------------------------------------------- */
/* entry points */

void rn_infer_run(struct rn_http_req *r, enum rn_infer_kind kind, const char *body, size_t len,
		  const struct rn_infer_face *face, const void *state)
{
	struct rn_infer *I = infer_new(r, rn_api_of(r), kind, face, state);
	if (!I) {
		face->error(r, 500, "out of memory");
		return;
	}
	int rc = step_decode(I, body, len);
	if (rc == STEP_NEXT)
		rc = step_resolve(I);
	if (rc == STEP_NEXT)
		rc = step_options(I);
	if (rc == STEP_NEXT)
		rc = step_schedule(I);
	if (rc == STEP_NEXT)
		rc = step_render(I);
	if (rc == STEP_NEXT)
		rc = step_submit(I);
	if (rc == STEP_NEXT) {
		step_stream(I);
		return;
	}
	if (rc == STEP_FAILED)
		face->error(r, I->err_status, I->err_msg);
	infer_free(I);
}

void rn_infer_tokens(struct rn_http_req *r, struct rn_api *api, struct rn_runner *runner, struct rn_request *rq,
		     int32_t *tokens, size_t n_tokens, bool stream, const char *model, const struct rn_infer_face *face,
		     const void *state, const struct rn_infer_parsers *parsers)
{
	struct rn_infer *I = infer_new(r, api, RN_INF_GENERATE, face, state);
	if (!I || !(I->model_name = strdup(model))) {
		free(tokens);
		infer_free(I);
		face->error(r, 500, "out of memory");
		return;
	}
	I->runner = runner;
	I->tokens = tokens;
	I->n_tokens = n_tokens;
	I->stream = stream;
	I->rq_logprobs = rq->logprobs;
	I->t_loaded = I->t_start;
	int rc = STEP_NEXT;
	if (parsers) {
		I->prompt = (char *)parsers->prompt; /* borrowed while the parsers start */
		I->prompt_len = parsers->prompt_len;
	}
	if (parsers && parsers->chat_template) {
		I->had_tools = parsers->tools && parsers->tools->type == OB_JSON_ARRAY && parsers->tools->count;
		rc = start_chatfmt(I, parsers->chat_template, parsers->chat_template_len, parsers->tools, I->had_tools,
				   parsers->reasoning);
	}
	if (rc == STEP_NEXT && rq->grammar) {
		I->grammar = strndup(rq->grammar, rq->grammar_len);
		I->grammar_after = parsers ? grammar_trigger(I, parsers->thinking) : NULL;
		if (!I->grammar)
			rc = fail(I, 500, "out of memory");
	}
	I->prompt = NULL;
	I->prompt_len = 0;
	if (rc != STEP_NEXT || submit(I, rq) != STEP_NEXT) {
		face->error(r, I->err_status, I->err_msg);
		infer_free(I);
		return;
	}
	step_stream(I);
}
