/* runner/api/llamaserver.c — orun as llama.cpp's llama-server, for Ollama >= 0.30 (and Ollama 0.1.33–0.3.10
 * through OLLAMA_RUNNERS_DIR, and any llama-server client).
 *
 * The model loads through the same scheduler and engine as `orun serve` (one runner, -np slots of -c/-np
 * tokens each); generations go through the shared pipeline (runner/api/pipeline.h) with this face's
 * formatters; the flags are parsed in tools/llama_server_flags.c. Field names of the JSON answers follow
 * upstream tools/server (server-task.cpp, server-common.cpp); Ollama reads content/stop/stop_type/timings
 * from /completion, status/error from /health, tokens from /tokenize. Structured output as upstream reads it:
 * `grammar` (GBNF, e.g. Ollama's grammarJSON), `json_schema`, and on the chat endpoints `response_format`
 * (runner/api/structured.h); with thinking asked for, the grammar starts after the closing thinking tag. Not
 * supported (answered with a clear error): multimodal prompts, LoRA adapters, speculative decoding.
 */
#include "config.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "base/buf.h"
#include "base/jsonutil.h"
#include "modelfile/template.h"
#include "runner/api/jinja_chat.h"
#include "runner/api/llamaserver.h"
#include "runner/api/pipeline.h"
#include "runner/api/structured.h"
#include "runner/backend.h"
#include "runner/chatfmt/chatfmt.h"
#include "runner/cpu/features.h"
#include "runner/grammar/json_schema.h"
#include "runner/server/http.h"
#include "runner/api/decode.h"
#include "runner/kvcache.h"
#include "runner/server/sched.h"
#include "runner/server/envconfig.h"
#include "runner/tokenizer/tokenizer.h"

struct ls_server {
	struct rn_ls_opts o;
	struct rn_sched *sched;
	struct rn_runner *runner;
	struct mf_tpl *tpl;       /* chat template (Go) for /apply-template and /v1/chat/completions (--no-jinja) */
	char tpl_name[64];
	struct mf_jinja *jinja;   /* chat template (Jinja) for the same (--jinja, the default), or NULL */
	char *jinja_src;          /* its text */
	size_t jinja_len;
	struct ob_json_doc *kwargs; /* --chat-template-kwargs, or NULL */
	atomic_int state;         /* 0 loading, 1 ready, 2 failed (error is written before 2 is stored) */
	char error[600];
	int n_ctx_slot;
	struct rn_api api;        /* what the generation pipeline runs with (api.stopping: shutting down) */
	int64_t created;
};

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
}

/* ---------------------------------------------------------------------------------------------------- */
/* options */

void rn_ls_opts_default(struct rn_ls_opts *o)
{
	memset(o, 0, sizeof *o);
	o->host = "127.0.0.1";
	o->port = 8080;
	o->ngl = -1;
	o->parallel = 1;
	o->cache_ram_mib = -1;
	o->jinja = true;
	o->reasoning_format = "auto";
}

/* ---------------------------------------------------------------------------------------------------- */
/* devices and the log lines Ollama parses */

/* The devices of GPU backend b, as llama.cpp lists them (list_form: --list-devices) or logs them at start. */
static void print_devices(FILE *f, int b, bool list_form)
{
	for (int i = 0; i < rn_backend_device_count(b); i++) {
		struct rn_device_info d;
		if (rn_backend_device_info(b, i, &d) != 0)
			continue;
		const long mib = (long)(d.total_bytes >> 20);
		uint64_t free_b = 0, total_b = 0;
		if (list_form)
			fprintf(f, "  %s%d: %s (%ld MiB, %ld MiB free)\n", rn_backend_device_prefix(b), i, d.name, mib,
				rn_backend_device_memory(b, i, &free_b, &total_b) == 0 ? (long)(free_b >> 20) : mib);
		else
			fprintf(f, "  Device %d: %s, compute capability %d.%d, VMM: yes, VRAM: %ld MiB\n", i, d.name,
				d.cc_major, d.cc_minor, mib);
	}
}

static void print_system_info(int threads)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	if (threads <= 0)
		threads = (int)(n > 0 ? n : 1);
	char cpu[256] = "";
#if defined(__x86_64__)
	const struct rn_cpu_features *cf = rn_cpu_features();
	snprintf(cpu, sizeof cpu, "CPU : SSE3 = %d | AVX = %d | AVX2 = %d | F16C = %d | FMA = %d | AVX512 = %d |",
		 cf->sse3, cf->avx, cf->avx2, cf->f16c, cf->fma, cf->avx512f);
#else
	snprintf(cpu, sizeof cpu, "CPU : |");
#endif
	char gpu[128] = "";
	for (int b = 0; b < rn_backend_count(); b++)
		if (rn_backend_is_gpu(b) && rn_backend_device_count(b) > 0) {
			size_t l = strlen(gpu);
			snprintf(gpu + l, sizeof gpu - l, " %s : ARCHS = %s |", rn_backend_device_prefix(b), rn_backend_archs(b));
		}
	logf_("system_info: n_threads = %d (n_threads_batch = %d) / %ld |%s %s", threads, threads, n, gpu, cpu);
}

/* ---------------------------------------------------------------------------------------------------- */
/* helpers */

static struct ls_server *srv_of(struct rn_http_req *r)
{
	return rn_http_req_app(r);
}

static bool ls_gone(void *req)
{
	struct ls_server *s = srv_of(req);
	return atomic_load(&s->api.stopping) || rn_http_req_client_gone(req);
}

/* upstream error body: {"error":{"code":N,"message":"...","type":"..."}} */
static void ls_error(struct rn_http_req *r, int status, const char *msg)
{
	const char *type = status == 400 ? "invalid_request_error" : status == 404 ? "not_found_error"
				: status == 501 ? "not_supported_error" : status == 503 ? "unavailable_error"
										    : "server_error";
	struct ob_jw w;
	ob_jw_init(&w, 0, OB_JW_NO_HTML_ESCAPE);
	ob_jw_obj(&w);
	ob_jw_key(&w, "error");
	ob_jw_obj(&w);
	ob_jw_key(&w, "code");
	ob_jw_int(&w, status);
	ob_jw_key(&w, "message");
	ob_jw_string(&w, msg);
	ob_jw_key(&w, "type");
	ob_jw_string(&w, type);
	ob_jw_obj_end(&w);
	ob_jw_obj_end(&w);
	const char *s = ob_jw_str(&w);
	rn_http_respond(r, status, "application/json; charset=utf-8", s ? s : "{}", s ? w.len : 2);
	ob_jw_free(&w);
}

static void ls_send(struct rn_http_req *r, struct ob_jw *w)
{
	const char *s = ob_jw_str(w);
	if (s)
		rn_http_respond(r, 200, "application/json; charset=utf-8", s, w->len);
	else
		ls_error(r, 500, "out of memory");
	ob_jw_free(w);
}

static bool ready(struct rn_http_req *r)
{
	struct ls_server *s = srv_of(r);
	const int state = atomic_load(&s->state);
	if (state == 1)
		return true;
	ls_error(r, 503, state == 0 ? "Loading model" : s->error);
	return false;
}

struct ob_json_doc *rn_ls_parse_body(const char *body, size_t len, const struct ob_json **root, char *err, size_t n)
{
	struct ob_json_error je;
	struct ob_json_doc *doc = ob_json_parse(body, len, &je);
	if (!doc || ob_json_root(doc)->type != OB_JSON_OBJECT) {
		snprintf(err, n, "invalid JSON body: %s", doc ? "not an object" : je.message);
		ob_json_free(doc);
		return NULL;
	}
	*root = ob_json_root(doc);
	return doc;
}

static struct ob_json_doc *parse_body(struct rn_http_req *r, const struct ob_json **root)
{
	size_t len;
	const char *body = rn_http_req_body(r, &len);
	char m[300];
	struct ob_json_doc *doc = rn_ls_parse_body(body, len, root, m, sizeof m);
	if (!doc)
		ls_error(r, 400, m);
	return doc;
}

/* The start of a handler that needs the model and a body: NULL when the request was answered (503 while
 * loading, 400 for a bad body). */
static struct ob_json_doc *open_request(struct rn_http_req *r, const struct ob_json **root)
{
	return ready(r) ? parse_body(r, root) : NULL;
}

/* Answers {"<key>": s} (one string member). */
static void ls_send_string(struct rn_http_req *r, const char *key, const char *str, size_t n)
{
	struct ob_jw w;
	ob_jw_init(&w, 0, OB_JW_NO_HTML_ESCAPE);
	ob_jw_obj(&w);
	ob_jw_key(&w, key);
	ob_jw_stringn(&w, str, n);
	ob_jw_obj_end(&w);
	ls_send(r, &w);
}

static double num_or(const struct ob_json *o, const char *k, double d)
{
	const struct ob_json *v = ob_json_get(o, k);
	return v && v->type == OB_JSON_NUMBER ? v->number : d;
}

/* A number field cast to an int: a value outside int (1e300 in a body) saturates instead of overflowing the
 * cast. */
static int int_or(const struct ob_json *o, const char *k, int d)
{
	double v = num_or(o, k, d);
	return v <= INT_MIN ? INT_MIN : v >= INT_MAX ? INT_MAX : (int)v;
}

