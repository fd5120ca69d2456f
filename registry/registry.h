/* registry/registry.h — pull and push of models against an OCI distribution (Docker v2) registry, as
 * Ollama's server/images.go PullModel/PushModel do, into and out of orun's store (modelfile/store.h).
 *
 * Names resolve as Ollama resolves them (modelfile/name.h: default host registry.ollama.ai, namespace
 * library, tag latest); the registry is reached over https, over http only with insecure. Bearer-token
 * challenges are answered; Ollama's own key-signed authorization is not done (registry/README.md).
 * Errors use modelfile's struct mf_error (code, HTTP status for the API, message). Nothing here prints.
 */
#ifndef ORUN_REGISTRY_REGISTRY_H
#define ORUN_REGISTRY_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>

#include "modelfile/error.h"
#include "modelfile/store.h"

#define RG_CHUNK_SIZE (16u << 20)   /* bytes of one ranged request of a blob (small: the hash follows the
                                       * contiguous prefix, so the chunks in flight at the end are hashed after) */
#define RG_PARALLEL 4               /* ranged requests of one blob in flight at once */
#define RG_MAX_RETRIES 6            /* attempts of one request (or one chunk) before the pull fails */
#define RG_BACKOFF_MS 250           /* first wait between attempts; doubled each time */
#define RG_MAX_MANIFEST (4u << 20)  /* bytes of a manifest (as the store's limit) */
#define RG_MAX_BODY (1u << 20)      /* bytes of any other small response read whole (errors, tokens) */

/* One progress report, Ollama's api.ProgressResponse: status, and for a layer its digest, total and
 * completed bytes (0 = absent). Borrowed for the call. */
struct rg_progress {
	const char *status;
	const char *digest;
	int64_t total, completed;
};

struct rg_options {
	bool insecure;                /* http:// instead of https:// (and no TLS verification) */
	const struct mf_cancel *cancel; /* asked between chunks; NULL never cancels */
	/* called for every report; a non-zero return stops with MF_ERR_CANCELLED. May be NULL. */
	int (*progress)(void *ctx, const struct rg_progress *p);
	void *ctx;
	bool noprune;                 /* keep the layers a re-pull replaced (OLLAMA_NOPRUNE) */
};

/* Pulls name into the store: the manifest, every layer not already present (in RG_PARALLEL ranged chunks,
 * resumed from a partial file left by an interrupted pull, SHA-256 verified, then renamed into blobs/),
 * and last the manifest, written atomically under the store lock once every layer it names is present.
 * Errors: MF_ERR_PARSE (invalid name, 400), MF_ERR_NOT_FOUND (the registry has no such model, 404 as
 * Ollama's "pull model manifest: file does not exist"), MF_ERR_DIGEST (a layer does not match its digest:
 * the partial file is removed), MF_ERR_IO (network, HTTP or disk; the message says which),
 * MF_ERR_CANCELLED. Thread-safe for different stores or names; two pulls of one blob take turns. */
int rg_pull(struct mf_store *s, const char *name, const struct rg_options *o, struct mf_error *err) MF_WUR;

/* Pushes name from the store: each layer the registry lacks (HEAD) is uploaded by POST, PATCH and PUT,
 * then the manifest bytes are PUT as stored. Errors as rg_pull (MF_ERR_NOT_FOUND: no such local model). */
int rg_push(struct mf_store *s, const char *name, const struct rg_options *o, struct mf_error *err) MF_WUR;

/* Initialises libcurl once for the process (curl_global_init is not thread-safe before 7.84); call from
 * main before threads start. Idempotent. */
void rg_global_init(void);

#endif
