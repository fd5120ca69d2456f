/* tests/server/test_sched.c — the scheduler (runner/server/sched.c) with the small real llama model (SmolLM2-135M):
 * load on first use and reuse, keep_alive expiry (0 = at once, N seconds, forever), reload when a load-time
 * option changes, OLLAMA_MAX_LOADED_MODELS eviction, slot queueing with OLLAMA_MAX_QUEUE (503), job events
 * and final stats, and cancellation of running and queued jobs.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runner/server/sched.h"
#include "tests/check.h"
#include "tests/testmodel.h"

static int n_loaded(struct rn_sched *s, int *ctx)
{
	struct rn_sched_info *v = NULL;
	size_t n = 0;
	CHECK(rn_sched_list(s, &v, &n) == 0);
	if (ctx && n)
		*ctx = v[0].context_length;
	rn_sched_info_free(v, n);
	return (int)n;
}

static bool wait_loaded(struct rn_sched *s, int want, int ms)
{
	for (int i = 0; i < ms / 10; i++) {
		if (n_loaded(s, NULL) == want)
			return true;
		usleep(10000);
	}
	return n_loaded(s, NULL) == want;
}

static struct rn_job *submit(struct rn_sched *s, struct rn_runner *r, int n_predict, struct rn_sched_error *e)
{
	const struct rn_tok *tok = rn_runner_tok(r);
	int32_t *ids = NULL;
	size_t n = 0;
	struct rn_tok_error te;
	CHECK(rn_tok_encode_alloc(tok, "The capital of France is", 24, true, true, &ids, &n, &te) == RN_TOK_OK);
	struct rn_request rq;
	rn_request_default(&rq);
	rq.prompt = ids;
	rq.n_prompt = n;
	rq.sampling.temperature = 0;
	rq.num_predict = n_predict;
	struct rn_job *j = rn_job_submit(s, r, &rq, e);
	free(ids);
	return j;
}

/* Drains a job; returns the number of text events and fills the outcome. */
static int drain(struct rn_job *j, enum rn_done_reason *reason, struct rn_engine_stats *st)
{
	int n = 0;
	for (;;) {
		struct rn_job_event *e = rn_job_next(j, NULL, NULL);
		if (!e)
			return -1;
		bool done = e->kind == RN_JOB_DONE;
		n += !done;
		rn_job_event_free(e);
		if (done)
			break;
	}
	rn_job_result(j, reason, st, NULL);
	return n;
}

