/* tools/cmd_stop.c — `orun stop MODEL`: unload a running model as `ollama stop` does (POST /api/show to check
 * the model exists, then /api/generate with an empty prompt and keep_alive 0). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/json.h"
#include "tools/clifmt.h"
#include "tools/client.h"
#include "tools/commands.h"

static void usage(FILE *f)
{
	fprintf(f, "Stop a running model\n\n"
		   "Usage:\n  orun stop MODEL [flags]\n\n"
		   "Flags:\n  -h, --help   help for stop\n\n"
		   "Environment Variables:\n"
		   "      OLLAMA_HOST                IP Address for the ollama server (default 127.0.0.1:11434)\n");
}

int cmd_stop(int argc, char **argv)
{
	const char *pos[2];
	size_t n_pos;
	int rc;
	if (!cli_parse(argc, argv, NULL, 0, pos, 2, &n_pos, usage, &rc))
		return rc;
	if (cli_exact_args(n_pos, 1) != 0)
		return 1;
	struct client c;
	if (client_init(&c) != 0)
		return cli_error("%s", c.err);
	struct client_response resp = {0};
	char *show = client_model_body(pos[0], NULL);
	char *gen = client_model_body(pos[0], "\"keep_alive\":0");
	if (!show || !gen) {
		client_cleanup(&c);
		free(show);
		free(gen);
		return cli_error("out of memory");
	}
	rc = 0;
	if (client_heartbeat(&c) != 0 || client_do(&c, "POST", "/api/show", show, strlen(show), &resp) != 0 ||
	    (free(resp.body), resp.body = NULL, client_do(&c, "POST", "/api/generate", gen, strlen(gen), &resp) != 0)) {
		if (strstr(c.err, "not found"))
			rc = cli_error("couldn't find model \"%s\" to stop", pos[0]);
		else
			rc = cli_error("%s", c.err);
	}
	free(resp.body);
	free(show);
	free(gen);
	client_cleanup(&c);
	return rc;
}
