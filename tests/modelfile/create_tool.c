/* tests/modelfile/create_tool.c — a driver for the Python integration tests of the modelfile library:
 *   create_tool put STORE FILE          copy FILE into the store, print its digest
 *   create_tool create STORE < BODY     run POST /api/create's library on a request body; each progress
 *                                       object is printed as a JSON line; on failure {"error","http"}, exit 1
 *   create_tool show STORE NAME WHAT    print the model's modelfile | parameters | config | manifest
 * Not a test by itself (tests/integration/test_modelfile_create.py uses it).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modelfile/create.h"
#include "base/json.h"
#include "modelfile/model.h"
#include "modelfile/store.h"

static int print_progress(void *ctx, const struct mf_progress *p)
{
	(void)ctx;
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	ob_jw_key(&w, "status");
	ob_jw_string(&w, p->status);
	if (p->digest) {
		ob_jw_key(&w, "digest");
		ob_jw_string(&w, p->digest);
		ob_jw_key(&w, "total");
		ob_jw_int(&w, p->total);
		ob_jw_key(&w, "completed");
		ob_jw_int(&w, p->completed);
	}
	ob_jw_obj_end(&w);
	printf("%s\n", ob_jw_str(&w));
	ob_jw_free(&w);
	return 0;
}

static int fail(const struct mf_error *err)
{
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	ob_jw_key(&w, "error");
	ob_jw_string(&w, err->msg);
	ob_jw_key(&w, "http");
	ob_jw_int(&w, err->http_status);
	ob_jw_obj_end(&w);
	printf("%s\n", ob_jw_str(&w));
	ob_jw_free(&w);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: create_tool put|create|show STORE ...\n");
		return 2;
	}
	struct mf_store *s;
	struct mf_error err;
	if (mf_store_open(argv[2], &s, &err) != MF_OK)
		return fail(&err);
	int rc = 0;
	if (strcmp(argv[1], "put") == 0 && argc == 4) {
		char d[MF_DIGEST_LEN + 1];
		if (mf_store_put_file(s, argv[3], d, NULL, NULL, &err) != MF_OK)
			rc = fail(&err);
		else
			printf("%s\n", d);
	} else if (strcmp(argv[1], "create") == 0) {
		size_t cap = 1 << 16, n = 0, k;
		char *body = malloc(cap);
		while (body && (k = fread(body + n, 1, cap - n, stdin)) > 0) {
			n += k;
			if (n == cap)
				body = realloc(body, cap *= 2);
		}
		struct mf_create_request *r;
		struct mf_warnings w = {0};
		if (!body || mf_create_request_parse(body, n, &r, &w, &err) != MF_OK) {
			rc = fail(&err);
		} else {
			if (mf_create_run(s, r, print_progress, NULL, &w, &err) != MF_OK)
				rc = fail(&err);
			mf_create_request_free(r);
		}
		for (size_t i = 0; i < w.n; i++)
			fprintf(stderr, "warning: %s\n", w.items[i]);
		mf_warnings_free(&w);
		free(body);
	} else if (strcmp(argv[1], "show") == 0 && argc == 5) {
		struct mf_model *m;
		if (mf_model_load(s, argv[3], &m, &err) != MF_OK) {
			rc = fail(&err);
		} else {
			char *out = NULL;
			if (strcmp(argv[4], "modelfile") == 0)
				out = mf_model_show_modelfile(m);
			else if (strcmp(argv[4], "parameters") == 0)
				out = mf_model_show_parameters(m);
			else if (strcmp(argv[4], "config") == 0)
				out = mf_config_encode(&m->config, NULL);
			else if (strcmp(argv[4], "manifest") == 0)
				out = mf_manifest_encode(&m->manifest->config, m->manifest->layers, m->manifest->n_layers, NULL);
			else if (strcmp(argv[4], "model_path") == 0)
				out = strdup(m->model_path ? m->model_path : "");
			if (out)
				fputs(out, stdout);
			free(out);
			mf_model_free(m);
		}
	} else {
		fprintf(stderr, "usage: create_tool put|create|show STORE ...\n");
		rc = 2;
	}
	mf_store_close(s);
	return rc;
}
