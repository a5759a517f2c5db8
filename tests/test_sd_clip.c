/*
 * test_sd_clip.c — the CLIP text encoder (clip_encoder.h) against
 * transformers' CLIPTextModel outputs in the sd-tiny fixture
 * (tools/gen_sd_fixture.py): last_hidden_state (clip.hidden, skip 1) and
 * the final LayerNorm of the penultimate layer (clip.penult, skip 2), for
 * the SD 1.x-style model (quick_gelu) and the SD 2.x-style one (gelu,
 * model-v), on 8 prompts of 77 tokens each.
 *   - float path (weights as stored, F32): max abs error <= 1e-4 *
 *     max |ref|. Both sides compute in float32; they differ in summation
 *     order (matrix products, LayerNorm statistics in double here), in
 *     petrel's own exp / erf (2 ulp; erf to 1.5e-7 absolute) and in the
 *     attention's running softmax. Relative errors of a few 1e-7 per op,
 *     grown through 2 layers and 3 LayerNorms (which divide by the
 *     standard deviation, amplifying absolute error by 1/std of rows near
 *     0.1-1), stay around 1e-6 of max |ref|; 1e-4 leaves 100x headroom yet
 *     catches any wrong operation (those give errors of order 1e-1).
 *   - Q8_0 path (weights quantized at load, int8 activations): relative
 *     RMS error <= 4e-2 and PSNR (peak = max |ref|) >= 35 dB. Q8_0 rounds
 *     weights and activations each to about 1/254 of their block's
 *     maximum; with hidden 32 a row is one block, so one outlier sets the
 *     step of all 32 values, and a dozen such products in sequence
 *     measure 1.0-1.6 % RMS (46-50 dB) here; 4 % / 35 dB leave headroom,
 *     while a misplaced or misread weight gives errors near 100 %.
 *   - thread counts 1 and 3 give bitwise equal states.
 */
#include "check.h"
#include "sd_fixture.h"

#include "clip_encoder.h"
#include "sd_test.h"
#include "sd_weights.h"

#include <math.h>

/* Encode the fixture's ids with model `dir` at clip skip `skip`. */
static float *encode(const char *dir, int skip, int threads, sd_weight_policy policy,
                     const int32_t *ids, int rows, int toks) {
    sd_weights *w = NULL;
    pt_error err = {0};
    if (sd_weights_open(test_data(dir), NULL, NULL, &w, &err) != PT_OK) {
        fprintf(stderr, "sd_weights_open %s: %s\n", dir, err.msg);
        exit(1);
    }
    sd_clip_config cfg = sd_weights_config(w)->clip;
    cfg.skip = skip;
    sd_runtime *rt = sdt_runtime(NULL, threads, policy);
    sd_clip *m = NULL;
    pt_status st = sd_clip_load(w, &cfg, rt, &m, &err);
    CHECK(st == PT_OK, "sd_clip_load %s: %s", dir, err.msg);
    if (st) exit(1);
    float *out = malloc(sizeof(float) * rows * toks * cfg.hidden);
    st = sd_clip_encode(m, rt, ids, rows, toks, out, &err);
    CHECK(st == PT_OK, "sd_clip_encode: %s", err.msg);
    /* bad input is an error, not a crash */
    int32_t bad[2] = {0, cfg.vocab};
    CHECK(sd_clip_encode(m, rt, bad, 1, 2, out + 0, &err) == PT_ERR_ARG, "id %d accepted", cfg.vocab);
    CHECK(sd_clip_encode(m, rt, ids, 1, cfg.max_pos + 1, out, &err) == PT_ERR_ARG,
          "%d tokens accepted", cfg.max_pos + 1);
    sd_clip_free(m);
    const sd_mem mem = sd_rt_mem(rt);
    CHECK(mem.weights == 0 && mem.mapped == 0 && mem.peak > 0, "memory accounting after free");
    sd_rt_free(rt);
    sd_weights_close(w);
    return out;
}

static void compare(const char *what, const float *got, const float *ref, int64_t n, bool exact_path) {
    const sdt_err r = sdt_compare(what, got, ref, n);
    const double emax = r.max_err, amax = r.max_ref, rel_rms = r.rel_rms, psnr = r.psnr;
    if (exact_path)
        CHECK(emax <= 1e-4 * amax, "%s: max error %g > 1e-4 * %g", what, emax, amax);
    else
        CHECK(rel_rms <= 4e-2 && psnr >= 35, "%s: rel rms %g, psnr %g", what, rel_rms, psnr);
}

static void test_model(sdfx *f, const char *dir, const char *pre) {
    char name[64];
    int64_t sh[4];
    int nd;
    snprintf(name, sizeof name, "%s.ids", pre);
    const int32_t *ids = sdfx_get_i32(f, name, sh, &nd);
    CHECK(ids && nd == 2, "%s missing", name);
    if (!ids) return;
    const int rows = (int)sh[0], toks = (int)sh[1];
    for (int skip = 1; skip <= 2; skip++) {
        snprintf(name, sizeof name, "%s.%s", pre, skip == 1 ? "hidden" : "penult");
        const float *ref = sdfx_get(f, name, sh, &nd);
        CHECK(ref && nd == 3 && sh[0] == rows && sh[1] == toks, "%s missing or misshapen", name);
        if (!ref) continue;
        const int64_t n = sh[0] * sh[1] * sh[2];
        float *y1 = encode(dir, skip, 1, SD_WEIGHTS_STORED, ids, rows, toks);
        float *y3 = encode(dir, skip, 3, SD_WEIGHTS_STORED, ids, rows, toks);
        CHECK(memcmp(y1, y3, (size_t)n * sizeof(float)) == 0, "%s: 1 and 3 threads differ", name);
        char what[96];
        snprintf(what, sizeof what, "%s F32", name);
        compare(what, y1, ref, n, true);
        float *q = encode(dir, skip, 2, SD_WEIGHTS_Q8_0, ids, rows, toks);
        snprintf(what, sizeof what, "%s Q8_0", name);
        compare(what, q, ref, n, false);
        free(y1), free(y3), free(q);
    }
}

int main(void) {
    sdfx *f = sdfx_open(NULL);
    test_model(f, "sd-tiny/model", "clip");
    test_model(f, "sd-tiny/model-v", "clipv");
    sdfx_close(f);
    return check_done("sd_clip");
}
