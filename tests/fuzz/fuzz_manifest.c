/* tests/fuzz/fuzz_manifest.c — libFuzzer target for what the store reads back: manifests (mf_manifest_parse,
 * mf_manifest_encode, mf_store_read_manifest, mf_store_list), ConfigV2 blobs (mf_config_parse and encode),
 * a whole stored model (mf_model_load: params, messages, template, system and license layers) with what
 * /api/show makes of it (the Modelfile and parameters texts, rn_srv_model_load's template and capabilities,
 * the details object).
 *
 * Input: fields separated by 0xFF — manifest, config, params, messages, template, system, license. The
 * fields after the manifest are written as blobs; in the manifest "$C" "$P" "$G" "$T" "$S" "$L" stand for
 * their digests and "$M" for a header-only GGUF's. The manifest is written as the file of model "x".
 * Checks: a manifest or config that parses encodes into bytes that parse to the same thing (and encode the
 * same again); a model that loads can be shown. Blobs are written straight into the folder and removed
 * after each input (the store's writer, with its fsync, would be the bottleneck and is not what is fuzzed).
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/json.h"
#include "modelfile/model.h"
#include "modelfile/store.h"
#include "runner/api/stored_model.h"
#include "tests/fuzz/fuzz_tmpstore.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT 16384
#define SEP 0xFF
#define N_BLOBS 6 /* config, params, messages, template, system, license */

static struct mf_store *store;
static char manifest_path[4096];
static char model_digest[MF_DIGEST_LEN + 1];

static void die(const char *what)
{
	fprintf(stderr, "fuzz_manifest: %s\n", what);
	abort();
}

static void write_file(const char *path, const void *d, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f || (n && fwrite(d, 1, n, f) != n) || fclose(f) != 0)
		die("cannot write into the temporary store");
}

/* Writes a blob under its digest; returns true when the file is new (to be removed after the input). */
static bool put_blob(const void *d, size_t n, char digest[MF_DIGEST_LEN + 1])
{
	char path[4096];
	struct mf_error err;
	mf_sha256_buf(d, n, digest);
	if (mf_store_blob_path(store, digest, path, sizeof path, &err) != MF_OK)
		die(err.msg);
	if (access(path, F_OK) == 0)
		return false;
	write_file(path, d, n);
	return true;
}

static void setup(void)
{
	store = fz_tmpstore_open();
	snprintf(manifest_path, sizeof manifest_path, "%s/manifests/registry.ollama.ai/library/x", mf_store_root(store));
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/manifests/registry.ollama.ai", mf_store_root(store));
	if ((mkdir(dir, 0755) && errno != EEXIST) || (strcat(dir, "/library"), mkdir(dir, 0755) && errno != EEXIST) ||
	    (mkdir(manifest_path, 0755) && errno != EEXIST))
		die("cannot make the manifest folder");
	strcat(manifest_path, "/latest");
	size_t gl;
	void *gguf = fz_gguf_header("llama", 0, &gl);
	if (!gguf)
		die("cannot write the GGUF header");
	(void)put_blob(gguf, gl, model_digest);
	free(gguf);
}

/* The manifest with "$X" replaced by the digests. */
static void expand(const char *m, size_t n, char digests[N_BLOBS][MF_DIGEST_LEN + 1], struct ob_buf *out)
{
	static const char keys[] = "CPGTSL";
	for (size_t i = 0; i < n; i++) {
		const char *k = i + 1 < n && m[i] == '$' ? strchr(keys, m[i + 1]) : NULL;
		if (k && *k) {
			ob_buf_puts(out, digests[k - keys]);
			i++;
		} else if (i + 1 < n && m[i] == '$' && m[i + 1] == 'M') {
			ob_buf_puts(out, model_digest);
			i++;
		} else {
			ob_buf_putc(out, m[i]);
		}
	}
}

