/* runner/tokenizer/internal.h — the tokenizer's private structures, shared by runner/tokenizer*.c only.
 *
 * Strings are kept as (offset, length) into one arena per tokenizer. "Symbols" are every string the BPE merges
 * can produce: ids below n_vocab are the vocabulary's tokens, ids above are merge results that are not tokens
 * (llama.cpp keeps those as strings; interning them keeps the merge loop on integers).
 */
#ifndef ORUN_RUNNER_TOKENIZER_INTERNAL_H
#define ORUN_RUNNER_TOKENIZER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/buf.h"
#include "runner/tokenizer/tokenizer.h"

struct gguf_array;

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#define RN_TOK_MAX_REGEX 4         /* split patterns of one pre-tokenizer */
#define RN_TOK_MAX_SYMBOLS (1u << 26) /* vocabulary tokens plus interned merge strings */
#define RN_TOK_ARENA_MAX (1u << 31)   /* bytes in the string arena (offsets are uint32_t) */

/* Pre-tokenizer families (llama.cpp's LLAMA_VOCAB_PRE_TYPE_* that share split patterns). */
enum rn_tok_pre {
	RN_TOK_PRE_NONE = 0, /* SentencePiece: no pre-tokenizer */
	RN_TOK_PRE_DEFAULT,
	RN_TOK_PRE_GPT2,
	RN_TOK_PRE_LLAMA3,
	RN_TOK_PRE_QWEN2,
	RN_TOK_PRE_QWEN35,
	RN_TOK_PRE_SMOLLM, /* also starcoder, refact, command-r, codeshell, exaone, minerva, mellum2 */
};

struct rn_tok_token {
	uint32_t text_off, text_len;   /* vocabulary text in tok->arena */
	uint32_t piece_off, piece_len; /* token_to_piece(special = true) in tok->arena */
	float score;
	uint16_t attr; /* RN_TOK_ATTR_* */
	uint8_t type;  /* enum rn_tok_type as stored (out-of-range types read as UNDEFINED) */
};

/* Open-addressing map from a symbol's text to its id; hash and id side by side (one cache line per probe). */
struct rn_strslot {
	uint32_t hash; /* the text's hash (forced odd, so never 0) */
	int32_t id;    /* symbol id, -1 empty */
};

struct rn_strmap {
	uint32_t mask; /* slots - 1 */
	struct rn_strslot *slot;
};

struct rn_sym {
	uint32_t off, len; /* text in tok->arena */
};

/* Open-addressing map from a pair of symbol ids to (rank, result symbol). */
struct rn_pair {
	uint64_t key; /* (left << 32) | right; UINT64_MAX empty */
	int32_t rank;
	int32_t result;
};

struct rn_pairmap {
	uint32_t mask;
	struct rn_pair *slot; /* one 16-byte slot per probe: a look-up touches one cache line */
};

struct rn_tok {
	enum rn_tok_kind kind;
	enum rn_tok_pre pre;
	char model_name[16];
	char pre_name[64];
	uint32_t n_vocab;
	struct rn_tok_token *tokens; /* n_vocab */

	char *arena; /* every string (token texts, pieces, merge strings) */
	size_t arena_len, arena_cap;

	/* symbols: ids [0, n_vocab) are tokens, [n_vocab, n_syms) merge strings that are not tokens */
	uint32_t n_syms, syms_cap;
	struct rn_sym *sym;
	struct rn_strmap map;

	/* BPE */
	struct rn_pairmap merges;
	uint32_t n_merges;
	int32_t byte_sym[256];     /* symbol of the byte-level character of byte b, -1 when not interned */
	int32_t single_tok[256];   /* token whose text is the single byte b, -1 if none */
	uint8_t byte_enc[256][2];  /* UTF-8 of the byte-level character of byte b (always 1 or 2 bytes) */
	uint8_t byte_enc_len[256];
	int16_t byte_dec[0x144];   /* byte-level character (code point < 0x144) -> byte, -1 for the others */
	bool ignore_merges; /* llama3: a word that is a whole token is taken as is */
	bool clean_spaces;
	int n_regex;
	pcre2_code *regex[RN_TOK_MAX_REGEX];
	bool regex_jit[RN_TOK_MAX_REGEX];

