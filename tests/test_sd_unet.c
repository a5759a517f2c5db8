/*
 * test_sd_unet.c — the UNet (unet.h) against diffusers'
 * UNet2DConditionModel outputs in the sd-tiny fixture
 * (tools/gen_sd_fixture.py): unet.out (SD 1.x-style model: conv
 * projections, epsilon) and unetv.out (SD 2.x-style model-v: linear
 * projections, heads [2,4,4], v-prediction) for 2 latents of 8x8 at the
 * fixture's timestep with random text states, and *.out2 for one 16x8
 * latent (non-square; the same model object, so buffers are re-sized).
 *   - float path (weights as stored, F32): max abs error <= 1e-4 *
 *     max |ref|. Both sides run float32; they differ in summation order
 *     (products, convolutions as im2col products vs cuDNN/ATen direct
 *     kernels), in GroupNorm / LayerNorm statistics (double here), in
 *     petrel's exp / erf (2 ulp; 1.5e-7 absolute) and the attention's
 *     running softmax. Each of those is a relative error of ~1e-7 per
 *     op; through ~20 ResNet and transformer stages, normalized anew by
 *     each GroupNorm, they stay near 1e-6 of max |ref|. 1e-4 leaves 100x
 *     headroom and still fails on any wrong operation (order 1e-1).
 *   - Q8_0 path (linear and conv weights quantized at load, int8
 *     activations): relative RMS error <= 5e-2 and PSNR (peak max |ref|)
 *     >= 30 dB. Each product rounds weights and activations to ~1/254 of
 *     their block maximum (~0.3 % RMS each); ~60 products in sequence, and
 *     channel counts of 32-64 (rows of one or two blocks, so outliers set
 *     the step), measure 1.8-2.0 % RMS (44-45 dB) here; a misplaced
 *     weight gives ~100 %.
 *   - thread counts 1 and 3 give bitwise equal outputs.
 */
#include "check.h"
#include "sd_fixture.h"

#include "sd_test.h"
#include "sd_weights.h"
#include "unet.h"

#include <math.h>

static void compare(const char *what, const float *got, const float *ref, int64_t n, bool exact) {
    const sdt_err r = sdt_compare(what, got, ref, n);
    const double emax = r.max_err, amax = r.max_ref, rel = r.rel_rms, psnr = r.psnr;
    if (exact)
        CHECK(emax <= 1e-4 * amax, "%s: max error %g > 1e-4 * %g", what, emax, amax);
    else
        CHECK(rel <= 5e-2 && psnr >= 30, "%s: rel rms %g, psnr %g dB", what, rel, psnr);
}

typedef struct unet_case {
    const float *x;     /* HWC [n][h][w][4] */
    const float *cond;  /* [n][77][cross] */
    const float *ref;   /* HWC */
    int n, h, w;
    const char *name;
} unet_case;

/* Run both cases with one model under (threads, policy); outputs malloc'd. */
static void run(const char *dir, int threads, sd_weight_policy policy, float t, const unet_case *cs,
                int n_cases, float **outs) {
    sd_weights *w = NULL;
    pt_error err = {0};
    if (sd_weights_open(test_data(dir), NULL, NULL, &w, &err) != PT_OK) {
        fprintf(stderr, "sd_weights_open %s: %s\n", dir, err.msg);
        exit(1);
    }
    sd_runtime_params p = {NULL, NULL, threads, policy};
    sd_runtime *rt = NULL;
    if (sd_rt_new(&p, &rt, &err) != PT_OK) exit(1);
    sd_unet *u = NULL;
    pt_status st = sd_unet_load(w, &sd_weights_config(w)->unet, rt, &u, &err);
    CHECK(st == PT_OK, "sd_unet_load %s: %s", dir, err.msg);
    if (st) exit(1);
    for (int i = 0; i < n_cases; i++) {
        const unet_case *c = &cs[i];
        outs[i] = malloc(sizeof(float) * c->n * c->h * c->w * 4);
        st = sd_unet_run(u, rt, c->x, c->n, c->h, c->w, t, c->cond, 77, outs[i], &err);
        CHECK(st == PT_OK, "sd_unet_run %s: %s", c->name, err.msg);
    }
    /* bad sizes are errors */
    CHECK(sd_unet_run(u, rt, cs[0].x, 1, 6, 8, t, cs[0].cond, 77, outs[0] + 0, &err) == PT_ERR_ARG ||
          sd_weights_config(w)->unet.n_levels < 3, "a 6x8 latent accepted by a 3-level unet");
    sd_unet_free(u);
    const sd_mem m = sd_rt_mem(rt);
    CHECK(m.weights == 0 && m.mapped == 0, "weights still counted after free");
    sd_rt_free(rt);
    sd_weights_close(w);
}

