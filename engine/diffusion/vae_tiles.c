/*
 * vae_tiles.c — tiled decoding with linear blending of the overlaps (see
 * vae_tiles.h for the geometry and the blend).
 */
#include "vae_tiles.h"

#include "status.h"

#include <stdlib.h>
#include <string.h>

int sd_tiles_plan(int n, int t, int o, int *start, int max_tiles) {
    if (n < 1 || t < 1 || o < 0 || 2 * o > t || max_tiles < 1) return 0;
    if (n <= t) {
        start[0] = 0;
        return 1;
    }
    int s = t - o;
    int k = (n - t + s - 1) / s + 1;
    if (k > max_tiles) return 0;
    for (int i = 0; i < k; i++) start[i] = i * s < n - t ? i * s : n - t;
    return k;
}

/* Weight of tile i (of k, latent starts st[], length len each) at output
 * pixel p of the axis, scale output pixels per latent pixel: the product
 * of the rising and falling ramps of vae_tiles.h, 0 outside the tile. */
static float axis_weight(const int *st, int k, int len, int scale, int i, int p) {
    int a = st[i] * scale, b = (st[i] + len) * scale;
    if (p < a || p >= b) return 0.0f;
    float wgt = 1.0f;
    if (i > 0) { /* overlap with tile i - 1: [a, end of i - 1), rising */
        int e = (st[i - 1] + len) * scale;
        if (p < e) wgt *= ((float)(p - a) + 0.5f) / (float)(e - a);
    }
    if (i + 1 < k) { /* overlap with tile i + 1: [start of i + 1, b), falling */
        int s = st[i + 1] * scale;
        if (p >= s) wgt *= ((float)(b - p) - 0.5f) / (float)(b - s);
    }
    return wgt;
}

uint64_t sd_decode_tiled_bytes(int h, int w, int c_lat, int scale, int c_out, int tile) {
    if (h < 1 || w < 1 || tile < 1) return 0;
    uint64_t th = (uint64_t)(h < tile ? h : tile), tw = (uint64_t)(w < tile ? w : tile);
    uint64_t H = (uint64_t)h * scale, W = (uint64_t)w * scale;
    /* tl, to; wy, sum_y, wx, sum_x; the two plans */
    return (th * tw * (uint64_t)c_lat + th * tw * (uint64_t)scale * scale * c_out + 2 * H + 2 * W) *
               sizeof(float) +
           sizeof(int) * (uint64_t)(h + w);
}

