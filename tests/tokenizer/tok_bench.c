/* tests/tokenizer/tok_bench.c — tokenizer speed: load time and encode MB/s on a text file (not a test).
 *
 * Usage: tok_bench MODEL.gguf TEXT_FILE [REPEAT]   (prints one line per measurement; parse_special on,
 * add_special as the model asks). Single-threaded; the best of REPEAT runs (default 5) is reported, in wall
 * time and in CPU time (the latter is what to compare on a machine shared with other work).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gguf/gguf.h"
#include "runner/tokenizer/tokenizer.h"

static double clock_s(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

/* CPU time of this (single-threaded) process: on a shared machine it is steadier than wall time */
static double cpu(void)
{
	return clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s MODEL.gguf TEXT_FILE [REPEAT]\n", argv[0]);
		return 2;
	}
	int repeat = argc > 3 ? atoi(argv[3]) : 5;
	FILE *fp = fopen(argv[2], "rb");
	if (!fp) {
		perror(argv[2]);
		return 1;
	}
	fseek(fp, 0, SEEK_END);
	long size = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	char *text = malloc(size > 0 ? (size_t)size : 1);
	if (!text || fread(text, 1, (size_t)size, fp) != (size_t)size) {
		fprintf(stderr, "cannot read %s\n", argv[2]);
		return 1;
	}
	fclose(fp);

	struct gguf_error gerr;
	double t0 = now();
	struct gguf_file *f = gguf_open(argv[1], &gerr);
	if (!f) {
		fprintf(stderr, "%s: %s\n", argv[1], gerr.msg);
		return 1;
	}
	struct rn_tok *tok;
	struct rn_tok_error err;
	if (rn_tok_load(f, NULL, &tok, &err) != RN_TOK_OK) {
		fprintf(stderr, "%s: %s\n", argv[1], err.msg);
		return 1;
	}
	double t_load = now() - t0;
	printf("load: %.1f ms (%u tokens, pre-tokenizer \"%s\")\n", t_load * 1e3, rn_tok_n_vocab(tok), rn_tok_pre_name(tok));

	double best = 1e30, best_cpu = 1e30;
	size_t n_ids = 0;
	for (int r = 0; r < repeat; r++) {
		int32_t *ids;
		double c0 = cpu();
		t0 = now();
		if (rn_tok_encode_alloc(tok, text, (size_t)size, rn_tok_add_bos(tok), true, &ids, &n_ids, &err) != RN_TOK_OK) {
			fprintf(stderr, "encode: %s\n", err.msg);
			return 1;
		}
		double dt = now() - t0, dc = cpu() - c0;
		if (dt < best)
			best = dt;
		if (dc < best_cpu)
			best_cpu = dc;
		free(ids);
	}
	printf("encode: %ld bytes -> %zu tokens; wall %.1f ms = %.2f MB/s; cpu %.1f ms = %.2f MB/s, %.0f tokens/s (best of %d)\n",
	       size, n_ids, best * 1e3, (double)size / best / 1e6, best_cpu * 1e3, (double)size / best_cpu / 1e6,
	       (double)n_ids / best_cpu, repeat);
	rn_tok_free(tok);
	gguf_close(f);
	free(text);
	return 0;
}
