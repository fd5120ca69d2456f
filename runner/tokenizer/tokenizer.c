/* runner/tokenizer/tokenizer.c — the tokenizer's vocabulary, special tokens and entry points.
 *
 * Loads tokenizer.* metadata the way llama.cpp's llama_vocab::impl::load does (defaults, the fix-ups that
 * find end-of-generation and FIM tokens by their text, the special-token list), splits input text around
 * special tokens (llama.cpp's tokenizer_st_partition) and hands the raw fragments to the BPE
 * (bpe.c) or SentencePiece (spm.c) code. Pieces and detokenization live here too. It does
 * not parse GGUF (gguf/ does) and never prints.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "gguf/gguf.h"
#include "runner/tokenizer/internal.h"

#define SPM_SPACE "\xe2\x96\x81" /* U+2581, SentencePiece's visible space */

const char *rn_tok_strerror(int code)
{
	switch (code) {
	case RN_TOK_OK: return "success";
	case RN_TOK_ERR_NOMEM: return "out of memory";
	case RN_TOK_ERR_MISSING: return "tokenizer metadata missing";
	case RN_TOK_ERR_TYPE: return "tokenizer metadata of the wrong type";
	case RN_TOK_ERR_LENGTH: return "tokenizer array lengths disagree or exceed a limit";
	case RN_TOK_ERR_UNSUPPORTED: return "unsupported tokenizer";
	case RN_TOK_ERR_VOCAB: return "invalid vocabulary";
	case RN_TOK_ERR_REGEX: return "pre-tokenizer pattern error";
	case RN_TOK_ERR_RANGE: return "token id out of range";
	case RN_TOK_ERR_TOO_LONG: return "text too long";
	case RN_TOK_ERR_NOSPACE: return "output buffer too small";
	default: return "unknown tokenizer error";
	}
}

int rn_tok_fail(struct rn_tok_error *err, int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
	}
	return code;
}

/* ------------------------------------------------------------------------------------------------------
 * Strings, symbols and the text -> symbol map
 */

uint32_t rn_tok_hash(const void *s, size_t n)
{
	/* FNV-1a, then forced odd so that 0 can mark an empty slot */
	const uint8_t *p = s;
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 16777619u;
	}
	return h | 1u;
}

static int arena_add(struct rn_tok *tok, const void *s, size_t n, uint32_t *off, struct rn_tok_error *err)
{
	if (n > RN_TOK_ARENA_MAX - tok->arena_len)
		return rn_tok_fail(err, RN_TOK_ERR_LENGTH, "tokenizer strings exceed %u bytes", RN_TOK_ARENA_MAX);
	if (ob_grow(&tok->arena, &tok->arena_cap, tok->arena_len + n, 1, 1u << 16, RN_TOK_ARENA_MAX) != OB_GROW_OK)
		return rn_tok_fail(err, RN_TOK_ERR_NOMEM, "out of memory for %zu bytes of tokenizer strings",
				   tok->arena_len + n);
	if (n)
		memcpy(tok->arena + tok->arena_len, s, n);
	*off = (uint32_t)tok->arena_len;
	tok->arena_len += n;
	return RN_TOK_OK;
}

/* Grow the map to hold at least `want` symbols at load <= 1/2. */
static int map_reserve(struct rn_tok *tok, uint64_t want, struct rn_tok_error *err)
{
	uint64_t slots = tok->map.mask ? (uint64_t)tok->map.mask + 1 : 1u << 12;
	while (slots < want * 2)
		slots *= 2;
	if (tok->map.mask && slots == (uint64_t)tok->map.mask + 1)
		return RN_TOK_OK;
	if (slots > (1ull << 31))
		return rn_tok_fail(err, RN_TOK_ERR_LENGTH, "more than %u tokenizer symbols", RN_TOK_MAX_SYMBOLS);
	struct rn_strslot *slot = malloc((size_t)slots * sizeof *slot);
	if (!slot)
		return rn_tok_fail(err, RN_TOK_ERR_NOMEM, "out of memory for a %llu-slot token map", (unsigned long long)slots);
	uint32_t mask = (uint32_t)(slots - 1);
	for (uint64_t i = 0; i < slots; i++)
		slot[i] = (struct rn_strslot){0, -1};
	for (uint32_t i = 0; tok->map.mask && i <= tok->map.mask; i++) {
		if (tok->map.slot[i].id < 0)
			continue;
		uint32_t j = tok->map.slot[i].hash & mask;
		while (slot[j].id >= 0)
			j = (j + 1) & mask;
		slot[j] = tok->map.slot[i];
	}
	free(tok->map.slot);
	tok->map.slot = slot;
	tok->map.mask = mask;
	return RN_TOK_OK;
}

/* Slot where (s, n) is or would go. */
static uint32_t map_slot(const struct rn_tok *tok, const char *s, size_t n, uint32_t h)
{
	uint32_t j = h & tok->map.mask;
	for (;;) {
		struct rn_strslot sl = tok->map.slot[j];
		if (sl.id < 0)
			return j;
		if (sl.hash == h && tok->sym[sl.id].len == n && memcmp(tok->arena + tok->sym[sl.id].off, s, n) == 0)
			return j;
		j = (j + 1) & tok->map.mask;
	}
}

int32_t rn_tok_sym_find(const struct rn_tok *tok, const char *s, size_t n)
{
	if (!tok->map.mask)
		return -1;
	return tok->map.slot[map_slot(tok, s, n, rn_tok_hash(s, n))].id;
}

int32_t rn_tok_vocab_find(const struct rn_tok *tok, const char *s, size_t n)
{
	int32_t id = rn_tok_sym_find(tok, s, n);
	return id >= 0 && (uint32_t)id < tok->n_vocab ? id : -1;
}

int rn_tok_sym_reserve(struct rn_tok *tok, uint64_t n, struct rn_tok_error *err)
{
	if (n > RN_TOK_MAX_SYMBOLS)
		return rn_tok_fail(err, RN_TOK_ERR_LENGTH, "more than %u tokenizer symbols", RN_TOK_MAX_SYMBOLS);
	if (n > tok->syms_cap) {
		struct rn_sym *v = realloc(tok->sym, (size_t)n * sizeof *v);
		if (!v)
			return rn_tok_fail(err, RN_TOK_ERR_NOMEM, "out of memory for %llu symbols", (unsigned long long)n);
		tok->sym = v;
		tok->syms_cap = (uint32_t)n;
	}
	return map_reserve(tok, n, err);
}

