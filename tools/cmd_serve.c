/* tools/cmd_serve.c — `orun serve`: Ollama's server, configured by Ollama's environment variables.
 *
 * Everything happens in runner/server/server.c; this file prints the usage (with the variables, as `ollama serve
 * --help` does) and hands over.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "runner/server/server.h"
#include "tools/commands.h"

static void usage(FILE *f)
{
	fprintf(f, "Start orun's server (Ollama's REST API, the OpenAI-compatible /v1 API and /metrics)\n\n"
		   "Usage:\n  orun serve [flags]\n\nAliases:\n  serve, start\n\nFlags:\n  -h, --help   help for serve\n\n"
		   "Environment Variables:\n"
		   "      OLLAMA_HOST               IP Address for the server (default 127.0.0.1:11434)\n"
		   "      OLLAMA_MODELS             The path to the models directory (default ~/.ollama/models)\n"
		   "      OLLAMA_KEEP_ALIVE         The duration that models stay loaded in memory (default \"5m\")\n"
		   "      OLLAMA_NUM_PARALLEL       Maximum number of parallel requests per model (default 1)\n"
		   "      OLLAMA_MAX_LOADED_MODELS  Maximum number of loaded models (default 3)\n"
		   "      OLLAMA_MAX_QUEUE          Maximum number of queued requests (default 512)\n"
		   "      OLLAMA_CONTEXT_LENGTH     Context length to use unless otherwise specified (default 4096)\n"
		   "      OLLAMA_KV_CACHE_TYPE      Quantization type for the K/V cache: f16, q8_0 (default f16)\n"
		   "      OLLAMA_ORIGINS            A comma separated list of allowed origins\n"
		   "      OLLAMA_NOPRUNE            Do not prune model blobs on startup\n"
		   "      OLLAMA_DEBUG              Show additional debug information (e.g. OLLAMA_DEBUG=1)\n"
		   "      ORUN_HTTP_SNDBUF          Diagnostics: a fixed socket send buffer per connection, in bytes\n"
		   "                                (default: the kernel's autotuning)\n");
}

int cmd_serve(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		}
		fprintf(stderr, "Error: unknown flag: %s\n", argv[i]);
		usage(stderr);
		return 2;
	}
	struct rn_srv_config cfg;
	if (rn_srv_config_from_env(&cfg) != 0) {
		fprintf(stderr, "Error: out of memory\n");
		return 1;
	}
	int rc = rn_serve(&cfg);
	rn_srv_config_free(&cfg);
	return rc;
}