	/* SentencePiece */
	int32_t byte_tok[256]; /* <0xXX> token (or the single-byte token) for byte b, -1 when neither exists */

	struct rn_tok_special sp;
	bool add_bos, add_eos, add_space_prefix;
	int32_t *special;   /* ids recognised in text (control, user-defined, unknown), longest text first */
	uint32_t n_special;
	int32_t *eog;       /* ascending */
	uint32_t n_eog;
	size_t cap_eog;
};

/* A growable array of ids with a ceiling (tokenizer.c). */
struct rn_tok_ids {
	int32_t *v;
	size_t n, cap;
	bool oom;
};
void rn_tok_ids_push(struct rn_tok_ids *o, int32_t id);

/* tokenizer.c */
uint32_t rn_tok_hash(const void *s, size_t n);
int32_t rn_tok_sym_find(const struct rn_tok *tok, const char *s, size_t n); /* any symbol, -1 if none */
int32_t rn_tok_vocab_find(const struct rn_tok *tok, const char *s, size_t n); /* tokens only */
/* Make room for n symbols in total (capacity only). */
int rn_tok_sym_reserve(struct rn_tok *tok, uint64_t n, struct rn_tok_error *err);
int rn_tok_sym_intern(struct rn_tok *tok, const char *s, size_t n, int32_t *id, struct rn_tok_error *err);
int rn_tok_fail(struct rn_tok_error *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The merge queue of both encoders: a binary heap of `size`-byte elements with the one `first` puts before
 * every other on top (BPE: the lowest merge rank; SentencePiece: the highest score). static inline, so each
 * encoder's loop gets it compiled for its own element size and order. */
struct rn_tok_heap {
	void *v;
	size_t n, cap; /* elements */
};

/* Adds a copy of *e; false when memory ran out (the heap is unchanged). */
static inline bool rn_tok_heap_push(struct rn_tok_heap *h, const void *e, size_t size,
				    bool (*first)(const void *a, const void *b))
{
	if (h->n == h->cap && ob_grow(&h->v, &h->cap, h->n + 1, size, 64, 0) != OB_GROW_OK)
		return false;
	char *v = h->v;
	size_t i = h->n++;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!first(e, v + p * size))
			break;
		memcpy(v + i * size, v + p * size, size);
		i = p;
	}
	memcpy(v + i * size, e, size);
	return true;
}

/* Moves the top element into *top; the heap must not be empty. */
static inline void rn_tok_heap_pop(struct rn_tok_heap *h, void *top, size_t size,
				   bool (*first)(const void *a, const void *b))
{
	char *v = h->v;
	memcpy(top, v, size);
	size_t i = 0, n = --h->n;
	const char *last = v + n * size; /* never overwritten below: the sift writes slots < n */
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && first(v + (c + 1) * size, v + c * size))
			c++;
		if (!first(v + c * size, last))
			break;
		memcpy(v + i * size, v + c * size, size);
		i = c;
	}
	if (n)
		memcpy(v + i * size, last, size);
}

/* bpe.c */
int rn_tok_bpe_init(struct rn_tok *tok, const struct gguf_array *merges, struct rn_tok_error *err);
void rn_tok_bpe_free(struct rn_tok *tok);
/* Decode a normal BPE token's text (byte-level alphabet) into out (cap >= 4 * n + 64 + n); returns length. */
size_t rn_tok_bpe_decode_text(const struct rn_tok *tok, const char *s, size_t n, char *out);
/* Tokenize one raw-text fragment (no special tokens inside). */
int rn_tok_bpe_encode(const struct rn_tok *tok, const char *text, size_t len, struct rn_tok_ids *out,
		      struct rn_tok_error *err);

/* spm.c */
int rn_tok_spm_encode(const struct rn_tok *tok, const char *text, size_t len, bool space_prefix,
		      struct rn_tok_ids *out, struct rn_tok_error *err);
int32_t rn_tok_spm_byte_token(const struct rn_tok *tok, uint8_t b);


#endif