/* Add a symbol known to be absent (text already in the arena at off) into map slot j. */
static int sym_add(struct rn_tok *tok, uint32_t off, uint32_t len, uint32_t h, int32_t *id, struct rn_tok_error *err)
{
	int rc;
	if (tok->n_syms >= RN_TOK_MAX_SYMBOLS)
		return rn_tok_fail(err, RN_TOK_ERR_LENGTH, "more than %u tokenizer symbols", RN_TOK_MAX_SYMBOLS);
	if (tok->n_syms == tok->syms_cap || (uint64_t)(tok->n_syms + 1) * 2 > (uint64_t)tok->map.mask + 1) {
		uint64_t want = (uint64_t)tok->n_syms * 2 + 1024;
		if ((rc = rn_tok_sym_reserve(tok, want < RN_TOK_MAX_SYMBOLS ? want : RN_TOK_MAX_SYMBOLS, err)) != RN_TOK_OK)
			return rc;
	}
	uint32_t i = tok->n_syms++;
	tok->sym[i] = (struct rn_sym){off, len};
	uint32_t j = map_slot(tok, tok->arena + off, len, h);
	tok->map.slot[j] = (struct rn_strslot){h, (int32_t)i};
	*id = (int32_t)i;
	return RN_TOK_OK;
}

int rn_tok_sym_intern(struct rn_tok *tok, const char *s, size_t n, int32_t *id, struct rn_tok_error *err)
{
	uint32_t h = rn_tok_hash(s, n);
	if (tok->map.mask) {
		int32_t found = tok->map.slot[map_slot(tok, s, n, h)].id;
		if (found >= 0) {
			*id = found;
			return RN_TOK_OK;
		}
	}
	uint32_t off;
	int rc = arena_add(tok, s, n, &off, err);
	if (rc != RN_TOK_OK)
		return rc;
	return sym_add(tok, off, (uint32_t)n, h, id, err);
}

/* ------------------------------------------------------------------------------------------------------
 * Growable id arrays
 */

void rn_tok_ids_push(struct rn_tok_ids *o, int32_t id)
{
	if (o->oom)
		return;
	if (o->n == o->cap && ob_grow(&o->v, &o->cap, o->n + 1, sizeof *o->v, 64, 0) != OB_GROW_OK) {
		o->oom = true;
		return;
	}
	o->v[o->n++] = id;
}

/* ------------------------------------------------------------------------------------------------------
 * Loading
 */

struct pre_entry {
	const char *name;
	enum rn_tok_pre pre;
	bool clean_spaces;
	bool ignore_merges;
	bool add_bos;
};

/* tokenizer.ggml.pre names this build implements, with the flags llama.cpp sets for each (BPE default:
 * clean_spaces on). Names llama.cpp knows but orun does not are refused with RN_TOK_ERR_UNSUPPORTED. */
static const struct pre_entry pre_table[] = {
	{"default", RN_TOK_PRE_DEFAULT, true, false, false},
	{"llama3", RN_TOK_PRE_LLAMA3, true, true, true},
	{"llama-v3", RN_TOK_PRE_LLAMA3, true, true, true},
	{"llama-bpe", RN_TOK_PRE_LLAMA3, true, true, true},
	{"falcon3", RN_TOK_PRE_LLAMA3, true, true, true},
	{"falcon-h1", RN_TOK_PRE_LLAMA3, true, true, true},
	{"pixtral", RN_TOK_PRE_LLAMA3, true, true, true},
	{"midm-2.0", RN_TOK_PRE_LLAMA3, true, true, true},
	{"lfm2", RN_TOK_PRE_LLAMA3, true, true, true},
	{"jina-v5-nano", RN_TOK_PRE_LLAMA3, true, true, true},
	{"mpt", RN_TOK_PRE_GPT2, true, false, false},
	{"starcoder", RN_TOK_PRE_SMOLLM, true, false, false},
	{"gpt-2", RN_TOK_PRE_GPT2, true, false, false},
	{"gpt2", RN_TOK_PRE_GPT2, true, false, false}, /* not a llama.cpp name; accepted as gpt-2 */
	{"phi-2", RN_TOK_PRE_GPT2, true, false, false},
	{"gigachat", RN_TOK_PRE_GPT2, true, false, false},
	{"a.x-4.0", RN_TOK_PRE_GPT2, true, false, false},
	{"mellum", RN_TOK_PRE_GPT2, true, false, false},
	{"refact", RN_TOK_PRE_SMOLLM, true, false, false},
	{"command-r", RN_TOK_PRE_SMOLLM, false, false, false},
	{"qwen2", RN_TOK_PRE_QWEN2, false, false, false},
	{"deepseek-r1-qwen", RN_TOK_PRE_QWEN2, false, false, false},
	{"kormo", RN_TOK_PRE_QWEN2, false, false, false},
	{"f2llmv2", RN_TOK_PRE_QWEN2, false, false, false},
	{"qwen35", RN_TOK_PRE_QWEN35, false, false, false},
	{"stablelm2", RN_TOK_PRE_QWEN2, true, false, false},
	{"olmo", RN_TOK_PRE_GPT2, true, false, false},
	{"jais", RN_TOK_PRE_GPT2, true, false, false},
	{"smollm", RN_TOK_PRE_SMOLLM, false, false, false},
	{"codeshell", RN_TOK_PRE_SMOLLM, true, false, false},
	{"exaone", RN_TOK_PRE_SMOLLM, true, false, false},
	{"minerva-7b", RN_TOK_PRE_SMOLLM, true, false, false},
	{"hunyuan", RN_TOK_PRE_QWEN2, false, false, false},
	{"trillion", RN_TOK_PRE_GPT2, false, false, false},
	{"granite-docling", RN_TOK_PRE_GPT2, false, false, false},
	{"solar-open", RN_TOK_PRE_QWEN2, false, false, false},
	{"mellum2", RN_TOK_PRE_SMOLLM, true, false, false},
};

/* tokenizer.ggml.model values llama.cpp knows that orun does not implement */
static const char *const unsupported_models[] = {"bert", "t5", "rwkv", "no_vocab", "none", "hybriddna", "whitespace",
						 "plamo2", "gemma4", "test"};

static bool str_is(struct gguf_str s, const char *z)
{
	return gguf_str_eq(s, z);
}

/* Copy a metadata string into buf for messages (escaped, truncated). */
static void str_quote(struct gguf_str s, char *buf, size_t cap)
{
	size_t j = 0;
	for (uint64_t i = 0; i < s.len && j + 5 < cap; i++) {
		unsigned char c = (unsigned char)s.ptr[i];
		if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"')
			buf[j++] = (char)c;
		else
			j += (size_t)snprintf(buf + j, cap - j, "\\x%02x", c);
	}
	buf[j] = 0;
}

/* Optional key of an integer type: sets *out when present and representable; a present key of another
 * type is an error (llama.cpp refuses it too). */
static int opt_u32(const struct gguf_file *f, const char *key, bool *present, uint32_t *out, struct rn_tok_error *err)
{
	int rc = gguf_find_u32(f, key, out);
	*present = rc == GGUF_OK;
	if (rc == GGUF_OK || rc == GGUF_ERR_NOT_FOUND)
		return RN_TOK_OK;
	return rn_tok_fail(err, RN_TOK_ERR_TYPE, "%s is not an unsigned 32-bit integer", key);
}