static bool bool_or(const struct ob_json *o, const char *k, bool d)
{
	const struct ob_json *v = ob_json_get(o, k);
	return v && v->type == OB_JSON_BOOL ? v->boolean : d;
}

/* ---------------------------------------------------------------------------------------------------- */
/* /health, /tokenize, /detokenize, /props, /v1/models */

static void h_health(struct rn_http_req *r)
{
	struct ls_server *s = srv_of(r);
	const int state = atomic_load(&s->state);
	if (state == 1) {
		rn_http_respond(r, 200, "application/json; charset=utf-8", "{\"status\":\"ok\"}", 15);
		return;
	}
	ls_error(r, 503, state == 0 ? (s->runner || s->o.model ? "Loading model" : "no model loaded") : s->error);
}

int rn_ls_tokenize(const struct rn_tok *tok, const struct ob_json *root, struct ob_jw *w, char *err, size_t n)
{
	const struct ob_json *content = ob_json_get(root, "content");
	bool add_special = bool_or(root, "add_special", false);
	bool parse_special = bool_or(root, "parse_special", true);
	bool with_pieces = bool_or(root, "with_pieces", false);
	int32_t *ids = NULL;
	size_t n_ids = 0;
	ob_jw_obj(w);
	ob_jw_key(w, "tokens");
	ob_jw_arr(w);
	if (content && content->type == OB_JSON_STRING) {
		struct rn_tok_error te;
		if (rn_tok_encode_alloc(tok, content->str, content->len, add_special, parse_special, &ids, &n_ids, &te) !=
		    RN_TOK_OK) {
			snprintf(err, n, "%s", te.msg);
			return 500;
		}
		for (size_t i = 0; i < n_ids; i++) {
			if (with_pieces) {
				const char *p;
				size_t pl;
				if (rn_tok_piece(tok, ids[i], true, &p, &pl) != RN_TOK_OK) {
					p = "";
					pl = 0;
				}
				ob_jw_obj(w);
				ob_jw_key(w, "id");
				ob_jw_int(w, ids[i]);
				ob_jw_key(w, "piece");
				ob_jw_stringn(w, p, pl);
				ob_jw_obj_end(w);
			} else {
				ob_jw_int(w, ids[i]);
			}
		}
	} else if (content && content->type == OB_JSON_ARRAY) {
		OB_JSON_FOREACH(e, content)
		{
			int64_t x;
			if (ob_json_int(e, &x))
				ob_jw_int(w, x);
		}
	}
	ob_jw_arr_end(w);
	ob_jw_obj_end(w);
	free(ids);
	return 0;
}

int rn_ls_detokenize(const struct rn_tok *tok, const struct ob_json *root, struct ob_jw *w, char *err, size_t n)
{
	const struct ob_json *toks = ob_json_get(root, "tokens");
	size_t n_toks = toks && toks->type == OB_JSON_ARRAY ? toks->count : 0, k = 0;
	int32_t *ids = malloc((n_toks ? n_toks : 1) * sizeof *ids);
	if (!ids) {
		snprintf(err, n, "out of memory");
		return 500;
	}
	if (n_toks)
		OB_JSON_FOREACH(e, toks)
		{
			int64_t x;
			if (ob_json_int(e, &x))
				ids[k++] = (int32_t)x;
		}
	size_t need = 0;
	/* upstream's tokens_to_str renders special tokens (common_token_to_piece, special = true) */
	int rc = rn_tok_detokenize(tok, ids, k, false, true, NULL, 0, &need);
	char *txt = (rc == RN_TOK_OK || rc == RN_TOK_ERR_NOSPACE) ? malloc(need + 1) : NULL;
	if (!txt || (need && rn_tok_detokenize(tok, ids, k, false, true, txt, need, &need) != RN_TOK_OK)) {
		free(txt);
		free(ids);
		snprintf(err, n, "%s", rc == RN_TOK_ERR_RANGE ? "token id out of range" : "detokenize failed");
		return rc == RN_TOK_ERR_RANGE ? 400 : 500;
	}
	ob_jw_obj(w);
	ob_jw_key(w, "content");
	ob_jw_stringn(w, txt, need);
	ob_jw_obj_end(w);
	free(txt);
	free(ids);
	return 0;
}

/* /tokenize and /detokenize: the body, one step over the model's tokenizer, its answer. */
static void tok_answer(struct rn_http_req *r,
		       int (*step)(const struct rn_tok *, const struct ob_json *, struct ob_jw *, char *, size_t))
{
	struct ls_server *s = srv_of(r);
	const struct ob_json *root;
	struct ob_json_doc *doc = open_request(r, &root);
	if (!doc)
		return;
	struct ob_jw w;
	ob_jw_init(&w, 0, OB_JW_NO_HTML_ESCAPE);
	char err[512];
	int st = step(rn_runner_tok(s->runner), root, &w, err, sizeof err);
	ob_json_free(doc);
	if (st) {
		ob_jw_free(&w);
		ls_error(r, st, err);
		return;
	}
	ls_send(r, &w);
}

static void h_tokenize(struct rn_http_req *r)
{
	tok_answer(r, rn_ls_tokenize);
}

static void h_detokenize(struct rn_http_req *r)
{
	tok_answer(r, rn_ls_detokenize);
}

static void h_models(struct rn_http_req *r)
{
	struct ls_server *s = srv_of(r);
	const char *id = s->o.alias ? s->o.alias : (s->o.model ? s->o.model : "");
	struct ob_jw w;
	ob_jw_init(&w, 0, OB_JW_NO_HTML_ESCAPE);
	ob_jw_obj(&w);
	ob_jw_key(&w, "object");
	ob_jw_string(&w, "list");
	ob_jw_key(&w, "data");
	ob_jw_arr(&w);
	ob_jw_obj(&w);
	ob_jw_key(&w, "id");
	ob_jw_string(&w, id);
	ob_jw_key(&w, "object");
	ob_jw_string(&w, "model");
	ob_jw_key(&w, "created");
	ob_jw_int(&w, s->created);
	ob_jw_key(&w, "owned_by");
	ob_jw_string(&w, "llamacpp");
	ob_jw_obj_end(&w);
	ob_jw_arr_end(&w);
	ob_jw_obj_end(&w);
	ls_send(r, &w);
}

static void h_props(struct rn_http_req *r)
{
	struct ls_server *s = srv_of(r);
	struct ob_jw w;
	ob_jw_init(&w, 0, OB_JW_NO_HTML_ESCAPE);
	ob_jw_obj(&w);
	ob_jw_key(&w, "default_generation_settings");
	ob_jw_obj(&w);
	ob_jw_key(&w, "n_ctx");
	ob_jw_int(&w, s->n_ctx_slot);
	ob_jw_obj_end(&w);
	ob_jw_key(&w, "total_slots");
	ob_jw_int(&w, s->o.parallel);
	ob_jw_key(&w, "model_path");
	ob_jw_string(&w, s->o.model ? s->o.model : "");
	ob_jw_key(&w, "chat_template");
	if (s->jinja)
		ob_jw_stringn(&w, s->jinja_src, s->jinja_len);
	else
		ob_jw_string(&w, s->tpl ? mf_tpl_source(s->tpl, NULL) : "");
	ob_jw_key(&w, "build_info");
	ob_jw_string(&w, "orun " PACKAGE_VERSION);
	ob_jw_obj_end(&w);
	ls_send(r, &w);
}

/* ---------------------------------------------------------------------------------------------------- */
/* completion: this face's formatters for the generation pipeline (runner/api/pipeline.h) */

/* What the llama-server face keeps per request (struct rn_infer_face.state). */
struct ls_state {
	char id[48];       /* chat: "chatcmpl-orun<hex>" */
	int64_t n_decoded; /* streamed events with text so far */
	bool new_line;     /* the text so far has a '\n' */
	bool calls;        /* chat: tool calls were returned (finish_reason "tool_calls") */
};

static void write_timings(struct ob_jw *w, const struct rn_engine_stats *st)
{
	double pms = (double)st->prompt_ns / 1e6, gms = (double)st->eval_ns / 1e6;
	int prompt_n = st->n_prompt - st->n_cached;
	ob_jw_obj(w);
	ob_jw_key(w, "cache_n");
	ob_jw_int(w, st->n_cached);
	ob_jw_key(w, "prompt_n");
	ob_jw_int(w, prompt_n);
	ob_jw_key(w, "prompt_ms");
	ob_jw_float64(w, pms);
	ob_jw_key(w, "prompt_per_token_ms");
	ob_jw_float64(w, prompt_n > 0 ? pms / prompt_n : 0);
	ob_jw_key(w, "prompt_per_second");
	ob_jw_float64(w, pms > 0 ? 1e3 * prompt_n / pms : 0);
	ob_jw_key(w, "predicted_n");
	ob_jw_int(w, st->n_eval);
	ob_jw_key(w, "predicted_ms");
	ob_jw_float64(w, gms);
	ob_jw_key(w, "predicted_per_token_ms");
	ob_jw_float64(w, st->n_eval > 0 ? gms / st->n_eval : 0);
	ob_jw_key(w, "predicted_per_second");
	ob_jw_float64(w, gms > 0 ? 1e3 * st->n_eval / gms : 0);
	ob_jw_obj_end(w);
}

