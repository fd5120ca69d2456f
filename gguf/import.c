/* gguf/import.c — Hugging Face checkpoint directory (Qwen3 / Qwen2 / Llama, safetensors) to GGUF, with the
 * metadata keys, tensor names and tokenizer keys llama.cpp's convert_hf_to_gguf.py produces, so llama.cpp,
 * Ollama and orun read the result alike (except FP8 tensors, which only orun reads: gguf/README.md).
 *
 * What it does not do: SentencePiece (tokenizer.model) vocabularies, the llama3 rope_freqs tensor, MoE or
 * multimodal models. Each of these is refused with GGUF_ERR_UNSUPPORTED and a message saying so.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "base/json.h"
#include "gguf/internal.h"
#include "gguf/safetensors.h"
#include "gguf/writer.h"

enum { ARCH_LLAMA, ARCH_QWEN2, ARCH_QWEN3 };
static const char *const arch_names[] = {"llama", "qwen2", "qwen3"};

/* llama.cpp token types */
enum { TT_NORMAL = 1, TT_CONTROL = 3, TT_USER_DEFINED = 4, TT_UNUSED = 5 };

struct hp {
	int arch;
	int64_t n_embd, n_ff, n_layer, n_head, n_head_kv, head_dim, n_ctx, vocab;
	bool has_head_dim, tied;
	double rope_theta, rms_eps;
	char rope_type[16];
	double rope_factor;
	int64_t rope_orig_ctx;
	char name[256];
};

/* One output tensor and where its data comes from. */
struct src {
	const struct gguf_st_tensor *w;     /* the weight (or 1-D vector) */
	const struct gguf_st_tensor *scale; /* FP8: weight_scale_inv tile grid */
	uint32_t out_type;
	int permute_heads;                  /* llama q/k: rows permuted in groups of this many heads (0: none) */
	int64_t rows, cols;                 /* 2-D view: rows = shape[0], cols = product of the rest */
};

struct job {
	struct src *srcs;
	uint64_t n, done;
	const struct gguf_import_opts *opts;
};

/* ---------------------------------------------------------------- config.json */

static int jint(const struct ob_json *root, const char *key, int64_t *out, bool required, struct gguf_error *err)
{
	const struct ob_json *v = ob_json_get(root, key);
	if (!v || v->type == OB_JSON_NULL) {
		if (required)
			return gg_fail(err, GGUF_ERR_FORMAT, 0, "config.json lacks \"%s\"", key);
		return 1;
	}
	if (!gg_json_int(v, 1, INT32_MAX, out))
		return gg_fail(err, GGUF_ERR_FORMAT, gg_json_pos(v), "config.json: \"%s\" is not a positive integer",
			       key);
	return 0;
}

static int jnum(const struct ob_json *obj, const char *key, double *out)
{
	const struct ob_json *v = ob_json_get(obj, key);
	if (!v || v->type == OB_JSON_NULL)
		return 1;
	if (v->type != OB_JSON_NUMBER)
		return -1;
	*out = v->number;
	return 0;
}

