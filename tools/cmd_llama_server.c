/* tools/cmd_llama_server.c — `orun llama-server` (also what runs when the executable is invoked under the
 * name llama-server, e.g. installed as Ollama's lib/ollama/llama-server): llama.cpp's server interface over
 * orun's engine. The flags are read in tools/llama_server_flags.c; the server is runner/api/llamaserver.c.
 */
#include "config.h"

#include <stdio.h>

#include "runner/api/llamaserver.h"
#include "tools/commands.h"
#include "tools/llama_server_flags.h"

int cmd_llama_server(int argc, char **argv)
{
	struct rn_ls_opts o;
	int rc = ls_flags_parse(argc, argv, &o);
	if (rc != 0) {
		ls_flags_usage(rc > 0 ? stdout : stderr);
		return rc > 0 ? 0 : 1;
	}
	return rn_llama_server_run(&o);
}
