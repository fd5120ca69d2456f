/* tools/llama_server_flags.c — llama-server's flags, parsed with getopt_long_only: llama.cpp spells many of
 * its flags with one dash and several letters (-ngl, -np, -ctk), which getopt_long_only takes as long options,
 * while -c, -b, -t … stay short ones.
 *
 * Every flag Ollama passes (reference/ollama-wire.md §1.2.2) and the older ollama_llama_server ones are
 * accepted, and the chat template ones (--jinja, the default, / --no-jinja, --chat-template[-file|-kwargs],
 * --reasoning-format); the ones orun has no use for are read and ignored. Two take their value in their own way: a bare
 * --flash-attn (era A) or --flash-attn VALUE, and --lora-scaled FNAME SCALE.
 */
#include "config.h"

#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "tools/llama_server_flags.h"

enum {
	F_IGNORED = 256, /* a flag with a value orun does not use */
	F_IGNORED_PLAIN, /* a flag without a value orun does not use */
	F_MODEL, F_PORT, F_HOST, F_CTX, F_PARALLEL, F_BATCH, F_NGL, F_THREADS, F_KEEP, F_ALIAS, F_CHAT_TEMPLATE,
	F_CACHE_TYPE_K, F_MMPROJ, F_LOAD_MODE, F_LORA, F_LORA_SCALED, F_FLASH_ATTN, F_EMBEDDING, F_CONTEXT_SHIFT,
	F_NO_CONTEXT_SHIFT, F_VERBOSE, F_LIST_DEVICES, F_NO_MMAP, F_HELP, F_JINJA, F_NO_JINJA, F_CHAT_TEMPLATE_FILE,
	F_CHAT_TEMPLATE_KWARGS, F_REASONING_FORMAT, F_CACHE_RAM,
};

