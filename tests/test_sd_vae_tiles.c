/*
 * test_sd_vae_tiles.c — the tile plan and the blended tiled decode of
 * vae_tiles.h with synthetic decoders whose right answer is known:
 *   - the plan on many (n, t, o): tiles cover [0, n), each is min(n, t)
 *     long, in increasing order, neighbours overlap by at least o;
 *   - a pointwise decoder (each output pixel a function of its own latent
 *     pixel only, so every tile agrees with the whole image): the tiled
 *     result equals the untiled one up to the rounding of the normalized
 *     blend (weights summing to 1 within a few float ulps: 1e-5 relative);
 *   - a decoder that writes a per-tile constant: outside overlaps the
 *     output is that tile's constant, in an overlap of two tiles it lies
 *     between theirs, rising linearly towards the next tile (checked
 *     against the ramp of the header, within 1e-5);
 *   - bad arguments are errors, and a failing tile decode is passed on.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "status.h"
#include "vae_tiles.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static float frand(void) { /* uniform in [-1, 1) */
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static void test_plan(void) {
    int st[256];
    int bad = 0;
    for (int n = 1; n <= 60; n++)
        for (int t = 1; t <= 20; t++)
            for (int o = 0; 2 * o <= t; o++) {
                int k = sd_tiles_plan(n, t, o, st, 256);
                int len = n < t ? n : t;
                if (k < 1) { bad++; continue; }
                if (st[0] != 0 || st[k - 1] + len != n) bad++;
                for (int i = 1; i < k; i++) {
                    if (st[i] <= st[i - 1]) bad++;                  /* increasing */
                    if (st[i - 1] + len - st[i] < o) bad++;         /* overlap >= o */
                    if (st[i] > st[i - 1] + len) bad++;             /* no gap */
                }
            }
    CHECK(bad == 0, "%d plan violations", bad);
    CHECK(sd_tiles_plan(10, 4, 3, st, 256) == 0, "overlap above half a tile is refused");
    CHECK(sd_tiles_plan(10, 0, 0, st, 256) == 0, "tile 0 is refused");
    CHECK(sd_tiles_plan(100, 4, 0, st, 10) == 0, "too many tiles for max_tiles is refused");
    CHECK(sd_tiles_plan(24, 16, 8, st, 256) == 2 && st[0] == 0 && st[1] == 8, "24/16/8: 0, 8");
}

/* Pointwise decoder: out pixel (y, x) of 2 channels from latent pixel
 * (y / 4, x / 4) of 3 channels, plus a term of (y mod 4, x mod 4). */
static pt_status dec_pointwise(void *ctx, const float *lat, int h, int w, float *out,
                               pt_error *err) {
    (void)ctx, (void)err;
    for (int y = 0; y < 4 * h; y++)
        for (int x = 0; x < 4 * w; x++) {
            const float *l = lat + ((size_t)(y / 4) * w + x / 4) * 3;
            float *o = out + ((size_t)y * 4 * w + x) * 2;
            o[0] = l[0] * 2.0f - l[1] + 0.1f * (float)(y % 4);
            o[1] = l[2] * l[0] + 0.01f * (float)(x % 4);
        }
    return PT_OK;
}

static void test_pointwise(int h, int w, int tile, int overlap) {
    float *lat = malloc(sizeof(float) * (size_t)h * w * 3);
    size_t n_out = (size_t)16 * h * w * 2;
    float *ref = malloc(sizeof(float) * n_out), *got = malloc(sizeof(float) * n_out);
    for (size_t i = 0; i < (size_t)h * w * 3; i++) lat[i] = frand();
    dec_pointwise(NULL, lat, h, w, ref, NULL);
    pt_error err = {0};
    uint64_t peak = 0;
    pt_status st = sd_decode_tiled(dec_pointwise, NULL, lat, h, w, 3, 4, 2, tile, overlap, got,
                                   &peak, &err);
    CHECK(st == PT_OK, "tiled %dx%d: %s", h, w, err.msg);
    double worst = 0;
    for (size_t i = 0; i < n_out; i++) {
        double d = fabs((double)got[i] - ref[i]) / (1.0 + fabs(ref[i]));
        if (d > worst) worst = d;
    }
    /* the blend is a convex combination of equal values: only the float
     * rounding of weights, their sums and the division remain */
    CHECK(worst < 1e-5, "pointwise %dx%d tile %d/%d: worst relative error %g", h, w, tile,
          overlap, worst);
    /* the buffers of one tile, not of the image (output is the caller's) */
    int th = h < tile ? h : tile, tw = w < tile ? w : tile;
    uint64_t tile_bytes = sizeof(float) * ((uint64_t)th * tw * 3 + (uint64_t)16 * th * tw * 2);
    CHECK(peak >= tile_bytes && peak < tile_bytes + 64 * (uint64_t)(h + w) * 4 + 4096,
          "peak %llu for a tile of %llu bytes", (unsigned long long)peak,
          (unsigned long long)tile_bytes);
    free(lat), free(ref), free(got);
}

