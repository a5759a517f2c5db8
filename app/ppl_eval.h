/*
 * ppl_eval.h — one chunk of `petrel perplexity` through the model, as
 * llama-perplexity feeds it: the KV cache cleared, the chunk's first token
 * replaced by BOS when the tokenizer adds one, the n_ctx tokens decoded in
 * batches of n_batch at positions 0..n_ctx-1, and the logits of the
 * scored positions first = n_ctx/2 .. n_ctx-2 handed over one by one
 * (position pos predicts the chunk's token pos + 1).
 */
#ifndef PETREL_PPL_EVAL_H
#define PETREL_PPL_EVAL_H

#include <stdbool.h>

#include "petrel.h"

typedef struct ppl_eval {
    pt_context *ctx;
    int n_ctx, n_batch, n_vocab;
    pt_token bos;       /* put in each chunk's first place; -1: none */
    float *logits;      /* [min(n_batch, n_ctx - n_ctx/2)][n_vocab] scratch */
    pt_token *chunk;    /* [n_ctx]: the chunk as fed (BOS in front) */
} ppl_eval;

/* Called for each scored position in order; false stops the chunk (the
 * callback has printed why). */
typedef bool (*ppl_row_fn)(void *user, int pos, const float *logits);

/* n_ctx is the chunk length (the context's size); n_batch is clamped to
 * [1, n_ctx]. Returns 0 or an exit status (error printed): the model's
 * tokenizer must not append EOS (llama-perplexity refuses that too). */
int ppl_eval_init(ppl_eval *e, const pt_model *model, pt_context *ctx, int n_ctx, int n_batch);
void ppl_eval_free(ppl_eval *e);

/* Evaluate tokens[0..n_ctx) as one chunk. Returns false (error printed)
 * when a decode fails or fn stops it. */
bool ppl_eval_chunk(ppl_eval *e, const pt_token *tokens, ppl_row_fn fn, void *user);

/* Seconds since an arbitrary start (monotonic). */
double ppl_now(void);
/* llama-perplexity's "X seconds per pass - ETA [H hours ]M minutes" line,
 * on stderr, after the first pass of n_passes. */
void ppl_print_eta(double seconds, int n_passes);

#endif