/* Counts a streamed piece of text (upstream's tokens_predicted of the partial events; has_new_line). */
static void saw_text(struct ls_state *q, const char *t, size_t n)
{
	q->n_decoded++;
	if (memchr(t, '\n', n))
		q->new_line = true;
}

static void chat_head(const struct ls_state *q, const struct rn_infer_emit *e, struct ob_jw *w, const char *object)
{
	ob_jw_obj(w);
	ob_jw_key(w, "id");
	ob_jw_string(w, q->id);
	ob_jw_key(w, "object");
	ob_jw_string(w, object);
	ob_jw_key(w, "created");
	ob_jw_int(w, (int64_t)time(NULL));
	ob_jw_key(w, "model");
	ob_jw_string(w, e->model);
	ob_jw_key(w, "system_fingerprint");
	ob_jw_string(w, "orun-" PACKAGE_VERSION);
}

/* The members /completion's objects start with: index, content, tokens (always empty: orun sends text) */
static void completion_head(const struct rn_infer_emit *e, struct ob_jw *w)
{
	ob_jw_obj(w);
	ob_jw_key(w, "index");
	ob_jw_int(w, 0);
	ob_jw_key(w, "content");
	ob_jw_stringn(w, e->content, e->content_len);
	ob_jw_key(w, "tokens");
	ob_jw_arr(w);
	ob_jw_arr_end(w);
}

/* completion_probabilities: the entries of the tokens this object covers (when asked) */
static void write_probs(struct ob_jw *w, const struct rn_infer_emit *e)
{
	if (!e->logprobs)
		return;
	ob_jw_key(w, "completion_probabilities");
	rn_infer_write_logprobs(w, e, RN_INFER_LP_LLAMA);
}

/* /completion's final object: content is the tail (streamed) or the whole text. */
static void completion_final(const struct ls_state *q, const struct rn_infer_emit *e, bool new_line, struct ob_jw *w)
{
	const struct rn_engine_stats *st = e->stats;
	completion_head(e, w);
	ob_jw_key(w, "id_slot");
	ob_jw_int(w, e->slot);
	ob_jw_key(w, "stop");
	ob_jw_bool(w, true);
	ob_jw_key(w, "model");
	ob_jw_string(w, e->model);
	ob_jw_key(w, "tokens_predicted");
	ob_jw_int(w, st->n_eval);
	ob_jw_key(w, "tokens_evaluated");
	ob_jw_int(w, st->n_prompt);
	ob_jw_key(w, "has_new_line");
	ob_jw_bool(w, new_line);
	ob_jw_key(w, "truncated");
	ob_jw_bool(w, st->truncated);
	ob_jw_key(w, "stop_type");
	ob_jw_string(w, e->reason == RN_DONE_LENGTH ? "limit" : "eos");
	ob_jw_key(w, "stopping_word");
	ob_jw_string(w, "");
	ob_jw_key(w, "tokens_cached");
	ob_jw_int(w, st->n_prompt + st->n_eval);
	ob_jw_key(w, "timings");
	write_timings(w, st);
	write_probs(w, e);
	ob_jw_obj_end(w);
	(void)q;
}

/* One SSE event per token with text (upstream sends nothing for a token whose text is held back). */
static void completion_chunk(void *state, const struct rn_infer_emit *e, struct ob_jw *w, struct ob_buf *out)
{
	struct ls_state *q = state;
	if (e->done) {
		if (memchr(e->content, '\n', e->content_len))
			q->new_line = true;
		completion_final(q, e, q->new_line, w);
		rn_infer_put_sse(out, w);
		return;
	}
	saw_text(q, e->content, e->content_len);
	completion_head(e, w);
	ob_jw_key(w, "stop");
	ob_jw_bool(w, false);
	ob_jw_key(w, "id_slot");
	ob_jw_int(w, e->slot);
	ob_jw_key(w, "tokens_predicted");
	ob_jw_int(w, q->n_decoded);
	ob_jw_key(w, "tokens_evaluated");
	ob_jw_int(w, (int64_t)e->n_prompt_tokens);
	write_probs(w, e);
	ob_jw_obj_end(w);
	rn_infer_put_sse(out, w);
}

static void completion_whole(void *state, const struct rn_infer_emit *e, struct ob_jw *w)
{
	completion_final(state, e, memchr(e->content, '\n', e->content_len) != NULL, w);
}

/* chat.completion(.chunk)'s tail: usage and timings, then the object's end */
static void chat_usage(const struct rn_infer_emit *e, struct ob_jw *w)
{
	const struct rn_engine_stats *st = e->stats;
	ob_jw_key(w, "usage");
	ob_jw_obj(w);
	ob_jw_key(w, "completion_tokens");
	ob_jw_int(w, st->n_eval);
	ob_jw_key(w, "prompt_tokens");
	ob_jw_int(w, st->n_prompt);
	ob_jw_key(w, "total_tokens");
	ob_jw_int(w, st->n_prompt + st->n_eval);
	ob_jw_key(w, "prompt_tokens_details"); /* upstream's: the prompt tokens taken from the cache (cache_n) */
	ob_jw_obj(w);
	ob_jw_key(w, "cached_tokens");
	ob_jw_int(w, st->n_cached);
	ob_jw_obj_end(w);
	ob_jw_obj_end(w);
	ob_jw_key(w, "timings");
	write_timings(w, st);
	ob_jw_obj_end(w);
}

/* The object's head and its one choice, up to the key `part` ("delta" or "message") of the choice's text;
 * done: the finish_reason is the request's (else null). */
static void chat_choice(const struct ls_state *q, const struct rn_infer_emit *e, const char *object, bool done,
			const char *part, struct ob_jw *w)
{
	chat_head(q, e, w, object);
	ob_jw_key(w, "choices");
	ob_jw_arr(w);
	ob_jw_obj(w);
	ob_jw_key(w, "finish_reason");
	if (done)
		ob_jw_string(w, e->reason == RN_DONE_LENGTH ? "length" : q->calls ? "tool_calls" : "stop");
	else
		ob_jw_null(w);
	ob_jw_key(w, "index");
	ob_jw_int(w, 0);
	ob_jw_key(w, part);
}

static void chat_chunk(void *state, const struct rn_infer_emit *e, struct ob_jw *w, struct ob_buf *out)
{
	struct ls_state *q = state;
	if (e->content_len || e->thinking_len || e->n_calls) {
		saw_text(q, e->content, e->content_len);
		chat_choice(q, e, "chat.completion.chunk", false, "delta", w);
		ob_jw_obj(w);
		if (e->content_len) {
			ob_jw_key(w, "content");
			ob_jw_stringn(w, e->content, e->content_len);
		}
		if (e->thinking_len) {
			ob_jw_key(w, "reasoning_content");
			ob_jw_stringn(w, e->thinking, e->thinking_len);
		}
		if (e->n_calls) {
			q->calls = true;
			ob_jw_key(w, "tool_calls");
			rn_infer_write_tool_calls(w, e, true); /* upstream's deltas carry the index */
		}
		ob_jw_obj_end(w);
		rn_infer_write_choice_logprobs(w, e, RN_INFER_LP_LLAMA);
		ob_jw_obj_end(w);
		ob_jw_arr_end(w);
		ob_jw_obj_end(w);
		rn_infer_put_sse(out, w);
	}
	if (!e->done)
		return;
	ob_jw_reset(w);
	chat_choice(q, e, "chat.completion.chunk", true, "delta", w);
	ob_jw_obj(w);
	ob_jw_obj_end(w);
	ob_jw_obj_end(w);
	ob_jw_arr_end(w);
	chat_usage(e, w);
	rn_infer_put_sse(out, w);
	ob_buf_puts(out, "data: [DONE]\n\n");
}

static void chat_whole(void *state, const struct rn_infer_emit *e, struct ob_jw *w)
{
	struct ls_state *q = state;
	q->calls = e->n_calls > 0;
	chat_choice(q, e, "chat.completion", true, "message", w);
	ob_jw_obj(w);
	ob_jw_key(w, "role");
	ob_jw_string(w, "assistant");
	ob_jw_key(w, "content");
	if (e->n_calls && !e->content_len)
		ob_jw_null(w);
	else
		ob_jw_stringn(w, e->content, e->content_len);
	if (e->thinking_len) {
		ob_jw_key(w, "reasoning_content");
		ob_jw_stringn(w, e->thinking, e->thinking_len);
	}
	if (e->n_calls) {
		ob_jw_key(w, "tool_calls");
		rn_infer_write_tool_calls(w, e, false);
	}
	ob_jw_obj_end(w);
	rn_infer_write_choice_logprobs(w, e, RN_INFER_LP_LLAMA);
	ob_jw_obj_end(w);
	ob_jw_arr_end(w);
	chat_usage(e, w);
}

/* A failure after streaming began cuts the connection (stream_error NULL), as before. */
static const struct rn_infer_face completion_face = {
	.stream_type = "text/event-stream",
	.jw_flags = OB_JW_NO_HTML_ESCAPE,
	.state_size = sizeof(struct ls_state),
	.chunk = completion_chunk,
	.whole = completion_whole,
	.error = ls_error,
};

static const struct rn_infer_face chat_face = {
	.stream_type = "text/event-stream",
	.jw_flags = OB_JW_NO_HTML_ESCAPE,
	.state_size = sizeof(struct ls_state),
	.chunk = chat_chunk,
	.whole = chat_whole,
	.error = ls_error,
};

