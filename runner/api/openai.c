/* runner/api/openai.c — the OpenAI-compatible endpoints, shaped as Ollama's openai/openai.go and
 * middleware/openai.go: /v1/chat/completions and /v1/completions convert the request into a native chat /
 * generate request and run the generation pipeline (runner/api/pipeline.h) with this face's formatter
 * tables: OpenAI objects (SSE `data:` events, `data: [DONE]`), errors as {"error":{"message","type",
 * "param":null,"code":null}}. Also /v1/models and /v1/models/:model. /v1/embeddings lives with the other
 * embedding endpoints (runner/api/embed.c).
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/jsonutil.h"
#include "modelfile/model.h"
#include "modelfile/name.h"
#include "runner/api/api.h"
#include "runner/api/decode.h"
#include "runner/api/pipeline.h"

void rn_oai_respond_error(struct rn_http_req *r, int status, const char *msg)
{
	const char *type = status == 400 ? "invalid_request_error" : status == 404 ? "not_found_error" : "api_error";
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	ob_jw_key(&w, "error");
	ob_jw_obj(&w);
	ob_jw_key(&w, "message");
	ob_jw_string(&w, msg);
	ob_jw_key(&w, "type");
	ob_jw_string(&w, type);
	ob_jw_key(&w, "param");
	ob_jw_null(&w);
	ob_jw_key(&w, "code");
	ob_jw_null(&w);
	ob_jw_obj_end(&w);
	ob_jw_obj_end(&w);
	size_t n;
	char *s = ob_jw_take_line(&w, &n);
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

/* What the OpenAI face keeps per request (struct rn_infer_face.state). */
struct oai_state {
	bool include_usage; /* stream_options.include_usage */
	bool first;         /* the chat's role chunk is still due */
	bool tool_sent;     /* a tool call went out (finish_reason tool_calls) */
	char id[32];        /* "chatcmpl-N" / "cmpl-N" */
};

static void object_head(struct ob_jw *w, const struct oai_state *o, const char *object, const struct rn_infer_emit *e)
{
	ob_jw_obj(w);
	ob_jw_key(w, "id");
	ob_jw_string(w, o->id);
	ob_jw_key(w, "object");
	ob_jw_string(w, object);
	ob_jw_key(w, "created");
	ob_jw_int(w, e->created_unix);
	ob_jw_key(w, "model");
	ob_jw_string(w, e->model);
	ob_jw_key(w, "system_fingerprint");
	ob_jw_string(w, "fp_ollama");
}

/* one chat.completion.chunk with the given delta parts, as one SSE event; finish: its finish_reason (NULL:
 * null) */
static void chat_event(const struct oai_state *o, const struct rn_infer_emit *e, bool role, bool content,
		       bool reasoning, bool calls, const char *finish, struct ob_jw *w, struct ob_buf *out)
{
	ob_jw_reset(w);
	object_head(w, o, "chat.completion.chunk", e);
	ob_jw_key(w, "choices");
	ob_jw_arr(w);
	ob_jw_obj(w);
	ob_jw_key(w, "index");
	ob_jw_int(w, 0);
	ob_jw_key(w, "delta");
	ob_jw_obj(w);
	if (role) {
		ob_jw_key(w, "role");
		ob_jw_string(w, "assistant");
	}
	if (content) {
		ob_jw_key(w, "content");
		ob_jw_stringn(w, e->content, e->content_len);
	}
	if (reasoning && e->thinking_len) {
		ob_jw_key(w, "reasoning");
		ob_jw_stringn(w, e->thinking, e->thinking_len);
	}
	if (calls && e->n_calls) {
		ob_jw_key(w, "tool_calls");
		rn_infer_write_tool_calls(w, e, true);
	}
	ob_jw_obj_end(w);
	ob_jw_key(w, "finish_reason");
	if (finish)
		ob_jw_string(w, finish);
	else
		ob_jw_null(w);
	if (content)
		rn_infer_write_choice_logprobs(w, e, RN_INFER_LP_OLLAMA); /* Ollama's ChoiceLogprobs */
	ob_jw_obj_end(w);
	ob_jw_arr_end(w);
	ob_jw_obj_end(w);
	rn_infer_put_sse(out, w);
}

