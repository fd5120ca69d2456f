/* runner/api/stored_model.c — capabilities, GGUF facts and the shared JSON pieces of a stored model.
 *
 * Capabilities follow Ollama's Model.Capabilities: the config's list, embedding or completion from the GGUF,
 * vision from vision.block_count or a projector, then tools / insert / thinking from the template (the Go
 * TEMPLATE layer, or the GGUF's Jinja template when there is no such layer: runner/api/jinja_chat.h),
 * thinking for gpt-oss. model_info follows HEAD's getModelData: without verbose, non-empty arrays are null.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "modelfile/create.h"
#include "runner/api/jinja_chat.h"
#include "runner/api/stored_model.h"

static const char *cap_names[RN_CAP__COUNT] = {"completion", "tools", "insert", "vision",
					       "embedding", "thinking", "audio", "image"};

const char *rn_cap_name(enum rn_cap c)
{
	return (unsigned)c < RN_CAP__COUNT ? cap_names[c] : "";
}

bool rn_srv_model_has(const struct rn_srv_model *sm, enum rn_cap c)
{
	for (int i = 0; i < sm->n_caps; i++)
		if (sm->caps[i] == c)
			return true;
	return false;
}

static void add_cap(struct rn_srv_model *sm, enum rn_cap c)
{
	if (!rn_srv_model_has(sm, c) && sm->n_caps < RN_CAP__COUNT)
		sm->caps[sm->n_caps++] = c;
}

static int cap_from_name(const char *s)
{
	for (int i = 0; i < RN_CAP__COUNT; i++)
		if (strcmp(s, cap_names[i]) == 0)
			return i;
	return -1;
}

/* GGUF facts per model blob. Blob paths are content-addressed (sha256-<digest>), so an entry never goes
 * stale; opening a GGUF indexes its vocabulary (10-20 ms for 150k tokens), which requests must not pay. */
#define FACTS_CACHE_SIZE 64

struct facts {
	char *path;
	struct rn_gguf_facts gguf;
	char *chat_template; /* tokenizer.chat_template, or NULL */
	size_t chat_template_len;
	uint64_t used;
};

static pthread_mutex_t facts_mu = PTHREAD_MUTEX_INITIALIZER;
static struct facts facts_cache[FACTS_CACHE_SIZE];
static uint64_t facts_clock;

static bool facts_get(const char *path, struct rn_srv_model *sm)
{
	bool hit = false;
	pthread_mutex_lock(&facts_mu);
	for (int i = 0; i < FACTS_CACHE_SIZE && !hit; i++) {
		struct facts *f = &facts_cache[i];
		if (f->path && strcmp(f->path, path) == 0) {
			sm->gguf = f->gguf;
			sm->gguf_ok = true;
			f->used = ++facts_clock;
			hit = true;
			if (f->chat_template && (sm->jinja_src = malloc(f->chat_template_len + 1))) {
				memcpy(sm->jinja_src, f->chat_template, f->chat_template_len + 1);
				sm->jinja_len = f->chat_template_len;
			}
		}
	}
	pthread_mutex_unlock(&facts_mu);
	return hit;
}

static void facts_put(const char *path, const struct rn_srv_model *sm)
{
	char *copy = strdup(path);
	char *ct = sm->jinja_src ? malloc(sm->jinja_len + 1) : NULL;
	if (!copy || (sm->jinja_src && !ct)) {
		free(copy);
		free(ct);
		return;
	}
	if (ct)
		memcpy(ct, sm->jinja_src, sm->jinja_len + 1);
	pthread_mutex_lock(&facts_mu);
	struct facts *victim = &facts_cache[0];
	for (int i = 0; i < FACTS_CACHE_SIZE; i++) {
		if (!facts_cache[i].path) {
			victim = &facts_cache[i];
			break;
		}
		if (facts_cache[i].used < victim->used)
			victim = &facts_cache[i];
	}
	free(victim->path);
	free(victim->chat_template);
	victim->path = copy;
	victim->gguf = sm->gguf;
	victim->chat_template = ct;
	victim->chat_template_len = ct ? sm->jinja_len : 0;
	victim->used = ++facts_clock;
	pthread_mutex_unlock(&facts_mu);
}