static int read_config(const char *dir, struct hp *h, struct gguf_error *err)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/config.json", dir);
	size_t len;
	char *s = gg_read_file(path, 16u << 20, &len, err);
	if (!s)
		return err ? err->code : GGUF_ERR_IO;
	struct ob_json_doc *doc;
	int e = gg_json_parse("config.json", s, len, 0, &doc, err);
	if (e) {
		free(s);
		return e;
	}
	const struct ob_json *j = ob_json_root(doc);
	const struct ob_json *a0 = ob_json_at(ob_json_get(j, "architectures"), 0);
	if (ob_json_str_eq(a0, "LlamaForCausalLM"))
		h->arch = ARCH_LLAMA;
	else if (ob_json_str_eq(a0, "Qwen2ForCausalLM"))
		h->arch = ARCH_QWEN2;
	else if (ob_json_str_eq(a0, "Qwen3ForCausalLM"))
		h->arch = ARCH_QWEN3;
	else {
		char esc[96];
		bool str = a0 && a0->type == OB_JSON_STRING;
		gg_escape(esc, sizeof esc, str ? a0->str : "", str ? strlen(a0->str) : 0, 60);
		e = gg_fail(err, GGUF_ERR_UNSUPPORTED, 0,
			    "config.json: architecture '%s' is not supported (LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM are)",
			    esc);
		goto out;
	}
	if ((e = jint(j, "hidden_size", &h->n_embd, true, err)) < 0 || e > 1 ||
	    (e = jint(j, "intermediate_size", &h->n_ff, true, err)) > 1 ||
	    (e = jint(j, "num_hidden_layers", &h->n_layer, true, err)) > 1 ||
	    (e = jint(j, "num_attention_heads", &h->n_head, true, err)) > 1 ||
	    (e = jint(j, "vocab_size", &h->vocab, true, err)) > 1)
		goto out;
	e = jint(j, "num_key_value_heads", &h->n_head_kv, false, err);
	if (e > 1)
		goto out;
	if (e == 1)
		h->n_head_kv = h->n_head;
	e = jint(j, "head_dim", &h->head_dim, false, err);
	if (e > 1)
		goto out;
	h->has_head_dim = e == 0;
	if (e == 1)
		h->head_dim = h->n_embd / h->n_head;
	e = jint(j, "max_position_embeddings", &h->n_ctx, false, err);
	if (e > 1)
		goto out;
	if (e == 1)
		h->n_ctx = 0;
	e = 0;
	if (h->n_head % h->n_head_kv) {
		e = gg_fail(err, GGUF_ERR_FORMAT, 0, "config.json: num_attention_heads %lld is not a multiple of num_key_value_heads %lld",
			    (long long)h->n_head, (long long)h->n_head_kv);
		goto out;
	}
	h->rope_theta = 10000.0;
	if (jnum(j, "rope_theta", &h->rope_theta) < 0 || jnum(j, "rms_norm_eps", &h->rms_eps) != 0) {
		e = gg_fail(err, GGUF_ERR_FORMAT, 0, "config.json: rope_theta or rms_norm_eps missing or not a number");
		goto out;
	}
	const struct ob_json *t = ob_json_get(j, "tie_word_embeddings");
	h->tied = t && t->boolean;
	if (t && t->type != OB_JSON_BOOL) {
		e = gg_fail(err, GGUF_ERR_FORMAT, 0, "config.json: tie_word_embeddings is not a bool");
		goto out;
	}
	const struct ob_json *rs = ob_json_get(j, "rope_scaling");
	if (rs && rs->type != OB_JSON_NULL) {
		const struct ob_json *ty = ob_json_get(rs, "rope_type");
		if (!ty)
			ty = ob_json_get(rs, "type");
		const char *tn = ty && ty->type == OB_JSON_STRING ? ty->str : NULL;
		if (tn && (strcmp(tn, "linear") == 0 || strcmp(tn, "yarn") == 0)) {
			snprintf(h->rope_type, sizeof h->rope_type, "%s", tn);
			if (jnum(rs, "factor", &h->rope_factor) != 0)
				e = gg_fail(err, GGUF_ERR_FORMAT, 0, "config.json: rope_scaling.factor missing");
			double oc = 0;
			if (!e && strcmp(tn, "yarn") == 0 && jnum(rs, "original_max_position_embeddings", &oc) == 0)
				h->rope_orig_ctx = (int64_t)oc;
		} else if (!tn || strcmp(tn, "default") != 0) {
			e = gg_fail(err, GGUF_ERR_UNSUPPORTED, 0, "config.json: rope_scaling type '%s' is not supported (linear, yarn)",
				    tn ? tn : "?");
		}
		if (e)
			goto out;
	}
	const struct ob_json *qc = ob_json_get(j, "quantization_config");
	if (qc && qc->type != OB_JSON_NULL) {
		if (!ob_json_str_eq(ob_json_get(qc, "quant_method"), "fp8")) {
			e = gg_fail(err, GGUF_ERR_UNSUPPORTED, 0, "config.json: quantization_config other than fp8 is not supported");
			goto out;
		}
		const struct ob_json *bs = ob_json_get(qc, "weight_block_size");
		int64_t b0, b1;
		if (bs && (!gg_json_int(ob_json_at(bs, 0), 1, 1 << 20, &b0) ||
			   !gg_json_int(ob_json_at(bs, 1), 1, 1 << 20, &b1) || b0 != GGUF_FP8_TILE || b1 != GGUF_FP8_TILE)) {
			e = gg_fail(err, GGUF_ERR_UNSUPPORTED, 0, "config.json: fp8 weight_block_size must be [128, 128]");
			goto out;
		}
	}
	const struct ob_json *nm = ob_json_get(j, "_name_or_path");
	if (nm && nm->type == OB_JSON_STRING && nm->str[0]) {
		const char *b = strrchr(nm->str, '/');
		snprintf(h->name, sizeof h->name, "%s", b ? b + 1 : nm->str);
	}
out:
	ob_json_free(doc);
	free(s);
	return e > 1 ? e : 0;
}

/* ---------------------------------------------------------------- tokenizer */

struct vocab {
	char **tok;       /* vocab entries by id (NULL: unused id) */
	size_t *tok_len;
	int32_t *type;
	int64_t n;
	char **merges;
	uint64_t n_merges;
	char pre[32];
	int64_t special[7]; /* bos eos unk sep pad cls mask; -1 when absent */
	int add_bos, add_eos; /* -1 unknown, 0, 1 */
	char *chat_template;
};

static const char *const special_names[7] = {"bos", "eos", "unk", "sep", "pad", "cls", "mask"};
static const char *const special_keys[7] = {
	"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id",
	"tokenizer.ggml.seperator_token_id", "tokenizer.ggml.padding_token_id", "tokenizer.ggml.cls_token_id",
	"tokenizer.ggml.mask_token_id"};

static void vocab_free(struct vocab *v)
{
	for (int64_t i = 0; v->tok && i < v->n; i++)
		free(v->tok[i]);
	for (uint64_t i = 0; v->merges && i < v->n_merges; i++)
		free(v->merges[i]);
	free(v->tok);
	free(v->tok_len);
	free(v->type);
	free(v->merges);
	free(v->chat_template);
}

static bool looks_special(const char *t, size_t n)
{
	if (n >= 4 && memcmp(t, "<|", 2) == 0 && memcmp(t + n - 2, "|>", 2) == 0)
		return true;
	if (n >= 8 && memcmp(t, "<\xef\xbd\x9c", 4) == 0 && memcmp(t + n - 4, "\xef\xbd\x9c>", 4) == 0)
		return true;
	if (n >= 8 && memcmp(t, "<unused", 7) == 0 && t[n - 1] == '>')
		return true;
	return (n == 5 && memcmp(t, "<pad>", 5) == 0) || (n == 6 && memcmp(t, "<mask>", 6) == 0) ||
	       (n == 7 && memcmp(t, "<2mass>", 7) == 0) || (n == 7 && memcmp(t, "[@BOS@]", 7) == 0);
}

