/* tests/runner/test_load.c — load-time parameters (runner/load.h): what a request asks, its defaults applied
 * once (Ollama's num_ctx rules: the server's default, the model's cap, at least 4; num_batch; embeddings), and
 * which differences make another instance. */
#include "config.h"

#include <stdint.h>

#include "modelfile/params.h"
#include "runner/load.h"
#include "tests/check.h"

static struct rn_load_params resolved(int n_ctx, int n_batch, const struct rn_load_defaults *d)
{
	struct rn_load_params p;
	rn_load_params_init(&p);
	p.n_ctx = n_ctx;
	p.n_batch = n_batch;
	rn_load_params_resolve(&p, d);
	return p;
}

static void test_resolve(void)
{
	const struct rn_load_defaults serve = {.n_ctx = 32768, .n_ctx_max = 8192, .n_seq = 4, .kv_type = RN_KV_Q8_0};
	struct rn_load_params p = resolved(0, 0, &serve);
	CHECK_EQ_INT(p.n_ctx, 8192); /* the server's default, capped at the model's */
	CHECK_EQ_INT(p.n_batch, RN_LOAD_DEFAULT_BATCH);
	CHECK_EQ_INT(p.n_seq, 4);
	CHECK(p.kv_type == RN_KV_Q8_0);
	CHECK_EQ_INT(p.num_gpu, -1);
	CHECK_EQ_INT(p.use_mmap, -1);
	CHECK_EQ_INT(p.backend, -1);
	CHECK_EQ_INT(p.device, 0);
	CHECK(!p.no_mmap);
	CHECK_EQ_INT(resolved(2048, 64, &serve).n_ctx, 2048);
	CHECK_EQ_INT(resolved(2048, 64, &serve).n_batch, 64);
	CHECK_EQ_INT(resolved(100000, 0, &serve).n_ctx, 8192);
	CHECK_EQ_INT(resolved(1, 0, &serve).n_ctx, RN_LOAD_MIN_CTX);
	/* no server default: 4096; no cap (orun bench) */
	const struct rn_load_defaults tool = {0};
	CHECK_EQ_INT(resolved(0, 0, &tool).n_ctx, RN_LOAD_DEFAULT_CTX);
	CHECK_EQ_INT(resolved(500000, 0, &tool).n_ctx, 500000);
	CHECK_EQ_INT(resolved(0, 0, &tool).n_seq, 1);
	/* a model whose context is below the default */
	const struct rn_load_defaults small = {.n_ctx_max = 2048};
	CHECK_EQ_INT(resolved(0, 0, &small).n_ctx, 2048);
	/* embeddings: one sequence, num_batch min(2048, n_ctx) unless asked */
	const struct rn_load_defaults emb = {.n_ctx = 4096, .n_ctx_max = 8192, .n_seq = 4, .embedding = true};
	CHECK_EQ_INT(resolved(0, 0, &emb).n_batch, RN_LOAD_EMBED_BATCH);
	CHECK_EQ_INT(resolved(1000, 0, &emb).n_batch, 1000);
	CHECK_EQ_INT(resolved(1000, 300, &emb).n_batch, 300);
	CHECK_EQ_INT(resolved(0, 0, &emb).n_seq, 1);
	/* main_gpu picks the device */
	struct rn_load_params g;
	rn_load_params_init(&g);
	g.main_gpu = 2;
	rn_load_params_resolve(&g, &serve);
	CHECK_EQ_INT(g.device, 2);
}

static void test_options(void)
{
	struct mf_options o;
	mf_options_init(&o);
	struct rn_load_params p;
	rn_load_params_from_options(&p, &o); /* nothing asked: Ollama's defaults stay the resolver's to apply */
	CHECK_EQ_INT(p.n_ctx, 0);
	CHECK_EQ_INT(p.n_batch, 0);
	CHECK_EQ_INT(p.n_threads, 0);
	CHECK_EQ_INT(p.num_gpu, -1);
	CHECK_EQ_INT(p.main_gpu, -1);
	CHECK_EQ_INT(p.use_mmap, -1);
	o.num_ctx = (int64_t)1 << 40;
	o.num_batch = 128;
	o.set |= 1ULL << MF_OPT_NUM_BATCH;
	o.num_gpu = 0;
	o.num_thread = 3;
	o.main_gpu = 1;
	o.set |= 1ULL << MF_OPT_MAIN_GPU;
	o.use_mmap = false;
	o.set |= 1ULL << MF_OPT_USE_MMAP;
	o.rope_freq_base = 5e5f;
	rn_load_params_from_options(&p, &o);
	CHECK_EQ_INT(p.n_ctx, INT32_MAX);
	CHECK_EQ_INT(p.n_batch, 128);
	CHECK_EQ_INT(p.num_gpu, 0);
	CHECK_EQ_INT(p.n_threads, 3);
	CHECK_EQ_INT(p.main_gpu, 1);
	CHECK_EQ_INT(p.use_mmap, 0);
	CHECK(p.rope_freq_base == 5e5f);
	mf_options_free(&o);
}

static void test_equal(void)
{
	const struct rn_load_defaults d = {.n_ctx = 4096, .n_ctx_max = 8192};
	struct rn_load_params a = resolved(0, 0, &d), b = resolved(4096, 512, &d);
	CHECK(rn_load_params_equal(&a, &b)); /* asking for the defaults is the same instance */
	b.backend = 1;
	b.no_mmap = true;
	CHECK(rn_load_params_equal(&a, &b)); /* placement is not compared */
	b = resolved(2048, 0, &d);
	CHECK(!rn_load_params_equal(&a, &b));
	b = a;
	b.use_mmap = 0;
	CHECK(!rn_load_params_equal(&a, &b));
	b = a;
	b.num_gpu = 0;
	CHECK(!rn_load_params_equal(&a, &b));
}

int main(void)
{
	test_resolve();
	test_options();
	test_equal();
	return check_done();
}
