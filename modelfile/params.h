/* modelfile/params.h — the PARAMETER schema: every option of Ollama's api.Options and api.Runner, with
 * its JSON type, and orun's extensions; conversion of Modelfile text values (api.FormatParams) and of JSON
 * option objects from requests and params layers (api.Options.FromMap), with Ollama's error texts.
 *
 * orun's extensions: rope_freq_base / rope_freq_scale (float; the old names rope_frequency_base /
 * rope_frequency_scale are accepted), cache_prompt (bool, default true: false turns off KV-prefix reuse),
 * no_mmap (taken as use_mmap = !value, with a warning) and num_gqa (accepted and ignored, with a warning).
 */
#ifndef ORUN_MODELFILE_PARAMS_H
#define ORUN_MODELFILE_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "modelfile/error.h"
#include "base/json.h"

/* Go type of an option. */
enum mf_opt_type {
	MF_OPT_INT,      /* int (64-bit) */
	MF_OPT_FLOAT,    /* float32 */
	MF_OPT_BOOL,     /* bool */
	MF_OPT_STRINGS,  /* []string (stop) */
	MF_OPT_INT_PTR,  /* *int (main_gpu): may be unset */
	MF_OPT_BOOL_PTR, /* *bool (use_mmap): may be unset */
};

/* Options, in the order of Go's struct (Runner first); the enum value is the bit in mf_options.set. */
enum mf_opt_id {
	MF_OPT_NUM_CTX,
	MF_OPT_NUM_BATCH,
	MF_OPT_NUM_GPU,
	MF_OPT_MAIN_GPU,
	MF_OPT_USE_MMAP,
	MF_OPT_NUM_THREAD,
	MF_OPT_DRAFT_NUM_PREDICT,
	MF_OPT_NUM_KEEP,
	MF_OPT_SEED,
	MF_OPT_NUM_PREDICT,
	MF_OPT_TOP_K,
	MF_OPT_TOP_P,
	MF_OPT_MIN_P,
	MF_OPT_TYPICAL_P,
	MF_OPT_REPEAT_LAST_N,
	MF_OPT_TEMPERATURE,
	MF_OPT_REPEAT_PENALTY,
	MF_OPT_PRESENCE_PENALTY,
	MF_OPT_FREQUENCY_PENALTY,
	MF_OPT_STOP,
	/* orun extensions */
	MF_OPT_ROPE_FREQ_BASE,
	MF_OPT_ROPE_FREQ_SCALE,
	MF_OPT_CACHE_PROMPT,
	MF_OPT__COUNT
};

struct mf_opt_info {
	const char *name; /* the JSON key */
	enum mf_opt_id id;
	enum mf_opt_type type;
	bool runner;      /* a load-time (api.Runner) option: changing it reloads the model */
	bool extension;   /* an orun extension, not an option of current Ollama */
};

/* The schema entry for a canonical option name, or NULL. */
const struct mf_opt_info *mf_opt_lookup(const char *name);

/* The schema entry of an id (never NULL for a valid id). */
const struct mf_opt_info *mf_opt_info(enum mf_opt_id id);

/* Ollama's deprecated parameter names (dropped with "parameter X is deprecated"). */
bool mf_opt_is_deprecated(const char *name);

/* Decoded options (api.Options + api.Runner + orun's extensions). */
struct mf_options {
	int64_t num_ctx;   /* 0 = automatic (OLLAMA_CONTEXT_LENGTH, else by VRAM: the server decides) */
	int64_t num_batch; /* 512 */
	int64_t num_gpu;   /* -1 = automatic */
	int64_t main_gpu;  /* valid when MF_OPT_MAIN_GPU is in set */
	bool use_mmap;     /* valid when MF_OPT_USE_MMAP is in set (else automatic) */
	int64_t num_thread;        /* 0 = automatic */
	int64_t draft_num_predict; /* 4 */
	int64_t num_keep;          /* 4 */
	int64_t seed;              /* -1 = random */
	int64_t num_predict;       /* -1 = no limit */
	int64_t top_k;             /* 40 */
	float top_p;               /* 0.9 */
	float min_p;               /* 0 */
	float typical_p;           /* 1 */
	int64_t repeat_last_n;     /* 64 */
	float temperature;         /* 0.8 */
	float repeat_penalty;      /* 1.0 */
	float presence_penalty;    /* 0 */
	float frequency_penalty;   /* 0 */
	char **stop;               /* owned strings */
	size_t n_stop;
	float rope_freq_base;      /* 0 = the model's own value */
	float rope_freq_scale;     /* 0 = the model's own value */
	bool cache_prompt;         /* true */
	uint64_t set;              /* bit (1 << id) for every option given explicitly */
};