void rn_ls_req_clear(struct rn_ls_req *q)
{
	free(q->tokens);
	for (size_t i = 0; i < q->n_stops; i++)
		free(q->stops[i]);
	free(q->stops);
	free(q->preserved);
	free(q->grammar);
	memset(q, 0, sizeof *q);
}

int rn_ls_read_preserved(const struct rn_tok *tok, const struct ob_json *root, struct rn_ls_req *q,
			 struct rn_request *rq, char *err, size_t n)
{
	const struct ob_json *pt = ob_json_get(root, "preserved_tokens");
	if (!pt || pt->type != OB_JSON_ARRAY || !pt->count)
		return 0;
	size_t cap = pt->count < RN_ENGINE_MAX_PRESERVED ? pt->count : RN_ENGINE_MAX_PRESERVED;
	if (!(q->preserved = malloc(cap * sizeof *q->preserved))) {
		snprintf(err, n, "out of memory");
		return 500;
	}
	OB_JSON_FOREACH(e, pt)
	{
		if (e->type != OB_JSON_STRING || q->n_preserved == cap)
			continue;
		int32_t *ids = NULL;
		size_t n_ids = 0;
		struct rn_tok_error te;
		if (rn_tok_encode_alloc(tok, e->str, e->len, false, true, &ids, &n_ids, &te) == RN_TOK_OK && n_ids == 1)
			q->preserved[q->n_preserved++] = ids[0];
		free(ids);
	}
	rq->preserved = q->preserved;
	rq->n_preserved = q->n_preserved;
	return 0;
}

int rn_ls_read_params(const struct rn_ls_opts *o, struct rn_ls_req *q, const struct ob_json *root,
		      struct rn_request *rq, char *err, size_t n)
{
	rn_request_default(rq);
	rq->sampling.temperature = (float)num_or(root, "temperature", 0.8);
	rq->sampling.top_k = int_or(root, "top_k", 40);
	rq->sampling.top_p = (float)num_or(root, "top_p", 0.95);
	rq->sampling.min_p = (float)num_or(root, "min_p", 0.05);
	rq->sampling.typical_p = (float)num_or(root, "typical_p", 1.0);
	rq->sampling.repeat_last_n = int_or(root, "repeat_last_n", 64);
	rq->sampling.repeat_penalty = (float)num_or(root, "repeat_penalty", 1.0);
	rq->sampling.presence_penalty = (float)num_or(root, "presence_penalty", 0);
	rq->sampling.frequency_penalty = (float)num_or(root, "frequency_penalty", 0);
	double seed = num_or(root, "seed", -1);
	rq->sampling.seed = seed < 0 ? -1 : seed >= 0x1p63 ? INT64_MAX : (int64_t)seed;
	double np = num_or(root, "n_predict", num_or(root, "max_tokens", -1));
	rq->num_predict = np < 0 ? -1 : (np > 1e9 ? 1000000000 : (int)np);
	rq->num_keep = int_or(root, "n_keep", o->keep ? o->keep : 4);
	rq->cache_prompt = bool_or(root, "cache_prompt", true);
	/* id_slot as upstream: -1 any idle slot (the one whose cache shares the longest prefix), else that slot,
	 * waiting for it while it is busy; the answers' id_slot says which one ran */
	rq->slot = int_or(root, "id_slot", -1);
	if (rq->slot < -1 || rq->slot >= o->parallel) {
		snprintf(err, n, "Invalid id_slot %d: this server has %d slot%s (0 to %d, or -1 for any)", rq->slot,
			 o->parallel, o->parallel == 1 ? "" : "s", o->parallel - 1);
		return 400;
	}
	rq->shift = !o->no_context_shift;
	/* /completion's n_probs, or the chat's logprobs + top_logprobs: entries with that many top tokens
	 * (orun's limit is Ollama's, RN_LOGPROB_TOP_MAX) */
	double n_probs = num_or(root, "n_probs", 0);
	rq->logprobs = n_probs > 0 || bool_or(root, "logprobs", false);
	if (n_probs <= 0)
		n_probs = num_or(root, "top_logprobs", 0);
	rq->top_logprobs = n_probs <= 0 ? 0 : n_probs > RN_LOGPROB_TOP_MAX ? RN_LOGPROB_TOP_MAX : (int)n_probs;
	const struct ob_json *stop = ob_json_get(root, "stop");
	size_t cnt = !stop ? 0 : stop->type == OB_JSON_STRING ? 1 : stop->type == OB_JSON_ARRAY ? stop->count : 0;
	q->stops = calloc(cnt ? cnt : 1, sizeof *q->stops);
	if (!q->stops) {
		snprintf(err, n, "out of memory");
		return 500;
	}
	if (stop && stop->type == OB_JSON_STRING) {
		q->stops[q->n_stops++] = strdup(stop->str);
	} else if (cnt) {
		OB_JSON_FOREACH(e, stop)
		{
			if (e->type == OB_JSON_STRING)
				q->stops[q->n_stops++] = strdup(e->str);
		}
	}
	for (size_t i = 0; i < q->n_stops; i++)
		if (!q->stops[i]) {
			snprintf(err, n, "out of memory");
			return 500;
		}
	rq->stop = (const char *const *)q->stops;
	rq->n_stop = (int)q->n_stops;
	return 0;
}

/* A member that is present and not null. */
static const struct ob_json *non_null(const struct ob_json *o, const char *k)
{
	const struct ob_json *v = ob_json_get(o, k);
	return v && v->type != OB_JSON_NULL ? v : NULL;
}

/* The chat's response_format into *js (the schema to use; an absent schema is {}), as upstream's
 * oaicompat_chat_params_parse. Returns 0 or 400. */
static int chat_response_format(const struct ob_json *root, const struct ob_json **js, char *err, size_t n)
{
	static const struct ob_json empty = {.type = OB_JSON_OBJECT, .span = 1};
	const struct ob_json *rf = non_null(root, "response_format");
	if (!rf || rf->type != OB_JSON_OBJECT)
		return 0;
	const struct ob_json *type = ob_json_get(rf, "type");
	const char *t = type && type->type == OB_JSON_STRING ? type->str : "";
	if (strcmp(t, "json_object") == 0) {
		const struct ob_json *schema = non_null(rf, "schema");
		if (schema || !*js || (*js)->type != OB_JSON_OBJECT || (*js)->count == 0)
			*js = schema ? schema : &empty;
	} else if (strcmp(t, "json_schema") == 0) {
		const struct ob_json *w = non_null(rf, "json_schema");
		const struct ob_json *schema = w && w->type == OB_JSON_OBJECT ? non_null(w, "schema") : NULL;
		*js = schema ? schema : &empty;
	} else if (*t && strcmp(t, "text") != 0) {
		snprintf(err, n, "response_format type must be one of \"text\" or \"json_object\", but got: %.200s", t);
		return 400;
	}
	return 0;
}

int rn_ls_read_grammar(const struct ob_json *root, bool chat, struct rn_ls_req *q, struct rn_request *rq, char *err,
		       size_t n)
{
	const struct ob_json *js = non_null(root, "json_schema");
	const struct ob_json *g = ob_json_get(root, "grammar");
	bool has_grammar = g && g->type == OB_JSON_STRING && g->len;
	int st = 0;
	if (chat) {
		const struct ob_json *tools = ob_json_get(root, "tools");
		const struct ob_json *choice = ob_json_get(root, "tool_choice");
		if (js && has_grammar) {
			snprintf(err, n, "Cannot use both json_schema and grammar");
			return 400;
		}
		if ((st = chat_response_format(root, &js, err, n)))
			return st;
		if (g && tools && tools->type == OB_JSON_ARRAY && tools->count &&
		    !(choice && ob_json_str_eq(choice, "none"))) {
			snprintf(err, n, "Cannot use custom grammar constraints with tools.");
			return 400;
		}
		if (js)
			has_grammar = false;
	}
	if (js && (chat || !g)) {
		if (js->type == OB_JSON_OBJECT && js->count == 0) {
			if (!(q->grammar = strdup(rn_grammar_json))) {
				snprintf(err, n, "out of memory");
				return 500;
			}
		} else if ((st = rn_structured_schema(js, chat ? "" : "\"json_schema\": ", &q->grammar, err, n)))
			return st;
	} else if (has_grammar) {
		if ((st = rn_structured_check(g->str, g->len, "", err, n)))
			return st;
		if (!(q->grammar = strndup(g->str, g->len))) {
			snprintf(err, n, "out of memory");
			return 500;
		}
	}
	rq->grammar = q->grammar;
	rq->grammar_len = q->grammar ? strlen(q->grammar) : 0;
	return 0;
}

/* Answers the error `status` (err) when it is set; else hands the tokenized request to the pipeline's submit
 * and stream steps, on the one runner, with face. q is cleared either way. */
static void generate(struct rn_http_req *r, struct rn_ls_req *q, struct rn_request *rq, int status, const char *err,
		     bool stream, const struct rn_infer_face *face, const struct ls_state *st,
		     const struct rn_infer_parsers *parsers)
{
	if (status) {
		rn_ls_req_clear(q);
		ls_error(r, status, err);
		return;
	}
	struct ls_server *s = srv_of(r);
	int32_t *tokens = q->tokens;
	q->tokens = NULL; /* the pipeline's now */
	rn_infer_tokens(r, &s->api, s->runner, rq, tokens, q->n_tokens, stream,
			s->o.alias ? s->o.alias : (s->o.model ? s->o.model : ""), face, st, parsers);
	rn_ls_req_clear(q); /* the scheduler copied the stop strings */
}

