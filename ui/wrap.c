/* wrap.c — word and character wrapping (see wrap.h). */
#include "wrap.h"

#include "text.h"

static void emit(pt_wrap_line *out, int cap, int *n, size_t start, size_t end, int cells) {
    if (*n < cap) {
        out[*n].start = (uint32_t)start;
        out[*n].end = (uint32_t)end;
        out[*n].cells = cells;
    }
    (*n)++;
}

/*
 * State while scanning one paragraph:
 *   start      first byte of the current line
 *   cells      width of s[start, i)
 *   brk_end    where the line ends if we break at the last opportunity
 *              (before the run of spaces, or before a wide character)
 *   brk_next   where the next line would start (after the spaces)
 *   brk_cells  width of s[start, brk_end)
 *   brk_next_cells  width of s[start, brk_next)
 * brk_next == 0 with brk_end == 0 means "no opportunity yet" (we use
 * have_brk for that).
 */
int pt_wrap_words(const char *s, size_t len, int width, pt_wrap_line *out, int cap) {
    if (width < 1) width = 1;
    int n = 0;
    size_t i = 0, start = 0;
    int cells = 0;
    int have_brk = 0;
    size_t brk_end = 0, brk_next = 0;
    int brk_cells = 0, brk_next_cells = 0;
    int skip_spaces = 0;   /* at the start of a soft-wrapped line */
    int prev_wide = 0;
    while (i < len) {
        uint32_t cp;
        int nb = pt_ui_utf8_decode(s + i, len - i, &cp);
        if (cp == '\n') {
            emit(out, cap, &n, start, i, cells);
            i += (size_t)nb;
            start = i; cells = 0; have_brk = 0; skip_spaces = 0; prev_wide = 0;
            continue;
        }
        if (cp == ' ' && skip_spaces) {
            i += (size_t)nb;
            start = i;
            continue;
        }
        skip_spaces = 0;
        int w = pt_cp_width(cp);
        if (cp == ' ') {
            /* a space is a break opportunity; the line may end before it */
            if (!(have_brk && brk_next == i)) { brk_end = i; brk_cells = cells; }
            if (cells + w > width) {
                emit(out, cap, &n, start, brk_end, brk_cells);
                i += (size_t)nb;
                start = i; cells = 0; have_brk = 0; skip_spaces = 1; prev_wide = 0;
                continue;
            }
            cells += w;
            i += (size_t)nb;
            have_brk = 1; brk_next = i; brk_next_cells = cells;
            prev_wide = 0;
            continue;
        }
        /* before a wide character, or after one, the line may break */
        if ((w == 2 || prev_wide) && i > start && !(have_brk && brk_next == i)) {
            have_brk = 1;
            brk_end = i; brk_cells = cells;
            brk_next = i; brk_next_cells = cells;
        }
        if (cells + w > width && i > start) {
            if (have_brk && brk_next > start) {
                emit(out, cap, &n, start, brk_end, brk_cells);
                start = brk_next;
                cells -= brk_next_cells;
            } else {
                emit(out, cap, &n, start, i, cells);
                start = i;
                cells = 0;
            }
            have_brk = 0;
            continue; /* re-examine this character on the new line */
        }
        cells += w;
        i += (size_t)nb;
        prev_wide = (w == 2);
    }
    /* the last line, unless the text ended with a soft-wrapped space run
     * that already emitted everything */
    if (!(skip_spaces && start == len && n > 0)) emit(out, cap, &n, start, len, cells);
    return n;
}

int pt_wrap_chars(const char *s, size_t len, int width, pt_wrap_line *out, int cap) {
    if (width < 1) width = 1;
    int n = 0;
    size_t i = 0, start = 0;
    int cells = 0;
    while (i < len) {
        uint32_t cp;
        int nb = pt_ui_utf8_decode(s + i, len - i, &cp);
        if (cp == '\n') {
            emit(out, cap, &n, start, i, cells);
            i += (size_t)nb;
            start = i; cells = 0;
            continue;
        }
        int w = pt_cp_width(cp);
        if (cells + w > width && i > start) {
            emit(out, cap, &n, start, i, cells);
            start = i; cells = 0;
        }
        cells += w;
        i += (size_t)nb;
    }
    emit(out, cap, &n, start, len, cells);
    return n;
}

void pt_wrap_locate(const pt_wrap_line *lines, int n, const char *s, size_t pos,
                    int *row, int *col) {
    *row = 0; *col = 0;
    for (int r = 0; r < n; r++) {
        /* pos belongs to line r when it is inside it, or at its end and the
         * next line does not start there (a newline follows, or it is last) */
        if (pos >= lines[r].start && pos <= lines[r].end) {
            if (pos == lines[r].end && r + 1 < n && lines[r + 1].start == pos) continue;
            *row = r;
            *col = pt_str_cells(s + lines[r].start, pos - lines[r].start);
            return;
        }
    }
    if (n > 0) { *row = n - 1; *col = lines[n - 1].cells; }
}
