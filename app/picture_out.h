/*
 * picture_out.h — pictures at the cursor for the CLI (`petrel show`,
 * `imagine --show`, `info --terminal`): the probe on the controlling
 * terminal and the drawing of one picture below the cursor.
 */
#ifndef PETREL_PICTURE_OUT_H
#define PETREL_PICTURE_OUT_H

#include <stdbool.h>
#include <stdio.h>

#include "graphics.h"

/* Probe the controlling terminal (/dev/tty) when standard output is a
 * terminal, or always when any_stdout (info --terminal describes the
 * terminal even when its output is piped); otherwise fill caps without
 * asking anything (auto then gives NONE; a forced protocol is kept). */
void picture_probe(pt_gfx_proto want, bool any_stdout, pt_term_caps *caps);

/* Draw img at the cursor on out, scaled to the terminal's width and at
 * most its height minus 2 rows; the cursor ends at the start of the line
 * below the picture. False (and nothing written) when encoding failed. */
bool picture_print(const pt_term_caps *caps, const pt_gfx_image *img, FILE *out);

#endif
