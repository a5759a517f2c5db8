/*
 * test_gfx_encode.c — the picture encoders (ui/graphics), each read back:
 *   sixel   decoded by libsixel (sixel_decode_raw) and compared with the
 *           input scaled to the same size: mean absolute error per
 *           channel under a bound (printed);
 *   kitty   the escape codes' keys and chunking checked, the base64
 *           payload decoded and compared byte for byte with the scaled input;
 *   iTerm2  the OSC 1337 arguments checked, the base64 PNG decoded by
 *           stb_image and compared byte for byte;
 *   cells   libchafa's output played on a small cursor model: exactly the
 *           block's rows and columns, the cursor never outside it and back
 *           at its top-left, only colour SGRs the canvas mode allows;
 * on pictures of odd sizes (1x1, 7x3, very wide, very tall), plus the fit,
 * the tmux wrapper (every ESC doubled), kitty's delete, the placeholder
 * and bad arguments. PETREL_GFX_DUMP=DIR writes the decoded sixel
 * pictures there as PNG, to look at.
 */
#include <glib.h>
#include <math.h>
#include <sixel.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <stb_image.h>
#include <stb_image_write.h>

#include "check.h"
#include "gfx_internal.h"

/* A test picture: smooth gradients, a disc and a hard-edged square, so
 * both the palette and the edges are exercised. */
static uint8_t *make_picture(int w, int h) {
    uint8_t *p = malloc((size_t)w * h * 3);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint8_t *px = p + ((size_t)y * w + x) * 3;
            const double u = w > 1 ? (double)x / (w - 1) : 0.5, v = h > 1 ? (double)y / (h - 1) : 0.5;
            px[0] = (uint8_t)(255 * u);
            px[1] = (uint8_t)(255 * v);
            px[2] = (uint8_t)(255 * (1 - u) * (1 - v));
            const double dx = u - 0.35, dy = v - 0.4;
            if (dx * dx + dy * dy < 0.04) px[0] = 250, px[1] = 220, px[2] = 30;
            if (u > 0.6 && u < 0.85 && v > 0.55 && v < 0.8) px[0] = 20, px[1] = 40, px[2] = 200;
        }
    return p;
}

static pt_term_caps caps_for(pt_gfx_proto proto) {
    pt_term_caps c = {.proto = proto, .cols = 80, .rows = 24, .cell_w = 10, .cell_h = 20,
                      .color_depth = 24, .cell_from = "test"};
    return c;
}

/* ---- sixel ---------------------------------------------------------------- */

static void dump_png(const char *name, const uint8_t *rgb, int w, int h) {
    const char *dir = getenv("PETREL_GFX_DUMP");
    if (!dir) return;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.png", dir, name);
    stbi_write_png(path, w, h, 3, rgb, w * 3);
}

/* The mean absolute error per channel of got against want (w x h RGB8),
 * raw and after a 3x3 box blur of both: a dither trades per-pixel error
 * for a right average, and the blurred error is the part the eye sees. */
static void errors(const uint8_t *got, const uint8_t *want, int w, int h, double *raw, double *blurred) {
    double sum = 0, bsum = 0;
    for (int i = 0; i < w * h * 3; i++) sum += fabs((double)got[i] - want[i]);
    *raw = sum / ((double)w * h * 3);
    long n = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int k = 0; k < 3; k++) {
                double a = 0, b = 0;
                int m = 0;
                for (int dy = -1; dy <= 1; dy++)
                    for (int dx = -1; dx <= 1; dx++) {
                        int yy = y + dy, xx = x + dx;
                        if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
                        a += got[((size_t)yy * w + xx) * 3 + k];
                        b += want[((size_t)yy * w + xx) * 3 + k];
                        m++;
                    }
                bsum += fabs(a - b) / m;
                n++;
            }
    *blurred = bsum / (double)n;
}

/* Encode an iw x ih picture as sixel in cols x rows cells with `colors`
 * registers (0: unknown), decode it with libsixel, and give the errors
 * against the input scaled to the same size (-1 when something failed). */
