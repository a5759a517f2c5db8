/*
 * cells.c — pictures made of characters, through libchafa: chafa picks
 * for each cell the symbol (blocks and box-drawing borders, chafa's
 * defaults for its "block" and "border" classes, plus space) and the
 * foreground/background colours that best match the pixels under it,
 * and samples the original image itself. Canvas mode by colour depth:
 * truecolor (SGR 38;2 / 48;2), 256 (38;5, colours 16-255), 16 (30-37,
 * 90-97), else foreground/background only.
 *
 * chafa_canvas_print ends rows with '\n'. A newline would break out of a
 * block of cells that does not start at column 0, so each row is written
 * after DECRC (the block's top-left, saved by DECSC first) and CSI r B
 * (down r rows, no scrolling); the attributes are reset after each row
 * (SGR 0) and the cursor restored at the end. Every symbol chosen is one
 * column wide, so a row of cols symbols covers exactly the block.
 */
#include <chafa.h>
#include <string.h>

#include "gfx_internal.h"

/* depth is pt_term_caps.color_depth: 24 (bits), 256, 16 or 2 (colours).
 * 256 colours use the 240 of the colour cube and grey ramp only: the first
 * 16 are the user's theme, whatever colours it gives them. */
static ChafaCanvasMode canvas_mode(int depth) {
    switch (depth) {
    case 24: return CHAFA_CANVAS_MODE_TRUECOLOR;
    case 256: return CHAFA_CANVAS_MODE_INDEXED_240;
    case 16: return CHAFA_CANVAS_MODE_INDEXED_16;
    default: return CHAFA_CANVAS_MODE_FGBG;
    }
}

bool pt_gfx_encode_cells(const pt_gfx_image *img, const pt_gfx_fit *fit, int color_depth,
                         pt_gfx_buf *out) {
    /* One thread: chafa draws on the caller's thread. Its default pool of
     * glib worker threads outlives the call, and a worker still finishing
     * when the caller returns held an allocation that LeakSanitizer (in
     * fuzz_gfx_reply, once in a few thousand runs) saw as leaked. A block
     * of terminal cells is drawn in milliseconds on one core anyway. */
    chafa_set_n_threads(1);
    ChafaSymbolMap *map = chafa_symbol_map_new();
    chafa_symbol_map_add_by_tags(map, CHAFA_SYMBOL_TAG_BLOCK | CHAFA_SYMBOL_TAG_BORDER |
                                          CHAFA_SYMBOL_TAG_SPACE);
    /* wide symbols would cover two columns: none in a block of fixed width */
    chafa_symbol_map_remove_by_tags(map, CHAFA_SYMBOL_TAG_WIDE);
    ChafaCanvasConfig *config = chafa_canvas_config_new();
    chafa_canvas_config_set_canvas_mode(config, canvas_mode(color_depth));
    chafa_canvas_config_set_geometry(config, fit->cols, fit->rows);
    chafa_canvas_config_set_symbol_map(config, map);
    if (color_depth != 24) {
        /* few colours: an ordered dither instead of flat bands (looked at
         * in xterm: a smooth gradient in 256 colours otherwise shows a
         * cell-sized staircase), and colours matched in DIN99d, where
         * distance is closer to what the eye sees than in RGB */
        chafa_canvas_config_set_dither_mode(config, CHAFA_DITHER_MODE_ORDERED);
        chafa_canvas_config_set_color_space(config, CHAFA_COLOR_SPACE_DIN99D);
    }
    ChafaCanvas *canvas = chafa_canvas_new(config);
    chafa_canvas_draw_all_pixels(canvas, CHAFA_PIXEL_RGB8, img->rgb, img->w, img->h, img->stride);
    /* chafa's fallback terminal: the standard SGR sequences for every
     * canvas mode (what a NULL term_info means too, said explicitly) */
    ChafaTermInfo *ti = chafa_term_db_get_fallback_info(chafa_term_db_get_default());
    GString *text = chafa_canvas_print(canvas, ti);
    chafa_term_info_unref(ti);

    pt_gfx_buf_append(out, "\0337", 2);
    const char *row = text->str, *end = text->str + text->len;
    for (int r = 0; r < fit->rows && row < end; r++) {
        const char *nl = memchr(row, '\n', (size_t)(end - row));
        const char *stop = nl ? nl : end;
        if (r > 0) pt_gfx_buf_printf(out, "\0338\033[%dB", r);
        pt_gfx_buf_append(out, row, (size_t)(stop - row));
        pt_gfx_buf_append(out, "\033[0m", 4);
        row = nl ? nl + 1 : end;
    }
    pt_gfx_buf_append(out, "\0338", 2);

    g_string_free(text, TRUE);
    chafa_canvas_unref(canvas);
    chafa_canvas_config_unref(config);
    chafa_symbol_map_unref(map);
    return !out->oom;
}