static void usage(struct ob_jw *w, const struct rn_infer_emit *e)
{
	ob_jw_obj(w);
	ob_jw_key(w, "prompt_tokens");
	ob_jw_int(w, e->prompt_eval_count);
	ob_jw_key(w, "completion_tokens");
	ob_jw_int(w, e->eval_count);
	ob_jw_key(w, "total_tokens");
	ob_jw_int(w, e->prompt_eval_count + e->eval_count);
	ob_jw_obj_end(w);
}

static void chat_chunk(void *state, const struct rn_infer_emit *e, struct ob_jw *w, struct ob_buf *out)
{
	struct oai_state *o = state;
	bool empty_trailer = e->done && !o->first && e->content_len == 0 && e->thinking_len == 0 && e->n_calls == 0;
	if (!empty_trailer) {
		bool mixed = e->thinking_len && (e->content_len || e->n_calls);
		if (mixed) {
			chat_event(o, e, o->first, false, true, false, NULL, w, out);
			chat_event(o, e, false, true, false, true, NULL, w, out);
		} else {
			chat_event(o, e, o->first, true, true, true, NULL, w, out);
		}
		if (e->n_calls)
			o->tool_sent = true;
		o->first = false;
	}
	if (!e->done)
		return;
	const char *reason = e->done_reason && *e->done_reason ? e->done_reason : "stop";
	if (strcmp(reason, "stop") == 0 && o->tool_sent)
		reason = "tool_calls";
	chat_event(o, e, false, false, false, false, reason, w, out);
	if (o->include_usage) {
		ob_jw_reset(w);
		object_head(w, o, "chat.completion.chunk", e);
		ob_jw_key(w, "choices");
		ob_jw_arr(w);
		ob_jw_arr_end(w);
		ob_jw_key(w, "usage");
		usage(w, e);
		ob_jw_obj_end(w);
		rn_infer_put_sse(out, w);
	}
	ob_buf_puts(out, "data: [DONE]\n\n");
}

static void chat_whole(void *state, const struct rn_infer_emit *e, struct ob_jw *w)
{
	const struct oai_state *o = state;
	object_head(w, o, "chat.completion", e);
	ob_jw_key(w, "choices");
	ob_jw_arr(w);
	ob_jw_obj(w);
	ob_jw_key(w, "index");
	ob_jw_int(w, 0);
	ob_jw_key(w, "message");
	ob_jw_obj(w);
	ob_jw_key(w, "role");
	ob_jw_string(w, "assistant");
	ob_jw_key(w, "content");
	ob_jw_stringn(w, e->content, e->content_len);
	if (e->thinking_len) {
		ob_jw_key(w, "reasoning");
		ob_jw_stringn(w, e->thinking, e->thinking_len);
	}
	if (e->n_calls) {
		ob_jw_key(w, "tool_calls");
		rn_infer_write_tool_calls(w, e, true);
	}
	ob_jw_obj_end(w);
	ob_jw_key(w, "finish_reason");
	const char *reason = e->done_reason ? e->done_reason : "";
	if (strcmp(reason, "stop") == 0 && e->n_calls)
		reason = "tool_calls";
	if (*reason)
		ob_jw_string(w, reason);
	else
		ob_jw_null(w);
	rn_infer_write_choice_logprobs(w, e, RN_INFER_LP_OLLAMA);
	ob_jw_obj_end(w);
	ob_jw_arr_end(w);
	ob_jw_key(w, "usage");
	usage(w, e);
	ob_jw_obj_end(w);
}

/* CompletionChoice / CompleteChunkChoice: text, index, finish_reason (null until done) */
static void completion_choice(struct ob_jw *w, const struct rn_infer_emit *e)
{
	ob_jw_obj(w);
	ob_jw_key(w, "text");
	ob_jw_stringn(w, e->content, e->content_len);
	ob_jw_key(w, "index");
	ob_jw_int(w, 0);
	ob_jw_key(w, "finish_reason");
	if (e->done && e->done_reason && *e->done_reason)
		ob_jw_string(w, e->done_reason);
	else
		ob_jw_null(w);
	rn_infer_write_choice_logprobs(w, e, RN_INFER_LP_OLLAMA);
	ob_jw_obj_end(w);
}