#define V required_argument
#define N no_argument
static const struct option options[] = {
	{"model", V, NULL, F_MODEL},
	{"port", V, NULL, F_PORT},
	{"host", V, NULL, F_HOST},
	{"ctx-size", V, NULL, F_CTX},
	{"np", V, NULL, F_PARALLEL},
	{"parallel", V, NULL, F_PARALLEL},
	{"batch-size", V, NULL, F_BATCH},
	{"ngl", V, NULL, F_NGL},
	{"n-gpu-layers", V, NULL, F_NGL},
	{"gpu-layers", V, NULL, F_NGL},
	{"threads", V, NULL, F_THREADS},
	{"keep", V, NULL, F_KEEP},
	{"alias", V, NULL, F_ALIAS},
	{"chat-template", V, NULL, F_CHAT_TEMPLATE},
	{"chat-template-file", V, NULL, F_CHAT_TEMPLATE_FILE},
	{"chat-template-kwargs", V, NULL, F_CHAT_TEMPLATE_KWARGS},
	{"reasoning-format", V, NULL, F_REASONING_FORMAT},
	{"jinja", N, NULL, F_JINJA},
	{"no-jinja", N, NULL, F_NO_JINJA},
	{"ctk", V, NULL, F_CACHE_TYPE_K},
	{"cache-type-k", V, NULL, F_CACHE_TYPE_K},
	{"cram", V, NULL, F_CACHE_RAM},
	{"cache-ram", V, NULL, F_CACHE_RAM},
	{"mmproj", V, NULL, F_MMPROJ},
	{"load-mode", V, NULL, F_LOAD_MODE},
	{"lora", V, NULL, F_LORA},
	{"lora-scaled", V, NULL, F_LORA_SCALED},
	{"fa", optional_argument, NULL, F_FLASH_ATTN},
	{"flash-attn", optional_argument, NULL, F_FLASH_ATTN},
	{"embedding", N, NULL, F_EMBEDDING},
	{"embeddings", N, NULL, F_EMBEDDING},
	{"context-shift", N, NULL, F_CONTEXT_SHIFT},
	{"no-context-shift", N, NULL, F_NO_CONTEXT_SHIFT},
	{"verbose", N, NULL, F_VERBOSE},
	{"list-devices", N, NULL, F_LIST_DEVICES},
	{"no-mmap", N, NULL, F_NO_MMAP},
	{"help", N, NULL, F_HELP},
	/* read and ignored, with a value */
	{"lv", V, NULL, F_IGNORED},
	{"log-verbosity", V, NULL, F_IGNORED},
	{"spec-type", V, NULL, F_IGNORED},
	{"spec-draft-n-max", V, NULL, F_IGNORED},
	{"spec-draft-model", V, NULL, F_IGNORED},
	{"image-min-tokens", V, NULL, F_IGNORED},
	{"ctv", V, NULL, F_IGNORED},
	{"cache-type-v", V, NULL, F_IGNORED},
	{"ub", V, NULL, F_IGNORED},
	{"ubatch-size", V, NULL, F_IGNORED},
	{"tb", V, NULL, F_IGNORED},
	{"threads-batch", V, NULL, F_IGNORED},
	{"sm", V, NULL, F_IGNORED},
	{"split-mode", V, NULL, F_IGNORED},
	{"mg", V, NULL, F_IGNORED},
	{"main-gpu", V, NULL, F_IGNORED},
	{"ts", V, NULL, F_IGNORED},
	{"tensor-split", V, NULL, F_IGNORED},
	{"log-format", V, NULL, F_IGNORED},
	{"to", V, NULL, F_IGNORED},
	{"timeout", V, NULL, F_IGNORED},
	{"rope-freq-base", V, NULL, F_IGNORED},
	{"rope-freq-scale", V, NULL, F_IGNORED},
	{"seed", V, NULL, F_IGNORED},
	{"n-predict", V, NULL, F_IGNORED},
	{"api-key", V, NULL, F_IGNORED},
	{"slot-save-path", V, NULL, F_IGNORED},
	{"pooling", V, NULL, F_IGNORED},
	{"override-kv", V, NULL, F_IGNORED},
	{"numa", V, NULL, F_IGNORED},
	{"ctx-size-draft", V, NULL, F_IGNORED},
	{"devd", V, NULL, F_IGNORED},
	{"device", V, NULL, F_IGNORED},
	{"fit", V, NULL, F_IGNORED},
	{"fit-target", V, NULL, F_IGNORED},
	{"reasoning-budget", V, NULL, F_IGNORED},
	{"cache-reuse", V, NULL, F_IGNORED},
	/* read and ignored, without a value */
	{"no-webui", N, NULL, F_IGNORED_PLAIN},
	{"offline", N, NULL, F_IGNORED_PLAIN},
	{"no-log-prefix", N, NULL, F_IGNORED_PLAIN},
	{"no-log-timestamps", N, NULL, F_IGNORED_PLAIN},
	{"no-mmproj-offload", N, NULL, F_IGNORED_PLAIN},
	{"spec-draft-backend-sampling", N, NULL, F_IGNORED_PLAIN},
	{"mlock", N, NULL, F_IGNORED_PLAIN},
	{"memory-f32", N, NULL, F_IGNORED_PLAIN},
	{"cb", N, NULL, F_IGNORED_PLAIN},
	{"cont-batching", N, NULL, F_IGNORED_PLAIN},
	{"no-cont-batching", N, NULL, F_IGNORED_PLAIN},
	{"log-disable", N, NULL, F_IGNORED_PLAIN},
	{"metrics", N, NULL, F_IGNORED_PLAIN},
	{"no-warmup", N, NULL, F_IGNORED_PLAIN},
	{"kv-unified", N, NULL, F_IGNORED_PLAIN},
	{"no-kv-offload", N, NULL, F_IGNORED_PLAIN},
	{"nkvo", N, NULL, F_IGNORED_PLAIN},
	{"check-tensors", N, NULL, F_IGNORED_PLAIN},
	{"log-colors", N, NULL, F_IGNORED_PLAIN},
	{"no-slots", N, NULL, F_IGNORED_PLAIN},
	{"slots", N, NULL, F_IGNORED_PLAIN},
	{"props", N, NULL, F_IGNORED_PLAIN},
	{NULL, 0, NULL, 0},
};
#undef V
#undef N

