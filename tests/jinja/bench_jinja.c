/* tests/jinja/bench_jinja.c — the Jinja engine's benchmark (not a test): a 20-turn chat with 5 tools rendered
 * through the Qwen3 template, parsed once and rendered many times. Issue 14 asks for under 1 ms a render.
 *
 * Usage: bench_jinja [-j CHAT.json] [-o OUT] [TEMPLATE [SECONDS]]   (default: Qwen-Qwen3-0.6B.jinja of
 * ../shared, 2 s of CPU time). Prints the parse time, the time to build the variables from JSON, the render
 * time (mean and best of batches) and the output size; -j writes the chat and -o the rendering, for a
 * comparison with jinja2 on the same input (see tests/data/jinja/README.md).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/json.h"
#include "modelfile/jinja/jinja.h"

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	struct ob_buf b;
	ob_buf_init(&b, 0);
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		ob_buf_append(&b, chunk, n);
	fclose(f);
	*len = b.len;
	return b.failed ? NULL : ob_buf_take(&b);
}

/* The chat: a system prompt, 20 user turns each answered, every fourth through a tool call and its result,
 * some with reasoning; 5 tools with nested JSON schemas. */
static void build_chat(struct ob_buf *b)
{
	static const char *const tools[5] = {"get_weather", "get_time", "search_web", "run_python", "send_email"};
	ob_buf_puts(b, "{\"messages\":[{\"role\":\"system\",\"content\":\"You are a helpful assistant. Answer briefly and "
		       "use the tools when they help.\"}");
	for (int turn = 0; turn < 20; turn++) {
		ob_buf_printf(b, ",{\"role\":\"user\",\"content\":\"Question number %d: what about item %d, and why? "
				 "Please explain the reasoning in a few sentences.\"}", turn + 1, turn * 7);
		if (turn % 4 == 1) {
			const char *tool = tools[turn % 5];
			ob_buf_printf(b, ",{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":\"call_%d\","
					 "\"type\":\"function\",\"function\":{\"name\":\"%s\",\"arguments\":{\"query\":"
					 "\"item %d\",\"limit\":5,\"options\":{\"verbose\":true,\"lang\":\"en\"}}}}]}",
				      turn, tool, turn * 7);
			ob_buf_printf(b, ",{\"role\":\"tool\",\"tool_call_id\":\"call_%d\",\"name\":\"%s\",\"content\":"
					 "\"{\\\"result\\\": \\\"value %d\\\", \\\"score\\\": 0.%d}\"}", turn, tool, turn, turn);
		}
		ob_buf_printf(b, ",{\"role\":\"assistant\",%s\"content\":\"Answer %d: the item is fine because of the "
				 "reasons given above; nothing else to add here.\"}",
			      turn % 3 == 0 ? "\"reasoning_content\":\"Let me think about it step by step.\"," : "", turn + 1);
	}
	ob_buf_puts(b, "],\"tools\":[");
	for (int k = 0; k < 5; k++)
		ob_buf_printf(b, "%s{\"type\":\"function\",\"function\":{\"name\":\"%s\",\"description\":\"Tool %d: does "
				 "what its name says, with the options below.\",\"parameters\":{\"type\":\"object\","
				 "\"properties\":{\"query\":{\"type\":\"string\",\"description\":\"What to look up\"},"
				 "\"limit\":{\"type\":\"integer\",\"description\":\"How many results\"},\"options\":"
				 "{\"type\":\"object\",\"properties\":{\"verbose\":{\"type\":\"boolean\"},\"lang\":{\"type\":"
				 "\"string\",\"enum\":[\"en\",\"fr\",\"de\"]}}}},\"required\":[\"query\"]}}}",
			      k ? "," : "", tools[k], k + 1);
	ob_buf_puts(b, "],\"add_generation_prompt\":true,\"extra\":{\"enable_thinking\":true}}");
}