/* CompletionChunk: id, object, created, choices, model, system_fingerprint, usage */
static void completion_obj(const struct oai_state *o, const struct rn_infer_emit *e, struct ob_jw *w,
			   bool with_usage, bool empty_choices)
{
	ob_jw_obj(w);
	ob_jw_key(w, "id");
	ob_jw_string(w, o->id);
	ob_jw_key(w, "object");
	ob_jw_string(w, "text_completion");
	ob_jw_key(w, "created");
	ob_jw_int(w, e->created_unix);
	ob_jw_key(w, "choices");
	ob_jw_arr(w);
	if (!empty_choices)
		completion_choice(w, e);
	ob_jw_arr_end(w);
	ob_jw_key(w, "model");
	ob_jw_string(w, e->model);
	ob_jw_key(w, "system_fingerprint");
	ob_jw_string(w, "fp_ollama");
	if (with_usage) {
		ob_jw_key(w, "usage");
		usage(w, e);
	}
	ob_jw_obj_end(w);
}

static void completion_chunk(void *state, const struct rn_infer_emit *e, struct ob_jw *w, struct ob_buf *out)
{
	const struct oai_state *o = state;
	if (o->include_usage) {
		/* Ollama sends a zero usage object on every chunk when include_usage is set */
		struct rn_infer_emit z = *e;
		z.prompt_eval_count = z.eval_count = 0;
		completion_obj(o, &z, w, true, false);
	} else {
		completion_obj(o, e, w, false, false);
	}
	rn_infer_put_sse(out, w);
	if (!e->done)
		return;
	if (o->include_usage) {
		ob_jw_reset(w);
		completion_obj(o, e, w, true, true);
		rn_infer_put_sse(out, w);
	}
	ob_buf_puts(out, "data: [DONE]\n\n");
}

/* Completion: id, object, created, model, system_fingerprint, choices, usage */
static void completion_whole(void *state, const struct rn_infer_emit *e, struct ob_jw *w)
{
	object_head(w, state, "text_completion", e);
	ob_jw_key(w, "choices");
	ob_jw_arr(w);
	completion_choice(w, e);
	ob_jw_arr_end(w);
	ob_jw_key(w, "usage");
	usage(w, e);
	ob_jw_obj_end(w);
}

/* after streaming started: a last data: {"error": msg} event */
static void stream_error(void *state, const char *msg, struct ob_jw *w, struct ob_buf *out)
{
	(void)state;
	ob_jw_obj(w);
	ob_jw_key(w, "error");
	ob_jw_string(w, msg);
	ob_jw_obj_end(w);
	rn_infer_put_sse(out, w);
}

/* _debug_render_only: {"_debug_info":{"rendered_template"}} (the rest of Ollama's object is empty) */
static void rendered(void *state, const struct rn_infer_emit *e, const char *prompt, size_t len, bool chat,
		     struct ob_jw *w)
{
	(void)state;
	(void)e;
	(void)chat;
	ob_jw_obj(w);
	rn_infer_write_debug_info(w, prompt, len);
	ob_jw_obj_end(w);
}

static const struct rn_infer_face chat_face = {
	.stream_type = "text/event-stream",
	.whole_type = "application/json",
	.state_size = sizeof(struct oai_state),
	.chunk = chat_chunk,
	.whole = chat_whole,
	.error = rn_oai_respond_error,
	.stream_error = stream_error,
	.rendered = rendered,
};

static const struct rn_infer_face completion_face = {
	.stream_type = "text/event-stream",
	.whole_type = "application/json",
	.state_size = sizeof(struct oai_state),
	.chunk = completion_chunk,
	.whole = completion_whole,
	.error = rn_oai_respond_error,
	.stream_error = stream_error,
	.rendered = rendered,
};

/* ---------------------------------------------------------------------------------------------------- */
/* request conversion */

/* response_format as Ollama's `format` (a decoded ResponseFormat): type, trimmed and lower-cased,
 * "json_object" → "json"; "json_schema" → json_schema.schema as it is (null or absent: none); anything else
 * ("text") → none. strict and name are not read, as Ollama. */
