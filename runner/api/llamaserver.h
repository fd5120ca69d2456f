/* runner/api/llamaserver.h — `orun llama-server`: orun as the runner binary Ollama >= 0.30 starts
 * (lib/ollama/llama-server), speaking the subset of upstream llama.cpp's llama-server that Ollama uses.
 *
 * Accepts every flag Ollama passes (reference/ollama-wire.md §1.2.2) and the older ollama_llama_server
 * flags (--ctx-size, --batch-size, --n-gpu-layers, --parallel …); answers /health, /completion (SSE),
 * /v1/chat/completions (SSE), /apply-template, /tokenize, /detokenize, /v1/embeddings; prints the device and
 * buffer-size log lines Ollama parses; --list-devices and the model-less start serve device discovery.
 */
#ifndef ORUN_RUNNER_API_LLAMASERVER_H
#define ORUN_RUNNER_API_LLAMASERVER_H

/* Runs the runner mode with llama-server's argv (argv[0] is the program name). Returns the exit status. */
int rn_llama_server_main(int argc, char **argv);

#endif