static int opt_bool(const struct gguf_file *f, const char *key, bool *val, struct rn_tok_error *err)
{
	bool b;
	int rc = gguf_find_bool(f, key, &b);
	if (rc == GGUF_OK)
		*val = b;
	if (rc == GGUF_OK || rc == GGUF_ERR_NOT_FOUND)
		return RN_TOK_OK;
	return rn_tok_fail(err, RN_TOK_ERR_TYPE, "%s is not a bool", key);
}

static uint8_t hexval(char c)
{
	if (c >= '0' && c <= '9')
		return (uint8_t)(c - '0');
	if (c >= 'a' && c <= 'f')
		return (uint8_t)(c - 'a' + 10);
	if (c >= 'A' && c <= 'F')
		return (uint8_t)(c - 'A' + 10);
	return 0xff;
}

/* llama.cpp's token_to_byte: the two characters after "<0x" read as hex (strtol: stops at a non-digit). */
static uint8_t byte_token_value(const char *s, size_t n)
{
	unsigned v = 0;
	for (size_t i = 3; i < n && i < 5; i++) {
		uint8_t d = hexval(s[i]);
		if (d == 0xff)
			break;
		v = v * 16 + d;
	}
	return (uint8_t)v;
}

static bool text_is(const struct rn_tok *tok, int32_t id, const char *z)
{
	size_t n = strlen(z);
	return tok->tokens[id].text_len == n && memcmp(tok->arena + tok->tokens[id].text_off, z, n) == 0;
}

/* Lists of token texts llama.cpp uses to recognise tokens (llama-vocab.cpp, load()) */
static const char *const eot_texts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
					"<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
					"<end_of_utterance>", NULL};
static const char *const eom_texts[] = {"<|eom_id|>", NULL};
static const char *const fim_pre_texts[] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "begin\xef\xbd\x9c>",
					    "<PRE>", SPM_SPACE "<PRE>", "<|code_prefix|>", "<|prefix|>", NULL};
static const char *const fim_suf_texts[] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<\xef\xbd\x9c" "fim\xe2\x96\x81hole\xef\xbd\x9c>",
					    "<SUF>", SPM_SPACE "<SUF>", "<|code_suffix|>", "<|suffix|>", NULL};
static const char *const fim_mid_texts[] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "end\xef\xbd\x9c>",
					    "<MID>", SPM_SPACE "<MID>", "<|code_middle|>", "<|middle|>", NULL};
static const char *const fim_pad_texts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", NULL};
static const char *const fim_rep_texts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>", NULL};
static const char *const fim_sep_texts[] = {"<|file_sep|>", NULL};
static const char *const eog_texts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
					"<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>",
					"[EOT]", "[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>",
					"<|tool_response>", "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>", "[e~[", NULL};
static const char *const render_texts[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>", NULL};

/* Find tokens by text the way llama.cpp does when the metadata does not name them: the first match (in id
 * order; llama.cpp walks a hash map) becomes the id, and a non-control token is made control. */
static void detect(struct rn_tok *tok, int32_t *slot, const char *const *texts)
{
	if (*slot >= 0)
		return;
	int32_t best = -1;
	for (size_t k = 0; texts[k]; k++) {
		int32_t id = rn_tok_vocab_find(tok, texts[k], strlen(texts[k]));
		if (id >= 0 && (best < 0 || id < best))
			best = id;
	}
	if (best >= 0) {
		*slot = best;
		tok->tokens[best].attr |= RN_TOK_ATTR_CONTROL;
	}
}

static int eog_add(struct rn_tok *tok, int32_t id, struct rn_tok_error *err)
{
	if (id < 0 || (uint32_t)id >= tok->n_vocab)
		return RN_TOK_OK;
	uint32_t k = 0;
	while (k < tok->n_eog && tok->eog[k] < id)
		k++;
	if (k < tok->n_eog && tok->eog[k] == id)
		return RN_TOK_OK;
	if (OB_GROW(tok->eog, tok->cap_eog, (size_t)tok->n_eog + 1, 0) != OB_GROW_OK)
		return rn_tok_fail(err, RN_TOK_ERR_NOMEM, "out of memory for the end-of-generation list");
	int32_t *e = tok->eog;
	memmove(e + k + 1, e + k, (tok->n_eog - k) * sizeof *e);
	e[k] = id;
	tok->n_eog++;
	return RN_TOK_OK;
}

static void eog_remove(struct rn_tok *tok, int32_t id)
{
	for (uint32_t k = 0; k < tok->n_eog; k++) {
		if (tok->eog[k] == id) {
			memmove(tok->eog + k, tok->eog + k + 1, (tok->n_eog - k - 1) * sizeof *tok->eog);
			tok->n_eog--;
			return;
		}
	}
}

static int32_t eog_find_text(const struct rn_tok *tok, const char *z)
{
	for (uint32_t k = 0; k < tok->n_eog; k++)
		if (text_is(tok, tok->eog[k], z))
			return tok->eog[k];
	return -1;
}

/* End-of-generation list and the attribute fix-ups (llama.cpp: load(), "maintain a list of tokens that
 * cause end-of-generation" and what follows it). */
static int fix_special(struct rn_tok *tok, struct rn_tok_error *err)
{
	struct rn_tok_special *sp = &tok->sp;
	int rc;

	detect(tok, &sp->eot, eot_texts);
	detect(tok, &sp->eom, eom_texts);
	detect(tok, &sp->fim_pre, fim_pre_texts);
	detect(tok, &sp->fim_suf, fim_suf_texts);
	detect(tok, &sp->fim_mid, fim_mid_texts);
	detect(tok, &sp->fim_pad, fim_pad_texts);
	detect(tok, &sp->fim_rep, fim_rep_texts);
	detect(tok, &sp->fim_sep, fim_sep_texts);

	for (uint32_t i = 0; i < tok->n_vocab; i++) {
		struct rn_tok_token *t = &tok->tokens[i];
		if ((t->attr & RN_TOK_ATTR_CONTROL) && memmem(tok->arena + t->text_off, t->text_len, "unused", 6))
			t->attr |= RN_TOK_ATTR_UNUSED;
	}

	if ((rc = eog_add(tok, sp->fim_pad, err)) || (rc = eog_add(tok, sp->fim_rep, err)) ||
	    (rc = eog_add(tok, sp->fim_sep, err)))
		return rc;
	for (size_t k = 0; eog_texts[k]; k++) {
		int32_t id = rn_tok_vocab_find(tok, eog_texts[k], strlen(eog_texts[k]));
		if (id < 0)
			continue;
		if ((rc = eog_add(tok, id, err)) != RN_TOK_OK)
			return rc;
		tok->tokens[id].attr |= RN_TOK_ATTR_CONTROL;
	}
	for (size_t k = 0; render_texts[k]; k++) { /* gpt-oss: always rendered */
		int32_t id = rn_tok_vocab_find(tok, render_texts[k], strlen(render_texts[k]));
		if (id >= 0)
			tok->tokens[id].attr = RN_TOK_ATTR_USER_DEFINED;
	}
	if ((rc = eog_add(tok, sp->eos, err)) || (rc = eog_add(tok, sp->eot, err)) || (rc = eog_add(tok, sp->eom, err)))
		return rc;

	/* o200k_harmony / solar-open: "<|end|>" is not end-of-generation when "<|return|>"+"<|call|>" (or
	 * "<|calls|>"+"<|flush|>") are */
	bool has_return = eog_find_text(tok, "<|return|>") >= 0;
	bool has_call = eog_find_text(tok, "<|call|>") >= 0 || eog_find_text(tok, "<|calls|>") >= 0;
	bool has_flush = eog_find_text(tok, "<|flush|>") >= 0;
	int32_t end_id = eog_find_text(tok, "<|end|>");
	if (end_id >= 0 && ((has_return && has_call) || (has_call && has_flush))) {
		eog_remove(tok, end_id);
		tok->tokens[end_id].attr = RN_TOK_ATTR_USER_DEFINED;
	}
	/* gemma4 / plamo: "</s>" is a normal token there */
	int32_t s_id = eog_find_text(tok, "</s>");
	if (s_id >= 0 && (eog_find_text(tok, "<|tool_response>") >= 0 || eog_find_text(tok, "<|plamo:eos|>") >= 0)) {
		eog_remove(tok, s_id);
		tok->tokens[s_id].attr = RN_TOK_ATTR_NORMAL;
	}
	return RN_TOK_OK;
}

static int cmp_special(const void *a, const void *b, void *ctx)
{
	const struct rn_tok *tok = ctx;
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	uint32_t lx = tok->tokens[x].text_len, ly = tok->tokens[y].text_len;
	if (lx != ly)
		return lx > ly ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int build_special(struct rn_tok *tok, struct rn_tok_error *err)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < tok->n_vocab; i++)
		if (tok->tokens[i].attr & (RN_TOK_ATTR_CONTROL | RN_TOK_ATTR_USER_DEFINED | RN_TOK_ATTR_UNKNOWN))
			n++;
	tok->special = malloc((n ? n : 1) * sizeof *tok->special);
	if (!tok->special)
		return rn_tok_fail(err, RN_TOK_ERR_NOMEM, "out of memory for %u special tokens", n);
	n = 0;
	for (uint32_t i = 0; i < tok->n_vocab; i++)
		if (tok->tokens[i].attr & (RN_TOK_ATTR_CONTROL | RN_TOK_ATTR_USER_DEFINED | RN_TOK_ATTR_UNKNOWN))
			tok->special[n++] = (int32_t)i;
	tok->n_special = n;
	/* llama.cpp sorts by text length, longest first (std::sort: ties in no particular order; here by id) */
	qsort_r(tok->special, n, sizeof *tok->special, cmp_special, tok);
	return RN_TOK_OK;
}