static void read_gguf_facts(struct rn_srv_model *sm)
{
	if (facts_get(sm->m->model_path, sm))
		return;
	struct gguf_error ge = {0};
	struct gguf_file *f = gguf_open(sm->m->model_path, &ge);
	if (!f) {
		snprintf(sm->gguf_error, sizeof sm->gguf_error, "%s", ge.msg);
		return;
	}
	sm->gguf_ok = true;
	if (gguf_get_str_buf(f, "general.architecture", sm->gguf.arch, sizeof sm->gguf.arch) != 0)
		sm->gguf.arch[0] = 0;
	char key[128];
	snprintf(key, sizeof key, "%s.context_length", sm->gguf.arch);
	sm->gguf.context_length = (int64_t)gguf_get_u64(f, key, 0);
	snprintf(key, sizeof key, "%s.embedding_length", sm->gguf.arch);
	sm->gguf.embedding_length = (int64_t)gguf_get_u64(f, key, 0);
	sm->gguf.file_type = gguf_get_u32(f, "general.file_type", 0);
	snprintf(key, sizeof key, "%s.pooling_type", sm->gguf.arch);
	sm->gguf.pooling = gguf_find_kv(f, key) != NULL;
	snprintf(key, sizeof key, "%s.vision.block_count", sm->gguf.arch);
	sm->gguf.vision = gguf_find_kv(f, key) != NULL;
	struct gguf_str ct = gguf_get_str(f, "tokenizer.chat_template", (struct gguf_str){NULL, 0});
	if (ct.ptr && ct.len && (sm->jinja_src = malloc((size_t)ct.len + 1))) {
		memcpy(sm->jinja_src, ct.ptr, (size_t)ct.len);
		sm->jinja_src[ct.len] = 0;
		sm->jinja_len = (size_t)ct.len;
	}
	gguf_close(f);
	facts_put(sm->m->model_path, sm);
}

/* The GGUF's Jinja template is used when the manifest has no template layer and the GGUF carries one that
 * parses (one that does not keeps today's {{ .Prompt }}, with the reason in jinja_error). */
static void use_gguf_template(struct rn_srv_model *sm)
{
	if (sm->jinja_src && !sm->m->has_template) {
		struct mf_jinja_error je = {0};
		if (mf_jinja_parse(sm->jinja_src, sm->jinja_len, &sm->jinja, &je) != MF_JINJA_OK) {
			sm->jinja = NULL;
			snprintf(sm->jinja_error, sizeof sm->jinja_error, "%.31s: %.400s (line %d)", je.type, je.message,
				 je.line);
		}
	}
	if (!sm->jinja) {
		free(sm->jinja_src);
		sm->jinja_src = NULL;
		sm->jinja_len = 0;
	}
}

struct rn_srv_model *rn_srv_model_load(const struct mf_store *st, const char *name, int *status, char *msg,
				       size_t msg_size)
{
	struct mf_error e = {0};
	struct mf_model *m = NULL;
	if (mf_model_load(st, name, &m, &e) != MF_OK) {
		*status = e.http_status ? e.http_status : 500;
		snprintf(msg, msg_size, "%s", e.msg);
		return NULL;
	}
	struct rn_srv_model *sm = calloc(1, sizeof *sm);
	if (!sm) {
		mf_model_free(m);
		*status = 500;
		snprintf(msg, msg_size, "out of memory");
		return NULL;
	}
	sm->m = m;
	const char *tt = m->template_text ? m->template_text : MF_DEFAULT_TEMPLATE;
	struct mf_tpl_error te = {0};
	if (mf_tpl_parse(tt, strlen(tt), &sm->tpl, &te) != MF_TPL_OK) {
		sm->tpl = NULL;
		snprintf(sm->tpl_error, sizeof sm->tpl_error, "%s", te.msg);
	}
	if (m->model_path)
		read_gguf_facts(sm);
	use_gguf_template(sm);

	/* Ollama's order: config, GGUF, projector, template, parser, family */
	for (size_t i = 0; i < m->config.n_capabilities; i++) {
		int c = cap_from_name(m->config.capabilities[i]);
		if (c >= 0)
			add_cap(sm, (enum rn_cap)c);
	}
	bool is_gguf = !m->config.model_format[0] || strcmp(m->config.model_format, "gguf") == 0;
	if (m->model_path && is_gguf && sm->gguf_ok) {
		add_cap(sm, sm->gguf.pooling ? RN_CAP_EMBEDDING : RN_CAP_COMPLETION);
		if (sm->gguf.vision)
			add_cap(sm, RN_CAP_VISION);
	}
	if (m->n_projectors)
		add_cap(sm, RN_CAP_VISION);
	if (sm->jinja) {
		bool tools, thinking;
		rn_jchat_caps(sm->jinja, sm->jinja_src, sm->jinja_len, &tools, &thinking);
		if (tools)
			add_cap(sm, RN_CAP_TOOLS);
		if (thinking)
			add_cap(sm, RN_CAP_THINKING);
	} else if (sm->tpl) {
		if (mf_tpl_uses(sm->tpl, "tools"))
			add_cap(sm, RN_CAP_TOOLS);
		if (mf_tpl_uses(sm->tpl, "suffix"))
			add_cap(sm, RN_CAP_INSERT);
		const char *o = mf_tpl_think_open(sm->tpl), *c = mf_tpl_think_close(sm->tpl);
		if (o && c && *o && *c) {
			add_cap(sm, RN_CAP_THINKING);
			snprintf(sm->think_open, sizeof sm->think_open, "%s", o);
			snprintf(sm->think_close, sizeof sm->think_close, "%s", c);
		}
	}
	if (strcmp(m->config.model_family, "gptoss") == 0 || strcmp(m->config.model_family, "gpt-oss") == 0)
		add_cap(sm, RN_CAP_THINKING);
	return sm;
}

