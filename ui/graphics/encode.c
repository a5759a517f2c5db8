/*
 * encode.c — pt_gfx_encode and pt_gfx_erase: the fit, the scaling and
 * the choice of encoder by protocol, and tmux's wrapper around what goes
 * to the outer terminal.
 */
#include <stdio.h>
#include <stdlib.h>

#include "gfx_internal.h"

/* PT_GFX_NONE: one line of text in place of the picture, cut to cols. */
static void placeholder(const pt_gfx_image *img, int cols, pt_gfx_buf *out, int *used_cols) {
    char text[64];
    int n = snprintf(text, sizeof text, "[picture %dx%d]", img->w, img->h);
    if (n > cols) n = cols;
    pt_gfx_buf_append(out, text, (size_t)n);
    *used_cols = n;
}

bool pt_gfx_encode(const pt_term_caps *caps, const pt_gfx_image *img, int cols, int rows,
                   uint32_t id, pt_gfx_buf *out, int *used_cols, int *used_rows) {
    int uc = 0, ur = 0;
    if (used_cols) *used_cols = 0;
    if (used_rows) *used_rows = 0;
    if (!caps || !img || !out || !img->rgb || img->w <= 0 || img->h <= 0 || cols <= 0 || rows <= 0 ||
        img->w > PT_GFX_MAX_SIDE * 4 || img->h > PT_GFX_MAX_SIDE * 4 || img->stride < img->w * 3)
        return false;
    if (caps->proto == PT_GFX_NONE || caps->proto == PT_GFX_AUTO) {
        placeholder(img, cols, out, &uc);
        ur = 1;
    } else {
        const bool sixel = caps->proto == PT_GFX_SIXEL;
        pt_gfx_fit fit;
        if (!pt_gfx_fit_box(img->w, img->h, cols, rows, caps->cell_w, caps->cell_h,
                            sixel ? caps->sixel_max_w : 0, sixel ? caps->sixel_max_h : 0, &fit))
            return false;
        if (caps->proto == PT_GFX_SYMBOLS) {
            if (!pt_gfx_encode_cells(img, &fit, caps->color_depth, out)) return false;
        } else {
            uint8_t *px = pt_gfx_scale(img, fit.px_w, fit.px_h);
            if (!px) return false;
            pt_gfx_buf seq = {0};
            bool ok = sixel ? pt_gfx_encode_sixel(px, &fit, caps->sixel_colors, &seq) :
                      caps->proto == PT_GFX_KITTY ? pt_gfx_encode_kitty(px, &fit, id, &seq) :
                      pt_gfx_encode_iterm2(px, &fit, &seq);
            free(px);
            if (ok && caps->wrap_tmux) pt_gfx_tmux_wrap(seq.data, seq.len, out);
            else if (ok) pt_gfx_buf_append(out, seq.data, seq.len);
            pt_gfx_buf_free(&seq);
            if (!ok) return false;
        }
        uc = fit.cols;
        ur = fit.rows;
    }
    if (out->oom) return false;
    if (used_cols) *used_cols = uc;
    if (used_rows) *used_rows = ur;
    return true;
}

void pt_gfx_erase(const pt_term_caps *caps, uint32_t id, pt_gfx_buf *out) {
    if (!caps || caps->proto != PT_GFX_KITTY) return;
    /* kitty "Deleting images": d=I deletes image id (its placements and,
     * upper case, its data too); d=A every image on screen, data freed */
    char cmd[64];
    int n = id ? snprintf(cmd, sizeof cmd, "\033_Ga=d,d=I,i=%u,q=2\033\\", (unsigned)id) :
                 snprintf(cmd, sizeof cmd, "\033_Ga=d,d=A,q=2\033\\");
    if (caps->wrap_tmux) pt_gfx_tmux_wrap(cmd, (size_t)n, out);
    else pt_gfx_buf_append(out, cmd, (size_t)n);
}
