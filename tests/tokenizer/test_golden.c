/* tests/tokenizer/test_golden.c — the tokenizer of both real test models against llama.cpp's golden ids.
 *
 * Every corpus string, parse_special on and off, for Qwen2.5-Coder (BPE, pre "qwen2") and SmolLM2 (BPE, pre
 * "smollm"), plus SmolLM2's vocabulary under the "gpt-2", "llama-bpe" and default pre-tokenizers (golden data
 * from copies of the file with tokenizer.ggml.pre changed; here through rn_tok_options.pre_override). Also:
 * pieces, round trips, the streaming decoder, the end-of-generation sets llama.cpp prints, and the same
 * results from four threads encoding at once. Skips (77) when a model file is not installed.
 */
#include "config.h"

#include <pthread.h>

#include "tests/tokenizer/golden.h"

struct thread_arg {
	const struct rn_tok *tok;
	const struct corpus *c;
	int32_t **ids;
	size_t *n;
	int start;
	int bad;
};

static void *encode_all(void *p)
{
	struct thread_arg *a = p;
	for (int rep = 0; rep < 3; rep++) {
		for (size_t k = 0; k < a->c->n; k++) {
			size_t i = (k + (size_t)a->start * 97) % a->c->n;
			int32_t *ids;
			size_t n;
			struct rn_tok_error err;
			if (rn_tok_encode_alloc(a->tok, a->c->s[i].p, a->c->s[i].n, false, true, &ids, &n, &err) != RN_TOK_OK ||
			    !same_ids(ids, n, a->ids[i], a->n[i]))
				a->bad++;
			free(ids);
		}
	}
	return NULL;
}

static void test_threads(const struct rn_tok *tok, const struct corpus *c)
{
	int32_t **ids = calloc(c->n, sizeof *ids);
	size_t *n = calloc(c->n, sizeof *n);
	struct rn_tok_error err;
	for (size_t i = 0; i < c->n; i++)
		CHECK(rn_tok_encode_alloc(tok, c->s[i].p, c->s[i].n, false, true, &ids[i], &n[i], &err) == RN_TOK_OK);
	pthread_t th[4];
	struct thread_arg args[4];
	for (int t = 0; t < 4; t++) {
		args[t] = (struct thread_arg){tok, c, ids, n, t, 0};
		CHECK(pthread_create(&th[t], NULL, encode_all, &args[t]) == 0);
	}
	int bad = 0;
	for (int t = 0; t < 4; t++) {
		pthread_join(th[t], NULL);
		bad += args[t].bad;
	}
	CHECKF(bad == 0, "%d concurrent encodes differ from the single-threaded result", bad);
	for (size_t i = 0; i < c->n; i++)
		free(ids[i]);
	free(ids);
	free(n);
}

/* For these pre-tokenizers llama.cpp does not clean spaces: llama_detokenize(remove_special = false,
 * unparse_special = true) is the pieces joined. */
static void check_detokenize(const struct rn_tok *tok, const struct corpus *c)
{
	int bad = 0;
	for (size_t i = 0; i < c->n; i++) {
		int32_t *ids;
		size_t n, len = 0, cat_n = 0;
		struct rn_tok_error err;
		if (rn_tok_encode_alloc(tok, c->s[i].p, c->s[i].n, false, true, &ids, &n, &err) != RN_TOK_OK) {
			bad++;
			continue;
		}
		for (size_t k = 0; k < n; k++) {
			const char *p;
			size_t pn;
			if (rn_tok_piece(tok, ids[k], true, &p, &pn) == RN_TOK_OK)
				cat_n += pn;
		}
		char *cat = malloc(cat_n + 1), *out = malloc(cat_n + 1);
		cat_n = 0;
		for (size_t k = 0; k < n; k++) {
			const char *p;
			size_t pn;
			if (rn_tok_piece(tok, ids[k], true, &p, &pn) == RN_TOK_OK) {
				memcpy(cat + cat_n, p, pn);
				cat_n += pn;
			}
		}
		if (rn_tok_detokenize(tok, ids, n, false, true, out, cat_n + 1, &len) != RN_TOK_OK || len != cat_n ||
		    memcmp(out, cat, len) != 0)
			bad++;
		free(cat);
		free(out);
		free(ids);
	}
	CHECKF(bad == 0, "%d detokenized strings differ from the joined pieces", bad);
}

