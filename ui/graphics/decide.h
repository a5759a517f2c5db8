/*
 * decide.h — from what the probe gathered (the replies, the environment,
 * the window size) to the capabilities and the protocol: pure, so the
 * choices are tested without a terminal.
 */
#ifndef PETREL_UI_GFX_DECIDE_H
#define PETREL_UI_GFX_DECIDE_H

#include "graphics.h"
#include "reply.h"

/* What the environment and the tty said (NULL strings: unset). */
typedef struct pt_gfx_env {
    const char *term, *term_program, *lc_terminal, *colorterm;
    bool kitty_window;   /* $KITTY_WINDOW_ID: started inside kitty (survives into tmux) */
    bool wezterm;        /* $WEZTERM_PANE: started inside WezTerm */
    bool tty;            /* the fd is a terminal we may query (foreground, TERM not dumb) */
    bool tmux;           /* $TMUX */
    bool passthrough;    /* tmux allows passthrough */
    int ws_cols, ws_rows, ws_xpixel, ws_ypixel; /* TIOCGWINSZ (0: unknown) */
} pt_gfx_env;

/* Fill caps (all of it) from r (the replies; all zero when nothing was
 * asked), env and the user's want. */
void pt_gfx_decide(const pt_gfx_replies *r, const pt_gfx_env *env, pt_gfx_proto want,
                   pt_term_caps *caps);

#endif
