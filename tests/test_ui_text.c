/*
 * test_ui_text.c — UTF-8 decoding, cell widths and wrapping of the UI
 * (ui/text.c, ui/wrap.c). References: the C library's own UTF-8 codec
 * (wcrtomb/mbrtowc in C.UTF-8) for every code point, wcswidth for widths,
 * and hand-worked wrap layouts plus invariants over random text.
 *
 * The UI sources are compiled into this test directly (they have no
 * dependencies beyond libc), so it runs without a terminal.
 */
#include <limits.h>
#include <locale.h>
#include <stdint.h>
#include <wchar.h>

#include "check.h"
#include "../ui/text.c"
#include "../ui/wrap.c"

static void test_codec_against_libc(void) {
    mbstate_t ms;
    int bad_enc = 0, bad_dec = 0;
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
        if (cp >= 0xD800 && cp <= 0xDFFF) continue;
        char mine[4], ref[MB_LEN_MAX];
        int n = pt_ui_utf8_encode(cp, mine);
        memset(&ms, 0, sizeof ms);
        size_t rn = wcrtomb(ref, (wchar_t)cp, &ms);
        if (rn != (size_t)n || memcmp(mine, ref, rn) != 0) bad_enc++;
        uint32_t back;
        if (pt_ui_utf8_decode(mine, (size_t)n, &back) != n || back != cp) bad_dec++;
    }
    CHECK(bad_enc == 0, "%d code points encode differently from wcrtomb", bad_enc);
    CHECK(bad_dec == 0, "%d code points do not decode back", bad_dec);
}

static void test_invalid_sequences(void) {
    static const struct { const char *s; size_t len; } bad[] = {
        {"\xC0\x80", 2},          /* overlong NUL */
        {"\xE0\x80\xAF", 3},      /* overlong '/' */
        {"\xED\xA0\x80", 3},      /* surrogate U+D800 */
        {"\xF4\x90\x80\x80", 4},  /* U+110000 */
        {"\xE4\xB8", 2},          /* truncated */
        {"\x80", 1},              /* lone continuation */
        {"\xFF", 1},
        {"\xE4\x41\x42", 3},      /* lead byte followed by ASCII */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint32_t cp;
        int n = pt_ui_utf8_decode(bad[i].s, bad[i].len, &cp);
        CHECK(n == 1 && cp == PT_UI_REPLACEMENT, "bad sequence %zu: n=%d cp=%X", i, n, cp);
        /* libc agrees that these are not valid UTF-8 (glibc accepts
         * values past U+10FFFF, so that one case is ours alone) */
        if (bad[i].s[0] == '\xF4') continue;
        mbstate_t ms;
        memset(&ms, 0, sizeof ms);
        wchar_t wc;
        size_t r = mbrtowc(&wc, bad[i].s, bad[i].len, &ms);
        CHECK(r == (size_t)-1 || r == (size_t)-2, "libc accepted bad sequence %zu", i);
    }
    /* stepping back over a 4-byte character and over garbage */
    const char *s = "a\xF0\x9F\x98\x80";
    CHECK(pt_ui_utf8_prev(s, 5) == 4, "prev over emoji");
    CHECK(pt_ui_utf8_prev(s, 1) == 1, "prev over ascii");
    CHECK(pt_ui_utf8_prev("\x80\x80", 2) == 1, "prev over stray continuation");
}

