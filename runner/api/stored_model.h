/* runner/api/stored_model.h — what the server derives from a stored model: its parsed template, the facts read
 * from the GGUF header (architecture, context and embedding length, file type, pooling), its capabilities
 * (Ollama's Model.Capabilities, in Ollama's order) and the JSON pieces /api/tags, /api/show and /api/ps
 * share (details, model_info, tensors).
 */
#ifndef ORUN_RUNNER_API_STORED_MODEL_H
#define ORUN_RUNNER_API_STORED_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/json.h"
#include "modelfile/jinja/jinja.h"
#include "modelfile/model.h"
#include "modelfile/template.h"

struct gguf_file;

enum rn_cap {
	RN_CAP_COMPLETION,
	RN_CAP_TOOLS,
	RN_CAP_INSERT,
	RN_CAP_VISION,
	RN_CAP_EMBEDDING,
	RN_CAP_THINKING,
	RN_CAP_AUDIO,
	RN_CAP_IMAGE,
	RN_CAP__COUNT
};

/* "completion", "tools", "insert", "vision", "embedding", "thinking", "audio", "image". */
const char *rn_cap_name(enum rn_cap c);

/* What the model's GGUF says about it (read once per blob and cached). */
struct rn_gguf_facts {
	char arch[64];             /* general.architecture */
	int64_t context_length, embedding_length;
	uint32_t file_type;        /* general.file_type (0 = absent) */
	bool pooling;              /* <arch>.pooling_type present: an embedding model */
	bool vision;               /* <arch>.vision.block_count present */
};

struct rn_srv_model {
	struct mf_model *m;        /* owned */
	struct mf_tpl *tpl;        /* the template (Ollama's template.Parse of m->template_text), or NULL */
	char tpl_error[512];       /* why tpl is NULL */
	bool gguf_ok;              /* the model layer is a readable GGUF */
	char gguf_error[512];
	struct rn_gguf_facts gguf; /* valid when gguf_ok */
	enum rn_cap caps[RN_CAP__COUNT]; /* capabilities in Ollama's order */
	int n_caps;
	char think_open[64], think_close[64]; /* inferred thinking tags ("" when none) */
	/* The GGUF's Jinja chat template, when the model uses it: no template layer in the manifest (a TEMPLATE
	 * always wins, as in Ollama) and a tokenizer.chat_template that parses. Nothing in the store records the
	 * choice: it follows from the manifest's layers, so it survives `cp` and a later TEMPLATE overrides it.
	 * When set, chats and generates render through it (runner/api/jinja_chat.h) and tpl is not used. */
	struct mf_jinja *jinja;    /* owned, or NULL */
	char *jinja_src;           /* its text (owned), or NULL */
	size_t jinja_len;
	char jinja_error[512];     /* why a GGUF template present was not usable ("" otherwise) */
};

/* Loads name from the store (case-insensitive) and derives everything above. On failure returns NULL with
 * *status (400 invalid name, 404 not found, 500 corrupt) and Ollama's message in msg. */
struct rn_srv_model *rn_srv_model_load(const struct mf_store *st, const char *name, int *status, char *msg,
				       size_t msg_size);
void rn_srv_model_free(struct rn_srv_model *sm);

bool rn_srv_model_has(const struct rn_srv_model *sm, enum rn_cap c);

/* Ollama's CheckCapabilities: 0, or 400 with "<full name> does not support <cap>[\n<cap>...]" in msg. */
int rn_srv_model_check(const struct rn_srv_model *sm, const enum rn_cap *want, int n_want, char *msg, size_t msg_size);

/* The quantization level /api/tags and /api/show report: the config's file_type unless it is "" or
 * "unknown", then the GGUF's. */
const char *rn_srv_model_quantization(const struct rn_srv_model *sm);

/* Writes the api.ModelDetails object (parent_model, format, family, families, parameter_size,
 * quantization_level, context_length?, embedding_length?). with_lengths adds the two lengths (as /api/tags);
 * quant_fallback reports the GGUF's file type when the config has none (/api/tags, /api/show). */
void rn_srv_model_write_details(const struct rn_srv_model *sm, struct ob_jw *w, bool with_lengths, bool quant_fallback);

/* Writes ["completion", ...] */
void rn_srv_model_write_caps(const struct rn_srv_model *sm, struct ob_jw *w);

/* Writes the GGUF metadata of f as /api/show's model_info (sorted keys; general.name and
 * tokenizer.chat_template left out; arrays longer than 5 emptied unless verbose). */
void rn_gguf_write_model_info(const struct gguf_file *f, bool verbose, struct ob_jw *w);

/* Writes /api/show's tensors array: [{"name","type","shape"}]. */
void rn_gguf_write_tensors(const struct gguf_file *f, struct ob_jw *w);

#endif
