/* tests/fuzz/fuzz_tmpstore.h — a model store in a fresh temporary folder for the fuzz targets that read stored
 * models (fuzz_api, fuzz_manifest), written with the store's public functions, removed at exit.
 */
#ifndef ORUN_TESTS_FUZZ_TMPSTORE_H
#define ORUN_TESTS_FUZZ_TMPSTORE_H

#include <stddef.h>

#include "modelfile/store.h"

/* One layer of a model: its media type (MF_MEDIA_*) and bytes. */
struct fz_layer {
	const char *media_type;
	const void *data;
	size_t len;
};

/* Opens a store in a new folder under $TMPDIR (or /tmp), removed with everything in it at exit. Aborts when
 * that fails: the harness cannot run without it. */
struct mf_store *fz_tmpstore_open(void);

/* Stores the config blob and the layers and writes the manifest of `name`. Returns 0, or -1 (err says why). */
int fz_tmpstore_put_model(struct mf_store *s, const char *name, const void *config, size_t config_len,
			  const struct fz_layer *layers, size_t n_layers, struct mf_error *err);

/* A GGUF header with general.architecture = arch, <arch>.context_length 4096, <arch>.embedding_length 64,
 * general.file_type 15 and, when pooling, <arch>.pooling_type 1 (an embedding model); no tensors. malloc'd. */
void *fz_gguf_header(const char *arch, int pooling, size_t *len);

#endif
