/* editor.c — the input line editor (see editor.h). */
#include "editor.h"

#include <stdlib.h>
#include <string.h>

#include "text.h"
#include "wrap.h"

void pt_editor_init(pt_editor *e) {
    memset(e, 0, sizeof *e);
    e->buf = calloc(1, 64);
    e->cap = e->buf ? 64 : 0;
}

void pt_editor_free(pt_editor *e) {
    free(e->buf);
    for (int i = 0; i < e->n_hist; i++) free(e->hist[i]);
    free(e->hist);
    free(e->draft);
    memset(e, 0, sizeof *e);
}

static bool reserve(pt_editor *e, size_t n) {
    if (n + 1 <= e->cap) return true;
    size_t cap = e->cap ? e->cap : 64;
    while (cap < n + 1) cap *= 2;
    char *b = realloc(e->buf, cap);
    if (!b) return false;
    e->buf = b;
    e->cap = cap;
    return true;
}

void pt_editor_set(pt_editor *e, const char *text) {
    size_t n = strlen(text);
    if (!reserve(e, n)) return;
    memcpy(e->buf, text, n + 1);
    e->len = n;
    e->cur = n;
}

void pt_editor_clear(pt_editor *e) {
    if (e->buf) e->buf[0] = 0;
    e->len = e->cur = 0;
    e->hist_pos = e->n_hist;
}

void pt_editor_insert(pt_editor *e, const char *text, size_t len) {
    if (!reserve(e, e->len + len)) return;
    memmove(e->buf + e->cur + len, e->buf + e->cur, e->len - e->cur + 1);
    memcpy(e->buf + e->cur, text, len);
    e->len += len;
    e->cur += len;
}

void pt_editor_insert_cp(pt_editor *e, uint32_t cp) {
    char b[4];
    int n = pt_ui_utf8_encode(cp, b);
    pt_editor_insert(e, b, (size_t)n);
}

static void erase(pt_editor *e, size_t from, size_t to) {
    memmove(e->buf + from, e->buf + to, e->len - to + 1);
    e->len -= to - from;
    e->cur = from;
}

static size_t next_cp(const pt_editor *e, size_t at) {
    if (at >= e->len) return e->len;
    uint32_t cp;
    return at + (size_t)pt_ui_utf8_decode(e->buf + at, e->len - at, &cp);
}

static size_t prev_cp(const pt_editor *e, size_t at) { return at - pt_ui_utf8_prev(e->buf, at); }

/* A character followed by zero-width marks (accents, ZWJ, variation
 * selectors) moves and deletes as one unit. */
static bool is_zero_width_at(const pt_editor *e, size_t at) {
    if (at >= e->len) return false;
    uint32_t cp;
    pt_ui_utf8_decode(e->buf + at, e->len - at, &cp);
    return cp >= 0x300 && pt_cp_width(cp) == 0;
}

static size_t next_unit(const pt_editor *e, size_t at) {
    at = next_cp(e, at);
    while (is_zero_width_at(e, at)) at = next_cp(e, at);
    return at;
}

static size_t prev_unit(const pt_editor *e, size_t at) {
    if (at == 0) return 0;
    at = prev_cp(e, at);
    while (at > 0 && is_zero_width_at(e, at)) at = prev_cp(e, at);
    return at;
}

void pt_editor_backspace(pt_editor *e) {
    if (e->cur > 0) erase(e, prev_unit(e, e->cur), e->cur);
}

void pt_editor_delete(pt_editor *e) {
    if (e->cur < e->len) {
        size_t c = e->cur;
        erase(e, c, next_unit(e, c));
    }
}

void pt_editor_left(pt_editor *e) { e->cur = prev_unit(e, e->cur); }
void pt_editor_right(pt_editor *e) { e->cur = next_unit(e, e->cur); }

