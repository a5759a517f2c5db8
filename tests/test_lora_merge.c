/*
 * test_lora_merge.c — LoRA adapters merged into a private copy of their
 * base model (pt_lora_export, `petrel export-lora`), on the tiny seeded
 * llama and its committed adapters (tools/gen_lora_fixture.py).
 *
 * Checked:
 *   - logits of the merged model against the base with the same adapters
 *     applied at run time, both on the reference path (PETREL_CPU=ref:
 *     float products), at every position of the fixture's prompts: a; a
 *     at 0.5 stacked with b at 1.5 (b adapts the output matrix too); the
 *     GGUF form of a. The merged matrices are F16 (llama-export-lora's
 *     choice), so the bound is the F16 rounding of the merged weights:
 *     max |dlogit| within TOL_REL of the largest |logit|, top-1 the same
 *     everywhere; the adapters move logits by far more;
 *   - every merged weight against W + sum_i s_i B_i A_i computed here in
 *     double from the base and the adapters' factors: within F16's
 *     rounding (half an ulp: 2^-11 relative, 2^-25 absolute near 0) plus
 *     the float rounding of the sum (2^-21 of the terms' magnitudes);
 *   - the file: the base's metadata in order with general.file_type moved
 *     last as u32 1 (MOSTLY_F16); the base's tensors ordered by name, the
 *     adapted ones F16 (F32 where the base's is F32) with the base's shape,
 *     every other one the base's type and bytes;
 *   - errors, one line each, nothing left at OUT: an adapter for another
 *     architecture, a model that is an adapter, no adapters, a cancel.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "gguf.h"
#include "lora.h"
#include "quant.h"
#include "logits_fixture.h"
#include "petrel.h"

/* The F16 rounding of the merged weights (2^-11 relative at most per
 * weight) through three layers of the tiny model: measured 0.0033 (a)
 * and 0.0051 (a*0.5 + b*1.5) of the largest |logit|; bound TOL_REL. An
 * adapter left out or at a wrong scale moves logits by 0.5 to 15. */
#define TOL_REL 1e-2

static pt_model *load_model(const char *path) {
    pt_model_params mp = pt_model_default_params();
    mp.cpu = "ref";
    pt_model *m = NULL;
    pt_error err = {0};
    if (pt_model_load(path, &mp, &m, &err) != PT_OK) {
        fprintf(stderr, "cannot load %s: %s\n", path, err.msg);
        exit(1);
    }
    return m;
}

static float *logits_of(pt_model *m, pt_lora *const *ls, const float *scales, int n_ls, const lf_prompt *p, int V) {
    pt_context_params cp = pt_context_default_params();
    cp.n_ctx = 64;
    cp.n_threads = 1;
    pt_context *c = NULL;
    pt_error err = {0};
    if (pt_context_new(m, &cp, &c, &err) != PT_OK) exit(1);
    CHECK(pt_context_set_loras(c, ls, scales, n_ls, &err) == PT_OK, "set: %s", err.msg);
    float *out = malloc((size_t)p->n_tok * V * sizeof *out);
    CHECK(pt_decode(c, p->tokens, p->n_tok, out, &err) == PT_OK, "decode: %s", err.msg);
    pt_context_free(c);
    return out;
}

static bool str_eq(pt_gguf_str a, pt_gguf_str b) { return a.len == b.len && !memcmp(a.ptr, b.ptr, a.len); }

