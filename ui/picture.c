/*
 * picture.c — bookkeeping of the picture slots (picture.h).
 *
 * THE RULES OF LIVING WITH NCURSES. ncurses owns every cell of the screen
 * and repaints whatever differs between its idea of the screen (curscr)
 * and the new frame (stdscr); it knows nothing of our pixels. So:
 *
 *  1. A picture is drawn only into a "slot": a rectangle of cells that the
 *     frame left blank (erase() and nothing drawn there). ncurses then
 *     believes those cells hold spaces and, as long as the next frame also
 *     leaves them blank, never writes over them.
 *  2. Pictures are written AFTER doupdate, so ncurses' output of the frame
 *     never comes after (over) them, all of a frame's pictures in ONE
 *     write() of a pt_gfx_buf (no flicker, no interleaving with curses).
 *     Afterwards the cursor is put back where ncurses left it (curscr's
 *     cursor) with normal attributes, as doupdate leaves the terminal, so
 *     ncurses' idea of the terminal stays true. (Not DECSC/DECRC around
 *     the whole write: the encoders use that one slot themselves.)
 *  3. ncurses must never move what is on screen by itself: idlok, idcok
 *     and scrollok are off (term.c), so it never scrolls a region nor
 *     inserts/deletes lines or characters (which would carry our pixels
 *     along or leave them behind); it repaints cells instead.
 *  4. A slot is (re)sent when it is new, when its rectangle, its picture
 *     id or its generation (the pixels behind the id) changed, and when
 *     everything is stale: after a resize, a ^L full repaint, an overlay
 *     or a screen switch (pt_pic_invalidate; an overlay simply places no
 *     slots, so the slots under it count as gone and come back as new).
 *  5. A slot that went away or moved is wiped: kitty images are deleted by
 *     id (pt_gfx_erase); for sixel, iTerm2 and character art the old
 *     rectangle's cells are erased with ECH just before doupdate (text
 *     written over sixel pixels only hides them: xterm paints them again
 *     on the next expose; an erase removes them), inside DECSC/DECRC so
 *     ncurses' cursor stays where it believes, and the rows are marked for
 *     ncurses to repaint entirely (wredrawln) in that doupdate. So a frame
 *     that wipes is two writes (the erase, then ncurses and the pictures);
 *     every other frame's pictures are one.
 *  6. A picture never overflows its rectangle: the encoder fits the image
 *     into the rect's cells, and a picture clipped by the transcript's
 *     edge is cropped to the visible rows before it is placed.
 *  7. Slot pixels are borrowed for one frame: want[].rgb is used during the
 *     flush only; shown[] keeps the identity (id, rect, gen) for the next
 *     frame's comparison, never the pixels.
 */
#include "picture.h"

#include <string.h>

void pt_pic_begin(pt_pic_layer *L) { L->n_want = 0; }

bool pt_pic_place(pt_pic_layer *L, const pt_pic_slot *s) {
    if (L->n_want >= PT_PIC_MAX_SLOTS || s->rect.w <= 0 || s->rect.h <= 0 || !s->rgb || s->w <= 0 ||
        s->h <= 0)
        return false;
    L->want[L->n_want++] = *s;
    return true;
}

void pt_pic_invalidate(pt_pic_layer *L) { L->all_stale = true; }

static bool same_rect(pt_pic_rect a, pt_pic_rect b) {
    return a.y == b.y && a.x == b.x && a.h == b.h && a.w == b.w;
}

static const pt_pic_slot *find(const pt_pic_slot *v, int n, uint32_t id) {
    for (int i = 0; i < n; i++)
        if (v[i].id == id) return &v[i];
    return NULL;
}

void pt_pic_plan_frame(const pt_pic_layer *L, pt_pic_plan *p) {
    memset(p, 0, sizeof *p);
    for (int i = 0; i < L->n_shown; i++) {
        const pt_pic_slot *old = &L->shown[i];
        const pt_pic_slot *now = find(L->want, L->n_want, old->id);
        /* gone, or moved/resized: its old cells must be cleaned; a picture
         * redrawn in place over the same cells covers its old self */
        if (!now || !same_rect(now->rect, old->rect) || L->all_stale) p->wipe[p->n_wipe++] = *old;
    }
    for (int i = 0; i < L->n_want; i++) {
        const pt_pic_slot *now = &L->want[i];
        const pt_pic_slot *old = find(L->shown, L->n_shown, now->id);
        if (L->all_stale || !old || !same_rect(now->rect, old->rect) || now->gen != old->gen)
            p->send[p->n_send++] = i;
    }
}

void pt_pic_commit(pt_pic_layer *L) {
    for (int i = 0; i < L->n_want; i++) {
        L->shown[i] = L->want[i];
        L->shown[i].rgb = NULL;   /* rule 7 */
    }
    L->n_shown = L->n_want;
    L->all_stale = false;
}
