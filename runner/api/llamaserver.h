/* runner/api/llamaserver.h — `orun llama-server`: orun as the runner binary Ollama >= 0.30 starts
 * (lib/ollama/llama-server), speaking the subset of upstream llama.cpp's llama-server that Ollama uses.
 *
 * Answers /health, /completion (SSE), /v1/chat/completions (SSE), /apply-template, /tokenize, /detokenize,
 * /v1/embeddings; prints the device and buffer-size log lines Ollama parses; --list-devices and the
 * model-less start serve device discovery. The command line (every flag Ollama passes, reference/
 * ollama-wire.md §1.2.2, and the older ollama_llama_server ones) is read by tools/llama_server_flags.c.
 */
#ifndef ORUN_RUNNER_API_LLAMASERVER_H
#define ORUN_RUNNER_API_LLAMASERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/json.h"

/* The runner's start options (strings borrowed; they must outlive the run). */
struct rn_ls_opts {
	const char *model;         /* --model: the GGUF; NULL: device discovery only */
	const char *host;          /* --host (default 127.0.0.1) */
	const char *alias;         /* --alias: the model name in answers (default: the path) */
	const char *chat_template; /* --chat-template: with --jinja chatml, a bundled template's name or Jinja
				      text; with --no-jinja a bundled Go template's name */
	const char *chat_template_file;   /* --chat-template-file: Jinja text (--jinja) */
	const char *chat_template_kwargs; /* --chat-template-kwargs: a JSON object of template arguments */
	const char *reasoning_format;     /* --reasoning-format none|deepseek|deepseek-legacy|auto (default auto) */
	const char *cache_type_k;  /* --cache-type-k: the KV cache type (f16, q8_0) */
	int port;                  /* --port (default 8080) */
	int ctx;                   /* -c: total context of all slots (0: the model's) */
	int parallel;              /* -np: slots (>= 1) */
	int batch;                 /* -b (0: 512) */
	int ngl;                   /* -ngl: layers on the GPU, -1 unset */
	int threads;               /* -t (0: automatic) */
	int keep;                  /* --keep: n_keep when a request gives none (0: 4) */
	long long cache_ram_mib;   /* -cram/--cache-ram N: the prefix cache's budget in MiB (0: keep no block no
				      slot holds); -1 (upstream's "no limit"; also when not given): ORUN_PREFIX_CACHE,
				      else sized from the memory left after the weights and the slots' KV */
	int n_lora;                /* --lora / --lora-scaled given (not supported: warned about) */
	bool embedding, context_shift, no_context_shift, verbose, list_devices;
	bool mmproj;               /* --mmproj given (not supported: warned about) */
	bool no_mmap;              /* --no-mmap, or --load-mode none (Ollama's use_mmap false) */
	bool jinja;                /* --jinja (the default, as upstream) / --no-jinja: render chats with the Jinja
				      chat template (else with the Go template equivalent of it) */
};

/* Fills o with the defaults above. */
void rn_ls_opts_default(struct rn_ls_opts *o);

/* Runs the runner mode until SIGINT/SIGTERM (or, with list_devices, prints the devices and returns). Returns
 * the exit status. */
int rn_llama_server_run(const struct rn_ls_opts *o);

/* ---------------------------------------------------------------------------------------------------- */
/* What the handlers make of a request body, without the transport or a loaded model: the steps the handlers
 * run, exposed for tests/fuzz/fuzz_llamaserver.c. root is the body's object (rn_ls_parse_body); each returns 0
 * or the HTTP status to answer, with the message in err (n bytes). */

struct mf_tpl;
struct rn_request;
struct rn_tok;

/* What a /completion or chat request allocates before it goes to the pipeline. */
struct rn_ls_req {
	int32_t *tokens; /* the prompt's ids (malloc'd) */
	size_t n_tokens;
	char **stops;    /* the stop strings (malloc'd, each malloc'd) */
	size_t n_stops;
	int32_t *preserved; /* preserved_tokens' ids (malloc'd) */
	size_t n_preserved;
	char *grammar;      /* GBNF from grammar / json_schema / response_format (malloc'd), or NULL */
};

