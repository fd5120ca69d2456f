/* tools/llama_server_flags.h — llama-server's command line (what Ollama and older ollama_llama_server
 * callers pass) into the runner's plain options (struct rn_ls_opts, runner/api/llamaserver.h).
 */
#ifndef ORUN_TOOLS_LLAMA_SERVER_FLAGS_H
#define ORUN_TOOLS_LLAMA_SERVER_FLAGS_H

#include <stdio.h>

#include "runner/api/llamaserver.h"

/* Parses argv (argv[0] is the program name) into o; strings in o point into argv. Returns 0, 1 for -h/--help,
 * or -1 after printing "error: ..." on stderr (an unknown flag, a missing or bad value). Uses getopt's global
 * state (not thread-safe; may be called again). */
int ls_flags_parse(int argc, char **argv, struct rn_ls_opts *o);

/* The usage text. */
void ls_flags_usage(FILE *f);

#endif
