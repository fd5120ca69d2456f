/* tools/commands.h — the subcommands of the orun executable.
 *
 * Each command is `int cmd_<name>(int argc, char **argv)` where argv[0] is the subcommand's own name; it
 * returns the process exit status (0 ok, 1 failure, 2 usage error). Commands print; libraries never do.
 */
#ifndef ORUN_TOOLS_COMMANDS_H
#define ORUN_TOOLS_COMMANDS_H

#include <stdbool.h>
#include <stdio.h>

struct orun_command {
	const char *name;
	const char *summary; /* one line for `orun help` */
	int (*run)(int argc, char **argv);
};

/* The table, terminated by a zeroed entry (tools/orun.c). */
extern const struct orun_command orun_commands[];

int cmd_help(int argc, char **argv);
int cmd_version(int argc, char **argv);
int cmd_gguf(int argc, char **argv);
int cmd_mkmodel(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_bench(int argc, char **argv);

/* Client commands (tools/cmd_{create,show,list,cp,rm}.c; need the libcurl part of the build). */
int cmd_create(int argc, char **argv);
int cmd_show(int argc, char **argv);
/* `orun show`'s tables for an /api/show response r, on out: stdout for `orun show`, stderr for the
 * interactive `/show info` (Ollama's showInfo(resp, false, os.Stderr)). */
struct ob_json;
void cmd_show_info(const struct ob_json *r, bool verbose, FILE *out);
int cmd_list(int argc, char **argv);
int cmd_cp(int argc, char **argv);
int cmd_rm(int argc, char **argv);
/* tools/cmd_pull.c: both registry commands */
int cmd_pull(int argc, char **argv);
int cmd_push(int argc, char **argv);

/* The server side (tools/cmd_{serve,llama_server,ps,run,stop}.c; built with the server). */
int cmd_serve(int argc, char **argv);
int cmd_llama_server(int argc, char **argv);
int cmd_ps(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_stop(int argc, char **argv);

#endif
