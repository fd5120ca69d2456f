/* runner/api_openai.c — the OpenAI-compatible endpoints, shaped as Ollama's openai/openai.go and
 * middleware/openai.go: /v1/chat/completions and /v1/completions convert the request into a native chat /
 * generate request and run the same path; answers are rewritten into OpenAI objects (SSE `data:` events,
 * `data: [DONE]`), errors into {"error":{"message","type","param":null,"code":null}}. Also /v1/models and
 * /v1/models/:model. /v1/embeddings lives with the other embedding endpoints.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "modelfile/jsonutil.h"
#include "modelfile/name.h"
#include "runner/http_decode.h"
#include "runner/server.h"
#include "runner/server_infer.h"
#include "runner/server_model.h"

void rn_oai_respond_error(struct rn_http_req *r, int status, const char *msg)
{
	const char *type = status == 400 ? "invalid_request_error" : status == 404 ? "not_found_error" : "api_error";
	struct mf_jw w;
	mf_jw_init(&w, 0, 0);
	mf_jw_obj(&w);
	mf_jw_key(&w, "error");
	mf_jw_obj(&w);
	mf_jw_key(&w, "message");
	mf_jw_string(&w, msg);
	mf_jw_key(&w, "type");
	mf_jw_string(&w, type);
	mf_jw_key(&w, "param");
	mf_jw_null(&w);
	mf_jw_key(&w, "code");
	mf_jw_null(&w);
	mf_jw_obj_end(&w);
	mf_jw_obj_end(&w);
	size_t n;
	char *s = mf_jw_take_line(&w, &n);
	if (s)
		rn_http_respond(r, status, "application/json", s, n);
	else
		rn_http_respond_error(r, 500, "out of memory");
	free(s);
}

/* rand.Intn(999) */
static int rand999(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t x = (uint64_t)ts.tv_nsec * 6364136223846793005ULL + (uint64_t)ts.tv_sec;
	x ^= x >> 33;
	return (int)(x % 999);
}

/* ---------------------------------------------------------------------------------------------------- */
/* formatters */

static void write_oai_tool_calls(struct mf_jw *w, const struct rn_infer_emit *e)
{
	mf_jw_arr(w);
	for (size_t i = 0; i < e->n_calls; i++) {
		const struct rn_tool_call *c = &e->calls[i];
		mf_jw_obj(w);
		mf_jw_key(w, "id");
		mf_jw_string(w, c->id);
		mf_jw_key(w, "index");
		mf_jw_int(w, c->index);
		mf_jw_key(w, "type");
		mf_jw_string(w, "function");
		mf_jw_key(w, "function");
		mf_jw_obj(w);
		mf_jw_key(w, "name");
		mf_jw_string(w, c->name);
		mf_jw_key(w, "arguments");
		mf_jw_string(w, c->arguments ? c->arguments : "{}");
		mf_jw_obj_end(w);
		mf_jw_obj_end(w);
	}
	mf_jw_arr_end(w);
}

static void sse(struct mf_buf *out, struct mf_jw *w)
{
	const char *s = mf_jw_str(w);
	if (!s) {
		out->failed = true;
		mf_jw_free(w);
		return;
	}
	mf_buf_puts(out, "data: ");
	mf_buf_append(out, s, w->len);
	mf_buf_puts(out, "\n\n");
	mf_jw_free(w);
}

static void chunk_head(struct mf_jw *w, const struct rn_oai_opts *o, const char *object, const struct rn_infer_emit *e)
{
	mf_jw_obj(w);
	mf_jw_key(w, "id");
	mf_jw_string(w, o->id);
	mf_jw_key(w, "object");
	mf_jw_string(w, object);
	mf_jw_key(w, "created");
	mf_jw_int(w, e->created_unix);
	mf_jw_key(w, "model");
	mf_jw_string(w, e->model);
	mf_jw_key(w, "system_fingerprint");
	mf_jw_string(w, "fp_ollama");
}

