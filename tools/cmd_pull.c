/* tools/cmd_pull.c — `orun pull NAME [--insecure]` and `orun push NAME [--insecure]`, as the ollama CLI
 * does them: POST /api/pull or /api/push to the server OLLAMA_HOST names and draw its progress, a bar per
 * layer (percent, bytes, rate, ETA) and a line per status. The transfer itself runs in the server
 * (registry/); these two commands share this file since they differ only in their words.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/json.h"
#include "base/jsonutil.h"
#include "modelfile/name.h"
#include "tools/clifmt.h"
#include "tools/client.h"
#include "tools/commands.h"

#define BAR_WIDTH 20

/* What is on screen: the current line (a status, or the bar of the layer now moving). */
struct view {
	bool tty;
	bool open;             /* a line is on screen without its newline */
	char key[1024];        /* its status */
	char line[2048];
	struct timespec t0;    /* when this layer's bar began */
	int64_t c0;            /* and its completed bytes then */
};

static double since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static void view_end(struct view *v)
{
	if (v->tty && v->open)
		fputc('\n', stderr);
	else if (!v->tty && v->line[0])
		fprintf(stderr, "%s\n", v->line);
	v->open = false;
	v->line[0] = v->key[0] = 0;
}

static void view_show(struct view *v, const char *key, const char *text)
{
	if (strcmp(key, v->key) != 0) {
		view_end(v);
		snprintf(v->key, sizeof v->key, "%s", key);
		clock_gettime(CLOCK_MONOTONIC, &v->t0);
		v->c0 = -1;
	}
	snprintf(v->line, sizeof v->line, "%s", text);
	if (v->tty) {
		fprintf(stderr, "\r\033[K%s", text);
		fflush(stderr);
		v->open = true;
	}
}

/* "pulling 8eeb52dfb3bb:  45% ▕█████████           ▏ 900 MB/2.0 GB  50 MB/s  22s" */
static void bar(struct view *v, const char *status, int64_t done, int64_t total)
{
	if (strcmp(status, v->key) != 0)
		view_show(v, status, status);
	if (v->c0 < 0)
		v->c0 = done;
	int pct = total > 0 ? (int)(100.0 * (double)done / (double)total) : 100;
	pct = pct > 100 ? 100 : pct < 0 ? 0 : pct;
	char cells[BAR_WIDTH * 3 + 1] = "";
	for (int i = 0; i < BAR_WIDTH; i++)
		strcat(cells, i < pct * BAR_WIDTH / 100 ? "\u2588" : " ");
	char a[32], b[32], rate[48] = "", eta[32] = "";
	double dt = since(&v->t0);
	if (done < total && dt > 0.5 && done > v->c0) {
		double bps = (double)(done - v->c0) / dt;
		char r[32];
		snprintf(rate, sizeof rate, "  %s/s", human_bytes((int64_t)bps, r));
		double left = (double)(total - done) / bps;
		if (left < 60)
			snprintf(eta, sizeof eta, "  %ds", (int)left + 1);
		else
			snprintf(eta, sizeof eta, "  %dm%02ds", (int)left / 60, (int)left % 60);
	}
	char text[2048];
	if (done >= total)
		snprintf(text, sizeof text, "%s: %3d%% \u2595%s\u258f %s", status, pct, cells, human_bytes(total, b));
	else
		snprintf(text, sizeof text, "%s: %3d%% \u2595%s\u258f %s/%s%s%s", status, pct, cells, human_bytes(done, a),
			 human_bytes(total, b), rate, eta);
	snprintf(v->line, sizeof v->line, "%s", text);
	if (v->tty) {
		fprintf(stderr, "\r\033[K%s", text);
		fflush(stderr);
		v->open = true;
	}
}

static int on_line(void *ctx, const char *line, size_t n)
{
	struct view *v = ctx;
	struct ob_json_error je;
	struct ob_json_doc *d = ob_json_parse(line, n, &je);
	if (!d)
		return 0;
	const struct ob_json *r = ob_json_root(d);
	const struct ob_json *st = ob_json_get(r, "status"), *dg = ob_json_get(r, "digest"), *tot = ob_json_get(r, "total"),
			     *com = ob_json_get(r, "completed");
	char status[1024] = "";
	if (st && st->type == OB_JSON_STRING)
		snprintf(status, sizeof status, "%.*s", (int)st->len, st->str);
	int64_t total = 0, done = 0;
	if (tot)
		(void)ob_json_int(tot, &total);
	if (com)
		(void)ob_json_int(com, &done);
	if (dg && dg->type == OB_JSON_STRING && dg->len && status[0])
		bar(v, status, done, total);
	else if (status[0] && strcmp(status, v->key) != 0)
		view_show(v, status, status);
	ob_json_free(d);
	return 0;
}

static void usage_pull(FILE *f)
{
	fprintf(f, "Pull a model from a registry\n\nUsage:\n  orun pull MODEL [flags]\n\nFlags:\n"
		   "  -h, --help       help for pull\n      --insecure   Use an insecure registry\n\n"
		   "Environment Variables:\n"
		   "      OLLAMA_HOST                IP Address for the ollama server (default 127.0.0.1:11434)\n");
}

static void usage_push(FILE *f)
{
	fprintf(f, "Push a model to a registry\n\nUsage:\n  orun push MODEL [flags]\n\nFlags:\n"
		   "  -h, --help       help for push\n      --insecure   Use an insecure registry\n\n"
		   "Environment Variables:\n"
		   "      OLLAMA_HOST                IP Address for the ollama server (default 127.0.0.1:11434)\n");
}

static int registry_command(int argc, char **argv, bool push)
{
	struct cli_flag flags[] = {{"insecure", 0, false, NULL}};
	const char *pos[1];
	size_t n_pos;
	int rc;
	if (!cli_parse(argc, argv, flags, 1, pos, 1, &n_pos, push ? usage_push : usage_pull, &rc))
		return rc;
	if ((rc = cli_exact_args(n_pos, 1)) != 0)
		return rc;
	struct client c;
	if (client_connect(&c) != 0)
		return cli_error("%s", c.err);
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	ob_jw_key(&w, "model");
	ob_jw_string(&w, pos[0]);
	ob_jw_key(&w, "insecure");
	ob_jw_bool(&w, flags[0].value != NULL);
	ob_jw_obj_end(&w);
	size_t blen;
	char *body = ob_jw_take_line(&w, &blen);
	if (!body) {
		client_cleanup(&c);
		return cli_error("out of memory");
	}
	struct view v = {.tty = isatty(STDERR_FILENO) != 0};
	rc = client_stream(&c, "POST", push ? "/api/push" : "/api/pull", body, blen, on_line, &v);
	free(body);
	view_end(&v);
	rc = rc != 0 ? cli_error("%s", c.err) : 0;
	client_cleanup(&c);
	return rc;
}

int cmd_pull(int argc, char **argv)
{
	return registry_command(argc, argv, false);
}

int cmd_push(int argc, char **argv)
{
	return registry_command(argc, argv, true);
}