static void test_widths(void) {
    struct { uint32_t cp; int w; } cases[] = {
        {'a', 1}, {0x4E2D, 2} /* 中 */, {0x3042, 2} /* あ */, {0xAC00, 2} /* 가 */,
        {0x1F600, 2} /* 😀 */, {0x0301, 0} /* combining acute */, {0x00E9, 1} /* é */,
        {0xFF21, 2} /* fullwidth A */, {0x200B, 0} /* zero width space */,
        {'\t', PT_TAB_CELLS}, {0x07, 1} /* control: drawn as '?' */,
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(pt_cp_width(cases[i].cp) == cases[i].w, "width of U+%04X = %d, want %d", cases[i].cp,
              pt_cp_width(cases[i].cp), cases[i].w);
    /* strings: agree with wcswidth for printable text */
    const char *strs[] = {"hello", "中文字符", "naïve café", "e\xCC\x81t\xC3\xA9", "ＡＢＣ", "😀 ok", "日本語 text"};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
        wchar_t w[64];
        size_t n = mbstowcs(w, strs[i], 64);
        int ref = wcswidth(w, n);
        CHECK(pt_str_cells(strs[i], strlen(strs[i])) == ref, "cells(%s) = %d, wcswidth %d", strs[i],
              pt_str_cells(strs[i], strlen(strs[i])), ref);
    }
    int cells;
    size_t fit = pt_str_fit("ab中文", 8, 3, &cells);
    CHECK(fit == 2 && cells == 2, "a wide char that does not fit stays out (fit %zu cells %d)", fit, cells);
    fit = pt_str_fit("ab中文", 8, 4, &cells);
    CHECK(fit == 5 && cells == 4, "fit 4 cells: %zu %d", fit, cells);
    fit = pt_str_fit("e\xCC\x81x", 4, 1, &cells);
    CHECK(fit == 3 && cells == 1, "combining mark stays with its base (fit %zu)", fit);
}

/* wrap s at width and compare with the expected lines joined by '|' */
static void expect_wrap(const char *s, int width, const char *want) {
    pt_wrap_line lines[64];
    int n = pt_wrap_words(s, strlen(s), width, lines, 64);
    char got[1024] = "";
    size_t at = 0;
    for (int i = 0; i < n && i < 64; i++) {
        at += (size_t)snprintf(got + at, sizeof got - at, "%s%.*s", i ? "|" : "",
                               (int)(lines[i].end - lines[i].start), s + lines[i].start);
        CHECK(lines[i].cells == pt_str_cells(s + lines[i].start, lines[i].end - lines[i].start),
              "cells of line %d of \"%s\"", i, s);
    }
    CHECK(strcmp(got, want) == 0, "wrap(\"%s\", %d) = \"%s\", want \"%s\"", s, width, got, want);
}

static void test_wrap_cases(void) {
    expect_wrap("hello world", 11, "hello world");
    expect_wrap("hello world", 8, "hello|world");
    expect_wrap("hello world", 5, "hello|world");
    expect_wrap("hello  world", 5, "hello|world");
    expect_wrap("a b c d e f", 3, "a b|c d|e f");
    expect_wrap("abcdefghij", 4, "abcd|efgh|ij");
    expect_wrap("one\ntwo three", 5, "one|two|three");
    expect_wrap("one\n\ntwo", 10, "one||two");
    expect_wrap("  indented line", 20, "  indented line");
    expect_wrap("", 10, "");
    expect_wrap("abc ", 3, "abc");
    /* CJK breaks between any two characters; a wide char never straddles */
    expect_wrap("中文字符测试", 5, "中文|字符|测试");
    expect_wrap("ab中文", 3, "ab|中|文");
    expect_wrap("hi 中文字符", 6, "hi 中|文字符");
    expect_wrap("x\xF0\x9F\x98\x80y", 2, "x|\xF0\x9F\x98\x80|y");
    /* width 1 with a wide character: it gets a line of its own */
    expect_wrap("中a", 1, "中|a");
}

