/* tools/cmd_mkmodel.c — `orun mkmodel`: write a deterministic synthetic GGUF model (llama, qwen2 or qwen3)
 * of any shape and weight type, with the tokenizer copied from a real GGUF.
 *
 * Weights are uniform pseudo-random values from a counter-based generator seeded by (seed, tensor name,
 * row), so every row can be produced on any thread in any order and the file is identical for the same
 * arguments. Tensor data is generated while the file is written (the writer's fill callback), rows split
 * across a thread pool, so a Qwen3-14B-shaped file needs no more memory than one tensor's rows in flight.
 */
#include "config.h"

#include "tools/argnum.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "runner/cpu/pool.h"
#include "tools/commands.h"
#include "tools/mkmodel_quant.h"

#define MK_MAX_LAYERS 512
#define MK_MAX_DIM 65536
#define MK_MAX_FF (1 << 20)

struct mk_shape {
	const char *arch; /* llama, qwen2, qwen3 */
	int layers, dim, heads, kv_heads, head_dim, ff, ctx;
	float rope_base, eps;
	float yarn_factor;
	int yarn_orig;
	bool tied;
};

/* What a tensor holds: how its values are drawn. */
enum mk_kind { MK_MATRIX, MK_EMBED, MK_OUTPUT, MK_NORM, MK_BIAS };

struct mk_tensor {
	char name[64];
	uint32_t type;
	int64_t ne0, ne1;
	enum mk_kind kind;
	uint64_t seed;
};

struct mk_fill {
	struct rn_pool *pool;
	struct mk_tensor *tensors;
	size_t n_tensors;
	float *scratch; /* [threads][max ne0] */
	int64_t max_ne0;
	/* the job in progress */
	const struct mk_tensor *t;
	uint8_t *dst;
	size_t row_bytes;
	bool ok;
};

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h;
}

/* Row r of tensor t as floats. Uniform in [offset - a, offset + a) with a chosen per kind so that
 * activations keep a unit-ish scale through the layers (matrices: variance 1/cols) and logits spread over a
 * few units. */
static void gen_row(const struct mk_tensor *t, int64_t r, float *out)
{
	uint64_t s = t->seed ^ ((uint64_t)r * 0xd1b54a32d192ed03ull);
	float a, off = 0;
	switch (t->kind) {
	case MK_MATRIX: a = 1.7320508f / sqrtf((float)t->ne0); break;
	case MK_OUTPUT: a = 4.0f * 1.7320508f / sqrtf((float)t->ne0); break;
	case MK_EMBED: a = 1.0f; break;
	case MK_NORM: a = 0.25f; off = 1.0f; break;
	default: a = 0.1f; break;
	}
	for (int64_t i = 0; i < t->ne0; i++) {
		uint64_t v = splitmix(&s);
		float u = (float)(v >> 40) * (1.0f / 16777216.0f); /* [0, 1), exact */
		out[i] = off + a * (2.0f * u - 1.0f);
	}
}

static void fill_rows_job(void *ctx, int ith, int nth)
{
	struct mk_fill *F = ctx;
	const struct mk_tensor *t = F->t;
	float *row = F->scratch + (size_t)ith * (size_t)F->max_ne0;
	int64_t b, e;
	rn_pool_split(t->ne1, 1, ith, nth, &b, &e);
	for (int64_t r = b; r < e; r++) {
		gen_row(t, r, row);
		if (!mkq_row(t->type, row, F->dst + (size_t)r * F->row_bytes, t->ne0))
			F->ok = false;
	}
}