static void write_format(struct ob_jw *w, const struct ob_json *rf)
{
	const struct ob_json *type = rn_dec_get(rf, "type");
	const char *t = type && type->type == OB_JSON_STRING ? type->str : "";
	size_t n = type && type->type == OB_JSON_STRING ? type->len : 0;
	while (n && isspace((unsigned char)*t))
		t++, n--;
	while (n && isspace((unsigned char)t[n - 1]))
		n--;
	if (n == 11 && strncasecmp(t, "json_object", n) == 0) {
		ob_jw_key(w, "format");
		ob_jw_string(w, "json");
	} else if (n == 11 && strncasecmp(t, "json_schema", n) == 0) {
		const struct ob_json *js = rn_dec_get(rf, "json_schema");
		const struct ob_json *schema = js ? rn_dec_get(js, "schema") : NULL;
		if (schema) {
			ob_jw_key(w, "format");
			ob_jw_value(w, schema, false);
		}
	}
}

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
static void write_stop(struct ob_jw *w, const struct ob_json *stop, bool strict, char *err, size_t err_size, bool *bad)
{
	*bad = false;
	if (!stop || stop->type == OB_JSON_NULL)
		return;
	if (stop->type == OB_JSON_STRING) {
		ob_jw_key(w, "stop");
		ob_jw_arr(w);
		ob_jw_stringn(w, stop->str, stop->len);
		ob_jw_arr_end(w);
	} else if (stop->type == OB_JSON_ARRAY) {
		ob_jw_key(w, "stop");
		ob_jw_arr(w);
		OB_JSON_FOREACH(s, stop)
		{
			if (s->type == OB_JSON_STRING) {
				ob_jw_stringn(w, s->str, s->len);
			} else if (strict) {
				snprintf(err, err_size, "invalid type for 'stop' field: %s",
					 s->type == OB_JSON_NUMBER ? "float64" : s->type == OB_JSON_BOOL ? "bool" : "map[string]interface {}");
				*bad = true;
			}
		}
		ob_jw_arr_end(w);
	}
}

