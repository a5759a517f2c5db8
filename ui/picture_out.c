/*
 * picture_out.c — carrying a frame's picture plan out around ncurses'
 * doupdate (the rules are in picture.c).
 */
#include <stdio.h>
#include <unistd.h>

#include "picture.h"
#include "term.h"

static void write_all(const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(STDOUT_FILENO, p, n);
        if (w <= 0) return;   /* the terminal went away: nothing to save */
        p += w;
        n -= (size_t)w;
    }
}

void pt_pic_before_update(pt_pic_layer *L, const pt_term_caps *caps, pt_pic_plan *p) {
    pt_pic_plan_frame(L, p);
    if (caps->proto == PT_GFX_KITTY || caps->proto == PT_GFX_NONE || p->n_wipe == 0)
        return;   /* kitty: deleted by id after the update */
    /* rule 5: the cells of gone or moved slots are erased (ECH: xterm
     * drops sixel pixels under erased cells, while text written over them
     * only hides them until the next expose), then their rows are
     * repainted whole by this doupdate. The erase goes out before
     * doupdate, between DECSC and DECRC, so ncurses' idea of the cursor
     * and attributes stays true; slots re-sent in place need nothing. */
    pt_gfx_buf b = {0};
    pt_gfx_buf_append(&b, "\0337\033[0m", 6);
    for (int i = 0; i < p->n_wipe; i++) {
        pt_pic_rect r = p->wipe[i].rect;
        if (r.y < 0) { r.h += r.y; r.y = 0; }
        if (r.y + r.h > LINES) r.h = LINES - r.y;
        if (r.x + r.w > COLS) r.w = COLS - r.x;
        if (r.h <= 0 || r.w <= 0) continue;
        for (int y = r.y; y < r.y + r.h; y++) {
            char ech[40];
            int n = snprintf(ech, sizeof ech, "\033[%d;%dH\033[%dX", y + 1, r.x + 1, r.w);
            pt_gfx_buf_append(&b, ech, (size_t)n);
        }
        wredrawln(stdscr, r.y, r.h);
    }
    pt_gfx_buf_append(&b, "\0338", 2);
    if (!b.oom) {
        fflush(stdout);
        write_all(b.data, b.len);
    }
    pt_gfx_buf_free(&b);
}

void pt_pic_after_update(pt_pic_layer *L, const pt_term_caps *caps, const pt_pic_plan *p) {
    if (caps->proto == PT_GFX_NONE || (p->n_send == 0 && p->n_wipe == 0)) {
        pt_pic_commit(L);
        return;
    }
    pt_gfx_buf b = {0};
    for (int i = 0; i < p->n_wipe; i++) pt_gfx_erase(caps, p->wipe[i].id, &b);
    for (int i = 0; i < p->n_send; i++) {
        const pt_pic_slot *s = &L->want[p->send[i]];
        char cup[32];
        int n = snprintf(cup, sizeof cup, "\033[%d;%dH", s->rect.y + 1, s->rect.x + 1);
        pt_gfx_buf_append(&b, cup, (size_t)n);
        pt_gfx_image img = {s->rgb, s->w, s->h, s->stride};
        pt_gfx_encode(caps, &img, s->rect.w, s->rect.h, s->id, &b, NULL, NULL);
    }
    /* rule 2: the cursor back where ncurses left it (stdscr's cursor:
     * with leaveok off, doupdate ends with the terminal's cursor there),
     * the attributes back to normal as doupdate leaves them. Not
     * DECSC/DECRC around it all: the encoders use that single slot
     * themselves (graphics.h). */
    int cy, cx;
    getyx(stdscr, cy, cx);
    char park[40];
    int pn = snprintf(park, sizeof park, "\033[0m\033[%d;%dH", cy + 1, cx + 1);
    pt_gfx_buf_append(&b, park, (size_t)pn);
    if (!b.oom) {
        fflush(stdout);   /* whatever ncurses buffered goes first */
        write_all(b.data, b.len);
        L->writes++;
        L->bytes += b.len;
    }
    pt_gfx_buf_free(&b);
    pt_pic_commit(L);
}

void pt_pic_clear(pt_pic_layer *L, const pt_term_caps *caps) {
    pt_gfx_buf b = {0};
    pt_gfx_erase(caps, 0, &b);
    if (b.len && !b.oom) write_all(b.data, b.len);
    pt_gfx_buf_free(&b);
    L->n_shown = L->n_want = 0;
}
