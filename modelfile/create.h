/* modelfile/create.h — POST /api/create as a library: decode the request (the JSON form and the legacy
 * {"name", "modelfile"} form), then build the model in the store exactly as Ollama's server does
 * (server/create.go): reuse the layers of a FROM model, or take uploaded GGUF files (validated, template
 * detected from tokenizer.chat_template), convert a safetensors folder, quantize, apply template, system,
 * license, parameters (merged) and messages, write the config blob and the manifest, prune the old layers.
 * Progress goes to a callback with Ollama's status texts; the caller turns it into NDJSON.
 */
#ifndef ORUN_MODELFILE_CREATE_H
#define ORUN_MODELFILE_CREATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "modelfile/error.h"
#include "base/json.h"
#include "modelfile/store.h"

#define MF_MAX_CREATE_BODY (64u << 20) /* bytes of a create request (a legacy Modelfile can be large) */
#define MF_MAX_CREATE_FILES 4096       /* entries of "files", "adapters", "draft_files" */

/* One progress object ({"status", "digest", "total", "completed"}); digest NULL and total/completed 0 when
 * absent. Ollama's statuses: "parsing GGUF", "using existing layer sha256:…", "creating new layer sha256:…",
 * "using autodetected template <name>", "converting model", "quantizing F16 model to Q4_K_M" (with digest
 * "0000000000000000000", total and completed), "verifying conversion", "writing manifest", "success". */
struct mf_progress {
	const char *status;
	const char *digest;
	int64_t total, completed;
};

/* Receives each progress object; returns 0 to go on, non-zero to cancel (the create then stops with
 * MF_ERR_CANCELLED and writes no manifest). */
typedef int (*mf_progress_fn)(void *ctx, const struct mf_progress *p);

struct mf_create_request;

/* Decodes a request body with Go's rules (case-insensitive field names, unknown fields ignored, last
 * duplicate wins). Errors answered before any streaming, HTTP 400, Ollama's texts: "missing request body",
 * the JSON decoder's message, "file path must be relative", "invalid digest format", "invalid model name",
 * "--draft-quantize requires a DRAFT model". A legacy {"name"/"model", "modelfile"} request is parsed here
 * too (Modelfile errors such as "(line 2): command must be one of ..." are 400 as well): FROM/ADAPTER/DRAFT
 * @sha256:<hex> names an uploaded blob, FROM <valid name> a model; anything else is 400 "invalid model
 * reference: <arg>", decided without looking at the server's files. The legacy "path" field (a Modelfile
 * on the server) is ignored, as by Ollama since v0.5.5: no request reads a file of the server. Warnings
 * (deprecated parameters) go to w. */
int mf_create_request_parse(const char *body, size_t len, struct mf_create_request **out, struct mf_warnings *w,
			    struct mf_error *err) MF_WUR;

/* "stream" of the request (default true). */
bool mf_create_request_stream(const struct mf_create_request *r);

/* The name to create, as given. */
const char *mf_create_request_model(const struct mf_create_request *r);

/* Lets the long steps of mf_create_run (quantizing, converting, hashing, waiting for the store lock) ask
 * cancel->cancelled(ctx) as they go; true stops the create with MF_ERR_CANCELLED and no manifest. The
 * progress callback can cancel too, but it is only called between steps. Copied; NULL clears it. */
void mf_create_request_set_cancel(struct mf_create_request *r, const struct mf_cancel *cancel);

void mf_create_request_free(struct mf_create_request *r);

/* Runs the create. Every progress object, the final {"status":"success"} included, goes to fn. On failure
 * returns the code and fills err (http_status 400 for what Ollama answers 400, e.g. "neither 'from' or
 * 'files' was specified", "template error: ...", "supplied file was not in GGUF format"; 500 otherwise).
 * Nothing is left referenced by a manifest when it fails; new blobs stay until the next prune. */
int mf_create_run(struct mf_store *s, const struct mf_create_request *r, mf_progress_fn fn, void *ctx,
		  struct mf_warnings *w, struct mf_error *err) MF_WUR;

/* The name of a GGUF general.file_type as Ollama prints it ("Q4_K_M", "F16", ...; "unknown" for 0, as
 * Ollama's FileType() reads 0 as absent). */
const char *mf_file_type_name(uint32_t ft);

/* ggml.ParseFileType for `quantize`: "F32", "F16", "Q8_0", "Q4_K_S", "Q4_K_M"/"Q4_K", "BF16" (upper case)
 * → the file type; false otherwise (error text from mf_quantize_type_error). */
bool mf_parse_file_type(const char *s, uint32_t *ft);

#endif