static void sixel_round_trip(const char *name, int iw, int ih, int cols, int rows, int colors, double *raw,
                             double *blurred) {
    *raw = *blurred = -1;
    uint8_t *src = make_picture(iw, ih);
    const pt_gfx_image img = {.rgb = src, .w = iw, .h = ih, .stride = iw * 3};
    pt_term_caps c = caps_for(PT_GFX_SIXEL);
    c.sixel_colors = colors;
    pt_gfx_buf out = {0};
    int uc = 0, ur = 0;
    bool ok = pt_gfx_encode(&c, &img, cols, rows, 1, &out, &uc, &ur);
    CHECK(ok, "%s: encode", name);
    pt_gfx_fit fit;
    pt_gfx_fit_box(iw, ih, cols, rows, 10, 20, 0, 0, &fit);
    CHECK(uc == fit.cols && ur == fit.rows && uc <= cols && ur <= rows, "%s: used %dx%d of %dx%d", name,
          uc, ur, cols, rows);
    /* DECSC, DCS q "1;1;W;H (raster attributes: the exact size) ... ST, DECRC */
    char raster[64];
    snprintf(raster, sizeof raster, "\"1;1;%d;%d#", fit.px_w, fit.px_h);
    CHECK(ok && out.len > 8 && !memcmp(out.data, "\0337\033P", 4) &&
              !memcmp(out.data + out.len - 4, "\033\\\0338", 4) && memmem(out.data, 32, raster, strlen(raster)),
          "%s: DECSC DCS q %s ... ST DECRC", name, raster);
    unsigned char *idx = NULL, *pal = NULL;
    int w = 0, h = 0, ncolors = 0;
    sixel_allocator_t *alloc = NULL;
    sixel_allocator_new(&alloc, malloc, calloc, realloc, free);
    if (ok && alloc &&
        SIXEL_SUCCEEDED(sixel_decode_raw((unsigned char *)out.data + 2, (int)out.len - 4, &idx, &w, &h, &pal,
                                         &ncolors, alloc))) {
        /* libsixel's decoder rounds the height up to whole 6-pixel bands
         * (and a little over); the picture is the top px_h rows */
        CHECK(w == fit.px_w && h >= fit.px_h, "%s: decoded %dx%d, want %dx%d", name, w, h, fit.px_w, fit.px_h);
        CHECK(ncolors <= (colors ? colors : 256), "%s: %d palette entries for %d registers", name, ncolors,
              colors);
        uint8_t *want = pt_gfx_scale(&img, fit.px_w, fit.px_h);
        if (w == fit.px_w && h >= fit.px_h && want) {
            const int n = fit.px_w * fit.px_h;
            uint8_t *got = malloc((size_t)n * 3);
            for (int i = 0; i < n; i++)
                for (int k = 0; k < 3; k++) got[i * 3 + k] = pal[idx[i] * 3 + k]; /* palette: RGB per entry */
            errors(got, want, fit.px_w, fit.px_h, raw, blurred);
            dump_png(name, got, fit.px_w, fit.px_h);
            free(got);
        }
        free(want);
        free(idx);
        free(pal);
    } else {
        CHECK(0, "%s: libsixel could not decode our output", name);
    }
    sixel_allocator_unref(alloc);
    printf("sixel %-8s %4dx%-4d -> %4dx%-4d px, %3d registers: mean abs error %5.2f, %5.2f after a 3x3 blur (of 255)\n",
           name, iw, ih, fit.px_w, fit.px_h, colors ? colors : 256, *raw, *blurred);
    pt_gfx_buf_free(&out);
    free(src);
}