/* One OpenAI message → one or more native messages (content parts become separate messages). */
static int convert_message(struct ob_jw *w, const struct ob_json *msgs, const struct ob_json *m, char *err, size_t n)
{
	const struct ob_json *role = rn_dec_get(m, "role");
	const struct ob_json *content = rn_dec_get(m, "content");
	const struct ob_json *reasoning = rn_dec_get(m, "reasoning");
	const struct ob_json *tool_calls = rn_dec_get(m, "tool_calls");
	const struct ob_json *name = rn_dec_get(m, "name");
	const struct ob_json *tcid = rn_dec_get(m, "tool_call_id");
	const char *rs = role && role->type == OB_JSON_STRING ? role->str : "";
	/* tool messages: name from "name", else from the assistant call with this id */
	const char *tool_name = "";
	bool is_tool = strcasecmp(rs, "tool") == 0;
	if (is_tool) {
		if (name && name->type == OB_JSON_STRING && name->len)
			tool_name = name->str;
		else if (tcid && tcid->type == OB_JSON_STRING && tcid->len) {
			for (long i = (long)msgs->count - 1; i >= 0 && !*tool_name; i--) {
				const struct ob_json *mm = ob_json_at(msgs, (size_t)i);
				const struct ob_json *tcs = mm ? rn_dec_get(mm, "tool_calls") : NULL;
				if (!tcs || tcs->type != OB_JSON_ARRAY)
					continue;
				OB_JSON_FOREACH(tc, tcs)
				{
					const struct ob_json *id = rn_dec_get(tc, "id");
					const struct ob_json *fn = rn_dec_get(tc, "function");
					const struct ob_json *fname = fn ? rn_dec_get(fn, "name") : NULL;
					if (id && id->type == OB_JSON_STRING && strcmp(id->str, tcid->str) == 0 && fname &&
					    fname->type == OB_JSON_STRING)
						tool_name = fname->str;
				}
			}
		}
	}
	/* tool calls: arguments are a JSON string holding an object */
	struct ob_jw tw;
	ob_jw_init(&tw, 0, 0);
	bool have_calls = tool_calls && tool_calls->type == OB_JSON_ARRAY;
	if (have_calls) {
		ob_jw_arr(&tw);
		OB_JSON_FOREACH(tc, tool_calls)
		{
			const struct ob_json *id = rn_dec_get(tc, "id");
			const struct ob_json *fn = rn_dec_get(tc, "function");
			const struct ob_json *fname = fn ? rn_dec_get(fn, "name") : NULL;
			const struct ob_json *args = fn ? rn_dec_get(fn, "arguments") : NULL;
			struct ob_json_error je;
			struct ob_json_doc *ad = NULL;
			if (args && args->type == OB_JSON_STRING)
				ad = ob_json_parse(args->str, args->len, &je);
			if (!ad || (ob_json_root(ad)->type != OB_JSON_OBJECT && ob_json_root(ad)->type != OB_JSON_NULL)) {
				ob_json_free(ad);
				ob_jw_free(&tw);
				snprintf(err, n, "invalid tool call arguments");
				return -1;
			}
			ob_jw_obj(&tw);
			if (id && id->type == OB_JSON_STRING && id->len) {
				ob_jw_key(&tw, "id");
				ob_jw_stringn(&tw, id->str, id->len);
			}
			ob_jw_key(&tw, "function");
			ob_jw_obj(&tw);
			ob_jw_key(&tw, "name");
			ob_jw_string(&tw, fname && fname->type == OB_JSON_STRING ? fname->str : "");
			ob_jw_key(&tw, "arguments");
			ob_jw_value(&tw, ob_json_root(ad), false);
			ob_jw_obj_end(&tw);
			ob_jw_obj_end(&tw);
			ob_json_free(ad);
		}
		ob_jw_arr_end(&tw);
	}
	const char *tcj = have_calls ? ob_jw_str(&tw) : NULL;
#define EXTRAS(with_calls)                                                                                   \
	do {                                                                                                 \
		if (reasoning && reasoning->type == OB_JSON_STRING && reasoning->len) {                        \
			ob_jw_key(w, "thinking");                                                          \
			ob_jw_stringn(w, reasoning->str, reasoning->len);                                  \
		}                                                                                            \
		if ((with_calls) && tcj) {                                                                   \
			ob_jw_key(w, "tool_calls");                                                        \
			ob_jw_raw(w, tcj, strlen(tcj));                                                    \
		}                                                                                            \
		if (*tool_name) {                                                                            \
			ob_jw_key(w, "tool_name");                                                         \
			ob_jw_string(w, tool_name);                                                        \
		}                                                                                            \
		if (tcid && tcid->type == OB_JSON_STRING && tcid->len) {                                     \
			ob_jw_key(w, "tool_call_id");                                                      \
			ob_jw_stringn(w, tcid->str, tcid->len);                                            \
		}                                                                                            \
	} while (0)
	if (content && content->type == OB_JSON_STRING) {
		ob_jw_obj(w);
		ob_jw_key(w, "role");
		ob_jw_string(w, rs);
		ob_jw_key(w, "content");
		ob_jw_stringn(w, content->str, content->len);
		EXTRAS(true);
		ob_jw_obj_end(w);
	} else if (content && content->type == OB_JSON_ARRAY) {
		size_t i = 0, cnt = content->count;
		OB_JSON_FOREACH(part, content)
		{
			bool last = ++i == cnt;
			const struct ob_json *type = part->type == OB_JSON_OBJECT ? rn_dec_get(part, "type") : NULL;
			if (!type || type->type != OB_JSON_STRING) {
				ob_jw_free(&tw);
				snprintf(err, n, "invalid message format");
				return -1;
			}
			if (strcmp(type->str, "text") == 0) {
				const struct ob_json *text = rn_dec_get(part, "text");
				if (!text || text->type != OB_JSON_STRING) {
					ob_jw_free(&tw);
					snprintf(err, n, "invalid message format");
					return -1;
				}
				ob_jw_obj(w);
				ob_jw_key(w, "role");
				ob_jw_string(w, rs);
				ob_jw_key(w, "content");
				ob_jw_stringn(w, text->str, text->len);
				if (last && have_calls)
					EXTRAS(true);
				ob_jw_obj_end(w);
			} else if (strcmp(type->str, "image_url") == 0 || strcmp(type->str, "input_audio") == 0) {
				/* orun has no vision/audio engine: refuse clearly (an image message would need one) */
				ob_jw_free(&tw);
				snprintf(err, n, "%s content is not supported by orun yet (no vision or audio engine)",
					 strcmp(type->str, "image_url") == 0 ? "image" : "audio");
				return -1;
			} else {
				ob_jw_free(&tw);
				snprintf(err, n, "invalid message format");
				return -1;
			}
		}
	} else {
		if (!have_calls) {
			const char *t = !content ? "<nil>" : content->type == OB_JSON_NUMBER ? "float64"
							     : content->type == OB_JSON_BOOL   ? "bool"
											       : "map[string]interface {}";
			ob_jw_free(&tw);
			snprintf(err, n, "invalid message content type: %s", t);
			return -1;
		}
		ob_jw_obj(w);
		ob_jw_key(w, "role");
		ob_jw_string(w, rs);
		ob_jw_key(w, "content");
		ob_jw_string(w, "");
		EXTRAS(true);
		ob_jw_obj_end(w);
	}
#undef EXTRAS
	ob_jw_free(&tw);
	return 0;
}