/* True when the pre-tokenizer (or a Sequence of them) contains a ByteLevel step; *regex gets a Split pattern. */
static bool has_bytelevel(const struct ob_json *pt, char **regex, bool *digits)
{
	if (!pt || pt->type != OB_JSON_OBJECT)
		return false;
	const struct ob_json *ty = ob_json_get(pt, "type");
	if (ob_json_str_eq(ty, "ByteLevel"))
		return true;
	if (ob_json_str_eq(ty, "Digits"))
		*digits = true;
	if (ob_json_str_eq(ty, "Split") && !*regex)
		*regex = gg_json_dup(ob_json_get(ob_json_get(pt, "pattern"), "Regex"), NULL);
	if (ob_json_str_eq(ty, "Sequence")) {
		const struct ob_json *arr = ob_json_get(pt, "pretokenizers");
		bool found = false;
		if (arr && arr->type == OB_JSON_ARRAY)
			OB_JSON_FOREACH(p, arr)
			found |= has_bytelevel(p, regex, digits);
		return found;
	}
	return false;
}

/* The special token string of tokenizer_config.json's "<typ>_token" (string or {"content": ...}); borrowed. */
static const struct ob_json *config_token(const struct ob_json *c, const char *typ)
{
	char key[32];
	snprintf(key, sizeof key, "%s_token", typ);
	const struct ob_json *v = ob_json_get(c, key);
	if (v && v->type == OB_JSON_OBJECT)
		v = ob_json_get(v, "content");
	return v && v->type == OB_JSON_STRING ? v : NULL;
}

/* merges: "a b" strings, or [a, b] pairs (spaces inside a part become U+0120, as gguf-py does); NULL when
 * malformed or out of memory. */
static char *merge_text(const struct ob_json *m)
{
	if (m->type == OB_JSON_STRING)
		return gg_json_dup(m, NULL);
	if (m->type != OB_JSON_ARRAY || m->count != 2)
		return NULL;
	const struct ob_json *pa = ob_json_at(m, 0), *pb = ob_json_at(m, 1);
	if (pa->type != OB_JSON_STRING || pb->type != OB_JSON_STRING)
		return NULL;
	char *merged = malloc(2 * (pa->len + pb->len) + 2);
	if (!merged)
		return NULL;
	char *o = merged;
	for (int part = 0; part < 2; part++) {
		const struct ob_json *p = part ? pb : pa;
		if (part)
			*o++ = ' ';
		for (size_t q = 0; q < p->len; q++) {
			if (p->str[q] == ' ') {
				*o++ = (char)0xc4;
				*o++ = (char)0xa0;
			} else {
				*o++ = p->str[q];
			}
		}
	}
	*o = 0;
	return merged;
}