/* The file layout against llama-export-lora's rules. */
static void check_file(const char *base_path, const char *merged_path, int want_adapted) {
    pt_gguf *b = NULL, *m = NULL;
    pt_error err = {0};
    CHECK(pt_gguf_open(base_path, &b, &err) == PT_OK && pt_gguf_open(merged_path, &m, &err) == PT_OK, "open: %s",
          err.msg);
    if (!b || !m) return;
    /* metadata: the base's, general.file_type last */
    uint64_t k = 0;
    bool kv_ok = true;
    for (uint64_t i = 0; i < b->n_kv; i++) {
        if (pt_gguf_str_eq(b->kv[i].key, "general.file_type")) continue;
        kv_ok &= k < m->n_kv && str_eq(b->kv[i].key, m->kv[k].key) && b->kv[i].value.type == m->kv[k].value.type;
        k++;
    }
    uint32_t ft = 0;
    CHECK(kv_ok && k + 1 == m->n_kv && pt_gguf_str_eq(m->kv[k].key, "general.file_type") &&
              pt_gguf_get_u32(m, "general.file_type", &ft) && ft == 1,
          "metadata: %llu keys, want the base's %llu with general.file_type (%u) last", (unsigned long long)m->n_kv,
          (unsigned long long)b->n_kv, ft);
    CHECK(m->n_tensors == b->n_tensors, "%llu tensors, base %llu", (unsigned long long)m->n_tensors,
          (unsigned long long)b->n_tensors);
    int adapted = 0, sorted = 1;
    for (uint64_t i = 0; i < m->n_tensors; i++) {
        const pt_gguf_tensor *t = &m->tensors[i];
        if (i > 0) {
            const pt_gguf_str p = m->tensors[i - 1].name;
            const int c = memcmp(p.ptr, t->name.ptr, p.len < t->name.len ? p.len : t->name.len);
            sorted &= c < 0 || (c == 0 && p.len < t->name.len);
        }
        char name[96];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        const pt_gguf_tensor *o = pt_gguf_find_tensor(b, name);
        CHECK(o != NULL, "%s: not in the base", name);
        if (!o) continue;
        CHECK(o->n_dims == t->n_dims && !memcmp(o->ne, t->ne, sizeof o->ne), "%s: shape", name);
        if (t->type == o->type && t->nbytes == o->nbytes && !memcmp(t->data, o->data, t->nbytes)) continue;
        adapted++;
        CHECK(t->type == (o->type == 0 ? 0u : 1u), "%s: merged as type %u (base %u)", name, t->type, o->type);
    }
    CHECK(sorted, "tensors not ordered by name");
    CHECK(adapted == want_adapted, "%d tensors merged, want %d", adapted, want_adapted);
    pt_gguf_close(b);
    pt_gguf_close(m);
}