static void h_completion(struct rn_http_req *r)
{
	struct ls_server *s = srv_of(r);
	const struct ob_json *root;
	struct ob_json_doc *doc = open_request(r, &root);
	if (!doc)
		return;
	struct rn_ls_req q = {0};
	bool stream = bool_or(root, "stream", false);
	struct rn_request rq;
	char err[512];
	int st = rn_ls_read_params(&s->o, &q, root, &rq, err, sizeof err);
	if (!st)
		st = rn_ls_read_grammar(root, false, &q, &rq, err, sizeof err);
	if (!st)
		st = rn_ls_read_preserved(rn_runner_tok(s->runner), root, &q, &rq, err, sizeof err);
	if (!st)
		st = rn_ls_read_prompt(rn_runner_tok(s->runner), root, &q, err, sizeof err);
	ob_json_free(doc);
	struct ls_state state = {0};
	generate(r, &q, &rq, st, err, stream, &completion_face, &state, NULL);
}

int rn_ls_read_prompt(const struct rn_tok *tok, const struct ob_json *root, struct rn_ls_req *q, char *err, size_t n)
{
	const struct ob_json *prompt = ob_json_get(root, "prompt");
	if (prompt && prompt->type == OB_JSON_OBJECT) {
		const struct ob_json *md = ob_json_get(prompt, "multimodal_data");
		if (md && md->type == OB_JSON_ARRAY && md->count) {
			snprintf(err, n, "multimodal prompts (images, audio) are not supported by orun yet");
			return 501;
		}
		prompt = ob_json_get(prompt, "prompt_string");
	}
	if (prompt && prompt->type == OB_JSON_STRING) {
		struct rn_tok_error te;
		if (rn_tok_encode_alloc(tok, prompt->str, prompt->len, true, true, &q->tokens, &q->n_tokens, &te) !=
		    RN_TOK_OK) {
			snprintf(err, n, "%s", te.msg);
			return 500;
		}
	} else if (prompt && prompt->type == OB_JSON_ARRAY) {
		q->tokens = malloc((prompt->count ? prompt->count : 1) * sizeof *q->tokens);
		if (q->tokens)
			OB_JSON_FOREACH(e, prompt)
			{
				int64_t x;
				if (!ob_json_int(e, &x) || x < 0 || x > INT32_MAX) {
					snprintf(err, n, "the prompt must be a string or an array of token ids");
					return 400;
				}
				q->tokens[q->n_tokens++] = (int32_t)x;
			}
	}
	if (!q->n_tokens) {
		snprintf(err, n, "the prompt is empty");
		return 400;
	}
	return 0;
}

/* The request's OpenAI messages in the shape a template takes: text content parts joined (others refused),
 * tool-call arguments as objects (OpenAI sends a JSON string). For the Go template (go_shape) the message's
 * `name` becomes tool_name and a call keeps only its function; for a Jinja template the message is kept as
 * sent (id, type, name, tool_call_id, reasoning_content...). Returns 0 or the HTTP status with err. */
static int convert_messages(const struct ob_json *msgs, size_t count, bool go_shape, struct ob_jw *w, char *err,
			    size_t n)
{
	ob_jw_arr(w);
	size_t seen = 0;
	OB_JSON_FOREACH(m, msgs)
	{
		if (seen++ == count)
			break;
		if (!go_shape && m->type != OB_JSON_OBJECT) {
			snprintf(err, n, "each message must be an object");
			return 400;
		}
		ob_jw_obj(w);
		OB_JSON_FOREACH_MEMBER(k, v, m)
		{
			if (strcmp(k->str, "content") == 0 && v->type == OB_JSON_ARRAY) {
				struct ob_buf text;
				ob_buf_init(&text, 0);
				OB_JSON_FOREACH(part, v)
				{
					const struct ob_json *type = ob_json_get(part, "type");
					const struct ob_json *t = ob_json_get(part, "text");
					if (!type || !ob_json_str_eq(type, "text") || !t || t->type != OB_JSON_STRING) {
						ob_buf_free(&text);
						snprintf(err, n, "only text content parts are supported by orun");
						return 400;
					}
					ob_buf_append(&text, t->str, t->len);
				}
				ob_jw_key(w, "content");
				ob_jw_stringn(w, text.p ? text.p : "", text.len);
				ob_buf_free(&text);
			} else if (strcmp(k->str, "tool_calls") == 0 && v->type == OB_JSON_ARRAY) {
				/* OpenAI arguments are a JSON string: the template wants the object */
				ob_jw_key(w, "tool_calls");
				ob_jw_arr(w);
				OB_JSON_FOREACH(tc, v)
				{
					const struct ob_json *fn = ob_json_get(tc, "function");
					const struct ob_json *name = fn ? ob_json_get(fn, "name") : NULL;
					const struct ob_json *args = fn ? ob_json_get(fn, "arguments") : NULL;
					const struct ob_json *id = ob_json_get(tc, "id");
					ob_jw_obj(w);
					if (!go_shape && id && id->type == OB_JSON_STRING) {
						ob_jw_key(w, "id");
						ob_jw_stringn(w, id->str, id->len);
					}
					if (!go_shape) {
						ob_jw_key(w, "type");
						ob_jw_string(w, "function");
					}
					ob_jw_key(w, "function");
					ob_jw_obj(w);
					ob_jw_key(w, "name");
					ob_jw_string(w, name && name->type == OB_JSON_STRING ? name->str : "");
					ob_jw_key(w, "arguments");
					struct ob_json_error je;
					struct ob_json_doc *ad = args && args->type == OB_JSON_STRING
									 ? ob_json_parse(args->str, args->len, &je)
									 : NULL;
					if (ad)
						ob_jw_value(w, ob_json_root(ad), false);
					else if (args && args->type == OB_JSON_OBJECT)
						ob_jw_value(w, args, false);
					else
						ob_jw_raw(w, "{}", 2);
					ob_json_free(ad);
					ob_jw_obj_end(w);
					ob_jw_obj_end(w);
				}
				ob_jw_arr_end(w);
			} else if (go_shape && strcmp(k->str, "name") == 0) {
				ob_jw_key(w, "tool_name");
				ob_jw_value(w, v, false);
			} else {
				ob_jw_keyn(w, k->str, k->len);
				ob_jw_value(w, v, false);
			}
		}
		ob_jw_obj_end(w);
	}
	ob_jw_arr_end(w);
	return 0;
}

/* A message's content as text: a string, or its text parts joined (NULL: not text). *out malloc'd. */
static char *content_text(const struct ob_json *m, size_t *len)
{
	const struct ob_json *c = ob_json_get(m, "content");
	struct ob_buf b;
	ob_buf_init(&b, 0);
	if (c && c->type == OB_JSON_STRING)
		ob_buf_append(&b, c->str, c->len);
	else if (c && c->type == OB_JSON_ARRAY)
		OB_JSON_FOREACH(part, c)
		{
			const struct ob_json *t = ob_json_get(part, "text");
			if (t && t->type == OB_JSON_STRING)
				ob_buf_append(&b, t->str, t->len);
		}
	*len = b.len;
	bool failed = b.failed;
	char *s = failed ? NULL : ob_buf_take(&b);
	ob_buf_free(&b);
	if (!s && !failed)
		s = strdup("");
	return s;
}

/* The last message when it is an assistant's (upstream's prefill), else NULL. */
static const struct ob_json *prefill_message(const struct ob_json *msgs)
{
	const struct ob_json *last = NULL;
	OB_JSON_FOREACH(m, msgs)
	last = m;
	const struct ob_json *role = last && last->type == OB_JSON_OBJECT ? ob_json_get(last, "role") : NULL;
	return role && ob_json_str_eq(role, "assistant") ? last : NULL;
}

/* The request's messages converted (convert_messages; the first `count`, SIZE_MAX: all) and parsed back: the
 * document, or NULL with the status in *status and the message in err. */
static struct ob_json_doc *messages_doc(const struct ob_json *root, size_t count, bool go_shape, int *status,
					char *err, size_t n)
{
	const struct ob_json *msgs = ob_json_get(root, "messages");
	if (!msgs || msgs->type != OB_JSON_ARRAY) {
		snprintf(err, n, "'messages' is required");
		*status = 400;
		return NULL;
	}
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	*status = convert_messages(msgs, count, go_shape, &w, err, n);
	const char *mj = *status ? NULL : ob_jw_str(&w);
	struct ob_json_error je;
	struct ob_json_doc *md = mj ? ob_json_parse(mj, w.len, &je) : NULL;
	ob_jw_free(&w);
	if (!md && !*status) {
		snprintf(err, n, "out of memory");
		*status = 500;
	}
	return md;
}