static size_t spm_unescape(const char *s, size_t n, char *out)
{
	size_t j = 0;
	for (size_t i = 0; i < n;) {
		if (i + 3 <= n && memcmp(s + i, SPM_SPACE, 3) == 0) {
			out[j++] = ' ';
			i += 3;
		} else {
			out[j++] = s[i++];
		}
	}
	return j;
}

/* token_to_piece(special = true) of every token, as llama.cpp caches it */
static int build_pieces(struct rn_tok *tok, struct rn_tok_error *err)
{
	size_t cap = 0;
	char *buf = NULL;
	int rc = RN_TOK_OK;
	for (uint32_t i = 0; i < tok->n_vocab && rc == RN_TOK_OK; i++) {
		struct rn_tok_token *t = &tok->tokens[i];
		const char *text = tok->arena + t->text_off; /* re-read after every arena_add: it may move */
		size_t need = t->text_len;
		if (tok->kind == RN_TOK_KIND_BPE && !(t->attr & (RN_TOK_ATTR_UNKNOWN | RN_TOK_ATTR_CONTROL | RN_TOK_ATTR_USER_DEFINED)) &&
		    (t->attr & RN_TOK_ATTR_NORMAL))
			need = rn_tok_bpe_decode_text(tok, text, t->text_len, NULL);
		if (need > RN_TOK_MAX_TOKEN_BYTES * 64u) {
			rc = rn_tok_fail(err, RN_TOK_ERR_VOCAB, "the piece of token %u would be %zu bytes", i, need);
			break;
		}
		if (ob_grow(&buf, &cap, need, 1, 256, 0) != OB_GROW_OK) {
			rc = rn_tok_fail(err, RN_TOK_ERR_NOMEM, "out of memory for a %zu-byte piece", need);
			break;
		}
		size_t len = 0;
		if (t->attr & (RN_TOK_ATTR_UNKNOWN | RN_TOK_ATTR_CONTROL | RN_TOK_ATTR_USER_DEFINED)) {
			memcpy(buf, text, t->text_len);
			len = t->text_len;
		} else if (t->attr & RN_TOK_ATTR_NORMAL) {
			if (tok->kind == RN_TOK_KIND_BPE)
				len = rn_tok_bpe_decode_text(tok, text, t->text_len, buf);
			else
				len = spm_unescape(text, t->text_len, buf);
		} else if (t->attr & RN_TOK_ATTR_BYTE) {
			buf[0] = (char)byte_token_value(text, t->text_len);
			len = 1;
		}
		rc = arena_add(tok, buf, len, &t->piece_off, err);
		t->piece_len = (uint32_t)len;
	}
	free(buf);
	return rc;
}

/* An optional array with one i32 (or, with f32_too, f32) entry per token: *out is NULL when it is absent;
 * an error when it is of another type or shorter than the vocabulary. */
static int per_token_array(const struct gguf_file *f, const char *key, bool f32_too, uint32_t n,
			   const struct gguf_array **out, struct rn_tok_error *err)
{
	*out = NULL;
	const struct gguf_array *a;
	int rc = gguf_find_arr(f, key, &a);
	if (rc == GGUF_ERR_TYPE_MISMATCH)
		return rn_tok_fail(err, RN_TOK_ERR_TYPE, "%s is not an array", key);
	if (rc != GGUF_OK)
		return RN_TOK_OK;
	if (a->type != GGUF_VT_I32 && !(f32_too && a->type == GGUF_VT_F32))
		return rn_tok_fail(err, RN_TOK_ERR_TYPE, "%s is an array of %s, not %s", key, gguf_vtype_name(a->type),
				   f32_too ? "f32 or i32" : "i32");
	if (a->n < n)
		return rn_tok_fail(err, RN_TOK_ERR_LENGTH, "%s has %llu entries for %u tokens", key,
				   (unsigned long long)a->n, n);
	*out = a;
	return RN_TOK_OK;
}