/* FP8 E4M3 with one f32 scale per 128x128 tile: each thread takes whole bands of 128 rows. */
static void fill_fp8_job(void *ctx, int ith, int nth)
{
	struct mk_fill *F = ctx;
	const struct mk_tensor *t = F->t;
	const int64_t T = GGUF_FP8_TILE, n_tc = (t->ne0 + T - 1) / T, n_tr = (t->ne1 + T - 1) / T;
	float *row = F->scratch + (size_t)ith * (size_t)F->max_ne0;
	float *scales = (float *)(F->dst + (size_t)t->ne0 * (size_t)t->ne1);
	float *amax = malloc((size_t)n_tc * sizeof *amax);
	if (!amax) {
		F->ok = false;
		return;
	}
	int64_t b, e;
	rn_pool_split(n_tr, 1, ith, nth, &b, &e);
	for (int64_t tr = b; tr < e; tr++) {
		int64_t r0 = tr * T, r1 = r0 + T < t->ne1 ? r0 + T : t->ne1;
		for (int64_t c = 0; c < n_tc; c++)
			amax[c] = 0;
		for (int64_t r = r0; r < r1; r++) {
			gen_row(t, r, row);
			for (int64_t i = 0; i < t->ne0; i++) {
				float v = row[i] < 0 ? -row[i] : row[i];
				if (v > amax[i / T])
					amax[i / T] = v;
			}
		}
		for (int64_t c = 0; c < n_tc; c++) {
			float sc = amax[c] > 0 ? amax[c] / 448.0f : 1.0f;
			memcpy(&scales[tr * n_tc + c], &sc, sizeof sc);
		}
		for (int64_t r = r0; r < r1; r++) {
			gen_row(t, r, row);
			uint8_t *q = F->dst + (size_t)r * (size_t)t->ne0;
			for (int64_t i = 0; i < t->ne0; i++) {
				float sc;
				memcpy(&sc, &scales[tr * n_tc + i / T], sizeof sc);
				q[i] = mkq_e4m3(row[i] / sc);
			}
		}
	}
	free(amax);
}

static int fill_cb(void *ctx, const struct gguf_tensor *gt, void *dst, uint64_t nbytes, struct gguf_error *err)
{
	struct mk_fill *F = ctx;
	const struct mk_tensor *t = NULL;
	for (size_t i = 0; i < F->n_tensors && !t; i++)
		if (strcmp(F->tensors[i].name, gt->name) == 0)
			t = &F->tensors[i];
	if (!t) {
		if (err)
			snprintf(err->msg, sizeof err->msg, "mkmodel: no generator for tensor %s", gt->name);
		return GGUF_ERR_INVALID_ARG;
	}
	F->t = t;
	F->dst = dst;
	F->ok = true;
	if (t->type == GGUF_TYPE_FP8_E4M3_B128) {
		rn_pool_run(F->pool, fill_fp8_job, F);
	} else {
		F->row_bytes = (size_t)gguf_row_size(t->type, t->ne0);
		if ((uint64_t)F->row_bytes * (uint64_t)t->ne1 != nbytes) {
			if (err)
				snprintf(err->msg, sizeof err->msg, "mkmodel: size mismatch for %s", gt->name);
			return GGUF_ERR_INVALID_ARG;
		}
		rn_pool_run(F->pool, fill_rows_job, F);
	}
	if (!F->ok) {
		if (err)
			snprintf(err->msg, sizeof err->msg, "mkmodel: cannot quantize %s to %s", gt->name,
				 gguf_type_name(t->type));
		return GGUF_ERR_UNSUPPORTED;
	}
	return GGUF_OK;
}

/* ---------------------------------------------------------------------------------------------------- */

/* Per-tensor weight types of a file type ("Q4_K_M" mixes as llama.cpp's quantizer does). */
struct mk_types {
	uint32_t base, embed, output, attn_v_more, ffn_down_more;
	bool more_bits; /* Q4_K_M: attn_v / ffn_down of some layers get *_more */
	uint32_t file_type;
};