/* Every merged weight against the exact merge in double. */
static void check_weights(const char *what, const char *base_path, const char *merged_path, pt_lora *const *ls,
                          const float *scales, int n) {
    pt_gguf *b = NULL, *m = NULL;
    pt_error err = {0};
    if (pt_gguf_open(base_path, &b, &err) != PT_OK || pt_gguf_open(merged_path, &m, &err) != PT_OK) {
        CHECK(0, "%s: open: %s", what, err.msg);
        return;
    }
    double worst = 0; /* in units of the allowed rounding */
    int n_checked = 0;
    for (int i = 0; i < n; i++)
        for (int q = 0; q < ls[i]->n_pairs; q++) {
            const pt_lora_raw *r = &ls[i]->raw[q];
            bool first = true; /* a matrix adapted by several adapters: checked at its first */
            for (int i2 = 0; i2 < i; i2++)
                for (int q2 = 0; q2 < ls[i2]->n_pairs; q2++) first &= strcmp(ls[i2]->raw[q2].target, r->target) != 0;
            if (!first) continue;
            const pt_gguf_tensor *bt = pt_gguf_find_tensor(b, r->target), *mt = pt_gguf_find_tensor(m, r->target);
            if (!bt || !mt) continue;
            const int64_t rows = r->rows, cols = r->cols;
            float *wb = malloc((size_t)cols * sizeof *wb), *wm = malloc((size_t)cols * sizeof *wm);
            for (int64_t y = 0; y < rows; y++) {
                pt_dequant_row(bt->type, (const uint8_t *)bt->data + (size_t)y * pt_type_row_bytes(bt->type, cols), wb,
                               cols);
                pt_dequant_row(mt->type, (const uint8_t *)mt->data + (size_t)y * pt_type_row_bytes(mt->type, cols), wm,
                               cols);
                for (int64_t c = 0; c < cols; c++) {
                    double exact = wb[c], mag = fabs(wb[c]);
                    for (int i2 = 0; i2 < n; i2++)
                        for (int q2 = 0; q2 < ls[i2]->n_pairs; q2++) {
                            const pt_lora_raw *p = &ls[i2]->raw[q2];
                            if (strcmp(p->target, r->target) != 0) continue;
                            double d = 0;
                            for (int k = 0; k < p->rank; k++)
                                d += (double)p->b[(size_t)y * p->rank + k] * p->a[(size_t)k * cols + c];
                            exact += (double)p->scale * (scales ? scales[i2] : 1.0) * d;
                            mag += fabs((double)p->scale * (scales ? scales[i2] : 1.0) * d);
                        }
                    /* F16's half ulp, plus the float rounding of the merge
                     * itself (a few float ulps of the terms summed) */
                    const double allowed = fmax(fabs(exact) * ldexp(1.0, -11), ldexp(1.0, -25)) + ldexp(mag, -21);
                    const double e = fabs(wm[c] - exact) / allowed;
                    if (!(e <= worst)) worst = e;
                }
            }
            n_checked++;
            free(wb), free(wm);
        }
    printf("%s: %d merged matrices within %.4f of F16's rounding of the exact merge\n", what, n_checked, worst);
    CHECK(n_checked > 0 && worst <= 1.0, "%s: a merged weight is %.2f times F16's rounding from the exact merge", what,
          worst);
    pt_gguf_close(b);
    pt_gguf_close(m);
}

static void check_merge(const char *what, const char *fx, const char *const *paths, const float *scales, int n,
                        int want_adapted, const char *dir) {
    const char *base_path = test_data("tiny_llama.gguf");
    char out[4096], bp[4096];
    snprintf(bp, sizeof bp, "%s", base_path);
    snprintf(out, sizeof out, "%s/merged.gguf", dir);
    char full[PT_LORA_MAX][4096];
    const char *fp[PT_LORA_MAX];
    for (int i = 0; i < n; i++) {
        snprintf(full[i], sizeof full[i], "%s", test_data(paths[i]));
        fp[i] = full[i];
    }
    pt_convert_result r;
    pt_error err = {0};
    CHECK(pt_lora_export(bp, fp, scales, n, out, NULL, &r, &err) == PT_OK, "%s: export: %s", what, err.msg);
    check_file(bp, out, want_adapted);
    pt_model *base = load_model(bp), *merged = load_model(out);
    pt_lora *ls[PT_LORA_MAX];
    for (int i = 0; i < n; i++)
        CHECK(pt_lora_load(base, fp[i], &ls[i], &err) == PT_OK, "%s: load %s: %s", what, fp[i], err.msg);
    check_weights(what, bp, out, ls, scales, n); /* bound: B's Q/K rows in the base's order */
    char path[4096];
    snprintf(path, sizeof path, "%s", test_data(fx));
    lf_logits f;
    lf_logits_load(path, &f);
    const int V = f.n_vocab;
    double worst = 0, big = 0, moved = 0;
    int bad = 0;
    for (int i = 0; i < f.n_prompts; i++) {
        const lf_prompt *p = &f.prompts[i];
        float *run = logits_of(base, ls, scales, n, p, V), *mer = logits_of(merged, NULL, NULL, 0, p, V);
        float *none = logits_of(base, NULL, NULL, 0, p, V);
        for (size_t e = 0; e < (size_t)p->n_tok * V; e++) {
            worst = fmax(worst, fabs((double)run[e] - mer[e]));
            big = fmax(big, fabs(run[e]));
            moved = fmax(moved, fabs((double)run[e] - none[e]));
        }
        for (int t = 0; t < p->n_tok; t++)
            bad += lf_argmax(run + (size_t)t * V, V, NULL) != lf_argmax(mer + (size_t)t * V, V, NULL);
        free(run), free(mer), free(none);
    }
    printf("%s: merged vs at run time: max |dlogit| %.3g (%.3g of the largest |logit| %.1f; bound %.3g); the "
           "adapters move logits by %.3g\n",
           what, worst, worst / big, big, TOL_REL, moved);
    CHECK(worst <= TOL_REL * big, "%s: max |dlogit| %.3g exceeds %.3g", what, worst, TOL_REL * big);
    CHECK(bad == 0, "%s: top-1 differs at %d positions", what, bad);
    CHECK(moved > 20 * worst, "%s: the adapters move logits by %.3g only", what, moved);
    lf_logits_free(&f);
    for (int i = 0; i < n; i++) pt_lora_free(ls[i]);
    pt_model_free(base);
    pt_model_free(merged);
    unlink(out);
}