/* one chat.completion.chunk with the given delta parts */
static void chat_chunk(const struct rn_oai_opts *o, const struct rn_infer_emit *e, bool role, bool content,
		       bool reasoning, bool calls, struct mf_buf *out)
{
	struct mf_jw w;
	mf_jw_init(&w, 0, 0);
	chunk_head(&w, o, "chat.completion.chunk", e);
	mf_jw_key(&w, "choices");
	mf_jw_arr(&w);
	mf_jw_obj(&w);
	mf_jw_key(&w, "index");
	mf_jw_int(&w, 0);
	mf_jw_key(&w, "delta");
	mf_jw_obj(&w);
	if (role) {
		mf_jw_key(&w, "role");
		mf_jw_string(&w, "assistant");
	}
	if (content) {
		mf_jw_key(&w, "content");
		mf_jw_stringn(&w, e->content, e->content_len);
	}
	if (reasoning && e->thinking_len) {
		mf_jw_key(&w, "reasoning");
		mf_jw_stringn(&w, e->thinking, e->thinking_len);
	}
	if (calls && e->n_calls) {
		mf_jw_key(&w, "tool_calls");
		write_oai_tool_calls(&w, e);
	}
	mf_jw_obj_end(&w);
	mf_jw_key(&w, "finish_reason");
	mf_jw_null(&w);
	mf_jw_obj_end(&w);
	mf_jw_arr_end(&w);
	mf_jw_obj_end(&w);
	sse(out, &w);
}

static void usage(struct mf_jw *w, const struct rn_infer_emit *e)
{
	mf_jw_obj(w);
	mf_jw_key(w, "prompt_tokens");
	mf_jw_int(w, e->prompt_eval_count);
	mf_jw_key(w, "completion_tokens");
	mf_jw_int(w, e->eval_count);
	mf_jw_key(w, "total_tokens");
	mf_jw_int(w, e->prompt_eval_count + e->eval_count);
	mf_jw_obj_end(w);
}

void rn_oai_chat_chunk(const struct rn_oai_opts *o, const struct rn_infer_emit *e, bool *first, bool *tool_sent,
		       struct mf_buf *out)
{
	bool empty_trailer = e->done && !*first && e->content_len == 0 && e->thinking_len == 0 && e->n_calls == 0;
	if (!empty_trailer) {
		bool mixed = e->thinking_len && (e->content_len || e->n_calls);
		if (mixed) {
			chat_chunk(o, e, *first, false, true, false, out);
			chat_chunk(o, e, false, true, false, true, out);
		} else {
			chat_chunk(o, e, *first, true, true, true, out);
		}
		if (e->n_calls)
			*tool_sent = true;
		*first = false;
	}
	if (!e->done)
		return;
	const char *reason = e->done_reason && *e->done_reason ? e->done_reason : "stop";
	if (strcmp(reason, "stop") == 0 && *tool_sent)
		reason = "tool_calls";
	struct mf_jw w;
	mf_jw_init(&w, 0, 0);
	chunk_head(&w, o, "chat.completion.chunk", e);
	mf_jw_key(&w, "choices");
	mf_jw_arr(&w);
	mf_jw_obj(&w);
	mf_jw_key(&w, "index");
	mf_jw_int(&w, 0);
	mf_jw_key(&w, "delta");
	mf_jw_obj(&w);
	mf_jw_obj_end(&w);
	mf_jw_key(&w, "finish_reason");
	mf_jw_string(&w, reason);
	mf_jw_obj_end(&w);
	mf_jw_arr_end(&w);
	mf_jw_obj_end(&w);
	sse(out, &w);
	if (o->include_usage) {
		mf_jw_init(&w, 0, 0);
		chunk_head(&w, o, "chat.completion.chunk", e);
		mf_jw_key(&w, "choices");
		mf_jw_arr(&w);
		mf_jw_arr_end(&w);
		mf_jw_key(&w, "usage");
		usage(&w, e);
		mf_jw_obj_end(&w);
		sse(out, &w);
	}
	mf_buf_puts(out, "data: [DONE]\n\n");
}

void rn_oai_chat_whole(const struct rn_oai_opts *o, const struct rn_infer_emit *e, struct mf_jw *w)
{
	chunk_head(w, o, "chat.completion", e);
	mf_jw_key(w, "choices");
	mf_jw_arr(w);
	mf_jw_obj(w);
	mf_jw_key(w, "index");
	mf_jw_int(w, 0);
	mf_jw_key(w, "message");
	mf_jw_obj(w);
	mf_jw_key(w, "role");
	mf_jw_string(w, "assistant");
	mf_jw_key(w, "content");
	mf_jw_stringn(w, e->content, e->content_len);
	if (e->thinking_len) {
		mf_jw_key(w, "reasoning");
		mf_jw_stringn(w, e->thinking, e->thinking_len);
	}
	if (e->n_calls) {
		mf_jw_key(w, "tool_calls");
		write_oai_tool_calls(w, e);
	}
	mf_jw_obj_end(w);
	mf_jw_key(w, "finish_reason");
	const char *reason = e->done_reason ? e->done_reason : "";
	if (strcmp(reason, "stop") == 0 && e->n_calls)
		reason = "tool_calls";
	if (*reason)
		mf_jw_string(w, reason);
	else
		mf_jw_null(w);
	mf_jw_obj_end(w);
	mf_jw_arr_end(w);
	mf_jw_key(w, "usage");
	usage(w, e);
	mf_jw_obj_end(w);
}

