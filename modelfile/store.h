/* modelfile/store.h — Ollama's model store on disk: blobs, manifests, listing, copy, delete and prune.
 *
 * Layout (OLLAMA_MODELS, default $HOME/.ollama/models):
 *     blobs/sha256-<64 hex>                         content-addressed layers (the colon of a digest -> dash)
 *     manifests/<host>/<namespace>/<model>/<tag>    a Docker v2 manifest, JSON + "\n", as Go's json.Encoder
 * Blobs are written to a temporary file in blobs/, hashed while written (OpenSSL SHA-256), fsynced and
 * renamed into place; a manifest is written to a temporary file beside it and renamed, so neither is ever
 * seen half-written. Several processes may share a store, as with Ollama. The steps that must not
 * interleave, a create's commit (its blobs checked, its manifest written) and every removal of blobs
 * (delete, the layers a create replaced, prune), hold the store lock: flock on <models>/.orun.lock, which
 * excludes other threads and other orun processes. Ollama takes no lock of its own (it has the same race
 * between its own create and delete), so a real Ollama on the same store is not excluded.
 */
#ifndef ORUN_MODELFILE_STORE_H
#define ORUN_MODELFILE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "modelfile/error.h"
#include "modelfile/name.h"

#define MF_DIGEST_LEN 71              /* "sha256:" + 64 hex */
#define MF_MAX_MANIFEST_SIZE (4u << 20) /* bytes: larger manifests are refused */
#define MF_MAX_LAYERS 100000          /* layers in one manifest */
#define MF_PRUNE_GRACE_SECONDS 3600   /* blobs younger than this are never pruned (another writer's) */

#define MF_MEDIA_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define MF_MEDIA_CONFIG "application/vnd.docker.container.image.v1+json"
#define MF_MEDIA_MODEL "application/vnd.ollama.image.model"
#define MF_MEDIA_PROJECTOR "application/vnd.ollama.image.projector"
#define MF_MEDIA_ADAPTER "application/vnd.ollama.image.adapter"
#define MF_MEDIA_DRAFT "application/vnd.ollama.image.draft"
#define MF_MEDIA_TEMPLATE "application/vnd.ollama.image.template"
#define MF_MEDIA_PROMPT "application/vnd.ollama.image.prompt" /* legacy alias of template, still read */
#define MF_MEDIA_SYSTEM "application/vnd.ollama.image.system"
#define MF_MEDIA_PARAMS "application/vnd.ollama.image.params"
#define MF_MEDIA_MESSAGES "application/vnd.ollama.image.messages"
#define MF_MEDIA_LICENSE "application/vnd.ollama.image.license"
#define MF_MEDIA_TENSOR "application/vnd.ollama.image.tensor"
#define MF_MEDIA_JSON "application/vnd.ollama.image.json"
#define MF_MEDIA_EMBED "application/vnd.ollama.image.embed" /* obsolete, ignored */

/* ---------------------------------------------------------------------------------------------------- */
/* Environment (envconfig semantics: values trimmed of spaces and quotes) */

/* The models directory: $OLLAMA_MODELS, else $HOME/.ollama/models. New string (free it) or NULL. */
char *mf_models_dir_default(void) MF_WUR;

/* envconfig.Bool: unset/empty → false; a ParseBool value → it; anything else → true. */
bool mf_env_bool(const char *name);

/* ---------------------------------------------------------------------------------------------------- */
/* Long jobs */

/* Asked between the chunks of a long job (hashing, copying, waiting for the store lock): true stops it
 * with MF_ERR_CANCELLED ("request canceled"). The server's create asks whether its client left or the
 * server is stopping. A NULL struct mf_cancel never cancels. */
struct mf_cancel {
	bool (*cancelled)(void *ctx);
	void *ctx;
};

/* True when c asks to stop. */
bool mf_cancelled(const struct mf_cancel *c);

/* ---------------------------------------------------------------------------------------------------- */
/* Digests */

/* True for "sha256:<64 hex>" or "sha256-<64 hex>" (either case of hex), Ollama's accepted forms. */
bool mf_digest_valid(const char *digest);

/* SHA-256 of a buffer as "sha256:<hex>" into out (MF_DIGEST_LEN + 1 bytes). */
void mf_sha256_buf(const void *data, size_t n, char out[MF_DIGEST_LEN + 1]);

/* SHA-256 of a regular file (streamed) as "sha256:<hex>", and its size. MF_OK, MF_ERR_NOT_FOUND, MF_ERR_IO
 * (also "<path> is not a regular file": a device such as /dev/zero or a FIFO would never end or block),
 * MF_ERR_NOMEM. */
int mf_sha256_file(const char *path, char out[MF_DIGEST_LEN + 1], uint64_t *size, struct mf_error *err) MF_WUR;

/* ---------------------------------------------------------------------------------------------------- */
/* The store */

struct mf_store;

#define MF_STORE_LOCK_NAME ".orun.lock" /* in the models folder; Ollama never looks outside blobs/ and manifests/ */
#define MF_STORE_LOCK_WAIT_MS 120000    /* a lock held longer than this by someone else is an error */

