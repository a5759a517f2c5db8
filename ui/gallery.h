/*
 * gallery.h — the pictures made this session (studio and /imagine), with
 * the settings that made them. Oldest first; at most PT_GALLERY_MAX are
 * kept (the oldest is dropped, and a chat message that showed it then
 * shows a placeholder). UI thread only.
 */
#ifndef PETREL_UI_GALLERY_H
#define PETREL_UI_GALLERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "imgset.h"

#define PT_GALLERY_MAX 48

typedef struct pt_picture {
    uint32_t id;             /* 1, 2, 3, ... never reused: picture slot / kitty id */
    uint64_t gen;            /* pixel generation (picture.h) */
    uint8_t *rgb;            /* w x h RGB8, stride 3 * w, owned */
    int w, h;
    pt_img_settings set;     /* what made it (the model's defaults filled in) */
    double seconds;          /* generation time */
    char saved[4200];        /* the PNG it was saved to, "" if not yet */
} pt_picture;

typedef struct pt_gallery {
    pt_picture *items;
    int n, cap;
    uint32_t next_id;
} pt_gallery;

void pt_gallery_init(pt_gallery *g);
void pt_gallery_free(pt_gallery *g);
/* Add a picture, taking rgb (freed here on failure too); returns its
 * index, or -1 when out of memory. */
int pt_gallery_add(pt_gallery *g, uint8_t *rgb, int w, int h, const pt_img_settings *s,
                   double seconds, uint64_t gen);
/* The picture with that id, or NULL when gone. */
pt_picture *pt_gallery_find(pt_gallery *g, uint32_t id);

/* Save picture p as a PNG with the A1111 "parameters" chunk into
 * dir/images/ (made when missing) as petrel-ID-SEED.png, atomically (the
 * final name never holds a partial file). model_name goes in the
 * parameters. true with the path in p->saved; false with a one-line
 * reason in why. */
bool pt_gallery_save(pt_picture *p, const char *dir, const char *model_name, char *why,
                     size_t why_cap);

#endif