static void completion_obj(const struct rn_oai_opts *o, const struct rn_infer_emit *e, struct mf_jw *w, bool with_usage,
			   bool empty_choices)
{
	mf_jw_obj(w);
	mf_jw_key(w, "id");
	mf_jw_string(w, o->id);
	mf_jw_key(w, "object");
	mf_jw_string(w, "text_completion");
	mf_jw_key(w, "created");
	mf_jw_int(w, e->created_unix);
	if (empty_choices) {
		mf_jw_key(w, "choices");
		mf_jw_arr(w);
		mf_jw_arr_end(w);
	} else {
		mf_jw_key(w, "choices");
		mf_jw_arr(w);
		mf_jw_obj(w);
		mf_jw_key(w, "text");
		mf_jw_stringn(w, e->content, e->content_len);
		mf_jw_key(w, "index");
		mf_jw_int(w, 0);
		mf_jw_key(w, "finish_reason");
		if (e->done && e->done_reason && *e->done_reason)
			mf_jw_string(w, e->done_reason);
		else
			mf_jw_null(w);
		mf_jw_obj_end(w);
		mf_jw_arr_end(w);
	}
	mf_jw_key(w, "model");
	mf_jw_string(w, e->model);
	mf_jw_key(w, "system_fingerprint");
	mf_jw_string(w, "fp_ollama");
	if (with_usage) {
		mf_jw_key(w, "usage");
		usage(w, e);
	}
	mf_jw_obj_end(w);
}

void rn_oai_completion_chunk(const struct rn_oai_opts *o, const struct rn_infer_emit *e, struct mf_buf *out)
{
	struct mf_jw w;
	mf_jw_init(&w, 0, 0);
	if (o->include_usage) {
		/* Ollama sends a zero usage object on every chunk when include_usage is set */
		struct rn_infer_emit z = *e;
		z.prompt_eval_count = z.eval_count = 0;
		completion_obj(o, &z, &w, true, false);
	} else {
		completion_obj(o, e, &w, false, false);
	}
	sse(out, &w);
	if (!e->done)
		return;
	if (o->include_usage) {
		mf_jw_init(&w, 0, 0);
		completion_obj(o, e, &w, true, true);
		sse(out, &w);
	}
	mf_buf_puts(out, "data: [DONE]\n\n");
}

void rn_oai_completion_whole(const struct rn_oai_opts *o, const struct rn_infer_emit *e, struct mf_jw *w)
{
	/* Completion: id, object, created, model, system_fingerprint, choices, usage */
	mf_jw_obj(w);
	mf_jw_key(w, "id");
	mf_jw_string(w, o->id);
	mf_jw_key(w, "object");
	mf_jw_string(w, "text_completion");
	mf_jw_key(w, "created");
	mf_jw_int(w, e->created_unix);
	mf_jw_key(w, "model");
	mf_jw_string(w, e->model);
	mf_jw_key(w, "system_fingerprint");
	mf_jw_string(w, "fp_ollama");
	mf_jw_key(w, "choices");
	mf_jw_arr(w);
	mf_jw_obj(w);
	mf_jw_key(w, "text");
	mf_jw_stringn(w, e->content, e->content_len);
	mf_jw_key(w, "index");
	mf_jw_int(w, 0);
	mf_jw_key(w, "finish_reason");
	if (e->done_reason && *e->done_reason)
		mf_jw_string(w, e->done_reason);
	else
		mf_jw_null(w);
	mf_jw_obj_end(w);
	mf_jw_arr_end(w);
	mf_jw_key(w, "usage");
	usage(w, e);
	mf_jw_obj_end(w);
}

/* ---------------------------------------------------------------------------------------------------- */
/* request conversion */

static const char *think_from_effort(const char *effort, bool *bad)
{
	*bad = false;
	if (!effort || !*effort)
		return NULL;
	if (strcmp(effort, "none") == 0)
		return "false";
	if (strcmp(effort, "minimal") == 0)
		return "\"low\"";
	if (strcmp(effort, "low") == 0)
		return "\"low\"";
	if (strcmp(effort, "medium") == 0)
		return "\"medium\"";
	if (strcmp(effort, "high") == 0)
		return "\"high\"";
	if (strcmp(effort, "max") == 0 || strcmp(effort, "xhigh") == 0 || strcmp(effort, "ultra") == 0)
		return "\"max\"";
	*bad = true;
	return NULL;
}