/* Ollama's api.DefaultOptions() (with num_ctx 0 = automatic) plus orun's defaults; nothing in set. */
void mf_options_init(struct mf_options *o);

/* Frees the stop list; the struct may be re-initialised. NULL is fine. */
void mf_options_free(struct mf_options *o);

/* Deep copy; MF_OK or MF_ERR_NOMEM (dst is then left initialised and empty). */
int mf_options_copy(struct mf_options *dst, const struct mf_options *src) MF_WUR;

/* api.Options.FromMap: applies a JSON object of options (a request's "options", or a model's params layer)
 * on top of o. Unknown keys are ignored with the warning "invalid option provided option=<key>"; null values
 * are skipped; JSON numbers are truncated for integer options. A value of the wrong type fails with Go's
 * text, e.g. `option "num_ctx" must be of type integer` (also boolean, float32, array, "must be of an array
 * of strings"), code MF_ERR_INVALID, HTTP 500 as Ollama answers. no_mmap and num_gqa are accepted as in
 * Modelfiles. obj must be an object (else MF_ERR_INVALID). On error o may be partly updated. */
int mf_options_apply_json(struct mf_options *o, const struct ob_json *obj, struct mf_warnings *w,
			  struct mf_error *err) MF_WUR;

/* ---------------------------------------------------------------------------------------------------- */
/* Modelfile parameters: the typed "parameters" object of a create request. */

struct mf_param {
	char *name; /* canonical option name */
	enum mf_opt_type type;
	int64_t i;   /* MF_OPT_INT, MF_OPT_INT_PTR */
	float f;     /* MF_OPT_FLOAT */
	bool b;      /* MF_OPT_BOOL, MF_OPT_BOOL_PTR */
	char **strs; /* MF_OPT_STRINGS */
	size_t n_strs;
};

struct mf_params {
	struct mf_param *items; /* sorted by name (as Go marshals a map) */
	size_t n, cap;
};

/* One `PARAMETER name value` line, as Ollama's CLI converts it (Modelfile.CreateRequest + FormatParams):
 *   - a deprecated name is dropped with the warning "parameter <name> is deprecated";
 *   - stop appends; any other name replaces its earlier value;
 *   - errors: "unknown parameter '<name>'", "invalid int value [<v>]", "invalid float value [<v>]",
 *     "invalid bool value [<v>]" (MF_ERR_INVALID);
 *   - orun extensions as described at the top of this header (with their warnings).
 * MF_OK, MF_ERR_INVALID or MF_ERR_NOMEM. */
int mf_params_set(struct mf_params *p, const char *name, const char *value, struct mf_warnings *w,
		  struct mf_error *err) MF_WUR;

/* The parameter named name, or NULL. */
const struct mf_param *mf_params_get(const struct mf_params *p, const char *name);

/* Writes the parameters as one JSON object the way Go's json.Marshal writes the map (sorted keys, int64 as
 * integers, float32 in Go's float32 form, HTML-safe strings). NaN or infinite floats fail as Go fails:
 * "json: unsupported value: +Inf" (MF_ERR_INVALID). */
int mf_params_write_json(const struct mf_params *p, struct ob_jw *w, struct mf_error *err) MF_WUR;

void mf_params_free(struct mf_params *p);

#endif