static int parse_types(const char *name, struct mk_types *t)
{
	memset(t, 0, sizeof *t);
	uint32_t ty;
	if (strcasecmp(name, "Q4_K_M") == 0) {
		*t = (struct mk_types){GGUF_TYPE_Q4_K, GGUF_TYPE_Q4_K, GGUF_TYPE_Q6_K, GGUF_TYPE_Q6_K, GGUF_TYPE_Q6_K, true, 15};
		return 0;
	}
	if (strcasecmp(name, "Q5_K_M") == 0) {
		*t = (struct mk_types){GGUF_TYPE_Q5_K, GGUF_TYPE_Q5_K, GGUF_TYPE_Q6_K, GGUF_TYPE_Q6_K, GGUF_TYPE_Q6_K, true, 17};
		return 0;
	}
	if (strcasecmp(name, "FP8") == 0) {
		*t = (struct mk_types){GGUF_TYPE_FP8_E4M3_B128, GGUF_TYPE_BF16, GGUF_TYPE_BF16, 0, 0, false, 0};
		return 0;
	}
	if (gguf_type_from_name(name, &ty) != GGUF_OK || !mkq_supported(ty))
		return -1;
	static const struct {
		uint32_t type, ftype;
	} ft[] = {{GGUF_TYPE_F32, 0},  {GGUF_TYPE_F16, 1},  {GGUF_TYPE_Q4_0, 2}, {GGUF_TYPE_Q8_0, 7},
		  {GGUF_TYPE_Q4_K, 14}, {GGUF_TYPE_Q5_K, 16}, {GGUF_TYPE_Q6_K, 18}, {GGUF_TYPE_BF16, 32}};
	*t = (struct mk_types){ty, ty, ty, ty, ty, false, 0};
	for (size_t i = 0; i < sizeof ft / sizeof ft[0]; i++)
		if (ft[i].type == ty)
			t->file_type = ft[i].ftype;
	return 0;
}

/* llama.cpp's use_more_bits(): the first and last eighth of the layers and every third one between. */
static bool more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: orun mkmodel -o OUT.gguf --tokenizer REAL.gguf [options]\n\n"
		"Writes a deterministic synthetic model with the tokenizer of a real GGUF (vocabulary size = its\n"
		"token count). Same arguments, same bytes.\n\n"
		"Options:\n"
		"  -o, --output FILE     output GGUF\n"
		"      --tokenizer FILE  GGUF whose tokenizer.* metadata is copied\n"
		"      --arch A          llama | qwen2 | qwen3 (default qwen3)\n"
		"      --preset P        qwen3-14b (40 layers, 5120 wide, 40/8 heads, 17408 ff, 40960 ctx)\n"
		"      --layers N        (default 2)     --dim N (default 256)    --heads N (default 4)\n"
		"      --kv-heads N      (default 2)     --head-dim N (default dim/heads)\n"
		"      --ff N            (default 512)   --ctx N (default 4096)\n"
		"      --type T          F32 F16 BF16 Q8_0 Q4_0 Q4_K Q5_K Q6_K Q4_K_M Q5_K_M FP8 (default F16)\n"
		"      --seed S          (default 1)\n"
		"      --tied            no output.weight (the embedding is the LM head)\n"
		"      --rope-base F     (default 1e6 for qwen, 1e4 for llama)\n"
		"      --yarn F          YaRN scaling factor (rope.scaling.type yarn)\n"
		"      --yarn-orig N     YaRN original context (default ctx / factor)\n"
		"      --threads N       generator threads (default: physical cores)\n"
		"      --chat-template F tokenizer.chat_template from file F instead of the tokenizer's\n"
		"  -h, --help            show this help\n");
}

static int add_tensor(struct gguf_writer *w, struct mk_tensor *list, size_t *n, const char *name, uint32_t type,
		      int64_t ne0, int64_t ne1, enum mk_kind kind, uint64_t seed, void *fill_ctx)
{
	struct mk_tensor *t = &list[(*n)++];
	snprintf(t->name, sizeof t->name, "%s", name);
	t->type = type;
	t->ne0 = ne0;
	t->ne1 = ne1;
	t->kind = kind;
	uint64_t s = seed ^ fnv1a(name);
	t->seed = splitmix(&s);
	int64_t ne[2] = {ne0, ne1};
	int rc = gguf_w_tensor(w, name, type, ne1 > 1 || kind == MK_MATRIX || kind == MK_EMBED || kind == MK_OUTPUT ? 2 : 1,
			       ne, NULL, fill_cb, fill_ctx);
	if (rc != GGUF_OK)
		fprintf(stderr, "orun mkmodel: tensor %s (%s, [%lld, %lld]): %s\n", name, gguf_type_name(type),
			(long long)ne0, (long long)ne1, gguf_strerror(rc));
	return rc;
}

#define MK_MAX_TEMPLATE (1u << 20) /* bytes of a --chat-template file */