/* Takes the store lock (blocking, asking cancel while it waits; cancel may be NULL). *lock gets a handle
 * for mf_store_unlock, -1 when the store cannot hold a lock file (read-only, or a file system without
 * locks): then the caller goes on unlocked and its writes fail on their own. Errors: MF_ERR_CANCELLED,
 * MF_ERR_IO ("the model store is busy: ..." after MF_STORE_LOCK_WAIT_MS). Not re-entrant: a thread that
 * holds the lock must not take it again. */
int mf_store_lock(struct mf_store *s, const struct mf_cancel *cancel, int *lock, struct mf_error *err) MF_WUR;
/* Releases it; -1 is fine. */
void mf_store_unlock(int lock);

/* Opens (and creates the folders of) the store at dir (NULL = mf_models_dir_default()). */
int mf_store_open(const char *dir, struct mf_store **out, struct mf_error *err) MF_WUR;
void mf_store_close(struct mf_store *s);
const char *mf_store_root(const struct mf_store *s);

/* Path of a blob (valid digest, either form) into buf (cap bytes). MF_OK, or MF_ERR_PARSE "invalid digest
 * format" (HTTP 400), MF_ERR_LIMIT when the path does not fit. The blob need not exist. */
int mf_store_blob_path(const struct mf_store *s, const char *digest, char *buf, size_t cap, struct mf_error *err) MF_WUR;

/* True when the blob exists (as a regular file). */
bool mf_store_blob_exists(const struct mf_store *s, const char *digest);

/* Incremental blob writer: a temporary file in blobs/ hashed as it is written. */
struct mf_blob_writer;
int mf_blob_writer_open(struct mf_store *s, struct mf_blob_writer **out, struct mf_error *err) MF_WUR;
int mf_blob_writer_write(struct mf_blob_writer *w, const void *data, size_t n, struct mf_error *err) MF_WUR;
/* Bytes written so far. */
uint64_t mf_blob_writer_size(const struct mf_blob_writer *w);
/* Finishes: fsync, digest, and (when expect is not NULL) verification against expect in either form —
 * a mismatch fails with `digest mismatch, expected "<expect>", got "<actual>"` (MF_ERR_DIGEST, HTTP 400)
 * and leaves nothing behind. Otherwise the file is renamed to its blob path (an existing blob with the same
 * digest is kept and the temporary file dropped; *created tells which), chmod 0644 and its mtime touched.
 * The actual digest goes to digest_out. The writer is freed in every case. */
int mf_blob_writer_commit(struct mf_blob_writer *w, const char *expect, char digest_out[MF_DIGEST_LEN + 1],
			  bool *created, struct mf_error *err) MF_WUR;
/* Drops the temporary file and frees the writer; NULL is fine. */
void mf_blob_writer_abort(struct mf_blob_writer *w);

/* Stores a buffer as a blob (NewLayer): digest_out gets its digest, *created whether it was new. */
int mf_store_put_blob(struct mf_store *s, const void *data, size_t n, char digest_out[MF_DIGEST_LEN + 1],
		      bool *created, struct mf_error *err) MF_WUR;

/* Copies a local regular file into the store (hashing it); digest_out, *size, *created as above. */
int mf_store_put_file(struct mf_store *s, const char *path, char digest_out[MF_DIGEST_LEN + 1], uint64_t *size,
		      bool *created, struct mf_error *err) MF_WUR;

/* Moves a file the caller wrote inside the store's folder (e.g. a converted or quantized GGUF) into
 * blobs/ under its digest: hashed (cancel asked between chunks; may be NULL), fsynced, renamed (or dropped
 * when that blob already exists). The file is gone afterwards in every case but an error before hashing. */
int mf_store_adopt_file(struct mf_store *s, const char *path, char digest_out[MF_DIGEST_LEN + 1], uint64_t *size,
			bool *created, const struct mf_cancel *cancel, struct mf_error *err) MF_WUR;

/* Temporary files. Everything a create or an upload writes before it becomes a blob lives in
 * blobs/orun-tmp-XXXXXX (a file, or a folder for a job's several files), and its writer holds an flock on
 * it while it works: so a later start can tell the leftovers of a killed process (nobody holds them) from
 * the files another orun process is writing right now, whatever their age. Not a digest name: Ollama's
 * prune removes a leftover file after its grace period too (it never enters folders). */
#define MF_TEMP_PREFIX "orun-tmp-"

/* A fresh temporary folder blobs/orun-tmp-XXXXXX for a job's files (a converted or quantized GGUF that
 * mf_store_adopt_file takes over, the links of a safetensors conversion). *lock holds it until
 * mf_store_temp_dir_remove. */
int mf_store_temp_dir(struct mf_store *s, char *path, size_t cap, int *lock, struct mf_error *err) MF_WUR;
/* Removes the folder and all in it (symlinks are removed, not followed), then releases lock. */
void mf_store_temp_dir_remove(const char *path, int lock);

/* At start-up: removes the temporary files and folders of interrupted creates and uploads (and the
 * temporary manifests of interrupted writes) that no process holds; those in use stay. Counts go to the
 * optional outputs (entries removed, bytes freed). Never fails on one entry: it is skipped. */
