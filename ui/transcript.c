/* transcript.c — conversation layout (see transcript.h). */
#include "transcript.h"

#include <stdlib.h>
#include <string.h>

#include "wrap.h"

void pt_transcript_init(pt_transcript *t) { memset(t, 0, sizeof *t); }

void pt_transcript_free(pt_transcript *t) {
    for (int i = 0; i < t->cap_msgs; i++) free(t->msgs[i].lines);
    free(t->msgs);
    memset(t, 0, sizeof *t);
}

static void put(pt_tline *out, int cap, int *n, int msg, uint32_t s, uint32_t e, int cells, int kind) {
    if (*n < cap) out[*n] = (pt_tline){msg, s, e, cells, (uint8_t)kind};
    (*n)++;
}

/* Is text[s..e) a fence line ("```" after optional spaces)? Sets the
 * language tag range. */
static int is_fence(const char *text, size_t s, size_t e, size_t *tag_s, size_t *tag_e) {
    while (s < e && (text[s] == ' ' || text[s] == '\t')) s++;
    if (e - s < 3 || strncmp(text + s, "```", 3) != 0) return 0;
    s += 3;
    while (s < e && text[s] == '`') s++;
    while (s < e && text[s] == ' ') s++;
    while (e > s && (text[e - 1] == ' ' || text[e - 1] == '\r')) e--;
    *tag_s = s;
    *tag_e = e;
    return 1;
}

int pt_picture_rows(int width, int w, int h, int max_rows) {
    int cols = width - PT_TEXT_INDENT - 1;
    if (cols < 1) cols = 1;
    if (max_rows < 1) max_rows = 1;
    if (w <= 0 || h <= 0) return 1;
    long rows = ((long)cols * h + w) / (2L * w);   /* rounded: a cell is 1 wide, 2 tall */
    return rows < 1 ? 1 : rows > max_rows ? max_rows : (int)rows;
}

int pt_picture_cols(int width, int w, int h, int rows) {
    int room = width - PT_TEXT_INDENT - 1;
    if (room < 1) room = 1;
    if (w <= 0 || h <= 0) return room;
    long cols = (2L * rows * w + h - 1) / h;
    return cols < 1 ? 1 : cols > room ? room : (int)cols;
}

int pt_layout_message(const pt_msg *m, int mi, int width, int pic_max_rows, pt_tline *out, int cap) {
    int n = 0;
    put(out, cap, &n, mi, 0, 0, 0, PT_TL_LABEL);
    if (m->role == PT_ROLE_PICTURE) {
        int wtext = width - PT_TEXT_INDENT;
        pt_wrap_line tmp[8];
        int k = pt_wrap_words(m->text, m->len, wtext < 1 ? 1 : wtext, tmp, 8);
        for (int i = 0; i < k && i < 8; i++)
            put(out, cap, &n, mi, tmp[i].start, tmp[i].end, tmp[i].cells, PT_TL_TEXT);
        int rows = pt_picture_rows(width, m->pic_w, m->pic_h, pic_max_rows);
        for (int r = 0; r < rows; r++) put(out, cap, &n, mi, (uint32_t)r, (uint32_t)rows, 0, PT_TL_PICTURE);
        put(out, cap, &n, mi, 0, 0, 0, PT_TL_BLANK);
        return n;
    }
    const char *text = m->text;
    size_t len = m->len;
    /* trailing newlines and spaces are not shown */
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == ' ' || text[len - 1] == '\r')) len--;
    int wtext = width - PT_TEXT_INDENT, wcode = width - PT_CODE_INDENT;
    if (wtext < 1) wtext = 1;
    if (wcode < 1) wcode = 1;
    pt_wrap_line tmp[64];
    bool in_code = false;
    size_t p = 0;
    if (len == 0) put(out, cap, &n, mi, 0, 0, 0, PT_TL_TEXT);
    while (p < len) {
        size_t e = p;
        while (e < len && text[e] != '\n') e++;
        size_t ts, te;
        if (is_fence(text, p, e, &ts, &te)) {
            put(out, cap, &n, mi, (uint32_t)ts, (uint32_t)te, 0, PT_TL_FENCE);
            in_code = !in_code;
        } else {
            /* wrap this paragraph, in pieces if it has many lines */
            int kind = in_code ? PT_TL_CODE : PT_TL_TEXT;
            int w = in_code ? wcode : wtext;
            size_t at = p;
            for (;;) {
                int k = in_code ? pt_wrap_chars(text + at, e - at, w, tmp, 64)
                                : pt_wrap_words(text + at, e - at, w, tmp, 64);
                int take = k <= 64 ? k : 63;  /* keep the last line for the next round */
                for (int i = 0; i < take; i++)
                    put(out, cap, &n, mi, (uint32_t)(at + tmp[i].start), (uint32_t)(at + tmp[i].end),
                        tmp[i].cells, kind);
                if (k <= 64) break;
                at += tmp[63].start;
            }
        }
        p = e + 1;
    }
    put(out, cap, &n, mi, 0, 0, 0, PT_TL_BLANK);
    return n;
}

static void layout_one(pt_tmsg_cache *c, const pt_msg *m, int mi, int width, int pic_max_rows) {
    int n = pt_layout_message(m, mi, width, pic_max_rows, c->lines, c->cap);
    if (n > c->cap) {
        int cap = c->cap ? c->cap : 16;
        while (cap < n) cap *= 2;
        pt_tline *l = realloc(c->lines, sizeof *l * (size_t)cap);
        if (!l) { c->n = c->cap; return; }
        c->lines = l;
        c->cap = cap;
        n = pt_layout_message(m, mi, width, pic_max_rows, c->lines, c->cap);
    }
    c->n = n;
    c->rev = m->rev;
    c->len = m->len;
    c->width = width;
    c->role = (int)m->role;
    c->pic_max_rows = pic_max_rows;
    c->valid = true;
}

void pt_transcript_layout(pt_transcript *t, const pt_convo *c, int width) {
    if (c->n > t->cap_msgs) {
        int cap = t->cap_msgs ? t->cap_msgs : 16;
        while (cap < c->n) cap *= 2;
        pt_tmsg_cache *m = realloc(t->msgs, sizeof *m * (size_t)cap);
        if (!m) return;
        memset(m + t->cap_msgs, 0, sizeof *m * (size_t)(cap - t->cap_msgs));
        t->msgs = m;
        t->cap_msgs = cap;
    }
    t->total = 0;
    for (int i = 0; i < c->n; i++) {
        pt_tmsg_cache *mc = &t->msgs[i];
        const pt_msg *m = &c->msgs[i];
        /* messages are replaced when the conversation is cleared, so the
         * text length and role are compared too, not only the revision */
        if (!mc->valid || mc->width != width || mc->rev != m->rev || mc->len != m->len ||
            mc->role != (int)m->role ||
            (m->role == PT_ROLE_PICTURE && mc->pic_max_rows != t->pic_max_rows))
            layout_one(mc, m, i, width, t->pic_max_rows);
        t->total += mc->n;
    }
    for (int i = c->n; i < t->cap_msgs; i++) t->msgs[i].valid = false;
    t->n_msgs = c->n;
}

const pt_tline *pt_transcript_line(const pt_transcript *t, int i) {
    for (int m = 0; m < t->n_msgs; m++) {
        if (i < t->msgs[m].n) return &t->msgs[m].lines[i];
        i -= t->msgs[m].n;
    }
    return NULL;
}
