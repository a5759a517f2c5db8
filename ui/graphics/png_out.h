/*
 * png_out.h — PNG files of `petrel imagine` and of the studio: the image encoded by
 * stb_image_write with the generation parameters in a text chunk, and
 * written so that the final name only ever holds a whole file.
 */
#ifndef PETREL_PNG_OUT_H
#define PETREL_PNG_OUT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "petrel.h"

/* img as a PNG in memory (*out malloc'd, *len bytes) with one text chunk
 * keyword = text right after IHDR: tEXt when text is ASCII, else iTXt
 * (UTF-8, uncompressed), as PIL writes A1111's "parameters". The keyword
 * is 1..79 printable Latin-1 bytes. false when memory runs out or the
 * image or keyword is unusable. */
bool png_encode(const pt_image *img, const char *keyword, const char *text, unsigned char **out,
                size_t *len);

/* Write data to path. A regular file (or a new one) is written as a
 * temporary file in path's directory, fsync'd, and renamed over path, so
 * path never holds a partial file; the temporary file is removed on any
 * failure, and when *cancel is set before the rename (then false with
 * *cancelled = true). Anything else that exists at path (a device such as
 * /dev/stdout or /dev/full, a FIFO) is opened and written in place. false
 * with a one-line reason in why on failure. */
bool write_file_atomic(const char *path, const void *data, size_t len, const atomic_bool *cancel,
                       bool *cancelled, char *why, size_t why_cap);

#endif