int mf_store_clean_temp(struct mf_store *s, size_t *n_removed, uint64_t *bytes, struct mf_error *err) MF_WUR;

/* Reads a whole blob into memory (max bytes at most: MF_ERR_LIMIT beyond). NUL-terminated; free() it. */
int mf_store_read_blob(const struct mf_store *s, const char *digest, size_t max, char **data, size_t *len,
		       struct mf_error *err) MF_WUR;

/* Sets the blob's mtime to now (touchLayer). */
void mf_store_touch_blob(const struct mf_store *s, const char *digest);

/* ---------------------------------------------------------------------------------------------------- */
/* Manifests */

struct mf_layer {
	char *media_type;
	char *digest; /* "sha256:<hex>" */
	int64_t size;
	char *from; /* NULL or "" = absent */
	char *name; /* NULL or "" = absent (tensor layers) */
};

struct mf_manifest {
	int64_t schema_version;
	char *media_type;
	struct mf_layer config;
	struct mf_layer *layers;
	size_t n_layers;
	bool layers_null; /* "layers": null in the file */
	/* set when read from the store: */
	struct mf_name name;
	char digest[65];  /* hex sha256 of the manifest file's bytes (what /api/tags calls digest) */
	int64_t mtime_sec, mtime_nsec;
	int64_t file_size;
};

/* Parses manifest JSON (Go decoding rules: field names case-insensitive, unknown fields ignored). */
int mf_manifest_parse(const char *data, size_t n, struct mf_manifest **out, struct mf_error *err) MF_WUR;

/* The exact bytes Ollama writes for a manifest (json.Encoder: compact, HTML-escaped, trailing "\n").
 * n_layers 0 with layers NULL writes "layers":null as Go does for a nil slice. New string or NULL. */
char *mf_manifest_encode(const struct mf_layer *config, const struct mf_layer *layers, size_t n_layers,
			 size_t *len) MF_WUR;

void mf_manifest_free(struct mf_manifest *m);

/* Size as /api/tags reports it: the layers plus the config. */
int64_t mf_manifest_total_size(const struct mf_manifest *m);

/* Reads the manifest of a valid name (exact path, no case folding). MF_ERR_NOT_FOUND when absent. */
int mf_store_read_manifest(const struct mf_store *s, const struct mf_name *n, struct mf_manifest **out,
			   struct mf_error *err) MF_WUR;

/* Writes a manifest atomically (temporary file, fsync, rename). */
int mf_store_write_manifest(struct mf_store *s, const struct mf_name *n, const struct mf_layer *config,
			    const struct mf_layer *layers, size_t n_layers, struct mf_error *err) MF_WUR;

/* All manifests under manifests/<host>/<ns>/<model>/<tag> with valid names; unreadable or corrupt ones are
 * skipped (Manifests(true)). Sorted by modification time, newest first (as /api/tags lists them). */
int mf_store_list(const struct mf_store *s, struct mf_manifest ***out, size_t *n, struct mf_error *err) MF_WUR;
void mf_manifest_list_free(struct mf_manifest **list, size_t n);

/* getExistingName: each part of n replaced by the spelling of an existing manifest that matches it
 * case-insensitively (part by part, as Ollama does). n must be valid. */
int mf_store_resolve_name(const struct mf_store *s, const struct mf_name *n, struct mf_name *out,
			  struct mf_error *err) MF_WUR;

/* Deletes the layers of m that no manifest in the store uses any more (RemoveLayers), under the store lock. */
int mf_store_remove_unused_layers(struct mf_store *s, const struct mf_manifest *m, struct mf_error *err) MF_WUR;

/* Removes a blob unless a manifest references it (Layer.Remove), under the store lock. */
int mf_store_remove_blob_if_unused(struct mf_store *s, const char *digest, struct mf_error *err) MF_WUR;

/* /api/delete: resolves the name case-insensitively, removes the manifest, prunes empty manifest folders,
 * then the layers no other manifest uses, all under the store lock. MF_ERR_NOT_FOUND ("model '<name>' not
 * found", 404). */
int mf_store_delete(struct mf_store *s, const char *name, struct mf_error *err) MF_WUR;

/* /api/copy: copies the manifest bytes of src to dst (names resolved case-insensitively; the read and the
 * write under the store lock, so a delete of src cannot take the blobs from under dst). Errors with
 * Ollama's texts: `source "<x>" is invalid`, `destination "<x>" is invalid` (400),
 * `model "<src>" not found` (404). */
int mf_store_copy(struct mf_store *s, const char *src, const char *dst, struct mf_error *err) MF_WUR;

/* PruneLayers + PruneDirectory: removes blobs older than MF_PRUNE_GRACE_SECONDS that no manifest uses (and
 * files in blobs/ whose names are not digests), then empty folders under manifests/, under the store lock.
 * Counts go to the optional outputs. */
int mf_store_prune(struct mf_store *s, size_t *n_blobs, size_t *n_removed, struct mf_error *err) MF_WUR;

#endif