int main(int argc, char **argv)
{
	const char *jout = NULL, *oout = NULL;
	while (argc > 2 && (strcmp(argv[1], "-j") == 0 || strcmp(argv[1], "-o") == 0)) {
		*(argv[1][1] == 'j' ? &jout : &oout) = argv[2];
		argv += 2;
		argc -= 2;
	}
	char def[4096];
	const char *shared = getenv("ORUN_SHARED");
	snprintf(def, sizeof def, "%s/testdata/jinja-templates/Qwen-Qwen3-0.6B.jinja",
		 shared && *shared ? shared : ORUN_SRCDIR "/../shared");
	const char *path = argc > 1 ? argv[1] : def;
	double seconds = argc > 2 ? atof(argv[2]) : 2.0;
	size_t len;
	char *src = read_file(path, &len);
	if (!src) {
		fprintf(stderr, "bench_jinja: cannot read %s\n", path);
		return 1;
	}
	struct ob_buf chat;
	ob_buf_init(&chat, 0);
	build_chat(&chat);
	if (jout) {
		FILE *f = fopen(jout, "wb");
		if (!f || fwrite(chat.p, 1, chat.len, f) != chat.len)
			return 1;
		fclose(f);
	}
	struct ob_json_error jerr;
	struct ob_json_doc *doc = ob_json_parse(chat.p, chat.len, &jerr);
	if (!doc) {
		fprintf(stderr, "bench_jinja: chat JSON: %s\n", jerr.message);
		return 1;
	}
	const struct ob_json *root = ob_json_root(doc);
	struct mf_jinja_chat c = {.messages = ob_json_get(root, "messages"), .tools = ob_json_get(root, "tools"),
				  .add_generation_prompt = true, .bos_token = "<|endoftext|>", .eos_token = "<|im_end|>",
				  .extra = ob_json_get(root, "extra")};
	struct mf_jinja_error err;
	struct mf_jinja *t = NULL;
	double t0 = cpu_s();
	int parses = 0;
	do {
		mf_jinja_free(t);
		if (mf_jinja_parse(src, len, &t, &err)) {
			fprintf(stderr, "bench_jinja: %s: %s: %s (line %d)\n", path, err.type, err.message, err.line);
			return 1;
		}
		parses++;
	} while (cpu_s() - t0 < seconds / 10);
	double parse_us = (cpu_s() - t0) / parses * 1e6;

	t0 = cpu_s();
	int builds = 0;
	struct mf_jinja_vars *v = NULL;
	do {
		mf_jinja_vars_free(v);
		v = mf_jinja_vars_new();
		if (!v || mf_jinja_vars_set_chat(v, &c))
			return 1;
		builds++;
	} while (cpu_s() - t0 < seconds / 10);
	double vars_us = (cpu_s() - t0) / builds * 1e6;

	struct mf_jinja_options opt = {.has_now = true, .now = 1768478400};
	char *out = NULL;
	size_t n = 0;
	double best = 1e9, start = cpu_s();
	long renders = 0;
	while (cpu_s() - start < seconds) {
		double b0 = cpu_s();
		for (int k = 0; k < 100; k++) {
			free(out);
			if (mf_jinja_render(t, v, &opt, &out, &n, &err)) {
				fprintf(stderr, "bench_jinja: render: %s: %s (line %d)\n", err.type, err.message, err.line);
				return 1;
			}
		}
		double per = (cpu_s() - b0) / 100;
		if (per < best)
			best = per;
		renders += 100;
	}
	double mean = (cpu_s() - start) / (double)renders;
	printf("template %s (%zu bytes)\n", path, len);
	printf("chat: %d messages, 5 tools, %zu bytes of JSON; output %zu bytes\n",
	       (int)ob_json_get(root, "messages")->count, chat.len, n);
	printf("parse %.1f us | variables from JSON %.1f us | render mean %.1f us, best batch %.1f us (%ld renders)\n",
	       parse_us, vars_us, mean * 1e6, best * 1e6, renders);
	printf("render %.3f ms: %s the 1 ms budget\n", mean * 1e3, mean < 1e-3 ? "within" : "OVER");
	if (oout) {
		FILE *f = fopen(oout, "wb");
		if (!f || fwrite(out, 1, n, f) != n)
			return 1;
		fclose(f);
	}
	free(out);
	mf_jinja_vars_free(v);
	mf_jinja_free(t);
	ob_json_free(doc);
	ob_buf_free(&chat);
	free(src);
	return 0;
}