int rn_ls_render_chat(const struct mf_tpl *tpl, const struct ob_json *root, char **out, size_t *out_len, char *err,
		      size_t n)
{
	if (!tpl) {
		snprintf(err, n, "orun cannot render this model's chat template (no matching Go template); "
				 "render the prompt yourself and use /completion");
		return 500;
	}
	int status;
	struct ob_json_doc *md = messages_doc(root, SIZE_MAX, true, &status, err, n);
	if (!md)
		return status;
	struct mf_tpl_messages *tm = NULL;
	struct mf_tpl_error te = {0};
	if (mf_tpl_messages_from_json(ob_json_root(md), &tm, &te) != MF_TPL_OK) {
		ob_json_free(md);
		snprintf(err, n, "%s", te.msg);
		return 400;
	}
	const struct ob_json *tools = ob_json_get(root, "tools");
	struct mf_tpl_values v = {0};
	v.messages = tm->items;
	v.n_messages = tm->n;
	v.tools = tools && tools->type == OB_JSON_ARRAY ? tools : NULL;
	/* chat_template_kwargs.enable_thinking (Ollama's think) */
	const struct ob_json *kw = ob_json_get(root, "chat_template_kwargs");
	const struct ob_json *et = kw ? ob_json_get(kw, "enable_thinking") : NULL;
	const struct ob_json *re = kw ? ob_json_get(kw, "reasoning_effort") : NULL;
	if (et && et->type == OB_JSON_BOOL) {
		v.is_think_set = true;
		v.think = et->boolean;
		v.think_level.p = et->boolean ? (re && re->type == OB_JSON_STRING ? re->str : "medium") : "";
		v.think_level.n = strlen(v.think_level.p);
	}
	int rc = mf_tpl_execute(tpl, &v, out, out_len, &te);
	mf_tpl_messages_free(tm);
	ob_json_free(md);
	if (rc != MF_TPL_OK) {
		snprintf(err, n, "%s", te.msg);
		return 500;
	}
	return 0;
}

/* The template's keyword arguments: the server's (--chat-template-kwargs) with the request's
 * chat_template_kwargs over them. NULL when neither has any, else a document (*failed when out of memory). */
static struct ob_json_doc *merged_kwargs(const struct ob_json *defaults, const struct ob_json *req, bool *failed)
{
	*failed = false;
	bool have_d = defaults && defaults->type == OB_JSON_OBJECT && defaults->count;
	bool have_r = req && req->type == OB_JSON_OBJECT && req->count;
	if (!have_d && !have_r)
		return NULL;
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	if (have_d)
		OB_JSON_FOREACH_MEMBER(k, v, defaults)
		{
			if (have_r && ob_json_get(req, k->str))
				continue;
			ob_jw_keyn(&w, k->str, k->len);
			ob_jw_value(&w, v, false);
		}
	if (have_r)
		OB_JSON_FOREACH_MEMBER(k, v, req)
		{
			ob_jw_keyn(&w, k->str, k->len);
			ob_jw_value(&w, v, false);
		}
	ob_jw_obj_end(&w);
	struct ob_json_error je;
	struct ob_json_doc *d = ob_jw_str(&w) ? ob_json_parse(ob_jw_str(&w), w.len, &je) : NULL;
	ob_jw_free(&w);
	*failed = d == NULL;
	return d;
}

int rn_ls_render_jinja(const struct mf_jinja *t, const struct rn_tok *tok, const struct ob_json *default_kwargs,
		       const struct ob_json *root, char **out, size_t *out_len, char *err, size_t n)
{
	int status;
	const struct ob_json *msgs = ob_json_get(root, "messages");
	const struct ob_json *prefill = msgs && msgs->type == OB_JSON_ARRAY ? prefill_message(msgs) : NULL;
	struct ob_json_doc *md = messages_doc(root, prefill ? msgs->count - 1 : SIZE_MAX, false, &status, err, n);
	if (!md)
		return status;
	bool failed;
	struct ob_json_doc *kd = merged_kwargs(default_kwargs, ob_json_get(root, "chat_template_kwargs"), &failed);
	if (failed) {
		ob_json_free(md);
		snprintf(err, n, "out of memory");
		return 500;
	}
	const struct ob_json *agp = ob_json_get(root, "add_generation_prompt");
	struct rn_jchat_in in = {
		.messages = ob_json_root(md),
		.tools = ob_json_get(root, "tools"),
		.extra = kd ? ob_json_root(kd) : NULL,
		.tok = tok,
		.add_generation_prompt = prefill || !(agp && agp->type == OB_JSON_BOOL && !agp->boolean),
	};
	status = rn_jchat_render(t, &in, out, out_len, err, n);
	if (!status && prefill) {
		size_t tl = 0;
		char *text = content_text(prefill, &tl);
		if (!text || rn_jchat_append(out, out_len, text, tl) < 0) {
			free(*out);
			*out = NULL;
			snprintf(err, n, "out of memory");
			status = 500;
		}
		free(text);
	}
	ob_json_free(kd);
	ob_json_free(md);
	return status;
}

/* The chat's prompt with the server's template: the Jinja one (--jinja, the default) or the Go one. */
static int render_request(struct ls_server *s, const struct ob_json *root, char **p, size_t *pl, char *err, size_t n)
{
	if (s->jinja)
		return rn_ls_render_jinja(s->jinja, rn_runner_tok(s->runner), s->kwargs ? ob_json_root(s->kwargs) : NULL,
					  root, p, pl, err, n);
	return rn_ls_render_chat(s->tpl, root, p, pl, err, n);
}

static void h_apply_template(struct rn_http_req *r)
{
	const struct ob_json *root;
	struct ob_json_doc *doc = open_request(r, &root);
	if (!doc)
		return;
	char *p = NULL, err[512];
	size_t pl = 0;
	int st = render_request(srv_of(r), root, &p, &pl, err, sizeof err);
	ob_json_free(doc);
	if (st) {
		ls_error(r, st, err);
		return;
	}
	ls_send_string(r, "prompt", p, pl);
	free(p);
}

/* THE output parser of a chat rendered with the Jinja template: runner/chatfmt's parser of the format the
 * template's text selects, as llama-server selects it (start_chatfmt in api/pipeline.c), with the request's
 * tools and its reasoning_format (else --reasoning-format): "none" leaves the reasoning in the content,
 * "deepseek" and "deepseek-legacy" split it out, "auto" as the format does. The Go-template path parses
 * nothing (as before). */
static void ls_jinja_output_parsers(const struct ls_server *s, const struct ob_json *root, const char *prompt,
				    size_t prompt_len, struct rn_infer_parsers *p)
{
	memset(p, 0, sizeof *p);
	if (!s->jinja)
		return;
	const struct ob_json *rf = ob_json_get(root, "reasoning_format");
	const char *format = rf && rf->type == OB_JSON_STRING ? rf->str : s->o.reasoning_format;
	p->chat_template = s->jinja_src;
	p->chat_template_len = s->jinja_len;
	p->prompt = prompt;
	p->prompt_len = prompt_len;
	p->tools = ob_json_get(root, "tools");
	if (format && strcmp(format, "none") == 0)
		p->reasoning = RN_CHATFMT_REASONING_NONE;
	else if (format && strncmp(format, "deepseek", 8) == 0)
		p->reasoning = RN_CHATFMT_REASONING_DEEPSEEK;
	else
		p->reasoning = RN_CHATFMT_REASONING_AUTO;
}

/* Whether the chat asks the model to think, so that a grammar starts after the closing thinking tag: the
 * template writes that tag (a model that never thinks must not leave the grammar off), and the rendered prompt
 * ends inside an opened thinking block or chat_template_kwargs.enable_thinking is true (the request's, else
 * --chat-template-kwargs'), as Ollama sends it for think. */
static bool asks_thinking(const struct ls_server *s, const struct ob_json *root, const char *prompt, size_t len)
{
	enum rn_chatfmt_kind kind =
		rn_chatfmt_for_request(rn_chatfmt_detect(s->jinja_src, s->jinja_len), s->jinja_src, s->jinja_len, NULL, 0);
	const char *open, *close;
	if (!rn_chatfmt_think_tags(kind, &open, &close) || !close || !*close ||
	    !memmem(s->jinja_src, s->jinja_len, close, strlen(close)))
		return false;
	if (prompt && rn_chatfmt_prompt_opens_thinking(kind, prompt, len))
		return true;
	const struct ob_json *kw = ob_json_get(root, "chat_template_kwargs");
	const struct ob_json *et = kw && kw->type == OB_JSON_OBJECT ? ob_json_get(kw, "enable_thinking") : NULL;
	if (!et && s->kwargs)
		et = ob_json_get(ob_json_root(s->kwargs), "enable_thinking");
	return et && et->type == OB_JSON_BOOL && et->boolean;
}

