/* tests/fuzz/fuzz_api.c — libFuzzer target for request decoding: /api/chat, /api/generate (the pipeline's
 * decode, resolve and options steps), /api/embed and /api/embeddings, and OpenAI's /v1/chat/completions,
 * /v1/completions, /v1/embeddings (the conversion to the native request, then the same steps), plus the
 * read-only model routes (/api/show, /api/tags, /v1/models, /api/ps).
 *
 * The input is a request (tests/fuzz/fuzz_request.h) run in memory (rn_http_serve_memory) through `orun
 * serve`'s own route table and handlers, minus the routes that write (create, copy, delete, blobs) or reach
 * the network (pull, push). The store holds three models with header-only GGUF files: "m" (a chat template
 * with tools and thinking, a params layer, a system prompt, a history), "e" (an embedding model) and "p"
 * (no template). The server is "stopping", so a request that passes every check gets 499 from the scheduler
 * instead of loading a model. Checks: every answer is one JSON document (a streamed one: one per line), an
 * error answer has an "error", and no request runs out of memory or goes unanswered by its handler.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "modelfile/model.h"
#include "runner/api/api.h"
#include "runner/server/http.h"
#include "runner/server/sched.h"
#include "runner/server/server.h"
#include "tests/fuzz/fuzz_request.h"
#include "tests/fuzz/fuzz_tmpstore.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT 16384
#define MAX_ROUTES 64

/* A chat template in the shape of Qwen3's: system, tools, tool calls in <tool_call>, thinking. */
static const char chat_template[] =
	"{{- if .System }}<|im_start|>system\n{{ .System }}<|im_end|>\n{{ end }}"
	"{{- if .Tools }}<|im_start|>system\n<tools>\n{{- range .Tools }}\n{{ . }}\n{{- end }}\n</tools>\n"
	"Call a function as <tool_call>\n{\"name\": <name>, \"arguments\": <args>}\n</tool_call><|im_end|>\n{{ end }}"
	"{{- range $i, $_ := .Messages }}{{- $last := eq (len (slice $.Messages $i)) 1 -}}"
	"{{- if eq .Role \"user\" }}<|im_start|>user\n{{ .Content }}<|im_end|>\n"
	"{{ else if eq .Role \"assistant\" }}<|im_start|>assistant\n"
	"{{ if .Thinking }}<think>{{ .Thinking }}</think>{{ end }}{{ .Content }}"
	"{{- if .ToolCalls }}<tool_call>\n{{ range .ToolCalls }}{\"name\": \"{{ .Function.Name }}\", "
	"\"arguments\": {{ .Function.Arguments }}}\n{{ end }}</tool_call>{{ end }}<|im_end|>\n"
	"{{ else if eq .Role \"tool\" }}<|im_start|>user\n<tool_response>\n{{ .Content }}\n</tool_response><|im_end|>\n"
	"{{ end }}{{- if and (ne .Role \"assistant\") $last }}<|im_start|>assistant\n"
	"{{ if and $.IsThinkSet (not $.Think) }}<think>\n\n</think>\n\n{{ end }}{{ end }}{{- end }}";

static const char params[] = "{\"stop\":[\"<|im_end|>\"],\"temperature\":0.7,\"num_ctx\":2048}";
static const char messages[] = "[{\"role\":\"user\",\"content\":\"hi\"},"
			       "{\"role\":\"assistant\",\"content\":\"<think>greet</think>hello\"}]";
static const char config_json[] = "{\"model_format\":\"gguf\",\"model_family\":\"qwen3\",\"model_families\":[\"qwen3\"],"
				  "\"model_type\":\"8B\",\"file_type\":\"Q4_K_M\"}";

static struct rn_http_route routes[MAX_ROUTES];
static struct rn_api api;
static bool verbose;

static void die(const char *what)
{
	fprintf(stderr, "fuzz_api: %s\n", what);
	abort();
}

static bool allowed_route(const char *path)
{
	static const char *const ok[] = {"/api/version", "/api/tags", "/api/show", "/api/ps",
					 "/api/generate", "/api/chat", "/api/embed", "/api/embeddings",
					 "/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/models",
					 "/v1/models/:model", NULL};
	for (int i = 0; ok[i]; i++)
		if (strcmp(ok[i], path) == 0)
			return true;
	return false;
}

static void put(struct mf_store *s, const char *name, const struct fz_layer *layers, size_t n)
{
	struct mf_error err;
	if (fz_tmpstore_put_model(s, name, config_json, strlen(config_json), layers, n, &err) != 0)
		die(err.msg);
}