static bool str_eq(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

/* Parse → encode → parse: the same layers, and the same bytes when encoded again. */
static void manifest_round_trip(const char *m, size_t n)
{
	struct mf_manifest *a = NULL, *b = NULL;
	struct mf_error err;
	if (mf_manifest_parse(m, n, &a, &err) != MF_OK)
		return;
	(void)mf_manifest_total_size(a);
	size_t l1, l2;
	char *e1 = mf_manifest_encode(&a->config, a->layers, a->n_layers, &l1);
	if (!e1)
		die("mf_manifest_encode failed on a parsed manifest");
	if (mf_manifest_parse(e1, l1, &b, &err) != MF_OK) {
		fprintf(stderr, "%s\n%.*s\n", err.msg, (int)l1, e1);
		die("an encoded manifest does not parse");
	}
	if (b->n_layers != a->n_layers || !str_eq(a->config.digest, b->config.digest))
		die("a manifest changed in a round trip");
	for (size_t i = 0; i < a->n_layers; i++)
		if (!str_eq(a->layers[i].digest, b->layers[i].digest) ||
		    !str_eq(a->layers[i].media_type, b->layers[i].media_type) || a->layers[i].size != b->layers[i].size)
			die("a layer changed in a round trip");
	char *e2 = mf_manifest_encode(&b->config, b->layers, b->n_layers, &l2);
	if (!e2 || l1 != l2 || memcmp(e1, e2, l1) != 0)
		die("a manifest encodes differently the second time");
	free(e1);
	free(e2);
	mf_manifest_free(a);
	mf_manifest_free(b);
}

static void config_round_trip(const char *c, size_t n)
{
	struct mf_config a, b;
	struct mf_error err;
	if (mf_config_parse(c, n, &a, &err) != MF_OK) {
		mf_config_free(&a);
		return;
	}
	size_t l1, l2;
	char *e1 = mf_config_encode(&a, &l1);
	if (!e1)
		die("mf_config_encode failed on a parsed config");
	if (mf_config_parse(e1, l1, &b, &err) != MF_OK) {
		fprintf(stderr, "%s\n%.*s\n", err.msg, (int)l1, e1);
		die("an encoded config does not parse");
	}
	char *e2 = mf_config_encode(&b, &l2);
	if (!e2 || l1 != l2 || memcmp(e1, e2, l1) != 0)
		die("a config encodes differently the second time");
	free(e1);
	free(e2);
	mf_config_free(&a);
	mf_config_free(&b);
}

/* Loads model "x" as /api/show and the server do, and makes what they make of it. */
static void load_model(void)
{
	struct mf_model *m = NULL;
	struct mf_error err;
	if (mf_model_load(store, "x", &m, &err) == MF_OK) {
		free(mf_model_show_modelfile(m));
		free(mf_model_show_parameters(m));
		free(mf_model_show_license(m));
	}
	mf_model_free(m);
	int status;
	char msg[512];
	struct rn_srv_model *sm = rn_srv_model_load(store, "x", &status, msg, sizeof msg);
	if (sm) {
		struct ob_jw w;
		ob_jw_init(&w, 0, 0);
		ob_jw_obj(&w);
		ob_jw_key(&w, "details");
		rn_srv_model_write_details(sm, &w, true, true);
		ob_jw_key(&w, "capabilities");
		rn_srv_model_write_caps(sm, &w);
		ob_jw_obj_end(&w);
		size_t n;
		char *s = ob_jw_take(&w, &n);
		ob_jw_free(&w);
		struct ob_json_error je;
		struct ob_json_doc *d = s ? ob_json_parse(s, n, &je) : NULL;
		if (s && !d)
			die("a stored model's details are not JSON");
		ob_json_free(d);
		free(s);
		rn_srv_model_free(sm);
	} else if (status != 400 && status != 404 && status != 500) {
		die("rn_srv_model_load failed with an unexpected status");
	}
	struct mf_manifest **list = NULL;
	size_t nl = 0;
	if (mf_store_list(store, &list, &nl, &err) == MF_OK)
		mf_manifest_list_free(list, nl);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	if (!ready) {
		setup();
		ready = true;
	}
	if (size > MAX_INPUT)
		return 0;
	/* the fields */
	const char *f[1 + N_BLOBS];
	size_t fl[1 + N_BLOBS], pos = 0;
	for (int i = 0; i < 1 + N_BLOBS; i++) {
		size_t e = pos;
		while (e < size && data[e] != SEP)
			e++;
		f[i] = (const char *)data + pos;
		fl[i] = e - pos;
		pos = e < size ? e + 1 : e;
	}
	manifest_round_trip(f[0], fl[0]);
	config_round_trip(f[1], fl[1]);

	char digests[N_BLOBS][MF_DIGEST_LEN + 1];
	bool created[N_BLOBS];
	for (int i = 0; i < N_BLOBS; i++)
		created[i] = put_blob(f[1 + i], fl[1 + i], digests[i]);
	struct ob_buf man;
	ob_buf_init(&man, 0);
	expand(f[0], fl[0], digests, &man);
	if (man.failed)
		die("out of memory");
	write_file(manifest_path, man.p ? man.p : "", man.len);
	ob_buf_free(&man);
	load_model();

	unlink(manifest_path);
	for (int i = 0; i < N_BLOBS; i++) {
		char path[4096];
		struct mf_error err;
		if (created[i] && mf_store_blob_path(store, digests[i], path, sizeof path, &err) == MF_OK)
			unlink(path);
	}
	return 0;
}