pt_status sd_decode_tiled(sd_tile_decode_fn fn, void *ctx, const float *lat, int h, int w,
                          int c_lat, int scale, int c_out, int tile, int overlap, float *out,
                          uint64_t *peak_bytes, pt_error *err) {
    if (peak_bytes) *peak_bytes = 0;
    if (h < 1 || w < 1 || c_lat < 1 || c_out < 1 || scale < 1)
        return pt_fail(err, PT_ERR_ARG, "tiled decode: bad size %dx%dx%d", h, w, c_lat);
    int *sy = malloc(sizeof(int) * (size_t)h), *sx = malloc(sizeof(int) * (size_t)w);
    if (!sy || !sx) {
        free(sy), free(sx);
        return pt_fail(err, PT_ERR_NOMEM, "tiled decode: out of memory");
    }
    int ky = sd_tiles_plan(h, tile, overlap, sy, h);
    int kx = sd_tiles_plan(w, tile, overlap, sx, w);
    if (ky == 0 || kx == 0) {
        free(sy), free(sx);
        return pt_fail(err, PT_ERR_ARG,
                       "tiled decode: tile %d with overlap %d (need tile >= 1, 0 <= 2 overlap <= tile)",
                       tile, overlap);
    }
    int th = h < tile ? h : tile, tw = w < tile ? w : tile;
    int64_t H = (int64_t)h * scale, W = (int64_t)w * scale;
    /* tl: the tile's latent, th x tw x c_lat; to: its output,
     * (scale th) x (scale tw) x c_out; wy / wx: one tile's axis weights
     * over the whole axis; sum_y / sum_x: the sums of all tiles' axis
     * weights (the normalizer sum_y[y] * sum_x[x]). */
    size_t tl_n = (size_t)th * (size_t)tw * (size_t)c_lat;
    size_t to_n = (size_t)th * (size_t)scale * (size_t)tw * (size_t)scale * (size_t)c_out;
    float *tl = malloc(tl_n * sizeof(float)), *to = malloc(to_n * sizeof(float));
    float *wy = malloc((size_t)H * sizeof(float)), *wx = malloc((size_t)W * sizeof(float));
    float *sum_y = calloc((size_t)H, sizeof(float)), *sum_x = calloc((size_t)W, sizeof(float));
    pt_status st = PT_OK;
    if (!tl || !to || !wy || !wx || !sum_y || !sum_x) {
        st = pt_fail(err, PT_ERR_NOMEM, "tiled decode: out of memory for a %dx%d tile", th, tw);
        goto done;
    }
    if (peak_bytes) *peak_bytes = sd_decode_tiled_bytes(h, w, c_lat, scale, c_out, tile);
    for (int i = 0; i < ky; i++)
        for (int64_t y = 0; y < H; y++) sum_y[y] += axis_weight(sy, ky, th, scale, i, (int)y);
    for (int i = 0; i < kx; i++)
        for (int64_t x = 0; x < W; x++) sum_x[x] += axis_weight(sx, kx, tw, scale, i, (int)x);
    memset(out, 0, (size_t)H * (size_t)W * (size_t)c_out * sizeof(float));

    for (int iy = 0; iy < ky; iy++) {
        for (int64_t y = 0; y < H; y++) wy[y] = axis_weight(sy, ky, th, scale, iy, (int)y);
        for (int ix = 0; ix < kx; ix++) {
            for (int64_t x = 0; x < W; x++) wx[x] = axis_weight(sx, kx, tw, scale, ix, (int)x);
            for (int y = 0; y < th; y++)
                memcpy(tl + (size_t)y * tw * c_lat,
                       lat + ((size_t)(sy[iy] + y) * w + sx[ix]) * c_lat,
                       (size_t)tw * c_lat * sizeof(float));
            st = fn(ctx, tl, th, tw, to, err);
            if (st != PT_OK) goto done;
            int64_t oy0 = (int64_t)sy[iy] * scale, ox0 = (int64_t)sx[ix] * scale;
            for (int64_t y = 0; y < (int64_t)th * scale; y++) {
                float *o = out + ((oy0 + y) * W + ox0) * c_out;
                const float *t = to + y * (int64_t)tw * scale * c_out;
                for (int64_t x = 0; x < (int64_t)tw * scale; x++) {
                    float wgt = wy[oy0 + y] * wx[ox0 + x];
                    for (int c = 0; c < c_out; c++) o[x * c_out + c] += wgt * t[x * c_out + c];
                }
            }
        }
    }
    for (int64_t y = 0; y < H; y++)
        for (int64_t x = 0; x < W; x++) {
            float inv = 1.0f / (sum_y[y] * sum_x[x]);
            for (int c = 0; c < c_out; c++) out[(y * W + x) * c_out + c] *= inv;
        }
done:
    free(sy), free(sx), free(tl), free(to), free(wy), free(wx), free(sum_y), free(sum_x);
    return st;
}

pt_status sd_decode_check_args(const char *what, int h, int w, int max_side, int tile, int overlap,
                               pt_error *err) {
    if (h < 1 || w < 1 || h > max_side || w > max_side)
        return pt_fail(err, PT_ERR_ARG, "%s decode: latent %dx%d (each side 1 .. %d)", what, h, w,
                       max_side);
    if (tile < 0 || overlap < 0 || (tile > 0 && 2 * overlap > tile))
        return pt_fail(err, PT_ERR_ARG, "%s decode: tile %d with overlap %d (need 0 <= 2 overlap <= tile)",
                       what, tile, overlap);
    return PT_OK;
}
