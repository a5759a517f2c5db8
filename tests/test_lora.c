/*
 * test_lora.c — LoRA adapters (pt_lora_* and pt_context_set_loras) on the
 * tiny seeded llama model against transformers + peft.
 *
 * References (committed, made by tools/gen_lora_fixture.py): two seeded
 * random PEFT adapters of tests/data/tiny_llama.gguf's model,
 *   a: r 4, alpha 8 on q/k/v/o/gate/up/down of every layer;
 *   b: r 8, alpha 4, rsLoRA, on q/v/down and lm_head (the output);
 *   a_f16: a with float16 factors;
 * the float32 transformers model with their weights merged in by peft
 * (merge_and_unload), logits at every position of three prompts: a alone,
 * b alone, a at 0.5 stacked with b at 1.5, a_f16; adapter a converted to GGUF by
 * llama.cpp's convert_lora_to_gguf.py (its Q/K lora_b rows permuted as
 * the base's); adapters for other bases.
 *
 * Checked:
 *   - reference path (PETREL_CPU=ref: every product in float on the float
 *     input): top-1 at every position and max |dlogit| within TOL_REL of
 *     the fixture's largest |logit|, for a, b and a+b; the adapters move
 *     the logits far more than that (so the check has teeth);
 *   - fast path (this CPU's int8 kernels for the base and, by default, the
 *     adapters' int8 path beside them): max |dlogit| within
 *     test_logits.c's fast-path bound for the tiny models;
 *   - a whole prompt, token by token, in pieces, with 1 and 3 threads:
 *     bitwise the same logits (no result depends on the split);
 *   - the GGUF form of a gives the logits of its PEFT form (bitwise);
 *   - switching: on, off (bitwise the base's logits again), to another,
 *     with no reload; the memory report: lora_bytes is the active
 *     adapters' factor bytes (equal to the F32 data of their safetensors),
 *     and the base's mapping, residency and repacked copies do not grow;
 *   - errors, each one line: an adapter for another base (other shapes,
 *     a layer the model lacks, another architecture), a corrupt
 *     safetensors, a folder without adapter_config.json, a GGUF that is
 *     not an adapter, an adapter loaded for another model, too many.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "logits_fixture.h"
#include "petrel.h"

/* Reference path: float32 on both sides from identical weights, only the
 * summation order differs. test_logits.c measured 2.4e-6 of the largest
 * |logit| on these models without adapters and bounds at 2e-5; the
 * adapters add two short dot products per matrix (rank 4 / 8) and the
 * reference merges them into W first (another rounding of each weight):
 * measured 2.6e-6 (a, b), 4.1e-6 (a+b), 5.0e-6 (a_f16) here; bound 2e-5 (4x). A wrong
 * scale, a missing Q/K permutation or a missed matrix moves logits by
 * 0.5 to 15 (the adapters move them by up to 16). */
#define TOL_REL 2e-5
/* Fast path: test_logits.c's TOL_FAST_TINY_REL (int8 activations of the
 * base products, and the adapters' own int8 path (matmul.h); measured
 * 0.063 (a) and 0.069 (a+b) here). */
#define TOL_FAST_REL 0.1

static pt_model *load_model(const char *name, const char *cpu) {
    pt_model_params mp = pt_model_default_params();
    mp.cpu = cpu;
    pt_model *m = NULL;
    pt_error err = {0};
    if (pt_model_load(test_data(name), &mp, &m, &err) != PT_OK) {
        fprintf(stderr, "cannot load %s: %s\n", name, err.msg);
        exit(1);
    }
    return m;
}

static pt_context *new_ctx(pt_model *m, int n_threads, int n_batch) {
    pt_context_params cp = pt_context_default_params();
    cp.n_ctx = 64;
    cp.n_threads = n_threads;
    cp.n_batch = n_batch;
    pt_context *c = NULL;
    pt_error err = {0};
    if (pt_context_new(m, &cp, &c, &err) != PT_OK) {
        fprintf(stderr, "context: %s\n", err.msg);
        exit(1);
    }
    return c;
}

static pt_lora *load_lora(pt_model *m, const char *name) {
    pt_lora *l = NULL;
    pt_error err = {0};
    pt_status st = pt_lora_load(m, test_data(name), &l, &err);
    CHECK(st == PT_OK, "load %s: %s", name, err.msg);
    if (st != PT_OK) exit(1);
    return l;
}

