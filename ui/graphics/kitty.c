/*
 * kitty.c — the kitty graphics protocol encoder (kitty docs, "Terminal
 * graphics protocol"). One picture is one transmit-and-display command,
 * a=T, split into APC escape codes of at most PT_GFX_KITTY_CHUNK bytes of
 * base64 payload each:
 *   ESC _ G a=T,f=24,s=W,v=H,i=ID,q=2,C=1,c=COLS|r=ROWS,m=1 ; BASE64 ESC \
 *   ESC _ G m=1,q=2 ; BASE64 ESC \        (more chunks; the keys of the first
 *   ESC _ G m=0,q=2 ; BASE64 ESC \         only, "Remote client")
 * f=24: raw RGB, s x v pixels. i: the image id, so sending the same id
 * again replaces the picture. q=2: no replies at all (they would land in
 * the app's input). C=1: the cursor does not move. c= (or r=) gives the
 * width (height) in cells; kitty works out the other side from the
 * aspect, so the picture is never stretched by a cell size we guessed.
 */
#include <stdlib.h>

#include "gfx_internal.h"

bool pt_gfx_encode_kitty(const uint8_t *rgb, const pt_gfx_fit *fit, uint32_t id, pt_gfx_buf *out) {
    size_t len = 0;
    char *b64 = pt_gfx_base64(rgb, (size_t)fit->px_w * (size_t)fit->px_h * 3, &len);
    if (!b64) return false;
    for (size_t at = 0; at < len || at == 0; at += PT_GFX_KITTY_CHUNK) {
        size_t n = len - at < PT_GFX_KITTY_CHUNK ? len - at : PT_GFX_KITTY_CHUNK;
        const int more = at + n < len;
        if (at == 0) {
            pt_gfx_buf_printf(out, "\033_Ga=T,f=24,s=%d,v=%d,", fit->px_w, fit->px_h);
            if (id) pt_gfx_buf_printf(out, "i=%u,", (unsigned)id);
            if (fit->width_bound) pt_gfx_buf_printf(out, "c=%d,", fit->cols);
            else pt_gfx_buf_printf(out, "r=%d,", fit->rows);
            pt_gfx_buf_printf(out, "q=2,C=1,m=%d;", more);
        } else {
            pt_gfx_buf_printf(out, "\033_Gm=%d,q=2;", more);
        }
        pt_gfx_buf_append(out, b64 + at, n);
        pt_gfx_buf_append(out, "\033\\", 2);
        if (!len) break;
    }
    free(b64);
    return !out->oom;
}
