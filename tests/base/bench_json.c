/* tests/base/bench_json.c — the JSON reader's benchmark (not a test): parse time, memory held per input byte,
 * nesting cost, error texts and duplicate keys of ob_json_parse on the request bodies the server sees; built
 * with -DBENCH_JANSSON / -DBENCH_JSMN it measures jansson and raw jsmn tokenizing beside it, in the same run.
 *
 * Usage: bench_json [SECONDS_PER_CASE]   (CPU time; the figures in base/json.c came from this program)
 */
#include "config.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/json.h"

#ifdef BENCH_JANSSON
#include <jansson.h>
#endif
#ifdef BENCH_JSMN
#define JSMN_STATIC
#define JSMN_PARENT_LINKS
#include <jsmn.h>
#endif

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static size_t heap_used(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

/* ---------------------------------------------------------------------------------------------- inputs */

static const char *const words[] = {"the", "model", "answer", "café", "naïve", "日本語", "данные", "tool", "call",
				    "\\n", "\\\"quoted\\\"", "emoji 😀", "tab\\t", "weather", "in", "Paris", "x"};

static void put_text(struct ob_buf *b, size_t n, unsigned *seed)
{
	size_t start = b->len;
	while (b->len - start < n) {
		*seed = *seed * 1103515245u + 12345u;
		ob_buf_puts(b, words[(*seed >> 16) % (sizeof words / sizeof *words)]);
		ob_buf_putc(b, ' ');
	}
}

static void put_message(struct ob_buf *b, const char *role, size_t n, unsigned *seed)
{
	ob_buf_printf(b, "{\"role\":\"%s\",\"content\":\"", role);
	put_text(b, n, seed);
	ob_buf_puts(b, "\"}");
}

static char *gen_chat(size_t *len)
{
	struct ob_buf b;
	unsigned seed = 1;
	ob_buf_init(&b, 0);
	ob_buf_puts(&b, "{\"model\":\"qwen2.5-coder:0.5b\",\"messages\":[");
	put_message(&b, "system", 300, &seed);
	ob_buf_putc(&b, ',');
	put_message(&b, "user", 250, &seed);
	ob_buf_putc(&b, ',');
	put_message(&b, "assistant", 200, &seed);
	ob_buf_putc(&b, ',');
	put_message(&b, "user", 80, &seed);
	ob_buf_puts(&b, "],\"stream\":false,\"keep_alive\":\"5m\",\"options\":{\"temperature\":0.7,\"top_p\":0.9,"
		    "\"top_k\":40,\"num_ctx\":8192,\"seed\":42,\"stop\":[\"<|im_end|>\",\"<|endoftext|>\"]}}");
	*len = b.len;
	return ob_buf_take(&b);
}

/* Open WebUI's chat with its tools on: 36 function schemas and a few messages */
static char *gen_tools(size_t *len)
{
	struct ob_buf b;
	unsigned seed = 2;
	ob_buf_init(&b, 0);
	ob_buf_puts(&b, "{\"model\":\"qwen3:14b\",\"stream\":true,\"messages\":[");
	put_message(&b, "system", 1500, &seed);
	ob_buf_putc(&b, ',');
	put_message(&b, "user", 400, &seed);
	ob_buf_puts(&b, "],\"tools\":[");
	for (int t = 0; t < 36; t++) {
		ob_buf_printf(&b, "%s{\"type\":\"function\",\"function\":{\"name\":\"tool_%d\",\"description\":\"",
			      t ? "," : "", t);
		put_text(&b, 160, &seed);
		ob_buf_puts(&b, "\",\"parameters\":{\"type\":\"object\",\"properties\":{");
		for (int p = 0; p < 5; p++) {
			ob_buf_printf(&b, "%s\"param_%d\":{\"type\":\"%s\",\"description\":\"", p ? "," : "", p,
				      p % 3 == 0 ? "string" : p % 3 == 1 ? "integer" : "boolean");
			put_text(&b, 60, &seed);
			ob_buf_puts(&b, "\"");
			if (p == 0)
				ob_buf_puts(&b, ",\"enum\":[\"celsius\",\"fahrenheit\",\"kelvin\"]");
			ob_buf_puts(&b, "}");
		}
		ob_buf_puts(&b, "},\"required\":[\"param_0\",\"param_1\"]}}}");
	}
	ob_buf_puts(&b, "],\"options\":{\"temperature\":0.6,\"num_ctx\":32768}}");
	*len = b.len;
	return ob_buf_take(&b);
}

/* a long conversation: many messages of prose */
static char *gen_messages(size_t target, size_t *len)
{
	struct ob_buf b;
	unsigned seed = 3;
	ob_buf_init(&b, 0);
	ob_buf_puts(&b, "{\"model\":\"m\",\"messages\":[");
	for (int i = 0; b.len < target; i++) {
		if (i)
			ob_buf_putc(&b, ',');
		put_message(&b, i % 2 ? "assistant" : "user", 2000, &seed);
	}
	ob_buf_puts(&b, "]}");
	*len = b.len;
	return ob_buf_take(&b);
}

/* /api/generate with the old "context" array of token ids */
static char *gen_context(size_t target, size_t *len)
{
	struct ob_buf b;
	unsigned seed = 4;
	ob_buf_init(&b, 0);
	ob_buf_puts(&b, "{\"model\":\"m\",\"prompt\":\"hi\",\"context\":[");
	for (int i = 0; b.len < target; i++) {
		seed = seed * 1103515245u + 12345u;
		ob_buf_printf(&b, "%s%u", i ? "," : "", (seed >> 8) % 151936);
	}
	ob_buf_puts(&b, "]}");
	*len = b.len;
	return ob_buf_take(&b);
}

/* a chat with one large base64 image */
static char *gen_image(size_t target, size_t *len)
{
	static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	struct ob_buf b;
	unsigned seed = 5;
	ob_buf_init(&b, 0);
	ob_buf_puts(&b, "{\"model\":\"llava\",\"messages\":[{\"role\":\"user\",\"content\":\"what is this?\","
			"\"images\":[\"");
	char chunk[4096];
	while (b.len < target) {
		for (size_t k = 0; k < sizeof chunk; k++) {
			seed = seed * 1103515245u + 12345u;
			chunk[k] = b64[(seed >> 16) & 63];
		}
		ob_buf_append(&b, chunk, sizeof chunk);
	}
	ob_buf_puts(&b, "\"]}]}");
	*len = b.len;
	return ob_buf_take(&b);
}

static char *gen_deep(size_t depth, size_t *len)
{
	char *s = malloc(2 * depth + 1);
	if (!s)
		exit(1);
	memset(s, '[', depth);
	memset(s + depth, ']', depth);
	s[2 * depth] = 0;
	*len = 2 * depth;
	return s;
}

/* ---------------------------------------------------------------------------------------------- parsers */

enum impl { IMPL_OB, IMPL_JANSSON, IMPL_JSMN, N_IMPL };
static const char *const impl_name[N_IMPL] = {"ob_json", "jansson", "jsmn-tokens"};

/* Parses once; keeps the result alive until release() so the heap can be measured. Returns 0 on success. */
static void *held;
static void *held_tok;

static int parse(enum impl im, const char *s, size_t n)
{
	switch (im) {
	case IMPL_OB: {
		struct ob_json_doc *d = ob_json_parse(s, n, NULL);
		held = d;
		return d ? 0 : -1;
	}
#ifdef BENCH_JANSSON
	case IMPL_JANSSON: {
		json_t *j = json_loadb(s, n, JSON_ALLOW_NUL | JSON_DECODE_ANY, NULL);
		held = j;
		return j ? 0 : -1;
	}
#endif
#ifdef BENCH_JSMN
	case IMPL_JSMN: {
		/* what any reader built on jsmn must do at least: count the tokens, then fill them */
		jsmn_parser p;
		jsmn_init(&p);
		int r = jsmn_parse(&p, s, n, NULL, 0);
		if (r <= 0)
			return -1;
		jsmntok_t *t = malloc((size_t)r * sizeof *t);
		if (!t)
			return -1;
		jsmn_init(&p);
		held_tok = t;
		return jsmn_parse(&p, s, n, t, (unsigned)r) == r ? 0 : -1;
	}
#endif
	default:
		return -2;
	}
}

static void release(enum impl im)
{
	if (im == IMPL_OB)
		ob_json_free(held);
#ifdef BENCH_JANSSON
	if (im == IMPL_JANSSON)
		json_decref(held);
#endif
	free(held_tok);
	held = held_tok = NULL;
}

static int available(enum impl im)
{
	size_t n;
	char *s = gen_deep(1, &n);
	int r = parse(im, s, n);
	release(im);
	free(s);
	return r != -2;
}

static void bench(const char *name, const char *s, size_t n, double seconds)
{
	for (int im = 0; im < N_IMPL; im++) {
		if (!available(im))
			continue;
		size_t before = heap_used();
		int ok = parse(im, s, n);
		size_t mem = heap_used() - before;
		release(im);
		if (ok != 0) {
			printf("%-12s %-11s %10zu B  rejected\n", name, impl_name[im], n);
			continue;
		}
		double best = 1e30, total = 0;
		int iters = 0;
		while (total < seconds || iters < 3) {
			double t0 = cpu_s();
			parse(im, s, n);
			double dt = cpu_s() - t0;
			release(im);
			total += dt;
			iters++;
			if (dt < best)
				best = dt;
		}
		printf("%-12s %-11s %10zu B  %10.1f us  %7.1f MB/s  %5.2f B held/B  (best of %d)\n", name, impl_name[im],
		       n, best * 1e6, (double)n / best / 1e6, (double)mem / (double)n, iters);
	}
}

/* one nesting depth: the best of a few parses (one when a parse takes more than a second) */
static void bench_deep(size_t depth)
{
	size_t n;
	char *s = gen_deep(depth, &n);
	for (int im = 0; im < N_IMPL; im++) {
		if (!available(im))
			continue;
		double best = 1e30, total = 0;
		int ok = 0, iters = 0;
		while (iters < 3 || (total < 0.2 && iters < 1000)) {
			double t0 = cpu_s();
			ok = parse(im, s, n);
			double dt = cpu_s() - t0;
			release(im);
			total += dt;
			iters++;
			if (dt < best)
				best = dt;
			if (dt > 1)
				break;
		}
		printf("depth %-7zu %-11s %12.1f us  %s (best of %d)\n", depth, impl_name[im], best * 1e6,
		       ok == 0 ? "accepted" : "rejected", iters);
	}
	free(s);
}

static void errors(void)
{
	static const char *const bad[] = {
		"", "{\"model\": \"x\"", "{\"a\":1 \"b\":2}", "[1 2]", "{x}", "{\"a\":1,}", "[1,]", "01", "tru ",
		"\"a\nb\"", "{\"a\":\"\\q\"}", "nulx", "{} x", "[\"a\xff\"]",
	};
	printf("\nerror texts (input | ob_json | jansson):\n");
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct ob_json_error e;
		struct ob_json_doc *d = ob_json_parse(bad[i], strlen(bad[i]), &e);
		printf("  %-18.18s | @%zu %s", bad[i], e.offset, d ? "(accepted)" : e.message);
		ob_json_free(d);
#ifdef BENCH_JANSSON
		json_error_t je;
		json_t *j = json_loadb(bad[i], strlen(bad[i]), JSON_ALLOW_NUL | JSON_DECODE_ANY, &je);
		printf(" | @%d %s", je.position, j ? "(accepted)" : je.text);
		json_decref(j);
#endif
		printf("\n");
	}
}

