/*
 * fuzz_gfx_picture.c — the image loader of `petrel show`
 * (ui/graphics/picture_file.c, stb_image underneath): any bytes decode or
 * are refused with a one-line reason; a decoded picture is then scaled
 * (stb_image_resize) as show would scale it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gfx_internal.h"
#include "picture_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    pt_picture p;
    char why[256] = "";
    if (!pt_picture_decode(data, size, &p, why, sizeof why)) {
        if (!why[0] || strchr(why, '\n') || p.rgb) abort(); /* a reason, one line, nothing kept */
        return 0;
    }
    if (p.w < 1 || p.h < 1 || p.w > PT_PICTURE_MAX_SIDE || p.h > PT_PICTURE_MAX_SIDE ||
        (uint64_t)p.w * (uint64_t)p.h > PT_PICTURE_MAX_PIXELS)
        abort();
    const pt_gfx_image img = {.rgb = p.rgb, .w = p.w, .h = p.h, .stride = p.w * 3};
    pt_gfx_fit fit;
    if (pt_gfx_fit_box(p.w, p.h, 8, 4, 10, 20, 0, 0, &fit)) free(pt_gfx_scale(&img, fit.px_w, fit.px_h));
    pt_picture_free(&p);
    return 0;
}