static void test_wrap_random(void) {
    static const char *const pieces[] = {"a", "bc", "def", "longerword", " ", " ", "  ", "\n",
                                         "中", "文字", "😀", "é", "e\xCC\x81", "\t", "xyz."};
    unsigned seed = 12345;
    int bad = 0;
    for (int iter = 0; iter < 3000; iter++) {
        char s[400];
        size_t len = 0;
        int np = (int)((seed = seed * 1103515245 + 12345) >> 16) % 40;
        for (int i = 0; i < np; i++) {
            const char *p = pieces[((seed = seed * 1103515245 + 12345) >> 16) % (sizeof pieces / sizeof *pieces)];
            size_t pl = strlen(p);
            if (len + pl >= sizeof s) break;
            memcpy(s + len, p, pl);
            len += pl;
        }
        s[len] = 0;
        int width = 1 + (int)(((seed = seed * 1103515245 + 12345) >> 16) % 30);
        pt_wrap_line lines[512];
        int n = pt_wrap_words(s, len, width, lines, 512);
        /* invariants: lines in order, within the text, fit the width
         * (unless one character is wider), and no character other than
         * spaces and newlines is lost */
        size_t prev_end = 0;
        size_t nonspace_in = 0, nonspace_out = 0;
        for (size_t i = 0; i < len; i++) nonspace_in += s[i] != ' ' && s[i] != '\n';
        for (int i = 0; i < n; i++) {
            pt_wrap_line *l = &lines[i];
            if (l->start < prev_end || l->end < l->start || l->end > len) { bad++; break; }
            int cells = pt_str_cells(s + l->start, l->end - l->start);
            uint32_t cp;
            int first = l->end > l->start ? pt_ui_utf8_decode(s + l->start, l->end - l->start, &cp) : 0;
            bool single = (size_t)first == l->end - l->start;
            if (cells != l->cells || (cells > width && !single)) { bad++; break; }
            /* soft-wrapped text never carries the breaking space to the next line */
            for (uint32_t k = l->start; k < l->end; k++) nonspace_out += s[k] != ' ' && s[k] != '\n';
            prev_end = l->end;
        }
        if (nonspace_in != nonspace_out) bad++;
        if (bad) {
            fprintf(stderr, "wrap invariant broken for width %d: \"%s\"\n", width, s);
            break;
        }
    }
    CHECK(bad == 0, "random wrap invariants");
}

static void test_char_wrap_and_locate(void) {
    const char *s = "abcdef\n中文x";
    pt_wrap_line lines[16];
    int n = pt_wrap_chars(s, strlen(s), 4, lines, 16);
    /* "abcd" "ef" "中文" "x": every byte except the newline is on a line */
    CHECK(n == 4, "char wrap lines %d", n);
    CHECK(lines[0].start == 0 && lines[0].end == 4 && lines[1].start == 4 && lines[1].end == 6, "line 0/1");
    CHECK(lines[2].start == 7 && lines[2].end == 13 && lines[2].cells == 4, "line 2");
    CHECK(lines[3].start == 13 && lines[3].end == strlen(s) && lines[3].cells == 1, "line 3");
    int row, col;
    pt_wrap_locate(lines, n, s, 4, &row, &col);
    CHECK(row == 1 && col == 0, "cursor at a soft break goes to the next line (%d,%d)", row, col);
    pt_wrap_locate(lines, n, s, 6, &row, &col);
    CHECK(row == 1 && col == 2, "cursor before the newline (%d,%d)", row, col);
    pt_wrap_locate(lines, n, s, 10, &row, &col);
    CHECK(row == 2 && col == 2, "cursor after a wide char counts 2 cells (%d,%d)", row, col);
    pt_wrap_locate(lines, n, s, strlen(s), &row, &col);
    CHECK(row == 3 && col == 1, "cursor at the end (%d,%d)", row, col);
    /* a wide char that does not fit the rest of the line moves down whole */
    const char *t = "abc中";
    n = pt_wrap_chars(t, strlen(t), 4, lines, 16);
    CHECK(n == 2 && lines[0].end == 3 && lines[1].cells == 2, "wide char moves to the next line");
}

int main(void) {
    if (!setlocale(LC_ALL, "C.UTF-8") && !setlocale(LC_ALL, "C.utf8")) {
        fprintf(stderr, "no C.UTF-8 locale\n");
        return 1;
    }
    pt_text_init();
    CHECK(pt_text_utf8(), "C.UTF-8 detected as UTF-8");
    test_codec_against_libc();
    test_invalid_sequences();
    test_widths();
    test_wrap_cases();
    test_wrap_random();
    test_char_wrap_and_locate();
    return check_done("ui_text");
}