static void duplicates(void)
{
	/* Go: a later member overwrites an earlier one, and keys match struct fields case-insensitively */
	const char *s = "{\"model\":\"a\",\"MODEL\":\"b\",\"model\":\"c\"}";
	struct ob_json_doc *d = ob_json_parse(s, strlen(s), NULL);
	const struct ob_json *v = d ? ob_json_get_fold(ob_json_root(d), "model") : NULL;
	printf("\nduplicates %s (Go decodes model = \"c\"):\n  ob_json: get_fold -> \"%s\", members kept %u\n", s,
	       v ? v->str : "?", d ? ob_json_root(d)->count : 0);
	ob_json_free(d);
#ifdef BENCH_JANSSON
	json_t *j = json_loads(s, 0, NULL);
	const char *k;
	json_t *jv;
	const char *last = "?";
	json_object_foreach(j, k, jv)
	{
		if (strcasecmp(k, "model") == 0)
			last = json_string_value(jv);
	}
	printf("  jansson: last case-insensitive match in object order -> \"%s\", members kept %zu;"
	       " JSON_REJECT_DUPLICATES refuses the document: %s\n",
	       last, json_object_size(j), json_loads(s, JSON_REJECT_DUPLICATES, NULL) ? "no" : "yes");
	json_decref(j);
	/* numbers: Go keeps the literal (int64 fields, float64 for any) */
	const char *num = "[9223372036854775808, 1e400, 12345678901234567890123]";
	json_error_t je;
	j = json_loads(num, 0, &je);
	printf("  %s: jansson %s\n", num, j ? "accepted" : je.text);
	json_decref(j);
#endif
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 0.5;
	size_t n;
	char *s;
	printf("case         reader      input size  best parse   speed        memory held\n");
	s = gen_chat(&n);
	bench("chat-1k", s, n, seconds);
	free(s);
	s = gen_tools(&n);
	bench("tools-30k", s, n, seconds);
	free(s);
	s = gen_messages(1u << 20, &n);
	bench("messages-1m", s, n, seconds);
	free(s);
	s = gen_context(1u << 20, &n);
	bench("context-1m", s, n, seconds);
	free(s);
	s = gen_image(32u << 20, &n);
	bench("image-32m", s, n, seconds);
	free(s);
	printf("\n");
	bench_deep(OB_JSON_MAX_DEPTH);
	bench_deep(10000);
	bench_deep(100000);
	errors();
	duplicates();
	return 0;
}
