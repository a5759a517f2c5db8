/* text.c — UTF-8 decoding and cell widths (see text.h). */
#include "text.h"

#include <langinfo.h>
#include <string.h>
#include <wchar.h>

#include "petrel.h"

/* -1 = not decided yet, 0 = not UTF-8, 1 = UTF-8. Written once at start
 * on the main thread (pt_text_init) before any other thread exists. */
static int text_utf8 = -1;

void pt_text_init(void) {
    const char *cs = nl_langinfo(CODESET);
    text_utf8 = cs && (strcmp(cs, "UTF-8") == 0 || strcmp(cs, "utf8") == 0);
}

bool pt_text_utf8(void) {
    if (text_utf8 < 0) pt_text_init();
    return text_utf8 == 1;
}

void pt_text_force_utf8(bool on) { text_utf8 = on ? 1 : 0; }

int pt_ui_utf8_decode(const char *str, size_t len, uint32_t *cp) {
    const unsigned char *s = (const unsigned char *)str;
    unsigned c = s[0];
    if (c < 0x80) { *cp = c; return 1; }
    int n;
    uint32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) { n = 2; v = c & 0x1F; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { n = 3; v = c & 0x0F; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { n = 4; v = c & 0x07; min = 0x10000; }
    else { *cp = PT_UI_REPLACEMENT; return 1; }
    if ((size_t)n > len) { *cp = PT_UI_REPLACEMENT; return 1; }
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) { *cp = PT_UI_REPLACEMENT; return 1; }
        v = (v << 6) | (s[i] & 0x3F);
    }
    /* overlong forms, surrogates and values past U+10FFFF are invalid */
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
        *cp = PT_UI_REPLACEMENT;
        return 1;
    }
    *cp = v;
    return n;
}

int pt_ui_utf8_encode(uint32_t cp, char *out) {
    unsigned char *o = (unsigned char *)out;
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = PT_UI_REPLACEMENT;
    if (cp < 0x80) { o[0] = (unsigned char)cp; return 1; }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | (cp >> 18));
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

size_t pt_ui_utf8_prev(const char *str, size_t end) {
    const unsigned char *s = (const unsigned char *)str;
    if (end == 0) return 0;
    /* walk back over at most 3 continuation bytes, then check that the
     * lead byte really spans up to end; otherwise step one byte */
    size_t i = end - 1, steps = 0;
    while (i > 0 && steps < 3 && (s[i] & 0xC0) == 0x80) { i--; steps++; }
    uint32_t cp;
    int n = pt_ui_utf8_decode(str + i, end - i, &cp);
    return (size_t)n == end - i ? end - i : 1;
}

uint32_t pt_cp_display(uint32_t cp, int *width) {
    if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0)) { *width = 1; return '?'; }
    if (cp < 0x7F) { *width = 1; return cp; }
    if (!pt_text_utf8()) { *width = 1; return '?'; }
    int w = wcwidth((wchar_t)cp);
    if (w < 0) { *width = 1; return '?'; }
    *width = w;
    return cp;
}

int pt_cp_width(uint32_t cp) {
    if (cp == '\t') return PT_TAB_CELLS;
    int w;
    pt_cp_display(cp, &w);
    return w;
}

int pt_str_cells(const char *s, size_t len) {
    int cells = 0;
    size_t i = 0;
    while (i < len) {
        uint32_t cp;
        i += (size_t)pt_ui_utf8_decode(s + i, len - i, &cp);
        cells += pt_cp_width(cp);
    }
    return cells;
}

size_t pt_str_fit(const char *s, size_t len, int max_cells, int *cells_out) {
    int cells = 0;
    size_t i = 0;
    while (i < len) {
        uint32_t cp;
        int n = pt_ui_utf8_decode(s + i, len - i, &cp);
        int w = pt_cp_width(cp);
        if (cells + w > max_cells) break;
        cells += w;
        i += (size_t)n;
    }
    if (cells_out) *cells_out = cells;
    return i;
}

const char *pt_shown(const char *s, char *buf, size_t cap) {
    pt_escape_text(s, strlen(s), buf, cap);
    return buf;
}
