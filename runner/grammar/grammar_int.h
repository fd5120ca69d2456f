/* runner/grammar/grammar_int.h — the compiled grammar and the vocabulary trie as the compiler (gbnf.c), the
 * trie builder (vocab.c) and the matcher (match.c) share them. Not a public surface: only runner/grammar/
 * includes it.
 */
#ifndef ORUN_RUNNER_GRAMMAR_GRAMMAR_INT_H
#define ORUN_RUNNER_GRAMMAR_GRAMMAR_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runner/grammar/grammar.h"

/* Limits on what a grammar text may make the compiler and the matcher do (errors quote them). */
#define RN_GRAMMAR_MAX_TEXT (1u << 20)     /* bytes of grammar text */
#define RN_GRAMMAR_MAX_RULES 65536u        /* rules, the ones groups and repetitions create included */
#define RN_GRAMMAR_MAX_ELEMENTS (1u << 20) /* elements of all rules together (after {m,n} expansion) */
#define RN_GRAMMAR_MAX_DEPTH 128           /* nesting of parentheses */
#define RN_GRAMMAR_MAX_REPEAT 10000u       /* m and n of x{m,n} */
#define RN_GRAMMAR_MAX_STACKS 4096u        /* matcher stacks alive at once (an ambiguous grammar, a long enum) */
#define RN_GRAMMAR_MAX_EXPAND (1u << 22)   /* stack words copied by rule expansions while advancing over one
					    * character (a few ms; a deep chain of rules costs its depth squared) */
#define RN_GRAMMAR_MASK_BUDGET (1u << 27)  /* ... in one mask walk (~0.3 s); past it the mask allows nothing
					    * and the request fails, rather than hang */

/* One element of a rule. A rule is its alternatives one after the other, each ending with GE_ALT except the
 * last, which ends with GE_END. */
enum ge_type {
	GE_END = 0, /* end of the rule */
	GE_ALT,     /* end of one alternative, another follows */
	GE_REF,     /* v: a rule index */
	GE_CHAR,    /* v: one code point */
	GE_SET,     /* v: index into sets (a class [..] or [^..]) */
	GE_ANY,     /* '.': any code point */
};

struct ge {
	uint32_t type; /* enum ge_type */
	uint32_t v;
};

struct ge_set {
	uint32_t first, n; /* ranges[first .. first+n) */
	bool neg;
};

struct rn_grammar {
	struct ge *el;        /* all rules' elements, rule after rule [n_el] */
	uint32_t n_el;
	uint32_t *alt;        /* start positions of every alternative, rule after rule [n_alt] */
	uint32_t *rule_alt;   /* rule r's alternatives are alt[rule_alt[r] .. rule_alt[r+1]) [n_rules + 1] */
	uint32_t n_rules;
	struct ge_set *sets;  /* [n_sets] */
	uint32_t n_sets;
	uint32_t (*ranges)[2]; /* inclusive code point ranges, sorted within a set [n_ranges] */
	uint32_t n_ranges;
	uint32_t root;        /* rule index */
};

/* A terminal element (GE_CHAR, GE_SET, GE_ANY) matches the code point c. */
bool rn_grammar_el_match(const struct rn_grammar *g, const struct ge *e, uint32_t c);
/* ... may match some code point in [lo, hi] (a UTF-8 sequence not yet complete). */
bool rn_grammar_el_match_range(const struct rn_grammar *g, const struct ge *e, uint32_t lo, uint32_t hi);

/* The vocabulary as a byte trie in preorder: node 0 is the root (no byte); node i's subtree is
 * [i, end[i]); its children are i+1, end[i+1], end[end[i+1]], ... */
struct rn_grammar_vocab {
	uint32_t n_vocab;
	uint32_t n_nodes;
	uint8_t *byte;     /* the byte on the edge into node i [n_nodes] */
	uint32_t *depth;   /* bytes from the root [n_nodes] */
	uint32_t *end;     /* one past node i's subtree [n_nodes] */
	int32_t *tok;      /* a token whose text ends at node i, or -1 [n_nodes] */
	int32_t *tok_next; /* further tokens with the same text: a chain by token id, -1 ends [n_vocab] */
	const char **text; /* each token's bytes (borrowed from the tokenizer) [n_vocab] */
	uint32_t *len;     /* ... and length; 0 for a token that is never text (control, empty) [n_vocab] */
	uint8_t *eog;      /* end-of-generation tokens [n_vocab] */
	uint32_t max_depth;
};

/* The last rn_grammar_state_mask ran out of RN_GRAMMAR_MASK_BUDGET (it then masked every token). */
bool rn_grammar_state_mask_failed(const struct rn_grammar_state *s);

/* A vocabulary from n token byte strings (borrowed: they must outlive it); eog[t] marks end-of-generation
 * tokens (eog may be NULL); a token with len 0 is never text. What rn_grammar_vocab_new builds from a
 * tokenizer; the fuzz target builds one by hand. */
struct rn_grammar_vocab *rn_grammar_vocab_from_pieces(const char *const *text, const uint32_t *len,
						      const uint8_t *eog, uint32_t n, struct rn_error *err);

#endif
