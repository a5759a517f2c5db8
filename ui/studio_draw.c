/*
 * studio_draw.c — painting the image studio.
 *
 * Wide (at least 60x18): the form on the left, the picture on the right,
 * the gallery strip, status rule and keys at the bottom:
 *   title
 *   Prompt / Negative / Steps / CFG / Seed / Size / Sampler | picture
 *   progress bar, it/s, ETA                                 |
 *   gallery strip (2 rows) | status rule | keys
 * Narrow (40x15): the fields stack in short rows above a smaller picture:
 *   title | prompt | negative | steps cfg seed | size sampler | progress |
 *   picture | gallery | status rule | keys
 * The picture's cells are left blank and become a picture slot
 * (picture.c); without pictures (PT_GFX_NONE) a placeholder names its size.
 */
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "text.h"
#include "wrap.h"

/* Slot ids: gallery pictures use their own ids (1, 2, ...); the preview
 * of the running job has one id of its own, far above them, so kitty
 * replaces it in place step after step. */
#define PREVIEW_SLOT_ID 0x7ffffff0u

void pt_draw_editor(pt_editor *e, int y0, int x0, int rows, int width, const char *hint, bool focus,
                    int *cy, int *cx) {
    if (width < 1 || rows < 1) return;
    pt_wrap_line lines[64];
    int n = pt_wrap_chars(e->buf, e->len, width, lines, 64);
    if (n > 64) n = 64;
    int row, col;
    pt_wrap_locate(lines, n, e->buf, e->cur, &row, &col);
    int first = row - rows + 1;
    if (first < 0) first = 0;
    for (int r = 0; r < rows; r++) {
        int li = first + r;
        if (li < n && e->len)
            pt_put_text(y0 + r, x0, e->buf + lines[li].start, lines[li].end - lines[li].start,
                        pt_attr(S_NORMAL), width);
    }
    if (e->len == 0 && hint) pt_put_str(y0, x0, hint, pt_attr(S_DIM), width);
    if (focus) {
        *cy = y0 + row - first;
        *cx = x0 + (col < width ? col : width - 1);
    }
}

/* ---- values ---- */

static void value_text(const pt_app *a, int field, char *buf, size_t cap) {
    const pt_studio *s = &a->studio;
    const pt_img_settings *f = &s->form, *d = &s->defaults;
    bool dk = s->have_defaults;
    switch (field) {
    case SF_STEPS:
        if (f->steps > 0) snprintf(buf, cap, "%d", f->steps);
        else if (dk) snprintf(buf, cap, "auto (%d)", d->steps);
        else snprintf(buf, cap, "auto");
        break;
    case SF_CFG:
        if (f->cfg >= 0) snprintf(buf, cap, "%g", (double)f->cfg);
        else if (dk) snprintf(buf, cap, "auto (%g)", (double)d->cfg);
        else snprintf(buf, cap, "auto");
        break;
    case SF_SEED: snprintf(buf, cap, "%llu", (unsigned long long)f->seed); break;
    case SF_SIZE:
        if (f->width > 0) snprintf(buf, cap, "%dx%d", f->width, f->height);
        else if (dk) snprintf(buf, cap, "auto (%dx%d)", d->width, d->height);
        else snprintf(buf, cap, "auto");
        break;
    case SF_SAMPLER:
        if (f->sampler < PT_IMAGE_SAMPLER_COUNT) snprintf(buf, cap, "%s", pt_image_sampler_title(f->sampler));
        else if (dk) snprintf(buf, cap, "auto (%s)", pt_image_sampler_title(d->sampler));
        else snprintf(buf, cap, "auto");
        break;
    default: buf[0] = 0; break;
    }
}

static const char *const field_names[SF_COUNT] = {"Prompt", "Negative", "Steps", "CFG", "Seed",
                                                 "Size", "Sampler", "Gallery"};

/* "Name value" with the focus shown; returns the cells used. */
static int draw_chip(const pt_app *a, int y, int x, int field, int name_w, int max) {
    char v[64];
    value_text(a, field, v, sizeof v);
    bool focus = a->studio.field == field;
    attr_t na = focus ? pt_attr(S_SELECT) : pt_attr(S_CAPTION);
    int used = pt_put_str(y, x, field_names[field], na, max);
    for (; used < name_w && used < max; used++) pt_put_str(y, x + used, " ", na, 1);
    used += pt_put_str(y, x + used, " ", pt_attr(S_NORMAL), max - used);
    used += pt_put_str(y, x + used, v, focus ? pt_attr(S_NORMAL) | A_BOLD : pt_attr(S_NORMAL), max - used);
    if (focus && used + 4 < max) used += pt_put_str(y, x + used, pt_text_utf8() ? " \u25c2\u25b8" : " <>", pt_attr(S_DIM), max - used);
    return used;
}

