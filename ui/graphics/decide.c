/*
 * decide.c — the probe's findings to pt_term_caps, and the ladder: auto
 * takes kitty (answered the graphics query with OK), else iTerm2 (its
 * name in XTVERSION, $TERM_PROGRAM or $LC_TERMINAL), else sixel (DA1
 * attribute 4), else character cells; NONE only where nothing may be
 * drawn (not a terminal, TERM=dumb).
 *
 * Inside tmux the replies are tmux's own: a DA1 with 4 means tmux draws
 * sixel itself (tmux 3.4 built with sixel), used as is. Otherwise, with
 * passthrough allowed, the outer terminal is known only from the
 * environment tmux inherited ($KITTY_WINDOW_ID, $LC_TERMINAL=iTerm2,
 * $WEZTERM_PANE), and its pictures go out wrapped; else character cells.
 */
#include <stdio.h>
#include <string.h>

#include "decide.h"
#include "gfx_internal.h"

static bool starts(const char *s, const char *prefix) {
    return s && !strncmp(s, prefix, strlen(prefix));
}

/* Terminals that draw OSC 1337 inline images, by XTVERSION's text or
 * $TERM_PROGRAM / $LC_TERMINAL. */
static bool iterm2_name(const char *s) {
    return starts(s, "iTerm2") || starts(s, "iTerm.app") || starts(s, "WezTerm") ||
           starts(s, "mintty");
}

static int color_depth(const pt_gfx_env *env, bool modern) {
    if (env->term && !strcmp(env->term, "dumb")) return 2;
    if (env->colorterm && (!strcmp(env->colorterm, "truecolor") || !strcmp(env->colorterm, "24bit")))
        return 24;
    if (modern) return 24; /* kitty, iTerm2, WezTerm all do 24-bit colour */
    if (env->term && strstr(env->term, "256color")) return 256;
    return 16;
}

static int clamp(int v, int lo, int hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

void pt_gfx_decide(const pt_gfx_replies *r, const pt_gfx_env *env, pt_gfx_proto want,
                   pt_term_caps *caps) {
    memset(caps, 0, sizeof *caps);
    caps->answered = r->da1;
    caps->sixel = r->sixel;
    caps->kitty = r->kitty_ok;
    caps->sixel_colors = r->sixel_colors;
    caps->sixel_max_w = r->sixel_max_w;
    caps->sixel_max_h = r->sixel_max_h;
    caps->tmux = env->tmux;
    caps->passthrough = env->tmux && env->passthrough;
    snprintf(caps->version, sizeof caps->version, "%s", r->version);
    snprintf(caps->term, sizeof caps->term, "%s%s%s", env->term ? env->term : "",
             env->term_program ? ", " : "", env->term_program ? env->term_program : "");
    for (char *c = caps->term; *c; c++) /* the environment's: shown, never obeyed */
        if (*c < 0x20 || *c == 0x7f) *c = '?';

    caps->cols = env->ws_cols > 0 ? clamp(env->ws_cols, 1, PT_GFX_MAX_CELLS) : 80;
    caps->rows = env->ws_rows > 0 ? clamp(env->ws_rows, 1, PT_GFX_MAX_CELLS) : 24;
    caps->cell_from = "default";
    if (r->cell_w > 0 && r->cell_h > 0) {
        caps->cell_w = r->cell_w;
        caps->cell_h = r->cell_h;
        caps->cell_from = "CSI 16t";
    } else if (r->text_w > 0 && r->text_h > 0) {
        caps->cell_w = r->text_w / caps->cols;
        caps->cell_h = r->text_h / caps->rows;
        caps->cell_from = "CSI 14t";
    } else if (env->ws_xpixel > 0 && env->ws_ypixel > 0) {
        caps->cell_w = env->ws_xpixel / caps->cols;
        caps->cell_h = env->ws_ypixel / caps->rows;
        caps->cell_from = "TIOCGWINSZ";
    }
    if (caps->cell_w <= 0 || caps->cell_h <= 0 || caps->cell_w > PT_GFX_MAX_CELL_PX ||
        caps->cell_h > PT_GFX_MAX_CELL_PX) {
        caps->cell_w = caps->cell_h = 0; /* a nonsense size is no size */
        caps->cell_from = "default";
    }

    /* iTerm2-protocol terminals: inside tmux $TERM_PROGRAM is tmux's own */
    caps->iterm2 = iterm2_name(r->version) || iterm2_name(env->lc_terminal) ||
                   (!env->tmux && iterm2_name(env->term_program)) || (env->tmux && env->wezterm);
    const bool outer_kitty = env->tmux && env->kitty_window;
    caps->color_depth = color_depth(env, caps->kitty || caps->iterm2 || outer_kitty);

    if (want != PT_GFX_AUTO) {
        caps->proto = want;
    } else if (!env->tty) {
        caps->proto = PT_GFX_NONE;
    } else if (env->tmux) {
        if (caps->sixel) caps->proto = PT_GFX_SIXEL; /* tmux draws it */
        else if (caps->passthrough && (caps->kitty || outer_kitty)) caps->proto = PT_GFX_KITTY;
        else if (caps->passthrough && caps->iterm2) caps->proto = PT_GFX_ITERM2;
        else caps->proto = PT_GFX_SYMBOLS;
    } else if (caps->kitty) {
        caps->proto = PT_GFX_KITTY;
    } else if (caps->iterm2) {
        caps->proto = PT_GFX_ITERM2;
    } else if (caps->sixel) {
        caps->proto = PT_GFX_SIXEL;
    } else {
        caps->proto = PT_GFX_SYMBOLS;
    }
    /* Wrap what tmux does not draw itself, when it lets it through. */
    caps->wrap_tmux = caps->passthrough &&
                      (caps->proto == PT_GFX_KITTY || caps->proto == PT_GFX_ITERM2 ||
                       (caps->proto == PT_GFX_SIXEL && !caps->sixel));
}