static int load_vocab(struct rn_tok *tok, const struct gguf_file *f, struct rn_tok_error *err)
{
	const struct gguf_array *toks, *scores = NULL, *types = NULL;
	int rc = gguf_find_arr(f, "tokenizer.ggml.tokens", &toks);
	if (rc == GGUF_ERR_NOT_FOUND)
		return rn_tok_fail(err, RN_TOK_ERR_MISSING, "tokenizer.ggml.tokens is missing: the file has no vocabulary");
	if (rc != GGUF_OK || toks->type != GGUF_VT_STRING)
		return rn_tok_fail(err, RN_TOK_ERR_TYPE, "tokenizer.ggml.tokens is not an array of strings");
	if (toks->n == 0)
		return rn_tok_fail(err, RN_TOK_ERR_VOCAB, "tokenizer.ggml.tokens is empty");
	if (toks->n > RN_TOK_MAX_VOCAB)
		return rn_tok_fail(err, RN_TOK_ERR_LENGTH, "tokenizer.ggml.tokens has %llu tokens, more than the limit %u",
				   (unsigned long long)toks->n, RN_TOK_MAX_VOCAB);
	uint32_t n = (uint32_t)toks->n;

	if ((rc = per_token_array(f, "tokenizer.ggml.scores", true, n, &scores, err)) != RN_TOK_OK ||
	    (rc = per_token_array(f, "tokenizer.ggml.token_type", false, n, &types, err)) != RN_TOK_OK)
		return rc;

	tok->tokens = calloc(n, sizeof *tok->tokens);
	if (!tok->tokens)
		return rn_tok_fail(err, RN_TOK_ERR_NOMEM, "out of memory for %u tokens", n);
	if ((rc = rn_tok_sym_reserve(tok, (uint64_t)n + n / 8 + 1024, err)) != RN_TOK_OK)
		return rc;
	tok->n_vocab = n;
	for (uint32_t i = 0; i < n; i++) {
		struct gguf_str s = gguf_arr_str(toks, i);
		char empty[32];
		if (s.len == 0) { /* llama.cpp names empty tokens so that they stay distinct */
			s.len = (uint64_t)snprintf(empty, sizeof empty, "[EMPTY_%u]", i);
			s.ptr = empty;
		}
		if (s.len > RN_TOK_MAX_TOKEN_BYTES)
			return rn_tok_fail(err, RN_TOK_ERR_LENGTH, "token %u is %llu bytes long, more than the limit %u", i,
					   (unsigned long long)s.len, RN_TOK_MAX_TOKEN_BYTES);
		int32_t id;
		if ((rc = rn_tok_sym_intern(tok, s.ptr, (size_t)s.len, &id, err)) != RN_TOK_OK)
			return rc;
		if ((uint32_t)id != i) {
			char q[96];
			str_quote(s, q, sizeof q);
			return rn_tok_fail(err, RN_TOK_ERR_VOCAB, "tokens %d and %u have the same text \"%s\"", id, i, q);
		}
		struct rn_tok_token *t = &tok->tokens[i];
		t->text_off = tok->sym[i].off;
		t->text_len = tok->sym[i].len;
		t->score = !scores ? 0.0f : scores->type == GGUF_VT_F32 ? gguf_arr_f32(scores, i) : (float)gguf_arr_i32(scores, i);
		int32_t ty = types ? gguf_arr_i32(types, i) : RN_TOK_TYPE_NORMAL;
		t->type = ty >= 0 && ty <= RN_TOK_TYPE_BYTE ? (uint8_t)ty : RN_TOK_TYPE_UNDEFINED;
		switch (t->type) {
		case RN_TOK_TYPE_UNKNOWN: t->attr = RN_TOK_ATTR_UNKNOWN; break;
		case RN_TOK_TYPE_UNUSED: t->attr = RN_TOK_ATTR_UNUSED; break;
		case RN_TOK_TYPE_NORMAL: t->attr = RN_TOK_ATTR_NORMAL; break;
		case RN_TOK_TYPE_CONTROL: t->attr = RN_TOK_ATTR_CONTROL; break;
		case RN_TOK_TYPE_USER_DEFINED: t->attr = RN_TOK_ATTR_USER_DEFINED; break;
		case RN_TOK_TYPE_BYTE: t->attr = RN_TOK_ATTR_BYTE; break;
		default: t->attr = RN_TOK_ATTR_UNDEFINED; break;
		}
	}
	return RN_TOK_OK;
}

static int load_special_ids(struct rn_tok *tok, const struct gguf_file *f, struct rn_tok_error *err)
{
	struct rn_tok_special *sp = &tok->sp;
	struct {
		const char *key;
		int32_t *slot;
	} keys[] = {
		{"tokenizer.ggml.bos_token_id", &sp->bos},
		{"tokenizer.ggml.eos_token_id", &sp->eos},
		{"tokenizer.ggml.eot_token_id", &sp->eot},
		{"tokenizer.ggml.eom_token_id", &sp->eom},
		{"tokenizer.ggml.unknown_token_id", &sp->unk},
		{"tokenizer.ggml.seperator_token_id", &sp->sep}, /* sic: llama.cpp's key */
		{"tokenizer.ggml.padding_token_id", &sp->pad},
		{"tokenizer.ggml.mask_token_id", &sp->mask},
		{"tokenizer.ggml.fim_pre_token_id", &sp->fim_pre},
		{"tokenizer.ggml.fim_suf_token_id", &sp->fim_suf},
		{"tokenizer.ggml.fim_mid_token_id", &sp->fim_mid},
		{"tokenizer.ggml.fim_pad_token_id", &sp->fim_pad},
		{"tokenizer.ggml.fim_rep_token_id", &sp->fim_rep},
		{"tokenizer.ggml.fim_sep_token_id", &sp->fim_sep},
		{"tokenizer.ggml.prefix_token_id", &sp->fim_pre}, /* deprecated names */
		{"tokenizer.ggml.suffix_token_id", &sp->fim_suf},
		{"tokenizer.ggml.middle_token_id", &sp->fim_mid},
	};
	for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
		int32_t *slot = keys[k].slot;
		if (*slot >= 0 && (uint32_t)*slot >= tok->n_vocab)
			*slot = -1; /* a default outside the vocabulary is disabled */
		bool present;
		uint32_t v;
		int rc = opt_u32(f, keys[k].key, &present, &v, err);
		if (rc != RN_TOK_OK)
			return rc;
		if (present && v < tok->n_vocab)
			*slot = (int32_t)v; /* out of range: llama.cpp warns and keeps the default */
	}
	return RN_TOK_OK;
}

static void set_phi3_attrs(struct rn_tok *tok, const struct gguf_file *f)
{
	/* llama.cpp: for models named phi-3/phi3, special tokens strip spaces on their right, except <unk>, <s>
	 * and <|endoftext|> */
	struct gguf_str name = gguf_get_str(f, "general.name", (struct gguf_str){NULL, 0});
	char low[256];
	size_t n = name.len < sizeof low - 1 ? (size_t)name.len : sizeof low - 1;
	for (size_t i = 0; i < n; i++)
		low[i] = (char)tolower((unsigned char)name.ptr[i]);
	low[n] = 0;
	if (!strstr(low, "phi-3") && !strstr(low, "phi3"))
		return;
	for (uint32_t k = 0; k < tok->n_special; k++)
		tok->tokens[tok->special[k]].attr |= RN_TOK_ATTR_RSTRIP;
	int32_t id = rn_tok_vocab_find(tok, "</s>", 4);
	if (id >= 0)
		tok->tokens[id].attr |= RN_TOK_ATTR_RSTRIP;
	static const char *const keep[] = {"<unk>", "<s>", "<|endoftext|>"};
	for (size_t k = 0; k < 3; k++) {
		id = rn_tok_vocab_find(tok, keep[k], strlen(keep[k]));
		if (id >= 0)
			tok->tokens[id].attr &= (uint16_t)~RN_TOK_ATTR_RSTRIP;
	}
}

