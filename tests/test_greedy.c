/*
 * test_greedy.c — SmolLM2-135M-Instruct greedy decoding equals
 * transformers' (generate, do_sample=False, float32 model with the GGUF's
 * dequantized weights; fixture tests/data/smollm2.greedy made by
 * tools/gen_logits_fixture.py).
 *
 * For each chat prompt: prefill in one batch, then up to 64 steps of
 * argmax over pt_llm_forward's last logits, one token per forward (the
 * decode path through the KV cache). Every generated token must equal the
 * reference; a reference that stopped at EOS (<|im_end|>) ends with it,
 * so the stop is checked too.
 *
 * Near-ties: the fixture stores the reference's top-1/top-2 gap at every
 * step. Our logits match the reference within 5e-4 (test_logits.c); the
 * prompts were chosen so that every gap is far larger (smallest 0.0128,
 * printed below), so a mismatch here is a real divergence. On a mismatch
 * both gaps are printed to tell the two apart.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "gguf.h"
#include "llm.h"
#include "logits_fixture.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void run(const pt_llm *m, pt_llm_state *s, const lf_greedy_run *r, int index) {
    const int V = pt_llm_get_hparams(m)->n_vocab;
    float *logits = malloc((size_t)V * sizeof(float));
    pt_error err = {0};
    pt_llm_state_reset(s);
    pt_status st = pt_llm_forward(m, s, (const pt_token *)r->prompt, r->n_prompt, logits, NULL, &err);
    CHECK(st == PT_OK, "prompt %d prefill: %s", index, err.msg);
    int matched = 0;
    float min_gap = 1e30f;
    double t0 = now_s();
    for (int i = 0; st == PT_OK && i < r->n_gen; i++) {
        float gap;
        pt_token tok = lf_argmax(logits, V, &gap);
        if (r->gap[i] < min_gap) min_gap = r->gap[i];
        if (tok != r->gen[i]) {
            CHECK(0, "prompt %d step %d: token %d (our top-1/top-2 gap %.5f), reference %d (gap %.5f)",
                  index, i, tok, gap, r->gen[i], r->gap[i]);
            break;
        }
        matched++;
        if (i + 1 < r->n_gen) {
            st = pt_llm_forward(m, s, &tok, 1, logits, NULL, &err);
            CHECK(st == PT_OK, "prompt %d step %d: %s", index, i, err.msg);
        }
    }
    double dt = now_s() - t0;
    CHECK(matched == r->n_gen, "prompt %d: %d of %d tokens match", index, matched, r->n_gen);
    CHECK(r->stopped_at_eos ? r->gen[r->n_gen - 1] == 2 : r->n_gen == 64,
          "prompt %d: fixture stop flag %d with %d tokens", index, r->stopped_at_eos, r->n_gen);
    printf("prompt %d (%d tokens): %d/%d generated tokens match%s, smallest reference gap %.4f, "
           "%.1f tokens/s\n",
           index, r->n_prompt, matched, r->n_gen, r->stopped_at_eos ? " (EOS)" : "", min_gap,
           matched > 1 ? (matched - 1) / dt : 0.0);
    free(logits);
}

int main(void) {
    lf_greedy f;
    lf_greedy_load(test_data("smollm2.greedy"), &f);
    CHECK(f.n_runs >= 4, "fixture has %d prompts", f.n_runs);

    pt_gguf *g = NULL;
    pt_llm *m = NULL;
    pt_llm_state *s = NULL;
    pt_error err = {0};
    pt_status st = pt_gguf_open(test_smollm2_path(), &g, &err);
    if (st == PT_OK) st = pt_llm_load(g, &m, &err);
    if (st == PT_OK) st = pt_llm_state_new(m, 128, 64, 1, &s, &err);
    CHECK(st == PT_OK, "smollm2: %s", err.msg);
    /* Sanitizer builds: the first prompt only (8 tokens to EOS). */
    const int n_runs = LF_SANITIZED ? 1 : f.n_runs;
    if (LF_SANITIZED) printf("sanitizer build: checking %d of %d prompts\n", n_runs, f.n_runs);
    if (st == PT_OK)
        for (int i = 0; i < n_runs; i++) run(m, s, &f.runs[i], i);

    pt_llm_state_free(s);
    pt_llm_free(m);
    pt_gguf_close(g);
    lf_greedy_free(&f);
    return check_done("greedy");
}
