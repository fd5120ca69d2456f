/* runner/load.c — load-time parameters: what a request or a command line asks, and its defaults applied
 * once (runner/load.h).
 *
 * Where the weights go (backend, device, mapped or copied) is the loader's decision and is not made here.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "modelfile/params.h"
#include "runner/load.h"

void rn_load_params_init(struct rn_load_params *p)
{
	memset(p, 0, sizeof *p);
	p->num_gpu = -1;
	p->main_gpu = -1;
	p->use_mmap = -1;
	p->backend = -1;
	p->cache_bytes = -1;
}

void rn_load_params_from_options(struct rn_load_params *p, const struct mf_options *o)
{
	rn_load_params_init(p);
	p->n_ctx = o->num_ctx > 0 ? (int)(o->num_ctx > INT32_MAX ? INT32_MAX : o->num_ctx) : 0;
	if ((o->set & (1ULL << MF_OPT_NUM_BATCH)) && o->num_batch > 0)
		p->n_batch = (int)(o->num_batch > INT32_MAX ? INT32_MAX : o->num_batch);
	p->n_threads = o->num_thread > 0 ? (int)o->num_thread : 0;
	p->rope_freq_base = o->rope_freq_base;
	p->rope_freq_scale = o->rope_freq_scale;
	p->num_gpu = (int)o->num_gpu;
	if (o->set & (1ULL << MF_OPT_MAIN_GPU))
		p->main_gpu = (int)o->main_gpu;
	if (o->set & (1ULL << MF_OPT_USE_MMAP))
		p->use_mmap = o->use_mmap;
}

void rn_load_params_resolve(struct rn_load_params *p, const struct rn_load_defaults *d)
{
	if (p->n_ctx <= 0)
		p->n_ctx = d->n_ctx > 0 ? d->n_ctx : RN_LOAD_DEFAULT_CTX;
	if (d->n_ctx_max > 0 && p->n_ctx > d->n_ctx_max)
		p->n_ctx = d->n_ctx_max; /* as Ollama: num_ctx is capped at the model's context length */
	if (p->n_ctx < RN_LOAD_MIN_CTX)
		p->n_ctx = RN_LOAD_MIN_CTX;
	if (p->n_batch <= 0)
		p->n_batch = !d->embedding                  ? RN_LOAD_DEFAULT_BATCH
			     : p->n_ctx < RN_LOAD_EMBED_BATCH ? p->n_ctx
							      : RN_LOAD_EMBED_BATCH;
	p->n_seq = d->embedding || d->n_seq <= 0 ? 1 : d->n_seq;
	p->kv_type = d->kv_type;
	p->device = p->main_gpu > 0 ? p->main_gpu : 0;
}

bool rn_load_params_equal(const struct rn_load_params *a, const struct rn_load_params *b)
{
	return a->n_ctx == b->n_ctx && a->n_batch == b->n_batch && a->n_threads == b->n_threads &&
	       a->rope_freq_base == b->rope_freq_base && a->rope_freq_scale == b->rope_freq_scale &&
	       a->num_gpu == b->num_gpu && a->main_gpu == b->main_gpu && a->use_mmap == b->use_mmap &&
	       a->n_seq == b->n_seq && a->kv_type == b->kv_type;
}
