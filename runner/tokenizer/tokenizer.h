/* runner/tokenizer/tokenizer.h — text to token ids and back, from a GGUF file's tokenizer.* metadata.
 *
 * Two models: byte-level BPE (tokenizer.ggml.model "gpt2", pre-tokenizer chosen by tokenizer.ggml.pre, split
 * patterns run by PCRE2) and SentencePiece-style (model "llama": score-driven merges, byte fallback). The
 * reference for every behaviour, edge cases included, is llama.cpp (llama-vocab.cpp at the commit named in
 * tests/data/tokenizer/README.md); tests/tokenizer checks ids against its golden output.
 *
 * Thread-safety: a loaded struct rn_tok is immutable. Every function taking a const struct rn_tok * may run on
 * any number of threads at once (the server encodes on its connection threads); each call keeps its scratch
 * memory to itself. A struct rn_tok_stream belongs to one thread at a time.
 */
#ifndef ORUN_RUNNER_TOKENIZER_TOKENIZER_H
#define ORUN_RUNNER_TOKENIZER_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/utf8.h"

#if defined(__GNUC__)
#define RN_TOK_WUR __attribute__((warn_unused_result))
#else
#define RN_TOK_WUR
#endif

struct gguf_file;

/* Limits (checked on load and on every call; errors quote them) */
#define RN_TOK_MAX_VOCAB (1u << 24)      /* tokens in a vocabulary */
#define RN_TOK_MAX_MERGES (1u << 24)     /* BPE merge rules */
#define RN_TOK_MAX_TOKEN_BYTES 65536u    /* bytes in one token's text */
#define RN_TOK_MAX_TEXT (1u << 29)       /* bytes of text one encode call accepts */
#define RN_TOK_MAX_DETOKENIZE (1u << 30) /* bytes one detokenize call produces */

enum rn_tok_status {
	RN_TOK_OK = 0,
	RN_TOK_ERR_NOMEM,       /* an allocation failed */
	RN_TOK_ERR_MISSING,     /* a required key is absent (tokenizer.ggml.model, .tokens, .merges) */
	RN_TOK_ERR_TYPE,        /* a key has the wrong value type (e.g. tokens not an array of strings) */
	RN_TOK_ERR_LENGTH,      /* array lengths disagree (scores or token_type shorter than tokens), or a limit */
	RN_TOK_ERR_UNSUPPORTED, /* tokenizer model or pre-tokenizer this build does not implement */
	RN_TOK_ERR_VOCAB,       /* bad vocabulary content: empty, duplicate token texts */
	RN_TOK_ERR_REGEX,       /* a pre-tokenizer pattern failed to compile or to match (PCRE2's message) */
	RN_TOK_ERR_RANGE,       /* a token id outside [0, n_vocab) */
	RN_TOK_ERR_TOO_LONG,    /* input text above RN_TOK_MAX_TEXT or output above RN_TOK_MAX_DETOKENIZE */
	RN_TOK_ERR_NOSPACE,     /* the caller's buffer is too small; the needed size is reported */
	RN_TOK_ERR__COUNT
};

/* Detail of a failure: code is the enum rn_tok_status value, msg one sentence quoting the offending values. */
struct rn_tok_error {
	int code;
	char msg[320];
};

/* A short fixed description of a status code; never NULL. */
const char *rn_tok_strerror(int code);

enum rn_tok_kind {
	RN_TOK_KIND_BPE = 1, /* "gpt2": byte-level BPE */
	RN_TOK_KIND_SPM = 2, /* "llama": SentencePiece-style with byte fallback */
};

/* Token types as stored in tokenizer.ggml.token_type (llama.cpp's llama_token_type). */
enum rn_tok_type {
	RN_TOK_TYPE_UNDEFINED = 0,
	RN_TOK_TYPE_NORMAL = 1,
	RN_TOK_TYPE_UNKNOWN = 2,
	RN_TOK_TYPE_CONTROL = 3,
	RN_TOK_TYPE_USER_DEFINED = 4,
	RN_TOK_TYPE_UNUSED = 5,
	RN_TOK_TYPE_BYTE = 6,
};

/* Token attributes, bit values as llama.cpp's llama_token_attr. Derived from the type, then adjusted the way
 * llama.cpp does it (end-of-generation and FIM tokens found by their text become CONTROL, control tokens whose
 * text contains "unused" get UNUSED, ...). */
