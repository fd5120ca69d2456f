/* tools/cmd_create.c — `orun create MODEL [-f Modelfile] [-q TYPE]`, as `ollama create` does it: parse the
 * Modelfile, hash the local files, upload the blobs the server lacks (HEAD, then POST /api/blobs/sha256:…),
 * then POST /api/create and show its progress. Talks to the server chosen by OLLAMA_HOST.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/json.h"
#include "modelfile/name.h"
#include "modelfile/parser.h"
#include "modelfile/request.h"
#include "tools/clifmt.h"
#include "tools/client.h"
#include "tools/commands.h"

/* ---------------------------------------------------------------------------------------------------- */
/* Progress: one line per status on a terminal (redrawn in place while it changes), plain lines otherwise */

struct progress {
	bool tty;
	char line[2048]; /* the current line */
	bool open;       /* a line is on screen without its newline */
	char last_status[2048];
};

static void progress_init(struct progress *p)
{
	memset(p, 0, sizeof *p);
	p->tty = isatty(STDERR_FILENO);
}

static void progress_show(struct progress *p, const char *text)
{
	if (p->tty) {
		fprintf(stderr, "\r\033[K%s", text);
		p->open = true;
		fflush(stderr);
	}
	snprintf(p->line, sizeof p->line, "%s", text);
}

/* Ends the current line (keeps it on screen). */
static void progress_end(struct progress *p)
{
	if (p->tty && p->open)
		fputc('\n', stderr);
	else if (!p->tty && p->line[0])
		fprintf(stderr, "%s\n", p->line);
	p->open = false;
	p->line[0] = 0;
}

static void progress_status(struct progress *p, const char *status)
{
	if (strcmp(status, p->last_status) == 0)
		return;
	progress_end(p);
	snprintf(p->last_status, sizeof p->last_status, "%s", status);
	progress_show(p, status);
}

static void bar_text(char *out, size_t cap, const char *label, int64_t done, int64_t total)
{
	int pct = total > 0 ? (int)(100.0 * (double)done / (double)total) : 0;
	if (pct > 100)
		pct = 100;
	char bar[64] = "";
	int filled = pct / 5;
	for (int i = 0; i < 20; i++)
		strcat(bar, i < filled ? "#" : " ");
	char a[32], b[32];
	snprintf(out, cap, "%s %3d%% [%s] %s/%s", label, pct, bar, human_bytes(done, a), human_bytes(total, b));
}

/* ---------------------------------------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f, "Create a model\n\n"
		   "Usage:\n  orun create MODEL [flags]\n\n"
		   "Flags:\n"
		   "  -f, --file string       Name of the Modelfile (default \"Modelfile\")\n"
		   "  -h, --help              help for create\n"
		   "  -q, --quantize string   Quantize model to this level (e.g. q4_K_M)\n\n"
		   "Environment Variables:\n"
		   "      OLLAMA_HOST                IP Address for the ollama server (default 127.0.0.1:11434)\n");
}

struct upload_ctx {
	struct progress *p;
	const char *digest;
	time_t last;
};

static void upload_progress(void *ctx, uint64_t sent, uint64_t total)
{
	struct upload_ctx *u = ctx;
	time_t now = time(NULL);
	if (now == u->last && sent < total)
		return;
	u->last = now;
	char text[256];
	snprintf(text, sizeof text, "copying file %s %d%%", u->digest, total ? (int)(100 * sent / total) : 100);
	progress_show(u->p, text);
}

static int upload_files(struct client *c, const struct mf_req_files *f, struct progress *p)
{
	for (size_t i = 0; i < f->n; i++) {
		/* the same blob twice (two names for one file) is uploaded once */
		bool seen = false;
		for (size_t k = 0; k < i; k++)
			if (strcmp(f->v[k].digest, f->v[i].digest) == 0)
				seen = true;
		if (seen)
			continue;
		char text[256];
		snprintf(text, sizeof text, "copying file %s 0%%", f->v[i].digest);
		progress_end(p);
		progress_show(p, text);
		bool exists = false;
		if (client_blob_exists(c, f->v[i].digest, &exists) != 0)
			return -1;
		if (!exists) {
			char real[PATH_MAX];
			struct upload_ctx u = {p, f->v[i].digest, 0};
			if (!realpath(f->v[i].path, real) || client_upload_blob(c, f->v[i].digest, real, upload_progress, &u) != 0)
				return -1;
		}
		snprintf(text, sizeof text, "copying file %s 100%%", f->v[i].digest);
		progress_show(p, text);
		snprintf(p->last_status, sizeof p->last_status, "%s", text);
	}
	return 0;
}