/* The start both conversions share: the body decoded as `go_struct` (a bad body answered with 400), the
 * face's state with its id "<id_prefix>-N", and the model with its length (a NUL inside makes it an invalid
 * name, not a shorter one: see bad_model). NULL when the request was answered. */
static struct ob_json_doc *begin_request(struct rn_http_req *r, struct rn_dec *d, const char *go_struct,
					 const char *id_prefix, const struct ob_json **root, struct oai_state *o,
					 const char **model, size_t *model_len)
{
	struct ob_json_doc *doc = rn_api_decode(r, d, go_struct, root, rn_oai_respond_error);
	if (!doc)
		return NULL;
	*o = (struct oai_state){.first = true};
	snprintf(o->id, sizeof o->id, "%s-%d", id_prefix, rand999());
	*model = "";
	*model_len = 0;
	rn_dec_string(d, *root, "model", model, model_len);
	return doc;
}

/* After decoding: answers a decoding error, or a model name with a NUL inside, with 400 (Ollama's
 * "invalid model name", which its OpenAI layer passes on). True when the request was answered. */
static bool bad_request(struct rn_http_req *r, const struct rn_dec *d, const char *model, size_t model_len)
{
	if (!d->failed && !memchr(model, 0, model_len))
		return false;
	rn_oai_respond_error(r, 400, d->failed ? d->err : "invalid model name");
	return true;
}

/* stream, and stream_options.include_usage into the face's state */
static void decode_stream(struct rn_dec *d, const struct ob_json *root, bool *stream, struct oai_state *o)
{
	rn_dec_bool(d, root, "stream", stream);
	const struct ob_json *so = rn_dec_object(d, root, "stream_options", "openai.StreamOptions");
	if (so)
		rn_dec_bool(d, so, "include_usage", &o->include_usage);
}

/* The native request's first members: {"model":…,"stream":… */
static void native_begin(struct ob_jw *w, const char *model, bool stream)
{
	ob_jw_init(w, 0, 0);
	ob_jw_obj(w);
	ob_jw_key(w, "model");
	ob_jw_string(w, model);
	ob_jw_key(w, "stream");
	ob_jw_bool(w, stream);
}

/* Runs the native request w holds through the pipeline with this face, and frees w. */
static void run_native(struct rn_http_req *r, enum rn_infer_kind kind, struct ob_jw *w,
		       const struct rn_infer_face *face, const struct oai_state *o)
{
	const char *native = ob_jw_str(w);
	if (native)
		rn_infer_run(r, kind, native, w->len, face, o);
	else
		rn_oai_respond_error(r, 500, "out of memory");
	ob_jw_free(w);
}