void rn_srv_model_free(struct rn_srv_model *sm)
{
	if (!sm)
		return;
	mf_tpl_free(sm->tpl);
	mf_jinja_free(sm->jinja);
	free(sm->jinja_src);
	mf_model_free(sm->m);
	free(sm);
}

int rn_srv_model_check(const struct rn_srv_model *sm, const enum rn_cap *want, int n_want, char *msg, size_t msg_size)
{
	char missing[256] = "";
	size_t w = 0;
	bool thinking = false;
	for (int i = 0; i < n_want; i++) {
		if (rn_srv_model_has(sm, want[i]))
			continue;
		const char *name = want[i] == RN_CAP_IMAGE ? "image generation" : rn_cap_name(want[i]);
		w += (size_t)snprintf(missing + w, sizeof missing - (w < sizeof missing ? w : sizeof missing), "%s%s",
				      w ? "\n" : "", name);
		if (w >= sizeof missing)
			w = sizeof missing - 1;
		thinking |= want[i] == RN_CAP_THINKING;
	}
	if (!w)
		return 0;
	const char *suffix = "";
	if (thinking && (strcmp(sm->m->config.model_family, "qwen3") == 0 || strcmp(sm->m->name.model, "deepseek-r1") == 0))
		suffix = ". Pull the model again to get the latest version with full thinking support";
	snprintf(msg, msg_size, "%s does not support %s%s", sm->m->full_name, missing, suffix);
	return 400;
}

const char *rn_srv_model_quantization(const struct rn_srv_model *sm)
{
	const char *q = sm->m->config.file_type;
	if ((!q[0] || strcmp(q, "unknown") == 0) && sm->gguf_ok) {
		const char *g = mf_file_type_name(sm->gguf.file_type);
		if (g && g[0] && strcmp(g, "unknown") != 0)
			return g;
	}
	return q;
}

void rn_srv_model_write_details(const struct rn_srv_model *sm, struct ob_jw *w, bool with_lengths, bool quant_fallback)
{
	const struct mf_config *c = &sm->m->config;
	ob_jw_obj(w);
	ob_jw_key(w, "parent_model");
	ob_jw_string(w, sm->m->parent_model ? sm->m->parent_model : "");
	ob_jw_key(w, "format");
	ob_jw_string(w, c->model_format);
	ob_jw_key(w, "family");
	ob_jw_string(w, c->model_family);
	ob_jw_key(w, "families");
	if (c->model_families) {
		ob_jw_arr(w);
		for (size_t i = 0; i < c->n_model_families; i++)
			ob_jw_string(w, c->model_families[i]);
		ob_jw_arr_end(w);
	} else {
		ob_jw_null(w);
	}
	ob_jw_key(w, "parameter_size");
	ob_jw_string(w, c->model_type);
	ob_jw_key(w, "quantization_level");
	ob_jw_string(w, quant_fallback ? rn_srv_model_quantization(sm) : c->file_type);
	if (with_lengths) {
		int64_t cl = c->context_length ? c->context_length : sm->gguf.context_length;
		int64_t el = c->embedding_length ? c->embedding_length : sm->gguf.embedding_length;
		if (cl) {
			ob_jw_key(w, "context_length");
			ob_jw_int(w, cl);
		}
		if (el) {
			ob_jw_key(w, "embedding_length");
			ob_jw_int(w, el);
		}
	}
	ob_jw_obj_end(w);
}

void rn_srv_model_write_caps(const struct rn_srv_model *sm, struct ob_jw *w)
{
	ob_jw_arr(w);
	for (int i = 0; i < sm->n_caps; i++)
		ob_jw_string(w, rn_cap_name(sm->caps[i]));
	ob_jw_arr_end(w);
}

