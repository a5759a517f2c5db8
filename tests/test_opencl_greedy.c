/*
 * test_opencl_greedy.c — the decoder on OpenCL (llm_graph.c) against the
 * CPU float path (llm_forward.c on the "ref" kernels: float32 products of
 * the dequantized weights, the same arithmetic in another order).
 *
 *   tiny models (tests/data: llama, llama3, qwen2 with biases, qwen3 with
 *   Q/K norms, gemma3 with sliding windows, post-norms and GELU): the
 *   logits of every token of a 40-token prompt and of single-token steps
 *   after it, all layers on
 *   OpenCL and a mixed placement (every third layer and the output on the
 *   CPU device): max |diff| <= 1e-4 of the largest logit magnitude.
 *
 *   SmolLM2-135M Q4_1 ($PETREL_SMOLLM2): greedy decoding (8 tokens) of the
 *   first two fixture prompts (sanitized: 4 tokens after the first 12 of
 *   the first prompt, and no SmolLM2 mixed placement) (tests/data/smollm2.greedy): OpenCL's tokens
 *   equal the CPU float path's, and at every step the KL divergence of the OpenCL
 *   distribution from the CPU's is at most KL_MAX = 1e-6 (rounding gives
 *   about 1e-11; a real fault, e.g. one wrong layer, gives > 1e-2). A
 *   mixed placement's prompt logits meet the same bound.
 */
#include "check.h"
#include "logits_fixture.h"
#include "opencl_test.h"

#include "gguf.h"
#include "llm.h"
#include "llm_graph.h"
#include "llm_internal.h"
#include "ocl.h"

#include <math.h>

#define KL_MAX 1e-6
#define TINY_TOL 1e-4

static double kl_div(const float *p_logits, const float *q_logits, int n) {
    double mp = -INFINITY, mq = -INFINITY, sp = 0, sq = 0, kl = 0;
    for (int i = 0; i < n; i++) {
        if (p_logits[i] > mp) mp = p_logits[i];
        if (q_logits[i] > mq) mq = q_logits[i];
    }
    for (int i = 0; i < n; i++) {
        sp += exp(p_logits[i] - mp);
        sq += exp(q_logits[i] - mq);
    }
    for (int i = 0; i < n; i++) {
        const double lp = p_logits[i] - mp - log(sp), lq = q_logits[i] - mq - log(sq);
        kl += exp(lp) * (lp - lq);
    }
    return kl;
}

static double max_rel(const float *a, const float *b, size_t n) {
    double worst = 0, mag = 1;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(b[i])) return INFINITY;
        if (fabs(a[i] - b[i]) > worst) worst = fabs(a[i] - b[i]);
        if (fabs(a[i]) > mag) mag = fabs(a[i]);
    }
    return worst / mag;
}

/* A model loaded for the "ref" CPU kernels, placed on OpenCL when
 * `placement` is non-NULL (1: all layers and the output; 2: mixed; 3: as
 * 1 with the kernels a GPU runs, the fused decode products among them,
 * even on a CPU device). */
static pt_llm *load(pt_gguf *g, int placement) {
    pt_cpu ref;
    pt_error err = {0};
    pt_llm *m = NULL;
    CHECK(pt_llm_cpu_from_name("ref", &ref, &err) == PT_OK && pt_llm_load_cpu(g, &ref, &m, &err) == PT_OK,
          "load: %s", err.msg);
    if (!m || !placement) return m;
    pt_device *dev = ocl_test_open("opencl_greedy");
    if (placement == 3) pt_ocl_use_group_kernels(dev->impl, true);
    const int L = m->hp.n_layer;
    bool on[256];
    int want = 0; /* the layers asked for whose matrix types all have kernels */
    for (int il = 0; il < L && il < 256; il++) {
        on[il] = placement != 2 || il % 3 != 0;
        const pt_llm_layer *Ly = &m->layers[il];
        const pt_weight *ws[] = {&Ly->wq, &Ly->wk, &Ly->wv, &Ly->wo, &Ly->w_gate, &Ly->w_up, &Ly->w_down};
        bool fits = true;
        for (int k = 0; k < 7; k++) fits = fits && dev->ops->has_type(ws[k]->type);
        want += on[il] && fits;
    }
    CHECK(pt_llm_place(m, dev, on, placement != 2, &err) == PT_OK, "place: %s", err.msg);
    CHECK(m->graph && pt_llm_graph_device_layers(m->graph) == want, "%d of %d layers on the device",
          m->graph ? pt_llm_graph_device_layers(m->graph) : -1, want);
    return m;
}

/* Logits of a prompt (one call: 40 tokens, more than the graph's 32
 * output rows at once) and of single tokens after it. */
