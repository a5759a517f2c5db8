/*
 * graphics.h — pictures in the terminal: what the terminal can show
 * (probe.c) and the ladder of encoders that turn an RGB image into the
 * bytes that draw it in a block of cells (sixel.c, kitty.c, iterm2.c,
 * cells.c). Used by the CLI (`petrel show`, `imagine --show`,
 * `info --terminal`) and by the full-screen app; it knows nothing of
 * ncurses (placing pictures among curses' cells is the app's job) and
 * nothing of the engine (images are plain RGB8).
 *
 * The ladder, best first: kitty, iTerm2 (OSC 1337), sixel, symbols
 * (character cells through libchafa: truecolor, 256 or 16 colours), none.
 * auto picks the best the probe found; a forced protocol is used as told.
 */
#ifndef PETREL_UI_GRAPHICS_H
#define PETREL_UI_GRAPHICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum pt_gfx_proto {
    PT_GFX_AUTO = 0,  /* only as a request: probe and pick */
    PT_GFX_NONE,      /* no pictures at all (a one-line placeholder) */
    PT_GFX_SYMBOLS,   /* character art through libchafa */
    PT_GFX_SIXEL,
    PT_GFX_KITTY,
    PT_GFX_ITERM2,
} pt_gfx_proto;

/* "auto", "none", "symbols", "sixel", "kitty", "iterm2" (exact, lower
 * case). False for anything else. */
bool pt_gfx_parse(const char *name, pt_gfx_proto *out);
const char *pt_gfx_name(pt_gfx_proto p);

/* What the probe found. Zero / false means "not found or not answered". */
typedef struct pt_term_caps {
    pt_gfx_proto proto;       /* what will be used (never AUTO) */
    bool sixel;               /* DA1 attribute 4 */
    bool kitty;               /* answered the kitty graphics query with OK */
    bool iterm2;              /* XTVERSION / TERM_PROGRAM names an OSC 1337 terminal */
    int sixel_colors;         /* XTSMGRAPHICS colour registers */
    int sixel_max_w, sixel_max_h; /* XTSMGRAPHICS maximum sixel geometry, pixels */
    int cols, rows;           /* the grid, cells */
    int cell_w, cell_h;       /* one cell in pixels (0: unknown, callers assume 10x20) */
    const char *cell_from;    /* "CSI 16t", "CSI 14t", "TIOCGWINSZ" or "default" */
    int color_depth;          /* symbols: 24 (truecolor), 256, 16 or 2 */
    bool tmux;                /* inside tmux ($TMUX) */
    bool passthrough;         /* tmux lets DCS passthrough through (allow-passthrough on) */
    bool wrap_tmux;           /* pictures go out wrapped in tmux's passthrough (for the
                               * outer terminal); false when tmux draws them itself */
    bool answered;            /* the terminal answered DA1 at all */
    char version[96];         /* XTVERSION reply, escaped to printable ASCII */
    char term[64];            /* $TERM, $TERM_PROGRAM as seen */
} pt_term_caps;

/* Probe the terminal on fd (a tty opened read/write, normally the
 * controlling terminal): queries are written at once, ended by DA1 (which
 * every terminal answers, so its reply marks the end of the others), and
 * the replies read with the terminal in raw mode for at most timeout_ms;
 * the terminal mode is restored and no reply is left in the input.
 * `want` is the user's choice (--graphics / PETREL_GRAPHICS; AUTO to pick).
 * Not a tty (fd < 0 allowed), TERM=dumb, or a background job: nothing is
 * written; auto gives NONE, a forced protocol is used as told (so
 * `--graphics sixel > file` writes sixel). want NONE: no queries either.
 * Never fails; caps is always filled. */
void pt_gfx_probe(int fd, pt_gfx_proto want, int timeout_ms, pt_term_caps *caps);

/* The probe's timeout: PETREL_PROBE_TIMEOUT_MS (0..60000) when set and
 * valid, else PT_GFX_PROBE_TIMEOUT_MS. A terminal that answers ends the
 * probe with its DA1 reply, so a long timeout costs it nothing: the tests
 * give their answering fake terminals the maximum, so that a loaded
 * machine cannot turn a slow answer into a wrong protocol. */
#define PT_GFX_PROBE_TIMEOUT_MS 250
#define PT_GFX_PROBE_TIMEOUT_MAX_MS 60000
int pt_gfx_probe_timeout_ms(void);

/* The protocol the user asked for: flag (--graphics; NULL when not given)
 * wins over $PETREL_GRAPHICS, else AUTO. False with a one-line reason in
 * why when the one that counts is not a name pt_gfx_parse knows. */
bool pt_gfx_requested(const char *flag, pt_gfx_proto *want, char *why, size_t why_cap);

/* Print what the probe found, one "key: value" per line (info --terminal). */
void pt_gfx_describe(const pt_term_caps *caps, char *out, size_t cap);

/* A growing byte buffer: each frame's picture bytes go out in one write. */
typedef struct pt_gfx_buf {
    char *data;
    size_t len, cap;
    bool oom;                 /* an append failed: the content is incomplete */
} pt_gfx_buf;
void pt_gfx_buf_append(pt_gfx_buf *b, const void *p, size_t n);
void pt_gfx_buf_free(pt_gfx_buf *b);

/* An RGB8 image: pixels[y * stride + x * 3 + c]. */
typedef struct pt_gfx_image {
    const uint8_t *rgb;
    int w, h, stride;
} pt_gfx_image;

/* Append the bytes that draw img scaled to fit cols x rows cells (aspect
 * kept, centred neither way: top-left aligned) at the cursor, with
 * caps->proto. The cursor is where the caller left it before; the caller
 * moves it afterwards (sixel, iTerm2 and symbols save and restore it with
 * DECSC/DECRC around the picture, kitty draws with C=1). The block must
 * fit on the screen below the cursor: a picture that scrolls the screen
 * leaves the restored cursor on the wrong row. id (> 0) names the picture
 * for kitty, so drawing the same id again replaces it; id 0 sends none (a
 * picture never redrawn, as the CLI's in the scrollback). *used_cols /
 * *used_rows (may be NULL) get the block the picture covers. With
 * caps->wrap_tmux the picture's escape sequences are wrapped in tmux's
 * DCS passthrough. NONE appends a one-line "[picture WxH]" cut to cols. False
 * on bad arguments or no memory. */
bool pt_gfx_encode(const pt_term_caps *caps, const pt_gfx_image *img, int cols, int rows,
                   uint32_t id, pt_gfx_buf *out, int *used_cols, int *used_rows);

/* Append what removes picture id (kitty: delete by id; others: nothing,
 * the caller repaints the cells). id 0: every picture of ours. */
void pt_gfx_erase(const pt_term_caps *caps, uint32_t id, pt_gfx_buf *out);

#endif