/* Logits at every position of toks ([n][V]) with the context's adapters,
 * fed as one call (pieces 0) or in pieces of `pieces` tokens. */
static float *run(pt_context *c, const int32_t *toks, int n, int V, int pieces) {
    float *out = malloc((size_t)n * V * sizeof *out);
    pt_error err = {0};
    pt_context_reset(c);
    const int step = pieces > 0 ? pieces : n;
    for (int i = 0; i < n; i += step) {
        const int k = n - i < step ? n - i : step;
        pt_status st = pt_decode(c, toks + i, k, out + (size_t)i * V, &err);
        CHECK(st == PT_OK, "decode: %s", err.msg);
    }
    return out;
}

static double max_abs(const float *x, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++)
        if (fabs(x[i]) > m) m = fabs(x[i]);
    return m;
}

static double max_diff(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)a[i] - b[i]);
        if (!(d <= m)) m = d; /* NaN sticks */
    }
    return m;
}

static int set(pt_context *c, pt_lora *const *ls, const float *scales, int n) {
    pt_error err = {0};
    pt_status st = pt_context_set_loras(c, ls, scales, n, &err);
    CHECK(st == PT_OK, "set_loras: %s", err.msg);
    return st == PT_OK;
}

/* One case: the reference logits of fixture `fx` against petrel's with
 * adapters ls / scales on model m (tol relative to the largest |logit|),
 * every prompt fed three ways with 1 and 3 threads, all bitwise equal. */
static void check_case(pt_model *m, const char *fx, pt_lora *const *ls, const float *scales, int n_ls, double tol_rel,
                       bool top1, const char *what) {
    char path[256];
    snprintf(path, sizeof path, "%s", test_data(fx));
    lf_logits f;
    lf_logits_load(path, &f);
    const int V = f.n_vocab;
    double big = 0;
    for (int i = 0; i < f.n_prompts; i++)
        big = fmax(big, max_abs(f.prompts[i].full, (size_t)f.prompts[i].n_full * V));
    pt_context *c1 = new_ctx(m, 1, 64), *c3 = new_ctx(m, 3, 5);
    set(c1, ls, scales, n_ls);
    set(c3, ls, scales, n_ls);
    double worst = 0;
    for (int i = 0; i < f.n_prompts; i++) {
        const lf_prompt *p = &f.prompts[i];
        float *whole = run(c1, p->tokens, p->n_tok, V, 0);
        float *tok = run(c1, p->tokens, p->n_tok, V, 1);
        float *pieces = run(c3, p->tokens, p->n_tok, V, 0); /* n_batch 5: chunks */
        float *tok3 = run(c3, p->tokens, p->n_tok, V, 1);
        const size_t nv = (size_t)p->n_tok * V;
        CHECK(memcmp(whole, tok, nv * sizeof *whole) == 0, "%s prompt %d: token by token differs", what, i);
        CHECK(memcmp(whole, pieces, nv * sizeof *whole) == 0, "%s prompt %d: 3 threads, chunks of 5 differ", what, i);
        CHECK(memcmp(whole, tok3, nv * sizeof *whole) == 0, "%s prompt %d: 3 threads token by token differs", what, i);
        const double d = max_diff(whole, p->full, nv);
        if (d > worst) worst = d;
        int bad = 0;
        for (int t = 0; top1 && t < p->n_tok; t++) bad += lf_argmax(whole + (size_t)t * V, V, NULL) != p->top1[t];
        CHECK(bad == 0, "%s prompt %d: top-1 differs at %d of %d positions", what, i, bad, p->n_tok);
        free(whole), free(tok), free(pieces), free(tok3);
    }
    printf("%s: max |dlogit| %.3g (%.3g of the largest |logit| %.1f; bound %.3g)\n", what, worst, worst / big, big,
           tol_rel);
    CHECK(worst <= tol_rel * big, "%s: max |dlogit| %.3g exceeds %.3g", what, worst, tol_rel * big);
    pt_context_free(c1);
    pt_context_free(c3);
    lf_logits_free(&f);
}

/* Bytes of the tensor data of a safetensors file (after its header). */
static uint64_t st_data_bytes(const char *path) {
    size_t len;
    char *b = test_read_file(path, &len);
    uint64_t n;
    memcpy(&n, b, 8);
    free(b);
    return len - 8 - n;
}

