/*
 * picture.h — pictures among ncurses' cells: the "picture slots" of a
 * frame and what must be sent or wiped after it (the rules are in
 * picture.c, where they are kept).
 *
 * Per frame: pt_pic_begin, then pt_pic_place for each picture the frame
 * shows (its cells left blank by the drawing code), then pt_pic_flush
 * around ncurses' doupdate (picture_out.c): before it, the rows of slots
 * that went away or moved are marked for ncurses to repaint; after it,
 * the pictures that need it are encoded into one buffer and written in
 * one write(). pt_pic_plan is the pure part (which slots to send, which
 * to wipe), tested on its own.
 */
#ifndef PETREL_UI_PICTURE_H
#define PETREL_UI_PICTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "graphics/graphics.h"

#define PT_PIC_MAX_SLOTS 16

typedef struct pt_pic_rect { int y, x, h, w; } pt_pic_rect;   /* cells */

typedef struct pt_pic_slot {
    uint32_t id;          /* stable name of the picture (kitty image id); > 0 */
    pt_pic_rect rect;     /* the cells it may use: it never draws outside */
    /* the pixels to show (a crop of the picture when clipped): valid
     * until the frame's flush only, never kept past it */
    const uint8_t *rgb;
    int w, h, stride;
    /* changes whenever the pixels behind id change (a new preview step,
     * a new picture); compared instead of the pointer, which the
     * allocator may hand out again for other pixels */
    uint64_t gen;
} pt_pic_slot;

typedef struct pt_pic_layer {
    pt_pic_slot want[PT_PIC_MAX_SLOTS];   /* this frame's */
    int n_want;
    pt_pic_slot shown[PT_PIC_MAX_SLOTS];  /* on the terminal now (rgb not used) */
    int n_shown;
    bool all_stale;       /* resize, ^L, overlay or screen change: resend everything */
    unsigned long writes, bytes;  /* picture writes done and their bytes (tests, stats) */
} pt_pic_layer;

typedef struct pt_pic_plan {
    int send[PT_PIC_MAX_SLOTS];          /* indexes into want[] to encode and write */
    int n_send;
    pt_pic_slot wipe[PT_PIC_MAX_SLOTS];  /* shown slots gone or moved: delete / repaint */
    int n_wipe;
} pt_pic_plan;

void pt_pic_begin(pt_pic_layer *L);
/* Add a slot to this frame; false (ignored) when full or the rect is empty. */
bool pt_pic_place(pt_pic_layer *L, const pt_pic_slot *s);
/* Everything shown must be sent again (after a resize or a full repaint). */
void pt_pic_invalidate(pt_pic_layer *L);
/* Which slots of want[] need sending and which shown slots need wiping. */
void pt_pic_plan_frame(const pt_pic_layer *L, pt_pic_plan *p);
/* After the plan was carried out: shown = want. */
void pt_pic_commit(pt_pic_layer *L);

/* picture_out.c: carry the plan out around doupdate (curses and the tty). */
void pt_pic_before_update(pt_pic_layer *L, const pt_term_caps *caps, pt_pic_plan *p);
void pt_pic_after_update(pt_pic_layer *L, const pt_term_caps *caps, const pt_pic_plan *p);
/* Forget and erase every picture (leaving the app: kitty images deleted). */
void pt_pic_clear(pt_pic_layer *L, const pt_term_caps *caps);

#endif