static void h_chat(struct rn_http_req *r)
{
	struct ls_server *s = srv_of(r);
	const struct ob_json *root;
	struct ob_json_doc *doc = open_request(r, &root);
	if (!doc)
		return;
	struct ls_state state = {0};
	snprintf(state.id, sizeof state.id, "chatcmpl-orun%lx", (unsigned long)rn_http_wall_ns());
	bool stream = bool_or(root, "stream", false);
	struct rn_ls_req q = {0};
	struct rn_request rq;
	char err[512];
	int st = rn_ls_read_params(&s->o, &q, root, &rq, err, sizeof err);
	if (!st)
		st = rn_ls_read_grammar(root, true, &q, &rq, err, sizeof err);
	if (!st)
		st = rn_ls_read_preserved(rn_runner_tok(s->runner), root, &q, &rq, err, sizeof err);
	char *p = NULL;
	size_t pl = 0;
	if (!st)
		st = render_request(s, root, &p, &pl, err, sizeof err);
	struct rn_tok_error te;
	if (!st && rn_tok_encode_alloc(rn_runner_tok(s->runner), p, pl, true, true, &q.tokens, &q.n_tokens, &te) !=
			   RN_TOK_OK) {
		st = 500;
		snprintf(err, sizeof err, "%s", te.msg);
	} else if (!st && !q.n_tokens) {
		st = 500;
		snprintf(err, sizeof err, "the rendered prompt is empty");
	}
	struct rn_infer_parsers parsers;
	ls_jinja_output_parsers(s, root, p, pl, &parsers);
	parsers.thinking = parsers.chat_template && parsers.reasoning != RN_CHATFMT_REASONING_NONE &&
			   asks_thinking(s, root, p, pl);
	generate(r, &q, &rq, st, err, stream, &chat_face, &state, &parsers);
	free(p);
	ob_json_free(doc);
}

static void h_embeddings(struct rn_http_req *r)
{
	if (!ready(r))
		return;
	struct ls_server *s = srv_of(r);
	if (!s->o.embedding) {
		ls_error(r, 501, "This server does not support embeddings. Start it with `--embeddings`");
		return;
	}
	const struct ob_json *root;
	struct ob_json_doc *doc = parse_body(r, &root);
	if (!doc)
		return;
	const struct ob_json *in = ob_json_get(root, "input");
	if (!in)
		in = ob_json_get(root, "content");
	double norm = num_or(root, "embd_normalize", 2);
	size_t n_in = in && in->type == OB_JSON_ARRAY ? in->count : (in && in->type == OB_JSON_STRING ? 1 : 0);
	if (!n_in) {
		ob_json_free(doc);
		ls_error(r, 400, "\"input\" must be a string or an array of strings");
		return;
	}
	struct ob_jw w;
	ob_jw_init(&w, 0, OB_JW_NO_HTML_ESCAPE);
	ob_jw_obj(&w);
	ob_jw_key(&w, "model");
	ob_jw_string(&w, s->o.alias ? s->o.alias : s->o.model);
	ob_jw_key(&w, "object");
	ob_jw_string(&w, "list");
	ob_jw_key(&w, "data");
	ob_jw_arr(&w);
	int64_t total = 0;
	for (size_t i = 0; i < n_in; i++) {
		const struct ob_json *t = in->type == OB_JSON_ARRAY ? ob_json_at(in, i) : in;
		if (!t || t->type != OB_JSON_STRING) {
			ob_jw_free(&w);
			ob_json_free(doc);
			ls_error(r, 400, "\"input\" must be a string or an array of strings");
			return;
		}
		int32_t *ids = NULL;
		size_t n = 0;
		struct rn_tok_error te;
		if (rn_tok_encode_alloc(rn_runner_tok(s->runner), t->str, t->len, true, true, &ids, &n, &te) != RN_TOK_OK) {
			ob_jw_free(&w);
			ob_json_free(doc);
			ls_error(r, 500, te.msg);
			return;
		}
		float *v = NULL;
		int dim = 0;
		struct rn_sched_error se = {0};
		int rc = rn_runner_embed(s->sched, s->runner, ids, n, &v, &dim, ls_gone, r, &se);
		free(ids);
		if (rc < 0) {
			ob_jw_free(&w);
			ob_json_free(doc);
			ls_error(r, se.status == 400 ? 400 : 500,
				 se.status == 400 ? "input is too large to process. increase the physical batch size" : se.msg);
			return;
		}
		if (norm == 2) {
			double ss = 0;
			for (int k = 0; k < dim; k++)
				ss += (double)v[k] * v[k];
			double f = ss > 0 ? 1.0 / sqrt(ss) : 0;
			for (int k = 0; k < dim; k++)
				v[k] = (float)(v[k] * f);
		}
		ob_jw_obj(&w);
		ob_jw_key(&w, "embedding");
		ob_jw_arr(&w);
		for (int k = 0; k < dim; k++)
			ob_jw_float32(&w, v[k]);
		ob_jw_arr_end(&w);
		ob_jw_key(&w, "index");
		ob_jw_int(&w, (int64_t)i);
		ob_jw_key(&w, "object");
		ob_jw_string(&w, "embedding");
		ob_jw_key(&w, "tokens_evaluated");
		ob_jw_int(&w, (int64_t)n);
		ob_jw_obj_end(&w);
		free(v);
		total += (int64_t)n;
	}
	ob_jw_arr_end(&w);
	ob_jw_key(&w, "usage");
	ob_jw_obj(&w);
	ob_jw_key(&w, "prompt_tokens");
	ob_jw_int(&w, total);
	ob_jw_key(&w, "total_tokens");
	ob_jw_int(&w, total);
	ob_jw_obj_end(&w);
	ob_jw_obj_end(&w);
	ob_json_free(doc);
	ls_send(r, &w);
}

static const struct rn_http_route ls_routes[] = {
	{RN_HTTP_GET, "/health", h_health, NULL, NULL, NULL, NULL},
	{RN_HTTP_GET, "/v1/health", h_health, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST, "/completion", h_completion, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST, "/completions", h_completion, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST, "/v1/chat/completions", h_chat, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST, "/chat/completions", h_chat, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST, "/apply-template", h_apply_template, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST, "/tokenize", h_tokenize, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST, "/detokenize", h_detokenize, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST, "/v1/embeddings", h_embeddings, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST, "/embeddings", h_embeddings, NULL, NULL, NULL, NULL},
	{RN_HTTP_POST, "/embedding", h_embeddings, NULL, NULL, NULL, NULL},
	{RN_HTTP_GET, "/v1/models", h_models, NULL, NULL, NULL, NULL},
	{RN_HTTP_GET, "/models", h_models, NULL, NULL, NULL, NULL},
	{RN_HTTP_GET, "/props", h_props, NULL, NULL, NULL, NULL},
	{0, NULL, NULL, NULL, NULL, NULL, NULL},
};

/* ---------------------------------------------------------------------------------------------------- */
/* main */

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

/* The Go template for the model's chat: --chat-template NAME of the bundled corpus, else the bundled template
 * closest to the GGUF's Jinja template (as Ollama's create does). */
static void pick_template(struct ls_server *s, const struct gguf_file *f)
{
	const struct mf_tpl_named *named = NULL;
	if (s->o.chat_template && strcmp(s->o.chat_template, "chatml") != 0) {
		for (size_t i = 0; i < mf_tpl_named_count(); i++)
			if (strcmp(mf_tpl_named_at(i)->name, s->o.chat_template) == 0)
				named = mf_tpl_named_at(i);
	}
	if (!named) {
		struct gguf_str jinja = gguf_get_str(f, "tokenizer.chat_template", (struct gguf_str){NULL, 0});
		if (jinja.ptr && jinja.len)
			named = mf_tpl_named_match(jinja.ptr, (size_t)jinja.len);
	}
	if (!named && s->o.chat_template)
		for (size_t i = 0; i < mf_tpl_named_count(); i++)
			if (strcmp(mf_tpl_named_at(i)->name, s->o.chat_template) == 0)
				named = mf_tpl_named_at(i);
	if (!named)
		return;
	struct mf_tpl_error te;
	if (mf_tpl_parse(named->text, named->text_len, &s->tpl, &te) == MF_TPL_OK)
		snprintf(s->tpl_name, sizeof s->tpl_name, "%s", named->name);
	else
		s->tpl = NULL;
}

/* llama.cpp's chatml, the template upstream falls back to when the model has none. */
static const char chatml_jinja[] =
	"{%- for message in messages -%}"
	"{{- '<|im_start|>' + message['role'] + '\\n' + (message['content'] or '') + '<|im_end|>\\n' -}}"
	"{%- endfor -%}"
	"{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}";

/* The Jinja source --chat-template NAME stands for: chatml, a bundled template's name (its reference Jinja
 * template of index.json), or Jinja text itself (as upstream takes it). NULL for an unknown name. */
static const char *named_jinja(const char *name, size_t *len)
{
	if (strcmp(name, "chatml") == 0) {
		*len = sizeof chatml_jinja - 1;
		return chatml_jinja;
	}
	for (size_t i = 0; i < mf_tpl_named_count(); i++)
		if (strcmp(mf_tpl_named_at(i)->name, name) == 0)
			return mf_tpl_named_jinja(mf_tpl_named_at(i), len);
	if (strstr(name, "{{") || strstr(name, "{%")) {
		*len = strlen(name);
		return name;
	}
	return NULL;
}

/* The names --chat-template accepts, for the error message. */
static void template_names(char *buf, size_t n)
{
	size_t w = (size_t)snprintf(buf, n, "chatml");
	for (size_t i = 0; i < mf_tpl_named_count() && w < n; i++) {
		size_t len;
		if (strcmp(mf_tpl_named_at(i)->name, "chatml") != 0 && mf_tpl_named_jinja(mf_tpl_named_at(i), &len))
			w += (size_t)snprintf(buf + w, n - w, ", %s", mf_tpl_named_at(i)->name);
	}
}