/* Writes options common to chat and completions. */
static void write_stop(struct mf_jw *w, const struct mf_json *stop, bool strict, char *err, size_t err_size, bool *bad)
{
	*bad = false;
	if (!stop || stop->type == MF_JSON_NULL)
		return;
	if (stop->type == MF_JSON_STRING) {
		mf_jw_key(w, "stop");
		mf_jw_arr(w);
		mf_jw_stringn(w, stop->str, stop->len);
		mf_jw_arr_end(w);
	} else if (stop->type == MF_JSON_ARRAY) {
		mf_jw_key(w, "stop");
		mf_jw_arr(w);
		MF_JSON_FOREACH(s, stop)
		{
			if (s->type == MF_JSON_STRING) {
				mf_jw_stringn(w, s->str, s->len);
			} else if (strict) {
				snprintf(err, err_size, "invalid type for 'stop' field: %s",
					 s->type == MF_JSON_NUMBER ? "float64" : s->type == MF_JSON_BOOL ? "bool" : "map[string]interface {}");
				*bad = true;
			}
		}
		mf_jw_arr_end(w);
	}
}

static bool num_or_null(const struct mf_json *v)
{
	return v && v->type == MF_JSON_NUMBER;
}

/* One OpenAI message → one or more native messages (content parts become separate messages). */
static int convert_message(struct mf_jw *w, const struct mf_json *msgs, const struct mf_json *m, char *err, size_t n)
{
	const struct mf_json *role = rn_dec_get(m, "role");
	const struct mf_json *content = rn_dec_get(m, "content");
	const struct mf_json *reasoning = rn_dec_get(m, "reasoning");
	const struct mf_json *tool_calls = rn_dec_get(m, "tool_calls");
	const struct mf_json *name = rn_dec_get(m, "name");
	const struct mf_json *tcid = rn_dec_get(m, "tool_call_id");
	const char *rs = role && role->type == MF_JSON_STRING ? role->str : "";
	/* tool messages: name from "name", else from the assistant call with this id */
	const char *tool_name = "";
	bool is_tool = strcasecmp(rs, "tool") == 0;
	if (is_tool) {
		if (name && name->type == MF_JSON_STRING && name->len)
			tool_name = name->str;
		else if (tcid && tcid->type == MF_JSON_STRING && tcid->len) {
			for (long i = (long)msgs->count - 1; i >= 0 && !*tool_name; i--) {
				const struct mf_json *mm = mf_json_at(msgs, (size_t)i);
				const struct mf_json *tcs = mm ? rn_dec_get(mm, "tool_calls") : NULL;
				if (!tcs || tcs->type != MF_JSON_ARRAY)
					continue;
				MF_JSON_FOREACH(tc, tcs)
				{
					const struct mf_json *id = rn_dec_get(tc, "id");
					const struct mf_json *fn = rn_dec_get(tc, "function");
					const struct mf_json *fname = fn ? rn_dec_get(fn, "name") : NULL;
					if (id && id->type == MF_JSON_STRING && strcmp(id->str, tcid->str) == 0 && fname &&
					    fname->type == MF_JSON_STRING)
						tool_name = fname->str;
				}
			}
		}
	}
	/* tool calls: arguments are a JSON string holding an object */
	struct mf_jw tw;
	mf_jw_init(&tw, 0, 0);
	bool have_calls = tool_calls && tool_calls->type == MF_JSON_ARRAY;
	if (have_calls) {
		mf_jw_arr(&tw);
		MF_JSON_FOREACH(tc, tool_calls)
		{
			const struct mf_json *id = rn_dec_get(tc, "id");
			const struct mf_json *fn = rn_dec_get(tc, "function");
			const struct mf_json *fname = fn ? rn_dec_get(fn, "name") : NULL;
			const struct mf_json *args = fn ? rn_dec_get(fn, "arguments") : NULL;
			struct mf_json_error je;
			struct mf_json_doc *ad = NULL;
			if (args && args->type == MF_JSON_STRING)
				ad = mf_json_parse(args->str, args->len, &je);
			if (!ad || (mf_json_root(ad)->type != MF_JSON_OBJECT && mf_json_root(ad)->type != MF_JSON_NULL)) {
				mf_json_free(ad);
				mf_jw_free(&tw);
				snprintf(err, n, "invalid tool call arguments");
				return -1;
			}
			mf_jw_obj(&tw);
			if (id && id->type == MF_JSON_STRING && id->len) {
				mf_jw_key(&tw, "id");
				mf_jw_stringn(&tw, id->str, id->len);
			}
			mf_jw_key(&tw, "function");
			mf_jw_obj(&tw);
			mf_jw_key(&tw, "name");
			mf_jw_string(&tw, fname && fname->type == MF_JSON_STRING ? fname->str : "");
			mf_jw_key(&tw, "arguments");
			mf_jw_value(&tw, mf_json_root(ad), false);
			mf_jw_obj_end(&tw);
			mf_jw_obj_end(&tw);
			mf_json_free(ad);
		}
		mf_jw_arr_end(&tw);
	}
	const char *tcj = have_calls ? mf_jw_str(&tw) : NULL;
#define EXTRAS(with_calls)                                                                                   \
	do {                                                                                                 \
		if (reasoning && reasoning->type == MF_JSON_STRING && reasoning->len) {                        \
			mf_jw_key(w, "thinking");                                                          \
			mf_jw_stringn(w, reasoning->str, reasoning->len);                                  \
		}                                                                                            \
		if ((with_calls) && tcj) {                                                                   \
			mf_jw_key(w, "tool_calls");                                                        \
			mf_jw_raw(w, tcj, strlen(tcj));                                                    \
		}                                                                                            \
		if (*tool_name) {                                                                            \
			mf_jw_key(w, "tool_name");                                                         \
			mf_jw_string(w, tool_name);                                                        \
		}                                                                                            \
		if (tcid && tcid->type == MF_JSON_STRING && tcid->len) {                                     \
			mf_jw_key(w, "tool_call_id");                                                      \
			mf_jw_stringn(w, tcid->str, tcid->len);                                            \
		}                                                                                            \
	} while (0)
	if (content && content->type == MF_JSON_STRING) {
		mf_jw_obj(w);
		mf_jw_key(w, "role");
		mf_jw_string(w, rs);
		mf_jw_key(w, "content");
		mf_jw_stringn(w, content->str, content->len);
		EXTRAS(true);
		mf_jw_obj_end(w);
	} else if (content && content->type == MF_JSON_ARRAY) {
		size_t i = 0, cnt = content->count;
		MF_JSON_FOREACH(part, content)
		{
			bool last = ++i == cnt;
			const struct mf_json *type = part->type == MF_JSON_OBJECT ? rn_dec_get(part, "type") : NULL;
			if (!type || type->type != MF_JSON_STRING) {
				mf_jw_free(&tw);
				snprintf(err, n, "invalid message format");
				return -1;
			}
			if (strcmp(type->str, "text") == 0) {
				const struct mf_json *text = rn_dec_get(part, "text");
				if (!text || text->type != MF_JSON_STRING) {
					mf_jw_free(&tw);
					snprintf(err, n, "invalid message format");
					return -1;
				}
				mf_jw_obj(w);
				mf_jw_key(w, "role");
				mf_jw_string(w, rs);
				mf_jw_key(w, "content");
				mf_jw_stringn(w, text->str, text->len);
				if (last && have_calls)
					EXTRAS(true);
				mf_jw_obj_end(w);
			} else if (strcmp(type->str, "image_url") == 0 || strcmp(type->str, "input_audio") == 0) {
				/* orun has no vision/audio engine: refuse clearly (an image message would need one) */
				mf_jw_free(&tw);
				snprintf(err, n, "%s content is not supported by orun yet (no vision or audio engine)",
					 strcmp(type->str, "image_url") == 0 ? "image" : "audio");
				return -1;
			} else {
				mf_jw_free(&tw);
				snprintf(err, n, "invalid message format");
				return -1;
			}
		}
	} else {
		if (!have_calls) {
			const char *t = !content ? "<nil>" : content->type == MF_JSON_NUMBER ? "float64"
							     : content->type == MF_JSON_BOOL   ? "bool"
											       : "map[string]interface {}";
			mf_jw_free(&tw);
			snprintf(err, n, "invalid message content type: %s", t);
			return -1;
		}
		mf_jw_obj(w);
		mf_jw_key(w, "role");
		mf_jw_string(w, rs);
		mf_jw_key(w, "content");
		mf_jw_string(w, "");
		EXTRAS(true);
		mf_jw_obj_end(w);
	}
#undef EXTRAS
	mf_jw_free(&tw);
	return 0;
}

