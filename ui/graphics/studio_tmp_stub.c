/*
 * studio_tmp_stub.c — TEMPORARY stand-in for the picture layer of branch
 * `gfx` (probe.c, cells.c, ...), so the studio builds and runs before that
 * branch lands. It implements graphics.h crudely: no terminal queries, and
 * every protocol draws half-block character art. Deleted when `gfx` is
 * merged; nothing else may depend on it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graphics.h"

static const char *const names[] = {"auto", "none", "symbols", "sixel", "kitty", "iterm2"};

bool pt_gfx_parse(const char *name, pt_gfx_proto *out) {
    for (int i = 0; i < 6; i++)
        if (name && !strcmp(name, names[i])) { *out = (pt_gfx_proto)i; return true; }
    return false;
}

const char *pt_gfx_name(pt_gfx_proto p) { return (unsigned)p < 6 ? names[p] : "?"; }

void pt_gfx_probe(int fd, pt_gfx_proto want, int timeout_ms, pt_term_caps *caps) {
    (void)timeout_ms;
    memset(caps, 0, sizeof *caps);
    caps->proto = want == PT_GFX_AUTO ? (isatty(fd) ? PT_GFX_SYMBOLS : PT_GFX_NONE) : want;
    caps->color_depth = 24;
    caps->cell_from = "default";
}

void pt_gfx_describe(const pt_term_caps *caps, char *out, size_t cap) {
    snprintf(out, cap, "graphics: %s\n", pt_gfx_name(caps->proto));
}

void pt_gfx_buf_append(pt_gfx_buf *b, const void *p, size_t n) {
    if (b->oom) return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d) { b->oom = true; return; }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

void pt_gfx_buf_free(pt_gfx_buf *b) { free(b->data); memset(b, 0, sizeof *b); }

static void putf(pt_gfx_buf *b, const char *fmt, int x, int y, int z) {
    char s[64];
    int n = snprintf(s, sizeof s, fmt, x, y, z);
    pt_gfx_buf_append(b, s, (size_t)n);
}

bool pt_gfx_encode(const pt_term_caps *caps, const pt_gfx_image *img, int cols, int rows,
                   uint32_t id, pt_gfx_buf *out, int *used_cols, int *used_rows) {
    (void)id;
    if (!img || !img->rgb || img->w <= 0 || img->h <= 0 || cols <= 0 || rows <= 0) return false;
    /* cells are 1:2, a half block is square: fit w x h into cols x 2*rows */
    int uc = cols, ur = (int)((long)img->h * cols / img->w + 1) / 2;
    if (ur > rows) { ur = rows; uc = (int)((long)img->w * 2 * rows / img->h); }
    if (uc < 1) uc = 1;
    if (ur < 1) ur = 1;
    if (used_cols) *used_cols = uc;
    if (used_rows) *used_rows = ur;
    if (caps->proto == PT_GFX_NONE) return true;
    for (int r = 0; r < ur; r++) {
        for (int c = 0; c < uc; c++) {
            int x = c * img->w / uc;
            int yt = (2 * r) * img->h / (2 * ur), yb = (2 * r + 1) * img->h / (2 * ur);
            const uint8_t *t = img->rgb + (size_t)yt * (size_t)img->stride + (size_t)x * 3;
            const uint8_t *bm = img->rgb + (size_t)yb * (size_t)img->stride + (size_t)x * 3;
            putf(out, "\033[38;2;%d;%d;%dm", t[0], t[1], t[2]);
            putf(out, "\033[48;2;%d;%d;%dm\xe2\x96\x80", bm[0], bm[1], bm[2]);
        }
        pt_gfx_buf_append(out, "\033[0m", 4);
        if (r + 1 < ur) putf(out, "\033[%dD\033[%dB", uc, 1, 0);
    }
    return !out->oom;
}

void pt_gfx_erase(const pt_term_caps *caps, uint32_t id, pt_gfx_buf *out) {
    if (caps->proto != PT_GFX_KITTY) return;
    if (id) putf(out, "\033_Ga=d,d=I,i=%u\033\\", (int)id, 0, 0);
    else pt_gfx_buf_append(out, "\033_Ga=d,d=A\033\\", 13);
}