/* ---------------------------------------------------------------------------------------------------- */
/* GGUF metadata as JSON */

static void write_scalar(struct ob_jw *w, const struct gguf_value *v)
{
	switch (v->type) {
	case GGUF_VT_U8: case GGUF_VT_U16: case GGUF_VT_U32: case GGUF_VT_U64:
		ob_jw_uint(w, v->v.u);
		break;
	case GGUF_VT_I8: case GGUF_VT_I16: case GGUF_VT_I32: case GGUF_VT_I64:
		ob_jw_int(w, v->v.i);
		break;
	case GGUF_VT_F32:
		ob_jw_float32(w, (float)v->v.f);
		break;
	case GGUF_VT_F64:
		ob_jw_float64(w, v->v.f);
		break;
	case GGUF_VT_BOOL:
		ob_jw_bool(w, v->v.b);
		break;
	case GGUF_VT_STRING:
		ob_jw_stringn(w, v->v.str.ptr, (size_t)v->v.str.len);
		break;
	default:
		ob_jw_null(w);
	}
}

static void write_array(struct ob_jw *w, const struct gguf_array *a, bool verbose)
{
	if (!verbose && a->n > 0) {
		ob_jw_null(w);
		return;
	}
	ob_jw_arr(w);
	for (uint64_t i = 0; i < a->n && ob_jw_status(w) == OB_JW_OK; i++) {
		switch (a->type) {
		case GGUF_VT_STRING: {
			struct gguf_str s = gguf_arr_str(a, i);
			ob_jw_stringn(w, s.ptr, (size_t)s.len);
			break;
		}
		case GGUF_VT_ARRAY:
			write_array(w, gguf_arr_arr(a, i), verbose);
			break;
		case GGUF_VT_F32:
			ob_jw_float32(w, gguf_arr_f32(a, i));
			break;
		case GGUF_VT_F64:
			ob_jw_float64(w, gguf_arr_float(a, i));
			break;
		case GGUF_VT_BOOL:
			ob_jw_bool(w, gguf_arr_u8(a, i) != 0);
			break;
		case GGUF_VT_U64:
			ob_jw_uint(w, gguf_arr_u64(a, i));
			break;
		default:
			ob_jw_int(w, gguf_arr_int(a, i));
		}
	}
	ob_jw_arr_end(w);
}

static int cmp_kv(const void *a, const void *b)
{
	const struct gguf_kv *x = *(const struct gguf_kv *const *)a, *y = *(const struct gguf_kv *const *)b;
	return strcmp(x->key, y->key);
}

void rn_gguf_write_model_info(const struct gguf_file *f, bool verbose, struct ob_jw *w)
{
	uint64_t n = gguf_kv_count(f);
	const struct gguf_kv **kv = calloc(n ? n : 1, sizeof *kv);
	if (!kv) {
		w->status = OB_JW_NOMEM;
		return;
	}
	size_t k = 0;
	for (uint64_t i = 0; i < n; i++) {
		const struct gguf_kv *x = gguf_kv_at(f, i);
		if (strcmp(x->key, "general.name") == 0 || strcmp(x->key, "tokenizer.chat_template") == 0)
			continue;
		kv[k++] = x;
	}
	qsort(kv, k, sizeof *kv, cmp_kv);
	ob_jw_obj(w);
	for (size_t i = 0; i < k; i++) {
		if (i && strcmp(kv[i]->key, kv[i - 1]->key) == 0)
			continue; /* a Go map keeps one value per key */
		ob_jw_key(w, kv[i]->key);
		if (kv[i]->val.type == GGUF_VT_ARRAY)
			write_array(w, &kv[i]->val.v.arr, verbose);
		else
			write_scalar(w, &kv[i]->val);
	}
	ob_jw_obj_end(w);
	free(kv);
}

void rn_gguf_write_tensors(const struct gguf_file *f, struct ob_jw *w)
{
	ob_jw_arr(w);
	uint64_t n = gguf_tensor_count(f);
	for (uint64_t i = 0; i < n; i++) {
		const struct gguf_tensor *t = gguf_tensor_at(f, i);
		ob_jw_obj(w);
		ob_jw_key(w, "name");
		ob_jw_string(w, t->name);
		ob_jw_key(w, "type");
		ob_jw_string(w, gguf_type_name(t->type));
		ob_jw_key(w, "shape");
		ob_jw_arr(w);
		for (uint32_t d = 0; d < t->n_dims; d++)
			ob_jw_uint(w, (uint64_t)t->ne[d]);
		ob_jw_arr_end(w);
		ob_jw_obj_end(w);
	}
	ob_jw_arr_end(w);
}