static int read_tokenizer(const char *dir, const struct hp *h, struct vocab *v, struct gguf_error *err)
{
	char path[4096];
	size_t len, clen = 0;
	int e = 0;
	memset(v, 0, sizeof *v);
	for (int k = 0; k < 7; k++)
		v->special[k] = -1;
	v->add_bos = v->add_eos = -1;
	snprintf(path, sizeof path, "%s/tokenizer.json", dir);
	char *s = gg_read_file(path, GG_JSON_MAX_BYTES, &len, err);
	if (!s) {
		struct stat st;
		snprintf(path, sizeof path, "%s/tokenizer.model", dir);
		if (stat(path, &st) == 0)
			return gg_fail(err, GGUF_ERR_UNSUPPORTED, 0,
				       "SentencePiece vocabularies (tokenizer.model without tokenizer.json) are not supported");
		return err ? err->code : GGUF_ERR_IO;
	}
	snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
	struct gguf_error cerr;
	char *cs = gg_read_file(path, 64u << 20, &clen, &cerr);
	struct ob_json_doc *jd = NULL, *cd = NULL;
	char *regex = NULL;
	if ((e = gg_json_parse("tokenizer.json", s, len, 0, &jd, err)))
		goto out;
	if (cs && (e = gg_json_parse("tokenizer_config.json", cs, clen, 0, &cd, err)))
		goto out;
	const struct ob_json *j = ob_json_root(jd), *c = cd ? ob_json_root(cd) : NULL;
	const struct ob_json *model = ob_json_get(j, "model");
	bool digits = false;
	if (!ob_json_str_eq(ob_json_get(model, "type"), "BPE") ||
	    !has_bytelevel(ob_json_get(j, "pre_tokenizer"), &regex, &digits)) {
		e = gg_fail(err, GGUF_ERR_UNSUPPORTED, 0,
			    "tokenizer.json: only byte-level BPE vocabularies (GPT-2 style) are supported");
		goto out;
	}
	/* pre-tokenizer kind, as llama.cpp names it (it identifies it by hashing the tokenization of a test
	 * text with the HF tokenizer; without one, orun recognises the pattern itself) */
	if (h->arch != ARCH_LLAMA)
		snprintf(v->pre, sizeof v->pre, "qwen2");
	else if (regex && strstr(regex, "(?i:'s|'t|'re|'ve|'m|'ll|'d)") && strstr(regex, "\\p{N}{1,3}"))
		snprintf(v->pre, sizeof v->pre, "llama-bpe");
	else if (!regex && digits)
		snprintf(v->pre, sizeof v->pre, "smollm");
	else if (!regex)
		snprintf(v->pre, sizeof v->pre, "gpt2");
	else
		snprintf(v->pre, sizeof v->pre, "default");

	v->n = h->vocab;
	v->tok = calloc((size_t)v->n, sizeof *v->tok);
	v->tok_len = calloc((size_t)v->n, sizeof *v->tok_len);
	v->type = calloc((size_t)v->n, sizeof *v->type);
	if (!v->tok || !v->tok_len || !v->type) {
		e = gg_fail(err, GGUF_ERR_NOMEM, 0, "out of memory for %lld tokens", (long long)v->n);
		goto out;
	}
	const struct ob_json *vo = ob_json_get(model, "vocab");
	if (!vo || vo->type != OB_JSON_OBJECT) {
		e = gg_fail(err, GGUF_ERR_FORMAT, 0, "tokenizer.json: model.vocab is not an object");
		goto out;
	}
	int k = 0;
	OB_JSON_FOREACH_MEMBER(tk, idv, vo)
	{
		int64_t id;
		if (!gg_json_int(idv, 0, v->n - 1, &id)) {
			e = gg_fail(err, GGUF_ERR_FORMAT, gg_json_pos(tk),
				    "tokenizer.json: vocabulary entry %d has an id outside [0, %lld) (config.json vocab_size)", k,
				    (long long)v->n);
			goto out;
		}
		if (v->tok[id]) {
			e = gg_fail(err, GGUF_ERR_FORMAT, gg_json_pos(tk), "tokenizer.json: id %lld appears twice",
				    (long long)id);
			goto out;
		}
		v->tok[id] = gg_json_dup(tk, &v->tok_len[id]);
		if (!v->tok[id]) {
			e = gg_fail(err, GGUF_ERR_NOMEM, gg_json_pos(tk), "out of memory");
			goto out;
		}
		v->type[id] = TT_NORMAL;
		k++;
	}
	const struct ob_json *added = ob_json_get(j, "added_tokens");
	if (added && added->type != OB_JSON_ARRAY)
		added = NULL;
	k = 0;
	OB_JSON_FOREACH(at, added)
	{
		int64_t id;
		size_t cl;
		if (!gg_json_int(ob_json_get(at, "id"), 0, v->n - 1, &id)) {
			e = gg_fail(err, GGUF_ERR_FORMAT, 0, "tokenizer.json: added token %d has an id outside [0, %lld)", k,
				    (long long)v->n);
			goto out;
		}
		char *content = gg_json_dup(ob_json_get(at, "content"), &cl);
		if (!content) {
			e = gg_fail(err, GGUF_ERR_FORMAT, 0, "tokenizer.json: added token %d has no content", k);
			goto out;
		}
		const struct ob_json *sp = ob_json_get(at, "special");
		bool special = sp && sp->type == OB_JSON_BOOL && sp->boolean;
		free(v->tok[id]);
		v->tok[id] = content;
		v->tok_len[id] = cl;
		v->type[id] = special || looks_special(content, cl) ? TT_CONTROL : TT_USER_DEFINED;
		k++;
	}
	for (int64_t id = 0; id < v->n; id++)
		if (!v->tok[id]) {
			char pad[32];
			snprintf(pad, sizeof pad, "[PAD%lld]", (long long)id);
			v->tok[id] = strdup(pad);
			v->tok_len[id] = strlen(pad);
			v->type[id] = TT_UNUSED;
			if (!v->tok[id]) {
				e = gg_fail(err, GGUF_ERR_NOMEM, 0, "out of memory");
				goto out;
			}
		}
	const struct ob_json *mg = ob_json_get(model, "merges");
	if (mg && mg->type == OB_JSON_ARRAY) {
		v->merges = calloc((size_t)mg->count + 1, sizeof *v->merges);
		if (!v->merges) {
			e = gg_fail(err, GGUF_ERR_NOMEM, 0, "out of memory");
			goto out;
		}
		k = 0;
		OB_JSON_FOREACH(m, mg)
		{
			char *merged = merge_text(m);
			if (!merged) {
				e = gg_fail(err, GGUF_ERR_FORMAT, gg_json_pos(m), "tokenizer.json: merge %d is malformed",
					    k);
				goto out;
			}
			v->merges[v->n_merges++] = merged;
			k++;
		}
	}
	/* add_bos / add_eos from a TemplateProcessing post-processor */
	const struct ob_json *pp = ob_json_get(j, "post_processor");
	if (ob_json_str_eq(ob_json_get(pp, "type"), "Sequence")) {
		const struct ob_json *arr = ob_json_get(pp, "processors");
		if (arr && arr->type == OB_JSON_ARRAY)
			OB_JSON_FOREACH(q, arr)
			if (ob_json_str_eq(ob_json_get(q, "type"), "TemplateProcessing"))
				pp = q;
	}
	if (ob_json_str_eq(ob_json_get(pp, "type"), "TemplateProcessing")) {
		const struct ob_json *single = ob_json_get(pp, "single");
		if (single && single->type == OB_JSON_ARRAY && single->count > 0) {
			v->add_bos = ob_json_get(ob_json_at(single, 0), "SpecialToken") != NULL;
			v->add_eos = ob_json_get(ob_json_at(single, single->count - 1), "SpecialToken") != NULL;
		}
	}
	/* special tokens and add_* flags from tokenizer_config.json, then config.json ids as a fallback */
	if (c) {
		for (int t = 0; t < 7; t++) {
			const struct ob_json *content = config_token(c, special_names[t]);
			if (!content)
				continue;
			OB_JSON_FOREACH(at, added)
			{
				const struct ob_json *ac = ob_json_get(at, "content");
				int64_t id;
				if (ac && ac->type == OB_JSON_STRING && ac->len == content->len &&
				    memcmp(ac->str, content->str, ac->len) == 0 &&
				    gg_json_int(ob_json_get(at, "id"), 0, v->n - 1, &id)) {
					v->special[t] = id;
					break;
				}
			}
		}
		const struct ob_json *b;
		if (v->add_bos < 0 && (b = ob_json_get(c, "add_bos_token")) && b->type == OB_JSON_BOOL)
			v->add_bos = b->boolean;
		if (v->add_eos < 0 && (b = ob_json_get(c, "add_eos_token")) && b->type == OB_JSON_BOOL)
			v->add_eos = b->boolean;
		const struct ob_json *ct = ob_json_get(c, "chat_template");
		if (ct && ct->type == OB_JSON_STRING) {
			v->chat_template = gg_json_dup(ct, NULL);
		} else if (ct && ct->type == OB_JSON_ARRAY) {
			OB_JSON_FOREACH(it, ct)
			if (ob_json_str_eq(ob_json_get(it, "name"), "default")) {
				free(v->chat_template);
				v->chat_template = gg_json_dup(ob_json_get(it, "template"), NULL);
			}
		}
	}
	if (!v->chat_template) {
		snprintf(path, sizeof path, "%s/chat_template.jinja", dir);
		struct gguf_error jerr;
		size_t tl;
		v->chat_template = gg_read_file(path, 16u << 20, &tl, &jerr);
	}
	/* config.json <typ>_token_id fallback */
	{
		snprintf(path, sizeof path, "%s/config.json", dir);
		size_t cl2;
		struct gguf_error e2;
		char *cj = gg_read_file(path, 16u << 20, &cl2, &e2);
		struct ob_json_doc *cc = cj ? ob_json_parse(cj, cl2, NULL) : NULL;
		for (int t = 0; cc && t < 7; t++) {
			char key[32];
			int64_t id;
			snprintf(key, sizeof key, "%s_token_id", special_names[t]);
			if (v->special[t] < 0 && gg_json_int(ob_json_get(ob_json_root(cc), key), 0, v->n - 1, &id))
				v->special[t] = id;
		}
		ob_json_free(cc);
		free(cj);
	}
out:
	free(regex);
	ob_json_free(jd);
	ob_json_free(cd);
	free(s);
	free(cs);
	return e;
}