void rn_oai_chat(struct rn_http_req *r)
{
	size_t len;
	const char *body = rn_http_req_body(r, &len);
	struct rn_dec d = {.go_struct = "ChatCompletionRequest", .prefix = ""};
	const struct mf_json *root;
	struct mf_json_doc *doc = rn_dec_parse(&d, body, len, &root);
	if (!doc) {
		rn_oai_respond_error(r, 400, d.err);
		return;
	}
	struct rn_oai_opts o = {0};
	snprintf(o.id, sizeof o.id, "chatcmpl-%d", rand999());
	const char *model = "";
	rn_dec_string(&d, root, "model", &model, NULL);
	rn_dec_bool(&d, root, "stream", &o.stream);
	const struct mf_json *so = rn_dec_object(&d, root, "stream_options", "openai.StreamOptions");
	if (so)
		rn_dec_bool(&d, so, "include_usage", &o.include_usage);
	const struct mf_json *msgs = rn_dec_array(&d, root, "messages", "[]openai.Message");
	const struct mf_json *tools = rn_dec_array(&d, root, "tools", "[]api.Tool");
	int64_t max_tokens = 0, seed = 0, top_logprobs = 0;
	bool has_max = rn_dec_int(&d, root, "max_tokens", &max_tokens);
	bool has_seed = rn_dec_int(&d, root, "seed", &seed);
	double temp = 1.0, top_p = 1.0, fp = 0, pp = 0;
	rn_dec_float(&d, root, "temperature", &temp);
	rn_dec_float(&d, root, "top_p", &top_p);
	bool has_fp = rn_dec_float(&d, root, "frequency_penalty", &fp);
	bool has_pp = rn_dec_float(&d, root, "presence_penalty", &pp);
	bool logprobs = false, debug = false;
	rn_dec_bool(&d, root, "logprobs", &logprobs);
	rn_dec_int(&d, root, "top_logprobs", &top_logprobs);
	rn_dec_bool(&d, root, "_debug_render_only", &debug);
	const char *effort = NULL;
	const struct mf_json *reasoning = rn_dec_object(&d, root, "reasoning", "openai.Reasoning");
	if (reasoning)
		rn_dec_string(&d, reasoning, "effort", &effort, NULL);
	else
		rn_dec_string(&d, root, "reasoning_effort", &effort, NULL);
	const struct mf_json *rf = rn_dec_object(&d, root, "response_format", "openai.ResponseFormat");
	if (d.failed) {
		rn_oai_respond_error(r, 400, d.err);
		mf_json_free(doc);
		return;
	}
	if (!msgs || msgs->count == 0) {
		rn_oai_respond_error(r, 400, "[] is too short - 'messages'");
		mf_json_free(doc);
		return;
	}
	char err[512];
	bool bad;
	const char *think = think_from_effort(effort, &bad);
	if (bad) {
		snprintf(err, sizeof err,
			 "invalid reasoning value: \"%s\" (must be \"minimal\", \"low\", \"medium\", \"high\", \"xhigh\", "
			 "\"ultra\", \"max\", or \"none\")",
			 effort);
		rn_oai_respond_error(r, 400, err);
		mf_json_free(doc);
		return;
	}
	struct mf_jw w;
	mf_jw_init(&w, 0, 0);
	mf_jw_obj(&w);
	mf_jw_key(&w, "model");
	mf_jw_string(&w, model);
	mf_jw_key(&w, "messages");
	mf_jw_arr(&w);
	MF_JSON_FOREACH(m, msgs)
	{
		if (m->type != MF_JSON_OBJECT || convert_message(&w, msgs, m, err, sizeof err) < 0) {
			if (m->type != MF_JSON_OBJECT)
				snprintf(err, sizeof err, "invalid message format");
			mf_jw_free(&w);
			rn_oai_respond_error(r, 400, err);
			mf_json_free(doc);
			return;
		}
	}
	mf_jw_arr_end(&w);
	if (rf) {
		const struct mf_json *type = rn_dec_get(rf, "type");
		if (type && type->type == MF_JSON_STRING &&
		    (strcasecmp(type->str, "json_object") == 0 || strcasecmp(type->str, "json_schema") == 0)) {
			mf_jw_key(&w, "format");
			mf_jw_string(&w, "json");
		}
	}
	mf_jw_key(&w, "options");
	mf_jw_obj(&w);
	write_stop(&w, rn_dec_get(root, "stop"), false, err, sizeof err, &bad);
	if (has_max) {
		mf_jw_key(&w, "num_predict");
		mf_jw_int(&w, max_tokens);
	}
	mf_jw_key(&w, "temperature");
	mf_jw_float64(&w, temp);
	if (has_seed) {
		mf_jw_key(&w, "seed");
		mf_jw_int(&w, seed);
	}
	if (has_fp) {
		mf_jw_key(&w, "frequency_penalty");
		mf_jw_float64(&w, fp);
	}
	if (has_pp) {
		mf_jw_key(&w, "presence_penalty");
		mf_jw_float64(&w, pp);
	}
	mf_jw_key(&w, "top_p");
	mf_jw_float64(&w, top_p);
	mf_jw_obj_end(&w);
	if (tools) {
		mf_jw_key(&w, "tools");
		mf_jw_value(&w, tools, false);
	}
	if (think) {
		mf_jw_key(&w, "think");
		mf_jw_raw(&w, think, strlen(think));
	}
	if (logprobs) {
		mf_jw_key(&w, "logprobs");
		mf_jw_bool(&w, true);
	}
	if (top_logprobs) {
		mf_jw_key(&w, "top_logprobs");
		mf_jw_int(&w, top_logprobs);
	}
	if (debug) {
		mf_jw_key(&w, "_debug_render_only");
		mf_jw_bool(&w, true);
	}
	mf_jw_obj_end(&w);
	(void)num_or_null;
	mf_json_free(doc);
	const char *native = mf_jw_str(&w);
	if (!native) {
		mf_jw_free(&w);
		rn_oai_respond_error(r, 500, "out of memory");
		return;
	}
	rn_infer_run(r, RN_INF_CHAT, native, w.len, RN_OUT_OPENAI, &o);
	mf_jw_free(&w);
}