/* A field's name; the focused one is marked in the column before it too
 * (seen without colour, and by the tests). */
static void draw_label(const pt_app *a, int y, int x, int field, int max) {
    bool focus = a->studio.field == field;
    if (focus && x > 0) pt_put_str(y, x - 1, pt_text_utf8() ? "\u25b8" : ">", pt_attr(S_CAPTION), 1);
    pt_put_str(y, x, field_names[field], focus ? pt_attr(S_SELECT) : pt_attr(S_CAPTION), max);
}

/* ---- progress ---- */

/* Two rows (bar, then step / it/s / ETA) or one (a short bar and the
 * text, or the text alone when narrow). */
static void draw_progress(pt_app *a, int y, int x, int w, int rows) {
    const pt_studio *s = &a->studio;
    if (w < 8) return;
    if (!s->running) {
        const pt_picture *p = s->sel >= 0 && s->sel < a->gal.n ? &a->gal.items[s->sel] : NULL;
        char buf[64];
        if (p) snprintf(buf, sizeof buf, "picture %u: %.1fs", p->id, p->seconds);
        else snprintf(buf, sizeof buf, "idle: Enter draws");
        pt_put_str(y, x, buf, pt_attr(S_DIM), w);
        return;
    }
    char text[160], line[200];
    pt_studio_progress_text(a, text, sizeof text);
    if (s->stop_requested) snprintf(text, sizeof text, "stopping...");
    snprintf(line, sizeof line, "%s %s", pt_spinner(), text);
    /* one row: the bar takes what the text leaves, if that is worth it */
    int tw = pt_str_cells(line, strlen(line));
    int bw = rows >= 2 ? w : w - tw - 1 >= 8 ? (w - tw - 1 < w / 3 ? w - tw - 1 : w / 3) : 0;
    if (bw >= 4) {
        int inner = bw - 2;
        int fillc = s->total > 0 ? (int)((long)inner * s->step / s->total) : 0;
        pt_put_str(y, x, "[", pt_attr(S_BRACKET), 1);
        for (int i = 0; i < inner; i++)
            pt_put_str(y, x + 1 + i, i < fillc ? (pt_text_utf8() ? "\u2588" : "#") : " ", pt_attr(S_BAR1), 1);
        pt_put_str(y, x + bw - 1, "]", pt_attr(S_BRACKET), 1);
        if (rows >= 2) { y++; }
        else { x += bw + 1; w -= bw + 1; }
    }
    pt_put_str(y, x, line, pt_attr(S_METER_TEXT), w);
}

/* ---- picture ---- */

/* Fit a w x h picture into aw x ah cells (a cell 1 wide, 2 tall). */
static void fit(int w, int h, int aw, int ah, int *cols, int *rows) {
    int r = (int)(((long)aw * h + w) / (2L * w));
    if (r > ah) r = ah;
    if (r < 1) r = 1;
    int c = (int)((2L * r * w + h - 1) / h);
    if (c > aw) c = aw;
    if (c < 1) c = 1;
    *cols = c;
    *rows = r;
}

static void draw_picture(pt_app *a, int y, int x, int aw, int ah) {
    pt_studio *s = &a->studio;
    if (aw < 4 || ah < 1) return;
    const uint8_t *rgb = NULL;
    int w = 0, h = 0;
    uint32_t id = 0;
    uint64_t gen = 0;
    char what[96] = "";
    const pt_picture *p = s->sel >= 0 && s->sel < a->gal.n ? &a->gal.items[s->sel] : NULL;
    if (s->running && !s->large) {
        if (s->preview) {
            rgb = s->preview; w = s->pw; h = s->ph; id = PREVIEW_SLOT_ID; gen = s->preview_gen;
            snprintf(what, sizeof what, "preview %dx%d of %dx%d", w, h, s->job.width, s->job.height);
        } else {
            pt_put_str(y + ah / 2, x + 2, "preparing...", pt_attr(S_DIM), aw - 2);
            return;
        }
    } else if (p) {
        rgb = p->rgb; w = p->w; h = p->h; id = p->id; gen = p->gen;
        snprintf(what, sizeof what, "picture %u, %dx%d", p->id, w, h);
    } else {
        pt_put_str(y + ah / 2 - 1, x + 2, "Type a prompt, press Enter:", pt_attr(S_DIM), aw - 2);
        pt_put_str(y + ah / 2, x + 2, "the picture forms here.", pt_attr(S_DIM), aw - 2);
        return;
    }
    if (a->caps.proto == PT_GFX_NONE) {
        char ph[128];
        snprintf(ph, sizeof ph, "[%s]", what);
        pt_put_str(y + ah / 2, x + 1, ph, pt_attr(S_DIM), aw - 1);
        return;
    }
    int cols, rows;
    fit(w, h, aw, ah, &cols, &rows);
    pt_pic_slot slot = {.id = id, .rect = {y, x, rows, cols}, .rgb = rgb, .w = w, .h = h,
                        .stride = w * 3, .gen = gen};
    if (a->ov == OV_NONE) pt_pic_place(&a->pics, &slot);
}