static void test_sixel(void) {
    /* Bounds from the measured values (printed) with a margin: 256
     * registers (Floyd-Steinberg) 7.6 raw / 3.3 blurred on the 400x300
     * picture, 16 registers (a VT340; Atkinson) 14.5 / 7.8. A lost palette or a picture shifted by a
     * pixel fails them by far (the hard edges of the disc and square). */
    struct { const char *name; int w, h, cols, rows, colors; double raw, blurred; } cases[] = {
        {"picture", 256, 192, 40, 15, 0, 10, 5},
        {"vt340", 256, 192, 40, 15, 16, 20, 11},
        /* one flat colour: libsixel builds its histogram at reduced
         * precision, measured 4.3 off */
        {"1x1", 1, 1, 3, 2, 0, 6, 6},
        {"7x3", 7, 3, 5, 5, 0, 12, 6.5},
        {"wide", 2000, 16, 80, 24, 0, 12, 6.5},
        {"tall", 5, 900, 80, 10, 0, 12, 6.5},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double raw, blurred;
        sixel_round_trip(cases[i].name, cases[i].w, cases[i].h, cases[i].cols, cases[i].rows, cases[i].colors, &raw,
                         &blurred);
        CHECK(raw >= 0 && raw < cases[i].raw && blurred < cases[i].blurred,
              "sixel %s: mean error %.2f (bound %.1f), blurred %.2f (bound %.1f)", cases[i].name, raw, cases[i].raw,
              blurred, cases[i].blurred);
    }

    /* A picture under 6 rows (800x3 here) fills part of one sixel band.
     * libsixel's decoder puts such a band 6 rows down (a decoder quirk,
     * so it is not decoded here); the encoding itself must set only the
     * picture's rows: every sixel character in '?'..'F' (bits 0-2,
     * DEC STD 070: a sixel is 0x3f + a 6-bit column, bit 0 on top). */
    {
        uint8_t *thin = make_picture(2000, 7);
        const pt_gfx_image timg = {.rgb = thin, .w = 2000, .h = 7, .stride = 2000 * 3};
        pt_term_caps c = caps_for(PT_GFX_SIXEL);
        pt_gfx_buf out = {0};
        int uc = 0, ur = 0;
        CHECK(pt_gfx_encode(&c, &timg, 80, 24, 1, &out, &uc, &ur) && uc == 80 && ur == 1, "thin: %dx%d cells", uc, ur);
        const char *body = memmem(out.data, out.len, "\"1;1;800;3", 10);
        int outside = 0, sixels = 0;
        for (const char *p = body; p && p < out.data + out.len - 4; p++) {
            if (*p == '#' || *p == '!' || *p == '"') { /* colour, repeat count, raster: numbers follow */
                p++;
                while (p < out.data + out.len && ((*p >= '0' && *p <= '9') || *p == ';')) p++;
                p--;
            } else if (*p >= 0x3f && *p <= 0x7e) {
                sixels++;
                outside += *p > 'F';
            }
        }
        CHECK(body && sixels > 0 && outside == 0, "thin: %d of %d sixels set rows below the picture", outside, sixels);
        pt_gfx_buf_free(&out);
        free(thin);
    }

    /* the terminal's maximum sixel geometry bounds the picture */
    uint8_t *src = make_picture(64, 64);
    const pt_gfx_image img = {.rgb = src, .w = 64, .h = 64, .stride = 64 * 3};
    pt_term_caps c = caps_for(PT_GFX_SIXEL);
    c.sixel_max_w = c.sixel_max_h = 100;
    pt_gfx_buf out = {0};
    int uc, ur;
    CHECK(pt_gfx_encode(&c, &img, 80, 24, 1, &out, &uc, &ur) && uc == 10 && ur == 5,
          "max geometry 100x100: %dx%d cells", uc, ur);
    pt_gfx_buf_free(&out);
    free(src);
}

/* ---- kitty ---------------------------------------------------------------- */

static const char *find(const char *hay, size_t n, const char *needle) {
    return memmem(hay, n, needle, strlen(needle));
}