void rn_oai_chat(struct rn_http_req *r)
{
	struct rn_dec d;
	const struct ob_json *root;
	struct oai_state o;
	const char *model;
	size_t model_len;
	struct ob_json_doc *doc =
		begin_request(r, &d, "ChatCompletionRequest", "chatcmpl", &root, &o, &model, &model_len);
	if (!doc)
		return;
	bool stream = false;
	decode_stream(&d, root, &stream, &o);
	const struct ob_json *msgs = rn_dec_array(&d, root, "messages", "[]openai.Message");
	const struct ob_json *tools = rn_dec_array(&d, root, "tools", "[]api.Tool");
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
	const struct ob_json *reasoning = rn_dec_object(&d, root, "reasoning", "openai.Reasoning");
	if (reasoning)
		rn_dec_string(&d, reasoning, "effort", &effort, NULL);
	else
		rn_dec_string(&d, root, "reasoning_effort", &effort, NULL);
	const struct ob_json *rf = rn_dec_object(&d, root, "response_format", "openai.ResponseFormat");
	if (rf) {
		struct rn_dec dr = {.go_struct = "ResponseFormat", .prefix = "response_format"};
		const char *type = NULL;
		rn_dec_string(&dr, rf, "type", &type, NULL);
		rn_dec_object(&dr, rf, "json_schema", "openai.JsonSchema");
		if (dr.failed)
			rn_dec_fail(&d, "%s", dr.err);
	}
	if (bad_request(r, &d, model, model_len)) {
		ob_json_free(doc);
		return;
	}
	if (!msgs || msgs->count == 0) {
		rn_oai_respond_error(r, 400, "[] is too short - 'messages'");
		ob_json_free(doc);
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
		ob_json_free(doc);
		return;
	}
	struct ob_jw w;
	native_begin(&w, model, stream);
	ob_jw_key(&w, "messages");
	ob_jw_arr(&w);
	OB_JSON_FOREACH(m, msgs)
	{
		if (m->type != OB_JSON_OBJECT || convert_message(&w, msgs, m, err, sizeof err) < 0) {
			if (m->type != OB_JSON_OBJECT)
				snprintf(err, sizeof err, "invalid message format");
			ob_jw_free(&w);
			rn_oai_respond_error(r, 400, err);
			ob_json_free(doc);
			return;
		}
	}
	ob_jw_arr_end(&w);
	if (rf)
		write_format(&w, rf);
	ob_jw_key(&w, "options");
	ob_jw_obj(&w);
	write_stop(&w, rn_dec_get(root, "stop"), false, err, sizeof err, &bad);
	if (has_max) {
		ob_jw_key(&w, "num_predict");
		ob_jw_int(&w, max_tokens);
	}
	ob_jw_key(&w, "temperature");
	ob_jw_float64(&w, temp);
	if (has_seed) {
		ob_jw_key(&w, "seed");
		ob_jw_int(&w, seed);
	}
	if (has_fp) {
		ob_jw_key(&w, "frequency_penalty");
		ob_jw_float64(&w, fp);
	}
	if (has_pp) {
		ob_jw_key(&w, "presence_penalty");
		ob_jw_float64(&w, pp);
	}
	ob_jw_key(&w, "top_p");
	ob_jw_float64(&w, top_p);
	ob_jw_obj_end(&w);
	if (tools) {
		ob_jw_key(&w, "tools");
		ob_jw_value(&w, tools, false);
	}
	if (think) {
		ob_jw_key(&w, "think");
		ob_jw_raw(&w, think, strlen(think));
	}
	if (logprobs) {
		ob_jw_key(&w, "logprobs");
		ob_jw_bool(&w, true);
	}
	if (top_logprobs) {
		ob_jw_key(&w, "top_logprobs");
		ob_jw_int(&w, top_logprobs);
	}
	if (debug) {
		ob_jw_key(&w, "_debug_render_only");
		ob_jw_bool(&w, true);
	}
	ob_jw_obj_end(&w);
	ob_json_free(doc);
	run_native(r, RN_INF_CHAT, &w, &chat_face, &o);
}