static int on_progress(void *ctx, const char *line, size_t n)
{
	struct progress *p = ctx;
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
	if (dg && dg->type == OB_JSON_STRING && dg->len) {
		int64_t total = 0, completed = 0;
		if (tot)
			(void)ob_json_int(tot, &total);
		if (com)
			(void)ob_json_int(com, &completed);
		char label[1500];
		if (!status[0])
			snprintf(label, sizeof label, "pulling %.12s...", dg->len > 7 ? dg->str + 7 : dg->str);
		else
			snprintf(label, sizeof label, "%s", status);
		if (strcmp(label, p->last_status) != 0) {
			progress_end(p);
			snprintf(p->last_status, sizeof p->last_status, "%s", label);
		}
		char text[1900];
		bar_text(text, sizeof text, label, completed, total);
		progress_show(p, text);
	} else if (status[0]) {
		progress_status(p, status);
	}
	ob_json_free(d);
	return 0;
}

int cmd_create(int argc, char **argv)
{
	struct cli_flag flags[] = {{"file", 'f', true, NULL}, {"quantize", 'q', true, NULL}};
	const char *pos[2];
	size_t n_pos;
	int rc;
	if (!cli_parse(argc, argv, flags, 2, pos, 2, &n_pos, usage, &rc))
		return rc;
	if ((rc = cli_exact_args(n_pos, 1)) != 0)
		return rc;
	const char *model = pos[0];

	struct client c;
	if (client_connect(&c) != 0)
		return cli_error("%s", c.err);
	struct mf_name nm;
	mf_name_parse(model, &nm);
	if (!mf_name_is_valid(&nm)) {
		client_cleanup(&c);
		return cli_error("invalid model name: %s", model);
	}

	/* the Modelfile: -f, else ./Modelfile, else "FROM ." */
	const char *file = flags[0].value ? flags[0].value : "Modelfile";
	char abs[PATH_MAX], dir[PATH_MAX];
	char *text = NULL;
	size_t len = 0;
	struct stat st;
	if (stat(file, &st) == 0 && realpath(file, abs)) {
		FILE *f = fopen(abs, "rb");
		if (!f) {
			client_cleanup(&c);
			return cli_error("open %s: %s", abs, strerror(errno));
		}
		size_t cap = (size_t)st.st_size + 1;
		if (cap > MF_MAX_MODELFILE_SIZE + 1)
			cap = MF_MAX_MODELFILE_SIZE + 2;
		text = malloc(cap);
		len = text ? fread(text, 1, cap, f) : 0;
		fclose(f);
		snprintf(dir, sizeof dir, "%s", abs);
		char *slash = strrchr(dir, '/');
		if (slash)
			*(slash == dir ? slash + 1 : slash) = 0;
	} else if (flags[0].value) {
		client_cleanup(&c);
		return cli_error("specified Modelfile wasn't found");
	} else {
		text = strdup("FROM .\n");
		len = strlen(text);
		snprintf(dir, sizeof dir, ".");
	}
	struct mf_modelfile *mf = NULL;
	struct mf_error err;
	if (!text || mf_parse(text, len, &mf, &err) != MF_OK) {
		free(text);
		client_cleanup(&c);
		return cli_error("%s", text ? err.msg : "out of memory");
	}
	free(text);

	struct progress p;
	progress_init(&p);
	progress_status(&p, "gathering model components");
	struct mf_create_spec spec = {0};
	struct mf_warnings w = {0};
	rc = mf_spec_from_modelfile(mf, dir, true, &spec, &w, &err);
	mf_modelfile_free(mf);
	for (size_t i = 0; i < w.n; i++)
		printf("warning: %s\n", w.items[i]);
	fflush(stdout);
	mf_warnings_free(&w);
	if (rc != MF_OK) {
		progress_end(&p);
		mf_spec_free(&spec);
		client_cleanup(&c);
		return cli_error("%s", err.msg);
	}
	if (mf_spec_name_files(&spec) != MF_OK || !(spec.model = strdup(model)) ||
	    (flags[1].value && !(spec.quantize = strdup(flags[1].value)))) {
		mf_spec_free(&spec);
		client_cleanup(&c);
		return cli_error("out of memory");
	}
	if (upload_files(&c, &spec.files, &p) || upload_files(&c, &spec.adapters, &p) ||
	    upload_files(&c, &spec.draft_files, &p)) {
		progress_end(&p);
		rc = cli_error("%s", c.err);
		mf_spec_free(&spec);
		client_cleanup(&c);
		return rc;
	}
	size_t blen;
	char *body = mf_spec_to_json(&spec, &blen, &err);
	mf_spec_free(&spec);
	if (!body) {
		client_cleanup(&c);
		return cli_error("%s", err.msg);
	}
	rc = client_stream(&c, "POST", "/api/create", body, blen, on_progress, &p);
	free(body);
	progress_end(&p);
	if (rc != 0) {
		if (strstr(c.err, "path or Modelfile are required"))
			rc = cli_error("the ollama server must be updated to use `ollama create` with this client");
		else
			rc = cli_error("%s", c.err);
	}
	client_cleanup(&c);
	return rc;
}
