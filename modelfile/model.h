/* modelfile/model.h — a model as the store describes it: the ConfigV2 blob, and everything
 * server/images.go:GetModel reads back from a manifest (paths of the weights, template text, system prompt,
 * parameters, messages, licenses), plus the two texts `ollama show` builds from it (--modelfile and
 * --parameters).
 */
#ifndef ORUN_MODELFILE_MODEL_H
#define ORUN_MODELFILE_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "modelfile/error.h"
#include "base/json.h"
#include "modelfile/name.h"
#include "modelfile/store.h"

#define MF_MAX_CONFIG_SIZE (1u << 20)     /* bytes of a config blob */
#define MF_MAX_TEXT_LAYER (64u << 20)     /* bytes of a template/system/license/params/messages layer */
#define MF_DEFAULT_TEMPLATE "{{ .Prompt }}" /* template.DefaultTemplate */

/* types/model.ConfigV2. Strings are never NULL after mf_config_parse ("" when absent). */
struct mf_config {
	char *model_format, *model_family;
	char **model_families; /* NULL with n 0 encodes as null, as Go's nil slice */
	size_t n_model_families;
	char *model_type, *file_type;
	char *renderer, *parser, *requires;
	char *remote_host, *remote_model;
	char **capabilities;
	size_t n_capabilities;
	int64_t context_length, embedding_length;
	char *base_name;
	bool has_draft;
	char *draft_model_format, *draft_architecture, *draft_tensor_prefix, *draft_config;
	char *architecture, *os;
};

/* Zeroed config with every string "" (OOM → MF_ERR_NOMEM). */
int mf_config_init(struct mf_config *c) MF_WUR;
/* Parses a config blob (Go rules: case-insensitive fields, unknown ignored). c is initialised first. */
int mf_config_parse(const char *data, size_t n, struct mf_config *c, struct mf_error *err) MF_WUR;
/* The exact bytes Ollama writes (json.Encoder of ConfigV2, field order and omitempty as Go). */
char *mf_config_encode(const struct mf_config *c, size_t *len) MF_WUR;
void mf_config_free(struct mf_config *c);
/* Replaces *field with a copy of s; MF_OK or MF_ERR_NOMEM. */
int mf_config_set(char **field, const char *s) MF_WUR;
/* Appends s to a string list. */
int mf_strlist_add(char ***list, size_t *n, const char *s) MF_WUR;
void mf_strlist_free(char **list, size_t n);

struct mf_message {
	char *role;
	char *content;
};

/* A model resolved from the store (GetModel). */
struct mf_model {
	struct mf_name name;                     /* as resolved (the spelling on disk) */
	char short_name[MF_NAME_STRING_MAX];     /* DisplayShortest */
	char full_name[MF_NAME_STRING_MAX];      /* String */
	struct mf_manifest *manifest;            /* digest = manifest file sha256, mtime = modified_at */
	struct mf_config config;
	char *model_path;                        /* blob path of the model layer, or NULL */
	char *parent_model;                      /* the model layer's "from", or NULL */
	char *draft_path;
	char **adapter_paths;
	size_t n_adapters;
	char **projector_paths;
	size_t n_projectors;
	char *template_text;                     /* the template layer's text, or MF_DEFAULT_TEMPLATE */
	bool has_template;                       /* a template/prompt layer exists */
	char *system;                            /* "" when none */
	char **licenses;
	size_t n_licenses;
	struct ob_json_doc *params;              /* the params layer (an object), or NULL */
	struct ob_json_doc *messages_doc;        /* the messages layer (an array of api.Message), or NULL */
	struct mf_message *messages;             /* role/content of each message, in order */
	size_t n_messages;
	bool has_embed_layer;                    /* an obsolete embed layer was ignored */
};

/* Resolves name (case-insensitively, like Ollama) and reads the model. MF_ERR_PARSE for an invalid name
 * ("invalid model name"), MF_ERR_NOT_FOUND ("model '<name>' not found", 404) when absent, MF_ERR_FORMAT for
 * a corrupt manifest, config, params or messages layer. */
int mf_model_load(const struct mf_store *s, const char *name, struct mf_model **out, struct mf_error *err) MF_WUR;
void mf_model_free(struct mf_model *m);

/* The `modelfile` field of /api/show: Ollama's three header comments, a blank line and the Modelfile of the
 * model (FROM <blob path>, ADAPTER, DRAFT, projector FROMs, TEMPLATE, SYSTEM, RENDERER, PARSER, one PARAMETER
 * line per value, LICENSE, MESSAGE) with Ollama's quoting. Parameters come in key order; no TEMPLATE line when
 * template_text is NULL (the server's choice for a model on its GGUF's Jinja template). New string or NULL. */
char *mf_model_show_modelfile(const struct mf_model *m) MF_WUR;

/* The `parameters` field of /api/show: one `%-30s %#v` line per value (list values one line each), joined
 * with "\n", in key order. New string or NULL. */
char *mf_model_show_parameters(const struct mf_model *m) MF_WUR;

/* The license field: the licenses joined with "\n". New string or NULL. */
char *mf_model_show_license(const struct mf_model *m) MF_WUR;

/* "8.0B", "494.03M", "135M", "2K", "999": format.HumanNumber. buf of 32 bytes. */
char *mf_human_number(uint64_t n, char *buf);

#endif
