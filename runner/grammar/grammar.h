/* runner/grammar/grammar.h — grammar-constrained sampling: llama.cpp's GBNF language compiled into a matcher,
 * a token trie per vocabulary, and a per-request state that masks the tokens the grammar cannot take next.
 *
 * Three objects: a compiled grammar (immutable, shareable between requests), a vocabulary (the tokens' byte
 * strings in a trie; built once per tokenizer, immutable, shareable between slots) and a state (one per
 * request: the matcher's stacks after the tokens accepted so far). Ollama's `format`, OpenAI's
 * `response_format` and llama-server's `grammar` / `json_schema` all end here (the JSON schema converter is
 * runner/grammar/json_schema.h).
 */
#ifndef ORUN_RUNNER_GRAMMAR_GRAMMAR_H
#define ORUN_RUNNER_GRAMMAR_GRAMMAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runner/error.h"

struct rn_tok;
struct rn_sampler;
struct rn_grammar;
struct rn_grammar_vocab;
struct rn_grammar_state;

/* Compile GBNF text (llama.cpp's grammar language, as in its grammars/README.md); root names the start rule
 * (NULL: "root"). Returns NULL with *err: RN_ERR_INVALID_ARG and a message naming the problem and where
 * ("grammar: line 3 column 7: undefined rule 'valu'"), RN_ERR_NOMEM. */
struct rn_grammar *rn_grammar_compile(const char *text, size_t len, const char *root, struct rn_error *err) RN_WUR;
void rn_grammar_free(struct rn_grammar *g); /* accepts NULL */

/* The vocabulary of tok (borrowed; must outlive the result) as the grammar sees it: every token's text bytes
 * (control tokens and end-of-generation tokens are not text; the end-of-generation tokens are allowed only
 * where the grammar may end). NULL with *err. */
struct rn_grammar_vocab *rn_grammar_vocab_new(const struct rn_tok *tok, struct rn_error *err) RN_WUR;
void rn_grammar_vocab_free(struct rn_grammar_vocab *v); /* accepts NULL */

/* A matcher at the start of g over v (both borrowed). NULL with *err (RN_ERR_NOMEM). */
struct rn_grammar_state *rn_grammar_state_new(const struct rn_grammar *g, const struct rn_grammar_vocab *v,
					      struct rn_error *err) RN_WUR;
void rn_grammar_state_free(struct rn_grammar_state *s); /* accepts NULL */

/* Whether token may come next (cheap: one trie walk for that token only). */
bool rn_grammar_state_allows(struct rn_grammar_state *s, int32_t token);

/* Set logits[t] = -INFINITY for every token t the grammar cannot take next (n_vocab entries). */
void rn_grammar_state_mask(struct rn_grammar_state *s, float *logits);

/* Advance over token (which must be allowed). Returns RN_OK, or RN_ERR_INVALID_ARG when the token breaks the
 * grammar (the state is then unchanged). */
int rn_grammar_state_accept(struct rn_grammar_state *s, int32_t token) RN_WUR;

/* Advance over raw text bytes (for text generated before the grammar was switched on in the same token).
 * Returns false (state unchanged) when the bytes break the grammar. */
bool rn_grammar_state_accept_bytes(struct rn_grammar_state *s, const char *text, size_t len);

/* The grammar is complete here (an end-of-generation token is allowed); `final`: nothing else can follow. */
bool rn_grammar_state_can_end(const struct rn_grammar_state *s, bool *final);

/* The vocabulary the state was made with (borrowed). */
const struct rn_grammar_vocab *rn_grammar_state_vocab(const struct rn_grammar_state *s);

/* Choose the next token from logits[0..n_vocab) under the grammar with smp (runner/sampler.h): smp's choice
 * when the grammar allows it, else smp's choice from the logits with every rejected token masked (the mask
 * applies before the sampler's chain). logits is modified (as rn_sampler_sample does), scratch [n_vocab] is
 * overwritten; ids at or past the vocabulary's size are never chosen. *masked tells whether the mask was
 * needed. Returns the token, or -1 when the grammar allows none (or its stacks went past their limit). The
 * state is not advanced. */
int32_t rn_grammar_sample(struct rn_grammar_state *s, struct rn_sampler *smp, float *logits, float *scratch,
			  int n_vocab, bool *masked);

#endif