static void kitty_round_trip(const char *name, int iw, int ih, int cols, int rows) {
    uint8_t *src = make_picture(iw, ih);
    const pt_gfx_image img = {.rgb = src, .w = iw, .h = ih, .stride = iw * 3};
    pt_term_caps c = caps_for(PT_GFX_KITTY);
    pt_gfx_buf out = {0};
    int uc = 0, ur = 0;
    CHECK(pt_gfx_encode(&c, &img, cols, rows, 7, &out, &uc, &ur), "%s: encode", name);
    pt_gfx_fit fit;
    pt_gfx_fit_box(iw, ih, cols, rows, 10, 20, 0, 0, &fit);
    /* walk the APC G ... ESC \ codes */
    GString *payload = g_string_new(NULL);
    int codes = 0, bad_chunk = 0, last_m = -1;
    char first[256] = "";
    const char *p = out.data, *end = out.data + out.len;
    while (p < end) {
        if (end - p < 3 || memcmp(p, "\033_G", 3)) {
            CHECK(0, "%s: byte %td is not the start of a kitty code", name, p - out.data);
            break;
        }
        const char *st = find(p, (size_t)(end - p), "\033\\");
        const char *semi = memchr(p, ';', (size_t)(end - p));
        if (!st || !semi || semi > st) {
            CHECK(0, "%s: unterminated code", name);
            break;
        }
        const size_t keys_len = (size_t)(semi - p - 3), n = (size_t)(st - semi - 1);
        if (codes == 0) snprintf(first, sizeof first, "%.*s", (int)keys_len, p + 3);
        else if (keys_len != 7 || (memcmp(p + 3, "m=1,q=2", 7) && memcmp(p + 3, "m=0,q=2", 7))) bad_chunk++;
        last_m = find(p + 3, keys_len, "m=1") ? 1 : 0;
        if (n > PT_GFX_KITTY_CHUNK || (last_m && n % 4)) bad_chunk++;
        if (last_m == 0 && st + 2 != end) bad_chunk++; /* m=0 only on the last */
        g_string_append_len(payload, semi + 1, (gssize)n);
        codes++;
        p = st + 2;
    }
    char want_size[64];
    snprintf(want_size, sizeof want_size, "a=T,f=24,s=%d,v=%d,i=7,", fit.px_w, fit.px_h);
    CHECK(!strncmp(first, want_size, strlen(want_size)), "%s: first keys '%s'", name, first);
    char cells[32];
    snprintf(cells, sizeof cells, fit.width_bound ? "c=%d," : "r=%d,", fit.width_bound ? fit.cols : fit.rows);
    CHECK(strstr(first, cells) && strstr(first, "q=2") && strstr(first, "C=1"), "%s: keys '%s' want %s q=2 C=1",
          name, first, cells);
    CHECK(bad_chunk == 0 && last_m == 0, "%s: %d badly formed chunks of %d", name, bad_chunk, codes);
    gsize len = 0;
    guchar *raw = g_base64_decode(payload->str, &len);
    uint8_t *want = pt_gfx_scale(&img, fit.px_w, fit.px_h);
    CHECK(len == (gsize)fit.px_w * fit.px_h * 3 && want && !memcmp(raw, want, len),
          "%s: payload (%zu bytes) is not the scaled picture", name, (size_t)len);
    CHECK(uc == fit.cols && ur == fit.rows, "%s: used %dx%d", name, uc, ur);
    printf("kitty %-10s %dx%d -> %dx%d px in %d codes, payload identical\n", name, iw, ih, fit.px_w,
           fit.px_h, codes);
    g_free(raw);
    free(want);
    g_string_free(payload, TRUE);
    pt_gfx_buf_free(&out);
    free(src);
}

static void test_kitty(void) {
    kitty_round_trip("picture", 256, 192, 40, 12);
    kitty_round_trip("1x1", 1, 1, 1, 1);
    kitty_round_trip("7x3", 7, 3, 5, 5);
    kitty_round_trip("wide", 3000, 4, 80, 24);

    pt_term_caps c = caps_for(PT_GFX_KITTY);
    pt_gfx_buf out = {0};
    pt_gfx_erase(&c, 7, &out);
    CHECK(out.len == strlen("\033_Ga=d,d=I,i=7,q=2\033\\") && !memcmp(out.data, "\033_Ga=d,d=I,i=7,q=2\033\\", out.len),
          "kitty delete by id: %.*s", (int)out.len, out.data);
    out.len = 0;
    pt_gfx_erase(&c, 0, &out);
    CHECK(out.len && !memcmp(out.data, "\033_Ga=d,d=A,q=2\033\\", out.len), "kitty delete all");
    out.len = 0;
    c.proto = PT_GFX_SIXEL;
    pt_gfx_erase(&c, 7, &out);
    CHECK(out.len == 0, "sixel erase writes nothing (the caller repaints)");
    pt_gfx_buf_free(&out);
}

/* ---- iTerm2 --------------------------------------------------------------- */

