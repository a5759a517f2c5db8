/*
 * picture_file.h — PNG and JPEG files (and the other formats stb_image
 * reads: BMP, GIF's first frame, PSD, TGA, PNM) decoded to RGB8 for
 * `petrel show`. A corrupt or hostile file is an error with a reason,
 * never a crash or a huge allocation.
 */
#ifndef PETREL_UI_GFX_PICTURE_FILE_H
#define PETREL_UI_GFX_PICTURE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest file read, and largest picture decoded: pixels per side, and
 * pixels in all (2^25, 32 Mpixel: a 48 Mpixel phone photo is refused, a
 * 24 Mpixel one is not). Decoding holds the picture up to three times at
 * 4 bytes a pixel (stb's GIF reader: canvas, background, history), so the
 * cap bounds it at about 400 MB; a side cap alone would let 16384 x 16384
 * claim 3 GB. */
#define PT_PICTURE_MAX_FILE (256u << 20)
#define PT_PICTURE_MAX_SIDE 16384
#define PT_PICTURE_MAX_PIXELS (1u << 25)

typedef struct pt_picture {
    uint8_t *rgb;  /* malloc'd RGB8, stride w * 3 */
    int w, h;
} pt_picture;

/* Decode the bytes of an image file; false with a one-line reason in why. */
bool pt_picture_decode(const void *data, size_t n, pt_picture *out, char *why, size_t why_cap);
/* Read and decode path (a regular file or anything readable). */
bool pt_picture_load(const char *path, pt_picture *out, char *why, size_t why_cap);
void pt_picture_free(pt_picture *p);

/* false when data is a PNG whose compressed pixel data zlib refuses or
 * that inflates to more bytes than its header's size can use (png_check.c:
 * stb_image's own inflater would try to grow without bound); true for a
 * plausible PNG and for anything else. */
bool pt_png_check(const uint8_t *data, size_t n);

#endif
