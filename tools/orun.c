/* tools/orun.c — the orun executable: subcommand dispatch, `help` and `--version`.
 *
 * Every other subcommand lives in its own tools/cmd_*.c and is listed in the table below only once it
 * works; an unknown name prints the usage on stderr and exits 2. Invoked under the name `llama-server`
 * (Ollama's runner path) the executable behaves as `orun llama-server`.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "runner/backend.h"
#include "tools/commands.h"

const struct orun_command orun_commands[] = {
	{"help", "show this help", cmd_help},
	{"version", "print the version and the compiled-in backends", cmd_version},
	{"gguf", "validate a GGUF file and show its metadata and tensors", cmd_gguf},
	{"generate", "run a raw prompt through a model on this machine (no server)", cmd_generate},
	{"mkmodel", "write a deterministic synthetic llama/qwen2/qwen3 GGUF of any shape", cmd_mkmodel},
	{"bench", "measure prefill/decode speed, TTFT, GB/s and % of the memory roofline", cmd_bench},
#ifdef ORUN_WITH_SERVER
	{"create", "create a model from a Modelfile (on the server OLLAMA_HOST names)", cmd_create},
	{"show", "show information for a model", cmd_show},
	{"list", "list models", cmd_list},
	{"ls", "list models (alias of list)", cmd_list},
	{"cp", "copy a model", cmd_cp},
	{"rm", "remove a model", cmd_rm},
	{"pull", "pull a model from a registry", cmd_pull},
	{"push", "push a model to a registry", cmd_push},
#endif
#ifdef ORUN_WITH_SERVER
	{"serve", "start orun's server: Ollama's API, the OpenAI /v1 API and /metrics", cmd_serve},
	{"run", "run a model (chat through the server)", cmd_run},
	{"stop", "stop (unload) a running model", cmd_stop},
	{"ps", "list running models", cmd_ps},
	{"llama-server", "run as llama.cpp's llama-server (Ollama's runner); see --help", cmd_llama_server},
#endif
	{NULL, NULL, NULL},
};

static const struct orun_command *find_command(const char *name)
{
	for (const struct orun_command *c = orun_commands; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

static void print_usage(FILE *f)
{
	fprintf(f, "Usage: orun COMMAND [ARGS...]\n\n"
		   "A drop-in, faster engine for Ollama's API, runner protocol and Modelfiles.\n\n"
		   "Commands:\n");
	for (const struct orun_command *c = orun_commands; c->name; c++)
		fprintf(f, "  %-14s %s\n", c->name, c->summary);
	fprintf(f, "\nFlags:\n  -h, --help     show this help\n  -v, --version  print the version\n\n"
		   "Run 'orun COMMAND --help' for a command's own flags.\n");
}

int cmd_help(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--help") != 0 && strcmp(argv[1], "-h") != 0) {
		const struct orun_command *c = find_command(argv[1]);
		if (!c) {
			fprintf(stderr, "orun: unknown command '%s'\n\n", argv[1]);
			print_usage(stderr);
			return 2;
		}
		char *sub[] = {argv[1], "--help", NULL};
		return c->run(2, sub);
	}
	print_usage(stdout);
	return 0;
}

int cmd_version(int argc, char **argv)
{
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf("Usage: orun version\n\nPrints the version and the compiled-in backends.\n");
		return 0;
	}
	printf("orun version %s\n", PACKAGE_VERSION);
	printf("backends:");
	for (int i = 0; i < rn_backend_count(); i++)
		printf(" %s", rn_backend_name(i));
	printf("\n");
	return 0;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

int main(int argc, char **argv)
{
	if (argc > 0 && strcmp(base_name(argv[0]), "llama-server") == 0) {
		const struct orun_command *c = find_command("llama-server");
		if (!c) {
			fprintf(stderr, "orun: the llama-server runner mode is not built yet\n");
			return 2;
		}
		argv[0] = "llama-server";
		return c->run(argc, argv);
	}
	if (argc < 2) {
		print_usage(stderr);
		return 2;
	}
	const char *name = argv[1];
	if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0)
		return cmd_help(1, argv + 1);
	if (strcmp(name, "-v") == 0 || strcmp(name, "--version") == 0)
		return cmd_version(1, argv + 1);
	const struct orun_command *c = find_command(name);
	if (!c) {
		fprintf(stderr, "orun: unknown command '%s'\n\n", name);
		print_usage(stderr);
		return 2;
	}
	return c->run(argc - 1, argv + 1);
}
