/*
 * test_demo_parity.c — the shipped demo image model (assets/demo-sd) drawn
 * by petrel against diffusers drawing the same file's weights
 * (tests/data/demo-sd-parity, made by tools/demo_sd/gen_parity.py: the
 * GGUF dequantized to float32 in diffusers' own CLIPTextModel,
 * UNet2DConditionModel and AutoencoderKL), from the same initial latents,
 * with the model's defaults (DPM++ 2M Karras, 20 steps, CFG 6, 256x256).
 * So the model and the engine are judged apart: whatever the model draws,
 * petrel must draw what diffusers draws with it.
 *
 * Tolerance. The weights are the same numbers on both sides; what differs
 * is that petrel quantizes the activations of the Q8_0 layers to int8
 * blocks on the fly (qmatmul.h) while diffusers multiplies in float32, over
 * 20 steps x 2 guidance rows. Measured: PSNR 48.0 / 53.0 / 52.2 dB on the
 * three cases (0..255 scale) and final latents 2.1 / 2.1 / 1.5 % RMS off
 * diffusers'. The bounds (40 dB, 5 %) sit below that with room (every
 * CPU variant gives the same pixels, so none is needed for them) and
 * catch what matters: a layer or a sampler step that is wrong moves the
 * picture far more (a swapped colour or a missing shape is < 20 dB).
 */
#include "check.h"
#include "sd_fixture.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "petrel.h"

#define PSNR_MIN 40.0
#define LATENT_RMS_MAX 0.05

static double psnr(const pt_image *img, const float *ref) {
    double se = 0;
    size_t n = 0;
    for (int y = 0; y < img->height; y++)
        for (int x = 0; x < 3 * img->width; x++) {
            const double d = img->pixels[(size_t)y * img->stride + (size_t)x] -
                             255.0 * ref[((size_t)y * (size_t)img->width) * 3 + (size_t)x];
            se += d * d;
            n++;
        }
    return se == 0 ? 99.0 : 10.0 * log10(255.0 * 255.0 / (se / (double)n));
}

/* RMS of (a - b) over RMS of b. */
static double rel_rms(const float *a, const float *b, size_t n) {
    double se = 0, sb = 0;
    for (size_t i = 0; i < n; i++) {
        se += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        sb += (double)b[i] * b[i];
    }
    return sb > 0 ? sqrt(se / sb) : sqrt(se);
}

int main(void) {
    const char *src = getenv("PETREL_SOURCE_DIR");
    char model[4096];
    snprintf(model, sizeof model, "%s/assets/demo-sd/demo-sd-q8_0.gguf", src ? src : ".");
    sdfx *f = sdfx_open(test_data("demo-sd-parity"));
    const cJSON *cases = cJSON_GetObjectItem(sdfx_json(f), "cases");
    CHECK(cJSON_IsArray(cases) && cJSON_GetArraySize(cases) >= 3, "ref.json has no cases");

    pt_image_model *m = NULL;
    pt_error err = {0};
    pt_image_model_params mp = pt_image_model_default_params();
    mp.n_threads = 2;
    mp.resident = true; /* three generations: prepare the UNet once */
    CHECK(pt_image_model_load(model, &mp, &m, &err) == PT_OK, "load %s: %s", model, err.msg);
    if (!m) return check_done("demo_parity");

    int k = 0;
    for (const cJSON *c = cases ? cases->child : NULL; c; c = c->next, k++) {
        char name[64];
        int64_t shape[4];
        snprintf(name, sizeof name, "case.%d.init", k);
        const float *init = sdfx_get(f, name, shape, NULL);
        snprintf(name, sizeof name, "case.%d.latent", k);
        const float *want_lat = sdfx_get(f, name, NULL, NULL);
        snprintf(name, sizeof name, "case.%d.image", k);
        const float *want_img = sdfx_get(f, name, NULL, NULL);
        const size_t n_lat = (size_t)(shape[1] * shape[2] * shape[3]);
        float *lat = malloc(n_lat * sizeof *lat);

        pt_image_params p = pt_image_default_params();
        p.prompt = cJSON_GetObjectItem(c, "prompt")->valuestring;
        p.negative = cJSON_GetObjectItem(c, "negative")->valuestring;
        p.steps = cJSON_GetObjectItem(c, "steps")->valueint;
        p.cfg = (float)cJSON_GetObjectItem(c, "cfg")->valuedouble;
        p.width = cJSON_GetObjectItem(c, "width")->valueint;
        p.height = cJSON_GetObjectItem(c, "height")->valueint;
        CHECK(pt_image_sampler_parse(cJSON_GetObjectItem(c, "sampler")->valuestring, &p.sampler),
              "case %d: sampler", k);
        p.init_latent = init;
        p.out_latent = lat;
        pt_image img = {0};
        const pt_status st = pt_image_generate(m, &p, &img, &err);
        CHECK(st == PT_OK, "case %d (%s): %s", k, p.prompt, err.msg);
        if (st == PT_OK) {
            CHECK(img.width == p.width && img.height == p.height, "case %d: %dx%d", k, img.width,
                  img.height);
            const double db = psnr(&img, want_img), r = rel_rms(lat, want_lat, n_lat);
            printf("case %d (%s): PSNR %.1f dB, final latent %.2f%% RMS off\n", k, p.prompt, db,
                   100 * r);
            CHECK(db >= PSNR_MIN, "case %d: PSNR %.1f dB < %.1f", k, db, PSNR_MIN);
            CHECK(r <= LATENT_RMS_MAX, "case %d: final latent %.3f RMS off > %.3f", k, r,
                  LATENT_RMS_MAX);
        }
        pt_image_free(&img);
        free(lat);
    }
    pt_image_model_free(m);
    sdfx_close(f);
    return check_done("demo_parity");
}
