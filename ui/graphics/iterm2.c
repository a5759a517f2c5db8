/*
 * iterm2.c — iTerm2's inline images (iTerm2 docs, "Inline Images
 * Protocol"), also drawn by WezTerm, mintty and others:
 *   ESC ] 1337 ; File=inline=1;size=BYTES;width=COLS;height=ROWS;
 *       preserveAspectRatio=1 : BASE64-OF-A-PNG BEL
 * width and height in cells (a bare number means cells), the picture
 * fitted inside them keeping its aspect. The PNG is made in memory by
 * stb_image_write. The terminal moves the cursor past the picture as if it
 * were text: DECSC before and DECRC after put it back.
 */
#include <stdlib.h>

#include <stb_image_write.h>

#include "gfx_internal.h"

static void put_png(void *ctx, void *data, int size) {
    if (size > 0) pt_gfx_buf_append(ctx, data, (size_t)size);
}

bool pt_gfx_encode_iterm2(const uint8_t *rgb, const pt_gfx_fit *fit, pt_gfx_buf *out) {
    pt_gfx_buf png = {0};
    if (!stbi_write_png_to_func(put_png, &png, fit->px_w, fit->px_h, 3, rgb, fit->px_w * 3) || png.oom) {
        pt_gfx_buf_free(&png);
        return false;
    }
    size_t len = 0;
    char *b64 = pt_gfx_base64(png.data, png.len, &len);
    if (b64) {
        pt_gfx_buf_printf(out,
                          "\0337\033]1337;File=inline=1;size=%zu;width=%d;height=%d;"
                          "preserveAspectRatio=1:",
                          png.len, fit->cols, fit->rows);
        pt_gfx_buf_append(out, b64, len);
        pt_gfx_buf_append(out, "\a\0338", 3);
    }
    free(b64);
    pt_gfx_buf_free(&png);
    return b64 && !out->oom;
}