static void iterm2_round_trip(const char *name, int iw, int ih, int cols, int rows) {
    uint8_t *src = make_picture(iw, ih);
    const pt_gfx_image img = {.rgb = src, .w = iw, .h = ih, .stride = iw * 3};
    pt_term_caps c = caps_for(PT_GFX_ITERM2);
    pt_gfx_buf out = {0};
    int uc = 0, ur = 0;
    bool ok = pt_gfx_encode(&c, &img, cols, rows, 1, &out, &uc, &ur);
    pt_gfx_fit fit;
    pt_gfx_fit_box(iw, ih, cols, rows, 10, 20, 0, 0, &fit);
    const char *head = "\0337\033]1337;File=inline=1;size=";
    CHECK(ok && out.len > 40 && !memcmp(out.data, head, strlen(head)) &&
              !memcmp(out.data + out.len - 3, "\a\0338", 3),
          "%s: DECSC OSC 1337 ... BEL DECRC", name);
    if (!ok) return;
    char *text = g_strndup(out.data, out.len);
    size_t size = 0;
    int w = 0, h = 0, keep = 0, used = 0;
    int got = sscanf(text + strlen(head), "%zu;width=%d;height=%d;preserveAspectRatio=%d:%n", &size, &w, &h,
                     &keep, &used);
    CHECK(got == 4 && w == fit.cols && h == fit.rows && keep == 1, "%s: arguments size %zu %dx%d keep %d", name,
          size, w, h, keep);
    char *b64 = text + strlen(head) + used;
    text[out.len - 3] = '\0'; /* cut at BEL */
    gsize len = 0;
    guchar *png = g_base64_decode(b64, &len);
    CHECK(len == size, "%s: size=%zu but the PNG has %zu bytes", name, size, (size_t)len);
    int pw = 0, ph = 0, comp = 0;
    uint8_t *px = stbi_load_from_memory(png, (int)len, &pw, &ph, &comp, 3);
    uint8_t *want = pt_gfx_scale(&img, fit.px_w, fit.px_h);
    CHECK(px && pw == fit.px_w && ph == fit.px_h && want && !memcmp(px, want, (size_t)pw * ph * 3),
          "%s: the PNG (%dx%d) is not the scaled picture", name, pw, ph);
    printf("iterm2 %-9s %dx%d -> %dx%d px PNG of %zu bytes, pixels identical\n", name, iw, ih, pw, ph, size);
    stbi_image_free(px);
    free(want);
    g_free(png);
    g_free(text);
    pt_gfx_buf_free(&out);
    free(src);
}

static void test_iterm2(void) {
    iterm2_round_trip("picture", 256, 192, 40, 12);
    iterm2_round_trip("1x1", 1, 1, 2, 2);
    iterm2_round_trip("7x3", 7, 3, 5, 5);
    iterm2_round_trip("tall", 3, 2000, 80, 24);
}

/* ---- character cells ------------------------------------------------------ */

/* Play s on a cursor model of a block of cols x rows: printable
 * characters advance one column; ESC 7 / ESC 8 save and restore; CSI n B
 * moves down; CSI ... m sets colours (checked against the mode). Anything
 * else, or a character outside the block, is an error. Counts the cells
 * written per row. */
typedef struct cursor_play {
    int max_x, max_y;       /* furthest cell written */
    int end_x, end_y;       /* where the cursor ends */
    int written;            /* characters written */
    int per_row[64];
    bool outside, unknown_seq, truecolor_sgr, indexed_sgr, newline;
} cursor_play;

static cursor_play play_cells(const char *s, size_t n, int cols, int rows) {
    cursor_play r = {.max_x = -1, .max_y = -1};
    int x = 0, y = 0, sx = 0, sy = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c == 0x1b && i + 1 < n && (s[i + 1] == '7' || s[i + 1] == '8')) {
            if (s[i + 1] == '7') sx = x, sy = y;
            else x = sx, y = sy;
            i += 2;
        } else if (c == 0x1b && i + 1 < n && s[i + 1] == '[') {
            size_t j = i + 2;
            while (j < n && ((s[j] >= '0' && s[j] <= '9') || s[j] == ';')) j++;
            if (j >= n) { r.unknown_seq = true; break; }
            if (s[j] == 'B') {
                y += atoi(s + i + 2);
            } else if (s[j] == 'm') {
                if (memmem(s + i, j - i, "38;2;", 5) || memmem(s + i, j - i, "48;2;", 5)) r.truecolor_sgr = true;
                if (memmem(s + i, j - i, "38;5;", 5) || memmem(s + i, j - i, "48;5;", 5)) r.indexed_sgr = true;
            } else {
                r.unknown_seq = true;
            }
            i = j + 1;
        } else if (c < 0x20 || c == 0x7f) {
            if (c == '\n' || c == '\r') r.newline = true;
            else r.unknown_seq = true;
            i++;
        } else {
            /* one UTF-8 character, one column */
            size_t len = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
            if (x < 0 || x >= cols || y < 0 || y >= rows) r.outside = true;
            if (x > r.max_x) r.max_x = x;
            if (y > r.max_y) r.max_y = y;
            if (y >= 0 && y < 64) r.per_row[y]++;
            r.written++;
            x++;
            i += len;
        }
    }
    r.end_x = x;
    r.end_y = y;
    return r;
}

