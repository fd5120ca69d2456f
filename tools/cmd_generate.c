/* tools/cmd_generate.c — `orun generate`: run a raw prompt through a GGUF model with no server and print
 * the text as it is generated (or, with --json, one JSON line per token and a final line with timings).
 *
 * The prompt is tokenized as llama-server does for a raw completion (BOS added when the model wants it,
 * special tokens recognised). Sampling options and their defaults are Ollama's.
 */
#include "config.h"

#include "tools/argnum.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "runner/engine.h"
#include "runner/model.h"
#include "runner/tokenizer/tokenizer.h"
#include "tools/commands.h"

#define GEN_MAX_STOP RN_ENGINE_MAX_STOP
#define GEN_MAX_PROMPT_FILE (512u << 20) /* bytes of a -f prompt file */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: orun generate -m FILE -p PROMPT [options]\n\n"
		"Runs a raw prompt (no template) through a GGUF model on this machine and prints the text as it is\n"
		"generated.\n\n"
		"Options:\n"
		"  -m, --model FILE        GGUF model file (llama, qwen2 or qwen3)\n"
		"  -p, --prompt TEXT       the prompt\n"
		"  -f, --file FILE         read the prompt from FILE ('-' = standard input)\n"
		"  -n, --num-predict N     tokens to generate (-1 = until end of generation, capped at 10 x ctx;\n"
		"                          default -1)\n"
		"      --temperature T     sampling temperature (default 0.8; 0 = greedy)\n"
		"      --top-k N           (default 40)   --top-p P (default 0.9)   --min-p P (default 0)\n"
		"      --typical-p P       (default 1)    --repeat-penalty R (default 1)\n"
		"      --repeat-last-n N   (default 64)   --presence-penalty P   --frequency-penalty P\n"
		"      --seed S            random seed (default -1 = random; same seed, same output)\n"
		"      --stop TEXT         stop string (repeatable, at most %d)\n"
		"      --ctx N             context length, tokens (num_ctx; default 4096, capped at the model's)\n"
		"      --batch N           prompt tokens per forward pass (num_batch; default 512)\n"
		"      --keep N            tokens kept on context shift (num_keep; default 4)\n"
		"      --kv-type T         KV cache type: f16 (default) or q8_0 (default from OLLAMA_KV_CACHE_TYPE)\n"
		"      --threads N         CPU threads (default: physical cores)\n"
		"      --no-shift          stop instead of shifting the context when it is full\n"
		"      --json              one JSON object per line: {\"token\":ID,\"text\":...} then a final line\n"
		"                          with the prompt ids, counts and timings\n"
		"  -h, --help              show this help\n",
		GEN_MAX_STOP);
}

static char *read_all(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 0, n = 0;
	char *buf = NULL;
	for (;;) {
		/* room for at least 4 KiB more, up to the ceiling */
		if (ob_grow(&buf, &cap, n + 4096, 1, 4096, GEN_MAX_PROMPT_FILE) != OB_GROW_OK) {
			free(buf);
			buf = NULL;
			break;
		}
		size_t r = fread(buf + n, 1, cap - n - 1, f);
		if (r == 0)
			break;
		n += r;
	}
	if (f != stdin)
		fclose(f);
	if (buf) {
		buf[n] = 0;
		*len = n;
	}
	return buf;
}

struct gen_state {
	bool json;
	struct ob_jw jw;
	int32_t *ids;
	size_t n_ids, cap_ids;
	enum rn_done_reason reason;
	struct rn_engine_stats stats;
	char err[512];
};

static void print_json_line(struct ob_jw *w)
{
	const char *s = ob_jw_str(w);
	if (s)
		printf("%s\n", s);
	ob_jw_reset(w);
}