#define RN_TOK_ATTR_UNDEFINED 0u
#define RN_TOK_ATTR_UNKNOWN (1u << 0)
#define RN_TOK_ATTR_UNUSED (1u << 1)
#define RN_TOK_ATTR_NORMAL (1u << 2)
#define RN_TOK_ATTR_CONTROL (1u << 3)
#define RN_TOK_ATTR_USER_DEFINED (1u << 4)
#define RN_TOK_ATTR_BYTE (1u << 5)
#define RN_TOK_ATTR_NORMALIZED (1u << 6)
#define RN_TOK_ATTR_LSTRIP (1u << 7)
#define RN_TOK_ATTR_RSTRIP (1u << 8)
#define RN_TOK_ATTR_SINGLE_WORD (1u << 9)

/* Special token ids; -1 where the vocabulary has none. */
struct rn_tok_special {
	int32_t bos, eos, eot, eom, unk, sep, pad, mask;
	int32_t fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep;
	int32_t nl; /* the token of "\n" (linefeed), as llama.cpp determines it */
};

struct rn_tok;

/* Load options; pass NULL for the defaults. */
struct rn_tok_options {
	/* Use this pre-tokenizer name instead of tokenizer.ggml.pre ("" = as if the key were absent). For
	 * tests and for files converted with a wrong or missing pre-tokenizer; NULL = read the file. */
	const char *pre_override;
};

/* Build a tokenizer from f's metadata. Everything needed is copied: the result does not borrow from f and may
 * outlive it. Returns RN_TOK_OK and sets *out, or an error (RN_TOK_ERR_MISSING, _TYPE, _LENGTH, _UNSUPPORTED,
 * _VOCAB, _REGEX, _NOMEM) with *err filled (err may be NULL) and *out NULL. Free with rn_tok_free. */
int rn_tok_load(const struct gguf_file *f, const struct rn_tok_options *opt, struct rn_tok **out,
		struct rn_tok_error *err) RN_TOK_WUR;

/* Free a tokenizer. Accepts NULL. */
void rn_tok_free(struct rn_tok *tok);

/* Tokenize len bytes of text (any bytes: invalid UTF-8 is handled as llama.cpp does). add_special adds BOS
 * and/or EOS where the vocabulary asks for them (tokenizer.ggml.add_bos_token / add_eos_token);
 * parse_special recognises control and unknown-type tokens written in the text (user-defined tokens are
 * always recognised), as llama_tokenize's parse_special.
 * Writes at most cap ids to ids and sets *n_ids to the full count. Returns RN_TOK_OK, RN_TOK_ERR_NOSPACE
 * when the count exceeds cap (ids then holds the first cap; call again with a larger buffer), or
 * RN_TOK_ERR_TOO_LONG / _NOMEM / _REGEX. ids may be NULL when cap is 0. */
int rn_tok_encode(const struct rn_tok *tok, const char *text, size_t len, bool add_special, bool parse_special,
		  int32_t *ids, size_t cap, size_t *n_ids, struct rn_tok_error *err) RN_TOK_WUR;

/* As rn_tok_encode, into a malloc'd array the caller frees (*ids is NULL when the result is empty). */
int rn_tok_encode_alloc(const struct rn_tok *tok, const char *text, size_t len, bool add_special,
			bool parse_special, int32_t **ids, size_t *n_ids, struct rn_tok_error *err) RN_TOK_WUR;

/* The bytes of one token, as llama.cpp's llama_token_to_piece(lstrip 0): control and unknown-type tokens
 * give their text when special is true and nothing when it is false; user-defined tokens their text; normal
 * tokens their decoded bytes (BPE: the byte-level alphabet undone; SentencePiece: U+2581 becomes a space);
 * byte tokens <0xXX> one byte. A piece may be an incomplete or invalid UTF-8 sequence. Sets *ptr and *len to a
 * view borrowed from tok (valid until rn_tok_free). Returns RN_TOK_OK or RN_TOK_ERR_RANGE. */
int rn_tok_piece(const struct rn_tok *tok, int32_t id, bool special, const char **ptr, size_t *len) RN_TOK_WUR;

/* Token ids back to text, as llama_detokenize: remove_special drops a leading BOS / trailing EOS the
 * vocabulary adds; unparse_special renders control tokens; SentencePiece vocabularies drop the leading space
 * of the first piece; the BPE pre-tokenizers llama.cpp marks clean_spaces tidy " ," " 's" etc. Writes at most
 * cap bytes (no NUL) and sets *len to the full length. Returns RN_TOK_OK, RN_TOK_ERR_NOSPACE (call again with
 * cap >= *len), RN_TOK_ERR_RANGE (an id out of range; nothing useful written) or RN_TOK_ERR_TOO_LONG. */