static void cells_case(const char *name, int iw, int ih, int cols, int rows, int depth) {
    uint8_t *src = make_picture(iw, ih);
    const pt_gfx_image img = {.rgb = src, .w = iw, .h = ih, .stride = iw * 3};
    pt_term_caps c = caps_for(PT_GFX_SYMBOLS);
    c.color_depth = depth;
    pt_gfx_buf out = {0};
    int uc = 0, ur = 0;
    CHECK(pt_gfx_encode(&c, &img, cols, rows, 1, &out, &uc, &ur), "%s: encode", name);
    CHECK(uc >= 1 && ur >= 1 && uc <= cols && ur <= rows, "%s: used %dx%d of %dx%d", name, uc, ur, cols, rows);
    cursor_play p = play_cells(out.data, out.len, uc, ur);
    CHECK(!p.outside && !p.unknown_seq && !p.newline, "%s: outside %d, unknown sequence %d, newline %d", name,
          p.outside, p.unknown_seq, p.newline);
    CHECK(p.max_x == uc - 1 && p.max_y == ur - 1 && p.written == uc * ur, "%s: wrote %d cells up to (%d,%d), want %dx%d",
          name, p.written, p.max_x, p.max_y, uc, ur);
    int uneven = 0;
    for (int y = 0; y < ur && y < 64; y++) uneven += p.per_row[y] != uc;
    CHECK(uneven == 0, "%s: %d rows without exactly %d cells", name, uneven, uc);
    CHECK(p.end_x == 0 && p.end_y == 0, "%s: the cursor ends at (%d,%d), not the block's top-left", name, p.end_x,
          p.end_y);
    if (depth == 256) CHECK(!p.truecolor_sgr && p.indexed_sgr, "%s: 256 colours use 38;5 only", name);
    if (depth == 16) CHECK(!p.truecolor_sgr && !p.indexed_sgr, "%s: 16 colours use no 38;2 / 38;5", name);
    if (depth == 24) CHECK(p.truecolor_sgr, "%s: truecolor uses 38;2", name);
    printf("cells %-10s %dx%d in %dx%d cells, %d-colour mode: %zu bytes\n", name, iw, ih, uc, ur, depth, out.len);
    pt_gfx_buf_free(&out);
    free(src);
}

static void test_cells(void) {
    cells_case("truecolor", 256, 192, 40, 12, 24);
    cells_case("256", 256, 192, 40, 12, 256);
    cells_case("16", 256, 192, 40, 12, 16);
    cells_case("1x1", 1, 1, 4, 4, 24);
    cells_case("7x3", 7, 3, 9, 9, 256);
    cells_case("wide", 4000, 3, 60, 20, 24);
    cells_case("tall", 3, 4000, 60, 20, 16);
    cells_case("one cell", 300, 300, 1, 1, 24);
}

/* ---- the rest ------------------------------------------------------------- */

static void test_fit(void) {
    pt_gfx_fit f;
    CHECK(pt_gfx_fit_box(512, 512, 80, 22, 10, 20, 0, 0, &f) && f.px_w == 440 && f.px_h == 440 && f.cols == 44 &&
              f.rows == 22 && !f.width_bound,
          "512x512 in 80x22 cells of 10x20: %dx%d px %dx%d cells", f.px_w, f.px_h, f.cols, f.rows);
    CHECK(pt_gfx_fit_box(64, 64, 80, 22, 0, 0, 0, 0, &f) && f.cell_w == 10 && f.cell_h == 20 && f.px_h == 440,
          "unknown cell: 10x20, scaled up");
    CHECK(pt_gfx_fit_box(1000, 1, 10, 10, 10, 20, 0, 0, &f) && f.px_w == 100 && f.px_h == 1 && f.rows == 1,
          "very wide: %dx%d", f.px_w, f.px_h);
    CHECK(pt_gfx_fit_box(7, 3, 1, 1, 10, 20, 0, 0, &f) && f.px_w == 10 && f.px_h == 4 && f.cols == 1 && f.rows == 1,
          "7x3 in one cell: %dx%d", f.px_w, f.px_h);
    CHECK(pt_gfx_fit_box(100, 100, 4096, 4096, 512, 512, 0, 0, &f) && f.px_w <= PT_GFX_MAX_SIDE,
          "huge box capped at %d: %d", PT_GFX_MAX_SIDE, f.px_w);
    CHECK(!pt_gfx_fit_box(0, 5, 10, 10, 10, 20, 0, 0, &f) && !pt_gfx_fit_box(5, 5, 0, 10, 10, 20, 0, 0, &f),
          "zero sizes refused");
}

