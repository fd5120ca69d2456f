/* tools/cmd_llama_server.c — `orun llama-server` (also what runs when the executable is invoked under the
 * name llama-server, e.g. installed as Ollama's lib/ollama/llama-server): llama.cpp's server interface over
 * orun's engine. The work is in runner/api/llamaserver.c.
 */
#include "config.h"

#include "runner/api/llamaserver.h"
#include "tools/commands.h"

int cmd_llama_server(int argc, char **argv)
{
	return rn_llama_server_main(argc, argv);
}