/* The Jinja chat template (--jinja): --chat-template-file, else --chat-template, else the GGUF's
 * tokenizer.chat_template, else chatml (as upstream). Returns 0, or -1 with the message in err. */
static int pick_jinja(struct ls_server *s, const struct gguf_file *f, char *err, size_t n)
{
	const char *src = NULL;
	size_t len = 0;
	struct ob_buf file;
	ob_buf_init(&file, MF_JINJA_MAX_SOURCE);
	const char *origin = "the model's tokenizer.chat_template";
	if (s->o.chat_template_file) {
		if (!ob_buf_read_file(&file, s->o.chat_template_file)) {
			snprintf(err, n, "cannot read --chat-template-file %s%s", s->o.chat_template_file,
				 file.over ? " (over 1 MiB)" : "");
			ob_buf_free(&file);
			return -1;
		}
		src = file.p ? file.p : "";
		len = file.len;
		origin = s->o.chat_template_file;
	} else if (s->o.chat_template) {
		if (!(src = named_jinja(s->o.chat_template, &len))) {
			char names[1024];
			template_names(names, sizeof names);
			snprintf(err, n, "unknown chat template '%s' (with --jinja orun knows: %s; or pass Jinja text, "
					 "or --chat-template-file)", s->o.chat_template, names);
			return -1;
		}
		origin = s->o.chat_template;
	} else {
		struct gguf_str ct = gguf_get_str(f, "tokenizer.chat_template", (struct gguf_str){NULL, 0});
		src = ct.ptr;
		len = (size_t)ct.len;
		if (!src || !len) {
			src = chatml_jinja;
			len = sizeof chatml_jinja - 1;
			origin = "chatml (the model has no chat template)";
		}
	}
	struct mf_jinja_error je = {0};
	int rc = 0;
	if (mf_jinja_parse(src, len, &s->jinja, &je) != MF_JINJA_OK) {
		snprintf(err, n, "chat template (%s): %s: %s (line %d)", origin, je.type, je.message, je.line);
		rc = -1;
	} else if (!(s->jinja_src = malloc(len + 1))) {
		snprintf(err, n, "out of memory");
		rc = -1;
	} else {
		memcpy(s->jinja_src, src, len);
		s->jinja_src[len] = 0;
		s->jinja_len = len;
		logf_("main: chat template (jinja): %s", origin);
	}
	ob_buf_free(&file);
	return rc;
}

int rn_llama_server_run(const struct rn_ls_opts *o)
{
	struct ls_server s;
	memset(&s, 0, sizeof s);
	s.o = *o;
	if (s.o.parallel < 1)
		s.o.parallel = 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (s.o.list_devices) {
		printf("Available devices:\n");
		for (int b = 0; b < rn_backend_count(); b++)
			if (rn_backend_is_gpu(b))
				print_devices(stdout, b, true);
		return 0;
	}
	logf_("build: orun %s (llama-server compatible runner)", PACKAGE_VERSION);
	for (int b = 0; b < rn_backend_count(); b++) {
		int ndev = rn_backend_is_gpu(b) ? rn_backend_device_count(b) : 0;
		if (ndev > 0) {
			logf_("ggml_%s_init: found %d %s devices:", rn_backend_name(b), ndev, rn_backend_device_prefix(b));
			print_devices(stderr, b, false);
		}
	}
	print_system_info(s.o.threads);
	if (s.o.n_lora || s.o.mmproj)
		logf_("warning: orun ignores --lora and --mmproj (adapters and projectors are not supported yet)");
	s.created = (int64_t)time(NULL);
	if (s.o.chat_template_kwargs) {
		struct ob_json_error je;
		s.kwargs = ob_json_parse(s.o.chat_template_kwargs, strlen(s.o.chat_template_kwargs), &je);
		if (!s.kwargs || ob_json_root(s.kwargs)->type != OB_JSON_OBJECT) {
			logf_("error: --chat-template-kwargs: not a JSON object: %s", s.o.chat_template_kwargs);
			ob_json_free(s.kwargs);
			return 1;
		}
	}

	signal(SIGPIPE, SIG_IGN);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	struct rn_srv_host h;
	char hp[300];
	snprintf(hp, sizeof hp, "%s:%d", s.o.host, s.o.port);
	rn_srv_parse_host(hp, &h, NULL, 0);
	struct rn_http_options ho = {
		.listen = &h,
		.routes = ls_routes,
		.app = &s,
		.no_host_check = true,
		.no_cors = true,
	};
	char err[512];
	struct rn_http_server *http = rn_http_start(&ho, err, sizeof err);
	if (!http) {
		logf_("error: %s", err);
		return 1;
	}
	logf_("main: HTTP server is listening, hostname: %s, port: %d", s.o.host, rn_http_port(http));

	int rc = 0;
	if (s.o.model) {
		enum rn_kv_type kv = RN_KV_F16;
		struct rn_error ke = {0};
		if (s.o.cache_type_k && rn_kv_type_parse(s.o.cache_type_k, &kv, &ke) != RN_OK) {
			logf_("error: %s", ke.msg);
			rn_http_stop(http);
			return 1;
		}
		struct rn_sched_config sc = {
			.num_parallel = (unsigned)s.o.parallel,
			.max_loaded = 1,
			.max_queue = 512,
			.keep_alive_ns = INT64_MAX,
			.kv_type = kv,
			.backend = -1,
		};
		s.sched = rn_sched_new(&sc);
		s.api.sched = s.sched;
		s.api.log.quiet = true; /* the runner's own log lines are llama.cpp's, below */
		struct rn_load_params lo; /* what the flags ask; the scheduler applies the defaults */
		rn_load_params_init(&lo);
		lo.n_ctx = s.o.ctx > 0 ? s.o.ctx / s.o.parallel : 0;
		lo.n_batch = s.o.batch > 0 ? s.o.batch : 0;
		lo.num_gpu = s.o.ngl;
		lo.n_threads = s.o.threads;
		/* --cache-ram, MiB (upstream's host-memory prompt cache; here the budget of the shared prefix cache) */
		lo.cache_bytes = s.o.cache_ram_mib < 0 ? -1 : s.o.cache_ram_mib * 1024 * 1024;
		/* as llama-server: mapped unless told (Ollama passes --load-mode none / --no-mmap when it wants the
		 * weights copied, CPU loads included) */
		lo.use_mmap = s.o.no_mmap ? 0 : 1;
		struct rn_sched_model sm = {.model_path = s.o.model, .name = s.o.model, .digest = "",
					    .embedding = s.o.embedding};
		struct rn_sched_error se = {0};
		logf_("llama_model_loader: loading model from %s", s.o.model);
		s.runner = s.sched ? rn_sched_acquire(s.sched, &sm, &lo, INT64_MAX, NULL, NULL, &se) : NULL;
		if (!s.runner) {
			snprintf(s.error, sizeof s.error, "error loading model: %s", s.sched ? se.msg : "out of memory");
			logf_("%s", s.error);
			atomic_store(&s.state, 2);
			rc = 1;
		} else {
			const struct rn_model *m = rn_runner_model(s.runner);
			s.n_ctx_slot = rn_runner_n_ctx(s.runner);
			uint64_t file = gguf_file_size(m->gguf);
			/* the buffer-size lines Ollama parses for its memory accounting (llm/llama_server.go) */
			struct rn_sched_info *info = NULL;
			size_t ni = 0;
			bool gpu = false;
			if (rn_sched_list(s.sched, &info, &ni) == 0 && ni == 1)
				gpu = info[0].size_vram > 0;
			logf_("load_tensors: %12s model buffer size = %8.2f MiB", gpu ? "CUDA0" : "CPU_Mapped",
			      (double)file / (1 << 20));
			if (ni == 1 && (uint64_t)info[0].size > file)
				logf_("llama_kv_cache: %12s KV buffer size = %8.2f MiB", gpu ? "CUDA0" : "CPU",
				      (double)((uint64_t)info[0].size - file) / (1 << 20));
			rn_sched_info_free(info, ni);
			logf_("llama_context: n_ctx_per_seq = %d, n_seq_max = %d", s.n_ctx_slot, s.o.parallel);
			char terr[1200];
			if (s.o.jinja && pick_jinja(&s, m->gguf, terr, sizeof terr) < 0) {
				snprintf(s.error, sizeof s.error, "%.590s", terr);
				logf_("error: %s", terr);
				atomic_store(&s.state, 2);
				rc = 1;
			}
			if (!s.o.jinja)
				pick_template(&s, m->gguf);
			if (s.tpl)
				logf_("main: chat template: %s (Go template equivalent of the model's chat template)", s.tpl_name);
			if (rc == 0) {
				logf_("main: model loaded");
				logf_("main: server is listening on http://%s:%d - starting the main loop", s.o.host,
				      rn_http_port(http));
				atomic_store(&s.state, 1);
			}
		}
	} else {
		logf_("main: no model given: serving device discovery only");
	}
	if (rc == 0)
		while (!got_signal)
			pause();
	mf_jinja_free(s.jinja);
	free(s.jinja_src);
	ob_json_free(s.kwargs);
	atomic_store(&s.api.stopping, true);
	rn_http_stop(http);
	if (s.runner)
		rn_sched_release(s.sched, s.runner);
	rn_sched_free(s.sched);
	mf_tpl_free(s.tpl);
	return rc;
}