static void test_qwen2(const char *path, const struct corpus *c)
{
	struct gguf_file *f;
	struct rn_tok *tok = load_tok(path, NULL, &f);
	if (tok) {
		CHECK(rn_tok_kind(tok) == RN_TOK_KIND_BPE);
		CHECK_STREQ(rn_tok_pre_name(tok), "qwen2");
		CHECK_EQ_INT(rn_tok_n_vocab(tok), 151936);
		CHECK_EQ_INT(rn_tok_bos(tok), 151643);
		CHECK_EQ_INT(rn_tok_eos(tok), 151645);
		CHECK(!rn_tok_add_bos(tok) && !rn_tok_add_eos(tok));
		CHECK_EQ_INT(rn_tok_specials(tok)->nl, 198);
		CHECK_EQ_INT(rn_tok_specials(tok)->fim_pre, 151659);
		CHECK_EQ_INT(rn_tok_specials(tok)->fim_rep, 151663);
		/* llama.cpp: "EOG token = 128247 '</s>' ... 151643 151645 151662 151663 151664" */
		static const int32_t want_eog[] = {128247, 151643, 151645, 151662, 151663, 151664};
		const int32_t *eog;
		size_t n_eog = rn_tok_eog_ids(tok, &eog);
		CHECKF(n_eog == 6 && memcmp(eog, want_eog, sizeof want_eog) == 0, "qwen2 has %zu end-of-generation ids", n_eog);
		CHECK(rn_tok_is_control(tok, 128247)); /* "</s>": a normal token made control by its text */
		CHECK(rn_tok_attr(tok, 151657) & RN_TOK_ATTR_USER_DEFINED);
		CHECK(rn_tok_attr(tok, 151700) & RN_TOK_ATTR_UNUSED);
		struct golden_stats st = {0};
		check_golden("qwen2", tok, c, &st);
		print_stats("qwen2 (Qwen2.5-Coder-0.5B)", &st);
		check_detokenize(tok, c);
		test_threads(tok, c);
	}
	rn_tok_free(tok);
	gguf_close(f);
}

static void test_llama(const char *path, const struct corpus *c)
{
	static const struct {
		const char *golden, *pre;
	} sets[] = {
		{"llama", NULL},
		{"llama-gpt2", "gpt-2"},
		{"llama-llama3", "llama-bpe"},
		{"llama-default", ""},
	};
	for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++) {
		struct gguf_file *f;
		struct rn_tok *tok = load_tok(path, sets[k].pre, &f);
		if (tok) {
			if (k == 0) {
				CHECK_STREQ(rn_tok_pre_name(tok), "smollm");
				CHECK_EQ_INT(rn_tok_n_vocab(tok), 49152);
				CHECK_EQ_INT(rn_tok_bos(tok), 1);
				CHECK_EQ_INT(rn_tok_eos(tok), 2);
				/* llama.cpp: "EOG token = 0 '<|endoftext|>'", "2 '<|im_end|>'", "4 '<reponame>'" */
				const int32_t *eog;
				size_t n_eog = rn_tok_eog_ids(tok, &eog);
				CHECK(n_eog == 3 && eog[0] == 0 && eog[1] == 2 && eog[2] == 4);
				CHECK(!rn_tok_is_eog(tok, 1));
				check_detokenize(tok, c);
			}
			struct golden_stats st = {0};
			check_golden(sets[k].golden, tok, c, &st);
			char label[96];
			snprintf(label, sizeof label, "%s (SmolLM2-135M, pre \"%s\")", sets[k].golden, rn_tok_pre_name(tok));
			print_stats(label, &st);
		}
		rn_tok_free(tok);
		gguf_close(f);
	}
}

int main(void)
{
	char *qwen2 = strdup(tm_require_model("qwen2")); /* static storage: copy before the next call */
	char *llama = strdup(tm_require_model("llama"));
	struct corpus c = load_corpus();
	CHECKF(c.n >= 200, "corpus has %zu strings", c.n);
	test_qwen2(qwen2, &c);
	test_llama(llama, &c);
	for (size_t i = 0; i < c.n; i++)
		free(c.s[i].p);
	free(c.s);
	free(c.raw);
	free(qwen2);
	free(llama);
	return check_done();
}
