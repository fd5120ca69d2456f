/* tools/cmd_list.c — `orun list [PREFIX]` (alias ls): GET /api/tags and the NAME / ID / SIZE / MODIFIED table
 * of `ollama list` (ID = the first 12 hex digits of the manifest digest, sizes in decimal units). */
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
	fprintf(f, "List models\n\n"
		   "Usage:\n  orun list [flags]\n\n"
		   "Aliases:\n  list, ls\n\n"
		   "Flags:\n  -h, --help   help for list\n\n"
		   "Environment Variables:\n"
		   "      OLLAMA_HOST                IP Address for the ollama server (default 127.0.0.1:11434)\n");
}

int cmd_list(int argc, char **argv)
{
	const char *pos[1];
	size_t n_pos;
	int rc;
	if (!cli_parse(argc, argv, NULL, 0, pos, 1, &n_pos, usage, &rc))
		return rc;
	struct ob_json_doc *d;
	char err[CLIENT_ERR_MAX];
	if (client_get_json("/api/tags", &d, err) != 0)
		return cli_error("%s", err);
	static const char *const header[] = {"NAME", "ID", "SIZE", "MODIFIED"};
	struct table t;
	table_init(&t, 4, header);
	const struct ob_json *models = ob_json_get(ob_json_root(d), "models");
	if (models && models->type == OB_JSON_ARRAY)
		OB_JSON_FOREACH(m, models)
		{
			const struct ob_json *name = ob_json_get(m, "name"), *digest = ob_json_get(m, "digest"),
					     *size = ob_json_get(m, "size"), *mod = ob_json_get(m, "modified_at"),
					     *remote = ob_json_get(m, "remote_model");
			const char *nm = name && name->type == OB_JSON_STRING ? name->str : "";
			if (n_pos && strncasecmp(nm, pos[0], strlen(pos[0])) != 0)
				continue;
			char id[13] = "", sz[32], when[64];
			if (digest && digest->type == OB_JSON_STRING)
				snprintf(id, sizeof id, "%.12s", digest->str);
			int64_t bytes = 0;
			if (size)
				(void)ob_json_int(size, &bytes);
			if (remote && remote->type == OB_JSON_STRING && remote->len)
				strcpy(sz, "-");
			else
				human_bytes(bytes, sz);
			time_t sec = 0;
			long nsec = 0;
			if (!(mod && mod->type == OB_JSON_STRING && parse_rfc3339(mod->str, &sec, &nsec)) ||
			    strncmp(mod->str, "0001-01-01T00:00:00", 19) == 0)
				sec = 0, nsec = 0;
			human_time(sec, nsec, "Never", when);
			const char *row[4] = {nm, id, sz, when};
			table_add(&t, row);
		}
	table_render(&t, stdout);
	table_free(&t);
	ob_json_free(d);
	return 0;
}
