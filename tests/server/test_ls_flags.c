/* tests/server/test_ls_flags.c — llama-server's command line (tools/llama_server_flags.c): the argv Ollama
 * builds (llm/llama_server.go), the older ollama_llama_server spellings, the flags that take their value in
 * their own way (bare --flash-attn, --lora-scaled FNAME SCALE), the chat template flags (--jinja by default,
 * --no-jinja, --chat-template[-file|-kwargs], --reasoning-format), and the refusals (unknown flag, missing or
 * bad value, a stray argument, kwargs that are not a JSON object, an unknown reasoning format), --cache-ram.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "tests/check.h"
#include "tools/llama_server_flags.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof(a)[0]) - 1)

static int parse(char **argv, int argc, struct rn_ls_opts *o)
{
	/* stderr carries the refusals; keep them out of the test log's way */
	FILE *saved = stderr;
	stderr = fopen("/dev/null", "w");
	int rc = ls_flags_parse(argc, argv, o);
	fclose(stderr);
	stderr = saved;
	return rc;
}

static void test_ollama_argv(void)
{
	/* startLlamaServer's flags, with the ones it adds for a Go-template model on the CPU */
	char *argv[] = {"llama-server", "--model", "/m.gguf", "--port", "41234", "--host", "127.0.0.1", "--no-webui",
			"--offline", "-c", "8192", "-np", "2", "--log-verbosity", "4", "--no-log-prefix",
			"--no-log-timestamps", "--no-jinja", "--chat-template", "chatml", "--flash-attn", "off", "-b", "512",
			"-ub", "512", "--context-shift", "--keep", "4", "-ngl", "0", "--load-mode", "none", "-ctk", "q8_0",
			"-ctv", "q8_0", "-t", "3", "--embeddings", NULL};
	struct rn_ls_opts o;
	CHECK(parse(argv, ARGC(argv), &o) == 0);
	CHECK(o.model && strcmp(o.model, "/m.gguf") == 0);
	CHECK(o.port == 41234 && strcmp(o.host, "127.0.0.1") == 0);
	CHECK(o.ctx == 8192 && o.parallel == 2 && o.batch == 512 && o.ngl == 0 && o.threads == 3 && o.keep == 4);
	CHECK(o.chat_template && strcmp(o.chat_template, "chatml") == 0);
	CHECK(o.cache_type_k && strcmp(o.cache_type_k, "q8_0") == 0);
	CHECK(o.context_shift && !o.no_context_shift && o.no_mmap && o.embedding && !o.list_devices);
	CHECK(!o.jinja); /* Ollama renders itself: --no-jinja */
}

static void test_chat_template_flags(void)
{
	struct rn_ls_opts o;
	char *none[] = {"llama-server", NULL};
	CHECK(parse(none, ARGC(none), &o) == 0);
	CHECK(o.jinja && !o.chat_template && !o.chat_template_file && !o.chat_template_kwargs); /* upstream's default */
	CHECK(o.reasoning_format && strcmp(o.reasoning_format, "auto") == 0);

	char *all[] = {"llama-server", "--no-jinja", "--jinja", "--chat-template", "chatml", "--chat-template-file",
		       "/t.jinja", "--chat-template-kwargs", "{\"enable_thinking\": false}", "--reasoning-format", "none",
		       NULL};
	CHECK(parse(all, ARGC(all), &o) == 0);
	CHECK(o.jinja && strcmp(o.chat_template, "chatml") == 0 && strcmp(o.chat_template_file, "/t.jinja") == 0);
	CHECK(strcmp(o.chat_template_kwargs, "{\"enable_thinking\": false}") == 0);
	CHECK(strcmp(o.reasoning_format, "none") == 0);
	char *last[] = {"llama-server", "--jinja", "--no-jinja", "--reasoning-format=deepseek", NULL};
	CHECK(parse(last, ARGC(last), &o) == 0 && !o.jinja && strcmp(o.reasoning_format, "deepseek") == 0);

	char *kw_array[] = {"llama-server", "--chat-template-kwargs", "[1]", NULL};
	CHECK(parse(kw_array, ARGC(kw_array), &o) == -1);
	char *kw_bad[] = {"llama-server", "--chat-template-kwargs", "{enable_thinking: 1}", NULL};
	CHECK(parse(kw_bad, ARGC(kw_bad), &o) == -1);
	char *rf_bad[] = {"llama-server", "--reasoning-format", "sometimes", NULL};
	CHECK(parse(rf_bad, ARGC(rf_bad), &o) == -1);
	char *ct_missing[] = {"llama-server", "--chat-template-file", NULL};
	CHECK(parse(ct_missing, ARGC(ct_missing), &o) == -1);
}

