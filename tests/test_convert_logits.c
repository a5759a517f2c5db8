/*
 * test_convert_logits.c — `petrel convert`'s output runs: each tiny HF
 * checkpoint of tests/data/hf-tiny (llama, llama3 (Llama 3.1's rope
 * scaling, converted to rope_freqs), qwen2, qwen3; made by
 * tools/gen_hf_tiny.py) is converted by pt_convert_file to F32, loaded by
 * pt_llm_load on the reference matrix path, and its logits at every
 * position of the fixture's prompts are compared with transformers' on the
 * original checkpoint (hf-tiny/<family>/logits): top-1 at every position
 * and max |dlogit| within test_logits.c's reference-path bound (2e-5 of
 * the fixture's largest |logit|: both sides compute in float32 from the
 * same weights, only the summation order differs). A wrong Q/K permutation,
 * a lost bias or norm moves logits by 0.1 and more.
 *
 * The F16 and Q8_0 conversions are loaded too and must agree on the top-1
 * token wherever the reference's top-1/top-2 gap is wide (> 0.5): they
 * round the weights, so only the clear choices are theirs to keep.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "cpu_features.h"
#include "gguf.h"
#include "llm.h"
#include "logits_fixture.h"
#include "petrel.h"

#define TOL_REL 2e-5
#define WIDE_GAP 0.5f

static float *forward_all(const pt_llm *m, const lf_prompt *p) {
    const size_t V = (size_t)pt_llm_get_hparams(m)->n_vocab;
    pt_llm_state *s = NULL;
    pt_error err = {0};
    pt_status st = pt_llm_state_new(m, 64, 64, 2, NULL, &s, &err);
    CHECK(st == PT_OK, "state: %s", err.msg);
    if (st) return NULL;
    float *out = malloc((size_t)p->n_tok * V * sizeof(float));
    float *last = malloc(V * sizeof(float));
    st = pt_llm_forward(m, s, (const pt_token *)p->tokens, p->n_tok, last, out, &err);
    CHECK(st == PT_OK, "forward: %s", err.msg);
    free(last);
    pt_llm_state_free(s);
    if (st) {
        free(out);
        return NULL;
    }
    return out;
}

/* Convert folder to a temporary file of outtype and load it. */
static pt_llm *convert_load(const char *family, const char *outtype, char *path, size_t cap, pt_gguf **g) {
    char name[64], dir[4096];
    snprintf(name, sizeof name, "hf-tiny/%s", family);
    snprintf(dir, sizeof dir, "%s", test_data(name));
    const char *tmp = getenv("TMPDIR");
    snprintf(path, cap, "%s/petrel-convert-%d-%s-%s.gguf", tmp && *tmp ? tmp : "/tmp", (int)getpid(), family,
             outtype);
    pt_convert_params p = pt_convert_default_params();
    p.outtype = outtype;
    pt_convert_result r;
    pt_error err = {0};
    pt_status st = pt_convert_file(dir, path, &p, &r, &err);
    CHECK(st == PT_OK, "%s -> %s: %s", family, outtype, err.msg);
    if (st) return NULL;
    CHECK(!strncmp(family, r.arch, strlen(r.arch)), "%s: arch %s", family, r.arch); /* llama3 is a llama */
    pt_cpu cpu;
    pt_cpu_detect_with(&cpu, "ref");
    pt_llm *m = NULL;
    st = pt_gguf_open(path, g, &err);
    if (st == PT_OK) st = pt_llm_load_cpu(*g, &cpu, &m, &err);
    CHECK(st == PT_OK, "%s (%s): load: %s", family, outtype, err.msg);
    return m;
}

static void test_family(const char *family) {
    char fix[64];
    snprintf(fix, sizeof fix, "hf-tiny/%s/logits", family);
    lf_logits f;
    lf_logits_load(test_data(fix), &f);
    double scale = 1.0;
    for (int i = 0; i < f.n_prompts; i++)
        for (size_t j = 0; j < (size_t)f.prompts[i].n_full * f.n_vocab; j++)
            scale = fmax(scale, fabs(f.prompts[i].full[j]));

    static const char *const types[] = {"f32", "f16", "q8_0"};
    for (int ti = 0; ti < 3; ti++) {
        char path[4096];
        pt_gguf *g = NULL;
        pt_llm *m = convert_load(family, types[ti], path, sizeof path, &g);
        if (m) {
            const size_t V = (size_t)pt_llm_get_hparams(m)->n_vocab;
            CHECK((int)V == f.n_vocab, "%s: vocab %zu, fixture %d", family, V, f.n_vocab);
            double worst = 0;
            int top1_bad = 0, wide_bad = 0;
            for (int i = 0; (int)V == f.n_vocab && i < f.n_prompts; i++) {
                const lf_prompt *p = &f.prompts[i];
                float *got = forward_all(m, p);
                if (!got) continue;
                for (int k = 0; k < p->n_full; k++) {
                    const int pos = p->full_pos[k];
                    const float *row = got + (size_t)pos * V, *want = p->full + (size_t)k * V;
                    for (size_t v = 0; v < V; v++) worst = fmax(worst, fabs((double)row[v] - want[v]));
                    float gap;
                    const int top = lf_argmax(row, (int)V, &gap);
                    top1_bad += top != p->top1[pos];
                    wide_bad += top != p->top1[pos] && p->gap[pos] > WIDE_GAP;
                }
                free(got);
            }
            printf("%s %s: max |dlogit| %.3g (max |logit| %.1f), top-1 differs at %d positions (%d wide)\n",
                   family, types[ti], worst, scale, top1_bad, wide_bad);
            if (ti == 0) {
                CHECK(worst <= TOL_REL * scale, "%s f32: max |dlogit| %g over %g", family, worst, TOL_REL * scale);
                CHECK(top1_bad == 0, "%s f32: top-1 differs at %d positions", family, top1_bad);
            } else {
                CHECK(wide_bad == 0, "%s %s: top-1 differs at %d clear positions", family, types[ti], wide_bad);
            }
        }
        pt_llm_free(m);
        pt_gguf_close(g);
        unlink(path);
    }
    lf_logits_free(&f);
}

int main(void) {
    test_family("llama");
    test_family("llama3");
    test_family("qwen2");
    test_family("qwen3");
    test_family("gemma3");
    return check_done("convert_logits");
}