static void test_tmux_wrap(void) {
    const char in[] = "\033Pq#0;2;0;0;0\033\\x\033\033";
    pt_gfx_buf out = {0};
    pt_gfx_tmux_wrap(in, sizeof in - 1, &out);
    const char want[] = "\033Ptmux;\033\033Pq#0;2;0;0;0\033\033\\x\033\033\033\033\033\\";
    CHECK(out.len == sizeof want - 1 && !memcmp(out.data, want, out.len), "wrap: %zu bytes", out.len);
    /* a whole picture: unwrapping (ESC ESC -> ESC) gives the plain bytes back */
    uint8_t *src = make_picture(40, 30);
    const pt_gfx_image img = {.rgb = src, .w = 40, .h = 30, .stride = 120};
    for (int proto = PT_GFX_SIXEL; proto <= PT_GFX_ITERM2; proto++) {
        pt_term_caps c = caps_for((pt_gfx_proto)proto);
        pt_gfx_buf plain = {0}, wrapped = {0};
        pt_gfx_encode(&c, &img, 10, 5, 3, &plain, NULL, NULL);
        c.tmux = c.passthrough = c.wrap_tmux = true;
        pt_gfx_encode(&c, &img, 10, 5, 3, &wrapped, NULL, NULL);
        bool good = wrapped.len > 9 && !memcmp(wrapped.data, "\033Ptmux;", 7) &&
                    !memcmp(wrapped.data + wrapped.len - 2, "\033\\", 2);
        size_t o = 0;
        bool doubled = true;
        char *un = malloc(wrapped.len);
        for (size_t i = 7; good && i < wrapped.len - 2; i++) {
            if (wrapped.data[i] == 0x1b) {
                if (i + 1 >= wrapped.len - 2 || wrapped.data[i + 1] != 0x1b) doubled = false;
                i++;
            }
            un[o++] = wrapped.data[i];
        }
        CHECK(good && doubled && o == plain.len && !memcmp(un, plain.data, o), "%s wrapped: every ESC doubled",
              pt_gfx_name((pt_gfx_proto)proto));
        free(un);
        pt_gfx_buf_free(&plain);
        pt_gfx_buf_free(&wrapped);
    }
    free(src);
    pt_gfx_buf_free(&out);
}

static void test_bad_and_none(void) {
    uint8_t px[3 * 4] = {0};
    pt_gfx_image img = {.rgb = px, .w = 2, .h = 2, .stride = 6};
    pt_term_caps c = caps_for(PT_GFX_NONE);
    pt_gfx_buf out = {0};
    int uc = -1, ur = -1;
    CHECK(pt_gfx_encode(&c, &img, 80, 24, 1, &out, &uc, &ur) && ur == 1 && out.len == (size_t)uc &&
              !memcmp(out.data, "[picture 2x2]", out.len),
          "none: one line of text, got '%.*s'", (int)out.len, out.data);
    out.len = 0;
    CHECK(pt_gfx_encode(&c, &img, 5, 24, 1, &out, &uc, &ur) && uc == 5 && out.len == 5, "none: cut to the width");
    c.proto = PT_GFX_SIXEL;
    out.len = 0;
    CHECK(!pt_gfx_encode(&c, &img, 0, 24, 1, &out, &uc, &ur) && uc == 0 && ur == 0, "zero columns refused");
    CHECK(!pt_gfx_encode(&c, &img, 10, -1, 1, &out, NULL, NULL), "negative rows refused");
    img.stride = 5;
    CHECK(!pt_gfx_encode(&c, &img, 10, 10, 1, &out, NULL, NULL), "stride below 3 * width refused");
    img.stride = 6;
    img.rgb = NULL;
    CHECK(!pt_gfx_encode(&c, &img, 10, 10, 1, &out, NULL, NULL), "no pixels refused");
    CHECK(!pt_gfx_encode(NULL, &img, 10, 10, 1, &out, NULL, NULL), "no caps refused");
    CHECK(out.len == 0, "refusals append nothing");
    pt_gfx_buf_free(&out);
}

int main(void) {
    test_fit();
    test_sixel();
    test_kitty();
    test_iterm2();
    test_cells();
    test_tmux_wrap();
    test_bad_and_none();
    return check_done("gfx_encode");
}
