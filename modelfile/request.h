/* modelfile/request.h — from a parsed Modelfile to the body of POST /api/create, as Ollama's CLI builds it
 * (parser.Modelfile.CreateRequest and cmd.CreateHandler): FROM/ADAPTER/DRAFT paths expanded (~, ~user,
 * relative to the Modelfile's folder), local files and model folders listed and hashed, PARAMETER values
 * converted (modelfile/params.h), LICENSE/MESSAGE accumulated, REQUIRES checked as semver; then the JSON
 * body with file names relative to the files' common root. Used by `orun create` and by the server for the
 * legacy {"name", "modelfile"} request form.
 */
#ifndef ORUN_MODELFILE_REQUEST_H
#define ORUN_MODELFILE_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "modelfile/error.h"
#include "modelfile/params.h"
#include "modelfile/parser.h"
#include "modelfile/store.h"

#define MF_MAX_MODEL_FILES 4096 /* files one FROM folder may contribute */

/* A local file that goes into the request. */
struct mf_req_file {
	char *path;                    /* absolute local path (symlinks of folder entries resolved) */
	char *name;                    /* the key sent in the request (set by mf_spec_name_files) */
	char digest[MF_DIGEST_LEN + 1]; /* "sha256:<hex>" ("" until hashed) */
	uint64_t size;
};

struct mf_req_files {
	struct mf_req_file *v;
	size_t n;
};

struct mf_req_message {
	char *role, *content;
};

/* What a Modelfile asks for (api.CreateRequest before the upload). */
struct mf_create_spec {
	char *model;                 /* the name to create (set by the caller) */
	char *from;                  /* FROM that is not a local path: a model name */
	struct mf_req_files files;   /* FROM local files/folders, merged */
	struct mf_req_files adapters;
	struct mf_req_files draft_files;
	char *template_text;         /* NULL = not given */
	char *system;                /* NULL = not given */
	char **licenses;
	size_t n_licenses;
	char *renderer, *parser, *requires;
	struct mf_params params;
	struct mf_req_message *messages;
	size_t n_messages;
	char *quantize;              /* -q, NULL = none */
};

/* Ollama's expandPath: an absolute path is cleaned; "~" and "~/x" use $HOME, "~user/x" that user's home;
 * anything else is joined to relative_dir (itself made absolute against the working directory). New string,
 * or NULL with err ("failed to find user 'x': ..."). */
char *mf_expand_path(const char *path, const char *relative_dir, struct mf_error *err) MF_WUR;

/* Ollama's filesForModel for a folder: the weights (model*.safetensors, also one folder down,
 * consolidated*.safetensors, pytorch_model*.bin, consolidated*.pth, *.gguf or *.bin: the first group that
 * matches) plus the *.json files of the folder and of its subfolders, chat_template.jinja and
 * tokenizer.model. Paths (sorted within each group) into *out.
 * "no Modelfile or safetensors files found" (MF_ERR_NOT_FOUND) when no weights match. */
int mf_files_for_model(const char *dir, char ***out, size_t *n, struct mf_error *err) MF_WUR;

/* Modelfile.CreateRequest: fills spec from the commands. relative_dir is the Modelfile's folder. With
 * hash, every local file is hashed (sha256) as the CLI does before uploading. Deprecated parameters and
 * orun's extensions add warnings. Errors carry Ollama's texts ("unknown parameter 'x'", "requires must be a
 * valid semver (e.g. 0.14.0)", "stat <path>: no such file or directory", ...). */
int mf_spec_from_modelfile(const struct mf_modelfile *mf, const char *relative_dir, bool hash,
			   struct mf_create_spec *spec, struct mf_warnings *w, struct mf_error *err) MF_WUR;

/* createRequestFileNames: each file's request key is its path relative to the common root of the set when
 * there are two or more files (and the relative path stays inside it), else its base name. */
int mf_spec_name_files(struct mf_create_spec *spec) MF_WUR;

/* The JSON body of POST /api/create exactly as Go's json.Marshal(api.CreateRequest) writes it. */
char *mf_spec_to_json(const struct mf_create_spec *spec, size_t *len, struct mf_error *err) MF_WUR;

void mf_spec_free(struct mf_create_spec *spec);

/* golang.org/x/mod/semver.IsValid ("v" prefix required). */
bool mf_semver_valid(const char *v);

#endif
