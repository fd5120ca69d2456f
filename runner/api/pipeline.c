/* runner/api/pipeline.c — /api/chat and /api/generate (and, through them, /v1/chat/completions and
 * /v1/completions): from the decoded request to the last streamed byte.
 *
 * Follows Ollama's ChatHandler / GenerateHandler step by step (checks and their order, messages, option
 * precedence, think defaults, history truncation, thinking/tool parsing, final metrics). The engine hands
 * each sampled token's text to this request's job queue; the connection thread turns it into exactly one
 * NDJSON line (or SSE event) and returns it to libmicrohttpd, which sends it as one chunk at once. Nothing is
 * buffered beyond what the parsers must hold. Not supported yet, with clear errors: `format`, `logprobs`,
 * images (no vision engine).
 */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/jsonutil.h"
#include "modelfile/name.h"
#include "modelfile/params.h"
#include "modelfile/template.h"
#include "runner/api/decode.h"
#include "runner/server/sched.h"
#include "runner/server/server.h"
#include "runner/api/pipeline.h"
#include "runner/api/stored_model.h"
#include "runner/tokenizer/tokenizer.h"

#define MAX_CHAT_MESSAGES 100000 /* messages in one request (model history included) */

struct think_val {
	bool set;      /* the request (or the default) gave think */
	bool on;       /* think.Bool() */
	char level[8]; /* think.String(): "low" | "medium" | "high" | "max" | "" */
};

struct infer {
	struct rn_http_req *r;
	struct rn_server *s;
	enum rn_infer_kind kind;
	enum rn_infer_out out;
	struct rn_oai_opts oai;
	int64_t t_start, t_loaded;
	struct ob_json_doc *doc;
	char *model_name; /* as requested, echoed in responses */
	struct rn_srv_model *sm;
	struct rn_runner *runner;
	struct rn_job *job;
	bool stream, raw, had_tools;
	bool use_think;
	struct rn_think think;
	bool use_tools;
	struct rn_tools tools;
	char *prompt;
	size_t prompt_len;
	int32_t *tokens;
	size_t n_tokens;
	struct mf_options opts;
	/* accumulation */
	struct ob_buf acc_content, acc_thinking, gen_text;
	struct rn_tool_call *calls;
	size_t n_calls;
	/* output; per-token scratch kept across events (no allocation per token once grown) */
	struct ob_buf line;
	struct ob_buf th, co, co2;
	struct ob_jw jw;
	/* direct streaming: the engine thread writes each token's chunk to the socket itself (sink below) */
	int fd;
	bool direct;        /* set by the connection thread once libmicrohttpd streams (headers sent) */
	struct ob_buf rest; /* what the socket did not take at once, for the connection thread to write */
	bool oai_first, oai_tool_sent;
	int64_t created_unix;
	bool finished, any_output;
	int err_status;
	char err_msg[1024];
	/* metrics */
	int64_t t_last_out;
	bool in_flight;
};

static void infer_free(struct infer *I)
{
	if (!I)
		return;
	rn_job_free(I->job);
	if (I->runner)
		rn_sched_release(I->s->sched, I->runner);
	if (I->in_flight)
		rn_metrics_in_flight(I->s->metrics, -1);
	if (I->use_think)
		rn_think_free(&I->think);
	if (I->use_tools)
		rn_tools_free(&I->tools);
	rn_tool_calls_free(I->calls, I->n_calls);
	ob_buf_free(&I->acc_content);
	ob_buf_free(&I->acc_thinking);
	ob_buf_free(&I->gen_text);
	ob_buf_free(&I->line);
	ob_buf_free(&I->th);
	ob_buf_free(&I->co);
	ob_buf_free(&I->co2);
	ob_jw_free(&I->jw);
	ob_buf_free(&I->rest);
	mf_options_free(&I->opts);
	free(I->prompt);
	free(I->tokens);
	free(I->model_name);
	rn_srv_model_free(I->sm);
	ob_json_free(I->doc);
	free(I);
}

static void respond_error(struct infer *I, int status, const char *msg)
{
	if (I->out == RN_OUT_OPENAI)
		rn_oai_respond_error(I->r, status, msg);
	else
		rn_http_respond_error(I->r, status, msg);
}