static void test_defaults_and_spellings(void)
{
	char *none[] = {"llama-server", NULL};
	struct rn_ls_opts o;
	CHECK(parse(none, ARGC(none), &o) == 0);
	CHECK(!o.model && o.port == 8080 && strcmp(o.host, "127.0.0.1") == 0 && o.ngl == -1 && o.parallel == 1);

	/* era A (ollama_llama_server): long spellings, a bare --flash-attn, --lora-scaled with two values */
	char *old[] = {"llama-server", "--ctx-size", "2048", "--batch-size", "256", "--n-gpu-layers", "99",
		       "--parallel", "4", "--flash-attn", "--threads", "2", "--lora-scaled", "a.gguf", "0.5", "--lora",
		       "b.gguf", "--no-mmap", "--mlock", "--verbose", "--alias", "m", "--seed", "-1", "-n", "5", NULL};
	CHECK(parse(old, ARGC(old), &o) == 0);
	CHECK(o.ctx == 2048 && o.batch == 256 && o.ngl == 99 && o.parallel == 4 && o.threads == 2);
	CHECK(o.n_lora == 2 && o.no_mmap && o.verbose && o.alias && strcmp(o.alias, "m") == 0);

	/* --flag=value, --gpu-layers, -fa with a value, a value that starts with '-', -np < 1 clamped */
	char *eq[] = {"llama-server", "--port=9", "--gpu-layers=-1", "-fa", "on", "-np", "0", "-m", "x", NULL};
	CHECK(parse(eq, ARGC(eq), &o) == 0);
	CHECK(o.port == 9 && o.ngl == -1 && o.parallel == 1 && o.model && strcmp(o.model, "x") == 0);

	char *ld[] = {"llama-server", "--list-devices", "--no-context-shift", "-v", NULL};
	CHECK(parse(ld, ARGC(ld), &o) == 0);
	CHECK(o.list_devices && o.no_context_shift && o.verbose);
}

static void test_refusals(void)
{
	struct rn_ls_opts o;
	char *help[] = {"llama-server", "--help", NULL};
	CHECK(parse(help, ARGC(help), &o) == 1);
	char *h[] = {"llama-server", "-h", NULL};
	CHECK(parse(h, ARGC(h), &o) == 1);
	char *unknown[] = {"llama-server", "--no-such-flag", NULL};
	CHECK(parse(unknown, ARGC(unknown), &o) == -1);
	char *missing[] = {"llama-server", "--port", NULL};
	CHECK(parse(missing, ARGC(missing), &o) == -1);
	char *bad[] = {"llama-server", "-c", "lots", NULL};
	CHECK(parse(bad, ARGC(bad), &o) == -1);
	char *big[] = {"llama-server", "--port", "99999999999", NULL};
	CHECK(parse(big, ARGC(big), &o) == -1);
	char *stray[] = {"llama-server", "--model", "m.gguf", "extra", NULL};
	CHECK(parse(stray, ARGC(stray), &o) == -1);
	/* and a good parse after the refusals: the parser starts over */
	char *good[] = {"llama-server", "-np", "3", NULL};
	CHECK(parse(good, ARGC(good), &o) == 0 && o.parallel == 3);
}

/* --cache-ram / -cram: MiB as upstream; -1 (no limit) is also the default, 0 disables, below -1 and sizes whose
 * bytes overflow are refused */
static void test_cache_ram(void)
{
	struct rn_ls_opts o;
	char *none[] = {"llama-server", NULL};
	CHECK(parse(none, ARGC(none), &o) == 0 && o.cache_ram_mib == -1);
	char *mib[] = {"llama-server", "--cache-ram", "512", NULL};
	CHECK(parse(mib, ARGC(mib), &o) == 0 && o.cache_ram_mib == 512);
	char *off[] = {"llama-server", "-cram", "0", NULL};
	CHECK(parse(off, ARGC(off), &o) == 0 && o.cache_ram_mib == 0);
	char *nolimit[] = {"llama-server", "--cache-ram=-1", "-c", "64", NULL};
	CHECK(parse(nolimit, ARGC(nolimit), &o) == 0 && o.cache_ram_mib == -1 && o.ctx == 64);
	char *neg[] = {"llama-server", "--cache-ram", "-2", NULL};
	CHECK(parse(neg, ARGC(neg), &o) == -1);
	char *huge[] = {"llama-server", "--cache-ram", "9223372036854775807", NULL};
	CHECK(parse(huge, ARGC(huge), &o) == -1);
	char *word[] = {"llama-server", "--cache-ram", "8G", NULL};
	CHECK(parse(word, ARGC(word), &o) == -1);
}

int main(void)
{
	test_cache_ram();
	test_ollama_argv();
	test_defaults_and_spellings();
	test_refusals();
	test_chat_template_flags();
	return check_done();
}