static int encode_ids(const struct rn_tok *tok, const char *text, size_t len, bool add_special, bool parse_special,
		      struct rn_tok_ids *out, struct rn_tok_error *err);

int rn_tok_load(const struct gguf_file *f, const struct rn_tok_options *opt, struct rn_tok **out,
		struct rn_tok_error *err)
{
	*out = NULL;
	struct gguf_str model, pre = {"", 0};
	int rc = gguf_find_str(f, "tokenizer.ggml.model", &model);
	if (rc == GGUF_ERR_NOT_FOUND)
		return rn_tok_fail(err, RN_TOK_ERR_MISSING, "tokenizer.ggml.model is missing: the file has no tokenizer");
	if (rc != GGUF_OK)
		return rn_tok_fail(err, RN_TOK_ERR_TYPE, "tokenizer.ggml.model is not a string");
	char q[96];
	str_quote(model, q, sizeof q);
	enum rn_tok_kind kind;
	if (str_is(model, "gpt2")) {
		kind = RN_TOK_KIND_BPE;
	} else if (str_is(model, "llama")) {
		kind = RN_TOK_KIND_SPM;
	} else {
		for (size_t i = 0; i < sizeof unsupported_models / sizeof unsupported_models[0]; i++)
			if (str_is(model, unsupported_models[i]))
				return rn_tok_fail(err, RN_TOK_ERR_UNSUPPORTED,
						   "tokenizer model \"%s\" is not supported (orun implements \"gpt2\" and \"llama\")", q);
		return rn_tok_fail(err, RN_TOK_ERR_UNSUPPORTED, "unknown tokenizer model \"%s\" (tokenizer.ggml.model)", q);
	}

	if (opt && opt->pre_override) {
		pre.ptr = opt->pre_override;
		pre.len = strlen(opt->pre_override);
	} else {
		rc = gguf_find_str(f, "tokenizer.ggml.pre", &pre);
		if (rc == GGUF_ERR_NOT_FOUND)
			pre = (struct gguf_str){"", 0};
		else if (rc != GGUF_OK)
			return rn_tok_fail(err, RN_TOK_ERR_TYPE, "tokenizer.ggml.pre is not a string");
	}

	struct rn_tok *tok = calloc(1, sizeof *tok);
	if (!tok)
		return rn_tok_fail(err, RN_TOK_ERR_NOMEM, "out of memory for the tokenizer");
	tok->kind = kind;
	snprintf(tok->model_name, sizeof tok->model_name, "%s", kind == RN_TOK_KIND_BPE ? "gpt2" : "llama");
	struct rn_tok_special *sp = &tok->sp;
	memset(sp, 0xff, sizeof *sp); /* every id -1 */

	if (kind == RN_TOK_KIND_BPE) {
		const struct pre_entry *pe = NULL;
		if (pre.len == 0) {
			pe = &pre_table[0]; /* missing pre-tokenizer: llama.cpp uses "default" */
		} else {
			for (size_t i = 0; i < sizeof pre_table / sizeof pre_table[0]; i++)
				if (str_is(pre, pre_table[i].name))
					pe = &pre_table[i];
		}
		if (!pe) {
			str_quote(pre, q, sizeof q);
			rc = rn_tok_fail(err, RN_TOK_ERR_UNSUPPORTED,
					 "pre-tokenizer \"%s\" (tokenizer.ggml.pre) is not supported by orun's BPE tokenizer", q);
			goto fail;
		}
		tok->pre = pe->pre;
		snprintf(tok->pre_name, sizeof tok->pre_name, "%s", pe->name);
		tok->clean_spaces = pe->clean_spaces;
		tok->ignore_merges = pe->ignore_merges;
		tok->add_bos = pe->add_bos;
		tok->add_space_prefix = false;
		sp->bos = 11;
		sp->eos = 11;
	} else {
		tok->pre = RN_TOK_PRE_NONE;
		snprintf(tok->pre_name, sizeof tok->pre_name, "default");
		tok->add_space_prefix = true;
		tok->clean_spaces = false;
		tok->add_bos = true;
		tok->add_eos = false;
		sp->bos = 1;
		sp->eos = 2;
		sp->unk = 0;
	}
	if ((rc = opt_bool(f, "tokenizer.ggml.add_space_prefix", &tok->add_space_prefix, err)) != RN_TOK_OK)
		goto fail;
	if ((rc = load_vocab(tok, f, err)) != RN_TOK_OK)
		goto fail;

	if (kind == RN_TOK_KIND_BPE) {
		const struct gguf_array *merges;
		rc = gguf_find_arr(f, "tokenizer.ggml.merges", &merges);
		if (rc == GGUF_ERR_NOT_FOUND) {
			rc = rn_tok_fail(err, RN_TOK_ERR_MISSING, "tokenizer.ggml.merges is missing (required by a \"gpt2\" tokenizer)");
			goto fail;
		}
		if (rc != GGUF_OK || merges->type != GGUF_VT_STRING) {
			rc = rn_tok_fail(err, RN_TOK_ERR_TYPE, "tokenizer.ggml.merges is not an array of strings");
			goto fail;
		}
		if ((rc = rn_tok_bpe_init(tok, merges, err)) != RN_TOK_OK)
			goto fail;
	} else {
		for (int b = 0; b < 256; b++)
			tok->byte_tok[b] = rn_tok_spm_byte_token(tok, (uint8_t)b);
	}

	/* the linefeed token, found as llama.cpp does: before the special tokens exist, falling back to the
	 * default padding id (none) */
	if (kind == RN_TOK_KIND_SPM) {
		sp->nl = tok->byte_tok['\n'];
	} else {
		struct rn_tok_ids ids = {0};
		rc = encode_ids(tok, "\n", 1, false, false, &ids, err);
		sp->nl = ids.n ? ids.v[0] : -1;
		free(ids.v);
		if (rc != RN_TOK_OK)
			goto fail;
	}
	if ((rc = load_special_ids(tok, f, err)) != RN_TOK_OK)
		goto fail;
	if ((rc = opt_bool(f, "tokenizer.ggml.add_bos_token", &tok->add_bos, err)) != RN_TOK_OK ||
	    (rc = opt_bool(f, "tokenizer.ggml.add_eos_token", &tok->add_eos, err)) != RN_TOK_OK)
		goto fail;
	if ((rc = fix_special(tok, err)) != RN_TOK_OK || (rc = build_special(tok, err)) != RN_TOK_OK ||
	    (rc = build_pieces(tok, err)) != RN_TOK_OK)
		goto fail;
	set_phi3_attrs(tok, f);