int cmd_mkmodel(int argc, char **argv)
{
	struct mk_shape sh = {.arch = "qwen3", .layers = 2, .dim = 256, .heads = 4, .kv_heads = 2, .ff = 512, .ctx = 4096};
	const char *out = NULL, *tokfile = NULL, *type_name = "F16", *chat_template_file = NULL;
	struct ob_buf chat_template;
	ob_buf_init(&chat_template, MK_MAX_TEMPLATE);
	int seed = 1, threads = 0;
	float rope_base = 0;
	enum { O_TOKENIZER = 256, O_ARCH, O_PRESET, O_LAYERS, O_DIM, O_HEADS, O_KV_HEADS, O_HEAD_DIM, O_FF, O_CTX, O_TYPE,
	       O_SEED, O_THREADS, O_TIED, O_ROPE_BASE, O_YARN, O_YARN_ORIG, O_CHAT_TEMPLATE };
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'},
		{"output", required_argument, NULL, 'o'},
		{"tokenizer", required_argument, NULL, O_TOKENIZER},
		{"arch", required_argument, NULL, O_ARCH},
		{"preset", required_argument, NULL, O_PRESET},
		{"layers", required_argument, NULL, O_LAYERS},
		{"dim", required_argument, NULL, O_DIM},
		{"heads", required_argument, NULL, O_HEADS},
		{"kv-heads", required_argument, NULL, O_KV_HEADS},
		{"head-dim", required_argument, NULL, O_HEAD_DIM},
		{"ff", required_argument, NULL, O_FF},
		{"ctx", required_argument, NULL, O_CTX},
		{"type", required_argument, NULL, O_TYPE},
		{"seed", required_argument, NULL, O_SEED},
		{"threads", required_argument, NULL, O_THREADS},
		{"tied", no_argument, NULL, O_TIED},
		{"rope-base", required_argument, NULL, O_ROPE_BASE},
		{"yarn", required_argument, NULL, O_YARN},
		{"yarn-orig", required_argument, NULL, O_YARN_ORIG},
		{"chat-template", required_argument, NULL, O_CHAT_TEMPLATE},
		{NULL, 0, NULL, 0},
	};
	const char *cmd = "orun mkmodel";
	char a[64];
	int c, bad = 0;
	optind = 1;
	while (!bad && (c = argopt_next(cmd, argc, argv, "ho:", longopts, a, sizeof a)) != -1) {
		const char *v = optarg;
		switch (c) {
		case 'h':
			usage(stdout);
			return 0;
		case 'o':
			out = v;
			break;
		case O_TOKENIZER:
			tokfile = v;
			break;
		case O_CHAT_TEMPLATE:
			chat_template_file = v;
			break;
		case O_ARCH:
			if (strcmp(v, "llama") && strcmp(v, "qwen2") && strcmp(v, "qwen3")) {
				fprintf(stderr, "orun mkmodel: --arch must be llama, qwen2 or qwen3, got '%s'\n", v);
				return 2;
			}
			sh.arch = v;
			break;
		case O_PRESET: /* replaces the whole shape: flags after it adjust the preset */
			if (strcmp(v, "qwen3-14b") != 0) {
				fprintf(stderr, "orun mkmodel: unknown preset '%s' (known: qwen3-14b)\n", v);
				return 2;
			}
			sh = (struct mk_shape){.arch = "qwen3", .layers = 40, .dim = 5120, .heads = 40, .kv_heads = 8,
					       .head_dim = 128, .ff = 17408, .ctx = 40960};
			break;
		case O_LAYERS:
			bad = argnum_int(cmd, a, v, 1, MK_MAX_LAYERS, &sh.layers);
			break;
		case O_DIM:
			bad = argnum_int(cmd, a, v, 32, MK_MAX_DIM, &sh.dim);
			break;
		case O_HEADS:
			bad = argnum_int(cmd, a, v, 1, 1024, &sh.heads);
			break;
		case O_KV_HEADS:
			bad = argnum_int(cmd, a, v, 1, 1024, &sh.kv_heads);
			break;
		case O_HEAD_DIM:
			bad = argnum_int(cmd, a, v, 2, 4096, &sh.head_dim);
			break;
		case O_FF:
			bad = argnum_int(cmd, a, v, 32, MK_MAX_FF, &sh.ff);
			break;
		case O_CTX:
			bad = argnum_int(cmd, a, v, 1, 1 << 22, &sh.ctx);
			break;
		case O_TYPE:
			type_name = v;
			break;
		case O_SEED:
			bad = argnum_int(cmd, a, v, 0, INT_MAX, &seed);
			break;
		case O_THREADS:
			bad = argnum_int(cmd, a, v, 1, RN_POOL_MAX_THREADS, &threads);
			break;
		case O_TIED:
			sh.tied = true;
			break;
		case O_ROPE_BASE:
			bad = argnum_float(cmd, a, v, true, &rope_base);
			break;
		case O_YARN:
			bad = argnum_float(cmd, a, v, true, &sh.yarn_factor);
			break;
		case O_YARN_ORIG:
			bad = argnum_int(cmd, a, v, 1, 1 << 22, &sh.yarn_orig);
			break;
		default: /* '?': argopt_next said why */
			bad = 1;
		}
	}
	if (bad || argopt_no_operands(cmd, argc, argv))
		return 2;
	if (!out || !tokfile) {
		fprintf(stderr, "orun mkmodel: -o OUT.gguf and --tokenizer REAL.gguf are required\n\n");
		usage(stderr);
		return 2;
	}
	struct mk_types ty;
	if (parse_types(type_name, &ty) != 0) {
		fprintf(stderr, "orun mkmodel: unsupported --type '%s' (F32 F16 BF16 Q8_0 Q4_0 Q4_K Q5_K Q6_K Q4_K_M "
				"Q5_K_M FP8)\n", type_name);
		return 2;
	}
	bool qwen = strcmp(sh.arch, "llama") != 0;
	if (sh.head_dim == 0) {
		if (sh.dim % sh.heads) {
			fprintf(stderr, "orun mkmodel: --dim %d is not a multiple of --heads %d; give --head-dim\n", sh.dim,
				sh.heads);
			return 2;
		}
		sh.head_dim = sh.dim / sh.heads;
	}
	if (sh.heads % sh.kv_heads || sh.head_dim % 2) {
		fprintf(stderr, "orun mkmodel: --heads %d must be a multiple of --kv-heads %d and the head size %d even\n",
			sh.heads, sh.kv_heads, sh.head_dim);
		return 2;
	}
	sh.rope_base = rope_base > 0 ? rope_base : qwen ? 1000000.0f : 10000.0f;
	sh.eps = qwen ? 1e-6f : 1e-5f;
	const int64_t q_dim = (int64_t)sh.heads * sh.head_dim, kv_dim = (int64_t)sh.kv_heads * sh.head_dim;
	/* every row length must be a multiple of the block size of the types used on it */
	uint32_t check[] = {ty.base, ty.embed, ty.output, ty.attn_v_more, ty.ffn_down_more};
	int64_t cols[] = {sh.dim, q_dim, sh.ff};
	for (size_t i = 0; i < sizeof check / sizeof check[0]; i++) {
		const struct gguf_type_info *ti = check[i] ? gguf_type_get(check[i]) : NULL;
		if (!ti)
			continue;
		for (size_t j = 0; j < 3; j++)
			if (cols[j] % ti->block_elems) {
				fprintf(stderr, "orun mkmodel: type %s needs row lengths that are multiples of %u; dim %d, "
						"heads x head-dim %lld and ff %d are not all\n", ti->name, ti->block_elems,
					sh.dim, (long long)q_dim, sh.ff);
				return 2;
			}
	}

	struct gguf_error ge = {0};
	struct gguf_file *tf = gguf_open(tokfile, &ge);
	if (!tf) {
		fprintf(stderr, "orun mkmodel: %s: %s\n", tokfile, ge.msg);
		return 1;
	}
	const struct gguf_array *toks = NULL;
	if (gguf_find_arr(tf, "tokenizer.ggml.tokens", &toks) != GGUF_OK || toks->n == 0 || toks->n > (1u << 22)) {
		fprintf(stderr, "orun mkmodel: %s has no usable tokenizer.ggml.tokens\n", tokfile);
		gguf_close(tf);
		return 1;
	}
	const int64_t n_vocab = (int64_t)toks->n;

	int rc = 1;
	struct gguf_writer *w = gguf_writer_new();
	size_t max_tensors = 4 + (size_t)sh.layers * 16;
	struct mk_tensor *list = calloc(max_tensors, sizeof *list);
	struct mk_fill F = {0};
	if (!w || !list) {
		fprintf(stderr, "orun mkmodel: out of memory\n");
		goto out;
	}
	char key[128], name[64];
	const char *A = sh.arch;
	int e = GGUF_OK;