static int on_event(void *user, const struct rn_event *ev)
{
	struct gen_state *g = user;
	if (ev->token >= 0) {
		if (OB_GROW(g->ids, g->cap_ids, g->n_ids + 1, 0) != OB_GROW_OK)
			return 1;
		g->ids[g->n_ids++] = ev->token;
	}
	if (g->json) {
		if (ev->token >= 0 || ev->len) {
			ob_jw_obj(&g->jw);
			ob_jw_key(&g->jw, "token");
			ob_jw_int(&g->jw, ev->token);
			ob_jw_key(&g->jw, "text");
			ob_jw_stringn(&g->jw, ev->text, ev->len);
			ob_jw_obj_end(&g->jw);
			print_json_line(&g->jw);
		}
	} else if (ev->len) {
		fwrite(ev->text, 1, ev->len, stdout);
	}
	fflush(stdout);
	if (ev->done) {
		g->reason = ev->reason;
		if (ev->stats)
			g->stats = *ev->stats;
		if (ev->error)
			snprintf(g->err, sizeof g->err, "%s", ev->error->msg);
	}
	return 0;
}

int cmd_generate(int argc, char **argv)
{
	const char *model = NULL, *prompt = NULL, *prompt_file = NULL, *kv = getenv("OLLAMA_KV_CACHE_TYPE");
	const char *stops[GEN_MAX_STOP];
	int n_stop = 0;
	struct rn_request req;
	rn_request_default(&req);
	struct rn_load_params ep; /* what the flags ask; rn_load_params_resolve completes it */
	rn_load_params_init(&ep);
	enum rn_kv_type kvt;
	bool json = false;
	enum { O_TEMP = 256, O_TOP_K, O_TOP_P, O_MIN_P, O_TYPICAL_P, O_REPEAT_PENALTY, O_REPEAT_LAST_N,
	       O_PRESENCE_PENALTY, O_FREQUENCY_PENALTY, O_SEED, O_STOP, O_KEEP, O_KV_TYPE, O_NO_SHIFT, O_JSON };
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'},
		{"model", required_argument, NULL, 'm'},
		{"prompt", required_argument, NULL, 'p'},
		{"file", required_argument, NULL, 'f'},
		{"num-predict", required_argument, NULL, 'n'},
		{"temperature", required_argument, NULL, O_TEMP},
		{"temp", required_argument, NULL, O_TEMP},
		{"top-k", required_argument, NULL, O_TOP_K},
		{"top-p", required_argument, NULL, O_TOP_P},
		{"min-p", required_argument, NULL, O_MIN_P},
		{"typical-p", required_argument, NULL, O_TYPICAL_P},
		{"repeat-penalty", required_argument, NULL, O_REPEAT_PENALTY},
		{"repeat-last-n", required_argument, NULL, O_REPEAT_LAST_N},
		{"presence-penalty", required_argument, NULL, O_PRESENCE_PENALTY},
		{"frequency-penalty", required_argument, NULL, O_FREQUENCY_PENALTY},
		{"seed", required_argument, NULL, O_SEED},
		{"stop", required_argument, NULL, O_STOP},
		{"ctx", required_argument, NULL, 'c'},
		{"batch", required_argument, NULL, 'b'},
		{"keep", required_argument, NULL, O_KEEP},
		{"kv-type", required_argument, NULL, O_KV_TYPE},
		{"threads", required_argument, NULL, 't'},
		{"no-shift", no_argument, NULL, O_NO_SHIFT},
		{"json", no_argument, NULL, O_JSON},
		{NULL, 0, NULL, 0},
	};
	const char *cmd = "orun generate";
	char a[64];
	int c, bad = 0;
	optind = 1;
	while (!bad && (c = argopt_next(cmd, argc, argv, "hm:p:f:n:c:b:t:", longopts, a, sizeof a)) != -1) {
		const char *v = optarg;
		switch (c) {
		case 'h':
			usage(stdout);
			return 0;
		case 'm':
			model = v;
			break;
		case 'p':
			prompt = v;
			break;
		case 'f':
			prompt_file = v;
			break;
		case 'n':
			bad = argnum_int(cmd, a, v, -2, INT_MAX, &req.num_predict);
			break;
		case O_TEMP:
			bad = argnum_float(cmd, a, v, false, &req.sampling.temperature);
			break;
		case O_TOP_K:
			bad = argnum_int(cmd, a, v, INT_MIN, INT_MAX, &req.sampling.top_k);
			break;
		case O_TOP_P:
			bad = argnum_float(cmd, a, v, false, &req.sampling.top_p);
			break;
		case O_MIN_P:
			bad = argnum_float(cmd, a, v, false, &req.sampling.min_p);
			break;
		case O_TYPICAL_P:
			bad = argnum_float(cmd, a, v, false, &req.sampling.typical_p);
			break;
		case O_REPEAT_PENALTY:
			bad = argnum_float(cmd, a, v, false, &req.sampling.repeat_penalty);
			break;
		case O_REPEAT_LAST_N:
			bad = argnum_int(cmd, a, v, -1, INT_MAX, &req.sampling.repeat_last_n);
			break;
		case O_PRESENCE_PENALTY:
			bad = argnum_float(cmd, a, v, false, &req.sampling.presence_penalty);
			break;
		case O_FREQUENCY_PENALTY:
			bad = argnum_float(cmd, a, v, false, &req.sampling.frequency_penalty);
			break;
		case O_SEED:
			bad = argnum_i64(cmd, a, v, &req.sampling.seed);
			break;
		case O_STOP:
			if (n_stop == GEN_MAX_STOP) {
				fprintf(stderr, "orun generate: at most %d stop strings\n", GEN_MAX_STOP);
				return 2;
			}
			stops[n_stop++] = v;
			break;
		case 'c':
			bad = argnum_int(cmd, a, v, 1, RN_MAX_CTX, &ep.n_ctx);
			break;
		case 'b':
			bad = argnum_int(cmd, a, v, 1, RN_MAX_BATCH, &ep.n_batch);
			break;
		case O_KEEP:
			bad = argnum_int(cmd, a, v, -1, INT_MAX, &req.num_keep);
			break;
		case O_KV_TYPE:
			kv = v;
			break;
		case 't':
			bad = argnum_int(cmd, a, v, 1, 256, &ep.n_threads);
			break;
		case O_NO_SHIFT:
			req.shift = false;
			break;
		case O_JSON:
			json = true;
			break;
		default: /* '?': argopt_next said why */
			bad = 1;
		}
	}
	if (bad || argopt_no_operands(cmd, argc, argv))
		return 2;
	if (!model || (!prompt && !prompt_file)) {
		fprintf(stderr, "orun generate: -m FILE and -p PROMPT (or -f FILE) are required\n\n");
		usage(stderr);
		return 2;
	}
	struct rn_error err = {0};
	if (rn_kv_type_parse(kv, &kvt, &err) != RN_OK) {
		fprintf(stderr, "orun generate: %s\n", err.msg);
		return 2;
	}
	char *text = NULL;
	size_t text_len = 0;
	if (prompt_file) {
		text = read_all(prompt_file, &text_len);
		if (!text) {
			fprintf(stderr, "orun generate: cannot read %s: %s\n", prompt_file, strerror(errno));
			return 1;
		}
	} else {
		text_len = strlen(prompt);
	}

	int rc = 1;
	struct rn_model *m = NULL;
	struct rn_tok *tok = NULL;
	struct rn_engine *e = NULL;
	int32_t *ids = NULL;
	size_t n_ids = 0;
	struct gen_state g = {.json = json};
	ob_jw_init(&g.jw, 0, OB_JW_NO_HTML_ESCAPE);

	m = rn_model_open(model, &err);
	if (!m) {
		fprintf(stderr, "orun generate: %s\n", err.msg);
		goto out;
	}
	struct rn_tok_error te = {0};
	if (rn_tok_load(m->gguf, NULL, &tok, &te) != RN_TOK_OK) {
		fprintf(stderr, "orun generate: %s: tokenizer: %s\n", model, te.msg);
		goto out;
	}
	if (rn_tok_encode_alloc(tok, text ? text : prompt, text_len, true, true, &ids, &n_ids, &te) != RN_TOK_OK) {
		fprintf(stderr, "orun generate: tokenizing the prompt: %s\n", te.msg);
		goto out;
	}
	if (n_ids == 0) {
		fprintf(stderr, "orun generate: the prompt is empty after tokenization\n");
		goto out;
	}
	rn_load_params_resolve(&ep, &(struct rn_load_defaults){.n_ctx = RN_LOAD_DEFAULT_CTX,
								 .n_ctx_max = m->hp.n_ctx_train, .n_seq = 1, .kv_type = kvt});
	e = rn_engine_new(m, tok, &ep, &err);
	if (!e) {
		fprintf(stderr, "orun generate: %s\n", err.msg);
		goto out;
	}
	req.prompt = ids;
	req.n_prompt = n_ids;
	req.stop = stops;
	req.n_stop = n_stop;
	req.on_event = on_event;
	req.user = &g;
	if (rn_engine_run(e, &req, &err) != RN_OK) {
		fprintf(stderr, "orun generate: %s\n", err.msg);
		goto out;
	}
	if (g.reason == RN_DONE_ERROR) {
		fprintf(stderr, "\norun generate: %s\n", g.err);
		goto out;
	}
	const struct rn_engine_stats *st = &g.stats;
	double pt = (double)st->prompt_ns / 1e9, et = (double)st->eval_ns / 1e9;
	int evaluated = st->n_prompt - st->n_cached;
	if (json) {
		struct ob_jw *w = &g.jw;
		ob_jw_obj(w);
		ob_jw_key(w, "done");
		ob_jw_bool(w, true);
		ob_jw_key(w, "done_reason");
		ob_jw_string(w, rn_done_reason_name(g.reason));
		ob_jw_key(w, "prompt_tokens");
		ob_jw_arr(w);
		for (size_t i = 0; i < n_ids; i++)
			ob_jw_int(w, ids[i]);
		ob_jw_arr_end(w);
		ob_jw_key(w, "tokens");
		ob_jw_arr(w);
		for (size_t i = 0; i < g.n_ids; i++)
			ob_jw_int(w, g.ids[i]);
		ob_jw_arr_end(w);
		ob_jw_key(w, "prompt_eval_count");
		ob_jw_int(w, st->n_prompt);
		ob_jw_key(w, "prompt_eval_duration");
		ob_jw_int(w, st->prompt_ns);
		ob_jw_key(w, "eval_count");
		ob_jw_int(w, st->n_eval);
		ob_jw_key(w, "eval_duration");
		ob_jw_int(w, st->eval_ns);
		ob_jw_key(w, "prompt_tokens_per_second");
		ob_jw_float64(w, pt > 0 ? evaluated / pt : 0);
		ob_jw_key(w, "eval_tokens_per_second");
		ob_jw_float64(w, et > 0 && st->n_eval > 1 ? (st->n_eval - 1) / et : 0);
		ob_jw_key(w, "context_shifts");
		ob_jw_int(w, st->n_shift);
		ob_jw_key(w, "truncated");
		ob_jw_bool(w, st->truncated);
		ob_jw_obj_end(w);
		print_json_line(w);
	} else {
		printf("\n");
		fprintf(stderr, "[%s: prompt %d tokens in %.3f s (%.1f tok/s), generated %d tokens in %.3f s (%.1f tok/s)]\n",
			rn_done_reason_name(g.reason), st->n_prompt, pt, pt > 0 ? evaluated / pt : 0.0, st->n_eval, et,
			et > 0 && st->n_eval > 1 ? (st->n_eval - 1) / et : 0.0);
	}
	rc = 0;
out:
	ob_jw_free(&g.jw);
	free(g.ids);
	free(ids);
	free(text);
	rn_engine_free(e);
	rn_tok_free(tok);
	rn_model_free(m);
	return rc;
}
