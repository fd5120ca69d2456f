/* tools/cmd_pull.c — `orun pull` and `orun push`: listed as in Ollama, answering with one plain line until
 * orun has a registry client.
 *
 * The flags and argument count are checked as Ollama's are (so a script learns the same mistakes); then the
 * command says what to do instead and exits 1. Nothing is contacted.
 */
#include "config.h"

#include <stdio.h>

#include "tools/clifmt.h"
#include "tools/commands.h"

static void pull_usage(FILE *f)
{
	fprintf(f, "Pull a model from a registry\n\n"
		   "Usage:\n  orun pull MODEL [flags]\n\n"
		   "Flags:\n"
		   "  -h, --help       help for pull\n"
		   "      --insecure   Use an insecure registry\n\n"
		   "orun has no registry client yet: this command only says so. Copy the model's GGUF file to this\n"
		   "machine and create the model from it:\n"
		   "  echo 'FROM ./model.gguf' > Modelfile && orun create NAME -f Modelfile\n\n"
		   "Environment Variables:\n"
		   "      OLLAMA_HOST                IP Address for the ollama server (default 127.0.0.1:11434)\n");
}

static void push_usage(FILE *f)
{
	fprintf(f, "Push a model to a registry\n\n"
		   "Usage:\n  orun push MODEL [flags]\n\n"
		   "Flags:\n"
		   "  -h, --help       help for push\n"
		   "      --insecure   Use an insecure registry\n\n"
		   "orun has no registry client yet: this command only says so. The model's GGUF file is in the\n"
		   "store (OLLAMA_MODELS/blobs; `orun show --modelfile NAME` names it) and can be copied from there.\n\n"
		   "Environment Variables:\n"
		   "      OLLAMA_HOST                IP Address for the ollama server (default 127.0.0.1:11434)\n");
}

/* Parses as Ollama's pull/push (one MODEL, --insecure); 0 to go on to the message, else the exit status. */
static int parse(int argc, char **argv, void (*usage)(FILE *f))
{
	struct cli_flag flags[] = {{"insecure", 0, false, NULL}};
	const char *pos[1];
	size_t n_pos;
	int rc;
	if (!cli_parse(argc, argv, flags, 1, pos, 1, &n_pos, usage, &rc))
		return rc ? rc : -1;
	bool insecure;
	if ((rc = cli_flag_bool(&flags[0], &insecure)) != 0)
		return rc;
	return cli_exact_args(n_pos, 1);
}

int cmd_pull(int argc, char **argv)
{
	int rc = parse(argc, argv, pull_usage);
	if (rc)
		return rc < 0 ? 0 : rc;
	return cli_error("pull is not available in orun yet: copy the model's GGUF file here and create the model "
			 "from it (FROM ./model.gguf in a Modelfile, then `orun create NAME -f Modelfile`)");
}

int cmd_push(int argc, char **argv)
{
	int rc = parse(argc, argv, push_usage);
	if (rc)
		return rc < 0 ? 0 : rc;
	return cli_error("push is not available in orun yet: copy the model's GGUF file from the store instead "
			 "(`orun show --modelfile NAME` names it on its FROM line)");
}