#define KEY(s) (snprintf(key, sizeof key, "%s." s, A), key)
	e = e ? e : gguf_w_str(w, "general.architecture", A);
	snprintf(name, sizeof name, "orun synthetic %s %s seed %d", A, type_name, seed);
	e = e ? e : gguf_w_str(w, "general.name", name);
	if (ty.file_type)
		e = e ? e : gguf_w_u32(w, "general.file_type", ty.file_type);
	e = e ? e : gguf_w_u32(w, KEY("block_count"), (uint32_t)sh.layers);
	e = e ? e : gguf_w_u32(w, KEY("context_length"), (uint32_t)sh.ctx);
	e = e ? e : gguf_w_u32(w, KEY("embedding_length"), (uint32_t)sh.dim);
	e = e ? e : gguf_w_u32(w, KEY("feed_forward_length"), (uint32_t)sh.ff);
	e = e ? e : gguf_w_u32(w, KEY("attention.head_count"), (uint32_t)sh.heads);
	e = e ? e : gguf_w_u32(w, KEY("attention.head_count_kv"), (uint32_t)sh.kv_heads);
	if (sh.head_dim != sh.dim / sh.heads || sh.dim % sh.heads) {
		e = e ? e : gguf_w_u32(w, KEY("attention.key_length"), (uint32_t)sh.head_dim);
		e = e ? e : gguf_w_u32(w, KEY("attention.value_length"), (uint32_t)sh.head_dim);
	}
	e = e ? e : gguf_w_f32(w, KEY("attention.layer_norm_rms_epsilon"), sh.eps);
	e = e ? e : gguf_w_f32(w, KEY("rope.freq_base"), sh.rope_base);
	if (strcmp(A, "llama") == 0)
		e = e ? e : gguf_w_u32(w, KEY("rope.dimension_count"), (uint32_t)sh.head_dim);
	if (sh.yarn_factor > 0) {
		int orig = sh.yarn_orig ? sh.yarn_orig : (int)((float)sh.ctx / sh.yarn_factor);
		e = e ? e : gguf_w_str(w, KEY("rope.scaling.type"), "yarn");
		e = e ? e : gguf_w_f32(w, KEY("rope.scaling.factor"), sh.yarn_factor);
		e = e ? e : gguf_w_u32(w, KEY("rope.scaling.original_context_length"), (uint32_t)orig);
	}
	for (uint64_t i = 0; e == GGUF_OK && i < gguf_kv_count(tf); i++) {
		const struct gguf_kv *kv = gguf_kv_at(tf, i);
		if (strncmp(kv->key, "tokenizer.", 10) == 0 &&
		    !(chat_template_file && strcmp(kv->key, "tokenizer.chat_template") == 0))
			e = gguf_w_copy_kv(w, tf, kv);
	}
	if (chat_template_file && e == GGUF_OK) {
		if (!ob_buf_read_file(&chat_template, chat_template_file)) {
			fprintf(stderr, "orun mkmodel: cannot read --chat-template %s%s\n", chat_template_file,
				chat_template.over ? " (over 1 MiB)" : "");
			goto out;
		}
		e = gguf_w_strn(w, "tokenizer.chat_template", chat_template.p ? chat_template.p : "", chat_template.len);
	}
