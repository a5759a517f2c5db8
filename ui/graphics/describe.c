/* describe.c — pt_gfx_describe: the probe's findings, "key: value" per line
 * (`petrel info --terminal`). */
#include <stdio.h>

#include "gfx_internal.h"

void pt_gfx_describe(const pt_term_caps *c, char *out, size_t cap) {
    if (!cap) return;
    char sixel[96] = "no";
    if (c->sixel) {
        int n = snprintf(sixel, sizeof sixel, "yes (DA1 attribute 4)");
        if (c->sixel_colors && n > 0 && (size_t)n < sizeof sixel)
            n += snprintf(sixel + n, sizeof sixel - (size_t)n, ", %d colour registers", c->sixel_colors);
        if (c->sixel_max_w && n > 0 && (size_t)n < sizeof sixel)
            snprintf(sixel + n, sizeof sixel - (size_t)n, ", at most %dx%d pixels", c->sixel_max_w,
                     c->sixel_max_h);
    }
    char cell[64];
    if (c->cell_w > 0)
        snprintf(cell, sizeof cell, "%dx%d pixels (%s)", c->cell_w, c->cell_h, c->cell_from);
    else
        snprintf(cell, sizeof cell, "unknown, %dx%d assumed", PT_GFX_DEFAULT_CELL_W, PT_GFX_DEFAULT_CELL_H);
    const char *depth = c->color_depth == 24 ? "truecolor" : c->color_depth == 256 ? "256" :
                        c->color_depth == 16 ? "16" : "2";
    snprintf(out, cap,
             "graphics: %s\n"
             "answered: %s\n"
             "sixel: %s\n"
             "kitty: %s\n"
             "iterm2: %s\n"
             "grid: %dx%d cells\n"
             "cell: %s\n"
             "colours: %s\n"
             "tmux: %s\n"
             "version: %s\n"
             "term: %s\n",
             pt_gfx_name(c->proto), c->answered ? "yes (DA1)" : "no",
             sixel, c->kitty ? "yes (graphics query OK)" : "no", c->iterm2 ? "yes" : "no", c->cols,
             c->rows, cell, depth,
             !c->tmux ? "no" : c->wrap_tmux ? "yes, pictures through passthrough" :
             c->passthrough ? "yes, passthrough allowed" : "yes, passthrough off",
             c->version[0] ? c->version : "(none)", c->term[0] ? c->term : "(unset)");
}