static float *run_tiny(const pt_llm *m, const pt_token *toks, int n_prompt, int n_steps) {
    const int V = m->hp.n_vocab;
    float *out = malloc((size_t)(n_prompt + n_steps) * V * sizeof(float));
    pt_llm_state *s = NULL;
    pt_error err = {0};
    CHECK(pt_llm_state_new(m, 64, 48, 2, NULL, &s, &err) == PT_OK, "state: %s", err.msg);
    if (!s) return out;
    CHECK(pt_llm_forward(m, s, toks, n_prompt, NULL, out, &err) == PT_OK, "prompt: %s", err.msg);
    for (int i = 0; i < n_steps; i++)
        CHECK(pt_llm_forward(m, s, toks + n_prompt + i, 1, out + (size_t)(n_prompt + i) * V, NULL, &err) == PT_OK,
              "step: %s", err.msg);
    CHECK(pt_llm_state_n_past(s) == n_prompt + n_steps, "positions");
    pt_llm_state_free(s);
    return out;
}

static void tiny(const char *file) {
    pt_gguf *g = NULL;
    pt_error err = {0};
    CHECK(pt_gguf_open(test_data(file), &g, &err) == PT_OK, "%s: %s", file, err.msg);
    if (!g) return;
    pt_llm *ref = load(g, 0), *all = load(g, 1), *mixed = load(g, 2);
    if (ref && all && mixed) {
        const int V = ref->hp.n_vocab, n_prompt = 40, n_steps = 6;
        pt_token toks[46];
        for (int i = 0; i < n_prompt + n_steps; i++) toks[i] = (pt_token)((i * 7919 + 13) % V);
        float *a = run_tiny(ref, toks, n_prompt, n_steps), *b = run_tiny(all, toks, n_prompt, n_steps),
              *c = run_tiny(mixed, toks, n_prompt, n_steps);
        const size_t n = (size_t)(n_prompt + n_steps) * V;
        const double eb = max_rel(a, b, n), ec = max_rel(a, c, n);
        CHECK(eb <= TINY_TOL, "%s on OpenCL: logits differ by %.3g of their magnitude", file, eb);
        CHECK(ec <= TINY_TOL, "%s mixed: logits differ by %.3g of their magnitude", file, ec);
        printf("%-18s %-7s swa=%d: %d/%d layers on OpenCL %.2g, mixed (%d) %.2g\n", file, ref->hp.arch_name,
               ref->hp.n_swa, pt_llm_graph_device_layers(all->graph), ref->hp.n_layer, eb,
               pt_llm_graph_device_layers(mixed->graph), ec);
        free(a), free(b), free(c);
    }
    pt_llm_free(ref), pt_llm_free(all), pt_llm_free(mixed);
    pt_gguf_close(g);
}

/* Greedy decoding of one fixture run: n_gen tokens after the prompt;
 * logits of every step into steps[n_gen][V]. */
static void greedy(const pt_llm *m, const lf_greedy_run *fr, int n_gen, int32_t *out, float *steps) {
    const int V = m->hp.n_vocab;
    lf_greedy_run cut = *fr, *r = &cut;
    if (LF_SANITIZED && cut.n_prompt > 12) cut.n_prompt = 12; /* the CPU reference's cost */
    pt_llm_state *s = NULL;
    pt_error err = {0};
    CHECK(pt_llm_state_new(m, r->n_prompt + n_gen, 64, 2, NULL, &s, &err) == PT_OK, "state: %s", err.msg);
    if (!s) return;
    CHECK(pt_llm_forward(m, s, (const pt_token *)r->prompt, r->n_prompt, steps, NULL, &err) == PT_OK, "%s",
          err.msg);
    for (int i = 0; i < n_gen; i++) {
        out[i] = lf_argmax(steps + (size_t)i * V, V, NULL);
        if (i + 1 < n_gen)
            CHECK(pt_llm_forward(m, s, (const pt_token *)&out[i], 1, steps + (size_t)(i + 1) * V, NULL, &err) ==
                      PT_OK, "%s", err.msg);
    }
    pt_llm_state_free(s);
}