/* '+': stop at the first argument that is not a flag (an error here); ':': report a missing value as ':' */
static const char short_options[] = "+:m:c:b:t:a:s:n:vh";

/* The flag as typed for the value getopt just returned (for messages): "--port" of "--port=x" or "--port x". */
static void typed_flag(char **argv, char *buf, size_t size)
{
	const char *a = argv[optind - 1];
	if (optarg == a && optind >= 2)
		a = argv[optind - 2];
	size_t n = strlen(a);
	if (optarg && optarg > a && optarg <= a + n)
		n = (size_t)(optarg - a);
	if (n && a[n - 1] == '=')
		n--;
	snprintf(buf, size, "%.*s", (int)n, a);
}

static int parse_int(char **argv, int *out)
{
	char *end;
	long x = strtol(optarg, &end, 10);
	if (!*optarg || *end || x < INT32_MIN || x > INT32_MAX) {
		char flag[64];
		typed_flag(argv, flag, sizeof flag);
		fprintf(stderr, "error: invalid value for %s: '%s'\n", flag, optarg);
		return -1;
	}
	*out = (int)x;
	return 0;
}

static int bad_value(char **argv, const char *why)
{
	char flag[64];
	typed_flag(argv, flag, sizeof flag);
	fprintf(stderr, "error: invalid value for %s: '%s'%s\n", flag, optarg, why);
	return -1;
}

/* --cache-ram N: MiB, -1 (no limit: the memory left) or more; capped so that the bytes fit a long long. */
static int parse_cache_ram(char **argv, struct rn_ls_opts *o)
{
	char *end;
	long long x = strtoll(optarg, &end, 10);
	if (!*optarg || *end || x < -1 || x > (LLONG_MAX >> 20))
		return bad_value(argv, " (MiB: -1 no limit, 0 disable, or a size)");
	o->cache_ram_mib = x;
	return 0;
}

/* --chat-template-kwargs: a JSON object (kept as text; the runner parses it again). */
static int parse_kwargs(char **argv, struct rn_ls_opts *o)
{
	struct ob_json_error je;
	struct ob_json_doc *d = ob_json_parse(optarg, strlen(optarg), &je);
	bool ok = d && ob_json_root(d)->type == OB_JSON_OBJECT;
	ob_json_free(d);
	if (!ok)
		return bad_value(argv, " (a JSON object is expected)");
	o->chat_template_kwargs = optarg;
	return 0;
}

/* --reasoning-format: upstream's values. */
static int parse_reasoning_format(char **argv, struct rn_ls_opts *o)
{
	static const char *const known[] = {"none", "deepseek", "deepseek-legacy", "auto"};
	for (size_t i = 0; i < sizeof known / sizeof *known; i++)
		if (strcmp(optarg, known[i]) == 0) {
			o->reasoning_format = known[i];
			return 0;
		}
	return bad_value(argv, " (none, deepseek, deepseek-legacy or auto)");
}