	*out = tok;
	return RN_TOK_OK;
fail:
	rn_tok_free(tok);
	return rc;
}

void rn_tok_free(struct rn_tok *tok)
{
	if (!tok)
		return;
	rn_tok_bpe_free(tok);
	free(tok->tokens);
	free(tok->arena);
	free(tok->sym);
	free(tok->map.slot);
	free(tok->merges.slot);
	free(tok->special);
	free(tok->eog);
	free(tok);
}

/* ------------------------------------------------------------------------------------------------------
 * Encoding
 */

struct frag {
	size_t off, len;
	int32_t token; /* -1: raw text */
};

struct frags {
	struct frag *v;
	size_t n, cap;
};

static bool frags_push(struct frags *f, size_t off, size_t len, int32_t token)
{
	if (f->n == f->cap && OB_GROW(f->v, f->cap, f->n + 1, 0) != OB_GROW_OK)
		return false;
	f->v[f->n++] = (struct frag){off, len, token};
	return true;
}

/* isspace() in the C locale, as llama.cpp's lstrip/rstrip use it */
static bool c_space(char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

/* Split the text around special tokens (llama.cpp's tokenizer_st_partition): one token text at a time,
 * longest first, every non-overlapping occurrence left to right inside the fragments still raw. */
static int partition(const struct rn_tok *tok, const char *text, size_t len, bool parse_special, struct frags *out,
		     struct rn_tok_error *err)
{
	struct frags cur = {0}, next = {0};
	if (len && !frags_push(&cur, 0, len, -1))
		goto oom;
	for (uint32_t k = 0; k < tok->n_special && cur.n; k++) {
		int32_t id = tok->special[k];
		const struct rn_tok_token *t = &tok->tokens[id];
		if (!parse_special && (t->attr & (RN_TOK_ATTR_CONTROL | RN_TOK_ATTR_UNKNOWN)))
			continue;
		const char *needle = tok->arena + t->text_off;
		size_t nlen = t->text_len;
		bool any = false;
		next.n = 0;
		for (size_t i = 0; i < cur.n; i++) {
			struct frag fr = cur.v[i];
			if (fr.token >= 0 || fr.len < nlen) {
				if (!frags_push(&next, fr.off, fr.len, fr.token))
					goto oom;
				continue;
			}
			size_t base = fr.off, blen = fr.len;
			for (;;) {
				const char *m = blen >= nlen ? memmem(text + base, blen, needle, nlen) : NULL;
				if (!m) {
					if (blen && !frags_push(&next, base, blen, -1))
						goto oom;
					break;
				}
				any = true;
				size_t mpos = (size_t)(m - text);
				size_t left = mpos - base;
				if (t->attr & RN_TOK_ATTR_LSTRIP)
					while (left > 0 && c_space(text[base + left - 1]))
						left--;
				if (left && !frags_push(&next, base, left, -1))
					goto oom;
				if (!frags_push(&next, 0, 0, id))
					goto oom;
				size_t roff = mpos + nlen, rlen = base + blen - roff;
				if (rlen == 0)
					break;
				if (t->attr & RN_TOK_ATTR_RSTRIP)
					while (rlen > 0 && c_space(text[roff])) {
						roff++;
						rlen--;
					}
				base = roff;
				blen = rlen;
			}
		}
		if (any) {
			struct frags tmp = cur;
			cur = next;
			next = tmp;
		}
	}
	free(next.v);
	*out = cur;
	return RN_TOK_OK;
oom:
	free(cur.v);
	free(next.v);
	return rn_tok_fail(err, RN_TOK_ERR_NOMEM, "out of memory splitting %zu bytes of text at special tokens", len);
}

static int encode_ids(const struct rn_tok *tok, const char *text, size_t len, bool add_special, bool parse_special,
		      struct rn_tok_ids *out, struct rn_tok_error *err)
{
	if (len > RN_TOK_MAX_TEXT)
		return rn_tok_fail(err, RN_TOK_ERR_TOO_LONG, "text of %zu bytes is longer than the limit %u", len, RN_TOK_MAX_TEXT);
	struct frags fr = {0};
	int rc = partition(tok, text, len, parse_special, &fr, err);
	if (rc != RN_TOK_OK)
		return rc;
	if (add_special && tok->add_bos && tok->sp.bos >= 0)
		rn_tok_ids_push(out, tok->sp.bos);
	bool prev_special = true; /* SentencePiece: a space goes before the first fragment and after specials */
	for (size_t i = 0; i < fr.n && rc == RN_TOK_OK; i++) {
		if (fr.v[i].token >= 0) {
			rn_tok_ids_push(out, fr.v[i].token);
			prev_special = true;
		} else if (tok->kind == RN_TOK_KIND_BPE) {
			rc = rn_tok_bpe_encode(tok, text + fr.v[i].off, fr.v[i].len, out, err);
		} else {
			rc = rn_tok_spm_encode(tok, text + fr.v[i].off, fr.v[i].len, tok->add_space_prefix && prev_special, out, err);
			prev_special = false;
		}
	}
	free(fr.v);
	if (rc == RN_TOK_OK && add_special && tok->add_eos && tok->sp.eos >= 0)
		rn_tok_ids_push(out, tok->sp.eos);
	if (rc == RN_TOK_OK && out->oom)
		rc = rn_tok_fail(err, RN_TOK_ERR_NOMEM, "out of memory for the token ids of %zu bytes of text", len);
	return rc;
}

int rn_tok_encode(const struct rn_tok *tok, const char *text, size_t len, bool add_special, bool parse_special,
		  int32_t *ids, size_t cap, size_t *n_ids, struct rn_tok_error *err)
{
	struct rn_tok_ids o = {0};
	*n_ids = 0;
	int rc = encode_ids(tok, text, len, add_special, parse_special, &o, err);
	if (rc == RN_TOK_OK) {
		*n_ids = o.n;
		if (o.n)
			memcpy(ids, o.v, (o.n < cap ? o.n : cap) * sizeof *ids);
		if (o.n > cap)
			rc = rn_tok_fail(err, RN_TOK_ERR_NOSPACE, "%zu token ids do not fit in a buffer of %zu", o.n, cap);
	}
	free(o.v);
	return rc;
}

int rn_tok_encode_alloc(const struct rn_tok *tok, const char *text, size_t len, bool add_special,
			bool parse_special, int32_t **ids, size_t *n_ids, struct rn_tok_error *err)
{
	struct rn_tok_ids o = {0};
	int rc = encode_ids(tok, text, len, add_special, parse_special, &o, err);
	if (rc != RN_TOK_OK || o.n == 0) {
		free(o.v);
		o.v = NULL;
		o.n = 0;
	}
	*ids = o.v;
	*n_ids = o.n;
	return rc;
}

/* ------------------------------------------------------------------------------------------------------
 * Pieces and detokenization
 */

/* The piece of an id known to be in range. */
static void piece_view(const struct rn_tok *tok, int32_t id, bool special, const char **ptr, size_t *len)
{
	const struct rn_tok_token *t = &tok->tokens[id];
	if (!special && (t->attr & (RN_TOK_ATTR_UNKNOWN | RN_TOK_ATTR_CONTROL))) {
		*ptr = "";
		*len = 0;
		return;
	}
	*ptr = tok->arena + t->piece_off;
	*len = t->piece_len;
}

int rn_tok_piece(const struct rn_tok *tok, int32_t id, bool special, const char **ptr, size_t *len)
{
	if (id < 0 || (uint32_t)id >= tok->n_vocab) {
		*ptr = "";
		*len = 0;
		return RN_TOK_ERR_RANGE;
	}
	const struct rn_tok_token *t = &tok->tokens[id];
	if (!special && (t->attr & (RN_TOK_ATTR_UNKNOWN | RN_TOK_ATTR_CONTROL))) {
		*ptr = "";
		*len = 0;
		return RN_TOK_OK;
	}
	*ptr = tok->arena + t->piece_off;
	*len = t->piece_len;
	return RN_TOK_OK;
}

int rn_tok_detokenize(const struct rn_tok *tok, const int32_t *ids, size_t n_ids, bool remove_special,
		      bool unparse_special, char *buf, size_t cap, size_t *len)
{
	*len = 0;
	for (size_t i = 0; i < n_ids; i++)
		if (ids[i] < 0 || (uint32_t)ids[i] >= tok->n_vocab)
			return RN_TOK_ERR_RANGE;
	bool remove_space = tok->add_space_prefix;
	if (remove_special && tok->add_bos && n_ids > 0 && ids[0] == tok->sp.bos) {
		remove_space = false;
		ids++;
		n_ids--;
	}
	if (remove_special && tok->add_eos && n_ids > 0 && ids[n_ids - 1] == tok->sp.eos)
		n_ids--;

	/* first the total, so that nothing is written when the buffer is too small */
	size_t total = 0;
	for (size_t i = 0; i < n_ids; i++) {
		const char *p;
		size_t n;
		piece_view(tok, ids[i], unparse_special, &p, &n);
		if (i == 0 && remove_space && n > 0 && p[0] == ' ')
			n--;
		total += n;
		if (total > RN_TOK_MAX_DETOKENIZE)
			return RN_TOK_ERR_TOO_LONG;
	}
	if (total > cap) {
		*len = total;
		return RN_TOK_ERR_NOSPACE;
	}
	size_t w = 0;
	for (size_t i = 0; i < n_ids; i++) {
		const char *p;
		size_t n;
		piece_view(tok, ids[i], unparse_special, &p, &n);
		if (i == 0 && remove_space && n > 0 && p[0] == ' ') {
			p++;
			n--;
		}
		if (n)
			memcpy(buf + w, p, n);
		w += n;
	}
	if (tok->clean_spaces && w > 0) {
		/* llama.cpp's three passes: " ?" " !" " ." " ," lose the space; " ' " loses both; " 's" " 'm" " 're"
		 * " 've" lose the space */
		size_t t = 1;
		for (size_t i = 1; i < w; i++) {
			char x = buf[i];
			if (buf[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ','))
				t--;
			buf[t++] = x;
		}
		size_t w2 = t;
		t = 1;
		for (size_t i = 1; i < w2; i++) {
			char x = buf[i];
			if (x == '\'' && i + 1 < w2 && buf[i - 1] == ' ' && buf[i + 1] == ' ') {
				t--;
				buf[++i] = '\0';
			}
			buf[t++] = x;
		}
		size_t w3 = t;
		t = 1;
		for (size_t i = 1; i < w3; i++) {
			char x = buf[i];
			if (buf[i - 1] == ' ' && x == '\'' && i + 1 < w3) {
				char x1 = buf[i + 1];
				if (x1 == 's' || x1 == 'm')
					t--;
				else if (i + 2 < w3 && ((x1 == 'r' && buf[i + 2] == 'e') || (x1 == 'v' && buf[i + 2] == 'e')))
					t--;
			}
			buf[t++] = x;
		}
		w = t;
	}
	*len = w;
	return RN_TOK_OK;
}

/* ------------------------------------------------------------------------------------------------------
 * Getters
 */

uint32_t rn_tok_n_vocab(const struct rn_tok *tok) { return tok->n_vocab; }
enum rn_tok_kind rn_tok_kind(const struct rn_tok *tok) { return tok->kind; }
const char *rn_tok_model_name(const struct rn_tok *tok) { return tok->model_name; }
const char *rn_tok_pre_name(const struct rn_tok *tok) { return tok->pre_name; }
const struct rn_tok_special *rn_tok_specials(const struct rn_tok *tok) { return &tok->sp; }
int32_t rn_tok_bos(const struct rn_tok *tok) { return tok->sp.bos; }
int32_t rn_tok_eos(const struct rn_tok *tok) { return tok->sp.eos; }
bool rn_tok_add_bos(const struct rn_tok *tok) { return tok->add_bos; }
bool rn_tok_add_eos(const struct rn_tok *tok) { return tok->add_eos; }
bool rn_tok_add_space_prefix(const struct rn_tok *tok) { return tok->add_space_prefix; }

static bool in_range(const struct rn_tok *tok, int32_t id)
{
	return id >= 0 && (uint32_t)id < tok->n_vocab;
}

bool rn_tok_is_eog(const struct rn_tok *tok, int32_t id)
{
	if (!in_range(tok, id))
		return false;
	size_t lo = 0, hi = tok->n_eog;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (tok->eog[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < tok->n_eog && tok->eog[lo] == id;
}

size_t rn_tok_eog_ids(const struct rn_tok *tok, const int32_t **ids)
{
	*ids = tok->eog;
	return tok->n_eog;
}

uint32_t rn_tok_attr(const struct rn_tok *tok, int32_t id)
{
	return in_range(tok, id) ? tok->tokens[id].attr : 0;
}

enum rn_tok_type rn_tok_type(const struct rn_tok *tok, int32_t id)
{
	return in_range(tok, id) ? (enum rn_tok_type)tok->tokens[id].type : RN_TOK_TYPE_UNDEFINED;
}

bool rn_tok_is_control(const struct rn_tok *tok, int32_t id)
{
	return in_range(tok, id) && (tok->tokens[id].attr & RN_TOK_ATTR_CONTROL);
}

float rn_tok_score(const struct rn_tok *tok, int32_t id)
{
	return in_range(tok, id) ? tok->tokens[id].score : 0.0f;
}

const char *rn_tok_text(const struct rn_tok *tok, int32_t id, size_t *len)
{
	if (!in_range(tok, id)) {
		*len = 0;
		return NULL;
	}
	*len = tok->tokens[id].text_len;
	return tok->arena + tok->tokens[id].text_off;
}

int32_t rn_tok_find(const struct rn_tok *tok, const char *text, size_t len)
{
	return rn_tok_vocab_find(tok, text, len);
}