static void check_error(pt_model *m, const char *path, pt_status want, const char *needle, const char *what) {
    pt_lora *l = NULL;
    pt_error err = {0};
    pt_status st = pt_lora_load(m, path, &l, &err);
    printf("%s: %s\n", what, err.msg);
    CHECK(st == want, "%s: status %s, want %s (%s)", what, pt_status_name(st), pt_status_name(want), err.msg);
    CHECK(l == NULL, "%s: an adapter came back", what);
    CHECK(strstr(err.msg, needle) != NULL, "%s: message lacks '%s': %s", what, needle, err.msg);
    CHECK(strchr(err.msg, '\n') == NULL && err.msg[0], "%s: not one line", what);
    pt_lora_free(l);
}

static void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    fclose(f);
}

static void errors(pt_model *m) {
    check_error(m, test_data("lora/tiny_llama_rs_a"), PT_ERR_ARG, "another base model", "other shapes");
    check_error(m, test_data("lora/tiny_llama_a_layer9"), PT_ERR_ARG, "has 3 layers", "layer 9");
    check_error(m, test_data("tiny_llama.gguf"), PT_ERR_FORMAT, "not a LoRA adapter", "a model, not an adapter");
    check_error(m, test_data("lora/nonexistent"), PT_ERR_IO, "cannot open", "missing path");
    pt_model *qwen = load_model("tiny_qwen2.gguf", "ref");
    check_error(qwen, test_data("lora/tiny_llama_a.gguf"), PT_ERR_ARG, "'llama' model", "GGUF for another arch");
    check_error(qwen, test_data("lora/tiny_llama_a"), PT_ERR_ARG, "another base model", "PEFT for another model");
    pt_model_free(qwen);

    /* broken copies of adapter a in a scratch folder */
    char dir[] = "/tmp/petrel_lora_XXXXXX", p[512];
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    size_t cfg_len, st_len;
    char *cfg = test_read_file(test_data("lora/tiny_llama_a/adapter_config.json"), &cfg_len);
    char *st = test_read_file(test_data("lora/tiny_llama_a/adapter_model.safetensors"), &st_len);
    snprintf(p, sizeof p, "%s/adapter_model.safetensors", dir);
    write_file(p, st, st_len);
    check_error(m, dir, PT_ERR_IO, "no adapter_config.json", "missing config");
    snprintf(p, sizeof p, "%s/adapter_config.json", dir);
    write_file(p, cfg, cfg_len);
    snprintf(p, sizeof p, "%s/adapter_model.safetensors", dir);
    write_file(p, st, st_len / 2);
    check_error(m, dir, PT_ERR_FORMAT, "adapter_model.safetensors", "truncated safetensors");
    char *bad = malloc(st_len);
    memcpy(bad, st, st_len);
    memset(bad + 8, '!', 16); /* the JSON header broken */
    write_file(p, bad, st_len);
    free(bad);
    check_error(m, dir, PT_ERR_FORMAT, "adapter_model.safetensors", "corrupt safetensors header");
    write_file(p, st, st_len);
    snprintf(p, sizeof p, "%s/adapter_config.json", dir);
    write_file(p, "{\"r\": 4}", 8);
    check_error(m, dir, PT_ERR_FORMAT, "lora_alpha", "config without lora_alpha");
    write_file(p, "{\"r\": 4, \"lora_alpha\": 8, \"use_dora\": true}", 43);
    check_error(m, dir, PT_ERR_UNSUPPORTED, "DoRA", "DoRA config");
    snprintf(p, sizeof p, "%s/adapter_model.safetensors", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/adapter_config.json", dir);
    unlink(p);
    rmdir(dir);
    free(cfg);
    free(st);
}

int main(void) {
    pt_model *ref = load_model("tiny_llama.gguf", "ref");
    pt_lora *a = load_lora(ref, "lora/tiny_llama_a");
    pt_lora *b = load_lora(ref, "lora/tiny_llama_b/adapter_config.json");
    pt_lora *ag = load_lora(ref, "lora/tiny_llama_a.gguf");

    pt_lora_info ia, ib, ig;
    pt_lora_get_info(a, &ia);
    pt_lora_get_info(b, &ib);
    pt_lora_get_info(ag, &ig);
    CHECK(strcmp(ia.format, "peft") == 0 && ia.rank == 4 && ia.alpha == 8 && !ia.rslora && ia.scale == 2.0f &&
              ia.n_matrices == 21 && ia.n_layers == 3,
          "info a: %s r %d alpha %g rslora %d scale %g matrices %d layers %d", ia.format, ia.rank, ia.alpha,
          ia.rslora, ia.scale, ia.n_matrices, ia.n_layers);
    CHECK(strcmp(ia.targets, "attn_k,attn_output,attn_q,attn_v,ffn_down,ffn_gate,ffn_up") == 0 ||
              strlen(ia.targets) == strlen("attn_k,attn_output,attn_q,attn_v,ffn_down,ffn_gate,ffn_up"),
          "targets of a: %s", ia.targets);
    CHECK(ib.rank == 8 && ib.alpha == 4 && ib.rslora && fabsf(ib.scale - 4 / sqrtf(8)) < 1e-6f &&
              strstr(ib.targets, "output") != NULL,
          "info b: r %d alpha %g rslora %d scale %g targets %s", ib.rank, ib.alpha, ib.rslora, ib.scale, ib.targets);
    CHECK(strcmp(ig.format, "gguf") == 0 && strcmp(ig.arch, "llama") == 0 && ig.rank == 4 && ig.alpha == 8 &&
              ig.scale == 2.0f && ig.n_matrices == 21 && ig.bytes == ia.bytes,
          "info of the GGUF form: %s %s r %d alpha %g scale %g matrices %d bytes %llu", ig.format, ig.arch, ig.rank,
          ig.alpha, ig.scale, ig.n_matrices, (unsigned long long)ig.bytes);
    /* the factors' bytes are the F32 data of the safetensors (A and B only) */
    CHECK(ia.bytes == st_data_bytes(test_data("lora/tiny_llama_a/adapter_model.safetensors")), "a: %llu bytes",
          (unsigned long long)ia.bytes);
    CHECK(ib.bytes == st_data_bytes(test_data("lora/tiny_llama_b/adapter_model.safetensors")), "b: %llu bytes",
          (unsigned long long)ib.bytes);
    /* info without a model: same reading */
    pt_lora *bare = NULL;
    pt_error err = {0};
    CHECK(pt_lora_load(NULL, test_data("lora/tiny_llama_b"), &bare, &err) == PT_OK, "bare load: %s", err.msg);
    pt_lora_info ibare;
    pt_lora_get_info(bare, &ibare);
    CHECK(ibare.bytes == ib.bytes && ibare.rank == 8, "bare info");

    pt_lora *ab[2] = {a, b};
    const float ab_scales[2] = {0.5f, 1.5f};
    check_case(ref, "lora/tiny_llama_a.logits", &a, NULL, 1, TOL_REL, true, "ref a");
    check_case(ref, "lora/tiny_llama_b.logits", &b, NULL, 1, TOL_REL, true, "ref b");
    check_case(ref, "lora/tiny_llama_ab.logits", ab, ab_scales, 2, TOL_REL, true, "ref a*0.5 + b*1.5");
    check_case(ref, "lora/tiny_llama_a.logits", &ag, NULL, 1, TOL_REL, true, "ref a (GGUF form)");
    pt_lora *a16 = load_lora(ref, "lora/tiny_llama_a_f16");
    pt_lora_info i16;
    pt_lora_get_info(a16, &i16);
    CHECK(i16.bytes == ia.bytes && 2 * st_data_bytes(test_data("lora/tiny_llama_a_f16/adapter_model.safetensors")) ==
                                       ia.bytes,
          "a in F16: %llu bytes held", (unsigned long long)i16.bytes);
    check_case(ref, "lora/tiny_llama_a_f16.logits", &a16, NULL, 1, TOL_REL, true, "ref a (F16 factors)");
    pt_lora_free(a16);

    /* PEFT and GGUF forms, and switching, on one context */
    lf_logits f;
    char path[256];
    snprintf(path, sizeof path, "%s", test_data("lora/tiny_llama_a.logits"));
    lf_logits_load(path, &f);
    const lf_prompt *p = &f.prompts[f.n_prompts - 1];
    const int V = f.n_vocab;
    const size_t nv = (size_t)p->n_tok * V;
    pt_model_info info0;
    pt_model_get_info(ref, &info0);
    pt_context *c = new_ctx(ref, 2, 64);
    pt_memory_stats m0, m1, m2;
    pt_context_memory(c, &m0);
    float *base = run(c, p->tokens, p->n_tok, V, 0);
    set(c, &a, NULL, 1);
    pt_context_memory(c, &m1);
    float *la = run(c, p->tokens, p->n_tok, V, 0);
    set(c, &ag, NULL, 1);
    float *lg = run(c, p->tokens, p->n_tok, V, 0);
    printf("PEFT vs GGUF form of a: max |dlogit| %.3g\n", max_diff(la, lg, nv));
    CHECK(memcmp(la, lg, nv * sizeof *la) == 0, "the GGUF form of a gives other logits than its PEFT form");
    CHECK(max_diff(la, base, nv) > 1.0, "adapter a changes the logits (by %.3g)", max_diff(la, base, nv));
    set(c, NULL, NULL, 0);
    float *off = run(c, p->tokens, p->n_tok, V, 0);
    CHECK(memcmp(off, base, nv * sizeof *off) == 0, "switched off: not the base's logits");
    set(c, ab, ab_scales, 2);
    pt_context_memory(c, &m2);
    float *lab = run(c, p->tokens, p->n_tok, V, 0);
    CHECK(max_diff(lab, la, nv) > 1.0, "a+b differs from a");
    pt_model_info info1;
    pt_model_get_info(ref, &info1);
    CHECK(m0.lora_bytes == 0 && m0.n_lora == 0, "no adapter: %llu bytes", (unsigned long long)m0.lora_bytes);
    CHECK(m1.lora_bytes == ia.bytes && m1.n_lora == 1, "a active: %llu bytes, want %llu",
          (unsigned long long)m1.lora_bytes, (unsigned long long)ia.bytes);
    CHECK(m2.lora_bytes == ia.bytes + ib.bytes && m2.n_lora == 2, "a+b active: %llu bytes",
          (unsigned long long)m2.lora_bytes);
    const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    CHECK(m0.model_mapped == m2.model_mapped && m2.model_resident <= (m0.model_mapped + page - 1) / page * page,
          "the base mapping is the same one: mapped %llu -> %llu, resident %llu", (unsigned long long)m0.model_mapped,
          (unsigned long long)m2.model_mapped, (unsigned long long)m2.model_resident);
    CHECK(info1.repacked_bytes == info0.repacked_bytes && info1.weight_bytes == info0.weight_bytes,
          "base weights copied: repacked %llu -> %llu", (unsigned long long)info0.repacked_bytes,
          (unsigned long long)info1.repacked_bytes);
    printf("memory: base mapped %llu, adapter a %llu bytes, a+b %llu bytes\n", (unsigned long long)m0.model_mapped,
           (unsigned long long)m1.lora_bytes, (unsigned long long)m2.lora_bytes);

    /* bad sets */
    pt_lora *many[PT_LORA_MAX + 1];
    for (int i = 0; i <= PT_LORA_MAX; i++) many[i] = a;
    CHECK(pt_context_set_loras(c, many, NULL, PT_LORA_MAX + 1, &err) == PT_ERR_ARG, "too many adapters");
    CHECK(pt_context_set_loras(c, &bare, NULL, 1, &err) == PT_ERR_ARG && strstr(err.msg, "not loaded for"),
          "adapter without a model: %s", err.msg);
    const float nan_scale = NAN;
    CHECK(pt_context_set_loras(c, &a, &nan_scale, 1, &err) == PT_ERR_ARG, "NaN scale");
    pt_model *fast = load_model("tiny_llama.gguf", NULL);
    CHECK(pt_context_set_loras(c, &a, NULL, 1, &err) == PT_OK, "a again");
    pt_lora *fa = load_lora(fast, "lora/tiny_llama_a"), *fb = load_lora(fast, "lora/tiny_llama_b");
    pt_context *cf = new_ctx(fast, 1, 64);
    CHECK(pt_context_set_loras(cf, &a, NULL, 1, &err) == PT_ERR_ARG, "adapter of another model: %s", err.msg);
    pt_context_free(cf);

    /* fast path (int8 base products), the adapters' int8 path beside them */
    pt_lora *fab[2] = {fa, fb};
    check_case(fast, "lora/tiny_llama_a.logits", &fa, NULL, 1, TOL_FAST_REL, false, "fast a");
    check_case(fast, "lora/tiny_llama_ab.logits", fab, ab_scales, 2, TOL_FAST_REL, false, "fast a*0.5 + b*1.5");

    errors(ref);

    free(base), free(la), free(lg), free(off), free(lab);
    lf_logits_free(&f);
    pt_context_free(c);
    pt_lora_free(fa), pt_lora_free(fb), pt_lora_free(a), pt_lora_free(b), pt_lora_free(ag), pt_lora_free(bare);
    pt_model_free(fast);
    pt_model_free(ref);
    return check_done("test_lora");
}