/* ---------------------------------------------------------------- tensors */

static void put_f32_from(const struct gguf_st_tensor *t, uint8_t *dst, uint64_t i0, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		gg_stf32(dst + 4 * i, gguf_st_get_f32(t, i0 + i));
}

/* Row r of the output comes from row perm(r) of the source (llama's q/k permutation undone for RoPE). */
static int64_t src_row(const struct src *s, int64_t r)
{
	if (!s->permute_heads)
		return r;
	int64_t hd = s->rows / s->permute_heads, h = r / hd, k = r % hd;
	/* output layout per head: (hd/2, 2) from the source layout (2, hd/2) */
	return h * hd + (k % 2) * (hd / 2) + k / 2;
}

struct fill_ctx {
	const struct src *s;
	struct job *jb;
};

static int fill_one(void *ctx, const struct gguf_tensor *t, void *dst, uint64_t nbytes, struct gguf_error *err)
{
	const struct fill_ctx *fc = ctx;
	const struct src *s = fc->s;
	uint8_t *d = dst;
	const uint8_t *w = s->w->data;
	int64_t rows = s->rows, cols = s->cols;
	switch (s->out_type) {
	case GGUF_TYPE_F32:
		if (s->w->dtype == GGUF_ST_F32 && !s->permute_heads) {
			memcpy(d, w, nbytes);
		} else {
			for (int64_t r = 0; r < rows; r++)
				put_f32_from(s->w, d + (uint64_t)r * (uint64_t)cols * 4, (uint64_t)src_row(s, r) * (uint64_t)cols,
					     (uint64_t)cols);
		}
		break;
	case GGUF_TYPE_F16:
	case GGUF_TYPE_BF16: {
		uint64_t rb = (uint64_t)cols * 2;
		for (int64_t r = 0; r < rows; r++)
			memcpy(d + (uint64_t)r * rb, w + (uint64_t)src_row(s, r) * rb, rb);
		break;
	}
	case GGUF_TYPE_FP8_E4M3_B128: {
		uint64_t rb = (uint64_t)cols;
		for (int64_t r = 0; r < rows; r++)
			memcpy(d + (uint64_t)r * rb, w + (uint64_t)src_row(s, r) * rb, rb);
		/* the scale grid follows as f32 (weight_scale_inv may be stored as F32 or BF16) */
		put_f32_from(s->scale, d + (uint64_t)rows * (uint64_t)cols, 0, s->scale->n_elements);
		break;
	}
	default:
		return gg_fail(err, GGUF_ERR_UNSUPPORTED, 0, "tensor '%s': no conversion to %s", t->name,
			       gguf_type_name(s->out_type));
	}
	fc->jb->done++;
	if (fc->jb->opts && fc->jb->opts->progress &&
	    fc->jb->opts->progress(fc->jb->opts->progress_ctx, fc->jb->done, fc->jb->n) != 0)
		return gg_fail(err, GGUF_ERR_CANCELLED, 0, "cancelled after %llu of %llu tensors",
			       (unsigned long long)fc->jb->done, (unsigned long long)fc->jb->n);
	return GGUF_OK;
}

