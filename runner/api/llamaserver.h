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

/* The runner's start options (strings borrowed; they must outlive the run). */
struct rn_ls_opts {
	const char *model;         /* --model: the GGUF; NULL: device discovery only */
	const char *host;          /* --host (default 127.0.0.1) */
	const char *alias;         /* --alias: the model name in answers (default: the path) */
	const char *chat_template; /* --chat-template: a bundled Go template's name */
	const char *cache_type_k;  /* --cache-type-k: the KV cache type (f16, q8_0) */
	int port;                  /* --port (default 8080) */
	int ctx;                   /* -c: total context of all slots (0: the model's) */
	int parallel;              /* -np: slots (>= 1) */
	int batch;                 /* -b (0: 512) */
	int ngl;                   /* -ngl: layers on the GPU, -1 unset */
	int threads;               /* -t (0: automatic) */
	int keep;                  /* --keep: n_keep when a request gives none (0: 4) */
	int n_lora;                /* --lora / --lora-scaled given (not supported: warned about) */
	bool embedding, context_shift, no_context_shift, verbose, list_devices;
	bool mmproj;               /* --mmproj given (not supported: warned about) */
	bool no_mmap;              /* --no-mmap, or --load-mode none (Ollama's use_mmap false) */
};

/* Fills o with the defaults above. */
void rn_ls_opts_default(struct rn_ls_opts *o);

/* Runs the runner mode until SIGINT/SIGTERM (or, with list_devices, prints the devices and returns). Returns
 * the exit status. */
int rn_llama_server_run(const struct rn_ls_opts *o);

#endif
