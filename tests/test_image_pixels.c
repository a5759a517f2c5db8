/*
 * test_image_pixels.c — the pixel-level ends of the image pipeline
 * (engine/diffusion/image_pixels.h): diffusers' 8-bit conversion with
 * numpy's round-half-to-even, the latent preview's known colours, and the
 * NCHW <-> HWC transposes on odd sizes.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "image_pixels.h"

static uint8_t one(float x) {
    uint8_t out[3];
    const float rgb[3] = {x, x, x};
    sd_rgb8_from_float(out, 3, rgb, 1, 1);
    return out[0];
}

static void test_rgb8(void) {
    /* ends, clamping, NaN */
    CHECK(one(-1.0f) == 0 && one(1.0f) == 255, "ends: %d %d", one(-1.0f), one(1.0f));
    CHECK(one(-7.0f) == 0 && one(3.0f) == 255 && one(NAN) == 0 && one(INFINITY) == 255 &&
          one(-INFINITY) == 0, "clamping");
    /* x = 0: v = 0.5, 127.5 exactly: ties to even gives 128 (so would
     * half-up); x = -0.5: 63.75 -> 64; x = 0.5: 191.25 -> 191 */
    CHECK(one(0.0f) == 128 && one(-0.5f) == 64 && one(0.5f) == 191, "%d %d %d", one(0.0f),
          one(-0.5f), one(0.5f));
    /* ties k + 0.5 with k even: numpy rounds them down to k (half-up
     * would give k + 1). Search the floats x near each tie for one whose
     * v * 255 is exactly k + 0.5 in float (not every tie is reachable:
     * v = x * 0.5 + 0.5 has a limited resolution); each found must round
     * to k, and some must be found. */
    int ties = 0, wrong = 0;
    for (int k = 0; k < 255; k += 2) {
        const float t = (float)k + 0.5f;
        float x = (t / 255.0f - 0.5f) * 2.0f;
        for (int i = 0; i < 64; i++) x = nextafterf(x, -2.0f);
        for (int i = 0; i < 128; i++, x = nextafterf(x, 2.0f)) {
            const float v = x * 0.5f + 0.5f;
            if (v * 255.0f != t) continue;
            ties++;
            if (one(x) != k) wrong++;
            break;
        }
    }
    CHECK(ties >= 10 && wrong == 0, "%d ties found, %d not rounded to even", ties, wrong);
    /* layout: rows of stride bytes, HWC input, padding bytes untouched */
    enum { W = 3, H = 2, STRIDE = 11 };
    float rgb[H * W * 3];
    for (int i = 0; i < H * W * 3; i++) rgb[i] = -1.0f + 2.0f * (float)i / 255.0f;
    uint8_t out[H * STRIDE];
    memset(out, 0xAB, sizeof out);
    sd_rgb8_from_float(out, STRIDE, rgb, W, H);
    bool ok = true;
    for (int y = 0; y < H; y++) {
        for (int i = 0; i < 3 * W; i++) ok = ok && out[y * STRIDE + i] == (uint8_t)(y * 3 * W + i);
        for (int i = 3 * W; i < STRIDE; i++) ok = ok && out[y * STRIDE + i] == 0xAB;
    }
    CHECK(ok, "rows, stride or padding wrong");
}

static void test_preview(void) {
    /* latent NCHW [4][1][2]: pixel 0 has channel 0 = 1, pixel 1 channel 3 = -1 */
    float lat[8] = {0};
    lat[0 * 2 + 0] = 1.0f;
    lat[3 * 2 + 1] = -1.0f;
    uint8_t out[6];
    sd_latent_preview(out, 6, lat, 4, 1, 2);
    /* ComfyUI's SD1.5 factors: channel 0 = (0.3512, 0.2297, 0.3227),
     * channel 3 = (-0.2120, -0.2616, -0.7177); rgb = (v + 1) / 2 * 255 */
    const double want[6] = {1.3512, 1.2297, 1.3227, 1.2120, 1.2616, 1.7177};
    for (int i = 0; i < 6; i++)
        CHECK(fabs(out[i] - want[i] / 2 * 255) <= 0.5 + 1e-3, "preview[%d] = %d, want %.2f", i,
              out[i], want[i] / 2 * 255);
}

static void test_transpose(void) {
    enum { C = 3, H = 5, W = 7, N = C * H * W };
    float a[N], b[N], c[N];
    for (int i = 0; i < N; i++) a[i] = (float)i;
    sd_nchw_to_hwc(b, a, C, H, W);
    /* HWC element (y, x, ch) is NCHW's (ch, y, x) */
    bool ok = true;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int ch = 0; ch < C; ch++) ok = ok && b[(y * W + x) * C + ch] == a[(ch * H + y) * W + x];
    CHECK(ok, "nchw_to_hwc");
    sd_hwc_to_nchw(c, b, C, H, W);
    CHECK(!memcmp(a, c, sizeof a), "hwc_to_nchw does not invert it");
}

int main(void) {
    test_rgb8();
    test_preview();
    test_transpose();
    return check_done("image_pixels");
}
