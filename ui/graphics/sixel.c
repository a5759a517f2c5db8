/*
 * sixel.c — the sixel encoder, through libsixel: a palette of as many
 * colours as the terminal has registers (XTSMGRAPHICS; 256 when it did not
 * say, libsixel's maximum), built by median cut over the whole histogram
 * (SIXEL_QUALITY_HIGH), boxes split on their longest side in RGB
 * (SIXEL_LARGE_NORM), each box's colour the average of its pixels
 * (SIXEL_REP_AVERAGE_PIXELS). These were the best of libsixel's choices
 * (3 split methods x 4 representative colours x 2 qualities x 8
 * diffusers) on test_gfx_encode's picture, by the mean error after a 3x3
 * blur (what the eye sees of a dither), at 256 and at 16 registers.
 * Diffusion as libsixel's own "auto" picks it: Floyd-Steinberg above 16
 * registers (3.3 blurred, 7.6 raw, against Atkinson's 3.7 and 5.0:
 * Atkinson drops 1/4 of the error and left a staircase of bands on a
 * smooth gradient in xterm), Atkinson at 16 or fewer (7.8 blurred, FS 10%
 * higher); positional dithers were 30-50% worse everywhere.
 *
 * Output (DEC STD 070 / VT340 sixel): DECSC, then libsixel's
 * DCS P1;P2;P3 q "1;1;W;H #palette... sixel data ST (7-bit: ESC P ...
 * ESC \), then DECRC: the cursor ends where it started whatever the
 * terminal's sixel-scrolling mode does with it.
 */
#include <sixel.h>
#include <stdlib.h>
#include <string.h>

#include "gfx_internal.h"

/* libsixel's output callback: everything goes to the frame buffer. */
static int put(char *data, int size, void *priv) {
    if (size > 0) pt_gfx_buf_append(priv, data, (size_t)size);
    return size;
}

bool pt_gfx_encode_sixel(const uint8_t *rgb, const pt_gfx_fit *fit, int colors, pt_gfx_buf *out) {
    if (colors <= 0 || colors > SIXEL_PALETTE_MAX) colors = SIXEL_PALETTE_MAX;
    if (colors < 2) colors = 2;
    /* libsixel takes non-const pixels; it does not write them, but a copy
     * keeps the caller's buffer out of reach */
    const size_t n = (size_t)fit->px_w * (size_t)fit->px_h * 3;
    unsigned char *px = malloc(n);
    if (!px) return false;
    memcpy(px, rgb, n);
    sixel_dither_t *dither = NULL;
    sixel_output_t *output = NULL;
    pt_gfx_buf body = {0};
    bool ok = false;
    if (SIXEL_FAILED(sixel_dither_new(&dither, colors, NULL))) goto done;
    if (SIXEL_FAILED(sixel_dither_initialize(dither, px, fit->px_w, fit->px_h, SIXEL_PIXELFORMAT_RGB888,
                                             SIXEL_LARGE_NORM, SIXEL_REP_AVERAGE_PIXELS,
                                             SIXEL_QUALITY_HIGH)))
        goto done;
    sixel_dither_set_diffusion_type(dither, colors > 16 ? SIXEL_DIFFUSE_FS : SIXEL_DIFFUSE_ATKINSON);
    if (SIXEL_FAILED(sixel_output_new(&output, put, &body, NULL))) goto done;
    sixel_output_set_8bit_availability(output, 0); /* 7-bit: ESC P / ESC \, safe through ssh and tmux */
    if (SIXEL_FAILED(sixel_encode(px, fit->px_w, fit->px_h, 3, dither, output))) goto done;
    if (body.oom) goto done;
    pt_gfx_buf_append(out, "\0337", 2);
    pt_gfx_buf_append(out, body.data, body.len);
    pt_gfx_buf_append(out, "\0338", 2);
    ok = !out->oom;
done:
    if (output) sixel_output_unref(output);
    if (dither) sixel_dither_unref(dither);
    pt_gfx_buf_free(&body);
    free(px);
    return ok;
}