struct name_map {
	const char *hf;   /* suffix after model.layers.N. */
	const char *gguf; /* after blk.N. */
};

static const struct name_map layer_names[] = {
	{"input_layernorm.weight", "attn_norm.weight"},
	{"self_attn.q_proj.weight", "attn_q.weight"},
	{"self_attn.k_proj.weight", "attn_k.weight"},
	{"self_attn.v_proj.weight", "attn_v.weight"},
	{"self_attn.o_proj.weight", "attn_output.weight"},
	{"self_attn.q_proj.bias", "attn_q.bias"},
	{"self_attn.k_proj.bias", "attn_k.bias"},
	{"self_attn.v_proj.bias", "attn_v.bias"},
	{"self_attn.q_norm.weight", "attn_q_norm.weight"},
	{"self_attn.k_norm.weight", "attn_k_norm.weight"},
	{"post_attention_layernorm.weight", "ffn_norm.weight"},
	{"mlp.gate_proj.weight", "ffn_gate.weight"},
	{"mlp.up_proj.weight", "ffn_up.weight"},
	{"mlp.down_proj.weight", "ffn_down.weight"},
};
#define N_LAYER_NAMES (sizeof layer_names / sizeof layer_names[0])

static bool is_float(uint32_t dt)
{
	return dt == GGUF_ST_F32 || dt == GGUF_ST_F16 || dt == GGUF_ST_BF16 || dt == GGUF_ST_F64;
}

/* Plan one tensor: output type, shape checks, FP8 scales, permutation. */
static int plan_tensor(const struct gguf_st_model *m, const struct hp *h, const char *hf_name, bool optional,
		       int64_t want0, int64_t want1, struct src *s, bool *present, struct gguf_error *err)
{
	*present = false;
	memset(s, 0, sizeof *s);
	const struct gguf_st_tensor *w = gguf_st_model_find(m, hf_name);
	if (!w) {
		if (optional)
			return 0;
		return gg_fail(err, GGUF_ERR_FORMAT, 0, "checkpoint lacks tensor '%s'", hf_name);
	}
	*present = true;
	s->w = w;
	bool vec = want1 == 0;
	int64_t got0 = w->n_dims > 0 ? w->shape[0] : 1, got1 = w->n_dims > 1 ? w->shape[1] : 0;
	if ((vec && (w->n_dims != 1 || got0 != want0)) || (!vec && (w->n_dims != 2 || got0 != want0 || got1 != want1)))
		return gg_fail(err, GGUF_ERR_FORMAT, w->offset,
			       "tensor '%s' has shape [%lld%s%lld], config.json implies [%lld%s%lld]", hf_name, (long long)got0,
			       w->n_dims > 1 ? ", " : "", (long long)(w->n_dims > 1 ? got1 : 0), (long long)want0,
			       vec ? "" : ", ", (long long)(vec ? 0 : want1));
	s->rows = vec ? 1 : want0;
	s->cols = vec ? want0 : want1;
	if (vec) {
		if (!is_float(w->dtype))
			return gg_fail(err, GGUF_ERR_UNSUPPORTED, w->offset, "tensor '%s' has dtype %s", hf_name,
				       gguf_st_dtype_name(w->dtype));
		s->out_type = GGUF_TYPE_F32;
		return 0;
	}
	switch (w->dtype) {
	case GGUF_ST_F32: s->out_type = GGUF_TYPE_F32; break;
	case GGUF_ST_F16: s->out_type = GGUF_TYPE_F16; break;
	case GGUF_ST_BF16: s->out_type = GGUF_TYPE_BF16; break;
	case GGUF_ST_F8_E4M3: {
		char sn[1100];
		snprintf(sn, sizeof sn, "%.*s_scale_inv", (int)(strlen(hf_name)), hf_name);
		const struct gguf_st_tensor *sc = gguf_st_model_find(m, sn);
		int64_t tr = (want0 + GGUF_FP8_TILE - 1) / GGUF_FP8_TILE, tc = (want1 + GGUF_FP8_TILE - 1) / GGUF_FP8_TILE;
		if (!sc)
			return gg_fail(err, GGUF_ERR_FORMAT, w->offset, "FP8 tensor '%s' has no '%s'", hf_name, sn);
		if (sc->n_dims != 2 || sc->shape[0] != tr || sc->shape[1] != tc ||
		    (sc->dtype != GGUF_ST_F32 && sc->dtype != GGUF_ST_BF16 && sc->dtype != GGUF_ST_F16))
			return gg_fail(err, GGUF_ERR_FORMAT, sc->offset,
				       "'%s' must be a [%lld, %lld] float tile grid (128x128 blocks), got %s with %u dims", sn,
				       (long long)tr, (long long)tc, gguf_st_dtype_name(sc->dtype), sc->n_dims);
		s->scale = sc;
		s->out_type = GGUF_TYPE_FP8_E4M3_B128;
		break;
	}
	default:
		return gg_fail(err, GGUF_ERR_UNSUPPORTED, w->offset, "tensor '%s' has dtype %s (F32, F16, BF16, F8_E4M3 are supported)",
			       hf_name, gguf_st_dtype_name(w->dtype));
	}
	return 0;
}

