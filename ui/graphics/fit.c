/*
 * fit.c — a picture's size in a block of cells, and the scaler that
 * makes it that size (stb_image_resize from libstb, with the filters
 * applied in linear light).
 */
#include <stdlib.h>

#include <stb_image_resize.h>

#include "gfx_internal.h"

bool pt_gfx_fit_box(int img_w, int img_h, int cols, int rows, int cell_w, int cell_h, int max_w,
                    int max_h, pt_gfx_fit *fit) {
    if (img_w <= 0 || img_h <= 0 || cols <= 0 || rows <= 0) return false;
    if (cell_w <= 0 || cell_h <= 0 || cell_w > PT_GFX_MAX_CELL_PX || cell_h > PT_GFX_MAX_CELL_PX) {
        cell_w = PT_GFX_DEFAULT_CELL_W;
        cell_h = PT_GFX_DEFAULT_CELL_H;
    }
    if (cols > PT_GFX_MAX_CELLS) cols = PT_GFX_MAX_CELLS;
    if (rows > PT_GFX_MAX_CELLS) rows = PT_GFX_MAX_CELLS;
    /* the box in pixels, within the terminal's sixel limit and ours */
    long box_w = (long)cols * cell_w, box_h = (long)rows * cell_h;
    long lim_w = max_w > 0 && max_w < PT_GFX_MAX_SIDE ? max_w : PT_GFX_MAX_SIDE;
    long lim_h = max_h > 0 && max_h < PT_GFX_MAX_SIDE ? max_h : PT_GFX_MAX_SIDE;
    if (box_w > lim_w) box_w = lim_w;
    if (box_h > lim_h) box_h = lim_h;
    const double sx = (double)box_w / img_w, sy = (double)box_h / img_h;
    fit->width_bound = sx <= sy;
    const double s = fit->width_bound ? sx : sy;
    long w = fit->width_bound ? box_w : (long)(img_w * s + 0.5);
    long h = fit->width_bound ? (long)(img_h * s + 0.5) : box_h;
    fit->px_w = (int)(w < 1 ? 1 : w > box_w ? box_w : w);
    fit->px_h = (int)(h < 1 ? 1 : h > box_h ? box_h : h);
    fit->cell_w = cell_w;
    fit->cell_h = cell_h;
    fit->cols = (fit->px_w + cell_w - 1) / cell_w;
    fit->rows = (fit->px_h + cell_h - 1) / cell_h;
    return true;
}

uint8_t *pt_gfx_scale(const pt_gfx_image *img, int w, int h) {
    if (!img || !img->rgb || img->w <= 0 || img->h <= 0 || w <= 0 || h <= 0) return NULL;
    uint8_t *out = malloc((size_t)w * (size_t)h * 3);
    if (!out) return NULL;
    /* sRGB-aware: averaging in linear light keeps thin bright lines from
     * darkening; edge mode clamp (the picture does not wrap around) */
    if (!stbir_resize_uint8_srgb_edgemode(img->rgb, img->w, img->h, img->stride, out, w, h, w * 3, 3,
                                          STBIR_ALPHA_CHANNEL_NONE, 0, STBIR_EDGE_CLAMP)) {
        free(out);
        return NULL;
    }
    return out;
}
