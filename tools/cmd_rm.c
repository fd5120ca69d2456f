/* tools/cmd_rm.c — `orun rm MODEL [MODEL...]`: for each model, unload it if it is running (POST /api/show,
 * then /api/generate with keep_alive 0, as `ollama rm` does), then DELETE /api/delete and "deleted 'x'". */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/json.h"
#include "tools/clifmt.h"
#include "tools/client.h"
#include "tools/commands.h"

static int ignore_line(void *ctx, const char *line, size_t n)
{
	(void)ctx;
	(void)line;
	(void)n;
	return 0;
}

/* loadOrUnloadModel with keep_alive 0: 0, or -1 with c->err. */
static int unload(struct client *c, const char *model)
{
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	client_show_request(&w, model, "", false);
	struct client_response resp;
	int rc = client_do(c, "POST", "/api/show", ob_jw_str(&w), w.len, &resp);
	ob_jw_free(&w);
	if (rc != 0)
		return -1;
	bool remote = false;
	struct ob_json_error je;
	struct ob_json_doc *d = ob_json_parse(resp.body, resp.len, &je);
	free(resp.body);
	if (d) {
		const struct ob_json *rh = ob_json_get(ob_json_root(d), "remote_host");
		remote = rh && rh->type == OB_JSON_STRING && rh->len;
		ob_json_free(d);
	}
	if (remote)
		return 0;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	ob_jw_key(&w, "model");
	ob_jw_string(&w, model);
	ob_jw_key(&w, "prompt");
	ob_jw_string(&w, "");
	ob_jw_key(&w, "suffix");
	ob_jw_string(&w, "");
	ob_jw_key(&w, "system");
	ob_jw_string(&w, "");
	ob_jw_key(&w, "template");
	ob_jw_string(&w, "");
	ob_jw_key(&w, "keep_alive");
	ob_jw_string(&w, "0s");
	ob_jw_key(&w, "options");
	ob_jw_null(&w);
	ob_jw_obj_end(&w);
	rc = client_stream(c, "POST", "/api/generate", ob_jw_str(&w), w.len, ignore_line, NULL);
	ob_jw_free(&w);
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f, "Remove a model\n\nUsage:\n  orun rm MODEL [MODEL...] [flags]\n\n"
		   "Flags:\n  -h, --help   help for rm\n\n"
		   "Environment Variables:\n"
		   "      OLLAMA_HOST                IP Address for the ollama server (default 127.0.0.1:11434)\n");
}

int cmd_rm(int argc, char **argv)
{
	const char **pos = calloc((size_t)argc + 1, sizeof *pos);
	size_t n_pos;
	int rc;
	if (!cli_parse(argc, argv, NULL, 0, pos, (size_t)argc, &n_pos, usage, &rc) ||
	    (rc = cli_min_args(n_pos, 1)) != 0) {
		free(pos);
		return rc;
	}
	struct client c;
	if (client_init(&c) != 0) {
		free(pos);
		return cli_error("%s", c.err);
	}
	if (client_heartbeat(&c) != 0) {
		rc = cli_error("%s", c.err);
		n_pos = 0;
	}
	for (size_t i = 0; i < n_pos; i++) {
		if (unload(&c, pos[i]) != 0 && !strcasestr(c.err, "not found"))
			fprintf(stderr, "Warning: unable to stop model '%s'\n", pos[i]);
		struct ob_jw w;
		ob_jw_init(&w, 0, 0);
		ob_jw_obj(&w);
		ob_jw_key(&w, "model");
		ob_jw_string(&w, "");
		ob_jw_key(&w, "name");
		ob_jw_string(&w, pos[i]);
		ob_jw_obj_end(&w);
		struct client_response resp;
		int r = client_do(&c, "DELETE", "/api/delete", ob_jw_str(&w), w.len, &resp);
		ob_jw_free(&w);
		if (r != 0) {
			rc = cli_error("%s", c.err);
			break;
		}
		free(resp.body);
		printf("deleted '%s'\n", pos[i]);
	}
	client_cleanup(&c);
	free(pos);
	return rc;
}