/* ---- gallery strip ---- */

static void draw_gallery(pt_app *a, int y, int W, int rows) {
    pt_studio *s = &a->studio;
    bool focus = s->field == SF_GALLERY;
    int x = pt_put_str(y, 0, "Gallery", focus ? pt_attr(S_SELECT) : pt_attr(S_CAPTION), W);
    if (a->gal.n == 0) {
        pt_put_str(y, x + 1, "(empty)", pt_attr(S_DIM), W - x - 1);
        return;
    }
    int sel = s->sel >= 0 && s->sel < a->gal.n ? s->sel : a->gal.n - 1;
    char nav[48];
    snprintf(nav, sizeof nav, " %s %d/%d %s ", pt_text_utf8() ? "\u25c2" : "<", sel + 1, a->gal.n,
             pt_text_utf8() ? "\u25b8" : ">");
    x += pt_put_str(y, x, nav, pt_attr(S_NORMAL) | A_BOLD, W - x);
    /* the strip: the numbers of the pictures around the selected one */
    for (int i = sel - 3 < 0 ? 0 : sel - 3; i < a->gal.n && x < W - 6; i++) {
        char cell[16];
        snprintf(cell, sizeof cell, "#%u", a->gal.items[i].id);
        x += pt_put_str(y, x, cell, i == sel ? pt_attr(S_SELECT) : pt_attr(S_DIM), W - x);
        x += pt_put_str(y, x, " ", pt_attr(S_NORMAL), W - x);
    }
    const pt_picture *p = &a->gal.items[sel];
    char sum[200];
    pt_img_summary(&p->set, sum, sizeof sum);
    if (rows >= 2) {
        char line[PT_IMG_PROMPT_CAP + 256];
        snprintf(line, sizeof line, "%s: %s%s", sum, p->set.prompt, p->saved[0] ? " (saved)" : "");
        char shown[PT_IMG_PROMPT_CAP + 256];
        pt_put_str(y + 1, 2, pt_shown(line, shown, sizeof shown), pt_attr(S_DIM), W - 2);
    }
    if (focus && x < W - 10)
        pt_put_str(y, x, rows >= 2 ? " v view  s save  r re-roll  c copy" : " v s r c", pt_attr(S_KEY_LABEL), W - x);
}

/* ---- title, status, keys ---- */

static void draw_title(pt_app *a, int W) {
    attr_t t = pt_attr(S_TITLE), d = pt_attr(S_TITLE_DIM);
    pt_fill(0, 0, W, t);
    int x = pt_put_str(0, 0, " petrel studio ", t, W);
    const char *m = strrchr(a->img_model, '/');
    char name[256];
    snprintf(name, sizeof name, "%.250s", a->img_model[0] ? (m ? m + 1 : a->img_model) : "no image model");
    char shown[300];
    const char *right = a->studio.running ? "drawing " : "idle ";
    int rw = (int)strlen(right);
    if (W - x - rw - 1 > 4) pt_put_str(0, x, pt_shown(name, shown, sizeof shown), d, W - x - rw - 1);
    if (W - rw > x) pt_put_str(0, W - rw, right, t, rw);
}

static void draw_status_rule(pt_app *a, int y, int W) {
    attr_t ra = pt_attr(S_DIM);
    pt_rule(y, 0, W, ra);
    if (a->studio.line[0] && W > 10) {
        int x = 2;
        x += pt_put_str(y, x, " ", ra, W - x);
        x += pt_put_str(y, x, a->studio.line, pt_attr(a->studio.line_err ? S_STATUS_ERR : S_STATUS), W - x - 2);
        pt_put_str(y, x, " ", ra, W - x);
    }
}