#undef KEY
	if (e != GGUF_OK) {
		fprintf(stderr, "orun mkmodel: metadata: %s\n", gguf_strerror(e));
		goto out;
	}

	size_t n = 0;
	uint64_t S = (uint64_t)seed;
	e = add_tensor(w, list, &n, "token_embd.weight", ty.embed, sh.dim, n_vocab, MK_EMBED, S, &F);
	e = e ? e : add_tensor(w, list, &n, "output_norm.weight", GGUF_TYPE_F32, sh.dim, 1, MK_NORM, S, &F);
	if (!sh.tied)
		e = e ? e : add_tensor(w, list, &n, "output.weight", ty.output, sh.dim, n_vocab, MK_OUTPUT, S, &F);
	for (int l = 0; e == GGUF_OK && l < sh.layers; l++) {
		char tn[64];
		bool more = ty.more_bits && more_bits(l, sh.layers);
#define T(s) (snprintf(tn, sizeof tn, "blk.%d." s, l), tn)
		e = e ? e : add_tensor(w, list, &n, T("attn_norm.weight"), GGUF_TYPE_F32, sh.dim, 1, MK_NORM, S, &F);
		e = e ? e : add_tensor(w, list, &n, T("attn_q.weight"), ty.base, sh.dim, q_dim, MK_MATRIX, S, &F);
		e = e ? e : add_tensor(w, list, &n, T("attn_k.weight"), ty.base, sh.dim, kv_dim, MK_MATRIX, S, &F);
		e = e ? e : add_tensor(w, list, &n, T("attn_v.weight"), more ? ty.attn_v_more : ty.base, sh.dim, kv_dim,
				       MK_MATRIX, S, &F);
		e = e ? e : add_tensor(w, list, &n, T("attn_output.weight"), ty.base, q_dim, sh.dim, MK_MATRIX, S, &F);
		if (strcmp(A, "qwen2") == 0) {
			e = e ? e : add_tensor(w, list, &n, T("attn_q.bias"), GGUF_TYPE_F32, q_dim, 1, MK_BIAS, S, &F);
			e = e ? e : add_tensor(w, list, &n, T("attn_k.bias"), GGUF_TYPE_F32, kv_dim, 1, MK_BIAS, S, &F);
			e = e ? e : add_tensor(w, list, &n, T("attn_v.bias"), GGUF_TYPE_F32, kv_dim, 1, MK_BIAS, S, &F);
		}
		if (strcmp(A, "qwen3") == 0) {
			e = e ? e : add_tensor(w, list, &n, T("attn_q_norm.weight"), GGUF_TYPE_F32, sh.head_dim, 1, MK_NORM, S, &F);
			e = e ? e : add_tensor(w, list, &n, T("attn_k_norm.weight"), GGUF_TYPE_F32, sh.head_dim, 1, MK_NORM, S, &F);
		}
		e = e ? e : add_tensor(w, list, &n, T("ffn_norm.weight"), GGUF_TYPE_F32, sh.dim, 1, MK_NORM, S, &F);
		e = e ? e : add_tensor(w, list, &n, T("ffn_gate.weight"), ty.base, sh.dim, sh.ff, MK_MATRIX, S, &F);
		e = e ? e : add_tensor(w, list, &n, T("ffn_up.weight"), ty.base, sh.dim, sh.ff, MK_MATRIX, S, &F);
		e = e ? e : add_tensor(w, list, &n, T("ffn_down.weight"), more ? ty.ffn_down_more : ty.base, sh.ff, sh.dim,
				       MK_MATRIX, S, &F);
#undef T
	}
	if (e != GGUF_OK)
		goto out;

	F.tensors = list;
	F.n_tensors = n;
	F.max_ne0 = sh.dim > sh.ff ? sh.dim : sh.ff;
	if (q_dim > F.max_ne0)
		F.max_ne0 = q_dim;
	if (rn_pool_new(threads, &F.pool) != 0) {
		fprintf(stderr, "orun mkmodel: cannot start %d threads\n", threads);
		goto out;
	}
	F.scratch = malloc((size_t)rn_pool_size(F.pool) * (size_t)F.max_ne0 * sizeof(float));
	if (!F.scratch) {
		fprintf(stderr, "orun mkmodel: out of memory\n");
		goto out;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (gguf_writer_write_file(w, out, &ge) != GGUF_OK) {
		fprintf(stderr, "orun mkmodel: writing %s: %s\n", out, ge.msg);
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	fprintf(stderr, "orun mkmodel: wrote %s (%s, %s, %d layers, dim %d, %d/%d heads x %d, ff %d, vocab %lld) in %.1f s\n",
		out, A, type_name, sh.layers, sh.dim, sh.heads, sh.kv_heads, sh.head_dim, sh.ff, (long long)n_vocab, secs);
	rc = 0;
out:
	ob_buf_free(&chat_template);
	rn_pool_free(F.pool);
	free(F.scratch);
	free(list);
	gguf_writer_free(w);
	gguf_close(tf);
	return rc;
}