/* Per-tile constant decoder (one output channel, scale given): every
 * output value of the k-th call is k. */
typedef struct const_ctx { int calls, scale; } const_ctx;
static pt_status dec_const(void *ctx, const float *lat, int h, int w, float *out, pt_error *err) {
    (void)lat, (void)err;
    const_ctx *c = ctx;
    for (size_t i = 0; i < (size_t)h * w * c->scale * c->scale; i++) out[i] = (float)c->calls;
    c->calls++;
    return PT_OK;
}

static void test_blend_ramp(void) {
    /* one row of tiles: latent 1 x 24, tiles of 16 overlapping by 8 (two
     * tiles: [0, 16) and [8, 24)), scale 2, one channel: outputs 0..47
     * where tile 0 (value 0) alone covers pixels 0..15, tile 1 (value 1)
     * alone 32..47, and pixels 16..31 are the 16-pixel overlap, ramping
     * as (j + 0.5) / 16 towards tile 1 */
    float lat[24] = {0};
    float out[2 * 48];
    const_ctx cc = {0, 2};
    pt_error err = {0};
    CHECK(sd_decode_tiled(dec_const, &cc, lat, 1, 24, 1, 2, 1, 16, 8, out, NULL, &err) == PT_OK,
          "%s", err.msg);
    CHECK(cc.calls == 2, "two tiles decoded, got %d", cc.calls);
    double worst = 0;
    for (int r = 0; r < 2; r++)
        for (int x = 0; x < 48; x++) {
            double want = x < 16 ? 0.0 : x >= 32 ? 1.0 : ((x - 16) + 0.5) / 16.0;
            double d = fabs(out[r * 48 + x] - want);
            if (d > worst) worst = d;
        }
    CHECK(worst < 1e-5, "ramp off by %g", worst);

    /* a 2-D grid, 3 x 3 tiles: the middle of the middle tile is its own */
    float lat2[40 * 40] = {0};
    float *out2 = malloc(sizeof(float) * 40 * 40);
    cc = (const_ctx){0, 1};
    CHECK(sd_decode_tiled(dec_const, &cc, lat2, 40, 40, 1, 1, 1, 16, 4, out2, NULL, &err) == PT_OK,
          "%s", err.msg);
    CHECK(cc.calls == 9, "3 x 3 tiles: %d", cc.calls); /* starts 0, 12, 24 */
    CHECK(fabsf(out2[20 * 40 + 20] - 4.0f) < 1e-6f, "centre pixel %g (tile 4)", out2[20 * 40 + 20]);
    CHECK(fabsf(out2[2 * 40 + 38] - 2.0f) < 1e-6f, "top right %g (tile 2)", out2[2 * 40 + 38]);
    /* pixel (13, 13): overlap of tiles 0,1,3,4 at j = 1 of 4 in each axis:
     * weights per axis 0.625 / 0.375 for the earlier / later tile */
    double a = 0.625, b = 0.375;
    double want = (a * a * 0 + a * b * 1 + b * a * 3 + b * b * 4) / 1.0;
    CHECK(fabs(out2[13 * 40 + 13] - want) < 1e-5, "corner overlap %g want %g", out2[13 * 40 + 13],
          want);
    free(out2);
}

static pt_status dec_fail(void *ctx, const float *lat, int h, int w, float *out, pt_error *err) {
    (void)ctx, (void)lat, (void)h, (void)w, (void)out;
    return pt_fail(err, PT_ERR_IO, "tile failed");
}

int main(void) {
    test_plan();
    test_pointwise(8, 16, 16, 4);  /* one tile */
    test_pointwise(24, 8, 16, 8);  /* 2 x 1 */
    test_pointwise(37, 29, 12, 5); /* odd sizes, 4 x 3 tiles */
    test_pointwise(5, 50, 6, 3);
    test_pointwise(7, 9, 4, 2);    /* starts 0 2 3 / 0 2 4 5: tiles two apart meet */
    test_blend_ramp();

    float lat[4 * 4 * 3] = {0}, out[16 * 16 * 2];
    pt_error err = {0};
    CHECK(sd_decode_tiled(dec_pointwise, NULL, lat, 4, 4, 3, 4, 2, 4, 3, out, NULL, &err) ==
              PT_ERR_ARG && err.msg[0],
          "overlap above half a tile: an error");
    CHECK(sd_decode_tiled(dec_pointwise, NULL, lat, 0, 4, 3, 4, 2, 4, 1, out, NULL, &err) ==
              PT_ERR_ARG,
          "empty latent: an error");
    memset(&err, 0, sizeof err);
    CHECK(sd_decode_tiled(dec_fail, NULL, lat, 4, 4, 3, 4, 2, 2, 1, out, NULL, &err) == PT_ERR_IO &&
              strstr(err.msg, "tile failed"),
          "a failing tile's status and message come back: %s", err.msg);
    return check_done("sd_vae_tiles");
}