static void draw_keys(int y, int W) {
    static const char *const wide[][2] = {{"Enter", "Draw"}, {"Esc", "Stop"}, {"Tab", "Field"},
                                          {"F6/^X", "Chat"}, {"F1/^G", "Help"}, {"F10/^Q", "Quit"}};
    static const char *const narrow[][2] = {{"Enter", "Draw"}, {"Esc", "Stop"}, {"^X", "Chat"},
                                            {"^Q", "Quit"}, {"^G", "Help"}};
    bool w = W >= 64;
    int n = w ? 6 : W >= 44 ? 5 : 4;
    pt_fill(y, 0, W - 1, pt_attr(S_KEY_LABEL));
    int x = 0;
    for (int i = 0; i < n && x < W - 1; i++) {
        const char *const *h = w ? wide[i] : narrow[i];
        x += pt_put_str(y, x, h[0], pt_attr(S_KEY), W - 1 - x);
        x += pt_put_str(y, x, " ", pt_attr(S_KEY_LABEL), W - 1 - x);
        x += pt_put_str(y, x, h[1], pt_attr(S_KEY_LABEL), W - 1 - x);
        x += pt_put_str(y, x, " ", pt_attr(S_KEY_LABEL), W - 1 - x);
    }
}

/* ---- the screen ---- */

static void draw_wide(pt_app *a, int W, int H, int *cy, int *cx) {
    pt_studio *s = &a->studio;
    int lw = W / 2 - 4 > 40 ? 40 : W / 2 - 4;   /* the form's column */
    int body_end = H - 4;                        /* gallery strip starts here */
    int y = 1;
    draw_label(a, y++, 1, SF_PROMPT, lw - 1);
    pt_draw_editor(&s->prompt, y, 2, 3, lw - 2, "what to draw", s->field == SF_PROMPT, cy, cx);
    y += 3;
    draw_label(a, y++, 1, SF_NEGATIVE, lw - 1);
    pt_draw_editor(&s->negative, y, 2, 1, lw - 2, "what not to draw", s->field == SF_NEGATIVE, cy, cx);
    y += 2;
    for (int f = SF_STEPS; f <= SF_SAMPLER && y < body_end - 2; f++) {
        if (s->field == f) pt_put_str(y, 0, pt_text_utf8() ? "\u25b8" : ">", pt_attr(S_CAPTION), 1);
        draw_chip(a, y++, 1, f, 8, lw - 1);
    }
    y++;
    if (y < body_end) draw_progress(a, y, 1, lw - 1, y + 1 < body_end ? 2 : 1);
    draw_picture(a, 1, lw + 1, W - lw - 2, body_end - 1);
    draw_gallery(a, body_end, W, 2);
}

static void draw_narrow(pt_app *a, int W, int H, int *cy, int *cx) {
    pt_studio *s = &a->studio;
    int y = 1;
    pt_put_str(y, 0, "P", s->field == SF_PROMPT ? pt_attr(S_SELECT) : pt_attr(S_CAPTION), 1);
    pt_draw_editor(&s->prompt, y++, 2, 1, W - 3, "prompt", s->field == SF_PROMPT, cy, cx);
    pt_put_str(y, 0, "N", s->field == SF_NEGATIVE ? pt_attr(S_SELECT) : pt_attr(S_CAPTION), 1);
    pt_draw_editor(&s->negative, y++, 2, 1, W - 3, "negative", s->field == SF_NEGATIVE, cy, cx);
    /* the five numbers, two or three to a row */
    int x = 0;
    for (int f = SF_STEPS; f <= SF_SAMPLER; f++) {
        char v[64];
        value_text(a, f, v, sizeof v);
        int need = (int)strlen(field_names[f]) + 1 + (int)strlen(v) + (a->studio.field == f ? 3 : 0);
        if (x > 0 && x + need > W - 1) { y++; x = 0; }
        x += draw_chip(a, y, x, f, 0, W - 1 - x) + 1;
    }
    y++;
    draw_progress(a, y++, 0, W - 1, 1);
    int pic_rows = H - 3 - y;
    draw_picture(a, y, 0, W - 1, pic_rows);
    draw_gallery(a, H - 3, W, 1);
}

/* View large: the picture takes every row between the title and a
 * one-row gallery strip; the form is hidden (v or Esc brings it back). */
static void draw_large(pt_app *a, int W, int H) {
    draw_picture(a, 1, 0, W - 1, H - 4);
    draw_gallery(a, H - 3, W, 1);
}

void pt_studio_draw(pt_app *a, int W, int H, int *cy, int *cx, bool *show_cursor) {
    pt_studio *s = &a->studio;
    draw_title(a, W);
    *show_cursor = !s->large && (s->field == SF_PROMPT || s->field == SF_NEGATIVE);
    if (s->large) draw_large(a, W, H);
    else if (W >= 60 && H >= 18) draw_wide(a, W, H, cy, cx);
    else draw_narrow(a, W, H, cy, cx);
    draw_status_rule(a, H - 2, W);
    draw_keys(H - 1, W);
}
