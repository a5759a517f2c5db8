/* image_pixels.c — see image_pixels.h. */
#include <math.h>

#include "image_pixels.h"

/* x in [0, 1] (or NaN) to 0..255: round half to even, as numpy. rintf
 * rounds in the current mode, which the engine never changes from
 * round-to-nearest-even. */
static uint8_t to_u8(float v) {
    if (!(v > 0.0f)) return 0; /* also NaN */
    if (v > 1.0f) v = 1.0f;
    return (uint8_t)rintf(v * 255.0f);
}

void sd_rgb8_from_float(uint8_t *out, size_t stride, const float *rgb, int w, int h) {
    for (int y = 0; y < h; y++) {
        uint8_t *row = out + (size_t)y * stride;
        const float *src = rgb + (size_t)y * (size_t)w * 3;
        for (int i = 0; i < 3 * w; i++) row[i] = to_u8(src[i] * 0.5f + 0.5f);
    }
}

/* ComfyUI's latent_formats.SD15.latent_rgb_factors: row c is latent
 * channel c's contribution to R, G, B. */
static const float SD_PREVIEW_FACTORS[4][3] = {
    {0.3512f, 0.2297f, 0.3227f},
    {0.3250f, 0.4974f, 0.2350f},
    {-0.2829f, 0.1762f, 0.2721f},
    {-0.2120f, -0.2616f, -0.7177f},
};

void sd_latent_preview(uint8_t *out, size_t stride, const float *x, int c, int h, int w) {
    const size_t plane = (size_t)h * (size_t)w;
    for (int y = 0; y < h; y++)
        for (int xx = 0; xx < w; xx++) {
            const size_t p = (size_t)y * (size_t)w + (size_t)xx;
            for (int k = 0; k < 3; k++) {
                float v = 0.0f;
                for (int ch = 0; ch < 4 && ch < c; ch++) v += x[(size_t)ch * plane + p] * SD_PREVIEW_FACTORS[ch][k];
                out[(size_t)y * stride + (size_t)xx * 3 + (size_t)k] = to_u8((v + 1.0f) * 0.5f);
            }
        }
}

void sd_nchw_to_hwc(float *dst, const float *src, int c, int h, int w) {
    const size_t plane = (size_t)h * (size_t)w;
    for (size_t p = 0; p < plane; p++)
        for (int ch = 0; ch < c; ch++) dst[p * (size_t)c + (size_t)ch] = src[(size_t)ch * plane + p];
}

void sd_hwc_to_nchw(float *dst, const float *src, int c, int h, int w) {
    const size_t plane = (size_t)h * (size_t)w;
    for (size_t p = 0; p < plane; p++)
        for (int ch = 0; ch < c; ch++) dst[(size_t)ch * plane + p] = src[p * (size_t)c + (size_t)ch];
}
