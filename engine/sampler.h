/*
 * sampler.h — the sampler's internals, for tests. The public API
 * (pt_sampler_*) is in petrel.h.
 *
 * One sample runs llama.cpp's default chain:
 *
 *   penalties -> top-k -> top-p -> min-p -> temperature -> softmax -> draw
 *
 *   penalties    for each token id seen c > 0 times in the window of the
 *                last penalty_last_n accepted tokens:
 *                  logit = logit > 0 ? logit / repeat_penalty
 *                                    : logit * repeat_penalty
 *                  logit -= c * frequency_penalty + presence_penalty
 *                (penalty_last_n <= 0: no window, no penalties)
 *   top-k        keep the k highest logits (k <= 0: off; k > n: all)
 *   top-p        softmax over what is left; keep the shortest prefix, in
 *                descending order, whose probabilities sum to >= top_p
 *                (top_p >= 1: off)
 *   min-p        keep tokens whose probability is >= min_p times the top
 *                token's (min_p <= 0: off)
 *   temperature  divide the kept logits by it; softmax; draw one token with
 *                the sampler's own xoshiro256** generator, seeded through
 *                splitmix64 from params.seed
 *
 * temperature <= 0 is greedy: the highest logit after penalties, the lowest
 * id among equal ones, and no random number is drawn. Filters never empty
 * the set (the top token always stays). NaN logits are ignored and -inf
 * ones never chosen; if no token has a usable logit, the lowest id that is
 * not NaN (else 0) is returned, so the result is always a valid id.
 *
 * Order among candidates (which token a random number maps to): logit
 * descending, then id ascending; but when no filter is set (top_k <= 0,
 * top_p >= 1, min_p <= 0) nothing is sorted and they stay in id order, as
 * in llama.cpp.
 */
#ifndef PETREL_SAMPLER_H
#define PETREL_SAMPLER_H

#include "petrel.h"

typedef struct pt_sampler_candidate {
    pt_token id;
    float logit; /* after penalties, before temperature */
    float p;     /* final probability (after temperature), sums to 1 over the set */
} pt_sampler_candidate;

/* Run the chain up to (not including) the draw: *out points at the
 * surviving candidates in sampler-owned memory (valid until the next call
 * on s), ordered as above. Returns their count (>= 1). Greedy samplers
 * return the single greedy token with p = 1. */
int pt_sampler_candidates(pt_sampler *s, const float *logits, const pt_sampler_candidate **out);

#endif