static void respond_errorf(struct infer *I, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void respond_errorf(struct infer *I, int status, const char *fmt, ...)
{
	char buf[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	respond_error(I, status, buf);
}

static char *now_rfc3339(char *buf, size_t n)
{
	return rn_http_rfc3339_now(buf, n);
}

/* ---------------------------------------------------------------------------------------------------- */
/* Ollama-format writers */

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
	ob_jw_string(w, now_rfc3339(ts, sizeof ts));
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
	ob_jw_string(w, now_rfc3339(ts, sizeof ts));
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

/* Appends one emission to I->line in the wire format (NDJSON line or SSE events). */
static void format_emit(struct infer *I, const struct rn_infer_emit *e)
{
	if (I->out == RN_OUT_OPENAI) {
		if (I->kind == RN_INF_CHAT)
			rn_oai_chat_chunk(&I->oai, e, &I->oai_first, &I->oai_tool_sent, &I->line);
		else
			rn_oai_completion_chunk(&I->oai, e, &I->line);
		return;
	}
	ob_jw_reset(&I->jw);
	if (I->kind == RN_INF_CHAT)
		write_chat_response(&I->jw, e);
	else
		write_generate_response(&I->jw, e);
	const char *s = ob_jw_str(&I->jw);
	if (s) {
		ob_buf_append(&I->line, s, I->jw.len);
		ob_buf_putc(&I->line, '\n');
	} else {
		I->line.failed = true;
	}
}

/* Empties a scratch buffer for the next event, keeping its allocation. */
static struct ob_buf *scratch(struct ob_buf *b)
{
	ob_buf_reset(b);
	b->failed = false;
	b->over = false;
	return b;
}

/* ---------------------------------------------------------------------------------------------------- */
/* events → emissions */

static const char *reason_name(enum rn_done_reason r)
{
	return r == RN_DONE_LENGTH ? "length" : "stop";
}

static int append_calls(struct infer *I, struct rn_tool_call *calls, size_t n)
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

/* Handles one job event. Sets *emitted when something was appended to I->line (streaming) or accumulated
 * (non-stream). Returns -1 on out-of-memory. */
static int process_event(struct infer *I, const struct rn_job_event *ev)
{
	bool done = ev->kind == RN_JOB_DONE;
	const char *t = ev->text ? ev->text : "";
	size_t tn = ev->len;
	if (!done && tn == 0)
		return 0; /* a token whose text is still held back (UTF-8, stop-string prefix) */
	if (I->kind == RN_INF_GENERATE && !I->raw)
		ob_buf_append(&I->gen_text, t, tn); /* for the final `context` */

	struct ob_buf *th = scratch(&I->th), *co = scratch(&I->co);
	struct rn_tool_call *calls = NULL;
	size_t n_calls = 0;
	int rc = 0;
	bool emit = true;

	if (I->use_think) {
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
	};
	int32_t *ctx = NULL;
	size_t n_ctx = 0;
	if (done) {
		enum rn_done_reason reason;
		struct rn_engine_stats st;
		rn_job_result(I->job, &reason, &st, NULL);
		int64_t now = rn_http_now_ns();
		e.done_reason = reason_name(reason);
		e.total_ns = now - I->t_start;
		e.load_ns = I->t_loaded - I->t_start;
		e.prompt_eval_count = st.n_prompt;
		e.prompt_eval_ns = st.prompt_ns;
		e.eval_count = st.n_eval;
		e.eval_ns = st.eval_ns;
		rn_metrics_tokens(I->s->metrics, I->model_name, (uint64_t)st.n_prompt, (uint64_t)st.n_eval);
		if (I->kind == RN_INF_GENERATE && !I->raw && I->out == RN_OUT_OLLAMA) {
			/* context = tokens(prompt + generated text), as Ollama re-tokenizes them */
			struct ob_buf all;
			ob_buf_init(&all, 0);
			ob_buf_append(&all, I->prompt ? I->prompt : "", I->prompt_len);
			ob_buf_append(&all, I->gen_text.p ? I->gen_text.p : "", I->gen_text.len);
			struct rn_tok_error te;
			/* as Ollama's r.Tokenize: llama-server /tokenize without add_special */
			if (!all.failed && rn_tok_encode_alloc(rn_runner_tok(I->runner), all.p ? all.p : "", all.len, false,
							       true, &ctx, &n_ctx, &te) == RN_TOK_OK) {
				e.context = ctx;
				e.n_context = n_ctx;
			}
			ob_buf_free(&all);
		}
	}

	if (I->stream) {
		format_emit(I, &e);
		int64_t now = rn_http_now_ns();
		if (e.content_len || e.thinking_len || e.n_calls) {
			if (!I->any_output)
				rn_metrics_ttft(I->s->metrics, I->model_name, (double)(now - I->t_start) / 1e9);
			else
				rn_metrics_inter_token(I->s->metrics, I->model_name, (double)(now - I->t_last_out) / 1e9);
			I->t_last_out = now;
			I->any_output = true;
			if (I->s->emit_tap && !done)
				I->s->emit_tap(I->s->emit_tap_ctx, ev->t_ns, now);
		}
		rn_tool_calls_free(calls, n_calls);
		calls = NULL;
	} else {
		ob_buf_append(&I->acc_content, e.content, e.content_len);
		ob_buf_append(&I->acc_thinking, e.thinking, e.thinking_len);
		if (I->kind == RN_INF_GENERATE || I->had_tools) {
			if (append_calls(I, calls, n_calls) < 0) {
				free(ctx);
				goto nomem;
			}
		} else {
			rn_tool_calls_free(calls, n_calls);
		}
		calls = NULL;
		if (done) {
			/* the whole response, from the accumulated pieces and the final metrics */
			struct rn_infer_emit whole = e;
			whole.content = I->acc_content.p ? I->acc_content.p : "";
			whole.content_len = I->acc_content.len;
			whole.thinking = I->acc_thinking.p ? I->acc_thinking.p : "";
			whole.thinking_len = I->acc_thinking.len;
			whole.calls = I->calls;
			whole.n_calls = I->n_calls;
			struct ob_jw w;
			ob_jw_init(&w, 0, 0);
			if (I->out == RN_OUT_OPENAI) {
				if (I->kind == RN_INF_CHAT)
					rn_oai_chat_whole(&I->oai, &whole, &w);
				else
					rn_oai_completion_whole(&I->oai, &whole, &w);
			} else if (I->kind == RN_INF_CHAT) {
				write_chat_response(&w, &whole);
			} else {
				write_generate_response(&w, &whole);
			}
			size_t n;
			char *s = ob_jw_take(&w, &n);
			ob_jw_free(&w);
			if (!s) {
				free(ctx);
				goto nomem;
			}
			ob_buf_append(&I->line, s, n);
			free(s);
		}
	}
	free(ctx);
	rc = I->line.failed ? -1 : 0;
	return rc;
nomem:
	rn_tool_calls_free(calls, n_calls);
	return -1;
}

/* Produces the next piece of output into I->line. Returns 1 (a piece), 0 (the end), -1 (client gone or
 * failure: cut the connection). Sets I->err_status/err_msg when the generation failed. */
static int produce(struct infer *I)
{
	I->line.len = 0;
	I->line.failed = false;
	while (I->line.len == 0) {
		if (I->rest.len) {
			/* the tail of a chunk the engine thread could not write without blocking */
			if (rn_http_write_all(I->fd, I->rest.p, I->rest.len) < 0)
				return -1;
			scratch(&I->rest);
		}
		if (I->finished)
			return 0;
		struct rn_job_event *ev = rn_job_next_fd(I->job, rn_http_req_fd(I->r), rn_api_req_gone, I->r);
		if (!ev)
			return -1;
		if (ev->kind == RN_JOB_DONE) {
			I->finished = true;
			enum rn_done_reason reason;
			struct rn_error err;
			rn_job_result(I->job, &reason, NULL, &err);
			if (reason == RN_DONE_CANCEL) {
				rn_job_event_done(I->job, ev);
				return -1;
			}
			if (reason == RN_DONE_ERROR) {
				I->err_status = err.code == RN_ERR_CONTEXT ? 400 : 500;
				snprintf(I->err_msg, sizeof I->err_msg, "%s", err.msg[0] ? err.msg : "generation failed");
				rn_srv_log(I->s, RN_LOG_WARN, "generation failed: %s", I->err_msg);
				rn_job_event_done(I->job, ev);
				if (I->stream && I->any_output) {
					/* after streaming started: a final {"error"} line */
					struct ob_jw w;
					ob_jw_init(&w, 0, 0);
					ob_jw_obj(&w);
					ob_jw_key(&w, "error");
					ob_jw_string(&w, I->err_msg);
					ob_jw_obj_end(&w);
					size_t n;
					char *s = ob_jw_take_line(&w, &n);
					if (!s)
						return -1;
					if (I->out == RN_OUT_OPENAI) {
						ob_buf_puts(&I->line, "data: ");
						ob_buf_append(&I->line, s, n - 1);
						ob_buf_puts(&I->line, "\n\n");
					} else {
						ob_buf_append(&I->line, s, n);
					}
					free(s);
					return I->line.failed ? -1 : 1;
				}
				return -1;
			}
		}
		int rc = process_event(I, ev);
		rn_job_event_done(I->job, ev);
		if (rc < 0)
			return -1;
		if (!I->stream && !I->finished)
			I->line.len = 0; /* accumulating */
	}
	return 1;
}

/* The job's sink, on the engine thread while the connection thread sleeps in produce() (under the job's lock,
 * so the two never touch I together): formats the token's line and writes it as one chunk straight to the
 * socket, so a token reaches the client without waking the connection's thread. What the socket does not
 * take at once goes to I->rest, and the connection thread is woken to write it (the engine never blocks). */
static enum rn_sink_result infer_sink(void *ctx, const struct rn_job_event *ev)
{
	struct infer *I = ctx;
	if (!I->direct)
		return RN_SINK_QUEUE; /* libmicrohttpd has not sent the headers yet */
	if (process_event(I, ev) < 0 || I->line.failed) {
		I->line.len = 0;
		return RN_SINK_CANCEL;
	}
	if (I->line.len == 0)
		return RN_SINK_DONE; /* text held back (UTF-8, stop string, partial tag) */
	size_t sent;
	if (rn_http_stream_write_chunk(I->fd, I->line.p, I->line.len, &sent) < 0) {
		I->line.len = 0;
		return RN_SINK_CANCEL; /* the client is gone */
	}
	char hdr[24];
	size_t hn = (size_t)rn_http_chunk_frame(hdr, sizeof hdr, I->line.len);
	enum rn_sink_result r = RN_SINK_DONE;
	if (sent < hn + I->line.len + 2) {
		if (sent < hn)
			ob_buf_append(&I->rest, hdr + sent, hn - sent);
		size_t off = sent > hn ? sent - hn : 0;
		if (off < I->line.len)
			ob_buf_append(&I->rest, I->line.p + off, I->line.len - off);
		size_t toff = sent > hn + I->line.len ? sent - hn - I->line.len : 0;
		ob_buf_append(&I->rest, "\r\n" + toff, 2 - toff);
		r = I->rest.failed ? RN_SINK_CANCEL : RN_SINK_WAKE;
		rn_metrics_backpressure(I->s->metrics);
	}
	I->line.len = 0;
	return r;
}

static int src_next(void *ctx, const char **data, size_t *len)
{
	struct infer *I = ctx;
	/* libmicrohttpd asks for the next piece: everything before is sent, tokens may go out directly now */
	I->direct = I->fd >= 0 && rn_http_req_chunked(I->r);
	int rc = produce(I);
	if (rc <= 0)
		return rc;
	*data = I->line.p;
	*len = I->line.len;
	return 1;
}

static void src_close(void *ctx, bool completed)
{
	(void)completed;
	infer_free(ctx);
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

static int tokenize(struct infer *I, const char *text, size_t len, int32_t **ids, size_t *n)
{
	struct rn_tok_error te = {0};
	if (rn_tok_encode_alloc(rn_runner_tok(I->runner), text, len, true, true, ids, n, &te) != RN_TOK_OK) {
		I->err_status = 500;
		snprintf(I->err_msg, sizeof I->err_msg, "%s", te.msg);
		return -1;
	}
	return 0;
}

static int render(struct infer *I, const struct mf_tpl *tpl, struct mf_tpl_values *v, char **out, size_t *len)
{
	struct mf_tpl_error te = {0};
	if (mf_tpl_execute(tpl, v, out, len, &te) != MF_TPL_OK) {
		I->err_status = 500;
		snprintf(I->err_msg, sizeof I->err_msg, "%s", te.msg);
		return -1;
	}
	return 0;
}

/* Ollama's chatPrompt: drop messages from the front (keeping system messages and the last message) until
 * the rendered prompt fits num_ctx, then render it. */
static int chat_prompt(struct infer *I, const struct msg_list *msgs, const struct ob_json *tools,
		       const struct think_val *tv, bool truncate, int num_ctx)
{
	const struct mf_tpl *tpl = I->sm->tpl;
	struct mf_tpl_values v = {0};
	v.tools = tools;
	v.think = tv->on;
	v.think_level = str_of(tv->level);
	v.is_think_set = tv->set;
	struct mf_tpl_message *buf = calloc(msgs->n + 1, sizeof *buf);
	if (!buf) {
		I->err_status = 500;
		snprintf(I->err_msg, sizeof I->err_msg, "out of memory");
		return -1;
	}
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
		if (render(I, tpl, &v, &p, &pl) < 0) {
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
				rn_srv_log(I->s, RN_LOG_DEBUG, "truncating input messages which exceed context length "
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
/* the handler */

static bool json_is_empty_format(const struct ob_json *f)
{
	return !f || f->type == OB_JSON_NULL || (f->type == OB_JSON_STRING && f->len == 0);
}

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

static void respond_simple_done(struct infer *I, const char *reason)
{
	/* load / unload replies: api.ChatResponse / api.GenerateResponse with done and done_reason only */
	char ts[64];
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	ob_jw_key(&w, "model");
	ob_jw_string(&w, I->model_name);
	ob_jw_key(&w, "created_at");
	ob_jw_string(&w, now_rfc3339(ts, sizeof ts));
	if (I->kind == RN_INF_CHAT) {
		ob_jw_key(&w, "message");
		ob_jw_raw(&w, "{\"role\":\"assistant\",\"content\":\"\"}", 33);
	} else {
		ob_jw_key(&w, "response");
		ob_jw_string(&w, "");
	}
	ob_jw_key(&w, "done");
	ob_jw_bool(&w, true);
	ob_jw_key(&w, "done_reason");
	ob_jw_string(&w, reason);
	ob_jw_obj_end(&w);
	rn_api_send_jw(I->r, 200, &w);
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

void rn_infer_run(struct rn_http_req *r, enum rn_infer_kind kind, const char *body, size_t len, enum rn_infer_out out,
		  const struct rn_oai_opts *oai)
{
	struct rn_server *s = rn_api_server(r);
	struct infer *I = calloc(1, sizeof *I);
	if (!I) {
		rn_http_respond_error(r, 500, "out of memory");
		return;
	}
	I->r = r;
	I->s = s;
	I->kind = kind;
	I->out = out;
	if (oai)
		I->oai = *oai;
	I->t_start = rn_http_req_start_ns(r);
	I->created_unix = rn_http_wall_ns() / 1000000000LL;
	I->oai_first = true;
	mf_options_init(&I->opts);
	ob_buf_init(&I->acc_content, 0);
	ob_buf_init(&I->acc_thinking, 0);
	ob_buf_init(&I->gen_text, 0);
	ob_buf_init(&I->line, 0);
	ob_buf_init(&I->th, RN_PARSE_MAX_BUFFER);
	ob_buf_init(&I->co, RN_PARSE_MAX_BUFFER);
	ob_buf_init(&I->co2, RN_PARSE_MAX_BUFFER);
	ob_jw_init(&I->jw, 0, 0);
	ob_buf_init(&I->rest, 0);
	I->fd = -1;
	bool chat = kind == RN_INF_CHAT;
	const char *gs = chat ? "ChatRequest" : "GenerateRequest";

	/* ---- decode */
	struct rn_dec d = {.go_struct = gs, .prefix = ""};
	const struct ob_json *root = NULL;
	I->doc = rn_dec_parse(&d, body, len, &root);
	if (!I->doc) {
		respond_error(I, 400, d.err);
		goto done;
	}
	const char *model = "";
	rn_dec_string(&d, root, "model", &model, NULL);
	bool stream = true;
	rn_dec_bool(&d, root, "stream", &stream);
	if (out == RN_OUT_OPENAI)
		stream = I->oai.stream;
	I->stream = stream;
	const struct ob_json *opts_obj = rn_dec_object(&d, root, "options", "map[string]interface {}");
	bool truncate = true, shift = true, logprobs = false, debug_render = false;
	rn_dec_bool(&d, root, "truncate", &truncate);
	rn_dec_bool(&d, root, "shift", &shift);
	rn_dec_bool(&d, root, "logprobs", &logprobs);
	rn_dec_bool(&d, root, "_debug_render_only", &debug_render);
	int64_t top_logprobs = 0;
	rn_dec_int(&d, root, "top_logprobs", &top_logprobs);
	const struct ob_json *tools = NULL, *messages = NULL;
	const char *prompt = "", *suffix = "", *system = "", *tmpl = "";
	bool raw = false;
	const struct ob_json *context = NULL;
	if (chat) {
		messages = rn_dec_array(&d, root, "messages", "[]api.Message");
		tools = rn_dec_array(&d, root, "tools", "api.Tools");
	} else {
		rn_dec_string(&d, root, "prompt", &prompt, NULL);
		rn_dec_string(&d, root, "suffix", &suffix, NULL);
		rn_dec_string(&d, root, "system", &system, NULL);
		rn_dec_string(&d, root, "template", &tmpl, NULL);
		rn_dec_bool(&d, root, "raw", &raw);
		context = rn_dec_array(&d, root, "context", "[]int");
		rn_dec_array(&d, root, "images", "[]api.ImageData");
	}
	if (d.failed) {
		respond_error(I, 400, d.err);
		goto done;
	}
	struct think_val tv;
	char err[1024];
	bool bad;
	think_from_json(rn_dec_get(root, "think"), &tv, err, sizeof err, &bad);
	if (bad) {
		respond_error(I, 400, err);
		goto done;
	}
	int64_t keep_alive;
	if (keep_alive_from_json(rn_dec_get(root, "keep_alive"), &keep_alive, err, sizeof err) < 0) {
		respond_error(I, 400, err);
		goto done;
	}
	struct mf_tpl_messages *req_msgs = NULL;
	if (messages) {
		struct mf_tpl_error te = {0};
		if (mf_tpl_messages_from_json(messages, &req_msgs, &te) != MF_TPL_OK) {
			respond_error(I, 400, te.msg);
			goto done;
		}
	}
	if (tools) {
		struct mf_tpl_error te = {0};
		if (mf_tpl_tools_check(tools, &te) != MF_TPL_OK) {
			respond_error(I, 400, te.msg);
			mf_tpl_messages_free(req_msgs);
			goto done;
		}
	}
	if (context) {
		OB_JSON_FOREACH(c, context)
		{
			int64_t x;
			struct rn_dec d2 = {.go_struct = gs, .prefix = ""};
			if (!rn_dec_int_value(&d2, "context", c, &x)) {
				respond_error(I, 400, d2.err);
				mf_tpl_messages_free(req_msgs);
				goto done;
			}
		}
	}
	if (top_logprobs < 0 || top_logprobs > 20) {
		respond_error(I, 400, "top_logprobs must be between 0 and 20");
		mf_tpl_messages_free(req_msgs);
		goto done;
	}
	I->model_name = strdup(model);
	I->raw = raw;
	I->had_tools = tools && tools->count > 0;
	if (!I->model_name) {
		respond_error(I, 500, "out of memory");
		mf_tpl_messages_free(req_msgs);
		goto done;
	}

	/* ---- model */
	struct mf_name nm;
	mf_name_parse(model, &nm);
	if (!*model) {
		respond_error(I, chat ? 400 : 404, chat ? "model is required" : "model '' not found");
		mf_tpl_messages_free(req_msgs);
		goto done;
	}
	if (!mf_name_is_valid(&nm)) {
		respond_error(I, 400, "invalid model name");
		mf_tpl_messages_free(req_msgs);
		goto done;
	}
	int st;
	I->sm = rn_srv_model_load(s->store, model, &st, err, sizeof err);
	if (!I->sm) {
		if (st == 404)
			respond_errorf(I, 404, "model '%s' not found", model);
		else
			respond_error(I, st, err);
		mf_tpl_messages_free(req_msgs);
		goto done;
	}
	struct rn_srv_model *sm = I->sm;
	size_t n_req_msgs = req_msgs ? req_msgs->n : 0;
	bool empty = chat ? n_req_msgs == 0 : *prompt == 0;
	if (empty && keep_alive == 0) {
		if (sm->m->model_path)
			rn_sched_expire(s->sched, sm->m->model_path);
		respond_simple_done(I, "unload");
		mf_tpl_messages_free(req_msgs);
		goto done;
	}
	if (!chat && raw && (*tmpl || *system || (context && context->count))) {
		respond_error(I, 400, "raw mode does not support template, system, or context");
		mf_tpl_messages_free(req_msgs);
		goto done;
	}

	/* ---- capabilities and think */
	enum rn_cap want[4];
	int n_want = 0;
	want[n_want++] = RN_CAP_COMPLETION;
	if (chat && I->had_tools)
		want[n_want++] = RN_CAP_TOOLS;
	if (!chat && *suffix)
		want[n_want++] = RN_CAP_INSERT;
	if (rn_srv_model_has(sm, RN_CAP_THINKING)) {
		if (!tv.set) {
			tv.set = true;
			tv.on = true;
			snprintf(tv.level, sizeof tv.level, "medium");
		}
	} else if (tv.set && tv.on) {
		char q[300];
		quote(model, q, sizeof q);
		respond_errorf(I, 400, "%s does not support thinking", q);
		mf_tpl_messages_free(req_msgs);
		goto done;
	}
	if (!rn_srv_model_has(sm, RN_CAP_COMPLETION)) {
		char q[300];
		quote(model, q, sizeof q);
		respond_errorf(I, 400, "%s does not support %s", q, chat ? "chat" : "generate");
		mf_tpl_messages_free(req_msgs);
		goto done;
	}
	if (rn_srv_model_check(sm, want, n_want, err, sizeof err)) {
		respond_error(I, 400, err);
		mf_tpl_messages_free(req_msgs);
		goto done;
	}

	/* ---- options: defaults, the model's params layer, the request */
	struct mf_warnings warns = {0};
	struct mf_error me = {0};
	if (sm->m->params && mf_options_apply_json(&I->opts, ob_json_root(sm->m->params), &warns, &me) != MF_OK) {
		respond_error(I, me.http_status ? me.http_status : 500, me.msg);
		mf_warnings_free(&warns);
		mf_tpl_messages_free(req_msgs);
		goto done;
	}
	if (opts_obj && mf_options_apply_json(&I->opts, opts_obj, &warns, &me) != MF_OK) {
		respond_error(I, me.http_status ? me.http_status : 500, me.msg);
		mf_warnings_free(&warns);
		mf_tpl_messages_free(req_msgs);
		goto done;
	}
	for (size_t i = 0; i < warns.n; i++)
		rn_srv_log(s, RN_LOG_WARN, "%s", warns.items[i]);
	mf_warnings_free(&warns);

	/* ---- what orun does not do yet: said plainly */
	if (!json_is_empty_format(rn_dec_get(root, "format"))) {
		respond_error(I, 400, "format (JSON mode and JSON schema output) is not supported by orun yet");
		mf_tpl_messages_free(req_msgs);
		goto done;
	}
	if (logprobs) {
		respond_error(I, 400, "logprobs are not supported by orun yet");
		mf_tpl_messages_free(req_msgs);
		goto done;
	}
	if (images_present(root, chat)) {
		enum rn_cap v = RN_CAP_VISION;
		if (rn_srv_model_check(sm, &v, 1, err, sizeof err))
			respond_error(I, 400, err);
		else
			respond_error(I, 400, "images are not supported by orun yet (no vision engine)");
		mf_tpl_messages_free(req_msgs);
		goto done;
	}
	if (!sm->m->model_path) {
		respond_errorf(I, 500, "model '%s' has no model layer", model);
		mf_tpl_messages_free(req_msgs);
		goto done;
	}

	/* ---- schedule */
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
	I->runner = rn_sched_acquire(s->sched, &smod, &lo, keep_alive, rn_api_req_gone, r, &se);
	free(details);
	if (!I->runner) {
		respond_error(I, se.status, se.msg);
		mf_tpl_messages_free(req_msgs);
		goto done;
	}
	I->t_loaded = rn_http_now_ns();
	if (empty) {
		respond_simple_done(I, "load");
		mf_tpl_messages_free(req_msgs);
		goto done;
	}

	/* ---- prompt */
	if (chat) {
		struct msg_list ml = {0};
		bool add_system = !(n_req_msgs && req_msgs->items[0].role.n == 6 &&
				    memcmp(req_msgs->items[0].role.p, "system", 6) == 0);
		if (build_messages(sm, req_msgs ? req_msgs->items : NULL, n_req_msgs, NULL, add_system, &ml) < 0) {
			msg_list_free(&ml);
			mf_tpl_messages_free(req_msgs);
			respond_error(I, 500, "out of memory");
			goto done;
		}
		if (!sm->tpl) {
			msg_list_free(&ml);
			mf_tpl_messages_free(req_msgs);
			respond_error(I, 500, sm->tpl_error);
			goto done;
		}
		int rc = chat_prompt(I, &ml, tools, &tv, truncate, rn_runner_n_ctx(I->runner));
		msg_list_free(&ml);
		mf_tpl_messages_free(req_msgs);
		req_msgs = NULL;
		if (rc < 0) {
			respond_error(I, I->err_status, I->err_msg);
			goto done;
		}
	} else {
		mf_tpl_messages_free(req_msgs);
		req_msgs = NULL;
		if (raw) {
			I->prompt = strdup(prompt);
			I->prompt_len = strlen(prompt);
		} else {
			struct mf_tpl *own_tpl = NULL;
			const struct mf_tpl *tpl = sm->tpl;
			if (*tmpl) {
				struct mf_tpl_error te = {0};
				if (mf_tpl_parse(tmpl, strlen(tmpl), &own_tpl, &te) != MF_TPL_OK) {
					respond_error(I, 500, te.msg);
					goto done;
				}
				tpl = own_tpl;
			}
			if (!tpl) {
				respond_error(I, 500, sm->tpl_error);
				goto done;
			}
			/* context (deprecated): the detokenized ids go in front of the prompt */
			struct ob_buf pre;
			ob_buf_init(&pre, 0);
			if (context && context->count) {
				int32_t *ids = malloc(context->count * sizeof *ids);
				size_t k = 0;
				if (ids) {
					OB_JSON_FOREACH(c, context)
					{
						int64_t x = 0;
						ob_json_int(c, &x);
						ids[k++] = (int32_t)x;
					}
					size_t need = 0;
					const struct rn_tok *tok = rn_runner_tok(I->runner);
					/* as llama-server's /detokenize: special tokens rendered */
					int trc = rn_tok_detokenize(tok, ids, k, false, true, NULL, 0, &need);
					char *txt = (trc == RN_TOK_OK || trc == RN_TOK_ERR_NOSPACE) ? malloc(need + 1) : NULL;
					if (txt && rn_tok_detokenize(tok, ids, k, false, true, txt, need, &need) == RN_TOK_OK)
						ob_buf_append(&pre, txt, need);
					else if (!txt || trc == RN_TOK_ERR_RANGE) {
						free(txt);
						free(ids);
						ob_buf_free(&pre);
						mf_tpl_free(own_tpl);
						respond_error(I, 500, "invalid context: a token id is out of range");
						goto done;
					}
					free(txt);
					free(ids);
				}
			}
			if (*suffix) {
				struct mf_tpl_values v = {0};
				v.prompt = str_of(prompt);
				v.suffix = str_of(suffix);
				v.think = tv.on;
				v.think_level = str_of(tv.level);
				v.is_think_set = tv.set;
				char *p = NULL;
				size_t pl = 0;
				int rc = render(I, tpl, &v, &p, &pl);
				if (rc == 0) {
					ob_buf_append(&pre, p, pl);
					free(p);
				}
				if (rc < 0) {
					ob_buf_free(&pre);
					mf_tpl_free(own_tpl);
					respond_error(I, I->err_status, I->err_msg);
					goto done;
				}
			} else {
				struct mf_tpl_message user = {0};
				user.role = str_of("user");
				user.content = str_of(prompt);
				struct msg_list ml = {0};
				/* [system (request or model)] + model MESSAGEs (only without context) + the prompt */
				const struct mf_model *m = sm->m;
				size_t cap = m->n_messages + 2;
				ml.v = calloc(cap, sizeof *ml.v);
				if (!ml.v) {
					ob_buf_free(&pre);
					mf_tpl_free(own_tpl);
					respond_error(I, 500, "out of memory");
					goto done;
				}
				const char *sys = *system ? system : m->system;
				if (sys && *sys) {
					ml.v[ml.n].role = str_of("system");
					ml.v[ml.n].content = str_of(sys);
					ml.n++;
				}
				if (!context)
					for (size_t i = 0; i < m->n_messages; i++) {
						ml.v[ml.n].role = str_of(m->messages[i].role);
						ml.v[ml.n].content = str_of(m->messages[i].content);
						ml.n++;
					}
				ml.v[ml.n++] = user;
				int rc;
				if (!*tmpl) {
					rc = chat_prompt(I, &ml, NULL, &tv, truncate, rn_runner_n_ctx(I->runner));
					if (rc == 0) {
						if (pre.len) { /* a context prefix: the ids no longer match */
							free(I->tokens);
							I->tokens = NULL;
							I->n_tokens = 0;
						}
						ob_buf_append(&pre, I->prompt, I->prompt_len);
						free(I->prompt);
						I->prompt = NULL;
					}
				} else {
					struct mf_tpl_values v = {0};
					v.messages = ml.v;
					v.n_messages = ml.n;
					v.think = tv.on;
					v.think_level = str_of(tv.level);
					v.is_think_set = tv.set;
					char *p = NULL;
					size_t pl = 0;
					rc = render(I, tpl, &v, &p, &pl);
					if (rc == 0) {
						ob_buf_append(&pre, p, pl);
						free(p);
					}
				}
				msg_list_free(&ml);
				if (rc < 0) {
					ob_buf_free(&pre);
					mf_tpl_free(own_tpl);
					respond_error(I, I->err_status, I->err_msg);
					goto done;
				}
			}
			mf_tpl_free(own_tpl);
			if (pre.failed) {
				ob_buf_free(&pre);
				respond_error(I, 500, "out of memory");
				goto done;
			}
			I->prompt_len = pre.len;
			I->prompt = ob_buf_take(&pre);
			if (!I->prompt)
				I->prompt = strdup("");
		}
		if (!I->prompt) {
			respond_error(I, 500, "out of memory");
			goto done;
		}
	}

	if (debug_render) {
		char ts[64];
		struct ob_jw w;
		ob_jw_init(&w, 0, 0);
		if (out == RN_OUT_OPENAI) {
			/* openai.ChatCompletion / Completion with _debug_info */
			ob_jw_obj(&w);
			ob_jw_key(&w, "_debug_info");
			ob_jw_obj(&w);
			ob_jw_key(&w, "rendered_template");
			ob_jw_stringn(&w, I->prompt, I->prompt_len);
			ob_jw_obj_end(&w);
			ob_jw_obj_end(&w);
		} else {
			ob_jw_obj(&w);
			ob_jw_key(&w, "model");
			ob_jw_string(&w, I->model_name);
			ob_jw_key(&w, "created_at");
			ob_jw_string(&w, now_rfc3339(ts, sizeof ts));
			if (chat) {
				ob_jw_key(&w, "message");
				ob_jw_raw(&w, "{\"role\":\"\",\"content\":\"\"}", 24);
			} else {
				ob_jw_key(&w, "response");
				ob_jw_string(&w, "");
			}
			ob_jw_key(&w, "done");
			ob_jw_bool(&w, false);
			ob_jw_key(&w, "_debug_info");
			ob_jw_obj(&w);
			ob_jw_key(&w, "rendered_template");
			ob_jw_stringn(&w, I->prompt, I->prompt_len);
			ob_jw_obj_end(&w);
			ob_jw_obj_end(&w);
		}
		rn_api_send_jw(r, 200, &w);
		goto done;
	}

	/* ---- parsers */
	const char *open = sm->think_open, *close = sm->think_close;
	if (tv.on && *open && *close) {
		if (rn_think_init(&I->think, open, close) < 0) {
			respond_error(I, 500, "out of memory");
			goto done;
		}
		I->use_think = true;
		/* the template prefilled the opening tag: start inside the thinking state */
		size_t pl = I->prompt_len;
		while (pl && (I->prompt[pl - 1] == ' ' || I->prompt[pl - 1] == '\n' || I->prompt[pl - 1] == '\t' ||
			      I->prompt[pl - 1] == '\r'))
			pl--;
		size_t ol = strlen(open);
		if (pl >= ol && memcmp(I->prompt + pl - ol, open, ol) == 0) {
			struct ob_buf a, b;
			ob_buf_init(&a, 0);
			ob_buf_init(&b, 0);
			(void)rn_think_add(&I->think, open, ol, &a, &b);
			ob_buf_free(&a);
			ob_buf_free(&b);
		}
	}
	if (chat && I->had_tools && sm->tpl) {
		size_t nt = tools->count, k = 0;
		const char **names = calloc(nt ? nt : 1, sizeof *names);
		if (!names) {
			respond_error(I, 500, "out of memory");
			goto done;
		}
		OB_JSON_FOREACH(t, tools)
		{
			const struct ob_json *fn = rn_dec_get(t, "function");
			const struct ob_json *nmv = fn ? rn_dec_get(fn, "name") : NULL;
			names[k++] = nmv && nmv->type == OB_JSON_STRING ? nmv->str : "";
		}
		int rc = rn_tools_init(&I->tools, mf_tpl_tool_tag(sm->tpl), names, k);
		free(names);
		if (rc < 0) {
			respond_error(I, 500, "out of memory");
			goto done;
		}
		I->use_tools = true;
	}

	/* ---- tokens and the job */
	if (!I->tokens && tokenize(I, I->prompt, I->prompt_len, &I->tokens, &I->n_tokens) < 0) {
		respond_error(I, I->err_status, I->err_msg);
		goto done;
	}
	if (I->n_tokens == 0) {
		respond_error(I, 400, "the prompt is empty after tokenization");
		goto done;
	}
	struct rn_request rq;
	rn_request_default(&rq);
	rq.prompt = I->tokens;
	rq.n_prompt = I->n_tokens;
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
	rq.truncate = truncate;
	rq.shift = shift;
	rq.stop = (const char *const *)I->opts.stop;
	rq.n_stop = (int)I->opts.n_stop;
	I->job = rn_job_submit(s->sched, I->runner, &rq, &se);
	if (I->job && I->stream) {
		I->fd = rn_http_req_fd(r);
		rn_job_set_sink(I->job, infer_sink, I);
	}
	if (!I->job) {
		respond_error(I, se.status, se.msg);
		goto done;
	}
	rn_metrics_in_flight(s->metrics, +1);
	I->in_flight = true;

	/* ---- answer: wait for the first piece, then stream (or collect everything) */
	int rc = produce(I);
	if (rc < 0) {
		if (I->err_status)
			respond_error(I, I->err_status, I->err_msg);
		else if (rn_api_req_gone(r))
			respond_error(I, 499, "request canceled");
		else
			respond_error(I, 500, "generation failed");
		goto done;
	}
	if (!I->stream) {
		if (out == RN_OUT_OPENAI)
			rn_http_respond(r, 200, "application/json", I->line.p, I->line.len);
		else
			rn_http_respond_json(r, 200, I->line.p, I->line.len);
		goto done;
	}
	const char *ctype = out == RN_OUT_OPENAI ? "text/event-stream" : "application/x-ndjson";
	struct rn_http_source src = {src_next, src_close, I};
	rn_http_respond_stream(r, 200, ctype, rc > 0 ? I->line.p : "", rc > 0 ? I->line.len : 0, &src);
	return; /* I is owned by the stream now */
done:
	infer_free(I);
}

/* ---------------------------------------------------------------------------------------------------- */
/* the Ollama routes */

void rn_api_chat(struct rn_http_req *r)
{
	size_t len;
	const char *body = rn_http_req_body(r, &len);
	rn_infer_run(r, RN_INF_CHAT, body, len, RN_OUT_OLLAMA, NULL);
}

void rn_api_generate(struct rn_http_req *r)
{
	size_t len;
	const char *body = rn_http_req_body(r, &len);
	rn_infer_run(r, RN_INF_GENERATE, body, len, RN_OUT_OLLAMA, NULL);
}