int ls_flags_parse(int argc, char **argv, struct rn_ls_opts *o)
{
	rn_ls_opts_default(o);
	opterr = 0;
	optind = 0; /* glibc: start over (also when called more than once) */
	int c;
	while ((c = getopt_long_only(argc, argv, short_options, options, NULL)) != -1) {
		int rc = 0;
		switch (c) {
		case 'h':
		case F_HELP:
			return 1;
		case 'm':
		case F_MODEL:
			o->model = optarg;
			break;
		case F_PORT:
			rc = parse_int(argv, &o->port);
			break;
		case F_HOST:
			o->host = optarg;
			break;
		case 'c':
		case F_CTX:
			rc = parse_int(argv, &o->ctx);
			break;
		case F_PARALLEL:
			rc = parse_int(argv, &o->parallel);
			break;
		case 'b':
		case F_BATCH:
			rc = parse_int(argv, &o->batch);
			break;
		case F_NGL:
			rc = parse_int(argv, &o->ngl);
			break;
		case 't':
		case F_THREADS:
			rc = parse_int(argv, &o->threads);
			break;
		case F_KEEP:
			rc = parse_int(argv, &o->keep);
			break;
		case 'a':
		case F_ALIAS:
			o->alias = optarg;
			break;
		case F_CHAT_TEMPLATE:
			o->chat_template = optarg;
			break;
		case F_CHAT_TEMPLATE_FILE:
			o->chat_template_file = optarg;
			break;
		case F_CHAT_TEMPLATE_KWARGS:
			rc = parse_kwargs(argv, o);
			break;
		case F_REASONING_FORMAT:
			rc = parse_reasoning_format(argv, o);
			break;
		case F_JINJA:
			o->jinja = true;
			break;
		case F_NO_JINJA:
			o->jinja = false;
			break;
		case F_CACHE_TYPE_K:
			o->cache_type_k = optarg;
			break;
		case F_CACHE_RAM:
			rc = parse_cache_ram(argv, o);
			break;
		case F_MMPROJ:
			o->mmproj = true;
			break;
		case F_LOAD_MODE:
			o->no_mmap = strcmp(optarg, "none") == 0; /* Ollama's use_mmap false */
			break;
		case F_LORA:
			o->n_lora++;
			break;
		case F_LORA_SCALED:
			o->n_lora++;
			if (optind < argc)
				optind++; /* FNAME SCALE */
			break;
		case F_FLASH_ATTN:
			/* --flash-attn on|off|auto, or bare (era A): a following word that is not a flag is its value */
			if (!optarg && optind < argc && argv[optind][0] != '-')
				optind++;
			break;
		case F_EMBEDDING:
			o->embedding = true;
			break;
		case F_CONTEXT_SHIFT:
			o->context_shift = true;
			break;
		case F_NO_CONTEXT_SHIFT:
			o->no_context_shift = true;
			break;
		case 'v':
		case F_VERBOSE:
			o->verbose = true;
			break;
		case F_LIST_DEVICES:
			o->list_devices = true;
			break;
		case F_NO_MMAP:
			o->no_mmap = true;
			break;
		case 's': /* --seed */
		case 'n': /* --n-predict */
		case F_IGNORED:
		case F_IGNORED_PLAIN:
			break;
		case ':':
			fprintf(stderr, "error: argument %s needs a value\n", argv[optind - 1]);
			return -1;
		default:
			fprintf(stderr, "error: invalid argument: %s\n", argv[optind - 1]);
			return -1;
		}
		if (rc < 0)
			return -1;
	}
	if (optind < argc) {
		fprintf(stderr, "error: invalid argument: %s\n", argv[optind]);
		return -1;
	}
	if (o->parallel < 1)
		o->parallel = 1;
	return 0;
}

void ls_flags_usage(FILE *f)
{
	fprintf(f, "Usage: orun llama-server --model FILE [--port N] [--host H] [-c N] [-np N] [-b N] [-t N]\n"
		   "                         [--embedding] [--context-shift] [--keep N] [--cache-type-k T] [--cache-ram MiB]\n"
		   "                         [--jinja|--no-jinja] [--chat-template NAME] [--chat-template-file F]\n"
		   "                         [--chat-template-kwargs JSON] [--reasoning-format none|deepseek|auto] ...\n"
		   "       orun llama-server --list-devices\n\n"
		   "orun as llama.cpp's llama-server, the runner Ollama >= 0.30 starts from lib/ollama/llama-server.\n"
		   "Installed there (or invoked under the name llama-server) it accepts the flags Ollama passes and\n"
		   "answers /health, /completion, /v1/chat/completions, /apply-template, /tokenize, /detokenize and\n"
		   "/v1/embeddings. Without --model it only reports the devices (Ollama's discovery start).\n");
}