static void smollm2(void) {
    pt_gguf *g = NULL;
    pt_error err = {0};
    CHECK(pt_gguf_open(test_smollm2_path(), &g, &err) == PT_OK, "SmolLM2: %s", err.msg);
    if (!g) return;
    lf_greedy fx;
    lf_greedy_load(test_data("smollm2.greedy"), &fx);
    pt_llm *ref = load(g, 0), *ocl = load(g, 1), *mixed = load(g, 2);
    /* sanitized builds (30x slower reference kernels): one prompt, 4 tokens */
    const int max_runs = LF_SANITIZED ? 1 : 2, max_gen = LF_SANITIZED ? 4 : 8;
    const int V = ref->hp.n_vocab, n_runs = fx.n_runs < max_runs ? fx.n_runs : max_runs;
    double worst_kl = 0;
    for (int i = 0; i < n_runs && ocl; i++) {
        const lf_greedy_run *r = &fx.runs[i];
        const int n_gen = r->n_gen < max_gen ? r->n_gen : max_gen;
        int32_t *ta = calloc((size_t)n_gen, 4), *tb = calloc((size_t)n_gen, 4);
        float *la = calloc((size_t)n_gen * V, 4), *lb = calloc((size_t)n_gen * V, 4);
        greedy(ref, r, n_gen, ta, la);
        greedy(ocl, r, n_gen, tb, lb);
        int same = 0;
        while (same < n_gen && ta[same] == tb[same]) same++;
        CHECK(same == n_gen, "prompt %d: OpenCL's greedy tokens leave the CPU's at step %d of %d", i, same, n_gen);
        /* the steps both fed the same tokens to */
        for (int t = 0; t < n_gen && t <= same; t++) {
            const double kl = kl_div(la + (size_t)t * V, lb + (size_t)t * V, V);
            if (kl > worst_kl || !(kl == kl)) worst_kl = kl;
        }
        printf("prompt %d: %d tokens after %d, same greedy tokens: %s\n", i, n_gen,
               LF_SANITIZED && r->n_prompt > 12 ? 12 : r->n_prompt,
               same == n_gen ? "yes" : "no");
        free(ta), free(tb), free(la), free(lb);
    }
    CHECK(worst_kl <= KL_MAX, "KL(CPU || OpenCL) %.3g above %.0e", worst_kl, KL_MAX);
    printf("SmolLM2 greedy: worst KL(CPU || OpenCL) per step %.3g (bound %.0e)\n", worst_kl, KL_MAX);

    /* the GPU's kernels (on PoCL too): tiled prompt products, fused decode
     * products with the Q/K/V biases and residuals; the first prompt */
    pt_llm *gpu = LF_SANITIZED ? NULL : load(g, 3);
    if (gpu && ocl) {
        const lf_greedy_run *r = &fx.runs[0];
        const int n_gen = r->n_gen < 4 ? r->n_gen : 4;
        int32_t *ta = calloc((size_t)n_gen, 4), *tb = calloc((size_t)n_gen, 4);
        float *la = calloc((size_t)n_gen * V, 4), *lb = calloc((size_t)n_gen * V, 4);
        greedy(ref, r, n_gen, ta, la);
        greedy(gpu, r, n_gen, tb, lb);
        double kl = 0;
        for (int t = 0; t < n_gen; t++) {
            CHECK(ta[t] == tb[t], "GPU kernels: greedy token %d is %d, the CPU's %d", t, tb[t], ta[t]);
            const double k = kl_div(la + (size_t)t * V, lb + (size_t)t * V, V);
            if (k > kl || !(k == k)) kl = k;
        }
        CHECK(kl <= KL_MAX, "GPU kernels: KL(CPU || OpenCL) %.3g above %.0e", kl, KL_MAX);
        printf("SmolLM2 with the GPU kernels: %d tokens, worst KL %.3g\n", n_gen, kl);
        free(ta), free(tb), free(la), free(lb);
    }
    pt_llm_free(gpu);

    /* mixed placement: the prompt's logits (not sanitized: its CPU layers
     * run the reference kernels on one thread; the tiny models cover it) */
    if (mixed && !LF_SANITIZED) {
        const lf_greedy_run *r = &fx.runs[0];
        float *a = malloc((size_t)V * 4), *b = malloc((size_t)V * 4);
        pt_llm_state *sa = NULL, *sb = NULL;
        CHECK(pt_llm_state_new(ref, r->n_prompt, 32, 2, NULL, &sa, &err) == PT_OK &&
              pt_llm_state_new(mixed, r->n_prompt, 32, 2, NULL, &sb, &err) == PT_OK, "%s", err.msg);
        if (sa && sb) {
            CHECK(pt_llm_forward(ref, sa, (const pt_token *)r->prompt, r->n_prompt, a, NULL, &err) == PT_OK &&
                  pt_llm_forward(mixed, sb, (const pt_token *)r->prompt, r->n_prompt, b, NULL, &err) == PT_OK,
                  "%s", err.msg);
            const double kl = kl_div(a, b, V);
            CHECK(kl <= KL_MAX, "mixed placement: KL %.3g", kl);
            printf("SmolLM2 mixed placement (%d of %d layers on OpenCL, output on the CPU): KL %.3g\n",
                   pt_llm_graph_device_layers(mixed->graph), mixed->hp.n_layer, kl);
        }
        pt_llm_state_free(sa), pt_llm_state_free(sb);
        free(a), free(b);
    }
    lf_greedy_free(&fx);
    pt_llm_free(ref), pt_llm_free(ocl), pt_llm_free(mixed);
    pt_gguf_close(g);
}

int main(void) {
    const char *tinies[] = {"tiny_llama.gguf", "tiny_llama3.gguf", "tiny_qwen2.gguf", "tiny_qwen3.gguf",
                            "tiny_gemma3.gguf"};
    for (size_t i = 0; i < sizeof tinies / sizeof *tinies; i++) tiny(tinies[i]);
    smollm2();
    return check_done("opencl_greedy");
}