static void setup(void)
{
	size_t n = 0;
	for (const struct rn_http_route *rt = rn_server_routes(); rt->path; rt++)
		if (allowed_route(rt->path)) {
			if (n + 1 >= MAX_ROUTES)
				die("more routes than MAX_ROUTES");
			routes[n++] = *rt;
		}
	struct mf_store *s = fz_tmpstore_open();
	size_t gl, el;
	void *gguf = fz_gguf_header("qwen3", 0, &gl), *egguf = fz_gguf_header("qwen3", 1, &el);
	if (!gguf || !egguf)
		die("cannot write the GGUF headers");
	const struct fz_layer m[] = {
		{MF_MEDIA_MODEL, gguf, gl},
		{MF_MEDIA_TEMPLATE, chat_template, strlen(chat_template)},
		{MF_MEDIA_SYSTEM, "You are a fuzzer.", 17},
		{MF_MEDIA_PARAMS, params, strlen(params)},
		{MF_MEDIA_MESSAGES, messages, strlen(messages)},
	};
	put(s, "m", m, 5);
	const struct fz_layer e[] = {{MF_MEDIA_MODEL, egguf, el}};
	put(s, "e", e, 1);
	const struct fz_layer p[] = {{MF_MEDIA_MODEL, gguf, gl}};
	put(s, "p", p, 1);
	free(gguf);
	free(egguf);

	struct rn_sched_config sc = {.num_parallel = 1, .max_loaded = 1, .max_queue = 4, .backend = -1};
	api.store = s;
	api.sched = rn_sched_new(&sc);
	api.log.quiet = true;
	if (!api.sched)
		die("rn_sched_new");
	verbose = getenv("FUZZ_VERBOSE") != NULL;
	/* every request that passes decoding and the model checks stops at the scheduler with 499 */
	atomic_store(&api.stopping, true);
}

/* An answer is JSON: one document, or (streamed) one per line, or one SSE event per "data: " line. */
static void check_body(int status, const char *b, size_t n)
{
	struct ob_json_error je;
	struct ob_json_doc *d = ob_json_parse(b, n, &je);
	if (d) {
		const struct ob_json *root = ob_json_root(d);
		if (status >= 400 && (root->type != OB_JSON_OBJECT || !ob_json_get(root, "error")))
			die("an error answer without \"error\"");
		ob_json_free(d);
		return;
	}
	if (status >= 400 || !n)
		die("an error answer that is not JSON");
	/* a stream: every line a JSON document (SSE: after "data: ", or [DONE]) */
	for (size_t i = 0; i < n;) {
		const char *nl = memchr(b + i, '\n', n - i);
		size_t e = nl ? (size_t)(nl - b) : n, s = i;
		if (e - s >= 6 && memcmp(b + s, "data: ", 6) == 0)
			s += 6;
		if (e > s && !(e - s == 6 && memcmp(b + s, "[DONE]", 6) == 0)) {
			struct ob_json_doc *ld = ob_json_parse(b + s, e - s, &je);
			if (!ld)
				die("a streamed line that is not JSON");
			ob_json_free(ld);
		}
		i = e + 1;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	if (!ready) {
		setup();
		ready = true;
	}
	struct fz_request q = {0};
	if (size > MAX_INPUT || fz_request_parse(&q, data, size) != 0) {
		fz_request_free(&q);
		return 0;
	}
	q.req.loopback = true;
	static const char *const origins[] = {"http://localhost"};
	struct rn_http_options o = {
		.origins = origins,
		.n_origins = 1,
		.max_body = MAX_INPUT,
		.max_prompt_body = MAX_INPUT,
		.routes = routes,
		.app = &api,
	};
	struct ob_buf out;
	ob_buf_init(&out, 64u << 20);
	char err[512];
	int status = rn_http_serve_memory(&o, &q.req, &out, err, sizeof err);
	if (status < 0)
		die(err);
	if (verbose) /* FUZZ_VERBOSE=1: what each input got, to triage a corpus */
		fprintf(stderr, "%s %s -> %d %.200s\n", q.req.method, q.req.path, status, out.p ? out.p : "");
	/* a 500 is Ollama's answer to some bad options (modelOptions' errors); not an internal failure */
	if (status == 500 && out.p && (strstr(out.p, "out of memory") || strstr(out.p, "internal error"))) {
		fprintf(stderr, "fuzz_api: %.*s\n", (int)out.len, out.p);
		die("a request failed inside the server");
	}
	/* the transport's own answers (no route or method, CORS, Host, redirects) are plain text or empty */
	bool transport = status == 405 || status == 403 || status == 204 || status == 301 || status == 307 ||
			 (status == 404 && out.len >= 18 && memcmp(out.p, "404 page not found", 18) == 0);
	if (!transport)
		check_body(status, out.p ? out.p : "", out.len);
	ob_buf_free(&out);
	fz_request_free(&q);
	return 0;
}