static void test_model(sdfx *f, const char *dir, const char *pre, float t) {
    char name[64];
    int64_t s[4];
    int nd;
    unet_case cs[2];
    float *bufs[6];
    const char *sfx[2] = {"", "2"};
    for (int i = 0; i < 2; i++) {
        snprintf(name, sizeof name, "%s.latent%s", pre, sfx[i]);
        const float *lat = sdfx_get(f, name, s, &nd);
        snprintf(name, sizeof name, "%s.out%s", pre, sfx[i]);
        int64_t so[4];
        const float *ref = sdfx_get(f, name, so, &nd);
        snprintf(name, sizeof name, "%s.cond", pre);
        int64_t sc[4];
        const float *cond = sdfx_get(f, name, sc, &nd);
        if (!lat || !ref || !cond) {
            CHECK(0, "%s: fixture arrays missing", pre);
            return;
        }
        const int n = (int)s[0], h = (int)s[2], w = (int)s[3];
        bufs[2 * i] = malloc(sizeof(float) * n * 4 * h * w);
        bufs[2 * i + 1] = malloc(sizeof(float) * n * 4 * h * w);
        sdfx_nchw_to_hwc(lat, n, 4, h, w, bufs[2 * i]);
        sdfx_nchw_to_hwc(ref, n, 4, h, w, bufs[2 * i + 1]);
        cs[i] = (unet_case){bufs[2 * i], cond, bufs[2 * i + 1], n, h, w, i ? "out2" : "out"};
    }
    float *y1[2], *y3[2], *q[2];
    run(dir, 1, SD_WEIGHTS_STORED, t, cs, 2, y1);
    run(dir, 3, SD_WEIGHTS_STORED, t, cs, 2, y3);
    run(dir, 2, SD_WEIGHTS_Q8_0, t, cs, 2, q);
    for (int i = 0; i < 2; i++) {
        const int64_t n = (int64_t)cs[i].n * cs[i].h * cs[i].w * 4;
        char what[64];
        snprintf(what, sizeof what, "%s.%s F32", pre, cs[i].name);
        compare(what, y1[i], cs[i].ref, n, true);
        CHECK(memcmp(y1[i], y3[i], (size_t)n * sizeof(float)) == 0, "%s: 1 and 3 threads differ", what);
        snprintf(what, sizeof what, "%s.%s Q8_0", pre, cs[i].name);
        compare(what, q[i], cs[i].ref, n, false);
        free(y1[i]), free(y3[i]), free(q[i]);
        free(bufs[2 * i]), free(bufs[2 * i + 1]);
    }
}

int main(void) {
    sdfx *f = sdfx_open(NULL);
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(sdfx_json(f), "unet_timestep");
    CHECK(cJSON_IsNumber(ts), "ref.json has no unet_timestep");
    if (cJSON_IsNumber(ts)) {
        test_model(f, "sd-tiny/model", "unet", (float)ts->valuedouble);
        test_model(f, "sd-tiny/model-v", "unetv", (float)ts->valuedouble);
    }
    sdfx_close(f);
    return check_done("sd_unet");
}
