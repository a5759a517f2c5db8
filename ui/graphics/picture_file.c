/*
 * picture_file.c — image files through stb_image (libstb). The header is
 * looked at first (stbi_info_from_memory) so a file that claims a giant
 * size is refused before anything is allocated for it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stb_image.h>

#include "picture_file.h"

bool pt_picture_decode(const void *data, size_t n, pt_picture *out, char *why, size_t why_cap) {
    memset(out, 0, sizeof *out);
    if (n == 0) {
        snprintf(why, why_cap, "empty file");
        return false;
    }
    if (n > PT_PICTURE_MAX_FILE) {
        snprintf(why, why_cap, "file too large (over %u MiB)", PT_PICTURE_MAX_FILE >> 20);
        return false;
    }
    int w, h, comp;
    if (!stbi_info_from_memory(data, (int)n, &w, &h, &comp)) {
        /* stb tries every format and reports only "unknown image type":
         * name the format from its signature when it has one */
        const unsigned char *b = data;
        if (n >= 8 && !memcmp(b, "\x89PNG\r\n\x1a\n", 8))
            snprintf(why, why_cap, "corrupt PNG header (or over 2^30 bytes of pixels: too large)");
        else if (n >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff)
            snprintf(why, why_cap, "corrupt JPEG header");
        else
            snprintf(why, why_cap, "not a picture petrel can read (PNG, JPEG, BMP, GIF, TGA, PNM)");
        return false;
    }
    if (w <= 0 || h <= 0 || w > PT_PICTURE_MAX_SIDE || h > PT_PICTURE_MAX_SIDE) {
        snprintf(why, why_cap, "picture of %dx%d pixels is too large (at most %d per side)", w, h,
                 PT_PICTURE_MAX_SIDE);
        return false;
    }
    if ((uint64_t)w * (uint64_t)h > PT_PICTURE_MAX_PIXELS) {
        snprintf(why, why_cap, "picture of %dx%d pixels is too large (at most %u Mpixel)", w, h,
                 PT_PICTURE_MAX_PIXELS >> 20);
        return false;
    }
    if (!pt_png_check(data, n)) {
        snprintf(why, why_cap, "corrupt PNG (its compressed pixel data is damaged or too long)");
        return false;
    }
    int dw, dh;
    uint8_t *rgb = stbi_load_from_memory(data, (int)n, &dw, &dh, &comp, 3);
    if (!rgb) {
        const char *reason = stbi_failure_reason();
        snprintf(why, why_cap, "corrupt picture (%s)", reason ? reason : "cannot decode");
        /* stb puts the file's own bytes in some reasons ("XXXX PNG chunk not
         * known" with the chunk's type): shown as '?', never sent raw */
        for (char *c = why; *c; c++)
            if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f) *c = '?';
        return false;
    }
    if (dw != w || dh != h) { /* the header lied about the size */
        stbi_image_free(rgb);
        snprintf(why, why_cap, "corrupt picture (size changed while decoding)");
        return false;
    }
    out->rgb = rgb;
    out->w = w;
    out->h = h;
    return true;
}

bool pt_picture_load(const char *path, pt_picture *out, char *why, size_t why_cap) {
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, why_cap, "%s", strerror(errno));
        return false;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    bool ok = buf != NULL, too_big = false;
    while (ok) {
        if (n == cap) {
            if (cap > PT_PICTURE_MAX_FILE) {
                too_big = true;
                break;
            }
            uint8_t *grown = realloc(buf, cap * 2);
            if (!grown) {
                ok = false;
                break;
            }
            buf = grown;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (!ok) snprintf(why, why_cap, "out of memory reading the file");
    else if (err) snprintf(why, why_cap, "%s", strerror(err));
    else if (too_big) snprintf(why, why_cap, "file too large (over %u MiB)", PT_PICTURE_MAX_FILE >> 20);
    else ok = pt_picture_decode(buf, n, out, why, why_cap);
    if (err || too_big) ok = false;
    free(buf);
    return ok;
}

void pt_picture_free(pt_picture *p) {
    if (p->rgb) stbi_image_free(p->rgb);
    memset(p, 0, sizeof *p);
}
