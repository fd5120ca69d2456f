/* tools/cmd_ps.c — `orun ps [PREFIX]`: GET /api/ps and the NAME / ID / SIZE / PROCESSOR / CONTEXT / UNTIL table
 * of `ollama ps` (PROCESSOR from size_vram vs size; UNTIL as a human time, "Stopping..." once past). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/json.h"
#include "tools/clifmt.h"
#include "tools/client.h"
#include "tools/commands.h"

static void usage(FILE *f)
{
	fprintf(f, "List running models\n\n"
		   "Usage:\n  orun ps [flags]\n\n"
		   "Flags:\n  -h, --help   help for ps\n\n"
		   "Environment Variables:\n"
		   "      OLLAMA_HOST                IP Address for the ollama server (default 127.0.0.1:11434)\n");
}

static int64_t int_of(const struct ob_json *o, const char *k)
{
	const struct ob_json *v = ob_json_get(o, k);
	int64_t x = 0;
	if (v && v->type == OB_JSON_NUMBER && !ob_json_int(v, &x))
		x = (int64_t)v->number;
	return x;
}

int cmd_ps(int argc, char **argv)
{
	const char *pos[1];
	size_t n_pos;
	int rc;
	if (!cli_parse(argc, argv, NULL, 0, pos, 1, &n_pos, usage, &rc))
		return rc;
	struct ob_json_doc *d;
	char err[CLIENT_ERR_MAX];
	if (client_get_json("/api/ps", &d, err) != 0)
		return cli_error("%s", err);
	static const char *const header[] = {"NAME", "ID", "SIZE", "PROCESSOR", "CONTEXT", "UNTIL"};
	struct table t;
	table_init(&t, 6, header);
	const struct ob_json *models = ob_json_get(ob_json_root(d), "models");
	if (models && models->type == OB_JSON_ARRAY)
		OB_JSON_FOREACH(m, models)
		{
			const struct ob_json *name = ob_json_get(m, "name"), *digest = ob_json_get(m, "digest"),
					     *exp = ob_json_get(m, "expires_at");
			const char *nm = name && name->type == OB_JSON_STRING ? name->str : "";
			if (n_pos && strncmp(nm, pos[0], strlen(pos[0])) != 0)
				continue;
			int64_t size = int_of(m, "size"), vram = int_of(m, "size_vram"), ctx = int_of(m, "context_length");
			char id[13] = "", sz[32], proc[48], ctxs[24], until[64];
			if (digest && digest->type == OB_JSON_STRING)
				snprintf(id, sizeof id, "%.12s", digest->str);
			human_bytes(size, sz);
			if (vram == 0)
				snprintf(proc, sizeof proc, "100%% CPU");
			else if (vram == size)
				snprintf(proc, sizeof proc, "100%% GPU");
			else if (vram > size || size == 0)
				snprintf(proc, sizeof proc, "Unknown");
			else {
				int cpu = (int)lround((double)(size - vram) / (double)size * 100);
				snprintf(proc, sizeof proc, "%d%%/%d%% CPU/GPU", cpu, 100 - cpu);
			}
			snprintf(ctxs, sizeof ctxs, "%lld", (long long)ctx);
			time_t sec = 0;
			long nsec = 0;
			if (exp && exp->type == OB_JSON_STRING && parse_rfc3339(exp->str, &sec, &nsec) && sec < time(NULL))
				snprintf(until, sizeof until, "Stopping...");
			else
				human_time(sec, nsec, "Never", until);
			const char *row[6] = {nm, id, sz, proc, ctxs, until};
			table_add(&t, row);
		}
	table_render(&t, stdout);
	table_free(&t);
	ob_json_free(d);
	return 0;
}