void rn_oai_completions(struct rn_http_req *r)
{
	struct rn_dec d;
	const struct ob_json *root;
	struct oai_state o;
	const char *model;
	size_t model_len;
	struct ob_json_doc *doc = begin_request(r, &d, "CompletionRequest", "cmpl", &root, &o, &model, &model_len);
	if (!doc)
		return;
	bool stream = false;
	const char *prompt = "", *suffix = "";
	rn_dec_string(&d, root, "prompt", &prompt, NULL);
	rn_dec_string(&d, root, "suffix", &suffix, NULL);
	decode_stream(&d, root, &stream, &o);
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
	if (bad_request(r, &d, model, model_len)) {
		ob_json_free(doc);
		return;
	}
	char err[256];
	bool bad = false;
	struct ob_jw w;
	native_begin(&w, model, stream);
	ob_jw_key(&w, "prompt");
	ob_jw_string(&w, prompt);
	if (*suffix) {
		ob_jw_key(&w, "suffix");
		ob_jw_string(&w, suffix);
	}
	ob_jw_key(&w, "options");
	ob_jw_obj(&w);
	write_stop(&w, rn_dec_get(root, "stop"), true, err, sizeof err, &bad);
	if (has_max) {
		ob_jw_key(&w, "num_predict");
		ob_jw_int(&w, max_tokens);
	}
	ob_jw_key(&w, "temperature");
	ob_jw_float32(&w, (float)temp);
	if (has_seed) {
		ob_jw_key(&w, "seed");
		ob_jw_int(&w, seed);
	}
	ob_jw_key(&w, "frequency_penalty");
	ob_jw_float32(&w, (float)fp);
	ob_jw_key(&w, "presence_penalty");
	ob_jw_float32(&w, (float)pp);
	ob_jw_key(&w, "top_p");
	ob_jw_float32(&w, top_p != 0 ? (float)top_p : 1.0f);
	ob_jw_obj_end(&w);
	if (has_lp && lp > 0) {
		ob_jw_key(&w, "logprobs");
		ob_jw_bool(&w, true);
		ob_jw_key(&w, "top_logprobs");
		ob_jw_int(&w, lp);
	}
	if (debug) {
		ob_jw_key(&w, "_debug_render_only");
		ob_jw_bool(&w, true);
	}
	ob_jw_obj_end(&w);
	ob_json_free(doc);
	if (bad) {
		ob_jw_free(&w);
		rn_oai_respond_error(r, 400, err);
		return;
	}
	run_native(r, RN_INF_GENERATE, &w, &completion_face, &o);
}

/* ---------------------------------------------------------------------------------------------------- */
/* /v1/models */

static void write_model(struct ob_jw *w, const char *id, int64_t created)
{
	struct mf_name n;
	mf_name_parse(id, &n);
	ob_jw_obj(w);
	ob_jw_key(w, "id");
	ob_jw_string(w, id);
	ob_jw_key(w, "object");
	ob_jw_string(w, "model");
	ob_jw_key(w, "created");
	ob_jw_int(w, created);
	ob_jw_key(w, "owned_by");
	ob_jw_string(w, n.ns);
	ob_jw_obj_end(w);
}

/* Answers 200 with w's JSON and a newline (json.Encoder's), and frees w. */
static void send_line(struct rn_http_req *r, struct ob_jw *w)
{
	size_t len;
	char *out = ob_jw_take_line(w, &len);
	if (out)
		rn_http_respond(r, 200, "application/json", out, len);
	else
		rn_oai_respond_error(r, 500, "out of memory");
	free(out);
}

void rn_oai_models(struct rn_http_req *r)
{
	struct rn_api *s = rn_api_of(r);
	struct mf_manifest **list = NULL;
	size_t n = 0;
	struct mf_error e = {0};
	if (mf_store_list(s->store, &list, &n, &e) != MF_OK) {
		rn_oai_respond_error(r, 500, e.msg);
		return;
	}
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	ob_jw_key(&w, "object");
	ob_jw_string(&w, "list");
	ob_jw_key(&w, "data");
	if (!n) {
		ob_jw_null(&w); /* a nil slice in Go */
	} else {
		ob_jw_arr(&w);
		for (size_t i = 0; i < n; i++) {
			char disp[MF_NAME_STRING_MAX];
			mf_name_display(&list[i]->name, disp);
			write_model(&w, disp, list[i]->mtime_sec);
		}
		ob_jw_arr_end(&w);
	}
	ob_jw_obj_end(&w);
	mf_manifest_list_free(list, n);
	send_line(r, &w);
}

void rn_oai_model(struct rn_http_req *r)
{
	struct rn_api *s = rn_api_of(r);
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
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	write_model(&w, id, m->manifest->mtime_sec);
	mf_model_free(m);
	send_line(r, &w);
}
