/*
 * fuzz_gfx_reply.c — the terminal's replies to the graphics probe
 * (ui/graphics/reply.c), fed in pieces whose sizes come from the input,
 * then turned into capabilities (decide.c) under a few environments,
 * described, and used to encode a small picture: a terminal that lies
 * about its cell size, colour registers or sixel geometry must not make
 * the encoders misbehave.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decide.h"
#include "gfx_internal.h"
#include "reply.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    /* byte 0: how the replies are cut into reads (1..16 bytes), and the env */
    const size_t piece = (size_t)(data[0] & 15) + 1;
    const int variant = data[0] >> 4;
    data++;
    size--;
    pt_gfx_replies r;
    pt_gfx_replies_init(&r);
    for (size_t at = 0; at < size; at += piece)
        pt_gfx_replies_feed(&r, (const char *)data + at, size - at < piece ? size - at : piece);
    if (memchr(r.version, '\033', sizeof r.version)) abort(); /* never kept raw */

    pt_gfx_env env = {.tty = true, .term = variant & 1 ? "xterm-256color" : "xterm",
                      .tmux = variant & 2, .passthrough = variant & 4, .kitty_window = variant & 8,
                      .ws_cols = 1 + (variant & 7) * 30, .ws_rows = 1 + variant * 3,
                      .ws_xpixel = variant * 100, .ws_ypixel = variant * 90};
    pt_term_caps caps;
    pt_gfx_decide(&r, &env, PT_GFX_AUTO, &caps);
    if (caps.proto == PT_GFX_AUTO) abort();
    char text[2048];
    pt_gfx_describe(&caps, text, sizeof text);

    /* a 5x3 picture in the grid the probe found, by the protocol chosen */
    static const uint8_t px[5 * 3 * 3] = {10, 200, 30, 40, 50, 60, 255, 0, 0, 0, 255, 0, 0, 0, 255,
                                           1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                                           200, 100, 50, 25, 12, 6, 3, 1, 0, 90, 90, 90, 128, 64, 32};
    const pt_gfx_image img = {.rgb = px, .w = 5, .h = 3, .stride = 15};
    pt_gfx_buf out = {0};
    int uc = 0, ur = 0;
    /* a modest block: the grid can be large, the work per input should not be */
    const int cols = caps.cols < 24 ? caps.cols : 24, rows = caps.rows < 12 ? caps.rows : 12;
    if (pt_gfx_encode(&caps, &img, cols, rows, 1, &out, &uc, &ur) && (uc > cols || ur > rows || uc < 1 || ur < 1))
        abort();
    pt_gfx_erase(&caps, 1, &out);
    pt_gfx_buf_free(&out);
    return 0;
}