int main(void)
{
	const char *path = tm_require_model("llama");
	char alias[4096];
	snprintf(alias, sizeof alias, "%s/orun-test-sched-%d.gguf", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
		 (int)getpid());
	if (symlink(path, alias) != 0)
		SKIP("cannot create a symlink in the temporary folder");

	struct rn_sched_config c = {.num_parallel = 1, .max_loaded = 1, .max_queue = 2,
				    .keep_alive_ns = 300LL * 1000000000LL, .backend = -1};
	struct rn_sched *s = rn_sched_new(&c);
	CHECK(s != NULL);
	struct rn_load_params o;
	rn_load_params_init(&o);
	o.n_ctx = 256;
	o.n_batch = 64;
	struct rn_sched_model m = {.model_path = path, .name = "smol:latest", .digest = "abc", .details_json = "{}"};
	struct rn_sched_error e = {0};

	/* load on first use, reuse after */
	struct rn_runner *r1 = rn_sched_acquire(s, &m, &o, RN_KEEP_ALIVE_UNSET, NULL, NULL, &e);
	CHECKF(r1 != NULL, "%s", e.msg);
	if (!r1)
		return check_done();
	struct rn_runner *r2 = rn_sched_acquire(s, &m, &o, RN_KEEP_ALIVE_UNSET, NULL, NULL, &e);
	CHECK(r2 == r1);
	int ctx = 0;
	CHECK_EQ_INT(n_loaded(s, &ctx), 1);
	CHECK_EQ_INT(ctx, 256);

	/* a generation: text events, then the final event with stats */
	struct rn_job *j = submit(s, r1, 5, &e);
	CHECKF(j != NULL, "%s", e.msg);
	enum rn_done_reason reason;
	struct rn_engine_stats st;
	int n = drain(j, &reason, &st);
	CHECK(n >= 1 && n <= 5);
	CHECK_EQ_INT(reason, RN_DONE_LENGTH);
	CHECK_EQ_INT(st.n_eval, 5);
	CHECK(st.n_prompt > 3 && st.prompt_ns > 0);
	rn_job_free(j);

	/* slots: one runs, two wait (max_queue 2), the next is refused with Ollama's 503 */
	struct rn_job *a = submit(s, r1, 200, &e);
	CHECK(a != NULL);
	struct rn_job_event *first = rn_job_next(a, NULL, NULL); /* a is running */
	CHECK(first != NULL);
	rn_job_event_free(first);
	struct rn_job *b = submit(s, r1, 3, &e), *cj = submit(s, r1, 3, &e);
	CHECK(b && cj);
	CHECK_EQ_INT(rn_sched_queue_depth(s), 2);
	struct rn_job *d = submit(s, r1, 3, &e);
	CHECK(d == NULL);
	CHECK_EQ_INT(e.status, 503);
	CHECK_STREQ(e.msg, "server busy, please try again.  maximum pending requests exceeded");
	/* cancel the queued c and the running a: b then runs to its end */
	rn_job_free(cj);
	CHECK_EQ_INT(rn_sched_queue_depth(s), 1);
	rn_job_free(a); /* running: cancelled, waits for the engine's final event */
	n = drain(b, &reason, &st);
	CHECK_EQ_INT(st.n_eval, 3);
	rn_job_free(b);
	CHECK_EQ_INT(rn_sched_queue_depth(s), 0);

	/* keep_alive 0 on the last release: unloaded at once */
	rn_sched_release(s, r2);
	CHECK_EQ_INT(n_loaded(s, NULL), 1);
	r1 = rn_sched_acquire(s, &m, &o, 0, NULL, NULL, &e);
	rn_sched_release(s, r1);
	rn_sched_release(s, r1);
	CHECK(wait_loaded(s, 0, 3000));

	/* keep_alive 1 s: stays, then goes */
	r1 = rn_sched_acquire(s, &m, &o, 1000000000LL, NULL, NULL, &e);
	CHECK(r1 != NULL);
	rn_sched_release(s, r1);
	CHECK_EQ_INT(n_loaded(s, NULL), 1);
	CHECK(wait_loaded(s, 0, 4000));

	/* another num_ctx reloads */
	r1 = rn_sched_acquire(s, &m, &o, RN_KEEP_ALIVE_UNSET, NULL, NULL, &e);
	rn_sched_release(s, r1);
	struct rn_load_params o2 = o;
	o2.n_ctx = 512;
	r2 = rn_sched_acquire(s, &m, &o2, RN_KEEP_ALIVE_UNSET, NULL, NULL, &e);
	CHECKF(r2 != NULL, "%s", e.msg);
	CHECK_EQ_INT(n_loaded(s, &ctx), 1);
	CHECK_EQ_INT(ctx, 512);
	rn_sched_release(s, r2);

	/* OLLAMA_MAX_LOADED_MODELS=1: another model evicts the idle one */
	struct rn_sched_model m2 = m;
	m2.model_path = alias;
	m2.name = "smol2:latest";
	r1 = rn_sched_acquire(s, &m2, &o, RN_KEEP_ALIVE_UNSET, NULL, NULL, &e);
	CHECKF(r1 != NULL, "%s", e.msg);
	struct rn_sched_info *v = NULL;
	size_t nv = 0;
	CHECK(rn_sched_list(s, &v, &nv) == 0);
	CHECK(nv == 1 && strcmp(v[0].name, "smol2:latest") == 0);
	CHECK(nv == 1 && v[0].size > 0 && v[0].size_vram == 0);
	rn_sched_info_free(v, nv);
	rn_sched_release(s, r1);

	/* a model that cannot load: 500 with the engine's message, nothing left loaded */
	struct rn_sched_model bad = m;
	bad.model_path = "/nonexistent/model.gguf";
	CHECK(rn_sched_acquire(s, &bad, &o, RN_KEEP_ALIVE_UNSET, NULL, NULL, &e) == NULL);
	CHECK_EQ_INT(e.status, 500);
	CHECK(strstr(e.msg, "nonexistent") != NULL);

	rn_sched_free(s);
	unlink(alias);
	return check_done();
}