int rn_tok_detokenize(const struct rn_tok *tok, const int32_t *ids, size_t n_ids, bool remove_special,
		      bool unparse_special, char *buf, size_t cap, size_t *len) RN_TOK_WUR;

/* Vocabulary facts. Getters taking an id return the neutral value (0, NULL, false) for ids out of range. */
uint32_t rn_tok_n_vocab(const struct rn_tok *tok);
enum rn_tok_kind rn_tok_kind(const struct rn_tok *tok);
const char *rn_tok_model_name(const struct rn_tok *tok); /* "gpt2" or "llama" */
const char *rn_tok_pre_name(const struct rn_tok *tok);   /* the pre-tokenizer in effect ("default" if none) */
const struct rn_tok_special *rn_tok_specials(const struct rn_tok *tok);
int32_t rn_tok_bos(const struct rn_tok *tok);
int32_t rn_tok_eos(const struct rn_tok *tok);
bool rn_tok_add_bos(const struct rn_tok *tok);
bool rn_tok_add_eos(const struct rn_tok *tok);
bool rn_tok_add_space_prefix(const struct rn_tok *tok);
/* End of generation: eos, eot, eom, <|im_end|>, <|endoftext|>, FIM pad/repo/sep ... as llama.cpp decides. */
bool rn_tok_is_eog(const struct rn_tok *tok, int32_t id);
/* The end-of-generation ids in ascending order (n returned, array borrowed from tok). */
size_t rn_tok_eog_ids(const struct rn_tok *tok, const int32_t **ids);
uint32_t rn_tok_attr(const struct rn_tok *tok, int32_t id);
enum rn_tok_type rn_tok_type(const struct rn_tok *tok, int32_t id);
bool rn_tok_is_control(const struct rn_tok *tok, int32_t id); /* attr has CONTROL */
float rn_tok_score(const struct rn_tok *tok, int32_t id);
/* The token's text as stored in the vocabulary (byte-level alphabet / U+2581 not undone); view borrowed from
 * tok, NULL when out of range. */
const char *rn_tok_text(const struct rn_tok *tok, int32_t id, size_t *len);
/* The id of the token whose vocabulary text is exactly (text, len), or -1. */
int32_t rn_tok_find(const struct rn_tok *tok, const char *text, size_t len);

/* ------------------------------------------------------------------------------------------------------
 * Streaming detokenizer: turns generated ids into text chunks that are always valid UTF-8.
 *
 * Each push appends the token's piece to what is pending and returns the longest prefix that is complete:
 * a trailing sequence that may still become a valid character (a lead byte and some of its continuation
 * bytes) is held back for the next push; bytes that can never become valid UTF-8 are replaced, one U+FFFD
 * per byte, as Go's encoding/json (and so Ollama) replaces them. flush returns what is still held back,
 * each byte as U+FFFD.
 */
struct rn_tok_stream;

/* New stream over tok (which must outlive it); special chooses the piece rendering (rn_tok_piece). NULL on
 * out-of-memory. */
struct rn_tok_stream *rn_tok_stream_new(const struct rn_tok *tok, bool special);
void rn_tok_stream_free(struct rn_tok_stream *s); /* accepts NULL */
/* Forget pending bytes (new generation). */
void rn_tok_stream_reset(struct rn_tok_stream *s);
/* Feed one id. *out and *len receive the text now complete (possibly empty), borrowed from s until its next call.
 * Returns RN_TOK_OK, RN_TOK_ERR_RANGE (id out of range; nothing changes) or RN_TOK_ERR_NOMEM. */
int rn_tok_stream_push(struct rn_tok_stream *s, int32_t id, const char **out, size_t *len) RN_TOK_WUR;
/* As rn_tok_stream_push, with the piece rendered with the given `special` instead of the stream's (a token
 * llama-server's preserved_tokens shows as text). */
int rn_tok_stream_push_as(struct rn_tok_stream *s, int32_t id, bool special, const char **out, size_t *len) RN_TOK_WUR;
/* End of generation: the held-back bytes, replaced (valid UTF-8); the stream is then empty. */
int rn_tok_stream_flush(struct rn_tok_stream *s, const char **out, size_t *len) RN_TOK_WUR;
/* Bytes currently held back (0..3). */
size_t rn_tok_stream_pending(const struct rn_tok_stream *s);

/* Length of the longest prefix of (s, n) that is valid UTF-8 (strict: no overlongs, surrogates or code points
 * above U+10FFFF): base/utf8.h's ob_utf8_valid_prefix, kept under the tokenizer's name for its callers. */
static inline size_t rn_tok_utf8_valid_prefix(const char *s, size_t n)
{
	return ob_utf8_valid_prefix(s, n);
}

#endif