/* Frees what q holds and zeroes it. */
void rn_ls_req_clear(struct rn_ls_req *q);

/* The body parsed; NULL (status 400) with "invalid JSON body: ..." in err when it is not a JSON object. */
struct ob_json_doc *rn_ls_parse_body(const char *body, size_t len, const struct ob_json **root, char *err, size_t n);

/* /completion and chat: the sampling fields into rq (rn_request_default first), the stop strings into q
 * (rq->stop points at them), token probabilities (n_probs, or logprobs + top_logprobs; top entries capped at
 * RN_LOGPROB_TOP_MAX), id_slot into rq->slot (400 when it is not -1 or one of o->parallel slots). */
int rn_ls_read_params(const struct rn_ls_opts *o, struct rn_ls_req *q, const struct ob_json *root,
		      struct rn_request *rq, char *err, size_t n);

/* /completion and chat: preserved_tokens (token texts) into q, and rq->preserved pointing at them: each text
 * that is one token (special tokens parsed) is shown as its text even when it is a control token, as upstream
 * detokenizes them with special = true; other texts are ignored, as upstream does. 500 when out of memory. */
int rn_ls_read_preserved(const struct rn_tok *tok, const struct ob_json *root, struct rn_ls_req *q,
			 struct rn_request *rq, char *err, size_t n);

/* The output constraint into q->grammar (rq->grammar points at it), as upstream reads it. /completion (chat
 * false): json_schema (when there is no grammar member; {} is any object) converted, else grammar as GBNF text.
 * Chat: the same fields, and response_format {"type":"json_object"[,"schema"]} or {"type":"json_schema",
 * "json_schema":{"schema"}} ("text": none); json_schema with grammar, grammar with tools, or another type is
 * refused. Returns 0 or 400 (a schema or grammar that does not compile: its message) / 500 with err. */
int rn_ls_read_grammar(const struct ob_json *root, bool chat, struct rn_ls_req *q, struct rn_request *rq, char *err,
		       size_t n);

/* /completion's prompt into q->tokens: a string (tokenized with the special tokens parsed, BOS added), an array
 * of ids, or {"prompt_string", "multimodal_data"} (501 when multimodal data is given); 400 when empty. */
int rn_ls_read_prompt(const struct rn_tok *tok, const struct ob_json *root, struct rn_ls_req *q, char *err, size_t n);

/* The chat's messages (OpenAI shape: text content parts joined, tool-call arguments as JSON text, "name" as
 * tool_name) rendered with tpl, the Go template equivalent of the model's chat template (NULL: none, 500),
 * chat_template_kwargs.enable_thinking as think (--no-jinja). *out is malloc'd. */
int rn_ls_render_chat(const struct mf_tpl *tpl, const struct ob_json *root, char **out, size_t *out_len, char *err,
		      size_t n);

/* The chat's messages rendered with the Jinja template t (--jinja): text content parts joined, tool-call
 * arguments (JSON text) as objects, the rest of each message as sent; tools when the request has some;
 * keyword arguments: default_kwargs (--chat-template-kwargs, may be NULL) with the request's
 * chat_template_kwargs over them; add_generation_prompt (default true); BOS/EOS texts from tok (may be NULL).
 * 400 with the template's message when it raises. *out is malloc'd. */
struct mf_jinja;
int rn_ls_render_jinja(const struct mf_jinja *t, const struct rn_tok *tok, const struct ob_json *default_kwargs,
		       const struct ob_json *root, char **out, size_t *out_len, char *err, size_t n);

/* The answers of /tokenize ({"tokens": [...]}, with pieces on request) and /detokenize ({"content"}) into w. */
int rn_ls_tokenize(const struct rn_tok *tok, const struct ob_json *root, struct ob_jw *w, char *err, size_t n);
int rn_ls_detokenize(const struct rn_tok *tok, const struct ob_json *root, struct ob_jw *w, char *err, size_t n);

#endif
