/* tools/cmd_cp.c — `orun cp SOURCE DESTINATION`: POST /api/copy, then "copied 'a' to 'b'". */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "tools/clifmt.h"
#include "tools/client.h"
#include "tools/commands.h"

static void usage(FILE *f)
{
	fprintf(f, "Copy a model\n\nUsage:\n  orun cp SOURCE DESTINATION [flags]\n\n"
		   "Flags:\n  -h, --help   help for cp\n\n"
		   "Environment Variables:\n"
		   "      OLLAMA_HOST                IP Address for the ollama server (default 127.0.0.1:11434)\n");
}

int cmd_cp(int argc, char **argv)
{
	const char *pos[2];
	size_t n_pos;
	int rc;
	if (!cli_parse(argc, argv, NULL, 0, pos, 2, &n_pos, usage, &rc))
		return rc;
	if ((rc = cli_exact_args(n_pos, 2)) != 0)
		return rc;
	struct client c;
	if (client_init(&c) != 0)
		return cli_error("%s", c.err);
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	ob_jw_key(&w, "source");
	ob_jw_string(&w, pos[0]);
	ob_jw_key(&w, "destination");
	ob_jw_string(&w, pos[1]);
	ob_jw_obj_end(&w);
	struct client_response resp;
	if (client_heartbeat(&c) != 0 || client_do(&c, "POST", "/api/copy", ob_jw_str(&w), w.len, &resp) != 0) {
		rc = cli_error("%s", c.err);
	} else {
		free(resp.body);
		printf("copied '%s' to '%s'\n", pos[0], pos[1]);
	}
	ob_jw_free(&w);
	client_cleanup(&c);
	return rc;
}