void rn_oai_completions(struct rn_http_req *r)
{
	size_t len;
	const char *body = rn_http_req_body(r, &len);
	struct rn_dec d = {.go_struct = "CompletionRequest", .prefix = ""};
	const struct mf_json *root;
	struct mf_json_doc *doc = rn_dec_parse(&d, body, len, &root);
	if (!doc) {
		rn_oai_respond_error(r, 400, d.err);
		return;
	}
	struct rn_oai_opts o = {0};
	snprintf(o.id, sizeof o.id, "cmpl-%d", rand999());
	const char *model = "", *prompt = "", *suffix = "";
	rn_dec_string(&d, root, "model", &model, NULL);
	rn_dec_string(&d, root, "prompt", &prompt, NULL);
	rn_dec_string(&d, root, "suffix", &suffix, NULL);
	rn_dec_bool(&d, root, "stream", &o.stream);
	const struct mf_json *so = rn_dec_object(&d, root, "stream_options", "openai.StreamOptions");
	if (so)
		rn_dec_bool(&d, so, "include_usage", &o.include_usage);
	int64_t max_tokens = 0, seed = 0, lp = 0;
	bool has_max = rn_dec_int(&d, root, "max_tokens", &max_tokens);
	bool has_seed = rn_dec_int(&d, root, "seed", &seed);
	bool has_lp = rn_dec_int(&d, root, "logprobs", &lp);
	double temp = 1.0, top_p = 0, fp = 0, pp = 0;
	rn_dec_float(&d, root, "temperature", &temp);
	rn_dec_float(&d, root, "top_p", &top_p);
	rn_dec_float(&d, root, "frequency_penalty", &fp);
	rn_dec_float(&d, root, "presence_penalty", &pp);
	bool debug = false;
	rn_dec_bool(&d, root, "_debug_render_only", &debug);
	if (d.failed) {
		rn_oai_respond_error(r, 400, d.err);
		mf_json_free(doc);
		return;
	}
	char err[256];
	bool bad = false;
	struct mf_jw w;
	mf_jw_init(&w, 0, 0);
	mf_jw_obj(&w);
	mf_jw_key(&w, "model");
	mf_jw_string(&w, model);
	mf_jw_key(&w, "prompt");
	mf_jw_string(&w, prompt);
	if (*suffix) {
		mf_jw_key(&w, "suffix");
		mf_jw_string(&w, suffix);
	}
	mf_jw_key(&w, "options");
	mf_jw_obj(&w);
	write_stop(&w, rn_dec_get(root, "stop"), true, err, sizeof err, &bad);
	if (has_max) {
		mf_jw_key(&w, "num_predict");
		mf_jw_int(&w, max_tokens);
	}
	mf_jw_key(&w, "temperature");
	mf_jw_float32(&w, (float)temp);
	if (has_seed) {
		mf_jw_key(&w, "seed");
		mf_jw_int(&w, seed);
	}
	mf_jw_key(&w, "frequency_penalty");
	mf_jw_float32(&w, (float)fp);
	mf_jw_key(&w, "presence_penalty");
	mf_jw_float32(&w, (float)pp);
	mf_jw_key(&w, "top_p");
	mf_jw_float32(&w, top_p != 0 ? (float)top_p : 1.0f);
	mf_jw_obj_end(&w);
	if (has_lp && lp > 0) {
		mf_jw_key(&w, "logprobs");
		mf_jw_bool(&w, true);
		mf_jw_key(&w, "top_logprobs");
		mf_jw_int(&w, lp);
	}
	if (debug) {
		mf_jw_key(&w, "_debug_render_only");
		mf_jw_bool(&w, true);
	}
	mf_jw_obj_end(&w);
	mf_json_free(doc);
	if (bad) {
		mf_jw_free(&w);
		rn_oai_respond_error(r, 400, err);
		return;
	}
	const char *native = mf_jw_str(&w);
	if (!native) {
		mf_jw_free(&w);
		rn_oai_respond_error(r, 500, "out of memory");
		return;
	}
	rn_infer_run(r, RN_INF_GENERATE, native, w.len, RN_OUT_OPENAI, &o);
	mf_jw_free(&w);
}

