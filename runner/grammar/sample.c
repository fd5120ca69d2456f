/* runner/grammar/sample.c — a token chosen under a grammar with the request's sampler: the sampler's own
 * choice when the grammar allows it (one token's bytes walked), else a second draw with every token the
 * grammar rejects masked (a walk of the vocabulary trie, or a cached mask). llama.cpp's common_sampler does
 * the same; runner/grammar/README.md has the measurement behind the choice.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "runner/grammar/grammar_int.h"
#include "runner/sampler.h"

int32_t rn_grammar_sample(struct rn_grammar_state *s, struct rn_sampler *smp, float *logits, float *scratch,
			  int n_vocab, bool *masked)
{
	const struct rn_grammar_vocab *v = rn_grammar_state_vocab(s);
	*masked = false;
	for (int i = (int)v->n_vocab; i < n_vocab; i++)
		logits[i] = -INFINITY; /* ids past the tokenizer's vocabulary (padding) are never text */
	memcpy(scratch, logits, (size_t)n_vocab * sizeof *logits); /* the sampler changes logits (penalties) */
	int32_t t = rn_sampler_sample(smp, logits);
	if (rn_grammar_state_allows(s, t))
		return t;
	*masked = true;
	rn_grammar_state_mask(s, scratch);
	t = rn_sampler_sample(smp, scratch);
	return rn_grammar_state_allows(s, t) ? t : -1;
}