static int set_permute(struct src *s, int64_t n_head, const char *name, struct gguf_error *err)
{
	if (s->rows % n_head || (s->rows / n_head) % 2)
		return gg_fail(err, GGUF_ERR_FORMAT, 0, "tensor '%s': %lld rows do not split into %lld heads of even size", name,
			       (long long)s->rows, (long long)n_head);
	int64_t hd = s->rows / n_head;
	if (s->out_type == GGUF_TYPE_FP8_E4M3_B128 && !(hd <= GGUF_FP8_TILE && GGUF_FP8_TILE % hd == 0))
		return gg_fail(err, GGUF_ERR_UNSUPPORTED, 0,
			       "tensor '%s': the llama q/k permutation with head size %lld would move rows across FP8 scale tiles",
			       name, (long long)hd);
	s->permute_heads = (int)n_head;
	return 0;
}

int gguf_import_safetensors(const char *dir, const char *out_path, const struct gguf_import_opts *opts,
			    struct gguf_error *err)
{
	struct hp h;
	memset(&h, 0, sizeof h);
	struct vocab v;
	memset(&v, 0, sizeof v);
	struct gguf_st_model *m = NULL;
	struct gguf_writer *w = NULL;
	struct src *srcs = NULL;
	struct fill_ctx *fcs = NULL;
	int e;
	if ((e = read_config(dir, &h, err)))
		goto out;
	if ((e = read_tokenizer(dir, &h, &v, err)))
		goto out;
	m = gguf_st_model_open(dir, err);
	if (!m) {
		e = err ? err->code : GGUF_ERR_FORMAT;
		goto out;
	}
	const int64_t E = h.n_embd, HD = h.head_dim, Q = h.n_head * HD, KV = h.n_head_kv * HD;
	uint64_t cap = 3 + (uint64_t)h.n_layer * N_LAYER_NAMES;
	srcs = calloc(cap, sizeof *srcs);
	fcs = calloc(cap, sizeof *fcs);
	char **names = calloc(cap, sizeof *names);
	w = gguf_writer_new();
	if (!srcs || !fcs || !names || !w) {
		free(names);
		e = gg_fail(err, GGUF_ERR_NOMEM, 0, "out of memory");
		goto out;
	}
	uint64_t n = 0;
	bool present;
	struct job jb = {srcs, 0, 0, opts};
	/* plan every tensor first (all checks before anything is written) */
#define PLAN(hf, gg, opt, d0, d1)                                                                        \
	do {                                                                                             \
		if ((e = plan_tensor(m, &h, hf, opt, d0, d1, &srcs[n], &present, err)))                  \
			goto out_names;                                                                  \
		if (present) {                                                                           \
			names[n] = strdup(gg);                                                           \
			if (!names[n]) {                                                                 \
				e = gg_fail(err, GGUF_ERR_NOMEM, 0, "out of memory");                    \
				goto out_names;                                                          \
			}                                                                                \
			n++;                                                                             \
		}                                                                                        \
	} while (0)
	PLAN("model.embed_tokens.weight", "token_embd.weight", false, h.vocab, E);
	PLAN("model.norm.weight", "output_norm.weight", false, E, 0);
	if (!h.tied)
		PLAN("lm_head.weight", "output.weight", false, h.vocab, E);
	for (int64_t l = 0; l < h.n_layer; l++) {
		for (size_t k = 0; k < N_LAYER_NAMES; k++) {
			const struct name_map *nm = &layer_names[k];
			char hf[256], gg[96];
			snprintf(hf, sizeof hf, "model.layers.%lld.%s", (long long)l, nm->hf);
			snprintf(gg, sizeof gg, "blk.%lld.%s", (long long)l, nm->gguf);
			int64_t d0, d1 = E;
			bool opt = false;
			if (strstr(nm->hf, "layernorm"))
				d0 = E, d1 = 0;
			else if (strstr(nm->hf, "q_proj"))
				d0 = Q;
			else if (strstr(nm->hf, "k_proj") || strstr(nm->hf, "v_proj"))
				d0 = KV;
			else if (strstr(nm->hf, "o_proj"))
				d0 = E, d1 = Q;
			else if (strstr(nm->hf, "_norm"))
				d0 = HD, d1 = 0;
			else if (strstr(nm->hf, "down_proj"))
				d0 = E, d1 = h.n_ff;
			else
				d0 = h.n_ff;
			if (strstr(nm->hf, ".bias")) {
				d1 = 0;
				opt = h.arch != ARCH_QWEN2;
			}
			if (strstr(nm->hf, "q_norm") || strstr(nm->hf, "k_norm"))
				opt = h.arch != ARCH_QWEN3;
			uint64_t before = n;
			PLAN(hf, gg, opt, d0, d1);
			if (n > before && h.arch == ARCH_LLAMA && (strstr(nm->hf, "q_proj") || strstr(nm->hf, "k_proj"))) {
				struct src *s = &srcs[n - 1];
				int64_t heads = strstr(nm->hf, "q_proj") ? h.n_head : h.n_head_kv;
				if (d1 == 0) { /* a bias: permute its elements as rows of one column */
					s->rows = s->cols;
					s->cols = 1;
				}
				if ((e = set_permute(s, heads, hf, err)))
					goto out_names;
			}
		}
	}
#undef PLAN
	/* metadata, in convert_hf_to_gguf.py's order */
	const char *an = arch_names[h.arch];
	char key[128];
#define K(suffix) (snprintf(key, sizeof key, "%s.%s", an, suffix), key)
	const char *dn = strrchr(dir, '/');
	char dname[256];
	snprintf(dname, sizeof dname, "%s", dn && dn[1] ? dn + 1 : dir);
	const char *gname = opts && opts->name ? opts->name : h.name[0] ? h.name : dname;
	uint32_t ftype = 0;
	bool any_fp8 = false;
	for (uint64_t i = 0; i < n; i++)
		if (srcs[i].out_type == GGUF_TYPE_FP8_E4M3_B128)
			any_fp8 = true;
	const struct src *emb = &srcs[0];
	ftype = emb->out_type == GGUF_TYPE_BF16 ? 32 : emb->out_type == GGUF_TYPE_F16 ? 1 : 0;
	e = gguf_w_str(w, "general.architecture", an);
	e = e ? e : gguf_w_str(w, "general.type", "model");
	e = e ? e : gguf_w_str(w, "general.name", gname);
	e = e ? e : gguf_w_u32(w, K("block_count"), (uint32_t)h.n_layer);
	if (h.n_ctx)
		e = e ? e : gguf_w_u32(w, K("context_length"), (uint32_t)h.n_ctx);
	e = e ? e : gguf_w_u32(w, K("embedding_length"), (uint32_t)E);
	e = e ? e : gguf_w_u32(w, K("feed_forward_length"), (uint32_t)h.n_ff);
	e = e ? e : gguf_w_u32(w, K("attention.head_count"), (uint32_t)h.n_head);
	e = e ? e : gguf_w_u32(w, K("attention.head_count_kv"), (uint32_t)h.n_head_kv);
	e = e ? e : gguf_w_f32(w, K("rope.freq_base"), (float)h.rope_theta);
	e = e ? e : gguf_w_f32(w, K("attention.layer_norm_rms_epsilon"), (float)h.rms_eps);
	if (h.has_head_dim) {
		e = e ? e : gguf_w_u32(w, K("attention.key_length"), (uint32_t)HD);
		e = e ? e : gguf_w_u32(w, K("attention.value_length"), (uint32_t)HD);
	}
	if (h.rope_type[0]) {
		e = e ? e : gguf_w_str(w, K("rope.scaling.type"), h.rope_type);
		e = e ? e : gguf_w_f32(w, K("rope.scaling.factor"), (float)h.rope_factor);
		if (h.rope_orig_ctx)
			e = e ? e : gguf_w_u32(w, K("rope.scaling.original_context_length"), (uint32_t)h.rope_orig_ctx);
	}
	if (!any_fp8)
		e = e ? e : gguf_w_u32(w, "general.file_type", ftype);
	if (h.arch == ARCH_LLAMA) {
		e = e ? e : gguf_w_u32(w, K("vocab_size"), (uint32_t)h.vocab);
		e = e ? e : gguf_w_u32(w, K("rope.dimension_count"), (uint32_t)HD);
	}
	e = e ? e : gguf_w_u32(w, "general.quantization_version", 2);
	e = e ? e : gguf_w_str(w, "tokenizer.ggml.model", "gpt2");
	e = e ? e : gguf_w_str(w, "tokenizer.ggml.pre", v.pre);
	if (!e) {
		uint64_t *lens = malloc((size_t)v.n * sizeof *lens);
		if (!lens)
			e = GGUF_ERR_NOMEM;
		for (int64_t i = 0; !e && i < v.n; i++)
			lens[i] = v.tok_len[i];
		e = e ? e : gguf_w_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)v.tok, lens, (uint64_t)v.n);
		e = e ? e : gguf_w_arr(w, "tokenizer.ggml.token_type", GGUF_VT_I32, v.type, (uint64_t)v.n);
		free(lens);
	}
	if (v.n_merges)
		e = e ? e : gguf_w_arr_str(w, "tokenizer.ggml.merges", (const char *const *)v.merges, NULL, v.n_merges);
	for (int k = 0; k < 7; k++)
		if (v.special[k] >= 0)
			e = e ? e : gguf_w_u32(w, special_keys[k], (uint32_t)v.special[k]);
	if (v.add_bos >= 0)
		e = e ? e : gguf_w_bool(w, "tokenizer.ggml.add_bos_token", v.add_bos);
	if (v.add_eos >= 0)
		e = e ? e : gguf_w_bool(w, "tokenizer.ggml.add_eos_token", v.add_eos);
	if (v.chat_template)
		e = e ? e : gguf_w_str(w, "tokenizer.chat_template", v.chat_template);
#undef K
	if (e) {
		e = gg_fail(err, e, 0, "building the metadata failed: %s", gguf_strerror(e));
		goto out_names;
	}
	jb.n = n;
	for (uint64_t i = 0; i < n; i++) {
		struct src *s = &srcs[i];
		fcs[i] = (struct fill_ctx){s, &jb};
		bool vec = s->rows == 1 && s->w->n_dims == 1;
		int64_t ne[2] = {s->cols, s->rows};
		if (s->permute_heads && s->cols == 1) /* permuted bias */
			ne[0] = s->rows, ne[1] = 1, vec = true;
		e = gguf_w_tensor(w, names[i], s->out_type, vec ? 1 : 2, ne, NULL, fill_one, &fcs[i]);
		if (e) {
			e = gg_fail(err, e, 0, "tensor '%s': %s", names[i], gguf_strerror(e));
			goto out_names;
		}
	}
	e = gguf_writer_write_file(w, out_path, err);
out_names:
	for (uint64_t i = 0; i < cap; i++)
		free(names[i]);
	free(names);
out:
	gguf_writer_free(w);
	gguf_st_model_close(m);
	vocab_free(&v);
	free(srcs);
	free(fcs);
	return e;
}