/* ---------------------------------------------------------------------------------------------------- */
/* /v1/models */

static void write_model(struct mf_jw *w, const char *id, int64_t created)
{
	struct mf_name n;
	mf_name_parse(id, &n);
	mf_jw_obj(w);
	mf_jw_key(w, "id");
	mf_jw_string(w, id);
	mf_jw_key(w, "object");
	mf_jw_string(w, "model");
	mf_jw_key(w, "created");
	mf_jw_int(w, created);
	mf_jw_key(w, "owned_by");
	mf_jw_string(w, n.ns);
	mf_jw_obj_end(w);
}

void rn_oai_models(struct rn_http_req *r)
{
	struct rn_server *s = rn_api_server(r);
	struct mf_manifest **list = NULL;
	size_t n = 0;
	struct mf_error e = {0};
	if (mf_store_list(s->store, &list, &n, &e) != MF_OK) {
		rn_oai_respond_error(r, 500, e.msg);
		return;
	}
	struct mf_jw w;
	mf_jw_init(&w, 0, 0);
	mf_jw_obj(&w);
	mf_jw_key(&w, "object");
	mf_jw_string(&w, "list");
	mf_jw_key(&w, "data");
	if (!n) {
		mf_jw_null(&w); /* a nil slice in Go */
	} else {
		mf_jw_arr(&w);
		for (size_t i = 0; i < n; i++) {
			char disp[MF_NAME_STRING_MAX];
			mf_name_display(&list[i]->name, disp);
			write_model(&w, disp, list[i]->mtime_sec);
		}
		mf_jw_arr_end(&w);
	}
	mf_jw_obj_end(&w);
	mf_manifest_list_free(list, n);
	size_t len;
	char *out = mf_jw_take_line(&w, &len);
	if (out)
		rn_http_respond(r, 200, "application/json", out, len);
	else
		rn_oai_respond_error(r, 500, "out of memory");
	free(out);
}

void rn_oai_model(struct rn_http_req *r)
{
	struct rn_server *s = rn_api_server(r);
	const char *id = rn_http_req_param(r);
	struct mf_model *m = NULL;
	struct mf_error e = {0};
	if (mf_model_load(s->store, id, &m, &e) != MF_OK) {
		char disp[MF_NAME_STRING_MAX];
		struct mf_name n;
		mf_name_parse(id, &n);
		if (e.code == MF_ERR_NOT_FOUND) {
			char msg[600];
			snprintf(msg, sizeof msg, "model '%s' not found", mf_name_display(&n, disp));
			rn_oai_respond_error(r, 404, msg);
		} else {
			rn_oai_respond_error(r, e.http_status ? e.http_status : 500, e.msg);
		}
		return;
	}
	struct mf_jw w;
	mf_jw_init(&w, 0, 0);
	write_model(&w, id, m->manifest->mtime_sec);
	mf_model_free(m);
	size_t len;
	char *out = mf_jw_take_line(&w, &len);
	if (out)
		rn_http_respond(r, 200, "application/json", out, len);
	else
		rn_oai_respond_error(r, 500, "out of memory");
	free(out);
}
