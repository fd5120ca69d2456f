/* modelfile/params.c — the option schema, Modelfile PARAMETER conversion and JSON option decoding.
 *
 * Mirrors api.FormatParams (text → typed value, client side) and api.Options.FromMap (JSON → options,
 * server side) including their error texts; orun's extra names are handled before the schema lookup so
 * that Ollama's own names behave exactly as in Ollama.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/gofmt.h"
#include "modelfile/params.h"

static const struct mf_opt_info schema[MF_OPT__COUNT] = {
	{"num_ctx", MF_OPT_NUM_CTX, MF_OPT_INT, true, false},
	{"num_batch", MF_OPT_NUM_BATCH, MF_OPT_INT, true, false},
	{"num_gpu", MF_OPT_NUM_GPU, MF_OPT_INT, true, false},
	{"main_gpu", MF_OPT_MAIN_GPU, MF_OPT_INT_PTR, true, false},
	{"use_mmap", MF_OPT_USE_MMAP, MF_OPT_BOOL_PTR, true, false},
	{"num_thread", MF_OPT_NUM_THREAD, MF_OPT_INT, true, false},
	{"draft_num_predict", MF_OPT_DRAFT_NUM_PREDICT, MF_OPT_INT, true, false},
	{"num_keep", MF_OPT_NUM_KEEP, MF_OPT_INT, false, false},
	{"seed", MF_OPT_SEED, MF_OPT_INT, false, false},
	{"num_predict", MF_OPT_NUM_PREDICT, MF_OPT_INT, false, false},
	{"top_k", MF_OPT_TOP_K, MF_OPT_INT, false, false},
	{"top_p", MF_OPT_TOP_P, MF_OPT_FLOAT, false, false},
	{"min_p", MF_OPT_MIN_P, MF_OPT_FLOAT, false, false},
	{"typical_p", MF_OPT_TYPICAL_P, MF_OPT_FLOAT, false, false},
	{"repeat_last_n", MF_OPT_REPEAT_LAST_N, MF_OPT_INT, false, false},
	{"temperature", MF_OPT_TEMPERATURE, MF_OPT_FLOAT, false, false},
	{"repeat_penalty", MF_OPT_REPEAT_PENALTY, MF_OPT_FLOAT, false, false},
	{"presence_penalty", MF_OPT_PRESENCE_PENALTY, MF_OPT_FLOAT, false, false},
	{"frequency_penalty", MF_OPT_FREQUENCY_PENALTY, MF_OPT_FLOAT, false, false},
	{"stop", MF_OPT_STOP, MF_OPT_STRINGS, false, false},
	{"rope_freq_base", MF_OPT_ROPE_FREQ_BASE, MF_OPT_FLOAT, true, true},
	{"rope_freq_scale", MF_OPT_ROPE_FREQ_SCALE, MF_OPT_FLOAT, true, true},
	{"cache_prompt", MF_OPT_CACHE_PROMPT, MF_OPT_BOOL, false, true},
};

static const char *const deprecated[] = {"penalize_newline", "low_vram", "f16_kv", "logits_all", "vocab_only",
					 "use_mlock", "mirostat", "mirostat_tau", "mirostat_eta", NULL};

const struct mf_opt_info *mf_opt_lookup(const char *name)
{
	for (int i = 0; i < MF_OPT__COUNT; i++)
		if (strcmp(schema[i].name, name) == 0)
			return &schema[i];
	return NULL;
}

const struct mf_opt_info *mf_opt_info(enum mf_opt_id id)
{
	return &schema[id];
}

bool mf_opt_is_deprecated(const char *name)
{
	for (int i = 0; deprecated[i]; i++)
		if (strcmp(deprecated[i], name) == 0)
			return true;
	return false;
}

/* orun's older aliases of its extensions. */
static const char *canonical_alias(const char *name)
{
	if (strcmp(name, "rope_frequency_base") == 0)
		return "rope_freq_base";
	if (strcmp(name, "rope_frequency_scale") == 0)
		return "rope_freq_scale";
	return name;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Options */

void mf_options_init(struct mf_options *o)
{
	memset(o, 0, sizeof *o);
	o->num_predict = -1;
	o->num_keep = 4;
	o->temperature = 0.8f;
	o->top_k = 40;
	o->top_p = 0.9f;
	o->typical_p = 1.0f;
	o->repeat_last_n = 64;
	o->repeat_penalty = 1.0f;
	o->seed = -1;
	o->num_batch = 512;
	o->num_gpu = -1;
	o->draft_num_predict = 4;
	o->cache_prompt = true;
}

static void free_strings(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void mf_options_free(struct mf_options *o)
{
	if (!o)
		return;
	free_strings(o->stop, o->n_stop);
	o->stop = NULL;
	o->n_stop = 0;
}

int mf_options_copy(struct mf_options *dst, const struct mf_options *src)
{
	*dst = *src;
	dst->stop = NULL;
	dst->n_stop = 0;
	if (src->n_stop) {
		dst->stop = calloc(src->n_stop, sizeof *dst->stop);
		if (!dst->stop)
			return MF_ERR_NOMEM;
		for (size_t i = 0; i < src->n_stop; i++) {
			dst->stop[i] = strdup(src->stop[i]);
			if (!dst->stop[i]) {
				free_strings(dst->stop, i);
				dst->stop = NULL;
				return MF_ERR_NOMEM;
			}
		}
		dst->n_stop = src->n_stop;
	}
	return MF_OK;
}

static int64_t *int_field(struct mf_options *o, enum mf_opt_id id)
{
	switch (id) {
	case MF_OPT_NUM_CTX: return &o->num_ctx;
	case MF_OPT_NUM_BATCH: return &o->num_batch;
	case MF_OPT_NUM_GPU: return &o->num_gpu;
	case MF_OPT_MAIN_GPU: return &o->main_gpu;
	case MF_OPT_NUM_THREAD: return &o->num_thread;
	case MF_OPT_DRAFT_NUM_PREDICT: return &o->draft_num_predict;
	case MF_OPT_NUM_KEEP: return &o->num_keep;
	case MF_OPT_SEED: return &o->seed;
	case MF_OPT_NUM_PREDICT: return &o->num_predict;
	case MF_OPT_TOP_K: return &o->top_k;
	case MF_OPT_REPEAT_LAST_N: return &o->repeat_last_n;
	default: return NULL;
	}
}

static float *float_field(struct mf_options *o, enum mf_opt_id id)
{
	switch (id) {
	case MF_OPT_TOP_P: return &o->top_p;
	case MF_OPT_MIN_P: return &o->min_p;
	case MF_OPT_TYPICAL_P: return &o->typical_p;
	case MF_OPT_TEMPERATURE: return &o->temperature;
	case MF_OPT_REPEAT_PENALTY: return &o->repeat_penalty;
	case MF_OPT_PRESENCE_PENALTY: return &o->presence_penalty;
	case MF_OPT_FREQUENCY_PENALTY: return &o->frequency_penalty;
	case MF_OPT_ROPE_FREQ_BASE: return &o->rope_freq_base;
	case MF_OPT_ROPE_FREQ_SCALE: return &o->rope_freq_scale;
	default: return NULL;
	}
}

static bool *bool_field(struct mf_options *o, enum mf_opt_id id)
{
	switch (id) {
	case MF_OPT_USE_MMAP: return &o->use_mmap;
	case MF_OPT_CACHE_PROMPT: return &o->cache_prompt;
	default: return NULL;
	}
}

static int type_error(struct mf_error *err, const char *key, const char *what)
{
	return mf_error_set_http(err, MF_ERR_INVALID, 500, "option \"%s\" must be of %s", key, what);
}

/* A JSON number as Go's decoder into `any` sees it (float64), or an error for out-of-range literals. */
static int json_number(const struct ob_json *v, double *out, struct mf_error *err)
{
	if (!isfinite(v->number))
		return mf_error_set_http(err, MF_ERR_INVALID, 400,
					 "json: cannot unmarshal number %s into Go value of type float64", v->str);
	*out = v->number;
	return MF_OK;
}

static int apply_one(struct mf_options *o, const struct mf_opt_info *info, const char *key, const struct ob_json *v,
		     struct mf_error *err)
{
	double d = 0;
	switch (info->type) {
	case MF_OPT_INT:
	case MF_OPT_INT_PTR:
		if (v->type != OB_JSON_NUMBER)
			return type_error(err, key, "type integer");
		if (json_number(v, &d, err) != MF_OK)
			return err ? err->code : MF_ERR_INVALID;
		*int_field(o, info->id) = ob_go_float_to_int(d);
		break;
	case MF_OPT_FLOAT:
		if (v->type != OB_JSON_NUMBER)
			return type_error(err, key, "type float32");
		if (json_number(v, &d, err) != MF_OK)
			return err ? err->code : MF_ERR_INVALID;
		*float_field(o, info->id) = (float)d;
		break;
	case MF_OPT_BOOL:
	case MF_OPT_BOOL_PTR:
		if (v->type != OB_JSON_BOOL)
			return type_error(err, key, "type boolean");
		*bool_field(o, info->id) = v->boolean;
		break;
	case MF_OPT_STRINGS: {
		if (v->type != OB_JSON_ARRAY)
			return type_error(err, key, "type array");
		OB_JSON_FOREACH(e, v)
		if (e->type != OB_JSON_STRING)
			return type_error(err, key, "an array of strings");
		char **list = v->count ? calloc(v->count, sizeof *list) : NULL;
		if (v->count && !list)
			return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
		size_t n = 0;
		OB_JSON_FOREACH(e, v)
		{
			list[n] = strndup(e->str, e->len);
			if (!list[n]) {
				free_strings(list, n);
				return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
			}
			n++;
		}
		free_strings(o->stop, o->n_stop);
		o->stop = list;
		o->n_stop = n;
		break;
	}
	}
	o->set |= 1ull << info->id;
	return MF_OK;
}

int mf_options_apply_json(struct mf_options *o, const struct ob_json *obj, struct mf_warnings *w, struct mf_error *err)
{
	if (!obj || obj->type != OB_JSON_OBJECT)
		return mf_error_set(err, MF_ERR_INVALID, "options must be a JSON object");
	OB_JSON_FOREACH_MEMBER(k, v, obj)
	{
		char key[256];
		if (k->len >= sizeof key) {
			if (mf_warn(w, "invalid option provided option=%.*s", (int)k->len, k->str) != MF_OK)
				return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
			continue;
		}
		memcpy(key, k->str, k->len);
		key[k->len] = 0;
		if (strlen(key) != k->len || ob_json_get(obj, key) != v) /* a later duplicate wins, as in a Go map */
			continue;
		if (v->type == OB_JSON_NULL)
			continue;
		const char *name = canonical_alias(key);
		int rc = MF_OK;
		if (strcmp(name, "no_mmap") == 0) {
			if (v->type != OB_JSON_BOOL)
				return type_error(err, key, "type boolean");
			o->use_mmap = !v->boolean;
			o->set |= 1ull << MF_OPT_USE_MMAP;
			rc = mf_warn(w, "option no_mmap is not an Ollama option; taken as use_mmap %s",
				     v->boolean ? "false" : "true");
		} else if (strcmp(name, "num_gqa") == 0) {
			rc = mf_warn(w, "option num_gqa is ignored: the model's own attention head counts are used");
		} else {
			const struct mf_opt_info *info = mf_opt_lookup(name);
			if (!info) {
				rc = mf_warn(w, "invalid option provided option=%s", key);
			} else {
				int e = apply_one(o, info, key, v, err);
				if (e != MF_OK)
					return e;
			}
		}
		if (rc != MF_OK)
			return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	}
	return MF_OK;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Modelfile parameters */

static void param_clear(struct mf_param *p)
{
	free(p->name);
	free_strings(p->strs, p->n_strs);
	memset(p, 0, sizeof *p);
}

void mf_params_free(struct mf_params *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		param_clear(&p->items[i]);
	free(p->items);
	memset(p, 0, sizeof *p);
}

const struct mf_param *mf_params_get(const struct mf_params *p, const char *name)
{
	for (size_t i = 0; i < p->n; i++)
		if (strcmp(p->items[i].name, name) == 0)
			return &p->items[i];
	return NULL;
}

/* The slot for name: the existing one, or a new zeroed one inserted in sorted position. NULL on OOM. */
static struct mf_param *param_slot(struct mf_params *p, const char *name, enum mf_opt_type type)
{
	size_t i = 0;
	for (; i < p->n; i++) {
		int c = strcmp(p->items[i].name, name);
		if (c == 0)
			return &p->items[i];
		if (c > 0)
			break;
	}
	if (p->n == p->cap && OB_GROW(p->items, p->cap, p->n + 1, 0) != OB_GROW_OK)
		return NULL;
	char *nm = strdup(name);
	if (!nm)
		return NULL;
	memmove(&p->items[i + 1], &p->items[i], (p->n - i) * sizeof *p->items);
	memset(&p->items[i], 0, sizeof p->items[i]);
	p->items[i].name = nm;
	p->items[i].type = type;
	p->n++;
	return &p->items[i];
}

int mf_params_set(struct mf_params *p, const char *name, const char *value, struct mf_warnings *w, struct mf_error *err)
{
	if (mf_opt_is_deprecated(name))
		return mf_warn(w, "parameter %s is deprecated", name) == MF_OK
			       ? MF_OK
			       : mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	if (strcmp(name, "no_mmap") == 0) {
		bool b;
		if (!ob_go_parse_bool(value, &b))
			return mf_error_set(err, MF_ERR_INVALID, "invalid bool value [%s]", value);
		struct mf_param *s = param_slot(p, "use_mmap", MF_OPT_BOOL_PTR);
		if (!s || mf_warn(w, "parameter no_mmap is not an Ollama parameter; stored as use_mmap %s",
				  b ? "false" : "true") != MF_OK)
			return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
		s->b = !b;
		return MF_OK;
	}
	if (strcmp(name, "num_gqa") == 0) {
		int64_t i;
		if (!ob_go_parse_int64(value, &i))
			return mf_error_set(err, MF_ERR_INVALID, "invalid int value [%s]", value);
		if (mf_warn(w, "parameter num_gqa is ignored: the model's own attention head counts are used") != MF_OK)
			return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
		return MF_OK;
	}
	const struct mf_opt_info *info = mf_opt_lookup(canonical_alias(name));
	if (!info)
		return mf_error_set(err, MF_ERR_INVALID, "unknown parameter '%s'", name);
	int64_t i = 0;
	float f = 0;
	bool b = false;
	switch (info->type) {
	case MF_OPT_INT:
	case MF_OPT_INT_PTR:
		if (!ob_go_parse_int64(value, &i))
			return mf_error_set(err, MF_ERR_INVALID, "invalid int value [%s]", value);
		break;
	case MF_OPT_FLOAT:
		if (!ob_go_parse_float32(value, &f))
			return mf_error_set(err, MF_ERR_INVALID, "invalid float value [%s]", value);
		break;
	case MF_OPT_BOOL:
	case MF_OPT_BOOL_PTR:
		if (!ob_go_parse_bool(value, &b))
			return mf_error_set(err, MF_ERR_INVALID, "invalid bool value [%s]", value);
		break;
	case MF_OPT_STRINGS:
		break;
	}
	struct mf_param *s = param_slot(p, info->name, info->type);
	if (!s)
		return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	if (info->type == MF_OPT_STRINGS) {
		char *v = strdup(value);
		char **strs = v ? realloc(s->strs, (s->n_strs + 1) * sizeof *strs) : NULL;
		if (!strs) {
			free(v);
			return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
		}
		strs[s->n_strs++] = v;
		s->strs = strs;
	} else {
		s->i = i;
		s->f = f;
		s->b = b;
	}
	return MF_OK;
}

int mf_params_write_json(const struct mf_params *p, struct ob_jw *w, struct mf_error *err)
{
	ob_jw_obj(w);
	for (size_t k = 0; k < p->n; k++) {
		const struct mf_param *it = &p->items[k];
		ob_jw_key(w, it->name);
		switch (it->type) {
		case MF_OPT_INT:
		case MF_OPT_INT_PTR: ob_jw_int(w, it->i); break;
		case MF_OPT_FLOAT:
			if (!isfinite(it->f))
				return mf_error_set(err, MF_ERR_INVALID, "json: unsupported value: %s",
						    isnan(it->f) ? "NaN" : it->f > 0 ? "+Inf" : "-Inf");
			ob_jw_float32(w, it->f);
			break;
		case MF_OPT_BOOL:
		case MF_OPT_BOOL_PTR: ob_jw_bool(w, it->b); break;
		case MF_OPT_STRINGS:
			ob_jw_arr(w);
			for (size_t j = 0; j < it->n_strs; j++)
				ob_jw_string(w, it->strs[j]);
			ob_jw_arr_end(w);
			break;
		}
	}
	ob_jw_obj_end(w);
	if (ob_jw_status(w) != OB_JW_OK)
		return mf_error_set(err, ob_jw_status(w) == OB_JW_NOMEM ? MF_ERR_NOMEM : MF_ERR_LIMIT,
				    "cannot encode parameters");
	return MF_OK;
}