static bool is_word_byte(char c) {
    return (c & 0x80) || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

void pt_editor_word_left(pt_editor *e) {
    size_t c = e->cur;
    while (c > 0 && !is_word_byte(e->buf[c - 1])) c--;
    while (c > 0 && is_word_byte(e->buf[c - 1])) c--;
    e->cur = c;
}

void pt_editor_word_right(pt_editor *e) {
    size_t c = e->cur;
    while (c < e->len && !is_word_byte(e->buf[c])) c++;
    while (c < e->len && is_word_byte(e->buf[c])) c++;
    e->cur = c;
}

static size_t line_start(const pt_editor *e) {
    size_t c = e->cur;
    while (c > 0 && e->buf[c - 1] != '\n') c--;
    return c;
}

static size_t line_end(const pt_editor *e) {
    size_t c = e->cur;
    while (c < e->len && e->buf[c] != '\n') c++;
    return c;
}

void pt_editor_home(pt_editor *e) { e->cur = line_start(e); }
void pt_editor_end(pt_editor *e) { e->cur = line_end(e); }

void pt_editor_kill_to_start(pt_editor *e) {
    size_t s = line_start(e);
    if (s == e->cur && s > 0) s--;   /* at a line start: join with the line above */
    erase(e, s, e->cur);
}

void pt_editor_kill_to_end(pt_editor *e) {
    size_t end = line_end(e);
    if (end == e->cur && end < e->len) end++;   /* at a line end: join the next line */
    size_t c = e->cur;
    erase(e, c, end);
}

void pt_editor_kill_word(pt_editor *e) {
    size_t end = e->cur;
    pt_editor_word_left(e);
    size_t c = e->cur;
    erase(e, c, end);
}

/* Move to row+dir at the same column (or the nearest cell left of it). */
static bool vertical(pt_editor *e, int width, int dir) {
    int cap = 64;
    pt_wrap_line *lines = NULL;
    int n;
    for (;;) {
        pt_wrap_line *nl = realloc(lines, sizeof *lines * (size_t)cap);
        if (!nl) { free(lines); return false; }
        lines = nl;
        n = pt_wrap_chars(e->buf, e->len, width, lines, cap);
        if (n <= cap) break;
        cap = n;
    }
    int row, col;
    pt_wrap_locate(lines, n, e->buf, e->cur, &row, &col);
    int target = row + dir;
    if (target < 0 || target >= n) { free(lines); return false; }
    const pt_wrap_line *L = &lines[target];
    size_t fit = pt_str_fit(e->buf + L->start, L->end - L->start, col, NULL);
    e->cur = L->start + fit;
    free(lines);
    return true;
}

bool pt_editor_up(pt_editor *e, int width) { return vertical(e, width, -1); }
bool pt_editor_down(pt_editor *e, int width) { return vertical(e, width, +1); }

void pt_editor_remember(pt_editor *e, const char *text) {
    if (!*text) return;
    if (e->n_hist > 0 && strcmp(e->hist[e->n_hist - 1], text) == 0) { e->hist_pos = e->n_hist; return; }
    if (e->n_hist == e->cap_hist) {
        int cap = e->cap_hist ? e->cap_hist * 2 : 32;
        char **h = realloc(e->hist, sizeof *h * (size_t)cap);
        if (!h) return;
        e->hist = h;
        e->cap_hist = cap;
    }
    char *copy = strdup(text);
    if (!copy) return;
    e->hist[e->n_hist++] = copy;
    e->hist_pos = e->n_hist;
    free(e->draft);
    e->draft = NULL;
}

bool pt_editor_hist_prev(pt_editor *e) {
    if (e->hist_pos <= 0) return false;
    if (e->hist_pos == e->n_hist) {
        free(e->draft);
        e->draft = strdup(e->buf);
    }
    e->hist_pos--;
    pt_editor_set(e, e->hist[e->hist_pos]);
    return true;
}

bool pt_editor_hist_next(pt_editor *e) {
    if (e->hist_pos >= e->n_hist) return false;
    e->hist_pos++;
    if (e->hist_pos == e->n_hist) {
        pt_editor_set(e, e->draft ? e->draft : "");
        free(e->draft);
        e->draft = NULL;
    } else {
        pt_editor_set(e, e->hist[e->hist_pos]);
    }
    return true;
}
