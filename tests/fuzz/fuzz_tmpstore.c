/* tests/fuzz/fuzz_tmpstore.c — a throw-away model store for the fuzz targets (fuzz_tmpstore.h): blobs and
 * manifests through modelfile/store.h, the folder removed at exit. Not a fixture for the store's own tests.
 */
#include "config.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "modelfile/name.h"
#include "tests/fuzz/fuzz_tmpstore.h"

static char root[4096];
static struct mf_store *opened;

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void remove_root(void)
{
	mf_store_close(opened);
	opened = NULL;
	if (root[0])
		nftw(root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

struct mf_store *fz_tmpstore_open(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(root, sizeof root, "%s/orun-fuzz-store-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	struct mf_error err;
	if (!mkdtemp(root) || mf_store_open(root, &opened, &err) != MF_OK) {
		fprintf(stderr, "fuzz: cannot make a store under %s\n", root);
		abort();
	}
	atexit(remove_root);
	return opened;
}

int fz_tmpstore_put_model(struct mf_store *s, const char *name, const void *config, size_t config_len,
			  const struct fz_layer *layers, size_t n_layers, struct mf_error *err)
{
	char digests[16][MF_DIGEST_LEN + 1], cdigest[MF_DIGEST_LEN + 1];
	struct mf_layer ls[16];
	bool created;
	if (n_layers > 16)
		return -1;
	if (mf_store_put_blob(s, config, config_len, cdigest, &created, err) != MF_OK)
		return -1;
	for (size_t i = 0; i < n_layers; i++) {
		if (mf_store_put_blob(s, layers[i].data, layers[i].len, digests[i], &created, err) != MF_OK)
			return -1;
		ls[i] = (struct mf_layer){.media_type = (char *)layers[i].media_type, .digest = digests[i],
					  .size = (int64_t)layers[i].len};
	}
	struct mf_layer cl = {.media_type = MF_MEDIA_CONFIG, .digest = cdigest, .size = (int64_t)config_len};
	struct mf_name n;
	mf_name_parse(name, &n);
	return mf_store_write_manifest(s, &n, &cl, ls, n_layers, err) == MF_OK ? 0 : -1;
}

void *fz_gguf_header(const char *arch, int pooling, size_t *len)
{
	struct gguf_writer *w = gguf_writer_new();
	char key[128];
	int rc = w ? 0 : -1;
	if (!rc)
		rc = gguf_w_str(w, "general.architecture", arch);
	snprintf(key, sizeof key, "%s.context_length", arch);
	if (!rc)
		rc = gguf_w_u32(w, key, 4096);
	snprintf(key, sizeof key, "%s.embedding_length", arch);
	if (!rc)
		rc = gguf_w_u32(w, key, 64);
	if (!rc)
		rc = gguf_w_u32(w, "general.file_type", 15);
	snprintf(key, sizeof key, "%s.pooling_type", arch);
	if (!rc && pooling)
		rc = gguf_w_u32(w, key, 1);
	uint8_t *out = NULL;
	size_t n = 0;
	struct gguf_error ge;
	if (!rc)
		rc = gguf_writer_write_mem(w, &out, &n, &ge);
	gguf_writer_free(w);
	*len = n;
	return rc ? NULL : out;
}
