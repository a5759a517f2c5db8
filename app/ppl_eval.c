/* ppl_eval.c — one perplexity chunk through the model (ppl_eval.h). */
#include "ppl_eval.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"

int ppl_eval_init(ppl_eval *e, const pt_model *model, pt_context *ctx, int n_ctx, int n_batch) {
    memset(e, 0, sizeof *e);
    pt_model_info info;
    pt_model_get_info(model, &info);
    e->ctx = ctx;
    e->n_ctx = n_ctx;
    e->n_batch = n_batch < 1 ? 1 : n_batch > n_ctx ? n_ctx : n_batch;
    e->n_vocab = info.n_vocab;
    /* What the tokenizer adds around a text: the empty text tokenized with
     * add_special gives exactly those tokens (BOS first, EOS last). */
    pt_token specials[4];
    const int n = pt_tokenize(model, "", 0, true, false, specials, 4);
    const pt_token bos = pt_token_bos(model), eos = pt_token_eos(model);
    e->bos = n >= 1 && n <= 4 && bos >= 0 && specials[0] == bos ? bos : -1;
    if (n >= 1 && n <= 4 && eos >= 0 && specials[n - 1] == eos && !(n == 1 && e->bos == eos)) {
        app_error("perplexity: the model's tokenizer appends EOS to a text; llama-perplexity's method needs "
                  "one that does not");
        return 1;
    }
    const int first = n_ctx / 2;
    const int rows = n_ctx - first < e->n_batch ? n_ctx - first : e->n_batch;
    e->logits = malloc((size_t)rows * (size_t)e->n_vocab * sizeof *e->logits);
    e->chunk = malloc((size_t)n_ctx * sizeof *e->chunk);
    if (!e->logits || !e->chunk) {
        ppl_eval_free(e);
        app_error("perplexity: out of memory for %d x %d logits", rows, e->n_vocab);
        return 1;
    }
    return 0;
}

void ppl_eval_free(ppl_eval *e) {
    free(e->logits);
    free(e->chunk);
    e->logits = NULL;
    e->chunk = NULL;
}

bool ppl_eval_chunk(ppl_eval *e, const pt_token *tokens, ppl_row_fn fn, void *user) {
    const int n_ctx = e->n_ctx, first = n_ctx / 2, nv = e->n_vocab;
    memcpy(e->chunk, tokens, (size_t)n_ctx * sizeof *tokens);
    if (e->bos >= 0) e->chunk[0] = e->bos;
    pt_context_reset(e->ctx);
    /* Batches of n_batch tokens as llama-perplexity makes them, each also
     * cut at `first`: the positions before it need no logits (the forward
     * pass skips their output rows), and petrel's results do not depend
     * on where a batch is cut (llm_forward.c). */
    for (int a = 0; a < n_ctx;) {
        int b = (a / e->n_batch + 1) * e->n_batch;
        if (b > n_ctx) b = n_ctx;
        if (a < first && b > first) b = first;
        const bool scored = a >= first;
        pt_error err = {0};
        if (pt_decode(e->ctx, e->chunk + a, b - a, scored ? e->logits : NULL, &err) != PT_OK) {
            app_fail(&err);
            return false;
        }
        if (scored)
            for (int pos = a; pos < b && pos < n_ctx - 1; pos++)
                if (!fn(user, pos, e->logits + (size_t)(pos - a) * (size_t)nv)) return false;
        a = b;
    }
    return true;
}

double ppl_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void ppl_print_eta(double seconds, int n_passes) {
    fprintf(stderr, "perplexity: %.2f seconds per pass - ETA ", seconds);
    int total_seconds = (int)(seconds * n_passes);
    if (total_seconds >= 60 * 60) {
        fprintf(stderr, "%d hours ", total_seconds / (60 * 60));
        total_seconds = total_seconds % (60 * 60);
    }
    fprintf(stderr, "%.2f minutes\n", total_seconds / 60.0);
}