static void cancel_progress(void *user, const pt_convert_progress *p) {
    if (p->tensor == 3) atomic_store((atomic_bool *)user, true);
}

static void check_error(const char *model, const char *adapter, const char *out, pt_status want, const char *needle,
                        const char *what, const pt_convert_params *cp) {
    pt_error err = {0};
    const char *ad[1] = {adapter};
    const pt_status st = pt_lora_export(model, ad, NULL, adapter ? 1 : 0, out, cp, NULL, &err);
    printf("%s: %s\n", what, err.msg);
    CHECK(st == want, "%s: status %s, want %s", what, pt_status_name(st), pt_status_name(want));
    CHECK(strstr(err.msg, needle) && !strchr(err.msg, '\n'), "%s: message: %s", what, err.msg);
    CHECK(access(out, F_OK) != 0, "%s: something was left at OUT", what);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", out);
    CHECK(access(tmp, F_OK) != 0, "%s: OUT.tmp left", what);
}

int main(void) {
    char dir[] = "/tmp/petrel_merge_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    /* adapter a: seven projections of three layers = 21 matrices; b: q, v,
     * down of three layers and the output = 10 (a + b: 22 distinct) */
    const char *a[1] = {"lora/tiny_llama_a"}, *ag[1] = {"lora/tiny_llama_a.gguf"};
    const char *ab[2] = {"lora/tiny_llama_a", "lora/tiny_llama_b"};
    const float s_ab[2] = {0.5f, 1.5f};
    check_merge("a", "lora/tiny_llama_a.logits", a, NULL, 1, 21, dir);
    check_merge("a (GGUF form)", "lora/tiny_llama_a.logits", ag, NULL, 1, 21, dir);
    check_merge("a*0.5 + b*1.5", "lora/tiny_llama_ab.logits", ab, s_ab, 2, 22, dir);

    char out[4096], bp[4096], qw[4096], ad[4096];
    snprintf(out, sizeof out, "%s/bad.gguf", dir);
    snprintf(bp, sizeof bp, "%s", test_data("tiny_llama.gguf"));
    snprintf(qw, sizeof qw, "%s", test_data("tiny_qwen2.gguf"));
    snprintf(ad, sizeof ad, "%s", test_data("lora/tiny_llama_a.gguf"));
    check_error(qw, ad, out, PT_ERR_ARG, "'llama' model", "another architecture", NULL);
    check_error(ad, ad, out, PT_ERR_ARG, "is an adapter", "an adapter as the model", NULL);
    check_error(bp, NULL, out, PT_ERR_ARG, "between 1 and", "no adapter", NULL);
    atomic_bool cancel = false;
    pt_convert_params cp = pt_convert_default_params();
    cp.cancel = &cancel;
    cp.progress = cancel_progress;
    cp.progress_user = &cancel;
    check_error(bp, ad, out, PT_ERR_CANCELLED, "cancelled", "cancel", &cp);
    rmdir(dir);
    return check_done("test_lora_merge");
}
